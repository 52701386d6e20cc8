// The dense route's epilogue kernel (runtime/dense_route.h): the dense GEMM writes the exact
// int32 result (cuBLASLt's int8 kernels write nothing else), one plane per chunk pair where
// the operands are split into int8 chunks (compiler/dense_chunks.h), and this kernel turns it
// into the op's output: the planes summed shifted in 64 bits, then int32 (wrapped, as the GEMM
// writes it), int64, or f32/f16/bf16 through the same dequantization and rounding as the sparse
// kernels' epilogues (templates/epilogue_math.cuh: scales, bias, round to nearest even in
// double, no FMA contraction). One flat elementwise pass over the stored result; `transposed`:
// the GEMMs stored C^T (N x M, a column-major C), so stored element (p, q) is C's (q, p) for
// the scales and bias.
#pragma once

#include <string>
#include <vector>

#include "compiler/codegen.h"
#include "compiler/ir.h"

namespace magicube {

inline constexpr int kDenseEpilogueThreads = 256;  // threads per block, four stored columns each

// The kernel for `spec` (an SpMM with an output other than int32, or with more than one chunk
// pair), e.g. magicube_dense_epilogue_bf16_rowcol_rowbias_ct, magicube_dense_epilogue_i32_p2.
// Kernel parameters: (const int *acc, <out> *out, long long rows, long long cols,
// long long plane, float alpha, const float *row_scale, const float *col_scale,
// const float *bias), rows x cols as stored, chunk pair p's plane at acc + p * plane; grid
// (x: column tiles of 4 * kDenseEpilogueThreads, y: rows, strided past 65535), block
// kDenseEpilogueThreads; the planes 16-byte aligned (the workspace's scratch is).
KernelSource dense_epilogue_source(const OpSpec &spec, bool transposed);
// NVRTC options it needs (float outputs: --fmad=false, as nvrtc_options gives the sparse kernels).
std::vector<std::string> dense_epilogue_options(const OpSpec &spec);

}  // namespace magicube
