#include "runtime/cuda_driver.h"

#include <dlfcn.h>

#include <array>
#include <optional>
#include <utility>

#include "llvm/ADT/Twine.h"
#include "llvm/Support/raw_ostream.h"
#include "support/log.h"

namespace magicube {

// ---- the dlopen'ed driver ----------------------------------------------------------------

namespace {

// Every entry point we use. cuda.h maps most names to versioned symbols (cuMemAlloc ->
// cuMemAlloc_v2); `#fn` gives the API name for messages, STR(fn) the symbol a link against
// libcuda would bind, and decltype(&::fn) its prototype.
#define MAGICUBE_DRIVER_FUNCTIONS(X)                                                                    \
  X(cuInit) X(cuDriverGetVersion) X(cuGetErrorName) X(cuGetErrorString) X(cuDeviceGetCount) X(cuDeviceGet) \
  X(cuDeviceGetName) X(cuDeviceTotalMem) X(cuDeviceGetAttribute) X(cuDevicePrimaryCtxRetain) X(cuDevicePrimaryCtxRelease)      \
  X(cuCtxSetCurrent) X(cuCtxSynchronize) X(cuMemAlloc) X(cuMemFree) X(cuMemcpyHtoD) X(cuMemcpyDtoH)         \
  X(cuMemsetD8) X(cuModuleLoadData) X(cuModuleUnload) X(cuModuleGetFunction) X(cuFuncSetAttribute)          \
  X(cuFuncGetAttribute) X(cuLaunchKernel) X(cuLaunchKernelEx) X(cuEventCreate) X(cuEventDestroy) X(cuEventRecord)               \
  X(cuEventSynchronize) X(cuStreamIsCapturing)                                                              \
  X(cuEventElapsedTime)

#define MAGICUBE_STR2(x) #x
#define MAGICUBE_STR(x) MAGICUBE_STR2(x)

struct Api {
#define MAGICUBE_MEMBER(fn) decltype(&::fn) fn = nullptr;
  MAGICUBE_DRIVER_FUNCTIONS(MAGICUBE_MEMBER)
#undef MAGICUBE_MEMBER
};

struct Driver {
  Api api;
  bool loaded = false;                         // libcuda.so.1 open with every entry point
  CUresult init = CUDA_ERROR_NOT_INITIALIZED;  // cuInit's result, once loaded
  int version = 0;                             // cuDriverGetVersion
  std::string reason;                          // why unusable, when it is
  bool usable() const { return loaded && init == CUDA_SUCCESS; }
};

// "CUDA_ERROR_X (description)" for a result, through the loaded driver.
std::pair<std::string, std::string> describe(const Api &api, CUresult r) {
  const char *name = nullptr, *text = nullptr;
  if (api.cuGetErrorName(r, &name) != CUDA_SUCCESS || !name) name = nullptr;
  if (api.cuGetErrorString(r, &text) != CUDA_SUCCESS || !text) text = nullptr;
  return {name ? std::string(name) : "CUresult " + std::to_string(int(r)), text ? std::string(text) : "unknown error"};
}

Driver load_driver() {
  Driver d;
  void *lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!lib) {
    const char *why = dlerror();
    d.reason = "libcuda.so.1 not found (no NVIDIA driver)";
    log().debug("cuda driver: dlopen(libcuda.so.1) failed: {}", why ? why : "?");
    return d;
  }
  // The handle is never closed: driver objects may outlive any owner we could give it.
#define MAGICUBE_RESOLVE(fn)                                                                           \
  d.api.fn = reinterpret_cast<decltype(&::fn)>(dlsym(lib, MAGICUBE_STR(fn)));                         \
  if (!d.api.fn) {                                                                                     \
    d.reason = "libcuda.so.1 lacks " MAGICUBE_STR(fn) " (NVIDIA driver older than the CUDA " +         \
               std::to_string(CUDA_VERSION / 1000) + "." + std::to_string(CUDA_VERSION % 1000 / 10) + \
               " headers)";                                                                            \
    log().debug("cuda driver: {}", d.reason);                                                          \
    return d;                                                                                          \
  }
  MAGICUBE_DRIVER_FUNCTIONS(MAGICUBE_RESOLVE)
#undef MAGICUBE_RESOLVE
  d.loaded = true;
  d.init = d.api.cuInit(0);
  if (d.init != CUDA_SUCCESS) {
    auto [name, text] = describe(d.api, d.init);
    d.reason = "cuInit failed: " + name + " (" + text + ")";
    log().debug("cuda driver: {}", d.reason);
    return d;
  }
  if (d.api.cuDriverGetVersion(&d.version) != CUDA_SUCCESS) d.version = 0;
  log().debug("cuda driver: libcuda.so.1 loaded, driver version {}.{}", d.version / 1000, d.version % 1000 / 10);
  return d;
}

const Driver &driver() {
  static const Driver d = load_driver();
  return d;
}

const Api &api() { return driver().api; }

llvm::Error plain(const llvm::Twine &msg) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), msg);
}

