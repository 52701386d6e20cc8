// Codegen: generated SpMM and SDDMM kernels compile through NVRTC for sm_80 and sm_90 over a grid of
// widths 1..16, both signednesses, V in {1,2,4,8}, prefetch on/off and both mma
// orientations; the disk cache (a per-run temp dir) is shared between the tests.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <cstdlib>
#include <random>

#include "cache/cache_key.h"
#include "compiler/codegen.h"
#include "compiler/planner.h"
#include "jit/compile_cache.h"
#include "jit/compile.h"
#include "jit/nvrtc.h"
#include "llvm/Support/FileSystem.h"
#include "runtime/kernel.h"

using namespace magicube;

namespace {

OpSpec spmm(ElemType l, ElemType r, int v, int arch, bool pf = true, OutType out = OutType::Int32, int bsn = 64) {
  return OpSpec{OpKind::SpMM, l, r, v, bsn, pf, out, arch};
}

// The plan with its kernel written in CUDA (what MAGICUBE_PTX=0 plans), for the tests that
// read the CUDA text of plans the planner writes in PTX.
Plan in_cuda(Plan p) {
  p.launch.language = KernelLanguage::Cuda;
  return p;
}

TEST(Codegen, NamesAndCommentsTheKernel) {
  auto p = plan(spmm({8, true}, {4, false}, 8, 90));
  ASSERT_TRUE(bool(p));
  auto ks = generate(in_cuda(*p));
  ASSERT_TRUE(bool(ks)) << llvm::toString(ks.takeError());
  EXPECT_EQ(ks->name, "magicube_spmm_s8u4_v8_n64_pf_sm90");
  EXPECT_NE(ks->source.find("extern \"C\" __global__ void __launch_bounds__(64)\nmagicube_spmm_s8u4_v8_n64_pf_sm90("),
            std::string::npos);
  EXPECT_NE(ks->source.find("// plan spmm.s8xu4.v8.n64.pf.i32.sm_90"), std::string::npos);
  EXPECT_NE(ks->source.find("mma.sync.aligned.m16n8k32.row.col.s32.u8.s8.s32"), std::string::npos);
  // 4-bit B stays packed in shared memory (32-byte rows + 16 pad) and is widened after ldmatrix
  EXPECT_NE(ks->source.find("unsigned char sb0[KG][STAGES][KS][48]"), std::string::npos);
  EXPECT_NE(ks->source.find("mc_nib_col_hi(r0, r1, 3)"), std::string::npos) << "widened as value << 4";
  EXPECT_NE(ks->source.find("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16"), std::string::npos);
  EXPECT_NE(ks->source.find("cp.async"), std::string::npos);
  EXPECT_EQ(ks->source.find("{{"), std::string::npos) << "unfilled placeholder";
}

TEST(Codegen, RingDepthFollowsTheSpecAndSharedMemory) {
  for (int st : {0, 2, 3, 4}) {
    OpSpec s = spmm({8, true}, {8, true}, 8, 90, true, OutType::Int32, 128);
    s.stages = st;
    auto ks = generate(in_cuda(*plan(s)));
    ASSERT_TRUE(bool(ks)) << llvm::toString(ks.takeError());
    const int want = st == 0 ? 4 : st;  // BSn=128: a 4-deep ring is 20 KiB
    EXPECT_NE(ks->source.find("constexpr int STAGES = " + std::to_string(want) + ";"), std::string::npos) << st;
    EXPECT_NE(ks->name.find(st ? "_pf" + std::to_string(st) + "_" : "_pf_"), std::string::npos) << ks->name;
  }
  // s16 x s16 at BSn=256: two B planes; 4 deep would be 74 KiB, so 2 (the deepest that fits 48 KiB)
  OpSpec wide = spmm({16, true}, {16, true}, 8, 90, true, OutType::Int64, 256);
  wide.stages = 4;
  auto ks = generate(*plan(wide));
  ASSERT_TRUE(bool(ks));
  EXPECT_NE(ks->source.find("constexpr int STAGES = 2;"), std::string::npos);
}

// One compile per variant; each picks a different corner of the plan space.
struct Variant {
  OpSpec spec;
  int candidate;  // index into plan_candidates (0 = best)
};

std::vector<Variant> grid() {
  std::vector<Variant> g;
  const std::pair<ElemType, ElemType> types[] = {
      {{8, true}, {8, true}},  {{8, true}, {4, false}}, {{4, true}, {4, true}},  {{16, true}, {8, true}},
      {{16, true}, {16, true}}, {{12, true}, {4, true}}, {{5, true}, {3, false}}, {{1, false}, {16, true}},
      {{3, false}, {7, true}}, {{16, false}, {2, true}}};
  int n = 0;
  for (OpKind op : {OpKind::SpMM, OpKind::SDDMM})
    for (int arch : {90, 80})
      for (auto [l, r] : types)
        for (int v : {1, 2, 4, 8}) {
          ++n;
          OutType out = max_exact_k(l, r) ? OutType::Int32 : OutType::Int64;
          OpSpec s = spmm(l, r, v, arch, n % 2, out);
          s.op = op;
          g.push_back({s, n % 3});  // orientation/shape varies with the candidate
        }
  // Strides split over two warp groups (SpMM's int8 m16n8k32 kernel), each tile width.
  for (int bsn : {32, 64, 128, 256})
    for (auto [l, r] : {std::pair<ElemType, ElemType>{{8, true}, {8, true}}, {{4, true}, {4, false}}, {{16, true}, {16, true}}}) {
      OpSpec s = spmm(l, r, bsn == 32 ? 2 : 8, 90, bsn != 64, max_exact_k(l, r) ? OutType::Int32 : OutType::Int64);
      if (bsn == 256 && l.bits > 8) continue;  // two 16-bit rings of 256 columns exceed 48 KiB
      s.bsn = bsn;
      s.split = 2;
      g.push_back({s, 0});
    }
  // B resident in shared memory (SpMM's int8 m16n8k32 kernel): each slice width, both archs,
  // a float epilogue, and ring depths 4, 6 and 8 (sm_80 plans 4-bit B as native int4: no
  // resident kernel there).
  int ri = 0;
  for (int bsn : {16, 32, 48, 64, 96, 128})
    for (auto [l, r] : {std::pair<ElemType, ElemType>{{8, true}, {8, true}}, {{4, true}, {4, false}}, {{16, true}, {16, true}}, {{5, false}, {3, true}}}) {
      ++ri;
      OpSpec s = spmm(l, r, 1 << (ri % 4), ri % 5 || r.bits <= 4 ? 90 : 80, true, max_exact_k(l, r) ? OutType::Int32 : OutType::Int64);
      if ((bsn == 16 || bsn == 48) && r.bits <= 4) continue;  // 4-bit slice rows of 8 or 24 bytes
      if (bsn == 96 && r.bits > 4) continue;                   // 8-bit slice rows of 96 bytes
      s.bsn = bsn;
      s.resident = true;
      s.stages = ri % 3 ? 2 + ri % 3 : 0;
      if (ri == 3) s.out = OutType::F16, s.scale = Scale::RowCol, s.bias = Bias::Row;
      g.push_back({s, 0});
    }
  // The decode kernel (N <= 64): every tile width, 8- and 4-bit planes, several lhs chunks,
  // an odd type, int64 and float outputs, both archs, automatic and pinned ring depths.
  int di = 0;
  for (int bsn : {16, 32, 48, 64})
    for (auto [l, r] : {std::pair<ElemType, ElemType>{{8, true}, {8, true}}, {{4, true}, {8, true}}, {{4, true}, {4, true}},
                        {{7, false}, {5, true}}, {{12, true}, {8, true}}, {{8, false}, {16, true}}}) {
      ++di;
      const int arch = di % 3 ? 90 : 80;
      OpSpec s = spmm(l, r, 8 >> (di % 3), arch, true, max_exact_k(l, r) ? OutType::Int32 : OutType::Int64, bsn);
      if (r.bits <= 4 && bsn % 32) continue;  // 4-bit B: 32-column pairs
      if (r.bits > 8 && bsn > 32) continue;   // two rhs planes x four tiles: narrower tiles instead
      s.resident = s.decode = true;
      s.stages = di % 4 == 1 ? 2 + di % 3 : 0;
      if (di % 5 == 2) s.out = OutType::F16, s.scale = Scale::RowCol;
      if (di % 7 == 3) s.out = OutType::Int64, s.scale = Scale::None;
      g.push_back({s, 0});
    }
  // Float epilogues: every output type and scale/bias mode on both archs.
  for (OpKind op : {OpKind::SpMM, OpKind::SDDMM})
    for (int arch : {90, 80})
      for (auto [out, scale, bias] : {std::tuple{OutType::F32, Scale::Tensor, Bias::None},
                                      std::tuple{OutType::F16, Scale::RowCol, Bias::Col},
                                      std::tuple{OutType::BF16, Scale::None, Bias::Row}}) {
        OpSpec s = spmm({12, true}, {4, false}, 4, arch, true, out);
        s.op = op;
        s.scale = scale;
        s.bias = op == OpKind::SDDMM ? Bias::None : bias;
        g.push_back({s, 0});
      }
  // The golden kernels (tests/test_golden.cpp).
  for (auto [text, candidate] : {std::pair{"spmm.s8xs8.v8.n64.pf.i32.sm_90", 0}, {"spmm.s8xs8.v8.n64k2.pf.i32.sm_90", 0},
                                 {"spmm.s8xs8.v8.n48r.pf.i32.sm_90", 0}, {"spmm.s8xs8.v8.n16d.pf.i32.sm_90", 0},
                                 {"spmm.s8xu4.v8.n64.pf.i32.sm_90", 0},
                                 {"spmm.s12xu4.v4.n64.pf.i32.sm_80", 0}, {"spmm.s8xs8.v2.n64.pf.i32.sm_90", 2},
                                 {"sddmm.s8xs8.v8.n64.pf.i32.sm_90", 0}, {"sddmm.u3xs7.v2.n64.pf.i32.sm_80", 1},
                                 {"spmm.s8xs8.v8.n64.pf.f16+rc+colbias.sm_90", 0}})
    g.push_back({llvm::cantFail(parse_opspec(text)), candidate});
  return g;
}

class CodegenGrid : public ::testing::TestWithParam<Variant> {
 protected:
  static void SetUpTestSuite() {
    static std::string dir = [] {
      llvm::SmallString<128> d;
      (void)llvm::sys::fs::createUniqueDirectory("magicube-codegen-test", d);
      ::chmod(d.c_str(), 0700);  // private whatever the umask
      return std::string(d);
    }();
    if (!std::getenv("MAGICUBE_TEST_KEEP_CACHE")) setenv("MAGICUBE_CACHE_DIR", dir.c_str(), 1);
  }
};

TEST_P(CodegenGrid, CompilesThroughNvrtc) {
  const Variant &var = GetParam();
  auto ps = plan_candidates(var.spec);
  ASSERT_TRUE(bool(ps)) << llvm::toString(ps.takeError());
  const Plan &p = (*ps)[var.candidate % ps->size()];
  auto ks = generate(p);
  ASSERT_TRUE(bool(ks)) << llvm::toString(ks.takeError());
  if (p.launch.family != KernelFamily::SpmmDecode) {
    auto cubin = kernel_cubin(p, *ks, p.spec.arch);
    ASSERT_TRUE(bool(cubin)) << llvm::toString(cubin.takeError());
    ASSERT_GT(cubin->size(), 4u);
    EXPECT_EQ(cubin->substr(0, 4), "\x7f" "ELF");
    return;
  }
  // The decode kernel keeps its ring in registers, as deep as the planner says fits its
  // launch bounds: ptxas must not spill it (a spill turns the ring into local-memory traffic).
  std::vector<std::string> opts = kernel_nvrtc_options(p);
  opts.push_back("--ptxas-options=-v");
  std::string log;
  auto cubin = nvrtc_compile(ks->source, ks->name + ".cu", p.spec.arch, Emit::CUBIN, opts, &log);
  ASSERT_TRUE(bool(cubin)) << llvm::toString(cubin.takeError());
  EXPECT_EQ(cubin->substr(0, 4), "\x7f" "ELF");
  EXPECT_NE(log.find("0 bytes spill stores, 0 bytes spill loads"), std::string::npos) << to_string(p.spec) << "\n" << log;
  EXPECT_NE(log.find("Used "), std::string::npos) << log;
}

INSTANTIATE_TEST_SUITE_P(Grid, CodegenGrid, ::testing::ValuesIn(grid()), [](const auto &info) {
  const OpSpec &s = info.param.spec;
  return std::string(op_name(s.op)) + "_" + s.lhs.str() + s.rhs.str() + "_v" + std::to_string(s.v) + "_n" +
         std::to_string(s.bsn) + (s.split > 1 ? "k" + std::to_string(s.split) : std::string()) + (s.decode ? "d" : s.resident ? "r" : "") +
         (s.stages ? "_pf" + std::to_string(s.stages) : "") + (s.prefetch ? "_pf" : "_nopf") + "_sm" +
         std::to_string(s.arch) + "_" + out_name(s.out) + (s.scale != Scale::None ? "_" + std::string(scale_name(s.scale)) : "") +
         (s.bias != Bias::None ? "_" + std::string(bias_name(s.bias)) + "bias" : "") + "_c" +
         std::to_string(info.param.candidate) + "_" + std::to_string(info.index);
});


// ---- kernels written in PTX (Launch::language) ------------------------------------------------

OpSpec sddmm(ElemType l, ElemType r, int arch, OutType out = OutType::Int32, int bsn = 64) {
  OpSpec s{OpKind::SDDMM, l, r, 8, bsn, true, out, arch};
  return s;
}

// The bytes of every ".shared ... name[bytes]" of a PTX module.
int ptx_shared_bytes(const std::string &ptx) {
  int total = 0;
  for (size_t at = ptx.find(".shared .align 16 .b8 "); at != std::string::npos; at = ptx.find(".shared .align 16 .b8 ", at + 1)) {
    const size_t open = ptx.find('[', at), close = ptx.find(']', open);
    total += std::stoi(ptx.substr(open + 1, close - open - 1));
  }
  return total;
}

TEST(CodegenPtx, TheCommonRingAndSddmmPlansAreWrittenInPtx) {
  auto p = plan(spmm({8, true}, {4, false}, 8, 90));
  ASSERT_TRUE(bool(p));
  EXPECT_EQ(p->launch.language, KernelLanguage::Ptx) << p->str();
  EXPECT_NE(p->str().find("written in PTX"), std::string::npos) << "the plan says so when printed";
  EXPECT_TRUE(nvrtc_options(*p).empty());
  EXPECT_TRUE(kernel_nvrtc_options(*p).empty());
  auto ks = generate(*p);
  ASSERT_TRUE(bool(ks)) << llvm::toString(ks.takeError());
  EXPECT_EQ(ks->language, KernelLanguage::Ptx);
  EXPECT_EQ(ks->file_name(), "magicube_spmm_s8u4_v8_n64_pf_sm90.ptx");
  EXPECT_NE(ks->source.find("// plan spmm.s8xu4.v8.n64.pf.i32.sm_90"), std::string::npos);
  EXPECT_NE(ks->source.find(".target sm_90\n"), std::string::npos);
  EXPECT_NE(ks->source.find(".visible .entry magicube_spmm_s8u4_v8_n64_pf_sm90(\n"), std::string::npos);
  EXPECT_NE(ks->source.find(".maxntid 64, 1, 1"), std::string::npos);
  EXPECT_NE(ks->source.find("mma.sync.aligned.m16n8k32.row.col.s32.u8.s8.s32"), std::string::npos);
  EXPECT_NE(ks->source.find("0x00f000f0"), std::string::npos) << "B's nibble columns as bytes << 4";
  EXPECT_NE(ks->source.find(", 4;"), std::string::npos);
  EXPECT_EQ(ptx_shared_bytes(ks->source), p->launch.static_smem) << "the PTX's shared arrays are the plan's";
  // The plan's parameter list, in order.
  size_t at = 0;
  for (const KernelParam &k : p->launch.params) {
    at = ks->source.find(" p_" + k.name, at);
    EXPECT_NE(at, std::string::npos) << k.name;
  }
  // And SDDMM's fast kernel.
  auto q = plan(sddmm({4, true}, {4, true}, 90));
  ASSERT_TRUE(bool(q));
  EXPECT_EQ(q->launch.language, KernelLanguage::Ptx) << q->str();
  auto kq = generate(*q);
  ASSERT_TRUE(bool(kq)) << llvm::toString(kq.takeError());
  EXPECT_NE(kq->source.find("shr.s32 sh, acc_t0_0, 8;"), std::string::npos) << "s4 x s4 sums shifted back by 8";
  EXPECT_NE(kq->source.find("div.u32 qd, q"), std::string::npos) << "the SR-BCRS output order";
}

TEST(CodegenPtx, OtherPlansStayCuda) {
  OpSpec f16 = spmm({8, true}, {8, true}, 8, 90, true, OutType::F16);  // float epilogue
  OpSpec split = spmm({8, true}, {8, true}, 8, 90);
  split.split = 2;
  OpSpec wide = spmm({12, true}, {4, true}, 8, 90);  // two lhs chunks
  OpSpec v4 = spmm({8, true}, {8, true}, 4, 90);     // stacked slots
  OpSpec nopf = spmm({8, true}, {8, true}, 8, 90, false);
  OpSpec dec = spmm({8, true}, {8, true}, 8, 90, true, OutType::Int32, 16);
  dec.decode = true;
  dec.resident = true;
  for (const OpSpec &s : {f16, split, wide, v4, nopf, dec}) {
    auto p = plan(s);
    ASSERT_TRUE(bool(p)) << to_string(s) << ": " << llvm::toString(p.takeError());
    EXPECT_EQ(p->launch.language, KernelLanguage::Cuda) << to_string(s);
    auto ks = generate(*p);
    ASSERT_TRUE(bool(ks)) << llvm::toString(ks.takeError());
    EXPECT_EQ(ks->file_name(), ks->name + ".cu");
  }
}

// Every plan the planner writes in PTX assembles with ptxas (nvJitLink, no GPU needed) for sm_80
// and sm_90: each type pair of 8 and 4 bits, both ops, int32 and int64, two tile widths and
// every ring depth.
TEST(CodegenPtx, EveryPtxPlanCompilesForSm80AndSm90) {
  const ElemType types[] = {{8, true}, {8, false}, {4, true}, {4, false}};
  int compiled = 0;
  auto check = [&](const OpSpec &s) {
    auto p = plan(s);
    ASSERT_TRUE(bool(p)) << to_string(s) << ": " << llvm::toString(p.takeError());
    if (p->launch.language != KernelLanguage::Ptx) return;
    auto ks = generate(*p);
    ASSERT_TRUE(bool(ks)) << to_string(s) << ": " << llvm::toString(ks.takeError());
    EXPECT_EQ(ptx_shared_bytes(ks->source), p->launch.static_smem) << to_string(s);
    auto cubin = compile_kernel_source(*p, *ks, s.arch);
    ASSERT_TRUE(bool(cubin)) << to_string(s) << ": " << llvm::toString(cubin.takeError()) << "\n" << ks->source;
    EXPECT_EQ(cubin->substr(0, 4), "\x7f" "ELF");
    ++compiled;
  };
  for (int arch : {80, 90})
    for (ElemType l : types)
      for (ElemType r : types) {
        check(spmm(l, r, 8, arch, true, OutType::Int32, 128));
        check(sddmm(l, r, arch, OutType::Int32, 128));
      }
  for (int arch : {80, 90}) {
    check(spmm({8, true}, {4, false}, 8, arch, true, OutType::Int64, 64));
    check(sddmm({4, false}, {8, true}, arch, OutType::Int64, 32));
    for (int st : {2, 3, 4}) {
      OpSpec s = spmm({8, true}, {8, true}, 8, arch, true, OutType::Int32, 256);
      s.stages = st;
      check(s);
    }
  }
  EXPECT_GE(compiled, 40) << "the PTX plans the grid reaches";
}

// A PTX error names the file and carries ptxas's log.
TEST(CodegenPtx, ABadPtxModuleFailsWithPtxassLog) {
  auto r = compile_cubin(SourceKind::Ptx, ".version 8.0\n.target sm_90\n.address_size 64\n.visible .entry k() { bogus; }\n",
                         "k.ptx", 90);
  ASSERT_FALSE(bool(r));
  const std::string msg = llvm::toString(r.takeError());
  EXPECT_NE(msg.find("k.ptx"), std::string::npos) << msg;
  EXPECT_NE(msg.find("ptxas"), std::string::npos) << msg;
  auto o = compile_cubin(SourceKind::Ptx, "x", "k.ptx", 90, {"-G"});
  ASSERT_FALSE(bool(o));
  EXPECT_NE(llvm::toString(o.takeError()).find("takes no NVRTC options"), std::string::npos);
}

}  // namespace

