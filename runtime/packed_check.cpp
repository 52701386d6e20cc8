#include "runtime/packed_check.h"

#include <algorithm>
#include <cstring>
#include <string>

#include "compiler/dense_chunks.h"
#include "compiler/plan_interpreter.h"
#include "compiler/planner.h"
#include "runtime/dense_route.h"
#include "runtime/packing.h"

namespace magicube {

namespace {

llvm::Error err(const std::string &msg) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), "packed: " + msg);
}
std::string str(int64_t x) { return std::to_string(x); }

template <class T>
T at(const ByteSpan &s, int64_t i) {  // the bytes may sit at any address
  T x;
  std::memcpy(&x, s.data + i * int64_t(sizeof(T)), sizeof(T));
  return x;
}

// The counts every layout shares: M, K (N), V as the plan has them, row-blocks = ceil(M / V).
llvm::Error check_shape(const PackedView &a, const Plan &plan) {
  if (a.v != plan.spec.v) return err("V=" + str(a.v) + " but the plan's V is " + str(plan.spec.v));
  if (a.rows < 0 || a.cols < 0 || a.rows > INT32_MAX || a.cols > INT32_MAX)
    return err("shape " + str(a.rows) + " x " + str(a.cols) + " (allowed: 0..2^31-1 each)");
  if (a.num_blocks != (a.rows + a.v - 1) / a.v)
    return err(str(a.num_blocks) + " row-blocks for " + str(a.rows) + " rows of V=" + str(a.v) + " (want " +
               str((a.rows + a.v - 1) / a.v) + ")");
  if (a.max_block_length < 0) return err("max_block_length " + str(a.max_block_length));
  return llvm::Error::success();
}

llvm::Error check_size(const ByteSpan &s, int64_t want, const std::string &what) {
  if (s.size != want) return err(what + " takes " + str(s.size) + " bytes, want " + str(want));
  return llvm::Error::success();
}

// A's values from its chunk planes (pack_plane's storage): element e decodes to the value whose
// chunks the planes hold, or is refused where they hold bits no value's chunk has.
class ChunkValues {
 public:
  ChunkValues(const std::vector<Chunk> &chunks, const std::vector<ByteSpan> &planes)
      : chunks_(chunks), planes_(planes) {}

  bool get(int64_t e, int64_t &x) const {
    x = 0;
    for (size_t j = 0; j < chunks_.size(); ++j) {
      const int w = chunks_[j].storage_bits;
      const int64_t raw = stored(j, e);
      const int64_t val = chunks_[j].is_signed && (raw >> (w - 1)) ? raw - (int64_t{1} << w) : raw;
      x += val * (int64_t{1} << chunks_[j].lo_bit);
    }
    for (size_t j = 0; j < chunks_.size(); ++j)
      if ((chunk_value(x, chunks_[j]) & ((int64_t{1} << chunks_[j].storage_bits) - 1)) != stored(j, e)) return false;
    return true;
  }

  // The planes' bytes for `elements` elements, and a 4-bit plane's unused last nibble zero.
  llvm::Error check_sizes(int64_t elements) const {
    if (planes_.size() != chunks_.size())
      return err(str(int64_t(planes_.size())) + " planes, the plan has " + str(int64_t(chunks_.size())) +
                 " lhs chunks");
    for (size_t j = 0; j < chunks_.size(); ++j) {
      const bool nibbles = chunks_[j].storage_bits == 4;
      if (auto e = check_size(planes_[j], nibbles ? (elements + 1) / 2 : elements, "plane " + str(int64_t(j))))
        return e;
      if (nibbles && elements % 2 && (planes_[j].data[planes_[j].size - 1] >> 4))
        return err("plane " + str(int64_t(j)) + ": the nibble past the last element is not 0");
    }
    return llvm::Error::success();
  }

 private:
  int64_t stored(size_t j, int64_t e) const {
    const uint8_t *p = planes_[j].data;
    return chunks_[j].storage_bits == 8 ? p[e] : (p[e / 2] >> (4 * (e & 1))) & 0xf;
  }
  const std::vector<Chunk> &chunks_;
  const std::vector<ByteSpan> &planes_;
};

