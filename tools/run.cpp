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
#include <functional>
#include <optional>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include <fmt/format.h>

#include "cache/compile_cache.h"
#include "compiler/planner.h"
#include "llvm/Support/raw_ostream.h"
#include "runtime/epilogue.h"
#include "runtime/kernel.h"
#include "runtime/reference.h"
#include "runtime/smtx.h"
#include "tools/commands.h"
#include "tools/inputs.h"

namespace magicube::tool {

namespace {
// Calls fn(b0, b1) on disjoint row-block ranges covering [0, nb), on the host's cores.
void parallel_blocks(int64_t nb, const std::function<void(int64_t, int64_t)> &fn) {
  int64_t threads = std::clamp<int64_t>(std::thread::hardware_concurrency(), 1, 32);
  threads = std::min(threads, std::max<int64_t>(nb, 1));
  if (threads <= 1) return fn(0, nb);
  std::vector<std::thread> pool;
  for (int64_t t = 0; t < threads; ++t)
    pool.emplace_back([&, t] {
      int64_t b0 = nb * t / threads, b1 = nb * (t + 1) / threads;
      if (b0 < b1) fn(b0, b1);
    });
  for (auto &th : pool) th.join();
}

// Row-blocks [b0, b1) of `a` as a matrix of their own (rows from b0 * V).
VectorSparse block_slice(const VectorSparse &a, int64_t b0, int64_t b1) {
  VectorSparse s;
  s.v = a.v;
  s.cols = a.cols;
  s.rows = std::min(a.rows - b0 * a.v, (b1 - b0) * a.v);
  int64_t v0 = a.block_ptr[b0], v1 = a.block_ptr[b1];
  for (int64_t i = b0; i <= b1; ++i) s.block_ptr.push_back(a.block_ptr[i] - v0);
  s.col.assign(a.col.begin() + v0, a.col.begin() + v1);
  s.values.assign(a.values.begin() + v0 * a.v, a.values.begin() + v1 * a.v);
  return s;
}

// C = A x B in int64 with reference_spmm, row-blocks split across the host's cores.
std::vector<int64_t> spmm_reference(const VectorSparse &a, const std::vector<int64_t> &b, int64_t n) {
  std::vector<int64_t> c(size_t(a.rows * n), 0);
  parallel_blocks(a.num_blocks(), [&](int64_t b0, int64_t b1) {
    std::vector<int64_t> part = reference_spmm(block_slice(a, b0, b1), b, n);
    std::copy(part.begin(), part.end(), c.begin() + b0 * a.v * n);
  });
  return c;
}

// reference_sddmm (out[i * V + r] for vector i, row r), row-blocks split across the cores.
std::vector<int64_t> sddmm_reference(const VectorSparse &mask, const std::vector<int64_t> &a,
                                     const std::vector<int64_t> &b, int64_t k) {
  std::vector<int64_t> out(size_t(mask.num_vectors() * mask.v), 0);
  parallel_blocks(mask.num_blocks(), [&](int64_t b0, int64_t b1) {
    VectorSparse s = block_slice(mask, b0, b1);
    std::vector<int64_t> rows(a.begin() + b0 * mask.v * k, a.begin() + (b0 * mask.v + s.rows) * k);
    std::vector<int64_t> part = reference_sddmm(s, rows, b, k);
    std::copy(part.begin(), part.end(), out.begin() + mask.block_ptr[b0] * mask.v);
  });
  return out;
}

// The bits a float output stores for the double x, and the value of stored bits.
int64_t stored_bits(OutType t, double x) {
  if (t == OutType::F32) return f32_bits(x);
  if (t == OutType::F16) return f16_bits(x);
  return bf16_bits(x);
}
double stored_value(OutType t, int64_t bits) {
  if (t == OutType::F16) return f16_value(uint16_t(bits));
  if (t == OutType::BF16) return bf16_value(uint16_t(bits));
  uint32_t u = uint32_t(bits);
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}
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
  const int64_t reduction = sddmm ? k : sparse->max_block_length();

  auto p = pick_plan(*spec, f.candidate);
  if (!p) return fail(p.takeError());
  if (auto e = check_reduction_length(*p, reduction)) return fail(std::move(e));

