// Kernel cache (cache/): keys, disk level (format, corruption, concurrency, env), memory level;
// and the JIT stage (jit/): the combined CompileCache and the NVRTC wrapper. Needs NVRTC, not a GPU.
#include <algorithm>
#include <atomic>
#include <functional>
#include <optional>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>
#include <spdlog/sinks/ostream_sink.h>
#include <csignal>
#include <ctime>
#include <fcntl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cache/cache_key.h"
#include "cache/disk_cache.h"
#include "cache/memory_cache.h"
#include "jit/compile_cache.h"
#include "jit/nvrtc.h"
#include "llvm/ADT/SmallString.h"
#include "llvm/Support/FileSystem.h"
#include "support/log.h"
#include "tests/fs_util.h"
#include "tests/fault_util.h"

using namespace magicube;
using magicube::testing::EnvGuard;
using magicube::testing::LogCapture;
using magicube::testing::read_file;
using magicube::testing::write_file;
using magicube::testing::in_child;
using magicube::testing::kUnprivilegedId;

namespace {

struct TempDir : magicube::testing::TempDir {
  TempDir() : magicube::testing::TempDir("magicube-cache-test") {}
};
bool exists(const std::string &path) { return llvm::sys::fs::exists(path); }

DiskCache open_or_die(const std::string &dir) {
  auto c = DiskCache::open(dir);
  if (!c) {
    ADD_FAILURE() << llvm::toString(c.takeError());
    std::abort();
  }
  return std::move(*c);
}

CacheKey key_of(const std::string &ir) { return make_cache_key("gen-1", ir, "-std=c++17", 90, "13.0"); }

// A payload with NULs and high bytes, like a cubin.
std::string binary_payload(size_t n, unsigned seed = 1) {
  std::string s(n, '\0');
  for (size_t i = 0; i < n; ++i) s[i] = static_cast<char>((i * 131 + seed * 7) & 0xff);
  return s;
}

const char *kTinyKernel = R"(extern "C" __global__ void add_one(int *x) {
  x[threadIdx.x] += 1;
}
)";

}  // namespace

// ---- keys -------------------------------------------------------------------------------

TEST(CacheKey, StableAcrossRunsAndPlatforms) {
  CacheKey k = make_cache_key("gen-1", "spmm.s8xs8.v8.n64.pf.i32.sm_90", "-std=c++17", 90, "13.0");
  EXPECT_TRUE(is_key_hex(k.hex)) << k.hex;
  EXPECT_EQ(k, make_cache_key("gen-1", "spmm.s8xs8.v8.n64.pf.i32.sm_90", "-std=c++17", 90, "13.0"));
  // Pinned (= sha256 of u64le-length-prefixed "magicube-cache-key-v1", fields..., checked
  // with Python): changing the key layout must be deliberate (it orphans every entry).
  EXPECT_EQ(k.hex, "c8b927a2368f0f8b20fca6ce09f4f6726d1b1b18d2a9189de309036c83f2287d");
}

TEST(CacheKey, SensitiveToEveryField) {
  const CacheKey base = make_cache_key("g", "ir", "opts", 90, "13.0");
  EXPECT_NE(base, make_cache_key("g2", "ir", "opts", 90, "13.0"));
  EXPECT_NE(base, make_cache_key("g", "ir2", "opts", 90, "13.0"));
  EXPECT_NE(base, make_cache_key("g", "ir", "opts2", 90, "13.0"));
  EXPECT_NE(base, make_cache_key("g", "ir", "opts", 80, "13.0"));
  EXPECT_NE(base, make_cache_key("g", "ir", "opts", 90, "13.1"));
  // Fields cannot run into each other.
  EXPECT_NE(make_cache_key("ab", "c", "", 90, ""), make_cache_key("a", "bc", "", 90, ""));
  EXPECT_NE(make_cache_key("", "x", "y", 90, ""), make_cache_key("", "xy", "", 90, ""));
  EXPECT_NE(make_cache_key("", "", "9", 0, ""), make_cache_key("", "", "", 90, ""));
}

// ---- disk level -------------------------------------------------------------------------

TEST(DiskCache, StoreLoadRoundTrip) {
  TempDir tmp;
  DiskCache c = open_or_die(tmp.path());
  EXPECT_TRUE(c.enabled());
  const CacheKey k = key_of("a");
  const std::string payload = binary_payload(10000);
  ASSERT_FALSE(llvm::errorToBool(c.store(k, payload)));
  EXPECT_EQ(c.entry_path(k), tmp.path() + "/" + k.hex + ".cubin");
  EXPECT_TRUE(exists(c.entry_path(k)));
  auto got = c.load(k);
  ASSERT_TRUE(got.has_value());
  EXPECT_EQ(*got, payload);
  std::string raw = read_file(c.entry_path(k));
  EXPECT_EQ(raw.substr(0, 6), "MCUBE1");
  EXPECT_EQ(raw.size(), DiskCache::kHeaderSize + payload.size());
  auto s = c.stats();
  EXPECT_EQ(s.entries, 1u);
  EXPECT_EQ(s.bytes, raw.size());
  // Overwrite and empty payloads work too.
  ASSERT_FALSE(llvm::errorToBool(c.store(k, "")));
  EXPECT_EQ(c.load(k), std::optional<std::string>(""));
}

