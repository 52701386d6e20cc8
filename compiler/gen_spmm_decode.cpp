// spmm-decode: int8 m16n8k32, the dense dimension on M, for small N (LLM decode, N <= 64).
// SpMM there is bound by the bytes of A (values and column indices), read once: the kernel's
// job is to keep enough of them in flight. Each thread block keeps the whole N (BSn = N
// rounded up to 16 columns, one slice of the resident-B layout) of B in dynamic shared
// memory, loaded once, and streams a contiguous, stride-balanced run of row-blocks. The run's
// strides are cut into one equal piece per warp (split-K across the block: a row-block may be
// shared by several warps), and each lane loads its column index and A fragments of the next
// DEPTH strides into registers (an unrolled register ring); the stride's schedule word (its
// row-block, whether it is the row-block's first or last stride) rides in bit 15 of its 32
// column indices (runtime/packing.h) and one ballot gathers it:
// finding a block's run takes two independent loads, a warp's piece none, and a block keeps
// WARPS x DEPTH strides of A in flight whatever the row lengths. The lane's loads go through
// pointers that advance once a ring turn, each slot at a constant offset: no index arithmetic
// a stride, and the row-block state changes only at a row-block's last stride. A row-block
// cut between warps is summed in shared memory at the end: the warp that holds its first
// stride adds the others' partial accumulators (kept in registers, then written over B's
// slice) and writes it.
// Every output element is written once, by one warp, without atomics. Column indices are read
// as 16 bits (B in shared memory bounds K far below 32767): 64 bytes a stride instead of 128.
// Where all of K does not fit, K in panels (spec.panel): the block makes one pass a panel over
// its row-blocks (A packed panel by panel), and passes after the first add into C with
// red.global.add (integer C): a load of C there stalled the ring (bench/NOTES.md, Session 15).
// On sm_90, one tile at 16 warps or fewer (Launch::panel_cluster), two panels run in a cluster of two
// blocks, one a panel, each keeping its row-blocks' sums in shared memory until the pair adds them
// after both passes: each block copies half of B's slice (4096x14336 at N <= 16: 224 -> 112 KiB a
// block; bench/NOTES.md, Session 30).
#include <algorithm>
#include <optional>

#include "compiler/gen_common.h"

namespace magicube::gen {

namespace {

std::string S(long long x) { return std::to_string(x); }

class SpmmDecode : public KernelGen {
 public:
  using KernelGen::KernelGen;

  int accs() const { return int(p.groups.size() * p.rhs.size()) * tiles(); }


  // Register slot d of the ring: the column index of this lane (ci<d>, 16-bit: the column and
  // one bit of the stride's schedule word) and the lhs fragments (ls<d>_<group>[]; a group widened
  // late: its packed word, lq<d>_<group>) of the stride
  // `ahead` strides past the lane's pointers (pci, pa<chunk>), loaded when `live` holds (the
  // stride lies in this warp's piece). The offsets are constants: no index arithmetic per stride.
  void issue(int d, const std::string &live, int ahead) {
    const std::string D = S(d);
    auto s = e.scope("if (" + live + ")");
    const Expr at("pci" + (ahead ? " + " + S(ahead) + " * KS" : std::string()));
    e.line("ci" + D + " = " + (l.a_skip_l1 ? call("mc_ld_stream16", {at}) : Expr("__ldg(" + at.str() + ")")).str() + ";");
    lhs_wide(D, ahead);
  }

  // A stride's schedule word (row-block | 1 << 30 first | 1 << 31 last): lane i's column index
  // carries bit i in its bit 15, so one ballot of the warp gathers it (no load).
  static std::string meta(const std::string &ci) { return "__ballot_sync(0xffffffffu, " + ci + " & 0x8000)"; }

