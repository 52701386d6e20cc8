#include <gtest/gtest.h>
#include <cstdlib>

#include "compiler/ir.h"

using namespace magicube;

namespace {

std::string error_of(llvm::Expected<OpSpec> r) {
  if (r) return "";
  return llvm::toString(r.takeError());
}

TEST(Ir, TextFormRoundTripsForEveryField) {
  int n = 0;
  for (OpKind op : {OpKind::SpMM, OpKind::SDDMM})
    for (int lb = 1; lb <= 16; ++lb)
      for (int rb = 1; rb <= 16; rb += 3)
        for (int sg = 0; sg < 4; ++sg)
          for (int v : {1, 2, 4, 8})
            for (int bsn : {32, 64, 128, 256})
              for (bool pf : {false, true})
                for (OutType out : {OutType::Int32, OutType::Int64, OutType::F32, OutType::F16, OutType::BF16})
                  for (int arch : {80, 86, 89, 90}) {
                    if ((++n) % 7) continue;  // a spread, not all 600k
                    OpSpec s{op, {lb, bool(sg & 1)}, {rb, bool(sg & 2)}, v, bsn, pf, out, arch};
                    std::string text = to_string(s);
                    auto back = parse_opspec(text);
                    ASSERT_TRUE(bool(back)) << text << ": " << llvm::toString(back.takeError());
                    EXPECT_EQ(*back, s) << text;
                    EXPECT_EQ(to_string(*back), text);
                    auto js = opspec_from_json(to_json(s));
                    ASSERT_TRUE(bool(js)) << llvm::toString(js.takeError());
                    EXPECT_EQ(*js, s);
                  }
}

TEST(Ir, PrintsTheDocumentedForm) {
  OpSpec s{OpKind::SpMM, {8, true}, {4, false}, 8, 64, true, OutType::Int32, 90};
  EXPECT_EQ(to_string(s), "spmm.s8xu4.v8.n64.pf.i32.sm_90");
  s = {OpKind::SDDMM, {12, false}, {16, true}, 2, 128, false, OutType::BF16, 80};
  EXPECT_EQ(to_string(s), "sddmm.u12xs16.v2.n128.nopf.bf16.sm_80");
}

TEST(Ir, RingDepthIsPartOfTheTextAndJson) {
  for (int st : {0, 2, 3, 4}) {
    OpSpec s{OpKind::SpMM, {8, true}, {8, true}, 8, 128, true, OutType::Int32, 90};
    s.stages = st;
    const std::string text = to_string(s);
    EXPECT_EQ(text, "spmm.s8xs8.v8.n128.pf" + (st ? std::to_string(st) : std::string()) + ".i32.sm_90");
    auto back = parse_opspec(text);
    ASSERT_TRUE(bool(back)) << llvm::toString(back.takeError());
    EXPECT_EQ(back->stages, st);
    auto js = opspec_from_json(to_json(s));
    ASSERT_TRUE(bool(js)) << llvm::toString(js.takeError());
    EXPECT_EQ(*js, s);
  }
}

// `s` prints as `text` and comes back equal through the text form and through JSON.
void expect_round_trips(const OpSpec &s, const std::string &text) {
  EXPECT_EQ(to_string(s), text);
  auto back = parse_opspec(to_string(s));
  ASSERT_TRUE(bool(back)) << llvm::toString(back.takeError());
  EXPECT_EQ(*back, s);
  auto js = opspec_from_json(to_json(s));
  ASSERT_TRUE(bool(js)) << llvm::toString(js.takeError());
  EXPECT_EQ(*js, s);
}

TEST(Ir, SplitIsPartOfTheTextAndJson) {
  OpSpec s{OpKind::SpMM, {8, true}, {4, false}, 8, 256, true, OutType::Int32, 90};
  s.split = 2;
  s.stages = 3;
  expect_round_trips(s, "spmm.s8xu4.v8.n256k2.pf3.i32.sm_90");
  EXPECT_NE(error_of(parse_opspec("spmm.s8xs8.v8.n64k3.pf.i32.sm_90")).find("split"), std::string::npos);
  EXPECT_NE(error_of(parse_opspec("spmm.s8xs8.v8.n64kx.pf.i32.sm_90")).find("n256k2"), std::string::npos);
  s.op = OpKind::SDDMM;
  s.stages = 0;
  EXPECT_NE(llvm::toString(validate(s)).find("SDDMM"), std::string::npos);
}

TEST(Ir, ResidentIsPartOfTheTextAndJson) {
  OpSpec s{OpKind::SpMM, {8, true}, {8, true}, 4, 16, true, OutType::Int32, 90};
  s.resident = true;
  expect_round_trips(s, "spmm.s8xs8.v4.n16r.pf.i32.sm_90");
  EXPECT_NE(stable_hash(s), stable_hash(OpSpec{OpKind::SpMM, {8, true}, {8, true}, 4, 16, true, OutType::Int32, 90}));
  // BSn 16 only with resident B; resident B only for SpMM, split 1, prefetch on, BSn <= 128.
  EXPECT_NE(error_of(parse_opspec("spmm.s8xs8.v8.n16.pf.i32.sm_90")).find("resident"), std::string::npos);
  // BSn 48 and 96 (three mma tiles of 8-bit / 4-bit B per stride) likewise.
  for (const char *w : {"48", "96"}) {
    OpSpec r = s;
    r.bsn = std::atoi(w);
    expect_round_trips(r, std::string("spmm.s8xs8.v4.n") + w + "r.pf.i32.sm_90");
    EXPECT_NE(error_of(parse_opspec(std::string("spmm.s8xs8.v8.n") + w + ".pf.i32.sm_90")).find("resident"),
              std::string::npos);
  }
  EXPECT_NE(error_of(parse_opspec("spmm.s8xs8.v8.n256r.pf.i32.sm_90")).find("too wide"), std::string::npos);
  EXPECT_NE(error_of(parse_opspec("spmm.s8xs8.v8.n64r.nopf.i32.sm_90")).find("prefetches"), std::string::npos);
  EXPECT_NE(error_of(parse_opspec("sddmm.s8xs8.v8.n64r.pf.i32.sm_90")).find("only SpMM"), std::string::npos);
  OpSpec k2 = s;
  k2.split = 2;
  EXPECT_NE(llvm::toString(validate(k2)).find("split"), std::string::npos);
}

// The decode kernel (N <= 64): n<BSn>d, BSn 16..64 in 16-column tiles; decode implies resident B.
TEST(Ir, ColumnMajorCIsPartOfTheTextJsonAndKernelName) {
  OpSpec s{OpKind::SpMM, {8, true}, {8, true}, 8, 16, true, OutType::Int32, 90};
  s.resident = s.decode = true;
  s.c_col = true;
  expect_round_trips(s, "spmm.s8xs8.v8.n16d.pf.i32+ccol.sm_90");
  OpSpec r = s;
  r.c_col = false;
  EXPECT_NE(stable_hash(s), stable_hash(r)) << "the C order is part of the spec's hash (and so of cache keys)";
  s.out = OutType::F16;
  s.scale = Scale::RowCol;
  s.bias = Bias::Col;
  s.decode = s.resident = false;
  s.bsn = 64;
  expect_round_trips(s, "spmm.s8xs8.v8.n64.pf.f16+rc+colbias+ccol.sm_90");
  auto any_order = parse_opspec("spmm.s8xs8.v8.n64.pf.f16+ccol+colbias+rc.sm_90");
  ASSERT_TRUE(bool(any_order)) << llvm::toString(any_order.takeError());
  EXPECT_EQ(*any_order, s);
  auto sd = parse_opspec("sddmm.s8xs8.v8.n64.pf.i32+ccol.sm_90");
  ASSERT_FALSE(bool(sd));
  EXPECT_EQ(llvm::toString(sd.takeError()),
            "out: +ccol (a column-major C) is an SpMM option; SDDMM writes the mask's vectors (allowed: none)");
}

TEST(Ir, DecodeIsPartOfTheTextAndJson) {
  for (int bsn : {16, 32, 48, 64}) {
    OpSpec s{OpKind::SpMM, {8, true}, {8, true}, 8, bsn, true, OutType::Int32, 90};
    s.resident = s.decode = true;
    expect_round_trips(s, "spmm.s8xs8.v8.n" + std::to_string(bsn) + "d.pf.i32.sm_90");
    OpSpec r = s;
    r.decode = false;
    EXPECT_NE(stable_hash(s), stable_hash(r)) << "decode and resident differ";
    EXPECT_EQ(to_string(r), "spmm.s8xs8.v8.n" + std::to_string(bsn) + "r.pf.i32.sm_90");
  }
  auto parsed = parse_opspec("spmm.s4xs4.v4.n32d.pf2.f16+rc.sm_80");
  ASSERT_TRUE(bool(parsed)) << llvm::toString(parsed.takeError());
  EXPECT_TRUE(parsed->decode);
  EXPECT_TRUE(parsed->resident) << "decode keeps B resident";
  EXPECT_EQ(parsed->stages, 2);
  auto has = [](const std::string &msg, std::initializer_list<const char *> parts) {
    for (const char *p : parts)
      if (msg.find(p) == std::string::npos) return ::testing::AssertionFailure() << "'" << p << "' not in: " << msg;
    return ::testing::AssertionSuccess();
  };
  EXPECT_TRUE(has(error_of(parse_opspec("spmm.s8xs8.v8.n128d.pf.i32.sm_90")), {"decode", "BSn=128", "16, 32, 48, 64"}));
  EXPECT_TRUE(has(error_of(parse_opspec("spmm.s8xs8.v8.n96d.pf.i32.sm_90")), {"decode", "BSn=96"}));
  EXPECT_TRUE(has(error_of(parse_opspec("spmm.s8xs8.v8.n16d.nopf.i32.sm_90")), {"decode", "prefetches"}));
  EXPECT_TRUE(has(error_of(parse_opspec("sddmm.s8xs8.v8.n64d.pf.i32.sm_90")), {"decode", "only SpMM"}));
  EXPECT_TRUE(has(error_of(parse_opspec("spmm.s8xs8.v8.n64k2d.pf.i32.sm_90")), {"split"}));
  // K panels: n<BSn>dp<rows>, round trip; decode only, 64-row multiples, integer outputs.
  auto pn = parse_opspec("spmm.s8xs8.v8.n48dp4800.pf.i64.sm_90");
  ASSERT_TRUE(bool(pn)) << llvm::toString(pn.takeError());
  EXPECT_EQ(pn->panel, 4800);
  EXPECT_TRUE(pn->decode && pn->bsn == 48);
  EXPECT_EQ(to_string(*pn), "spmm.s8xs8.v8.n48dp4800.pf.i64.sm_90");
  auto pj = opspec_from_json(to_json(*pn));
  ASSERT_TRUE(bool(pj));
  EXPECT_EQ(*pj, *pn);
  EXPECT_TRUE(has(error_of(parse_opspec("spmm.s8xs8.v8.n48dp100.pf.i32.sm_90")), {"panel", "100", "multiple of 64"}));
  EXPECT_TRUE(has(error_of(parse_opspec("spmm.s8xs8.v8.n48dp4800.pf.f16.sm_90")), {"panel", "integer output", "f16"}));
  EXPECT_TRUE(has(error_of(parse_opspec("spmm.s8xs8.v8.n48dpx.pf.i32.sm_90")), {"panel", "n<BSn>dp<rows>"}));
  // Warps a block: n<BSn>dw<warps>[p<rows>], round trip; decode only, 8/16/20/24/32.
  for (const char *text : {"spmm.s8xs8.v8.n16dw32.pf.i32.sm_90", "spmm.s8xs8.v8.n48dw20p4800.pf.i64.sm_90",
                           "spmm.s4xs8.v8.n32dw24.pf.bf16+rc+ccol.sm_80"}) {
    auto w = parse_opspec(text);
    ASSERT_TRUE(bool(w)) << llvm::toString(w.takeError());
    EXPECT_TRUE(w->decode && w->resident) << text;
    EXPECT_EQ(to_string(*w), text);
    auto wj = opspec_from_json(to_json(*w));
    ASSERT_TRUE(bool(wj));
    EXPECT_EQ(*wj, *w);
  }
  EXPECT_EQ(llvm::cantFail(parse_opspec("spmm.s8xs8.v8.n48dw20p4800.pf.i64.sm_90")).warps, 20);
  EXPECT_EQ(llvm::cantFail(parse_opspec("spmm.s8xs8.v8.n48dw20p4800.pf.i64.sm_90")).panel, 4800);
  EXPECT_NE(stable_hash(llvm::cantFail(parse_opspec("spmm.s8xs8.v8.n16dw32.pf.i32.sm_90"))),
            stable_hash(llvm::cantFail(parse_opspec("spmm.s8xs8.v8.n16d.pf.i32.sm_90"))));
  EXPECT_TRUE(has(error_of(parse_opspec("spmm.s8xs8.v8.n16dw12.pf.i32.sm_90")), {"warps", "12", "8, 16, 20, 24, 32"}));
  EXPECT_TRUE(has(error_of(parse_opspec("spmm.s8xs8.v8.n16dwx.pf.i32.sm_90")), {"warps", "n<BSn>dw<warps>"}));
  // Shares of all slices: n<BSn>d[w<warps>]s, round trip; decode without K panels only.
  for (const char *text : {"spmm.s8xs8.v8.n48dw20s.pf.i32.sm_90", "spmm.s8xs8.v8.n16ds.pf.i64+ccol.sm_90"}) {
    auto w = parse_opspec(text);
    ASSERT_TRUE(bool(w)) << llvm::toString(w.takeError());
    EXPECT_TRUE(w->decode && w->shares) << text;
    EXPECT_EQ(to_string(*w), text);
    auto wj = opspec_from_json(to_json(*w));
    ASSERT_TRUE(bool(wj));
    EXPECT_EQ(*wj, *w);
  }
  EXPECT_EQ(llvm::cantFail(parse_opspec("spmm.s8xs8.v8.n48dw20s.pf.i32.sm_90")).warps, 20);
  EXPECT_FALSE(llvm::cantFail(parse_opspec("spmm.s8xs8.v8.n48dw20.pf.i32.sm_90")).shares);
  EXPECT_NE(stable_hash(llvm::cantFail(parse_opspec("spmm.s8xs8.v8.n48dw20s.pf.i32.sm_90"))),
            stable_hash(llvm::cantFail(parse_opspec("spmm.s8xs8.v8.n48dw20.pf.i32.sm_90"))));
  EXPECT_TRUE(has(error_of(parse_opspec("spmm.s8xs8.v8.n48dp4800s.pf.i32.sm_90")), {"panel"}));
  EXPECT_FALSE(bool(parse_opspec("spmm.s8xs8.v8.n48s.pf.i32.sm_90")));
  {
    OpSpec sp = llvm::cantFail(parse_opspec("spmm.s8xs8.v8.n48dp4800.pf.i32.sm_90"));
    sp.shares = true;
    EXPECT_TRUE(has(llvm::toString(validate(sp)), {"shares", "without K panels"}));
    sp.panel = 0, sp.decode = false;
    EXPECT_TRUE(has(llvm::toString(validate(sp)), {"shares", "only a decode kernel"}));
  }
  OpSpec nw{OpKind::SpMM, {8, true}, {8, true}, 8, 48, true, OutType::Int32, 90};
  nw.resident = true;
  nw.warps = 20;
  EXPECT_TRUE(has(llvm::toString(validate(nw)), {"warps", "only a decode kernel"}));
  OpSpec np{OpKind::SpMM, {8, true}, {8, true}, 8, 48, true, OutType::Int32, 90};
  np.resident = true;
  np.panel = 64;
  EXPECT_TRUE(has(llvm::toString(validate(np)), {"panel", "only a decode kernel"}));
  OpSpec d{OpKind::SpMM, {8, true}, {8, true}, 8, 16, true, OutType::Int32, 90};
  d.decode = true;
  EXPECT_TRUE(has(llvm::toString(validate(d)), {"decode", "implies resident", "n16d"}));
  d.resident = true;
  d.split = 2;
  EXPECT_TRUE(has(llvm::toString(validate(d)), {"decode", "split must be 1"}));
  // JSON without the field (older records and caches) reads as no decode.
  llvm::json::Value js = to_json(OpSpec{});
  js.getAsObject()->erase("decode");
  auto old = opspec_from_json(js);
  ASSERT_TRUE(bool(old));
  EXPECT_FALSE(old->decode);
}

TEST(Ir, ErrorsNameTheFieldTheValueAndWhatIsAllowed) {
  auto has = [](const std::string &msg, std::initializer_list<const char *> parts) {
    for (const char *p : parts)
      if (msg.find(p) == std::string::npos) return ::testing::AssertionFailure() << "'" << p << "' not in: " << msg;
    return ::testing::AssertionSuccess();
  };
  EXPECT_TRUE(has(error_of(parse_opspec("spmm.s0xs8.v8.n64.pf.i32.sm_90")), {"lhs", "0 bits", "1..16"}));
  EXPECT_TRUE(has(error_of(parse_opspec("spmm.s8xu17.v8.n64.pf.i32.sm_90")), {"rhs", "17 bits", "1..16"}));
  EXPECT_TRUE(has(error_of(parse_opspec("spmm.s8xs8.v3.n64.pf.i32.sm_90")), {"v", "V=3", "1, 2, 4, 8"}));
  EXPECT_TRUE(has(error_of(parse_opspec("gemm.s8xs8.v8.n64.pf.i32.sm_90")), {"op", "gemm", "spmm, sddmm"}));
  EXPECT_TRUE(has(error_of(parse_opspec("spmm.s8xs8.v8.n64.pf.i32.sm_75")), {"arch", "sm_75", "sm_80"}));
  EXPECT_TRUE(has(error_of(parse_opspec("spmm.s8xs8.v8.n40.pf.i32.sm_90")), {"bsn", "40", "32, 64, 128, 256"}));
  EXPECT_TRUE(has(error_of(parse_opspec("spmm.s8xs8.v8.n48.pf.i32.sm_90")), {"bsn", "48", "resident", "n48r"}));
  EXPECT_TRUE(has(error_of(parse_opspec("spmm.s8xs8.v8.n64.pf.i8.sm_90")), {"out", "i8", "int32"}));
  EXPECT_TRUE(has(error_of(parse_opspec("spmm.x8xs8.v8.n64.pf.i32.sm_90")), {"lhs", "x8"}));
  EXPECT_TRUE(has(error_of(parse_opspec("spmm.s8xs8")), {"7 dot-separated fields"}));
  EXPECT_TRUE(has(error_of(parse_opspec("spmm.s8xs8.v8.n64.maybe.i32.sm_90")), {"prefetch", "maybe"}));
  EXPECT_TRUE(has(error_of(parse_opspec("spmm.s8xs8.v8.n64.pf5.i32.sm_90")), {"prefetch", "pf5", "pf2, pf3, pf4"}));
  OpSpec deep{OpKind::SpMM, {8, true}, {8, true}, 8, 64, false, OutType::Int32, 90};
  deep.stages = 3;
  EXPECT_TRUE(has(llvm::toString(validate(deep)), {"stages", "3", "prefetch"}));
  deep.prefetch = true, deep.stages = 5;
  EXPECT_TRUE(has(llvm::toString(validate(deep)), {"stages", "5", "2, 3, 4"}));
  deep.op = OpKind::SDDMM, deep.stages = 2;
  EXPECT_TRUE(has(llvm::toString(validate(deep)), {"stages", "SDDMM"}));
  OpSpec bad;
  bad.v = 16;
  auto e = validate(bad);
  ASSERT_TRUE(bool(e));
  EXPECT_TRUE(has(llvm::toString(std::move(e)), {"V=16"}));
  EXPECT_TRUE(has(error_of(opspec_from_json(llvm::json::Object{{"op", "spmm"}})), {"lhs"}));
}

TEST(Ir, HashIsStableAndDistinguishesSpecs) {
  OpSpec a{OpKind::SpMM, {8, true}, {8, true}, 8, 64, true, OutType::Int32, 90};
  OpSpec b = a;
  EXPECT_EQ(stable_hash(a), stable_hash(b));
  // xxHash64 of "spmm.s8xs8.v8.n64.pf.i32.sm_90": the same in every process and build.
  EXPECT_EQ(stable_hash(a), 0xa22f7ab0bdb2d671ull);
  for (auto change : std::initializer_list<void (*)(OpSpec &)>{
           [](OpSpec &s) { s.op = OpKind::SDDMM; }, [](OpSpec &s) { s.lhs.bits = 7; },
           [](OpSpec &s) { s.rhs.is_signed = false; }, [](OpSpec &s) { s.v = 4; }, [](OpSpec &s) { s.bsn = 128; },
           [](OpSpec &s) { s.prefetch = false; }, [](OpSpec &s) { s.out = OutType::F16; },
           [](OpSpec &s) { s.arch = 80; }}) {
    OpSpec c = a;
    change(c);
    EXPECT_NE(stable_hash(c), stable_hash(a)) << to_string(c);
  }
}

}  // namespace

