// Magicube JIT's public C++ API (library magicube_api): plan, pack and run a quantized SpMM
// on an NVIDIA GPU from your own program, with exceptions instead of llvm::Error.
//
// Everything is in namespace magicube. Every failure throws magicube::Error, whose what()
// is the original message (it names the bad input: "lhs: 17 bits in 's17' is out of
// range (allowed: 1..16)", "rhs B[3,0] = 300 is outside s8's range [-128, 127]", ...);
// kind() says which stage failed, and a failed CUDA driver call keeps its call and code.
//
//   #include "runtime/magicube.h"
//
//   magicube::OpSpec spec = magicube::parse_spec("spmm.s8xu4.v8.n64.pf.i32.sm_90");
//   magicube::VectorSparse a = magicube::vector_sparse_from_dense(dense_a, M, K, spec.v);
//   std::vector<int64_t> c = magicube::spmm_host(spec, a, b, N);  // M x N, row-major
//
// or, to keep the packed operands on the device and launch on your own stream:
//
//   magicube::Spmm op(spec);                     // plans; host only, no GPU needed
//   auto da = op.upload(op.pack_lhs(a));         // SR-BCRS + chunk planes, on the device
//   auto db = op.upload(op.pack_rhs(b, K, N));
//   magicube::DeviceBuffer c = op.allocate_output(M, N);
//   op.run(da, db, c.ptr(), stream);             // asynchronous on `stream`
//
// GPU use: calls that touch the device (upload, allocate_output, load, run, multiply,
// spmm_host) use the primary context of the Spmm's device (SpmmOptions::device, default 0),
// the same context the CUDA runtime uses: it is retained on first use for the rest of the
// process and made current on the calling thread. Without a usable GPU they throw
// Error::Kind::NoGpu. Planning and packing never need a GPU.
//
// Threads: a Spmm's const methods may be called from several threads at once. Copies of a
// Spmm share its plan and loaded kernel.
#pragma once

#include <cuda.h>

#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "compiler/ir.h"
#include "compiler/plan.h"
#include "runtime/cuda_driver.h"
#include "runtime/kernel.h"
#include "runtime/packing.h"
#include "runtime/srbcrs.h"
#include "runtime/vector_sparse.h"

namespace magicube {

// The one exception type of the API. (Spell it magicube::Error where llvm::Error is also
// visible.)
class Error : public std::runtime_error {
 public:
  enum class Kind {
    Invalid,  // a bad spec, value, shape or option; the message names it
    Compile,  // code generation or NVRTC failed (the message holds NVRTC's log)
    Cuda,     // a CUDA driver call failed (cuda_call(), cuda_code())
    NoGpu,    // no usable GPU (the message says why)
  };
  Error(Kind kind, const std::string &message) : std::runtime_error(message), kind_(kind) {}
  // A failed driver call (the exception thrown by throw_if_error / value_or_throw).
  explicit Error(const CudaError &e);

  // Converts a failed llvm::Error: a DriverError becomes Kind::Cuda, anything else `kind`.
  // The message is llvm::toString's. Precondition: `e` is a failure.
  static Error from(llvm::Error e, Kind kind);

  Kind kind() const { return kind_; }
  static const char *kind_name(Kind k);  // "invalid", "compile", "cuda", "no-gpu"
  // Kind::Cuda only: the failed call (e.g. "cuLaunchKernel") and its result.
  const std::string &cuda_call() const { return cuda_call_; }
  CUresult cuda_code() const { return cuda_code_; }
  const std::string &cuda_code_name() const { return cuda_code_name_; }

 private:
  Kind kind_;
  std::string cuda_call_, cuda_code_name_;
  CUresult cuda_code_ = CUDA_SUCCESS;
};

// An OpSpec from its canonical text form "op.LxR.vV.nBSn.pf|nopf.out.arch", validated.
OpSpec parse_spec(const std::string &text);

struct SpmmOptions {
  int candidate = 0;  // which plan of plan_candidates(spec): 0 = the best by the cost model
  int device = 0;     // CUDA device ordinal for the device-side calls
};

// A's packed form for one plan: its SR-BCRS layout (shape, reduction length) and the chunk
// planes the kernel reads.
struct HostLhs {
  SrBcrs layout;
  PackedLhs packed;
};

// One SpMM op: C (M x N, row-major) = A (M x K, V x 1 vector-sparse) x B (K x N, row-major),
// with C int32 or int64 as the spec's `out` says (the float outputs are not generated yet).
class Spmm {
 public:
  // Plans the spec (Kind::Invalid for an invalid spec, an op other than spmm, a float
  // output, or a candidate index out of range).
  explicit Spmm(const OpSpec &spec, SpmmOptions options = {});

  const OpSpec &spec() const;
  const Plan &plan() const;
  const SpmmOptions &options() const;
  std::string kernel_name() const;
  // The longest row-block (reduction length) the output type stays exact for: max_exact_k
  // for int32, max_term_k for int64. Longer rows are refused by pack_lhs and run.
  int64_t max_reduction_length() const;
  size_t output_element_bytes() const;  // 4 (int32) or 8 (int64)

  // ---- host side (no GPU) ----
  // Lays out and packs A; refuses a V other than the spec's, values outside the lhs type and
  // rows longer than max_reduction_length().
  HostLhs pack_lhs(const VectorSparse &a) const;
  // Packs B (K x N, row-major); refuses a size other than k * n and values outside the rhs
  // type.
  PackedRhs pack_rhs(const std::vector<int64_t> &b, int64_t k, int64_t n) const;

  // ---- device side ----
  DeviceLhs upload(const HostLhs &a) const;
  DeviceRhs upload(const PackedRhs &b) const;
  // Device memory for an M x N output of this op.
  DeviceBuffer allocate_output(int64_t m, int64_t n) const;
  // Generates, compiles (through the memory and disk kernel caches) and loads the kernel
  // now; run() otherwise does it on first use.
  void load() const;
  // C = A x B on `stream` (nullptr: the default stream); asynchronous. `c` holds M x N
  // elements of output_element_bytes(). Refused when the operands were packed for another
  // plan or their shapes disagree.
  void run(const DeviceLhs &a, const DeviceRhs &b, CUdeviceptr c, CUstream stream = nullptr) const;

  // Host in, host out, on the device: pack, upload, run, wait, download. C as int64.
  std::vector<int64_t> multiply(const VectorSparse &a, const std::vector<int64_t> &b, int64_t n) const;

 private:
  struct State;
  std::shared_ptr<State> state_;
};

// Spmm(spec).multiply(a, b, n) on device 0: C = A x B (M x N, row-major, int64).
std::vector<int64_t> spmm_host(const OpSpec &spec, const VectorSparse &a, const std::vector<int64_t> &b, int64_t n);

}  // namespace magicube
