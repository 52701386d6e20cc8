// Checks of a packed operand that someone else wrote: a blob read back from a file, or any
// bytes a caller hands over as one. The packers (packing.h, Sddmm::pack_mask, dense_route.h)
// define what a kernel may read; these check that the bytes hold such a layout before a
// kernel reads them:
//   - every count and size agrees with the plan and the shape (row-blocks = ceil(M / V),
//     planes and their bytes, the stride), within the packers' bounds (slots x V in 32 bits);
//   - row pointers start where the previous row-block's strides end, in order;
//   - every column index lies within A's K (a mask's N; a K panel's rows), or is a pad;
//   - a decode plan's schedule is the one its strides imply (stride_meta, stride_next,
//     panel_first, and bit 15 of every 16-bit index);
//   - every value decodes from its chunks as the packer stores them and lies within the lhs
//     type; pads and the rows past M in the last row-block hold zeros;
//   - no row-block holds more nonzero vectors than the header's max_block_length, which the
//     plan's exactness bound admits (check_reduction_length; the dense route's own bound).
// A layout that passes is one the kernels read within its arrays and within their exactness
// bounds. Errors start with "packed: " and name the array, the index and what was wanted. Where
// the arrays sit in a blob, and their alignment, are the blob's checks (capi/packed_blob.h).
#pragma once

#include <cstdint>
#include <vector>

#include "compiler/plan.h"
#include "llvm/Support/Error.h"

namespace magicube {

struct ByteSpan {
  const uint8_t *data = nullptr;
  int64_t size = 0;
};

// The counts a packed header gives (magicube_packed_header), with its arrays.
struct PackedView {
  int64_t rows = 0, cols = 0, v = 0, stride = 0;  // M x K (a mask: M x N)
  int64_t num_blocks = 0, num_slots = 0, num_vectors = 0, max_block_length = 0;
  ByteSpan row_ptr, col_idx, bcrs_ptr;  // bcrs_ptr: masks only
  std::vector<ByteSpan> planes;         // A's chunk planes (SpMM's sparse route)
  ByteSpan dense;                       // the dense route's copy of A
};

// SpMM's A on the sparse route, as pack_lhs lays it out for `plan` (decode plans included).
llvm::Error check_packed_lhs(const PackedView &a, const Plan &plan);
// SDDMM's mask, as Sddmm::pack_mask lays it out.
llvm::Error check_packed_mask(const PackedView &m, const Plan &plan);
// SpMM's A on the dense route: dense_lhs_int8's planes and row sums.
llvm::Error check_packed_dense_lhs(const PackedView &a, const Plan &plan);

}  // namespace magicube
