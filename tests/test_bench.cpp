// magicube-bench, the parts that need no GPU: CSV quoting, the published Magicube table,
// geomeans, option expansion, the summary built from a synthetic results vector, the
// progress line, plots.py on a synthetic CSV (skipped without python3 + matplotlib), the
// binary's no-GPU exit path (exit 2, one line; skipped where a GPU is present), and
// `magicube bench` running it.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cmath>
#include <cstdio>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include <fmt/format.h>

#include "bench/bench_report.h"
#include "tests/cli_util.h"
#include "llvm/Support/FileSystem.h"
#include "runtime/cuda_driver.h"

#ifndef MAGICUBE_SOURCE_DIR
#error "MAGICUBE_SOURCE_DIR must be defined"
#endif

using namespace magicube;
using namespace magicube::bench;
using namespace magicube::testing;

namespace {





ResultRow row(const std::string &source, const std::string &contender, const std::string &precision, int v,
              double sparsity, int64_t n, double ms) {
  ResultRow r;
  r.source = source;
  r.op = "spmm";
  r.m = source == "small" ? 256 : 4096;
  r.k = source == "small" ? 2304 : 4096;
  r.n = n;
  r.v = v;
  r.sparsity = sparsity;
  r.matrix = "uniform-M" + std::to_string(r.m) + "-K" + std::to_string(r.k) + "-s" + std::to_string(sparsity);
  r.nnz_vectors = int64_t(std::llround((1 - sparsity) * r.k)) * (r.m / v);
  r.contender = contender;
  r.precision = precision;
  r.ms = ms;
  r.tops = effective_tops(r.nnz_vectors, v, n, ms);
  r.status = "ok";
  if (contender == kOurs) r.exact = "yes";
  return r;
}

// Ours L8-R8 at V=8 and 4 on Magicube's six cells at 4x (V=8) and 2x (V=4) Magicube's
// times; dense cuBLASLt at 1.5x .. 3x ours; a small problem at 7 us; one mismatch elsewhere.
std::vector<ResultRow> synthetic_results() {
  std::vector<ResultRow> rows;
  for (double s : {0.7, 0.8, 0.9, 0.98})
    for (int64_t n : {256, 512}) {
      auto pub = magicube_h100_ms("spmm", "L8-R8", s, n);
      double ours8 = pub ? *pub / 4 : 0.01;
      double ours4 = pub ? *pub / 2 : 0.02;
      rows.push_back(row("synthetic", kOurs, "L8-R8", 8, s, n, ours8));
      rows.push_back(row("synthetic", kOurs, "L8-R8", 4, s, n, ours4));
      double dense_factor = s < 0.75 ? 0.5 : s < 0.85 ? 1.5 : s < 0.95 ? 2.5 : 3.0;
      rows.push_back(row("synthetic", kCublasLtS8, "s8->s32", 8, s, n, ours8 * dense_factor));
      ResultRow un = row("synthetic", kBellS8, "s8", 8, s, n, kNaN);
      un.status = "unsupported";
      un.note = "cusparseSpMM: refused, with a \"quote\", a comma";
      rows.push_back(un);
    }
  rows.push_back(row("small", kOurs, "L8-R8", 8, 0.9, 256, 0.007));
  ResultRow bad = row("synthetic", kOurs, "L4-R4", 8, 0.9, 256, 0.01);
  bad.exact = "NO: C[3, 5] = 1, expected 2 (1 of 100 checked elements differ)";
  rows.push_back(bad);
  std::vector<ResultRow> pub = published_rows(rows);
  rows.insert(rows.end(), pub.begin(), pub.end());
  return rows;
}

}  // namespace

TEST(BenchCsv, QuotesOnlyWhatNeedsIt) {
  EXPECT_EQ(csv_field("plain"), "plain");
  EXPECT_EQ(csv_field(""), "");
  EXPECT_EQ(csv_field("a,b"), "\"a,b\"");
  EXPECT_EQ(csv_field("say \"hi\""), "\"say \"\"hi\"\"\"");
  EXPECT_EQ(csv_field("two\nlines"), "\"two\nlines\"");
  EXPECT_EQ(csv_field("cr\r"), "\"cr\r\"");
  EXPECT_EQ(csv_field(" lead"), "\" lead\"");
  EXPECT_EQ(csv_field("trail "), "\"trail \"");
  EXPECT_EQ(csv_field("s8->s32"), "s8->s32");
}

TEST(BenchCsv, LinesRoundTripThroughTheParser) {
  ResultRow r = row("dlmc", kCsrF16, "f16", 4, 0.9, 256, 0.0123);
  r.matrix = "rn50/magnitude_pruning/0.9/a,b \"c\".smtx";
  r.note = "first line\nsecond, line";
  r.config = " spaced ";
  std::string text = csv_header() + csv_line(r) + csv_line(row("synthetic", kOurs, "L8-R8", 8, 0.5, 512, kNaN));
  auto parsed = parse_csv(text);
  ASSERT_TRUE(bool(parsed)) << llvm::toString(parsed.takeError());
  ASSERT_EQ(parsed->size(), 3u);
  const auto &h = (*parsed)[0];
  ASSERT_EQ(h.size(), 18u);
  EXPECT_EQ(h[0], "source");
  EXPECT_EQ(h[11], "ms");
  const auto &f = (*parsed)[1];
  ASSERT_EQ(f.size(), h.size());
  EXPECT_EQ(f[1], r.matrix);
  EXPECT_EQ(f[4], kCsrF16);
  EXPECT_EQ(f[5], "4");
  EXPECT_EQ(f[11], "0.0123");
  EXPECT_EQ(f[16], " spaced ");
  EXPECT_EQ(f[17], "first line\nsecond, line");
  EXPECT_EQ((*parsed)[2][11], "");  // NaN ms: empty
  EXPECT_FALSE(bool(parse_csv("a,\"open\n")));
}

TEST(BenchCsv, WritesAFile) {
  TempDir tmp;
  std::string path = tmp.path() + "/results.csv";
  ASSERT_FALSE(bool(write_csv(path, synthetic_results())));
  std::ifstream f(path);
  std::stringstream s;
  s << f.rdbuf();
  auto parsed = parse_csv(s.str());
  ASSERT_TRUE(bool(parsed));
  EXPECT_EQ(parsed->size(), synthetic_results().size() + 1);
  auto e = write_csv(tmp.path() + "/no/such/dir/x.csv", {});
  ASSERT_TRUE(bool(e));
  EXPECT_NE(llvm::toString(std::move(e)).find("no/such/dir/x.csv"), std::string::npos);
}

TEST(BenchMagicube, TableOfH100Md) {
  EXPECT_EQ(magicube_h100_times().size(), 48u);  // 8 precisions x 3 sparsities x 2 N/K
  EXPECT_DOUBLE_EQ(*magicube_h100_ms("spmm", "L8-R8", 0.9, 512), 0.0455);
  EXPECT_DOUBLE_EQ(*magicube_h100_ms("spmm", "L8-R8", 0.7, 256), 0.0637);
  EXPECT_DOUBLE_EQ(*magicube_h100_ms("spmm", "L16-R16", 0.98, 512), 0.0251);
  EXPECT_DOUBLE_EQ(*magicube_h100_ms("spmm", "L8-R4", 0.9, 256), 0.0391);
  EXPECT_DOUBLE_EQ(*magicube_h100_ms("sddmm", "L16-R16", 0.98, 512), 0.0409);
  EXPECT_DOUBLE_EQ(*magicube_h100_ms("sddmm", "L4-R4", 0.7, 256), 0.0684);
  EXPECT_FALSE(magicube_h100_ms("spmm", "L8-R8", 0.8, 256));    // no such sparsity
  EXPECT_FALSE(magicube_h100_ms("spmm", "L5-R3", 0.9, 256));    // no such precision
  EXPECT_FALSE(magicube_h100_ms("sddmm", "L8-R4", 0.9, 256));   // SpMM only
  EXPECT_FALSE(magicube_h100_ms("spmm", "L8-R8", 0.9, 1024));   // no such N
}

