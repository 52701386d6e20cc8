#include "compiler/codegen.h"

#include <algorithm>
#include <cstdlib>
#include <functional>
#include <map>
#include <set>
#include <sstream>

#include "compiler/templates.h"

namespace magicube {

namespace {

std::string S(long long x) { return std::to_string(x); }

void replace_all(std::string &s, const std::string &from, const std::string &to) {
  for (size_t p = s.find(from); p != std::string::npos; p = s.find(from, p + to.size())) s.replace(p, from.size(), to);
}

// Registers per thread of each mma operand.
int a_regs(const MmaShape &s, int bits) { return s.m * s.k * bits / 1024; }
int b_regs(const MmaShape &s, int bits) { return s.n * s.k * bits / 1024; }
int c_regs(const MmaShape &s) { return s.m * s.n / 32; }

// The wrapper function name for one PTX mma instruction, e.g. mma_m16n8k32_s8_u8.
std::string wrapper_name(const MmaShape &shape, int bits, bool a_signed, bool b_signed) {
  auto t = [&](bool sg) { return std::string(sg ? "s" : "u") + S(bits); };
  return "mma_" + shape.str() + "_" + t(a_signed) + "_" + t(b_signed);
}

std::string wrapper_def(const MmaShape &shape, int bits, bool a_signed, bool b_signed) {
  int na = a_regs(shape, bits), nb = b_regs(shape, bits), nc = c_regs(shape);
  std::ostringstream o;
  o << "// " << mma_ptx_name(shape, bits, a_signed, b_signed) << ": D += A x B\n";
  o << "__device__ __forceinline__ void " << wrapper_name(shape, bits, a_signed, b_signed) << "(int (&d)[" << nc
    << "], const u32 (&a)[" << na << "], const u32 (&b)[" << nb << "]) {\n";
  o << "  asm volatile(\"" << mma_ptx_name(shape, bits, a_signed, b_signed) << " {";
  int r = 0;
  auto list = [&](int n) {
    std::string s;
    for (int i = 0; i < n; ++i) s += (i ? "," : "") + std::string("%") + S(r++);
    return s;
  };
  std::string d = list(nc);
  std::string a = list(na);
  std::string b = list(nb);
  o << d << "}, {" << a << "}, {" << b << "}, {" << d << "};\"\n      : ";
  for (int i = 0; i < nc; ++i) o << (i ? ", " : "") << "\"+r\"(d[" << i << "])";
  o << "\n      : ";
  for (int i = 0; i < na; ++i) o << (i ? ", " : "") << "\"r\"(a[" << i << "])";
  for (int i = 0; i < nb; ++i) o << ", \"r\"(b[" << i << "])";
  o << ");\n}\n";
  return o.str();
}

struct Gen {
  const Plan &p;
  std::ostringstream b;  // kernel body
  int threads = 128;
  int kpr = 4;           // k values per operand register: 32 / native bits
  int tiles = 1;         // mma tiles per warp along the dense dimension
  int wn = 16;           // dense columns per warp

  // Threads, warp columns and tiles are the plan's (Plan::launch); kpr is a fact of the mma.
  explicit Gen(const Plan &plan)
      : p(plan), threads(plan.launch.threads), kpr(32 / plan.native_bits), tiles(plan.launch.tiles),
        wn(plan.launch.warp_cols) {}

  // Calls f(name, registers) for each int32 accumulator acc_g<group>_r<rhs chunk>_t<tile>,
  // one mma tile each.
  void for_each_accumulator(const std::function<void(const std::string &, int)> &f) const {
    for (size_t g = 0; g < p.groups.size(); ++g)
      for (size_t j = 0; j < p.rhs.size(); ++j)
        for (int t = 0; t < tiles; ++t) f("acc_g" + S(g) + "_r" + S(j) + "_t" + S(t), c_regs(p.shape));
  }
  // The accumulators, declared zero.
  void declare_accumulators() {
    for_each_accumulator([&](const std::string &acc, int nc) { b << "  int " << acc << "[" << nc << "] = {};\n"; });
  }

  // The int8 m16n8k32 dense-on-M mmas of one k-step: for each (stack group, rhs chunk) term
  // and tile, acc += the rhs fragment named rhs(chunk, tile) x the lhs fragment <lhs><group>.
  void int8_mmas(const std::string &indent, const std::function<std::string(int, int)> &rhs, const std::string &lhs) {
    for (const Term &term : p.terms) {
      if (term.slot != 0) continue;
      bool a_s = p.rhs[term.rhs_chunk].is_signed, b_s = p.groups[term.group].is_signed;
      for (int t = 0; t < tiles; ++t)
        b << indent << wrapper_name(p.shape, 8, a_s, b_s) << "(acc_g" << term.group << "_r" << term.rhs_chunk << "_t" << t
          << ", " << rhs(term.rhs_chunk, t) << ", " << lhs << term.group << ");\n";
    }
  }

  bool dense_on_m() const { return p.orient == Orientation::DenseOnM; }
  bool sddmm() const { return p.spec.op == OpKind::SDDMM; }
  int row_bytes(const Chunk &c) const { return slice_row_bytes(p, c); }  // BSn columns of one plane
  int pitch(const Chunk &c) const { return ring_row_pitch(p, c); }        // +16 bytes: conflict-free columns

  // The smem row (stored slot) that holds k-position `kk` of the stride: the inverse of the
  // plan's 4-bit shuffle (the builder stored the column of k-position shuffle[p] at slot p).
  std::string slot_of(const std::string &kk) const {
    if (!p.shuffle_b) return kk;
    const int G = int(p.shuffle.size());
    std::vector<int> inv(G);
    for (int s = 0; s < G; ++s) inv[p.shuffle[s]] = s;
    unsigned long long table = 0;  // entry i (4 bits) at bits 4i
    for (int i = 0; i < G; ++i) table |= (unsigned long long)inv[i] << (4 * i);
    std::ostringstream h;
    h << std::hex << table;
    return "(((" + kk + ") & ~" + S(G - 1) + ") | (int)((0x" + h.str() + "ull >> (((" + kk + ") & " + S(G - 1) +
           ") * 4)) & 15))";
  }

  // One operand register of KPR consecutive k-values of a chunk plane starting at element
  // `idx` (contiguous in memory): one aligned 32-bit load, or a 16-bit load of four 4-bit
  // elements widened to bytes for the int8 mma.
  std::string load_reg(const std::string &plane, const Chunk &c, const std::string &idx) const {
    if (c.storage_bits == p.native_bits) {
      if (c.storage_bits == 8) return "__ldg((const u32 *)(" + plane + " + " + idx + "))";
      return "__ldg((const u32 *)(" + plane + " + (" + idx + ") / 2))";
    }
    if (p.nibble_prescale) return "mc_widen4to8_hi(__ldg((const u16 *)(" + plane + " + (" + idx + ") / 2)))";
    return "mc_widen4to8(__ldg((const u16 *)(" + plane + " + (" + idx + ") / 2)), " + (c.is_signed ? "true" : "false") +
           ")";
  }

  // One register of lhs chunk `li` for V-row r at k-offset k0: SpMM reads the stride's
  // row-major SR-BCRS values, SDDMM the dense A row (K contiguous, pitch ldk).
  std::string lhs_reg(int li, const std::string &r, const std::string &k0) const {
    if (fast()) {  // the stride's values in ring slot `slot` of shared memory
      const Chunk &c = p.lhs[li];
      const std::string off = "((" + r + ") * KS + " + k0 + ")" + (c.storage_bits == 4 ? " / 2" : "");
      const std::string at = "&sa" + S(li) + "[grp][slot][" + off + "]";
      if (c.storage_bits == 8) return "*(const u32 *)" + at;
      if (p.nibble_prescale) return "mc_widen4to8_hi(*(const u16 *)" + at + ")";
      return "mc_widen4to8(*(const u16 *)" + at + ", " + (c.is_signed ? "true" : "false") + ")";
    }
    std::string idx = sddmm() ? "(long long)(blk * V + " + r + ") * ldk + kb + " + k0
                              : "s * V + (" + r + ") * KS + " + k0;
    return load_reg("a" + S(li), p.lhs[li], idx);
  }

