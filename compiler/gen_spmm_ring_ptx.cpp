// spmm-ring written as PTX (Launch::language == Ptx): the kernel of gen_spmm_ring.cpp for
// its common plans (one lhs and one rhs chunk of 8 or 4 bits, V = 8, one warp group, a
// cp.async ring, integer output), emitted as PTX so that a cold compile is ptxas alone
// (no C++ front end, no NVVM: about a third of the time; bench/NOTES.md, Session 14).
// Same shared-memory layout, copies, fragments and epilogue as the CUDA kernel, so the two
// compute the same bits; compiler/launch.cpp's ptx_emittable() names the plans it takes.
#include <array>
#include <string>
#include <utility>
#include <vector>

#include "compiler/gen_ptx_common.h"

namespace magicube::gen {

namespace {

using ptx::imm;

std::string S(long long x) { return std::to_string(x); }

class SpmmRingPtx : public PtxKernel {
 public:
  explicit SpmmRingPtx(const Plan &plan) : PtxKernel(plan) {}

  const Chunk &ca = p.lhs[0], &cb = p.rhs[0];
  const int KS = p.shape.k, V = p.spec.v, THREADS = l.threads, STAGES = l.ring_depth, IR = l.index_ring;
  const int pitch = ring_row_pitch(p, cb);                   // a ring row of B: BSn bytes (packed) + 16
  const int nb = slice_row_bytes(p, cb) / 16;                // 16-byte pieces of a gathered B row
  const int abytes = a_stride_bytes(p, ca), na = abytes / 16;  // A's stride, its 16-byte pieces
  const int b_stage = KS * pitch;                            // one ring slot of B
  const bool nib_a = ca.storage_bits == 4, nib_b = cb.storage_bits == 4;

  // Registers every part uses.
  std::string sb0, sa0, sidx, nstr, bidx, bdst, bsrc, ldbb, adst, asrc, isrc, isrc_t, idst, a_copier, i_copier;
  std::vector<std::string> acc;  // [tile * 4 + i]

  // Stride st into ring slot st % STAGES: its B rows, named by its column indices (index-ring
  // slot st % IR), and A's values. `st` is a register, or the constant `st_const` (>= 0: the
  // prologue's strides, whose offsets fold into the addresses).
  void issue_stride(const std::string &st, int st_const) {
    const int total = KS * nb, passes = (total + THREADS - 1) / THREADS, rows_per = THREADS / nb;
    std::string ids = bidx, bslot = bdst, adr = adst, asrc_w = asrc;
    long long ids_off = 0, bslot_off = 0, adr_off = 0, asrc_off = 0;
    if (st_const >= 0) {
      ids_off = (st_const % IR) * KS * 4;
      bslot_off = (st_const % STAGES) * b_stage;
      adr_off = (st_const % STAGES) * abytes;
      asrc_off = (long long)st_const * abytes;
    } else {
      const std::string slot_w = tmp32("slot_w"), ir = tmp32("ir"), aoff = tmp64("aoff");
      ids = tmp32("ids");
      bslot = tmp32("bslot");
      adr = tmp32("adst_w");
      asrc_w = tmp64("asrc_w");
      b.op(mod_by(slot_w, st, STAGES), "its ring slot");
      b.op(mod_by(ir, st, IR), "its index-ring slot");
      b.op("mad.lo.u32 " + ids + ", " + ir + ", " + imm(KS * 4) + ", " + bidx, "this thread's first index of the stride");
      b.op("mad.lo.u32 " + bslot + ", " + slot_w + ", " + imm(b_stage) + ", " + bdst, "its first B row in the slot");
      b.op("mad.lo.u32 " + adr + ", " + slot_w + ", " + imm(abytes) + ", " + adst);
      b.op("mul.wide.s32 " + aoff + ", " + st + ", " + imm(abytes));
      b.op("add.s64 " + asrc_w + ", " + asrc + ", " + aoff);
    }
    for (int gi = 0; gi < passes; ++gi) {
      std::string skip;
      if (total % THREADS) {  // the last pass has fewer rows than threads
        const std::string pr = b.pred("short_row");
        b.op("setp.ge.u32 " + pr + ", bkk, " + imm(KS - gi * rows_per));
        skip = b.label("no_row");
        b.guarded("@" + pr, "bra " + skip);
      }
      const std::string col = tmp32("col"), off = tmp64("off"), src = tmp64("src");
      b.op("ld.shared.s32 " + col + ", " + at(ids, ids_off + gi * rows_per * 4),
           "B plane 0: row " + (gi ? "bkk + " + S(gi * rows_per) : std::string("bkk")) + " of the stride");
      b.op("max.s32 " + col + ", " + col + ", 0", "pads (-1) read row 0, times A's zeros");
      b.op("mul.wide.u32 " + off + ", " + col + ", " + ldbb);
      b.op("add.s64 " + src + ", " + bsrc + ", " + off);
      b.op("cp.async.ca.shared.global " + at(bslot, bslot_off + gi * rows_per * pitch) + ", [" + src + "], 16");
      if (!skip.empty()) b.place(skip);
    }
    b.guarded("@" + a_copier, "cp.async.ca.shared.global " + at(adr, adr_off) + ", " + at(asrc_w, asrc_off) + ", 16",
              "A plane 0: " + S(na) + " x 16 bytes");
  }

