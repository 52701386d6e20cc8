// Which cuBLASLt int8 configurations run a GEMM fast, per storage form, with a cold L2: for
// the llm grid's rows where the dispatch's dense route (our row-major C) lost to the bench's
// contender (column-major C), e.g. 4096x11008 N=512: 47.5 us against 42.3 us, both with algo
// id 39 and tile 20 (128x128). For each form, the first 32 heuristic results, each timed (a
// 100 MiB memset ahead of every run, 7 runs, the median) with its configuration attributes.
// Then the contender form's fastest configuration replayed in our forms (its attributes set on
// an algo of our form, checked by cublasLtMatmulAlgoCheck). Not part of the build:
//   nvcc -O3 -arch=sm_90 -std=c++17 bench/probes/lt_configs.cu -lcublasLt -o lt_configs
//   ./lt_configs M N K
#include <cublasLt.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#define CK(x) do { cudaError_t e_ = (x); if (e_ != cudaSuccess) { printf("cuda %s line %d\n", cudaGetErrorString(e_), __LINE__); exit(1); } } while (0)
#define LK(x) do { cublasStatus_t s_ = (x); if (s_ != CUBLAS_STATUS_SUCCESS) { printf("cublasLt %d line %d\n", int(s_), __LINE__); exit(1); } } while (0)

struct Form {
  const char *name;
  cublasOperation_t ta, tb;
  bool swap;      // the GEMM's first operand is Bt (C^T = Bt^T A^T)
  bool row_all;   // A, Bt and C in CUBLASLT_ORDER_ROW
  bool c_row;     // C in ORDER_ROW (col-major operands)
  bool c_col;     // C column-major M x N (the contender's; not our API's)
};

static cublasLtHandle_t lt;
static void *A, *Bt, *C, *WS, *FLUSH;
static const size_t kWs = 32u << 20, kFlush = 100u << 20;

struct Setup {
  cublasLtMatmulDesc_t desc;
  cublasLtMatrixLayout_t la, lb, lc;
  const void *pa, *pb;
};

static Setup make(const Form &f, int64_t m, int64_t n, int64_t k) {
  Setup s{};
  LK(cublasLtMatmulDescCreate(&s.desc, CUBLAS_COMPUTE_32I, CUDA_R_32I));
  LK(cublasLtMatmulDescSetAttribute(s.desc, CUBLASLT_MATMUL_DESC_TRANSA, &f.ta, sizeof(f.ta)));
  LK(cublasLtMatmulDescSetAttribute(s.desc, CUBLASLT_MATMUL_DESC_TRANSB, &f.tb, sizeof(f.tb)));
  const cublasLtOrder_t row = CUBLASLT_ORDER_ROW;
  if (f.row_all) {
    LK(cublasLtMatrixLayoutCreate(&s.la, CUDA_R_8I, m, k, k));
    LK(cublasLtMatrixLayoutCreate(&s.lb, CUDA_R_8I, n, k, k));
    LK(cublasLtMatrixLayoutCreate(&s.lc, CUDA_R_32I, m, n, n));
    for (auto l : {s.la, s.lb, s.lc}) LK(cublasLtMatrixLayoutSetAttribute(l, CUBLASLT_MATRIX_LAYOUT_ORDER, &row, sizeof(row)));
    s.pa = A, s.pb = Bt;
  } else if (f.swap) {
    LK(cublasLtMatrixLayoutCreate(&s.la, CUDA_R_8I, k, n, k));
    LK(cublasLtMatrixLayoutCreate(&s.lb, CUDA_R_8I, k, m, k));
    LK(cublasLtMatrixLayoutCreate(&s.lc, CUDA_R_32I, n, m, n));
    s.pa = Bt, s.pb = A;
  } else {
    LK(cublasLtMatrixLayoutCreate(&s.la, CUDA_R_8I, k, m, k));
    LK(cublasLtMatrixLayoutCreate(&s.lb, CUDA_R_8I, k, n, k));
    LK(cublasLtMatrixLayoutCreate(&s.lc, CUDA_R_32I, m, n, f.c_col ? m : n));
    if (f.c_row) LK(cublasLtMatrixLayoutSetAttribute(s.lc, CUBLASLT_MATRIX_LAYOUT_ORDER, &row, sizeof(row)));
    s.pa = A, s.pb = Bt;
  }
  return s;
}

