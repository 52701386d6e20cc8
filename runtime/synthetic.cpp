#include "runtime/synthetic.h"

#include <algorithm>
#include <cmath>

namespace magicube {

int64_t draw(std::mt19937_64 &rng, const ElemType &t) {
  return t.min_value() + int64_t(rng() % uint64_t(t.max_value() - t.min_value() + 1));
}

int64_t draw_nonzero(std::mt19937_64 &rng, const ElemType &t) {
  for (;;)
    if (int64_t x = draw(rng, t)) return x;
}

std::vector<int64_t> random_dense(std::mt19937_64 &rng, int64_t count, const ElemType &t) {
  std::vector<int64_t> d(size_t(std::max<int64_t>(count, 0)));
  for (int64_t &x : d) x = draw(rng, t);
  if (!d.empty() && std::all_of(d.begin(), d.end(), [](int64_t x) { return x == 0; })) d[0] = t.max_value();
  return d;
}

VectorSparse synthetic_sparse(std::mt19937_64 &rng, int64_t rows, int64_t cols, double sparsity, int v,
                              const std::function<int64_t()> &value) {
  VectorSparse a;
  a.rows = rows;
  a.cols = cols;
  a.v = v;
  const int64_t nb = (rows + v - 1) / v;
  const int64_t per = std::clamp<int64_t>(std::llround((1.0 - sparsity) * double(cols)), 0, cols);
  std::vector<int32_t> all(static_cast<size_t>(std::max<int64_t>(cols, 0))), pick(static_cast<size_t>(per));
  for (int64_t c = 0; c < cols; ++c) all[size_t(c)] = int32_t(c);
  a.block_ptr.reserve(size_t(nb + 1));
  a.block_ptr.push_back(0);
  a.col.reserve(size_t(nb * per));
  if (value) a.values.reserve(size_t(nb * per * v));
  for (int64_t b = 0; b < nb; ++b) {
    // A partial Fisher-Yates shuffle: `all` stays a permutation, its first `per` are the pick.
    for (int64_t i = 0; i < per; ++i) std::swap(all[size_t(i)], all[size_t(i + int64_t(rng() % uint64_t(cols - i)))]);
    std::copy(all.begin(), all.begin() + per, pick.begin());
    std::sort(pick.begin(), pick.end());
    for (int32_t c : pick) {
      a.col.push_back(c);
      if (value)
        for (int r = 0; r < v; ++r) a.values.push_back(b * v + r < rows ? value() : 0);
    }
    a.block_ptr.push_back(int64_t(a.col.size()));
  }
  return a;
}

VectorSparse synthetic_sparse(std::mt19937_64 &rng, int64_t rows, int64_t cols, double sparsity, int v,
                              const ElemType &t) {
  return synthetic_sparse(rng, rows, cols, sparsity, v, [&] { return draw_nonzero(rng, t); });
}

void fill_nonzero(VectorSparse &a, const ElemType &t, std::mt19937_64 &rng) {
  a.values.assign(size_t(a.num_vectors()) * a.v, 0);
  for (int64_t b = 0; b < a.num_blocks(); ++b)
    for (int64_t i = a.block_ptr[b]; i < a.block_ptr[b + 1]; ++i)
      for (int r = 0; r < a.v; ++r)
        if (b * a.v + r < a.rows) a.values[size_t(i * a.v + r)] = draw_nonzero(rng, t);
}

}  // namespace magicube
