#include "compiler/ptx_builder.h"

namespace magicube::ptx {

std::string Body::unique(const std::string &stem) {
  const int n = taken_[stem]++;
  return n == 0 ? stem : stem + "_" + std::to_string(n + 1);
}

std::string Body::reg(const std::string &type, const std::string &stem) {
  std::string name = unique(stem);
  regs_[type].push_back(name);
  return name;
}

void Body::op(const std::string &text, const std::string &comment) {
  std::string line = "  " + text + ";" + (comment.empty() ? "" : "  // " + comment);
  if (line.size() > 118 && !comment.empty()) {  // the comment on a line of its own, above
    lines_.push_back("  // " + comment);
    line = "  " + text + ";";
  }
  // PTX ends a statement at ';': a long one (an mma's operand lists) continues on the next
  // line at a ", {" boundary, indented under its first operand.
  const size_t indent = text.find(' ') + 3;
  while (line.size() > 118) {
    const size_t cut = line.rfind(", {", 116);
    if (cut == std::string::npos || cut <= indent) break;
    lines_.push_back(line.substr(0, cut + 1));
    line = std::string(indent, ' ') + line.substr(cut + 2);
  }
  lines_.push_back(line);
}

void Body::guarded(const std::string &pred, const std::string &text, const std::string &comment) {
  op(pred + " " + text, comment);
}

void Body::comment(const std::string &text) { lines_.push_back("  // " + text); }
void Body::blank() { lines_.push_back(""); }
std::string Body::label(const std::string &stem) { return unique("L_" + stem); }
void Body::place(const std::string &label) { lines_.push_back(label + ":"); }

std::string Body::str() const {
  std::string s;
  for (const char *type : {".pred", ".b32", ".b64"}) {
    auto it = regs_.find(type);
    if (it == regs_.end()) continue;
    // Several names a line, wrapped before 100 columns.
    std::string line = "  .reg " + std::string(type) + " ";
    for (size_t i = 0; i < it->second.size(); ++i) {
      const std::string &n = it->second[i];
      if (line.size() + n.size() + 2 > 100 && line.back() == ' ') {
        line.pop_back();
        line.back() = ';';
        s += line + "\n";
        line = "  .reg " + std::string(type) + " ";
      }
      line += n + (i + 1 < it->second.size() ? ", " : ";");
    }
    s += line + "\n";
  }
  s += "\n";
  for (const std::string &l : lines_) s += l + "\n";
  return s;
}

std::string imm(long long v) { return std::to_string(v); }

}  // namespace magicube::ptx
