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
// and rounding. That result is exact within the plan's bound for those outputs (max_term_k:
// an int8-fitting plan has one chunk pair, so its term is the whole product, at most
// max_exact_k of the operands). Wider operands stay sparse, and the dispatch says why.
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

// The dense route's operands, packed on the host: A densified (M x K int8, row-major, zeros
// where A has no vector) and B transposed (N x K int8, row-major). Values must fit int8 (the
// spec's types were checked by dense_route_refusal and the packers of the sparse route).
std::vector<int8_t> dense_lhs_int8(const VectorSparse &a);
std::vector<int8_t> dense_rhs_t_int8(const std::vector<int64_t> &b, int64_t k, int64_t n);


}  // namespace magicube
