// spmm-ring: int8 m16n8k32, the dense dimension on M. Everything a stride needs goes
// global -> shared memory through one STAGES-deep cp.async ring, so the loop never waits on a
// load it has just issued:
//   - the stride's column indices, 2 * (STAGES - 1) strides ahead of their use;
//   - the gathered B rows (8-bit, or 4-bit kept packed) and A's stride, STAGES - 1 ahead.
// ldmatrix.x4.trans.b16 turns the B rows into k-contiguous A fragments: two prmt per register
// pair for bytes, mask/shift + prmt per dense column for packed nibbles. The plan's 16-slot
// column shuffle matches that k order. With split 2, two warp groups take alternate strides,
// each with its own ring, and add their sums at the end.
#include <optional>

#include "compiler/gen_common.h"

namespace magicube::gen {

namespace {

std::string S(long long x) { return std::to_string(x); }

class SpmmRing : public KernelGen {
 public:
  using KernelGen::KernelGen;

  int kg() const { return l.warp_groups; }
  int gthreads() const { return l.threads / kg(); }
  const Expr KG = Expr::named("KG", l.warp_groups), GT = Expr::named("GT", l.threads / l.warp_groups);
  const Expr STAGES = Expr::named("STAGES", l.ring_depth), IR = Expr::named("IR", l.index_ring);
  const Expr grp = kg() == 1 ? Expr::named("grp", 0) : Expr::var("grp", 0, kg() - 1);
  const Expr tid = Expr::var("tid", 0, l.threads / l.warp_groups - 1);
  const Expr begin = Expr::var("begin"), end = Expr::var("end");
  const Expr nstrides = Expr::var("nstrides", 0);
  std::vector<Expr> bkk;  // per rhs plane: this thread's first B row of a stride

  int pitch(const Chunk &c) const { return ring_row_pitch(p, c); }    // a ring row: BSn bytes + 16
  int pieces(const Chunk &c) const { return slice_row_bytes(p, c) / 16; }

  // A barrier of this thread's warp group (the whole block when there is one group).
  void group_sync() {
    if (kg() == 1) e.line("__syncthreads();");
    else e.line("asm volatile(\"bar.sync %0, %1;\" :: \"r\"(grp + 1), \"n\"(GT));", "this warp group");
  }

  // Per-thread constants of the copies, computed once: which B rows and 16-byte pieces this
  // thread copies (the same every stride), its source pointers and shared-memory offsets.
  void copy_setup() {
    e.comment("---- this thread's share of every stride's copies (the same pieces each stride) ----");
    e.decl("const int *", "isrc", Expr("col_idx") + begin + grp * KS + tid * 4, "indices: threads 0..KS/4-1, 16 bytes each");
    e.decl("const unsigned", "idst", cvta_shared(addr(at(at(at("sidx", grp), 0), (tid % (KS / 4)) * 4))));
    for (size_t j = 0; j < p.rhs.size(); ++j) {
      const Chunk &c = p.rhs[j];
      const std::string J = S(j);
      const int n = pieces(c);
      e.decl("const unsigned char *", "bsrc" + J, Expr("b" + J) + n_base * c.storage_bits / 8 + (tid % n) * 16,
             "+ row * ldb");
      bkk.push_back(let("const int", "bkk" + J, tid / n, "first row of this thread (+ GT / " + S(n) + " per copy)"));
      e.decl("const unsigned", "bdst" + J,
             cvta_shared(addr(at(at(at(at("sb" + J, grp), 0), bkk[j]), (tid % n) * 16))));
    }
    e.decl("const unsigned", "ldbb", cast("unsigned", Expr("ldb")) * p.rhs[0].storage_bits / 8, "B row pitch in bytes");
    for (size_t i = 0; i < p.lhs.size(); ++i) {
      const std::string I = S(i);
      const int n = a_stride_bytes(p, p.lhs[i]) / 16;
      e.decl("const unsigned char *", "asrc" + I,
             Expr("a" + I) + cast("long long", begin + grp * KS) * V * p.lhs[i].storage_bits / 8 + tid * 16);
      e.decl("const unsigned", "adst" + I, cvta_shared(addr(at(at(at("sa" + I, grp), 0), (tid % n) * 16))));
    }
  }

  // The column indices of stride st into the index ring (KS ints: KS / 4 pieces).
  void issue_indices(const Expr &st) {
    e.guarded(lt(tid, KS / 4), cp_async16_text(Expr("idst") + (st % IR) * (KS * 4), Expr("isrc") + st * (KG * KS)));
  }

