// The C ABI (include/magicube/magicube.h) over the library's C++ API (runtime/magicube.h):
// handles own an Spmm/Sddmm and a packed blob; device operands are the caller's pointers,
// wrapped in non-owning DeviceBuffer views; B (and SDDMM's A) are repacked on the caller's
// stream by capi/repack. Every entry point catches everything: status + thread-local message.
#include "magicube/magicube.h"

#include <algorithm>
#include <cstddef>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <new>
#include <optional>
#include <string>
#include <type_traits>
#include <vector>

#include "capi/packed_blob.h"
#include "capi/quantize.h"
#include "capi/repack.h"
#include "compiler/codegen.h"
#include "compiler/dense_chunks.h"
#include "compiler/planner.h"
#include "runtime/dense_epilogue.h"
#include "runtime/dispatch.h"
#include "runtime/packed_check.h"
#include "runtime/magicube.h"

using magicube::Error;
using Kind = magicube::Error::Kind;
namespace capi = magicube::capi;

// ---- handles --------------------------------------------------------------------------------

struct magicube_op {
  std::optional<magicube::Spmm> spmm;
  std::optional<magicube::Sddmm> sddmm;
  int device = 0;
  int candidate = -1;
  const magicube::Plan &plan() const { return spmm ? spmm->plan() : sddmm->plan(); }
  const magicube::OpSpec &spec() const { return plan().spec; }
  const std::string &chosen_by() const { return spmm ? spmm->chosen_by() : sddmm->chosen_by(); }
  bool dense() const { return spmm && spmm->route() == magicube::Route::Dense; }
  void load() const { spmm ? spmm->load() : sddmm->load(); }
};

struct magicube_packed {
  std::vector<uint8_t> bytes;  // header first
  magicube_packed_header header;
};

