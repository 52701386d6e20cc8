#include "runtime/helper_kernel.h"

#include <cstdio>
#include <map>
#include <memory>
#include <mutex>

#include "cache/cache_key.h"
#include "jit/compile_cache.h"
#include "jit/nvrtc.h"
#include "runtime/cuda_driver.h"
#include "support/hash.h"

namespace magicube {

namespace {
struct Loaded {
  std::shared_ptr<Module> module;
  CUfunction fn = nullptr;
};
}  // namespace

llvm::Expected<CUfunction> helper_function(const Context &ctx, const std::string &name,
                                           llvm::function_ref<std::string()> source_fn,
                                           const std::vector<std::string> &options) {
  static std::mutex mu;
  static auto &loaded = *new std::map<std::pair<CUcontext, std::string>, Loaded>();
  std::lock_guard<std::mutex> lock(mu);
  auto key = std::make_pair(ctx.get(), name);
  if (auto it = loaded.find(key); it != loaded.end()) return it->second.fn;
  const std::string source = source_fn();
  const int arch = ctx.compute_capability();
  std::string opts;
  for (const std::string &o : options) opts += o + "\n";
  CacheKey ck = make_cache_key("magicube-helper-2", source, opts, arch, nvrtc_version());
  auto cubin = CompileCache::process().get_cubin(
      ck, arch, [&]() -> llvm::Expected<std::string> { return source; }, name + ".cu", options);
  if (!cubin) return cubin.takeError();
  auto module = Module::load(*cubin);
  if (!module) return module.takeError();
  Loaded l;
  l.module = std::make_shared<Module>(std::move(*module));
  auto fn = l.module->function(name);
  if (!fn) return fn.takeError();
  l.fn = *fn;
  loaded.emplace(key, l);
  return l.fn;
}

std::string hashed_kernel_name(const std::string &prefix, const std::string &source_without_name) {
  char hex[17];
  std::snprintf(hex, sizeof hex, "%016llx", (unsigned long long)hash64(source_without_name));
  return prefix + std::string(hex, 12);
}

}  // namespace magicube
