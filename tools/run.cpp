// run: random inputs -> plan -> pack -> upload -> load the kernel (timed) -> one checked run
// -> timed launches.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <optional>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include <fmt/format.h>

#include "cache/compile_cache.h"
#include "compiler/planner.h"
#include "llvm/Support/raw_ostream.h"
#include "runtime/kernel.h"
#include "runtime/reference.h"
#include "runtime/smtx.h"
#include "tools/commands.h"

namespace magicube::tool {

namespace {
llvm::Error err(const llvm::Twine &msg) { return llvm::createStringError(llvm::inconvertibleErrorCode(), msg); }

// Uniform in t's range.
int64_t draw(std::mt19937_64 &rng, const ElemType &t) {
  return t.min_value() + int64_t(rng() % uint64_t(t.max_value() - t.min_value() + 1));
}
// Uniform in t's range without 0 (every type has a nonzero value).
int64_t draw_nonzero(std::mt19937_64 &rng, const ElemType &t) {
  for (;;)
    if (int64_t x = draw(rng, t)) return x;
}

// A synthetic M x K vector-sparse matrix: every row-block holds round((1 - sparsity) * K)
// vectors at distinct uniformly random columns, with nonzero values.
VectorSparse synthetic_lhs(std::mt19937_64 &rng, int64_t m, int64_t k, double sparsity, int v, const ElemType &t) {
  VectorSparse a;
  a.rows = m;
  a.cols = k;
  a.v = v;
  int64_t nb = (m + v - 1) / v;
  int64_t per = std::llround((1.0 - sparsity) * double(k));
  per = std::clamp<int64_t>(per, 0, k);
  std::vector<int32_t> cols(k);
  for (int64_t c = 0; c < k; ++c) cols[c] = int32_t(c);
  a.block_ptr.reserve(nb + 1);
  a.block_ptr.push_back(0);
  a.col.reserve(nb * per);
  a.values.reserve(nb * per * v);
  std::vector<int32_t> pick(per);
  for (int64_t b = 0; b < nb; ++b) {
    // A partial Fisher-Yates shuffle: cols stays a permutation, its first `per` are the pick.
    for (int64_t i = 0; i < per; ++i) std::swap(cols[i], cols[i + int64_t(rng() % uint64_t(k - i))]);
    std::copy(cols.begin(), cols.begin() + per, pick.begin());
    std::sort(pick.begin(), pick.end());
    for (int32_t c : pick) {
      a.col.push_back(c);
      for (int r = 0; r < v; ++r) a.values.push_back(b * v + r < m ? draw_nonzero(rng, t) : 0);
    }
    a.block_ptr.push_back(int64_t(a.col.size()));
  }
  return a;
}

// The matrix the run's flags ask for; the error names the bad flag or file.
llvm::Expected<VectorSparse> make_lhs(const RunArgs &r, const OpSpec &spec, std::mt19937_64 &rng) {
  if (!r.matrix.empty()) {
    auto pat = read_smtx(r.matrix);
    if (!pat) return pat.takeError();
    if (pat->rows * spec.v > INT32_MAX || pat->cols > INT32_MAX)
      return err("matrix: " + r.matrix + " dilated by V=" + llvm::Twine(spec.v) + " is too large for 32-bit indices");
    return dilate(*pat, spec.v, [&] { return draw_nonzero(rng, spec.lhs); });
  }
  if (r.m <= 0 || r.m > INT32_MAX) return err("m: --m=" + llvm::Twine(r.m) + " is not allowed (allowed: 1..2^31-1)");
  if (r.k <= 0 || r.k > INT32_MAX) return err("k: --k=" + llvm::Twine(r.k) + " is not allowed (allowed: 1..2^31-1)");
  if (!(r.sparsity >= 0.0 && r.sparsity < 1.0))
    return err("sparsity: --sparsity=" + fmt::format("{}", r.sparsity) + " is not allowed (allowed: 0 <= sparsity < 1)");
  return synthetic_lhs(rng, r.m, r.k, r.sparsity, spec.v, spec.lhs);
}

// C = A x B in int64 with reference_spmm, row-blocks split across the host's cores.
std::vector<int64_t> reference(const VectorSparse &a, const std::vector<int64_t> &b, int64_t n) {
  int64_t nb = a.num_blocks();
  int64_t threads = std::clamp<int64_t>(std::thread::hardware_concurrency(), 1, 32);
  threads = std::min(threads, std::max<int64_t>(nb, 1));
  if (threads <= 1) return reference_spmm(a, b, n);
  std::vector<int64_t> c(a.rows * n, 0);
  std::vector<std::thread> pool;
  for (int64_t t = 0; t < threads; ++t)
    pool.emplace_back([&, t] {
      int64_t b0 = nb * t / threads, b1 = nb * (t + 1) / threads;
      if (b0 == b1) return;
      VectorSparse s;
      s.v = a.v;
      s.cols = a.cols;
      s.rows = std::min(a.rows - b0 * a.v, (b1 - b0) * a.v);
      int64_t v0 = a.block_ptr[b0], v1 = a.block_ptr[b1];
      for (int64_t i = b0; i <= b1; ++i) s.block_ptr.push_back(a.block_ptr[i] - v0);
      s.col.assign(a.col.begin() + v0, a.col.begin() + v1);
      s.values.assign(a.values.begin() + v0 * a.v, a.values.begin() + v1 * a.v);
      std::vector<int64_t> part = reference_spmm(s, b, n);
      std::copy(part.begin(), part.end(), c.begin() + b0 * a.v * n);
    });
  for (auto &th : pool) th.join();
  return c;
}

// The newest arch a plan can target on a device of compute capability `cc`; 0 if none.
int plan_arch_for_device(int cc) {
  int best = 0;
  for (int a : {80, 86, 89, 90})
    if (a <= cc) best = a;
  return best;
}

double ms_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}
}  // namespace