TEST(BenchMagicube, PublishedRowsFollowOursOnTheSameProblems) {
  std::vector<ResultRow> rows = {row("synthetic", kOurs, "L8-R8", 8, 0.9, 256, 0.01),
                                 row("synthetic", kOurs, "L8-R8", 4, 0.9, 256, 0.01),   // V=4: none
                                 row("synthetic", kOurs, "L5-R3", 8, 0.9, 256, 0.01),   // no time
                                 row("small", kOurs, "L8-R8", 8, 0.9, 256, 0.01)};      // not 4096
  auto pub = published_rows(rows);
  ASSERT_EQ(pub.size(), 1u);
  EXPECT_EQ(pub[0].contender, kMagicubePub);
  EXPECT_EQ(pub[0].status, "published");
  EXPECT_DOUBLE_EQ(pub[0].ms, 0.0271);
  EXPECT_EQ(pub[0].problem_key(), rows[0].problem_key());
  EXPECT_TRUE(pub[0].ok());
}

TEST(BenchSummary, Geomean) {
  EXPECT_DOUBLE_EQ(geomean({2.0, 8.0}), 4.0);
  EXPECT_NEAR(geomean({1.0, 10.0, 100.0}), 10.0, 1e-12);
  EXPECT_DOUBLE_EQ(geomean({3.0, kNaN, -1.0, 0.0}), 3.0);
  EXPECT_TRUE(std::isnan(geomean({})));
  EXPECT_NEAR(effective_tops(1000, 8, 256, 0.001), 2.0 * 1000 * 8 * 256 / 1e-6 / 1e12, 1e-12);
  EXPECT_TRUE(std::isnan(effective_tops(1000, 8, 256, 0.0)));
}

TEST(BenchSummary, TablesTargetsAndMismatches) {
  RunInfo info;
  info.gpu = "NVIDIA H100 80GB HBM3, sm_90, 132 SMs";
  info.driver = "580.159.04, CUDA 13.0";
  info.date = "2026-11-22 12:00 UTC";
  info.command = "magicube bench --quick";
  JitCosts jit;
  jit.variant_first = "spmm.s8xs8.v8.n64.pf.i32.sm_90";
  jit.nvrtc_first_ms = 990;
  jit.nvrtc_again_ms = 32;
  jit.cold_ms = 33;
  jit.cuda_cold_ms = 90;
  jit.nvrtc_second_ms = 90;
  jit.ptx_first_ms = 70;
  jit.disk_hit_ms = 0.4;
  jit.get_launch_us = 4.5;
  jit.bare_launch_us = 3.4;
  jit.cold_each = {{"spmm.s8xs8.v8.n128.pf.i32.sm_90", 48.0}, {"sddmm.s4xs4.v8.n64.pf.i32.sm_90", 61.5}};
  jit.batch_count = 8;
  jit.batch_threads = 8;
  jit.batch_per_variant_ms = 20.25;
  jit.bundle_first_ms = 1.5;
  jit.bundle_hit_ms = 0.75;
  jit.bundle_entries = 140;
  jit.bundle_kb = 2200;
  jit.notes.push_back("a jit note");
  std::string md = summary_markdown(info, synthetic_results(), jit);
  SCOPED_TRACE(md);
  EXPECT_NE(md.find("NVIDIA H100 80GB HBM3"), std::string::npos);
  EXPECT_NE(md.find("580.159.04"), std::string::npos);
  EXPECT_NE(md.find("2026-11-22"), std::string::npos);
  // Targets: 4x Magicube at V=8 on all six cells; 2x at V=4 (against V=8 times) fails.
  EXPECT_NE(md.find("| SpMM L8-R8 V=8 >= 3x Magicube (geomean) | 4.00x over 6/6 cells | **PASS** |"), std::string::npos);
  EXPECT_NE(md.find("| SpMM L8-R8 V=4 >= 3x Magicube V=8 times (Magicube has V=8 only) (geomean) | 2.00x over 6/6 "
                    "cells | **FAIL** |"),
            std::string::npos);
  // Dense: 1.5x at 0.8, 2.5x at 0.9, 3x at 0.98 for both N.
  EXPECT_NE(md.find("s=0.8: 1.50x/1.50x; s=0.9: 2.50x/2.50x; s=0.98: 3.00x/3.00x | **PASS** |"), std::string::npos);
  EXPECT_NE(md.find("at sparsity 0.9 (each N) | min 2.50x | **PASS** |"), std::string::npos);
  EXPECT_NE(md.find("| small problem L8-R8 V=8 M=256 K=2304 N=256 s=0.9 <= 8 us | 7.00 us | **PASS** |"),
            std::string::npos);
  // The mismatch, loudly, and the bit-exact target fails.
  EXPECT_NE(md.find("## !!! MISMATCH: 1 result(s) of ours differ from the CPU reference !!!"), std::string::npos);
  EXPECT_NE(md.find("**MISMATCH** synthetic"), std::string::npos);
  EXPECT_NE(md.find("| every checked result of ours bit-exact | 1 mismatch(es) of 18 checked | **FAIL** |"),
            std::string::npos);
  // The Magicube table: L8-R8 s=0.9 N=512: 0.0455 vs ours 0.0455/4 and 0.0455/2.
  EXPECT_NE(md.find("| spmm | L8-R8 | 0.9 | N=512 | 0.0455 | 0.0114 | 4.00x | 0.0227 | 2.00x | – | – |"),
            std::string::npos);
  // Geomean table: ours L8-R8 V=8 at 0.9 against cuBLASLt (2.5x) and Magicube (4x); V=4
  // against Magicube's V=8 times (2x); the unsupported Blocked-ELL column has no comparison
  // and is left out; the mismatched L4-R4 result counts nowhere.
  EXPECT_NE(md.find("| precision | V | sparsity | cases | ours TOPS (median) | vs cuBLASLt s8 dense | vs Magicube "
                    "(h100.md, V=8) |"),
            std::string::npos);
  EXPECT_EQ(md.find("| L4-R4 |"), std::string::npos);
  EXPECT_EQ(md.find("SpMM L4-R4"), std::string::npos);
  EXPECT_NE(md.find("| L8-R8 | 8 | 0.9 | 2 |"), std::string::npos);
  EXPECT_NE(md.find("| 2.50x | 4.00x |"), std::string::npos);
  EXPECT_NE(md.find("| L8-R8 | 8 | 0.8 | 2 |"), std::string::npos);
  EXPECT_NE(md.find("| 1.50x | – |"), std::string::npos);
  EXPECT_NE(md.find("| L8-R8 | 4 | 0.9 | 2 |"), std::string::npos);
  EXPECT_NE(md.find("| – | 2.00x |"), std::string::npos);
  // JIT, errors.
  EXPECT_NE(md.find("| NVRTC start-up (first compile minus the same kernel's cold compile under a new name, 90.0 ms) | 900.0 ms |"),
            std::string::npos);
  EXPECT_NE(md.find("| nvJitLink, first PTX compile in the process, start-up included ("), std::string::npos);
  EXPECT_NE(md.find("| bare cuLaunchKernel of the same kernel and arguments, host time per call | 3.40 us |"),
            std::string::npos);
  EXPECT_NE(md.find("- a jit note"), std::string::npos);
  // The JIT targets (issue 16): the worst variant decides the cold-compile row.
  EXPECT_NE(md.find("| JIT: cold compile median <= 50 ms per variant (SpMM, SDDMM L8-R8, L4-R4 V=8) | "
                    "spmm.s8xs8.v8.n128.pf.i32.sm_90: 48.0; sddmm.s4xs4.v8.n64.pf.i32.sm_90: 61.5 ms (in a parallel "
                    "batch of 8: 20.2 ms a variant) | **FAIL** |"),
            std::string::npos);
  EXPECT_NE(md.find("| JIT: first use from the AOT bundle <= 2 ms (open, verify, load) | 0.750 ms (first 1.500 ms) | "
                    "**PASS** |"),
            std::string::npos);
  EXPECT_NE(md.find("| JIT: disk-cache hit <= 1 ms (read, verify, load) | 0.400 ms | **PASS** |"), std::string::npos);
  EXPECT_NE(md.find("| JIT: memory hit + launch within 1 us of a raw cuLaunchKernel | +1.10 us (4.50 vs 3.40 us) | "
                    "**FAIL** |"),
            std::string::npos);
  EXPECT_NE(md.find("| first use from the AOT bundle: total (median) | 0.750 ms |"), std::string::npos);
  EXPECT_NE(md.find("| parallel batch: 8 new variants (V=4, V=2) compiled on 8 threads, wall time per variant | 20.2 ms |"),
            std::string::npos);
  EXPECT_NE(md.find("unsupported cuSPARSE BELL s8 (synthetic): cusparseSpMM: refused"), std::string::npos);
  EXPECT_NE(md.find("(x8)"), std::string::npos);
}