TEST(DiskCache, MissIsQuiet) {
  TempDir tmp;
  LogCapture logs;
  DiskCache c = open_or_die(tmp.path());
  EXPECT_FALSE(c.load(key_of("nothing")).has_value());
  EXPECT_EQ(logs.text(), "");
  EXPECT_EQ(c.stats().entries, 0u);
}

TEST(DiskCache, CorruptEntriesAreWarnedDeletedAndMissed) {
  TempDir tmp;
  DiskCache c = open_or_die(tmp.path());
  const CacheKey k = key_of("corrupt");
  const std::string payload = binary_payload(4096);
  const std::string file = c.entry_path(k);

  struct Case {
    const char *name;
    std::function<std::string(std::string)> damage;
    const char *reason;
  } cases[] = {
      {"flipped payload byte", [](std::string s) { s[s.size() / 2] ^= 0x10; return s; }, "SHA-256"},
      {"flipped header length", [](std::string s) { s[9] ^= 0x01; return s; }, "length"},
      {"bad magic", [](std::string s) { s[0] = 'X'; return s; }, "magic"},
      {"truncated payload", [](std::string s) { return s.substr(0, s.size() - 100); }, "length"},
      {"truncated header", [](std::string s) { return s.substr(0, 20); }, "truncated"},
      {"empty file", [](std::string) { return std::string(); }, "truncated"},
  };
  for (const Case &cs : cases) {
    SCOPED_TRACE(cs.name);
    ASSERT_FALSE(llvm::errorToBool(c.store(k, payload)));
    write_file(file, cs.damage(read_file(file)));
    LogCapture logs;
    EXPECT_FALSE(c.load(k).has_value());
    std::string warned = logs.text();
    EXPECT_NE(warned.find("[warning]"), std::string::npos) << warned;
    EXPECT_NE(warned.find(file), std::string::npos) << warned;
    EXPECT_NE(warned.find(cs.reason), std::string::npos) << warned;
    EXPECT_FALSE(exists(file));
  }
}

TEST(DiskCache, DisabledByEnv) {
  TempDir tmp;
  const CacheKey k = key_of("env");
  ASSERT_FALSE(llvm::errorToBool(open_or_die(tmp.path()).store(k, "payload")));
  EnvGuard off("MAGICUBE_CACHE", "0");
  DiskCache c = open_or_die(tmp.path());
  EXPECT_FALSE(c.enabled());
  EXPECT_FALSE(c.load(k).has_value());  // present on disk, still a miss
  const CacheKey k2 = key_of("env2");
  EXPECT_FALSE(llvm::errorToBool(c.store(k2, "x")));
  EXPECT_FALSE(exists(c.entry_path(k2)));
  // Disabled: nothing is created either.
  DiskCache fresh = open_or_die(tmp.file("never/created"));
  EXPECT_FALSE(exists(tmp.file("never")));
  {
    EnvGuard on("MAGICUBE_CACHE", "1");
    EXPECT_TRUE(open_or_die(tmp.path()).enabled());
  }
}

TEST(DiskCache, DefaultPathResolution) {
  TempDir tmp;
  EnvGuard no_off("MAGICUBE_CACHE", nullptr);
  {
    EnvGuard d("MAGICUBE_CACHE_DIR", tmp.file("explicit").c_str());
    auto c = DiskCache::open_default();
    ASSERT_TRUE(bool(c)) << llvm::toString(c.takeError());
    EXPECT_EQ(c->path(), tmp.file("explicit"));
  }
  EnvGuard d("MAGICUBE_CACHE_DIR", nullptr);
  {
    EnvGuard x("XDG_CACHE_HOME", tmp.file("xdg").c_str());
    auto c = DiskCache::open_default();
    ASSERT_TRUE(bool(c)) << llvm::toString(c.takeError());
    EXPECT_EQ(c->path(), tmp.file("xdg/magicube"));
  }
  EnvGuard x("XDG_CACHE_HOME", nullptr);
  EnvGuard h("HOME", tmp.file("home").c_str());
  auto c = DiskCache::open_default();
  ASSERT_TRUE(bool(c)) << llvm::toString(c.takeError());
  EXPECT_EQ(c->path(), tmp.file("home/.cache/magicube"));
  // Created with its parents, owner-only.
  for (const char *p : {"home", "home/.cache", "home/.cache/magicube"}) {
    struct stat st {};
    ASSERT_EQ(::stat(tmp.file(p).c_str(), &st), 0) << p;
    EXPECT_EQ(st.st_mode & 0777, 0700u) << p;
  }
}

TEST(DiskCache, ParentIsAFileIsAnErrorNamingTheDir) {
  TempDir tmp;
  write_file(tmp.file("plain"), "not a dir");
  const std::string dir = tmp.file("plain/cache");
  auto c = DiskCache::open(dir);
  ASSERT_FALSE(bool(c));
  std::string msg = llvm::toString(c.takeError());
  EXPECT_NE(msg.find("cache dir " + dir), std::string::npos) << msg;
  EXPECT_NE(msg.find("Not a directory"), std::string::npos) << msg;

  auto f = DiskCache::open(tmp.file("plain"));  // the path itself is a file
  ASSERT_FALSE(bool(f));
  msg = llvm::toString(f.takeError());
  EXPECT_NE(msg.find("cache dir " + tmp.file("plain")), std::string::npos) << msg;
  EXPECT_NE(msg.find("Not a directory"), std::string::npos) << msg;
}

