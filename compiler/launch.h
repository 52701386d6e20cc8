// The launch half of a plan: which kernel family runs it, with how many threads, warp
// groups, ring stages and bytes of shared memory, and the kernel's parameter list. The
// planner fills Plan::launch; codegen prints it, the runtime launches from it, and
// legality (can this plan split, keep B resident, fit shared memory) is answered here from
// the plan and the arch facts. Nothing else decides a launch parameter.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace magicube {

struct Plan;
struct Chunk;

// One generator per family (compiler/codegen.cpp).
enum class KernelFamily {
  SpmmRing,      // int8 m16n8k32, dense on M: every input of a stride through one cp.async ring
  SpmmResident,  // int8 m16n8k32, dense on M: a K x BSn slice of B in dynamic shared memory
  SpmmDecode,    // int8 m16n8k32, dense on M, N <= 64: B resident, each block's strides split over its warps
  SpmmGeneric,   // any other mma (sm_80 int4, m8n8, sparse on M): B gathered into shared memory
  SddmmFast,     // int8 m16n8k32, vectors on M: 16-byte K-contiguous loads straight into registers
  SddmmGeneric,  // any other mma: fragments straight from global memory
};
const char *family_name(KernelFamily f);  // "spmm-ring", "spmm-resident", ...

// The language codegen writes a plan's kernel in: CUDA C++ for NVRTC, or PTX for ptxas alone
// (no C++ front end, no NVVM: a third of a cold compile). PTX for the plans
// ptx_emittable() names: the common SpMM ring and SDDMM fast kernels.
enum class KernelLanguage { Cuda, Ptx };
const char *language_name(KernelLanguage l);  // "cuda" | "ptx"

// What a kernel parameter carries; the runtime fills each from its launch values.
enum class ParamKind {
  RowPtr,     // SR-BCRS: 2 ints per row-block (first slot, end of the real vectors)
  ColIdx,     // SR-BCRS column per slot, -1 pads
  LhsPlane,   // lhs chunk plane `plane`
  RhsPlane,   // rhs chunk plane `plane`
  Out,        // the output
  BcrsPtr,    // SDDMM: BCRS row-block offsets (null: SR-BCRS output)
  M, N, K,    // int
  Ldb,        // SpMM: B's row pitch in elements (resident: the slice width)
  Ldk,        // SDDMM: A's and B's K pitch in elements
  OutStride,  // SDDMM: the mask's SR-BCRS stride
  Alpha,      // float
  RowScale, ColScale, Bias,  // const float *
  StrideMeta,  // decode: per stride, its row-block | 1 << 30 (its first stride) | 1 << 31 (its last)
  StrideNext,  // decode: per t = 0..T, the first stride at or after t that starts a row-block (T: none)
  Strides,     // decode: int, T, the strides of the packed A
  PanelFirst,  // decode in K panels: per panel p and row-block b, p x nblk + b's first stride (then T)
};
struct KernelParam {
  ParamKind kind;
  int plane = 0;        // LhsPlane / RhsPlane
  std::string type;     // CUDA type, e.g. "const int *__restrict__"
  std::string name;     // e.g. "row_ptr", "a0"
  std::string comment;  // one line, printed beside it
  bool is_pointer() const;
};

