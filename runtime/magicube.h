// Magicube JIT's public C++ API (library magicube_api): plan, pack and run a quantized SpMM
// or SDDMM on an NVIDIA GPU from your own program, with exceptions instead of llvm::Error.
//
// Everything is in namespace magicube. Every failure throws magicube::Error, whose what()
// is the original message (it names the bad input: "lhs: 17 bits in 's17' is out of
// range (allowed: 1..16)", "rhs B[3,0] = 300 is outside s8's range [-128, 127]", ...);
// kind() says which stage failed, and a failed CUDA driver call keeps its call and code.
//
//   #include "runtime/magicube.h"
//
//   magicube::OpSpec spec = magicube::parse_spec("spmm.s8xu4.v8.i32.sm_90");  // knobs: the dispatch's
//   magicube::VectorSparse a = magicube::vector_sparse_from_dense(dense_a, M, K, spec.v);
//   std::vector<int64_t> c = magicube::spmm_host(spec, a, b, N);  // M x N, row-major
//
// or, to keep the packed operands on the device and launch on your own stream:
//
//   magicube::Spmm op(spec, a, N);               // plans for this matrix (tuning record or policy)
//   auto da = op.upload(op.pack_lhs(a));         // SR-BCRS + chunk planes, on the device
//   auto db = op.upload(op.pack_rhs(b, K, N));
//   magicube::DeviceBuffer c = op.allocate_output(M, N);
//   op.run(da, db, c.ptr(), stream);             // asynchronous on `stream`
//
// Float outputs (f32, f16, bf16) dequantize the exact integer result in the kernel's
// epilogue: x = acc (* alpha | * row_scale[r] * col_scale[c]) (+ bias[r] | + bias[c]), in
// double, rounded to nearest even (the spec's scale and bias say which; EpilogueArgs holds
// the values; runtime/epilogue.h computes the same on the CPU, bit for bit). Host-side
// results of float outputs are the stored bit patterns (stored_value() reads them).
//
// SDDMM: out = (A (M x K) x B (K x N)) at the V x 1 vectors of a mask, in the mask's BCRS
// order (vector i, row r at i * V + r) or its SR-BCRS value order:
//
//   magicube::OpSpec spec = magicube::parse_spec("sddmm.s8xs8.v8.n64.pf.f16+rc.sm_90");
//   magicube::EpilogueArgs scales;
//   scales.row_scale = q_scale;  // M values
//   scales.col_scale = k_scale;  // N values
//   std::vector<int64_t> s = magicube::sddmm_host(spec, mask, a, b, K, magicube::SparseLayout::Bcrs,
//                                                 scales);  // f16 bit patterns, BCRS order
//
// The dense route (opt-in, SpMM of any operand types, any output): where a dense int8 GEMM
// (cuBLASLt, dlopen'ed) is faster than the sparse kernel for the matrix, the op runs as one;
// operands that do not fit int8 (u8, s12, ...) are split into int8 chunks, one GEMM per chunk
// pair (compiler/dense_chunks.h). An output other than int32 (int64, or float with its scales
// and bias), or of chunked operands, is written from the GEMMs' int32 results by an epilogue
// kernel, bit for bit as the sparse kernels write it. It keeps a dense int8 copy of A (M x K
// bytes a chunk) instead of the sparse one, so
// the caller decides: SpmmOptions::dense = DenseRoute::Allowed lets the dispatch compare the
// routes for the matrix given to the constructor; Forced takes the dense route or refuses,
// naming why. route() and route_why() say what was chosen; the same calls run either route:
//
//   magicube::SpmmOptions o;
//   o.dense = magicube::DenseRoute::Allowed;
//   magicube::Spmm op(spec, a, N, o);            // op.route(): Route::Dense or Route::Sparse
//   auto da = op.upload(op.pack_lhs(a));         // dense route: A densified (int8)
//   auto db = op.upload(op.pack_rhs(b, K, N));   // dense route: B transposed (N x K int8)
//   op.load();                                   // dense route: cuBLASLt's algorithm, timed once (synchronizes)
//   op.run(da, db, c.ptr(), stream);             // asynchronous; cuBLASLt's workspace: the op's own
//                                                // (or pass workspace_bytes(M, N) of your own)
//
// GPU use: calls that touch the device (upload, allocate_output, load, run, multiply,
// spmm_host, sddmm_host, device_arch) use the primary context of the op's device
// (options.device, default 0), the same context the CUDA runtime uses: it is retained on
// first use for the rest of the process and made current on the calling thread. Without a
// usable GPU they throw Error::Kind::NoGpu. Planning and packing never need a GPU.
//
// Threads: an op's const methods may be called from several threads at once. Copies of an
// Spmm or Sddmm share its plan and loaded kernel.
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
#include "runtime/dense_route.h"
#include "runtime/dispatch.h"
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
  int candidate = -1;  // which plan of plan_candidates: -1 = the dispatch's choice, 0 = the best by the cost model
  int device = 0;     // CUDA device ordinal for the device-side calls
  // Whether the SpMM may run as a dense int8 GEMM (see "The dense route" above): Never (the
  // sparse kernel), Allowed (the dispatch's choice for the matrix given to the constructor;
  // sparse without one, or with a pinned knob or candidate), Forced (dense, or Kind::Invalid
  // naming why not: an operand wider than int8, K not a multiple of 4, cuBLASLt unavailable). Sddmm refuses Forced and ignores Allowed.
  DenseRoute dense = DenseRoute::Never;
};
using SddmmOptions = SpmmOptions;

