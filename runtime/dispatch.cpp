#include "runtime/dispatch.h"

#include <fmt/format.h>

#include "support/log.h"
#include "compiler/planner.h"
#include "runtime/autotune.h"
#include "runtime/cuda_driver.h"
#include "runtime/dense_gemm.h"

namespace magicube {

namespace {

llvm::Error err(const llvm::Twine &msg) { return llvm::createStringError(llvm::inconvertibleErrorCode(), msg); }

// The reduction the output type must stay exact for: SpMM's longest row-block, SDDMM's K.
int64_t reduction_of(const OpSpec &s, const MatrixSignature &sig) {
  return s.op == OpKind::SpMM ? int64_t(sig.max) : sig.k;
}

// Why `p` cannot run on the matrix ("" when it can).
std::string unfit(const Plan &p, const MatrixSignature *sig) {
  if (!sig) return "";
  if (auto e = check_reduction_length(p, reduction_of(p.spec, *sig))) return llvm::toString(std::move(e));
  if (p.spec.op == OpKind::SpMM) return check_shared_memory(p, sig->k);
  return "";
}

}  // namespace

std::string Dispatched::chosen_by() const {
  switch (source) {
    case ChoiceSource::Flags: return "chosen by: flags";
    case ChoiceSource::TunedRecord: return "chosen by: tuned record " + record;
    case ChoiceSource::Policy: break;
  }
  return "chosen by: policy (" + why + ")";
}

DeviceFacts device_facts(const Context &ctx) { return DeviceFacts{ctx.name(), ctx.sm_count(), false}; }

namespace {

llvm::Expected<Dispatched> dispatch_kernel(const OpSpec &base, const MatrixSignature *sig, const DeviceFacts &dev,
                                           int candidate, const TuneStore *store);

// The route of `d` for an SpMM whose caller asked `dense`.
llvm::Error choose_route(Dispatched &d, const OpSpec &base, const MatrixSignature *sig, const DeviceFacts &dev,
                         int candidate, DenseRoute dense) {
  if (dense == DenseRoute::Never || base.op != OpKind::SpMM) return llvm::Error::success();
  if (dense == DenseRoute::Forced) {
    if (std::string why = dense_route_refusal(d.plan.spec); !why.empty())
      return err("route: the dense route cannot run " + to_string(base) + ": " + why);
    if (std::string why = dense_library_unavailable(); !why.empty()) return err("route: dense route unavailable: " + why);
    d.route = Route::Dense;
    d.route_why = "asked for";
    return llvm::Error::success();
  }
  if (!sig) d.route_why = "no matrix given";
  else if (base.pinned || candidate >= 0) d.route_why = "kernel knobs pinned";
  else if (d.source == ChoiceSource::TunedRecord && d.tuned_dense_ms > 0) {  // timed on this GPU: no model needed
    d.route = d.tuned_dense_ms < d.tuned_ms ? Route::Dense : Route::Sparse;
    d.route_why = fmt::format("tuned: sparse {:.4f} ms, dense {:.4f} ms", d.tuned_ms, d.tuned_dense_ms);
    if (d.route == Route::Dense)
      if (std::string why = dense_library_unavailable(); !why.empty())
        d.route = Route::Sparse, d.route_why += ", but the dense route is unavailable: " + why;
  } else {
    RouteChoice r = route_policy(d.plan, *sig, dev);
    d.route = r.route;
    d.route_why = std::move(r.why);
  }
  return llvm::Error::success();
}

}  // namespace

llvm::Expected<Dispatched> dispatch(const OpSpec &base, const MatrixSignature *sig, const DeviceFacts &dev,
                                    int candidate, const TuneStore *store, DenseRoute dense) {
  auto d = dispatch_kernel(base, sig, dev, candidate, store);
  if (!d) return d.takeError();
  if (auto e = choose_route(*d, base, sig, dev, candidate, dense)) return e;
  return d;
}

namespace {

// The sparse kernel: flags, a tuning record or the policy.
llvm::Expected<Dispatched> dispatch_kernel(const OpSpec &base, const MatrixSignature *sig, const DeviceFacts &dev,
                                           int candidate, const TuneStore *store) {
  if (auto e = validate(base)) return e;
  Dispatched d;
  std::string record_note;
  // 2. A tuning record, when nothing is pinned.
  if (sig && base.pinned == 0 && candidate < 0) {
    std::optional<TuneStore> own;
    if (!store) {
      auto opened = TuneStore::open_default();
      if (opened) own.emplace(std::move(*opened));
      else log().debug("no tuning store: {}", llvm::toString(opened.takeError()));
      store = own ? &*own : nullptr;
    }
    if (store)
      if (std::optional<Choice> c = lookup_tuned(*store, base, *sig, dev.name)) {
        auto plans = plan_candidates(c->spec());
        if (plans && size_t(c->plan_index()) < plans->size()) {
          Plan p = std::move((*plans)[size_t(c->plan_index())]);
          std::string bad = unfit(p, sig);
          if (bad.empty()) {
            d.plan = std::move(p);
            d.source = ChoiceSource::TunedRecord;
            d.tuned_ms = c->median_ms;
            d.tuned_dense_ms = c->dense_ms;
            d.record = store->record_path(make_tune_key(base, dev.name, *sig));
            return d;
          }
          record_note = "the tuning record's choice does not fit this matrix: " + bad + "; ";
        } else if (!plans) {
          record_note = "the tuning record's choice cannot be planned: " + llvm::toString(plans.takeError()) + "; ";
        }
      }
  }
  // 1. Flags, or 3. the policy around what is pinned.
  OpSpec spec = base;
  if (base.pinned == kPinAll || candidate >= 0) {
    d.source = base.pinned == kPinAll ? ChoiceSource::Flags : ChoiceSource::Policy;
    if (base.pinned != kPinAll) {
      PolicyChoice pc = policy_spec(base, sig, dev);
      spec = pc.spec;
      d.why = record_note + pc.why + ", candidate " + std::to_string(candidate);
    }
  } else {
    PolicyChoice pc = policy_spec(base, sig, dev);
    spec = pc.spec;
    d.source = ChoiceSource::Policy;
    d.why = record_note + pc.why;
    if (base.pinned) {  // partly pinned: name what the flags fixed
      std::string names;
      for (auto [bit, name] : {std::pair{kPinBsn, "bsn"}, {kPinPrefetch, "prefetch"}, {kPinSplit, "split"}, {kPinResident, base.decode ? "decode" : "resident"}})
        if (base.pinned & bit) names += std::string(names.empty() ? "" : ", ") + name;
      d.why = "pinned " + names + "; " + d.why;
    }
  }
  auto plans = plan_candidates(spec);
  if (!plans) return plans.takeError();
  const int at = candidate < 0 ? 0 : candidate;
  if (size_t(at) >= plans->size())
    return err("candidate: --candidate=" + llvm::Twine(candidate) + " is out of range: " + to_string(spec) + " has " +
               llvm::Twine(plans->size()) + " candidate plan(s) (allowed: 0.." + llvm::Twine(plans->size() - 1) +
               "; see plan --all)");
  d.plan = std::move((*plans)[size_t(at)]);
  if (std::string bad = unfit(d.plan, sig); !bad.empty()) return err(bad);
  return d;
}

}  // namespace

}  // namespace magicube
