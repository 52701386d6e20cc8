// The C ABI's device path on the GPU (skips with one line without one): SpMM and SDDMM with
// B (and SDDMM's A) repacked on the device from either layout, any N, the output transposed
// into a column-major C, for 8-bit, 4-bit and 16-bit-wide operands, resident-B plans and the
// fused float epilogue; every element bit-exact against the int64 reference (float outputs:
// its rounded dequantization, runtime/epilogue.h). Runs go through magicube_spmm_host /
// magicube_sddmm_host, which upload and call the same run path as device pointers do. And
// magicube_quantize_rows against its CPU reference (capi/quantize.h), bit for bit.
#include <gtest/gtest.h>

#include <dlfcn.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <functional>
#include <random>

#include "capi/quantize.h"
#include "magicube/magicube.h"
#include "runtime/epilogue.h"
#include "runtime/magicube.h"
#include "runtime/reference.h"
#include "tests/gpu/gpu_env.h"
#include "tests/gpu/slow_writer.h"
#include "tests/test_util.h"

namespace {

using magicube::ElemType;

struct OpHandle {
  magicube_op *op = nullptr;
  ~OpHandle() { magicube_op_destroy(op); }
};
struct PackedHandle {
  magicube_packed *p = nullptr;
  ~PackedHandle() { magicube_packed_destroy(p); }
};

std::string with_arch(const std::string &spec) { return spec + "." + magicube::arch_name(magicube::device_arch()); }

// A device operand's host copy in `dtype` (values already in range).
std::vector<uint8_t> as_dtype(const std::vector<int64_t> &v, magicube_dtype t) {
  const size_t w = t == MAGICUBE_INT8 || t == MAGICUBE_UINT8 ? 1 : t == MAGICUBE_INT32 ? 4 : 2;
  std::vector<uint8_t> out(v.size() * w);
  for (size_t i = 0; i < v.size(); ++i) {
    const int64_t x = v[i];
    std::memcpy(out.data() + i * w, &x, w);  // little-endian low bytes
  }
  return out;
}

std::vector<int64_t> transpose(const std::vector<int64_t> &m, int64_t r, int64_t c) {
  std::vector<int64_t> t(m.size());
  for (int64_t i = 0; i < r; ++i)
    for (int64_t j = 0; j < c; ++j) t[size_t(j * r + i)] = m[size_t(i * c + j)];
  return t;
}

// The stored output element e (of the op's type) widened as the references are.
int64_t element(const std::vector<uint8_t> &out, size_t i, size_t w, bool is_signed_int) {
  if (w == 8) { int64_t x; std::memcpy(&x, out.data() + i * 8, 8); return x; }
  if (w == 4) {
    if (is_signed_int) { int32_t x; std::memcpy(&x, out.data() + i * 4, 4); return x; }
    uint32_t x; std::memcpy(&x, out.data() + i * 4, 4); return x;
  }
  uint16_t x;
  std::memcpy(&x, out.data() + i * 2, 2);
  return x;
}

int64_t expected(const magicube::OpSpec &s, int64_t acc, const magicube::EpilogueArgs &e, int64_t r, int64_t c) {
  if (!magicube::is_float(s.out)) return acc;
  const double x = magicube::dequantize(s, acc, e, r, c);
  if (s.out == magicube::OutType::F32) return magicube::f32_bits(x);
  if (s.out == magicube::OutType::F16) return magicube::f16_bits(x);
  return magicube::bf16_bits(x);
}

struct SpmmCase {
  std::string spec;  // without the arch
  magicube_dtype b_dtype;
};

// Random scales and bias for what the spec reads (none for an integer output).
magicube::EpilogueArgs random_epilogue(std::mt19937_64 &rng, const magicube::OpSpec &s, int64_t m, int64_t n) {
  magicube::EpilogueArgs e;
  std::uniform_real_distribution<float> u(0.5f, 1.5f);
  if (s.scale == magicube::Scale::Tensor) e.alpha = 0.0173f;
  if (s.scale == magicube::Scale::RowCol) {
    for (int64_t i = 0; i < m; ++i) e.row_scale.push_back(u(rng) * 1e-2f);
    for (int64_t i = 0; i < n; ++i) e.col_scale.push_back(u(rng) * 1e-2f);
  }
  if (s.bias != magicube::Bias::None)
    for (int64_t i = 0, nb = s.bias == magicube::Bias::Row ? m : n; i < nb; ++i) e.bias.push_back(u(rng) * 10 - 5);
  return e;
}

// The C ABI's view of `e` (host pointers, for magicube_spmm_host).
magicube_epilogue c_epilogue(const magicube::EpilogueArgs &e) {
  return {e.alpha, e.row_scale.empty() ? nullptr : e.row_scale.data(), e.col_scale.empty() ? nullptr : e.col_scale.data(),
          e.bias.empty() ? nullptr : e.bias.data()};
}

TEST(CApiGpu, SpmmDeviceOperandsAnyLayoutAnyN) {
  MAGICUBE_REQUIRE_GPU(ctx);
  std::mt19937_64 rng(5);
  const std::vector<SpmmCase> cases = {
      {"spmm.s8xs8.v8.i32", MAGICUBE_INT8},          {"spmm.s8xs8.v8.n64.pf.i32", MAGICUBE_INT8},
      {"spmm.s8xu4.v8.n64.pf.i32", MAGICUBE_UINT8},  {"spmm.s4xs4.v8.n128.pf.i32", MAGICUBE_INT8},
      {"spmm.s8xs12.v4.n64.pf.i64", MAGICUBE_INT16}, {"spmm.s8xu8.v2.n64.nopf.i32", MAGICUBE_UINT8},
      {"spmm.s8xs8.v8.n48r.pf.i32", MAGICUBE_INT8},  {"spmm.s8xs8.v8.n32r.pf.i32", MAGICUBE_INT32},
      {"spmm.s8xs8.v8.n64.pf.bf16+rc+rowbias", MAGICUBE_INT8},
      {"spmm.s8xs4.v8.n64.pf.f16+t+colbias", MAGICUBE_INT8},
      {"spmm.s8xs8.v8.n64.pf.f32+rc", MAGICUBE_INT8},
      // Kernels that write C column-major: a ROW_MAJOR C is then the transposed one.
      {"spmm.s8xs8.v8.i32+ccol", MAGICUBE_INT8},     {"spmm.s4xs4.v8.n128.pf.i32+ccol", MAGICUBE_INT8},
      {"spmm.s8xs8.v8.n48r.pf.i64+ccol", MAGICUBE_INT8},
      {"spmm.s8xs8.v8.n64.pf.bf16+rc+rowbias+ccol", MAGICUBE_INT8},
  };
  const int64_t m = 70, k = 200;
  for (const SpmmCase &c : cases) {
    const std::string spec = with_arch(c.spec);
    const magicube::OpSpec s = magicube::parse_spec(spec);
    magicube::VectorSparse a = magicube::testing::random_vector_sparse(rng, m, k, s.v, 40, s.lhs);
    const std::vector<int64_t> dense_a = magicube::to_dense(a);
    for (int64_t n : {1, 5, 256, 333}) {
      auto b = magicube::testing::random_dense(rng, k * n, s.rhs);
      const auto ref = magicube::reference_spmm(a, b, n);
      const magicube::EpilogueArgs e = random_epilogue(rng, s, m, n);
      const magicube_epilogue ce = c_epilogue(e);

      std::vector<int64_t> a64 = dense_a;
      const magicube_matrix am{m, k, MAGICUBE_INT64, a64.data(), nullptr, nullptr, 0};
      OpHandle op;
      ASSERT_EQ(magicube_op_create(spec.c_str(), &am, n, nullptr, &op.op), MAGICUBE_SUCCESS) << magicube_last_error();
      PackedHandle pa;
      ASSERT_EQ(magicube_pack(op.op, &am, &pa.p), MAGICUBE_SUCCESS) << magicube_last_error();
      int64_t out_dtype = 0, w = 0;
      magicube_op_query(op.op, MAGICUBE_QUERY_OUTPUT_DTYPE, &out_dtype);
      magicube_op_query(op.op, MAGICUBE_QUERY_OUTPUT_ELEMENT_BYTES, &w);
      for (magicube_layout bl : {MAGICUBE_ROW_MAJOR, MAGICUBE_COL_MAJOR})
        for (magicube_layout cl : {MAGICUBE_ROW_MAJOR, MAGICUBE_COL_MAJOR}) {
          auto bsrc = as_dtype(bl == MAGICUBE_ROW_MAJOR ? b : transpose(b, k, n), c.b_dtype);
          std::vector<uint8_t> out(size_t(m * n * w), 0xab);
          const magicube_dense bd{bsrc.data(), c.b_dtype, bl}, cd{out.data(), magicube_dtype(out_dtype), cl};
          ASSERT_EQ(magicube_spmm_host(op.op, magicube_packed_get_header(pa.p), magicube_packed_data(pa.p), &bd, n, &cd, magicube::is_float(s.out) ? &ce : nullptr),
                    MAGICUBE_SUCCESS)
              << spec << ": " << magicube_last_error();
          for (int64_t i = 0; i < m; ++i)
            for (int64_t j = 0; j < n; ++j) {
              const size_t at = size_t(cl == MAGICUBE_ROW_MAJOR ? i * n + j : j * m + i);
              ASSERT_EQ(element(out, at, size_t(w), !magicube::is_float(s.out)), expected(s, ref[size_t(i * n + j)], e, i, j))
                  << spec << " n=" << n << " b " << bl << " c " << cl << " at (" << i << ", " << j << ")";
            }
        }
    }
  }
}

TEST(CApiGpu, SddmmDeviceOperandsBothLayouts) {
  MAGICUBE_REQUIRE_GPU(ctx);
  std::mt19937_64 rng(9);
  for (const char *base : {"sddmm.s8xs8.v8.n64.pf.i32", "sddmm.s4xs4.v8.n64.pf.i32", "sddmm.s8xs8.v8.n64.pf.f16+rc",
                           "sddmm.s12xs8.v4.n64.pf.i64"}) {
    const std::string spec = with_arch(base);
    const magicube::OpSpec s = magicube::parse_spec(spec);
    const int64_t m = 37, n = 50;
    magicube::VectorSparse mask = magicube::testing::random_vector_sparse(rng, m, n, s.v, 20, ElemType{1, false});
    for (int64_t k : {1, 100, 256}) {
      auto a = magicube::testing::random_dense(rng, m * k, s.lhs);
      auto b = magicube::testing::random_dense(rng, k * n, s.rhs);  // column-major: column c at c * k
      const auto ref = magicube::reference_sddmm(mask, a, b, k);
      magicube::EpilogueArgs e;
      if (s.scale == magicube::Scale::RowCol) {
        for (int64_t i = 0; i < m; ++i) e.row_scale.push_back(0.01f + 0.001f * float(i));
        for (int64_t i = 0; i < n; ++i) e.col_scale.push_back(0.02f - 0.0001f * float(i));
      }
      const magicube_epilogue ce{1.0f, e.row_scale.empty() ? nullptr : e.row_scale.data(),
                                 e.col_scale.empty() ? nullptr : e.col_scale.data(), nullptr};
      std::vector<int64_t> bp = mask.block_ptr;
      const magicube_matrix mm{m, n, MAGICUBE_INT8, nullptr, bp.data(), mask.col.data(), s.v};
      OpHandle op;
      ASSERT_EQ(magicube_op_create(spec.c_str(), &mm, k, nullptr, &op.op), MAGICUBE_SUCCESS) << magicube_last_error();
      PackedHandle pm;
      ASSERT_EQ(magicube_pack(op.op, &mm, &pm.p), MAGICUBE_SUCCESS) << magicube_last_error();
      int64_t w = 0;
      magicube_op_query(op.op, MAGICUBE_QUERY_OUTPUT_ELEMENT_BYTES, &w);
      const magicube_dtype dt = s.lhs.bits > 8 || s.rhs.bits > 8 ? MAGICUBE_INT16 : MAGICUBE_INT8;
      for (magicube_layout al : {MAGICUBE_ROW_MAJOR, MAGICUBE_COL_MAJOR})
        for (magicube_layout bl : {MAGICUBE_ROW_MAJOR, MAGICUBE_COL_MAJOR}) {
          auto asrc = as_dtype(al == MAGICUBE_ROW_MAJOR ? a : transpose(a, m, k), dt);
          auto bsrc = as_dtype(bl == MAGICUBE_COL_MAJOR ? b : transpose(b, n, k), dt);
          std::vector<uint8_t> out(size_t(mask.num_vectors() * s.v * w));
          const magicube_dense ad{asrc.data(), dt, al}, bd{bsrc.data(), dt, bl};
          ASSERT_EQ(magicube_sddmm_host(op.op, magicube_packed_get_header(pm.p), magicube_packed_data(pm.p), &ad, &bd, k, out.data(), MAGICUBE_BCRS,
                                        magicube::is_float(s.out) ? &ce : nullptr),
                    MAGICUBE_SUCCESS)
              << spec << ": " << magicube_last_error();
          for (int64_t blk = 0; blk < mask.num_blocks(); ++blk)
            for (int64_t i = mask.block_ptr[blk]; i < mask.block_ptr[blk + 1]; ++i)
              for (int r = 0; r < s.v && blk * s.v + r < m; ++r)
                ASSERT_EQ(element(out, size_t(i * s.v + r), size_t(w), !magicube::is_float(s.out)),
                          expected(s, ref[size_t(i * s.v + r)], e, blk * s.v + r, mask.col[size_t(i)]))
                    << spec << " k=" << k << " a " << al << " b " << bl << " vector " << i << " row " << r;
        }
    }
  }
}

// ---- the dense route ---------------------------------------------------------------------

// A forced dense op for A (m x k, int64 values) and N = n: null with *why where the dense
// route is unavailable (libcublasLt not loadable).
magicube_op *dense_op(const std::string &spec, std::vector<int64_t> &a64, int64_t m, int64_t k, int64_t n,
                      std::string *why) {
  const magicube_matrix am{m, k, MAGICUBE_INT64, a64.data(), nullptr, nullptr, 0};
  const magicube_op_options_ex o{sizeof(magicube_op_options_ex), -1, 0, MAGICUBE_DENSE_FORCED};
  magicube_op *op = nullptr;
  if (magicube_op_create_ex(spec.c_str(), &am, n, &o, &op) != MAGICUBE_SUCCESS) *why = magicube_last_error();
  return op;
}

TEST(CApiGpu, DenseRouteHostOperandsEveryLayout) {
  MAGICUBE_REQUIRE_GPU(ctx);
  std::mt19937_64 rng(15);
  const std::vector<SpmmCase> cases = {
      {"spmm.s8xs8.v8.i32", MAGICUBE_INT8},         {"spmm.s4xu7.v4.i32", MAGICUBE_UINT8},
      {"spmm.s8xs8.v8.i32", MAGICUBE_INT16},        {"spmm.s8xs8.v8.bf16+rc+rowbias", MAGICUBE_INT8},
      {"spmm.s8xs4.v8.f16+t+colbias", MAGICUBE_INT8}, {"spmm.s8xs8.v4.f32+rc", MAGICUBE_INT8},
      {"spmm.s8xs8.v8.i64", MAGICUBE_INT8},
      // in int8 chunks: B repacked into its chunk planes on the device, from bytes and from int16
      {"spmm.u8xu8.v8.i32", MAGICUBE_UINT8},       {"spmm.s8xs12.v4.bf16+rc+rowbias", MAGICUBE_INT16},
      {"spmm.u16xs8.v8.i64", MAGICUBE_INT8}};
  const int64_t m = 77, k = 256;  // M not a multiple of V
  for (const SpmmCase &c : cases) {
    const std::string spec = with_arch(c.spec);
    const magicube::OpSpec s = magicube::parse_spec(spec);
    magicube::VectorSparse a = magicube::testing::random_vector_sparse(rng, m, k, s.v, k / 2, s.lhs);
    std::vector<int64_t> a64 = magicube::to_dense(a);
    const magicube_matrix am{m, k, MAGICUBE_INT64, a64.data(), nullptr, nullptr, 0};
    for (int64_t n : {1, 7, 64, 512}) {
      auto b = magicube::testing::random_dense(rng, k * n, s.rhs);
      const auto ref = magicube::reference_spmm(a, b, n);
      const magicube::EpilogueArgs e = random_epilogue(rng, s, m, n);
      const magicube_epilogue ce = c_epilogue(e);
      std::string why;
      OpHandle op;
      op.op = dense_op(spec, a64, m, k, n, &why);
      if (!op.op) GTEST_SKIP() << why;
      int64_t route = 0;
      ASSERT_EQ(magicube_op_query(op.op, MAGICUBE_QUERY_ROUTE, &route), MAGICUBE_SUCCESS);
      ASSERT_EQ(route, 1);
      ASSERT_EQ(magicube_op_load(op.op), MAGICUBE_SUCCESS) << magicube_last_error();
      PackedHandle pa;
      ASSERT_EQ(magicube_pack(op.op, &am, &pa.p), MAGICUBE_SUCCESS) << magicube_last_error();
      int64_t out_dtype = 0, w = 0;
      magicube_op_query(op.op, MAGICUBE_QUERY_OUTPUT_DTYPE, &out_dtype);
      magicube_op_query(op.op, MAGICUBE_QUERY_OUTPUT_ELEMENT_BYTES, &w);
      for (magicube_layout bl : {MAGICUBE_ROW_MAJOR, MAGICUBE_COL_MAJOR})
        for (magicube_layout cl : {MAGICUBE_ROW_MAJOR, MAGICUBE_COL_MAJOR}) {
          auto bsrc = as_dtype(bl == MAGICUBE_ROW_MAJOR ? b : transpose(b, k, n), c.b_dtype);
          std::vector<uint8_t> out(size_t(m * n * w), 0xab);
          const magicube_dense bd{bsrc.data(), c.b_dtype, bl}, cd{out.data(), magicube_dtype(out_dtype), cl};
          ASSERT_EQ(magicube_spmm_host(op.op, magicube_packed_get_header(pa.p), magicube_packed_data(pa.p), &bd, n, &cd,
                                       magicube::is_float(s.out) ? &ce : nullptr),
                    MAGICUBE_SUCCESS)
              << spec << ": " << magicube_last_error();
          for (int64_t i = 0; i < m; ++i)
            for (int64_t j = 0; j < n; ++j) {
              const size_t at = size_t(cl == MAGICUBE_ROW_MAJOR ? i * n + j : j * m + i);
              ASSERT_EQ(element(out, at, size_t(w), !magicube::is_float(s.out)), expected(s, ref[size_t(i * n + j)], e, i, j))
                  << spec << " n=" << n << " b " << bl << " c " << cl << " at (" << i << ", " << j << ")";
            }
        }
    }
  }
}

// The driver's stream and graph calls, dlopen'ed as the library does (the test links no libcuda).
#define MAGICUBE_TEST_STR2(x) #x
#define MAGICUBE_TEST_STR(x) MAGICUBE_TEST_STR2(x)
struct GraphApi {
  decltype(&::cuStreamCreate) stream_create = nullptr;
  decltype(&::cuStreamDestroy) stream_destroy = nullptr;
  decltype(&::cuStreamSynchronize) stream_synchronize = nullptr;
  decltype(&::cuStreamBeginCapture) begin_capture = nullptr;
  decltype(&::cuStreamEndCapture) end_capture = nullptr;
  decltype(&::cuGraphInstantiate) instantiate = nullptr;
  decltype(&::cuGraphLaunch) launch = nullptr;
  decltype(&::cuGraphExecDestroy) exec_destroy = nullptr;
  decltype(&::cuGraphDestroy) graph_destroy = nullptr;
  bool ok = false;
  GraphApi() {
    void *lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!lib) return;
#define MAGICUBE_TEST_SYM(field, fn) field = reinterpret_cast<decltype(field)>(dlsym(lib, MAGICUBE_TEST_STR(fn)))
    MAGICUBE_TEST_SYM(stream_create, cuStreamCreate);
    MAGICUBE_TEST_SYM(stream_destroy, cuStreamDestroy);
    MAGICUBE_TEST_SYM(stream_synchronize, cuStreamSynchronize);
    MAGICUBE_TEST_SYM(begin_capture, cuStreamBeginCapture);
    MAGICUBE_TEST_SYM(end_capture, cuStreamEndCapture);
    MAGICUBE_TEST_SYM(instantiate, cuGraphInstantiate);
    MAGICUBE_TEST_SYM(launch, cuGraphLaunch);
    MAGICUBE_TEST_SYM(exec_destroy, cuGraphExecDestroy);
    MAGICUBE_TEST_SYM(graph_destroy, cuGraphDestroy);
#undef MAGICUBE_TEST_SYM
    ok = stream_create && stream_destroy && stream_synchronize && begin_capture && end_capture && instantiate &&
         launch && exec_destroy && graph_destroy;
  }

