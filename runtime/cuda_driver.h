// Thin RAII over the CUDA Driver API. libcuda.so.1 is not linked: it is dlopen'ed at first
// use, so a binary starts on a machine without an NVIDIA driver, where device_count() is 0
// and no_gpu_reason() says why. Functions return llvm::Expected / llvm::Error holding a
// DriverError ("cuXxx failed: CUDA_ERROR_... (description)"); throw_if_error turns that into
// the public, typed CudaError.
#pragma once

#include <cuda.h>

#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

namespace magicube {

// ---- errors ------------------------------------------------------------------------------

// A failed driver call: the public, typed error.
class CudaError : public std::runtime_error {
 public:
  CudaError(std::string call, CUresult code, std::string code_name, const std::string &message)
      : std::runtime_error(message), call_(std::move(call)), code_(code), code_name_(std::move(code_name)) {}
  const std::string &call() const { return call_; }            // e.g. "cuModuleLoadData"
  CUresult code() const { return code_; }                      // e.g. CUDA_ERROR_INVALID_IMAGE
  const std::string &code_name() const { return code_name_; }  // e.g. "CUDA_ERROR_INVALID_IMAGE"

 private:
  std::string call_;
  CUresult code_;
  std::string code_name_;
};

// The same failure inside an llvm::Error (inspect it with llvm::handleErrors). message():
// "cuXxx failed: CUDA_ERROR_... (description)", then "; <context>" when the call's input
// (kernel name, sizes, ...) is worth naming.
class DriverError : public llvm::ErrorInfo<DriverError> {
 public:
  static char ID;
  DriverError(std::string call, CUresult code, std::string code_name, std::string description,
              std::string context = {});
  std::string message() const override;
  void log(llvm::raw_ostream &os) const override;
  std::error_code convertToErrorCode() const override { return llvm::inconvertibleErrorCode(); }
  const std::string &call() const { return call_; }
  CUresult code() const { return code_; }
  const std::string &code_name() const { return code_name_; }
  CudaError to_exception() const { return CudaError(call_, code_, code_name_, message()); }

 private:
  std::string call_;
  CUresult code_;
  std::string code_name_, description_, context_;
};

// Throws CudaError for a DriverError and std::runtime_error for any other error; returns on
// success.
void throw_if_error(llvm::Error error);

template <class T>
T value_or_throw(llvm::Expected<T> value) {
  if (!value) throw_if_error(value.takeError());
  return std::move(*value);
}

// ---- driver and devices ------------------------------------------------------------------

// Number of CUDA devices; 0 (not an error) when there is no usable GPU: libcuda.so.1 missing
// or lacking an entry point, or cuInit reporting no device / no working driver. Other cuInit
// failures are errors.
llvm::Expected<int> device_count();

// One line saying why no GPU is usable (e.g. "libcuda.so.1 not found (no NVIDIA driver)");
// empty when device_count() > 0.
std::string no_gpu_reason();

// The driver's CUDA version (e.g. 13000 for 13.0).
llvm::Expected<int> driver_version();

// A device's primary context, retained and made current on the creating thread; released on
// destruction. Move-only. Buffers, modules and events created under it must die first.
class Context {
 public:
  static llvm::Expected<Context> create(int ordinal = 0);
  Context(Context &&other) noexcept;
  Context &operator=(Context &&other) noexcept;
  Context(const Context &) = delete;
  Context &operator=(const Context &) = delete;
  ~Context();

  CUcontext get() const { return ctx_; }
  CUdevice device() const { return device_; }
  int ordinal() const { return ordinal_; }
  int cc_major() const { return cc_major_; }
  int cc_minor() const { return cc_minor_; }
  int compute_capability() const { return cc_major_ * 10 + cc_minor_; }  // e.g. 90
  const std::string &name() const { return name_; }
  int sm_count() const { return sm_count_; }
  int max_shared_per_block_optin() const { return max_shared_optin_; }  // bytes
  int l2_bytes() const { return l2_bytes_; }                              // bytes
  size_t total_memory() const { return total_memory_; }                  // bytes (cuDeviceTotalMem)

  llvm::Error make_current() const;  // for use on another thread
  llvm::Error synchronize() const;   // cuCtxSynchronize

 private:
  Context() = default;
  void release();
  CUcontext ctx_ = nullptr;
  CUdevice device_ = 0;
  int ordinal_ = -1;
  int cc_major_ = 0, cc_minor_ = 0, sm_count_ = 0, max_shared_optin_ = 0, l2_bytes_ = 0;
  size_t total_memory_ = 0;
  std::string name_;
};

// Device memory (cuMemAlloc / cuMemFree). Move-only; default-constructed is empty.
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  static llvm::Expected<DeviceBuffer> allocate(size_t bytes);
  // A view of `bytes` bytes of device memory owned elsewhere (a caller's pointer): the
  // operations work on it as on any buffer, but it is never freed here.
  static DeviceBuffer view(CUdeviceptr ptr, size_t bytes);
  template <class T>
  static llvm::Expected<DeviceBuffer> from(const std::vector<T> &host);
  DeviceBuffer(DeviceBuffer &&other) noexcept;
  DeviceBuffer &operator=(DeviceBuffer &&other) noexcept;
  DeviceBuffer(const DeviceBuffer &) = delete;
  DeviceBuffer &operator=(const DeviceBuffer &) = delete;
  ~DeviceBuffer();

