#include "capi/packed_blob.h"

#include <algorithm>
#include <cstring>
#include <string>

#include "runtime/dense_route.h"
#include "runtime/packed_check.h"

namespace magicube::capi {

namespace {

[[noreturn]] void invalid(const std::string &msg) { throw Error(Error::Kind::Invalid, msg); }

int64_t aligned(int64_t bytes) { return (bytes + kBlobAlign - 1) / kBlobAlign * kBlobAlign; }

// The header's bytes, then each array at the next 256-byte boundary.
struct BlobBuilder {
  std::vector<uint8_t> bytes = std::vector<uint8_t>(MAGICUBE_PACKED_HEADER_BYTES, 0);
  template <class T>
  int64_t add(const std::vector<T> &v) {
    const int64_t off = aligned(int64_t(bytes.size()));
    bytes.resize(size_t(off) + v.size() * sizeof(T));
    if (!v.empty()) std::memcpy(bytes.data() + off, v.data(), v.size() * sizeof(T));
    return off;
  }
  // Pads the blob to a multiple of 256 bytes and writes `h` (its total_bytes set) first.
  std::vector<uint8_t> finish(magicube_packed_header &h) {
    bytes.resize(size_t(aligned(int64_t(bytes.size()))), 0);
    h.total_bytes = int64_t(bytes.size());
    std::memcpy(bytes.data(), &h, sizeof h);
    return std::move(bytes);
  }
};

// The fields every blob's header has: the format, the plan and A's (the mask's) layout.
magicube_packed_header header_of(const SrBcrs &layout, int64_t plan_fingerprint, int64_t num_vectors) {
  magicube_packed_header h;
  std::memset(&h, 0, sizeof h);
  h.magic = MAGICUBE_PACKED_MAGIC;
  h.format_version = MAGICUBE_PACKED_FORMAT_VERSION;
  h.plan_fingerprint = plan_fingerprint;
  h.rows = layout.rows, h.cols = layout.cols, h.v = layout.v;
  h.num_blocks = layout.num_blocks();
  h.max_block_length = layout.max_block_length;
  h.num_slots = layout.num_slots();
  h.num_vectors = num_vectors;
  h.stride = layout.stride;
  return h;
}

// The real vectors of a layout (its row pointers' counts).
int64_t vectors_of(const SrBcrs &l) {
  int64_t n = 0;
  for (int64_t b = 0; b < l.num_blocks(); ++b) n += l.row_ptr[size_t(2 * b + 1)] - l.row_ptr[size_t(2 * b)];
  return n;
}

// Whether the dense copy's size is one the route writes for A of rows x cols: one or two int8
// planes (compiler/dense_chunks.h: 16 bits are two chunks), each with its M int32 row sums or
// not (runtime/dense_route.h). The op's own spec pins which (check_header_for).
bool dense_bytes_plausible(const magicube_packed_header &h) {
  if (h.rows > INT64_MAX / 8 / std::max<int64_t>(h.cols + 8, 1)) return false;  // rows and cols are >= 0 here
  for (int planes : {1, 2})
    for (bool row_sums : {false, true})
      if (h.dense_bytes == magicube::dense_lhs_bytes(planes, row_sums, h.rows, h.cols)) return true;
  return false;
}

}  // namespace

std::vector<uint8_t> lhs_blob(const HostLhs &a, bool dense, int64_t plan_fingerprint) {
  magicube_packed_header h = header_of(a.layout, plan_fingerprint, vectors_of(a.layout));
  BlobBuilder blob;
  h.op = 0;
  if (dense) {  // the dense copy only: the sparse arrays are never read
    h.route = 1;
    h.dense_offset = blob.add(a.dense);
    h.dense_bytes = int64_t(a.dense.size());
    return blob.finish(h);
  }
  h.row_ptr_offset = blob.add(a.packed.row_ptr);
  h.col_idx_offset = blob.add(a.packed.col_idx);
  h.num_planes = int64_t(a.packed.planes.size());
  for (size_t j = 0; j < a.packed.planes.size(); ++j) {
    h.plane_offset[j] = blob.add(a.packed.planes[j]);
    h.plane_bytes[j] = int64_t(a.packed.planes[j].size());
  }
  h.num_slots = int64_t(a.packed.col_idx.size());  // a decode plan's layout gives empty row-blocks a stride of pads
  return blob.finish(h);
}

std::vector<uint8_t> mask_blob(const HostMask &m, int64_t plan_fingerprint) {
  magicube_packed_header h = header_of(m.layout, plan_fingerprint, m.pattern.num_vectors());
  BlobBuilder blob;
  h.op = 1;
  h.row_ptr_offset = blob.add(std::vector<int32_t>(m.layout.row_ptr.begin(), m.layout.row_ptr.end()));
  h.col_idx_offset = blob.add(m.layout.col_idx);
  h.bcrs_ptr_offset = blob.add(m.pattern.block_ptr);
  return blob.finish(h);
}

void check_blob_header(const magicube_packed_header &h, size_t bytes_available) {
  if (h.magic != MAGICUBE_PACKED_MAGIC) invalid("packed: not a magicube packed blob (bad magic)");
  if (h.format_version == 1)
    invalid("packed: format version 1, written before the dense route (this library reads version " +
            std::to_string(MAGICUBE_PACKED_FORMAT_VERSION) + "): pack the matrix again with magicube_pack");
  if (h.format_version == 2)
    invalid("packed: format version 2, written before the decode kernel's schedule (this library reads version " +
            std::to_string(MAGICUBE_PACKED_FORMAT_VERSION) + "): pack the matrix again with magicube_pack");
  if (h.format_version == 3)
    invalid(
        "packed: format version 3, written before the decode kernel's indices carried its schedule (this "
        "library reads version " +
        std::to_string(MAGICUBE_PACKED_FORMAT_VERSION) + "): pack the matrix again with magicube_pack");
  if (h.format_version != MAGICUBE_PACKED_FORMAT_VERSION)
    invalid("packed: format version " + std::to_string(h.format_version) + " (this library reads version " +
            std::to_string(MAGICUBE_PACKED_FORMAT_VERSION) + ")");
  if (h.total_bytes < MAGICUBE_PACKED_HEADER_BYTES || (bytes_available && size_t(h.total_bytes) > bytes_available))
    invalid("packed: the header says " + std::to_string(h.total_bytes) + " bytes but " +
            std::to_string(bytes_available) + " are given");
  if (h.op != 0 && h.op != 1) invalid("packed: op " + std::to_string(h.op) + " (allowed: 0 spmm, 1 sddmm)");
  if (h.num_planes < 0 || h.num_planes > 4)
    invalid("packed: " + std::to_string(h.num_planes) + " planes (allowed: 0..4)");
  // The counts the output sizes multiply (magicube_output_elements): bounded, so no product wraps.
  if (h.v < 1 || h.v > 1024 || h.rows < 0 || h.rows > INT32_MAX || h.cols < 0 || h.cols > INT32_MAX ||
      h.num_vectors < 0 || h.num_vectors > (int64_t{1} << 40) || h.num_slots < 0 || h.num_slots > (int64_t{1} << 40))
    invalid("packed: V=" + std::to_string(h.v) + ", " + std::to_string(h.rows) + " x " + std::to_string(h.cols) + ", " +
            std::to_string(h.num_vectors) + " vectors, " + std::to_string(h.num_slots) +
            " slots (allowed: V 1..1024, M and K 0..2^31-1, vectors and slots 0..2^40)");
  // `count` elements of `elem` bytes at `off`: counted before they are multiplied (a hostile
  // count must not wrap).
  // Every array starts 256-byte aligned, as magicube_pack writes them (the kernels' vector loads
  // need 16 bytes, cuBLASLt 256).
  auto in = [&](int64_t off, int64_t count, int64_t elem, const char *what) {
    if (off < MAGICUBE_PACKED_HEADER_BYTES || off > h.total_bytes || count < 0 || count > (h.total_bytes - off) / elem)
      invalid(std::string("packed: ") + what + " lies outside the blob");
    if (off % kBlobAlign != 0) invalid(std::string("packed: ") + what + " is not 256-byte aligned in the blob");
  };
  if (h.route != 0 && h.route != 1)
    invalid("packed: route " + std::to_string(h.route) + " (allowed: 0 sparse, 1 dense)");
  if (h.route == 1) {
    if (h.op != 0) invalid("packed: a dense copy in an SDDMM mask (the dense route runs SpMM only)");
    if (h.rows < 0 || h.cols < 0 || h.rows > INT32_MAX || h.cols > INT32_MAX || !dense_bytes_plausible(h))
      invalid("packed: the dense copy has " + std::to_string(h.dense_bytes) + " bytes for A of " +
              std::to_string(h.rows) + " x " + std::to_string(h.cols) +
              " (allowed: one or two int8 planes, with or without their row sums; runtime/dense_route.h)");
    in(h.dense_offset, h.dense_bytes, 1, "the dense copy");
    return;
  }
  if (h.dense_offset != 0 || h.dense_bytes != 0) invalid("packed: a sparse blob (route 0) names a dense copy");
  in(h.row_ptr_offset, h.num_blocks, 8, "row_ptr");
  in(h.col_idx_offset, h.num_slots, 4, "col_idx");
  if (h.op == 1) in(h.bcrs_ptr_offset, h.num_blocks + 1, 8, "bcrs_ptr");
  for (int64_t j = 0; j < h.num_planes; ++j) in(h.plane_offset[j], h.plane_bytes[j], 1, "a plane");
}

llvm::Error check_blob_body(const magicube_packed_header &h, const void *blob, const Plan &plan) {
  const auto *base = static_cast<const uint8_t *>(blob);
  auto span = [&](int64_t off, int64_t bytes) { return ByteSpan{base + off, bytes}; };
  PackedView a;
  a.rows = h.rows, a.cols = h.cols, a.v = h.v, a.stride = h.stride;
  a.num_blocks = h.num_blocks, a.num_slots = h.num_slots, a.num_vectors = h.num_vectors;
  a.max_block_length = h.max_block_length;
  if (h.route == 1) {
    a.dense = span(h.dense_offset, h.dense_bytes);
    return check_packed_dense_lhs(a, plan);
  }
  a.row_ptr = span(h.row_ptr_offset, 8 * h.num_blocks);
  a.col_idx = span(h.col_idx_offset, 4 * h.num_slots);
  for (int64_t j = 0; j < h.num_planes; ++j) a.planes.push_back(span(h.plane_offset[j], h.plane_bytes[j]));
  if (h.op == 1) {
    a.bcrs_ptr = span(h.bcrs_ptr_offset, 8 * (h.num_blocks + 1));
    return check_packed_mask(a, plan);
  }
  return check_packed_lhs(a, plan);
}

}  // namespace magicube::capi
