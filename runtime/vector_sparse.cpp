#include "runtime/vector_sparse.h"

#include <algorithm>
#include <map>

namespace magicube {

namespace {
llvm::Error err(const llvm::Twine &msg) { return llvm::createStringError(llvm::inconvertibleErrorCode(), msg); }

// Groups scalar nonzeros (sorted by row, then column) into V x 1 vectors.
VectorSparse group_vectors(int64_t rows, int64_t cols, int v,
                           const std::vector<std::tuple<int64_t, int64_t, int64_t>> &sorted) {
  VectorSparse a;
  a.rows = rows;
  a.cols = cols;
  a.v = v;
  int64_t nb = (rows + v - 1) / v;
  a.block_ptr.assign(1, 0);
  size_t i = 0;
  for (int64_t b = 0; b < nb; ++b) {
    std::map<int64_t, std::vector<int64_t>> vecs;  // column -> V values
    for (; i < sorted.size() && std::get<0>(sorted[i]) < (b + 1) * v; ++i) {
      auto [r, c, x] = sorted[i];
      auto &vec = vecs[c];
      if (vec.empty()) vec.assign(v, 0);
      vec[r - b * v] = x;
    }
    for (auto &[c, vals] : vecs) {
      a.col.push_back(int32_t(c));
      a.values.insert(a.values.end(), vals.begin(), vals.end());
    }
    a.block_ptr.push_back(int64_t(a.col.size()));
  }
  return a;
}
}  // namespace

int64_t VectorSparse::max_block_length() const {
  int64_t m = 0;
  for (int64_t b = 0; b < num_blocks(); ++b) m = std::max(m, block_ptr[b + 1] - block_ptr[b]);
  return m;
}

VectorSparse vector_sparse_from_dense(const std::vector<int64_t> &dense, int64_t rows, int64_t cols, int v) {
  std::vector<std::tuple<int64_t, int64_t, int64_t>> nz;
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c)
      if (int64_t x = dense[r * cols + c]) nz.emplace_back(r, c, x);
  // Keep explicit vectors where any row of the block is nonzero (zeros inside a vector stay).
  return group_vectors(rows, cols, v, nz);
}

llvm::Expected<VectorSparse> vector_sparse_from_csr(int64_t rows, int64_t cols, const std::vector<int64_t> &row_ptr,
                                                    const std::vector<int64_t> &col_idx,
                                                    const std::vector<int64_t> &values, int v) {
  if (rows < 0 || cols < 0 || cols > INT32_MAX) return err("csr: bad shape " + llvm::Twine(rows) + " x " + llvm::Twine(cols));
  if (int64_t(row_ptr.size()) != rows + 1)
    return err("csr: row_ptr has " + llvm::Twine(row_ptr.size()) + " entries, expected rows+1 = " + llvm::Twine(rows + 1));
  if (row_ptr[0] != 0) return err("csr: row_ptr[0] = " + llvm::Twine(row_ptr[0]) + ", expected 0");
  for (int64_t r = 0; r < rows; ++r)
    if (row_ptr[r + 1] < row_ptr[r])
      return err("csr: row_ptr decreases at row " + llvm::Twine(r) + " (" + llvm::Twine(row_ptr[r]) + " > " +
                 llvm::Twine(row_ptr[r + 1]) + ")");
  int64_t nnz = row_ptr[rows];
  if (int64_t(col_idx.size()) != nnz || int64_t(values.size()) != nnz)
    return err("csr: nnz mismatch: row_ptr[rows] = " + llvm::Twine(nnz) + ", col_idx has " +
               llvm::Twine(col_idx.size()) + ", values has " + llvm::Twine(values.size()));
  std::vector<std::tuple<int64_t, int64_t, int64_t>> nz;
  nz.reserve(nnz);
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t j = row_ptr[r]; j < row_ptr[r + 1]; ++j) {
      if (col_idx[j] < 0 || col_idx[j] >= cols)
        return err("csr: column index " + llvm::Twine(col_idx[j]) + " at position " + llvm::Twine(j) + " (row " +
                   llvm::Twine(r) + ") is out of range [0, " + llvm::Twine(cols) + ")");
      if (j > row_ptr[r] && col_idx[j] <= col_idx[j - 1])
        return err("csr: column indices of row " + llvm::Twine(r) + " are not strictly increasing at position " +
                   llvm::Twine(j));
      nz.emplace_back(r, col_idx[j], values[j]);
    }
  }
  return group_vectors(rows, cols, v, nz);
}

