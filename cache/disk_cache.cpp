#include "cache/disk_cache.h"

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <algorithm>
#include <random>

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <unistd.h>

#include "cache/safe_file.h"
#include "support/text.h"
#include "support/atomic_file.h"
#include "support/hash.h"
#include "support/log.h"
#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/SmallString.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"

namespace magicube {
namespace {

constexpr char kMagic[6] = {'M', 'C', 'U', 'B', 'E', '1'};
constexpr llvm::StringLiteral kEntrySuffix = ".cubin";
constexpr llvm::StringLiteral kTmpInfix = kAtomicTempInfix;  // write_file_atomic's temp files
constexpr llvm::StringLiteral kProbePrefix = "write-probe";
constexpr time_t kStaleTempSeconds = 3600;

llvm::Error make_error(const std::string &msg) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), msg);
}

std::string errno_text(int err) { return std::strerror(err); }

std::string join(const std::string &dir, const std::string &name) {
  llvm::SmallString<256> p(dir);
  llvm::sys::path::append(p, name);
  return std::string(p.str());
}

// Creates a new file "<dir>/<prefix>.tmp.<pid>.<rand>" with O_EXCL; returns fd and name.
int create_temp(const std::string &dir, const std::string &prefix, std::string &name, int &err) {
  for (int attempt = 0; attempt < 16; ++attempt) {
    name = join(dir, prefix + kTmpInfix.str() + std::to_string(getpid()) + "." + random_hex16());
    int fd = ::open(name.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    if (fd >= 0) return fd;
    err = errno;
    if (err != EEXIST) return -1;
  }
  return -1;
}


// "<64 hex>.cubin"
bool is_entry_name(llvm::StringRef name) {
  return name.endswith(kEntrySuffix) && is_key_hex(name.drop_back(kEntrySuffix.size()).str());
}

// "<64 hex>.cubin.tmp.<pid>.<rand>" or "write-probe.tmp.<pid>.<rand>": sets the writer's pid.
bool is_temp_name(llvm::StringRef name, long &pid) {
  size_t at = name.find(kTmpInfix);
  if (at == llvm::StringRef::npos) return false;
  llvm::StringRef prefix = name.substr(0, at), rest = name.substr(at + kTmpInfix.size());
  if (prefix != kProbePrefix && !is_entry_name(prefix)) return false;
  auto [pid_text, rand] = rest.split('.');
  if (rand.empty() || pid_text.getAsInteger(10, pid) || pid <= 0) return false;
  return true;
}

bool temp_is_stale(long pid, const struct stat &st) {
  if (::kill(static_cast<pid_t>(pid), 0) != 0 && errno == ESRCH) return true;  // writer is gone
  return std::time(nullptr) - st.st_mtime > kStaleTempSeconds;
}

bool cache_disabled_by_env() {
  const char *v = std::getenv("MAGICUBE_CACHE");
  if (!v || !*v || std::string(v) == "1") return false;
  if (std::string(v) == "0") return true;
  warn_once("MAGICUBE_CACHE", "MAGICUBE_CACHE=" + quoted(v) + " is not 0 or 1; ignoring it (the disk cache stays on)");
  return false;
}

// Lists the names in `dir` (without "." and ".."); false and errno on failure.
bool list_dir(const std::string &dir, std::vector<std::string> &names, int &err) {
  DIR *d = ::opendir(dir.c_str());
  if (!d) {
    err = errno;
    return false;
  }
  while (struct dirent *e = ::readdir(d)) {
    std::string n = e->d_name;
    if (n != "." && n != "..") names.push_back(n);
  }
  ::closedir(d);
  return true;
}

// Whether a failed create in `dir` means the directory refuses writes (open it read-only).
bool is_read_only_errno(int err) { return err == EACCES || err == EPERM || err == EROFS; }

}  // namespace

uint64_t cache_max_bytes_from_env() {
  const char *v = std::getenv("MAGICUBE_CACHE_MAX_BYTES");
  if (!v || !*v) return DiskCache::kDefaultMaxBytes;
  std::optional<uint64_t> n = parse_byte_size(v);
  if (!n) {
    warn_once("MAGICUBE_CACHE_MAX_BYTES", "MAGICUBE_CACHE_MAX_BYTES=" + quoted(v) +
                                              " is not a size (bytes, or with a K, M or G suffix; 0 = no bound); using " +
                                              format_bytes(DiskCache::kDefaultMaxBytes));
    return DiskCache::kDefaultMaxBytes;
  }
  return *n;
}

DiskCache::DiskCache(std::string dir, bool enabled, bool writable)
    : dir_(std::move(dir)), enabled_(enabled), writable_(writable), max_bytes_(cache_max_bytes_from_env()) {}

std::string encode_cache_entry(const std::string &payload) {
  std::string out(kMagic, sizeof kMagic);
  out.append(2, '\0');
  uint64_t n = payload.size();
  for (int i = 0; i < 8; ++i) out += static_cast<char>((n >> (8 * i)) & 0xff);
  out += sha256(payload);
  out += payload;
  return out;
}

