// The dense route's epilogue on the device: where the op's output is not int32, or its
// operands are split into int8 chunks, the dense GEMMs write their exact int32 results into
// scratch planes of the caller's workspace (one per chunk pair, dense_plane_stride apart),
// and one elementwise kernel (compiler/dense_epilogue.h) writes the output from them: the
// planes summed shifted, then int32, int64, or f32 / f16 / bf16 dequantized and rounded
// exactly as the sparse kernels do.
#pragma once

#include <cuda.h>

#include <cstddef>
#include <cstdint>

#include "compiler/ir.h"
#include "llvm/Support/Error.h"
#include "runtime/kernel.h"

namespace magicube {

class Context;

// Whether the dense route needs the int32 scratch for `spec` (every output but int32, and
// every output of operands in more than one int8 chunk).
bool dense_needs_scratch(const OpSpec &spec);
// Bytes of that scratch for an M x N result, its planes stacked (runtime/dense_route.h),
// rounded up to 256 (0 when not needed); the product's overflow is the caller's to have
// checked.
size_t dense_scratch_bytes(const OpSpec &spec, int64_t m, int64_t n);

// Queues out = epilogue(acc) on `stream`: acc (16-byte aligned, its planes
// dense_plane_stride(rows, cols, 4) bytes apart) and out hold rows x cols elements, row-major; transposed: they are C^T (rows = N, cols = M) for the scales and bias.
// `v`: the scales and bias as epilogue_values (runtime/kernel.h) checked them for C's M x N. No
// allocation, no synchronization (the kernel is compiled and loaded on first use).
llvm::Error dense_epilogue_on_device(const Context &ctx, const OpSpec &spec, CUdeviceptr acc, CUdeviceptr out,
                                     int64_t rows, int64_t cols, bool transposed, const EpilogueValues &v,
                                     CUstream stream);
// Compiles and loads the kernel for `spec` now (the C ABI's load, before graph capture).
llvm::Error preload_dense_epilogue(const Context &ctx, const OpSpec &spec);

}  // namespace magicube
