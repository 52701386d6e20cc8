#include "jit/bundle.h"

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <utility>

#include <dlfcn.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cache/safe_file.h"
#include "llvm/ADT/SmallString.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/SHA256.h"
#include "support/atomic_file.h"
#include "support/hash.h"
#include "support/log.h"
#include "support/text.h"

namespace magicube {
namespace {

constexpr char kMagic[8] = {'M', 'C', 'B', 'U', 'N', 'D', 'L', 'E'};

llvm::Error make_error(const std::string &msg) { return llvm::createStringError(llvm::inconvertibleErrorCode(), msg); }

void put_u32(std::string &out, uint32_t v) {
  for (int i = 0; i < 4; ++i) out += char((v >> (8 * i)) & 0xff);
}
void put_u64(std::string &out, uint64_t v) {
  for (int i = 0; i < 8; ++i) out += char((v >> (8 * i)) & 0xff);
}
void set_u64(std::string &out, size_t at, uint64_t v) {
  for (int i = 0; i < 8; ++i) out[at + i] = char((v >> (8 * i)) & 0xff);
}
uint64_t get_le(llvm::StringRef b, size_t at, int bytes) {
  uint64_t v = 0;
  for (int i = 0; i < bytes; ++i) v |= uint64_t(uint8_t(b[at + i])) << (8 * i);
  return v;
}

// SHA-256 of header bytes 0..31 and bytes 64..index_end: what the header's hash covers.
std::string header_hash(llvm::StringRef file, uint64_t index_end) {
  llvm::SHA256 h;
  h.update(file.substr(0, 32));
  h.update(file.substr(Bundle::kHeaderSize, index_end - Bundle::kHeaderSize));
  return h.final().str();
}

// A bounds-checked reader over the meta and index.
struct Cursor {
  llvm::StringRef data;
  size_t at = 0;
  std::string what;  // set on the first failure
  bool ok() const { return what.empty(); }
  bool need(size_t n, const char *field) {
    if (!ok()) return false;
    if (n > data.size() - at) {
      what = std::string("the index ends inside ") + field;
      return false;
    }
    return true;
  }
  uint64_t u(int bytes, const char *field) {
    if (!need(size_t(bytes), field)) return 0;
    uint64_t v = get_le(data, at, bytes);
    at += size_t(bytes);
    return v;
  }
  std::string raw(size_t n, const char *field) {
    if (!need(n, field)) return {};
    std::string s = data.substr(at, n).str();
    at += n;
    return s;
  }
  std::string str(const char *field) {
    uint64_t n = u(4, field);
    if (ok() && n > Bundle::kMaxStringBytes) {
      what = std::string(field) + " is " + std::to_string(n) + " bytes, more than the " +
             std::to_string(Bundle::kMaxStringBytes) + "-byte bound";
      return {};
    }
    return raw(size_t(n), field);
  }
};

// The origin of a bundle: a file another local user could have written is refused, as a
// shared cache directory is (cache/safe_file.h): the file must be owned by this user or root
// and writable by nobody else, and its directory owned by this user or root and writable by
// nobody else unless sticky (then others cannot replace a file they do not own).
llvm::Error check_bundle_origin(const std::string &path, const SafeOpen &file) {
  const uid_t me = ::geteuid();
  if (file.uid != me && file.uid != 0)
    return make_error("is owned by uid " + std::to_string(file.uid) + ", neither this user (uid " + std::to_string(me) +
                      ") nor root: another user could plant kernels in it");
  if (file.mode & (S_IWGRP | S_IWOTH))
    return make_error("is writable by " + std::string((file.mode & S_IWOTH) ? "every user" : "its group") +
                      ": another user could plant kernels in it (chmod go-w it to use it)");
  llvm::SmallString<256> dir(path);
  llvm::sys::path::remove_filename(dir);
  if (dir.empty()) dir = ".";
  struct stat ds {};
  if (::stat(dir.c_str(), &ds) != 0)
    return make_error(std::string("its directory cannot be examined: ") + std::strerror(errno));
  if (ds.st_uid != me && ds.st_uid != 0 && !(ds.st_mode & S_ISVTX))
    return make_error("is in " + std::string(dir.str()) + ", a directory of uid " + std::to_string(ds.st_uid) +
                      ": its owner could replace the bundle");
  if ((ds.st_mode & (S_IWGRP | S_IWOTH)) && !(ds.st_mode & S_ISVTX))
    return make_error("is in " + std::string(dir.str()) + ", a directory others can write: they could replace it");
  return llvm::Error::success();
}

// Reads `n` bytes at `offset` of `fd` into `out`; false (errno, or 0 for a short file) on failure.
bool pread_all(int fd, uint64_t offset, uint64_t n, std::string &out) {
  out.resize(size_t(n));
  size_t have = 0;
  while (have < n) {
    ssize_t got = ::pread(fd, &out[have], size_t(n) - have, off_t(offset + have));
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) {
      if (got == 0) errno = 0;
      return false;
    }
    have += size_t(got);
  }
  return true;
}

struct FdGuard {
  int fd = -1;
  ~FdGuard() {
    if (fd >= 0) ::close(fd);
  }
  int release() { return std::exchange(fd, -1); }
};

}  // namespace

