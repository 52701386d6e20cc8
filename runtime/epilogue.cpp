#include "runtime/epilogue.h"

#include <cmath>
#include <cstring>

namespace magicube {
namespace {
using std::frexp;
using std::ldexp;
using std::rint;
inline unsigned f32_pattern(float f) {
  unsigned u;
  std::memcpy(&u, &f, 4);
  return u;
}
#define MC_FN inline
#define MC_F32_BITS(f) f32_pattern(f)
#include "templates/epilogue_math.cuh"
#undef MC_F32_BITS
#undef MC_FN
}  // namespace

double dequantize(const OpSpec &spec, int64_t acc, const EpilogueArgs &a, int64_t row, int64_t col) {
  return mc_dequant(acc, int(spec.scale), a.alpha, a.row_scale.data(), a.col_scale.data(), int(spec.bias),
                    a.bias.data(), row, col);
}

uint32_t f32_bits(double x) {
  float f = float(x);  // round to nearest even
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}
// The documented rounding itself (mc_round_bits), against which the kernels' conversions
// (mc_to_f16, mc_to_bf16) are tested here and on the GPU.
uint16_t f16_bits(double x) { return uint16_t(mc_round_bits(x, 10, 5, -14, 15)); }
uint16_t bf16_bits(double x) { return uint16_t(mc_round_bits(x, 7, 8, -126, 127)); }
uint16_t kernel_f16_bits(double x) { return mc_to_f16(x); }
uint16_t kernel_bf16_bits(double x) { return mc_to_bf16(x); }

double f16_value(uint16_t h) {
  int e = (h >> 10) & 31, m = h & 1023;
  double v = e == 0 ? std::ldexp(m, -24) : e == 31 ? (m ? NAN : INFINITY) : std::ldexp(1024 + m, e - 25);
  return (h & 0x8000) ? -v : v;
}
double bf16_value(uint16_t h) {
  uint32_t u = uint32_t(h) << 16;
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

double stored_value(OutType out, int64_t element) {
  switch (out) {
    case OutType::Int32:
    case OutType::Int64: return double(element);
    case OutType::F16: return f16_value(uint16_t(element));
    case OutType::BF16: return bf16_value(uint16_t(element));
    case OutType::F32: {
      uint32_t u = uint32_t(element);
      float f;
      std::memcpy(&f, &u, 4);
      return f;
    }
  }
  return 0;
}

}  // namespace magicube
