//@ Shared verbatim with the CPU (runtime/epilogue.cpp includes this file); codegen emits
//@ only the snippets a kernel calls ("//@snippet NAME [needs NAME...]", compiler/snippets.h).
//@ MC_FN declares a function, MC_F32_BITS(f) is a float's bit pattern (unsigned): each side
//@ defines both (compiler/snippets.cpp for the kernels, runtime/epilogue.cpp for the CPU).
// ---------------------------------------------------------------------------------------
// Float epilogue math (templates/epilogue_math.cuh), shared verbatim by generated kernels
// (MC_FN = __device__ __forceinline__) and the CPU reference (MC_FN = inline), so both
// compute the same double value and round it the same way:
//   x = exact int64 result; x *= alpha (per tensor) or x = x * row_scale[r] * col_scale[c];
//   x += bias; then round to nearest even into f32, f16 or bf16.
// Each step is one IEEE double operation (no fused multiply-add), identical on both sides.
// Signed zero follows IEEE: an exact sum of 0 times a negative scale is -0 (f32, f16 and
// bf16 alike); adding a bias of +0 then gives +0, as x + 0 does in any framework.
// ---------------------------------------------------------------------------------------

//@snippet mc_round_bits needs MC_FN
// Round-to-nearest-even of a double into a binary format with `mb` mantissa bits and
// exponents emin..emax (bias = emax); returns the bit pattern (sign at bit 1+ew+mb).
// The sign is the IEEE sign bit, -0 included (1 / -0 = -inf): a zero sum times a negative
// scale stores -0, as IEEE arithmetic and PyTorch (0 * -s) give.
MC_FN unsigned mc_round_bits(double x, int mb, int ew, int emin, int emax) {
  const unsigned sign = (x < 0 || (x == 0 && 1.0 / x < 0)) ? 1u : 0u;
  double a = x < 0 ? -x : x;
  const unsigned inf = ((1u << ew) - 1u) << mb;
  if (a != a) return (sign << (ew + mb)) | inf | (1u << (mb - 1));  // NaN
  if (a > 1.7976931348623157e308) return (sign << (ew + mb)) | inf;  // infinity (a scale or bias of inf)
  int e = 0;
  if (a != 0) frexp(a, &e);  // a = m * 2^e, m in [0.5, 1)
  int E = a == 0 ? emin : e - 1;
  if (E < emin) E = emin;
  double n = rint(ldexp(a, mb - E));  // a / 2^(E - mb), exact; ties to even
  if (n >= ldexp(1.0, mb + 1)) {      // rounded up to the next binade
    n = ldexp(n, -1);
    E += 1;
  }
  if (E > emax) return (sign << (ew + mb)) | inf;  // overflow rounds to infinity
  unsigned ebits = 0, mant = (unsigned)n;
  if (n >= ldexp(1.0, mb)) {
    ebits = (unsigned)(E + emax);
    mant = (unsigned)n - (1u << mb);
  }
  return (sign << (ew + mb)) | (ebits << mb) | mant;
}

//@snippet mc_odd_f32 needs MC_FN
// The kernels' conversions: mc_round_bits' results (tests/test_epilogue.cpp checks the CPU's
// branch against it, tests/gpu/test_epilogue_gpu.cpp the device's at the formats' edges), with
// one double-to-float conversion instead of frexp and ldexp in double. On the device (the
// __CUDA_ARCH__ branches) the float is rounded by the hardware's cvt instructions: the same bits
// in a fifth of the code, which every ring slot's epilogue carries (bench/NOTES.md, Session 23).
// x (not NaN) as a float's bit pattern rounded to odd: toward zero, with the last mantissa bit
// set where that was inexact. Rounding this float to nearest even into a format with at least
// two fewer mantissa bits and no wider exponent range gives x's own nearest-even rounding
// (round-to-odd, Boldo and Melquiond 2008): f16 and bf16 both are such formats.
MC_FN unsigned mc_odd_f32(double x) {
#ifdef __CUDA_ARCH__
  // One cvt toward zero (past the float range: the largest float), then the inexact bit.
  const float f = __double2float_rz(x);
  const unsigned b = MC_F32_BITS(f);
  return (double)f != x ? b | 1u : b;
#else
  const float f = (float)x;  // to nearest (past the float range: infinity)
  unsigned b = MC_F32_BITS(f);
  const double ax = x < 0 ? -x : x, af = f < 0 ? -(double)f : (double)f;
  if (af > ax) b -= 1u;   // rounded away from zero: the float next toward it
  if (af != ax) b |= 1u;  // inexact: odd
  return b;
#endif
}

