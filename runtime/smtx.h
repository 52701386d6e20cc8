// Reader for the Deep Learning Matrix Collection's `.smtx` sparsity patterns, and their
// dilation into V x 1 vector-sparse matrices.
//
// Format (three lines, no values):
//   rows, cols, nnz
//   rows+1 row offsets, separated by spaces
//   nnz column indices, separated by spaces (strictly increasing within a row)
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"
#include "runtime/vector_sparse.h"

namespace magicube {

// A scalar CSR nonzero pattern, validated: row_ptr has rows+1 non-decreasing entries from 0
// to nnz, col_idx has nnz entries in [0, cols), strictly increasing within each row.
struct SmtxPattern {
  int64_t rows = 0, cols = 0;
  std::vector<int64_t> row_ptr;
  std::vector<int64_t> col_idx;
  int64_t nnz() const { return int64_t(col_idx.size()); }
};

// Parses `.smtx` text; `name` (usually the path) prefixes every error message, which then
// names the line ("name:LINE:COLUMN: ...") and the offending entry.
llvm::Expected<SmtxPattern> parse_smtx(llvm::StringRef text, llvm::StringRef name);

// Reads and parses the file at `path` (a regular file or a pipe); a directory, a file
// larger than kMaxSmtxBytes (or a stream that runs past it, e.g. /dev/zero) is an error
// naming the path. DLMC's largest patterns are a few tens of MiB.
inline constexpr uint64_t kMaxSmtxBytes = uint64_t(256) << 20;
llvm::Expected<SmtxPattern> read_smtx(llvm::StringRef path);

// Turns each scalar nonzero (r, c) into a V x 1 column vector at column c of row-block r:
// the result has rows*V rows and cols columns, and row-block b is scalar row b. Values are
// drawn from `value`, vector by vector in CSR order, and within a vector top row first.
// `v` must be >= 1.
VectorSparse dilate(const SmtxPattern &pattern, int v, const std::function<int64_t()> &value);

}  // namespace magicube