// The newest arch a plan can target on `device` (80, 86, 89 or 90: its compute capability,
// or the newest supported one below it), e.g. to set OpSpec::arch. Throws NoGpu without a
// GPU and Invalid for a device older than sm_80.
int device_arch(int device = 0);

// The value of one output element as the host-side calls return it: an integer output's
// value, or the float (f32, f16, bf16) whose bit pattern `element` holds.
double stored_value(OutType out, int64_t element);

// A's packed form for one plan: its SR-BCRS layout (shape, reduction length) and the chunk
// planes the kernel reads.
struct HostLhs {
  SrBcrs layout;
  PackedLhs packed;          // the sparse route's planes (empty on the dense route)
  std::vector<int8_t> dense;  // the dense route's A: M x K int8, row-major, a plane per int8 chunk
                              // (dense_lhs_int8; empty on the sparse route)
};

// One SpMM op: C (M x N, row-major; column-major with the spec's +ccol) = A (M x K, V x 1
// vector-sparse) x B (K x N, row-major),
// with C int32, int64 or (dequantized) f32, f16 or bf16 as the spec's `out` says.
class Spmm {
 public:
  // Plans the spec through the dispatch (runtime/dispatch.h): knobs the spec pins are kept
  // ("spmm.s8xs8.v8.n64.pf.i32.sm_90" pins all, "spmm.s8xs8.v8.i32.sm_90" none); the others
  // come from the library's policy. Kind::Invalid for an invalid spec, an op other than
  // spmm, or a candidate index out of range.
  explicit Spmm(const OpSpec &spec, SpmmOptions options = {});
  // The same for the matrix A and N columns of B: with no knob pinned, a stored tuning record
  // for (op, GPU, A's signature, N) when one exists (`magicube tune`), else the policy for
  // this matrix; refuses rows longer than the output type allows.
  Spmm(const OpSpec &spec, const VectorSparse &a, int64_t n, SpmmOptions options = {});
  // Where the plan came from: "chosen by: flags" | "chosen by: tuned record <path>" |
  // "chosen by: policy (<why>)".
  const std::string &chosen_by() const;
  // The route the op runs: Route::Sparse (the kernel of plan()) or Route::Dense (a cuBLASLt
  // int8 GEMM; plan() is still the sparse plan, whose bounds hold). Sparse unless
  // options.dense asked.
  Route route() const;
  // Why this route: "" when options.dense is Never; "asked for" (Forced); "faster here
  // (sparse ~120.3 us, dense ~40.1 us)", "no matrix given", "kernel knobs pinned",
  // "dense route not offered: <why>" (Allowed).
  const std::string &route_why() const;

