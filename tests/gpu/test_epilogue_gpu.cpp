// Float outputs on the GPU: f32, f16 and bf16 with no scale, a per-tensor scale or per-row x
// per-column scales, and (SpMM) a per-row or per-column bias, for both ops. The kernel's
// double epilogue is the CPU's (templates/epilogue_math.cuh), so every stored value must
// equal the round-to-nearest-even of the double reference computed from the exact int64
// result: bit for bit (which bounds f32 within 1e-6 relative of the double value, and f16/bf16
// at their rounding of it). Skips with a one-line reason without a GPU.
#include <gtest/gtest.h>

#include <cmath>
#include <sstream>

#include "compiler/planner.h"
#include "runtime/autotune.h"
#include "runtime/policy.h"
#include "runtime/reference.h"
#include "tests/gpu/gpu_env.h"
#include "tests/gpu/gpu_run.h"
#include "tests/test_util.h"

using namespace magicube;
using namespace magicube::testing;

namespace {

int64_t stored(OutType t, double x) {
  if (t == OutType::F32) return f32_bits(x);
  if (t == OutType::F16) return f16_bits(x);
  return bf16_bits(x);
}

EpilogueArgs random_args(std::mt19937_64 &rng, int64_t rows, int64_t cols, Bias bias) {
  std::uniform_real_distribution<float> u(-2.0f, 2.0f);
  EpilogueArgs e;
  e.alpha = 0.0123f;
  for (int64_t i = 0; i < rows; ++i) e.row_scale.push_back(u(rng) * 1e-2f);
  for (int64_t i = 0; i < cols; ++i) e.col_scale.push_back(u(rng));
  int64_t nb = bias == Bias::Row ? rows : cols;
  for (int64_t i = 0; i < nb; ++i) e.bias.push_back(u(rng) * 100);
  return e;
}

// "" when C (M x N, row-major, or column-major with the spec's +ccol) holds every element's
// rounded dequantization of the exact result (row-major), else the first mismatch.
std::string float_c_mismatch(const OpSpec &s, const std::vector<int64_t> &exact, const EpilogueArgs &e,
                             const std::vector<int64_t> &got, int64_t m, int64_t n) {
  for (int64_t i = 0; i < m * n; ++i) {
    const int64_t row = i / n, col = i % n;
    const int64_t want = stored(s.out, dequantize(s, exact[size_t(i)], e, row, col));
    const int64_t bits = got[size_t(s.c_col ? col * m + row : i)];
    if (bits != want) {
      std::ostringstream o;
      o << to_string(s) << " N=" << n << ": C[" << row << ", " << col << "]" << (s.c_col ? " (column-major)" : "")
        << " has bits 0x" << std::hex << bits << ", expected 0x" << want;
      return o.str();
    }
  }
  return "";
}

struct Variant {
  OpKind op;
  ElemType l, r;
  int v;
  OutType out;
  Scale scale;
  Bias bias;
  int arch;
};

std::vector<Variant> variants() {
  std::vector<Variant> g;
  int i = 0;
  for (OpKind op : {OpKind::SpMM, OpKind::SDDMM})
    for (auto [l, r] : {std::pair<ElemType, ElemType>{{8, true}, {8, true}}, {{4, false}, {4, true}},
                        {{16, true}, {8, true}}, {{12, true}, {4, false}}})
      for (OutType out : {OutType::F32, OutType::F16, OutType::BF16})
        for (Scale sc : {Scale::None, Scale::Tensor, Scale::RowCol})
          for (Bias bi : {Bias::None, Bias::Row, Bias::Col}) {
            if (op == OpKind::SDDMM && bi != Bias::None) continue;
            ++i;
            g.push_back({op, l, r, i % 2 ? 8 : 2, out, sc, bi, i % 5 ? 90 : 80});
          }
  return g;
}

TEST(EpilogueGpu, FloatOutputsEqualTheRoundedDoubleReference) {
  MAGICUBE_REQUIRE_GPU(ctx);
  std::mt19937_64 rng(31);
  int failures = 0;
  for (const Variant &var : variants()) {
    OpSpec s{var.op, var.l, var.r, var.v, 64, true, var.out, var.arch, var.scale, var.bias};
    auto p = plan(s);
    ASSERT_TRUE(bool(p)) << llvm::toString(p.takeError());
    const int64_t m = 45, k = 130, n = 70;
    std::vector<int64_t> got, want;
    if (var.op == OpKind::SpMM) {
      VectorSparse a = random_vector_sparse(rng, m, k, s.v, k, s.lhs);
      std::vector<int64_t> b = random_dense(rng, k * n, s.rhs);
      EpilogueArgs e = random_args(rng, m, n, s.bias);
      auto r = gpu_spmm(*ctx, *p, a, b, n, &e);
      ASSERT_TRUE(bool(r)) << llvm::toString(r.takeError());
      got = *r;
      std::vector<int64_t> exact = reference_spmm(a, b, n);
      for (int64_t i = 0; i < m * n; ++i) want.push_back(stored(s.out, dequantize(s, exact[i], e, i / n, i % n)));
    } else {
      VectorSparse mask = random_vector_sparse(rng, m, n, s.v, n, ElemType{1, false});
      std::vector<int64_t> a = random_dense(rng, m * k, s.lhs), b = random_dense(rng, k * n, s.rhs);
      EpilogueArgs e = random_args(rng, m, n, s.bias);
      SrBcrs lay = build_srbcrs(mask, 32, false, p->shuffle);
      auto r = gpu_sddmm(*ctx, *p, mask, lay, a, b, k, SparseLayout::Bcrs, &e);
      ASSERT_TRUE(bool(r)) << llvm::toString(r.takeError());
      got = *r;
      std::vector<int64_t> exact = reference_sddmm(mask, a, b, k);
      for (int64_t blk = 0; blk < mask.num_blocks(); ++blk)
        for (int64_t i = mask.block_ptr[blk]; i < mask.block_ptr[blk + 1]; ++i)
          for (int rr = 0; rr < s.v; ++rr) {
            int64_t row = blk * s.v + rr;
            if (row >= m) got[i * s.v + rr] = 0, want.push_back(0);  // rows past M are not written
            else want.push_back(stored(s.out, dequantize(s, exact[i * s.v + rr], e, row, mask.col[i])));
          }
    }
    ASSERT_EQ(got.size(), want.size());
    for (size_t i = 0; i < want.size(); ++i)
      if (got[i] != want[i]) {
        ADD_FAILURE() << to_string(s) << ": element " << i << " has bits 0x" << std::hex << got[i] << ", expected 0x"
                      << want[i] << std::dec << "\n" << p->str();
        if (++failures >= 5) return;
        break;
      }
  }
}

// Resident B with a float epilogue: its warps take whole row-blocks (a float epilogue cannot
// be split and summed), with more row-blocks than warps so the shared counter is exercised.
TEST(EpilogueGpu, ResidentBFloatOutputs) {
  MAGICUBE_REQUIRE_GPU(ctx);
  std::mt19937_64 rng(37);
  for (auto [out, sc, bi] : {std::tuple{OutType::F32, Scale::Tensor, Bias::Row}, std::tuple{OutType::F16, Scale::RowCol, Bias::Col},
                             std::tuple{OutType::BF16, Scale::None, Bias::None}})
    for (int bsn : {32, 48}) {
      OpSpec s{OpKind::SpMM, {8, true}, {8, true}, 4, bsn, true, out, 90, sc, bi};
      s.resident = true;
      auto p = plan(s);
      ASSERT_TRUE(bool(p)) << llvm::toString(p.takeError());
      ASSERT_EQ(p->launch.family, KernelFamily::SpmmResident);
      const int64_t m = 301, k = 200, n = 100;
      VectorSparse a = random_vector_sparse(rng, m, k, s.v, k, s.lhs);
      std::vector<int64_t> b = random_dense(rng, k * n, s.rhs);
      EpilogueArgs e = random_args(rng, m, n, s.bias);
      auto r = gpu_spmm(*ctx, *p, a, b, n, &e);
      ASSERT_TRUE(bool(r)) << llvm::toString(r.takeError());
      EXPECT_EQ(float_c_mismatch(s, reference_spmm(a, b, n), e, *r, m, n), "");
    }
  // Long K as the dispatch runs a float output there at s=0.9 since session 28 (K panels cannot:
  // each pass adds into C): 16-column slices of all K at 32 warps, int8 and 4-bit weights, bf16
  // with row and column scales and a row bias into a column-major C (the torch layer's).
  for (ElemType lhs : {ElemType{8, true}, ElemType{4, true}}) {
    OpSpec base{OpKind::SpMM, lhs, {8, true}, 8, 64, true, OutType::BF16, 90, Scale::RowCol, Bias::Row};
    base.c_col = true;
    base.pinned = 0;
    const int64_t m = 200, k = 11008, n = 100;
    VectorSparse a = random_vector_sparse(rng, m, k, base.v, k / 10, base.lhs);
    const MatrixSignature sig = spmm_signature(a, n);
    const OpSpec s = policy_spec(base, &sig, DeviceFacts::reference_for(90)).spec;
    ASSERT_EQ(to_string(s), std::string("spmm.") + (lhs.bits == 4 ? "s4" : "s8") + "xs8.v8.n16dw32.pf.bf16+rc+rowbias+ccol.sm_90");
    auto p = plan(s);
    ASSERT_TRUE(bool(p)) << llvm::toString(p.takeError());
    std::vector<int64_t> b = random_dense(rng, k * n, s.rhs);
    EpilogueArgs e = random_args(rng, m, n, s.bias);
    auto r = gpu_spmm(*ctx, *p, a, b, n, &e);
    ASSERT_TRUE(bool(r)) << llvm::toString(r.takeError());
    EXPECT_EQ(float_c_mismatch(s, reference_spmm(a, b, n), e, *r, m, n), "") << p->str();
  }
}

// The decode kernel with float epilogues: the partials of a row-block cut between warps are
// summed as int32 accumulators before the one epilogue that writes it, so the dequantized
// values are bit-exact too. M=301 (a partial last row-block), N below, at and across a tile.
TEST(EpilogueGpu, DecodeFloatOutputs) {
  MAGICUBE_REQUIRE_GPU(ctx);
  std::mt19937_64 rng(39);
  for (auto [out, sc, bi] : {std::tuple{OutType::F32, Scale::Tensor, Bias::Row}, std::tuple{OutType::F16, Scale::RowCol, Bias::Col},
                             std::tuple{OutType::F16, Scale::RowCol, Bias::None}, std::tuple{OutType::BF16, Scale::None, Bias::None}})
    for (auto [n, bsn, warps] : {std::tuple<int64_t, int, int>{5, 16, 0}, {16, 16, 0}, {33, 48, 0}, {64, 32, 0},
                                 {200, 48, 20}, {70, 32, 24}, {100, 16, 32}}) {
      // (the last three: more warps a block, as the dispatch asks past N = 64)
      OpSpec s{OpKind::SpMM, {8, true}, {8, true}, 4, bsn, true, out, 90, sc, bi};
      s.resident = s.decode = true;
      s.warps = warps;
      auto p = plan(s);
      ASSERT_TRUE(bool(p)) << llvm::toString(p.takeError());
      ASSERT_EQ(p->launch.family, KernelFamily::SpmmDecode);
      const int64_t m = 301, k = 2000;
      VectorSparse a = random_vector_sparse(rng, m, k, s.v, k, s.lhs);
      std::vector<int64_t> b = random_dense(rng, k * n, s.rhs);
      EpilogueArgs e = random_args(rng, m, n, s.bias);
      auto r = gpu_spmm(*ctx, *p, a, b, n, &e);
      ASSERT_TRUE(bool(r)) << llvm::toString(r.takeError());
      EXPECT_EQ(float_c_mismatch(s, reference_spmm(a, b, n), e, *r, m, n), "");
    }
}

// Float outputs from the decode kernel with shares of all slices (spec n..s): each segment's
// columns (n_base, the column scales and bias) are its own slice's. More slices than SMs, so that
// the grid is (1, SMs) and shares end inside slices; row- and column-major C; the three tiles
// the dispatch runs past N = 64. The policy asks shares for integer outputs only until this has
// passed on a GPU (runtime/policy.cpp).
TEST(EpilogueGpu, DecodeFloatOutputsInShares) {
  MAGICUBE_REQUIRE_GPU(ctx);
  std::mt19937_64 rng(41);
  const int sms = ctx->sm_count();
  for (auto [out, sc, bi] : {std::tuple{OutType::BF16, Scale::RowCol, Bias::Col}, std::tuple{OutType::F32, Scale::Tensor, Bias::Row}})
    for (auto [bsn, warps] : {std::pair{48, 20}, {32, 24}, {16, 32}})
      for (bool c_col : {false, true}) {
        OpSpec s{OpKind::SpMM, {8, true}, {8, true}, 8, bsn, true, out, 90, sc, bi};
        s.resident = s.decode = s.shares = true;
        s.warps = warps;
        s.c_col = c_col;
        auto p = plan(s);
        ASSERT_TRUE(bool(p)) << llvm::toString(p.takeError());
        ASSERT_TRUE(p->launch.slice_shares);
        const int64_t m = 1001, k = 256, n = int64_t(sms + 7) * bsn - 11, rbs = (m + 7) / 8;
        EXPECT_EQ(decode_grid(p->launch, n, rbs, rbs, k, sms).x, 1u) << to_string(s) << ": one wave of shares";
        VectorSparse a = random_vector_sparse(rng, m, k, s.v, k, s.lhs);
        std::vector<int64_t> b = random_dense(rng, k * n, s.rhs);
        EpilogueArgs e = random_args(rng, m, n, s.bias);
        auto r = gpu_spmm(*ctx, *p, a, b, n, &e);
        ASSERT_TRUE(bool(r)) << llvm::toString(r.takeError());
        EXPECT_EQ(float_c_mismatch(s, reference_spmm(a, b, n), e, *r, m, n), "") << to_string(s);
      }
}

// Float outputs in a column-major C (+ccol): the decode kernel, resident B and the generic
// family (both mma orientations, sm_80 plans) write element (r, c) at c * M + r, rounded as
// in a row-major C, with a per-row or per-column bias and scales indexed by (r, c) as before.
TEST(EpilogueGpu, FloatOutputsInAColumnMajorC) {
  MAGICUBE_REQUIRE_GPU(ctx);
  std::mt19937_64 rng(43);
  std::vector<OpSpec> specs;
  for (auto [out, sc, bi] : {std::tuple{OutType::F32, Scale::Tensor, Bias::Row}, std::tuple{OutType::F16, Scale::RowCol, Bias::Col},
                             std::tuple{OutType::BF16, Scale::None, Bias::None}}) {
    OpSpec d{OpKind::SpMM, {8, true}, {8, true}, 4, 48, true, out, 90, sc, bi};
    d.resident = d.decode = true;
    OpSpec r = d;
    r.decode = false;
    r.bsn = 32;
    specs.insert(specs.end(), {d, r, OpSpec{OpKind::SpMM, {12, true}, {4, false}, 8, 64, true, out, 90, sc, bi},
                               OpSpec{OpKind::SpMM, {4, false}, {4, true}, 2, 64, true, out, 80, sc, bi}});
  }
  for (OpSpec s : specs) {
    s.c_col = true;
    auto p = plan(s);
    ASSERT_TRUE(bool(p)) << llvm::toString(p.takeError());
    const int64_t m = 301, k = 700, n = 70;
    VectorSparse a = random_vector_sparse(rng, m, k, s.v, k, s.lhs);
    std::vector<int64_t> b = random_dense(rng, k * n, s.rhs);
    EpilogueArgs e = random_args(rng, m, n, s.bias);
    auto r = gpu_spmm(*ctx, *p, a, b, n, &e);
    ASSERT_TRUE(bool(r)) << llvm::toString(r.takeError());
    EXPECT_EQ(float_c_mismatch(s, reference_spmm(a, b, n), e, *r, m, n), "") << p->str();
  }
}

// The kernels round f16 and bf16 with the hardware's cvt (templates/epilogue_math.cuh, the
// __CUDA_ARCH__ branches), the CPU reference in software: the two must agree at the formats'
// edges too. Per-tensor scales put the exact results (|acc| up to ~2^25) across each format's
// ties (an odd integer past 2^11 in f16, 2^8 in bf16), subnormals (2^-36, 2^-140: under f16's
// 2^-14 and near bf16's 2^-126), overflow (1 for f16, 3e38 for bf16 and f32) and the signed
// zero (a zero sum times a negative scale), in every kernel family that writes floats.
TEST(EpilogueGpu, HardwareRoundingAtTheFormatsEdges) {
  MAGICUBE_REQUIRE_GPU(ctx);
  std::mt19937_64 rng(47);
  std::vector<OpSpec> specs;
  for (OutType out : {OutType::F16, OutType::BF16, OutType::F32}) {
    OpSpec d{OpKind::SpMM, {8, true}, {8, true}, 8, 48, true, out, 90, Scale::Tensor, Bias::None};
    d.resident = d.decode = true;
    OpSpec d16 = d;
    d16.bsn = 16;
    d16.v = 4;
    OpSpec res = d;
    res.decode = false;
    res.bsn = 32;
    specs.insert(specs.end(), {d, d16, res, OpSpec{OpKind::SpMM, {8, true}, {8, true}, 8, 64, true, out, 90, Scale::Tensor, Bias::None},
                               OpSpec{OpKind::SpMM, {12, true}, {4, false}, 4, 64, true, out, 90, Scale::Tensor, Bias::None},
                               OpSpec{OpKind::SpMM, {4, false}, {4, true}, 2, 64, true, out, 80, Scale::Tensor, Bias::None}});
  }
  for (const OpSpec &s : specs) {
    auto p = plan(s);
    ASSERT_TRUE(bool(p)) << llvm::toString(p.takeError());
    const int64_t m = 301, k = 2000, n = s.decode && s.bsn == 16 ? 13 : 70;
    VectorSparse a = random_vector_sparse(rng, m, k, s.v, k, s.lhs);
    std::vector<int64_t> b = random_dense(rng, k * n, s.rhs);
    for (int64_t i = 0; i < k; ++i) b[size_t(i * n)] = 0;  // column 0 of C: exact zeros
    const std::vector<int64_t> exact = reference_spmm(a, b, n);
    for (float alpha : {1.0f, -1.0f, 0x1p-36f, -0x1p-36f, 0x1p-140f, 3e38f, -3e38f}) {
      EpilogueArgs e;
      e.alpha = alpha;
      auto r = gpu_spmm(*ctx, *p, a, b, n, &e);
      ASSERT_TRUE(bool(r)) << llvm::toString(r.takeError());
      EXPECT_EQ(float_c_mismatch(s, exact, e, *r, m, n), "") << "alpha " << alpha << "\n" << p->str();
    }
  }
}

}  // namespace
