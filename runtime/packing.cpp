#include "runtime/packing.h"

#include <algorithm>

#include "compiler/codegen.h"
#include "compiler/plan_interpreter.h"
#include "runtime/memory_budget.h"

namespace magicube {

namespace {
llvm::Error err(const llvm::Twine &msg) { return llvm::createStringError(llvm::inconvertibleErrorCode(), msg); }
}  // namespace

Plane pack_plane(const std::vector<int64_t> &values, const Chunk &c) {
  if (c.storage_bits == 8) {
    Plane p(values.size());
    for (size_t i = 0; i < values.size(); ++i) p[i] = uint8_t(chunk_value(values[i], c) & 0xff);
    return p;
  }
  Plane p((values.size() + 1) / 2, 0);
  for (size_t i = 0; i < values.size(); ++i) p[i / 2] |= uint8_t((chunk_value(values[i], c) & 0xf) << (4 * (i & 1)));
  return p;
}

llvm::Expected<DecodeSchedule> decode_schedule(size_t col_idx_bytes, int64_t num_blocks, int64_t panels) {
  if (col_idx_bytes % 128 != 0 || col_idx_bytes == 0)
    return err("decode: A's column indices take " + llvm::Twine(uint64_t(col_idx_bytes)) +
               " bytes, not whole strides of 32 slots (128 bytes each): pack A with this decode plan");
  const int64_t t = int64_t(col_idx_bytes / 128);
  if (panels < 1 || num_blocks > (int64_t(1) << 30) / panels || t < num_blocks * panels || t > INT32_MAX / 32)
    return err("decode: A has " + llvm::Twine(t) + " strides for " + llvm::Twine(num_blocks) + " row-blocks in " +
               llvm::Twine(panels) +
               " K panel(s) (every row-block needs one a panel at least, at most 2^30 in all): pack A with this decode plan");
  // panel_first (panels x num_blocks + 1 int32) ends at 76 t + 8 bytes at most, within 128 t.
  return DecodeSchedule{t, 64 * t, 68 * t, 72 * t + 4};
}

namespace {
// The decode layout (packing.h): every row-block one stride at least, 16-bit indices in the
// first half of col_idx and the schedule in its second, the value groups interleaved.
// `panels` > 1: `a` holds the K panels' row-blocks one panel after another (pack_panel_lhs).
llvm::Expected<PackedLhs> pack_decode_layout(const SrBcrs &a, const Plan &plan, int64_t panels = 1) {
  if (a.cols > kDecodeMaxK)
    return err("pack: the decode kernel reads 15-bit column indices but A has K=" + llvm::Twine(a.cols) +
               " columns (at most " + llvm::Twine(kDecodeMaxK) + "; a decode plan in K panels takes any K)");
  if (plan.k_stride != 32) return err("pack: a decode plan's stride must be 32");
  const int64_t nb = a.num_blocks(), v = a.v, ks = 32;
  if (nb > (int64_t(1) << 30)) return err("pack: a decode plan takes at most 2^30 row-blocks (all K panels')");
  std::vector<int64_t> first(size_t(nb) + 1, 0);  // each row-block's first stride in the new layout
  for (int64_t b = 0; b < nb; ++b) {
    const int64_t real = a.row_ptr[2 * b + 1] - a.row_ptr[2 * b];
    first[b + 1] = first[b] + std::max<int64_t>(1, (real + ks - 1) / ks);
  }
  const int64_t t = first[nb];
  if (t > INT32_MAX / 32 / v) return err("pack: too many vector slots for 32-bit indices");
  PackedLhs p;
  p.index_bits = 16;
  p.row_ptr.resize(size_t(2 * nb));
  p.col_idx.assign(size_t(t * ks), 0);
  auto *u16 = reinterpret_cast<uint16_t *>(p.col_idx.data());
  for (int64_t i = 0; i < t * ks; ++i) u16[i] = uint16_t(i % 8);  // pads: row slot % 8 (A's zeros there)
  // The 4-element groups of each row's 32 k stored in the order 0 4 1 5 2 6 3 7, so that a
  // lane's two mma words (k 4t..4t+3 and 16+4t..) sit side by side: one 8-byte load (4-bit
  // planes: 4 bytes) instead of two.
  std::vector<int64_t> wide(size_t(t * ks * v), 0);
  for (int64_t b = 0; b < nb; ++b) {
    const int64_t old0 = a.row_ptr[2 * b], real = a.row_ptr[2 * b + 1] - old0, new0 = first[b] * ks;
    p.row_ptr[2 * b] = int32_t(new0);
    p.row_ptr[2 * b + 1] = int32_t(new0 + real);
    const int64_t len = a.padded_end(b) - old0;  // whole strides, pads anywhere in them
    for (int64_t i = 0; i < len; ++i) {
      const int32_t c = a.col_idx[size_t(old0 + i)];
      if (c >= 0) u16[new0 + i] = uint16_t(c);
    }
    for (int64_t e = 0; e < len * v; ++e) {  // stride-aligned runs: the [V][32] blocks move whole
      const int64_t k = e % 32;
      wide[size_t(new0 * v + e - k + kDecodeGroupAt[k / 4] * 4 + k % 4)] = a.values[size_t(old0 * v + e)];
    }
  }
  auto sched = decode_schedule(p.col_idx.size() * 4, nb / panels, panels);
  if (!sched) return sched.takeError();
  auto *meta = reinterpret_cast<uint32_t *>(reinterpret_cast<char *>(p.col_idx.data()) + sched->meta_offset);
  auto *next = reinterpret_cast<int32_t *>(reinterpret_cast<char *>(p.col_idx.data()) + sched->next_offset);
  for (int64_t b = 0; b < nb; ++b)
    for (int64_t s = first[b]; s < first[b + 1]; ++s)
      meta[s] = uint32_t(b) | (s == first[b] ? kStrideFirst : 0u) | (s + 1 == first[b + 1] ? kStrideLast : 0u);
  for (int64_t i = 0; i < t * ks; ++i)  // bit 15 of slot i: bit i % 32 of its stride's schedule word
    u16[i] = uint16_t(u16[i] | ((meta[i / ks] >> (i % ks)) & 1u) << 15);
  next[t] = int32_t(t);
  for (int64_t s = t - 1; s >= 0; --s) next[s] = meta[s] & kStrideFirst ? int32_t(s) : next[s + 1];
  for (const Chunk &c : plan.lhs) p.planes.push_back(pack_plane(wide, c));
  if (plan.spec.panel) {  // the first stride of every (panel, row-block), then T
    auto *pf = reinterpret_cast<int32_t *>(reinterpret_cast<char *>(p.col_idx.data()) + sched->panel_offset);
    for (int64_t b = 0; b <= nb; ++b) pf[b] = int32_t(first[size_t(b)]);
    p.panel_rows = plan.spec.panel;
  }
  return p;
}

// A decode plan in K panels: row-block b's vectors whose columns lie in panel q (columns
// [q x rows, (q + 1) x rows)) become row-block q x nb + b of a stacked matrix of panel-relative
// columns, laid out as the plan lays out A (bank-balanced per panel, shuffled) and packed as
// one decode layout. Its row pointers keep A's shape: panel 0's strides of each row-block
// (the kernel reads the schedule, not them).
llvm::Expected<PackedLhs> pack_panel_lhs(const SrBcrs &a, const Plan &plan) {
  const int64_t rows = plan.spec.panel, panels = plan.launch.panels(a.cols);
  const int64_t nb = a.num_blocks(), v = a.v, G = a.shuffled ? int64_t(a.shuffle.size()) : 1;
  if (nb > (int64_t(1) << 30) / panels)
    return err("pack: " + llvm::Twine(nb) + " row-blocks in " + llvm::Twine(panels) +
               " K panels exceed the decode kernel's 2^30");
  VectorSparse st;
  st.rows = panels * nb * v, st.cols = rows, st.v = int(v);
  st.block_ptr.assign(size_t(panels * nb + 1), 0);
  std::vector<std::vector<std::pair<int32_t, int64_t>>> cols(static_cast<size_t>(panels));  // (column, slot) of one row-block
  auto split = [&](int64_t b) {  // row-block b's vectors by panel, panel-relative columns in order
    for (auto &c : cols) c.clear();
    for (int64_t s = a.row_ptr[2 * b]; s < a.padded_end(b); ++s)
      if (const int32_t c = a.col_idx[size_t(s)]; c >= 0) cols[size_t(c / rows)].push_back({int32_t(c % rows), s});
    for (auto &c : cols) std::sort(c.begin(), c.end());
  };
  for (int64_t b = 0; b < nb; ++b)  // each (panel, row-block)'s count first: no order needed for it
    for (int64_t s = a.row_ptr[2 * b]; s < a.padded_end(b); ++s)
      if (const int32_t c = a.col_idx[size_t(s)]; c >= 0) ++st.block_ptr[size_t((c / rows) * nb + b + 1)];
  for (size_t i = 1; i < st.block_ptr.size(); ++i) st.block_ptr[i] += st.block_ptr[i - 1];
  st.col.assign(size_t(st.block_ptr.back()), 0);
  st.values.assign(size_t(st.block_ptr.back() * v), 0);
  for (int64_t b = 0; b < nb; ++b) {
    split(b);
    for (int64_t q = 0; q < panels; ++q) {
      int64_t i = st.block_ptr[size_t(q * nb + b)];
      for (const auto &[c, s] : cols[size_t(q)]) {
        const int64_t at = a.shuffled ? (s / G) * G + a.shuffle[size_t(s % G)] : s;  // where slot s's values are
        st.col[size_t(i)] = c;
        for (int64_t r = 0; r < v; ++r) st.values[size_t(i * v + r)] = a.values[size_t(a.value_index(at, int(r)))];
        ++i;
      }
    }
  }
  auto layout = build_srbcrs(st, plan);
  if (!layout) return layout.takeError();
  auto p = pack_decode_layout(*layout, plan, panels);
  if (!p) return p.takeError();
  p->row_ptr.resize(size_t(2 * nb));
  return p;
}
}  // namespace

llvm::Expected<PackedLhs> pack_lhs(const SrBcrs &a, const Plan &plan) {
  if (a.v != plan.spec.v || a.stride != plan.k_stride || a.shuffled != plan.shuffle_b)
    return err("pack: the SR-BCRS layout (V=" + llvm::Twine(a.v) + ", stride " + llvm::Twine(a.stride) +
               ") was not built for this plan (V=" + llvm::Twine(plan.spec.v) + ", stride " + llvm::Twine(plan.k_stride) + ")");
  if (a.num_slots() > INT32_MAX / 16) return err("pack: too many vector slots for 32-bit indices");
  if (auto e = check_range(a, plan.spec.lhs, "lhs A")) return e;
  if (plan.launch.family == KernelFamily::SpmmDecode) return plan.spec.panel ? pack_panel_lhs(a, plan) : pack_decode_layout(a, plan);
  PackedLhs p;
  p.row_ptr.assign(a.row_ptr.begin(), a.row_ptr.end());
  p.col_idx.assign(a.col_idx.begin(), a.col_idx.end());
  for (const Chunk &c : plan.lhs) p.planes.push_back(pack_plane(a.values, c));
  return p;
}

llvm::Expected<PackedRhs> pack_rhs(const std::vector<int64_t> &b, int64_t k, int64_t n, const Plan &plan) {
  if (auto e = check_range_dense(b, k, n, false, plan.spec.rhs, "rhs B")) return e;
  PackedRhs p;
  p.k = k;
  p.n = n;
  if (plan.spec.resident) {
    // Slices of BSn columns, each K rows of BSn contiguous, their 16-byte units swizzled as
    // the kernel's shared copy wants them: a block copies its slice as one contiguous run.
    const int64_t bsn = plan.spec.bsn, slices = (n + bsn - 1) / bsn;
    if (auto e = check_host_alloc("rhs B: its resident slices (K x N rounded up to BSn, int64)", k,
                                  checked_mul(slices, bsn * 8).value_or(INT64_MAX)))
      return e;
    p.ldb = bsn;
    for (const Chunk &c : plan.rhs) {
      const int64_t per_unit = 128 / c.storage_bits, units = bsn / per_unit;  // elements per 16 bytes
      std::vector<int64_t> sliced(slices * k * bsn, 0);
      for (int64_t r = 0; r < k; ++r) {
        const int64_t sw = resident_swizzle(r, int(units));
        for (int64_t col = 0; col < n; ++col) {
          const int64_t sl = col / bsn, x = col % bsn, u = x / per_unit;
          sliced[(sl * k + r) * bsn + (u ^ sw) * per_unit + x % per_unit] = b[r * n + col];
        }
      }
      p.planes.push_back(pack_plane(sliced, c));
    }
    return p;
  }
  p.ldb = (n + kLdbAlign - 1) / kLdbAlign * kLdbAlign;
  if (auto e = check_host_alloc("rhs B: its padded copy (K x ldb int64)", k, checked_mul(p.ldb, 8).value_or(INT64_MAX)))
    return e;
  std::vector<int64_t> padded(k * p.ldb, 0);
  for (int64_t r = 0; r < k; ++r)
    for (int64_t c = 0; c < n; ++c) padded[r * p.ldb + c] = b[r * n + c];
  for (const Chunk &c : plan.rhs) p.planes.push_back(pack_plane(padded, c));
  return p;
}

namespace {
// `rows` x `k` K-contiguous rows (element (r, t) at r * k + t of `src`) into planes of pitch ld.
PackedDense pack_k_rows(const std::vector<int64_t> &src, int64_t rows, int64_t src_rows, int64_t k,
                        const std::vector<Chunk> &chunks) {
  PackedDense d;
  d.rows = rows;
  d.k = k;
  d.ld = std::max<int64_t>(1, (k + kLdbAlign - 1) / kLdbAlign) * kLdbAlign;
  std::vector<int64_t> padded(rows * d.ld, 0);
  for (int64_t r = 0; r < src_rows; ++r)
    for (int64_t t = 0; t < k; ++t) padded[r * d.ld + t] = src[r * k + t];
  for (const Chunk &c : chunks) d.planes.push_back(pack_plane(padded, c));
  return d;
}
}  // namespace

// The padded copy pack_k_rows makes of `rows` K-long rows, checked before it is allocated.
static llvm::Error check_k_rows(const char *name, int64_t rows, int64_t k) {
  const int64_t ld = std::max<int64_t>(1, (k + kLdbAlign - 1) / kLdbAlign) * kLdbAlign;
  return check_host_alloc(std::string(name) + ": its padded copy (rows x K rounded up, int64)", rows,
                          checked_mul(ld, 8).value_or(INT64_MAX));
}

llvm::Expected<PackedDense> pack_sddmm_lhs(const std::vector<int64_t> &a, int64_t m, int64_t k, const Plan &plan) {
  if (auto e = check_range_dense(a, m, k, false, plan.spec.lhs, "lhs A")) return e;
  int64_t v = plan.spec.v;
  if (auto e = check_k_rows("lhs A", (m + v - 1) / v * v, k)) return e;
  return pack_k_rows(a, (m + v - 1) / v * v, m, k, plan.lhs);
}

llvm::Expected<PackedDense> pack_sddmm_rhs(const std::vector<int64_t> &b, int64_t k, int64_t n, const Plan &plan) {
  if (auto e = check_range_dense(b, k, n, true, plan.spec.rhs, "rhs B")) return e;
  if (auto e = check_k_rows("rhs B", n, k)) return e;
  return pack_k_rows(b, n, n, k, plan.rhs);  // column-major B: column c is K-contiguous at c * k
}

llvm::Error check_dense_pitch(int64_t k, int64_t ld) {
  if (ld % 128 == 0 && ld >= (k + 127) / 128 * 128) return llvm::Error::success();
  return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                 "sddmm: the operands' pitch " + std::to_string(ld) + " is not a multiple of 128 covering K=" +
                                     std::to_string(k) + " (pack them with Sddmm::pack_lhs and pack_rhs)");
}

}  // namespace magicube
