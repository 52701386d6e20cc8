#include "runtime/smtx.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string>

namespace magicube {
namespace {

namespace fs = std::filesystem;

SmtxPattern parse_ok(const std::string &text) {
  auto p = parse_smtx(text, "t.smtx");
  if (!p) {
    ADD_FAILURE() << llvm::toString(p.takeError());
    return {};
  }
  return std::move(*p);
}

// The message of the expected error.
std::string parse_error(const std::string &text) {
  auto p = parse_smtx(text, "t.smtx");
  if (p) {
    ADD_FAILURE() << "parsed without error:\n" << text;
    return "";
  }
  return llvm::toString(p.takeError());
}

#define EXPECT_HAS(haystack, needle) EXPECT_NE(std::string(haystack).find(needle), std::string::npos) << (haystack)

// ---- good input --------------------------------------------------------------------------

TEST(Smtx, ParsesPattern) {
  auto p = parse_ok("4, 6, 5\n0 2 2 4 5\n1 3 0 5 2\n");
  EXPECT_EQ(p.rows, 4);
  EXPECT_EQ(p.cols, 6);
  EXPECT_EQ(p.nnz(), 5);
  EXPECT_EQ(p.row_ptr, (std::vector<int64_t>{0, 2, 2, 4, 5}));
  EXPECT_EQ(p.col_idx, (std::vector<int64_t>{1, 3, 0, 5, 2}));
}

TEST(Smtx, ToleratesSpacingCrlfAndMissingFinalNewline) {
  auto p = parse_ok("2,3,2\r\n 0  1\t2 \r\n1 2");
  EXPECT_EQ(p.rows, 2);
  EXPECT_EQ(p.cols, 3);
  EXPECT_EQ(p.row_ptr, (std::vector<int64_t>{0, 1, 2}));
  EXPECT_EQ(p.col_idx, (std::vector<int64_t>{1, 2}));
  parse_ok("2, 3, 2\n0 1 2\n1 2\n\n  \n");  // trailing blank lines
}

TEST(Smtx, EmptyPattern) {
  auto p = parse_ok("3, 5, 0\n0 0 0 0\n\n");
  EXPECT_EQ(p.nnz(), 0);
  EXPECT_EQ(parse_ok("3, 5, 0\n0 0 0 0\n").nnz(), 0);  // may end after the row offsets
}

TEST(Smtx, DilatesIntoVectors) {
  auto p = parse_ok("4, 6, 5\n0 2 2 4 5\n1 3 0 5 2\n");
  int64_t next = 0;
  VectorSparse a = dilate(p, 2, [&] { return ++next; });
  EXPECT_EQ(next, 10);  // one draw per value
  EXPECT_EQ(a.rows, 8);
  EXPECT_EQ(a.cols, 6);
  EXPECT_EQ(a.v, 2);
  EXPECT_EQ(a.num_blocks(), 4);
  EXPECT_EQ(a.num_vectors(), 5);
  EXPECT_EQ(a.block_ptr, (std::vector<int64_t>{0, 2, 2, 4, 5}));
  EXPECT_EQ(a.col, (std::vector<int32_t>{1, 3, 0, 5, 2}));
  EXPECT_EQ(a.values, (std::vector<int64_t>{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}));
  EXPECT_EQ(a.max_block_length(), 2);
  // Scalar row b becomes rows 2b and 2b+1; vector i holds values 2i+1 (top) and 2i+2.
  auto d = to_dense(a);
  EXPECT_EQ(d[0 * 6 + 1], 1);
  EXPECT_EQ(d[1 * 6 + 1], 2);
  EXPECT_EQ(d[0 * 6 + 3], 3);
  EXPECT_EQ(d[1 * 6 + 3], 4);
  EXPECT_EQ(d[4 * 6 + 0], 5);
  EXPECT_EQ(d[5 * 6 + 5], 8);
  EXPECT_EQ(d[7 * 6 + 2], 10);
  int64_t nonzeros = 0;
  for (int64_t x : d) nonzeros += x != 0;
  EXPECT_EQ(nonzeros, 10);
}

TEST(Smtx, DilateWithV1IsThePattern) {
  auto p = parse_ok("2, 3, 3\n0 2 3\n0 2 1\n");
  VectorSparse a = dilate(p, 1, [] { return 7; });
  EXPECT_EQ(a.rows, 2);
  EXPECT_EQ(a.values, (std::vector<int64_t>{7, 7, 7}));
  EXPECT_EQ(to_dense(a), (std::vector<int64_t>{7, 0, 7, 0, 7, 0}));
}

// ---- errors: each names file, line and the offending entry -------------------------------

TEST(SmtxErrors, MissingFile) {
  auto p = read_smtx("/nonexistent/dir/layer.smtx");
  ASSERT_FALSE(p);
  std::string m = llvm::toString(p.takeError());
  EXPECT_HAS(m, "/nonexistent/dir/layer.smtx: cannot read");
}

// Hostile paths end with a message, not by running out of memory or hanging.
TEST(SmtxErrors, DevicesDirectoriesAndHugeFilesAreRefused) {
  auto zero = read_smtx("/dev/zero");  // endless: read up to the bound, then refused
  ASSERT_FALSE(zero);
  EXPECT_HAS(llvm::toString(zero.takeError()), "/dev/zero: is more than 268435456 bytes");
  auto dir = read_smtx("/tmp");
  ASSERT_FALSE(dir);
  EXPECT_HAS(llvm::toString(dir.takeError()), "/tmp: cannot read: Is a directory");
  const std::string big = (fs::temp_directory_path() / ("magicube-big-" + std::to_string(::getpid()) + ".smtx")).string();
  { std::ofstream(big) << "1, 1, 0\n0 0\n"; }
  fs::resize_file(big, kMaxSmtxBytes + 1);  // sparse: no disk used
  auto huge = read_smtx(big);
  fs::remove(big);
  ASSERT_FALSE(huge);
  EXPECT_HAS(llvm::toString(huge.takeError()), "is 268435457 bytes, more than a .smtx pattern may be (limit 256 MiB)");
}

TEST(SmtxErrors, EmptyFile) { EXPECT_HAS(parse_error(""), "t.smtx: empty file"); }

TEST(SmtxErrors, FewerThanThreeLines) {
  EXPECT_HAS(parse_error("2, 2, 1\n0 1 1\n"), "t.smtx: truncated: found 2 lines, expected 3");
  EXPECT_HAS(parse_error("2, 2, 1\n"), "t.smtx: truncated: found 1 line, expected 3");
}

TEST(SmtxErrors, FewerNumbersThanAnnounced) {
  EXPECT_HAS(parse_error("2, 2\n0 1 1\n0\n"), "t.smtx:1: header must hold 3 numbers 'rows, cols, nnz', found 2");
  EXPECT_HAS(parse_error("3, 3, 1\n0 1 1\n0\n"), "t.smtx:2: truncated: expected rows+1 = 4 row offsets, found 3");
  EXPECT_HAS(parse_error("2, 3, 3\n0 2 3\n0 1\n"),
             "t.smtx:3: truncated: nnz mismatch: header says nnz = 3 column indices, found 2");
}

TEST(SmtxErrors, MoreNumbersThanAnnounced) {
  EXPECT_HAS(parse_error("2, 3, 2\n0 1 2 2\n0 1\n"), "t.smtx:2: expected rows+1 = 3 row offsets, found 4");
  EXPECT_HAS(parse_error("2, 3, 2\n0 1 2\n0 1 2\n"),
             "t.smtx:3: nnz mismatch: header says nnz = 2 column indices, found 3");
  EXPECT_HAS(parse_error("2, 3, 2\n0 1 2\n0 1\n5\n"), "t.smtx:4: unexpected content after the column indices");
}

TEST(SmtxErrors, NonNumericToken) {
  EXPECT_HAS(parse_error("2, x3, 2\n0 1 2\n0 1\n"), "t.smtx:1:4: header field 'cols' 'x3' is not a non-negative integer");
  EXPECT_HAS(parse_error("2, 3, 2\n0 1 2a\n0 1\n"), "t.smtx:2:5: row_ptr[2] '2a' is not a non-negative integer");
  EXPECT_HAS(parse_error("2, 3, 2\n0 1 2\n0 -1\n"), "t.smtx:3:3: col_idx[1] '-1' is not a non-negative integer");
  EXPECT_HAS(parse_error("2, 3, 2\n0 1 2\n0,1\n"), "t.smtx:3:1: col_idx[0] '0,1' is not a non-negative integer");
  EXPECT_HAS(parse_error("2, 3, 2\n0 1 99999999999999999999\n0 1\n"),
             "t.smtx:2:5: row_ptr[2] '99999999999999999999' does not fit in 64 bits");
}

TEST(SmtxErrors, NnzMismatchWithRowOffsets) {
  EXPECT_HAS(parse_error("2, 3, 3\n0 1 2\n0 1 2\n"), "t.smtx:2:5: nnz mismatch: header says nnz = 3 but row_ptr[2] = 2");
}

TEST(SmtxErrors, RowOffsetsDecrease) {
  EXPECT_HAS(parse_error("3, 3, 2\n0 2 1 2\n0 1\n"),
             "t.smtx:2:5: row offsets decrease at row 1: row_ptr[1] = 2 > row_ptr[2] = 1");
  EXPECT_HAS(parse_error("1, 3, 1\n1 1\n0\n"), "t.smtx:2:1: row_ptr[0] = 1, expected 0");
}

TEST(SmtxErrors, ColumnOutOfRange) {
  EXPECT_HAS(parse_error("2, 3, 3\n0 1 3\n2 0 3\n"),
             "t.smtx:3:5: column index col_idx[2] = 3 (row 1) is out of range [0, 3)");
  EXPECT_HAS(parse_error("1, 3000000000, 1\n0 1\n0\n"), "t.smtx:1: cols = 3000000000 exceeds the 32-bit");
}

TEST(SmtxErrors, ColumnsNotIncreasingWithinRow) {
  EXPECT_HAS(parse_error("2, 4, 4\n0 3 4\n0 2 2 0\n"),
             "t.smtx:3:5: column indices of row 0 are not strictly increasing: col_idx[2] = 2 after col_idx[1] = 2");
  EXPECT_HAS(parse_error("1, 4, 2\n0 2\n3 1\n"), "col_idx[1] = 1 after col_idx[0] = 3");
  parse_ok("2, 4, 2\n0 1 2\n3 1\n");  // a new row starts over
}

// ---- a real DLMC matrix ------------------------------------------------------------------

constexpr const char *kArchive = "dlmc_rn50_magnitude_pruning.tar.gz";

// MAGICUBE_DLMC_DIR, else ../shared/data next to the source tree (this file is tests/...).
fs::path dlmc_dir() {
  if (const char *env = std::getenv("MAGICUBE_DLMC_DIR")) return env;
  return fs::path(__FILE__).parent_path().parent_path().parent_path() / "shared" / "data";
}

// The file's text, from the unpacked tree or extracted alone from the archive; nullopt with
// `why` set when the data set is not there.
std::optional<std::string> dlmc_text(const std::string &member, std::string &why) {
  fs::path dir = dlmc_dir();
  if (fs::exists(dir / member)) {
    std::ifstream in(dir / member, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(in), {});
  }
  fs::path archive = dir / kArchive;
  if (!fs::exists(archive)) {
    why = "DLMC data not found: neither " + (dir / member).string() + " nor " + archive.string() +
          " (set MAGICUBE_DLMC_DIR)";
    return std::nullopt;
  }
  std::string cmd = "tar -xzf '" + archive.string() + "' -O '" + member + "'";
  FILE *pipe = popen(cmd.c_str(), "r");
  if (!pipe) {
    why = "cannot run: " + cmd;
    return std::nullopt;
  }
  std::string text;
  char buf[1 << 16];
  for (size_t n; (n = fread(buf, 1, sizeof buf, pipe)) > 0;) text.append(buf, n);
  int status = pclose(pipe);
  if (status != 0 || text.empty()) {
    why = "'" + cmd + "' failed (status " + std::to_string(status) + ")";
    return std::nullopt;
  }
  return text;
}

// Writes `text` to a fresh temporary file (so read_smtx sees a real file) and reads it back.
llvm::Expected<SmtxPattern> read_via_file(const std::string &text, const std::string &leaf) {
  fs::path tmp = fs::temp_directory_path() / ("magicube_test_smtx_" + std::to_string(::getpid()) + "_" + leaf);
  {
    std::ofstream out(tmp, std::ios::binary);
    out << text;
  }
  auto p = read_smtx(tmp.string());
  fs::remove(tmp);
  return p;
}

TEST(SmtxDlmc, ReadsSmallLayer) {
  const std::string member = "dlmc/rn50/magnitude_pruning/0.98/bottleneck_1_block_group_projection_block_group1.smtx";
  std::string why;
  auto text = dlmc_text(member, why);
  if (!text) GTEST_SKIP() << why;
  auto p = read_via_file(*text, "small.smtx");
  ASSERT_TRUE(bool(p)) << llvm::toString(p.takeError());
  EXPECT_EQ(p->rows, 64);
  EXPECT_EQ(p->cols, 64);
  EXPECT_EQ(p->nnz(), 81);
  EXPECT_EQ(p->row_ptr[1], 2);
  EXPECT_EQ(p->row_ptr[64], 81);
  EXPECT_EQ(p->col_idx[0], 21);
  EXPECT_EQ(p->col_idx[1], 28);
  EXPECT_EQ(p->col_idx[2], 40);

  int64_t draws = 0;
  VectorSparse a = dilate(*p, 8, [&] { return ++draws % 7 + 1; });
  EXPECT_EQ(a.rows, 512);
  EXPECT_EQ(a.num_blocks(), 64);
  EXPECT_EQ(a.num_vectors(), 81);
  EXPECT_EQ(draws, 81 * 8);
}

TEST(SmtxDlmc, ParsesMillionNumberLayerQuickly) {
  const std::string member =
      "dlmc/rn50/magnitude_pruning/0.5/bottleneck_projection_block_group_projection_block_group4.smtx";
  std::string why;
  auto text = dlmc_text(member, why);
  if (!text) GTEST_SKIP() << why;
  auto start = std::chrono::steady_clock::now();
  auto p = parse_smtx(*text, member);
  double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  ASSERT_TRUE(bool(p)) << llvm::toString(p.takeError());
  EXPECT_EQ(p->rows, 2048);
  EXPECT_EQ(p->cols, 1024);
  EXPECT_EQ(p->nnz(), 1048576);
  RecordProperty("parse_ms", std::to_string(ms));
  std::printf("parsed %zu bytes (%lld numbers) in %.1f ms\n", text->size(),
              (long long)(p->rows + 1 + p->nnz()), ms);
  EXPECT_LT(ms, 2000.0);  // generous: a stream-based reader is the thing this guards against
}

}  // namespace
}  // namespace magicube