  const OpSpec &spec() const;
  const Plan &plan() const;
  const SpmmOptions &options() const;
  std::string kernel_name() const;
  // The longest row-block (reduction length) the output type stays exact for: max_exact_k
  // for int32, max_term_k for int64 and the float outputs. Longer rows are refused by
  // pack_lhs and run (on either route).
  int64_t max_reduction_length() const;
  size_t output_element_bytes() const;  // 4 (int32, f32), 8 (int64) or 2 (f16, bf16)

  // ---- host side (no GPU) ----
  // Lays out and packs A; refuses a V other than the spec's, values outside the lhs type,
  // columns outside [0, K) or repeated within a row-block, a malformed block_ptr, and rows
  // longer than max_reduction_length(). Sizes too large for the host are Kind::Invalid too.
  // Dense route: the layout and HostLhs::dense (A densified), no planes; refuses K not a
  // multiple of 4.
  HostLhs pack_lhs(const VectorSparse &a) const;
  // Packs B (K x N, row-major); refuses a size other than k * n and values outside the rhs
  // type. Dense route: PackedRhs::dense_t (B transposed, N x K int8 a chunk), no planes.
  PackedRhs pack_rhs(const std::vector<int64_t> &b, int64_t k, int64_t n) const;
  // Checks a float output's scales and bias for an M x N result: row_scale (M) and
  // col_scale (N) for a rowcol scale, bias of M (row) or N (col) values; refuses scales or
  // bias given for an integer output. Kind::Invalid naming the vector.
  void check_epilogue(const EpilogueArgs &epilogue, int64_t m, int64_t n) const;

  // ---- device side ----
  DeviceLhs upload(const HostLhs &a) const;
  DeviceRhs upload(const PackedRhs &b) const;
  // The scales and bias of a float output on the device (for run).
  DeviceEpilogue upload(const EpilogueArgs &epilogue) const;
  // Device memory for an M x N output of this op.
  DeviceBuffer allocate_output(int64_t m, int64_t n) const;
  // Generates, compiles (through the memory and disk kernel caches) and loads the kernel
  // now; run() otherwise does it on first use. Dense route: creates the cuBLASLt plans for
  // the constructor's matrix and N (C as M x N and as N x M) and picks each one's algorithm
  // by timing the heuristic's best few once on scratch buffers with a cold L2 (this
  // allocates and synchronizes, like kernel loading; the first run does it otherwise); a
  // run with another shape (or on an op made without a matrix) creates its plan on first
  // use and times it once on that run's buffers (an L2-flush buffer allocated, one
  // synchronization; while the stream is being captured into a graph: the heuristic's first
  // algorithm instead, host work only).
  void load() const;
  // Device workspace (bytes) a run of this op needs, for the constructor's M x N: on the
  // dense route cuBLASLt's and, for an output other than int32 or operands in int8 chunks, the
  // GEMMs' int32 results (M x N x 4 bytes a chunk pair, which the epilogue kernel turns into the
  // output); 0 on the sparse route.
  size_t workspace_bytes() const;
  // The same for a run of an M x N output.
  size_t workspace_bytes(int64_t m, int64_t n) const;
  // C = A x B on `stream` (nullptr: the default stream); asynchronous. `c` holds M x N
  // elements of output_element_bytes(). A float output takes its scales and bias from
  // `epilogue` (required when the spec has a rowcol scale or a bias; kept alive until the
  // launch completes). Refused when the operands were packed for another plan or the other
  // route, or their shapes disagree. Dense route: cuBLASLt's workspace is the op's own
  // (workspace_bytes(), allocated by the first such run, once, and shared by every copy of
  // the op): runs on several streams at once must pass their own (the overload below).
  void run(const DeviceLhs &a, const DeviceRhs &b, CUdeviceptr c, CUstream stream = nullptr,
           const DeviceEpilogue *epilogue = nullptr) const;
  // The same with the caller's workspace (workspace_bytes(M, N) bytes, 256-byte aligned; unused
  // on the sparse route): no allocation. No epilogue vectors (an integer output, or a float
  // one without a rowcol scale or a bias).
  void run(const DeviceLhs &a, const DeviceRhs &b, CUdeviceptr c, CUstream stream, CUdeviceptr workspace,
           size_t workspace_bytes) const;
  // The dense route on device pointers (what the C ABI runs): C = A x B with A the dense
  // int8 copy (m x k, row-major), B given as Bt (n x k int8, row-major), each a plane per int8
  // chunk of its type stacked dense_plane_stride apart (runtime/dense_route.h), and C of the op's
  // output type, m x n row-major, or n x m row-major (C^T) when c_transposed (cuBLASLt
  // computes it with the operands swapped: no transpose). A, Bt and the workspace
  // (workspace_bytes(m, n)) 256-byte aligned (cuBLASLt's heuristic assumes it), and C too for
  // an int32 output of one GEMM (which writes it); other outputs are written by the epilogue
  // kernel from the workspace's int32 results (C aligned to its element). A float output's scales and
  // bias from `epilogue`. Asynchronous; Kind::Invalid on the sparse route.
  void run_dense(CUdeviceptr a_dense, CUdeviceptr bt, CUdeviceptr c, int64_t m, int64_t k, int64_t n,
                 bool c_transposed, CUdeviceptr workspace, size_t workspace_bytes, CUstream stream = nullptr,
                 const DeviceEpilogue *epilogue = nullptr) const;
  // The same with host-side scales and bias: uploads them, launches, and waits for `stream`
  // (so the uploaded copy outlives the launch); synchronous.
  void run(const DeviceLhs &a, const DeviceRhs &b, CUdeviceptr c, CUstream stream,
           const EpilogueArgs &epilogue) const;

