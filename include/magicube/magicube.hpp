// Magicube JIT for C++17: a header-only layer over the C ABI of libmagicube.so
// (magicube/magicube.h), with RAII handles and one exception type. No CUDA, LLVM or other
// header of the library's is needed; link MagicubeJIT::magicube.
//
//   #include <magicube/magicube.hpp>
//
//   std::cout << magicube::plan_describe("spmm.s8xs8.v8.i32.sm_90");  // what `magicube plan` prints
//
//   magicube::Op op("spmm.s8xs8.v8.bf16+rc.sm_90", magicube::dense_matrix(w.data(), M, K), N);
//   magicube::Packed pw = op.pack(magicube::dense_matrix(w.data(), M, K));   // host blob
//   // ... copy pw.data() (pw.bytes() bytes) to the device at a 256-byte aligned address: w_dev
//   magicube_dense x{x_dev, MAGICUBE_INT8, MAGICUBE_COL_MAJOR};       // N x K row-major
//   magicube_dense y{y_dev, MAGICUBE_BFLOAT16, MAGICUBE_COL_MAJOR};   // N x M row-major
//   size_t ws = op.spmm_workspace_bytes(pw.header(), x, N, y);
//   magicube_epilogue e{1.0f, w_scale_dev, x_scale_dev, nullptr};
//   op.spmm(pw.header(), w_dev, x, N, y, &e, ws_dev, ws, stream);     // asynchronous
//
// The dense route (any SpMM; operands wider than int8 in int8 chunks): OpOptions o; o.dense =
// MAGICUBE_DENSE_ALLOWED; then op.dense() and op.route_why() say what the dispatch chose; the
// calls above run either route (see magicube.h).
//
// Errors: every failure throws magicube::Error (a std::runtime_error) whose what() names the
// bad input and whose kind() says which stage failed (the C status, see magicube.h).
// Ownership and threads: as magicube.h says for the handles; Op and Packed are cheap to copy
// (copies share the handle) and may be used from several threads at once.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

#include "magicube/magicube.h"

namespace magicube {

class Error : public std::runtime_error {
 public:
  enum class Kind { Invalid, Compile, Cuda, NoGpu, BufferTooSmall, Internal };
  Error(Kind kind, const std::string &message) : std::runtime_error(message), kind_(kind) {}
  Kind kind() const { return kind_; }
  // "invalid", "compile", "cuda", "no-gpu", "buffer-too-small", "internal"
  static const char *kind_name(Kind k) {
    switch (k) {
      case Kind::Invalid: return "invalid";
      case Kind::Compile: return "compile";
      case Kind::Cuda: return "cuda";
      case Kind::NoGpu: return "no-gpu";
      case Kind::BufferTooSmall: return "buffer-too-small";
      case Kind::Internal: return "internal";
    }
    return "internal";
  }
  // The exception for a failed C call's status (its message: magicube_last_error()).
  static Error from_status(int status) {
    Kind k = Kind::Internal;
    switch (status) {
      case MAGICUBE_ERROR_INVALID: k = Kind::Invalid; break;
      case MAGICUBE_ERROR_COMPILE: k = Kind::Compile; break;
      case MAGICUBE_ERROR_CUDA: k = Kind::Cuda; break;
      case MAGICUBE_ERROR_NO_GPU: k = Kind::NoGpu; break;
      case MAGICUBE_ERROR_BUFFER_TOO_SMALL: k = Kind::BufferTooSmall; break;
      default: break;
    }
    return Error(k, magicube_last_error());
  }

