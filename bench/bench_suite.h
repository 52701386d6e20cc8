// magicube-bench on the GPU: builds the matrices (synthetic, small, DLMC, SDDMM masks),
// runs our kernels and the vendor contenders on the same matrices and N, checks ours against
// the CPU reference on the first run, times everyone the same way (bench/timing.h) and
// measures the JIT costs. A contender that fails becomes a row with an error note; the run
// goes on (after a lost CUDA context, the remaining rows say so).
#pragma once

#include <string>
#include <vector>

#include "bench/bench_report.h"
#include "runtime/cuda_driver.h"

namespace magicube::bench {

struct BenchOutput {
  RunInfo info;
  std::vector<ResultRow> rows;  // measured rows, then the published Magicube rows that fit
  JitCosts jit;
};

// The DLMC archive where magicube-bench looks when --dlmc is not given: the current
// directory, .carry/, shared/data/ and ../shared/data/ (relative to the current directory and
// to the repository holding the executable). Empty when none is there.
std::string find_default_dlmc(const std::string &exe_path);

// Runs what `cfg` asks for on the device of `ctx` (current on this thread). `dlmc` is a
// folder of .smtx files or a .tar.gz / .tar archive ("" = no DLMC section). Progress goes to
// `progress`. Errors only for what stops everything before any measurement.
llvm::Expected<BenchOutput> run_bench(const BenchConfig &cfg, const std::string &dlmc, const std::string &command,
                                      Context &ctx, Progress &progress);

}  // namespace magicube::bench
