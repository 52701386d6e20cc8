// The autotuner (runtime/autotune.h): matrix signatures and their buckets, candidate
// enumeration, the on-disk store (round trip, atomic writes, corrupt records), lookups; on
// a GPU, a small SpMM tuned end to end (the chosen kernel bit-exact, the choice found again
// without timing) and `magicube tune` (skipped with a one-line reason where there is none).
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <functional>
#include <memory>
#include <random>
#include <set>
#include <thread>


#include "compiler/codegen.h"
#include "compiler/planner.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"
#include "runtime/autotune.h"
#include "runtime/dense_gemm.h"
#include "runtime/dispatch.h"
#include "runtime/magicube.h"
#include "runtime/reference.h"
#include "support/log.h"
#include "tests/cli_util.h"
#include "tests/fs_util.h"
#include "tests/fault_util.h"
#include "tests/gpu/gpu_env.h"
#include "tests/gpu/gpu_run.h"


using namespace magicube;
using namespace magicube::testing;

namespace {


// "" on success, else the error's message.
std::string msg(llvm::Error e) { return e ? llvm::toString(std::move(e)) : std::string(); }

std::vector<std::string> list_dir(const std::string &dir) {
  std::vector<std::string> names;
  std::error_code ec;
  for (llvm::sys::fs::directory_iterator it(dir, ec), end; it != end && !ec; it.increment(ec))
    names.push_back(llvm::sys::path::filename(it->path()).str());
  std::sort(names.begin(), names.end());
  return names;
}


// An M x K matrix whose vectors are present independently with probability 1 - sparsity.
VectorSparse bernoulli(uint64_t seed, int64_t m, int64_t k, int v, double sparsity, const ElemType &t) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> u(0.0, 1.0);
  VectorSparse a;
  a.rows = m;
  a.cols = k;
  a.v = v;
  a.block_ptr.push_back(0);
  const uint64_t span = uint64_t(t.max_value() - t.min_value() + 1);
  for (int64_t b = 0; b < (m + v - 1) / v; ++b) {
    for (int64_t c = 0; c < k; ++c) {
      if (u(rng) < sparsity) continue;
      a.col.push_back(int32_t(c));
      for (int r = 0; r < v; ++r) a.values.push_back(b * v + r < m ? t.min_value() + int64_t(rng() % span) : 0);
    }
    a.block_ptr.push_back(int64_t(a.col.size()));
  }
  return a;
}

const OpSpec kBase{OpKind::SpMM, {8, true}, {4, false}, 8, 64, true, OutType::Int32, 90};

// A record as tune would write it, with made-up times: candidate i takes 1 + i ms, except the
// one at `fastest`, and the last candidate is skipped.
TuneRecord fake_record(const OpSpec &base, const std::string &gpu, const MatrixSignature &sig, size_t fastest) {
  TuneRecord r;
  r.key = make_tune_key(base, gpu, sig);
  r.signature = sig;
  auto cands = tuning_candidates(base);
  EXPECT_TRUE(bool(cands)) << llvm::toString(cands.takeError());
  for (size_t i = 0; i < cands->size(); ++i) {
    CandidateTiming t;
    t.candidate = (*cands)[i];
    t.kernel = "magicube_kernel_" + std::to_string(i);
    t.ok = i + 1 < cands->size();
    if (t.ok) {
      t.median_ms = i == fastest ? 0.25 : 1.0 + double(i);
      t.min_ms = t.median_ms * 0.9;
      t.max_ms = t.median_ms * 1.5;
    } else {
      t.skipped = "compile: made-up failure";
    }
    r.timings.push_back(t);
  }
  r.choice.candidate = r.timings[fastest].candidate;
  r.choice.median_ms = r.timings[fastest].median_ms;
  r.warmup = 3;
  r.repeat = 7;
  r.created = 1700000000;
  return r;
}

}  // namespace

// ---- signatures ----------------------------------------------------------------------------

TEST(Autotune, SameShapeAndSparsityShareAKey) {
  ElemType s8{8, true};
  for (double sparsity : {0.5, 0.7, 0.9, 0.95}) {
    MatrixSignature a = spmm_signature(bernoulli(1, 512, 1024, 8, sparsity, s8), 256);
    MatrixSignature b = spmm_signature(bernoulli(2, 512, 1024, 8, sparsity, s8), 256);
    EXPECT_NE(a.vectors, b.vectors) << "the two matrices should differ";
    EXPECT_EQ(a.key(), b.key()) << "sparsity " << sparsity;
    EXPECT_EQ(make_tune_key(kBase, "GPU", a), make_tune_key(kBase, "GPU", b));
  }
}

TEST(Autotune, DifferentSparsityShapeOrNDoesNotShareAKey) {
  ElemType s8{8, true};
  const std::string k90 = spmm_signature(bernoulli(1, 512, 1024, 8, 0.9, s8), 256).key();
  for (double sparsity : {0.5, 0.7, 0.8, 0.95})
    EXPECT_NE(spmm_signature(bernoulli(1, 512, 1024, 8, sparsity, s8), 256).key(), k90) << sparsity;
  EXPECT_NE(spmm_signature(bernoulli(1, 512, 1024, 8, 0.9, s8), 512).key(), k90);    // N
  EXPECT_NE(spmm_signature(bernoulli(1, 1024, 1024, 8, 0.9, s8), 256).key(), k90);   // M
  EXPECT_NE(spmm_signature(bernoulli(1, 512, 2048, 8, 0.9, s8), 256).key(), k90);    // K
  EXPECT_NE(spmm_signature(bernoulli(1, 512, 1024, 4, 0.9, s8), 256).key(), k90);    // V
}

TEST(Autotune, SignatureStatistics) {
  // Row-block lengths 4, 4, 4, 4: mean 4, max 4, cv 0.
  VectorSparse a;
  a.rows = 32;
  a.cols = 64;
  a.v = 8;
  a.block_ptr = {0, 4, 8, 12, 16};
  a.col.resize(16);
  for (int i = 0; i < 16; ++i) a.col[i] = i % 4;
  a.values.assign(16 * 8, 1);
  MatrixSignature s = spmm_signature(a, 100);
  EXPECT_EQ(s.m, 32);
  EXPECT_EQ(s.k, 64);
  EXPECT_EQ(s.n, 100);
  EXPECT_EQ(s.v, 8);
  EXPECT_EQ(s.vectors, 16);
  EXPECT_EQ(s.blocks, 4);
  EXPECT_DOUBLE_EQ(s.mean, 4.0);
  EXPECT_DOUBLE_EQ(s.max, 4.0);
  EXPECT_DOUBLE_EQ(s.cv, 0.0);
  EXPECT_EQ(s.mean_bucket, 8);  // 4 * log2(4)
  EXPECT_EQ(s.max_bucket, 0);
  EXPECT_EQ(s.cv_bucket, 0);
  EXPECT_EQ(s.key(), "m32.k64.n100.v8.mean8.max0.cv0");
  // Lengths 0, 0, 0, 16: the longest is 4x the mean (2 octaves), cv sqrt(3).
  a.block_ptr = {0, 0, 0, 0, 16};
  s = spmm_signature(a, 100);
  EXPECT_EQ(s.max_bucket, 4);
  EXPECT_EQ(s.cv_bucket, 6);  // floor(4 * 1.732)
  // SDDMM: the mask is M x N, K is the reduction.
  MatrixSignature d = sddmm_signature(a, 77);
  EXPECT_EQ(d.m, 32);
  EXPECT_EQ(d.n, 64);
  EXPECT_EQ(d.k, 77);
  // An empty matrix.
  VectorSparse e;
  e.rows = 8;
  e.cols = 8;
  e.v = 8;
  e.block_ptr = {0, 0};
  EXPECT_EQ(spmm_signature(e, 8).mean_bucket, -1);
  // JSON round trip.
  auto back = signature_from_json(to_json(s));
  ASSERT_TRUE(bool(back)) << llvm::toString(back.takeError());
  EXPECT_EQ(back->key(), s.key());
  EXPECT_EQ(back->vectors, s.vectors);
  EXPECT_DOUBLE_EQ(back->cv, s.cv);
}

TEST(Autotune, KeyIgnoresTheKnobsButNotTheOpOrGpu) {
  MatrixSignature sig = spmm_signature(bernoulli(1, 64, 128, 8, 0.5, {8, true}), 64);
  TuneKey k = make_tune_key(kBase, "NVIDIA H100 80GB HBM3", sig);
  OpSpec other = kBase;
  other.bsn = 128;
  other.prefetch = false;
  EXPECT_EQ(make_tune_key(other, "NVIDIA H100 80GB HBM3", sig), k);
  EXPECT_NE(make_tune_key(kBase, "NVIDIA A100-SXM4-80GB", sig), k);
  for (auto change : std::vector<std::function<void(OpSpec &)>>{
           [](OpSpec &s) { s.lhs = {8, false}; }, [](OpSpec &s) { s.rhs = {8, false}; },
           [](OpSpec &s) { s.out = OutType::Int64; }, [](OpSpec &s) { s.arch = 80; },
           [](OpSpec &s) { s.op = OpKind::SDDMM; }}) {
    OpSpec s = kBase;
    change(s);
    EXPECT_NE(make_tune_key(s, "NVIDIA H100 80GB HBM3", sig).file_name(), k.file_name()) << to_string(s);
  }
  EXPECT_EQ(k.generator, kGeneratorVersion);
  EXPECT_EQ(k.file_name().substr(0, k.op.size()), k.op);
  EXPECT_EQ(llvm::StringRef(k.file_name()).endswith(".json"), true);
}