  // One stride from ring slot `slot`: A's fragment, B's fragments through ldmatrix.trans, the mmas.
  void compute(const std::string &slot) {
    // A (the mma's B operand): V rows x KS k of the stride, row gid, k 4 tig.. and 16 + 4 tig..
    const std::string abase = tmp32("afrag");
    b.op("mad.lo.u32 " + abase + ", " + slot + ", " + imm(abytes) + ", afrag0", "A's fragment in this slot");
    std::string lf[2];
    for (int i = 0; i < 2; ++i) {
      lf[i] = tmp32("lf" + S(i));
      if (!nib_a) {
        b.op("ld.shared.u32 " + lf[i] + ", " + at(abase, 16 * i));
      } else {  // four nibbles widened to bytes as value << 4 (the plan's nibble_prescale)
        const std::string h = tmp32("h"), x = tmp32("x");
        b.op("ld.shared.u16 " + h + ", " + at(abase, 8 * i));
        b.op("shl.b32 " + x + ", " + h + ", 4");
        b.op("prmt.b32 " + x + ", " + x + ", " + h + ", 0x5140");
        b.op("and.b32 " + lf[i] + ", " + x + ", 0xf0f0f0f0", "four nibbles as bytes << 4");
      }
    }
    const std::string bbase = tmp32("bfrag");
    b.op("mad.lo.u32 " + bbase + ", " + slot + ", " + imm(b_stage) + ", bfrag0", "this lane's B row in this slot");
    std::vector<std::array<std::string, 4>> rf(l.tiles);
    if (!nib_b) {
      for (int t = 0; t < l.tiles; ++t) {
        const std::string r[4] = {tmp32("r0"), tmp32("r1"), tmp32("r2"), tmp32("r3")};
        b.op("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {" + r[0] + ", " + r[1] + ", " + r[2] + ", " + r[3] +
                 "}, " + at(bbase, 16 * t),
             "tile " + S(t) + ": columns nw + " + (t ? S(16 * t) + " + " : "") + "{2 gid, 2 gid + 1}");
        for (int q = 0; q < 4; ++q) rf[t][q] = tmp32("rf" + S(t) + "_" + S(q));
        b.op("prmt.b32 " + rf[t][0] + ", " + r[0] + ", " + r[1] + ", 0x6420");
        b.op("prmt.b32 " + rf[t][1] + ", " + r[0] + ", " + r[1] + ", 0x7531");
        b.op("prmt.b32 " + rf[t][2] + ", " + r[2] + ", " + r[3] + ", 0x6420");
        b.op("prmt.b32 " + rf[t][3] + ", " + r[2] + ", " + r[3] + ", 0x7531");
      }
    } else {
      for (int q = 0; q < l.tiles / 2; ++q) {  // two tiles per ldmatrix: packed nibbles, 4 columns x 2 k rows a register
        const std::string r[4] = {tmp32("r0"), tmp32("r1"), tmp32("r2"), tmp32("r3")};
        b.op("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {" + r[0] + ", " + r[1] + ", " + r[2] + ", " + r[3] +
                 "}, " + at(bbase, 16 * q),
             "tiles " + S(2 * q) + ", " + S(2 * q + 1) + ": columns nw + " + (q ? S(32 * q) + " + " : "") +
                 "4 gid + {0,1} and {2,3}");
        for (int t = 2 * q; t < 2 * q + 2; ++t)
          for (int k = 0; k < 4; ++k) rf[t][k] = tmp32("rf" + S(t) + "_" + S(k));
        for (int c = 0; c < 4; ++c) {
          auto &R = rf[2 * q + c / 2];
          nib_col(R[c % 2], r[0], r[1], c);
          nib_col(R[c % 2 + 2], r[2], r[3], c);
        }
      }
    }
    const MmaAtom *atom = find_mma_atom(p.shape, 8, cb.is_signed, p.groups[0].is_signed);
    for (int t = 0; t < l.tiles; ++t) {
      const std::string d = acc[4 * t] + ", " + acc[4 * t + 1] + ", " + acc[4 * t + 2] + ", " + acc[4 * t + 3];
      b.op(std::string(atom->ptx) + " {" + d + "}, {" + rf[t][0] + ", " + rf[t][1] + ", " + rf[t][2] + ", " +
           rf[t][3] + "}, {" + lf[0] + ", " + lf[1] + "}, {" + d + "}");
    }
  }

