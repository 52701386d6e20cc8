// The subcommands of the magicube tool, free of llvm::cl: tools/magicube.cpp parses the
// command line into these structs and calls one cmd_* function, whose result is the
// process's exit status:
//   0  success
//   1  bad input (the message names it), a failed compile, write or CUDA call, a mismatch
//   2  nothing was run: no GPU
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "compiler/ir.h"
#include "compiler/plan.h"
#include "llvm/Support/Error.h"
#include "runtime/autotune.h"
#include "runtime/dispatch.h"

namespace magicube::tool {

// The op flags shared by plan, compile and run.
struct OpFlags {
  std::string op = "spmm", lhs = "s8", rhs = "s8", out = "int32", arch = "sm_90";
  std::string scale = "none";  // float outputs: none | tensor | rowcol
  std::string bias = "none";   // float SpMM outputs: none | row | col
  std::string c_order = "row";  // SpMM: C row-major | col (column-major: spec option +ccol)
  int v = 8, bsn = 64;
  bool no_prefetch = false;
  int stages = 0;
  int split = 1;
  bool resident = false;
  bool decode = false;  // --decode: the decode kernel (implies resident B)
  int panel = 0;        // --panel: the decode kernel's K panel (rows of B a pass)
  int warps = 0;        // --warps: the decode kernel's warps a block (0: the plan's choice)
  bool shares = false;  // --shares: the decode kernel's blocks take shares of all slices
  bool arch_given = false;  // --arch on the command line (run defaults to the device's arch)
  std::string route = "auto";  // SpMM: auto (the policy compares sparse and dense) | sparse | dense
  int candidate = 0;        // index into plan_candidates (0 = best)
  bool candidate_given = false;
  uint8_t pinned = kPinAll;  // the knob flags given (OpSpec::pinned): the dispatch chooses the rest
};

// The validated OpSpec of the flags; the error names the bad flag.
llvm::Expected<OpSpec> spec_from_flags(const OpFlags &f);
// --route: auto -> DenseRoute::Allowed, sparse -> Never, dense -> Forced (runtime/dispatch.h).
llvm::Expected<DenseRoute> route_from_flags(const OpFlags &f);

// The matrix signature of the matrix flags (SpMM: --matrix or --m/--k/--sparsity, with --n;
// SDDMM: the mask's flags with --k), or nullopt when none is given; the error names the flag.
struct RunArgs;
llvm::Expected<std::optional<MatrixSignature>> signature_from_flags(const OpSpec &spec, const RunArgs &r);

// Prints "magicube: error: <message>" on stderr; returns 1.
int fail(llvm::Error e);
int fail(const llvm::Twine &message);

// plan: the dispatch's choice for the op (on the matrix of `r` when its flags are given:
// --matrix or --m/--k/--sparsity with --n, or SDDMM's --m/--n/--sparsity with --k), on the
// GPU when there is one, else on the arch's reference device; prints "chosen by: ...".
// --format=text|json, --all for every candidate of the chosen knobs.
struct RunArgs;
int cmd_plan(const OpFlags &f, const RunArgs &r, const std::string &format, bool all);

// compile: writes the CUDA source, PTX or cubin of the chosen plan to `out_file` ("-" for
// stdout), for the plan's arch.
int cmd_compile(const OpFlags &f, const std::string &emit, const std::string &out_file);

// cache path|stats|clear on the default disk cache.
int cmd_cache(const std::string &action);

// cache warm: compiles the default AOT list (runtime/aot_plans.h) for `archs`, or the specs of
// `list`, in parallel through the kernel cache, and writes them as one bundle (jit/bundle.h).
struct WarmArgs {
  std::string list;                 // "" = the default list
  std::string archs = "sm_80,sm_90";
  bool archs_given = false;         // with a list: retarget every spec to each arch
  std::string out;                  // the bundle
  int jobs = 0;                     // compile threads, 0 = the host's
};
int cmd_cache_warm(const WarmArgs &args);
// cache inspect: the bundle's header and entries, every cubin verified; exit 1 when it is
// refused, corrupt, or of another generator or NVRTC.
int cmd_cache_inspect(const std::string &path);

// The sparse operand of run: SpMM's A (M x K) or SDDMM's mask (M x N).
struct RunArgs {
  std::string matrix;  // a DLMC .smtx file, dilated by V; or else a synthetic matrix:
  int64_t m = 0, k = 0;
  double sparsity = -1;  // fraction of zero vectors per row-block, in [0, 1)
  bool m_given = false, k_given = false, sparsity_given = false, n_given = false;
  int64_t n = 0;
  std::string layout = "bcrs";  // SDDMM's output layout: srbcrs | bcrs
  int stride = 32;              // SDDMM's SR-BCRS stride (vectors per stride)
  bool layout_given = false, stride_given = false;
  int repeat = 50, warmup = 10;
  bool flush_l2 = false;  // run: flush the L2 before each timed launch (weights from HBM)
  int layers = 1;         // run, SpMM: a chain of this many layers (own A and B each), timed as one launch
  uint64_t seed = 1;
};

// run: builds random inputs, runs the kernel once and checks it bit-exact against the int64
// reference (float outputs: bit for bit against the CPU rounding of the dequantized double
// reference, with random scales and bias), then times `repeat` launches with CUDA events.
//   SpMM:  A from --matrix (dilated by V) or --m/--k/--sparsity; B is K x N (--n).
//   SDDMM: the mask from --matrix or --m/--n/--sparsity; A is M x K, B is K x N (--k);
//          the output in --layout=bcrs|srbcrs order (--stride for SR-BCRS).
int cmd_run(const OpFlags &f, const RunArgs &args);

}  // namespace magicube::tool
