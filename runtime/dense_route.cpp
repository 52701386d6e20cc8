#include "runtime/dense_route.h"

#include <algorithm>

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

std::string dense_reduction_refusal(const OpSpec &spec, int64_t max_block_length) {
  if (spec.out == OutType::Int32) return "";
  const DenseChunks ch = dense_chunks(spec);
  const int64_t bound = ch.max_exact_k();
  if (max_block_length <= bound) return "";
  return fmt::format("a row-block of {} vectors is longer than the dense route's int32 GEMMs stay exact for ({} for {} x {}{})",
                     max_block_length, bound, spec.lhs.str(), spec.rhs.str(),
                     ch.pairs() > 1 ? ", in chunks " + ch.str() : std::string());
}

int64_t dense_plane_stride(int64_t rows, int64_t cols, int elem_bytes) {
  return (rows * cols * elem_bytes + 255) / 256 * 256;
}

int64_t dense_planes_bytes(int planes, int64_t rows, int64_t cols, int elem_bytes) {
  if (planes <= 0) return 0;
  return (planes - 1) * dense_plane_stride(rows, cols, elem_bytes) + rows * cols * elem_bytes;
}

namespace {
// Chunk c of x: bits [lo, lo + bits), sign-extended when the chunk is signed (x >> lo is
// arithmetic, so a signed top chunk keeps x's sign).
int8_t chunk_of(int64_t x, const Chunk &c) {
  const int64_t u = (x >> c.lo_bit) & ((int64_t{1} << c.bits) - 1);
  return int8_t(c.is_signed && (u >> (c.bits - 1)) ? u - (int64_t{1} << c.bits) : u);
}
}  // namespace

std::vector<int8_t> dense_lhs_int8(const VectorSparse &a, const ElemType &lhs) {
  const std::vector<Chunk> chunks = split_int8_chunks(lhs);
  const int64_t stride = dense_plane_stride(a.rows, a.cols, 1);
  std::vector<int8_t> d(size_t(dense_planes_bytes(int(chunks.size()), a.rows, a.cols, 1)), 0);
  for (int64_t b = 0; b < a.num_blocks(); ++b)
    for (int64_t i = a.block_ptr[size_t(b)]; i < a.block_ptr[size_t(b + 1)]; ++i)
      for (int r = 0; r < a.v && b * a.v + r < a.rows; ++r) {
        const int64_t x = a.values[size_t(i * a.v + r)], at = (b * a.v + r) * a.cols + a.col[size_t(i)];
        for (size_t j = 0; j < chunks.size(); ++j) d[size_t(int64_t(j) * stride + at)] = chunk_of(x, chunks[j]);
      }
  return d;
}

std::vector<int8_t> dense_rhs_t_int8(const std::vector<int64_t> &b, int64_t k, int64_t n, const ElemType &rhs) {
  const std::vector<Chunk> chunks = split_int8_chunks(rhs);
  const int64_t stride = dense_plane_stride(n, k, 1);
  std::vector<int8_t> t(size_t(dense_planes_bytes(int(chunks.size()), n, k, 1)), 0);
  for (int64_t r = 0; r < k; ++r)
    for (int64_t c = 0; c < n; ++c)
      for (size_t j = 0; j < chunks.size(); ++j)
        t[size_t(int64_t(j) * stride + c * k + r)] = chunk_of(b[size_t(r * n + c)], chunks[j]);
  return t;
}

}  // namespace magicube
