// The project's hashes, in one place.
//   hash64   llvm::xxHash64: fast, 64 bits, the same value in every process and build of one
//            LLVM (so fit for file names, e.g. tuning records). Not a content address.
//   sha256   content addresses: kernel cache keys and cubin integrity in the disk cache.
#pragma once

#include <cstdint>
#include <string>

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"

namespace magicube {

// xxHash64 of the bytes.
uint64_t hash64(llvm::StringRef bytes);
// xxHash64 of the words' bytes as they lie in memory (host byte order): for in-process hashes
// of integer fields (a plan's fingerprint), cheap and free of strings.
uint64_t hash64(llvm::ArrayRef<int64_t> words);

// SHA-256 of the bytes: the 32-byte raw digest.
std::string sha256(llvm::StringRef bytes);
// SHA-256 of the fields each as its length (8 bytes, little-endian) then its bytes, so that no
// two different field lists hash the same bytes ("ab"+"c" vs "a"+"bc"): the raw digest.
std::string sha256_fields(llvm::ArrayRef<std::string> fields);

// Lowercase hex of raw bytes (e.g. a digest).
std::string to_hex(llvm::StringRef bytes);

}  // namespace magicube
