// magicube_packed_check, through libmagicube.so (C++17, the public headers only): every blob
// magicube_pack writes passes, on every layout (ring, resident, split, generic, 4-bit planes,
// chunked types, the decode kernel whole, in K panels and in shares, SDDMM masks, the dense
// route with and without row sums); a blob altered where a kernel would read outside an array,
// past its exactness bound or a value outside the type is refused, the message naming what is
// wrong; random edits anywhere give success or a refusal, never a crash (CI's sanitizer build
// runs this too); and magicube_spmm_host refuses a bad blob before any device work.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <functional>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "magicube/magicube.h"
#include "magicube/magicube.hpp"

namespace {

using OpPtr = std::unique_ptr<magicube_op, void (*)(magicube_op *)>;

// An M x K weight: each V x 1 vector present with probability `density`, its values uniform in
// [lo, hi] (a present vector gets one nonzero at least); row-block 1 left empty.
std::vector<int16_t> weight(int64_t m, int64_t k, int v, double density, int lo, int hi, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> keep(0, 1);
  std::uniform_int_distribution<int> val(lo, hi);
  std::vector<int16_t> w(size_t(m * k), 0);
  for (int64_t b = 0; b * v < m; ++b)
    for (int64_t c = 0; c < k; ++c) {
      if (b == 1 || keep(rng) >= density) continue;
      for (int64_t r = b * v; r < std::min<int64_t>(m, (b + 1) * v); ++r) w[size_t(r * k + c)] = int16_t(val(rng));
      if (w[size_t(b * v * k + c)] == 0) w[size_t(b * v * k + c)] = int16_t(hi);
    }
  return w;
}

struct Case {
  const char *spec;
  int64_t m, k;
  int lo, hi;
  int dense = MAGICUBE_DENSE_NEVER;
};

struct Packed {
  OpPtr op{nullptr, magicube_op_destroy};
  std::vector<uint8_t> blob;
  magicube_packed_header h{};
  std::string why;  // why there is no op (the dense route without cuBLASLt)
};

Packed pack(const Case &c, uint32_t seed = 7) {
  Packed p;
  const int v = std::stoi(std::string(c.spec).substr(std::string(c.spec).find(".v") + 2));
  const std::vector<int16_t> w = weight(c.m, c.k, v, 0.3, c.lo, c.hi, seed);
  const magicube_matrix m = magicube::dense_matrix(w.data(), c.m, c.k);
  const magicube_op_options_ex o{sizeof(magicube_op_options_ex), -1, 0, c.dense};
  magicube_op *raw = nullptr;
  if (magicube_op_create_ex(c.spec, &m, 16, &o, &raw) != MAGICUBE_SUCCESS) {
    p.why = magicube_last_error();
    return p;
  }
  p.op.reset(raw);
  magicube_packed *pw = nullptr;
  EXPECT_EQ(magicube_pack(raw, &m, &pw), MAGICUBE_SUCCESS) << c.spec << ": " << magicube_last_error();
  if (!pw) return p;
  const auto *d = static_cast<const uint8_t *>(magicube_packed_data(pw));
  p.blob.assign(d, d + magicube_packed_bytes(pw));
  p.h = *magicube_packed_get_header(pw);
  magicube_packed_destroy(pw);
  return p;
}

int check(const Packed &p, const std::vector<uint8_t> &blob) {
  return magicube_packed_check(p.op.get(), blob.data(), blob.size(), nullptr);
}

template <class T>
T get(const std::vector<uint8_t> &b, int64_t off) {
  T x;
  std::memcpy(&x, b.data() + off, sizeof x);
  return x;
}
template <class T>
void put(std::vector<uint8_t> &b, int64_t off, T x) {
  std::memcpy(b.data() + off, &x, sizeof x);
}

// The blob with `edit` applied (to its bytes, or to its header, which is written back) is
// refused, the message holding `needle`.
void refused(const Packed &p, const std::function<void(std::vector<uint8_t> &, magicube_packed_header &)> &edit,
             const std::string &needle) {
  std::vector<uint8_t> b = p.blob;
  magicube_packed_header h = p.h;
  edit(b, h);
  if (std::memcmp(&h, &p.h, sizeof h) != 0) std::memcpy(b.data(), &h, sizeof h);
  EXPECT_EQ(check(p, b), MAGICUBE_ERROR_INVALID) << "want a refusal naming \"" << needle << "\"";
  const std::string e = magicube_last_error();
  EXPECT_NE(e.find(needle), std::string::npos) << "want \"" << needle << "\" in: " << e;
}

// The cases: every layout pack_lhs, pack_mask and the dense route write.
const Case kRing{"spmm.s8xs8.v8.n64.pf.i32.sm_90", 40, 200, -128, 127};
const Case kDecode{"spmm.s8xs8.v8.n16d.i32.sm_90", 40, 300, -128, 127};
const Case kPanels{"spmm.s8xs8.v8.n48dp4800.i32.sm_90", 24, 9700, -128, 127};
const Case kMask{"sddmm.s8xs8.v8.i32.sm_90", 40, 300, 1, 1};
const std::vector<Case> kAll = {
    kRing,
    {"spmm.s8xs8.v8.n48r.i32.sm_90", 40, 200, -128, 127},     // resident B: bank-balanced slots
    {"spmm.s8xs8.v8.n64k2.i32.sm_90", 40, 200, -128, 127},    // split
    {"spmm.u3xs7.v2.i32.sm_90", 37, 90, 0, 7},                // odd widths, V=2, M not a multiple of V
    {"spmm.s12xu4.v4.i32.sm_80", 36, 100, -2048, 2047},       // two chunks, 4-bit B planes
    {"spmm.s4xs8.v8.n64.i32.sm_80", 40, 200, -8, 7},          // 4-bit A planes
    kDecode,
    {"spmm.s4xs8.v8.n16d.i32.sm_90", 40, 300, -8, 7},         // decode, 4-bit A
    {"spmm.s8xs8.v2.n16d.i32.sm_90", 18, 300, -128, 127},     // decode, V=2
    {"spmm.s8xs8.v8.n48dw20s.i32.sm_90", 40, 300, -128, 127}, // decode in shares
    kPanels,
    kMask,
    {"spmm.s8xs8.v8.i32.sm_90", 24, 40, -128, 127, MAGICUBE_DENSE_FORCED},  // one plane
    {"spmm.u8xu8.v8.i32.sm_90", 24, 40, 0, 255, MAGICUBE_DENSE_FORCED},     // offsets: row sums
    {"spmm.s12xs8.v8.i32.sm_90", 24, 40, -2048, 2047, MAGICUBE_DENSE_FORCED},  // two planes
};

TEST(PackedCheck, EveryPackedLayoutPasses) {
  for (const Case &c : kAll) {
    SCOPED_TRACE(c.spec);
    const Packed p = pack(c);
    if (!p.op) {
      EXPECT_EQ(c.dense, MAGICUBE_DENSE_FORCED) << p.why;  // only the dense route may be missing here
      continue;
    }
    magicube_packed_header read{};
    ASSERT_EQ(magicube_packed_check(p.op.get(), p.blob.data(), p.blob.size(), &read), MAGICUBE_SUCCESS)
        << magicube_last_error();
    EXPECT_EQ(std::memcmp(&read, &p.h, sizeof read), 0);
    EXPECT_EQ(magicube_packed_check(p.op.get(), p.blob.data(), p.blob.size(), nullptr), MAGICUBE_SUCCESS);
  }
}

TEST(PackedCheck, ArgumentsAndHeaderAreCheckedFirst) {
  const Packed p = pack(kRing);
  ASSERT_TRUE(p.op) << p.why;
  EXPECT_EQ(magicube_packed_check(nullptr, p.blob.data(), p.blob.size(), nullptr), MAGICUBE_ERROR_INVALID);
  EXPECT_EQ(magicube_packed_check(p.op.get(), nullptr, p.blob.size(), nullptr), MAGICUBE_ERROR_INVALID);
  EXPECT_EQ(magicube_packed_check(p.op.get(), p.blob.data(), 100, nullptr), MAGICUBE_ERROR_INVALID);
  EXPECT_NE(std::string(magicube_last_error()).find("shorter than the 256-byte header"), std::string::npos);
  EXPECT_EQ(magicube_packed_check(p.op.get(), p.blob.data(), p.blob.size() - 256, nullptr), MAGICUBE_ERROR_INVALID);
  // Another op's blob: refused by plan before the body is read.
  const Packed d = pack(kDecode);
  ASSERT_TRUE(d.op) << d.why;
  EXPECT_EQ(magicube_packed_check(p.op.get(), d.blob.data(), d.blob.size(), nullptr), MAGICUBE_ERROR_INVALID);
  EXPECT_NE(std::string(magicube_last_error()).find("packed for another plan"), std::string::npos);
  // Counts so large that their byte sizes would wrap 64 bits.
  refused(p, [](auto &, auto &h) { h.num_blocks = int64_t{1} << 61; }, "row_ptr lies outside the blob");
  refused(p, [](auto &, auto &h) { h.num_slots = (int64_t{1} << 39) + 1; }, "col_idx lies outside the blob");
  refused(p, [](auto &, auto &h) { h.plane_bytes[0] = INT64_MAX; }, "a plane lies outside the blob");
  refused(p, [](auto &, auto &h) { h.num_blocks += 1; }, "row-blocks for 40 rows of V=8 (want 5)");
  refused(p, [](auto &, auto &h) { h.stride = 16; }, "stride 16, the plan's is 32");
  refused(p, [](auto &, auto &h) { h.plane_bytes[0] -= 1; }, "plane 0 takes");
  refused(p, [](auto &, auto &h) { h.v = 4; }, "V=4 but the plan's V is 8");
  // Counts whose output sizes would wrap (magicube_output_bytes multiplies them).
  refused(p, [](auto &, auto &h) { h.v = int64_t{1} << 61; }, "(allowed: V 1..1024, M and K 0..2^31-1");
  refused(p, [](auto &, auto &h) { h.num_vectors = -1; }, "(allowed: V 1..1024, M and K 0..2^31-1");
  // Arrays where the kernels' 16-byte loads would fault: every array starts 256-byte aligned.
  refused(p, [](auto &, auto &h) { h.plane_offset[0] += 16, h.plane_bytes[0] -= 16; }, "a plane is not 256-byte aligned");
  refused(p, [](auto &, auto &h) { h.row_ptr_offset += 4; }, "row_ptr is not 256-byte aligned");
  refused(p, [](auto &, auto &h) { h.col_idx_offset += 8, h.num_slots -= 2; }, "col_idx is not 256-byte aligned");
}

TEST(PackedCheck, StridedLayoutRefusals) {
  const Packed p = pack(kRing);
  ASSERT_TRUE(p.op) << p.why;
  const magicube_packed_header &h = p.h;
  const int64_t rp = h.row_ptr_offset, ci = h.col_idx_offset;
  ASSERT_EQ(h.stride, 32);
  ASSERT_GE(get<int32_t>(p.blob, rp + 4), 2);  // row-block 0 holds two vectors at least
  // The first real slot of row-block 0 (slots are shuffled within groups).
  int64_t real = 0;
  while (get<int32_t>(p.blob, ci + 4 * real) < 0) ++real;
  int64_t other = real + 1;
  while (get<int32_t>(p.blob, ci + 4 * other) < 0) ++other;
  refused(p, [&](auto &b, auto &) { put<int32_t>(b, ci + 4 * real, 200); }, "is 200, outside A's K=200 (pads are -1)");
  refused(p, [&](auto &b, auto &) { put<int32_t>(b, ci + 4 * real, -5); }, "is -5, outside A's K=200");
  refused(p, [&](auto &b, auto &) { put<int32_t>(b, ci + 4 * other, get<int32_t>(b, ci + 4 * real)); }, "twice");
  refused(p, [&](auto &b, auto &) { put<int32_t>(b, ci + 4 * real, -1); }, "in a pad (pads hold 0)");
  refused(p, [&](auto &b, auto &) { put<int32_t>(b, rp + 4, get<int32_t>(b, rp + 4) + 1); }, "its row_ptr says");
  refused(p, [&](auto &b, auto &) { put<int32_t>(b, rp + 4, -1); }, "row_ptr of row-block 0 is [0, -1)");
  refused(p, [&](auto &b, auto &) { put<int32_t>(b, rp + 8, get<int32_t>(b, rp + 8) + 32); }, "want it to start at slot");
  refused(p, [&](auto &b, auto &) { put<int32_t>(b, rp + 8 * (h.num_blocks - 1) + 4, int32_t(h.num_slots + 1)); },
          "end within the");
  // Every value of row-block 0's last stride set to 1: its pads must hold 0.
  const int64_t end0 = get<int32_t>(p.blob, rp + 4);
  ASSERT_NE(end0 % 32, 0) << "row-block 0's last stride has pads";
  refused(p, [&](auto &b, auto &) { std::memset(b.data() + h.plane_offset[0] + end0 / 32 * 32 * 8, 1, 32 * 8); },
          "in a pad (pads hold 0)");
  refused(p, [&](auto &, auto &x) { x.max_block_length -= 1; }, "the header's max_block_length says");
  refused(p, [&](auto &, auto &x) { x.num_vectors += 1; }, "the header's num_vectors says");
  refused(p, [&](auto &, auto &x) { x.max_block_length = int64_t{1} << 40; }, "packed: ");
}

TEST(PackedCheck, ValuesOutsideTheTypeOrPastMAreRefused) {
  // u3: a stored 8 is no u3 value's chunk.
  const Packed u = pack({"spmm.u3xs7.v2.i32.sm_90", 37, 90, 0, 7});
  ASSERT_TRUE(u.op) << u.why;
  refused(u, [&](auto &b, auto &) { std::memset(b.data() + u.h.plane_offset[0], 8, size_t(u.h.plane_bytes[0])); },
          "hold bits no u3 value's chunks have");
  // Rows past M: M = 33, so the last row-block (rows 32..39) is one full stride of 32 vectors
  // (no pads); its rows 33..39 must hold 0.
  std::vector<int16_t> w(33 * 64, 0);
  for (int c = 0; c < 32; ++c) w[size_t(32 * 64 + c)] = 1, w[size_t(c)] = 2;
  const magicube_matrix m = magicube::dense_matrix(w.data(), 33, 64);
  magicube::Op op("spmm.s8xs8.v8.n64.pf.i32.sm_90");
  const magicube::Packed pw = op.pack(m);
  Packed p;
  magicube_op *raw = nullptr;
  ASSERT_EQ(magicube_op_create("spmm.s8xs8.v8.n64.pf.i32.sm_90", nullptr, 0, nullptr, &raw), MAGICUBE_SUCCESS);
  p.op.reset(raw);
  p.blob.assign(static_cast<const uint8_t *>(pw.data()), static_cast<const uint8_t *>(pw.data()) + pw.bytes());
  p.h = pw.header();
  ASSERT_EQ(check(p, p.blob), MAGICUBE_SUCCESS) << magicube_last_error();
  EXPECT_EQ(op.check_packed(pw.data(), pw.bytes()).num_vectors, 64);  // the C++ header's form
  const int64_t last = p.h.plane_offset[0] + (p.h.num_slots - 32) * 8;  // the last stride's values
  refused(p, [&](auto &b, auto &) { std::memset(b.data() + last, 1, 32 * 8); }, "in row 33, past M=33 (those rows hold 0)");
  std::vector<uint8_t> fine = p.blob;
  fine[size_t(last)] = 0x80;  // -128 in row 32: an s8 value
  EXPECT_EQ(check(p, fine), MAGICUBE_SUCCESS) << magicube_last_error();
}

TEST(PackedCheck, DecodeScheduleAndIndexRefusals) {
  const Packed p = pack(kDecode);
  ASSERT_TRUE(p.op) << p.why;
  const magicube_packed_header &h = p.h;
  const int64_t ci = h.col_idx_offset, t = h.num_slots / 32, meta = ci + 64 * t, next = ci + 68 * t;
  // A real slot: row-block 0's first (the bank-balanced order may put pads anywhere: find one
  // whose column is not its pad form).
  int64_t real = 0;
  while ((get<uint16_t>(p.blob, ci + 2 * real) & 0x7fff) == real % 8) ++real;
  ASSERT_LT(real, 32);
  refused(p, [&](auto &b, auto &) { put<uint16_t>(b, ci + 2 * real, uint16_t(get<uint16_t>(b, ci + 2 * real) ^ 0x8000)); },
          "bit 15 of column index");
  refused(p, [&](auto &b, auto &) { put<uint16_t>(b, ci + 2 * real, uint16_t((get<uint16_t>(b, ci + 2 * real) & 0x8000) | 300)); },
          "is 300, outside A's K=300");
  refused(p, [&](auto &b, auto &) { put<uint32_t>(b, meta, get<uint32_t>(b, meta) ^ (1u << 30)); }, "stride_meta[0]");
  refused(p, [&](auto &b, auto &) { put<uint32_t>(b, meta + 4 * (t - 1), 7); }, "stride_meta[");
  refused(p, [&](auto &b, auto &) { put<int32_t>(b, next + 4, get<int32_t>(b, next + 4) + 1); }, "stride_next[1]");
  refused(p, [&](auto &b, auto &) { put<int32_t>(b, h.row_ptr_offset, 32); }, "row_ptr of row-block 0");
  refused(p, [&](auto &, auto &x) { x.num_slots -= 32; }, "");
  refused(p, [&](auto &, auto &x) { x.max_block_length -= 1; }, "the header's max_block_length says");
  // Row-block 1 is empty: its one stride holds pads only (columns slot % 8). Nonzero values
  // there would name columns 0..7 four times each.
  const int64_t rb1 = get<int32_t>(p.blob, h.row_ptr_offset + 8) / 32;  // its stride
  refused(p, [&](auto &b, auto &) { std::memset(b.data() + h.plane_offset[0] + rb1 * 32 * 8, 3, 32 * 8); },
          "row-block 1 names column 0 twice");
}

TEST(PackedCheck, DecodePanelRefusals) {
  const Packed p = pack(kPanels);
  ASSERT_TRUE(p.op) << p.why;
  const magicube_packed_header &h = p.h;
  const int64_t ci = h.col_idx_offset, t = h.num_slots / 32, pf = ci + 72 * t + 4;
  // 3 panels of 4800, 4800 and 100 rows; 3 row-blocks: panel_first has 10 entries.
  EXPECT_EQ(get<int32_t>(p.blob, pf + 4 * 9), t);
  refused(p, [&](auto &b, auto &) { put<int32_t>(b, pf + 4, get<int32_t>(b, pf + 4) + 1); }, "panel_first[1]");
  // The last panel's first row-block: a column past its 100 rows.
  const int64_t s = get<int32_t>(p.blob, pf + 4 * 6), slot = s * 32;
  int64_t real = slot;
  while ((get<uint16_t>(p.blob, ci + 2 * real) & 0x7fff) == real % 8) ++real;
  ASSERT_LT(real, slot + 32);
  refused(p, [&](auto &b, auto &) { put<uint16_t>(b, ci + 2 * real, uint16_t((get<uint16_t>(b, ci + 2 * real) & 0x8000) | 100)); },
          "(row-block 0, K panel 2) is 100, outside its panel's 100 rows");
  refused(p, [&](auto &, auto &x) { x.max_block_length = 1; }, "nonzero vectors, the header's max_block_length says 1");
}

TEST(PackedCheck, MaskRefusals) {
  const Packed p = pack(kMask);
  ASSERT_TRUE(p.op) << p.why;
  const magicube_packed_header &h = p.h;
  const int64_t ci = h.col_idx_offset, bp = h.bcrs_ptr_offset;
  ASSERT_GE(get<int32_t>(p.blob, h.row_ptr_offset + 4), 2);
  refused(p, [&](auto &b, auto &) { put<int32_t>(b, ci + 4, get<int32_t>(b, ci)); }, "increasing, then -1 for its pads");
  refused(p, [&](auto &b, auto &) { put<int32_t>(b, ci, 300); }, "is 300: want the row-block's columns in [0, N=300)");
  refused(p, [&](auto &b, auto &) { put<int64_t>(b, bp + 8, get<int64_t>(b, bp + 8) + 1); }, "bcrs_ptr[1]");
  refused(p, [&](auto &, auto &x) { x.stride = 0; }, "stride 0 (allowed: 1..1024)");
}

TEST(PackedCheck, DenseCopyRefusals) {
  const Packed s = pack(kAll[12]);
  if (!s.op) GTEST_SKIP() << s.why;
  refused(s, [&](auto &, auto &x) { x.max_block_length -= 1; }, "of the dense copy holds");
  const Packed u = pack({"spmm.u3xs7.v8.i32.sm_90", 24, 40, 0, 7, MAGICUBE_DENSE_FORCED});
  ASSERT_TRUE(u.op) << u.why;
  refused(u, [&](auto &b, auto &) { b[size_t(u.h.dense_offset)] = 100; }, "the dense copy's A[0, 0] is not a u3 value's chunks");
  // s16 x s16 into int32: the plan's exactness bound admits one vector a row-block, so a copy
  // whose header claims longer rows (and holds them) is refused.
  {
    std::vector<int16_t> one(24 * 40, 0);
    one[3] = one[40 + 3] = 1000, one[16 * 40 + 7] = -5;  // a vector in row-blocks 0 and 2
    const magicube_matrix m = magicube::dense_matrix(one.data(), 24, 40);
    const magicube_op_options_ex o{sizeof(magicube_op_options_ex), -1, 0, MAGICUBE_DENSE_FORCED};
    magicube_op *raw = nullptr;
    ASSERT_EQ(magicube_op_create_ex("spmm.s16xs16.v8.i32.sm_90", &m, 16, &o, &raw), MAGICUBE_SUCCESS) << magicube_last_error();
    Packed w;
    w.op.reset(raw);
    magicube_packed *pw = nullptr;
    ASSERT_EQ(magicube_pack(raw, &m, &pw), MAGICUBE_SUCCESS) << magicube_last_error();
    const auto *d = static_cast<const uint8_t *>(magicube_packed_data(pw));
    w.blob.assign(d, d + magicube_packed_bytes(pw));
    w.h = *magicube_packed_get_header(pw);
    magicube_packed_destroy(pw);
    ASSERT_EQ(w.h.route, 1);
    EXPECT_EQ(check(w, w.blob), MAGICUBE_SUCCESS) << magicube_last_error();
    refused(w, [&](auto &b, auto &x) { x.max_block_length = 2, b[size_t(x.dense_offset) + 9] = 1; },
            "reduction length K=2 exceeds max_exact_k=1");
  }
  const Packed r = pack(kAll[13]);  // u8 x u8: B's chunk has an offset, so A's row sums follow its plane
  ASSERT_TRUE(r.op) << r.why;
  const int64_t sums = r.h.dense_offset + (r.h.dense_bytes - 24 * 4);
  refused(r, [&](auto &b, auto &) { put<int32_t>(b, sums + 8, get<int32_t>(b, sums + 8) + 1); }, "row sum 2 of plane 0");
}

TEST(PackedCheck, RandomEditsGiveSuccessOrARefusal) {
  std::mt19937 rng(11);
  for (const Case &c : kAll) {
    SCOPED_TRACE(c.spec);
    const Packed p = pack(c);
    if (!p.op) continue;
    int refusals = 0;
    for (int it = 0; it < 300; ++it) {
      std::vector<uint8_t> b = p.blob;
      const int edits = 1 + int(rng() % 4);
      for (int e = 0; e < edits; ++e) {
        // Mostly the body; one edit in eight lands in the header's counts and offsets.
        const size_t at = rng() % 8 == 0 ? 32 + rng() % 224 : 256 + rng() % (b.size() - 256);
        b[at] = uint8_t(rng());
      }
      const int status = check(p, b);
      ASSERT_TRUE(status == MAGICUBE_SUCCESS || status == MAGICUBE_ERROR_INVALID) << status;
      refusals += status == MAGICUBE_ERROR_INVALID;
    }
    EXPECT_GT(refusals, 0);
  }
}

TEST(PackedCheck, HostRunRefusesABadBlobBeforeAnyDeviceWork) {
  const Packed p = pack(kRing);
  ASSERT_TRUE(p.op) << p.why;
  std::vector<uint8_t> b = p.blob;
  put<int32_t>(b, p.h.col_idx_offset + 4 * 40, 1 << 20);
  std::vector<int8_t> bm(200 * 4, 1);
  std::vector<int32_t> cm(40 * 4, 0);
  const magicube_dense bd{bm.data(), MAGICUBE_INT8, MAGICUBE_ROW_MAJOR}, cd{cm.data(), MAGICUBE_INT32, MAGICUBE_ROW_MAJOR};
  EXPECT_EQ(magicube_spmm_host(p.op.get(), &p.h, b.data(), &bd, 4, &cd, nullptr), MAGICUBE_ERROR_INVALID);
  EXPECT_NE(std::string(magicube_last_error()).find("outside A's K=200"), std::string::npos) << magicube_last_error();
  // The header passed must be the blob's own (its sizes are what the upload reads).
  magicube_packed_header other = p.h;
  other.total_bytes += 256;
  EXPECT_EQ(magicube_spmm_host(p.op.get(), &other, p.blob.data(), &bd, 4, &cd, nullptr), MAGICUBE_ERROR_INVALID);
  EXPECT_NE(std::string(magicube_last_error()).find("header: not the header the blob starts with"), std::string::npos)
      << magicube_last_error();
}

}  // namespace
