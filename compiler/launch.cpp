#include "compiler/launch.h"

#include <algorithm>
#include <cstdlib>
#include <string>

#include "compiler/plan.h"

namespace magicube {

namespace {

std::string S(long long x) { return std::to_string(x); }

// Every rhs plane is 4-bit: the ring kernel keeps B packed and gives each warp 32 columns.
bool all_rhs_nibbles(const Plan &p) {
  for (const Chunk &c : p.rhs)
    if (c.storage_bits != 4) return false;
  return true;
}
int c_regs(const MmaShape &s) { return s.m * s.n / 32; }

// The ring kernel's shared memory for `stages` strides: B rows, A strides and indices.
int index_ring(int stages) { return stages == 1 ? 1 : stages == 2 ? 2 : stages == 3 ? 4 : 8; }
int ring_bytes(const Plan &p, int stages) {
  int bytes = 0;
  for (const Chunk &c : p.rhs) bytes += stages * p.shape.k * ring_row_pitch(p, c);
  for (const Chunk &c : p.lhs) bytes += stages * a_stride_bytes(p, c);
  return bytes + index_ring(stages) * p.shape.k * 4;
}
// With two warp groups, group 1's accumulators go to group 0 through shared memory: the
// first rhs plane's ring when they fit there, else a buffer of their own.
int reduction_bytes(const Plan &p, const Launch &l, int stages) {
  if (l.warp_groups == 1) return 0;
  const int accs = int(p.groups.size() * p.rhs.size()) * l.tiles;
  const int bytes = accs * c_regs(p.shape) * (l.threads / l.warp_groups) * 4;
  return bytes > l.warp_groups * stages * p.shape.k * ring_row_pitch(p, p.rhs[0]) ? bytes : 0;
}
int ring_smem(const Plan &p, const Launch &l, int stages) {
  return l.warp_groups * ring_bytes(p, stages) + reduction_bytes(p, l, stages);
}

KernelParam param(ParamKind kind, std::string type, std::string name, std::string comment, int plane = 0) {
  return KernelParam{kind, plane, std::move(type), std::move(name), std::move(comment)};
}

std::vector<KernelParam> params_of(const Plan &p, KernelFamily family) {
  const bool sddmm = p.spec.op == OpKind::SDDMM;
  const bool decode = family == KernelFamily::SpmmDecode;
  std::vector<KernelParam> ps;
  if (decode) {  // no row pointers: the packed strides carry their row-blocks (runtime/packing.h)
    ps.push_back(param(ParamKind::ColIdx, "const unsigned short *__restrict__", "col_idx", "per slot: bits 0-14 the column (pads: slot % 8), bit 15 schedule"));
    ps.push_back(param(ParamKind::StrideMeta, "const unsigned *__restrict__", "stride_meta",
                       "per stride: row-block | 1 << 30 first stride | 1 << 31 last"));
    ps.push_back(param(ParamKind::StrideNext, "const int *__restrict__", "stride_next",
                       "per t = 0..T: the first stride >= t that starts a row-block"));
    if (p.spec.panel)
      ps.push_back(param(ParamKind::PanelFirst, "const int *__restrict__", "panel_first",
                         "per K panel p and row-block b: the first stride of p x nblk + b (then T)"));
  } else {
    ps.push_back(param(ParamKind::RowPtr, "const int *__restrict__", "row_ptr",
                       sddmm ? "the mask's 2 pointers per row-block" : "2 per row-block: first slot, end of real vectors"));
    ps.push_back(param(ParamKind::ColIdx, "const int *__restrict__", "col_idx", "per slot; -1 pads"));
  }
  for (size_t i = 0; i < p.lhs.size(); ++i)
    ps.push_back(param(ParamKind::LhsPlane, "const unsigned char *__restrict__", "a" + S(i),
                       "lhs chunk " + p.lhs[i].str() + ", " + S(p.lhs[i].storage_bits) +
                           (sddmm ? "-bit, M x ldk row-major" : "-bit, SR-BCRS value layout"),
                       int(i)));
  for (size_t j = 0; j < p.rhs.size(); ++j)
    ps.push_back(param(ParamKind::RhsPlane, "const unsigned char *__restrict__", "b" + S(j),
                       "rhs chunk " + p.rhs[j].str() + ", " + S(p.rhs[j].storage_bits) +
                           (sddmm                                      ? "-bit, N x ldk (column-major B)"
                            : family == KernelFamily::SpmmResident ? "-bit, slices of K x BSn, swizzled"
                            : family == KernelFamily::SpmmDecode   ? "-bit, slices of K x BSn (one when N <= BSn), swizzled"
                                                                       : "-bit, K x ldb row-major"),
                       int(j)));
  const char *ctype = p.spec.out == OutType::Int32   ? "int *__restrict__"
                      : p.spec.out == OutType::Int64 ? "long long *__restrict__"
                      : p.spec.out == OutType::F32   ? "float *__restrict__"
                                                     : "unsigned short *__restrict__";  // f16 / bf16 bits
  ps.push_back(param(ParamKind::Out, ctype, "c", sddmm ? "the mask's vectors, V values each" : "M x N row-major"));
  if (sddmm) {
    ps.push_back(param(ParamKind::BcrsPtr, "const long long *__restrict__", "bcrs_ptr",
                       "null: SR-BCRS output; else BCRS row-block offsets"));
    ps.push_back(param(ParamKind::M, "int", "M", "rows of A and of the mask"));
    ps.push_back(param(ParamKind::K, "int", "K", "the reduction length"));
    ps.push_back(param(ParamKind::Ldk, "int", "ldk", "A's and B's K pitch in elements"));
    ps.push_back(param(ParamKind::OutStride, "int", "out_stride", "the mask's SR-BCRS stride"));
  } else {
    ps.push_back(param(ParamKind::M, "int", "M", "rows of A and C"));
    ps.push_back(param(ParamKind::N, "int", "N", "columns of B and C"));
    ps.push_back(param(ParamKind::Ldb, "int", "ldb",
                       family == KernelFamily::SpmmResident || family == KernelFamily::SpmmDecode
                           ? "the slice width (BSn)"
                           : "B plane row pitch in elements"));
    if (family == KernelFamily::SpmmResident || decode) ps.push_back(param(ParamKind::K, "int", "K", "B's rows"));
    if (decode) ps.push_back(param(ParamKind::Strides, "int", "T", "strides of the packed A (every row-block has one at least)"));
  }
  if (is_float(p.spec.out)) {
    ps.push_back(param(ParamKind::Alpha, "float", "alpha", "tensor scale"));
    ps.push_back(param(ParamKind::RowScale, "const float *__restrict__", "row_scale", "per row (null unless +rc)"));
    ps.push_back(param(ParamKind::ColScale, "const float *__restrict__", "col_scale", "per column (null unless +rc)"));
    ps.push_back(param(ParamKind::Bias, "const float *__restrict__", "bias", "per row or column (null without bias)"));
  }
  return ps;
}

}  // namespace

const char *family_name(KernelFamily f) {
  switch (f) {
    case KernelFamily::SpmmRing: return "spmm-ring";
    case KernelFamily::SpmmResident: return "spmm-resident";
    case KernelFamily::SpmmDecode: return "spmm-decode";
    case KernelFamily::SpmmGeneric: return "spmm-generic";
    case KernelFamily::SddmmFast: return "sddmm-fast";
    case KernelFamily::SddmmGeneric: return "sddmm-generic";
  }
  return "?";
}

bool KernelParam::is_pointer() const { return type.find('*') != std::string::npos; }

int ring_row_pitch(const Plan &p, const Chunk &c) { return p.spec.bsn * c.storage_bits / 8 + 16; }
int a_stride_bytes(const Plan &p, const Chunk &c) { return p.spec.v * p.shape.k * c.storage_bits / 8; }
int slice_row_bytes(const Plan &p, const Chunk &c) { return p.spec.bsn * c.storage_bits / 8; }

std::string plan_launch(Plan &p) {
  const OpSpec &s = p.spec;
  Launch l;
  const bool fast = p.int8_dense_on_m();
  if (s.op == OpKind::SDDMM)
    l.family = fast ? KernelFamily::SddmmFast : KernelFamily::SddmmGeneric;
  else
    l.family = !fast        ? KernelFamily::SpmmGeneric
               : s.decode   ? KernelFamily::SpmmDecode
               : s.resident ? KernelFamily::SpmmResident
                            : KernelFamily::SpmmRing;
  l.block_cols = s.bsn;
  std::string why;
  switch (l.family) {
    case KernelFamily::SpmmRing: {
      // 4 warps per group (4-bit B: whole 16-byte rows of packed nibbles, 32 columns a warp).
      const int warps = all_rhs_nibbles(p) ? std::max(1, std::min(4, s.bsn / 32)) : std::min(4, s.bsn / 16);
      l.warp_groups = s.split;
      l.warps_per_group = warps;
      l.threads = warps * 32 * l.warp_groups;
      l.warp_cols = s.bsn / warps;
      l.tiles = l.warp_cols / 16;
      // Ring depth: 1 (gather, wait, compute) without prefetch; else the deepest of 4, 3
      // (at most spec.stages) whose rings fit static shared memory, else 2.
      l.ring_depth = 2;
      if (!s.prefetch) l.ring_depth = 1;
      else
        for (int st : {4, 3})
          if ((s.stages == 0 || st <= s.stages) && ring_smem(p, l, st) <= kStaticSmemLimit) {
            l.ring_depth = st;
            break;
          }
      l.index_ring = index_ring(l.ring_depth);
      l.reduction_smem = reduction_bytes(p, l, l.ring_depth);
      l.static_smem = ring_smem(p, l, l.ring_depth);
      if (l.warp_groups > 1 && ring_smem(p, l, 2) > kStaticSmemLimit)
        why = "split: " + S(l.warp_groups) + " warp groups of " + to_string(s) + " need " + S(ring_smem(p, l, 2)) +
              " bytes of shared memory for their 2-deep rings (limit " + S(kStaticSmemLimit) +
              "); use a smaller bsn or split 1";
      break;
    }
    case KernelFamily::SpmmResident: {
      // Every warp takes whole row-blocks over all BSn columns. 32 warps hide the gathers'
      // latency best (H100: 1.1-1.3x over 16) but leave 64 registers a thread: enough for up
      // to four int32 accumulator tiles (with a 2-deep register ring past two); more spill,
      // so 16 warps.
      l.warp_cols = s.bsn;
      l.tiles = s.bsn / 16;
      const int accs = int(p.groups.size() * p.rhs.size()) * l.tiles;
      l.warps_per_group = accs <= 4 && s.out != OutType::Int64 ? 32 : 16;
      l.threads = l.warps_per_group * 32;
      // Strides in flight per warp: pf2/pf3/pf4 as asked; automatic: 4 for up to two
      // accumulator tiles, 2 for three or four (deeper spills at 32 warps' 64 registers;
      // depth 6 at two tiles: 0.0232 -> 0.0245 ms, L8-R8 s=0.7 on the H100).
      l.ring_depth = s.stages ? s.stages : accs <= 2 ? 4 : 2;
      l.static_smem = 4;  // next_rb
      for (const Chunk &c : p.rhs) l.slice_bytes_per_k += slice_row_bytes(p, c);
      for (const Chunk &c : p.rhs) {
        const int rb = slice_row_bytes(p, c);
        if (rb != 16 && rb != 32 && rb != 48 && rb != 64 && rb != 128)
          why = "resident: a slice row of B is " + S(rb) + " bytes per plane at BSn=" + S(s.bsn) + " (" +
                S(c.storage_bits) + "-bit planes); it must be 16, 32, 48, 64 or 128 (4-bit B needs BSn >= 32)";
      }
      if (s.split != 1 || !s.prefetch)
        why = "resident: B resident in shared memory needs split 1 and the prefetch ring (" + to_string(s) + ")";
      break;
    }
    case KernelFamily::SpmmDecode: {
      // One block per SM holds all BSn columns (N rounded up to 16) of B's slice; its warps (16,
      // or spec.warps) share the block's row-blocks as one run of strides cut into one equal piece
      // a warp, so every SM keeps warps x ring_depth strides of A and indices in flight. A
      // row-block cut between warps is summed in shared memory (reduction_smem: one partial per
      // warp, written over B's slice once every warp is done with it). Each warp holds two
      // accumulator sets (the running one and its first row-block's partial).
      // (__launch_bounds__(THREADS, 1) in the kernel: 65536 registers over the block's threads.)
      l.warp_cols = s.bsn;
      l.tiles = s.bsn / 16;
      const int accs = int(p.groups.size() * p.rhs.size()) * l.tiles;
      // 16 warps leave 128 registers a thread, which hold up to four accumulator tiles; more (two
      // lhs groups or rhs planes at 48-64 columns) take 8 warps of 255 registers. More warps hide
      // more of the ldmatrix and mma latencies where the loop is bound by the L1 pipe (prefill),
      // with fewer registers each: 20 (96 registers) hold three tiles, 24 (80) two, 32 (64) one.
      // The dispatch asks 20 for three tiles past N = 64 and 32 for one tile at long K (H100,
      // bench/NOTES.md, Session 27: n48d at 20 warps 2-7 % faster than 16 at N >= 128, 3 % slower
      // at N=48; n16d at 32 warps 1.4x faster than 16 at N=2048, slower at N <= 16).
      l.warps_per_group = s.warps ? s.warps : accs > 4 ? 8 : 16;
      l.threads = l.warps_per_group * 32;
      const int max_accs = l.warps_per_group <= 8 ? accs : l.warps_per_group <= 16 ? 4 : l.warps_per_group <= 20 ? 3
                         : l.warps_per_group <= 24 ? 2 : 1;
      if (accs > max_accs)
        why = "decode: " + S(l.warps_per_group) + " warps a block hold at most " + S(max_accs) +
              " accumulator tile(s) a warp in their registers; " + to_string(s) + " has " + S(accs) +
              " (fewer warps, or a narrower tile)";
      // Strides in flight per warp: pf2/pf3/pf4 as asked; automatic: 10 for one to three
      // accumulator tiles, 8 for four, 4 at 8 warps; none spills (ptxas, sm_80 and sm_90, every
      // decode type x V x BSn x output) since the schedule word rides in the column indices
      // (generator 22 freed 8-10 registers). On the H100 (bench/NOTES.md, Session 13), against 8
      // and 4: 1-4.5 % faster at N >= 128 and at 4-bit B, N=16 2 %, N=48 even; 12 and 6 were 15 %
      // slower at s=0.9 prefill. (Earlier: 8 against 6 at three tiles 2-5 % faster at prefill,
      // Session 12; 16 for one tile no faster than 8 at decode, Session 10.)
      // K panels: 8 for two or three tiles (one tile: 10). Their epilogue also holds the panels' adds, and at 10
      // the ring's loop stalled on instruction fetch (one panel of all K at 4096x4096 N=2048 took
      // 58 us at 10, 45 at 8, the kernel without panels 42; three panels 1-3 % faster at 8;
      // bench/NOTES.md, Session 22). 20 warps: 10 (8 for a float output); 24 warps: 10 for one
      // tile, 8 for two (6 for a float output); 32 warps: 8 (6 for a float output). 10 spilled at
      // 32 warps' 64 registers, and the float epilogue's scales at the deeper rings (ptxas, sm_90).
      const bool fl = is_float(s.out);  // the float epilogue's scales and bias take registers too
      l.ring_depth = s.stages                   ? s.stages
                     : l.warps_per_group == 32 ? (fl ? 6 : 8)
                     : l.warps_per_group == 24 ? (accs <= 1 ? 10 : fl ? 6 : 8)
                     : l.warps_per_group == 20 ? (fl || s.panel ? 8 : 10)
                     : accs <= 3               ? (s.panel && accs > 1 ? 8 : 10)
                     : accs == 4               ? 8
                                               : 4;
      l.static_smem = l.warps_per_group * 4;  // the row-block of each warp's partial
      l.reduction_smem = l.warps_per_group * accs * c_regs(p.shape) * 32 * 4;
      for (const Chunk &c : p.rhs) l.slice_bytes_per_k += slice_row_bytes(p, c);
      for (const Chunk &c : p.rhs) {
        const int rb = slice_row_bytes(p, c);
        if (rb != 16 && rb != 32 && rb != 48 && rb != 64)
          why = "decode: a row of B is " + S(rb) + " bytes per plane at BSn=" + S(s.bsn) + " (" + S(c.storage_bits) +
                "-bit planes); it must be 16, 32, 48 or 64";
      }
      if (s.split != 1 || !s.prefetch)
        why = "decode: the decode kernel needs split 1 and prefetch (" + to_string(s) + ")";
      l.pdl = s.arch >= 90;  // griddepcontrol: PTX 7.8, sm_90
      // A's loads past L1 where the kernel is bound by HBM: the decode kernels of 16 warps or
      // fewer (the dispatch's for N <= 64). On the H100 (bench/NOTES.md, Sessions 28-29) s=0.5
      // N=16 14336x4096 24.1-24.4 -> 21.8-22.1 us, 4096x14336 26.5 -> 23.5, 11008x4096 20.3 ->
      // 18.7, 4096x4096 11.8 -> 11.7 (the values alone past L1: about two thirds of that); past
      // N = 64 (20 and 32 warps) even or 1.5-2 % slower: there the next stride's indices hit the
      // line this one's brought into L1.
      l.a_skip_l1 = l.warps_per_group <= 16;
      // K panels: A packed panel by panel (runtime/packing.h), one pass of the block a panel, each
      // adding into what the pass before wrote; one rhs plane (its slice rows are the panel's).
      l.panel_rows = s.panel;
      // Two panels in a cluster of two blocks (sm_90): where it was measured to pay, one 16-column
      // tile at 16 warps (the policy asks it at N <= 16 for K >= 12288; bench/NOTES.md, Session 30).
      l.panel_cluster = s.panel && s.arch >= 90 && l.warps_per_group <= 16 && l.tiles == 1;
      l.slice_shares = s.shares;
      if (s.panel && p.rhs.size() != 1)
        why = "panel: a decode kernel in K panels takes one rhs plane (" + to_string(s) + " has " + S(long(p.rhs.size())) + ")";
      break;
    }
    case KernelFamily::SddmmFast: {
      const int warps = std::min(4, s.bsn / 16);  // 16 vectors per tile, BSn / 16 / warps tiles each
      l.warps_per_group = warps;
      l.threads = warps * 32;
      l.warp_cols = s.bsn / warps;
      l.tiles = l.warp_cols / 16;
      l.ring_depth = s.prefetch ? 2 : 1;  // the next k-block's registers in flight
      break;
    }
    case KernelFamily::SpmmGeneric:
    case KernelFamily::SddmmGeneric:
      l.threads = s.bsn / 16 * 32;
      l.warps_per_group = l.threads / 32;
      l.warp_cols = 16;
      l.tiles = 16 / p.dense_side();
      l.ring_depth = s.prefetch ? 2 : 1;  // one stride (k-step) prefetched into registers
      if (l.family == KernelFamily::SpmmGeneric)
        for (const Chunk &c : p.rhs) l.static_smem += p.shape.k * ring_row_pitch(p, c);
      break;
  }
  if (s.split > 1 && l.family != KernelFamily::SpmmRing)
    why = "split: only the int8 m16n8k32 dense-on-M SpMM kernel splits a row-block's strides over warp groups; plan " +
          to_string(s) + " uses " + p.shape.str() + " int" + S(p.native_bits) + " " + orientation_name(p.orient) +
          " (use split 1)";
  if (s.decode && l.family != KernelFamily::SpmmDecode)
    why = "decode: only the int8 m16n8k32 dense-on-M SpMM plan has a decode kernel; plan " + to_string(s) + " uses " +
          p.shape.str() + " int" + S(p.native_bits) + " " + orientation_name(p.orient);
  else if (s.resident && !l.b_resident())
    why = "resident: only the int8 m16n8k32 dense-on-M SpMM kernel keeps B resident; plan " + to_string(s) + " uses " +
          p.shape.str() + " int" + S(p.native_bits) + " " + orientation_name(p.orient);
  l.params = params_of(p, l.family);
  if (ptx_emission_enabled() && ptx_emittable(p, l)) l.language = KernelLanguage::Ptx;
  p.launch = std::move(l);
  return why;
}

const char *language_name(KernelLanguage l) { return l == KernelLanguage::Ptx ? "ptx" : "cuda"; }

bool ptx_emission_enabled() {
  static const bool on = [] {
    const char *e = std::getenv("MAGICUBE_PTX");
    return !(e && std::string(e) == "0");
  }();
  return on;
}

bool ptx_emittable(const Plan &p, const Launch &l) {
  if (p.spec.c_col) return false;  // the PTX generators write a row-major C only
  if (l.family == KernelFamily::SpmmRing) {
    if (l.warp_groups != 1 || l.ring_depth < 2) return false;
  } else if (l.family == KernelFamily::SddmmFast) {
    if (l.ring_depth != 2) return false;  // the next k-block's loads in flight
  } else {
    return false;
  }
  if (p.lhs.size() != 1 || p.rhs.size() != 1 || p.groups.size() != 1 || p.groups[0].lhs_chunks.size() != 1 ||
      p.terms.size() != 1 || p.terms[0].shift != 0 || !p.exchange.empty() || p.spec.v != p.v_side())
    return false;
  for (const Chunk *c : {&p.lhs[0], &p.rhs[0]}) {
    if (c->storage_bits != 8 && c->storage_bits != 4) return false;
    if (c->storage_bits == 4 && p.nibble_prescale != 4) return false;
  }
  return p.spec.out == OutType::Int32 || p.spec.out == OutType::Int64;
}

std::string check_shared_memory(const Plan &p, long long k) {
  const Launch &l = p.launch;
  if (!l.b_resident()) return "";
  const size_t need = l.dynamic_smem(k) + size_t(l.static_smem);
  const size_t limit = size_t(max_smem_per_block(p.spec.arch));
  if (need <= limit) return "";
  if (l.family == KernelFamily::SpmmDecode)
    return "decode: B resident in shared memory needs " + S((long long)need) + " bytes for " +
           (l.panel_rows && k > l.panel_rows ? "a panel of " + S(l.panel_rows) + " rows" : "K=" + S(k)) + " x " +
           S(p.spec.bsn) + " columns (" + S(l.slice_bytes_per_k) + " bytes a row of B) but a block on " +
           arch_name(p.spec.arch) + " may use " + S((long long)limit) +
           "; use a narrower decode tile (more column slices) or a plan without resident B";
  return "resident: B resident in shared memory needs " + S((long long)need) + " bytes for K=" + S(k) + " at BSn=" +
         S(p.spec.bsn) + " but a block on " + arch_name(p.spec.arch) + " may use " + S((long long)limit) +
         "; use a smaller bsn or a plan without resident B";
}

std::string Launch::str() const {
  std::string o = std::string(family_name(family)) + ": " + S(threads) + " threads";
  if (warp_groups > 1) o += " (" + S(warp_groups) + " groups x " + S(warps_per_group) + " warps)";
  o += ", " + S(warp_cols) + " columns (" + S(tiles) + " tile(s)) a warp, block " + S(block_cols);
  if (family == KernelFamily::SpmmRing)
    o += ring_depth > 1 ? ", " + S(ring_depth) + "-deep cp.async ring" : ", no ring (gather, wait, compute)";
  if (family == KernelFamily::SpmmResident) o += ", " + S(ring_depth) + "-deep register ring";
  if (family == KernelFamily::SpmmDecode)
    o += ", block strides split over " + S(threads / 32) + " warps, " + S(ring_depth) + "-deep register ring";
  if (pdl) o += ", programmatic dependent launch";
  if (a_skip_l1) o += ", A's loads skip L1";
  if (panel_cluster) o += ", where K takes two panels a cluster of two blocks (one a panel)";
  if (slice_shares) o += ", or one block an SM taking a share of every slice's strides";
  if (language == KernelLanguage::Ptx) o += ", written in PTX";
  o += ", " + S(static_smem) + " B static smem";
  if (slice_bytes_per_k)
    o += " + max(" + (panel_rows ? "min(K," + S(panel_rows) + ")" : std::string("K")) + ",8) x " + S(slice_bytes_per_k) + " B dynamic";
  if (panel_rows) o += ", K in panels of " + S(panel_rows) + " rows (a pass each, added into C)";
  if (family == KernelFamily::SpmmDecode) o += " (at least " + S(reduction_smem) + " B: the warps' partial sums)";
  o += "\n            params";
  for (const KernelParam &prm : params) o += " " + prm.name;
  return o;
}

}  // namespace magicube