  // Column c (0..3) of a pair of ldmatrix registers of packed nibbles, as bytes << 4.
  void nib_col(const std::string &out, const std::string &x, const std::string &y, int c) {
    const std::string lo = tmp32("nlo"), hi = tmp32("nhi");
    for (const auto &[dst, src] : {std::pair{lo, x}, std::pair{hi, y}}) {
      if (c == 0) b.op("shl.b32 " + dst + ", " + src + ", 4");
      else if (c == 1) b.op("mov.b32 " + dst + ", " + src);
      else b.op("shr.u32 " + dst + ", " + src + ", " + imm(4 * c - 4));
      b.op("and.b32 " + dst + ", " + dst + ", 0x00f000f0");
    }
    b.op("prmt.b32 " + out + ", " + lo + ", " + hi + ", 0x6420", "column " + S(c) + " of the four");
  }

  void body() {
    shared_comment("the ring of gathered B rows (padded by 16 bytes: conflict-free ldmatrix), A's strides and");
    shared_comment("the column indices");
    decl_shared("sb0", STAGES * b_stage, S(STAGES) + " x " + S(KS) + " rows x " + S(pitch) + " bytes, " + cb.str());
    decl_shared("sa0", STAGES * abytes, S(STAGES) + " x " + S(abytes) + " bytes, " + ca.str() + ", V x KS row-major");
    decl_shared("sidx", IR * KS * 4, S(IR) + " x " + S(KS) + " column indices");
    b.blank();
    thread_coordinates();
    const std::string rp = param64("row_ptr"), ci = param64("col_idx"), a0 = param64("a0"), b0 = param64("b0");
    const std::string M = param32("M"), N = param32("N"), ldb = param32("ldb");
    const std::string cptr = param64("c");
    b.comment("---- the row-block: its first slot and its strides ----");
    const std::string rpa = tmp64("rpa"), begin = b.b32("begin"), rend = b.b32("rend");
    b.op("mul.wide.u32 " + rpa + ", blk, 8");
    b.op("add.s64 " + rpa + ", " + rp + ", " + rpa);
    b.op("ld.global.nc.u32 " + begin + ", [" + rpa + "]", "its first slot");
    b.op("ld.global.nc.u32 " + rend + ", [" + rpa + "+4]", "the end of its real vectors");
    nstr = b.b32("nstrides");
    b.op("sub.s32 " + nstr + ", " + rend + ", " + begin);
    b.op("add.s32 " + nstr + ", " + nstr + ", " + imm(KS - 1));
    b.op("shr.s32 " + nstr + ", " + nstr + ", " + imm(log2i(KS)), "strides, the last one padded");
    b.comment("---- accumulators: " + S(l.tiles) + " tile(s) of 4 int32 ----");
    for (int t = 0; t < l.tiles; ++t)
      for (int i = 0; i < 4; ++i) {
        acc.push_back(b.b32("acc_t" + S(t) + "_" + S(i)));
        b.op("mov.b32 " + acc.back() + ", 0");
      }

    b.comment("---- this thread's share of every stride's copies (the same pieces each stride) ----");
    sb0 = shared_addr("sb0");
    sa0 = shared_addr("sa0");
    sidx = shared_addr("sidx");
    const std::string bkk = b.b32("bkk"), piece = tmp32("piece");
    b.op(div_by(bkk, "tid", nb), "first B row this thread copies (+ " + S(THREADS / nb) + " a pass)");
    b.op(mod_by(piece, "tid", nb), "and its 16-byte piece of the row");
    b.op("shl.b32 " + piece + ", " + piece + ", 4");
    bidx = b.b32("bidx");
    b.op("mad.lo.u32 " + bidx + ", " + bkk + ", 4, " + sidx, "its row's column index in index-ring slot 0");
    bdst = b.b32("bdst");
    b.op("mad.lo.u32 " + bdst + ", " + bkk + ", " + imm(pitch) + ", " + sb0);
    b.op("add.u32 " + bdst + ", " + bdst + ", " + piece, "its piece in ring slot 0");
    bsrc = b.b64("bsrc");
    const std::string t32 = tmp32("t"), t64 = tmp64("t");
    if (nib_b) b.op("shr.u32 " + t32 + ", n_base, 1", "packed nibbles: 2 columns a byte");
    else b.op("mov.u32 " + t32 + ", n_base");
    b.op("add.u32 " + t32 + ", " + t32 + ", " + piece);
    b.op("cvt.u64.u32 " + t64 + ", " + t32);
    b.op("add.s64 " + bsrc + ", " + b0 + ", " + t64, "+ column index x ldb bytes");
    ldbb = b.b32("ldbb");
    if (nib_b) b.op("shr.u32 " + ldbb + ", " + ldb + ", 1", "B row pitch in bytes");
    else b.op("mov.u32 " + ldbb + ", " + ldb, "B row pitch in bytes");
    a_copier = b.pred("a_copier");
    b.op("setp.lt.u32 " + a_copier + ", tid, " + imm(na), "threads that copy A's stride");
    adst = b.b32("adst");
    b.op(mod_by(adst, "tid", na));
    b.op("mad.lo.u32 " + adst + ", " + adst + ", 16, " + sa0);
    asrc = b.b64("asrc");
    b.op("mul.wide.s32 " + asrc + ", " + begin + ", " + imm(V * ca.storage_bits / 8), "A's first stride");
    b.op("add.s64 " + asrc + ", " + a0 + ", " + asrc);
    b.op("mul.wide.u32 " + t64 + ", tid, 16");
    b.op("add.s64 " + asrc + ", " + asrc + ", " + t64);
    i_copier = b.pred("i_copier");
    b.op("setp.lt.u32 " + i_copier + ", tid, " + imm(KS / 4), "threads that copy a stride's indices");
    isrc = b.b64("isrc");
    b.op("mul.wide.s32 " + isrc + ", " + begin + ", 4");
    b.op("add.s64 " + isrc + ", " + ci + ", " + isrc, "the row-block's first index");
    isrc_t = b.b64("isrc_t");
    b.op("mul.wide.u32 " + t64 + ", tid, 16");
    b.op("add.s64 " + isrc_t + ", " + isrc + ", " + t64, "this thread's piece of a stride's indices");
    idst = b.b32("idst");
    b.op("mad.lo.u32 " + idst + ", tid, 16, " + sidx, "(threads below KS / 4)");
    // Fragment addresses in ring slot 0: A's row gid, k 4 tig (4-bit: half the bytes); B's row lane at the warp's columns.
    const std::string afrag = b.b32("afrag0"), bfrag = b.b32("bfrag0");
    b.op("mad.lo.u32 " + afrag + ", gid, " + imm(KS * ca.storage_bits / 8) + ", " + sa0);
    b.op("mad.lo.u32 " + afrag + ", tig, " + imm(4 * ca.storage_bits / 8) + ", " + afrag, "A: row gid, k 4 tig");
    b.op("mad.lo.u32 " + bfrag + ", lane, " + imm(pitch) + ", " + sb0);
    b.op("mad.lo.u32 " + bfrag + ", warp, " + imm(l.warp_cols * cb.storage_bits / 8) + ", " + bfrag,
         "B: row lane, the warp's first column");

    b.comment("---- prologue: indices of strides 0 .. 2*(STAGES-1)-1, then strides 0 .. STAGES-2 ----");
    {
      // Index-ring slot s of stride s (2 (STAGES - 1) <= IR): piece i of them is 16 bytes at i * 16.
      const std::string lim = b.b32("idx_pieces"), i = b.b32("i"), done = b.label("indices_issued"),
                        loop = b.label("indices");
      b.op("min.s32 " + lim + ", " + nstr + ", " + imm(2 * (STAGES - 1)));
      b.op("shl.b32 " + lim + ", " + lim + ", " + imm(log2i(KS / 4)), "16-byte pieces");
      b.op("mov.u32 " + i + ", tid");
      b.place(loop);
      const std::string pdone = b.pred("idx_done");
      b.op("setp.ge.s32 " + pdone + ", " + i + ", " + lim);
      b.guarded("@" + pdone, "bra " + done);
      const std::string d = tmp32("d"), o = tmp64("o");
      b.op("mad.lo.u32 " + d + ", " + i + ", 16, " + sidx);
      b.op("mul.wide.u32 " + o + ", " + i + ", 16");
      b.op("add.s64 " + o + ", " + isrc + ", " + o);
      b.op("cp.async.ca.shared.global [" + d + "], [" + o + "], 16");
      b.op("add.u32 " + i + ", " + i + ", " + imm(THREADS));
      b.op("bra " + loop);
      b.place(done);
    }
    b.op("cp.async.commit_group");
    b.op("cp.async.wait_group 0");
    b.op("bar.sync 0");
    for (int st = 0; st < STAGES - 1; ++st) {
      const std::string skip = b.label("fill_" + S(st) + "_done"), pr = b.pred("fill");
      b.op("setp.le.s32 " + pr + ", " + nstr + ", " + imm(st), "stride " + S(st) + " into ring slot " + S(st));
      b.guarded("@" + pr, "bra " + skip);
      issue_stride("", st);
      b.place(skip);
      b.op("cp.async.commit_group");
    }

    b.comment("---- the strides: wait for stride it, refill the ring with stride it + STAGES - 1, compute ----");
    const std::string it = b.b32("it"), loop = b.label("stride"), end = b.label("strides_done");
    b.op("mov.u32 " + it + ", 0");
    {
      const std::string none = b.pred("none");
      b.op("setp.le.s32 " + none + ", " + nstr + ", 0");
      b.guarded("@" + none, "bra " + end);
    }
    b.place(loop);
    b.op("cp.async.wait_group " + imm(STAGES - 2), "stride it and its +STAGES-1 indices landed");
    b.op("bar.sync 0");
    {
      const std::string st = b.b32("st_in"), pst = b.pred("refill"), skip = b.label("refilled");
      b.op("add.s32 " + st + ", " + it + ", " + imm(STAGES - 1));
      b.op("setp.ge.s32 " + pst + ", " + st + ", " + nstr);
      b.guarded("@" + pst, "bra " + skip);
      issue_stride(st, -1);
      b.place(skip);
      const std::string sx = b.b32("sx"), psx = b.pred("more_idx");
      b.op("add.s32 " + sx + ", " + it + ", " + imm(2 * (STAGES - 1)), "the indices of stride it + 2 (STAGES - 1)");
      b.op("setp.lt.s32 " + psx + ", " + sx + ", " + nstr);
      b.op("and.pred " + psx + ", " + psx + ", " + i_copier);
      const std::string d = tmp32("d"), o = tmp64("o");
      b.op(mod_by(d, sx, IR));
      b.op("mad.lo.u32 " + d + ", " + d + ", " + imm(KS * 4) + ", " + idst);
      b.op("mul.wide.s32 " + o + ", " + sx + ", " + imm(KS * 4));
      b.op("add.s64 " + o + ", " + isrc_t + ", " + o);
      b.guarded("@" + psx, "cp.async.ca.shared.global [" + d + "], [" + o + "], 16");
      b.op("cp.async.commit_group");
    }
    {
      const std::string slot = b.b32("slot");
      b.op(mod_by(slot, it, STAGES), "ring slot of stride it");
      compute(slot);
    }
    {
      const std::string more = b.pred("more");
      b.op("add.s32 " + it + ", " + it + ", 1");
      b.op("setp.lt.s32 " + more + ", " + it + ", " + nstr);
      b.guarded("@" + more, "bra " + loop);
    }
    b.place(end);
    b.op("cp.async.wait_group 0");
    epilogue(cptr, M, N);
  }

