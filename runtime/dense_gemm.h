// The dense route's GEMM: C (M x N, int32, row-major) = A (M x K, int8, row-major) x B, with
// B given as its transpose Bt (N x K, int8, row-major: the activations' token-major layout),
// run by cuBLASLt's int8 tensor-core kernels (CUBLAS_COMPUTE_32I, int32 accumulate and
// output, two's-complement wrap like our int32 kernels).
//
// libcublasLt.so.13 is not linked: it is dlopen'ed on first use (as libcuda.so.1 is), so the
// library and the CLI start, plan and run sparse kernels on machines without cuBLAS, and the
// dispatch reports "dense route unavailable: <why>" there instead of choosing it.
//
// cuBLASLt's int8 (IMMA) kernels take the "TN" form: BLAS A transposed, K the leading
// dimension of both inputs, which A and Bt as stored are. Two formulations give our C from
// them without any extra pass (DenseForm):
//   - TransposedC: C^T (N x M, column-major) = Bt (K x N, column-major)^T x A^T (K x M
//     column-major): the GEMM's M is our N;
//   - RowOrderC: C (M x N, CUBLASLT_ORDER_ROW) = A (K x M column-major)^T x Bt^T (K x N
//     column-major): the GEMM's M is our M, as in the bench's winning "A row, B col, C col
//     (TN)" at many decode shapes, with C written row-major (cuBLASLt may refuse the row
//     order for an int32 C; the form is then left out, logged at debug level);
//   - RowOrderAll: the same product described in row order throughout: A (M x K) and Bt
//     (N x K, transposed) and C (M x N), all CUBLASLT_ORDER_ROW (the bench's "ORDER_ROW" API).
// The algorithm is the fastest of the heuristic's top few of every form, each also with the
// other CTA swizzle, and of the heuristic's configurations for a column-major C set on the
// row-ordered C form (every such variant checked by cublasLtMatmulAlgoCheck), timed once on the
// caller's buffers (select()); run() afterwards only enqueues.
#pragma once

#include <cuda.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "llvm/Support/Error.h"

namespace magicube {

class Context;

// Why the dense route cannot run in this process ("" when libcublasLt loaded): the library
// missing or lacking an entry point.
std::string dense_library_unavailable();
// "cuBLASLt 130001" as loaded, or "" when unavailable.
std::string dense_library_version();

// The formulations DenseGemm::create may try (bits of its `forms` mask: form_bit).
enum class DenseForm { TransposedC = 0, RowOrderC = 1, RowOrderAll = 2 };
constexpr unsigned form_bit(DenseForm f) { return 1u << unsigned(f); }
// "TN (C^T = Bt^T A^T)" | "TN, C row-ordered (C = A Bt^T, CUBLASLT_ORDER_ROW)" | "NT in row order (...)"
const char *dense_form_name(DenseForm f);

class DenseGemm {
 public:
  static constexpr unsigned kAllForms =
      form_bit(DenseForm::TransposedC) | form_bit(DenseForm::RowOrderC) | form_bit(DenseForm::RowOrderAll);

  // A plan for C (m x n) = A (m x k) x B (k x n) with B stored as Bt (n x k); workspace
  // `workspace_bytes` (cuBLASLt's scratch, owned by the caller); the heuristic's top 8 of each
  // form in `forms` (a mask of form_bit; the tests name one at a time) and their variants.
  // Refused when cuBLASLt is unavailable, the mask names no form, or no form has an algorithm
  // for the shape (named).
  static llvm::Expected<std::unique_ptr<DenseGemm>> create(int64_t m, int64_t n, int64_t k,
                                                            size_t workspace_bytes = kDefaultWorkspace,
                                                            unsigned forms = kAllForms);
  ~DenseGemm();
  DenseGemm(const DenseGemm &) = delete;
  DenseGemm &operator=(const DenseGemm &) = delete;

  static constexpr size_t kDefaultWorkspace = size_t(32) << 20;  // suits Hopper's int8 kernels

  int64_t m() const { return m_; }
  int64_t n() const { return n_; }
  int64_t k() const { return k_; }
  size_t workspace_bytes() const { return workspace_; }
  int algorithms() const;  // candidates kept, over every form and variant (select() picks among them)
  // Runs candidate i (0..algorithms()-1) from now on, untimed: for tests that check each.
  void choose(int i);
  DenseForm form() const;  // the chosen algorithm's form (before select(): TransposedC's first when offered)

  // Times each kept algorithm of every form (one warm-up, then `reps` runs each after an L2
  // flush, round-robin, on `stream`, synchronizing; a scratch buffer of twice the L2 is
  // allocated for the flush) on these buffers, then the near-equals again after a pause (a
  // second look at up to 6 within 10 % of the best, 8 runs each), and keeps the fastest median
  // of the second look. Timed runs go in bursts of ~15 ms of GPU time with rests of twice that
  // between them, so that the device keeps the clocks a short sequence of calls sees. Once per
  // process: a GEMM of the same device, shape, workspace and candidates selected before takes
  // that choice without timing (describe() says so).
  // Optional: without it run() uses the first form's heuristic first.
  llvm::Error select(const Context &ctx, CUdeviceptr a, CUdeviceptr bt, CUdeviceptr c, CUdeviceptr workspace,
                     CUstream stream = nullptr, int reps = 5);
  // Enqueues C = A x B on `stream`; no allocation, no synchronization.
  llvm::Error run(CUdeviceptr a, CUdeviceptr bt, CUdeviceptr c, CUdeviceptr workspace, CUstream stream = nullptr) const;
  // "cuBLASLt int8 TN (C^T = Bt^T A^T), algo id 39 tile 17, heuristic 3 of 8", then after
  // select() " (fastest with a cold L2 of 56 over 3 forms)" (", selected earlier in this process"
  // inside the parentheses when recalled); a variant says so ("heuristic 1 of 8
  // with the other CTA swizzle", "CTA swizzle 1, the column-major C form's heuristic 2 of 8")
  std::string describe() const;

 private:
  struct Impl;
  DenseGemm() = default;
  std::unique_ptr<Impl> impl_;
  int64_t m_ = 0, n_ = 0, k_ = 0;
  size_t workspace_ = 0;
};

}  // namespace magicube