// A private directory that refuses writes (a read-only mount, chmod 0500) still serves its
// valid entries; stores are skipped. (As root the check runs as an unprivileged child.)
TEST(DiskCache, ReadOnlyDirServesItsEntries) {
  TempDir tmp;
  ::chmod(tmp.path().c_str(), 0711);  // the child may have to traverse it
  const std::string dir = tmp.file("ro");
  const CacheKey k = key_of("read-only");
  const std::string payload = binary_payload(5000, 9);
  std::string entry;
  {
    DiskCache c = open_or_die(dir);
    ASSERT_FALSE(llvm::errorToBool(c.store(k, payload)));
    entry = c.entry_path(k);
  }
  if (::geteuid() == 0) {
    ASSERT_EQ(::chown(dir.c_str(), kUnprivilegedId, kUnprivilegedId), 0);
    ASSERT_EQ(::chown(entry.c_str(), kUnprivilegedId, kUnprivilegedId), 0);
  }
  ASSERT_EQ(::chmod(dir.c_str(), 0500), 0);
  std::string failure = in_child(
      [&]() -> std::string {
        auto c = DiskCache::open(dir);
        if (!c) return "open failed: " + llvm::toString(c.takeError());
        if (!c->enabled() || c->writable()) return "expected an enabled, read-only cache";
        auto got = c->load(k);
        if (!got || *got != payload) return "the valid entry was not served";
        if (llvm::Error e = c->store(key_of("another"), "x")) return "store failed: " + llvm::toString(std::move(e));
        if (exists(c->entry_path(key_of("another")))) return "a read-only cache stored an entry";
        return "";
      },
      20, /*unprivileged=*/true);
  ::chmod(dir.c_str(), 0700);
  EXPECT_EQ(failure, "");
}

// ---- planted entries: only a private directory, only regular files ----------------------

TEST(DiskCache, RefusesADirectoryOthersCanWrite) {
  TempDir tmp;
  for (mode_t mode : {0777, 0770, 0733, 0702}) {
    SCOPED_TRACE(mode);
    const std::string dir = tmp.file("shared" + std::to_string(mode));
    ASSERT_EQ(::mkdir(dir.c_str(), 0700), 0);
    ASSERT_EQ(::chmod(dir.c_str(), mode), 0);
    auto c = DiskCache::open(dir);
    ASSERT_FALSE(bool(c)) << "a directory of mode " << mode << " was accepted";
    std::string msg = llvm::toString(c.takeError());
    EXPECT_NE(msg.find("cache dir " + dir), std::string::npos) << msg;
    EXPECT_NE(msg.find((mode & 02) ? "writable by every user" : "writable by its group"), std::string::npos) << msg;
    EXPECT_NE(msg.find("chmod go-w"), std::string::npos) << msg;
  }
  // 0755 and 0700 are fine.
  ASSERT_EQ(::mkdir(tmp.file("mine").c_str(), 0755), 0);
  ASSERT_EQ(::chmod(tmp.file("mine").c_str(), 0755), 0);
  EXPECT_TRUE(open_or_die(tmp.file("mine")).enabled());
}

TEST(DiskCache, RefusesADirectoryOwnedBySomeoneElse) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root to give a directory to another user";
  TempDir tmp;
  const std::string dir = tmp.file("theirs");
  ASSERT_EQ(::mkdir(dir.c_str(), 0755), 0);
  ASSERT_EQ(::chown(dir.c_str(), 4242, 4242), 0);
  auto c = DiskCache::open(dir);
  ASSERT_FALSE(bool(c));
  std::string msg = llvm::toString(c.takeError());
  EXPECT_NE(msg.find("is owned by uid 4242, not by this user (uid 0)"), std::string::npos) << msg;
}

// A planted entry (valid header and SHA-256, any payload) in a shared directory is never
// served: the process cache warns once and compiles without the disk level.
TEST(CompileCache, PlantedEntryInASharedDirIsNeverServed) {
  TempDir tmp;
  const std::string dir = tmp.file("shared");
  ASSERT_EQ(::mkdir(dir.c_str(), 0700), 0);
  const CacheKey k = make_cache_key("gen-1", "tiny-planted", "", 80, nvrtc_version());
  write_file(dir + "/" + k.hex + ".cubin", encode_cache_entry("PLANTED: not a cubin"));
  ASSERT_EQ(::chmod(dir.c_str(), 0777), 0);
  auto disk = DiskCache::open(dir);
  ASSERT_FALSE(bool(disk));
  llvm::consumeError(disk.takeError());
  CompileCache cache(std::nullopt);  // what CompileCache::process() falls back to
  auto cubin = cache.get_cubin(k, 80, [] { return llvm::Expected<std::string>(std::string(kTinyKernel)); }, "tiny.cu");
  ASSERT_TRUE(bool(cubin)) << llvm::toString(cubin.takeError());
  EXPECT_EQ(cubin->substr(0, 4), std::string("\x7f" "ELF"));
}

