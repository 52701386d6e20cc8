// The magicube command-line tool. With bench/bench_main.cpp the only place with llvm::cl options; the subcommands
// themselves are in commands.cpp and run.cpp (tools/commands.h), free of llvm::cl.
//
//   magicube plan    <op flags> [--candidate=I] [--format=text|json] [--all]
//   magicube compile <op flags> [--candidate=I] --emit=cuda|ptx|cubin -o FILE
//   magicube run     <op flags> [--candidate=I] (--matrix=FILE.smtx | --m=M --k=K --sparsity=S)
//                    --n=N [--repeat=R] [--warmup=W] [--seed=S]                       (spmm)
//   magicube run     --op=sddmm <op flags> (--matrix=FILE.smtx | --m=M --n=N --sparsity=S)
//                    --k=K [--layout=bcrs|srbcrs] [--stride=32] [--repeat=R] ...      (sddmm)
//   magicube cache   path|stats|clear
//   magicube cache   warm [--list=FILE] [--arch=sm_80,sm_90] [--jobs=J] -o BUNDLE
//   magicube cache   inspect BUNDLE
//   magicube tune    <op flags> (--matrix=FILE.smtx | --m --k --sparsity) --n=N [--verify] ...
//   magicube bench   FLAGS   runs magicube-bench FLAGS from this binary's directory
//
// The benchmark is its own binary (bench/bench_main.cpp): it links cuBLAS, cuBLASLt and
// cuSPARSE, which this one must not need.
//
// op flags: --op --lhs --rhs --v --bsn --no-prefetch --stages --split --resident --decode --panel --warps --out --scale --bias --arch
// Exit status: 0 success; 1 bad input or a failure (the message names it); 2 nothing run
// (no GPU).
#include <unistd.h>

#include <new>
#include <stdexcept>
#include <string>

#include <cerrno>
#include <cstring>
#include <string>
#include <vector>

#include "llvm/ADT/SmallString.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/raw_ostream.h"
#include "support/log.h"
#include "support/text.h"
#include "tools/commands.h"
#include "tools/tune_cmd.h"

namespace cl = llvm::cl;
using namespace magicube;

