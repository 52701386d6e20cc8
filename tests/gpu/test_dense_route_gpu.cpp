// The dense route on the GPU: through the library's pipeline (as magicube run, tune and the
// bench use it) its output equals the int64 reference (int32, int64, and the float outputs
// as the epilogue rounds it) for every precision (wider ones in int8 chunks), V and an awkward N; the dispatch's forced route runs the same. Skips with a
// one-line reason where there is no GPU, or where libcublasLt cannot be loaded.
#include <gtest/gtest.h>

#include "runtime/autotune.h"
#include "runtime/dense_epilogue.h"
#include "runtime/dense_gemm.h"
#include "runtime/dispatch.h"
#include "runtime/pipeline.h"
#include "runtime/synthetic.h"
#include "tests/gpu/gpu_env.h"

using namespace magicube;

namespace {

struct Problem {
  const char *lhs, *rhs;
  int v;
  int64_t m, k, n;
  double sparsity;
  OutType out = OutType::Int32;
  Scale scale = Scale::None;
  bool c_col = false;  // +ccol: C column-major (the GEMM of Bt and A with the roles swapped)
};

// Runs the dense route of `p` through the pipeline; "" when bit-exact.
std::string run_dense(Context &ctx, const Problem &p, uint64_t seed) {
  std::mt19937_64 rng(seed);
  OpSpec s;
  s.lhs = llvm::cantFail(parse_elem(p.lhs, "lhs"));
  s.rhs = llvm::cantFail(parse_elem(p.rhs, "rhs"));
  s.v = p.v;
  s.out = p.out;
  s.scale = p.scale;
  s.c_col = p.c_col;
  s.pinned = 0;
  VectorSparse a = synthetic_sparse(rng, p.m, p.k, p.sparsity, p.v, s.lhs);
  std::vector<int64_t> b = random_dense(rng, p.k * p.n, s.rhs);
  const MatrixSignature sig = spmm_signature(a, p.n);
  auto d = dispatch(s, &sig, device_facts(ctx), -1, nullptr, DenseRoute::Forced);
  if (!d) return llvm::toString(d.takeError());
  if (d->route != Route::Dense) return "the forced route is " + std::string(route_name(d->route));
  auto pipe = Pipeline::spmm(d->plan.spec, a, std::move(b), p.n);
  if (auto e = pipe->prepare_dense(ctx)) return llvm::toString(std::move(e));
  if (auto e = pipe->poison()) return llvm::toString(std::move(e));
  // The poison covers the GEMMs' planes too: the selection's results there would otherwise
  // pass for the checked launch's.
  if (const DeviceBuffer *scratch = pipe->dense_scratch()) {
    auto bytes = scratch->download<uint8_t>();
    if (!bytes) return llvm::toString(bytes.takeError());
    for (size_t i = 0; i < bytes->size(); ++i)
      if ((*bytes)[i] != 0xAB)
        return "the poisoned dense scratch holds " + std::to_string((*bytes)[i]) + " at byte " + std::to_string(i);
  } else if (dense_needs_scratch(d->plan.spec)) {
    return "no dense scratch where the route needs one";
  }
  if (auto e = pipe->launch_dense()) return llvm::toString(std::move(e));
  if (auto e = ctx.synchronize()) return llvm::toString(std::move(e));
  auto v = pipe->verify();
  if (!v) return llvm::toString(v.takeError());
  if (!v->exact())
    return "C[" + std::to_string(v->first->row) + ", " + std::to_string(v->first->col) + "] = " +
           std::to_string(v->first->got) + ", expected " + std::to_string(v->first->want) + (p.c_col ? " (C column-major)" : "") +
           " (" + pipe->dense_describe() + ")";
  return "";
}

}  // namespace

