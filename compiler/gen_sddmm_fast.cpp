// sddmm-fast: int8 m16n8k32 with the sampled vectors on the mma's M side. Both dense operands
// are K-contiguous, so per k-block of 64 * SL k (SL = 2 when every rhs plane is 4-bit, else
// 1) each lane loads 16 * SL consecutive k of each of its rows with 16-byte loads (8 bytes
// for 4-bit planes at SL = 1), widened in registers. A dot product does not depend on the
// order of its k, so k-step h of the block uses words 2h and 2h + 1 of every row's loads:
// the same k for A and B.
#include "compiler/gen_common.h"

namespace magicube::gen {

namespace {

std::string S(long long x) { return std::to_string(x); }

class SddmmFast : public KernelGen {
 public:
  using KernelGen::KernelGen;

  int sl() const { return all_rhs_nibbles() ? 2 : 1; }
  // Loads per row of a plane per k-block, and their type.
  int loads(const Chunk &c) const { return std::max(1, sl() * c.storage_bits / 8); }
  std::string type(const Chunk &c) const { return sl() * c.storage_bits / 8 >= 1 ? "uint4" : "uint2"; }

  // Word w (0 .. 4 * SL - 1) of the loads x_0, x_1 .. of one row of a chunk plane. Without
  // 4-bit planes, word w is k 4w .. 4w+3. With them (the plan's nibble_prescale), word 2i is
  // the even k of 8i .. 8i+7 and word 2i + 1 the odd ones, so that a 4-bit register widens
  // with one mask: even nibbles shifted up into the high half of each byte, odd nibbles
  // already there. The bytes hold value << 4 (sign bit at bit 7); 8-bit planes match the
  // order with one prmt.
  Expr word(const Chunk &c, const std::string &x, int w) const {
    static const char *f[] = {".x", ".y", ".z", ".w"};
    if (c.storage_bits == 8) {
      const std::string r = x + "_" + S(w / 4);
      const int ww = w % 4;
      if (!p.nibble_prescale) return r + f[ww];
      return cg::call("__byte_perm", {r + f[ww / 2 * 2], r + f[ww / 2 * 2 + 1], ww % 2 ? "0x7531" : "0x6420"});
    }
    const int ci = w / 2;  // the 32-bit component holding 8 nibbles: words 2ci and 2ci + 1
    const Expr r(x + "_" + S(ci / 4) + f[ci % 4]);
    return w % 2 ? r & Expr("0xf0f0f0f0u") : (r << 4) & Expr("0xf0f0f0f0u");
  }

  // Every row's load registers (names without the _i suffix) with their plane.
  std::vector<std::pair<std::string, const Chunk *>> rows(const std::string &pre) const {
    std::vector<std::pair<std::string, const Chunk *>> r;
    for (size_t g = 0; g < p.groups.size(); ++g) r.push_back({pre + "l" + S(g), &p.lhs[p.groups[g].lhs_chunks[0]]});
    for (size_t j = 0; j < p.rhs.size(); ++j)
      for (int t = 0; t < tiles(); ++t)
        for (int h = 0; h < 2; ++h) r.push_back({pre + "r" + S(j) + "_" + S(t) + "_" + S(h), &p.rhs[j]});
    return r;
  }

  void declare_loads(const std::string &pre) {
    for (const auto &[name, c] : rows(pre)) {
      std::string names;
      for (int i = 0; i < loads(*c); ++i) names += (i ? ", " : "") + name + "_" + S(i);
      e.decl_only(type(*c), names);
    }
  }

  // The loads of the k-block at kb into the registers named <pre>...
  void issue_loads(const std::string &pre, const Expr &kb) {
    for (size_t g = 0; g < p.groups.size(); ++g) {
      const Chunk &c = p.lhs[p.groups[g].lhs_chunks[0]];
      const std::string T = type(c), G = S(g);
      const Expr zero = T == "uint4" ? "make_uint4(0, 0, 0, 0)" : "make_uint2(0, 0)";
      for (int i = 0; i < loads(c); ++i) {
        const Expr v = cg::call("__ldg", {cast("const " + T + " *", Expr("ap" + G) + kb * c.storage_bits / 8) + i});
        e.assign(pre + "l" + G + "_" + S(i), select(lok[g], v, zero));
      }
    }
    for (size_t j = 0; j < p.rhs.size(); ++j)
      for (int t = 0; t < tiles(); ++t)
        for (int h = 0; h < 2; ++h)
          for (int i = 0; i < loads(p.rhs[j]); ++i) {
            const std::string id = S(j) + "_" + S(t) + "_" + S(h);
            const Expr ptr = Expr("bp" + id) + kb * p.rhs[j].storage_bits / 8;
            e.assign(pre + "r" + id + "_" + S(i), cg::call("__ldg", {cast("const " + type(p.rhs[j]) + " *", ptr) + i}));
          }
  }

