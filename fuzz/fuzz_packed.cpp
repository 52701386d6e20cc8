// Fuzz target: the packed-operand checks on layouts the packers wrote, then edited. Input: byte
// 0 picks a layout (its low 7 bits: the ring, resident and sm_80 4-bit kernels' A, odd widths at
// V=2, a two-chunk type, the decode kernel whole and in K panels, an SDDMM mask, the dense
// route's copy with and without row sums) and a mode (its top bit); the rest are edits of 4 bytes
// each: a 24-bit offset and a byte XORed in there.
//   arrays (top bit 0): runtime/packed_check.h on the layout's eight counts (as int64) and its
//     arrays, each its own heap buffer of its own size, so ASan sees a read past any one;
//   blob (top bit 1): capi/packed_blob.h on the whole blob as magicube_pack writes it, header
//     included, in a buffer of exactly its size: the header check, then the body's.
// A check must pass or refuse with a message without control bytes; an unedited layout must pass.
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "capi/packed_blob.h"
#include "compiler/ir.h"
#include "compiler/planner.h"
#include "runtime/dense_route.h"
#include "runtime/packed_check.h"
#include "runtime/packing.h"
#include "runtime/srbcrs.h"
#include "runtime/vector_sparse.h"

namespace {

using namespace magicube;

enum class Kind { Lhs, Mask, Dense };

struct Layout {
  Kind kind = Kind::Lhs;
  Plan plan;
  int64_t counts[8] = {};  // rows, cols, v, stride, num_blocks, num_slots, num_vectors, max_block_length
  std::vector<std::vector<uint8_t>> arrays;  // row_ptr, col_idx, (bcrs_ptr | planes... | dense)
  std::vector<uint8_t> blob;                 // the same, as magicube_pack writes it
};

template <class T>
std::vector<uint8_t> bytes_of(const std::vector<T> &v) {
  std::vector<uint8_t> b(v.size() * sizeof(T));
  if (!b.empty()) std::memcpy(b.data(), v.data(), b.size());
  return b;
}

VectorSparse random_matrix(int64_t m, int64_t k, int v, int lo, int hi) {
  std::mt19937 rng(5);
  std::vector<int64_t> dense(size_t(m * k), 0);
  for (int64_t b = 0; b * v < m; ++b)
    for (int64_t c = 0; c < k; ++c)
      if (b != 1 && rng() % 10 < 3)
        for (int64_t r = b * v; r < std::min<int64_t>(m, (b + 1) * v); ++r)
          dense[size_t(r * k + c)] = lo + int64_t(rng() % uint32_t(hi - lo + 1));
  return vector_sparse_from_dense(dense, m, k, v);
}

Layout make(const char *spec_text, Kind kind, int64_t m, int64_t k, int lo, int hi) {
  Layout l;
  l.kind = kind;
  auto spec = parse_opspec(spec_text);
  if (!spec) std::abort();
  auto plans = plan_candidates(*spec);
  if (!plans || plans->empty()) std::abort();
  l.plan = plans->front();
  const VectorSparse a = random_matrix(m, k, l.plan.spec.v, lo, hi);
  const SrBcrs s = kind == Kind::Mask ? build_srbcrs(a, 32) : *build_srbcrs(a, l.plan);
  const int64_t c[8] = {
      a.rows, a.cols, a.v, s.stride, s.num_blocks(), s.num_slots(), a.num_vectors(), s.max_block_length};
  std::memcpy(l.counts, c, sizeof c);
  if (kind == Kind::Dense) {
    HostLhs h{s, {}, dense_lhs_int8(a, l.plan.spec)};
    l.arrays = {{}, {}, bytes_of(h.dense)};
    l.blob = capi::lhs_blob(h, true, 0);
    return l;
  }
  if (kind == Kind::Mask) {
    l.arrays = {bytes_of(std::vector<int32_t>(s.row_ptr.begin(), s.row_ptr.end())), bytes_of(s.col_idx),
                bytes_of(a.block_ptr)};
    l.blob = capi::mask_blob(HostMask{a, s}, 0);
    return l;
  }
  auto p = pack_lhs(s, l.plan);
  if (!p) std::abort();
  l.counts[5] = int64_t(p->col_idx.size());
  l.arrays = {bytes_of(p->row_ptr), bytes_of(p->col_idx)};
  for (const Plane &pl : p->planes) l.arrays.push_back(pl);
  l.blob = capi::lhs_blob(HostLhs{s, *p, {}}, false, 0);
  return l;
}

const std::vector<Layout> &layouts() {
  static const std::vector<Layout> all = {
      make("spmm.s8xs8.v8.n64.pf.i32.sm_90", Kind::Lhs, 40, 200, -128, 127),
      make("spmm.s8xs8.v8.n48r.i32.sm_90", Kind::Lhs, 40, 200, -128, 127),
      make("spmm.u3xs7.v2.i32.sm_90", Kind::Lhs, 37, 90, 0, 7),
      make("spmm.s12xu4.v4.i32.sm_80", Kind::Lhs, 36, 100, -2048, 2047),
      make("spmm.s4xs8.v8.n64.i32.sm_80", Kind::Lhs, 40, 200, -8, 7),
      make("spmm.s8xs8.v8.n16d.i32.sm_90", Kind::Lhs, 40, 300, -128, 127),
      make("spmm.s8xs8.v8.n48dp4800.i32.sm_90", Kind::Lhs, 24, 9700, -128, 127),
      make("sddmm.s8xs8.v8.i32.sm_90", Kind::Mask, 40, 300, 1, 1),
      make("spmm.s8xs8.v8.i32.sm_90", Kind::Dense, 24, 40, -128, 127),
      make("spmm.u8xs12.v8.i32.sm_90", Kind::Dense, 24, 40, 0, 255),
  };
  return all;
}

llvm::Error check(const Layout &l, const int64_t *c, const std::vector<std::vector<uint8_t>> &arrays) {
  PackedView a;
  a.rows = c[0], a.cols = c[1], a.v = c[2], a.stride = c[3];
  a.num_blocks = c[4], a.num_slots = c[5], a.num_vectors = c[6], a.max_block_length = c[7];
  auto span = [](const std::vector<uint8_t> &b) { return ByteSpan{b.data(), int64_t(b.size())}; };
  a.row_ptr = span(arrays[0]);
  a.col_idx = span(arrays[1]);
  switch (l.kind) {
    case Kind::Dense:
      a.dense = span(arrays[2]);
      return check_packed_dense_lhs(a, l.plan);
    case Kind::Mask:
      a.bcrs_ptr = span(arrays[2]);
      return check_packed_mask(a, l.plan);
    case Kind::Lhs:
      for (size_t j = 2; j < arrays.size(); ++j) a.planes.push_back(span(arrays[j]));
      return check_packed_lhs(a, l.plan);
  }
  return llvm::Error::success();
}

// Blob mode: the edited blob in a buffer of exactly its size, through the C ABI's two checks.
llvm::Error check_blob(const Layout &l, const uint8_t *data, size_t size) {
  std::unique_ptr<uint8_t[]> b(new uint8_t[l.blob.size()]);
  std::memcpy(b.get(), l.blob.data(), l.blob.size());
  for (size_t i = 1; i + 4 <= size; i += 4)
    b[(size_t(data[i]) | size_t(data[i + 1]) << 8 | size_t(data[i + 2]) << 16) % l.blob.size()] ^= data[i + 3];
  magicube_packed_header h;
  std::memcpy(&h, b.get(), sizeof h);
  try {
    capi::check_blob_header(h, l.blob.size());
  } catch (const Error &e) {
    return llvm::createStringError(llvm::inconvertibleErrorCode(), e.what());
  }
  return capi::check_blob_body(h, b.get(), l.plan);
}

// A refusal's message: "packed: ..." without control bytes (an unedited layout passes).
void check_refusal(llvm::Error e, bool edited) {
  if (!e) return;
  const std::string msg = llvm::toString(std::move(e));
  if (!edited || msg.rfind("packed: ", 0) != 0) std::abort();
  for (char c : msg)
    if ((unsigned char)c < 0x20 || c == 0x7f) std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 1 || size > 4096) return 0;
  const std::vector<Layout> &all = layouts();
  const Layout &l = all[(data[0] & 0x7f) % all.size()];
  if (data[0] & 0x80) {
    check_refusal(check_blob(l, data, size), size >= 5);
    return 0;
  }
  int64_t counts[8];
  std::memcpy(counts, l.counts, sizeof counts);
  std::vector<std::vector<uint8_t>> arrays = l.arrays;
  size_t total = sizeof counts;
  for (const auto &b : arrays) total += b.size();
  const bool edited = size >= 5;
  for (size_t i = 1; i + 4 <= size; i += 4) {
    size_t at = (size_t(data[i]) | size_t(data[i + 1]) << 8 | size_t(data[i + 2]) << 16) % total;
    const uint8_t x = data[i + 3];
    if (at < sizeof counts) {
      reinterpret_cast<uint8_t *>(counts)[at] ^= x;
      continue;
    }
    at -= sizeof counts;
    for (auto &b : arrays) {
      if (at < b.size()) {
        b[at] ^= x;
        break;
      }
      at -= b.size();
    }
  }
  check_refusal(check(l, counts, arrays), edited);
  return 0;
}
