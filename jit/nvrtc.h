// NVRTC wrapper: one CUDA source string in, PTX or a cubin out. Errors are values: a failed
// compile carries NVRTC's log and, for every "file(LINE): error" in it, the source lines
// around LINE, numbered, so a bug in generated code can be read without the source at hand.
#pragma once

#include <string>
#include <vector>

#include "llvm/Support/Error.h"

namespace magicube {

enum class Emit { PTX, CUBIN };

// Compiles `source` (named `file_name` in diagnostics) for compute capability `arch`
// (80, 86, 89, 90, ...). CUBIN: --gpu-architecture=sm_XX and nvrtcGetCUBIN; PTX:
// --gpu-architecture=compute_XX and nvrtcGetPTX. Always -std=c++17; never fast math.
// `extra_options` are appended as given (e.g. "-lineinfo", "-I<dir>", "-DNAME=1").
// The result is the raw image: PTX text (without the trailing NUL) or cubin (ELF) bytes.
// `log`, when given, receives NVRTC's log of a successful compile (ptxas's report with
// "--ptxas-options=-v": registers, spills).
llvm::Expected<std::string> nvrtc_compile(const std::string &source, const std::string &file_name, int arch,
                                          Emit emit, const std::vector<std::string> &extra_options = {},
                                          std::string *log = nullptr);

// NVRTC's version as "major.minor", e.g. "13.0"; "unknown" if nvrtcVersion fails.
std::string nvrtc_version();

// The options nvrtc_compile passes before `extra_options`, in order (for cache keys / logs).
std::vector<std::string> nvrtc_base_options(int arch, Emit emit);

// For each "file_name(LINE): ...error..." line of `log`, that line followed by the source
// lines LINE-context..LINE+context, numbered, with LINE marked by '>'. Empty if none.
std::string nvrtc_error_context(const std::string &log, const std::string &file_name, const std::string &source,
                                int context = 2);

}  // namespace magicube