llvm::Expected<std::string> decode_cache_entry(const std::string &entry) {
  if (entry.size() < DiskCache::kHeaderSize)
    return make_error("truncated header (" + std::to_string(entry.size()) + " of " +
                      std::to_string(DiskCache::kHeaderSize) + " bytes)");
  if (entry.compare(0, sizeof kMagic, kMagic, sizeof kMagic) != 0 || entry[6] != 0 || entry[7] != 0)
    return make_error("bad magic (expected MCUBE1)");
  uint64_t n = 0;
  for (int i = 0; i < 8; ++i) n |= uint64_t(static_cast<unsigned char>(entry[8 + i])) << (8 * i);
  uint64_t have = entry.size() - DiskCache::kHeaderSize;
  if (n != have)
    return make_error("payload length " + std::to_string(have) + " does not match the header's " + std::to_string(n));
  std::string payload = entry.substr(DiskCache::kHeaderSize);
  if (sha256(payload) != entry.substr(16, 32)) return make_error("payload SHA-256 does not match the header");
  return payload;
}

llvm::Expected<std::string> DiskCache::default_path() {
  if (const char *d = std::getenv("MAGICUBE_CACHE_DIR"); d && *d) return std::string(d);
  if (const char *x = std::getenv("XDG_CACHE_HOME"); x && *x && llvm::sys::path::is_absolute(x))
    return join(x, "magicube");
  if (const char *h = std::getenv("HOME"); h && *h) return join(join(h, ".cache"), "magicube");
  return make_error("cannot choose a cache dir: MAGICUBE_CACHE_DIR, XDG_CACHE_HOME and HOME are all unset");
}

llvm::Expected<DiskCache> DiskCache::open_default() {
  auto p = default_path();
  if (!p) return p.takeError();
  return open(*p);
}

llvm::Expected<DiskCache> DiskCache::open(const std::string &path) {
  if (path.empty()) return make_error("cache dir path is empty");
  llvm::SmallString<256> abs(path);
  if (std::error_code ec = llvm::sys::fs::make_absolute(abs))
    return make_error("cache dir " + path + " cannot be made absolute: " + ec.message());
  llvm::sys::path::remove_dots(abs, /*remove_dot_dot=*/true);
  std::string dir(abs.str());

  if (cache_disabled_by_env()) {
    log().debug("disk cache {} disabled by MAGICUBE_CACHE=0", dir);
    return DiskCache(dir, false);
  }
  if (std::error_code ec = llvm::sys::fs::create_directories(dir, /*IgnoreExisting=*/true,
                                                             llvm::sys::fs::perms::owner_all))
    return make_error("cache dir " + dir + " cannot be created: " + ec.message());
  if (!llvm::sys::fs::is_directory(dir)) return make_error("cache dir " + dir + " is not writable: Not a directory");
  // An entry's hash proves integrity, not origin: only a directory nobody else can write.
  if (llvm::Error e = check_private_dir(dir)) return e;

  // Root passes every access() check; creating a file is the only real test.
  std::string probe;
  int err = 0;
  int fd = create_temp(dir, kProbePrefix.str(), probe, err);
  if (fd < 0) {
    if (!is_read_only_errno(err)) return make_error("cache dir " + dir + " is not writable: " + errno_text(err));
    // Ours but read-only (a shared image, a read-only mount): serve what is there.
    log().debug("disk cache {} is read-only ({}): entries are loaded, none stored", dir, errno_text(err));
    return DiskCache(dir, true, false);
  }
  ::close(fd);
  ::unlink(probe.c_str());
  return DiskCache(dir, true);
}

std::string DiskCache::entry_path(const CacheKey &key) const { return join(dir_, key.hex + kEntrySuffix.str()); }

std::optional<std::string> DiskCache::load(const CacheKey &key) const {
  if (!enabled_) return std::nullopt;
  if (!is_key_hex(key.hex)) {
    log().warn("disk cache {}: ignoring load of malformed key '{}'", dir_, key.hex);
    return std::nullopt;
  }
  const std::string file = entry_path(key);
  // No symlinks, no special files, nothing larger than an entry can be.
  SafeRead read = read_regular_file(file, kHeaderSize + kMaxEntryBytes);
  switch (read.status) {
    case SafeRead::Status::Ok: break;
    case SafeRead::Status::Missing: return std::nullopt;
    case SafeRead::Status::Refused:
      log().warn("cache entry {} {}; treating it as a miss", file, read.why);
      return std::nullopt;
    case SafeRead::Status::Failed:
      log().warn("cannot read cache entry {}: {}; treating it as a miss", file, read.why);
      return std::nullopt;
  }
  auto payload = decode_cache_entry(read.data);
  if (payload) {
    // Least recently used: a hit refreshes the entry's mtime (trim() evicts the oldest).
    if (writable_) {
      const struct timespec now[2] = {{0, UTIME_OMIT}, {0, UTIME_NOW}};
      ::utimensat(AT_FDCWD, file.c_str(), now, AT_SYMLINK_NOFOLLOW);
    }
    return std::move(*payload);
  }

  log().warn("corrupt cache entry {}: {}; deleting it", file, llvm::toString(payload.takeError()));
  // Delete only the file we read: a writer may have renamed a good entry over it since.
  struct stat now {};
  if (::lstat(file.c_str(), &now) == 0 && uint64_t(now.st_dev) == read.dev && uint64_t(now.st_ino) == read.ino &&
      ::unlink(file.c_str()) != 0 && errno != ENOENT)
    log().warn("cannot delete corrupt cache entry {}: {}", file, errno_text(errno));
  return std::nullopt;
}

