// run: random inputs -> plan -> pack -> upload -> exact reference -> (float outputs: random
// scales and bias) -> load the kernel (timed) -> one checked run -> timed launches.
//
// SpMM:  C (M x N) = A (M x K, V x 1 vector-sparse) x B (K x N).
// SDDMM: out = (A (M x K) x B (K x N)) at the mask's V x 1 vectors, in BCRS or SR-BCRS order.
// Integer outputs must equal the int64 reference; float outputs must equal, bit for bit,
// the CPU rounding of the double dequantization of that reference (runtime/epilogue.h).
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <deque>
#include <functional>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "jit/compile_cache.h"
#include "compiler/planner.h"
#include "llvm/Support/raw_ostream.h"
#include "runtime/epilogue.h"
#include "runtime/autotune.h"
#include "runtime/dispatch.h"
#include "runtime/kernel.h"
#include "runtime/reference.h"
#include "runtime/smtx.h"
#include "runtime/pipeline.h"
#include "runtime/timing.h"
#include "tools/commands.h"
#include "tools/inputs.h"

namespace magicube::tool {

namespace {
// The unit roundoff of a float output (half an ulp at 1, relative).
double unit_roundoff(OutType t) { return t == OutType::F32 ? 0x1p-24 : t == OutType::F16 ? 0x1p-11 : 0x1p-8; }

// Random scales and bias of a float output: the scales bring the largest |result| (amax) to
// about kTarget, well inside f16's range, each drawn in [0.5, 1.5) of its nominal value;
// the bias is up to a quarter of the results' magnitude, either sign.
EpilogueArgs draw_epilogue(const OpSpec &s, int64_t rows, int64_t cols, double amax, std::mt19937_64 &rng) {
  constexpr double kTarget = 64;
  const double a = std::max(amax, 1.0);
  std::uniform_real_distribution<double> u(0.5, 1.5), pm(-1.0, 1.0);
  EpilogueArgs e;
  if (s.scale == Scale::Tensor) e.alpha = float(u(rng) * kTarget / a);
  if (s.scale == Scale::RowCol) {
    const double per = std::sqrt(kTarget / a);
    for (int64_t i = 0; i < rows; ++i) e.row_scale.push_back(float(u(rng) * per));
    for (int64_t i = 0; i < cols; ++i) e.col_scale.push_back(float(u(rng) * per));
  }
  const double mag = s.scale == Scale::None ? a : kTarget;
  if (s.bias != Bias::None)
    for (int64_t i = 0, nb = s.bias == Bias::Row ? rows : cols; i < nb; ++i) e.bias.push_back(float(pm(rng) * mag / 4));
  return e;
}

std::string range_str(const std::vector<float> &v) {
  if (v.empty()) return "none";
  auto [lo, hi] = std::minmax_element(v.begin(), v.end());
  return fmt::format("{:.3g}..{:.3g}", *lo, *hi);
}

std::string epilogue_str(const OpSpec &s, const EpilogueArgs &e) {
  std::string o = std::string(out_name(s.out)) + " = exact int64 result";
  if (s.scale == Scale::Tensor) o += fmt::format(" * alpha (alpha {:.4g})", e.alpha);
  if (s.scale == Scale::RowCol)
    o += " * row_scale[r] * col_scale[c] (row_scale " + range_str(e.row_scale) + ", col_scale " +
         range_str(e.col_scale) + ")";
  if (s.bias == Bias::Row) o += " + bias[r] (" + range_str(e.bias) + ")";
  if (s.bias == Bias::Col) o += " + bias[c] (" + range_str(e.bias) + ")";
  return o + ", in double, rounded to nearest even; scales and bias drawn at random";
}

double ms_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace

int cmd_run(const OpFlags &f, const RunArgs &r) {
  // ---- everything that needs no GPU: flags, inputs, plan, exactness bound ----
  auto spec = spec_from_flags(f);
  if (!spec) return fail(spec.takeError());
  const bool sddmm = spec->op == OpKind::SDDMM;
  const bool floating = is_float(spec->out);

  if (!sddmm && r.layout_given)
    return fail("layout: --layout=" + r.layout + " applies to --op=sddmm only (SpMM writes C row-major)");
  if (!sddmm && r.stride_given)
    return fail("stride: --stride=" + llvm::Twine(r.stride) + " applies to --op=sddmm only");
  if (r.layout != "bcrs" && r.layout != "srbcrs")
    return fail("layout: '" + r.layout + "' is not allowed (allowed: bcrs, srbcrs)");
  const SparseLayout out_layout = r.layout == "srbcrs" ? SparseLayout::SrBcrs : SparseLayout::Bcrs;
  if (r.stride < 1 || r.stride > 1024)
    return fail("stride: --stride=" + llvm::Twine(r.stride) + " is not allowed (allowed: 1..1024)");

  if (!sddmm) {
    bool synthetic = r.m_given || r.k_given || r.sparsity_given;
    if (!r.matrix.empty() && synthetic)
      return fail("matrix: --matrix=" + r.matrix + " cannot be combined with --m, --k or --sparsity");
    if (r.matrix.empty() && !(r.m_given && r.k_given && r.sparsity_given))
      return fail("run: give --matrix=FILE.smtx, or all of --m, --k and --sparsity (missing: " +
                  missing_list({{r.m_given, "--m"}, {r.k_given, "--k"}, {r.sparsity_given, "--sparsity"}}) + ")");
    if (r.n <= 0 || r.n > INT32_MAX)
      return fail("n: --n=" + llvm::Twine(r.n) + " is not allowed (give --n=N, the columns of B and C: 1..2^31-1)");
  } else {
    bool synthetic = r.m_given || r.n_given || r.sparsity_given;
    if (!r.matrix.empty() && synthetic)
      return fail("matrix: --matrix=" + r.matrix +
                  " cannot be combined with --m, --n or --sparsity (the mask's shape is the file's, rows dilated by V)");
    if (r.matrix.empty() && !(r.m_given && r.n_given && r.sparsity_given))
      return fail("run: give --matrix=FILE.smtx, or all of --m, --n and --sparsity (missing: " +
                  missing_list({{r.m_given, "--m"}, {r.n_given, "--n"}, {r.sparsity_given, "--sparsity"}}) + ")");
    if (r.k <= 0 || r.k > INT32_MAX)
      return fail("k: --k=" + llvm::Twine(r.k) +
                  " is not allowed (give --k=K, the reduction length, A's columns and B's rows: 1..2^31-1)");
  }
  if (auto e = check_timing_flags(r.repeat, r.warmup)) return fail(std::move(e));
  if (r.layers < 1 || r.layers > 64)
    return fail("layers: --layers=" + llvm::Twine(r.layers) + " is not allowed (allowed: 1..64)");
  if (sddmm && r.layers != 1) return fail("layers: --layers applies to --op=spmm only");

  std::mt19937_64 rng(r.seed);
  // SpMM: `sparse` is A (M x K), `b` is B (K x N, row-major).
  // SDDMM: `sparse` is the mask (M x N), `a` is A (M x K, row-major), `b` is B (K x N,
  // column-major).
  auto sparse = sddmm ? make_sparse(r, *spec, ElemType{1, false}, r.n, "n", rng)
                      : make_sparse(r, *spec, spec->lhs, r.k, "k", rng);
  if (!sparse) return fail(sparse.takeError());
  const int64_t m = sparse->rows;
  const int64_t n = sddmm ? sparse->cols : r.n;
  const int64_t k = sddmm ? r.k : sparse->cols;
  std::vector<int64_t> a;
  if (sddmm) a = random_dense(rng, m * k, spec->lhs);
  std::vector<int64_t> b = random_dense(rng, k * n, spec->rhs);
  // The reduction length the output type must stay exact for.

  // The plan is the dispatch's (a tuning record, the policy, or the knob flags), for the GPU's
  // own arch unless --arch is given; checked against the matrix before anything runs.
  const MatrixSignature sig = sddmm ? sddmm_signature(*sparse, k) : spmm_signature(*sparse, n);
  const int candidate = f.candidate_given ? f.candidate : -1;
  auto route = route_from_flags(f);
  if (!route) return fail(route.takeError());
  if (sddmm && f.route != "auto" && f.route != "sparse")
    return fail("route: --route=" + f.route + " applies to --op=spmm only (SDDMM has no dense route)");
  if (auto d = dispatch(*spec, &sig, DeviceFacts::reference_for(spec->arch), candidate, nullptr, *route); !d)
    return fail(d.takeError());

  // ---- the GPU ----
  if (std::string why = no_gpu_reason(); !why.empty()) return no_gpu_exit(why);
  auto opened = process_context();
  if (!opened) return fail(opened.takeError());
  Context *ctx = *opened;
  if (!f.arch_given) {  // plan for the device's own arch
    auto arch = device_plan_arch(*ctx);
    if (!arch) return fail(arch.takeError());
    spec->arch = *arch;
  }
  auto p = dispatch(*spec, &sig, device_facts(*ctx), candidate, nullptr, *route);
  if (!p) return fail(p.takeError());
  const Plan &plan = p->plan;
  const bool dense = p->route == Route::Dense;
  if (auto e = check_device_memory(*ctx, plan, m, k, n, sparse->num_vectors())) return fail(std::move(e));
  llvm::outs() << "gpu       " << ctx->name() << " (" << arch_name(ctx->compute_capability()) << ", "
               << ctx->sm_count() << " SMs)\n"
               << "plan      " << to_string(plan.spec) << " (" << p->chosen_by() << ")\n";
  if (!p->route_why.empty()) llvm::outs() << "route     " << route_name(p->route) << " (" << p->route_why << ")\n";
  const int64_t nnz = sparse->num_vectors();
  const int64_t dense_cols = sddmm ? n : k;  // the columns a row-block's vectors are drawn from
  const double density =
      sparse->num_blocks() * dense_cols != 0 ? double(nnz) / double(sparse->num_blocks() * dense_cols) : 0.0;
  if (!sddmm)
    llvm::outs() << fmt::format("problem   M={} K={} N={} V={} nnz-vectors={} (density {:.4f}, longest row-block {})\n",
                                m, k, n, spec->v, nnz, density, sparse->max_block_length());
  else
    llvm::outs() << fmt::format(
        "problem   M={} N={} K={} V={} nnz-vectors={} (mask density {:.4f}, longest row-block {}); output {}{}\n", m, n,
        k, spec->v, nnz, density, sparse->max_block_length(), r.layout == "srbcrs" ? "SR-BCRS" : "BCRS",
        fmt::format(" (mask stride {})", r.stride));
  llvm::outs().flush();

  // ---- the library's pipeline: pack, upload, kernel, launch, download, verify ----
  std::unique_ptr<Pipeline> pipe =
      sddmm ? Pipeline::sddmm(plan.spec, *sparse, std::move(a), std::move(b), k, out_layout, r.stride)
            : Pipeline::spmm(plan.spec, *sparse, std::move(b), n);
  // Float outputs: random scales and bias that bring the largest |result| to about 64.
  auto random_epilogue = [&](Pipeline &q) {
    double amax = 0;
    for (int64_t x : q.reference()) amax = std::max(amax, std::fabs(double(x)));
    q.set_epilogue(draw_epilogue(plan.spec, m, n, amax, rng));
  };
  if (floating) {
    random_epilogue(*pipe);
    llvm::outs() << "epilogue  " << epilogue_str(plan.spec, pipe->epilogue()) << "\n";
  }
  // More layers (--layers): each its own A (drawn as layer 0's, or the same --matrix) and B,
  // packed for the same plan; the chain launches them back to back on one stream.
  std::deque<VectorSparse> more_a;
  std::vector<std::unique_ptr<Pipeline>> more;
  std::vector<Pipeline *> layers{pipe.get()};  // every layer, in launch order
  int64_t chain_vectors = nnz;                 // every layer's
  for (int layer = 1; layer < r.layers; ++layer) {
    auto w = make_sparse(r, *spec, spec->lhs, r.k, "k", rng);
    if (!w) return fail(w.takeError());
    more_a.push_back(std::move(*w));
    chain_vectors += more_a.back().num_vectors();
    more.push_back(Pipeline::spmm(plan.spec, more_a.back(), random_dense(rng, k * n, spec->rhs), n));
    if (floating) random_epilogue(*more.back());
    layers.push_back(more.back().get());
  }
  if (r.layers > 1)
    llvm::outs() << fmt::format("layers    {} (each its own A and B; {} nnz-vectors in all), launched back to back on one "
                                "stream; timed as one chain\n",
                                r.layers, chain_vectors);
  std::function<llvm::Error()> launch;
  if (dense) {  // the dense route: A densified, B transposed, cuBLASLt's fastest algorithm
    auto t0 = std::chrono::steady_clock::now();
    for (Pipeline *q : layers) {
      if (auto e = q->prepare_dense(*ctx)) return fail(std::move(e));
      if (auto e = q->poison()) return fail(std::move(e));
    }
    llvm::outs() << "kernel    " << pipe->dense_describe() << "\n"
                 << fmt::format("load      {:.1f} ms (dense copy of A uploaded, algorithms timed)\n", ms_since(t0));
    llvm::outs().flush();
    launch = [&]() -> llvm::Error {
      for (Pipeline *q : layers)
        if (auto e = q->launch_dense()) return e;
      return llvm::Error::success();
    };
  } else {
    for (Pipeline *q : layers) {
      if (auto e = q->prepare(plan)) return fail(std::move(e));
      if (auto e = q->poison()) return fail(std::move(e));  // every element must be written
    }

    CompileCache::Stats before = kernel_compile_cache().stats();
    auto t0 = std::chrono::steady_clock::now();
    auto kernel = Kernel::get(*ctx, plan);
    double load_ms = ms_since(t0);
    if (!kernel) return fail(kernel.takeError());
    CompileCache::Stats after = kernel_compile_cache().stats();
    const char *from = after.compiles > before.compiles         ? "compiled by NVRTC"
                       : after.bundle_hits > before.bundle_hits ? "cubin from the AOT bundle"
                       : after.disk_hits > before.disk_hits     ? "cubin from the disk cache"
                                                                : "cubin from memory";
    llvm::outs() << "kernel    " << (*kernel)->source().name << "\n"
                 << fmt::format("load      {:.1f} ms ({}, loaded for {})\n", load_ms, from,
                                  arch_name((*kernel)->arch()));
    llvm::outs().flush();
    launch = [&, k = *kernel]() -> llvm::Error {
      for (Pipeline *q : layers)
        if (auto e = q->launch(*k)) return e;
      return llvm::Error::success();
    };
  }

  // One checked run.
  if (auto e = launch()) return fail(std::move(e));
  if (auto e = ctx->synchronize()) return fail(std::move(e));
  // The whole reference up to kCheckBudget multiply-adds on the host's cores, else a sample of
  // row-blocks of about that cost (the first, the last and evenly spaced ones).
  constexpr double kCheckBudget = 1e10;
  auto checked = pipe->verify(kCheckBudget);
  if (!checked) return fail(checked.takeError());
  const OutType out = plan.spec.out;
  const char *name = sddmm ? "S" : "C";
  const Verification &v = *checked;
  if (v.differ) {
    const Verification::Mismatch &w = *v.first;
    std::string where = fmt::format("{}[{}, {}]", name, w.row, w.col);
    if (sddmm) where += fmt::format(" (output element {})", w.at);
    if (!floating)
      llvm::outs() << fmt::format("exact: no: {} = {}, expected {} ({} of {} elements differ)\n", where, w.got, w.want,
                                  v.differ, v.checked);
    else
      llvm::outs() << fmt::format(
          "exact: no: {} has bits 0x{:x} ({:.9g}), expected 0x{:x} ({:.9g}, the rounding of {:.17g}) ({} of {} "
          "elements differ)\n",
          where, w.got, stored_value(out, w.got), w.want, stored_value(out, w.want), w.value, v.differ, v.checked);
    return 1;
  }
  if (!floating) {
    llvm::outs() << "exact: yes (" << v.checked << " elements equal the int64 reference"
                 << (v.blocks_checked < v.blocks
                         ? fmt::format("; a sample of {} of {} row-blocks", v.blocks_checked, v.blocks)
                         : std::string())
                 << ")\n";
  } else {
    llvm::outs() << "exact: yes (bitwise equal to the rounded double reference)\n"
                 << fmt::format("error     max relative error {:.3e} vs the double reference over {} elements ({} unit "
                                "roundoff {:.3e})",
                                v.max_rel, v.checked, out_name(out), unit_roundoff(out));
    if (v.nonfinite) llvm::outs() << fmt::format("; {} element(s) beyond {}'s range, stored as inf", v.nonfinite, out_name(out));
    llvm::outs() << "\n";
  }
  for (size_t i = 0; i < more.size(); ++i) {  // the other layers: exact too, or the run fails
    auto c = more[i]->verify(kCheckBudget);
    if (!c) return fail(c.takeError());
    if (c->differ) {
      llvm::outs() << fmt::format("exact: no: layer {}: {} of {} elements differ\n", i + 1, c->differ, c->checked);
      return 1;
    }
  }
  if (!more.empty()) llvm::outs() << fmt::format("exact: yes (layers 1..{} too)\n", more.size());
  llvm::outs().flush();

  // Timed launches, the library's way (runtime/timing.h: a filler memset ahead, each launch
  // between its own event pair), as tune and bench time them.
  TimingOptions topts{r.warmup, r.repeat};
  if (r.flush_l2) topts.flush_bytes = l2_flush_bytes(*ctx);
  auto timed = time_launches(*ctx, launch, topts);
  if (!timed) return fail(timed.takeError());
  const double median = timed->median_ms;
  const std::vector<double> ms{timed->min_ms, timed->max_ms};
  // SpMM: each vector meets N columns of B; SDDMM: each vector is a K-long dot product per row.
  double ops = 2.0 * double(chain_vectors) * double(spec->v) * double(sddmm ? k : n);
  double tops = median > 0 ? ops / (median * 1e-3) / 1e12 : 0.0;
  llvm::outs() << fmt::format("time      median {:.4f} ms over {} launch(es) (min {:.4f}, max {:.4f}; warm-up {}; L2 {})\n",
                                median, r.repeat, ms.front(), ms.back(), r.warmup,
                                r.flush_l2 ? "flushed before each launch" : "warm")
               << fmt::format("tops      {:.3f} effective TOPS (2 * nnz-vectors * V * {} / median time)\n", tops,
                                sddmm ? "K" : "N");
  if (r.layers > 1)
    llvm::outs() << fmt::format("layer     median {:.4f} ms a layer (the chain's median / {})\n", median / r.layers,
                                r.layers);
  return 0;
}

}  // namespace magicube::tool