// Row `row` of A's values in slot `slot`, at element e: within the lhs type, 0 where the slot is
// a pad or the row lies past M.
llvm::Error check_value(const ChunkValues &vals, const ElemType &t, int64_t e, int64_t row, int64_t rows, bool pad,
                        int64_t slot, int64_t *x_out = nullptr) {
  int64_t x = 0;
  const bool decoded = vals.get(e, x);
  if (decoded && t.contains(x) && (x == 0 || (!pad && row < rows))) {
    if (x_out) *x_out = x;
    return llvm::Error::success();
  }
  const std::string where = "A[" + str(row) + ", slot " + str(slot) + "]";  // built only for the message
  if (!decoded) return err(where + ": its chunks hold bits no " + t.str() + " value's chunks have");
  if (!t.contains(x))
    return err(where + " = " + str(x) + " is outside " + t.str() + "'s range [" + str(t.min_value()) + ", " +
               str(t.max_value()) + "]");
  if (pad) return err(where + " = " + str(x) + " in a pad (pads hold 0)");
  return err(where + " = " + str(x) + " in row " + str(row) + ", past M=" + str(rows) + " (those rows hold 0)");
}

// Where slot p's values sit: the plan's shuffle moves them within groups of G slots.
int64_t value_slot(const Plan &plan, int64_t p) {
  if (!plan.shuffle_b || plan.shuffle.empty()) return p;
  const int64_t g = int64_t(plan.shuffle.size());
  return (p / g) * g + plan.shuffle[size_t(p % g)];
}

// A layout of row-blocks each starting where the previous one's strides end (row_ptr: a
// (first, end) int32 pair a row-block), pads after or among its vectors up to whole strides.
// Visits each row-block's real count and slot range.
template <class F>
llvm::Error walk_row_blocks(const PackedView &a, int64_t stride, F &&visit) {
  int64_t slot = 0;
  for (int64_t b = 0; b < a.num_blocks; ++b) {
    const int64_t first = at<int32_t>(a.row_ptr, 2 * b), end = at<int32_t>(a.row_ptr, 2 * b + 1);
    if (first != slot || end < first || end > a.num_slots)
      return err("row_ptr of row-block " + str(b) + " is [" + str(first) + ", " + str(end) +
                 "), want it to start at slot " + str(slot) + " and end within the " + str(a.num_slots) + " slots");
    const int64_t padded = first + (end - first + stride - 1) / stride * stride;
    if (padded > a.num_slots)
      return err("row-block " + str(b) + "'s strides end at slot " + str(padded) + ", past the " + str(a.num_slots) +
                 " slots");
    if (auto e = visit(b, end - first, first, padded)) return e;
    slot = padded;
  }
  if (slot != a.num_slots) return err("the row-blocks' strides end at slot " + str(slot) + " of " + str(a.num_slots));
  return llvm::Error::success();
}

llvm::Error check_counts(const PackedView &a, int64_t longest, int64_t vectors) {
  if (longest != a.max_block_length)
    return err("the longest row-block holds " + str(longest) + " vectors, the header's max_block_length says " +
               str(a.max_block_length));
  if (vectors != a.num_vectors)
    return err(str(vectors) + " vectors, the header's num_vectors says " + str(a.num_vectors));
  return llvm::Error::success();
}

// Distinct columns in a row-block (a repeated one would count twice).
llvm::Error check_distinct(std::vector<int32_t> &cols, int64_t b) {
  std::sort(cols.begin(), cols.end());
  for (size_t i = 1; i < cols.size(); ++i)
    if (cols[i] == cols[i - 1]) return err("row-block " + str(b) + " names column " + str(cols[i]) + " twice");
  return llvm::Error::success();
}

// pack_lhs's layout of the ring, resident and generic kernels: int32 column indices (-1 for
// pads), values at value_index of the (shuffled) slot.
llvm::Error check_strided_lhs(const PackedView &a, const Plan &plan, const ChunkValues &vals) {
  const int64_t stride = plan.k_stride, v = a.v;
  if (a.stride != stride) return err("stride " + str(a.stride) + ", the plan's is " + str(stride));
  if (a.num_slots < 0 || a.num_slots > INT32_MAX / 16)  // pack_lhs's bound: the kernels' 32-bit slot x V
    return err(str(a.num_slots) + " slots (allowed: 0..2^31 / 16)");
  if (a.num_slots % stride) return err(str(a.num_slots) + " slots are not whole strides of " + str(stride));
  if (auto e = check_size(a.row_ptr, 8 * a.num_blocks, "row_ptr")) return e;
  if (auto e = check_size(a.col_idx, 4 * a.num_slots, "col_idx")) return e;
  if (auto e = vals.check_sizes(a.num_slots * v)) return e;
  int64_t longest = 0, vectors = 0;
  std::vector<int32_t> cols;
  auto e = walk_row_blocks(a, stride, [&](int64_t b, int64_t real, int64_t first, int64_t padded) -> llvm::Error {
    cols.clear();
    for (int64_t p = first; p < padded; ++p) {
      const int32_t c = at<int32_t>(a.col_idx, p);
      if (c != -1 && (c < 0 || c >= a.cols))
        return err("col_idx[" + str(p) + "] (row-block " + str(b) + ") is " + str(c) +
                   ", outside A's K=" + str(a.cols) + " (pads are -1)");
      if (c >= 0) cols.push_back(c);
      const int64_t q = value_slot(plan, p);
      for (int64_t r = 0; r < v; ++r)
        if (auto e = check_value(vals, plan.spec.lhs, (q / stride) * stride * v + r * stride + q % stride, b * v + r,
                                 a.rows, c < 0, p))
          return e;
    }
    if (int64_t(cols.size()) != real)
      return err("row-block " + str(b) + " names " + str(int64_t(cols.size())) + " columns, its row_ptr says " +
                 str(real));
    longest = std::max(longest, real);
    vectors += real;
    return check_distinct(cols, b);
  });
  if (e) return e;
  return check_counts(a, longest, vectors);
}

