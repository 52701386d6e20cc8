// `magicube bench`: every contender on the same matrices and N on one GPU; writes
// results.csv, summary.md and the plots under --out-dir. Free of llvm::cl (magicube.cpp
// fills the options).
#pragma once

#include "bench/bench_report.h"

namespace magicube::tool {

// Exit status: 0 ran (contenders that failed are rows with an error note); 1 bad options, an
// output that cannot be written, or a result of ours that differs from the CPU reference;
// 2 no GPU (one line on stderr).
int cmd_bench(const bench::BenchOptions &options, int argc, char **argv);

}  // namespace magicube::tool