  // ---- the GPU ----
  if (std::string why = no_gpu_reason(); !why.empty()) return no_gpu_exit(why);
  auto opened = process_context();
  if (!opened) return fail(opened.takeError());
  Context *ctx = *opened;
  if (!f.arch_given) {  // plan for the device's own arch
    auto arch = device_plan_arch(*ctx);
    if (!arch) return fail(arch.takeError());
    if (*arch != spec->arch) {
      spec->arch = *arch;
      p = pick_plan(*spec, f.candidate);
      if (!p) return fail(p.takeError());
      if (auto e = check_reduction_length(*p, reduction)) return fail(std::move(e));
    }
  }
  const Plan &plan = *p;
  if (auto e = check_device_memory(*ctx, plan, m, k, n, sparse->num_vectors())) return fail(std::move(e));
  auto n_candidates = plan_candidates(plan.spec);
  llvm::outs() << "gpu       " << ctx->name() << " (" << arch_name(ctx->compute_capability()) << ", "
               << ctx->sm_count() << " SMs)\n"
               << "plan      " << to_string(plan.spec) << " (--candidate=" << f.candidate << " of "
               << (n_candidates ? n_candidates->size() : 0) << ")\n";
  if (!n_candidates) llvm::consumeError(n_candidates.takeError());
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

  // ---- pack and upload; the launch of either op ----
  std::optional<DeviceLhs> d_lhs;
  std::optional<DeviceRhs> d_rhs;
  std::optional<DeviceMask> d_mask;
  std::optional<DeviceDense> d_a, d_b;
  SrBcrs mask_layout;
  int64_t count = 0;  // output elements
  if (!sddmm) {
    auto layout = build_srbcrs(*sparse, plan);
    if (!layout) return fail(layout.takeError());
    auto pa = pack_lhs(*layout, plan);
    if (!pa) return fail(pa.takeError());
    auto pb = pack_rhs(b, k, n, plan);
    if (!pb) return fail(pb.takeError());
    auto da = upload(*pa, *layout);
    if (!da) return fail(da.takeError());
    auto db = upload(*pb);
    if (!db) return fail(db.takeError());
    d_lhs.emplace(std::move(*da));
    d_rhs.emplace(std::move(*db));
    count = m * n;
  } else {
    mask_layout = build_srbcrs(*sparse, r.stride, false, plan.shuffle);
    auto pa = pack_sddmm_lhs(a, m, k, plan);
    if (!pa) return fail(pa.takeError());
    auto pb = pack_sddmm_rhs(b, k, n, plan);
    if (!pb) return fail(pb.takeError());
    auto dm = upload_mask(mask_layout, *sparse);
    if (!dm) return fail(dm.takeError());
    auto da = upload(*pa);
    if (!da) return fail(da.takeError());
    auto db = upload(*pb);
    if (!db) return fail(db.takeError());
    d_mask.emplace(std::move(*dm));
    d_a.emplace(std::move(*da));
    d_b.emplace(std::move(*db));
    count = (out_layout == SparseLayout::Bcrs ? sparse->num_vectors() : mask_layout.num_slots()) * spec->v;
  }

  // The exact reference, and every checked element: fn(at, exact, row, col).
  const std::vector<int64_t> want = sddmm ? sddmm_reference(*sparse, a, b, k) : spmm_reference(*sparse, b, n);
  auto for_each_element = [&](auto &&fn) {
    if (!sddmm) {
      for (int64_t i = 0; i < m * n; ++i) fn(i, want[i], i / n, i % n);
      return;
    }
    const VectorSparse &mask = *sparse;
    for (int64_t blk = 0; blk < mask.num_blocks(); ++blk)
      for (int64_t i = mask.block_ptr[blk]; i < mask.block_ptr[blk + 1]; ++i)
        for (int rr = 0; rr < mask.v; ++rr) {
          int64_t row = blk * mask.v + rr;
          if (row >= m) continue;  // rows past M are not written
          int64_t slot = mask_layout.row_ptr[2 * blk] + (i - mask.block_ptr[blk]);
          int64_t at = out_layout == SparseLayout::Bcrs ? i * mask.v + rr : mask_layout.value_index(slot, rr);
          fn(at, want[i * mask.v + rr], row, int64_t(mask.col[i]));
        }
  };

  EpilogueArgs epi;
  std::optional<DeviceEpilogue> d_epi;
  if (floating) {
    double amax = 0;
    for_each_element([&](int64_t, int64_t x, int64_t, int64_t) { amax = std::max(amax, std::fabs(double(x))); });
    epi = draw_epilogue(plan.spec, m, n, amax, rng);
    auto de = upload(epi);
    if (!de) return fail(de.takeError());
    d_epi.emplace(std::move(*de));
    llvm::outs() << "epilogue  " << epilogue_str(plan.spec, epi) << "\n";
  }
  const DeviceEpilogue *epi_ptr = d_epi ? &*d_epi : nullptr;

