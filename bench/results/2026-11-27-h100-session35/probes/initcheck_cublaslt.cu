// Does compute-sanitizer's initcheck see cuBLASLt's int8 GEMM writing its int32 output on sm_90?
// C = A x B (int8, M x K times K x N, int32 out; cuBLASLt's first heuristic algorithm), then a
// plain kernel reads every element of C (argv[2]: which heuristic algorithm, default 0). Variant "fresh": C straight from cudaMalloc. Variant
// "memset": C memset first (initialized in initcheck's view). Variant "stores": C written by a
// plain kernel, then read (the control). The host checks the GEMM's C against a CPU product, so
// a C cuBLASLt did not write would show as a mismatch, not only under the sanitizer.
#include <cublasLt.h>
#include <cuda_runtime.h>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#define CK(x) do { auto e_ = (x); if (e_ != 0) { std::printf("%s failed: %d (line %d)\n", #x, (int)e_, __LINE__); std::exit(1); } } while (0)

__global__ void read_all(const int *c, long long n, long long *sum) {
  long long s = 0;
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * blockDim.x) s += c[i];
  atomicAdd((unsigned long long *)sum, (unsigned long long)s);
}
__global__ void write_all(int *c, long long n) {
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * blockDim.x) c[i] = (int)(i % 7);
}

int main(int argc, char **argv) {
  const char *variant = argc > 1 ? argv[1] : "fresh";
  const int pick = argc > 2 ? std::atoi(argv[2]) : 0;  // which of the heuristic's algorithms
  const int M = 256, N = 128, K = 512;
  std::vector<signed char> a(M * K), b(K * N);
  for (int i = 0; i < M * K; ++i) a[i] = (signed char)((i * 37 + 11) % 255 - 127);
  for (int i = 0; i < K * N; ++i) b[i] = (signed char)((i * 53 + 5) % 255 - 127);
  signed char *da, *db; int *dc; long long *dsum;
  CK(cudaMalloc(&da, M * K)); CK(cudaMalloc(&db, K * N)); CK(cudaMalloc(&dc, sizeof(int) * M * N)); CK(cudaMalloc(&dsum, 8));
  CK(cudaMemcpy(da, a.data(), M * K, cudaMemcpyHostToDevice));
  CK(cudaMemcpy(db, b.data(), K * N, cudaMemcpyHostToDevice));
  CK(cudaMemset(dsum, 0, 8));
  if (!std::strcmp(variant, "stores")) {
    write_all<<<64, 256>>>(dc, (long long)M * N);
    read_all<<<64, 256>>>(dc, (long long)M * N, dsum);
    CK(cudaDeviceSynchronize());
    std::printf("variant stores: read back\n");
    return 0;
  }
  if (!std::strcmp(variant, "memset")) CK(cudaMemset(dc, 0xAB, sizeof(int) * M * N));
  // Row-major A (M x K) and C (M x N) as cuBLASLt's column-major transposes: C^T = B^T A^T with
  // B^T taken as the "A" operand, transposed (TN, the int8 form cuBLASLt supports).
  // C^T (N x M col-major) = op(Bt) x op(At): Bt stored as K x N col-major? Use: C^T[N x M] = (B as N x K)^T-free form:
  // we store b transposed on the host as bt (N x K row-major = K x N col-major).
  std::vector<signed char> bt(N * K);
  for (int k = 0; k < K; ++k) for (int n = 0; n < N; ++n) bt[n * K + k] = b[k * N + n];
  CK(cudaMemcpy(db, bt.data(), K * N, cudaMemcpyHostToDevice));
  cublasLtHandle_t lt; CK(cublasLtCreate(&lt));
  cublasLtMatmulDesc_t op; CK(cublasLtMatmulDescCreate(&op, CUBLAS_COMPUTE_32I, CUDA_R_32I));
  cublasOperation_t tn = CUBLAS_OP_T, nn = CUBLAS_OP_N;
  CK(cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_TRANSA, &tn, sizeof(tn)));
  CK(cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_TRANSB, &nn, sizeof(nn)));
  // column-major view: C^T is N x M (ld N); "A" = bt viewed as K x N col-major (ld K), transposed -> N x K;
  // "B" = a viewed as K x M col-major (ld K).
  cublasLtMatrixLayout_t la, lb, lc;
  CK(cublasLtMatrixLayoutCreate(&la, CUDA_R_8I, K, N, K));
  CK(cublasLtMatrixLayoutCreate(&lb, CUDA_R_8I, K, M, K));
  CK(cublasLtMatrixLayoutCreate(&lc, CUDA_R_32I, N, M, N));
  cublasLtMatmulPreference_t pref; CK(cublasLtMatmulPreferenceCreate(&pref));
  size_t ws = 32 << 20; void *dws; CK(cudaMalloc(&dws, ws)); CK(cudaMemset(dws, 0, ws));
  CK(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws, sizeof(ws)));
  cublasLtMatmulHeuristicResult_t h[8]; int got = 0;
  CK(cublasLtMatmulAlgoGetHeuristic(lt, op, la, lb, lc, lc, pref, 8, h, &got));
  if (got <= pick) { std::printf("no algorithm %d (%d)\n", pick, got); return 1; }
  int alpha = 1, beta = 0;
  CK(cublasLtMatmul(lt, op, &alpha, db, la, da, lb, &beta, dc, lc, dc, lc, &h[pick].algo, dws, ws, 0));
  read_all<<<64, 256>>>(dc, (long long)M * N, dsum);
  CK(cudaDeviceSynchronize());
  std::vector<int> c(M * N);
  CK(cudaMemcpy(c.data(), dc, sizeof(int) * M * N, cudaMemcpyDeviceToHost));
  long long bad = 0;
  for (int m = 0; m < M; ++m) for (int n = 0; n < N; ++n) {
    long long s = 0;
    for (int k = 0; k < K; ++k) s += (long long)a[m * K + k] * b[k * N + n];
    if (c[m * N + n] != (int)s) ++bad;
  }
  int algo_id = -1; size_t w = 0;
  cublasLtMatmulAlgoConfigGetAttribute(&h[pick].algo, CUBLASLT_ALGO_CONFIG_ID, &algo_id, sizeof(algo_id), &w);
  int tile = -1;
  cublasLtMatmulAlgoConfigGetAttribute(&h[pick].algo, CUBLASLT_ALGO_CONFIG_TILE_ID, &tile, sizeof(tile), &w);
  std::printf("variant %s: heuristic %d, cuBLASLt algo id %d tile %d (%d heuristics), %lld of %d elements differ from the CPU product\n",
              variant, pick, algo_id, tile, got, bad, M * N);
  return bad ? 1 : 0;
}