  // Captures `calls` (magicube calls on `stream`, returning their status) into a graph and
  // instantiates it in *exec; the first failing call's status and message come back (the graph
  // is then not instantiated). Capture errors of CUDA's own are test failures.
  int capture(CUstream stream, const std::function<int()> &calls, CUgraphExec *exec, std::string *message) {
    *exec = nullptr;
    EXPECT_EQ(begin_capture(stream, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL), CUDA_SUCCESS);
    const int status = calls();
    if (status != MAGICUBE_SUCCESS) *message = magicube_last_error();
    CUgraph graph = nullptr;
    EXPECT_EQ(end_capture(stream, &graph), CUDA_SUCCESS);
    if (status == MAGICUBE_SUCCESS && graph) {
      EXPECT_EQ(instantiate(exec, graph, 0), CUDA_SUCCESS);
    }
    if (graph) graph_destroy(graph);
    return status;
  }
};

// A forced dense op of `spec` (a float output: scales and bias drawn at random) for a random
// V=8 A of m x k and N = n, its packed blob on the device. `why` says why not when op is null
// (libcublasLt missing); other failures are test failures.
struct DenseDeviceOp {
  magicube::OpSpec s;
  magicube::VectorSparse a;
  std::vector<int64_t> a64;
  OpHandle op;
  PackedHandle pa;
  const magicube_packed_header *h = nullptr;
  magicube::DeviceBuffer blob;
  std::string why;

