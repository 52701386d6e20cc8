// The dense route's chunk algebra: how an SpMM whose operands do not fit int8 (u8, s12, u16,
// ...) still runs as cuBLASLt int8 GEMMs. A and B are split into int8 chunks
// (split_int8_chunks: A = sum_i A_i << a_i, B = sum_j B_j << b_j), one GEMM computes each
// chunk pair's exact int32 product A_i x B_j into a plane of its own, and the epilogue kernel
// sums the planes shifted by a_i + b_j into the output (compiler/dense_epilogue.h). Operands
// that fit int8 are one chunk each: one GEMM, one plane.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "compiler/ir.h"
#include "compiler/plan.h"

namespace magicube {

struct DenseChunks {
  std::vector<Chunk> lhs, rhs;  // split_int8_chunks of the spec's types

  // One GEMM per pair, pair p = i * rhs.size() + j (A's chunk i, B's chunk j).
  int pairs() const { return int(lhs.size() * rhs.size()); }
  const Chunk &lhs_of(int p) const { return lhs[size_t(p) / rhs.size()]; }
  const Chunk &rhs_of(int p) const { return rhs[size_t(p) % rhs.size()]; }
  int shift(int p) const { return lhs_of(p).lo_bit + rhs_of(p).lo_bit; }
  // The longest sum of products the pair's int32 GEMM result is exact for (max_exact_k of the
  // pair's chunk types), the least over the pairs.
  int64_t max_exact_k() const;
  // "u7@0 u1@7 x s8@0: 2 GEMMs (shifts 0 7)"
  std::string str() const;
};

DenseChunks dense_chunks(const OpSpec &spec);

}  // namespace magicube
