// How the L2 flush's kind moves a cold read: memset (dirty lines) vs a read (clean lines).
#include <cstdio>
#include <vector>
#include <algorithm>
#include <cuda_runtime.h>
__global__ void readk(const uint4 *p, size_t n, unsigned *sink) {
  unsigned acc = 0;
  for (size_t i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += size_t(gridDim.x) * blockDim.x) {
    uint4 v = __ldcs(p + i);  // streaming
    acc ^= v.x ^ v.y ^ v.z ^ v.w;
  }
  if (acc == 0x12345678u) sink[0] = acc;
}
__global__ void readk_ld(const uint4 *p, size_t n, unsigned *sink) {
  unsigned acc = 0;
  for (size_t i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += size_t(gridDim.x) * blockDim.x) {
    uint4 v = p[i];
    acc ^= v.x ^ v.y ^ v.z ^ v.w;
  }
  if (acc == 0x12345678u) sink[0] = acc;
}
__global__ void emptyk() {}
int main() {
  size_t F = size_t(128) << 20;
  char *f, *w; unsigned *sink;
  cudaMalloc(&f, F); cudaMalloc(&w, size_t(64) << 20); cudaMalloc(&sink, 4);
  cudaMemset(w, 1, size_t(64) << 20);
  int sms; cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0);
  cudaEvent_t a, b; cudaEventCreate(&a); cudaEventCreate(&b);
  const char *modes[] = {"warm", "memset", "read", "memset+read", "memset+sync", "memset+sleep50us"};
  size_t sizes[] = {size_t(1) << 20, size_t(4) << 20, size_t(8400) << 10, size_t(16800) << 10, size_t(33) << 20};
  for (int m = 0; m < 6; ++m)
    for (int si = -1; si < 5; ++si) {
      std::vector<float> t;
      for (int r = 0; r < 40; ++r) {
        if (m == 1 || m == 3 || m == 4 || m == 5) cudaMemsetAsync(f, r & 0xff, F);
        if (m == 2 || m == 3) readk_ld<<<sms * 8, 512>>>((const uint4 *)f, F / 16, sink);
        if (m == 4) cudaDeviceSynchronize();
        if (m == 5) { cudaDeviceSynchronize(); }
        cudaEventRecord(a);
        if (si < 0) emptyk<<<1, 32>>>();
        else readk<<<sms * 4, 512>>>((const uint4 *)w, sizes[si] / 16, sink);
        cudaEventRecord(b);
        cudaEventSynchronize(b);
        float ms; cudaEventElapsedTime(&ms, a, b); t.push_back(ms * 1000);
      }
      std::sort(t.begin(), t.end());
      double bytes = si < 0 ? 0 : double(sizes[si]);
      printf("%-16s %10.0f B  median %7.2f us  min %7.2f  -> %.2f TB/s\n", modes[m], bytes, t[20], t[0],
             bytes / (t[20] * 1e-6) / 1e12);
    }
  return 0;
}
