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
#include <map>
#include <mutex>
#include <optional>
#include <random>
#include <thread>

#include <sys/stat.h>

#include <fmt/format.h>

#include "bench/baselines.h"
#include "bench/timing.h"
#include "cache/cache_key.h"
#include "cache/disk_cache.h"
#include "cache/nvrtc.h"
#include "compiler/codegen.h"
#include "compiler/log.h"
#include "compiler/planner.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"
#include "runtime/autotune.h"
#include "runtime/kernel.h"
#include "runtime/smtx.h"

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

uint64_t mix(uint64_t a, uint64_t b) {
  uint64_t x = a * 0x9E3779B97F4A7C15ull ^ (b + 0x632BE59BD9B4E019ull + (a << 6) + (a >> 2));
  x ^= x >> 31;
  x *= 0xBF58476D1CE4E5B9ull;
  return x ^ (x >> 29);
}
uint64_t hash_str(const std::string &s) {
  uint64_t h = 1469598103934665603ull;
  for (unsigned char c : s) h = (h ^ c) * 1099511628211ull;
  return h;
}

// Uniform in t's range; and without 0.
int64_t draw(std::mt19937_64 &rng, const ElemType &t) {
  return t.min_value() + int64_t(rng() % uint64_t(t.max_value() - t.min_value() + 1));
}
int64_t draw_nonzero(std::mt19937_64 &rng, const ElemType &t) {
  for (;;)
    if (int64_t x = draw(rng, t)) return x;
}

// A rows x cols vector-sparse pattern: every row-block holds round((1 - sparsity) * cols)
// vectors at distinct uniformly random columns (as `magicube run` and h100.md's
// measurements). Values are left for fill_values.
VectorSparse uniform_pattern(int64_t rows, int64_t cols, int v, double sparsity, uint64_t seed) {
  std::mt19937_64 rng(seed);
  VectorSparse a;
  a.rows = rows;
  a.cols = cols;
  a.v = v;
  int64_t nb = (rows + v - 1) / v;
  int64_t per = std::clamp<int64_t>(std::llround((1.0 - sparsity) * double(cols)), 0, cols);
  std::vector<int32_t> all(cols), pick(per);
  for (int64_t c = 0; c < cols; ++c) all[c] = int32_t(c);
  a.block_ptr.reserve(nb + 1);
  a.block_ptr.push_back(0);
  a.col.reserve(nb * per);
  for (int64_t b = 0; b < nb; ++b) {
    for (int64_t i = 0; i < per; ++i) std::swap(all[i], all[i + int64_t(rng() % uint64_t(cols - i))]);
    std::copy(all.begin(), all.begin() + per, pick.begin());
    std::sort(pick.begin(), pick.end());
    a.col.insert(a.col.end(), pick.begin(), pick.end());
    a.block_ptr.push_back(int64_t(a.col.size()));
  }
  return a;
}

// Nonzero values of `t` in every vector row inside the matrix; 0 past its last row.
void fill_values(VectorSparse &a, const ElemType &t, uint64_t seed) {
  std::mt19937_64 rng(seed);
  a.values.assign(size_t(a.num_vectors()) * a.v, 0);
  for (int64_t b = 0; b < a.num_blocks(); ++b)
    for (int64_t i = a.block_ptr[b]; i < a.block_ptr[b + 1]; ++i)
      for (int r = 0; r < a.v; ++r)
        if (b * a.v + r < a.rows) a.values[size_t(i * a.v + r)] = draw_nonzero(rng, t);
}

