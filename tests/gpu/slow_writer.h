// A kernel for tests of programmatic dependent launch: one warp lets the stream's next kernel
// launch at once (griddepcontrol.launch_dependents on sm_90), spins about `spin` clocks, then
// copies `bytes` from src to dst. A kernel after it that reads dst before waiting for it
// (griddepcontrol.wait) reads what was there before.
#pragma once

#include <string>

#include "jit/nvrtc.h"
#include "runtime/cuda_driver.h"

namespace magicube::testing {

class SlowWriter {
 public:
  static llvm::Expected<SlowWriter> load(const Context &ctx) {
    const std::string code =
        "extern \"C\" __global__ void " + std::string(kName) +
        "(const unsigned char *src, unsigned char *dst, unsigned long long bytes, long long spin) {\n"
        "#if __CUDA_ARCH__ >= 900\n"
        "  asm volatile(\"griddepcontrol.launch_dependents;\\n\" ::);\n"
        "#endif\n"
        "  const long long t0 = clock64();\n"
        "  while (clock64() - t0 < spin) {}\n"
        "  for (unsigned long long i = threadIdx.x; i < bytes; i += blockDim.x) dst[i] = src[i];\n"
        "}\n";
    auto cubin = nvrtc_compile(code, "slow_writer.cu", ctx.compute_capability(), Emit::CUBIN, {});
    if (!cubin) return cubin.takeError();
    auto mod = Module::load(*cubin);
    if (!mod) return mod.takeError();
    auto fn = mod->function(kName);
    if (!fn) return fn.takeError();
    return SlowWriter(std::move(*mod), *fn);
  }
  // Queues the copy on `stream`: one warp on one SM, so a following grid's blocks fit beside it.
  llvm::Error launch(CUdeviceptr src, CUdeviceptr dst, unsigned long long bytes, CUstream stream = nullptr,
                     long long spin = 200000 /* ~0.1 ms at H100 clocks */) const {
    void *args[] = {&src, &dst, &bytes, &spin};
    return magicube::launch(fn_, Dim3{1, 1, 1}, Dim3{32, 1, 1}, 0, stream, args);
  }

 private:
  static constexpr const char *kName = "magicube_test_slow_writer";
  SlowWriter(Module mod, CUfunction fn) : mod_(std::move(mod)), fn_(fn) {}
  Module mod_;
  CUfunction fn_;
};

}  // namespace magicube::testing
