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
// Slot order of one row-block's vectors (indices into `a`, -1 for padding) over `len` slots
// (G = len / 8 groups of 8): a resident-B kernel's ldmatrix reads each group's 8 gathered
// rows in one wavefront when their columns have 8 different residues mod 8 (bank groups),
// and a group costs as many wavefronts as it reads its most repeated residue. A pad reads row
// `slot % 8` (A's zeros there), residue `slot % 8`.
//
// With n_r vectors of residue r and M = max n_r, any order costs at least max(G, M)
// wavefronts. The order here reaches G + d with the fewest d groups that read some residue
// twice ("doubled"): a residue with n_r >= G has a vector in every group and its surplus in
// distinct doubled groups; a scarcer residue leaves its holes where they make room, each
// residue placed in the groups with the most free slots, largest residues first (for 0/1
// placements the greedy that fills the emptiest groups first finds one whenever one exists).
// In a group each residue's first vector takes slot r; second vectors and pads take the slots
// of residues the group lacks, so a pad never adds a third read. Rows too skewed for this (a
// residue with more than 2G vectors: structured columns) fall back to spreading the surplus
// over the groups with the fewest of its residue. (The earlier order placed every residue one
// a group first and the surplus into the groups left with free slots: 1.24 wavefronts a group
// on random rows of 410 vectors against 1.18 here; the bound is 1.17.)
using GroupCounts = std::vector<std::array<int, 8>>;  // [group][residue]: vectors of the residue in the group

// The counts with at most d doubled groups (the first d), or none where they do not fit.
std::optional<GroupCounts> doubled_counts(const std::array<int64_t, 8> &n, int64_t groups, int64_t d) {
  GroupCounts count(size_t(groups), std::array<int, 8>{});
  std::vector<int> load(size_t(groups), 0);
  std::array<int, 8> by_size = {0, 1, 2, 3, 4, 5, 6, 7};
  std::stable_sort(by_size.begin(), by_size.end(), [&](int x, int y) { return n[x] > n[y]; });
  std::vector<int64_t> idx;
  // The `want` emptiest of the first `among` groups (ties: lower index), by current load.
  auto emptiest = [&](int64_t among, int64_t want) {  // loads are 0..8: by buckets, in index order
    idx.clear();
    for (int l = 0; l <= 8 && int64_t(idx.size()) < want; ++l)
      for (int64_t g = 0; g < among && int64_t(idx.size()) < want; ++g)
        if (load[size_t(g)] == l) idx.push_back(g);
  };
  for (int r : by_size) {
    if (n[r] <= groups) continue;
    if (n[r] - groups > d) return std::nullopt;
    for (int64_t g = 0; g < groups; ++g) ++count[size_t(g)][r], ++load[size_t(g)];
  }
  for (int r : by_size) {
    if (n[r] <= groups) continue;
    emptiest(d, n[r] - groups);
    if (int64_t(idx.size()) < n[r] - groups) return std::nullopt;  // every doubled group full
    for (int64_t g : idx) ++count[size_t(g)][r], ++load[size_t(g)];
  }
  for (int r : by_size) {
    if (n[r] > groups || n[r] == 0) continue;
    emptiest(groups, n[r]);
    if (int64_t(idx.size()) < n[r]) return std::nullopt;  // every group full
    for (int64_t g : idx) ++count[size_t(g)][r], ++load[size_t(g)];
  }
  if (*std::max_element(load.begin(), load.end()) > 8) return std::nullopt;
  return count;
}

// The fallback: one of each residue a group while they last, the surplus into the groups
// with the fewest of its residue (then one already doubled).
GroupCounts spread_counts(const std::array<int64_t, 8> &n, int64_t groups) {
  GroupCounts count(size_t(groups), std::array<int, 8>{});
  std::vector<int> free(size_t(groups), 8);
  std::array<int64_t, 8> left = n;
  for (int64_t g = 0; g < groups; ++g)
    for (int r = 0; r < 8; ++r)
      if (left[r] > 0) --left[r], ++count[size_t(g)][r], --free[size_t(g)];
  auto doubled = [&](size_t g) { return *std::max_element(count[g].begin(), count[g].end()) > 1; };
  for (int r = 0; r < 8; ++r)
    for (; left[r] > 0; --left[r]) {
      size_t best = SIZE_MAX;
      for (size_t g = 0; g < size_t(groups); ++g) {
        if (!free[g]) continue;
        if (best == SIZE_MAX || count[g][r] < count[best][r] || (count[g][r] == count[best][r] && doubled(g) && !doubled(best)))
          best = g;
      }
      ++count[best][r], --free[best];
    }
  return count;
}

std::vector<int64_t> bank_balanced_order(const VectorSparse &a, int64_t b, int64_t len) {
  std::vector<int64_t> bucket[8];
  for (int64_t i = a.block_ptr[b + 1] - 1; i >= a.block_ptr[b]; --i) bucket[a.col[i] & 7].push_back(i);  // popped in order
  std::array<int64_t, 8> n{};
  for (int r = 0; r < 8; ++r) n[r] = int64_t(bucket[r].size());
  const int64_t groups = len / 8;
  std::vector<int64_t> order(size_t(len), -1);
  if (groups == 0) return order;
  const int64_t most = *std::max_element(n.begin(), n.end());
  std::optional<GroupCounts> best;
  if (most <= 2 * groups) {
    // the fewest doubled groups that hold every surplus (feasibility grows with d): the bound
    // M - G first (it usually holds), then a search up to every group
    int64_t lo = std::max<int64_t>(0, most - groups), hi = groups;
    best = doubled_counts(n, groups, lo);
    if (!best) best = doubled_counts(n, groups, hi), ++lo;
    if (best)
      while (lo < hi) {
        const int64_t mid = lo + (hi - lo) / 2;
        if (auto c = doubled_counts(n, groups, mid)) hi = mid, best = std::move(c);
        else lo = mid + 1;
      }
  }
  const GroupCounts count = best ? std::move(*best) : spread_counts(n, groups);
  for (int64_t g = 0; g < groups; ++g) {
    int64_t *slot = order.data() + 8 * g;
    const std::array<int, 8> &c = count[size_t(g)];
    for (int r = 0; r < 8; ++r)
      if (c[r] > 0) slot[r] = bucket[r].back(), bucket[r].pop_back();
    int hole = 0;  // the next slot of a residue this group lacks
    for (int r = 0; r < 8; ++r)
      for (int x = 1; x < c[r]; ++x) {
        while (hole < 8 && (c[hole] > 0 || slot[hole] >= 0)) ++hole;
        int at = hole;
        if (at == 8)  // no lacking residue left (only the fallback gets here): any free slot
          for (at = 0; slot[at] >= 0; ++at) {
          }
        slot[at] = bucket[r].back(), bucket[r].pop_back();
      }
  }
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
