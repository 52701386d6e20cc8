#include "compiler/codegen.h"

#include <cstdlib>

#include "compiler/gen_ptx_common.h"

namespace magicube {

bool fast_compile_enabled() {
  static const bool on = [] {
    const char *e = std::getenv("MAGICUBE_FAST_COMPILE");
    return e && std::string(e) == "1";
  }();
  return on;
}

std::vector<std::string> nvrtc_options(const Plan &p) {
  std::vector<std::string> o;
  if (p.launch.language == KernelLanguage::Ptx) return o;
  o.push_back("-minimal");  // no texture/surface or device-runtime declarations: a faster front end
  // NVVM and ptxas favour compile time: about 40 % less compile time, but 4-10 % slower
  // SpMM/SDDMM kernels and 30 % slower 4-bit SDDMM on the H100 (2026-11-22), so opt-in.
  if (fast_compile_enabled()) o.push_back("--Ofast-compile=min");
  if (is_float(p.spec.out)) o.push_back("--fmad=false");
  return o;
}

llvm::Expected<KernelSource> generate(const Plan &p) {
  if (p.launch.params.empty())
    return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                   "codegen: plan " + to_string(p.spec) + " has no launch configuration (plans come from the planner)");
  llvm::Expected<std::string> source = [&]() -> llvm::Expected<std::string> {
    if (p.launch.language == KernelLanguage::Ptx) {
      if (p.launch.family == KernelFamily::SpmmRing) return gen::generate_spmm_ring_ptx(p);
      if (p.launch.family == KernelFamily::SddmmFast) return gen::generate_sddmm_fast_ptx(p);
      return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                     std::string("codegen: no PTX generator for family ") + family_name(p.launch.family));
    }
    switch (p.launch.family) {
      case KernelFamily::SpmmRing: return gen::generate_spmm_ring(p);
      case KernelFamily::SpmmResident: return gen::generate_spmm_resident(p);
      case KernelFamily::SpmmDecode: return gen::generate_spmm_decode(p);
      case KernelFamily::SpmmGeneric: return gen::generate_spmm_generic(p);
      case KernelFamily::SddmmFast: return gen::generate_sddmm_fast(p);
      case KernelFamily::SddmmGeneric: return gen::generate_sddmm_generic(p);
    }
    return llvm::createStringError(llvm::inconvertibleErrorCode(), "codegen: unknown kernel family");
  }();
  if (!source) return source.takeError();
  return KernelSource{p.kernel_name(), std::move(*source), p.launch.language};
}

}  // namespace magicube