namespace {

// ---- errors ---------------------------------------------------------------------------------

thread_local std::string t_last_error;

// A failure that is not a magicube::Error: a status of its own.
struct StatusError {
  int status;
  std::string message;
};

[[noreturn]] void invalid(const std::string &msg) { throw Error(Kind::Invalid, msg); }

int status_of(Kind k) {
  switch (k) {
    case Kind::Invalid: return MAGICUBE_ERROR_INVALID;
    case Kind::Compile: return MAGICUBE_ERROR_COMPILE;
    case Kind::Cuda: return MAGICUBE_ERROR_CUDA;
    case Kind::NoGpu: return MAGICUBE_ERROR_NO_GPU;
  }
  return MAGICUBE_ERROR_INTERNAL;
}

template <class F>
int guarded(F &&f) noexcept {
  try {
    f();
    return MAGICUBE_SUCCESS;
  } catch (const Error &e) {
    t_last_error = e.what();
    return status_of(e.kind());
  } catch (const StatusError &e) {
    t_last_error = e.message;
    return e.status;
  } catch (const std::bad_alloc &) {
    t_last_error = "out of host memory";
    return MAGICUBE_ERROR_INTERNAL;
  } catch (const std::exception &e) {
    t_last_error = std::string("internal error: ") + e.what();
    return MAGICUBE_ERROR_INTERNAL;
  } catch (...) {
    t_last_error = "internal error: unknown exception";
    return MAGICUBE_ERROR_INTERNAL;
  }
}

template <class T>
T take(llvm::Expected<T> v, Kind kind) {
  if (!v) throw Error::from(v.takeError(), kind);
  return std::move(*v);
}
void check(llvm::Error e, Kind kind) {
  if (e) throw Error::from(std::move(e), kind);
}

void write_text(const std::string &s, char *buf, size_t cap, size_t *needed) {
  if (needed) *needed = s.size() + 1;
  if (!buf && cap == 0) return;
  if (!buf) invalid("buf: NULL with cap " + std::to_string(cap) + " (pass cap 0 to ask the size)");
  if (cap < s.size() + 1) {
    if (cap > 0) {
      std::memcpy(buf, s.data(), cap - 1);
      buf[cap - 1] = '\0';
    }
    throw StatusError{MAGICUBE_ERROR_BUFFER_TOO_SMALL, "buf: " + std::to_string(cap) + " bytes are too small for " +
                                                           std::to_string(s.size() + 1) + " (see *needed)"};
  }
  std::memcpy(buf, s.c_str(), s.size() + 1);
}

template <class P>
void require(const P *p, const char *name) {
  if (!p) invalid(std::string(name) + ": NULL");
}

int64_t round_up(int64_t x, int64_t a) { return (x + a - 1) / a * a; }

// ---- the device context -----------------------------------------------------------------------

// The primary context of `device` (the one the API's classes and the CUDA runtime use),
// retained on first use and made current on the calling thread.
const magicube::Context &device_context(int device) {
  static std::mutex mu;
  static auto &contexts = *new std::map<int, std::unique_ptr<magicube::Context>>();  // never destroyed
  const magicube::Context *ctx = nullptr;
  {
    std::lock_guard<std::mutex> lock(mu);
    auto it = contexts.find(device);
    if (it == contexts.end()) {
      std::string why = magicube::no_gpu_reason();
      if (!why.empty()) throw Error(Kind::NoGpu, "no GPU: " + why);
      auto c = take(magicube::Context::create(device), Kind::Cuda);
      it = contexts.emplace(device, std::make_unique<magicube::Context>(std::move(c))).first;
    }
    ctx = it->second.get();
  }
  check(ctx->make_current(), Kind::Cuda);
  return *ctx;
}

// ---- host matrices --------------------------------------------------------------------------

// An enum field of a caller's struct holds whatever int a C caller stored there. Loading a value
// outside the enum's range as the enum is undefined in C++ (UBSan: "load of value 7, which is not
// a valid value for type 'magicube_layout'"), so a field is read as its int until it has been
// checked; the checks below take these ints.
template <class E>
int enum_int(const E &field) {
  static_assert(std::is_enum_v<E> && sizeof(E) == sizeof(int), "a C enum field");
  int v;
  std::memcpy(&v, &field, sizeof v);
  return v;
}

const char *dtype_name(int t) {
  switch (t) {
    case MAGICUBE_INT8: return "int8";
    case MAGICUBE_UINT8: return "uint8";
    case MAGICUBE_INT16: return "int16";
    case MAGICUBE_UINT16: return "uint16";
    case MAGICUBE_INT32: return "int32";
    case MAGICUBE_INT64: return "int64";
    case MAGICUBE_FLOAT32: return "float32";
    case MAGICUBE_FLOAT16: return "float16";
    case MAGICUBE_BFLOAT16: return "bfloat16";
  }
  return "unknown";
}


template <class F>
void with_int_type(int dtype, F &&f) {
  switch (dtype) {
    case MAGICUBE_INT8: return f(int8_t{});
    case MAGICUBE_UINT8: return f(uint8_t{});
    case MAGICUBE_INT16: return f(int16_t{});
    case MAGICUBE_UINT16: return f(uint16_t{});
    case MAGICUBE_INT32: return f(int32_t{});
    case MAGICUBE_INT64: return f(int64_t{});
  }
  invalid(std::string("values: dtype ") + dtype_name(dtype) + " (" + std::to_string(dtype) +
          ") is not an integer type (allowed: int8, uint8, int16, uint16, int32, int64)");
}

// The matrix as V x 1 vectors. need_values: the values are required (packing A).
magicube::VectorSparse to_vector_sparse(const magicube_matrix &m, int v, bool need_values) {
  if (m.rows < 0 || m.cols < 0 || m.rows > INT32_MAX || m.cols > INT32_MAX)
    invalid("matrix: shape " + std::to_string(m.rows) + " x " + std::to_string(m.cols) +
            " is not allowed (allowed: 0..2^31-1 each)");
  magicube::VectorSparse a;
  a.rows = m.rows;
  a.cols = m.cols;
  a.v = v;
  const int64_t nb = (m.rows + v - 1) / v;
  if (!m.block_ptr) {  // dense
    if (!m.values) invalid("matrix: values is NULL (a dense matrix needs its rows * cols values)");
    with_int_type(enum_int(m.dtype), [&](auto zero) {
      using T = decltype(zero);
      const T *x = static_cast<const T *>(m.values);
      a.block_ptr.reserve(size_t(nb) + 1);
      a.block_ptr.push_back(0);
      for (int64_t b = 0; b < nb; ++b) {
        for (int64_t c = 0; c < m.cols; ++c) {
          bool nz = false;
          for (int r = 0; r < v && !nz; ++r)
            if (b * v + r < m.rows && x[(b * v + r) * m.cols + c] != 0) nz = true;
          if (!nz) continue;
          a.col.push_back(int32_t(c));
          for (int r = 0; r < v; ++r) a.values.push_back(b * v + r < m.rows ? int64_t(x[(b * v + r) * m.cols + c]) : 0);
        }
        a.block_ptr.push_back(int64_t(a.col.size()));
      }
    });
    return a;
  }
  if (m.v != v) invalid("matrix: V=" + std::to_string(m.v) + " but the spec has V=" + std::to_string(v));
  require(m.col, "matrix.col");
  if (m.block_ptr[0] != 0) invalid("matrix: block_ptr[0] is " + std::to_string(m.block_ptr[0]) + ", expected 0");
  for (int64_t b = 0; b < nb; ++b) {
    if (m.block_ptr[b + 1] < m.block_ptr[b]) invalid("matrix: block_ptr decreases at row-block " + std::to_string(b));
    for (int64_t i = m.block_ptr[b]; i < m.block_ptr[b + 1]; ++i)
      if (m.col[i] < 0 || m.col[i] >= m.cols || (i > m.block_ptr[b] && m.col[i] <= m.col[i - 1]))
        invalid("matrix: vector " + std::to_string(i) + " of row-block " + std::to_string(b) + " has column " +
                std::to_string(m.col[i]) + " (columns must be in [0, " + std::to_string(m.cols) +
                ") and increasing within a row-block)");
  }
  const int64_t nv = m.block_ptr[nb];
  a.block_ptr.assign(m.block_ptr, m.block_ptr + nb + 1);
  a.col.assign(m.col, m.col + nv);
  if (m.values) {
    with_int_type(enum_int(m.dtype), [&](auto zero) {
      using T = decltype(zero);
      const T *x = static_cast<const T *>(m.values);
      a.values.assign(x, x + nv * v);
    });
    for (int64_t b = 0; b < nb; ++b)  // rows past M are 0 by definition
      for (int r = 0; r < v; ++r)
        if (b * v + r >= m.rows)
          for (int64_t i = a.block_ptr[b]; i < a.block_ptr[b + 1]; ++i) a.values[size_t(i * v + r)] = 0;
  } else {
    if (need_values) invalid("matrix: values is NULL (packing A needs its values)");
    a.values.assign(size_t(nv * v), 0);
  }
  return a;
}

// ---- packed blobs (capi/packed_blob.h) -------------------------------------------------------

int64_t fingerprint_of(const magicube::Plan &p) {
  const uint64_t f = magicube::fingerprint(p);
  int64_t out;
  std::memcpy(&out, &f, 8);
  return out;
}

// The header must be one this op packed.
void check_header_for(const magicube_op &op, const magicube_packed_header &h) {
  capi::check_blob_header(h, 0);
  const bool sddmm = op.sddmm.has_value();
  if (h.op != (sddmm ? 1 : 0))
    invalid(std::string("packed: a packed ") + (h.op ? "SDDMM mask" : "SpMM A") + " given to an " +
            (sddmm ? "SDDMM" : "SpMM") + " op");
  if (h.plan_fingerprint != fingerprint_of(op.plan()))
    invalid("packed: packed for another plan than this op's (" + magicube::to_string(op.spec()) +
            "): pack it with this op");
  const int64_t route = op.dense() ? 1 : 0;
  if (h.route != route)
    invalid(std::string("packed: packed for the ") + (h.route ? "dense" : "sparse") + " route, but this op (" +
            magicube::to_string(op.spec()) + ") runs the " + (route ? "dense" : "sparse") +
            " route: pack it with this op");
  if (route == 1 && h.dense_bytes != magicube::dense_lhs_bytes(op.spec(), h.rows, h.cols))
    invalid("packed: the dense copy has " + std::to_string(h.dense_bytes) + " bytes, but this op (" +
            magicube::to_string(op.spec()) + ") packs " +
            std::to_string(magicube::dense_lhs_bytes(op.spec(), h.rows, h.cols)) + " for A of " +
            std::to_string(h.rows) + " x " + std::to_string(h.cols) + ": pack it with this op");
}

// A host run's header: the one its blob starts with (so that the sizes it gives are the blob's).
const magicube_packed_header &own_header(const magicube_packed_header &h, const void *blob) {
  if (std::memcmp(&h, blob, sizeof h) != 0)
    invalid("header: not the header the blob starts with (pass magicube_packed_get_header's, or the one "
            "magicube_packed_check returned)");
  return h;
}

// The body of a blob held on the host, as its header `h` describes it, for this op.
void check_body(const magicube_op &op, const magicube_packed_header &h, const void *blob) {
  check_header_for(op, h);
  check(capi::check_blob_body(h, blob, op.plan()), Kind::Invalid);
}

// ---- device operands -------------------------------------------------------------------------

int64_t dtype_bytes(int t) {
  switch (t) {
    case MAGICUBE_INT8: case MAGICUBE_UINT8: return 1;
    case MAGICUBE_INT16: case MAGICUBE_UINT16: case MAGICUBE_FLOAT16: case MAGICUBE_BFLOAT16: return 2;
    case MAGICUBE_INT32: case MAGICUBE_FLOAT32: return 4;
    case MAGICUBE_INT64: return 8;
  }
  return 0;
}

int output_dtype(magicube::OutType t) {
  switch (t) {
    case magicube::OutType::Int32: return MAGICUBE_INT32;
    case magicube::OutType::Int64: return MAGICUBE_INT64;
    case magicube::OutType::F32: return MAGICUBE_FLOAT32;
    case magicube::OutType::F16: return MAGICUBE_FLOAT16;
    case magicube::OutType::BF16: return MAGICUBE_BFLOAT16;
  }
  return 0;
}

// The source type of an integer operand of type `t` given as `dtype`; refuses a dtype that
// cannot hold t's range.
capi::SrcType src_type(int dtype, const magicube::ElemType &t, const char *name) {
  int64_t lo = 0, hi = 0;
  capi::SrcType s = capi::SrcType::I32;
  switch (dtype) {
    case MAGICUBE_INT8: lo = -128, hi = 127, s = capi::SrcType::I8; break;
    case MAGICUBE_UINT8: lo = 0, hi = 255, s = capi::SrcType::U8; break;
    case MAGICUBE_INT16: lo = -32768, hi = 32767, s = capi::SrcType::I16; break;
    case MAGICUBE_UINT16: lo = 0, hi = 65535, s = capi::SrcType::U16; break;
    case MAGICUBE_INT32: lo = INT32_MIN, hi = INT32_MAX, s = capi::SrcType::I32; break;
    default:
      invalid(std::string(name) + ": dtype " + dtype_name(dtype) +
              " is not allowed for a device operand (allowed: int8, uint8, int16, uint16, int32)");
  }
  if (t.min_value() < lo || t.max_value() > hi)
    invalid(std::string(name) + ": dtype " + dtype_name(dtype) + " cannot hold the spec's " + t.str() + " values [" +
            std::to_string(t.min_value()) + ", " + std::to_string(t.max_value()) + "]");
  return s;
}

void check_layout(int layout, const char *name) {
  if (layout != MAGICUBE_ROW_MAJOR && layout != MAGICUBE_COL_MAJOR)
    invalid(std::string(name) + ": layout " + std::to_string(layout) + " (allowed: 0 row-major, 1 col-major)");
}

void check_aligned(const void *p, int64_t align, const char *name) {
  if (reinterpret_cast<uintptr_t>(p) % uintptr_t(align) != 0)
    invalid(std::string(name) + ": the address is not aligned to " + std::to_string(align) + " bytes");
}

// Where the operands of one run live in the workspace.
struct WorkspacePlan {
  int64_t bytes = 0;
  int64_t take(int64_t n) {
    const int64_t off = round_up(bytes, capi::kBlobAlign);
    bytes = off + n;
    return off;
  }
};

// A single 8-bit chunk at bit 0 of a 1-byte type: the plane is the values' bytes.
bool byte_identity(const std::vector<magicube::Chunk> &chunks, int dtype) {
  return chunks.size() == 1 && chunks[0].lo_bit == 0 && chunks[0].bits == 8 && chunks[0].storage_bits == 8 &&
         dtype_bytes(dtype) == 1;
}

struct SpmmLayout {
  bool b_in_place = false;
  capi::RepackGeometry g;
  capi::SrcType src = capi::SrcType::I8;
  std::vector<int64_t> plane_off;
  bool c_transpose = false;
  int64_t c_off = 0;
  WorkspacePlan ws;
  // The dense route: cuBLASLt's workspace at lt_off (and after it, for an output other than
  // int32 or operands in int8 chunks, the GEMMs' int32 results that the epilogue kernel reads);
  // B (g: Bt) repacked into its chunk planes at plane_off (stacked) unless read in place;
  // gemm_transposed: the GEMM (and epilogue) write C^T (n x M); c_transpose: an int32 C not
  // 256-byte aligned, which the GEMM writes into the workspace at c_off and a transpose moves.
  bool dense = false, gemm_transposed = false;
  int64_t lt_off = 0;
};

constexpr uintptr_t kDenseAlign = 256;  // cuBLASLt's heuristic assumes 256-byte aligned operands

SpmmLayout dense_spmm_layout(const magicube_op &op, const magicube_packed_header &h, const magicube_dense &b,
                             int64_t n, const magicube_dense &c, SpmmLayout l) {
  l.dense = true;
  const int64_t m = h.rows, k = h.cols;
  l.lt_off = l.ws.take(int64_t(op.spmm->workspace_bytes(m, n)));
  // B's int8 chunks (one without an offset where its type fits int8: then an int8 N x K source
  // is read in place), each repacked into a plane of Bt, the planes stacked dense_plane_stride
  // apart.
  const std::vector<magicube::DenseChunk> chunks = magicube::dense_chunks(op.spec()).rhs;
  l.b_in_place = chunks.size() == 1 && chunks[0].offset == 0 && b.layout == MAGICUBE_COL_MAJOR &&
                 dtype_bytes(b.dtype) == 1 && b.data &&
                 reinterpret_cast<uintptr_t>(b.data) % kDenseAlign == 0;
  if (!l.b_in_place) {
    l.g = capi::dense_rhs_t_geometry(k, n, b.layout == MAGICUBE_COL_MAJOR, chunks);
    const int64_t first = l.ws.take(magicube::dense_planes_bytes(int(chunks.size()), n, k, 1));
    for (size_t j = 0; j < chunks.size(); ++j)
      l.plane_off.push_back(first + int64_t(j) * magicube::dense_plane_stride(n, k, 1));
  }
  // An int32 C is the GEMM's own; any other the epilogue kernel writes (at any element-aligned address).
  l.c_transpose = !magicube::dense_needs_scratch(op.plan().spec) &&
                  (!c.data || reinterpret_cast<uintptr_t>(c.data) % kDenseAlign != 0);
  // Staged through the workspace, the GEMM writes the other layout and the transpose turns it.
  l.gemm_transposed = (c.layout == MAGICUBE_COL_MAJOR) != l.c_transpose;
  if (l.c_transpose) l.c_off = l.ws.take(m * n * 4);
  return l;
}

SpmmLayout spmm_layout(const magicube_op &op, const magicube_packed_header &h, const magicube_dense &b, int64_t n,
                       const magicube_dense &c) {
  const magicube::Plan &p = op.plan();
  if (n < 1) invalid("n: " + std::to_string(n) + " columns of B (allowed: >= 1)");
  check_layout(enum_int(b.layout), "b");
  check_layout(enum_int(c.layout), "c");
  SpmmLayout l;
  l.src = src_type(enum_int(b.dtype), p.spec.rhs, "b");
  if (enum_int(c.dtype) != output_dtype(p.spec.out))
    invalid(std::string("c: dtype ") + dtype_name(enum_int(c.dtype)) + " but the op's output is " +
            dtype_name(output_dtype(p.spec.out)) + " (" + magicube::to_string(p.spec) + ")");
  const int64_t k = h.cols;
  if (op.dense()) return dense_spmm_layout(op, h, b, n, c, std::move(l));
  l.b_in_place = !p.spec.resident && b.layout == MAGICUBE_ROW_MAJOR && n % magicube::kLdbAlign == 0 &&
                 byte_identity(p.rhs, b.dtype) && reinterpret_cast<uintptr_t>(b.data) % 16 == 0;
  l.g = capi::spmm_rhs_geometry(p, k, n, b.layout == MAGICUBE_COL_MAJOR);
  if (!l.b_in_place)
    for (size_t j = 0; j < l.g.chunks.size(); ++j) l.plane_off.push_back(l.ws.take(l.g.plane_bytes(j)));
  // The kernel writes C in its spec's order (+ccol: column-major); the other order goes through
  // the workspace and a transpose.
  l.c_transpose = (c.layout == MAGICUBE_COL_MAJOR) != p.spec.c_col && n > 1 && h.rows > 1;
  if (l.c_transpose) l.c_off = l.ws.take(h.rows * n * int64_t(magicube::stored_bytes(p.spec.out)));
  return l;
}

struct SddmmLayout {
  bool a_in_place = false, b_in_place = false;
  capi::RepackGeometry ga, gb;
  capi::SrcType sa = capi::SrcType::I8, sb = capi::SrcType::I8;
  std::vector<int64_t> a_off, b_off;
  WorkspacePlan ws;
};

SddmmLayout sddmm_layout(const magicube_op &op, const magicube_packed_header &h, const magicube_dense &a,
                         const magicube_dense &b, int64_t k) {
  const magicube::Plan &p = op.plan();
  if (k < 1) invalid("k: " + std::to_string(k) + " is not a reduction length (allowed: >= 1)");
  check_layout(enum_int(a.layout), "a");
  check_layout(enum_int(b.layout), "b");
  check(magicube::check_reduction_length(p, k), Kind::Invalid);
  SddmmLayout l;
  l.sa = src_type(enum_int(a.dtype), p.spec.lhs, "a");
  l.sb = src_type(enum_int(b.dtype), p.spec.rhs, "b");
  const int64_t m = h.rows, n = h.cols;
  // In place: K-contiguous bytes whose pitch (K) the kernel accepts, A with whole row-blocks.
  l.a_in_place = a.layout == MAGICUBE_ROW_MAJOR && k % 128 == 0 && m % p.spec.v == 0 && byte_identity(p.lhs, a.dtype) &&
                 reinterpret_cast<uintptr_t>(a.data) % 16 == 0;
  l.b_in_place = b.layout == MAGICUBE_COL_MAJOR && k % 128 == 0 && byte_identity(p.rhs, b.dtype) &&
                 reinterpret_cast<uintptr_t>(b.data) % 16 == 0;
  l.ga = capi::sddmm_lhs_geometry(p, m, k, a.layout == MAGICUBE_COL_MAJOR);
  l.gb = capi::sddmm_rhs_geometry(p, k, n, b.layout == MAGICUBE_COL_MAJOR);
  if (!l.a_in_place)
    for (size_t j = 0; j < l.ga.chunks.size(); ++j) l.a_off.push_back(l.ws.take(l.ga.plane_bytes(j)));
  if (!l.b_in_place)
    for (size_t j = 0; j < l.gb.chunks.size(); ++j) l.b_off.push_back(l.ws.take(l.gb.plane_bytes(j)));
  return l;
}

CUdeviceptr dptr(const void *p) { return CUdeviceptr(reinterpret_cast<uintptr_t>(p)); }
using magicube::DeviceBuffer;

// The float epilogue's vectors as views of the caller's device pointers.
std::optional<magicube::DeviceEpilogue> device_epilogue(const magicube::OpSpec &s, const magicube_epilogue *e,
                                                        int64_t m, int64_t n) {
  if (!magicube::is_float(s.out)) {
    if (e && (e->row_scale || e->col_scale || e->bias))
      invalid(std::string("epilogue: scales and bias need a float output (out is ") + magicube::out_name(s.out) + ")");
    return std::nullopt;
  }
  magicube::DeviceEpilogue d;
  d.alpha = e ? e->alpha : 1.0f;
  auto need = [&](const float *p, int64_t count, const char *what) {
    if (!p)
      invalid(std::string("epilogue: ") + what + " is NULL but the spec " + magicube::to_string(s) + " needs it");
    check_aligned(p, 4, "epilogue");
    return DeviceBuffer::view(dptr(p), size_t(count) * sizeof(float));
  };
  if (s.scale == magicube::Scale::RowCol) {
    d.row_scale = need(e ? e->row_scale : nullptr, m, "row_scale");
    d.col_scale = need(e ? e->col_scale : nullptr, n, "col_scale");
  }
  if (s.bias == magicube::Bias::Row) d.bias = need(e ? e->bias : nullptr, m, "bias (one per row)");
  if (s.bias == magicube::Bias::Col) d.bias = need(e ? e->bias : nullptr, n, "bias (one per column)");
  return d;
}

std::vector<CUdeviceptr> plane_ptrs(CUdeviceptr base, const std::vector<int64_t> &offsets) {
  std::vector<CUdeviceptr> out;
  for (int64_t o : offsets) out.push_back(base + CUdeviceptr(o));
  return out;
}

void check_workspace(const WorkspacePlan &ws, const void *workspace, size_t bytes) {
  if (int64_t(bytes) < ws.bytes)
    invalid("workspace: " + std::to_string(bytes) + " bytes given, " + std::to_string(ws.bytes) +
            " needed (see the _workspace_bytes function)");
  if (ws.bytes > 0) {
    require(workspace, "workspace");
    check_aligned(workspace, capi::kBlobAlign, "workspace");
  }
}

void spmm_run(const magicube_op &op, const magicube_packed_header &h, const void *a_packed, const magicube_dense &b,
              int64_t n, const magicube_dense &c, const magicube_epilogue *epilogue, void *workspace, size_t ws_bytes,
              CUstream stream) {
  check_header_for(op, h);
  require(a_packed, "a_packed");
  require(b.data, "b.data");
  require(c.data, "c.data");
  check_aligned(a_packed, 16, "a_packed");
  SpmmLayout l = spmm_layout(op, h, b, n, c);
  check_aligned(b.data, dtype_bytes(b.dtype), "b.data");
  check_aligned(c.data, dtype_bytes(c.dtype), "c.data");
  check_workspace(l.ws, workspace, ws_bytes);
  const magicube::Plan &p = op.plan();
  std::optional<magicube::DeviceEpilogue> de = device_epilogue(p.spec, epilogue, h.rows, n);
  if (l.dense) {
    if (reinterpret_cast<uintptr_t>(a_packed) % kDenseAlign != 0)
      invalid("a_packed: the address is not aligned to 256 bytes (the dense route's cuBLASLt GEMM reads the "
              "blob's dense copy in place)");
    op.spmm->load();  // once: the plans for the op's shape, timed
    const magicube::Context &ctx = device_context(op.device);
    const CUdeviceptr ws = dptr(workspace);
    CUdeviceptr bt = dptr(b.data);
    if (!l.b_in_place) {
      bt = ws + CUdeviceptr(l.plane_off[0]);
      check(capi::repack_on_device(ctx, l.g, l.src, dptr(b.data), plane_ptrs(ws, l.plane_off), stream), Kind::Cuda);
    }
    const CUdeviceptr target = l.c_transpose ? ws + CUdeviceptr(l.c_off) : dptr(c.data);
    op.spmm->run_dense(dptr(a_packed) + CUdeviceptr(h.dense_offset), bt, target, h.rows, h.cols, n, l.gemm_transposed,
                       ws + CUdeviceptr(l.lt_off), op.spmm->workspace_bytes(h.rows, n), stream, de ? &*de : nullptr);
    if (l.c_transpose)  // target is (gemm_transposed ? n x M : M x n), c the other
      check(capi::transpose_on_device(ctx, 4, target, dptr(c.data), l.gemm_transposed ? n : h.rows,
                                      l.gemm_transposed ? h.rows : n, stream),
            Kind::Cuda);
    return;
  }
  op.spmm->load();
  const magicube::Context &ctx = device_context(op.device);
  const CUdeviceptr a = dptr(a_packed), ws = dptr(workspace);

  magicube::DeviceLhs dl;
  dl.row_ptr = DeviceBuffer::view(a + h.row_ptr_offset, size_t(8 * h.num_blocks));
  dl.col_idx = DeviceBuffer::view(a + h.col_idx_offset, size_t(4 * h.num_slots));
  for (int64_t j = 0; j < h.num_planes; ++j)
    dl.planes.push_back(DeviceBuffer::view(a + h.plane_offset[j], size_t(h.plane_bytes[j])));
  dl.rows = h.rows, dl.cols = h.cols, dl.num_blocks = h.num_blocks, dl.max_block_length = h.max_block_length;
  dl.index_bits = p.launch.family == magicube::KernelFamily::SpmmDecode ? 16 : 32;  // packed by this plan (fingerprint)
  dl.panel_rows = p.spec.panel;

  magicube::DeviceRhs dr;
  dr.k = h.cols, dr.n = n;
  if (l.b_in_place) {
    dr.ldb = n;
    dr.planes.push_back(DeviceBuffer::view(dptr(b.data), size_t(h.cols * n)));
  } else {
    dr.ldb = l.g.pitch;
    const auto planes = plane_ptrs(ws, l.plane_off);
    check(capi::repack_on_device(ctx, l.g, l.src, dptr(b.data), planes, stream), Kind::Cuda);
    for (size_t j = 0; j < planes.size(); ++j)
      dr.planes.push_back(DeviceBuffer::view(planes[j], size_t(l.g.plane_bytes(j))));
  }
  const CUdeviceptr target = l.c_transpose ? ws + CUdeviceptr(l.c_off) : dptr(c.data);
  op.spmm->run(dl, dr, target, stream, de ? &*de : nullptr);
  if (l.c_transpose)  // target is the kernel's order (+ccol: n x M), c the other
    check(capi::transpose_on_device(ctx, int(magicube::stored_bytes(p.spec.out)), target, dptr(c.data),
                                    p.spec.c_col ? n : h.rows, p.spec.c_col ? h.rows : n, stream),
          Kind::Cuda);
}

void sddmm_run(const magicube_op &op, const magicube_packed_header &h, const void *mask_packed,
               const magicube_dense &a, const magicube_dense &b, int64_t k, void *out, int out_layout,
               const magicube_epilogue *epilogue, void *workspace, size_t ws_bytes, CUstream stream) {
  check_header_for(op, h);
  require(mask_packed, "mask_packed");
  require(a.data, "a.data");
  require(b.data, "b.data");
  require(out, "out");
  check_aligned(mask_packed, 16, "mask_packed");
  if (out_layout != MAGICUBE_BCRS && out_layout != MAGICUBE_SRBCRS)
    invalid("out_layout: " + std::to_string(out_layout) + " (allowed: 0 BCRS, 1 SR-BCRS)");
  SddmmLayout l = sddmm_layout(op, h, a, b, k);
  check_aligned(a.data, dtype_bytes(a.dtype), "a.data");
  check_aligned(b.data, dtype_bytes(b.dtype), "b.data");
  const magicube::Plan &p = op.plan();
  check_aligned(out, int64_t(magicube::stored_bytes(p.spec.out)), "out");
  check_workspace(l.ws, workspace, ws_bytes);
  std::optional<magicube::DeviceEpilogue> de = device_epilogue(p.spec, epilogue, h.rows, h.cols);
  op.sddmm->load();
  const magicube::Context &ctx = device_context(op.device);
  const CUdeviceptr mp = dptr(mask_packed), ws = dptr(workspace);

  magicube::DeviceMask dm;
  dm.row_ptr = DeviceBuffer::view(mp + h.row_ptr_offset, size_t(8 * h.num_blocks));
  dm.col_idx = DeviceBuffer::view(mp + h.col_idx_offset, size_t(4 * h.num_slots));
  dm.bcrs_ptr = DeviceBuffer::view(mp + h.bcrs_ptr_offset, size_t(8 * (h.num_blocks + 1)));
  dm.rows = h.rows, dm.cols = h.cols, dm.num_blocks = h.num_blocks, dm.max_block_length = h.max_block_length;
  dm.num_slots = h.num_slots, dm.num_vectors = h.num_vectors, dm.stride = int(h.stride), dm.v = int(h.v);

  auto dense = [&](bool in_place, const capi::RepackGeometry &g, capi::SrcType st, const std::vector<int64_t> &off,
                   const void *src, int64_t in_place_rows) {
    magicube::DeviceDense d;
    d.k = k;
    if (in_place) {
      d.rows = in_place_rows;
      d.ld = k;
      d.planes.push_back(DeviceBuffer::view(dptr(src), size_t(in_place_rows * k)));
      return d;
    }
    d.rows = g.rows;
    d.ld = g.pitch;
    const auto planes = plane_ptrs(ws, off);
    check(capi::repack_on_device(ctx, g, st, dptr(src), planes, stream), Kind::Cuda);
    for (size_t j = 0; j < planes.size(); ++j) d.planes.push_back(DeviceBuffer::view(planes[j], size_t(g.plane_bytes(j))));
    return d;
  };
  magicube::DeviceDense da = dense(l.a_in_place, l.ga, l.sa, l.a_off, a.data, h.rows);
  magicube::DeviceDense db = dense(l.b_in_place, l.gb, l.sb, l.b_off, b.data, h.cols);
  op.sddmm->run(dm, da, db, dptr(out),
                out_layout == MAGICUBE_BCRS ? magicube::SparseLayout::Bcrs : magicube::SparseLayout::SrBcrs, stream,
                de ? &*de : nullptr);
}

void check_options(const magicube::SpmmOptions &opts) {
  if (opts.candidate < -1) invalid("options.candidate: " + std::to_string(opts.candidate) + " (allowed: -1, 0, 1, ...)");
  if (opts.device < 0) invalid("options.device: " + std::to_string(opts.device) + " is not a device ordinal");
}

magicube::SpmmOptions options_of(const magicube_op_options *o) {
  magicube::SpmmOptions opts;
  if (o) {
    opts.candidate = o->candidate;
    opts.device = o->device;
  }
  check_options(opts);
  return opts;
}

// The extended options: the fields within o->size, the defaults past it.
magicube::SpmmOptions options_of(const magicube_op_options_ex *o) {
  magicube::SpmmOptions opts;
  if (!o) return opts;
  const size_t first = offsetof(magicube_op_options_ex, candidate);
  auto has = [&](size_t offset, size_t bytes) { return o->size >= offset + bytes; };
  if (o->size < first + sizeof(int) * 2 || o->size > sizeof(magicube_op_options_ex))
    invalid("options.size: " + std::to_string(o->size) + " (allowed: " + std::to_string(first + sizeof(int) * 2) +
            ".." + std::to_string(sizeof(magicube_op_options_ex)) +
            ", sizeof(magicube_op_options_ex) of this library's magicube.h)");
  opts.candidate = o->candidate;
  opts.device = o->device;
  check_options(opts);
  if (has(offsetof(magicube_op_options_ex, dense), sizeof(int))) {
    switch (o->dense) {
      case MAGICUBE_DENSE_NEVER: opts.dense = magicube::DenseRoute::Never; break;
      case MAGICUBE_DENSE_ALLOWED: opts.dense = magicube::DenseRoute::Allowed; break;
      case MAGICUBE_DENSE_FORCED: opts.dense = magicube::DenseRoute::Forced; break;
      default:
        invalid("options.dense: " + std::to_string(o->dense) + " (allowed: 0 never, 1 allowed, 2 forced)");
    }
  }
  return opts;
}

// Host copies for the _host convenience calls: a device buffer holding `bytes` from `src`.
DeviceBuffer upload_bytes(const void *src, size_t bytes) {
  DeviceBuffer b = take(DeviceBuffer::allocate(std::max<size_t>(bytes, 1)), Kind::Cuda);
  if (bytes) check(b.upload_bytes(src, bytes), Kind::Cuda);
  return b;
}

}  // namespace

