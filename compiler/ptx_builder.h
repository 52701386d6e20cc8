// The text side of the PTX generators (compiler/gen_*_ptx.cpp): a kernel body of named
// virtual registers, instructions with comments and labels. ptxas allocates the registers;
// the generator names them for the reader (lane, begin, acc_t0_0) and folds every constant
// the plan fixes, so the PTX reads like the CUDA kernel it replaces.
#pragma once

#include <map>
#include <string>
#include <vector>

namespace magicube::ptx {

class Body {
 public:
  // Declares a register of type b32, b64 or pred named `stem` (made unique with a suffix
  // when taken) and returns its name.
  std::string b32(const std::string &stem) { return reg(".b32", stem); }
  std::string b64(const std::string &stem) { return reg(".b64", stem); }
  std::string pred(const std::string &stem) { return reg(".pred", stem); }
  // One instruction, without its ';' ("add.s32 x, y, 1"), optionally guarded ("@p", "@!p").
  void op(const std::string &text, const std::string &comment = "");
  void guarded(const std::string &pred, const std::string &text, const std::string &comment = "");
  void comment(const std::string &text);
  void blank();
  std::string label(const std::string &stem);  // a new, unique label name (not placed yet)
  void place(const std::string &label);        // "label:"
  // The register declarations (by type) followed by the body, indented one level.
  std::string str() const;

 private:
  std::string reg(const std::string &type, const std::string &stem);
  std::string unique(const std::string &stem);
  std::map<std::string, int> taken_;
  std::map<std::string, std::vector<std::string>> regs_;  // type -> names, in order
  std::vector<std::string> lines_;
};

// "-12": a PTX immediate.
std::string imm(long long v);

}  // namespace magicube::ptx
