// support/: parallel_for.
#include <gtest/gtest.h>

#include <atomic>
#include <mutex>
#include <set>
#include <thread>
#include <vector>

#include "support/parallel.h"

using namespace magicube;

namespace {

TEST(Parallel, EveryIndexOnce) {
  for (unsigned threads : {0u, 1u, 2u, 3u, 8u, 100u})
    for (size_t count : {size_t(0), size_t(1), size_t(2), size_t(7), size_t(1000)}) {
      std::vector<std::atomic<int>> hits(count);
      parallel_for(count, [&](size_t i) { ++hits[i]; }, threads);
      for (size_t i = 0; i < count; ++i) ASSERT_EQ(hits[i].load(), 1) << "i=" << i << " threads=" << threads;
    }
}

TEST(Parallel, OneThreadRunsInOrderOnTheCaller) {
  std::vector<size_t> order;
  const std::thread::id caller = std::this_thread::get_id();
  bool same_thread = true;
  parallel_for(5, [&](size_t i) {
    order.push_back(i);
    same_thread = same_thread && std::this_thread::get_id() == caller;
  }, 1);
  EXPECT_EQ(order, (std::vector<size_t>{0, 1, 2, 3, 4}));
  EXPECT_TRUE(same_thread);
}

TEST(Parallel, NoMoreThreadsThanAskedFor) {
  std::mutex mu;
  std::set<std::thread::id> ids;
  parallel_for(200, [&](size_t) {
    std::lock_guard<std::mutex> lock(mu);
    ids.insert(std::this_thread::get_id());
  }, 3);
  EXPECT_GE(ids.size(), 1u);
  EXPECT_LE(ids.size(), 3u);
  EXPECT_GE(hardware_threads(), 1u);
}

}  // namespace