namespace {

cl::SubCommand PlanCmd("plan", "Lower an op for an arch and print its emulation plan");
cl::SubCommand CompileCmd("compile", "Write the generated CUDA source, PTX or cubin of an op's plan");
cl::SubCommand RunCmd("run", "Run an op on random inputs on the GPU: check it bit-exact, then time it");
cl::SubCommand CacheCmd("cache", "The kernel disk cache: path | stats | clear; AOT bundles: warm | inspect");
cl::SubCommand TuneCmd("tune", "Time every candidate kernel of an op on a matrix; store the fastest for reuse");

// Op flags, shared by the subcommands that take an op.
#define OP_SUBS cl::sub(PlanCmd), cl::sub(CompileCmd), cl::sub(RunCmd), cl::sub(TuneCmd)
cl::OptionCategory OpCat("Op options");
cl::opt<std::string> OpFlag("op", cl::desc("spmm | sddmm"), cl::init("spmm"), cl::cat(OpCat), OP_SUBS);
cl::opt<std::string> LhsFlag("lhs", cl::desc("LHS element type: s<bits> | u<bits>, bits 1..16"), cl::init("s8"),
                             cl::cat(OpCat), OP_SUBS);
cl::opt<std::string> RhsFlag("rhs", cl::desc("RHS element type: s<bits> | u<bits>, bits 1..16"), cl::init("s8"),
                             cl::cat(OpCat), OP_SUBS);
cl::opt<int> VFlag("v", cl::desc("vector length V: 1, 2, 4 or 8"), cl::init(8), cl::cat(OpCat), OP_SUBS);
cl::opt<int> BsnFlag("bsn", cl::desc("dense tile width: 32, 64, 128 or 256 (16, 48, 96 with --resident)"), cl::init(64), cl::cat(OpCat), OP_SUBS);
cl::opt<bool> NoPrefetchFlag("no-prefetch", cl::desc("disable the prefetch pipeline"), cl::cat(OpCat), OP_SUBS);
cl::opt<int> StagesFlag("stages", cl::desc("SpMM cp.async ring depth: 2, 3 or 4 (0 = deepest that fits)"), cl::init(0),
                        cl::cat(OpCat), OP_SUBS);
cl::opt<int> SplitFlag("split", cl::desc("SpMM warp groups sharing a row-block's strides: 1 or 2"), cl::init(1),
                       cl::cat(OpCat), OP_SUBS);
cl::opt<bool> ResidentFlag("resident",
                          cl::desc("SpMM: keep a K x BSn slice of B in shared memory per thread block (BSn 16, 32, 48, 64, 128; 4-bit B also 96)"),
                          cl::cat(OpCat), OP_SUBS);
cl::opt<bool> DecodeFlag("decode",
                        cl::desc("SpMM, N <= 64: the decode kernel: the whole N (--bsn 16, 32, 48 or 64) of B in shared "
                                 "memory per block, each block's strides split over its warps (spec n16d)"),
                        cl::cat(OpCat), OP_SUBS);
cl::opt<int> PanelFlag("panel",
                       cl::desc("SpMM decode kernel: B's rows per pass, K taken in panels of that many (a multiple of "
                                "64; implies --decode; integer outputs; spec n48dp4800)"),
                       cl::init(0), cl::cat(OpCat), OP_SUBS);
cl::opt<int> WarpsFlag("warps",
                       cl::desc("SpMM decode kernel: warps a block, 8, 16, 20, 24 or 32 (0 = the plan's choice; "
                                "implies --decode; spec n16dw32)"),
                       cl::init(0), cl::cat(OpCat), OP_SUBS);
cl::opt<bool> SharesFlag("shares",
                        cl::desc("SpMM decode kernel: one block an SM may take an equal share of every slice's strides, "
                                 "slice after slice, where whole waves would leave SMs idle (implies --decode; spec "
                                 "n48dw20s)"),
                        cl::cat(OpCat), OP_SUBS);
cl::opt<std::string> OutFlag("out", cl::desc("output type: int32 | int64 | f32 | f16 | bf16"), cl::init("int32"),
                             cl::cat(OpCat), OP_SUBS);
cl::opt<std::string> ScaleFlag("scale", cl::desc("float outputs' dequantization scale: none | tensor | rowcol"),
                               cl::init("none"), cl::cat(OpCat), OP_SUBS);
cl::opt<std::string> BiasFlag("bias", cl::desc("float SpMM outputs' bias: none | row | col"), cl::init("none"),
                              cl::cat(OpCat), OP_SUBS);
cl::opt<std::string> COrderFlag("c-order",
                                 cl::desc("SpMM: C's order: row | col (column-major, element (r, c) at c * M + r: "
                                          "a linear layer's token-major Y; spec option +ccol)"),
                                 cl::init("row"), cl::cat(OpCat), OP_SUBS);
cl::opt<std::string> ArchFlag("arch", cl::desc("sm_80 | sm_86 | sm_89 | sm_90 (run: default the GPU's own)"),
                              cl::init("sm_90"), cl::cat(OpCat), OP_SUBS);
cl::opt<std::string> RouteFlag("route",
                               cl::desc("SpMM route: auto (the policy runs a dense int8 GEMM where it is faster; "
                                        "needs a matrix) | sparse | dense"),
                               cl::init("auto"), cl::cat(OpCat), cl::sub(PlanCmd), cl::sub(RunCmd));
cl::opt<int> CandidateFlag("candidate", cl::desc("which candidate plan, 0 = best (see plan --all)"), cl::init(0),
                           cl::cat(OpCat), OP_SUBS);
#undef OP_SUBS

// plan
cl::OptionCategory PlanCat("Plan options");
cl::opt<std::string> FormatFlag("format", cl::desc("text | json"), cl::init("text"), cl::cat(PlanCat),
                                cl::sub(PlanCmd));
cl::opt<bool> AllFlag("all", cl::desc("print every candidate plan, best first"), cl::cat(PlanCat), cl::sub(PlanCmd));

// compile
cl::OptionCategory CompileCat("Compile options");
cl::opt<std::string> EmitFlag("emit", cl::desc("cuda | ptx | cubin"), cl::cat(CompileCat), cl::sub(CompileCmd));
cl::opt<std::string> OutputFlag("o", cl::desc("output file ('-' for stdout)"), cl::value_desc("file"),
                                cl::cat(CompileCat), cl::sub(CompileCmd));

// run
cl::OptionCategory RunCat("Run options");
cl::opt<std::string> MatrixFlag("matrix", cl::desc("a DLMC .smtx sparsity pattern, dilated by V"),
                                cl::value_desc("file"), cl::cat(RunCat), cl::sub(RunCmd), cl::sub(TuneCmd), cl::sub(PlanCmd));
cl::opt<long long> MFlag("m", cl::desc("rows of a synthetic A (spmm) or mask (sddmm)"), cl::cat(RunCat),
                         cl::sub(RunCmd), cl::sub(TuneCmd), cl::sub(PlanCmd));
cl::opt<long long> KFlag("k", cl::desc("the reduction length: columns of a synthetic A (spmm); A's columns (sddmm)"),
                         cl::cat(RunCat), cl::sub(RunCmd), cl::sub(TuneCmd), cl::sub(PlanCmd));
cl::opt<double> SparsityFlag("sparsity",
                             cl::desc("fraction of zero vectors per row-block of a synthetic A or mask, [0, 1)"),
                             cl::cat(RunCat), cl::sub(RunCmd), cl::sub(TuneCmd), cl::sub(PlanCmd));
cl::opt<long long> NFlag("n", cl::desc("columns of B and C (spmm); columns of a synthetic mask (sddmm)"),
                         cl::cat(RunCat), cl::sub(RunCmd), cl::sub(TuneCmd), cl::sub(PlanCmd));
cl::opt<std::string> LayoutFlag("layout", cl::desc("sddmm output layout: bcrs | srbcrs"), cl::init("bcrs"),
                                cl::cat(RunCat), cl::sub(RunCmd), cl::sub(TuneCmd));
cl::opt<int> StrideFlag("stride", cl::desc("sddmm: vectors per stride of the mask's SR-BCRS (and srbcrs output)"),
                        cl::init(32), cl::cat(RunCat), cl::sub(RunCmd), cl::sub(TuneCmd));
cl::opt<int> RepeatFlag("repeat", cl::desc("timed launches (the median is reported)"), cl::init(50), cl::cat(RunCat),
                        cl::sub(RunCmd), cl::sub(TuneCmd));
cl::opt<int> WarmupFlag("warmup", cl::desc("untimed launches before timing"), cl::init(10), cl::cat(RunCat),
                        cl::sub(RunCmd), cl::sub(TuneCmd));
cl::opt<bool> FlushL2Flag("flush-l2",
                          cl::desc("flush the L2 before each timed launch (the weight comes from HBM, as in a model)"),
                          cl::cat(RunCat), cl::sub(RunCmd), cl::sub(TuneCmd));
cl::opt<int> LayersFlag("layers",
                        cl::desc("spmm: time a chain of this many layers (each its own random A and B of these flags), "
                                 "launched back to back on one stream as a model's layers run; 1..64"),
                        cl::init(1), cl::cat(RunCat), cl::sub(RunCmd));
cl::opt<unsigned long long> SeedFlag("seed", cl::desc("random seed of the inputs"), cl::init(1), cl::cat(RunCat),
                                     cl::sub(RunCmd), cl::sub(TuneCmd), cl::sub(PlanCmd));

// cache
cl::list<std::string> CacheArgs(cl::Positional, cl::desc("path | stats | clear | warm | inspect BUNDLE"),
                                cl::value_desc("action"), cl::sub(CacheCmd));
cl::OptionCategory CacheCat("Cache options");
cl::opt<std::string> WarmList("list",
                              cl::desc("warm: the specs to compile, one canonical spec per line ('#' comments); "
                                       "default: the library's AOT list"),
                              cl::value_desc("file"), cl::cat(CacheCat), cl::sub(CacheCmd));
cl::opt<std::string> WarmArch("arch", cl::desc("warm: the archs to compile for, comma-separated"),
                              cl::init("sm_80,sm_90"), cl::cat(CacheCat), cl::sub(CacheCmd));
cl::opt<std::string> WarmOut("o", cl::desc("warm: the bundle to write"), cl::value_desc("file"), cl::cat(CacheCat),
                             cl::sub(CacheCmd));
cl::opt<int> WarmJobs("jobs", cl::desc("warm: compile threads (0 = the host's)"), cl::init(0), cl::cat(CacheCat),
                      cl::sub(CacheCmd));

int cache_command() {
  const std::string action = CacheArgs.empty() ? "" : CacheArgs[0];
  const size_t want = action == "inspect" ? 2 : 1;
  if (!CacheArgs.empty() && CacheArgs.size() != want)
    return tool::fail("cache " + action + ": " +
                      (action == "inspect" ? "expects one bundle (cache inspect BUNDLE)"
                                           : "takes no operand, got " + quoted(CacheArgs[1])));
  if (action == "warm") {
    tool::WarmArgs w;
    w.list = WarmList;
    w.archs = WarmArch;
    w.archs_given = WarmArch.getNumOccurrences() > 0;
    w.out = WarmOut;
    w.jobs = WarmJobs;
    return tool::cmd_cache_warm(w);
  }
  if (action == "inspect") return tool::cmd_cache_inspect(CacheArgs[1]);
  if (WarmList.getNumOccurrences() || WarmArch.getNumOccurrences() || WarmOut.getNumOccurrences() ||
      WarmJobs.getNumOccurrences())
    return tool::fail("cache " + action + ": --list, --arch, -o and --jobs go with cache warm");
  return tool::cmd_cache(action);
}

tool::OpFlags op_flags() {
  tool::OpFlags f;
  f.op = OpFlag;
  f.lhs = LhsFlag;
  f.rhs = RhsFlag;
  f.out = OutFlag;
  f.scale = ScaleFlag;
  f.bias = BiasFlag;
  f.c_order = COrderFlag;
  f.arch = ArchFlag;
  f.arch_given = ArchFlag.getNumOccurrences() > 0;
  f.v = VFlag;
  f.bsn = BsnFlag;
  f.no_prefetch = NoPrefetchFlag;
  f.stages = StagesFlag;
  f.split = SplitFlag;
  f.resident = ResidentFlag;
  f.route = RouteFlag;
  f.decode = DecodeFlag;
  f.panel = PanelFlag;
  f.warps = WarpsFlag;
  f.shares = SharesFlag;
  f.candidate = CandidateFlag;
  f.candidate_given = CandidateFlag.getNumOccurrences() > 0;
  // Knobs given on the command line are pinned; the dispatch chooses the others.
  f.pinned = 0;
  if (BsnFlag.getNumOccurrences()) f.pinned |= kPinBsn;
  if (NoPrefetchFlag.getNumOccurrences() || StagesFlag.getNumOccurrences()) f.pinned |= kPinPrefetch;
  if (SplitFlag.getNumOccurrences()) f.pinned |= kPinSplit;
  if (ResidentFlag.getNumOccurrences() || DecodeFlag.getNumOccurrences() || PanelFlag.getNumOccurrences() ||
      WarpsFlag.getNumOccurrences() || SharesFlag.getNumOccurrences())
    f.pinned |= kPinResident;
  return f;
}

tool::RunArgs run_args() {
  tool::RunArgs r;
  r.matrix = MatrixFlag;
  r.m = MFlag;
  r.k = KFlag;
  r.sparsity = SparsityFlag;
  r.m_given = MFlag.getNumOccurrences() > 0;
  r.k_given = KFlag.getNumOccurrences() > 0;
  r.sparsity_given = SparsityFlag.getNumOccurrences() > 0;
  r.n_given = NFlag.getNumOccurrences() > 0;
  r.n = r.n_given ? (long long)NFlag : 0;
  r.layout = LayoutFlag;
  r.layout_given = LayoutFlag.getNumOccurrences() > 0;
  r.stride = StrideFlag;
  r.stride_given = StrideFlag.getNumOccurrences() > 0;
  r.repeat = RepeatFlag;
  r.warmup = WarmupFlag;
  r.flush_l2 = FlushL2Flag;
  r.layers = LayersFlag;
  r.seed = SeedFlag;
  return r;
}

// tune (also takes the op flags and run's matrix, size and timing options)
cl::OptionCategory TuneCat("Tune options");
cl::opt<bool> TuneVerify("verify", cl::desc("check each candidate bit-exact before timing it"), cl::cat(TuneCat),
                         cl::sub(TuneCmd));

tool::TuneArgs tune_args() {
  tool::TuneArgs t;
  t.input = run_args();
  t.bsn_given = BsnFlag.getNumOccurrences() > 0;
  t.no_prefetch_given = NoPrefetchFlag.getNumOccurrences() > 0;
  t.stages_given = StagesFlag.getNumOccurrences() > 0;
  t.split_given = SplitFlag.getNumOccurrences() > 0;
  t.resident_given = ResidentFlag.getNumOccurrences() > 0;
  t.decode_given = DecodeFlag.getNumOccurrences() > 0;
  t.warps_given = WarpsFlag.getNumOccurrences() > 0;
  t.candidate_given = CandidateFlag.getNumOccurrences() > 0;
  t.verify = TuneVerify;
  return t;
}

// `magicube bench FLAGS`: replaces this process with `magicube-bench FLAGS` from this
// binary's directory; returns (1, with the reason) only when that cannot be done.
int exec_bench(int argc, char **argv) {
  static int anchor = 0;
  const std::string exe = llvm::sys::fs::getMainExecutable(argv[0], &anchor);
  llvm::SmallString<256> bench(exe);
  llvm::sys::path::remove_filename(bench);
  llvm::sys::path::append(bench, "magicube-bench");
  if (exe.empty() || !llvm::sys::fs::can_execute(bench)) {
    llvm::errs() << "magicube: error: bench: the benchmark is its own binary, magicube-bench, and it is not beside "
                 << (exe.empty() ? std::string(argv[0]) : exe)
                 << " (build it: cmake --build build --target magicube-bench; then run magicube-bench with the same flags)\n";
    return 1;
  }
  std::string path(bench.str());
  std::vector<char *> args;
  args.push_back(path.data());
  for (int i = 2; i < argc; ++i) args.push_back(argv[i]);
  args.push_back(nullptr);
  ::execv(path.c_str(), args.data());
  llvm::errs() << "magicube: error: bench: cannot run " << path << ": " << std::strerror(errno) << "\n";
  return 1;
}

int run_command() {
  if (PlanCmd) return tool::cmd_plan(op_flags(), run_args(), FormatFlag, AllFlag);
  if (CompileCmd) return tool::cmd_compile(op_flags(), EmitFlag, OutputFlag);
  if (RunCmd) return tool::cmd_run(op_flags(), run_args());
  if (TuneCmd) return tool::cmd_tune(op_flags(), tune_args());
  if (CacheCmd) return cache_command();
  llvm::errs() << "magicube: error: no command given (commands: plan, compile, run, cache, bench, tune; try: magicube --help)\n";
  return 1;
}

}  // namespace

int main(int argc, char **argv) {
  if (argc >= 2 && std::strcmp(argv[1], "bench") == 0) return exec_bench(argc, argv);
  cl::ParseCommandLineOptions(argc, argv,
                              "Magicube JIT: quantized sparse tensor-core kernels\n\n"
                              "  magicube bench FLAGS runs magicube-bench FLAGS (the benchmark, its own binary)\n");
  log().debug("magicube started");
  // The backstop: sizes are checked before allocating (runtime/memory_budget.h), but no
  // allocation failure may end the process with an uncaught exception and no message.
  try {
    return run_command();
  } catch (const std::bad_alloc &) {
    llvm::errs() << "magicube: error: out of host memory (std::bad_alloc): the problem is too large for this machine\n";
  } catch (const std::length_error &e) {
    llvm::errs() << "magicube: error: a size is too large (std::length_error: " << e.what() << ")\n";
  }
  return 1;
}
