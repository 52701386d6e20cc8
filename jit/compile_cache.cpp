#include "jit/compile_cache.h"

#include <memory>

#include "jit/nvrtc.h"
#include "support/log.h"

namespace magicube {

CompileCache::CompileCache(std::optional<DiskCache> disk) : disk_(std::move(disk)) {}

CompileCache &CompileCache::process() {
  static CompileCache cache = [] {
    auto disk = DiskCache::open_default();
    if (!disk) {
      log().warn("kernel disk cache disabled: {}", llvm::toString(disk.takeError()));
      return CompileCache(std::nullopt);
    }
    return CompileCache(std::move(*disk));
  }();
  return cache;
}

llvm::Expected<std::string> CompileCache::get_cubin(const CacheKey &key, int arch,
                                                    const std::function<llvm::Expected<std::string>()> &make_source,
                                                    const std::string &file_name,
                                                    const std::vector<std::string> &extra_options) {
  if (auto hit = memory_.get(nullptr, key.hex)) {
    log().debug("kernel cache: memory hit {} ({})", key.hex, file_name);
    return *hit;
  }
  if (disk_ && disk_->enabled()) {
    if (std::optional<std::string> cubin = disk_->load(key)) {
      ++disk_hits_;
      log().debug("kernel cache: disk hit {} ({})", key.hex, file_name);
      return *memory_.put(nullptr, key.hex, std::make_shared<const std::string>(std::move(*cubin)));
    }
    ++disk_misses_;
  }
  log().debug("kernel cache: miss {} ({}), compiling for sm_{}", key.hex, file_name, arch);

  auto source = make_source();
  if (!source) {
    ++compile_failures_;
    return llvm::createStringError(llvm::inconvertibleErrorCode(), "cannot generate the source of " + file_name +
                                                                       ": " + llvm::toString(source.takeError()));
  }
  ++compiles_;
  auto cubin = nvrtc_compile(*source, file_name, arch, Emit::CUBIN, extra_options);
  if (!cubin) {
    ++compile_failures_;
    return cubin.takeError();
  }
  if (disk_ && disk_->enabled()) {
    if (llvm::Error e = disk_->store(key, *cubin)) {
      ++store_failures_;
      log().warn("kernel cache: {} compiled but not stored on disk: {}", file_name, llvm::toString(std::move(e)));
    }
  }
  return *memory_.put(nullptr, key.hex, std::make_shared<const std::string>(std::move(*cubin)));
}

CompileCache::Stats CompileCache::stats() const {
  auto m = memory_.stats();
  Stats s;
  s.memory_hits = m.hits;
  s.memory_misses = m.misses;
  s.memory_entries = m.entries;
  s.disk_hits = disk_hits_;
  s.disk_misses = disk_misses_;
  s.compiles = compiles_;
  s.compile_failures = compile_failures_;
  s.disk_store_failures = store_failures_;
  return s;
}

}  // namespace magicube