// Success, or why the driver cannot be used.
llvm::Error require_driver() {
  const Driver &d = driver();
  if (d.usable()) return llvm::Error::success();
  return plain("CUDA driver unusable: " + d.reason);
}

// cuInit results that mean "no usable GPU here" rather than a fault to report.
bool means_no_gpu(CUresult r) {
  switch (r) {
    case CUDA_ERROR_NO_DEVICE:
    case CUDA_ERROR_NOT_INITIALIZED:
    case CUDA_ERROR_STUB_LIBRARY:
    case CUDA_ERROR_SYSTEM_DRIVER_MISMATCH:
    case CUDA_ERROR_COMPAT_NOT_SUPPORTED_ON_DEVICE:
    case CUDA_ERROR_SYSTEM_NOT_READY:
      return true;
    default:
      return false;
  }
}

llvm::Error check(CUresult r, const char *call, const llvm::Twine &context = "") {
  if (r == CUDA_SUCCESS) return llvm::Error::success();
  auto [name, text] = describe(api(), r);
  return llvm::make_error<DriverError>(call, r, std::move(name), std::move(text), context.str());
}

// Calls a driver entry point through the loaded table: CU(cuMemAlloc, &p, n) -> llvm::Error
// "cuMemAlloc failed: ...". The driver must be usable (require_driver) before.
#define CU(fn, ...) check(api().fn(__VA_ARGS__), #fn)
#define CU_CTX(context, fn, ...) check(api().fn(__VA_ARGS__), #fn, context)

std::string dims(Dim3 d) {
  return "(" + std::to_string(d.x) + ", " + std::to_string(d.y) + ", " + std::to_string(d.z) + ")";
}

}  // namespace

// ---- errors ------------------------------------------------------------------------------

char DriverError::ID = 0;

DriverError::DriverError(std::string call, CUresult code, std::string code_name, std::string description,
                         std::string context)
    : call_(std::move(call)),
      code_(code),
      code_name_(std::move(code_name)),
      description_(std::move(description)),
      context_(std::move(context)) {}

std::string DriverError::message() const {
  std::string m = call_ + " failed: " + code_name_ + " (" + description_ + ")";
  if (!context_.empty()) m += "; " + context_;
  return m;
}

void DriverError::log(llvm::raw_ostream &os) const { os << message(); }

void throw_if_error(llvm::Error error) {
  if (!error) return;
  // Throw only after LLVM's handlers are done with the payload.
  std::optional<CudaError> cuda;
  std::string other;
  llvm::handleAllErrors(
      std::move(error),
      [&](const DriverError &e) {
        if (!cuda) cuda.emplace(e.to_exception());
        else other += (other.empty() ? "" : "; ") + e.message();
      },
      [&](const llvm::ErrorInfoBase &e) { other += (other.empty() ? "" : "; ") + e.message(); });
  if (cuda) throw *cuda;
  throw std::runtime_error(other);
}

// ---- driver and devices ------------------------------------------------------------------

llvm::Expected<int> device_count() {
  const Driver &d = driver();
  if (!d.loaded) return 0;
  if (d.init != CUDA_SUCCESS) {
    if (means_no_gpu(d.init)) return 0;
    return plain("CUDA driver unusable: " + d.reason);
  }
  int n = 0;
  if (auto e = CU(cuDeviceGetCount, &n)) return e;
  return n;
}

std::string no_gpu_reason() {
  const Driver &d = driver();
  if (!d.usable()) return d.reason;
  auto n = device_count();
  if (!n) return llvm::toString(n.takeError());
  if (*n == 0) return "no CUDA device visible (cuDeviceGetCount returned 0)";
  return "";
}

llvm::Expected<int> driver_version() {
  if (auto e = require_driver()) return e;
  return driver().version;
}

// ---- Context -----------------------------------------------------------------------------

