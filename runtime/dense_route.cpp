#include "runtime/dense_route.h"

#include <algorithm>
#include <cstring>

#include <fmt/format.h>

#include "compiler/dense_chunks.h"
#include "compiler/planner.h"
#include "runtime/vector_sparse.h"

namespace magicube {

const char *route_name(Route r) { return r == Route::Dense ? "dense" : "sparse"; }

std::string dense_route_refusal(const OpSpec &spec) {
  if (spec.op != OpKind::SpMM) return "the dense route runs SpMM only";
  return "";
}

std::string dense_reduction_refusal(const OpSpec &spec, int64_t max_block_length, int64_t k) {
  if (spec.out == OutType::Int32) return "";
  const DenseChunks ch = dense_chunks(spec);
  const int64_t bound = ch.max_exact_k();
  // A's offsets make its absent entries count too: each GEMM sums all K of a row.
  const int64_t terms = ch.lhs_offsets() ? k : max_block_length;
  if (terms <= bound) return "";
  if (ch.lhs_offsets())
    return fmt::format("K={} is longer than the dense route's int32 GEMMs stay exact for ({} for {} x {} in chunks {}, "
                       "where A's offsets make every entry of a row count)",
                       k, bound, spec.lhs.str(), spec.rhs.str(), ch.str());
  return fmt::format("a row-block of {} vectors is longer than the dense route's int32 GEMMs stay exact for ({} for {} x {}{})",
                     max_block_length, bound, spec.lhs.str(), spec.rhs.str(),
                     ch.pairs() > 1 ? ", in chunks " + ch.str() : std::string());
}

int64_t dense_align(int64_t bytes) { return (bytes + 255) / 256 * 256; }

int64_t dense_plane_stride(int64_t rows, int64_t cols, int elem_bytes) { return dense_align(rows * cols * elem_bytes); }

int64_t dense_planes_bytes(int planes, int64_t rows, int64_t cols, int elem_bytes) {
  if (planes <= 0) return 0;
  return (planes - 1) * dense_plane_stride(rows, cols, elem_bytes) + rows * cols * elem_bytes;
}

int64_t dense_row_sums_offset(const OpSpec &spec, int64_t m, int64_t k) {
  return dense_align(dense_planes_bytes(int(dense_chunks(spec).lhs.size()), m, k, 1));
}

int64_t dense_lhs_bytes(int lhs_planes, bool row_sums, int64_t m, int64_t k) {
  const int64_t planes = dense_planes_bytes(lhs_planes, m, k, 1);
  return row_sums ? dense_align(planes) + lhs_planes * m * 4 : planes;
}

int64_t dense_lhs_bytes(const OpSpec &spec, int64_t m, int64_t k) {
  const DenseChunks ch = dense_chunks(spec);
  return dense_lhs_bytes(int(ch.lhs.size()), ch.rhs_offsets(), m, k);
}

std::vector<int8_t> dense_lhs_int8(const VectorSparse &a, const OpSpec &spec) {
  const DenseChunks ch = dense_chunks(spec);
  const int64_t stride = dense_plane_stride(a.rows, a.cols, 1);
  std::vector<int8_t> d(size_t(dense_lhs_bytes(spec, a.rows, a.cols)), 0);
  // Every entry first as a zero's chunks (-offset where A's chunk has one), then the vectors.
  for (size_t j = 0; j < ch.lhs.size(); ++j)
    std::fill_n(d.begin() + int64_t(j) * stride, a.rows * a.cols, ch.lhs[j].of(0));
  for (int64_t b = 0; b < a.num_blocks(); ++b)
    for (int64_t i = a.block_ptr[size_t(b)]; i < a.block_ptr[size_t(b + 1)]; ++i)
      for (int r = 0; r < a.v && b * a.v + r < a.rows; ++r) {
        const int64_t x = a.values[size_t(i * a.v + r)], at = (b * a.v + r) * a.cols + a.col[size_t(i)];
        for (size_t j = 0; j < ch.lhs.size(); ++j) d[size_t(int64_t(j) * stride + at)] = ch.lhs[j].of(x);
      }
  if (ch.rhs_offsets()) {  // each chunk plane's row sums, int32 (little-endian), after the planes
    const int64_t at = dense_row_sums_offset(spec, a.rows, a.cols);
    for (size_t j = 0; j < ch.lhs.size(); ++j)
      for (int64_t r = 0; r < a.rows; ++r) {
        int32_t sum = 0;
        for (int64_t c = 0; c < a.cols; ++c) sum += d[size_t(int64_t(j) * stride + r * a.cols + c)];
        std::memcpy(d.data() + at + (int64_t(j) * a.rows + r) * 4, &sum, 4);
      }
  }
  return d;
}

std::vector<int8_t> dense_rhs_t_int8(const std::vector<int64_t> &b, int64_t k, int64_t n, const ElemType &rhs) {
  const std::vector<DenseChunk> chunks = split_dense_chunks(rhs);
  const int64_t stride = dense_plane_stride(n, k, 1);
  std::vector<int8_t> t(size_t(dense_planes_bytes(int(chunks.size()), n, k, 1)), 0);
  for (int64_t r = 0; r < k; ++r)
    for (int64_t c = 0; c < n; ++c)
      for (size_t j = 0; j < chunks.size(); ++j)
        t[size_t(int64_t(j) * stride + c * k + r)] = chunks[j].of(b[size_t(r * n + c)]);
  return t;
}

}  // namespace magicube
