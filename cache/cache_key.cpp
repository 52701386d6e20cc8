#include "cache/cache_key.h"

#include <cstdint>

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/SHA256.h"

namespace magicube {
namespace {

void add_field(llvm::SHA256 &h, const std::string &field) {
  uint8_t len[8];
  uint64_t n = field.size();
  for (int i = 0; i < 8; ++i) len[i] = static_cast<uint8_t>(n >> (8 * i));  // little-endian
  h.update(llvm::ArrayRef<uint8_t>(len, 8));
  h.update(llvm::StringRef(field));
}

}  // namespace

std::string to_hex(const std::string &bytes) {
  static const char digits[] = "0123456789abcdef";
  std::string out;
  out.reserve(bytes.size() * 2);
  for (unsigned char c : bytes) {
    out += digits[c >> 4];
    out += digits[c & 15];
  }
  return out;
}

bool is_key_hex(const std::string &s) {
  if (s.size() != 64) return false;
  for (char c : s)
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  return true;
}

CacheKey make_cache_key(const std::string &generator_version, const std::string &canonical_ir,
                        const std::string &options, int arch, const std::string &nvrtc_version) {
  llvm::SHA256 h;
  add_field(h, "magicube-cache-key-v1");
  add_field(h, generator_version);
  add_field(h, canonical_ir);
  add_field(h, options);
  add_field(h, std::to_string(arch));
  add_field(h, nvrtc_version);
  return CacheKey{to_hex(h.final().str())};
}

}  // namespace magicube
