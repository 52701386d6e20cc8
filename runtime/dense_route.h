// The dense route: an SpMM the dispatch runs as a dense int8 GEMM (runtime/dense_gemm.h,
// cuBLASLt) when that is faster than the sparse kernel for the problem, so that a sparse
// weight is never slower than its dense copy. What it can compute and how its operands are
// laid out; the policy (runtime/policy.h) decides when it runs.
//
// The route computes C = A x B exactly, like the sparse kernels, when both operands fit int8
// (signed up to 8 bits, unsigned up to 7), for every output: the GEMM writes an int32 output
// itself (two's-complement wrap, the same max_exact_k bound); for int64 and the float outputs
// it writes the exact int32 result into scratch in the caller's workspace and the epilogue
// kernel (runtime/dense_epilogue.h) writes the output, with the sparse kernels' scales, bias
// and rounding. That result is exact for rows of up to max_exact_k(lhs, rhs) vectors
// (dense_reduction_refusal; the plan's own bound for these outputs, max_term_k, is at most that
// for the planner's int8-fitting plans). Wider operands stay sparse, and the dispatch says why.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "compiler/ir.h"

namespace magicube {

struct VectorSparse;

enum class Route { Sparse, Dense };
const char *route_name(Route r);  // "sparse" | "dense"

// Why the dense route cannot compute `spec` ("" when it can): the op, an operand wider than
// int8.
std::string dense_route_refusal(const OpSpec &spec);

// The dense route's own exactness bound: its int32 GEMM sums a whole row, so an output other
// than int32 is exact only while a row-block's sum fits int32, for rows of up to
// max_exact_k(lhs, rhs) vectors; "" when `max_block_length` is within it (or the output is
// int32, whose two's-complement wrap the plan's bound covers), else the error text.
std::string dense_reduction_refusal(const OpSpec &spec, int64_t max_block_length);

// The dense route's operands, packed on the host: A densified (M x K int8, row-major, zeros
// where A has no vector) and B transposed (N x K int8, row-major). Values must fit int8 (the
// spec's types were checked by dense_route_refusal and the packers of the sparse route).
std::vector<int8_t> dense_lhs_int8(const VectorSparse &a);
std::vector<int8_t> dense_rhs_t_int8(const std::vector<int64_t> &b, int64_t k, int64_t n);


}  // namespace magicube
