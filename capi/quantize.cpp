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
constexpr int64_t kStageBytes = 48 * 1024;  // a row kept in shared memory: at most the default limit

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

namespace {
const char *type_name(FloatType t) { return t == FloatType::F32 ? "float32" : t == FloatType::F16 ? "float16" : "bfloat16"; }

// Both kernels' common parts: what they compute, the helpers, the entry (programmatic dependent
// launch on sm_90), the row's NaN-propagating max over the block and its scale.
std::string header(FloatType t, const std::string &how) {
  std::string s = std::string("// Magicube quantize_rows (") + type_name(t) + " in), " + how +
                  ": one block a row r of x, in float32:\n"
                  "//   scale[r] = max(max_j |x[r][j]|, 1e-12) / 127, q[r][j] = clamp(rint(x[r][j] / scale[r]), -127, 127)\n"
                  "// (IEEE divisions; a NaN in the row: scale NaN; a NaN quotient: q = 0). capi/quantize.h.\n";
  if (t == FloatType::F16)
    s += "__device__ __forceinline__ float f16_to_f32(unsigned short h) {\n"
         "  float f;\n  asm(\"cvt.f32.f16 %0, %1;\" : \"=f\"(f) : \"h\"(h));\n  return f;\n}\n";
  s += "__device__ __forceinline__ float nan_max(float a, float b) { return (b > a || b != b) ? b : a; }\n"
       "__device__ __forceinline__ signed char q8(float x, float s) {\n"
       "  const float t = rintf(__fdiv_rn(x, s));\n"
       "  return t != t ? (signed char)0 : (signed char)(int)fminf(fmaxf(t, -127.0f), 127.0f);\n"
       "}\n";
  return s;
}
std::string entry(const std::string &name, const std::string &params) {
  return "extern \"C\" __global__ void __launch_bounds__(" + std::to_string(kThreads) + ") " + name + "(" + params +
         ") {\n"
         "#if __CUDA_ARCH__ >= 900\n"
         "  // programmatic dependent launch (sm_90): the next kernel (a decode SpMM reading q) may launch\n"
         "  // now; x is read only once the previous kernel (the layer before, writing x) is done\n"
         "  asm volatile(\"griddepcontrol.launch_dependents;\\n\" ::);\n"
         "  asm volatile(\"griddepcontrol.wait;\\n\" ::: \"memory\");\n"
         "#endif\n";
}
// m: this thread's max -> s, the row's scale (written by thread 0).
std::string row_scale() {
  std::ostringstream s;
  s << "  for (int o = 16; o > 0; o >>= 1) m = nan_max(m, __shfl_xor_sync(0xffffffffu, m, o));\n"
       "  if ((threadIdx.x & 31) == 0) part[threadIdx.x >> 5] = m;\n"
       "  __syncthreads();\n"
       "  m = part[0];\n"
       "#pragma unroll\n"
       "  for (int w = 1; w < " << kThreads / 32 << "; ++w) m = nan_max(m, part[w]);\n"
       "  const float s = m != m ? __uint_as_float(" << kScaleNaN << "u) : __fdiv_rn(fmaxf(m, " << kMinAmax
    << "f), 127.0f);\n"
       "  if (threadIdx.x == 0) scale[blockIdx.x] = s;\n";
  return s.str();
}
}  // namespace

std::string quantize_rows_source(FloatType t, const std::string &name) {
  const char *type = t == FloatType::F32 ? "float" : "unsigned short";
  const char *load = t == FloatType::F32   ? "row[j]"
                     : t == FloatType::F16 ? "f16_to_f32(row[j])"
                                           : "__uint_as_float((unsigned)row[j] << 16)";
  std::ostringstream s;
  s << header(t, "element by element (cols elements a row)")
    << entry(name, std::string("const ") + type + " *__restrict__ x, signed char *__restrict__ q, float *__restrict__ scale, long long cols")
    << "  const " << type << " *row = x + (long long)blockIdx.x * cols;\n"
       "  signed char *qr = q + (long long)blockIdx.x * cols;\n"
       "  __shared__ float part[" << kThreads / 32 << "];\n"
       "  float m = 0.0f;\n"
       "#pragma unroll 8\n"
       "  for (long long j = threadIdx.x; j < cols; j += " << kThreads << ") m = nan_max(m, fabsf(" << load << "));\n"
    << row_scale()
    << "#pragma unroll 8\n"
       "  for (long long j = threadIdx.x; j < cols; j += " << kThreads << ") qr[j] = q8(" << load << ", s);\n}\n";
  return s.str();
}

