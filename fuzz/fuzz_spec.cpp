// Fuzz target: the op-spec parser (compiler/ir.h parse_opspec) and the planner behind it. A
// spec that parses must print back to itself and plan or fail with a message; an error
// message must carry no raw control bytes.
#include <cstdint>
#include <cstdlib>
#include <string>

#include "compiler/ir.h"
#include "compiler/planner.h"

namespace {
void check_message(const std::string &msg) {
  for (char c : msg)
    if ((unsigned char)c < 0x20 || c == 0x7f) std::abort();
}
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size > 4096) return 0;
  llvm::StringRef text(reinterpret_cast<const char *>(data), size);
  auto s = magicube::parse_opspec(text);
  if (!s) {
    check_message(llvm::toString(s.takeError()));
    return 0;
  }
  const std::string canonical = magicube::to_string(*s);
  auto again = magicube::parse_opspec(canonical);
  if (!again || !(*again == *s) || magicube::to_string(*again) != canonical) std::abort();
  auto j = magicube::opspec_from_json(magicube::to_json(*s));
  if (!j || !(*j == *s)) std::abort();
  auto plans = magicube::plan_candidates(*s);
  if (!plans) {
    check_message(llvm::toString(plans.takeError()));
    return 0;
  }
  if (plans->empty()) std::abort();
  return 0;
}
