// Build (build machine, against build/lib): g++ -std=c++20 -O2 -I. -Ibuild -I/usr/lib/llvm-14/include stride_span.cpp
//   -Wl,--start-group build/lib/libmagicube_{formats,runtime,compiler,support,codegen}.a -Wl,--end-group -lLLVM-14 -lfmt -lspdlog
// How far apart are the columns of one decode stride (32 slots, bank-balanced) in LLM-like
// matrices? The span (max - min real column) decides whether 8-bit offsets from a per-stride
// base can name them.
#include <algorithm>
#include <cstdio>
#include <random>
#include "runtime/srbcrs.h"
#include "runtime/vector_sparse.h"
using namespace magicube;
int main() {
  for (double s : {0.5, 0.7, 0.9})
    for (auto [m, k] : {std::pair<int64_t, int64_t>{4096, 4096}, {4096, 14336}}) {
      std::mt19937_64 rng(1);
      std::bernoulli_distribution keep(1 - s);
      VectorSparse a;
      a.rows = m, a.cols = k, a.v = 8;
      a.block_ptr.push_back(0);
      for (int64_t b = 0; b < m / 8; ++b) {
        for (int64_t c = 0; c < k; ++c)
          if (keep(rng)) a.col.push_back(int32_t(c));
        a.block_ptr.push_back(int64_t(a.col.size()));
      }
      a.values.assign(a.col.size() * 8, 1);
      for (bool bal : {false, true}) {
        SrBcrs sr = build_srbcrs(a, 32, false, {}, bal);
        std::vector<int> spans;
        for (int64_t t = 0; t < sr.num_slots() / 32; ++t) {
          int lo = 1 << 30, hi = -1;
          for (int i = 0; i < 32; ++i) {
            int c = sr.col_idx[size_t(t * 32 + i)];
            if (c >= 0) lo = std::min(lo, c), hi = std::max(hi, c);
          }
          if (hi >= 0) spans.push_back(hi - lo);
        }
        std::sort(spans.begin(), spans.end());
        size_t over = size_t(std::count_if(spans.begin(), spans.end(), [](int x) { return x > 255; }));
        std::printf("s=%.1f %lldx%lld %s: strides %zu, span median %d, p99 %d, max %d, > 255: %.2f %%\n", s,
                    (long long)m, (long long)k, bal ? "balanced " : "in order ", spans.size(), spans[spans.size() / 2],
                    spans[spans.size() * 99 / 100], spans.back(), 100.0 * double(over) / double(spans.size()));
      }
    }
}
