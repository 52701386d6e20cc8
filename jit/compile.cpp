#include "jit/compile.h"

#include <nvJitLink.h>

#include "jit/nvrtc.h"

namespace magicube {

namespace {

llvm::Error fail(const std::string &what) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), what);
}

std::string link_log(nvJitLinkHandle h, bool error) {
  size_t n = 0;
  if ((error ? nvJitLinkGetErrorLogSize(h, &n) : nvJitLinkGetInfoLogSize(h, &n)) != NVJITLINK_SUCCESS || n <= 1)
    return "";
  std::string log(n, '\0');
  if ((error ? nvJitLinkGetErrorLog(h, log.data()) : nvJitLinkGetInfoLog(h, log.data())) != NVJITLINK_SUCCESS)
    return "";
  while (!log.empty() && (log.back() == '\0' || log.back() == '\n')) log.pop_back();
  return log;
}

llvm::Expected<std::string> ptx_to_cubin(const std::string &ptx, const std::string &file_name, int arch,
                                         std::string *log_out) {
  const std::string arch_opt = "-arch=sm_" + std::to_string(arch);
  const char *opts[] = {arch_opt.c_str()};
  nvJitLinkHandle h = nullptr;
  if (nvJitLinkResult r = nvJitLinkCreate(&h, 1, opts); r != NVJITLINK_SUCCESS)
    return fail("nvJitLink: cannot create a link for " + arch_opt + " (error " + std::to_string(int(r)) + ")");
  struct Destroy {
    nvJitLinkHandle *h;
    ~Destroy() { nvJitLinkDestroy(h); }
  } destroy{&h};
  if (nvJitLinkAddData(h, NVJITLINK_INPUT_PTX, ptx.data(), ptx.size(), file_name.c_str()) != NVJITLINK_SUCCESS ||
      nvJitLinkComplete(h) != NVJITLINK_SUCCESS)
    return fail("ptxas (nvJitLink) failed on " + file_name + " for sm_" + std::to_string(arch) + ":\n" +
                link_log(h, true));
  size_t size = 0;
  if (nvJitLinkGetLinkedCubinSize(h, &size) != NVJITLINK_SUCCESS || size == 0)
    return fail("nvJitLink: no cubin for " + file_name);
  std::string cubin(size, '\0');
  if (nvJitLinkGetLinkedCubin(h, cubin.data()) != NVJITLINK_SUCCESS) return fail("nvJitLink: cannot read the cubin of " + file_name);
  if (log_out) *log_out = link_log(h, false);
  return cubin;
}

}  // namespace

llvm::Expected<std::string> compile_cubin(SourceKind kind, const std::string &text, const std::string &file_name,
                                          int arch, const std::vector<std::string> &nvrtc_options, std::string *log) {
  if (kind == SourceKind::Cuda) return nvrtc_compile(text, file_name, arch, Emit::CUBIN, nvrtc_options, log);
  if (!nvrtc_options.empty())
    return fail("compile " + file_name + ": PTX takes no NVRTC options (got " + nvrtc_options.front() + ")");
  return ptx_to_cubin(text, file_name, arch, log);
}

std::string nvjitlink_version() {
  unsigned major = 0, minor = 0;
  if (nvJitLinkVersion(&major, &minor) != NVJITLINK_SUCCESS) return "unknown";
  return std::to_string(major) + "." + std::to_string(minor);
}

std::string toolchain_version() {
  static const std::string v = "nvrtc " + nvrtc_version() + ", nvjitlink " + nvjitlink_version();
  return v;
}

}  // namespace magicube