// ---- candidates ----------------------------------------------------------------------------

TEST(Autotune, CandidatesAreValidUniqueAndKeepTheBase) {
  for (OpSpec base : {kBase, OpSpec{OpKind::SpMM, {12, true}, {4, false}, 4, 32, false, OutType::Int64, 80},
                      OpSpec{OpKind::SDDMM, {8, false}, {8, true}, 2, 64, true, OutType::Int32, 86},
                      OpSpec{OpKind::SpMM, {8, true}, {8, true}, 8, 64, true, OutType::F16, 90, Scale::RowCol,
                             Bias::Col}}) {
    auto cands = tuning_candidates(base);
    ASSERT_TRUE(bool(cands)) << llvm::toString(cands.takeError());
    auto plans = plan_candidates(base);
    ASSERT_TRUE(bool(plans));
    // 4 BSn x prefetch (SpMM: ring depth 4, 3, 2 or off; SDDMM: on or off) x plans, and for
    // SpMM the same again with split 2 where the plan's kernel can split
    const size_t pf = base.op == OpKind::SpMM ? 4 : 2;
    size_t unsplit = 0, split = 0;
    for (const Candidate &c : *cands) {
      if (c.spec.resident) continue;  // counted in ResidentCandidatesOnlyWhereBuildable
      (c.spec.split == 1 ? unsplit : split) += 1;
      if (c.spec.split == 2) {
        auto ps = plan_candidates(c.spec);
        ASSERT_TRUE(bool(ps));
        EXPECT_EQ((*ps)[c.plan].launch.warp_groups, 2) << c.str();
      }
    }
    EXPECT_EQ(unsplit, 4 * pf * plans->size()) << to_string(base);
    EXPECT_EQ(split > 0, base.op == OpKind::SpMM) << to_string(base);
    std::set<std::string> seen;
    std::set<int> bsns, prefetches;
    for (const Candidate &c : *cands) {
      EXPECT_EQ(msg(validate(c.spec)), "") << to_string(c.spec);
      EXPECT_TRUE(seen.insert(to_string(c.spec) + "/" + c.plan_id).second) << "duplicate " << c.str();
      EXPECT_EQ(c.spec.op, base.op);
      EXPECT_EQ(c.spec.lhs, base.lhs);
      EXPECT_EQ(c.spec.rhs, base.rhs);
      EXPECT_EQ(c.spec.v, base.v);
      EXPECT_EQ(c.spec.out, base.out);
      EXPECT_EQ(c.spec.arch, base.arch);
      EXPECT_EQ(c.spec.scale, base.scale);
      EXPECT_EQ(c.spec.bias, base.bias);
      EXPECT_EQ(knobs_of(c.spec), c.knobs);
      bsns.insert(c.knobs.bsn);
      prefetches.insert(c.knobs.prefetch);
      auto ps = plan_candidates(c.spec);
      ASSERT_TRUE(bool(ps));
      ASSERT_GE(c.plan, 0);
      ASSERT_LT(size_t(c.plan), ps->size());
      EXPECT_EQ(plan_id((*ps)[c.plan]), c.plan_id);
    }
    // 48 only with resident B of 8-bit planes (three tiles of 48-byte slice rows) and the decode
    // kernel (which packs every B plane as bytes, 4-bit ones too); the other kernels skip it.
    // 16 likewise (16-byte rows of 8-bit B: resident B and the decode kernel).
    std::set<int> want{32, 64, 128, 256};
    if (base.op == OpKind::SpMM) want.insert(48), want.insert(16);
    EXPECT_EQ(bsns, want) << to_string(base);
    for (const Candidate &c : *cands)
      if (c.knobs.bsn == 48 || c.knobs.bsn == 16) {
        EXPECT_TRUE(c.spec.resident) << c.str();
      }
    EXPECT_EQ(prefetches, base.op == OpKind::SpMM ? (std::set<int>{0, 2, 3, 4}) : (std::set<int>{0, 1}));
  }
}

// Resident B is a tuning candidate where its kernel can be built, and only there; pinning
// the knob to 0 leaves it out.
TEST(Autotune, ResidentCandidatesOnlyWhereBuildable) {
  auto all = tuning_candidates(kBase);
  ASSERT_TRUE(bool(all));
  EXPECT_TRUE(std::any_of(all->begin(), all->end(), [](const Candidate &c) { return c.spec.resident; }));
  TuneOptions off;
  off.knob_values["resident"] = {0};
  auto plain = tuning_candidates(kBase, off);
  ASSERT_TRUE(bool(plain));
  for (const Candidate &c : *plain) EXPECT_FALSE(c.spec.resident) << c.str();
  auto sddmm = tuning_candidates(OpSpec{OpKind::SDDMM, {8, true}, {8, true}, 8, 64, true, OutType::Int32, 90});
  ASSERT_TRUE(bool(sddmm));
  for (const Candidate &c : *sddmm) EXPECT_FALSE(c.spec.resident) << c.str();
  TuneOptions o;
  o.knob_values["resident"] = {1};
  auto cands = tuning_candidates(kBase, o);
  ASSERT_TRUE(bool(cands)) << llvm::toString(cands.takeError());
  ASSERT_FALSE(cands->empty());
  std::set<int> bsns;
  for (const Candidate &c : *cands) {
    EXPECT_TRUE(c.spec.resident) << c.str();
    if (c.spec.decode) continue;  // counted in DecodeCandidatesOnlyWhereBuildable
    EXPECT_EQ(c.spec.split, 1);
    EXPECT_TRUE(c.spec.prefetch);
    bsns.insert(c.spec.bsn);
    auto ps = plan_candidates(c.spec);
    ASSERT_TRUE(bool(ps));
    EXPECT_EQ((*ps)[c.plan].launch.family, KernelFamily::SpmmResident) << c.str();
    EXPECT_NE(c.run_flags().find("--resident"), std::string::npos);
  }
  EXPECT_EQ(bsns, (std::set<int>{32, 64, 128})) << "4-bit B: no 24-byte rows at BSn 48";
  // A record written before the knob existed still reads (resident 0).
  auto k = knobs_from_json(llvm::json::Object{{"bsn", 64}, {"prefetch", 1}, {"split", 1}});
  ASSERT_TRUE(bool(k)) << llvm::toString(k.takeError());
  EXPECT_EQ(k->resident, 0);
}

TEST(Autotune, KnobValuesCanBePinnedAndAreChecked) {
  TuneOptions o;
  o.knob_values["bsn"] = {128, 128};
  o.knob_values["prefetch"] = {0};
  o.knob_values["split"] = {1};
  auto cands = tuning_candidates(kBase, o);
  ASSERT_TRUE(bool(cands)) << llvm::toString(cands.takeError());
  auto plans = plan_candidates(kBase);
  ASSERT_TRUE(bool(plans));
  EXPECT_EQ(cands->size(), plans->size());
  for (const Candidate &c : *cands) {
    EXPECT_EQ(c.spec.bsn, 128);
    EXPECT_FALSE(c.spec.prefetch);
    EXPECT_EQ(c.run_flags(), "--bsn=128 --no-prefetch --candidate=" + std::to_string(c.plan));
  }
  TuneOptions unknown;
  unknown.knob_values["blocks"] = {4};
  auto u = tuning_candidates(kBase, unknown);
  ASSERT_FALSE(bool(u));
  EXPECT_NE(llvm::toString(u.takeError()).find("unknown knob 'blocks'"), std::string::npos);
  TuneOptions empty;
  empty.knob_values["bsn"] = {};
  auto e = tuning_candidates(kBase, empty);
  ASSERT_FALSE(bool(e));
  EXPECT_NE(llvm::toString(e.takeError()).find("bsn"), std::string::npos);
  TuneOptions bad;
  bad.knob_values["bsn"] = {40};
  auto b = tuning_candidates(kBase, bad);
  ASSERT_FALSE(bool(b));
  EXPECT_NE(llvm::toString(b.takeError()).find("bsn"), std::string::npos);
  // A resident-only width pinned with resident off leaves nothing to time.
  TuneOptions narrow;
  narrow.knob_values["bsn"] = {48};
  narrow.knob_values["resident"] = {0};
  auto nr = tuning_candidates(kBase, narrow);
  if (nr) {
    EXPECT_TRUE(nr->empty());
  } else {
    EXPECT_NE(llvm::toString(nr.takeError()).find("48"), std::string::npos);
  }
  // A spec that cannot be planned at all.
  OpSpec wide = kBase;
  wide.lhs = {16, false};
  wide.rhs = {16, false};
  auto w = tuning_candidates(wide);
  ASSERT_FALSE(bool(w));
  EXPECT_NE(llvm::toString(w.takeError()).find("max_exact_k"), std::string::npos);
}

