// spmm-generic: any mma the planner picks besides the int8 m16n8k32 dense-on-M one (sm_80's
// int4 m16n8k64 and m8n8k32, m8n8k16, the sparse-on-M orientations). Per stride the block
// gathers B's rows into shared memory (the next stride's prefetched into registers), each
// warp builds its fragments from there and from A's stride in global memory.
#include <optional>

#include "compiler/gen_common.h"

namespace magicube::gen {

namespace {

std::string S(long long x) { return std::to_string(x); }

class SpmmGeneric : public KernelGen {
 public:
  using KernelGen::KernelGen;
  const Expr begin = Expr::var("begin"), end = Expr::var("end");

  int row_bytes(const Chunk &c) const { return slice_row_bytes(p, c); }  // BSn columns of one plane
  int pieces(const Chunk &c) const { return row_bytes(c) / 16; }
  int total(const Chunk &c) const { return p.shape.k * pieces(c); }  // 16-byte pieces of a stride
  int iters(const Chunk &c) const { return (total(c) + l.threads - 1) / l.threads; }

  // The B rows of the stride at `stride`: into the prefetch registers pf<j>, or straight into
  // shared memory.
  void gather(bool into_regs, const Expr &stride) {
    for (size_t j = 0; j < p.rhs.size(); ++j) {
      const Chunk &c = p.rhs[j];
      const std::string J = S(j);
      e.unrolled("it", iters(c),
                 "rhs plane " + J + ": " + S(p.shape.k) + " rows x " + S(pieces(c)) + " x 16 bytes",
                 [&](const Expr &it) {
                   const Expr i = let("const int", "i", tid_x + it * THREADS);
                   std::optional<Emitter::Scope> guard;
                   if (total(c) % l.threads) guard.emplace(e.scope("if (" + lt(i, total(c)).str() + ")"));
                   const Expr kk = let("const int", "kk", i / pieces(c));
                   const Expr piece = let("const int", "piece", i % pieces(c));
                   const Expr col = let("const int", "col", cg::call("max", {at("col_idx", stride + kk), 0}),
                                        "pad (-1) reads row 0, times A's zero");
                   const Expr elem = cast("long long", col) * Expr("ldb") + n_base;
                   const Expr src = let("const uint4 *", "src",
                                        cast("const uint4 *", Expr("b" + J) + elem * c.storage_bits / 8) + piece);
                   const Expr v = cg::call("__ldg", {src});
                   if (into_regs) e.assign(at("pf" + J, it), v);
                   else e.assign(deref(cast("uint4 *", addr(at(at("sb" + J, kk), piece * 16)))), v);
                 });
    }
  }

  // The prefetched pieces into shared memory.
  void stage_prefetched() {
    for (size_t j = 0; j < p.rhs.size(); ++j) {
      const Chunk &c = p.rhs[j];
      const std::string J = S(j);
      e.unrolled("it", iters(c), "registers -> shared, plane " + J, [&](const Expr &it) {
        const Expr i = let("const int", "i", tid_x + it * THREADS);
        const Expr to = deref(cast("uint4 *", addr(at(at("sb" + J, i / pieces(c)), (i % pieces(c)) * 16))));
        e.guarded(lt(i, total(c)), to.str() + " = " + at("pf" + J, it).str() + ";");
      });
    }
  }

  void body() {
    e.comment("---- shared memory: the stride's gathered B rows, one buffer per rhs chunk plane ----");
    for (size_t j = 0; j < p.rhs.size(); ++j)
      e.decl_only("__shared__ __align__(16) unsigned char", "sb" + S(j) + "[KS][" + S(ring_row_pitch(p, p.rhs[j])) + "]",
             p.rhs[j].str() + ", " + S(p.rhs[j].storage_bits) + "-bit, row = stored slot");
    declare_accumulators("---- int32 accumulators, one mma tile per (stack group, rhs chunk, dense tile) ----");
    const Expr s = Expr::var("s");
    if (p.spec.prefetch) {
      for (size_t j = 0; j < p.rhs.size(); ++j)
        e.decl_only("uint4", "pf" + S(j) + "[" + S(iters(p.rhs[j])) + "]", "prefetched B pieces, plane " + S(j));
      {
        auto first = e.scope("if (begin < end)", "prefetch the first stride");
        gather(true, begin);
      }
    }
    {
      auto loop = e.scope("for (int s = begin; s < end; s += KS)");
      e.declare("s");
      if (p.spec.prefetch) {
        e.comment("1. stage the prefetched rows, then prefetch the next stride's while this one computes");
        stage_prefetched();
        e.line("__syncthreads();");
        auto next = e.scope("if (s + KS < end)");
        gather(true, s + KS);
      } else {
        e.comment("1. gather this stride's B rows");
        gather(false, s);
        e.line("__syncthreads();");
      }
      e.comment("2. fragments and mmas");
      lhs_frags("lf", true, global_lhs(s));
      generic_rhs_frags_and_mmas("lf", 0);
      e.line("__syncthreads();");
    }
    epilogue();
  }
};

}  // namespace

llvm::Expected<std::string> generate_spmm_generic(const Plan &p) {
  Snippets helpers;
  SpmmGeneric g(p, helpers);
  KernelFrame f;
  f.doc = {
      "SpMM, generic kernel (spmm-generic): C[M x N] = A (SR-BCRS) x B[K x N], with " + p.shape.str() + " int" +
          S(p.native_bits) + " mma.sync, " + orientation_name(p.orient) + ".",
      "One thread block computes one row-block (V rows) x BSN dense columns; each warp owns 16",
      "dense columns. Per SR-BCRS stride (KS vectors = the mma's k):",
      "  1. gather the KS rows of B named by the stride's column indices into shared memory",
      "     (16-byte loads, rows padded by 16 bytes), with the next stride's rows prefetched",
      "     into registers when the prefetch pipeline is on;",
      "  2. build the mma fragments: A's stride straight from global memory (it is stored",
      "     row-major, as the fragment wants it), B's gathered rows transposed to k-contiguous",
      "     registers;",
      "  3. one mma per (stack group, rhs chunk, tile) into int32 accumulators.",
      "The epilogue shifts each accumulator element by its chunk term's shift, sums the terms,",
      "exchanges stacked slots between lanes, and writes the V rows.",
  };
  spmm_row_block_prologue(g, f, p.launch.warps_per_group);
  g.body();
  return assemble(p, f, g);
}

}  // namespace magicube::gen
