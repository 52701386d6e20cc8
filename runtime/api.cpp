#include <algorithm>
#include <cstring>
#include <tuple>
#include <optional>
#include <map>
#include <mutex>
#include <new>
#include <stdexcept>

#include "compiler/dense_chunks.h"
#include "compiler/planner.h"
#include "runtime/epilogue.h"
#include "runtime/magicube.h"
#include "runtime/memory_budget.h"

#include "runtime/autotune.h"
#include "runtime/dense_epilogue.h"
#include "runtime/dense_gemm.h"
#include "runtime/dense_route.h"
#include "runtime/dispatch.h"
#include "support/log.h"

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

// Sizes are checked before allocating (runtime/memory_budget.h); what still fails to
// allocate becomes Error::Kind::Invalid naming the call, never an escaping std::bad_alloc.
[[noreturn]] void out_of_memory(const char *call, const char *why) {
  throw Error(Error::Kind::Invalid, std::string(call) + ": the operands are too large for this machine's memory (" +
                                        why + ")");
}
#define MAGICUBE_CATCH_ALLOC(call)                                          \
  catch (const std::bad_alloc &) { out_of_memory(call, "std::bad_alloc"); } \
  catch (const std::length_error &) { out_of_memory(call, "std::length_error"); }

// The primary context of `device`, retained on first use for the rest of the process and
// made current on the calling thread.
const Context &primary_context(int device) {
  static std::mutex mu;
  // Never destroyed (like the loaded-kernel cache): no driver calls from static destructors.
  static auto &contexts = *new std::map<int, std::unique_ptr<Context>>();
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

// ---- shared by Spmm and Sddmm ------------------------------------------------------------

namespace {

// The plan and the kernel (loaded on first use) of one op; shared by its copies.
struct OpState {
  Plan plan;
  std::string chosen_by;
  Route route = Route::Sparse;
  std::string route_why;
  SpmmOptions options;
  std::mutex mu;
  std::shared_ptr<const Kernel> kernel;
};

// The dispatch's plan for `spec` (on the matrix `sig` when known): a tuning record, the
// policy around the pinned knobs, or the knobs as given (runtime/dispatch.h). The device's
// own facts when a GPU is usable, else the arch's reference device. `cls` ("Spmm") and
// `want` name the op the class runs.
Dispatched plan_op(const OpSpec &spec, const MatrixSignature *sig, const SpmmOptions &options, OpKind want,
                   const char *cls) {
  if (spec.op != want)
    throw Error(Error::Kind::Invalid, std::string("op: ") + cls + " needs an " + op_name(want) + " spec, got '" +
                                          op_name(spec.op) + "' (" + to_string(spec) + ")");
  DenseRoute dense = options.dense;
  if (want != OpKind::SpMM) {
    if (dense == DenseRoute::Forced)
      throw Error(Error::Kind::Invalid, std::string("dense: the dense route runs SpMM only (") + cls + " of " +
                                            to_string(spec) + ")");
    dense = DenseRoute::Never;
  }
  DeviceFacts dev = DeviceFacts::reference_for(spec.arch);
  if (no_gpu_reason().empty()) {
    try {
      dev = device_facts(primary_context(options.device));
    } catch (const Error &) {
      // planning needs no GPU: the reference device's facts
    }
  }
  return take(dispatch(spec, sig, dev, options.candidate, nullptr, dense), Error::Kind::Invalid);
}

// The op's plan and where it came from.
void adopt(OpState &st, Dispatched d, const SpmmOptions &options) {
  st.plan = std::move(d.plan);
  st.chosen_by = d.chosen_by();
  st.route = d.route;
  st.route_why = std::move(d.route_why);
  st.options = options;
}

int64_t reduction_bound(const Plan &p) { return p.spec.out == OutType::Int32 ? p.max_exact_k : p.max_term_k; }

// `count` output elements of type `t`, widened to int64 (integers sign-extended, float bit
// patterns zero-extended).
std::vector<int64_t> download_elements(const DeviceBuffer &buf, int64_t count, OutType t) {
  return take(download_stored(buf, count, t), Error::Kind::Cuda);
}

// Refuses scales or bias that do not fit the spec for an m x n result.
void check_epilogue_args(const OpSpec &spec, const EpilogueArgs &e, int64_t m, int64_t n) {
  const std::string in = " (" + to_string(spec) + ")";
  auto invalid = [&](const std::string &msg) { throw Error(Error::Kind::Invalid, "epilogue: " + msg + in); };
  if (!is_float(spec.out)) {
    if (e.alpha != 1.0f || !e.row_scale.empty() || !e.col_scale.empty() || !e.bias.empty())
      invalid(std::string("scales and bias need a float output (out is ") + out_name(spec.out) + ")");
    return;
  }
  if (spec.scale != Scale::Tensor && e.alpha != 1.0f)
    invalid("alpha is given but the spec has no per-tensor scale (+t)");
  if (spec.scale != Scale::RowCol && (!e.row_scale.empty() || !e.col_scale.empty()))
    invalid("row_scale/col_scale are given but the spec has no rowcol scale (+rc)");
  if (spec.bias == Bias::None && !e.bias.empty()) invalid("bias is given but the spec has no bias");
  auto need = [&](const std::vector<float> &v, int64_t count, const char *name, const char *what) {
    if (int64_t(v.size()) != count)
      invalid(std::string(name) + " has " + std::to_string(v.size()) + " values, expected " + std::to_string(count) +
              " (" + what + ")");
  };
  if (spec.scale == Scale::RowCol) {
    need(e.row_scale, m, "row_scale", "one per row");
    need(e.col_scale, n, "col_scale", "one per column");
  }
  if (spec.bias == Bias::Row) need(e.bias, m, "bias", "one per row");
  if (spec.bias == Bias::Col) need(e.bias, n, "bias", "one per column");
}

// The kernel of `plan`, loaded on first use (the context is made current either way).
std::shared_ptr<const Kernel> loaded_kernel(OpState &st) {
  const Context &ctx = primary_context(st.options.device);
  std::lock_guard<std::mutex> lock(st.mu);
  if (!st.kernel) {
    // A plan for a newer arch than the device's is the caller's mistake, not a compile error.
    (void)take(target_arch(st.plan, ctx.compute_capability()), Error::Kind::Invalid);
    st.kernel = take(Kernel::get(ctx, st.plan), Error::Kind::Compile);
  }
  return st.kernel;
}

DeviceEpilogue upload_epilogue(const OpState &st, const EpilogueArgs &e) {
  primary_context(st.options.device);
  return take(magicube::upload(e), Error::Kind::Cuda);
}

// A device epilogue passed to an integer output is a mistake.
void check_device_epilogue(const OpSpec &spec, const DeviceEpilogue *e) {
  if (e && !is_float(spec.out))
    throw Error(Error::Kind::Invalid, std::string("epilogue: scales and bias need a float output (out is ") +
                                          out_name(spec.out) + ") (" + to_string(spec) + ")");
}

// Waits until the work queued on `stream` so far is done.
void wait_for(CUstream stream) {
  Event done = take(Event::create(), Error::Kind::Cuda);
  check(done.record(stream), Error::Kind::Cuda);
  check(done.synchronize(), Error::Kind::Cuda);
}

}  // namespace

int device_arch(int device) {
  const Context &ctx = primary_context(device);
  int best = 0;
  for (int a : {80, 86, 89, 90})
    if (a <= ctx.compute_capability()) best = a;
  if (best == 0)
    throw Error(Error::Kind::Invalid, "device: " + ctx.name() + " is " + arch_name(ctx.compute_capability()) +
                                          " (supported: sm_80 and newer)");
  return best;
}


// ---- Spmm --------------------------------------------------------------------------------

namespace {

struct DenseState {
  int64_t m = 0, k = 0, n = 0;  // the constructor's matrix and N (0: none given)
  // The dense route's cuBLASLt plans by GEMM shape (rows and columns of the row-major result,
  // K): C (m x n) and C^T (n x m, the operands swapped). Created by load() (timed on scratch
  // buffers) or on first use with a shape (timed once on that run's buffers, unless its stream
  // is being captured into a graph); at most kMaxDensePlans, load()'s kept.
  std::mutex dense_mu;
  std::map<std::tuple<int64_t, int64_t, int64_t>, std::shared_ptr<const DenseGemm>> gemms;
  bool dense_loaded = false;
  DeviceBuffer own_workspace;  // for runs that pass none (allocated by the first, grown for a larger scratch)
  std::vector<DeviceBuffer> retired_workspaces;  // outgrown ones: a run in flight may still use them
};

constexpr uint64_t kDenseAlign = 256;  // cuBLASLt's heuristic assumes 256-byte aligned operands
constexpr size_t kMaxDensePlans = 32;   // cuBLASLt plans an op keeps (one per distinct N seen)

// Planes of the dense route's A: one per int8 chunk of its type (compiler/dense_chunks.h).
int lhs_planes(const OpSpec &spec) { return int(dense_chunks(spec).lhs.size()); }

std::string dense_k_refusal(int64_t k) {
  if (k >= 4 && k % 4 == 0) return "";
  return "K=" + std::to_string(k) + " is not a positive multiple of 4 (cuBLASLt's int8 kernels need it)";
}

// The buffers a new plan is timed on (the run's own: its output is written right after).
struct DenseRunBuffers {
  const Context *ctx = nullptr;
  CUdeviceptr a = 0, bt = 0, c = 0, workspace = 0;
  CUstream stream = nullptr;
};

// Times a new plan's algorithms (every form, cold L2) on the run's buffers, as load() does on
// scratch ones: the torch ops' forced dense ops have no matrix at construction, so every shape
// they see is new. Not while the stream is being captured (timing synchronizes): the heuristic's
// first algorithm then, logged. A failure to time (e.g. no memory for the L2 flush buffer)
// keeps the heuristic's first too, with a warning: the result is the same, only slower.
void time_new_plan(DenseGemm &g, const DenseRunBuffers &run) {
  auto capturing = stream_is_capturing(run.stream);
  if (!capturing || *capturing) {
    std::string why = capturing ? "the stream is being captured" : llvm::toString(capturing.takeError());
    log().debug("dense route: M={} N={} K={}: the heuristic's first algorithm, untimed ({})", g.m(), g.n(), g.k(), why);
    return;
  }
  if (auto e = g.select(*run.ctx, run.a, run.bt, run.c, run.workspace, run.stream))
    log().warn("dense route: M={} N={} K={}: timing cuBLASLt's algorithms failed, the heuristic's first runs: {}", g.m(),
               g.n(), g.k(), llvm::toString(std::move(e)));
}

// The dense GEMM plan for a row-major result of rows x cols (reduction k), created now and
// timed on `run`'s buffers where load() did not make one. Call with st.dense_mu held.
std::shared_ptr<const DenseGemm> dense_gemm_locked(DenseState &st, int64_t rows, int64_t cols, int64_t k,
                                                   const DenseRunBuffers &run) {
  auto key = std::make_tuple(rows, cols, k);
  if (auto it = st.gemms.find(key); it != st.gemms.end()) return it->second;
  std::unique_ptr<DenseGemm> g = take(DenseGemm::create(rows, cols, k), Error::Kind::Invalid);
  time_new_plan(*g, run);
  // Bounded: a server that sees many N keeps at most kMaxDensePlans, dropping one that is not
  // the constructor's shape (a run in flight keeps its plan through its shared_ptr).
  if (st.gemms.size() >= kMaxDensePlans)
    for (auto it = st.gemms.begin(); it != st.gemms.end(); ++it)
      if (it->first != std::make_tuple(st.m, st.n, k) && it->first != std::make_tuple(st.n, st.m, k)) {
        st.gemms.erase(it);
        break;
      }
  return st.gemms.emplace(key, std::shared_ptr<const DenseGemm>(std::move(g))).first->second;
}

// load() of a dense op: the plans of the constructor's shape, C and C^T, each timed once on
// scratch buffers (the operands' values do not matter to the timing).
void load_dense(const OpState &op, DenseState &st) {
  const Context &ctx = primary_context(op.options.device);
  std::lock_guard<std::mutex> lock(st.dense_mu);
  if (st.dense_loaded || st.m == 0) return;
  const int64_t m = st.m, n = st.n, k = st.k;
  auto alloc = [](size_t bytes, uint8_t fill) {
    DeviceBuffer b = take(DeviceBuffer::allocate(std::max<size_t>(bytes, 1)), Error::Kind::Cuda);
    check(b.memset(fill), Error::Kind::Cuda);
    return b;
  };
  DeviceBuffer a = alloc(size_t(m * k), 0x35), bt = alloc(size_t(n * k), 0x4b), c = alloc(size_t(m * n) * 4, 0);
  DeviceBuffer ws = alloc(DenseGemm::kDefaultWorkspace, 0);
  for (bool transposed : {false, true}) {
    const int64_t rows = transposed ? n : m, cols = transposed ? m : n;
    auto key = std::make_tuple(rows, cols, k);
    if (st.gemms.count(key)) continue;  // m == n: one plan serves both
    std::unique_ptr<DenseGemm> g = take(DenseGemm::create(rows, cols, k), Error::Kind::Invalid);
    check(g->select(ctx, transposed ? bt.ptr() : a.ptr(), transposed ? a.ptr() : bt.ptr(), c.ptr(), ws.ptr()),
          Error::Kind::Cuda);
    st.gemms.emplace(key, std::shared_ptr<const DenseGemm>(std::move(g)));
  }
  check(preload_dense_epilogue(ctx, op.plan.spec), Error::Kind::Compile);
  st.dense_loaded = true;
}

[[noreturn]] void wrong_route(const OpSpec &spec, Route packed_for, Route runs, const char *what) {
  throw Error(Error::Kind::Invalid, std::string(what) + ": packed for the " + route_name(packed_for) +
                                        " route, but this op (" + to_string(spec) + ") runs the " + route_name(runs) +
                                        " route: pack it with this op");
}

}  // namespace

struct Spmm::State : OpState, DenseState {};

Spmm::Spmm(const OpSpec &spec, SpmmOptions options) : state_(std::make_shared<State>()) {
  adopt(*state_, plan_op(spec, nullptr, options, OpKind::SpMM, "Spmm"), options);
}

Spmm::Spmm(const OpSpec &spec, const VectorSparse &a, int64_t n, SpmmOptions options)
    : state_(std::make_shared<State>()) {
  if (n < 1) throw Error(Error::Kind::Invalid, "n: " + std::to_string(n) + " columns of B (allowed: >= 1)");
  const MatrixSignature sig = spmm_signature(a, n);
  adopt(*state_, plan_op(spec, &sig, options, OpKind::SpMM, "Spmm"), options);
  if (state_->route == Route::Dense) {
    if (std::string why = dense_k_refusal(a.cols); !why.empty())
      throw Error(Error::Kind::Invalid, "dense: the dense route cannot run " + to_string(spec) + ": " + why);
    state_->m = a.rows, state_->k = a.cols, state_->n = n;
  }
}

const std::string &Spmm::chosen_by() const { return state_->chosen_by; }
Route Spmm::route() const { return state_->route; }
const std::string &Spmm::route_why() const { return state_->route_why; }

const OpSpec &Spmm::spec() const { return state_->plan.spec; }
const Plan &Spmm::plan() const { return state_->plan; }
const SpmmOptions &Spmm::options() const { return state_->options; }
std::string Spmm::kernel_name() const { return state_->plan.kernel_name(); }
int64_t Spmm::max_reduction_length() const { return reduction_bound(state_->plan); }
size_t Spmm::output_element_bytes() const { return stored_bytes(state_->plan.spec.out); }
size_t Spmm::workspace_bytes() const { return workspace_bytes(state_->m, state_->n); }
size_t Spmm::workspace_bytes(int64_t m, int64_t n) const {
  if (state_->route != Route::Dense) return 0;
  if (m < 0 || n < 0 || (m > 0 && n > INT64_MAX / 4 / m))
    throw Error(Error::Kind::Invalid, "workspace_bytes: an output of " + std::to_string(m) + " x " + std::to_string(n));
  return DenseGemm::kDefaultWorkspace + dense_scratch_bytes(state_->plan.spec, m, n);
}

HostLhs Spmm::pack_lhs(const VectorSparse &a) const try {
  const Plan &p = state_->plan;
  if (a.v != p.spec.v)
    throw Error(Error::Kind::Invalid, "lhs A: has V=" + std::to_string(a.v) + " but the spec " + to_string(p.spec) +
                                          " has V=" + std::to_string(p.spec.v));
  check(check_reduction_length(p, a.max_block_length()), Error::Kind::Invalid);
  HostLhs h;
  h.layout = take(build_srbcrs(a, p), Error::Kind::Invalid);
  if (state_->route == Route::Dense) {
    if (std::string why = dense_k_refusal(a.cols); !why.empty())
      throw Error(Error::Kind::Invalid, "lhs A: the dense route cannot run it: " + why);
    if (std::string why = dense_reduction_refusal(p.spec, a.max_block_length(), a.cols); !why.empty())
      throw Error(Error::Kind::Invalid, "lhs A: " + why);
    check(check_range(h.layout, p.spec.lhs, "lhs A"), Error::Kind::Invalid);
    const int planes = lhs_planes(p.spec);
    check(check_host_alloc(planes == 1 ? "lhs A: its dense copy (M x K int8)" : "lhs A: its dense copy (int8 planes of M x K)",
                           a.rows, checked_mul(a.cols + 4, int64_t(planes)).value_or(INT64_MAX)),
          Error::Kind::Invalid);
    h.dense = dense_lhs_int8(a, p.spec);
    return h;
  }
  h.packed = take(magicube::pack_lhs(h.layout, p), Error::Kind::Invalid);
  return h;
}
MAGICUBE_CATCH_ALLOC("Spmm::pack_lhs")

PackedRhs Spmm::pack_rhs(const std::vector<int64_t> &b, int64_t k, int64_t n) const try {
  if (k < 0 || n < 0)
    throw Error(Error::Kind::Invalid, "rhs B: shape " + std::to_string(k) + " x " + std::to_string(n) + " is negative");
  if (state_->route == Route::Dense) {
    check(check_range_dense(b, k, n, false, state_->plan.spec.rhs, "rhs B"), Error::Kind::Invalid);
    PackedRhs r;
    r.k = k, r.n = n;
    r.dense_t = dense_rhs_t_int8(b, k, n, state_->plan.spec.rhs);
    return r;
  }
  return take(magicube::pack_rhs(b, k, n, state_->plan), Error::Kind::Invalid);
}
MAGICUBE_CATCH_ALLOC("Spmm::pack_rhs")

void Spmm::check_epilogue(const EpilogueArgs &epilogue, int64_t m, int64_t n) const {
  check_epilogue_args(state_->plan.spec, epilogue, m, n);
}

DeviceLhs Spmm::upload(const HostLhs &a) const {
  const bool dense = state_->route == Route::Dense;
  const bool nonempty = a.layout.rows > 0 && a.layout.cols > 0;
  if (dense && a.dense.empty() && nonempty) wrong_route(spec(), Route::Sparse, Route::Dense, "lhs A");
  if (!dense && !a.dense.empty()) wrong_route(spec(), Route::Dense, Route::Sparse, "lhs A");
  primary_context(state_->options.device);
  if (!dense) return take(magicube::upload(a.packed, a.layout), Error::Kind::Cuda);
  const int planes = lhs_planes(spec());
  if (int64_t(a.dense.size()) != dense_lhs_bytes(spec(), a.layout.rows, a.layout.cols))
    throw Error(Error::Kind::Invalid, "lhs A: its dense copy has " + std::to_string(a.dense.size()) +
                                          " values, expected " + std::to_string(planes) + " plane(s) of " +
                                          std::to_string(a.layout.rows) + " x " + std::to_string(a.layout.cols));
  DeviceLhs d;
  d.dense = take(DeviceBuffer::from(a.dense), Error::Kind::Cuda);
  d.rows = a.layout.rows;
  d.cols = a.layout.cols;
  d.num_blocks = a.layout.num_blocks();
  d.max_block_length = a.layout.max_block_length;
  return d;
}

DeviceRhs Spmm::upload(const PackedRhs &b) const {
  const bool dense = state_->route == Route::Dense;
  if (dense && b.dense_t.empty() && b.k > 0 && b.n > 0) wrong_route(spec(), Route::Sparse, Route::Dense, "rhs B");
  if (!dense && !b.dense_t.empty()) wrong_route(spec(), Route::Dense, Route::Sparse, "rhs B");
  primary_context(state_->options.device);
  if (!dense) return take(magicube::upload(b), Error::Kind::Cuda);
  DeviceRhs d;
  d.dense_t = take(DeviceBuffer::from(b.dense_t), Error::Kind::Cuda);
  d.k = b.k;
  d.n = b.n;
  return d;
}

DeviceEpilogue Spmm::upload(const EpilogueArgs &epilogue) const { return upload_epilogue(*state_, epilogue); }

DeviceBuffer Spmm::allocate_output(int64_t m, int64_t n) const {
  if (m < 0 || n < 0)
    throw Error(Error::Kind::Invalid, "c: shape " + std::to_string(m) + " x " + std::to_string(n) + " is negative");
  auto count = checked_mul(m, n);
  auto bytes = count ? checked_mul(int64_t(*count), int64_t(output_element_bytes())) : std::nullopt;
  if (!bytes || *bytes > uint64_t(INT64_MAX))
    throw Error(Error::Kind::Invalid, "c: shape " + std::to_string(m) + " x " + std::to_string(n) + " of " +
                                          std::to_string(output_element_bytes()) + "-byte elements overflows 64 bits");
  primary_context(state_->options.device);
  return take(DeviceBuffer::allocate(std::max<size_t>(1, size_t(*bytes))), Error::Kind::Cuda);
}

void Spmm::load() const {
  if (state_->route == Route::Dense) return load_dense(*state_, *state_);
  loaded_kernel(*state_);
}

namespace {
// The dense route's operands of one run, checked: packed for it, shapes agreeing.
void check_dense_operands(const Spmm &op, const DeviceLhs &a, const DeviceRhs &b) {
  if (!a.planes.empty() || (a.dense.bytes() == 0 && a.rows > 0 && a.cols > 0))
    wrong_route(op.spec(), Route::Sparse, Route::Dense, "lhs A");
  if (!b.planes.empty() || (b.dense_t.bytes() == 0 && b.k > 0 && b.n > 0))
    wrong_route(op.spec(), Route::Sparse, Route::Dense, "rhs B");
  if (b.k != a.cols)
    throw Error(Error::Kind::Invalid, "rhs B: has K=" + std::to_string(b.k) + " rows but A is " +
                                          std::to_string(a.rows) + " x " + std::to_string(a.cols));
  const DenseChunks ch = dense_chunks(op.spec());
  if (a.dense.bytes() < size_t(dense_lhs_bytes(op.spec(), a.rows, a.cols)) ||
      b.dense_t.bytes() < size_t(dense_planes_bytes(int(ch.rhs.size()), b.n, b.k, 1)))
    throw Error(Error::Kind::Invalid, "dense route: the operands' buffers are smaller than their shapes");
  if (a.max_block_length > op.max_reduction_length())
    throw Error(Error::Kind::Invalid, "lhs A: a row-block of " + std::to_string(a.max_block_length) +
                                          " vectors is longer than the output stays exact for (" +
                                          std::to_string(op.max_reduction_length()) + ")");
  if (std::string why = dense_reduction_refusal(op.spec(), a.max_block_length, a.cols); !why.empty())
    throw Error(Error::Kind::Invalid, "lhs A: " + why);
}
}  // namespace

void Spmm::run(const DeviceLhs &a, const DeviceRhs &b, CUdeviceptr c, CUstream stream,
               const DeviceEpilogue *epilogue) const {
  check_device_epilogue(state_->plan.spec, epilogue);
  if (state_->route == Route::Dense) {
    check_dense_operands(*this, a, b);
    if (a.rows == 0 || b.n == 0) return;
    const size_t need = workspace_bytes(a.rows, b.n);
    CUdeviceptr ws = 0;
    {
      primary_context(state_->options.device);
      std::lock_guard<std::mutex> lock(state_->dense_mu);
      if (state_->own_workspace.bytes() < need) {
        if (state_->own_workspace.bytes() > 0) state_->retired_workspaces.push_back(std::move(state_->own_workspace));
        state_->own_workspace = take(DeviceBuffer::allocate(need), Error::Kind::Cuda);
      }
      ws = state_->own_workspace.ptr();
    }
    return run_dense(a.dense.ptr(), b.dense_t.ptr(), c, a.rows, a.cols, b.n, spec().c_col, ws, need, stream, epilogue);
  }
  if (a.dense.bytes() > 0) wrong_route(spec(), Route::Dense, Route::Sparse, "lhs A");
  if (b.dense_t.bytes() > 0) wrong_route(spec(), Route::Dense, Route::Sparse, "rhs B");
  auto k = loaded_kernel(*state_);
  check(k->launch(a, b, c, stream, epilogue), Error::Kind::Invalid);  // a DriverError still becomes Kind::Cuda
}

void Spmm::run(const DeviceLhs &a, const DeviceRhs &b, CUdeviceptr c, CUstream stream, CUdeviceptr workspace,
               size_t workspace_bytes) const {
  if (state_->route != Route::Dense) return run(a, b, c, stream, static_cast<const DeviceEpilogue *>(nullptr));
  check_dense_operands(*this, a, b);
  if (a.rows == 0 || b.n == 0) return;
  run_dense(a.dense.ptr(), b.dense_t.ptr(), c, a.rows, a.cols, b.n, spec().c_col, workspace, workspace_bytes, stream, nullptr);
}

void Spmm::run_dense(CUdeviceptr a_dense, CUdeviceptr bt, CUdeviceptr c, int64_t m, int64_t k, int64_t n,
                     bool c_transposed, CUdeviceptr workspace, size_t workspace_bytes, CUstream stream,
                     const DeviceEpilogue *epilogue) const {
  State &st = *state_;
  const OpSpec &spec = st.plan.spec;
  check_device_epilogue(spec, epilogue);
  if (st.route != Route::Dense)
    throw Error(Error::Kind::Invalid, "run_dense: this op (" + to_string(spec) + ") runs the sparse route (" +
                                          (st.route_why.empty() ? std::string("options.dense is Never") : st.route_why) +
                                          ")");
  if (m < 0 || n < 0) throw Error(Error::Kind::Invalid, "run_dense: M=" + std::to_string(m) + " N=" + std::to_string(n));
  if (std::string why = dense_k_refusal(k); !why.empty()) throw Error(Error::Kind::Invalid, "run_dense: " + why);
  // Other outputs than int32, or operands in int8 chunks: the GEMMs' int32 results go to
  // scratch after cuBLASLt's workspace, and the epilogue kernel writes C from them (any
  // alignment of its element size).
  const bool scratch = dense_needs_scratch(spec);
  const int64_t rows = c_transposed ? n : m, cols = c_transposed ? m : n;  // as stored
  const EpilogueValues epi = take(epilogue_values(spec, epilogue, m, n), Error::Kind::Invalid);
  if (m == 0 || n == 0) return;
  // What cuBLASLt reads or writes must be 256-byte aligned; a C the epilogue writes, to its element.
  auto aligned = [](CUdeviceptr p, uint64_t to, const char *name) {
    if (p != 0 && p % to == 0) return;
    throw Error(Error::Kind::Invalid,
                std::string("run_dense: ") + name + " is " +
                    (p == 0 ? std::string("null")
                     : to == kDenseAlign
                         ? std::string("not 256-byte aligned (cuBLASLt's algorithms assume 256-byte aligned operands)")
                         : "not aligned to its " + std::to_string(to) + "-byte element"));
  };
  aligned(a_dense, kDenseAlign, "A");
  aligned(bt, kDenseAlign, "Bt");
  aligned(workspace, kDenseAlign, "workspace");
  aligned(c, scratch ? stored_bytes(spec.out) : kDenseAlign, "C");
  const size_t need = this->workspace_bytes(m, n);
  if (workspace_bytes < need)
    throw Error(Error::Kind::Invalid, "workspace: " + std::to_string(workspace_bytes) + " bytes given, " +
                                          std::to_string(need) + " needed (workspace_bytes(" + std::to_string(m) +
                                          ", " + std::to_string(n) + "))");
  load_dense(st, st);  // once: the plans of the constructor's shape, timed (as load() does)
  const CUdeviceptr target = scratch ? workspace + DenseGemm::kDefaultWorkspace : c;
  std::shared_ptr<const DenseGemm> g;
  {
    // C^T (n x m) = Bt (n x k) x A^T: the same GEMM with the operands swapped.
    DenseRunBuffers run{&primary_context(st.options.device), c_transposed ? bt : a_dense, c_transposed ? a_dense : bt,
                        target, workspace, stream};
    std::lock_guard<std::mutex> lock(st.dense_mu);
    g = dense_gemm_locked(st, rows, cols, k, run);
  }
  check(dense_route_on_device(primary_context(st.options.device), spec, *g, a_dense, bt, c, m, k, n, c_transposed,
                              workspace, workspace + DenseGemm::kDefaultWorkspace, epi, stream),
        Error::Kind::Invalid);
}

void Spmm::run(const DeviceLhs &a, const DeviceRhs &b, CUdeviceptr c, CUstream stream,
               const EpilogueArgs &epilogue) const {
  check_epilogue(epilogue, a.rows, b.n);
  if (!is_float(spec().out)) return run(a, b, c, stream, static_cast<const DeviceEpilogue *>(nullptr));
  DeviceEpilogue de = upload(epilogue);
  run(a, b, c, stream, &de);
  wait_for(stream);
}

std::vector<int64_t> Spmm::multiply(const VectorSparse &a, const std::vector<int64_t> &b, int64_t n,
                                    const EpilogueArgs &epilogue) const try {
  check_epilogue(epilogue, a.rows, n);
  HostLhs ha = pack_lhs(a);
  PackedRhs hb = pack_rhs(b, a.cols, n);
  const Context &ctx = primary_context(state_->options.device);
  DeviceLhs da = upload(ha);
  DeviceRhs db = upload(hb);
  DeviceBuffer c = allocate_output(a.rows, n);
  std::optional<DeviceEpilogue> de;
  if (is_float(spec().out)) de.emplace(upload(epilogue));
  run(da, db, c.ptr(), nullptr, de ? &*de : nullptr);
  check(ctx.synchronize(), Error::Kind::Cuda);
  return download_elements(c, a.rows * n, spec().out);
}
MAGICUBE_CATCH_ALLOC("Spmm::multiply")

std::vector<int64_t> spmm_host(const OpSpec &spec, const VectorSparse &a, const std::vector<int64_t> &b, int64_t n,
                               const EpilogueArgs &epilogue, const SpmmOptions &options) {
  return Spmm(spec, a, n, options).multiply(a, b, n, epilogue);
}

// ---- Sddmm -------------------------------------------------------------------------------

int64_t HostMask::output_elements(SparseLayout l) const {
  return (l == SparseLayout::Bcrs ? pattern.num_vectors() : layout.num_slots()) * pattern.v;
}

int64_t HostMask::output_index(SparseLayout l, int64_t vector, int row) const {
  if (vector < 0 || vector >= pattern.num_vectors() || row < 0 || row >= pattern.v)
    throw Error(Error::Kind::Invalid, "mask: vector " + std::to_string(vector) + " row " + std::to_string(row) +
                                          " is out of range (" + std::to_string(pattern.num_vectors()) +
                                          " vectors of V=" + std::to_string(pattern.v) + ")");
  if (l == SparseLayout::Bcrs) return vector * pattern.v + row;
  // The vector's row-block: the last block starting at or before it.
  auto it = std::upper_bound(pattern.block_ptr.begin(), pattern.block_ptr.end(), vector);
  int64_t blk = int64_t(it - pattern.block_ptr.begin()) - 1;
  int64_t slot = layout.row_ptr[2 * blk] + (vector - pattern.block_ptr[blk]);
  return layout.value_index(slot, row);
}

struct Sddmm::State : OpState {};

Sddmm::Sddmm(const OpSpec &spec, SddmmOptions options) : state_(std::make_shared<State>()) {
  adopt(*state_, plan_op(spec, nullptr, options, OpKind::SDDMM, "Sddmm"), options);
}

Sddmm::Sddmm(const OpSpec &spec, const VectorSparse &mask, int64_t k, SddmmOptions options)
    : state_(std::make_shared<State>()) {
  if (k < 1) throw Error(Error::Kind::Invalid, "k: " + std::to_string(k) + " is not a reduction length (allowed: >= 1)");
  const MatrixSignature sig = sddmm_signature(mask, k);
  adopt(*state_, plan_op(spec, &sig, options, OpKind::SDDMM, "Sddmm"), options);
}

const std::string &Sddmm::chosen_by() const { return state_->chosen_by; }

const OpSpec &Sddmm::spec() const { return state_->plan.spec; }
const Plan &Sddmm::plan() const { return state_->plan; }
const SddmmOptions &Sddmm::options() const { return state_->options; }
std::string Sddmm::kernel_name() const { return state_->plan.kernel_name(); }
int64_t Sddmm::max_reduction_length() const { return reduction_bound(state_->plan); }
size_t Sddmm::output_element_bytes() const { return stored_bytes(state_->plan.spec.out); }

HostMask Sddmm::pack_mask(const VectorSparse &mask, int stride) const try {
  const OpSpec &s = state_->plan.spec;
  auto invalid = [](const std::string &msg) { throw Error(Error::Kind::Invalid, "mask: " + msg); };
  if (mask.v != s.v) invalid("has V=" + std::to_string(mask.v) + " but the spec " + to_string(s) + " has V=" + std::to_string(s.v));
  if (stride < 1 || stride > 1024) invalid("stride " + std::to_string(stride) + " is not allowed (allowed: 1..1024)");
  if (mask.rows < 0 || mask.cols < 0 || mask.rows > INT32_MAX || mask.cols > INT32_MAX)
    invalid("shape " + std::to_string(mask.rows) + " x " + std::to_string(mask.cols) +
            " is not allowed (allowed: 0..2^31-1 each)");
  const int64_t nb = (mask.rows + mask.v - 1) / mask.v;
  if (int64_t(mask.block_ptr.size()) != nb + 1 || mask.block_ptr.front() != 0 ||
      mask.block_ptr.back() != mask.num_vectors())
    invalid("block_ptr has " + std::to_string(mask.block_ptr.size()) + " entries, expected " + std::to_string(nb + 1) +
            " from 0 to the " + std::to_string(mask.num_vectors()) + " vectors");
  for (int64_t b = 0; b < nb; ++b) {
    if (mask.block_ptr[b + 1] < mask.block_ptr[b]) invalid("block_ptr decreases at row-block " + std::to_string(b));
    for (int64_t i = mask.block_ptr[b]; i < mask.block_ptr[b + 1]; ++i)
      if (mask.col[i] < 0 || mask.col[i] >= mask.cols ||
          (i > mask.block_ptr[b] && mask.col[i] <= mask.col[i - 1]))
        invalid("vector " + std::to_string(i) + " of row-block " + std::to_string(b) + " has column " +
                std::to_string(mask.col[i]) + " (columns must be in [0, " + std::to_string(mask.cols) +
                ") and increasing within a row-block)");
  }
  HostMask h;
  h.pattern = mask;
  h.layout = build_srbcrs(mask, stride, false, state_->plan.shuffle);
  return h;
}
MAGICUBE_CATCH_ALLOC("Sddmm::pack_mask")

PackedDense Sddmm::pack_lhs(const std::vector<int64_t> &a, int64_t m, int64_t k) const try {
  if (m < 0 || k < 1)
    throw Error(Error::Kind::Invalid, "lhs A: shape " + std::to_string(m) + " x " + std::to_string(k) +
                                          " is not allowed (M >= 0, K >= 1)");
  check(check_reduction_length(state_->plan, k), Error::Kind::Invalid);
  return take(pack_sddmm_lhs(a, m, k, state_->plan), Error::Kind::Invalid);
}
MAGICUBE_CATCH_ALLOC("Sddmm::pack_lhs")

PackedDense Sddmm::pack_rhs(const std::vector<int64_t> &b, int64_t k, int64_t n) const try {
  if (k < 1 || n < 0)
    throw Error(Error::Kind::Invalid, "rhs B: shape " + std::to_string(k) + " x " + std::to_string(n) +
                                          " is not allowed (K >= 1, N >= 0)");
  check(check_reduction_length(state_->plan, k), Error::Kind::Invalid);
  return take(pack_sddmm_rhs(b, k, n, state_->plan), Error::Kind::Invalid);
}
MAGICUBE_CATCH_ALLOC("Sddmm::pack_rhs")

void Sddmm::check_epilogue(const EpilogueArgs &epilogue, int64_t m, int64_t n) const {
  check_epilogue_args(state_->plan.spec, epilogue, m, n);
}

DeviceMask Sddmm::upload(const HostMask &mask) const {
  primary_context(state_->options.device);
  return take(upload_mask(mask.layout, mask.pattern), Error::Kind::Cuda);
}

DeviceDense Sddmm::upload(const PackedDense &operand) const {
  primary_context(state_->options.device);
  return take(magicube::upload(operand), Error::Kind::Cuda);
}

DeviceEpilogue Sddmm::upload(const EpilogueArgs &epilogue) const { return upload_epilogue(*state_, epilogue); }

namespace {
DeviceBuffer allocate_elements(int device, int64_t count, size_t bytes) {
  primary_context(device);
  return take(DeviceBuffer::allocate(std::max<size_t>(1, size_t(count) * bytes)), Error::Kind::Cuda);
}
}  // namespace

DeviceBuffer Sddmm::allocate_output(const HostMask &mask, SparseLayout layout) const {
  return allocate_elements(state_->options.device, mask.output_elements(layout), output_element_bytes());
}

DeviceBuffer Sddmm::allocate_output(const DeviceMask &mask, SparseLayout layout) const {
  int64_t count = (layout == SparseLayout::Bcrs ? mask.num_vectors : mask.num_slots) * mask.v;
  return allocate_elements(state_->options.device, count, output_element_bytes());
}

void Sddmm::load() const { loaded_kernel(*state_); }

void Sddmm::run(const DeviceMask &mask, const DeviceDense &a, const DeviceDense &b, CUdeviceptr out,
                SparseLayout layout, CUstream stream, const DeviceEpilogue *epilogue) const {
  check_device_epilogue(state_->plan.spec, epilogue);
  auto k = loaded_kernel(*state_);
  check(k->launch_sddmm(mask, a, b, out, layout, stream, epilogue), Error::Kind::Invalid);
}

void Sddmm::run(const DeviceMask &mask, const DeviceDense &a, const DeviceDense &b, CUdeviceptr out,
                SparseLayout layout, CUstream stream, const EpilogueArgs &epilogue) const {
  check_epilogue(epilogue, mask.rows, mask.cols);
  if (!is_float(spec().out)) return run(mask, a, b, out, layout, stream, nullptr);
  DeviceEpilogue de = upload(epilogue);
  run(mask, a, b, out, layout, stream, &de);
  wait_for(stream);
}

std::vector<int64_t> Sddmm::multiply(const VectorSparse &mask, const std::vector<int64_t> &a,
                                     const std::vector<int64_t> &b, int64_t k, SparseLayout layout,
                                     const EpilogueArgs &epilogue) const try {
  check_epilogue(epilogue, mask.rows, mask.cols);
  HostMask hm = pack_mask(mask);
  PackedDense pa = pack_lhs(a, mask.rows, k);
  PackedDense pb = pack_rhs(b, k, mask.cols);
  const Context &ctx = primary_context(state_->options.device);
  DeviceMask dm = upload(hm);
  DeviceDense da = upload(pa);
  DeviceDense db = upload(pb);
  DeviceBuffer out = allocate_output(hm, layout);
  check(out.memset(0), Error::Kind::Cuda);  // 0 where the kernel writes nothing
  std::optional<DeviceEpilogue> de;
  if (is_float(spec().out)) de.emplace(upload(epilogue));
  run(dm, da, db, out.ptr(), layout, nullptr, de ? &*de : nullptr);
  check(ctx.synchronize(), Error::Kind::Cuda);
  return download_elements(out, hm.output_elements(layout), spec().out);
}
MAGICUBE_CATCH_ALLOC("Sddmm::multiply")

std::vector<int64_t> sddmm_host(const OpSpec &spec, const VectorSparse &mask, const std::vector<int64_t> &a,
                                const std::vector<int64_t> &b, int64_t k, SparseLayout layout,
                                const EpilogueArgs &epilogue) {
  return Sddmm(spec, mask, k).multiply(mask, a, b, k, layout, epilogue);
}

}  // namespace magicube
