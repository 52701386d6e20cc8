// spmm-resident: int8 m16n8k32, the dense dimension on M, B resident in shared memory. Each
// thread block copies its K x BSn slice of B (every rhs plane) into dynamic shared memory
// once, then its warps take the row-blocks of its part of the row-block list one at a time
// (a shared counter) and gather the rows a stride names straight from the slice with
// ldmatrix: B crosses L2 once per block instead of once per vector. Each lane loads its own
// column index and A fragment of the next strides into registers, DEPTH strides ahead (a
// register ring, unrolled). The 16-byte units of each slice row are swizzled so that 8 rows
// of different column residues mod 8 (what the bank-balanced SR-BCRS puts in every 8 slots)
// sit in 8 different bank groups.
#include "compiler/gen_common.h"

namespace magicube::gen {

namespace {

std::string S(long long x) { return std::to_string(x); }

class SpmmResident : public KernelGen {
 public:
  using KernelGen::KernelGen;



  // Register slot d of the ring: the next stride's column index of this lane (ci<d>), its
  // lhs fragments (ls<d>_<group>[]), and its row-block and flags (rb<d>, fl<d>).
  void issue(int d) {
    const std::string D = S(d);
    e.line("rb" + D + " = -1, fl" + D + " = 0;");
    auto live = e.scope("if (irb < rb_hi)");
    e.line("rb" + D + " = irb;");
    e.open("if (is < ie)");
    e.decl("const long long", "s", cast("long long", Expr("is")) * KS, "the stride's first slot");
    e.line("ci" + D + " = __ldg(col_idx + s + lane);");
    lhs_frags("ls" + D + "_", false, global_lhs(Expr::var("s")));
    e.line("++is;");
    e.close_open("else");
    e.line("fl" + D + " = 2;", "no vectors: the row-block's output is zeros");
    e.close();
    e.line("if (is >= ie) fl" + D + " |= 1, advance();");
  }

  void body() {
    const int depth = l.ring_depth, nb = lhs_regs();
    e.decl("constexpr int", "WARPS", Expr("THREADS / 32"));
    e.decl_only("extern __shared__ __align__(16) unsigned char", "smem[]");
    e.decl_only("__shared__ int", "next_rb", "the next row-block of this block's part that no warp has taken");
    declare_slice_planes();
    e.line("if (threadIdx.x == 0) next_rb = rb_lo + WARPS;", "warp w starts with row-block rb_lo + w");
    e.comment("---- this block's slice of B into shared memory, once ----");
    copy_slice();
    commit();
    e.line("__syncthreads();", "next_rb is set");
    e.comment("---- which stride is loaded next: row-blocks taken one at a time ----");
    e.decl_only("int", "irb = rb_hi, is = 0, ie = 0", "the row-block being loaded, its next stride and its end (strides)");
    e.decl_only("int", "nrb = rb_lo + warp, nb0 = 0, nb1 = 0", "the row-block after it and its row pointers, loaded early");
    e.line("if (nrb < rb_hi) nb0 = __ldg(row_ptr + 2 * nrb), nb1 = __ldg(row_ptr + 2 * nrb + 1);");
    e.declare("advance");
    e.line("auto advance = [&]() {", "start loading row-block nrb and take the one after it");
    e.line("  irb = nrb, is = nb0 / KS, ie = (nb1 + KS - 1) / KS;");
    e.line("  if (irb >= rb_hi) return;");
    e.line("  int r = 0;");
    e.line("  if (lane == 0) r = atomicAdd(&next_rb, 1);");
    e.line("  nrb = __shfl_sync(0xffffffffu, r, 0);");
    e.line("  if (nrb < rb_hi) nb0 = __ldg(row_ptr + 2 * nrb), nb1 = __ldg(row_ptr + 2 * nrb + 1);");
    e.line("};");
    e.line("advance();");
    e.comment("---- the register ring: " + S(depth) + " strides in flight per warp ----");
    for (int d = 0; d < depth; ++d) {
      const std::string D = S(d);
      e.decl_only("int", "ci" + D + " = 0, rb" + D + ", fl" + D);
      for (size_t g = 0; g < p.groups.size(); ++g) e.decl_only("u32", "ls" + D + "_" + S(g) + "[" + S(nb) + "]");
      issue(d);
    }
    wait_all("this thread's part of the slice landed");
    e.line("__syncthreads();", "and every thread's");
    declare_accumulators("");
    auto forever = e.scope("for (;;)");
    for (int d = 0; d < depth; ++d) {
      const std::string D = S(d);
      e.comment("---- ring slot " + D + " ----");
      e.line("if (rb" + D + " < 0) break;");
      {
        auto work = e.scope("if (!(fl" + D + " & 2))");
        slice_frags_and_mmas(D, "ci" + D + " < 0 ? (lane & 7) : ci" + D);
      }
      {
        auto last = e.scope("if (fl" + D + " & 1)", "the row-block's last stride: write its V rows, start the next from zero");
        e.decl("const int", "blk", Expr("rb" + D));
        epilogue();
        zero_accumulators();
      }
      issue(d);
    }
  }
};

}  // namespace

llvm::Expected<std::string> generate_spmm_resident(const Plan &p) {
  Snippets helpers;
  SpmmResident g(p, helpers);
  KernelFrame f;
  f.doc = {
      "SpMM, resident-B kernel (spmm-resident): C[M x N] = A (SR-BCRS, bank-balanced) x B[K x N]",
      "(packed as slices of BSN columns, each K x BSN contiguous with its 16-byte units",
      "swizzled: runtime/packing.h), with int8 m16n8k32 mma.sync, the dense dimension on M.",
      "Grid: x = slices of BSN dense columns, y = parts of the row-block list (equal counts).",
      "Each thread block copies its slice of B (K rows x BSN columns of every rhs plane) into",
      "dynamic shared memory once; its warps then take the part's row-blocks one at a time and,",
      "per SR-BCRS stride, gather the KS rows the stride names straight from the slice with",
      "ldmatrix (no global gather), while A's strides and column indices stream through a",
      "per-warp register ring. Dynamic shared memory: max(K, 8) x (slice row bytes).",
      "The epilogue shifts each accumulator element by its chunk term's shift, sums the terms,",
      "exchanges stacked slots between lanes, and writes the row-block's V rows.",
  };
  f.min_blocks = 1;
  Prologue &pr = f.prologue;
  slice_prologue(pr, p);
  pr.def("const int", "rb_lo", "(int)((long long)nblk * blockIdx.y / gridDim.y)", "this block's part of the row-blocks");
  pr.def("const int", "rb_hi", "(int)((long long)nblk * (blockIdx.y + 1) / gridDim.y)");
  g.body();
  return assemble(p, f, g);
}

}  // namespace magicube::gen
