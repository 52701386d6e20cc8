#include "compiler/codegen.h"

#include <algorithm>
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

  explicit Gen(const Plan &plan) : p(plan) {
    threads = plan.spec.bsn / 16 * 32;
    if (fast()) {
      const int warps = std::min(4, plan.spec.bsn / 16);
      threads = warps * 32;
      wn = plan.spec.bsn / warps;
    }
    kpr = 32 / plan.native_bits;
    tiles = fast() ? wn / 16 : 16 / plan.dense_side();
  }

  bool dense_on_m() const { return p.orient == Orientation::DenseOnM; }
  bool sddmm() const { return p.spec.op == OpKind::SDDMM; }
  int row_bytes(const Chunk &c) const { return p.spec.bsn * c.storage_bits / 8; }
  int pitch(const Chunk &c) const { return row_bytes(c) + 16; }  // +16 bytes: conflict-free columns

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
    return "mc_widen4to8(__ldg((const u16 *)(" + plane + " + (" + idx + ") / 2)), " + (c.is_signed ? "true" : "false") +
           ")";
  }

  // One register of lhs chunk `li` for V-row r at k-offset k0: SpMM reads the stride's
  // row-major SR-BCRS values, SDDMM the dense A row (K contiguous, pitch ldk).
  std::string lhs_reg(int li, const std::string &r, const std::string &k0) const {
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
      b << "    #pragma unroll\n    for (int i = 0; i < " << nc << "; ++i) {\n";
      if (sh.m == 16)
        b << "      const int crow = gid + 8 * (i >> 1), ccol = tig * 2 + (i & 1);\n";
      else
        b << "      const int crow = gid, ccol = tig * 2 + i;\n";
      if (fast())  // mma row m holds the warp's column 2 * (m % 8) + m / 8 (ldmatrix.trans order)
        b << "      const int vidx = ccol, col = n_base + nw + " << 16 * t << " + 2 * gid + (i >> 1);\n";
      else if (dense_on_m())
        b << "      const int vidx = ccol, col = n_base + nw + crow;\n";
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
  // B rows go global -> shared memory through a STAGES-deep cp.async ring (4-bit planes are
  // widened to bytes on the way); ldmatrix.x4.trans.b16 + two prmt per register pair turn
  // them into k-contiguous A fragments (the plan's 16-slot shuffle matches that k order).
  bool fast() const {
    return !sddmm() && dense_on_m() && p.native_bits == 8 && p.shape == MmaShape{16, 8, 32};
  }
  // Ring depth: 3 strides in flight with the prefetch pipeline on, 1 (gather, then
  // compute) with it off.
  int stages() const {
    if (!p.spec.prefetch) return 1;
    // 3 deep where the ring fits the 48 KiB of static shared memory, else 2.
    const int bytes = int(p.rhs.size()) * 3 * p.shape.k * (p.spec.bsn + 16);
    return bytes <= 48 * 1024 ? 3 : 2;
  }

  void fast_gather(const std::string &st) {
    for (size_t j = 0; j < p.rhs.size(); ++j) {
      const Chunk &c = p.rhs[j];
      const std::string J = S(j);
      const int src_bytes = p.spec.bsn * c.storage_bits / 8, pieces = src_bytes / 16, total = p.shape.k * pieces;
      const int iters = (total + threads - 1) / threads;
      b << "    #pragma unroll\n    for (int gi = 0; gi < " << iters << "; ++gi) {  // plane " << J << ": " << p.shape.k
        << " rows x " << pieces << " x 16 bytes" << (c.storage_bits == 4 ? " (4-bit, widened to bytes)" : "") << "\n";
      b << "      const int i = threadIdx.x + gi * THREADS;\n";
      b << "      if (" << (total % threads ? "i < " + S(total) : std::string("true")) << ") {\n";
      b << "        const int kk = i / " << pieces << ", piece = i % " << pieces << ";\n";
      b << "        const int col = cn" << J << "_" << "[gi];  // loaded one stride ahead\n";
      b << "        unsigned char *dst = &sb" << J << "[(" << st << ") % STAGES][kk][0];\n";
      if (c.storage_bits == 8) {
        b << "        const unsigned char *src = b" << J << " + (long long)col * ldb + n_base + piece * 16;\n";
        b << "        asm volatile(\"cp.async.ca.shared.global [%0], [%1], 16;\\n\" :: \"r\"((unsigned)__cvta_generic_to_shared(dst + piece * 16)), \"l\"(src));\n";
      } else {
        b << "        const uint4 x = __ldg((const uint4 *)(b" << J << " + ((long long)col * ldb + n_base) / 2) + piece);\n";
        std::string sg = c.is_signed ? "true" : "false";
        b << "        uint4 lo, hi;\n";
        b << "        lo.x = mc_widen4to8(x.x & 0xffff, " << sg << "); lo.y = mc_widen4to8(x.x >> 16, " << sg << ");\n";
        b << "        lo.z = mc_widen4to8(x.y & 0xffff, " << sg << "); lo.w = mc_widen4to8(x.y >> 16, " << sg << ");\n";
        b << "        hi.x = mc_widen4to8(x.z & 0xffff, " << sg << "); hi.y = mc_widen4to8(x.z >> 16, " << sg << ");\n";
        b << "        hi.z = mc_widen4to8(x.w & 0xffff, " << sg << "); hi.w = mc_widen4to8(x.w >> 16, " << sg << ");\n";
        b << "        *(uint4 *)(dst + piece * 32) = lo;\n        *(uint4 *)(dst + piece * 32 + 16) = hi;\n";
      }
      b << "      }\n    }\n";
    }
  }

  // ldmatrix.trans + prmt fragments of every rhs plane from ring slot `slot`, then the mmas.
  void fast_frags_and_mmas() {
    for (int t = 0; t < tiles; ++t)
      for (size_t j = 0; j < p.rhs.size(); ++j) {
        const std::string R = "rf" + S(j) + "_t" + S(t);
        b << "    u32 " << R << "[4];  // rhs chunk " << j << ": columns nw + " << 16 * t
          << " + {2*gid, 2*gid+1}, k rows {2t, 2t+1, 8+2t, 9+2t} (+16)\n";
        b << "    {\n      u32 r0, r1, r2, r3;\n";
        b << "      asm volatile(\"ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];\\n\"\n"
          << "                   : \"=r\"(r0), \"=r\"(r1), \"=r\"(r2), \"=r\"(r3)\n"
          << "                   : \"r\"((unsigned)__cvta_generic_to_shared(&sb" << j << "[slot][lane][nw + " << 16 * t
          << "])));\n";
        b << "      " << R << "[0] = __byte_perm(r0, r1, 0x6420);\n";
        b << "      " << R << "[1] = __byte_perm(r0, r1, 0x7531);\n";
        b << "      " << R << "[2] = __byte_perm(r2, r3, 0x6420);\n";
        b << "      " << R << "[3] = __byte_perm(r2, r3, 0x7531);\n    }\n";
      }
    for (const Term &term : p.terms) {
      if (term.slot != 0) continue;
      bool a_s = p.rhs[term.rhs_chunk].is_signed, b_s = p.groups[term.group].is_signed;
      for (int t = 0; t < tiles; ++t)
        b << "    " << wrapper_name(p.shape, 8, a_s, b_s) << "(acc_g" << term.group << "_r" << term.rhs_chunk << "_t" << t
          << ", rf" << term.rhs_chunk << "_t" << t << ", lf" << term.group << ");\n";
    }
  }

  int gather_iters(const Chunk &c) const {
    int total = p.shape.k * (p.spec.bsn * c.storage_bits / 8 / 16);
    return (total + threads - 1) / threads;
  }

  // Column indices this thread gathers for stride `st` into registers cn<j>_[gi] (pads and
  // strides past the row-block read row 0), so the gather never waits on them.
  void fast_load_cols(const std::string &st, const std::string &indent) {
    for (size_t j = 0; j < p.rhs.size(); ++j) {
      const int pieces = p.spec.bsn * p.rhs[j].storage_bits / 8 / 16, total = p.shape.k * pieces;
      b << indent << "#pragma unroll\n" << indent << "for (int gi = 0; gi < " << gather_iters(p.rhs[j]) << "; ++gi) {\n";
      b << indent << "  const int i = threadIdx.x + gi * THREADS;\n";
      b << indent << "  cn" << j << "_[gi] = (" << st << ") < nstrides && i < " << total << " ? max(col_idx[begin + (" << st
        << ") * KS + i / " << pieces << "], 0) : 0;\n";
      b << indent << "}\n";
    }
  }

  std::string fast_body() {
    const int nc = c_regs(p.shape), nb = b_regs(p.shape, 8);
    b << "  constexpr int STAGES = " << stages() << ";  // cp.async ring depth\n";
    b << "  // ---- shared memory: a ring of gathered B strides, bytes, rows padded by 16 (conflict-free ldmatrix) ----\n";
    for (size_t j = 0; j < p.rhs.size(); ++j)
      b << "  __shared__ __align__(16) unsigned char sb" << j << "[STAGES][KS][" << p.spec.bsn + 16 << "];  // "
        << p.rhs[j].str() << "\n";
    for (size_t g = 0; g < p.groups.size(); ++g)
      for (size_t j = 0; j < p.rhs.size(); ++j)
        for (int t = 0; t < tiles; ++t) b << "  int acc_g" << g << "_r" << j << "_t" << t << "[" << nc << "] = {};\n";
    b << "  const int nstrides = (end - begin) / KS;\n";
    for (size_t j = 0; j < p.rhs.size(); ++j)
      b << "  int cn" << j << "_[" << gather_iters(p.rhs[j]) << "];  // column indices of the next gather\n";
    if (stages() == 1) {
      for (size_t g = 0; g < p.groups.size(); ++g) b << "  u32 lf" << g << "[" << nb << "];\n";
      b << "  for (int it = 0; it < nstrides; ++it) {  // no prefetch: gather, wait, compute\n";
      b << "    const int s = begin + it * KS;\n    {\n      const int st = it;\n";
      fast_load_cols("st", "      ");
      fast_gather("st");
      b << "    }\n    asm volatile(\"cp.async.commit_group;\\n\" ::);\n";
      lhs_frags("lf", false);
      b << "    asm volatile(\"cp.async.wait_group 0;\\n\" ::);\n    __syncthreads();\n    const int slot = 0;\n";
      fast_frags_and_mmas();
      b << "    __syncthreads();\n  }\n";
      epilogue();
      return b.str();
    }
    b << "  // ---- prologue: strides 0 .. STAGES-2 in flight, A's first stride in registers ----\n";
    fast_load_cols("0", "  ");
    b << "  #pragma unroll\n  for (int st = 0; st < STAGES - 1; ++st) {\n    if (st < nstrides) {\n";
    fast_gather("st");
    b << "    }\n    asm volatile(\"cp.async.commit_group;\\n\" ::);\n";
    fast_load_cols("st + 1", "    ");
    b << "  }\n";
    for (size_t g = 0; g < p.groups.size(); ++g) b << "  u32 lf" << g << "[" << nb << "] = {};\n";
    b << "  if (nstrides > 0) {\n    const int s = begin;\n";
    lhs_frags("lf", false, "    ");
    b << "  }\n";
    b << "  for (int it = 0; it < nstrides; ++it) {\n";
    b << "    asm volatile(\"cp.async.wait_group %0;\\n\" :: \"n\"(STAGES - 2));  // stride it has landed\n";
    b << "    __syncthreads();\n";
    b << "    {  // keep the ring full: stride it + STAGES - 1 into the slot freed by stride it - 1\n";
    b << "      const int st = it + STAGES - 1;\n      if (st < nstrides) {\n";
    fast_gather("st");
    b << "      }\n      asm volatile(\"cp.async.commit_group;\\n\" ::);\n";
    fast_load_cols("st + 1", "      ");
    b << "    }\n";
    for (size_t g = 0; g < p.groups.size(); ++g) b << "    u32 ln" << g << "[" << nb << "] = {};\n";
    b << "    if (it + 1 < nstrides) {  // A's next stride, one step ahead\n      const int s = begin + (it + 1) * KS;\n";
    lhs_frags("ln", false, "      ");
    b << "    }\n";
    b << "    const int slot = it % STAGES;\n";
    fast_frags_and_mmas();
    for (size_t g = 0; g < p.groups.size(); ++g)
      b << "    #pragma unroll\n    for (int i = 0; i < " << nb << "; ++i) lf" << g << "[i] = ln" << g << "[i];\n";
    b << "  }\n";
    b << "  asm volatile(\"cp.async.wait_group 0;\\n\" ::);\n";
    epilogue();
    return b.str();
  }

  std::string sddmm_body() {
    const int nc = c_regs(p.shape);
    b << "  // ---- the B columns of this warp's vectors (rows past the list read column 0, unwritten) ----\n";
    b << "  const int qa = begin + n_base + nw + gid;\n";
    b << "  const int cv0 = qa < qend ? max(col_idx[qa], 0) : 0;\n";
    b << "  const int cv1 = qa + 8 < qend ? max(col_idx[qa + 8], 0) : 0;\n";
    b << "  (void)cv1;\n";
    b << "  // ---- int32 accumulators, one mma tile per (stack group, rhs chunk, tile) ----\n";
    for (size_t g = 0; g < p.groups.size(); ++g)
      for (size_t j = 0; j < p.rhs.size(); ++j)
        for (int t = 0; t < tiles; ++t)
          b << "  int acc_g" << g << "_r" << j << "_t" << t << "[" << nc << "] = {};\n";
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
    const int nc = c_regs(p.shape);
    b << "  // ---- shared memory: the stride's gathered B rows, one buffer per rhs chunk plane ----\n";
    for (size_t j = 0; j < p.rhs.size(); ++j)
      b << "  __shared__ __align__(16) unsigned char sb" << j << "[KS][" << pitch(p.rhs[j]) << "];  // "
        << p.rhs[j].str() << ", " << p.rhs[j].storage_bits << "-bit, row = stored slot\n";
    b << "  // ---- int32 accumulators, one mma tile per (stack group, rhs chunk, dense tile) ----\n";
    for (size_t g = 0; g < p.groups.size(); ++g)
      for (size_t j = 0; j < p.rhs.size(); ++j)
        for (int t = 0; t < tiles; ++t)
          b << "  int acc_g" << g << "_r" << j << "_t" << t << "[" << nc << "] = {};\n";
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

std::vector<std::string> nvrtc_options(const Plan &p) {
  if (is_float(p.spec.out)) return {"--fmad=false"};
  return {};
}

llvm::Expected<KernelSource> generate(const Plan &p) {
  const bool sddmm = p.spec.op == OpKind::SDDMM;
  Gen gen(p);
  KernelSource ks;
  ks.name = p.kernel_name();
  ks.threads = gen.threads;
  ks.bsn = p.spec.bsn;
  ks.lhs_planes = int(p.lhs.size());
  ks.rhs_planes = int(p.rhs.size());

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

  const std::string ind = "                ";
  std::string params = ind + "const int *__restrict__ col_idx,  // per slot; -1 pads\n";
  for (size_t i = 0; i < p.lhs.size(); ++i)
    params += ind + "const unsigned char *__restrict__ a" + S(i) + ",  // lhs chunk " + p.lhs[i].str() + ", " +
              S(p.lhs[i].storage_bits) + (sddmm ? "-bit, M x ldk row-major\n" : "-bit, SR-BCRS value layout\n");
  for (size_t j = 0; j < p.rhs.size(); ++j)
    params += ind + "const unsigned char *__restrict__ b" + S(j) + ",  // rhs chunk " + p.rhs[j].str() + ", " +
              S(p.rhs[j].storage_bits) + (sddmm ? "-bit, N x ldk (column-major B)\n" : "-bit, K x ldb row-major\n");
  const char *ctype = p.spec.out == OutType::Int32   ? "int"
                      : p.spec.out == OutType::Int64 ? "long long"
                      : p.spec.out == OutType::F32   ? "float"
                                                     : "unsigned short";  // f16 / bf16 bits
  params += ind + ctype +
            (sddmm ? " *__restrict__ c,  // the mask's vectors, V values each\n" : " *__restrict__ c,  // M x N row-major\n");

  std::string kernel = sddmm ? kTemplate_sddmm_cu : kTemplate_spmm_cu;
  replace_all(kernel, "{{KERNEL_NAME}}", ks.name);
  replace_all(kernel, "{{PARAMS}}", params);
  replace_all(kernel, "{{THREADS}}", S(ks.threads));
  replace_all(kernel, "{{KS}}", S(p.shape.k));
  replace_all(kernel, "{{V}}", S(p.spec.v));
  replace_all(kernel, "{{BSN}}", S(p.spec.bsn));
  replace_all(kernel, "{{WN}}", S(gen.wn));
  replace_all(kernel, "{{EXTRA_PARAMS}}",
              is_float(p.spec.out) ? ",\n                float alpha, const float *__restrict__ row_scale,"
                                     " const float *__restrict__ col_scale, const float *__restrict__ bias"
                                   : "");
  replace_all(kernel, "{{BODY}}", sddmm ? gen.sddmm_body() : gen.fast() ? gen.fast_body() : gen.body());
  src << kernel;
  ks.source = src.str();
  return ks;
}

}  // namespace magicube
