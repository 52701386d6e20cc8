#include "support/atomic_file.h"

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <ctime>
#include <random>

#include <fcntl.h>
#include <unistd.h>

#include "llvm/ADT/SmallString.h"
#include "llvm/Support/Path.h"

namespace magicube {
namespace {

llvm::Error make_error(const llvm::Twine &msg) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), msg);
}


bool write_all(int fd, const char *data, size_t n, int &err) {
  while (n > 0) {
    ssize_t w = ::write(fd, data, n);
    if (w < 0) {
      if (errno == EINTR) continue;
      err = errno;
      return false;
    }
    data += w;
    n -= size_t(w);
  }
  return true;
}

}  // namespace

std::string random_hex16() {
  static thread_local std::mt19937_64 rng{std::random_device{}() ^ (uint64_t(getpid()) << 32) ^
                                          uint64_t(std::time(nullptr))};
  static const char digits[] = "0123456789abcdef";
  uint64_t r = rng();
  std::string s;
  for (int i = 0; i < 16; ++i, r >>= 4) s += digits[r & 15];
  return s;
}

llvm::Error write_file_atomic(const std::string &path, llvm::StringRef bytes, llvm::StringRef what) {
  std::string tmp;
  int fd = -1, err = 0;
  for (int attempt = 0; attempt < 16 && fd < 0; ++attempt) {
    tmp = path + kAtomicTempInfix.str() + std::to_string(getpid()) + "." + random_hex16();
    fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    err = fd < 0 ? errno : 0;
    if (fd < 0 && err != EEXIST) break;
  }
  if (fd < 0) return make_error("cannot create a temp file for " + what + " " + path + ": " + std::strerror(err));

  const char *step = nullptr;
  if (!write_all(fd, bytes.data(), bytes.size(), err)) step = "write";
  else if (::fsync(fd) != 0) step = "fsync", err = errno;
  if (::close(fd) != 0 && !step) step = "close", err = errno;
  if (!step && ::rename(tmp.c_str(), path.c_str()) != 0) step = "rename", err = errno;
  if (step) {
    ::unlink(tmp.c_str());
    return make_error("cannot write " + what + " " + path + ": " + step + " of " + tmp + " failed: " +
                      std::strerror(err));
  }
  // Make the rename itself durable.
  llvm::SmallString<256> dir(path);
  llvm::sys::path::remove_filename(dir);
  if (dir.empty()) dir = ".";
  int dfd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd >= 0) {
    ::fsync(dfd);
    ::close(dfd);
  }
  return llvm::Error::success();
}

}  // namespace magicube
