#include "compiler/ir.h"

#include "support/text.h"

#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringExtras.h"
#include "support/field_count.h"
#include "support/hash.h"

namespace magicube {

namespace {
llvm::Error err(const llvm::Twine &msg) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), msg);
}
}  // namespace

std::string ElemType::str() const { return (is_signed ? "s" : "u") + std::to_string(bits); }

const char *op_name(OpKind k) { return k == OpKind::SpMM ? "spmm" : "sddmm"; }

const char *out_name(OutType t) {
  switch (t) {
    case OutType::Int32: return "i32";
    case OutType::Int64: return "i64";
    case OutType::F32: return "f32";
    case OutType::F16: return "f16";
    case OutType::BF16: return "bf16";
  }
  return "?";
}

const char *scale_name(Scale s) { return s == Scale::None ? "none" : s == Scale::Tensor ? "tensor" : "rowcol"; }
const char *bias_name(Bias b) { return b == Bias::None ? "none" : b == Bias::Row ? "row" : "col"; }

llvm::Expected<Scale> parse_scale(llvm::StringRef s) {
  if (s == "none") return Scale::None;
  if (s == "tensor") return Scale::Tensor;
  if (s == "rowcol") return Scale::RowCol;
  return err("scale: unknown scale " + quoted(s) + " (allowed: none, tensor, rowcol)");
}

llvm::Expected<Bias> parse_bias(llvm::StringRef s) {
  if (s == "none") return Bias::None;
  if (s == "row") return Bias::Row;
  if (s == "col") return Bias::Col;
  return err("bias: unknown bias " + quoted(s) + " (allowed: none, row, col)");
}

std::string arch_name(int arch) { return "sm_" + std::to_string(arch); }

llvm::Expected<OpKind> parse_op(llvm::StringRef s) {
  if (s == "spmm") return OpKind::SpMM;
  if (s == "sddmm") return OpKind::SDDMM;
  return err("op: unknown op " + quoted(s) + " (allowed: spmm, sddmm)");
}

llvm::Expected<ElemType> parse_elem(llvm::StringRef s, llvm::StringRef field) {
  if (s.size() < 2 || (s[0] != 's' && s[0] != 'u'))
    return err(field + ": " + quoted(s) + " is not an element type (write s<bits> or u<bits>, bits 1..16, e.g. s8, u4)");
  unsigned bits = 0;
  if (s.drop_front().getAsInteger(10, bits))
    return err(field + ": " + quoted(s) + " is not an element type (write s<bits> or u<bits>, bits 1..16, e.g. s8, u4)");
  if (bits < 1 || bits > 16)
    return err(field + ": " + llvm::Twine(bits) + " bits in " + quoted(s) + " is out of range (allowed: 1..16)");
  return ElemType{int(bits), s[0] == 's'};
}

llvm::Expected<OutType> parse_out(llvm::StringRef s) {
  for (OutType t : {OutType::Int32, OutType::Int64, OutType::F32, OutType::F16, OutType::BF16})
    if (s == out_name(t)) return t;
  if (s == "int32") return OutType::Int32;
  if (s == "int64") return OutType::Int64;
  return err("out: unknown output type " + quoted(s) + " (allowed: int32, int64, f32, f16, bf16)");
}

llvm::Expected<int> parse_arch(llvm::StringRef s) {
  llvm::StringRef digits = s;
  digits.consume_front("sm_");
  unsigned cc = 0;
  if (!digits.getAsInteger(10, cc) && (cc == 80 || cc == 86 || cc == 89 || cc == 90)) return int(cc);
  return err("arch: unknown arch " + quoted(s) + " (allowed: sm_80, sm_86, sm_89, sm_90)");
}

