#include "compiler/dense_chunks.h"

#include <algorithm>

#include "compiler/planner.h"

namespace magicube {

ElemType DenseChunk::stored() const { return offset ? ElemType{8, true} : ElemType{chunk.bits, chunk.is_signed}; }

int8_t DenseChunk::of(int64_t x) const {
  // x >> lo_bit is arithmetic, so a signed top chunk keeps x's sign.
  int64_t u = (x >> chunk.lo_bit) & ((int64_t{1} << chunk.bits) - 1);
  if (chunk.is_signed && (u >> (chunk.bits - 1))) u -= int64_t{1} << chunk.bits;
  return int8_t(u - offset);
}

std::string DenseChunk::str() const { return chunk.str() + (offset ? "-" + std::to_string(offset) : ""); }

std::vector<DenseChunk> split_dense_chunks(const ElemType &t) {
  std::vector<DenseChunk> out;
  for (const Chunk &c : split_chunks(t, 8)) out.push_back({c, !c.is_signed && c.bits == 8 ? 128 : 0});
  return out;
}

bool DenseChunks::lhs_offsets() const {
  return std::any_of(lhs.begin(), lhs.end(), [](const DenseChunk &c) { return c.offset != 0; });
}
bool DenseChunks::rhs_offsets() const {
  return std::any_of(rhs.begin(), rhs.end(), [](const DenseChunk &c) { return c.offset != 0; });
}

int64_t DenseChunks::max_exact_k() const {
  int64_t k = INT64_MAX;
  for (int p = 0; p < pairs(); ++p) k = std::min(k, magicube::max_exact_k(lhs_of(p).stored(), rhs_of(p).stored()));
  return k;
}

std::string DenseChunks::str() const {
  std::string s;
  for (const DenseChunk &c : lhs) s += (s.empty() ? "" : " ") + c.str();
  s += " x";
  for (const DenseChunk &c : rhs) s += " " + c.str();
  s += ": " + std::to_string(pairs()) + (pairs() == 1 ? " GEMM" : " GEMMs");
  if (pairs() > 1) {
    s += " (shifts";
    for (int p = 0; p < pairs(); ++p) s += " " + std::to_string(shift(p));
    s += ")";
  }
  return s;
}

DenseChunks dense_chunks(const OpSpec &spec) { return {split_dense_chunks(spec.lhs), split_dense_chunks(spec.rhs)}; }

}  // namespace magicube
