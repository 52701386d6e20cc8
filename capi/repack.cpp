#include "capi/repack.h"

#include <algorithm>
#include <map>
#include <mutex>
#include <sstream>

#include "capi/repack.cuh"
#include "compiler/codegen.h"
#include "runtime/cuda_driver.h"
#include "runtime/helper_kernel.h"

namespace magicube::capi {

extern const char *const kRepackMath;  // capi/repack.cuh, embedded at build time

namespace {
llvm::Error err(const std::string &msg) { return llvm::createStringError(llvm::inconvertibleErrorCode(), msg); }

constexpr int kTile = 64;       // repack: a kTile x kTile tile of the logical operand per block
constexpr int kThreads = 256;
constexpr int kTransposeTile = 32;

int64_t round_up(int64_t x, int64_t a) { return (x + a - 1) / a * a; }

std::vector<PlaneChunk> chunks_of(const std::vector<Chunk> &cs) {
  std::vector<PlaneChunk> out;
  for (const Chunk &c : cs) out.push_back(PlaneChunk{c.lo_bit, c.bits, c.is_signed ? 1 : 0, c.storage_bits});
  return out;
}
}  // namespace

const char *src_type_name(SrcType t) {
  switch (t) {
    case SrcType::I8: return "signed char";
    case SrcType::U8: return "unsigned char";
    case SrcType::I16: return "short";
    case SrcType::U16: return "unsigned short";
    case SrcType::I32: return "int";
  }
  return "int";
}

int src_type_bytes(SrcType t) {
  switch (t) {
    case SrcType::I8: case SrcType::U8: return 1;
    case SrcType::I16: case SrcType::U16: return 2;
    case SrcType::I32: return 4;
  }
  return 4;
}

RepackGeometry spmm_rhs_geometry(const Plan &plan, int64_t k, int64_t n, bool col_major) {
  RepackGeometry g;
  g.src_rows = k;
  g.src_cols = n;
  g.s_r = col_major ? 1 : n;
  g.s_t = col_major ? k : 1;
  g.rows = k;
  g.chunks = chunks_of(plan.rhs);
  if (plan.spec.resident) {
    g.bsn = plan.spec.bsn;
    g.cols = (n + g.bsn - 1) / g.bsn * g.bsn;
    g.pitch = g.bsn;
  } else {
    g.pitch = round_up(n, kLdbAlign);
    g.cols = g.pitch;
  }
  return g;
}

int64_t sddmm_pitch(int64_t k) { return std::max<int64_t>(1, (k + kLdbAlign - 1) / kLdbAlign) * kLdbAlign; }

RepackGeometry sddmm_lhs_geometry(const Plan &plan, int64_t m, int64_t k, bool col_major) {
  RepackGeometry g;
  g.src_rows = m;
  g.src_cols = k;
  g.s_r = col_major ? 1 : k;
  g.s_t = col_major ? m : 1;
  g.rows = round_up(m, plan.spec.v);
  g.pitch = g.cols = sddmm_pitch(k);
  g.chunks = chunks_of(plan.lhs);
  return g;
}

RepackGeometry sddmm_rhs_geometry(const Plan &plan, int64_t k, int64_t n, bool col_major) {
  // Plane rows are B's columns (N rows of K): column-major B is already that order.
  RepackGeometry g;
  g.src_rows = n;
  g.src_cols = k;
  g.s_r = col_major ? k : 1;
  g.s_t = col_major ? 1 : n;
  g.rows = n;
  g.pitch = g.cols = sddmm_pitch(k);
  g.chunks = chunks_of(plan.rhs);
  return g;
}

RepackGeometry dense_rhs_t_geometry(int64_t k, int64_t n, bool col_major, const std::vector<DenseChunk> &chunks) {
  // Plane row r is B's column r; element t of it is B[t, r].
  RepackGeometry g;
  g.src_rows = n;
  g.src_cols = k;
  g.s_r = col_major ? k : 1;
  g.s_t = col_major ? 1 : n;
  g.rows = n;
  g.pitch = g.cols = k;
  for (const DenseChunk &c : chunks)  // one byte per element each
    g.chunks.push_back(PlaneChunk{c.chunk.lo_bit, c.chunk.bits, c.chunk.is_signed ? 1 : 0, 8, c.offset});
  return g;
}

std::vector<std::vector<uint8_t>> repack_cpu(const std::vector<int64_t> &src, const RepackGeometry &g) {
  std::vector<std::vector<uint8_t>> planes;
  for (size_t j = 0; j < g.chunks.size(); ++j) planes.emplace_back(size_t(g.plane_bytes(j)), 0);
  auto at = [&](int64_t r, int64_t t) -> int {
    return r < g.src_rows && t < g.src_cols ? int(src[size_t(r * g.s_r + t * g.s_t)]) : 0;
  };
  for (int64_t r = 0; r < g.rows; ++r)
    for (int64_t t = 0; t < g.cols; t += 2) {
      const int x0 = at(r, t), x1 = at(r, t + 1);
      for (size_t j = 0; j < g.chunks.size(); ++j) {
        const PlaneChunk &c = g.chunks[j];
        const int c0 = mc_chunk(x0, c.lo, c.bits, c.is_signed) - c.offset;
        const int c1 = mc_chunk(x1, c.lo, c.bits, c.is_signed) - c.offset;
        const long long e = mc_plane_index(r, t, g.rows, g.pitch, g.bsn, 128 / c.storage_bits);
        if (c.storage_bits == 8) {
          planes[j][size_t(e)] = uint8_t(c0);
          planes[j][size_t(e + 1)] = uint8_t(c1);
        } else {
          planes[j][size_t(e >> 1)] = uint8_t((c0 & 15) | ((c1 & 15) << 4));
        }
      }
    }
  return planes;
}

std::string repack_source(const RepackGeometry &g, SrcType src, const std::string &name) {
  std::ostringstream s;
  s << "// Magicube repack kernel: a dense operand (element (r, t) at src[r * s_r + t * s_t]) into " << g.chunks.size()
    << " chunk plane(s), " << (g.bsn ? "resident-B slices of " + std::to_string(g.bsn) + " columns" : std::string("row-major rows"))
    << ", zero beyond the source.\n";
  s << "#define MC_HD __device__ __forceinline__\n" << kRepackMath << "\n";
  const bool tr = g.transposed();
  s << "extern \"C\" __global__ void __launch_bounds__(" << kThreads << ") " << name << "(const " << src_type_name(src)
    << " *__restrict__ src, long long s_r, long long s_t, long long src_rows, long long src_cols, long long rows,\n"
    << "    long long cols, long long pitch";
  for (size_t j = 0; j < g.chunks.size(); ++j) s << ", unsigned char *__restrict__ p" << j;
  s << ") {\n";
  s << "  __shared__ int tile[" << kTile << "][" << kTile + 1 << "];\n";
  s << "  const long long r0 = (long long)blockIdx.y * " << kTile << ", t0 = (long long)blockIdx.x * " << kTile << ";\n";
  s << "  // 1. the tile from the source, coalesced along its contiguous dimension (" << (tr ? "r" : "t") << ")\n";
  s << "  for (int i = threadIdx.x; i < " << kTile * kTile << "; i += " << kThreads << ") {\n";
  s << "    const int rr = i " << (tr ? "%" : "/") << " " << kTile << ", tt = i " << (tr ? "/" : "%") << " " << kTile << ";\n";
  s << "    const long long r = r0 + rr, t = t0 + tt;\n";
  s << "    tile[rr][tt] = (r < src_rows && t < src_cols) ? (int)src[r * s_r + t * s_t] : 0;\n";
  s << "  }\n  __syncthreads();\n";
  s << "  // 2. pairs of adjacent elements (t even) to every plane\n";
  s << "  for (int i = threadIdx.x; i < " << kTile * kTile / 2 << "; i += " << kThreads << ") {\n";
  s << "    const int rr = i / " << kTile / 2 << ", tt = 2 * (i % " << kTile / 2 << ");\n";
  s << "    const long long r = r0 + rr, t = t0 + tt;\n";
  s << "    if (r >= rows || t >= cols) continue;\n";
  s << "    const int x0 = tile[rr][tt], x1 = tile[rr][tt + 1];\n";
  for (size_t j = 0; j < g.chunks.size(); ++j) {
    const PlaneChunk &c = g.chunks[j];
    const std::string off = c.offset ? " - " + std::to_string(c.offset) : "";
    s << "    {  // plane " << j << ": " << (c.is_signed ? "s" : "u") << c.bits << "@" << c.lo
      << (c.offset ? " minus " + std::to_string(c.offset) : "") << ", " << c.storage_bits << "-bit storage\n";
    s << "      const int c0 = mc_chunk(x0, " << c.lo << ", " << c.bits << ", " << c.is_signed << ")" << off
      << ", c1 = mc_chunk(x1, " << c.lo << ", " << c.bits << ", " << c.is_signed << ")" << off << ";\n";
    s << "      const long long e = mc_plane_index(r, t, rows, pitch, " << g.bsn << ", " << 128 / c.storage_bits << ");\n";
    if (c.storage_bits == 8)
      s << "      p" << j << "[e] = (unsigned char)c0;\n      p" << j << "[e + 1] = (unsigned char)c1;\n";
    else
      s << "      p" << j << "[e >> 1] = (unsigned char)((c0 & 15) | ((c1 & 15) << 4));\n";
    s << "    }\n";
  }
  s << "  }\n}\n";
  return s.str();
}

std::string transpose_source(int elem_bytes, const std::string &name) {
  const char *t = elem_bytes == 2 ? "unsigned short" : elem_bytes == 4 ? "unsigned int" : "unsigned long long";
  std::ostringstream s;
  s << "// Magicube transpose: dst (C x R row-major) = src (R x C row-major), " << elem_bytes << "-byte elements.\n";
  s << "extern \"C\" __global__ void __launch_bounds__(256) " << name << "(const " << t << " *__restrict__ src, " << t
    << " *__restrict__ dst, long long R, long long C) {\n";
  s << "  __shared__ " << t << " tile[" << kTransposeTile << "][" << kTransposeTile + 1 << "];\n";
  s << "  const long long r0 = (long long)blockIdx.y * " << kTransposeTile << ", c0 = (long long)blockIdx.x * "
    << kTransposeTile << ";\n";
  s << "  for (int j = threadIdx.y; j < " << kTransposeTile << "; j += 8) {\n";
  s << "    const long long r = r0 + j, c = c0 + threadIdx.x;\n";
  s << "    if (r < R && c < C) tile[j][threadIdx.x] = src[r * C + c];\n  }\n  __syncthreads();\n";
  s << "  for (int j = threadIdx.y; j < " << kTransposeTile << "; j += 8) {\n";
  s << "    const long long c = c0 + j, r = r0 + threadIdx.x;\n";
  s << "    if (c < C && r < R) dst[c * R + r] = tile[threadIdx.x][j];\n  }\n}\n";
  return s.str();
}

namespace {

// The kernel's name: the hash of its source, which depends only on the compile-time part of
// the geometry (source type, direction, chunks, bsn). Computed once per such part: a run
// finds its kernel without generating the source again.
std::string repack_name(const RepackGeometry &g, SrcType src) {
  std::string key = std::to_string(int(src)) + (g.transposed() ? "t" : "n") + std::to_string(g.bsn);
  for (const PlaneChunk &c : g.chunks)
    key += ":" + std::to_string(c.lo) + "," + std::to_string(c.bits) + "," + std::to_string(c.is_signed) + "," +
           std::to_string(c.storage_bits) + "," + std::to_string(c.offset);
  static std::mutex mu;
  static auto &names = *new std::map<std::string, std::string>();
  std::lock_guard<std::mutex> lock(mu);
  auto it = names.find(key);
  if (it == names.end())
    it = names.emplace(key, hashed_kernel_name("magicube_repack_", repack_source(g, src, "NAME"))).first;
  return it->second;
}

llvm::Expected<CUfunction> repack_function(const Context &ctx, const RepackGeometry &g, SrcType src) {
  const std::string name = repack_name(g, src);
  return helper_function(ctx, name, [&] { return repack_source(g, src, name); });
}

}  // namespace

llvm::Error preload_repack(const Context &ctx, const RepackGeometry &g, SrcType src_type) {
  auto fn = repack_function(ctx, g, src_type);
  return fn ? llvm::Error::success() : fn.takeError();
}

llvm::Error repack_on_device(const Context &ctx, const RepackGeometry &g, SrcType src_type, CUdeviceptr src,
                             const std::vector<CUdeviceptr> &planes, CUstream stream) {
  if (planes.size() != g.chunks.size() || g.chunks.empty() || g.chunks.size() > 4)
    return err("repack: " + std::to_string(planes.size()) + " planes for " + std::to_string(g.chunks.size()) + " chunks");
  if (g.rows == 0 || g.cols == 0) return llvm::Error::success();
  const int64_t gy = (g.rows + kTile - 1) / kTile, gx = (g.cols + kTile - 1) / kTile;
  if (gy > 65535 || gx > INT32_MAX)
    return err("repack: an operand of " + std::to_string(g.rows) + " x " + std::to_string(g.cols) +
               " exceeds the repack grid (at most " + std::to_string(65535 * kTile) + " rows)");
  auto fn = repack_function(ctx, g, src_type);
  if (!fn) return fn.takeError();
  long long s_r = g.s_r, s_t = g.s_t, src_rows = g.src_rows, src_cols = g.src_cols, rows = g.rows, cols = g.cols,
            pitch = g.pitch;
  CUdeviceptr p[4] = {0, 0, 0, 0};
  for (size_t j = 0; j < planes.size(); ++j) p[j] = planes[j];
  void *args[12] = {&src, &s_r, &s_t, &src_rows, &src_cols, &rows, &cols, &pitch, &p[0], &p[1], &p[2], &p[3]};
  return launch(*fn, Dim3{unsigned(gx), unsigned(gy), 1}, Dim3{kThreads, 1, 1}, 0, stream, args);
}

llvm::Error transpose_on_device(const Context &ctx, int elem_bytes, CUdeviceptr src, CUdeviceptr dst, int64_t rows,
                                int64_t cols, CUstream stream) {
  if (elem_bytes != 2 && elem_bytes != 4 && elem_bytes != 8)
    return err("transpose: " + std::to_string(elem_bytes) + "-byte elements (allowed: 2, 4, 8)");
  if (rows == 0 || cols == 0) return llvm::Error::success();
  const int64_t gy = (rows + kTransposeTile - 1) / kTransposeTile, gx = (cols + kTransposeTile - 1) / kTransposeTile;
  if (gy > 65535 || gx > INT32_MAX)
    return err("transpose: an output of " + std::to_string(rows) + " rows exceeds the transpose grid (at most " +
               std::to_string(65535 * kTransposeTile) + ")");
  const std::string name = "magicube_transpose_" + std::to_string(elem_bytes * 8);
  auto fn = helper_function(ctx, name, [&] { return transpose_source(elem_bytes, name); });
  if (!fn) return fn.takeError();
  long long r = rows, c = cols;
  void *args[4] = {&src, &dst, &r, &c};
  return launch(*fn, Dim3{unsigned(gx), unsigned(gy), 1}, Dim3{kTransposeTile, 8, 1}, 0, stream, args);
}

}  // namespace magicube::capi
