#include "tools/inputs.h"

#include <cstdint>
#include <optional>

#include <fmt/format.h>

#include "llvm/Support/raw_ostream.h"
#include "runtime/smtx.h"

namespace magicube::tool {

namespace {
llvm::Error err(const llvm::Twine &msg) { return llvm::createStringError(llvm::inconvertibleErrorCode(), msg); }
}  // namespace

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
