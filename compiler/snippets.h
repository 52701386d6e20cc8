// Device helpers of generated kernels, by name. The templates' helpers are snippets of
// templates/fragments.cuh and templates/epilogue_math.cuh: each runs from its
//   //@snippet NAME [needs NAME...]
// line to the next (lines starting "//@" are never emitted; the text before a file's first
// snippet is its heading). Codegen adds its own (the mma wrappers). A kernel's source holds
// only the snippets its body used, each after what it needs, with the heading of every
// group it draws from.
#pragma once

#include <map>
#include <set>
#include <string>
#include <vector>

namespace magicube {

class Snippets {
 public:
  Snippets();  // the templates' snippets

  // A snippet of codegen's own in group `group` (a heading line, e.g. "// ---- mma ----").
  // Its needs must be registered already; adding a name twice keeps the first.
  void add(const std::string &group, const std::string &name, std::string text, std::vector<std::string> needs = {});
  bool has(const std::string &name) const { return index_.count(name) > 0; }
  // Marks a snippet (and what it needs) used; an unknown name is recorded in errors().
  void use(const std::string &name);
  std::vector<std::string> used() const;  // in emission order
  std::string text() const;               // the used snippets with their group headings
  const std::vector<std::string> &errors() const { return errors_; }

 private:
  struct Snippet {
    std::string name, group, text;
    std::vector<std::string> needs;
  };
  // One template file; `first` (name, text), when given, opens its group.
  void parse(const std::string &file_text, const std::pair<std::string, std::string> &first = {});
  std::vector<Snippet> all_;  // registration order: needs come first
  std::vector<std::string> groups_;
  std::map<std::string, std::string> group_heading_;
  std::map<std::string, size_t> index_;
  std::set<size_t> used_;
  std::vector<std::string> errors_;
};

}  // namespace magicube
