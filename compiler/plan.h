// The emulation plan: how one OpSpec runs on one arch's integer tensor cores.
// It is the single source of truth read by codegen, the SR-BCRS builder, the CPU plan
// interpreter and the cache key.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "compiler/arch.h"
#include "compiler/ir.h"
#include "compiler/launch.h"

namespace magicube {

// Which operand sits on the mma's M side.
enum class Orientation {
  DenseOnM,   // the dense dimension (SpMM's N, SDDMM's sampled columns) on M; V on the mma's N=8
  SparseOnM,  // Magicube's original: the V rows of the block on M, the dense dimension on N
};
const char *orientation_name(Orientation o);  // "dense_on_m" | "sparse_on_m"

// One native-width piece of an operand: value = sum(chunk << lo_bit). The top chunk of a
// signed operand is signed; every other chunk is unsigned.
struct Chunk {
  int lo_bit = 0;
  int bits = 8;           // significant bits of the chunk (<= the mma width)
  bool is_signed = false;
  int storage_bits = 8;   // bits per element in memory: 4 (unpacked in registers when the mma is int8) or 8
  std::string str() const;  // "u8@0", "s4@8"
};

// A set of LHS chunks stacked into the spare V-side rows/columns of one mma (V < mma side).
// All chunks of a group share one signedness, since an mma operand has one type.
struct StackGroup {
  std::vector<int> lhs_chunks;  // slot i of the mma's V side holds lhs_chunks[i]
  bool is_signed = false;
};

// One chunk-pair product: lhs_chunk x rhs_chunk, shifted left by `shift`, computed by `mma`
// in stack group `group`, slot `slot`.
struct Term {
  int lhs_chunk = 0, rhs_chunk = 0;
  int shift = 0;
  int group = 0, slot = 0;
  std::string mma;  // full PTX instruction name
};

// One butterfly step of the epilogue that sums the stacked slots: every element adds the
// element whose (register index | lane index) differs by `mask`.
struct ExchangeStep {
  enum Kind { Reg, Lane } kind = Lane;
  int mask = 0;
  std::string str() const;  // "reg^2" | "shfl.xor 16"
};

struct Plan {
  OpSpec spec;
  int native_bits = 8;             // chunk width fed to the mma: 8 or 4
  MmaShape shape;
  Orientation orient = Orientation::DenseOnM;
  double mma_rate = 1.0;           // relative to int8 peak, from the arch table
  std::vector<Chunk> lhs, rhs;
  int stack_slots = 1;             // lhs chunks that fit on the mma's V side: side / V
  std::vector<StackGroup> groups;  // mmas per rhs chunk per k-step = groups.size()
  std::vector<Term> terms;         // one per (lhs chunk, rhs chunk)
  std::vector<ExchangeStep> exchange;
  // SR-BCRS: stride (vectors per stride = the mma's k) and the column-index shuffle: within
  // each group of G = shuffle.size() slots, the vector stored at slot p is multiplied at
  // k-position shuffle[p] (no shuffle when !shuffle_b). The kernel's B data movement fixes
  // it: the 4-bit nibble split (G = 8) or ldmatrix.trans + prmt of int8 B (G = 16).
  int k_stride = 32;
  bool shuffle_b = false;
  std::vector<int> shuffle;
  // Exactness: int32 output exact for reduction length K <= max_exact_k (two's-complement
  // wrap makes the int32 sum of terms exact whenever the true result fits); every term's
  // int32 accumulator exact for K <= max_term_k (what int64 outputs need).
  int64_t max_exact_k = 0;
  int64_t max_term_k = 0;
  // int8 m16n8k32, dense on M (SpMM and SDDMM): 4-bit planes are widened to bytes as value << nibble_prescale
  // (one mask per register instead of a sign-extending unpack), so a term's int32
  // accumulator holds its sum << (nibble_prescale per 4-bit chunk of the pair) and the
  // epilogue shifts it back; the bounds above count the scaled sums. 0: not used.
  int nibble_prescale = 0;
  // The accumulator scale (left shift) of term t's chunk pair.
  int term_prescale(const Term &t) const {
    return nibble_prescale * ((lhs[t.lhs_chunk].storage_bits == 4) + (rhs[t.rhs_chunk].storage_bits == 4));
  }
  // Cost model, in int8-peak MAC slots per useful MAC (lower is better).
  double compute_cost = 0, memory_cost = 0, cost = 0;
  // How the kernel is launched: family, threads, ring, shared memory, parameter list
  // (compiler/launch.h; filled by the planner, printed by codegen, read by the runtime).
  Launch launch;

  int v_side() const { return orient == Orientation::DenseOnM ? shape.n : shape.m; }
  int dense_side() const { return orient == Orientation::DenseOnM ? shape.m : shape.n; }
  int mmas_per_step() const { return int(groups.size() * rhs.size()); }
  bool unpack_lhs() const;  // some lhs chunk is stored narrower than the mma width
  bool unpack_rhs() const;
  // int8 m16n8k32 with the dense dimension on M: the default variant, on which the kernels the
  // knobs name (ring, resident B, decode, split) are built.
  bool int8_dense_on_m() const { return native_bits == 8 && shape == MmaShape{16, 8, 32} && orient == Orientation::DenseOnM; }
  std::string kernel_name() const;  // e.g. magicube_spmm_s8u4_v8_n64_pf_sm90
  std::string str() const;          // readable, multi-line
};

llvm::json::Value to_json(const Plan &plan);

// A 64-bit fingerprint of every field of the plan that shapes its kernel: cheap (tens of
// nanoseconds, no strings), for the in-process kernel cache's hot path. The disk cache keys on
// the SHA-256 of the plan's JSON instead.
uint64_t fingerprint(const Plan &plan);

}  // namespace magicube
