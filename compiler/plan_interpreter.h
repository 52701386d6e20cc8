// The CPU plan interpreter: executes a plan as the generated kernel does at warp level:
// the SR-BCRS strides (padding, shuffled column indices), chunk split, one int32 mma tile
// per (stack group, rhs chunk) with two's-complement wrap, stacked lhs chunks in the spare
// V-side rows/columns, the epilogue's per-slot shifts and lane/register butterfly exchange
// on the C fragments, and the final sum. It is the executable specification of codegen.
#pragma once

#include <cstdint>
#include <vector>

#include "compiler/plan.h"
#include "runtime/srbcrs.h"

namespace magicube {

// C (M x N, row-major) = A x B, A in SR-BCRS laid out for `plan`, B (K x N) row-major.
// int32 outputs hold the int32 result (exact within max_exact_k); other outputs the exact
// int64 result. Values outside their declared range and a reduction length beyond the
// plan's bound are refused with an error naming them.
llvm::Expected<std::vector<int64_t>> interpret_spmm(const Plan &plan, const SrBcrs &a, const std::vector<int64_t> &b,
                                                    int64_t n);

// Out = (A x B) sampled at the mask's vectors, in the mask's SR-BCRS value layout
// (SrBcrs::value_index; padding slots 0). A (M x K) row-major, B (K x N) column-major.
llvm::Expected<std::vector<int64_t>> interpret_sddmm(const Plan &plan, const SrBcrs &mask, const std::vector<int64_t> &a,
                                                     const std::vector<int64_t> &b, int64_t k);

// The value of chunk c of x (the top chunk sign-extended when signed).
int64_t chunk_value(int64_t x, const Chunk &c);

}  // namespace magicube
