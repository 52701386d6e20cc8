// The public C++ API (runtime/magicube.h): typed errors naming the bad input, the host-side
// pack helpers of Spmm and Sddmm (equal to the runtime's own), epilogue checks, and, where a
// GPU is present, Spmm/spmm_host and Sddmm/sddmm_host bit-exact against the int64 reference
// (float outputs: against its rounded dequantization). GPU tests skip with a one-line reason.
#include "runtime/magicube.h"

#include <gtest/gtest.h>

#include "compiler/dense_chunks.h"

#include <iostream>
#include <optional>
#include <random>

#include <sys/resource.h>

#include "compiler/codegen.h"
#include "compiler/dense_chunks.h"
#include "compiler/planner.h"
#include "runtime/dense_gemm.h"
#include "runtime/epilogue.h"
#include "runtime/reference.h"
#include "tests/fault_util.h"
#include "tests/gpu/gpu_env.h"
#include "tests/test_util.h"

using magicube::testing::random_dense;
using magicube::testing::random_vector_sparse;

namespace {

using magicube::ElemType;
using magicube::OpKind;
using magicube::OpSpec;
using magicube::OutType;
using magicube::Scale;
using magicube::Bias;
using magicube::SparseLayout;
using Kind = magicube::Error::Kind;

OpSpec spmm(ElemType l, ElemType r, int v, OutType out = OutType::Int32, int arch = 90) {
  return OpSpec{OpKind::SpMM, l, r, v, 64, true, out, arch};
}
OpSpec sddmm(ElemType l, ElemType r, int v, OutType out = OutType::Int32, int arch = 90, Scale scale = Scale::None) {
  return OpSpec{OpKind::SDDMM, l, r, v, 64, true, out, arch, scale};
}

// The stored element of a float output for the double x.
int64_t stored_bits(OutType t, double x) {
  if (t == OutType::F32) return magicube::f32_bits(x);
  if (t == OutType::F16) return magicube::f16_bits(x);
  return magicube::bf16_bits(x);
}

// Random scales for an m x n result (and a bias for SpMM).
magicube::EpilogueArgs random_epilogue(std::mt19937_64 &rng, const OpSpec &s, int64_t m, int64_t n) {
  std::uniform_real_distribution<float> u(0.5f, 1.5f);
  magicube::EpilogueArgs e;
  if (s.scale == Scale::Tensor) e.alpha = 0.0123f;
  if (s.scale == Scale::RowCol) {
    for (int64_t i = 0; i < m; ++i) e.row_scale.push_back(u(rng) * 1e-2f);
    for (int64_t i = 0; i < n; ++i) e.col_scale.push_back(u(rng) * 1e-2f);
  }
  if (s.bias != Bias::None)
    for (int64_t i = 0, nb = s.bias == Bias::Row ? m : n; i < nb; ++i) e.bias.push_back(u(rng) * 10 - 15);
  return e;
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

// ---- float outputs and SDDMM, host side ------------------------------------------------------

TEST(Api, SpmmAcceptsFloatOutputs) {
  OpSpec f16 = magicube::parse_spec("spmm.s8xs8.v8.n64.pf.f16+rc+colbias.sm_90");
  magicube::Spmm op(f16);
  EXPECT_EQ(op.spec(), f16);
  EXPECT_EQ(op.output_element_bytes(), 2u);
  EXPECT_EQ(op.max_reduction_length(), op.plan().max_term_k);
  EXPECT_EQ(magicube::Spmm(magicube::parse_spec("spmm.s8xs8.v8.n64.pf.f32+t.sm_90")).output_element_bytes(), 4u);
  EXPECT_EQ(magicube::Spmm(magicube::parse_spec("spmm.u4xs4.v2.n64.pf.bf16.sm_80")).output_element_bytes(), 2u);
  // The IR refuses what makes no sense, with the field named.
  expect_error([] { magicube::parse_spec("spmm.s8xs8.v8.n64.pf.i32+rc.sm_90"); }, Kind::Invalid, "scale");
  expect_error([] { magicube::parse_spec("sddmm.s8xs8.v8.n64.pf.f16+rowbias.sm_90"); }, Kind::Invalid, "bias");
}

TEST(Api, CheckEpilogueNamesTheVector) {
  magicube::Spmm rc(magicube::parse_spec("spmm.s8xs8.v8.n64.pf.f16+rc+colbias.sm_90"));
  magicube::EpilogueArgs e;
  e.row_scale.assign(16, 1.0f);
  e.col_scale.assign(8, 1.0f);
  e.bias.assign(8, 0.5f);
  rc.check_epilogue(e, 16, 8);  // fits
  expect_error([&] { rc.check_epilogue(e, 17, 8); }, Kind::Invalid, "row_scale has 16 values, expected 17");
  expect_error([&] { rc.check_epilogue(e, 16, 9); }, Kind::Invalid, "col_scale has 8 values, expected 9");
  magicube::EpilogueArgs no_bias = e;
  no_bias.bias.clear();
  expect_error([&] { rc.check_epilogue(no_bias, 16, 8); }, Kind::Invalid, "bias has 0 values, expected 8");
  magicube::EpilogueArgs alpha = e;
  alpha.alpha = 2.0f;
  expect_error([&] { rc.check_epilogue(alpha, 16, 8); }, Kind::Invalid, "alpha");
  // Scales for an integer output are a mistake.
  magicube::Spmm i32(spmm({8, true}, {8, true}, 8));
  i32.check_epilogue({}, 16, 8);
  expect_error([&] { i32.check_epilogue(e, 16, 8); }, Kind::Invalid, "float output");
  // SDDMM takes scales only.
  magicube::Sddmm sd(magicube::parse_spec("sddmm.s8xs8.v8.n64.pf.f16+t.sm_90"));
  magicube::EpilogueArgs half;
  half.alpha = 0.5f;
  sd.check_epilogue(half, 16, 8);
  expect_error([&] { sd.check_epilogue(e, 16, 8); }, Kind::Invalid, "rowcol");
}

TEST(Api, StoredValueReadsTheBitPatterns) {
  EXPECT_EQ(magicube::stored_value(OutType::Int32, -7), -7.0);
  EXPECT_EQ(magicube::stored_value(OutType::Int64, int64_t(1) << 40), std::ldexp(1.0, 40));
  EXPECT_EQ(magicube::stored_value(OutType::F32, 0x3fc00000), 1.5);
  EXPECT_EQ(magicube::stored_value(OutType::F16, 0x3c00), 1.0);
  EXPECT_EQ(magicube::stored_value(OutType::F16, 0xc000), -2.0);
  EXPECT_EQ(magicube::stored_value(OutType::BF16, 0x3f80), 1.0);
  for (double x : {0.1, -3.25, 1234.5})
    for (OutType t : {OutType::F32, OutType::F16, OutType::BF16})
      EXPECT_NEAR(magicube::stored_value(t, stored_bits(t, x)), x, std::fabs(x) * 4e-3) << x;
}

TEST(Api, SddmmPlanning) {
  OpSpec spec = magicube::parse_spec("sddmm.s12xu4.v4.n64.pf.i32.sm_80");
  magicube::Sddmm op(spec);
  auto best = magicube::plan(spec);
  ASSERT_TRUE(bool(best));
  EXPECT_EQ(op.spec(), spec);
  EXPECT_EQ(op.kernel_name(), best->kernel_name());
  EXPECT_EQ(op.max_reduction_length(), best->max_exact_k);
  EXPECT_EQ(op.output_element_bytes(), 4u);
  auto all = magicube::plan_candidates(spec);
  ASSERT_TRUE(bool(all));
  if (all->size() >= 2) {
    magicube::Sddmm second(spec, {.candidate = 1});
    EXPECT_EQ(second.kernel_name(), (*all)[1].kernel_name());
  }
  magicube::Sddmm wide(sddmm({16, true}, {16, true}, 8, OutType::Int64));
  EXPECT_EQ(wide.output_element_bytes(), 8u);
  EXPECT_EQ(wide.max_reduction_length(), wide.plan().max_term_k);
  magicube::Sddmm f16(magicube::parse_spec("sddmm.s8xs8.v8.n64.pf.f16+rc.sm_90"));
  EXPECT_EQ(f16.output_element_bytes(), 2u);
  magicube::Sddmm copy = op;
  EXPECT_EQ(&copy.plan(), &op.plan());

  expect_error([] { magicube::Sddmm op(spmm({8, true}, {8, true}, 8)); }, Kind::Invalid, "op: Sddmm needs an sddmm spec");
  expect_error([] { magicube::Sddmm op(sddmm({17, true}, {8, true}, 8)); }, Kind::Invalid, "lhs");
  expect_error([] { magicube::Sddmm op(sddmm({8, true}, {8, true}, 8), {.candidate = 99}); }, Kind::Invalid,
               "candidate");
}

// pack_mask / pack_lhs / pack_rhs give exactly what the runtime's own layout and packing give.
TEST(Api, SddmmPackHelpersMatchTheRuntime) {
  std::mt19937_64 rng(15);
  for (OpSpec spec : {sddmm({8, true}, {8, true}, 8), sddmm({12, true}, {4, false}, 2), sddmm({3, false}, {7, true}, 1),
                      sddmm({4, true}, {4, true}, 4, OutType::F16, 80, Scale::RowCol)}) {
    magicube::Sddmm op(spec);
    const int64_t m = 37, n = 70, k = 45;
    magicube::VectorSparse mask = random_vector_sparse(rng, m, n, spec.v, 40, ElemType{1, false});
    std::vector<int64_t> a = random_dense(rng, m * k, spec.lhs), b = random_dense(rng, k * n, spec.rhs);
    for (int stride : {32, 16}) {
      magicube::HostMask hm = op.pack_mask(mask, stride);
      magicube::SrBcrs want = magicube::build_srbcrs(mask, stride, false, op.plan().shuffle);
      EXPECT_EQ(hm.layout.row_ptr, want.row_ptr);
      EXPECT_EQ(hm.layout.col_idx, want.col_idx);
      EXPECT_EQ(hm.layout.stride, stride);
      EXPECT_EQ(hm.pattern.col, mask.col);
      EXPECT_EQ(hm.output_elements(SparseLayout::Bcrs), mask.num_vectors() * spec.v);
      EXPECT_EQ(hm.output_elements(SparseLayout::SrBcrs), want.num_slots() * spec.v);
      // output_index: BCRS is i * V + r; SR-BCRS is the value index of the vector's slot.
      for (int64_t blk = 0; blk < mask.num_blocks(); ++blk)
        for (int64_t i = mask.block_ptr[blk]; i < mask.block_ptr[blk + 1]; ++i)
          for (int r = 0; r < spec.v; ++r) {
            ASSERT_EQ(hm.output_index(SparseLayout::Bcrs, i, r), i * spec.v + r);
            int64_t slot = want.row_ptr[2 * blk] + (i - mask.block_ptr[blk]);
            ASSERT_EQ(hm.output_index(SparseLayout::SrBcrs, i, r), want.value_index(slot, r));
            ASSERT_EQ(want.col_idx[slot], mask.col[i]);
          }
    }
    magicube::PackedDense pa = op.pack_lhs(a, m, k), pb = op.pack_rhs(b, k, n);
    auto ra = magicube::pack_sddmm_lhs(a, m, k, op.plan());
    auto rb = magicube::pack_sddmm_rhs(b, k, n, op.plan());
    ASSERT_TRUE(bool(ra) && bool(rb));
    EXPECT_EQ(pa.planes, ra->planes);
    EXPECT_EQ(pb.planes, rb->planes);
    EXPECT_EQ(pa.rows, (m + spec.v - 1) / spec.v * spec.v);
    EXPECT_EQ(pb.rows, n);
    EXPECT_EQ(pa.k, k);
    EXPECT_EQ(pa.ld % magicube::kLdbAlign, 0);
    EXPECT_EQ(pa.planes.size(), op.plan().lhs.size());
    EXPECT_EQ(pb.planes.size(), op.plan().rhs.size());
  }
}

// pack_lhs refuses what pack_mask refuses: a column >= K (the kernel would read B out of
// bounds) and a repeated column (counted twice), and a malformed block_ptr or value count.
TEST(Api, PackLhsRefusesBadColumnsLikePackMask) {
  std::mt19937_64 rng(7);
  magicube::Spmm op(spmm({8, true}, {8, true}, 8));
  magicube::VectorSparse a = random_vector_sparse(rng, 16, 16, 8, 4, {8, true});
  ASSERT_GE(a.block_ptr[1] - a.block_ptr[0], 2);
  op.pack_lhs(a);  // well formed: accepted
  magicube::VectorSparse past_k = a;
  past_k.col[a.block_ptr[1] - 1] = 16;  // K = 16
  expect_error([&] { op.pack_lhs(past_k); }, Kind::Invalid, "has column 16, outside [0, 16)");
  magicube::VectorSparse negative = a;
  negative.col[0] = -1;
  expect_error([&] { op.pack_lhs(negative); }, Kind::Invalid, "has column -1");
  magicube::VectorSparse repeated = a;
  repeated.col[1] = repeated.col[0];
  expect_error([&] { op.pack_lhs(repeated); }, Kind::Invalid, "repeated");
  magicube::VectorSparse unsorted = a;
  std::swap(unsorted.col[0], unsorted.col[1]);
  expect_error([&] { op.pack_lhs(unsorted); }, Kind::Invalid, "not increasing");
  magicube::VectorSparse short_values = a;
  short_values.values.pop_back();
  expect_error([&] { op.pack_lhs(short_values); }, Kind::Invalid, "values, expected V=8 per vector");
  magicube::VectorSparse bad_ptr = a;
  bad_ptr.block_ptr.back() += 1;
  expect_error([&] { op.pack_lhs(bad_ptr); }, Kind::Invalid, "block_ptr");
  // The runtime's own layout builder refuses them too (run and tune go through it).
  auto layout = magicube::build_srbcrs(past_k, op.plan());
  ASSERT_FALSE(bool(layout));
  EXPECT_NE(llvm::toString(layout.takeError()).find("lhs A: vector"), std::string::npos);
}

// Sizes that overflow or cannot fit the host are Kind::Invalid naming the operand, worked out
// before allocating; an allocation that fails anyway is Kind::Invalid too, never an escaping
// std::bad_alloc. (Before: K x N overflowed to 0 and pack_rhs read past the empty B.)
TEST(Api, HugeSizesAreInvalidNotBadAlloc) {
  magicube::Spmm op(spmm({8, true}, {8, true}, 8));
  const int64_t big = int64_t(1) << 32;
  expect_error([&] { op.pack_rhs({}, big, big); }, Kind::Invalid, "overflows 64 bits");
  expect_error([&] { op.allocate_output(int64_t(1) << 40, int64_t(1) << 40); }, Kind::Invalid, "overflows 64 bits");
  magicube::Sddmm sd(sddmm({8, true}, {8, true}, 8));
  expect_error([&] { sd.pack_lhs({}, int64_t(1) << 62, 4); }, Kind::Invalid, "overflows 64 bits");
  expect_error([&] { sd.pack_rhs({}, 4, int64_t(1) << 62); }, Kind::Invalid, "overflows 64 bits");
  {
    ::setenv("MAGICUBE_HOST_MEMORY_LIMIT", "1M", 1);
    std::vector<int64_t> b(1024 * 1024, 1);
    expect_error([&] { op.pack_rhs(b, 1024, 1024); }, Kind::Invalid, "rhs B: its padded copy");
    expect_error([&] { sd.pack_lhs(b, 1024, 1024); }, Kind::Invalid, "the limit is 1.0 MiB");
    ::unsetenv("MAGICUBE_HOST_MEMORY_LIMIT");
  }
  // The backstop: an address-space limit the size check is told to ignore. (Not under
  // ASan, whose shadow memory needs far more address space than the limit.)
#if defined(__SANITIZE_ADDRESS__)
  GTEST_SKIP() << "the RLIMIT_AS backstop check cannot run under AddressSanitizer";
#endif
  std::string failure = magicube::testing::in_child([&]() -> std::string {
    ::setenv("MAGICUBE_HOST_MEMORY_LIMIT", "1024G", 1);
    std::vector<int64_t> a(size_t(1) << 22, 1);  // 4M rows of K = 1: the packed copy pads K to 128
    struct rlimit rl {};
    rl.rlim_cur = rl.rlim_max = rlim_t(1) << 31;  // 2 GiB of address space; the copy needs 4 GiB
    if (::setrlimit(RLIMIT_AS, &rl) != 0) return "setrlimit failed";
    try {
      sd.pack_lhs(a, int64_t(a.size()), 1);
      return "no error";
    } catch (const magicube::Error &e) {
      if (e.kind() != Kind::Invalid) return std::string("kind ") + magicube::Error::kind_name(e.kind());
      if (std::string(e.what()).find("Sddmm::pack_lhs: the operands are too large") == std::string::npos)
        return e.what();
      return "";
    } catch (const std::exception &e) {
      return std::string("escaped: ") + e.what();
    }
  });
  EXPECT_EQ(failure, "");
}

TEST(Api, SddmmPackHelpersRefuseBadInputs) {
  std::mt19937_64 rng(16);
  magicube::Sddmm op(sddmm({8, true}, {4, false}, 8));
  magicube::VectorSparse mask4 = random_vector_sparse(rng, 16, 16, 4, 8, ElemType{1, false});
  expect_error([&] { op.pack_mask(mask4); }, Kind::Invalid, "mask: has V=4");
  magicube::VectorSparse mask = random_vector_sparse(rng, 16, 16, 8, 8, ElemType{1, false});
  expect_error([&] { op.pack_mask(mask, 0); }, Kind::Invalid, "stride 0");
  magicube::VectorSparse bad_col = mask;
  bad_col.col[0] = 16;
  expect_error([&] { op.pack_mask(bad_col); }, Kind::Invalid, "column 16");
  magicube::VectorSparse bad_ptr = mask;
  bad_ptr.block_ptr.pop_back();
  expect_error([&] { op.pack_mask(bad_ptr); }, Kind::Invalid, "block_ptr");
  magicube::HostMask hm = op.pack_mask(mask);
  expect_error([&] { hm.output_index(SparseLayout::Bcrs, mask.num_vectors(), 0); }, Kind::Invalid, "out of range");

  std::vector<int64_t> a(16 * 10, 1), b(10 * 16, 1);
  a[3 * 10 + 2] = 200;
  expect_error([&] { op.pack_lhs(a, 16, 10); }, Kind::Invalid, "lhs A[3, 2] = 200");
  expect_error([&] { op.pack_lhs(a, 16, 9); }, Kind::Invalid, "lhs A");
  b[5] = 16;  // column-major: B[5, 0]
  expect_error([&] { op.pack_rhs(b, 10, 16); }, Kind::Invalid, "rhs B[5, 0] = 16");
  expect_error([&] { op.pack_rhs(b, 0, 16); }, Kind::Invalid, "rhs B: shape 0 x 16");
  // K beyond an int32 output's exactness bound.
  magicube::Sddmm wide(sddmm({16, true}, {16, true}, 8));
  std::vector<int64_t> long_a(16 * 64, 1);
  expect_error([&] { wide.pack_lhs(long_a, 16, 64); }, Kind::Invalid, "max_exact_k");
}

TEST(Api, SddmmDeviceCallsWithoutAGpuThrowNoGpu) {
  std::string reason = magicube::no_gpu_reason();
  if (reason.empty()) GTEST_SKIP() << "a GPU is present (the GPU tests below cover the device calls)";
  std::mt19937_64 rng(17);
  OpSpec spec = sddmm({8, true}, {8, true}, 8);
  magicube::Sddmm op(spec);
  magicube::VectorSparse mask = random_vector_sparse(rng, 16, 32, 8, 8, ElemType{1, false});
  std::vector<int64_t> a = random_dense(rng, 16 * 24, spec.lhs), b = random_dense(rng, 24 * 32, spec.rhs);
  magicube::HostMask hm = op.pack_mask(mask);
  expect_error([&] { op.upload(hm); }, Kind::NoGpu, reason);
  expect_error([&] { op.upload(op.pack_lhs(a, 16, 24)); }, Kind::NoGpu, reason);
  expect_error([&] { op.load(); }, Kind::NoGpu, "no GPU: ");
  expect_error([&] { magicube::sddmm_host(spec, mask, a, b, 24); }, Kind::NoGpu, reason);
  expect_error([] { magicube::device_arch(); }, Kind::NoGpu, reason);
  OpSpec f16 = magicube::parse_spec("spmm.s8xs8.v8.n64.pf.f16+t.sm_90");
  magicube::VectorSparse sa = random_vector_sparse(rng, 16, 32, 8, 8, f16.lhs);
  std::vector<int64_t> sb = random_dense(rng, 32 * 8, f16.rhs);
  magicube::EpilogueArgs half;
  half.alpha = 0.5f;
  expect_error([&] { magicube::spmm_host(f16, sa, sb, 8, half); }, Kind::NoGpu, reason);
}

// ---- float outputs and SDDMM on the GPU ----------------------------------------------------

TEST(ApiGpu, SpmmFloatOutputsEqualTheRoundedReference) {
  MAGICUBE_REQUIRE_GPU(ctx);
  std::mt19937_64 rng(18);
  const std::string arch = ctx->compute_capability() >= 90 ? "sm_90" : "sm_80";
  int newest = 0;
  for (int a : {80, 86, 89, 90})
    if (a <= ctx->compute_capability()) newest = a;
  EXPECT_EQ(magicube::device_arch(), newest);
  for (std::string text : {"spmm.s8xs8.v8.n64.pf.f16+rc+colbias.", "spmm.s12xu4.v4.n64.pf.f32+t+rowbias.",
                           "spmm.u4xs4.v2.n64.pf.bf16."}) {
    OpSpec spec = magicube::parse_spec(text + arch);
    const int64_t m = 45, k = 130, n = 70;
    magicube::VectorSparse a = random_vector_sparse(rng, m, k, spec.v, k, spec.lhs);
    std::vector<int64_t> b = random_dense(rng, k * n, spec.rhs);
    magicube::EpilogueArgs e = random_epilogue(rng, spec, m, n);
    std::vector<int64_t> got = magicube::spmm_host(spec, a, b, n, e);
    std::vector<int64_t> exact = magicube::reference_spmm(a, b, n);
    ASSERT_EQ(got.size(), exact.size());
    for (int64_t i = 0; i < m * n; ++i)
      ASSERT_EQ(got[i], stored_bits(spec.out, magicube::dequantize(spec, exact[i], e, i / n, i % n)))
          << text << " element " << i;
  }
}

// Signed zero on the GPU (item 6 of the hardening issue): an exact sum of 0 under a negative
// scale stores -0, as the CPU reference (shared formula) and IEEE/PyTorch do; a positive
// scale stores +0. B is all zeros, so every sum is 0.
TEST(ApiGpu, ZeroSumsUnderANegativeScaleStoreNegativeZero) {
  MAGICUBE_REQUIRE_GPU(ctx);
  std::mt19937_64 rng(21);
  const std::string arch = ctx->compute_capability() >= 90 ? "sm_90" : "sm_80";
  for (std::string out : {"f32", "f16", "bf16"}) {
    for (float alpha : {-0.5f, 0.5f}) {
      OpSpec spec = magicube::parse_spec("spmm.s8xs8.v8.n64.pf." + out + "+t." + arch);
      const int64_t m = 32, k = 64, n = 64;
      magicube::VectorSparse a = random_vector_sparse(rng, m, k, spec.v, k, spec.lhs);
      std::vector<int64_t> b(k * n, 0);
      magicube::EpilogueArgs e;
      e.alpha = alpha;
      std::vector<int64_t> got = magicube::spmm_host(spec, a, b, n, e);
      const int64_t want = stored_bits(spec.out, magicube::dequantize(spec, 0, e, 0, 0));
      EXPECT_EQ(want, alpha < 0 ? (spec.out == OutType::F32 ? 0x80000000ll : 0x8000) : 0) << out;
      for (int64_t i = 0; i < m * n; ++i) ASSERT_EQ(got[i], want) << out << " alpha " << alpha << " element " << i;
      OpSpec sd = magicube::parse_spec("sddmm.s8xs8.v8.n64.pf." + out + "+t." + arch);
      magicube::VectorSparse mask = random_vector_sparse(rng, m, n, sd.v, 8, ElemType{1, false});
      std::vector<int64_t> da = random_dense(rng, m * k, sd.lhs), db(k * n, 0);
      std::vector<int64_t> s = magicube::sddmm_host(sd, mask, da, db, k, SparseLayout::Bcrs, e);
      ASSERT_EQ(int64_t(s.size()), mask.num_vectors() * sd.v);
      for (int64_t i = 0; i < int64_t(s.size()); ++i)  // M is a multiple of V: every row is real
        ASSERT_EQ(s[i], want) << "sddmm " << out << " alpha " << alpha << " element " << i;
    }
  }
}

TEST(ApiGpu, SddmmHostIsBitExact) {
  MAGICUBE_REQUIRE_GPU(ctx);
  std::mt19937_64 rng(19);
  int arch = ctx->compute_capability() >= 90 ? 90 : 80;
  for (OpSpec spec : {sddmm({8, true}, {8, true}, 8, OutType::Int32, arch), sddmm({12, true}, {4, false}, 4, OutType::Int32, arch),
                      sddmm({16, true}, {16, true}, 2, OutType::Int64, arch), sddmm({3, false}, {7, true}, 1, OutType::Int32, arch)})
    for (SparseLayout layout : {SparseLayout::Bcrs, SparseLayout::SrBcrs}) {
      magicube::Sddmm op(spec);
      const int64_t m = 77, n = 200, k = std::min<int64_t>(301, op.max_reduction_length());
      magicube::VectorSparse mask = random_vector_sparse(rng, m, n, spec.v, n, ElemType{1, false});
      std::vector<int64_t> a = random_dense(rng, m * k, spec.lhs), b = random_dense(rng, k * n, spec.rhs);
      std::vector<int64_t> got = magicube::sddmm_host(spec, mask, a, b, k, layout);
      std::vector<int64_t> want = magicube::reference_sddmm(mask, a, b, k);
      magicube::HostMask hm = op.pack_mask(mask);
      ASSERT_EQ(int64_t(got.size()), hm.output_elements(layout));
      for (int64_t i = 0; i < mask.num_vectors(); ++i)
        for (int r = 0; r < spec.v; ++r)
          ASSERT_EQ(got[hm.output_index(layout, i, r)], want[i * spec.v + r])
              << magicube::to_string(spec) << " vector " << i << " row " << r;
    }
}

TEST(ApiGpu, SddmmFloatAndDeviceOperands) {
  MAGICUBE_REQUIRE_GPU(ctx);
  std::mt19937_64 rng(20);
  OpSpec spec = sddmm({8, true}, {8, true}, 8, OutType::F16, magicube::device_arch() >= 90 ? 90 : 80, Scale::RowCol);
  magicube::Sddmm op(spec);
  op.load();
  const int64_t m = 60, n = 150, k = 64;
  magicube::VectorSparse mask = random_vector_sparse(rng, m, n, 8, 40, ElemType{1, false});
  std::vector<int64_t> a = random_dense(rng, m * k, spec.lhs), b = random_dense(rng, k * n, spec.rhs);
  magicube::EpilogueArgs e = random_epilogue(rng, spec, m, n);
  std::vector<int64_t> exact = magicube::reference_sddmm(mask, a, b, k);

  magicube::HostMask hm = op.pack_mask(mask, 16);
  magicube::DeviceMask dm = op.upload(hm);
  magicube::DeviceDense da = op.upload(op.pack_lhs(a, m, k));
  magicube::DeviceDense db = op.upload(op.pack_rhs(b, k, n));
  magicube::DeviceEpilogue de = op.upload(e);
  for (SparseLayout layout : {SparseLayout::SrBcrs, SparseLayout::Bcrs}) {
    magicube::DeviceBuffer out = op.allocate_output(dm, layout);
    EXPECT_EQ(out.bytes(), std::max<size_t>(1, size_t(hm.output_elements(layout)) * 2));
    op.run(dm, da, db, out.ptr(), layout, nullptr, &de);
    ASSERT_FALSE(bool(ctx->synchronize()));
    auto got = out.download<uint16_t>(hm.output_elements(layout));
    ASSERT_TRUE(bool(got)) << llvm::toString(got.takeError());
    for (int64_t blk = 0; blk < mask.num_blocks(); ++blk)
      for (int64_t i = mask.block_ptr[blk]; i < mask.block_ptr[blk + 1]; ++i)
        for (int r = 0; r < 8; ++r) {
          int64_t row = blk * 8 + r;
          if (row >= m) continue;  // not written
          double x = magicube::dequantize(spec, exact[i * 8 + r], e, row, mask.col[i]);
          ASSERT_EQ((*got)[hm.output_index(layout, i, r)], magicube::f16_bits(x)) << "vector " << i << " row " << r;
        }
  }
  // The host-epilogue overload waits for the stream and gives the same bits.
  magicube::DeviceBuffer out = op.allocate_output(hm);
  op.run(dm, da, db, out.ptr(), SparseLayout::Bcrs, nullptr, e);
  auto again = out.download<uint16_t>(hm.output_elements(SparseLayout::Bcrs));
  ASSERT_TRUE(bool(again));
  std::vector<int64_t> host = magicube::sddmm_host(spec, mask, a, b, k, SparseLayout::Bcrs, e);
  ASSERT_EQ(host.size(), again->size());
  for (int64_t blk = 0; blk < mask.num_blocks(); ++blk)
    for (int64_t i = mask.block_ptr[blk]; i < mask.block_ptr[blk + 1]; ++i)
      for (int r = 0; r < 8; ++r) {
        if (blk * 8 + r >= m) EXPECT_EQ(host[i * 8 + r], 0) << "rows past M read 0";
        else ASSERT_EQ(host[i * 8 + r], (*again)[i * 8 + r]) << "vector " << i << " row " << r;
      }
  // A missing scale vector is refused before the launch, naming it.
  magicube::EpilogueArgs short_e = e;
  short_e.col_scale.pop_back();
  expect_error([&] { magicube::sddmm_host(spec, mask, a, b, k, SparseLayout::Bcrs, short_e); }, Kind::Invalid,
               "col_scale");
  // Operands packed for another plan are refused.
  magicube::Sddmm other(sddmm({16, true}, {8, true}, 8, OutType::Int64, spec.arch));
  expect_error([&] { other.run(dm, da, db, out.ptr()); }, Kind::Invalid, "another plan");
}

}  // namespace

// ---- the dense route ---------------------------------------------------------------------

namespace {

magicube::SpmmOptions dense_options(magicube::DenseRoute d) {
  magicube::SpmmOptions o;
  o.dense = d;
  return o;
}

// Whether cuBLASLt loads here (*why: why not).
bool dense_available(std::string *why) {
  *why = magicube::dense_library_unavailable();
  return why->empty();
}

}  // namespace

TEST(Api, DenseRouteIsOptIn) {
  std::mt19937_64 rng(21);
  const OpSpec s = magicube::parse_spec("spmm.s8xs8.v8.i32.sm_90");
  magicube::VectorSparse a = random_vector_sparse(rng, 64, 128, 8, 64, s.lhs);
  magicube::Spmm never(s, a, 64);
  EXPECT_EQ(never.route(), magicube::Route::Sparse);
  EXPECT_EQ(never.route_why(), "");
  EXPECT_EQ(never.workspace_bytes(), 0u);
  // Allowed without a matrix: nothing to compare, sparse.
  magicube::Spmm nomatrix(s, dense_options(magicube::DenseRoute::Allowed));
  EXPECT_EQ(nomatrix.route(), magicube::Route::Sparse);
  EXPECT_EQ(nomatrix.route_why(), "no matrix given");
  // Allowed with a matrix: the dispatch's choice, and why.
  magicube::Spmm allowed(s, a, 64, dense_options(magicube::DenseRoute::Allowed));
  EXPECT_FALSE(allowed.route_why().empty());
  // Allowed with a pinned knob: sparse.
  magicube::Spmm pinned(magicube::parse_spec("spmm.s8xs8.v8.n64.pf.i32.sm_90"), a, 64,
                        dense_options(magicube::DenseRoute::Allowed));
  EXPECT_EQ(pinned.route(), magicube::Route::Sparse);
  EXPECT_EQ(pinned.route_why(), "kernel knobs pinned");
  // An SDDMM ignores Allowed and refuses Forced.
  const OpSpec sd = magicube::parse_spec("sddmm.s8xs8.v8.i32.sm_90");
  EXPECT_EQ(magicube::Sddmm(sd, dense_options(magicube::DenseRoute::Allowed)).plan().spec.op, OpKind::SDDMM);
  expect_error([&] { magicube::Sddmm(sd, dense_options(magicube::DenseRoute::Forced)); }, Kind::Invalid,
               "dense: the dense route runs SpMM only (Sddmm of sddmm.s8xs8.v8.i32.sm_90)");
}

TEST(Api, DenseRouteRefusesWhatItCannotCompute) {
  std::mt19937_64 rng(22);
  const auto forced = dense_options(magicube::DenseRoute::Forced);
  magicube::VectorSparse a = random_vector_sparse(rng, 64, 128, 8, 64, ElemType{8, true});
  std::string why;
  if (!dense_available(&why)) {
    expect_error([&] { magicube::Spmm(magicube::parse_spec("spmm.s8xs8.v8.i32.sm_90"), a, 64, forced); },
                 Kind::Invalid, "route: dense route unavailable: libcublasLt");
    GTEST_SKIP() << "no cuBLASLt: " << why;
  }
  magicube::VectorSparse odd = random_vector_sparse(rng, 64, 130, 8, 64, ElemType{8, true});
  expect_error([&] { magicube::Spmm(magicube::parse_spec("spmm.s8xs8.v8.i32.sm_90"), odd, 64, forced); },
               Kind::Invalid,
               "dense: the dense route cannot run spmm.s8xs8.v8.i32.sm_90: K=130 is not a positive multiple of 4 "
               "(cuBLASLt's int8 kernels need it)");
  // Every output type: the GEMM's int32 result through the epilogue kernel, its scratch in
  // the workspace (cuBLASLt's 32 MiB, then M x N int32).
  magicube::Spmm f16(magicube::parse_spec("spmm.s8xs8.v8.f16+rc.sm_90"), a, 64, forced);
  EXPECT_EQ(f16.route(), magicube::Route::Dense);
  EXPECT_EQ(f16.workspace_bytes(), magicube::DenseGemm::kDefaultWorkspace + 64 * 64 * 4);
  EXPECT_EQ(f16.workspace_bytes(3, 5), magicube::DenseGemm::kDefaultWorkspace + 256);
  magicube::Spmm i32(magicube::parse_spec("spmm.s8xs8.v8.i32.sm_90"), a, 64, forced);
  EXPECT_EQ(i32.workspace_bytes(4096, 4096), magicube::DenseGemm::kDefaultWorkspace);
  // Operands that do not fit int8 run in int8 chunks, one GEMM per chunk pair into its own
  // scratch plane, an int32 output too: u8 x s12 is 1 x 2 chunks, two planes of M x N int32,
  // then B's two chunks' column sums (N int32 each) for A's offset.
  magicube::Spmm wide(magicube::parse_spec("spmm.u8xs12.v8.i32.sm_90"), a, 64, forced);
  EXPECT_EQ(wide.route(), magicube::Route::Dense);
  EXPECT_EQ(wide.workspace_bytes(), magicube::DenseGemm::kDefaultWorkspace + 2 * 64 * 64 * 4 + 2 * 64 * 4);
  EXPECT_EQ(wide.workspace_bytes(3, 5), magicube::DenseGemm::kDefaultWorkspace + 512 + 256);
  // Without a matrix, K is checked when A is packed.
  magicube::Spmm nomatrix(magicube::parse_spec("spmm.s8xs8.v8.i32.sm_90"), forced);
  EXPECT_EQ(nomatrix.route(), magicube::Route::Dense);
  expect_error([&] { nomatrix.pack_lhs(odd); }, Kind::Invalid, "lhs A: the dense route cannot run it: K=130");
}

TEST(Api, DenseRoutePacksADenseAndBTransposed) {
  std::string why;
  if (!dense_available(&why)) GTEST_SKIP() << "no cuBLASLt: " << why;
  std::mt19937_64 rng(23);
  const OpSpec s = magicube::parse_spec("spmm.s4xu7.v4.i32.sm_90");
  const int64_t m = 30, k = 64, n = 7;  // M not a multiple of V
  magicube::VectorSparse a = random_vector_sparse(rng, m, k, 4, 16, s.lhs);
  std::vector<int64_t> b = random_dense(rng, k * n, s.rhs);
  magicube::Spmm op(s, a, n, dense_options(magicube::DenseRoute::Forced));
  ASSERT_EQ(op.route(), magicube::Route::Dense);
  EXPECT_EQ(op.route_why(), "asked for");
  EXPECT_EQ(op.chosen_by().rfind("chosen by: ", 0), 0u);
  EXPECT_EQ(op.workspace_bytes(), size_t(32) << 20);
  magicube::HostLhs h = op.pack_lhs(a);
  EXPECT_TRUE(h.packed.planes.empty());
  EXPECT_TRUE(h.packed.row_ptr.empty());
  ASSERT_EQ(h.dense.size(), size_t(m * k));
  const std::vector<int64_t> full = magicube::to_dense(a);
  for (size_t i = 0; i < h.dense.size(); ++i) ASSERT_EQ(int64_t(h.dense[i]), full[i]) << i;
  EXPECT_EQ(h.layout.rows, m);
  magicube::PackedRhs r = op.pack_rhs(b, k, n);
  EXPECT_TRUE(r.planes.empty());
  EXPECT_EQ(r.k, k);
  EXPECT_EQ(r.n, n);
  ASSERT_EQ(r.dense_t.size(), size_t(k * n));
  for (int64_t i = 0; i < k; ++i)
    for (int64_t j = 0; j < n; ++j) ASSERT_EQ(int64_t(r.dense_t[size_t(j * k + i)]), b[size_t(i * n + j)]);
  // Values outside the types are refused as on the sparse route.
  std::vector<int64_t> bad = b;
  bad[3] = 128;
  expect_error([&] { op.pack_rhs(bad, k, n); }, Kind::Invalid, "rhs B[0, 3] = 128 is outside");
  magicube::VectorSparse abad = a;
  abad.values[0] = 9;
  expect_error([&] { op.pack_lhs(abad); }, Kind::Invalid, "lhs A[");
}

TEST(Api, DenseRouteRefusesOperandsOfTheOtherRoute) {
  std::string why;
  if (!dense_available(&why)) GTEST_SKIP() << "no cuBLASLt: " << why;
  std::mt19937_64 rng(24);
  const OpSpec s = magicube::parse_spec("spmm.s8xs8.v8.i32.sm_90");
  magicube::VectorSparse a = random_vector_sparse(rng, 64, 128, 8, 64, s.lhs);
  std::vector<int64_t> b = random_dense(rng, 128 * 16, s.rhs);
  magicube::Spmm dense(s, a, 16, dense_options(magicube::DenseRoute::Forced));
  magicube::Spmm sparse(s, a, 16);
  // Host operands: refused by upload, before any device work.
  expect_error([&] { dense.upload(sparse.pack_lhs(a)); }, Kind::Invalid,
               "lhs A: packed for the sparse route, but this op (" + magicube::to_string(dense.spec()) +
                   ") runs the dense route: pack it with this op");
  expect_error([&] { sparse.upload(dense.pack_lhs(a)); }, Kind::Invalid, "lhs A: packed for the dense route");
  expect_error([&] { dense.upload(sparse.pack_rhs(b, 128, 16)); }, Kind::Invalid, "rhs B: packed for the sparse route");
  expect_error([&] { sparse.upload(dense.pack_rhs(b, 128, 16)); }, Kind::Invalid, "rhs B: packed for the dense route");
  // Device operands: refused by run.
  magicube::DeviceLhs sl;
  sl.planes.emplace_back();
  sl.rows = 64, sl.cols = 128;
  magicube::DeviceRhs sr;
  sr.planes.emplace_back();
  sr.k = 128, sr.n = 16;
  expect_error([&] { dense.run(sl, sr, 0); }, Kind::Invalid, "lhs A: packed for the sparse route");
  // run_dense belongs to the dense route.
  expect_error([&] { sparse.run_dense(0, 0, 0, 64, 128, 16, false, 0, 0); }, Kind::Invalid,
               "run_dense: this op (" + magicube::to_string(sparse.spec()) +
                   ") runs the sparse route (options.dense is Never)");
  expect_error([&] { dense.run_dense(256, 512, 1024, 64, 128, 16, false, 2048 + 16, size_t(32) << 20); },
               Kind::Invalid, "run_dense: workspace is not 256-byte aligned");
  expect_error([&] { dense.run_dense(256, 512, 1024, 64, 128, 16, false, 2048, 1000); }, Kind::Invalid,
               "workspace: 1000 bytes given, 33554432 needed");
  expect_error([&] { dense.run_dense(256, 512, 1024, 64, 126, 16, false, 2048, size_t(32) << 20); }, Kind::Invalid,
               "run_dense: K=126 is not a positive multiple of 4");
}

TEST(ApiGpu, DenseRouteIsBitExact) {
  MAGICUBE_REQUIRE_GPU(ctx);
  std::string why;
  if (!dense_available(&why)) GTEST_SKIP() << "no cuBLASLt: " << why;
  std::mt19937_64 rng(25);
  const int arch = ctx->compute_capability() >= 90 ? 90 : 80;
  const auto forced = dense_options(magicube::DenseRoute::Forced);
  for (const char *text : {"spmm.s8xs8.v8.i32", "spmm.s4xu7.v4.i32"}) {
    const OpSpec s = magicube::parse_spec(std::string(text) + ".sm_" + std::to_string(arch));
    const int64_t m = 77, k = 256;  // M not a multiple of V
    magicube::VectorSparse a = random_vector_sparse(rng, m, k, s.v, k / 2, s.lhs);
    for (int64_t n : {1, 7, 64, 512}) {
      SCOPED_TRACE(std::string(text) + " n=" + std::to_string(n));
      std::vector<int64_t> b = random_dense(rng, k * n, s.rhs);
      const std::vector<int64_t> want = magicube::reference_spmm(a, b, n);
      magicube::Spmm op(s, a, n, forced);
      ASSERT_EQ(op.route(), magicube::Route::Dense);
      EXPECT_EQ(op.multiply(a, b, n), want);                 // the op's own workspace
      EXPECT_EQ(magicube::spmm_host(s, a, b, n, {}, forced), want);
      // Device operands: loaded (timed), the caller's workspace, C and C^T.
      op.load();
      magicube::DeviceLhs da = op.upload(op.pack_lhs(a));
      magicube::DeviceRhs db = op.upload(op.pack_rhs(b, k, n));
      magicube::DeviceBuffer c = op.allocate_output(m, n), ct = op.allocate_output(n, m);
      auto ws = magicube::DeviceBuffer::allocate(op.workspace_bytes());
      ASSERT_TRUE(bool(ws)) << llvm::toString(ws.takeError());
      ASSERT_FALSE(bool(c.memset(0xab)));
      ASSERT_FALSE(bool(ct.memset(0xab)));
      op.run(da, db, c.ptr(), nullptr, ws->ptr(), ws->bytes());
      op.run_dense(da.dense.ptr(), db.dense_t.ptr(), ct.ptr(), m, k, n, true, ws->ptr(), ws->bytes());
      ASSERT_FALSE(bool(ctx->synchronize()));
      auto got = c.download<int32_t>(m * n);
      auto got_t = ct.download<int32_t>(m * n);
      ASSERT_TRUE(bool(got)) << llvm::toString(got.takeError());
      ASSERT_TRUE(bool(got_t)) << llvm::toString(got_t.takeError());
      for (int64_t i = 0; i < m; ++i)
        for (int64_t j = 0; j < n; ++j) {
          ASSERT_EQ(int64_t((*got)[size_t(i * n + j)]), want[size_t(i * n + j)]) << "C[" << i << ", " << j << "]";
          ASSERT_EQ(int64_t((*got_t)[size_t(j * m + i)]), want[size_t(i * n + j)]) << "C^T[" << j << ", " << i << "]";
        }
      // Another N than the op was planned for: a plan made on first use.
      if (n == 7) {
        std::vector<int64_t> b2 = random_dense(rng, k * 33, s.rhs);
        EXPECT_EQ(op.multiply(a, b2, 33), magicube::reference_spmm(a, b2, 33));
      }
    }
  }
}

// Outputs other than int32 on the dense route, and operands in int8 chunks: the GEMMs' int32
// results in the workspace, the epilogue kernel writing C (and C^T) with the sparse kernels'
// scales, bias and rounding.
TEST(ApiGpu, DenseRouteFloatAndInt64Outputs) {
  MAGICUBE_REQUIRE_GPU(ctx);
  std::string why;
  if (!dense_available(&why)) GTEST_SKIP() << "no cuBLASLt: " << why;
  std::mt19937_64 rng(27);
  const int arch = ctx->compute_capability() >= 90 ? 90 : 80;
  const auto forced = dense_options(magicube::DenseRoute::Forced);
  for (const char *text : {"spmm.s8xs8.v8.f16+rc+colbias", "spmm.s4xu7.v4.f32+t+rowbias", "spmm.s8xs8.v8.bf16",
                           "spmm.s8xs8.v8.bf16+rc+rowbias", "spmm.s8xs8.v2.i64",
                           // in int8 chunks: two and four GEMMs, into every output
                           "spmm.u8xs8.v8.bf16+rc+rowbias", "spmm.s12xu8.v4.i32", "spmm.u8xs4.v8.i64"}) {
    const OpSpec s = magicube::parse_spec(std::string(text) + ".sm_" + std::to_string(arch));
    const int64_t m = 77, k = 256;  // M not a multiple of V
    magicube::VectorSparse a = random_vector_sparse(rng, m, k, s.v, k / 2, s.lhs);
    for (int64_t n : {1, 70, 512}) {
      SCOPED_TRACE(std::string(text) + " n=" + std::to_string(n));
      std::vector<int64_t> b = random_dense(rng, k * n, s.rhs);
      const std::vector<int64_t> exact = magicube::reference_spmm(a, b, n);
      const magicube::EpilogueArgs e = random_epilogue(rng, s, m, n);
      std::vector<int64_t> want(exact.size());
      for (int64_t i = 0; i < m * n; ++i)
        want[size_t(i)] = magicube::is_float(s.out) ? stored_bits(s.out, magicube::dequantize(s, exact[i], e, i / n, i % n))
                                                    : exact[size_t(i)];
      magicube::Spmm op(s, a, n, forced);
      ASSERT_EQ(op.route(), magicube::Route::Dense);
      EXPECT_EQ(op.multiply(a, b, n, e), want);  // the op's own workspace, grown for the scratch
      EXPECT_EQ(magicube::spmm_host(s, a, b, n, e, forced), want);
      // Device operands, the caller's workspace, C^T (the epilogue indexes scales by C's row).
      op.load();
      magicube::DeviceLhs da = op.upload(op.pack_lhs(a));
      magicube::DeviceRhs db = op.upload(op.pack_rhs(b, k, n));
      magicube::DeviceBuffer ct = op.allocate_output(n, m);
      // cuBLASLt's, a plane of M x N int32 a chunk pair, B's chunk column sums for A's offsets.
      const magicube::DenseChunks ch = magicube::dense_chunks(s);
      auto round256 = [](int64_t b) { return size_t((b + 255) / 256 * 256); };
      ASSERT_EQ(op.workspace_bytes(m, n), magicube::DenseGemm::kDefaultWorkspace +
                                              size_t(ch.pairs()) * round256(m * n * 4) +
                                              (ch.lhs_offsets() ? round256(int64_t(ch.rhs.size()) * n * 4) : 0));
      auto ws = magicube::DeviceBuffer::allocate(op.workspace_bytes(m, n));
      ASSERT_TRUE(bool(ws)) << llvm::toString(ws.takeError());
      ASSERT_FALSE(bool(ct.memset(0xab)));
      std::optional<magicube::DeviceEpilogue> de;
      if (magicube::is_float(s.out)) de.emplace(op.upload(e));
      op.run_dense(da.dense.ptr(), db.dense_t.ptr(), ct.ptr(), m, k, n, true, ws->ptr(), ws->bytes(), nullptr,
                   de ? &*de : nullptr);
      ASSERT_FALSE(bool(ctx->synchronize()));
      auto got_t = magicube::download_stored(ct, m * n, s.out);
      ASSERT_TRUE(bool(got_t)) << llvm::toString(got_t.takeError());
      for (int64_t i = 0; i < m; ++i)
        for (int64_t j = 0; j < n; ++j)
          ASSERT_EQ((*got_t)[size_t(j * m + i)], want[size_t(i * n + j)]) << "C^T[" << j << ", " << i << "]";
      // A workspace without room for the scratch is refused before any GPU work.
      expect_error([&] { op.run_dense(da.dense.ptr(), db.dense_t.ptr(), ct.ptr(), m, k, n, true, ws->ptr(),
                                      magicube::DenseGemm::kDefaultWorkspace, nullptr, de ? &*de : nullptr); },
                   Kind::Invalid, "workspace: 33554432 bytes given");
    }
  }
}

TEST(ApiGpu, DenseRouteAllowedFollowsTheDispatch) {
  MAGICUBE_REQUIRE_GPU(ctx);
  std::mt19937_64 rng(26);
  const OpSpec s = magicube::parse_spec(std::string("spmm.s8xs8.v8.i32.sm_") +
                                        (ctx->compute_capability() >= 90 ? "90" : "80"));
  // Prefill-sized N at moderate sparsity: the model usually picks dense where cuBLASLt loads;
  // either way the op computes the product exactly.
  const int64_t m = 1024, k = 1024, n = 1024;
  magicube::VectorSparse a = random_vector_sparse(rng, m, k, 8, k / 2, s.lhs);
  std::vector<int64_t> b = random_dense(rng, k * n, s.rhs);
  magicube::Spmm op(s, a, n, dense_options(magicube::DenseRoute::Allowed));
  EXPECT_FALSE(op.route_why().empty());
  std::cout << "route: " << magicube::route_name(op.route()) << " (" << op.route_why() << ")\n";
  EXPECT_EQ(op.multiply(a, b, n), magicube::reference_spmm(a, b, n)) << op.route_why();
}