  // Expression of one element of rhs chunk j from shared memory (row = stored slot, col).
  std::string rhs_elem(int j, const std::string &row, const std::string &col) const {
    const Chunk &c = p.rhs[j];
    std::string sg = c.is_signed ? "true" : "false";
    if (c.storage_bits == 8) return "mc_elem8(&sb" + S(j) + "[" + row + "][0], " + col + ", " + sg + ")";
    return "mc_elem4(&sb" + S(j) + "[" + row + "][0], " + col + ", " + sg + ")";
  }

  std::string rhs_reg(int j, const std::string &k0, const std::string &col) const {
    if (sddmm()) return load_reg("b" + S(j), p.rhs[j], "(long long)(" + col + ") * ldk + kb + " + k0);
    std::string args;
    for (int e = 0; e < kpr; ++e) args += (e ? ", " : "") + rhs_elem(j, slot_of(k0 + " + " + S(e)), col);
    return (p.native_bits == 8 ? "mc_pack8(" : "mc_pack4(") + args + ")";
  }

  // The lhs stack operand of group g: register for V-side row `vrow` (runtime expression).
  std::string lhs_stack_reg(int g, const std::string &vrow, const std::string &k0) const {
    const StackGroup &grp = p.groups[g];
    std::string e = "0u";
    for (int slot = int(grp.lhs_chunks.size()) - 1; slot >= 0; --slot)
      e = "((" + vrow + ") / V == " + S(slot) + " ? " + lhs_reg(grp.lhs_chunks[slot], "(" + vrow + ") % V", k0) +
          " : " + e + ")";
    return e;
  }

  void gather(bool into_regs, const std::string &stride_expr) {
    for (size_t j = 0; j < p.rhs.size(); ++j) {
      const Chunk &c = p.rhs[j];
      int pieces = row_bytes(c) / 16, total = p.shape.k * pieces, iters = (total + threads - 1) / threads;
      std::string J = S(j);
      b << "    #pragma unroll\n    for (int it = 0; it < " << iters << "; ++it) {  // rhs plane " << J << ": "
        << p.shape.k << " rows x " << pieces << " x 16 bytes\n";
      b << "      const int i = threadIdx.x + it * THREADS;\n";
      if (total % threads) b << "      if (i < " << total << ") {\n";
      else b << "      {\n";
      b << "        const int kk = i / " << pieces << ", piece = i % " << pieces << ";\n";
      b << "        const int col = max(col_idx[" << stride_expr << " + kk], 0);  // pad (-1) reads row 0, times A's zero\n";
      b << "        const uint4 *src = (const uint4 *)(b" << J << " + ((long long)col * ldb + n_base) * "
        << c.storage_bits << " / 8) + piece;\n";
      if (into_regs)
        b << "        pf" << J << "[it] = __ldg(src);\n";
      else
        b << "        *(uint4 *)&sb" << J << "[kk][piece * 16] = __ldg(src);\n";
      b << "      }\n    }\n";
    }
  }

  void stage_prefetched() {
    for (size_t j = 0; j < p.rhs.size(); ++j) {
      const Chunk &c = p.rhs[j];
      int pieces = row_bytes(c) / 16, total = p.shape.k * pieces, iters = (total + threads - 1) / threads;
      b << "    #pragma unroll\n    for (int it = 0; it < " << iters << "; ++it) {  // registers -> shared, plane " << j
        << "\n      const int i = threadIdx.x + it * THREADS;\n";
      b << "      if (i < " << total << ") *(uint4 *)&sb" << j << "[i / " << pieces << "][(i % " << pieces
        << ") * 16] = pf" << j << "[it];\n    }\n";
    }
  }

  // Registers of the lhs stack operand of every group, named <name><g>[i]: the mma's B
  // operand (N side) when the dense dimension is on M, else its A operand (M side).
  void lhs_frags(const std::string &name, bool declare, const std::string &indent = "    ") {
    const MmaShape &sh = p.shape;
    const int n = dense_on_m() ? b_regs(sh, p.native_bits) : a_regs(sh, p.native_bits);
    const std::string half = S(sh.k / 2);
    for (size_t g = 0; g < p.groups.size(); ++g) {
      if (declare)
        b << indent << "u32 " << name << g << "[" << n << "];  // group " << g << ": lhs chunks stacked on the mma's "
          << (dense_on_m() ? "N" : "M") << " side\n";
      for (int i = 0; i < n; ++i) {
        std::string vrow, k0;
        if (dense_on_m()) {
          vrow = "gid";
          k0 = "tig * " + S(kpr) + (sh.m == 16 ? " + " + half + " * " + S(i) : "");
        } else {
          vrow = sh.m == 16 ? "gid + " + S(8 * (i & 1)) : "gid";
          k0 = "tig * " + S(kpr) + (sh.m == 16 ? " + " + half + " * " + S(i >> 1) : "");
        }
        b << indent << name << g << "[" << i << "] = " << lhs_stack_reg(int(g), vrow, k0) << ";\n";
      }
    }
  }

  // Registers of every rhs chunk and the mmas of every (group, rhs chunk, tile).
  void rhs_frags_and_mmas(const std::string &lhs) {
    const MmaShape &sh = p.shape;
    const int na = a_regs(sh, p.native_bits), nb = b_regs(sh, p.native_bits);
    const std::string half = S(sh.k / 2);
    if (dense_on_m()) {
      for (size_t j = 0; j < p.rhs.size(); ++j) {
        b << "    u32 rf" << j << "[" << na << "];  // rhs chunk " << j << " transposed: row = dense column\n";
        for (int i = 0; i < na; ++i) {
          // SpMM: the dense column in shared memory; SDDMM: the B column of this row's vector
          std::string row = sddmm() ? "cv" + S(sh.m == 16 ? (i & 1) : 0)
                                    : (sh.m == 16 ? "nw + gid + " + S(8 * (i & 1)) : "nw + gid");
          std::string k0 = "tig * " + S(kpr) + (sh.m == 16 ? " + " + half + " * " + S(i >> 1) : "");
          b << "    rf" << j << "[" << i << "] = " << rhs_reg(int(j), k0, row) << ";\n";
        }
      }
      for (const Term &t : p.terms) {
        if (t.slot != 0) continue;  // one mma per (group, rhs chunk)
        bool a_s = p.rhs[t.rhs_chunk].is_signed, b_s = p.groups[t.group].is_signed;
        b << "    " << wrapper_name(sh, p.native_bits, a_s, b_s) << "(acc_g" << t.group << "_r" << t.rhs_chunk << "_t0, rf"
          << t.rhs_chunk << ", " << lhs << t.group << ");\n";
      }
    } else {
      for (size_t j = 0; j < p.rhs.size(); ++j)
        for (int t = 0; t < tiles; ++t) {
          b << "    u32 rf" << j << "_t" << t << "[" << nb << "];  // rhs chunk " << j << ", dense columns nw+" << 8 * t
            << "..+7\n";
          for (int i = 0; i < nb; ++i) {
            std::string k0 = "tig * " + S(kpr) + (sh.m == 16 ? " + " + half + " * " + S(i) : "");
            b << "    rf" << j << "_t" << t << "[" << i << "] = "
              << rhs_reg(int(j), k0, sddmm() ? "cv" + S(t) : "nw + " + S(8 * t) + " + gid") << ";\n";
          }
        }
      for (const Term &term : p.terms) {
        if (term.slot != 0) continue;
        bool a_s = p.groups[term.group].is_signed, b_s = p.rhs[term.rhs_chunk].is_signed;
        for (int t = 0; t < tiles; ++t)
          b << "    " << wrapper_name(sh, p.native_bits, a_s, b_s) << "(acc_g" << term.group << "_r" << term.rhs_chunk
            << "_t" << t << ", " << lhs << term.group << ", rf" << term.rhs_chunk << "_t" << t << ");\n";
      }
    }
  }

  void fragments_and_mmas() {
    lhs_frags("lf", true);
    rhs_frags_and_mmas("lf");
  }

