#include "support/parallel.h"

#include <algorithm>
#include <atomic>

#include "llvm/Support/ThreadPool.h"
#include "llvm/Support/Threading.h"

namespace magicube {

unsigned hardware_threads() { return std::max(1u, llvm::hardware_concurrency().compute_thread_count()); }

void parallel_for(size_t count, llvm::function_ref<void(size_t)> fn, unsigned threads) {
  if (threads == 0) threads = hardware_threads();
  threads = unsigned(std::min<size_t>(threads, count));
  if (threads <= 1) {
    for (size_t i = 0; i < count; ++i) fn(i);
    return;
  }
  std::atomic<size_t> next{0};
  auto work = [&] {
    for (size_t i; (i = next.fetch_add(1, std::memory_order_relaxed)) < count;) fn(i);
  };
  // The strategy asks for exactly threads - 1 workers (hardware_concurrency(N) does not cap N
  // at the core count: an explicit request is honoured, as the callers' own caps are).
  llvm::ThreadPool pool(llvm::hardware_concurrency(threads - 1));
  for (unsigned t = 1; t < threads; ++t) pool.async(work);
  work();
  pool.wait();
}

}  // namespace magicube