// SpMM's int8 kernels (ring and resident B) widen 4-bit planes as value << 4 too: no sign
// extension of B's nibble columns or A's words, and the epilogue shifts back by 4 per 4-bit
// chunk of a term (8 for 4-bit x 4-bit).
TEST(Codegen, SpmmNibblesWidenAsValueTimes16AndShiftBack) {
  for (bool resident : {false, true}) {
    OpSpec s = spmm({4, true}, {4, true}, 8, 90, true, OutType::Int32);
    s.bsn = resident ? 64 : 128;
    s.resident = resident;
    auto p = plan(s);
    ASSERT_TRUE(bool(p)) << llvm::toString(p.takeError());
    ASSERT_EQ(p->nibble_prescale, 4);
    EXPECT_EQ(p->max_exact_k, 131071) << "s4 x s4 sums scaled by 256 stay in int32";
    auto src = generate(in_cuda(*p));
    ASSERT_TRUE(bool(src)) << llvm::toString(src.takeError());
    EXPECT_NE(src->source.find("= mc_nib_col_hi(r0, r1, 0);"), std::string::npos);
    EXPECT_EQ(src->source.find("= mc_nib_col(r0"), std::string::npos);
    EXPECT_NE(src->source.find("mc_widen4to8_hi("), std::string::npos);
    EXPECT_NE(src->source.find("acc_g0_r0_t0[i] >> 8"), std::string::npos);
  }
  // 8-bit planes are unchanged.
  auto q = plan(spmm({8, true}, {8, true}, 8, 90, true, OutType::Int32));
  ASSERT_TRUE(bool(q));
  EXPECT_EQ(q->nibble_prescale, 0);
}