// Entries are opened without following symlinks and only as regular files of bounded size:
// a symlink (to a device or to a valid entry elsewhere), a FIFO, a directory or an oversized
// file is a warned miss, without blocking and without reading it.
TEST(DiskCache, SymlinksSpecialFilesAndHugeEntriesAreRefused) {
  TempDir tmp;
  const std::string dir = tmp.file("c");
  DiskCache c = open_or_die(dir);
  const CacheKey k = key_of("special");
  const std::string file = c.entry_path(k);
  // A valid entry elsewhere, reached through a symlink: still refused (origin unknown).
  const std::string elsewhere = tmp.file("valid-entry");
  write_file(elsewhere, encode_cache_entry("payload"));

  struct Case {
    const char *name;
    std::function<void()> make;
    const char *reason;
  } cases[] = {
      {"symlink to /dev/zero", [&] { ASSERT_EQ(::symlink("/dev/zero", file.c_str()), 0); }, "symlink"},
      {"symlink to a valid entry", [&] { ASSERT_EQ(::symlink(elsewhere.c_str(), file.c_str()), 0); }, "symlink"},
      {"dangling symlink", [&] { ASSERT_EQ(::symlink(tmp.file("nowhere").c_str(), file.c_str()), 0); }, "symlink"},
      {"FIFO", [&] { ASSERT_EQ(::mkfifo(file.c_str(), 0600), 0); }, "FIFO"},
      {"directory", [&] { ASSERT_EQ(::mkdir(file.c_str(), 0700), 0); }, "directory"},
      {"oversized file", [&] {
         write_file(file, encode_cache_entry("x"));
         ASSERT_EQ(::truncate(file.c_str(), off_t(DiskCache::kHeaderSize + DiskCache::kMaxEntryBytes + 1)), 0);
       }, "larger than"},
  };
  for (const Case &cs : cases) {
    SCOPED_TRACE(cs.name);
    llvm::sys::fs::remove_directories(file);
    ::unlink(file.c_str());
    cs.make();
    std::string failure = in_child([&]() -> std::string {
      LogCapture logs;
      if (c.load(k)) return "served";
      std::string w = logs.text();
      if (w.find(file) == std::string::npos || w.find(cs.reason) == std::string::npos) return "warning: " + w;
      return "";
    });
    EXPECT_EQ(failure, "");
    if (std::string(cs.name).find("symlink") != std::string::npos) {
      EXPECT_EQ(c.stats().entries, 0u) << "a symlink counted as an entry";
    }
  }
  // clear removes an entry-named symlink (never its target).
  ::unlink(file.c_str());
  ASSERT_EQ(::symlink(elsewhere.c_str(), file.c_str()), 0);
  ASSERT_FALSE(llvm::errorToBool(c.clear()));
  EXPECT_FALSE(llvm::sys::fs::exists(file) || llvm::sys::fs::is_symlink_file(file));
  EXPECT_TRUE(exists(elsewhere));
  // A store replaces whatever was at the name.
  ASSERT_EQ(::symlink("/dev/zero", file.c_str()), 0);
  ASSERT_FALSE(llvm::errorToBool(c.store(k, "fresh")));
  EXPECT_EQ(c.load(k), std::optional<std::string>("fresh"));
}

// ---- housekeeping: temp files of killed writers, the size bound, environment ----------

TEST(DiskCache, KillNineMidWriteLeavesNoServedEntryAndTheTempIsSweptByTheNextStore) {
  TempDir tmp;
  DiskCache c = open_or_die(tmp.path());
  const CacheKey k = key_of("killed");
  const std::string payload = binary_payload(8 << 20, 5);  // 8 MiB: the kill lands mid-write
  int with_temp = 0;
  for (int round = 0; round < 6; ++round) {
    pid_t pid = ::fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      for (;;) (void)c.store(k, payload);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20 + 15 * round));
    ::kill(pid, SIGKILL);
    int st = 0;
    ::waitpid(pid, &st, 0);
    LogCapture logs;
    auto got = c.load(k);
    if (got) {
      EXPECT_EQ(*got, payload);  // never a partial entry
    }
    EXPECT_EQ(logs.text(), "");
    with_temp += c.stats().temps > 0;
    // The next store (of any key) removes the dead writer's temp file.
    ASSERT_FALSE(llvm::errorToBool(c.store(key_of("after"), "x")));
    EXPECT_EQ(c.stats().temps, 0u) << "round " << round;
  }
  std::printf("[          ] %d of 6 kills left a temp file behind\n", with_temp);
}

TEST(DiskCache, StoreRemovesStaleTempsButNotLiveOnes) {
  TempDir tmp;
  DiskCache c = open_or_die(tmp.path());
  const std::string hex = key_of("0").hex;
  const std::string stale = tmp.file(hex + ".cubin.tmp.2147483646.0123456789abcdef");  // no such pid
  const std::string live = tmp.file(hex + ".cubin.tmp." + std::to_string(::getpid()) + ".0123456789abcdef");
  const std::string probe = tmp.file("write-probe.tmp.2147483646.0123456789abcdef");
  for (const auto &f : {stale, live, probe}) write_file(f, "partial");
  EXPECT_EQ(c.stats().temps, 3u);
  ASSERT_FALSE(llvm::errorToBool(c.store(key_of("1"), "p")));
  EXPECT_FALSE(exists(stale));
  EXPECT_FALSE(exists(probe));
  EXPECT_TRUE(exists(live));
  EXPECT_EQ(c.stats().temps, 1u);
}

