// sddmm-fast written as PTX (Launch::language == Ptx): the kernel of gen_sddmm_fast.cpp for
// its common plans (one lhs and one rhs chunk of 8 or 4 bits, V = 8, the next k-block's loads
// in flight, integer output), so that a cold compile is ptxas alone. Same loads, word order,
// mmas and output order as the CUDA kernel; compiler/launch.cpp's ptx_emittable() names the
// plans it takes.
#include <algorithm>
#include <string>
#include <vector>

#include "compiler/gen_ptx_common.h"

namespace magicube::gen {

namespace {

using ptx::imm;

std::string S(long long x) { return std::to_string(x); }

class SddmmFastPtx : public PtxKernel {
 public:
  explicit SddmmFastPtx(const Plan &plan) : PtxKernel(plan) {}

  const Chunk &ca = p.lhs[0], &cb = p.rhs[0];
  const int V = p.spec.v, SL = cb.storage_bits == 4 ? 2 : 1, KB = 64 * SL;
  std::vector<std::string> acc;  // [tile * 4 + i]

  // 16-byte loads per row and k-block (8 bytes when one 4-bit row needs less), and their words.
  int loads(const Chunk &c) const { return std::max(1, SL * c.storage_bits / 8); }
  int words(const Chunk &c) const { return SL * c.storage_bits / 8 >= 1 ? 4 : 2; }

  // One row's registers of a k-block: loads(c) x words(c) 32-bit words.
  struct Row {
    const Chunk *c;
    std::string ptr;               // its address at k-block 0
    std::vector<std::string> w[2];  // two register sets of a block's words, load-major: one computed, one in flight
  };
  Row a_row;
  std::vector<Row> b_rows;  // [tile * 2 + h]

  std::vector<std::string> fresh_words(const Chunk &c, const std::string &stem) {
    std::vector<std::string> w;
    for (int i = 0; i < loads(c) * words(c); ++i) w.push_back(tmp32(stem));
    return w;
  }

  // The loads of row r at byte offset `off` (a register, or "" for 0) into `into`.
  void load(const Row &r, const std::string &off, const std::vector<std::string> &into) {
    std::string addr = r.ptr;
    if (!off.empty()) {
      addr = tmp64("at");
      b.op("add.s64 " + addr + ", " + r.ptr + ", " + off);
    }
    const int n = words(*r.c);
    for (int i = 0; i < loads(*r.c); ++i) {
      std::string regs;
      for (int k = 0; k < n; ++k) regs += (k ? ", " : "") + into[i * n + k];
      b.op("ld.global.nc.v" + S(n) + ".u32 {" + regs + "}, " + at(addr, 16 * i));
    }
  }

  // Word w of a row's block (gen_sddmm_fast.cpp's order): 8-bit, k 4w..4w+3 (with 4-bit
  // planes in the plan, the even and odd bytes of a pair of words, to match their order);
  // 4-bit, the even (w even) or odd nibbles of one 32-bit word, as bytes << 4.
  std::string word(const Row &r, int set, int w) {
    const std::vector<std::string> &x = r.w[set];
    const std::string out = tmp32("wd");
    if (r.c->storage_bits == 8) {
      const int base = (w / 4) * 4, ww = w % 4;
      if (!p.nibble_prescale) return x[base + ww];
      b.op("prmt.b32 " + out + ", " + x[base + ww / 2 * 2] + ", " + x[base + ww / 2 * 2 + 1] + ", " +
           (ww % 2 ? "0x7531" : "0x6420"));
      return out;
    }
    const std::string &src = x[w / 2];
    if (w % 2) {
      b.op("and.b32 " + out + ", " + src + ", 0xf0f0f0f0", "odd nibbles, already << 4");
    } else {
      b.op("shl.b32 " + out + ", " + src + ", 4");
      b.op("and.b32 " + out + ", " + out + ", 0xf0f0f0f0", "even nibbles << 4");
    }
    return out;
  }