  // The stored value of an accumulated element: the int itself, or its dequantized float.
  std::string store(const std::string &v, const std::string &row, const std::string &col) const {
    switch (p.spec.out) {
      case OutType::Int32: return "(int)" + v;
      case OutType::Int64: return v;
      default: break;
    }
    std::string x = "mc_dequant(" + v + ", " + S(int(p.spec.scale)) + ", alpha, row_scale, col_scale, " +
                    S(int(p.spec.bias)) + ", bias, " + row + ", " + col + ")";
    if (p.spec.out == OutType::F32) return "__double2float_rn(" + x + ")";
    return std::string(p.spec.out == OutType::F16 ? "mc_to_f16(" : "mc_to_bf16(") + x + ")";
  }

  void epilogue() {
    const MmaShape &sh = p.shape;
    const int nc = c_regs(sh);
    const bool i64 = p.spec.out != OutType::Int32;
    const std::string T = i64 ? "long long" : "u32";
    b << "  // ---- epilogue: shift each term, sum, exchange stacked slots, write V rows ----\n";
    for (int t = 0; t < tiles; ++t) {
      b << "  {\n    " << T << " tot[" << nc << "] = {};  // " << (i64 ? "int64" : "int32, wrapping") << "\n";
      b << "    #pragma unroll\n    for (int i = 0; i < " << nc << "; ++i) {\n";
      if (sh.m == 16) {
        b << "      const int crow = gid + 8 * (i >> 1), ccol = tig * 2 + (i & 1);\n";
      } else {
        b << "      const int crow = gid, ccol = tig * 2 + i;\n";
      }
      b << "      const int vidx = " << (dense_on_m() ? "ccol" : "crow") << ", slot = vidx / V;\n";
      for (size_t g = 0; g < p.groups.size(); ++g)
        for (size_t j = 0; j < p.rhs.size(); ++j) {
          // shift of this group's slot with rhs chunk j
          std::string shift = "0";
          for (int slot = int(p.groups[g].lhs_chunks.size()) - 1; slot >= 0; --slot)
            shift = "(slot == " + S(slot) + " ? " + S(p.lhs[p.groups[g].lhs_chunks[slot]].lo_bit + p.rhs[j].lo_bit) +
                    " : " + shift + ")";
          std::string acc = "acc_g" + S(g) + "_r" + S(j) + "_t" + S(t) + "[i]";
          int pre = 0;  // the term's accumulator scale (the same for every slot of the group)
          for (const Term &term : p.terms)
            if (term.group == int(g) && term.rhs_chunk == int(j)) pre = p.term_prescale(term);
          if (pre) acc = "(" + acc + " >> " + S(pre) + ")";
          b << "      if (slot < " << p.groups[g].lhs_chunks.size() << ") tot[i] += (" << T << ")("
            << (i64 ? "(long long)" : "(u32)") << acc << ") << " << shift << ";\n";
        }
      b << "    }\n";
      for (const ExchangeStep &e : p.exchange) {
        if (e.kind == ExchangeStep::Reg) {
          b << "    {  // " << e.str() << "\n      " << T << " o[" << nc << "];\n";
          b << "      #pragma unroll\n      for (int i = 0; i < " << nc << "; ++i) o[i] = tot[i ^ " << e.mask << "];\n";
          b << "      #pragma unroll\n      for (int i = 0; i < " << nc << "; ++i) tot[i] += o[i];\n    }\n";
        } else {
          b << "    #pragma unroll\n    for (int i = 0; i < " << nc << "; ++i) tot[i] += __shfl_xor_sync(0xffffffffu, tot[i], "
            << e.mask << ");  // " << e.str() << "\n";
        }
      }
      if ((fast() || resident()) && !is_float(p.spec.out)) {
        // Registers i and i + 2 hold one row's two adjacent columns: one 8- or 16-byte store.
        const std::string T2 = i64 ? "longlong2" : "int2", E = i64 ? "long long" : "int";
        b << "    #pragma unroll\n    for (int i = 0; i < 2; ++i) {  // registers i (column col) and i + 2 (col + 1)\n";
        b << "      const int vidx = tig * 2 + i, row = blk * V + vidx;\n";
        if (nib())
          b << "      const int col = n_base + nw + " << 32 * (t / 2) + 2 * (t % 2) << " + 4 * gid;\n";
        else
          b << "      const int col = n_base + nw + " << 16 * t << " + 2 * gid;\n";
        b << "      if (vidx < V && row < M) {\n";
        b << "        " << E << " *o = c + (long long)row * N + col;\n";
        b << "        if (col + 1 < N && ((unsigned long long)o & (sizeof(" << T2 << ") - 1)) == 0) {\n";
        b << "          *(" << T2 << " *)o = make_" << T2 << "((" << E << ")tot[i], (" << E << ")tot[i + 2]);\n";
        b << "        } else {\n";
        b << "          if (col < N) o[0] = (" << E << ")tot[i];\n";
        b << "          if (col + 1 < N) o[1] = (" << E << ")tot[i + 2];\n";
        b << "        }\n      }\n    }\n  }\n";
        continue;
      }
      b << "    #pragma unroll\n    for (int i = 0; i < " << nc << "; ++i) {\n";
      if (sh.m == 16)
        b << "      const int crow = gid + 8 * (i >> 1), ccol = tig * 2 + (i & 1);\n";
      else
        b << "      const int crow = gid, ccol = tig * 2 + i;\n";
      if (nib())  // tile pair q: mma row m holds the warp's column 32q + 4 * (m % 8) + 2 * (t % 2) + m / 8
        b << "      const int vidx = ccol, col = n_base + nw + " << 32 * (t / 2) + 2 * (t % 2) << " + 4 * gid + (i >> 1);\n";
      else if (fast() || resident())  // mma row m holds the warp's column 2 * (m % 8) + m / 8 (ldmatrix.trans order)
        b << "      const int vidx = ccol, col = n_base + nw + " << 16 * t << " + 2 * gid + (i >> 1);\n";
      else if (dense_on_m())
        b << "      const int vidx = ccol, col = n_base + nw + " << 16 * t << " + crow;\n";
      else
        b << "      const int vidx = crow, col = n_base + nw + " << 8 * t << " + ccol;\n";
      if (sddmm()) {
        // col is the vector's position in this row-block's list
        b << "      const int q = begin + col;  // the vector's slot\n";
        b << "      if (vidx < V && q < qend && blk * V + vidx < M)\n";
        b << "        c[bcrs_ptr ? ((long long)bcrs_ptr[blk] + q - begin) * V + vidx\n";
        b << "                   : (long long)(q / out_stride) * out_stride * V + vidx * out_stride + q % out_stride] = "
          << store("tot[i]", "blk * V + vidx", "max(col_idx[q], 0)") << ";\n";
      } else {
        b << "      const int row = blk * V + vidx;\n";
        b << "      if (vidx < V && row < M && col < N) c[(long long)row * N + col] = " << store("tot[i]", "row", "col")
          << ";\n";
      }
      b << "    }\n  }\n";
    }
  }

  // ---- SpMM fast path: int8 m16n8k32, dense dimension on M --------------------------------
  // Everything a stride needs goes global -> shared memory through one STAGES-deep cp.async
  // ring, so the loop never waits on a load it has just issued:
  //   - the stride's column indices, 2 * (STAGES - 1) strides ahead of their use;
  //   - the gathered B rows (8-bit, or 4-bit kept packed) and A's stride, STAGES - 1 ahead.
  // ldmatrix.x4.trans.b16 turns the B rows into k-contiguous A fragments: two prmt per
  // register pair for bytes, mask/shift + prmt per dense column for packed nibbles. The
  // plan's 16-slot column shuffle matches that k order.
  bool int8m() const { return fast() || resident(); }
  bool fast() const { return p.launch.family == KernelFamily::SpmmRing; }
  bool resident() const { return p.launch.family == KernelFamily::SpmmResident; }
  // Every rhs plane is 4-bit: B stays packed in shared memory and is widened after ldmatrix.
  bool nib() const {
    if (!int8m()) return false;
    for (const Chunk &c : p.rhs)
      if (c.storage_bits != 4) return false;
    return true;
  }
  // SDDMM fast path: int8 m16n8k32 with the sampled vectors on the mma's M side. Both dense
  // operands are K-contiguous, so per k-block of 64 * SL k (SL = 2 when every rhs plane is
  // 4-bit, else 1) each lane loads 16 * SL consecutive k of each of its rows with 16-byte
  // loads (8 bytes for 4-bit planes at SL = 1), widened in registers. A dot product does not
  // depend on the order of its k, so k-step h of the block uses words 2h and 2h + 1 of every
  // row's loads: the same k for A and B.
  bool sfast() const { return p.launch.family == KernelFamily::SddmmFast; }
  int sl() const {
    for (const Chunk &c : p.rhs)
      if (c.storage_bits != 4) return 1;
    return 2;
  }
  // Loads per row of a plane per k-block, and their type.
  int sloads(const Chunk &c) const { return std::max(1, sl() * c.storage_bits / 8); }
  std::string stype(const Chunk &c) const { return sl() * c.storage_bits / 8 >= 1 ? "uint4" : "uint2"; }