  // The lane's pointers at stride `st`: its column index, its lhs words of every chunk and the
  // schedule word. One chunk's stride is KS x V elements of its storage bits.
  void declare_pointers(const std::string &st) {
    const std::string row = p.spec.v == 8 ? "gid" : "(gid % V)";
    e.decl("const unsigned short *", "pci", Expr("col_idx + (long long)" + st + " * KS + lane"),
           "this lane's column index");
    for (int li : used_lhs_chunks()) {
      const Chunk &c = p.lhs[size_t(li)];
      const std::string A = "a" + S(li);
      const Expr at = c.storage_bits == 8 ? Expr(A + " + (long long)" + st + " * KS * V + " + row + " * KS + tig * 8")
                                          : Expr(A + " + ((long long)" + st + " * KS * V + " + row + " * KS) / 2 + tig * 4");
      e.decl("const unsigned char *", "pa" + S(li), at,
             "lhs chunk " + c.str() + ": k 4t..4t+3 and 16+4t..16+4t+3 of row " + row);
    }
  }
  // Advances the pointers by n strides.
  void advance_pointers(int n) {
    std::string adv = "pci += " + S(n) + " * KS";
    for (int li : used_lhs_chunks())
      adv += ", pa" + S(li) + " += " + S((long long)n * p.shape.k * p.spec.v * p.lhs[size_t(li)].storage_bits / 8);
    e.line(adv + ";", "the next ring turn");
  }
  std::vector<int> used_lhs_chunks() const {
    std::vector<int> out;
    for (const auto &g : p.groups)
      for (int li : g.lhs_chunks)
        if (std::find(out.begin(), out.end(), li) == out.end()) out.push_back(li);
    return out;
  }

  // Where register i of accumulator a of warp w's partial sits in `part`: [w][a][i][lane].
  Expr slot(const Expr &w, int a) const { return ((w * accs() + a) * nc() + Expr::var("i", 0, nc() - 1)) * 32 + lane; }

  // The lhs stack operand of every group for the stride at slot s, into <name><g>[0..1]: the
  // mma's B registers k 4t..4t+3 and 16+4t.. of V-side row gid (slot gid / V of the group's
  // chunks, row gid % V). The decode packing (runtime/packing.h) stores the two side by side:
  // one 8-byte load per lane (4-bit planes: 4 bytes, widened as the other kernels do).
  // Whether group g's 4-bit words stay packed in the ring (the raw word in [0]) and are widened
  // when the stride is consumed: widening at the load would wait for it there, and the ring
  // would hold one stride in flight instead of DEPTH. Groups whose chunks are all 4-bit and
  // widen alike (prescaled, or one signedness).
  bool widen_late(size_t g) const {
    const std::vector<int> &chunks = p.groups[g].lhs_chunks;
    for (int li : chunks)
      if (p.lhs[li].storage_bits != 4 || (!p.nibble_prescale && p.lhs[li].is_signed != p.lhs[chunks[0]].is_signed))
        return false;
    return !chunks.empty();
  }
  std::string widen(const Chunk &c, const std::string &x) {
    if (p.nibble_prescale) return call("mc_widen4to8_hi", {Expr(x)}).str();
    return call("mc_widen4to8", {Expr(x), c.is_signed ? "true" : "false"}).str();
  }
  // The late widening of ring slot D's packed groups, before its mmas: the mma words
  // ls<D>_<g>[] are the slot's temporaries, the ring register is the packed word lq<D>_<g>.
  // (One array for both, packed word in [0], made ptxas copy each refill's destination register
  // into another right after the load in the K-panel kernel: every stride waited for its own
  // load there, 1.9x the 8-bit kernel's time at 4096x4096 s=0.5 N=512.)
  void widen_slot(const std::string &D) {
    for (size_t g = 0; g < p.groups.size(); ++g) {
      if (!widen_late(g)) continue;
      const std::string G = mma_words(D, g), Q = packed_word(D, g);
      const Chunk &c = p.lhs[p.groups[g].lhs_chunks[0]];
      e.decl_only("u32", G + "[" + S(lhs_regs()) + "]", "the packed word loaded DEPTH strides ago, widened");
      e.line(G + "[0] = " + widen(c, Q) + ", " + G + "[1] = " + widen(c, Q + " >> 16") + ";");
    }
  }
  // Slot D's names for group g: its mma words (ls<D>_<g>[]) and a late group's packed word (lq<D>_<g>).
  static std::string mma_words(const std::string &D, size_t g) { return "ls" + D + "_" + S(g); }
  static std::string packed_word(const std::string &D, size_t g) { return "lq" + D + "_" + S(g); }
  // The ring's registers of slot D, group g: the mma words, or the packed word of a late group.
  std::string ring_lhs(const std::string &D, size_t g) const {
    return widen_late(g) ? packed_word(D, g) : mma_words(D, g) + "[" + S(lhs_regs()) + "]";
  }