TEST(BenchSummary, NoMismatchNoAlarm) {
  std::vector<ResultRow> rows = synthetic_results();
  rows.erase(std::remove_if(rows.begin(), rows.end(), [](const ResultRow &r) { return r.mismatch(); }), rows.end());
  std::string md = summary_markdown(RunInfo{}, rows, JitCosts{});
  EXPECT_EQ(md.find("MISMATCH"), std::string::npos) << md;
  EXPECT_NE(md.find("0 mismatch(es) of 17 checked | **PASS** |"), std::string::npos) << md;
}

TEST(BenchOptions, Precisions) {
  auto p = parse_precision("L8-R4");
  ASSERT_TRUE(bool(p));
  EXPECT_EQ(p->name, "L8-R4");
  EXPECT_EQ(p->lhs, (ElemType{8, true}));
  EXPECT_EQ(p->rhs, (ElemType{4, true}));
  p = parse_precision("s8xu4");
  ASSERT_TRUE(bool(p));
  EXPECT_EQ(p->name, "s8xu4");
  EXPECT_EQ(p->rhs, (ElemType{4, false}));
  p = parse_precision("s16xs16");
  ASSERT_TRUE(bool(p));
  EXPECT_EQ(p->name, "L16-R16");
  for (const char *bad : {"L17-R8", "L8-X8", "foo", "s8", "L8R8", "s8xq4"}) {
    auto b = parse_precision(bad);
    ASSERT_FALSE(bool(b)) << bad;
    std::string m = llvm::toString(b.takeError());
    EXPECT_NE(m.find(std::string("'") + bad + "'"), std::string::npos) << m;
  }
  EXPECT_EQ(default_spmm_precisions().size(), 8u);
  EXPECT_EQ(default_spmm_precisions()[5].name, "L5-R3");
  EXPECT_EQ(default_sddmm_precisions().size(), 3u);
}

TEST(BenchOptions, ConfigDefaultsQuickAndFilter) {
  auto c = make_config(BenchOptions{});
  ASSERT_TRUE(bool(c)) << llvm::toString(c.takeError());
  EXPECT_EQ(c->spmm_precisions.size(), 8u);
  EXPECT_EQ(c->sddmm_precisions.size(), 3u);
  EXPECT_EQ(c->vs, (std::vector<int>{8, 4, 2}));
  EXPECT_EQ(c->ns, (std::vector<int64_t>{256, 512}));
  EXPECT_EQ(c->sparsities, (std::vector<double>{0.5, 0.7, 0.8, 0.9, 0.95, 0.98}));
  EXPECT_EQ(c->sddmm_ks, (std::vector<int64_t>{256, 512}));
  EXPECT_EQ(c->dlmc_limit, 10);
  EXPECT_TRUE(c->synthetic && c->dlmc && c->sddmm && c->small && c->jit && c->vendors);
  EXPECT_FALSE(c->flush_l2);

  BenchOptions q;
  q.quick = true;
  c = make_config(q);
  ASSERT_TRUE(bool(c));
  EXPECT_EQ(c->spmm_precisions.size(), 5u);
  EXPECT_EQ(c->vs, (std::vector<int>{8}));
  EXPECT_EQ(c->sddmm_vs, (std::vector<int>{8}));  // SDDMM masks follow --v
  EXPECT_EQ(c->sparsities, (std::vector<double>{0.7, 0.9, 0.98}));
  EXPECT_EQ(c->dlmc_limit, 2);
  EXPECT_EQ(c->dlmc_ns, (std::vector<int64_t>{256}));

  BenchOptions f;
  f.filter = "L8-R8, L8-R4,L8-R8,u8xs4";
  f.vs = "4,2";
  f.ns = "128";
  f.sections = "synthetic,jit";
  f.dlmc_limit = 0;
  f.l2 = "flush";
  f.no_vendor = true;
  c = make_config(f);
  ASSERT_TRUE(bool(c)) << llvm::toString(c.takeError());
  ASSERT_EQ(c->spmm_precisions.size(), 3u);
  EXPECT_EQ(c->spmm_precisions[1].name, "L8-R4");
  EXPECT_EQ(c->sddmm_vs, (std::vector<int>{4, 2}));
  ASSERT_EQ(c->sddmm_precisions.size(), 2u);  // L8-R8 (an SDDMM default) and u8xs4 (not a default)
  EXPECT_EQ(c->sddmm_precisions[1].name, "u8xs4");
  EXPECT_EQ(c->vs, (std::vector<int>{4, 2}));
  EXPECT_EQ(c->ns, (std::vector<int64_t>{128}));
  EXPECT_EQ(c->dlmc_limit, 0);
  EXPECT_TRUE(c->synthetic && c->jit);
  EXPECT_FALSE(c->dlmc || c->sddmm || c->small || c->vendors);
  EXPECT_TRUE(c->flush_l2);
}

TEST(BenchOptions, BadValuesNameTheFlag) {
  auto expect_error = [](BenchOptions o, const std::string &flag) {
    auto c = make_config(o);
    ASSERT_FALSE(bool(c)) << flag;
    std::string m = llvm::toString(c.takeError());
    EXPECT_EQ(m.rfind(flag + ":", 0), 0u) << m;
  };
  BenchOptions o;
  o.vs = "8,3";
  expect_error(o, "v");
  o = {};
  o.vs = "8,x";
  expect_error(o, "v");
  o = {};
  o.ns = "0";
  expect_error(o, "n");
  o = {};
  o.sections = "synthetic,bogus";
  expect_error(o, "sections");
  o = {};
  o.filter = "L8-R8,L0-R8";
  expect_error(o, "filter");
  o = {};
  o.repeat = 0;
  expect_error(o, "repeat");
  o = {};
  o.l2 = "cold";
  expect_error(o, "l2");
  o = {};
  o.dlmc_limit = -5;
  expect_error(o, "dlmc-limit");
}

TEST(BenchProgress, LineAndPlainOutput) {
  EXPECT_EQ(Progress::format_line(0, 0, 0, "jit", "", 0), "[....................] 0/0   0% 0:00 eta 0:00 jit");
  EXPECT_EQ(Progress::format_line(50, 200, 30, "synthetic", "V=8 s=0.9 N=256 L8-R8", 0),
            "[#####...............]  50/200  25% 0:30 eta 1:30 synthetic: V=8 s=0.9 N=256 L8-R8");
  std::string cut = Progress::format_line(50, 200, 30, "synthetic", "V=8 s=0.9 N=256 L8-R8", 40);
  EXPECT_EQ(cut.size(), 40u);

  FILE *f = std::tmpfile();
  ASSERT_NE(f, nullptr);
  {
    Progress p(f, /*tty=*/false);
    p.set_total(3);
    p.step("synthetic", "a");  // a new section: a line
    p.step("synthetic", "b");  // same section within 5 s: no line
    p.step("dlmc", "c");       // a new section: a line
    p.message("hello");
    p.done();
    EXPECT_EQ(p.count(), 3);
  }
  std::rewind(f);
  std::string out;
  char buf[512];
  while (size_t n = std::fread(buf, 1, sizeof buf, f)) out.append(buf, n);
  std::fclose(f);
  EXPECT_EQ(std::count(out.begin(), out.end(), '\n'), 4) << out;
  EXPECT_EQ(out.find('\r'), std::string::npos) << out;
  EXPECT_NE(out.find("0/3   0%"), std::string::npos) << out;
  EXPECT_NE(out.find("dlmc: c"), std::string::npos) << out;
  EXPECT_NE(out.find("hello\n"), std::string::npos) << out;
  EXPECT_NE(out.find("3/3 100%"), std::string::npos) << out;
}

