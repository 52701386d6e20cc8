// The PTX mma instructions the planner can pick, as named static descriptions (one entry per
// instruction, named like CuTe's atoms: SM80_16x8x32_S32S8S8S32_TN is D(s32) = A(s8) x B(s8)
// + C(s32), A row-major, B column-major). The planner names a term's instruction from this
// table (mma_ptx_name) and codegen emits each used entry's wrapper from it.
#pragma once

#include <vector>

#include "compiler/arch.h"

namespace magicube {

struct MmaAtom {
  const char *name;     // SM80_16x8x32_S32S8U8S32_TN
  MmaShape shape;       // m16n8k32
  int bits;             // operand width: 8 or 4
  bool a_signed, b_signed;
  int a_regs, b_regs, c_regs;  // 32-bit registers per thread of A, B and C / D
  const char *ptx;      // mma.sync.aligned.m16n8k32.row.col.s32.s8.u8.s32
  const char *wrapper;  // mma_m16n8k32_s8_u8: the device function codegen emits for it
  int min_arch;         // 80: every integer mma.sync here is sm_80+
};

// Every entry: m16n8k32 and m8n8k16 int8, m16n8k64 and m8n8k32 int4, each with the four
// signedness pairs.
const std::vector<MmaAtom> &mma_atoms();

// The entry of one instruction; nullptr when the table has none.
const MmaAtom *find_mma_atom(const MmaShape &shape, int bits, bool a_signed, bool b_signed);

}  // namespace magicube