TEST(DenseRouteGpu, BitExactForEveryPrecision) {
  MAGICUBE_REQUIRE_GPU(ctx);
  if (std::string why = dense_library_unavailable(); !why.empty()) GTEST_SKIP() << "no cuBLASLt: " << why;
  const Problem problems[] = {
      {"s8", "s8", 8, 512, 1024, 64, 0.5},   {"s8", "s8", 8, 1000, 2048, 1, 0.7},  // N=1, M not a multiple of V
      {"s4", "s8", 4, 256, 512, 33, 0.5},    {"s4", "s4", 2, 130, 256, 16, 0.9},   // odd N, M = 65 row-blocks of 2
      {"u7", "s5", 8, 384, 1024, 100, 0.7},  {"s8", "u7", 1, 64, 4096, 8, 0.0},    // V=1, no zero vector
      {"s2", "s8", 8, 2048, 2048, 512, 0.9},
      // Other outputs: the GEMM's int32 result and the epilogue kernel (the pipeline's unit scales).
      {"s8", "s8", 8, 1000, 2048, 100, 0.5, OutType::F16, Scale::RowCol},
      {"s4", "u7", 4, 256, 512, 33, 0.7, OutType::BF16},
      {"s8", "s8", 8, 512, 1024, 512, 0.5, OutType::F32, Scale::Tensor},
      {"s8", "s8", 2, 130, 4096, 7, 0.0, OutType::Int64},
      // Operands in int8 chunks: one GEMM per chunk pair, the epilogue summing the planes.
      {"u8", "s8", 8, 512, 1024, 64, 0.5},   {"s8", "u8", 8, 1000, 2048, 1, 0.7},
      {"u8", "u8", 4, 256, 512, 33, 0.5, OutType::BF16, Scale::RowCol},
      {"s12", "s4", 4, 130, 256, 16, 0.7},   {"s16", "u16", 8, 64, 512, 8, 0.5, OutType::Int64},
      {"u16", "s8", 2, 300, 1024, 100, 0.9, OutType::F32, Scale::Tensor},
  };
  uint64_t seed = 1;
  for (const Problem &p : problems)
    EXPECT_EQ(run_dense(*ctx, p, seed++), "") << p.lhs << "x" << p.rhs << " V=" << p.v << " M=" << p.m << " K=" << p.k
                                               << " N=" << p.n << " s=" << p.sparsity << " out " << out_name(p.out);
}

// A column-major C (+ccol): the GEMM computes C^T with the operands' roles swapped, directly
// into C for int32 and through the epilogue kernel (which writes C^T) otherwise.
TEST(DenseRouteGpu, ColumnMajorCForEveryPrecision) {
  MAGICUBE_REQUIRE_GPU(ctx);
  if (std::string why = dense_library_unavailable(); !why.empty()) GTEST_SKIP() << "no cuBLASLt: " << why;
  const Problem problems[] = {
      {"s8", "s8", 8, 512, 1024, 64, 0.5, OutType::Int32, Scale::None, true},
      {"s8", "s8", 8, 1000, 2048, 2, 0.7, OutType::Int32, Scale::None, true},  // N=2: C^T rows of 2
      {"s4", "s4", 2, 130, 256, 16, 0.9, OutType::Int32, Scale::None, true},
      {"s8", "s8", 8, 1000, 2048, 100, 0.5, OutType::F16, Scale::RowCol, true},
      {"s8", "s8", 2, 130, 4096, 7, 0.0, OutType::Int64, Scale::None, true},
      {"u8", "s8", 8, 512, 1024, 64, 0.5, OutType::Int32, Scale::None, true},
      {"u16", "s8", 2, 300, 1024, 100, 0.9, OutType::F32, Scale::Tensor, true},
  };
  uint64_t seed = 101;
  for (const Problem &p : problems)
    EXPECT_EQ(run_dense(*ctx, p, seed++), "") << p.lhs << "x" << p.rhs << " V=" << p.v << " M=" << p.m << " K=" << p.k
                                               << " N=" << p.n << " out " << out_name(p.out) << " +ccol";
}

TEST(DenseRouteGpu, RunDoesNotSynchronizeAndRepeatsExactly) {
  MAGICUBE_REQUIRE_GPU(ctx);
  if (std::string why = dense_library_unavailable(); !why.empty()) GTEST_SKIP() << "no cuBLASLt: " << why;
  // Two launches back to back on the stream, checked after one synchronize: the same result.
  std::mt19937_64 rng(11);
  OpSpec s;
  s.pinned = 0;
  VectorSparse a = synthetic_sparse(rng, 768, 1536, 0.6, 8, s.lhs);
  auto pipe = Pipeline::spmm(s, a, random_dense(rng, 1536 * 48, s.rhs), 48);
  ASSERT_FALSE(bool(pipe->prepare_dense(*ctx)));
  ASSERT_FALSE(bool(pipe->poison()));
  ASSERT_FALSE(bool(pipe->launch_dense()));
  ASSERT_FALSE(bool(pipe->launch_dense()));
  ASSERT_FALSE(bool(ctx->synchronize()));
  auto v = pipe->verify();
  ASSERT_TRUE(bool(v));
  EXPECT_TRUE(v->exact());
  // Which of the three forms runs is timed (the fastest here): any of them, described.
  EXPECT_EQ(pipe->dense_describe().rfind("cuBLASLt int8 ", 0), 0u) << pipe->dense_describe();
}

