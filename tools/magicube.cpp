// The magicube command-line tool. The only place with llvm::cl options.
//
//   magicube plan --op=spmm --lhs=s12 --rhs=u4 --v=4 --arch=sm_80 [--format=text|json] [--all]
#include <cstdio>
#include <string>

#include "compiler/ir.h"
#include "compiler/log.h"
#include "compiler/planner.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/raw_ostream.h"

namespace cl = llvm::cl;
using namespace magicube;

namespace {

cl::SubCommand PlanCmd("plan", "Lower an op for an arch and print its emulation plan");

// Op flags shared by the subcommands that take an op.
cl::opt<std::string> OpFlag("op", cl::desc("spmm | sddmm"), cl::init("spmm"), cl::sub(PlanCmd));
cl::opt<std::string> LhsFlag("lhs", cl::desc("LHS element type: s<bits> | u<bits>, bits 1..16"), cl::init("s8"),
                             cl::sub(PlanCmd));
cl::opt<std::string> RhsFlag("rhs", cl::desc("RHS element type: s<bits> | u<bits>, bits 1..16"), cl::init("s8"),
                             cl::sub(PlanCmd));
cl::opt<int> VFlag("v", cl::desc("vector length V: 1, 2, 4 or 8"), cl::init(8), cl::sub(PlanCmd));
cl::opt<int> BsnFlag("bsn", cl::desc("dense tile width: 32, 64 or 128"), cl::init(64), cl::sub(PlanCmd));
cl::opt<bool> NoPrefetchFlag("no-prefetch", cl::desc("disable the prefetch pipeline"), cl::sub(PlanCmd));
cl::opt<std::string> OutFlag("out", cl::desc("output type: int32 | int64 | f32 | f16 | bf16"), cl::init("int32"),
                             cl::sub(PlanCmd));
cl::opt<std::string> ArchFlag("arch", cl::desc("sm_80 | sm_86 | sm_89 | sm_90"), cl::init("sm_90"), cl::sub(PlanCmd));
cl::opt<std::string> FormatFlag("format", cl::desc("text | json"), cl::init("text"), cl::sub(PlanCmd));
cl::opt<bool> AllFlag("all", cl::desc("print every candidate plan, best first"), cl::sub(PlanCmd));

int fail(llvm::Error e) {
  llvm::errs() << "magicube: error: " << llvm::toString(std::move(e)) << "\n";
  return 1;
}

llvm::Expected<OpSpec> spec_from_flags() {
  OpSpec s;
  auto op = parse_op(OpFlag);
  if (!op) return op.takeError();
  auto lhs = parse_elem(LhsFlag, "lhs");
  if (!lhs) return lhs.takeError();
  auto rhs = parse_elem(RhsFlag, "rhs");
  if (!rhs) return rhs.takeError();
  auto out = parse_out(OutFlag);
  if (!out) return out.takeError();
  auto arch = parse_arch(ArchFlag);
  if (!arch) return arch.takeError();
  s.op = *op;
  s.lhs = *lhs;
  s.rhs = *rhs;
  s.v = VFlag;
  s.bsn = BsnFlag;
  s.prefetch = !NoPrefetchFlag;
  s.out = *out;
  s.arch = *arch;
  if (auto e = validate(s)) return e;
  return s;
}

int cmd_plan() {
  if (FormatFlag != "text" && FormatFlag != "json")
    return fail(llvm::createStringError(llvm::inconvertibleErrorCode(),
                                        "format: '" + FormatFlag + "' is not allowed (allowed: text, json)"));
  auto spec = spec_from_flags();
  if (!spec) return fail(spec.takeError());
  auto plans = plan_candidates(*spec);
  if (!plans) return fail(plans.takeError());
  size_t n = AllFlag ? plans->size() : 1;
  if (FormatFlag == "json") {
    llvm::json::Array arr;
    for (size_t i = 0; i < n; ++i) arr.push_back(to_json((*plans)[i]));
    llvm::json::Value v = AllFlag ? llvm::json::Value(std::move(arr)) : std::move(arr[0]);
    llvm::outs() << llvm::formatv("{0:2}", v) << "\n";
  } else {
    for (size_t i = 0; i < n; ++i) {
      if (AllFlag) llvm::outs() << "# candidate " << i + 1 << " of " << plans->size() << "\n";
      llvm::outs() << (*plans)[i].str();
    }
  }
  return 0;
}

}  // namespace

int main(int argc, char **argv) {
  cl::ParseCommandLineOptions(argc, argv, "Magicube JIT: quantized sparse tensor-core kernels\n");
  log().debug("magicube started");
  if (PlanCmd) return cmd_plan();
  llvm::errs() << "magicube: error: no command given (try: magicube plan --help)\n";
  return 1;
}