llvm::Error validate(const OpSpec &s) {
  for (auto [name, e] : {std::pair{"lhs", s.lhs}, std::pair{"rhs", s.rhs}})
    if (e.bits < 1 || e.bits > 16)
      return err(llvm::Twine(name) + ": " + llvm::Twine(e.bits) + " bits is out of range (allowed: 1..16)");
  if (s.v != 1 && s.v != 2 && s.v != 4 && s.v != 8)
    return err("v: V=" + llvm::Twine(s.v) + " is not allowed (allowed: 1, 2, 4, 8)");
  if (s.decode && s.op != OpKind::SpMM) return err("decode: only SpMM has a decode kernel (n<BSn>d)");
  if (s.decode && !s.resident)
    return err("decode: a decode kernel keeps B resident (decode implies resident; write n" + llvm::Twine(s.bsn) + "d)");
  if (s.decode && s.split != 1)
    return err("decode: the decode kernel splits strides over all its warps already (split must be 1; write n" +
               llvm::Twine(s.bsn) + "d)");
  if (s.decode && !s.prefetch) return err("decode: the decode kernel always prefetches (nopf is not allowed)");
  if (s.decode && s.bsn != 16 && s.bsn != 32 && s.bsn != 48 && s.bsn != 64)
    return err("decode: BSn=" + llvm::Twine(s.bsn) +
               " is not a decode tile (allowed: 16, 32, 48, 64: N <= 64 rounded up to 16-column mma tiles)");
  if (s.panel != 0 && !s.decode)
    return err("panel: only a decode kernel takes B in K panels (write n" + llvm::Twine(s.bsn) + "dp" + llvm::Twine(s.panel) + ")");
  if (s.panel != 0 && (s.panel < 64 || s.panel % 64 != 0 || s.panel > 32704))
    return err("panel: " + llvm::Twine(s.panel) + " rows of B per panel is not allowed (allowed: a multiple of 64, 64..32704)");
  if (s.warps != 0 && !s.decode)
    return err("warps: only a decode kernel takes a warp count (write n" + llvm::Twine(s.bsn) + "dw" + llvm::Twine(s.warps) + ")");
  if (s.warps != 0 && s.warps != 8 && s.warps != 16 && s.warps != 20 && s.warps != 24 && s.warps != 32)
    return err("warps: " + llvm::Twine(s.warps) + " warps a block is not allowed (allowed: 8, 16, 20, 24, 32; 0 = the plan's choice)");
  if (s.shares && (!s.decode || s.panel != 0))
    return err("shares: only a decode kernel without K panels takes shares of all slices (write n" + llvm::Twine(s.bsn) +
               "ds or n" + llvm::Twine(s.bsn) + "dw<warps>s)");
  if (s.panel != 0 && is_float(s.out))
    return err("panel: a decode kernel in K panels adds each pass into C, which needs an integer output (out is " +
               llvm::Twine(out_name(s.out)) + "; allowed: i32, i64)");
  if (resident_only_bsn(s.bsn) && !s.resident)
    return err("bsn: BSn=" + llvm::Twine(s.bsn) +
               " is allowed only for a resident-B SpMM (n" + llvm::Twine(s.bsn) + "r; otherwise allowed: 32, 64, 128, 256)");
  if (!resident_only_bsn(s.bsn) && s.bsn != 32 && s.bsn != 64 && s.bsn != 128 && s.bsn != 256)
    return err("bsn: BSn=" + llvm::Twine(s.bsn) +
               " is not allowed (allowed: 32, 64, 128, 256; 16, 48 and 96 with resident B)");
  if (s.resident && s.op != OpKind::SpMM) return err("resident: only SpMM keeps B resident in shared memory");
  if (s.resident && s.split != 1) return err("resident: a resident-B kernel does not split row-blocks (split must be 1)");
  if (s.resident && !s.prefetch) return err("resident: a resident-B kernel always prefetches (nopf is not allowed)");
  if (s.resident && s.bsn > 128)
    return err("resident: BSn=" + llvm::Twine(s.bsn) + " is too wide for a resident B slice (allowed: 16, 32, 48, 64, 96, 128)");
  if (s.stages != 0 && s.stages != 2 && s.stages != 3 && s.stages != 4)
    return err("stages: " + llvm::Twine(s.stages) + " ring stages are not allowed (allowed: 0 = automatic, 2, 3, 4)");
  if (s.stages != 0 && !s.prefetch)
    return err("stages: a ring depth of " + llvm::Twine(s.stages) + " needs the prefetch pipeline (nopf has no ring; allowed: 0)");
  if (s.stages != 0 && s.op == OpKind::SDDMM)
    return err("stages: SDDMM prefetches in registers and has no ring (allowed: 0)");
  if (s.split != 1 && s.split != 2)
    return err("split: " + llvm::Twine(s.split) + " warp groups per row-block are not allowed (allowed: 1, 2)");
  if (s.split != 1 && s.op == OpKind::SDDMM)
    return err("split: SDDMM does not split its reduction over warp groups (allowed: 1)");
  if (!is_float(s.out) && s.scale != Scale::None)
    return err("scale: a " + llvm::Twine(scale_name(s.scale)) + " scale needs a float output (out is " + out_name(s.out) +
               "; allowed: f32, f16, bf16)");
  if (!is_float(s.out) && s.bias != Bias::None)
    return err("bias: a " + llvm::Twine(bias_name(s.bias)) + " bias needs a float output (out is " + out_name(s.out) +
               "; allowed: f32, f16, bf16)");
  if (s.op == OpKind::SDDMM && s.bias != Bias::None)
    return err("bias: SDDMM takes no bias (allowed: none)");
  if (s.op == OpKind::SDDMM && s.c_col)
    return err("out: +ccol (a column-major C) is an SpMM option; SDDMM writes the mask's vectors (allowed: none)");
  if (s.arch != 80 && s.arch != 86 && s.arch != 89 && s.arch != 90)
    return err("arch: sm_" + llvm::Twine(s.arch) + " is not supported (allowed: sm_80, sm_86, sm_89, sm_90)");
  return llvm::Error::success();
}