int cmd_run(const OpFlags &f, const RunArgs &r) {
  // ---- everything that needs no GPU: flags, inputs, plan, exactness bound ----
  auto spec = spec_from_flags(f);
  if (!spec) return fail(spec.takeError());
  if (spec->op == OpKind::SDDMM) {
    llvm::errs() << "magicube: run --op=sddmm is not implemented yet (only --op=spmm)\n";
    return 2;
  }
  if (spec->out != OutType::Int32 && spec->out != OutType::Int64)
    return fail("out: run checks integer outputs bit-exact; --out=" + f.out + " is not supported (allowed: int32, int64)");
  bool synthetic = r.m_given || r.k_given || r.sparsity_given;
  if (!r.matrix.empty() && synthetic)
    return fail("matrix: --matrix=" + r.matrix + " cannot be combined with --m, --k or --sparsity");
  if (r.matrix.empty() && !(r.m_given && r.k_given && r.sparsity_given)) {
    std::string missing;
    for (auto [given, name] : {std::pair{r.m_given, "--m"}, {r.k_given, "--k"}, {r.sparsity_given, "--sparsity"}})
      if (!given) missing += std::string(missing.empty() ? "" : ", ") + name;
    return fail("run: give --matrix=FILE.smtx, or all of --m, --k and --sparsity (missing: " + missing + ")");
  }
  if (r.n <= 0 || r.n > INT32_MAX)
    return fail("n: --n=" + llvm::Twine(r.n) + " is not allowed (give --n=N, the columns of B and C: 1..2^31-1)");
  if (r.repeat < 1) return fail("repeat: --repeat=" + llvm::Twine(r.repeat) + " is not allowed (allowed: >= 1)");
  if (r.warmup < 0) return fail("warmup: --warmup=" + llvm::Twine(r.warmup) + " is not allowed (allowed: >= 0)");

  std::mt19937_64 rng(r.seed);
  auto a = make_lhs(r, *spec, rng);
  if (!a) return fail(a.takeError());
  const int64_t m = a->rows, k = a->cols, n = r.n;
  std::vector<int64_t> b(size_t(k * n));
  for (int64_t &x : b) x = draw(rng, spec->rhs);
  if (!b.empty() && std::all_of(b.begin(), b.end(), [](int64_t x) { return x == 0; })) b[0] = spec->rhs.max_value();

  auto p = pick_plan(*spec, f.candidate);
  if (!p) return fail(p.takeError());
  if (auto e = check_reduction_length(*p, a->max_block_length())) return fail(std::move(e));

  // ---- the GPU ----
  std::string why = no_gpu_reason();
  if (!why.empty()) {
    llvm::errs() << "magicube: no GPU: " << why << "\n";
    return 2;
  }
  // Held to the end of the process: the loaded-kernel cache (a static made later, so
  // destroyed earlier) unloads its modules while the context is still alive.
  static std::optional<Context> ctx;
  {
    auto created = Context::create(0);
    if (!created) return fail(created.takeError());
    ctx.emplace(std::move(*created));
  }
  if (!f.arch_given) {  // plan for the device's own arch
    int arch = plan_arch_for_device(ctx->compute_capability());
    if (arch == 0)
      return fail("arch: the device " + ctx->name() + " is " + arch_name(ctx->compute_capability()) +
                  " (supported: sm_80 and newer)");
    if (arch != spec->arch) {
      spec->arch = arch;
      p = pick_plan(*spec, f.candidate);
      if (!p) return fail(p.takeError());
      if (auto e = check_reduction_length(*p, a->max_block_length())) return fail(std::move(e));
    }
  }
  const Plan &plan = *p;
  auto n_candidates = plan_candidates(plan.spec);
  llvm::outs() << "gpu       " << ctx->name() << " (" << arch_name(ctx->compute_capability()) << ", "
               << ctx->sm_count() << " SMs)\n"
               << "plan      " << to_string(plan.spec) << " (--candidate=" << f.candidate << " of "
               << (n_candidates ? n_candidates->size() : 0) << ")\n";
  if (!n_candidates) llvm::consumeError(n_candidates.takeError());
  const int64_t nnz = a->num_vectors();
  llvm::outs() << fmt::format("problem   M={} K={} N={} V={} nnz-vectors={} (density {:.4f}, longest row-block {})\n",
                                m, k, n, spec->v, nnz,
                                a->num_blocks() * k != 0 ? double(nnz) / double(a->num_blocks() * k) : 0.0,
                                a->max_block_length());
  llvm::outs().flush();

  auto layout = build_srbcrs(*a, plan);
  if (!layout) return fail(layout.takeError());
  auto pa = pack_lhs(*layout, plan);
  if (!pa) return fail(pa.takeError());
  auto pb = pack_rhs(b, k, n, plan);
  if (!pb) return fail(pb.takeError());
  auto da = upload(*pa, *layout);
  if (!da) return fail(da.takeError());
  auto db = upload(*pb);
  if (!db) return fail(db.takeError());
  const bool i64 = plan.spec.out == OutType::Int64;
  const size_t elem = i64 ? 8 : 4;
  auto c = DeviceBuffer::allocate(std::max<size_t>(1, size_t(m * n) * elem));
  if (!c) return fail(c.takeError());
  if (auto e = c->memset(0xAB)) return fail(std::move(e));  // poison: every element must be written

  CompileCache::Stats before = CompileCache::process().stats();
  auto t0 = std::chrono::steady_clock::now();
  auto kernel = Kernel::get(*ctx, plan);
  double load_ms = ms_since(t0);
  if (!kernel) return fail(kernel.takeError());
  CompileCache::Stats after = CompileCache::process().stats();
  const char *from = after.compiles > before.compiles     ? "compiled by NVRTC"
                     : after.disk_hits > before.disk_hits ? "cubin from the disk cache"
                                                          : "cubin from memory";
  llvm::outs() << "kernel    " << (*kernel)->source().name << "\n"
               << fmt::format("load      {:.1f} ms ({}, loaded for {})\n", load_ms, from,
                                arch_name((*kernel)->arch()));
  llvm::outs().flush();

  // One checked run.
  if (auto e = (*kernel)->launch(*da, *db, c->ptr(), nullptr)) return fail(std::move(e));
  if (auto e = ctx->synchronize()) return fail(std::move(e));
  std::vector<int64_t> got(size_t(m * n));
  if (i64) {
    auto h = c->download<int64_t>(got.size());
    if (!h) return fail(h.takeError());
    got = std::move(*h);
  } else {
    auto h = c->download<int32_t>(got.size());
    if (!h) return fail(h.takeError());
    for (size_t i = 0; i < got.size(); ++i) got[i] = (*h)[i];
  }
  std::vector<int64_t> want = reference(*a, b, n);
  for (size_t i = 0; i < want.size(); ++i)
    if (got[i] != want[i]) {
      int64_t bad = 0;
      for (size_t j = i; j < want.size(); ++j) bad += got[j] != want[j];
      llvm::outs() << "exact: no: C[" << int64_t(i) / n << ", " << int64_t(i) % n << "] = " << got[i] << ", expected "
                   << want[i] << " (" << bad << " of " << want.size() << " elements differ)\n";
      return 1;
    }
  llvm::outs() << "exact: yes (" << want.size() << " elements equal the int64 reference)\n";
  llvm::outs().flush();

  // Timed launches, each between its own event pair.
  for (int i = 0; i < r.warmup; ++i)
    if (auto e = (*kernel)->launch(*da, *db, c->ptr(), nullptr)) return fail(std::move(e));
  if (auto e = ctx->synchronize()) return fail(std::move(e));
  std::vector<Event> start, stop;
  for (int i = 0; i < r.repeat; ++i) {
    auto e0 = Event::create();
    if (!e0) return fail(e0.takeError());
    auto e1 = Event::create();
    if (!e1) return fail(e1.takeError());
    start.push_back(std::move(*e0));
    stop.push_back(std::move(*e1));
  }
  for (int i = 0; i < r.repeat; ++i) {
    if (auto e = start[i].record(nullptr)) return fail(std::move(e));
    if (auto e = (*kernel)->launch(*da, *db, c->ptr(), nullptr)) return fail(std::move(e));
    if (auto e = stop[i].record(nullptr)) return fail(std::move(e));
  }
  if (auto e = ctx->synchronize()) return fail(std::move(e));
  std::vector<double> ms;
  for (int i = 0; i < r.repeat; ++i) {
    auto t = elapsed_ms(start[i], stop[i]);
    if (!t) return fail(t.takeError());
    ms.push_back(*t);
  }
  std::sort(ms.begin(), ms.end());
  double median = ms.size() % 2 ? ms[ms.size() / 2] : (ms[ms.size() / 2 - 1] + ms[ms.size() / 2]) / 2;
  double ops = 2.0 * double(nnz) * double(spec->v) * double(n);
  double tops = median > 0 ? ops / (median * 1e-3) / 1e12 : 0.0;
  llvm::outs() << fmt::format("time      median {:.4f} ms over {} launch(es) (min {:.4f}, max {:.4f}; warm-up {})\n",
                                median, r.repeat, ms.front(), ms.back(), r.warmup)
               << fmt::format("tops      {:.3f} effective TOPS (2 * nnz-vectors * V * N / median time)\n", tops);
  return 0;
}

}  // namespace magicube::tool
