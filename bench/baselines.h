// Vendor baselines: each function times one vendor contender (cuBLASLt, cuBLAS, cuSPARSE) on
// the current CUDA device in the current process and returns the median of R runs in
// milliseconds (see timing.h for how a run is timed). Inputs are random nonzero data,
// uploaded before timing; every allocation, descriptor, plan and workspace is made outside
// the timed region.
//
// Each contender tries a few configurations (layouts, algorithms, output types) and keeps
// the fastest. A configuration the library refuses (no heuristic result, NOT_SUPPORTED,
// INVALID_VALUE for a type/layout combination) is not an error: it is recorded in
// Measurement::tried with the refusing call and its status, and when every configuration
// is refused the result is `supported == false` with the reasons. llvm::Error is kept for
// real failures: no device, out of memory, a kernel that fails, a malformed pattern.
#pragma once

#include <cstdint>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "bench/timing.h"
#include "llvm/Support/Error.h"

namespace magicube::bench {

struct BaselineOptions {
  TimingOptions timing;
  int max_algos = 8;                          // cuBLASLt: time the top-N heuristic results
  size_t workspace_bytes = size_t(32) << 20;  // cuBLASLt workspace (32 MiB suits Hopper)
  uint64_t seed = 1;                          // input values
  bool keep_winner = false;                   // dense cuBLASLt: keep the winning configuration (Measurement::replay)
};

// A measured configuration kept so that it can run again, on any stream of the same device:
// its library handle, descriptors, algorithm and operands live as long as the object.
class DenseReplay {
 public:
  virtual ~DenseReplay() = default;
  // Enqueues one call; no synchronization.
  virtual llvm::Error enqueue(cudaStream_t stream) = 0;
};

struct Measurement {
  bool supported = false;
  double ms = std::numeric_limits<double>::quiet_NaN();  // median of R runs of the winner
  std::string config;                 // the winning configuration, e.g. "A row, B col, C col; algo 2/8"
  std::string unsupported_reason;     // when !supported: why (each refusal, "; "-joined)
  std::vector<std::string> tried;     // every configuration: "<config>: 0.0210 ms" or "<config>: refused by ..."
  std::vector<std::pair<std::string, double>> timed;  // every configuration that ran, with its median ms
  // With BaselineOptions::keep_winner, where a cuBLASLt configuration won: that configuration.
  std::shared_ptr<DenseReplay> replay;
};

// ---- dense GEMM: C[M x N] = A[M x K] x B[K x N] ----------------------------------------

// cuBLASLt s8 x s8 -> s32 (CUBLAS_COMPUTE_32I, int32 alpha/beta). Tries every row/col
// major storage of A, B and C, and the top `max_algos` heuristic algorithms of each.
llvm::Expected<Measurement> dense_cublaslt_i8(int64_t M, int64_t N, int64_t K, const BaselineOptions &opts = {});

// cuBLASLt s8 x s8 -> s8 (CUBLAS_COMPUTE_32I, float alpha = `scale`, saturating output).
llvm::Expected<Measurement> dense_cublaslt_i8_i8out(int64_t M, int64_t N, int64_t K, float scale = 1.0f / 4096,
                                                    const BaselineOptions &opts = {});

// fp16 x fp16 -> fp16 with fp32 accumulate (CUBLAS_COMPUTE_32F): cuBLASLt (every layout,
// top algorithms) and cublasGemmEx (every transpose form), the fastest of all.
llvm::Expected<Measurement> dense_cublas_f16(int64_t M, int64_t N, int64_t K, const BaselineOptions &opts = {});

// The same in bf16: bf16 x bf16 -> bf16 with fp32 accumulate (cuBLASLt every layout and top
// algorithms, and cublasGemmEx), the fastest of all.
llvm::Expected<Measurement> dense_cublas_bf16(int64_t M, int64_t N, int64_t K, const BaselineOptions &opts = {});

// cuSPARSELt 2:4 structured sparsity, s8 x s8 (A: M x K pruned to 2:4 by cusparseLtSpMMAPrune
// and compressed; B: K x N dense) -> s32 (s8 where s32 is refused), CUSPARSE_COMPUTE_32I,
// the algorithm from cusparseLtMatmulSearch; every layout (row/col order, A and B transposed
// or not), the fastest. libcusparseLt.so.0 is loaded at run time (dlopen): from
// $MAGICUBE_CUSPARSELT (the file or its folder), the loader's path (LD_LIBRARY_PATH), or
// python3's site-packages (nvidia/cusparselt/lib, nvidia/cu13/lib, nvidia/cu12/lib). Without
// it the result is unsupported with "libcusparseLt.so.0 not found" (not an error). Where N is
// refused, N rounded up to a multiple of 32 is tried (the config says so).
llvm::Expected<Measurement> cusparselt_spmm_i8(int64_t M, int64_t N, int64_t K, const BaselineOptions &opts = {});
// "cuSPARSELt 0.10.0 (<path>)" or "cuSPARSELt: libcusparseLt.so.0 not found" (loads it).
std::string cusparselt_version();

// ---- vector-sparse SpMM: C[M x N] = A[M x K] (V x 1 vectors) x B[K x N] ---------------

// A V x 1 vector-sparse pattern as CSR over row-blocks: row-block b (rows [b*V, b*V+V))
// holds vectors at columns col[block_ptr[b] .. block_ptr[b+1]), strictly increasing.
// Field names follow runtime/vector_sparse.h (VectorSparse without the values).
struct VectorPattern {
  int64_t rows = 0, cols = 0;  // M x K
  int v = 1;
  std::vector<int64_t> block_ptr;
  std::vector<int32_t> col;
  int64_t num_blocks() const { return int64_t(block_ptr.size()) - 1; }
  int64_t num_vectors() const { return int64_t(col.size()); }
};

// Uniformly random vector sparsity: every row-block gets exactly round((1 - sparsity) * cols)
// vectors at distinct columns drawn uniformly (so `sparsity` is the fraction of V x 1
// vectors that are zero, exactly per row-block).
VectorPattern random_vector_pattern(int64_t rows, int64_t cols, int v, double sparsity, uint64_t seed = 1);

// Refused with a message when the pattern is malformed or its shape is not M x K.
llvm::Error check_pattern(const VectorPattern &p, int64_t M, int64_t K);

// The Blocked-ELL pattern of a vector pattern: a block x block block is stored when it
// holds any nonzero of a vector; ELL width = most blocks in one block-row, the rest -1.
struct BlockedEllPattern {
  int64_t rows = 0, cols = 0, block = 0;
  int64_t width = 0;                // blocks per block-row (ellCols = width * block)
  std::vector<int32_t> col_ind;     // [rows / block][width], block-column or -1
  int64_t stored_blocks = 0;        // blocks that are not -1
};
// Needs rows and cols to be multiples of `block`.
llvm::Expected<BlockedEllPattern> to_blocked_ell(const VectorPattern &p, int64_t block);

enum class SpDtype { f16, i8 };
const char *to_string(SpDtype t);

// cuSPARSE SpMM with A in Blocked-ELL of square `block` blocks (CUSPARSE_SPMM_BLOCKED_ELL_ALG1).
// f16: A, B, C fp16, fp32 compute. i8: A, B int8 with C s32 / compute s32, C s8 / compute
// s32, and C f32 / compute f32 tried; B and C row-major and column-major tried.
// Unsupported (a value, not an error) when cuSPARSE refuses every one, or when M or K is not
// a multiple of `block`.
llvm::Expected<Measurement> cusparse_spmm_blocked_ell(int64_t M, int64_t K, int64_t N, const VectorPattern &pattern,
                                                      int64_t block, SpDtype dtype, const BaselineOptions &opts = {});

// The smallest of `blocks` that cuSPARSE accepts (tried in the given order); its block size
// is in Measurement::config, and the refusals of the smaller ones in `tried`.
llvm::Expected<Measurement> cusparse_spmm_blocked_ell_smallest(int64_t M, int64_t K, int64_t N,
                                                               const VectorPattern &pattern, SpDtype dtype,
                                                               const std::vector<int64_t> &blocks = {8, 16, 32},
                                                               const BaselineOptions &opts = {});

// cuSPARSE SpMM with A as scalar CSR (each vector is V nonzeros), fp16 A, B, C and fp32
// compute; CUSPARSE_SPMM_ALG_DEFAULT, CSR_ALG1, CSR_ALG2 and CSR_ALG3, B and C row-major and
// column-major; the fastest.
llvm::Expected<Measurement> cusparse_spmm_csr_f16(int64_t M, int64_t K, int64_t N, const VectorPattern &pattern,
                                                  const BaselineOptions &opts = {});

// "cuBLASLt 13.0.x, cuSPARSE 12.6.3" as loaded at run time.
std::string library_versions();

}  // namespace magicube::bench