 private:
  Kind kind_;
};

namespace detail {
inline void check(int status) {
  if (status != MAGICUBE_SUCCESS) throw Error::from_status(status);
}
// A text the C ABI writes into a caller's buffer: asks the size, then fills it.
template <class F>
std::string text(F &&write) {
  size_t needed = 0;
  check(write(nullptr, 0, &needed));
  std::string s(needed, '\0');
  check(write(&s[0], s.size(), &needed));
  s.resize(needed > 0 ? needed - 1 : 0);
  return s;
}
template <class T>
constexpr magicube_dtype dtype_of() {
  static_assert(std::is_integral<T>::value && sizeof(T) <= 8, "an integer type");
  if (sizeof(T) == 1) return std::is_signed<T>::value ? MAGICUBE_INT8 : MAGICUBE_UINT8;
  if (sizeof(T) == 2) return std::is_signed<T>::value ? MAGICUBE_INT16 : MAGICUBE_UINT16;
  if (sizeof(T) == 4) return MAGICUBE_INT32;
  return MAGICUBE_INT64;
}
}  // namespace detail

// The library's version, "MAJOR.MINOR.PATCH".
inline std::string version() { return magicube_version(); }

// What `magicube plan` prints for a spec (the dispatch's plan with no matrix, on the arch's
// reference device). Throws Error(Invalid) for a bad spec.
inline std::string plan_describe(const std::string &spec) {
  return detail::text([&](char *b, size_t c, size_t *n) { return magicube_plan_describe(spec.c_str(), b, c, n); });
}

// A host matrix (see magicube_matrix): dense row-major values, or BCRS vectors.
template <class T>
magicube_matrix dense_matrix(const T *values, int64_t rows, int64_t cols) {
  return magicube_matrix{rows, cols, detail::dtype_of<T>(), values, nullptr, nullptr, 0};
}
template <class T>
magicube_matrix bcrs_matrix(int64_t rows, int64_t cols, int v, const int64_t *block_ptr, const int32_t *col,
                            const T *values) {
  return magicube_matrix{rows, cols, detail::dtype_of<T>(), values, block_ptr, col, v};
}

// A packed sparse operand (A of SpMM, or an SDDMM mask) on the host.
class Packed {
 public:
  explicit Packed(magicube_packed *p) : p_(p, magicube_packed_destroy) {}
  const void *data() const { return magicube_packed_data(p_.get()); }
  size_t bytes() const { return magicube_packed_bytes(p_.get()); }
  const magicube_packed_header &header() const { return *magicube_packed_get_header(p_.get()); }
  const magicube_packed *get() const { return p_.get(); }

 private:
  std::shared_ptr<magicube_packed> p_;
};

struct OpOptions {
  int candidate = -1;  // -1: the dispatch's choice
  int device = 0;
  // The dense route (see magicube.h): MAGICUBE_DENSE_NEVER, _ALLOWED (the dispatch compares
  // the routes for the matrix) or _FORCED.
  magicube_dense_route dense = MAGICUBE_DENSE_NEVER;
};

// One planned op (spmm or sddmm, as the spec says).
class Op {
 public:
  // Plans through the dispatch with no matrix: knobs the spec leaves open take the policy's
  // defaults.
  explicit Op(const std::string &spec, const OpOptions &options = {}) { create(spec, nullptr, 0, options); }
  // Plans for a matrix (SpMM: A and N; SDDMM: the mask and K): a tuning record or the policy.
  Op(const std::string &spec, const magicube_matrix &matrix, int64_t n_or_k, const OpOptions &options = {}) {
    create(spec, &matrix, n_or_k, options);
  }

  std::string plan() const { return text(MAGICUBE_TEXT_PLAN); }
  std::string spec() const { return text(MAGICUBE_TEXT_SPEC); }  // every knob pinned
  std::string kernel_name() const { return text(MAGICUBE_TEXT_KERNEL); }
  std::string chosen_by() const { return text(MAGICUBE_TEXT_CHOSEN_BY); }
  // The route: false the sparse kernel, true the dense route (a cuBLASLt int8 GEMM); and why.
  bool dense() const { return query(MAGICUBE_QUERY_ROUTE) == 1; }
  std::string route_why() const { return text(MAGICUBE_TEXT_ROUTE_WHY); }
  int64_t query(magicube_op_query_kind kind) const {
    int64_t v = 0;
    detail::check(magicube_op_query(op_.get(), kind, &v));
    return v;
  }
  bool is_sddmm() const { return query(MAGICUBE_QUERY_OP) == 1; }
  magicube_dtype output_dtype() const { return magicube_dtype(query(MAGICUBE_QUERY_OUTPUT_DTYPE)); }
  size_t output_element_bytes() const { return size_t(query(MAGICUBE_QUERY_OUTPUT_ELEMENT_BYTES)); }
  int64_t max_reduction_length() const { return query(MAGICUBE_QUERY_MAX_REDUCTION); }
  void load() const { detail::check(magicube_op_load(op_.get())); }

  Packed pack(const magicube_matrix &matrix) const {
    magicube_packed *p = nullptr;
    detail::check(magicube_pack(op_.get(), &matrix, &p));
    return Packed(p);
  }
  // A blob from elsewhere (a file, another process), checked whole for this op before it goes
  // to the device (magicube_packed_check); returns its header.
  magicube_packed_header check_packed(const void *blob, size_t bytes) const {
    magicube_packed_header h{};
    detail::check(magicube_packed_check(op_.get(), blob, bytes, &h));
    return h;
  }

