#include "compiler/dense_epilogue.h"

#include <sstream>

#include "compiler/snippets.h"

namespace magicube {

namespace {
// The stored element's C type and how one accumulator becomes it (x: the dequantized double).
struct OutForm {
  const char *type;
  std::string snippet;  // "" when none is needed
  std::string expr;     // of `acc` (int64) and `x` (double)
};

OutForm out_form(OutType t) {
  switch (t) {
    case OutType::Int64: return {"long long", "", "acc"};
    case OutType::F32: return {"float", "", "__double2float_rn(x)"};
    case OutType::F16: return {"unsigned short", "mc_to_f16", "mc_to_f16(x)"};
    case OutType::BF16: return {"unsigned short", "mc_to_bf16", "mc_to_bf16(x)"};
    case OutType::Int32: break;
  }
  return {"int", "", "(int)acc"};
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
  s << "\nextern \"C\" __global__ void __launch_bounds__(" << kDenseEpilogueThreads << ")\n" << name
    << "(const int *__restrict__ acc_in, " << f.type << " *__restrict__ out,\n"
    << "    long long rows, long long cols, float alpha,\n"
    << "    const float *__restrict__ row_scale, const float *__restrict__ col_scale, const float *__restrict__ bias) {\n";
  s << "  // one stored column per thread, rows strided over the grid's y\n";
  s << "  const long long q = (long long)blockIdx.x * " << kDenseEpilogueThreads << " + threadIdx.x;\n";
  s << "  if (q >= cols) return;\n";
  s << "  for (long long p = blockIdx.y; p < rows; p += gridDim.y) {\n";
  s << "    const long long i = p * cols + q;\n";
  s << "    const long long acc = acc_in[i];\n";
  if (dequant) {
    s << "    const long long row = " << (transposed ? "q" : "p") << ", col = " << (transposed ? "p" : "q") << ";\n";
    s << "    const double x = mc_dequant(acc, " << int(spec.scale) << ", alpha, row_scale, col_scale, " << int(spec.bias)
      << ", bias, row, col);\n";
  }
  s << "    out[i] = " << f.expr << ";\n";
  s << "  }\n}\n";
  return KernelSource{name, s.str(), KernelLanguage::Cuda};
}

std::vector<std::string> dense_epilogue_options(const OpSpec &spec) {
  if (is_float(spec.out)) return {"--fmad=false"};
  return {};
}

}  // namespace magicube
