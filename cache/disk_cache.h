// The on-disk level of the kernel cache: one file per key, "<dir>/<hex>.cubin".
//
// Entry format: a 48-byte header, then the payload.
//   bytes  0..5   magic "MCUBE1"
//   bytes  6..7   zero (reserved)
//   bytes  8..15  payload length, little-endian uint64
//   bytes 16..47  SHA-256 of the payload
// Entries are written to a unique temp file in the same dir ("<hex>.cubin.tmp.<pid>.<rand>"),
// fsync'ed and renamed over the final name, so readers see either no entry or a whole one,
// and concurrent writers of one key (threads or processes) all succeed. A corrupt or
// truncated entry is logged, deleted and reported as a miss.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

#include "cache/cache_key.h"
#include "llvm/Support/Error.h"

namespace magicube {

class DiskCache {
 public:
  // $MAGICUBE_CACHE_DIR, else $XDG_CACHE_HOME/magicube (if absolute), else $HOME/.cache/magicube.
  static llvm::Expected<std::string> default_path();
  // open(default_path()).
  static llvm::Expected<DiskCache> open_default();
  // Creates `path` and its parents (mode 0700) and checks that a file can be created in it;
  // the error names the directory and the reason. With MAGICUBE_CACHE=0 in the environment
  // the cache is disabled: nothing is created or checked, load misses, store does nothing.
  static llvm::Expected<DiskCache> open(const std::string &path);

  bool enabled() const { return enabled_; }
  const std::string &path() const { return dir_; }
  std::string entry_path(const CacheKey &key) const;  // <dir>/<hex>.cubin

  // The payload, or nullopt on a miss (no entry, disabled, or a corrupt entry, which is
  // logged with a warning naming the file and deleted).
  std::optional<std::string> load(const CacheKey &key) const;
  // Atomically writes the entry (temp file + fsync + rename). No-op when disabled.
  llvm::Error store(const CacheKey &key, const std::string &payload) const;

  struct Stats {
    size_t entries = 0;
    uint64_t bytes = 0;  // on-disk size of the entries, headers included
  };
  // Counts the entries in the dir (whether or not the cache is enabled).
  Stats stats() const;
  // Removes every entry and every stale temp file (its writer's pid is gone, or it is more
  // than an hour old); leaves any other file alone.
  llvm::Error clear() const;

  static constexpr size_t kHeaderSize = 48;

 private:
  DiskCache(std::string dir, bool enabled) : dir_(std::move(dir)), enabled_(enabled) {}
  std::string dir_;
  bool enabled_ = true;
};

// Header + payload, exactly as store() writes it (exposed for tests and tools).
std::string encode_cache_entry(const std::string &payload);
// The payload of an encoded entry, or an error saying what is wrong with it.
llvm::Expected<std::string> decode_cache_entry(const std::string &entry);

}  // namespace magicube