  // Host in, host out, on the device: pack, upload, run, wait, download (on either route).
  // C (M x N, in the spec's order) as int64: the integer values, or for a float output each element's
  // bit pattern (f32: 32 bits, f16/bf16: 16 bits, zero-extended; stored_value() reads them).
  std::vector<int64_t> multiply(const VectorSparse &a, const std::vector<int64_t> &b, int64_t n,
                                const EpilogueArgs &epilogue = {}) const;

 private:
  struct State;
  std::shared_ptr<State> state_;
};

// Spmm(spec, a, n, options).multiply(a, b, n, epilogue) (device 0 by default): C = A x B
// (M x N, row-major), integer values or float bit patterns as multiply() says; on the dense
// route where options.dense asks for it.
std::vector<int64_t> spmm_host(const OpSpec &spec, const VectorSparse &a, const std::vector<int64_t> &b, int64_t n,
                               const EpilogueArgs &epilogue = {}, const SpmmOptions &options = {});

// The mask of an SDDMM laid out for one plan: the pattern (BCRS: row-block pointers and
// columns) and its SR-BCRS layout (stride `stride`), which the kernel walks.
struct HostMask {
  VectorSparse pattern;
  SrBcrs layout;
  // Output elements of each layout: BCRS num_vectors * V, SR-BCRS num_slots * V.
  int64_t output_elements(SparseLayout layout) const;
  // Where vector i's row r lands in the output of `layout` (BCRS: i * V + r).
  int64_t output_index(SparseLayout layout, int64_t vector, int row) const;
};

// One SDDMM op: out = (A (M x K, row-major) x B (K x N, column-major)) at the V x 1 vectors
// of a mask (M x N, vector-sparse; its values are ignored), in int32, int64 or (dequantized)
// f32, f16 or bf16 (scale only: SDDMM takes no bias). A row r of the mask's vector at column
// c gets sum_k A[r, k] * B[k, c]; rows past M in the last row-block and the SR-BCRS padding
// slots are not written by run (multiply and sddmm_host return 0 there).
class Sddmm {
 public:
  // Plans the spec through the dispatch, as Spmm does.
  explicit Sddmm(const OpSpec &spec, SddmmOptions options = {});
  // The same for a mask and reduction length K: a tuning record or the policy for them.
  Sddmm(const OpSpec &spec, const VectorSparse &mask, int64_t k, SddmmOptions options = {});
  const std::string &chosen_by() const;

