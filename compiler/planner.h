// The planner: lowers an OpSpec for its arch into emulation plans, ranked by a cost model.
#pragma once

#include <vector>

#include "compiler/plan.h"

namespace magicube {

// Chunks of an element type at native width w: x = sum(chunk << lo_bit).
std::vector<Chunk> split_chunks(const ElemType &t, int w);

// Largest K for which sum over K of a*b (a in lhs's range, b in rhs's) fits int32; 0 when
// even K = 1 can overflow.
int64_t max_exact_k(const ElemType &lhs, const ElemType &rhs);

// Every sensible plan for the spec, best (lowest cost) first. Refused with an error naming
// the problem when the spec is invalid or when an int32 output cannot be exact at all.
llvm::Expected<std::vector<Plan>> plan_candidates(const OpSpec &spec);

// The best candidate.
llvm::Expected<Plan> plan(const OpSpec &spec);

// Run-time check: an int32 output of reduction length k must stay within max_exact_k (and
// an int64 output within max_term_k). The error names both numbers.
llvm::Error check_reduction_length(const Plan &plan, int64_t k);

}  // namespace magicube
