// The dense route on the GPU: through the library's pipeline (as magicube run, tune and the
// bench use it) its int32 output equals the int64 reference for every int8-fitting
// precision, V and an awkward N; the dispatch's forced route runs the same. Skips with a
// one-line reason where there is no GPU, or where libcublasLt cannot be loaded.
#include <gtest/gtest.h>

#include "runtime/autotune.h"
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
};

// Runs the dense route of `p` through the pipeline; "" when bit-exact.
std::string run_dense(Context &ctx, const Problem &p, uint64_t seed) {
  std::mt19937_64 rng(seed);
  OpSpec s;
  s.lhs = llvm::cantFail(parse_elem(p.lhs, "lhs"));
  s.rhs = llvm::cantFail(parse_elem(p.rhs, "rhs"));
  s.v = p.v;
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
  if (auto e = pipe->launch_dense()) return llvm::toString(std::move(e));
  if (auto e = ctx.synchronize()) return llvm::toString(std::move(e));
  auto v = pipe->verify();
  if (!v) return llvm::toString(v.takeError());
  if (!v->exact())
    return "C[" + std::to_string(v->first->row) + ", " + std::to_string(v->first->col) + "] = " +
           std::to_string(v->first->got) + ", expected " + std::to_string(v->first->want) + " (" + pipe->dense_describe() + ")";
  return "";
}

}  // namespace

TEST(DenseRouteGpu, BitExactForEveryInt8Precision) {
  MAGICUBE_REQUIRE_GPU(ctx);
  if (std::string why = dense_library_unavailable(); !why.empty()) GTEST_SKIP() << "no cuBLASLt: " << why;
  const Problem problems[] = {
      {"s8", "s8", 8, 512, 1024, 64, 0.5},   {"s8", "s8", 8, 1000, 2048, 1, 0.7},  // N=1, M not a multiple of V
      {"s4", "s8", 4, 256, 512, 33, 0.5},    {"s4", "s4", 2, 130, 256, 16, 0.9},   // odd N, M = 65 row-blocks of 2
      {"u7", "s5", 8, 384, 1024, 100, 0.7},  {"s8", "u7", 1, 64, 4096, 8, 0.0},    // V=1, no zero vector
      {"s2", "s8", 8, 2048, 2048, 512, 0.9},
  };
  uint64_t seed = 1;
  for (const Problem &p : problems)
    EXPECT_EQ(run_dense(*ctx, p, seed++), "") << p.lhs << "x" << p.rhs << " V=" << p.v << " M=" << p.m << " K=" << p.k
                                               << " N=" << p.n << " s=" << p.sparsity;
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
  EXPECT_NE(pipe->dense_describe().find("cuBLASLt int8 TN"), std::string::npos) << pipe->dense_describe();
}
