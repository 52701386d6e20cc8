#include "runtime/srbcrs.h"

#include <algorithm>

namespace magicube {

namespace {
llvm::Error err(const llvm::Twine &msg) { return llvm::createStringError(llvm::inconvertibleErrorCode(), msg); }
std::string range_str(const ElemType &t) {
  return t.str() + "'s range [" + std::to_string(t.min_value()) + ", " + std::to_string(t.max_value()) + "]";
}
}  // namespace

SrBcrs build_srbcrs(const VectorSparse &a, int stride, bool shuffled, const std::vector<int> &shuffle) {
  if (shuffle.empty()) shuffled = false;
  const int64_t G = shuffled ? int64_t(shuffle.size()) : 1;
  SrBcrs s;
  s.rows = a.rows;
  s.cols = a.cols;
  s.v = a.v;
  s.stride = stride;
  s.shuffled = shuffled;
  s.shuffle = shuffle;
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
    int64_t base = s.row_ptr[2 * b];
    for (int64_t i = a.block_ptr[b]; i < a.block_ptr[b + 1]; ++i) {
      int64_t q = base + (i - a.block_ptr[b]);  // k-position of this vector
      for (int r = 0; r < a.v; ++r) s.values[s.value_index(q, r)] = a.values[i * a.v + r];
    }
    // Column indices: the slot p of a group of G is multiplied at k-position shuffle[p], so
    // it must name the column of the vector at that position.
    for (int64_t p = base; p < s.padded_end(b); ++p) {
      int64_t q = shuffled ? (p / G) * G + shuffle[p % G] : p;
      int64_t i = a.block_ptr[b] + (q - base);
      s.col_idx[p] = q < s.row_ptr[2 * b + 1] ? a.col[i] : -1;
    }
  }
  return s;
}

llvm::Expected<SrBcrs> build_srbcrs(const VectorSparse &a, const Plan &plan) {
  if (a.v != plan.spec.v)
    return err("srbcrs: the matrix has V=" + llvm::Twine(a.v) + " but the plan is for V=" + llvm::Twine(plan.spec.v));
  if (plan.shuffle_b && plan.k_stride % int(plan.shuffle.size()) != 0)
    return err("srbcrs: a shuffled layout needs a stride that is a multiple of " + llvm::Twine(plan.shuffle.size()));
  return build_srbcrs(a, plan.k_stride, plan.shuffle_b, plan.shuffle);
}

llvm::Error check_range(const SrBcrs &a, const ElemType &t, const char *name) {
  for (int64_t b = 0; b < a.num_blocks(); ++b)
    for (int64_t q = a.row_ptr[2 * b]; q < a.row_ptr[2 * b + 1]; ++q)
      for (int r = 0; r < a.v; ++r) {
        int64_t x = a.values[a.value_index(q, r)];
        if (!t.contains(x)) {
          // Report the logical position: row and column of the vector at k-position q.
          int64_t p = q;
          if (a.shuffled) {
            const int64_t G = int64_t(a.shuffle.size());
            for (int64_t j = 0; j < G; ++j)
              if ((q / G) * G + a.shuffle[j] == q) p = (q / G) * G + j;
          }
          return err(llvm::Twine(name) + "[" + llvm::Twine(b * a.v + r) + ", " + llvm::Twine(a.col_idx[p]) +
                     "] = " + llvm::Twine(x) + " is outside " + range_str(t));
        }
      }
  return llvm::Error::success();
}

llvm::Error check_range_dense(const std::vector<int64_t> &m, int64_t rows, int64_t cols, bool col_major,
                              const ElemType &t, const char *name) {
  if (int64_t(m.size()) != rows * cols)
    return err(llvm::Twine(name) + ": has " + llvm::Twine(m.size()) + " values, expected " + llvm::Twine(rows) + " x " +
               llvm::Twine(cols));
  for (int64_t i = 0; i < int64_t(m.size()); ++i)
    if (!t.contains(m[i])) {
      int64_t r = col_major ? i % rows : i / cols, c = col_major ? i / rows : i % cols;
      return err(llvm::Twine(name) + "[" + llvm::Twine(r) + ", " + llvm::Twine(c) + "] = " + llvm::Twine(m[i]) +
                 " is outside " + range_str(t));
    }
  return llvm::Error::success();
}

}  // namespace magicube