TEST(DiskCache, SizeBoundEvictsTheLeastRecentlyUsed) {
  TempDir tmp;
  DiskCache c = open_or_die(tmp.path());
  const std::string payload = binary_payload(1000);
  const uint64_t entry = DiskCache::kHeaderSize + payload.size();
  c.set_max_bytes(3 * entry);
  const CacheKey k[4] = {key_of("lru0"), key_of("lru1"), key_of("lru2"), key_of("lru3")};
  const time_t now = std::time(nullptr);
  for (int i = 0; i < 3; ++i) {
    ASSERT_FALSE(llvm::errorToBool(c.store(k[i], payload)));
    const struct timespec t[2] = {{now - 300 + 100 * i, 0}, {now - 300 + 100 * i, 0}};
    ASSERT_EQ(::utimensat(AT_FDCWD, c.entry_path(k[i]).c_str(), t, 0), 0);
  }
  EXPECT_EQ(c.stats().entries, 3u);
  ASSERT_TRUE(c.load(k[0]).has_value());  // k0 is now the most recently used
  ASSERT_FALSE(llvm::errorToBool(c.store(k[3], payload)));
  EXPECT_EQ(c.stats().entries, 3u);
  EXPECT_LE(c.stats().bytes, 3 * entry);
  EXPECT_TRUE(exists(c.entry_path(k[0])));
  EXPECT_FALSE(exists(c.entry_path(k[1]))) << "the least recently used entry was kept";
  EXPECT_TRUE(exists(c.entry_path(k[2])));
  EXPECT_TRUE(exists(c.entry_path(k[3])));
  // The entry just stored stays even when it alone exceeds the bound.
  c.set_max_bytes(10);
  ASSERT_FALSE(llvm::errorToBool(c.store(k[1], payload)));
  EXPECT_EQ(c.stats().entries, 1u);
  EXPECT_TRUE(exists(c.entry_path(k[1])));
  // 0: no bound.
  c.set_max_bytes(0);
  for (const CacheKey &key : k) ASSERT_FALSE(llvm::errorToBool(c.store(key, payload)));
  EXPECT_EQ(c.stats().entries, 4u);
}

TEST(DiskCache, MaxBytesFromTheEnvironment) {
  TempDir tmp;
  struct Case {
    const char *value;
    uint64_t bytes;
    bool warns;
  } cases[] = {
      {"", DiskCache::kDefaultMaxBytes, false},   {"0", 0, false},
      {"12345", 12345, false},                   {"64K", 64 << 10, false},
      {"200m", uint64_t(200) << 20, false},      {"2G", uint64_t(2) << 30, false},
      {"banana", DiskCache::kDefaultMaxBytes, true},
  };
  for (const Case &cs : cases) {
    SCOPED_TRACE(cs.value);
    EnvGuard env("MAGICUBE_CACHE_MAX_BYTES", cs.value);
    LogCapture logs;
    EXPECT_EQ(open_or_die(tmp.path()).max_bytes(), cs.bytes);
    if (cs.warns) {
      EXPECT_NE(logs.text().find("MAGICUBE_CACHE_MAX_BYTES='banana' is not a size"), std::string::npos) << logs.text();
    }
  }
  EnvGuard unset("MAGICUBE_CACHE_MAX_BYTES", nullptr);
  EXPECT_EQ(open_or_die(tmp.path()).max_bytes(), DiskCache::kDefaultMaxBytes);
}

TEST(DiskCache, UnknownMagicubeCacheValueIsWarnedAboutAndIgnored) {
  TempDir tmp;
  EnvGuard env("MAGICUBE_CACHE", "banana");
  LogCapture logs;
  DiskCache c = open_or_die(tmp.path());
  EXPECT_TRUE(c.enabled());
  EXPECT_NE(logs.text().find("MAGICUBE_CACHE='banana' is not 0 or 1"), std::string::npos) << logs.text();
}

TEST(DiskCache, ClearRemovesOnlyOurEntriesAndStaleTemps) {
  TempDir tmp;
  DiskCache c = open_or_die(tmp.path());
  for (int i = 0; i < 3; ++i) ASSERT_FALSE(llvm::errorToBool(c.store(key_of(std::to_string(i)), "p")));
  const std::string hex = key_of("0").hex;
  const std::string stale = tmp.file(hex + ".cubin.tmp.2147483646.0123456789abcdef");  // no such pid
  const std::string live = tmp.file(hex + ".cubin.tmp." + std::to_string(::getpid()) + ".0123456789abcdef");
  const std::string other = tmp.file("notes.txt"), short_name = tmp.file("abc.cubin");
  for (const auto &f : {stale, live, other, short_name}) write_file(f, "x");
  EXPECT_EQ(c.stats().entries, 3u);
  ASSERT_FALSE(llvm::errorToBool(c.clear()));
  EXPECT_EQ(c.stats().entries, 0u);
  EXPECT_FALSE(exists(stale));
  EXPECT_TRUE(exists(live));  // its writer (us) may still rename it
  EXPECT_TRUE(exists(other));
  EXPECT_TRUE(exists(short_name));
}

