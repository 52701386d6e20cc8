// The project's one way to run work on the host's cores: parallel_for over an
// llvm::ThreadPool. Used for parallel NVRTC compiles (the autotuner, the GPU tests) and CPU
// reference checks (bench, run).
#pragma once

#include <cstddef>

#include "llvm/ADT/STLFunctionalExtras.h"

namespace magicube {

// The host's hardware threads (the affinity mask counted), at least 1.
unsigned hardware_threads();

// Calls fn(i) once for every i in [0, count) and returns when all calls have returned. The
// calls run on `threads` threads (0: hardware_threads()), never more than `count`: the
// calling thread and threads - 1 workers of an llvm::ThreadPool, each taking the next index
// until none is left, so uneven calls balance. One thread (or count <= 1) runs everything
// on the caller, in order. fn must be safe to call concurrently and must not throw.
void parallel_for(size_t count, llvm::function_ref<void(size_t)> fn, unsigned threads = 0);

}  // namespace magicube