// ---- the ABI ---------------------------------------------------------------------------------

extern "C" {

const char *magicube_last_error(void) { return t_last_error.c_str(); }

const char *magicube_status_name(int status) {
  switch (status) {
    case MAGICUBE_SUCCESS: return "success";
    case MAGICUBE_ERROR_INVALID: return "invalid";
    case MAGICUBE_ERROR_COMPILE: return "compile";
    case MAGICUBE_ERROR_CUDA: return "cuda";
    case MAGICUBE_ERROR_NO_GPU: return "no-gpu";
    case MAGICUBE_ERROR_BUFFER_TOO_SMALL: return "buffer-too-small";
    case MAGICUBE_ERROR_INTERNAL: return "internal";
  }
  return "unknown";
}

const char *magicube_version(void) { return MAGICUBE_VERSION_STRING; }

int magicube_plan_describe(const char *spec, char *buf, size_t cap, size_t *needed) {
  return guarded([&] {
    require(spec, "spec");
    magicube::OpSpec s = magicube::parse_spec(spec);
    auto d = take(magicube::dispatch(s, nullptr, magicube::DeviceFacts::reference_for(s.arch)), Kind::Invalid);
    write_text(d.plan.str(), buf, cap, needed);
  });
}

}  // extern "C"

namespace {

template <class Options>
int create_op(const char *spec, const magicube_matrix *matrix, int64_t n_or_k, const Options *options,
              magicube_op **out) {
  return guarded([&] {
    require(out, "out");
    *out = nullptr;
    require(spec, "spec");
    const magicube::OpSpec s = magicube::parse_spec(spec);
    const magicube::SpmmOptions opts = options_of(options);
    auto op = std::make_unique<magicube_op>();
    op->device = opts.device;
    std::optional<magicube::VectorSparse> a;
    if (matrix) a = to_vector_sparse(*matrix, s.v, false);
    if (s.op == magicube::OpKind::SpMM) {
      if (a) op->spmm.emplace(s, *a, n_or_k, opts);
      else op->spmm.emplace(s, opts);
    } else {
      if (a) op->sddmm.emplace(s, *a, n_or_k, opts);
      else op->sddmm.emplace(s, opts);
    }
    // Which candidate the chosen plan is, so that another process (or a binding that plans
    // from the pinned spec) can name it.
    if (auto cands = magicube::plan_candidates(op->spec())) {
      const uint64_t f = magicube::fingerprint(op->plan());
      for (size_t i = 0; i < cands->size(); ++i)
        if (magicube::fingerprint((*cands)[i]) == f) {
          op->candidate = int(i);
          break;
        }
    } else {
      llvm::consumeError(cands.takeError());
    }
    *out = op.release();
  });
}

}  // namespace

