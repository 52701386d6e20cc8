// support/: parallel_for, write_file_atomic, the hashes, field_count.
#include <gtest/gtest.h>

#include <atomic>
#include <cstdint>
#include <string>
#include <mutex>
#include <set>
#include <thread>
#include <vector>

#include "llvm/ADT/SmallString.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "support/atomic_file.h"
#include "support/field_count.h"
#include "support/hash.h"
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

// ---- write_file_atomic -----------------------------------------------------------------

struct TempDir {
  std::string path;
  TempDir() {
    llvm::SmallString<128> p;
    EXPECT_FALSE(llvm::sys::fs::createUniqueDirectory("magicube-support-test", p));
    path = std::string(p.str());
  }
  ~TempDir() { llvm::sys::fs::remove_directories(path); }
  std::vector<std::string> names() const {
    std::vector<std::string> out;
    std::error_code ec;
    for (llvm::sys::fs::directory_iterator it(path, ec), end; it != end && !ec; it.increment(ec))
      out.push_back(llvm::sys::path::filename(it->path()).str());
    return out;
  }
};

std::string read(const std::string &path) {
  auto buf = llvm::MemoryBuffer::getFile(path);
  return buf ? (*buf)->getBuffer().str() : "<unreadable>";
}

TEST(AtomicFile, CreatesAndReplacesLeavingNoTempFile) {
  TempDir tmp;
  const std::string f = tmp.path + "/record.json";
  ASSERT_FALSE(bool(write_file_atomic(f, "first", "record")));
  EXPECT_EQ(read(f), "first");
  ASSERT_FALSE(bool(write_file_atomic(f, std::string(100000, 'x'), "record")));
  EXPECT_EQ(read(f), std::string(100000, 'x'));
  ASSERT_FALSE(bool(write_file_atomic(f, "", "record")));
  EXPECT_EQ(read(f), "");
  EXPECT_EQ(tmp.names(), std::vector<std::string>{"record.json"});
  llvm::sys::fs::file_status st;
  ASSERT_FALSE(bool(llvm::sys::fs::status(f, st)));
  EXPECT_EQ(st.permissions() & 0777, 0600);
}

TEST(AtomicFile, ConcurrentWritersAllSucceedAndOneWins) {
  TempDir tmp;
  const std::string f = tmp.path + "/entry";
  std::atomic<int> failures{0};
  parallel_for(16, [&](size_t i) {
    if (llvm::Error e = write_file_atomic(f, std::string(4096, char('a' + i)), "entry")) {
      llvm::consumeError(std::move(e));
      ++failures;
    }
  }, 8);
  EXPECT_EQ(failures.load(), 0);
  std::string got = read(f);
  ASSERT_EQ(got.size(), 4096u);
  EXPECT_EQ(got, std::string(4096, got[0]));
  EXPECT_EQ(tmp.names(), std::vector<std::string>{"entry"});
}

TEST(AtomicFile, ErrorNamesWhatAndPath) {
  TempDir tmp;
  const std::string f = tmp.path + "/no/such/dir/record.json";
  llvm::Error e = write_file_atomic(f, "x", "tuning record");
  ASSERT_TRUE(bool(e));
  std::string msg = llvm::toString(std::move(e));
  EXPECT_EQ(msg.rfind("cannot create a temp file for tuning record " + f + ": ", 0), 0u) << msg;
}

// ---- hashes ------------------------------------------------------------------------------

TEST(Hash, Hash64IsXxHash64AndPinned) {
  // xxHash64 (seed 0) of "" and of "abc": the published test vectors.
  EXPECT_EQ(hash64(llvm::StringRef("")), 0xef46db3751d8e999ull);
  EXPECT_EQ(hash64(llvm::StringRef("abc")), 0x44bc2cf5ad770999ull);
  const int64_t w[2] = {1, 2}, v[2] = {2, 1};
  EXPECT_EQ(hash64(w), hash64(w));
  EXPECT_NE(hash64(w), hash64(v));
  EXPECT_EQ(hash64(llvm::ArrayRef<int64_t>(w)),
            hash64(llvm::StringRef(reinterpret_cast<const char *>(w), sizeof w)));  // the words' bytes
}

TEST(Hash, Sha256AndHex) {
  EXPECT_EQ(to_hex(sha256("abc")), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  EXPECT_EQ(to_hex(sha256("")), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  EXPECT_EQ(to_hex(std::string("\x00\x0f\xf0\xff", 4)), "000ff0ff");
  // Fields are length-prefixed (8 bytes, little-endian): "ab"+"c" differs from "a"+"bc".
  EXPECT_NE(sha256_fields({"ab", "c"}), sha256_fields({"a", "bc"}));
  EXPECT_EQ(sha256_fields({"abc"}), sha256(std::string("\x03\0\0\0\0\0\0\0abc", 11)));
}

}  // namespace

// field_count counts an aggregate's fields, also where a new one fits the padding (the sizeof
// guard it replaced missed that: Session 26) and where fields are aggregates or enums themselves.
namespace field_count_test {
struct Inner {
  int a = 1;
  bool b = false;
};
enum class Kind { X, Y };
struct Before {
  int64_t w = 0;
  int x = 0;
  bool y = false;
};
struct After {  // one bool more, the same size
  int64_t w = 0;
  int x = 0;
  bool y = false;
  bool z = false;
};
struct Mixed {
  Inner in;
  Kind k = Kind::X;
  std::vector<int> v;
  std::string s;
  double d = 0;
};
}  // namespace field_count_test

TEST(FieldCount, CountsFieldsNotBytes) {
  using namespace field_count_test;
  static_assert(sizeof(Before) == sizeof(After));
  EXPECT_EQ(magicube::field_count<Before>(), 3u);
  EXPECT_EQ(magicube::field_count<After>(), 4u);
  EXPECT_EQ(magicube::field_count<Inner>(), 2u);
  EXPECT_EQ(magicube::field_count<Mixed>(), 5u);
}
