// Fuzz target: the tuning-record reader (runtime/autotune.h parse_tune_record): size and
// depth bounds, the JSON parser, the field readers. A record that parses must write back to
// JSON that parses to the same choice.
#include <cstdint>
#include <cstdlib>
#include <string>

#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/raw_ostream.h"
#include "runtime/autotune.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  llvm::StringRef text(reinterpret_cast<const char *>(data), size);
  auto r = magicube::parse_tune_record(text);
  if (!r) {
    llvm::consumeError(r.takeError());
    return 0;
  }
  std::string out;
  llvm::raw_string_ostream(out) << llvm::formatv("{0:2}", magicube::to_json(*r));
  auto back = magicube::parse_tune_record(out);
  if (!back) std::abort();
  if (back->key.str() != r->key.str() || back->choice.candidate.str() != r->choice.candidate.str() ||
      back->timings.size() != r->timings.size())
    std::abort();
  return 0;
}