// pack_decode_layout's: 16-bit indices (bit 15: the stride's schedule word), the schedule in
// col_idx's second half, each row's 4-element groups interleaved; in K panels, row-block
// q x nb + b holds row-block b's vectors of panel q.
llvm::Error check_decode_lhs(const PackedView &a, const Plan &plan, const ChunkValues &vals) {
  const int64_t v = a.v, nb = a.num_blocks, panels = plan.launch.panels(a.cols), nbp = nb * panels;
  const int64_t prows = plan.spec.panel ? plan.spec.panel : a.cols;
  if (a.stride != 32) return err("stride " + str(a.stride) + ", a decode plan's is 32");
  if (a.num_slots % 32 || a.num_slots <= 0 || a.num_slots > INT32_MAX / 16 || a.num_slots > INT32_MAX / v)
    return err(str(a.num_slots) +
               " slots: not whole strides of 32, or past the decode kernel's 32-bit slot x V (2^31)");
  if (auto e = check_size(a.row_ptr, 8 * nb, "row_ptr")) return e;
  if (auto e = check_size(a.col_idx, 4 * a.num_slots, "col_idx")) return e;
  if (auto e = vals.check_sizes(a.num_slots * v)) return e;
  auto sched = decode_schedule(size_t(a.col_idx.size), nb, panels);
  if (!sched) return err(llvm::toString(sched.takeError()));
  const int64_t t = sched->strides;
  const ByteSpan meta{a.col_idx.data + sched->meta_offset, 4 * t},
      next{a.col_idx.data + sched->next_offset, 4 * (t + 1)};
  // The schedule: stride s's row-block (its first and last stride flagged), each row-block one
  // stride at least, in order.
  std::vector<int64_t> first(size_t(nbp) + 1, t);
  int64_t rb = -1;
  for (int64_t s = 0; s < t; ++s) {
    const uint32_t m = at<uint32_t>(meta, s);
    const int64_t b = m & kStrideRowBlock;
    const bool starts = b != rb, ends = s + 1 == t || int64_t(at<uint32_t>(meta, s + 1) & kStrideRowBlock) != b;
    if ((starts && b != rb + 1) || b >= nbp || bool(m & kStrideFirst) != starts || bool(m & kStrideLast) != ends)
      return err("stride_meta[" + str(s) + "] = " + str(m) + ": the schedule must name row-blocks 0.." + str(nbp - 1) +
                 " in order, each one's first and last stride flagged");
    if (starts) first[size_t(b)] = s, rb = b;
  }
  if (rb != nbp - 1) return err("the schedule names " + str(rb + 1) + " row-blocks, want " + str(nbp));
  for (int64_t s = t, nx = t; s >= 0; --s) {
    if (s < t && (at<uint32_t>(meta, s) & kStrideFirst)) nx = s;
    if (at<int32_t>(next, s) != nx)
      return err("stride_next[" + str(s) + "] = " + str(at<int32_t>(next, s)) + ", want " + str(nx));
  }
  if (plan.spec.panel) {
    const ByteSpan pf{a.col_idx.data + sched->panel_offset, 4 * (nbp + 1)};
    for (int64_t i = 0; i <= nbp; ++i)
      if (at<int32_t>(pf, i) != first[size_t(i)])
        return err("panel_first[" + str(i) + "] = " + str(at<int32_t>(pf, i)) + ", want " + str(first[size_t(i)]));
  }
  // Row pointers (row-block b of panel 0): its first slot, and no more vectors than its strides.
  int64_t longest = 0, vectors = 0;
  for (int64_t b = 0; b < nb; ++b) {
    const int64_t f = at<int32_t>(a.row_ptr, 2 * b), real = int64_t(at<int32_t>(a.row_ptr, 2 * b + 1)) - f;
    if (f != first[size_t(b)] * 32 || real < 0 || real > (first[size_t(b) + 1] - first[size_t(b)]) * 32)
      return err("row_ptr of row-block " + str(b) + " is [" + str(f) + ", " + str(f + real) +
                 "), want it to start at slot " + str(first[size_t(b)] * 32) + " and end within its strides");
    longest = std::max(longest, real);
    vectors += real;
  }
  if (panels == 1)
    if (auto e = check_counts(a, longest, vectors)) return e;
  // Every slot: its schedule bit, a column within its panel (or a pad's row slot % 8 over zeros),
  // its values; no row-block with more nonzero vectors than max_block_length.
  std::vector<int64_t> nonzero(size_t(nb), 0);
  std::vector<int32_t> cols;
  for (int64_t b = 0; b < nbp; ++b) {
    const int64_t q = b / nb, limit = std::min(prows, a.cols - q * prows);
    cols.clear();
    for (int64_t p = first[size_t(b)] * 32; p < first[size_t(b) + 1] * 32; ++p) {
      const uint16_t word = at<uint16_t>(a.col_idx, p);
      if ((word >> 15) != (at<uint32_t>(meta, p / 32) >> (p % 32) & 1))
        return err("bit 15 of column index " + str(p) + " is not bit " + str(p % 32) +
                   " of its stride's schedule word");
      const int64_t c = word & 0x7fff;
      const bool pad_form = c == p % 8;
      if (c >= limit && !pad_form)
        return err("column index " + str(p) + " (row-block " + str(b % nb) + (panels > 1 ? ", K panel " + str(q) : "") +
                   ") is " + str(c) + ", outside " +
                   (panels > 1 ? "its panel's " + str(limit) + " rows" : "A's K=" + str(a.cols)));
      const int64_t k = value_slot(plan, p) % 32, base = (p / 32) * 32 * v + kDecodeGroupAt[k / 4] * 4 + k % 4;
      bool any = false;
      for (int64_t r = 0; r < v; ++r) {
        int64_t x = 0;
        if (auto e = check_value(vals, plan.spec.lhs, base + r * 32, (b % nb) * v + r, a.rows, c >= limit, p, &x))
          return e;
        any |= x != 0;
      }
      if (any) cols.push_back(int32_t(c)), ++nonzero[size_t(b % nb)];
    }
    if (auto e = check_distinct(cols, b % nb)) return e;
  }
  for (int64_t b = 0; b < nb; ++b)
    if (nonzero[size_t(b)] > a.max_block_length)
      return err("row-block " + str(b) + " holds " + str(nonzero[size_t(b)]) +
                 " nonzero vectors, the header's max_block_length says " + str(a.max_block_length));
  return llvm::Error::success();
}

}  // namespace

