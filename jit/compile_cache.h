// The three-level kernel cache of the JIT stage: process memory -> disk -> NVRTC (the levels are
// cache/, the compiler jit/nvrtc.h).
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "cache/cache_key.h"
#include "cache/disk_cache.h"
#include "cache/memory_cache.h"
#include "llvm/Support/Error.h"

namespace magicube {

class CompileCache {
 public:
  // `disk` nullopt: memory and NVRTC only.
  explicit CompileCache(std::optional<DiskCache> disk);

  // The process-wide cache, on DiskCache::open_default(); if that fails, warns once and
  // runs without the disk level.
  static CompileCache &process();

  // The cubin for `key`: from memory, else from disk, else compiled by NVRTC from
  // make_source() for sm_<arch> (then stored on disk; a failed store is a warning only).
  // make_source is called only on a compile. `key` must cover source, options and arch
  // (see make_cache_key): the cache never looks at the source on a hit.
  // Concurrent misses of one key may compile it more than once; all get the same result.
  llvm::Expected<std::string> get_cubin(const CacheKey &key, int arch,
                                        const std::function<llvm::Expected<std::string>()> &make_source,
                                        const std::string &file_name,
                                        const std::vector<std::string> &extra_options = {});

  struct Stats {
    uint64_t memory_hits = 0, memory_misses = 0;
    uint64_t disk_hits = 0, disk_misses = 0;  // only counted on a memory miss
    uint64_t compiles = 0, compile_failures = 0, disk_store_failures = 0;
    size_t memory_entries = 0;
  };
  Stats stats() const;

  // Drops the memory level (the disk is left alone).
  void clear_memory() { memory_.clear(); }
  const std::optional<DiskCache> &disk() const { return disk_; }

 private:
  std::optional<DiskCache> disk_;
  MemoryCache<const std::string> memory_;
  std::atomic<uint64_t> disk_hits_{0}, disk_misses_{0}, compiles_{0}, compile_failures_{0}, store_failures_{0};
};

}  // namespace magicube