// The text form may leave the tile and the prefetch to the dispatch: what it omits is not pinned.
TEST(Ir, SpecTextWithoutKnobsPinsNothing) {
  auto s = parse_opspec("spmm.s8xs8.v8.i32.sm_90");
  ASSERT_TRUE(bool(s)) << llvm::toString(s.takeError());
  EXPECT_EQ(s->pinned, 0);
  EXPECT_EQ(to_string(*s), "spmm.s8xs8.v8.i32.sm_90");
  auto t = parse_opspec("spmm.s8xs8.v8.n48r.f16+rc.sm_90");
  ASSERT_TRUE(bool(t)) << llvm::toString(t.takeError());
  EXPECT_EQ(t->pinned, kPinTile);
  EXPECT_TRUE(t->resident);
  EXPECT_EQ(to_string(*t), "spmm.s8xs8.v8.n48r.f16+rc.sm_90");
  auto u = parse_opspec("sddmm.s4xs4.v4.nopf.i32.sm_80");
  ASSERT_TRUE(bool(u)) << llvm::toString(u.takeError());
  EXPECT_EQ(u->pinned, kPinPrefetch);
  EXPECT_FALSE(u->prefetch);
  auto full = parse_opspec("spmm.s8xs8.v8.n64.pf.i32.sm_90");
  ASSERT_TRUE(bool(full));
  EXPECT_EQ(full->pinned, kPinAll);
  auto bad = parse_opspec("spmm.s8xs8.i32.sm_90");
  ASSERT_FALSE(bool(bad));
  EXPECT_NE(llvm::toString(bad.takeError()).find("5 to 7 dot-separated fields"), std::string::npos);
}
