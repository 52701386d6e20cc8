#include "bench/timing.h"

#include <algorithm>

#include "support/log.h"

namespace magicube::bench {

std::string cuda_status(const char *call, cudaError_t status) {
  return std::string(call) + ": " + cudaGetErrorName(status) + " (" + cudaGetErrorString(status) + ")";
}

llvm::Error make_error(const llvm::Twine &msg) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), msg);
}

llvm::Error cuda_error(const char *call, cudaError_t status) { return make_error(cuda_status(call, status)); }

double median(std::vector<float> s) {
  if (s.empty()) return 0.0;
  std::sort(s.begin(), s.end());
  size_t n = s.size();
  return n % 2 ? double(s[n / 2]) : 0.5 * (double(s[n / 2 - 1]) + double(s[n / 2]));
}

// ---- RAII -----------------------------------------------------------------------------

DeviceBuffer::~DeviceBuffer() {
  if (ptr_) cudaFree(ptr_);
}

DeviceBuffer &DeviceBuffer::operator=(DeviceBuffer &&o) noexcept {
  if (this != &o) {
    if (ptr_) cudaFree(ptr_);
    ptr_ = o.ptr_, bytes_ = o.bytes_;
    o.ptr_ = nullptr, o.bytes_ = 0;
  }
  return *this;
}

llvm::Expected<DeviceBuffer> DeviceBuffer::alloc(size_t bytes) {
  DeviceBuffer b;
  // Allocate at least one byte so that empty operands still have a valid, aligned pointer.
  cudaError_t st = cudaMalloc(&b.ptr_, std::max<size_t>(bytes, 1));
  if (st != cudaSuccess)
    return make_error(cuda_status("cudaMalloc", st) + " for " + std::to_string(bytes) + " bytes");
  b.bytes_ = bytes;
  return b;
}

llvm::Expected<DeviceBuffer> DeviceBuffer::upload(const void *host, size_t bytes) {
  auto b = alloc(bytes);
  if (!b) return b.takeError();
  if (bytes) MAGICUBE_CUDA_TRY(cudaMemcpy(b->get(), host, bytes, cudaMemcpyHostToDevice));
  // A pageable copy may return before its DMA lands: be done before any stream reads it.
  MAGICUBE_CUDA_TRY(cudaDeviceSynchronize());
  return b;
}

Stream::~Stream() {
  if (s_) cudaStreamDestroy(s_);
}

llvm::Error Stream::create() {
  // A blocking stream: it waits for work on the legacy default stream (uploads, memsets).
  MAGICUBE_CUDA_TRY(cudaStreamCreate(&s_));
  return llvm::Error::success();
}

namespace {
struct Events {
  std::vector<cudaEvent_t> ev;
  ~Events() {
    for (cudaEvent_t e : ev) cudaEventDestroy(e);
  }
};
}  // namespace

// ---- timing ---------------------------------------------------------------------------