TEST(Autotune, KnobsJson) {
  Knobs k{128, 0};
  auto back = knobs_from_json(to_json(k));
  ASSERT_TRUE(bool(back)) << llvm::toString(back.takeError());
  EXPECT_EQ(*back, k);
  EXPECT_EQ(with_knobs(kBase, k).bsn, 128);
  EXPECT_FALSE(with_knobs(kBase, k).prefetch);
  auto missing = knobs_from_json(llvm::json::Object{{"bsn", 64}});
  ASSERT_FALSE(bool(missing));
  EXPECT_NE(llvm::toString(missing.takeError()).find("prefetch"), std::string::npos);
}

// ---- the store -----------------------------------------------------------------------------

TEST(Autotune, StoreRoundTrip) {
  TempDir tmp;
  TuneStore store = TuneStore::open(tmp.path() + "/tuning");  // created by save
  MatrixSignature sig = spmm_signature(bernoulli(3, 256, 512, 8, 0.8, {8, true}), 128);
  TuneRecord rec = fake_record(kBase, "Test GPU", sig, 5);
  ASSERT_FALSE(bool(store.load(rec.key)));
  ASSERT_EQ(msg(store.save(rec)), "");
  EXPECT_EQ(list_dir(store.path()), std::vector<std::string>{rec.key.file_name()});
  auto back = store.load(rec.key);
  ASSERT_TRUE(back.has_value());
  EXPECT_EQ(back->key, rec.key);
  EXPECT_EQ(back->signature.key(), sig.key());
  EXPECT_EQ(back->choice.candidate.spec, rec.choice.candidate.spec);
  EXPECT_EQ(back->choice.candidate.knobs, rec.choice.candidate.knobs);
  EXPECT_EQ(back->choice.candidate.plan, rec.choice.candidate.plan);
  EXPECT_EQ(back->choice.candidate.plan_id, rec.choice.candidate.plan_id);
  EXPECT_DOUBLE_EQ(back->choice.median_ms, 0.25);
  ASSERT_EQ(back->timings.size(), rec.timings.size());
  for (size_t i = 0; i < rec.timings.size(); ++i) {
    EXPECT_EQ(back->timings[i].candidate.spec, rec.timings[i].candidate.spec);
    EXPECT_EQ(back->timings[i].candidate.plan_id, rec.timings[i].candidate.plan_id);
    EXPECT_EQ(back->timings[i].kernel, rec.timings[i].kernel);
    EXPECT_EQ(back->timings[i].ok, rec.timings[i].ok);
    EXPECT_EQ(back->timings[i].skipped, rec.timings[i].skipped);
    EXPECT_DOUBLE_EQ(back->timings[i].median_ms, rec.timings[i].median_ms);
    EXPECT_DOUBLE_EQ(back->timings[i].min_ms, rec.timings[i].min_ms);
    EXPECT_DOUBLE_EQ(back->timings[i].max_ms, rec.timings[i].max_ms);
  }
  EXPECT_EQ(back->warmup, 3);
  EXPECT_EQ(back->repeat, 7);
  EXPECT_EQ(back->created, 1700000000);
  // Readable JSON with every candidate's time.
  std::string text = read_file(store.record_path(rec.key));
  EXPECT_NE(text.find("\"median_ms\""), std::string::npos);
  EXPECT_NE(text.find("made-up failure"), std::string::npos);
  EXPECT_NE(text.find("\"run_flags\""), std::string::npos);
}

TEST(Autotune, StoreWritesAtomically) {
  TempDir tmp;
  TuneStore store = TuneStore::open(tmp.path());
  MatrixSignature sig = spmm_signature(bernoulli(3, 256, 512, 8, 0.8, {8, true}), 128);
  // Writers of one key race; readers see a whole record at every moment.
  std::vector<TuneRecord> recs;
  for (size_t i = 0; i < 8; ++i) recs.push_back(fake_record(kBase, "Test GPU", sig, i));
  const TuneKey key = recs[0].key;
  ASSERT_EQ(msg(store.save(recs[0])), "");
  std::atomic<bool> done{false};
  std::atomic<int> bad_reads{0};
  std::thread reader([&] {
    while (!done) {
      auto r = store.load(key);
      if (!r) ++bad_reads;
    }
  });
  std::vector<std::thread> writers;
  std::atomic<int> failures{0};
  for (size_t i = 0; i < recs.size(); ++i)
    writers.emplace_back([&, i] {
      for (int j = 0; j < 10; ++j)
        if (auto e = store.save(recs[i])) {
          llvm::consumeError(std::move(e));
          ++failures;
        }
    });
  for (auto &w : writers) w.join();
  done = true;
  reader.join();
  EXPECT_EQ(failures, 0);
  EXPECT_EQ(bad_reads, 0);
  // One whole record, no temp files left behind.
  EXPECT_EQ(list_dir(store.path()), std::vector<std::string>{key.file_name()});
  auto last = store.load(key);
  ASSERT_TRUE(last.has_value());
  bool one_of = false;
  for (const TuneRecord &r : recs) one_of |= r.choice.candidate.str() == last->choice.candidate.str();
  EXPECT_TRUE(one_of);
}

TEST(Autotune, CorruptRecordsAreIgnoredWithAWarning) {
  TempDir tmp;
  TuneStore store = TuneStore::open(tmp.path());
  MatrixSignature sig = spmm_signature(bernoulli(3, 256, 512, 8, 0.8, {8, true}), 128);
  TuneRecord rec = fake_record(kBase, "Test GPU", sig, 1);
  const std::string file = store.record_path(rec.key);
  ASSERT_EQ(msg(store.save(rec)), "");
  const std::string good = read_file(file);
  for (const std::string &bad : {std::string("{\"format\": \"magicube-tuning-1\", \"key\": "),  // truncated
                                 std::string("not json at all"), std::string("{\"format\": \"other\"}"),
                                 good.substr(0, good.size() / 2), std::string()}) {
    write_file(file, bad);
    LogCapture cap;
    EXPECT_FALSE(store.load(rec.key).has_value()) << bad;
    EXPECT_FALSE(lookup_tuned(store, kBase, sig, "Test GPU").has_value());
    std::string logged = cap.text();
    EXPECT_NE(logged.find("corrupt tuning record"), std::string::npos) << logged;
    EXPECT_NE(logged.find(file), std::string::npos) << logged;
  }
  // A whole record of another key copied over this one's name.
  TuneRecord other = fake_record(kBase, "Another GPU", sig, 1);
  ASSERT_EQ(msg(store.save(other)), "");
  write_file(file, read_file(store.record_path(other.key)));
  {
    LogCapture cap;
    EXPECT_FALSE(store.load(rec.key).has_value());
    EXPECT_NE(cap.text().find("another key"), std::string::npos) << cap.text();
  }
  // The next save replaces the corrupt file.
  ASSERT_EQ(msg(store.save(rec)), "");
  EXPECT_TRUE(store.load(rec.key).has_value());
}

// A record nested 40,000 levels deep (80 KB) overflowed the parser's stack; it and an
// oversized one are now refused before parsing, with a warning naming the file.
TEST(Autotune, DeepOrHugeRecordsAreRefusedBeforeParsing) {
  const std::string deep = std::string(40000, '[') + std::string(40000, ']');
  auto r = parse_tune_record(deep);
  ASSERT_FALSE(bool(r));
  EXPECT_NE(llvm::toString(r.takeError()).find("nested deeper than 64 levels"), std::string::npos);
  std::string objects;
  for (int i = 0; i < 40000; ++i) objects += "{\"a\":";
  auto o = parse_tune_record(objects + "1" + std::string(40000, '}'));
  ASSERT_FALSE(bool(o));
  EXPECT_NE(llvm::toString(o.takeError()).find("nested deeper"), std::string::npos);
  // Brackets inside strings are not nesting.
  auto str = parse_tune_record("{\"format\": \"" + std::string(1000, '[') + "\\\"{\"}");
  ASSERT_FALSE(bool(str));
  EXPECT_NE(llvm::toString(str.takeError()).find("format"), std::string::npos);

  TempDir tmp;
  TuneStore store = TuneStore::open(tmp.path());
  MatrixSignature sig = spmm_signature(bernoulli(3, 256, 512, 8, 0.8, {8, true}), 128);
  TuneRecord rec = fake_record(kBase, "Test GPU", sig, 1);
  const std::string file = store.record_path(rec.key);
  write_file(file, deep);
  {
    LogCapture cap;
    std::string failure = in_child([&]() -> std::string {
      return store.load(rec.key) || lookup_tuned(store, kBase, sig, "Test GPU") ? "served" : "";
    });
    EXPECT_EQ(failure, "");  // before: killed by signal 11
    EXPECT_FALSE(store.load(rec.key).has_value());
    EXPECT_NE(cap.text().find("nested deeper than 64 levels"), std::string::npos) << cap.text();
    EXPECT_NE(cap.text().find(file), std::string::npos) << cap.text();
  }
  ASSERT_EQ(::truncate(file.c_str(), off_t(kMaxRecordBytes + 1)), 0);
  {
    LogCapture cap;
    EXPECT_FALSE(store.load(rec.key).has_value());
    EXPECT_NE(cap.text().find("larger than the 16.0 MiB bound"), std::string::npos) << cap.text();
  }
}

