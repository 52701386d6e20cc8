#include "capi/quantize.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <sstream>

#include "runtime/cuda_driver.h"
#include "runtime/helper_kernel.h"

namespace magicube::capi {

namespace {
llvm::Error err(const std::string &msg) { return llvm::createStringError(llvm::inconvertibleErrorCode(), msg); }

constexpr int kThreads = 256;         // one block a row
constexpr float kMinAmax = 1e-12f;    // the smallest |x| a row's scale is made from
constexpr uint32_t kScaleNaN = 0x7fffffffu;

// NaN wins, then the larger.
float nan_max(float a, float b) { return (b > a || b != b) ? b : a; }
}  // namespace

int float_type_bytes(FloatType t) { return t == FloatType::F32 ? 4 : 2; }

void quantize_rows_cpu(const float *x, int64_t rows, int64_t cols, int8_t *q, float *scale) {
  for (int64_t r = 0; r < rows; ++r) {
    const float *row = x + r * cols;
    float m = 0.0f;
    for (int64_t j = 0; j < cols; ++j) m = nan_max(m, std::fabs(row[j]));
    float s;
    if (m != m) std::memcpy(&s, &kScaleNaN, 4);
    else s = std::max(m, kMinAmax) / 127.0f;
    scale[r] = s;
    for (int64_t j = 0; j < cols; ++j) {
      const float t = std::nearbyint(row[j] / s);  // the default rounding mode: ties to even
      q[r * cols + j] = t != t ? int8_t(0) : int8_t(std::min(std::max(t, -127.0f), 127.0f));
    }
  }
}

std::string quantize_rows_source(FloatType t, const std::string &name) {
  const char *type = t == FloatType::F32 ? "float" : "unsigned short";
  const char *load = t == FloatType::F32   ? "row[j]"
                     : t == FloatType::F16 ? "f16_to_f32(row[j])"
                                           : "__uint_as_float((unsigned)row[j] << 16)";
  std::ostringstream s;
  s << "// Magicube quantize_rows (" << (t == FloatType::F32 ? "float32" : t == FloatType::F16 ? "float16" : "bfloat16")
    << " in): one block a row r of x (cols elements), in float32:\n"
       "//   scale[r] = max(max_j |x[r][j]|, 1e-12) / 127, q[r][j] = clamp(rint(x[r][j] / scale[r]), -127, 127)\n"
       "// (IEEE divisions; a NaN in the row: scale NaN; a NaN quotient: q = 0). capi/quantize.h.\n";
  if (t == FloatType::F16)
    s << "__device__ __forceinline__ float f16_to_f32(unsigned short h) {\n"
         "  float f;\n  asm(\"cvt.f32.f16 %0, %1;\" : \"=f\"(f) : \"h\"(h));\n  return f;\n}\n";
  s << "__device__ __forceinline__ float nan_max(float a, float b) { return (b > a || b != b) ? b : a; }\n";
  s << "extern \"C\" __global__ void __launch_bounds__(" << kThreads << ") " << name << "(const " << type
    << " *__restrict__ x, signed char *__restrict__ q, float *__restrict__ scale, long long cols) {\n"
       "#if __CUDA_ARCH__ >= 900\n"
       "  // programmatic dependent launch (sm_90): the next kernel (a decode SpMM reading q) may launch\n"
       "  // now; x is read only once the previous kernel (the layer before, writing x) is done\n"
       "  asm volatile(\"griddepcontrol.launch_dependents;\\n\" ::);\n"
       "  asm volatile(\"griddepcontrol.wait;\\n\" ::: \"memory\");\n"
       "#endif\n"
       "  const " << type << " *row = x + (long long)blockIdx.x * cols;\n"
       "  signed char *qr = q + (long long)blockIdx.x * cols;\n"
       "  __shared__ float part[" << kThreads / 32 << "];\n"
       "  float m = 0.0f;\n"
       "#pragma unroll 8\n"
       "  for (long long j = threadIdx.x; j < cols; j += " << kThreads << ") m = nan_max(m, fabsf(" << load << "));\n"
       "  for (int o = 16; o > 0; o >>= 1) m = nan_max(m, __shfl_xor_sync(0xffffffffu, m, o));\n"
       "  if ((threadIdx.x & 31) == 0) part[threadIdx.x >> 5] = m;\n"
       "  __syncthreads();\n"
       "  m = part[0];\n"
       "#pragma unroll\n"
       "  for (int w = 1; w < " << kThreads / 32 << "; ++w) m = nan_max(m, part[w]);\n"
       "  const float s = m != m ? __uint_as_float(" << kScaleNaN << "u) : __fdiv_rn(fmaxf(m, " << kMinAmax
    << "f), 127.0f);\n"
       "  if (threadIdx.x == 0) scale[blockIdx.x] = s;\n"
       "#pragma unroll 8\n"
       "  for (long long j = threadIdx.x; j < cols; j += " << kThreads << ") {\n"
       "    const float t = rintf(__fdiv_rn(" << load << ", s));\n"
       "    qr[j] = t != t ? (signed char)0 : (signed char)(int)fminf(fmaxf(t, -127.0f), 127.0f);\n"
       "  }\n}\n";
  return s.str();
}

llvm::Error quantize_rows_on_device(const Context &ctx, FloatType t, CUdeviceptr x, int64_t rows, int64_t cols,
                                    CUdeviceptr q, CUdeviceptr scale, CUstream stream) {
  if (rows < 0 || cols < 0)
    return err("quantize: " + std::to_string(rows) + " x " + std::to_string(cols) + " (rows and cols must be >= 0)");
  if (rows == 0) return llvm::Error::success();
  if (rows > std::numeric_limits<int32_t>::max())
    return err("quantize: " + std::to_string(rows) + " rows (at most 2^31 - 1: one block a row)");
  const std::string name = std::string("magicube_quantize_rows_") +
                           (t == FloatType::F32 ? "f32" : t == FloatType::F16 ? "f16" : "bf16");
  auto fn = helper_function(ctx, name, [&] { return quantize_rows_source(t, name); });
  if (!fn) return fn.takeError();
  long long c = cols;
  void *args[4] = {&x, &q, &scale, &c};
  return launch(*fn, Dim3{unsigned(rows), 1, 1}, Dim3{kThreads, 1, 1}, 0, stream, args, false,
                ctx.compute_capability() >= 90);
}

}  // namespace magicube::capi
