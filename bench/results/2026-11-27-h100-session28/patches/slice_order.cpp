#include "runtime/slice_order.h"

#include <algorithm>
#include <array>
#include <cassert>

namespace magicube {

std::vector<uint16_t> slice_positions(int64_t k, const std::vector<int64_t> &first, const std::vector<int32_t> &cols) {
  assert(k > 0 && k <= 65536);
  const int64_t sets = int64_t(first.size()) - 1;
  std::vector<int64_t> row_first(size_t(k) + 1, 0);
  for (int64_t s = 0; s < sets; ++s)
    for (int64_t i = first[size_t(s)]; i < first[size_t(s) + 1]; ++i) ++row_first[size_t(cols[size_t(i)]) + 1];
  for (int64_t r = 0; r < k; ++r) row_first[size_t(r) + 1] += row_first[size_t(r)];
  std::vector<int32_t> row_sets(size_t(row_first[size_t(k)]));
  {
    std::vector<int64_t> at(row_first.begin(), row_first.end() - 1);
    for (int64_t s = 0; s < sets; ++s)
      for (int64_t i = first[size_t(s)]; i < first[size_t(s) + 1]; ++i) row_sets[size_t(at[size_t(cols[size_t(i)])]++)] = int32_t(s);
  }
  auto degree = [&](int64_t r) { return row_first[size_t(r) + 1] - row_first[size_t(r)]; };
  std::vector<std::array<int32_t, 8>> count(size_t(sets), std::array<int32_t, 8>{});
  std::array<int64_t, 8> left{};
  for (int c = 0; c < 8; ++c) left[size_t(c)] = (k - c + 7) / 8;
  std::vector<int32_t> order(static_cast<size_t>(k));
  for (int64_t r = 0; r < k; ++r) order[size_t(r)] = int32_t(r);
  std::stable_sort(order.begin(), order.end(), [&](int32_t a, int32_t b) { return degree(a) > degree(b); });
  std::vector<uint8_t> residue(size_t(k), 0);
  for (int32_t r : order) {
    int best = -1;
    int64_t best_sum = 0;
    for (int c = 0; c < 8; ++c) {
      if (left[size_t(c)] == 0) continue;
      int64_t sum = 0;
      for (int64_t j = row_first[size_t(r)]; j < row_first[size_t(r) + 1]; ++j) sum += count[size_t(row_sets[size_t(j)])][size_t(c)];
      if (best < 0 || sum < best_sum) best = c, best_sum = sum;
    }
    residue[size_t(r)] = uint8_t(best);
    --left[size_t(best)];
    for (int64_t j = row_first[size_t(r)]; j < row_first[size_t(r) + 1]; ++j) ++count[size_t(row_sets[size_t(j)])][size_t(best)];
  }
  std::array<std::vector<int32_t>, 8> members;
  for (int64_t r = 0; r < k; ++r) members[residue[size_t(r)]].push_back(int32_t(r));
  std::vector<int64_t> slot(static_cast<size_t>(k));
  for (auto &m : members)
    for (size_t i = 0; i < m.size(); ++i) slot[size_t(m[i])] = int64_t(i);
  uint64_t lcg = 0x9e3779b97f4a7c15ull;
  auto next = [&]() { return (lcg = lcg * 6364136223846793005ull + 1442695040888963407ull) >> 33; };
  auto move = [&](int32_t r, int from, int to) {
    int64_t d = 0;
    for (int64_t j = row_first[size_t(r)]; j < row_first[size_t(r) + 1]; ++j) {
      auto &c = count[size_t(row_sets[size_t(j)])];
      d += 2 * (int64_t(c[size_t(to)]) - c[size_t(from)]) + 2;
      --c[size_t(from)], ++c[size_t(to)];
    }
    return d;
  };
  for (int pass = 0; pass < 2; ++pass)
    for (int32_t a = 0; a < int32_t(k); ++a)
      for (int attempt = 0; attempt < 8; ++attempt) {
        const int x = residue[size_t(a)], y = int(next() % 8);
        if (y == x || members[size_t(y)].empty()) continue;
        const int32_t b = members[size_t(y)][size_t(next() % members[size_t(y)].size())];
        const int64_t d = move(a, x, y) + move(b, y, x);
        if (d < 0) {
          residue[size_t(a)] = uint8_t(y), residue[size_t(b)] = uint8_t(x);
          std::swap(members[size_t(x)][size_t(slot[size_t(a)])], members[size_t(y)][size_t(slot[size_t(b)])]);
          std::swap(slot[size_t(a)], slot[size_t(b)]);
          break;
        }
        move(b, x, y), move(a, y, x);
      }
  std::vector<uint16_t> pos(static_cast<size_t>(k));
  std::array<int64_t, 8> at{};
  for (int c = 0; c < 8; ++c) at[size_t(c)] = c;
  for (int64_t r = 0; r < k; ++r) {
    const int c = residue[size_t(r)];
    pos[size_t(r)] = uint16_t(at[size_t(c)]);
    at[size_t(c)] += 8;
  }
  return pos;
}

}  // namespace magicube
