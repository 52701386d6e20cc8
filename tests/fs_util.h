// Scoped test helpers shared by the cache and bundle tests: a private temporary directory,
// an environment variable set for one scope, the library log captured at warn and above, and
// whole-file reads and writes.
#pragma once

#include <gtest/gtest.h>
#include <spdlog/sinks/ostream_sink.h>
#include <sys/stat.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <memory>
#include <optional>
#include <sstream>
#include <string>

#include "llvm/ADT/SmallString.h"
#include "llvm/Support/FileSystem.h"
#include "support/log.h"

namespace magicube::testing {

// A fresh directory (mode 0700 whatever the umask), removed with what it holds afterwards,
// even if a test made it unreadable.
class TempDir {
 public:
  explicit TempDir(const char *prefix = "magicube-test") {
    llvm::SmallString<128> p;
    if (std::error_code ec = llvm::sys::fs::createUniqueDirectory(prefix, p))
      ADD_FAILURE() << "cannot create a temp dir: " << ec.message();
    path_ = std::string(p.str());
    ::chmod(path_.c_str(), 0700);  // private whatever the umask: the disk cache refuses shared dirs
  }
  ~TempDir() {
    ::chmod(path_.c_str(), 0700);
    llvm::sys::fs::remove_directories(path_);
  }
  TempDir(const TempDir &) = delete;
  TempDir &operator=(const TempDir &) = delete;
  const std::string &path() const { return path_; }
  std::string file(const std::string &name) const { return path_ + "/" + name; }

 private:
  std::string path_;
};

// Sets (or unsets, with nullptr) an environment variable for one scope.
struct EnvGuard {
  std::string name;
  std::optional<std::string> old;
  EnvGuard(const std::string &n, const char *value) : name(n) {
    if (const char *v = std::getenv(n.c_str())) old = v;
    if (value) ::setenv(n.c_str(), value, 1);
    else ::unsetenv(n.c_str());
  }
  ~EnvGuard() {
    if (old) ::setenv(name.c_str(), old->c_str(), 1);
    else ::unsetenv(name.c_str());
  }
};

// Captures what magicube::log() writes at warn and above for one scope.
struct LogCapture {
  std::ostringstream out;
  std::shared_ptr<spdlog::sinks::ostream_sink_mt> sink = std::make_shared<spdlog::sinks::ostream_sink_mt>(out);
  spdlog::level::level_enum old_level = log().level();
  LogCapture() {
    sink->set_level(spdlog::level::warn);
    log().sinks().push_back(sink);
    if (old_level > spdlog::level::warn) log().set_level(spdlog::level::warn);
  }
  ~LogCapture() {
    auto &sinks = log().sinks();
    sinks.erase(std::remove(sinks.begin(), sinks.end(), sink), sinks.end());
    log().set_level(old_level);
  }
  std::string text() {
    log().flush();
    return out.str();
  }
};

inline std::string read_file(const std::string &path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}
inline void write_file(const std::string &path, const std::string &data) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << data;
}

}  // namespace magicube::testing
