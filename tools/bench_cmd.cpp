// bench: options -> config -> (GPU) run_bench -> results.csv, summary.md, plots.
#include "tools/bench_cmd.h"

#include <cstdlib>
#include <optional>
#include <string>

#include <fmt/format.h>

#include "bench/bench_suite.h"
#include "bench/timing.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Program.h"
#include "llvm/Support/raw_ostream.h"
#include "runtime/cuda_driver.h"
#include "tools/commands.h"
#include "tools/inputs.h"

#ifndef MAGICUBE_SOURCE_DIR
#define MAGICUBE_SOURCE_DIR ""
#endif

namespace magicube::tool {

namespace {

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
  std::string s = "magicube";
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

}  // namespace

int cmd_bench(const bench::BenchOptions &o, int argc, char **argv) {
  // ---- what needs no GPU: options, paths ----
  auto cfg = bench::make_config(o);
  if (!cfg) return fail(cfg.takeError());
  const std::string exe = main_executable(argc > 0 ? argv[0] : "magicube");
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
  if (!why.empty()) return no_gpu_exit(why);
  if (std::error_code ec = llvm::sys::fs::create_directories(o.out_dir))
    return fail("out-dir: cannot create " + o.out_dir + ": " + ec.message());

  auto opened = process_context();
  if (!opened) return fail(opened.takeError());
  Context *ctx = *opened;
  bench::Progress progress = bench::Progress::for_stderr();
  progress.message(fmt::format("magicube bench: {} on {}; results in {}", o.quick ? "quick run" : "full run",
                               ctx->name(), o.out_dir));
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

}  // namespace magicube::tool
