#include "runtime/policy.h"

#include <algorithm>

#include <fmt/format.h>

#include "compiler/arch.h"
#include "compiler/planner.h"
#include "runtime/autotune.h"

namespace magicube {

DeviceFacts DeviceFacts::reference_for(int arch) {
  const ReferenceDevice r = reference_device(arch);
  return DeviceFacts{r.name, r.sm_count, true};
}

namespace {

// The plan of `s` if the planner can build it (and, for resident B, its slice of `k` rows fits).
bool buildable(const OpSpec &s, int64_t k) {
  auto p = plan(s);
  if (!p) {
    llvm::consumeError(p.takeError());
    return false;
  }
  return check_shared_memory(*p, k).empty();
}

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

}  // namespace

PolicyChoice policy_spec(const OpSpec &base, const MatrixSignature *sig, const DeviceFacts &dev) {
  OpSpec s = base;
  s.pinned = kPinAll;
  std::string why;
  auto pinned = [&](uint8_t bit) { return (base.pinned & bit) != 0; };
  if (base.op == OpKind::SDDMM) {
    if (!pinned(kPinBsn)) s.bsn = base.lhs.bits <= 8 && base.rhs.bits <= 8 ? 128 : 64;
    return {s, fmt::format("{} vectors a block ({} planes)", s.bsn, s.bsn == 128 ? "one-byte" : "wide")};
  }
  if (!sig) {
    if (!pinned(kPinBsn) && !(base.pinned & kPinResident && base.resident)) s.bsn = 128;
    return {s, "no matrix given: 128-column tiles"};
  }
  const int64_t sms = std::max(1, dev.sm_count);
  const int64_t blocks = sig->blocks, n = sig->n, k = sig->k;
  const double strides = sig->mean / 32;  // mean strides per row-block
  const int rhs_bytes = int(base.rhs.bits > 8 ? 2 : 1);

  // 1. The ring kernel's tile: wide while every SM gets two blocks, narrow when 128 would idle SMs.
  if (!pinned(kPinBsn)) {
    s.bsn = 128;
    if (blocks * ceil_div(n, 256) >= 2 * sms) s.bsn = 256;
    else if (blocks * ceil_div(n, 128) < sms) s.bsn = 64;
  }
  why = fmt::format("{}-column tiles ({} row-blocks, {} SMs)", s.bsn, blocks, sms);
  // 2. Long rows (16+ strides in the longest row-block) split over two warp groups.
  if (!pinned(kPinSplit) && !s.resident && sig->max >= 16 * 32) {
    OpSpec t = s;
    t.split = 2;
    if (buildable(t, k)) s = t, why += ", split 2 (rows of 16+ strides)";
  }
  // 3. B resident in shared memory: one 8-bit plane, rows of 4+ strides, 16+ slices an SM.
  const bool may_reside = !pinned(kPinResident) ? !pinned(kPinSplit) || base.split == 1 : base.resident;
  if (may_reside && (pinned(kPinResident) ||
                     (rhs_bytes == 1 && base.rhs.bits > 4 && strides >= 4 && blocks * ceil_div(n, 32) >= 16 * sms))) {
    OpSpec r = s;
    r.resident = true;
    r.split = 1;
    r.prefetch = true;
    r.stages = pinned(kPinPrefetch) ? base.stages : 0;
    if (!pinned(kPinBsn)) r.bsn = 32;
    auto pr = plan(r);
    const bool lhs_ok = pr && (pr->groups.size() == 1 || (pr->groups.size() == 2 && base.out == OutType::Int32));
    if (pr && (lhs_ok || pinned(kPinResident)) && check_shared_memory(*pr, k).empty()) {
      s = r;
      why = fmt::format("resident B, {}-column slices: {:.1f} strides a row-block", r.bsn, strides);
      // 48-column slices (three tiles a stride) when each SM runs 800+ strides.
      const double per_sm = double(blocks) * strides * double(ceil_div(n, 48)) / double(sms);
      if (!pinned(kPinBsn) && pr->groups.size() == 1 && per_sm >= 800) {
        OpSpec w = s;
        w.bsn = 48;
        if (buildable(w, k)) s = w, why = fmt::format("resident B, 48-column slices: {:.1f} strides a row-block, {:.0f} strides an SM", strides, per_sm);
      }
    }
    if (!pr) llvm::consumeError(pr.takeError());
  }
  // 4. Short rows of 8-bit B on wide grids: a 2-deep ring.
  if (!pinned(kPinPrefetch) && !s.resident && s.bsn == 256 && sig->mean > 0 && strides <= 8 && base.rhs.bits > 4) {
    s.stages = 2;
    why += ", 2-deep ring (rows of 8 or fewer strides)";
  }
  return {s, why};
}

}  // namespace magicube
