#include "jit/compile_cache.h"

#include <memory>

#include "jit/compile.h"
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
                                                    const std::vector<std::string> &extra_options, SourceKind kind) {
  if (auto hit = memory_.get(nullptr, key.hex)) {
    log().debug("kernel cache: memory hit {} ({})", key.hex, file_name);
    return *hit;
  }
  if (std::optional<std::string> cubin = from_bundles(key, file_name))
    return *memory_.put(nullptr, key.hex, std::make_shared<const std::string>(std::move(*cubin)));
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
  auto cubin = compile_cubin(kind, *source, file_name, arch, extra_options);
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

void CompileCache::add_bundle(std::shared_ptr<const Bundle> bundle) {
  std::lock_guard<std::mutex> lock(bundles_mu_);
  bundles_.push_back(std::make_shared<UsedBundle>(std::move(bundle)));
}

void CompileCache::use_process_bundles(const std::string &generator) {
  std::call_once(process_bundles_once_, [&] {
    for (auto &b : open_bundles(bundle_paths_from_env(), generator, toolchain_version())) add_bundle(std::move(b));
  });
}

size_t CompileCache::bundle_count() const {
  std::lock_guard<std::mutex> lock(bundles_mu_);
  return bundles_.size();
}

std::optional<std::string> CompileCache::from_bundles(const CacheKey &key, const std::string &file_name) {
  std::vector<std::shared_ptr<UsedBundle>> bundles;
  {
    std::lock_guard<std::mutex> lock(bundles_mu_);
    if (bundles_.empty()) return std::nullopt;
    bundles = bundles_;
  }
  for (const auto &used : bundles) {
    if (used->bad.load(std::memory_order_relaxed)) continue;
    auto cubin = used->bundle->find(key);
    if (!cubin) {
      if (!used->bad.exchange(true))
        log().warn("AOT kernel bundle {} refused: {}; not using it any more, its kernels come from the disk cache or "
                   "NVRTC",
                   used->bundle->path(), llvm::toString(cubin.takeError()));
      else
        llvm::consumeError(cubin.takeError());
      continue;
    }
    if (*cubin) {
      ++bundle_hits_;
      log().debug("kernel cache: AOT bundle hit {} ({}) from {}", key.hex, file_name, used->bundle->path());
      return std::move(**cubin);
    }
  }
  ++bundle_misses_;
  return std::nullopt;
}

CompileCache::Stats CompileCache::stats() const {
  auto m = memory_.stats();
  Stats s;
  s.memory_hits = m.hits;
  s.memory_misses = m.misses;
  s.memory_entries = m.entries;
  s.bundle_hits = bundle_hits_;
  s.bundle_misses = bundle_misses_;
  s.disk_hits = disk_hits_;
  s.disk_misses = disk_misses_;
  s.compiles = compiles_;
  s.compile_failures = compile_failures_;
  s.disk_store_failures = store_failures_;
  return s;
}

}  // namespace magicube
