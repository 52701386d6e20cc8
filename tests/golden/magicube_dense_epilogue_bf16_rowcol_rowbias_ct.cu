// Magicube dense-route epilogue: the dense GEMM's exact int32 result, stored N x M (C^T) row-major,
// becomes the bf16 output in the same layout:
//   x = acc * row_scale[row] * col_scale[col] + bias[row] in double, then rounded to nearest even
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
// Round-to-nearest-even of a double into a binary format with `mb` mantissa bits and
// exponents emin..emax (bias = emax); returns the bit pattern (sign at bit 1+ew+mb).
// The sign is the IEEE sign bit, -0 included (1 / -0 = -inf): a zero sum times a negative
// scale stores -0, as IEEE arithmetic and PyTorch (0 * -s) give.
MC_FN unsigned mc_round_bits(double x, int mb, int ew, int emin, int emax) {
  const unsigned sign = (x < 0 || (x == 0 && 1.0 / x < 0)) ? 1u : 0u;
  double a = x < 0 ? -x : x;
  const unsigned inf = ((1u << ew) - 1u) << mb;
  if (a != a) return (sign << (ew + mb)) | inf | (1u << (mb - 1));  // NaN
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
MC_FN unsigned short mc_to_bf16(double x) { return (unsigned short)mc_round_bits(x, 7, 8, -126, 127); }

// The dequantized value of one output element (scale/bias pointers may be null when the
// op does not use them).
MC_FN double mc_dequant(long long acc, int scale_mode, float alpha, const float *row_scale, const float *col_scale,
                        int bias_mode, const float *bias, long long row, long long col) {
  double x = (double)acc;
  if (scale_mode == 1) x = x * (double)alpha;
  if (scale_mode == 2) {
    x = x * (double)row_scale[row];
    x = x * (double)col_scale[col];
  }
  if (bias_mode == 1) x = x + (double)bias[row];
  if (bias_mode == 2) x = x + (double)bias[col];
  return x;
}


extern "C" __global__ void __launch_bounds__(256)
magicube_dense_epilogue_bf16_rowcol_rowbias_ct(const int *__restrict__ acc_in, unsigned short *__restrict__ out,
    long long rows, long long cols, float alpha,
    const float *__restrict__ row_scale, const float *__restrict__ col_scale, const float *__restrict__ bias) {
  // one stored column per thread, rows strided over the grid's y
  const long long q = (long long)blockIdx.x * 256 + threadIdx.x;
  if (q >= cols) return;
  for (long long p = blockIdx.y; p < rows; p += gridDim.y) {
    const long long i = p * cols + q;
    const long long acc = acc_in[i];
    const long long row = q, col = p;
    const double x = mc_dequant(acc, 2, alpha, row_scale, col_scale, 1, bias, row, col);
    out[i] = mc_to_bf16(x);
  }
}
