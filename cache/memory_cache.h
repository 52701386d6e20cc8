// A small thread-safe in-process cache: (context, key hex) -> std::shared_ptr<V>.
// `context` separates otherwise equal keys (e.g. a CUcontext for loaded modules; nullptr
// for context-free values such as cubin bytes). One mutex guards everything.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <utility>

#include "cache/cache_key.h"

namespace magicube {

template <typename V>
class MemoryCache {
 public:
  struct Stats {
    size_t entries = 0;
    uint64_t hits = 0;
    uint64_t misses = 0;
  };

  // The value, or nullptr (a miss). Counts a hit or a miss.
  std::shared_ptr<V> get(const void *context, const std::string &hex) {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = map_.find({context, hex});
    if (it == map_.end()) {
      ++misses_;
      return nullptr;
    }
    ++hits_;
    return it->second;
  }
  std::shared_ptr<V> get(const void *context, const CacheKey &key) { return get(context, key.hex); }

  // Inserts `value` unless the key is already present; returns the value now in the cache
  // (the first one put wins, so racing producers converge on one object).
  std::shared_ptr<V> put(const void *context, const std::string &hex, std::shared_ptr<V> value) {
    std::lock_guard<std::mutex> lock(mu_);
    auto [it, inserted] = map_.emplace(Key{context, hex}, std::move(value));
    return it->second;
  }
  std::shared_ptr<V> put(const void *context, const CacheKey &key, std::shared_ptr<V> value) {
    return put(context, key.hex, std::move(value));
  }

  // Removes one entry; true if it was there.
  bool erase(const void *context, const std::string &hex) {
    std::lock_guard<std::mutex> lock(mu_);
    return map_.erase({context, hex}) > 0;
  }

  size_t size() const {
    std::lock_guard<std::mutex> lock(mu_);
    return map_.size();
  }
  // Drops every entry (values live on while someone holds them); counters are kept.
  void clear() {
    std::lock_guard<std::mutex> lock(mu_);
    map_.clear();
  }
  uint64_t hits() const {
    std::lock_guard<std::mutex> lock(mu_);
    return hits_;
  }
  uint64_t misses() const {
    std::lock_guard<std::mutex> lock(mu_);
    return misses_;
  }
  Stats stats() const {
    std::lock_guard<std::mutex> lock(mu_);
    return Stats{map_.size(), hits_, misses_};
  }

 private:
  using Key = std::pair<const void *, std::string>;
  mutable std::mutex mu_;
  std::map<Key, std::shared_ptr<V>> map_;
  uint64_t hits_ = 0;
  uint64_t misses_ = 0;
};

}  // namespace magicube
