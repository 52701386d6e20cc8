// Random inputs for tests: awkward shapes, empty row-blocks, values at their range's extremes
// (on purpose unlike runtime/synthetic.h, the uniform inputs of run, tune and bench).
#pragma once

#include <algorithm>
#include <cstdint>
#include <random>
#include <vector>

#include "compiler/ir.h"
#include "runtime/vector_sparse.h"

namespace magicube::testing {

// Draws values of `t`: a third at the minimum, a third at the maximum, the rest uniform.
inline int64_t draw(std::mt19937_64 &rng, const ElemType &t) {
  switch (rng() % 3) {
    case 0: return t.min_value();
    case 1: return t.max_value();
    default: return t.min_value() + int64_t(rng() % uint64_t(t.max_value() - t.min_value() + 1));
  }
}

inline std::vector<int64_t> random_dense(std::mt19937_64 &rng, int64_t n, const ElemType &t) {
  std::vector<int64_t> m(n);
  for (auto &x : m) x = magicube::testing::draw(rng, t);
  return m;
}

// A rows x cols vector-sparse matrix: each row-block gets 0..max_per_block vectors at
// distinct random columns (block 1 is always empty when there are at least 3 blocks).
inline VectorSparse random_vector_sparse(std::mt19937_64 &rng, int64_t rows, int64_t cols, int v,
                                         int64_t max_per_block, const ElemType &t) {
  VectorSparse a;
  a.rows = rows;
  a.cols = cols;
  a.v = v;
  int64_t nb = (rows + v - 1) / v;
  a.block_ptr.assign(1, 0);
  std::vector<int32_t> all(cols);
  for (int64_t c = 0; c < cols; ++c) all[c] = int32_t(c);
  for (int64_t b = 0; b < nb; ++b) {
    int64_t n = (b == 1 && nb >= 3) ? 0 : int64_t(rng() % uint64_t(std::min(max_per_block, cols) + 1));
    if (b == 0) n = std::min(max_per_block, cols);  // one full block
    std::shuffle(all.begin(), all.end(), rng);
    std::vector<int32_t> pick(all.begin(), all.begin() + n);
    std::sort(pick.begin(), pick.end());
    for (int32_t c : pick) {
      a.col.push_back(c);
      for (int r = 0; r < v; ++r) a.values.push_back(b * v + r < rows ? magicube::testing::draw(rng, t) : 0);
    }
    a.block_ptr.push_back(int64_t(a.col.size()));
  }
  return a;
}

}  // namespace magicube::testing
