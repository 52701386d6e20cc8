// The kernel cache of the JIT stage: process memory -> AOT bundles -> disk -> NVRTC (the
// levels are cache/ and jit/bundle.h, the compiler jit/nvrtc.h).
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "cache/cache_key.h"
#include "cache/disk_cache.h"
#include "jit/compile.h"
#include "cache/memory_cache.h"
#include "jit/bundle.h"
#include "jit/compile.h"
#include "llvm/Support/Error.h"

namespace magicube {

class CompileCache {
 public:
  // `disk` nullopt: memory and NVRTC only.
  explicit CompileCache(std::optional<DiskCache> disk);

  // The process-wide cache, on DiskCache::open_default(); if that fails, warns once and
  // runs without the disk level.
  static CompileCache &process();

  // The cubin for `key`: from memory, else from an AOT bundle, else from disk, else compiled
  // from make_source() (a `kind` source: compile_cubin, jit/compile.h) for sm_<arch> (then stored on disk; a failed store is a
  // warning only). A bundle entry that fails its SHA-256 is warned about once and the
  // bundle is not asked again; the kernel then comes from the disk or NVRTC.
  // make_source is called only on a compile. `key` must cover source, options and arch
  // (see make_cache_key): the cache never looks at the source on a hit.
  // Concurrent misses of one key may compile it more than once; all get the same result.
  llvm::Expected<std::string> get_cubin(const CacheKey &key, int arch,
                                        const std::function<llvm::Expected<std::string>()> &make_source,
                                        const std::string &file_name,
                                        const std::vector<std::string> &extra_options = {},
                                        SourceKind kind = SourceKind::Cuda);

  // Adds a bundle to ask after the memory level (in the order added). Thread-safe.
  void add_bundle(std::shared_ptr<const Bundle> bundle);
  // Once per cache: adds the bundles of bundle_paths_from_env() that open_bundles() accepts
  // for `generator` and this NVRTC. Kernel lookups of the runtime call it before get_cubin.
  void use_process_bundles(const std::string &generator);
  size_t bundle_count() const;

  struct Stats {
    uint64_t memory_hits = 0, memory_misses = 0;
    uint64_t bundle_hits = 0, bundle_misses = 0;  // only counted on a memory miss with a bundle
    uint64_t disk_hits = 0, disk_misses = 0;  // only counted on a memory miss
    uint64_t compiles = 0, compile_failures = 0, disk_store_failures = 0;
    size_t memory_entries = 0;
  };
  Stats stats() const;

  // Drops the memory level (the disk is left alone).
  void clear_memory() { memory_.clear(); }
  const std::optional<DiskCache> &disk() const { return disk_; }

 private:
  struct UsedBundle {
    std::shared_ptr<const Bundle> bundle;
    std::atomic<bool> bad{false};  // an entry failed its hash: not asked again
    explicit UsedBundle(std::shared_ptr<const Bundle> b) : bundle(std::move(b)) {}
  };
  // The bundle's cubin for `key`, or nullopt (no bundle has it, or the one that has it is corrupt).
  std::optional<std::string> from_bundles(const CacheKey &key, const std::string &file_name);

  std::optional<DiskCache> disk_;
  MemoryCache<const std::string> memory_;
  mutable std::mutex bundles_mu_;
  std::vector<std::shared_ptr<UsedBundle>> bundles_;
  std::once_flag process_bundles_once_;
  std::atomic<uint64_t> bundle_hits_{0}, bundle_misses_{0}, disk_hits_{0}, disk_misses_{0}, compiles_{0}, compile_failures_{0}, store_failures_{0};
};

}  // namespace magicube
