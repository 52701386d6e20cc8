#include "compiler/gen_ptx_common.h"


namespace magicube::gen {

const KernelParam *PtxKernel::find_param(const std::string &name) {
  for (const KernelParam &k : l.params)
    if (k.name == name) return &k;
  errors_.push_back("the plan has no kernel parameter '" + name + "'");
  return nullptr;
}

std::string PtxKernel::param64(const std::string &name) {
  const KernelParam *k = find_param(name);
  if (k && !k->is_pointer()) errors_.push_back("kernel parameter '" + name + "' is not a pointer");
  const std::string raw = tmp64(name + "_param"), r = b.b64(name);
  b.op("ld.param.u64 " + raw + ", [p_" + name + "]");
  b.op("cvta.to.global.u64 " + r + ", " + raw, k ? k->comment : "");
  return r;
}

std::string PtxKernel::param32(const std::string &name) {
  const KernelParam *k = find_param(name);
  if (k && k->is_pointer()) errors_.push_back("kernel parameter '" + name + "' is a pointer");
  const std::string r = b.b32(name);
  b.op("ld.param.u32 " + r + ", [p_" + name + "]", k ? k->comment : "");
  return r;
}

void PtxKernel::thread_coordinates() {
  const std::string blk = b.b32("blk"), n_base = b.b32("n_base"), tid = b.b32("tid"), warp = b.b32("warp"),
                    lane = b.b32("lane"), gid = b.b32("gid"), tig = b.b32("tig");
  b.op("mov.u32 " + blk + ", %ctaid.y", "row-block");
  b.op("mov.u32 " + n_base + ", %ctaid.x");
  b.op("mul.lo.u32 " + n_base + ", " + n_base + ", " + ptx::imm(p.spec.bsn), "first dense column of this block");
  b.op("mov.u32 " + tid + ", %tid.x");
  b.op("shr.u32 " + warp + ", " + tid + ", 5");
  b.op("and.b32 " + lane + ", " + tid + ", 31");
  b.op("shr.u32 " + gid + ", " + lane + ", 2", "mma fragment coordinates: group");
  b.op("and.b32 " + tig + ", " + lane + ", 3", "and thread in group");
}

void PtxKernel::decl_shared(const std::string &name, int bytes, const std::string &comment) {
  shared_.push_back("  .shared .align 16 .b8 " + name + "[" + std::to_string(bytes) + "];  // " + comment);
}

std::string PtxKernel::shared_addr(const std::string &name) {
  const std::string r = b.b32(name + "_s");
  b.op("mov.u32 " + r + ", " + name, "shared-window address");
  return r;
}

int PtxKernel::log2i(int c) {
  int s = 0;
  while ((1 << s) < c) ++s;
  return s;
}

std::string PtxKernel::div_by(const std::string &dst, const std::string &src, int c) {
  if ((c & (c - 1)) == 0) return "shr.u32 " + dst + ", " + src + ", " + ptx::imm(log2i(c));
  return "div.u32 " + dst + ", " + src + ", " + ptx::imm(c);
}

std::string PtxKernel::mod_by(const std::string &dst, const std::string &src, int c) {
  if ((c & (c - 1)) == 0) return "and.b32 " + dst + ", " + src + ", " + ptx::imm(c - 1);
  return "rem.u32 " + dst + ", " + src + ", " + ptx::imm(c);
}

llvm::Expected<std::string> PtxKernel::assemble(const std::vector<std::string> &doc) const {
  if (!errors_.empty()) {
    std::string all;
    for (const std::string &e : errors_) all += (all.empty() ? "" : "; ") + e;
    return llvm::createStringError(llvm::inconvertibleErrorCode(), "PTX codegen of " + to_string(p.spec) + ": " + all);
  }
  std::string s = plan_banner(p) + "\n";
  // PTX ISA 8.0 (CUDA 12.0): cp.async, ldmatrix and the integer mma.sync of sm_80 and sm_90.
  s += ".version 8.0\n.target " + std::string(arch_name(p.spec.arch)) + "\n.address_size 64\n\n";
  const std::string rule = "// " + std::string(87, '-') + "\n";
  s += rule;
  for (const std::string &d : doc) s += (d.empty() ? "//" : "// " + d) + "\n";
  s += rule;
  s += ".visible .entry " + p.kernel_name() + "(\n";
  const auto &ps = l.params;
  for (size_t i = 0; i < ps.size(); ++i) {
    const bool ptr = ps[i].is_pointer(), flt = ps[i].type == "float";
    s += "    .param ." + std::string(ptr ? "u64" : flt ? "f32" : "u32") + " p_" + ps[i].name +
         (i + 1 < ps.size() ? "," : "") + "  // " + ps[i].comment + "\n";
  }
  s += ")\n.maxntid " + std::to_string(l.threads) + ", 1, 1\n{\n";
  for (const std::string &sh : shared_) s += sh + "\n";
  s += b.str() + "  ret;\n}\n";
  return s;
}

}  // namespace magicube::gen