  CUdeviceptr ptr() const { return ptr_; }
  size_t bytes() const { return bytes_; }

  // Synchronous copies of `bytes` bytes at byte `offset`; refused when out of bounds.
  llvm::Error upload_bytes(const void *src, size_t bytes, size_t offset = 0);
  llvm::Error download_bytes(void *dst, size_t bytes, size_t offset = 0) const;
  llvm::Error memset(uint8_t byte);  // the whole buffer

  template <class T>
  llvm::Error upload(const std::vector<T> &host, size_t offset_elements = 0);
  template <class T>
  llvm::Expected<std::vector<T>> download(size_t count, size_t offset_elements = 0) const;
  template <class T>
  llvm::Expected<std::vector<T>> download() const { return download<T>(bytes_ / sizeof(T)); }

 private:
  void release();
  CUdeviceptr ptr_ = 0;
  size_t bytes_ = 0;
  bool owned_ = true;
};

// A loaded module (cuModuleLoadData of a cubin, or of NUL-terminated PTX). Move-only.
class Module {
 public:
  static llvm::Expected<Module> load(llvm::StringRef image);
  Module(Module &&other) noexcept;
  Module &operator=(Module &&other) noexcept;
  Module(const Module &) = delete;
  Module &operator=(const Module &) = delete;
  ~Module();

  CUmodule get() const { return module_; }
  llvm::Expected<CUfunction> function(llvm::StringRef name) const;

 private:
  Module() = default;
  void release();
  CUmodule module_ = nullptr;
};

struct Dim3 {
  unsigned x = 1, y = 1, z = 1;
};

// cuLaunchKernel; raises CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES first when
// shared_bytes > 48 KiB, unless the caller did so once (limit_raised, see
// raise_shared_limit). Asynchronous: errors of the kernel itself show at the next sync.
// `programmatic`: cuLaunchKernelEx with programmatic stream serialization (sm_90, PDL): the
// grid may start while the stream's previous kernel finishes, so the kernel must wait
// (griddepcontrol.wait) before it reads or writes anything that kernel touches.
// `cluster_y` > 1: cuLaunchKernelEx in clusters of (1, cluster_y, 1) blocks (sm_90; grid.y a
// multiple of it).
llvm::Error launch(CUfunction function, Dim3 grid, Dim3 block, unsigned shared_bytes, CUstream stream,
                   void **args, bool limit_raised = false, bool programmatic = false, unsigned cluster_y = 1);
// Whether `stream` is being captured into a CUDA graph (cuStreamIsCapturing): no
// synchronization, allocation or timing may happen on it then.
llvm::Expected<bool> stream_is_capturing(CUstream stream);
// The static shared memory of `function` (CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES).
llvm::Expected<int> static_shared_bytes(CUfunction function);
// Lets `function` use up to `bytes` of dynamic shared memory (cuFuncSetAttribute); static
// plus dynamic may not exceed the device's opt-in maximum per block.
llvm::Error raise_shared_limit(CUfunction function, int bytes);

// A CUDA event (for timing). Move-only.
class Event {
 public:
  static llvm::Expected<Event> create();
  Event(Event &&other) noexcept;
  Event &operator=(Event &&other) noexcept;
  Event(const Event &) = delete;
  Event &operator=(const Event &) = delete;
  ~Event();

  CUevent get() const { return event_; }
  llvm::Error record(CUstream stream = nullptr);
  llvm::Error synchronize() const;

 private:
  Event() = default;
  void release();
  CUevent event_ = nullptr;
};

// Milliseconds between two recorded events; waits for `stop`.
llvm::Expected<float> elapsed_ms(const Event &start, const Event &stop);

// ---- templates ---------------------------------------------------------------------------

template <class T>
llvm::Expected<DeviceBuffer> DeviceBuffer::from(const std::vector<T> &host) {
  static_assert(std::is_trivially_copyable_v<T>);
  auto buffer = allocate(host.size() * sizeof(T));
  if (!buffer) return buffer.takeError();
  if (auto e = buffer->upload(host)) return e;
  return buffer;
}

template <class T>
llvm::Error DeviceBuffer::upload(const std::vector<T> &host, size_t offset_elements) {
  static_assert(std::is_trivially_copyable_v<T>);
  return upload_bytes(host.data(), host.size() * sizeof(T), offset_elements * sizeof(T));
}

template <class T>
llvm::Expected<std::vector<T>> DeviceBuffer::download(size_t count, size_t offset_elements) const {
  static_assert(std::is_trivially_copyable_v<T>);
  std::vector<T> host(count);
  if (auto e = download_bytes(host.data(), count * sizeof(T), offset_elements * sizeof(T))) return e;
  return host;
}

// Device 0's context, created on first use and held to the end of the process: the
// loaded-kernel cache (a static made later, so destroyed earlier) unloads its modules while
// it is alive. For programs (the CLI, the benchmark); the API uses primary contexts.
llvm::Expected<Context *> process_context();

}  // namespace magicube