// SDDMM with 4-bit planes on int8 m16n8k32 widens nibbles with one mask per register (the
// plan's nibble_prescale) and shifts the scaled accumulators back in the epilogue.
TEST(Codegen, SddmmNibblesWidenWithOneMaskAndShiftBack) {
  OpSpec s;
  s.op = OpKind::SDDMM;
  s.lhs = {8, true};
  s.rhs = {4, false};
  s.v = 8;
  s.arch = 90;
  auto p = plan(s);
  ASSERT_TRUE(bool(p)) << llvm::toString(p.takeError());
  ASSERT_EQ(p->nibble_prescale, 4);
  auto src = generate(in_cuda(*p));
  ASSERT_TRUE(bool(src)) << llvm::toString(src.takeError());
  EXPECT_NE(src->source.find("& 0xf0f0f0f0u"), std::string::npos);
  EXPECT_NE(src->source.find("__byte_perm(cl0_0.x, cl0_0.y, 0x6420)"), std::string::npos) << "8-bit plane in nibble order";
  EXPECT_NE(src->source.find("acc_g0_r0_t0[i] >> 4"), std::string::npos);
  EXPECT_EQ(src->source.find("mc_widen4to8(("), std::string::npos);
  // Without 4-bit planes the words stay in k order: no prmt, no shift back.
  s.rhs = {8, false};
  auto q = plan(s);
  ASSERT_TRUE(bool(q));
  EXPECT_EQ(q->nibble_prescale, 0);
  auto src8 = generate(in_cuda(*q));
  ASSERT_TRUE(bool(src8));
  EXPECT_EQ(src8->source.find("__byte_perm(cl0_0"), std::string::npos);
  EXPECT_EQ(src8->source.find(">> 4)"), std::string::npos);
}

