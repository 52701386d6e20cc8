// What the tensor cores of each arch run natively, and how fast: the planner's only source
// of hardware facts. Rates are relative to the arch's int8 dense peak (1.0).
#pragma once

#include <string>
#include <vector>

namespace magicube {

struct MmaShape {
  int m = 16, n = 8, k = 32;
  std::string str() const { return "m" + std::to_string(m) + "n" + std::to_string(n) + "k" + std::to_string(k); }
  friend bool operator==(const MmaShape &, const MmaShape &) = default;
};

struct MmaOption {
  int bits;        // operand width fed to the mma: 8 or 4
  MmaShape shape;
  double rate;     // throughput relative to the arch's int8 dense peak
  const char *source;
};

// Native integer mma options of an arch, fastest first. On sm_90 only int8: int4 mma.sync
// is emulated there at 2-3 % of int8 speed (measured, ../shared/docs/h100.md).
const std::vector<MmaOption> &native_mmas(int arch);

// Multiply-accumulates per second at int8 peak over bytes per second of gathered
// (L2-resident, random-row) loads: how many MACs one gathered byte must feed to keep up.
double macs_per_gathered_byte(int arch);

// Shared memory a thread block may declare statically (every arch: 48 KiB).
inline constexpr int kStaticSmemLimit = 48 * 1024;
// Shared memory (static + dynamic) a block may use after opting in, per arch: sm_80 163 KiB,
// sm_86/sm_89 99 KiB, sm_90 227 KiB (CUDA C++ Programming Guide, compute capabilities).
int max_smem_per_block(int arch);

// The device the planner assumes for an arch when it has no GPU to ask (`magicube plan`
// without a GPU; the dispatch's policy): its name and SM count.
struct ReferenceDevice {
  const char *name;
  int sm_count;
};
ReferenceDevice reference_device(int arch);

// Full PTX name, e.g. mma.sync.aligned.m16n8k32.row.col.s32.u8.s8.s32: the table entry's
// (compiler/mma_atoms.h); every option of native_mmas has one for each signedness pair.
std::string mma_ptx_name(const MmaShape &shape, int bits, bool a_signed, bool b_signed);

}  // namespace magicube