llvm::Error DiskCache::store(const CacheKey &key, const std::string &payload) const {
  if (!enabled_ || !writable_) return llvm::Error::success();
  if (!is_key_hex(key.hex))
    return make_error("cannot store cache key '" + key.hex + "' in " + dir_ + ": expected 64 lowercase hex digits");
  if (auto e = write_file_atomic(entry_path(key), encode_cache_entry(payload), "cache entry")) return e;
  trim(&key);
  return llvm::Error::success();
}

size_t DiskCache::trim(const CacheKey *keep) const {
  if (!enabled_ || !writable_) return 0;
  std::vector<std::string> names;
  int err = 0;
  if (!list_dir(dir_, names, err)) return 0;
  struct Entry {
    std::string file;
    struct timespec used;
    uint64_t bytes;
  };
  std::vector<Entry> entries;
  uint64_t total = 0;
  size_t removed = 0;
  const std::string kept = keep ? keep->hex + kEntrySuffix.str() : std::string();
  for (const std::string &n : names) {
    const std::string file = join(dir_, n);
    struct stat st {};
    if (::lstat(file.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) continue;
    long pid = 0;
    if (is_temp_name(n, pid)) {
      if (temp_is_stale(pid, st) && ::unlink(file.c_str()) == 0) {
        ++removed;
        log().debug("disk cache {}: removed the stale temp file {}", dir_, n);
      }
      continue;
    }
    if (!is_entry_name(n)) continue;
    total += uint64_t(st.st_size);
    if (n != kept) entries.push_back(Entry{file, st.st_mtim, uint64_t(st.st_size)});
  }
  if (max_bytes_ == 0 || total <= max_bytes_) return removed;
  std::sort(entries.begin(), entries.end(), [](const Entry &a, const Entry &b) {
    return a.used.tv_sec != b.used.tv_sec ? a.used.tv_sec < b.used.tv_sec : a.used.tv_nsec < b.used.tv_nsec;
  });
  for (const Entry &e : entries) {
    if (total <= max_bytes_) break;
    if (::unlink(e.file.c_str()) == 0 || errno == ENOENT) {
      total -= std::min(total, e.bytes);
      ++removed;
      log().debug("disk cache {}: evicted {} (least recently used; bound {})", dir_, e.file, format_bytes(max_bytes_));
    }
  }
  return removed;
}

DiskCache::Stats DiskCache::stats() const {
  Stats s;
  std::vector<std::string> names;
  int err = 0;
  if (!list_dir(dir_, names, err)) {
    if (err != ENOENT) log().warn("cannot list cache dir {}: {}", dir_, errno_text(err));
    return s;
  }
  for (const std::string &n : names) {
    struct stat st {};
    long pid = 0;
    if (::lstat(join(dir_, n).c_str(), &st) != 0 || !S_ISREG(st.st_mode)) continue;  // not a symlink's target
    if (is_temp_name(n, pid)) ++s.temps;
    if (!is_entry_name(n)) continue;
    ++s.entries;
    s.bytes += static_cast<uint64_t>(st.st_size);
  }
  return s;
}

llvm::Error DiskCache::clear() const {
  std::vector<std::string> names;
  int err = 0;
  if (!list_dir(dir_, names, err)) {
    if (err == ENOENT) return llvm::Error::success();
    return make_error("cannot clear cache dir " + dir_ + ": " + errno_text(err));
  }
  std::string failures;
  size_t removed = 0;
  for (const std::string &n : names) {
    const std::string file = join(dir_, n);
    struct stat st {};
    if (::lstat(file.c_str(), &st) != 0) continue;
    long pid = 0;
    // An entry-named symlink is removed too (unlink removes the link, never its target).
    bool ours = (is_entry_name(n) && (S_ISREG(st.st_mode) || S_ISLNK(st.st_mode))) ||
                (S_ISREG(st.st_mode) && is_temp_name(n, pid) && temp_is_stale(pid, st));
    if (!ours) continue;
    if (::unlink(file.c_str()) == 0) ++removed;
    else if (errno != ENOENT) failures += "\n  " + file + ": " + errno_text(errno);
  }
  log().debug("cleared {} files from cache dir {}", removed, dir_);
  if (!failures.empty()) return make_error("cannot clear cache dir " + dir_ + ", these files remain:" + failures);
  return llvm::Error::success();
}

}  // namespace magicube
