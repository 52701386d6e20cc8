// A small thread-safe in-process cache: (context, key hex) -> std::shared_ptr<V>, bounded to
// `capacity` entries with least-recently-used eviction (a get or a put of an existing key
// makes it the most recently used; 0 = no bound). `context` separates otherwise equal keys
// (e.g. a CUcontext for loaded modules; nullptr for context-free values such as cubin
// bytes). Evicted values live on while someone holds them. One mutex guards everything.
#pragma once

#include <cstddef>
#include <cstdint>
#include <list>
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
  static constexpr size_t kDefaultCapacity = 512;

  explicit MemoryCache(size_t capacity = kDefaultCapacity) : capacity_(capacity) {}

  struct Stats {
    size_t entries = 0;
    uint64_t hits = 0;
    uint64_t misses = 0;
    uint64_t evictions = 0;
  };

  // The value, or nullptr (a miss). Counts a hit or a miss; a hit is now the most recent.
  std::shared_ptr<V> get(const void *context, const std::string &hex) {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = map_.find({context, hex});
    if (it == map_.end()) {
      ++misses_;
      return nullptr;
    }
    ++hits_;
    order_.splice(order_.end(), order_, it->second.second);
    return it->second.first;
  }
  std::shared_ptr<V> get(const void *context, const CacheKey &key) { return get(context, key.hex); }

  // Inserts `value` unless the key is already present; returns the value now in the cache
  // (the first one put wins, so racing producers converge on one object). Evicts the least
  // recently used entries beyond the capacity.
  std::shared_ptr<V> put(const void *context, const std::string &hex, std::shared_ptr<V> value) {
    std::lock_guard<std::mutex> lock(mu_);
    Key key{context, hex};
    auto it = map_.find(key);
    if (it != map_.end()) {
      order_.splice(order_.end(), order_, it->second.second);
      return it->second.first;
    }
    auto pos = order_.insert(order_.end(), key);
    it = map_.emplace(std::move(key), std::make_pair(std::move(value), pos)).first;
    std::shared_ptr<V> out = it->second.first;
    while (capacity_ > 0 && map_.size() > capacity_) {
      map_.erase(order_.front());
      order_.pop_front();
      ++evictions_;
    }
    return out;
  }
  std::shared_ptr<V> put(const void *context, const CacheKey &key, std::shared_ptr<V> value) {
    return put(context, key.hex, std::move(value));
  }

  // Removes one entry; true if it was there.
  bool erase(const void *context, const std::string &hex) {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = map_.find({context, hex});
    if (it == map_.end()) return false;
    order_.erase(it->second.second);
    map_.erase(it);
    return true;
  }

  size_t size() const {
    std::lock_guard<std::mutex> lock(mu_);
    return map_.size();
  }
  size_t capacity() const {
    std::lock_guard<std::mutex> lock(mu_);
    return capacity_;
  }
  // Drops every entry (values live on while someone holds them); counters are kept.
  void clear() {
    std::lock_guard<std::mutex> lock(mu_);
    map_.clear();
    order_.clear();
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
    return Stats{map_.size(), hits_, misses_, evictions_};
  }

 private:
  using Key = std::pair<const void *, std::string>;
  mutable std::mutex mu_;
  size_t capacity_;
  std::list<Key> order_;  // least recently used first
  std::map<Key, std::pair<std::shared_ptr<V>, typename std::list<Key>::iterator>> map_;
  uint64_t hits_ = 0;
  uint64_t misses_ = 0;
  uint64_t evictions_ = 0;
};

}  // namespace magicube