  // ---- device operands (asynchronous on `stream`; see magicube.h) ----
  size_t spmm_workspace_bytes(const magicube_packed_header &a, const magicube_dense &b, int64_t n,
                              const magicube_dense &c) const {
    size_t bytes = 0;
    detail::check(magicube_spmm_workspace_bytes(op_.get(), &a, &b, n, &c, &bytes));
    return bytes;
  }
  void spmm(const magicube_packed_header &a, const void *a_device, const magicube_dense &b, int64_t n,
            const magicube_dense &c, const magicube_epilogue *epilogue, void *workspace, size_t workspace_bytes,
            void *stream) const {
    detail::check(magicube_spmm_run(op_.get(), &a, a_device, &b, n, &c, epilogue, workspace, workspace_bytes, stream));
  }
  // Bytes of the output buffer: SpMM (n_or_layout = N), SDDMM (n_or_layout = a magicube_sparse_layout).
  size_t output_bytes(const magicube_packed_header &packed, int64_t n_or_layout) const {
    size_t bytes = 0;
    detail::check(magicube_output_bytes(op_.get(), &packed, n_or_layout, &bytes));
    return bytes;
  }
  size_t sddmm_workspace_bytes(const magicube_packed_header &mask, const magicube_dense &a, const magicube_dense &b,
                               int64_t k) const {
    size_t bytes = 0;
    detail::check(magicube_sddmm_workspace_bytes(op_.get(), &mask, &a, &b, k, &bytes));
    return bytes;
  }
  void sddmm(const magicube_packed_header &mask, const void *mask_device, const magicube_dense &a,
             const magicube_dense &b, int64_t k, void *out, magicube_sparse_layout layout,
             const magicube_epilogue *epilogue, void *workspace, size_t workspace_bytes, void *stream) const {
    detail::check(magicube_sddmm_run(op_.get(), &mask, mask_device, &a, &b, k, out, layout, epilogue, workspace,
                                     workspace_bytes, stream));
  }

  // ---- host operands (synchronous; the device does the work) ----
  void spmm_host(const Packed &a, const magicube_dense &b, int64_t n, const magicube_dense &c,
                 const magicube_epilogue *epilogue = nullptr) const {
    detail::check(magicube_spmm_host(op_.get(), &a.header(), a.data(), &b, n, &c, epilogue));
  }
  void sddmm_host(const Packed &mask, const magicube_dense &a, const magicube_dense &b, int64_t k, void *out,
                  magicube_sparse_layout layout = MAGICUBE_BCRS, const magicube_epilogue *epilogue = nullptr) const {
    detail::check(magicube_sddmm_host(op_.get(), &mask.header(), mask.data(), &a, &b, k, out, layout, epilogue));
  }

  const magicube_op *get() const { return op_.get(); }

 private:
  void create(const std::string &spec, const magicube_matrix *m, int64_t n_or_k, const OpOptions &o) {
    magicube_op_options_ex opts{sizeof(magicube_op_options_ex), o.candidate, o.device, o.dense};
    magicube_op *op = nullptr;
    detail::check(magicube_op_create_ex(spec.c_str(), m, n_or_k, &opts, &op));
    op_.reset(op, magicube_op_destroy);
  }
  std::string text(magicube_op_text_kind kind) const {
    return detail::text([&](char *b, size_t c, size_t *n) { return magicube_op_text(op_.get(), kind, b, c, n); });
  }
  std::shared_ptr<magicube_op> op_;
};

// Compiles the kernels of `ops` at once, in parallel (threads 0: the host's cores), into the
// kernel caches, without a GPU (magicube_ops_compile); returns how many kernels were compiled
// or found (dense-route ops have none).
inline size_t compile(const std::vector<const Op *> &ops, int threads = 0) {
  std::vector<const magicube_op *> handles;
  for (const Op *op : ops) handles.push_back(op ? op->get() : nullptr);
  size_t kernels = 0;
  detail::check(magicube_ops_compile(handles.data(), handles.size(), threads, &kernels));
  return kernels;
}

// Per-row int8 quantization on the device (magicube_quantize_rows): x (rows x cols, row-major
// float32 / float16 / bfloat16 as `dtype` says) into q (rows x cols int8) and scale (rows
// float32), on `stream`. Throws Error for bad arguments, naming them.
inline void quantize_rows(int device, const void *x, magicube_dtype dtype, int64_t rows, int64_t cols, void *q,
                          float *scale, void *stream = nullptr) {
  const magicube_dense xd{const_cast<void *>(x), dtype, MAGICUBE_ROW_MAJOR};
  detail::check(magicube_quantize_rows(device, &xd, rows, cols, q, scale, stream));
}

}  // namespace magicube