TEST(DiskCache, TwoProcessesStoringOneKey) {
  TempDir tmp;
  DiskCache c = open_or_die(tmp.path());
  const CacheKey k = key_of("race");
  const std::string payload = binary_payload(256 * 1024, 3);
  LogCapture logs;

  pid_t kids[2];
  for (pid_t &pid : kids) {
    pid = ::fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      for (int i = 0; i < 50; ++i)
        if (llvm::Error e = c.store(k, payload)) {
          llvm::consumeError(std::move(e));
          ::_exit(1);
        }
      ::_exit(0);
    }
  }
  int loads = 0, hits = 0, alive = 2;
  int status[2] = {0, 0};
  while (alive > 0) {
    auto got = c.load(k);
    ++loads;
    if (hits > 0) {
      ASSERT_TRUE(got.has_value()) << "entry vanished during a rename";  // no gap
    }
    if (got) {
      ++hits;
      ASSERT_EQ(*got, payload);
    }
    for (int i = 0; i < 2; ++i)
      if (kids[i] > 0 && ::waitpid(kids[i], &status[i], WNOHANG) == kids[i]) kids[i] = -1, --alive;
  }
  for (int s : status) {
    ASSERT_TRUE(WIFEXITED(s));
    EXPECT_EQ(WEXITSTATUS(s), 0);
  }
  auto final_entry = c.load(k);
  ASSERT_TRUE(final_entry.has_value());
  EXPECT_EQ(*final_entry, payload);
  EXPECT_EQ(logs.text(), "");  // no load ever saw a partial entry
  auto s = c.stats();
  EXPECT_EQ(s.entries, 1u);
  std::vector<std::string> leftovers;
  std::error_code ec;
  for (llvm::sys::fs::directory_iterator it(tmp.path(), ec), end; it != end && !ec; it.increment(ec))
    leftovers.push_back(it->path());
  EXPECT_EQ(leftovers.size(), 1u) << "temp files left behind";
  std::printf("[          ] %d loads while storing, %d hits\n", loads, hits);
}

// ---- memory level -----------------------------------------------------------------------

TEST(MemoryCache, GetPutCountsAndContexts) {
  MemoryCache<int> m;
  int ctx_a = 0, ctx_b = 0;
  EXPECT_EQ(m.get(&ctx_a, "k"), nullptr);
  auto first = m.put(&ctx_a, "k", std::make_shared<int>(1));
  EXPECT_EQ(*first, 1);
  EXPECT_EQ(*m.put(&ctx_a, "k", std::make_shared<int>(2)), 1);  // first one wins
  EXPECT_EQ(*m.get(&ctx_a, "k"), 1);
  EXPECT_EQ(m.get(&ctx_b, "k"), nullptr);  // contexts are separate
  EXPECT_EQ(m.size(), 1u);
  EXPECT_EQ(m.hits(), 1u);
  EXPECT_EQ(m.misses(), 2u);
  m.clear();
  EXPECT_EQ(m.size(), 0u);
  EXPECT_EQ(*first, 1);  // held values outlive clear()
}

TEST(MemoryCache, BoundedWithLeastRecentlyUsedEviction) {
  MemoryCache<int> m(3);
  EXPECT_EQ(m.capacity(), 3u);
  int ctx = 0;
  for (int i = 0; i < 3; ++i) m.put(&ctx, std::to_string(i), std::make_shared<int>(i));
  auto held = m.get(&ctx, "1");  // 1 is used; 0 is now the least recently used
  ASSERT_NE(held, nullptr);
  ASSERT_NE(m.get(&ctx, "2"), nullptr);
  m.put(&ctx, "3", std::make_shared<int>(3));
  EXPECT_EQ(m.size(), 3u);
  EXPECT_EQ(m.get(&ctx, "0"), nullptr) << "the least recently used entry was kept";
  ASSERT_NE(m.get(&ctx, "1"), nullptr);
  m.put(&ctx, "4", std::make_shared<int>(4));  // evicts 2 (1 and 3 were used after it)
  EXPECT_EQ(m.get(&ctx, "2"), nullptr);
  EXPECT_EQ(*m.get(&ctx, "3"), 3);
  EXPECT_EQ(*held, 1);  // an evicted value lives on while held
  EXPECT_EQ(m.stats().evictions, 2u);
  MemoryCache<int> unbounded(0);
  for (int i = 0; i < 5000; ++i) unbounded.put(nullptr, std::to_string(i), std::make_shared<int>(i));
  EXPECT_EQ(unbounded.size(), 5000u);
  MemoryCache<int> dflt;
  EXPECT_EQ(dflt.capacity(), MemoryCache<int>::kDefaultCapacity);
  for (size_t i = 0; i < 2 * MemoryCache<int>::kDefaultCapacity; ++i)
    dflt.put(nullptr, std::to_string(i), std::make_shared<int>(int(i)));
  EXPECT_EQ(dflt.size(), MemoryCache<int>::kDefaultCapacity);
}