TEST(BenchCli, NoGpuExitsTwoWithOneLine) {
  std::string reason = no_gpu_reason();
  if (reason.empty()) GTEST_SKIP() << "a GPU is present: the no-GPU path cannot be exercised here";
  TempDir tmp;
  std::string out = tmp.path() + "/out";
  CliResult r = run_shell(shell_quote(magicube_bench_cli()) + " --quick --out-dir=" + shell_quote(out));
  EXPECT_EQ(r.status, 2) << r.output;
  EXPECT_EQ(r.output, "magicube-bench: no GPU: " + reason + "\n");
  EXPECT_FALSE(llvm::sys::fs::exists(out)) << "nothing is written without a GPU";
}

// --out-dir naming a file, and unbounded --repeat/--warmup, are found before the GPU is.
TEST(BenchCli, OutDirFileAndTimingBoundsBeforeLookingForAGpu) {
  TempDir tmp;
  const std::string file = tmp.file("results.txt");
  { std::ofstream(file) << "not a folder"; }
  CliResult r = run_shell(shell_quote(magicube_cli()) + " bench --quick --out-dir=" + shell_quote(file));
  EXPECT_EQ(r.status, 1) << r.output;
  EXPECT_NE(r.output.find("out-dir: --out-dir=" + file + " is a file, not a folder"), std::string::npos) << r.output;
  r = run_shell(shell_quote(magicube_cli()) + " bench --quick --repeat=100001");
  EXPECT_EQ(r.status, 1) << r.output;
  EXPECT_NE(r.output.find("repeat: --repeat=100001 is not allowed (allowed: 1..100000)"), std::string::npos) << r.output;
  r = run_shell(shell_quote(magicube_cli()) + " bench --quick --warmup=100001");
  EXPECT_EQ(r.status, 1) << r.output;
  EXPECT_NE(r.output.find("warmup: --warmup=100001"), std::string::npos) << r.output;
}

TEST(BenchCli, BadOptionsExitOneBeforeLookingForAGpu) {
  CliResult r = run_shell(shell_quote(magicube_bench_cli()) + " --filter=L99-R8");
  EXPECT_EQ(r.status, 1) << r.output;
  EXPECT_EQ(r.output.rfind("magicube-bench: error: filter: 'L99-R8'", 0), 0u) << r.output;
  r = run_shell(shell_quote(magicube_bench_cli()) + " --v=3");
  EXPECT_EQ(r.status, 1) << r.output;
  EXPECT_NE(r.output.find("V=3 is not allowed"), std::string::npos) << r.output;
  r = run_shell(shell_quote(magicube_bench_cli()) + " --dlmc=/no/such/dlmc.tar.gz");
  EXPECT_EQ(r.status, 1) << r.output;
  EXPECT_NE(r.output.find("dlmc: --dlmc=/no/such/dlmc.tar.gz does not exist"), std::string::npos) << r.output;
}

// `magicube bench FLAGS` is `magicube-bench FLAGS` (exec'ed from magicube's directory).
TEST(BenchCli, MagicubeBenchRunsTheBenchBinary) {
  CliResult r = run_shell(shell_quote(magicube_cli()) + " bench --filter=L99-R8");
  EXPECT_EQ(r.status, 1) << r.output;
  EXPECT_EQ(r.output.rfind("magicube-bench: error: filter: 'L99-R8'", 0), 0u) << r.output;
}

// Without magicube-bench beside it, `magicube bench` says where it looked, in one line.
TEST(BenchCli, MagicubeBenchWithoutTheBenchBinaryNamesIt) {
  TempDir tmp;
  const std::string lone = tmp.file("magicube");
  ASSERT_FALSE(bool(llvm::sys::fs::copy_file(magicube_cli(), lone)));
  ASSERT_FALSE(bool(llvm::sys::fs::setPermissions(lone, llvm::sys::fs::all_read | llvm::sys::fs::all_exe |
                                                          llvm::sys::fs::owner_write)));
  CliResult r = run_shell(shell_quote(lone) + " bench --quick");
  EXPECT_EQ(r.status, 1) << r.output;
  EXPECT_EQ(r.output.rfind("magicube: error: bench: the benchmark is its own binary, magicube-bench", 0), 0u)
      << r.output;
  EXPECT_NE(r.output.find(tmp.path()), std::string::npos) << r.output;
  EXPECT_EQ(std::count(r.output.begin(), r.output.end(), '\n'), 1) << r.output;
}

TEST(BenchPlots, WritesPngsFromASyntheticCsv) {
  if (run_shell("python3 -c 'import matplotlib'").status != 0)
    GTEST_SKIP() << "python3 with matplotlib is not installed";
  TempDir tmp;
  std::vector<ResultRow> rows = synthetic_results();
  ResultRow sd = row("synthetic", kOurs, "L8-R8", 8, 0.9, 4096, 0.01);
  sd.op = "sddmm";
  sd.k = 256;
  rows.push_back(sd);
  std::vector<ResultRow> pub = published_rows({sd});
  rows.insert(rows.end(), pub.begin(), pub.end());
  ASSERT_FALSE(bool(write_csv(tmp.path() + "/results.csv", rows)));
  CliResult r = run_shell("python3 " + shell_quote(std::string(MAGICUBE_SOURCE_DIR) + "/bench/plots.py") + " " +
                          shell_quote(tmp.path() + "/results.csv"));
  ASSERT_EQ(r.status, 0) << r.output;
  for (const char *png : {"speedup_synthetic_spmm_v8.png", "speedup_synthetic_spmm_v4.png", "geomean_synthetic_spmm.png",
                          "tops_synthetic_spmm.png", "speedup_synthetic_sddmm_v8.png", "geomean_synthetic_sddmm.png"}) {
    uint64_t size = 0;
    EXPECT_FALSE(bool(llvm::sys::fs::file_size(tmp.path() + "/" + png, size))) << png << "\n" << r.output;
    EXPECT_GT(size, 1000u) << png;
  }
}

// ---- the llm section ----------------------------------------------------------------------

TEST(BenchLlm, GridSizes) {
  auto count = [](LlmGrid g) { return llm_problems(g).size(); };
  EXPECT_EQ(count(LlmGrid::Quick), 2u * 5 * 2);                    // 2 shapes x 5 N x 2 s, V=8, L8-R8
  EXPECT_EQ(count(LlmGrid::Default), 6u * 11 * 3 * 3 + 2 * 11 * 3);  // V=8 x 3 precisions; V=4, 2 at 4096x4096
  EXPECT_EQ(count(LlmGrid::Full), 1944u);                           // 6 x 12 N x 3 s x 3 V x 3 precisions
  EXPECT_EQ(llm_dense_problems(LlmGrid::Quick).size(), 10u);
  EXPECT_EQ(llm_dense_problems(LlmGrid::Default).size(), 66u);
  EXPECT_EQ(llm_dense_problems(LlmGrid::Full).size(), 72u);  // N = 16384 too
  EXPECT_EQ(llm_shapes(LlmGrid::Default).size(), 6u);
  EXPECT_EQ(llm_shapes(LlmGrid::Default)[2], (std::pair<int64_t, int64_t>{4096, 11008}));

  auto q = llm_problems(LlmGrid::Quick);
  for (const LlmProblem &p : q) {
    EXPECT_EQ(p.v, 8);
    EXPECT_EQ(p.precision.name, "L8-R8");
  }
  EXPECT_EQ(q.front().m, 4096);
  EXPECT_EQ(q.front().n, 1);
  EXPECT_EQ(q.back().m, 11008);
  EXPECT_EQ(q.back().n, 2048);

  // Default: V=4 and V=2 only at L8-R8 on 4096x4096; L4-R8 is s4 weights x s8 activations.
  std::map<std::string, int> per;
  for (const LlmProblem &p : llm_problems(LlmGrid::Default)) {
    if (p.v != 8) {
      EXPECT_EQ(p.precision.name, "L8-R8");
      EXPECT_EQ(p.m, 4096);
      EXPECT_EQ(p.k, 4096);
    }
    ++per[p.precision.name + " V=" + std::to_string(p.v)];
    if (p.precision.name == "L4-R8") {
      EXPECT_EQ(p.precision.lhs, (ElemType{4, true}));
      EXPECT_EQ(p.precision.rhs, (ElemType{8, true}));
    }
  }
  EXPECT_EQ(per["L8-R8 V=8"], 198);
  EXPECT_EQ(per["L4-R8 V=8"], 198);
  EXPECT_EQ(per["L4-R4 V=8"], 198);
  EXPECT_EQ(per["L8-R8 V=4"], 33);
  EXPECT_EQ(per["L8-R8 V=2"], 33);
  EXPECT_EQ(per.size(), 5u);
}

