#include "compiler/plan.h"

#include <sstream>

#include "llvm/ADT/SmallVector.h"
#include "support/field_count.h"
#include "support/hash.h"

namespace magicube {

const char *orientation_name(Orientation o) { return o == Orientation::DenseOnM ? "dense_on_m" : "sparse_on_m"; }

std::string Chunk::str() const {
  return (is_signed ? "s" : "u") + std::to_string(bits) + "@" + std::to_string(lo_bit);
}

std::string ExchangeStep::str() const {
  return kind == Reg ? "reg^" + std::to_string(mask) : "shfl.xor " + std::to_string(mask);
}

bool Plan::unpack_lhs() const {
  for (const Chunk &c : lhs)
    if (c.storage_bits < native_bits) return true;
  return false;
}
bool Plan::unpack_rhs() const {
  for (const Chunk &c : rhs)
    if (c.storage_bits < native_bits) return true;
  return false;
}

std::string Plan::kernel_name() const {
  std::string lr = spec.lhs.str() + spec.rhs.str();
  std::string name = std::string("magicube_") + op_name(spec.op) + "_" + lr + "_v" + std::to_string(spec.v) + "_" +
                     tile_text(spec) + (spec.prefetch ? "_pf" : "_nopf") +
                     (spec.stages ? std::to_string(spec.stages) : std::string());
  if (spec.out != OutType::Int32) name += std::string("_") + out_name(spec.out);
  if (spec.c_col) name += "_ccol";
  name += "_sm" + std::to_string(spec.arch);
  // The default variant (int8, m16n8k32, dense dimension on M) carries no suffix.
  if (!int8_dense_on_m())
    name += std::string("_i") + std::to_string(native_bits) + "_" + shape.str() +
            (orient == Orientation::DenseOnM ? "" : "_vm");
  return name;
}

namespace {
std::string chunks_str(const std::vector<Chunk> &cs) {
  std::string s = "(";
  for (size_t i = 0; i < cs.size(); ++i) s += (i ? ", " : "") + cs[i].str();
  return s + ")";
}
std::string storage_str(const std::vector<Chunk> &cs) {
  std::string s;
  for (size_t i = 0; i < cs.size(); ++i) s += (i ? "," : "") + std::to_string(cs[i].storage_bits);
  return s;
}
}  // namespace

std::string Plan::str() const {
  std::ostringstream o;
  o << "plan " << to_string(spec) << "\n";
  o << "  kernel    " << kernel_name() << "\n";
  o << "  mma       " << shape.str() << " int" << native_bits << " (rate " << mma_rate << " of int8 peak), "
    << orientation_name(orient) << ": M=" << shape.m << " holds "
    << (orient == Orientation::DenseOnM ? "the dense dimension" : "the V rows") << ", N=" << shape.n << " holds "
    << (orient == Orientation::DenseOnM ? "the V rows" : "the dense dimension") << "\n";
  o << "  lhs       " << spec.lhs.str() << " = " << chunks_str(lhs) << "  storage bits " << storage_str(lhs)
    << (unpack_lhs() ? " (unpacked in registers)" : "") << "\n";
  o << "  rhs       " << spec.rhs.str() << " = " << chunks_str(rhs) << "  storage bits " << storage_str(rhs)
    << (unpack_rhs() ? " (unpacked in registers)" : "") << "\n";
  o << "  stacking  " << stack_slots << " slot(s) of V=" << spec.v << " on the mma's " << v_side() << "-wide V side;";
  for (size_t g = 0; g < groups.size(); ++g) {
    o << " g" << g << "={";
    for (size_t i = 0; i < groups[g].lhs_chunks.size(); ++i) o << (i ? "," : "") << "lhs" << groups[g].lhs_chunks[i];
    o << "}:" << (groups[g].is_signed ? "s" : "u");
  }
  o << "\n  exchange  ";
  if (exchange.empty()) o << "none";
  for (size_t i = 0; i < exchange.size(); ++i) o << (i ? ", " : "") << exchange[i].str();
  o << "\n  terms     " << terms.size() << " term(s), " << mmas_per_step() << " mma(s) per k-step\n";
  for (const Term &t : terms)
    o << "    lhs" << t.lhs_chunk << " x rhs" << t.rhs_chunk << " << " << t.shift << "  g" << t.group << ".slot"
      << t.slot << "  " << t.mma << "\n";
  o << "  srbcrs    stride " << k_stride << ", two row pointers per row-block, pad column -1";
  if (shuffle_b) {
    o << ", column shuffle (slot -> k) [";
    for (size_t i = 0; i < shuffle.size(); ++i) o << (i ? " " : "") << shuffle[i];
    o << "]";
  }
  o << "\n  epilogue  ";
  switch (spec.out) {
    case OutType::Int32: o << "int32: terms shifted and summed with two's-complement wrap"; break;
    case OutType::Int64: o << "int64: int32 term accumulators widened, shifted and summed in 64 bits"; break;
    default:
      o << out_name(spec.out) << ": int64 sum of terms, in double"
        << (spec.scale == Scale::Tensor ? " * alpha" : spec.scale == Scale::RowCol ? " * row_scale[r] * col_scale[c]" : "")
        << (spec.bias == Bias::Row ? " + bias[r]" : spec.bias == Bias::Col ? " + bias[c]" : "")
        << ", rounded to nearest even";
  }
  if (spec.c_col) o << "; C column-major (element (r, c) at c * M + r)";
  if (nibble_prescale)
    o << "\n  nibbles   4-bit planes widened as value << " << nibble_prescale
      << " (one mask per register); scaled accumulators shifted back in the epilogue";
  o << "\n  bounds    max_exact_k " << max_exact_k << ", max_term_k " << max_term_k << "\n";
  o << "  launch    " << launch.str() << "\n";
  o << "  cost      " << cost << " (compute " << compute_cost << ", memory " << memory_cost << ")\n";
  return o.str();
}

uint64_t fingerprint(const Plan &p) {
  // The fields as one small array of integers, xxHash64'ed: this runs on every Kernel::get, so
  // no strings and no heap (lists are length-prefixed, so no two plans give one array).
  llvm::SmallVector<int64_t, 192> f;
  const OpSpec &s = p.spec;
  // Every field of the spec and of the plan's own structs is hashed, except what follows from
  // them (Plan: mma_rate, max_exact_k, max_term_k, the costs, the launch but its language;
  // Term: mma). A field added anywhere here fails these until it is hashed or named derived.
  static_assert(field_count<OpSpec>() == 19 && field_count<ElemType>() == 2, "an OpSpec field was added: hash it here");
  static_assert(field_count<Plan>() == 21 && field_count<MmaShape>() == 3 && field_count<Chunk>() == 4 &&
                    field_count<StackGroup>() == 2 && field_count<Term>() == 6 && field_count<ExchangeStep>() == 2,
                "a Plan field was added: hash it here, or say it follows from the others");
  f.append({int64_t(s.op), s.lhs.bits, s.lhs.is_signed, s.rhs.bits, s.rhs.is_signed, s.v, s.bsn, s.prefetch,
            int64_t(s.out), s.arch, int64_t(s.scale), int64_t(s.bias), s.stages, s.split, s.resident, s.decode, s.panel, s.warps, s.pinned, s.c_col, s.shares});
  f.append({p.native_bits, p.shape.m, p.shape.n, p.shape.k, int64_t(p.orient)});
  for (const auto *cs : {&p.lhs, &p.rhs}) {
    f.push_back(int64_t(cs->size()));
    for (const Chunk &c : *cs) f.append({c.lo_bit, c.bits, c.is_signed, c.storage_bits});
  }
  f.append({p.stack_slots, int64_t(p.groups.size())});
  for (const StackGroup &g : p.groups) {
    f.append({g.is_signed, int64_t(g.lhs_chunks.size())});
    f.append(g.lhs_chunks.begin(), g.lhs_chunks.end());
  }
  f.push_back(int64_t(p.terms.size()));
  for (const Term &t : p.terms) f.append({t.lhs_chunk, t.rhs_chunk, t.shift, t.group, t.slot});
  f.push_back(int64_t(p.exchange.size()));
  for (const ExchangeStep &e : p.exchange) f.append({int64_t(e.kind), e.mask});
  f.append({p.k_stride, p.shuffle_b, int64_t(p.shuffle.size()), p.nibble_prescale});
  f.append(p.shuffle.begin(), p.shuffle.end());
  f.push_back(int64_t(p.launch.language));  // the rest of the launch follows from the fields above
  return hash64(f);
}

llvm::json::Value to_json(const Plan &p) {
  auto chunks = [](const std::vector<Chunk> &cs) {
    llvm::json::Array a;
    for (const Chunk &c : cs)
      a.push_back(llvm::json::Object{
          {"lo_bit", c.lo_bit}, {"bits", c.bits}, {"signed", c.is_signed}, {"storage_bits", c.storage_bits}});
    return a;
  };
  llvm::json::Array groups, terms, exchange, shuffle;
  for (const StackGroup &g : p.groups) {
    llvm::json::Array ch;
    for (int c : g.lhs_chunks) ch.push_back(c);
    groups.push_back(llvm::json::Object{{"lhs_chunks", std::move(ch)}, {"signed", g.is_signed}});
  }
  for (const Term &t : p.terms)
    terms.push_back(llvm::json::Object{{"lhs_chunk", t.lhs_chunk}, {"rhs_chunk", t.rhs_chunk}, {"shift", t.shift},
                                       {"group", t.group},         {"slot", t.slot},           {"mma", t.mma}});
  for (const ExchangeStep &e : p.exchange)
    exchange.push_back(llvm::json::Object{{"kind", e.kind == ExchangeStep::Reg ? "reg" : "lane"}, {"mask", e.mask}});
  for (int s : p.shuffle) shuffle.push_back(s);
  return llvm::json::Object{
      {"spec", to_json(p.spec)},
      {"opspec", to_string(p.spec)},
      {"kernel", p.kernel_name()},
      {"native_bits", p.native_bits},
      {"mma_shape", llvm::json::Object{{"m", p.shape.m}, {"n", p.shape.n}, {"k", p.shape.k}}},
      {"orientation", orientation_name(p.orient)},
      {"mma_rate", p.mma_rate},
      {"lhs_chunks", chunks(p.lhs)},
      {"rhs_chunks", chunks(p.rhs)},
      {"stack_slots", p.stack_slots},
      {"stack_groups", std::move(groups)},
      {"terms", std::move(terms)},
      {"exchange", std::move(exchange)},
      {"k_stride", p.k_stride},
      {"shuffle_b", p.shuffle_b},
      {"shuffle", std::move(shuffle)},
      {"max_exact_k", p.max_exact_k},
      {"max_term_k", p.max_term_k},
      {"nibble_prescale", p.nibble_prescale},
      {"launch", llvm::json::Object{{"family", family_name(p.launch.family)},
                                    {"threads", p.launch.threads},
                                    {"warp_groups", p.launch.warp_groups},
                                    {"warps_per_group", p.launch.warps_per_group},
                                    {"warp_cols", p.launch.warp_cols},
                                    {"tiles", p.launch.tiles},
                                    {"ring_depth", p.launch.ring_depth},
                                    {"index_ring", p.launch.index_ring},
                                    {"static_smem", p.launch.static_smem},
                                    {"reduction_smem", p.launch.reduction_smem},
                                    {"slice_bytes_per_k", p.launch.slice_bytes_per_k},
                                    {"block_cols", p.launch.block_cols},
                                    {"pdl", p.launch.pdl},
                                    {"a_skip_l1", p.launch.a_skip_l1},
                                    {"panel_cluster", p.launch.panel_cluster},
                                    {"language", language_name(p.launch.language)},
                                    {"params", [&] {
                                       llvm::json::Array a;
                                       for (const KernelParam &k : p.launch.params) a.push_back(k.type + " " + k.name);
                                       return a;
                                     }()}}},
      {"compute_cost", p.compute_cost},
      {"memory_cost", p.memory_cost},
      {"cost", p.cost},
  };
}

}  // namespace magicube
