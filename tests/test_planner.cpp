#include <gtest/gtest.h>

#include <set>

#include "compiler/mma_atoms.h"
#include "compiler/planner.h"

using namespace magicube;

namespace {

OpSpec spec(OpKind op, ElemType l, ElemType r, int v, int arch, OutType out = OutType::Int32) {
  return OpSpec{op, l, r, v, 64, true, out, arch};
}

// Brute force: the largest K with K * (every corner product) inside int32.
int64_t brute_max_exact_k(ElemType l, ElemType r, int scale = 0) {
  int64_t hi = INT64_MIN, lo = INT64_MAX;
  for (int64_t a = l.min_value(); a <= l.max_value(); a += std::max<int64_t>(1, l.max_value() - l.min_value()))
    for (int64_t b = r.min_value(); b <= r.max_value(); b += std::max<int64_t>(1, r.max_value() - r.min_value()))
      hi = std::max(hi, (a * b) << scale), lo = std::min(lo, (a * b) * (int64_t{1} << scale));
  int64_t k = 0;
  while (k < (int64_t{1} << 32) && (k + 1) * hi <= INT32_MAX && (k + 1) * lo >= INT32_MIN) {
    int64_t step = 1;
    while ((k + 2 * step) * hi <= INT32_MAX && (k + 2 * step) * lo >= INT32_MIN && step < (int64_t{1} << 40)) step *= 2;
    k += step;
  }
  return k;
}

TEST(Planner, EveryValidSpecPlansAndItsTermsCoverEveryChunkPair) {
  for (int arch : {80, 86, 89, 90})
    for (OpKind op : {OpKind::SpMM, OpKind::SDDMM})
      for (int lb = 1; lb <= 16; ++lb)
        for (int rb = 1; rb <= 16; ++rb)
          for (int sg = 0; sg < 4; ++sg)
            for (int v : {1, 2, 4, 8}) {
              ElemType l{lb, bool(sg & 1)}, r{rb, bool(sg & 2)};
              OutType out = max_exact_k(l, r) > 0 ? OutType::Int32 : OutType::Int64;
              auto ps = plan_candidates(spec(op, l, r, v, arch, out));
              ASSERT_TRUE(bool(ps)) << llvm::toString(ps.takeError());
              ASSERT_FALSE(ps->empty());
              for (size_t i = 1; i < ps->size(); ++i) ASSERT_LE((*ps)[i - 1].cost, (*ps)[i].cost);
              for (const Plan &p : *ps) {
                SCOPED_TRACE(p.str());
                ASSERT_EQ(p.terms.size(), p.lhs.size() * p.rhs.size());
                std::set<std::pair<int, int>> seen;
                for (const Term &t : p.terms) {
                  seen.insert({t.lhs_chunk, t.rhs_chunk});
                  ASSERT_EQ(t.shift, p.lhs[t.lhs_chunk].lo_bit + p.rhs[t.rhs_chunk].lo_bit);
                  ASSERT_EQ(p.groups[t.group].lhs_chunks[t.slot], t.lhs_chunk);
                  bool lhs_is_a = p.orient == Orientation::SparseOnM;
                  bool a_s = lhs_is_a ? p.lhs[t.lhs_chunk].is_signed : p.rhs[t.rhs_chunk].is_signed;
                  bool b_s = lhs_is_a ? p.rhs[t.rhs_chunk].is_signed : p.lhs[t.lhs_chunk].is_signed;
                  ASSERT_EQ(t.mma, mma_ptx_name(p.shape, p.native_bits, a_s, b_s));
                }
                ASSERT_EQ(seen.size(), p.terms.size());
                // Stacking fits the mma's V side, and a group holds one signedness.
                for (const StackGroup &g : p.groups) {
                  ASSERT_LE(int(g.lhs_chunks.size()) * v, p.v_side());
                  for (int c : g.lhs_chunks) ASSERT_EQ(p.lhs[c].is_signed, g.is_signed);
                }
                ASSERT_EQ(p.k_stride, p.shape.k);
                if (arch == 90) {
                  ASSERT_EQ(p.native_bits, 8) << "int4 mma.sync is emulated on sm_90";
                }
                // 4-bit planes widened as value << 4 (SpMM and SDDMM on int8 m16n8k32, dense
                // on M): every scaled term accumulator must stay in int32 as well.
                ASSERT_EQ(p.nibble_prescale != 0, p.native_bits == 8 &&
                                                      p.orient == Orientation::DenseOnM && p.shape.m == 16 &&
                                                      (l.bits <= 4 || r.bits <= 4));
                int64_t want = brute_max_exact_k(l, r);
                if (p.nibble_prescale)
                  for (const Term &t : p.terms) {
                    const Chunk &a = p.lhs[t.lhs_chunk], &b = p.rhs[t.rhs_chunk];
                    want = std::min(want, brute_max_exact_k({a.bits, a.is_signed}, {b.bits, b.is_signed},
                                                            p.term_prescale(t)));
                  }
                ASSERT_EQ(p.max_exact_k, want);
              }
            }
}

TEST(Planner, PicksTheFastShapeAndOrientation) {
  auto p = plan(spec(OpKind::SpMM, {8, true}, {8, true}, 8, 90));
  ASSERT_TRUE(bool(p));
  EXPECT_EQ(p->shape, (MmaShape{16, 8, 32}));
  EXPECT_EQ(p->orient, Orientation::DenseOnM);
  EXPECT_EQ(p->kernel_name(), "magicube_spmm_s8s8_v8_n64_pf_sm90");
  EXPECT_EQ(p->terms.size(), 1u);
  EXPECT_EQ(p->terms[0].mma, "mma.sync.aligned.m16n8k32.row.col.s32.s8.s8.s32");
  // int4 data on sm_80 runs on int4 mma; on sm_90 it is stored 4-bit and unpacked to int8.
  auto a = plan(spec(OpKind::SpMM, {4, true}, {4, false}, 8, 80));
  ASSERT_TRUE(bool(a));
  EXPECT_EQ(a->native_bits, 4);
  EXPECT_TRUE(a->shuffle_b);
  auto h = plan(spec(OpKind::SpMM, {4, true}, {4, false}, 8, 90));
  ASSERT_TRUE(bool(h));
  EXPECT_EQ(h->native_bits, 8);
  EXPECT_TRUE(h->unpack_lhs() && h->unpack_rhs());
  EXPECT_TRUE(h->shuffle_b);  // int8 B through ldmatrix.trans: groups of 16
  EXPECT_EQ(h->shuffle.size(), 16u);
  EXPECT_EQ(h->kernel_name(), "magicube_spmm_s4u4_v8_n64_pf_sm90");
}

TEST(Planner, SplitsSignedOperandsWithASignedTopChunk) {
  auto p = plan(spec(OpKind::SpMM, {12, true}, {4, false}, 4, 80));
  ASSERT_TRUE(bool(p));
  ASSERT_EQ(p->native_bits, 4) << p->str();
  ASSERT_EQ(p->lhs.size(), 3u);
  EXPECT_EQ(p->lhs[0].str(), "u4@0");
  EXPECT_EQ(p->lhs[1].str(), "u4@4");
  EXPECT_EQ(p->lhs[2].str(), "s4@8");
  // V=4 on an 8-wide side: two slots; the unsigned chunks stack, the signed one alone.
  EXPECT_EQ(p->stack_slots, 2);
  ASSERT_EQ(p->groups.size(), 2u);
  EXPECT_EQ(p->groups[0].lhs_chunks, (std::vector<int>{0, 1}));
  EXPECT_EQ(p->mmas_per_step(), 2);
  ASSERT_EQ(p->exchange.size(), 1u);
  EXPECT_EQ(p->exchange[0].str(), "shfl.xor 2");
}

TEST(Planner, BoundsAndRefusals) {
  EXPECT_EQ(max_exact_k({16, false}, {16, false}), 0);
  EXPECT_EQ(max_exact_k({8, true}, {8, true}), 131071);  // 2^31 / 2^14 - 1 (128 * 128 = 2^14 on the positive side)
  EXPECT_EQ(max_exact_k({16, true}, {16, true}), 1);
  auto r = plan(spec(OpKind::SpMM, {16, false}, {16, false}, 8, 90));
  ASSERT_FALSE(bool(r));
  std::string msg = llvm::toString(r.takeError());
  EXPECT_NE(msg.find("max_exact_k = 0"), std::string::npos) << msg;
  auto w = plan(spec(OpKind::SpMM, {16, false}, {16, false}, 8, 90, OutType::Int64));
  ASSERT_TRUE(bool(w));
  EXPECT_EQ(w->max_exact_k, 0);
  EXPECT_EQ(w->max_term_k, INT32_MAX / (255 * 255));
  auto e = check_reduction_length(*w, w->max_term_k + 1);
  ASSERT_TRUE(bool(e));
  EXPECT_NE(llvm::toString(std::move(e)).find("max_term_k"), std::string::npos);
  EXPECT_FALSE(bool(check_reduction_length(*w, w->max_term_k)));
  OpSpec bad = spec(OpKind::SpMM, {8, true}, {8, true}, 3, 90);
  auto b = plan(bad);
  ASSERT_FALSE(bool(b));
  EXPECT_NE(llvm::toString(b.takeError()).find("V=3"), std::string::npos);
}

// The JSON form carries the algebra: rebuilding values from its chunks and summing its terms
// gives x * y for every pair of extremes.
TEST(Planner, JsonAgreesWithTheAlgebra) {
  for (int arch : {80, 90})
    for (auto [l, r] : {std::pair<ElemType, ElemType>{{12, true}, {4, false}},
                        {{16, true}, {16, true}},
                        {{5, false}, {13, true}},
                        {{3, true}, {7, true}}}) {
      auto p = plan(spec(OpKind::SpMM, l, r, 2, arch, OutType::Int64));
      ASSERT_TRUE(bool(p));
      llvm::json::Value js = to_json(*p);
      std::string text;
      llvm::raw_string_ostream(text) << js;
      auto parsed = llvm::json::parse(text);
      ASSERT_TRUE(bool(parsed));
      const llvm::json::Object &o = *parsed->getAsObject();
      auto chunk_of = [](int64_t x, const llvm::json::Object &c) {
        int64_t lo = *c.getInteger("lo_bit"), bits = *c.getInteger("bits");
        int64_t u = (x >> lo) & ((int64_t{1} << bits) - 1);
        if (*c.getBoolean("signed") && (u >> (bits - 1))) u -= int64_t{1} << bits;
        return u;
      };
      const auto &lc = *o.getArray("lhs_chunks");
      const auto &rc = *o.getArray("rhs_chunks");
      for (int64_t x : {l.min_value(), l.max_value(), int64_t(0), l.min_value() + 1})
        for (int64_t y : {r.min_value(), r.max_value(), int64_t(1), r.max_value() - 1}) {
          int64_t sum = 0;
          for (const auto &t : *o.getArray("terms")) {
            const auto &to = *t.getAsObject();
            int64_t a = chunk_of(x, *lc[*to.getInteger("lhs_chunk")].getAsObject());
            int64_t b = chunk_of(y, *rc[*to.getInteger("rhs_chunk")].getAsObject());
            sum += (a * b) << *to.getInteger("shift");
          }
          ASSERT_EQ(sum, x * y) << text;
        }
      EXPECT_EQ(*o.getString("kernel"), p->kernel_name());
      EXPECT_EQ(*o.getInteger("max_exact_k"), p->max_exact_k);
    }
}

TEST(Planner, PrintsReadably) {
  auto p = plan(spec(OpKind::SpMM, {12, true}, {4, false}, 4, 80));
  ASSERT_TRUE(bool(p));
  std::string s = p->str();
  for (const char *part : {"plan spmm.s12xu4.v4.n64.pf.i32.sm_80", "m16n8k64", "(u4@0, u4@4, s4@8)",
                           "mma.sync.aligned.m16n8k64.row.col.s32.u4.u4.s32", "max_exact_k", "shuffle"})
    EXPECT_NE(s.find(part), std::string::npos) << part << "\n" << s;
}

}  // namespace

