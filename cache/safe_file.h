// Reading files that another local user may have planted or replaced: the kernel cache's
// entries and the tuning records. A file is read only if it is a regular file reached
// without following a symlink at its last component, opened without blocking (a FIFO
// cannot hang the reader), and no larger than a bound; a directory is used only if it is
// private to this user (owned by the effective uid, writable by nobody else).
#pragma once

#include <cstdint>
#include <string>

#include "llvm/Support/Error.h"

namespace magicube {

struct SafeRead {
  enum class Status {
    Ok,       // `data` holds the file
    Missing,  // no such file (a plain miss: nothing to report)
    Refused,  // a symlink, a special file, or larger than the bound (`why` says which)
    Failed,   // open or read failed otherwise (`why` holds strerror)
  };
  Status status = Status::Missing;
  std::string data;
  std::string why;
  uint64_t dev = 0, ino = 0;  // of the opened file (Ok, or Refused after the open)
};

// Reads `path` as described above; files over `max_bytes` are Refused without reading them.
SafeRead read_regular_file(const std::string &path, uint64_t max_bytes);

// The same checks without reading: on Ok, `fd` is the open file (O_RDONLY, close-on-exec;
// the caller closes it) and `size`, `mode` and `uid` its fstat's. For files read in parts
// (the AOT bundles: the index at open, one kernel at a time later).
struct SafeOpen {
  SafeRead::Status status = SafeRead::Status::Missing;
  int fd = -1;
  uint64_t size = 0;
  unsigned mode = 0;
  unsigned uid = 0;
  std::string why;
  uint64_t dev = 0, ino = 0;
};
SafeOpen open_regular_file(const std::string &path, uint64_t max_bytes);

// Success when `dir` is a directory owned by the effective uid and not writable by group or
// others; otherwise an error naming the directory, its owner and mode, and the fix. A
// missing directory is an error too (ENOENT in its message).
llvm::Error check_private_dir(const std::string &dir);

}  // namespace magicube
