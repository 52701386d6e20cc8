// spmm-decode: int8 m16n8k32, the dense dimension on M, for small N (LLM decode, N <= 64).
// SpMM there is bound by the bytes of A (values and column indices), read once: the kernel's
// job is to keep enough of them in flight. Each thread block keeps the whole N (BSn = N
// rounded up to 16 columns, one slice of the resident-B layout) of B in dynamic shared
// memory, loaded once, and streams a contiguous, stride-balanced run of row-blocks. The run's
// strides are cut into one equal piece per warp (split-K across the block: a row-block may be
// shared by several warps), and each lane loads its column index and A fragments of the next
// DEPTH strides into registers (an unrolled register ring), so a block keeps
// WARPS x DEPTH strides of A in flight whatever the row lengths. A row-block cut between warps
// is summed in shared memory at the end: the warp that holds its first stride adds the
// others' partial accumulators (kept in registers, then written over B's slice) and writes it.
// Every output element is written once, by one warp, without atomics. Column indices are read
// as 16 bits (B in shared memory bounds K far below 65535): 64 bytes a stride instead of 128.
#include "compiler/gen_common.h"

namespace magicube::gen {

namespace {

std::string S(long long x) { return std::to_string(x); }

class SpmmDecode : public KernelGen {
 public:
  using KernelGen::KernelGen;

  int accs() const { return int(p.groups.size() * p.rhs.size()) * tiles(); }


  // Register slot d of the ring: the next stride's column index of this lane (ci<d>, 16-bit), its lhs
  // fragments (ls<d>_<group>[]), its row-block (rb<d>, -1: the piece is done) and flags (fl<d>:
  // 1 the segment's last stride, 2 a row-block without vectors, 4 the flush keeps a partial).
  void issue(int d) {
    const std::string D = S(d);
    e.line("rb" + D + " = -1, fl" + D + " = 0;");
    auto live = e.scope("if (irb >= 0)");
    e.line("rb" + D + " = irb;");
    e.open("if (is < ie)");
    e.decl("const long long", "s", cast("long long", Expr("is")) * KS, "the stride's first slot");
    e.line("ci" + D + " = __ldg(col_idx + s + lane);");
    lhs_wide("ls" + D + "_");
    e.line("++is;");
    e.close_open("else");
    e.line("fl" + D + " = 2;", "no vectors: the row-block's output is zeros");
    e.close();
    e.line("if (is >= ie) fl" + D + " |= ifl, advance();");
  }

  // Where register i of accumulator a of warp w's partial sits in `part`: [w][a][i][lane].
  Expr slot(const Expr &w, int a) const { return ((w * accs() + a) * nc() + Expr::var("i", 0, nc() - 1)) * 32 + lane; }

  // The lhs stack operand of every group for the stride at slot s, into <name><g>[0..1]: the
  // mma's B registers k 4t..4t+3 and 16+4t.. of V-side row gid (slot gid / V of the group's
  // chunks, row gid % V). The decode packing (runtime/packing.h) stores the two side by side:
  // one 8-byte load per lane (4-bit planes: 4 bytes, widened as the other kernels do).
  void lhs_wide(const std::string &name) {
    const int v = p.spec.v;
    const std::string row = v == 8 ? "gid" : "(gid % V)";
    for (size_t g = 0; g < p.groups.size(); ++g) {
      const std::string G = name + S(g);
      const std::vector<int> &chunks = p.groups[g].lhs_chunks;
      auto load = [&](int li) {
        const Chunk &c = p.lhs[li];
        const std::string A = "a" + S(li);
        if (c.storage_bits == 8) {
          e.decl("const uint2", "q", Expr("__ldg((const uint2 *)(" + A + " + s * V + " + row + " * KS + tig * 8))"),
                 "lhs chunk " + c.str() + ": k 4t..4t+3 and 16+4t..16+4t+3");
          e.line(G + "[0] = q.x, " + G + "[1] = q.y;");
          return;
        }
        e.decl("const u32", "q", Expr("__ldg((const u32 *)(" + A + " + (s * V + " + row + " * KS) / 2 + tig * 4))"),
               "lhs chunk " + c.str() + ", 4-bit: k 4t..4t+3 and 16+4t..16+4t+3");
        auto widen = [&](const std::string &x) {
          if (p.nibble_prescale) return call("mc_widen4to8_hi", {Expr(x)}).str();
          return call("mc_widen4to8", {Expr(x), c.is_signed ? "true" : "false"}).str();
        };
        e.line(G + "[0] = " + widen("q") + ", " + G + "[1] = " + widen("q >> 16") + ";");
      };
      if (chunks.size() == 1 && v == 8) {
        auto s = e.scope();
        load(chunks[0]);
        continue;
      }
      e.line(G + "[0] = " + G + "[1] = 0u;", "lanes of no chunk's slot: zeros");
      for (size_t sl = 0; sl < chunks.size(); ++sl) {
        auto s = e.scope("if (gid / V == " + S(long(sl)) + ")", "slot " + S(long(sl)) + " of group " + S(long(g)));
        load(chunks[sl]);
      }
    }
  }