// Records are read like cache entries: never through a symlink, never from a FIFO (no
// hang), only from a private directory; save refuses a shared one.
TEST(Autotune, RecordsOnlyFromRegularFilesInAPrivateDir) {
  TempDir tmp;
  const std::string dir = tmp.path() + "/tuning";
  TuneStore store = TuneStore::open(dir);
  MatrixSignature sig = spmm_signature(bernoulli(3, 256, 512, 8, 0.8, {8, true}), 128);
  TuneRecord rec = fake_record(kBase, "Test GPU", sig, 1);
  const std::string file = store.record_path(rec.key);
  ASSERT_EQ(msg(store.save(rec)), "");
  const std::string elsewhere = tmp.path() + "/elsewhere.json";
  ASSERT_EQ(::rename(file.c_str(), elsewhere.c_str()), 0);
  ASSERT_EQ(::symlink(elsewhere.c_str(), file.c_str()), 0);
  {
    LogCapture cap;
    EXPECT_FALSE(store.load(rec.key).has_value()) << "a record was read through a symlink";
    EXPECT_NE(cap.text().find("symlink"), std::string::npos) << cap.text();
  }
  ::unlink(file.c_str());
  ASSERT_EQ(::mkfifo(file.c_str(), 0600), 0);
  EXPECT_EQ(in_child([&]() -> std::string { return store.load(rec.key) ? "served" : ""; }), "");
  ::unlink(file.c_str());
  ASSERT_EQ(msg(store.save(rec)), "");
  ASSERT_TRUE(store.load(rec.key).has_value());
  ASSERT_EQ(::chmod(dir.c_str(), 0777), 0);
  {
    LogCapture cap;
    EXPECT_FALSE(store.load(rec.key).has_value()) << "a record was read from a world-writable dir";
    EXPECT_NE(cap.text().find("writable by every user"), std::string::npos) << cap.text();
  }
  std::string saved = msg(store.save(rec));
  EXPECT_NE(saved.find("writable by every user"), std::string::npos) << saved;
  ::chmod(dir.c_str(), 0700);
}

// The tuning-record fuzzer's seed (fuzz/corpus/tune_record/record.json) is a valid record,
// so the fuzzer starts from inputs that reach the field readers.
TEST(Autotune, FuzzSeedRecordParses) {
  std::string text = read_file(std::string(MAGICUBE_SOURCE_DIR) + "/fuzz/corpus/tune_record/record.json");
  ASSERT_FALSE(text.empty());
  auto r = parse_tune_record(text);
  ASSERT_TRUE(bool(r)) << llvm::toString(r.takeError());
  EXPECT_EQ(r->timings.size(), 3u);
  EXPECT_EQ(r->choice.candidate.spec.bsn, 128);
}

TEST(Autotune, StoreSaveErrorNamesTheFile) {
  TempDir tmp;
  write_file(tmp.path() + "/file", "x");
  TuneStore store = TuneStore::open(tmp.path() + "/file/tuning");  // under a regular file
  MatrixSignature sig = spmm_signature(bernoulli(3, 64, 128, 8, 0.8, {8, true}), 64);
  auto e = store.save(fake_record(kBase, "Test GPU", sig, 0));
  ASSERT_TRUE(bool(e));
  EXPECT_NE(llvm::toString(std::move(e)).find(tmp.path() + "/file/tuning"), std::string::npos);
}

TEST(Autotune, DefaultStoreIsUnderTheCacheDir) {
  TempDir tmp;
  const char *old = std::getenv("MAGICUBE_CACHE_DIR");
  std::string saved = old ? old : "";
  setenv("MAGICUBE_CACHE_DIR", tmp.path().c_str(), 1);
  auto p = TuneStore::default_path();
  ASSERT_TRUE(bool(p)) << llvm::toString(p.takeError());
  EXPECT_EQ(*p, tmp.path() + "/tuning");
  // Through the default store: a miss, then a hit once a record is there.
  MatrixSignature sig = spmm_signature(bernoulli(4, 128, 256, 8, 0.7, {8, true}), 64);
  EXPECT_FALSE(lookup_tuned(kBase, sig, "Test GPU").has_value());
  TuneRecord rec = fake_record(kBase, "Test GPU", sig, 2);
  ASSERT_EQ(msg(TuneStore::open(*p).save(rec)), "");
  auto c = lookup_tuned(kBase, sig, "Test GPU");
  ASSERT_TRUE(c.has_value());
  EXPECT_EQ(c->candidate.plan_id, rec.choice.candidate.plan_id);
  if (old) setenv("MAGICUBE_CACHE_DIR", saved.c_str(), 1);
  else unsetenv("MAGICUBE_CACHE_DIR");
}

// ---- the dispatch: a stored choice is what plan, run and the API get ----------------------

// A uniform matrix of `per` vectors in each row-block, as `magicube run --m --k --sparsity`
// builds it (the signature depends only on the row-block lengths).
VectorSparse uniform_rows(int64_t m, int64_t k, int v, int64_t per) {
  VectorSparse a;
  a.rows = m, a.cols = k, a.v = v;
  a.block_ptr.push_back(0);
  for (int64_t b = 0; b < (m + v - 1) / v; ++b) {
    for (int64_t i = 0; i < per; ++i) a.col.push_back(int32_t(i));
    a.block_ptr.push_back(int64_t(a.col.size()));
  }
  a.values.assign(a.col.size() * size_t(v), 1);
  return a;
}

TEST(Dispatch, StoredChoiceIsWhatPlanRunAndTheApiGet) {
  TempDir tmp;
  const char *old = std::getenv("MAGICUBE_CACHE_DIR");
  std::string saved = old ? old : "";
  setenv("MAGICUBE_CACHE_DIR", tmp.path().c_str(), 1);
  // --m=512 --k=512 --sparsity=0.7 --n=256: 154 vectors in each of 64 row-blocks.
  const VectorSparse a = uniform_rows(512, 512, 8, 154);
  const MatrixSignature sig = spmm_signature(a, 256);
  OpSpec unpinned = kBase;
  unpinned.pinned = 0;
  const DeviceFacts dev = DeviceFacts::reference_for(90);
  // No record: the policy.
  auto pol = dispatch(unpinned, &sig, dev);
  ASSERT_TRUE(bool(pol)) << llvm::toString(pol.takeError());
  EXPECT_EQ(pol->source, ChoiceSource::Policy);
  EXPECT_NE(pol->chosen_by().find("chosen by: policy ("), std::string::npos) << pol->chosen_by();
  // A record for the reference GPU whose choice differs from the policy's.
  auto cands = tuning_candidates(kBase);
  ASSERT_TRUE(bool(cands));
  size_t pick = 0;
  while (pick < cands->size() && (*cands)[pick].spec == pol->plan.spec) ++pick;
  ASSERT_LT(pick, cands->size() - 1);
  TuneRecord rec = fake_record(kBase, dev.name, sig, pick);
  auto store = TuneStore::open_default();
  ASSERT_TRUE(bool(store));
  ASSERT_EQ(msg(store->save(rec)), "");
  const std::string path = store->record_path(rec.key);
  auto tuned = dispatch(unpinned, &sig, dev);
  ASSERT_TRUE(bool(tuned)) << llvm::toString(tuned.takeError());
  EXPECT_EQ(tuned->source, ChoiceSource::TunedRecord);
  EXPECT_EQ(tuned->plan.spec, rec.choice.candidate.spec);
  EXPECT_EQ(tuned->chosen_by(), "chosen by: tuned record " + path);
  // The C++ API: Spmm for this matrix with nothing pinned gets the record's plan.
  magicube::Spmm op(unpinned, a, 256);
  EXPECT_EQ(op.plan().spec, rec.choice.candidate.spec);
  EXPECT_EQ(op.chosen_by(), "chosen by: tuned record " + path);
  EXPECT_EQ(magicube::Spmm(parse_spec(to_string(unpinned)), a, 256).plan().spec, rec.choice.candidate.spec)
      << "the spec text without tile and prefetch fields pins nothing";
  // Every knob pinned: the flags, not the record.
  auto flags = dispatch(kBase, &sig, dev);
  ASSERT_TRUE(bool(flags));
  EXPECT_EQ(flags->source, ChoiceSource::Flags);
  EXPECT_EQ(flags->plan.spec, kBase);
  // magicube plan with the matrix flags prints the record's plan and where it came from.
  CliResult r = run_shell(magicube_cli() + " plan --lhs=" + kBase.lhs.str() + " --rhs=" + kBase.rhs.str() +
                          " --v=8 --m=512 --k=512 --sparsity=0.7 --n=256 2>&1");
  EXPECT_EQ(r.status, 0) << r.output;
  EXPECT_NE(r.output.find("plan " + to_string(rec.choice.candidate.spec)), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("chosen by: tuned record " + path), std::string::npos) << r.output;
  CliResult pinned = run_shell(magicube_cli() + " plan --lhs=" + kBase.lhs.str() + " --rhs=" + kBase.rhs.str() +
                               " --v=8 --bsn=64 --stages=0 --split=1 --resident=false --m=512 --k=512 --sparsity=0.7 --n=256 2>&1");
  EXPECT_NE(pinned.output.find("chosen by: flags"), std::string::npos) << pinned.output;
  if (old) setenv("MAGICUBE_CACHE_DIR", saved.c_str(), 1);
  else unsetenv("MAGICUBE_CACHE_DIR");
}

// ---- lookups -------------------------------------------------------------------------------

