#include "runtime/srbcrs.h"

#include <algorithm>
#include <array>
#include <optional>

#include "runtime/memory_budget.h"

namespace magicube {

namespace {
llvm::Error err(const llvm::Twine &msg) { return llvm::createStringError(llvm::inconvertibleErrorCode(), msg); }
std::string range_str(const ElemType &t) {
  return t.str() + "'s range [" + std::to_string(t.min_value()) + ", " + std::to_string(t.max_value()) + "]";
}
}  // namespace

namespace {
// Slot order of one row-block's vectors (indices into `a`, -1 for padding) over `len` slots,
// every group of 8 slots taking one vector of each column residue mod 8 while they last: a
// resident-B kernel's ldmatrix then reads its 8 gathered rows from 8 different bank groups.
// Vectors left over (residues more common than the groups) fill the free slots, each in a
// group holding the fewest of its residue (then one that already has a second row in some
// bank group: an 8-row ldmatrix read costs two wavefronts for any number of 2-way conflicts),
// so that no group reads one residue three times while it need not. (Filling the free slots in
// order stacked a residue's whole surplus into one group: a 5-way conflict; on the H100 the
// decode kernel's ldmatrix reads took 1.38 wavefronts for 1 at 4096x4096 s=0.9.)
std::vector<int64_t> bank_balanced_order(const VectorSparse &a, int64_t b, int64_t len) {
  std::vector<int64_t> bucket[8];
  for (int64_t i = a.block_ptr[b + 1] - 1; i >= a.block_ptr[b]; --i) bucket[a.col[i] & 7].push_back(i);  // popped in order
  const int64_t groups = len / 8;
  std::vector<int64_t> order(len, -2);
  std::vector<std::array<int, 8>> count(size_t(groups), std::array<int, 8>{});  // rows of each residue a group reads
  std::vector<int> free(size_t(groups), 8);                                    // slots a group has left
  for (int64_t g = 0; g < groups; ++g)
    for (int r = 0; r < 8; ++r)
      if (!bucket[r].empty())
        order[8 * g + r] = bucket[r].back(), bucket[r].pop_back(), ++count[size_t(g)][r], --free[size_t(g)];
  auto doubled = [&](size_t g) { return *std::max_element(count[g].begin(), count[g].end()) > 1; };
  std::vector<size_t> open;  // groups with a free slot, in order
  for (size_t g = 0; g < size_t(groups); ++g)
    if (free[g]) open.push_back(g);
  for (int r = 0; r < 8; ++r)
    for (; !bucket[r].empty(); bucket[r].pop_back()) {
      size_t best = 0;  // into open
      for (size_t i = 1; i < open.size(); ++i) {
        const size_t g = open[i], bg = open[best];
        if (count[g][r] < count[bg][r] || (count[g][r] == count[bg][r] && doubled(g) && !doubled(bg))) best = i;
      }
      const size_t g = open[best];
      int j = 0;
      while (order[8 * int64_t(g) + j] != -2) ++j;
      order[8 * int64_t(g) + j] = bucket[r].back();
      ++count[g][r];
      if (--free[g] == 0) open.erase(open.begin() + std::ptrdiff_t(best));
    }
  for (int64_t &o : order)
    if (o == -2) o = -1;
  return order;
}
}  // namespace

SrBcrs build_srbcrs(const VectorSparse &a, int stride, bool shuffled, const std::vector<int> &shuffle,
                    bool bank_balanced) {
  if (shuffle.empty()) shuffled = false;
  const int64_t G = shuffled ? int64_t(shuffle.size()) : 1;
  SrBcrs s;
  s.rows = a.rows;
  s.cols = a.cols;
  s.v = a.v;
  s.stride = stride;
  s.shuffled = shuffled;
  s.shuffle = shuffle;
  s.bank_balanced = bank_balanced && stride % 8 == 0;
  s.max_block_length = a.max_block_length();
  int64_t nb = a.num_blocks();
  s.row_ptr.resize(2 * nb);
  int64_t slot = 0;
  for (int64_t b = 0; b < nb; ++b) {
    int64_t n = a.block_ptr[b + 1] - a.block_ptr[b];
    s.row_ptr[2 * b] = slot;
    s.row_ptr[2 * b + 1] = slot + n;
    slot += (n + stride - 1) / stride * stride;
  }
  s.col_idx.assign(slot, -1);
  s.values.assign(slot * a.v, 0);
  for (int64_t b = 0; b < nb; ++b) {
    const int64_t base = s.row_ptr[2 * b], len = s.padded_end(b) - base, n = a.block_ptr[b + 1] - a.block_ptr[b];
    // order[p]: the vector whose column slot base + p names. Unbalanced, slot p of a group of
    // G is multiplied at k-position shuffle[p], so it names the vector at that position.
    std::vector<int64_t> order;
    if (s.bank_balanced) {
      order = bank_balanced_order(a, b, len);
    } else {
      order.resize(len);
      for (int64_t p = 0; p < len; ++p) {
        int64_t q = shuffled ? (p / G) * G + shuffle[p % G] : p;
        order[p] = q < n ? a.block_ptr[b] + q : -1;
      }
    }
    // The vector named at slot p has its values at k-position position(p).
    for (int64_t p = 0; p < len; ++p) {
      const int64_t i = order[p];
      s.col_idx[base + p] = i >= 0 ? a.col[i] : -1;
      if (i < 0) continue;
      const int64_t q = base + (shuffled ? (p / G) * G + shuffle[p % G] : p);
      for (int r = 0; r < a.v; ++r) s.values[s.value_index(q, r)] = a.values[i * a.v + r];
    }
  }
  return s;
}

llvm::Expected<SrBcrs> build_srbcrs(const VectorSparse &a, const Plan &plan) {
  if (a.v != plan.spec.v)
    return err("srbcrs: the matrix has V=" + llvm::Twine(a.v) + " but the plan is for V=" + llvm::Twine(plan.spec.v));
  // A column >= K would have the kernel read B out of bounds; a repeated one counts twice.
  if (auto e = check_vector_sparse(a, "lhs A")) return e;
  if (plan.shuffle_b && plan.k_stride % int(plan.shuffle.size()) != 0)
    return err("srbcrs: a shuffled layout needs a stride that is a multiple of " + llvm::Twine(plan.shuffle.size()));
  return build_srbcrs(a, plan.k_stride, plan.shuffle_b, plan.shuffle, plan.spec.resident);
}

llvm::Error check_range(const SrBcrs &a, const ElemType &t, const char *name) {
  const int64_t G = a.shuffled ? int64_t(a.shuffle.size()) : 1;
  for (int64_t b = 0; b < a.num_blocks(); ++b)
    for (int64_t p = a.row_ptr[2 * b]; p < a.padded_end(b); ++p) {
      if (a.col_idx[p] < 0) continue;
      const int64_t q = a.shuffled ? (p / G) * G + a.shuffle[p % G] : p;  // where slot p's values are
      for (int r = 0; r < a.v; ++r) {
        int64_t x = a.values[a.value_index(q, r)];
        if (!t.contains(x))
          return err(llvm::Twine(name) + "[" + llvm::Twine(b * a.v + r) + ", " + llvm::Twine(a.col_idx[p]) +
                     "] = " + llvm::Twine(x) + " is outside " + range_str(t));
      }
    }
  return llvm::Error::success();
}

llvm::Error check_range_dense(const std::vector<int64_t> &m, int64_t rows, int64_t cols, bool col_major,
                              const ElemType &t, const char *name) {
  const std::optional<uint64_t> want = checked_mul(rows, cols);  // rows * cols may overflow
  if (!want || uint64_t(m.size()) != *want)
    return err(llvm::Twine(name) + ": has " + llvm::Twine(m.size()) + " values, expected " + llvm::Twine(rows) + " x " +
               llvm::Twine(cols) + (want ? "" : " (which overflows 64 bits)"));
  for (int64_t i = 0; i < int64_t(m.size()); ++i)
    if (!t.contains(m[i])) {
      int64_t r = col_major ? i % rows : i / cols, c = col_major ? i / rows : i % cols;
      return err(llvm::Twine(name) + "[" + llvm::Twine(r) + ", " + llvm::Twine(c) + "] = " + llvm::Twine(m[i]) +
                 " is outside " + range_str(t));
    }
  return llvm::Error::success();
}

}  // namespace magicube
