#include "compiler/dense_epilogue.h"

#include <sstream>

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
              "        *(longlong2 *)(out + i + 2) = make_longlong2(o[2], o[3]);"};
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
}  // namespace

KernelSource dense_epilogue_source(const OpSpec &spec, bool transposed) {
  const OutForm f = out_form(spec.out);
  const bool dequant = is_float(spec.out);
  std::string name = std::string("magicube_dense_epilogue_") + out_name(spec.out);
  if (dequant && spec.scale != Scale::None) name += std::string("_") + scale_name(spec.scale);
  if (dequant && spec.bias != Bias::None) name += std::string("_") + bias_name(spec.bias) + "bias";
  if (transposed) name += "_ct";

  Snippets snippets;
  if (dequant) snippets.use("mc_dequant");
  if (!f.snippet.empty()) snippets.use(f.snippet);

  std::ostringstream s;
  s << "// Magicube dense-route epilogue: the dense GEMM's exact int32 result, stored "
    << (transposed ? "N x M (C^T)" : "M x N") << " row-major,\n// becomes the " << out_name(spec.out)
    << " output in the same layout";
  if (dequant) {
    s << ":\n//   x = " << scale_text(spec);
    if (spec.bias == Bias::Row) s << " + bias[row]";
    if (spec.bias == Bias::Col) s << " + bias[col]";
    s << " in double, then "
      << (spec.out == OutType::F32 ? "__double2float_rn" : "rounded to nearest even")
      << "\n// (templates/epilogue_math.cuh, compiled without FMA contraction)";
  } else {
    s << " (sign-extended)";
  }
  s << ".\n// Stored element (p, q) is C's (" << (transposed ? "q, p" : "p, q") << ").\n";
  if (dequant) s << "\n" << snippets.text();
  if (!dequant) s << "\n";
  s << "// The output element of C's (row, col) from its exact int32 sum.\n";
  s << "__device__ __forceinline__ " << f.type << " mc_out(long long acc, long long row, long long col, float alpha,\n"
    << "    const float *__restrict__ row_scale, const float *__restrict__ col_scale, const float *__restrict__ bias) {\n";
  if (dequant)
    s << "  const double x = mc_dequant(acc, " << int(spec.scale) << ", alpha, row_scale, col_scale, " << int(spec.bias)
      << ", bias, row, col);\n";
  s << "  return " << f.expr << ";\n}\n\n";
  const std::string rc = transposed ? "q + j, p" : "p, q + j";  // C's (row, col) of stored (p, q + j)
  s << "extern \"C\" __global__ void __launch_bounds__(" << kDenseEpilogueThreads << ")\n" << name
    << "(const int *__restrict__ acc_in, " << f.type << " *__restrict__ out,\n"
    << "    long long rows, long long cols, float alpha,\n"
    << "    const float *__restrict__ row_scale, const float *__restrict__ col_scale, const float *__restrict__ bias) {\n";
  s << "  // four stored columns per thread, rows strided over the grid's y; one 16-byte load of the\n"
    << "  // sums and one store of the outputs where every row holds whole fours and C's address allows\n";
  s << "  const long long q = ((long long)blockIdx.x * " << kDenseEpilogueThreads << " + threadIdx.x) * 4;\n";
  s << "  if (q >= cols) return;\n";
  s << "  const bool whole = (cols & 3) == 0 && ((unsigned long long)out & " << f.align - 1 << ") == 0;\n";
  s << "  for (long long p = blockIdx.y; p < rows; p += gridDim.y) {\n";
  s << "    const long long i = p * cols + q;\n";
  s << "    if (whole) {\n";
  s << "      const int4 a = *(const int4 *)(acc_in + i);\n";
  s << "      const int av[4] = {a.x, a.y, a.z, a.w};\n";
  s << "      " << f.type << " o[4];\n";
  s << "#pragma unroll\n";
  s << "      for (int j = 0; j < 4; ++j) o[j] = mc_out(av[j], " << rc << ", alpha, row_scale, col_scale, bias);\n";
  s << "      " << f.store4 << "\n";
  s << "    } else {\n";
  s << "      for (int j = 0; j < 4 && q + j < cols; ++j)\n";
  s << "        out[i + j] = mc_out(acc_in[i + j], " << rc << ", alpha, row_scale, col_scale, bias);\n";
  s << "    }\n";
  s << "  }\n}\n";
  return KernelSource{name, s.str(), KernelLanguage::Cuda};
}

std::vector<std::string> dense_epilogue_options(const OpSpec &spec) {
  if (is_float(spec.out)) return {"--fmad=false"};
  return {};
}

}  // namespace magicube