extern "C" {

int magicube_op_create(const char *spec, const magicube_matrix *matrix, int64_t n_or_k,
                       const magicube_op_options *options, magicube_op **out) {
  return create_op(spec, matrix, n_or_k, options, out);
}

int magicube_op_create_ex(const char *spec, const magicube_matrix *matrix, int64_t n_or_k,
                          const magicube_op_options_ex *options, magicube_op **out) {
  return create_op(spec, matrix, n_or_k, options, out);
}

void magicube_op_destroy(magicube_op *op) { delete op; }

int magicube_op_text(const magicube_op *op, int kind, char *buf, size_t cap, size_t *needed) {
  return guarded([&] {
    require(op, "op");
    switch (kind) {
      case MAGICUBE_TEXT_PLAN: return write_text(op->plan().str(), buf, cap, needed);
      case MAGICUBE_TEXT_SPEC: return write_text(magicube::to_string(op->spec()), buf, cap, needed);
      case MAGICUBE_TEXT_KERNEL: return write_text(op->plan().kernel_name(), buf, cap, needed);
      case MAGICUBE_TEXT_CHOSEN_BY: return write_text(op->chosen_by(), buf, cap, needed);
      case MAGICUBE_TEXT_ROUTE_WHY: return write_text(op->spmm ? op->spmm->route_why() : "", buf, cap, needed);
    }
    invalid("kind: " + std::to_string(kind) + " (allowed: 0 plan, 1 spec, 2 kernel, 3 chosen by, 4 route why)");
  });
}

int magicube_op_query(const magicube_op *op, int kind, int64_t *value) {
  return guarded([&] {
    require(op, "op");
    require(value, "value");
    const magicube::OpSpec &s = op->spec();
    auto bits = [](const magicube::ElemType &t) { return int64_t(t.is_signed ? -t.bits : t.bits); };
    switch (kind) {
      case MAGICUBE_QUERY_OP: *value = op->sddmm ? 1 : 0; return;
      case MAGICUBE_QUERY_V: *value = s.v; return;
      case MAGICUBE_QUERY_LHS_BITS: *value = bits(s.lhs); return;
      case MAGICUBE_QUERY_RHS_BITS: *value = bits(s.rhs); return;
      case MAGICUBE_QUERY_OUTPUT_DTYPE: *value = output_dtype(s.out); return;
      case MAGICUBE_QUERY_OUTPUT_ELEMENT_BYTES: *value = int64_t(magicube::stored_bytes(s.out)); return;
      case MAGICUBE_QUERY_MAX_REDUCTION:
        *value = op->spmm ? op->spmm->max_reduction_length() : op->sddmm->max_reduction_length();
        return;
      case MAGICUBE_QUERY_CANDIDATE: *value = op->candidate; return;
      case MAGICUBE_QUERY_DEVICE: *value = op->device; return;
      case MAGICUBE_QUERY_SCALE: *value = int64_t(s.scale); return;
      case MAGICUBE_QUERY_BIAS: *value = int64_t(s.bias); return;
      case MAGICUBE_QUERY_ROUTE: *value = op->dense() ? 1 : 0; return;
    }
    invalid("kind: " + std::to_string(kind) + " is not a query (allowed: 0..11)");
  });
}

int magicube_op_load(const magicube_op *op) {
  return guarded([&] {
    require(op, "op");
    op->load();
  });
}

int magicube_ops_compile(const magicube_op *const *ops, size_t count, int threads, size_t *kernels) {
  return guarded([&] {
    if (kernels) *kernels = 0;
    if (count > 0) require(ops, "ops");
    if (threads < 0) invalid("threads: " + std::to_string(threads) + " is not allowed (allowed: 0 for the host's cores, or >= 1)");
    std::vector<magicube::PlanTarget> targets;
    std::vector<size_t> which;
    for (size_t i = 0; i < count; ++i) {
      if (!ops[i]) invalid("ops[" + std::to_string(i) + "]: a null op");
      if (ops[i]->dense()) continue;
      targets.push_back({ops[i]->plan(), ops[i]->spec().arch});
      which.push_back(i);
    }
    const std::vector<magicube::Precompiled> done = magicube::precompile_kernels(targets, unsigned(threads));
    size_t ok = 0;
    std::string first;
    for (size_t t = 0; t < done.size(); ++t) {
      if (done[t].error.empty()) ++ok;
      else if (first.empty()) first = "ops[" + std::to_string(which[t]) + "] (" + done[t].name + "): " + done[t].error;
    }
    if (kernels) *kernels = ok;
    if (!first.empty()) throw Error(Kind::Compile, first);
  });
}

int magicube_pack(const magicube_op *op, const magicube_matrix *matrix, magicube_packed **out) {
  return guarded([&] {
    require(out, "out");
    *out = nullptr;
    require(op, "op");
    require(matrix, "matrix");
    const magicube::Plan &p = op->plan();
    magicube::VectorSparse a = to_vector_sparse(*matrix, p.spec.v, op->spmm.has_value());
    auto packed = std::make_unique<magicube_packed>();
    packed->bytes = op->spmm ? capi::lhs_blob(op->spmm->pack_lhs(a), op->dense(), fingerprint_of(p))
                             : capi::mask_blob(op->sddmm->pack_mask(a), fingerprint_of(p));
    std::memcpy(&packed->header, packed->bytes.data(), sizeof packed->header);
    *out = packed.release();
  });
}

void magicube_packed_destroy(magicube_packed *packed) { delete packed; }
const void *magicube_packed_data(const magicube_packed *packed) { return packed ? packed->bytes.data() : nullptr; }
size_t magicube_packed_bytes(const magicube_packed *packed) { return packed ? packed->bytes.size() : 0; }
const magicube_packed_header *magicube_packed_get_header(const magicube_packed *packed) {
  return packed ? &packed->header : nullptr;
}

namespace {
// The header at the start of a host blob of `bytes` bytes, checked against its size.
magicube_packed_header blob_header(const void *blob, size_t bytes) {
  require(blob, "blob");
  if (bytes < MAGICUBE_PACKED_HEADER_BYTES)
    invalid("blob: " + std::to_string(bytes) + " bytes, shorter than the " +
            std::to_string(MAGICUBE_PACKED_HEADER_BYTES) + "-byte header");
  magicube_packed_header h;
  std::memcpy(&h, blob, sizeof h);
  capi::check_blob_header(h, bytes);
  return h;
}
}  // namespace

int magicube_packed_read_header(const void *blob, size_t bytes, magicube_packed_header *out) {
  return guarded([&] {
    require(out, "out");
    *out = blob_header(blob, bytes);
  });
}

int magicube_packed_check(const magicube_op *op, const void *blob, size_t bytes, magicube_packed_header *out) {
  return guarded([&] {
    require(op, "op");
    const magicube_packed_header h = blob_header(blob, bytes);
    check_body(*op, h, blob);
    if (out) *out = h;
  });
}

int magicube_spmm_workspace_bytes(const magicube_op *op, const magicube_packed_header *header,
                                  const magicube_dense *b, int64_t n, const magicube_dense *c, size_t *bytes) {
  return guarded([&] {
    require(op, "op");
    require(header, "header");
    require(b, "b");
    require(c, "c");
    require(bytes, "bytes");
    if (!op->spmm) invalid("op: an SDDMM op given to magicube_spmm_workspace_bytes");
    check_header_for(*op, *header);
    *bytes = size_t(spmm_layout(*op, *header, *b, n, *c).ws.bytes);
  });
}

int magicube_spmm_run(const magicube_op *op, const magicube_packed_header *header, const void *a_packed,
                      const magicube_dense *b, int64_t n, const magicube_dense *c, const magicube_epilogue *epilogue,
                      void *workspace, size_t workspace_bytes, void *stream) {
  return guarded([&] {
    require(op, "op");
    require(header, "header");
    require(b, "b");
    require(c, "c");
    if (!op->spmm) invalid("op: an SDDMM op given to magicube_spmm_run");
    spmm_run(*op, *header, a_packed, *b, n, *c, epilogue, workspace, workspace_bytes, static_cast<CUstream>(stream));
  });
}

int magicube_sddmm_workspace_bytes(const magicube_op *op, const magicube_packed_header *header,
                                   const magicube_dense *a, const magicube_dense *b, int64_t k, size_t *bytes) {
  return guarded([&] {
    require(op, "op");
    require(header, "header");
    require(a, "a");
    require(b, "b");
    require(bytes, "bytes");
    if (!op->sddmm) invalid("op: an SpMM op given to magicube_sddmm_workspace_bytes");
    check_header_for(*op, *header);
    *bytes = size_t(sddmm_layout(*op, *header, *a, *b, k).ws.bytes);
  });
}

int magicube_sddmm_run(const magicube_op *op, const magicube_packed_header *header, const void *mask_packed,
                       const magicube_dense *a, const magicube_dense *b, int64_t k, void *out, int out_layout,
                       const magicube_epilogue *epilogue, void *workspace, size_t workspace_bytes, void *stream) {
  return guarded([&] {
    require(op, "op");
    require(header, "header");
    require(a, "a");
    require(b, "b");
    if (!op->sddmm) invalid("op: an SpMM op given to magicube_sddmm_run");
    sddmm_run(*op, *header, mask_packed, *a, *b, k, out, out_layout, epilogue, workspace, workspace_bytes,
              static_cast<CUstream>(stream));
  });
}

int magicube_output_elements(const magicube_packed_header *header, int64_t n_or_layout, int64_t *elements) {
  return guarded([&] {
    require(header, "header");
    require(elements, "elements");
    capi::check_blob_header(*header, 0);
    if (header->op == 0) {
      if (n_or_layout < 0) invalid("n: " + std::to_string(n_or_layout) + " is negative");
      *elements = header->rows * n_or_layout;
    } else {
      if (n_or_layout != MAGICUBE_BCRS && n_or_layout != MAGICUBE_SRBCRS)
        invalid("layout: " + std::to_string(n_or_layout) + " (allowed: 0 BCRS, 1 SR-BCRS)");
      *elements = (n_or_layout == MAGICUBE_BCRS ? header->num_vectors : header->num_slots) * header->v;
    }
  });
}

int magicube_output_bytes(const magicube_op *op, const magicube_packed_header *header, int64_t n_or_layout,
                          size_t *bytes) {
  int64_t elements = 0;
  if (int s = magicube_output_elements(header, n_or_layout, &elements)) return s;
  return guarded([&] {
    require(op, "op");
    require(bytes, "bytes");
    check_header_for(*op, *header);
    *bytes = size_t(elements) * magicube::stored_bytes(op->spec().out);
  });
}

int magicube_quantize_rows(int device, const magicube_dense *x, int64_t rows, int64_t cols, void *q, float *scale,
                           void *stream) {
  return guarded([&] {
    require(x, "x");
    if (rows < 0 || cols < 0)
      invalid("quantize: " + std::to_string(rows) + " x " + std::to_string(cols) + " (rows and cols must be >= 0)");
    if (enum_int(x->layout) != MAGICUBE_ROW_MAJOR) invalid("x: layout must be MAGICUBE_ROW_MAJOR (rows x cols, row-major)");
    magicube::capi::FloatType t = magicube::capi::FloatType::F32;
    switch (enum_int(x->dtype)) {
      case MAGICUBE_FLOAT32: t = magicube::capi::FloatType::F32; break;
      case MAGICUBE_FLOAT16: t = magicube::capi::FloatType::F16; break;
      case MAGICUBE_BFLOAT16: t = magicube::capi::FloatType::BF16; break;
      default:
        invalid(std::string("x: dtype ") + dtype_name(enum_int(x->dtype)) + " (allowed: MAGICUBE_FLOAT32, _FLOAT16, _BFLOAT16)");
    }
    if (rows == 0) return;
    require(scale, "scale");
    check_aligned(scale, 4, "scale");
    if (cols > 0) {
      require(x->data, "x.data");
      require(q, "q");
      check_aligned(x->data, magicube::capi::float_type_bytes(t), "x.data");
    }
    const magicube::Context &ctx = device_context(device);
    check(magicube::capi::quantize_rows_on_device(ctx, t, dptr(x->data), rows, cols, dptr(q), dptr(scale),
                                                   static_cast<CUstream>(stream)),
          Kind::Cuda);
  });
}

int magicube_spmm_host(const magicube_op *op, const magicube_packed_header *header, const void *a_packed,
                       const magicube_dense *b, int64_t n, const magicube_dense *c, const magicube_epilogue *epilogue) {
  return guarded([&] {
    require(op, "op");
    require(header, "header");
    require(a_packed, "a_packed");
    require(b, "b");
    require(c, "c");
    require(b->data, "b.data");
    require(c->data, "c.data");
    if (!op->spmm) invalid("op: an SDDMM op given to magicube_spmm_host");
    const magicube_packed_header &h = own_header(*header, a_packed);
    check_body(*op, h, a_packed);
    SpmmLayout l = spmm_layout(*op, h, *b, n, *c);  // validates before any device work
    (void)device_epilogue(op->spec(), epilogue, h.rows, n);
    const magicube::Context &ctx = device_context(op->device);
    DeviceBuffer da = upload_bytes(a_packed, size_t(h.total_bytes));
    DeviceBuffer db = upload_bytes(b->data, size_t(h.cols * n * dtype_bytes(b->dtype)));
    const size_t c_bytes = size_t(h.rows * n * dtype_bytes(c->dtype));
    DeviceBuffer dc = take(DeviceBuffer::allocate(std::max<size_t>(c_bytes, 1)), Kind::Cuda);
    DeviceBuffer ws = take(DeviceBuffer::allocate(size_t(std::max<int64_t>(l.ws.bytes, 1))), Kind::Cuda);
    const magicube::OpSpec &s = op->spec();
    magicube_epilogue de{epilogue ? epilogue->alpha : 1.0f, nullptr, nullptr, nullptr};
    DeviceBuffer rs, cs, bias;
    if (epilogue && epilogue->row_scale) rs = upload_bytes(epilogue->row_scale, size_t(h.rows) * 4), de.row_scale = reinterpret_cast<const float *>(rs.ptr());
    if (epilogue && epilogue->col_scale) cs = upload_bytes(epilogue->col_scale, size_t(n) * 4), de.col_scale = reinterpret_cast<const float *>(cs.ptr());
    if (epilogue && epilogue->bias)
      bias = upload_bytes(epilogue->bias, size_t(s.bias == magicube::Bias::Row ? h.rows : n) * 4),
      de.bias = reinterpret_cast<const float *>(bias.ptr());
    magicube_dense b_dev{reinterpret_cast<void *>(db.ptr()), b->dtype, b->layout};
    magicube_dense c_dev{reinterpret_cast<void *>(dc.ptr()), c->dtype, c->layout};
    spmm_run(*op, h, reinterpret_cast<const void *>(da.ptr()), b_dev, n, c_dev, epilogue ? &de : nullptr,
             reinterpret_cast<void *>(ws.ptr()), ws.bytes(), nullptr);
    check(ctx.synchronize(), Kind::Cuda);
    check(dc.download_bytes(c->data, c_bytes), Kind::Cuda);
  });
}

int magicube_sddmm_host(const magicube_op *op, const magicube_packed_header *header, const void *mask_packed,
                        const magicube_dense *a, const magicube_dense *b, int64_t k, void *out, int out_layout,
                        const magicube_epilogue *epilogue) {
  return guarded([&] {
    require(op, "op");
    require(header, "header");
    require(mask_packed, "mask_packed");
    require(a, "a");
    require(b, "b");
    require(a->data, "a.data");
    require(b->data, "b.data");
    require(out, "out");
    if (!op->sddmm) invalid("op: an SpMM op given to magicube_sddmm_host");
    const magicube_packed_header &h = own_header(*header, mask_packed);
    check_body(*op, h, mask_packed);
    SddmmLayout l = sddmm_layout(*op, h, *a, *b, k);
    if (out_layout != MAGICUBE_BCRS && out_layout != MAGICUBE_SRBCRS)
      invalid("out_layout: " + std::to_string(out_layout) + " (allowed: 0 BCRS, 1 SR-BCRS)");
    if (epilogue && epilogue->bias) invalid("epilogue: SDDMM takes no bias");
    (void)device_epilogue(op->spec(), epilogue, h.rows, h.cols);
    const magicube::Context &ctx = device_context(op->device);
    DeviceBuffer dm = upload_bytes(mask_packed, size_t(h.total_bytes));
    DeviceBuffer da = upload_bytes(a->data, size_t(h.rows * k * dtype_bytes(a->dtype)));
    DeviceBuffer db = upload_bytes(b->data, size_t(k * h.cols * dtype_bytes(b->dtype)));
    const int64_t elems = (out_layout == MAGICUBE_BCRS ? h.num_vectors : h.num_slots) * h.v;
    const size_t out_bytes = size_t(elems) * magicube::stored_bytes(op->spec().out);
    DeviceBuffer dout = take(DeviceBuffer::allocate(std::max<size_t>(out_bytes, 1)), Kind::Cuda);
    check(dout.memset(0), Kind::Cuda);  // 0 where the kernel writes nothing
    DeviceBuffer ws = take(DeviceBuffer::allocate(size_t(std::max<int64_t>(l.ws.bytes, 1))), Kind::Cuda);
    magicube_epilogue de{epilogue ? epilogue->alpha : 1.0f, nullptr, nullptr, nullptr};
    DeviceBuffer rs, cs;
    if (epilogue && epilogue->row_scale) rs = upload_bytes(epilogue->row_scale, size_t(h.rows) * 4), de.row_scale = reinterpret_cast<const float *>(rs.ptr());
    if (epilogue && epilogue->col_scale) cs = upload_bytes(epilogue->col_scale, size_t(h.cols) * 4), de.col_scale = reinterpret_cast<const float *>(cs.ptr());
    magicube_dense a_dev{reinterpret_cast<void *>(da.ptr()), a->dtype, a->layout};
    magicube_dense b_dev{reinterpret_cast<void *>(db.ptr()), b->dtype, b->layout};
    sddmm_run(*op, h, reinterpret_cast<const void *>(dm.ptr()), a_dev, b_dev, k, reinterpret_cast<void *>(dout.ptr()),
              out_layout, epilogue ? &de : nullptr, reinterpret_cast<void *>(ws.ptr()), ws.bytes(), nullptr);
    check(ctx.synchronize(), Kind::Cuda);
    check(dout.download_bytes(out, out_bytes), Kind::Cuda);
  });
}

}  // extern "C"
