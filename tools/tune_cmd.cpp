// tune: inputs as for run -> every candidate timed on the GPU -> the table, the choice and
// the stored record.
#include "tools/tune_cmd.h"

#include <algorithm>
#include <cmath>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "llvm/Support/raw_ostream.h"
#include "compiler/planner.h"
#include "runtime/autotune.h"
#include "runtime/dispatch.h"
#include "runtime/smtx.h"
#include "tools/inputs.h"

namespace magicube::tool {

int cmd_tune(const OpFlags &f, const TuneArgs &t) {
  const RunArgs &r = t.input;
  // ---- everything that needs no GPU ----
  auto spec = spec_from_flags(f);
  if (!spec) return fail(spec.takeError());
  const bool sddmm = spec->op == OpKind::SDDMM;
  if (t.candidate_given)
    return fail("candidate: --candidate=" + llvm::Twine(f.candidate) +
                " is not allowed with tune (it times every candidate plan)");
  if (!sddmm && (r.layout_given || r.stride_given))
    return fail(r.layout_given ? "layout: --layout applies to --op=sddmm only" : "stride: --stride applies to --op=sddmm only");
  if (r.layout != "bcrs" && r.layout != "srbcrs")
    return fail("layout: '" + r.layout + "' is not allowed (allowed: bcrs, srbcrs)");
  if (r.stride < 1 || r.stride > 1024)
    return fail("stride: --stride=" + llvm::Twine(r.stride) + " is not allowed (allowed: 1..1024)");
  if (!sddmm) {
    if (!r.matrix.empty() && (r.m_given || r.k_given || r.sparsity_given))
      return fail("matrix: --matrix=" + r.matrix + " cannot be combined with --m, --k or --sparsity");
    if (r.matrix.empty() && !(r.m_given && r.k_given && r.sparsity_given))
      return fail("tune: give --matrix=FILE.smtx, or all of --m, --k and --sparsity (missing: " +
                  missing_list({{r.m_given, "--m"}, {r.k_given, "--k"}, {r.sparsity_given, "--sparsity"}}) + ")");
    if (r.n <= 0 || r.n > INT32_MAX)
      return fail("n: --n=" + llvm::Twine(r.n) + " is not allowed (give --n=N, the columns of B and C: 1..2^31-1)");
  } else {
    if (!r.matrix.empty() && (r.m_given || r.n_given || r.sparsity_given))
      return fail("matrix: --matrix=" + r.matrix + " cannot be combined with --m, --n or --sparsity");
    if (r.matrix.empty() && !(r.m_given && r.n_given && r.sparsity_given))
      return fail("tune: give --matrix=FILE.smtx, or all of --m, --n and --sparsity (missing: " +
                  missing_list({{r.m_given, "--m"}, {r.n_given, "--n"}, {r.sparsity_given, "--sparsity"}}) + ")");
    if (r.k <= 0 || r.k > INT32_MAX)
      return fail("k: --k=" + llvm::Twine(r.k) + " is not allowed (give --k=K, the reduction length: 1..2^31-1)");
  }
  if (auto e = check_timing_flags(r.repeat, r.warmup)) return fail(std::move(e));

  TuneOptions opts;
  if (t.bsn_given) opts.knob_values["bsn"] = {f.bsn};
  if (t.no_prefetch_given) opts.knob_values["prefetch"] = {0};
  else if (t.stages_given) opts.knob_values["prefetch"] = {f.stages == 0 ? 1 : f.stages};
  if (t.split_given) opts.knob_values["split"] = {f.split};
  if (t.resident_given) opts.knob_values["resident"] = {f.resident ? 1 : 0};
  if (t.decode_given) opts.knob_values["decode"] = {f.decode ? 1 : 0};
  if (t.warps_given) opts.knob_values["decode"] = {1}, opts.knob_values["resident"] = {1}, opts.knob_values["warps"] = {f.warps};
  opts.warmup = r.warmup;
  opts.repeat = r.repeat;
  opts.seed = r.seed;
  opts.verify = t.verify;
  opts.flush_l2 = r.flush_l2;
  opts.sddmm_stride = r.stride;
  opts.sddmm_layout = r.layout == "srbcrs" ? SparseLayout::SrBcrs : SparseLayout::Bcrs;
  opts.progress = [](const TuneProgress &p) {  // on stderr, so the table on stdout stays clean
    if (p.stage == "compile" && p.done == 0)
      llvm::errs() << "tune: compiling " << p.total << " candidates (pruned by the cost model) in parallel\n";
    else if (p.stage == "time")
      llvm::errs() << fmt::format("tune: [{}/{}] {}\n", p.done, p.total, p.candidate);
  };
  {  // refuse a spec that cannot be planned before looking for a GPU
    auto cands = tuning_candidates(*spec, opts);
    if (!cands) return fail(cands.takeError());
  }

  std::mt19937_64 rng(r.seed);
  auto sparse = sddmm ? make_sparse(r, *spec, ElemType{1, false}, r.n, "n", rng)
                      : make_sparse(r, *spec, spec->lhs, r.k, "k", rng);
  if (!sparse) return fail(sparse.takeError());
  const int64_t m = sparse->rows;
  const int64_t n = sddmm ? sparse->cols : r.n;
  const int64_t k = sddmm ? r.k : sparse->cols;

  // ---- the GPU ----
  if (std::string why = no_gpu_reason(); !why.empty()) return no_gpu_exit(why);
  auto opened = process_context();
  if (!opened) return fail(opened.takeError());
  Context *ctx = *opened;
  if (!f.arch_given) {  // plan for the device's own arch
    auto arch = device_plan_arch(*ctx);
    if (!arch) return fail(arch.takeError());
    spec->arch = *arch;
  }
  auto cands = tuning_candidates(*spec, opts);
  if (!cands) return fail(cands.takeError());
  const MatrixSignature sig = sddmm ? sddmm_signature(*sparse, k) : spmm_signature(*sparse, n);
  auto base_plan = dispatch(*spec, &sig, device_facts(*ctx));  // the untuned default sizes the device memory
  if (!base_plan) return fail(base_plan.takeError());
  if (auto e = check_device_memory(*ctx, base_plan->plan, m, k, n, sparse->num_vectors())) return fail(std::move(e));
  const int64_t nnz = sparse->num_vectors();
  llvm::outs() << "gpu       " << ctx->name() << " (" << arch_name(ctx->compute_capability()) << ", "
               << ctx->sm_count() << " SMs)\n"
               << "op        " << to_string(*spec) << " (" << cands->size() << " candidates)\n"
               << fmt::format("problem   M={} K={} N={} V={} nnz-vectors={} (mean row-block {:.1f}, longest {}, cv {:.2f})\n",
                              m, k, n, spec->v, nnz, sig.mean, int64_t(sig.max), sig.cv)
               << "signature " << sig.key() << "\n";
  llvm::outs().flush();

  auto res = sddmm ? tune_sddmm(*ctx, *spec, *sparse, k, opts) : tune_spmm(*ctx, *spec, *sparse, n, opts);
  if (!res) return fail(res.takeError());

  // SpMM: each vector meets N columns of B; SDDMM: each vector is a K-long dot product per row.
  const double ops = 2.0 * double(nnz) * double(spec->v) * double(sddmm ? k : n);
  auto tops = [&](double ms) { return ms > 0 ? ops / (ms * 1e-3) / 1e12 : 0.0; };
  std::string header = fmt::format("{:>4}", "#");
  for (const KnobInfo &i : knob_table()) header += fmt::format(" {:>8}", i.name);
  header += fmt::format(" {:>4}  {:<24} {:>10} {:>10} {:>10} {:>8}  {}", "plan", "mma", "median ms", "min ms",
                        "max ms", "TOPS", "kernel");
  llvm::outs() << "\n" << header << "\n";
  // The untuned default: what the dispatch's policy picks for this matrix (`run` without a record).
  const CandidateTiming *untuned = nullptr;
  const PolicyChoice policy = policy_spec(*spec, &sig, device_facts(*ctx));
  auto policy_plan = plan(policy.spec);
  const std::string policy_id = policy_plan ? plan_id(*policy_plan) : std::string();
  if (!policy_plan) llvm::consumeError(policy_plan.takeError());
  for (size_t i = 0; i < res->timings.size(); ++i) {
    const CandidateTiming &c = res->timings[i];
    if (c.candidate.spec == policy.spec && c.candidate.plan_id == policy_id) untuned = &c;
    std::string line = fmt::format("{:>4}", i);
    for (const KnobInfo &ki : knob_table()) line += fmt::format(" {:>8}", c.candidate.knobs.*ki.field);
    line += fmt::format(" {:>4}  {:<24}", c.candidate.plan, c.candidate.plan_id);
    if (c.ok)
      line += fmt::format(" {:>10.4f} {:>10.4f} {:>10.4f} {:>8.2f}  {}", c.median_ms, c.min_ms, c.max_ms,
                          tops(c.median_ms), c.kernel);
    else
      line += "  skipped: " + c.skipped.substr(0, c.skipped.find('\n'));
    llvm::outs() << line << (c.candidate.knobs == res->choice.candidate.knobs &&
                                     c.candidate.plan == res->choice.candidate.plan
                                 ? "  <- chosen"
                                 : "")
                 << "\n";
  }
  const Choice &ch = res->choice;
  llvm::outs() << "\n"
               << fmt::format("choice    {} ({}): median {:.4f} ms, {:.2f} TOPS\n", ch.candidate.str(),
                              to_string(ch.spec()), ch.median_ms, tops(ch.median_ms));
  if (untuned && untuned->ok && ch.median_ms > 0)
    llvm::outs() << fmt::format("          {:.2f}x the untuned default, the policy's choice ({}: {:.4f} ms)\n",
                                untuned->median_ms / ch.median_ms, untuned->candidate.str(), untuned->median_ms);
  if (ch.dense_ms > 0)
    llvm::outs() << fmt::format("dense     the dense route (cuBLASLt int8): median {:.4f} ms, {:.2f}x the chosen kernel: "
                                "{} takes the {} route where the caller allows the dense route\n",
                                ch.dense_ms, ch.median_ms / ch.dense_ms, "the dispatch",
                                ch.dense_ms < ch.median_ms ? "dense" : "sparse");
  const OpSpec &cs = ch.spec();
  std::string flags = fmt::format("--op={} --lhs={} --rhs={} --v={} --out={}", op_name(cs.op), cs.lhs.str(),
                                  cs.rhs.str(), cs.v, out_name(cs.out));
  if (cs.scale != Scale::None) flags += std::string(" --scale=") + scale_name(cs.scale);
  if (cs.bias != Bias::None) flags += std::string(" --bias=") + bias_name(cs.bias);
  flags += " --arch=" + arch_name(cs.arch) + " " + ch.candidate.run_flags();
  llvm::outs() << "run with  magicube run " << flags << " <the same matrix flags>\n";
  if (res->saved)
    llvm::outs() << "record    " << res->path << "\n";
  else
    llvm::outs() << "record    not saved" << (res->path.empty() ? "" : " (" + res->path + ")")
                 << ": see the warning above\n";
  return 0;
}

}  // namespace magicube::tool