  // Stride st's B rows (named by its indices, already in the index ring) and A values into
  // ring slot st % STAGES, in a block headed `head` ("if (st < nstrides)" or none).
  void issue_stride(const Expr &st, const std::string &head) {
    auto block = e.scope(head);
    const Expr slot_w = let("const int", "slot_w", st % STAGES);
    const Expr ids = let("const int *", "ids", at(at("sidx", grp), st % IR));
    for (size_t j = 0; j < p.rhs.size(); ++j) {
      const Chunk &c = p.rhs[j];
      const std::string J = S(j);
      const int n = pieces(c), total = p.shape.k * n, gt = gthreads(), rows_per = gt / n;  // rows one pass covers
      const int passes = (total + gt - 1) / gt;
      e.unrolled("gi", passes,
                 "B plane " + J + ": " + S(p.shape.k) + " rows x " + S(n) + " x 16 bytes (" + S(c.storage_bits) + "-bit)",
                 [&](const Expr &gi) {
                   const Expr row = bkk[j] + gi * rows_per;
                   std::optional<Emitter::Scope> in_stride;
                   if (total % gt) {  // the last pass has fewer rows than threads
                     if (passes > 1) e.line("if (" + ge(row, KS).str() + ") break;");
                     else in_stride.emplace(e.scope("if (" + lt(row, KS).str() + ")"));
                   }
                   const Expr col = let("const unsigned", "col", cast("unsigned", cg::call("max", {at(ids, row), 0})),
                                        "pads (-1) read row 0, times A's zeros");
                   cp_async16(Expr("bdst" + J) + slot_w * (p.shape.k * pitch(c)) + gi * (rows_per * pitch(c)),
                              Expr("bsrc" + J) + cast("unsigned long long", col) * Expr("ldbb"));
                 });
    }
    for (size_t i = 0; i < p.lhs.size(); ++i) {
      const int bytes = a_stride_bytes(p, p.lhs[i]), n = bytes / 16;
      const std::string I = S(i);
      e.guarded(lt(tid, n), cp_async16_text(Expr("adst" + I) + slot_w * bytes, Expr("asrc" + I) + st * (KG * bytes)),
                "A plane " + I + ": " + S(n) + " x 16 bytes");
    }
  }

  // A's fragments (from ring slot `slot`), the rhs fragments and the mmas of one stride.
  void compute(const Expr &slot) {
    const LhsSource shared_a = [this, slot](int li, const Expr &r, const Expr &k0) {
      const Chunk &c = p.lhs[li];
      Expr off = r * KS + k0;
      if (c.storage_bits == 4) off = off / 2;
      const Expr ptr = addr(at(at(at("sa" + S(li), grp), slot), off));
      if (c.storage_bits == 8) return deref(cast("const u32 *", ptr));
      helpers.use("u16");
      const Expr half = deref(cast("const u16 *", ptr));
      if (p.nibble_prescale) return call("mc_widen4to8_hi", {half});
      return call("mc_widen4to8", {half, c.is_signed ? "true" : "false"});
    };
    lhs_frags("lf", true, shared_a);
    ldmatrix_frags_and_mmas(
        [&](int j, int off) {
          const Expr colb = all_rhs_nibbles() ? nw / 2 + off : nw + off;
          return cvta_shared(addr(at(at(at(at("sb" + S(j), grp), slot), "lane"), colb)));
        },
        "lf");
  }

  // With KG = 2 warp groups: group 1 hands its accumulators to group 0 through shared memory
  // (the first rhs plane's ring, free once both groups are done, or a buffer of its own) and
  // leaves.
  void group_sum() {
    if (kg() == 1) return;
    const int n = nc();
    e.comment("---- the warp groups' sums: group 1's accumulators into group 0's ----");
    e.line("__syncthreads();", "both groups are done with their rings");
    e.decl("int *", "red", Expr(l.reduction_smem ? "sred" : "(int *)&sb0[0][0][0][0]"), "[accumulator][register][tid]");
    const Expr i = Expr::var("i", 0, n - 1);
    {
      auto one = e.scope("if (grp == 1)");
      int a = 0;
      for_each_accumulator([&](const std::string &acc) {
        e.line("for (int i = 0; i < " + S(n) + "; ++i) " + at("red", (a++ * n + i) * GT + tid).str() + " = " + acc + "[i];");
      });
    }
    e.line("__syncthreads();");
    e.line("if (grp != 0) return;");
    int a = 0;
    for_each_accumulator([&](const std::string &acc) {
      e.line("for (int i = 0; i < " + S(n) + "; ++i) " + acc + "[i] += " + at("red", (a++ * n + i) * GT + tid).str() + ";");
    });
  }

