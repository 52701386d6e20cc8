// Per-row symmetric int8 quantization on the device (magicube_quantize_rows): a linear layer's
// activations X (rows = tokens, float32 / float16 / bfloat16) become the int8 operand the
// integer kernels read and the float32 scales their epilogue multiplies back. One generated
// kernel per input type, compiled through the JIT stage like the repack kernels; the CPU
// reference below defines the result bit for bit (the tests compare the two).
//
//   scale[r] = max(max_j |x[r][j]|, 1e-12) / 127                         (float32, IEEE division)
//   q[r][j]  = clamp(rint(x[r][j] / scale[r]), -127, 127)               (float32, IEEE division,
//                                                                          rint: ties to even)
// x is widened exactly to float32 first. A row holding a NaN gets a NaN scale (0x7fffffff);
// an element whose quotient is NaN (any element of such a row, or an infinity when the row's
// scale is infinite) gets q = 0.
#pragma once

#include <cuda.h>

#include <cstdint>
#include <string>

#include "llvm/Support/Error.h"

namespace magicube {
class Context;
}

namespace magicube::capi {

enum class FloatType { F32, F16, BF16 };
int float_type_bytes(FloatType t);

// The CPU reference for float32 values (float16 / bfloat16 inputs widened by the caller).
void quantize_rows_cpu(const float *x, int64_t rows, int64_t cols, int8_t *q, float *scale);

// The generated CUDA source of the kernel for one input type, named `name`: element by element,
// or (units) over 16-byte units of x (4 float32 / 8 half elements a load, their int8 results one
// 4- / 8-byte store), which quantize_rows_on_device takes where x is 16-byte aligned, cols a
// multiple of the unit and q aligned to the unit's results; staged, the row (up to 48 KiB) is kept
// in dynamic shared memory between the kernel's two passes, so x is read once. All compute every
// element alike.
std::string quantize_rows_source(FloatType t, const std::string &name);
std::string quantize_rows_units_source(FloatType t, const std::string &name, bool staged);

// Queues the quantization of x (rows x cols row-major, device) into q (rows x cols int8,
// row-major) and scale (rows float32) on `stream`. rows, cols >= 0 (nothing to do at 0).
llvm::Error quantize_rows_on_device(const Context &ctx, FloatType t, CUdeviceptr x, int64_t rows, int64_t cols,
                                    CUdeviceptr q, CUdeviceptr scale, CUstream stream);

}  // namespace magicube::capi