// split=2 needs the int8 m16n8k32 dense-on-M SpMM kernel; another plan is refused by name.
// A resident-B kernel: its own skeleton (dynamic shared memory, a part of the row-blocks per
// block), the swizzled slice, and refusals that name the problem.
TEST(Codegen, ResidentBKernelAndItsRefusals) {
  OpSpec s = spmm({8, true}, {8, true}, 8, 90, true, OutType::Int32);
  s.bsn = 32;
  s.resident = true;
  auto p = plan(s);
  ASSERT_TRUE(bool(p));
  EXPECT_EQ(p->launch.family, KernelFamily::SpmmResident);
  auto ks = generate(*p);
  ASSERT_TRUE(bool(ks)) << llvm::toString(ks.takeError());
  EXPECT_EQ(ks->name, "magicube_spmm_s8s8_v8_n32r_pf_sm90");
  EXPECT_EQ(p->launch.threads, 1024) << "two accumulator tiles: 32 warps";
  EXPECT_EQ(p->launch.slice_bytes_per_k, 32);
  EXPECT_EQ(p->launch.dynamic_smem(4096), 4096u * 32);
  EXPECT_EQ(p->launch.dynamic_smem(3), 8u * 32) << "pads gather rows 0..7";
  EXPECT_NE(ks->source.find("extern __shared__"), std::string::npos);
  EXPECT_NE(ks->source.find("sw0 = (row >> 2) & 1;"), std::string::npos) << "32-byte rows swizzle their two units";
  EXPECT_NE(ks->source.find("    int ldb,  // the slice width (BSn)\n    int K  // B's rows\n"), std::string::npos)
      << "the resident kernel takes K after ldb";
  // At K=4096 a 32-column slice fits the H100's 227 KiB; a 128-column slice of 16-bit B does not.
  EXPECT_EQ(check_shared_memory(*p, 4096), "");
  // Four accumulator tiles (BSn=64) keep 32 warps with a 2-deep register ring; eight (two
  // lhs groups x two rhs planes x two tiles) would spill: 16 warps.
  OpSpec w = s;
  w.bsn = 64;
  auto pw = plan(w);
  ASSERT_TRUE(bool(pw));
  auto kw = generate(*pw);
  ASSERT_TRUE(bool(kw));
  EXPECT_EQ(pw->launch.threads, 1024);
  EXPECT_NE(kw->source.find("2 strides in flight"), std::string::npos);
  w.lhs = w.rhs = {16, true};
  w.bsn = 32;
  w.out = OutType::Int64;
  auto p8 = plan(w);
  ASSERT_TRUE(bool(p8));
  auto k8 = generate(*p8);
  ASSERT_TRUE(bool(k8));
  EXPECT_EQ(p8->launch.threads, 512);
  OpSpec wide = w;
  wide.bsn = 128;
  auto pwide = plan(wide);
  ASSERT_TRUE(bool(pwide)) << llvm::toString(pwide.takeError());
  const std::string too_big = check_shared_memory(*pwide, 4096);
  EXPECT_NE(too_big.find("1048580 bytes for K=4096"), std::string::npos) << too_big;
  EXPECT_NE(too_big.find("232448"), std::string::npos) << too_big;
  // BSn=48: three tiles of 48-byte rows, not swizzled (row k starts in bank group 3k mod 8).
  OpSpec t = s;
  t.bsn = 48;
  auto pt = plan(t);
  ASSERT_TRUE(bool(pt));
  auto kt = generate(*pt);
  ASSERT_TRUE(bool(kt)) << llvm::toString(kt.takeError());
  EXPECT_EQ(kt->name, "magicube_spmm_s8s8_v8_n48r_pf_sm90");
  EXPECT_EQ(pt->launch.threads, 1024) << "three accumulator tiles: 32 warps";
  EXPECT_EQ(pt->launch.slice_bytes_per_k, 48);
  EXPECT_EQ(kt->source.find("sw0"), std::string::npos) << "no swizzle: units at fixed offsets";
  EXPECT_NE(kt->source.find("sb0 + brow0 + 32)"), std::string::npos);
  EXPECT_NE(kt->source.find("acc_g0_r0_t2"), std::string::npos);
  EXPECT_EQ(kt->source.find("acc_g0_r0_t3"), std::string::npos);
  EXPECT_EQ(resident_swizzle(5, 3), 0);
  // 8-bit B at BSn=96 would make 96-byte rows (six units: no conflict-free order).
  t.bsn = 96;
  auto p96 = plan(t);
  ASSERT_FALSE(bool(p96)) << "the planner refuses it: no GPU needed";
  EXPECT_NE(llvm::toString(p96.takeError()).find("96 bytes"), std::string::npos);
  // 4-bit B at BSn=16 would make 8-byte slice rows.
  OpSpec n4 = s;
  n4.rhs = {4, true};
  n4.bsn = 16;
  auto p4 = plan(n4);
  ASSERT_FALSE(bool(p4));
  EXPECT_NE(llvm::toString(p4.takeError()).find("4-bit B needs BSn >= 32"), std::string::npos);
  // Only the int8 m16n8k32 dense-on-M plan can keep B resident: the candidates are that one.
  auto ps = plan_candidates(s);
  ASSERT_TRUE(bool(ps));
  ASSERT_EQ(ps->size(), 1u);
  EXPECT_EQ(ps->front().launch.family, KernelFamily::SpmmResident);
}

// The decode kernel: its launch facts, its skeleton (a stride-balanced run of row-blocks per
// block, pieces of strides per warp, partials summed in shared memory, no atomics) and the
// refusals that name the problem.
// On sm_90 the decode kernel is a programmatic dependent launch: the plan says so (its JSON,
// hence the cache key, too) and the kernel waits for the previous grid before its first
// global load; on sm_80 (no griddepcontrol) neither.
TEST(Codegen, DecodeKernelWaitsForThePreviousGridOnSm90) {
  for (int arch : {90, 80}) {
    OpSpec s = spmm({8, true}, {8, true}, 8, arch, true, OutType::Int32, 16);
    s.resident = s.decode = true;
    auto p = plan(s);
    ASSERT_TRUE(bool(p)) << llvm::toString(p.takeError());
    EXPECT_EQ(p->launch.pdl, arch == 90);
    EXPECT_EQ(p->launch.str().find("programmatic dependent launch") != std::string::npos, arch == 90);
    std::string json;
    llvm::raw_string_ostream(json) << to_json(*p);
    EXPECT_NE(json.find(arch == 90 ? "\"pdl\":true" : "\"pdl\":false"), std::string::npos) << json;
    auto k = generate(*p);
    ASSERT_TRUE(bool(k)) << llvm::toString(k.takeError());
    const std::string &src = k->source;
    const size_t wait = src.find("griddepcontrol.wait;"), first_load = src.find("__ldg("),
                 copy = src.find("cp.async.ca.shared.global");
    if (arch == 80) {
      EXPECT_EQ(wait, std::string::npos);
      EXPECT_EQ(src.find("griddepcontrol"), std::string::npos);
      continue;
    }
    ASSERT_NE(wait, std::string::npos);
    EXPECT_LT(src.find("griddepcontrol.launch_dependents;"), wait);
    EXPECT_LT(wait, first_load);
    EXPECT_LT(wait, copy);
  }
  // Other families launch plainly.
  auto ring = plan(spmm({8, true}, {8, true}, 8, 90, true, OutType::Int32, 64));
  ASSERT_TRUE(bool(ring));
  EXPECT_FALSE(ring->launch.pdl);
}

