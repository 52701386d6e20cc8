#include "support/text.h"

#include <cstdio>

namespace magicube {

bool is_plain_text(llvm::StringRef text) {
  for (char ch : text) {
    unsigned char c = static_cast<unsigned char>(ch);
    if (c < 0x20 || c >= 0x7f || c == '\'' || c == '\\') return false;
  }
  return true;
}

std::string quoted(llvm::StringRef text, size_t max_bytes) {
  const bool cut = text.size() > max_bytes;
  if (cut) text = text.take_front(max_bytes);
  std::string q = "'";
  for (char ch : text) {
    unsigned char c = static_cast<unsigned char>(ch);
    switch (c) {
      case '\'': q += "\\'"; break;
      case '\\': q += "\\\\"; break;
      case '\t': q += "\\t"; break;
      case '\n': q += "\\n"; break;
      case '\r': q += "\\r"; break;
      default:
        if (c < 0x20 || c >= 0x7f) {
          char buf[5];
          std::snprintf(buf, sizeof buf, "\\x%02x", c);
          q += buf;
        } else {
          q += ch;
        }
    }
  }
  q += "'";
  if (cut) q += "...";
  return q;
}

std::string format_bytes(uint64_t b) {
  if (b < 1024) return std::to_string(b) + " B";
  static const char *const units[] = {"KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
  double x = double(b);
  int u = -1;
  while (x >= 1024 && u < 5) x /= 1024, ++u;
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f %s", x, units[u]);
  return buf;
}

std::optional<uint64_t> parse_byte_size(llvm::StringRef text) {
  text = text.trim();
  uint64_t unit = 1;
  if (!text.empty()) {
    switch (text.back()) {
      case 'k': case 'K': unit = uint64_t(1) << 10; break;
      case 'm': case 'M': unit = uint64_t(1) << 20; break;
      case 'g': case 'G': unit = uint64_t(1) << 30; break;
      default: break;
    }
    if (unit != 1) text = text.drop_back();
  }
  uint64_t n = 0;
  if (text.empty() || text.getAsInteger(10, n) || n > UINT64_MAX / unit) return std::nullopt;
  return n * unit;
}

}  // namespace magicube