llvm::Expected<std::string> encode_bundle(const BundleMeta &meta, llvm::ArrayRef<BundleInput> entries) {
  if (entries.size() > Bundle::kMaxEntries)
    return make_error("a bundle holds at most " + std::to_string(Bundle::kMaxEntries) + " kernels, not " +
                      std::to_string(entries.size()));
  for (const std::string *s : {&meta.generator, &meta.nvrtc, &meta.note})
    if (s->size() > Bundle::kMaxStringBytes) return make_error("a bundle's meta string is too long: " + quoted(*s));
  llvm::StringMap<bool> seen;
  std::string index;
  for (const BundleInput &e : entries) {
    if (!is_key_hex(e.key.hex)) return make_error("bundle entry " + quoted(e.label) + ": malformed cache key " + quoted(e.key.hex));
    if (!seen.insert({e.key.hex, true}).second)
      return make_error("bundle entry " + quoted(e.label) + ": its cache key " + e.key.hex + " is already in the bundle");
    if (e.label.size() > Bundle::kMaxStringBytes) return make_error("bundle entry label too long: " + quoted(e.label));
    if (e.cubin.empty() || e.cubin.size() > Bundle::kMaxCubinBytes)
      return make_error("bundle entry " + quoted(e.label) + ": a cubin of " + std::to_string(e.cubin.size()) + " bytes");
    if (e.arch < 10 || e.arch > 999) return make_error("bundle entry " + quoted(e.label) + ": arch " + std::to_string(e.arch));
  }
  std::string body;
  for (const std::string *s : {&meta.generator, &meta.nvrtc, &meta.note}) {
    put_u32(body, uint32_t(s->size()));
    body += *s;
  }
  std::vector<size_t> offset_at;  // where each entry's offset goes in `body`
  for (const BundleInput &e : entries) {
    body += llvm::fromHex(e.key.hex);
    body += sha256(e.cubin);
    offset_at.push_back(body.size());
    put_u64(body, 0);
    put_u64(body, e.cubin.size());
    put_u32(body, uint32_t(e.arch));
    put_u32(body, uint32_t(e.label.size()));
    body += e.label;
  }
  const uint64_t index_end = Bundle::kHeaderSize + body.size();
  uint64_t at = index_end;
  for (size_t i = 0; i < entries.size(); ++i) {
    set_u64(body, offset_at[i], at);
    at += entries[i].cubin.size();
  }
  if (at > Bundle::kMaxBundleBytes)
    return make_error("the bundle would be " + format_bytes(at) + ", more than the " + format_bytes(Bundle::kMaxBundleBytes) +
                      " a loader reads");
  std::string out(kMagic, sizeof kMagic);
  put_u32(out, Bundle::kFormatVersion);
  put_u32(out, uint32_t(entries.size()));
  put_u64(out, at);
  put_u64(out, index_end);
  out.append(32, '\0');
  out += body;
  out.replace(32, 32, header_hash(out, index_end));
  for (const BundleInput &e : entries) out += e.cubin;
  return out;
}

llvm::Error write_bundle(const std::string &path, const BundleMeta &meta, llvm::ArrayRef<BundleInput> entries) {
  auto bytes = encode_bundle(meta, entries);
  if (!bytes) return bytes.takeError();
  return write_file_atomic(path, *bytes, "AOT bundle");
}

Bundle::~Bundle() {
  if (fd_ >= 0) ::close(fd_);
}

