// What one event-timed launch after an L2 flush can reach on this GPU: an empty kernel, a
// grid-stride read of 2-59 MB, and the same read after every block first loads a shared
// 16-112 KB slice (the decode kernel's B) into shared memory. Not part of the build:
//   nvcc -O3 -arch=sm_90 -std=c++17 --extended-lambda bench/probes/hbm_floor.cu -o hbm_floor && ./hbm_floor
// Results: bench/results/2026-11-25-h100-session10/probes/hbm_floor.txt.
#include <cstdio>
#include <vector>
#include <algorithm>
#include <cuda_runtime.h>
#define CK(x) do { cudaError_t e = (x); if (e != cudaSuccess) { printf("err %s line %d\n", cudaGetErrorString(e), __LINE__); return 1; } } while (0)
__global__ void empty_k() {}
__global__ void stream_k(const uint4 *__restrict__ p, size_t n16, unsigned *out) {
  unsigned acc = 0;
  size_t stride = (size_t)gridDim.x * blockDim.x;
  size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
  for (; i + 3 * stride < n16; i += 4 * stride) {
    uint4 a = __ldg(p + i), b = __ldg(p + i + stride), c = __ldg(p + i + 2 * stride), d = __ldg(p + i + 3 * stride);
    acc ^= a.x ^ b.y ^ c.z ^ d.w;
  }
  for (; i < n16; i += stride) acc ^= __ldg(p + i).x;
  if (acc == 0x12345678) *out = acc;
}
// every block first reads the same `bbytes` (B's slice) then streams its share
__global__ void stream_b_k(const uint4 *__restrict__ p, size_t n16, const uint4 *__restrict__ b, int b16, unsigned *out) {
  extern __shared__ uint4 sm[];
  for (int i = threadIdx.x; i < b16; i += blockDim.x) sm[i] = __ldg(b + i);
  __syncthreads();
  unsigned acc = sm[threadIdx.x % b16].x;
  size_t stride = (size_t)gridDim.x * blockDim.x;
  size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
  for (; i + 3 * stride < n16; i += 4 * stride) {
    uint4 a = __ldg(p + i), bb = __ldg(p + i + stride), c = __ldg(p + i + 2 * stride), d = __ldg(p + i + 3 * stride);
    acc ^= a.x ^ bb.y ^ c.z ^ d.w;
  }
  if (acc == 0x12345678) *out = acc;
}
__global__ void read_flush_k(const uint4 *__restrict__ p, size_t n16, unsigned *out) {
  unsigned acc = 0;
  for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n16; i += (size_t)gridDim.x * blockDim.x) acc ^= p[i].x;
  if (acc == 0x12345678) *out = acc;
}
int main() {
  cudaDeviceProp prop; CK(cudaGetDeviceProperties(&prop, 0));
  int sms = prop.multiProcessorCount;
  size_t fl = 128ull << 20, big = 64ull << 20;
  void *flush, *buf, *bsl; unsigned *out;
  CK(cudaMalloc(&flush, fl)); CK(cudaMalloc(&buf, big)); CK(cudaMalloc(&bsl, 1 << 20)); CK(cudaMalloc(&out, 4));
  CK(cudaMemset(buf, 1, big)); CK(cudaMemset(bsl, 2, 1 << 20));
  cudaEvent_t e0, e1; cudaEventCreate(&e0); cudaEventCreate(&e1);
  CK(cudaFuncSetAttribute(stream_b_k, cudaFuncAttributeMaxDynamicSharedMemorySize, 200 * 1024));
  auto time = [&](const char *name, int flushmode, auto launch) {
    std::vector<float> t;
    for (int r = 0; r < 40; ++r) {
      if (flushmode == 1) cudaMemsetAsync(flush, r & 0xff, fl);
      if (flushmode == 2) read_flush_k<<<sms * 4, 512>>>((const uint4 *)flush, fl / 16, out);
      cudaEventRecord(e0); launch(); cudaEventRecord(e1); cudaEventSynchronize(e1);
      float ms; cudaEventElapsedTime(&ms, e0, e1); if (r >= 5) t.push_back(ms * 1000);
    }
    std::sort(t.begin(), t.end());
    printf("%-52s flush=%s  median %7.2f us  min %7.2f\n", name, flushmode == 1 ? "memset" : flushmode == 2 ? "read  " : "none  ", t[t.size() / 2], t[0]);
    return t[t.size() / 2];
  };
  printf("%s, %d SMs\n", prop.name, sms);
  for (int fm = 0; fm < 3; ++fm) time("empty kernel <<<132,512>>>", fm, [&] { empty_k<<<sms, 512>>>(); });
  double mbs[] = {2.1, 4.2, 8.4, 16.8, 29.4, 33.0, 58.7};
  for (int fm = 1; fm < 3; ++fm)
    for (double mb : mbs) for (int bpsm : {1, 2, 4}) {
      size_t n16 = (size_t)(mb * 1e6) / 16;
      char name[128]; snprintf(name, sizeof name, "stream %.1f MB, %d blocks/SM x 512", mb, bpsm);
      float us = time(name, fm, [&] { stream_k<<<sms * bpsm, 512>>>((const uint4 *)buf, n16, out); });
      printf("    -> %.2f TB/s incl. launch\n", mb * 1e6 / (us * 1e-6) / 1e12);
    }
  for (double mb : {8.4, 33.0}) for (int kb : {16, 64, 224 / 2}) {
    size_t n16 = (size_t)(mb * 1e6) / 16;
    char name[128]; snprintf(name, sizeof name, "stream %.1f MB + every block reads a %d KB B slice", mb, kb);
    time(name, 1, [&] { stream_b_k<<<sms, 512, kb * 1024>>>((const uint4 *)buf, n16, (const uint4 *)bsl, kb * 1024 / 16, out); });
  }
  CK(cudaDeviceSynchronize());
  return 0;
}
