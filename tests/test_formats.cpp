// Vector-sparse builders (dense, CSR, COO) and the SR-BCRS layout.
#include <gtest/gtest.h>

#include "compiler/codegen.h"
#include "compiler/plan_interpreter.h"
#include "compiler/planner.h"
#include "runtime/packing.h"
#include "runtime/reference.h"
#include "runtime/srbcrs.h"
#include "runtime/vector_sparse.h"
#include "tests/test_util.h"

using namespace magicube;

namespace {

std::string error_of(llvm::Expected<VectorSparse> r) { return r ? "" : llvm::toString(r.takeError()); }

TEST(Formats, DenseCsrAndCooAgree) {
  std::mt19937_64 rng(3);
  const int64_t rows = 11, cols = 9;
  std::vector<int64_t> dense(rows * cols, 0);
  for (auto &x : dense)
    if (rng() % 3 == 0) x = int64_t(rng() % 200) - 100;
  std::vector<int64_t> rp{0}, ci, vals, ri;
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t c = 0; c < cols; ++c)
      if (dense[r * cols + c]) ci.push_back(c), vals.push_back(dense[r * cols + c]), ri.push_back(r);
    rp.push_back(int64_t(ci.size()));
  }
  for (int v : {1, 2, 4, 8}) {
    VectorSparse d = vector_sparse_from_dense(dense, rows, cols, v);
    auto c = vector_sparse_from_csr(rows, cols, rp, ci, vals, v);
    ASSERT_TRUE(bool(c)) << llvm::toString(c.takeError());
    // COO in reverse order: the builder sorts.
    std::vector<int64_t> rr(ri.rbegin(), ri.rend()), cc(ci.rbegin(), ci.rend()), vv(vals.rbegin(), vals.rend());
    auto o = vector_sparse_from_coo(rows, cols, rr, cc, vv, v);
    ASSERT_TRUE(bool(o)) << llvm::toString(o.takeError());
    EXPECT_EQ(to_dense(d), dense);
    EXPECT_EQ(to_dense(*c), dense);
    EXPECT_EQ(to_dense(*o), dense);
    EXPECT_EQ(d.col, c->col);
    EXPECT_EQ(d.block_ptr, o->block_ptr);
    EXPECT_EQ(d.num_blocks(), (rows + v - 1) / v);
  }
}

TEST(Formats, MalformedCsrAndCooAreRefusedWithTheIndex) {
  auto has = [](const std::string &m, const char *p) {
    return m.find(p) != std::string::npos ? ::testing::AssertionSuccess() : ::testing::AssertionFailure() << m;
  };
  EXPECT_TRUE(has(error_of(vector_sparse_from_csr(2, 4, {0, 2, 1}, {0, 1}, {1, 1}, 1)), "row_ptr decreases at row 1"));
  EXPECT_TRUE(has(error_of(vector_sparse_from_csr(2, 4, {0, 1, 2}, {0, 4}, {1, 1}, 1)), "column index 4 at position 1"));
  EXPECT_TRUE(has(error_of(vector_sparse_from_csr(2, 4, {0, 1, 3}, {0, 1}, {1, 1}, 1)), "nnz mismatch"));
  EXPECT_TRUE(has(error_of(vector_sparse_from_csr(2, 4, {0, 2}, {0, 1}, {1, 1}, 1)), "rows+1 = 3"));
  EXPECT_TRUE(has(error_of(vector_sparse_from_csr(1, 4, {0, 2}, {2, 1}, {1, 1}, 1)), "not strictly increasing"));
  EXPECT_TRUE(has(error_of(vector_sparse_from_coo(2, 4, {0, 2}, {0, 1}, {1, 1}, 1)), "row index 2 at entry 1"));
  EXPECT_TRUE(has(error_of(vector_sparse_from_coo(2, 4, {0, 0}, {1, 1}, {1, 1}, 1)), "duplicate entry at (0, 1)"));
  EXPECT_TRUE(has(error_of(vector_sparse_from_coo(2, 4, {0}, {1, 1}, {1, 1}, 1)), "nnz mismatch"));
}

