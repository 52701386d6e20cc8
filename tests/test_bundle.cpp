// AOT kernel bundles (jit/bundle.h) and the compile cache's bundle level: a bundle of two
// NVRTC-compiled kernels is written, loaded and hit; a corrupt, truncated, foreign, planted or
// oversized bundle is refused with one warning naming it and why, and NVRTC takes over with
// the same cubin a compile gives. CPU only (NVRTC needs no GPU).
#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <functional>
#include <optional>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>
#include <spdlog/sinks/ostream_sink.h>
#include <sys/stat.h>
#include <unistd.h>

#include "jit/bundle.h"
#include "jit/compile.h"
#include "jit/compile_cache.h"
#include "jit/nvrtc.h"
#include "llvm/ADT/SmallString.h"
#include "llvm/Support/FileSystem.h"
#include "support/hash.h"
#include "support/log.h"
#include "tests/fs_util.h"

using namespace magicube;
using magicube::testing::EnvGuard;
using magicube::testing::LogCapture;
using magicube::testing::read_file;
using magicube::testing::write_file;

namespace {

struct TempDir : magicube::testing::TempDir {
  TempDir() : magicube::testing::TempDir("magicube-bundle-test") {}
};

const char *kGenerator = "gen-test-1";
const int kArch = 80;

std::string kernel_source(int which) {
  return "extern \"C\" __global__ void k" + std::to_string(which) + "(int *x) { x[threadIdx.x] += " +
         std::to_string(which) + "; }\n";
}
CacheKey key_of(int which) { return make_cache_key(kGenerator, "kernel-" + std::to_string(which), "", kArch, toolchain_version()); }

// Two kernels compiled once per test binary, with their keys.
struct Compiled {
  std::vector<BundleInput> inputs;
  static const Compiled &get() {
    static const Compiled c = [] {
      Compiled c;
      for (int i = 1; i <= 2; ++i) {
        auto cubin = nvrtc_compile(kernel_source(i), "k.cu", kArch, Emit::CUBIN);
        if (!cubin) {
          ADD_FAILURE() << llvm::toString(cubin.takeError());
          std::abort();
        }
        c.inputs.push_back(BundleInput{key_of(i), kArch, "tiny kernel " + std::to_string(i), std::move(*cubin)});
      }
      return c;
    }();
    return c;
  }
};

std::string good_bundle_bytes(BundleMeta meta = {kGenerator, toolchain_version(), "test"}) {
  auto bytes = encode_bundle(meta, Compiled::get().inputs);
  EXPECT_TRUE(bool(bytes)) << llvm::toString(bytes.takeError());
  return *bytes;
}

// The index end and entry layout of a bundle (for forging entries with a valid header hash).
uint64_t le(const std::string &b, size_t at, int n) {
  uint64_t v = 0;
  for (int i = 0; i < n; ++i) v |= uint64_t(uint8_t(b[at + i])) << (8 * i);
  return v;
}
void set_le(std::string &b, size_t at, int n, uint64_t v) {
  for (int i = 0; i < n; ++i) b[at + i] = char((v >> (8 * i)) & 0xff);
}
// Recomputes the header's SHA-256 after an edit, as a forger would.
void rehash(std::string &b) {
  const uint64_t index_end = le(b, 24, 8);
  std::string covered = b.substr(0, 32) + b.substr(64, index_end - 64);
  b.replace(32, 32, sha256(covered));
}
// The offset in the file of entry 0's fields (after the three meta strings).
size_t first_entry_at(const std::string &b) {
  size_t at = 64;
  for (int i = 0; i < 3; ++i) at += 4 + le(b, at, 4);
  return at;
}

// A cache with only the bundles of `paths` (as the process opens them) and no disk level.
struct Fixture {
  CompileCache cache{std::nullopt};
  int made = 0;
  llvm::Expected<std::string> get(int which) {
    return cache.get_cubin(
        key_of(which), kArch,
        [&, which]() -> llvm::Expected<std::string> {
          ++made;
          return kernel_source(which);
        },
        "k.cu");
  }
};

// Opens `path` as the process would, expecting a refusal whose warning names the file and
// `why`; then NVRTC serves kernel 1 with the cubin a compile gives.
void expect_refused_and_nvrtc_takes_over(const std::string &path, const std::string &why) {
  LogCapture logs;
  auto bundles = open_bundles(BundlePaths{{path}, true}, kGenerator, toolchain_version());
  EXPECT_TRUE(bundles.empty());
  const std::string text = logs.text();
  EXPECT_NE(text.find("AOT kernel bundle " + path + " refused"), std::string::npos) << text;
  EXPECT_NE(text.find(why), std::string::npos) << text;
  EXPECT_EQ(std::count(text.begin(), text.end(), '\n'), 1) << "one warning: " << text;
  Fixture f;
  for (auto &b : bundles) f.cache.add_bundle(b);
  auto cubin = f.get(1);
  ASSERT_TRUE(bool(cubin)) << llvm::toString(cubin.takeError());
  EXPECT_EQ(f.made, 1);
  EXPECT_EQ(*cubin, Compiled::get().inputs[0].cubin);
}

}  // namespace

