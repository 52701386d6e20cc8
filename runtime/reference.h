// Int64 CPU references: the ground truth every kernel and the plan interpreter must equal.
#pragma once

#include <cstdint>
#include <vector>

#include "runtime/vector_sparse.h"

namespace magicube {

// C[M x N] = A (M x K, vector-sparse) x B (K x N, row-major), in int64.
std::vector<int64_t> reference_spmm(const VectorSparse &a, const std::vector<int64_t> &b, int64_t n);

// For each vector i of `mask` and row r: out[i * V + r] = sum_k A[row, k] * B[k, col_i],
// A (M x K, row-major), B (K x N, column-major), in int64. Rows past M give 0.
std::vector<int64_t> reference_sddmm(const VectorSparse &mask, const std::vector<int64_t> &a,
                                     const std::vector<int64_t> &b, int64_t k);

}  // namespace magicube
