// GPU timing for the benchmarks: CUDA events around each run, after warm-up; the median of
// R runs in milliseconds. Plus the small CUDA runtime helpers the baselines share (status
// strings, RAII device buffers, the "is there a GPU" check).
//
// How a measurement is taken (median_ms / sample_ms):
//   1. `warmup` untimed calls, then a synchronize and an error check;
//   2. a device memset of `filler_bytes` on the same stream, so that the GPU is busy while
//      the host enqueues the timed calls and the launch latency of the host is not timed;
//      then 2 untimed calls that bring the inputs back into L2;
//   3. `reps` calls, each between its own pair of events, enqueued back to back; one
//      synchronize at the end; the elapsed time of each pair is one sample.
// The inputs therefore stay L2-resident where they fit (50 MB on the H100), as in a loop
// that calls the same kernel again and again. With `flush_bytes` > 0, a memset of that many
// bytes runs on the stream before each timed call, outside its event pair, so every timed
// call starts with a cold L2 (use at least twice the L2 size).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include <cuda_runtime_api.h>

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/STLFunctionalExtras.h"
#include "llvm/Support/Error.h"

namespace magicube::bench {

struct TimingOptions {
  int warmup = 10;                      // untimed calls before the timed ones
  int reps = 20;                        // timed calls; the median of these is reported
  size_t filler_bytes = size_t(256) << 20;  // memset ahead of the timed calls (0: none)
  size_t flush_bytes = 0;                   // memset before each timed call, untimed (0: none, warm L2)
};

// One call of the contender: enqueues its work on the stream given to median_ms and
// returns an error naming the failing call. It must not synchronize.
using Enqueue = llvm::function_ref<llvm::Error()>;

// The R samples in milliseconds, in run order.
llvm::Expected<std::vector<float>> sample_ms(cudaStream_t stream, Enqueue fn, const TimingOptions &opts = {});

// Several contenders timed alternately, so that a slow or fast spell of the device (clocks,
// power) falls on each of them alike: the same steps as sample_ms, with every step done for
// each of `fns`, and timed run i of each taken in turn (round i starts with contender
// i mod fns.size(), so none always runs first). Their R samples each, in fns' order.
llvm::Expected<std::vector<std::vector<float>>> sample_ms_alternating(cudaStream_t stream, llvm::ArrayRef<Enqueue> fns,
                                                                     const TimingOptions &opts = {});

// The median of sample_ms (mean of the middle two for even R).
llvm::Expected<double> median_ms(cudaStream_t stream, Enqueue fn, const TimingOptions &opts = {});

double median(std::vector<float> samples);

// "cudaMalloc: cudaErrorMemoryAllocation (out of memory)".
std::string cuda_status(const char *call, cudaError_t status);
llvm::Error cuda_error(const char *call, cudaError_t status);
llvm::Error make_error(const llvm::Twine &msg);

// Evaluates a CUDA runtime call; returns an llvm::Error naming it from the enclosing
// function (which returns llvm::Error or llvm::Expected<T>) when it fails.
#define MAGICUBE_CUDA_TRY(call)                                                    \
  do {                                                                             \
    cudaError_t magicube_cuda_status_ = (call);                                    \
    if (magicube_cuda_status_ != cudaSuccess)                                      \
      return ::magicube::bench::cuda_error(#call, magicube_cuda_status_);          \
  } while (0)

// Succeeds when the process can use a CUDA device; otherwise the error reads
// "no CUDA device: <why>" (no driver, no device, driver too old, ...).
llvm::Error require_cuda_device();

// "NVIDIA H100 80GB HBM3, sm_90, 132 SMs, driver 13.0, runtime 13.0" for the current device.
llvm::Expected<std::string> device_summary();

// cudaMalloc'ed memory, freed on destruction; no copy, moves only.
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  ~DeviceBuffer();
  DeviceBuffer(DeviceBuffer &&o) noexcept : ptr_(o.ptr_), bytes_(o.bytes_) { o.ptr_ = nullptr, o.bytes_ = 0; }
  DeviceBuffer &operator=(DeviceBuffer &&o) noexcept;
  DeviceBuffer(const DeviceBuffer &) = delete;
  DeviceBuffer &operator=(const DeviceBuffer &) = delete;

  static llvm::Expected<DeviceBuffer> alloc(size_t bytes);
  // Allocates and copies `bytes` from host memory.
  static llvm::Expected<DeviceBuffer> upload(const void *host, size_t bytes);

  void *get() const { return ptr_; }
  size_t bytes() const { return bytes_; }

 private:
  void *ptr_ = nullptr;
  size_t bytes_ = 0;
};

// A stream (blocking: ordered after the legacy default stream), destroyed with the object.
class Stream {
 public:
  Stream() = default;
  ~Stream();
  Stream(const Stream &) = delete;
  Stream &operator=(const Stream &) = delete;
  llvm::Error create();
  cudaStream_t get() const { return s_; }

 private:
  cudaStream_t s_ = nullptr;
};

}  // namespace magicube::bench
