// Small helper kernels beside the planned ones: the C ABI's repacks and transposes
// (capi/repack.h) and the dense route's epilogue (runtime/dense_epilogue.h). Each is a CUDA
// source generated from a few parameters, compiled through the JIT stage (memory -> AOT
// bundle -> disk -> NVRTC, keyed by its source and options) and loaded once per context and
// kernel name.
#pragma once

#include <cuda.h>

#include <string>
#include <vector>

#include "llvm/ADT/STLFunctionalExtras.h"
#include "llvm/Support/Error.h"

namespace magicube {

class Context;

// The loaded kernel `name` of `source()` (compiled with `options`) in ctx; `source` is called
// only to load it the first time, so a launch that finds it loaded generates nothing. One name
// names one source: a second source under a loaded name is not compiled. Loaded modules stay
// loaded for the process (no driver calls from static destructors). Thread-safe.
llvm::Expected<CUfunction> helper_function(const Context &ctx, const std::string &name,
                                           llvm::function_ref<std::string()> source,
                                           const std::vector<std::string> &options = {});

// `prefix` and 12 hex digits of the hash of `source_without_name`: one name per distinct source.
std::string hashed_kernel_name(const std::string &prefix, const std::string &source_without_name);

}  // namespace magicube