  DenseDeviceOp(std::mt19937_64 &rng, const std::string &spec, int64_t m, int64_t k, int64_t n)
      : s(magicube::parse_spec(spec)) {
    a = magicube::testing::random_vector_sparse(rng, m, k, 8, k / 2, s.lhs);
    a64 = magicube::to_dense(a);
    op.op = dense_op(spec, a64, m, k, n, &why);
    if (!op.op) return;
    EXPECT_EQ(magicube_op_load(op.op), MAGICUBE_SUCCESS) << magicube_last_error();
    const magicube_matrix am{m, k, MAGICUBE_INT64, a64.data(), nullptr, nullptr, 0};
    EXPECT_EQ(magicube_pack(op.op, &am, &pa.p), MAGICUBE_SUCCESS) << magicube_last_error();
    if (!pa.p) return;
    h = magicube_packed_get_header(pa.p);
    const auto *data = static_cast<const uint8_t *>(magicube_packed_data(pa.p));
    auto b = magicube::DeviceBuffer::from(std::vector<uint8_t>(data, data + magicube_packed_bytes(pa.p)));
    if (b) blob = std::move(*b);
    else ADD_FAILURE() << llvm::toString(b.takeError());
  }
  const void *blob_ptr() const { return reinterpret_cast<const void *>(blob.ptr()); }
};

