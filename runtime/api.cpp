#include <map>
#include <mutex>

#include "compiler/planner.h"
#include "runtime/magicube.h"

namespace magicube {

// ---- Error -------------------------------------------------------------------------------

Error::Error(const CudaError &e)
    : std::runtime_error(e.what()), kind_(Kind::Cuda), cuda_call_(e.call()), cuda_code_name_(e.code_name()),
      cuda_code_(e.code()) {}

Error Error::from(llvm::Error e, Kind kind) {
  std::string call, code_name;
  CUresult code = CUDA_SUCCESS;
  bool cuda = false;
  std::string message;
  llvm::handleAllErrors(std::move(e), [&](const llvm::ErrorInfoBase &info) {
    if (info.isA<DriverError>()) {
      const auto &d = static_cast<const DriverError &>(info);
      if (!cuda) call = d.call(), code = d.code(), code_name = d.code_name();
      cuda = true;
    }
    if (!message.empty()) message += "\n";
    message += info.message();
  });
  if (message.empty()) message = "unknown error";  // a success passed by mistake
  if (!cuda) return Error(kind, message);
  Error out(Kind::Cuda, message);
  out.cuda_call_ = call;
  out.cuda_code_ = code;
  out.cuda_code_name_ = code_name;
  return out;
}

const char *Error::kind_name(Kind k) {
  switch (k) {
    case Kind::Invalid: return "invalid";
    case Kind::Compile: return "compile";
    case Kind::Cuda: return "cuda";
    case Kind::NoGpu: return "no-gpu";
  }
  return "unknown";
}

namespace {

[[noreturn]] void raise(llvm::Error e, Error::Kind kind) { throw Error::from(std::move(e), kind); }

template <class T>
T take(llvm::Expected<T> v, Error::Kind kind) {
  if (!v) raise(v.takeError(), kind);
  return std::move(*v);
}

void check(llvm::Error e, Error::Kind kind) {
  if (e) raise(std::move(e), kind);
}

// The primary context of `device`, retained on first use for the rest of the process and
// made current on the calling thread. Created before any kernel is loaded, so destroyed
// after the loaded-kernel cache at exit.
const Context &primary_context(int device) {
  static std::mutex mu;
  static std::map<int, std::unique_ptr<Context>> contexts;
  const Context *ctx = nullptr;
  {
    std::lock_guard<std::mutex> lock(mu);
    auto it = contexts.find(device);
    if (it == contexts.end()) {
      std::string why = no_gpu_reason();
      if (!why.empty()) throw Error(Error::Kind::NoGpu, "no GPU: " + why);
      auto n = device_count();
      if (!n) raise(n.takeError(), Error::Kind::Cuda);
      if (device < 0 || device >= *n)
        throw Error(Error::Kind::Invalid, "device: " + std::to_string(device) + " is not a CUDA device (allowed: 0.." +
                                              std::to_string(*n - 1) + ")");
      auto c = take(Context::create(device), Error::Kind::Cuda);
      it = contexts.emplace(device, std::make_unique<Context>(std::move(c))).first;
    }
    ctx = it->second.get();
  }
  check(ctx->make_current(), Error::Kind::Cuda);
  return *ctx;
}

}  // namespace

OpSpec parse_spec(const std::string &text) { return take(parse_opspec(text), Error::Kind::Invalid); }

// ---- Spmm --------------------------------------------------------------------------------

struct Spmm::State {
  Plan plan;
  SpmmOptions options;
  std::mutex mu;
  std::shared_ptr<const Kernel> kernel;  // loaded on first use
};

Spmm::Spmm(const OpSpec &spec, SpmmOptions options) : state_(std::make_shared<State>()) {
  if (spec.op != OpKind::SpMM)
    throw Error(Error::Kind::Invalid, std::string("op: Spmm needs an spmm spec, got '") + op_name(spec.op) + "' (" +
                                          to_string(spec) + ")");
  if (spec.out != OutType::Int32 && spec.out != OutType::Int64)
    throw Error(Error::Kind::Invalid, std::string("out: the API runs int32 and int64 outputs; '") + out_name(spec.out) +
                                          "' is not supported yet (" + to_string(spec) + ")");
  auto plans = take(plan_candidates(spec), Error::Kind::Invalid);
  if (options.candidate < 0 || size_t(options.candidate) >= plans.size())
    throw Error(Error::Kind::Invalid, "candidate: " + std::to_string(options.candidate) + " is out of range: " +
                                          to_string(spec) + " has " + std::to_string(plans.size()) +
                                          " candidate plan(s) (allowed: 0.." + std::to_string(plans.size() - 1) + ")");
  state_->plan = std::move(plans[options.candidate]);
  state_->options = options;
}

const OpSpec &Spmm::spec() const { return state_->plan.spec; }
const Plan &Spmm::plan() const { return state_->plan; }
const SpmmOptions &Spmm::options() const { return state_->options; }
std::string Spmm::kernel_name() const { return state_->plan.kernel_name(); }

int64_t Spmm::max_reduction_length() const {
  const Plan &p = state_->plan;
  return p.spec.out == OutType::Int32 ? p.max_exact_k : p.max_term_k;
}

size_t Spmm::output_element_bytes() const { return state_->plan.spec.out == OutType::Int32 ? 4 : 8; }

HostLhs Spmm::pack_lhs(const VectorSparse &a) const {
  const Plan &p = state_->plan;
  if (a.v != p.spec.v)
    throw Error(Error::Kind::Invalid, "lhs A: has V=" + std::to_string(a.v) + " but the spec " + to_string(p.spec) +
                                          " has V=" + std::to_string(p.spec.v));
  check(check_reduction_length(p, a.max_block_length()), Error::Kind::Invalid);
  HostLhs h;
  h.layout = take(build_srbcrs(a, p), Error::Kind::Invalid);
  h.packed = take(magicube::pack_lhs(h.layout, p), Error::Kind::Invalid);
  return h;
}

PackedRhs Spmm::pack_rhs(const std::vector<int64_t> &b, int64_t k, int64_t n) const {
  if (k < 0 || n < 0)
    throw Error(Error::Kind::Invalid, "rhs B: shape " + std::to_string(k) + " x " + std::to_string(n) + " is negative");
  return take(magicube::pack_rhs(b, k, n, state_->plan), Error::Kind::Invalid);
}

DeviceLhs Spmm::upload(const HostLhs &a) const {
  primary_context(state_->options.device);
  return take(magicube::upload(a.packed, a.layout), Error::Kind::Cuda);
}

DeviceRhs Spmm::upload(const PackedRhs &b) const {
  primary_context(state_->options.device);
  return take(magicube::upload(b), Error::Kind::Cuda);
}

DeviceBuffer Spmm::allocate_output(int64_t m, int64_t n) const {
  if (m < 0 || n < 0)
    throw Error(Error::Kind::Invalid, "c: shape " + std::to_string(m) + " x " + std::to_string(n) + " is negative");
  primary_context(state_->options.device);
  return take(DeviceBuffer::allocate(std::max<size_t>(1, size_t(m) * size_t(n) * output_element_bytes())),
              Error::Kind::Cuda);
}

namespace {
// The kernel of `plan`, loaded on first use (the context is made current either way).
std::shared_ptr<const Kernel> loaded_kernel(int device, const Plan &plan, std::mutex &mu,
                                            std::shared_ptr<const Kernel> &kernel) {
  const Context &ctx = primary_context(device);
  std::lock_guard<std::mutex> lock(mu);
  if (!kernel) {
    // A plan for a newer arch than the device's is the caller's mistake, not a compile error.
    (void)take(target_arch(plan, ctx.compute_capability()), Error::Kind::Invalid);
    kernel = take(Kernel::get(ctx, plan), Error::Kind::Compile);
  }
  return kernel;
}
}  // namespace

void Spmm::load() const { loaded_kernel(state_->options.device, state_->plan, state_->mu, state_->kernel); }

void Spmm::run(const DeviceLhs &a, const DeviceRhs &b, CUdeviceptr c, CUstream stream) const {
  auto k = loaded_kernel(state_->options.device, state_->plan, state_->mu, state_->kernel);
  check(k->launch(a, b, c, stream), Error::Kind::Invalid);  // a DriverError still becomes Kind::Cuda
}

std::vector<int64_t> Spmm::multiply(const VectorSparse &a, const std::vector<int64_t> &b, int64_t n) const {
  HostLhs ha = pack_lhs(a);
  PackedRhs hb = pack_rhs(b, a.cols, n);
  const Context &ctx = primary_context(state_->options.device);
  DeviceLhs da = upload(ha);
  DeviceRhs db = upload(hb);
  DeviceBuffer c = allocate_output(a.rows, n);
  run(da, db, c.ptr(), nullptr);
  check(ctx.synchronize(), Error::Kind::Cuda);
  size_t count = size_t(a.rows) * size_t(n);
  if (output_element_bytes() == 8) return take(c.download<int64_t>(count), Error::Kind::Cuda);
  std::vector<int32_t> c32 = take(c.download<int32_t>(count), Error::Kind::Cuda);
  return std::vector<int64_t>(c32.begin(), c32.end());
}

std::vector<int64_t> spmm_host(const OpSpec &spec, const VectorSparse &a, const std::vector<int64_t> &b, int64_t n) {
  return Spmm(spec).multiply(a, b, n);
}

}  // namespace magicube
