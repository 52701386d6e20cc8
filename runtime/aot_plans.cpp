#include "runtime/aot_plans.h"

#include <random>
#include <set>

#include "compiler/planner.h"
#include "runtime/autotune.h"
#include "runtime/dispatch.h"
#include "runtime/synthetic.h"
#include "support/text.h"

namespace magicube {
namespace {

llvm::Error err(const llvm::Twine &msg) { return llvm::createStringError(llvm::inconvertibleErrorCode(), msg); }

// Distinct (plan, arch) targets in the order first added.
struct Targets {
  std::vector<PlanTarget> list;
  std::set<std::string> keys;
  void add(const Plan &p, int arch) {
    if (keys.insert(kernel_cache_key(p, arch).hex).second) list.push_back(PlanTarget{p, arch});
  }
};

OpSpec base_spec(OpKind op, ElemType lhs, ElemType rhs, int v, int arch, int64_t reduction) {
  OpSpec s;
  s.op = op;
  s.lhs = lhs;
  s.rhs = rhs;
  s.v = v;
  s.arch = arch;
  s.pinned = 0;  // the dispatch chooses every knob
  s.out = reduction > 0 && max_exact_k(lhs, rhs) < reduction ? OutType::Int64 : OutType::Int32;
  return s;
}

// The SM counts the policy is asked about per arch (its grid rules depend on them): the
// arch's reference device, and for sm_90 the H100 PCIe's 114 SMs too.
std::vector<int> aot_sm_counts(int arch) {
  if (arch >= 90) return {0, 114};
  return {0};
}

}  // namespace

llvm::Expected<std::vector<PlanTarget>> default_aot_plans(llvm::ArrayRef<int> archs) {
  const ElemType s4{4, true}, s8{8, true}, s16{16, true};
  const std::vector<std::pair<ElemType, ElemType>> spmm = {{s8, s8}, {s8, s4}, {s4, s4}, {s16, s8}, {s16, s16}};
  const std::vector<std::pair<ElemType, ElemType>> sddmm = {{s8, s8}, {s4, s4}, {s16, s16}};
  const int vs[] = {8, 4, 2};
  const double sparsities[] = {0.5, 0.7, 0.8, 0.9, 0.95, 0.98};
  const int64_t ns[] = {1, 8, 16, 32, 48, 64, 128, 256, 512, 1024, 2048, 4096, 8192};  // 16..64: each decode tile
  const int64_t ks[] = {32, 64, 128, 256, 512, 1024};
  const int64_t mk = 4096;

  // The matrices' signatures, once per (V, sparsity): uniform patterns as the paper's.
  struct Sig {
    int v;
    MatrixSignature sig;
  };
  std::vector<Sig> spmm_sigs, sddmm_sigs;
  for (int v : vs)
    for (double s : sparsities) {
      std::mt19937_64 rng(uint64_t(v) * 1000 + uint64_t(s * 100));
      VectorSparse a = synthetic_sparse(rng, mk, mk, s, v);
      for (int64_t n : ns) spmm_sigs.push_back(Sig{v, spmm_signature(a, n)});
      for (int64_t k : ks) sddmm_sigs.push_back(Sig{v, sddmm_signature(a, k)});
    }

  Targets t;
  for (int arch : archs) {
    for (int sms : aot_sm_counts(arch)) {
      DeviceFacts dev = DeviceFacts::reference_for(arch);
      if (sms > 0) dev.sm_count = sms;
      auto add = [&](const OpSpec &spec, const MatrixSignature *sig) -> llvm::Error {
        auto d = dispatch(spec, sig, dev);
        if (!d) return err("the default AOT list: " + to_string(spec) + (sig ? " on " + sig->key() : std::string()) +
                           ": " + llvm::toString(d.takeError()));
        t.add(d->plan, arch);
        return llvm::Error::success();
      };
      for (OpKind op : {OpKind::SpMM, OpKind::SDDMM})
        for (const auto &[lhs, rhs] : op == OpKind::SpMM ? spmm : sddmm)
          for (int v : vs) {
            // Without a matrix: the dispatch's defaults (candidate 0 of the default knobs).
            if (auto e = add(base_spec(op, lhs, rhs, v, arch, 0), nullptr)) return e;
            for (const Sig &s : op == OpKind::SpMM ? spmm_sigs : sddmm_sigs) {
              if (s.v != v) continue;
              if (auto e = add(base_spec(op, lhs, rhs, v, arch, s.sig.k), &s.sig)) return e;
            }
          }
    }
  }
  return std::move(t.list);
}

llvm::Expected<std::vector<PlanTarget>> aot_plans_from_list(llvm::StringRef text, llvm::StringRef name,
                                                            llvm::ArrayRef<int> archs) {
  Targets t;
  llvm::SmallVector<llvm::StringRef, 64> lines;
  text.split(lines, '\n');
  for (size_t i = 0; i < lines.size(); ++i) {
    llvm::StringRef line = lines[i].split('#').first.trim();
    if (line.empty()) continue;
    auto where = [&](const std::string &why) {
      return err(name + ":" + llvm::Twine(i + 1) + ": " + quoted(line, 120) + ": " + why);
    };
    auto spec = parse_opspec(line);
    if (!spec) return where(llvm::toString(spec.takeError()));
    std::vector<int> targets(archs.begin(), archs.end());
    if (targets.empty()) targets.push_back(spec->arch);
    for (int arch : targets) {
      OpSpec s = *spec;
      s.arch = arch;
      if (auto e = validate(s)) return where("for " + arch_name(arch) + ": " + llvm::toString(std::move(e)));
      auto d = dispatch(s, nullptr, DeviceFacts::reference_for(arch));
      if (!d) return where("for " + arch_name(arch) + ": " + llvm::toString(d.takeError()));
      t.add(d->plan, arch);
    }
  }
  if (t.list.empty()) return err(name + ": no spec in the list (one canonical spec per line, e.g. spmm.s8xs8.v8.n128.pf.i32.sm_90)");
  return std::move(t.list);
}

}  // namespace magicube
