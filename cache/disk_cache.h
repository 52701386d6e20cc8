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
//
// Origin, not only integrity: an entry's SHA-256 proves it is whole, not who wrote it, so the
// directory must be private: owned by this user and writable by nobody else (open() refuses
// it otherwise, and the process cache then runs without the disk level). Entries are opened
// without following symlinks, only as regular files (a FIFO or a device is refused without
// blocking or reading) and only up to kMaxEntryBytes.
//
// Size: after each store the directory is trimmed to max_bytes() (MAGICUBE_CACHE_MAX_BYTES,
// default 1 GiB; 0 = no bound), least recently used entries first (a hit refreshes an
// entry's mtime), and temp files of writers that died are removed.
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
  // Creates `path` and its parents (mode 0700) and checks that it is private to this user
  // (check_private_dir) and whether a file can be created in it; the error names the
  // directory and the reason. A private directory that refuses writes (read-only) is opened
  // read-only: load serves its entries, store does nothing. With MAGICUBE_CACHE=0 in the
  // environment the cache is disabled: nothing is created or checked, load misses, store
  // does nothing. MAGICUBE_CACHE other than 0 or 1 is warned about (once) and ignored.
  static llvm::Expected<DiskCache> open(const std::string &path);

  bool enabled() const { return enabled_; }
  bool writable() const { return enabled_ && writable_; }
  // The size bound store() trims the directory to; 0 = none.
  uint64_t max_bytes() const { return max_bytes_; }
  void set_max_bytes(uint64_t bytes) { max_bytes_ = bytes; }
  const std::string &path() const { return dir_; }
  std::string entry_path(const CacheKey &key) const;  // <dir>/<hex>.cubin

  // The payload, or nullopt on a miss (no entry, disabled, or a corrupt entry, which is
  // logged with a warning naming the file and deleted).
  std::optional<std::string> load(const CacheKey &key) const;
  // Atomically writes the entry (temp file + fsync + rename), then trims the directory
  // (trim(key)). No-op when disabled or read-only.
  llvm::Error store(const CacheKey &key, const std::string &payload) const;
  // Removes temp files whose writer died (or older than an hour), then, while the entries
  // exceed max_bytes(), the least recently used entry other than `keep`. Returns the number
  // of files removed.
  size_t trim(const CacheKey *keep = nullptr) const;

  struct Stats {
    size_t entries = 0;
    uint64_t bytes = 0;  // on-disk size of the entries, headers included
    size_t temps = 0;    // temp files (of live writers, or stale ones trim() and clear() remove)
  };
  // Counts the entries (regular files named <64 hex>.cubin; a symlink is not one) in the dir,
  // whether or not the cache is enabled.
  Stats stats() const;
  // Removes every entry and every stale temp file (its writer's pid is gone, or it is more
  // than an hour old); leaves any other file alone.
  llvm::Error clear() const;

  static constexpr size_t kHeaderSize = 48;
  // The largest payload load() reads (cubins are tens to hundreds of KiB).
  static constexpr uint64_t kMaxEntryBytes = uint64_t(64) << 20;
  static constexpr uint64_t kDefaultMaxBytes = uint64_t(1) << 30;

 private:
  DiskCache(std::string dir, bool enabled, bool writable = true);
  std::string dir_;
  bool enabled_ = true;
  bool writable_ = true;
  uint64_t max_bytes_ = kDefaultMaxBytes;
};

// MAGICUBE_CACHE_MAX_BYTES: bytes, with an optional K, M or G suffix (powers of 1024); 0 =
// no bound; unset or empty = kDefaultMaxBytes. A malformed value is warned about once and
// the default used.
uint64_t cache_max_bytes_from_env();

// Header + payload, exactly as store() writes it (exposed for tests and tools).
std::string encode_cache_entry(const std::string &payload);
// The payload of an encoded entry, or an error saying what is wrong with it.
llvm::Expected<std::string> decode_cache_entry(const std::string &entry);

}  // namespace magicube