TEST(Bundle, WriteLoadAndHitWithoutCompiling) {
  TempDir tmp;
  const std::string path = tmp.file("kernels.mcbundle");
  ASSERT_FALSE(bool(write_bundle(path, {kGenerator, toolchain_version(), "two tiny kernels"}, Compiled::get().inputs)));
  LogCapture logs;
  auto bundles = open_bundles(BundlePaths{{path}, true}, kGenerator, toolchain_version());
  ASSERT_EQ(bundles.size(), 1u);
  EXPECT_EQ(logs.text(), "");
  const Bundle &b = *bundles[0];
  EXPECT_EQ(b.meta().generator, kGenerator);
  EXPECT_EQ(b.meta().nvrtc, toolchain_version());
  EXPECT_EQ(b.meta().note, "two tiny kernels");
  ASSERT_EQ(b.entries().size(), 2u);
  EXPECT_EQ(b.entries()[1].label, "tiny kernel 2");
  EXPECT_EQ(b.entries()[0].key, key_of(1).hex);
  EXPECT_FALSE(bool(b.verify_all()));

  Fixture f;
  f.cache.add_bundle(bundles[0]);
  for (int i = 1; i <= 2; ++i) {
    auto cubin = f.get(i);
    ASSERT_TRUE(bool(cubin)) << llvm::toString(cubin.takeError());
    EXPECT_EQ(*cubin, Compiled::get().inputs[size_t(i - 1)].cubin);
  }
  auto again = f.get(1);  // memory
  ASSERT_TRUE(bool(again));
  EXPECT_EQ(f.made, 0);
  CompileCache::Stats s = f.cache.stats();
  EXPECT_EQ(s.bundle_hits, 2u);
  EXPECT_EQ(s.memory_hits, 1u);
  EXPECT_EQ(s.compiles, 0u);

  // A key the bundle lacks: a bundle miss, then NVRTC.
  auto other = f.cache.get_cubin(
      make_cache_key(kGenerator, "kernel-3", "", kArch, toolchain_version()), kArch,
      []() -> llvm::Expected<std::string> { return kernel_source(3); }, "k3.cu");
  ASSERT_TRUE(bool(other)) << llvm::toString(other.takeError());
  EXPECT_EQ(f.cache.stats().bundle_misses, 1u);
  EXPECT_EQ(f.cache.stats().compiles, 1u);
}

TEST(Bundle, TheWriteIsAtomicAndLeavesNoTemp) {
  TempDir tmp;
  const std::string path = tmp.file("k.mcbundle");
  write_file(path, "old");
  ASSERT_FALSE(bool(write_bundle(path, {kGenerator, toolchain_version(), ""}, Compiled::get().inputs)));
  EXPECT_EQ(read_file(path), good_bundle_bytes({kGenerator, toolchain_version(), ""}));
  std::error_code ec;
  size_t files = 0;
  for (llvm::sys::fs::directory_iterator it(tmp.path(), ec), end; it != end && !ec; it.increment(ec)) ++files;
  EXPECT_EQ(files, 1u);
}

TEST(Bundle, EmptyBundleIsValid) {
  auto bytes = encode_bundle({kGenerator, "13.0", ""}, {});
  ASSERT_TRUE(bool(bytes));
  auto b = Bundle::parse(*bytes, "empty");
  ASSERT_TRUE(bool(b)) << llvm::toString(b.takeError());
  EXPECT_EQ((*b)->entries().size(), 0u);
  auto hit = (*b)->find(key_of(1));
  ASSERT_TRUE(bool(hit));
  EXPECT_FALSE(hit->has_value());
}