// The decode kernels of 16 warps or fewer (N <= 64: bound by HBM) load A's indices and values
// past L1 (ld.global.nc.L1::no_allocate; 4-bit A's words too); those of 20 and 32 warps (past
// N = 64) through it, where the next stride's indices hit the line this one's brought.
TEST(Codegen, DecodeKernelStreamsAPastL1) {
  for (auto [lhs, warps] : {std::pair{ElemType{8, true}, 0}, {ElemType{4, true}, 0}, {ElemType{8, true}, 20}}) {
    OpSpec s = spmm(lhs, {8, true}, 8, 90, true, OutType::Int32, warps ? 48 : 16);
    s.resident = s.decode = true;
    s.warps = warps;
    auto p = plan(s);
    ASSERT_TRUE(bool(p)) << llvm::toString(p.takeError());
    const bool stream = warps == 0;
    EXPECT_EQ(p->launch.a_skip_l1, stream) << to_string(s);
    EXPECT_EQ(p->str().find("A's loads skip L1") != std::string::npos, stream) << p->str();
    std::string json;
    llvm::raw_string_ostream(json) << to_json(*p);
    EXPECT_NE(json.find(stream ? "\"a_skip_l1\":true" : "\"a_skip_l1\":false"), std::string::npos) << json;
    auto k = generate(*p);
    ASSERT_TRUE(bool(k)) << llvm::toString(k.takeError());
    const std::string &src = k->source;
    EXPECT_EQ(src.find("__ldg(pci") == std::string::npos, stream) << to_string(s);
    EXPECT_EQ(src.find("ld.global.nc.L1::no_allocate.u16") != std::string::npos, stream);
    const std::string word = lhs.bits == 4 ? "ld.global.nc.L1::no_allocate.u32" : "ld.global.nc.L1::no_allocate.v2.u32";
    EXPECT_EQ(src.find(word) != std::string::npos, stream) << to_string(s);
  }
}

// A decode plan in K panels, one tile at 16 warps or fewer on sm_90, runs two panels in a cluster of two
// blocks, one a panel: each block keeps its row-blocks' sums in shared memory past the slice,
// and after both passes (one cluster barrier, with no load in flight) adds the other block's
// half of every other row-block through distributed shared memory and writes C; a second
// barrier keeps each block's shared memory until the other has read it. Launched without a
// cluster it is the K-panel kernel (the first pass writes C, the others add). Its grid is whole
// clusters, each block copies its panel's rows only. sm_80, more tiles, and K of one or three
// panels: no cluster.
TEST(Codegen, DecodeKernelRunsTwoKPanelsInACluster) {
  OpSpec s = spmm({8, true}, {8, true}, 8, 90, true, OutType::Int32, 16);
  s.resident = s.decode = true;
  s.panel = 7168;
  auto p = plan(s);
  ASSERT_TRUE(bool(p)) << llvm::toString(p.takeError());
  const Launch &l = p->launch;
  EXPECT_TRUE(l.panel_cluster);
  EXPECT_EQ(l.cluster_blocks(14336), 2u);
  EXPECT_EQ(l.cluster_blocks(7168), 1u) << "one panel";
  EXPECT_EQ(l.cluster_blocks(20000), 1u) << "three panels: one pass a panel";
  EXPECT_EQ(l.ring_depth, 10) << "one tile: the ring of the unpanelled kernel";
  EXPECT_EQ(l.cluster_sums_bytes(8), 8u * 4 * 32 * 4) << "a row-block's sums: 4 registers x 32 lanes";
  EXPECT_NE(p->str().find("where K takes two panels a cluster of two blocks (one a panel)"), std::string::npos) << p->str();
  std::string json;
  llvm::raw_string_ostream(json) << to_json(*p);
  EXPECT_NE(json.find("\"panel_cluster\":true"), std::string::npos) << json;
  // The grid: whole clusters, each block's slice load its panel's rows.
  for (int sms : {132, 131, 7}) {
    const Dim3 g = decode_grid(l, 16, 512, 114688, 14336, sms);
    EXPECT_EQ(g.y % 2, 0u) << sms;
    EXPECT_GE(g.y, 2u);
  }
  EXPECT_EQ(decode_grid(l, 16, 1, 300, 14336, 132).y, 2u) << "one row-block: one cluster, a part each";
  auto k = generate(*p);
  ASSERT_TRUE(bool(k)) << llvm::toString(k.takeError());
  const std::string &src = k->source;
  const size_t rank_at = src.find("const unsigned crank = mc_cluster_rank();"),
               cbuf_at = src.find("int *cbuf = (int *)(smem + max(max(min(K, KP), 8) * 16, 8192));"),
               loop_at = src.find("for (int pnl = crank; pnl * KP < K; pnl += CN) {"),
               keep_at = src.find("cbuf[(((blk - rb_lo) * 1 + 0) * 4 + i) * 32 + lane] = acc_g0_r0_t0[i];"),
               last_slot = src.find("---- ring slot 9 ----"), pair_at = src.find("mc_cluster_arrive();  // release: this block's cbuf"),
               peer_at = src.find("mc_ld_peer(cpeer + 4u * (((j * 1 + 0) * 4 + i) * 32 + lane))"),
               exit_at = src.find("mc_cluster_arrive_relaxed();");
  for (size_t at : {rank_at, cbuf_at, loop_at, keep_at, last_slot, pair_at, peer_at, exit_at}) ASSERT_NE(at, std::string::npos) << src;
  EXPECT_LT(rank_at, cbuf_at);
  EXPECT_LT(cbuf_at, loop_at);
  EXPECT_LT(loop_at, keep_at);
  EXPECT_LT(last_slot, pair_at) << "the pair's barrier after the loop: no load in flight";
  EXPECT_EQ(src.find("mc_cluster_arrive();"), pair_at) << "no barrier before the loop";
  EXPECT_LT(pair_at, peer_at);
  EXPECT_LT(peer_at, exit_at);
  EXPECT_EQ(src.find("atomicAdd", pair_at), src.npos) << "the pair's sums are written, not added";
  EXPECT_NE(src.find("if (pnl > 0) atomicAdd("), std::string::npos) << "without a cluster later passes add";
  EXPECT_EQ(src.find("(int)0;"), std::string::npos) << "C is not zeroed";
  // A column-major C and int64 sums build too.
  for (auto [ccol, out] : {std::pair{true, OutType::Int32}, {false, OutType::Int64}}) {
    OpSpec t = s;
    t.c_col = ccol, t.out = out;
    auto kt = generate(llvm::cantFail(plan(t)));
    ASSERT_TRUE(bool(kt)) << to_string(t);
    EXPECT_NE(kt->source.find("mc_ld_peer(cpeer"), std::string::npos) << to_string(t);
  }
  // No cluster: sm_80, three tiles (48 columns, at 16 or 20 warps), or no panels.
  for (auto [arch, warps, bsn, panel] : {std::tuple{80, 0, 16, 7168}, {90, 0, 48, 4800}, {90, 20, 48, 4800}, {90, 0, 16, 0}}) {
    OpSpec t = s;
    t.arch = arch, t.warps = warps, t.bsn = bsn, t.panel = panel;
    auto q = plan(t);
    ASSERT_TRUE(bool(q)) << to_string(t) << ": " << llvm::toString(q.takeError());
    EXPECT_FALSE(q->launch.panel_cluster) << to_string(t);
    EXPECT_EQ(q->launch.cluster_blocks(14336), 1u);
    auto kq = generate(*q);
    ASSERT_TRUE(bool(kq));
    EXPECT_EQ(kq->source.find("mc_cluster"), std::string::npos) << to_string(t);
  }
}

