// magicube-bench: every contender on the same matrices and N on one GPU; writes
// results.csv, summary.md and the plots under --out-dir (see bench/README.md).
//
//   magicube-bench [--out-dir=DIR] [--quick] [--filter=L8-R8,...] [--dlmc=DIR|ARCHIVE] ...
//
// Its own binary, so that the magicube CLI and programs linking only the API library need
// no cuBLAS, cuBLASLt or cuSPARSE: the vendor baselines (bench/baselines.cpp) live here.
// `magicube bench FLAGS` runs this binary from the magicube binary's directory.
//
// Exit status: 0 ran (contenders that failed are rows with an error note); 1 bad options, an
// output that cannot be written, or a result of ours that differs from the CPU reference;
// 2 no GPU (one line on stderr).
#include <cstdlib>
#include <optional>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "bench/bench_report.h"
#include "bench/bench_suite.h"
#include "bench/timing.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/raw_ostream.h"
#include "runtime/cuda_driver.h"
#include "support/log.h"

#ifndef MAGICUBE_SOURCE_DIR
#define MAGICUBE_SOURCE_DIR ""
#endif

namespace cl = llvm::cl;
using namespace magicube;

namespace {

constexpr const char *kName = "magicube-bench";

cl::OptionCategory BenchCat("Bench options");
cl::opt<std::string> OutDir("out-dir", cl::desc("folder for results.csv, summary.md and the plots"),
                            cl::init("magicube-bench"), cl::cat(BenchCat));
cl::opt<bool> Quick("quick", cl::desc("a small subset (about a minute on an H100)"), cl::cat(BenchCat));
cl::opt<std::string> Filter("filter", cl::desc("precisions to run, e.g. L8-R8,L4-R4 or s8xu4 (default: all)"),
                            cl::cat(BenchCat));
cl::opt<std::string> Dlmc("dlmc", cl::desc("DLMC .smtx folder tree or its .tar.gz (default: look for the archive)"),
                          cl::value_desc("dir|archive"), cl::cat(BenchCat));
cl::opt<int> DlmcLimit("dlmc-limit", cl::desc("DLMC files per sparsity, 0 = all (default 10, --quick 2)"),
                       cl::init(-1), cl::cat(BenchCat));
cl::opt<std::string> Vs("v", cl::desc("V values, e.g. 8,4,2 (default 8,4,2; --quick 8)"), cl::cat(BenchCat));
cl::opt<std::string> Ns("n", cl::desc("N values of SpMM, e.g. 256,512 (default)"), cl::cat(BenchCat));
cl::opt<std::string> Sections("sections",
                              cl::desc("synthetic,dlmc,sddmm,small,jit,llm,chain (default: all but llm and chain; chain: the llm grid's decode problems at N 1 and 16, or --llm-n, as 8 layers back to back)"),
                              cl::cat(BenchCat));
cl::opt<int> Repeat("repeat", cl::desc("timed runs per contender (the median is reported)"), cl::init(20),
                    cl::cat(BenchCat));
cl::opt<int> Warmup("warmup", cl::desc("untimed runs before timing"), cl::init(10), cl::cat(BenchCat));
cl::opt<unsigned long long> Seed("seed", cl::desc("random seed of the inputs"), cl::init(1), cl::cat(BenchCat));
cl::opt<std::string> L2("l2", cl::desc("warm (inputs stay in L2) | flush (L2 flushed before each timed run)"),
                        cl::init("warm"), cl::cat(BenchCat));
cl::opt<bool> NoVendor("no-vendor", cl::desc("skip cuBLASLt, cuBLAS and cuSPARSE"), cl::cat(BenchCat));
cl::opt<bool> NoPlots("no-plots", cl::desc("do not run bench/plots.py"), cl::cat(BenchCat));
cl::opt<std::string> LlmGridOpt("llm-grid",
                                cl::desc("size of the llm section: quick (20 problems, a smoke test), default (660), "
                                         "full (1944: every V and precision, and N = 16384)"),
                                cl::init("default"), cl::value_desc("quick|default|full"), cl::cat(BenchCat));
cl::opt<std::string> LlmNs("llm-n", cl::desc("N values of the llm grid to run, e.g. 1,16,512 (default: all)"),
                           cl::cat(BenchCat));
cl::opt<std::string> LlmShapes("llm-shapes",
                               cl::desc("weight shapes (M x K) of the llm grid to run, e.g. 4096x4096,11008x4096 "
                                        "(default: all)"),
                               cl::cat(BenchCat));
cl::opt<bool> Tune("tune", cl::desc("autotune each problem of ours before timing it (slow)"), cl::cat(BenchCat));

bench::BenchOptions bench_options() {
  bench::BenchOptions b;
  b.out_dir = OutDir;
  b.quick = Quick;
  b.filter = Filter;
  b.dlmc = Dlmc;
  b.dlmc_given = Dlmc.getNumOccurrences() > 0;
  b.dlmc_limit = DlmcLimit;
  b.vs = Vs;
  b.ns = Ns;
  b.sections = Sections;
  b.repeat = Repeat;
  b.warmup = Warmup;
  b.seed = Seed;
  b.l2 = L2;
  b.no_vendor = NoVendor;
  b.no_plots = NoPlots;
  b.tune = Tune;
  b.llm_grid = LlmGridOpt;
  b.llm_ns = LlmNs;
  b.llm_shapes = LlmShapes;
  return b;
}

// Prints "magicube-bench: error: <message>" on stderr; returns 1.
int fail(llvm::Error e) {
  llvm::errs() << kName << ": error: " << llvm::toString(std::move(e)) << "\n";
  return 1;
}
int fail(const llvm::Twine &message) {
  return fail(llvm::createStringError(llvm::inconvertibleErrorCode(), message));
}

std::string shell_quote(const std::string &s) {
  std::string q = "'";
  for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

std::string main_executable(const char *argv0) {
  static int anchor = 0;
  return llvm::sys::fs::getMainExecutable(argv0, &anchor);
}

// bench/plots.py: $MAGICUBE_PLOTS, beside the build (build/bin -> ../../bench), the source
// tree this binary was built from, or ./bench.
std::string find_plots_script(const std::string &exe) {
  std::vector<std::string> candidates;
  if (const char *env = std::getenv("MAGICUBE_PLOTS"); env && *env) candidates.push_back(env);
  if (!exe.empty()) {
    llvm::SmallString<256> p(exe);
    llvm::sys::path::remove_filename(p);
    llvm::sys::path::append(p, "..", "..", "bench", "plots.py");
    candidates.push_back(std::string(p.str()));
  }
  if (*MAGICUBE_SOURCE_DIR) candidates.push_back(std::string(MAGICUBE_SOURCE_DIR) + "/bench/plots.py");
  candidates.push_back("bench/plots.py");
  for (const std::string &c : candidates)
    if (llvm::sys::fs::is_regular_file(c)) return c;
  return "";
}

std::string command_line(int argc, char **argv) {
  std::string s = kName;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    bool plain = a.find_first_of(" '\"$`\\;&|<>()*?") == std::string::npos && !a.empty();
    s += " " + (plain ? a : shell_quote(a));
  }
  return s;
}

// The "## Targets" section of the summary, for the terminal.
std::string targets_section(const std::string &md) {
  size_t a = md.find("## Targets");
  if (a == std::string::npos) return "";
  size_t b = md.find("\n## ", a + 1);
  return md.substr(a, b == std::string::npos ? std::string::npos : b - a + 1);
}


int run(const bench::BenchOptions &o, int argc, char **argv) {
  // ---- what needs no GPU: options, paths ----
  auto cfg = bench::make_config(o);
  if (!cfg) return fail(cfg.takeError());
  const std::string exe = main_executable(argc > 0 ? argv[0] : kName);
  std::string dlmc;
  if (o.dlmc_given) {
    if (o.dlmc.empty()) {
      // --dlmc= (empty): no DLMC section.
    } else if (!llvm::sys::fs::exists(o.dlmc)) {
      return fail("dlmc: --dlmc=" + o.dlmc + " does not exist (give a folder of .smtx files or the DLMC .tar.gz)");
    } else {
      dlmc = o.dlmc;
    }
  } else if (cfg->dlmc) {
    dlmc = bench::find_default_dlmc(exe);
  }
  if (o.out_dir.empty()) return fail("out-dir: --out-dir= is empty (give the folder for the results)");
  // Found before the GPU is looked for, like every other bad flag.
  if (llvm::sys::fs::exists(o.out_dir) && !llvm::sys::fs::is_directory(o.out_dir))
    return fail("out-dir: --out-dir=" + o.out_dir + " is a file, not a folder (give the folder for the results)");

  // ---- the GPU ----
  std::string why = no_gpu_reason();
  if (why.empty())
    if (llvm::Error e = bench::require_cuda_device()) why = llvm::toString(std::move(e));
  if (!why.empty()) {
    llvm::errs() << kName << ": no GPU: " << why << "\n";
    return 2;
  }
  if (std::error_code ec = llvm::sys::fs::create_directories(o.out_dir))
    return fail("out-dir: cannot create " + o.out_dir + ": " + ec.message());

  auto opened = process_context();
  if (!opened) return fail(opened.takeError());
  Context *ctx = *opened;
  bench::Progress progress = bench::Progress::for_stderr();
  progress.message(fmt::format("{}: {} on {}; results in {}", kName,
                               o.quick ? "quick run" : o.sections.empty() ? "full run" : "sections " + o.sections,
                               ctx->name(), o.out_dir));
  if (cfg->llm)
    progress.message(fmt::format("{}: llm section, --llm-grid={}: {} problems of ours, {} dense (M, K, N)", kName,
                                 bench::to_string(cfg->llm_grid), bench::llm_problems(*cfg).size(),
                                 bench::llm_dense_problems(*cfg).size()));
  auto out = bench::run_bench(*cfg, dlmc, command_line(argc, argv), *ctx, progress);
  if (!out) return fail(out.takeError());

  const std::string csv = o.out_dir + "/results.csv", md_path = o.out_dir + "/summary.md";
  if (auto e = bench::write_csv(csv, out->rows)) return fail(std::move(e));
  std::string md = bench::summary_markdown(out->info, out->rows, out->jit);
  if (auto e = bench::write_text_file(md_path, md)) return fail(std::move(e));

  // ---- plots ----
  std::string plots = find_plots_script(exe);
  std::string plot_line;
  if (o.no_plots) {
    plot_line = "plots: skipped (--no-plots)";
  } else if (plots.empty()) {
    plot_line = "plots: bench/plots.py not found; run: python3 <repo>/bench/plots.py " + shell_quote(csv);
  } else if (std::system("python3 -c 'import matplotlib' >/dev/null 2>&1") != 0) {
    plot_line = "plots: python3 with matplotlib not found; install it (python3 -m pip install matplotlib) and run: "
                "python3 " + shell_quote(plots) + " " + shell_quote(csv);
  } else {
    std::string cmd = "python3 " + shell_quote(plots) + " " + shell_quote(csv) + " --out-dir " + shell_quote(o.out_dir);
    int rc = std::system(cmd.c_str());
    plot_line = rc == 0 ? "plots: written by " + plots : fmt::format("plots: `{}` failed (status {})", cmd, rc);
  }

  int mismatches = 0, errors = 0;
  for (const bench::ResultRow &r : out->rows) {
    mismatches += r.mismatch();
    errors += r.status == "error";
  }
  llvm::outs() << targets_section(md) << "wrote " << csv << " (" << out->rows.size() << " rows), " << md_path << "\n"
               << plot_line << "\n";
  if (errors) llvm::outs() << errors << " row(s) with an error note (see summary.md)\n";
  if (mismatches) {
    llvm::outs() << "MISMATCH: " << mismatches
                 << " result(s) of ours differ from the CPU reference (listed in summary.md)\n";
    return 1;
  }
  return 0;
}

}  // namespace

int main(int argc, char **argv) {
  cl::HideUnrelatedOptions(BenchCat);
  cl::ParseCommandLineOptions(argc, argv,
                              "magicube-bench: Magicube JIT's kernels against cuBLASLt, cuBLAS, cuSPARSE and the "
                              "published Magicube times, on one GPU\n");
  log().debug("magicube-bench started");
  return run(bench_options(), argc, argv);
}
