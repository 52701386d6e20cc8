#include "runtime/dense_epilogue.h"

#include <algorithm>
#include <string>

#include "compiler/dense_chunks.h"
#include "compiler/dense_epilogue.h"
#include "runtime/cuda_driver.h"
#include "runtime/dense_route.h"
#include "runtime/helper_kernel.h"
#include "runtime/kernel.h"

namespace magicube {

namespace {
llvm::Error err(const std::string &msg) { return llvm::createStringError(llvm::inconvertibleErrorCode(), msg); }

constexpr int64_t kMaxGridY = 65535;

llvm::Expected<CUfunction> epilogue_function(const Context &ctx, const OpSpec &spec, bool transposed) {
  const KernelSource k = dense_epilogue_source(spec, transposed);
  return helper_function(ctx, k.name, k.source, dense_epilogue_options(spec));
}
}  // namespace

bool dense_needs_scratch(const OpSpec &spec) { return spec.out != OutType::Int32 || dense_chunks(spec).pairs() > 1; }

size_t dense_scratch_bytes(const OpSpec &spec, int64_t m, int64_t n) {
  if (!dense_needs_scratch(spec)) return 0;
  return (size_t(dense_planes_bytes(dense_chunks(spec).pairs(), m, n, 4)) + 255) / 256 * 256;
}

llvm::Error dense_epilogue_on_device(const Context &ctx, const OpSpec &spec, CUdeviceptr acc, CUdeviceptr out,
                                     int64_t rows, int64_t cols, bool transposed, const EpilogueValues &v,
                                     CUstream stream) {
  if (!dense_needs_scratch(spec))
    return err("dense epilogue: an int32 output of one GEMM is the GEMM's own (" + to_string(spec) + ")");
  if (rows == 0 || cols == 0) return llvm::Error::success();
  auto fn = epilogue_function(ctx, spec, transposed);
  if (!fn) return fn.takeError();
  if (acc % 16 != 0) return err("dense epilogue: the int32 sums are not 16-byte aligned");
  const int64_t per_block = 4 * kDenseEpilogueThreads;
  const int64_t gx = (cols + per_block - 1) / per_block, gy = std::min(rows, kMaxGridY);
  if (gx > INT32_MAX) return err("dense epilogue: " + std::to_string(cols) + " columns exceed the grid");
  long long r = rows, c = cols, plane = dense_plane_stride(rows, cols, 4) / 4;
  EpilogueValues a = v;  // the launch's own copy of the arguments
  void *args[9] = {&acc, &out, &r, &c, &plane, &a.alpha, &a.row_scale, &a.col_scale, &a.bias};
  return launch(*fn, Dim3{unsigned(gx), unsigned(gy), 1}, Dim3{unsigned(kDenseEpilogueThreads), 1, 1}, 0, stream, args);
}

llvm::Error preload_dense_epilogue(const Context &ctx, const OpSpec &spec) {
  if (!dense_needs_scratch(spec)) return llvm::Error::success();
  for (bool t : {false, true}) {
    auto fn = epilogue_function(ctx, spec, t);
    if (!fn) return fn.takeError();
  }
  return llvm::Error::success();
}

}  // namespace magicube
