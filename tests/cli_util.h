// Shared by the tests that run the magicube CLI (or magicube-bench) as a child process: the
// binaries' paths and a shell runner (the temp dir and file helpers: tests/fs_util.h).
#pragma once

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include <cstdio>
#include <cstdlib>
#include <string>

#include "llvm/ADT/SmallString.h"
#include "llvm/Support/FileSystem.h"
#include "tests/fs_util.h"

#ifndef MAGICUBE_CLI
#error "MAGICUBE_CLI (the path of the magicube binary) must be defined"
#endif

namespace magicube::testing {

// The binary: $MAGICUBE_CLI_PATH where the build folder has moved (GPU machine), else the
// path CMake compiled in.
inline std::string magicube_cli() {
  const char *env = std::getenv("MAGICUBE_CLI_PATH");
  return env && *env ? env : MAGICUBE_CLI;
}

#ifdef MAGICUBE_BENCH
// The benchmark binary: $MAGICUBE_BENCH_PATH, else magicube-bench beside $MAGICUBE_CLI_PATH
// where that is set, else the path CMake compiled in.
inline std::string magicube_bench_cli() {
  if (const char *env = std::getenv("MAGICUBE_BENCH_PATH"); env && *env) return env;
  if (const char *cli = std::getenv("MAGICUBE_CLI_PATH"); cli && *cli) {
    std::string s = cli;
    size_t slash = s.rfind('/');
    return (slash == std::string::npos ? std::string() : s.substr(0, slash + 1)) + "magicube-bench";
  }
  return MAGICUBE_BENCH;
}
#endif

inline std::string shell_quote(const std::string &s) {
  std::string q = "'";
  for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

struct CliResult {
  int status = -1;     // exit status; -1 when killed by a signal
  std::string output;  // stdout and stderr together
};

// Runs a shell command, stderr folded into stdout.
inline CliResult run_shell(const std::string &cmd) {
  CliResult r;
  FILE *p = popen((cmd + " 2>&1").c_str(), "r");
  if (!p) {
    ADD_FAILURE() << "popen failed: " << cmd;
    return r;
  }
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, p)) > 0) r.output.append(buf, n);
  int st = pclose(p);
  r.status = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
  return r;
}


}  // namespace magicube::testing