static std::string attrs(const cublasLtMatmulAlgo_t &a) {
  auto get = [&](cublasLtMatmulAlgoConfigAttributes_t at, size_t bytes) {
    uint64_t v = 0;
    size_t w = 0;
    cublasLtMatmulAlgoConfigGetAttribute(&a, at, &v, bytes, &w);
    return (long long)v;
  };
  char buf[256];
  snprintf(buf, sizeof buf, "id %lld tile %lld stages %lld splitk %lld red %lld swz %lld custom %lld cluster %lld inner %lld",
           get(CUBLASLT_ALGO_CONFIG_ID, 4), get(CUBLASLT_ALGO_CONFIG_TILE_ID, 4), get(CUBLASLT_ALGO_CONFIG_STAGES_ID, 4),
           get(CUBLASLT_ALGO_CONFIG_SPLITK_NUM, 4), get(CUBLASLT_ALGO_CONFIG_REDUCTION_SCHEME, 4),
           get(CUBLASLT_ALGO_CONFIG_CTA_SWIZZLING, 4), get(CUBLASLT_ALGO_CONFIG_CUSTOM_OPTION, 4),
           get(CUBLASLT_ALGO_CONFIG_CLUSTER_SHAPE_ID, 2), get(CUBLASLT_ALGO_CONFIG_INNER_SHAPE_ID, 2));
  return buf;
}

static double time_ms(const Setup &s, const cublasLtMatmulAlgo_t &algo, cudaStream_t st) {
  const int32_t one = 1, zero = 0;
  auto run = [&]() {
    return cublasLtMatmul(lt, s.desc, &one, s.pa, s.la, s.pb, s.lb, &zero, C, s.lc, C, s.lc, &algo, WS, kWs, st);
  };
  if (run() != CUBLAS_STATUS_SUCCESS) return -1;
  cudaEvent_t e0, e1;
  CK(cudaEventCreate(&e0));
  CK(cudaEventCreate(&e1));
  std::vector<float> ms;
  for (int r = 0; r < 7; ++r) {
    CK(cudaMemsetAsync(FLUSH, r, kFlush, st));
    CK(cudaEventRecord(e0, st));
    if (run() != CUBLAS_STATUS_SUCCESS) return -1;
    CK(cudaEventRecord(e1, st));
    CK(cudaEventSynchronize(e1));
    float x = 0;
    CK(cudaEventElapsedTime(&x, e0, e1));
    ms.push_back(x);
  }
  cudaEventDestroy(e0);
  cudaEventDestroy(e1);
  std::sort(ms.begin(), ms.end());
  return ms[ms.size() / 2];
}

