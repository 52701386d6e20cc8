// The plans of an AOT bundle (runtime/aot_plans.h): the default list holds what the dispatch
// chooses for the issue's problems (so a first `magicube run` of them needs no compile), and
// spec lists are parsed with their errors naming the line. CPU only.
#include <random>
#include <set>
#include <string>

#include <gtest/gtest.h>

#include "compiler/planner.h"
#include "runtime/aot_plans.h"
#include "runtime/autotune.h"
#include "runtime/dispatch.h"
#include "runtime/synthetic.h"

using namespace magicube;

namespace {
std::set<std::string> keys_of(const std::vector<PlanTarget> &targets) {
  std::set<std::string> keys;
  for (const PlanTarget &t : targets) keys.insert(kernel_cache_key(t.plan, t.arch).hex);
  return keys;
}
}  // namespace

TEST(AotPlans, TheDefaultListHoldsTheDispatchsChoicesForTheIssuesProblems) {
  auto targets = default_aot_plans({90});
  ASSERT_TRUE(bool(targets)) << llvm::toString(targets.takeError());
  const std::set<std::string> keys = keys_of(*targets);
  EXPECT_EQ(keys.size(), targets->size()) << "distinct plans only";
  EXPECT_GT(targets->size(), 40u);
  for (const PlanTarget &t : *targets) EXPECT_EQ(t.arch, 90);
  // Another random matrix of the same kind than the list's (as `magicube run` draws one).
  std::mt19937_64 rng(12345);
  VectorSparse a = synthetic_sparse(rng, 4096, 4096, 0.9, 8);
  const DeviceFacts dev = DeviceFacts::reference_for(90);
  for (OpKind op : {OpKind::SpMM, OpKind::SDDMM})
    for (int bits : {8, 4}) {
      OpSpec s;
      s.op = op;
      s.lhs = s.rhs = ElemType{bits, true};
      s.v = 8;
      s.arch = 90;
      s.pinned = 0;
      for (int64_t nk : {64, 256, 1024}) {
        const MatrixSignature sig = op == OpKind::SpMM ? spmm_signature(a, nk) : sddmm_signature(a, nk);
        auto d = dispatch(s, &sig, dev);
        ASSERT_TRUE(bool(d)) << llvm::toString(d.takeError());
        EXPECT_TRUE(keys.count(kernel_cache_key(d->plan, 90).hex)) << to_string(d->plan.spec) << " on " << sig.key();
      }
      auto plain = dispatch(s, nullptr, dev);
      ASSERT_TRUE(bool(plain));
      EXPECT_TRUE(keys.count(kernel_cache_key(plain->plan, 90).hex)) << to_string(plain->plan.spec);
    }
}

TEST(AotPlans, ListsSkipCommentsRetargetAndNameTheBadLine) {
  const std::string text = "# the hot kernels\n\nspmm.s8xs8.v8.n128.pf.i32.sm_90\n  sddmm.s8xs8.v8.n128.pf.i32.sm_90 # x\n"
                           "spmm.s8xs8.v8.n128.pf.i32.sm_90\n";
  auto own = aot_plans_from_list(text, "l.txt", {});
  ASSERT_TRUE(bool(own)) << llvm::toString(own.takeError());
  ASSERT_EQ(own->size(), 2u);  // the repeated spec once
  EXPECT_EQ(to_string((*own)[0].plan.spec), "spmm.s8xs8.v8.n128.pf.i32.sm_90");
  EXPECT_EQ((*own)[1].arch, 90);
  auto both = aot_plans_from_list(text, "l.txt", {80, 90});
  ASSERT_TRUE(bool(both)) << llvm::toString(both.takeError());
  ASSERT_EQ(both->size(), 4u);
  EXPECT_EQ((*both)[0].arch, 80);
  EXPECT_EQ((*both)[0].plan.spec.arch, 80);
  // An unpinned spec gets the dispatch's knobs.
  auto unpinned = aot_plans_from_list("spmm.s4xs4.v8.i32.sm_90\n", "u.txt", {});
  ASSERT_TRUE(bool(unpinned)) << llvm::toString(unpinned.takeError());
  EXPECT_EQ(unpinned->size(), 1u);
  auto bad = aot_plans_from_list("spmm.s8xs8.v8.n128.pf.i32.sm_90\nspmm.s8xs8.v8.n100.pf.i32.sm_90\n", "bad.txt", {});
  ASSERT_FALSE(bool(bad));
  const std::string why = llvm::toString(bad.takeError());
  EXPECT_NE(why.find("bad.txt:2: 'spmm.s8xs8.v8.n100.pf.i32.sm_90'"), std::string::npos) << why;
  auto empty = aot_plans_from_list("# nothing\n\n", "e.txt", {});
  ASSERT_FALSE(bool(empty));
  EXPECT_NE(llvm::toString(empty.takeError()).find("no spec in the list"), std::string::npos);
}
