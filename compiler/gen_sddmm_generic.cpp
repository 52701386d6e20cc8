// sddmm-generic: any mma besides the int8 m16n8k32 one with the vectors on M. Every fragment
// comes straight from global memory: A's V rows (one k-step ahead with the prefetch) and
// each vector's B column, both K-contiguous.
#include "compiler/gen_common.h"

namespace magicube::gen {

namespace {

std::string S(long long x) { return std::to_string(x); }

class SddmmGeneric : public KernelGen {
 public:
  using KernelGen::KernelGen;

  void body() {
    const Expr begin("begin"), qend("qend");
    e.comment("---- the B columns of this warp's vectors (rows past the list read column 0, unwritten) ----");
    const Expr qa = let("const int", "qa", begin + n_base + nw + gid);
    auto column = [&](const Expr &q) { return select(lt(q, qend), cg::call("max", {at("col_idx", q), 0}), 0); };
    e.decl("const int", "cv0", column(qa));
    // A second column: the other half of an m16 tile (dense on M), or the second tile.
    if ((dense_on_m() && p.shape.m == 16) || (!dense_on_m() && tiles() > 1)) e.decl("const int", "cv1", column(qa + 8));
    declare_accumulators("---- int32 accumulators, one mma tile per (stack group, rhs chunk, tile) ----");
    const int n = lhs_regs();
    const Expr kb = Expr::var("kb", 0), kn = Expr::var("kn");
    if (p.spec.prefetch) {
      for (size_t g = 0; g < p.groups.size(); ++g)
        e.decl_only("u32", "lf" + S(g) + "[" + S(n) + "]", "group " + S(g) + ", k-step 0");
      lhs_frags("lf", false, global_lhs(0));
    }
    {
      auto loop = e.scope("for (int kb = 0; kb < K; kb += KS)");
      e.declare("kb");
      if (p.spec.prefetch) {
        e.comment("1. prefetch A's next k-step while this one computes");
        for (size_t g = 0; g < p.groups.size(); ++g) e.decl_only("u32", "ln" + S(g) + "[" + S(n) + "]");
        e.decl("const int", "kn", kb + KS);
        {
          auto next = e.scope("if (kn < K)");
          lhs_frags("ln", false, global_lhs(kn));
        }
        e.comment("2. B columns and mmas");
        generic_rhs_frags_and_mmas("lf", kb);
        auto next = e.scope("if (kn < K)");
        for (size_t g = 0; g < p.groups.size(); ++g) {
          e.line("#pragma unroll");
          e.line("for (int i = 0; i < " + S(n) + "; ++i) lf" + S(g) + "[i] = ln" + S(g) + "[i];");
        }
      } else {
        e.comment("1. A's V rows, 2. B columns and mmas");
        lhs_frags("lf", true, global_lhs(kb));
        generic_rhs_frags_and_mmas("lf", kb);
      }
    }
    epilogue();
  }
};

}  // namespace

llvm::Expected<std::string> generate_sddmm_generic(const Plan &p) {
  Snippets helpers;
  SddmmGeneric g(p, helpers);
  KernelFrame f;
  f.doc = {
      "SDDMM, generic kernel (sddmm-generic): Out = (A[M x K] x B[K x N]) sampled at the mask's",
      "V x 1 vectors, with " + p.shape.str() + " int" + S(p.native_bits) + " mma.sync, " +
          orientation_name(p.orient) + ". A is row-major, B column-major, both",
      "K-contiguous with pitch ldk (zero padded past K). One thread block computes one",
      "row-block (V rows of A) x BSN of the row-block's sampled vectors; each warp owns 16",
      "vectors. Per k-step (KS = the mma's k):",
      "  1. A's V rows -> the lhs stack fragments (prefetched one k-step ahead when the",
      "     prefetch is on), straight from global memory;",
      "  2. each vector's B column -> the rhs fragments, straight from global memory (B is",
      "     column-major: the fragment's k-run is contiguous);",
      "  3. one mma per (stack group, rhs chunk, tile).",
      "The epilogue shifts, sums and exchanges like SpMM's and writes each vector's V values in",
      "SR-BCRS (stride out_stride) or BCRS (bcrs_ptr) order.",
  };
  sddmm_prologue(g, f);
  g.body();
  return assemble(p, f, g);
}

}  // namespace magicube::gen