TEST(Codegen, DecodeKernelAndItsRefusals) {
  OpSpec s = spmm({8, true}, {8, true}, 8, 90, true, OutType::Int32, 16);
  s.resident = s.decode = true;
  auto p = plan(s);
  ASSERT_TRUE(bool(p)) << llvm::toString(p.takeError());
  const Launch &l = p->launch;
  EXPECT_EQ(l.family, KernelFamily::SpmmDecode);
  EXPECT_STREQ(family_name(l.family), "spmm-decode");
  EXPECT_TRUE(l.b_resident());
  EXPECT_EQ(l.threads, 512);
  EXPECT_EQ(l.tiles, 1);
  EXPECT_EQ(l.ring_depth, 10) << "one accumulator tile: 10 strides in flight per warp";
  EXPECT_EQ(l.slice_bytes_per_k, 16);
  EXPECT_EQ(l.reduction_smem, 16 * 512) << "one partial tile per warp";
  EXPECT_EQ(l.static_smem, 16 * 4);
  EXPECT_EQ(l.dynamic_smem(4096), 4096u * 16);
  EXPECT_EQ(l.dynamic_smem(3), 8192u) << "small K: the partial sums set the size";
  EXPECT_EQ(l.grid_x(16), 1u);
  EXPECT_EQ(l.grid_x(1), 1u);
  // One block per SM, at most one per row-block; slices of BSn columns beyond it.
  Dim3 g = decode_grid(l, 16, 512, 32768, 4096, 132);
  EXPECT_EQ(g.x, 1u);
  EXPECT_EQ(g.y, 132u);
  g = decode_grid(l, 16, 20, 600, 4096, 132);
  EXPECT_EQ(g.y, 20u);
  g = decode_grid(l, 40, 512, 32768, 4096, 132);
  EXPECT_EQ(g.x, 3u);
  EXPECT_EQ(g.y, 44u);
  // Many slices: 171 (N=8192) in one part each would leave a second wave of 39 blocks, three
  // parts each four waves (513 of 528 blocks); one block an SM taking a 132nd of all slices'
  // strides (1.3 slices, 3 copies at most) finishes sooner, where the kernel takes shares.
  EXPECT_EQ(decode_grid(l, 171 * 16, 512, 6554, 4096, 132).x, 171u) << "a kernel without shares: whole waves";
  EXPECT_EQ(decode_grid(l, 171 * 16, 512, 6554, 4096, 132).y, 3u);
  {
  Launch ls = l;
  ls.slice_shares = true;
  const Launch &l = ls;
  EXPECT_EQ(decode_segments(171, 132), 3);
  EXPECT_EQ(decode_segments(264, 132), 2);
  EXPECT_EQ(decode_segments(1, 132), 1);
  EXPECT_EQ(decode_segments(43, 132), 2) << "a third of a slice may still straddle two";
  g = decode_grid(l, 171 * 16, 512, 6554, 4096, 132);
  EXPECT_EQ(g.x, 1u);
  EXPECT_EQ(g.y, 132u);
  // 264 slices fill two waves exactly: one part each (shares would copy as often, two a block).
  g = decode_grid(l, 264 * 16, 512, 6554, 4096, 132);
  EXPECT_EQ(g.x, 264u);
  EXPECT_EQ(g.y, 1u);
  // 43 slices of 48 columns (N=2048, n48dw20) in 3 parts fill 129 of 132 SMs with a copy each:
  // shares (two copies for some) lose.
  Launch l48 = l;
  l48.block_cols = 48, l48.slice_bytes_per_k = 48;
  g = decode_grid(l48, 43 * 48, 512, 6554, 4096, 132);
  EXPECT_EQ(g.x, 43u);
  EXPECT_EQ(g.y, 3u);
  EXPECT_EQ(decode_grid(l48, 171 * 48, 512, 6554, 4096, 132).x, 1u) << "N=8192 there: shares";
  // A slice load dearer than a part's strides (few strides, long K): fewer, longer blocks.
  EXPECT_EQ(decode_grid(l, 171 * 16, 512, 20, 14336, 132).y, 1u);
  // The launch path tries only the most parts each wave count holds: the same choice as
  // trying every part count (same cost; the fewest parts among equals), or shares where they
  // cost less than that.
  std::mt19937_64 rng(3);
  int shares = 0;
  for (int t = 0; t < 3000; ++t) {
    const int64_t n = 1 + int64_t(rng() % 20000), rbs = 1 + int64_t(rng() % 3000), strides = 1 + int64_t(rng() % 200000);
    const int64_t k = 1 + int64_t(rng() % 16000);
    const int sms = 1 + int(rng() % 200);
    const int64_t slices = l.grid_x(n), max_parts = std::min<int64_t>({rbs, 65535, 2 * int64_t(sms)});
    const double load = double(std::max<int64_t>(k, 8)) * l.slice_bytes_per_k / 1800.0;
    auto cost = [&](int64_t p) { return double((slices * p + sms - 1) / sms) * (double(strides) / double(p) + load); };
    int64_t want = 1;
    for (int64_t p = 2; p <= max_parts; ++p)
      if (cost(p) < cost(want) * (1 - 1e-9)) want = p;
    // Shares against whole waves, each run (a segment, a wave's block) ten loads (decode_grid)
    const double share_cost = double(decode_segments(slices, sms)) * 10 * load + double(strides) * double(slices) / sms;
    const double waves = double((slices * want + sms - 1) / sms);
    const Dim3 got = decode_grid(l, n, rbs, strides, k, sms);
    if (slices > 1 && share_cost < cost(want) + waves * 9 * load - 1e-9 * cost(want)) {
      ++shares;
      ASSERT_EQ(got.x, 1u) << "N=" << n << " row-blocks=" << rbs << " strides=" << strides << " K=" << k << " SMs=" << sms;
      ASSERT_EQ(got.y, unsigned(sms));
      continue;
    }
    ASSERT_EQ(got.x, unsigned(slices));
    ASSERT_NEAR(cost(int64_t(got.y)), cost(want), 1e-6 * cost(want))
        << "N=" << n << " row-blocks=" << rbs << " strides=" << strides << " K=" << k << " SMs=" << sms << ": "
        << got.y << " parts against " << want;
  }
  EXPECT_GT(shares, 100) << "the draw reaches both forms";
  // The GPU test's shapes (tests/gpu/test_spmm_gpu.cpp, DecodeKernelSharesSlicesAcrossBlocks) at
  // one stride a row-block: shares.
  for (const auto &[bsn_slices, m] : {std::pair<int64_t, int64_t>{139, 1000}, {397, 96}}) {
    const int64_t n = (bsn_slices - 1) * 16 + 5, rbs = (m + 7) / 8;
    EXPECT_EQ(decode_grid(l, n, rbs, rbs, 256, 132).x, 1u) << "slices " << bsn_slices << " M=" << m;
  }
  }
  auto ks = generate(*p);
  ASSERT_TRUE(bool(ks)) << llvm::toString(ks.takeError());
  EXPECT_EQ(ks->name, "magicube_spmm_s8s8_v8_n16d_pf_sm90");
  const std::string &src = ks->source;
  EXPECT_NE(src.find("__launch_bounds__(512, 1)"), std::string::npos);
  EXPECT_NE(src.find("    int ldb,  // the slice width (BSn)\n    int K,  // B's rows\n    int T  // strides"), std::string::npos);
  EXPECT_EQ(src.find("row_ptr"), std::string::npos) << "the schedule replaces the row pointers";
  const size_t bs_at = src.find("const int bs = __ldg(stride_next + (int)(tq * blockIdx.y + tr * blockIdx.y / gridDim.y));");
  EXPECT_NE(bs_at, std::string::npos) << "a block's run: two independent loads, in 32-bit arithmetic (no 64-bit division)";
  EXPECT_EQ(src.find("(long long)T *"), std::string::npos);
  EXPECT_EQ(src.find("share_end"), std::string::npos) << "no shares without spec.shares";
  // Issue order: the run's bounds, the slice's copy, the ring's first loads, then the wait
  // for the slice behind a branch (ptxas hoisted a plain wait above the loads).
  const size_t copy_at = src.find("cp.async.ca.shared.global"), ring_at = src.find("ci7 = mc_ld_stream16(pci + 7 * KS);"),
               wait_at = src.find("if (cw1 >= cw) {"), sync_at = src.find("__syncthreads();  // and every thread's");
  EXPECT_LT(bs_at, copy_at);
  EXPECT_LT(copy_at, ring_at);
  EXPECT_LT(ring_at, wait_at);
  EXPECT_NE(src.find("cp.async.wait_group 0;", wait_at), std::string::npos);
  EXPECT_LT(src.find("cp.async.wait_group 0;", wait_at), sync_at);
  EXPECT_NE(src.find("const int cw = bs + (int)((long long)(be - bs) * warp / WARPS);"), std::string::npos)
      << "a warp's piece: arithmetic";
  EXPECT_EQ(src.find("__ldg(pm"), std::string::npos) << "no schedule word loads";
  EXPECT_NE(src.find("const unsigned m7 = __ballot_sync(0xffffffffu, ci7 & 0x8000);"), std::string::npos)
      << "the schedule word: a ballot of the column indices' bit 15";
  EXPECT_NE(src.find("bool head = cw < cw1 && !(__ballot_sync(0xffffffffu, ci0 & 0x8000) & (1u << 30));"), std::string::npos);
  EXPECT_NE(src.find("ci9 = mc_ld_stream16(pci + 19 * KS);"), std::string::npos) << "refills at constant offsets from the lane's pointers";
  EXPECT_NE(src.find("pci += 10 * KS, pa0 += 2560;"), std::string::npos) << "pointers advance once a ring turn";
  EXPECT_EQ(src.find("(long long)(cs + "), std::string::npos) << "no index arithmetic per stride";
  EXPECT_NE(src.find("10 strides in flight per warp"), std::string::npos);
  // The tail's schedule word (the only read of stride_meta) loads with the ring, not after the loop.
  const size_t meta_load = src.find("__ldg(stride_meta + cw1 - 1)");
  ASSERT_NE(meta_load, std::string::npos);
  EXPECT_EQ(src.find("__ldg(stride_meta", meta_load + 1), std::string::npos) << "one load of stride_meta";
  EXPECT_LT(meta_load, src.find("cp.async.wait_group 0;")) << "issued before the wait for B's slice";
  EXPECT_LT(meta_load, src.find("for (int cs = cw;; cs += 10)"));
  EXPECT_NE(src.find("__syncthreads();  // every warp is done with B's slice"), std::string::npos);
  EXPECT_NE(src.find("part_rb[warp] = cw < cw1 ? prb : -2;"), std::string::npos);
  EXPECT_NE(src.find("const int row = ci0 & 0x7fff;"), std::string::npos) << "pads name their row (0..7) themselves";
  EXPECT_EQ(src.find("0xffff ?"), std::string::npos);
  EXPECT_NE(src.find("const unsigned short *__restrict__ col_idx,  // per slot: bits 0-14 the column (pads: slot % 8)"), std::string::npos)
      << "16-bit column indices";
  EXPECT_EQ(src.find("atomicAdd"), std::string::npos) << "no atomics: every output element is written once";
  EXPECT_EQ(src.find("red.global."), std::string::npos);
  EXPECT_EQ(src.find("red.shared."), std::string::npos);
  EXPECT_EQ(src.find("gridDim.x"), std::string::npos);
  // Shares of all slices (spec n..s): a segment a slice; the share in 32-bit arithmetic where
  // it fits; only the slice kept through the loop, the share's end read from shared memory.
  {
    OpSpec sh = s;
    sh.shares = true;
    auto ps = plan(sh);
    ASSERT_TRUE(bool(ps)) << llvm::toString(ps.takeError());
    EXPECT_TRUE(ps->launch.slice_shares);
    EXPECT_FALSE(l.slice_shares);
    auto kss = generate(*ps);
    ASSERT_TRUE(bool(kss)) << llvm::toString(kss.takeError());
    EXPECT_EQ(kss->name, "magicube_spmm_s8s8_v8_n16ds_pf_sm90");
    const std::string &ss = kss->source;
    const size_t narrow_at = ss.find("if ((((unsigned long long)(unsigned)T * S) >> 32) == 0 && G < 65536u) {");
    EXPECT_NE(narrow_at, std::string::npos) << "the share in 32-bit arithmetic where it fits (no 64-bit division)";
    EXPECT_NE(ss.find("    const unsigned g0 = q * bid + r * bid / G;\n", narrow_at), std::string::npos);
    EXPECT_NE(ss.find("const unsigned bid = blockIdx.x * gridDim.y + blockIdx.y;"), std::string::npos)
        << "one share per block of either grid form";
    const size_t sbs = ss.find("const int bs = __ldg(stride_next + t0);"), scopy = ss.find("const unsigned char *src = b0 + (long long)sl * K * 16;");
    EXPECT_NE(sbs, std::string::npos);
    EXPECT_LT(sbs, scopy) << "the segment's bounds, then its slice";
    EXPECT_NE(ss.find("end = share_end, ++sl, t0 = 0;"), std::string::npos) << "the next segment: the next slice";
    EXPECT_NE(ss.find("const int n_base = sl * BSN;"), std::string::npos);
    EXPECT_EQ(ss.find("const int n_base = blockIdx.x"), std::string::npos);
  }
  // The float GPU test's shapes (tests/gpu/test_epilogue_gpu.cpp, DecodeFloatOutputsInShares) at
  // one stride a row-block: shares for each tile it runs.
  for (auto [bsn, warps] : {std::pair{48, 20}, {32, 24}, {16, 32}}) {
    OpSpec f = s;
    f.bsn = bsn, f.warps = warps, f.shares = true, f.out = OutType::BF16;
    auto pf = plan(f);
    ASSERT_TRUE(bool(pf)) << llvm::toString(pf.takeError());
    EXPECT_EQ(decode_grid(pf->launch, int64_t(139) * bsn - 11, 126, 126, 256, 132).x, 1u) << to_string(f);
  }
  // Wider tiles: more accumulator tiles, a shallower ring; 16 warps unless the spec asks.
  for (auto [bsn, depth, warps] : {std::tuple{32, 10, 16}, {48, 10, 16}, {64, 8, 16}}) {
    OpSpec w = s;
    w.bsn = bsn;
    auto pw = plan(w);
    ASSERT_TRUE(bool(pw)) << llvm::toString(pw.takeError());
    EXPECT_EQ(pw->launch.tiles, bsn / 16);
    EXPECT_EQ(pw->launch.ring_depth, depth) << bsn;
    EXPECT_EQ(pw->launch.threads, warps * 32) << bsn;
    EXPECT_EQ(pw->launch.reduction_smem, warps * 512 * bsn / 16);
    auto kw = generate(*pw);
    ASSERT_TRUE(bool(kw)) << llvm::toString(kw.takeError());
    EXPECT_EQ(kw->name, "magicube_spmm_s8s8_v8_n" + std::to_string(bsn) + "d_pf_sm90");
  }
  // More warps a block (spec.warps), fewer registers each: 20 hold three tiles, 24 two, 32 one.
  for (auto [bsn, warps, depth] : {std::tuple{48, 20, 10}, {32, 24, 8}, {16, 24, 10}, {16, 32, 8}}) {
    OpSpec w = s;
    w.bsn = bsn, w.warps = warps;
    auto pw = plan(w);
    ASSERT_TRUE(bool(pw)) << llvm::toString(pw.takeError());
    EXPECT_EQ(pw->launch.threads, warps * 32) << to_string(w);
    EXPECT_EQ(pw->launch.ring_depth, depth) << to_string(w);
    EXPECT_EQ(pw->launch.reduction_smem, warps * 512 * bsn / 16);
    auto kw = generate(*pw);
    ASSERT_TRUE(bool(kw)) << llvm::toString(kw.takeError());
    EXPECT_EQ(kw->name, "magicube_spmm_s8s8_v8_n" + std::to_string(bsn) + "dw" + std::to_string(warps) + "_pf_sm90");
    EXPECT_NE(kw->source.find("__launch_bounds__(" + std::to_string(warps * 32) + ", 1)"), std::string::npos);
    EXPECT_NE(kw->source.find("constexpr int THREADS = " + std::to_string(warps * 32) + ";"), std::string::npos);
  }
  // (sm_80 too: its int4 candidates come first, but the refusal named is the decode kernel's)
  for (auto [bsn, warps, arch] : {std::tuple{48, 24, 90}, {32, 32, 90}, {64, 20, 90}, {48, 24, 80}}) {
    OpSpec w = s;
    w.bsn = bsn, w.warps = warps, w.arch = arch;
    auto pw = plan(w);
    ASSERT_FALSE(bool(pw)) << to_string(w);
    const std::string e = llvm::toString(pw.takeError());
    EXPECT_NE(e.find(std::to_string(warps) + " warps a block hold at most"), std::string::npos) << e;
  }
  // Two lhs groups at 64 columns are eight accumulator tiles: 8 warps of 255 registers.
  OpSpec g2 = s;
  g2.lhs = {12, true};
  g2.bsn = 64;
  auto pg2 = plan(g2);
  ASSERT_TRUE(bool(pg2)) << llvm::toString(pg2.takeError());
  EXPECT_EQ(pg2->groups.size(), 2u);
  EXPECT_EQ(pg2->launch.threads, 256);
  EXPECT_EQ(pg2->launch.ring_depth, 4);
  EXPECT_EQ(pg2->launch.reduction_smem, 8 * 8 * 512);
  // Four int64 accumulator tiles: an 8-deep ring as for int32.
  OpSpec i64 = s;
  i64.bsn = 64;
  i64.out = OutType::Int64;
  EXPECT_EQ(llvm::cantFail(plan(i64)).launch.ring_depth, 8);
  // B must fit a block's shared memory: K=14336 x 16 columns does (224 KiB), x 32 does not.
  EXPECT_EQ(check_shared_memory(*p, 14336), "");
  OpSpec w32 = s;
  w32.bsn = 32;
  auto p32 = plan(w32);
  ASSERT_TRUE(bool(p32));
  const std::string too_big = check_shared_memory(*p32, 14336);
  EXPECT_NE(too_big.find("decode: B resident in shared memory needs 458816 bytes for K=14336 x 32 columns"),
            std::string::npos)
      << too_big;
  EXPECT_NE(too_big.find("232448"), std::string::npos) << too_big;
  // 4-bit B is packed as bytes for the decode kernel (one byte an element, widened once when B is
  // packed): n16d builds with 16-byte slice rows, n32d with 32, as for 8-bit B.
  OpSpec n4 = s;
  n4.lhs = n4.rhs = {4, true};
  auto p4 = plan(n4);
  ASSERT_TRUE(bool(p4)) << llvm::toString(p4.takeError());
  EXPECT_EQ(p4->rhs.at(0).storage_bits, 8);
  EXPECT_EQ(p4->lhs.at(0).storage_bits, 4) << "A stays 4-bit: its bytes are what the kernel streams";
  EXPECT_EQ(p4->launch.slice_bytes_per_k, 16);
  n4.bsn = 32;
  auto p4b = plan(n4);
  ASSERT_TRUE(bool(p4b)) << llvm::toString(p4b.takeError());
  EXPECT_EQ(p4b->launch.family, KernelFamily::SpmmDecode);
  EXPECT_EQ(p4b->launch.slice_bytes_per_k, 32);
  n4.decode = n4.resident = false;  // the other kernels keep 4-bit B packed (widened per gather)
  n4.bsn = 64;
  EXPECT_EQ(llvm::cantFail(plan(n4)).rhs.at(0).storage_bits, 4);
  n4.decode = n4.resident = true;
  n4.bsn = 32;
  // sm_80 too (its int8 m16n8k32 plan widens the nibbles; the int4 plans have no decode kernel).
  n4.arch = 80;
  auto p80 = plan_candidates(n4);
  ASSERT_TRUE(bool(p80)) << llvm::toString(p80.takeError());
  ASSERT_EQ(p80->size(), 1u);
  EXPECT_EQ(p80->front().launch.family, KernelFamily::SpmmDecode);
  // A plan of another mma cannot take the decode kernel: refused by name.
  OpSpec s12 = spmm({12, true}, {4, false}, 4, 80, true, OutType::Int32, 32);
  s12.resident = s12.decode = true;
  Plan q = llvm::cantFail(plan(spmm({12, true}, {4, false}, 4, 80, true, OutType::Int32, 32)));
  ASSERT_NE(q.shape, (MmaShape{16, 8, 32})) << "sm_80 plans s12 x u4 on int4";
  q.spec = s12;
  EXPECT_NE(plan_launch(q).find("decode: only the int8 m16n8k32 dense-on-M SpMM plan has a decode kernel"),
            std::string::npos);
  // Only the int8 m16n8k32 dense-on-M plan has a decode kernel: the candidates are that one.
  auto ps = plan_candidates(s);
  ASSERT_TRUE(bool(ps));
  ASSERT_EQ(ps->size(), 1u);
}