std::vector<int64_t> random_dense(int64_t count, const ElemType &t, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<int64_t> v(static_cast<size_t>(count));
  for (int64_t &x : v) x = draw(rng, t);
  if (!v.empty() && std::all_of(v.begin(), v.end(), [](int64_t x) { return x == 0; })) v[0] = t.max_value();
  return v;
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

// The row-blocks to check for a cost of `cost_per_block` each (on average).
std::vector<int64_t> blocks_to_check(int64_t nb, double total_cost) {
  std::vector<int64_t> all;
  if (nb <= 0) return all;
  if (total_cost <= kCheckBudget) {
    all.resize(size_t(nb));
    for (int64_t b = 0; b < nb; ++b) all[size_t(b)] = b;
    return all;
  }
  int64_t want = std::max<int64_t>(2, int64_t(double(nb) * kCheckBudget / total_cost));
  for (int64_t i = 0; i < want; ++i) all.push_back(i * (nb - 1) / (want - 1));
  all.erase(std::unique(all.begin(), all.end()), all.end());
  return all;
}

// Runs fn(block) over `blocks` on the host's cores.
void parallel_blocks(const std::vector<int64_t> &blocks, const std::function<void(int64_t)> &fn) {
  int64_t threads = std::clamp<int64_t>(std::thread::hardware_concurrency(), 1, 64);
  threads = std::min<int64_t>(threads, int64_t(blocks.size()));
  if (threads <= 1) {
    for (int64_t b : blocks) fn(b);
    return;
  }
  std::atomic<size_t> next{0};
  std::vector<std::thread> pool;
  for (int64_t t = 0; t < threads; ++t)
    pool.emplace_back([&] {
      for (size_t i; (i = next.fetch_add(1)) < blocks.size();) fn(blocks[i]);
    });
  for (auto &th : pool) th.join();
}

struct Mismatch {
  int64_t count = 0;
  int64_t first_row = -1, first_col = -1, got = 0, want = 0;
  // Adds a worker's mismatches (under `mu`), keeping the first one by row.
  void merge(const Mismatch &local, std::mutex &mu) {
    if (!local.count) return;
    std::lock_guard<std::mutex> lock(mu);
    const int64_t c = count;
    if (!c || local.first_row < first_row) *this = local;
    count = c + local.count;
  }
};

std::string check_text(const Mismatch &mm, int64_t checked_blocks, int64_t nb, int64_t elements, const char *what) {
  if (mm.count)
    return fmt::format("NO: {}[{}, {}] = {}, expected {} ({} of {} checked elements differ)", what, mm.first_row,
                       mm.first_col, mm.got, mm.want, mm.count, elements);
  if (checked_blocks < nb) return fmt::format("yes (sample of {}/{} row-blocks)", checked_blocks, nb);
  return "yes";
}

// C (M x N, row-major) = A x B (K x N row-major) on the checked row-blocks, against `got`.
std::string check_spmm(const VectorSparse &a, const std::vector<int64_t> &b, int64_t n, const std::vector<int64_t> &got) {
  const int v = a.v;
  std::vector<int64_t> blocks = blocks_to_check(a.num_blocks(), double(a.num_vectors()) * v * double(n));
  std::vector<int32_t> b32(b.begin(), b.end());
  std::mutex mu;
  Mismatch mm;
  std::atomic<int64_t> elements{0};
  parallel_blocks(blocks, [&](int64_t blk) {
    std::vector<int64_t> acc(size_t(v * n), 0);
    for (int64_t i = a.block_ptr[blk]; i < a.block_ptr[blk + 1]; ++i) {
      const int32_t *brow = b32.data() + int64_t(a.col[i]) * n;
      for (int r = 0; r < v; ++r) {
        int64_t x = a.values[size_t(i * v + r)];
        if (!x) continue;
        int64_t *c = acc.data() + r * n;
        for (int64_t j = 0; j < n; ++j) c[j] += x * int64_t(brow[j]);
      }
    }
    Mismatch local;
    int64_t count = 0;
    for (int r = 0; r < v; ++r) {
      int64_t row = blk * v + r;
      if (row >= a.rows) break;
      for (int64_t j = 0; j < n; ++j) {
        ++count;
        int64_t g = got[size_t(row * n + j)], w = acc[size_t(r * n + j)];
        if (g != w) {
          if (!local.count) local.first_row = row, local.first_col = j, local.got = g, local.want = w;
          ++local.count;
        }
      }
    }
    elements += count;
    mm.merge(local, mu);
  });
  return check_text(mm, int64_t(blocks.size()), a.num_blocks(), elements.load(), "C");
}

// SDDMM in BCRS order: out[i * V + r] = A[row, :] . B[:, col_i]; A M x K row-major, B K x N
// column-major.
std::string check_sddmm(const VectorSparse &mask, const std::vector<int64_t> &a, const std::vector<int64_t> &b,
                        int64_t k, const std::vector<int64_t> &got) {
  const int v = mask.v;
  std::vector<int64_t> blocks = blocks_to_check(mask.num_blocks(), double(mask.num_vectors()) * v * double(k));
  std::vector<int32_t> a32(a.begin(), a.end()), b32(b.begin(), b.end());
  std::mutex mu;
  Mismatch mm;
  std::atomic<int64_t> elements{0};
  parallel_blocks(blocks, [&](int64_t blk) {
    Mismatch local;
    int64_t count = 0;
    for (int64_t i = mask.block_ptr[blk]; i < mask.block_ptr[blk + 1]; ++i) {
      const int32_t *bc = b32.data() + int64_t(mask.col[i]) * k;
      for (int r = 0; r < v; ++r) {
        int64_t row = blk * v + r;
        if (row >= mask.rows) break;
        const int32_t *ar = a32.data() + row * k;
        int64_t s = 0;
        for (int64_t q = 0; q < k; ++q) s += int64_t(ar[q]) * int64_t(bc[q]);
        ++count;
        int64_t g = got[size_t(i * v + r)];
        if (g != s) {
          if (!local.count) local.first_row = row, local.first_col = mask.col[i], local.got = g, local.want = s;
          ++local.count;
        }
      }
    }
    elements += count;
    mm.merge(local, mu);
  });
  return check_text(mm, int64_t(blocks.size()), mask.num_blocks(), elements.load(), "out");
}

llvm::Expected<std::vector<int64_t>> download_ints(const magicube::DeviceBuffer &buf, int64_t count, bool i64) {
  std::vector<int64_t> got(static_cast<size_t>(count));
  if (i64) {
    auto h = buf.download<int64_t>(size_t(count));
    if (!h) return h.takeError();
    got = std::move(*h);
  } else {
    auto h = buf.download<int32_t>(size_t(count));
    if (!h) return h.takeError();
    for (size_t i = 0; i < got.size(); ++i) got[i] = (*h)[i];
  }
  return got;
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

  int64_t vendor_count() const { return cfg_.vendors ? int64_t(vendor_contenders().size()) : 0; }
  CUstream stream() const { return stream_.get(); }
  uint64_t seeded(uint64_t x) const { return mix(cfg_.seed, x); }

  // False, with lost_ set, when the CUDA context is unusable (a sticky error).
  bool alive();
  void add(ResultRow r) { out_.rows.push_back(std::move(r)); }

  // rows / n (SpMM: A's rows and B's columns, 0 when unknown) size the untuned tile.
  // k / mean_len (SpMM: B's rows and A's mean vectors per row-block, 0 when unknown) decide
  // whether B may stay resident in shared memory.
  llvm::Expected<Plan> choose_plan(OpKind op, const Precision &p, int v, int64_t reduction, int64_t rows = 0,
                                   int64_t n = 0, int64_t k = 0, double mean_len = 0);
  // Ours on one problem: the stored autotuning choice for it when there is one (after tuning
  // it first with --tune), else choose_plan's. `how` says which ("" or " [tuned: ...]").
  llvm::Expected<Plan> ours_plan(OpKind op, const Precision &p, const VectorSparse &a, int64_t n_or_k,
                                 std::string &how);

  struct Problem {
    std::string source, matrix;
    double sparsity = 0;
    const VectorSparse *a = nullptr;  // the pattern (values filled per precision)
  };
  ResultRow base_row(const Problem &pb, const std::string &op, int64_t n) const;
  void vendors(const Problem &pb, int64_t n, const std::string &label);
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
  if (cfg_.flush_l2) {
    int l2 = 0;
    cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, 0);
    vopts_.timing.flush_bytes = std::max<size_t>(size_t(2) * size_t(std::max(l2, 0)), size_t(64) << 20);
  }
  // Facts for the summary.
  RunInfo &info = out_.info;
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
  info.date = utc_now();
  info.timing = fmt::format(
      "CUDA events, the same method for every contender (bench/timing.h): {} warm-up call(s), a 256 MiB memset "
      "ahead on the stream, 2 untimed calls, then {} calls each between its own event pair; the median. L2: {}",
      cfg_.warmup, cfg_.repeat,
      cfg_.flush_l2 ? fmt::format("flushed before every timed call (a {} MiB memset outside the events)",
                                  vopts_.timing.flush_bytes >> 20)
                    : "warm (inputs stay L2-resident where they fit, as in h100.md's measurements)");
  info.notes.push_back(cfg_.tune ? "Ours: every problem autotuned first (--tune), then its stored choice timed"
                                 : "Ours: the stored autotuning choice where one exists for the problem (`magicube "
                                   "tune`, or `bench --tune`), else the planner's best plan");
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

llvm::Expected<Plan> Suite::choose_plan(OpKind op, const Precision &p, int v, int64_t reduction, int64_t rows,
                                        int64_t n, int64_t k, double mean_len) {
  OpSpec s;
  s.op = op;
  s.lhs = p.lhs;
  s.rhs = p.rhs;
  s.v = v;
  s.arch = arch_;
  s.out = OutType::Int32;
  // Untuned default tile for SpMM (a stored tuning choice overrides it): BSn=256 (4 warps x
  // 64 columns, more mmas per stride) when that still gives every SM two thread blocks, else
  // 128. In our H100 probe (tests/gpu/perf_probe.cpp, 2026-11-22, M=K=4096 V=8) 256 beat 128
  // by 3-10 % on 8-bit B at N=256 and 512.
  // Grids with fewer 128-column blocks than SMs (the M=256 ResNet shape) take BSn=64. Rows of
  // at least 16 strides (512 vectors) split them over two warp groups where the kernel can:
  // H100, 2026-11-22, L8-R8 V=8: M=256 K=2304 N=256 s=0.7 8.8 us (n128) -> 6.9 us (n64k2);
  // M=K=4096 s=0.7 N=512 0.0596 -> 0.0554 ms; no gain at s=0.9, a loss at s=0.98.
  if (op == OpKind::SpMM) {
    s.bsn = 128;
    const int64_t blocks = rows > 0 ? (rows + v - 1) / v : 0, tiles = (n + 255) / 256;
    const int64_t sms = std::max(1, ctx_.sm_count());
    if (blocks * tiles >= 2 * sms) s.bsn = 256;
    else if (rows > 0 && blocks * ((n + 127) / 128) < sms) s.bsn = 64;
    if (reduction >= 16 * 32) {
      OpSpec s2 = s;
      s2.split = 2;
      auto p2 = plan(s2);
      if (p2 && can_split(*p2)) s.split = 2;
      else if (!p2) llvm::consumeError(p2.takeError());
    }
    // B resident in shared memory (BSn=32 slices, 32 warps) where it beat the ring kernel on
    // the H100 (2026-11-22, M=K=4096, `magicube run` medians, ms, resident vs ring): L8-R8
    // V=8 s=0.7 N=256 0.0233 vs 0.0297, s=0.9 0.0126 vs 0.0136, N=512 s=0.9 0.0197 vs 0.0237,
    // V=4 s=0.9 0.0203 vs 0.0228, V=2 s=0.9 0.0345 vs 0.0384, V=2 s=0.7 0.0841 vs 0.0983;
    // L16-R8 s=0.9 V=8 0.0139 vs 0.0144, V=4 0.0219 vs 0.0251: one 8-bit B plane, rows of 4+
    // strides, enough row-blocks per block, and a slice that fits. It lost at s=0.98 (0.0079
    // vs 0.0068), with 4-bit B (L8-R4 s=0.9 0.0171 vs 0.0150) and with L16-R16.
    const int64_t slices = (n + 31) / 32;
    if (k > 0 && mean_len >= 4 * 32 && blocks * slices >= 16 * int64_t(ctx_.sm_count())) {
      OpSpec r = s;
      r.bsn = 32;
      r.split = 1;
      r.resident = true;
      // A resident plan the kernel can build whose slice fits a block's shared memory.
      auto fits = [&](const Plan &q) {
        return can_reside(q) && resident_smem(q, k) + 1024 <= size_t(ctx_.max_shared_per_block_optin());
      };
      auto pr = plan(r);
      if (!pr) {
        llvm::consumeError(pr.takeError());
      } else {
        // Two lhs groups (L16-R8) only with an int32 output: int64 epilogues leave 16 warps.
        llvm::Error wide = check_reduction_length(*pr, reduction);
        const bool i32 = !wide;
        llvm::consumeError(std::move(wide));
        if (fits(*pr) && (pr->groups.size() == 1 || (pr->groups.size() == 2 && i32)) && pr->rhs.size() == 1 &&
            pr->rhs[0].storage_bits == 8)
          s = r;
        // Slices of 48 columns (three mma tiles per stride, 192 KiB at K=4096) for one lhs
        // group when each SM has at least 800 strides to run: the per-stride overhead then buys
        // 3 tiles instead of 2, which outweighs the larger slice copy. H100, 2026-11-22, L8-R8
        // M=K=4096, ms, BSn 32 -> 48: V=2 s=0.7 N=256 0.0841 -> 0.0626, N=512 0.1655 -> 0.1128;
        // V=2 s=0.9 0.0344 -> 0.0279; V=4 s=0.9 N=512 0.0351 -> 0.0280; V=8 s=0.7 0.0233 ->
        // 0.0222; but V=8 s=0.9 (about 300 strides per SM) 0.0124 -> 0.0128.
        const int64_t slices48 = (n + 47) / 48;
        const double per_sm = double(blocks) * (mean_len / 32) * double(slices48) / double(sms);
        if (s.resident && pr->groups.size() == 1 && per_sm >= 800) {
          OpSpec w = s;
          w.bsn = 48;
          auto pw = plan(w);
          if (!pw) llvm::consumeError(pw.takeError());
          else if (fits(*pw)) s = w;
        }
      }
    }
    // Short rows (a mean of 8 strides or fewer) with 8-bit B planes on a large grid (BSn
    // 256): a 2-deep ring. A deeper one holds strides the row-block does not have and costs
    // blocks per SM. H100, 2026-11-22, M=K=4096, BSn 256, ring depth 4 -> 2, ms: L8-R8 V=8
    // s=0.98 N=512 0.0105 -> 0.0097, s=0.95 N=512 0.0159 -> 0.0151; V=4 s=0.98 0.0096 ->
    // 0.0086; V=2 s=0.98 N=512 0.0230 -> 0.0214; L16-R16 s=0.98 N=512 0.0161 -> 0.0157.
    // Small grids (the M=256 shapes, BSn 64/128) lost 6-17 % with it, and 4-bit B keeps
    // depth 4 (L8-R4 s=0.98 N=256 0.0074 at 4, 0.0078 at 2).
    if (!s.resident && s.bsn == 256 && mean_len > 0 && mean_len <= 8 * 32 && p.rhs.bits > 4) s.stages = 2;
  }
  // Untuned SDDMM tile: 128 vectors (4 warps x 2 tiles) when each operand is one byte plane,
  // else 64 (their loads per k-block double). H100, 2026-11-22, M=N=4096 V=8: 128 beat 64 by
  // 5-10 % on L8-R8 and L4-R4; 64 beat 128 by 3-7 % on L16-R16.
  if (op == OpKind::SDDMM) s.bsn = p.lhs.bits <= 8 && p.rhs.bits <= 8 ? 128 : 64;
  auto i32 = plan(s);
  if (i32) {
    if (auto e = check_reduction_length(*i32, reduction)) llvm::consumeError(std::move(e));
    else return i32;
  } else {
    llvm::consumeError(i32.takeError());
  }
  s.out = OutType::Int64;
  auto i64 = plan(s);
  if (!i64) return i64.takeError();
  if (auto e = check_reduction_length(*i64, reduction)) return e;
  return i64;
}

llvm::Expected<Plan> Suite::ours_plan(OpKind op, const Precision &p, const VectorSparse &a, int64_t n_or_k,
                                      std::string &how) {
  how.clear();
  const int64_t reduction = op == OpKind::SpMM ? a.max_block_length() : n_or_k;
  const double mean_len = a.num_blocks() ? double(a.num_vectors()) / double(a.num_blocks()) : 0;
  auto base = op == OpKind::SpMM ? choose_plan(op, p, a.v, reduction, a.rows, n_or_k, a.cols, mean_len)
                                 : choose_plan(op, p, a.v, reduction);
  if (!base) return base;
  const MatrixSignature sig = op == OpKind::SpMM ? spmm_signature(a, n_or_k) : sddmm_signature(a, n_or_k);
  if (cfg_.tune) {
    TuneOptions to;
    to.warmup = cfg_.warmup;
    to.repeat = cfg_.repeat;
    auto r = op == OpKind::SpMM ? tune_spmm(ctx_, base->spec, a, n_or_k, to) : tune_sddmm(ctx_, base->spec, a, n_or_k, to);
    if (!r) {
      how = " [tuning failed: " + msg(r.takeError()) + "]";
      if (!alive()) return err("the CUDA context was lost while tuning (" + lost_why_ + ")");
      return base;
    }
  }
  std::optional<Choice> choice = lookup_tuned(base->spec, sig, ctx_.name());
  if (!choice) return base;
  auto plans = plan_candidates(choice->spec());
  if (!plans || choice->plan_index() < 0 || size_t(choice->plan_index()) >= plans->size()) {
    if (!plans) llvm::consumeError(plans.takeError());
    how = " [tuning record unusable; default plan]";
    return base;
  }
  Plan t = (*plans)[size_t(choice->plan_index())];
  if (auto e = check_reduction_length(t, reduction)) {
    how = " [tuned choice refused: " + msg(std::move(e)) + "; default plan]";
    return base;
  }
  how = " [tuned: " + choice->candidate.str() + "]";
  return t;
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
    guarded(row, [&](ResultRow &r) {
      auto m = c.run();
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
    });
    if (c.dense && out_.rows.back().status != "error") dense_cache_[key] = out_.rows.back();
  }
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
    std::vector<int64_t> b = random_dense(a.cols * n, p.rhs, mix(seed, 2));
    auto layout = build_srbcrs(a, *plan);
    if (!layout) return fail(layout.takeError(), "layout");
    auto pa = pack_lhs(*layout, *plan);
    if (!pa) return fail(pa.takeError(), "pack A");
    auto pbk = pack_rhs(b, a.cols, n, *plan);
    if (!pbk) return fail(pbk.takeError(), "pack B");
    auto da = upload(*pa, *layout);
    if (!da) return fail(da.takeError(), "upload A");
    auto db = upload(*pbk);
    if (!db) return fail(db.takeError(), "upload B");
    const bool i64 = plan->spec.out == OutType::Int64;
    auto c = magicube::DeviceBuffer::allocate(std::max<size_t>(1, size_t(a.rows * n) * (i64 ? 8 : 4)));
    if (!c) return fail(c.takeError(), "allocate C");
    if (auto e = c->memset(0xAB)) return fail(std::move(e), "memset C");  // poison
    auto kernel = Kernel::get(ctx_, *plan);
    if (!kernel) return fail(kernel.takeError(), "kernel");
    r.config += " " + (*kernel)->source().name + how;
    const Kernel &k = **kernel;
    // The first run, checked.
    if (auto e = k.launch(*da, *db, c->ptr(), stream())) return fail(std::move(e), "launch");
    if (cudaError_t st = cudaStreamSynchronize(stream_.get()); st != cudaSuccess)
      return fail(cuda_error("cudaStreamSynchronize after the first run", st), "run");
    auto got = download_ints(*c, a.rows * n, i64);
    if (!got) return fail(got.takeError(), "download C");
    r.exact = check_spmm(a, b, n, *got);
    // Timed.
    auto ms = median_ms(
        stream_.get(), [&]() -> llvm::Error { return k.launch(*da, *db, c->ptr(), stream()); }, vopts_.timing);
    if (!ms) return fail(ms.takeError(), "timing");
    r.ms = *ms;
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
    std::vector<int64_t> a = random_dense(mask.rows * k, p.lhs, mix(seed, 1));
    std::vector<int64_t> b = random_dense(k * mask.cols, p.rhs, mix(seed, 2));  // column-major K x N
    SrBcrs m = build_srbcrs(mask, 32, false, plan->shuffle);
    auto pa = pack_sddmm_lhs(a, mask.rows, k, *plan);
    if (!pa) return fail(pa.takeError(), "pack A");
    auto pbk = pack_sddmm_rhs(b, k, mask.cols, *plan);
    if (!pbk) return fail(pbk.takeError(), "pack B");
    auto dm = upload_mask(m, mask);
    if (!dm) return fail(dm.takeError(), "upload mask");
    auto da = upload(*pa);
    if (!da) return fail(da.takeError(), "upload A");
    auto db = upload(*pbk);
    if (!db) return fail(db.takeError(), "upload B");
    const bool i64 = plan->spec.out == OutType::Int64;
    int64_t count = mask.num_vectors() * mask.v;
    auto out = magicube::DeviceBuffer::allocate(size_t(std::max<int64_t>(1, count)) * (i64 ? 8 : 4));
    if (!out) return fail(out.takeError(), "allocate out");
    if (auto e = out->memset(0xAB)) return fail(std::move(e), "memset out");
    auto kernel = Kernel::get(ctx_, *plan);
    if (!kernel) return fail(kernel.takeError(), "kernel");
    r.config += " " + (*kernel)->source().name + how;
    const Kernel &kern = **kernel;
    if (auto e = kern.launch_sddmm(*dm, *da, *db, out->ptr(), SparseLayout::Bcrs, stream()))
      return fail(std::move(e), "launch");
    if (cudaError_t st = cudaStreamSynchronize(stream_.get()); st != cudaSuccess)
      return fail(cuda_error("cudaStreamSynchronize after the first run", st), "run");
    auto got = download_ints(*out, count, i64);
    if (!got) return fail(got.takeError(), "download out");
    r.exact = check_sddmm(mask, a, b, k, *got);
    auto ms = median_ms(
        stream_.get(),
        [&]() -> llvm::Error { return kern.launch_sddmm(*dm, *da, *db, out->ptr(), SparseLayout::Bcrs, stream()); },
        vopts_.timing);
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
  return t;
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
          uint64_t seed = seeded(mix(hash_str(pb.matrix + p.name), uint64_t(v * 100000 + n)));
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
      uint64_t seed = seeded(mix(hash_str(pb.matrix + p.name), 7));
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
          ours_sddmm(pb, mask, p, k, seeded(mix(hash_str(pb.matrix + p.name), uint64_t(k))));
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
          uint64_t seed = seeded(mix(hash_str(f.id + p.name), uint64_t(v * 100000 + n)));
          fill_values(a, p.lhs, seed);
          ours_spmm(pb, a, p, n, seed);
        }
      }
    }
  }
}

