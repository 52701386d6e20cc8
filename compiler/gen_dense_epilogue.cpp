#include "compiler/dense_epilogue.h"

#include <functional>
#include <sstream>
#include <string>
#include <vector>

#include "compiler/dense_chunks.h"
#include "compiler/emitter.h"
#include "compiler/snippets.h"

namespace magicube {

namespace {
// The stored element's C type, how one accumulator becomes it (x: the dequantized double), and
// how four of them (o[0..3]) are stored at out + i with one or two 16-byte-or-narrower stores.
struct OutForm {
  const char *type;
  std::string snippet;  // "" when none is needed
  std::string expr;     // of `acc` (int64) and `x` (double)
  int align;            // bytes the four-element store needs
  std::string store4;
};

OutForm out_form(OutType t) {
  const std::string half2 =
      "*(uint2 *)(out + i) = make_uint2(o[0] | ((unsigned)o[1] << 16), o[2] | ((unsigned)o[3] << 16));";
  switch (t) {
    case OutType::Int64:
      return {"long long", "", "acc", 16,
              "*(longlong2 *)(out + i) = make_longlong2(o[0], o[1]);\n"
              "      *(longlong2 *)(out + i + 2) = make_longlong2(o[2], o[3]);"};
    case OutType::F32:
      return {"float", "", "__double2float_rn(x)", 16, "*(float4 *)(out + i) = make_float4(o[0], o[1], o[2], o[3]);"};
    case OutType::F16: return {"unsigned short", "mc_to_f16", "mc_to_f16(x)", 8, half2};
    case OutType::BF16: return {"unsigned short", "mc_to_bf16", "mc_to_bf16(x)", 8, half2};
    case OutType::Int32: break;
  }
  return {"int", "", "(int)acc", 16, "*(int4 *)(out + i) = make_int4(o[0], o[1], o[2], o[3]);"};
}

std::string scale_text(const OpSpec &s) {
  switch (s.scale) {
    case Scale::None: return "acc";
    case Scale::Tensor: return "acc * alpha";
    case Scale::RowCol: return "acc * row_scale[row] * col_scale[col]";
  }
  return "acc";
}

// `head` + the arguments joined by ", " + `tail` as one line at indentation `level` (two
// columns each), wrapped by the generators' Emitter (at the call's commas, 4 columns in).
std::string call_line(int level, const std::string &head, const std::vector<std::string> &args, const std::string &tail) {
  std::string code = head;
  for (size_t i = 0; i < args.size(); ++i) code += (i ? ", " : "") + args[i];
  cg::Emitter e(level);
  e.line(code + tail);
  return e.str();
}

// The address of plane t's element e: acc_in[<plane_at(t, e)>].
std::string plane_at(int t, const std::string &e) {
  return t == 0 ? e : t == 1 ? "plane + " + e : std::to_string(t) + " * plane + " + e;
}

// An offset's sums of chunk c: sums[<sums_at(c, count, e)>].
std::string sums_at(int c, const char *count, const std::string &e) {
  return c == 0 ? e : c == 1 ? std::string(count) + " + " + e : std::to_string(c) + " * " + count + " + " + e;
}

// mc_sum(s0, s1, ..., row, col, m, n, k, ra, cb): C's exact sum from its chunk pairs' int32
// results (compiler/dense_chunks.h): pair t counts 2^shift(t) times, with its offsets' terms.
std::string sum_function(const DenseChunks &ch) {
  std::ostringstream s;
  s << "// C's exact sum from its " << ch.pairs() << " chunk pair(s)' int32 results s0..: pair t counts 2^shift(t) "
    << "times,\n// with its offsets' terms (compiler/dense_chunks.h): B's offset times A's row sums ra, A's "
    << "offset\n// times B's column sums cb, both offsets times K.\n";
  std::vector<std::string> params;
  for (int t = 0; t < ch.pairs(); ++t) params.push_back("int s" + std::to_string(t));
  for (const char *p : {"long long row", "long long col", "long long m", "long long n", "long long k",
                        "const int *__restrict__ ra", "const int *__restrict__ cb"})
    params.push_back(p);
  s << call_line(0, "__device__ __forceinline__ long long mc_sum(", params, ") {");
  std::vector<std::string> terms;
  for (int t = 0; t < ch.pairs(); ++t) {
    const int64_t sh = int64_t{1} << ch.shift(t), o = ch.lhs_of(t).offset, p = ch.rhs_of(t).offset;
    const int i = ch.lhs_index(t), j = ch.rhs_index(t);
    terms.push_back("(long long)s" + std::to_string(t) + (sh > 1 ? " * " + std::to_string(sh) + "LL" : ""));
    if (p) terms.push_back(std::to_string(sh * p) + "LL * ra[" + sums_at(i, "m", "row") + "]");
    if (o) terms.push_back(std::to_string(sh * o) + "LL * cb[" + sums_at(j, "n", "col") + "]");
    if (o && p) terms.push_back(std::to_string(sh * o * p) + "LL * k");
  }
  for (size_t t = 0; t < terms.size(); ++t)
    s << (t == 0 ? "  return " : "       + ") << terms[t] << (t + 1 == terms.size() ? ";\n" : "\n");
  s << "}\n\n";
  return s.str();
}
}  // namespace

std::string dense_epilogue_name(const OpSpec &spec, bool transposed) {
  const bool dequant = is_float(spec.out);
  std::string name = std::string("magicube_dense_epilogue_") + out_name(spec.out);
  if (dequant && spec.scale != Scale::None) name += std::string("_") + scale_name(spec.scale);
  if (dequant && spec.bias != Bias::None) name += std::string("_") + bias_name(spec.bias) + "bias";
  if (dense_chunks(spec).needs_epilogue()) name += "_" + spec.lhs.str() + "x" + spec.rhs.str();
  if (transposed) name += "_ct";
  return name;
}

KernelSource dense_epilogue_source(const OpSpec &spec, bool transposed) {
  const OutForm f = out_form(spec.out);
  const bool dequant = is_float(spec.out);
  const std::string name = dense_epilogue_name(spec, transposed);
  const DenseChunks ch = dense_chunks(spec);

  Snippets snippets;
  if (dequant) snippets.use("mc_dequant");
  if (!f.snippet.empty()) snippets.use(f.snippet);

  std::ostringstream s;
  if (!ch.needs_epilogue())
    s << "// Magicube dense-route epilogue: the dense GEMM's exact int32 result, stored ";
  else
    s << "// Magicube dense-route epilogue: the dense GEMMs' int32 results of " << spec.lhs.str() << " x "
      << spec.rhs.str() << " in int8 chunks\n// (" << ch.str() << "), planes `plane` ints apart, summed in 64 "
      << "bits with\n// their offsets' terms, each stored ";
  s << (transposed ? "N x M (C^T)" : "M x N") << " row-major,\n// becomes the " << out_name(spec.out)
    << " output in the same layout";
  if (dequant) {
    s << ":\n//   x = " << scale_text(spec);
    if (spec.bias == Bias::Row) s << " + bias[row]";
    if (spec.bias == Bias::Col) s << " + bias[col]";
    s << " in double, then "
      << (spec.out == OutType::F32 ? "__double2float_rn" : "rounded to nearest even")
      << "\n// (templates/epilogue_math.cuh, compiled without FMA contraction)";
  } else {
    s << (spec.out == OutType::Int32 ? " (wrapped to 32 bits, as the GEMM's own int32 output)" : " (sign-extended)");
  }
  s << ".\n// Stored element (p, q) is C's (" << (transposed ? "q, p" : "p, q") << ").\n";
  if (dequant) s << "\n" << snippets.text();
  if (!dequant) s << "\n";
  if (ch.needs_epilogue()) s << sum_function(ch);
  s << "// The output element of C's (row, col) from its exact sum.\n";
  s << "__device__ __forceinline__ " << f.type << " mc_out(long long acc, long long row, long long col, float alpha,\n"
    << "    const float *__restrict__ row_scale, const float *__restrict__ col_scale, const float *__restrict__ bias) {\n";
  if (dequant)
    s << "  const double x = mc_dequant(acc, " << int(spec.scale) << ", alpha, row_scale, col_scale, " << int(spec.bias)
      << ", bias, row, col);\n";
  s << "  return " << f.expr << ";\n}\n\n";
  const std::string rc = transposed ? "q + j, p" : "p, q + j";  // C's (row, col) of stored (p, q + j)
  s << "extern \"C\" __global__ void __launch_bounds__(" << kDenseEpilogueThreads << ")\n" << name
    << "(const int *__restrict__ acc_in, " << f.type << " *__restrict__ out,\n"
    << "    long long rows, long long cols, long long plane, long long k, const int *__restrict__ ra,\n"
    << "    const int *__restrict__ cb, float alpha,\n"
    << "    const float *__restrict__ row_scale, const float *__restrict__ col_scale, const float *__restrict__ bias) {\n";
  s << "  // four stored columns per thread, rows strided over the grid's y; one 16-byte load of each\n"
    << "  // plane's sums and one store of the outputs where every row holds whole fours and C's address allows\n";
  s << "  const long long q = ((long long)blockIdx.x * " << kDenseEpilogueThreads << " + threadIdx.x) * 4;\n";
  s << "  if (q >= cols) return;\n";
  if (ch.needs_epilogue())
    s << "  const long long m = " << (transposed ? "cols" : "rows") << ", n = " << (transposed ? "rows" : "cols")
      << ";  // C's M x N\n";
  s << "  const bool whole = (cols & 3) == 0 && ((unsigned long long)out & " << f.align - 1 << ") == 0;\n";
  s << "  for (long long p = blockIdx.y; p < rows; p += gridDim.y) {\n";
  s << "    const long long i = p * cols + q;\n";
  s << "    if (whole) {\n";
  for (int t = 0; t < ch.pairs(); ++t) {
    const std::string a = "a" + std::to_string(t);
    s << "      const int4 " << a << " = *(const int4 *)(acc_in + " << plane_at(t, "i") << ");\n";
    s << "      const int v" << t << "[4] = {" << a << ".x, " << a << ".y, " << a << ".z, " << a << ".w};\n";
  }
  // The exact sum of stored element (p, q + j) from its planes' values `at(t)`.
  auto acc_line = [&](const std::function<std::string(int)> &at) {
    if (!ch.needs_epilogue()) return "        const long long acc = " + at(0) + ";\n";
    std::vector<std::string> args;
    for (int t = 0; t < ch.pairs(); ++t) args.push_back(at(t));
    for (const char *x : {transposed ? "q + j" : "p", transposed ? "p" : "q + j", "m", "n", "k", "ra", "cb"})
      args.push_back(x);
    return call_line(4, "const long long acc = mc_sum(", args, ");");
  };
  s << "      " << f.type << " o[4];\n";
  s << "#pragma unroll\n";
  s << "      for (int j = 0; j < 4; ++j) {\n";
  s << acc_line([](int t) { return "v" + std::to_string(t) + "[j]"; });
  s << "        o[j] = mc_out(acc, " << rc << ", alpha, row_scale, col_scale, bias);\n";
  s << "      }\n";
  s << "      " << f.store4 << "\n";
  s << "    } else {\n";
  s << "      for (int j = 0; j < 4 && q + j < cols; ++j) {\n";
  s << acc_line([](int t) { return "acc_in[" + plane_at(t, "i + j") + "]"; });
  s << "        out[i + j] = mc_out(acc, " << rc << ", alpha, row_scale, col_scale, bias);\n";
  s << "      }\n";
  s << "    }\n";
  s << "  }\n}\n";
  return KernelSource{name, s.str(), KernelLanguage::Cuda};
}

std::vector<std::string> dense_epilogue_options(const OpSpec &spec) {
  if (is_float(spec.out)) return {"--fmad=false"};
  return {};
}

KernelSource dense_row_sums_source() {
  std::ostringstream s;
  s << "// Magicube dense-route row sums: sums[p * rows + r] = the sum of int8 row r (k bytes, k a multiple of 4)\n"
    << "// of plane p, the planes `plane` bytes apart: the column sums of B's chunks (from Bt's planes)\n"
    << "// that the epilogue adds for A's chunk offsets (compiler/dense_chunks.h). One warp a row.\n";
  s << "extern \"C\" __global__ void __launch_bounds__(" << kDenseRowSumsThreads << ")\n"
    << kDenseRowSumsKernel << "(const signed char *__restrict__ planes, long long plane, long long rows, long long k,\n"
    << "    int *__restrict__ sums) {\n";
  s << "  const long long r = (long long)blockIdx.x * " << kDenseRowSumsThreads / 32 << " + (threadIdx.x >> 5);\n";
  s << "  if (r >= rows) return;\n";
  s << "  const int lane = threadIdx.x & 31;\n";
  s << "  const int *row = (const int *)(planes + blockIdx.y * plane + r * k);  // 4-byte aligned: k % 4 == 0\n";
  s << "  int sum = 0;\n";
  s << "  for (long long w = lane; w < k / 4; w += 32) sum = __dp4a(row[w], 0x01010101, sum);  // four signed bytes\n";
  s << "  for (int d = 16; d > 0; d >>= 1) sum += __shfl_xor_sync(0xffffffffu, sum, d);\n";
  s << "  if (lane == 0) sums[blockIdx.y * rows + r] = sum;\n";
  s << "}\n";
  return KernelSource{kDenseRowSumsKernel, s.str(), KernelLanguage::Cuda};
}

}  // namespace magicube
