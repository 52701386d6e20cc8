// The dense route on the device: its launches after the caller has a cuBLASLt plan. One GEMM
// per chunk pair of the operands (compiler/dense_chunks.h; one GEMM for operands that fit
// int8). Where the output is int32 and that GEMM is all (DenseChunks::needs_epilogue false),
// it writes C itself; otherwise the GEMMs write their exact int32 results into scratch planes
// of the caller's workspace (dense_plane_stride apart), B's chunk column sums go after them
// where A's chunks have offsets, and one elementwise kernel (compiler/dense_epilogue.h) writes
// the output from them: the planes summed shifted with their offsets' terms, then int32,
// int64, or f32 / f16 / bf16 dequantized and rounded exactly as the sparse kernels do.
#pragma once

#include <cuda.h>

#include <cstddef>
#include <cstdint>

#include "compiler/ir.h"
#include "llvm/Support/Error.h"
#include "runtime/kernel.h"

namespace magicube {

class Context;
class DenseGemm;

// Whether the dense route needs scratch for `spec` (every output but int32, and every output
// of operands in int8 chunks with more than one pair or with offsets).
bool dense_needs_scratch(const OpSpec &spec);
// Bytes of that scratch for an M x N result: the pair planes, then B's chunk column sums where
// A's chunks have offsets, each rounded up to 256 (0 when not needed); the product's overflow
// is the caller's to have checked.
size_t dense_scratch_bytes(const OpSpec &spec, int64_t m, int64_t n);

// Queues C = A x B on `stream`: B's column sums where needed, one GEMM per chunk pair (g: the
// plan of the stored result's shape, m x n, or n x m when c_transposed: C^T computed with the
// operands swapped), and the epilogue kernel where dense_needs_scratch. a_dense holds
// dense_lhs_int8's layout, bt dense_rhs_t_int8's (both 256-byte aligned, on the device);
// lt_workspace is cuBLASLt's (g's size), scratch dense_scratch_bytes(spec, m, n) bytes
// (256-byte aligned; unused when not needed); c is C's (16-byte aligned where the GEMM writes
// it, else to its element). `v`: the scales and bias as epilogue_values (runtime/kernel.h)
// checked them for C's M x N. No allocation, no synchronization (the helper kernels are
// compiled and loaded on first use).
llvm::Error dense_route_on_device(const Context &ctx, const OpSpec &spec, const DenseGemm &g, CUdeviceptr a_dense,
                                  CUdeviceptr bt, CUdeviceptr c, int64_t m, int64_t k, int64_t n, bool c_transposed,
                                  CUdeviceptr lt_workspace, CUdeviceptr scratch, const EpilogueValues &v,
                                  CUstream stream);
// Compiles and loads the helper kernels for `spec` now (the C ABI's load, before graph capture).
llvm::Error preload_dense_epilogue(const Context &ctx, const OpSpec &spec);

}  // namespace magicube