  // Word w (0..4 * SL - 1) of the loads x_0, x_1.. of one row of a chunk plane. Without
  // 4-bit planes, word w is k 4w..4w+3. With them (the plan's nibble_prescale), word 2i is
  // the even k of 8i..8i+7 and word 2i + 1 the odd ones, so that a 4-bit register widens
  // with one mask: even nibbles shifted up into the high half of each byte, odd nibbles
  // already there. The bytes hold value << 4 (sign bit at bit 7); 8-bit planes match the
  // order with one prmt.
  std::string word(const Chunk &c, const std::string &x, int w) const {
    static const char *f[] = {".x", ".y", ".z", ".w"};
    if (c.storage_bits == 8) {
      const std::string r = x + "_" + S(w / 4);
      const int ww = w % 4;
      if (!p.nibble_prescale) return r + f[ww];
      return "__byte_perm(" + r + f[ww / 2 * 2] + ", " + r + f[ww / 2 * 2 + 1] + ", " + (ww % 2 ? "0x7531" : "0x6420") +
             ")";
    }
    const int ci = w / 2;  // the 32-bit component holding 8 nibbles: words 2ci and 2ci + 1
    const std::string r = x + "_" + S(ci / 4) + f[ci % 4];
    return w % 2 ? "(" + r + " & 0xf0f0f0f0u)" : "((" + r + " << 4) & 0xf0f0f0f0u)";
  }

  // Every row's raw-load register names (without the _i suffix) with their plane.
  std::vector<std::pair<std::string, const Chunk *>> srows(const std::string &pre) const {
    std::vector<std::pair<std::string, const Chunk *>> rows;
    for (size_t g = 0; g < p.groups.size(); ++g) rows.push_back({pre + "l" + S(g), &p.lhs[p.groups[g].lhs_chunks[0]]});
    for (size_t j = 0; j < p.rhs.size(); ++j)
      for (int t = 0; t < tiles; ++t)
        for (int h = 0; h < 2; ++h) rows.push_back({pre + "r" + S(j) + "_" + S(t) + "_" + S(h), &p.rhs[j]});
    return rows;
  }

  // The loads of the k-block at `kb` into the registers named <pre>...
  void sfast_loads(const std::string &pre, const std::string &kb, const std::string &indent) {
    for (size_t g = 0; g < p.groups.size(); ++g) {
      const Chunk &c = p.lhs[p.groups[g].lhs_chunks[0]];
      const std::string T = stype(c), G = S(g);
      for (int i = 0; i < sloads(c); ++i)
        b << indent << pre << "l" << G << "_" << i << " = lok" << G << " ? __ldg((const " << T << " *)(ap" << G << " + ("
          << kb << ") * " << c.storage_bits << " / 8) + " << i << ") : "
          << (T == "uint4" ? "make_uint4(0, 0, 0, 0)" : "make_uint2(0, 0)") << ";\n";
    }
    for (size_t j = 0; j < p.rhs.size(); ++j)
      for (int t = 0; t < tiles; ++t)
        for (int h = 0; h < 2; ++h)
          for (int i = 0; i < sloads(p.rhs[j]); ++i) {
            const std::string id = S(j) + "_" + S(t) + "_" + S(h);
            b << indent << pre << "r" << id << "_" << i << " = __ldg((const " << stype(p.rhs[j]) << " *)(bp" << id
              << " + (" << kb << ") * " << p.rhs[j].storage_bits << " / 8) + " << i << ");\n";
          }
  }

  void sfast_decl(const std::string &pre, const std::string &indent) {
    for (const auto &[name, c] : srows(pre)) {
      b << indent << stype(*c);
      for (int i = 0; i < sloads(*c); ++i) b << (i ? ", " : " ") << name << "_" << i;
      b << ";\n";
    }
  }

  // The mmas of one k-block from the registers named <pre>...
  void sfast_mmas(const std::string &pre, const std::string &indent) {
    for (int h = 0; h < 2 * sl(); ++h) {
      b << indent << "{  // k-step " << h << " of the block: words " << 2 * h << " and " << 2 * h + 1 << "\n";
      const std::string in = indent + "  ";
      for (size_t g = 0; g < p.groups.size(); ++g) {
        const Chunk &c = p.lhs[p.groups[g].lhs_chunks[0]];
        const std::string x = pre + "l" + S(g);
        b << in << "const u32 lb" << g << "[2] = {" << word(c, x, 2 * h) << ", " << word(c, x, 2 * h + 1) << "};\n";
      }
      for (size_t j = 0; j < p.rhs.size(); ++j)
        for (int t = 0; t < tiles; ++t) {
          const Chunk &c = p.rhs[j];
          const std::string x0 = pre + "r" + S(j) + "_" + S(t) + "_0", x1 = pre + "r" + S(j) + "_" + S(t) + "_1";
          b << in << "const u32 ra" << j << "_" << t << "[4] = {" << word(c, x0, 2 * h) << ", " << word(c, x1, 2 * h)
            << ", " << word(c, x0, 2 * h + 1) << ", " << word(c, x1, 2 * h + 1) << "};\n";
        }
      int8_mmas(in, [](int j, int t) { return "ra" + S(j) + "_" + S(t); }, "lb");
      b << indent << "}\n";
    }
  }

  std::string sddmm_fast_body() {
    b << "  constexpr int KB = " << 64 * sl() << ";  // k per block: each lane loads " << 16 * sl()
      << " consecutive k of each of its rows\n";
    b << "  const int kq = tig * " << 16 * sl() << ";  // this lane's first k within the block\n";
    b << "  // ---- this lane's A row per stack group (mma N side): chunk slot gid / V, row gid % V ----\n";
    for (size_t g = 0; g < p.groups.size(); ++g) {
      const auto &ch = p.groups[g].lhs_chunks;
      std::string plane = "a" + S(ch[0]);
      for (size_t s = 1; s < ch.size(); ++s) plane = "(gid / V == " + S(s) + " ? a" + S(ch[s]) + " : " + plane + ")";
      b << "  const bool lok" << g << " = gid / V < " << ch.size() << ";  // lanes past the stacked slots multiply zeros\n";
      b << "  const unsigned char *ap" << g << " = " << plane << " + ((long long)(blk * V + gid % V) * ldk + kq) * "
        << p.lhs[ch[0]].storage_bits << " / 8;\n";
    }
    b << "  // ---- this lane's two vectors per tile (mma M side): B columns; rows past the list read column 0 ----\n";
    for (int t = 0; t < tiles; ++t)
      for (int h = 0; h < 2; ++h) {
        const std::string q = "q" + S(t) + "_" + S(h);
        b << "  const int " << q << " = begin + n_base + nw + " << 16 * t + 8 * h << " + gid;\n";
        b << "  const long long cv" << t << "_" << h << " = " << q << " < qend ? max(col_idx[" << q << "], 0) : 0;\n";
        for (size_t j = 0; j < p.rhs.size(); ++j)
          b << "  const unsigned char *bp" << j << "_" << t << "_" << h << " = b" << j << " + (cv" << t << "_" << h
            << " * ldk + kq) * " << p.rhs[j].storage_bits << " / 8;\n";
      }
    b << "  // ---- int32 accumulators, one mma tile per (stack group, rhs chunk, tile) ----\n";
    declare_accumulators();
    if (p.spec.prefetch) {
      b << "  // ---- k-blocks: the next block's loads are in flight while this block's mmas run ----\n";
      sfast_decl("c", "  ");
      sfast_loads("c", "0", "  ");
      b << "  for (int kb = 0; kb < K; kb += KB) {\n";
      b << "    const int kn = kb + KB < K ? kb + KB : kb;  // the last block loads itself again: no branch\n";
      sfast_decl("n", "    ");
      sfast_loads("n", "kn", "    ");
      sfast_mmas("c", "    ");
      for (const auto &[name, c] : srows("")) {
        b << "   ";
        for (int i = 0; i < sloads(*c); ++i) b << " c" << name << "_" << i << " = n" << name << "_" << i << ";";
        b << "\n";
      }
      b << "  }\n";
    } else {
      b << "  for (int kb = 0; kb < K; kb += KB) {  // k-blocks\n";
      sfast_decl("c", "    ");
      sfast_loads("c", "kb", "    ");
      sfast_mmas("c", "    ");
      b << "  }\n";
    }
    epilogue();
    return b.str();
  }

