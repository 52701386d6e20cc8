// Random inputs of given types and a synthetic vector sparsity, the one generator shared by
// `magicube run`, `magicube tune`, magicube-bench and the developer probes. A given seed
// (the state of `rng`) always gives the same matrix.
#pragma once

#include <cstdint>
#include <functional>
#include <random>
#include <vector>

#include "compiler/ir.h"
#include "runtime/vector_sparse.h"

namespace magicube {

// Uniform in t's range.
int64_t draw(std::mt19937_64 &rng, const ElemType &t);
// Uniform in t's range without 0 (every type has a nonzero value).
int64_t draw_nonzero(std::mt19937_64 &rng, const ElemType &t);

// `count` values uniform in t's range, not all zero.
std::vector<int64_t> random_dense(std::mt19937_64 &rng, int64_t count, const ElemType &t);

// A synthetic rows x cols vector-sparse matrix of uniform vector sparsity: every row-block
// holds round((1 - sparsity) x cols) vectors at distinct uniformly random columns (a partial
// Fisher-Yates shuffle per row-block, columns sorted), as the Magicube paper's measurements.
// With `value`, each vector's rows are value() (called in order, block by block, right after
// the block's columns are drawn, so it may share `rng`), 0 past the last row; without it,
// `values` is left empty (a pattern: see fill_nonzero).
VectorSparse synthetic_sparse(std::mt19937_64 &rng, int64_t rows, int64_t cols, double sparsity, int v,
                              const std::function<int64_t()> &value = nullptr);

// The same with nonzero values of `t` drawn from `rng`.
VectorSparse synthetic_sparse(std::mt19937_64 &rng, int64_t rows, int64_t cols, double sparsity, int v,
                              const ElemType &t);

// Sets `values` of a pattern: nonzero values of `t` in every vector row inside the matrix,
// 0 past its last row.
void fill_nonzero(VectorSparse &a, const ElemType &t, std::mt19937_64 &rng);

}  // namespace magicube