TEST(BenchLlm, BytesMovedAndPeaks) {
  // Dense int8: A (M x K) + B (K x N) + C (M x N int32).
  EXPECT_DOUBLE_EQ(llm_dense_bytes(4096, 4096, 1), 4096.0 * 4096 + 4096 + 4 * 4096);
  EXPECT_DOUBLE_EQ(llm_dense_bytes(11008, 4096, 16), 11008.0 * 4096 + 4096.0 * 16 + 4.0 * 11008 * 16);
  // Padded slots: 3 row-blocks of 5, 32 and 33 vectors at stride 32 -> 32 + 32 + 64.
  EXPECT_EQ(padded_slots({0, 5, 37, 70}, 32), 128);
  EXPECT_EQ(padded_slots({0, 0}, 32), 0);
  // Ours: values (slots x V x bits / 8) + 4 per slot + 2 x 4 per row-block + B + C.
  SparseTraffic t;
  t.slots = 128;
  t.num_blocks = 3;
  t.v = 8;
  t.lhs_storage_bits = 4;
  t.rhs_storage_bits = 8;
  t.m = 24;
  t.k = 100;
  t.n = 2;
  t.out_bytes = 4;
  EXPECT_DOUBLE_EQ(llm_sparse_bytes(t), 128.0 * 8 * 4 / 8 + 4.0 * 128 + 8.0 * 3 + 100.0 * 2 + 24.0 * 2 * 4);
  // The decode kernel: 16-bit indices, no row pointers, an empty row-block still one stride.
  t.index_bytes = 2;
  t.row_pointers = false;
  EXPECT_DOUBLE_EQ(llm_sparse_bytes(t), 128.0 * 8 * 4 / 8 + 2.0 * 128 + 100.0 * 2 + 24.0 * 2 * 4);
  EXPECT_EQ(padded_slots({0, 0, 5}, 32, true), 64);
  EXPECT_EQ(padded_slots({0, 0, 5}, 32), 32);
  // In K panels of 64 columns over 3 panels: row-block 0 holds columns 0, 1 and 70 (panels 0
  // and 1, panel 2 empty), row-block 1 none: every (panel, row-block) one stride at least.
  EXPECT_EQ(padded_panel_slots({0, 3, 3}, {0, 1, 70}, 64, 3, 32), 6 * 32);
  EXPECT_EQ(padded_panel_slots({0, 40}, std::vector<int32_t>(40, 5), 64, 1, 32), 64);
  // Shares of the peaks.
  EXPECT_DOUBLE_EQ(percent_of_bandwidth(3.35e9, 1.0, kH100SxmHbmBytesPerSecond), 100.0);  // 3.35 GB in 1 ms
  EXPECT_DOUBLE_EQ(percent_of_int8_peak(kH100SxmInt8DenseTops / 2), 50.0);
  EXPECT_TRUE(std::isnan(percent_of_bandwidth(1e9, 0.0, 3.35e12)));
  EXPECT_TRUE(std::isnan(percent_of_int8_peak(kNaN)));
  EXPECT_TRUE(llm_is_decode(64) && !llm_is_decode(128) && !llm_is_prefill(128) && llm_is_prefill(512));
}

namespace {
ResultRow llm_row(const std::string &contender, const std::string &precision, int v, int64_t m, int64_t k, int64_t n,
                  double sparsity, double ms) {
  ResultRow r;
  r.source = "llm";
  r.op = "spmm";
  r.contender = contender;
  r.precision = precision;
  r.v = v;
  r.m = m;
  r.k = k;
  r.n = n;
  r.sparsity = sparsity;
  r.matrix = "llm-M" + std::to_string(m) + "-K" + std::to_string(k);
  r.nnz_vectors = contender == kOurs || contender == kOursSparse ? int64_t(std::llround((1 - sparsity) * k)) * (m / v)
                                                                 : m * k;
  r.ms = ms;
  r.tops = effective_tops(r.nnz_vectors, contender == kOurs || contender == kOursSparse ? v : 1, n, ms);
  r.status = "ok";
  if (contender == kOurs || contender == kOursSparse) r.exact = "yes";
  return r;
}
}  // namespace

TEST(BenchLlm, SummaryTableAndLines) {
  std::vector<ResultRow> rows;
  // 4096x4096 at N=1 and N=512: dense 0.02 / 0.05 ms, bf16 0.03 / 0.08, cuSPARSELt only at N=512.
  rows.push_back(llm_row(kCublasLtS8, "s8->s32", 1, 4096, 4096, 1, 0, 0.02));
  rows.push_back(llm_row(kCublasLtS8, "s8->s32", 1, 4096, 4096, 512, 0, 0.05));
  rows.push_back(llm_row(kCublasBf16, "bf16", 1, 4096, 4096, 1, 0, 0.03));
  rows.push_back(llm_row(kCublasBf16, "bf16", 1, 4096, 4096, 512, 0, 0.08));
  ResultRow lt = llm_row(kCusparseLtS8, "s8->s32", 1, 4096, 4096, 1, 0.5, kNaN);
  lt.status = "unsupported";
  lt.note = "cuSPARSELt: libcusparseLt.so.0 not found";
  rows.push_back(lt);
  rows.push_back(llm_row(kCusparseLtS8, "s8->s32", 1, 4096, 4096, 512, 0.5, 0.04));
  // Ours: at N=1 s=0.5 0.025 ms (slower: 0.80x), s=0.9 0.01 (2x); at N=512 s=0.5 0.05 (1x),
  // s=0.9 0.025 (2x). One result of ours was not checked exact.
  struct O {
    int64_t n;
    double s, ms;
  };
  for (O o : {O{1, 0.5, 0.025}, O{1, 0.9, 0.01}, O{512, 0.5, 0.05}, O{512, 0.9, 0.025}}) {
    ResultRow sparse = llm_row(kOursSparse, "L8-R8", 8, 4096, 4096, o.n, o.s, o.ms);
    sparse.bytes = 3.35e6;  // 3.35 MB: at 0.01 ms 10% of 3.35 TB/s
    ResultRow ours = sparse;
    ours.contender = kOurs;
    if (o.n == 512 && o.s == 0.9) ours.exact = "";
    rows.push_back(sparse);
    rows.push_back(ours);
  }
  RunInfo info;
  info.llm = "--llm-grid=quick";
  std::string md = llm_markdown(info, rows);
  SCOPED_TRACE(md);
  EXPECT_EQ(md.rfind("## LLM shapes", 0), 0u);
  EXPECT_NE(md.find("- never slower than dense: 3 of 4 problems (worst: 0.80x at L8-R8 V=8 4096x4096 N=1 s=0.5)"),
            std::string::npos);
  EXPECT_NE(md.find("- bit-exact: 3 of 4\n"), std::string::npos);
  EXPECT_NE(md.find("### L8-R8, V=8"), std::string::npos);
  EXPECT_NE(md.find("| M x K | N | s=0.5 ms | x dense | % peak | s=0.9 ms | x dense | % peak | sparse kernel ms (s=0.5 "
                    "/ 0.9) | dense s8 ms | % peak | bf16 ms | cuSPARSELt 2:4 ms |"),
            std::string::npos);
  // N=1 (decode): % of HBM: 3.35 MB in 0.025 ms = 4%, in 0.01 ms = 10%; dense 16.8 MB in 0.02 ms.
  double dense_pct = percent_of_bandwidth(llm_dense_bytes(4096, 4096, 1), 0.02, kH100SxmHbmBytesPerSecond);
  EXPECT_NE(md.find(fmt::format("| 4096x4096 | 1 | 0.0250 | 0.80x | 4.0% | 0.0100 | 2.00x | 10.0% | 0.0250 / 0.0100 | "
                                "0.0200 | {:.1f}% | 0.0300 | unsupported |",
                                dense_pct)),
            std::string::npos);
  // N=512 (prefill): % of 1979 TOPS.
  double ours_pct = percent_of_int8_peak(effective_tops(int64_t(std::llround(0.5 * 4096)) * 512, 8, 512, 0.05));
  EXPECT_NE(md.find(fmt::format("| 4096x4096 | 512 | 0.0500 | 1.00x | {:.1f}% |", ours_pct)), std::string::npos);
  EXPECT_NE(md.find("| 0.0500 / 0.0250 | 0.0500 |"), std::string::npos);
  EXPECT_NE(md.find("| 0.0800 | 0.0400 |\n"), std::string::npos);

  // Part of the whole summary; absent without llm rows.
  const std::string all = summary_markdown(info, rows, JitCosts{});
  EXPECT_NE(all.find("## LLM shapes"), std::string::npos);
  // The targets in the Targets table: 0.80x is outside the 3 % noise allowance.
  EXPECT_NE(all.find("| LLM: the dispatch never slower than dense cuBLASLt int8 (whole grid, against the contender's selection "
                     "time, the fastest of its configurations' medians; within 3 % timing noise) | "
                     "3 of 4 at >= 1.00x, 3 of 4 at >= 0.97x, worst 0.80x | **FAIL** |"),
            std::string::npos);
  EXPECT_NE(all.find("| LLM decode L8-R8 V=8 N <= 16 s=0.5: >= 1.4x dense (each shape and N) | min 0.80x over 1 | **FAIL** |"),
            std::string::npos);
  EXPECT_EQ(all.find("LLM decode L8-R8 V=8 N <= 16 s=0.7"), std::string::npos) << "no s=0.7 decode result";
  EXPECT_NE(all.find("| LLM decode L8-R8 V=8 N <= 16 s=0.5/0.7: the sparse kernel >= 80 % of HBM bandwidth | min 4.0% "
                     "over 1 | **FAIL** |"),
            std::string::npos);
  EXPECT_EQ(all.find("LLM prefill"), std::string::npos) << "no N >= 2048 result";
  EXPECT_EQ(summary_markdown(RunInfo{}, synthetic_results(), JitCosts{}).find("## LLM shapes"), std::string::npos);
  EXPECT_EQ(llm_markdown(RunInfo{}, synthetic_results()), "");
  // No dense time with our API's storage in these rows: no such line or target row.
  EXPECT_EQ(md.find("our API's storage"), std::string::npos);
  EXPECT_EQ(all.find("our API's storage"), std::string::npos);
}

