// The device repack's layout logic (capi/repack.h), on the CPU: repack_cpu runs the kernels'
// own index math (capi/repack.cuh) and must give the same planes, byte for byte, as the host
// packers of runtime/packing.cpp for every plan family (8-bit and 4-bit planes, several
// chunks, resident-B slices of every width) and both source layouts; and the generated
// kernel sources compile with NVRTC (no GPU needed).
#include "capi/repack.h"

#include <gtest/gtest.h>

#include <cstring>
#include <random>

#include "compiler/planner.h"
#include "jit/nvrtc.h"
#include "runtime/dense_route.h"
#include "runtime/packing.h"

namespace {

using magicube::ElemType;
using magicube::OpKind;
using magicube::OpSpec;
using magicube::Plan;
namespace capi = magicube::capi;

Plan plan_of(const std::string &spec, int candidate = 0) {
  auto s = magicube::parse_opspec(spec);
  EXPECT_TRUE(bool(s)) << spec;
  if (!s) {
    llvm::consumeError(s.takeError());
    return Plan{};
  }
  auto plans = magicube::plan_candidates(*s);
  EXPECT_TRUE(bool(plans)) << spec;
  if (!plans) {
    llvm::consumeError(plans.takeError());
    return Plan{};
  }
  return (*plans)[size_t(candidate)];
}

std::vector<int64_t> random_values(std::mt19937_64 &rng, size_t count, const ElemType &t) {
  std::uniform_int_distribution<int64_t> d(t.min_value(), t.max_value());
  std::vector<int64_t> v(count);
  for (auto &x : v) x = d(rng);
  return v;
}

// r x c row-major -> c x r row-major
std::vector<int64_t> transpose(const std::vector<int64_t> &m, int64_t r, int64_t c) {
  std::vector<int64_t> t(m.size());
  for (int64_t i = 0; i < r; ++i)
    for (int64_t j = 0; j < c; ++j) t[size_t(j * r + i)] = m[size_t(i * c + j)];
  return t;
}

const char *kSpmmSpecs[] = {
    "spmm.s8xs8.v8.n64.pf.i32.sm_90",      "spmm.s8xu4.v8.n64.pf.i32.sm_90",  "spmm.s4xs4.v8.n128.pf.i32.sm_90",
    "spmm.s12xu4.v4.n64.pf.i32.sm_80",     "spmm.s16xs16.v8.n64.pf.i64.sm_90", "spmm.u3xs7.v2.n32.nopf.i32.sm_80",
    "spmm.s8xs12.v8.n64.pf.i32.sm_86",     "spmm.s8xs8.v8.n16r.pf.i32.sm_90",  "spmm.s8xs8.v8.n32r.pf.i32.sm_90",
    "spmm.s8xs8.v8.n48r.pf.i32.sm_90",     "spmm.s8xs8.v8.n64r.pf.i32.sm_90",  "spmm.s8xs8.v8.n128r.pf.i32.sm_90",
    "spmm.s8xs4.v8.n96r.pf.i32.sm_90",     "spmm.s8xs4.v8.n64r.pf.i32.sm_90",
};

TEST(Repack, SpmmRhsEqualsHostPackerInBothLayouts) {
  std::mt19937_64 rng(7);
  int checked = 0;
  for (const char *spec : kSpmmSpecs) {
    auto s = magicube::parse_opspec(spec);
    if (!s) {  // a resident width this build's planner refuses is not this test's business
      ADD_FAILURE() << spec << ": " << llvm::toString(s.takeError());
      continue;
    }
    auto plans = magicube::plan_candidates(*s);
    ASSERT_TRUE(bool(plans)) << spec << ": " << llvm::toString(plans.takeError());
    for (const Plan &p : *plans)
      for (auto [k, n] : {std::pair<int64_t, int64_t>{5, 1}, {37, 7}, {64, 256}, {130, 300}}) {
        auto b = random_values(rng, size_t(k * n), p.spec.rhs);
        auto host = magicube::pack_rhs(b, k, n, p);
        ASSERT_TRUE(bool(host)) << llvm::toString(host.takeError());
        for (bool col_major : {false, true}) {
          const capi::RepackGeometry g = capi::spmm_rhs_geometry(p, k, n, col_major);
          EXPECT_EQ(g.pitch, host->ldb) << spec;
          auto planes = capi::repack_cpu(col_major ? transpose(b, k, n) : b, g);
          ASSERT_EQ(planes.size(), host->planes.size()) << spec;
          for (size_t j = 0; j < planes.size(); ++j)
            EXPECT_EQ(planes[j], host->planes[j]) << spec << " plane " << j << " k=" << k << " n=" << n
                                                  << (col_major ? " col-major" : " row-major");
          ++checked;
        }
      }
  }
  EXPECT_GT(checked, 100);
}

TEST(Repack, SddmmOperandsEqualHostPackerInBothLayouts) {
  std::mt19937_64 rng(11);
  for (const char *spec : {"sddmm.s8xs8.v8.n64.pf.i32.sm_90", "sddmm.s4xs4.v8.n64.pf.i32.sm_90",
                           "sddmm.s16xs16.v8.n64.pf.i64.sm_90", "sddmm.u3xs7.v2.n64.pf.i32.sm_80",
                           "sddmm.s8xu4.v4.n64.nopf.i32.sm_86"}) {
    const Plan p = plan_of(spec);
    for (auto [m, k, n] : {std::tuple<int64_t, int64_t, int64_t>{8, 1, 1}, {13, 37, 9}, {64, 256, 40}, {30, 300, 17}}) {
      auto a = random_values(rng, size_t(m * k), p.spec.lhs);
      auto b = random_values(rng, size_t(k * n), p.spec.rhs);  // column-major K x N: column c at c * K
      auto ha = magicube::pack_sddmm_lhs(a, m, k, p);
      auto hb = magicube::pack_sddmm_rhs(b, k, n, p);
      ASSERT_TRUE(bool(ha) && bool(hb)) << spec;
      for (bool col_major : {false, true}) {
        const capi::RepackGeometry ga = capi::sddmm_lhs_geometry(p, m, k, col_major);
        const capi::RepackGeometry gb = capi::sddmm_rhs_geometry(p, k, n, col_major);
        EXPECT_EQ(ga.rows, ha->rows);
        EXPECT_EQ(ga.pitch, ha->ld);
        EXPECT_EQ(gb.rows, hb->rows);
        EXPECT_EQ(gb.pitch, hb->ld);
        // A col-major: K x M row-major. B row-major: K x N row-major (the transpose of the
        // packer's N x K order); col-major is the packer's own order.
        auto pa = capi::repack_cpu(col_major ? transpose(a, m, k) : a, ga);
        auto pb = capi::repack_cpu(col_major ? b : transpose(b, n, k), gb);
        ASSERT_EQ(pa.size(), ha->planes.size());
        ASSERT_EQ(pb.size(), hb->planes.size());
        for (size_t j = 0; j < pa.size(); ++j) EXPECT_EQ(pa[j], ha->planes[j]) << spec << " A plane " << j;
        for (size_t j = 0; j < pb.size(); ++j) EXPECT_EQ(pb[j], hb->planes[j]) << spec << " B plane " << j;
      }
    }
  }
}

TEST(Repack, GeneratedSourcesCompileWithNvrtc) {
  // One source per kind of kernel: 8-bit and 4-bit planes, resident slices, transposed
  // sources, each source type; and the output transposes.
  struct Case {
    const char *spec;
    bool col_major;
    capi::SrcType src;
  };
  for (const Case &c : {Case{"spmm.s8xs8.v8.n64.pf.i32.sm_90", false, capi::SrcType::I8},
                        Case{"spmm.s8xu4.v8.n64.pf.i32.sm_90", true, capi::SrcType::U8},
                        Case{"spmm.s12xs12.v4.n64.pf.i64.sm_80", true, capi::SrcType::I16},
                        Case{"spmm.s8xs8.v8.n48r.pf.i32.sm_90", false, capi::SrcType::I32},
                        Case{"spmm.s8xu16.v8.n64.pf.i64.sm_90", false, capi::SrcType::U16}}) {
    const Plan p = plan_of(c.spec);
    const capi::RepackGeometry g = capi::spmm_rhs_geometry(p, 100, 33, c.col_major);
    const std::string src = capi::repack_source(g, c.src, "magicube_repack_test");
    auto cubin = magicube::nvrtc_compile(src, "repack.cu", 90, magicube::Emit::CUBIN);
    EXPECT_TRUE(bool(cubin)) << c.spec << "\n" << (cubin ? "" : llvm::toString(cubin.takeError())) << "\n" << src;
  }
  for (int bytes : {2, 4, 8}) {
    const std::string src = capi::transpose_source(bytes, "magicube_transpose_test");
    auto cubin = magicube::nvrtc_compile(src, "transpose.cu", 80, magicube::Emit::CUBIN);
    EXPECT_TRUE(bool(cubin)) << (cubin ? "" : llvm::toString(cubin.takeError())) << "\n" << src;
  }
}

TEST(Repack, GeometryOfTheKernelPitch) {
  const Plan p = plan_of("spmm.s8xs4.v8.n64.pf.i32.sm_90");
  const capi::RepackGeometry g = capi::spmm_rhs_geometry(p, 4096, 1, true);
  EXPECT_EQ(g.pitch, 256);  // one token still gets a full 256-column row
  EXPECT_EQ(g.cols, 256);
  EXPECT_EQ(g.plane_bytes(0), 4096 * 256 / 2);
  EXPECT_TRUE(g.transposed());
  EXPECT_EQ(capi::sddmm_pitch(1), 256);
  EXPECT_EQ(capi::sddmm_pitch(257), 512);
}

TEST(Repack, DenseRouteBtEqualsTheHostPackerInBothLayouts) {
  // The dense route's B transposed to N x K int8 planes (runtime/dense_route.h's
  // dense_rhs_t_int8), from B as K x N or as N x K, for signed and small unsigned values (one
  // plane) and for types split into int8 chunks, offsets subtracted (u8, s12, u16), N odd and 1.
  std::mt19937_64 rng(41);
  for (const ElemType &t : {ElemType{8, true}, ElemType{7, false}, ElemType{4, true}, ElemType{8, false},
                            ElemType{12, true}, ElemType{16, false}})
    for (int64_t n : {1, 7, 64, 130}) {
      const int64_t k = 72;
      const std::vector<magicube::DenseChunk> chunks = magicube::split_dense_chunks(t);
      const std::vector<int64_t> b = random_values(rng, size_t(k * n), t);
      const std::vector<int8_t> want = magicube::dense_rhs_t_int8(b, k, n, t);
      const int64_t stride = magicube::dense_plane_stride(n, k, 1);
      for (bool col_major : {false, true}) {
        const capi::RepackGeometry g = capi::dense_rhs_t_geometry(k, n, col_major, chunks);
        ASSERT_EQ(g.chunks.size(), chunks.size());
        const auto planes = capi::repack_cpu(col_major ? transpose(b, k, n) : b, g);
        for (size_t j = 0; j < chunks.size(); ++j) {
          EXPECT_EQ(g.plane_bytes(j), n * k);
          ASSERT_EQ(planes[j].size(), size_t(n * k));
          EXPECT_EQ(std::memcmp(planes[j].data(), want.data() + int64_t(j) * stride, size_t(n * k)), 0)
              << t.str() << " plane " << j << " n=" << n << (col_major ? " from N x K" : " from K x N");
        }
      }
    }
  for (capi::SrcType src : {capi::SrcType::I8, capi::SrcType::I16}) {
    const std::string code = capi::repack_source(
        capi::dense_rhs_t_geometry(256, 33, false, magicube::split_dense_chunks(ElemType{12, true})), src,
        "magicube_repack_bt");
    auto cubin = magicube::nvrtc_compile(code, "repack.cu", 80, magicube::Emit::CUBIN);
    EXPECT_TRUE(bool(cubin)) << (cubin ? "" : llvm::toString(cubin.takeError())) << "\n" << code;
  }
}

}  // namespace
