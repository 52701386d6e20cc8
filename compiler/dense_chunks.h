// The dense route's chunk algebra: how an SpMM whose operands do not fit int8 (u8, s12, u16,
// ...) still runs as cuBLASLt int8 GEMMs.
//
// Each operand is split at 8 bits (the planner's split_chunks(t, 8): x = sum(chunk << lo_bit))
// and each chunk is stored in an int8 as its value minus an offset: 128 for an unsigned 8-bit
// chunk ([0, 255] -> [-128, 127]), 0 for the others (signed up to 8 bits, unsigned up to 7,
// which fit as they are). One GEMM per chunk pair computes G = sum_k a' b' of the stored
// values into an int32 plane, and since a = a' + o, b = b' + p,
//
//   sum_k a b = G + p * RA[row] + o * CB[col] + o * p * K,
//
// with RA the row sums of A's stored chunk (over all K: A is dense here, its absent entries
// stored as -o) and CB the column sums of B's. The epilogue kernel (compiler/dense_epilogue.h)
// adds these terms and sums the pairs shifted by their lo bits. s8 x s8 is one chunk each
// with no offset: one GEMM, nothing to add. u8 (an activation with a zero point, a weight
// quantized without sign) is one chunk too, with its offset; s16 is two (u8@0 with an offset,
// s8@8).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "compiler/ir.h"
#include "compiler/plan.h"

namespace magicube {

struct DenseChunk {
  Chunk chunk;     // bits [chunk.lo_bit, chunk.lo_bit + chunk.bits) of each value
  int offset = 0;  // subtracted before storing: 128 for an unsigned 8-bit chunk, else 0

  ElemType stored() const;                   // the stored values' type: s8 with an offset, else the chunk's
  int8_t of(int64_t x) const;                // the stored int8 of value x's chunk
  std::string str() const;                   // "u8@0-128", "s4@8"
};

// split_chunks(t, 8) with their offsets.
std::vector<DenseChunk> split_dense_chunks(const ElemType &t);

struct DenseChunks {
  std::vector<DenseChunk> lhs, rhs;  // split_dense_chunks of the spec's types

  // One GEMM per pair, pair p = i * rhs.size() + j (A's chunk i, B's chunk j).
  int pairs() const { return int(lhs.size() * rhs.size()); }
  int lhs_index(int p) const { return p / int(rhs.size()); }
  int rhs_index(int p) const { return p % int(rhs.size()); }
  const DenseChunk &lhs_of(int p) const { return lhs[size_t(lhs_index(p))]; }
  const DenseChunk &rhs_of(int p) const { return rhs[size_t(rhs_index(p))]; }
  int shift(int p) const { return lhs_of(p).chunk.lo_bit + rhs_of(p).chunk.lo_bit; }
  // Whether A's (B's) chunks have offsets: the epilogue then needs B's column sums (A's row
  // sums), and A's offsets make every one of the K entries of A's row count in a GEMM's sum.
  bool lhs_offsets() const;
  bool rhs_offsets() const;
  // Whether the GEMMs' int32 results need the epilogue kernel for an int32 output (more than
  // one pair, or an offset's terms to add).
  bool needs_epilogue() const { return pairs() > 1 || lhs_offsets() || rhs_offsets(); }
  // The longest sum of products every pair's int32 GEMM result is exact for (max_exact_k of
  // the pairs' stored types, the least).
  int64_t max_exact_k() const;
  // "u8@0-128 x s8@0: 1 GEMM", "u8@0-128 s4@8 x s8@0: 2 GEMMs (shifts 0 8)"
  std::string str() const;
};

DenseChunks dense_chunks(const OpSpec &spec);

}  // namespace magicube