TEST(CApiGpu, DenseRouteDevicePointersAnyAlignmentAndACudaGraph) {
  MAGICUBE_REQUIRE_GPU(ctx);
  std::mt19937_64 rng(16);
  const int64_t m = 77, k = 256, n = 64;
  DenseDeviceOp d(rng, with_arch("spmm.s8xs8.v8.i32"), m, k, n);
  if (!d.op.op) GTEST_SKIP() << d.why;
  ASSERT_FALSE(HasFailure());
  const magicube::OpSpec &s = d.s;
  const magicube::VectorSparse &a = d.a;
  auto bbuf = magicube::DeviceBuffer::allocate(size_t(k * n) + 256);
  auto cbuf = magicube::DeviceBuffer::allocate(size_t(m * n) * 4 + 256);
  ASSERT_TRUE(bbuf && cbuf);

  // Runs on `stream` with B at byte offset b_off and C at c_off; the result in C's layout.
  auto run = [&](const std::vector<int64_t> &b, magicube_layout bl, size_t b_off, magicube_layout cl, size_t c_off,
                 CUstream stream, magicube::DeviceBuffer *ws_keep) {
    std::vector<uint8_t> bsrc = as_dtype(bl == MAGICUBE_ROW_MAJOR ? b : transpose(b, k, n), MAGICUBE_INT8);
    EXPECT_FALSE(bool(bbuf->upload_bytes(bsrc.data(), bsrc.size(), b_off)));
    EXPECT_FALSE(bool(cbuf->memset(0xab)));
    const magicube_dense bd{reinterpret_cast<void *>(bbuf->ptr() + b_off), MAGICUBE_INT8, bl};
    const magicube_dense cd{reinterpret_cast<void *>(cbuf->ptr() + c_off), MAGICUBE_INT32, cl};
    size_t ws_bytes = 0;
    EXPECT_EQ(magicube_spmm_workspace_bytes(d.op.op, d.h, &bd, n, &cd, &ws_bytes), MAGICUBE_SUCCESS)
        << magicube_last_error();
    if (ws_keep->bytes() < ws_bytes) {
      auto fresh = magicube::DeviceBuffer::allocate(ws_bytes);
      if (!fresh) {
        ADD_FAILURE() << llvm::toString(fresh.takeError());
        return int(MAGICUBE_ERROR_CUDA);
      }
      *ws_keep = std::move(*fresh);
    }
    return magicube_spmm_run(d.op.op, d.h, d.blob_ptr(), &bd, n, &cd, nullptr, reinterpret_cast<void *>(ws_keep->ptr()),
                             ws_keep->bytes(), stream);
  };
  auto result = [&](magicube_layout cl, size_t c_off) {
    std::vector<int32_t> c(size_t(m * n));
    EXPECT_FALSE(bool(cbuf->download_bytes(c.data(), c.size() * 4, c_off)));
    std::vector<int64_t> out(size_t(m * n));
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j) out[size_t(i * n + j)] = c[size_t(cl == MAGICUBE_ROW_MAJOR ? i * n + j : j * m + i)];
    return out;
  };
  magicube::DeviceBuffer ws;
  for (size_t b_off : {size_t(0), size_t(16)})
    for (magicube_layout bl : {MAGICUBE_ROW_MAJOR, MAGICUBE_COL_MAJOR})
      for (size_t c_off : {size_t(0), size_t(4)})
        for (magicube_layout cl : {MAGICUBE_ROW_MAJOR, MAGICUBE_COL_MAJOR}) {
          auto b = magicube::testing::random_dense(rng, k * n, s.rhs);
          ASSERT_EQ(run(b, bl, b_off, cl, c_off, nullptr, &ws), MAGICUBE_SUCCESS) << magicube_last_error();
          ASSERT_FALSE(bool(ctx->synchronize()));
          EXPECT_EQ(result(cl, c_off), magicube::reference_spmm(a, b, n))
              << "b " << bl << " +" << b_off << ", c " << cl << " +" << c_off;
        }

  // A CUDA graph: a run (B repacked from K x N, C^T written directly) captured after a warm-up
  // run on the stream, replayed on new values of B.
  GraphApi g;
  if (!g.ok) GTEST_SKIP() << "libcuda.so.1 lacks the stream capture calls";
  CUstream stream = nullptr;
  ASSERT_EQ(g.stream_create(&stream, CU_STREAM_NON_BLOCKING), CUDA_SUCCESS);
  auto b = magicube::testing::random_dense(rng, k * n, s.rhs);
  ASSERT_EQ(run(b, MAGICUBE_ROW_MAJOR, 0, MAGICUBE_COL_MAJOR, 0, stream, &ws), MAGICUBE_SUCCESS) << magicube_last_error();
  ASSERT_EQ(g.stream_synchronize(stream), CUDA_SUCCESS);
  const magicube_dense bd{reinterpret_cast<void *>(bbuf->ptr()), MAGICUBE_INT8, MAGICUBE_ROW_MAJOR};
  const magicube_dense cd{reinterpret_cast<void *>(cbuf->ptr()), MAGICUBE_INT32, MAGICUBE_COL_MAJOR};
  CUgraphExec exec = nullptr;
  std::string message;
  const int status = g.capture(
      stream,
      [&] {
        return magicube_spmm_run(d.op.op, d.h, d.blob_ptr(), &bd, n, &cd, nullptr, reinterpret_cast<void *>(ws.ptr()),
                                 ws.bytes(), stream);
      },
      &exec, &message);
  ASSERT_EQ(status, MAGICUBE_SUCCESS) << "captured run: " << message;
  ASSERT_TRUE(exec);
  b = magicube::testing::random_dense(rng, k * n, s.rhs);
  std::vector<uint8_t> bsrc = as_dtype(b, MAGICUBE_INT8);
  ASSERT_FALSE(bool(bbuf->upload_bytes(bsrc.data(), bsrc.size())));
  ASSERT_FALSE(bool(cbuf->memset(0xab)));
  ASSERT_EQ(g.launch(exec, stream), CUDA_SUCCESS);
  ASSERT_EQ(g.stream_synchronize(stream), CUDA_SUCCESS);
  EXPECT_EQ(result(MAGICUBE_COL_MAJOR, 0), magicube::reference_spmm(a, b, n));
  g.exec_destroy(exec);
  g.stream_destroy(stream);
}

