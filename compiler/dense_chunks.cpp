#include "compiler/dense_chunks.h"

#include <algorithm>

#include "compiler/planner.h"

namespace magicube {

int64_t DenseChunks::max_exact_k() const {
  int64_t k = INT64_MAX;
  for (int p = 0; p < pairs(); ++p) {
    const Chunk &a = lhs_of(p), &b = rhs_of(p);
    k = std::min(k, magicube::max_exact_k(ElemType{a.bits, a.is_signed}, ElemType{b.bits, b.is_signed}));
  }
  return k;
}

std::string DenseChunks::str() const {
  std::string s;
  for (const Chunk &c : lhs) s += (s.empty() ? "" : " ") + c.str();
  s += " x";
  for (const Chunk &c : rhs) s += " " + c.str();
  s += ": " + std::to_string(pairs()) + (pairs() == 1 ? " GEMM" : " GEMMs");
  if (pairs() > 1) {
    s += " (shifts";
    for (int p = 0; p < pairs(); ++p) s += " " + std::to_string(shift(p));
    s += ")";
  }
  return s;
}

DenseChunks dense_chunks(const OpSpec &spec) { return {split_int8_chunks(spec.lhs), split_int8_chunks(spec.rhs)}; }

}  // namespace magicube
