// Device repacking for the C ABI's device operands: a caller's dense operand (any N or K,
// row- or column-major, one integer per element) becomes the chunk planes a plan's kernel
// reads, padded to its pitch or laid out as resident-B slices, on the caller's stream in the
// caller's workspace; and a row-major output is transposed into the caller's buffer. The
// kernels are small CUDA sources generated here and compiled through the JIT stage (memory
// -> disk -> NVRTC); repack_cpu runs the same index math (capi/repack.cuh) on the host for
// tests, which compare it with runtime/packing.cpp's host packers.
#pragma once

#include <cuda.h>

#include <cstdint>
#include <string>
#include <vector>

#include "compiler/dense_chunks.h"
#include "compiler/plan.h"
#include "llvm/Support/Error.h"

namespace magicube {
class Context;
}

namespace magicube::capi {

// The source element type of a dense device operand.
enum class SrcType { I8, U8, I16, U16, I32 };
const char *src_type_name(SrcType t);  // "signed char", ...
int src_type_bytes(SrcType t);

struct PlaneChunk {
  int lo = 0, bits = 8, is_signed = 0, storage_bits = 8;
  int offset = 0;  // subtracted from the chunk's value (the dense route's u8 chunks: 128)
};

// One repack: logical element (r, t) of the source, r < src_rows, t < src_cols, is
// src[r * s_r + t * s_t]; the planes are `rows` x `cols` (cols even), zero beyond the source.
struct RepackGeometry {
  int64_t src_rows = 0, src_cols = 0, s_r = 0, s_t = 0;
  int64_t rows = 0, cols = 0;
  int64_t pitch = 0;  // elements per plane row (bsn == 0)
  int bsn = 0;        // resident-B slices of bsn columns (0: row-major rows of `pitch`)
  std::vector<PlaneChunk> chunks;

  int64_t plane_bytes(size_t j) const { return rows * cols * chunks[j].storage_bits / 8; }
  bool transposed() const { return s_r == 1 && s_t != 1; }  // the source is contiguous along r
};

// SpMM's B (K x N) for `plan`: planes of K x ldb (ldb = N rounded up to kLdbAlign), or
// resident slices. col_major: the source is N x K row-major (a linear layer's X).
RepackGeometry spmm_rhs_geometry(const Plan &plan, int64_t k, int64_t n, bool col_major);
// SDDMM's A (M x K; planes of M rounded up to V rows) and B (K x N; planes of N rows), each
// K-contiguous with pitch ld (K rounded up to kLdbAlign). A col_major: K x M row-major;
// B col_major: N x K row-major (the kernel's own order).
RepackGeometry sddmm_lhs_geometry(const Plan &plan, int64_t m, int64_t k, bool col_major);
RepackGeometry sddmm_rhs_geometry(const Plan &plan, int64_t k, int64_t n, bool col_major);
int64_t sddmm_pitch(int64_t k);
// The dense route's B (K x N) as Bt: an int8 plane of N rows of K (pitch K; K even) per chunk
// (compiler/dense_chunks.h: split_dense_chunks of the type, offsets subtracted), the cuBLASLt
// GEMMs' operands. col_major: the source is N x K row-major (a linear layer's X).
RepackGeometry dense_rhs_t_geometry(int64_t k, int64_t n, bool col_major, const std::vector<DenseChunk> &chunks);

// The CPU reference of the repack kernel: the planes' bytes for source values `src` (laid
// out as the geometry's strides say).
std::vector<std::vector<uint8_t>> repack_cpu(const std::vector<int64_t> &src, const RepackGeometry &g);

// The generated CUDA source of the repack kernel for `g`'s compile-time part (source type,
// direction, chunks, bsn); its kernel is named `name`.
std::string repack_source(const RepackGeometry &g, SrcType src, const std::string &name);

// The generated CUDA source of the output transpose for elem_bytes-byte elements (2, 4, 8).
std::string transpose_source(int elem_bytes, const std::string &name);

// Queues the repack of `src` (device) into `planes` (device, one per chunk) on `stream`.
llvm::Error repack_on_device(const Context &ctx, const RepackGeometry &g, SrcType src_type, CUdeviceptr src,
                             const std::vector<CUdeviceptr> &planes, CUstream stream);
// Queues dst (C x R row-major) = transpose of src (R x C row-major), elements of elem_bytes
// (2, 4 or 8).
llvm::Error transpose_on_device(const Context &ctx, int elem_bytes, CUdeviceptr src, CUdeviceptr dst, int64_t rows,
                                int64_t cols, CUstream stream);
// Loads the kernels a repack and a transpose of these kinds need, without launching.
llvm::Error preload_repack(const Context &ctx, const RepackGeometry &g, SrcType src_type);

}  // namespace magicube::capi