namespace {
TEST(Planner, FingerprintSeparatesPlansThatDiffer) {
  auto ps = plan_candidates(spec(OpKind::SpMM, {12, true}, {4, false}, 4, 80));
  ASSERT_TRUE(bool(ps));
  std::set<uint64_t> seen;
  for (const Plan &p : *ps) seen.insert(fingerprint(p));
  EXPECT_EQ(seen.size(), ps->size());
  Plan a = (*ps)[0], b = (*ps)[0];
  EXPECT_EQ(fingerprint(a), fingerprint(b));
  b.groups[0].is_signed = !b.groups[0].is_signed;
  EXPECT_NE(fingerprint(a), fingerprint(b));
  b = a;
  b.shuffle_b = !b.shuffle_b;
  EXPECT_NE(fingerprint(a), fingerprint(b));
}
}  // namespace

namespace {
// Every mma the planner can pick has one table entry (compiler/mma_atoms.h) per signedness
// pair, and the entry's facts are the instruction's: register counts, PTX and wrapper names.
TEST(Planner, MmaAtomsDescribeEveryNativeMma) {
  std::set<std::string> names;
  for (const MmaAtom &a : mma_atoms()) EXPECT_TRUE(names.insert(a.name).second) << a.name;
  for (int arch : {80, 86, 89, 90})
    for (const MmaOption &o : native_mmas(arch))
      for (bool as : {true, false})
        for (bool bs : {true, false}) {
          const MmaAtom *a = find_mma_atom(o.shape, o.bits, as, bs);
          ASSERT_NE(a, nullptr) << o.shape.str() << " int" << o.bits;
          const MmaShape &s = o.shape;
          EXPECT_EQ(a->a_regs, s.m * s.k * o.bits / 1024);
          EXPECT_EQ(a->b_regs, s.n * s.k * o.bits / 1024);
          EXPECT_EQ(a->c_regs, s.m * s.n / 32);
          const std::string ta = (as ? "s" : "u") + std::to_string(o.bits), tb = (bs ? "s" : "u") + std::to_string(o.bits);
          EXPECT_EQ(std::string(a->ptx), "mma.sync.aligned." + s.str() + ".row.col.s32." + ta + "." + tb + ".s32");
          EXPECT_EQ(std::string(a->wrapper), "mma_" + s.str() + "_" + ta + "_" + tb);
          EXPECT_EQ(mma_ptx_name(s, o.bits, as, bs), a->ptx);
          EXPECT_LE(a->min_arch, arch);
        }
  EXPECT_EQ(find_mma_atom({16, 8, 16}, 8, true, true), nullptr) << "no such int8 mma";
}
}  // namespace
