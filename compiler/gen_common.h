// Internal to codegen: what the per-family generators (compiler/gen_*.cpp) share. Each family
// writes its kernel's body with a KernelGen (the plan, an Emitter, the device helpers it
// calls) and hands the body, its prologue and its doc comment to assemble().
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "compiler/emitter.h"
#include "compiler/mma_atoms.h"
#include "compiler/plan.h"
#include "compiler/snippets.h"

namespace magicube::gen {

using cg::Emitter;
using cg::Expr;

// The kernel's per-thread values and constants, declared before its body. Only the entries
// the body (or a later used entry) names are emitted; statements (name "") always are.
struct Prologue {
  struct Entry {
    std::string name;  // "" for a statement
    std::string code;  // e.g. "const int gid = lane >> 2;"
    std::string comment;
  };
  std::vector<Entry> entries;
  void def(const std::string &type, const std::string &name, const Expr &init, const std::string &comment = "");
  void stmt(const std::string &code, const std::string &comment = "");
};

// One kernel's text around its body.
struct KernelFrame {
  std::vector<std::string> doc;  // the kernel's doc comment, one line each (without "// ")
  int min_blocks = 0;            // __launch_bounds__'s second argument (0: none)
  Prologue prologue;
};

// The register source of lhs chunk `li`, V-row `r`, k-offset `k0` (per family).
using LhsSource = std::function<Expr(int li, const Expr &r, const Expr &k0)>;

// The prologue of the resident-B families (spmm-resident, spmm-decode): KS, V, BSN, THREADS,
// the slice's first column n_base (blockIdx.x x BSN; without `n_base` the body declares it),
// warp, lane, gid, tig and the row-block count nblk.
void slice_prologue(Prologue &pr, const Plan &p, bool n_base = true);

class KernelGen {
 public:
  const Plan &p;
  const Launch &l;  // the plan's launch: threads, tiles, ring depth ... read, never recomputed
  Emitter e;        // the kernel body, one level in
  Snippets &helpers;

  KernelGen(const Plan &plan, Snippets &h);

  // ---- facts of the plan ------------------------------------------------------------------
  bool dense_on_m() const { return p.orient == Orientation::DenseOnM; }
  bool sddmm() const { return p.spec.op == OpKind::SDDMM; }
  int tiles() const { return l.tiles; }
  int kpr() const { return 32 / p.native_bits; }  // k values per operand register
  bool all_rhs_nibbles() const;                    // every rhs plane stored 4-bit
  int nc() const { return atom(true, true).c_regs; }
  // The table entry of the plan's mma for these operand signednesses.
  const MmaAtom &atom(bool a_signed, bool b_signed) const;
  // The mma of stack group g x rhs chunk j, orientation-aware (dense on M: B is the lhs).
  const MmaAtom &term_atom(int g, int j) const;
  // Registers of the lhs stack operand: the mma's B (dense on M) or A.
  int lhs_regs() const;

  // ---- names and values every kernel has --------------------------------------------------
  const Expr V, KS, THREADS;
  const Expr lane, warp, gid, tig, tid_x;  // tid_x: threadIdx.x
  const Expr n_base, nw, blk;
  static std::string acc(int g, int j, int t);  // acc_g<group>_r<rhs chunk>_t<tile>

  // ---- helpers ----------------------------------------------------------------------------
  Expr call(const std::string &helper, const std::vector<Expr> &args);  // marks the snippet used
  // Emits `type name = init;` and returns name (knowing init's range); a literal init is
  // returned as is, with no declaration.
  Expr let(const std::string &type, const std::string &name, const Expr &init, const std::string &comment = "");
  // acc += A x B with the plan's mma (its wrapper emitted once).
  void mma(const MmaAtom &atom, const std::string &acc, const std::string &a, const std::string &b);
  void cp_async16(const Expr &shared_addr, const Expr &src);  // cp.async of 16 bytes
  static std::string cp_async16_text(const Expr &shared_addr, const Expr &src);  // the statement
  static Expr cvta_shared(const Expr &ptr);  // (unsigned)__cvta_generic_to_shared(ptr)
  void commit() { e.line("asm volatile(\"cp.async.commit_group;\\n\" ::);"); }
  void wait_all(const std::string &comment = "") { e.line("asm volatile(\"cp.async.wait_group 0;\\n\" ::);", comment); }
  // r0..r3 = ldmatrix.x4.trans.b16 of the four 8x8 matrices whose rows start at `addr` (a
  // shared-window address, u32).
  void ldmatrix_x4_trans(const Expr &addr);

  // ---- accumulators -----------------------------------------------------------------------
  void for_each_accumulator(const std::function<void(const std::string &acc)> &f) const;
  void declare_accumulators(const std::string &comment);
  void zero_accumulators();