llvm::Error Bundle::read_index(llvm::StringRef b, uint64_t size) {
  auto bad = [&](const std::string &why) { return make_error(why); };
  if (size < kHeaderSize)
    return bad("truncated: " + std::to_string(size) + " bytes, shorter than the " + std::to_string(kHeaderSize) +
               "-byte header");
  if (b.substr(0, sizeof kMagic) != llvm::StringRef(kMagic, sizeof kMagic))
    return bad("not a Magicube kernel bundle (bad magic " + quoted(b.substr(0, sizeof kMagic)) + ", expected 'MCBUNDLE')");
  const uint64_t version = get_le(b, 8, 4), count = get_le(b, 12, 4), announced = get_le(b, 16, 8),
                 index_end = get_le(b, 24, 8);
  if (version != kFormatVersion)
    return bad("format version " + std::to_string(version) + ", this library reads version " +
               std::to_string(kFormatVersion));
  if (announced != size)
    return bad(announced > size ? "truncated: " + std::to_string(size) + " of the " + std::to_string(announced) +
                                      " bytes its header announces"
                                : std::to_string(size) + " bytes, more than the " + std::to_string(announced) +
                                      " its header announces");
  if (count > kMaxEntries) return bad(std::to_string(count) + " entries, more than the bound of " + std::to_string(kMaxEntries));
  if (index_end < kHeaderSize || index_end > size) return bad("its index end " + std::to_string(index_end) + " is outside the file");
  if (b.size() < index_end) return bad("its index could not be read whole");
  if (header_hash(b, index_end) != b.substr(32, 32)) return bad("the SHA-256 of its header and index does not match");

  Cursor c{b.substr(0, index_end), kHeaderSize, {}};
  meta_.generator = c.str("the generator version");
  meta_.nvrtc = c.str("the NVRTC version");
  meta_.note = c.str("the note");
  uint64_t next = index_end;  // payloads are back to back, in index order
  for (uint64_t i = 0; i < count && c.ok(); ++i) {
    BundleEntry e;
    e.key = to_hex(c.raw(32, "an entry's key"));
    e.sha256 = c.raw(32, "an entry's SHA-256");
    e.offset = c.u(8, "an entry's offset");
    e.size = c.u(8, "an entry's size");
    const uint64_t arch = c.u(4, "an entry's arch");
    e.arch = arch > 999 ? 0 : int(arch);
    e.label = c.str("an entry's label");
    if (!c.ok()) break;
    const std::string which = "entry " + std::to_string(i) + " (" + quoted(e.label) + ")";
    if (e.arch < 10 || e.arch > 999) return bad(which + " has arch " + std::to_string(e.arch) + ", not a compute capability");
    if (e.offset != next || e.size == 0 || e.size > kMaxCubinBytes || e.size > size - e.offset)
      return bad(which + " has offset " + std::to_string(e.offset) + " and size " + std::to_string(e.size) +
                 ", not the next payload inside the file");
    next = e.offset + e.size;
    if (!by_key_.insert({e.key, entries_.size()}).second) return bad(which + " repeats the key " + e.key);
    entries_.push_back(std::move(e));
  }
  if (!c.ok()) return bad(c.what);
  if (c.at != index_end) return bad("its index ends at byte " + std::to_string(c.at) + ", not at the header's " + std::to_string(index_end));
  if (next != size) return bad("its payloads end at byte " + std::to_string(next) + ", not at the end of the file (" + std::to_string(size) + ")");
  size_ = size;
  return llvm::Error::success();
}

llvm::Expected<std::unique_ptr<Bundle>> Bundle::parse(std::string bytes, std::string name) {
  auto bundle = std::unique_ptr<Bundle>(new Bundle());
  if (auto e = bundle->read_index(bytes, bytes.size())) return e;
  bundle->name_ = std::move(name);
  bundle->data_ = std::move(bytes);
  return bundle;
}

llvm::Expected<std::unique_ptr<Bundle>> Bundle::open(const std::string &path) {
  SafeOpen file = open_regular_file(path, kMaxBundleBytes);
  switch (file.status) {
    case SafeRead::Status::Ok: break;
    case SafeRead::Status::Missing: return make_error("does not exist");
    case SafeRead::Status::Refused: return make_error(file.why);
    case SafeRead::Status::Failed: return make_error("cannot be read: " + file.why);
  }
  FdGuard fd{file.fd};
  if (auto e = check_bundle_origin(path, file)) return e;
  // Only the header and the index are read now (a few KB); each cubin when it is asked for.
  uint64_t head_len = std::min<uint64_t>(file.size, kHeaderSize);
  std::string head;
  if (!pread_all(fd.fd, 0, head_len, head))
    return make_error(std::string("cannot be read: ") + (errno ? std::strerror(errno) : "it shrank while being read"));
  if (head_len == kHeaderSize) {
    const uint64_t index_end = get_le(head, 24, 8);
    if (index_end > kHeaderSize && index_end <= file.size && !pread_all(fd.fd, 0, index_end, head))
      return make_error(std::string("cannot be read: ") + (errno ? std::strerror(errno) : "it shrank while being read"));
  }
  auto bundle = std::unique_ptr<Bundle>(new Bundle());
  if (auto e = bundle->read_index(head, file.size)) return e;
  bundle->name_ = path;
  bundle->fd_ = fd.release();
  return bundle;
}

llvm::Expected<std::string> Bundle::payload(const BundleEntry &e) const {
  if (fd_ < 0) return llvm::StringRef(data_).substr(e.offset, e.size).str();
  std::string out;
  if (!pread_all(fd_, e.offset, e.size, out))
    return make_error("entry " + quoted(e.label) + " cannot be read" +
                      (errno ? std::string(": ") + std::strerror(errno) : std::string(": the file shrank since it was opened")));
  return out;
}

