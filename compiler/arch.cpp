#include "compiler/arch.h"

#include "llvm/ADT/Twine.h"
#include "llvm/Support/ErrorHandling.h"

#include "compiler/mma_atoms.h"

namespace magicube {

const std::vector<MmaOption> &native_mmas(int arch) {
  // Hopper: measured on our H100 (h100.md): m16n8k32 67 %, m16n8k16 50 %, m8n8k16 25 % of
  // the int8 peak; s4/u4 mma.sync runs at 2-3 % (emulated by ptxas) and is not planned.
  static const std::vector<MmaOption> sm90 = {
      {8, {16, 8, 32}, 0.675, "measured H100"},
      {8, {8, 8, 16}, 0.254, "measured H100"},
  };
  // Ampere/Ada: Sun et al. (TPDS 2023), A100, FMA/clk/SM over 2048 (int8 peak).
  static const std::vector<MmaOption> sm8x = {
      {4, {16, 8, 64}, 1.79, "Sun et al. A100"},
      {8, {16, 8, 32}, 0.97, "Sun et al. A100"},
      {4, {8, 8, 32}, 0.90, "estimate: half of m16n8k64, as for int8"},
      {8, {8, 8, 16}, 0.49, "Sun et al. A100"},
  };
  return arch >= 90 ? sm90 : sm8x;
}

double macs_per_gathered_byte(int arch) {
  // H100: ~980e12 int8 MAC/s over ~9.5 TB/s L2 row gathers (h100.md). A100: ~312e12 over
  // ~5 TB/s (estimate).
  return arch >= 90 ? 103.0 : 62.0;
}

int max_smem_per_block(int arch) {
  if (arch >= 90) return 227 * 1024;
  if (arch == 80) return 163 * 1024;
  return 99 * 1024;
}

ReferenceDevice reference_device(int arch) {
  if (arch >= 90) return {"NVIDIA H100 80GB HBM3", 132};
  if (arch == 80) return {"NVIDIA A100-SXM4-80GB", 108};
  if (arch == 86) return {"NVIDIA GeForce RTX 3090", 82};
  return {"NVIDIA L40S", 142};
}

std::string mma_ptx_name(const MmaShape &shape, int bits, bool a_signed, bool b_signed) {
  const MmaAtom *atom = find_mma_atom(shape, bits, a_signed, b_signed);
  if (!atom)
    llvm::report_fatal_error(llvm::Twine("mma_ptx_name: no mma atom for ") + shape.str() + " int" +
                             std::to_string(bits) + (a_signed ? " s" : " u") + (b_signed ? "s" : "u") +
                             " (compiler/mma_atoms.cpp)");
  return atom->ptx;
}

}  // namespace magicube
