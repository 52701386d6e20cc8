// Codegen: a plan becomes one flat, commented CUDA C++ source with inline PTX mma.sync.
#pragma once

#include <string>
#include <vector>

#include "compiler/plan.h"

namespace magicube {

// Bumped whenever generated code changes meaning: part of every cache key.
inline constexpr const char *kGeneratorVersion = "magicube-codegen-6";

struct KernelSource {
  std::string name;    // the kernel's extern "C" name, e.g. magicube_spmm_s8u4_v8_n64_pf_sm90
  std::string source;  // complete CUDA C++ (no includes)
  int threads = 128;   // threads per block
  // Parameters, in order:
  //   SpMM:  row_ptr, col_idx, lhs planes (one per lhs chunk), rhs planes (one per rhs chunk),
  //          c, M, N, ldb.
  //   SDDMM: row_ptr, col_idx (the mask's SR-BCRS), lhs planes (A, M x ldk), rhs planes (B
  //          column-major, N x ldk), c, bcrs_ptr (null for SR-BCRS output), M, K, ldk,
  //          out_stride (the mask's SR-BCRS stride).
  //   Float outputs (f32, f16/bf16 as 16-bit patterns) append: alpha, row_scale, col_scale,
  //   bias (float; pointers may be null where the spec's scale/bias mode does not use them).
  int lhs_planes = 1, rhs_planes = 1;
  // Grid: x = ceil(N / bsn) (SDDMM: ceil(longest row-block / bsn)), y = row-blocks.
  int bsn = 64;
  unsigned grid_x(long long n) const { return unsigned((n + bsn - 1) / bsn); }
};

// SpMM's B planes are stored K x ldb with ldb = N rounded up to this many elements (zero
// padded), so every gathered row segment is whole 16-byte pieces and needs no bounds
// checks. SDDMM's A and B planes are K-contiguous with pitch ldk = K rounded up likewise.
inline constexpr int kLdbAlign = 256;  // the widest BSn: no tile reads past a row

llvm::Expected<KernelSource> generate(const Plan &plan);

// NVRTC options a plan's kernel needs (part of its cache key): float epilogues are compiled
// without FMA contraction, so they round exactly as the CPU reference does.
std::vector<std::string> nvrtc_options(const Plan &plan);
// Whether nvrtc_options asks NVRTC to favour compile time over code (--Ofast-compile=min):
// off unless MAGICUBE_FAST_COMPILE=1 (read once per process).
bool fast_compile_enabled();
// Whether generate() can split this plan's row-block strides over spec.split warp groups:
// the int8 m16n8k32 dense-on-M SpMM kernel whose rings fit in 48 KiB (true for split 1).
bool can_split(const Plan &plan);

}  // namespace magicube
