// Fault-injection helpers shared by the cache and tuning-store tests: run a check in a child
// process (with a deadline, so a hang fails the test instead of blocking it; optionally as
// an unprivileged user, so permission checks bite when the tests run as root).
#pragma once

#include <gtest/gtest.h>

#include <chrono>
#include <csignal>
#include <functional>
#include <string>
#include <thread>

#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

namespace magicube::testing {

// The uid and gid `in_child(..., unprivileged = true)` runs as when the tests run as root.
inline constexpr uid_t kUnprivilegedId = 65534;  // "nobody"

// Runs `fn` in a forked child and returns what it returned ("" = passed), or why the child
// failed: "timed out after N s" (it is killed), "killed by signal N", "exit status N". With
// `unprivileged` and euid 0, the child first switches to kUnprivilegedId.
inline std::string in_child(const std::function<std::string()> &fn, int timeout_s = 20, bool unprivileged = false) {
  int fds[2];
  if (::pipe(fds) != 0) return "pipe failed";
  pid_t pid = ::fork();
  if (pid < 0) return "fork failed";
  if (pid == 0) {
    ::close(fds[0]);
    std::string out;
    if (unprivileged && ::geteuid() == 0 && (::setgid(kUnprivilegedId) != 0 || ::setuid(kUnprivilegedId) != 0))
      out = "cannot switch to uid " + std::to_string(kUnprivilegedId);
    else
      out = fn();
    for (size_t done = 0; done < out.size();) {
      ssize_t w = ::write(fds[1], out.data() + done, out.size() - done);
      if (w <= 0) break;
      done += size_t(w);
    }
    ::_exit(0);
  }
  ::close(fds[1]);
  int status = 0;
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(timeout_s);
  bool timed_out = false;
  while (::waitpid(pid, &status, WNOHANG) == 0) {
    if (std::chrono::steady_clock::now() > deadline) {
      ::kill(pid, SIGKILL);
      ::waitpid(pid, &status, 0);
      timed_out = true;
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  std::string got;
  char buf[4096];
  ssize_t n;
  while ((n = ::read(fds[0], buf, sizeof buf)) > 0) got.append(buf, size_t(n));
  ::close(fds[0]);
  if (timed_out) return "timed out after " + std::to_string(timeout_s) + " s" + (got.empty() ? "" : ": " + got);
  if (WIFSIGNALED(status)) return "killed by signal " + std::to_string(WTERMSIG(status));
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) return "exit status " + std::to_string(WEXITSTATUS(status));
  return got;
}

}  // namespace magicube::testing