  void body() {
    e.comment("---- shared memory: the ring of gathered B rows (padded by 16 bytes: conflict-free ldmatrix),");
    e.comment("     A's strides and the column indices ----");
    for (size_t j = 0; j < p.rhs.size(); ++j)
      e.decl_only("__shared__ __align__(16) unsigned char", "sb" + S(j) + "[KG][STAGES][KS][" + S(pitch(p.rhs[j])) + "]",
             p.rhs[j].str() + ", " + S(p.rhs[j].storage_bits) + "-bit");
    for (size_t i = 0; i < p.lhs.size(); ++i)
      e.decl_only("__shared__ __align__(16) unsigned char", "sa" + S(i) + "[KG][STAGES][" + S(a_stride_bytes(p, p.lhs[i])) + "]",
             p.lhs[i].str() + ", " + S(p.lhs[i].storage_bits) + "-bit, V x KS row-major");
    e.decl_only("__shared__ __align__(16) int", "sidx[KG][IR][KS]");
    if (l.reduction_smem)
      e.decl_only("__shared__ __align__(16) int", "sred[" + S(l.reduction_smem / 4) + "]", "the groups' accumulators");
    declare_accumulators("");
    e.decl("const int", "nstrides", kg() == 1 ? (end - begin) / KS : ((end - begin) / KS - grp + KG - 1) / KG,
           kg() == 1 ? "" : "this group's strides: grp, grp + KG, ...");
    copy_setup();
    const Expr it = Expr::var("it", 0);
    if (l.ring_depth == 1) {
      auto loop = e.scope("for (int it = 0; it < nstrides; ++it)", "no prefetch: indices, gather, compute");
      e.declare("it");
      issue_indices(it);
      commit();
      wait_all();
      group_sync();
      issue_stride(it, "");
      commit();
      wait_all();
      group_sync();
      compute(0);
      group_sync();
    } else {
      e.comment("---- prologue: indices of strides 0 .. 2*(STAGES-1)-1, then strides 0 .. STAGES-2 ----");
      {
        const Expr i = Expr::var("i", 0), q = KS / 4;
        auto loop = e.scope("for (int i = tid; i < min(nstrides, 2 * (STAGES - 1)) * (KS / 4); i += GT)");
        e.declare("i");
        cp_async16(cvta_shared(addr(at(at(at("sidx", grp), i / q), (i % q) * 4))),
                   Expr("col_idx") + begin + (grp + KG * (i / q)) * KS + (i % q) * 4);
      }
      commit();
      wait_all();
      group_sync();
      {
        const Expr st = Expr::var("st", 0, l.ring_depth - 2);
        e.line("#pragma unroll");
        auto fill = e.scope("for (int st = 0; st < STAGES - 1; ++st)");
        e.declare("st");
        issue_stride(st, "if (st < nstrides)");
        commit();
      }
      {
        auto loop = e.scope("for (int it = 0; it < nstrides; ++it)");
        e.declare("it");
        e.line("asm volatile(\"cp.async.wait_group %0;\\n\" :: \"n\"(STAGES - 2));", "stride it and its +STAGES-1 indices landed");
        group_sync();
        {
          auto keep_full = e.scope("", "keep the ring full: stride it + STAGES - 1 into the slot freed by stride it - 1");
          e.decl("const int", "st", it + STAGES - 1);
          issue_stride(Expr::var("st", l.ring_depth - 1), "if (st < nstrides)");
          e.decl("const int", "sx", it + 2 * (STAGES - 1));
          {
            auto idx = e.scope("if (sx < nstrides)");
            issue_indices(Expr::var("sx", 2 * (l.ring_depth - 1)));
          }
          commit();
        }
        compute(let("const int", "slot", it % STAGES));
      }
      wait_all();
    }
    group_sum();
    epilogue();
  }
};

}  // namespace

llvm::Expected<std::string> generate_spmm_ring(const Plan &p) {
  Snippets helpers;
  SpmmRing g(p, helpers);
  KernelFrame f;
  f.doc = {
      "SpMM, ring kernel (spmm-ring): C[M x N] = A (SR-BCRS) x B[K x N], with int8 m16n8k32",
      "mma.sync, the dense dimension on M. One thread block computes one row-block (V rows) x",
      "BSN dense columns. Every input of a stride moves global -> shared memory through one",
      "STAGES-deep cp.async ring: the stride's column indices 2 * (STAGES - 1) strides ahead,",
      "its gathered B rows (rows padded by 16 bytes; 4-bit rows stay packed) and A's values",
      "STAGES - 1 ahead. ldmatrix.x4.trans turns the B rows into k-contiguous fragments (prmt",
      "for bytes, mask/shift + prmt for packed nibbles). With split 2, two warp groups take",
      "alternate strides, each with its own ring, and sum their accumulators in shared memory.",
      "The epilogue shifts each accumulator element by its chunk term's shift, sums the terms,",
      "exchanges stacked slots between lanes, and writes the V rows.",
  };
  spmm_row_block_prologue(g, f, p.launch.warps_per_group);
  Prologue &pr = f.prologue;
  pr.def("constexpr int", "KG", p.launch.warp_groups,
         "warp groups: group g takes the row-block's strides g, g + KG, ...");
  pr.def("constexpr int", "GT", Expr("THREADS") / Expr::named("KG", p.launch.warp_groups), "threads per group");
  if (p.launch.warp_groups == 1) {
    pr.def("const int", "grp", 0, "the one warp group");
    pr.def("const int", "tid", "threadIdx.x", "this thread in its group");
  } else {
    pr.def("const int", "grp", Expr("threadIdx.x") / Expr("GT"), "this thread's warp group");
    pr.def("const int", "tid", Expr("threadIdx.x") % Expr("GT"), "and its index there");
  }
  pr.def("constexpr int", "STAGES", p.launch.ring_depth, "cp.async ring depth (per group)");
  pr.def("constexpr int", "IR", p.launch.index_ring, "index ring depth");
  g.body();
  return assemble(p, f, g);
}

}  // namespace magicube::gen