  // Shift each accumulator back by the plan's nibble prescale and write the V rows: registers i
  // and i + 2 of a tile hold one row's two adjacent columns (one 8- or 16-byte store).
  void epilogue(const std::string &cptr, const std::string &M, const std::string &N) {
    const bool i64 = p.spec.out == OutType::Int64;
    const int pre = p.term_prescale(p.terms[0]), es = i64 ? 8 : 4;
    b.comment(std::string("---- epilogue: ") + (pre ? "shift back by the nibble prescale, " : "") + "write V rows (" +
              (i64 ? "int64" : "int32") + ") ----");
    std::vector<std::string> tot(acc.size());
    for (size_t k = 0; k < acc.size(); ++k) {
      std::string v = acc[k];
      if (pre) {
        const std::string s = tmp32("sh");
        b.op("shr.s32 " + s + ", " + v + ", " + imm(pre));
        v = s;
      }
      if (i64) {
        tot[k] = tmp64("tot");
        b.op("cvt.s64.s32 " + tot[k] + ", " + v);
      } else {
        tot[k] = v;
      }
    }
    std::string rowp[2], prow[2];
    const std::string row0 = tmp32("row");
    b.op("mul.lo.u32 " + row0 + ", blk, " + imm(V));
    b.op("mad.lo.u32 " + row0 + ", tig, 2, " + row0, "registers 0 and 2 of a tile: row blk V + 2 tig, columns col, col + 1");
    for (int i = 0; i < 2; ++i) {
      std::string row = row0;
      if (i) {
        row = tmp32("row");
        b.op("add.u32 " + row + ", " + row0 + ", 1", "registers 1 and 3: the next row");
      }
      prow[i] = b.pred("row_ok");
      b.op("setp.lt.s32 " + prow[i] + ", " + row + ", " + M);
      rowp[i] = b.b64("rowp");
      b.op("mul.wide.s32 " + rowp[i] + ", " + row + ", " + N);
    }
    for (int t = 0; t < l.tiles; ++t) {
      const std::string col = tmp32("col");
      const long long off = nib_b ? 32 * (t / 2) + 2 * (t % 2) : 16 * t;
      b.op("mad.lo.u32 " + col + ", gid, " + imm(nib_b ? 4 : 2) + ", n_base");
      b.op("mad.lo.u32 " + col + ", warp, " + imm(l.warp_cols) + ", " + col);
      if (off) b.op("add.u32 " + col + ", " + col + ", " + imm(off), "tile " + S(t));
      const std::string c0 = b.pred("c0"), c1 = b.pred("c1");
      b.op("setp.lt.s32 " + c0 + ", " + col + ", " + N);
      const std::string col1 = tmp32("col1");
      b.op("add.s32 " + col1 + ", " + col + ", 1");
      b.op("setp.lt.s32 " + c1 + ", " + col1 + ", " + N);
      const std::string col64 = tmp64("col64");
      b.op("cvt.s64.s32 " + col64 + ", " + col);
      for (int i = 0; i < 2; ++i) {
        const std::string o = tmp64("o"), al = tmp64("al"), pv = b.pred("pair"), p0 = b.pred("one0"),
                          p1 = b.pred("one1");
        b.op("add.s64 " + o + ", " + rowp[i] + ", " + col64);
        b.op("shl.b64 " + o + ", " + o + ", " + imm(log2i(es)));
        b.op("add.s64 " + o + ", " + cptr + ", " + o);
        b.op("and.b64 " + al + ", " + o + ", " + imm(2 * es - 1));
        b.op("setp.eq.and.s64 " + pv + ", " + al + ", 0, " + c1, "both columns, aligned");
        b.op("and.pred " + pv + ", " + pv + ", " + prow[i]);
        b.op("not.pred " + p0 + ", " + pv);
        b.op("and.pred " + p0 + ", " + p0 + ", " + prow[i]);
        b.op("and.pred " + p1 + ", " + p0 + ", " + c1);
        b.op("and.pred " + p0 + ", " + p0 + ", " + c0);
        const std::string &x = tot[4 * t + i], &y = tot[4 * t + i + 2];
        const std::string ty = i64 ? "u64" : "u32";
        b.guarded("@" + pv, "st.global.v2." + ty + " [" + o + "], {" + x + ", " + y + "}");
        b.guarded("@" + p0, "st.global." + ty + " [" + o + "], " + x);
        b.guarded("@" + p1, "st.global." + ty + " " + at(o, es) + ", " + y);
      }
    }
  }
};

}  // namespace

llvm::Expected<std::string> generate_spmm_ring_ptx(const Plan &p) {
  SpmmRingPtx g(p);
  g.body();
  return g.assemble({
      "SpMM, ring kernel (spmm-ring) in PTX: C[M x N] = A (SR-BCRS) x B[K x N], with int8 m16n8k32",
      "mma.sync, the dense dimension on M. One thread block computes one row-block (V rows) x",
      "BSN dense columns. Every input of a stride moves global -> shared memory through one",
      "STAGES-deep cp.async ring: the stride's column indices 2 * (STAGES - 1) strides ahead,",
      "its gathered B rows (rows padded by 16 bytes; 4-bit rows stay packed) and A's values",
      "STAGES - 1 ahead. ldmatrix.x4.trans turns the B rows into k-contiguous fragments (prmt",
      "for bytes, mask/shift + prmt for packed nibbles). 4-bit planes are widened as value << 4",
      "and the epilogue shifts the sums back.",
  });
}

}  // namespace magicube::gen
