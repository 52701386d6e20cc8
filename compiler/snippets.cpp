#include "compiler/snippets.h"

#include <sstream>

#include "compiler/templates.h"

namespace magicube {

namespace {

// Ends the text with one newline (no blank line).
std::string trim_end(std::string s) {
  while (s.size() >= 2 && s[s.size() - 1] == '\n' && s[s.size() - 2] == '\n') s.pop_back();
  return s;
}
// Keeps at most one trailing blank line: a snippet keeps the blank line that follows it in
// its file, so typedefs stay together and functions apart.
std::string trim_blank(std::string s) {
  while (s.size() >= 3 && s.compare(s.size() - 3, 3, "\n\n\n") == 0) s.pop_back();
  return s;
}

}  // namespace

Snippets::Snippets() {
  parse(kTemplate_fragments_cuh);
  // MC_FN and MC_F32_BITS: how epilogue_math.cuh's functions are declared and read a float's
  // bits on the device (the CPU defines them as inline and a memcpy).
  parse(kTemplate_epilogue_math_cuh,
        {"MC_FN", "#define MC_FN __device__ __forceinline__\n#define MC_F32_BITS(f) __float_as_uint(f)\n"});
}

void Snippets::parse(const std::string &file_text, const std::pair<std::string, std::string> &first) {
  std::istringstream in(file_text);
  std::string heading, group, line;
  Snippet cur;
  bool in_snippet = false;
  auto finish = [&]() {
    if (in_snippet) add(group, cur.name, trim_blank(cur.text), cur.needs);
  };
  while (std::getline(in, line)) {
    if (line.rfind("//@snippet ", 0) == 0) {
      finish();
      if (!in_snippet) {  // the heading: everything before the first snippet
        group = heading.empty() ? "(untitled)" : heading;
        group_heading_[group] = trim_end(heading);
        if (!first.first.empty()) add(group, first.first, first.second);
      }
      std::istringstream words(line.substr(11));
      cur = Snippet{};
      words >> cur.name;
      for (std::string w; words >> w;)
        if (w != "needs") cur.needs.push_back(w);
      in_snippet = true;
      continue;
    }
    if (line.rfind("//@", 0) == 0) continue;
    (in_snippet ? cur.text : heading) += line + "\n";
  }
  finish();
}

void Snippets::add(const std::string &group, const std::string &name, std::string text, std::vector<std::string> needs) {
  if (has(name)) return;
  for (const std::string &n : needs)
    if (!has(n)) errors_.push_back("snippets: " + name + " needs " + n + ", which is not registered before it");
  if (!group_heading_.count(group)) group_heading_[group] = group;
  bool known_group = false;
  for (const std::string &g : groups_) known_group = known_group || g == group;
  if (!known_group) groups_.push_back(group);
  index_[name] = all_.size();
  all_.push_back(Snippet{name, group, std::move(text), std::move(needs)});
}

void Snippets::use(const std::string &name) {
  auto it = index_.find(name);
  if (it == index_.end()) {
    errors_.push_back("snippets: no snippet named " + name);
    return;
  }
  if (!used_.insert(it->second).second) return;
  for (const std::string &n : all_[it->second].needs) use(n);
}

std::vector<std::string> Snippets::used() const {
  std::vector<std::string> names;
  for (const std::string &g : groups_)
    for (size_t i : used_)
      if (all_[i].group == g) names.push_back(all_[i].name);
  return names;
}

std::string Snippets::text() const {
  std::string out;
  for (const std::string &g : groups_) {
    std::string body;
    for (size_t i : used_)  // registration order within the group (std::set is sorted)
      if (all_[i].group == g) body += all_[i].text;
    if (body.empty()) continue;
    const std::string &heading = group_heading_.at(g);
    if (!heading.empty()) out += heading + (heading.back() == '\n' ? "" : "\n");
    out += trim_end(body);
    if (out.back() != '\n') out += "\n";
    out += "\n";
  }
  return out;
}

}  // namespace magicube