  void lhs_wide(const std::string &D, int ahead) {
    const bool stream = l.a_skip_l1;
    for (size_t g = 0; g < p.groups.size(); ++g) {
      const std::string G = mma_words(D, g), Q = packed_word(D, g);
      const std::vector<int> &chunks = p.groups[g].lhs_chunks;
      const bool late = widen_late(g);
      auto load = [&](int li) {
        const Chunk &c = p.lhs[li];
        const long long step = (long long)ahead * p.shape.k * p.spec.v * c.storage_bits / 8;
        const std::string at = "pa" + S(li) + (step ? " + " + S(step) : std::string());
        if (c.storage_bits == 8) {
          e.decl("const uint2", "q", stream ? call("mc_ld_stream64", {Expr(at)}) : Expr("__ldg((const uint2 *)(" + at + "))"),
                 "lhs chunk " + c.str() + ": k 4t..4t+3 and 16+4t..16+4t+3");
          e.line(G + "[0] = q.x, " + G + "[1] = q.y;");
          return;
        }
        const Expr w = stream ? call("mc_ld_stream32", {Expr(at)}) : Expr("__ldg((const u32 *)(" + at + "))");
        if (late) {
          e.line(Q + " = " + w.str() + ";",
                 "lhs chunk " + c.str() + ", 4-bit, packed: widened when the stride is consumed");
          return;
        }
        e.decl("const u32", "q", w, "lhs chunk " + c.str() + ", 4-bit: k 4t..4t+3 and 16+4t..16+4t+3");
        e.line(G + "[0] = " + widen(c, "q") + ", " + G + "[1] = " + widen(c, "q >> 16") + ";");
      };
      if (chunks.size() == 1 && p.spec.v == 8) {
        auto s = e.scope();
        load(chunks[0]);
        continue;
      }
      e.line(late ? Q + " = 0u;" : G + "[0] = " + G + "[1] = 0u;", "lanes of no chunk's slot: zeros");
      for (size_t sl = 0; sl < chunks.size(); ++sl) {
        auto s = e.scope("if (gid / V == " + S(long(sl)) + ")", "slot " + S(long(sl)) + " of group " + S(long(g)));
        load(chunks[sl]);
      }
    }
  }