llvm::Error check_packed_lhs(const PackedView &a, const Plan &plan) {
  if (auto e = check_shape(a, plan)) return e;
  if (auto e = check_reduction_length(plan, a.max_block_length)) return err(llvm::toString(std::move(e)));
  const ChunkValues vals(plan.lhs, a.planes);
  return plan.launch.family == KernelFamily::SpmmDecode ? check_decode_lhs(a, plan, vals)
                                                        : check_strided_lhs(a, plan, vals);
}

llvm::Error check_packed_mask(const PackedView &m, const Plan &plan) {
  if (auto e = check_shape(m, plan)) return e;
  if (m.stride < 1 || m.stride > 1024) return err("stride " + str(m.stride) + " (allowed: 1..1024)");
  if (m.num_slots < 0 || m.num_slots > INT32_MAX / m.v)
    return err(str(m.num_slots) + " slots of V=" + str(m.v) +
               " (allowed: slots x V below 2^31, the kernels' 32-bit output index)");
  if (auto e = check_size(m.row_ptr, 8 * m.num_blocks, "row_ptr")) return e;
  if (auto e = check_size(m.col_idx, 4 * m.num_slots, "col_idx")) return e;
  if (auto e = check_size(m.bcrs_ptr, 8 * (m.num_blocks + 1), "bcrs_ptr")) return e;
  if (!m.planes.empty()) return err("a mask with value planes");
  int64_t longest = 0, vectors = 0;
  auto e = walk_row_blocks(m, m.stride, [&](int64_t b, int64_t real, int64_t first, int64_t padded) -> llvm::Error {
    if (at<int64_t>(m.bcrs_ptr, b) != vectors)
      return err("bcrs_ptr[" + str(b) + "] = " + str(at<int64_t>(m.bcrs_ptr, b)) + ", want " + str(vectors));
    for (int64_t p = first; p < padded; ++p) {  // the vectors by increasing column, then pads (-1)
      const int32_t c = at<int32_t>(m.col_idx, p);
      const bool ok =
          p < first + real ? c >= 0 && c < m.cols && (p == first || c > at<int32_t>(m.col_idx, p - 1)) : c == -1;
      if (!ok)
        return err("col_idx[" + str(p) + "] (row-block " + str(b) + ") is " + str(c) +
                   ": want the row-block's columns in [0, N=" + str(m.cols) + ") increasing, then -1 for its pads");
    }
    longest = std::max(longest, real);
    vectors += real;
    return llvm::Error::success();
  });
  if (e) return e;
  if (at<int64_t>(m.bcrs_ptr, m.num_blocks) != vectors)
    return err("bcrs_ptr[" + str(m.num_blocks) + "] = " + str(at<int64_t>(m.bcrs_ptr, m.num_blocks)) + ", want " +
               str(vectors));
  return check_counts(m, longest, vectors);
}