// The decode chains' table: per-layer times, the sparse kernel and ours against the library's
// dense route's chain of the same shape, N and sparsity, the route ours took, % of HBM.
TEST(BenchLlm, ChainTable) {
  std::vector<ResultRow> rows;
  auto chain_row = [](const std::string &contender, const std::string &precision, double s, double ms) {
    ResultRow r = llm_row(contender, precision, contender == kCublasLtS8ApiStorage ? 1 : 8, 4096, 4096, 16, s, ms);
    r.source = "chain";
    r.exact = "yes (8 layers in full)";
    return r;
  };
  rows.push_back(chain_row(kCublasLtS8ApiStorage, "s8->s32", 0.5, 0.012));
  rows.push_back(chain_row(kCublasLtS8ApiStorage, "s8->s32", 0.9, 0.012));
  ResultRow sparse = chain_row(kOursSparse, "L8-R8", 0.5, 0.008);
  sparse.bytes = 3.35e6;  // at 0.008 ms: 12.5 % of 3.35 TB/s
  rows.push_back(sparse);
  ResultRow ours = sparse;
  ours.contender = kOurs;
  ours.config = "spmm... [route: sparse, the model]";
  rows.push_back(ours);
  ResultRow sparse9 = chain_row(kOursSparse, "L8-R8", 0.9, 0.016);
  sparse9.exact = "no: layer 3: ...";
  rows.push_back(sparse9);
  ResultRow ours9 = chain_row(kCublasLtS8ApiStorage, "L8-R8", 0.9, 0.012);
  ours9.contender = kOurs;
  ours9.v = 8;
  ours9.config = "dense route [route: dense, the model]";
  rows.push_back(ours9);
  RunInfo info;
  const std::string md = chain_markdown(info, rows);
  SCOPED_TRACE(md);
  EXPECT_EQ(md.rfind("## Decode chains", 0), 0u);
  EXPECT_NE(md.find("| L8-R8 | 8 | 4096x4096 | 16 | 0.5 | 0.0080 | 1.50x | sparse | 0.0080 | 1.50x | 12.5% | 0.0120 | yes |"),
            std::string::npos);
  EXPECT_NE(md.find("| L8-R8 | 8 | 4096x4096 | 16 | 0.9 | 0.0120 | 1.00x | dense | 0.0160 | 0.75x | - | 0.0120 | NO |"),
            std::string::npos);
  EXPECT_NE(summary_markdown(info, rows, JitCosts{}).find("## Decode chains"), std::string::npos);
  EXPECT_EQ(chain_markdown(info, synthetic_results()), "");
}

TEST(BenchLlm, ApiStorageDenseBesideTheStrictTarget) {
  // Dense at N=1: 0.020 ms in any storage (its winner B col, C col), 0.024 ms with B K x N
  // row-major and C M x N row-major (a row of its own). At N=16: no such row, but the
  // all-storage winner has that storage (an older CSV): the same 0.030 ms. At N=64: neither.
  std::vector<ResultRow> rows;
  ResultRow d1 = llm_row(kCublasLtS8, "s8->s32", 1, 4096, 4096, 1, 0, 0.020);
  d1.config = "cuBLASLt A row, B col, C col (TN), heuristic 2/8 (algo id 39, tile 15)";
  rows.push_back(d1);
  ResultRow a1 = llm_row(kCublasLtS8ApiStorage, "s8->s32", 1, 4096, 4096, 1, 0, 0.024);
  a1.config = "cuBLASLt A row, B row, C row (NN, as C^T = B^T A^T), heuristic 1/8 (algo id 39, tile 15)";
  rows.push_back(a1);
  ResultRow d16 = llm_row(kCublasLtS8, "s8->s32", 1, 4096, 4096, 16, 0, 0.030);
  d16.config = "cuBLASLt A row, B row, C row (NN, as C^T = B^T A^T), heuristic 2/8 (algo id 39, tile 15)";
  rows.push_back(d16);
  ResultRow d64 = llm_row(kCublasLtS8, "s8->s32", 1, 4096, 4096, 64, 0, 0.040);
  d64.config = "cuBLASLt A row, B col, C row (TN, as C^T = B^T A^T), heuristic 1/8 (algo id 39, tile 15)";
  rows.push_back(d64);
  // Ours: N=1 0.022 ms (0.91x of any storage, 1.09x of the API's), N=16 0.0305 (0.98x both),
  // N=64 0.038 (1.05x; no API-storage time).
  for (auto [n, ms] : {std::pair<int64_t, double>{1, 0.022}, {16, 0.0305}, {64, 0.038}}) {
    rows.push_back(llm_row(kOursSparse, "L8-R8", 8, 4096, 4096, n, 0.5, ms));
    rows.push_back(llm_row(kOurs, "L8-R8", 8, 4096, 4096, n, 0.5, ms));
  }
  RunInfo info;
  const std::string all = summary_markdown(info, rows, JitCosts{});
  SCOPED_TRACE(all);
  // The strict target is unchanged: against the fastest storage.
  EXPECT_NE(all.find("| LLM: the dispatch never slower than dense cuBLASLt int8 (whole grid, against the contender's selection "
                     "time, the fastest of its configurations' medians; within 3 % timing noise) | "
                     "1 of 3 at >= 1.00x, 2 of 3 at >= 0.97x, worst 0.91x | **FAIL** |"),
            std::string::npos);
  EXPECT_NE(all.find("| LLM: the dispatch never slower than dense cuBLASLt int8 with our API's storage (B K x N "
                     "row-major, C M x N row-major; information, the first row is the target) | 1 of 2 at >= 1.00x, 2 "
                     "of 2 at >= 0.97x, worst 0.98x; 1 without such a dense time | (would pass) |"),
            std::string::npos);
  EXPECT_NE(all.find("- never slower than dense: 1 of 3 problems (worst: 0.91x at L8-R8 V=8 4096x4096 N=1 s=0.5)\n"),
            std::string::npos);
  // A row-major C (any A and B): N=16's and N=64's winners have it, N=1's not.
  EXPECT_NE(all.find("| LLM: the dispatch never slower than dense cuBLASLt int8 with a row-major C (C M x N "
                     "row-major, A and B in any storage; information, the first row is the target) | 1 of 2 at >= "
                     "1.00x, 2 of 2 at >= 0.97x, worst 0.98x; 1 without such a dense time | (would pass) |"),
            std::string::npos);
  EXPECT_NE(all.find("- never slower than dense with our API's storage (B K x N row-major, C M x N row-major; the dense "
                     "contender's best of those layouts): 1 of 2 problems (worst: 0.98x at L8-R8 V=8 4096x4096 N=16 "
                     "s=0.5); 1 without such a dense time\n"),
            std::string::npos);
}