TEST(Codegen, SplitNeedsTheFastSpmmKernel) {
  OpSpec s;
  s.lhs = {8, true};
  s.rhs = {8, true};
  s.v = 8;
  s.arch = 90;
  s.split = 2;
  auto ps = plan_candidates(s);
  ASSERT_TRUE(bool(ps)) << llvm::toString(ps.takeError());
  // Only the ring kernel splits: it is the one candidate left.
  ASSERT_EQ(ps->size(), 1u);
  const Plan &p = ps->front();
  EXPECT_EQ(p.launch.family, KernelFamily::SpmmRing);
  EXPECT_EQ(p.launch.warp_groups, 2);
  EXPECT_EQ(p.launch.threads, 256);
  auto ks = generate(p);
  ASSERT_TRUE(bool(ks)) << llvm::toString(ks.takeError());
  EXPECT_NE(ks->source.find("bar.sync"), std::string::npos) << "each warp group syncs on its own barrier";
  EXPECT_NE(ks->name.find("_n64k2_"), std::string::npos) << ks->name;
  // On sm_80 the cheapest mma is int4 m16n8k64, which cannot split: the refusal names it.
  s.arch = 80;
  s.lhs = s.rhs = {4, true};
  auto p80 = plan_candidates(s);
  ASSERT_TRUE(bool(p80)) << "the int8 ring kernel still splits";
  EXPECT_EQ(p80->front().native_bits, 8);
  // Rings that do not fit static shared memory: two 16-bit groups at BSn 256.
  OpSpec big;
  big.lhs = big.rhs = {16, true};
  big.out = OutType::Int64;
  big.arch = 90;
  big.bsn = 256;
  big.split = 2;
  auto pb = plan(big);
  ASSERT_FALSE(bool(pb));
  EXPECT_NE(llvm::toString(pb.takeError()).find("2-deep rings (limit 49152)"), std::string::npos);
}