llvm::Expected<std::vector<std::vector<float>>> sample_ms_alternating(cudaStream_t stream, llvm::ArrayRef<Enqueue> fns,
                                                                     const TimingOptions &opts) {
  if (opts.reps < 1) return make_error("timing: reps must be >= 1, got " + llvm::Twine(opts.reps));
  if (fns.empty()) return make_error("timing: nothing to time");
  const size_t n = fns.size();

  for (const Enqueue &fn : fns)
    for (int i = 0; i < opts.warmup; ++i)
      if (llvm::Error e = fn()) return e;
  MAGICUBE_CUDA_TRY(cudaStreamSynchronize(stream));
  MAGICUBE_CUDA_TRY(cudaGetLastError());

  Events events;
  events.ev.resize(2 * n * size_t(opts.reps), nullptr);
  for (cudaEvent_t &e : events.ev) MAGICUBE_CUDA_TRY(cudaEventCreate(&e));

  DeviceBuffer filler;
  if (opts.filler_bytes) {
    auto f = DeviceBuffer::alloc(opts.filler_bytes);
    if (!f) return f.takeError();
    filler = std::move(*f);
    MAGICUBE_CUDA_TRY(cudaMemsetAsync(filler.get(), 0x5a, filler.bytes(), stream));
    for (const Enqueue &fn : fns)
      for (int i = 0; i < 2; ++i)
        if (llvm::Error e = fn()) return e;
  }

  DeviceBuffer flush;
  if (opts.flush_bytes) {
    auto f = DeviceBuffer::alloc(opts.flush_bytes);
    if (!f) return f.takeError();
    flush = std::move(*f);
  }

  // Event pair (i, j): timed run i of contender j.
  auto ev = [&](int i, size_t j, int end) { return events.ev[2 * (size_t(i) * n + j) + size_t(end)]; };
  for (int i = 0; i < opts.reps; ++i)
    for (size_t t = 0; t < n; ++t) {
      const size_t j = (size_t(i) + t) % n;
      if (opts.flush_bytes) MAGICUBE_CUDA_TRY(cudaMemsetAsync(flush.get(), i & 0xff, flush.bytes(), stream));
      MAGICUBE_CUDA_TRY(cudaEventRecord(ev(i, j, 0), stream));
      if (llvm::Error e = fns[j]()) return e;
      MAGICUBE_CUDA_TRY(cudaEventRecord(ev(i, j, 1), stream));
    }
  MAGICUBE_CUDA_TRY(cudaStreamSynchronize(stream));
  MAGICUBE_CUDA_TRY(cudaGetLastError());

  std::vector<std::vector<float>> ms(n, std::vector<float>(size_t(opts.reps)));
  for (int i = 0; i < opts.reps; ++i)
    for (size_t j = 0; j < n; ++j) MAGICUBE_CUDA_TRY(cudaEventElapsedTime(&ms[j][size_t(i)], ev(i, j, 0), ev(i, j, 1)));
  return ms;
}

llvm::Expected<std::vector<float>> sample_ms(cudaStream_t stream, Enqueue fn, const TimingOptions &opts) {
  auto s = sample_ms_alternating(stream, llvm::ArrayRef<Enqueue>(fn), opts);
  if (!s) return s.takeError();
  return std::move(s->front());
}

llvm::Expected<double> median_ms(cudaStream_t stream, Enqueue fn, const TimingOptions &opts) {
  auto s = sample_ms(stream, fn, opts);
  if (!s) return s.takeError();
  double m = median(*s);
  if (log().should_log(spdlog::level::trace)) {
    auto [lo, hi] = std::minmax_element(s->begin(), s->end());
    log().trace("timing: median {:.4f} ms over {} runs (min {:.4f}, max {:.4f})", m, s->size(), *lo, *hi);
  }
  return m;
}

// ---- device --------------------------------------------------------------------------

llvm::Error require_cuda_device() {
  int n = 0;
  cudaError_t st = cudaGetDeviceCount(&n);
  if (st != cudaSuccess) {
    cudaGetLastError();  // not sticky, but leave no error behind
    return make_error(llvm::Twine("no CUDA device: ") + cuda_status("cudaGetDeviceCount", st));
  }
  if (n == 0) return make_error("no CUDA device: cudaGetDeviceCount reports 0 devices");
  return llvm::Error::success();
}

llvm::Expected<std::string> device_summary() {
  int dev = 0, driver = 0, runtime = 0;
  MAGICUBE_CUDA_TRY(cudaGetDevice(&dev));
  cudaDeviceProp p{};
  MAGICUBE_CUDA_TRY(cudaGetDeviceProperties(&p, dev));
  MAGICUBE_CUDA_TRY(cudaDriverGetVersion(&driver));
  MAGICUBE_CUDA_TRY(cudaRuntimeGetVersion(&runtime));
  auto ver = [](int v) { return std::to_string(v / 1000) + "." + std::to_string((v % 1000) / 10); };
  return std::string(p.name) + ", sm_" + std::to_string(p.major) + std::to_string(p.minor) + ", " +
         std::to_string(p.multiProcessorCount) + " SMs, " + std::to_string(p.totalGlobalMem >> 20) +
         " MiB, driver " + ver(driver) + ", runtime " + ver(runtime);
}

}  // namespace magicube::bench
