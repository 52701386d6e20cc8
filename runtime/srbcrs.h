// SR-BCRS, strided row-major block CSR, laid out as a plan asks: each row-block's vectors
// are cut into strides of `stride` vectors (the mma's k); a stride's values are stored
// row-major (row r of the block: `stride` contiguous values), so one warp loads an mma
// fragment straight from memory. The last stride of a row-block is padded with zero values
// and column index -1. Where the plan shuffles B, column indices are permuted within
// groups of 8 or 16 slots (values are not). For resident-B plans the vectors of each
// row-block are reordered for shared-memory banks (see bank_balanced).
#pragma once

#include <array>
#include <cstdint>
#include <vector>

#include "compiler/plan.h"
#include "runtime/vector_sparse.h"

namespace magicube {

struct SrBcrs {
  int64_t rows = 0, cols = 0;
  int v = 1;
  int stride = 32;
  bool shuffled = false;
  std::vector<int> shuffle;  // slot -> k-position within groups of shuffle.size()
  // Resident-B layout: within each row-block, the vectors are ordered so that every group of
  // 8 slots names columns of 8 different residues mod 8 where the block's columns allow
  // (pads anywhere in the padded range, not only at its end).
  bool bank_balanced = false;
  // Two pointers per row-block, in vector slots: row_ptr[2b] = first slot (a multiple of
  // stride), row_ptr[2b+1] = one past its last real vector. Padded end = round up to stride.
  std::vector<int64_t> row_ptr;
  std::vector<int32_t> col_idx;  // one per slot; -1 for padding
  std::vector<int64_t> values;   // V per slot, at value_index(slot, r)
  int64_t max_block_length = 0;  // most real vectors in one row-block

  int64_t num_blocks() const { return int64_t(row_ptr.size()) / 2; }
  int64_t num_slots() const { return int64_t(col_idx.size()); }
  int64_t padded_end(int64_t b) const {
    int64_t n = row_ptr[2 * b + 1] - row_ptr[2 * b];
    return row_ptr[2 * b] + (n + stride - 1) / stride * stride;
  }
  // Row-major within each stride: [stride s][row r][slot within stride].
  int64_t value_index(int64_t slot, int r) const {
    return (slot / stride) * stride * v + int64_t(r) * stride + slot % stride;
  }
};

// Lays out `a` for `plan` (stride = plan.k_stride, shuffle where plan.shuffle_b, bank-balanced
// for a resident-B plan). `a.v` must equal the plan's V.
llvm::Expected<SrBcrs> build_srbcrs(const VectorSparse &a, const Plan &plan);
// The same with explicit layout parameters (masks of SDDMM, tests).
SrBcrs build_srbcrs(const VectorSparse &a, int stride, bool shuffled = false, const std::vector<int> &shuffle = {},
                    bool bank_balanced = false);

// Checks every value against an element type; the error names the operand, the index and
// the allowed range ("lhs A[12,3] = 300 is outside u8's range [0, 255]").
llvm::Error check_range(const SrBcrs &a, const ElemType &t, const char *name);
llvm::Error check_range_dense(const std::vector<int64_t> &m, int64_t rows, int64_t cols, bool col_major,
                              const ElemType &t, const char *name);

}  // namespace magicube
