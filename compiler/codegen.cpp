#include "compiler/codegen.h"

#include <map>
#include <set>
#include <sstream>

#include "compiler/templates.h"

namespace magicube {

namespace {

llvm::Error err(const llvm::Twine &msg) { return llvm::createStringError(llvm::inconvertibleErrorCode(), msg); }

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
  int tiles = 1;         // mma tiles per warp along the dense dimension (16 columns)

  explicit Gen(const Plan &plan) : p(plan) {
    threads = plan.spec.bsn / 16 * 32;
    kpr = 32 / plan.native_bits;
    tiles = 16 / plan.dense_side();
  }

  bool dense_on_m() const { return p.orient == Orientation::DenseOnM; }
  int row_bytes(const Chunk &c) const { return p.spec.bsn * c.storage_bits / 8; }
  int pitch(const Chunk &c) const { return row_bytes(c) + 16; }  // +16 bytes: conflict-free columns

  // The smem row (stored slot) that holds k-position `kk` of the stride: the inverse of the
  // plan's 4-bit shuffle (the builder stored the column of k-position shuffle[p] at slot p).
  std::string slot_of(const std::string &kk) const {
    if (!p.shuffle_b) return kk;
    int inv[8];
    for (int s = 0; s < 8; ++s) inv[p.shuffle[s]] = s;
    std::string tbl;
    for (int i = 0; i < 8; ++i) tbl += (i ? "," : "") + S(inv[i]);
    return "(((" + kk + ") & ~7) | ((0x" + [&] {
      // pack the 8 3-bit entries into one constant: entry i at bits 4i
      unsigned v = 0;
      for (int i = 0; i < 8; ++i) v |= unsigned(inv[i]) << (4 * i);
      std::ostringstream h;
      h << std::hex << v;
      return h.str();
    }() + "u >> ((" + kk + ") & 7) * 4) & 7))";
  }

  // Expression of one register of lhs chunk fragments for (slot, r, k0): KPR consecutive
  // k-values of row r of lhs chunk `li` in the current stride, straight from global memory.
  std::string lhs_reg(int li, const std::string &r, const std::string &k0) const {
    const Chunk &c = p.lhs[li];
    std::string idx = "(s * V + (" + r + ") * KS + (" + k0 + "))";  // element index in the value layout
    std::string plane = "a" + S(li);
    if (c.storage_bits == p.native_bits) {
      // 4 bytes (int8) or 8 nibbles (int4): one aligned 32-bit load
      if (c.storage_bits == 8) return "__ldg((const u32 *)(" + plane + " + " + idx + "))";
      return "__ldg((const u32 *)(" + plane + " + " + idx + " / 2))";
    }
    // 4-bit storage widened to bytes for the int8 mma
    return "mc_widen4to8(__ldg((const u16 *)(" + plane + " + " + idx + " / 2)), " + (c.is_signed ? "true" : "false") +
           ")";
  }

  // Expression of one element of rhs chunk j from shared memory (row = stored slot, col).
  std::string rhs_elem(int j, const std::string &row, const std::string &col) const {
    const Chunk &c = p.rhs[j];
    std::string sg = c.is_signed ? "true" : "false";
    if (c.storage_bits == 8) return "mc_elem8(&sb" + S(j) + "[" + row + "][0], " + col + ", " + sg + ")";
    return "mc_elem4(&sb" + S(j) + "[" + row + "][0], " + col + ", " + sg + ")";
  }

