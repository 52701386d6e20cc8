// The magicube command-line tool. The only place with llvm::cl options; the subcommands
// themselves are in commands.cpp and run.cpp (tools/commands.h), free of llvm::cl.
//
//   magicube plan    <op flags> [--candidate=I] [--format=text|json] [--all]
//   magicube compile <op flags> [--candidate=I] --emit=cuda|ptx|cubin -o FILE
//   magicube run     <op flags> [--candidate=I] (--matrix=FILE.smtx | --m=M --k=K --sparsity=S)
//                    --n=N [--repeat=R] [--warmup=W] [--seed=S]
//   magicube cache   path|stats|clear
//
// op flags: --op --lhs --rhs --v --bsn --no-prefetch --out --arch
// Exit status: 0 success; 1 bad input or a failure (the message names it); 2 nothing run
// (no GPU, or an op the command does not implement yet).
#include <string>

#include "compiler/log.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/raw_ostream.h"
#include "tools/commands.h"

namespace cl = llvm::cl;
using namespace magicube;

namespace {

cl::SubCommand PlanCmd("plan", "Lower an op for an arch and print its emulation plan");
cl::SubCommand CompileCmd("compile", "Write the generated CUDA source, PTX or cubin of an op's plan");
cl::SubCommand RunCmd("run", "Run an op on random inputs on the GPU: check it bit-exact, then time it");
cl::SubCommand CacheCmd("cache", "The kernel disk cache: path | stats | clear");

// Op flags, shared by the subcommands that take an op.
#define OP_SUBS cl::sub(PlanCmd), cl::sub(CompileCmd), cl::sub(RunCmd)
cl::OptionCategory OpCat("Op options");
cl::opt<std::string> OpFlag("op", cl::desc("spmm | sddmm"), cl::init("spmm"), cl::cat(OpCat), OP_SUBS);
cl::opt<std::string> LhsFlag("lhs", cl::desc("LHS element type: s<bits> | u<bits>, bits 1..16"), cl::init("s8"),
                             cl::cat(OpCat), OP_SUBS);
cl::opt<std::string> RhsFlag("rhs", cl::desc("RHS element type: s<bits> | u<bits>, bits 1..16"), cl::init("s8"),
                             cl::cat(OpCat), OP_SUBS);
cl::opt<int> VFlag("v", cl::desc("vector length V: 1, 2, 4 or 8"), cl::init(8), cl::cat(OpCat), OP_SUBS);
cl::opt<int> BsnFlag("bsn", cl::desc("dense tile width: 32, 64 or 128"), cl::init(64), cl::cat(OpCat), OP_SUBS);
cl::opt<bool> NoPrefetchFlag("no-prefetch", cl::desc("disable the prefetch pipeline"), cl::cat(OpCat), OP_SUBS);
cl::opt<std::string> OutFlag("out", cl::desc("output type: int32 | int64 | f32 | f16 | bf16"), cl::init("int32"),
                             cl::cat(OpCat), OP_SUBS);
cl::opt<std::string> ArchFlag("arch", cl::desc("sm_80 | sm_86 | sm_89 | sm_90 (run: default the GPU's own)"),
                              cl::init("sm_90"), cl::cat(OpCat), OP_SUBS);
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
                                cl::value_desc("file"), cl::cat(RunCat), cl::sub(RunCmd));
cl::opt<long long> MFlag("m", cl::desc("rows of a synthetic A"), cl::cat(RunCat), cl::sub(RunCmd));
cl::opt<long long> KFlag("k", cl::desc("columns of a synthetic A (the reduction length)"), cl::cat(RunCat),
                         cl::sub(RunCmd));
cl::opt<double> SparsityFlag("sparsity", cl::desc("fraction of zero vectors per row-block of a synthetic A, [0, 1)"),
                             cl::cat(RunCat), cl::sub(RunCmd));
cl::opt<long long> NFlag("n", cl::desc("columns of B and C"), cl::cat(RunCat), cl::sub(RunCmd));
cl::opt<int> RepeatFlag("repeat", cl::desc("timed launches (the median is reported)"), cl::init(50), cl::cat(RunCat),
                        cl::sub(RunCmd));
cl::opt<int> WarmupFlag("warmup", cl::desc("untimed launches before timing"), cl::init(10), cl::cat(RunCat),
                        cl::sub(RunCmd));
cl::opt<unsigned long long> SeedFlag("seed", cl::desc("random seed of the inputs"), cl::init(1), cl::cat(RunCat),
                                     cl::sub(RunCmd));

// cache
cl::opt<std::string> CacheAction(cl::Positional, cl::desc("path | stats | clear"), cl::value_desc("action"),
                                 cl::sub(CacheCmd));

tool::OpFlags op_flags() {
  tool::OpFlags f;
  f.op = OpFlag;
  f.lhs = LhsFlag;
  f.rhs = RhsFlag;
  f.out = OutFlag;
  f.arch = ArchFlag;
  f.arch_given = ArchFlag.getNumOccurrences() > 0;
  f.v = VFlag;
  f.bsn = BsnFlag;
  f.no_prefetch = NoPrefetchFlag;
  f.candidate = CandidateFlag;
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
  r.n = NFlag.getNumOccurrences() ? (long long)NFlag : 0;
  r.repeat = RepeatFlag;
  r.warmup = WarmupFlag;
  r.seed = SeedFlag;
  return r;
}

}  // namespace

int main(int argc, char **argv) {
  cl::ParseCommandLineOptions(argc, argv, "Magicube JIT: quantized sparse tensor-core kernels\n");
  log().debug("magicube started");
  if (PlanCmd) return tool::cmd_plan(op_flags(), FormatFlag, AllFlag);
  if (CompileCmd) return tool::cmd_compile(op_flags(), EmitFlag, OutputFlag);
  if (RunCmd) return tool::cmd_run(op_flags(), run_args());
  if (CacheCmd) return tool::cmd_cache(CacheAction);
  llvm::errs() << "magicube: error: no command given (commands: plan, compile, run, cache; try: magicube --help)\n";
  return 1;
}
