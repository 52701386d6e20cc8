#include "tools/inputs.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <optional>

#include <fmt/format.h>

#include "llvm/Support/raw_ostream.h"
#include "runtime/smtx.h"

namespace magicube::tool {

namespace {
llvm::Error err(const llvm::Twine &msg) { return llvm::createStringError(llvm::inconvertibleErrorCode(), msg); }
}  // namespace

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

VectorSparse synthetic_sparse(std::mt19937_64 &rng, int64_t m, int64_t k, double sparsity, int v, const ElemType &t) {
  VectorSparse a;
  a.rows = m;
  a.cols = k;
  a.v = v;
  int64_t nb = (m + v - 1) / v;
  int64_t per = std::llround((1.0 - sparsity) * double(k));
  per = std::clamp<int64_t>(per, 0, k);
  std::vector<int32_t> cols(k);
  for (int64_t c = 0; c < k; ++c) cols[c] = int32_t(c);
  a.block_ptr.reserve(nb + 1);
  a.block_ptr.push_back(0);
  a.col.reserve(nb * per);
  a.values.reserve(nb * per * v);
  std::vector<int32_t> pick(per);
  for (int64_t b = 0; b < nb; ++b) {
    // A partial Fisher-Yates shuffle: cols stays a permutation, its first `per` are the pick.
    for (int64_t i = 0; i < per; ++i) std::swap(cols[i], cols[i + int64_t(rng() % uint64_t(k - i))]);
    std::copy(cols.begin(), cols.begin() + per, pick.begin());
    std::sort(pick.begin(), pick.end());
    for (int32_t c : pick) {
      a.col.push_back(c);
      for (int r = 0; r < v; ++r) a.values.push_back(b * v + r < m ? draw_nonzero(rng, t) : 0);
    }
    a.block_ptr.push_back(int64_t(a.col.size()));
  }
  return a;
}

llvm::Expected<VectorSparse> make_sparse(const RunArgs &r, const OpSpec &spec, const ElemType &t, int64_t cols,
                                         const char *cols_flag, std::mt19937_64 &rng) {
  if (!r.matrix.empty()) {
    auto pat = read_smtx(r.matrix);
    if (!pat) return pat.takeError();
    if (pat->rows * spec.v > INT32_MAX || pat->cols > INT32_MAX)
      return err("matrix: " + r.matrix + " dilated by V=" + llvm::Twine(spec.v) + " is too large for 32-bit indices");
    return dilate(*pat, spec.v, [&] { return draw_nonzero(rng, t); });
  }
  if (r.m <= 0 || r.m > INT32_MAX) return err("m: --m=" + llvm::Twine(r.m) + " is not allowed (allowed: 1..2^31-1)");
  if (cols <= 0 || cols > INT32_MAX)
    return err(llvm::Twine(cols_flag) + ": --" + cols_flag + "=" + llvm::Twine(cols) +
               " is not allowed (allowed: 1..2^31-1)");
  if (!(r.sparsity >= 0.0 && r.sparsity < 1.0))
    return err("sparsity: --sparsity=" + fmt::format("{}", r.sparsity) + " is not allowed (allowed: 0 <= sparsity < 1)");
  return synthetic_sparse(rng, r.m, cols, r.sparsity, spec.v, t);
}

std::string missing_list(std::initializer_list<std::pair<bool, const char *>> flags) {
  std::string missing;
  for (auto [given, name] : flags)
    if (!given) missing += std::string(missing.empty() ? "" : ", ") + name;
  return missing;
}

int plan_arch_for_device(int cc) {
  int best = 0;
  for (int a : {80, 86, 89, 90})
    if (a <= cc) best = a;
  return best;
}

int no_gpu_exit(const std::string &why) {
  llvm::errs() << "magicube: no GPU: " << why << "\n";
  return 2;
}

llvm::Expected<Context *> process_context() {
  static std::optional<Context> ctx;
  if (!ctx) {
    auto created = Context::create(0);
    if (!created) return created.takeError();
    ctx.emplace(std::move(*created));
  }
  return &*ctx;
}

llvm::Expected<int> device_plan_arch(const Context &ctx) {
  const int arch = plan_arch_for_device(ctx.compute_capability());
  if (arch == 0)
    return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                   "arch: the device " + ctx.name() + " is " + arch_name(ctx.compute_capability()) +
                                       " (supported: sm_80 and newer)");
  return arch;
}

}  // namespace magicube::tool
