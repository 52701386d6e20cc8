// Packing: values of any declared width become the chunk planes a plan asks for. A plane
// holds one chunk per element: 8-bit storage one byte per element, 4-bit storage two
// elements per byte (the even element in the low nibble).
#pragma once

#include <cstdint>
#include <vector>

#include "compiler/plan.h"
#include "runtime/srbcrs.h"

namespace magicube {

using Plane = std::vector<uint8_t>;

// One plane of chunk `c` over `values` (in element order).
Plane pack_plane(const std::vector<int64_t> &values, const Chunk &c);

// A's SR-BCRS as the kernel reads it: int32 row pointers and column indices, one plane per
// lhs chunk in the SR-BCRS value layout. Values outside the lhs type are refused.
// Decode plans (spmm-decode) read 16-bit column indices (index_bits 16): slot s's column is
// bits 0-14 of the uint16 at byte 2s of col_idx (a pad names row s % 8, where A's zeros meet
// any B: the bank-balanced order's choice), so the first half of its words hold them (the
// vector keeps one word a slot, so every size stays the same). Bit 15 of slot s is bit s % 32
// of its stride's schedule word (below): a warp's ballot over the stride's 32 indices gives the
// word without loading it. Their B fits shared memory only for K <= 14528 (16 bytes a row),
// below kDecodeMaxK = 32767. Their value planes store the
// 4-element groups of each row's 32 k in the order 0 4 1 5 2 6 3 7: a lane's two mma words
// side by side, one 8-byte load (4-bit: 4 bytes).
//
// A decode plan's A also gives every row-block one stride at least (an empty row-block gets a
// stride of pads: its row pointers say 0 vectors, its output is the epilogue of zero sums), and
// the second half of col_idx holds the strides' schedule, which the kernel reads instead of the
// row pointers: with T = slots / 32 strides, stride_meta[T] (stride s's row-block | 1 << 30 if
// s is its first stride | 1 << 31 if its last) then stride_next[T + 1] (the first stride at or
// after t that starts a row-block; T for t = T). A block then finds its run of row-blocks
// with two independent loads and each warp its piece by arithmetic (compiler/gen_spmm_decode.cpp).
constexpr int64_t kDecodeMaxK = 32767;  // columns a decode plan's 15-bit indices name
// Where a decode plan's value planes store each row's 4-element group g of its 32 k (0 4 1 5 2 6
// 3 7: a lane's two mma words side by side), and stride_meta's fields.
inline constexpr int kDecodeGroupAt[8] = {0, 2, 4, 6, 1, 3, 5, 7};
inline constexpr uint32_t kStrideFirst = 1u << 30, kStrideLast = 1u << 31, kStrideRowBlock = kStrideFirst - 1;

//
// A decode plan in K panels (spec.panel = rows) packs A panel by panel: the vectors of
// row-block b whose columns lie in panel q ([q x rows, (q + 1) x rows)) form row-block
// q x nb + b of the layout above, their columns relative to the panel (so any K), and
// panel_first[q x nb + b] (then T) after stride_next names each one's first stride: a
// block's pass over panel q finds its row-blocks' strides with two independent loads.
struct PackedLhs {
  std::vector<int32_t> row_ptr, col_idx;
  std::vector<Plane> planes;
  int index_bits = 32;
  int panel_rows = 0;  // a decode plan's K panel (spec.panel); 0: none
};
llvm::Expected<PackedLhs> pack_lhs(const SrBcrs &a, const Plan &plan);

// Where a decode plan's schedule lies in its col_idx buffer of `col_idx_bytes` bytes (byte
// offsets), checked against A's `num_blocks` row-blocks: refused (named) unless the buffer
// holds whole strides, at least one a row-block, and at most 2^30 row-blocks.
struct DecodeSchedule {
  int64_t strides = 0;       // T
  int64_t meta_offset = 0;   // stride_meta: T uint32
  int64_t next_offset = 0;   // stride_next: T + 1 int32
  int64_t panel_offset = 0;  // panel_first: panels x num_blocks + 1 int32 (plans in K panels)
};
llvm::Expected<DecodeSchedule> decode_schedule(size_t col_idx_bytes, int64_t num_blocks, int64_t panels = 1);

// B (K x N, row-major) as one plane per rhs chunk, K x ldb with ldb = N rounded up to
// kLdbAlign (zero padded). For a resident-B plan, ceil(N / BSn) slices instead, each K rows
// of BSn columns (ldb = BSn), the 16-byte units of row r swizzled by resident_swizzle.
// Values outside the rhs type are refused.
struct PackedRhs {
  int64_t k = 0, n = 0, ldb = 0;
  std::vector<Plane> planes;
  std::vector<int8_t> dense_t;  // the dense route's Bt (N x K int8, row-major) instead of the planes
};
llvm::Expected<PackedRhs> pack_rhs(const std::vector<int64_t> &b, int64_t k, int64_t n, const Plan &plan);

// SDDMM's dense operands, K-contiguous with pitch ld = K rounded up to kLdbAlign (zero
// padded): A (M x K row-major) with its rows padded to a multiple of V, and B (K x N
// column-major) stored as N rows of K. Values outside their types are refused.
struct PackedDense {
  int64_t rows = 0, k = 0, ld = 0;  // rows of the plane (A: M padded to V; B: N), K, pitch
  std::vector<Plane> planes;
};
llvm::Expected<PackedDense> pack_sddmm_lhs(const std::vector<int64_t> &a, int64_t m, int64_t k, const Plan &plan);
llvm::Expected<PackedDense> pack_sddmm_rhs(const std::vector<int64_t> &b, int64_t k, int64_t n, const Plan &plan);
// The SDDMM kernels read whole 64- or 128-k blocks: the pitch must be a multiple of 128
// that covers K (the packers' kLdbAlign pitch is). The error names both.
llvm::Error check_dense_pitch(int64_t k, int64_t ld);

}  // namespace magicube
