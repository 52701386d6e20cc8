// Vector-sparse builders (dense, CSR, COO) and the SR-BCRS layout.
#include <gtest/gtest.h>

#include "runtime/reference.h"
#include "runtime/srbcrs.h"
#include "runtime/vector_sparse.h"
#include "tests/test_util.h"

using namespace magicube;

namespace {

std::string error_of(llvm::Expected<VectorSparse> r) { return r ? "" : llvm::toString(r.takeError()); }

TEST(Formats, DenseCsrAndCooAgree) {
  std::mt19937_64 rng(3);
  const int64_t rows = 11, cols = 9;
  std::vector<int64_t> dense(rows * cols, 0);
  for (auto &x : dense)
    if (rng() % 3 == 0) x = int64_t(rng() % 200) - 100;
  std::vector<int64_t> rp{0}, ci, vals, ri;
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t c = 0; c < cols; ++c)
      if (dense[r * cols + c]) ci.push_back(c), vals.push_back(dense[r * cols + c]), ri.push_back(r);
    rp.push_back(int64_t(ci.size()));
  }
  for (int v : {1, 2, 4, 8}) {
    VectorSparse d = vector_sparse_from_dense(dense, rows, cols, v);
    auto c = vector_sparse_from_csr(rows, cols, rp, ci, vals, v);
    ASSERT_TRUE(bool(c)) << llvm::toString(c.takeError());
    // COO in reverse order: the builder sorts.
    std::vector<int64_t> rr(ri.rbegin(), ri.rend()), cc(ci.rbegin(), ci.rend()), vv(vals.rbegin(), vals.rend());
    auto o = vector_sparse_from_coo(rows, cols, rr, cc, vv, v);
    ASSERT_TRUE(bool(o)) << llvm::toString(o.takeError());
    EXPECT_EQ(to_dense(d), dense);
    EXPECT_EQ(to_dense(*c), dense);
    EXPECT_EQ(to_dense(*o), dense);
    EXPECT_EQ(d.col, c->col);
    EXPECT_EQ(d.block_ptr, o->block_ptr);
    EXPECT_EQ(d.num_blocks(), (rows + v - 1) / v);
  }
}

TEST(Formats, MalformedCsrAndCooAreRefusedWithTheIndex) {
  auto has = [](const std::string &m, const char *p) {
    return m.find(p) != std::string::npos ? ::testing::AssertionSuccess() : ::testing::AssertionFailure() << m;
  };
  EXPECT_TRUE(has(error_of(vector_sparse_from_csr(2, 4, {0, 2, 1}, {0, 1}, {1, 1}, 1)), "row_ptr decreases at row 1"));
  EXPECT_TRUE(has(error_of(vector_sparse_from_csr(2, 4, {0, 1, 2}, {0, 4}, {1, 1}, 1)), "column index 4 at position 1"));
  EXPECT_TRUE(has(error_of(vector_sparse_from_csr(2, 4, {0, 1, 3}, {0, 1}, {1, 1}, 1)), "nnz mismatch"));
  EXPECT_TRUE(has(error_of(vector_sparse_from_csr(2, 4, {0, 2}, {0, 1}, {1, 1}, 1)), "rows+1 = 3"));
  EXPECT_TRUE(has(error_of(vector_sparse_from_csr(1, 4, {0, 2}, {2, 1}, {1, 1}, 1)), "not strictly increasing"));
  EXPECT_TRUE(has(error_of(vector_sparse_from_coo(2, 4, {0, 2}, {0, 1}, {1, 1}, 1)), "row index 2 at entry 1"));
  EXPECT_TRUE(has(error_of(vector_sparse_from_coo(2, 4, {0, 0}, {1, 1}, {1, 1}, 1)), "duplicate entry at (0, 1)"));
  EXPECT_TRUE(has(error_of(vector_sparse_from_coo(2, 4, {0}, {1, 1}, {1, 1}, 1)), "nnz mismatch"));
}

TEST(Formats, SrBcrsPadsEachRowBlockToTheStride) {
  std::mt19937_64 rng(4);
  ElemType t{8, true};
  VectorSparse a = magicube::testing::random_vector_sparse(rng, 29, 70, 4, 70, t);
  SrBcrs s = build_srbcrs(a, 32, false, {0, 1, 2, 3, 4, 5, 6, 7});
  ASSERT_EQ(s.num_blocks(), a.num_blocks());
  for (int64_t b = 0; b < s.num_blocks(); ++b) {
    int64_t n = a.block_ptr[b + 1] - a.block_ptr[b];
    EXPECT_EQ(s.row_ptr[2 * b] % 32, 0);
    EXPECT_EQ(s.row_ptr[2 * b + 1] - s.row_ptr[2 * b], n);
    if (b + 1 < s.num_blocks()) EXPECT_EQ(s.row_ptr[2 * b + 2], s.padded_end(b));
    for (int64_t q = s.row_ptr[2 * b]; q < s.padded_end(b); ++q) {
      int64_t i = a.block_ptr[b] + (q - s.row_ptr[2 * b]);
      bool real = q < s.row_ptr[2 * b + 1];
      EXPECT_EQ(s.col_idx[q], real ? a.col[i] : -1);
      for (int r = 0; r < 4; ++r) EXPECT_EQ(s.values[s.value_index(q, r)], real ? a.values[i * 4 + r] : 0);
    }
  }
  // Row-major strides: row r of a stride is 32 contiguous values.
  EXPECT_EQ(s.value_index(33, 2), 32 * 4 + 2 * 32 + 1);
  auto e = check_range(s, t, "lhs A");
  EXPECT_FALSE(bool(e));
  auto e2 = check_range(s, {7, false}, "lhs A");
  ASSERT_TRUE(bool(e2));
  EXPECT_NE(llvm::toString(std::move(e2)).find("is outside u7's range [0, 127]"), std::string::npos);
}

TEST(Formats, ReferenceSpmmMatchesDenseProduct) {
  std::mt19937_64 rng(5);
  ElemType t{5, true};
  VectorSparse a = magicube::testing::random_vector_sparse(rng, 10, 12, 2, 12, t);
  std::vector<int64_t> b = magicube::testing::random_dense(rng, 12 * 3, t);
  auto c = reference_spmm(a, b, 3);
  auto d = to_dense(a);
  for (int64_t i = 0; i < 10; ++i)
    for (int64_t j = 0; j < 3; ++j) {
      int64_t s = 0;
      for (int64_t k = 0; k < 12; ++k) s += d[i * 12 + k] * b[k * 3 + j];
      EXPECT_EQ(c[i * 3 + j], s);
    }
}

}  // namespace
