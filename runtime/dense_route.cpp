#include "runtime/dense_route.h"

#include <algorithm>

#include <fmt/format.h>

#include "compiler/planner.h"
#include "runtime/vector_sparse.h"

namespace magicube {

const char *route_name(Route r) { return r == Route::Dense ? "dense" : "sparse"; }

namespace {
// Whether every value of `t` is an int8.
bool fits_int8(const ElemType &t) { return t.is_signed ? t.bits <= 8 : t.bits <= 7; }
}  // namespace

std::string dense_route_refusal(const OpSpec &spec) {
  if (spec.op != OpKind::SpMM) return "the dense route runs SpMM only";
  for (const auto &[t, what] : {std::pair{spec.lhs, "lhs"}, {spec.rhs, "rhs"}})
    if (!fits_int8(t))
      return fmt::format("{} {} does not fit int8 (the dense route takes signed up to 8 bits, unsigned up to 7)", what,
                         t.str());
  return "";
}

std::string dense_reduction_refusal(const OpSpec &spec, int64_t max_block_length) {
  if (spec.out == OutType::Int32) return "";
  const int64_t bound = max_exact_k(spec.lhs, spec.rhs);
  if (max_block_length <= bound) return "";
  return fmt::format("a row-block of {} vectors is longer than the dense route's int32 GEMM stays exact for ({} for {} x {})",
                     max_block_length, bound, spec.lhs.str(), spec.rhs.str());
}

std::vector<int8_t> dense_lhs_int8(const VectorSparse &a) {
  std::vector<int8_t> d(size_t(a.rows * a.cols), 0);
  for (int64_t b = 0; b < a.num_blocks(); ++b)
    for (int64_t i = a.block_ptr[size_t(b)]; i < a.block_ptr[size_t(b + 1)]; ++i)
      for (int r = 0; r < a.v && b * a.v + r < a.rows; ++r)
        d[size_t((b * a.v + r) * a.cols + a.col[size_t(i)])] = int8_t(a.values[size_t(i * a.v + r)]);
  return d;
}

std::vector<int8_t> dense_rhs_t_int8(const std::vector<int64_t> &b, int64_t k, int64_t n) {
  std::vector<int8_t> t(size_t(k * n));
  for (int64_t r = 0; r < k; ++r)
    for (int64_t c = 0; c < n; ++c) t[size_t(c * k + r)] = int8_t(b[size_t(r * n + c)]);
  return t;
}

}  // namespace magicube
