// Magicube dense-route epilogue: the dense GEMMs' int32 results of u8 x s12 in int8 chunks
// (u8@0-128 x u8@0-128 s4@8: 2 GEMMs (shifts 0 8)), planes `plane` ints apart, summed in 64 bits with
// their offsets' terms, each stored M x N row-major,
// becomes the i32 output in the same layout (wrapped to 32 bits, as the GEMM's own int32 output).
// Stored element (p, q) is C's (p, q).

// C's exact sum from its 2 chunk pair(s)' int32 results s0..: pair t counts 2^shift(t) times,
// with its offsets' terms (compiler/dense_chunks.h): B's offset times A's row sums ra, A's offset
// times B's column sums cb, both offsets times K.
__device__ __forceinline__ long long mc_sum(int s0, int s1, long long row, long long col, long long m, long long n,
    long long k, const int *__restrict__ ra, const int *__restrict__ cb) {
  return (long long)s0
       + 128LL * ra[row]
       + 128LL * cb[col]
       + 16384LL * k
       + (long long)s1 * 256LL
       + 32768LL * cb[n + col];
}

// The output element of C's (row, col) from its exact sum.
__device__ __forceinline__ int mc_out(long long acc, long long row, long long col, float alpha,
    const float *__restrict__ row_scale, const float *__restrict__ col_scale, const float *__restrict__ bias) {
  return (int)acc;
}

extern "C" __global__ void __launch_bounds__(256)
magicube_dense_epilogue_i32_u8xs12(const int *__restrict__ acc_in, int *__restrict__ out,
    long long rows, long long cols, long long plane, long long k, const int *__restrict__ ra,
    const int *__restrict__ cb, float alpha,
    const float *__restrict__ row_scale, const float *__restrict__ col_scale, const float *__restrict__ bias) {
  // four stored columns per thread, rows strided over the grid's y; one 16-byte load of each
  // plane's sums and one store of the outputs where every row holds whole fours and C's address allows
  const long long q = ((long long)blockIdx.x * 256 + threadIdx.x) * 4;
  if (q >= cols) return;
  const long long m = rows, n = cols;  // C's M x N
  const bool whole = (cols & 3) == 0 && ((unsigned long long)out & 15) == 0;
  for (long long p = blockIdx.y; p < rows; p += gridDim.y) {
    const long long i = p * cols + q;
    if (whole) {
      const int4 a0 = *(const int4 *)(acc_in + i);
      const int v0[4] = {a0.x, a0.y, a0.z, a0.w};
      const int4 a1 = *(const int4 *)(acc_in + plane + i);
      const int v1[4] = {a1.x, a1.y, a1.z, a1.w};
      int o[4];
#pragma unroll
      for (int j = 0; j < 4; ++j) {
        const long long acc = mc_sum(v0[j], v1[j], p, q + j, m, n, k, ra, cb);
        o[j] = mc_out(acc, p, q + j, alpha, row_scale, col_scale, bias);
      }
      *(int4 *)(out + i) = make_int4(o[0], o[1], o[2], o[3]);
    } else {
      for (int j = 0; j < 4 && q + j < cols; ++j) {
        const long long acc = mc_sum(acc_in[i + j], acc_in[plane + i + j], p, q + j, m, n, k, ra, cb);
        out[i + j] = mc_out(acc, p, q + j, alpha, row_scale, col_scale, bias);
      }
    }
  }
}
