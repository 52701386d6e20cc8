// One source to one cubin: the JIT's single compile entry. CUDA C++ goes through NVRTC
// (jit/nvrtc.h); a PTX module goes through nvJitLink, which runs ptxas in-process and needs
// no GPU, so the PTX kernels skip NVRTC's C++ front end and NVVM (compiler/launch.h's
// KernelLanguage says which a plan's kernel is).
#pragma once

#include <string>
#include <vector>

#include "llvm/Support/Error.h"

namespace magicube {

enum class SourceKind { Cuda, Ptx };

// Compiles `text` for sm_<arch>. CUDA: nvrtc_compile(..., Emit::CUBIN, nvrtc_options); PTX:
// nvJitLink with -arch=sm_<arch> (ptxas -O3; `nvrtc_options` must be empty). Errors carry
// the compiler's log; `log`, when given, receives the log of a successful compile.
llvm::Expected<std::string> compile_cubin(SourceKind kind, const std::string &text, const std::string &file_name,
                                          int arch, const std::vector<std::string> &nvrtc_options = {},
                                          std::string *log = nullptr);

// nvJitLink's version as "major.minor"; "unknown" if nvJitLinkVersion fails.
std::string nvjitlink_version();

// The versions of both compilers, "nvrtc 13.0, nvjitlink 13.0": part of every cache key and
// bundle header, since either may have built a cubin.
std::string toolchain_version();

}  // namespace magicube
