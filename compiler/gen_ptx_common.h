// Internal to codegen: what the PTX generators (compiler/gen_*_ptx.cpp) share. A PtxKernel
// holds the plan and a ptx::Body; its helpers load the plan's parameters, name the thread's
// coordinates and shared arrays, and assemble() wraps the body in the same banner (the
// plan, as the CUDA kernels print it) and the plan's parameter list.
#pragma once

#include <string>
#include <vector>

#include "compiler/gen_common.h"
#include "compiler/ptx_builder.h"
#include "llvm/Support/Error.h"

namespace magicube::gen {

class PtxKernel {
 public:
  const Plan &p;
  const Launch &l;
  ptx::Body b;

  explicit PtxKernel(const Plan &plan) : p(plan), l(plan.launch) {}

  // A fresh register for an intermediate value (ptxas allocates; names are for the reader).
  std::string tmp32(const std::string &stem) { return b.b32(stem); }
  std::string tmp64(const std::string &stem) { return b.b64(stem); }
  // The plan's parameter `name` in a register: pointers converted to the global window,
  // ints as 32 bits.
  std::string param64(const std::string &name);
  std::string param32(const std::string &name);
  // blk (blockIdx.y), n_base (blockIdx.x x BSn), tid, warp, lane, gid, tig.
  void thread_coordinates();
  // A static shared array of `bytes` (16-byte aligned), and its shared-window address in a register.
  void decl_shared(const std::string &name, int bytes, const std::string &comment);
  void shared_comment(const std::string &text) { shared_.push_back("  // " + text); }
  std::string shared_addr(const std::string &name);
  // dst = src / c or src % c (c a constant): a shift or mask when c is a power of two.
  static std::string div_by(const std::string &dst, const std::string &src, int c);
  static std::string mod_by(const std::string &dst, const std::string &src, int c);
  static int log2i(int c);  // c a power of two
  // The address operand [reg] or [reg+off].
  static std::string at(const std::string &reg, long long off) {
    return "[" + reg + (off ? "+" + std::to_string(off) : "") + "]";
  }

  // The whole PTX module: version, target, banner, doc comment, the entry with the plan's
  // parameters, launch bounds, shared arrays and the body.
  llvm::Expected<std::string> assemble(const std::vector<std::string> &doc) const;

 private:
  std::vector<std::string> shared_;
  std::vector<std::string> errors_;
  const KernelParam *find_param(const std::string &name);
};

llvm::Expected<std::string> generate_spmm_ring_ptx(const Plan &p);
llvm::Expected<std::string> generate_sddmm_fast_ptx(const Plan &p);

}  // namespace magicube::gen
