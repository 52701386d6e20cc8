// Text helpers for messages: untrusted bytes (file contents, flag values) quoted so that a
// terminal escape or a NUL cannot get through, and byte counts for humans.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "llvm/ADT/StringRef.h"

namespace magicube {

// 'text' in single quotes, printable ASCII as is, a quote or backslash escaped, anything
// else as \t, \r, \n or \xNN; longer than `max_bytes` input is cut there and "..." appended
// after the closing quote. quoted("a\x1b[2J") is 'a\x1b[2J' with a literal backslash.
std::string quoted(llvm::StringRef text, size_t max_bytes = 64);

// True when quoted() would leave `text` unchanged inside the quotes.
bool is_plain_text(llvm::StringRef text);

// "512 B", "1.5 KiB", "3.0 GiB", "8.0 EiB".
std::string format_bytes(uint64_t bytes);

// A size from an environment variable: decimal bytes with an optional K, M or G suffix
// (powers of 1024), surrounding blanks ignored; nullopt when malformed or beyond 2^64.
std::optional<uint64_t> parse_byte_size(llvm::StringRef text);

}  // namespace magicube