TEST(Bundle, EncodeRefusesDuplicateAndMalformedKeys) {
  std::vector<BundleInput> two = {Compiled::get().inputs[0], Compiled::get().inputs[0]};
  auto dup = encode_bundle({kGenerator, "13.0", ""}, two);
  ASSERT_FALSE(bool(dup));
  EXPECT_NE(llvm::toString(dup.takeError()).find("already in the bundle"), std::string::npos);
  BundleInput bad = Compiled::get().inputs[0];
  bad.key.hex = "xyz";
  auto malformed = encode_bundle({kGenerator, "13.0", ""}, {bad});
  ASSERT_FALSE(bool(malformed));
  EXPECT_NE(llvm::toString(malformed.takeError()).find("malformed cache key"), std::string::npos);
}

TEST(Bundle, ACorruptCubinIsRefusedOnUseWithOneWarningAndNvrtcTakesOver) {
  TempDir tmp;
  const std::string path = tmp.file("k.mcbundle");
  std::string bytes = good_bundle_bytes();
  bytes[bytes.size() - 100] ^= 0x40;  // inside the last cubin (kernel 2)
  write_file(path, bytes);
  auto bundles = open_bundles(BundlePaths{{path}, true}, kGenerator, toolchain_version());
  ASSERT_EQ(bundles.size(), 1u);  // the header and index are whole: the payload is checked on use
  EXPECT_TRUE(bool(bundles[0]->verify_all())) << "verify_all finds it";
  LogCapture logs;
  Fixture f;
  f.cache.add_bundle(bundles[0]);
  auto two = f.get(2);
  ASSERT_TRUE(bool(two)) << llvm::toString(two.takeError());
  EXPECT_EQ(*two, Compiled::get().inputs[1].cubin);  // NVRTC's, byte for byte the compile's
  EXPECT_EQ(f.made, 1);
  std::string text = logs.text();
  EXPECT_NE(text.find("AOT kernel bundle " + path + " refused"), std::string::npos) << text;
  EXPECT_NE(text.find("tiny kernel 2"), std::string::npos) << text;
  EXPECT_NE(text.find("SHA-256"), std::string::npos) << text;
  // The bundle is not asked again, even for its whole entry, and the warning is not repeated.
  auto one = f.get(1);
  ASSERT_TRUE(bool(one));
  EXPECT_EQ(f.made, 2);
  EXPECT_EQ(f.cache.stats().bundle_hits, 0u);
  text = logs.text();
  EXPECT_EQ(std::count(text.begin(), text.end(), '\n'), 1) << text;
}

TEST(Bundle, ABundleThatShrinksAfterItWasOpenedIsRefusedOnUse) {
  TempDir tmp;
  const std::string path = tmp.file("k.mcbundle");
  write_file(path, good_bundle_bytes());
  auto bundles = open_bundles(BundlePaths{{path}, true}, kGenerator, toolchain_version());
  ASSERT_EQ(bundles.size(), 1u);
  ASSERT_EQ(::truncate(path.c_str(), off_t(bundles[0]->entries()[1].offset + 10)), 0);
  LogCapture logs;
  Fixture f;
  f.cache.add_bundle(bundles[0]);
  auto two = f.get(2);
  ASSERT_TRUE(bool(two)) << llvm::toString(two.takeError());
  EXPECT_EQ(*two, Compiled::get().inputs[1].cubin);
  EXPECT_EQ(f.made, 1);
  EXPECT_NE(logs.text().find("the file shrank since it was opened"), std::string::npos) << logs.text();
}

TEST(Bundle, ACorruptIndexByteIsRefused) {
  TempDir tmp;
  const std::string path = tmp.file("k.mcbundle");
  std::string bytes = good_bundle_bytes();
  bytes[first_entry_at(bytes) + 40] ^= 1;  // entry 0's cubin hash
  write_file(path, bytes);
  expect_refused_and_nvrtc_takes_over(path, "SHA-256 of its header and index does not match");
}

TEST(Bundle, ATruncatedBundleIsRefused) {
  TempDir tmp;
  const std::string path = tmp.file("k.mcbundle");
  std::string bytes = good_bundle_bytes();
  write_file(path, bytes.substr(0, bytes.size() - 1));
  expect_refused_and_nvrtc_takes_over(path, "truncated");
  const std::string short_path = tmp.file("short.mcbundle");
  write_file(short_path, bytes.substr(0, 20));
  expect_refused_and_nvrtc_takes_over(short_path, "shorter than the 64-byte header");
  const std::string empty_path = tmp.file("empty.mcbundle");
  write_file(empty_path, "");
  expect_refused_and_nvrtc_takes_over(empty_path, "truncated");
}

