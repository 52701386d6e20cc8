// Ahead-of-time kernel bundles: one read-only file of cubins compiled before the library is
// used (`magicube cache warm`), looked up by the same cache keys as the disk cache, so that a
// first call in a fresh process loads a kernel instead of compiling it. The compile cache
// asks the bundles after its memory level and before the disk and NVRTC (compile_cache.h).
//
// File format (little-endian), version 1:
//   header, 64 bytes
//     0..7    magic "MCBUNDLE"
//     8..11   format version (1)
//     12..15  entry count
//     16..23  file size in bytes (the whole file)
//     24..31  index end: the offset where the payloads begin
//     32..63  SHA-256 of bytes 0..31 followed by bytes 64..index end (the meta and the index)
//   meta: three strings, each a u32 length then its bytes: the generator version, the NVRTC
//     version the cubins were compiled with, and a note (who built it, for `cache inspect`)
//   index: per entry the cache key (32 raw bytes of its SHA-256), the SHA-256 of the cubin
//     (32), its offset (u64) and size (u64), the arch it was compiled for (u32), and a label
//     (u32 length, then bytes: the plan's spec, for `cache inspect`)
//   payloads: the cubins, back to back in index order, the first at the index end, the last
//     ending at the file size.
//
// Verification: open() opens the file (a regular file reached without following a symlink,
// at most kMaxBundleBytes, not writable by another user), reads its header and index only
// and checks the header, the layout (every payload inside the file, back to back, to its
// end) and the SHA-256 over header, meta and index before anything is used. The index holds
// every cubin's SHA-256, so find() reads and verifies just the cubin it returns, from the
// file kept open. (Reading and hashing the whole bundle at open would cost a few ms for the
// default 2 MiB; a first call is to cost 2 ms.) verify_all() checks every payload (`cache
// inspect`). check_versions() refuses a bundle of another generator or NVRTC:
// its keys could never match, and a bundle that silently never hits hides a broken install.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "cache/cache_key.h"
#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/Support/Error.h"

namespace magicube {

struct BundleMeta {
  std::string generator;  // kGeneratorVersion of the code that generated the sources
  std::string nvrtc;      // toolchain_version() of the compiles (jit/compile.h: NVRTC's and nvJitLink's)
  std::string note;       // free text, e.g. "magicube cache warm, 212 plans, sm_80 sm_90"
};

// One kernel to put in a bundle.
struct BundleInput {
  CacheKey key;       // exactly as the disk cache computes it (make_cache_key)
  int arch = 0;       // the sm_XX its cubin is for
  std::string label;  // e.g. the plan's spec text
  std::string cubin;
};

// One entry of a parsed bundle.
struct BundleEntry {
  std::string key;     // 64 hex digits
  std::string sha256;  // raw 32 bytes, of the cubin
  uint64_t offset = 0, size = 0;
  int arch = 0;
  std::string label;
};

// The bundle file's bytes; an error for duplicate or malformed keys or oversized fields.
llvm::Expected<std::string> encode_bundle(const BundleMeta &meta, llvm::ArrayRef<BundleInput> entries);
// encode_bundle, written atomically to `path` (support/atomic_file.h).
llvm::Error write_bundle(const std::string &path, const BundleMeta &meta, llvm::ArrayRef<BundleInput> entries);

class Bundle {
 public:
  // Parses and verifies `bytes`, a whole bundle in memory (everything but the payloads'
  // hashes); `name` names it in errors.
  static llvm::Expected<std::unique_ptr<Bundle>> parse(std::string bytes, std::string name);
  // Opens `path` as described above and verifies its header and index; the file stays open
  // for find(). Errors say why the file was refused.
  static llvm::Expected<std::unique_ptr<Bundle>> open(const std::string &path);
  ~Bundle();
  Bundle(const Bundle &) = delete;
  Bundle &operator=(const Bundle &) = delete;

  // An error naming both versions when the bundle was built by another generator or NVRTC.
  llvm::Error check_versions(llvm::StringRef generator, llvm::StringRef nvrtc) const;

  // The cubin of `key`, its SHA-256 checked; nullopt when the bundle has no such entry; an
  // error when the entry fails its hash.
  llvm::Expected<std::optional<std::string>> find(const CacheKey &key) const;
  // Checks every payload's SHA-256; the error names the first entry that fails.
  llvm::Error verify_all() const;

  const std::string &path() const { return name_; }
  const BundleMeta &meta() const { return meta_; }
  const std::vector<BundleEntry> &entries() const { return entries_; }
  uint64_t bytes() const { return size_; }

  static constexpr size_t kHeaderSize = 64;
  static constexpr uint32_t kFormatVersion = 1;
  static constexpr uint64_t kMaxBundleBytes = uint64_t(512) << 20;
  static constexpr uint64_t kMaxCubinBytes = uint64_t(64) << 20;  // as the disk cache's entries
  static constexpr uint32_t kMaxEntries = 1u << 20;
  static constexpr uint32_t kMaxStringBytes = 4096;  // each meta string and label

 private:
  Bundle() = default;
  // Checks the header and index in `head` (the file's first bytes, through the index end when
  // the header names a sane one) of a file of `size` bytes, and fills meta_ and entries_.
  llvm::Error read_index(llvm::StringRef head, uint64_t size);
  // An entry's bytes: from data_ (parse) or read from fd_ (open).
  llvm::Expected<std::string> payload(const BundleEntry &e) const;
  std::string name_, data_;
  int fd_ = -1;
  uint64_t size_ = 0;
  BundleMeta meta_;
  std::vector<BundleEntry> entries_;
  llvm::StringMap<size_t> by_key_;
};

// Where the process looks for bundles: $MAGICUBE_BUNDLE, paths separated by ':' ("0" or ""
// = none), else default_bundle_path() when that file exists. `given` says which: a missing
// file the user named is warned about, a missing default is not.
struct BundlePaths {
  std::vector<std::string> paths;
  bool given = false;
};
BundlePaths bundle_paths_from_env();
// <dir>/../share/magicube/kernels.mcbundle, where <dir> holds the binary this code is part
// of (libmagicube.so, or the executable it is linked into): the installed layout
// (<prefix>/lib, <prefix>/bin -> <prefix>/share/magicube; a multiarch
// <prefix>/lib/x86_64-linux-gnu looks one level higher too) and the build tree's (build/lib,
// build/bin -> build/share/magicube). The first that exists, else the nearest one's path;
// "" when that binary cannot be found.
std::string default_bundle_path();
inline constexpr const char *kBundleFileName = "kernels.mcbundle";

// Opens each path and checks its versions; each refused bundle is warned about once, naming
// the file and why, and skipped (NVRTC, through the disk cache, takes over its kernels).
std::vector<std::shared_ptr<const Bundle>> open_bundles(const BundlePaths &paths, llvm::StringRef generator,
                                                        llvm::StringRef nvrtc);

}  // namespace magicube