TEST(Formats, SrBcrsPadsEachRowBlockToTheStride) {
  std::mt19937_64 rng(4);
  ElemType t{8, true};
  VectorSparse a = magicube::testing::random_vector_sparse(rng, 29, 70, 4, 70, t);
  SrBcrs s = build_srbcrs(a, 32, false, {0, 1, 2, 3, 4, 5, 6, 7});
  ASSERT_EQ(s.num_blocks(), a.num_blocks());
  for (int64_t b = 0; b < s.num_blocks(); ++b) {
    int64_t n = a.block_ptr[b + 1] - a.block_ptr[b];
    EXPECT_EQ(s.row_ptr[2 * b] % 32, 0);
    EXPECT_EQ(s.row_ptr[2 * b + 1] - s.row_ptr[2 * b], n);
    if (b + 1 < s.num_blocks()) {
      EXPECT_EQ(s.row_ptr[2 * b + 2], s.padded_end(b));
    }
    for (int64_t q = s.row_ptr[2 * b]; q < s.padded_end(b); ++q) {
      int64_t i = a.block_ptr[b] + (q - s.row_ptr[2 * b]);
      bool real = q < s.row_ptr[2 * b + 1];
      EXPECT_EQ(s.col_idx[q], real ? a.col[i] : -1);
      for (int r = 0; r < 4; ++r) EXPECT_EQ(s.values[s.value_index(q, r)], real ? a.values[i * 4 + r] : 0);
    }
  }
  // Row-major strides: row r of a stride is 32 contiguous values.
  EXPECT_EQ(s.value_index(33, 2), 32 * 4 + 2 * 32 + 1);
  auto e = check_range(s, t, "lhs A");
  EXPECT_FALSE(bool(e));
  auto e2 = check_range(s, {7, false}, "lhs A");
  ASSERT_TRUE(bool(e2));
  EXPECT_NE(llvm::toString(std::move(e2)).find("is outside u7's range [0, 127]"), std::string::npos);
}

TEST(Formats, ReferenceSpmmMatchesDenseProduct) {
  std::mt19937_64 rng(5);
  ElemType t{5, true};
  VectorSparse a = magicube::testing::random_vector_sparse(rng, 10, 12, 2, 12, t);
  std::vector<int64_t> b = magicube::testing::random_dense(rng, 12 * 3, t);
  auto c = reference_spmm(a, b, 3);
  auto d = to_dense(a);
  for (int64_t i = 0; i < 10; ++i)
    for (int64_t j = 0; j < 3; ++j) {
      int64_t s = 0;
      for (int64_t k = 0; k < 12; ++k) s += d[i * 12 + k] * b[k * 3 + j];
      EXPECT_EQ(c[i * 3 + j], s);
    }
}

}  // namespace

// A resident-B plan's B: slices of BSn columns, each K rows of BSn contiguous, the 16-byte
// units of row r at u ^ resident_swizzle(r, units); zeros past N.
TEST(Formats, ResidentRhsIsSlicedAndSwizzled) {
  for (auto [rt, bsn] : {std::pair<ElemType, int>{{8, true}, 32}, {{4, false}, 64}, {{8, false}, 128}, {{8, true}, 48}, {{4, true}, 96}}) {
    OpSpec s{OpKind::SpMM, {8, true}, rt, 8, bsn, true, OutType::Int32, 90};
    s.resident = true;
    auto p = plan(s);
    ASSERT_TRUE(bool(p));
    const int64_t k = 13, n = bsn + 7;  // two slices, the second mostly padding
    std::mt19937_64 rng(5);
    std::vector<int64_t> b = magicube::testing::random_dense(rng, k * n, rt);
    auto pb = pack_rhs(b, k, n, *p);
    ASSERT_TRUE(bool(pb)) << llvm::toString(pb.takeError());
    EXPECT_EQ(pb->ldb, bsn);
    const Chunk &c = p->rhs[0];
    const int64_t row_bytes = bsn * c.storage_bits / 8, units = row_bytes / 16, per_unit = 128 / c.storage_bits;
    ASSERT_EQ(int64_t(pb->planes[0].size()), 2 * k * row_bytes);
    for (int64_t r = 0; r < k; ++r)
      for (int64_t col = 0; col < 2 * bsn; ++col) {
        const int64_t sl = col / bsn, x = col % bsn;
        const int64_t e = (sl * k + r) * bsn + ((x / per_unit) ^ resident_swizzle(r, int(units))) * per_unit + x % per_unit;
        const uint8_t byte = pb->planes[0][e * c.storage_bits / 8];
        const int64_t got = c.storage_bits == 8 ? byte : (byte >> (4 * (e & 1))) & 15;
        const int64_t want = col < n ? chunk_value(b[r * n + col], c) & (c.storage_bits == 8 ? 0xff : 0xf) : 0;
        ASSERT_EQ(got, want) << rt.str() << " row " << r << " column " << col;
      }
  }
}

