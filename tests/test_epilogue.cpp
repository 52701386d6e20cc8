// The float epilogue's rounding (shared verbatim with the kernels) against known values and
// the compiler's own conversions; the IR's epilogue options.
#include <gtest/gtest.h>

#include <cfloat>
#include <cmath>
#include <cstring>
#include <random>

#include "compiler/planner.h"
#include "runtime/epilogue.h"

using namespace magicube;

namespace {

TEST(Epilogue, F16RoundingKnownValues) {
  EXPECT_EQ(f16_bits(1.0), 0x3c00);
  EXPECT_EQ(f16_bits(-2.0), 0xc000);
  EXPECT_EQ(f16_bits(65504.0), 0x7bff);
  EXPECT_EQ(f16_bits(65519.9), 0x7bff);
  EXPECT_EQ(f16_bits(65520.0), 0x7c00);  // ties to even: infinity
  EXPECT_EQ(f16_bits(1e9), 0x7c00);
  EXPECT_EQ(f16_bits(std::ldexp(1.0, -24)), 0x0001);
  EXPECT_EQ(f16_bits(std::ldexp(1.0, -25)), 0x0000);      // tie to even: 0
  EXPECT_EQ(f16_bits(3 * std::ldexp(1.0, -25)), 0x0002);  // tie to even: 2
  EXPECT_EQ(f16_bits(std::ldexp(1.0, -14)), 0x0400);      // smallest normal
  EXPECT_EQ(f16_bits(1.0 + std::ldexp(1.0, -11)), 0x3c00);  // tie to even
  EXPECT_EQ(f16_bits(1.0 + 3 * std::ldexp(1.0, -11)), 0x3c02);
  EXPECT_EQ(f16_bits(0.0), 0x0000);
}

TEST(Epilogue, RoundingMatchesTheCompilersConversions) {
  std::mt19937_64 rng(1);
  for (int i = 0; i < 200000; ++i) {
    double x = std::ldexp(double(int64_t(rng() % (1ull << 53)) - (1ll << 52)), int(rng() % 80) - 60);
    _Float16 h = (_Float16)x;  // libgcc's correctly rounded conversion
    uint16_t hb;
    std::memcpy(&hb, &h, 2);
    ASSERT_EQ(f16_bits(x), hb) << x;
    // bf16 of a float value: the classic round-to-nearest-even bit trick.
    float f = float(x);
    uint32_t u;
    std::memcpy(&u, &f, 4);
    uint16_t bb = uint16_t((u + 0x7fff + ((u >> 16) & 1)) >> 16);
    if (double(f) == x && std::isfinite(f)) {
      ASSERT_EQ(bf16_bits(x), bb) << x;
    }
    ASSERT_EQ(f16_value(f16_bits(x)), double(h));
  }
}

// The kernels' conversions (round to odd into a float, then to nearest even in integers) equal
// the documented rounding (mc_round_bits) everywhere: every f16 and bf16 value, the midpoints
// between neighbours and a double's step either side of them, the overflow and underflow
// edges, signed zeros, infinities, NaN, and random doubles over the whole exponent range.
TEST(Epilogue, KernelConversionsEqualTheDocumentedRounding) {
  std::vector<double> xs = {0.0, -0.0, INFINITY, -INFINITY, NAN, -NAN, DBL_MAX, -DBL_MAX, DBL_MIN, 5e-324,
                            -5e-324, FLT_MAX, -FLT_MAX, std::ldexp(1.0, -149), std::ldexp(1.0, -150),
                            std::ldexp(3.0, -151), 65504.0, 65519.999, 65520.0, -65520.0, 1e300, -1e-300};
  auto around = [&](double v) {
    for (double x : {v, std::nextafter(v, INFINITY), std::nextafter(v, -INFINITY)}) xs.push_back(x), xs.push_back(-x);
  };
  for (uint32_t h = 0; h < 0x7c00; ++h) {  // f16: every finite value and the midpoint above it
    const double v = f16_value(uint16_t(h)), next = f16_value(uint16_t(h + 1));
    around(v);
    around((v + next) / 2);  // exact in double
  }
  for (uint32_t h = 0; h < 0x7f80; ++h) {  // bf16 likewise
    const double v = bf16_value(uint16_t(h)), next = bf16_value(uint16_t(h + 1));
    around(v);
    around((v + next) / 2);
  }
  std::mt19937_64 rng(5);
  for (int i = 0; i < 2000000; ++i) {
    const double m = double(int64_t(rng() % (1ull << 53)) - (1ll << 52));
    xs.push_back(std::ldexp(m, int(rng() % 400) - 250));
  }
  for (uint32_t i = 0; i < 2000000; ++i) {  // random float bit patterns, as floats are common inputs
    const uint32_t u = uint32_t(rng());
    float f;
    std::memcpy(&f, &u, 4);
    xs.push_back(double(f));
  }
  int bad = 0;
  for (double x : xs) {
    if (kernel_f16_bits(x) != f16_bits(x) && ++bad < 10)
      ADD_FAILURE() << "f16 of " << x << ": 0x" << std::hex << kernel_f16_bits(x) << ", documented 0x" << f16_bits(x);
    if (kernel_bf16_bits(x) != bf16_bits(x) && ++bad < 10)
      ADD_FAILURE() << "bf16 of " << x << ": 0x" << std::hex << kernel_bf16_bits(x) << ", documented 0x" << bf16_bits(x);
  }
  EXPECT_EQ(bad, 0) << " of " << xs.size() << " doubles";
}

TEST(Epilogue, DequantizeAppliesScalesAndBias) {
  OpSpec s;
  s.out = OutType::F32;
  s.scale = Scale::RowCol;
  s.bias = Bias::Col;
  EpilogueArgs a;
  a.row_scale = {0.5f, 2.0f};
  a.col_scale = {3.0f, 0.25f, 1.0f};
  a.bias = {1.0f, -1.0f, 0.5f};
  EXPECT_DOUBLE_EQ(dequantize(s, 10, a, 1, 1), 10 * 2.0 * 0.25 - 1.0);
  s.scale = Scale::Tensor;
  s.bias = Bias::Row;
  a.alpha = 0.125f;
  a.bias = {4.0f, 8.0f};
  EXPECT_DOUBLE_EQ(dequantize(s, -16, a, 1, 2), -16 * 0.125 + 8.0);
}

// Signed zero follows IEEE (and PyTorch: 0 * -s = -0): an exact sum of 0 times a negative
// scale stores -0 in every float format; a bias of +0 added to it gives +0.
TEST(Epilogue, ZeroTimesANegativeScaleIsNegativeZero) {
  EXPECT_EQ(f16_bits(-0.0), 0x8000);
  EXPECT_EQ(bf16_bits(-0.0), 0x8000);
  EXPECT_EQ(f32_bits(-0.0), 0x80000000u);
  EXPECT_EQ(f16_bits(0.0), 0x0000);
  EXPECT_EQ(bf16_bits(0.0), 0x0000);
  EXPECT_EQ(f16_bits(-std::ldexp(1.0, -30)), 0x8000);  // a negative value rounding to zero
  for (OutType out : {OutType::F32, OutType::F16, OutType::BF16}) {
    SCOPED_TRACE(out_name(out));
    OpSpec s;
    s.out = out;
    s.scale = Scale::Tensor;
    EpilogueArgs a;
    a.alpha = -0.5f;
    const double x = dequantize(s, 0, a, 0, 0);
    EXPECT_TRUE(x == 0 && std::signbit(x));
    const double torch_like = double(0.0f * -0.5f);  // what a framework computes
    EXPECT_EQ(std::signbit(x), std::signbit(torch_like));
    const int64_t neg_zero = out == OutType::F32 ? 0x80000000ll : 0x8000;
    auto bits = [&](double v) -> int64_t {
      return out == OutType::F32 ? int64_t(f32_bits(v)) : out == OutType::F16 ? f16_bits(v) : bf16_bits(v);
    };
    EXPECT_EQ(bits(x), neg_zero);
    s.scale = Scale::RowCol;
    a.row_scale = {2.0f, -2.0f};
    a.col_scale = {1.0f};
    EXPECT_EQ(bits(dequantize(s, 0, a, 1, 0)), neg_zero);  // negative row scale
    EXPECT_EQ(bits(dequantize(s, 0, a, 0, 0)), 0);         // positive scales: +0
    s.bias = Bias::Row;
    a.bias = {0.0f, 0.0f};
    EXPECT_EQ(bits(dequantize(s, 0, a, 1, 0)), 0);  // -0 + 0 = +0 (IEEE round to nearest)
  }
}

TEST(Epilogue, IrCarriesTheOptions) {
  auto s = parse_opspec("spmm.s8xs8.v8.n64.pf.f16+rc+colbias.sm_90");
  ASSERT_TRUE(bool(s)) << llvm::toString(s.takeError());
  EXPECT_EQ(s->scale, Scale::RowCol);
  EXPECT_EQ(s->bias, Bias::Col);
  EXPECT_EQ(to_string(*s), "spmm.s8xs8.v8.n64.pf.f16+rc+colbias.sm_90");
  auto j = opspec_from_json(to_json(*s));
  ASSERT_TRUE(bool(j));
  EXPECT_EQ(*j, *s);
  auto bad = parse_opspec("spmm.s8xs8.v8.n64.pf.i32+rc.sm_90");
  ASSERT_FALSE(bool(bad));
  EXPECT_NE(llvm::toString(bad.takeError()).find("needs a float output"), std::string::npos);
  auto sd = parse_opspec("sddmm.s8xs8.v8.n64.pf.f16+t+rowbias.sm_90");
  ASSERT_FALSE(bool(sd));
  EXPECT_NE(llvm::toString(sd.takeError()).find("SDDMM takes no bias"), std::string::npos);
  auto p = plan(*s);
  ASSERT_TRUE(bool(p));
  EXPECT_NE(p->str().find("row_scale[r] * col_scale[c] + bias[c]"), std::string::npos) << p->str();
  EXPECT_NE(p->kernel_name().find("_f16"), std::string::npos);
}

}  // namespace
