// The library's policy: the kernel knobs (BSn, ring depth, split, resident B, decode) it picks for an
// op on a matrix and a device when no tuning record exists. Every caller gets it through the
// dispatch (runtime/dispatch.h); knobs the caller pinned (OpSpec::pinned) are kept.
//
// The rules follow from the kernels' cost structure (compiler/launch.h), with the row-length
// statistics of the matrix (MatrixSignature) and the device's SM count:
//   - SpMM grid: each thread block runs one row-block x BSn columns; wide tiles (BSn 256:
//     more mma tiles per gathered index) while every SM still gets two blocks, narrow ones
//     (64) when 128-column tiles would leave SMs idle.
//   - split 2: rows of 16+ strides on grids that leave SMs short of warps; two warp groups
//     share a row-block's strides.
//   - resident B: one 8-bit B plane and rows of 4+ strides on a grid of 16+ slices per SM:
//     B crosses L2 once per block instead of once per vector; 48-column slices (three mma
//     tiles per stride) when each SM runs 800+ strides, else 32; only while the slice fits
//     shared memory, and two lhs groups only with an int32 output (more accumulators spill).
//   - short rows (8 or fewer strides) of 8-bit B on wide grids: a 2-deep ring (a deeper one
//     holds strides the row-block does not have and costs blocks per SM).
//   - decode (N <= 64): the decode kernel (compiler/gen_spmm_decode.cpp) whenever its plan
//     builds and B fits shared memory: the tile that pads N least (then the fewest column
//     slices), at most four accumulator tiles (more spill); bound by A's bytes, not the grid.
//   - SDDMM: 128 vectors per block when both operands are one byte plane, else 64.
// The measurements behind each threshold are in bench/NOTES.md (H100, 2026-11-22).
#pragma once

#include <string>

#include "compiler/ir.h"
#include "compiler/plan.h"
#include "runtime/dense_route.h"

namespace magicube {

struct MatrixSignature;

// What the policy and the tuning records need to know of a device.
struct DeviceFacts {
  std::string name;  // tuning records are per GPU name, e.g. "NVIDIA H100 80GB HBM3"
  int sm_count = 0;
  bool reference = false;  // no GPU was asked: the arch's reference device (compiler/arch.h)
  static DeviceFacts reference_for(int arch);
};

struct PolicyChoice {
  OpSpec spec;      // the base spec with every knob set (pinned = kPinAll)
  std::string why;  // one line, e.g. "resident B, 48-column slices: 8.2 strides a row-block, 1764 strides an SM"
};

// The knobs for `base` on a matrix with signature `sig` (null: no matrix known, the defaults
// for the op) on `dev`. Pinned knobs stay as the base has them.
PolicyChoice policy_spec(const OpSpec &base, const MatrixSignature *sig, const DeviceFacts &dev);

// The time model the policy compares the routes with (microseconds on `dev`): each route is
// bound by streaming its bytes (the sparse plan's weight values + indices, or the dense M x K
// int8 copy; B; C) or by its arithmetic rate (the dense GEMM's, or the sparse kernel's per V),
// whichever is slower. Constants measured on the H100 with the L2 flushed (policy.cpp); other
// devices scale by SM count. `plan` is the sparse route's plan (its kernel family matters).
struct RouteEstimate {
  double sparse_us = 0, dense_us = 0;
  double margin = 1.03;  // sparse is taken when sparse_us * margin <= dense_us
  std::string str() const;  // "sparse ~12.3 us, dense ~40.1 us"
};
RouteEstimate estimate_routes(const Plan &plan, const MatrixSignature &sig, const DeviceFacts &dev);
// The route the model's estimates pick: sparse only with a small margin (policy.cpp says why).
Route route_by_model(const RouteEstimate &e);

// The route for `plan` (the dispatch's sparse plan) on the matrix: dense where the dense route can
// compute the op, its library loaded, and the model says it is faster; `why` says which and
// the estimates, or why the dense route was not offered.
struct RouteChoice {
  Route route = Route::Sparse;
  std::string why;  // "faster here (sparse ~120.3 us, dense ~40.1 us)"
};
RouteChoice route_policy(const Plan &plan, const MatrixSignature &sig, const DeviceFacts &dev);

}  // namespace magicube