TEST(MemoryCache, ThreadSafe) {
  MemoryCache<int> m;
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&m, t] {
      for (int i = 0; i < 1000; ++i) {
        std::string k = std::to_string(i % 50);
        if (!m.get(nullptr, k)) m.put(nullptr, k, std::make_shared<int>(t));
      }
    });
  for (auto &th : threads) th.join();
  EXPECT_EQ(m.size(), 50u);
  EXPECT_EQ(m.hits() + m.misses(), 4000u);
}

// ---- NVRTC ------------------------------------------------------------------------------

TEST(Nvrtc, Version) {
  std::string v = nvrtc_version();
  EXPECT_EQ(v.rfind("13.", 0), 0u) << v;
}

TEST(Nvrtc, CubinForSm80AndSm90) {
  for (int arch : {80, 90}) {
    auto cubin = nvrtc_compile(kTinyKernel, "tiny.cu", arch, Emit::CUBIN);
    ASSERT_TRUE(bool(cubin)) << llvm::toString(cubin.takeError());
    ASSERT_GE(cubin->size(), 4u);
    EXPECT_EQ(cubin->substr(0, 4), std::string("\x7f" "ELF")) << "sm_" << arch;
  }
}

TEST(Nvrtc, Ptx) {
  auto ptx = nvrtc_compile(kTinyKernel, "tiny.cu", 90, Emit::PTX, {"-lineinfo"});
  ASSERT_TRUE(bool(ptx)) << llvm::toString(ptx.takeError());
  EXPECT_NE(ptx->find(".target sm_90"), std::string::npos);
  EXPECT_NE(ptx->find("add_one"), std::string::npos);
  EXPECT_EQ(ptx->find('\0'), std::string::npos);
}

TEST(Nvrtc, SyntaxErrorShowsTheLine) {
  const char *bad = "extern \"C\" __global__ void broken(int *x) {\n"  // 1
                    "  int a = x[0];\n"                                // 2
                    "  int b = (a + ;\n"                               // 3
                    "  x[1] = b;\n"                                    // 4
                    "}\n";                                             // 5
  auto r = nvrtc_compile(bad, "broken.cu", 90, Emit::CUBIN);
  ASSERT_FALSE(bool(r));
  std::string msg = llvm::toString(r.takeError());
  EXPECT_NE(msg.find("broken.cu"), std::string::npos) << msg;
  EXPECT_NE(msg.find("sm_90"), std::string::npos) << msg;
  EXPECT_NE(msg.find("broken.cu(3): error"), std::string::npos) << msg;  // NVRTC's log
  EXPECT_NE(msg.find(">     3 |   int b = (a + ;"), std::string::npos) << msg;  // our excerpt
  EXPECT_NE(msg.find("      2 |   int a = x[0];"), std::string::npos) << msg;
}

TEST(Nvrtc, BadArchNamesTheArch) {
  auto r = nvrtc_compile(kTinyKernel, "tiny.cu", 7, Emit::CUBIN);
  ASSERT_FALSE(bool(r));
  std::string msg = llvm::toString(r.takeError());
  EXPECT_NE(msg.find("arch 7"), std::string::npos) << msg;
  auto u = nvrtc_compile(kTinyKernel, "tiny.cu", 12, Emit::CUBIN);  // NVRTC rejects sm_12
  ASSERT_FALSE(bool(u));
  msg = llvm::toString(u.takeError());
  EXPECT_NE(msg.find("tiny.cu"), std::string::npos) << msg;
}

TEST(Nvrtc, ErrorContextParsing) {
  std::string src = "l1\nl2\nl3\nl4\nl5\nl6\n";
  std::string log = "k.cu(4): error: bad\nk.cu(4): error: worse\nk.cu(1): warning: meh\nother.cu(2): error: x\n";
  std::string ctx = nvrtc_error_context(log, "k.cu", src);
  EXPECT_EQ(ctx, "k.cu(4): error: bad\n      2 | l2\n      3 | l3\n>     4 | l4\n      5 | l5\n      6 | l6\n");
  EXPECT_NE(nvrtc_error_context("k.cu(99): error: x\n", "k.cu", src).find("past the end"), std::string::npos);
}

// ---- memory -> disk -> NVRTC ------------------------------------------------------------