llvm::Expected<VectorSparse> vector_sparse_from_coo(int64_t rows, int64_t cols, const std::vector<int64_t> &row,
                                                    const std::vector<int64_t> &col, const std::vector<int64_t> &values,
                                                    int v) {
  if (row.size() != col.size() || row.size() != values.size())
    return err("coo: nnz mismatch: " + llvm::Twine(row.size()) + " rows, " + llvm::Twine(col.size()) + " columns, " +
               llvm::Twine(values.size()) + " values");
  std::vector<std::tuple<int64_t, int64_t, int64_t>> nz;
  for (size_t i = 0; i < row.size(); ++i) {
    if (row[i] < 0 || row[i] >= rows)
      return err("coo: row index " + llvm::Twine(row[i]) + " at entry " + llvm::Twine(i) + " is out of range [0, " +
                 llvm::Twine(rows) + ")");
    if (col[i] < 0 || col[i] >= cols)
      return err("coo: column index " + llvm::Twine(col[i]) + " at entry " + llvm::Twine(i) + " is out of range [0, " +
                 llvm::Twine(cols) + ")");
    nz.emplace_back(row[i], col[i], values[i]);
  }
  std::sort(nz.begin(), nz.end());
  for (size_t i = 1; i < nz.size(); ++i)
    if (std::get<0>(nz[i]) == std::get<0>(nz[i - 1]) && std::get<1>(nz[i]) == std::get<1>(nz[i - 1]))
      return err("coo: duplicate entry at (" + llvm::Twine(std::get<0>(nz[i])) + ", " + llvm::Twine(std::get<1>(nz[i])) + ")");
  return group_vectors(rows, cols, v, nz);
}

llvm::Error check_vector_sparse(const VectorSparse &a, const char *name, bool need_values) {
  const llvm::Twine in(name);
  if (a.v < 1) return err(in + ": V=" + llvm::Twine(a.v) + " is not allowed (V >= 1)");
  if (a.rows < 0 || a.cols < 0 || a.cols > INT32_MAX)
    return err(in + ": shape " + llvm::Twine(a.rows) + " x " + llvm::Twine(a.cols) +
               " is not allowed (rows >= 0, 0 <= cols <= 2^31-1)");
  const int64_t nb = a.rows / a.v + (a.rows % a.v != 0);
  if (int64_t(a.block_ptr.size()) != nb + 1 || a.block_ptr.front() != 0 || a.block_ptr.back() != a.num_vectors())
    return err(in + ": block_ptr has " + llvm::Twine(a.block_ptr.size()) + " entries, expected " + llvm::Twine(nb + 1) +
               " (rows " + llvm::Twine(a.rows) + " / V=" + llvm::Twine(a.v) + ", plus one) from 0 to the " +
               llvm::Twine(a.num_vectors()) + " vectors");
  if (need_values && uint64_t(a.values.size()) != uint64_t(a.col.size()) * uint64_t(a.v))
    return err(in + ": has " + llvm::Twine(a.values.size()) + " values, expected V=" + llvm::Twine(a.v) + " per vector (" +
               llvm::Twine(a.col.size()) + " vectors)");
  for (int64_t b = 0; b < nb; ++b) {
    if (a.block_ptr[b + 1] < a.block_ptr[b])
      return err(in + ": block_ptr decreases at row-block " + llvm::Twine(b) + " (" + llvm::Twine(a.block_ptr[b]) +
                 " > " + llvm::Twine(a.block_ptr[b + 1]) + ")");
    for (int64_t i = a.block_ptr[b]; i < a.block_ptr[b + 1]; ++i) {
      const int64_t c = a.col[i];
      if (c < 0 || c >= a.cols)
        return err(in + ": vector " + llvm::Twine(i) + " of row-block " + llvm::Twine(b) + " has column " +
                   llvm::Twine(c) + ", outside [0, " + llvm::Twine(a.cols) + ") (K = " + llvm::Twine(a.cols) + ")");
      if (i > a.block_ptr[b] && c <= a.col[i - 1])
        return err(in + ": vector " + llvm::Twine(i) + " of row-block " + llvm::Twine(b) + " has column " +
                   llvm::Twine(c) + (c == a.col[i - 1] ? ", repeated" : ", not increasing") + " after column " +
                   llvm::Twine(a.col[i - 1]) + " (columns must be strictly increasing within a row-block)");
    }
  }
  return llvm::Error::success();
}

std::vector<int64_t> to_dense(const VectorSparse &a) {
  std::vector<int64_t> d(a.rows * a.cols, 0);
  for (int64_t b = 0; b < a.num_blocks(); ++b)
    for (int64_t i = a.block_ptr[b]; i < a.block_ptr[b + 1]; ++i)
      for (int r = 0; r < a.v; ++r) {
        int64_t row = b * a.v + r;
        if (row < a.rows) d[row * a.cols + a.col[i]] = a.values[i * a.v + r];
      }
  return d;
}

}  // namespace magicube
