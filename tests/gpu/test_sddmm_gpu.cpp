// SDDMM on the GPU is bit-exact against the int64 reference: widths 1..16, both
// signednesses, V in {1,2,4,8}, LHS prefetch on/off, every candidate plan, int32 and int64
// outputs, SR-BCRS and BCRS output layouts, awkward shapes (K not a multiple of the mma's k,
// row-blocks longer than a tile) and DLMC masks. Skips with a one-line reason without a GPU.
#include <gtest/gtest.h>

#include <cstdlib>
#include <thread>

#include "compiler/planner.h"
#include "runtime/kernel.h"
#include "runtime/reference.h"
#include "runtime/smtx.h"
#include "tests/gpu/gpu_env.h"
#include "tests/gpu/gpu_run.h"
#include "tests/test_util.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"

using namespace magicube;
using magicube::testing::precompile;
using magicube::testing::random_dense;
using magicube::testing::random_vector_sparse;

namespace {

std::string run_and_compare(Context &ctx, const Plan &p, const VectorSparse &mask, const std::vector<int64_t> &a,
                            const std::vector<int64_t> &b, int64_t k, int stride, SparseLayout layout) {
  SrBcrs m = build_srbcrs(mask, stride, false, p.shuffle);
  auto pa = pack_sddmm_lhs(a, mask.rows, k, p);
  if (!pa) return llvm::toString(pa.takeError());
  auto pb = pack_sddmm_rhs(b, k, mask.cols, p);
  if (!pb) return llvm::toString(pb.takeError());
  auto dm = upload_mask(m, mask);
  if (!dm) return llvm::toString(dm.takeError());
  auto da = upload(*pa);
  if (!da) return llvm::toString(da.takeError());
  auto db = upload(*pb);
  if (!db) return llvm::toString(db.takeError());
  bool i64 = p.spec.out != OutType::Int32;
  int64_t count = (layout == SparseLayout::Bcrs ? mask.num_vectors() : m.num_slots()) * mask.v;
  auto out = DeviceBuffer::allocate(std::max<int64_t>(1, count) * (i64 ? 8 : 4));
  if (!out) return llvm::toString(out.takeError());
  if (auto e = out->memset(0xAB)) return llvm::toString(std::move(e));
  auto kern = Kernel::get(ctx, p);
  if (!kern) return llvm::toString(kern.takeError());
  if (auto e = (*kern)->launch_sddmm(*dm, *da, *db, out->ptr(), layout, nullptr)) return llvm::toString(std::move(e));
  if (auto e = ctx.synchronize()) return llvm::toString(std::move(e));
  std::vector<int64_t> got(count);
  if (i64) {
    auto h = out->download<int64_t>(count);
    if (!h) return llvm::toString(h.takeError());
    got = *h;
  } else {
    auto h = out->download<int32_t>(count);
    if (!h) return llvm::toString(h.takeError());
    for (int64_t i = 0; i < count; ++i) got[i] = (*h)[i];
  }
  std::vector<int64_t> want = reference_sddmm(mask, a, b, k);
  for (int64_t blk = 0; blk < mask.num_blocks(); ++blk)
    for (int64_t i = mask.block_ptr[blk]; i < mask.block_ptr[blk + 1]; ++i)
      for (int r = 0; r < mask.v; ++r) {
        if (blk * mask.v + r >= mask.rows) continue;  // rows past M are not written
        int64_t q = m.row_ptr[2 * blk] + (i - mask.block_ptr[blk]);
        int64_t at = layout == SparseLayout::Bcrs ? i * mask.v + r : m.value_index(q, r);
        if (got[at] != want[i * mask.v + r])
          return "vector " + std::to_string(i) + " (row-block " + std::to_string(blk) + ", column " +
                 std::to_string(mask.col[i]) + ") row " + std::to_string(r) + " = " + std::to_string(got[at]) +
                 ", expected " + std::to_string(want[i * mask.v + r]) + "\n" + p.str();
      }
  return "";
}

const std::pair<ElemType, ElemType> kTypes[] = {
    {{8, true}, {8, true}},  {{4, true}, {4, true}},  {{16, true}, {16, true}}, {{8, true}, {4, false}},
    {{12, true}, {4, true}}, {{5, true}, {3, false}}, {{1, false}, {16, true}}, {{3, false}, {7, true}},
    {{16, false}, {2, true}}, {{6, false}, {6, true}}, {{8, false}, {8, false}}, {{16, true}, {8, true}}};

TEST(SddmmGpu, EveryCandidatePlanOnAwkwardShapes) {
  MAGICUBE_REQUIRE_GPU(ctx);
  std::vector<Plan> plans;
  for (int arch : {90, 80})
    for (auto [l, r] : kTypes)
      for (int v : {1, 2, 4, 8})
        for (bool pf : {true, false})
          for (OutType out : {OutType::Int32, OutType::Int64}) {
            if (out == OutType::Int32 && max_exact_k(l, r) == 0) continue;
            int bsn = v == 4 && pf ? 256 : (v + int(pf)) % 3 == 0 ? 32 : (v % 2 ? 128 : 64);
            auto ps = plan_candidates(OpSpec{OpKind::SDDMM, l, r, v, bsn, pf, out, arch});
            ASSERT_TRUE(bool(ps)) << llvm::toString(ps.takeError());
            for (const Plan &p : *ps) plans.push_back(p);
          }
  precompile(*ctx, plans);
  std::mt19937_64 rng(21);
  int failures = 0, i = 0;
  for (const Plan &p : plans) {
    const OpSpec &s = p.spec;
    int64_t bound = s.out == OutType::Int32 ? p.max_exact_k : p.max_term_k;
    int64_t k = std::min<int64_t>(301, bound);
    int64_t m = 77, n = 300;
    VectorSparse mask = random_vector_sparse(rng, m, n, s.v, n, ElemType{1, false});
    std::vector<int64_t> a = random_dense(rng, m * k, s.lhs), b = random_dense(rng, k * n, s.rhs);
    ++i;
    std::string f = run_and_compare(*ctx, p, mask, a, b, k, i % 2 ? 32 : 16,
                                     i % 3 ? SparseLayout::SrBcrs : SparseLayout::Bcrs);
    if (!f.empty()) {
      ADD_FAILURE() << to_string(s) << " K=" << k << ": " << f;
      if (++failures >= 5) return;
    }
  }
}

// The fast kernel written in PTX and its CUDA twin: both equal the reference for every 8- and
// 4-bit type pair, int32 and int64, both output layouts and every tile width.
TEST(SddmmGpu, PtxKernelsAndTheirCudaTwinsAreExact) {
  MAGICUBE_REQUIRE_GPU(ctx);
  const ElemType types[] = {{8, true}, {8, false}, {4, true}, {4, false}};
  std::vector<Plan> plans;
  int i = 0;
  for (ElemType l : types)
    for (ElemType r : types)
      for (int bsn : {32, 64, 128, 256}) {
        auto p = plan(OpSpec{OpKind::SDDMM, l, r, 8, bsn, true, ++i % 3 ? OutType::Int32 : OutType::Int64, 90});
        ASSERT_TRUE(bool(p)) << llvm::toString(p.takeError());
        if (p->launch.language != KernelLanguage::Ptx) continue;
        plans.push_back(*p);
        Plan cuda = *p;
        cuda.launch.language = KernelLanguage::Cuda;
        plans.push_back(cuda);
      }
  EXPECT_GE(plans.size(), 32u) << "plans written in PTX (at least one a type pair), and their twins";
  precompile(*ctx, plans);
  std::mt19937_64 rng(22);
  int failures = 0, j = 0;
  for (const Plan &p : plans) {
    const int64_t k = 301, m = 77, n = 300;
    VectorSparse mask = random_vector_sparse(rng, m, n, 8, n, ElemType{1, false});
    std::vector<int64_t> a = random_dense(rng, m * k, p.spec.lhs), b = random_dense(rng, k * n, p.spec.rhs);
    ++j;
    std::string f = run_and_compare(*ctx, p, mask, a, b, k, j % 4 < 2 ? 32 : 16,
                                     (j / 2) % 2 ? SparseLayout::SrBcrs : SparseLayout::Bcrs);
    if (!f.empty()) {
      ADD_FAILURE() << to_string(p.spec) << " (" << language_name(p.launch.language) << "): " << f;
      if (++failures >= 5) return;
    }
  }
}

TEST(SddmmGpu, EveryWidthPairBothSignednesses) {
  MAGICUBE_REQUIRE_GPU(ctx);
  std::vector<Plan> plans;
  int i = 0;
  for (int lb = 1; lb <= 16; ++lb)
    for (int rb = 1; rb <= 16; ++rb)
      for (int sg = 0; sg < 4; ++sg) {
        ElemType l{lb, bool(sg & 1)}, r{rb, bool(sg & 2)};
        int v = 1 << (i++ % 4);
        OutType out = max_exact_k(l, r) ? OutType::Int32 : OutType::Int64;
        auto p = plan(OpSpec{OpKind::SDDMM, l, r, v, 64, bool(i % 2), out, 90});
        ASSERT_TRUE(bool(p)) << llvm::toString(p.takeError());
        plans.push_back(*p);
      }
  precompile(*ctx, plans);
  std::mt19937_64 rng(22);
  for (const Plan &p : plans) {
    int64_t bound = p.spec.out == OutType::Int32 ? p.max_exact_k : p.max_term_k;
    int64_t k = std::min<int64_t>(45, bound), m = 37, n = 70;
    VectorSparse mask = random_vector_sparse(rng, m, n, p.spec.v, n, ElemType{1, false});
    std::vector<int64_t> a = random_dense(rng, m * k, p.spec.lhs), b = random_dense(rng, k * n, p.spec.rhs);
    std::string f = run_and_compare(*ctx, p, mask, a, b, k, 32, SparseLayout::SrBcrs);
    ASSERT_TRUE(f.empty()) << to_string(p.spec) << ": " << f;
  }
}

TEST(SddmmGpu, DlmcMasks) {
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
  std::mt19937_64 rng(23);
  for (const std::string &f : files)
    for (auto [l, r] : {std::pair<ElemType, ElemType>{{8, true}, {8, true}}, {{16, true}, {16, true}}, {{4, true}, {4, true}}})
      for (int v : {2, 8}) {
        auto pat = read_smtx(f);
        ASSERT_TRUE(bool(pat)) << llvm::toString(pat.takeError());
        VectorSparse mask = dilate(*pat, v, [] { return int64_t(1); });
        int64_t k = 256;
        OutType out = k <= max_exact_k(l, r) ? OutType::Int32 : OutType::Int64;
        auto p = plan(OpSpec{OpKind::SDDMM, l, r, v, 64, true, out, 90});
        ASSERT_TRUE(bool(p));
        std::vector<int64_t> a = random_dense(rng, mask.rows * k, l), b = random_dense(rng, k * mask.cols, r);
        std::string fail = run_and_compare(*ctx, *p, mask, a, b, k, 32, SparseLayout::Bcrs);
        ASSERT_TRUE(fail.empty()) << f << " V=" << v << ": " << fail;
      }
}

}  // namespace