std::string tile_text(const OpSpec &s) {
  return "n" + std::to_string(s.bsn) + (s.split > 1 ? "k" + std::to_string(s.split) : std::string()) +
         (s.decode ? "d" : s.resident ? "r" : "") + (s.warps ? "w" + std::to_string(s.warps) : std::string()) +
         (s.panel ? "p" + std::to_string(s.panel) : std::string()) + (s.shares ? "s" : "");
}

std::string to_string(const OpSpec &s) {
  std::string t = std::string(op_name(s.op)) + "." + s.lhs.str() + "x" + s.rhs.str() + ".v" + std::to_string(s.v);
  if (s.pinned & kPinTile) t += "." + tile_text(s);
  if (s.pinned & kPinPrefetch)
    t += s.prefetch ? ".pf" + (s.stages ? std::to_string(s.stages) : std::string()) : std::string(".nopf");
  return t + "." + out_name(s.out) + (s.scale == Scale::Tensor ? "+t" : s.scale == Scale::RowCol ? "+rc" : "") +
         (s.bias == Bias::Row ? "+rowbias" : s.bias == Bias::Col ? "+colbias" : "") + (s.c_col ? "+ccol" : "") + "." +
         arch_name(s.arch);
}

llvm::Expected<OpSpec> parse_opspec(llvm::StringRef text) {
  llvm::SmallVector<llvm::StringRef, 8> f;
  text.split(f, '.');
  // Optional fields: the tile (n<BSn>..) and the prefetch (pf..|nopf); what is missing is
  // left to the dispatch. Stored as 7 fields, "" where missing.
  OpSpec s;
  s.pinned = kPinAll;
  if (f.size() >= 5 && f.size() <= 7) {
    const bool tile = f[3].startswith("n") && f[3].size() > 1 && f[3][1] >= '0' && f[3][1] <= '9';
    if (!tile) f.insert(f.begin() + 3, llvm::StringRef()), s.pinned &= ~kPinTile;
    const bool pf = f.size() > 4 && (f[4].startswith("pf") || f[4] == "nopf");
    if (!pf && f.size() < 7) f.insert(f.begin() + 4, llvm::StringRef()), s.pinned &= ~kPinPrefetch;
  }
  if (f.size() != 7)
    return err("opspec: " + quoted(text) + " must have 5 to 7 dot-separated fields: op.LxR.vV[.nBSn][.pf|nopf].out.arch (e.g. spmm.s8xu4.v8.n64.pf.i32.sm_90, or spmm.s8xu4.v8.i32.sm_90 to let the dispatch choose the tile and prefetch)");
  auto op = parse_op(f[0]);
  if (!op) return op.takeError();
  s.op = *op;
  // LxR: the separator is the first 'x' after the LHS's leading letter.
  size_t sep = f[1].find('x', 1);
  if (sep == llvm::StringRef::npos) return err("types: " + quoted(f[1]) + " must be <lhs>x<rhs>, e.g. s8xu4");
  llvm::StringRef l = f[1].take_front(sep), r = f[1].drop_front(sep + 1);
  auto lhs = parse_elem(l, "lhs");
  if (!lhs) return lhs.takeError();
  auto rhs = parse_elem(r, "rhs");
  if (!rhs) return rhs.takeError();
  s.lhs = *lhs;
  s.rhs = *rhs;
  unsigned n = 0;
  if (!f[2].consume_front("v") || f[2].getAsInteger(10, n)) return err("v: " + quoted(f[2]) + " must be v<V>, e.g. v8");
  s.v = int(n);
  llvm::StringRef nf = f[3].empty() ? llvm::StringRef("n64") : f[3];
  // n<BSn>d[w<warps>]s: shares of all slices
  if (nf.find('d') != llvm::StringRef::npos && nf.consume_back("s")) s.shares = true;
  // n<BSn>d[w<warps>][p<rows>]: the panel last, the warp count before it
  if (size_t ppos = nf.rfind('p'); ppos != llvm::StringRef::npos && nf.find('d') != llvm::StringRef::npos) {
    unsigned rows = 0;
    if (nf.drop_front(ppos + 1).getAsInteger(10, rows))
      return err("panel: " + quoted(f[3]) + " must be n<BSn>dp<rows> or n<BSn>dw<warps>p<rows>, e.g. n48dp4800");
    s.panel = int(rows);
    nf = nf.take_front(ppos);
  }
  if (size_t wpos = nf.rfind("dw"); wpos != llvm::StringRef::npos) {
    unsigned warps = 0;
    if (nf.drop_front(wpos + 2).getAsInteger(10, warps))
      return err("warps: " + quoted(f[3]) + " must be n<BSn>dw<warps>[p<rows>], e.g. n16dw32");
    s.warps = int(warps);
    nf = nf.take_front(wpos + 1);
  }
  if (nf.consume_back("r")) s.resident = true;
  else if (nf.consume_back("d")) s.resident = s.decode = true;
  if (size_t kpos = nf.find('k'); kpos != llvm::StringRef::npos) {
    unsigned k = 0;
    if (nf.drop_front(kpos + 1).getAsInteger(10, k))
      return err("split: " + quoted(f[3]) + " must be n<BSn> or n<BSn>k<split>, e.g. n256k2");
    s.split = int(k);
    nf = nf.take_front(kpos);
  }
  if (!nf.consume_front("n") || nf.getAsInteger(10, n)) return err("bsn: " + quoted(f[3]) + " must be n<BSn>, e.g. n64");
  s.bsn = int(n);
  if (f[4].empty()) {
    s.prefetch = true;
  } else if (f[4] == "nopf") {
    s.prefetch = false;
  } else if (f[4] == "pf" || f[4] == "pf2" || f[4] == "pf3" || f[4] == "pf4") {
    s.prefetch = true;
    s.stages = f[4].size() == 3 ? f[4][2] - '0' : 0;
  } else {
    return err("prefetch: " + quoted(f[4]) + " must be pf, pf2, pf3, pf4 (ring depth) or nopf");
  }
  llvm::SmallVector<llvm::StringRef, 4> outf;
  f[5].split(outf, '+');
  auto out = parse_out(outf[0]);
  if (!out) return out.takeError();
  s.out = *out;
  for (size_t i = 1; i < outf.size(); ++i) {
    if (outf[i] == "t") s.scale = Scale::Tensor;
    else if (outf[i] == "rc") s.scale = Scale::RowCol;
    else if (outf[i] == "rowbias") s.bias = Bias::Row;
    else if (outf[i] == "colbias") s.bias = Bias::Col;
    else if (outf[i] == "ccol") s.c_col = true;
    else return err("out: unknown epilogue option " + quoted("+" + outf[i].str()) + " (allowed: +t, +rc, +rowbias, +colbias, +ccol)");
  }
  auto arch = parse_arch(f[6]);
  if (!arch) return arch.takeError();
  s.arch = *arch;
  if (auto e = validate(s)) return e;
  return s;
}

