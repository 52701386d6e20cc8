// Runs one SpMM or SDDMM on the GPU end to end (layout, packing, upload, kernel, download)
// and returns each output element as stored: the integer, or the float's bit pattern.
#pragma once

#include <algorithm>
#include <string>
#include <vector>

#include "runtime/kernel.h"
#include "support/parallel.h"

namespace magicube::testing {

// Compiles every plan's cubin on the host's cores first (NVRTC is the slow part).
inline void precompile(Context &ctx, const std::vector<Plan> &plans) {
  parallel_for(
      plans.size(),
      [&](size_t i) {
        auto arch = target_arch(plans[i], ctx.compute_capability());
        if (!arch) return;
        auto src = generate(plans[i]);
        if (!src) return;
        (void)!kernel_cubin(plans[i], *src, *arch);  // errors show again at the real call
      },
      std::min(16u, hardware_threads()));
}

inline llvm::Expected<std::vector<int64_t>> gpu_spmm(Context &ctx, const Plan &p, const VectorSparse &a,
                                                     const std::vector<int64_t> &b, int64_t n,
                                                     const EpilogueArgs *epi = nullptr) {
  auto layout = build_srbcrs(a, p);
  if (!layout) return layout.takeError();
  auto pa = pack_lhs(*layout, p);
  if (!pa) return pa.takeError();
  auto pb = pack_rhs(b, a.cols, n, p);
  if (!pb) return pb.takeError();
  auto da = upload(*pa, *layout);
  if (!da) return da.takeError();
  auto db = upload(*pb);
  if (!db) return db.takeError();
  auto de = upload(epi ? *epi : EpilogueArgs{});
  if (!de) return de.takeError();
  auto c = DeviceBuffer::allocate(std::max<size_t>(1, a.rows * n * stored_bytes(p.spec.out)));
  if (!c) return c.takeError();
  if (auto e = c->memset(0xAB)) return e;  // poison: every element must be written
  auto k = Kernel::get(ctx, p);
  if (!k) return k.takeError();
  if (auto e = (*k)->launch(*da, *db, c->ptr(), nullptr, &*de)) return e;
  if (auto e = ctx.synchronize()) return e;
  return download_stored(*c, a.rows * n, p.spec.out);
}

// SDDMM with the mask laid out at `stride`; the output in `layout` order.
inline llvm::Expected<std::vector<int64_t>> gpu_sddmm(Context &ctx, const Plan &p, const VectorSparse &mask,
                                                      const SrBcrs &m, const std::vector<int64_t> &a,
                                                      const std::vector<int64_t> &b, int64_t k, SparseLayout layout,
                                                      const EpilogueArgs *epi = nullptr) {
  auto pa = pack_sddmm_lhs(a, mask.rows, k, p);
  if (!pa) return pa.takeError();
  auto pb = pack_sddmm_rhs(b, k, mask.cols, p);
  if (!pb) return pb.takeError();
  auto dm = upload_mask(m, mask);
  if (!dm) return dm.takeError();
  auto da = upload(*pa);
  if (!da) return da.takeError();
  auto db = upload(*pb);
  if (!db) return db.takeError();
  auto de = upload(epi ? *epi : EpilogueArgs{});
  if (!de) return de.takeError();
  int64_t count = (layout == SparseLayout::Bcrs ? mask.num_vectors() : m.num_slots()) * mask.v;
  auto out = DeviceBuffer::allocate(std::max<int64_t>(1, count) * stored_bytes(p.spec.out));
  if (!out) return out.takeError();
  if (auto e = out->memset(0xAB)) return e;
  auto kern = Kernel::get(ctx, p);
  if (!kern) return kern.takeError();
  if (auto e = (*kern)->launch_sddmm(*dm, *da, *db, out->ptr(), layout, nullptr, &*de)) return e;
  if (auto e = ctx.synchronize()) return e;
  return download_stored(*out, count, p.spec.out);
}

}  // namespace magicube::testing