  // ---- operand registers ------------------------------------------------------------------
  // One register of kpr consecutive k of a chunk plane at element `idx` (contiguous): a
  // 32-bit load, or a 16-bit load of four 4-bit elements widened to bytes for the int8 mma.
  Expr load_reg(const std::string &plane, const Chunk &c, const Expr &idx);
  // lhs chunk li from global memory: SpMM's SR-BCRS stride at slot `s`, SDDMM's A row at kb.
  LhsSource global_lhs(const Expr &s_or_kb);
  // The lhs stack operand of group g, register for V-side row `vrow`: each slot's chunk.
  Expr lhs_stack_reg(int g, const Expr &vrow, const Expr &k0, const LhsSource &src);
  // The registers of every group's lhs stack operand, named <name><g>[i] (declared first when
  // `declare`).
  void lhs_frags(const std::string &name, bool declare, const LhsSource &src);

  // The B fragments of the int8 m16n8k32 SpMM kernels (ring, resident, decode): ldmatrix.trans of
  // the stride's gathered rows at `addr(j, byte offset)` (shared-window addresses), then the mmas
  // with <lhs><g>.
  void ldmatrix_frags_and_mmas(const std::function<Expr(int j, int off)> &addr, const std::string &lhs);

  // ---- B resident in shared memory (spmm-resident, spmm-decode) ----------------------------
  // A slice row of rhs plane c in bytes (compiler/launch.h's slice_row_bytes).
  int slice_row(const Chunk &c) const;
  // resident_swizzle (compiler/launch.h) of slice row `k`, as an expression.
  static Expr slice_swizzle(const Expr &k, int units);
  // `const int KR` (two or more planes) and sb<j>, each rhs plane's max(K, 8) rows in `smem`.
  void declare_slice_planes();
  // The block's K x BSn slice (slice `slice` of B) of every rhs plane into sb<j> with cp.async
  // (no commit); with `first` and `rows` (a K panel: one plane) rows first..first + rows - 1 of it.
  void copy_slice(const std::string &first = "", const std::string &rows = "K", const std::string &slice = "blockIdx.x");
  // The stride's B fragments gathered from the slice with ldmatrix, and the mmas with lhs
  // fragments ls<D>_*: the lane's row is `row_of` (ci<D>'s column; pads read row lane % 8, A's zeros).
  void slice_frags_and_mmas(const std::string &D, const std::string &row_of);
  // acc(g, j, t) += rhs(j, t) x <lhs><g> for every group, rhs chunk and tile (int8, dense on M).
  void int8_mmas(const std::function<std::string(int j, int t)> &rhs, const std::string &lhs);

  // The generic kernels' B fragments and mmas: every rhs chunk's registers (SpMM: the
  // stride's gathered rows in shared memory, element by element through the plan's column
  // shuffle; SDDMM: B columns cv<i> from global memory at k-step kb), then the mmas of every
  // (group, rhs chunk, tile) with <lhs><g>.
  void generic_rhs_frags_and_mmas(const std::string &lhs, const Expr &kb);

  // ---- epilogue -----------------------------------------------------------------------------
  // Shifts each term's accumulator, sums the terms, exchanges stacked slots between
  // registers and lanes, and writes the V rows (SpMM: row-major C; SDDMM: the mask's order).
  void epilogue();
  // SpMM, integer C: where this holds (a condition), the epilogue adds its sums into C with
  // red.global.add instead of storing them (a decode kernel's K panels after the first: a
  // load of C there stalled the ring, 2x the pass's time). Empty: C is written.
  std::string accumulate_c;

 private:
  Expr store_value(const Expr &v, const Expr &row, const Expr &col);
  Expr rounded(const Expr &x);  // a float output's double value rounded to its type
  Expr slot_of(const Expr &kk) const;
  Expr rhs_reg(int j, const Expr &k0, const Expr &col, const Expr &kb);
};

// The generator's banner line and the plan as Plan::str() prints it, as `//` comment lines (a
// line past 120 columns continues under its value): the head of every generated kernel, CUDA
// or PTX.
std::string plan_banner(const Plan &p);

// Assembles one kernel: the generator banner and plan, the device helpers used, the doc
// comment, the signature (the plan's parameter list), the used prologue and the body.
// Fails when the emitter or the snippets recorded an error.
llvm::Expected<std::string> assemble(const Plan &p, const KernelFrame &frame, KernelGen &g);

// One generator per kernel family (compiler/launch.h).
llvm::Expected<std::string> generate_spmm_ring(const Plan &p);
llvm::Expected<std::string> generate_spmm_resident(const Plan &p);
llvm::Expected<std::string> generate_spmm_decode(const Plan &p);
llvm::Expected<std::string> generate_spmm_generic(const Plan &p);
llvm::Expected<std::string> generate_sddmm_fast(const Plan &p);
llvm::Expected<std::string> generate_sddmm_generic(const Plan &p);

// The prologue shared by the SpMM kernels that take one row-block per block (ring, generic).
void spmm_row_block_prologue(KernelGen &g, KernelFrame &f, int warps_per_group);
// SDDMM's: one row-block x BSn of its sampled vectors per block.
void sddmm_prologue(KernelGen &g, KernelFrame &f);

}  // namespace magicube::gen