// The dispatch with no knob pinned on a GPU named `gpu`: the stored choice, else the policy.
llvm::Expected<Plan> tuned_plan(const TuneStore &store, OpSpec base, const MatrixSignature &sig, const std::string &gpu) {
  base.pinned = 0;
  auto d = dispatch(base, &sig, DeviceFacts{gpu, 132, false}, -1, &store);
  if (!d) return d.takeError();
  return std::move(d->plan);
}

TEST(Autotune, LookupMissFallsBackToThePolicy) {
  TempDir tmp;
  TuneStore store = TuneStore::open(tmp.path() + "/none");  // does not exist
  MatrixSignature sig = spmm_signature(bernoulli(5, 128, 256, 8, 0.9, {8, true}), 64);
  EXPECT_FALSE(lookup_tuned(store, kBase, sig, "Test GPU").has_value());
  auto p = tuned_plan(store, kBase, sig, "Test GPU");
  ASSERT_TRUE(bool(p)) << llvm::toString(p.takeError());
  OpSpec unpinned = kBase;
  unpinned.pinned = 0;
  auto best = plan(policy_spec(unpinned, &sig, DeviceFacts{"Test GPU", 132, false}).spec);
  ASSERT_TRUE(bool(best));
  EXPECT_EQ(p->kernel_name(), best->kernel_name());
  EXPECT_EQ(plan_id(*p), plan_id(*best));
  EXPECT_FALSE(llvm::sys::fs::exists(store.path())) << "a lookup must not create the store";
  // Invalid specs are refused, not looked up.
  OpSpec bad = kBase;
  bad.v = 3;
  auto e = tuned_plan(store, bad, sig, "Test GPU");
  ASSERT_FALSE(bool(e));
  EXPECT_NE(llvm::toString(e.takeError()).find("v"), std::string::npos);
}

namespace {
// An M x K weight of uniform V=8 row-blocks at a sparsity (the llm grid's matrices) times N.
MatrixSignature uniform_signature(int64_t m, int64_t k, int64_t n, double sparsity) {
  MatrixSignature g;
  g.m = m, g.k = k, g.n = n, g.v = 8;
  g.blocks = m / 8;
  g.mean = g.max = std::round((1 - sparsity) * double(k));
  g.vectors = int64_t(g.mean) * g.blocks;
  return g;
}
}  // namespace

