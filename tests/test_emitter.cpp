// The emitter (compiler/emitter.h): constant folding, brackets only where C++ needs them,
// scopes and names, line wrapping; and the device-helper snippets (compiler/snippets.h).
#include <gtest/gtest.h>

#include "compiler/emitter.h"
#include "compiler/snippets.h"

using namespace magicube;
using namespace magicube::cg;

namespace {

TEST(Expr, FoldsWhatGenerationTimeKnows) {
  const Expr n_base = Expr::var("n_base", 0, std::nullopt, 64), x("x");
  EXPECT_EQ((n_base * 8 / 8).str(), "n_base");
  EXPECT_EQ((n_base * 4 / 8).str(), "n_base / 2");
  EXPECT_EQ((x * 1 + 0).str(), "x");
  EXPECT_EQ((x * 0).str(), "0");
  EXPECT_EQ(select(eq(Expr(0), 0), 0, 0).str(), "0");
  EXPECT_EQ(select("c", "y", "y").str(), "y");
  EXPECT_EQ((x + 32 * 1 + 5).str(), "x + 37");
  EXPECT_EQ((x + 4 - 4).str(), "x");
  EXPECT_EQ((x + 3 - 5).str(), "x - 2");
  EXPECT_EQ((Expr("a") + (x + 16)).str(), "a + x + 16");
}

TEST(Expr, UsesRangesAndDivisors) {
  const Expr gid = Expr::var("gid", 0, 7), tig = Expr::var("tig", 0, 3);
  const Expr V8 = Expr::named("V", 8), V2 = Expr::named("V", 2);
  EXPECT_EQ((gid / V8).str(), "0") << "gid < 8";
  EXPECT_EQ((gid % V8).str(), "gid");
  EXPECT_EQ((gid / V2).str(), "gid / V") << "named constants print by name";
  EXPECT_EQ(lt(tig * 2 + 1, V8).str(), "1");
  EXPECT_EQ(land(lt(tig * 2 + 1, V8), lt("row", "M")).str(), "row < M");
  EXPECT_EQ(eq(gid + 8, 0).str(), "0");
  // (tig * 8 + c) & 7 is c & 7: tig * 8 is a multiple of 8.
  EXPECT_EQ(((tig * 8 + 37) & 7).str(), "5");
  EXPECT_EQ(((tig * 8 + 37) & ~7).str(), "tig * 8 + 32");
  EXPECT_EQ((gid & 7).str(), "gid");
  EXPECT_EQ(Expr::named("KS", 32).str(), "KS");
  EXPECT_EQ((Expr::named("KS", 32) / 4).str(), "KS / 4");
  EXPECT_TRUE((Expr::named("KS", 32) / 4).is(8));
}

TEST(Expr, BracketsOnlyWhereNeededOrClearer) {
  const Expr a("a"), b("b"), c("c");
  EXPECT_EQ((a - (b - c)).str(), "a - (b - c)");
  EXPECT_EQ((a - b - c).str(), "a - b - c");
  EXPECT_EQ(((a + b) * c).str(), "(a + b) * c");
  EXPECT_EQ(((a << 4) & Expr("0xf0u")).str(), "(a << 4) & 0xf0u");
  EXPECT_EQ(((a % b) * c).str(), "(a % b) * c");
  EXPECT_EQ((a * b / c).str(), "a * b / c");
  EXPECT_EQ(cast("long long", a + b).str(), "(long long)(a + b)");
  EXPECT_EQ(call("f", {a + 1, select(c, 1, 2)}).str(), "f(a + 1, c ? 1 : 2)");
  EXPECT_EQ(at(at("sb0", a + 4), 0).str(), "sb0[a + 4][0]");
  EXPECT_EQ(addr(at("s", 1)).str(), "&s[1]");
  EXPECT_EQ(offset("p", a + b + 16).str(), "p + a + b + 16") << "each term reaches the pointer on its own";
  EXPECT_EQ((Expr("p") + (a + b)).str(), "p + (a + b)");
}

TEST(Emitter, IndentsScopesAndCatchesTwoDeclarations) {
  Emitter e(1);
  e.decl("int", "x", 3, "three");
  {
    auto s = e.scope("if (x)");
    e.decl("int", "y[4]", Expr("{}"));
    e.decl("int", "x", 4);  // shadows the outer x: allowed
  }
  e.guarded(lt(Expr::var("i", 0, 3), 4), "f();");
  e.guarded(Expr("c"), "g();");
  EXPECT_EQ(e.str(),
            "  int x = 3;  // three\n"
            "  if (x) {\n"
            "    int y[4] = {};\n"
            "    int x = 4;\n"
            "  }\n"
            "  f();\n"
            "  if (c) g();\n");
  EXPECT_TRUE(e.errors().empty());
  e.decl("int", "x", 5);
  ASSERT_EQ(e.errors().size(), 1u);
  EXPECT_NE(e.errors()[0].find("'x' declared twice"), std::string::npos);
  EXPECT_EQ(e.fresh("x"), "x0");
}

TEST(Emitter, UnrolledLoopOfOneIsABlock) {
  Emitter e;
  e.unrolled("it", 1, "one", [&](const Expr &it) { e.line("a[" + (it * 4).str() + "] = 0;"); });
  e.unrolled("it", 2, "", [&](const Expr &it) { e.line("a[" + (it * 4).str() + "] = 0;"); });
  EXPECT_EQ(e.str(),
            "{  // one\n"
            "  a[0] = 0;\n"
            "}\n"
            "#pragma unroll\n"
            "for (int it = 0; it < 2; ++it) {\n"
            "  a[it * 4] = 0;\n"
            "}\n");
}

TEST(Emitter, WrapsLongLinesAtTheirOutermostBreaks) {
  Emitter e(0, 40);
  e.line("x = f(aaaaaaaaaa, bbbbbbbbbb, cccccccccc, dddddddddd);", "a comment too long to stay beside it");
  e.line("y = p ? aaaaaaaaaaaaaaaa : q ? bbbbbbbbbbbbbbbbbbbb : 0u;");
  e.line("asm volatile(\"op [%0], [%1];\\n\" :: \"r\"(aaaaaaaaaa), \"l\"(bbbbb));");
  EXPECT_EQ(e.str(),
            "// a comment too long to stay beside it\n"
            "x = f(aaaaaaaaaa, bbbbbbbbbb,\n"
            "    cccccccccc, dddddddddd);\n"
            "y = p ? aaaaaaaaaaaaaaaa\n"
            "    : q ? bbbbbbbbbbbbbbbbbbbb\n"
            "    : 0u;\n"
            "asm volatile(\"op [%0], [%1];\\n\"\n"
            "    :: \"r\"(aaaaaaaaaa), \"l\"(bbbbb));\n");
}

TEST(Snippets, EmitOnlyWhatIsUsedAfterWhatItNeeds) {
  Snippets s;
  s.use("mc_nib_col_hi");
  EXPECT_EQ(s.used(), (std::vector<std::string>{"u32", "mc_nib_col_hi"}));
  const std::string t = s.text();
  EXPECT_NE(t.find("typedef unsigned int u32;"), std::string::npos);
  EXPECT_LT(t.find("typedef unsigned int u32;"), t.find("mc_nib_col_hi("));
  EXPECT_EQ(t.find("mc_pack8"), std::string::npos);
  EXPECT_EQ(t.find("//@"), std::string::npos) << "marker lines are never emitted";
  s.use("mc_to_bf16");
  EXPECT_EQ(s.used(), (std::vector<std::string>{"u32", "mc_nib_col_hi", "MC_FN", "mc_odd_f32", "mc_to_bf16"}));
  EXPECT_LT(s.text().find("#define MC_FN"), s.text().find("mc_odd_f32("));
  EXPECT_EQ(s.text().find("mc_round_bits("), std::string::npos) << "the kernels convert without it";
  s.add("// ---- generated ----", "my_helper", "__device__ int my_helper();\n", {"u32"});
  s.use("my_helper");
  EXPECT_NE(s.text().find("// ---- generated ----\n__device__ int my_helper();"), std::string::npos);
  EXPECT_TRUE(s.errors().empty());
  s.use("no_such_helper");
  ASSERT_EQ(s.errors().size(), 1u);
  EXPECT_NE(s.errors()[0].find("no_such_helper"), std::string::npos);
}

}  // namespace