  // The mmas of one k-block from the registers named <pre>...
  void block_mmas(const std::string &pre) {
    for (int h = 0; h < 2 * sl(); ++h) {
      auto step = e.scope("", "k-step " + S(h) + " of the block: words " + S(2 * h) + " and " + S(2 * h + 1));
      for (size_t g = 0; g < p.groups.size(); ++g) {
        const Chunk &c = p.lhs[p.groups[g].lhs_chunks[0]];
        const std::string x = pre + "l" + S(g);
        e.decl("const u32", "lb" + S(g) + "[2]", Expr("{" + word(c, x, 2 * h).str() + ", " + word(c, x, 2 * h + 1).str() + "}"));
      }
      for (size_t j = 0; j < p.rhs.size(); ++j)
        for (int t = 0; t < tiles(); ++t) {
          const Chunk &c = p.rhs[j];
          const std::string x0 = pre + "r" + S(j) + "_" + S(t) + "_0", x1 = pre + "r" + S(j) + "_" + S(t) + "_1";
          e.decl("const u32", "ra" + S(j) + "_" + S(t) + "[4]",
                 Expr("{" + word(c, x0, 2 * h).str() + ", " + word(c, x1, 2 * h).str() + ", " + word(c, x0, 2 * h + 1).str() +
                      ", " + word(c, x1, 2 * h + 1).str() + "}"));
        }
      int8_mmas([](int j, int t) { return "ra" + S(j) + "_" + S(t); }, "lb");
    }
  }

  std::vector<Expr> lok;  // per stack group: whether this lane's A row is a real slot

  void body() {
    const Expr begin("begin"), qend("qend");
    e.decl("constexpr int", "KB", 64 * sl(),
           "k per block: each lane loads " + S(16 * sl()) + " consecutive k of each of its rows");
    const Expr kq = let("const int", "kq", tig * (16 * sl()), "this lane's first k within the block");
    e.comment("---- this lane's A row per stack group (mma N side): chunk slot gid / V, row gid % V ----");
    for (size_t g = 0; g < p.groups.size(); ++g) {
      const auto &ch = p.groups[g].lhs_chunks;
      Expr plane("a" + S(ch[0]));
      for (size_t s = 1; s < ch.size(); ++s) plane = select(eq(gid / V, int(s)), "a" + S(ch[s]), plane);
      lok.push_back(let("const bool", "lok" + S(g), lt(gid / V, int(ch.size())), "lanes past the stacked slots multiply zeros"));
      const Expr row = cast("long long", blk * V + gid % V) * Expr("ldk") + kq;
      e.decl("const unsigned char *", "ap" + S(g), plane + row * p.lhs[ch[0]].storage_bits / 8);
    }
    e.comment("---- this lane's two vectors per tile (mma M side): B columns; rows past the list read column 0 ----");
    for (int t = 0; t < tiles(); ++t)
      for (int h = 0; h < 2; ++h) {
        const std::string th = S(t) + "_" + S(h);
        const Expr q = let("const int", "q" + th, begin + n_base + nw + (16 * t + 8 * h) + gid);
        const Expr cv = let("const long long", "cv" + th, select(lt(q, qend), cg::call("max", {at("col_idx", q), 0}), 0));
        for (size_t j = 0; j < p.rhs.size(); ++j)
          e.decl("const unsigned char *", "bp" + S(j) + "_" + th,
                 Expr("b" + S(j)) + (cv * Expr("ldk") + kq) * p.rhs[j].storage_bits / 8);
      }
    declare_accumulators("---- int32 accumulators, one mma tile per (stack group, rhs chunk, tile) ----");
    const Expr kb = Expr::var("kb", 0), kn = Expr::var("kn", 0);
    if (p.spec.prefetch) {
      e.comment("---- k-blocks: the next block's loads are in flight while this block's mmas run ----");
      declare_loads("c");
      issue_loads("c", 0);
      auto loop = e.scope("for (int kb = 0; kb < K; kb += KB)");
      e.declare("kb");
      e.decl("const int", "kn", Expr::code("kb + KB < K ? kb + KB : kb", cg::kTernary),
             "the last block loads itself again: no branch");
      declare_loads("n");
      issue_loads("n", kn);
      block_mmas("c");
      for (const auto &[name, c] : rows("")) {
        std::string copy;
        for (int i = 0; i < loads(*c); ++i)
          copy += (i ? " " : "") + std::string("c") + name + "_" + S(i) + " = n" + name + "_" + S(i) + ";";
        e.line(copy);
      }
    } else {
      auto loop = e.scope("for (int kb = 0; kb < K; kb += KB)", "k-blocks");
      e.declare("kb");
      declare_loads("c");
      issue_loads("c", kb);
      block_mmas("c");
    }
  }
};

}  // namespace

llvm::Expected<std::string> generate_sddmm_fast(const Plan &p) {
  Snippets helpers;
  SddmmFast g(p, helpers);
  KernelFrame f;
  f.doc = {
      "SDDMM, fast kernel (sddmm-fast): Out = (A[M x K] x B[K x N]) sampled at the mask's V x 1",
      "vectors, with int8 m16n8k32 mma.sync, the vectors on M. A is row-major, B column-major,",
      "both K-contiguous with pitch ldk (zero padded past K). One thread block computes one",
      "row-block (V rows of A) x BSN of its sampled vectors: up to 4 warps of tiles of 16",
      "vectors. Per k-block each lane loads 16 consecutive k (32 with 4-bit B) of its A row and",
      "of each of its vectors' B columns (16-byte loads, 8 bytes for 4-bit planes) and runs",
      "two k-steps (four) on them, the next block's loads in flight meanwhile; the k order",
      "inside a block is permuted the same way for A and B, which a dot product does not see.",
      "The epilogue shifts, sums and exchanges like SpMM's and writes each vector's V values in",
      "SR-BCRS (stride out_stride) or BCRS (bcrs_ptr) order.",
  };
  sddmm_prologue(g, f);
  g.body();
  g.epilogue();
  return assemble(p, f, g);
}

}  // namespace magicube::gen