  std::string rhs_reg(int j, const std::string &k0, const std::string &col) const {
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

  void fragments_and_mmas() {
    const MmaShape &sh = p.shape;
    const int na = a_regs(sh, p.native_bits), nb = b_regs(sh, p.native_bits);
    const std::string half = S(p.shape.k / 2);
    if (dense_on_m()) {
      // mma B operand = lhs stack (k x 8, column n = V-side row gid); A = rhs (16 x k).
      for (size_t g = 0; g < p.groups.size(); ++g) {
        b << "    u32 lf" << g << "[" << nb << "];  // group " << g << ": lhs chunks stacked on the mma's N side\n";
        for (int i = 0; i < nb; ++i)
          b << "    lf" << g << "[" << i << "] = " << lhs_stack_reg(int(g), "gid", "tig * " + S(kpr) + " + " + half + " * " + S(i))
            << ";\n";
      }
      for (size_t j = 0; j < p.rhs.size(); ++j) {
        b << "    u32 rf" << j << "[" << na << "];  // rhs chunk " << j << " transposed: row = dense column\n";
        for (int i = 0; i < na; ++i) {
          std::string row = sh.m == 16 ? "nw + gid + " + S(8 * (i & 1)) : "nw + gid";
          std::string k0 = "tig * " + S(kpr) + (sh.m == 16 ? " + " + half + " * " + S(i >> 1) : "");
          b << "    rf" << j << "[" << i << "] = " << rhs_reg(int(j), k0, row) << ";\n";
        }
      }
      for (const Term &t : p.terms) {
        if (t.slot != 0) continue;  // one mma per (group, rhs chunk)
        bool a_s = p.rhs[t.rhs_chunk].is_signed, b_s = p.groups[t.group].is_signed;
        b << "    " << wrapper_name(sh, p.native_bits, a_s, b_s) << "(acc_g" << t.group << "_r" << t.rhs_chunk << "_t0, rf"
          << t.rhs_chunk << ", lf" << t.group << ");\n";
      }
    } else {
      // mma A operand = lhs stack (V side on M); B = rhs (k x 8 dense columns per tile).
      for (size_t g = 0; g < p.groups.size(); ++g) {
        b << "    u32 lf" << g << "[" << na << "];  // group " << g << ": lhs chunks stacked on the mma's M side\n";
        for (int i = 0; i < na; ++i) {
          std::string vrow = sh.m == 16 ? "gid + " + S(8 * (i & 1)) : "gid";
          std::string k0 = "tig * " + S(kpr) + (sh.m == 16 ? " + " + half + " * " + S(i >> 1) : "");
          b << "    lf" << g << "[" << i << "] = " << lhs_stack_reg(int(g), vrow, k0) << ";\n";
        }
      }
      for (size_t j = 0; j < p.rhs.size(); ++j)
        for (int t = 0; t < tiles; ++t) {
          b << "    u32 rf" << j << "_t" << t << "[" << nb << "];  // rhs chunk " << j << ", dense columns nw+" << 8 * t
            << "..+7\n";
          for (int i = 0; i < nb; ++i) {
            std::string k0 = "tig * " + S(kpr) + (sh.n == 8 && sh.m == 16 ? " + " + half + " * " + S(i) : "");
            b << "    rf" << j << "_t" << t << "[" << i << "] = " << rhs_reg(int(j), k0, "nw + " + S(8 * t) + " + gid")
              << ";\n";
          }
        }
      for (const Term &term : p.terms) {
        if (term.slot != 0) continue;
        bool a_s = p.groups[term.group].is_signed, b_s = p.rhs[term.rhs_chunk].is_signed;
        for (int t = 0; t < tiles; ++t)
          b << "    " << wrapper_name(sh, p.native_bits, a_s, b_s) << "(acc_g" << term.group << "_r" << term.rhs_chunk
            << "_t" << t << ", lf" << term.group << ", rf" << term.rhs_chunk << "_t" << t << ");\n";
      }
    }
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
      if (dense_on_m())
        b << "      const int vidx = ccol, col = n_base + nw + crow;\n";
      else
        b << "      const int vidx = crow, col = n_base + nw + " << 8 * t << " + ccol;\n";
      b << "      const int row = blk * V + vidx;\n";
      b << "      if (vidx < V && row < M && col < N) c[(long long)row * N + col] = (" << (i64 ? "long long" : "int")
        << ")tot[i];\n";
      b << "    }\n  }\n";
    }
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

llvm::Expected<KernelSource> generate(const Plan &p) {
  if (p.spec.op != OpKind::SpMM) return err("codegen: " + llvm::Twine(op_name(p.spec.op)) + " is not generated yet");
  if (p.spec.out != OutType::Int32 && p.spec.out != OutType::Int64)
    return err("codegen: output type " + llvm::Twine(out_name(p.spec.out)) + " is not generated yet");
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
  src << "// ---- mma.sync wrappers used by this kernel ----\n";
  std::set<std::string> seen;
  for (const Term &t : p.terms) {
    bool a_s = p.orient == Orientation::DenseOnM ? p.rhs[t.rhs_chunk].is_signed : p.groups[t.group].is_signed;
    bool b_s = p.orient == Orientation::DenseOnM ? p.groups[t.group].is_signed : p.rhs[t.rhs_chunk].is_signed;
    std::string name = wrapper_name(p.shape, p.native_bits, a_s, b_s);
    if (seen.insert(name).second) src << wrapper_def(p.shape, p.native_bits, a_s, b_s);
  }
  src << "\n";

  std::string params = "                const int *__restrict__ col_idx,  // per slot; -1 pads\n";
  for (size_t i = 0; i < p.lhs.size(); ++i)
    params += "                const unsigned char *__restrict__ a" + S(i) + ",  // lhs chunk " + p.lhs[i].str() +
              ", " + S(p.lhs[i].storage_bits) + "-bit, SR-BCRS value layout\n";
  for (size_t j = 0; j < p.rhs.size(); ++j)
    params += "                const unsigned char *__restrict__ b" + S(j) + ",  // rhs chunk " + p.rhs[j].str() +
              ", " + S(p.rhs[j].storage_bits) + "-bit, K x ldb row-major\n";
  params += std::string("                ") + (p.spec.out == OutType::Int32 ? "int" : "long long") +
            " *__restrict__ c,  // M x N row-major\n";

  std::string kernel = kTemplate_spmm_cu;
  replace_all(kernel, "{{KERNEL_NAME}}", ks.name);
  replace_all(kernel, "{{PARAMS}}", params);
  replace_all(kernel, "{{THREADS}}", S(ks.threads));
  replace_all(kernel, "{{KS}}", S(p.shape.k));
  replace_all(kernel, "{{V}}", S(p.spec.v));
  replace_all(kernel, "{{BSN}}", S(p.spec.bsn));
  replace_all(kernel, "{{BODY}}", gen.body());
  src << kernel;
  ks.source = src.str();
  return ks;
}

}  // namespace magicube