llvm::Expected<Context> Context::create(int ordinal) {
  if (auto e = require_driver()) return e;
  auto n = device_count();
  if (!n) return n.takeError();
  if (ordinal < 0 || ordinal >= *n)
    return plain("device ordinal " + llvm::Twine(ordinal) + " is out of range: " + llvm::Twine(*n) +
                 " CUDA device(s)");
  Context c;
  c.ordinal_ = ordinal;
  if (auto e = CU_CTX("device " + llvm::Twine(ordinal), cuDeviceGet, &c.device_, ordinal)) return e;
  if (auto e = CU_CTX("device " + llvm::Twine(ordinal), cuDevicePrimaryCtxRetain, &c.ctx_, c.device_))
    return e;
  // From here `c` owns the retained context: early returns release it.
  if (auto e = CU(cuCtxSetCurrent, c.ctx_)) return e;
  std::array<char, 256> name{};
  if (auto e = CU(cuDeviceGetName, name.data(), int(name.size()) - 1, c.device_)) return e;
  c.name_ = name.data();
  if (auto e = CU(cuDeviceTotalMem, &c.total_memory_, c.device_)) return e;
  struct {
    CUdevice_attribute attribute;
    int *out;
    const char *what;
  } attributes[] = {
      {CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, &c.cc_major_, "COMPUTE_CAPABILITY_MAJOR"},
      {CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, &c.cc_minor_, "COMPUTE_CAPABILITY_MINOR"},
      {CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, &c.sm_count_, "MULTIPROCESSOR_COUNT"},
      {CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN, &c.max_shared_optin_,
       "MAX_SHARED_MEMORY_PER_BLOCK_OPTIN"},
      {CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE, &c.l2_bytes_, "L2_CACHE_SIZE"},
  };
  for (auto &a : attributes)
    if (auto e = CU_CTX(llvm::Twine("attribute ") + a.what, cuDeviceGetAttribute, a.out, a.attribute, c.device_))
      return e;
  log().debug("cuda: device {} '{}', sm_{}{}, {} SMs", ordinal, c.name_, c.cc_major_, c.cc_minor_, c.sm_count_);
  return c;
}

Context::Context(Context &&o) noexcept
    : ctx_(std::exchange(o.ctx_, nullptr)),
      device_(o.device_),
      ordinal_(o.ordinal_),
      cc_major_(o.cc_major_),
      cc_minor_(o.cc_minor_),
      sm_count_(o.sm_count_),
      max_shared_optin_(o.max_shared_optin_),
      l2_bytes_(o.l2_bytes_),
      total_memory_(o.total_memory_),
      name_(std::move(o.name_)) {}

Context &Context::operator=(Context &&o) noexcept {
  if (this != &o) {
    release();
    ctx_ = std::exchange(o.ctx_, nullptr);
    device_ = o.device_;
    ordinal_ = o.ordinal_;
    cc_major_ = o.cc_major_;
    cc_minor_ = o.cc_minor_;
    sm_count_ = o.sm_count_;
    max_shared_optin_ = o.max_shared_optin_;
    l2_bytes_ = o.l2_bytes_;
    total_memory_ = o.total_memory_;
    name_ = std::move(o.name_);
  }
  return *this;
}

Context::~Context() { release(); }

void Context::release() {
  if (!ctx_) return;
  if (auto e = CU(cuDevicePrimaryCtxRelease, device_))
    log().warn("cuda: releasing the primary context of device {}: {}", ordinal_, llvm::toString(std::move(e)));
  ctx_ = nullptr;
}

llvm::Error Context::make_current() const { return CU(cuCtxSetCurrent, ctx_); }

llvm::Error Context::synchronize() const { return CU(cuCtxSynchronize); }

// ---- DeviceBuffer ------------------------------------------------------------------------

llvm::Expected<DeviceBuffer> DeviceBuffer::allocate(size_t bytes) {
  if (auto e = require_driver()) return e;
  DeviceBuffer b;
  if (bytes == 0) return b;  // cuMemAlloc refuses 0 bytes; an empty buffer is fine
  if (auto e = CU_CTX(llvm::Twine(bytes) + " bytes", cuMemAlloc, &b.ptr_, bytes)) return e;
  b.bytes_ = bytes;
  return b;
}

DeviceBuffer DeviceBuffer::view(CUdeviceptr ptr, size_t bytes) {
  DeviceBuffer b;
  b.ptr_ = ptr;
  b.bytes_ = bytes;
  b.owned_ = false;
  return b;
}

DeviceBuffer::DeviceBuffer(DeviceBuffer &&o) noexcept
    : ptr_(std::exchange(o.ptr_, 0)), bytes_(std::exchange(o.bytes_, 0)), owned_(std::exchange(o.owned_, true)) {}

DeviceBuffer &DeviceBuffer::operator=(DeviceBuffer &&o) noexcept {
  if (this != &o) {
    release();
    ptr_ = std::exchange(o.ptr_, 0);
    bytes_ = std::exchange(o.bytes_, 0);
    owned_ = std::exchange(o.owned_, true);
  }
  return *this;
}