llvm::json::Value to_json(const OpSpec &s) {
  static_assert(field_count<OpSpec>() == 19,
                "an OpSpec field was added: write and read it here, and in to_string / parse_opspec if it is part of the kernel");
  return llvm::json::Object{{"op", op_name(s.op)},     {"lhs", s.lhs.str()},       {"rhs", s.rhs.str()},
                            {"v", s.v},                {"bsn", s.bsn},             {"prefetch", s.prefetch}, {"stages", s.stages}, {"split", s.split}, {"resident", s.resident}, {"decode", s.decode}, {"panel", s.panel}, {"warps", s.warps}, {"shares", s.shares},
                            {"out", out_name(s.out)},  {"scale", scale_name(s.scale)},
                            {"bias", bias_name(s.bias)}, {"c_col", s.c_col}, {"arch", arch_name(s.arch)}, {"pinned", int(s.pinned)}};
}

llvm::Expected<OpSpec> opspec_from_json(const llvm::json::Value &v) {
  const llvm::json::Object *o = v.getAsObject();
  if (!o) return err("opspec json: expected an object");
  auto need = [&](const char *k) { return err(llvm::Twine("opspec json: missing or mistyped field '") + k + "'"); };
  auto op = o->getString("op"), l = o->getString("lhs"), r = o->getString("rhs"), out = o->getString("out"),
       arch = o->getString("arch");
  auto vv = o->getInteger("v"), bsn = o->getInteger("bsn");
  auto pf = o->getBoolean("prefetch");
  if (!op) return need("op");
  if (!l) return need("lhs");
  if (!r) return need("rhs");
  if (!vv) return need("v");
  if (!bsn) return need("bsn");
  if (!pf) return need("prefetch");
  if (!out) return need("out");
  if (!arch) return need("arch");
  OpSpec s;
  auto kop = parse_op(*op);
  if (!kop) return kop.takeError();
  auto lhs = parse_elem(*l, "lhs");
  if (!lhs) return lhs.takeError();
  auto rhs = parse_elem(*r, "rhs");
  if (!rhs) return rhs.takeError();
  auto ot = parse_out(*out);
  if (!ot) return ot.takeError();
  auto cc = parse_arch(*arch);
  if (!cc) return cc.takeError();
  s.op = *kop;
  s.lhs = *lhs;
  s.rhs = *rhs;
  s.v = int(*vv);
  s.bsn = int(*bsn);
  s.prefetch = *pf;
  s.out = *ot;
  s.arch = *cc;
  if (auto st = o->getInteger("stages")) s.stages = int(*st);
  if (auto sp = o->getInteger("split")) s.split = int(*sp);
  if (auto rs = o->getBoolean("resident")) s.resident = *rs;
  if (auto dc = o->getBoolean("decode")) s.decode = *dc;
  if (auto pn = o->getInteger("panel")) {
    if (*pn < 0 || *pn > 32704) return need("panel");
    s.panel = int(*pn);
  }
  if (auto w = o->getInteger("warps")) {
    if (*w < 0 || *w > 32) return need("warps");
    s.warps = int(*w);
  }
  if (auto sh = o->getBoolean("shares")) s.shares = *sh;
  if (auto cc = o->getBoolean("c_col")) s.c_col = *cc;
  if (auto pn = o->getInteger("pinned")) {
    if (*pn < 0 || *pn > kPinAll) return need("pinned");
    s.pinned = uint8_t(*pn);
  }
  if (auto sc = o->getString("scale")) {
    auto v = parse_scale(*sc);
    if (!v) return v.takeError();
    s.scale = *v;
  }
  if (auto bi = o->getString("bias")) {
    auto v = parse_bias(*bi);
    if (!v) return v.takeError();
    s.bias = *v;
  }
  if (auto e = validate(s)) return e;
  return s;
}

uint64_t stable_hash(const OpSpec &s) { return hash64(to_string(s)); }

}  // namespace magicube
