// How the library times a kernel, the same for `magicube run`, `tune` and the benchmark's own
// contenders (bench/timing.h does the same with the CUDA runtime for the vendor libraries):
//   1. `warmup` untimed launches, then a synchronize;
//   2. a device memset of `filler_bytes` on the stream, so that the GPU is busy while the host
//      enqueues the timed launches and the host's launch latency is not timed;
//   3. `repeat` launches, each between its own pair of events, enqueued back to back; one
//      synchronize; each pair's elapsed time is one sample.
// With `flush_bytes` > 0 a memset of that many bytes runs before each timed launch, outside its
// event pair, so that every timed launch starts with a cold L2 (as a model layer whose weight
// comes from HBM; use at least twice the L2 size: --flush-l2 in the CLI, the bench's llm section).
#pragma once

#include <cstddef>
#include <vector>

#include "llvm/ADT/STLFunctionalExtras.h"
#include "llvm/Support/Error.h"
#include "runtime/cuda_driver.h"

namespace magicube {

struct TimingOptions {
  int warmup = 10;
  int repeat = 50;
  size_t filler_bytes = size_t(256) << 20;  // 0: none
  size_t flush_bytes = 0;                   // 0: warm L2
};

// Bytes that flush the L2 of the context's device: twice its L2 size (at least 64 MiB).
size_t l2_flush_bytes(const Context &ctx);

struct Timing {
  std::vector<double> samples_ms;  // in launch order
  double median_ms = 0, min_ms = 0, max_ms = 0;
};

// Times `launch` (which enqueues one launch on the default stream and must not synchronize).
// A filler that cannot be allocated is skipped (host latency may then be timed).
llvm::Expected<Timing> time_launches(const Context &ctx, llvm::function_ref<llvm::Error()> launch,
                                     const TimingOptions &opts = {});

}  // namespace magicube