DeviceBuffer::~DeviceBuffer() { release(); }

void DeviceBuffer::release() {
  if (!owned_) ptr_ = 0, bytes_ = 0, owned_ = true;
  if (!ptr_) return;
  if (auto e = CU(cuMemFree, ptr_))
    log().warn("cuda: freeing {} bytes of device memory: {}", bytes_, llvm::toString(std::move(e)));
  ptr_ = 0;
  bytes_ = 0;
}

namespace {
llvm::Error check_range(const char *what, size_t bytes, size_t offset, size_t size) {
  if (offset <= size && bytes <= size - offset) return llvm::Error::success();
  return plain(llvm::Twine("DeviceBuffer::") + what + ": " + llvm::Twine(bytes) + " bytes at offset " +
               llvm::Twine(offset) + " exceed the buffer's " + llvm::Twine(size) + " bytes");
}
}  // namespace

llvm::Error DeviceBuffer::upload_bytes(const void *src, size_t bytes, size_t offset) {
  if (auto e = check_range("upload", bytes, offset, bytes_)) return e;
  if (bytes == 0) return llvm::Error::success();
  return CU_CTX(llvm::Twine(bytes) + " bytes", cuMemcpyHtoD, ptr_ + offset, src, bytes);
}

llvm::Error DeviceBuffer::download_bytes(void *dst, size_t bytes, size_t offset) const {
  if (auto e = check_range("download", bytes, offset, bytes_)) return e;
  if (bytes == 0) return llvm::Error::success();
  return CU_CTX(llvm::Twine(bytes) + " bytes", cuMemcpyDtoH, dst, ptr_ + offset, bytes);
}

llvm::Error DeviceBuffer::memset(uint8_t byte) {
  if (bytes_ == 0) return llvm::Error::success();
  return CU_CTX(llvm::Twine(bytes_) + " bytes", cuMemsetD8, ptr_, byte, bytes_);
}

// ---- Module ------------------------------------------------------------------------------

llvm::Expected<Module> Module::load(llvm::StringRef image) {
  if (auto e = require_driver()) return e;
  if (image.empty()) return plain("cuModuleLoadData: the module image is empty");
  // A cubin carries its size; PTX must end in NUL, which a copy guarantees.
  std::string copy = image.str();
  Module m;
  if (auto e = CU_CTX(llvm::Twine(image.size()) + "-byte image", cuModuleLoadData, &m.module_, copy.c_str()))
    return e;
  return m;
}

Module::Module(Module &&o) noexcept : module_(std::exchange(o.module_, nullptr)) {}

Module &Module::operator=(Module &&o) noexcept {
  if (this != &o) {
    release();
    module_ = std::exchange(o.module_, nullptr);
  }
  return *this;
}

Module::~Module() { release(); }

void Module::release() {
  if (!module_) return;
  if (auto e = CU(cuModuleUnload, module_)) {
    // Kernels cached for the whole process may outlive the context that loaded them (its
    // release at exit unloads every module): that is expected, not worth a warning.
    std::string msg = llvm::toString(std::move(e));
    bool gone = msg.find("CONTEXT_IS_DESTROYED") != std::string::npos ||
                msg.find("INVALID_HANDLE") != std::string::npos || msg.find("DEINITIALIZED") != std::string::npos;
    if (gone)
      log().debug("cuda: unloading a module after its context: {}", msg);
    else
      log().warn("cuda: unloading a module: {}", msg);
  }
  module_ = nullptr;
}

llvm::Expected<CUfunction> Module::function(llvm::StringRef name) const {
  CUfunction f = nullptr;
  std::string n = name.str();
  if (auto e = CU_CTX("function '" + name + "'", cuModuleGetFunction, &f, module_, n.c_str())) return e;
  return f;
}

// ---- launch ------------------------------------------------------------------------------

llvm::Expected<int> static_shared_bytes(CUfunction function) {
  if (auto e = require_driver()) return e;
  int bytes = 0;
  if (auto e = CU_CTX("SHARED_SIZE_BYTES", cuFuncGetAttribute, &bytes, CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES, function))
    return e;
  return bytes;
}

llvm::Expected<bool> stream_is_capturing(CUstream stream) {
  if (auto e = require_driver()) return e;
  CUstreamCaptureStatus st = CU_STREAM_CAPTURE_STATUS_NONE;
  if (auto e = CU_CTX("stream", cuStreamIsCapturing, stream, &st)) return e;
  return st != CU_STREAM_CAPTURE_STATUS_NONE;
}