// The SDDMM kernels read whole 64- or 128-k blocks: launch_sddmm refuses a pitch that is not
// a multiple of 128 covering K, naming both; the packers' pitch always passes.
TEST(Codegen, SddmmPitchMustCoverWholeKBlocks) {
  OpSpec s;
  s.op = OpKind::SDDMM;
  s.lhs = {4, true};
  s.rhs = {4, true};
  s.arch = 90;
  auto p = plan(s);
  ASSERT_TRUE(bool(p)) << llvm::toString(p.takeError());
  for (int64_t k : {1, 100, 128, 129, 1000}) {
    auto a = pack_sddmm_lhs(std::vector<int64_t>(size_t(8 * k), 1), 8, k, *p);
    ASSERT_TRUE(bool(a)) << llvm::toString(a.takeError());
    EXPECT_FALSE(bool(check_dense_pitch(a->k, a->ld))) << "K=" << k << " ld=" << a->ld;
  }
  const std::string bad = llvm::toString(check_dense_pitch(300, 320));
  EXPECT_NE(bad.find("pitch 320"), std::string::npos) << bad;
  EXPECT_NE(bad.find("K=300"), std::string::npos) << bad;
  EXPECT_NE(llvm::toString(check_dense_pitch(300, 256)), "") << "a pitch below K";
}