// A float output on the dense route from device pointers: C at an address aligned only to its
// element (the epilogue kernel writes it; no transpose), both layouts, device scale and bias
// vectors, then the run captured in a CUDA graph after a warm-up run and replayed on new B.
TEST(CApiGpu, DenseRouteFloatOutputOnDevicePointersInACudaGraph) {
  MAGICUBE_REQUIRE_GPU(ctx);
  std::mt19937_64 rng(17);
  const int64_t m = 77, k = 256, n = 64;
  DenseDeviceOp d(rng, with_arch("spmm.s8xs8.v8.bf16+rc+rowbias"), m, k, n);
  if (!d.op.op) GTEST_SKIP() << d.why;
  ASSERT_FALSE(HasFailure());
  const magicube::OpSpec &s = d.s;
  const magicube::VectorSparse &a = d.a;
  const magicube::EpilogueArgs e = random_epilogue(rng, s, m, n);
  auto rs = magicube::DeviceBuffer::from(e.row_scale), cs = magicube::DeviceBuffer::from(e.col_scale),
       bias = magicube::DeviceBuffer::from(e.bias);
  auto bbuf = magicube::DeviceBuffer::allocate(size_t(k * n));
  auto cbuf = magicube::DeviceBuffer::allocate(size_t(m * n) * 2 + 256);
  ASSERT_TRUE(rs && cs && bias && bbuf && cbuf);
  const magicube_epilogue de{e.alpha, reinterpret_cast<const float *>(rs->ptr()),
                             reinterpret_cast<const float *>(cs->ptr()), reinterpret_cast<const float *>(bias->ptr())};
  magicube::DeviceBuffer ws;
  auto run = [&](const std::vector<int64_t> &b, magicube_layout cl, size_t c_off, CUstream stream) {
    std::vector<uint8_t> bsrc = as_dtype(b, MAGICUBE_INT8);
    EXPECT_FALSE(bool(bbuf->upload_bytes(bsrc.data(), bsrc.size())));
    EXPECT_FALSE(bool(cbuf->memset(0xab)));
    const magicube_dense bd{reinterpret_cast<void *>(bbuf->ptr()), MAGICUBE_INT8, MAGICUBE_ROW_MAJOR};
    const magicube_dense cd{reinterpret_cast<void *>(cbuf->ptr() + c_off), MAGICUBE_BFLOAT16, cl};
    size_t ws_bytes = 0;
    EXPECT_EQ(magicube_spmm_workspace_bytes(d.op.op, d.h, &bd, n, &cd, &ws_bytes), MAGICUBE_SUCCESS)
        << magicube_last_error();
    if (ws.bytes() < ws_bytes) ws = std::move(*magicube::DeviceBuffer::allocate(ws_bytes));
    return magicube_spmm_run(d.op.op, d.h, d.blob_ptr(), &bd, n, &cd, &de, reinterpret_cast<void *>(ws.ptr()),
                             ws.bytes(), stream);
  };
  auto check = [&](const std::vector<int64_t> &b, magicube_layout cl, size_t c_off) {
    std::vector<uint8_t> out(size_t(m * n) * 2);
    ASSERT_FALSE(bool(cbuf->download_bytes(out.data(), out.size(), c_off)));
    const auto ref = magicube::reference_spmm(a, b, n);
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j)
        ASSERT_EQ(element(out, size_t(cl == MAGICUBE_ROW_MAJOR ? i * n + j : j * m + i), 2, false),
                  expected(s, ref[size_t(i * n + j)], e, i, j))
            << "c " << cl << " +" << c_off << " at (" << i << ", " << j << ")";
  };
  for (size_t c_off : {size_t(0), size_t(2)})
    for (magicube_layout cl : {MAGICUBE_ROW_MAJOR, MAGICUBE_COL_MAJOR}) {
      auto b = magicube::testing::random_dense(rng, k * n, s.rhs);
      ASSERT_EQ(run(b, cl, c_off, nullptr), MAGICUBE_SUCCESS) << magicube_last_error();
      ASSERT_FALSE(bool(ctx->synchronize()));
      check(b, cl, c_off);
    }

  GraphApi g;
  if (!g.ok) GTEST_SKIP() << "libcuda.so.1 lacks the stream capture calls";
  CUstream stream = nullptr;
  ASSERT_EQ(g.stream_create(&stream, CU_STREAM_NON_BLOCKING), CUDA_SUCCESS);
  auto b = magicube::testing::random_dense(rng, k * n, s.rhs);
  ASSERT_EQ(run(b, MAGICUBE_COL_MAJOR, 2, stream), MAGICUBE_SUCCESS) << magicube_last_error();
  ASSERT_EQ(g.stream_synchronize(stream), CUDA_SUCCESS);
  b = magicube::testing::random_dense(rng, k * n, s.rhs);
  std::vector<uint8_t> bsrc = as_dtype(b, MAGICUBE_INT8);
  ASSERT_FALSE(bool(bbuf->upload_bytes(bsrc.data(), bsrc.size())));
  ASSERT_FALSE(bool(cbuf->memset(0xab)));
  const magicube_dense bd{reinterpret_cast<void *>(bbuf->ptr()), MAGICUBE_INT8, MAGICUBE_ROW_MAJOR};
  const magicube_dense cd{reinterpret_cast<void *>(cbuf->ptr() + 2), MAGICUBE_BFLOAT16, MAGICUBE_COL_MAJOR};
  CUgraphExec exec = nullptr;
  std::string message;
  const int status = g.capture(
      stream,
      [&] {
        return magicube_spmm_run(d.op.op, d.h, d.blob_ptr(), &bd, n, &cd, &de, reinterpret_cast<void *>(ws.ptr()),
                                 ws.bytes(), stream);
      },
      &exec, &message);
  ASSERT_EQ(status, MAGICUBE_SUCCESS) << "captured run: " << message;
  ASSERT_TRUE(exec);
  ASSERT_EQ(g.launch(exec, stream), CUDA_SUCCESS);
  ASSERT_EQ(g.stream_synchronize(stream), CUDA_SUCCESS);
  check(b, MAGICUBE_COL_MAJOR, 2);
  g.exec_destroy(exec);
  g.stream_destroy(stream);
}

