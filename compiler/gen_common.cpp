#include "compiler/gen_common.h"

#include <cctype>
#include <set>
#include <sstream>

#include "compiler/codegen.h"
#include "llvm/ADT/Twine.h"
#include "llvm/Support/ErrorHandling.h"

namespace magicube::gen {

namespace {

std::string S(long long x) { return std::to_string(x); }

// The device function of one mma: D += A x B through inline PTX.
std::string wrapper_source(const MmaAtom &a) {
  std::ostringstream o;
  o << "// " << a.ptx << ": D += A x B (" << a.name << ")\n";
  o << "__device__ __forceinline__ void " << a.wrapper << "(int (&d)[" << a.c_regs << "], const u32 (&a)[" << a.a_regs
    << "], const u32 (&b)[" << a.b_regs << "]) {\n";
  int r = 0;
  auto list = [&](int n) {
    std::string s;
    for (int i = 0; i < n; ++i) s += (i ? "," : "") + std::string("%") + S(r++);
    return s;
  };
  const std::string d = list(a.c_regs), A = list(a.a_regs), B = list(a.b_regs);
  o << "  asm volatile(\n      \"" << a.ptx << " {" << d << "}, {" << A << "}, {" << B << "}, {" << d << "};\"\n      : ";
  for (int i = 0; i < a.c_regs; ++i) o << (i ? ", " : "") << "\"+r\"(d[" << i << "])";
  o << "\n      : ";
  for (int i = 0; i < a.a_regs; ++i) o << (i ? ", " : "") << "\"r\"(a[" << i << "])";
  for (int i = 0; i < a.b_regs; ++i) o << ", \"r\"(b[" << i << "])";
  o << ");\n}\n\n";
  return o.str();
}

// Identifiers of code text, comments left out.
std::set<std::string> identifiers(const std::string &text) {
  std::set<std::string> ids;
  for (size_t i = 0; i < text.size();) {
    const char c = text[i];
    if (c == '/' && i + 1 < text.size() && text[i + 1] == '/') {
      i = text.find('\n', i);
      if (i == std::string::npos) break;
      continue;
    }
    if (c == '"') {
      for (++i; i < text.size() && text[i] != '"'; ++i)
        if (text[i] == '\\') ++i;
      ++i;
      continue;
    }
    if (std::isalpha((unsigned char)c) || c == '_') {
      size_t j = i;
      while (j < text.size() && (std::isalnum((unsigned char)text[j]) || text[j] == '_')) ++j;
      ids.insert(text.substr(i, j - i));
      i = j;
      continue;
    }
    if (std::isdigit((unsigned char)c)) {  // a literal such as 0xffu: not an identifier
      while (i < text.size() && std::isalnum((unsigned char)text[i])) ++i;
      continue;
    }
    ++i;
  }
  return ids;
}

}  // namespace

void Prologue::def(const std::string &type, const std::string &name, const Expr &init, const std::string &comment) {
  entries.push_back({name, type + " " + name + " = " + init.str() + ";", comment});
}
void Prologue::stmt(const std::string &code, const std::string &comment) { entries.push_back({"", code, comment}); }

KernelGen::KernelGen(const Plan &plan, Snippets &h)
    : p(plan),
      l(plan.launch),
      e(1),
      helpers(h),
      V(Expr::named("V", plan.spec.v)),
      KS(Expr::named("KS", plan.shape.k)),
      THREADS(Expr::named("THREADS", plan.launch.threads)),
      lane(Expr::var("lane", 0, 31)),
      warp(Expr::var("warp", 0, plan.launch.threads / 32 - 1)),
      gid(Expr::var("gid", 0, 7)),
      tig(Expr::var("tig", 0, 3)),
      tid_x(Expr::var("threadIdx.x", 0, plan.launch.threads - 1)),
      n_base(Expr::var("n_base", 0, std::nullopt, plan.spec.bsn)),
      nw(plan.launch.b_resident()
             ? Expr::named("nw", 0)
             : Expr::var("nw", 0, (plan.launch.warps_per_group - 1) * plan.launch.warp_cols, plan.launch.warp_cols)),
      blk(Expr::var("blk", 0)) {
  helpers.use("u32");  // operand registers and mma wrappers
}

bool KernelGen::all_rhs_nibbles() const {
  for (const Chunk &c : p.rhs)
    if (c.storage_bits != 4) return false;
  return true;
}

const MmaAtom &KernelGen::atom(bool a_signed, bool b_signed) const {
  const MmaAtom *a = find_mma_atom(p.shape, p.native_bits, a_signed, b_signed);
  if (!a) llvm::report_fatal_error(llvm::Twine("codegen: no mma atom for ") + p.shape.str() + " int" + S(p.native_bits));
  return *a;
}

const MmaAtom &KernelGen::term_atom(int g, int j) const {
  const bool gs = p.groups[g].is_signed, rs = p.rhs[j].is_signed;
  return dense_on_m() ? atom(rs, gs) : atom(gs, rs);
}

int KernelGen::lhs_regs() const { return dense_on_m() ? atom(true, true).b_regs : atom(true, true).a_regs; }

std::string KernelGen::acc(int g, int j, int t) { return "acc_g" + S(g) + "_r" + S(j) + "_t" + S(t); }

Expr KernelGen::call(const std::string &helper, const std::vector<Expr> &args) {
  helpers.use(helper);
  return cg::call(helper, args);
}

Expr KernelGen::let(const std::string &type, const std::string &name, const Expr &init, const std::string &comment) {
  if (init.literal()) return init;
  e.decl(type, name, init, comment);
  return Expr::like(name, init);
}

void KernelGen::mma(const MmaAtom &a, const std::string &acc, const std::string &A, const std::string &B) {
  helpers.add("// ---- mma.sync wrappers used by this kernel (compiler/mma_atoms.cpp) ----", a.wrapper, wrapper_source(a),
              {"u32"});
  helpers.use(a.wrapper);
  e.line(std::string(a.wrapper) + "(" + acc + ", " + A + ", " + B + ");");
}

Expr KernelGen::cvta_shared(const Expr &ptr) { return cast("unsigned", cg::call("__cvta_generic_to_shared", {ptr})); }

std::string KernelGen::cp_async16_text(const Expr &shared_addr, const Expr &src) {
  return "asm volatile(\"cp.async.ca.shared.global [%0], [%1], 16;\\n\" :: \"r\"(" + shared_addr.str() + "), \"l\"(" +
         src.str() + "));";
}

void KernelGen::cp_async16(const Expr &shared_addr, const Expr &src) { e.line(cp_async16_text(shared_addr, src)); }

void KernelGen::ldmatrix_x4_trans(const Expr &addr) {
  e.line("asm volatile(\"ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];\\n\"");
  e.line("             : \"=r\"(r0), \"=r\"(r1), \"=r\"(r2), \"=r\"(r3)");
  e.line("             : \"r\"(" + addr.str() + "));");
}

// ---- accumulators ---------------------------------------------------------------------------

void KernelGen::for_each_accumulator(const std::function<void(const std::string &)> &f) const {
  for (size_t g = 0; g < p.groups.size(); ++g)
    for (size_t j = 0; j < p.rhs.size(); ++j)
      for (int t = 0; t < tiles(); ++t) f(acc(int(g), int(j), t));
}

void KernelGen::declare_accumulators(const std::string &comment) {
  if (!comment.empty()) e.comment(comment);
  for_each_accumulator([&](const std::string &a) { e.decl("int", a + "[" + S(nc()) + "]", Expr("{}")); });
}

void KernelGen::zero_accumulators() {
  for_each_accumulator([&](const std::string &a) {
    e.line("#pragma unroll");
    e.line("for (int i = 0; i < " + S(nc()) + "; ++i) " + a + "[i] = 0;");
  });
}

// ---- operand registers ------------------------------------------------------------------------

Expr KernelGen::load_reg(const std::string &plane, const Chunk &c, const Expr &idx) {
  const Expr base(plane);
  if (c.storage_bits == p.native_bits) {
    const Expr ptr = c.storage_bits == 8 ? offset(base, idx) : base + idx / 2;
    return cg::call("__ldg", {cast("const u32 *", ptr)});
  }
  helpers.use("u16");
  const Expr half = cg::call("__ldg", {cast("const u16 *", base + idx / 2)});
  if (p.nibble_prescale) return call("mc_widen4to8_hi", {half});
  return call("mc_widen4to8", {half, c.is_signed ? "true" : "false"});
}

LhsSource KernelGen::global_lhs(const Expr &s_or_kb) {
  return [this, s_or_kb](int li, const Expr &r, const Expr &k0) {
    const Expr idx = sddmm() ? cast("long long", blk * V + r) * Expr("ldk") + s_or_kb + k0 : s_or_kb * V + r * KS + k0;
    return load_reg("a" + S(li), p.lhs[li], idx);
  };
}

Expr KernelGen::lhs_stack_reg(int g, const Expr &vrow, const Expr &k0, const LhsSource &src) {
  const StackGroup &grp = p.groups[g];
  Expr v("0u");
  for (int slot = int(grp.lhs_chunks.size()) - 1; slot >= 0; --slot)
    v = select(eq(vrow / V, slot), src(grp.lhs_chunks[slot], vrow % V, k0), v);
  return v;
}

void KernelGen::lhs_frags(const std::string &name, bool declare, const LhsSource &src) {
  const MmaShape &sh = p.shape;
  const int n = lhs_regs(), half = sh.k / 2;
  for (size_t g = 0; g < p.groups.size(); ++g) {
    const std::string G = name + S(g);
    if (declare)
      e.decl_only("u32", G + "[" + S(n) + "]",
             "group " + S(g) + ": lhs chunks stacked on the mma's " + (dense_on_m() ? "N" : "M") + " side");
    for (int i = 0; i < n; ++i) {
      Expr vrow = gid, k0 = tig * kpr();
      if (dense_on_m()) {
        if (sh.m == 16) k0 = k0 + half * i;
      } else if (sh.m == 16) {
        vrow = gid + 8 * (i & 1);
        k0 = k0 + half * (i >> 1);
      }
      e.assign(G + "[" + S(i) + "]", lhs_stack_reg(int(g), vrow, k0, src));
    }
  }
}

void KernelGen::int8_mmas(const std::function<std::string(int, int)> &rhs, const std::string &lhs) {
  for (const Term &term : p.terms) {
    if (term.slot != 0) continue;  // one mma per (group, rhs chunk)
    const MmaAtom &a = atom(p.rhs[term.rhs_chunk].is_signed, p.groups[term.group].is_signed);
    for (int t = 0; t < tiles(); ++t) mma(a, acc(term.group, term.rhs_chunk, t), rhs(term.rhs_chunk, t), lhs + S(term.group));
  }
}

void KernelGen::ldmatrix_frags_and_mmas(const std::function<Expr(int, int)> &addr, const std::string &lhs) {
  if (all_rhs_nibbles()) {
    for (size_t j = 0; j < p.rhs.size(); ++j) {
      const std::string sg = p.rhs[j].is_signed ? "true" : "false";
      for (int q = 0; q < tiles() / 2; ++q) {
        const std::string R0 = "rf" + S(j) + "_t" + S(2 * q), R1 = "rf" + S(j) + "_t" + S(2 * q + 1);
        e.declare(R0);
        e.declare(R1);
        e.line("u32 " + R0 + "[4], " + R1 + "[4];",
               "rhs chunk " + S(j) + ": columns nw + " + (q ? S(32 * q) + " + " : "") + "4*gid + {0,1} and {2,3}");
        auto s = e.scope();
        e.decl_only("u32", "r0, r1, r2, r3", "packed nibbles: 4 columns x 2 k rows each");
        ldmatrix_x4_trans(addr(int(j), 16 * q));
        for (int c = 0; c < 4; ++c) {
          const std::string R = c / 2 ? R1 : R0;
          // nibble_prescale: value << 4, no sign extension (the epilogue shifts back)
          auto col = [&](const char *x, const char *y) {
            if (p.nibble_prescale) return call("mc_nib_col_hi", {x, y, c});
            return call("mc_nib_col", {x, y, c, sg});
          };
          e.assign(R + "[" + S(c % 2) + "]", col("r0", "r1"));
          e.assign(R + "[" + S(c % 2 + 2) + "]", col("r2", "r3"));
        }
      }
    }
  } else {
    for (int t = 0; t < tiles(); ++t)
      for (size_t j = 0; j < p.rhs.size(); ++j) {
        const std::string R = "rf" + S(j) + "_t" + S(t);
        e.decl_only("u32", R + "[4]",
               "rhs chunk " + S(j) + ": columns nw + " + (t ? S(16 * t) + " + " : "") +
                   "{2*gid, 2*gid+1}, k rows {2t, 2t+1, 8+2t, 9+2t} (+16)");
        auto s = e.scope();
        e.decl_only("u32", "r0, r1, r2, r3");
        ldmatrix_x4_trans(addr(int(j), 16 * t));
        e.assign(R + "[0]", cg::call("__byte_perm", {"r0", "r1", "0x6420"}));
        e.assign(R + "[1]", cg::call("__byte_perm", {"r0", "r1", "0x7531"}));
        e.assign(R + "[2]", cg::call("__byte_perm", {"r2", "r3", "0x6420"}));
        e.assign(R + "[3]", cg::call("__byte_perm", {"r2", "r3", "0x7531"}));
      }
  }
  int8_mmas([](int j, int t) { return "rf" + S(j) + "_t" + S(t); }, lhs);
}

// The shared-memory row (stored slot) that holds k-position kk of the stride: the inverse of
// the plan's column shuffle (the builder stored the column of k-position shuffle[s] at slot
// s). Folded to base + slot when kk's group of G positions is known now.
Expr KernelGen::slot_of(const Expr &kk) const {
  if (!p.shuffle_b) return kk;
  const int G = int(p.shuffle.size());
  std::vector<int> inv(G);
  for (int s = 0; s < G; ++s) inv[p.shuffle[s]] = s;
  const Expr *base = kk.add_base() ? kk.add_base() : &kk;
  const long long c = kk.add_base() ? kk.add_offset() : 0;
  if (c >= 0 && base->multiple() % G == 0) return *base + ((c & ~(long long)(G - 1)) + inv[c & (G - 1)]);
  unsigned long long table = 0;  // entry i (4 bits) at bits 4i
  for (int i = 0; i < G; ++i) table |= (unsigned long long)inv[i] << (4 * i);
  std::ostringstream h;
  h << "0x" << std::hex << table << "ull";
  return (kk & ~(G - 1)) | cast("int", (Expr(h.str()) >> ((kk & (G - 1)) * 4)) & 15);
}

Expr KernelGen::rhs_reg(int j, const Expr &k0, const Expr &col, const Expr &kb) {
  const Chunk &c = p.rhs[j];
  if (sddmm()) return load_reg("b" + S(j), c, cast("long long", col) * Expr("ldk") + kb + k0);
  std::vector<Expr> elems;
  for (int x = 0; x < kpr(); ++x) {
    const Expr row = slot_of(k0 + x);
    elems.push_back(call(c.storage_bits == 8 ? "mc_elem8" : "mc_elem4",
                         {addr(at(at("sb" + S(j), row), 0)), col, c.is_signed ? "true" : "false"}));
  }
  return call(p.native_bits == 8 ? "mc_pack8" : "mc_pack4", elems);
}

void KernelGen::generic_rhs_frags_and_mmas(const std::string &lhs, const Expr &kb) {
  const MmaShape &sh = p.shape;
  const int half = sh.k / 2;
  const MmaAtom &any = atom(true, true);
  if (dense_on_m()) {
    for (size_t j = 0; j < p.rhs.size(); ++j) {
      const std::string R = "rf" + S(j);
      e.decl_only("u32", R + "[" + S(any.a_regs) + "]", "rhs chunk " + S(j) + " transposed: row = dense column");
      for (int i = 0; i < any.a_regs; ++i) {
        // SpMM: the dense column in shared memory; SDDMM: the B column of this row's vector
        const Expr row = sddmm() ? Expr("cv" + S(sh.m == 16 ? (i & 1) : 0)) : nw + gid + (sh.m == 16 ? 8 * (i & 1) : 0);
        const Expr k0 = tig * kpr() + (sh.m == 16 ? half * (i >> 1) : 0);
        e.assign(R + "[" + S(i) + "]", rhs_reg(int(j), k0, row, kb));
      }
    }
    for (const Term &t : p.terms) {
      if (t.slot != 0) continue;  // one mma per (group, rhs chunk)
      mma(term_atom(t.group, t.rhs_chunk), acc(t.group, t.rhs_chunk, 0), "rf" + S(t.rhs_chunk), lhs + S(t.group));
    }
    return;
  }
  for (size_t j = 0; j < p.rhs.size(); ++j)
    for (int t = 0; t < tiles(); ++t) {
      const std::string R = "rf" + S(j) + "_t" + S(t);
      e.decl_only("u32", R + "[" + S(any.b_regs) + "]",
             "rhs chunk " + S(j) + ", dense columns nw" + (t ? " + " + S(8 * t) : "") + " .. nw + " + S(8 * t + 7));
      for (int i = 0; i < any.b_regs; ++i) {
        const Expr k0 = tig * kpr() + (sh.m == 16 ? half * i : 0);
        e.assign(R + "[" + S(i) + "]", rhs_reg(int(j), k0, sddmm() ? Expr("cv" + S(t)) : nw + 8 * t + gid, kb));
      }
    }
  for (const Term &term : p.terms) {
    if (term.slot != 0) continue;
    for (int t = 0; t < tiles(); ++t)
      mma(term_atom(term.group, term.rhs_chunk), acc(term.group, term.rhs_chunk, t), lhs + S(term.group),
          "rf" + S(term.rhs_chunk) + "_t" + S(t));
  }
}

// ---- epilogue -----------------------------------------------------------------------------------

Expr KernelGen::store_value(const Expr &v, const Expr &row, const Expr &col) {
  switch (p.spec.out) {
    case OutType::Int32: return cast("int", v);
    case OutType::Int64: return v;
    default: break;
  }
  return rounded(
      call("mc_dequant", {v, int(p.spec.scale), "alpha", "row_scale", "col_scale", int(p.spec.bias), "bias", row, col}));
}

Expr KernelGen::rounded(const Expr &x) {
  if (p.spec.out == OutType::F32) return cg::call("__double2float_rn", {x});
  return call(p.spec.out == OutType::F16 ? "mc_to_f16" : "mc_to_bf16", {x});
}

void KernelGen::epilogue() {
  const MmaShape &sh = p.shape;
  const int n = nc();
  const bool i64 = p.spec.out != OutType::Int32;
  const std::string T = i64 ? "long long" : "u32";
  const bool int8m = l.family == KernelFamily::SpmmRing || l.b_resident();
  const bool nib = int8m && all_rhs_nibbles();
  // Register i of the accumulator tile: its mma row and column.
  auto crow = [&](const Expr &i) { return sh.m == 16 ? gid + 8 * (i >> 1) : gid; };
  auto ccol = [&](const Expr &i) { return sh.m == 16 ? tig * 2 + (i & 1) : tig * 2 + i; };
  e.comment("---- epilogue: shift each term, sum, exchange stacked slots, write V rows ----");
  // The int8 kernels' row-major C: flat pair stores from the lane's pointer (a V of 1 has no
  // second row: its elements go one by one). Their float outputs, in either order, read the
  // lane's two rows' scale and bias once, and each tile's two columns' once (where they lie in C).
  const bool flat_rows = int8m && !p.spec.c_col;
  const bool flt = is_float(p.spec.out);
  const bool flat_floats = int8m && flt;
  const bool rowcol = p.spec.scale == Scale::RowCol;
  // C's element: its type and log2 of its size in bytes.
  const std::string CE = p.spec.out == OutType::F32 ? "float"
                         : flt                      ? "unsigned short"
                         : i64                      ? "long long"
                                                    : "int";
  const int ce_log2 = p.spec.out == OutType::Int64 ? 3 : (p.spec.out == OutType::F16 || p.spec.out == OutType::BF16) ? 1 : 2;
  const Expr M("M"), N("N");
  if (flat_rows || flat_floats) {
    const Expr vidx0 = let("const int", "vidx0", tig * 2, "the lane's first row in the vector (and the next)");
    const Expr col_lane = let("const int", "col_lane", n_base + nw + (nib ? 4 * gid : 2 * gid),
                              "the lane's first column in tile 0");
    if (flat_rows) {
      e.decl("const bool", "pairs",
             land(land(land(lt(vidx0 + 1, V), lt(blk * V + (V - 1), M)), lt(n_base + nw + (l.warp_cols - 1), N)),
                  Expr("(((unsigned long long)c | ((unsigned)N << " + S(ce_log2) + ")) & " + S((2 << ce_log2) - 1) +
                       ") == 0")),
             "the warp's tiles lie in C, their pairs aligned");
      e.decl(CE + " *", "c_lane", Expr("c") + cast("long long", blk * V + vidx0) * N + col_lane, "the lane's first element");
    } else {
      e.decl("const int", "row0", blk * V + vidx0, "the lane's first row in C");
      e.decl("const bool", "second", land(lt(vidx0 + 1, V), lt(Expr("row0") + 1, M)), "and its second");
    }
    if (flt && (rowcol || p.spec.bias == Bias::Row))
      for (int r = 0; r < 2; ++r) {
        const Expr row = blk * V + vidx0 + r, in_c = land(lt(vidx0 + r, V), lt(row, M));
        if (rowcol)
          e.decl("const double", "rs" + S(r), select(in_c, at("row_scale", row), Expr("0.0f")), "row " + S(r) + "'s scale");
        if (p.spec.bias == Bias::Row) e.decl("const double", "rb" + S(r), select(in_c, at("bias", row), Expr("0.0f")), "its bias");
      }
  }
  // Register r of an int8 kernel's tile (row vidx0 + (r & 1), column col_lane + off + (r >> 1))
  // as stored in C: its float value, declared here from the scales and bias read once (the same
  // operations as mc_dequant), or its integer.
  auto stored_values = [&](int off) {
    std::vector<std::string> val(static_cast<size_t>(nc()), std::string());
    if (!flt) {
      for (int r = 0; r < nc(); ++r) val[size_t(r)] = "(" + CE + ")tot[" + S(r) + "]";
      return val;
    }
    for (int j = 0; j < 2; ++j) {
      const Expr col = Expr("col_lane") + (off + j), in_c = lt(col, N);
      if (rowcol)
        e.decl("const double", "cs" + S(j), select(in_c, at("col_scale", col), Expr("0.0f")), "column " + S(j) + "'s scale");
      if (p.spec.bias == Bias::Col) e.decl("const double", "cb" + S(j), select(in_c, at("bias", col), Expr("0.0f")), "its bias");
    }
    for (int r = 0; r < nc(); ++r) {
      const std::string rr = S(r & 1), cc = S(r >> 1);
      const Expr x = call("mc_dequant_v", {"tot[" + S(r) + "]", int(p.spec.scale), "alpha", rowcol ? "rs" + rr : "0.0",
                                           rowcol ? "cs" + cc : "0.0", int(p.spec.bias),
                                           p.spec.bias == Bias::Row   ? "rb" + rr
                                           : p.spec.bias == Bias::Col ? "cb" + cc
                                                                      : "0.0"});
      val[size_t(r)] = "v" + S(r);
      e.decl("const " + CE, val[size_t(r)], rounded(x));
    }
    return val;
  };
  // Two adjacent values of C, one store at o (two 16-bit values: the lower address in the low half).
  auto store_pair = [&](const std::string &o, const std::string &a, const std::string &b) {
    if (ce_log2 == 1) return "*(unsigned *)" + o + " = (unsigned)" + a + " | ((unsigned)" + b + " << 16);";
    const std::string T2 = flt ? "float2" : i64 ? "longlong2" : "int2";
    return "*(" + T2 + " *)" + o + " = make_" + T2 + "(" + a + ", " + b + ");";
  };
  for (int t = 0; t < tiles(); ++t) {
    auto tile = e.scope();
    e.decl(T, "tot[" + S(n) + "]", Expr("{}"), i64 ? "int64" : "int32, wrapping");
    // 1. the terms: each accumulator shifted by its chunk pair's bit offset (its slot's)
    e.unrolled("i", n, "", [&](const Expr &i) {
      Expr vidx = dense_on_m() ? ccol(i) : crow(i);
      Expr slot = vidx / V;
      if (!slot.known()) {  // stacked slots: register i's V row and slot
        vidx = let("const int", "vidx", vidx);
        slot = let("const int", "slot", vidx / V);
      }
      for (size_t g = 0; g < p.groups.size(); ++g)
        for (size_t j = 0; j < p.rhs.size(); ++j) {
          const std::vector<int> &chunks = p.groups[g].lhs_chunks;
          const int slots = int(chunks.size());
          // The shift of this group's slot (below `slots` where the term is added).
          Expr shift = p.lhs[chunks[slots - 1]].lo_bit + p.rhs[j].lo_bit;
          for (int s = slots - 2; s >= 0; --s) shift = select(eq(slot, s), p.lhs[chunks[s]].lo_bit + p.rhs[j].lo_bit, shift);
          int pre = 0;  // the term's accumulator scale (the same for every slot of the group)
          for (const Term &term : p.terms)
            if (term.group == int(g) && term.rhs_chunk == int(j)) pre = p.term_prescale(term);
          const Expr a = at(acc(int(g), int(j), t), i) >> pre;
          e.guarded(lt(slot, slots), "tot[i] += " + (cast(T, a) << shift).str() + ";");
        }
    });
    // 2. the stacked slots' exchange
    for (const ExchangeStep &x : p.exchange) {
      if (x.kind == ExchangeStep::Reg) {
        auto s = e.scope("", x.str());
        e.decl_only(T, "o[" + S(n) + "]");
        e.line("#pragma unroll");
        e.line("for (int i = 0; i < " + S(n) + "; ++i) o[i] = tot[i ^ " + S(x.mask) + "];");
        e.line("#pragma unroll");
        e.line("for (int i = 0; i < " + S(n) + "; ++i) tot[i] += o[i];");
      } else {
        e.line("#pragma unroll");
        e.line("for (int i = 0; i < " + S(n) + "; ++i) tot[i] += __shfl_xor_sync(0xffffffffu, tot[i], " + S(x.mask) + ");",
               x.str());
      }
    }
    // 3. the V rows
    if (flat_rows) {
      // Register r of the tile: row vidx0 + (r & 1), column col_lane + off + (r >> 1). Where the
      // warp's whole tile lies in C and C is aligned (`pairs`), registers r and r + 2 make one 8-
      // or 16-byte store at a constant offset from the lane's pointer; at C's edges each element
      // is stored where it lies in C. Flat and short: ptxas lays every copy of the epilogue (one
      // in each ring slot) inline, and the longer form cost the ring kernels instruction-fetch
      // stalls (bench/NOTES.md, Session 22: L4-R8 prefill 1.25x faster).
      const std::string U = i64 ? "unsigned long long" : "unsigned";
      const int off = nib ? 32 * (t / 2) + 2 * (t % 2) : 16 * t;
      auto at_reg = [&](int r) { return Expr("c_lane") + ((r & 1) ? N + (off + (r >> 1)) : Expr(off + (r >> 1))); };
      const std::vector<std::string> val = stored_values(off);
      e.open("if (pairs)");
      for (int i = 0; i < 2; ++i) {
        const std::string o = "(" + at_reg(i).str() + ")", a = val[i], b = val[i + 2];
        if (!accumulate_c.empty()) {  // a red.global.add each: no load, nothing to wait for
          e.open("if (" + accumulate_c + ")", "add into C: the earlier panels' sums (this block's, a barrier since) or the cluster's zeros");
          e.line("atomicAdd((" + U + " *)" + o + ", (" + U + ")tot[" + S(i) + "]), atomicAdd((" + U + " *)" + o + " + 1, (" + U +
                 ")tot[" + S(i + 2) + "]);");
          e.close_open("else");
        }
        e.line(store_pair(o, a, b));
        if (!accumulate_c.empty()) e.close();
      }
      e.close_open("else");
      e.comment("C's edge: each element where it lies in C");
      for (int r = 0; r < n; ++r) {
        const Expr vidx = Expr("vidx0") + (r & 1);
        const Expr cond = land(land(lt(vidx, V), lt(blk * V + vidx, M)), lt(Expr("col_lane") + (off + (r >> 1)), N));
        const std::string o = at_reg(r).str();
        e.guarded(cond, accumulate_c.empty() ? "*(" + o + ") = " + val[r] + ";"
                                             : "{ if (" + accumulate_c + ") atomicAdd((" + U + " *)(" + o + "), (" + U +
                                                   ")tot[" + S(r) + "]); else *(" + o + ") = " + val[r] + "; }");
      }
      e.close();
      continue;
    }
    if (flat_floats) {  // +ccol, float: a column's rows row0 and row0 + 1 (registers 2j, 2j + 1) adjacent in C
      const int off = nib ? 32 * (t / 2) + 2 * (t % 2) : 16 * t;
      const std::vector<std::string> val = stored_values(off);
      for (int j = 0; j < 2; ++j) {
        const Expr col = Expr("col_lane") + (off + j);
        auto guard = e.scope("if (" + land(land(lt("vidx0", V), lt("row0", M)), lt(col, N)).str() + ")",
                             "column col_lane + " + S(off + j));
        const std::string o = "o" + S(j);
        e.decl(CE + " *", o, Expr("c") + cast("long long", col) * M + Expr("row0"));
        const std::string a = val[size_t(2 * j)], b = val[size_t(2 * j + 1)];
        e.open("if (second && ((unsigned long long)" + o + " & " + S((2 << ce_log2) - 1) + ") == 0)");
        e.line(store_pair("(" + o + ")", a, b));
        e.close_open("else");
        e.line(o + "[0] = " + a + ";");
        e.guarded(Expr("second"), o + "[1] = " + b + ";");
        e.close();
      }
      continue;
    }
    if (int8m && !flt) {  // +ccol (the row-major C took the flat form above)
      // Two registers adjacent in C, one 8- or 16-byte store: a column's rows vidx, vidx + 1
      // (registers 2j, 2j + 1; four lanes write a V=8 column's 32 bytes). (The flat form ran 7-8 %
      // slower here: bench/NOTES.md, Session 22.)
      const std::string T2 = i64 ? "longlong2" : "int2", E = i64 ? "long long" : "int";
      const std::string U = i64 ? "unsigned long long" : "unsigned";
      const Expr col_base =
          nib ? n_base + nw + (32 * (t / 2) + 2 * (t % 2)) + 4 * gid : n_base + nw + 16 * t + 2 * gid;
      const Expr vidx = let("const int", "vidx", tig * 2);
      const Expr row = let("const int", "row", blk * V + vidx);
      const Expr col0 = let("const int", "col0", col_base);
      e.line("#pragma unroll");
      auto loop = e.scope("for (int j = 0; j < 2; ++j)", "column col0 + j: registers 2j (row) and 2j + 1 (row + 1)");
      e.declare("j");
      const Expr j = Expr::var("j", 0, 1);
      auto guard = e.scope("if (" + land(land(lt(vidx, V), lt(row, M)), lt(col0 + j, N)).str() + ")");
      e.decl(E + " *", "o", Expr("c") + cast("long long", col0 + j) * M + row);
      // o[0] always, o[1] where row + 1 lies in the vector and in C (the panels' adds instead when
      // accumulating).
      const std::string a = "tot[2 * j]", b = "tot[2 * j + 1]";
      const Expr second = land(lt(vidx + 1, V), lt(row + 1, M));
      const Expr aligned = eq(Expr::code("((unsigned long long)o & (sizeof(" + T2 + ") - 1))", cg::kPrimary), 0);
      if (!accumulate_c.empty()) {  // a red.global.add each: no load, nothing to wait for
        e.open("if (" + accumulate_c + ")", "add into C: the earlier panels' sums (this block's, a barrier since) or the cluster's zeros");
        e.line("atomicAdd((" + U + " *)o, (" + U + ")" + a + ");");
        e.guarded(second, "atomicAdd((" + U + " *)o + 1, (" + U + ")" + b + ");");
        e.line("continue;");
        e.close();
      }
      e.open("if (" + land(second, aligned).str() + ")");
      e.line("*(" + T2 + " *)o = make_" + T2 + "((" + E + ")" + a + ", (" + E + ")" + b + ");");
      e.close_open("else");
      e.line("o[0] = (" + E + ")" + a + ";");
      e.guarded(second, "o[1] = (" + E + ")" + b + ";");
      e.close();
      continue;
    }
    e.unrolled("i", n, "", [&](const Expr &i) {
      const Expr vidx = let("const int", "vidx", dense_on_m() ? ccol(i) : crow(i));
      const Expr col = let("const int", "col", [&]() -> Expr {
        if (nib)  // tile pair q: mma row m holds the warp's column 32q + 4 * (m % 8) + 2 * (t % 2) + m / 8
          return n_base + nw + (32 * (t / 2) + 2 * (t % 2)) + 4 * gid + (i >> 1);
        if (int8m)  // mma row m holds the warp's column 2 * (m % 8) + m / 8 (ldmatrix.trans order)
          return n_base + nw + 16 * t + 2 * gid + (i >> 1);
        if (dense_on_m()) return n_base + nw + 16 * t + crow(i);
        return n_base + nw + 8 * t + ccol(i);
      }());

      if (sddmm()) {  // col is the vector's position in this row-block's list
        const Expr begin("begin"), out_stride("out_stride");
        const Expr q = let("const int", "q", begin + col, "the vector's slot");
        const Expr cond = land(land(lt(vidx, V), lt(q, "qend")), lt(blk * V + vidx, M));
        const Expr where = select("bcrs_ptr", (cast("long long", at("bcrs_ptr", blk)) + q - begin) * V + vidx,
                               cast("long long", q / out_stride) * out_stride * V + vidx * out_stride + q % out_stride);
        const Expr value = store_value("tot[i]", blk * V + vidx, cg::call("max", {at("col_idx", q), 0}));
        e.guarded(cond, at("c", where).str() + " = " + value.str() + ";");
      } else {
        const Expr row = let("const int", "row", blk * V + vidx);
        const Expr cond = land(land(lt(vidx, V), lt(row, M)), lt(col, N));
        const Expr at_c = p.spec.c_col ? cast("long long", col) * M + row : cast("long long", row) * N + col;
        e.guarded(cond, at("c", at_c).str() + " = " + store_value("tot[i]", row, col).str() + ";");
      }
    });
  }
}

// ---- prologues and assembly -------------------------------------------------------------------

void spmm_row_block_prologue(KernelGen &g, KernelFrame &f, int warps_per_group) {
  const Plan &p = g.p;
  Prologue &pr = f.prologue;
  pr.def("constexpr int", "KS", p.shape.k, "SR-BCRS stride = mma k");
  pr.def("constexpr int", "V", p.spec.v, "rows per block vector");
  pr.def("constexpr int", "BSN", p.spec.bsn, "dense columns per thread block");
  pr.def("constexpr int", "THREADS", p.launch.threads);
  pr.def("const int", "blk", "blockIdx.y", "row-block");
  pr.def("const int", "n_base", Expr("blockIdx.x") * Expr::named("BSN", p.spec.bsn), "first dense column of this block");
  pr.def("const int", "warp", Expr("threadIdx.x") >> 5);
  pr.def("const int", "lane", Expr("threadIdx.x") & 31);
  pr.def("const int", "gid", Expr("lane") >> 2, "mma fragment coordinates: group");
  pr.def("const int", "tig", Expr("lane") & 3, "and thread in group");
  const Expr warp = Expr::var("warp", 0, p.launch.threads / 32 - 1), WN = p.launch.warp_cols;
  pr.def("const int", "nw", (warp % warps_per_group) * WN,
         p.launch.warp_groups > 1 ? "this warp's first column in the block (the warp groups share columns)"
                                  : "this warp's first column in the block");
  pr.def("const int", "begin", "row_ptr[2 * blk]", "the row-block's first slot");
  pr.def("const int", "end", "begin + (row_ptr[2 * blk + 1] - begin + KS - 1) / KS * KS",
         "its end, rounded up to whole strides");
}

void sddmm_prologue(KernelGen &g, KernelFrame &f) {
  const Plan &p = g.p;
  Prologue &pr = f.prologue;
  pr.def("constexpr int", "KS", p.shape.k, "k per mma step");
  pr.def("constexpr int", "V", p.spec.v, "rows per block vector");
  pr.def("constexpr int", "BSN", p.spec.bsn, "sampled vectors per thread block");
  pr.def("const int", "blk", "blockIdx.y", "row-block");
  pr.def("const int", "n_base", Expr("blockIdx.x") * Expr::named("BSN", p.spec.bsn),
         "first vector of this block in the row-block's list");
  pr.def("const int", "warp", Expr("threadIdx.x") >> 5);
  pr.def("const int", "lane", Expr("threadIdx.x") & 31);
  pr.def("const int", "gid", Expr("lane") >> 2, "mma fragment coordinates: group");
  pr.def("const int", "tig", Expr("lane") & 3, "and thread in group");
  pr.def("const int", "nw", Expr("warp") * p.launch.warp_cols, "this warp's first vector in the block");
  pr.def("const int", "begin", "row_ptr[2 * blk]", "the row-block's first slot");
  pr.def("const int", "qend", "row_ptr[2 * blk + 1]", "and the end of its vectors");
  pr.stmt("if (begin + n_base >= qend) return;", "no vectors for this block");
}

std::string plan_banner(const Plan &p) {
  std::string src = "// Generated by Magicube JIT (" + std::string(kGeneratorVersion) + "). Do not edit.\n//\n";
  std::istringstream plan_text(p.str());
  for (std::string line; std::getline(plan_text, line);) {
    size_t value = line.find_first_not_of(' ');
    value = line.find(' ', value == std::string::npos ? 0 : value);
    value = value == std::string::npos ? 0 : line.find_first_not_of(' ', value);
    if (value == std::string::npos || value > 40) value = 0;
    while (line.size() > 117) {
      size_t cut = line.rfind(' ', 117);
      if (cut == std::string::npos || cut <= value) break;
      src += "// " + line.substr(0, cut) + "\n";
      line = std::string(value, ' ') + line.substr(cut + 1);
    }
    src += "// " + line + "\n";
  }
  return src;
}

llvm::Expected<std::string> assemble(const Plan &p, const KernelFrame &f, KernelGen &g) {
  // The prologue entries the body names, and those they name, in order.
  std::set<std::string> needed = identifiers(g.e.str());
  std::vector<bool> keep(f.prologue.entries.size(), false);
  for (size_t k = f.prologue.entries.size(); k-- > 0;) {
    const Prologue::Entry &en = f.prologue.entries[k];
    if (!en.name.empty() && !needed.count(en.name)) continue;
    keep[k] = true;
    for (const std::string &id : identifiers(en.code))
      if (id != en.name) needed.insert(id);
  }
  for (const Prologue::Entry &en : f.prologue.entries)
    if (!en.name.empty()) g.e.declare(en.name);  // (checked against the body's names too)

  std::vector<std::string> errors = g.e.errors();
  for (const std::string &err : g.helpers.errors()) errors.push_back(err);
  if (!errors.empty()) {
    std::string all;
    for (const std::string &err : errors) all += (all.empty() ? "" : "; ") + err;
    return llvm::createStringError(llvm::inconvertibleErrorCode(), "codegen of " + to_string(p.spec) + ": " + all);
  }

  std::string src = plan_banner(p);
  src += "\n" + g.helpers.text();

  const std::string rule = "// " + std::string(87, '-') + "\n";
  src += rule;
  for (const std::string &d : f.doc) src += (d.empty() ? "//" : "// " + d) + "\n";
  src += rule;
  src += "extern \"C\" __global__ void __launch_bounds__(" + std::to_string(p.launch.threads) +
         (f.min_blocks ? ", " + std::to_string(f.min_blocks) : "") + ")\n";
  // The parameter list is the plan's (Plan::launch.params): the runtime packs arguments from
  // the same list.
  src += p.kernel_name() + "(\n";
  const auto &ps = p.launch.params;
  for (size_t i = 0; i < ps.size(); ++i)
    src += "    " + ps[i].type + " " + ps[i].name + (i + 1 < ps.size() ? "," : "") + "  // " + ps[i].comment + "\n";
  src += ") {\n";
  Emitter pro(1);
  for (size_t k = 0; k < f.prologue.entries.size(); ++k)
    if (keep[k]) pro.line(f.prologue.entries[k].code, f.prologue.entries[k].comment);
  src += pro.str() + "\n" + g.e.str() + "}\n";
  return src;
}


int KernelGen::slice_row(const Chunk &c) const { return slice_row_bytes(p, c); }

Expr KernelGen::slice_swizzle(const Expr &k, int units) {
  switch (units) {
    case 1: case 3: return 0;  // 3 units: row k starts in bank group 3k mod 8 already
    case 2: return (k >> 2) & 1;
    case 4: return (k >> 1) & 3;
    default: return k & 7;  // 8 units
  }
}

void KernelGen::declare_slice_planes() {
  if (p.rhs.size() > 1) e.decl("const int", "KR", Expr("max(K, 8)"), "slice rows: pads gather rows 0..7");
  // Shared-window addresses (what cp.async and ldmatrix take), converted once: the window's base
  // (the CTA's cluster id << 24 + the dynamic area's offset, on sm_90) recomputed at each use cost
  // 5 instructions a ring slot (S2UR, UMOV, UIADD3, ULEA, IMAD).
  // Through a shuffle, which ptxas does not rematerialize: it kept recomputing a plain conversion.
  e.decl("const unsigned", "smem_s", Expr("__shfl_sync(0xffffffffu, " + cvta_shared(Expr("smem")).str() + ", 0)"),
         "the slice's shared-window address, in a register");
  Expr base("smem_s");
  for (size_t j = 0; j < p.rhs.size(); ++j) {
    const Chunk &c = p.rhs[j];
    const std::string J = std::to_string(j);
    e.decl("const unsigned", "sb" + J, base,
           "rhs plane " + J + " (" + c.str() + ", " + std::to_string(c.storage_bits) + "-bit): " +
               (p.spec.panel ? "max(min(K, KP), 8)" : "max(K, 8)") + " rows x " +
               std::to_string(slice_row(c)) + " bytes, shared-window address");
    base = Expr("sb" + J) + Expr("KR") * slice_row(c);
  }
}

void KernelGen::copy_slice(const std::string &first, const std::string &rows, const std::string &slice) {
  for (size_t j = 0; j < p.rhs.size(); ++j) {
    const Chunk &c = p.rhs[j];
    const std::string J = std::to_string(j);
    const int U = slice_row(c) / 16;
    auto plane = e.scope("", "plane " + J + ": " + rows + " rows x " + std::to_string(U) +
                                 " units of 16 bytes, stored swizzled and contiguous per slice");
    Expr src = Expr("b" + J) + cast("long long", Expr(slice)) * Expr("K") * slice_row(c);
    if (!first.empty()) src = src + cast("long long", Expr(first)) * slice_row(c);
    e.decl("const unsigned char *", "src", src);
    auto loop = e.scope("for (int i = threadIdx.x; i < " + (Expr(rows) * U).str() + "; i += THREADS)");
    e.declare("i");
    const Expr i = Expr::var("i", 0);
    cp_async16(Expr("sb" + J) + i * 16, Expr("src") + cast("long long", i) * 16);
  }
}

void KernelGen::slice_frags_and_mmas(const std::string &D, const std::string &row_of) {
  const Expr row = let("const int", "row", Expr(row_of),
                       "this lane's ldmatrix row (k slot `lane`); pads: A's zeros, row lane % 8 keeps banks apart");
  std::vector<Expr> brow, sw;
  for (size_t j = 0; j < p.rhs.size(); ++j) {
    const std::string J = std::to_string(j);
    brow.push_back(let("const int", "brow" + J, row * slice_row(p.rhs[j])));
    sw.push_back(let("const int", "sw" + J, slice_swizzle(row, slice_row(p.rhs[j]) / 16)));
  }
  ldmatrix_frags_and_mmas(
      [&](int j, int off) { return Expr("sb" + std::to_string(j)) + brow[size_t(j)] + ((Expr(off / 16) ^ sw[size_t(j)]) << 4); },
      "ls" + D + "_");
}

void slice_prologue(Prologue &pr, const Plan &p, bool n_base) {
  pr.def("constexpr int", "KS", p.shape.k, "SR-BCRS stride = mma k");
  pr.def("constexpr int", "V", p.spec.v, "rows per block vector");
  pr.def("constexpr int", "BSN", p.spec.bsn, "dense columns per thread block (the slice)");
  pr.def("constexpr int", "THREADS", p.launch.threads);
  if (n_base)
    pr.def("const int", "n_base", Expr("blockIdx.x") * Expr::named("BSN", p.spec.bsn), "first dense column of this block's slice");
  pr.def("const int", "warp", Expr("threadIdx.x") >> 5);
  pr.def("const int", "lane", Expr("threadIdx.x") & 31);
  pr.def("const int", "gid", Expr("lane") >> 2, "mma fragment coordinates: group");
  pr.def("const int", "tig", Expr("lane") & 3, "and thread in group");
  pr.def("const int", "nblk", "(M + V - 1) / V", "row-blocks");
}

}  // namespace magicube::gen
