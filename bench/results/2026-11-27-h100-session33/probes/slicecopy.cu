// Session 33 probe: the prefill decode kernel's slice copy (43 slices x 3 parts, 192 KiB of B's
// slice into every block, 640 threads) as cp.async 16-byte units (now), one TMA bulk copy per
// block (mbarrier), or bulk copies multicast to a cluster of the slice's 3 parts.
#include <cstdio>
#include <vector>
#include <algorithm>
#include <cuda_runtime.h>
#define CK(x) do { cudaError_t e = (x); if (e != cudaSuccess) { printf("%s: %s\n", #x, cudaGetErrorString(e)); return 1; } } while (0)

__device__ __forceinline__ unsigned cluster_rank() { unsigned r; asm volatile("mov.u32 %0, %%cluster_ctarank;" : "=r"(r)); return r; }
__device__ __forceinline__ void cluster_sync() {
  asm volatile("barrier.cluster.arrive.release.aligned;\nbarrier.cluster.wait.acquire.aligned;\n" ::: "memory");
}
__device__ __forceinline__ void mbar_wait(unsigned bar, unsigned parity) {
  asm volatile("{\n.reg .pred p;\nW: mbarrier.try_wait.parity.shared::cta.b64 p, [%0], %1;\n@!p bra W;\n}\n" :: "r"(bar), "r"(parity) : "memory");
}
// MODE 0: none; 1: cp.async 16 B units; 2: bulk, CH chunks by thread 0; 3: multicast over a cluster of 3
template <int MODE, int CH>
__global__ void __launch_bounds__(640, 1) copy_k(const unsigned char *__restrict__ b, int bytes, unsigned *out) {
  extern __shared__ __align__(128) unsigned char smem[];
  __shared__ __align__(8) unsigned long long bar;
  const unsigned sb = (unsigned)__cvta_generic_to_shared(smem);
  const unsigned sbar = (unsigned)__cvta_generic_to_shared(&bar);
  const unsigned char *src = b + (long long)blockIdx.x * bytes;
  if (MODE == 1) {
    for (int i = threadIdx.x; i < bytes / 16; i += 640)
      asm volatile("cp.async.ca.shared.global [%0], [%1], 16;\n" :: "r"(sb + i * 16), "l"(src + (long long)i * 16));
    asm volatile("cp.async.commit_group;\ncp.async.wait_group 0;\n" ::: "memory");
    __syncthreads();
  } else if (MODE == 2) {
    if (threadIdx.x == 0) {
      asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;\n" :: "r"(sbar));
      asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
      asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" :: "r"(sbar), "r"(bytes) : "memory");
      const int cb = bytes / CH;
      for (int c = 0; c < CH; ++c)
        asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];\n"
                     :: "r"(sb + c * cb), "l"(src + c * cb), "r"(cb), "r"(sbar) : "memory");
    }
    __syncthreads();
    mbar_wait(sbar, 0);
  } else if (MODE == 3) {
    const unsigned rank = cluster_rank();
    src = b + (long long)blockIdx.x * bytes;  // the cluster's 3 blocks share blockIdx.x (cluster dims 1,3,1)
    if (threadIdx.x == 0) {
      asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;\n" :: "r"(sbar));
      asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
      asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" :: "r"(sbar), "r"(bytes) : "memory");
    }
    cluster_sync();  // every block's barrier is armed before any multicast lands
    if (threadIdx.x == 0) {
      const int part = bytes / 3 / 16 * 16;
      const int lo = rank * part, hi = rank == 2 ? bytes : lo + part;
      const int cb = (hi - lo + CH - 1) / CH / 16 * 16 + 16;
      for (int o = lo; o < hi; o += cb) {
        const int n = min(cb, hi - o);
        asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes.multicast::cluster [%0], [%1], %2, [%3], %4;\n"
                     :: "r"(sb + o), "l"(src + o), "r"(n), "r"(sbar), "h"((unsigned short)7) : "memory");
      }
    }
    mbar_wait(sbar, 0);
  }
  unsigned x = 0;
  if (MODE) for (int i = threadIdx.x; i < bytes / 4; i += 640 * 97) x ^= ((const unsigned *)smem)[i];
  if (MODE == 3) cluster_sync();  // no block leaves while a peer may still write into it
  if (x == 0x12345678u) *out = x;
}