//@snippet mc_to_f16 needs mc_odd_f32
MC_FN unsigned short mc_to_f16(double x) {
#ifdef __CUDA_ARCH__
  // The hardware's nearest-even conversion of the odd float (subnormal f16 and overflow to
  // infinity included): the branches below in one instruction, and no branch for NaN.
  unsigned short h;
  asm("cvt.rn.f16.f32 %0, %1;" : "=h"(h) : "f"(__uint_as_float(mc_odd_f32(x))));
  return x != x ? (unsigned short)0x7e00u : h;
#endif
  if (x != x) return 0x7e00u;  // NaN, as mc_round_bits writes it
  const unsigned b = mc_odd_f32(x), sign = (b >> 16) & 0x8000u, a = b & 0x7fffffffu;
  if (a >= 0x477ff000u) return (unsigned short)(sign | 0x7c00u);  // >= 65520: rounds to infinity
  if (a >= 0x38800000u)                                              // >= 2^-14: a normal f16
    return (unsigned short)(sign | (((a + 0xfffu + ((a >> 13) & 1u)) >> 13) - (112u << 10)));
  const unsigned e = a >> 23;                  // below: a subnormal f16, in units of 2^-24
  if (e < 102u) return (unsigned short)sign;  // < 2^-25: rounds to zero
  const unsigned m = (a & 0x7fffffu) | 0x800000u, shift = 126u - e;  // |x| = m >> shift units
  const unsigned q = m >> shift, rem = m & ((1u << shift) - 1u), half = 1u << (shift - 1u);
  return (unsigned short)(sign | (q + ((rem > half || (rem == half && (q & 1u))) ? 1u : 0u)));
}

//@snippet mc_to_bf16 needs mc_odd_f32
MC_FN unsigned short mc_to_bf16(double x) {
#ifdef __CUDA_ARCH__
  unsigned short h;  // the hardware's nearest-even conversion of the odd float (sm_80 on)
  asm("cvt.rn.bf16.f32 %0, %1;" : "=h"(h) : "f"(__uint_as_float(mc_odd_f32(x))));
  return x != x ? (unsigned short)0x7fc0u : h;
#endif
  if (x != x) return 0x7fc0u;  // NaN, as mc_round_bits writes it
  const unsigned b = mc_odd_f32(x);
  return (unsigned short)((b + 0x7fffu + ((b >> 16) & 1u)) >> 16);  // nearest even at bit 16
}

//@snippet mc_dequant_v needs MC_FN
// The dequantized value of one output element from its operands' values: the scales of its
// row and column (used with scale_mode 2) and its bias (used with bias_mode 1 or 2), each a
// float widened to double (exactly; kernels widen them once per row or column).
MC_FN double mc_dequant_v(long long acc, int scale_mode, float alpha, double row_scale, double col_scale, int bias_mode,
                          double bias) {
  double x = (double)acc;
  if (scale_mode == 1) x = x * (double)alpha;
  if (scale_mode == 2) {
    x = x * row_scale;
    x = x * col_scale;
  }
  if (bias_mode != 0) x = x + bias;
  return x;
}
//@snippet mc_dequant needs mc_dequant_v
// The same from the scale and bias arrays (pointers may be null when the op does not use them).
MC_FN double mc_dequant(long long acc, int scale_mode, float alpha, const float *row_scale, const float *col_scale,
                        int bias_mode, const float *bias, long long row, long long col) {
  return mc_dequant_v(acc, scale_mode, alpha, scale_mode == 2 ? (double)row_scale[row] : 0.0,
                      scale_mode == 2 ? (double)col_scale[col] : 0.0, bias_mode,
                      bias_mode == 1 ? (double)bias[row] : bias_mode == 2 ? (double)bias[col] : 0.0);
}
