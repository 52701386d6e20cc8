// The inputs `magicube run` and `magicube tune` build from their flags: the sparse operand
// (from --matrix, or synthetic by runtime/synthetic.h, which also draws the dense values), and
// small flag helpers both share.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "llvm/Support/Error.h"
#include "compiler/plan.h"
#include "runtime/cuda_driver.h"
#include "runtime/synthetic.h"
#include "runtime/vector_sparse.h"
#include "tools/commands.h"

namespace magicube::tool {

// The sparse operand the flags ask for (SpMM's A, with `cols` = --k; SDDMM's mask, with
// `cols` = --n): from --matrix, or synthetic. The error names the bad flag or file.
llvm::Expected<VectorSparse> make_sparse(const RunArgs &r, const OpSpec &spec, const ElemType &t, int64_t cols,
                                         const char *cols_flag, std::mt19937_64 &rng);

// The host memory a run or tune of `spec` needs: the sparse operand (nnz vectors, `synthetic`
// adds its column permutation), the dense operands, the output and the reference (M, K, N as
// the op uses them). An error naming the sizes when it exceeds host_memory_limit(); called
// by make_sparse before it allocates anything.
llvm::Error check_host_memory(const OpSpec &spec, int64_t m, int64_t k, int64_t n, int64_t nnz, bool synthetic);

// The device memory of `plan`'s packed operands and output against `ctx`'s total; an error
// naming the sizes and the device when they cannot fit.
llvm::Error check_device_memory(const Context &ctx, const Plan &plan, int64_t m, int64_t k, int64_t n, int64_t nnz);

// --repeat (1..kMaxRepeat) and --warmup (0..kMaxWarmup); the error names the flag.
inline constexpr int kMaxRepeat = 100000, kMaxWarmup = 100000;
llvm::Error check_timing_flags(int repeat, int warmup);

// "--a, --b" of the names whose flag is missing.
std::string missing_list(std::initializer_list<std::pair<bool, const char *>> flags);

// The newest arch a plan can target on a device of compute capability `cc`; 0 if none.
int plan_arch_for_device(int cc);

// Prints "magicube: no GPU: <why>" and returns exit status 2 (nothing was run).
int no_gpu_exit(const std::string &why);


// The arch to plan for on `ctx`'s device, or an error naming the device and what is supported.
llvm::Expected<int> device_plan_arch(const Context &ctx);

}  // namespace magicube::tool