// A decode plan's A: the resident plans' bank-balanced SR-BCRS, every row-block one stride at
// least, its column indices 16-bit in the first half of col_idx's words (bits 0-14 the column,
// a pad at slot i row i % 8; bit 15 of slot i bit i % 32 of its stride's schedule word) and the
// strides' schedule in the second; B as one resident slice; K past 15 bits refused.
TEST(Formats, DecodeLhsHas16BitColumnIndices) {
  OpSpec s{OpKind::SpMM, {8, true}, {8, true}, 8, 16, true, OutType::Int32, 90};
  s.resident = s.decode = true;
  auto p = plan(s);
  ASSERT_TRUE(bool(p));
  ASSERT_EQ(p->launch.family, KernelFamily::SpmmDecode);
  std::mt19937_64 rng(7);
  VectorSparse a = magicube::testing::random_vector_sparse(rng, 77, 300, 8, 300, s.lhs);
  auto layout = build_srbcrs(a, *p);
  ASSERT_TRUE(bool(layout)) << llvm::toString(layout.takeError());
  EXPECT_TRUE(layout->bank_balanced);
  auto pa = pack_lhs(*layout, *p);
  ASSERT_TRUE(bool(pa)) << llvm::toString(pa.takeError());
  EXPECT_EQ(pa->index_bits, 16);
  // Every row-block keeps its slots (pads anywhere in them) and gets one stride at least: an
  // empty one a stride of pads, its row pointers saying 0 vectors.
  const int64_t nb = layout->num_blocks();
  ASSERT_EQ(pa->row_ptr.size(), size_t(2 * nb));
  const auto *u16 = reinterpret_cast<const uint16_t *>(pa->col_idx.data());
  int pads = 0, empties = 0;
  int64_t next_first = 0;
  std::vector<int64_t> meta_want;
  for (int64_t b = 0; b < nb; ++b) {
    const int64_t o = layout->row_ptr[2 * b], len = layout->padded_end(b) - o, n0 = pa->row_ptr[2 * b];
    ASSERT_EQ(n0, next_first) << "row-block " << b << " starts where the one before ends";
    ASSERT_EQ(pa->row_ptr[2 * b + 1] - n0, layout->row_ptr[2 * b + 1] - o) << "row-block " << b << "'s vectors";
    const int64_t strides = std::max<int64_t>(1, len / 32);
    empties += len == 0;
    for (int64_t st = 0; st < strides; ++st)
      meta_want.push_back(b | (st == 0 ? 1ll << 30 : 0) | (st + 1 == strides ? 1ll << 31 : 0));
    for (int64_t i = 0; i < strides * 32; ++i) {
      const int32_t c = i < len ? layout->col_idx[size_t(o + i)] : -1;
      ASSERT_EQ(u16[n0 + i] & 0x7fff, c < 0 ? i % 8 : c) << "row-block " << b << " slot " << i;
      const int64_t word = meta_want[meta_want.size() - size_t(strides) + size_t(i / 32)];
      ASSERT_EQ(u16[n0 + i] >> 15, (word >> (i % 32)) & 1) << "row-block " << b << " slot " << i << ": schedule bit";
      pads += c < 0;
    }
    next_first = n0 + strides * 32;
  }
  EXPECT_GT(pads, 0);
  EXPECT_GT(empties, 0) << "the matrix should have an empty row-block";
  const int64_t t = next_first / 32;
  ASSERT_EQ(int64_t(pa->col_idx.size()), t * 32);
  // The schedule in col_idx's second half: stride_meta[T], then stride_next[T + 1].
  auto sched = decode_schedule(pa->col_idx.size() * 4, nb);
  ASSERT_TRUE(bool(sched)) << llvm::toString(sched.takeError());
  EXPECT_EQ(sched->strides, t);
  const auto *words = reinterpret_cast<const char *>(pa->col_idx.data());
  const auto *meta = reinterpret_cast<const uint32_t *>(words + sched->meta_offset);
  const auto *next = reinterpret_cast<const int32_t *>(words + sched->next_offset);
  for (int64_t st = 0; st < t; ++st) ASSERT_EQ(int64_t(meta[st]), meta_want[size_t(st)]) << "stride " << st;
  for (int64_t st = 0; st <= t; ++st) {
    int64_t want = st;
    while (want < t && !(meta_want[size_t(want)] & (1ll << 30))) ++want;
    ASSERT_EQ(next[st], want) << "stride_next[" << st << "]";
  }
  EXPECT_LE(sched->next_offset + 4 * (t + 1), int64_t(pa->col_idx.size()) * 4);
  // Buffers that cannot hold a schedule are refused by name.
  auto bad = decode_schedule(pa->col_idx.size() * 4 - 4, nb);
  ASSERT_FALSE(bool(bad));
  EXPECT_NE(llvm::toString(bad.takeError()).find("not whole strides"), std::string::npos);
  bad = decode_schedule(128 * size_t(nb - 1), nb);
  ASSERT_FALSE(bool(bad));
  EXPECT_NE(llvm::toString(bad.takeError()).find("every row-block needs one a panel at least"), std::string::npos);
  // The same matrix for a resident plan: 32-bit indices.
  OpSpec r = s;
  r.decode = false;
  auto pr = plan(r);
  ASSERT_TRUE(bool(pr));
  auto ra = pack_lhs(*layout, *pr);
  ASSERT_TRUE(bool(ra));
  EXPECT_EQ(ra->index_bits, 32);
  EXPECT_EQ(ra->col_idx, layout->col_idx);
  // B: N <= BSn is one slice.
  std::vector<int64_t> b = magicube::testing::random_dense(rng, 300 * 5, s.rhs);
  auto pb = pack_rhs(b, 300, 5, *p);
  ASSERT_TRUE(bool(pb));
  EXPECT_EQ(pb->ldb, 16);
  EXPECT_EQ(pb->planes[0].size(), 300u * 16);
  // K past 15 bits is refused by name (its B could not be resident anyway).
  VectorSparse wide = magicube::testing::random_vector_sparse(rng, 16, 32768, 8, 64, s.lhs);
  auto lw = build_srbcrs(wide, *p);
  ASSERT_TRUE(bool(lw));
  auto pw = pack_lhs(*lw, *p);
  ASSERT_FALSE(bool(pw));
  EXPECT_NE(llvm::toString(pw.takeError()).find("15-bit column indices but A has K=32768 columns (at most 32767; a decode plan in K panels takes any K)"), std::string::npos);
}