llvm::Error check_packed_dense_lhs(const PackedView &a, const Plan &plan) {
  if (auto e = check_shape(a, plan)) return e;
  const OpSpec &spec = plan.spec;
  if (auto e = check_reduction_length(plan, a.max_block_length)) return err(llvm::toString(std::move(e)));
  if (std::string why = dense_reduction_refusal(spec, a.max_block_length, a.cols); !why.empty()) return err(why);
  if (a.rows * a.cols > a.dense.size)  // rows and cols are below 2^31 here: no wrap
    return err("the dense copy takes " + str(a.dense.size) + " bytes, short of A's " + str(a.rows) + " x " +
               str(a.cols));
  if (auto e = check_size(a.dense, dense_lhs_bytes(spec, a.rows, a.cols), "the dense copy")) return e;
  const DenseChunks ch = dense_chunks(spec);
  const int64_t m = a.rows, k = a.cols, stride = dense_plane_stride(m, k, 1), v = a.v;
  const size_t planes = ch.lhs.size();
  auto stored = [&](size_t j, int64_t i) { return int8_t(a.dense.data[int64_t(j) * stride + i]); };
  std::vector<uint8_t> seen(a.num_blocks ? size_t(k) : 0, 0);  // columns of the row-block with a nonzero value
  for (int64_t b = 0; b < a.num_blocks; ++b) {
    std::fill(seen.begin(), seen.end(), 0);
    int64_t vectors = 0;
    for (int64_t r = b * v; r < std::min(m, (b + 1) * v); ++r)
      for (int64_t c = 0; c < k; ++c) {
        int64_t x = 0;
        for (size_t j = 0; j < planes; ++j)
          x += (int64_t(stored(j, r * k + c)) + ch.lhs[j].offset) * (int64_t{1} << ch.lhs[j].chunk.lo_bit);
        bool same = spec.lhs.contains(x);
        for (size_t j = 0; j < planes && same; ++j) same = ch.lhs[j].of(x) == stored(j, r * k + c);
        if (!same)
          return err("the dense copy's A[" + str(r) + ", " + str(c) + "] is not a " + spec.lhs.str() +
                     " value's chunks");
        if (x != 0 && !seen[size_t(c)]) seen[size_t(c)] = 1, ++vectors;
      }
    if (vectors > a.max_block_length)
      return err("row-block " + str(b) + " of the dense copy holds " + str(vectors) +
                 " nonzero vectors, the header's max_block_length says " + str(a.max_block_length));
  }
  if (ch.rhs_offsets()) {  // each plane's row sums, as dense_lhs_int8 writes them
    const int64_t sums = dense_row_sums_offset(spec, m, k);
    for (size_t j = 0; j < planes; ++j)
      for (int64_t r = 0; r < m; ++r) {
        int32_t want = 0, got = 0;
        for (int64_t c = 0; c < k; ++c) want += stored(j, r * k + c);
        std::memcpy(&got, a.dense.data + sums + (int64_t(j) * m + r) * 4, 4);
        if (got != want)
          return err("the dense copy's row sum " + str(r) + " of plane " + str(int64_t(j)) + " is " + str(got) +
                     ", want " + str(want));
      }
  }
  return llvm::Error::success();
}

}  // namespace magicube
