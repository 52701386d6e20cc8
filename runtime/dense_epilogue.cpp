#include "runtime/dense_epilogue.h"

#include <algorithm>
#include <string>

#include "compiler/dense_chunks.h"
#include "compiler/dense_epilogue.h"
#include "runtime/cuda_driver.h"
#include "runtime/dense_gemm.h"
#include "runtime/dense_route.h"
#include "runtime/helper_kernel.h"
#include "runtime/kernel.h"

namespace magicube {

namespace {
llvm::Error err(const std::string &msg) { return llvm::createStringError(llvm::inconvertibleErrorCode(), msg); }

constexpr int64_t kMaxGridY = 65535;

// Looked up by name at each launch: the source is generated only to load the kernel.
llvm::Expected<CUfunction> epilogue_function(const Context &ctx, const OpSpec &spec, bool transposed) {
  return helper_function(ctx, dense_epilogue_name(spec, transposed),
                         [&] { return dense_epilogue_source(spec, transposed).source; }, dense_epilogue_options(spec));
}

// Where B's column sums start in the scratch: after the pair planes of an M x N result.
int64_t col_sums_offset(const DenseChunks &ch, int64_t m, int64_t n) {
  return dense_align(dense_planes_bytes(ch.pairs(), m, n, 4));
}

llvm::Expected<CUfunction> row_sums_function(const Context &ctx) {
  return helper_function(ctx, kDenseRowSumsKernel, [] { return dense_row_sums_source().source; });
}

// sums[p * rows + r] = sum of int8 row r (k bytes) of plane p, `planes` planes of rows x k.
llvm::Error row_sums(const Context &ctx, CUdeviceptr planes_ptr, int planes, int64_t rows, int64_t k, CUdeviceptr sums,
                     CUstream stream) {
  auto fn = row_sums_function(ctx);
  if (!fn) return fn.takeError();
  const int64_t per_block = kDenseRowSumsThreads / 32, gx = (rows + per_block - 1) / per_block;
  if (gx > INT32_MAX) return err("dense route: " + std::to_string(rows) + " rows of B's column sums exceed the grid");
  long long stride = dense_plane_stride(rows, k, 1), r = rows, kk = k;
  void *args[5] = {&planes_ptr, &stride, &r, &kk, &sums};
  return launch(*fn, Dim3{unsigned(gx), unsigned(planes), 1}, Dim3{unsigned(kDenseRowSumsThreads), 1, 1}, 0, stream, args);
}

// out = epilogue(planes at acc) for the stored rows x cols; ra / cb: A's row sums, B's column
// sums (0 where not needed).
llvm::Error epilogue(const Context &ctx, const OpSpec &spec, CUdeviceptr acc, CUdeviceptr out, int64_t rows,
                     int64_t cols, bool transposed, int64_t k, CUdeviceptr ra, CUdeviceptr cb, const EpilogueValues &v,
                     CUstream stream) {
  auto fn = epilogue_function(ctx, spec, transposed);
  if (!fn) return fn.takeError();
  if (acc % 16 != 0) return err("dense epilogue: the int32 sums are not 16-byte aligned");
  const int64_t per_block = 4 * kDenseEpilogueThreads;
  const int64_t gx = (cols + per_block - 1) / per_block, gy = std::min(rows, kMaxGridY);
  if (gx > INT32_MAX) return err("dense epilogue: " + std::to_string(cols) + " columns exceed the grid");
  long long r = rows, c = cols, plane = dense_plane_stride(rows, cols, 4) / 4, kk = k;
  EpilogueValues a = v;  // the launch's own copy of the arguments
  void *args[12] = {&acc, &out, &r, &c, &plane, &kk, &ra, &cb, &a.alpha, &a.row_scale, &a.col_scale, &a.bias};
  return launch(*fn, Dim3{unsigned(gx), unsigned(gy), 1}, Dim3{unsigned(kDenseEpilogueThreads), 1, 1}, 0, stream, args);
}
}  // namespace

bool dense_needs_scratch(const OpSpec &spec) { return spec.out != OutType::Int32 || dense_chunks(spec).needs_epilogue(); }

size_t dense_scratch_bytes(const OpSpec &spec, int64_t m, int64_t n) {
  if (!dense_needs_scratch(spec)) return 0;
  const DenseChunks ch = dense_chunks(spec);
  return size_t(col_sums_offset(ch, m, n) + (ch.lhs_offsets() ? dense_align(int64_t(ch.rhs.size()) * n * 4) : 0));
}

llvm::Error dense_route_on_device(const Context &ctx, const OpSpec &spec, const DenseGemm &g, CUdeviceptr a_dense,
                                  CUdeviceptr bt, CUdeviceptr c, int64_t m, int64_t k, int64_t n, bool c_transposed,
                                  CUdeviceptr lt_workspace, CUdeviceptr scratch, const EpilogueValues &v,
                                  CUstream stream) {
  if (m == 0 || n == 0) return llvm::Error::success();
  const DenseChunks ch = dense_chunks(spec);
  const bool staged = dense_needs_scratch(spec);
  const CUdeviceptr target = staged ? scratch : c;
  // B's chunk column sums (the rows of Bt's planes) after the pair planes, for A's offsets.
  const CUdeviceptr cb = ch.lhs_offsets() ? scratch + CUdeviceptr(col_sums_offset(ch, m, n)) : 0;
  if (cb)
    if (auto e = row_sums(ctx, bt, int(ch.rhs.size()), n, k, cb, stream)) return e;
  // One GEMM per chunk pair, each into its own plane.
  const int64_t a_stride = dense_plane_stride(m, k, 1), b_stride = dense_plane_stride(n, k, 1);
  const int64_t c_stride = dense_plane_stride(m, n, 4);
  for (int p = 0; p < ch.pairs(); ++p) {
    const CUdeviceptr ap = a_dense + CUdeviceptr(ch.lhs_index(p) * a_stride);
    const CUdeviceptr bp = bt + CUdeviceptr(ch.rhs_index(p) * b_stride);
    const CUdeviceptr cp = target + CUdeviceptr(p * c_stride);
    if (auto e = c_transposed ? g.run(bp, ap, cp, lt_workspace, stream) : g.run(ap, bp, cp, lt_workspace, stream))
      return e;
  }
  if (!staged) return llvm::Error::success();
  const CUdeviceptr ra = ch.rhs_offsets() ? a_dense + CUdeviceptr(dense_row_sums_offset(spec, m, k)) : 0;
  return epilogue(ctx, spec, target, c, c_transposed ? n : m, c_transposed ? m : n, c_transposed, k, ra, cb, v, stream);
}

llvm::Error preload_dense_epilogue(const Context &ctx, const OpSpec &spec) {
  if (!dense_needs_scratch(spec)) return llvm::Error::success();
  for (bool t : {false, true}) {
    auto fn = epilogue_function(ctx, spec, t);
    if (!fn) return fn.takeError();
  }
  if (dense_chunks(spec).lhs_offsets()) return row_sums_function(ctx).takeError();
  return llvm::Error::success();
}

}  // namespace magicube
