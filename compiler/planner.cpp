#include "compiler/planner.h"

#include <algorithm>
#include <limits>
#include <tuple>

namespace magicube {

namespace {

llvm::Error err(const llvm::Twine &msg) { return llvm::createStringError(llvm::inconvertibleErrorCode(), msg); }

constexpr int64_t kI32Max = std::numeric_limits<int32_t>::max();
constexpr int64_t kI32Min = std::numeric_limits<int32_t>::min();

struct Range {
  int64_t lo, hi;
};
Range range_of(int bits, bool is_signed) {
  return is_signed ? Range{-(int64_t{1} << (bits - 1)), (int64_t{1} << (bits - 1)) - 1}
                   : Range{0, (int64_t{1} << bits) - 1};
}
Range product_range(Range a, Range b) {
  int64_t c[4] = {a.lo * b.lo, a.lo * b.hi, a.hi * b.lo, a.hi * b.hi};
  return {*std::min_element(c, c + 4), *std::max_element(c, c + 4)};
}
// Largest K with K*p.hi <= INT32_MAX and K*p.lo >= INT32_MIN.
int64_t max_k_in_i32(Range p) {
  int64_t k = std::numeric_limits<int64_t>::max();
  if (p.hi > 0) k = std::min(k, kI32Max / p.hi);
  if (p.lo < 0) k = std::min(k, kI32Min / p.lo);
  return k;
}

// Butterfly steps that sum the stacked slots of the C fragment. The V-side index of a C
// element is a function of (lane, reg) bits; slots differ in the index bits >= log2(V).
// Only the slots that some group fills take part: the bits from V up to V * used slots.
std::vector<ExchangeStep> exchange_steps(Orientation o, const MmaShape &s, int v, int used_slots) {
  std::vector<ExchangeStep> steps;
  int span = v;
  while (span < v * used_slots) span *= 2;
  // (kind, mask, V-side index bit it flips)
  struct Bit { ExchangeStep::Kind kind; int mask; int value; };
  std::vector<Bit> bits;
  if (o == Orientation::DenseOnM) {
    // C of m16n8/m8n8: column = (lane % 4) * 2 + (reg & 1)
    bits = {{ExchangeStep::Reg, 1, 1}, {ExchangeStep::Lane, 1, 2}, {ExchangeStep::Lane, 2, 4}};
  } else {
    // row = lane / 4 (+ 8 * (reg >> 1) for m16)
    bits = {{ExchangeStep::Lane, 4, 1}, {ExchangeStep::Lane, 8, 2}, {ExchangeStep::Lane, 16, 4}};
    if (s.m == 16) bits.push_back({ExchangeStep::Reg, 2, 8});
  }
  for (const Bit &b : bits)
    if (b.value >= v && b.value < span) steps.push_back({b.kind, b.mask});
  return steps;
}

Plan make_plan(const OpSpec &spec, const MmaOption &opt, Orientation orient) {
  Plan p;
  p.spec = spec;
  p.native_bits = opt.bits;
  p.shape = opt.shape;
  p.orient = orient;
  p.mma_rate = opt.rate;
  p.lhs = split_chunks(spec.lhs, opt.bits);
  p.rhs = split_chunks(spec.rhs, opt.bits);
  // The decode kernel gathers B from its shared-memory slice a stride at a time; a 4-bit plane
  // there was widened in registers after every gather (4 more instructions an mma: L4-R4 issued
  // 1.7x L4-R8's instructions and ran 1.3x slower at prefill, 16-column decode slices could not
  // hold it). On int8 mma it is packed as bytes instead (sign- or zero-extended once, when B is
  // packed): the same kernel as 8-bit B, a slice twice the bytes.
  if (spec.op == OpKind::SpMM && spec.decode && opt.bits == 8)
    for (Chunk &c : p.rhs) c.storage_bits = 8;
  p.stack_slots = std::max(1, p.v_side() / spec.v);

  // Stack groups: chunks of one signedness share an mma, stack_slots at a time.
  for (bool sgn : {false, true}) {
    StackGroup g{{}, sgn};
    for (int i = 0; i < int(p.lhs.size()); ++i) {
      if (p.lhs[i].is_signed != sgn) continue;
      g.lhs_chunks.push_back(i);
      if (int(g.lhs_chunks.size()) == p.stack_slots) {
        p.groups.push_back(g);
        g.lhs_chunks.clear();
      }
    }
    if (!g.lhs_chunks.empty()) p.groups.push_back(g);
  }
  for (int gi = 0; gi < int(p.groups.size()); ++gi)
    for (int slot = 0; slot < int(p.groups[gi].lhs_chunks.size()); ++slot) {
      int li = p.groups[gi].lhs_chunks[slot];
      for (int ri = 0; ri < int(p.rhs.size()); ++ri) {
        Term t;
        t.lhs_chunk = li;
        t.rhs_chunk = ri;
        t.shift = p.lhs[li].lo_bit + p.rhs[ri].lo_bit;
        t.group = gi;
        t.slot = slot;
        // The mma's A operand is the M side.
        bool a_signed = orient == Orientation::DenseOnM ? p.rhs[ri].is_signed : p.groups[gi].is_signed;
        bool b_signed = orient == Orientation::DenseOnM ? p.groups[gi].is_signed : p.rhs[ri].is_signed;
        t.mma = mma_ptx_name(p.shape, opt.bits, a_signed, b_signed);
        p.terms.push_back(t);
      }
    }
  std::sort(p.terms.begin(), p.terms.end(), [](const Term &a, const Term &b) {
    return std::tie(a.lhs_chunk, a.rhs_chunk) < std::tie(b.lhs_chunk, b.rhs_chunk);
  });
  size_t used_slots = 1;
  for (const StackGroup &g : p.groups) used_slots = std::max(used_slots, g.lhs_chunks.size());
  p.exchange = exchange_steps(orient, p.shape, spec.v, int(used_slots));

  p.k_stride = p.shape.k;
  // SpMM's B rows are gathered into shared memory and transposed on the way to the mma;
  // the builder shuffles column indices so that the slot order matches the k order the
  // transpose produces:
  // - int4 B: transposed at byte granularity, nibbles split by mask/shift/or of two
  //   registers (k0..3 | k4..7): slot p lands at k-position shuffle[p] in groups of 8;
  // - int8 B with the dense dimension on M (m16n8k32): ldmatrix.x4.trans.b16 gives each lane
  //   k rows {2t, 2t+1} of 8-row matrices, and two prmt per register pair join rows
  //   {2t, 2t+1, 8+2t, 9+2t} into the k-positions 4t..4t+3: groups of 16.
  if (spec.op == OpKind::SpMM && opt.bits == 4) {
    p.shuffle_b = true;
    p.shuffle = {0, 2, 4, 6, 1, 3, 5, 7};
  } else if (spec.op == OpKind::SpMM && opt.bits == 8 && orient == Orientation::DenseOnM && p.shape == MmaShape{16, 8, 32}) {
    p.shuffle_b = true;
    p.shuffle = {0, 1, 4, 5, 8, 9, 12, 13, 2, 3, 6, 7, 10, 11, 14, 15};
  }

  // The int8 m16n8k32 dense-on-M kernels (SDDMM's fast path, SpMM's ring and resident-B
  // kernels) widen 4-bit planes as value << 4: no sign extension.
  bool any4 = false;
  for (const auto *cs : {&p.lhs, &p.rhs})
    for (const Chunk &c : *cs) any4 |= c.storage_bits == 4;
  if (opt.bits == 8 && orient == Orientation::DenseOnM && p.shape == MmaShape{16, 8, 32} && any4)
    p.nibble_prescale = 4;

  // Exactness bounds (of the prescaled accumulators where there are any).
  p.max_exact_k = max_exact_k(spec.lhs, spec.rhs);
  p.max_term_k = std::numeric_limits<int64_t>::max();
  for (const Chunk &a : p.lhs)
    for (const Chunk &b : p.rhs) {
      Range r = product_range(range_of(a.bits, a.is_signed), range_of(b.bits, b.is_signed));
      const int s = p.nibble_prescale * ((a.storage_bits == 4) + (b.storage_bits == 4));
      r.lo *= int64_t{1} << s;
      r.hi *= int64_t{1} << s;
      p.max_term_k = std::min(p.max_term_k, max_k_in_i32(r));
    }
  // A scaled accumulator that wraps loses its top bits: int32 outputs are exact only while
  // every term accumulator is.
  if (p.nibble_prescale) p.max_exact_k = std::min(p.max_exact_k, p.max_term_k);

  // Cost model: mma issue time and gathered bytes, per useful multiply-accumulate.
  const double useful = double(p.dense_side()) * spec.v * p.shape.k;
  const double issued = double(p.mmas_per_step()) * p.shape.m * p.shape.n * p.shape.k / opt.rate;
  p.compute_cost = issued / useful;
  double rhs_bytes = 0, lhs_bytes = 0;
  for (const Chunk &c : p.rhs) rhs_bytes += c.storage_bits / 8.0;
  for (const Chunk &c : p.lhs) lhs_bytes += c.storage_bits / 8.0;
  const double dense = spec.op == OpKind::SpMM ? spec.bsn : p.dense_side();
  p.memory_cost = (rhs_bytes / spec.v + lhs_bytes / dense) * macs_per_gathered_byte(spec.arch);
  p.cost = std::max(p.compute_cost, p.memory_cost) + 0.1 * std::min(p.compute_cost, p.memory_cost);
  return p;
}

}  // namespace

std::vector<Chunk> split_chunks(const ElemType &t, int w) {
  std::vector<Chunk> out;
  int n = (t.bits + w - 1) / w;
  for (int i = 0; i < n; ++i) {
    Chunk c;
    c.lo_bit = i * w;
    c.bits = std::min(w, t.bits - i * w);
    c.is_signed = t.is_signed && i == n - 1;
    // 4-bit storage for native int4, and for a whole <= 4-bit type on int8 mma; a 4-bit top
    // chunk of a wider type (e.g. 12 bits) is stored as bytes, so that every plane of one
    // operand shares one layout (and one fragment order).
    c.storage_bits = c.bits <= 4 && (w == 4 || n == 1) ? 4 : 8;
    out.push_back(c);
  }
  return out;
}

int64_t max_exact_k(const ElemType &lhs, const ElemType &rhs) {
  return max_k_in_i32(product_range(range_of(lhs.bits, lhs.is_signed), range_of(rhs.bits, rhs.is_signed)));
}

llvm::Expected<std::vector<Plan>> plan_candidates(const OpSpec &spec) {
  if (auto e = validate(spec)) return e;
  if (spec.out == OutType::Int32 && max_exact_k(spec.lhs, spec.rhs) == 0)
    return err("out: an int32 output of " + spec.lhs.str() + " x " + spec.rhs.str() +
               " is not exact even for K=1 (max_exact_k = 0: the largest product does not fit int32); use --out=int64");
  std::vector<Plan> plans;
  // Why the first candidate that cannot build the spec's knobs cannot; the int8 m16n8k32
  // dense-on-M candidate's reason where it has one, as the kernels the knobs name (decode,
  // resident B, split, warps) are built on it and its reason is the one about the knobs.
  std::string why_not;
  bool why_of_int8 = false;
  auto add = [&](Plan p) {
    std::string why = plan_launch(p);
    const bool int8 = p.int8_dense_on_m();
    if (why.empty()) plans.push_back(std::move(p));
    else if (why_not.empty() || (int8 && !why_of_int8)) why_not = why, why_of_int8 = int8;
  };
  for (const MmaOption &opt : native_mmas(spec.arch)) {
    // m16 shapes come in both orientations; m8n8 shapes only as Magicube used them.
    if (opt.shape.m == 16) add(make_plan(spec, opt, Orientation::DenseOnM));
    add(make_plan(spec, opt, Orientation::SparseOnM));
  }
  if (plans.empty()) return err(why_not);
  std::stable_sort(plans.begin(), plans.end(), [](const Plan &a, const Plan &b) { return a.cost < b.cost; });
  return plans;
}

llvm::Expected<Plan> plan(const OpSpec &spec) {
  auto c = plan_candidates(spec);
  if (!c) return c.takeError();
  return std::move(c->front());
}

llvm::Error check_reduction_length(const Plan &p, int64_t k) {
  if (p.spec.out == OutType::Int32 && k > p.max_exact_k)
    return err("reduction length K=" + llvm::Twine(k) + " exceeds max_exact_k=" + llvm::Twine(p.max_exact_k) +
               " for an int32 output of " + p.spec.lhs.str() + " x " + p.spec.rhs.str() +
               " (max_term_k=" + llvm::Twine(p.max_term_k) + "); use --out=int64");
  if (p.spec.out != OutType::Int32 && k > p.max_term_k)
    return err("reduction length K=" + llvm::Twine(k) + " exceeds max_term_k=" + llvm::Twine(p.max_term_k) +
               " (a chunk term's int32 accumulator could overflow; max_exact_k=" + llvm::Twine(p.max_exact_k) + ")");
  return llvm::Error::success();
}

}  // namespace magicube