llvm::Error raise_shared_limit(CUfunction function, int bytes) {
  if (auto e = require_driver()) return e;
  return CU_CTX("MAX_DYNAMIC_SHARED_SIZE_BYTES = " + llvm::Twine(bytes), cuFuncSetAttribute, function,
                CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, bytes);
}

llvm::Error launch(CUfunction function, Dim3 grid, Dim3 block, unsigned shared_bytes, CUstream stream,
                   void **args, bool limit_raised, bool programmatic, unsigned cluster_y) {
  if (!grid.x || !grid.y || !grid.z || !block.x || !block.y || !block.z)
    return plain("launch: empty grid " + dims(grid) + " or block " + dims(block));
  if (cluster_y == 0 || grid.y % cluster_y != 0)
    return plain("launch: grid " + dims(grid) + " is not made of clusters of (1, " + llvm::Twine(cluster_y) + ", 1) blocks");
  if (auto e = require_driver()) return e;
  if (!function) return plain("launch: null CUfunction");
  constexpr unsigned kDefaultSharedLimit = 48 * 1024;
  if (shared_bytes > kDefaultSharedLimit && !limit_raised)
    if (auto e = raise_shared_limit(function, int(shared_bytes))) return e;
  // The hot path: no strings are built unless the launch fails.
  CUresult r;
  const bool ex = programmatic || cluster_y > 1;
  if (ex) {
    CUlaunchAttribute attrs[2]{};
    unsigned n = 0;
    if (programmatic) {
      attrs[n].id = CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION;
      attrs[n++].value.programmaticStreamSerializationAllowed = 1;
    }
    if (cluster_y > 1) {
      attrs[n].id = CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION;
      attrs[n].value.clusterDim.x = 1, attrs[n].value.clusterDim.y = cluster_y, attrs[n++].value.clusterDim.z = 1;
    }
    CUlaunchConfig config{};
    config.gridDimX = grid.x, config.gridDimY = grid.y, config.gridDimZ = grid.z;
    config.blockDimX = block.x, config.blockDimY = block.y, config.blockDimZ = block.z;
    config.sharedMemBytes = shared_bytes, config.hStream = stream;
    config.attrs = attrs, config.numAttrs = n;
    r = api().cuLaunchKernelEx(&config, function, args, nullptr);
  } else {
    r = api().cuLaunchKernel(function, grid.x, grid.y, grid.z, block.x, block.y, block.z, shared_bytes, stream, args,
                             nullptr);
  }
  if (r == CUDA_SUCCESS) return llvm::Error::success();
  std::string call = "cuLaunchKernel";
  if (ex)
    call += std::string("Ex (") + (programmatic ? "programmatic stream serialization" : "") +
            (programmatic && cluster_y > 1 ? ", " : "") +
            (cluster_y > 1 ? "clusters of " + std::to_string(cluster_y) + " blocks" : "") + ")";
  return check(r, call.c_str(),
               "grid " + dims(grid) + ", block " + dims(block) + ", " + llvm::Twine(shared_bytes) +
                   " bytes of dynamic shared memory");
}

// ---- Event -------------------------------------------------------------------------------

llvm::Expected<Event> Event::create() {
  if (auto e = require_driver()) return e;
  Event ev;
  if (auto e = CU(cuEventCreate, &ev.event_, CU_EVENT_DEFAULT)) return e;
  return ev;
}

Event::Event(Event &&o) noexcept : event_(std::exchange(o.event_, nullptr)) {}

Event &Event::operator=(Event &&o) noexcept {
  if (this != &o) {
    release();
    event_ = std::exchange(o.event_, nullptr);
  }
  return *this;
}

Event::~Event() { release(); }

void Event::release() {
  if (!event_) return;
  if (auto e = CU(cuEventDestroy, event_)) log().warn("cuda: destroying an event: {}", llvm::toString(std::move(e)));
  event_ = nullptr;
}

llvm::Error Event::record(CUstream stream) { return CU(cuEventRecord, event_, stream); }

llvm::Error Event::synchronize() const { return CU(cuEventSynchronize, event_); }

llvm::Expected<float> elapsed_ms(const Event &start, const Event &stop) {
  if (auto e = stop.synchronize()) return e;
  float ms = 0;
  if (auto e = CU(cuEventElapsedTime, &ms, start.get(), stop.get())) return e;
  return ms;
}

llvm::Expected<Context *> process_context() {
  static std::optional<Context> ctx;
  if (!ctx) {
    auto created = Context::create(0);
    if (!created) return created.takeError();
    ctx.emplace(std::move(*created));
  }
  return &*ctx;
}

}  // namespace magicube