template <int MODE, int CH>
float timeit(dim3 g, int bytes, const unsigned char *b, unsigned *out, unsigned char *flush, bool fl, int cl) {
  auto k = copy_k<MODE, CH>;
  cudaFuncSetAttribute(k, cudaFuncAttributeMaxDynamicSharedMemorySize, bytes);
  cudaLaunchConfig_t cfg = {};
  cfg.gridDim = g; cfg.blockDim = dim3(640); cfg.dynamicSmemBytes = bytes;
  cudaLaunchAttribute at[1]; at[0].id = cudaLaunchAttributeClusterDimension; at[0].val.clusterDim.x = 1; at[0].val.clusterDim.y = cl; at[0].val.clusterDim.z = 1;
  cfg.attrs = at; cfg.numAttrs = cl > 1 ? 1 : 0;
  cudaEvent_t e0, e1; cudaEventCreate(&e0); cudaEventCreate(&e1);
  std::vector<float> v;
  for (int r = 0; r < 25; ++r) {
    if (fl) cudaMemsetAsync(flush, r, 100 << 20);
    cudaEventRecord(e0);
    cudaError_t e = cudaLaunchKernelEx(&cfg, k, b, bytes, out);
    cudaEventRecord(e1); cudaEventSynchronize(e1);
    if (e != cudaSuccess) { printf("launch: %s\n", cudaGetErrorString(e)); return -1; }
    float ms; cudaEventElapsedTime(&ms, e0, e1); if (r >= 5) v.push_back(ms * 1000);
  }
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}
int main() {
  const int bytes = 4096 * 48; dim3 g(43, 3);
  unsigned char *b, *flush; unsigned *out;
  CK(cudaMalloc(&b, 64 << 20)); CK(cudaMalloc(&flush, 100 << 20)); CK(cudaMalloc(&out, 4));
  cudaMemset(b, 1, 64 << 20);
  {
    cudaFuncSetAttribute(copy_k<3, 1>, cudaFuncAttributeMaxDynamicSharedMemorySize, bytes);
    cudaFuncSetAttribute(copy_k<3, 1>, cudaFuncAttributeNonPortableClusterSizeAllowed, 1);
    for (int cl : {2, 3, 4}) {
      cudaLaunchConfig_t cfg = {}; cfg.gridDim = dim3(43, cl); cfg.blockDim = dim3(640); cfg.dynamicSmemBytes = bytes;
      cudaLaunchAttribute at[1]; at[0].id = cudaLaunchAttributeClusterDimension; at[0].val.clusterDim.x = 1; at[0].val.clusterDim.y = cl; at[0].val.clusterDim.z = 1;
      cfg.attrs = at; cfg.numAttrs = 1;
      int n = -1; cudaError_t e = cudaOccupancyMaxActiveClusters(&n, copy_k<3, 1>, &cfg);
      printf("max active clusters of %d (192 KiB, 640 threads): %d (%s)\n", cl, n, cudaGetErrorString(e));
    }
  }
  for (int fl = 0; fl < 2; ++fl) {
    printf("--- L2 %s ---\n", fl ? "flushed" : "warm");
    for (int rep = 0; rep < 2; ++rep) {
      printf("empty %.2f us\n", timeit<0, 1>(g, bytes, b, out, flush, fl, 1));
      printf("cp.async 16B %.2f us\n", timeit<1, 1>(g, bytes, b, out, flush, fl, 1));
      printf("bulk x1 %.2f us\n", timeit<2, 1>(g, bytes, b, out, flush, fl, 1));
      printf("bulk x4 %.2f us\n", timeit<2, 4>(g, bytes, b, out, flush, fl, 1));
      printf("bulk x12 %.2f us\n", timeit<2, 12>(g, bytes, b, out, flush, fl, 1));
      printf("multicast3 x1 %.2f us\n", timeit<3, 1>(g, bytes, b, out, flush, fl, 3));
      printf("multicast3 x4 %.2f us\n", timeit<3, 4>(g, bytes, b, out, flush, fl, 3));
      printf("cp.async 16B, 132 blocks, 132 distinct slices %.2f us\n", timeit<1, 1>(dim3(132, 1), bytes, b, out, flush, fl, 1));
      printf("cp.async 16B, 132 blocks, 44 slices (3 a slice) %.2f us\n", timeit<1, 1>(dim3(44, 3), bytes, b, out, flush, fl, 1));
    }
  }
  CK(cudaGetLastError());
  return 0;
}