// ---- JIT costs ------------------------------------------------------------------------------

std::string joined(const std::vector<std::string> &opts) {
  std::string s;
  for (const std::string &o : opts) s += o + " ";
  return s;
}

void Suite::jit_compile_costs() {
  progress_.step("jit", "NVRTC compiles, disk-cache hit");
  JitCosts &j = out_.jit;
  auto note = [&](const std::string &what, llvm::Error e) { jit_note(what, std::move(e)); };
  const Precision l8r8 = default_spmm_precisions()[0];
  auto pa = choose_plan(OpKind::SpMM, l8r8, 8, 2048);
  if (!pa) return note("plan " + l8r8.name, pa.takeError());
  j.variant_first = to_string(pa->spec);
  auto arch = target_arch(*pa, ctx_.compute_capability());
  if (!arch) return note("arch", arch.takeError());
  auto t0 = Clock::now();
  auto src = generate(*pa);
  j.codegen_ms = ms_since(t0);
  if (!src) return note("codegen", src.takeError());
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
  j.cubin_kb = double(cubin->size()) / 1024.0;
  // Cold compiles of other variants, each the first of its source in the process.
  struct Cold {
    OpKind op;
    Precision p;
    int v;
  };
  auto defs = default_spmm_precisions();
  const Cold colds[] = {{OpKind::SpMM, defs[2], 8}, {OpKind::SpMM, defs[3], 4}, {OpKind::SDDMM, defs[0], 8}};
  std::vector<double> cold;
  for (const Cold &c : colds) {
    auto p = choose_plan(c.op, c.p, c.v, 256);
    if (!p) {
      note("plan", p.takeError());
      continue;
    }
    auto s = generate(*p);
    if (!s) {
      note("codegen " + to_string(p->spec), s.takeError());
      continue;
    }
    auto a = target_arch(*p, ctx_.compute_capability());
    if (!a) {
      note("arch", a.takeError());
      continue;
    }
    t0 = Clock::now();
    auto cb = nvrtc_compile(s->source, s->name + ".cu", *a, Emit::CUBIN, nvrtc_options(*p));
    double ms = ms_since(t0);
    if (!cb) {
      note("NVRTC " + to_string(p->spec), cb.takeError());
      continue;
    }
    j.nvrtc_cold_each.push_back({to_string(p->spec), ms});
    cold.push_back(ms);
  }
  j.nvrtc_cold_ms = median(cold);
  if (!cold.empty()) j.variant_cold = j.nvrtc_cold_each.front().first;

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
  CacheKey key = make_cache_key(kGeneratorVersion, canonical_plan(*pa), joined(opts), *arch, nvrtc_version());
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
}