  int a_stride_bytes(const Chunk &c) const { return magicube::a_stride_bytes(p, c); }
  // Warp groups that split a row-block's strides (group g takes strides g, g + KG, ...),
  // each with its own ring; their accumulators are summed through shared memory at the end.
  int kg() const { return p.launch.warp_groups; }
  int gthreads() const { return threads / kg(); }
  // A barrier of this thread's warp group (the whole block when there is one group).
  std::string gsync() const {
    if (kg() == 1) return "__syncthreads();";
    return "asm volatile(\"bar.sync %0, %1;\" :: \"r\"(grp + 1), \"n\"(GT));  // this warp group";
  }

  // cp.async of one 16-byte piece.
  static std::string cp16(const std::string &dst, const std::string &src) {
    return cp16s("(unsigned)__cvta_generic_to_shared(" + dst + ")", src);
  }
  // The same with the destination as a shared-window address.
  static std::string cp16s(const std::string &dst, const std::string &src) {
    return "asm volatile(\"cp.async.ca.shared.global [%0], [%1], 16;\\n\" :: \"r\"(" + dst + "), \"l\"(" + src + "));\n";
  }

  // Per-thread constants of the copies, computed once: which B rows and 16-byte pieces this
  // thread copies (the same every stride), its source pointers and shared-memory offsets.
  void fast_copy_setup() {
    b << "  // ---- this thread's share of every stride's copies (the same pieces each stride) ----\n";
    b << "  const int *isrc = col_idx + begin + grp * KS + tid * 4;  // indices: threads 0..KS/4-1, 16 bytes each\n";
    b << "  const unsigned idst = (unsigned)__cvta_generic_to_shared(&sidx[grp][0][(tid % (KS / 4)) * 4]);\n";
    for (size_t j = 0; j < p.rhs.size(); ++j) {
      const Chunk &c = p.rhs[j];
      const int pieces = row_bytes(c) / 16;
      b << "  const unsigned char *bsrc" << j << " = b" << j << " + n_base * " << c.storage_bits << " / 8 + (tid % "
        << pieces << ") * 16;  // + row * ldb\n";
      b << "  const int bkk" << j << " = tid / " << pieces << ";  // first row of this thread (+ GT / "
        << pieces << " per copy)\n";
      b << "  const unsigned bdst" << j << " = (unsigned)__cvta_generic_to_shared(&sb" << j << "[grp][0][bkk" << j
        << "][(tid % " << pieces << ") * 16]);\n";
    }
    b << "  const unsigned ldbb = (unsigned)ldb * " << p.rhs[0].storage_bits << " / 8;  // B row pitch in bytes\n";
    for (size_t i = 0; i < p.lhs.size(); ++i) {
      const int pieces = a_stride_bytes(p.lhs[i]) / 16;
      b << "  const unsigned char *asrc" << i << " = a" << i << " + (long long)(begin + grp * KS) * V * "
        << p.lhs[i].storage_bits << " / 8 + tid * 16;\n";
      b << "  const unsigned adst" << i << " = (unsigned)__cvta_generic_to_shared(&sa" << i << "[grp][0][(tid % " << pieces
        << ") * 16]);\n";
    }
  }

  // The column indices of stride `st` into the index ring (KS ints: KS / 4 pieces).
  void fast_issue_idx(const std::string &st, const std::string &indent) {
    b << indent << "if (tid < KS / 4) " << cp16s("idst + ((" + st + ") % IR) * (KS * 4)", "isrc + (" + st + ") * (KG * KS)");
  }

  // Stride `st`'s B rows (named by its indices, already in the index ring) and A values
  // into ring slot st % STAGES.
  void fast_issue_stride(const std::string &st, const std::string &indent) {
    const std::string in = indent + "  ";
    b << indent << "{\n" << in << "const int slot_w = (" << st << ") % STAGES;\n";
    b << in << "const int *ids = sidx[grp][(" << st << ") % IR];\n";
    for (size_t j = 0; j < p.rhs.size(); ++j) {
      const Chunk &c = p.rhs[j];
      const std::string J = S(j);
      const int pitch_ = pitch(c), pieces = row_bytes(c) / 16, total = p.shape.k * pieces;
      const int gt = gthreads(), rows_per = gt / pieces;  // rows one pass of the group covers
      b << in << "#pragma unroll\n" << in << "for (int gi = 0; gi < " << (total + gt - 1) / gt << "; ++gi) {  // B plane "
        << J << ": " << p.shape.k << " rows x " << pieces << " x 16 bytes (" << c.storage_bits << "-bit)\n";
      if (total % gt) b << in << "  if (bkk" << J << " + gi * " << rows_per << " >= KS) break;\n";
      b << in << "  const unsigned col = (unsigned)max(ids[bkk" << J << " + gi * " << rows_per
        << "], 0);  // pads (-1) read row 0, times A's zeros\n";
      b << in << "  " << cp16s("bdst" + J + " + slot_w * " + S(p.shape.k * pitch_) + " + gi * " + S(rows_per * pitch_),
                              "bsrc" + J + " + (unsigned long long)col * ldbb");
      b << in << "}\n";
    }
    for (size_t i = 0; i < p.lhs.size(); ++i) {
      const int bytes = a_stride_bytes(p.lhs[i]), pieces = bytes / 16;
      const std::string I = S(i);
      b << in << "if (tid < " << pieces << ")  // A plane " << I << ": " << pieces << " x 16 bytes\n";
      b << in << "  " << cp16s("adst" + I + " + slot_w * " + S(bytes), "asrc" + I + " + (" + st + ") * (KG * " + S(bytes) + ")");
    }
    b << indent << "}\n";
  }

  // r0..r3 = ldmatrix.x4.trans.b16 of the four 8x8 matrices whose rows start at `addr`
  // (lane l gives row l % 8 of matrix l / 8).
  void ldmatrix_x4_trans(const std::string &addr) {
    b << "      asm volatile(\"ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];\\n\"\n"
      << "                   : \"=r\"(r0), \"=r\"(r1), \"=r\"(r2), \"=r\"(r3)\n"
      << "                   : \"r\"((unsigned)__cvta_generic_to_shared(" << addr << ")));\n";
  }

  // The shared-memory address of this lane's ldmatrix row (k slot `lane`) at byte `off` of
  // the warp's columns of rhs plane j: a ring row (fast path) or the gathered row of the
  // resident slice, its 16-byte units swizzled (resident_swizzle).
  std::string b_frag_addr(int j, int off) const {
    if (resident()) return "sb" + S(j) + " + brow" + S(j) + " + ((" + S(off / 16) + " ^ sw" + S(j) + ") << 4)";
    return "&sb" + S(j) + "[grp][slot][lane][" + (nib() ? "nw / 2 + " : "nw + ") + S(off) + "]";
  }

