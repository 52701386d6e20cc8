// SpMM on the GPU is bit-exact against the int64 reference: a grid of widths 1..16, both
// signednesses, V in {1,2,4,8}, prefetch on/off, every candidate plan (both mma
// orientations, sm_80 int4 plans run on newer GPUs too), awkward shapes, and DLMC matrices.
// Skips with a one-line reason where there is no GPU.
#include <gtest/gtest.h>

#include <cstdlib>
#include <array>
#include <future>
#include <set>
#include <thread>

#include "compiler/planner.h"
#include "runtime/kernel.h"
#include "runtime/reference.h"
#include "runtime/smtx.h"
#include "tests/gpu/gpu_env.h"
#include "tests/gpu/gpu_run.h"
#include "tests/gpu/slow_writer.h"
#include "tests/test_util.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"

using namespace magicube;
using magicube::testing::precompile;
using magicube::testing::random_dense;
using magicube::testing::random_vector_sparse;

namespace {

// Runs plan `p` on A x B and compares with the reference. Returns a failure description.
std::string run_and_compare(Context &ctx, const Plan &p, const VectorSparse &a, const std::vector<int64_t> &b,
                            int64_t n) {
  auto layout = build_srbcrs(a, p);
  if (!layout) return llvm::toString(layout.takeError());
  auto pa = pack_lhs(*layout, p);
  if (!pa) return llvm::toString(pa.takeError());
  auto pb = pack_rhs(b, a.cols, n, p);
  if (!pb) return llvm::toString(pb.takeError());
  auto da = upload(*pa, *layout);
  if (!da) return llvm::toString(da.takeError());
  auto db = upload(*pb);
  if (!db) return llvm::toString(db.takeError());
  bool i64 = p.spec.out != OutType::Int32;
  size_t elem = i64 ? 8 : 4;
  auto c = DeviceBuffer::allocate(std::max<size_t>(1, a.rows * n * elem));
  if (!c) return llvm::toString(c.takeError());
  if (auto e = c->memset(0xAB)) return llvm::toString(std::move(e));  // poison: every element must be written
  auto k = SpmmKernel::get(ctx, p);
  if (!k) return llvm::toString(k.takeError());
  if (auto e = (*k)->launch(*da, *db, c->ptr(), nullptr)) return llvm::toString(std::move(e));
  if (auto e = ctx.synchronize()) return llvm::toString(std::move(e));
  std::vector<int64_t> got(a.rows * n);
  if (i64) {
    auto h = c->download<int64_t>(a.rows * n);
    if (!h) return llvm::toString(h.takeError());
    got = *h;
  } else {
    auto h = c->download<int32_t>(a.rows * n);
    if (!h) return llvm::toString(h.takeError());
    for (size_t i = 0; i < got.size(); ++i) got[i] = (*h)[i];
  }
  std::vector<int64_t> want = reference_spmm(a, b, n);  // row-major
  for (size_t i = 0; i < want.size(); ++i) {
    const int64_t r = int64_t(i) / n, col = int64_t(i) % n;
    const int64_t g = got[size_t(p.spec.c_col ? col * a.rows + r : r * n + col)];
    if (g != want[i])
      return "C[" + std::to_string(r) + ", " + std::to_string(col) + "] = " + std::to_string(g) + ", expected " +
             std::to_string(want[i]) + (p.spec.c_col ? " (C column-major)" : "") + "\n" + p.str();
  }
  return "";
}

struct Case {
  Plan plan;
  int64_t m, k, n;
};

void run_cases(Context &ctx, std::vector<Case> cases, uint64_t seed) {
  std::vector<Plan> plans;
  for (auto &c : cases) plans.push_back(c.plan);
  precompile(ctx, plans);
  std::mt19937_64 rng(seed);
  int failures = 0;
  for (const Case &c : cases) {
    const OpSpec &s = c.plan.spec;
    int64_t bound = s.out == OutType::Int32 ? c.plan.max_exact_k : c.plan.max_term_k;
    VectorSparse a = random_vector_sparse(rng, c.m, c.k, s.v, std::min<int64_t>(c.k, bound), s.lhs);
    std::vector<int64_t> b = random_dense(rng, c.k * c.n, s.rhs);
    std::string f = run_and_compare(ctx, c.plan, a, b, c.n);
    if (!f.empty()) {
      ADD_FAILURE() << to_string(s) << " M=" << c.m << " K=" << c.k << " N=" << c.n << ": " << f;
      if (++failures >= 5) return;
    }
  }
}

const std::pair<ElemType, ElemType> kTypes[] = {
    {{8, true}, {8, true}},  {{8, true}, {4, false}}, {{4, true}, {4, true}},  {{16, true}, {8, true}},
    {{16, true}, {16, true}}, {{12, true}, {4, true}}, {{5, true}, {3, false}}, {{1, false}, {16, true}},
    {{3, false}, {7, true}}, {{16, false}, {2, true}}, {{6, false}, {6, true}}, {{8, false}, {8, false}}};

TEST(SpmmGpu, EveryCandidatePlanOnAwkwardShapes) {
  MAGICUBE_REQUIRE_GPU(ctx);
  std::vector<Case> cases;
  for (int arch : {90, 80})
    for (auto [l, r] : kTypes)
      for (int v : {1, 2, 4, 8})
        for (bool pf : {true, false})
          for (OutType out : {OutType::Int32, OutType::Int64}) {
            if (out == OutType::Int32 && max_exact_k(l, r) == 0) continue;
            int bsn = v == 4 && pf ? 256 : (v + int(pf)) % 3 == 0 ? 32 : (v % 2 ? 128 : 64);
            auto ps = plan_candidates(OpSpec{OpKind::SpMM, l, r, v, bsn, pf, out, arch});
            ASSERT_TRUE(bool(ps)) << llvm::toString(ps.takeError());
            for (const Plan &p : *ps) {
              cases.push_back({p, 77, 301, 200});
              // The int8 m16n8k32 kernel also with its strides split over two warp groups
              // (where both rings fit: the planner builds it), and with B resident in shared
              // memory at the widest and narrowest slices.
              if (!(p.native_bits == 8 && p.shape == MmaShape{16, 8, 32} && p.orient == Orientation::DenseOnM)) continue;
              OpSpec qs = p.spec;
              qs.split = 2;
              if (auto q = plan(qs)) cases.push_back({*q, 77, 301, 200});
              else llvm::consumeError(q.takeError());
              for (int rbsn : {16, 32, 48, 128}) {
                OpSpec rs = p.spec;
                rs.bsn = rbsn;
                rs.resident = true;
                if (auto r = plan(rs)) cases.push_back({*r, 77, 301, 200});
                else llvm::consumeError(r.takeError());
              }
            }
          }
  run_cases(*ctx, cases, 11);
}

// Resident B on shapes that stress its scheduling: more row-blocks than warps (dynamic
// taking), fewer row-blocks than warps, K below 8 (pad rows), N not a multiple of the
// slice, row-blocks without vectors, long rows (many strides), and every ring depth.
TEST(SpmmGpu, ResidentBSchedulingAndShapes) {
  MAGICUBE_REQUIRE_GPU(ctx);
  std::vector<Case> cases;
  const std::pair<ElemType, ElemType> types[] = {{{8, true}, {8, true}},   {{8, true}, {4, false}},
                                                 {{4, true}, {4, true}},   {{16, true}, {8, true}},
                                                 {{16, true}, {16, true}}, {{5, false}, {3, true}}};
  const int64_t shapes[][3] = {{2048, 1024, 256}, {40, 5, 70}, {1000, 700, 333}, {8, 4096, 64}, {4096, 4096, 32}};
  int i = 0;
  for (auto [l, r] : types)
    for (int v : {8, 4, 2})
      for (auto &sh : shapes) {
        const int stages = 2 + i++ % 3;
        for (int bsn : {16, 32, 48, 64, 96}) {
          OpSpec s{OpKind::SpMM, l, r, v, bsn, true, OutType::Int32, 90};
          s.stages = stages;
          s.resident = true;
          if (max_exact_k(l, r) == 0) s.out = OutType::Int64;
          auto p = plan(s);
          if (!p) {  // a slice row the kernel cannot gather (4-bit B at BSn 16/48, 8-bit at 96)
            llvm::consumeError(p.takeError());
            continue;
          }
          if (!check_shared_memory(*p, sh[1]).empty()) continue;
          cases.push_back({*p, sh[0], sh[1], sh[2]});
        }
      }
  ASSERT_GT(cases.size(), 100u);
  run_cases(*ctx, cases, 21);
}

// The decode kernel (N <= 64) is bit-exact: N in {1, 5, 16, 33, 64} (the whole N in one tile,
// and narrower tiles: several column slices), V in {8, 4, 2}, 8- and 4-bit planes, two lhs
// groups, an odd type, int32 and int64 outputs, ring depths 2..8; on shapes that stress its
// scheduling: one row-block split over every warp (M=8, long row), fewer row-blocks than SMs
// (each block's run cut into 16 pieces mid-row-block), many row-blocks per block, K below 8
// (pad rows), uneven row lengths and empty row-blocks (random_vector_sparse: block 1 empty).
TEST(SpmmGpu, DecodeKernelIsExact) {
  MAGICUBE_REQUIRE_GPU(ctx);
  std::vector<Case> cases;
  const std::pair<ElemType, ElemType> types[] = {{{8, true}, {8, true}}, {{4, true}, {8, true}}, {{4, true}, {4, true}},
                                                 {{7, false}, {5, true}}, {{16, true}, {8, true}}, {{8, false}, {8, false}}};
  const int64_t shapes[][2] = {{8, 4096}, {1000, 700}, {8192, 256}, {40, 5}, {2048, 1024}, {4096, 4096}};
  int i = 0;
  for (auto [l, r] : types)
    for (int v : {8, 4, 2})
      for (int64_t n : {1, 5, 16, 33, 64}) {
        const int unit = r.bits <= 4 ? 32 : 16;
        const int tile = int((n + unit - 1) / unit * unit);
        std::vector<int> widths = {tile};
        if (unit != tile) widths.push_back(unit);  // several column slices
        for (int bsn : widths) {
          OpSpec s{OpKind::SpMM, l, r, v, bsn, true, max_exact_k(l, r) ? OutType::Int32 : OutType::Int64, 90};
          s.resident = s.decode = true;
          if (i % 4 == 1) s.stages = 2 + i % 3;
          if (i % 5 == 2) s.out = OutType::Int64;
          auto p = plan(s);
          if (!p) {  // e.g. 4-bit B at BSn 16 or 48
            llvm::consumeError(p.takeError());
            continue;
          }
          EXPECT_EQ(p->launch.family, KernelFamily::SpmmDecode);
          for (int t = 0; t < 2; ++t) {
            auto &sh = shapes[(i + 3 * t) % 6];
            ++i;
            if (!check_shared_memory(*p, sh[1]).empty()) continue;
            cases.push_back({*p, sh[0], sh[1], n});
          }
        }
      }
  ASSERT_GT(cases.size(), 200u);
  run_cases(*ctx, cases, 41);
}

// The decode kernel on the policy's plans for LLM decode shapes (scaled down in M where the
// CPU reference would be slow): what `magicube run` gets for N <= 64.
TEST(SpmmGpu, DecodeKernelOnDecodeShapes) {
  MAGICUBE_REQUIRE_GPU(ctx);
  std::vector<Case> cases;
  for (auto [m, k] : {std::pair<int64_t, int64_t>{4096, 4096}, {1024, 11008}, {1024, 14336}})
    for (int64_t n : {1, 8, 16, 32})
      for (int v : {8, 2}) {
        OpSpec s{OpKind::SpMM, {8, true}, {8, true}, v, (int(n) + 15) / 16 * 16, true, OutType::Int32, 90};
        s.resident = s.decode = true;
        auto p = plan(s);
        ASSERT_TRUE(bool(p)) << llvm::toString(p.takeError());
        if (!check_shared_memory(*p, k).empty()) {
          s.bsn = 16;  // K=14336: 16 columns a slice fit, 32 do not
          p = plan(s);
          ASSERT_TRUE(bool(p));
        }
        ASSERT_EQ(check_shared_memory(*p, k), "") << to_string(s) << " K=" << k;
        cases.push_back({*p, m, k, n});
      }
  run_cases(*ctx, cases, 43);
}

// Past N = 64 the policy runs the decode kernel in slices of 32-64 columns on a grid of whole
// waves (runtime/kernel.h: decode_grid): many slices, a partial last slice, and more slices
// than SMs (N=6400 at BSn 48: 134 slices, 3 parts each), for the types the policy sends there.
// A decode test's operand types, V and slice width.
struct DecodeType {
  ElemType l, r;
  int v, bsn;
};

TEST(SpmmGpu, DecodeKernelInSlicesAtPrefillN) {
  MAGICUBE_REQUIRE_GPU(ctx);
  const DecodeType types[] = {{{8, true}, {8, true}, 8, 48},   {{4, true}, {8, true}, 8, 48}, {{4, true}, {4, true}, 8, 64},
                        {{8, false}, {8, false}, 4, 32}, {{16, true}, {8, true}, 2, 32}, {{7, false}, {5, true}, 8, 48}};
  std::vector<Case> cases;
  for (const DecodeType &t : types) {
    OpSpec s{OpKind::SpMM, t.l, t.r, t.v, t.bsn, true, max_exact_k(t.l, t.r) ? OutType::Int32 : OutType::Int64, 90};
    s.resident = s.decode = true;
    auto p = plan(s);
    ASSERT_TRUE(bool(p)) << llvm::toString(p.takeError());
    cases.push_back({*p, 1000, 700, 200});
    cases.push_back({*p, 1000, 700, 1000});
    cases.push_back({*p, 128, 2048, 6400});
  }
  // More warps a block (spec.warps: what the dispatch asks past N = 64): 20 for three tiles, 24
  // for two, 32 for one, each type that fits; the long-K form (16-column slices of K = 11008 at
  // 32 warps) too.
  for (const DecodeType &t : types) {
    OpSpec s{OpKind::SpMM, t.l, t.r, t.v, 16, true, max_exact_k(t.l, t.r) ? OutType::Int32 : OutType::Int64, 90};
    s.resident = s.decode = true;
    for (auto [bsn, warps] : {std::pair{48, 20}, {32, 24}, {16, 32}}) {
      s.bsn = bsn, s.warps = warps;
      auto p = plan(s);
      if (!p) {  // more tiles than those warps' registers hold
        llvm::consumeError(p.takeError());
        continue;
      }
      EXPECT_EQ(p->launch.threads, warps * 32);
      cases.push_back({*p, 1000, 700, 200});
      cases.push_back({*p, 128, 2048, 1000});
    }
  }
  OpSpec lk{OpKind::SpMM, {8, true}, {8, true}, 8, 16, true, OutType::Int32, 90};
  lk.resident = lk.decode = true;
  lk.warps = 32;
  cases.push_back({llvm::cantFail(plan(lk)), 256, 11008, 300});
  const Dim3 g = decode_grid(cases[2].plan.launch, 6400, 16, 16 * 32, 2048, 132);
  EXPECT_EQ(g.x, 134u);
  EXPECT_GT(g.y, 1u) << "more slices than SMs: parts that fill whole waves";
  run_cases(*ctx, cases, 47);
}

// Where a grid of whole waves would leave SMs idle, the decode kernel with shares (spec n..s)
// runs one block an SM, each taking a G-th of all slices' strides, slice after slice
// (runtime/kernel.h: decode_grid, a grid of (1, G)): a block's share may end inside one slice
// and go on in the next, copying each. More
// slices than SMs but fewer than twice as many and three times as many (the grid is (1, SMs)
// there, asserted below at one stride a row-block, the least work a slice can have), and a
// matrix of one row-block (its tiny slices: whole waves); the prefill
// tiles (48 columns at 20 warps, 16 at 32) and the decode tile, odd types, int32 and int64
// outputs, a last slice of 5 columns.
TEST(SpmmGpu, DecodeKernelSharesSlicesAcrossBlocks) {
  MAGICUBE_REQUIRE_GPU(ctx);
  const int sms = ctx->sm_count();
  struct Tile {
    ElemType l, r;
    int v, bsn, warps;
  };
  const Tile tiles[] = {{{8, true}, {8, true}, 8, 48, 20}, {{4, true}, {8, true}, 8, 48, 20},
                        {{8, true}, {8, true}, 8, 16, 32}, {{8, false}, {8, false}, 4, 16, 0},
                        {{16, true}, {8, true}, 2, 32, 0}, {{7, false}, {5, true}, 8, 16, 32}};
  std::vector<Case> cases;
  for (const Tile &t : tiles) {
    OpSpec s{OpKind::SpMM, t.l, t.r, t.v, t.bsn, true, max_exact_k(t.l, t.r) ? OutType::Int32 : OutType::Int64, 90};
    s.resident = s.decode = true;
    s.warps = t.warps;
    s.shares = true;
    auto p = plan(s);
    ASSERT_TRUE(bool(p)) << to_string(s) << ": " << llvm::toString(p.takeError());
    ASSERT_TRUE(p->launch.slice_shares);
    const int64_t k = 256;
    struct Shape {
      int64_t slices, m;
      bool shares;  // decode_grid gives (1, SMs) even at one stride a row-block
    };
    for (const Shape &sh : {Shape{sms + 7, 1000, true}, Shape{3 * sms + 1, 96, true}, Shape{sms + 7, t.v, false}}) {
      const int64_t n = (sh.slices - 1) * t.bsn + 5, rbs = (sh.m + t.v - 1) / t.v;
      if (sh.shares) {
        const Dim3 g = decode_grid(p->launch, n, rbs, rbs, k, sms);
        EXPECT_EQ(g.x, 1u) << to_string(s) << " N=" << n << " M=" << sh.m << ": one wave of shares";
        EXPECT_EQ(g.y, unsigned(sms));
      }
      cases.push_back({*p, sh.m, k, n});
    }
  }
  run_cases(*ctx, cases, 53);
}

// The decode kernel in K panels (spec.panel): one pass a panel, each after the first adding
// into C with red.global.add. Panels of
// 64 rows (many passes, a last partial one), one panel holding all of K (one pass), a K past
// 15 bits; the types the policy sends there and odd ones, int32 and int64 outputs, N from one
// slice of 5 columns to 22 slices; one row-block (M=8: cut between every warp in every pass).
TEST(SpmmGpu, DecodeKernelInKPanelsIsExact) {
  MAGICUBE_REQUIRE_GPU(ctx);
  const DecodeType types[] = {{{8, true}, {8, true}, 8, 48},   {{4, true}, {8, true}, 8, 48}, {{4, true}, {4, true}, 8, 48},
                        {{8, false}, {8, false}, 4, 32}, {{16, true}, {8, true}, 2, 32}, {{7, false}, {5, true}, 8, 16}};
  std::vector<Case> cases;
  int i = 0;
  for (const DecodeType &t : types)
    for (int panel : {64, 4800}) {
      OpSpec s{OpKind::SpMM, t.l, t.r, t.v, t.bsn, true, max_exact_k(t.l, t.r) ? OutType::Int32 : OutType::Int64, 90};
      s.resident = s.decode = true;
      s.panel = panel;
      if (i++ % 3 == 1) s.out = OutType::Int64;
      auto p = plan(s);
      ASSERT_TRUE(bool(p)) << to_string(s) << ": " << llvm::toString(p.takeError());
      ASSERT_EQ(p->launch.panel_rows, panel);
      cases.push_back({*p, 1000, 700, 5});
      cases.push_back({*p, 1000, 700, 1000});
      cases.push_back({*p, 8, 4096, 64});
      cases.push_back({*p, 256, panel == 64 ? 1000 : 14336, 200});
    }
  OpSpec s{OpKind::SpMM, {8, true}, {8, true}, 8, 48, true, OutType::Int32, 90};
  s.resident = s.decode = true;
  s.panel = 4800;
  auto p = plan(s);
  ASSERT_TRUE(bool(p));
  cases.push_back({*p, 64, 40000, 48});  // K past the unpanelled kernel's 15-bit columns
  run_cases(*ctx, cases, 53);
}

// Where K takes two panels the decode kernel (one tile, 16 warps or fewer, sm_90) runs them in clusters of
// two blocks, one a panel, the pair adding its halves through distributed shared memory: exact
// for integer outputs of either width, either order of C, odd M and N, more clusters than
// row-blocks (empty parts), K just past one panel, and a part whose sums do not fit shared
// memory beside the slice (30000 row-blocks of V=1: launched without clusters, one pass a panel).
TEST(SpmmGpu, DecodeKernelInClusterPanelsIsExact) {
  MAGICUBE_REQUIRE_GPU(ctx);
  const DecodeType types[] = {{{8, true}, {8, true}, 8, 16}, {{4, true}, {8, true}, 8, 16},  {{8, false}, {8, true}, 4, 16},
                              {{16, true}, {8, true}, 2, 16}, {{7, false}, {5, true}, 8, 16}, {{8, true}, {8, true}, 1, 16}};
  std::vector<Case> cases;
  int i = 0;
  for (const DecodeType &t : types)
    for (int panel : {64, 4096}) {
      OpSpec s{OpKind::SpMM, t.l, t.r, t.v, t.bsn, true, max_exact_k(t.l, t.r) ? OutType::Int32 : OutType::Int64, 90};
      s.resident = s.decode = true;
      s.panel = panel;
      if (i % 3 == 1) s.out = OutType::Int64;
      s.c_col = i++ % 2 == 1;
      auto p = plan(s);
      ASSERT_TRUE(bool(p)) << to_string(s) << ": " << llvm::toString(p.takeError());
      ASSERT_TRUE(p->launch.panel_cluster) << p->str();
      for (const int64_t k : {int64_t(panel) + 1, 2 * int64_t(panel) - 3}) {
        ASSERT_EQ(p->launch.cluster_blocks(k), 2u) << "K=" << k << " " << p->str();
        cases.push_back({*p, 1001, k, 5});
        cases.push_back({*p, 4096, k, 16});
        cases.push_back({*p, 9, k, 1});  // one row-block: one cluster's part, the others' empty
      }
      if (t.v == 1 && panel == 64) cases.push_back({*p, 30000, 100, 5});
    }
  run_cases(*ctx, cases, 59);
}

// A column-major C (+ccol: a linear layer's token-major Y) from every SpMM kernel family: the
// decode kernel (one and several slices, cut row-blocks, K panels adding into C), resident B,
// the ring kernel (its CUDA form: the PTX twin writes a row-major C only) and the generic
// family's other orientations and sm_80 int4 plans; M, N odd and V rows past M, int32 and int64.
TEST(SpmmGpu, ColumnMajorCFromEveryFamily) {
  MAGICUBE_REQUIRE_GPU(ctx);
  std::vector<Case> cases;
  std::set<KernelFamily> families;
  int i = 0;
  auto add = [&](OpSpec s, std::initializer_list<std::array<int64_t, 3>> shapes) {
    s.c_col = true;
    if (max_exact_k(s.lhs, s.rhs) == 0) s.out = OutType::Int64;
    auto ps = s.decode || s.resident ? llvm::Expected<std::vector<Plan>>(std::vector<Plan>{}) : plan_candidates(s);
    if (!ps) {
      ADD_FAILURE() << to_string(s) << ": " << llvm::toString(ps.takeError());
      return;
    }
    if (ps->empty()) {
      auto p = plan(s);
      if (!p) {
        ADD_FAILURE() << to_string(s) << ": " << llvm::toString(p.takeError());
        return;
      }
      ps->push_back(*p);
    }
    for (const Plan &p : *ps) {
      EXPECT_TRUE(p.spec.c_col);
      EXPECT_NE(p.kernel_name().find("_ccol"), std::string::npos) << p.kernel_name();
      families.insert(p.launch.family);
      for (const auto &sh : shapes)
        if (check_shared_memory(p, sh[1]).empty()) cases.push_back({p, sh[0], sh[1], sh[2]});
      ++i;
    }
  };
  const std::pair<ElemType, ElemType> types[] = {{{8, true}, {8, true}}, {{4, true}, {8, true}}, {{4, true}, {4, true}},
                                                 {{7, false}, {5, true}}, {{16, true}, {8, true}}};
  for (auto [l, r] : types)
    for (int v : {8, 4, 2}) {
      const OutType out = v == 4 ? OutType::Int64 : OutType::Int32;
      for (int bsn : {16, 32, 48, 64}) {  // decode: N in one slice and in several
        OpSpec s{OpKind::SpMM, l, r, v, bsn, true, out, 90};
        s.resident = s.decode = true;
        if (r.bits <= 4 && bsn % 32) continue;
        add(s, {{301, 700, 1}, {301, 700, 5}, {1000, 2000, bsn + 3}});
        if (bsn == 48 || (r.bits <= 4 && bsn == 64)) {
          s.panel = 256;
          add(s, {{301, 700, 33}, {8, 1000, 200}});
        }
      }
      for (int bsn : {32, r.bits <= 4 ? 64 : 48}) {  // resident B (4-bit B: slices of 32+ columns, 16-byte rows)
        OpSpec s{OpKind::SpMM, l, r, v, bsn, true, out, 90};
        s.resident = true;
        add(s, {{77, 301, 200}});
      }
      for (int arch : {90, 80})  // the ring and generic families: every candidate
        add(OpSpec{OpKind::SpMM, l, r, v, v == 8 ? 64 : 128, v != 2, out, arch}, {{77, 301, 200}});
    }
  for (KernelFamily f : {KernelFamily::SpmmDecode, KernelFamily::SpmmResident, KernelFamily::SpmmRing, KernelFamily::SpmmGeneric})
    EXPECT_TRUE(families.count(f)) << family_name(f);
  ASSERT_GT(cases.size(), 100u);
  run_cases(*ctx, cases, 59);
}

// A decode launch refuses, naming the problem: a B that does not fit a block's shared memory,
// and an A packed for another plan (32-bit column indices).
TEST(SpmmGpu, DecodeRefusesWhatItCannotRun) {
  MAGICUBE_REQUIRE_GPU(ctx);
  OpSpec s{OpKind::SpMM, {8, true}, {8, true}, 8, 32, true, OutType::Int32, 90};
  s.resident = s.decode = true;
  auto p = plan(s);
  ASSERT_TRUE(bool(p));
  std::mt19937_64 rng(5);
  const int64_t k = 14336;  // 14336 x 32 bytes = 448 KiB
  VectorSparse a = random_vector_sparse(rng, 16, k, 8, 64, s.lhs);
  std::vector<int64_t> b = random_dense(rng, k * 32, s.rhs);
  std::string f = run_and_compare(*ctx, *p, a, b, 32);
  EXPECT_NE(f.find("decode: B needs"), std::string::npos) << f;
  EXPECT_NE(f.find("K=14336"), std::string::npos) << f;
  // A packed by the resident plan (32-bit indices), launched with the decode one.
  s.bsn = 16;
  auto pd = plan(s);
  ASSERT_TRUE(bool(pd));
  OpSpec rs = s;
  rs.decode = false;
  auto pr = plan(rs);
  ASSERT_TRUE(bool(pr));
  VectorSparse a2 = random_vector_sparse(rng, 16, 64, 8, 64, s.lhs);
  std::vector<int64_t> b2 = random_dense(rng, 64 * 16, s.rhs);
  auto layout = build_srbcrs(a2, *pr);
  ASSERT_TRUE(bool(layout));
  auto pa = pack_lhs(*layout, *pr);
  auto pb = pack_rhs(b2, 64, 16, *pd);
  ASSERT_TRUE(pa && pb);
  auto da = upload(*pa, *layout);
  auto db = upload(*pb);
  ASSERT_TRUE(da && db);
  auto c = DeviceBuffer::allocate(16 * 16 * 4);
  ASSERT_TRUE(bool(c));
  auto kd = SpmmKernel::get(*ctx, *pd);
  ASSERT_TRUE(bool(kd)) << llvm::toString(kd.takeError());
  llvm::Error e = (*kd)->launch(*da, *db, c->ptr(), nullptr);
  ASSERT_TRUE(bool(e));
  EXPECT_NE(llvm::toString(std::move(e)).find("A was packed for another plan (32-bit column indices"), std::string::npos);
  // A packed by the decode plan without K panels, launched with one in panels (and back).
  OpSpec ps = s;
  ps.panel = 64;
  auto pp = plan(ps);
  ASSERT_TRUE(bool(pp));
  auto dl = build_srbcrs(a2, *pd);
  ASSERT_TRUE(bool(dl));
  for (auto [packer, runner] : {std::pair{&*pd, &*pp}, std::pair{&*pp, &*pd}}) {
    auto pa2 = pack_lhs(*dl, *packer);
    ASSERT_TRUE(bool(pa2)) << llvm::toString(pa2.takeError());
    auto da2 = upload(*pa2, *dl);
    ASSERT_TRUE(bool(da2));
    auto kp = SpmmKernel::get(*ctx, *runner);
    ASSERT_TRUE(bool(kp)) << llvm::toString(kp.takeError());
    llvm::Error e2 = (*kp)->launch(*da2, *db, c->ptr(), nullptr);
    ASSERT_TRUE(bool(e2));
    const std::string msg = llvm::toString(std::move(e2));
    EXPECT_NE(msg.find("A was packed for another plan ("), std::string::npos) << msg;
    EXPECT_NE(msg.find("panels"), std::string::npos) << msg;
  }
}

// The decode kernel on sm_90 is launched as a programmatic dependent launch: it may start
// while the stream's previous kernel runs, and must wait for it before reading anything. The
// previous kernel here lets dependents launch at once (griddepcontrol.launch_dependents), spins,
// then writes B; a decode kernel that read B before waiting would see the poison.
TEST(SpmmGpu, DecodeKernelWaitsForThePreviousKernel) {
  MAGICUBE_REQUIRE_GPU(ctx);
  OpSpec s{OpKind::SpMM, {8, true}, {8, true}, 8, 16, true, OutType::Int32, ctx->compute_capability() >= 90 ? 90 : 80};
  s.resident = s.decode = true;
  auto p = plan(s);
  ASSERT_TRUE(bool(p)) << llvm::toString(p.takeError());
  EXPECT_EQ(p->launch.pdl, s.arch >= 90) << p->launch.str();
  std::mt19937_64 rng(11);
  const int64_t m = 2048, k = 1024, n = 16;
  VectorSparse a = random_vector_sparse(rng, m, k, 8, k, s.lhs);
  std::vector<int64_t> b = random_dense(rng, k * n, s.rhs);
  auto layout = build_srbcrs(a, *p);
  ASSERT_TRUE(bool(layout));
  auto pa = pack_lhs(*layout, *p);
  auto pb = pack_rhs(b, k, n, *p);
  ASSERT_TRUE(pa && pb);
  auto da = upload(*pa, *layout);
  auto db = upload(*pb), src = upload(*pb);
  ASSERT_TRUE(da && db && src);
  ASSERT_EQ(db->planes.size(), 1u);
  auto writer = magicube::testing::SlowWriter::load(*ctx);
  ASSERT_TRUE(bool(writer)) << llvm::toString(writer.takeError());
  auto kd = SpmmKernel::get(*ctx, *p);
  ASSERT_TRUE(bool(kd)) << llvm::toString(kd.takeError());
  auto c = DeviceBuffer::allocate(size_t(m * n * 4));
  ASSERT_TRUE(bool(c));
  const std::vector<int64_t> want = reference_spmm(a, b, n);
  for (int round = 0; round < 3; ++round) {
    ASSERT_FALSE(bool(db->planes[0].memset(0x77)));  // poison B: the writer restores it
    ASSERT_FALSE(bool(c->memset(0xAB)));
    ASSERT_FALSE(bool(ctx->synchronize()));
    // One warp on one SM: the decode kernel's blocks fit beside it on every other SM at once.
    ASSERT_FALSE(bool(writer->launch(src->planes[0].ptr(), db->planes[0].ptr(), db->planes[0].bytes())));
    ASSERT_FALSE(bool((*kd)->launch(*da, *db, c->ptr(), nullptr)));
    ASSERT_FALSE(bool(ctx->synchronize()));
    auto h = c->download<int32_t>(size_t(m * n));
    ASSERT_TRUE(bool(h));
    for (size_t i = 0; i < want.size(); ++i)
      ASSERT_EQ((*h)[i], want[i]) << "round " << round << ": C[" << i / n << ", " << i % n
                                  << "] (read B before the previous kernel wrote it?)";
  }
}

// A resident-B launch refuses, naming the problem: a K whose slice exceeds the block's shared
// memory, and a B packed for another plan (rows of ldb instead of slices).
TEST(SpmmGpu, ResidentBRefusesWhatItCannotRun) {
  MAGICUBE_REQUIRE_GPU(ctx);
  OpSpec s{OpKind::SpMM, {8, true}, {8, true}, 8, 128, true, OutType::Int32, 90};
  s.resident = true;
  auto p = plan(s);
  ASSERT_TRUE(bool(p));
  std::mt19937_64 rng(9);
  const int64_t big_k = 4096;  // 4096 x 128 bytes = 512 KiB of slice
  VectorSparse a = random_vector_sparse(rng, 16, big_k, 8, 64, s.lhs);
  std::vector<int64_t> b = random_dense(rng, big_k * 64, s.rhs);
  std::string f = run_and_compare(*ctx, *p, a, b, 64);
  EXPECT_NE(f.find("bytes of shared memory for K=4096"), std::string::npos) << f;
  // B packed for the ring kernel, launched with the resident one.
  s.bsn = 32;
  auto pr = plan(s);
  ASSERT_TRUE(bool(pr));
  Plan ring = *pr;
  ring.spec.resident = false;
  VectorSparse a2 = random_vector_sparse(rng, 16, 64, 8, 64, s.lhs);
  std::vector<int64_t> b2 = random_dense(rng, 64 * 64, s.rhs);
  auto layout = build_srbcrs(a2, *pr);
  ASSERT_TRUE(bool(layout));
  auto pa = pack_lhs(*layout, *pr);
  auto pb = pack_rhs(b2, 64, 64, ring);  // rows of ldb
  ASSERT_TRUE(pa && pb);
  auto da = upload(*pa, *layout);
  auto db = upload(*pb);
  ASSERT_TRUE(da && db);
  auto c = DeviceBuffer::allocate(16 * 64 * 4);
  ASSERT_TRUE(bool(c));
  auto k = SpmmKernel::get(*ctx, *pr);
  ASSERT_TRUE(bool(k)) << llvm::toString(k.takeError());
  llvm::Error e = (*k)->launch(*da, *db, c->ptr(), nullptr);
  ASSERT_TRUE(bool(e));
  EXPECT_NE(llvm::toString(std::move(e)).find("B was packed for another plan"), std::string::npos);
}

TEST(SpmmGpu, EveryWidthPairBothSignednesses) {
  MAGICUBE_REQUIRE_GPU(ctx);
  std::vector<Case> cases;
  int i = 0;
  for (int lb = 1; lb <= 16; ++lb)
    for (int rb = 1; rb <= 16; ++rb)
      for (int sg = 0; sg < 4; ++sg) {
        ElemType l{lb, bool(sg & 1)}, r{rb, bool(sg & 2)};
        int v = 1 << (i++ % 4);  // V cycles through 1, 2, 4, 8
        OutType out = max_exact_k(l, r) ? OutType::Int32 : OutType::Int64;
        auto p = plan(OpSpec{OpKind::SpMM, l, r, v, 64, bool(i % 2), out, 90});
        ASSERT_TRUE(bool(p)) << llvm::toString(p.takeError());
        cases.push_back({*p, 37, 70, 45});
      }
  run_cases(*ctx, cases, 12);
}

// The kernels written in PTX (Launch::language) and the same plans' CUDA kernels: both equal
// the reference on awkward shapes (a partial last row-block, N past the last full tile, K not
// a multiple of the stride) for every 8- and 4-bit type pair, int32 and int64, each tile width
// and ring depth the PTX generator takes.
TEST(SpmmGpu, PtxKernelsAndTheirCudaTwinsAreExact) {
  MAGICUBE_REQUIRE_GPU(ctx);
  const ElemType types[] = {{8, true}, {8, false}, {4, true}, {4, false}};
  std::vector<Case> cases;
  int i = 0, ptx = 0;
  for (ElemType l : types)
    for (ElemType r : types)
      for (int bsn : {32, 64, 128, 256}) {
        OpSpec s{OpKind::SpMM, l, r, 8, bsn, true, ++i % 3 ? OutType::Int32 : OutType::Int64, 90};
        s.stages = i % 4 == 0 ? 0 : 1 + i % 4;  // 2, 3, 4 or the deepest
        auto p = plan(s);
        ASSERT_TRUE(bool(p)) << to_string(s) << ": " << llvm::toString(p.takeError());
        if (p->launch.language != KernelLanguage::Ptx) continue;
        ++ptx;
        Plan cuda = *p;
        cuda.launch.language = KernelLanguage::Cuda;
        cases.push_back({*p, 77, 301, 200});
        cases.push_back({cuda, 77, 301, 200});
      }
  EXPECT_GE(ptx, 16) << "plans written in PTX: at least one a type pair";
  run_cases(*ctx, cases, 14);
}

// The comparison can fail: a kernel whose lhs mma type is wrong (u8 for s8 data) must not
// pass.
TEST(SpmmGpu, ComparisonCatchesAWrongKernel) {
  MAGICUBE_REQUIRE_GPU(ctx);
  auto p = plan(OpSpec{OpKind::SpMM, {8, true}, {8, true}, 8, 64, true, OutType::Int32, 90});
  ASSERT_TRUE(bool(p));
  Plan wrong = *p;
  wrong.groups[0].is_signed = false;  // the kernel will read s8 values as u8
  std::mt19937_64 rng(3);
  VectorSparse a = random_vector_sparse(rng, 16, 64, 8, 64, p->spec.lhs);
  std::vector<int64_t> b = random_dense(rng, 64 * 64, p->spec.rhs);
  EXPECT_EQ(run_and_compare(*ctx, *p, a, b, 64), "");
  EXPECT_NE(run_and_compare(*ctx, wrong, a, b, 64), "");
}

// DLMC ResNet-50 matrices dilated by V, from MAGICUBE_DLMC_DIR (an unpacked tree or a folder
// of .smtx files).
TEST(SpmmGpu, DlmcMatrices) {
  MAGICUBE_REQUIRE_GPU(ctx);
  const char *dir = std::getenv("MAGICUBE_DLMC_DIR");
  if (!dir) GTEST_SKIP() << "MAGICUBE_DLMC_DIR not set (a folder of DLMC .smtx files)";
  std::vector<std::string> files;
  std::error_code ec;
  for (llvm::sys::fs::recursive_directory_iterator it(dir, ec), end; it != end && !ec; it.increment(ec))
    if (llvm::sys::path::extension(it->path()) == ".smtx") files.push_back(it->path());
  std::sort(files.begin(), files.end());
  if (files.empty()) GTEST_SKIP() << "no .smtx files under " << dir;
  if (files.size() > 12) files.resize(12);
  std::mt19937_64 rng(13);
  for (const std::string &f : files)
    for (auto [l, r] : {std::pair<ElemType, ElemType>{{8, true}, {8, true}}, {{8, true}, {4, false}}, {{16, true}, {8, true}},
                        {{4, true}, {4, true}}})
      for (int v : {2, 8}) {
        auto pat = read_smtx(f);
        ASSERT_TRUE(bool(pat)) << llvm::toString(pat.takeError());
        VectorSparse a = dilate(*pat, v, [&] { return magicube::testing::draw(rng, l); });
        OutType out = a.max_block_length() <= max_exact_k(l, r) ? OutType::Int32 : OutType::Int64;
        auto p = plan(OpSpec{OpKind::SpMM, l, r, v, 64, true, out, 90});
        ASSERT_TRUE(bool(p));
        int64_t n = 256;
        std::vector<int64_t> b = random_dense(rng, a.cols * n, r);
        std::string fail = run_and_compare(*ctx, *p, a, b, n);
        ASSERT_TRUE(fail.empty()) << f << " V=" << v << ": " << fail;
      }
}

}  // namespace
