// The C ABI's device path on the GPU (skips with one line without one): SpMM and SDDMM with
// B (and SDDMM's A) repacked on the device from either layout, any N, the output transposed
// into a column-major C, for 8-bit, 4-bit and 16-bit-wide operands, resident-B plans and the
// fused float epilogue; every element bit-exact against the int64 reference (float outputs:
// its rounded dequantization, runtime/epilogue.h). Runs go through magicube_spmm_host /
// magicube_sddmm_host, which upload and call the same run path as device pointers do.
#include <gtest/gtest.h>

#include <random>

#include "magicube/magicube.h"
#include "runtime/epilogue.h"
#include "runtime/magicube.h"
#include "runtime/reference.h"
#include "tests/gpu/gpu_env.h"
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
      magicube::EpilogueArgs e;
      std::uniform_real_distribution<float> u(0.5f, 1.5f);
      if (s.scale == magicube::Scale::Tensor) e.alpha = 0.0173f;
      if (s.scale == magicube::Scale::RowCol) {
        for (int64_t i = 0; i < m; ++i) e.row_scale.push_back(u(rng) * 1e-2f);
        for (int64_t i = 0; i < n; ++i) e.col_scale.push_back(u(rng) * 1e-2f);
      }
      if (s.bias != magicube::Bias::None)
        for (int64_t i = 0, nb = s.bias == magicube::Bias::Row ? m : n; i < nb; ++i) e.bias.push_back(u(rng) * 10 - 5);
      const magicube_epilogue ce{e.alpha, e.row_scale.empty() ? nullptr : e.row_scale.data(),
                                 e.col_scale.empty() ? nullptr : e.col_scale.data(), e.bias.empty() ? nullptr : e.bias.data()};

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

}  // namespace
