// Magicube dense-route epilogue: the dense GEMMs' int32 results of u8 x s8 in int8 chunks
// (u8@0-128 x s8@0: 1 GEMM), planes `plane` ints apart, summed in 64 bits with
// their offsets' terms, each stored N x M (C^T) row-major,
// becomes the f16 output in the same layout:
//   x = acc * alpha in double, then rounded to nearest even
// (templates/epilogue_math.cuh, compiled without FMA contraction).
// Stored element (p, q) is C's (q, p).

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
#define MC_FN __device__ __forceinline__
#define MC_F32_BITS(f) __float_as_uint(f)
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
// The same from the scale and bias arrays (pointers may be null when the op does not use them).
MC_FN double mc_dequant(long long acc, int scale_mode, float alpha, const float *row_scale, const float *col_scale,
                        int bias_mode, const float *bias, long long row, long long col) {
  return mc_dequant_v(acc, scale_mode, alpha, scale_mode == 2 ? (double)row_scale[row] : 0.0,
                      scale_mode == 2 ? (double)col_scale[col] : 0.0, bias_mode,
                      bias_mode == 1 ? (double)bias[row] : bias_mode == 2 ? (double)bias[col] : 0.0);
}

// C's exact sum from its 1 chunk pair(s)' int32 results s0..: pair t counts 2^shift(t) times,
// with its offsets' terms (compiler/dense_chunks.h): B's offset times A's row sums ra, A's offset
// times B's column sums cb, both offsets times K.
__device__ __forceinline__ long long mc_sum(int s0, long long row, long long col, long long m, long long n, long long k,
    const int *__restrict__ ra, const int *__restrict__ cb) {
  return (long long)s0
       + 128LL * cb[col];
}

// The output element of C's (row, col) from its exact sum.
__device__ __forceinline__ unsigned short mc_out(long long acc, long long row, long long col, float alpha,
    const float *__restrict__ row_scale, const float *__restrict__ col_scale, const float *__restrict__ bias) {
  const double x = mc_dequant(acc, 1, alpha, row_scale, col_scale, 0, bias, row, col);
  return mc_to_f16(x);
}

extern "C" __global__ void __launch_bounds__(256)
magicube_dense_epilogue_f16_tensor_u8xs8_ct(const int *__restrict__ acc_in, unsigned short *__restrict__ out,
    long long rows, long long cols, long long plane, long long k, const int *__restrict__ ra,
    const int *__restrict__ cb, float alpha,
    const float *__restrict__ row_scale, const float *__restrict__ col_scale, const float *__restrict__ bias) {
  // four stored columns per thread, rows strided over the grid's y; one 16-byte load of each
  // plane's sums and one store of the outputs where every row holds whole fours and C's address allows
  const long long q = ((long long)blockIdx.x * 256 + threadIdx.x) * 4;
  if (q >= cols) return;
  const long long m = cols, n = rows;  // C's M x N
  const bool whole = (cols & 3) == 0 && ((unsigned long long)out & 7) == 0;
  for (long long p = blockIdx.y; p < rows; p += gridDim.y) {
    const long long i = p * cols + q;
    if (whole) {
      const int4 a0 = *(const int4 *)(acc_in + i);
      const int v0[4] = {a0.x, a0.y, a0.z, a0.w};
      unsigned short o[4];
#pragma unroll
      for (int j = 0; j < 4; ++j) {
        const long long acc = mc_sum(v0[j], q + j, p, m, n, k, ra, cb);
        o[j] = mc_out(acc, q + j, p, alpha, row_scale, col_scale, bias);
      }
      *(uint2 *)(out + i) = make_uint2(o[0] | ((unsigned)o[1] << 16), o[2] | ((unsigned)o[3] << 16));
    } else {
      for (int j = 0; j < 4 && q + j < cols; ++j) {
        const long long acc = mc_sum(acc_in[i + j], q + j, p, m, n, k, ra, cb);
        out[i + j] = mc_out(acc, q + j, p, alpha, row_scale, col_scale, bias);
      }
    }
  }
}
