#include "runtime/cuda_driver.h"

#include <gtest/gtest.h>

#include <numeric>
#include <optional>

namespace magicube {
namespace {

#define EXPECT_HAS(haystack, needle) EXPECT_NE(std::string(haystack).find(needle), std::string::npos) << (haystack)

// A hand-written kernel (PTX, JIT-compiled by the driver): p[i] += 1 for i < n.
constexpr const char *kAddOnePtx = R"(
.version 7.0
.target sm_75
.address_size 64

.visible .entry add_one(
    .param .u64 add_one_p,
    .param .u32 add_one_n
)
{
    .reg .pred %p<2>;
    .reg .b32 %r<7>;
    .reg .b64 %rd<5>;

    ld.param.u64 %rd1, [add_one_p];
    ld.param.u32 %r1, [add_one_n];
    mov.u32 %r2, %ctaid.x;
    mov.u32 %r3, %ntid.x;
    mov.u32 %r4, %tid.x;
    mad.lo.s32 %r5, %r2, %r3, %r4;
    setp.ge.s32 %p1, %r5, %r1;
    @%p1 bra DONE;
    cvta.to.global.u64 %rd2, %rd1;
    mul.wide.s32 %rd3, %r5, 4;
    add.s64 %rd4, %rd2, %rd3;
    ld.global.u32 %r6, [%rd4];
    add.s32 %r6, %r6, 1;
    st.global.u32 [%rd4], %r6;
DONE:
    ret;
}
)";

// A launch's shape is checked before the driver is asked anything: an empty grid, or a grid
// that is not whole clusters (cluster_y must divide grid.y), is refused by name, GPU or not.
TEST(CudaDriver, LaunchRefusesAGridThatIsNotWholeClusters) {
  llvm::Error e = launch(nullptr, Dim3{8, 3, 1}, Dim3{128}, 0, nullptr, nullptr, false, true, 2);
  ASSERT_TRUE(bool(e));
  EXPECT_HAS(llvm::toString(std::move(e)), "launch: grid (8, 3, 1) is not made of clusters of (1, 2, 1) blocks");
  e = launch(nullptr, Dim3{8, 2, 1}, Dim3{128}, 0, nullptr, nullptr, false, false, 0);
  ASSERT_TRUE(bool(e));
  EXPECT_HAS(llvm::toString(std::move(e)), "is not made of clusters of (1, 0, 1) blocks");
  e = launch(nullptr, Dim3{0, 2, 1}, Dim3{128}, 0, nullptr, nullptr, false, false, 2);
  ASSERT_TRUE(bool(e));
  EXPECT_HAS(llvm::toString(std::move(e)), "launch: empty grid (0, 2, 1)");
  // A whole number of clusters passes the shape checks and reaches the driver (no GPU: its
  // reason; a GPU: the null function).
  e = launch(nullptr, Dim3{8, 4, 1}, Dim3{128}, 0, nullptr, nullptr, false, true, 2);
  ASSERT_TRUE(bool(e));
  EXPECT_EQ(llvm::toString(std::move(e)).find("clusters of"), std::string::npos);
}

// Runs without a GPU too, up to the skip: the no-GPU path must be a clean 0, not a failure.
TEST(CudaDriver, DeviceCountOrReason) {
  auto n = device_count();
  ASSERT_TRUE(bool(n)) << llvm::toString(n.takeError());
  std::string reason = no_gpu_reason();
  if (*n == 0) {
    EXPECT_FALSE(reason.empty());
    EXPECT_EQ(reason.find('\n'), std::string::npos) << reason;
    // Everything else refuses cleanly, naming the reason.
    auto ctx = Context::create();
    ASSERT_FALSE(bool(ctx));
    EXPECT_HAS(llvm::toString(ctx.takeError()), reason);
    auto buf = DeviceBuffer::allocate(16);
    ASSERT_FALSE(bool(buf));
    llvm::consumeError(buf.takeError());
    GTEST_SKIP() << reason;
  }
  EXPECT_GT(*n, 0);
  EXPECT_EQ(reason, "");
  auto version = driver_version();
  ASSERT_TRUE(bool(version)) << llvm::toString(version.takeError());
  EXPECT_GE(*version, 12000);
}

class CudaDriverGpu : public ::testing::Test {
 protected:
  void SetUp() override {
    auto n = device_count();
    ASSERT_TRUE(bool(n)) << llvm::toString(n.takeError());
    if (*n == 0) GTEST_SKIP() << no_gpu_reason();
    auto c = Context::create(0);
    ASSERT_TRUE(bool(c)) << llvm::toString(c.takeError());
    ctx.emplace(std::move(*c));
  }
  std::optional<Context> ctx;
};

TEST_F(CudaDriverGpu, DeviceProperties) {
  EXPECT_FALSE(ctx->name().empty());
  EXPECT_GE(ctx->compute_capability(), 70);
  EXPECT_GT(ctx->sm_count(), 0);
  EXPECT_GE(ctx->max_shared_per_block_optin(), 48 * 1024);
  EXPECT_NE(ctx->get(), nullptr);
  std::printf("device 0: %s, sm_%d, %d SMs, %d B shared/block opt-in\n", ctx->name().c_str(),
              ctx->compute_capability(), ctx->sm_count(), ctx->max_shared_per_block_optin());
  auto bad = Context::create(1 << 20);
  ASSERT_FALSE(bool(bad));
  EXPECT_HAS(llvm::toString(bad.takeError()), "device ordinal 1048576 is out of range");
}

TEST_F(CudaDriverGpu, UploadDownloadRoundTrip) {
  std::vector<int32_t> host(1000);
  std::iota(host.begin(), host.end(), -500);
  auto buf = DeviceBuffer::from(host);
  ASSERT_TRUE(bool(buf)) << llvm::toString(buf.takeError());
  EXPECT_EQ(buf->bytes(), host.size() * sizeof(int32_t));
  EXPECT_NE(buf->ptr(), 0u);
  auto back = buf->download<int32_t>();
  ASSERT_TRUE(bool(back)) << llvm::toString(back.takeError());
  EXPECT_EQ(*back, host);

  ASSERT_FALSE(bool(buf->memset(0xFF)));
  back = buf->download<int32_t>();
  ASSERT_TRUE(bool(back));
  EXPECT_EQ(*back, std::vector<int32_t>(1000, -1));

  ASSERT_FALSE(bool(buf->upload(std::vector<int32_t>{7, 8}, 998)));
  auto tail = buf->download<int32_t>(3, 997);
  ASSERT_TRUE(bool(tail));
  EXPECT_EQ(*tail, (std::vector<int32_t>{-1, 7, 8}));

  // Out of bounds: refused before the driver sees it, naming the sizes.
  llvm::Error over = buf->upload(std::vector<int32_t>{1, 2, 3}, 998);
  ASSERT_TRUE(bool(over));
  EXPECT_HAS(llvm::toString(std::move(over)), "DeviceBuffer::upload: 12 bytes at offset 3992 exceed the buffer's 4000 bytes");

  // Move-only ownership.
  DeviceBuffer moved = std::move(*buf);
  EXPECT_EQ(buf->ptr(), 0u);
  EXPECT_EQ(moved.bytes(), 4000u);
  auto empty = DeviceBuffer::allocate(0);
  ASSERT_TRUE(bool(empty));
  EXPECT_EQ(empty->bytes(), 0u);
}

TEST_F(CudaDriverGpu, GarbageModuleNamesCuModuleLoadData) {
  static const char garbage[] = "\x7f" "ELF this is not a cubin \x01\x02\x03";
  auto m = Module::load(llvm::StringRef(garbage, sizeof garbage - 1));
  ASSERT_FALSE(bool(m));
  llvm::Error e = m.takeError();
  // The typed error, through throw_if_error.
  try {
    throw_if_error(std::move(e));
    FAIL() << "no exception";
  } catch (const CudaError &err) {
    EXPECT_EQ(err.call(), "cuModuleLoadData");
    EXPECT_NE(err.code(), CUDA_SUCCESS);
    EXPECT_HAS(err.code_name(), "CUDA_ERROR_");
    EXPECT_HAS(err.what(), "cuModuleLoadData failed: CUDA_ERROR_");
    std::printf("%s\n", err.what());
  }
  auto text = Module::load("not a module at all");
  ASSERT_FALSE(bool(text));
  EXPECT_HAS(llvm::toString(text.takeError()), "cuModuleLoadData failed: CUDA_ERROR_");
}

TEST_F(CudaDriverGpu, LaunchesKernelAndTimesIt) {
  auto m = Module::load(kAddOnePtx);
  ASSERT_TRUE(bool(m)) << llvm::toString(m.takeError());
  auto missing = m->function("no_such_kernel");
  ASSERT_FALSE(bool(missing));
  EXPECT_HAS(llvm::toString(missing.takeError()), "cuModuleGetFunction failed: CUDA_ERROR_NOT_FOUND");
  auto f = m->function("add_one");
  ASSERT_TRUE(bool(f)) << llvm::toString(f.takeError());

  std::vector<int32_t> host(1000, 41);
  auto buf = DeviceBuffer::from(host);
  ASSERT_TRUE(bool(buf)) << llvm::toString(buf.takeError());
  CUdeviceptr p = buf->ptr();
  int32_t n = int32_t(host.size());
  void *args[] = {&p, &n};

  auto start = Event::create(), stop = Event::create();
  ASSERT_TRUE(bool(start) && bool(stop));
  ASSERT_FALSE(bool(start->record()));
  // 64 KiB of dynamic shared memory: needs the opt-in attribute that launch() sets.
  llvm::Error launched = launch(*f, Dim3{(1000 + 127) / 128}, Dim3{128}, 64 * 1024, nullptr, args);
  ASSERT_FALSE(bool(launched)) << llvm::toString(std::move(launched));
  ASSERT_FALSE(bool(stop->record()));
  auto ms = elapsed_ms(*start, *stop);
  ASSERT_TRUE(bool(ms)) << llvm::toString(ms.takeError());
  EXPECT_GE(*ms, 0.0f);
  ASSERT_FALSE(bool(ctx->synchronize()));

  auto back = buf->download<int32_t>();
  ASSERT_TRUE(bool(back));
  EXPECT_EQ(*back, std::vector<int32_t>(1000, 42));

  llvm::Error empty = launch(*f, Dim3{0}, Dim3{128}, 0, nullptr, args);
  ASSERT_TRUE(bool(empty));
  EXPECT_HAS(llvm::toString(std::move(empty)), "launch: empty grid (0, 1, 1)");
}

}  // namespace
}  // namespace magicube
