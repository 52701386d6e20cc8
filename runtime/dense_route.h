// The dense route: an SpMM the dispatch runs as dense int8 GEMMs (runtime/dense_gemm.h,
// cuBLASLt) when that is faster than the sparse kernel for the problem, so that a sparse
// weight is never slower than its dense copy. What it can compute and how its operands are
// laid out; the policy (runtime/policy.h) decides when it runs.
//
// The route computes C = A x B exactly, like the sparse kernels, for every operand type and
// output. s8 x s8 (any types that fit int8: signed up to 8 bits, unsigned up to 7) is one GEMM:
// it writes an int32 output itself (two's-complement wrap, the same max_exact_k bound); for
// int64 and the float outputs it writes the exact int32 result into scratch in the caller's
// workspace and the epilogue kernel (runtime/dense_epilogue.h) writes the output, with the
// sparse kernels' scales, bias and rounding. Other types are split into int8 chunks with
// offsets (compiler/dense_chunks.h: u8 is one chunk stored minus 128, s16 two): A and B become
// a plane per chunk, one GEMM per chunk pair writes its own scratch plane, and the epilogue
// kernel sums the planes shifted with the offsets' terms (A's row sums, stored after its
// planes; B's column sums, computed each run). Every plane's int32 sum is exact while its
// terms stay within DenseChunks::max_exact_k (dense_reduction_refusal; int32 outputs wrap mod
// 2^32 plane by plane, which their sum undoes).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "compiler/ir.h"

namespace magicube {

struct VectorSparse;

enum class Route { Sparse, Dense };
const char *route_name(Route r);  // "sparse" | "dense"

// Why the dense route cannot compute `spec` ("" when it can): an SDDMM.
std::string dense_route_refusal(const OpSpec &spec);

// The dense route's own exactness bound: each int32 GEMM sums a whole row of its chunk pair,
// so an output other than int32 is exact only while every such sum fits int32: its terms (the
// row-block's vectors, or all K where A's chunks have offsets) at most
// dense_chunks(spec).max_exact_k() (max_exact_k(lhs, rhs) for operands that fit int8); "" when
// they are within it (or the output is int32, whose two's-complement wrap the plan's bound
// covers), else the error text.
std::string dense_reduction_refusal(const OpSpec &spec, int64_t max_block_length, int64_t k);

// `bytes` rounded up to 256, the alignment cuBLASLt's algorithms assume of every operand.
int64_t dense_align(int64_t bytes);
// An operand's chunk planes, stacked in one buffer: plane j (rows x cols elements of
// elem_bytes, row-major) at j * dense_plane_stride (dense_align'ed); dense_planes_bytes: the
// planes (the last unpadded). The caller checks the products for overflow.
int64_t dense_plane_stride(int64_t rows, int64_t cols, int elem_bytes);
int64_t dense_planes_bytes(int planes, int64_t rows, int64_t cols, int elem_bytes);
// A's dense copy (M x K): its chunk planes and, where B's chunks have offsets, each plane's row
// sums (M int32 a plane, little-endian) from dense_row_sums_offset (dense_align'ed) on;
// dense_lhs_bytes: the whole buffer, for `lhs_planes` planes with or without the row sums, or
// for the spec's chunks.
int64_t dense_row_sums_offset(const OpSpec &spec, int64_t m, int64_t k);
int64_t dense_lhs_bytes(int lhs_planes, bool row_sums, int64_t m, int64_t k);
int64_t dense_lhs_bytes(const OpSpec &spec, int64_t m, int64_t k);

// The dense route's operands, packed on the host as int8 chunk planes (stacked as above): A
// densified (planes of M x K, an absent entry stored as zero's chunk, then the row sums) and B
// transposed (planes of N x K). One plane, the values themselves, where the type fits int8.
// Values must be in the type's range (checked by the callers, as for the sparse route).
std::vector<int8_t> dense_lhs_int8(const VectorSparse &a, const OpSpec &spec);
std::vector<int8_t> dense_rhs_t_int8(const std::vector<int64_t> &b, int64_t k, int64_t n, const ElemType &rhs);


}  // namespace magicube
