#include "bench/bench_suite.h"

#include <cuda.h>
#include <cuda_runtime_api.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <cctype>
#include <fstream>
#include <sstream>
#include <functional>
#include <deque>
#include <map>
#include <mutex>
#include <optional>
#include <random>

#include <sys/stat.h>

#include <fmt/format.h>

#include "bench/baselines.h"
#include "bench/timing.h"
#include "cache/cache_key.h"
#include "cache/disk_cache.h"
#include "compiler/codegen.h"
#include "compiler/planner.h"
#include "jit/bundle.h"
#include "jit/compile_cache.h"
#include "jit/nvrtc.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"
#include "runtime/autotune.h"
#include "runtime/dispatch.h"
#include "runtime/kernel.h"
#include "runtime/pipeline.h"
#include "runtime/smtx.h"
#include "runtime/synthetic.h"
#include "runtime/timing.h"
#include "support/atomic_file.h"  // random_hex16
#include "support/hash.h"
#include "support/log.h"
#include "support/parallel.h"

namespace magicube::bench {

namespace {

llvm::Error err(const llvm::Twine &msg) { return llvm::createStringError(llvm::inconvertibleErrorCode(), msg); }

using Clock = std::chrono::steady_clock;
double ms_since(Clock::time_point t0) { return std::chrono::duration<double, std::milli>(Clock::now() - t0).count(); }

// One line, at most `max` characters: for notes in the CSV and the summary.
std::string one_line(std::string s, size_t max = 400) {
  for (char &c : s)
    if (c == '\n' || c == '\r' || c == '\t') c = ' ';
  std::string out;
  for (char c : s)
    if (!(c == ' ' && !out.empty() && out.back() == ' ')) out += c;
  if (out.size() > max) out = out.substr(0, max - 3) + "...";
  return out;
}
std::string msg(llvm::Error e) { return one_line(llvm::toString(std::move(e))); }

double median(std::vector<double> v) {
  if (v.empty()) return kNaN;
  std::sort(v.begin(), v.end());
  size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

std::string sp_str(double s) { return fmt::format("{:g}", s); }

// A vendor contender's measurement into its row: ok with its time and configuration,
// unsupported with the library's reasons, or an error.
void record_measurement(ResultRow &r, llvm::Expected<Measurement> m, int64_t n) {
  if (!m) {
    r.status = "error";
    r.note = msg(m.takeError());
    return;
  }
  if (!m->supported) {
    r.status = "unsupported";
    r.note = one_line(m->unsupported_reason);
    return;
  }
  r.status = "ok";
  r.ms = m->ms;
  r.tops = effective_tops(r.nnz_vectors, r.v, n, r.ms);
  r.config = one_line(m->config, 200);
}

// A seed made of two (support/hash.h).
uint64_t mix(uint64_t a, uint64_t b) {
  const int64_t w[2] = {int64_t(a), int64_t(b)};
  return hash64(w);
}

// The synthetic inputs (runtime/synthetic.h), each from its own seed.
// A rows x cols pattern of uniform vector sparsity (as `magicube run` and h100.md's
// measurements); values are left for fill_values.
VectorSparse uniform_pattern(int64_t rows, int64_t cols, int v, double sparsity, uint64_t seed) {
  std::mt19937_64 rng(seed);
  return synthetic_sparse(rng, rows, cols, sparsity, v);
}

// Nonzero values of `t` in every vector row inside the matrix; 0 past its last row.
void fill_values(VectorSparse &a, const ElemType &t, uint64_t seed) {
  std::mt19937_64 rng(seed);
  fill_nonzero(a, t, rng);
}

std::vector<int64_t> random_dense(int64_t count, const ElemType &t, uint64_t seed) {
  std::mt19937_64 rng(seed);
  return magicube::random_dense(rng, count, t);
}

VectorPattern to_pattern(const VectorSparse &a) {
  VectorPattern p;
  p.rows = a.rows;
  p.cols = a.cols;
  p.v = a.v;
  p.block_ptr = a.block_ptr;
  p.col = a.col;
  return p;
}

// ---- the CPU reference check ------------------------------------------------------------------

// Most multiply-adds a check does in full; above it, a sample of row-blocks (the first, the
// last and evenly spaced ones) of about this cost.
constexpr double kCheckBudget = 8e9;
// The same for the llm section, whose problems are many and big: decode (N <= 64) is checked
// in full, prefill on a few row-blocks (at least 2: the first and the last).
constexpr double kLlmCheckBudget = 2e8;
constexpr int kChainLayers = 8;  // the chain section's layers per chain

// The result column of a verification: "yes", "yes (sample of a/b row-blocks)" or "NO: ...".
std::string exact_text(const Verification &v, const char *what) {
  if (v.differ)
    return fmt::format("NO: {}[{}, {}] = {}, expected {} ({} of {} checked elements differ)", what, v.first->row,
                       v.first->col, v.first->got, v.first->want, v.differ, v.checked);
  if (v.blocks_checked < v.blocks) return fmt::format("yes (sample of {}/{} row-blocks)", v.blocks_checked, v.blocks);
  return "yes";
}

// ---- DLMC ---------------------------------------------------------------------------------

struct DlmcFile {
  std::string path, id;  // id: the path below "dlmc/" (or below the root)
  double sparsity = -1;  // the folder's, or -1 (then from the pattern)
};

// A temp folder removed with the object.
struct TempDir {
  std::string path;
  ~TempDir() {
    if (!path.empty()) llvm::sys::fs::remove_directories(path);
  }
};

bool ends_with(const std::string &s, const char *suffix) {
  size_t n = std::strlen(suffix);
  return s.size() >= n && s.compare(s.size() - n, n, suffix) == 0;
}

std::string shell_quote(const std::string &s) {
  std::string q = "'";
  for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

// The .smtx files under `root`, `limit` per sparsity (0 = all), evenly spread in name order.
llvm::Expected<std::vector<DlmcFile>> dlmc_files(const std::string &root, int limit) {
  std::map<double, std::vector<DlmcFile>> groups;
  std::error_code ec;
  for (llvm::sys::fs::recursive_directory_iterator it(root, ec), end; it != end && !ec; it.increment(ec)) {
    std::string p = it->path();
    if (!ends_with(p, ".smtx")) continue;
    DlmcFile f;
    f.path = p;
    llvm::StringRef rel = llvm::StringRef(p).drop_front(std::min(p.size(), root.size())).ltrim('/');
    size_t at = rel.find("dlmc/");
    f.id = std::string(at == llvm::StringRef::npos ? rel : rel.drop_front(at + 5));
    double s = -1;
    llvm::StringRef parent = llvm::sys::path::filename(llvm::sys::path::parent_path(p));
    if (!parent.getAsDouble(s) && s >= 0 && s < 1) f.sparsity = s;
    groups[f.sparsity].push_back(f);
  }
  if (ec) return err("dlmc: cannot read " + root + ": " + ec.message());
  std::vector<DlmcFile> out;
  for (auto &[s, g] : groups) {
    std::sort(g.begin(), g.end(), [](const DlmcFile &a, const DlmcFile &b) { return a.path < b.path; });
    if (limit > 0 && int64_t(g.size()) > limit) {
      for (int64_t i = 0; i < limit; ++i) out.push_back(g[size_t(i * int64_t(g.size()) / limit)]);
    } else {
      out.insert(out.end(), g.begin(), g.end());
    }
  }
  if (out.empty()) return err("dlmc: no .smtx file under " + root);
  return out;
}

// ---- device facts -------------------------------------------------------------------------

std::string utc_now() {
  std::time_t t = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[64];
  std::strftime(buf, sizeof buf, "%Y-%m-%d %H:%M UTC", &tm);
  return buf;
}

std::string cuda_version_str(int v) { return fmt::format("{}.{}", v / 1000, (v % 1000) / 10); }

// "580.159.04" from /proc/driver/nvidia/version, when readable.
std::string nvidia_driver_release() {
  // e.g. "NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  580.159.04  Release ...":
  // the first token of digits and dots after "Kernel Module".
  std::ifstream f("/proc/driver/nvidia/version");
  std::string line;
  if (!std::getline(f, line)) return "";
  size_t at = line.find("Kernel Module");
  if (at == std::string::npos) return "";
  std::istringstream words(line.substr(at + 13));
  for (std::string w; words >> w;)
    if (!w.empty() && std::isdigit((unsigned char)w[0]) && w.find('.') != std::string::npos &&
        w.find_first_not_of("0123456789.") == std::string::npos)
      return w;
  return "";
}

// Driver entry points through the CUDA runtime (no link against libcuda).
template <class Fn>
Fn driver_entry(const char *name, unsigned version) {
  void *p = nullptr;
  cudaDriverEntryPointQueryResult q{};
  if (cudaGetDriverEntryPointByVersion(name, &p, version, cudaEnableDefault, &q) != cudaSuccess ||
      q != cudaDriverEntryPointSuccess) {
    cudaGetLastError();
    return nullptr;
  }
  return reinterpret_cast<Fn>(p);
}

// The newest arch a plan can target on a device of compute capability `cc`; 0 if none.
int plan_arch_for_device(int cc) {
  int best = 0;
  for (int a : {80, 86, 89, 90})
    if (a <= cc) best = a;
  return best;
}

// ---- the suite ------------------------------------------------------------------------------

class Suite {
 public:
  Suite(const BenchConfig &cfg, Context &ctx, Progress &progress, BenchOutput &out)
      : cfg_(cfg), ctx_(ctx), progress_(progress), out_(out) {}

  llvm::Error init();
  void jit_compile_costs();
  void jit_launch_costs();
  void jit_empty_kernel();
  // A JIT measurement that could not be taken: "what: why" in the summary's notes.
  void jit_note(const std::string &what, llvm::Error e) { out_.jit.notes.push_back(what + ": " + msg(std::move(e))); }
  void synthetic();
  void small();
  void sddmm();
  // Whether the SDDMM section runs mask V at sparsity s: V=8 always, other V only where
  // Magicube published a V=8 time to compare with.
  bool sddmm_runs(int v, double s) const;
  void dlmc(const std::vector<DlmcFile> &files);
  // The LLM shapes (--sections=llm): ours, dense cuBLASLt int8, cuBLAS bf16 and cuSPARSELt
  // 2:4 int8 on pruned weight matrices times N tokens, L2 flushed before every timed call.
  void llm();
  int64_t llm_tasks() const;
  void chain();
  int64_t chain_tasks() const;
  int64_t dlmc_tasks(size_t files) const {
    return int64_t(files) * int64_t(cfg_.dlmc_vs.size() * cfg_.dlmc_ns.size()) *
           (vendor_count() + int64_t(cfg_.spmm_precisions.size()));
  }
  int64_t tasks() const;

 private:
  const BenchConfig &cfg_;
  Context &ctx_;
  Progress &progress_;
  BenchOutput &out_;
  int arch_ = 90;
  Stream stream_;
  BaselineOptions vopts_;
  bool lost_ = false;
  std::string lost_why_;
  // Dense vendor results by (contender, M, K, N): they do not depend on the pattern.
  std::map<std::string, ResultRow> dense_cache_;
  size_t llm_flush_bytes_ = size_t(64) << 20;  // >= 2 x the device's L2

  // The llm section's timing: L2 flushed before every timed call; warm-up and repeats capped
  // (decode: 5 and 20, N >= 128: 3 and 10) to keep the grid's device time bounded.
  TimingOptions llm_timing(int64_t n) const;
  ResultRow llm_base_row(int64_t m, int64_t k, int64_t n) const;
  // The dense contenders on one (M, K, N), once: cuBLASLt s8 x s8 -> s32, cuBLAS bf16 and,
  // when `with_2_4`, cuSPARSELt 2:4 int8.
  void llm_dense(int64_t m, int64_t k, int64_t n, bool with_2_4);
  // Our rows on one problem (`a` holds the values of its precision, `b` is K x N): the one
  // place that decides the route. kOurs is what the library's dispatch delivers; kOursSparse is
  // the sparse kernel itself. Today the dispatch always answers with the sparse kernel, so
  // both rows are one measurement; when it can answer "run dense", time that route here for
  // kOurs and keep the sparse kernel's row as it is.
  // `lhs` holds A's device copies for every N of the shape (packed once per packing).
  void llm_ours(const LlmProblem &pb, const VectorSparse &a, const std::vector<int64_t> &b,
                const std::shared_ptr<SpmmLhsCache> &lhs);
  // The sparse kernel through the dispatch and the pipeline, checked on its first run; the
  // pipeline, for the dense route on the same operands (its checked references kept), or
  // null where the kernel's row is an error.
  struct SparseRun {
    std::unique_ptr<Pipeline> pipe;
    std::shared_ptr<const Kernel> kernel;
  };
  SparseRun llm_sparse(const LlmProblem &pb, const VectorSparse &a, const std::vector<int64_t> &b,
                       const std::shared_ptr<SpmmLhsCache> &lhs, bool c_col);
  // The kCublasLtS8 contender's winning configuration per (M, K, N) of the shape being run,
  // kept by llm_dense for llm_paired.
  struct DenseWinner {
    std::shared_ptr<DenseReplay> replay;
    std::string config;
  };
  std::map<std::array<int64_t, 3>, DenseWinner> dense_winners_;
  // Adds the kOursPaired and kCublasLtS8Paired rows of `ours` (an ok kOurs row): `run_ours`
  // and the dense winner timed alternately.
  void llm_paired(const ResultRow &ours, Enqueue run_ours);
  // Where the llm section's wall time went (seconds), logged at its end.
  struct LlmWall {
    double inputs = 0, dense_contenders = 0, sparse = 0, dense_route = 0;
    int64_t packs = 0, problems = 0;
  } llm_wall_;

  int64_t vendor_count() const { return cfg_.vendors ? int64_t(vendor_contenders().size()) : 0; }
  CUstream stream() const { return stream_.get(); }
  uint64_t seeded(uint64_t x) const { return mix(cfg_.seed, x); }

  // False, with lost_ set, when the CUDA context is unusable (a sticky error).
  bool alive();
  void add(ResultRow r) { out_.rows.push_back(std::move(r)); }

  // Our spec for a problem: no knob pinned, int32 output where it is exact for the
  // reduction, else int64; C column-major (+ccol) where `c_col` (SpMM).
  OpSpec ours_spec(OpKind op, const Precision &p, int v, int64_t reduction, bool c_col = false) const;
  // The dispatch's plan (runtime/dispatch.h) for the problem with signature `sig` (null: no
  // matrix, the policy's defaults); `how`, when given, gets " [chosen by: ...]".
  llvm::Expected<Plan> choose_plan(OpKind op, const Precision &p, int v, int64_t reduction,
                                   const MatrixSignature *sig = nullptr, std::string *how = nullptr, bool c_col = false);
  // Ours on one problem: the stored autotuning choice for it when there is one (after tuning
  // it first with --tune), else choose_plan's. `how` says which ("" or " [tuned: ...]").
  llvm::Expected<Plan> ours_plan(OpKind op, const Precision &p, const VectorSparse &a, int64_t n_or_k,
                                 std::string &how, bool c_col = false);

  struct Problem {
    std::string source, matrix;
    double sparsity = 0;
    const VectorSparse *a = nullptr;  // the pattern (values filled per precision)
  };
  ResultRow base_row(const Problem &pb, const std::string &op, int64_t n) const;
  void vendors(const Problem &pb, int64_t n, const std::string &label);
  // Ours on `plan` through the library's pipeline: pack, upload, the kernel, one run checked
  // against the reference (within `check_budget`), then timed; fills r.exact, r.ms and the
  // kernel's name in r.config. The error starts with the stage that failed.
  llvm::Error measure_kernel(ResultRow &r, Pipeline &pipe, const Plan &plan, const std::string &how,
                             double check_budget, const TimingOptions &timing);
  void ours_spmm(const Problem &pb, VectorSparse &a, const Precision &p, int64_t n, uint64_t seed);
  void ours_sddmm(const Problem &pb, const VectorSparse &mask, const Precision &p, int64_t k, uint64_t seed);
  // Runs `fn` filling `row`; an exception or a lost context becomes an error row.
  void guarded(ResultRow row, const std::function<void(ResultRow &)> &fn);
};

llvm::Error Suite::init() {
  arch_ = plan_arch_for_device(ctx_.compute_capability());
  if (arch_ == 0)
    return err("the device " + ctx_.name() + " is " + arch_name(ctx_.compute_capability()) +
               " (supported: sm_80 and newer)");
  if (auto e = stream_.create()) return e;
  vopts_.timing.warmup = cfg_.warmup;
  vopts_.timing.reps = cfg_.repeat;
  llm_flush_bytes_ = l2_flush_bytes(ctx_);  // the library's rule: twice the L2, at least 64 MiB
  if (cfg_.flush_l2) vopts_.timing.flush_bytes = llm_flush_bytes_;
  // Facts for the summary.
  RunInfo &info = out_.info;
  {
    // Peak HBM bandwidth: 2 (double data rate) x memory clock x bus width, as the device
    // reports them; the H100 SXM datasheet's 3.35 TB/s where it does not.
    int clock_khz = 0, bus_bits = 0;
    if (cudaDeviceGetAttribute(&clock_khz, cudaDevAttrMemoryClockRate, 0) != cudaSuccess) cudaGetLastError(), clock_khz = 0;
    if (cudaDeviceGetAttribute(&bus_bits, cudaDevAttrGlobalMemoryBusWidth, 0) != cudaSuccess) cudaGetLastError(), bus_bits = 0;
    if (clock_khz > 0 && bus_bits > 0) {
      info.hbm_bytes_per_s = 2.0 * double(clock_khz) * 1e3 * double(bus_bits) / 8.0;
      info.hbm_source = fmt::format("the device: 2 x {} MHz memory clock x {}-bit bus", clock_khz / 1000, bus_bits);
    }
  }
  auto dev = device_summary();
  if (dev) info.gpu = *dev;
  else info.gpu = ctx_.name() + " (" + msg(dev.takeError()) + ")";
  int drv = 0, rt = 0;
  cudaDriverGetVersion(&drv);
  cudaRuntimeGetVersion(&rt);
  std::string rel = nvidia_driver_release();
  info.driver = (rel.empty() ? std::string() : rel + ", ") + "CUDA " + cuda_version_str(drv);
  info.cuda_runtime = cuda_version_str(rt);
  info.nvrtc = nvrtc_version();
  if (cfg_.vendors) info.libraries = library_versions();
  if (cfg_.vendors && cfg_.llm) info.libraries += (info.libraries.empty() ? "" : ", ") + cusparselt_version();
  info.date = utc_now();
  info.timing = fmt::format(
      "CUDA events, the same method for every contender (bench/timing.h): {} warm-up call(s), a 256 MiB memset "
      "ahead on the stream, 2 untimed calls, then {} calls each between its own event pair; the median. L2: {}",
      cfg_.warmup, cfg_.repeat,
      cfg_.flush_l2 ? fmt::format("flushed before every timed call (a {} MiB memset outside the events)",
                                  vopts_.timing.flush_bytes >> 20)
                    : "warm (inputs stay L2-resident where they fit, as in h100.md's measurements)");
  if (cfg_.llm)
    info.notes.push_back(fmt::format(
        "LLM section: every contender with L2 flushed before every timed call (a {} MiB memset outside the events, "
        ">= 2 x L2), warm-up min({}, 5) and min({}, 20) timed calls at N <= 64, min({}, 3) and min({}, 10) from N = "
        "128; ours checked in full at decode, on a sample of row-blocks (about {:g} multiply-adds) above",
        llm_flush_bytes_ >> 20, cfg_.warmup, cfg_.repeat, cfg_.warmup, cfg_.repeat, kLlmCheckBudget));
  info.notes.push_back(cfg_.tune ? "Ours: every problem autotuned first (--tune), then its stored choice timed"
                                 : "Ours: the stored autotuning choice where one exists for the problem (`magicube "
                                   "tune`, or `bench --tune`), else the library's policy (runtime/policy.h), through the dispatch that magicube run and the API use");
  return llvm::Error::success();
}

bool Suite::alive() {
  if (lost_) return false;
  cudaGetLastError();
  cudaError_t st = cudaDeviceSynchronize();
  if (st == cudaSuccess) return true;
  cudaGetLastError();
  st = cudaDeviceSynchronize();
  if (st == cudaSuccess) return true;
  lost_ = true;
  lost_why_ = cuda_status("cudaDeviceSynchronize", st);
  progress_.message("magicube bench: the CUDA context is lost (" + lost_why_ + "); the remaining rows are errors");
  return false;
}

void Suite::guarded(ResultRow row, const std::function<void(ResultRow &)> &fn) {
  if (lost_) {
    row.status = "error";
    row.note = "not run: the CUDA context was lost earlier (" + lost_why_ + ")";
    add(std::move(row));
    return;
  }
  try {
    fn(row);
  } catch (const std::exception &e) {
    row.status = "error";
    row.note = one_line(std::string("exception: ") + e.what());
  }
  if (row.status.empty()) row.status = "error";
  if (row.status == "error") alive();
  add(std::move(row));
}

OpSpec Suite::ours_spec(OpKind op, const Precision &p, int v, int64_t reduction, bool c_col) const {
  OpSpec s;
  s.op = op;
  s.lhs = p.lhs;
  s.rhs = p.rhs;
  s.v = v;
  s.arch = arch_;
  s.pinned = 0;
  s.out = max_exact_k(p.lhs, p.rhs) >= reduction ? OutType::Int32 : OutType::Int64;
  s.c_col = op == OpKind::SpMM && c_col;
  return s;
}

llvm::Expected<Plan> Suite::choose_plan(OpKind op, const Precision &p, int v, int64_t reduction,
                                        const MatrixSignature *sig, std::string *how, bool c_col) {
  // The library's dispatch, as `magicube run` and the API use it: no knob pinned, so a stored
  // tuning record for the problem when there is one, else the policy (runtime/policy.h). The
  // sparse kernel: the dense route is the llm section's (llm_ours).
  auto d = dispatch(ours_spec(op, p, v, reduction, c_col), sig, device_facts(ctx_));
  if (!d) return d.takeError();
  if (how) *how = " [" + d->chosen_by() + "]";
  return std::move(d->plan);
}

llvm::Expected<Plan> Suite::ours_plan(OpKind op, const Precision &p, const VectorSparse &a, int64_t n_or_k,
                                      std::string &how, bool c_col) {
  how.clear();
  const int64_t reduction = op == OpKind::SpMM ? a.max_block_length() : n_or_k;
  const MatrixSignature sig = op == OpKind::SpMM ? spmm_signature(a, n_or_k) : sddmm_signature(a, n_or_k);
  if (cfg_.tune) {
    auto base = choose_plan(op, p, a.v, reduction, &sig, nullptr, c_col);
    if (!base) return base;
    TuneOptions to;
    to.warmup = cfg_.warmup;
    to.repeat = cfg_.repeat;
    OpSpec unpinned = base->spec;
    auto r = op == OpKind::SpMM ? tune_spmm(ctx_, unpinned, a, n_or_k, to) : tune_sddmm(ctx_, unpinned, a, n_or_k, to);
    if (!r) {
      std::string why = msg(r.takeError());
      if (!alive()) return err("the CUDA context was lost while tuning (" + lost_why_ + ")");
      auto again = choose_plan(op, p, a.v, reduction, &sig, &how, c_col);
      how += " [tuning failed: " + why + "]";
      return again;
    }
  }
  return choose_plan(op, p, a.v, reduction, &sig, &how, c_col);
}

ResultRow Suite::base_row(const Problem &pb, const std::string &op, int64_t n) const {
  ResultRow r;
  r.source = pb.source;
  r.matrix = pb.matrix;
  r.op = op;
  r.v = pb.a->v;
  r.m = pb.a->rows;
  r.k = pb.a->cols;
  r.n = n;
  r.sparsity = pb.sparsity;
  r.nnz_vectors = pb.a->num_vectors();
  return r;
}

void Suite::vendors(const Problem &pb, int64_t n, const std::string &label) {
  if (!cfg_.vendors) return;
  const VectorSparse &a = *pb.a;
  VectorPattern pat = to_pattern(a);
  const int64_t M = a.rows, K = a.cols;
  struct V {
    const char *contender, *precision, *out;
    std::function<llvm::Expected<Measurement>()> run;
    bool dense;
  };
  const V list[] = {
      {kCublasLtS8, "s8->s32", "s32", [&] { return dense_cublaslt_i8(M, n, K, vopts_); }, true},
      {kCublasF16, "f16", "f16", [&] { return dense_cublas_f16(M, n, K, vopts_); }, true},
      {kBellF16, "f16", "f16",
       [&] { return cusparse_spmm_blocked_ell_smallest(M, K, n, pat, SpDtype::f16, {8, 16, 32}, vopts_); }, false},
      {kBellS8, "s8", "s32|s8|f32",
       [&] { return cusparse_spmm_blocked_ell_smallest(M, K, n, pat, SpDtype::i8, {8, 16, 32}, vopts_); }, false},
      {kCsrF16, "f16", "f16", [&] { return cusparse_spmm_csr_f16(M, K, n, pat, vopts_); }, false},
  };
  for (const V &c : list) {
    progress_.step(pb.source, label + " " + contender_title(c.contender));
    ResultRow row = base_row(pb, "spmm", n);
    row.contender = c.contender;
    row.precision = c.precision;
    row.out = c.out;
    std::string key = fmt::format("{}|{}|{}|{}", c.contender, M, K, n);
    if (c.dense) {
      auto it = dense_cache_.find(key);
      if (it != dense_cache_.end() && !lost_) {
        row.ms = it->second.ms;
        row.status = it->second.status;
        row.config = it->second.config;
        row.note = it->second.note;
        row.tops = effective_tops(row.nnz_vectors, row.v, n, row.ms);
        add(row);
        continue;
      }
    }
    guarded(row, [&](ResultRow &r) { record_measurement(r, c.run(), n); });
    if (c.dense && out_.rows.back().status != "error") dense_cache_[key] = out_.rows.back();
  }
}

llvm::Error Suite::measure_kernel(ResultRow &r, Pipeline &pipe, const Plan &plan, const std::string &how,
                                  double check_budget, const TimingOptions &timing) {
  auto at = [](const char *stage, llvm::Error e) { return err(llvm::Twine(stage) + ": " + llvm::toString(std::move(e))); };
  if (auto e = pipe.prepare(plan)) return at("pack and upload", std::move(e));
  if (auto e = pipe.poison()) return at("poison C", std::move(e));
  auto kernel = Kernel::get(ctx_, plan);
  if (!kernel) return at("kernel", kernel.takeError());
  r.config += " " + (*kernel)->source().name + how;
  const Kernel &k = **kernel;
  // The first run, checked.
  if (auto e = pipe.launch(k, stream())) return at("launch", std::move(e));
  if (cudaError_t st = cudaStreamSynchronize(stream_.get()); st != cudaSuccess)
    return at("run", cuda_error("cudaStreamSynchronize after the first run", st));
  auto checked = pipe.verify(check_budget);
  if (!checked) return at("verify", checked.takeError());
  r.exact = exact_text(*checked, "C");
  // Timed.
  auto ms = median_ms(stream_.get(), [&]() -> llvm::Error { return pipe.launch(k, stream()); }, timing);
  if (!ms) return at("timing", ms.takeError());
  r.ms = *ms;
  return llvm::Error::success();
}

void Suite::ours_spmm(const Problem &pb, VectorSparse &a, const Precision &p, int64_t n, uint64_t seed) {
  ResultRow row = base_row(pb, "spmm", n);
  row.contender = kOurs;
  row.precision = p.name;
  guarded(row, [&](ResultRow &r) {
    auto fail = [&](llvm::Error e, const char *stage) {
      r.status = "error";
      r.note = std::string(stage) + ": " + msg(std::move(e));
    };
    std::string how;
    auto plan = ours_plan(OpKind::SpMM, p, a, n, how);
    if (!plan) return fail(plan.takeError(), "plan");
    r.out = out_name(plan->spec.out);
    r.config = to_string(plan->spec);
    auto pipe = Pipeline::spmm(plan->spec, a, random_dense(a.cols * n, p.rhs, mix(seed, 2)), n);
    if (auto e = measure_kernel(r, *pipe, *plan, how, kCheckBudget, vopts_.timing)) {
      r.status = "error", r.note = msg(std::move(e));
      return;
    }
    r.tops = effective_tops(r.nnz_vectors, r.v, n, r.ms);
    r.status = "ok";
  });
}

void Suite::ours_sddmm(const Problem &pb, const VectorSparse &mask, const Precision &p, int64_t k, uint64_t seed) {
  ResultRow row;
  row.source = pb.source;
  row.matrix = pb.matrix;
  row.op = "sddmm";
  row.v = mask.v;
  row.m = mask.rows;
  row.k = k;
  row.n = mask.cols;
  row.sparsity = pb.sparsity;
  row.nnz_vectors = mask.num_vectors();
  row.contender = kOurs;
  row.precision = p.name;
  guarded(row, [&](ResultRow &r) {
    auto fail = [&](llvm::Error e, const char *stage) {
      r.status = "error";
      r.note = std::string(stage) + ": " + msg(std::move(e));
    };
    std::string how;
    auto plan = ours_plan(OpKind::SDDMM, p, mask, k, how);
    if (!plan) return fail(plan.takeError(), "plan");
    r.out = out_name(plan->spec.out);
    r.config = to_string(plan->spec);
    // The library's pipeline: pack, upload, kernel, launch, download, verify (B column-major K x N).
    auto pipe = Pipeline::sddmm(plan->spec, mask, random_dense(mask.rows * k, p.lhs, mix(seed, 1)),
                                random_dense(k * mask.cols, p.rhs, mix(seed, 2)), k, SparseLayout::Bcrs, 32);
    if (auto e = pipe->prepare(*plan)) return fail(std::move(e), "pack and upload");
    if (auto e = pipe->poison()) return fail(std::move(e), "poison out");
    auto kernel = Kernel::get(ctx_, *plan);
    if (!kernel) return fail(kernel.takeError(), "kernel");
    r.config += " " + (*kernel)->source().name + how;
    const Kernel &kern = **kernel;
    if (auto e = pipe->launch(kern, stream())) return fail(std::move(e), "launch");
    if (cudaError_t st = cudaStreamSynchronize(stream_.get()); st != cudaSuccess)
      return fail(cuda_error("cudaStreamSynchronize after the first run", st), "run");
    auto checked = pipe->verify(kCheckBudget);
    if (!checked) return fail(checked.takeError(), "verify");
    r.exact = exact_text(*checked, "out");
    auto ms = median_ms(stream_.get(), [&]() -> llvm::Error { return pipe->launch(kern, stream()); }, vopts_.timing);
    if (!ms) return fail(ms.takeError(), "timing");
    r.ms = *ms;
    r.tops = effective_tops(r.nnz_vectors, r.v, k, r.ms);
    r.status = "ok";
  });
}

int64_t Suite::tasks() const {
  int64_t t = 0;
  const int64_t np = int64_t(cfg_.spmm_precisions.size());
  if (cfg_.jit) t += 2;
  if (cfg_.synthetic)
    t += int64_t(cfg_.vs.size() * cfg_.sparsities.size() * cfg_.ns.size()) * (vendor_count() + np);
  if (cfg_.small) t += int64_t(cfg_.small_sparsities.size()) * (vendor_count() + np);
  if (cfg_.sddmm)
    for (int v : cfg_.sddmm_vs)
      for (double s : cfg_.sparsities)
        if (sddmm_runs(v, s)) t += int64_t(cfg_.sddmm_precisions.size() * cfg_.sddmm_ks.size());
  if (cfg_.llm) t += llm_tasks();
  if (cfg_.chain) t += chain_tasks();
  return t;
}

int64_t Suite::llm_tasks() const {
  return int64_t(llm_problems(cfg_).size()) +
         (cfg_.vendors ? 3 * int64_t(llm_dense_problems(cfg_).size()) : 0);
}

bool Suite::sddmm_runs(int v, double s) const {
  if (v == 8) return true;
  for (const MagicubeTime &t : magicube_h100_times())
    if (std::string(t.op) == "sddmm" && std::abs(t.sparsity - s) < 1e-9) return true;
  return false;
}

void Suite::synthetic() {
  for (int v : cfg_.vs)
    for (size_t si = 0; si < cfg_.sparsities.size(); ++si) {
      double s = cfg_.sparsities[si];
      VectorSparse a = uniform_pattern(cfg_.m, cfg_.k, v, s, seeded(mix(1000 + si, uint64_t(v))));
      Problem pb{"synthetic", fmt::format("uniform-M{}-K{}-s{}", cfg_.m, cfg_.k, sp_str(s)), s, &a};
      for (int64_t n : cfg_.ns) {
        std::string label = fmt::format("V={} s={} N={}", v, sp_str(s), n);
        vendors(pb, n, label);
        for (const Precision &p : cfg_.spmm_precisions) {
          progress_.step("synthetic", label + " " + p.name);
          uint64_t seed = seeded(mix(hash64(pb.matrix + p.name), uint64_t(v * 100000 + n)));
          fill_values(a, p.lhs, seed);
          ours_spmm(pb, a, p, n, seed);
        }
      }
    }
}

void Suite::small() {
  const int v = 8;
  for (size_t si = 0; si < cfg_.small_sparsities.size(); ++si) {
    double s = cfg_.small_sparsities[si];
    VectorSparse a = uniform_pattern(cfg_.small_m, cfg_.small_k, v, s, seeded(mix(2000 + si, uint64_t(v))));
    Problem pb{"small", fmt::format("uniform-M{}-K{}-s{}", cfg_.small_m, cfg_.small_k, sp_str(s)), s, &a};
    std::string label = fmt::format("M={} K={} N={} s={}", cfg_.small_m, cfg_.small_k, cfg_.small_n, sp_str(s));
    vendors(pb, cfg_.small_n, label);
    for (const Precision &p : cfg_.spmm_precisions) {
      progress_.step("small", label + " " + p.name);
      uint64_t seed = seeded(mix(hash64(pb.matrix + p.name), 7));
      fill_values(a, p.lhs, seed);
      ours_spmm(pb, a, p, cfg_.small_n, seed);
    }
  }
}

void Suite::sddmm() {
  for (int v : cfg_.sddmm_vs)
    for (size_t si = 0; si < cfg_.sparsities.size(); ++si) {
      double s = cfg_.sparsities[si];
      if (!sddmm_runs(v, s)) continue;
      VectorSparse mask = uniform_pattern(cfg_.sddmm_m, cfg_.sddmm_n, v, s, seeded(mix(3000 + si, uint64_t(v))));
      fill_values(mask, ElemType{1, false}, 1);  // values of a mask are not read
      Problem pb{"synthetic", fmt::format("uniform-mask-M{}-N{}-s{}", cfg_.sddmm_m, cfg_.sddmm_n, sp_str(s)), s, &mask};
      for (const Precision &p : cfg_.sddmm_precisions)
        for (int64_t k : cfg_.sddmm_ks) {
          progress_.step("sddmm", fmt::format("V={} s={} K={} {}", v, sp_str(s), k, p.name));
          ours_sddmm(pb, mask, p, k, seeded(mix(hash64(pb.matrix + p.name), uint64_t(k))));
        }
    }
}

void Suite::dlmc(const std::vector<DlmcFile> &files) {
  for (const DlmcFile &f : files) {
    auto pat = read_smtx(f.path);
    if (!pat) {
      std::string why = msg(pat.takeError());
      for (int v : cfg_.dlmc_vs)
        for (int64_t n : cfg_.dlmc_ns) {
          progress_.step("dlmc", f.id + " (unreadable)");
          ResultRow r;
          r.source = "dlmc";
          r.matrix = f.id;
          r.op = "spmm";
          r.v = v;
          r.n = n;
          r.sparsity = f.sparsity;
          r.contender = kOurs;
          r.precision = "-";
          r.status = "error";
          r.note = "read: " + why;
          add(r);
        }
      continue;
    }
    double s = f.sparsity >= 0 ? f.sparsity
                               : 1.0 - double(pat->nnz()) / std::max<double>(1.0, double(pat->rows * pat->cols));
    for (int v : cfg_.dlmc_vs) {
      if (pat->rows * v > INT32_MAX || pat->cols > INT32_MAX) continue;
      VectorSparse a = dilate(*pat, v, [] { return int64_t(1); });
      Problem pb{"dlmc", f.id, s, &a};
      for (int64_t n : cfg_.dlmc_ns) {
        std::string label = fmt::format("{} V={} N={}", f.id, v, n);
        vendors(pb, n, label);
        for (const Precision &p : cfg_.spmm_precisions) {
          progress_.step("dlmc", label + " " + p.name);
          uint64_t seed = seeded(mix(hash64(f.id + p.name), uint64_t(v * 100000 + n)));
          fill_values(a, p.lhs, seed);
          ours_spmm(pb, a, p, n, seed);
        }
      }
    }
  }
}

// ---- the LLM shapes ----------------------------------------------------------------------------

TimingOptions Suite::llm_timing(int64_t n) const {
  TimingOptions t = vopts_.timing;
  t.flush_bytes = llm_flush_bytes_;
  t.warmup = std::min(cfg_.warmup, n <= 64 ? 5 : 3);
  t.reps = std::min(cfg_.repeat, n <= 64 ? 20 : 10);
  return t;
}

ResultRow Suite::llm_base_row(int64_t m, int64_t k, int64_t n) const {
  ResultRow r;
  r.source = "llm";
  r.op = "spmm";
  r.m = m;
  r.k = k;
  r.n = n;
  return r;
}

void Suite::llm_dense(int64_t m, int64_t k, int64_t n, bool with_2_4) {
  BaselineOptions o = vopts_;
  o.timing = llm_timing(n);
  o.keep_winner = true;
  struct D {
    const char *contender, *precision, *out, *matrix;
    double sparsity, bytes;
    int64_t nnz;  // multiply-adds per column of B
    std::function<llvm::Expected<Measurement>()> run;
  };
  const std::vector<D> list = {
      {kCublasLtS8, "s8->s32", "s32", "dense", 0.0, llm_dense_bytes(m, k, n), m * k,
       [&] { return dense_cublaslt_i8(m, n, k, o); }},
      {kCublasBf16, "bf16", "bf16", "dense", 0.0, 2.0 * (double(m) * k + double(k) * n + double(m) * n), m * k,
       [&] { return dense_cublas_bf16(m, n, k, o); }},
      {kCusparseLtS8, "s8->s32", "s32|s8", "2:4", 0.5, kNaN, m * k / 2, [&] { return cusparselt_spmm_i8(m, n, k, o); }},
  };
  for (const D &c : list) {
    progress_.step("llm", fmt::format("{}x{} N={} {}", m, k, n, contender_title(c.contender)));
    if (!with_2_4 && std::string(c.contender) == kCusparseLtS8) continue;
    ResultRow row = llm_base_row(m, k, n);
    row.matrix = fmt::format("llm-M{}-K{}-{}", m, k, c.matrix);
    row.contender = c.contender;
    row.precision = c.precision;
    row.out = c.out;
    row.v = 1;
    row.sparsity = c.sparsity;
    row.nnz_vectors = c.nnz;
    row.bytes = c.bytes;
    const bool lt_s8 = std::string(c.contender) == kCublasLtS8;
    std::vector<std::pair<std::string, double>> timed;  // every configuration's median, for the restricted rows
    bool measured = false;
    guarded(row, [&](ResultRow &r) {
      auto got = c.run();
      if (got && got->supported && lt_s8) timed = got->timed;
      if (got && got->supported && lt_s8 && got->replay) dense_winners_[{m, k, n}] = {got->replay, got->config};
      measured = got && got->supported;
      record_measurement(r, std::move(got), n);
    });
    if (!lt_s8) continue;
    // The same configurations restricted to our API's storage and to a row-major C: no
    // run of their own, so that the comparisons see the same medians.
    for (const RestrictedDense &rd : restricted_dense_contenders()) {
      ResultRow restricted = row;
      restricted.contender = rd.contender;
      if (auto best = best_where(timed, rd.keep)) {
        restricted.status = "ok";
        restricted.ms = best->second;
        restricted.tops = effective_tops(restricted.nnz_vectors, restricted.v, n, restricted.ms);
        restricted.config = one_line(best->first, 200);
      } else {
        restricted.status = measured ? "unsupported" : "error";
        restricted.note = measured ? std::string("no configuration with ") + rd.storage + " ran"
                                   : "the cuBLASLt s8 contender did not run (its row says why)";
      }
      add(std::move(restricted));
    }
  }
}

// The bytes one sparse call moves (runtime/bench_report.h's SparseTraffic): packed A and its
// indices as plan packs them, B, C.
double sparse_call_bytes(const Plan &plan, const VectorSparse &a, int64_t n) {
  SparseTraffic t;
  const bool decode = plan.launch.family == KernelFamily::SpmmDecode;  // 16-bit indices, no row pointers
  t.slots = decode && plan.launch.panel_rows > 0
                ? padded_panel_slots(a.block_ptr, a.col, plan.launch.panel_rows, plan.launch.panels(a.cols), plan.k_stride)
                : padded_slots(a.block_ptr, plan.k_stride, decode);
  t.index_bytes = decode ? 2 : 4;
  t.row_pointers = !decode;
  t.num_blocks = a.num_blocks();
  t.v = a.v;
  t.lhs_storage_bits = 0;
  for (const Chunk &c : plan.lhs) t.lhs_storage_bits += c.storage_bits;
  t.rhs_storage_bits = 0;
  for (const Chunk &c : plan.rhs) t.rhs_storage_bits += c.storage_bits;
  t.m = a.rows;
  t.k = a.cols;
  t.n = n;
  t.out_bytes = int(stored_bytes(plan.spec.out));
  return llm_sparse_bytes(t);
}

Suite::SparseRun Suite::llm_sparse(const LlmProblem &pb, const VectorSparse &a, const std::vector<int64_t> &b,
                                   const std::shared_ptr<SpmmLhsCache> &lhs, bool c_col) {
  SparseRun kept;
  ResultRow row = llm_base_row(pb.m, pb.k, pb.n);
  row.matrix = fmt::format("llm-M{}-K{}-s{}", pb.m, pb.k, sp_str(pb.sparsity));
  row.contender = kOursSparse;
  row.precision = pb.precision.name;
  row.v = pb.v;
  row.sparsity = pb.sparsity;
  row.nnz_vectors = a.num_vectors();
  guarded(row, [&](ResultRow &r) {
    auto fail = [&](llvm::Error e, const char *stage) {
      r.status = "error";
      r.note = std::string(stage) + ": " + msg(std::move(e));
    };
    std::string how;
    auto plan = ours_plan(OpKind::SpMM, pb.precision, a, pb.n, how, c_col);
    if (!plan) return fail(plan.takeError(), "plan");
    r.out = out_name(plan->spec.out);
    r.config = to_string(plan->spec);
    auto pipe = Pipeline::spmm(plan->spec, a, std::vector<int64_t>(b), pb.n, lhs);
    if (auto e = measure_kernel(r, *pipe, *plan, how, kLlmCheckBudget, llm_timing(pb.n))) {
      r.status = "error", r.note = msg(std::move(e));
      return;
    }
    auto kernel = Kernel::get(ctx_, *plan);  // the one measure_kernel ran, from the cache
    if (!kernel) return fail(kernel.takeError(), "kernel");
    kept = {std::move(pipe), std::move(*kernel)};
    r.tops = effective_tops(r.nnz_vectors, r.v, pb.n, r.ms);
    r.bytes = sparse_call_bytes(*plan, a, pb.n);
    r.config += fmt::format(" [moves {:.0f} bytes]", r.bytes);
    r.status = "ok";
  });
  return out_.rows.back().status == "ok" ? std::move(kept) : SparseRun{};
}

void Suite::llm_ours(const LlmProblem &pb, const VectorSparse &a, const std::vector<int64_t> &b,
                     const std::shared_ptr<SpmmLhsCache> &lhs) {
  // Ours writes C in the layout of the dense contender's winner (a linear layer's token-major
  // Y where that is column-major), so that both sides compute the same output.
  auto w = dense_winners_.find({pb.m, pb.k, pb.n});
  const bool c_col = w != dense_winners_.end() && !has_row_major_c(w->second.config);
  auto t0 = Clock::now();
  SparseRun sparse_run = llm_sparse(pb, a, b, lhs, c_col);
  std::unique_ptr<Pipeline> &sparse_pipe = sparse_run.pipe;
  llm_wall_.sparse += ms_since(t0) / 1e3;
  t0 = Clock::now();
  struct Tally {
    double &into;
    Clock::time_point t0;
    ~Tally() { into += ms_since(t0) / 1e3; }
  } tally{llm_wall_.dense_route, t0};
  ResultRow sparse = out_.rows.back();
  // The route the dispatch takes with the dense route allowed, as `magicube run` does: the
  // sparse kernel measured above, or the dense int8 GEMM where the policy's model says so.
  ResultRow row = sparse;
  row.contender = kOurs;
  const MatrixSignature sig = spmm_signature(a, pb.n);
  auto d = dispatch(ours_spec(OpKind::SpMM, pb.precision, a.v, a.max_block_length(), c_col), &sig, device_facts(ctx_),
                    -1, nullptr, DenseRoute::Allowed);
  if (!d) {
    row.status = "error", row.note = "dispatch: " + msg(d.takeError());
    add(std::move(row));
    return;
  }
  if (d->route == Route::Sparse) {
    if (row.status == "ok") row.config += " [route: sparse, " + d->route_why + "]";
    add(row);
    if (row.status == "ok" && sparse_run.kernel)
      llm_paired(row, [&]() -> llvm::Error { return sparse_pipe->launch(*sparse_run.kernel, stream()); });
    return;
  }
  std::unique_ptr<Pipeline> dense_pipe;
  row.ms = kNaN, row.tops = kNaN, row.exact.clear(), row.note.clear(), row.status.clear();
  guarded(row, [&](ResultRow &r) {
    auto fail = [&](llvm::Error e, const char *stage) {
      r.status = "error";
      r.note = std::string(stage) + ": " + msg(std::move(e));
    };
    r.out = out_name(d->plan.spec.out);
    // The sparse kernel's pipeline when it ran (the same A and B: A's dense copy shared through
    // `lhs`, the checked row-blocks' references kept), else one of its own.
    std::unique_ptr<Pipeline> &pipe = dense_pipe;
    pipe = sparse_pipe ? std::move(sparse_pipe) : Pipeline::spmm(d->plan.spec, a, std::vector<int64_t>(b), pb.n, lhs);
    if (auto e = pipe->prepare_dense(ctx_)) return fail(std::move(e), "dense route");
    if (auto e = pipe->poison()) return fail(std::move(e), "poison C");
    if (auto e = pipe->launch_dense(stream())) return fail(std::move(e), "launch");
    if (cudaError_t st = cudaStreamSynchronize(stream_.get()); st != cudaSuccess)
      return fail(cuda_error("cudaStreamSynchronize after the first run", st), "run");
    auto checked = pipe->verify(kLlmCheckBudget);
    if (!checked) return fail(checked.takeError(), "verify");
    r.exact = exact_text(*checked, "C");
    auto ms = median_ms(stream_.get(), [&]() -> llvm::Error { return pipe->launch_dense(stream()); }, llm_timing(pb.n));
    if (!ms) return fail(ms.takeError(), "timing");
    r.ms = *ms;
    r.tops = effective_tops(r.nnz_vectors, r.v, pb.n, r.ms);
    r.bytes = llm_dense_bytes(pb.m, pb.k, pb.n);
    r.config = fmt::format("dense route: {} [route: dense, {}] [moves {:.0f} bytes]", pipe->dense_describe(),
                           d->route_why, r.bytes);
    r.status = "ok";
  });
  const ResultRow &ours = out_.rows.back();
  if (ours.contender == kOurs && ours.status == "ok" && dense_pipe)
    llm_paired(ours, [&]() -> llvm::Error { return dense_pipe->launch_dense(stream()); });
}

void Suite::llm_paired(const ResultRow &ours, Enqueue run_ours) {
  auto w = dense_winners_.find({ours.m, ours.k, ours.n});
  if (w == dense_winners_.end()) return;
  const ResultRow copy = ours;  // add() may move the rows
  ResultRow mine = copy, dense = copy;
  mine.contender = kOursPaired;
  dense.contender = kCublasLtS8Paired;
  dense.exact.clear();
  dense.out = "s32";
  dense.config = w->second.config + " (the contender's winner, timed again alternately with ours)";
  dense.bytes = llm_dense_bytes(ours.m, ours.k, ours.n);
  mine.ms = dense.ms = mine.tops = dense.tops = kNaN;
  mine.status = dense.status = "error";
  auto run_dense = [&]() -> llvm::Error { return w->second.replay->enqueue(stream_.get()); };
  const Enqueue both[] = {run_ours, run_dense};
  auto s = sample_ms_alternating(stream_.get(), both, llm_timing(ours.n));
  if (!s) {
    mine.note = dense.note = "paired timing: " + msg(s.takeError());
  } else {
    mine.ms = bench::median((*s)[0]), dense.ms = bench::median((*s)[1]);
    mine.tops = effective_tops(mine.nnz_vectors, mine.v, ours.n, mine.ms);
    dense.tops = effective_tops(ours.m * ours.k, 1, ours.n, dense.ms);  // dense work: 2 M K N
    mine.status = dense.status = "ok";
  }
  add(std::move(mine));
  add(std::move(dense));
}

// ---- decode chains: a model's layers back to back ---------------------------------------------

std::vector<LlmProblem> chain_problems(const BenchConfig &c) {
  std::vector<LlmProblem> out;
  for (const LlmProblem &p : llm_problems(c))
    if (llm_is_decode(p.n) && (!c.llm_ns.empty() || p.n == 1 || p.n == 16)) out.push_back(p);
  return out;
}

int64_t Suite::chain_tasks() const { return int64_t(chain_problems(cfg_).size()); }

// kChainLayers layers of one decode problem, each its own weight (pattern and values drawn as
// the llm section draws them, by layer) times one B, launched back to back on one stream as a
// model's layers run (a layer's output is the next one's input there; here B is shared, which
// changes no dependency the GPU sees: each launch follows the previous one in the stream). The
// chain is timed as one call with the L2 flushed before it and reported per layer: the sparse
// kernel's chain (the dispatch's sparse plan; decode kernels on sm_90 overlap each launch with
// the previous kernel's tail), the library's dense route's chain (cuBLASLt int8 with our API's
// storage, its algorithm chosen by timing as the dispatch does), and ours: the one of the two
// the dispatch takes. Every layer of both chains is checked against the reference.
void Suite::chain() {
  for (const LlmProblem &p : chain_problems(cfg_)) {
    const std::string label = fmt::format("{}x{} N={} V={} s={} {} x{}", p.m, p.k, p.n, p.v, sp_str(p.sparsity),
                                          p.precision.name, kChainLayers);
    progress_.step("chain", label);
    const std::string shape = fmt::format("llm-M{}-K{}", p.m, p.k);
    std::deque<VectorSparse> as;
    for (int i = 0; i < kChainLayers; ++i) {
      const uint64_t seed = seeded(mix(hash64(shape + "-s" + sp_str(p.sparsity) + "-layer" + std::to_string(i)), uint64_t(p.v)));
      VectorSparse a = uniform_pattern(p.m, p.k, p.v, p.sparsity, seed);
      fill_values(a, p.precision.lhs, mix(seed, hash64(p.precision.lhs.str())));
      as.push_back(std::move(a));
    }
    const std::vector<int64_t> b =
        random_dense(p.k * p.n, p.precision.rhs, seeded(mix(hash64(shape + p.precision.rhs.str()), uint64_t(p.n))));
    int64_t vectors = 0;
    for (const VectorSparse &a : as) vectors += a.num_vectors();
    ResultRow base = llm_base_row(p.m, p.k, p.n);
    base.source = "chain";
    base.matrix = fmt::format("{}-s{}-x{}", shape, sp_str(p.sparsity), kChainLayers);
    base.precision = p.precision.name;
    base.v = p.v;
    base.sparsity = p.sparsity;
    base.nnz_vectors = vectors / kChainLayers;
    std::vector<std::unique_ptr<Pipeline>> pipes;
    // Runs the chain once, checks every layer, then times it; per-layer ms into r.
    auto run_chain = [&](ResultRow &r, const std::function<llvm::Error(Pipeline &)> &launch) -> llvm::Error {
      auto chain = [&]() -> llvm::Error {
        for (auto &q : pipes)
          if (auto e = launch(*q)) return e;
        return llvm::Error::success();
      };
      for (auto &q : pipes)
        if (auto e = q->poison()) return e;
      if (auto e = chain()) return e;
      if (cudaError_t st = cudaStreamSynchronize(stream_.get()); st != cudaSuccess)
        return cuda_error("cudaStreamSynchronize after the first chain", st);
      int sampled = 0;
      for (size_t i = 0; i < pipes.size(); ++i) {
        auto checked = pipes[i]->verify(kLlmCheckBudget);
        if (!checked) return checked.takeError();
        if (!checked->exact()) {
          r.exact = fmt::format("no: layer {}: {}", i, exact_text(*checked, "C"));
          return llvm::Error::success();
        }
        sampled += checked->blocks_checked < checked->blocks;
      }
      r.exact = sampled ? fmt::format("yes (sample: {} of {} layers on a sample of row-blocks)", sampled, pipes.size())
                        : fmt::format("yes ({} layers in full)", pipes.size());
      auto ms = median_ms(stream_.get(), chain, llm_timing(p.n));
      if (!ms) return ms.takeError();
      r.ms = *ms / kChainLayers;
      r.tops = effective_tops(r.nnz_vectors, r.v, p.n, r.ms);
      return llvm::Error::success();
    };
    // The sparse kernel's chain.
    ResultRow sparse = base;
    sparse.contender = kOursSparse;
    std::string how;
    auto plan = ours_plan(OpKind::SpMM, p.precision, as.front(), p.n, how);
    guarded(sparse, [&](ResultRow &r) {
      if (!plan) {
        r.note = "plan: " + msg(plan.takeError());
        return;
      }
      r.out = out_name(plan->spec.out);
      for (const VectorSparse &a : as) pipes.push_back(Pipeline::spmm(plan->spec, a, b, p.n));
      for (auto &q : pipes)
        if (auto e = q->prepare(*plan)) return void(r.note = "pack and upload: " + msg(std::move(e)));
      auto kernel = Kernel::get(ctx_, *plan);
      if (!kernel) return void(r.note = "kernel: " + msg(kernel.takeError()));
      const Kernel &k = **kernel;
      r.config = fmt::format("{} {}{} [{} layers back to back{}]", to_string(plan->spec), k.source().name, how,
                             kChainLayers, plan->launch.pdl ? ", programmatic dependent launch" : "");
      if (auto e = run_chain(r, [&](Pipeline &q) { return q.launch(k, stream()); }))
        return void(r.note = msg(std::move(e)));
      r.bytes = sparse_call_bytes(*plan, as.front(), p.n);
      r.status = "ok";
    });
    const ResultRow sparse_row = out_.rows.back();
    // The dense route's chain: the same layers' dense copies.
    ResultRow dense = base;
    dense.contender = kCublasLtS8ApiStorage;
    dense.precision = "s8->s32";
    dense.out = "s32";
    guarded(dense, [&](ResultRow &r) {
      if (pipes.empty()) return void(r.note = "the sparse chain's pipelines were not built (its row says why)");
      for (auto &q : pipes)
        if (auto e = q->prepare_dense(ctx_)) return void(r.note = "dense route: " + msg(std::move(e)));
      r.config = fmt::format("the library's dense route: {} [{} layers back to back]", pipes.front()->dense_describe(),
                             kChainLayers);
      if (auto e = run_chain(r, [&](Pipeline &q) { return q.launch_dense(stream()); }))
        return void(r.note = msg(std::move(e)));
      r.bytes = llm_dense_bytes(p.m, p.k, p.n);
      r.status = "ok";
    });
    const ResultRow dense_row = out_.rows.back();
    // Ours: the route the dispatch takes for one layer (the same chain, not a run of its own).
    const MatrixSignature sig = spmm_signature(as.front(), p.n);
    auto d = dispatch(ours_spec(OpKind::SpMM, p.precision, p.v, as.front().max_block_length()), &sig,
                      device_facts(ctx_), -1, nullptr, DenseRoute::Allowed);
    ResultRow ours = d && d->route == Route::Dense ? dense_row : sparse_row;
    ours.contender = kOurs;
    ours.precision = p.precision.name;
    if (!d) ours.status = "error", ours.note = "dispatch: " + msg(d.takeError());
    else ours.config += fmt::format(" [route: {}, {}]", route_name(d->route), d->route_why);
    add(std::move(ours));
  }
}

void Suite::llm() {
  const std::vector<LlmProblem> problems = llm_problems(cfg_);
  for (auto [m, k] : llm_shapes(cfg_)) {
    bool with_2_4 = std::any_of(problems.begin(), problems.end(), [&](const LlmProblem &p) {
      return p.m == m && p.k == k && std::abs(p.sparsity - 0.5) < 1e-9;
    });
    auto t0 = Clock::now();
    dense_winners_.clear();  // the previous shape's operands freed
    if (cfg_.vendors)
      for (const auto &d : llm_dense_problems(cfg_))
        if (d[0] == m && d[1] == k) llm_dense(m, k, d[2], with_2_4);
    llm_wall_.dense_contenders += ms_since(t0) / 1e3;
    // Operands reused across N: one pattern per (V, sparsity) with the values of each lhs type
    // (on the device: each packing of it, and its dense copy, once), and one B per (N, rhs type).
    std::map<std::string, VectorSparse> mats;
    std::map<std::string, std::shared_ptr<SpmmLhsCache>> lhs_caches;
    std::map<std::string, std::vector<int64_t>> bs;
    int64_t cur_n = -1;
    for (const LlmProblem &p : problems) {
      if (p.m != m || p.k != k) continue;
      if (p.n != cur_n) bs.clear(), cur_n = p.n;
      const std::string shape = fmt::format("llm-M{}-K{}", m, k);
      progress_.step("llm", fmt::format("{}x{} N={} V={} s={} {}", m, k, p.n, p.v, sp_str(p.sparsity), p.precision.name));
      const std::string mk = fmt::format("{}|{}|{}", p.v, sp_str(p.sparsity), p.precision.lhs.str());
      t0 = Clock::now();
      auto it = mats.find(mk);
      if (it == mats.end()) {
        const uint64_t pat_seed = seeded(mix(hash64(shape + "-s" + sp_str(p.sparsity)), uint64_t(p.v)));
        VectorSparse a = uniform_pattern(m, k, p.v, p.sparsity, pat_seed);
        fill_values(a, p.precision.lhs, mix(pat_seed, hash64(p.precision.lhs.str())));
        it = mats.emplace(mk, std::move(a)).first;
        lhs_caches[mk] = std::make_shared<SpmmLhsCache>();
      }
      const std::string bk = p.precision.rhs.str();
      auto bi = bs.find(bk);
      if (bi == bs.end())
        bi = bs.emplace(bk, random_dense(k * p.n, p.precision.rhs, seeded(mix(hash64(shape + bk), uint64_t(p.n)))))
                 .first;
      llm_wall_.inputs += ms_since(t0) / 1e3;
      llm_ours(p, it->second, bi->second, lhs_caches[mk]);
      ++llm_wall_.problems;
    }
    for (const auto &[key, cache] : lhs_caches) llm_wall_.packs += cache->packs;
  }
  const LlmWall &w = llm_wall_;
  const std::string line = fmt::format(
      "llm section: {} problems of ours; wall time: inputs {:.1f} s, dense contenders {:.1f} s, our sparse kernel "
      "(plan, {} packings, check, timing) {:.1f} s, our dense route (densify, select, check, timing) {:.1f} s",
      w.problems, w.inputs, w.dense_contenders, w.packs, w.sparse, w.dense_route);
  log().info("{}", line);
  progress_.message(line);
}

// ---- JIT costs ------------------------------------------------------------------------------

// `src`'s source with its kernel renamed name + suffix (every occurrence of the name): the same
// code under a symbol never compiled before.
std::string renamed_source(const KernelSource &src, const std::string &suffix) {
  std::string out = src.source;
  const std::string to = src.name + suffix;
  for (size_t at = out.find(src.name); at != std::string::npos; at = out.find(src.name, at + to.size()))
    out.replace(at, src.name.size(), to);
  return out;
}

// A tag of this process for such names: NVRTC 13 keeps its own cache of compiles in the
// driver's compute cache (~/.nv/ComputeCache; CUDA_CACHE_DISABLE, CUDA_CACHE_PATH), across
// processes, so a cold compile must be of a source it has never seen.
const std::string &run_tag() {
  static const std::string tag = random_hex16();
  return tag;
}

void Suite::jit_compile_costs() {
  progress_.step("jit", "NVRTC compiles, disk-cache hit");
  JitCosts &j = out_.jit;
  auto note = [&](const std::string &what, llvm::Error e) { jit_note(what, std::move(e)); };
  const Precision l8r8 = default_spmm_precisions()[0];
  auto pa = choose_plan(OpKind::SpMM, l8r8, 8, 2048);
  if (!pa) return note("plan " + l8r8.name, pa.takeError());
  pa->launch.language = KernelLanguage::Cuda;  // NVRTC's start-up and in-process cache: a CUDA kernel
  j.variant_first = to_string(pa->spec);
  auto arch = target_arch(*pa, ctx_.compute_capability());
  if (!arch) return note("arch", arch.takeError());
  auto t0 = Clock::now();
  auto src = generate(*pa);
  j.codegen_ms = ms_since(t0);
  if (!src) return note("codegen", src.takeError());
  src->source = renamed_source(*src, "_first" + run_tag());  // not in NVRTC's cache from an earlier run
  src->name += "_first" + run_tag();
  std::vector<std::string> opts = nvrtc_options(*pa);
  t0 = Clock::now();
  auto cubin = nvrtc_compile(src->source, src->name + ".cu", *arch, Emit::CUBIN, opts);
  j.nvrtc_first_ms = ms_since(t0);
  if (!cubin) {
    j.nvrtc_first_ms = kNaN;
    return note("NVRTC", cubin.takeError());
  }
  t0 = Clock::now();
  auto again = nvrtc_compile(src->source, src->name + ".cu", *arch, Emit::CUBIN, opts);
  j.nvrtc_again_ms = ms_since(t0);
  if (!again) {
    j.nvrtc_again_ms = kNaN;
    note("NVRTC again", again.takeError());
  }
  {  // the same kernel under a new name: a cold compile after start-up, what start-up is measured against
    const std::string renamed = renamed_source(*src, "_second");
    t0 = Clock::now();
    auto second = nvrtc_compile(renamed, src->name + "_second.cu", *arch, Emit::CUBIN, opts);
    j.nvrtc_second_ms = second ? ms_since(t0) : kNaN;
    if (!second) note("NVRTC second", second.takeError());
  }
  j.cubin_kb = double(cubin->size()) / 1024.0;
  // Cold compiles of the variants: SpMM and SDDMM, L8-R8 and L4-R4, V=8. Each sample
  // compiles the variant's source under a kernel name never used before (run_tag()), so that
  // NVRTC's own cache cannot answer it.
  struct Cold {
    OpKind op;
    Precision p;
    int v;
  };
  auto defs = default_spmm_precisions();
  const Precision l4r4 = defs[2];
  const Cold colds[] = {{OpKind::SpMM, l8r8, 8}, {OpKind::SpMM, l4r4, 8}, {OpKind::SDDMM, l8r8, 8}, {OpKind::SDDMM, l4r4, 8}};
  struct Variant {
    Plan plan;
    KernelSource src;
    int arch = 0;
  };
  std::vector<Variant> variants;
  auto variant_of = [&](const Cold &c) -> std::optional<Variant> {
    auto p = choose_plan(c.op, c.p, c.v, 256);
    if (!p) {
      note("plan", p.takeError());
      return std::nullopt;
    }
    auto s = generate(*p);
    if (!s) {
      note("codegen " + to_string(p->spec), s.takeError());
      return std::nullopt;
    }
    auto a = target_arch(*p, ctx_.compute_capability());
    if (!a) {
      note("arch", a.takeError());
      return std::nullopt;
    }
    return Variant{*p, std::move(*s), *a};
  };
  static std::atomic<int> sample_id{0};  // unique names across calls in one process
  // One cold compile of `src` (the plan's kernel, or its CUDA form) under a name never used
  // before, through the library's compile entry (compile_kernel_source: PTX through nvJitLink,
  // CUDA through NVRTC with the plan's options, or `opts` when given).
  auto cold_compile = [&](const Plan &plan, const KernelSource &src, int arch,
                          const std::vector<std::string> *opts = nullptr) -> double {
    KernelSource renamed = src;
    renamed.source = renamed_source(src, "_cold" + run_tag() + "_" + std::to_string(sample_id++));
    const auto t = Clock::now();
    auto cb = opts ? compile_cubin(SourceKind::Cuda, renamed.source, renamed.file_name(), arch, *opts)
                   : compile_kernel_source(plan, renamed, arch);
    const double ms = ms_since(t);
    if (!cb) {
      note("compile " + to_string(plan.spec), cb.takeError());
      return kNaN;
    }
    return ms;
  };
  const int kColdSamples = 3;
  std::vector<double> cold, cuda_cold, fast, mid;
  for (const Cold &c : colds) {
    auto v = variant_of(c);
    if (!v) continue;
    std::vector<double> samples, cuda_samples;
    // nvJitLink's start-up: the process's first PTX compile, timed apart from the cold samples.
    if (v->plan.launch.language == KernelLanguage::Ptx && !std::isfinite(j.ptx_first_ms))
      j.ptx_first_ms = cold_compile(v->plan, v->src, v->arch);
    for (int i = 0; i < kColdSamples; ++i)
      if (double ms = cold_compile(v->plan, v->src, v->arch); std::isfinite(ms)) samples.push_back(ms);
    if (samples.empty()) continue;
    const std::string label = to_string(v->plan.spec) + " (" + language_name(v->plan.launch.language) + ")";
    j.cold_each.push_back({label, median(samples)});
    cold.push_back(median(samples));
    // The same plan's CUDA kernel through NVRTC (what MAGICUBE_PTX=0 compiles), and the
    // compile-time trade-offs NVRTC offers, once per variant (information: they change the
    // code, and =min's kernels ran 4-30 % slower): --Ofast-compile=min and =mid.
    Plan cuda_plan = v->plan;
    cuda_plan.launch.language = KernelLanguage::Cuda;
    auto cuda_src = generate(cuda_plan);
    if (!cuda_src) {
      note("codegen " + to_string(cuda_plan.spec), cuda_src.takeError());
      continue;
    }
    for (int i = 0; i < kColdSamples; ++i)
      if (double ms = cold_compile(cuda_plan, *cuda_src, v->arch); std::isfinite(ms)) cuda_samples.push_back(ms);
    if (!cuda_samples.empty()) {
      j.cuda_cold_each.push_back({to_string(v->plan.spec), median(cuda_samples)});
      cuda_cold.push_back(median(cuda_samples));
    }
    for (const char *level : {"--Ofast-compile=min", "--Ofast-compile=mid"}) {
      std::vector<std::string> fo = nvrtc_options(cuda_plan);
      llvm::erase_if(fo, [](const std::string &o) { return o.rfind("--Ofast-compile", 0) == 0; });
      fo.push_back(level);
      std::vector<double> &into = std::string(level) == "--Ofast-compile=min" ? fast : mid;
      if (double ms = cold_compile(cuda_plan, *cuda_src, v->arch, &fo); std::isfinite(ms)) into.push_back(ms);
    }
    variants.push_back(std::move(*v));
  }
  j.cold_ms = median(cold);
  j.cuda_cold_ms = median(cuda_cold);
  j.nvrtc_fast_cold_ms = median(fast);
  j.nvrtc_mid_cold_ms = median(mid);
  if (!cold.empty()) j.variant_cold = j.cold_each.front().first;

  // The batch: the same four at V=4 and V=2 (eight sources never compiled before), compiled
  // in parallel as tune, `cache warm` and precompile_kernels do.
  {
    std::vector<Variant> batch;
    for (int v : {4, 2})
      for (const Cold &c : colds)
        if (auto x = variant_of(Cold{c.op, c.p, v})) batch.push_back(std::move(*x));
    if (!batch.empty()) {
      const unsigned threads = std::min<unsigned>(unsigned(batch.size()), std::min(16u, hardware_threads()));
      std::atomic<int> failed{0};
      const auto t = Clock::now();
      parallel_for(
          batch.size(),
          [&](size_t i) {
            KernelSource renamed = batch[i].src;
            renamed.source = renamed_source(batch[i].src, "_batch" + run_tag() + "_" + std::to_string(sample_id++));
            auto cb = compile_kernel_source(batch[i].plan, renamed, batch[i].arch);
            if (!cb) {
              llvm::consumeError(cb.takeError());
              ++failed;
            }
          },
          threads);
      const double ms = ms_since(t);
      if (failed == 0) {
        j.batch_count = int(batch.size());
        j.batch_threads = int(threads);
        j.batch_per_variant_ms = ms / double(batch.size());
      } else {
        j.notes.push_back(fmt::format("parallel batch compile: {} of {} compiles failed", failed.load(), batch.size()));
      }
    }
  }

  // A disk-cache hit: the entry in a fresh cache folder, read and loaded.
  llvm::SmallString<128> dir;
  if (std::error_code ec = llvm::sys::fs::createUniqueDirectory("magicube-bench-cache", dir)) {
    j.notes.push_back("disk-cache hit: cannot create a temp folder: " + ec.message());
    return;
  }
  TempDir tmp{std::string(dir.str())};
  ::chmod(tmp.path.c_str(), 0700);  // the disk cache takes only a private dir
  auto disk = DiskCache::open(tmp.path);
  if (!disk) return note("disk cache", disk.takeError());
  if (!disk->enabled()) {
    j.notes.push_back("disk-cache hit: not measured (MAGICUBE_CACHE=0 disables the disk cache)");
    return;
  }
  CacheKey key = kernel_cache_key(*pa, *arch);
  if (auto e = disk->store(key, *cubin)) return note("disk cache store", std::move(e));
  std::vector<double> reads, loads, totals;
  for (int i = 0; i < 9; ++i) {
    t0 = Clock::now();
    std::optional<std::string> payload = disk->load(key);
    double read_ms = ms_since(t0);
    if (!payload) {
      j.notes.push_back("disk-cache hit: the stored entry was not found again");
      return;
    }
    t0 = Clock::now();
    auto mod = Module::load(*payload);
    if (!mod) return note("cuModuleLoadData", mod.takeError());
    auto fn = mod->function(src->name);
    double load_ms = ms_since(t0);
    if (!fn) return note("cuModuleGetFunction", fn.takeError());
    if (i == 0) {
      j.module_load_first_ms = load_ms;
      continue;
    }
    reads.push_back(read_ms);
    loads.push_back(load_ms);
    totals.push_back(read_ms + load_ms);
  }
  j.disk_read_ms = median(reads);
  j.module_load_ms = median(loads);
  j.disk_hit_ms = median(totals);

  // First use from an AOT bundle: the four cold-compiled variants in a bundle padded to the
  // size of the default list's (about 140 kernels, 2 MiB), each rep a fresh compile cache that
  // opens and verifies the bundle (header, index), finds the kernel (its SHA-256 checked),
  // then cuModuleLoadData + cuModuleGetFunction.
  std::vector<BundleInput> inputs;
  for (const Variant &v : variants) {
    auto cb = kernel_cubin(v.plan, v.src, v.arch);
    if (!cb) return note("bundle: cubin of " + to_string(v.plan.spec), cb.takeError());
    inputs.push_back(BundleInput{kernel_cache_key(v.plan, v.arch), v.arch, to_string(v.plan.spec), std::move(*cb)});
  }
  if (inputs.empty()) return;
  std::mt19937_64 rng(77);
  for (int i = 0; inputs.size() < 140; ++i) {  // filler kernels: never looked up
    std::string bytes(16 * 1024, '\0');
    for (char &c : bytes) c = char(rng());
    inputs.push_back(BundleInput{make_cache_key("filler", std::to_string(i), "", 90, "0"), 90, "filler", bytes});
  }
  const std::string bundle_path = tmp.path + "/kernels.mcbundle";
  if (auto e = write_bundle(bundle_path, BundleMeta{kGeneratorVersion, toolchain_version(), "bench"}, inputs))
    return note("bundle: write", std::move(e));
  const Variant &first = variants.front();
  const CacheKey first_key = kernel_cache_key(first.plan, first.arch);
  std::vector<double> b_open, b_find, b_load, b_total;
  for (int i = 0; i < 9; ++i) {
    t0 = Clock::now();
    CompileCache fresh(std::nullopt);
    for (auto &b : open_bundles(BundlePaths{{bundle_path}, true}, kGeneratorVersion, toolchain_version()))
      fresh.add_bundle(std::move(b));
    const double open_ms = ms_since(t0);
    if (fresh.bundle_count() != 1) {
      j.notes.push_back("first use from the AOT bundle: not measured: the bundle was refused (see the warning)");
      return;
    }
    auto t1 = Clock::now();
    auto cubin = fresh.get_cubin(
        first_key, first.arch, []() -> llvm::Expected<std::string> { return err("not in the bundle"); }, "bench.cu");
    const double find_ms = ms_since(t1);
    if (!cubin) return note("first use from the AOT bundle", cubin.takeError());
    t1 = Clock::now();
    auto mod = Module::load(*cubin);
    if (!mod) return note("bundle: cuModuleLoadData", mod.takeError());
    auto fn = mod->function(first.src.name);
    if (!fn) return note("bundle: cuModuleGetFunction", fn.takeError());
    const double load_ms = ms_since(t1), total_ms = ms_since(t0);
    if (i == 0) j.bundle_first_ms = total_ms;
    b_open.push_back(open_ms);
    b_find.push_back(find_ms);
    b_load.push_back(load_ms);
    b_total.push_back(total_ms);
  }
  j.bundle_open_ms = median(b_open);
  j.bundle_find_ms = median(b_find);
  j.bundle_load_ms = median(b_load);
  j.bundle_hit_ms = median(b_total);
  uint64_t bytes = 0;
  if (!llvm::sys::fs::file_size(bundle_path, bytes)) j.bundle_kb = double(bytes) / 1024.0;
  j.bundle_entries = int(inputs.size());
}

// The floor under every time in the tables: an empty kernel (one block of 32 threads) timed
// the same way, so a kernel's time can be read as floor + its work; and its NVRTC compile,
// the fixed cost of any compile.
void Suite::jit_empty_kernel() {
  JitCosts &j = out_.jit;
  auto note = [&](const std::string &what, llvm::Error e) { jit_note(what, std::move(e)); };
  if (lost_) return;
  // Named for this run (NVRTC's own cache must not answer it), compiled as our kernels are (-minimal).
  const std::string name = "magicube_empty_" + run_tag();
  const std::string empty = "extern \"C\" __global__ void " + name + "(int *p) { if (p) p[0] = 0; }\n";
  auto t0 = Clock::now();
  auto cubin = nvrtc_compile(empty, "magicube_empty.cu", ctx_.compute_capability(), Emit::CUBIN, {"-minimal"});
  if (!cubin) return note("empty kernel: NVRTC", cubin.takeError());
  j.empty_compile_ms = ms_since(t0);
  auto mod = Module::load(*cubin);
  if (!mod) return note("empty kernel: load", mod.takeError());
  auto fn = mod->function(name);
  if (!fn) return note("empty kernel: function", fn.takeError());
  CUdeviceptr none = 0;
  void *args[] = {&none};
  auto et = median_ms(
      stream_.get(), [&]() -> llvm::Error { return magicube::launch(*fn, Dim3{1, 1, 1}, Dim3{32, 1, 1}, 0, stream(), args); },
      vopts_.timing);
  if (et) j.empty_kernel_us = *et * 1e3;
  else note("empty kernel: time", et.takeError());
}

void Suite::jit_launch_costs() {
  progress_.step("jit", "launch costs");
  JitCosts &j = out_.jit;
  auto note = [&](const std::string &what, llvm::Error e) { jit_note(what, std::move(e)); };
  if (lost_) {
    j.notes.push_back("launch costs: not measured: the CUDA context was lost earlier");
    return;
  }
  const Precision l8r8 = default_spmm_precisions()[0];
  const int64_t m = cfg_.small_m, k = cfg_.small_k, n = cfg_.small_n;
  VectorSparse a = uniform_pattern(m, k, 8, 0.9, 4242);
  fill_values(a, l8r8.lhs, 4243);
  std::vector<int64_t> b = random_dense(k * n, l8r8.rhs, 4244);
  j.launch_problem = fmt::format("{} V=8 M={} K={} N={} s=0.9", l8r8.name, m, k, n);
  auto plan = choose_plan(OpKind::SpMM, l8r8, 8, a.max_block_length());
  if (!plan) return note("launch costs: plan", plan.takeError());
  auto layout = build_srbcrs(a, *plan);
  if (!layout) return note("launch costs: layout", layout.takeError());
  auto pa = pack_lhs(*layout, *plan);
  if (!pa) return note("launch costs: pack", pa.takeError());
  auto pbk = pack_rhs(b, k, n, *plan);
  if (!pbk) return note("launch costs: pack", pbk.takeError());
  auto da = upload(*pa, *layout);
  if (!da) return note("launch costs: upload", da.takeError());
  auto db = upload(*pbk);
  if (!db) return note("launch costs: upload", db.takeError());
  const bool i64 = plan->spec.out == OutType::Int64;
  const size_t bytes = size_t(m * n) * (i64 ? 8 : 4);
  auto c = magicube::DeviceBuffer::allocate(bytes);
  if (!c) return note("launch costs: allocate", c.takeError());
  auto kernel = Kernel::get(ctx_, *plan);
  if (!kernel) return note("launch costs: kernel", kernel.takeError());
  const Kernel &kern = **kernel;
  if (auto e = c->memset(0xAB)) return note("launch costs: memset", std::move(e));
  if (auto e = kern.launch(*da, *db, c->ptr(), stream())) return note("launch costs: launch", std::move(e));
  if (cudaError_t st = cudaStreamSynchronize(stream_.get()); st != cudaSuccess) {
    alive();
    return note("launch costs: run", cuda_error("cudaStreamSynchronize", st));
  }
  auto want = c->download<uint8_t>(bytes);
  if (!want) return note("launch costs: download", want.takeError());

  // Host time per call: batches of `calls` enqueues, the median batch (the GPU drains the
  // queue between batches, untimed).
  auto per_call_us = [&](const std::function<llvm::Error()> &fn) -> llvm::Expected<double> {
    const int calls = 200, batches = 7;
    std::vector<double> us;
    for (int bt = 0; bt < batches; ++bt) {
      if (cudaError_t st = cudaStreamSynchronize(stream_.get()); st != cudaSuccess)
        return cuda_error("cudaStreamSynchronize", st);
      auto t0 = Clock::now();
      for (int i = 0; i < calls; ++i)
        if (auto e = fn()) return e;
      us.push_back(ms_since(t0) * 1e3 / calls);
    }
    if (cudaError_t st = cudaStreamSynchronize(stream_.get()); st != cudaSuccess)
      return cuda_error("cudaStreamSynchronize", st);
    return median(us);
  };
  auto gl = per_call_us([&]() -> llvm::Error {
    auto kk = Kernel::get(ctx_, *plan);
    if (!kk) return kk.takeError();
    return (*kk)->launch(*da, *db, c->ptr(), stream());
  });
  if (gl) j.get_launch_us = *gl;
  else note("launch costs: Kernel::get + launch", gl.takeError());
  auto lo = per_call_us([&]() -> llvm::Error { return kern.launch(*da, *db, c->ptr(), stream()); });
  if (lo) j.launch_us = *lo;
  else note("launch costs: Kernel::launch", lo.takeError());
  auto kt = median_ms(
      stream_.get(), [&]() -> llvm::Error { return kern.launch(*da, *db, c->ptr(), stream()); }, vopts_.timing);
  if (kt) j.kernel_us = *kt * 1e3;
  else note("launch costs: kernel time", kt.takeError());

  // The bare launch: the parameters as codegen.h documents them, checked against the
  // kernel's own parameter list and against Kernel::launch's output first.
  using LaunchFn = decltype(&::cuLaunchKernel);
  using ParamInfoFn = decltype(&::cuFuncGetParamInfo);
  LaunchFn launch_fn = driver_entry<LaunchFn>("cuLaunchKernel", 12000);
  ParamInfoFn param_info = driver_entry<ParamInfoFn>("cuFuncGetParamInfo", 12040);
  if (!launch_fn) {
    j.notes.push_back("bare launch: cuLaunchKernel not found through cudaGetDriverEntryPointByVersion");
    return;
  }
  std::vector<CUdeviceptr> ptrs;
  ptrs.push_back(da->row_ptr.ptr());
  ptrs.push_back(da->col_idx.ptr());
  for (const magicube::DeviceBuffer &p : da->planes) ptrs.push_back(p.ptr());
  for (const magicube::DeviceBuffer &p : db->planes) ptrs.push_back(p.ptr());
  ptrs.push_back(c->ptr());
  int im = int(da->rows), in = int(db->n), ildb = int(db->ldb);
  std::vector<void *> args;
  std::vector<size_t> sizes;
  for (CUdeviceptr &p : ptrs) args.push_back(&p), sizes.push_back(sizeof(CUdeviceptr));
  for (int *x : {&im, &in, &ildb}) args.push_back(x), sizes.push_back(sizeof(int));
  if (param_info) {
    std::vector<size_t> actual;
    for (size_t i = 0; i < 64; ++i) {
      size_t off = 0, sz = 0;
      if (param_info(kern.function(), i, &off, &sz) != CUDA_SUCCESS) break;
      actual.push_back(sz);
    }
    cudaGetLastError();
    if (actual != sizes) {
      j.notes.push_back(fmt::format(
          "bare launch: not measured: the kernel has {} parameters, codegen.h documents {} (update jit_launch_costs)",
          actual.size(), sizes.size()));
      return;
    }
  } else {
    j.notes.push_back("bare launch: cuFuncGetParamInfo is not available; parameters not checked against the kernel");
  }
  const unsigned gx = kern.plan().launch.grid_x(db->n), gy = unsigned(da->num_blocks), threads = unsigned(kern.plan().launch.threads);
  auto bare = [&]() -> llvm::Error {
    CUresult r = launch_fn(kern.function(), gx, gy, 1, threads, 1, 1, 0, stream(), args.data(), nullptr);
    if (r != CUDA_SUCCESS) return err("cuLaunchKernel failed: CUresult " + llvm::Twine(int(r)));
    return llvm::Error::success();
  };
  if (auto e = c->memset(0xAB)) return note("bare launch: memset", std::move(e));
  if (auto e = bare()) return note("bare launch", std::move(e));
  if (cudaError_t st = cudaStreamSynchronize(stream_.get()); st != cudaSuccess) {
    alive();
    return note("bare launch: run", cuda_error("cudaStreamSynchronize", st));
  }
  auto got = c->download<uint8_t>(bytes);
  if (!got) return note("bare launch: download", got.takeError());
  if (*got != *want) {
    j.notes.push_back("bare launch: not measured: its output differs from Kernel::launch's (the argument list "
                      "of codegen.h is out of date)");
    return;
  }
  auto bl = per_call_us(bare);
  if (bl) j.bare_launch_us = *bl;
  else note("bare launch", bl.takeError());
  j.notes.push_back("Launch costs are host times per call (the CPU enqueueing, not the GPU running), the median of "
                    "7 batches of 200 back-to-back calls on one stream.");
}

}  // namespace

std::string find_default_dlmc(const std::string &exe_path) {
  const char *name = "dlmc_rn50_magnitude_pruning.tar.gz";
  std::vector<std::string> roots = {"."};
  if (!exe_path.empty()) {
    // build/bin/magicube -> the repository root
    llvm::SmallString<256> p(exe_path);
    llvm::sys::path::remove_filename(p);
    llvm::sys::path::append(p, "..", "..");
    roots.push_back(std::string(p.str()));
  }
  for (const std::string &r : roots)
    for (const char *sub : {"", ".carry", "shared/data", "../shared/data"}) {
      llvm::SmallString<256> c(r);
      if (*sub) llvm::sys::path::append(c, sub);
      llvm::sys::path::append(c, name);
      if (llvm::sys::fs::is_regular_file(c)) return std::string(c.str());
    }
  return "";
}

llvm::Expected<BenchOutput> run_bench(const BenchConfig &cfg, const std::string &dlmc_path, const std::string &command,
                                      Context &ctx, Progress &progress) {
  BenchOutput out;
  Suite suite(cfg, ctx, progress, out);
  if (auto e = suite.init()) return e;
  out.info.command = command;
  if (cfg.llm) {
    auto probs = llm_problems(cfg);
    out.info.llm = fmt::format("--llm-grid={}: {} problems of ours{} on {} weight shapes, {} dense (M, K, N)",
                               to_string(cfg.llm_grid), probs.size(),
                               cfg.llm_filtered() ? " (of the grid's, by --filter/--v/--llm-n/--llm-shapes)" : "",
                               llm_shapes(cfg).size(), llm_dense_problems(cfg).size());
  }

  // DLMC first: its file count sets the progress total.
  TempDir extracted;
  std::vector<DlmcFile> files;
  if (cfg.dlmc) {
    if (dlmc_path.empty()) {
      out.info.dlmc = "not run: no --dlmc given and no dlmc_rn50_magnitude_pruning.tar.gz found";
    } else {
      std::string root = dlmc_path;
      bool ok = true;
      if (llvm::sys::fs::is_regular_file(dlmc_path)) {
        llvm::SmallString<128> dir;
        if (std::error_code ec = llvm::sys::fs::createUniqueDirectory("magicube-dlmc", dir)) {
          out.info.dlmc = "not run: cannot create a temp folder: " + ec.message();
          ok = false;
        } else {
          extracted.path = std::string(dir.str());
          progress.message("magicube bench: extracting " + dlmc_path + " to " + extracted.path);
          std::string cmd = "tar -xf " + shell_quote(dlmc_path) + " -C " + shell_quote(extracted.path) + " 2>&1";
          int rc = std::system(cmd.c_str());
          if (rc != 0) {
            out.info.dlmc = fmt::format("not run: `{}` failed (status {})", cmd, rc);
            ok = false;
          }
          root = extracted.path;
        }
      } else if (!llvm::sys::fs::is_directory(dlmc_path)) {
        out.info.dlmc = "not run: --dlmc=" + dlmc_path + " is neither a folder nor an archive";
        ok = false;
      }
      if (ok) {
        auto f = dlmc_files(root, cfg.dlmc_limit);
        if (!f) {
          out.info.dlmc = "not run: " + msg(f.takeError());
        } else {
          files = std::move(*f);
          std::map<double, int> per;
          for (const DlmcFile &x : files) ++per[x.sparsity];
          std::string counts;
          for (auto &[s, c] : per) counts += fmt::format("{}{}: {}", counts.empty() ? "" : ", ", s < 0 ? "?" : sp_str(s), c);
          out.info.dlmc = fmt::format("{} ({} matrices: {} per sparsity{}; dilated by V in {{{}}}; N in {{{}}})",
                                      dlmc_path, files.size(), counts,
                                      cfg.dlmc_limit > 0 ? fmt::format(", at most {} each", cfg.dlmc_limit) : "",
                                      fmt::join(cfg.dlmc_vs, ", "), fmt::join(cfg.dlmc_ns, ", "));
        }
      }
    }
  } else {
    out.info.dlmc = "not run (--sections)";
  }

  progress.set_total(suite.tasks() + suite.dlmc_tasks(files.size()));
  if (cfg.jit) suite.jit_compile_costs();
  if (cfg.synthetic) suite.synthetic();
  if (cfg.small) suite.small();
  if (cfg.sddmm) suite.sddmm();
  if (!files.empty()) suite.dlmc(files);
  if (cfg.llm) suite.llm();
  if (cfg.chain) suite.chain();
  if (cfg.jit) suite.jit_launch_costs();
  if (cfg.jit) suite.jit_empty_kernel();
  progress.done();

  std::vector<ResultRow> pub = published_rows(out.rows);
  out.rows.insert(out.rows.end(), pub.begin(), pub.end());
  return out;
}

}  // namespace magicube::bench
