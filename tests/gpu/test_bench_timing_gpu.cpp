// The benchmark's timing of several contenders in one loop (bench/timing.h,
// sample_ms_alternating) and the dense contender's kept winner (bench/baselines.h,
// DenseReplay), on the GPU. Skips with a one-line reason without one.
#include <gtest/gtest.h>

#include <cuda_runtime_api.h>

#include "bench/baselines.h"
#include "bench/timing.h"

namespace magicube::bench {
namespace {

#define REQUIRE_CUDA()                                                         \
  if (llvm::Error e = require_cuda_device()) GTEST_SKIP() << llvm::toString(std::move(e))

TEST(BenchTimingGpu, AlternatingSamplesEachContender) {
  REQUIRE_CUDA();
  Stream stream;
  ASSERT_FALSE(bool(stream.create()));
  auto small = DeviceBuffer::alloc(size_t(1) << 20);
  ASSERT_TRUE(bool(small)) << llvm::toString(small.takeError());
  auto big = DeviceBuffer::alloc(size_t(256) << 20);
  ASSERT_TRUE(bool(big)) << llvm::toString(big.takeError());
  int small_calls = 0, big_calls = 0;
  auto run_small = [&]() -> llvm::Error {
    ++small_calls;
    MAGICUBE_CUDA_TRY(cudaMemsetAsync(small->get(), 1, small->bytes(), stream.get()));
    return llvm::Error::success();
  };
  auto run_big = [&]() -> llvm::Error {
    ++big_calls;
    MAGICUBE_CUDA_TRY(cudaMemsetAsync(big->get(), 2, big->bytes(), stream.get()));
    return llvm::Error::success();
  };
  TimingOptions t;
  t.warmup = 2, t.reps = 7, t.filler_bytes = size_t(8) << 20, t.flush_bytes = size_t(64) << 20;
  const Enqueue fns[] = {run_big, run_small};
  auto s = sample_ms_alternating(stream.get(), fns, t);
  ASSERT_TRUE(bool(s)) << llvm::toString(s.takeError());
  ASSERT_EQ(s->size(), 2u);
  ASSERT_EQ((*s)[0].size(), 7u);
  ASSERT_EQ((*s)[1].size(), 7u);
  // Each contender: warm-up, 2 after the filler, then its timed runs.
  EXPECT_EQ(big_calls, 2 + 2 + 7);
  EXPECT_EQ(small_calls, 2 + 2 + 7);
  for (float x : (*s)[1]) EXPECT_GT(x, 0.0f);
  // 256x the bytes: every timed run of the big memset is longer than the small one's median.
  const double small_median = median((*s)[1]);
  for (float x : (*s)[0]) EXPECT_GT(double(x), small_median);

  // One contender: sample_ms is the same loop.
  big_calls = 0;
  auto one = sample_ms(stream.get(), run_big, t);
  ASSERT_TRUE(bool(one)) << llvm::toString(one.takeError());
  EXPECT_EQ(one->size(), 7u);
  EXPECT_EQ(big_calls, 2 + 2 + 7);

  // An error of a contender stops the loop and is returned.
  auto failing = []() -> llvm::Error { return make_error("contender failed"); };
  const Enqueue with_failure[] = {run_small, failing};
  auto bad = sample_ms_alternating(stream.get(), with_failure, t);
  ASSERT_FALSE(bool(bad));
  EXPECT_EQ(llvm::toString(bad.takeError()), "contender failed");
  EXPECT_FALSE(bool(sample_ms_alternating(stream.get(), {}, t)));
}

TEST(BenchTimingGpu, DenseWinnerRunsAgain) {
  REQUIRE_CUDA();
  BaselineOptions o;
  o.timing.warmup = 1, o.timing.reps = 3, o.timing.filler_bytes = 0;
  o.max_algos = 2;
  auto without = dense_cublaslt_i8(256, 128, 512, o);
  ASSERT_TRUE(bool(without)) << llvm::toString(without.takeError());
  ASSERT_TRUE(without->supported) << without->unsupported_reason;
  EXPECT_EQ(without->replay, nullptr) << "kept only when asked";

  o.keep_winner = true;
  auto with = dense_cublaslt_i8(256, 128, 512, o);
  ASSERT_TRUE(bool(with)) << llvm::toString(with.takeError());
  ASSERT_TRUE(with->supported) << with->unsupported_reason;
  ASSERT_NE(with->replay, nullptr);
  EXPECT_EQ(with->config.rfind("cuBLASLt ", 0), 0u) << with->config;
  // It runs on another stream after the measurement's own is gone, and times like any contender.
  Stream stream;
  ASSERT_FALSE(bool(stream.create()));
  auto ms = median_ms(stream.get(), [&]() -> llvm::Error { return with->replay->enqueue(stream.get()); }, o.timing);
  ASSERT_TRUE(bool(ms)) << llvm::toString(ms.takeError());
  EXPECT_GT(*ms, 0.0);
  EXPECT_EQ(cudaStreamSynchronize(stream.get()), cudaSuccess);
}

}  // namespace
}  // namespace magicube::bench