// The kernel over 16-byte units (4 float32 or 8 float16 / bfloat16 elements a load, their int8
// results stored as one 4- or 8-byte word), element for element the arithmetic above.
std::string quantize_rows_units_source(FloatType t, const std::string &name, bool staged) {
  const bool f32 = t == FloatType::F32;
  const int per = f32 ? 4 : 8;  // elements a unit
  const char *qt = f32 ? "unsigned" : "uint2";
  std::ostringstream s;
  s << header(t, "16-byte units (" + std::to_string(per) + " elements a load, their int8 results one store, units x " +
                     std::to_string(per) + " elements a row" +
                     (staged ? "; the row kept in shared memory between its two passes, read once" : "") + ")")
    << "// Element e (0.." << per - 1 << ") of a unit, widened to float32.\n"
       "__device__ __forceinline__ float elem(const uint4 &v, int e) {\n"
       "  const unsigned w = e < " << per / 4 << " ? v.x : e < " << per / 2 << " ? v.y : e < " << 3 * per / 4
    << " ? v.z : v.w;\n";
  if (f32) s << "  return __uint_as_float(w);\n";
  else if (t == FloatType::F16) s << "  return f16_to_f32((unsigned short)(e & 1 ? w >> 16 : w & 0xffffu));\n";
  else s << "  return __uint_as_float(e & 1 ? w & 0xffff0000u : w << 16);\n";
  s << "}\n"
       "// Four results as the bytes of a word (the first in the low byte).\n"
       "__device__ __forceinline__ unsigned q8x4(const uint4 &v, int e, float s) {\n"
       "  return (unsigned char)q8(elem(v, e), s) | (unsigned)(unsigned char)q8(elem(v, e + 1), s) << 8\n"
       "      | (unsigned)(unsigned char)q8(elem(v, e + 2), s) << 16 | (unsigned)(unsigned char)q8(elem(v, e + 3), s) << 24;\n"
       "}\n"
    << entry(name, std::string("const uint4 *__restrict__ x, ") + qt + " *__restrict__ q, float *__restrict__ scale, long long units")
    << "  const uint4 *row = x + (long long)blockIdx.x * units;\n"
       "  " << qt << " *qr = q + (long long)blockIdx.x * units;\n"
       "  __shared__ float part[" << kThreads / 32 << "];\n"
    << (staged ? "  extern __shared__ uint4 srow[];  // the row (units x 16 bytes of dynamic shared memory)\n" : "")
    << "  float m = 0.0f;\n"
       "#pragma unroll 4\n"
       "  for (long long u = threadIdx.x; u < units; u += " << kThreads << ") {\n"
       "    const uint4 v = __ldg(row + u);\n"
    << (staged ? "    srow[u] = v;\n" : "")
    << "#pragma unroll\n"
       "    for (int e = 0; e < " << per << "; ++e) m = nan_max(m, fabsf(elem(v, e)));\n"
       "  }\n"
    << row_scale()
    << "#pragma unroll 4\n"
       "  for (long long u = threadIdx.x; u < units; u += " << kThreads << ") {\n"
    << (staged ? "    const uint4 v = srow[u];  // stored by this thread above\n" : "    const uint4 v = __ldg(row + u);\n")
    << (f32 ? "    qr[u] = q8x4(v, 0, s);\n" : "    qr[u] = make_uint2(q8x4(v, 0, s), q8x4(v, 4, s));\n")
    << "  }\n}\n";
  return s.str();
}

llvm::Error quantize_rows_on_device(const Context &ctx, FloatType t, CUdeviceptr x, int64_t rows, int64_t cols,
                                    CUdeviceptr q, CUdeviceptr scale, CUstream stream) {
  if (rows < 0 || cols < 0)
    return err("quantize: " + std::to_string(rows) + " x " + std::to_string(cols) + " (rows and cols must be >= 0)");
  if (rows == 0) return llvm::Error::success();
  if (rows > std::numeric_limits<int32_t>::max())
    return err("quantize: " + std::to_string(rows) + " rows (at most 2^31 - 1: one block a row)");
  // 16-byte units where every row of x starts 16-byte aligned and every row of q at a multiple of
  // the unit's int8 results; else element by element.
  const int64_t per = 16 / float_type_bytes(t);
  const bool units = x % 16 == 0 && cols % per == 0 && q % uint64_t(per) == 0;
  // A row of at most kStageBytes is kept in shared memory between the two passes (each thread
  // reads back the units it stored): x is read once.
  const bool staged = units && cols * float_type_bytes(t) <= kStageBytes;
  // The kernels' names, [input type][element, units, staged units]: none built a call.
  static const std::string kNames[3][3] = {
      {"magicube_quantize_rows_f32", "magicube_quantize_rows_f32_u16", "magicube_quantize_rows_f32_u16s"},
      {"magicube_quantize_rows_f16", "magicube_quantize_rows_f16_u16", "magicube_quantize_rows_f16_u16s"},
      {"magicube_quantize_rows_bf16", "magicube_quantize_rows_bf16_u16", "magicube_quantize_rows_bf16_u16s"}};
  const std::string &name =
      kNames[t == FloatType::F32 ? 0 : t == FloatType::F16 ? 1 : 2][staged ? 2 : units ? 1 : 0];
  auto fn = helper_function(ctx, name, [&] {
    return units ? quantize_rows_units_source(t, name, staged) : quantize_rows_source(t, name);
  });
  if (!fn) return fn.takeError();
  long long c = units ? cols / per : cols;
  void *args[4] = {&x, &q, &scale, &c};
  return launch(*fn, Dim3{unsigned(rows), 1, 1}, Dim3{kThreads, 1, 1},
                staged ? unsigned(cols * float_type_bytes(t)) : 0u, stream, args, false, ctx.compute_capability() >= 90);
}

}  // namespace magicube::capi
