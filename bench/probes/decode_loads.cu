// The decode kernel's loads alone (no B, no mma): each of 2112 warps streams its piece of A
// (256 B a stride), the 16-bit indices (64 B) and a schedule word, 8 or 16 strides ahead, or
// the block's warps interleaved over its run. Not part of the build:
//   nvcc -O3 -arch=sm_90 -std=c++17 bench/probes/decode_loads.cu -o decode_loads && ./decode_loads
// Results: bench/results/2026-11-25-h100-session10/probes/decode_loads.txt.
#include <cstdio>
#include <vector>
#include <algorithm>
#include <cuda_runtime.h>
template <int DEPTH, bool INTERLEAVE>
__global__ void __launch_bounds__(512, 1) piece_k(const unsigned char *__restrict__ a, const unsigned short *__restrict__ ci,
                                                  const unsigned *__restrict__ meta, int T, unsigned *out) {
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  const int P = gridDim.x * 16;
  const int gw = blockIdx.x * 16 + warp;
  // INTERLEAVE: the block's run is contiguous, its warps take strides w, w+16, ... of it
  long long bs = (long long)T * blockIdx.x / gridDim.x, be = (long long)T * (blockIdx.x + 1) / gridDim.x;
  long long cw, cw1, step;
  if (INTERLEAVE) { cw = bs + warp; cw1 = be; step = 16; }
  else { cw = (long long)T * gw / P; cw1 = (long long)T * (gw + 1) / P; step = 1; }
  unsigned acc = 0;
  uint2 q[DEPTH]; unsigned short c[DEPTH]; unsigned m[DEPTH];
#pragma unroll
  for (int d = 0; d < DEPTH; ++d) {
    long long s = cw + d * step;
    if (s < cw1) { q[d] = __ldg((const uint2 *)(a + s * 256) + lane); c[d] = __ldg(ci + s * 32 + lane); m[d] = __ldg(meta + s); }
  }
  for (long long s0 = cw;; s0 += DEPTH * step) {
#pragma unroll
    for (int d = 0; d < DEPTH; ++d) {
      long long s = s0 + d * step;
      if (s >= cw1) goto done;
      acc ^= q[d].x ^ q[d].y ^ c[d] ^ m[d];
      long long n = s + DEPTH * step;
      if (n < cw1) { q[d] = __ldg((const uint2 *)(a + n * 256) + lane); c[d] = __ldg(ci + n * 32 + lane); m[d] = __ldg(meta + n); }
    }
  }
done:
  if (acc == 0x12345678) *out = acc;
}
int main() {
  int sms; cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0);
  size_t fl = 128ull << 20;
  void *flush, *a, *ci, *meta; unsigned *out;
  const int T = 115000;  // 14336x4096 s=0.5
  cudaMalloc(&flush, fl); cudaMalloc(&a, (size_t)T * 256); cudaMalloc(&ci, (size_t)T * 64); cudaMalloc(&meta, (size_t)T * 4); cudaMalloc(&out, 4);
  cudaMemset(a, 1, (size_t)T * 256); cudaMemset(ci, 1, (size_t)T * 64); cudaMemset(meta, 1, (size_t)T * 4);
  cudaEvent_t e0, e1; cudaEventCreate(&e0); cudaEventCreate(&e1);
  auto time = [&](const char *name, int t, auto launch) {
    std::vector<float> v;
    for (int r = 0; r < 60; ++r) {
      cudaMemsetAsync(flush, r & 0xff, fl);
      cudaEventRecord(e0); launch(); cudaEventRecord(e1); cudaEventSynchronize(e1);
      float ms; cudaEventElapsedTime(&ms, e0, e1); if (r >= 10) v.push_back(ms * 1000);
    }
    std::sort(v.begin(), v.end());
    double mb = t * 324.0 / 1e6;
    printf("%-44s T=%6d (%5.1f MB) median %6.2f us (%.2f TB/s incl. launch)\n", name, t, mb, v[v.size() / 2], mb / v[v.size() / 2]);
  };
  for (int t : {T, 32768, 8192}) {
    time("per-warp pieces, depth 16", t, [&] { piece_k<16, false><<<sms, 512>>>((const unsigned char *)a, (const unsigned short *)ci, (const unsigned *)meta, t, out); });
    time("per-warp pieces, depth 8", t, [&] { piece_k<8, false><<<sms, 512>>>((const unsigned char *)a, (const unsigned short *)ci, (const unsigned *)meta, t, out); });
    time("block run, warps interleaved, depth 16", t, [&] { piece_k<16, true><<<sms, 512>>>((const unsigned char *)a, (const unsigned short *)ci, (const unsigned *)meta, t, out); });
    time("block run, warps interleaved, depth 8", t, [&] { piece_k<8, true><<<sms, 512>>>((const unsigned char *)a, (const unsigned short *)ci, (const unsigned *)meta, t, out); });
  }
  cudaError_t e = cudaDeviceSynchronize(); printf("%s\n", cudaGetErrorString(e));
  return 0;
}
