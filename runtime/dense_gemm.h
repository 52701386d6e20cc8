// The dense route's GEMM: C (M x N, int32, row-major) = A (M x K, int8, row-major) x B, with
// B given as its transpose Bt (N x K, int8, row-major: the activations' token-major layout),
// run by cuBLASLt's int8 tensor-core kernels (CUBLAS_COMPUTE_32I, int32 accumulate and
// output, two's-complement wrap like our int32 kernels).
//
// libcublasLt.so.13 is not linked: it is dlopen'ed on first use (as libcuda.so.1 is), so the
// library and the CLI start, plan and run sparse kernels on machines without cuBLAS, and the
// dispatch reports "dense route unavailable: <why>" there instead of choosing it.
//
// As cuBLASLt computes it, C^T (N x M, column-major) = Bt (K x N, column-major)^T x A^T
// (K x M column-major): the "TN" int8 form its IMMA kernels take, with A and Bt read as they
// are stored. The algorithm is the fastest of the heuristic's top few, timed once on the
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

class DenseGemm {
 public:
  // A plan for C (m x n) = A (m x k) x B (k x n) with B stored as Bt (n x k); workspace
  // `workspace_bytes` (cuBLASLt's scratch, owned by the caller). Refused when cuBLASLt is
  // unavailable or offers no algorithm for the shape (named).
  static llvm::Expected<std::unique_ptr<DenseGemm>> create(int64_t m, int64_t n, int64_t k,
                                                            size_t workspace_bytes = kDefaultWorkspace);
  ~DenseGemm();
  DenseGemm(const DenseGemm &) = delete;
  DenseGemm &operator=(const DenseGemm &) = delete;

  static constexpr size_t kDefaultWorkspace = size_t(32) << 20;  // suits Hopper's int8 kernels

  int64_t m() const { return m_; }
  int64_t n() const { return n_; }
  int64_t k() const { return k_; }
  size_t workspace_bytes() const { return workspace_; }
  int algorithms() const;  // heuristic results kept (select() picks among them)

  // Times each kept algorithm (one warm-up, then `reps` runs each after an L2 flush, on
  // `stream`, synchronizing; a scratch buffer of twice the L2 is allocated for the flush) on
  // these buffers and keeps the fastest median. Optional: without it run() uses the
  // heuristic's first.
  llvm::Error select(const Context &ctx, CUdeviceptr a, CUdeviceptr bt, CUdeviceptr c, CUdeviceptr workspace,
                     CUstream stream = nullptr, int reps = 3);
  // Enqueues C = A x B on `stream`; no allocation, no synchronization.
  llvm::Error run(CUdeviceptr a, CUdeviceptr bt, CUdeviceptr c, CUdeviceptr workspace, CUstream stream = nullptr) const;
  // "cuBLASLt int8 TN (C^T = Bt^T A^T), algo id 39 tile 17, heuristic 3 of 8"
  std::string describe() const;

 private:
  struct Impl;
  DenseGemm() = default;
  std::unique_ptr<Impl> impl_;
  int64_t m_ = 0, n_ = 0, k_ = 0;
  size_t workspace_ = 0;
};

}  // namespace magicube
