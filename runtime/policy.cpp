#include "runtime/policy.h"

#include <algorithm>
#include <cmath>
#include <optional>

#include <fmt/format.h>

#include "compiler/arch.h"
#include "compiler/dense_chunks.h"
#include "compiler/planner.h"
#include "runtime/autotune.h"
#include "runtime/dense_epilogue.h"
#include "runtime/dense_gemm.h"
#include "runtime/kernel.h"

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

// The panel for K in the fewest passes whose slices fit shared memory, as even as multiples of
// 64 rows make them (K=14336 at 48 columns: 3 of 4800; K=11008: 3 of 3712); 0 if none fits.
int panel_rows_for(const Plan &p, int64_t k) {
  const int64_t per_row = std::max(1, p.launch.slice_bytes_per_k);
  const int64_t fit = (int64_t(max_smem_per_block(p.spec.arch)) - p.launch.static_smem) / per_row / 64 * 64;
  if (fit < 64 || k <= 0) return 0;
  const int64_t panels = ceil_div(k, std::min<int64_t>(fit, 32704));
  return int(std::min<int64_t>(fit, ceil_div(ceil_div(k, panels), 64) * 64));
}

// The decode layout's strides a matrix of this signature packs to (every row-block one at least).
int64_t estimated_strides(const MatrixSignature &sig) {
  return int64_t(std::ceil(double(sig.blocks) * std::max(1.0, sig.mean / 32)));
}

// K from which the decode kernel at N <= 32 in 16-column slices takes K in two panels, one block
// of a cluster each. On the H100 (bench/NOTES.md, Session 30, s=0.5 / 0.7 / 0.9) 4096x14336 ran 1-3
// / 3-4 / 5-9 % faster so at N=16 and N=24-32 (two slices), 4096x11008 2-4 % slower at s=0.5-0.7,
// 4096x4096 (panels of 2048) 9 % slower.
constexpr int64_t kClusterPanelsMinK = 12288;

