#include <cstdio>
#include <cuda_runtime.h>
__global__ void k(int *p){ extern __shared__ int s[]; if(p) p[0]=s[threadIdx.x]; }
int main(){
  cudaFuncSetAttribute(k, cudaFuncAttributeMaxDynamicSharedMemorySize, 200*1024);
  cudaFuncSetAttribute(k, cudaFuncAttributeNonPortableClusterSizeAllowed, 1);
  for (int smem : {192*1024, 172*1024, 128*1024, 64*1024}) for (int threads : {512, 640, 1024}) for (int cs : {1,2,3,4,6,8}) {
    cudaLaunchConfig_t cfg = {}; cfg.gridDim = dim3(1, cs*64, 1); cfg.blockDim = dim3(threads); cfg.dynamicSmemBytes = smem;
    cudaLaunchAttribute a; a.id = cudaLaunchAttributeClusterDimension; a.val.clusterDim.x = 1; a.val.clusterDim.y = cs; a.val.clusterDim.z = 1;
    cfg.attrs = &a; cfg.numAttrs = 1; int n = -1;
    cudaError_t e = cudaOccupancyMaxActiveClusters(&n, k, &cfg);
    printf("smem %d KB threads %d cluster %d -> max active clusters %d (%d blocks) %s\n", smem/1024, threads, cs, n, n*cs, e? cudaGetErrorString(e):"");
  }
}
