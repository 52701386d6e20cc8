#include "cache/cache_key.h"

#include "support/hash.h"

namespace magicube {

bool is_key_hex(const std::string &s) {
  if (s.size() != 64) return false;
  for (char c : s)
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  return true;
}

CacheKey make_cache_key(const std::string &generator_version, const std::string &canonical_ir,
                        const std::string &options, int arch, const std::string &nvrtc_version) {
  return CacheKey{to_hex(sha256_fields(
      {"magicube-cache-key-v1", generator_version, canonical_ir, options, std::to_string(arch), nvrtc_version}))};
}

}  // namespace magicube
