// Magicube dense-route epilogue: the dense GEMM's exact int32 result, stored M x N row-major,
// becomes the i64 output in the same layout (sign-extended).
// Stored element (p, q) is C's (p, q).

// The output element of C's (row, col) from its exact sum.
__device__ __forceinline__ long long mc_out(long long acc, long long row, long long col, float alpha,
    const float *__restrict__ row_scale, const float *__restrict__ col_scale, const float *__restrict__ bias) {
  return acc;
}

extern "C" __global__ void __launch_bounds__(256)
magicube_dense_epilogue_i64(const int *__restrict__ acc_in, long long *__restrict__ out,
    long long rows, long long cols, long long plane, long long k, const int *__restrict__ ra,
    const int *__restrict__ cb, float alpha,
    const float *__restrict__ row_scale, const float *__restrict__ col_scale, const float *__restrict__ bias) {
  // four stored columns per thread, rows strided over the grid's y; one 16-byte load of each
  // plane's sums and one store of the outputs where every row holds whole fours and C's address allows
  const long long q = ((long long)blockIdx.x * 256 + threadIdx.x) * 4;
  if (q >= cols) return;
  const bool whole = (cols & 3) == 0 && ((unsigned long long)out & 15) == 0;
  for (long long p = blockIdx.y; p < rows; p += gridDim.y) {
    const long long i = p * cols + q;
    if (whole) {
      const int4 a0 = *(const int4 *)(acc_in + i);
      const int v0[4] = {a0.x, a0.y, a0.z, a0.w};
      long long o[4];
#pragma unroll
      for (int j = 0; j < 4; ++j) {
        const long long acc = v0[j];
        o[j] = mc_out(acc, p, q + j, alpha, row_scale, col_scale, bias);
      }
      *(longlong2 *)(out + i) = make_longlong2(o[0], o[1]);
      *(longlong2 *)(out + i + 2) = make_longlong2(o[2], o[3]);
    } else {
      for (int j = 0; j < 4 && q + j < cols; ++j) {
        const long long acc = acc_in[i + j];
        out[i + j] = mc_out(acc, p, q + j, alpha, row_scale, col_scale, bias);
      }
    }
  }
}