  // A row-block's sums are complete in this block (blk: its row-block in C): its epilogue, or in
  // a cluster of two (Launch::panel_cluster) a copy into cbuf, added to the pair's after both passes.
  // Where register i of accumulator a of the part's row-block `row` sits in cbuf: [row][a][i][lane].
  std::string cbuf_at(const std::string &row, int a) const {
    return "((" + row + " * " + S(accs()) + " + " + S(a) + ") * " + S(nc()) + " + i) * 32 + lane";
  }
  void finish(const std::string &blk) {
    e.decl("const int", "blk", Expr(blk));
    if (!l.panel_cluster) return epilogue();
    e.open("if (CN > 1)", "this panel's half: kept in shared memory for the pair's sum");
    int a = 0;
    for_each_accumulator([&](const std::string &acc) {
      e.line("#pragma unroll");
      e.line("for (int i = 0; i < " + S(nc()) + "; ++i) cbuf[" + cbuf_at("(blk - rb_lo)", a++) + "] = " + acc + "[i];");
    });
    e.close_open("else");
    epilogue();
    e.close();
  }
  // In a cluster of two, after both passes: every sum of the part is in one of the pair's cbuf
  // (one barrier, released after the loops: no load in flight then); block crank writes every
  // other row-block, its own half plus the other block's read through distributed shared
  // memory; a second barrier keeps each block's shared memory until the other has read it.
  void pair_sums() {
    auto s = e.scope("if (CN > 1)", "the pair's sums: both halves of each row-block of the part, added, into C");
    e.line(call("mc_cluster_arrive", {}).str() + ";", "release: this block's cbuf");
    e.line(call("mc_cluster_wait", {}).str() + ";", "acquire: the other block's");
    e.decl("const unsigned", "cpeer", call("mc_peer_shared", {cvta_shared(Expr("cbuf")), Expr("crank ^ 1u")}),
           "the other block's cbuf");
    {
      auto loop = e.scope("for (int j = (int)crank + 2 * warp; j < rb_hi - rb_lo; j += 2 * WARPS)",
                          "row-block rb_lo + j: this block's if j % 2 == crank, one warp each");
      e.declare("j");
      int a = 0;
      for_each_accumulator([&](const std::string &acc) {
        const std::string at = cbuf_at("j", a++);
        e.line("#pragma unroll");
        e.line("for (int i = 0; i < " + S(nc()) + "; ++i) " + acc + "[i] = cbuf[" + at + "] + " +
               call("mc_ld_peer", {Expr("cpeer + 4u * (" + at + ")")}).str() + ";");
      });
      e.decl("const int", "blk", Expr("rb_lo + j"));
      const std::string keep = accumulate_c;
      accumulate_c.clear();  // the whole sum: written, not added
      epilogue();
      accumulate_c = keep;
    }
    e.line(call("mc_cluster_arrive_relaxed", {}).str() + ";", "this block has read the other's cbuf (its loads are used)");
    e.line(call("mc_cluster_wait", {}).str() + ";", "and the other has read this one's: both may exit");
  }

  // acc(g, j, t) -> hd_g<g>_r<j>_t<t>: the first row-block's partial, kept for the reduction.
  static std::string hd(const std::string &acc) { return "hd" + acc.substr(3); }

  // Shares of all slices (Launch::slice_shares): this block's share, as the first segment's slice
  // `sl` and first stride `t0` and the share's end `end` (also in shared memory, share_end).
  void share_bounds() {
    e.comment("---- this block's share of all slices' strides: slice s's stride t is s x T + t of W = S x T");
    e.comment("     (S slices), and block b of G takes [b x W / G, (b + 1) x W / G), one segment a slice it");
    e.comment("     touches, each moved on to row-block starts (stride_next). A grid of (S, P) gives slice x");
    e.comment("     a P-th of its strides, one segment; a grid of (1, G) may give a block the end of one slice");
    e.comment("     and the start of the next (runtime/kernel.h: decode_grid) ----");
    e.decl("const unsigned", "G", Expr("gridDim.x * gridDim.y"));
    e.decl("const unsigned", "bid", Expr("blockIdx.x * gridDim.y + blockIdx.y"));
    e.decl("const unsigned", "S", Expr("(unsigned)(N + BSN - 1) / BSN"), "slices");
    // Only the slice stays live through the ring: the share's end is read from shared memory after
    // each segment's barrier (held in registers through the loop it cost n48dw20 a tenth more
    // instructions there and 5-7 % at N = 512-2048: bench/NOTES.md, Session 31).
    e.decl_only("__shared__ unsigned long long", "share_end", "the share's end (thread 0's copy, read after a barrier)");
    e.decl_only("int", "sl", "the segment's slice");
    e.decl_only("int", "t0", "the segment's first stride in it (0 past the first segment)");
    e.decl_only("unsigned long long", "end", "the share's end");
    auto bounds = [&](const std::string &u) {  // in integers of type u
      e.decl("const " + u, "w", Expr((u == "unsigned" ? "" : "(" + u + ")") + "(unsigned)T * S"));
      e.decl("const " + u, "q", Expr("w / G"));
      e.decl("const " + u, "r", Expr("w % G"));
      e.decl("const " + u, "g0", Expr("q * bid + r * bid / G"));
      e.line("end = q * (bid + 1) + r * (bid + 1) / G;");
      e.line("sl = (int)(g0 / (unsigned)T), t0 = (int)(g0 % (unsigned)T);");
    };
    e.open("if ((((unsigned long long)(unsigned)T * S) >> 32) == 0 && G < 65536u)",
           "in 32 bits (r x (b + 1) < G^2 < 2^32): the common case");
    bounds("unsigned");
    e.close_open("else");
    bounds("unsigned long long");
    e.close();
    e.line("if (threadIdx.x == 0) share_end = end;");
  }

