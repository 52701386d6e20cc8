#include "jit/nvrtc.h"

#include <chrono>
#include <cstdlib>
#include <set>
#include <sstream>

#include <nvrtc.h>

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringRef.h"
#include "support/log.h"

namespace magicube {
namespace {

llvm::Error make_error(const std::string &msg) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), msg);
}

llvm::Error api_error(const char *call, nvrtcResult r, const std::string &file_name) {
  return make_error(std::string(call) + " failed for " + file_name + ": " + nvrtcGetErrorString(r));
}

// Destroys the program on every path out of nvrtc_compile.
struct ProgramGuard {
  nvrtcProgram prog = nullptr;
  void reset() {
    if (prog) nvrtcDestroyProgram(&prog);
    prog = nullptr;
  }
  ~ProgramGuard() { reset(); }
};

std::vector<std::string> split_lines(const std::string &text) {
  std::vector<std::string> lines;
  std::string cur;
  std::istringstream in(text);
  while (std::getline(in, cur)) {
    if (!cur.empty() && cur.back() == '\r') cur.pop_back();
    lines.push_back(cur);
  }
  return lines;
}

}  // namespace

std::vector<std::string> nvrtc_base_options(int arch, Emit emit) {
  std::string a = std::to_string(arch);
  return {"-std=c++17", emit == Emit::CUBIN ? "--gpu-architecture=sm_" + a : "--gpu-architecture=compute_" + a};
}

std::string nvrtc_version() {
  int major = 0, minor = 0;
  if (nvrtcVersion(&major, &minor) != NVRTC_SUCCESS) return "unknown";
  return std::to_string(major) + "." + std::to_string(minor);
}

std::string nvrtc_error_context(const std::string &log, const std::string &file_name, const std::string &source,
                                int context) {
  const std::vector<std::string> src = split_lines(source);
  const std::string prefix = file_name + "(";
  std::set<long> shown;  // one excerpt per line, however many errors it has
  std::string out;
  for (const std::string &line : split_lines(log)) {
    llvm::StringRef l(line);
    if (!l.consume_front(prefix)) continue;
    size_t close = l.find("): ");
    long lineno = 0;
    if (close == llvm::StringRef::npos || l.substr(0, close).getAsInteger(10, lineno)) continue;
    if (!l.substr(close + 3).contains("error")) continue;
    if (lineno < 1 || !shown.insert(lineno).second) continue;
    out += line + "\n";
    if (lineno > static_cast<long>(src.size())) {
      out += "      (line " + std::to_string(lineno) + " is past the end of the " + std::to_string(src.size()) +
             "-line source)\n";
      continue;
    }
    long lo = std::max(1L, lineno - context);
    long hi = std::min(static_cast<long>(src.size()), lineno + context);
    for (long i = lo; i <= hi; ++i) {
      std::string num = std::to_string(i);
      out += (i == lineno ? "> " : "  ") + std::string(num.size() < 5 ? 5 - num.size() : 0, ' ') + num + " | " +
             src[i - 1] + "\n";
    }
  }
  return out;
}

llvm::Expected<std::string> nvrtc_compile(const std::string &source, const std::string &file_name, int arch,
                                          Emit emit, const std::vector<std::string> &extra_options, std::string *log_out) {
  const std::string name = file_name.empty() ? "kernel.cu" : file_name;
  if (arch < 10 || arch > 999)
    return make_error("nvrtc_compile of " + name + ": arch " + std::to_string(arch) +
                      " is not a compute capability (expected e.g. 80, 86, 89, 90)");
  const char *what = emit == Emit::CUBIN ? "cubin" : "PTX";
  const std::string target = (emit == Emit::CUBIN ? "sm_" : "compute_") + std::to_string(arch);

  std::vector<std::string> options = nvrtc_base_options(arch, emit);
  options.insert(options.end(), extra_options.begin(), extra_options.end());

  auto t0 = std::chrono::steady_clock::now();
  ProgramGuard guard;
  nvrtcResult r = NVRTC_SUCCESS, compiled = NVRTC_SUCCESS;
  for (;;) {
    guard.reset();
    if ((r = nvrtcCreateProgram(&guard.prog, source.c_str(), name.c_str(), 0, nullptr, nullptr)) != NVRTC_SUCCESS) {
      guard.prog = nullptr;
      return api_error("nvrtcCreateProgram", r, name);
    }
    std::vector<const char *> argv;
    for (const std::string &o : options) argv.push_back(o.c_str());
    compiled = nvrtcCompileProgram(guard.prog, static_cast<int>(argv.size()), argv.data());
    if (compiled != NVRTC_ERROR_INVALID_OPTION) break;
    // An older NVRTC without the compile-time options: the same compile once more without them.
    const size_t before = options.size();
    llvm::erase_if(options, [](const std::string &o) { return o == "-minimal" || o.rfind("--Ofast-compile", 0) == 0; });
    if (options.size() == before) break;
  }

  size_t log_size = 0;
  std::string build_log;
  if ((r = nvrtcGetProgramLogSize(guard.prog, &log_size)) != NVRTC_SUCCESS)
    return api_error("nvrtcGetProgramLogSize", r, name);
  if (log_size > 1) {
    build_log.resize(log_size);
    if ((r = nvrtcGetProgramLog(guard.prog, build_log.data())) != NVRTC_SUCCESS)
      return api_error("nvrtcGetProgramLog", r, name);
    while (!build_log.empty() && build_log.back() == '\0') build_log.pop_back();
  }

  if (compiled != NVRTC_SUCCESS) {
    std::string opts;
    for (const std::string &o : options) opts += " " + o;
    std::string msg = "NVRTC failed to compile " + name + " for " + target + " (" + nvrtcGetErrorString(compiled) +
                      "), options:" + opts + "\n" + build_log;
    if (msg.back() != '\n') msg += "\n";
    std::string ctx = nvrtc_error_context(build_log, name, source);
    if (!ctx.empty()) msg += "source around the errors:\n" + ctx;
    while (!msg.empty() && msg.back() == '\n') msg.pop_back();
    return make_error(msg);
  }
  if (!build_log.empty()) log().debug("nvrtc log for {} ({}):\n{}", name, target, build_log);
  if (log_out) *log_out = build_log;

  std::string image;
  size_t size = 0;
  if (emit == Emit::CUBIN) {
    if ((r = nvrtcGetCUBINSize(guard.prog, &size)) != NVRTC_SUCCESS) return api_error("nvrtcGetCUBINSize", r, name);
    image.resize(size);
    if (size && (r = nvrtcGetCUBIN(guard.prog, image.data())) != NVRTC_SUCCESS)
      return api_error("nvrtcGetCUBIN", r, name);
  } else {
    if ((r = nvrtcGetPTXSize(guard.prog, &size)) != NVRTC_SUCCESS) return api_error("nvrtcGetPTXSize", r, name);
    image.resize(size);
    if (size && (r = nvrtcGetPTX(guard.prog, image.data())) != NVRTC_SUCCESS) return api_error("nvrtcGetPTX", r, name);
    while (!image.empty() && image.back() == '\0') image.pop_back();
  }
  if (image.empty()) return make_error("NVRTC produced an empty " + std::string(what) + " for " + name + " (" + target + ")");

  double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  log().debug("nvrtc compiled {} to {} for {} in {:.1f} ms ({} bytes)", name, what, target, ms, image.size());
  return image;
}

}  // namespace magicube