TEST(CompileCache, LevelsAndRecompileOfCorruptEntry) {
  TempDir tmp;
  const CacheKey k = make_cache_key("gen-1", "tiny", "", 80, nvrtc_version());
  int made = 0;
  auto make_source = [&made]() -> llvm::Expected<std::string> {
    ++made;
    return std::string(kTinyKernel);
  };

  CompileCache first(open_or_die(tmp.path()));
  auto a = first.get_cubin(k, 80, make_source, "tiny.cu");
  ASSERT_TRUE(bool(a)) << llvm::toString(a.takeError());
  EXPECT_EQ(made, 1);
  auto b = first.get_cubin(k, 80, make_source, "tiny.cu");  // memory hit
  ASSERT_TRUE(bool(b));
  EXPECT_EQ(*a, *b);
  EXPECT_EQ(made, 1);
  auto s = first.stats();
  EXPECT_EQ(s.memory_hits, 1u);
  EXPECT_EQ(s.memory_misses, 1u);
  EXPECT_EQ(s.disk_misses, 1u);
  EXPECT_EQ(s.compiles, 1u);

  CompileCache second(open_or_die(tmp.path()));  // a new process, as far as memory goes
  auto c = second.get_cubin(k, 80, make_source, "tiny.cu");
  ASSERT_TRUE(bool(c));
  EXPECT_EQ(*c, *a);
  EXPECT_EQ(made, 1);
  EXPECT_EQ(second.stats().disk_hits, 1u);

  // Corrupt the entry: the next fresh cache warns, recompiles and repairs it.
  const std::string file = second.disk()->entry_path(k);
  std::string raw = read_file(file);
  raw[raw.size() - 1] ^= 0xff;
  write_file(file, raw);
  LogCapture logs;
  CompileCache third(open_or_die(tmp.path()));
  auto d = third.get_cubin(k, 80, make_source, "tiny.cu");
  ASSERT_TRUE(bool(d)) << llvm::toString(d.takeError());
  EXPECT_EQ(made, 2);
  EXPECT_EQ(*d, *a);
  EXPECT_NE(logs.text().find(file), std::string::npos) << logs.text();
  EXPECT_EQ(third.stats().disk_misses, 1u);
  EXPECT_EQ(third.stats().compiles, 1u);
  auto repaired = open_or_die(tmp.path()).load(k);
  ASSERT_TRUE(repaired.has_value());
  EXPECT_EQ(*repaired, *a);
}

// A full disk (here: a file-size limit, so every write past 256 bytes fails with EFBIG, as
// ENOSPC would) only costs the disk level: the kernel is compiled and returned, the failed
// store is counted and warned about, and no entry or temp file is left behind.
TEST(CompileCache, AFullDiskOnlyCostsTheDiskLevel) {
  TempDir tmp;
  const CacheKey k = make_cache_key("gen-1", "tiny-full-disk", "", 80, nvrtc_version());
  std::string failure = in_child([&]() -> std::string {
    ::signal(SIGXFSZ, SIG_IGN);  // write() then fails with EFBIG instead of killing us
    struct rlimit rl {};
    rl.rlim_cur = rl.rlim_max = 256;
    if (::setrlimit(RLIMIT_FSIZE, &rl) != 0) return "setrlimit failed";
    LogCapture logs;
    CompileCache cache(open_or_die(tmp.path()));
    auto cubin = cache.get_cubin(k, 80, [] { return llvm::Expected<std::string>(std::string(kTinyKernel)); }, "tiny.cu");
    if (!cubin) return "no cubin: " + llvm::toString(cubin.takeError());
    if (cubin->substr(0, 4) != std::string("\x7f" "ELF")) return "not a cubin";
    if (cubin->size() + DiskCache::kHeaderSize <= 256) return "the cubin fits the limit: the test proves nothing";
    if (cache.stats().disk_store_failures != 1) return "the failed store was not counted";
    if (logs.text().find("compiled but not stored on disk") == std::string::npos) return "no warning: " + logs.text();
    auto again = cache.get_cubin(k, 80, [] { return llvm::Expected<std::string>(std::string("not called")); }, "tiny.cu");
    if (!again || *again != *cubin) return "the memory level lost it";
    return "";
  });
  EXPECT_EQ(failure, "");
  std::error_code ec;
  int files = 0;
  for (llvm::sys::fs::directory_iterator it(tmp.path(), ec), end; it != end && !ec; it.increment(ec)) ++files;
  EXPECT_EQ(files, 0) << "a partial entry or temp file was left behind";
  EXPECT_FALSE(open_or_die(tmp.path()).load(k).has_value());
}

TEST(CompileCache, ErrorsPassThroughAndAreNotCached) {
  CompileCache cache(std::nullopt);
  const CacheKey k = key_of("failing");
  int made = 0;
  auto fails = [&made]() -> llvm::Expected<std::string> {
    ++made;
    return llvm::createStringError(llvm::inconvertibleErrorCode(), "no template for spmm.s3xs3");
  };
  for (int i = 0; i < 2; ++i) {
    auto r = cache.get_cubin(k, 90, fails, "gen.cu");
    ASSERT_FALSE(bool(r));
    std::string msg = llvm::toString(r.takeError());
    EXPECT_NE(msg.find("no template for spmm.s3xs3"), std::string::npos) << msg;
    EXPECT_NE(msg.find("gen.cu"), std::string::npos) << msg;
  }
  EXPECT_EQ(made, 2);
  EXPECT_EQ(cache.stats().compile_failures, 2u);
  EXPECT_EQ(cache.stats().memory_entries, 0u);
}

TEST(CompileCache, DiskDisabledByEnvAlwaysCompilesInANewCache) {
  TempDir tmp;
  EnvGuard off("MAGICUBE_CACHE", "0");
  const CacheKey k = make_cache_key("gen-1", "tiny-off", "", 80, nvrtc_version());
  int made = 0;
  auto make_source = [&made]() -> llvm::Expected<std::string> {
    ++made;
    return std::string(kTinyKernel);
  };
  for (int i = 0; i < 2; ++i) {
    CompileCache cache(open_or_die(tmp.path()));
    auto r = cache.get_cubin(k, 80, make_source, "tiny.cu");
    ASSERT_TRUE(bool(r)) << llvm::toString(r.takeError());
  }
  EXPECT_EQ(made, 2);
  EXPECT_EQ(open_or_die(tmp.path()).stats().entries, 0u);
}
