// The one execution pipeline: one op on host operands, run on the device and checked.
//
//   pack + upload (as each plan wants them; once per distinct packing) -> get the kernel
//   (Kernel::get: memory cache, disk cache, NVRTC) -> launch -> download -> verify against
//   the int64 CPU reference (float outputs: bit for bit against its rounded dequantization)
//
// `magicube run`, the autotuner and `magicube-bench` run our kernels through it; the C++ API
// (runtime/magicube.h) packs and launches the same way on the caller's buffers.
#pragma once

#include <cuda.h>

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "compiler/plan.h"
#include "llvm/Support/Error.h"
#include "runtime/epilogue.h"
#include "runtime/kernel.h"
#include "runtime/vector_sparse.h"

namespace magicube {

// The result of comparing an output with the reference.
struct Verification {
  struct Mismatch {
    int64_t at = 0, row = 0, col = 0;  // output element, and its row and column in the result
    int64_t got = 0, want = 0;         // stored values (float outputs: bit patterns)
    double value = 0;                  // float outputs: the exact dequantized double
  };
  int64_t checked = 0, differ = 0;
  int64_t blocks_checked = 0, blocks = 0;  // row-blocks compared, of all (a sample when fewer)
  int64_t nonfinite = 0;  // float outputs: stored inf (beyond the format's range)
  double max_rel = 0;     // float outputs: the largest relative error against the double
  std::optional<Mismatch> first;
  bool exact() const { return differ == 0 && checked > 0; }
};

// Device copies of one A that SpMM pipelines of the same matrix share (the same weight at
// several N, as the bench's llm section runs it): each packing of it (by what the packing
// depends on: stride, chunks, B's shuffle, bank balance, index width) and its dense int8 copy
// for the dense route. Share one only between pipelines of the same A, values included.
struct SpmmLhsCache {
  std::map<std::string, DeviceLhs> packed;
  DeviceBuffer dense;  // dense_lhs_int8(A), uploaded by the first prepare_dense
  int64_t packs = 0;   // packings made (host pack + upload), for the caller's accounting
};

class Pipeline {
 public:
  // SpMM: C (M x N; column-major with the spec's +ccol) = A (V x 1 vector-sparse, its values)
  // x B (K x N row-major). `lhs_cache`:
  // A's device copies shared with other pipelines of the same A (null: this pipeline's own).
  static std::unique_ptr<Pipeline> spmm(const OpSpec &spec, const VectorSparse &a, std::vector<int64_t> b, int64_t n,
                                        std::shared_ptr<SpmmLhsCache> lhs_cache = nullptr);
  // SDDMM: out = (A (M x K row-major) x B (K x N column-major)) at the mask's vectors, written
  // in `layout` order (SR-BCRS with `stride` vectors per stride).
  static std::unique_ptr<Pipeline> sddmm(const OpSpec &spec, const VectorSparse &mask, std::vector<int64_t> a,
                                         std::vector<int64_t> b, int64_t k, SparseLayout layout, int stride);
  virtual ~Pipeline() = default;

  OpKind op() const { return spec_.op; }
  int64_t output_elements() const { return count_; }
  // The exact int64 result (SpMM: M x N row-major whatever C's order; SDDMM: vector i's row r at i * V + r),
  // computed once, on the host's cores.
  const std::vector<int64_t> &reference();
  // Scales and bias of a float output (unit scales and zero bias until set); uploaded by the
  // next prepare().
  void set_epilogue(EpilogueArgs e);
  const EpilogueArgs &epilogue() const { return epi_host_; }

  // Whether `p` can run this problem (the reduction fits its output type); no GPU.
  virtual llvm::Error check(const Plan &p) const = 0;
  // The operands packed and uploaded as `p` wants them, and the output buffer.
  virtual llvm::Error prepare(const Plan &p) = 0;
  // One launch of `k` (a kernel of the last prepared plan) on `stream`; asynchronous.
  virtual llvm::Error launch(const Kernel &k, CUstream stream = nullptr) = 0;
  // The dense route (runtime/dense_route.h; SpMM only): A densified and B transposed,
  // uploaded once, cuBLASLt's fastest algorithm for the shape timed once on them
  // (synchronizing), the output buffer and, for an output other than int32, the GEMM's int32
  // result that the epilogue kernel reads. One dense launch is the GEMM and that epilogue. Refused, naming why, where the route cannot
  // compute the op or cuBLASLt is unavailable.
  virtual llvm::Error prepare_dense(const Context &ctx);
  // One dense GEMM (and epilogue) on `stream` after prepare_dense; asynchronous.
  virtual llvm::Error launch_dense(CUstream stream = nullptr);
  // The prepared dense GEMM's algorithm, and the operands' int8 chunks where they are split
  // ("...; in int8 chunks u8@0-128 x s8@0: 1 GEMM"; "" before prepare_dense).
  virtual std::string dense_describe() const { return ""; }
  // Fills the output with 0xAB bytes, so that every element must be written. After
  // prepare_dense, also the GEMMs' int32 planes the epilogue kernel reads (dense_scratch):
  // the algorithm selection left its own, equal, results there, which would hide a GEMM that
  // did not write its plane in the checked launch.
  virtual llvm::Error poison() { return out_.memset(0xAB); }
  // The dense route's scratch after prepare_dense (the GEMMs' int32 planes, then B's chunk
  // column sums), where the route has one (dense_needs_scratch); else nullptr.
  virtual const DeviceBuffer *dense_scratch() const { return nullptr; }
  // Downloads the output (after the caller synchronized) and compares every written element
  // of the checked row-blocks, the reference computed on the host's cores: every row-block,
  // or where that would take more than `budget` multiply-adds (0: no limit), a sample of
  // about that cost (the first, the last and evenly spaced ones).
  // The references of the checked row-blocks are kept (outputs up to 32 M elements): a second
  // verify of the same output (another route's, say) computes none again.
  llvm::Expected<Verification> verify(double budget = 0);

 protected:
  explicit Pipeline(const OpSpec &spec) : spec_(spec) {}
  llvm::Error upload_epilogue_once();
  llvm::Error allocate_output();
  // The row-blocks, and the multiply-adds of the whole reference.
  virtual int64_t num_blocks() const = 0;
  virtual double reference_cost() const = 0;
  // The exact results of row-block `blk` (SpMM: its V x N rows; SDDMM: V per vector, in order).
  virtual std::vector<int64_t> block_reference(int64_t blk) const = 0;
  // fn(at, exact, row, col) for every output element of row-block `blk` the kernel writes,
  // `ref` its block_reference.
  virtual void block_elements(int64_t blk, const std::vector<int64_t> &ref,
                              const std::function<void(int64_t, int64_t, int64_t, int64_t)> &fn) const = 0;
  // Where row-block `blk`'s values start in reference().
  virtual int64_t block_offset(int64_t blk) const = 0;

  OpSpec spec_;
  int64_t count_ = 0;
  EpilogueArgs epi_host_;
  std::optional<DeviceEpilogue> epi_;
  DeviceBuffer out_;
  std::vector<int64_t> ref_;
  std::map<int64_t, std::vector<int64_t>> block_refs_;  // verify's, by row-block
};

}  // namespace magicube
