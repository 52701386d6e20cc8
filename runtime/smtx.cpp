#include "runtime/smtx.h"

#include <algorithm>
#include <cassert>
#include <cerrno>
#include <cstring>
#include <optional>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "support/text.h"
#include "runtime/memory_budget.h"
#include "llvm/ADT/Twine.h"

namespace magicube {

namespace {

llvm::Error err(const llvm::Twine &msg) { return llvm::createStringError(llvm::inconvertibleErrorCode(), msg); }

// One line of the file: its text (without the newline) and its 1-based number.
struct Line {
  llvm::StringRef text;
  int number = 0;
};

bool is_space(char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\v' || c == '\f'; }

// A token that is not a non-negative 64-bit integer.
struct BadToken {
  size_t entry;          // index of the number it should have been
  size_t column;         // 1-based byte column in its line
  llvm::StringRef token;
  const char *why;
};

// Appends the unsigned decimal integers of `line` to `out`. Numbers are separated by
// whitespace, and also by commas when `commas` is set (the header). Hand-written: DLMC files
// hold up to ~1M numbers.
std::optional<BadToken> scan_numbers(llvm::StringRef line, bool commas, std::vector<int64_t> &out) {
  const char *p = line.begin(), *const end = line.end();
  auto is_sep = [commas](char c) { return is_space(c) || (commas && c == ','); };
  size_t entry = 0;
  for (;;) {
    while (p < end && is_sep(*p)) ++p;
    if (p == end) return std::nullopt;
    const char *start = p;
    uint64_t value = 0;
    bool overflow = false;
    for (; p < end; ++p) {
      unsigned d = unsigned(static_cast<unsigned char>(*p)) - unsigned('0');
      if (d > 9) break;
      if (value > (uint64_t(INT64_MAX) - d) / 10) overflow = true;
      value = value * 10 + d;
    }
    if (p < end && !is_sep(*p)) {
      while (p < end && !is_sep(*p)) ++p;
      return BadToken{entry, size_t(start - line.begin()) + 1, llvm::StringRef(start, p - start),
                      "is not a non-negative integer"};
    }
    if (overflow)
      return BadToken{entry, size_t(start - line.begin()) + 1, llvm::StringRef(start, p - start),
                      "does not fit in 64 bits"};
    out.push_back(int64_t(value));
    ++entry;
  }
}

// 1-based column of the `index`-th number of `line` (error path only: rescans the line).
size_t column_of(llvm::StringRef line, size_t index, bool commas = false) {
  auto is_sep = [commas](char c) { return is_space(c) || (commas && c == ','); };
  size_t i = 0, seen = 0;
  for (;;) {
    while (i < line.size() && is_sep(line[i])) ++i;
    if (i == line.size()) return i + 1;
    if (seen == index) return i + 1;
    while (i < line.size() && !is_sep(line[i])) ++i;
    ++seen;
  }
}

// "name:LINE:COLUMN: " or "name:LINE: ".
std::string where(llvm::StringRef name, const Line &line, size_t column = 0) {
  std::string s = (name + ":" + llvm::Twine(line.number) + ":").str();
  if (column) s += (llvm::Twine(column) + ":").str();
  return s + " ";
}


// Scans `line` into `out`, reporting a bad token as "name:L:C: <label>[i] 'tok' is not ...".
llvm::Error scan_line(llvm::StringRef name, const Line &line, bool commas, llvm::StringRef label,
                      std::vector<int64_t> &out, size_t expected) {
  // Reserve what the header announces, but no more than the line can hold.
  out.reserve(std::min(expected, line.text.size() / 2 + 1));
  if (auto bad = scan_numbers(line.text, commas, out)) {
    std::string what;
    if (label.empty()) {  // the header
      static const char *const fields[] = {"rows", "cols", "nnz"};
      what = bad->entry < 3 ? std::string("header field '") + fields[bad->entry] + "'"
                            : "header token " + std::to_string(bad->entry + 1);
    } else {
      what = (label + "[" + llvm::Twine(bad->entry) + "]").str();
    }
    // Quoted: a terminal escape or a NUL in the file cannot get into the message.
    return err(where(name, line, bad->column) + what + " " + quoted(bad->token, 32) + " " + bad->why);
  }
  return llvm::Error::success();
}

}  // namespace

llvm::Expected<SmtxPattern> parse_smtx(llvm::StringRef text, llvm::StringRef name) {
  // Split off the three lines; anything after the third must be blank.
  std::vector<Line> lines;
  llvm::StringRef rest = text;
  while (lines.size() < 3 && !rest.empty()) {
    auto [line, tail] = rest.split('\n');
    lines.push_back({line, int(lines.size()) + 1});
    rest = tail;
  }
  if (lines.empty()) return err(name + ": empty file, expected 3 lines (header, row offsets, column indices)");
  if (size_t pos = rest.find_first_not_of(" \t\r\v\f\n"); pos != llvm::StringRef::npos) {
    int number = 4 + int(rest.take_front(pos).count('\n'));
    return err(name + ":" + llvm::Twine(number) + ": unexpected content after the column indices (line 3)");
  }

  // Line 1: "rows, cols, nnz".
  std::vector<int64_t> header;
  if (auto e = scan_line(name, lines[0], /*commas=*/true, "", header, 3)) return e;
  if (header.size() != 3)
    return err(where(name, lines[0]) + "header must hold 3 numbers 'rows, cols, nnz', found " +
               llvm::Twine(header.size()));
  SmtxPattern p;
  p.rows = header[0];
  p.cols = header[1];
  const int64_t nnz = header[2];
  constexpr int64_t kMaxCount = int64_t(1) << 40;  // keeps rows+1 and rows*V far from overflow
  if (p.rows > kMaxCount || nnz > kMaxCount)
    return err(where(name, lines[0]) + (p.rows > kMaxCount ? "rows = " + llvm::Twine(p.rows) : "nnz = " + llvm::Twine(nnz)) +
               " is too large (limit 2^40)");
  if (p.cols > INT32_MAX)
    return err(where(name, lines[0]) + "cols = " + llvm::Twine(p.cols) + " exceeds the 32-bit column index range");

  auto truncated = [&] {
    return err(name + ": truncated: found " + llvm::Twine(lines.size()) + (lines.size() == 1 ? " line" : " lines") +
               ", expected 3 (header, row offsets, column indices)");
  };
  if (lines.size() < 2) return truncated();
  // A file with no nonzeros may end after the row offsets.
  if (lines.size() < 3 && nnz > 0) return truncated();
  const Line offsets = lines[1];
  const Line indices = lines.size() > 2 ? lines[2] : Line{llvm::StringRef(), 3};

  // Line 2: rows+1 row offsets, from 0, non-decreasing, ending at nnz.
  if (auto e = scan_line(name, offsets, false, "row_ptr", p.row_ptr, size_t(p.rows) + 1)) return e;
  if (int64_t(p.row_ptr.size()) != p.rows + 1)
    return err(where(name, offsets) + (int64_t(p.row_ptr.size()) < p.rows + 1 ? "truncated: " : "") +
               "expected rows+1 = " + llvm::Twine(p.rows + 1) + " row offsets, found " + llvm::Twine(p.row_ptr.size()));
  if (p.row_ptr[0] != 0)
    return err(where(name, offsets, column_of(offsets.text, 0)) + "row_ptr[0] = " + llvm::Twine(p.row_ptr[0]) +
               ", expected 0");
  for (int64_t r = 0; r < p.rows; ++r)
    if (p.row_ptr[r + 1] < p.row_ptr[r])
      return err(where(name, offsets, column_of(offsets.text, size_t(r) + 1)) + "row offsets decrease at row " +
                 llvm::Twine(r) + ": row_ptr[" + llvm::Twine(r) + "] = " + llvm::Twine(p.row_ptr[r]) + " > row_ptr[" +
                 llvm::Twine(r + 1) + "] = " + llvm::Twine(p.row_ptr[r + 1]));
  if (p.row_ptr[p.rows] != nnz)
    return err(where(name, offsets, column_of(offsets.text, size_t(p.rows))) + "nnz mismatch: header says nnz = " +
               llvm::Twine(nnz) + " but row_ptr[" + llvm::Twine(p.rows) + "] = " + llvm::Twine(p.row_ptr[p.rows]));

  // Line 3: nnz column indices in [0, cols), strictly increasing within a row.
  if (auto e = scan_line(name, indices, false, "col_idx", p.col_idx, size_t(nnz))) return e;
  if (p.nnz() != nnz)
    return err(where(name, indices) + (p.nnz() < nnz ? "truncated: " : "") + "nnz mismatch: header says nnz = " +
               llvm::Twine(nnz) + " column indices, found " + llvm::Twine(p.nnz()));
  for (int64_t r = 0; r < p.rows; ++r) {
    for (int64_t j = p.row_ptr[r]; j < p.row_ptr[r + 1]; ++j) {
      int64_t c = p.col_idx[j];
      if (c >= p.cols)  // the scanner admits no negative numbers
        return err(where(name, indices, column_of(indices.text, size_t(j))) + "column index col_idx[" +
                   llvm::Twine(j) + "] = " + llvm::Twine(c) + " (row " + llvm::Twine(r) + ") is out of range [0, " +
                   llvm::Twine(p.cols) + ")");
      if (j > p.row_ptr[r] && c <= p.col_idx[j - 1])
        return err(where(name, indices, column_of(indices.text, size_t(j))) + "column indices of row " +
                   llvm::Twine(r) + " are not strictly increasing: col_idx[" + llvm::Twine(j) + "] = " +
                   llvm::Twine(c) + " after col_idx[" + llvm::Twine(j - 1) + "] = " + llvm::Twine(p.col_idx[j - 1]));
    }
  }
  return p;
}

llvm::Expected<SmtxPattern> read_smtx(llvm::StringRef path) {
  // Bounded: /dev/zero or an endless pipe is refused at kMaxSmtxBytes, not read until
  // memory runs out. A pipe (--matrix=<(zcat f.smtx.gz)) is fine.
  const std::string file = path.str();
  int fd = ::open(file.c_str(), O_RDONLY | O_CLOEXEC | O_NOCTTY);
  if (fd < 0) return err(path + ": cannot read: " + std::strerror(errno));
  struct stat st {};
  if (::fstat(fd, &st) != 0 || S_ISDIR(st.st_mode)) {
    int e = S_ISDIR(st.st_mode) ? EISDIR : errno;
    ::close(fd);
    return err(path + ": cannot read: " + std::strerror(e));
  }
  auto too_large = [&](const llvm::Twine &size) {
    return err(path + ": is " + size + ", more than a .smtx pattern may be (limit " + llvm::Twine(kMaxSmtxBytes >> 20) +
               " MiB)");
  };
  if (S_ISREG(st.st_mode) && uint64_t(st.st_size) > kMaxSmtxBytes) {
    ::close(fd);
    return too_large(llvm::Twine(uint64_t(st.st_size)) + " bytes");
  }
  std::string text;
  char buf[1 << 16];
  for (;;) {
    ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      int e = errno;
      ::close(fd);
      return err(path + ": cannot read: " + std::strerror(e));
    }
    if (n == 0) break;
    if (text.size() + size_t(n) > kMaxSmtxBytes) {
      ::close(fd);
      return too_large("more than " + llvm::Twine(kMaxSmtxBytes) + " bytes");
    }
    text.append(buf, size_t(n));
  }
  ::close(fd);
  // Parsing keeps up to one int64 per two bytes of text.
  if (auto e = check_host_alloc(file + ": its numbers", int64_t(text.size() / 2 + 1), 8)) return e;
  return parse_smtx(text, path);
}

VectorSparse dilate(const SmtxPattern &pattern, int v, const std::function<int64_t()> &value) {
  assert(v >= 1 && "dilate: vector length must be >= 1");
  VectorSparse a;
  a.rows = pattern.rows * v;
  a.cols = pattern.cols;
  a.v = v;
  a.block_ptr = pattern.row_ptr;
  a.col.assign(pattern.col_idx.begin(), pattern.col_idx.end());  // parse_smtx bounds cols to 32 bits
  a.values.resize(size_t(pattern.nnz()) * size_t(v));
  for (auto &x : a.values) x = value();
  return a;
}

}  // namespace magicube
