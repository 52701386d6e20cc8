#include "cache/safe_file.h"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "support/text.h"

namespace magicube {

namespace {

const char *file_kind(mode_t m) {
  if (S_ISDIR(m)) return "a directory";
  if (S_ISFIFO(m)) return "a FIFO";
  if (S_ISCHR(m)) return "a character device";
  if (S_ISBLK(m)) return "a block device";
  if (S_ISSOCK(m)) return "a socket";
  if (S_ISLNK(m)) return "a symlink";
  return "not a regular file";
}

std::string mode_text(mode_t m) {
  char buf[8];
  std::snprintf(buf, sizeof buf, "%04o", unsigned(m & 07777));
  return buf;
}

}  // namespace

SafeOpen open_regular_file(const std::string &path, uint64_t max_bytes) {
  SafeOpen r;
  // O_NOFOLLOW: a symlink fails with ELOOP; O_NONBLOCK: opening a FIFO does not wait for a
  // writer (and we refuse it below before any read).
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY);
  if (fd < 0) {
    int e = errno;
    if (e == ENOENT || e == ENOTDIR) {
      r.status = SafeRead::Status::Missing;
      return r;
    }
    struct stat st {};
    if (e == ELOOP && ::lstat(path.c_str(), &st) == 0 && S_ISLNK(st.st_mode)) {
      r.status = SafeRead::Status::Refused;
      r.why = "is a symlink (not followed)";
      return r;
    }
    r.status = SafeRead::Status::Failed;
    r.why = std::strerror(e);
    return r;
  }
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    r.status = SafeRead::Status::Failed;
    r.why = std::strerror(errno);
    ::close(fd);
    return r;
  }
  r.dev = uint64_t(st.st_dev);
  r.ino = uint64_t(st.st_ino);
  r.mode = unsigned(st.st_mode);
  r.uid = unsigned(st.st_uid);
  r.size = uint64_t(st.st_size);
  if (!S_ISREG(st.st_mode)) {
    r.status = SafeRead::Status::Refused;
    r.why = std::string("is ") + file_kind(st.st_mode) + ", not a regular file";
    ::close(fd);
    return r;
  }
  if (uint64_t(st.st_size) > max_bytes) {
    r.status = SafeRead::Status::Refused;
    r.why = "is " + format_bytes(uint64_t(st.st_size)) + ", larger than the " + format_bytes(max_bytes) + " bound";
    ::close(fd);
    return r;
  }
  r.status = SafeRead::Status::Ok;
  r.fd = fd;
  return r;
}

SafeRead read_regular_file(const std::string &path, uint64_t max_bytes) {
  SafeRead r;
  SafeOpen o = open_regular_file(path, max_bytes);
  r.status = o.status;
  r.why = o.why;
  r.dev = o.dev;
  r.ino = o.ino;
  if (o.status != SafeRead::Status::Ok) return r;
  const int fd = o.fd;
  // Read at most max_bytes + 1: a file that grew past the bound since fstat is refused too.
  r.data.resize(size_t(o.size));
  size_t have = 0;
  for (;;) {
    if (have == r.data.size()) {
      if (r.data.size() > max_bytes) break;
      r.data.resize(std::min<uint64_t>(max_bytes + 1, std::max<uint64_t>(r.data.size() * 2, 4096)));
    }
    ssize_t n = ::read(fd, &r.data[have], r.data.size() - have);
    if (n < 0) {
      if (errno == EINTR) continue;
      r.status = SafeRead::Status::Failed;
      r.why = std::strerror(errno);
      r.data.clear();
      ::close(fd);
      return r;
    }
    if (n == 0) break;
    have += size_t(n);
  }
  ::close(fd);
  r.data.resize(have);
  if (have > max_bytes) {
    r.status = SafeRead::Status::Refused;
    r.why = "grew past the " + format_bytes(max_bytes) + " bound while being read";
    r.data.clear();
    return r;
  }
  r.status = SafeRead::Status::Ok;
  return r;
}

llvm::Error check_private_dir(const std::string &dir) {
  auto fail = [&](const std::string &why) {
    return llvm::createStringError(llvm::inconvertibleErrorCode(), "cache dir " + dir + " " + why);
  };
  struct stat st {};
  if (::stat(dir.c_str(), &st) != 0) return fail(std::string("cannot be examined: ") + std::strerror(errno));
  if (!S_ISDIR(st.st_mode)) return fail("is not a directory");
  const uid_t me = ::geteuid();
  if (st.st_uid != me)
    return fail("is owned by uid " + std::to_string(st.st_uid) + ", not by this user (uid " + std::to_string(me) +
                "): another user could plant kernels in it; refusing it (use a directory of your own, e.g. "
                "MAGICUBE_CACHE_DIR=~/.cache/magicube)");
  if (st.st_mode & (S_IWGRP | S_IWOTH))
    return fail("has mode " + mode_text(st.st_mode) + ", writable by " +
                ((st.st_mode & S_IWOTH) ? std::string("every user") : std::string("its group")) +
                ": another user could plant kernels in it; refusing it (chmod go-w " + dir + " to use it)");
  return llvm::Error::success();
}

}  // namespace magicube
