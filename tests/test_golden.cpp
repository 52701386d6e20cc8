// Golden files: the generated source of a handful of representative plans, compared byte for
// byte with tests/golden/<name>.cu (or .ptx for kernels written in PTX), the reviewed record
// of what generated code looks like.
// MAGICUBE_UPDATE_GOLDEN=1 rewrites them instead (tests/golden/README.md).
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <vector>

#include "compiler/codegen.h"
#include "compiler/dense_epilogue.h"
#include "compiler/planner.h"

using namespace magicube;

namespace {

struct Golden {
  const char *name;  // tests/golden/<name>.cu or .ptx
  const char *spec;  // canonical text form
  int candidate;     // index into plan_candidates (0 = the planner's choice)
  bool cuda = false;  // the plan's kernel written in CUDA even where the planner writes PTX (MAGICUBE_PTX=0)
};

const Golden kGoldens[] = {
    {"spmm_ring_s8s8_v8_sm90", "spmm.s8xs8.v8.n64.pf.i32.sm_90", 0},  // PTX
    {"spmm_ring_s8s8_v8_sm90", "spmm.s8xs8.v8.n64.pf.i32.sm_90", 0, true},
    {"spmm_ring_split2_s8s8_v8_sm90", "spmm.s8xs8.v8.n64k2.pf.i32.sm_90", 0},
    {"spmm_resident_s8s8_v8_n48r_sm90", "spmm.s8xs8.v8.n48r.pf.i32.sm_90", 0},
    {"spmm_decode_s8s8_v8_n16d_sm90", "spmm.s8xs8.v8.n16d.pf.i32.sm_90", 0},  // N <= 64: strides split over warps
    {"spmm_decode_s8s8_v8_n48dp4800_sm90", "spmm.s8xs8.v8.n48dp4800.pf.i32.sm_90", 0},  // K in panels, adds into C
    // the dispatch's long-K kernel at s=0.9: 16-column slices of all K, 32 warps of 64 registers, ring 8
    {"spmm_decode_s8s8_v8_n16dw32_sm90", "spmm.s8xs8.v8.n16dw32.pf.i32.sm_90", 0},
    {"spmm_decode_s8s8_v8_n16dw32s_sm90", "spmm.s8xs8.v8.n16dw32s.pf.i32.sm_90", 0},  // shares of all slices
    // C column-major (+ccol): each lane stores two adjacent rows of a column, the panels' adds too
    {"spmm_decode_s8s8_v8_n48dp4800_ccol_sm90", "spmm.s8xs8.v8.n48dp4800.pf.i32+ccol.sm_90", 0},
    // 4-bit A: the ring holds each stride's packed word (lq*), widened when the stride is consumed
    {"spmm_decode_s4s8_v8_n48dp4800_sm90", "spmm.s4xs8.v8.n48dp4800.pf.i32.sm_90", 0},
    // 4-bit B packed as bytes (sign-extended when B is packed): the 8-bit-B kernel with s4 x s4 types
    {"spmm_decode_s4s4_v8_n16d_sm90", "spmm.s4xs4.v8.n16d.pf.i32.sm_90", 0},
    // the torch layer's kernel: bf16, row x column scales and a row bias, C column-major (a
    // column's two rows as one store, scales read once per row and column, the hardware's cvt)
    {"spmm_decode_s8s8_v8_n16d_bf16_rc_rowbias_ccol_sm90", "spmm.s8xs8.v8.n16d.pf.bf16+rc+rowbias+ccol.sm_90", 0},
    {"spmm_ring_s8u4_v8_sm90", "spmm.s8xu4.v8.n64.pf.i32.sm_90", 0},  // PTX, 4-bit B: nibble widening
    {"spmm_ring_s8u4_v8_sm90", "spmm.s8xu4.v8.n64.pf.i32.sm_90", 0, true},
    {"spmm_generic_s12u4_v4_sm80", "spmm.s12xu4.v4.n64.pf.i32.sm_80", 0},  // int4 m16n8k64
    {"spmm_generic_m8n8k16_s8s8_v2_sm90", "spmm.s8xs8.v2.n64.pf.i32.sm_90", 2},  // sparse on M
    {"sddmm_fast_s8s8_v8_sm90", "sddmm.s8xs8.v8.n64.pf.i32.sm_90", 0},  // PTX
    {"sddmm_fast_s8s8_v8_sm90", "sddmm.s8xs8.v8.n64.pf.i32.sm_90", 0, true},
    {"sddmm_fast_s4s4_v8_sm90", "sddmm.s4xs4.v8.n64.pf.i32.sm_90", 0},  // PTX, 4-bit planes
    {"sddmm_generic_u3s7_v2_sm80", "sddmm.u3xs7.v2.n64.pf.i32.sm_80", 1},  // int4 m16n8k64
    {"spmm_ring_f16_rc_colbias_sm90", "spmm.s8xs8.v8.n64.pf.f16+rc+colbias.sm_90", 0},
};

void PrintTo(const Golden &g, std::ostream *os) {
  *os << g.spec << " candidate " << g.candidate << (g.cuda ? " in CUDA" : "");
}

// The golden plan: candidate `g.candidate`, its kernel in CUDA when `g.cuda`.
Plan golden_plan(const Golden &g) {
  auto spec = parse_opspec(g.spec);
  EXPECT_TRUE(bool(spec)) << llvm::toString(spec.takeError());
  auto ps = plan_candidates(*spec);
  EXPECT_TRUE(bool(ps)) << llvm::toString(ps.takeError());
  EXPECT_LT(size_t(g.candidate), ps->size());
  Plan p = (*ps)[g.candidate];
  if (g.cuda) p.launch.language = KernelLanguage::Cuda;
  return p;
}

std::string golden_path(const Golden &g) {
  const bool ptx = golden_plan(g).launch.language == KernelLanguage::Ptx;
  return std::string(MAGICUBE_SOURCE_DIR) + "/tests/golden/" + g.name + (ptx ? ".ptx" : ".cu");
}

std::vector<std::string> lines_of(const std::string &s) {
  std::vector<std::string> lines;
  std::istringstream in(s);
  for (std::string l; std::getline(in, l);) lines.push_back(l);
  return lines;
}

// One unified-diff hunk around the first difference: the lines that differ between the
// first and the last differing line, with 3 lines of context (at most 12 lines a side).
std::string first_difference(const std::string &want, const std::string &got, const std::string &path) {
  const std::vector<std::string> a = lines_of(want), b = lines_of(got);
  size_t head = 0;
  while (head < a.size() && head < b.size() && a[head] == b[head]) ++head;
  size_t tail = 0;
  while (tail < a.size() - head && tail < b.size() - head && a[a.size() - 1 - tail] == b[b.size() - 1 - tail]) ++tail;
  const size_t from = head >= 3 ? head - 3 : 0;
  const size_t a_end = std::min(a.size() - tail, head + 12), b_end = std::min(b.size() - tail, head + 12);
  const size_t a_ctx = std::min(a.size(), a_end + 3), b_ctx = std::min(b.size(), b_end + 3);
  std::ostringstream o;
  o << "--- " << path << " (golden)\n+++ generated\n";
  o << "@@ -" << from + 1 << "," << a_ctx - from << " +" << from + 1 << "," << b_ctx - from << " @@\n";
  for (size_t i = from; i < head; ++i) o << " " << a[i] << "\n";
  for (size_t i = head; i < a_end; ++i) o << "-" << a[i] << "\n";
  if (a_end < a.size() - tail) o << "-...\n";
  for (size_t i = head; i < b_end; ++i) o << "+" << b[i] << "\n";
  if (b_end < b.size() - tail) o << "+...\n";
  for (size_t i = a_end; i < a_ctx && a_end == a.size() - tail; ++i) o << " " << a[i] << "\n";
  return o.str();
}

class GoldenKernels : public ::testing::TestWithParam<Golden> {};

// Compares `source` with the golden file at `path` (or rewrites it under MAGICUBE_UPDATE_GOLDEN=1).
void expect_golden(const std::string &path, const std::string &source, const std::string &what) {
  const char *update = std::getenv("MAGICUBE_UPDATE_GOLDEN");
  if (update && std::string(update) == "1") {
    std::filesystem::create_directories(std::filesystem::path(path).parent_path());
    std::ofstream out(path, std::ios::binary);
    out << source;
    ASSERT_TRUE(bool(out)) << "cannot write " << path;
    std::cout << "updated " << path << "\n";
    return;
  }
  std::ifstream in(path, std::ios::binary);
  ASSERT_TRUE(bool(in)) << "no golden file " << path << " (MAGICUBE_UPDATE_GOLDEN=1 writes it)";
  std::stringstream want;
  want << in.rdbuf();
  if (want.str() != source)
    ADD_FAILURE() << "generated source of " << what << " differs from " << path
                  << " (review the change; MAGICUBE_UPDATE_GOLDEN=1 rewrites the golden files):\n"
                  << first_difference(want.str(), source, path);
}

TEST_P(GoldenKernels, MatchTheReviewedSource) {
  const Golden &g = GetParam();
  auto ks = generate(golden_plan(g));
  ASSERT_TRUE(bool(ks)) << llvm::toString(ks.takeError());
  expect_golden(golden_path(g), ks->source, g.spec);
}

// The dense route's epilogue kernel (compiler/dense_epilogue.h): a float output with every
// epilogue term into a column-major C, the plain int64 widening, and the sum of chunk-pair
// planes (u8 x s12: four GEMMs) into int32 and f16.
TEST(GoldenDenseEpilogue, MatchesTheReviewedSource) {
  for (auto [spec_text, transposed] :
       {std::pair{"spmm.s8xs8.v8.bf16+rc+rowbias.sm_90", true}, {"spmm.s8xs8.v8.i64.sm_90", false},
        {"spmm.u8xs12.v8.i32.sm_90", false}, {"spmm.u8xs8.v8.f16+t.sm_90", true}}) {
    auto spec = parse_opspec(spec_text);
    ASSERT_TRUE(bool(spec)) << llvm::toString(spec.takeError());
    const KernelSource k = dense_epilogue_source(*spec, transposed);
    expect_golden(std::string(MAGICUBE_SOURCE_DIR) + "/tests/golden/" + k.name + ".cu", k.source, spec_text);
    for (const std::string &line : lines_of(k.source)) EXPECT_LE(line.size(), 120u) << line;
  }
}

// The golden kernels read like hand-written code: no arithmetic left to fold, no line past
// 120 columns.
TEST_P(GoldenKernels, HaveNoUnfoldedArithmeticOrLongLines) {
  const Golden &g = GetParam();
  auto ks = generate(golden_plan(g));
  ASSERT_TRUE(bool(ks));
  for (const std::string &line : lines_of(ks->source)) {
    EXPECT_LE(line.size(), 120u) << line;
    const std::string code = line.substr(0, line.find("//"));
    for (const char *bad : {" * 8 / 8", " * 4 / 8", " * 1)", " * 1;", " + 0)", " + 0;", " + 0 ", "? 0 : 0)", "[0 +", "(0 +"})
      EXPECT_EQ(code.find(bad), std::string::npos) << "'" << bad << "' in: " << line;
  }
}

INSTANTIATE_TEST_SUITE_P(Golden, GoldenKernels, ::testing::ValuesIn(kGoldens),
                         [](const auto &info) { return std::string(info.param.name) + (info.param.cuda ? "_cuda" : ""); });

// The first-difference report names the lines that differ, with context.
TEST(GoldenDiff, ShowsTheFirstDifferingLinesWithContext) {
  const std::string d = first_difference("a\nb\nc\nd\ne\nf\n", "a\nb\nc\nD\ne\nf\n", "x.cu");
  EXPECT_NE(d.find("@@ -1,6 +1,6 @@"), std::string::npos) << d;
  EXPECT_NE(d.find(" c\n-d\n+D\n e\n"), std::string::npos) << d;
  const std::string grown = first_difference("a\nb\n", "a\nb\nc\n", "x.cu");
  EXPECT_NE(grown.find("+c\n"), std::string::npos) << grown;
}

}  // namespace