  auto c = DeviceBuffer::allocate(std::max<size_t>(1, size_t(count) * stored_bytes(plan.spec.out)));
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

  auto launch = [&]() -> llvm::Error {
    if (!sddmm) return (*kernel)->launch(*d_lhs, *d_rhs, c->ptr(), nullptr, epi_ptr);
    return (*kernel)->launch_sddmm(*d_mask, *d_a, *d_b, c->ptr(), out_layout, nullptr, epi_ptr);
  };

  // One checked run.
  if (auto e = launch()) return fail(std::move(e));
  if (auto e = ctx->synchronize()) return fail(std::move(e));
  auto got = download_stored(*c, count, plan.spec.out);
  if (!got) return fail(got.takeError());

  struct Mismatch {
    int64_t at, row, col, got, want;
    double x;
  };
  std::optional<Mismatch> first;
  int64_t checked = 0, differ = 0, nonfinite = 0;
  double max_rel = 0;
  const OutType out = plan.spec.out;
  for_each_element([&](int64_t at, int64_t exact, int64_t row, int64_t col) {
    ++checked;
    double x = 0;
    int64_t expect = exact;
    if (floating) {
      x = dequantize(plan.spec, exact, epi, row, col);
      expect = stored_bits(out, x);
    }
    int64_t g = (*got)[at];
    if (g != expect) {
      if (!differ++) first = Mismatch{at, row, col, g, expect, x};
      return;
    }
    if (floating) {
      double y = stored_value(out, g);
      if (!std::isfinite(y)) ++nonfinite;
      else if (x != 0) max_rel = std::max(max_rel, std::fabs(y - x) / std::fabs(x));
    }
  });
  const char *name = sddmm ? "S" : "C";
  if (differ) {
    const Mismatch &w = *first;
    std::string where = fmt::format("{}[{}, {}]", name, w.row, w.col);
    if (sddmm) where += fmt::format(" (output element {})", w.at);
    if (!floating)
      llvm::outs() << fmt::format("exact: no: {} = {}, expected {} ({} of {} elements differ)\n", where, w.got, w.want,
                                  differ, checked);
    else
      llvm::outs() << fmt::format(
          "exact: no: {} has bits 0x{:x} ({:.9g}), expected 0x{:x} ({:.9g}, the rounding of {:.17g}) ({} of {} "
          "elements differ)\n",
          where, w.got, stored_value(out, w.got), w.want, stored_value(out, w.want), w.x, differ, checked);
    return 1;
  }
  if (!floating) {
    llvm::outs() << "exact: yes (" << checked << " elements equal the int64 reference)\n";
  } else {
    llvm::outs() << "exact: yes (bitwise equal to the rounded double reference)\n"
                 << fmt::format("error     max relative error {:.3e} vs the double reference over {} elements ({} unit "
                                "roundoff {:.3e})",
                                max_rel, checked, out_name(out), unit_roundoff(out));
    if (nonfinite) llvm::outs() << fmt::format("; {} element(s) beyond {}'s range, stored as inf", nonfinite, out_name(out));
    llvm::outs() << "\n";
  }
  llvm::outs().flush();

  // Timed launches, each between its own event pair.
  for (int i = 0; i < r.warmup; ++i)
    if (auto e = launch()) return fail(std::move(e));
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
    if (auto e = launch()) return fail(std::move(e));
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
  // SpMM: each vector meets N columns of B; SDDMM: each vector is a K-long dot product per row.
  double ops = 2.0 * double(nnz) * double(spec->v) * double(sddmm ? k : n);
  double tops = median > 0 ? ops / (median * 1e-3) / 1e12 : 0.0;
  llvm::outs() << fmt::format("time      median {:.4f} ms over {} launch(es) (min {:.4f}, max {:.4f}; warm-up {})\n",
                                median, r.repeat, ms.front(), ms.back(), r.warmup)
               << fmt::format("tops      {:.3f} effective TOPS (2 * nnz-vectors * V * {} / median time)\n", tops,
                                sddmm ? "K" : "N");
  return 0;
}

}  // namespace magicube::tool