// Two sparse layers (N = 16: decode kernels, on sm_90 programmatic dependent launches) captured
// back to back into a CUDA graph (the second gets a programmatic edge from the first), replayed
// on new values of B: both exact. At K=14336 on sm_90 each layer runs in clusters of two blocks
// (two K panels, Launch::panel_cluster): cluster launches in a graph, with PDL.
TEST(CApiGpu, DecodeLayersChainedInACudaGraph) {
  MAGICUBE_REQUIRE_GPU(ctx);
  GraphApi g;
  if (!g.ok) GTEST_SKIP() << "libcuda.so.1 lacks the stream capture calls";
  for (const int64_t k : {int64_t(1024), int64_t(14336)}) {
    SCOPED_TRACE("K=" + std::to_string(k));
    std::mt19937_64 rng(21);
    const std::string spec = with_arch("spmm.s8xs8.v8.i32");
    const magicube::OpSpec s = magicube::parse_spec(spec);
    const int64_t m = k > 4096 ? 4096 : 512, n = 16;
    struct Layer {
      magicube::VectorSparse a;
      OpHandle op;
      PackedHandle pa;
      magicube::DeviceBuffer blob, c, ws;
    };
    std::vector<Layer> layers(2);
    auto bbuf = magicube::DeviceBuffer::allocate(size_t(k * n));
    ASSERT_TRUE(bool(bbuf));
    for (Layer &l : layers) {
      l.a = magicube::testing::random_vector_sparse(rng, m, k, 8, k / 2, s.lhs);
      std::vector<int64_t> a64 = magicube::to_dense(l.a);
      const magicube_matrix am{m, k, MAGICUBE_INT64, a64.data(), nullptr, nullptr, 0};
      ASSERT_EQ(magicube_op_create(spec.c_str(), &am, n, nullptr, &l.op.op), MAGICUBE_SUCCESS) << magicube_last_error();
      if (k > 4096 && s.arch >= 90) {  // the cluster plan, on the sparse route
        int64_t route = -1;
        ASSERT_EQ(magicube_op_query(l.op.op, MAGICUBE_QUERY_ROUTE, &route), MAGICUBE_SUCCESS);
        EXPECT_EQ(route, 0);
        char text[256];
        ASSERT_EQ(magicube_op_text(l.op.op, MAGICUBE_TEXT_SPEC, text, sizeof text, nullptr), MAGICUBE_SUCCESS);
        EXPECT_NE(std::string(text).find(".n16dp7168."), std::string::npos) << text;
      }
      ASSERT_EQ(magicube_op_load(l.op.op), MAGICUBE_SUCCESS) << magicube_last_error();
      ASSERT_EQ(magicube_pack(l.op.op, &am, &l.pa.p), MAGICUBE_SUCCESS) << magicube_last_error();
      auto blob = magicube::DeviceBuffer::allocate(magicube_packed_bytes(l.pa.p));
      auto c = magicube::DeviceBuffer::allocate(size_t(m * n) * 4);
      ASSERT_TRUE(blob && c);
      l.blob = std::move(*blob), l.c = std::move(*c);
      ASSERT_FALSE(bool(l.blob.upload_bytes(magicube_packed_data(l.pa.p), magicube_packed_bytes(l.pa.p))));
      const magicube_dense bd{reinterpret_cast<void *>(bbuf->ptr()), MAGICUBE_INT8, MAGICUBE_ROW_MAJOR};
      const magicube_dense cd{reinterpret_cast<void *>(l.c.ptr()), MAGICUBE_INT32, MAGICUBE_ROW_MAJOR};
      size_t ws_bytes = 0;
      ASSERT_EQ(magicube_spmm_workspace_bytes(l.op.op, magicube_packed_get_header(l.pa.p), &bd, n, &cd, &ws_bytes),
                MAGICUBE_SUCCESS)
          << magicube_last_error();
      auto ws = magicube::DeviceBuffer::allocate(std::max<size_t>(ws_bytes, 1));
      ASSERT_TRUE(bool(ws));
      l.ws = std::move(*ws);
    }
    auto run = [&](Layer &l, CUstream stream) {
      const magicube_dense bd{reinterpret_cast<void *>(bbuf->ptr()), MAGICUBE_INT8, MAGICUBE_ROW_MAJOR};
      const magicube_dense cd{reinterpret_cast<void *>(l.c.ptr()), MAGICUBE_INT32, MAGICUBE_ROW_MAJOR};
      return magicube_spmm_run(l.op.op, magicube_packed_get_header(l.pa.p), reinterpret_cast<const void *>(l.blob.ptr()),
                               &bd, n, &cd, nullptr, reinterpret_cast<void *>(l.ws.ptr()), l.ws.bytes(), stream);
    };
    auto set_b = [&]() {
      auto b = magicube::testing::random_dense(rng, k * n, s.rhs);
      std::vector<uint8_t> bsrc = as_dtype(b, MAGICUBE_INT8);
      EXPECT_FALSE(bool(bbuf->upload_bytes(bsrc.data(), bsrc.size())));
      for (Layer &l : layers) EXPECT_FALSE(bool(l.c.memset(0xab)));
      return b;
    };
    auto check = [&](const std::vector<int64_t> &b, const char *what) {
      for (size_t i = 0; i < layers.size(); ++i) {
        std::vector<int32_t> c(size_t(m * n));
        ASSERT_FALSE(bool(layers[i].c.download_bytes(c.data(), c.size() * 4)));
        const std::vector<int64_t> want = magicube::reference_spmm(layers[i].a, b, n);
        for (size_t j = 0; j < want.size(); ++j) ASSERT_EQ(c[j], want[j]) << what << ": layer " << i << " at " << j;
      }
    };
    CUstream stream = nullptr;
    ASSERT_EQ(g.stream_create(&stream, CU_STREAM_NON_BLOCKING), CUDA_SUCCESS);
    auto b = set_b();
    for (Layer &l : layers) ASSERT_EQ(run(l, stream), MAGICUBE_SUCCESS) << magicube_last_error();
    ASSERT_EQ(g.stream_synchronize(stream), CUDA_SUCCESS);
    check(b, "on the stream");
    CUgraphExec exec = nullptr;
    std::string message;
    const int status = g.capture(
        stream,
        [&] {
          for (Layer &l : layers)
            if (int st = run(l, stream); st != MAGICUBE_SUCCESS) return st;
          return int(MAGICUBE_SUCCESS);
        },
        &exec, &message);
    ASSERT_EQ(status, MAGICUBE_SUCCESS) << "captured run: " << message;
    ASSERT_TRUE(exec);
    for (int replay = 0; replay < 2; ++replay) {
      b = set_b();
      ASSERT_EQ(g.launch(exec, stream), CUDA_SUCCESS);
      ASSERT_EQ(g.stream_synchronize(stream), CUDA_SUCCESS);
      check(b, "graph replay");
    }
    g.exec_destroy(exec);
    g.stream_destroy(stream);
  }
}

}  // namespace

