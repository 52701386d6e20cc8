// Per-row int8 quantization (capi/quantize.h) on the CPU: the reference's rounding (ties to
// even), its clamp, the smallest scale, rows holding a NaN or an infinity; and the generated
// kernel sources for each input type compile with NVRTC (no GPU needed). The GPU test
// (tests/gpu/test_capi_gpu.cpp) compares the kernels with this reference bit for bit.
#include "capi/quantize.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "jit/nvrtc.h"

namespace {

namespace capi = magicube::capi;

uint32_t bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}

TEST(Quantize, CpuReferenceRoundsTiesToEvenAndClamps) {
  // Row 0: max |x| = 127, so the scale is 1 and q is x rounded, ties to even.
  // Row 1: the scale is 2; x / 2 in half steps. Row 2: zeros (the scale of 1e-12).
  // Row 3: max |x| tiny (below 1e-12): the scale stays 1e-12 / 127.
  const std::vector<float> x = {127, 2.5f, -2.5f, 3.5f, 1.5f, -0.5f, 0.5f, -127,   //
                                254, 5, -5, 7, 3, -1, 1, 0,                        //
                                0, -0.0f, 0, 0, 0, 0, 0, 0,                        //
                                1e-13f, -1e-13f, 0, 0, 0, 0, 0, 0};
  const int64_t rows = 4, cols = 8;
  std::vector<int8_t> q(size_t(rows * cols), 99);
  std::vector<float> s(size_t(rows), -1);
  capi::quantize_rows_cpu(x.data(), rows, cols, q.data(), s.data());
  EXPECT_EQ(s[0], 1.0f);
  EXPECT_EQ(s[1], 2.0f);
  EXPECT_EQ(bits(s[2]), bits(1e-12f / 127.0f));
  EXPECT_EQ(bits(s[3]), bits(1e-12f / 127.0f));
  const std::vector<int8_t> want = {127, 2, -2, 4, 2, 0, 0, -127,  //
                                    127, 2, -2, 4, 2, 0, 0, 0,     //
                                    0, 0, 0, 0, 0, 0, 0, 0,        //
                                    13, -13, 0, 0, 0, 0, 0, 0};  // 1e-13 / (1e-12 / 127) = 12.7
  EXPECT_EQ(q, want);
}

TEST(Quantize, CpuReferenceOnNaNAndInfinity) {
  const float nan = std::numeric_limits<float>::quiet_NaN(), inf = std::numeric_limits<float>::infinity();
  const std::vector<float> x = {1, nan, 3, -4,     // a NaN: the scale is NaN, every q 0
                                1, -inf, 3, -4,    // an infinity: the scale inf, q 0 (inf / inf is NaN)
                                -300, 2, 300, 1};  // |x / scale| at the clamp
  std::vector<int8_t> q(12, 99);
  std::vector<float> s(3);
  capi::quantize_rows_cpu(x.data(), 3, 4, q.data(), s.data());
  EXPECT_EQ(bits(s[0]), 0x7fffffffu);
  EXPECT_TRUE(std::isinf(s[1]));
  EXPECT_EQ(bits(s[2]), bits(300.0f / 127.0f));
  EXPECT_EQ(std::vector<int8_t>(q.begin(), q.begin() + 8), std::vector<int8_t>(8, 0));
  EXPECT_EQ(q[8], -127);
  EXPECT_EQ(q[10], 127);
  EXPECT_EQ(q[9], int8_t(std::nearbyint(2.0f / s[2])));
}

TEST(Quantize, GeneratedSourcesCompileWithNvrtc) {
  for (capi::FloatType t : {capi::FloatType::F32, capi::FloatType::F16, capi::FloatType::BF16})
    for (int arch : {80, 90}) {
      for (const std::string &src : {capi::quantize_rows_source(t, "magicube_quantize_test"),
                                     capi::quantize_rows_units_source(t, "magicube_quantize_test", false),
                                     capi::quantize_rows_units_source(t, "magicube_quantize_test", true)}) {
        auto cubin = magicube::nvrtc_compile(src, "quantize.cu", arch, magicube::Emit::CUBIN);
        EXPECT_TRUE(bool(cubin)) << (cubin ? "" : llvm::toString(cubin.takeError())) << "\n" << src;
      }
    }
}

}  // namespace
