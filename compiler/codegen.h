// Codegen: a plan becomes one flat, commented CUDA C++ source with inline PTX mma.sync, or,
// where the plan says so (Launch::language, compiler/launch.h), one PTX module that ptxas
// compiles alone (compiler/gen_*_ptx.cpp).
// generate() dispatches on the plan's kernel family (Plan::launch.family) to that family's
// generator (compiler/gen_<family>.cpp), which writes through an emitter that folds
// constants and owns indentation and names (compiler/emitter.h); the kernel carries only
// the device helpers it calls (compiler/snippets.h) and the mma wrappers of the table
// entries it uses (compiler/mma_atoms.h). tests/golden/ holds reviewed examples.
#pragma once

#include <string>
#include <vector>

#include "compiler/plan.h"

namespace magicube {

// Bumped whenever generated code changes meaning: part of every cache key.
inline constexpr const char *kGeneratorVersion = "magicube-codegen-37";

// The generated source of one plan. How it is launched (threads, grid, shared memory, the
// parameter list) is the plan's: Plan::launch (compiler/launch.h).
struct KernelSource {
  std::string name;    // the kernel's extern "C" name, e.g. magicube_spmm_s8u4_v8_n64_pf_sm90
  std::string source;  // complete CUDA C++ (no includes), or a PTX module
  KernelLanguage language = KernelLanguage::Cuda;
  std::string file_name() const { return name + (language == KernelLanguage::Ptx ? ".ptx" : ".cu"); }
};

// SpMM's B planes are stored K x ldb with ldb = N rounded up to this many elements (zero
// padded), so every gathered row segment is whole 16-byte pieces and needs no bounds
// checks. SDDMM's A and B planes are K-contiguous with pitch ldk = K rounded up likewise.
inline constexpr int kLdbAlign = 256;  // the widest BSn: no tile reads past a row

llvm::Expected<KernelSource> generate(const Plan &plan);

// NVRTC options a plan's kernel needs (part of its cache key): float epilogues are compiled
// without FMA contraction, so they round exactly as the CPU reference does. PTX kernels
// (integer outputs) need none.
std::vector<std::string> nvrtc_options(const Plan &plan);
// Whether nvrtc_options asks NVRTC to favour compile time over code (--Ofast-compile=min):
// off unless MAGICUBE_FAST_COMPILE=1 (read once per process).
bool fast_compile_enabled();

}  // namespace magicube