// The floor under every time in the tables: an empty kernel (one block of 32 threads) timed
// the same way, so a kernel's time can be read as floor + its work; and its NVRTC compile,
// the fixed cost of any compile.
void Suite::jit_empty_kernel() {
  JitCosts &j = out_.jit;
  auto note = [&](const std::string &what, llvm::Error e) { jit_note(what, std::move(e)); };
  if (lost_) return;
  static const char *kEmpty = "extern \"C\" __global__ void magicube_empty(int *p) { if (p) p[0] = 0; }\n";
  auto t0 = Clock::now();
  auto cubin = nvrtc_compile(kEmpty, "magicube_empty.cu", ctx_.compute_capability(), Emit::CUBIN);
  if (!cubin) return note("empty kernel: NVRTC", cubin.takeError());
  j.empty_compile_ms = ms_since(t0);
  auto mod = Module::load(*cubin);
  if (!mod) return note("empty kernel: load", mod.takeError());
  auto fn = mod->function("magicube_empty");
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
  const unsigned gx = kern.source().grid_x(db->n), gy = unsigned(da->num_blocks), threads = unsigned(kern.source().threads);
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
  if (cfg.jit) suite.jit_launch_costs();
  if (cfg.jit) suite.jit_empty_kernel();
  progress.done();

  std::vector<ResultRow> pub = published_rows(out.rows);
  out.rows.insert(out.rows.end(), pub.begin(), pub.end());
  return out;
}

}  // namespace magicube::bench
