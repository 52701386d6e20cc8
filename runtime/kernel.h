// A compiled, loaded kernel and how to get one: plan -> source -> cubin (memory cache, disk
// cache, NVRTC) -> module in the current context (per-context memory cache).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "compiler/codegen.h"
#include "compiler/plan.h"
#include "jit/compile_cache.h"
#include "runtime/cuda_driver.h"
#include "runtime/epilogue.h"
#include "runtime/packing.h"

namespace magicube {

// The cubin target for a plan on a device: the device's own arch. A plan for an older arch
// runs on a newer device (e.g. an sm_80 int4 plan on sm_90); the reverse is refused.
llvm::Expected<int> target_arch(const Plan &plan, int device_cc);

// The cache key's canonical IR: the plan's JSON (every chunk, term and layout decision).
std::string canonical_plan(const Plan &plan);

// The NVRTC options of `plan`'s kernel: nvrtc_options(plan) (compiler/codegen.h), then those
// of $MAGICUBE_NVRTC_OPTIONS (space-separated, read once; e.g. "--Ofast-compile=mid" to try
// a compile-time trade-off on the GPU). Every one is part of the cache key. None for a
// kernel written in PTX (Launch::language): NVRTC does not compile it.
std::vector<std::string> kernel_nvrtc_options(const Plan &plan);

// The cache key of `plan`'s kernel compiled for `arch`: generator version, the plan's JSON
// (its kernel language included), its NVRTC options (kernel_nvrtc_options), the arch and the
// compilers' versions (toolchain_version(): the disk cache's and the bundles' key).
CacheKey kernel_cache_key(const Plan &plan, int arch);

// `src` (generate(plan)) compiled for `arch` with no cache in between: CUDA through NVRTC with
// kernel_nvrtc_options(plan), PTX through nvJitLink (jit/compile.h). What every cache miss
// runs; the bench times cold compiles with it.
llvm::Expected<std::string> compile_kernel_source(const Plan &plan, const KernelSource &src, int arch);

// The process's compile cache (CompileCache::process()) with its AOT bundles opened (once:
// $MAGICUBE_BUNDLE, else the bundle installed beside the library).
CompileCache &kernel_compile_cache();

// Cubin of `plan` compiled for `arch`, through kernel_compile_cache().
llvm::Expected<std::string> kernel_cubin(const Plan &plan, const KernelSource &src, int arch);

// The batch compile: independent variants compiled in parallel (NVRTC is thread-safe), each
// through kernel_compile_cache(), so later Kernel::get calls find them in memory. Used by
// tune, `magicube cache warm` and the bench.
struct PlanTarget {
  Plan plan;
  int arch = 0;  // the cubin's sm_XX (target_arch of the plan on the device)
};
struct Precompiled {
  std::string name;   // the kernel's name
  CacheKey key;       // kernel_cache_key(plan, arch)
  std::string cubin;  // empty on failure
  std::string error;  // "" on success, else "codegen: ..." or "compile: ..."
  double ms = 0;      // this target's wall time (codegen + cache lookup or compile)
};
// `threads` 0: the host's hardware threads, at most 16. Result i is targets[i]'s.
std::vector<Precompiled> precompile_kernels(llvm::ArrayRef<PlanTarget> targets, unsigned threads = 0);

// A's and B's packed planes on the device.
struct DeviceLhs {
  DeviceBuffer row_ptr, col_idx;
  std::vector<DeviceBuffer> planes;
  int64_t rows = 0, cols = 0, num_blocks = 0, max_block_length = 0;
  DeviceBuffer dense;  // the dense route's A (M x K int8, row-major) instead of the above buffers
  int index_bits = 32;  // 16: a decode plan's column indices (PackedLhs::index_bits)
  int panel_rows = 0;   // a decode plan's K panel (PackedLhs::panel_rows)
};
struct DeviceRhs {
  std::vector<DeviceBuffer> planes;
  int64_t k = 0, n = 0, ldb = 0;
  DeviceBuffer dense_t;  // the dense route's B as Bt (N x K int8, row-major) instead of the planes
};
llvm::Expected<DeviceLhs> upload(const PackedLhs &a, const SrBcrs &layout);
llvm::Expected<DeviceRhs> upload(const PackedRhs &b);

// SDDMM's operands: the mask (its SR-BCRS pointers and columns, and the BCRS offsets of its
// row-blocks for BCRS output) and the K-contiguous dense planes.
struct DeviceMask {
  DeviceBuffer row_ptr, col_idx, bcrs_ptr;
  int64_t rows = 0, cols = 0, num_blocks = 0, max_block_length = 0, num_slots = 0, num_vectors = 0;
  int stride = 32;
  int v = 1;
};
struct DeviceDense {
  std::vector<DeviceBuffer> planes;
  int64_t rows = 0, k = 0, ld = 0;
};
llvm::Expected<DeviceMask> upload_mask(const SrBcrs &mask, const VectorSparse &pattern);
llvm::Expected<DeviceDense> upload(const PackedDense &d);

// The float epilogue's scales and bias on the device.
struct DeviceEpilogue {
  float alpha = 1.0f;
  DeviceBuffer row_scale, col_scale, bias;
};
llvm::Expected<DeviceEpilogue> upload(const EpilogueArgs &e);

// What a kernel's float epilogue is passed: alpha (1 unless the spec scales per tensor) and
// the vectors' addresses (0 where absent).
struct EpilogueValues {
  float alpha = 1.0f;
  CUdeviceptr row_scale = 0, col_scale = 0, bias = 0;
};
// The values of `e` (null: none) for an output of rows x cols of `spec`; refuses vectors the
// spec needs but `e` lacks or holds too few of ("epilogue: row_scale has 3 values, expected 64").
// Integer outputs: the defaults.
llvm::Expected<EpilogueValues> epilogue_values(const OpSpec &spec, const DeviceEpilogue *e, int64_t rows, int64_t cols);

// The bytes one output element of type `t` takes on the device: 4 (int32, f32), 8 (int64),
// 2 (f16, bf16).
size_t stored_bytes(OutType t);

// `count` output elements of type `t` downloaded from `buf`, each as stored, widened to
// int64: integers sign-extended, float bit patterns zero-extended.
llvm::Expected<std::vector<int64_t>> download_stored(const DeviceBuffer &buf, int64_t count, OutType t);

// Where SDDMM writes: the mask's SR-BCRS value layout (num_slots x V values) or BCRS (the
// vectors in order, V values each: num_vectors x V).
enum class SparseLayout { SrBcrs, Bcrs };

// The grid of a resident-B SpMM kernel: x = slices of BSn columns, y = parts of the
// row-block list, as many as fill the device's SMs once.
Dim3 resident_grid(const Launch &launch, int64_t n, int64_t row_blocks, size_t smem, int sm_count);

// The grid of a decode SpMM kernel: x = slices of BSn columns (one when N <= BSn), y = parts
// of each slice's strides (at most one per row-block; the kernel balances the row-blocks by
// strides). One block fits an SM (B's slice fills its shared memory), so the grid runs in
// waves of sm_count blocks, each block first loading its K x BSn slice: y is the part count
// that finishes soonest by waves x (strides a part + a slice load counted in strides). Few
// slices: one block per SM (y = sm_count / slices); many (N = 8192 at BSn=48: 171 slices),
// 3 parts a slice (4 full waves) instead of 1 (a second wave of 39 blocks).
// A kernel with shares (Launch::slice_shares) also takes a grid of (1, G): block b of G runs a
// G-th of all slices' strides, slice after slice (a segment a slice, each copying its slice);
// chosen where that finishes sooner (N = 8192 at BSn=48: one wave of 132 blocks, 2-3 copies each).
// `cluster`: the blocks of a cluster (Launch::cluster_blocks; 0: as the launch asks at K).
Dim3 decode_grid(const Launch &launch, int64_t n, int64_t row_blocks, int64_t strides, int64_t k, int sm_count,
                 unsigned cluster = 0);
// The most slices one block of a (1, `blocks`) decode grid touches (its segments, each a copy).
int64_t decode_segments(int64_t slices, int64_t blocks);

// A loaded kernel of either op.
class Kernel {
 public:
  const Plan &plan() const { return plan_; }
  // The kernel's name; its CUDA source only when this process compiled it (a cubin from a
  // cache or bundle is loaded without generating the source: generate(plan()) gives it).
  const KernelSource &source() const { return src_; }
  CUfunction function() const { return fn_; }
  int arch() const { return arch_; }
  // C (M x N row-major, int32 or int64 per the plan) = A x B on `stream`; asynchronous.
  // Refused when shapes disagree or the reduction length exceeds the plan's bound.
  // Float outputs take their scales and bias from `epi` (required when the spec uses them).
  llvm::Error launch(const DeviceLhs &a, const DeviceRhs &b, CUdeviceptr c, CUstream stream,
                     const DeviceEpilogue *epi = nullptr) const;

  // SDDMM: out = (A x B) at the mask's vectors, int32 or int64 per the plan; asynchronous.
  llvm::Error launch_sddmm(const DeviceMask &mask, const DeviceDense &a, const DeviceDense &b, CUdeviceptr out,
                           SparseLayout layout, CUstream stream, const DeviceEpilogue *epi = nullptr) const;

  // Loaded in the current context, from the per-context memory cache when present.
  static llvm::Expected<std::shared_ptr<const Kernel>> get(const Context &ctx, const Plan &plan);

 private:
  Plan plan_;
  KernelSource src_;
  std::shared_ptr<Module> module_;
  CUfunction fn_ = nullptr;
  int arch_ = 0;
  int sm_count_ = 0, max_shared_ = 0;  // the device's SMs; dynamic shared memory a block may use (bytes)
};

using SpmmKernel = Kernel;

}  // namespace magicube