TEST(CApiGpu, QuantizeRowsEqualsTheCpuReference) {
  MAGICUBE_REQUIRE_GPU(ctx);
  std::mt19937_64 rng(5);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  const float nan = std::numeric_limits<float>::quiet_NaN(), inf = std::numeric_limits<float>::infinity();
  struct Shape {
    int64_t rows, cols;
  };
  for (magicube_dtype dtype : {MAGICUBE_FLOAT32, MAGICUBE_FLOAT16, MAGICUBE_BFLOAT16})
    for (const Shape &sh : {Shape{1, 1}, Shape{3, 4096}, Shape{17, 1001}, Shape{2, 14336}, Shape{7, 7}, Shape{9, 300}, Shape{8, 512}}) {
      SCOPED_TRACE("dtype " + std::to_string(int(dtype)) + ", " + std::to_string(sh.rows) + " x " + std::to_string(sh.cols));
      const int64_t rows = sh.rows, cols = sh.cols, n = rows * cols;
      // Rows of several magnitudes; with 7 or more rows also: ties (max 127 x 2^-2, elements
      // (k + 1/2) x 2^-2), zeros, a NaN, an infinity, a value below the smallest scale.
      std::vector<float> x(static_cast<size_t>(n));
      for (int64_t r = 0; r < rows; ++r)
        for (int64_t j = 0; j < cols; ++j) x[size_t(r * cols + j)] = normal(rng) * std::ldexp(1.0f, int(r % 9) - 4);
      if (rows >= 7) {
        for (int64_t j = 0; j < cols; ++j) x[size_t(cols + j)] = (float(int(j % 200) - 100) + 0.5f) * 0.25f;
        x[size_t(cols)] = 127 * 0.25f;
        for (int64_t j = 0; j < cols; ++j) x[size_t(2 * cols + j)] = 0.0f;
        x[size_t(3 * cols + cols / 2)] = nan;
        x[size_t(4 * cols + cols / 3)] = -inf;
        x[size_t(5 * cols)] = 1e-14f;
      }
      // The operand in its dtype, and the values the reference sees (widened back exactly).
      const size_t w = dtype == MAGICUBE_FLOAT32 ? 4 : 2;
      std::vector<uint8_t> bytes(size_t(n) * w);
      for (int64_t i = 0; i < n; ++i) {
        if (dtype == MAGICUBE_FLOAT32) {
          std::memcpy(bytes.data() + i * 4, &x[size_t(i)], 4);
          continue;
        }
        const float v = x[size_t(i)];
        uint16_t h = dtype == MAGICUBE_FLOAT16 ? magicube::f16_bits(double(v)) : magicube::bf16_bits(double(v));
        if (v != v) h = dtype == MAGICUBE_FLOAT16 ? 0x7e00 : 0x7fc0;
        std::memcpy(bytes.data() + i * 2, &h, 2);
        x[size_t(i)] = float(dtype == MAGICUBE_FLOAT16 ? magicube::f16_value(h) : magicube::bf16_value(h));
      }
      std::vector<int8_t> want_q(static_cast<size_t>(n));
      std::vector<float> want_s(static_cast<size_t>(rows));
      magicube::capi::quantize_rows_cpu(x.data(), rows, cols, want_q.data(), want_s.data());
      // x 16-byte aligned and q 16 bytes past a boundary (the 16-byte-unit kernel where cols is a
      // multiple of the unit: 4096, 14336, 300 for float32; the row kept in shared memory where it
      // fits 48 KiB, all but 14336 float32), then x one element past a 256-byte boundary and q one
      // byte past (element by element): any element-aligned address.
      for (const bool aligned : {true, false}) {
        SCOPED_TRACE(aligned ? "aligned operands" : "element-aligned operands");
        const size_t xoff = aligned ? 0 : w, qoff = aligned ? 16 : 1;
        auto xb = magicube::DeviceBuffer::allocate(bytes.size() + 256);
        auto qb = magicube::DeviceBuffer::allocate(size_t(n) + 256);
        auto sb = magicube::DeviceBuffer::allocate(size_t(rows) * 4);
        ASSERT_TRUE(xb && qb && sb);
        ASSERT_FALSE(bool(xb->upload_bytes(bytes.data(), bytes.size(), xoff)));
        ASSERT_FALSE(bool(qb->memset(0x55)));
        const magicube_dense xd{reinterpret_cast<void *>(xb->ptr() + xoff), dtype, MAGICUBE_ROW_MAJOR};
        ASSERT_EQ(magicube_quantize_rows(0, &xd, rows, cols, reinterpret_cast<void *>(qb->ptr() + qoff),
                                         reinterpret_cast<float *>(sb->ptr()), nullptr),
                  MAGICUBE_SUCCESS)
            << magicube_last_error();
        std::vector<int8_t> got_q(size_t(n) + qoff + 1);
        std::vector<float> got_s(static_cast<size_t>(rows));
        ASSERT_FALSE(bool(qb->download_bytes(got_q.data(), got_q.size())));
        ASSERT_FALSE(bool(sb->download_bytes(got_s.data(), got_s.size() * 4)));
        EXPECT_EQ(got_q[qoff - 1], 0x55) << "a byte before q written";
        EXPECT_EQ(got_q.back(), 0x55) << "a byte after q written";
        EXPECT_EQ(std::vector<int8_t>(got_q.begin() + long(qoff), got_q.end() - 1), want_q);
        for (int64_t r = 0; r < rows; ++r) {
          uint32_t g, e;
          std::memcpy(&g, &got_s[size_t(r)], 4);
          std::memcpy(&e, &want_s[size_t(r)], 4);
          EXPECT_EQ(g, e) << "scale of row " << r;
        }
      }
    }
}