// With paired rows (ours and the dense winner timed again alternately), the target is judged
// on them; the comparison with the contender's selection time stays as information.
TEST(BenchLlm, PairedTimingDecidesTheTarget) {
  std::vector<ResultRow> rows;
  rows.push_back(llm_row(kCublasLtS8, "s8->s32", 1, 4096, 4096, 512, 0, 0.040));  // its selection time
  // Ours at s=0.5 and s=0.7: 0.042 and 0.0405 ms against the selection's 0.040 (0.95x, 0.99x).
  // Paired: s=0.5 ours 0.0410 vs dense 0.0415 (1.01x), s=0.7 ours 0.0410 vs 0.0400 (0.98x).
  struct P {
    double s, ours, ours_paired, dense_paired;
  };
  for (P p : {P{0.5, 0.042, 0.0410, 0.0415}, P{0.7, 0.0405, 0.0410, 0.0400}}) {
    rows.push_back(llm_row(kOursSparse, "L8-R8", 8, 4096, 4096, 512, p.s, p.ours));
    rows.push_back(llm_row(kOurs, "L8-R8", 8, 4096, 4096, 512, p.s, p.ours));
    rows.push_back(llm_row(kOursPaired, "L8-R8", 8, 4096, 4096, 512, p.s, p.ours_paired));
    ResultRow d = llm_row(kCublasLtS8Paired, "L8-R8", 8, 4096, 4096, 512, p.s, p.dense_paired);
    d.exact.clear();
    rows.push_back(d);
  }
  // A pair with a failed dense half counts for neither side.
  rows.push_back(llm_row(kOursPaired, "L8-R8", 8, 4096, 4096, 512, 0.9, 0.02));
  ResultRow failed = llm_row(kCublasLtS8Paired, "L8-R8", 8, 4096, 4096, 512, 0.9, kNaN);
  failed.status = "error";
  rows.push_back(failed);
  RunInfo info;
  const std::string all = summary_markdown(info, rows, JitCosts{});
  SCOPED_TRACE(all);
  EXPECT_NE(all.find("| LLM: the dispatch never slower than dense cuBLASLt int8 (whole grid, paired timing: ours and the "
                     "contender's winning configuration timed again alternately; within 3 % timing noise) | 1 of 2 at >= "
                     "1.00x, 2 of 2 at >= 0.97x, worst 0.98x (L8-R8 V=8 4096x4096 N=512 s=0.7) | **PASS** |"),
            std::string::npos);
  EXPECT_NE(all.find("| LLM: the dispatch never slower than dense cuBLASLt int8 (information, the row above is the "
                     "target; whole grid, against the contender's selection time, the fastest of its configurations' "
                     "medians; within 3 % timing noise) | 0 of 2 at >= 1.00x, 1 of 2 at >= 0.97x, worst 0.95x | (would "
                     "fail) |"),
            std::string::npos);
  EXPECT_NE(all.find("- never slower than dense, paired timing (ours and the dense contender's winning configuration "
                     "timed again, alternately in one loop): 1 of 2 problems (worst: 0.98x at L8-R8 V=8 4096x4096 "
                     "N=512 s=0.7)\n"),
            std::string::npos);
}

TEST(BenchLlm, ApiStorageIsBRowAndCRow) {
  EXPECT_TRUE(has_api_storage("cuBLASLt A row, B row, C row (NN, as C^T = B^T A^T), heuristic 2/8"));
  EXPECT_TRUE(has_api_storage("cuBLASLt A col, B row, C row (NT, as C^T = B^T A^T), heuristic 1/8"));
  EXPECT_TRUE(has_api_storage("cuBLASLt A row, B row, C row (ORDER_ROW), heuristic 1/8"));
  EXPECT_FALSE(has_api_storage("cuBLASLt A row, B col, C row (TN, as C^T = B^T A^T), heuristic 2/8"));
  EXPECT_FALSE(has_api_storage("cuBLASLt A row, B row, C col (TT), heuristic 2/8"));
  const std::vector<std::pair<std::string, double>> timed = {
      {"cuBLASLt A row, B col, C col (TN), heuristic 1/8", 0.010},
      {"cuBLASLt A row, B row, C row (NN, as C^T = B^T A^T), heuristic 1/8", 0.014},
      {"cuBLASLt A row, B row, C row (NN, as C^T = B^T A^T), heuristic 2/8", 0.012},
      {"cuBLASLt A row, B row, C row (ORDER_ROW), heuristic 1/8", kNaN},
  };
  auto best = best_where(timed, has_api_storage);
  ASSERT_TRUE(best.has_value());
  EXPECT_EQ(best->first, "cuBLASLt A row, B row, C row (NN, as C^T = B^T A^T), heuristic 2/8");
  EXPECT_DOUBLE_EQ(best->second, 0.012);
  EXPECT_FALSE(best_where({timed[0]}, has_api_storage).has_value());
  // Our output's layout: C row-major, A and B in any storage.
  EXPECT_TRUE(has_row_major_c("cuBLASLt A row, B col, C row (TN, as C^T = B^T A^T), heuristic 2/8"));
  EXPECT_TRUE(has_row_major_c("cuBLASLt A row, B row, C row (ORDER_ROW), heuristic 1/8"));
  EXPECT_FALSE(has_row_major_c("cuBLASLt A row, B col, C col (TN), heuristic 1/8"));
  const std::vector<std::pair<std::string, double>> with_b_col = {
      timed[0], timed[1], {"cuBLASLt A row, B col, C row (TN, as C^T = B^T A^T), heuristic 3/8", 0.011}};
  auto row_c = best_where(with_b_col, has_row_major_c);
  ASSERT_TRUE(row_c.has_value());
  EXPECT_DOUBLE_EQ(row_c->second, 0.011);
}