llvm::Error Bundle::check_versions(llvm::StringRef generator, llvm::StringRef nvrtc) const {
  if (meta_.generator != generator)
    return make_error("it was built by generator " + quoted(meta_.generator) + ", this library is " + quoted(generator) +
                      " (rebuild it: magicube cache warm)");
  if (meta_.nvrtc != nvrtc)
    return make_error("its kernels were compiled by " + quoted(meta_.nvrtc) + ", this process has " + quoted(nvrtc) +
                      " (rebuild it: magicube cache warm)");
  return llvm::Error::success();
}

llvm::Expected<std::optional<std::string>> Bundle::find(const CacheKey &key) const {
  auto it = by_key_.find(key.hex);
  if (it == by_key_.end()) return std::optional<std::string>();
  const BundleEntry &e = entries_[it->second];
  auto cubin = payload(e);
  if (!cubin) return cubin.takeError();
  if (sha256(*cubin) != e.sha256)
    return make_error("entry " + quoted(e.label) + " (key " + e.key + ") does not match its SHA-256");
  return std::optional<std::string>(std::move(*cubin));
}

llvm::Error Bundle::verify_all() const {
  for (const BundleEntry &e : entries_) {
    auto cubin = payload(e);
    if (!cubin) return cubin.takeError();
    if (sha256(*cubin) != e.sha256)
      return make_error("entry " + quoted(e.label) + " (key " + e.key + ") does not match its SHA-256");
  }
  return llvm::Error::success();
}

BundlePaths bundle_paths_from_env() {
  BundlePaths p;
  if (const char *v = std::getenv("MAGICUBE_BUNDLE")) {
    p.given = true;
    llvm::StringRef s(v);
    if (s == "0") return p;
    llvm::SmallVector<llvm::StringRef, 4> parts;
    s.split(parts, ':', -1, /*KeepEmpty=*/false);
    for (llvm::StringRef part : parts) p.paths.push_back(part.str());
    return p;
  }
  std::string def = default_bundle_path();
  if (!def.empty() && llvm::sys::fs::exists(def)) p.paths.push_back(def);
  return p;
}

std::string default_bundle_path() {
  Dl_info info{};
  if (::dladdr(reinterpret_cast<void *>(&default_bundle_path), &info) == 0 || !info.dli_fname || !*info.dli_fname)
    return {};
  // The executable itself is named by argv[0], which may be relative or bare: ask the kernel.
  std::string self = info.dli_fname;
  if (!llvm::sys::path::is_absolute(self)) {
    static int anchor;
    self = llvm::sys::fs::getMainExecutable(nullptr, &anchor);
    if (self.empty()) return {};
  }
  // <prefix>/lib, <prefix>/bin, or a multiarch <prefix>/lib/x86_64-linux-gnu: the first
  // <ancestor>/share/magicube/kernels.mcbundle that exists, else the nearest one's path.
  llvm::SmallString<256> dir(self);
  llvm::sys::path::remove_filename(dir);
  std::string first;
  for (int up = 0; up < 2 && !dir.empty(); ++up) {
    llvm::sys::path::remove_filename(dir);
    llvm::SmallString<256> p(dir);
    llvm::sys::path::append(p, "share", "magicube", kBundleFileName);
    if (first.empty()) first = std::string(p.str());
    if (llvm::sys::fs::exists(p)) return std::string(p.str());
  }
  return first;
}

std::vector<std::shared_ptr<const Bundle>> open_bundles(const BundlePaths &paths, llvm::StringRef generator,
                                                        llvm::StringRef nvrtc) {
  std::vector<std::shared_ptr<const Bundle>> out;
  for (const std::string &path : paths.paths) {
    auto b = Bundle::open(path);
    if (b) {
      if (llvm::Error e = (*b)->check_versions(generator, nvrtc)) {
        warn_once("bundle:" + path, "AOT kernel bundle " + path + " refused: " + llvm::toString(std::move(e)) +
                                        "; its kernels come from the disk cache or NVRTC");
        continue;
      }
      log().debug("AOT kernel bundle {}: {} kernels ({}; {})", path, (*b)->entries().size(), format_bytes((*b)->bytes()),
                  (*b)->meta().note);
      out.push_back(std::shared_ptr<const Bundle>(std::move(*b)));
      continue;
    }
    std::string why = llvm::toString(b.takeError());
    if (why == "does not exist" && !paths.given) continue;  // the default, not installed: no bundle
    warn_once("bundle:" + path, "AOT kernel bundle " + path + " refused: " + why +
                                    "; its kernels come from the disk cache or NVRTC");
  }
  return out;
}

}  // namespace magicube