  // Fragments of every rhs plane from ring slot `slot`, then the mmas.
  void fast_frags_and_mmas(const std::string &lhs = "lf") {
    if (nib()) {
      for (size_t j = 0; j < p.rhs.size(); ++j) {
        const std::string sg = p.rhs[j].is_signed ? "true" : "false";
        for (int q = 0; q < tiles / 2; ++q) {
          b << "    u32 rf" << j << "_t" << 2 * q << "[4], rf" << j << "_t" << 2 * q + 1 << "[4];  // rhs chunk " << j
            << ": columns nw + " << 32 * q << " + 4*gid + {0,1} and {2,3}\n";
          b << "    {\n      u32 r0, r1, r2, r3;  // packed nibbles: 4 columns x 2 k rows each\n";
          ldmatrix_x4_trans(b_frag_addr(int(j), 16 * q));
          for (int c = 0; c < 4; ++c) {
            const std::string R = "rf" + S(j) + "_t" + S(2 * q + c / 2) + "[" + S(c % 2);
            // nibble_prescale: value << 4, no sign extension (the epilogue shifts back)
            const std::string f = p.nibble_prescale ? "mc_nib_col_hi(" : "mc_nib_col(";
            const std::string tail = p.nibble_prescale ? ")" : ", " + sg + ")";
            b << "      " << R << "] = " << f << "r0, r1, " << c << tail << ";\n";
            b << "      rf" << j << "_t" << 2 * q + c / 2 << "[" << c % 2 + 2 << "] = " << f << "r2, r3, " << c << tail
              << ";\n";
          }
          b << "    }\n";
        }
      }
    } else {
      for (int t = 0; t < tiles; ++t)
        for (size_t j = 0; j < p.rhs.size(); ++j) {
          const std::string R = "rf" + S(j) + "_t" + S(t);
          b << "    u32 " << R << "[4];  // rhs chunk " << j << ": columns nw + " << 16 * t
            << " + {2*gid, 2*gid+1}, k rows {2t, 2t+1, 8+2t, 9+2t} (+16)\n";
          b << "    {\n      u32 r0, r1, r2, r3;\n";
          ldmatrix_x4_trans(b_frag_addr(int(j), 16 * t));
          b << "      " << R << "[0] = __byte_perm(r0, r1, 0x6420);\n";
          b << "      " << R << "[1] = __byte_perm(r0, r1, 0x7531);\n";
          b << "      " << R << "[2] = __byte_perm(r2, r3, 0x6420);\n";
          b << "      " << R << "[3] = __byte_perm(r2, r3, 0x7531);\n    }\n";
        }
    }
    int8_mmas("    ", [](int j, int t) { return "rf" + S(j) + "_t" + S(t); }, lhs);
  }

  // A's fragments (from ring slot `slot`), the rhs fragments and the mmas of one stride.
  void fast_compute() {
    const int nb = b_regs(p.shape, 8);
    for (size_t g = 0; g < p.groups.size(); ++g) b << "    u32 lf" << g << "[" << nb << "];\n";
    lhs_frags("lf", false);
    fast_frags_and_mmas();
  }

  // With KG = 2 warp groups: group 1 hands its accumulators to group 0 through shared
  // memory (the first rhs plane's ring, free once both groups are done) and leaves.
  void fast_group_sum() {
    if (kg() == 1) return;
    const int nc = c_regs(p.shape);
    b << "  // ---- the warp groups' sums: group 1's accumulators into group 0's ----\n";
    b << "  __syncthreads();  // both groups are done with their rings\n";
    b << "  int *red = " << (p.launch.reduction_smem ? "sred" : "(int *)&sb0[0][0][0][0]") << ";  // [accumulator][register][tid]\n";
    int a = 0;
    std::string names;
    b << "  if (grp == 1) {\n";
    for (size_t g = 0; g < p.groups.size(); ++g)
      for (size_t j = 0; j < p.rhs.size(); ++j)
        for (int t = 0; t < tiles; ++t, ++a)
          b << "    for (int i = 0; i < " << nc << "; ++i) red[(" << a * nc << " + i) * GT + tid] = acc_g" << g << "_r" << j
            << "_t" << t << "[i];\n";
    b << "  }\n  __syncthreads();\n  if (grp != 0) return;\n";
    a = 0;
    for (size_t g = 0; g < p.groups.size(); ++g)
      for (size_t j = 0; j < p.rhs.size(); ++j)
        for (int t = 0; t < tiles; ++t, ++a)
          b << "  for (int i = 0; i < " << nc << "; ++i) acc_g" << g << "_r" << j << "_t" << t << "[i] += red[(" << a * nc
            << " + i) * GT + tid];\n";
  }

  std::string fast_body() {
    const int S_ = p.launch.ring_depth;
    b << "  constexpr int KG = " << kg() << ";  // warp groups: group g takes the row-block's strides g, g + KG, ...\n";
    b << "  constexpr int GT = THREADS / KG;  // threads per group\n";
    if (kg() == 1) b << "  const int grp = 0, tid = threadIdx.x;\n";
    else b << "  const int grp = threadIdx.x / GT, tid = threadIdx.x % GT;\n";
    b << "  constexpr int STAGES = " << S_ << ";  // cp.async ring depth (per group)\n";
    b << "  constexpr int IR = " << p.launch.index_ring << ";      // index ring depth\n";
    b << "  // ---- shared memory: the ring of gathered B rows (rows padded by 16 bytes: conflict-free\n"
      << "  //      ldmatrix), A's strides and the column indices ----\n";
    for (size_t j = 0; j < p.rhs.size(); ++j)
      b << "  __shared__ __align__(16) unsigned char sb" << j << "[KG][STAGES][KS][" << pitch(p.rhs[j]) << "];  // "
        << p.rhs[j].str() << ", " << p.rhs[j].storage_bits << "-bit\n";
    for (size_t i = 0; i < p.lhs.size(); ++i)
      b << "  __shared__ __align__(16) unsigned char sa" << i << "[KG][STAGES][" << a_stride_bytes(p.lhs[i]) << "];  // "
        << p.lhs[i].str() << ", " << p.lhs[i].storage_bits << "-bit, V x KS row-major\n";
    b << "  __shared__ __align__(16) int sidx[KG][IR][KS];\n";
    if (p.launch.reduction_smem)
      b << "  __shared__ __align__(16) int sred[" << p.launch.reduction_smem / 4 << "];  // the groups' accumulators\n";
    declare_accumulators();
    b << "  const int nstrides = ((end - begin) / KS - grp + KG - 1) / KG;  // this group's strides\n";
    fast_copy_setup();
    if (S_ == 1) {
      b << "  for (int it = 0; it < nstrides; ++it) {  // no prefetch: indices, gather, compute\n";
      fast_issue_idx("it", "    ");
      b << "    asm volatile(\"cp.async.commit_group;\\n\" ::);\n";
      b << "    asm volatile(\"cp.async.wait_group 0;\\n\" ::);\n    " << gsync() << "\n";
      fast_issue_stride("it", "    ");
      b << "    asm volatile(\"cp.async.commit_group;\\n\" ::);\n";
      b << "    asm volatile(\"cp.async.wait_group 0;\\n\" ::);\n    " << gsync() << "\n    const int slot = 0;\n";
      fast_compute();
      b << "    " << gsync() << "\n  }\n";
      fast_group_sum();
      epilogue();
      return b.str();
    }
    b << "  // ---- prologue: indices of strides 0 .. 2*(STAGES-1)-1, then strides 0 .. STAGES-2 ----\n";
    b << "  for (int i = tid; i < min(nstrides, 2 * (STAGES - 1)) * (KS / 4); i += GT)\n";
    b << "    " << cp16("&sidx[grp][i / (KS / 4)][(i % (KS / 4)) * 4]",
                    "col_idx + begin + (grp + KG * (i / (KS / 4))) * KS + (i % (KS / 4)) * 4");
    b << "  asm volatile(\"cp.async.commit_group;\\n\" ::);\n";
    b << "  asm volatile(\"cp.async.wait_group 0;\\n\" ::);\n  " << gsync() << "\n";
    b << "  #pragma unroll\n  for (int st = 0; st < STAGES - 1; ++st) {\n    if (st < nstrides)\n";
    fast_issue_stride("st", "    ");
    b << "    asm volatile(\"cp.async.commit_group;\\n\" ::);\n  }\n";
    b << "  for (int it = 0; it < nstrides; ++it) {\n";
    b << "    asm volatile(\"cp.async.wait_group %0;\\n\" :: \"n\"(STAGES - 2));  // stride it and its +STAGES-1 indices landed\n";
    b << "    " << gsync() << "\n";
    b << "    {  // keep the ring full: stride it + STAGES - 1 into the slot freed by stride it - 1\n";
    b << "      const int st = it + STAGES - 1;\n      if (st < nstrides)\n";
    fast_issue_stride("st", "      ");
    b << "      const int sx = it + 2 * (STAGES - 1);\n      if (sx < nstrides) {\n";
    fast_issue_idx("sx", "        ");
    b << "      }\n      asm volatile(\"cp.async.commit_group;\\n\" ::);\n    }\n";
    b << "    const int slot = it % STAGES;\n";
    fast_compute();
    b << "  }\n";
    b << "  asm volatile(\"cp.async.wait_group 0;\\n\" ::);\n";
    fast_group_sum();
    epilogue();
    return b.str();
  }