// The decode kernel for an SpMM of N <= 64 (or with decode pinned): the tile width that pads
// N least (then the fewest slices) among those whose plan builds and whose B fits shared
// memory; none when the caller pinned another kernel or nothing fits.
// Past N = 64 (one rhs plane of at most 8 bits) the decode kernel runs N in slices, each
// block streaming its part of the strides against one slice: the widest slice of at least
// 32 columns that fits (three tiles a stride at BSn 48).
// On the H100 (2026-11-25 22:38 UTC, L2 flushed) it beat the resident-B and ring kernels at
// every N of 128-8192 where a 32-column slice fits K (4096x4096 s=0.9 N=8192: 0.279 -> 0.208
// ms; s=0.7 N=512 0.054 -> 0.036; 14336x4096 s=0.9 N=8192 0.93 -> 0.60); for 4096x11008 only
// 16 columns fit, which won at N=128 and lost 5 % at N=512-2048: the ring kernel keeps those.
std::optional<PolicyChoice> decode_choice(const OpSpec &base, const MatrixSignature &sig, int sm_count) {
  auto pinned = [&](uint8_t bit) { return (base.pinned & bit) != 0; };
  const bool forced = pinned(kPinResident) && base.decode;
  const bool wide_n = sig.n > 64;
  if (!forced && (sig.n <= 0 || pinned(kPinResident) || (pinned(kPinSplit) && base.split != 1) ||
                  (pinned(kPinPrefetch) && !base.prefetch) ||
                  (wide_n && (base.rhs.bits > 8 || pinned(kPinBsn) || pinned(kPinPrefetch) || pinned(kPinSplit)))))
    return std::nullopt;  // past N = 64 a pinned tile, ring or split asks for another kernel
  OpSpec d = base;
  d.pinned = kPinAll;
  d.resident = d.decode = true;
  d.split = 1;
  d.prefetch = true;
  d.stages = pinned(kPinPrefetch) ? base.stages : 0;
  std::vector<int> widths = {16, 32, 48, 64};
  if (wide_n && !forced) widths = {32, 48};  // B's planes are bytes in the decode kernel (planner.cpp)
  if (pinned(kPinBsn)) widths = {base.bsn};
  // Where no width's slice of all K fits (K = 11008 or 14336 at 32+ columns), K in panels: a
  // pass a panel, each adding into C (integer outputs, one rhs plane). On the H100 (2026-11-26
  // 07:09 UTC, L2 flushed) 48-column slices in panels ran 4096x14336 s=0.9 N=2048 in 149 us and
  // 4096x11008 N=8192 in 556 us, against the ring kernel's 233 and 910 (dense: 148 and 457).
  const bool may_panel = !forced && !is_float(base.out) && base.rhs.bits <= 8;
  auto planned = [](const OpSpec &t) -> std::optional<Plan> {  // its plan, if the spec is valid and builds
    if (auto e = validate(t)) return llvm::consumeError(std::move(e)), std::nullopt;
    auto p = plan(t);
    if (!p) return llvm::consumeError(p.takeError()), std::nullopt;
    return std::move(*p);
  };
  auto builds = [&](const OpSpec &t) -> std::optional<Plan> {  // and its B fits shared memory
    auto p = planned(t);
    if (p && !check_shared_memory(*p, sig.k).empty()) return std::nullopt;
    return p;
  };
  int best = 0, best_panel = 0;
  int64_t best_cols = 0, best_smem = 0;
  for (bool panels : {false, true}) {
    if (panels && (best || !may_panel)) break;
    for (int w : widths) {
      OpSpec t = d;
      t.bsn = w;
      auto p = planned(t);
      if (!p) continue;
      if (panels) {
        if (p->rhs.size() != 1 || (t.panel = panel_rows_for(*p, sig.k)) == 0) continue;
        p = planned(t);
      }
      if (!p || !check_shared_memory(*p, sig.k).empty()) continue;
      // More than four accumulator tiles (two sets a warp) spill at 128 registers: a narrower
      // tile (more slices) instead, unless the width was pinned.
      if (!pinned(kPinBsn) && int(p->groups.size() * p->rhs.size()) * p->launch.tiles > 4) continue;
      const int64_t cols = ceil_div(std::max<int64_t>(sig.n, 1), w) * w;
      // Past N = 64 the widest slice: the padding is a few % at most there.
      if (!best || (wide_n ? w > best : cols < best_cols || (cols == best_cols && w > best))) {
        best = w;
        best_panel = t.panel;
        best_cols = cols;
        best_smem = int64_t(p->launch.dynamic_smem(sig.k));
      }
    }
  }
  // Past N = 64 the loop is bound by the L1 pipe (ldmatrix and A's loads) and by its latencies:
  // more warps hide more of them where their registers hold the tiles (launch.cpp). On the H100
  // (bench/NOTES.md, Session 27): three tiles at 20 warps 2-7 % faster than at 16 (N >= 128; 3 %
  // slower at N=48, so only past N = 64); one tile at 32 warps 1.4x faster than at 16.
  const bool more_warps = wide_n && !forced && !pinned(kPinBsn) && base.arch >= 90;
  // Long K at high sparsity: where only K panels hold 48 columns (K = 11008, 14336), 16-column
  // slices of all K at 32 warps beat them at s=0.9 (4096x11008 N=128 / 512 / 2048 / 8192: 22.0
  // -> 14.6, 40.5 -> 35.0, 131 -> 112, 541 -> 435 us; 4096x14336 27.5 -> 19.0, 49.8 -> 46.5,
  // 147 -> 146, 631 -> 572) and lose at s=0.7 and 0.5 (2-22 %: A is read again for each of 3x
  // the slices, from L2, and it is 3-5x larger there). A float output, which K panels cannot
  // give (each pass adds into C), took the ring kernel there: the 16-column slices ran it
  // 1.3-2.0x faster (bf16 + row and column scales + row bias, s=0.9, N = 128-8192: 4096x11008
  // N=2048 191.6 -> 126.1 us into a column-major C, N=8192 966 -> 484; bench/NOTES.md, Session 28).
  const double density = sig.k > 0 ? sig.mean / double(sig.k) : 1.0;
  std::optional<Plan> long_k;
  if (more_warps && (best_panel || !best) && density <= 0.2) {
    OpSpec t = d;
    t.bsn = 16, t.panel = 0, t.warps = 32;
    if ((long_k = builds(t))) {
      d = t;
      best_smem = int64_t(long_k->launch.dynamic_smem(sig.k));  // the 16-column slice of all K
    }
  }
  if (!long_k) {
    if (!best) return std::nullopt;
    d.bsn = best;
    d.panel = best_panel;
    if (more_warps && best == 48 && !best_panel) {
      OpSpec t = d;
      t.warps = 20;
      if (builds(t)) d = t;
    }
  }
  // Long K at decode (N <= 32, sm_90, an integer output): every SM takes in B's slice of all K
  // (224 KiB at K=14336, 16 columns) before its first mma. In two K panels run by a cluster of
  // two blocks (Launch::panel_cluster) each block takes half. In the decode kernel's load pattern
  // alone (bench/NOTES.md, Session 30) 224 -> 112 KiB a block took 1.2 us off 4096x14336 s=0.5 and
  // 0.7, 172 -> 86 KiB 0.75 us; the kernel gains less (kClusterPanelsMinK).
  if (sig.n <= 32 && !long_k && d.bsn == 16 && !d.panel && may_panel && base.arch >= 90 && sig.k >= kClusterPanelsMinK) {
    OpSpec t = d;
    t.panel = int(ceil_div(ceil_div(sig.k, 2), 64) * 64);
    if (auto p = builds(t); p && p->launch.cluster_blocks(sig.k) == 2) {
      d = t;
      best_smem = int64_t(p->launch.dynamic_smem(sig.k));
    }
  }
  const int64_t slices = ceil_div(std::max<int64_t>(sig.n, 1), d.bsn);
  // Shares of all slices (Launch::slice_shares) where the grid takes them: whole waves of
  // (slice, part) blocks would leave SMs idle or copy slices more often (N = 8192 at 48 columns:
  // 171 slices, 4 waves of 3 parts a slice against one block an SM taking 1.3 slices). On the
  // H100 (bench/NOTES.md, Session 31; s=0.9, N=8192) 4096x4096 168 -> 141 us, 6144x4096 224 ->
  // 196, 11008x4096 361 -> 333, 14336x4096 456 -> 429, 4096x14336 (16 columns) 574 -> 534. Only
  // there: the shares' state in the loop cost 1-4 % where the grid keeps whole waves. A float
  // output too (session 32, bf16 with row and column scales, a row bias, column-major C):
  // 4096x14336 619 -> 549 us, 4096x4096 248 -> 243.
  bool shares = false;
  if (slices > 1 && !d.panel) {
    OpSpec t = d;
    t.shares = true;
    if (auto p = builds(t)) {
      if (decode_grid(p->launch, sig.n, sig.blocks, estimated_strides(sig), sig.k, std::max(1, sm_count)).x == 1)
        d = t, shares = true;
    }
  }
  const std::string kib = fmt::format("{:.0f} KiB", double(best_smem) / 1024);
  std::string why =
      slices == 1 ? fmt::format("decode: N={} in one {}-column tile, B resident ({}), strides split over warps", sig.n,
                                d.bsn, kib)
                  : fmt::format("decode: N={} in {} slices of {} columns, B resident ({} a block), strides split over {}warps",
                                sig.n, slices, d.bsn, kib, d.warps ? std::to_string(d.warps) + " " : std::string());
  if (d.panel)
    why += fmt::format(", K in {} panels of {} rows", ceil_div(sig.k, d.panel), d.panel);
  if (auto p = planned(d); p && p->launch.cluster_blocks(sig.k) > 1) why += " (a cluster of two blocks, one a panel)";
  if (shares) why += fmt::format(", one block an SM taking a share of every slice ({} SMs)", sm_count);
  return PolicyChoice{d, why};
}

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
  // 0. Decode: N <= 64 whole (BSn = N rounded up to 16) in one block, B resident, each
  //    block's strides split over its warps: bound by A's bytes, not by the grid; past 64 in
  //    slices of 32-64 columns where they fit (decode_choice).
  if (auto d = decode_choice(base, *sig, dev.sm_count)) return *d;
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