TEST(Bundle, AForeignGeneratorOrNvrtcIsRefusedNamingBoth) {
  TempDir tmp;
  const std::string gen = tmp.file("gen.mcbundle"), nv = tmp.file("nvrtc.mcbundle");
  write_file(gen, good_bundle_bytes({"gen-test-0", toolchain_version(), ""}));
  expect_refused_and_nvrtc_takes_over(gen, "built by generator 'gen-test-0', this library is 'gen-test-1'");
  write_file(nv, good_bundle_bytes({kGenerator, "11.8", ""}));
  expect_refused_and_nvrtc_takes_over(nv, "compiled by '11.8', this process has '" + toolchain_version() + "'");
}

TEST(Bundle, WrongMagicOrFormatVersionIsRefused) {
  TempDir tmp;
  const std::string path = tmp.file("magic.mcbundle"), ver = tmp.file("ver.mcbundle"), elf = tmp.file("elf.mcbundle");
  std::string bytes = good_bundle_bytes();
  std::string magic = bytes;
  magic[0] = 'X';
  write_file(path, magic);
  expect_refused_and_nvrtc_takes_over(path, "bad magic");
  std::string v2 = bytes;
  set_le(v2, 8, 4, 2);
  rehash(v2);
  write_file(ver, v2);
  expect_refused_and_nvrtc_takes_over(ver, "format version 2, this library reads version 1");
  write_file(elf, Compiled::get().inputs[0].cubin);  // a cubin is not a bundle
  expect_refused_and_nvrtc_takes_over(elf, "not a Magicube kernel bundle");
}

TEST(Bundle, SymlinksSpecialFilesAndPlantedFilesAreRefused) {
  TempDir tmp;
  const std::string real = tmp.file("real.mcbundle"), link = tmp.file("link.mcbundle");
  write_file(real, good_bundle_bytes());
  ASSERT_EQ(::symlink(real.c_str(), link.c_str()), 0);
  expect_refused_and_nvrtc_takes_over(link, "symlink");
  expect_refused_and_nvrtc_takes_over(tmp.path(), "directory");
  const std::string fifo = tmp.file("fifo.mcbundle");
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  expect_refused_and_nvrtc_takes_over(fifo, "FIFO");
  const std::string writable = tmp.file("w.mcbundle");
  write_file(writable, good_bundle_bytes());
  ::chmod(writable.c_str(), 0666);
  expect_refused_and_nvrtc_takes_over(writable, "writable by every user");
  // In a directory others can write (and not sticky): anyone could have replaced it.
  const std::string open_dir = tmp.file("open");
  ASSERT_EQ(::mkdir(open_dir.c_str(), 0700), 0);
  const std::string in_open = open_dir + "/k.mcbundle";
  write_file(in_open, good_bundle_bytes());
  ::chmod(open_dir.c_str(), 0777);
  expect_refused_and_nvrtc_takes_over(in_open, "a directory others can write");
  ::chmod(open_dir.c_str(), 0700);
  expect_refused_and_nvrtc_takes_over(tmp.file("missing.mcbundle"), "does not exist");
}

TEST(Bundle, HostileSizesAreRefusedBeforeUse) {
  TempDir tmp;
  const std::string base = good_bundle_bytes();
  const size_t e0 = first_entry_at(base);
  struct Case {
    const char *name, *why;
    std::function<void(std::string &)> edit;
  };
  const std::vector<Case> cases = {
      {"count", "more than the bound", [](std::string &b) { set_le(b, 12, 4, 0xffffffffu); rehash(b); }},
      {"count-short", "its index ends at byte", [](std::string &b) { set_le(b, 12, 4, 1); rehash(b); }},
      {"count-long", "the index ends inside", [](std::string &b) { set_le(b, 12, 4, 3); rehash(b); }},
      {"index-end", "outside the file", [](std::string &b) { set_le(b, 24, 8, uint64_t(1) << 62); }},
      {"offset", "not the next payload inside the file",
       [e0](std::string &b) { set_le(b, e0 + 64, 8, uint64_t(-1) - 8); rehash(b); }},
      {"size", "not the next payload inside the file",
       [e0](std::string &b) { set_le(b, e0 + 72, 8, uint64_t(1) << 40); rehash(b); }},
      {"zero-size", "not the next payload inside the file", [e0](std::string &b) { set_le(b, e0 + 72, 8, 0); rehash(b); }},
      {"label", "more than the 4096-byte bound", [e0](std::string &b) { set_le(b, e0 + 84, 4, 0xfffffff0u); rehash(b); }},
      {"meta", "more than the 4096-byte bound", [](std::string &b) { set_le(b, 64, 4, 0x7fffffffu); rehash(b); }},
      {"file-size", "more than the", [](std::string &b) { set_le(b, 16, 8, 64); }},
      {"appended", "more than the", [](std::string &b) { b += "extra"; }},
  };
  for (const Case &c : cases) {
    SCOPED_TRACE(c.name);
    std::string bytes = base;
    c.edit(bytes);
    const std::string path = tmp.file(std::string(c.name) + ".mcbundle");
    write_file(path, bytes);
    expect_refused_and_nvrtc_takes_over(path, c.why);
  }
  // A file over the loader's bound is refused without being read (a sparse file: no disk used).
  const std::string huge = tmp.file("huge.mcbundle");
  write_file(huge, base);
  ASSERT_EQ(::truncate(huge.c_str(), off_t(Bundle::kMaxBundleBytes + 1)), 0);
  expect_refused_and_nvrtc_takes_over(huge, "larger than the 512.0 MiB bound");
}

