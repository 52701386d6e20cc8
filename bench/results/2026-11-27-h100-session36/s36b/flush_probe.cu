// What a call costs under each way of making L2 cold: a plain read of S bytes (16-byte loads, a
// grid of 132 x 4 blocks of 512 threads striding the buffer), and an empty kernel, each timed
// between its own event pair after
//   warm   nothing (the host's launch latency is timed too),
//   memset a 128 MiB memset (the bench's flush: it leaves L2 full of dirty lines),
//   read   a 128 MiB read (L2 full of clean lines, as after a layer that read its weight).
// The median of 30 calls each. nvcc -O3 -arch=sm_90 flush_probe.cu -o flush_probe
// (Session 25's probes/flushprobe measured the same; this is the rerun of session 36, s36b.)
#include <algorithm>
#include <cstdio>
#include <vector>
#include <cuda_runtime.h>

__global__ void read_kernel(const uint4 *p, size_t n, unsigned *out) {
  unsigned acc = 0;
  for (size_t i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += size_t(gridDim.x) * blockDim.x) {
    uint4 v = __ldg(p + i);
    acc ^= v.x ^ v.y ^ v.z ^ v.w;
  }
  if (acc == 0x12345678u) out[blockIdx.x] = acc;
}
__global__ void empty_kernel(unsigned *out) {
  if (threadIdx.x == 1023) out[0] = 1;
}

int main() {
  const size_t flush_bytes = size_t(128) << 20;
  uint4 *flush, *buf;
  unsigned *out;
  cudaMalloc(&flush, flush_bytes);
  cudaMalloc(&buf, size_t(64) << 20);
  cudaMalloc(&out, 4096 * 4);
  cudaMemset(flush, 1, flush_bytes);
  cudaMemset(buf, 2, size_t(64) << 20);
  cudaEvent_t a, b;
  cudaEventCreate(&a);
  cudaEventCreate(&b);
  const char *modes[] = {"warm", "memset", "read"};
  const double sizes_mb[] = {0, 2.1, 8.4, 22.0, 36.7, 58.7};
  printf("bytes_MB mode median_us GBps\n");
  for (double mb : sizes_mb)
    for (int m = 0; m < 3; ++m) {
      const size_t n = size_t(mb * 1e6) / 16;
      std::vector<float> t;
      for (int i = 0; i < 35; ++i) {
        if (m == 1) cudaMemsetAsync(flush, i, flush_bytes);
        if (m == 2) read_kernel<<<132 * 4, 512>>>(flush, flush_bytes / 16, out);
        cudaEventRecord(a);
        if (n) read_kernel<<<132 * 4, 512>>>(buf, n, out);
        else empty_kernel<<<132, 512>>>(out);
        cudaEventRecord(b);
        cudaEventSynchronize(b);
        float ms;
        cudaEventElapsedTime(&ms, a, b);
        if (i >= 5) t.push_back(ms);
      }
      std::sort(t.begin(), t.end());
      const double us = t[t.size() / 2] * 1e3;
      printf("%.1f %s %.2f %.0f\n", mb, modes[m], us, mb ? mb * 1e6 / (us * 1e-6) / 1e9 : 0.0);
    }
  return 0;
}