// The model's constants, measured on the H100 SXM (132 SMs) with the L2 flushed before each
// launch (scripts/route_sweep.sh; bench/results/2026-11-25-h100/route_sweep_*.csv): what each
// route achieves when its weight streams from HBM.
namespace {
constexpr double kRefSms = 132, kRefL2Bytes = 50e6;  // the H100's
// Dense int8 GEMM (cuBLASLt): 15-35 us at N <= 128 for 16.7-58.7 MB weights, 1,260-1,620 TOPS
// at N >= 2048. The fixed part is the fit over the four M x 4096 shapes at N <= 64 of the llm
// grid (results/2026-11-25-h100/llm: 14.7 / 18.8 / 27.7 / 33.3 us for 16.8 / 25.2 / 45.1 /
// 58.7 MB: 7.2 us + bytes / 2.24 TB/s); 6.0 us before put the dense route 4-8 % too fast at
// every decode shape, which with the margin below sent s=0.7 problems dense that the decode
// kernel ran 5-13 % faster than dense (bench/NOTES.md, Session 8).
// At prefill sizes, past its fixed part: 1,465 TOPS at 4096x4096 N=2048, 1,550-1,640 at
// 11008x4096 and 14336x4096 N=2048 and at N=8192 (2026-11-25 22:38 UTC; 1,450 before
// put dense 8-12 % slow there, and the sparse route took calls dense won).
constexpr double kDenseLaunchUs = 7.2, kDenseBytesPerUs = 2.2e6, kDenseTops = 1580;
// The dense route's epilogue kernel (outputs other than int32): an elementwise pass, 4 bytes
// read and the output's written an element. On the H100 (2026-11-26 10:08 UTC, L2 flushed) it
// added 8.8 us to the GEMM at 4096x4096 N=512 in bf16, 82.5 us at N=8192 (201 MB: 2.4 TB/s) and
// 212 us at 11008x4096 N=8192 (2.55 TB/s); f32 and int64 ran at 2.9-3.0 TB/s. With the
// hardware's cvt (generator 31; session 23 run-d, bf16 +rc+rowbias) bf16 runs as fast: +20 us at
// 4096x4096 N=2048, +46 at 11008x4096 N=2048 (135 MB: 2.9 TB/s); 3.0.
constexpr double kEpilogueLaunchUs = 3.0, kEpilogueBytesPerUs = 3.0e6;
// Our kernels: the decode kernel (N <= 64) streams its weight once per column slice at about
// 2 TB/s after a fixed 6.6 us, plus 12.3 us per MB of the B slice each block loads first
// (K x BSn bytes: 0.8 us at K=4096, 2.8 us at 14336). The fit over the 126 decode problems
// of the L8-R8 V=8 llm grid (N 1-64, the six shapes, s 0.5/0.7/0.9, L2 flushed, 2026-11-25
// 20:50 UTC, the 8-deep pointer ring; 8.3-50.4 us) is within 8 % of each. The others, at small
// N, stream at 0.3-0.5 TB/s (the ring kernel) and 0.5-0.9 TB/s (B resident: the same grid at
// N = 128-512). At large N they run at a rate per V (s8 x s8, N = 2048-8192: V=8 100-155
// TOPS, V=4 58, V=2 31).
constexpr double kSparseLaunchUs = 5.0, kOtherBytesPerUs = 0.45e6, kResidentBytesPerUs = 0.8e6;
// Generator 22 (the schedule word by ballot, a 10-deep ring, the fewest doubled bank groups) ran
// the decode problems 2-4 % faster (2026-11-26 03:46 UTC): the estimate had run 4 % slow at
// N <= 64 (median), so 6.6 us and 2.05 TB/s became 6.35 and 2.13.
constexpr double kDecodeLaunchUs = 6.35, kDecodeBytesPerUs = 2.13e6, kDecodeSliceUsPerByte = 12.3e-6;
// Narrower vectors stream slower: a stride of V=4 moves 192 bytes and of V=2 128 against V=8's
// 320, for the same per-stride work. On the H100 (2026-11-26 14:55 UTC, 4096x4096 N = 1-64, s
// 0.5-0.9, generator 28) the part past the fixed cost ran 1.15-1.26x (V=4) and 1.39-1.48x (V=2)
// the V=8 rate's estimate; with it the model sent 4096x4096 V=2 N=32 s=0.7 sparse (est. 14.0
// us) that ran 15.5 against dense's 14.6-15.4. The share of kDecodeBytesPerUs per V (V=1, not
// measured, takes V=2's).
constexpr double kDecodeStreamShare[4] = {0.7, 0.7, 0.83, 1.0};  // V = 1, 2, 4, 8
// With 4-bit A planes (widened to int8 in registers when a stride is consumed) the decode
// kernel is bound by the widening past about 2.2 G elements of A a us (L4-R8 V=8, 4096x4096
// and 14336x4096 at s 0.5-0.9, N=16: 8.0-21.6 us, 2026-11-25 19:35 UTC), still faster than
// int8 A (12.0 against 13.7 us at 4096x4096 s=0.5; 21.6 against 26.5 at 14336x4096).
constexpr double kDecodeNibbleElemsPerUs = 2.2e6;
// In several column slices each slice's blocks widen all of A again, whether A comes from L2 or
// HBM: at 2 and 4 slices of 16 columns the L4-R8 decode kernel ran (t - fixed part) = 1.24-1.48x
// and 2.1-2.6x one slice's widening time (H100, 2026-11-26 15:10 UTC, generator 29, N = 32 / 64 on
// the six llm shapes), where the re-read model (A from L2) had put it at 1.3x / 1.9x: 4096x11008
// N=64 s=0.5 ran 33.9 us against 27.5 estimated, and went sparse at 0.85x dense. Fit over those
// rows: slices x elements at 3.5 G a us (within 8 % of each; one slice stays at the rate above).
constexpr double kDecodeNibbleSliceElemsPerUs = 3.5e6;
constexpr double kSparseTops[4] = {15, 31, 58, 110};  // V = 1, 2, 4, 8
// The decode kernel past N = 64 (slices of 48 columns, 8-bit B, the wave-balanced grid:
// runtime/kernel.h): s8 x s8 at s=0.9 (12.8 strides a row-block) 134-163 TOPS, at s=0.7
// (38.4) 189-203; V=4 78 and V=2 41 at s=0.9 (H100, 2026-11-25 22:38 UTC, N 2048 and 8192).
// Each row-block's epilogue costs about 6.5 strides: kDecodeTops / (1 + 6.5 / strides).
// Generator 18 (no register moves for the head partial) ran V=8 10-14 % faster (23:16 UTC:
// 4096x4096 s=0.9 N=2048 51.0 -> 46.3 us, s=0.7 113 -> 98, 11008x4096 118 -> 107; 270-286
// TOPS before the epilogue term): 270 for V=8; generator 22 ran N >= 512 8 % faster (median,
// 2026-11-26 03:46 UTC): 292. V=4 and V=2 were not remeasured.
constexpr double kDecodeTops[4] = {30, 62, 118, 292}, kDecodeRowBlockStrides = 6.5;
// Past N = 64 in 16-column slices at 32 warps (one tile a stride: long K at s=0.9, Session 27)
// the model put 4096x11008 / 4096x14336 at N = 512-8192 6-10 % under the grid's times (run-g;
// there its bound is A read again for each slice): a stride's own work (its loads, the
// schedule, the ldmatrix address) buys one tile there, not three. Both bounds' rates take this
// share; a column-major C 4-8 % more (its stores: a column's 16 rows a lane pair, Session 21).
// With 4-bit A the per-slice widening bound (kDecodeNibble*, fitted at 16 warps) ran 1.3x the
// measured times there (L4-R8 N = 512-8192: 49.7 against 39.9 us, 224 against 169): 32 warps
// widen at 1.3x the rate.
constexpr double kDecodeOneTileWideRate = 0.89, kDecodeOneTileWideColumnMajor = 1.04;
constexpr double kDecodeOneTileWideNibbleRate = 1.3;
// 4-bit A: each 16 columns of a slice past the first add 0.2 of a slice's widening (the bound
// below). (4-bit B cost 1.55 strides a stride and 0.3 a tile while the decode kernel widened it
// per gather, 2026-11-26 15:28 UTC; since session 22 it packs B as bytes: planner.cpp.)
constexpr double kDecodeNibbleTileCost = 0.2;
// A float output's epilogue (dequantize in double and round each element) adds about 6 ps an
// output element to our kernels: at s=0.9 (2026-11-26 10:47 UTC, generator 28, bf16 with row/col
// scales and a row bias against int32) 4.1-7.3 ps at N = 512-8192 on 4096x4096, 11008x4096 and
// 14336x4096, and 4.6 ps for the ring kernel at 4096x11008 N=512; at s=0.5 2.0-3.2 ps (more
// strides a row-block hide it), where the dense route wins by 2x anyway. Without it the route
// stayed sparse at s=0.9 and ran 1.04-1.31x the dense route's bf16 time.
// Where the dense route costs more than one s8 GEMM (u8 x s8, 2026-11-26 11:53 UTC, when it was
// two GEMMs) the s=0.5 and 0.7 cost decides too: 2.1-3.1 ps on 4096x4096 (N = 2048, 8192) and 11008x4096 (N = 512, 2048), and 6 ps
// had sent three of those problems dense at 1.10-1.15x the sparse kernel's time. So 6 ps for
// row-blocks of up to kFloatEpilogueShortRb vectors (s=0.9 at K=4096), less in proportion for
// longer ones, down to 2.5 ps.
// Generator 31 (2026-11-26, session 23) rounds with the hardware's cvt and reads each row's and
// column's scale once: the decode kernel's float epilogue shrank from 175 to 67 KB of code in
// its ring slots and costs (bf16, row x column scales, row bias, against the int32 estimate;
// bench/results/2026-11-26-h100-session23/run-d) 1.5-2.5 ps into a row-major C and 2.4-3.3
// into a column-major one at s=0.9 on 4096x4096, 11008x4096 and 14336x4096 (N = 512-8192),
// 0.2-1.4 ps at s=0.7 and about 0.5 at s=0.5: 2 and 3 ps for short row-blocks, less in proportion
// for longer ones. With the old 6 ps the route sent those s=0.9 problems dense at 1.08-1.37x the
// sparse kernel's time. The other kernels (the ring kernel where K does not let a float output
// use the decode kernel: 4096x11008, N >= 512) keep 6 ps; replayed on run-d's 59 float problems
// the route then loses none by more than 2 % (16 with the old terms).
constexpr double kFloatEpilogueUsPerElem = 6e-6, kFloatEpilogueFloorUsPerElem = 2.5e-6;
constexpr double kDecodeFloatEpilogueUsPerElem = 2e-6, kDecodeFloatEpilogueUsPerElemColumnMajor = 3e-6;
constexpr double kFloatEpilogueShortRb = 512;
// Each wave of blocks past the first: its slice load and about 7 us more (its blocks' first
// round trips and cut sums): 4096x4096 s=0.9 N=8192 (four waves) ran 9 % slower an op than
// N=2048 (one).
constexpr double kDecodeWaveUs = 7.0;
// K in panels: each pass after the first adds its sums into C (red.global.add, C's bytes each)
// and starts again (its slice, its first round trip). On the H100 (2026-11-26 07:09 UTC) the
// panel kernels ran 10-200 us above this model without it, 1.1-1.7 TB/s of added C; 1.3.
constexpr double kPanelAddBytesPerUs = 1.3e6;
// The same into a column-major C (+ccol): each red.global.add instruction of a warp touches 8
// columns' lines instead of 4 rows' (2026-11-26, session 21: 4096x11008 N=512 s=0.9 45.2 against
// 43.2 us for 16.8 MB of adds, N=8192 615 against 566 us for 268 MB; 4096x14336 N=512 +1-1.7 us
// for 25 MB).
constexpr double kPanelAddBytesPerUsColumnMajor = 1.2e6;
// The sparse route is kept only when the model gives it this margin. Near the crossover the
// dense route looks like the safe side, but it is not free of loss either: on the 2026-11-25
// grid it ran 0-4 % slower than the bench's dense contender (the best of every layout and
// algorithm, a minimum over ~70 medians), while the decode kernel's estimate is within
// -7..+5 % of its measured time at N <= 16. A 10 % margin (before) gave away rows the sparse
// kernel won by 5-13 %; 3 % covers the estimate's usual error and keeps the calls the model
// sees as even (within 3 %) on the dense route. Replayed on that grid's estimates and times:
// 168 of 180 rows (N != 2) at >= 0.97x dense and 111 at >= 1.00x, against 161 and 88 with
// 6.0 us and 10 %.
constexpr double kSparseMargin = 1.03;
// The decode kernel at N <= 64 (2026-11-26, session 23): below 1, the sparse route wins the calls
// the model sees as even. Over the session-22 grids every N <= 64 problem whose estimates lay
// within 8 % of each other measured at or below its estimated ratio but one (+2 %: 14336x4096
// N=64 s=0.5, 0.961 -> 0.982), while the dense route's time there is a draw among cuBLASLt
// configurations that time alike in its selection and not afterwards: 4096x14336 N=32 s=0.5
// (estimates 34.5 / 34.4 us) kept dense, its selection then ran 50.7 us paired against the
// contender's 39.0, the sparse kernel 33.1. At 0.97 that row, V=4 N=32 s=0.5 and V=2 N=32 s=0.7
// go sparse (measured 0.95-0.985x the dense time); replayed over the sessions 21-22 grids, none
// is sent sparse that dense won.
constexpr double kSparseMarginDecode = 0.97;
// Past N = 64 (the decode kernel in slices against a dense GEMM bound by its ops) the dense
// estimate runs 5-12 % slow at N=8192 (200 us against 178-191 measured at 4096x4096, where the
// sparse kernel's 191 us was estimated exactly): 8 % at first. On the 2026-11-26 13:49 UTC grid
// (session 19, run-a) both estimates run ~5 % slow at the long-K shapes' N=512 (4096x11008
// s=0.9: sparse 44.6 / dense 46.9 us estimated, 42.7 / 44.8 measured), and 8 % sent that row
// dense at 0.95x the contender; replayed over the grid's 108 rows past N = 64, 5 % takes no
// loss and misses nothing, 3 % loses one row by 8 % (4096x14336 N=128 s=0.7).
constexpr double kSparseMarginWideN = 1.05;

// Whether the plan's kernel is built to stream its weight (the decode kernel).
bool streams_weight(const Plan &p) { return p.launch.family == KernelFamily::SpmmDecode; }
}  // namespace