TEST(Bundle, PathsFromTheEnvironment) {
  {
    EnvGuard e("MAGICUBE_BUNDLE", "/a/one.mcbundle:/b/two.mcbundle");
    BundlePaths p = bundle_paths_from_env();
    EXPECT_TRUE(p.given);
    EXPECT_EQ(p.paths, (std::vector<std::string>{"/a/one.mcbundle", "/b/two.mcbundle"}));
  }
  {
    EnvGuard e("MAGICUBE_BUNDLE", "0");
    BundlePaths p = bundle_paths_from_env();
    EXPECT_TRUE(p.given);
    EXPECT_TRUE(p.paths.empty());
  }
  {
    EnvGuard e("MAGICUBE_BUNDLE", nullptr);
    BundlePaths p = bundle_paths_from_env();
    EXPECT_FALSE(p.given);
    // The default: beside this binary's directory, used only when it exists.
    const std::string def = default_bundle_path();
    EXPECT_NE(def.find("/share/magicube/kernels.mcbundle"), std::string::npos) << def;
    EXPECT_EQ(p.paths.empty(), !llvm::sys::fs::exists(def));
  }
  // A missing default is silent; a missing bundle the user named is warned about.
  LogCapture logs;
  EXPECT_TRUE(open_bundles(BundlePaths{{"/nonexistent/kernels.mcbundle"}, false}, kGenerator, "13.0").empty());
  EXPECT_EQ(logs.text(), "");
}

TEST(Bundle, TheProcessCacheOpensMagicubeBundleOnce) {
  TempDir tmp;
  const std::string path = tmp.file("k.mcbundle");
  write_file(path, good_bundle_bytes());
  EnvGuard e("MAGICUBE_BUNDLE", path.c_str());
  CompileCache cache(std::nullopt);
  cache.use_process_bundles(kGenerator);
  cache.use_process_bundles(kGenerator);
  EXPECT_EQ(cache.bundle_count(), 1u);
  auto cubin = cache.get_cubin(key_of(1), kArch, []() -> llvm::Expected<std::string> { return kernel_source(1); }, "k.cu");
  ASSERT_TRUE(bool(cubin));
  EXPECT_EQ(cache.stats().bundle_hits, 1u);
}

TEST(Bundle, ConcurrentLookupsAllHit) {
  TempDir tmp;
  const std::string path = tmp.file("k.mcbundle");
  write_file(path, good_bundle_bytes());
  auto bundles = open_bundles(BundlePaths{{path}, true}, kGenerator, toolchain_version());
  ASSERT_EQ(bundles.size(), 1u);
  CompileCache cache(std::nullopt);
  cache.add_bundle(bundles[0]);
  std::vector<std::thread> threads;
  std::atomic<int> wrong{0};
  for (int t = 0; t < 8; ++t)
    threads.emplace_back([&, t] {
      const int which = 1 + t % 2;
      auto c = cache.get_cubin(key_of(which), kArch, []() -> llvm::Expected<std::string> { return std::string("x"); },
                               "k.cu");
      if (!c || *c != Compiled::get().inputs[size_t(which - 1)].cubin) ++wrong;
      if (!c) llvm::consumeError(c.takeError());
    });
  for (auto &t : threads) t.join();
  EXPECT_EQ(wrong.load(), 0);
  EXPECT_EQ(cache.stats().compiles, 0u);
}