TEST(BenchLlm, OptionsAndFlag) {
  auto c = make_config(BenchOptions{});
  ASSERT_TRUE(bool(c));
  EXPECT_FALSE(c->llm);  // not part of the default run
  EXPECT_EQ(c->llm_grid, LlmGrid::Default);
  BenchOptions o;
  o.sections = "llm";
  o.llm_grid = "quick";
  c = make_config(o);
  ASSERT_TRUE(bool(c)) << llvm::toString(c.takeError());
  EXPECT_TRUE(c->llm);
  EXPECT_FALSE(c->synthetic || c->dlmc || c->sddmm || c->small || c->jit);
  EXPECT_EQ(c->llm_grid, LlmGrid::Quick);
  o.llm_grid = "full";
  c = make_config(o);
  ASSERT_TRUE(bool(c));
  EXPECT_EQ(c->llm_grid, LlmGrid::Full);
  o.llm_grid = "huge";
  c = make_config(o);
  ASSERT_FALSE(bool(c));
  EXPECT_EQ(llvm::toString(c.takeError()), "llm-grid: --llm-grid=huge is not allowed (allowed: quick, default, full)");

  // The binary refuses it before looking for a GPU.
  CliResult r = run_shell(shell_quote(magicube_bench_cli()) + " --sections=llm --llm-grid=big");
  EXPECT_EQ(r.status, 1) << r.output;
  EXPECT_EQ(r.output, "magicube-bench: error: llm-grid: --llm-grid=big is not allowed (allowed: quick, default, full)\n");
  r = run_shell(shell_quote(magicube_bench_cli()) + " --sections=llm,bogus");
  EXPECT_EQ(r.status, 1) << r.output;
  EXPECT_NE(r.output.find("(allowed: synthetic, dlmc, sddmm, small, jit, llm, chain)"), std::string::npos) << r.output;
  // Without a GPU: the one no-GPU line, exit 2.
  std::string reason = no_gpu_reason();
  if (!reason.empty()) {
    TempDir tmp;
    r = run_shell(shell_quote(magicube_bench_cli()) + " --sections=llm --llm-grid=quick --out-dir=" +
                  shell_quote(tmp.path() + "/out"));
    EXPECT_EQ(r.status, 2) << r.output;
    EXPECT_EQ(r.output, "magicube-bench: no GPU: " + reason + "\n");
  }
}

TEST(BenchLlm, FilterAndVKeepPartOfTheGrid) {
  BenchOptions o;
  o.sections = "llm";
  o.filter = "L8-R8";
  o.vs = "8";
  auto c = make_config(o);
  ASSERT_TRUE(bool(c)) << llvm::toString(c.takeError());
  const std::vector<LlmProblem> kept = llm_problems(*c);
  EXPECT_EQ(kept.size(), size_t(6 * 11 * 3));  // 6 shapes x 11 N x 3 sparsities
  for (const LlmProblem &p : kept) EXPECT_TRUE(p.precision.name == "L8-R8" && p.v == 8);
  BenchOptions all;
  all.sections = "llm";
  auto d = make_config(all);
  ASSERT_TRUE(bool(d));
  EXPECT_EQ(llm_problems(*d).size(), llm_problems(LlmGrid::Default).size());
}

TEST(BenchLlm, LlmNAndShapesKeepPartOfTheGrid) {
  BenchOptions o;
  o.sections = "llm";
  o.filter = "L8-R8";
  o.vs = "8";
  o.llm_ns = "1, 16,512,16";
  o.llm_shapes = "11008x4096,4096x4096";
  auto c = make_config(o);
  ASSERT_TRUE(bool(c)) << llvm::toString(c.takeError());
  EXPECT_EQ(c->llm_ns, (std::vector<int64_t>{1, 16, 512}));  // a repeat once
  EXPECT_EQ(c->llm_shapes, (std::vector<std::pair<int64_t, int64_t>>{{11008, 4096}, {4096, 4096}}));
  EXPECT_TRUE(c->llm_filtered());
  const std::vector<LlmProblem> kept = llm_problems(*c);
  EXPECT_EQ(kept.size(), size_t(2 * 3 * 3));  // 2 shapes x 3 N x 3 sparsities
  std::set<int64_t> ns;
  for (const LlmProblem &p : kept) {
    EXPECT_TRUE((p.m == 4096 && p.k == 4096) || (p.m == 11008 && p.k == 4096)) << p.m << "x" << p.k;
    ns.insert(p.n);
  }
  EXPECT_EQ(ns, (std::set<int64_t>{1, 16, 512}));
  // The grid's run order (shape-major), whatever order the flag names them in.
  EXPECT_EQ(llm_shapes(*c), (std::vector<std::pair<int64_t, int64_t>>{{4096, 4096}, {11008, 4096}}));
  // Dense contenders only where a problem of ours is: 2 shapes x 3 N.
  const auto dense = llm_dense_problems(*c);
  EXPECT_EQ(dense.size(), 6u);
  for (const auto &d : dense) EXPECT_TRUE(ns.count(d[2])) << d[2];
  // --v=4 keeps only 4096x4096 of the default grid: the dense contenders follow.
  BenchOptions v4;
  v4.sections = "llm";
  v4.vs = "4";
  auto c4 = make_config(v4);
  ASSERT_TRUE(bool(c4));
  EXPECT_EQ(llm_dense_problems(*c4).size(), 11u);
  EXPECT_EQ(llm_shapes(*c4).size(), 6u);  // shapes are not narrowed by --v; they simply have nothing to run
  // Without the flags: the whole grid, not "filtered".
  BenchOptions all;
  all.sections = "llm";
  auto d = make_config(all);
  ASSERT_TRUE(bool(d));
  EXPECT_FALSE(d->llm_filtered());
  EXPECT_EQ(llm_dense_problems(*d).size(), 66u);
}

TEST(BenchLlm, BadLlmNAndShapesNameTheFlagAndTheGrid) {
  auto bad = [](const char *grid, const char *ns, const char *shapes) {
    BenchOptions o;
    o.sections = "llm";
    o.llm_grid = grid;
    o.llm_ns = ns;
    o.llm_shapes = shapes;
    auto c = make_config(o);
    return c ? std::string("accepted") : llvm::toString(c.takeError());
  };
  EXPECT_EQ(bad("default", "3", ""),
            "llm-n: --llm-n=3: N=3 is not in the --llm-grid=default grid (allowed: 1, 2, 4, 8, 16, 32, 64, 128, 512, "
            "2048, 8192)");
  EXPECT_EQ(bad("quick", "8", ""),
            "llm-n: --llm-n=8: N=8 is not in the --llm-grid=quick grid (allowed: 1, 16, 64, 512, 2048)");
  EXPECT_EQ(bad("default", "1,x", ""), "llm-n: 'x' in --llm-n=1,x is not an integer");
  EXPECT_EQ(bad("default", ",", ""), "llm-n: --llm-n=, names no value");
  EXPECT_EQ(bad("default", "", "4096x4097"),
            "llm-shapes: --llm-shapes=4096x4097: 4096x4097 is not in the --llm-grid=default grid (allowed: 4096x4096, "
            "11008x4096, 4096x11008, 14336x4096, 4096x14336, 6144x4096)");
  EXPECT_EQ(bad("quick", "", "4096x11008"),
            "llm-shapes: --llm-shapes=4096x11008: 4096x11008 is not in the --llm-grid=quick grid (allowed: 4096x4096, "
            "11008x4096)");
  EXPECT_EQ(bad("default", "", "4096"), "llm-shapes: '4096' in --llm-shapes=4096 is not M x K (e.g. 4096x11008)");
  EXPECT_EQ(bad("default", "", "4096x4096x2"),
            "llm-shapes: '4096x4096x2' in --llm-shapes=4096x4096x2 is not M x K (e.g. 4096x11008)");
  EXPECT_EQ(bad("default", "", "axb"), "llm-shapes: 'axb' in --llm-shapes=axb is not M x K (e.g. 4096x11008)");
  EXPECT_EQ(bad("default", "", ","), "llm-shapes: --llm-shapes=, names no shape");
  EXPECT_EQ(bad("default", "16", "4096x14336"), "accepted");
  // The binary refuses them before looking for a GPU.
  CliResult r = run_shell(shell_quote(magicube_bench_cli()) + " --sections=llm --llm-n=5");
  EXPECT_EQ(r.status, 1) << r.output;
  EXPECT_EQ(r.output.rfind("magicube-bench: error: llm-n: --llm-n=5: N=5 is not in the --llm-grid=default grid", 0), 0u)
      << r.output;
  r = run_shell(shell_quote(magicube_bench_cli()) + " --sections=llm --llm-shapes=1x1");
  EXPECT_EQ(r.status, 1) << r.output;
  EXPECT_EQ(r.output.rfind("magicube-bench: error: llm-shapes: --llm-shapes=1x1: 1x1 is not in", 0), 0u) << r.output;
}