  const OpSpec &spec() const;
  const Plan &plan() const;
  const SddmmOptions &options() const;
  std::string kernel_name() const;
  // The longest reduction K the output type stays exact for: max_exact_k for int32,
  // max_term_k for int64 and the float outputs. Longer K is refused by pack_lhs/pack_rhs.
  int64_t max_reduction_length() const;
  size_t output_element_bytes() const;  // 4 (int32, f32), 8 (int64) or 2 (f16, bf16)

  // ---- host side (no GPU) ----
  // Lays out the mask (SR-BCRS with `stride` vectors per stride, 1..1024); refuses a V
  // other than the spec's.
  HostMask pack_mask(const VectorSparse &mask, int stride = 32) const;
  // Packs A (M x K, row-major) and B (K x N, column-major: column c's K values at c * K);
  // refuses sizes other than m * k / k * n, values outside their types and K longer than
  // max_reduction_length().
  PackedDense pack_lhs(const std::vector<int64_t> &a, int64_t m, int64_t k) const;
  PackedDense pack_rhs(const std::vector<int64_t> &b, int64_t k, int64_t n) const;
  // As Spmm::check_epilogue, for an M x N mask (no bias).
  void check_epilogue(const EpilogueArgs &epilogue, int64_t m, int64_t n) const;

  // ---- device side ----
  DeviceMask upload(const HostMask &mask) const;
  DeviceDense upload(const PackedDense &operand) const;  // A or B
  DeviceEpilogue upload(const EpilogueArgs &epilogue) const;
  // Device memory for the output of `mask` in `layout` (output_element_bytes() each).
  DeviceBuffer allocate_output(const HostMask &mask, SparseLayout layout = SparseLayout::Bcrs) const;
  DeviceBuffer allocate_output(const DeviceMask &mask, SparseLayout layout = SparseLayout::Bcrs) const;
  void load() const;
  // out = (A x B) at the mask's vectors, in `layout` order, on `stream`; asynchronous.
  // Float outputs take their scales from `epilogue` (required for a rowcol scale; kept
  // alive until the launch completes). Refused when the operands were packed for another
  // plan or their shapes disagree.
  void run(const DeviceMask &mask, const DeviceDense &a, const DeviceDense &b, CUdeviceptr out,
           SparseLayout layout = SparseLayout::Bcrs, CUstream stream = nullptr,
           const DeviceEpilogue *epilogue = nullptr) const;
  // The same with host-side scales: uploads them, launches, waits for `stream`.
  void run(const DeviceMask &mask, const DeviceDense &a, const DeviceDense &b, CUdeviceptr out,
           SparseLayout layout, CUstream stream, const EpilogueArgs &epilogue) const;

  // Host in, host out: pack (stride 32), upload, run, wait, download. The output in
  // `layout` order (see HostMask::output_index) as int64: integer values, or float bit
  // patterns as Spmm::multiply says; 0 where run writes nothing.
  std::vector<int64_t> multiply(const VectorSparse &mask, const std::vector<int64_t> &a,
                                const std::vector<int64_t> &b, int64_t k, SparseLayout layout = SparseLayout::Bcrs,
                                const EpilogueArgs &epilogue = {}) const;

 private:
  struct State;
  std::shared_ptr<State> state_;
};

// Sddmm(spec).multiply(mask, a, b, k, layout, epilogue) on device 0. With the default BCRS
// layout, element i * V + r is row r of the mask's vector i (in row-block order, columns
// ascending): the int64 value, or for a float output its bit pattern (f32: 32 bits,
// f16/bf16: 16 bits, zero-extended; stored_value() reads them).
std::vector<int64_t> sddmm_host(const OpSpec &spec, const VectorSparse &mask, const std::vector<int64_t> &a,
                                const std::vector<int64_t> &b, int64_t k, SparseLayout layout = SparseLayout::Bcrs,
                                const EpilogueArgs &epilogue = {});

}  // namespace magicube
