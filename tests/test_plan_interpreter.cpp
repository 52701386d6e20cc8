// The plan interpreter equals the int64 reference bit for bit, for every LHS and RHS width
// 1..16, both signednesses, V in {1, 2, 4, 8}, both ops, on sm_90 and sm_80 plans, on
// awkward shapes with values at their extremes.
#include <gtest/gtest.h>

#include <set>

#include "compiler/plan_interpreter.h"
#include "compiler/planner.h"
#include "runtime/reference.h"
#include "runtime/srbcrs.h"
#include "tests/test_util.h"

using namespace magicube;
using magicube::testing::random_dense;
using magicube::testing::random_vector_sparse;

namespace {

// Awkward shapes: M not a multiple of V, K not a multiple of any stride, N not a multiple
// of any tile.
constexpr int64_t kM = 19, kK = 45, kN = 19;

std::string describe(const Plan &p) { return "\n" + p.str(); }

// SpMM through plan `p`; the reduction length is capped by the plan's exactness bound.
void check_spmm(const Plan &p, std::mt19937_64 &rng) {
  const OpSpec &s = p.spec;
  int64_t bound = s.out == OutType::Int32 ? p.max_exact_k : p.max_term_k;
  VectorSparse a = random_vector_sparse(rng, kM, kK, s.v, std::min<int64_t>(kK, bound), s.lhs);
  std::vector<int64_t> b = random_dense(rng, kK * kN, s.rhs);
  auto layout = build_srbcrs(a, p);
  ASSERT_TRUE(bool(layout)) << llvm::toString(layout.takeError());
  auto got = interpret_spmm(p, *layout, b, kN);
  ASSERT_TRUE(bool(got)) << llvm::toString(got.takeError()) << describe(p);
  std::vector<int64_t> want = reference_spmm(a, b, kN);
  for (size_t i = 0; i < want.size(); ++i)
    ASSERT_EQ((*got)[i], want[i]) << "C[" << i / kN << ", " << i % kN << "]" << describe(p);
}

void check_sddmm(const Plan &p, std::mt19937_64 &rng) {
  const OpSpec &s = p.spec;
  int64_t bound = s.out == OutType::Int32 ? p.max_exact_k : p.max_term_k;
  int64_t k = std::min<int64_t>(kK, bound);
  ElemType any{1, false};
  VectorSparse mask = random_vector_sparse(rng, kM, kN, s.v, kN, any);
  std::vector<int64_t> a = random_dense(rng, kM * k, s.lhs);
  std::vector<int64_t> b = random_dense(rng, k * kN, s.rhs);  // column-major K x N
  SrBcrs layout = build_srbcrs(mask, p.k_stride, false, p.shuffle);
  auto got = interpret_sddmm(p, layout, a, b, k);
  ASSERT_TRUE(bool(got)) << llvm::toString(got.takeError()) << describe(p);
  std::vector<int64_t> want = reference_sddmm(mask, a, b, k);
  for (int64_t blk = 0; blk < mask.num_blocks(); ++blk)
    for (int64_t i = mask.block_ptr[blk]; i < mask.block_ptr[blk + 1]; ++i)
      for (int r = 0; r < s.v; ++r) {
        int64_t q = layout.row_ptr[2 * blk] + (i - mask.block_ptr[blk]);
        ASSERT_EQ((*got)[layout.value_index(q, r)], want[i * s.v + r])
            << "vector " << i << " row " << r << " K=" << k << describe(p);
      }
}

struct GridParam {
  OpKind op;
  int arch;
  int v;
};

class InterpreterGrid : public ::testing::TestWithParam<GridParam> {};

// Every width pair and signedness for one (op, arch, V), int32 outputs, best plan.
TEST_P(InterpreterGrid, EveryWidthAndSignednessIsBitExact) {
  auto [op, arch, v] = GetParam();
  std::mt19937_64 rng(1234 + arch * 10 + v + int(op) * 1000);
  for (int lb = 1; lb <= 16; ++lb)
    for (int rb = 1; rb <= 16; ++rb)
      for (int sg = 0; sg < 4; ++sg) {
        OpSpec s;
        s.op = op;
        s.arch = arch;
        s.v = v;
        s.lhs = {lb, bool(sg & 1)};
        s.rhs = {rb, bool(sg & 2)};
        s.out = max_exact_k(s.lhs, s.rhs) > 0 ? OutType::Int32 : OutType::Int64;
        auto p = plan(s);
        ASSERT_TRUE(bool(p)) << to_string(s) << ": " << llvm::toString(p.takeError());
        if (op == OpKind::SpMM)
          check_spmm(*p, rng);
        else
          check_sddmm(*p, rng);
        if (HasFatalFailure()) return;
      }
}

std::vector<GridParam> grid() {
  std::vector<GridParam> g;
  for (OpKind op : {OpKind::SpMM, OpKind::SDDMM})
    for (int arch : {90, 80})
      for (int v : {1, 2, 4, 8}) g.push_back({op, arch, v});
  return g;
}

INSTANTIATE_TEST_SUITE_P(All, InterpreterGrid, ::testing::ValuesIn(grid()), [](const auto &info) {
  return std::string(op_name(info.param.op)) + "_sm" + std::to_string(info.param.arch) + "_v" +
         std::to_string(info.param.v);
});

// Every candidate plan (both orientations, every mma shape, int4 on sm_80), int32 and int64
// outputs, over a spread of widths.
TEST(Interpreter, EveryCandidatePlanIsBitExact) {
  std::mt19937_64 rng(99);
  const std::pair<ElemType, ElemType> types[] = {
      {{8, true}, {8, true}},   {{8, true}, {4, false}}, {{4, true}, {4, true}},   {{16, true}, {8, true}},
      {{16, true}, {16, true}}, {{12, true}, {4, true}}, {{5, true}, {3, false}},  {{6, false}, {6, true}},
      {{3, false}, {7, true}},  {{1, false}, {16, true}}, {{13, true}, {11, false}}, {{16, false}, {16, false}}};
  for (OpKind op : {OpKind::SpMM, OpKind::SDDMM})
    for (int arch : {80, 86, 89, 90})
      for (int v : {1, 2, 4, 8})
        for (auto [l, r] : types)
          for (OutType out : {OutType::Int32, OutType::Int64}) {
            OpSpec s{op, l, r, v, 64, true, out, arch};
            if (out == OutType::Int32 && max_exact_k(l, r) == 0) continue;
            auto ps = plan_candidates(s);
            ASSERT_TRUE(bool(ps)) << llvm::toString(ps.takeError());
            for (const Plan &p : *ps) {
              if (op == OpKind::SpMM)
                check_spmm(p, rng);
              else
                check_sddmm(p, rng);
              if (HasFatalFailure()) return;
            }
          }
}

TEST(Interpreter, ChunkValuesReconstructEveryValue) {
  for (int bits = 1; bits <= 16; ++bits)
    for (bool sg : {false, true})
      for (int w : {4, 8}) {
        ElemType t{bits, sg};
        auto chunks = split_chunks(t, w);
        for (int64_t x = t.min_value(); x <= t.max_value(); ++x) {
          int64_t sum = 0;
          for (const Chunk &c : chunks) {
            int64_t cv = chunk_value(x, c);
            ASSERT_TRUE(ElemType({c.bits, c.is_signed}).contains(cv)) << t.str() << " x=" << x << " chunk " << c.str();
            sum += cv * (int64_t{1} << c.lo_bit);
          }
          ASSERT_EQ(sum, x) << t.str() << " w=" << w;
        }
      }
}

TEST(Interpreter, RefusesValuesOutsideTheirRange) {
  OpSpec s{OpKind::SpMM, {8, false}, {4, true}, 4, 64, true, OutType::Int32, 90};
  auto p = plan(s);
  ASSERT_TRUE(bool(p));
  std::mt19937_64 rng(5);
  VectorSparse a = random_vector_sparse(rng, 8, 16, 4, 4, s.lhs);
  std::vector<int64_t> b = random_dense(rng, 16 * 8, s.rhs);
  a.values[5] = 256;  // too wide for u8
  auto layout = build_srbcrs(a, *p);
  ASSERT_TRUE(bool(layout));
  auto r = interpret_spmm(*p, *layout, b, 8);
  ASSERT_FALSE(bool(r));
  std::string msg = llvm::toString(r.takeError());
  EXPECT_NE(msg.find("256"), std::string::npos) << msg;
  EXPECT_NE(msg.find("u8"), std::string::npos) << msg;
  EXPECT_NE(msg.find("lhs"), std::string::npos) << msg;

  a.values[5] = 0;
  b[17] = -9;  // too wide for s4
  layout = build_srbcrs(a, *p);
  r = interpret_spmm(*p, *layout, b, 8);
  ASSERT_FALSE(bool(r));
  msg = llvm::toString(r.takeError());
  EXPECT_NE(msg.find("rhs B[2, 1] = -9"), std::string::npos) << msg;
  EXPECT_NE(msg.find("s4"), std::string::npos) << msg;
}

TEST(Interpreter, RefusesAReductionBeyondMaxExactK) {
  OpSpec s{OpKind::SpMM, {16, true}, {16, true}, 8, 64, true, OutType::Int32, 90};
  auto p = plan(s);
  ASSERT_TRUE(bool(p));
  ASSERT_EQ(p->max_exact_k, 1);  // 2 * 2^30 > INT32_MAX
  std::mt19937_64 rng(6);
  VectorSparse a = random_vector_sparse(rng, 8, 8, 8, 2, s.lhs);  // block 0 has 2 vectors
  std::vector<int64_t> b = random_dense(rng, 8 * 4, s.rhs);
  auto layout = build_srbcrs(a, *p);
  ASSERT_TRUE(bool(layout));
  auto r = interpret_spmm(*p, *layout, b, 4);
  ASSERT_FALSE(bool(r));
  std::string msg = llvm::toString(r.takeError());
  EXPECT_NE(msg.find("K=2"), std::string::npos) << msg;
  EXPECT_NE(msg.find("max_exact_k=1"), std::string::npos) << msg;
  EXPECT_NE(msg.find("max_term_k="), std::string::npos) << msg;
}

// The SR-BCRS the interpreter reads: padding, two pointers, shuffle.
TEST(Interpreter, ShuffledLayoutPairsColumnsWithTheirValues) {
  for (int arch : {80, 90}) {
  OpSpec s{OpKind::SpMM, {4, true}, {4, true}, 8, 64, true, OutType::Int32, arch};
  auto p = plan(s);
  ASSERT_TRUE(bool(p));
  ASSERT_TRUE(p->shuffle_b) << p->str();
  std::mt19937_64 rng(8);
  VectorSparse a = random_vector_sparse(rng, 16, 100, 8, 70, s.lhs);
  auto layout = build_srbcrs(a, *p);
  ASSERT_TRUE(bool(layout));
  // A plain layout with the same values must differ only in column order.
  SrBcrs plain = build_srbcrs(a, p->k_stride, false, p->shuffle);
  EXPECT_EQ(plain.values, layout->values);
  EXPECT_NE(plain.col_idx, layout->col_idx);
  const int64_t G = int64_t(p->shuffle.size());
  EXPECT_EQ(G, arch == 80 ? 8 : 16);  // int4 nibble split on sm_80, ldmatrix.trans on sm_90
  for (int64_t slot = 0; slot < layout->num_slots(); ++slot)
    EXPECT_EQ(layout->col_idx[slot], plain.col_idx[(slot / G) * G + p->shuffle[slot % G]]);
  }
}

// A resident-B plan's bank-balanced layout: the interpreter (which reads the layout as the
// kernel does, slot by slot through the shuffle) still gives the reference product, every
// vector is named exactly once, and slot j of every group of 8 names a column of residue j
// mod 8 wherever the row-block has enough of those.
TEST(Interpreter, BankBalancedLayoutKeepsEveryVectorAndSpreadsResidues) {
  for (auto [l, r] : {std::pair<ElemType, ElemType>{{8, true}, {8, true}}, {{4, true}, {4, true}}, {{16, true}, {8, false}}})
    for (int v : {8, 4, 2}) {
      OpSpec s{OpKind::SpMM, l, r, v, 32, true, OutType::Int32, 90};
      s.resident = true;
      auto p = plan(s);
      ASSERT_TRUE(bool(p));
      std::mt19937_64 rng(31 + v);
      check_spmm(*p, rng);
      VectorSparse a = random_vector_sparse(rng, 24, 300, v, 300, s.lhs);
      auto layout = build_srbcrs(a, *p);
      ASSERT_TRUE(bool(layout));
      EXPECT_TRUE(layout->bank_balanced);
      for (int64_t b = 0; b < a.num_blocks(); ++b) {
        std::multiset<int> want(a.col.begin() + a.block_ptr[b], a.col.begin() + a.block_ptr[b + 1]), got;
        int per_residue[8] = {};
        for (int64_t i = a.block_ptr[b]; i < a.block_ptr[b + 1]; ++i) ++per_residue[a.col[i] & 7];
        const int64_t base = layout->row_ptr[2 * b], groups = (layout->padded_end(b) - base) / 8;
        for (int64_t g = 0; g < groups; ++g) {
          for (int j = 0; j < 8; ++j) {
            const int c = layout->col_idx[base + 8 * g + j];
            if (c >= 0) got.insert(c);
            // a residue with a vector for every group has one at its own offset in each group
            // (its surplus fills free slots anywhere)
            if (per_residue[j] >= groups) {
              EXPECT_EQ(c & 7, j) << "row-block " << b << " group " << g << " slot " << j;
            }
          }
        }
        EXPECT_EQ(got, want) << "row-block " << b;
      }
      // And a plain layout of the same matrix is not balanced (the flag follows the plan).
      Plan q = *p;
      q.spec.resident = false;
      auto plain = build_srbcrs(a, q);
      ASSERT_TRUE(bool(plain));
      EXPECT_FALSE(plain->bank_balanced);
    }
}

// A residue more common than the row-block's groups of 8 slots: its surplus goes to different
// groups (each then reads that residue twice: a 2-way bank conflict), not all into the first
// free slots (one group reading it five times).
TEST(Interpreter, BankBalancedLayoutSpreadsAResiduesSurplus) {
  OpSpec s{OpKind::SpMM, {8, true}, {8, true}, 8, 32, true, OutType::Int32, 90};
  s.resident = true;
  auto p = plan(s);
  ASSERT_TRUE(bool(p));
  VectorSparse a;
  a.rows = 8, a.cols = 512, a.v = 8;
  for (int i = 0; i < 12; ++i) a.col.push_back(8 * i);  // residue 0: 12 vectors
  for (int r = 1; r < 8; ++r)
    for (int i = 0; i < 4; ++i) a.col.push_back(128 + 8 * (4 * r + i) + r);  // residues 1-7: 4 each
  std::sort(a.col.begin(), a.col.end());
  a.block_ptr = {0, int64_t(a.col.size())};
  a.values.assign(a.col.size() * 8, 1);
  auto layout = build_srbcrs(a, *p);
  ASSERT_TRUE(bool(layout));
  const int64_t base = layout->row_ptr[0], groups = (layout->padded_end(0) - base) / 8;
  ASSERT_EQ(groups, 8) << "40 vectors in 64 slots";
  int doubled = 0;
  std::multiset<int> got;
  for (int64_t g = 0; g < groups; ++g) {
    int per[8] = {};
    for (int j = 0; j < 8; ++j) {
      const int c = layout->col_idx[base + 8 * g + j];
      if (c < 0) continue;
      got.insert(c);
      ++per[c & 7];
    }
    EXPECT_LE(*std::max_element(per, per + 8), 2) << "group " << g;
    doubled += per[0] == 2;
  }
  EXPECT_EQ(doubled, 4) << "four surplus vectors of residue 0, in four groups";
  EXPECT_EQ(got, std::multiset<int>(a.col.begin(), a.col.end()));
}

// The ldmatrix cost of a bank-balanced row-block: each group of 8 slots reads its most
// repeated residue that many times (a pad at slot j reads row j: residue j). Random rows of
// up to 800 vectors in K=4096: no group reads a residue three times, and the order comes
// within 1 % of the bound max(groups, most vectors of one residue) summed over the row-blocks
// (spreading every residue one a group first and the surplus after was 4-6 % over it).
TEST(Interpreter, BankBalancedLayoutNearlyReachesTheFewestDoubledReads) {
  OpSpec s{OpKind::SpMM, {8, true}, {8, true}, 8, 48, true, OutType::Int32, 90};
  s.resident = true;
  auto p = plan(s);
  ASSERT_TRUE(bool(p));
  std::mt19937_64 rng(77);
  VectorSparse a = random_vector_sparse(rng, 8 * 120, 4096, 8, 800, s.lhs);
  auto layout = build_srbcrs(a, *p);
  ASSERT_TRUE(bool(layout));
  int64_t cost = 0, bound = 0;
  for (int64_t b = 0; b < a.num_blocks(); ++b) {
    const int64_t base = layout->row_ptr[2 * b], groups = (layout->padded_end(b) - base) / 8;
    int64_t per_residue[8] = {};
    for (int64_t i = a.block_ptr[b]; i < a.block_ptr[b + 1]; ++i) ++per_residue[a.col[i] & 7];
    bound += std::max(groups, *std::max_element(per_residue, per_residue + 8));
    for (int64_t g = 0; g < groups; ++g) {
      int reads[8] = {};
      for (int j = 0; j < 8; ++j) {
        const int c = layout->col_idx[base + 8 * g + j];
        ++reads[c >= 0 ? c & 7 : j];
      }
      const int most = *std::max_element(reads, reads + 8);
      EXPECT_LE(most, 2) << "row-block " << b << " group " << g;
      cost += most;
    }
  }
  EXPECT_LE(double(cost), 1.01 * double(bound)) << cost << " wavefronts for a bound of " << bound;
  std::printf("bank-balanced: %lld wavefronts, bound %lld (%.4f)\n", (long long)cost, (long long)bound,
              double(cost) / double(bound));
}

}  // namespace