// A decode plan in K panels: A packed panel by panel. Read back the way the kernel reads it
// (panel_first names each (panel, row-block)'s strides, the schedule words name their row-block
// and ends, slot columns are panel-relative, values in the interleaved groups), it must give
// A again, every row-block one stride at least in every panel; a plan without panels refuses it.
TEST(Formats, DecodePanelsHoldEveryVectorOnce) {
  OpSpec s{OpKind::SpMM, {8, true}, {8, true}, 8, 48, true, OutType::Int32, 90};
  s.resident = s.decode = true;
  s.panel = 64;
  auto p = plan(s);
  ASSERT_TRUE(bool(p)) << llvm::toString(p.takeError());
  ASSERT_EQ(p->launch.panel_rows, 64);
  EXPECT_NE(p->str().find("K in panels of 64 rows"), std::string::npos) << p->str();
  EXPECT_NE(p->kernel_name().find("_n48dp64_"), std::string::npos) << p->kernel_name();
  std::mt19937_64 rng(17);
  const int64_t rows = 77, cols = 300, v = 8, panels = 5;  // the last panel: 44 columns
  VectorSparse a = magicube::testing::random_vector_sparse(rng, rows, cols, int(v), 120, s.lhs);
  auto layout = build_srbcrs(a, *p);
  ASSERT_TRUE(bool(layout));
  auto pa = pack_lhs(*layout, *p);
  ASSERT_TRUE(bool(pa)) << llvm::toString(pa.takeError());
  EXPECT_EQ(pa->index_bits, 16);
  EXPECT_EQ(pa->panel_rows, 64);
  const int64_t nb = a.num_blocks();
  EXPECT_EQ(pa->row_ptr.size(), size_t(2 * nb));
  auto sched = decode_schedule(pa->col_idx.size() * 4, nb, panels);
  ASSERT_TRUE(bool(sched)) << llvm::toString(sched.takeError());
  const int64_t t = sched->strides;
  const auto *words = reinterpret_cast<const char *>(pa->col_idx.data());
  const auto *u16 = reinterpret_cast<const uint16_t *>(words);
  const auto *meta = reinterpret_cast<const uint32_t *>(words + sched->meta_offset);
  const auto *first = reinterpret_cast<const int32_t *>(words + sched->panel_offset);
  ASSERT_LE(sched->panel_offset + 4 * (panels * nb + 1), int64_t(pa->col_idx.size()) * 4);
  ASSERT_EQ(first[0], 0);
  ASSERT_EQ(first[panels * nb], t);
  static constexpr int kWordAt[8] = {0, 2, 4, 6, 1, 3, 5, 7};
  const int64_t G = p->shuffle_b ? int64_t(p->shuffle.size()) : 1;
  std::vector<int64_t> got(size_t(nb * v * cols), 0), want(got.size(), 0);
  for (int64_t b = 0; b < nb; ++b)
    for (int64_t i = a.block_ptr[b]; i < a.block_ptr[b + 1]; ++i)
      for (int64_t r = 0; r < v; ++r) want[size_t((b * v + r) * cols + a.col[size_t(i)])] = a.values[size_t(i * v + r)];
  for (int64_t q = 0; q < panels; ++q)
    for (int64_t b = 0; b < nb; ++b) {
      const int64_t rb = q * nb + b, s0 = first[rb], s1 = first[rb + 1];
      ASSERT_LT(s0, s1) << "panel " << q << " row-block " << b << ": one stride at least";
      for (int64_t st = s0; st < s1; ++st) {
        ASSERT_EQ(int64_t(meta[st]), rb | (st == s0 ? 1ll << 30 : 0) | (st + 1 == s1 ? 1ll << 31 : 0)) << "stride " << st;
        for (int64_t sl = 0; sl < 32; ++sl) {
          const int64_t c = u16[st * 32 + sl] & 0x7fff;
          ASSERT_EQ(u16[st * 32 + sl] >> 15, (meta[st] >> sl) & 1) << "stride " << st << " slot " << sl;
          ASSERT_LT(q * 64 + c, q + 1 < panels ? (q + 1) * 64 : cols) << "a column of panel " << q;
          const int64_t k = p->shuffle_b ? (sl / G) * G + p->shuffle[size_t(sl % G)] : sl;  // where its values are
          for (int64_t r = 0; r < v; ++r) {
            const int8_t x = int8_t(pa->planes[0][size_t(st * 32 * v + r * 32 + kWordAt[k / 4] * 4 + k % 4)]);
            got[size_t((b * v + r) * cols + q * 64 + c)] += x;  // pads: zeros (at row slot % 8)
          }
        }
      }
    }
  EXPECT_EQ(got, want);
  // Its layout refused where a plan without panels (or with others) would read it, and back.
  EXPECT_FALSE(bool(decode_schedule(pa->col_idx.size() * 4, nb, t)));
  OpSpec whole = s;
  whole.panel = 0;
  auto pw = plan(whole);
  ASSERT_TRUE(bool(pw));
  auto aw = pack_lhs(*layout, *pw);
  ASSERT_TRUE(bool(aw));
  EXPECT_EQ(aw->panel_rows, 0);
  // A K past 15 bits packs in panels.
  VectorSparse wide = magicube::testing::random_vector_sparse(rng, 16, 40000, 8, 64, s.lhs);
  s.panel = 4800;
  auto pp = plan(s);
  ASSERT_TRUE(bool(pp));
  auto lw = build_srbcrs(wide, *pp);
  ASSERT_TRUE(bool(lw));
  auto pwide = pack_lhs(*lw, *pp);
  ASSERT_TRUE(bool(pwide)) << llvm::toString(pwide.takeError());
  EXPECT_TRUE(bool(decode_schedule(pwide->col_idx.size() * 4, 2, 9)));
}

