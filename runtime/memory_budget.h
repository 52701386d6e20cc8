// Sizes worked out before anything is allocated: a problem whose buffers cannot fit the
// host (or the device) is refused with an error naming the sizes, instead of dying on an
// uncaught std::bad_alloc or std::length_error. Host-side, no CUDA.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

namespace magicube {

// The bytes this process may allocate on the host: physical memory, lowered by RLIMIT_AS
// and RLIMIT_DATA where set. MAGICUBE_HOST_MEMORY_LIMIT (bytes, or with a K, M or G
// suffix) overrides it (for tests and for sharing a machine).
uint64_t host_memory_limit();

// a * b, or nullopt when it overflows 64 bits (negative operands count as overflow).
std::optional<uint64_t> checked_mul(int64_t a, int64_t b);

// A sum of named buffers, in bytes; overflow saturates at UINT64_MAX.
class MemoryBudget {
 public:
  // `what` names the problem in the error ("run: SpMM M=8 K=2147483647 N=64 V=8").
  explicit MemoryBudget(std::string what) : what_(std::move(what)) {}
  // `count` elements of `elem_bytes` each, for the buffer `item` ("B: K x N int64 values").
  MemoryBudget &add(const std::string &item, int64_t count, int64_t elem_bytes);
  uint64_t total() const { return total_; }
  // An error when the total exceeds `limit` bytes of `where` ("host memory", "device memory
  // of NVIDIA H100"), naming the total, the largest buffer and the limit.
  llvm::Error check(uint64_t limit, llvm::StringRef where) const;
  llvm::Error check_host() const { return check(host_memory_limit(), "host memory"); }

 private:
  struct Item {
    std::string name;
    uint64_t bytes;
  };
  std::string what_;
  std::vector<Item> items_;
  uint64_t total_ = 0;
};

// One host buffer of `count` x `elem_bytes`: an error naming `what` when the size overflows
// or exceeds host_memory_limit().
llvm::Error check_host_alloc(llvm::StringRef what, int64_t count, int64_t elem_bytes);

}  // namespace magicube
