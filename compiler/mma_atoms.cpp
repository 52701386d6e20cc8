#include "compiler/mma_atoms.h"

namespace magicube {

const std::vector<MmaAtom> &mma_atoms() {
  // name, shape, bits, a signed, b signed, A / B / C registers, PTX, wrapper, min arch
  static const std::vector<MmaAtom> atoms = {
      {"SM80_16x8x32_S32S8S8S32_TN", {16, 8, 32}, 8, true, true, 4, 2, 4, "mma.sync.aligned.m16n8k32.row.col.s32.s8.s8.s32", "mma_m16n8k32_s8_s8", 80},
      {"SM80_16x8x32_S32S8U8S32_TN", {16, 8, 32}, 8, true, false, 4, 2, 4, "mma.sync.aligned.m16n8k32.row.col.s32.s8.u8.s32", "mma_m16n8k32_s8_u8", 80},
      {"SM80_16x8x32_S32U8S8S32_TN", {16, 8, 32}, 8, false, true, 4, 2, 4, "mma.sync.aligned.m16n8k32.row.col.s32.u8.s8.s32", "mma_m16n8k32_u8_s8", 80},
      {"SM80_16x8x32_S32U8U8S32_TN", {16, 8, 32}, 8, false, false, 4, 2, 4, "mma.sync.aligned.m16n8k32.row.col.s32.u8.u8.s32", "mma_m16n8k32_u8_u8", 80},
      {"SM80_8x8x16_S32S8S8S32_TN", {8, 8, 16}, 8, true, true, 1, 1, 2, "mma.sync.aligned.m8n8k16.row.col.s32.s8.s8.s32", "mma_m8n8k16_s8_s8", 80},
      {"SM80_8x8x16_S32S8U8S32_TN", {8, 8, 16}, 8, true, false, 1, 1, 2, "mma.sync.aligned.m8n8k16.row.col.s32.s8.u8.s32", "mma_m8n8k16_s8_u8", 80},
      {"SM80_8x8x16_S32U8S8S32_TN", {8, 8, 16}, 8, false, true, 1, 1, 2, "mma.sync.aligned.m8n8k16.row.col.s32.u8.s8.s32", "mma_m8n8k16_u8_s8", 80},
      {"SM80_8x8x16_S32U8U8S32_TN", {8, 8, 16}, 8, false, false, 1, 1, 2, "mma.sync.aligned.m8n8k16.row.col.s32.u8.u8.s32", "mma_m8n8k16_u8_u8", 80},
      {"SM80_16x8x64_S32S4S4S32_TN", {16, 8, 64}, 4, true, true, 4, 2, 4, "mma.sync.aligned.m16n8k64.row.col.s32.s4.s4.s32", "mma_m16n8k64_s4_s4", 80},
      {"SM80_16x8x64_S32S4U4S32_TN", {16, 8, 64}, 4, true, false, 4, 2, 4, "mma.sync.aligned.m16n8k64.row.col.s32.s4.u4.s32", "mma_m16n8k64_s4_u4", 80},
      {"SM80_16x8x64_S32U4S4S32_TN", {16, 8, 64}, 4, false, true, 4, 2, 4, "mma.sync.aligned.m16n8k64.row.col.s32.u4.s4.s32", "mma_m16n8k64_u4_s4", 80},
      {"SM80_16x8x64_S32U4U4S32_TN", {16, 8, 64}, 4, false, false, 4, 2, 4, "mma.sync.aligned.m16n8k64.row.col.s32.u4.u4.s32", "mma_m16n8k64_u4_u4", 80},
      {"SM80_8x8x32_S32S4S4S32_TN", {8, 8, 32}, 4, true, true, 1, 1, 2, "mma.sync.aligned.m8n8k32.row.col.s32.s4.s4.s32", "mma_m8n8k32_s4_s4", 80},
      {"SM80_8x8x32_S32S4U4S32_TN", {8, 8, 32}, 4, true, false, 1, 1, 2, "mma.sync.aligned.m8n8k32.row.col.s32.s4.u4.s32", "mma_m8n8k32_s4_u4", 80},
      {"SM80_8x8x32_S32U4S4S32_TN", {8, 8, 32}, 4, false, true, 1, 1, 2, "mma.sync.aligned.m8n8k32.row.col.s32.u4.s4.s32", "mma_m8n8k32_u4_s4", 80},
      {"SM80_8x8x32_S32U4U4S32_TN", {8, 8, 32}, 4, false, false, 1, 1, 2, "mma.sync.aligned.m8n8k32.row.col.s32.u4.u4.s32", "mma_m8n8k32_u4_u4", 80},
  };
  return atoms;
}

const MmaAtom *find_mma_atom(const MmaShape &shape, int bits, bool a_signed, bool b_signed) {
  for (const MmaAtom &a : mma_atoms())
    if (a.shape == shape && a.bits == bits && a.a_signed == a_signed && a.b_signed == b_signed) return &a;
  return nullptr;
}

}  // namespace magicube
