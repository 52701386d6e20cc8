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
inline constexpr int kDenseRowSumsThreads = 256;   // threads per block of the row sums, a warp a row
inline constexpr const char *kDenseRowSumsKernel = "magicube_dense_row_sums";

// The kernel for `spec` (an SpMM whose output is not int32, or whose operands are split into
// int8 chunks: DenseChunks::needs_epilogue), e.g. magicube_dense_epilogue_bf16_rowcol_rowbias_ct,
// magicube_dense_epilogue_i32_u8xs12. Kernel parameters: (const int *acc, <out> *out,
// long long rows, long long cols, long long plane, long long k, const int *ra, const int *cb,
// float alpha, const float *row_scale, const float *col_scale, const float *bias): rows x cols
// as stored, chunk pair p's plane at acc + p * plane, K, A's chunk row sums ra (M a chunk) and
// B's chunk column sums cb (N a chunk) where offsets need them; grid (x: column tiles of
// 4 * kDenseEpilogueThreads, y: rows, strided past 65535), block kDenseEpilogueThreads; the
// planes 16-byte aligned (the workspace's scratch is).
KernelSource dense_epilogue_source(const OpSpec &spec, bool transposed);
// Its name alone: one name a source (the types name the chunks where there are several, or
// offsets: magicube_dense_epilogue_bf16_rowcol_u8xs8_ct).
std::string dense_epilogue_name(const OpSpec &spec, bool transposed);
// The row-sum kernel magicube_dense_row_sums(const signed char *planes, long long plane,
// long long rows, long long k, int *sums): sums[p * rows + r] = the sum of int8 row r (k
// bytes, k % 4 == 0) of plane p (planes `plane` bytes apart, 4-byte aligned); grid (x: rows
// in blocks of kDenseRowSumsThreads / 32, y: planes), block kDenseRowSumsThreads. The column
// sums of B's chunks (Bt's rows) for A's offsets.
KernelSource dense_row_sums_source();
// NVRTC options it needs (float outputs: --fmad=false, as nvrtc_options gives the sparse kernels).
std::vector<std::string> dense_epilogue_options(const OpSpec &spec);

}  // namespace magicube
