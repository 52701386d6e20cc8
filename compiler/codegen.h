// Codegen: a plan becomes one flat, commented CUDA C++ source with inline PTX mma.sync.
#pragma once

#include <string>
#include <vector>

#include "compiler/plan.h"

namespace magicube {

// Bumped whenever generated code changes meaning: part of every cache key.
inline constexpr const char *kGeneratorVersion = "magicube-codegen-12";

struct KernelSource {
  std::string name;    // the kernel's extern "C" name, e.g. magicube_spmm_s8u4_v8_n64_pf_sm90
  std::string source;  // complete CUDA C++ (no includes)
  int threads = 128;   // threads per block
  // Parameters, in order:
  //   SpMM:  row_ptr, col_idx, lhs planes (one per lhs chunk), rhs planes (one per rhs chunk),
  //          c, M, N, ldb; resident-B kernels (spec.resident) then K.
  //   SDDMM: row_ptr, col_idx (the mask's SR-BCRS), lhs planes (A, M x ldk), rhs planes (B
  //          column-major, N x ldk), c, bcrs_ptr (null for SR-BCRS output), M, K, ldk,
  //          out_stride (the mask's SR-BCRS stride).
  //   Float outputs (f32, f16/bf16 as 16-bit patterns) append: alpha, row_scale, col_scale,
  //   bias (float; pointers may be null where the spec's scale/bias mode does not use them).
  int lhs_planes = 1, rhs_planes = 1;
  // Grid: x = ceil(N / bsn) (SDDMM: ceil(longest row-block / bsn)), y = row-blocks.
  int bsn = 64;
  unsigned grid_x(long long n) const { return unsigned((n + bsn - 1) / bsn); }
  // Resident-B SpMM: grid y = parts of the row-block list, and dynamic shared memory of
  // max(K, 8) * smem_per_k bytes (the B slice, every rhs plane).
  bool resident = false;
  int smem_per_k = 0;
  size_t dynamic_smem(long long k) const { return resident ? size_t(k < 8 ? 8 : k) * size_t(smem_per_k) : 0; }
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
// Whether generate() can build this plan with spec.resident set: the int8 m16n8k32
// dense-on-M SpMM kernel, prefetch on, split 1, and slice rows of 16, 32, 48, 64 or 128 bytes
// per rhs plane (8-bit B: BSn 16, 32, 48, 64, 128; 4-bit B: BSn 32, 64, 96, 128).
bool can_reside(const Plan &plan);
// A resident B slice row of `units` 16-byte units (1, 2, 3, 4 or 8) stores unit u of row k at
// u ^ resident_swizzle(k, units): rows of 8 different residues mod 8 then start in 8
// different shared-memory bank groups. Rows of 3 units need no swizzle: row k starts in bank
// group 3k mod 8, and 3 is odd, so 8 residues give 8 groups.
inline int resident_swizzle(long long k, int units) {
  switch (units) {
    case 1: case 3: return 0;
    case 2: return int((k >> 2) & 1);
    case 4: return int((k >> 1) & 3);
    default: return int(k & 7);
  }
}
// The dynamic shared memory a resident-B kernel of this plan needs for B with k rows.
size_t resident_smem(const Plan &plan, long long k);

}  // namespace magicube
