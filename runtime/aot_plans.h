// The plans an ahead-of-time kernel bundle holds (jit/bundle.h, `magicube cache warm`): the
// kernels a first call is likely to need, so that it needs no compile.
#pragma once

#include <string>
#include <vector>

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"
#include "runtime/kernel.h"

namespace magicube {

// The default list, for each arch of `archs` (its reference device, compiler/arch.h, and for
// sm_90 also a 114-SM H100 PCIe, as the policy's grid rules depend on the SM count): the
// paper's precisions (SpMM L8-R8, L8-R4, L4-R4, L16-R8, L16-R16; SDDMM L8-R8, L4-R4,
// L16-R16) at V = 8, 4 and 2, each with the plan the dispatch chooses without a matrix, and
// the plans it chooses on uniform matrices of M = K = 4096 (SDDMM: a 4096 x 4096 mask) at
// sparsities 0.5 .. 0.98 and N from 1 to 8192 (SDDMM: K from 32 to 1024): the int32 output
// where it is exact for that K, else int64. Distinct plans only, in a stable order.
llvm::Expected<std::vector<PlanTarget>> default_aot_plans(llvm::ArrayRef<int> archs);

// The plans of a list: one canonical spec per line (`magicube plan` prints them, e.g.
// "spmm.s8xs8.v8.n128.pf.i32.sm_90"; knobs left out are chosen by the dispatch without a
// matrix), blank lines and '#' comments ignored. Each spec is compiled for its own arch, or,
// when `archs` is not empty, for each of them instead. `name` names the list in errors, which
// give the line number and the line.
llvm::Expected<std::vector<PlanTarget>> aot_plans_from_list(llvm::StringRef text, llvm::StringRef name,
                                                            llvm::ArrayRef<int> archs);

}  // namespace magicube