  // acc(g, j, t) -> hd_g<g>_r<j>_t<t>: the first row-block's partial, kept for the reduction.
  static std::string hd(const std::string &acc) { return "hd" + acc.substr(3); }

  void body() {
    const int depth = l.ring_depth, n = nc();
    e.decl("constexpr int", "WARPS", Expr("THREADS / 32"));
    e.decl_only("extern __shared__ __align__(16) unsigned char", "smem[]",
                "B's slice; after the loop, the warps' partial sums");
    e.decl_only("__shared__ int", "part_rb[WARPS]",
                "the row-block of each warp's partial sum (-1: none; -2: the warp had no strides)");
    declare_slice_planes();
    e.comment("---- this block's slice of B into shared memory, once (it lands while the row pointers are searched) ----");
    copy_slice();
    commit();

    e.comment("---- row pointers: start(r) is row-block r's first slot, start(nblk) the end of the last ----");
    e.comment("     (row-blocks are padded to whole strides and stored in order: r ends where r + 1 starts).");
    e.comment("     Finding this block's run and this warp's piece takes two rounds of dependent loads: the");
    e.comment("     block's two searches load their first windows with the end of the matrix, the warp's two");
    e.comment("     searches load theirs together.");
    e.decl("const int", "gb0", Expr("(int)((long long)nblk * blockIdx.y / gridDim.y)"),
           "where the block's run would start and end with even rows");
    e.decl("const int", "gb1", Expr("(int)((long long)nblk * (blockIdx.y + 1) / gridDim.y)"));
    e.decl("const int", "bb0", Expr("min(max(gb0 - 16, 0), max(nblk - 32, 0))"), "the searches' first windows");
    e.decl("const int", "bb1", Expr("min(max(gb1 - 16, 0), max(nblk - 32, 0))"));
    e.decl("int", "vb0", Expr("bb0 + lane < nblk ? __ldg(row_ptr + 2 * (bb0 + lane)) : 0"));
    e.decl("int", "vb1", Expr("bb1 + lane < nblk ? __ldg(row_ptr + 2 * (bb1 + lane)) : 0"));
    e.decl("const int", "last", Expr("__ldg(row_ptr + 2 * (nblk - 1))"));
    e.decl("const int", "total", Expr("last + (__ldg(row_ptr + 2 * nblk - 1) - last + KS - 1) / KS * KS"),
           "slots of the whole matrix");
    e.line("if (bb0 + lane >= nblk) vb0 = total;");
    e.line("if (bb1 + lane >= nblk) vb1 = total;");
    e.declare("start");
    e.line("auto start = [&](int r) -> int { return r >= nblk ? total : __ldg(row_ptr + 2 * r); };");
    e.declare("step");
    e.comment("One step of a search for the first row-block r in [lo, hi) with start(r) >= t (hi if none):");
    e.comment("the warp holds start(base + lane) in v. Done: r, start(r) and start(r + 1). Else the window");
    e.comment("moves (hi or lo narrowed: it ends) and v must be loaded again.");
    e.line("auto step = [&](int &lo, int &hi, int t, int &base, int v, int &r, int &s, int &s1) -> bool {");
    e.line("  const unsigned m = __ballot_sync(0xffffffffu, base + lane >= hi || v >= t);");
    e.line("  if (!m) {  // the whole window starts below t");
    e.line("    lo = base = base + 32;");
    e.line("    return false;");
    e.line("  }");
    e.line("  if ((m & 1u) && base > lo) {  // start(base) >= t: the answer is at or below base");
    e.line("    hi = base;");
    e.line("    base = max(lo, base - 32);");
    e.line("    return false;");
    e.line("  }");
    e.line("  const int k = __ffs(m) - 1;");
    e.line("  r = base + k;");
    e.line("  s = __shfl_sync(0xffffffffu, v, k);");
    e.line("  s1 = __shfl_sync(0xffffffffu, v, (k + 1) & 31);");
    e.line("  if (k == 31) s1 = start(r + 1);");
    e.line("  return true;");
    e.line("};");
    e.declare("search2");
    e.comment("Two searches at once, from windows at base0 / base1 whose row pointers v0 / v1 are loaded.");
    e.line("auto search2 = [&](int lo0, int hi0, int t0, int base0, int v0, int lo1, int hi1, int t1, int base1, int v1,");
    e.line("                   int &r0, int &s0, int &e0, int &r1, int &s1, int &e1) {");
    e.line("  bool d0 = false, d1 = false;");
    e.line("  for (;;) {");
    e.line("    if (!d0) d0 = step(lo0, hi0, t0, base0, v0, r0, s0, e0);");
    e.line("    if (!d1) d1 = step(lo1, hi1, t1, base1, v1, r1, s1, e1);");
    e.line("    if (d0 && d1) return;");
    e.line("    if (!d0) v0 = start(base0 + lane);");
    e.line("    if (!d1) v1 = start(base1 + lane);");
    e.line("  }");
    e.line("};");
    e.comment("---- this block's row-blocks: a contiguous run [rb_lo, rb_hi), balanced by strides ----");
    e.decl("const int", "nst", Expr("total / KS"), "strides of the whole matrix");
    e.decl_only("int", "rb_lo, s_lo, rb_hi, s_hi, unused0, unused1", "row-blocks and their first slots");
    e.line("search2(0, nblk, (int)((long long)nst * blockIdx.y / gridDim.y) * KS, bb0, vb0, 0, nblk,");
    e.line("        (int)((long long)nst * (blockIdx.y + 1) / gridDim.y) * KS, bb1, vb1, rb_lo, s_lo, unused0, rb_hi, s_hi,");
    e.line("        unused1);");
    e.line("if (blockIdx.y + 1 == gridDim.y) rb_hi = nblk, s_hi = total;", "the last run takes the empty row-blocks at the end");
    e.comment("---- this warp's piece of the run: strides [cw, cw1); it owns the row-blocks that start there ----");
    e.decl("const int", "cw", Expr("s_lo / KS + (int)((long long)(s_hi - s_lo) / KS * warp / WARPS)"));
    e.decl("const int", "cw1", Expr("s_lo / KS + (int)((long long)(s_hi - s_lo) / KS * (warp + 1) / WARPS)"));
    e.decl("const int", "bw0",
           Expr("min(max(rb_lo + (int)((long long)(rb_hi - rb_lo) * warp / WARPS) - 16, rb_lo), max(rb_hi - 32, rb_lo))"));
    e.decl("const int", "bw1",
           Expr("min(max(rb_lo + (int)((long long)(rb_hi - rb_lo) * (warp + 1) / WARPS) - 16, rb_lo), max(rb_hi - 32, "
                "rb_lo))"));
    e.comment("r_own: the first row-block this warp owns, nb0 / nb1 its start and end; r_end: the end of its");
    e.comment("row-blocks (the last warp: also the empty ones at the run's end)");
    e.decl_only("int", "r_own, nb0, nb1, r_end, unused2, unused3");
    e.line("search2(rb_lo, rb_hi, cw * KS, bw0, start(bw0 + lane), rb_lo, rb_hi, cw1 * KS, bw1, start(bw1 + lane), r_own,");
    e.line("        nb0, nb1, r_end, unused2, unused3);");
    e.line("if (warp == WARPS - 1) r_end = rb_hi;");
    e.comment("---- which stride is loaded next: segments of row-blocks (the head: the end of a row-block");
    e.comment("     that started in an earlier piece; then the owned row-blocks, the last cut at cw1) ----");
    e.decl_only("int", "irb = -1, is = 0, ie = 0, ifl = 0",
                "the segment being loaded: row-block, next stride, end stride, flags of its last stride");
    e.decl("int", "nrb", Expr("r_own"), "the next owned row-block (its start nb0, its end nb1)");
    e.declare("advance");
    e.line("auto advance = [&]() {", "start loading owned row-block nrb");
    e.line("  irb = -1;");
    e.line("  if (nrb >= r_end) return;");
    e.line("  irb = nrb, is = nb0 / KS, ie = min(nb1 / KS, cw1);");
    e.line("  ifl = nb1 / KS <= cw1 ? 1 : 0;  // 0: it goes on in the next piece (this warp adds the rest)");
    e.line("  nb0 = nb1;");
    e.line("  if (++nrb < r_end) nb1 = start(nrb + 1);");
    e.line("};");
    {
      auto head = e.scope("if (cw < cw1 && r_own > rb_lo && nb0 > cw * KS)",
                          "row-block r_own - 1 started in an earlier piece and has strides in this one");
      e.line("irb = r_own - 1, is = cw, ie = min(nb0 / KS, cw1);");
      e.line("ifl = nb0 / KS <= cw1 ? 1 | 4 : 0;", "ends here: keep the partial; else it spans the whole piece");
      e.close_open("else");
      e.line("advance();");
    }
    e.comment("---- the register ring: " + S(depth) + " strides in flight per warp ----");
    for (int d = 0; d < depth; ++d) {
      const std::string D = S(d);
      e.decl_only("int", "ci" + D + " = 0, rb" + D + ", fl" + D);
      for (size_t g = 0; g < p.groups.size(); ++g) e.decl_only("u32", "ls" + D + "_" + S(g) + "[" + S(lhs_regs()) + "]");
      issue(d);
    }
    wait_all("this thread's part of the slice landed");
    e.line("__syncthreads();", "and every thread's");
    declare_accumulators("");
    for_each_accumulator([&](const std::string &a) { e.decl(("int"), hd(a) + "[" + S(n) + "]", Expr("{}")); });
    e.decl("int", "hd_rb", -1, "the row-block of the partial in hd_*: the head segment's, when it ended in this piece");
    e.decl("int", "tail_rb", -1, "the row-block in acc_* when the piece ended inside it");
    {
      auto forever = e.scope("for (;;)");
      for (int d = 0; d < depth; ++d) {
        const std::string D = S(d);
        e.comment("---- ring slot " + D + " ----");
        e.line("if (rb" + D + " < 0) break;");
        {
          auto work = e.scope("if (!(fl" + D + " & 2))");
          slice_frags_and_mmas(D, "ci" + D + " == 0xffff");
        }
        {
          auto last = e.scope("if (fl" + D + " & 1)", "the segment's last stride: write its V rows (or keep the head's partial)");
          {
            auto keep = e.scope("if (fl" + D + " & 4)");
            for_each_accumulator([&](const std::string &a) {
              e.line("#pragma unroll");
              e.line("for (int i = 0; i < " + S(n) + "; ++i) " + hd(a) + "[i] = " + a + "[i];");
            });
            e.line("hd_rb = rb" + D + ";");
            e.close_open("else");
            e.decl("const int", "blk", Expr("rb" + D));
            epilogue();
          }
          zero_accumulators();
          e.line("tail_rb = -1;");
          e.close_open("else");
          e.line("tail_rb = rb" + D + ";");
        }
        issue(d);
      }
    }
    e.comment("---- row-blocks cut between warps: each later warp's partial, added by the warp that started it ----");
    e.line("__syncthreads();", "every warp is done with B's slice: it holds the partial sums now");
    e.decl("int *", "part", Expr("(int *)smem"), "[warp][accumulator][register][lane]");
    {
      auto s = e.scope();
      e.decl("const int", "prb", Expr("hd_rb >= 0 ? hd_rb : tail_rb >= 0 && tail_rb < r_own ? tail_rb : -1"),
             "this warp's partial: its head's, or all of its piece");
      e.line("if (lane == 0) part_rb[warp] = cw < cw1 ? prb : -2;");
      auto write = [&](const std::function<std::string(const std::string &)> &src) {
        int a = 0;
        for_each_accumulator([&](const std::string &acc) {
          e.line("#pragma unroll");
          e.line("for (int i = 0; i < " + S(n) + "; ++i) " + at("part", slot(warp, a++)).str() + " = " + src(acc) + "[i];");
        });
      };
      e.open("if (hd_rb >= 0)");
      write([](const std::string &acc) { return hd(acc); });
      e.close_open("else if (prb >= 0)");
      write([](const std::string &acc) { return acc; });
      e.close();
    }
    e.line("__syncthreads();");
    {
      auto own = e.scope("if (tail_rb >= r_own)", "this warp started a row-block that goes on in the next pieces");
      {
        auto loop = e.scope("for (int x = warp + 1; x < WARPS; ++x)");
        e.declare("x");
        e.decl("const int", "r", Expr("part_rb[x]"));
        e.line("if (r == -2) continue;", "no strides in that piece");
        e.line("if (r != tail_rb) break;");
        int a = 0;
        for_each_accumulator([&](const std::string &acc) {
          e.line("#pragma unroll");
          e.line("for (int i = 0; i < " + S(n) + "; ++i) " + acc + "[i] += " +
                 at("part", slot(Expr::var("x", 1, l.threads / 32 - 1), a++)).str() + ";");
        });
      }
      e.decl("const int", "blk", Expr("tail_rb"));
      epilogue();
    }
  }
};

}  // namespace

llvm::Expected<std::string> generate_spmm_decode(const Plan &p) {
  Snippets helpers;
  SpmmDecode g(p, helpers);
  KernelFrame f;
  f.doc = {
      "SpMM, decode kernel (spmm-decode): C[M x N] = A (SR-BCRS, bank-balanced) x B[K x N] for small",
      "N, with int8 m16n8k32 mma.sync, the dense dimension on M. B is packed as for resident B",
      "(slices of BSN columns, K x BSN contiguous, 16-byte units swizzled: runtime/packing.h);",
      "BSN is N rounded up to 16, so one slice holds all of N. Column indices are 16-bit (0xffff pads).",
      "Grid: x = slices of BSN columns (one when N <= BSN), y = one block per SM. Each block copies",
      "its slice of B into dynamic shared memory once and takes a contiguous run of row-blocks",
      "balanced by strides (found from the row pointers). The run's strides are cut into one",
      "equal piece per warp; a warp streams its piece's column indices and A fragments through a",
      "register ring (DEPTH strides ahead) and gathers B rows from shared memory with ldmatrix.",
      "A row-block that lies wholly in one piece is written by that warp; one cut between pieces",
      "is summed in shared memory after the loop (the partials written over B's slice) by the",
      "warp holding its first stride. Every output element is written once; no atomics.",
      "Dynamic shared memory: max(max(K, 8) x (slice row bytes), the warps' partial sums).",
  };
  f.min_blocks = 1;
  Prologue &pr = f.prologue;
  slice_prologue(pr, p);
  g.body();
  return assemble(p, f, g);
}

}  // namespace magicube::gen