namespace {
// C = A Bt^T by `g` on random int8 operands; "" when it equals the CPU's int32 product.
std::string gemm_exact(Context &ctx, DenseGemm &g, bool select, uint64_t seed) {
  std::mt19937_64 rng(seed);
  const int64_t m = g.m(), n = g.n(), k = g.k();
  std::vector<int8_t> a(size_t(m * k)), bt(size_t(n * k));
  for (auto &x : a) x = int8_t(int(rng() % 256) - 128);
  for (auto &x : bt) x = int8_t(int(rng() % 256) - 128);
  auto da = DeviceBuffer::from(a);
  auto db = DeviceBuffer::from(bt);
  auto dc = DeviceBuffer::allocate(size_t(m * n) * 4);
  auto ws = DeviceBuffer::allocate(g.workspace_bytes());
  if (!da || !db || !dc || !ws) return "allocation failed";
  if (auto e = dc->memset(0x5a)) return llvm::toString(std::move(e));
  if (select)
    if (auto e = g.select(ctx, da->ptr(), db->ptr(), dc->ptr(), ws->ptr())) return llvm::toString(std::move(e));
  if (auto e = dc->memset(0x5a)) return llvm::toString(std::move(e));
  if (auto e = g.run(da->ptr(), db->ptr(), dc->ptr(), ws->ptr())) return llvm::toString(std::move(e));
  if (auto e = ctx.synchronize()) return llvm::toString(std::move(e));
  auto c = dc->download<int32_t>(size_t(m * n));
  if (!c) return llvm::toString(c.takeError());
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) {
      int32_t want = 0;
      for (int64_t x = 0; x < k; ++x) want += int32_t(a[size_t(i * k + x)]) * int32_t(bt[size_t(j * k + x)]);
      if ((*c)[size_t(i * n + j)] != want)
        return "C[" + std::to_string(i) + ", " + std::to_string(j) + "] = " + std::to_string((*c)[size_t(i * n + j)]) +
               ", expected " + std::to_string(want) + " (" + g.describe() + ")";
    }
  return "";
}
}  // namespace

TEST(DenseRouteGpu, EveryFormComputesOurRowMajorC) {
  MAGICUBE_REQUIRE_GPU(ctx);
  if (std::string why = dense_library_unavailable(); !why.empty()) GTEST_SKIP() << "no cuBLASLt: " << why;
  // Each form alone with the heuristic's first algorithm, then every form timed by select():
  // the row-major M x N C either way. A form cuBLASLt refuses here is reported, not failed,
  // except the C^T form the route has always used.
  const int64_t shapes[][3] = {{256, 16, 512}, {384, 1, 1024}, {128, 100, 256}, {1000, 64, 2048}};
  uint64_t seed = 21;
  for (const auto &s : shapes) {
    for (DenseForm f : {DenseForm::TransposedC, DenseForm::RowOrderC, DenseForm::RowOrderAll}) {
      auto g = DenseGemm::create(s[0], s[1], s[2], DenseGemm::kDefaultWorkspace, form_bit(f));
      if (!g) {
        const std::string why = llvm::toString(g.takeError());
        if (f == DenseForm::TransposedC) ADD_FAILURE() << why;
        else std::printf("M=%ld N=%ld K=%ld: %s not offered: %s\n", long(s[0]), long(s[1]), long(s[2]),
                         dense_form_name(f), why.c_str());
        continue;
      }
      EXPECT_EQ((*g)->form(), f);
      EXPECT_EQ(gemm_exact(*ctx, **g, false, seed++), "") << dense_form_name(f) << " M=" << s[0] << " N=" << s[1];
    }
    auto all = DenseGemm::create(s[0], s[1], s[2]);
    ASSERT_TRUE(bool(all)) << llvm::toString(all.takeError());
    EXPECT_EQ(gemm_exact(*ctx, **all, true, seed++), "") << "M=" << s[0] << " N=" << s[1];
    std::printf("M=%ld N=%ld K=%ld: %s\n", long(s[0]), long(s[1]), long(s[2]), (*all)->describe().c_str());
  }
}

TEST(DenseRouteGpu, OneSelectionAGemmPerProcess) {
  MAGICUBE_REQUIRE_GPU(ctx);
  if (std::string why = dense_library_unavailable(); !why.empty()) GTEST_SKIP() << "no cuBLASLt: " << why;
  // A second plan of the same shape takes the first's selection untimed, on other buffers, and
  // stays exact; another shape or workspace is timed anew; choose() forgets the recall.
  auto first = DenseGemm::create(640, 48, 1536);
  ASSERT_TRUE(bool(first)) << llvm::toString(first.takeError());
  ASSERT_GT((*first)->algorithms(), 1);
  EXPECT_EQ(gemm_exact(*ctx, **first, true, 91), "");
  const std::string chosen = (*first)->describe();
  EXPECT_EQ(chosen.find("selected earlier"), std::string::npos) << chosen;
  auto again = DenseGemm::create(640, 48, 1536);
  ASSERT_TRUE(bool(again)) << llvm::toString(again.takeError());
  EXPECT_EQ(gemm_exact(*ctx, **again, true, 92), "");
  const std::string recalled = (*again)->describe();
  EXPECT_EQ(recalled, chosen.substr(0, chosen.size() - 1) + ", selected earlier in this process)");
  (*again)->choose(0);
  EXPECT_EQ((*again)->describe().find("selected earlier"), std::string::npos);
  for (auto [n, ws] : {std::pair<int64_t, size_t>{48, DenseGemm::kDefaultWorkspace / 2}, {56, DenseGemm::kDefaultWorkspace}}) {
    auto other = DenseGemm::create(640, n, 1536, ws);
    ASSERT_TRUE(bool(other)) << llvm::toString(other.takeError());
    EXPECT_EQ(gemm_exact(*ctx, **other, true, 93), "");
    EXPECT_EQ((*other)->describe().find("selected earlier"), std::string::npos) << (*other)->describe();
  }
}

