// Fuzz target: the AOT kernel bundle parser (jit/bundle.h Bundle::parse). Any bytes parse to
// a bundle or to an error; a bundle whose every cubin matches its SHA-256 re-encodes to
// exactly those bytes (the format has one encoding), and every entry is found by its key.
#include <cstdint>
#include <cstdlib>
#include <string>
#include <vector>

#include "jit/bundle.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  const std::string bytes(reinterpret_cast<const char *>(data), size);
  auto bundle = magicube::Bundle::parse(bytes, "fuzz");
  if (!bundle) {
    llvm::consumeError(bundle.takeError());
    return 0;
  }
  const magicube::Bundle &b = **bundle;
  if (llvm::Error e = b.verify_all()) {
    llvm::consumeError(std::move(e));
    return 0;
  }
  std::vector<magicube::BundleInput> inputs;
  for (const magicube::BundleEntry &e : b.entries()) {
    auto cubin = b.find(magicube::CacheKey{e.key});
    if (!cubin || !*cubin) std::abort();  // verified above: every entry is found, whole
    inputs.push_back(magicube::BundleInput{magicube::CacheKey{e.key}, e.arch, e.label, std::move(**cubin)});
  }
  auto again = magicube::encode_bundle(b.meta(), inputs);
  if (!again) std::abort();  // what parses, encodes
  if (*again != bytes) std::abort();
  return 0;
}
