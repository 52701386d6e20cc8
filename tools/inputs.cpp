#include "tools/inputs.h"

#include <cstdint>
#include <optional>

#include <fmt/format.h>

#include "llvm/Support/raw_ostream.h"
#include "runtime/kernel.h"
#include "runtime/memory_budget.h"
#include "runtime/smtx.h"

namespace magicube::tool {

namespace {
llvm::Error err(const llvm::Twine &msg) { return llvm::createStringError(llvm::inconvertibleErrorCode(), msg); }
}  // namespace

llvm::Error check_host_memory(const OpSpec &spec, int64_t m, int64_t k, int64_t n, int64_t nnz, bool synthetic) {
  const bool sddmm = spec.op == OpKind::SDDMM;
  const int64_t v = spec.v, per_vector = 2 * (4 + 8 * v);  // VectorSparse + its SR-BCRS copy
  MemoryBudget b(fmt::format("size: {} M={} K={} N={} V={} with {} vectors", sddmm ? "SDDMM" : "SpMM", m, k, n, v, nnz));
  if (!sddmm) {
    b.add("A: its vectors (column, V int64 values) and their SR-BCRS copy", nnz, per_vector);
    if (synthetic) b.add("the column permutation of A's rows (K int32)", k, 4);
    b.add("B: K x N int64 values and their padded copy", checked_mul(k, n).value_or(INT64_MAX), 16);
    b.add("C: M x N int64, its reference and the downloaded result", checked_mul(m, n).value_or(INT64_MAX), 24);
  } else {
    b.add("the mask: its vectors and their SR-BCRS copy", nnz, per_vector);
    if (synthetic) b.add("the column permutation of the mask's rows (N int32)", n, 4);
    b.add("A: M x K int64 values and their padded copy", checked_mul(m, k).value_or(INT64_MAX), 16);
    b.add("B: K x N int64 values and their padded copy", checked_mul(k, n).value_or(INT64_MAX), 16);
    b.add("the output: V int64 per vector, its reference and the downloaded result",
          checked_mul(nnz, v).value_or(INT64_MAX), 24);
  }
  return b.check_host();
}

llvm::Error check_device_memory(const Context &ctx, const Plan &plan, int64_t m, int64_t k, int64_t n, int64_t nnz) {
  const OpSpec &s = plan.spec;
  auto plane_bytes = [](const std::vector<Chunk> &chunks, int64_t elements) {
    int64_t nibbles = 0;  // per element, over the planes
    for (const Chunk &c : chunks) nibbles += c.storage_bits / 4;
    return checked_mul(elements, nibbles).value_or(INT64_MAX) / 2 + 1;
  };
  const int64_t v = s.v, nb = (m + v - 1) / v;
  const int64_t slots = nnz + nb * std::max(plan.k_stride, 32);  // each row-block padded to a stride
  const int64_t ld = (k + 127) / 128 * 128, ldn = (n + 255) / 256 * 256;
  MemoryBudget b(fmt::format("size: {} M={} K={} N={} V={} with {} vectors", s.op == OpKind::SDDMM ? "SDDMM" : "SpMM",
                             m, k, n, v, nnz));
  if (s.op == OpKind::SpMM) {
    b.add("A: packed SR-BCRS (indices and chunk planes)", slots, 4);
    b.add("A's chunk planes", 1, plane_bytes(plan.lhs, checked_mul(slots, v).value_or(INT64_MAX)));
    b.add("B: packed chunk planes", 1, plane_bytes(plan.rhs, checked_mul(k, ldn).value_or(INT64_MAX)));
    b.add("C: M x N output", checked_mul(m, n).value_or(INT64_MAX), int64_t(stored_bytes(s.out)));
  } else {
    b.add("the mask: SR-BCRS indices", slots, 8);
    b.add("A: packed chunk planes", 1, plane_bytes(plan.lhs, checked_mul(nb * v, ld).value_or(INT64_MAX)));
    b.add("B: packed chunk planes", 1, plane_bytes(plan.rhs, checked_mul(n, ld).value_or(INT64_MAX)));
    b.add("the output", checked_mul(slots, v).value_or(INT64_MAX), int64_t(stored_bytes(s.out)));
  }
  if (ctx.total_memory() == 0) return llvm::Error::success();  // unknown
  return b.check(uint64_t(ctx.total_memory()), "device memory of " + ctx.name());
}

llvm::Error check_timing_flags(int repeat, int warmup) {
  if (repeat < 1 || repeat > kMaxRepeat)
    return err("repeat: --repeat=" + llvm::Twine(repeat) + " is not allowed (allowed: 1.." + llvm::Twine(kMaxRepeat) + ")");
  if (warmup < 0 || warmup > kMaxWarmup)
    return err("warmup: --warmup=" + llvm::Twine(warmup) + " is not allowed (allowed: 0.." + llvm::Twine(kMaxWarmup) + ")");
  return llvm::Error::success();
}

llvm::Expected<VectorSparse> make_sparse(const RunArgs &r, const OpSpec &spec, const ElemType &t, int64_t cols,
                                         const char *cols_flag, std::mt19937_64 &rng) {
  const bool sddmm = spec.op == OpKind::SDDMM;
  if (!r.matrix.empty()) {
    auto pat = read_smtx(r.matrix);
    if (!pat) return pat.takeError();
    // As --m=0 and --k=0 are refused, so is a pattern with no rows or no columns.
    if (pat->rows == 0 || pat->cols == 0)
      return err("matrix: " + r.matrix + " has " + llvm::Twine(pat->rows) + " rows and " + llvm::Twine(pat->cols) +
                 " columns (allowed: at least 1 of each)");
    if (pat->rows * spec.v > INT32_MAX || pat->cols > INT32_MAX)
      return err("matrix: " + r.matrix + " dilated by V=" + llvm::Twine(spec.v) + " is too large for 32-bit indices");
    const int64_t m = pat->rows * spec.v;
    if (auto e = sddmm ? check_host_memory(spec, m, r.k, pat->cols, pat->nnz(), false)
                       : check_host_memory(spec, m, pat->cols, r.n, pat->nnz(), false))
      return err("matrix: " + r.matrix + ": " + llvm::toString(std::move(e)));
    return dilate(*pat, spec.v, [&] { return draw_nonzero(rng, t); });
  }
  if (r.m <= 0 || r.m > INT32_MAX) return err("m: --m=" + llvm::Twine(r.m) + " is not allowed (allowed: 1..2^31-1)");
  if (cols <= 0 || cols > INT32_MAX)
    return err(llvm::Twine(cols_flag) + ": --" + cols_flag + "=" + llvm::Twine(cols) +
               " is not allowed (allowed: 1..2^31-1)");
  if (!(r.sparsity >= 0.0 && r.sparsity < 1.0))
    return err("sparsity: --sparsity=" + fmt::format("{}", r.sparsity) + " is not allowed (allowed: 0 <= sparsity < 1)");
  // The vectors synthetic_sparse will draw, before it allocates them.
  const int64_t nb = (r.m + spec.v - 1) / spec.v;
  const int64_t per = std::clamp<int64_t>(std::llround((1.0 - r.sparsity) * double(cols)), 0, cols);
  const int64_t nnz = checked_mul(nb, per).value_or(INT64_MAX);
  if (auto e = sddmm ? check_host_memory(spec, r.m, r.k, cols, nnz, true) : check_host_memory(spec, r.m, cols, r.n, nnz, true))
    return e;
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


llvm::Expected<int> device_plan_arch(const Context &ctx) {
  const int arch = plan_arch_for_device(ctx.compute_capability());
  if (arch == 0)
    return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                   "arch: the device " + ctx.name() + " is " + arch_name(ctx.compute_capability()) +
                                       " (supported: sm_80 and newer)");
  return arch;
}

}  // namespace magicube::tool
