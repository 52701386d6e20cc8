// The public C++ API (runtime/magicube.h): typed errors naming the bad input, the host-side
// pack helpers (equal to the runtime's own), and, where a GPU is present, Spmm and
// spmm_host bit-exact against the int64 reference. GPU tests skip with a one-line reason.
#include "runtime/magicube.h"

#include <gtest/gtest.h>

#include <random>

#include "compiler/codegen.h"
#include "compiler/planner.h"
#include "runtime/reference.h"
#include "tests/gpu/gpu_env.h"
#include "tests/test_util.h"

using magicube::testing::random_dense;
using magicube::testing::random_vector_sparse;

namespace {

using magicube::ElemType;
using magicube::OpKind;
using magicube::OpSpec;
using magicube::OutType;
using Kind = magicube::Error::Kind;

OpSpec spmm(ElemType l, ElemType r, int v, OutType out = OutType::Int32, int arch = 90) {
  return OpSpec{OpKind::SpMM, l, r, v, 64, true, out, arch};
}

// Runs `f`, which must throw magicube::Error of `kind` whose message contains `needle`.
template <class F>
void expect_error(F f, Kind kind, const std::string &needle) {
  try {
    f();
    ADD_FAILURE() << "no magicube::Error thrown (wanted one naming '" << needle << "')";
  } catch (const magicube::Error &e) {
    EXPECT_EQ(e.kind(), kind) << magicube::Error::kind_name(e.kind()) << ": " << e.what();
    EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
  } catch (const std::exception &e) {
    ADD_FAILURE() << "not a magicube::Error: " << e.what();
  }
}

TEST(Api, InvalidSpecThrowsATypedErrorNamingTheField) {
  expect_error([] { magicube::Spmm op(spmm({17, true}, {8, true}, 8)); }, Kind::Invalid, "lhs");
  expect_error([] { magicube::Spmm op(spmm({8, true}, {0, false}, 8)); }, Kind::Invalid, "rhs");
  expect_error([] { magicube::Spmm op(spmm({8, true}, {8, true}, 3)); }, Kind::Invalid, "V=3");
  expect_error([] { magicube::Spmm op(spmm({8, true}, {8, true}, 8, OutType::Int32, 75)); }, Kind::Invalid, "arch");
  expect_error([] { magicube::parse_spec("spmm.s17xs8.v8.n64.pf.i32.sm_90"); }, Kind::Invalid, "lhs");
  expect_error([] { magicube::parse_spec("spmm.s8"); }, Kind::Invalid, "7 dot-separated fields");
  OpSpec sddmm = spmm({8, true}, {8, true}, 8);
  sddmm.op = OpKind::SDDMM;
  expect_error([&] { magicube::Spmm op(sddmm); }, Kind::Invalid, "op");
  expect_error([] { magicube::Spmm op(spmm({8, true}, {8, true}, 8), {.candidate = 99}); }, Kind::Invalid,
               "candidate");
  // A magicube::Error is a std::runtime_error.
  try {
    magicube::Spmm op(spmm({17, true}, {8, true}, 8));
  } catch (const std::runtime_error &e) {
    EXPECT_NE(std::string(e.what()).find("17"), std::string::npos);
  }
}

TEST(Api, PlanAndSpecAccessors) {
  OpSpec spec = magicube::parse_spec("spmm.s12xu4.v4.n64.pf.i32.sm_80");
  magicube::Spmm op(spec);
  auto best = magicube::plan(spec);
  ASSERT_TRUE(bool(best));
  EXPECT_EQ(op.spec(), spec);
  EXPECT_EQ(op.kernel_name(), best->kernel_name());
  EXPECT_EQ(op.max_reduction_length(), best->max_exact_k);
  EXPECT_EQ(op.output_element_bytes(), 4u);
  auto all = magicube::plan_candidates(spec);
  ASSERT_TRUE(bool(all));
  ASSERT_GE(all->size(), 2u);
  magicube::Spmm second(spec, {.candidate = 1});
  EXPECT_EQ(second.kernel_name(), (*all)[1].kernel_name());

  magicube::Spmm wide(spmm({16, true}, {16, true}, 8, OutType::Int64));
  EXPECT_EQ(wide.output_element_bytes(), 8u);
  EXPECT_EQ(wide.max_reduction_length(), wide.plan().max_term_k);
  // Copies share the plan.
  magicube::Spmm copy = op;
  EXPECT_EQ(&copy.plan(), &op.plan());
}

// The pack helpers give exactly what build_srbcrs + pack_lhs / pack_rhs give.
TEST(Api, PackHelpersMatchTheRuntime) {
  std::mt19937_64 rng(5);
  for (OpSpec spec : {spmm({8, true}, {4, false}, 8), spmm({12, true}, {4, true}, 2), spmm({3, false}, {7, true}, 1)}) {
    magicube::Spmm op(spec);
    magicube::VectorSparse a = random_vector_sparse(rng, 37, 70, spec.v, 40, spec.lhs);
    std::vector<int64_t> b = random_dense(rng, 70 * 45, spec.rhs);

    magicube::HostLhs ha = op.pack_lhs(a);
    auto layout = magicube::build_srbcrs(a, op.plan());
    ASSERT_TRUE(bool(layout));
    auto pa = magicube::pack_lhs(*layout, op.plan());
    ASSERT_TRUE(bool(pa));
    EXPECT_EQ(ha.layout.rows, 37);
    EXPECT_EQ(ha.layout.cols, 70);
    EXPECT_EQ(ha.layout.v, spec.v);
    EXPECT_EQ(ha.layout.max_block_length, a.max_block_length());
    EXPECT_EQ(ha.packed.row_ptr, pa->row_ptr);
    EXPECT_EQ(ha.packed.col_idx, pa->col_idx);
    EXPECT_EQ(ha.packed.planes, pa->planes);
    EXPECT_EQ(ha.packed.planes.size(), op.plan().lhs.size());

    magicube::PackedRhs hb = op.pack_rhs(b, 70, 45);
    auto pb = magicube::pack_rhs(b, 70, 45, op.plan());
    ASSERT_TRUE(bool(pb));
    EXPECT_EQ(hb.k, 70);
    EXPECT_EQ(hb.n, 45);
    EXPECT_EQ(hb.ldb % magicube::kLdbAlign, 0);
    EXPECT_EQ(hb.planes, pb->planes);
    EXPECT_EQ(hb.planes.size(), op.plan().rhs.size());
  }
}

TEST(Api, PackHelpersRefuseBadInputs) {
  std::mt19937_64 rng(6);
  magicube::Spmm op(spmm({8, true}, {4, false}, 8));
  // A value outside the rhs type, named with its index.
  std::vector<int64_t> b(16 * 8, 1);
  b[3 * 8 + 2] = 16;
  expect_error([&] { op.pack_rhs(b, 16, 8); }, Kind::Invalid, "rhs B[3, 2] = 16");
  expect_error([&] { op.pack_rhs(b, 16, 7); }, Kind::Invalid, "rhs B");
  // A with another V.
  magicube::VectorSparse a4 = random_vector_sparse(rng, 16, 16, 4, 8, {8, true});
  expect_error([&] { op.pack_lhs(a4); }, Kind::Invalid, "V=4");
  // A value outside the lhs type.
  magicube::VectorSparse a = random_vector_sparse(rng, 16, 16, 8, 8, {8, true});
  a.values[0] = 200;
  expect_error([&] { op.pack_lhs(a); }, Kind::Invalid, "lhs A");
  // A row-block longer than an int32 output stays exact for.
  magicube::Spmm wide(spmm({16, true}, {16, true}, 8));
  magicube::VectorSparse long_rows = random_vector_sparse(rng, 16, 64, 8, 64, {16, true});
  expect_error([&] { wide.pack_lhs(long_rows); }, Kind::Invalid, "max_exact_k");
}

TEST(Api, ErrorsWrapDriverErrorsAndCudaErrors) {
  llvm::Error e = llvm::make_error<magicube::DriverError>("cuLaunchKernel", CUDA_ERROR_LAUNCH_FAILED,
                                                          "CUDA_ERROR_LAUNCH_FAILED", "unspecified launch failure",
                                                          "kernel k");
  magicube::Error err = magicube::Error::from(std::move(e), Kind::Invalid);
  EXPECT_EQ(err.kind(), Kind::Cuda);
  EXPECT_EQ(err.cuda_call(), "cuLaunchKernel");
  EXPECT_EQ(err.cuda_code(), CUDA_ERROR_LAUNCH_FAILED);
  EXPECT_EQ(err.cuda_code_name(), "CUDA_ERROR_LAUNCH_FAILED");
  EXPECT_EQ(std::string(err.what()),
            "cuLaunchKernel failed: CUDA_ERROR_LAUNCH_FAILED (unspecified launch failure); kernel k");

  magicube::CudaError ce("cuMemAlloc", CUDA_ERROR_OUT_OF_MEMORY, "CUDA_ERROR_OUT_OF_MEMORY", "cuMemAlloc failed: oom");
  magicube::Error from_ce(ce);
  EXPECT_EQ(from_ce.kind(), Kind::Cuda);
  EXPECT_EQ(from_ce.cuda_call(), "cuMemAlloc");
  EXPECT_STREQ(from_ce.what(), "cuMemAlloc failed: oom");

  magicube::Error plain =
      magicube::Error::from(llvm::createStringError(llvm::inconvertibleErrorCode(), "lhs: bad"), Kind::Compile);
  EXPECT_EQ(plain.kind(), Kind::Compile);
  EXPECT_STREQ(plain.what(), "lhs: bad");
  EXPECT_EQ(plain.cuda_code(), CUDA_SUCCESS);
}

// Without a GPU the device-side calls say so with Kind::NoGpu; planning and packing work.
TEST(Api, DeviceCallsWithoutAGpuThrowNoGpu) {
  std::string reason = magicube::no_gpu_reason();
  if (reason.empty()) GTEST_SKIP() << "a GPU is present (the GPU tests below cover the device calls)";
  std::mt19937_64 rng(7);
  OpSpec spec = spmm({8, true}, {8, true}, 8);
  magicube::Spmm op(spec);
  magicube::VectorSparse a = random_vector_sparse(rng, 16, 32, 8, 8, spec.lhs);
  std::vector<int64_t> b = random_dense(rng, 32 * 8, spec.rhs);
  magicube::HostLhs ha = op.pack_lhs(a);
  expect_error([&] { op.upload(ha); }, Kind::NoGpu, reason);
  expect_error([&] { op.load(); }, Kind::NoGpu, "no GPU: ");
  expect_error([&] { magicube::spmm_host(spec, a, b, 8); }, Kind::NoGpu, reason);
}

// ---- GPU ---------------------------------------------------------------------------------

TEST(ApiGpu, SpmmHostIsBitExact) {
  MAGICUBE_REQUIRE_GPU(ctx);
  std::mt19937_64 rng(8);
  int arch = ctx->compute_capability() >= 90 ? 90 : 80;
  for (OpSpec spec : {spmm({8, true}, {8, true}, 8, OutType::Int32, arch), spmm({12, true}, {4, false}, 4, OutType::Int32, arch),
                      spmm({16, true}, {16, true}, 2, OutType::Int64, arch), spmm({3, false}, {7, true}, 1, OutType::Int32, arch)}) {
    int64_t m = 77, k = 301, n = 200;
    int64_t bound = spec.out == OutType::Int32 ? magicube::Spmm(spec).max_reduction_length() : k;
    magicube::VectorSparse a = random_vector_sparse(rng, m, k, spec.v, std::min(k, bound), spec.lhs);
    std::vector<int64_t> b = random_dense(rng, k * n, spec.rhs);
    std::vector<int64_t> got = magicube::spmm_host(spec, a, b, n);
    EXPECT_EQ(got, magicube::reference_spmm(a, b, n)) << magicube::to_string(spec);
  }
}

TEST(ApiGpu, SpmmRunOnDeviceOperands) {
  MAGICUBE_REQUIRE_GPU(ctx);
  std::mt19937_64 rng(9);
  OpSpec spec = spmm({8, true}, {4, false}, 8, OutType::Int32, ctx->compute_capability() >= 90 ? 90 : 80);
  magicube::Spmm op(spec);
  op.load();
  int64_t m = 64, k = 128, n = 96;
  magicube::VectorSparse a = random_vector_sparse(rng, m, k, 8, k, spec.lhs);
  std::vector<int64_t> b = random_dense(rng, k * n, spec.rhs);
  magicube::DeviceLhs da = op.upload(op.pack_lhs(a));
  magicube::DeviceRhs db = op.upload(op.pack_rhs(b, k, n));
  magicube::DeviceBuffer c = op.allocate_output(m, n);
  op.run(da, db, c.ptr());
  ASSERT_FALSE(bool(ctx->synchronize()));
  auto got32 = c.download<int32_t>(m * n);
  ASSERT_TRUE(bool(got32)) << llvm::toString(got32.takeError());
  std::vector<int64_t> got(got32->begin(), got32->end());
  EXPECT_EQ(got, magicube::reference_spmm(a, b, n));

  // Operands packed for another plan are refused, naming the plane counts.
  magicube::Spmm other(spmm({16, true}, {4, false}, 8, OutType::Int32, spec.arch));
  expect_error([&] { other.run(da, db, c.ptr()); }, Kind::Invalid, "planes");
}

}  // namespace