std::string RouteEstimate::str() const { return fmt::format("sparse ~{:.1f} us, dense ~{:.1f} us", sparse_us, dense_us); }

RouteEstimate estimate_routes(const Plan &plan, const MatrixSignature &sig, const DeviceFacts &dev) {
  const OpSpec &spec = plan.spec;
  const double scale = dev.sm_count > 0 ? double(dev.sm_count) / kRefSms : 1.0;
  const double m = double(sig.m), k = double(sig.k), n = double(sig.n);
  RouteEstimate e;
  // Dense: M x K int8 streamed once, B read, int32 C written; 2MNK at the GEMM's rate. Where
  // neither bounds it alone (N = 256-2048) the two overlap partly: their Euclidean sum (the
  // larger alone put dense 15-30 % fast at N=512: 19.6 us against 24.3 measured at 4096x4096).
  // Operands in int8 chunks (u8, wider types): one such GEMM per chunk pair.
  const double dense_bytes = m * k + k * n + 4 * m * n, pairs = dense_chunks(spec).pairs();
  e.dense_us = pairs * (kDenseLaunchUs + std::hypot(dense_bytes / (kDenseBytesPerUs * scale),
                                                    2 * m * n * k / (kDenseTops * scale * 1e6)));
  // An output other than int32, or chunks (more than one GEMM, or offsets' terms to add): the
  // epilogue kernel reads the GEMMs' int32 results and writes the output, one more launch.
  if (dense_needs_scratch(spec))
    e.dense_us +=
        kEpilogueLaunchUs + (4 * pairs + double(stored_bytes(spec.out))) * m * n / (kEpilogueBytesPerUs * scale);
  // Sparse: values (V elements a vector) and 4-byte indices (the decode kernel's: 2 bytes)
  // streamed, B read, C written; 2 * vectors * V * N at the V's rate.
  const double vectors = double(sig.vectors), v = double(std::max(1, spec.v));
  const double lhs_bytes = spec.lhs.bits <= 4 ? 0.5 : spec.lhs.bits <= 8 ? 1.0 : 2.0;  // per element
  double rhs_bytes = 0;  // per element of B as the plan stores it (the decode kernel: bytes, 4-bit B too)
  for (const Chunk &c : plan.rhs) rhs_bytes += c.storage_bits / 8.0;
  const double out_bytes = double(stored_bytes(spec.out));
  const double index_bytes = streams_weight(plan) ? 2 : 4;
  const bool decode = streams_weight(plan);
  // The decode kernel reads A once per column slice, the slices' blocks at the same time: the
  // later reads come from L2 while A is small against it, from HBM as it is not (+23 % a slice
  // at 10 MB, +45 % at 37 MB in the fit above); a wider tile (BSn 32) streams as fast.
  const double a_bytes = vectors * (v * lhs_bytes + index_bytes);
  const double slices = decode ? std::ceil(n / double(std::max(1, spec.bsn))) : 1;
  const double reread = std::min(1.0, 0.15 + 0.4 * a_bytes / kRefL2Bytes);
  const double reads = 1 + reread * (slices - 1), tiles = std::max(1.0, spec.bsn / 16.0);
  const double sparse_bytes = reads * a_bytes + k * n * rhs_bytes + out_bytes * m * n;
  const double strides_per_rb = sig.mean / 32;
  // B's slice, per block (in a cluster of two, Launch::panel_cluster: its panel's rows)
  const double slice_rows = decode && plan.launch.cluster_blocks(sig.k) > 1 ? std::min(k, double(plan.launch.panel_rows)) : k;
  double slice_us = decode ? slice_rows * spec.bsn * rhs_bytes * kDecodeSliceUsPerByte : 0;
  if (decode && slices > 1) {  // every wave of blocks loads its slices first
    const Dim3 g = decode_grid(plan.launch, sig.n, sig.blocks, estimated_strides(sig), sig.k, std::max(1, dev.sm_count));
    const double waves = std::ceil(double(g.x) * g.y / std::max(1, dev.sm_count));
    // a grid of (1, G): one wave, a block's segments each copying a slice (decode_grid)
    const double passes = g.x == 1 ? double(decode_segments(int64_t(slices), g.y)) : waves;
    slice_us = slice_us * passes + kDecodeWaveUs * (passes - 1);
  }
  const double launch = decode ? kDecodeLaunchUs + slice_us : kSparseLaunchUs;
  const bool resident = plan.launch.family == KernelFamily::SpmmResident;
  const int vi = spec.v >= 8 ? 3 : spec.v >= 4 ? 2 : spec.v >= 2 ? 1 : 0;
  const double stream = decode ? kDecodeBytesPerUs * kDecodeStreamShare[vi] : resident ? kResidentBytesPerUs : kOtherBytesPerUs;
  const bool wide_decode = decode && n > 64;  // the decode kernel in slices (kDecodeTops)
  e.margin = wide_decode ? kSparseMarginWideN : decode ? kSparseMarginDecode : kSparseMargin;
  // The decode kernel's op rate at any N (at N = 32-64 the other kernels' rate, kSparseTops,
  // had put its compute bound 25 % above the measured time: 17.7 us against 14.1 at 4096x4096
  // s=0.5 N=64, 2026-11-26 03:46 UTC, and four problems went dense that it won by 3-5 %).
  auto nibbles = [](const std::vector<Chunk> &planes) {  // a 4-bit plane, widened in registers
    return std::any_of(planes.begin(), planes.end(), [](const Chunk &c) { return c.storage_bits == 4; });
  };
  const bool nibble_a = nibbles(plan.lhs);
  const double tops = decode ? kDecodeTops[vi] / (1.0 + kDecodeRowBlockStrides / std::max(1.0, strides_per_rb))
                             : kSparseTops[vi];
  const bool one_tile_wide = wide_decode && spec.bsn == 16 && spec.warps == 32;  // long K at s=0.9
  const double rate = one_tile_wide ? kDecodeOneTileWideRate / (spec.c_col ? kDecodeOneTileWideColumnMajor : 1.0) : 1.0;
  e.sparse_us = std::max(launch + sparse_bytes / (stream * rate * scale),
                         launch + 2 * vectors * v * n / (tops * rate * scale * 1e6));
  if (decode)
    e.sparse_us += double(plan.launch.panels(sig.k) - 1) * out_bytes * m * n /
                   ((spec.c_col ? kPanelAddBytesPerUsColumnMajor : kPanelAddBytesPerUs) * scale);
  if (is_float(spec.out)) {
    const double short_rb = std::min(1.0, kFloatEpilogueShortRb / std::max(1.0, sig.mean));
    e.sparse_us += m * n / scale *
                   (decode ? (spec.c_col ? kDecodeFloatEpilogueUsPerElemColumnMajor : kDecodeFloatEpilogueUsPerElem) * short_rb
                           : std::max(kFloatEpilogueFloorUsPerElem, kFloatEpilogueUsPerElem * short_rb));
  }
  const double tile_cost = kDecodeNibbleTileCost;  // each 16 columns past the first
  if (decode && nibble_a)
    e.sparse_us = std::max(e.sparse_us, launch + vectors * v * (1 + tile_cost * (tiles - 1)) / scale *
                                                     std::max(reads / kDecodeNibbleElemsPerUs,
                                                              slices / kDecodeNibbleSliceElemsPerUs) /
                                                     (one_tile_wide ? kDecodeOneTileWideNibbleRate : 1.0));
  return e;
}