  // ---- SpMM resident-B path: int8 m16n8k32, dense dimension on M, B slice in shared memory ----
  // Each thread block copies its K x BSn slice of B (every rhs plane) into dynamic shared
  // memory once, then its 16 warps take the row-blocks of its part of the row-block list one
  // at a time (a shared counter) and gather the rows a stride names straight from the slice
  // with ldmatrix: B crosses L2 once per block instead of once per vector. Each lane loads
  // its own column index and A fragment of the next strides into registers, DEPTH strides
  // ahead (a register ring, unrolled). The 16-byte units of each slice row are swizzled so
  // that 8 rows of different column residues mod 8 (what the bank-balanced SR-BCRS puts in
  // every 8 slots) sit in 8 different bank groups.
  int res_row_bytes(const Chunk &c) const { return slice_row_bytes(p, c); }
  // resident_swizzle (codegen.h) as a CUDA expression of row `k`.
  static std::string res_swizzle(const std::string &k, int units) {
    switch (units) {
      case 1: case 3: return "0";  // 3 units: row k starts in bank group 3k mod 8 already
      case 2: return "((" + k + " >> 2) & 1)";
      case 4: return "((" + k + " >> 1) & 3)";
      default: return "(" + k + " & 7)";  // 8 units
    }
  }

  // Register slot d of the ring: the next stride's column index of this lane (ci<d>), its lhs
  // fragments (ls<d>_<group>[]), and its row-block and flags (rb<d>, fl<d>).
  void res_issue(int d, const std::string &in) {
    const std::string D = S(d);
    b << in << "rb" << D << " = -1, fl" << D << " = 0;\n";
    b << in << "if (irb < rb_hi) {\n" << in << "  rb" << D << " = irb;\n";
    b << in << "  if (is < ie) {\n";
    b << in << "    const long long s = (long long)is * KS;  // the stride's first slot\n";
    b << in << "    ci" << D << " = __ldg(col_idx + s + lane);\n";
    lhs_frags("ls" + D + "_", false, in + "    ");
    b << in << "    ++is;\n";
    b << in << "  } else {\n" << in << "    fl" << D << " = 2;  // no vectors: the row-block's output is zeros\n" << in
      << "  }\n";
    b << in << "  if (is >= ie) fl" << D << " |= 1, advance();\n" << in << "}\n";
  }

  std::string resident_body() {
    const int DEPTH = p.launch.ring_depth, nb = b_regs(p.shape, 8);
    b << "  constexpr int WARPS = THREADS / 32;\n";
    b << "  extern __shared__ __align__(16) unsigned char smem[];\n";
    b << "  __shared__ int next_rb;  // the next row-block of this block's part that no warp has taken\n";
    b << "  const int KR = max(K, 8);  // slice rows: pads gather rows 0..7\n";
    std::string base = "smem";
    for (size_t j = 0; j < p.rhs.size(); ++j) {
      const Chunk &c = p.rhs[j];
      b << "  unsigned char *sb" << j << " = " << base << ";  // rhs plane " << j << " (" << c.str() << ", "
        << c.storage_bits << "-bit): KR rows x " << res_row_bytes(c) << " bytes\n";
      base = "sb" + S(j) + " + KR * " + S(res_row_bytes(c));
    }
    b << "  (void)KR;\n";
    b << "  if (threadIdx.x == 0) next_rb = rb_lo + WARPS;  // warp w starts with row-block rb_lo + w\n";
    b << "  // ---- this block's slice of B into shared memory, once ----\n";
    for (size_t j = 0; j < p.rhs.size(); ++j) {
      const Chunk &c = p.rhs[j];
      const int U = res_row_bytes(c) / 16;
      b << "  {  // plane " << j << ": K rows x " << U << " units of 16 bytes, stored swizzled and contiguous per slice\n";
      b << "    const unsigned char *src = b" << j << " + (long long)blockIdx.x * K * " << res_row_bytes(c) << ";\n";
      b << "    for (int i = threadIdx.x; i < K * " << U << "; i += THREADS)\n";
      b << "      " << cp16("sb" + S(j) + " + i * 16", "src + (long long)i * 16");
      b << "  }\n";
    }
    b << "  asm volatile(\"cp.async.commit_group;\\n\" ::);\n";
    b << "  __syncthreads();  // next_rb is set\n";
    b << "  // ---- which stride is loaded next: row-blocks taken one at a time ----\n";
    b << "  int irb = rb_hi, is = 0, ie = 0;           // row-block being loaded, its next stride, its end (strides)\n";
    b << "  int nrb = rb_lo + warp, nb0 = 0, nb1 = 0;  // the row-block after it and its row pointers, loaded early\n";
    b << "  if (nrb < rb_hi) nb0 = __ldg(row_ptr + 2 * nrb), nb1 = __ldg(row_ptr + 2 * nrb + 1);\n";
    b << "  auto advance = [&]() {  // start loading row-block nrb and take the one after it\n";
    b << "    irb = nrb, is = nb0 / KS, ie = (nb1 + KS - 1) / KS;\n";
    b << "    if (irb >= rb_hi) return;\n";
    b << "    int r = 0;\n    if (lane == 0) r = atomicAdd(&next_rb, 1);\n";
    b << "    nrb = __shfl_sync(0xffffffffu, r, 0);\n";
    b << "    if (nrb < rb_hi) nb0 = __ldg(row_ptr + 2 * nrb), nb1 = __ldg(row_ptr + 2 * nrb + 1);\n";
    b << "  };\n  advance();\n";
    b << "  // ---- the register ring: " << DEPTH << " strides in flight per warp ----\n";
    for (int d = 0; d < DEPTH; ++d) {
      b << "  int ci" << d << " = 0, rb" << d << ", fl" << d << ";\n";
      for (size_t g = 0; g < p.groups.size(); ++g) b << "  u32 ls" << d << "_" << g << "[" << nb << "];\n";
      res_issue(d, "  ");
    }
    b << "  asm volatile(\"cp.async.wait_group 0;\\n\" ::);  // this thread's part of the slice landed\n";
    b << "  __syncthreads();  // and every thread's\n";
    declare_accumulators();
    b << "  for (;;) {\n";
    for (int d = 0; d < DEPTH; ++d) {
      const std::string D = S(d);
      b << "    // ---- ring slot " << D << " ----\n";
      b << "    if (rb" << D << " < 0) break;\n";
      b << "    if (!(fl" << D << " & 2)) {\n";
      b << "      const int row = ci" << D << " < 0 ? (lane & 7) : ci" << D
        << ";  // this lane's ldmatrix row (k slot `lane`); pads: A's zeros, row lane % 8 keeps banks apart\n";
      for (size_t j = 0; j < p.rhs.size(); ++j)
        b << "      const int brow" << j << " = row * " << res_row_bytes(p.rhs[j]) << ", sw" << j << " = "
          << res_swizzle("row", res_row_bytes(p.rhs[j]) / 16) << ";\n";
      fast_frags_and_mmas("ls" + D + "_");
      b << "    }\n";
      b << "    if (fl" << D << " & 1) {  // the row-block's last stride: write its V rows, start the next from zero\n";
      b << "      const int blk = rb" << D << ";\n";
      epilogue();
      for_each_accumulator([&](const std::string &acc, int nc) {
        b << "      #pragma unroll\n      for (int i = 0; i < " << nc << "; ++i) " << acc << "[i] = 0;\n";
      });
      b << "    }\n";
      res_issue(d, "    ");
    }
    b << "  }\n";
    return b.str();
  }