// Decode sizes (N <= 64): the policy picks the decode kernel, the whole N in one block when
// its B fits shared memory, with a readable reason; pinned knobs keep their kernel.
TEST(Policy, DecodeKernelForSmallN) {
  auto sig_of = uniform_signature;
  const DeviceFacts dev = DeviceFacts::reference_for(90);
  OpSpec base = kBase;
  base.lhs = base.rhs = {8, true};
  base.pinned = 0;
  MatrixSignature g = sig_of(4096, 4096, 16, 0.5);
  PolicyChoice c = policy_spec(base, &g, dev);
  EXPECT_TRUE(c.spec.decode);
  EXPECT_TRUE(c.spec.resident);
  EXPECT_EQ(c.spec.bsn, 16);
  EXPECT_EQ(to_string(c.spec), "spmm.s8xs8.v8.n16d.pf.i32.sm_90");
  EXPECT_EQ(c.why, "decode: N=16 in one 16-column tile, B resident (64 KiB), strides split over warps");
  for (auto [n, bsn] : {std::pair{1, 16}, {5, 16}, {17, 32}, {33, 48}, {48, 48}}) {
    g.n = n;
    c = policy_spec(base, &g, dev);
    EXPECT_TRUE(c.spec.decode) << n;
    EXPECT_EQ(c.spec.bsn, bsn) << n;
  }
  // N=64 at K=4096: 256 KiB of B does not fit; two slices of 32 columns do.
  g.n = 64;
  c = policy_spec(base, &g, dev);
  EXPECT_EQ(c.spec.bsn, 32);
  EXPECT_EQ(c.why, "decode: N=64 in 2 slices of 32 columns, B resident (128 KiB a block), strides split over warps");
  // K=14336: 16 columns fit (224 KiB), 32 do not.
  g = sig_of(4096, 14336, 32, 0.7);
  c = policy_spec(base, &g, dev);
  EXPECT_EQ(c.spec.bsn, 16);
  EXPECT_NE(c.why.find("2 slices of 16 columns"), std::string::npos) << c.why;
  // 4-bit B: packed as bytes in the decode kernel (planner.cpp), so 16-column tiles as for 8-bit B.
  OpSpec b4 = base;
  b4.lhs = b4.rhs = {4, true};
  g = sig_of(4096, 4096, 16, 0.7);
  c = policy_spec(b4, &g, dev);
  EXPECT_EQ(to_string(c.spec), "spmm.s4xs4.v8.n16d.pf.i32.sm_90");
  EXPECT_EQ(llvm::cantFail(plan(c.spec)).rhs.at(0).storage_bits, 8);
  // Two lhs groups: at most four accumulator tiles (no spill), so narrower tiles at N=64.
  OpSpec wide = base;
  wide.lhs = {16, true};
  g.n = 64;
  c = policy_spec(wide, &g, dev);
  EXPECT_TRUE(c.spec.decode);
  EXPECT_EQ(c.spec.bsn, 32) << c.why;
  // N > 64: the decode kernel in the widest slices of 32+ columns that fit (48), where one rhs
  // plane of at most 8 bits is all of B and no knob is pinned.
  g.n = 65;
  c = policy_spec(base, &g, dev);
  EXPECT_TRUE(c.spec.decode);
  EXPECT_EQ(c.spec.bsn, 48) << c.why;
  // Three tiles past N = 64 at 20 warps (96 registers); at N <= 64 the plan's 16.
  EXPECT_EQ(c.why, "decode: N=65 in 2 slices of 48 columns, B resident (192 KiB a block), strides split over 20 warps");
  EXPECT_EQ(c.spec.warps, 20);
  g.n = 48;
  EXPECT_EQ(to_string(policy_spec(base, &g, dev).spec), "spmm.s8xs8.v8.n48d.pf.i32.sm_90");
  g = sig_of(4096, 4096, 2048, 0.9);
  EXPECT_EQ(to_string(policy_spec(base, &g, dev).spec), "spmm.s8xs8.v8.n48dw20.pf.i32.sm_90");
  EXPECT_EQ(to_string(policy_spec(b4, &g, dev).spec), "spmm.s4xs4.v8.n48dw20.pf.i32.sm_90");
  OpSpec a80 = base;
  a80.arch = 80;
  EXPECT_EQ(policy_spec(a80, &g, dev).spec.warps, 0) << "sm_80: the plan's warps (20 spilled there)";
  c = policy_spec(wide, &g, dev);
  EXPECT_EQ(c.spec.bsn, 32) << "two lhs groups: four accumulator tiles at most; " << c.why;
  OpSpec r16 = base;
  r16.rhs = {16, true};
  EXPECT_FALSE(policy_spec(r16, &g, dev).spec.decode) << "two rhs planes: the other kernels";
  OpSpec tile = base;
  tile.pinned = kPinBsn;
  tile.bsn = 64;
  EXPECT_FALSE(policy_spec(tile, &g, dev).spec.decode) << "a pinned tile past N = 64 asks for the ring kernel";
  // K=11008 or 14336: no slice of 32+ columns of all K fits: 48-column slices with K in the
  // fewest panels that fit, as even as 64-row multiples make them; integer outputs only (each
  // pass adds into C), so not for f16. At density 0.2 or less, 16-column slices of all K at 32
  // warps instead (no panels, no adds), for every output.
  g = sig_of(4096, 11008, 2048, 0.7);
  c = policy_spec(base, &g, dev);
  EXPECT_EQ(to_string(c.spec), "spmm.s8xs8.v8.n48dp3712.pf.i32.sm_90") << c.why;
  EXPECT_NE(c.why.find("K in 3 panels of 3712 rows"), std::string::npos) << c.why;
  g = sig_of(4096, 14336, 512, 0.7);
  EXPECT_EQ(to_string(policy_spec(base, &g, dev).spec), "spmm.s8xs8.v8.n48dp4800.pf.i32.sm_90");
  OpSpec half = base;
  half.out = OutType::F16;
  EXPECT_FALSE(policy_spec(half, &g, dev).spec.decode) << "a float output is not added into";
  g = sig_of(4096, 11008, 2048, 0.9);
  c = policy_spec(base, &g, dev);
  EXPECT_EQ(to_string(c.spec), "spmm.s8xs8.v8.n16dw32.pf.i32.sm_90") << c.why;
  EXPECT_EQ(c.why, "decode: N=2048 in 128 slices of 16 columns, B resident (172 KiB a block), strides split over 32 warps");
  g = sig_of(4096, 14336, 512, 0.9);
  EXPECT_EQ(to_string(policy_spec(base, &g, dev).spec), "spmm.s8xs8.v8.n16dw32.pf.i32.sm_90");
  // Shares of all slices (spec n..s) where whole waves would leave SMs idle: N=8192 (171 slices
  // of 48 columns at K=4096, 512 of 16 at K=14336), not N=2048 (43 slices in 3 parts: 129 of 132
  // SMs; 128 slices of 16 at K=14336: a second copy costs more than 4 SMs give).
  for (auto [k, n, want] : {std::tuple<int64_t, int64_t, const char *>{4096, 8192, "spmm.s8xs8.v8.n48dw20s.pf.i32.sm_90"},
                            {4096, 2048, "spmm.s8xs8.v8.n48dw20.pf.i32.sm_90"},
                            {14336, 8192, "spmm.s8xs8.v8.n16dw32s.pf.i32.sm_90"},
                            {14336, 2048, "spmm.s8xs8.v8.n16dw32.pf.i32.sm_90"}}) {
    g = sig_of(4096, k, n, 0.9);
    c = policy_spec(base, &g, dev);
    EXPECT_EQ(to_string(c.spec), want) << k << " " << n << ": " << c.why;
    EXPECT_EQ(c.why.find("one block an SM taking a share of every slice (132 SMs)") != std::string::npos, c.spec.shares) << c.why;
  }
  // A float output there (no K panels for it): the same slices, where the ring kernel ran 1.3-2.0x
  // slower (session 28); the route model keeps them sparse. At s=0.7 still the ring kernel.
  OpSpec bf = base;
  bf.out = OutType::BF16, bf.scale = Scale::RowCol, bf.bias = Bias::Row, bf.c_col = true;
  for (auto [k, n] : {std::pair<int64_t, int64_t>{11008, 128}, {11008, 2048}, {14336, 512}, {14336, 8192}}) {
    g = sig_of(4096, k, n, 0.9);
    c = policy_spec(bf, &g, dev);
    // (N=8192 in shares of all slices, as an integer output's)
    EXPECT_EQ(to_string(c.spec), n == 8192 ? "spmm.s8xs8.v8.n16dw32s.pf.bf16+rc+rowbias+ccol.sm_90"
                                           : "spmm.s8xs8.v8.n16dw32.pf.bf16+rc+rowbias+ccol.sm_90")
        << k << " " << n << ": " << c.why;
    auto pf = plan(c.spec);
    ASSERT_TRUE(bool(pf));
    EXPECT_EQ(route_by_model(estimate_routes(*pf, g, dev)), Route::Sparse) << k << " " << n;
  }
  g = sig_of(4096, 11008, 2048, 0.7);
  EXPECT_FALSE(policy_spec(bf, &g, dev).spec.decode);
  g = sig_of(4096, 4096, 2048, 0.9);
  EXPECT_EQ(policy_spec(base, &g, dev).spec.panel, 0) << "K that fits takes no panels";
  // Decode (N <= 32, 16-column slices) at K >= 12288 on sm_90, an integer output: K in two panels,
  // one block of a cluster of two each (half of B's slice a block); not at K=11008 or 4096 (slower
  // there), on sm_80, for a float output, past N = 32.
  for (auto [k, n, panel] : {std::tuple{14336, 16, 7168}, {14336, 1, 7168}, {12800, 8, 6400}, {14336, 17, 7168},
                             {14336, 32, 7168}, {14336, 33, 0}, {11008, 16, 0}, {4096, 16, 0}}) {
    g = sig_of(4096, k, n, 0.5);
    c = policy_spec(base, &g, dev);
    EXPECT_EQ(c.spec.panel, panel) << k << " " << n << ": " << c.why;
    auto pc = plan(c.spec);
    ASSERT_TRUE(bool(pc));
    EXPECT_EQ(pc->launch.cluster_blocks(k), panel ? 2u : 1u);
    EXPECT_EQ(c.why.find("a cluster of two blocks, one a panel") != std::string::npos, panel != 0) << c.why;
    if (panel) {
      EXPECT_EQ(route_by_model(estimate_routes(*pc, g, dev)), Route::Sparse) << k << " " << n;
    }
  }
  g = sig_of(4096, 14336, 16, 0.5);
  EXPECT_EQ(policy_spec(bf, &g, dev).spec.panel, 0) << "a float output is not added into";
  auto p80 = plan(policy_spec(a80, &g, dev).spec);  // sm_80: 224 KiB does not fit, so K panels, one pass each
  ASSERT_TRUE(bool(p80));
  EXPECT_FALSE(p80->launch.panel_cluster) << "sm_80: no clusters";
  EXPECT_EQ(p80->launch.cluster_blocks(14336), 1u);
  // The route model counts each pass's add into C: these two ran slower than dense (session 19's
  // grid at s=0.9: 645 against 575 us and 566 against 513); at s=0.9 the 16-column slices at 32
  // warps beat dense there (session 27: 572 against 610 us, 435 against 496) and go sparse.
  for (auto [k, n] : {std::pair<int64_t, int64_t>{14336, 8192}, {11008, 8192}}) {
    for (double sp : {0.7, 0.9}) {
      g = sig_of(4096, k, n, sp);
      auto pp = plan(policy_spec(base, &g, dev).spec);
      ASSERT_TRUE(bool(pp));
      EXPECT_EQ(pp->spec.panel != 0, sp == 0.7);
      EXPECT_EQ(route_by_model(estimate_routes(*pp, g, dev)), sp == 0.7 ? Route::Dense : Route::Sparse) << k << " " << n;
    }
  }
  g = sig_of(4096, 4096, 16, 0.7);
  // Pinned knobs: resident B pinned keeps the resident kernel; split 2 or no prefetch pinned
  // rule decode out; decode pinned is kept even for a wider N.
  g.n = 16;
  OpSpec pin = base;
  pin.pinned = kPinResident;
  pin.resident = true;
  c = policy_spec(pin, &g, dev);
  EXPECT_FALSE(c.spec.decode);
  pin.resident = false;
  EXPECT_FALSE(policy_spec(pin, &g, dev).spec.decode);
  pin = base;
  pin.pinned = kPinSplit;
  pin.split = 2;
  EXPECT_FALSE(policy_spec(pin, &g, dev).spec.decode);
  pin = base;
  pin.pinned = kPinResident;
  pin.resident = pin.decode = true;
  g.n = 200;
  c = policy_spec(pin, &g, dev);
  EXPECT_TRUE(c.spec.decode);
  EXPECT_EQ(c.spec.bsn, 48) << "past N = 64 the widest slice that fits (64 does not at K=4096)";
  // The dispatch and `magicube plan` say so.
  CliResult r = run_shell(magicube_cli() + " plan --lhs=s8 --rhs=s8 --v=8 --m=4096 --k=4096 --sparsity=0.5 --n=16 2>&1");
  EXPECT_EQ(r.status, 0) << r.output;
  EXPECT_NE(r.output.find("plan spmm.s8xs8.v8.n16d.pf.i32.sm_90"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("spmm-decode"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("chosen by: policy (decode: N=16 in one 16-column tile"), std::string::npos) << r.output;
}

// The tuner times the decode kernel where it builds: BSn 16..64, split 1, prefetch on.
TEST(Autotune, DecodeCandidatesOnlyWhereBuildable) {
  OpSpec base = kBase;
  base.lhs = base.rhs = {8, true};
  auto all = tuning_candidates(base);
  ASSERT_TRUE(bool(all)) << llvm::toString(all.takeError());
  int n = 0;
  for (const Candidate &c : *all) {
    if (!c.spec.decode) continue;
    ++n;
    EXPECT_TRUE(c.spec.resident);
    EXPECT_LE(c.spec.bsn, 64);
    EXPECT_EQ(c.spec.split, 1);
    EXPECT_TRUE(c.spec.prefetch);
    EXPECT_NE(c.run_flags().find("--decode"), std::string::npos);
  }
  EXPECT_GE(n, 4) << "BSn 16, 32, 48 and 64";
  // More warps a block where their registers hold the tiles: 20, 24 and 32 for one tile (BSn 16).
  std::vector<int> warps16;
  for (const Candidate &c : *all)
    if (c.spec.decode && c.spec.bsn == 16 && c.plan == 0 && c.spec.stages == 4) warps16.push_back(c.spec.warps);
  EXPECT_EQ(warps16, (std::vector<int>{0, 20, 24, 32}));
  for (const Candidate &c : *all) {
    if (!c.spec.decode) {
      EXPECT_EQ(c.spec.warps, 0) << c.str();
    }
    if (c.spec.warps) {
      EXPECT_NE(c.run_flags().find("--warps=" + std::to_string(c.spec.warps)), std::string::npos);
    }
    if (c.spec.bsn == 48 && c.spec.decode) {
      EXPECT_LE(c.spec.warps, 20) << "three tiles: 24 and 32 refused";
    }
  }
  // Resident pinned off: no decode either (decode is a resident-B layout).
  TuneOptions nores;
  nores.knob_values["resident"] = {0};
  auto plain_ring = tuning_candidates(base, nores);
  ASSERT_TRUE(bool(plain_ring));
  for (const Candidate &c : *plain_ring) EXPECT_FALSE(c.spec.decode || c.spec.resident) << c.str();
  TuneOptions off;
  off.knob_values["decode"] = {0};
  off.max_candidates = 0, off.prune = 0;
  auto plain = timed_candidates(base, spmm_signature(uniform_rows(512, 512, 8, 154), 16), DeviceFacts::reference_for(90), off);
  ASSERT_TRUE(bool(plain));
  for (const Candidate &c : *plain) EXPECT_FALSE(c.spec.decode) << c.str();
  // A record written before the knob existed still reads (decode 0).
  auto k = knobs_from_json(llvm::json::Object{{"bsn", 64}, {"prefetch", 1}, {"split", 1}, {"resident", 0}});
  ASSERT_TRUE(bool(k));
  EXPECT_EQ(k->decode, 0);
  EXPECT_EQ(k->warps, 0);
}

TEST(Autotune, LookupHitReproducesTheChoice) {
  TempDir tmp;
  TuneStore store = TuneStore::open(tmp.path());
  MatrixSignature sig = spmm_signature(bernoulli(6, 256, 512, 8, 0.9, {8, true}), 128);
  auto cands = tuning_candidates(kBase);
  ASSERT_TRUE(bool(cands));
  // Choose a candidate with non-default knobs and a plan other than the first.
  size_t pick = 0;
  for (size_t i = 0; i < cands->size(); ++i)
    if ((*cands)[i].knobs.bsn == 128 && !(*cands)[i].knobs.prefetch && (*cands)[i].plan == 1) pick = i;
  ASSERT_NE(pick, 0u);
  TuneRecord rec = fake_record(kBase, "Test GPU", sig, pick);
  ASSERT_EQ(msg(store.save(rec)), "");

  // Another matrix of the same shape and sparsity, and a base with other knobs: same record.
  MatrixSignature near = spmm_signature(bernoulli(7, 256, 512, 8, 0.9, {8, true}), 128);
  OpSpec base = kBase;
  base.bsn = 32;
  auto c = lookup_tuned(store, base, near, "Test GPU");
  ASSERT_TRUE(c.has_value());
  EXPECT_EQ(c->spec().bsn, 128);
  EXPECT_FALSE(c->spec().prefetch);
  EXPECT_EQ(c->plan_index(), 1);
  EXPECT_EQ(c->candidate.plan_id, (*cands)[pick].plan_id);
  EXPECT_DOUBLE_EQ(c->median_ms, 0.25);
  auto p = tuned_plan(store, base, near, "Test GPU");
  ASSERT_TRUE(bool(p)) << llvm::toString(p.takeError());
  auto want = plan_candidates(c->spec());
  ASSERT_TRUE(bool(want));
  EXPECT_EQ(p->kernel_name(), (*want)[1].kernel_name());
  EXPECT_EQ(plan_id(*p), c->candidate.plan_id);
  EXPECT_EQ(p->spec, c->spec());

  // Another GPU, or another N: no record.
  EXPECT_FALSE(lookup_tuned(store, kBase, sig, "Other GPU").has_value());
  EXPECT_FALSE(
      lookup_tuned(store, kBase, spmm_signature(bernoulli(6, 256, 512, 8, 0.9, {8, true}), 256), "Test GPU").has_value());
}

TEST(Autotune, LookupRederivesThePlanIndexAndDropsStalePlans) {
  TempDir tmp;
  TuneStore store = TuneStore::open(tmp.path());
  MatrixSignature sig = spmm_signature(bernoulli(8, 256, 512, 8, 0.9, {8, true}), 128);
  TuneRecord rec = fake_record(kBase, "Test GPU", sig, 1);
  const Candidate chosen = rec.choice.candidate;
  // An index that the planner's order no longer matches: the plan id wins.
  rec.choice.candidate.plan = chosen.plan == 0 ? 1 : 0;
  ASSERT_EQ(msg(store.save(rec)), "");
  auto c = lookup_tuned(store, kBase, sig, "Test GPU");
  ASSERT_TRUE(c.has_value());
  EXPECT_EQ(c->plan_index(), chosen.plan);
  // A plan that no longer exists: a miss with a warning.
  rec.choice.candidate.plan_id = "m99n8k32.i8.dense_on_m";
  ASSERT_EQ(msg(store.save(rec)), "");
  LogCapture cap;
  EXPECT_FALSE(lookup_tuned(store, kBase, sig, "Test GPU").has_value());
  EXPECT_NE(cap.text().find("no longer a candidate"), std::string::npos) << cap.text();
}

// ---- on the GPU ----------------------------------------------------------------------------

TEST(AutotuneGpu, TunesASmallSpmmAndReusesTheChoice) {
  MAGICUBE_REQUIRE_GPU(ctx);
  int arch = 0;
  for (int a : {80, 86, 89, 90})
    if (a <= ctx->compute_capability()) arch = a;
  if (arch == 0) GTEST_SKIP() << "no GPU: " << ctx->name() << " is older than sm_80";
  OpSpec base = kBase;
  base.arch = arch;
  const int64_t n = 128;
  VectorSparse a = bernoulli(11, 256, 512, base.v, 0.8, base.lhs);
  TempDir tmp;
  TuneOptions o;
  o.store_dir = tmp.path();
  o.warmup = 2;
  o.repeat = 5;
  o.verify = true;
  auto r = tune_spmm(*ctx, base, a, n, o);
  ASSERT_TRUE(bool(r)) << llvm::toString(r.takeError());
  // Exactly the candidates the cost model kept, in that order.
  auto cands = timed_candidates(base, spmm_signature(a, n), device_facts(*ctx), o);
  ASSERT_TRUE(bool(cands));
  ASSERT_EQ(r->timings.size(), cands->size());
  for (size_t i = 0; i < cands->size(); ++i) EXPECT_EQ(r->timings[i].candidate.str(), (*cands)[i].str());
  double fastest = 1e30;
  for (const CandidateTiming &t : r->timings) {
    EXPECT_TRUE(t.ok) << t.candidate.str() << ": " << t.skipped;  // every candidate is exact and runs
    if (t.ok) {
      EXPECT_GT(t.median_ms, 0.0);
      EXPECT_LE(t.min_ms, t.median_ms);
      EXPECT_LE(t.median_ms, t.max_ms);
      fastest = std::min(fastest, t.median_ms);
    }
  }
  EXPECT_DOUBLE_EQ(r->choice.median_ms, fastest);
  EXPECT_TRUE(r->saved);
  EXPECT_TRUE(llvm::sys::fs::exists(r->path)) << r->path;
  EXPECT_EQ(r->key.gpu, ctx->name());

  // The chosen kernel, run again on fresh inputs: bit-exact against the reference.
  auto plans = plan_candidates(r->choice.spec());
  ASSERT_TRUE(bool(plans));
  const Plan &p = (*plans)[r->choice.plan_index()];
  EXPECT_EQ(plan_id(p), r->choice.candidate.plan_id);
  std::mt19937_64 rng(12);
  std::vector<int64_t> b(size_t(a.cols * n));
  for (int64_t &x : b) x = base.rhs.min_value() + int64_t(rng() % uint64_t(base.rhs.max_value() - base.rhs.min_value() + 1));
  auto got = magicube::testing::gpu_spmm(*ctx, p, a, b, n);
  ASSERT_TRUE(bool(got)) << llvm::toString(got.takeError());
  EXPECT_EQ(*got, reference_spmm(a, b, n)) << r->choice.candidate.str();

  // Another process: a fresh store object, no context, no timing; the same choice.
  TuneStore store = TuneStore::open(tmp.path());
  auto c = lookup_tuned(store, base, spmm_signature(a, n), ctx->name());
  ASSERT_TRUE(c.has_value());
  EXPECT_EQ(c->spec(), r->choice.spec());
  EXPECT_EQ(c->plan_index(), r->choice.plan_index());
  EXPECT_EQ(c->candidate.plan_id, r->choice.candidate.plan_id);
  EXPECT_DOUBLE_EQ(c->median_ms, r->choice.median_ms);
  auto tp = tuned_plan(store, base, spmm_signature(a, n), ctx->name());
  ASSERT_TRUE(bool(tp)) << llvm::toString(tp.takeError());
  EXPECT_EQ(tp->kernel_name(), p.kernel_name());
  EXPECT_EQ(plan_id(*tp), plan_id(p));
}

// ---- the CLI -------------------------------------------------------------------------------

namespace {
CliResult cli(const std::string &args, const std::string &cache_dir) {
  return run_shell("env MAGICUBE_CACHE_DIR=" + shell_quote(cache_dir) + " " + shell_quote(magicube_cli()) + " " + args);
}
}  // namespace

TEST(AutotuneCli, BadInputIsRefusedBeforeLookingForAGpu) {
  TempDir tmp;
  CliResult missing = cli("tune --lhs=s8 --rhs=u4 --m=64 --k=128 --n=64", tmp.path());
  EXPECT_EQ(missing.status, 1) << missing.output;
  EXPECT_NE(missing.output.find("--sparsity"), std::string::npos) << missing.output;
  CliResult cand = cli("tune --lhs=s8 --rhs=u4 --m=64 --k=128 --sparsity=0.5 --n=64 --candidate=1", tmp.path());
  EXPECT_EQ(cand.status, 1) << cand.output;
  EXPECT_NE(cand.output.find("candidate:"), std::string::npos) << cand.output;
  CliResult wide = cli("tune --lhs=u16 --rhs=u16 --m=64 --k=128 --sparsity=0.5 --n=64", tmp.path());
  EXPECT_EQ(wide.status, 1) << wide.output;
  EXPECT_NE(wide.output.find("out:"), std::string::npos) << wide.output;
}

TEST(AutotuneCli, TunePrintsTheTableAndStoresTheChoice) {
  TempDir tmp;
  const std::string args = "tune --lhs=s8 --rhs=u4 --v=8 --m=128 --k=256 --sparsity=0.8 --n=64 --repeat=3 --warmup=1";
  std::string why = no_gpu_reason();
  if (!why.empty()) {
    CliResult r = cli(args, tmp.path());
    EXPECT_EQ(r.status, 2) << r.output;
    EXPECT_NE(r.output.find("magicube: no GPU: "), std::string::npos) << r.output;
    GTEST_SKIP() << "no GPU: " << why;
  }
  CliResult r = cli(args, tmp.path());
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_NE(r.output.find("median ms"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("<- chosen"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("choice    "), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("--candidate="), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("record    " + tmp.path() + "/tuning/"), std::string::npos) << r.output;
  std::vector<std::string> files = list_dir(tmp.path() + "/tuning");
  ASSERT_EQ(files.size(), 1u);
  EXPECT_TRUE(llvm::StringRef(files[0]).endswith(".json")) << files[0];
}

// The cost model prunes before anything compiles: far fewer candidates than the full grid,
// each within `prune` of the cheapest plan of its knobs, the policy's choice among them.
TEST(Autotune, CostModelPrunesTheCandidatesAndKeepsThePolicysChoice) {
  OpSpec base = kBase;
  base.rhs = {8, true};
  const MatrixSignature sig = spmm_signature(bernoulli(9, 1024, 1024, 8, 0.7, {8, true}), 256);
  const DeviceFacts dev = DeviceFacts::reference_for(90);
  auto all = tuning_candidates(base);
  ASSERT_TRUE(bool(all));
  TuneOptions opts;
  auto kept = timed_candidates(base, sig, dev, opts);
  ASSERT_TRUE(bool(kept)) << llvm::toString(kept.takeError());
  EXPECT_LE(kept->size(), size_t(opts.max_candidates));
  EXPECT_LT(kept->size(), all->size());
  const OpSpec policy = policy_spec(base, &sig, dev).spec;
  EXPECT_TRUE(std::any_of(kept->begin(), kept->end(), [&](const Candidate &c) { return c.spec == policy && c.plan == 0; }))
      << "the untuned default is always timed";
  for (const Candidate &c : *kept) {
    auto ps = plan_candidates(c.spec);
    ASSERT_TRUE(bool(ps));
    EXPECT_LE((*ps)[c.plan].cost, opts.prune * ps->front().cost + 1e-9) << c.str();
  }
  opts.prune = 0;
  opts.max_candidates = 0;
  auto everything = timed_candidates(base, sig, dev, opts);
  ASSERT_TRUE(bool(everything));
  EXPECT_GE(everything->size(), all->size()) << "prune 0 and no limit: the whole grid (and the policy's choice)";
}

// On LLM shapes the timed candidates are the decode kernel's variants (its warp counts and
// slice widths), each kernel shape's best by the route model before any shape's second ring
// depth, and none whose B cannot fit shared memory at this K; not 31 ring kernels the model
// puts 2-14x slower (what Plan::cost's ranking kept on the H100, session 29).
TEST(Autotune, TimesTheDecodeKernelsVariantsOnLlmShapes) {
  OpSpec base = kBase;
  base.rhs = {8, true};
  base.pinned = 0;
  const DeviceFacts dev = DeviceFacts::reference_for(90);
  struct Case {
    int64_t m, k, n;
    double s;
    size_t bsn;  // slice widths of the decode kernel at least (64 columns of K = 4096 do not fit)
  };
  for (const Case &c : {Case{6144, 4096, 16, 0.5, 3}, Case{4096, 4096, 2048, 0.9, 3}, Case{4096, 11008, 512, 0.9, 1}}) {
    const MatrixSignature sig = uniform_signature(c.m, c.k, c.n, c.s);
    TuneOptions opts;
    auto kept = timed_candidates(base, sig, dev, opts);
    ASSERT_TRUE(bool(kept)) << llvm::toString(kept.takeError());
    ASSERT_FALSE(kept->empty());
    EXPECT_LE(kept->size(), size_t(opts.max_candidates));
    const OpSpec policy = policy_spec(base, &sig, dev).spec;
    EXPECT_TRUE(kept->front().spec == policy) << "the untuned default first: " << kept->front().str();
    std::set<int> warps, bsn;
    for (const Candidate &x : *kept) {
      auto ps = plan_candidates(x.spec);
      ASSERT_TRUE(bool(ps));
      EXPECT_EQ(check_shared_memory((*ps)[size_t(x.plan)], sig.k), "") << x.str();
      if (x.spec.decode) warps.insert(x.spec.warps), bsn.insert(x.spec.bsn);
    }
    EXPECT_GE(warps.size(), 3u) << sig.key() << ": the warp counts of the decode kernel";
    EXPECT_GE(bsn.size(), c.bsn) << sig.key() << ": its slice widths";
    // Every kernel shape (knobs but the ring depth) of the whole grid is among those kept.
    opts.max_candidates = 0;
    auto all = timed_candidates(base, sig, dev, opts);
    ASSERT_TRUE(bool(all));
    EXPECT_GT(all->size(), kept->size());
    auto shape = [](const Candidate &x) {
      return std::tuple{x.knobs.bsn, x.knobs.split, x.knobs.decode, x.knobs.resident, x.knobs.warps, x.knobs.prefetch != 0,
                        x.plan_id};
    };
    std::set<decltype(shape(kept->front()))> in_all, in_kept;
    for (const Candidate &x : *all) in_all.insert(shape(x));
    for (const Candidate &x : *kept) in_kept.insert(shape(x));
    if (in_all.size() < size_t(TuneOptions{}.max_candidates)) {
      EXPECT_EQ(in_kept, in_all) << sig.key();
    }
  }
}

// A pinned tile whose B cannot fit shared memory at the matrix's K leaves nothing to time: the
// error says why before anything compiles.
TEST(Autotune, NothingToTimeWhereNoTileFitsSharedMemory) {
  OpSpec base = kBase;
  base.rhs = {8, true};
  base.bsn = 128, base.resident = true;
  base.pinned = kPinBsn | kPinResident;
  const MatrixSignature sig = uniform_signature(4096, 4096, 256, 0.9);
  TuneOptions opts;
  opts.knob_values["bsn"] = {128};
  opts.knob_values["resident"] = {1};
  opts.knob_values["decode"] = {0};
  auto kept = timed_candidates(base, sig, DeviceFacts::reference_for(90), opts);
  ASSERT_FALSE(bool(kept));
  const std::string msg = llvm::toString(kept.takeError());
  EXPECT_NE(msg.find("B resident in shared memory needs"), std::string::npos) << msg;
  EXPECT_NE(msg.find("K=4096"), std::string::npos) << msg;
}

TEST(Dispatch, TunedDenseTimeDecidesTheRouteWhereTheCallerAllowsIt) {
  TempDir tmp;
  TuneStore store = TuneStore::open(tmp.path());
  const VectorSparse a = uniform_rows(512, 512, 8, 154);
  const MatrixSignature sig = spmm_signature(a, 256);
  OpSpec unpinned = kBase;
  unpinned.pinned = 0;
  const DeviceFacts dev = DeviceFacts::reference_for(90);
  TuneRecord rec = fake_record(kBase, dev.name, sig, 0);  // the chosen kernel: 0.25 ms
  // The dense time round-trips through the record's JSON; a non-positive one is refused.
  rec.choice.dense_ms = 0.1;
  auto back = tune_record_from_json(to_json(rec));
  ASSERT_TRUE(bool(back)) << llvm::toString(back.takeError());
  EXPECT_DOUBLE_EQ(back->choice.dense_ms, 0.1);
  llvm::json::Value bad = to_json(rec);
  (*bad.getAsObject()->getObject("choice"))["dense_ms"] = -1.0;
  auto refused = tune_record_from_json(bad);
  ASSERT_FALSE(bool(refused));
  EXPECT_EQ(llvm::toString(refused.takeError()), "tuning record: choice.dense_ms must be > 0");
  ASSERT_EQ(msg(store.save(rec)), "");
  // Allowed: the record's times decide, no model; never: the sparse kernel, nothing said.
  auto allowed = dispatch(unpinned, &sig, dev, -1, &store, DenseRoute::Allowed);
  ASSERT_TRUE(bool(allowed)) << llvm::toString(allowed.takeError());
  EXPECT_EQ(allowed->source, ChoiceSource::TunedRecord);
  EXPECT_EQ(allowed->route_why.rfind("tuned: sparse 0.2500 ms, dense 0.1000 ms", 0), 0u) << allowed->route_why;
  EXPECT_EQ(allowed->route == Route::Dense, dense_library_unavailable().empty()) << allowed->route_why;
  auto never = dispatch(unpinned, &sig, dev, -1, &store);
  ASSERT_TRUE(bool(never));
  EXPECT_EQ(never->route, Route::Sparse);
  EXPECT_EQ(never->route_why, "");
  // A record whose kernel beat the dense route keeps the sparse route.
  rec.choice.dense_ms = 0.5;
  ASSERT_EQ(msg(store.save(rec)), "");
  auto sparse = dispatch(unpinned, &sig, dev, -1, &store, DenseRoute::Allowed);
  ASSERT_TRUE(bool(sparse));
  EXPECT_EQ(sparse->route, Route::Sparse);
  EXPECT_EQ(sparse->route_why, "tuned: sparse 0.2500 ms, dense 0.5000 ms");
}
