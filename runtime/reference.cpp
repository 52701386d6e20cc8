#include "runtime/reference.h"

namespace magicube {

std::vector<int64_t> reference_spmm(const VectorSparse &a, const std::vector<int64_t> &b, int64_t n) {
  std::vector<int64_t> c(a.rows * n, 0);
  for (int64_t blk = 0; blk < a.num_blocks(); ++blk)
    for (int64_t i = a.block_ptr[blk]; i < a.block_ptr[blk + 1]; ++i)
      for (int r = 0; r < a.v; ++r) {
        int64_t row = blk * a.v + r;
        if (row >= a.rows) continue;
        int64_t x = a.values[i * a.v + r];
        const int64_t *brow = &b[int64_t(a.col[i]) * n];
        int64_t *crow = &c[row * n];
        for (int64_t j = 0; j < n; ++j) crow[j] += x * brow[j];
      }
  return c;
}

std::vector<int64_t> reference_sddmm(const VectorSparse &mask, const std::vector<int64_t> &a,
                                     const std::vector<int64_t> &b, int64_t k) {
  std::vector<int64_t> out(mask.num_vectors() * mask.v, 0);
  for (int64_t blk = 0; blk < mask.num_blocks(); ++blk)
    for (int64_t i = mask.block_ptr[blk]; i < mask.block_ptr[blk + 1]; ++i)
      for (int r = 0; r < mask.v; ++r) {
        int64_t row = blk * mask.v + r;
        if (row >= mask.rows) continue;
        int64_t s = 0;
        const int64_t *arow = &a[row * k];
        const int64_t *bcol = &b[int64_t(mask.col[i]) * k];
        for (int64_t t = 0; t < k; ++t) s += arow[t] * bcol[t];
        out[i * mask.v + r] = s;
      }
  return out;
}

}  // namespace magicube