  void block_mmas(int set) {
    const MmaAtom *atom = find_mma_atom(p.shape, 8, cb.is_signed, p.groups[0].is_signed);
    for (int h = 0; h < 2 * SL; ++h) {
      b.comment("k-step " + S(h) + " of the block: words " + S(2 * h) + " and " + S(2 * h + 1));
      const std::string lb0 = word(a_row, set, 2 * h), lb1 = word(a_row, set, 2 * h + 1);
      for (int t = 0; t < l.tiles; ++t) {
        const Row &r0 = b_rows[2 * t], &r1 = b_rows[2 * t + 1];
        const std::string ra[4] = {word(r0, set, 2 * h), word(r1, set, 2 * h), word(r0, set, 2 * h + 1),
                                   word(r1, set, 2 * h + 1)};
        const std::string d = acc[4 * t] + ", " + acc[4 * t + 1] + ", " + acc[4 * t + 2] + ", " + acc[4 * t + 3];
        b.op(std::string(atom->ptx) + " {" + d + "}, {" + ra[0] + ", " + ra[1] + ", " + ra[2] + ", " + ra[3] + "}, {" +
             lb0 + ", " + lb1 + "}, {" + d + "}");
      }
    }
  }

  void body() {
    thread_coordinates();
    const std::string rp = param64("row_ptr"), ci = param64("col_idx"), a0 = param64("a0"), b0 = param64("b0");
    const std::string cptr = param64("c"), bcrs = param64("bcrs_ptr");
    const std::string M = param32("M"), K = param32("K"), ldk = param32("ldk"), os = param32("out_stride");
    const std::string exit = b.label("exit");
    b.comment("---- the row-block's vectors: this block's share, or none ----");
    const std::string rpa = tmp64("rpa"), begin = b.b32("begin"), qend = b.b32("qend");
    b.op("mul.wide.u32 " + rpa + ", blk, 8");
    b.op("add.s64 " + rpa + ", " + rp + ", " + rpa);
    b.op("ld.global.nc.u32 " + begin + ", [" + rpa + "]", "the row-block's first slot");
    b.op("ld.global.nc.u32 " + qend + ", [" + rpa + "+4]", "and the end of its vectors");
    {
      const std::string first = tmp32("first"), none = b.pred("none");
      b.op("add.s32 " + first + ", " + begin + ", n_base");
      b.op("setp.ge.s32 " + none + ", " + first + ", " + qend);
      b.guarded("@" + none, "bra " + exit, "no vectors for this block");
    }
    const std::string kq = b.b32("kq");
    b.op("mul.lo.u32 " + kq + ", tig, " + imm(16 * SL), "this lane's first k within a block of " + S(KB));
    b.comment("---- this lane's A row (mma N side): row gid of the row-block ----");
    {
      const std::string row = tmp32("arow"), off = tmp64("aoff"), kq64 = tmp64("kq64");
      b.op("mad.lo.u32 " + row + ", blk, " + imm(V) + ", gid");
      b.op("mul.wide.s32 " + off + ", " + row + ", " + ldk);
      b.op("cvt.u64.u32 " + kq64 + ", " + kq);
      b.op("add.s64 " + off + ", " + off + ", " + kq64);
      if (ca.storage_bits == 4) b.op("shr.s64 " + off + ", " + off + ", 1", "packed nibbles");
      a_row.c = &ca;
      a_row.ptr = b.b64("ap");
      b.op("add.s64 " + a_row.ptr + ", " + a0 + ", " + off);
    }
    b.comment("---- this lane's two vectors per tile (mma M side): B columns; rows past the list read column 0 ----");
    for (int t = 0; t < l.tiles; ++t)
      for (int h = 0; h < 2; ++h) {
        const std::string q = tmp32("q"), in = b.pred("in_list"), cv = tmp32("cv"), qa = tmp64("qa"), off = tmp64("boff"),
                          kq64 = tmp64("kq64");
        b.op("add.s32 " + q + ", " + begin + ", n_base");
        b.op("mad.lo.u32 " + q + ", warp, " + imm(l.warp_cols) + ", " + q);
        b.op("add.s32 " + q + ", " + q + ", gid");
        if (16 * t + 8 * h) b.op("add.s32 " + q + ", " + q + ", " + imm(16 * t + 8 * h), "tile " + S(t) + ", rows " + S(8 * h) + "+");
        b.op("setp.lt.s32 " + in + ", " + q + ", " + qend);
        b.op("mov.u32 " + cv + ", 0");
        b.op("mul.wide.s32 " + qa + ", " + q + ", 4");
        b.op("add.s64 " + qa + ", " + ci + ", " + qa);
        b.guarded("@" + in, "ld.global.nc.s32 " + cv + ", [" + qa + "]");
        b.op("max.s32 " + cv + ", " + cv + ", 0", "pads (-1) read column 0");
        b.op("mul.wide.s32 " + off + ", " + cv + ", " + ldk);
        b.op("cvt.u64.u32 " + kq64 + ", " + kq);
        b.op("add.s64 " + off + ", " + off + ", " + kq64);
        if (cb.storage_bits == 4) b.op("shr.s64 " + off + ", " + off + ", 1", "packed nibbles");
        Row r;
        r.c = &cb;
        r.ptr = b.b64("bp" + S(t) + "_" + S(h));
        b.op("add.s64 " + r.ptr + ", " + b0 + ", " + off);
        b_rows.push_back(r);
      }
    b.comment("---- int32 accumulators: " + S(l.tiles) + " tile(s) of 4 ----");
    for (int t = 0; t < l.tiles; ++t)
      for (int i = 0; i < 4; ++i) {
        acc.push_back(b.b32("acc_t" + S(t) + "_" + S(i)));
        b.op("mov.b32 " + acc.back() + ", 0");
      }

    b.comment("---- k-blocks: the next block's loads are in flight while this block's mmas run; two blocks a turn,");
    b.comment("     alternating between two register sets (no copies) ----");
    for (int set = 0; set < 2; ++set) {
      a_row.w[set] = fresh_words(ca, set ? "na" : "ca");
      for (Row &r : b_rows) r.w[set] = fresh_words(cb, set ? "nb" : "cb");
    }
    load(a_row, "", a_row.w[0]);
    for (Row &r : b_rows) load(r, "", r.w[0]);
    const std::string kb = b.b32("kb"), loop = b.label("kblock"), done = b.label("kblocks_done");
    b.op("mov.u32 " + kb + ", 0");
    {
      const std::string empty = b.pred("no_k");
      b.op("setp.le.s32 " + empty + ", " + K + ", 0");
      b.guarded("@" + empty, "bra " + done);
    }
    b.place(loop);
    // One k-block from register set `set`, with the next block's loads into the other set.
    auto block = [&](int set) {
      const std::string kn = tmp32("kn"), last = b.pred("last");
      b.op("add.s32 " + kn + ", " + kb + ", " + imm(KB));
      b.op("setp.ge.s32 " + last + ", " + kn + ", " + K);
      b.op("selp.b32 " + kn + ", " + kb + ", " + kn + ", " + last, "the last block loads itself again: no branch");
      auto offset = [&](const Chunk &c) {
        const std::string o = tmp64("koff");
        if (c.storage_bits == 4) {
          const std::string h = tmp32("kh");
          b.op("shr.u32 " + h + ", " + kn + ", 1");
          b.op("cvt.u64.u32 " + o + ", " + h);
        } else {
          b.op("cvt.u64.u32 " + o + ", " + kn);
        }
        return o;
      };
      load(a_row, offset(ca), a_row.w[1 - set]);
      const std::string ob = offset(cb);
      for (Row &r : b_rows) load(r, ob, r.w[1 - set]);
      block_mmas(set);
      const std::string more = b.pred("more");
      b.op("add.s32 " + kb + ", " + kb + ", " + imm(KB));
      b.op("setp.lt.s32 " + more + ", " + kb + ", " + K);
      return more;
    };
    const std::string more0 = block(0);
    b.guarded("@!" + more0, "bra " + done);
    const std::string more1 = block(1);
    b.guarded("@" + more1, "bra " + loop);
    b.place(done);
    epilogue(cptr, bcrs, M, os, begin, qend);
    b.place(exit);
  }