// The decode kernel's A loads against the other kernels': lane (gid, tig) of a stride reads
// one 8-byte word pair (4-bit planes: 4 bytes) at row gid % V, offset 8 tig (4 tig); it must
// hold what the resident kernel's two loads read at k 4 tig and 16 + 4 tig of the same
// SR-BCRS (the two plans build the same bank-balanced layout).
TEST(Formats, DecodeLhsWordsSitSideBySide) {
  for (auto [lt, v] : {std::pair<ElemType, int>{{8, true}, 8}, {{4, true}, 8}, {{4, false}, 4}, {{12, true}, 2}, {{7, false}, 1}}) {
    OpSpec s{OpKind::SpMM, lt, {8, true}, v, 16, true, OutType::Int64, 90};
    s.resident = true;
    auto pr = plan(s);
    s.decode = true;
    auto pd = plan(s);
    ASSERT_TRUE(pr && pd);
    std::mt19937_64 rng(11);
    VectorSparse a = magicube::testing::random_vector_sparse(rng, 61, 200, v, 200, lt);
    auto layout = build_srbcrs(a, *pd);
    ASSERT_TRUE(bool(layout));
    auto rl = build_srbcrs(a, *pr);
    ASSERT_TRUE(bool(rl));
    ASSERT_EQ(rl->col_idx, layout->col_idx) << "the same SR-BCRS";
    auto ad = pack_lhs(*layout, *pd);
    auto ar = pack_lhs(*layout, *pr);
    ASSERT_TRUE(ad && ar);
    ASSERT_EQ(ad->planes.size(), ar->planes.size());
    for (size_t li = 0; li < ad->planes.size(); ++li) {
      const Plane &d = ad->planes[li], &r = ar->planes[li];
      ASSERT_GE(d.size(), r.size());
      const bool nib = pd->lhs[li].storage_bits == 4;
      // The decode layout moves row-block b's strides to ad->row_ptr[2b] (empty ones get a pad stride).
      std::vector<std::pair<int64_t, int64_t>> moved;  // (decode stride, SR-BCRS stride)
      for (int64_t b = 0; b < layout->num_blocks(); ++b)
        for (int64_t o = layout->row_ptr[2 * b]; o < layout->padded_end(b); o += 32)
          moved.push_back({(ad->row_ptr[2 * b] + o - layout->row_ptr[2 * b]) / 32, o / 32});
      for (auto [dst, st] : moved)
        for (int row = 0; row < v; ++row)
          for (int tig = 0; tig < 4; ++tig)
            for (int i = 0; i < 2; ++i) {
              const int64_t e = st * 32 * v + row * 32, de = dst * 32 * v + row * 32;  // the row's first element
              // decode: bytes de + 8 tig + 4 i (4-bit: (de / 2) + 4 tig + 2 i), 4 bytes (2)
              // resident: element e + 4 tig + 16 i
              const int64_t db = nib ? de / 2 + 4 * tig + 2 * i : de + 8 * tig + 4 * i;
              const int64_t rb = nib ? (e + 4 * tig + 16 * i) / 2 : e + 4 * tig + 16 * i;
              for (int b = 0; b < (nib ? 2 : 4); ++b)
                ASSERT_EQ(d[db + b], r[rb + b]) << lt.str() << " V=" << v << " plane " << li << " stride " << st
                                                << " row " << row << " tig " << tig << " word " << i;
            }
    }
  }
}