int main(int argc, char **argv) {
  if (argc < 4) {
    printf("usage: lt_configs M N K\n");
    return 2;
  }
  const int64_t m = atoll(argv[1]), n = atoll(argv[2]), k = atoll(argv[3]);
  LK(cublasLtCreate(&lt));
  CK(cudaMalloc(&A, size_t(m * k)));
  CK(cudaMalloc(&Bt, size_t(n * k)));
  CK(cudaMalloc(&C, size_t(m * n * 4)));
  CK(cudaMalloc(&WS, kWs));
  CK(cudaMalloc(&FLUSH, kFlush));
  CK(cudaMemset(A, 1, size_t(m * k)));
  CK(cudaMemset(Bt, 1, size_t(n * k)));
  cudaStream_t st;
  CK(cudaStreamCreate(&st));
  const Form forms[] = {
      {"contender TN, C col-major", CUBLAS_OP_T, CUBLAS_OP_N, false, false, false, true},
      {"ours TransposedC (C^T = Bt^T A^T)", CUBLAS_OP_T, CUBLAS_OP_N, true, false, false, false},
      {"ours RowOrderC (TN, C ORDER_ROW)", CUBLAS_OP_T, CUBLAS_OP_N, false, false, true, false},
      {"ours RowOrderAll (NT, all ORDER_ROW)", CUBLAS_OP_N, CUBLAS_OP_T, false, true, false, false},
  };
  cublasLtMatmulPreference_t pref;
  LK(cublasLtMatmulPreferenceCreate(&pref));
  uint64_t ws = kWs;
  LK(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws, sizeof(ws)));
  cublasLtMatmulAlgo_t contender_best{};
  double contender_ms = 1e30;
  std::vector<cublasLtMatmulAlgo_t> contender_all;
  for (const Form &f : forms) {
    Setup s = make(f, m, n, k);
    std::vector<cublasLtMatmulHeuristicResult_t> h(32);
    int found = 0;
    cublasStatus_t hs = cublasLtMatmulAlgoGetHeuristic(lt, s.desc, s.la, s.lb, s.lc, s.lc, pref, 32, h.data(), &found);
    printf("== M=%lld N=%lld K=%lld %s: %d heuristic results (status %d)\n", (long long)m, (long long)n, (long long)k, f.name,
           found, int(hs));
    double best = 1e30;
    for (int i = 0; i < found; ++i) {
      if (h[i].state != CUBLAS_STATUS_SUCCESS) continue;
      const double ms = time_ms(s, h[i].algo, st);
      printf("  %2d %8.4f ms  %s ws %zu\n", i + 1, ms, attrs(h[i].algo).c_str(), h[i].workspaceSize);
      if (ms > 0 && ms < best) best = ms;
      if (f.c_col && ms > 0 && ms < contender_ms) contender_ms = ms, contender_best = h[i].algo;
      if (f.c_col) contender_all.push_back(h[i].algo);
      // the other CTA swizzle of the same configuration
      cublasLtMatmulAlgo_t b = h[i].algo;
      uint32_t swz = 0;
      size_t w = 0;
      cublasLtMatmulAlgoConfigGetAttribute(&b, CUBLASLT_ALGO_CONFIG_CTA_SWIZZLING, &swz, sizeof(swz), &w);
      swz = swz ? 0 : 1;
      cublasLtMatmulAlgoConfigSetAttribute(&b, CUBLASLT_ALGO_CONFIG_CTA_SWIZZLING, &swz, sizeof(swz));
      cublasLtMatmulHeuristicResult_t r{};
      if (cublasLtMatmulAlgoCheck(lt, s.desc, s.la, s.lb, s.lc, s.lc, &b, &r) == CUBLAS_STATUS_SUCCESS &&
          r.state == CUBLAS_STATUS_SUCCESS && r.workspaceSize <= kWs) {
        const double ms2 = time_ms(s, b, st);
        printf("  %2ds %7.4f ms  %s (swizzle toggled)\n", i + 1, ms2, attrs(b).c_str());
        if (ms2 > 0 && ms2 < best) best = ms2;
      } else {
        printf("  %2ds swizzle toggled: refused\n", i + 1);
      }
    }
    printf("  best %.4f ms\n", best);
  }
  // Every configuration of the contender's form in our RowOrderC form (the same operand roles,
  // only C's order differs): its attributes on an algo of ours, both CTA swizzles.
  printf("== the contender's configurations (fastest %.4f ms: %s) in our RowOrderC form\n", contender_ms,
         attrs(contender_best).c_str());
  const Form &f = forms[2];
  Setup s = make(f, m, n, k);
  int idx = 0;
  for (const cublasLtMatmulAlgo_t &src : contender_all) {
    ++idx;
    int32_t id = 0;
    size_t w = 0;
    cublasLtMatmulAlgoConfigGetAttribute(&src, CUBLASLT_ALGO_CONFIG_ID, &id, sizeof(id), &w);
    cublasLtMatmulAlgo_t a;
    if (cublasLtMatmulAlgoInit(lt, CUBLAS_COMPUTE_32I, CUDA_R_32I, CUDA_R_8I, CUDA_R_8I, CUDA_R_32I, CUDA_R_32I, id, &a) !=
        CUBLAS_STATUS_SUCCESS) {
      printf("  %d: AlgoInit refused\n", idx);
      continue;
    }
    // The cluster shape (a uint16_t) is left at AlgoInit's automatic one: the runs in
    // bench/results/2026-11-26-h100-session16/probes/lt_configs-2 passed it as 4 bytes (their
    // printed cluster column is 0 throughout), so at most the automatic shape reached the algo.
    const cublasLtMatmulAlgoConfigAttributes_t keys[] = {
        CUBLASLT_ALGO_CONFIG_TILE_ID, CUBLASLT_ALGO_CONFIG_STAGES_ID, CUBLASLT_ALGO_CONFIG_SPLITK_NUM,
        CUBLASLT_ALGO_CONFIG_REDUCTION_SCHEME, CUBLASLT_ALGO_CONFIG_CTA_SWIZZLING, CUBLASLT_ALGO_CONFIG_CUSTOM_OPTION,
        CUBLASLT_ALGO_CONFIG_INNER_SHAPE_ID};
    const size_t sizes[] = {4, 4, 4, 4, 4, 4, 2};
    for (int i = 0; i < 7; ++i) {
      uint64_t v = 0;
      cublasLtMatmulAlgoConfigGetAttribute(&src, keys[i], &v, sizes[i], &w);
      cublasLtMatmulAlgoConfigSetAttribute(&a, keys[i], &v, sizes[i]);
    }
    for (int swz : {0, 1}) {
      cublasLtMatmulAlgo_t b = a;
      uint32_t v = uint32_t(swz);
      cublasLtMatmulAlgoConfigSetAttribute(&b, CUBLASLT_ALGO_CONFIG_CTA_SWIZZLING, &v, sizeof(v));
      cublasLtMatmulHeuristicResult_t r{};
      cublasStatus_t cs = cublasLtMatmulAlgoCheck(lt, s.desc, s.la, s.lb, s.lc, s.lc, &b, &r);
      if (cs != CUBLAS_STATUS_SUCCESS || r.state != CUBLAS_STATUS_SUCCESS || r.workspaceSize > kWs) {
        printf("  %d swz %d: AlgoCheck refused (%d, %d)\n", idx, swz, int(cs), int(r.state));
        continue;
      }
      printf("  %d swz %d: %.4f ms  %s\n", idx, swz, time_ms(s, b, st), attrs(b).c_str());
    }
  }
  return 0;
}
