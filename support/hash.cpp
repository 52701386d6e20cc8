#include "support/hash.h"

#include "llvm/Support/SHA256.h"
#include "llvm/Support/xxhash.h"

namespace magicube {

uint64_t hash64(llvm::StringRef bytes) { return llvm::xxHash64(bytes); }

uint64_t hash64(llvm::ArrayRef<int64_t> words) {
  return llvm::xxHash64(llvm::ArrayRef<uint8_t>(reinterpret_cast<const uint8_t *>(words.data()),
                                                words.size() * sizeof(int64_t)));
}

std::string sha256(llvm::StringRef bytes) {
  llvm::SHA256 h;
  h.update(bytes);
  return h.final().str();
}

std::string sha256_fields(llvm::ArrayRef<std::string> fields) {
  llvm::SHA256 h;
  for (const std::string &f : fields) {
    uint8_t len[8];
    const uint64_t n = f.size();
    for (int i = 0; i < 8; ++i) len[i] = uint8_t(n >> (8 * i));  // little-endian
    h.update(llvm::ArrayRef<uint8_t>(len, 8));
    h.update(llvm::StringRef(f));
  }
  return h.final().str();
}

std::string to_hex(llvm::StringRef bytes) {
  static const char digits[] = "0123456789abcdef";
  std::string out;
  out.reserve(bytes.size() * 2);
  for (unsigned char c : bytes) {
    out += digits[c >> 4];
    out += digits[c & 15];
  }
  return out;
}

}  // namespace magicube
