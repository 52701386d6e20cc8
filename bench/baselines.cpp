#include "bench/baselines.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <numeric>
#include <random>

#include <dlfcn.h>
#include <unistd.h>

#include <cublasLt.h>
#include <cublas_v2.h>
#include <cusparse.h>

#include <functional>
#include <memory>
#include <type_traits>

#include "support/log.h"

namespace magicube::bench {

namespace {

// ---- the libraries' own error messages -------------------------------------------------
// cuBLASLt and cuSPARSE say *why* they refuse a configuration only through their loggers.
// At error level, with the output sent to /dev/null and a callback that keeps the last
// message, a refusal can name the reason. Left alone when the user set the libraries'
// own log-level variables.

thread_local std::string g_lib_message;

void keep_lib_message(const char *lib, int level, const char *function, const char *message) {
  g_lib_message = std::string(lib) + " " + (function ? function : "?") + ": " + (message ? message : "");
  while (!g_lib_message.empty() && (g_lib_message.back() == '\n' || g_lib_message.back() == ' '))
    g_lib_message.pop_back();
  log().debug("{}", g_lib_message);
}
void cusparse_logger(int level, const char *function, const char *message) {
  keep_lib_message("cuSPARSE", level, function, message);
}
void cublaslt_logger(int level, const char *function, const char *message) {
  keep_lib_message("cuBLASLt", level, function, message);
}

void install_loggers() {
  static std::once_flag once;
  std::call_once(once, [] {
    static FILE *sink = std::fopen("/dev/null", "w");
    if (!sink) return;
    if (!std::getenv("CUSPARSE_LOG_LEVEL") && !std::getenv("CUSPARSE_LOG_MASK")) {
      cusparseLoggerSetFile(sink);
      cusparseLoggerSetCallback(cusparse_logger);
      cusparseLoggerSetLevel(1);
    }
    if (!std::getenv("CUBLASLT_LOG_LEVEL") && !std::getenv("CUBLASLT_LOG_MASK")) {
      cublasLtLoggerSetFile(sink);
      cublasLtLoggerSetCallback(cublaslt_logger);
      cublasLtLoggerSetLevel(1);
    }
  });
}

// " [cuSPARSE cusparseSpMM: ...]" for the last library message since the last call, or "".
std::string take_lib_message() {
  std::string m = std::move(g_lib_message);
  g_lib_message.clear();
  return m.empty() ? std::string() : " [" + m + "]";
}

// ---- status helpers --------------------------------------------------------------------

std::string blas_status(const char *call, cublasStatus_t st) {
  return std::string(call) + ": " + cublasGetStatusName(st);
}
std::string sparse_status(const char *call, cusparseStatus_t st) {
  return std::string(call) + ": " + cusparseGetErrorName(st);
}

// A configuration the library does not do, as opposed to a failure.
bool is_refusal(cublasStatus_t st) {
  return st == CUBLAS_STATUS_NOT_SUPPORTED || st == CUBLAS_STATUS_INVALID_VALUE || st == CUBLAS_STATUS_ARCH_MISMATCH;
}
bool is_refusal(cusparseStatus_t st) {
  return st == CUSPARSE_STATUS_NOT_SUPPORTED || st == CUSPARSE_STATUS_INVALID_VALUE ||
         st == CUSPARSE_STATUS_ARCH_MISMATCH || st == CUSPARSE_STATUS_MATRIX_TYPE_NOT_SUPPORTED;
}

#define MAGICUBE_BLAS_TRY(call)                                                       \
  do {                                                                                \
    cublasStatus_t magicube_blas_status_ = (call);                                    \
    if (magicube_blas_status_ != CUBLAS_STATUS_SUCCESS)                               \
      return make_error(blas_status(#call, magicube_blas_status_) + take_lib_message()); \
  } while (0)

#define MAGICUBE_SPARSE_TRY(call)                                                         \
  do {                                                                                    \
    cusparseStatus_t magicube_sparse_status_ = (call);                                    \
    if (magicube_sparse_status_ != CUSPARSE_STATUS_SUCCESS)                               \
      return make_error(sparse_status(#call, magicube_sparse_status_) + take_lib_message()); \
  } while (0)

// RAII for library handles and descriptors.
template <typename T, auto Destroy>
struct Owned {
  T h{};
  Owned() = default;
  Owned(const Owned &) = delete;
  Owned &operator=(const Owned &) = delete;
  ~Owned() {
    if (h) Destroy(h);
  }
  T *operator&() { return &h; }
  operator T() const { return h; }
};
using LtHandle = Owned<cublasLtHandle_t, cublasLtDestroy>;
using LtDesc = Owned<cublasLtMatmulDesc_t, cublasLtMatmulDescDestroy>;
using LtLayout = Owned<cublasLtMatrixLayout_t, cublasLtMatrixLayoutDestroy>;
using LtPref = Owned<cublasLtMatmulPreference_t, cublasLtMatmulPreferenceDestroy>;
using BlasHandle = Owned<cublasHandle_t, cublasDestroy>;
using SparseHandle = Owned<cusparseHandle_t, cusparseDestroy>;
using SpMat = Owned<cusparseSpMatDescr_t, cusparseDestroySpMat>;
using DnMat = Owned<cusparseDnMatDescr_t, cusparseDestroyDnMat>;

// ---- collecting the attempts -----------------------------------------------------------

struct Best {
  Measurement m;
  std::vector<std::string> refusals;
  const char *what;
  explicit Best(const char *what) : what(what) {}

  void refused(const std::string &config, const std::string &why) {
    m.tried.push_back(config + ": refused by " + why);
    refusals.push_back(config + ": " + why);
    log().debug("{}: {}: refused by {}", what, config, why);
  }
  void timed(const std::string &config, double ms) {
    m.tried.push_back(fmt::format("{}: {:.4f} ms", config, ms));
    m.timed.emplace_back(config, ms);
    log().debug("{}: {}: {:.4f} ms", what, config, ms);
    if (!m.supported || ms < m.ms) m.supported = true, m.ms = ms, m.config = config;
  }
  Measurement finish() {
    if (!m.supported) {
      m.unsupported_reason.clear();
      for (size_t i = 0; i < refusals.size(); ++i) m.unsupported_reason += (i ? "; " : "") + refusals[i];
      if (m.unsupported_reason.empty()) m.unsupported_reason = "no configuration to try";
      log().info("{}: unsupported: {}", what, m.unsupported_reason);
    } else {
      log().info("{}: {:.4f} ms ({})", what, m.ms, m.config);
    }
    return std::move(m);
  }
};

// ---- random inputs ---------------------------------------------------------------------

// Nonzero int8 in [-127, 127].
std::vector<int8_t> random_i8(size_t n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<int8_t> v(n);
  for (size_t i = 0; i < n;) {
    uint64_t r = rng();
    for (int j = 0; j < 8 && i < n; ++j, r >>= 8) {
      int x = int(r & 0xff) - 128;  // [-128, 127]
      if (x == 0 || x == -128) x = 1 + int((r >> 3) & 63);
      v[i++] = int8_t(x);
    }
  }
  return v;
}

// Nonzero fp16 (bit patterns): random sign, magnitude in [0.25, 2).
std::vector<uint16_t> random_f16(size_t n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<uint16_t> v(n);
  for (size_t i = 0; i < n;) {
    uint64_t r = rng();
    for (int j = 0; j < 4 && i < n; ++j, r >>= 16) {
      uint16_t sign = uint16_t(r & 0x8000);
      uint16_t exp = uint16_t(13 + (r >> 10) % 3);  // 2^-2 .. 2^0
      uint16_t mant = uint16_t(r & 0x3ff);
      v[i++] = uint16_t(sign | (exp << 10) | mant);
    }
  }
  return v;
}

// Nonzero bf16 (bit patterns): random sign, magnitude in [0.25, 2).
std::vector<uint16_t> random_bf16(size_t n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<uint16_t> v(n);
  for (size_t i = 0; i < n;) {
    uint64_t r = rng();
    for (int j = 0; j < 4 && i < n; ++j, r >>= 16) {
      uint16_t sign = uint16_t(r & 0x8000);
      uint16_t exp = uint16_t(125 + (r >> 7) % 3);  // 2^-2 .. 2^0
      uint16_t mant = uint16_t(r & 0x7f);
      v[i++] = uint16_t(sign | (exp << 7) | mant);
    }
  }
  return v;
}

size_t dtype_bytes(cudaDataType t) {
  switch (t) {
    case CUDA_R_8I: return 1;
    case CUDA_R_16F: case CUDA_R_16BF: return 2;
    case CUDA_R_32I: case CUDA_R_32F: return 4;
    case CUDA_R_64F: return 8;
    default: return 4;
  }
}
const char *dtype_name(cudaDataType t) {
  switch (t) {
    case CUDA_R_8I: return "s8";
    case CUDA_R_16F: return "f16";
    case CUDA_R_16BF: return "bf16";
    case CUDA_R_32I: return "s32";
    case CUDA_R_32F: return "f32";
    case CUDA_R_64F: return "f64";
    default: return "?";
  }
}

// A random nonzero device matrix of `n` elements of type t (s8, f16 or bf16; anything else
// is zero-filled, as for outputs).
llvm::Expected<DeviceBuffer> random_device(cudaDataType t, size_t n, uint64_t seed) {
  if (t == CUDA_R_8I) {
    auto h = random_i8(n, seed);
    return DeviceBuffer::upload(h.data(), n);
  }
  if (t == CUDA_R_16F) {
    auto h = random_f16(n, seed);
    return DeviceBuffer::upload(h.data(), n * 2);
  }
  if (t == CUDA_R_16BF) {
    auto h = random_bf16(n, seed);
    return DeviceBuffer::upload(h.data(), n * 2);
  }
  auto b = DeviceBuffer::alloc(n * dtype_bytes(t));
  if (!b) return b.takeError();
  MAGICUBE_CUDA_TRY(cudaMemset(b->get(), 0, b->bytes()));
  MAGICUBE_CUDA_TRY(cudaDeviceSynchronize());
  return b;
}

// ---- dense GEMM ------------------------------------------------------------------------

// Storage of the logical C[M x N] = A[M x K] x B[K x N]: row-major or column-major each.
struct Storage {
  bool a_row, b_row, c_row;
  bool order_row_api;  // describe all three with CUBLASLT_ORDER_ROW instead of transposes
};

std::vector<Storage> all_storages(bool with_order_row) {
  std::vector<Storage> s;
  for (int a = 1; a >= 0; --a)
    for (int b = 0; b <= 1; ++b)
      for (int c = 0; c <= 1; ++c) s.push_back({bool(a), bool(b), bool(c), false});
  if (with_order_row) s.push_back({true, true, true, true});
  return s;
}

// The column-major BLAS call computing a Storage.
struct ColMajorCall {
  cublasOperation_t ta, tb;
  int64_t m, n, k;
  int64_t a_rows, a_cols, lda;  // the stored matrix passed as BLAS A (before op)
  int64_t b_rows, b_cols, ldb;
  int64_t ldc;
  bool a_is_A;  // BLAS A is our A (false: our B, computing C^T = B^T A^T)
};

ColMajorCall col_major_call(const Storage &s, int64_t M, int64_t N, int64_t K) {
  ColMajorCall c{};
  c.k = K;
  if (!s.c_row) {  // C col-major: C = A B
    c.m = M, c.n = N, c.ldc = M, c.a_is_A = true;
    if (s.a_row) c.ta = CUBLAS_OP_T, c.a_rows = K, c.a_cols = M, c.lda = K;
    else c.ta = CUBLAS_OP_N, c.a_rows = M, c.a_cols = K, c.lda = M;
    if (s.b_row) c.tb = CUBLAS_OP_T, c.b_rows = N, c.b_cols = K, c.ldb = N;
    else c.tb = CUBLAS_OP_N, c.b_rows = K, c.b_cols = N, c.ldb = K;
  } else {  // C row-major = C^T col-major (N x M) = B^T A^T
    c.m = N, c.n = M, c.ldc = N, c.a_is_A = false;
    if (s.b_row) c.ta = CUBLAS_OP_N, c.a_rows = N, c.a_cols = K, c.lda = N;
    else c.ta = CUBLAS_OP_T, c.a_rows = K, c.a_cols = N, c.lda = K;
    if (s.a_row) c.tb = CUBLAS_OP_N, c.b_rows = K, c.b_cols = M, c.ldb = K;
    else c.tb = CUBLAS_OP_T, c.b_rows = M, c.b_cols = K, c.ldb = M;
  }
  return c;
}

std::string storage_name(const Storage &s, const ColMajorCall &c) {
  auto rc = [](bool row) { return row ? "row" : "col"; };
  std::string n = fmt::format("A {}, B {}, C {}", rc(s.a_row), rc(s.b_row), rc(s.c_row));
  if (s.order_row_api) return n + " (ORDER_ROW)";
  return n + fmt::format(" ({}{}{})", c.ta == CUBLAS_OP_T ? 'T' : 'N', c.tb == CUBLAS_OP_T ? 'T' : 'N',
                         c.a_is_A ? "" : ", as C^T = B^T A^T");
}

struct DenseProblem {
  const char *what;
  int64_t M, N, K;
  cudaDataType ab, c;
  cublasComputeType_t compute;
  cudaDataType scale;
  const void *alpha, *beta;  // host, of type `scale`
};

struct DenseBuffers {
  DeviceBuffer a, b, c, ws;
};

llvm::Expected<DenseBuffers> dense_buffers(const DenseProblem &p, const BaselineOptions &opts) {
  DenseBuffers d;
  auto a = random_device(p.ab, size_t(p.M * p.K), opts.seed);
  if (!a) return a.takeError();
  auto b = random_device(p.ab, size_t(p.K * p.N), opts.seed + 1);
  if (!b) return b.takeError();
  auto c = random_device(p.c, size_t(p.M * p.N), 0);  // zeroed
  if (!c) return c.takeError();
  auto ws = DeviceBuffer::alloc(opts.workspace_bytes);
  if (!ws) return ws.takeError();
  d.a = std::move(*a), d.b = std::move(*b), d.c = std::move(*c), d.ws = std::move(*ws);
  return d;
}

// One storage's cuBLASLt call: its descriptors and which buffers it passes as BLAS A and B.
struct LtForm {
  ColMajorCall c{};
  LtDesc desc;
  LtLayout la, lb, lc;
  const void *pa = nullptr, *pb = nullptr;
};

llvm::Expected<std::unique_ptr<LtForm>> lt_form(const DenseProblem &p, const DenseBuffers &d, const Storage &s) {
  auto f = std::make_unique<LtForm>();
  ColMajorCall &c = f->c;
  c = col_major_call(s, p.M, p.N, p.K);
  if (s.order_row_api) {
    cublasLtOrder_t row = CUBLASLT_ORDER_ROW;
    MAGICUBE_BLAS_TRY(cublasLtMatrixLayoutCreate(&f->la, p.ab, p.M, p.K, p.K));
    MAGICUBE_BLAS_TRY(cublasLtMatrixLayoutCreate(&f->lb, p.ab, p.K, p.N, p.N));
    MAGICUBE_BLAS_TRY(cublasLtMatrixLayoutCreate(&f->lc, p.c, p.M, p.N, p.N));
    for (cublasLtMatrixLayout_t l : {f->la.h, f->lb.h, f->lc.h})
      MAGICUBE_BLAS_TRY(cublasLtMatrixLayoutSetAttribute(l, CUBLASLT_MATRIX_LAYOUT_ORDER, &row, sizeof(row)));
    f->pa = d.a.get(), f->pb = d.b.get();
    c.ta = c.tb = CUBLAS_OP_N;
  } else {
    MAGICUBE_BLAS_TRY(cublasLtMatrixLayoutCreate(&f->la, p.ab, c.a_rows, c.a_cols, c.lda));
    MAGICUBE_BLAS_TRY(cublasLtMatrixLayoutCreate(&f->lb, p.ab, c.b_rows, c.b_cols, c.ldb));
    MAGICUBE_BLAS_TRY(cublasLtMatrixLayoutCreate(&f->lc, p.c, c.m, c.n, c.ldc));
    f->pa = c.a_is_A ? d.a.get() : d.b.get();
    f->pb = c.a_is_A ? d.b.get() : d.a.get();
  }
  MAGICUBE_BLAS_TRY(cublasLtMatmulDescCreate(&f->desc, p.compute, p.scale));
  MAGICUBE_BLAS_TRY(cublasLtMatmulDescSetAttribute(f->desc, CUBLASLT_MATMUL_DESC_TRANSA, &c.ta, sizeof(c.ta)));
  MAGICUBE_BLAS_TRY(cublasLtMatmulDescSetAttribute(f->desc, CUBLASLT_MATMUL_DESC_TRANSB, &c.tb, sizeof(c.tb)));
  return f;
}

// A cuBLASLt configuration that ran, kept whole so that it can run again: the handle, its
// storage's descriptors, the algorithm, alpha and beta (copied: the problem's may be locals of
// the measuring call) and the operands (shared with the other forms).
class LtReplay final : public DenseReplay {
 public:
  LtReplay(const DenseProblem &p, std::shared_ptr<LtHandle> lt, std::shared_ptr<LtForm> form,
           const cublasLtMatmulAlgo_t &algo, std::shared_ptr<DenseBuffers> d)
      : lt_(std::move(lt)), form_(std::move(form)), algo_(algo), d_(std::move(d)) {
    const size_t bytes = std::min(sizeof(alpha_), dtype_bytes(p.scale));
    std::memcpy(alpha_, p.alpha, bytes);
    std::memcpy(beta_, p.beta, bytes);
  }
  cublasStatus_t call(cudaStream_t stream) {
    return cublasLtMatmul(*lt_, form_->desc, alpha_, form_->pa, form_->la, form_->pb, form_->lb, beta_, d_->c.get(),
                          form_->lc, d_->c.get(), form_->lc, &algo_, d_->ws.get(), d_->ws.bytes(), stream);
  }
  llvm::Error enqueue(cudaStream_t stream) override {
    cublasStatus_t st = call(stream);
    if (st != CUBLAS_STATUS_SUCCESS) return make_error(blas_status("cublasLtMatmul", st) + take_lib_message());
    return llvm::Error::success();
  }

 private:
  alignas(8) unsigned char alpha_[8] = {}, beta_[8] = {};
  std::shared_ptr<LtHandle> lt_;
  std::shared_ptr<LtForm> form_;
  cublasLtMatmulAlgo_t algo_;
  std::shared_ptr<DenseBuffers> d_;
};

// Every storage x top algorithms of cuBLASLt, into `best`; with opts.keep_winner, the fastest
// of them (its replay) into `winner`.
llvm::Error lt_try_all(const DenseProblem &p, const std::shared_ptr<DenseBuffers> &d, cudaStream_t stream,
                       const BaselineOptions &opts, Best &best, std::shared_ptr<DenseReplay> &winner) {
  auto lt = std::make_shared<LtHandle>();
  MAGICUBE_BLAS_TRY(cublasLtCreate(&*lt));
  double winner_ms = std::numeric_limits<double>::infinity();
  for (const Storage &s : all_storages(true)) {
    auto made = lt_form(p, *d, s);
    if (!made) return made.takeError();
    std::shared_ptr<LtForm> form = std::move(*made);
    const ColMajorCall &c = form->c;
    LtPref pref;
    uint64_t ws_bytes = d->ws.bytes();
    MAGICUBE_BLAS_TRY(cublasLtMatmulPreferenceCreate(&pref));
    MAGICUBE_BLAS_TRY(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws_bytes,
                                                           sizeof(ws_bytes)));

    std::string name = "cuBLASLt " + storage_name(s, c);
    std::vector<cublasLtMatmulHeuristicResult_t> heur(size_t(std::max(1, opts.max_algos)));
    int returned = 0;
    take_lib_message();
    cublasStatus_t st = cublasLtMatmulAlgoGetHeuristic(*lt, form->desc, form->la, form->lb, form->lc, form->lc, pref,
                                                       int(heur.size()), heur.data(), &returned);
    if (st != CUBLAS_STATUS_SUCCESS) {
      if (!is_refusal(st)) return make_error(blas_status("cublasLtMatmulAlgoGetHeuristic", st) + take_lib_message());
      best.refused(name, blas_status("cublasLtMatmulAlgoGetHeuristic", st) + take_lib_message());
      continue;
    }
    if (returned == 0) {
      best.refused(name, "cublasLtMatmulAlgoGetHeuristic: no algorithm" + take_lib_message());
      continue;
    }
    for (int i = 0; i < returned; ++i) {
      const cublasLtMatmulHeuristicResult_t &h = heur[size_t(i)];
      int32_t algo_id = -1;
      uint32_t tile = 0;
      size_t written = 0;
      cublasLtMatmulAlgoConfigGetAttribute(&h.algo, CUBLASLT_ALGO_CONFIG_ID, &algo_id, sizeof(algo_id), &written);
      cublasLtMatmulAlgoConfigGetAttribute(&h.algo, CUBLASLT_ALGO_CONFIG_TILE_ID, &tile, sizeof(tile), &written);
      std::string cfg = fmt::format("{}, heuristic {}/{} (algo id {}, tile {})", name, i + 1, returned, algo_id, tile);
      if (h.state != CUBLAS_STATUS_SUCCESS || h.workspaceSize > ws_bytes) {
        best.refused(cfg, blas_status("cublasLtMatmulAlgoGetHeuristic result", h.state));
        continue;
      }
      LtReplay run(p, lt, form, h.algo, d);
      take_lib_message();
      st = run.call(stream);
      if (st != CUBLAS_STATUS_SUCCESS) {
        if (!is_refusal(st)) return make_error(blas_status("cublasLtMatmul", st) + take_lib_message());
        best.refused(cfg, blas_status("cublasLtMatmul", st) + take_lib_message());
        continue;
      }
      auto ms = median_ms(stream, [&]() -> llvm::Error { return run.enqueue(stream); }, opts.timing);
      if (!ms) return ms.takeError();
      best.timed(cfg, *ms);
      if (opts.keep_winner && *ms < winner_ms)
        winner_ms = *ms, winner = std::make_shared<LtReplay>(p, lt, form, h.algo, d);
    }
  }
  return llvm::Error::success();
}

// cublasGemmEx over the 8 storages (transposes only), into `best`.
llvm::Error gemmex_try_all(const DenseProblem &p, const DenseBuffers &d, cudaStream_t stream,
                           const BaselineOptions &opts, Best &best) {
  if (p.M > INT32_MAX || p.N > INT32_MAX || p.K > INT32_MAX) return llvm::Error::success();
  BlasHandle h;
  MAGICUBE_BLAS_TRY(cublasCreate(&h));
  MAGICUBE_BLAS_TRY(cublasSetStream(h, stream));
  MAGICUBE_BLAS_TRY(cublasSetWorkspace(h, d.ws.get(), d.ws.bytes()));
  for (const Storage &s : all_storages(false)) {
    ColMajorCall c = col_major_call(s, p.M, p.N, p.K);
    std::string cfg = "cublasGemmEx " + storage_name(s, c);
    const void *pa = c.a_is_A ? d.a.get() : d.b.get();
    const void *pb = c.a_is_A ? d.b.get() : d.a.get();
    auto run = [&]() -> cublasStatus_t {
      return cublasGemmEx(h, c.ta, c.tb, int(c.m), int(c.n), int(c.k), p.alpha, pa, p.ab, int(c.lda), pb, p.ab,
                          int(c.ldb), p.beta, d.c.get(), p.c, int(c.ldc), p.compute, CUBLAS_GEMM_DEFAULT);
    };
    take_lib_message();
    cublasStatus_t st = run();
    if (st != CUBLAS_STATUS_SUCCESS) {
      if (!is_refusal(st)) return make_error(blas_status("cublasGemmEx", st) + take_lib_message());
      best.refused(cfg, blas_status("cublasGemmEx", st) + take_lib_message());
      continue;
    }
    auto ms = median_ms(stream, [&]() -> llvm::Error {
      cublasStatus_t rs = run();
      if (rs != CUBLAS_STATUS_SUCCESS) return make_error(blas_status("cublasGemmEx", rs) + take_lib_message());
      return llvm::Error::success();
    }, opts.timing);
    if (!ms) return ms.takeError();
    best.timed(cfg, *ms);
  }
  return llvm::Error::success();
}

llvm::Error check_dims(const char *what, int64_t M, int64_t N, int64_t K) {
  if (M <= 0 || N <= 0 || K <= 0)
    return make_error(llvm::Twine(what) + ": bad shape M=" + llvm::Twine(M) + " N=" + llvm::Twine(N) +
                      " K=" + llvm::Twine(K));
  return llvm::Error::success();
}

llvm::Expected<Measurement> dense(const DenseProblem &p, bool with_gemmex, const BaselineOptions &opts) {
  if (auto e = check_dims(p.what, p.M, p.N, p.K)) return e;
  if (auto e = require_cuda_device()) return e;
  install_loggers();
  Stream stream;
  if (auto e = stream.create()) return e;
  auto made = dense_buffers(p, opts);
  if (!made) return made.takeError();
  auto d = std::make_shared<DenseBuffers>(std::move(*made));
  Best best(p.what);
  std::shared_ptr<DenseReplay> lt_winner;
  if (auto e = lt_try_all(p, d, stream.get(), opts, best, lt_winner)) return e;
  if (with_gemmex)
    if (auto e = gemmex_try_all(p, *d, stream.get(), opts, best)) return e;
  // Kept only where a cuBLASLt configuration won (not cublasGemmEx). Its later calls run on
  // other streams: this one's work on the operands is done first.
  if (lt_winner && best.m.config.rfind("cuBLASLt ", 0) == 0) {
    MAGICUBE_CUDA_TRY(cudaStreamSynchronize(stream.get()));
    best.m.replay = std::move(lt_winner);
  }
  return best.finish();
}

}  // namespace

llvm::Expected<Measurement> dense_cublaslt_i8(int64_t M, int64_t N, int64_t K, const BaselineOptions &opts) {
  static const int32_t alpha = 1, beta = 0;
  DenseProblem p{"dense cuBLASLt s8->s32", M, N, K, CUDA_R_8I, CUDA_R_32I, CUBLAS_COMPUTE_32I, CUDA_R_32I,
                 &alpha, &beta};
  return dense(p, false, opts);
}

llvm::Expected<Measurement> dense_cublaslt_i8_i8out(int64_t M, int64_t N, int64_t K, float scale,
                                                    const BaselineOptions &opts) {
  const float alpha = scale, beta = 0.0f;
  DenseProblem p{"dense cuBLASLt s8->s8", M, N, K, CUDA_R_8I, CUDA_R_8I, CUBLAS_COMPUTE_32I, CUDA_R_32F,
                 &alpha, &beta};
  return dense(p, false, opts);
}

llvm::Expected<Measurement> dense_cublas_f16(int64_t M, int64_t N, int64_t K, const BaselineOptions &opts) {
  static const float alpha = 1.0f, beta = 0.0f;
  DenseProblem p{"dense cuBLAS f16 (f32 acc)", M, N, K, CUDA_R_16F, CUDA_R_16F, CUBLAS_COMPUTE_32F, CUDA_R_32F,
                 &alpha, &beta};
  return dense(p, true, opts);
}

llvm::Expected<Measurement> dense_cublas_bf16(int64_t M, int64_t N, int64_t K, const BaselineOptions &opts) {
  static const float alpha = 1.0f, beta = 0.0f;
  DenseProblem p{"dense cuBLAS bf16 (f32 acc)", M, N, K, CUDA_R_16BF, CUDA_R_16BF, CUBLAS_COMPUTE_32F, CUDA_R_32F,
                 &alpha, &beta};
  return dense(p, true, opts);
}

// ---- vector patterns -------------------------------------------------------------------

VectorPattern random_vector_pattern(int64_t rows, int64_t cols, int v, double sparsity, uint64_t seed) {
  VectorPattern p;
  p.rows = rows, p.cols = cols, p.v = std::max(1, v);
  int64_t nb = (rows + p.v - 1) / p.v;
  double density = std::clamp(1.0 - sparsity, 0.0, 1.0);
  int64_t per_block = std::min<int64_t>(cols, int64_t(density * double(cols) + 0.5));
  std::mt19937_64 rng(seed);
  std::vector<int32_t> perm(size_t(std::max<int64_t>(cols, 0)));
  p.block_ptr.reserve(size_t(nb + 1));
  p.block_ptr.push_back(0);
  p.col.reserve(size_t(nb * per_block));
  for (int64_t b = 0; b < nb; ++b) {
    std::iota(perm.begin(), perm.end(), 0);
    for (int64_t i = 0; i < per_block; ++i) {  // partial Fisher-Yates
      std::uniform_int_distribution<int64_t> pick(i, cols - 1);
      std::swap(perm[size_t(i)], perm[size_t(pick(rng))]);
    }
    std::sort(perm.begin(), perm.begin() + per_block);
    p.col.insert(p.col.end(), perm.begin(), perm.begin() + per_block);
    p.block_ptr.push_back(int64_t(p.col.size()));
  }
  return p;
}

llvm::Error check_pattern(const VectorPattern &p, int64_t M, int64_t K) {
  if (p.rows != M || p.cols != K)
    return make_error("pattern: shape " + llvm::Twine(p.rows) + " x " + llvm::Twine(p.cols) + ", expected M x K = " +
                      llvm::Twine(M) + " x " + llvm::Twine(K));
  if (p.v < 1) return make_error("pattern: V = " + llvm::Twine(p.v) + ", expected >= 1");
  int64_t nb = (p.rows + p.v - 1) / p.v;
  if (p.num_blocks() != nb)
    return make_error("pattern: block_ptr has " + llvm::Twine(p.block_ptr.size()) + " entries, expected " +
                      llvm::Twine(nb + 1) + " (ceil(M / V) + 1)");
  if (p.block_ptr[0] != 0 || p.block_ptr.back() != p.num_vectors())
    return make_error("pattern: block_ptr must run from 0 to the number of vectors (" +
                      llvm::Twine(p.num_vectors()) + ")");
  for (int64_t b = 0; b < nb; ++b) {
    if (p.block_ptr[b + 1] < p.block_ptr[b]) return make_error("pattern: block_ptr decreases at row-block " + llvm::Twine(b));
    for (int64_t j = p.block_ptr[b]; j < p.block_ptr[b + 1]; ++j) {
      if (p.col[j] < 0 || p.col[j] >= p.cols)
        return make_error("pattern: column " + llvm::Twine(p.col[j]) + " of row-block " + llvm::Twine(b) +
                          " is out of range [0, " + llvm::Twine(p.cols) + ")");
      if (j > p.block_ptr[b] && p.col[j] <= p.col[j - 1])
        return make_error("pattern: columns of row-block " + llvm::Twine(b) + " are not strictly increasing");
    }
  }
  return llvm::Error::success();
}

llvm::Expected<BlockedEllPattern> to_blocked_ell(const VectorPattern &p, int64_t block) {
  if (block < 1 || p.rows % block || p.cols % block)
    return make_error("blocked-ell: M=" + llvm::Twine(p.rows) + " and K=" + llvm::Twine(p.cols) +
                      " must be multiples of the block size " + llvm::Twine(block));
  BlockedEllPattern e;
  e.rows = p.rows, e.cols = p.cols, e.block = block;
  int64_t brows = p.rows / block;
  std::vector<std::vector<int32_t>> cols(static_cast<size_t>(brows));
  for (int64_t b = 0; b < p.num_blocks(); ++b) {
    int64_t r0 = b * p.v, r1 = std::min(p.rows, r0 + p.v);  // rows [r0, r1)
    if (r0 >= r1) continue;
    for (int64_t br = r0 / block; br <= (r1 - 1) / block; ++br)
      for (int64_t j = p.block_ptr[b]; j < p.block_ptr[b + 1]; ++j) cols[size_t(br)].push_back(int32_t(p.col[j] / block));
  }
  for (auto &c : cols) {
    std::sort(c.begin(), c.end());
    c.erase(std::unique(c.begin(), c.end()), c.end());
    e.width = std::max<int64_t>(e.width, int64_t(c.size()));
    e.stored_blocks += int64_t(c.size());
  }
  e.col_ind.assign(size_t(brows * e.width), -1);
  for (int64_t br = 0; br < brows; ++br)
    std::copy(cols[size_t(br)].begin(), cols[size_t(br)].end(), e.col_ind.begin() + br * e.width);
  return e;
}

const char *to_string(SpDtype t) { return t == SpDtype::f16 ? "f16" : "s8"; }

namespace {

// ---- cuSPARSE --------------------------------------------------------------------------

// C type and compute type of one SpMM configuration.
struct SpTypes {
  cudaDataType ab, c, compute;
};

// alpha = 1, beta = 0 in the compute type.
struct Scalars {
  float f1 = 1.0f, f0 = 0.0f;
  int32_t i1 = 1, i0 = 0;
  double d1 = 1.0, d0 = 0.0;
  const void *one(cudaDataType t) const { return t == CUDA_R_32I ? (const void *)&i1 : t == CUDA_R_64F ? (const void *)&d1 : &f1; }
  const void *zero(cudaDataType t) const { return t == CUDA_R_32I ? (const void *)&i0 : t == CUDA_R_64F ? (const void *)&d0 : &f0; }
};

// Makes the sparse descriptor for one attempt (fresh each time: preprocess data lives in it).
using MakeSpMat = llvm::function_ref<llvm::Error(SpMat &)>;

// Tries every (types, B/C order, algorithm) on one sparse matrix; times the accepted ones.
llvm::Error spmm_try_all(cusparseHandle_t h, cudaStream_t stream, int64_t M, int64_t K, int64_t N,
                         const std::string &prefix, MakeSpMat make_a, const std::vector<SpTypes> &types,
                         const std::vector<std::pair<cusparseSpMMAlg_t, const char *>> &algs, bool preprocess,
                         const BaselineOptions &opts, Best &best) {
  Scalars sc;
  for (const SpTypes &t : types) {
    auto b = random_device(t.ab, size_t(K * N), opts.seed + 7);
    if (!b) return b.takeError();
    auto c = random_device(t.c, size_t(M * N), 0);
    if (!c) return c.takeError();
    for (cusparseOrder_t order : {CUSPARSE_ORDER_ROW, CUSPARSE_ORDER_COL}) {
      bool row = order == CUSPARSE_ORDER_ROW;
      for (auto [alg, alg_name] : algs) {
        std::string cfg = fmt::format("{}, A/B {} C {} compute {}, B/C {}-major, {}", prefix, dtype_name(t.ab),
                                      dtype_name(t.c), dtype_name(t.compute), row ? "row" : "col", alg_name);
        SpMat a;
        if (auto e = make_a(a)) return e;
        DnMat mb, mc;
        MAGICUBE_SPARSE_TRY(cusparseCreateDnMat(&mb, K, N, row ? N : K, b->get(), t.ab, order));
        MAGICUBE_SPARSE_TRY(cusparseCreateDnMat(&mc, M, N, row ? N : M, c->get(), t.c, order));
        const void *alpha = sc.one(t.compute), *beta = sc.zero(t.compute);
        const auto op = CUSPARSE_OPERATION_NON_TRANSPOSE;

        size_t ws_bytes = 0;
        take_lib_message();
        cusparseStatus_t st = cusparseSpMM_bufferSize(h, op, op, alpha, a, mb, beta, mc, t.compute, alg, &ws_bytes);
        if (st != CUSPARSE_STATUS_SUCCESS) {
          if (!is_refusal(st)) return make_error(sparse_status("cusparseSpMM_bufferSize", st) + take_lib_message());
          best.refused(cfg, sparse_status("cusparseSpMM_bufferSize", st) + take_lib_message());
          continue;
        }
        auto ws = DeviceBuffer::alloc(ws_bytes);
        if (!ws) return ws.takeError();
        if (preprocess) {
          st = cusparseSpMM_preprocess(h, op, op, alpha, a, mb, beta, mc, t.compute, alg, ws->get());
          if (st != CUSPARSE_STATUS_SUCCESS) {
            if (!is_refusal(st)) return make_error(sparse_status("cusparseSpMM_preprocess", st) + take_lib_message());
            best.refused(cfg, sparse_status("cusparseSpMM_preprocess", st) + take_lib_message());
            continue;
          }
        }
        auto run = [&] { return cusparseSpMM(h, op, op, alpha, a, mb, beta, mc, t.compute, alg, ws->get()); };
        st = run();
        if (st != CUSPARSE_STATUS_SUCCESS) {
          if (!is_refusal(st)) return make_error(sparse_status("cusparseSpMM", st) + take_lib_message());
          best.refused(cfg, sparse_status("cusparseSpMM", st) + take_lib_message());
          continue;
        }
        MAGICUBE_CUDA_TRY(cudaStreamSynchronize(stream));
        auto ms = median_ms(stream, [&]() -> llvm::Error {
          cusparseStatus_t rs = run();
          if (rs != CUSPARSE_STATUS_SUCCESS) return make_error(sparse_status("cusparseSpMM", rs) + take_lib_message());
          return llvm::Error::success();
        }, opts.timing);
        if (!ms) return ms.takeError();
        best.timed(cfg, *ms);
      }
    }
  }
  return llvm::Error::success();
}

llvm::Error sparse_handle(SparseHandle &h, cudaStream_t stream) {
  MAGICUBE_SPARSE_TRY(cusparseCreate(&h));
  MAGICUBE_SPARSE_TRY(cusparseSetStream(h, stream));
  return llvm::Error::success();
}

}  // namespace

llvm::Expected<Measurement> cusparse_spmm_blocked_ell(int64_t M, int64_t K, int64_t N, const VectorPattern &pattern,
                                                      int64_t block, SpDtype dtype, const BaselineOptions &opts) {
  std::string what = fmt::format("cuSPARSE Blocked-ELL {} block {}", to_string(dtype), block);
  if (auto e = check_dims("cusparse_spmm_blocked_ell", M, N, K)) return e;
  if (auto e = check_pattern(pattern, M, K)) return e;
  Best best(what.c_str());
  if (block < 1 || M % block || K % block) {
    best.refused(what, fmt::format("M={} and K={} must be multiples of the block size", M, K));
    return best.finish();
  }
  if (auto e = require_cuda_device()) return e;
  install_loggers();

  auto ell = to_blocked_ell(pattern, block);
  if (!ell) return ell.takeError();
  if (ell->width == 0) {
    best.refused(what, "the matrix has no nonzero");
    return best.finish();
  }
  int64_t ell_cols = ell->width * block;

  // Values: M x ell_cols row-major; random nonzero where a vector is, zero elsewhere in a
  // stored block (the exact Blocked-ELL form of the vector-sparse matrix).
  cudaDataType vt = dtype == SpDtype::f16 ? CUDA_R_16F : CUDA_R_8I;
  size_t elt = dtype_bytes(vt);
  std::vector<uint8_t> values(size_t(M * ell_cols) * elt, 0);
  {
    size_t nnz = 0;
    for (int64_t b = 0; b < pattern.num_blocks(); ++b)
      nnz += size_t(pattern.block_ptr[b + 1] - pattern.block_ptr[b]) * size_t(pattern.v);
    std::vector<int8_t> r8 = dtype == SpDtype::i8 ? random_i8(nnz, opts.seed + 3) : std::vector<int8_t>();
    std::vector<uint16_t> r16 = dtype == SpDtype::f16 ? random_f16(nnz, opts.seed + 3) : std::vector<uint16_t>();
    // Stored blocks per block-row: col_ind is sorted there, then padded with -1.
    std::vector<int64_t> row_len(size_t(M / block), 0);
    for (int64_t br = 0; br < M / block; ++br)
      for (int64_t s = 0; s < ell->width && ell->col_ind[size_t(br * ell->width + s)] >= 0; ++s) ++row_len[size_t(br)];
    size_t next = 0;
    for (int64_t b = 0; b < pattern.num_blocks(); ++b) {
      for (int64_t j = pattern.block_ptr[b]; j < pattern.block_ptr[b + 1]; ++j) {
        int32_t c = pattern.col[j];
        for (int64_t r = b * pattern.v; r < std::min(M, (b + 1) * pattern.v); ++r) {
          int64_t br = r / block;
          auto first = ell->col_ind.begin() + br * ell->width, last = first + row_len[size_t(br)];
          int64_t slot = std::lower_bound(first, last, c / int32_t(block)) - first;
          size_t at = size_t(r * ell_cols + slot * block + c % block) * elt;
          if (dtype == SpDtype::i8) values[at] = uint8_t(r8[next++]);
          else std::memcpy(&values[at], &r16[next++], 2);
        }
      }
    }
  }
  auto d_values = DeviceBuffer::upload(values.data(), values.size());
  if (!d_values) return d_values.takeError();
  auto d_cols = DeviceBuffer::upload(ell->col_ind.data(), ell->col_ind.size() * sizeof(int32_t));
  if (!d_cols) return d_cols.takeError();
  values.clear();
  values.shrink_to_fit();

  Stream stream;
  if (auto e = stream.create()) return e;
  SparseHandle h;
  if (auto e = sparse_handle(h, stream.get())) return e;

  std::vector<SpTypes> types;
  if (dtype == SpDtype::f16) types = {{CUDA_R_16F, CUDA_R_16F, CUDA_R_32F}};
  else types = {{CUDA_R_8I, CUDA_R_32I, CUDA_R_32I}, {CUDA_R_8I, CUDA_R_8I, CUDA_R_32I}, {CUDA_R_8I, CUDA_R_32F, CUDA_R_32F}};

  std::string prefix = fmt::format("Blocked-ELL block {} (width {} blocks, {} of {} blocks stored)", block,
                                   ell->width, ell->stored_blocks, (M / block) * (K / block));
  auto make_a = [&](SpMat &a) -> llvm::Error {
    MAGICUBE_SPARSE_TRY(cusparseCreateBlockedEll(&a, M, K, block, ell_cols, d_cols->get(), d_values->get(),
                                                 CUSPARSE_INDEX_32I, CUSPARSE_INDEX_BASE_ZERO, vt));
    return llvm::Error::success();
  };
  if (auto e = spmm_try_all(h, stream.get(), M, K, N, prefix, make_a, types,
                            {{CUSPARSE_SPMM_BLOCKED_ELL_ALG1, "BLOCKED_ELL_ALG1"}}, false, opts, best))
    return e;
  return best.finish();
}

llvm::Expected<Measurement> cusparse_spmm_blocked_ell_smallest(int64_t M, int64_t K, int64_t N,
                                                               const VectorPattern &pattern, SpDtype dtype,
                                                               const std::vector<int64_t> &blocks,
                                                               const BaselineOptions &opts) {
  Measurement all;
  std::string reasons;
  for (int64_t b : blocks) {
    auto m = cusparse_spmm_blocked_ell(M, K, N, pattern, b, dtype, opts);
    if (!m) return m.takeError();
    all.tried.insert(all.tried.end(), m->tried.begin(), m->tried.end());
    if (m->supported) {
      all.supported = true, all.ms = m->ms, all.config = m->config;
      return all;
    }
    reasons += (reasons.empty() ? "" : "; ") + m->unsupported_reason;
  }
  all.unsupported_reason = reasons.empty() ? "no block size to try" : reasons;
  return all;
}

llvm::Expected<Measurement> cusparse_spmm_csr_f16(int64_t M, int64_t K, int64_t N, const VectorPattern &pattern,
                                                  const BaselineOptions &opts) {
  if (auto e = check_dims("cusparse_spmm_csr_f16", M, N, K)) return e;
  if (auto e = check_pattern(pattern, M, K)) return e;
  if (auto e = require_cuda_device()) return e;
  install_loggers();

  // Scalar CSR: vector j of row-block b is V nonzeros, one in each of its rows.
  std::vector<int64_t> row_ptr(size_t(M + 1), 0);
  std::vector<int32_t> col_idx;
  for (int64_t b = 0; b < pattern.num_blocks(); ++b)
    for (int64_t r = b * pattern.v; r < std::min(M, (b + 1) * pattern.v); ++r) {
      col_idx.insert(col_idx.end(), pattern.col.begin() + pattern.block_ptr[b], pattern.col.begin() + pattern.block_ptr[b + 1]);
      row_ptr[size_t(r + 1)] = int64_t(col_idx.size());
    }
  int64_t nnz = int64_t(col_idx.size());
  bool idx64 = nnz > INT32_MAX;
  DeviceBuffer d_ptr, d_cols, d_vals;
  {
    llvm::Expected<DeviceBuffer> p = idx64 ? DeviceBuffer::upload(row_ptr.data(), row_ptr.size() * 8) : [&] {
      std::vector<int32_t> p32(row_ptr.begin(), row_ptr.end());
      return DeviceBuffer::upload(p32.data(), p32.size() * 4);
    }();
    if (!p) return p.takeError();
    d_ptr = std::move(*p);
    llvm::Expected<DeviceBuffer> c = idx64 ? [&] {
      std::vector<int64_t> c64(col_idx.begin(), col_idx.end());
      return DeviceBuffer::upload(c64.data(), c64.size() * 8);
    }() : DeviceBuffer::upload(col_idx.data(), col_idx.size() * 4);
    if (!c) return c.takeError();
    d_cols = std::move(*c);
    auto v = random_device(CUDA_R_16F, size_t(nnz), opts.seed + 3);
    if (!v) return v.takeError();
    d_vals = std::move(*v);
  }

  Stream stream;
  if (auto e = stream.create()) return e;
  SparseHandle h;
  if (auto e = sparse_handle(h, stream.get())) return e;

  Best best("cuSPARSE CSR f16");
  cusparseIndexType_t it = idx64 ? CUSPARSE_INDEX_64I : CUSPARSE_INDEX_32I;
  auto make_a = [&](SpMat &a) -> llvm::Error {
    MAGICUBE_SPARSE_TRY(cusparseCreateCsr(&a, M, K, nnz, d_ptr.get(), d_cols.get(), d_vals.get(), it, it,
                                          CUSPARSE_INDEX_BASE_ZERO, CUDA_R_16F));
    return llvm::Error::success();
  };
  std::string prefix = fmt::format("CSR ({} nonzeros)", nnz);
  if (auto e = spmm_try_all(h, stream.get(), M, K, N, prefix, make_a, {{CUDA_R_16F, CUDA_R_16F, CUDA_R_32F}},
                            {{CUSPARSE_SPMM_ALG_DEFAULT, "ALG_DEFAULT"},
                             {CUSPARSE_SPMM_CSR_ALG1, "CSR_ALG1"},
                             {CUSPARSE_SPMM_CSR_ALG2, "CSR_ALG2"},
                             {CUSPARSE_SPMM_CSR_ALG3, "CSR_ALG3"}},
                            true, opts, best))
    return e;
  return best.finish();
}

std::string library_versions() {
  size_t lt = cublasLtGetVersion();
  int sp_major = 0, sp_minor = 0, sp_patch = 0;
  cusparseGetProperty(MAJOR_VERSION, &sp_major);
  cusparseGetProperty(MINOR_VERSION, &sp_minor);
  cusparseGetProperty(PATCH_LEVEL, &sp_patch);
  return fmt::format("cuBLASLt {}.{}.{}, cuSPARSE {}.{}.{}", lt / 10000, (lt / 100) % 100, lt % 100, sp_major,
                     sp_minor, sp_patch);
}

}  // namespace magicube::bench

// ---- cuSPARSELt, loaded at run time ------------------------------------------------------
// The bench must build and run without cuSPARSELt, so it is dlopen'ed and the few types and
// functions used here are declared as the public cusparseLt.h of cuSPARSELt 0.10 documents
// them (cuSPARSELt's own header is not needed to build). Its opaque structs are 512 bytes
// (alignas 16) in 0.10 and 1024 in older releases: each is given 4096 bytes here, and
// releases older than 0.7 (other enum values, other signatures) are refused by version.

namespace magicube::bench {

namespace {

struct alignas(16) LtOpaque {  // cusparseLtHandle_t, cusparseLtMatDescriptor_t, ...
  uint8_t data[4096];
};
// cusparseComputeType (0.7 and later): CUSPARSE_COMPUTE_32I = 0, _16F = 1, _32F = 2.
constexpr int kLtCompute32I = 0;
constexpr int kLtSparsity50 = 0;     // CUSPARSELT_SPARSITY_50_PERCENT
constexpr int kLtAlgDefault = 0;     // CUSPARSELT_MATMUL_ALG_DEFAULT
constexpr int kLtAlgConfigId = 0;    // CUSPARSELT_MATMUL_ALG_CONFIG_ID
constexpr int kLtPruneTile = 0;      // CUSPARSELT_PRUNE_SPMMA_TILE

struct LtApi {
  void *lib = nullptr;
  std::string path, missing;  // the loaded file, or why none is usable
  int major = 0, minor = 0, patch = 0;
  cusparseStatus_t (*init)(LtOpaque *) = nullptr;
  cusparseStatus_t (*destroy)(const LtOpaque *) = nullptr;
  cusparseStatus_t (*get_property)(libraryPropertyType, int *) = nullptr;
  const char *(*error_name)(cusparseStatus_t) = nullptr;
  cusparseStatus_t (*dense_init)(const LtOpaque *, LtOpaque *, int64_t, int64_t, int64_t, uint32_t, cudaDataType,
                                 cusparseOrder_t) = nullptr;
  cusparseStatus_t (*structured_init)(const LtOpaque *, LtOpaque *, int64_t, int64_t, int64_t, uint32_t, cudaDataType,
                                      cusparseOrder_t, int) = nullptr;
  cusparseStatus_t (*mat_destroy)(const LtOpaque *) = nullptr;
  cusparseStatus_t (*matmul_init)(const LtOpaque *, LtOpaque *, cusparseOperation_t, cusparseOperation_t,
                                  const LtOpaque *, const LtOpaque *, const LtOpaque *, const LtOpaque *, int) = nullptr;
  cusparseStatus_t (*alg_init)(const LtOpaque *, LtOpaque *, const LtOpaque *, int) = nullptr;
  cusparseStatus_t (*alg_destroy)(const LtOpaque *) = nullptr;
  cusparseStatus_t (*alg_get)(const LtOpaque *, const LtOpaque *, int, void *, size_t) = nullptr;
  cusparseStatus_t (*plan_init)(const LtOpaque *, LtOpaque *, const LtOpaque *, const LtOpaque *) = nullptr;
  cusparseStatus_t (*plan_destroy)(const LtOpaque *) = nullptr;
  cusparseStatus_t (*workspace)(const LtOpaque *, const LtOpaque *, size_t *) = nullptr;
  cusparseStatus_t (*prune)(const LtOpaque *, const LtOpaque *, const void *, void *, int, cudaStream_t) = nullptr;
  cusparseStatus_t (*compressed_size)(const LtOpaque *, const LtOpaque *, size_t *, size_t *) = nullptr;
  cusparseStatus_t (*compress)(const LtOpaque *, const LtOpaque *, const void *, void *, void *, cudaStream_t) = nullptr;
  using MatmulFn = cusparseStatus_t (*)(const LtOpaque *, const LtOpaque *, const void *, const void *, const void *,
                                        const void *, const void *, void *, void *, cudaStream_t *, int32_t);
  using SearchFn = cusparseStatus_t (*)(const LtOpaque *, LtOpaque *, const void *, const void *, const void *,
                                        const void *, const void *, void *, void *, cudaStream_t *, int32_t);
  MatmulFn matmul = nullptr;
  SearchFn search = nullptr;
  bool usable() const { return lib && missing.empty(); }
};

// Folders python3 installs wheels into (site-packages and sys.path), one per line.
std::vector<std::string> python_site_dirs() {
  std::vector<std::string> out;
  FILE *p = ::popen("python3 -c 'import site, sys; print(\"\\n\".join(site.getsitepackages() + "
                    "[site.getusersitepackages()] + sys.path))' 2>/dev/null",
                    "r");
  if (!p) return out;
  char buf[4096];
  while (std::fgets(buf, sizeof buf, p)) {
    std::string s(buf);
    while (!s.empty() && (s.back() == '\n' || s.back() == '\r')) s.pop_back();
    if (!s.empty() && std::find(out.begin(), out.end(), s) == out.end()) out.push_back(s);
  }
  ::pclose(p);
  return out;
}

bool is_file(const std::string &p) { return ::access(p.c_str(), R_OK) == 0; }

const LtApi &lt_api() {
  static LtApi api;
  static std::once_flag once;
  std::call_once(once, [] {
    const char *name = "libcusparseLt.so.0";
    std::vector<std::string> tried;
    auto try_open = [&](const std::string &p) {
      tried.push_back(p);
      api.lib = ::dlopen(p.c_str(), RTLD_NOW | RTLD_LOCAL);
      if (api.lib) {
        api.path = p;
        return true;
      }
      const char *e = ::dlerror();
      if (p.find('/') != std::string::npos && is_file(p))
        api.missing = "cannot load " + p + ": " + (e ? e : "dlopen failed");
      return false;
    };
    if (const char *env = std::getenv("MAGICUBE_CUSPARSELT"); env && *env) {
      std::string p = env;
      if (!is_file(p) || ::access((p + "/.").c_str(), F_OK) == 0) p += std::string("/") + name;
      if (!try_open(p) && api.missing.empty())
        api.missing = std::string(name) + " not found (MAGICUBE_CUSPARSELT=" + env + ")";
    } else if (!try_open(name)) {
      for (const std::string &d : python_site_dirs()) {
        for (const char *sub : {"/nvidia/cusparselt/lib/", "/nvidia/cu13/lib/", "/nvidia/cu12/lib/"}) {
          std::string p = d + sub + name;
          if (is_file(p) && try_open(p)) break;
        }
        if (api.lib) break;
      }
      if (!api.lib && api.missing.empty())
        api.missing = std::string(name) + " not found (looked on the loader's path and in python3's site-packages; "
                      "set MAGICUBE_CUSPARSELT to the file or its folder)";
    }
    if (!api.lib) return;
    api.missing.clear();
    bool all = true;
    auto sym = [&](auto &fn, const char *s) {
      fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(::dlsym(api.lib, s));
      if (!fn) {
        all = false;
        if (api.missing.empty()) api.missing = api.path + " has no " + s;
      }
    };
    sym(api.init, "cusparseLtInit");
    sym(api.destroy, "cusparseLtDestroy");
    sym(api.get_property, "cusparseLtGetProperty");
    sym(api.error_name, "cusparseLtGetErrorName");
    sym(api.dense_init, "cusparseLtDenseDescriptorInit");
    sym(api.structured_init, "cusparseLtStructuredDescriptorInit");
    sym(api.mat_destroy, "cusparseLtMatDescriptorDestroy");
    sym(api.matmul_init, "cusparseLtMatmulDescriptorInit");
    sym(api.alg_init, "cusparseLtMatmulAlgSelectionInit");
    sym(api.alg_destroy, "cusparseLtMatmulAlgSelectionDestroy");
    sym(api.alg_get, "cusparseLtMatmulAlgGetAttribute");
    sym(api.plan_init, "cusparseLtMatmulPlanInit");
    sym(api.plan_destroy, "cusparseLtMatmulPlanDestroy");
    sym(api.workspace, "cusparseLtMatmulGetWorkspace");
    sym(api.prune, "cusparseLtSpMMAPrune");
    sym(api.compressed_size, "cusparseLtSpMMACompressedSize");
    sym(api.compress, "cusparseLtSpMMACompress");
    sym(api.matmul, "cusparseLtMatmul");
    sym(api.search, "cusparseLtMatmulSearch");
    if (!all) return;
    api.get_property(MAJOR_VERSION, &api.major);
    api.get_property(MINOR_VERSION, &api.minor);
    api.get_property(PATCH_LEVEL, &api.patch);
    if (api.major == 0 && api.minor < 7)
      api.missing = fmt::format("{} is cuSPARSELt {}.{}.{}; the bench declares the API of 0.7 and later", api.path,
                                api.major, api.minor, api.patch);
  });
  return api;
}

std::string lt_status(const LtApi &api, const char *call, cusparseStatus_t st) {
  const char *n = api.error_name ? api.error_name(st) : nullptr;
  return std::string(call) + ": " + (n ? n : cusparseGetErrorName(st));
}

// Runs `f` on scope exit.
struct Finally {
  std::function<void()> f;
  ~Finally() {
    if (f) f();
  }
};

// One layout and output type of cuSPARSELt, into `best`. Refusals are recorded; real
// failures (out of memory, a failed kernel) are errors.
llvm::Error lt_try(const LtApi &api, const LtOpaque &h, cudaStream_t stream, int64_t M, int64_t N, int64_t K,
                   cusparseOrder_t order, cusparseOperation_t op_a, cusparseOperation_t op_b, cudaDataType c_type,
                   const DeviceBuffer &a_dense, const DeviceBuffer &b, const std::string &prefix,
                   const BaselineOptions &opts, Best &best) {
  const bool row = order == CUSPARSE_ORDER_ROW;
  const bool ta = op_a != CUSPARSE_OPERATION_NON_TRANSPOSE, tb = op_b != CUSPARSE_OPERATION_NON_TRANSPOSE;
  const int64_t ar = ta ? K : M, ac = ta ? M : K, br = tb ? N : K, bc = tb ? K : N;
  std::string cfg = fmt::format("{}cuSPARSELt 2:4, {}-major, A{} B{}, C {}", prefix, row ? "row" : "col",
                                ta ? "^T" : "", tb ? "^T" : "", dtype_name(c_type));
  auto refuse_or_fail = [&](const char *call, cusparseStatus_t st) -> llvm::Error {
    if (!is_refusal(st)) return make_error(cfg + ": " + lt_status(api, call, st));
    best.refused(cfg, lt_status(api, call, st));
    return llvm::Error::success();
  };
#define MAGICUBE_LT(call, name)                                   \
  do {                                                            \
    cusparseStatus_t st_ = (call);                                \
    if (st_ != CUSPARSE_STATUS_SUCCESS) return refuse_or_fail(name, st_); \
  } while (0)

  auto mats = std::make_unique<LtOpaque[]>(3);
  auto md = std::make_unique<LtOpaque>(), alg = std::make_unique<LtOpaque>(), plan = std::make_unique<LtOpaque>();
  LtOpaque &ma = mats[0], &mb = mats[1], &mc = mats[2];
  int made_mats = 0;
  bool made_alg = false, made_plan = false;
  Finally cleanup{[&] {
    if (made_plan) api.plan_destroy(plan.get());
    if (made_alg) api.alg_destroy(alg.get());
    for (int i = 0; i < made_mats; ++i) api.mat_destroy(&mats[i]);
  }};
  MAGICUBE_LT(api.structured_init(&h, &ma, ar, ac, row ? ac : ar, 16, CUDA_R_8I, order, kLtSparsity50),
              "cusparseLtStructuredDescriptorInit");
  made_mats = 1;
  MAGICUBE_LT(api.dense_init(&h, &mb, br, bc, row ? bc : br, 16, CUDA_R_8I, order), "cusparseLtDenseDescriptorInit(B)");
  made_mats = 2;
  MAGICUBE_LT(api.dense_init(&h, &mc, M, N, row ? N : M, 16, c_type, order), "cusparseLtDenseDescriptorInit(C)");
  made_mats = 3;
  MAGICUBE_LT(api.matmul_init(&h, md.get(), op_a, op_b, &ma, &mb, &mc, &mc, kLtCompute32I),
              "cusparseLtMatmulDescriptorInit");
  MAGICUBE_LT(api.alg_init(&h, alg.get(), md.get(), kLtAlgDefault), "cusparseLtMatmulAlgSelectionInit");
  made_alg = true;
  MAGICUBE_LT(api.plan_init(&h, plan.get(), md.get(), alg.get()), "cusparseLtMatmulPlanInit");
  made_plan = true;

  // A pruned to 2:4 and compressed, outside the timing.
  auto pruned = DeviceBuffer::alloc(a_dense.bytes());
  if (!pruned) return pruned.takeError();
  MAGICUBE_LT(api.prune(&h, md.get(), a_dense.get(), pruned->get(), kLtPruneTile, stream), "cusparseLtSpMMAPrune");
  size_t csize = 0, cbuf = 0;
  MAGICUBE_LT(api.compressed_size(&h, plan.get(), &csize, &cbuf), "cusparseLtSpMMACompressedSize");
  auto comp = DeviceBuffer::alloc(csize);
  if (!comp) return comp.takeError();
  auto comp_buf = DeviceBuffer::alloc(cbuf);
  if (!comp_buf) return comp_buf.takeError();
  MAGICUBE_LT(api.compress(&h, plan.get(), pruned->get(), comp->get(), comp_buf->get(), stream),
              "cusparseLtSpMMACompress");
  MAGICUBE_CUDA_TRY(cudaStreamSynchronize(stream));
  auto c = DeviceBuffer::alloc(size_t(M * N) * dtype_bytes(c_type));
  if (!c) return c.takeError();
  MAGICUBE_CUDA_TRY(cudaMemset(c->get(), 0, c->bytes()));

  const float alpha = 1.0f, beta = 0.0f;
  size_t ws_bytes = 0;
  MAGICUBE_LT(api.workspace(&h, plan.get(), &ws_bytes), "cusparseLtMatmulGetWorkspace");
  auto ws = DeviceBuffer::alloc(std::max(ws_bytes, opts.workspace_bytes));
  if (!ws) return ws.takeError();
  cudaStream_t streams[1] = {stream};
  MAGICUBE_LT(api.search(&h, plan.get(), &alpha, comp->get(), b.get(), &beta, c->get(), c->get(), ws->get(), streams, 1),
              "cusparseLtMatmulSearch");
  MAGICUBE_CUDA_TRY(cudaStreamSynchronize(stream));
  size_t ws_after = 0;
  MAGICUBE_LT(api.workspace(&h, plan.get(), &ws_after), "cusparseLtMatmulGetWorkspace");
  if (ws_after > ws->bytes()) {
    auto bigger = DeviceBuffer::alloc(ws_after);
    if (!bigger) return bigger.takeError();
    *ws = std::move(*bigger);
  }
  int alg_id = -1;
  if (api.alg_get(&h, alg.get(), kLtAlgConfigId, &alg_id, sizeof alg_id) == CUSPARSE_STATUS_SUCCESS)
    cfg += fmt::format(", algorithm {} (cusparseLtMatmulSearch)", alg_id);
  auto run = [&]() -> cusparseStatus_t {
    return api.matmul(&h, plan.get(), &alpha, comp->get(), b.get(), &beta, c->get(), c->get(), ws->get(), streams, 1);
  };
  MAGICUBE_LT(run(), "cusparseLtMatmul");
#undef MAGICUBE_LT
  MAGICUBE_CUDA_TRY(cudaStreamSynchronize(stream));
  auto ms = median_ms(stream, [&]() -> llvm::Error {
    cusparseStatus_t st = run();
    if (st != CUSPARSE_STATUS_SUCCESS) return make_error(lt_status(api, "cusparseLtMatmul", st));
    return llvm::Error::success();
  }, opts.timing);
  if (!ms) return ms.takeError();
  best.timed(cfg, *ms);
  return llvm::Error::success();
}

}  // namespace

std::string cusparselt_version() {
  const LtApi &api = lt_api();
  if (!api.usable()) return "cuSPARSELt: " + api.missing;
  return fmt::format("cuSPARSELt {}.{}.{} ({})", api.major, api.minor, api.patch, api.path);
}

llvm::Expected<Measurement> cusparselt_spmm_i8(int64_t M, int64_t N, int64_t K, const BaselineOptions &opts) {
  if (auto e = check_dims("cusparselt_spmm_i8", M, N, K)) return e;
  Best best("cuSPARSELt 2:4 s8");
  const LtApi &api = lt_api();
  if (!api.usable()) {
    best.refused("cuSPARSELt", api.missing);
    return best.finish();
  }
  if (auto e = require_cuda_device()) return e;
  Stream stream;
  if (auto e = stream.create()) return e;
  auto h = std::make_unique<LtOpaque>();
  if (cusparseStatus_t st = api.init(h.get()); st != CUSPARSE_STATUS_SUCCESS)
    return make_error(lt_status(api, "cusparseLtInit", st));
  Finally destroy{[&] { api.destroy(h.get()); }};
  auto a = random_device(CUDA_R_8I, size_t(M * K), opts.seed);
  if (!a) return a.takeError();

  // Every layout at N; where none is accepted, N rounded up to a multiple of 32.
  std::vector<int64_t> ns = {N};
  if (N % 32) ns.push_back((N + 31) / 32 * 32);
  for (int64_t n : ns) {
    auto b = random_device(CUDA_R_8I, size_t(K * n), opts.seed + 1);
    if (!b) return b.takeError();
    std::string prefix = n == N ? "" : fmt::format("N padded from {} to {}: ", N, n);
    for (cudaDataType ct : {CUDA_R_32I, CUDA_R_8I}) {
      for (cusparseOrder_t order : {CUSPARSE_ORDER_ROW, CUSPARSE_ORDER_COL})
        for (cusparseOperation_t oa : {CUSPARSE_OPERATION_NON_TRANSPOSE, CUSPARSE_OPERATION_TRANSPOSE})
          for (cusparseOperation_t ob : {CUSPARSE_OPERATION_NON_TRANSPOSE, CUSPARSE_OPERATION_TRANSPOSE})
            if (auto e = lt_try(api, *h, stream.get(), M, n, K, order, oa, ob, ct, *a, *b, prefix, opts, best)) return e;
      if (best.m.supported) break;  // s8 output only where s32 is refused
    }
    if (best.m.supported) break;
  }
  return best.finish();
}

}  // namespace magicube::bench