struct Launch {
  KernelFamily family = KernelFamily::SpmmGeneric;
  int threads = 128;          // per block
  int warp_groups = 1;        // SpMM ring: groups that split a row-block's strides (spec.split)
  int warps_per_group = 4;
  int warp_cols = 16;         // dense columns (SDDMM: vectors) per warp
  int tiles = 1;              // mma tiles per warp along the dense dimension
  int ring_depth = 1;         // strides in flight: cp.async stages (ring), register ring (resident); 1 = none
  int index_ring = 1;         // SpMM ring: strides of column indices in shared memory
  int static_smem = 0;        // bytes of static shared memory
  int reduction_smem = 0;     // SpMM ring, split: a separate buffer for the groups' sums (0: reuses the ring);
                              // decode: the warps' partial accumulators (dynamic, over B's slice once the loop is done)
  int slice_bytes_per_k = 0;  // resident, decode: dynamic shared memory per row of B (every rhs plane)
  int block_cols = 64;        // dense columns (SDDMM: vectors) per block: grid x = ceil(N / block_cols)
  // Programmatic dependent launch (decode, sm_90): launched with programmatic stream
  // serialization, the kernel lets the stream's next grid launch at once and waits for the
  // previous one (griddepcontrol) before its first global access, so a chain of layers
  // overlaps each launch and block start with the previous kernel's tail.
  bool pdl = false;
  // Decode in K panels (spec.panel): B's rows a pass holds; 0: all of K in one pass.
  int panel_rows = 0;
  // Decode: A's ring loads (column indices and values) skip L1 (ld.global.nc.L1::no_allocate):
  // A streams through once a block, so its lines only take L1's room and fills.
  bool a_skip_l1 = false;
  // Decode in K panels, one 16-column tile at 16 warps or fewer (sm_90): where K takes two panels
  // (and the part's sums fit shared memory) the kernel is launched in clusters of two blocks that
  // share one part of the row-blocks, each block one panel (B's rows of it in shared memory: half
  // the slice a block copies), keeping its sums in shared memory until the pair adds them after
  // both passes; launched without clusters it makes one pass a panel, each adding into C.
  bool panel_cluster = false;
  // Decode without K panels (spec.shares): block b of G takes [b x W / G, (b + 1) x W / G) of the
  // W = slices x T strides, slice after slice, copying each slice it touches, so a grid of
  // (1, SMs) runs one wave where whole waves of (slice, part) blocks would leave SMs idle; a
  // grid of (slices, parts) runs as without. Without it the kernel keeps only the slice of
  // blockIdx.x live through its loop (the shares' state cost 1-4 % where they are not used:
  // bench/NOTES.md, Session 31).
  bool slice_shares = false;
  KernelLanguage language = KernelLanguage::Cuda;
  std::vector<KernelParam> params;  // in order

  // B's slice lives in dynamic shared memory (resident, decode).
  bool b_resident() const { return family == KernelFamily::SpmmResident || family == KernelFamily::SpmmDecode; }
  // Dynamic shared memory for B with k rows (resident: max(k, 8) slice rows; decode: that, or
  // a panel's rows, or the warps' partial sums, whichever is larger; else 0).
  size_t dynamic_smem(long long k) const {
    if (!b_resident()) return 0;
    if (panel_rows && k > panel_rows) k = panel_rows;
    const size_t slice = size_t(k < 8 ? 8 : k) * size_t(slice_bytes_per_k);
    return family == KernelFamily::SpmmDecode && size_t(reduction_smem) > slice ? size_t(reduction_smem) : slice;
  }
  unsigned grid_x(long long n) const { return unsigned((n + block_cols - 1) / block_cols); }
  // The passes over K of k rows: ceil(k / panel_rows) in K panels (at least one), else 1.
  long long panels(long long k) const { return panel_rows && k > panel_rows ? (k + panel_rows - 1) / panel_rows : 1; }
  // The blocks of a cluster at K (panel_cluster): 2 where K takes two panels, else 1.
  unsigned cluster_blocks(long long k) const { return panel_cluster && panels(k) == 2 ? 2 : 1; }
  // In a cluster of two: the dynamic shared memory each block keeps its row-blocks' sums in, past
  // dynamic_smem(k), for parts of at most `row_blocks` row-blocks (a warp's partial sums each).
  size_t cluster_sums_bytes(long long row_blocks) const {
    return size_t(row_blocks) * size_t(reduction_smem / (warps_per_group > 0 ? warps_per_group : 1));
  }
  std::string str() const;  // one readable line
};

// Fills plan.launch from the plan's spec, chunks and mma, and returns why the plan cannot
// build its spec ("" when it can): split on a kernel that cannot split or whose rings do not
// fit static shared memory, resident B on a kernel that cannot keep it, a slice row of a
// width the kernel cannot gather.
std::string plan_launch(Plan &plan);

// Whether codegen writes this plan's kernel as PTX: spmm-ring with one warp group and a ring,
// sddmm-fast; one lhs and one rhs chunk of 8 bits (or 4 bits widened as value << 4), V = 8,
// integer output. MAGICUBE_PTX=0 in the environment (read once) keeps every kernel CUDA.
bool ptx_emittable(const Plan &plan, const Launch &launch);
bool ptx_emission_enabled();

// Whether a resident plan's B slice for k rows fits a block's shared memory on its arch;
// the error names the bytes. Success for plans without resident B.
std::string check_shared_memory(const Plan &plan, long long k);

// Shared-memory layout facts that codegen prints and plan_launch counts.
int ring_row_pitch(const Plan &plan, const Chunk &c);   // a gathered B row: BSn bytes + 16 (conflict-free)
int a_stride_bytes(const Plan &plan, const Chunk &c);   // one SR-BCRS stride of an lhs plane
int slice_row_bytes(const Plan &plan, const Chunk &c);  // a resident B slice row of one rhs plane

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

}  // namespace magicube
