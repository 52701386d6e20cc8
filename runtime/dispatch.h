// The dispatch: the one place that chooses the kernel (plan and knobs) for an op on a matrix
// and a device. Every caller goes through it: the C++ API (Spmm/Sddmm), `magicube run`,
// `magicube plan`, `tune` (its untuned default) and `bench`.
//
//   1. flags:  every knob pinned (OpSpec::pinned == kPinAll) or a plan candidate named: taken as given;
//   2. tuned record: nothing pinned and a tuning record exists for (op, GPU, matrix signature,
//      generator) in the store (runtime/autotune.h): its choice;
//   3. policy: otherwise runtime/policy.h, keeping whatever knobs are pinned.
// Then, for an SpMM whose caller allows it, the route: the sparse kernel, or the dense int8
// GEMM where the policy's time model says it is faster (runtime/dense_route.h).
// The chosen plan is checked against the matrix (reduction length, resident slice fits)
// before anything touches the GPU.
#pragma once

#include <optional>
#include <string>

#include "compiler/plan.h"
#include "llvm/Support/Error.h"
#include "runtime/policy.h"

namespace magicube {

class Context;
class TuneStore;
struct MatrixSignature;

enum class ChoiceSource { Flags, TunedRecord, Policy };

// Whether an SpMM may run as a dense int8 GEMM (runtime/dense_route.h) where that is faster:
// the dense route keeps a dense int8 copy of A (M x K bytes) beside the sparse one, so the
// caller decides. Never: always the sparse kernel (the API's default); Allowed: the policy
// compares the routes (magicube run, tune and bench); Forced: dense, or an error naming why not.
enum class DenseRoute { Never, Allowed, Forced };

struct Dispatched {
  Plan plan;                    // the sparse plan (also when the route is dense: its bounds hold)
  Route route = Route::Sparse;
  std::string route_why;        // why this route ("" when the dense route was not asked about)
  ChoiceSource source = ChoiceSource::Policy;
  std::string record;  // the tuning record's file (TunedRecord)
  double tuned_ms = 0, tuned_dense_ms = 0;  // TunedRecord: its times of the kernel and the dense route (0: none)
  std::string why;     // the policy's reason, or why a record was not used
  // "chosen by: tuned record <path>" | "chosen by: policy (<why>)" | "chosen by: flags"
  std::string chosen_by() const;
};

// The device facts of a context (its name, SM count), for the policy and the record key.
DeviceFacts device_facts(const Context &ctx);

// Chooses the plan for `base` on the matrix `sig` (null when unknown: no record, the policy's
// defaults) on `dev`. `candidate` >= 0 names a plan of plan_candidates (a pin of its own).
// `store` null: the default tuning store. The error names a bad spec, a candidate out of
// range, a reduction too long for the output type or a resident slice too large.
// `dense` says whether the route may be dense: with Allowed, only when no knob is pinned and
// no candidate named (a pinned knob asks for a sparse kernel) and the matrix is known.
llvm::Expected<Dispatched> dispatch(const OpSpec &base, const MatrixSignature *sig, const DeviceFacts &dev,
                                    int candidate = -1, const TuneStore *store = nullptr,
                                    DenseRoute dense = DenseRoute::Never);

}  // namespace magicube