  void body() {
    const int depth = l.ring_depth, n = nc();
    e.decl("constexpr int", "WARPS", Expr("THREADS / 32"));
    e.decl_only("extern __shared__ __align__(16) unsigned char", "smem[]",
                "B's slice; after the loop, the warps' partial sums");
    e.decl_only("__shared__ int", "part_rb[WARPS]",
                "the row-block of each warp's partial sum (-1: none; -2: the warp had no strides)");
    if (l.pdl) {
      e.comment("---- programmatic dependent launch: the stream's next grid may launch now (its blocks start as");
      e.comment("     this one's leave the SMs); nothing global is read or written before the previous grid is done ----");
      e.line("asm volatile(\"griddepcontrol.launch_dependents;\\n\" ::);");
      e.line("asm volatile(\"griddepcontrol.wait;\\n\" ::: \"memory\");");
    }
    declare_slice_planes();
    const bool panels = p.spec.panel != 0;
    std::optional<Emitter::Scope> pass, seg;
    const bool cluster = l.panel_cluster;  // (K panels only: launch.cpp)
    if (cluster) {
      e.comment("---- K in panels of KP rows, the row-blocks in parts, a cluster of CN blocks a part (CN = 2 where");
      e.comment("     K takes two panels, else 1): this cluster's row-blocks [rb_lo, rb_hi) (an equal share); its block");
      e.comment("     of rank crank makes one pass a panel crank, crank + CN, ... over their strides in it against that");
      e.comment("     panel's rows of B. In a cluster of two each block keeps its row-blocks' sums in shared memory");
      e.comment("     (cbuf) and after both passes the pair adds the two and writes C; alone, the first pass writes C");
      e.comment("     and the others add ----");
      e.decl("const unsigned", "crank", call("mc_cluster_rank", {}));
      e.decl("const unsigned", "CN", call("mc_cluster_size", {}));
      e.decl("const int", "part", Expr("(int)(blockIdx.y / CN)"), "the cluster's part (its blocks are consecutive in y)");
      e.decl("const int", "parts", Expr("(int)(gridDim.y / CN)"));
      e.decl("const int", "rb_lo", Expr("(int)((long long)nblk * part / parts)"));
      e.decl("const int", "rb_hi", Expr("(int)((long long)nblk * (part + 1) / parts)"));
      e.decl("int *", "cbuf",
             Expr("(int *)(smem + max(max(min(K, KP), 8) * " + S(l.slice_bytes_per_k) + ", " + S(l.reduction_smem) + "))"),
             "past the slice and the partial sums (Launch::dynamic_smem): [row-block - rb_lo][accumulator][register][lane]");
      pass.emplace(e.scope("for (int pnl = crank; pnl * KP < K; pnl += CN)"));
      e.decl("const int", "pbase", Expr("pnl * nblk"), "this panel's row-blocks in the packed A: pbase + b");
      accumulate_c = "pnl > 0";
    } else if (panels) {
      e.comment("---- K in panels of KP rows: this block's row-blocks [rb_lo, rb_hi) (an equal share), one pass");
      e.comment("     a panel over their strides in it against that panel's rows of B; each pass adds into C ----");
      e.decl("const int", "rb_lo", Expr("(int)((long long)nblk * blockIdx.y / gridDim.y)"));
      e.decl("const int", "rb_hi", Expr("(int)((long long)nblk * (blockIdx.y + 1) / gridDim.y)"));
      pass.emplace(e.scope("for (int pnl = 0; pnl * KP < K; ++pnl)"));
      e.decl("const int", "pbase", Expr("pnl * nblk"), "this panel's row-blocks in the packed A: pbase + b");
      accumulate_c = "pnl > 0";
    }
    // Source order is issue order here, and ptxas keeps it only across basic blocks: the run's
    // two loads go first (their round trip overlaps the slice's copy), the slice's cp.async loop,
    // then the ring's first loads, and the wait for the slice last, behind a branch (ptxas hoisted
    // a plain wait above every load: the slice, the run's bounds and the ring's first strides
    // then came one after the other, three round trips before the first mma).
    if (panels) {
      e.comment("---- this pass's run of strides [bs, be): the block's row-blocks in this panel (two independent loads) ----");
      e.decl("const int", "bs", Expr("__ldg(panel_first + pbase + rb_lo)"));
      e.decl("const int", "be", Expr("__ldg(panel_first + pbase + rb_hi)"));
      e.comment("---- this panel's rows of the block's slice of B into shared memory (they land while A's first strides load) ----");
      copy_slice("pnl * KP", "min(K - pnl * KP, KP)");
    } else if (!l.slice_shares) {
      e.comment("---- this block's run of strides [bs, be): T / gridDim.y of them, moved on to row-block starts");
      e.comment("     (two independent loads, first: no row-block is shared between blocks; T x y / gridDim.y");
      e.comment("     in 32 bits: tq x y + tr x y / gridDim.y, tr x y < 2^32) ----");
      e.decl("const unsigned", "tq", Expr("(unsigned)T / gridDim.y"));
      e.decl("const unsigned", "tr", Expr("(unsigned)T % gridDim.y"));
      e.decl("const int", "bs", Expr("__ldg(stride_next + (int)(tq * blockIdx.y + tr * blockIdx.y / gridDim.y))"));
      e.decl("const int", "be", Expr("__ldg(stride_next + (int)(tq * (blockIdx.y + 1) + tr * (blockIdx.y + 1) / gridDim.y))"));
      e.comment("---- this block's slice of B into shared memory, once (it lands while A's first strides load) ----");
      copy_slice();
    } else {
      share_bounds();
      seg.emplace(e.scope("for (;;)", "a segment: the share's strides in one slice"));
      e.decl("const unsigned long long", "s0", Expr("(unsigned long long)sl * (unsigned)T"));
      e.decl("const int", "t1", Expr("(int)min(end - s0, (unsigned long long)(unsigned)T)"), "the segment's end in its slice");
      e.decl("const int", "n_base", Expr("sl * BSN"), "first dense column of the segment's slice");
      e.comment("---- the segment's run of strides [bs, be) (two independent loads, first) ----");
      e.decl("const int", "bs", Expr("__ldg(stride_next + t0)"));
      e.decl("const int", "be", Expr("__ldg(stride_next + t1)"));
      e.comment("---- the segment's slice of B into shared memory (it lands while A's first strides load) ----");
      copy_slice("", "K", "sl");
    }
    commit();
    e.comment("---- this warp's piece [cw, cw1): an equal share of the run (row-blocks may be cut between warps) ----");
    e.decl("const int", "cw", Expr("bs + (int)((long long)(be - bs) * warp / WARPS)"));
    e.decl("const int", "cw1", Expr("bs + (int)((long long)(be - bs) * (warp + 1) / WARPS)"));
    declare_pointers("cw");
    e.comment("---- the register ring: " + S(depth) + " strides in flight per warp ----");
    for (int d = 0; d < depth; ++d) {
      const std::string D = S(d);
      e.decl_only("int", "ci" + D + " = 0");
      for (size_t g = 0; g < p.groups.size(); ++g) e.decl_only("u32", ring_lhs(D, g));
      issue(d, d ? "cw + " + D + " < cw1" : std::string("cw < cw1"), d);
    }
    // Read before the loop, not after it: at the loop's end it was a round trip to HBM (stride_meta
    // is read nowhere else) in every warp's tail (H100, 4096x4096 N=16: 1-3 % a call, 3 % chained;
    // bench/NOTES.md, Session 25).
    e.comment("---- the schedule word of the piece's last stride (whether the piece leaves a row-block open),");
    e.comment("     loaded now: its round trip overlaps the ring's instead of adding to the tail ----");
    e.decl("const unsigned", "ml", Expr("cw < cw1 ? __ldg(stride_meta + cw1 - 1) : (1u << 31)"));
    {
      auto after_issue = e.scope("if (cw1 >= cw)", "always: a branch keeps the wait below the ring's loads");
      wait_all("this thread's part of the slice landed");
    }
    e.line("__syncthreads();", "and every thread's");
    declare_accumulators("");
    // volatile: written once (the piece's first row-block end, in one ring slot's rare branch)
    // and read after the loop. As plain registers their conditional copy became a phi in every
    // slot, which ptxas resolved with register moves on the common path (sm_90, n48d: 824 MOVs
    // in the kernel, about 24 a stride; 373 with volatile).
    for_each_accumulator([&](const std::string &a) { e.decl(("volatile int"), hd(a) + "[" + S(n) + "]", Expr("{}")); });
    e.decl("int", "hd_rb", -1, "the row-block of the partial in hd_*: one that started before this piece and ended in it");
    e.decl("bool", "head", Expr("cw < cw1 && !(" + meta("ci0") + " & (1u << 30))"),
           "the piece begins inside a row-block begun in an earlier piece: its partial goes to hd_*");
    {
      auto turn = e.scope("for (int cs = cw;; cs += " + S(depth) + ")",
                          "cs: the stride in ring slot 0 (the pointers point at it)");
      for (int d = 0; d < depth; ++d) {
        const std::string D = S(d);
        e.comment("---- ring slot " + D + " ----");
        e.line("if (cs" + (d ? " + " + D : std::string()) + " >= cw1) break;");
        auto slot_scope = e.scope();
        widen_slot(D);
        e.decl("const unsigned", "m" + D, Expr(meta("ci" + D)),
               "the stride's schedule word: bit 15 of its 32 column indices (runtime/packing.h)");
        slice_frags_and_mmas(D, "ci" + D + " & 0x7fff");
        {
          auto last = e.scope("if (m" + D + " & (1u << 31))",
                              "the row-block's last stride: write its V rows (or keep the partial begun earlier)");
          e.decl("const int", "rb", Expr("(int)(m" + D + " & 0x3fffffffu)"));
          {
            auto keep = e.scope("if (head)");
            for_each_accumulator([&](const std::string &a) {
              e.line("#pragma unroll");
              e.line("for (int i = 0; i < " + S(n) + "; ++i) " + hd(a) + "[i] = " + a + "[i];");
            });
            e.line("hd_rb = rb, head = false;");
            e.close_open("else");
            finish(panels ? "rb - pbase" : "rb");
          }
          zero_accumulators();
        }
        issue(d, "cs + " + S(depth + d) + " < cw1", depth + d);
      }
      advance_pointers(depth);
    }
    e.comment("---- the row-block left in acc_* (the piece's last stride did not end it): open_rb, and whether");
    e.comment("     it began in this piece (owned) ----");
    e.decl("const int", "open_rb", Expr("ml & (1u << 31) ? -1 : (int)(ml & 0x3fffffffu)"));
    e.decl("const bool", "owned", Expr("!head"));
    e.comment("---- row-blocks cut between warps: each later warp's partial, added by the warp that started it ----");
    wait_all("(landed: the wait above; kept here unconditionally, as the partial sums overwrite the slice)");
    e.line("__syncthreads();", "every warp is done with B's slice: it holds the partial sums now");
    e.decl("int *", "part", Expr("(int *)smem"), "[warp][accumulator][register][lane]");
    {
      auto s = e.scope();
      e.decl("const int", "prb", Expr("hd_rb >= 0 ? hd_rb : open_rb >= 0 && !owned ? open_rb : -1"),
             "this warp's partial: a row-block it ended, or one that spans its whole piece");
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
      auto own = e.scope("if (open_rb >= 0 && owned)", "this warp started a row-block that goes on in the next pieces");
      {
        auto loop = e.scope("for (int x = warp + 1; x < WARPS; ++x)");
        e.declare("x");
        e.decl("const int", "r", Expr("part_rb[x]"));
        e.line("if (r == -2) continue;", "no strides in that piece");
        e.line("if (r != open_rb) break;");
        int a = 0;
        for_each_accumulator([&](const std::string &acc) {
          e.line("#pragma unroll");
          e.line("for (int i = 0; i < " + S(n) + "; ++i) " + acc + "[i] += " +
                 at("part", slot(Expr::var("x", 1, l.threads / 32 - 1), a++)).str() + ";");
        });
      }
      finish(panels ? "open_rb - pbase" : "open_rb");
    }
    if (cluster) pair_sums();
    if (panels || l.slice_shares)
      e.line("__syncthreads();", std::string("the partial sums are read and C written: the next ") +
                                     (panels ? "panel" : "segment") + " may overwrite the slice");
    if (l.slice_shares) {
      e.line("end = share_end, ++sl, t0 = 0;", "the next segment: the next slice from its first stride");
      e.line("if ((unsigned long long)sl * (unsigned)T >= end) break;");
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
      "BSN is N rounded up to 16, so one slice holds all of N. Column indices are 16-bit: the column",
      "in bits 0-14 (pads name row slot % 8), and bit 15 of the stride's 32 indices its schedule word.",
      "Grid: x = slices of BSN columns (one when N <= BSN), y = one block per SM. Each block copies",
      "its slice of B into dynamic shared memory once and takes a contiguous run of row-blocks:",
      "an equal share of the T strides, both ends moved on to the next row-block start",
      "(stride_next). The run is cut into one equal piece per warp; a warp streams its piece's",
      "column indices, A fragments and schedule words (row-block, first / last stride) through a",
      "register ring (DEPTH strides ahead) and gathers B rows from shared memory with ldmatrix.",
      "Every row-block has a stride (an empty one: pads), so no row pointer is read.",
      "A row-block that lies wholly in one piece is written by that warp; one cut between pieces",
      "is summed in shared memory after the loop (the partials written over B's slice) by the",
      "warp holding its first stride. Every output element is written once; no atomics.",
      "Dynamic shared memory: max(max(K, 8) x (slice row bytes), the warps' partial sums).",
  };
  f.min_blocks = 1;
  Prologue &pr = f.prologue;
  slice_prologue(pr, p, !p.launch.slice_shares);
  if (p.spec.panel) {
    pr.def("constexpr int", "KP", p.spec.panel, "B's rows a pass holds (a K panel)");
    f.doc.insert(f.doc.end(), {
        "K in panels of KP rows: A is packed panel by panel (panel q's row-block b is row-block",
        "q x nblk + b, its columns relative to the panel); each block takes an equal share of the",
        "row-blocks and makes one pass a panel over their strides (panel_first), the panel's rows",
        "of its slice in shared memory; each pass after the first adds its sums into C with",
        "red.global.add (integer C; the block's own elements, a barrier after the pass before).",
    });
    if (p.launch.panel_cluster) {
      f.doc.insert(f.doc.end(), {
          "Launched in clusters of two blocks (where K takes two panels), the pair shares a part of the",
          "row-blocks and each block makes the pass of one panel (half of B's slice to copy), keeping its",
          "row-blocks' sums in shared memory; after both passes (a cluster barrier) each block adds the",
          "two halves of every other row-block, the other's through distributed shared memory, and",
          "writes C. Without clusters: a cluster of one, as above.",
      });
    }
  }
  if (p.launch.slice_shares) {
    f.doc.insert(f.doc.end(), {
        "Shares of all slices (spec n..s): block b of G = gridDim.x x gridDim.y takes an equal share",
        "of all slices' strides, slice after slice, one segment a slice it touches, copying that",
        "slice first: a grid of (slices, parts) gives each block one slice's part, a grid of",
        "(1, SMs) one wave where whole waves would leave SMs idle (runtime/kernel.h: decode_grid).",
    });
  }
  g.body();
  return assemble(p, f, g);
}

}  // namespace magicube::gen
