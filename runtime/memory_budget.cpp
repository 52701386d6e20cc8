#include "runtime/memory_budget.h"

#include <algorithm>
#include <cstdlib>

#include <sys/resource.h>
#include <unistd.h>

#include "support/log.h"
#include "support/text.h"

namespace magicube {

namespace {
llvm::Error err(const llvm::Twine &msg) { return llvm::createStringError(llvm::inconvertibleErrorCode(), msg); }

std::string bytes_text(uint64_t b) {
  return b == UINT64_MAX ? std::string("more than 2^64 bytes") : format_bytes(b) + " (" + std::to_string(b) + " bytes)";
}

}  // namespace

uint64_t host_memory_limit() {
  if (const char *env = std::getenv("MAGICUBE_HOST_MEMORY_LIMIT"); env && *env) {
    if (auto v = parse_byte_size(env)) return *v;
    warn_once("MAGICUBE_HOST_MEMORY_LIMIT", "MAGICUBE_HOST_MEMORY_LIMIT=" + quoted(env) +
                                                " is not a size (bytes, or with a K, M or G suffix); ignoring it");
  }
  uint64_t limit = UINT64_MAX;
  long pages = ::sysconf(_SC_PHYS_PAGES), page = ::sysconf(_SC_PAGESIZE);
  if (pages > 0 && page > 0) limit = uint64_t(pages) * uint64_t(page);
  for (int res : {RLIMIT_AS, RLIMIT_DATA}) {
    struct rlimit rl {};
    if (::getrlimit(res, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY) limit = std::min<uint64_t>(limit, rl.rlim_cur);
  }
  return limit;
}

std::optional<uint64_t> checked_mul(int64_t a, int64_t b) {
  if (a < 0 || b < 0) return std::nullopt;
  uint64_t r = 0;
  if (__builtin_mul_overflow(uint64_t(a), uint64_t(b), &r)) return std::nullopt;
  return r;
}

MemoryBudget &MemoryBudget::add(const std::string &item, int64_t count, int64_t elem_bytes) {
  std::optional<uint64_t> b = checked_mul(count, elem_bytes);
  uint64_t bytes = b ? *b : UINT64_MAX;
  items_.push_back({item, bytes});
  total_ = total_ > UINT64_MAX - bytes ? UINT64_MAX : total_ + bytes;
  return *this;
}

llvm::Error MemoryBudget::check(uint64_t limit, llvm::StringRef where) const {
  if (total_ <= limit) return llvm::Error::success();
  const Item *largest = nullptr;
  for (const Item &i : items_)
    if (!largest || i.bytes > largest->bytes) largest = &i;
  std::string msg = what_ + (total_ == UINT64_MAX ? " needs " : " needs about ") + bytes_text(total_) + " of " +
                    where.str();
  if (largest) msg += " (the largest buffer, " + largest->name + ", is " + bytes_text(largest->bytes) + ")";
  return err(msg + "; the limit is " + bytes_text(limit) + ": refusing it before allocating");
}

llvm::Error check_host_alloc(llvm::StringRef what, int64_t count, int64_t elem_bytes) {
  MemoryBudget b(what.str());
  b.add(what.str(), count, elem_bytes);
  return b.check_host();
}

}  // namespace magicube