TEST(DenseRouteGpu, PipelinesOfOneMatrixShareItsDeviceCopies) {
  MAGICUBE_REQUIRE_GPU(ctx);
  if (std::string why = dense_library_unavailable(); !why.empty()) GTEST_SKIP() << "no cuBLASLt: " << why;
  // The bench's llm section: one weight at several N. The same plan packs A once; the dense
  // copy is uploaded once; every result stays exact, also a second verify of one output.
  std::mt19937_64 rng(5);
  OpSpec s;
  s.pinned = 0;
  VectorSparse a = synthetic_sparse(rng, 512, 1024, 0.7, 8, s.lhs);
  auto cache = std::make_shared<SpmmLhsCache>();
  const MatrixSignature sig = spmm_signature(a, 256);
  auto d = dispatch(s, &sig, device_facts(*ctx));
  ASSERT_TRUE(bool(d)) << llvm::toString(d.takeError());
  for (int64_t n : {256, 512}) {  // the same plan at both N (a 256-wide tile at most)
    auto pipe = Pipeline::spmm(d->plan.spec, a, random_dense(rng, 1024 * n, s.rhs), n, cache);
    ASSERT_FALSE(bool(pipe->prepare(d->plan)));
    auto k = Kernel::get(*ctx, d->plan);
    ASSERT_TRUE(bool(k)) << llvm::toString(k.takeError());
    ASSERT_FALSE(bool(pipe->poison()));
    ASSERT_FALSE(bool(pipe->launch(**k)));
    ASSERT_FALSE(bool(ctx->synchronize()));
    auto v = pipe->verify();
    ASSERT_TRUE(bool(v));
    EXPECT_TRUE(v->exact()) << n;
    ASSERT_FALSE(bool(pipe->prepare_dense(*ctx)));
    ASSERT_FALSE(bool(pipe->poison()));
    ASSERT_FALSE(bool(pipe->launch_dense()));
    ASSERT_FALSE(bool(ctx->synchronize()));
    auto w = pipe->verify();
    ASSERT_TRUE(bool(w));
    EXPECT_TRUE(w->exact()) << n << " (" << pipe->dense_describe() << ")";
    EXPECT_EQ(w->checked, v->checked);
  }
  EXPECT_EQ(cache->packs, 1);
  EXPECT_EQ(cache->dense.bytes(), size_t(512 * 1024));
}

// Every candidate select() may pick computes our C: the heuristic's configurations, each with
// the other CTA swizzle, and the column-major C form's configurations set on the row-ordered
// C form (each admitted by cublasLtMatmulAlgoCheck). Shapes of the llm grid's kinds scaled
// down, where the variants exist: at least one shape must add some to the heuristic's.
TEST(DenseRouteGpu, EveryCandidateComputesOurRowMajorC) {
  MAGICUBE_REQUIRE_GPU(ctx);
  if (std::string why = dense_library_unavailable(); !why.empty()) GTEST_SKIP() << "no cuBLASLt: " << why;
  const int64_t shapes[][3] = {{1024, 512, 2048}, {512, 64, 1024}, {384, 8, 512}};
  uint64_t seed = 41;
  int variants = 0;
  for (const auto &s : shapes) {
    auto g = DenseGemm::create(s[0], s[1], s[2]);
    ASSERT_TRUE(bool(g)) << llvm::toString(g.takeError());
    for (int i = 0; i < (*g)->algorithms(); ++i) {
      (*g)->choose(i);
      const std::string what = (*g)->describe();
      if (what.find("with the other CTA swizzle") != std::string::npos || what.find("column-major C") != std::string::npos)
        ++variants;
      EXPECT_EQ(gemm_exact(*ctx, **g, false, seed++), "") << "M=" << s[0] << " N=" << s[1] << " K=" << s[2] << ": " << what;
    }
    std::printf("M=%ld N=%ld K=%ld: %d candidates\n", long(s[0]), long(s[1]), long(s[2]), (*g)->algorithms());
  }
  EXPECT_GT(variants, 0) << "no shape had a variant beyond the heuristic's list";
}