TEST(CApiGpu, QuantizeRowsWaitsForThePreviousKernel) {
  // On sm_90 the quantization is a programmatic dependent launch (it lets the next kernel, a
  // decode SpMM, launch at once): it must still read x only after the kernel before it wrote x.
  // A one-warp kernel lets dependents launch, spins ~0.1 ms, then writes x.
  MAGICUBE_REQUIRE_GPU(ctx);
  const int64_t rows = 64, cols = 4096, n = rows * cols;
  std::mt19937_64 rng(9);
  std::normal_distribution<float> normal(0.0f, 2.0f);
  std::vector<float> x(static_cast<size_t>(n));
  for (float &v : x) v = normal(rng);
  std::vector<int8_t> want_q(static_cast<size_t>(n));
  std::vector<float> want_s(static_cast<size_t>(rows));
  magicube::capi::quantize_rows_cpu(x.data(), rows, cols, want_q.data(), want_s.data());
  auto writer = magicube::testing::SlowWriter::load(*ctx);
  ASSERT_TRUE(bool(writer)) << llvm::toString(writer.takeError());
  auto src = magicube::DeviceBuffer::allocate(size_t(n) * 4), xb = magicube::DeviceBuffer::allocate(size_t(n) * 4);
  auto qb = magicube::DeviceBuffer::allocate(size_t(n)), sb = magicube::DeviceBuffer::allocate(size_t(rows) * 4);
  ASSERT_TRUE(src && xb && qb && sb);
  ASSERT_FALSE(bool(src->upload_bytes(x.data(), size_t(n) * 4)));
  for (int round = 0; round < 3; ++round) {
    ASSERT_FALSE(bool(xb->memset(0x7f)));  // poison x (NaNs): the writer restores it
    ASSERT_FALSE(bool(ctx->synchronize()));
    ASSERT_FALSE(bool(writer->launch(src->ptr(), xb->ptr(), (unsigned long long)n * 4)));
    const magicube_dense xd{reinterpret_cast<void *>(xb->ptr()), MAGICUBE_FLOAT32, MAGICUBE_ROW_MAJOR};
    ASSERT_EQ(magicube_quantize_rows(0, &xd, rows, cols, reinterpret_cast<void *>(qb->ptr()),
                                     reinterpret_cast<float *>(sb->ptr()), nullptr),
              MAGICUBE_SUCCESS)
        << magicube_last_error();
    ASSERT_FALSE(bool(ctx->synchronize()));
    std::vector<int8_t> got_q(static_cast<size_t>(n));
    std::vector<float> got_s(static_cast<size_t>(rows));
    ASSERT_FALSE(bool(qb->download_bytes(got_q.data(), got_q.size())));
    ASSERT_FALSE(bool(sb->download_bytes(got_s.data(), got_s.size() * 4)));
    ASSERT_EQ(got_q, want_q) << "round " << round << " (read x before the previous kernel wrote it?)";
    ASSERT_EQ(std::memcmp(got_s.data(), want_s.data(), got_s.size() * 4), 0) << "round " << round;
  }
}
