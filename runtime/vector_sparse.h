// A sparse matrix of V x 1 nonzero column vectors, with values: the logical input that the
// SR-BCRS builder lays out for a plan. Builders from dense, CSR and COO inputs live here;
// the DLMC .smtx reader is in smtx.h.
#pragma once

#include <cstdint>
#include <vector>

#include "llvm/Support/Error.h"

namespace magicube {

struct VectorSparse {
  int64_t rows = 0, cols = 0;         // logical M x K
  int v = 1;                           // vector length
  std::vector<int64_t> block_ptr;     // row-block b owns vectors [block_ptr[b], block_ptr[b+1])
  std::vector<int32_t> col;           // column of each vector, strictly increasing within a block
  std::vector<int64_t> values;        // V values per vector: row r of vector i at values[i * v + r]
                                      // (rows past `rows` in the last block are 0)
  int64_t num_blocks() const { return int64_t(block_ptr.size()) - 1; }
  int64_t num_vectors() const { return int64_t(col.size()); }
  int64_t max_block_length() const;   // most vectors in one row-block: the reduction length
};

// From a dense row-major rows x cols matrix: a vector exists where any of its V rows is
// nonzero.
VectorSparse vector_sparse_from_dense(const std::vector<int64_t> &dense, int64_t rows, int64_t cols, int v);

// From scalar CSR: the nonzero pattern is grouped into V x 1 vectors as above. Refused with
// a message naming the row or index when the CSR is malformed.
llvm::Expected<VectorSparse> vector_sparse_from_csr(int64_t rows, int64_t cols, const std::vector<int64_t> &row_ptr,
                                                    const std::vector<int64_t> &col_idx,
                                                    const std::vector<int64_t> &values, int v);

// From COO triplets (any order; duplicates refused).
llvm::Expected<VectorSparse> vector_sparse_from_coo(int64_t rows, int64_t cols, const std::vector<int64_t> &row,
                                                    const std::vector<int64_t> &col, const std::vector<int64_t> &values,
                                                    int v);

// Checks that `a` is well formed: 0 <= rows, 0 <= cols <= 2^31-1, V >= 1, block_ptr with
// ceil(rows / V) + 1 non-decreasing entries from 0 to the vector count, every column in
// [0, cols) and strictly increasing within its row-block (no repeats), and, with
// `need_values`, V values per vector. The error starts with `name` ("lhs A: ...") and names
// the row-block, the vector and its column.
llvm::Error check_vector_sparse(const VectorSparse &a, const char *name, bool need_values = true);

// Dense row-major copy (for references and tests).
std::vector<int64_t> to_dense(const VectorSparse &a);

}  // namespace magicube
