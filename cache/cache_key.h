// The key of one compiled kernel: SHA-256 over everything that decides the cubin bytes.
#pragma once

#include <string>

#include "support/hash.h"  // to_hex

namespace magicube {

struct CacheKey {
  std::string hex;  // 64 lowercase hex digits of a SHA-256
  friend bool operator==(const CacheKey &, const CacheKey &) = default;
};

// SHA-256 of a tagged, length-prefixed concatenation of the fields, so that no two
// different field tuples hash the same bytes ("ab"+"c" vs "a"+"bc").
CacheKey make_cache_key(const std::string &generator_version, const std::string &canonical_ir,
                        const std::string &options, int arch, const std::string &nvrtc_version);

// True if `s` is 64 lowercase hex digits.
bool is_key_hex(const std::string &s);

}  // namespace magicube