Route route_by_model(const RouteEstimate &e) {
  return e.sparse_us * e.margin <= e.dense_us ? Route::Sparse : Route::Dense;
}

RouteChoice route_policy(const Plan &plan, const MatrixSignature &sig, const DeviceFacts &dev) {
  if (std::string why = dense_route_refusal(plan.spec); !why.empty()) return {Route::Sparse, "dense route not offered: " + why};
  if (sig.k % 4 != 0)
    return {Route::Sparse, fmt::format("dense route not offered: K={} is not a multiple of 4 (cuBLASLt's int8 kernels)", sig.k)};
  // The GEMM's int32 result is row-major C (N columns), or C^T (M columns) for a column-major C.
  const bool c_col = plan.spec.c_col;
  const int64_t gemm_cols = c_col ? sig.m : sig.n;
  if (sig.n > 1 && gemm_cols % 4 != 0)  // N=1: C is a vector either way
    return {Route::Sparse, fmt::format("dense route not offered: {}={} is not a multiple of 4 (cuBLASLt's int8 "
                                       "GEMM into an int32 {} of {} % 4 != 0 columns ran 3x slower on the H100)",
                                       c_col ? "M" : "N", gemm_cols, c_col ? "C^T" : "C", c_col ? "M" : "N")};
  const RouteEstimate e = estimate_routes(plan, sig, dev);
  if (route_by_model(e) == Route::Sparse) return {Route::Sparse, "faster here (" + e.str() + ")"};
  if (std::string why = dense_library_unavailable(); !why.empty())
    return {Route::Sparse, "dense would be faster (" + e.str() + ") but is unavailable: " + why};
  return {Route::Dense, "faster here (" + e.str() + ")"};
}

}  // namespace magicube
