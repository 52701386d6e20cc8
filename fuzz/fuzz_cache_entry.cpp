// Fuzz target: the kernel cache's entry decoder (cache/disk_cache.h decode_cache_entry). Any
// bytes decode to a payload whose encoding is exactly those bytes, or to an error.
#include <cstdint>
#include <cstdlib>
#include <string>

#include "cache/disk_cache.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  const std::string entry(reinterpret_cast<const char *>(data), size);
  auto payload = magicube::decode_cache_entry(entry);
  if (!payload) {
    llvm::consumeError(payload.takeError());
    return 0;
  }
  if (magicube::encode_cache_entry(*payload) != entry) std::abort();
  return 0;
}