  // Each vector's V values in the mask's order: SR-BCRS (stride out_stride) or BCRS (bcrs_ptr).
  void epilogue(const std::string &cptr, const std::string &bcrs, const std::string &M, const std::string &os,
                const std::string &begin, const std::string &qend) {
    const bool i64 = p.spec.out == OutType::Int64;
    const int pre = p.term_prescale(p.terms[0]), es = i64 ? 8 : 4;
    b.comment(std::string("---- epilogue: ") + (pre ? "shift back by the nibble prescale, " : "") +
              "write each vector's V values (" + (i64 ? "int64" : "int32") + ") ----");
    std::string rowok[2];
    for (int i = 0; i < 2; ++i) {
      const std::string row = tmp32("row");
      rowok[i] = b.pred("row_ok");
      b.op("mul.lo.u32 " + row + ", blk, " + imm(V));
      b.op("mad.lo.u32 " + row + ", tig, 2, " + row);
      if (i) b.op("add.u32 " + row + ", " + row + ", 1");
      b.op("setp.lt.s32 " + rowok[i] + ", " + row + ", " + M, "row blk V + 2 tig + " + S(i));
    }
    // Per tile and half (registers 2h, 2h + 1: vector q, rows 2 tig and 2 tig + 1): q, whether it
    // is in the list, and the two values.
    struct Vec {
      std::string q, inq, v[2];
    };
    std::vector<Vec> vecs;
    for (int t = 0; t < l.tiles; ++t)
      for (int h = 0; h < 2; ++h) {
        Vec x;
        x.q = tmp32("q");
        x.inq = b.pred("q_ok");
        b.op("add.s32 " + x.q + ", " + begin + ", n_base");
        b.op("mad.lo.u32 " + x.q + ", warp, " + imm(l.warp_cols) + ", " + x.q);
        b.op("add.s32 " + x.q + ", " + x.q + ", gid");
        if (16 * t + 8 * h) b.op("add.s32 " + x.q + ", " + x.q + ", " + imm(16 * t + 8 * h), "tile " + S(t));
        b.op("setp.lt.s32 " + x.inq + ", " + x.q + ", " + qend, "the vector's slot is in the list");
        for (int i = 0; i < 2; ++i) {
          x.v[i] = acc[4 * t + 2 * h + i];
          if (pre) {
            const std::string sh = tmp32("sh");
            b.op("shr.s32 " + sh + ", " + x.v[i] + ", " + imm(pre));
            x.v[i] = sh;
          }
          if (i64) {
            const std::string w = tmp64("tot");
            b.op("cvt.s64.s32 " + w + ", " + x.v[i]);
            x.v[i] = w;
          }
        }
        vecs.push_back(x);
      }
    // The element index `idx` (64-bit, in elements) stored to when in the list and in M.
    auto store = [&](const Vec &x, int i, const std::string &idx) {
      const std::string where = tmp64("where"), ok = b.pred("store");
      b.op("shl.b64 " + where + ", " + idx + ", " + imm(log2i(es)));
      b.op("add.s64 " + where + ", " + cptr + ", " + where);
      b.op("and.pred " + ok + ", " + x.inq + ", " + rowok[i]);
      b.guarded("@" + ok, std::string("st.global.") + (i64 ? "u64" : "u32") + " [" + where + "], " + x.v[i]);
    };
    // The output layout is the caller's (bcrs_ptr null or not): one branch, each path computing
    // only its own index.
    const std::string has_bcrs = b.pred("bcrs"), srbcrs = b.label("srbcrs_output"), stored = b.label("stored");
    b.op("setp.eq.u64 " + has_bcrs + ", " + bcrs + ", 0");
    b.guarded("@" + has_bcrs, "bra " + srbcrs);
    {
      b.comment("BCRS: (bcrs_ptr[blk] + q - begin) V + vidx");
      const std::string a = tmp64("ba"), bbase = b.b64("bcrs_base");
      b.op("mul.wide.u32 " + a + ", blk, 8");
      b.op("add.s64 " + a + ", " + bcrs + ", " + a);
      b.op("ld.global.nc.u64 " + bbase + ", [" + a + "]");
      for (const Vec &x : vecs) {
        const std::string qb = tmp32("qb"), bc = tmp64("bc");
        b.op("sub.s32 " + qb + ", " + x.q + ", " + begin);
        b.op("cvt.s64.s32 " + bc + ", " + qb);
        b.op("add.s64 " + bc + ", " + bc + ", " + bbase);
        b.op("mul.lo.s64 " + bc + ", " + bc + ", " + imm(V));
        for (int i = 0; i < 2; ++i) {
          const std::string idx = tmp64("idx");
          b.op("mad.wide.u32 " + idx + ", tig, 2, " + bc);
          if (i) b.op("add.s64 " + idx + ", " + idx + ", 1");
          store(x, i, idx);
        }
      }
      b.op("bra " + stored);
    }
    b.place(srbcrs);
    {
      b.comment("SR-BCRS: (q / out_stride) out_stride V + vidx out_stride + q % out_stride");
      for (const Vec &x : vecs) {
        const std::string qd = tmp32("qd"), qr = tmp32("qr"), sr = tmp64("sr"), t64 = tmp64("t");
        b.op("div.u32 " + qd + ", " + x.q + ", " + os);
        b.op("mul.lo.u32 " + qd + ", " + qd + ", " + os);
        b.op("sub.u32 " + qr + ", " + x.q + ", " + qd, "q % out_stride");
        b.op("mul.wide.u32 " + sr + ", " + qd + ", " + imm(V));
        b.op("cvt.u64.u32 " + t64 + ", " + qr);
        b.op("add.s64 " + sr + ", " + sr + ", " + t64);
        for (int i = 0; i < 2; ++i) {
          const std::string vo = tmp32("vo"), idx = tmp64("idx");
          b.op("mad.lo.u32 " + vo + ", tig, 2, " + imm(i));
          b.op("mul.lo.u32 " + vo + ", " + vo + ", " + os);
          b.op("cvt.u64.u32 " + t64 + ", " + vo);
          b.op("add.s64 " + idx + ", " + sr + ", " + t64);
          store(x, i, idx);
        }
      }
    }
    b.place(stored);
  }
};

}  // namespace

llvm::Expected<std::string> generate_sddmm_fast_ptx(const Plan &p) {
  SddmmFastPtx g(p);
  g.body();
  return g.assemble({
      "SDDMM, fast kernel (sddmm-fast) in PTX: Out = (A[M x K] x B[K x N]) sampled at the mask's",
      "V x 1 vectors, with int8 m16n8k32 mma.sync, the vectors on M. A is row-major, B column-major,",
      "both K-contiguous with pitch ldk (zero padded past K). One thread block computes one",
      "row-block (V rows of A) x BSN of its sampled vectors: up to 4 warps of tiles of 16",
      "vectors. Per k-block each lane loads 16 consecutive k (32 with 4-bit B) of its A row and",
      "of each of its vectors' B columns and runs two k-steps (four) on them, the next block's",
      "loads in flight meanwhile; the k order inside a block is permuted the same way for A and",
      "B, which a dot product does not see. The epilogue writes each vector's V values in SR-BCRS",
      "(stride out_stride) or BCRS (bcrs_ptr) order.",
  });
}

}  // namespace magicube::gen