  std::string sddmm_body() {
    b << "  // ---- the B columns of this warp's vectors (rows past the list read column 0, unwritten) ----\n";
    b << "  const int qa = begin + n_base + nw + gid;\n";
    b << "  const int cv0 = qa < qend ? max(col_idx[qa], 0) : 0;\n";
    b << "  const int cv1 = qa + 8 < qend ? max(col_idx[qa + 8], 0) : 0;\n";
    b << "  (void)cv1;\n";
    b << "  // ---- int32 accumulators, one mma tile per (stack group, rhs chunk, tile) ----\n";
    declare_accumulators();
    if (p.spec.prefetch) {
      const int n = dense_on_m() ? b_regs(p.shape, p.native_bits) : a_regs(p.shape, p.native_bits);
      for (size_t g = 0; g < p.groups.size(); ++g) b << "  u32 lf" << g << "[" << n << "];  // group " << g << ", k-step 0\n";
      b << "  {\n    const int kb = 0;\n";
      lhs_frags("lf", false);
      b << "  }\n";
    }
    b << "  for (int kb = 0; kb < K; kb += KS) {\n";
    if (p.spec.prefetch) {
      b << "    // 1. prefetch A's next k-step while this one computes\n";
      const int n = dense_on_m() ? b_regs(p.shape, p.native_bits) : a_regs(p.shape, p.native_bits);
      for (size_t g = 0; g < p.groups.size(); ++g) b << "    u32 ln" << g << "[" << n << "];\n";
      b << "    const int kn = kb + KS;\n    if (kn < K) {\n      const int kb = kn;\n";
      lhs_frags("ln", false, "      ");
      b << "    }\n";
      b << "    // 2. B columns and mmas\n";
      rhs_frags_and_mmas("lf");
      b << "    if (kn < K) {\n";
      for (size_t g = 0; g < p.groups.size(); ++g)
        b << "      #pragma unroll\n      for (int i = 0; i < " << n << "; ++i) lf" << g << "[i] = ln" << g << "[i];\n";
      b << "    }\n";
    } else {
      b << "    // 1. A's V rows, 2. B columns and mmas\n";
      lhs_frags("lf", true);
      rhs_frags_and_mmas("lf");
    }
    b << "  }\n";
    epilogue();
    return b.str();
  }

  std::string body() {
    b << "  // ---- shared memory: the stride's gathered B rows, one buffer per rhs chunk plane ----\n";
    for (size_t j = 0; j < p.rhs.size(); ++j)
      b << "  __shared__ __align__(16) unsigned char sb" << j << "[KS][" << pitch(p.rhs[j]) << "];  // "
        << p.rhs[j].str() << ", " << p.rhs[j].storage_bits << "-bit, row = stored slot\n";
    b << "  // ---- int32 accumulators, one mma tile per (stack group, rhs chunk, dense tile) ----\n";
    declare_accumulators();
    if (p.spec.prefetch) {
      for (size_t j = 0; j < p.rhs.size(); ++j) {
        int total = p.shape.k * row_bytes(p.rhs[j]) / 16;
        b << "  uint4 pf" << j << "[" << (total + threads - 1) / threads << "];  // prefetched B pieces, plane " << j
          << "\n";
      }
      b << "  if (begin < end) {  // prefetch the first stride\n";
      gather(true, "begin");
      b << "  }\n";
    }
    b << "  for (int s = begin; s < end; s += KS) {\n";
    if (p.spec.prefetch) {
      b << "    // 1. stage the prefetched rows, then prefetch the next stride's while this one computes\n";
      stage_prefetched();
      b << "    __syncthreads();\n    if (s + KS < end) {\n";
      gather(true, "s + KS");
      b << "    }\n";
    } else {
      b << "    // 1. gather this stride's B rows\n";
      gather(false, "s");
      b << "    __syncthreads();\n";
    }
    b << "    // 2. fragments and mmas\n";
    fragments_and_mmas();
    b << "    __syncthreads();\n  }\n";
    epilogue();
    return b.str();
  }
};

}  // namespace

bool fast_compile_enabled() {
  static const bool on = [] {
    const char *e = std::getenv("MAGICUBE_FAST_COMPILE");
    return e && std::string(e) == "1";
  }();
  return on;
}

std::vector<std::string> nvrtc_options(const Plan &p) {
  std::vector<std::string> o;
  o.push_back("-minimal");  // no texture/surface or device-runtime declarations: a faster front end
  // NVVM and ptxas favour compile time: about 40 % less compile time, but 4-10 % slower
  // SpMM/SDDMM kernels and 30 % slower 4-bit SDDMM on the H100 (2026-11-22), so opt-in.
  if (fast_compile_enabled()) o.push_back("--Ofast-compile=min");
  if (is_float(p.spec.out)) o.push_back("--fmad=false");
  return o;
}

llvm::Expected<KernelSource> generate(const Plan &p) {
  if (p.launch.params.empty())
    return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                   "codegen: plan " + to_string(p.spec) + " has no launch configuration (plans come from the planner)");
  Gen gen(p);
  KernelSource ks;
  ks.name = p.kernel_name();

  std::ostringstream src;
  src << "// Generated by Magicube JIT (" << kGeneratorVersion << "). Do not edit.\n//\n";
  std::istringstream plan_text(p.str());
  for (std::string line; std::getline(plan_text, line);) src << "// " << line << "\n";
  src << "\n" << kTemplate_fragments_cuh << "\n";
  if (is_float(p.spec.out)) src << "#define MC_FN __device__ __forceinline__\n" << kTemplate_epilogue_math_cuh << "\n";
  src << "// ---- mma.sync wrappers used by this kernel ----\n";
  std::set<std::string> seen;
  for (const Term &t : p.terms) {
    bool a_s = p.orient == Orientation::DenseOnM ? p.rhs[t.rhs_chunk].is_signed : p.groups[t.group].is_signed;
    bool b_s = p.orient == Orientation::DenseOnM ? p.groups[t.group].is_signed : p.rhs[t.rhs_chunk].is_signed;
    std::string name = wrapper_name(p.shape, p.native_bits, a_s, b_s);
    if (seen.insert(name).second) src << wrapper_def(p.shape, p.native_bits, a_s, b_s);
  }
  src << "\n";

  // The parameter list is the plan's (Plan::launch.params): the runtime packs arguments from
  // the same list.
  std::string params = "\n";
  const auto &ps = p.launch.params;
  for (size_t i = 0; i < ps.size(); ++i)
    params += "    " + ps[i].type + " " + ps[i].name + (i + 1 < ps.size() ? "," : "") + "  // " + ps[i].comment + "\n";
  const bool sddmm = p.spec.op == OpKind::SDDMM;

  std::string kernel = sddmm ? kTemplate_sddmm_cu : gen.resident() ? kTemplate_spmm_resident_cu : kTemplate_spmm_cu;
  replace_all(kernel, "{{KERNEL_NAME}}", ks.name);
  replace_all(kernel, "{{PARAMS}}", params);
  replace_all(kernel, "{{THREADS}}", S(p.launch.threads));
  replace_all(kernel, "{{KS}}", S(p.shape.k));
  replace_all(kernel, "{{V}}", S(p.spec.v));
  replace_all(kernel, "{{BSN}}", S(p.spec.bsn));
  replace_all(kernel, "{{WN}}", S(gen.wn));
  replace_all(kernel, "{{WPG}}", S(gen.threads / 32 / gen.kg()));
  replace_all(kernel, "{{BODY}}", sddmm ? (gen.sfast() ? gen.sddmm_fast_body() : gen.sddmm_body()) : gen.resident() ? gen.resident_body() : gen.fast() ? gen.fast_body() : gen.body());
  src << kernel;
  ks.source = src.str();
  return ks;
}

}  // namespace magicube
