// The magicube CLI, run as a child process (MAGICUBE_CLI is its path, set by CMake): plan,
// compile, cache and run, their exit statuses and messages. Every run gets its own
// MAGICUBE_CACHE_DIR under a temp dir. `run` checks bit-exactness where a GPU is present and
// the one-line no-GPU message (exit 2) where none is.
#include <gtest/gtest.h>

#include "tests/cli_util.h"

#include <cstdlib>
#include <sys/stat.h>
#include <sys/wait.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>

#include "cache/disk_cache.h"
#include "compiler/planner.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/Path.h"
#include "runtime/cuda_driver.h"


using namespace magicube;
using namespace magicube::testing;

namespace {




// Runs `magicube <args>` with MAGICUBE_CACHE_DIR=<cache_dir> (and `env`, "NAME=value ...").
// No AOT bundle unless `env` names one (MAGICUBE_BUNDLE=...): the tests expect kernels compiled
// or cached, even where a bundle was built beside the binary (MAGICUBE_AOT_BUNDLE=ON).
CliResult cli(const std::string &args, const std::string &cache_dir, const std::string &env = "") {
  return run_shell("env MAGICUBE_CACHE_DIR=" + shell_quote(cache_dir) + " MAGICUBE_BUNDLE=0 " + env + " " +
                   shell_quote(magicube_cli()) + " " + args);
}

std::string kernel_name_of(const OpSpec &spec) {
  auto p = plan(spec);
  if (!p) return "<" + llvm::toString(p.takeError()) + ">";
  return p->kernel_name();
}

bool has_gpu(std::string *reason) {
  *reason = no_gpu_reason();
  return reason->empty();
}

TEST(Cli, PlanPrintsTheKernelName) {
  TempDir tmp;
  CliResult r = cli("plan --op=spmm --lhs=s12 --rhs=u4 --v=4 --arch=sm_80", tmp.path());
  EXPECT_EQ(r.status, 0) << r.output;
  std::string want = kernel_name_of(OpSpec{OpKind::SpMM, {12, true}, {4, false}, 4, 128, true, OutType::Int32, 80});
  EXPECT_NE(r.output.find(want), std::string::npos) << want << " not in:\n" << r.output;
  EXPECT_NE(r.output.find("plan spmm.s12xu4.v4.n128.pf.i32.sm_80"), std::string::npos) << r.output;
}

// --shares pins the decode kernel with shares of all slices (spec n..s); with K panels it is refused
// by name.
TEST(Cli, PlanWithShares) {
  TempDir tmp;
  CliResult r = cli("plan --lhs=s8 --rhs=s8 --v=8 --bsn=48 --warps=20 --shares --arch=sm_90", tmp.path());
  EXPECT_EQ(r.status, 0) << r.output;
  EXPECT_NE(r.output.find("plan spmm.s8xs8.v8.n48dw20s.pf.i32.sm_90"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("magicube_spmm_s8s8_v8_n48dw20s_pf_sm90"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("a share of every slice's strides"), std::string::npos) << r.output;
  CliResult bad = cli("plan --lhs=s8 --rhs=s8 --v=8 --bsn=48 --panel=4800 --shares --arch=sm_90", tmp.path());
  EXPECT_NE(bad.status, 0);
  EXPECT_NE(bad.output.find("shares"), std::string::npos) << bad.output;
}

TEST(Cli, PlanAllAndCandidate) {
  TempDir tmp;
  auto plans = plan_candidates(OpSpec{OpKind::SpMM, {12, true}, {4, false}, 4, 128, true, OutType::Int32, 80});
  ASSERT_TRUE(bool(plans)) << llvm::toString(plans.takeError());
  ASSERT_GE(plans->size(), 2u);
  CliResult all = cli("plan --lhs=s12 --rhs=u4 --v=4 --arch=sm_80 --all", tmp.path());
  EXPECT_EQ(all.status, 0) << all.output;
  for (const Plan &p : *plans) EXPECT_NE(all.output.find(p.kernel_name()), std::string::npos) << p.kernel_name();
  CliResult second = cli("plan --lhs=s12 --rhs=u4 --v=4 --arch=sm_80 --candidate=1", tmp.path());
  EXPECT_EQ(second.status, 0) << second.output;
  EXPECT_NE(second.output.find((*plans)[1].kernel_name()), std::string::npos) << second.output;
  CliResult bad = cli("plan --lhs=s12 --rhs=u4 --v=4 --arch=sm_80 --candidate=" + std::to_string(plans->size()),
                   tmp.path());
  EXPECT_NE(bad.status, 0);
  EXPECT_NE(bad.output.find("candidate"), std::string::npos) << bad.output;
}

// Each invalid op: non-zero exit, and the message names the field and the value.
TEST(Cli, InvalidOpsNameTheField) {
  TempDir tmp;
  struct Bad {
    std::string flags, field, value;
  } bad[] = {
      {"--lhs=s0", "lhs", "s0"},     {"--rhs=u17", "rhs", "u17"},   {"--lhs=s17", "lhs", "s17"},
      {"--v=3", "v", "V=3"},         {"--op=gemm", "op", "gemm"},   {"--arch=sm_75", "arch", "sm_75"},
      {"--bsn=48", "bsn", "48"},     {"--out=int8", "out", "int8"}, {"--format=yaml", "format", "yaml"},
  };
  for (const Bad &b : bad) {
    CliResult r = cli("plan " + b.flags, tmp.path());
    EXPECT_NE(r.status, 0) << b.flags;
    EXPECT_NE(r.output.find("magicube: error: " + b.field + ":"), std::string::npos) << b.flags << ":\n" << r.output;
    EXPECT_NE(r.output.find(b.value), std::string::npos) << b.flags << ":\n" << r.output;
  }
  // The same flags are validated by compile and run.
  CliResult c = cli("compile --lhs=s17 --emit=cuda -o " + shell_quote(tmp.file("x.cu")), tmp.path());
  EXPECT_NE(c.status, 0);
  EXPECT_NE(c.output.find("lhs:"), std::string::npos) << c.output;
  CliResult r = cli("run --v=3 --m=8 --k=8 --sparsity=0.5 --n=8", tmp.path());
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.output.find("v:"), std::string::npos) << r.output;
}

TEST(Cli, NoCommandOrUnknownCommand) {
  TempDir tmp;
  CliResult none = cli("", tmp.path());
  EXPECT_NE(none.status, 0);
  EXPECT_NE(none.output.find("no command"), std::string::npos) << none.output;
  CliResult unknown = cli("frobnicate", tmp.path());
  EXPECT_NE(unknown.status, 0);
}

TEST(Cli, PlanJsonParses) {
  TempDir tmp;
  CliResult r = cli("plan --op=spmm --lhs=s8 --rhs=s8 --v=8 --arch=sm_90 --format=json", tmp.path());
  ASSERT_EQ(r.status, 0) << r.output;
  auto v = llvm::json::parse(r.output);
  ASSERT_TRUE(bool(v)) << llvm::toString(v.takeError()) << "\n" << r.output;
  const llvm::json::Object *o = v->getAsObject();
  ASSERT_NE(o, nullptr);
  EXPECT_EQ(o->getString("kernel").getValueOr(""),
            kernel_name_of(OpSpec{OpKind::SpMM, {8, true}, {8, true}, 8, 128, true, OutType::Int32, 90}));

  CliResult all = cli("plan --lhs=s12 --rhs=u4 --v=4 --format=json --all", tmp.path());
  ASSERT_EQ(all.status, 0) << all.output;
  auto arr = llvm::json::parse(all.output);
  ASSERT_TRUE(bool(arr)) << llvm::toString(arr.takeError());
  ASSERT_NE(arr->getAsArray(), nullptr);
  EXPECT_GE(arr->getAsArray()->size(), 1u);
}

TEST(Cli, CompileEmitsCuda) {
  TempDir tmp;
  std::string out = tmp.file("k.cu");
  CliResult r = cli("compile --lhs=s12 --rhs=u4 --v=4 --arch=sm_80 --emit=cuda -o " + shell_quote(out), tmp.path());
  ASSERT_EQ(r.status, 0) << r.output;
  std::string src = read_file(out);
  std::string name = kernel_name_of(OpSpec{OpKind::SpMM, {12, true}, {4, false}, 4, 128, true, OutType::Int32, 80});
  EXPECT_NE(src.find(name), std::string::npos) << name;
  EXPECT_NE(src.find("extern \"C\""), std::string::npos);
  EXPECT_NE(r.output.find(out), std::string::npos) << r.output;  // the summary names the file

  // -o - writes to stdout.
  CliResult s = cli("compile --lhs=s12 --rhs=u4 --v=4 --arch=sm_80 --emit=cuda -o -", tmp.path());
  ASSERT_EQ(s.status, 0);
  EXPECT_EQ(s.output, src);
}

TEST(Cli, CompileEmitsPtx) {
  TempDir tmp;
  std::string out = tmp.file("k.ptx");
  CliResult r = cli("compile --lhs=s8 --rhs=u4 --v=8 --arch=sm_90 --emit=ptx -o " + shell_quote(out), tmp.path());
  ASSERT_EQ(r.status, 0) << r.output;
  std::string ptx = read_file(out);
  EXPECT_NE(ptx.find(".target sm_90"), std::string::npos);
  EXPECT_NE(ptx.find("mma.sync"), std::string::npos);
  EXPECT_NE(ptx.find(kernel_name_of(OpSpec{OpKind::SpMM, {8, true}, {4, false}, 8, 128, true, OutType::Int32, 90})),
            std::string::npos);
}

TEST(Cli, CompileEmitsCubinThroughTheCache) {
  TempDir tmp;
  std::string cache = tmp.file("cache"), out = tmp.file("k.cubin");
  CliResult r = cli("compile --lhs=s8 --rhs=s8 --v=8 --arch=sm_90 --emit=cubin -o " + shell_quote(out), cache);
  ASSERT_EQ(r.status, 0) << r.output;
  std::string cubin = read_file(out);
  ASSERT_GE(cubin.size(), 4u);
  EXPECT_EQ(cubin.substr(0, 4), std::string("\x7f" "ELF"));
  CliResult st = cli("cache stats", cache);
  EXPECT_EQ(st.status, 0) << st.output;
  EXPECT_NE(st.output.find("entries  1\n"), std::string::npos) << st.output;
  // A second compile is a disk hit with the same bytes.
  std::string out2 = tmp.file("k2.cubin");
  CliResult again = cli("compile --lhs=s8 --rhs=s8 --v=8 --arch=sm_90 --emit=cubin -o " + shell_quote(out2), cache);
  ASSERT_EQ(again.status, 0) << again.output;
  EXPECT_EQ(read_file(out2), cubin);
}

TEST(Cli, CompileRefusesBadEmitOrMissingOutput) {
  TempDir tmp;
  CliResult bad = cli("compile --emit=sass -o " + shell_quote(tmp.file("x")), tmp.path());
  EXPECT_NE(bad.status, 0);
  EXPECT_NE(bad.output.find("emit: 'sass'"), std::string::npos) << bad.output;
  EXPECT_NE(bad.output.find("cuda, ptx, cubin"), std::string::npos) << bad.output;
  CliResult none = cli("compile -o " + shell_quote(tmp.file("x")), tmp.path());
  EXPECT_NE(none.status, 0);
  EXPECT_NE(none.output.find("--emit is required"), std::string::npos) << none.output;
  CliResult no_o = cli("compile --emit=cuda", tmp.path());
  EXPECT_NE(no_o.status, 0);
  EXPECT_NE(no_o.output.find("-o"), std::string::npos) << no_o.output;
  EXPECT_FALSE(llvm::sys::fs::exists(tmp.file("x")));
  CliResult unwritable = cli("compile --emit=cuda -o " + shell_quote(tmp.file("no/such/dir/x.cu")), tmp.path());
  EXPECT_NE(unwritable.status, 0);
  EXPECT_NE(unwritable.output.find("no/such/dir/x.cu"), std::string::npos) << unwritable.output;
}

TEST(Cli, CachePathStatsClear) {
  TempDir tmp;
  std::string cache = tmp.file("kernels");
  CliResult path = cli("cache path", cache);
  EXPECT_EQ(path.status, 0);
  EXPECT_EQ(path.output, cache + "\n");

  CliResult empty = cli("cache stats", cache);
  EXPECT_EQ(empty.status, 0) << empty.output;
  EXPECT_NE(empty.output.find("entries  0\n"), std::string::npos) << empty.output;
  EXPECT_NE(empty.output.find(cache), std::string::npos) << empty.output;

  ASSERT_EQ(cli("compile --emit=cubin -o " + shell_quote(tmp.file("a.cubin")), cache).status, 0);
  ASSERT_EQ(cli("compile --lhs=u4 --rhs=s4 --emit=cubin -o " + shell_quote(tmp.file("b.cubin")), cache).status, 0);
  // A file that is not an entry survives clear.
  { std::ofstream(cache + "/notes.txt") << "keep me"; }
  CliResult two = cli("cache stats", cache);
  EXPECT_NE(two.output.find("entries  2\n"), std::string::npos) << two.output;

  CliResult clear = cli("cache clear", cache);
  EXPECT_EQ(clear.status, 0) << clear.output;
  EXPECT_NE(clear.output.find("cleared 2 entries"), std::string::npos) << clear.output;
  CliResult after = cli("cache stats", cache);
  EXPECT_NE(after.output.find("entries  0\n"), std::string::npos) << after.output;
  EXPECT_TRUE(llvm::sys::fs::exists(cache + "/notes.txt"));

  CliResult disabled = cli("cache stats", cache, "MAGICUBE_CACHE=0");
  EXPECT_EQ(disabled.status, 0);
  EXPECT_NE(disabled.output.find("enabled  no"), std::string::npos) << disabled.output;

  CliResult bad = cli("cache purge", cache);
  EXPECT_NE(bad.status, 0);
  EXPECT_NE(bad.output.find("'purge'"), std::string::npos) << bad.output;
  EXPECT_NE(bad.output.find("path, stats, clear, warm, inspect"), std::string::npos) << bad.output;
}

// cache warm compiles a list of specs into an AOT bundle, cache inspect lists and verifies it,
// and a fresh process with MAGICUBE_BUNDLE set takes its kernel from the bundle (nothing
// compiled, nothing stored on disk), byte for byte NVRTC's. A corrupt bundle is refused with
// a warning and NVRTC takes over with the same bytes.
TEST(Cli, CacheWarmInspectAndUseABundle) {
  TempDir tmp;
  const std::string list = tmp.file("specs.txt"), bundle = tmp.file("aot/kernels.mcbundle");
  {
    std::ofstream(list) << "# two kernels\nspmm.s8xs8.v8.n128.pf.i32.sm_90\n\n"
                           "sddmm.s8xs8.v8.n128.pf.i32.sm_90  # and SDDMM\n";
  }
  CliResult warm = cli("cache warm --list=" + shell_quote(list) + " --jobs=2 -o " + shell_quote(bundle), tmp.file("c0"));
  ASSERT_EQ(warm.status, 0) << warm.output;
  EXPECT_NE(warm.output.find("compiling 2 kernels"), std::string::npos) << warm.output;
  EXPECT_NE(warm.output.find("wrote " + bundle + ": 2 kernels"), std::string::npos) << warm.output;
  struct stat st {};
  ASSERT_EQ(::stat(bundle.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0644u);

  CliResult inspect = cli("cache inspect " + shell_quote(bundle), tmp.file("c0"));
  EXPECT_EQ(inspect.status, 0) << inspect.output;
  EXPECT_NE(inspect.output.find("entries    2\n"), std::string::npos) << inspect.output;
  EXPECT_NE(inspect.output.find("'spmm.s8xs8.v8.n128.pf.i32.sm_90'"), std::string::npos) << inspect.output;
  EXPECT_NE(inspect.output.find("'sddmm.s8xs8.v8.n128.pf.i32.sm_90'"), std::string::npos) << inspect.output;
  EXPECT_NE(inspect.output.find("usable     yes"), std::string::npos) << inspect.output;
  EXPECT_NE(inspect.output.find("verified   header, index and all 2 cubins"), std::string::npos) << inspect.output;

  const std::string flags = "compile --lhs=s8 --rhs=s8 --v=8 --bsn=128 --arch=sm_90 --emit=cubin -o ";
  ASSERT_EQ(cli(flags + shell_quote(tmp.file("nvrtc.cubin")), tmp.file("c1")).status, 0);
  const std::string nvrtc = read_file(tmp.file("nvrtc.cubin"));
  CliResult hit = cli(flags + shell_quote(tmp.file("bundle.cubin")), tmp.file("c2"),
                      "MAGICUBE_BUNDLE=" + shell_quote(bundle) + " MAGICUBE_LOG_LEVEL=debug");
  ASSERT_EQ(hit.status, 0) << hit.output;
  EXPECT_NE(hit.output.find("AOT bundle hit"), std::string::npos) << hit.output;
  EXPECT_EQ(hit.output.find("nvrtc compiled"), std::string::npos) << hit.output;
  EXPECT_EQ(read_file(tmp.file("bundle.cubin")), nvrtc);
  CliResult stats = cli("cache stats", tmp.file("c2"), "MAGICUBE_BUNDLE=" + shell_quote(bundle));
  EXPECT_NE(stats.output.find("entries  0\n"), std::string::npos) << stats.output;
  EXPECT_NE(stats.output.find("bundle   " + bundle + ": 2 kernels"), std::string::npos) << stats.output;
  EXPECT_NE(cli("cache stats", tmp.file("c2")).output.find("bundles  none (MAGICUBE_BUNDLE=0)"), std::string::npos);

  // Corrupt the last cubin's last byte: inspect fails naming the entry; a run warns and compiles.
  std::string raw = read_file(bundle);
  raw.back() ^= 0x5a;
  { std::ofstream(bundle, std::ios::binary | std::ios::trunc) << raw; }
  CliResult bad = cli("cache inspect " + shell_quote(bundle), tmp.file("c0"));
  EXPECT_EQ(bad.status, 1) << bad.output;
  EXPECT_NE(bad.output.find("is corrupt: entry 'sddmm.s8xs8.v8.n128.pf.i32.sm_90'"), std::string::npos) << bad.output;
  CliResult fallback = cli("compile --op=sddmm --lhs=s8 --rhs=s8 --v=8 --bsn=128 --arch=sm_90 --emit=cubin -o " +
                               shell_quote(tmp.file("sddmm.cubin")),
                           tmp.file("c3"), "MAGICUBE_BUNDLE=" + shell_quote(bundle));
  ASSERT_EQ(fallback.status, 0) << fallback.output;
  EXPECT_NE(fallback.output.find("AOT kernel bundle " + bundle + " refused"), std::string::npos) << fallback.output;
  EXPECT_NE(cli("cache stats", tmp.file("c3")).output.find("entries  1\n"), std::string::npos);
}

// Options from MAGICUBE_NVRTC_OPTIONS reach NVRTC and the cache key: the same plan compiled
// with and without them is two entries; a token that is no option is warned about, ignored.
TEST(Cli, NvrtcOptionsFromTheEnvironmentArePartOfTheKey) {
  TempDir tmp;
  // (a float output: its kernel is CUDA, which NVRTC compiles; PTX kernels take no NVRTC options)
  const std::string cache = tmp.file("c"), flags = "compile --lhs=s8 --rhs=s8 --v=8 --out=f32 --arch=sm_90 --emit=cubin -o ";
  ASSERT_EQ(cli(flags + shell_quote(tmp.file("a.cubin")), cache).status, 0);
  CliResult with = cli(flags + shell_quote(tmp.file("b.cubin")), cache,
                       "MAGICUBE_NVRTC_OPTIONS=" + shell_quote("-lineinfo bogus --time=" + tmp.file("t.csv")));
  ASSERT_EQ(with.status, 0) << with.output;
  EXPECT_NE(with.output.find("ignoring 'bogus'"), std::string::npos) << with.output;
  EXPECT_NE(read_file(tmp.file("t.csv")).find("NVVM Optimizer"), std::string::npos);
  EXPECT_NE(cli("cache stats", cache).output.find("entries  2\n"), std::string::npos);
}

// The common ring plan's kernel is written in PTX: --emit=ptx gives ours, --emit=cuda the same
// plan's CUDA kernel; MAGICUBE_PTX=0 plans CUDA kernels (NVVM's PTX then).
TEST(Cli, CompileEmitsThePtxKernelAndMagicubePtx0TurnsItOff) {
  TempDir tmp;
  const std::string flags = "compile --op=spmm --lhs=s8 --rhs=s8 --v=8 --bsn=128 --arch=sm_90 ";
  ASSERT_EQ(cli(flags + "--emit=ptx -o " + shell_quote(tmp.file("k.ptx")), tmp.file("c")).status, 0);
  const std::string ours = read_file(tmp.file("k.ptx"));
  EXPECT_NE(ours.find("// Generated by Magicube JIT"), std::string::npos);
  EXPECT_NE(ours.find(".visible .entry magicube_spmm_s8s8_v8_n128_pf_sm90("), std::string::npos);
  CliResult cu = cli(flags + "--emit=cuda -o " + shell_quote(tmp.file("k.cu")), tmp.file("c"));
  ASSERT_EQ(cu.status, 0) << cu.output;
  EXPECT_NE(cu.output.find("the plan runs it written in PTX"), std::string::npos) << cu.output;
  EXPECT_NE(read_file(tmp.file("k.cu")).find("extern \"C\" __global__"), std::string::npos);
  CliResult off = cli(flags + "--emit=ptx -o " + shell_quote(tmp.file("n.ptx")), tmp.file("c"), "MAGICUBE_PTX=0");
  ASSERT_EQ(off.status, 0) << off.output;
  EXPECT_NE(read_file(tmp.file("n.ptx")).find("Generated by NVIDIA NVVM Compiler"), std::string::npos);
  ASSERT_EQ(cli(flags + "--emit=cubin -o " + shell_quote(tmp.file("k.cubin")), tmp.file("c")).status, 0);
  EXPECT_EQ(read_file(tmp.file("k.cubin")).substr(0, 4), "\x7f" "ELF");
}

TEST(Cli, CacheWarmAndInspectRefuseBadInput) {
  TempDir tmp;
  const std::string list = tmp.file("specs.txt");
  { std::ofstream(list) << "spmm.s8xs8.v8.n128.pf.i32.sm_90\nspmm.s8xs8.v3.i32.sm_90\n"; }
  CliResult bad_line = cli("cache warm --list=" + shell_quote(list) + " -o " + shell_quote(tmp.file("b")), tmp.path());
  EXPECT_EQ(bad_line.status, 1);
  EXPECT_NE(bad_line.output.find(list + ":2: 'spmm.s8xs8.v3.i32.sm_90'"), std::string::npos) << bad_line.output;
  CliResult no_out = cli("cache warm --list=" + shell_quote(list), tmp.path());
  EXPECT_EQ(no_out.status, 1);
  EXPECT_NE(no_out.output.find("-o: the bundle to write is required"), std::string::npos) << no_out.output;
  CliResult bad_arch = cli("cache warm --arch=sm_75 -o " + shell_quote(tmp.file("b")), tmp.path());
  EXPECT_EQ(bad_arch.status, 1);
  EXPECT_NE(bad_arch.output.find("arch:"), std::string::npos) << bad_arch.output;
  CliResult missing = cli("cache inspect " + shell_quote(tmp.file("none.mcbundle")), tmp.path());
  EXPECT_EQ(missing.status, 1);
  EXPECT_NE(missing.output.find("refused: does not exist"), std::string::npos) << missing.output;
  CliResult two = cli("cache inspect", tmp.path());
  EXPECT_EQ(two.status, 1);
  CliResult extra = cli("cache stats --list=x", tmp.path());
  EXPECT_EQ(extra.status, 1);
  EXPECT_NE(extra.output.find("go with cache warm"), std::string::npos) << extra.output;
  EXPECT_FALSE(llvm::sys::fs::exists(tmp.file("b")));
}

// A kernel planted by another user in a shared (0777) cache dir, with a valid header and
// SHA-256, is not what compile writes: the dir is refused with one warning and the kernel
// compiled afresh. stats and clear refuse the dir by name.
TEST(Cli, PlantedKernelInASharedCacheDirIsNeverServed) {
  TempDir tmp;
  const std::string mine = tmp.file("mine"), shared = tmp.file("shared");
  const std::string flags = "compile --lhs=s8 --rhs=s8 --v=8 --arch=sm_90 --emit=cubin -o ";
  ASSERT_EQ(cli(flags + shell_quote(tmp.file("genuine.cubin")), mine).status, 0);
  const std::string genuine = read_file(tmp.file("genuine.cubin"));
  std::string entry;
  std::error_code ec;
  for (llvm::sys::fs::directory_iterator it(mine, ec), end; it != end && !ec; it.increment(ec))
    if (llvm::StringRef(it->path()).endswith(".cubin")) entry = llvm::sys::path::filename(it->path()).str();
  ASSERT_FALSE(entry.empty());
  ASSERT_EQ(::mkdir(shared.c_str(), 0700), 0);
  { std::ofstream(shared + "/" + entry, std::ios::binary) << encode_cache_entry("PLANTED: not our kernel"); }
  ASSERT_EQ(::chmod(shared.c_str(), 0777), 0);

  CliResult r = cli(flags + shell_quote(tmp.file("out.cubin")), shared);
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_EQ(read_file(tmp.file("out.cubin")), genuine);
  const std::string warning = "cache dir " + shared + " has mode 0777, writable by every user";
  size_t at = r.output.find(warning);
  EXPECT_NE(at, std::string::npos) << r.output;
  EXPECT_EQ(r.output.find(warning, at + 1), std::string::npos) << "warned more than once:\n" << r.output;
  EXPECT_EQ(read_file(shared + "/" + entry).find("PLANTED"), size_t(DiskCache::kHeaderSize));  // left alone

  for (const char *action : {"stats", "clear"}) {
    CliResult c = cli(std::string("cache ") + action, shared);
    EXPECT_EQ(c.status, 1) << action << "\n" << c.output;
    EXPECT_NE(c.output.find(warning), std::string::npos) << c.output;
  }
  EXPECT_TRUE(llvm::sys::fs::exists(shared + "/" + entry));
}

// stats and clear never create a missing dir; a symlink named like an entry is not one.
TEST(Cli, CacheStatsNeitherCreatesTheDirNorCountsSymlinks) {
  TempDir tmp;
  const std::string cache = tmp.file("not-yet");
  for (const char *action : {"stats", "clear"}) {
    CliResult r = cli(std::string("cache ") + action, cache);
    EXPECT_EQ(r.status, 0) << r.output;
    EXPECT_NE(r.output.find("does not exist"), std::string::npos) << r.output;
    EXPECT_FALSE(llvm::sys::fs::exists(cache)) << "cache " << action << " created the dir";
  }
  ASSERT_EQ(cli("compile --emit=cubin -o " + shell_quote(tmp.file("a.cubin")), cache).status, 0);
  const std::string foreign = tmp.file("foreign.bin");
  { std::ofstream(foreign) << std::string(100000, 'x'); }
  const std::string link = cache + "/" + std::string(64, 'a') + ".cubin";
  ASSERT_EQ(::symlink(foreign.c_str(), link.c_str()), 0);
  CliResult st = cli("cache stats", cache);
  EXPECT_EQ(st.status, 0) << st.output;
  EXPECT_NE(st.output.find("entries  1\n"), std::string::npos) << st.output;
  EXPECT_NE(st.output.find("bound    1.0 GiB"), std::string::npos) << st.output;
  CliResult bound = cli("cache stats", cache, "MAGICUBE_CACHE_MAX_BYTES=64M");
  EXPECT_NE(bound.output.find("bound    64.0 MiB"), std::string::npos) << bound.output;
  ASSERT_EQ(cli("cache clear", cache).status, 0);
  EXPECT_TRUE(llvm::sys::fs::exists(foreign));  // the link went, its target stayed
}

// Environment values that mean nothing are named in a warning, not ignored in silence.
TEST(Cli, UnknownEnvironmentValuesAreWarnedAbout) {
  TempDir tmp;
  CliResult lvl = cli("plan", tmp.path(), "MAGICUBE_LOG_LEVEL=garbage");
  EXPECT_EQ(lvl.status, 0) << lvl.output;
  EXPECT_NE(lvl.output.find("MAGICUBE_LOG_LEVEL='garbage' is not a level"), std::string::npos) << lvl.output;
  CliResult cache = cli("compile --emit=cubin -o " + shell_quote(tmp.file("k.cubin")), tmp.file("c"),
                        "MAGICUBE_CACHE=banana");
  EXPECT_EQ(cache.status, 0) << cache.output;
  EXPECT_NE(cache.output.find("MAGICUBE_CACHE='banana' is not 0 or 1"), std::string::npos) << cache.output;
  CliResult bytes = cli("compile --emit=cubin -o " + shell_quote(tmp.file("k.cubin")), tmp.file("c"),
                        "MAGICUBE_CACHE_MAX_BYTES=lots");
  EXPECT_NE(bytes.output.find("MAGICUBE_CACHE_MAX_BYTES='lots' is not a size"), std::string::npos) << bytes.output;
  CliResult quiet = cli("compile --emit=cubin -o " + shell_quote(tmp.file("k.cubin")), tmp.file("c"),
                        "MAGICUBE_CACHE=1 MAGICUBE_LOG_LEVEL=warn");
  EXPECT_EQ(quiet.output.find("warn"), std::string::npos) << quiet.output;
}

// Sizes no machine can hold used to die with SIGABRT (an uncaught std::bad_alloc or
// std::length_error, exit 134, no message). They are worked out before anything is
// allocated and refused with exit 1 and a message naming the size; no GPU is needed.
TEST(Cli, HugeSizesAreRefusedBeforeAllocating) {
  TempDir tmp;
  const std::string big = "--m=2147483647 --k=2147483647 --sparsity=0.999 --n=2147483647";
  std::string smtx = tmp.file("wide.smtx");  // 23 bytes: one row of 2^31-1 columns, one nonzero
  { std::ofstream(smtx) << "1, 2147483647, 1\n0 1\n5\n"; }
  ASSERT_EQ(read_file(smtx).size(), 23u);
  struct Case {
    std::string args, needle;
  } cases[] = {
      {"run --lhs=s8 --rhs=s8 --v=8 " + big, "of host memory"},
      {"run --lhs=s8 --rhs=s8 --v=8 --matrix=" + shell_quote(smtx) + " --n=64", "B: K x N int64 values"},
      {"run --op=sddmm --lhs=s8 --rhs=s8 --v=8 --m=2147483647 --n=2147483647 --sparsity=0.999 --k=2147483647",
       "of host memory"},
      {"run --op=sddmm --lhs=s8 --rhs=s8 --v=8 --matrix=" + shell_quote(smtx) + " --k=64",
       "SDDMM M=8 K=64 N=2147483647 V=8 with 1 vectors needs about 2.0 TiB"},
      {"run --lhs=s8 --rhs=s8 --v=8 --m=64 --k=64 --sparsity=0.5 --n=2147483647", "of host memory"},
      {"tune --lhs=s8 --rhs=s8 --v=8 " + big, "of host memory"},
      {"tune --lhs=s8 --rhs=s8 --v=8 --matrix=" + shell_quote(smtx) + " --n=64", "of host memory"},
      {"tune --op=sddmm --lhs=s8 --rhs=s8 --v=8 --m=2147483647 --n=2147483647 --sparsity=0.5 --k=64",
       "of host memory"},
  };
  for (const Case &c : cases) {
    CliResult r = cli(c.args, tmp.path());
    EXPECT_EQ(r.status, 1) << c.args << "\n" << r.output;
    EXPECT_NE(r.output.find("magicube: error: "), std::string::npos) << c.args << "\n" << r.output;
    EXPECT_NE(r.output.find(c.needle), std::string::npos) << c.args << "\n" << r.output;
    EXPECT_NE(r.output.find("refusing it before allocating"), std::string::npos) << c.args << "\n" << r.output;
  }
  // The limit is this process's: a small one refuses a modest problem, naming the limit.
  CliResult small = cli("run --m=4096 --k=4096 --sparsity=0.5 --n=4096", tmp.path(), "MAGICUBE_HOST_MEMORY_LIMIT=64M");
  EXPECT_EQ(small.status, 1) << small.output;
  EXPECT_NE(small.output.find("the limit is 64.0 MiB"), std::string::npos) << small.output;
  EXPECT_NE(small.output.find("size: SpMM M=4096 K=4096 N=4096 V=8"), std::string::npos) << small.output;
}

// Checks that came late or not at all: a pattern with no rows or columns (as --m=0 is
// refused), --repeat/--warmup beyond their bounds, a tuning run's timing flags too.
TEST(Cli, EmptyPatternsAndUnboundedTimingFlagsAreRefused) {
  TempDir tmp;
  std::string no_rows = tmp.file("no-rows.smtx"), no_cols = tmp.file("no-cols.smtx");
  { std::ofstream(no_rows) << "0, 5, 0\n0\n"; }
  { std::ofstream(no_cols) << "3, 0, 0\n0 0 0 0\n"; }
  struct Case {
    std::string args, needle;
  } cases[] = {
      {"run --matrix=" + shell_quote(no_rows) + " --n=8", "has 0 rows and 5 columns (allowed: at least 1 of each)"},
      {"run --matrix=" + shell_quote(no_cols) + " --n=8", "has 3 rows and 0 columns"},
      {"run --op=sddmm --matrix=" + shell_quote(no_cols) + " --k=8", "has 3 rows and 0 columns"},
      {"tune --matrix=" + shell_quote(no_rows) + " --n=8", "has 0 rows"},
      {"run --m=16 --k=16 --sparsity=0.5 --n=8 --repeat=100001", "repeat: --repeat=100001 is not allowed (allowed: 1..100000)"},
      {"run --m=16 --k=16 --sparsity=0.5 --n=8 --warmup=2000000000", "warmup: --warmup=2000000000 is not allowed"},
      {"run --m=16 --k=16 --sparsity=0.5 --n=8 --warmup=-1", "warmup: --warmup=-1"},
      {"tune --m=16 --k=16 --sparsity=0.5 --n=8 --repeat=1000000", "repeat: --repeat=1000000"},
  };
  for (const Case &c : cases) {
    CliResult r = cli(c.args, tmp.path());
    EXPECT_EQ(r.status, 1) << c.args << "\n" << r.output;
    EXPECT_NE(r.output.find(c.needle), std::string::npos) << c.args << "\n" << r.output;
  }
}

// A .smtx token with a terminal escape or a NUL is quoted in the message: the escape cannot
// reach the terminal and the NUL does not cut the message short.
TEST(Cli, MessagesQuoteTheFilesBytes) {
  TempDir tmp;
  std::string evil = tmp.file("evil.smtx");
  {
    std::ofstream f(evil, std::ios::binary);
    f << "2, 3, 2\n0 1 2\n0 1\x1b]0;pwned\x07" << std::string(1, '\0') << "x\n";
  }
  CliResult r = cli("run --matrix=" + shell_quote(evil) + " --n=8", tmp.path());
  EXPECT_EQ(r.status, 1) << r.output;
  EXPECT_EQ(r.output.find('\x1b'), std::string::npos) << "a raw escape reached the terminal";
  EXPECT_EQ(r.output.find('\x07'), std::string::npos);
  EXPECT_NE(r.output.find("col_idx[1] '1\\x1b]0;pwned\\x07\\x00x' is not a non-negative integer"), std::string::npos)
      << r.output;
  // Spec text is quoted the same way.
  CliResult lhs = cli("plan --lhs=\"$(printf 's8\\033[2J')\"", tmp.path());
  EXPECT_EQ(lhs.status, 1) << lhs.output;
  EXPECT_EQ(lhs.output.find('\x1b'), std::string::npos) << lhs.output;
  EXPECT_NE(lhs.output.find("lhs: 's8\\x1b[2J' is not an element type"), std::string::npos) << lhs.output;
}

// The bad-input battery: every class of bad input the CLI takes (flags, values, files,
// sizes, combinations), each refused with exit 1 and one line "magicube: ..." that names
// the input, before any GPU is looked for, with no raw control bytes. (LLVM's option
// parser may add a second "Did you mean" line to an unknown flag.) The count is quoted in
// the README's reliability section.
TEST(Cli, BadInputBattery) {
  TempDir tmp;
  auto file = [&](const std::string &name, const std::string &text) {
    std::ofstream(tmp.file(name), std::ios::binary) << text;
    return shell_quote(tmp.file(name));
  };
  const std::string shared = tmp.file("shared-cache");
  ASSERT_EQ(::mkdir(shared.c_str(), 0700), 0);
  ASSERT_EQ(::chmod(shared.c_str(), 0777), 0);
  const std::string run = "run --m=64 --k=64 --sparsity=0.5 --n=64 ";
  const std::string sd = "run --op=sddmm --m=64 --n=64 --sparsity=0.5 ";
  const std::string tune = "tune --m=64 --k=64 --sparsity=0.5 --n=64 ";
  auto mx = [&](const std::string &name, const std::string &text) { return "run --n=64 --matrix=" + file(name, text); };
  struct Case {
    Case(std::string a, std::string n, std::string e = "") : args(std::move(a)), needle(std::move(n)), env(std::move(e)) {}
    std::string args, needle, env;
  } cases[] = {
      // the op flags (plan, compile, run, tune share them)
      {"plan --op=gemm", "op: unknown op 'gemm'"}, {"plan --lhs=s17", "lhs: 17 bits in 's17'"},
      {"plan --lhs=x8", "lhs: 'x8'"}, {"plan --lhs=", "lhs: ''"}, {"plan --rhs=u0", "rhs:"},
      {"plan --rhs=s99999999999", "rhs:"}, {"plan --v=3", "v"}, {"plan --v=0", "v"}, {"plan --v=-8", "v"},
      {"plan --v=abc", "'abc' value invalid"}, {"plan --bsn=100", "bsn"}, {"plan --bsn=0", "bsn"},
      {"plan --stages=7", "stages"}, {"plan --stages=1", "stages"}, {"plan --split=3", "split"},
      {"plan --split=0", "split"}, {"plan --resident --bsn=256", "BSn=256"},
      {"plan --out=f64", "out: unknown output type 'f64'"}, {"plan --scale=channel --out=f16", "scale:"},
      {"plan --out=f16 --bias=diag", "bias: unknown bias 'diag'"}, {"plan --scale=tensor", "scale: a tensor scale"},
      {"plan --bias=row", "bias:"}, {"plan --op=sddmm --out=f16 --bias=row", "bias:"},
      {"plan --arch=sm_70", "arch: unknown arch 'sm_70'"}, {"plan --arch=sm_100", "arch:"},
      {"plan --candidate=99", "candidate: --candidate=99"}, {"plan --candidate=-1", "candidate:"},
      {"plan --format=xml", "format: 'xml'"}, {"plan --lhs=\"$(printf 's8\\033[2J')\"", "lhs: 's8\\x1b[2J'"},
      {"plan --frob", "Unknown command line argument '--frob'"}, {"frobnicate", "'frobnicate'"},
      {"", "no command given"},
      // compile
      {"compile --emit=sass -o x", "emit: 'sass'"}, {"compile -o x", "emit: --emit is required"},
      {"compile --emit=cuda", "-o:"}, {"compile --emit=cuda -o " + shell_quote(tmp.file("no/dir/x.cu")), "no/dir/x.cu"},
      {"compile --emit=cuda --lhs=s0 -o -", "lhs:"},
      // cache
      {"cache purge", "'purge'"}, {"cache", "an action is required"},
      {"cache stats", "writable by every user", "MAGICUBE_CACHE_DIR=" + shell_quote(shared)},
      {"cache clear", "writable by every user", "MAGICUBE_CACHE_DIR=" + shell_quote(shared)},
      // run (SpMM): sizes, combinations, timing
      {"run --m=64 --k=64 --n=64", "--sparsity"}, {"run --m=64 --k=64 --sparsity=0.5", "n: --n=0"},
      {"run --m=64 --k=64 --sparsity=0.5 --n=-5", "n: --n=-5"},
      {"run --m=64 --k=64 --sparsity=0.5 --n=2147483648", "n: --n=2147483648"},
      {"run --m=64 --k=64 --sparsity=0.5 --n=99999999999999999999999", "value invalid for llong"},
      {"run --m=0 --k=64 --sparsity=0.5 --n=64", "m: --m=0"}, {"run --m=-1 --k=64 --sparsity=0.5 --n=64", "m: --m=-1"},
      {"run --m=2147483648 --k=64 --sparsity=0.5 --n=64", "m: --m=2147483648"},
      {"run --m=64 --k=0 --sparsity=0.5 --n=64", "k: --k=0"}, {"run --m=64 --k=64 --sparsity=1 --n=64", "sparsity:"},
      {"run --m=64 --k=64 --sparsity=-0.1 --n=64", "sparsity:"}, {"run --m=64 --k=64 --sparsity=nan --n=64", "sparsity:"},
      {"run --m=64 --k=64 --sparsity=half --n=64", "'half' value invalid"},
      {run + "--repeat=0", "repeat: --repeat=0"}, {run + "--repeat=100001", "repeat: --repeat=100001"},
      {run + "--warmup=-1", "warmup: --warmup=-1"}, {run + "--warmup=100001", "warmup:"},
      {run + "--layout=srbcrs", "layout:"}, {run + "--stride=16", "stride:"}, {run + "--seed=-1", "seed"},
      {"run --matrix=x.smtx --m=4 --n=8", "cannot be combined"},
      {"run --lhs=s16 --rhs=s16 --m=16 --k=64 --sparsity=0 --n=8", "max_exact_k"},
      {"run --m=2147483647 --k=2147483647 --sparsity=0.999 --n=2147483647", "size: SpMM"},
      {"run --m=64 --k=64 --sparsity=0.5 --n=2147483647", "size: SpMM"},
      {run, "the limit is 1.0 KiB", "MAGICUBE_HOST_MEMORY_LIMIT=1K"},
      // run --matrix: the .smtx reader's classes
      {"run --n=64 --matrix=/no/such/file.smtx", "/no/such/file.smtx: cannot read"},
      {"run --n=64 --matrix=" + shell_quote(tmp.path()), "cannot read: Is a directory"},
      {"run --n=64 --matrix=/dev/zero", "/dev/zero: is more than"}, {mx("empty.smtx", ""), "empty file"},
      {mx("garbage.smtx", "hello world\n"), "header field 'rows' 'hello'"},
      {mx("two.smtx", "2, 2\n0 1 1\n0\n"), "header must hold 3 numbers"},
      {mx("overflow.smtx", "99999999999999999999, 2, 1\n"), "does not fit in 64 bits"},
      {mx("rows.smtx", "2199023255553, 2, 1\n"), "is too large (limit 2^40)"},
      {mx("cols.smtx", "1, 2147483648, 1\n0 1\n0\n"), "exceeds the 32-bit column index range"},
      {mx("truncated.smtx", "2, 2, 1\n0 1 1\n"), "truncated: found 2 lines"},
      {mx("few.smtx", "2, 2, 1\n0 1\n0\n"), "expected rows+1 = 3 row offsets, found 2"},
      {mx("many.smtx", "2, 2, 1\n0 1 1 1\n0\n"), "found 4"}, {mx("start.smtx", "2, 2, 1\n1 1 1\n0\n"), "row_ptr[0] = 1"},
      {mx("decrease.smtx", "2, 2, 1\n0 2 1\n0 1\n"), "row offsets decrease"},
      {mx("nnz.smtx", "2, 2, 2\n0 1 1\n0\n"), "nnz mismatch"},
      {mx("range.smtx", "2, 2, 1\n0 1 1\n5\n"), "col_idx[0] = 5 (row 0) is out of range [0, 2)"},
      {mx("order.smtx", "1, 4, 2\n0 2\n3 1\n"), "not strictly increasing"},
      {mx("dup.smtx", "1, 4, 2\n0 2\n1 1\n"), "not strictly increasing"},
      {mx("negative.smtx", "1, 4, 1\n0 1\n-1\n"), "'-1' is not a non-negative integer"},
      {mx("trailing.smtx", "1, 4, 1\n0 1\n1\nmore\n"), "unexpected content after the column indices"},
      {mx("escape.smtx", "1, 4, 1\n0 1\n1\x1b[31m\n"), "'1\\x1b[31m'"},
      {mx("nul.smtx", std::string("1, 4, 1\n0 1\n1\0x\n", 16)), "'1\\x00x'"},
      {mx("norows.smtx", "0, 4, 0\n0\n"), "has 0 rows"}, {mx("nocols.smtx", "2, 0, 0\n0 0 0\n"), "0 columns"},
      {mx("wide.smtx", "1, 2147483647, 1\n0 1\n5\n"), "size: SpMM M=8 K=2147483647 N=64"},
      // run --op=sddmm
      {"run --op=sddmm --m=64 --n=64 --sparsity=0.5", "k: --k=0"}, {sd + "--k=-1", "k: --k=-1"},
      {"run --op=sddmm --m=64 --sparsity=0.5 --k=64", "--n"}, {sd + "--k=64 --layout=coo", "layout: 'coo'"},
      {sd + "--k=64 --stride=0", "stride: --stride=0"}, {sd + "--k=64 --stride=2000", "stride: --stride=2000"},
      {"run --op=sddmm --matrix=x.smtx --n=8 --k=8", "cannot be combined"},
      {"run --op=sddmm --lhs=s16 --rhs=s16 --m=16 --n=16 --sparsity=0 --k=64", "max_exact_k"},
      {"run --op=sddmm --m=2147483647 --n=2147483647 --sparsity=0.999 --k=2147483647", "size: SDDMM"},
      {"run --op=sddmm --k=64 --matrix=" + file("sd-nocols.smtx", "2, 0, 0\n0 0 0\n"), "0 columns"},
      // tune
      {tune + "--candidate=1", "candidate: --candidate=1 is not allowed with tune"},
      {tune + "--layout=srbcrs", "layout:"}, {tune + "--repeat=0", "repeat:"}, {tune + "--repeat=100001", "repeat:"},
      {"tune --k=64 --sparsity=0.5 --n=64", "--m"}, {"tune --m=64 --k=64 --sparsity=0.5 --n=0", "n: --n=0"},
      {tune + "--bsn=100", "bsn"}, {tune + "--split=5", "split"},
      {"tune --n=64 --matrix=/no/such.smtx", "/no/such.smtx"},
      {"tune --m=2147483647 --k=2147483647 --sparsity=0.999 --n=2147483647", "size: SpMM"},
      {"tune --op=sddmm --m=64 --n=64 --sparsity=0.5 --k=0", "k: --k=0"},
      // bench
      {"bench --filter=L99-R8", "filter"}, {"bench --v=3", "v:"}, {"bench --n=0", "n:"}, {"bench --n=x", "n:"},
      {"bench --sections=bogus", "sections: 'bogus'"}, {"bench --dlmc=/no/such/dlmc.tar.gz", "dlmc:"},
      {"bench --out-dir=" + file("out.txt", "x"), "is a file, not a folder"}, {"bench --out-dir=", "out-dir:"},
      {"bench --repeat=0", "repeat:"}, {"bench --repeat=100001", "repeat:"}, {"bench --warmup=-1", "warmup:"},
      {"bench --l2=cold", "l2"}, {"bench --dlmc-limit=-2", "dlmc-limit"},
  };
  int ok = 0;
  std::vector<std::string> failures;
  for (const Case &c : cases) {
    CliResult r = cli(c.args, tmp.path(), c.env);
    std::string first = r.output.substr(0, r.output.find('\n'));
    std::string rest = r.output.size() > first.size() + 1 ? r.output.substr(first.size() + 1) : "";
    bool hint_only = rest.empty() || (rest.rfind("magicube: Did you mean", 0) == 0 && rest.find('\n') == rest.size() - 1);
    bool clean = std::none_of(r.output.begin(), r.output.end(),
                              [](char ch) { return (unsigned char)ch < 0x20 && ch != '\n'; });
    const bool ours = first.rfind("magicube: ", 0) == 0 || first.rfind("magicube-bench: ", 0) == 0;
    if (r.status == 1 && ours && first.find(c.needle) != std::string::npos && hint_only &&
        clean)
      ++ok;
    else
      failures.push_back("magicube " + c.args + "  (exit " + std::to_string(r.status) + ", wanted '" + c.needle +
                         "'):\n" + r.output);
  }
  for (const std::string &f : failures) ADD_FAILURE() << f;
  std::printf("[          ] %d of %zu bad inputs exit 1 with one line naming the input\n", ok, std::size(cases));
}

// Without a GPU: exactly one line naming the reason, exit 2. With one: bit-exact.
TEST(Cli, RunSyntheticSpmm) {
  TempDir tmp;
  std::string reason;
  bool gpu = has_gpu(&reason);
  for (const std::string &flags : {std::string("--lhs=s8 --rhs=u4 --v=8"), std::string("--lhs=s12 --rhs=s4 --v=2"),
                                   std::string("--lhs=s16 --rhs=s16 --v=4 --out=int64")}) {
    CliResult r = cli("run " + flags + " --m=100 --k=300 --sparsity=0.7 --n=70 --repeat=3 --warmup=1", tmp.path());
    if (!gpu) {
      EXPECT_EQ(r.status, 2) << flags << "\n" << r.output;
      EXPECT_EQ(r.output, "magicube: no GPU: " + reason + "\n") << flags;
    } else {
      EXPECT_EQ(r.status, 0) << flags << "\n" << r.output;
      EXPECT_NE(r.output.find("exact: yes"), std::string::npos) << flags << "\n" << r.output;
      EXPECT_NE(r.output.find("median"), std::string::npos) << r.output;
      EXPECT_NE(r.output.find("TOPS"), std::string::npos) << r.output;
    }
  }
}

TEST(Cli, RunSmtxMatrix) {
  TempDir tmp;
  std::string m = tmp.file("m.smtx");
  { std::ofstream(m) << "4, 6, 7\n0 2 3 3 7\n0 5 1 0 2 4 5\n"; }
  std::string reason;
  bool gpu = has_gpu(&reason);
  CliResult r = cli("run --lhs=u5 --rhs=s3 --v=4 --matrix=" + shell_quote(m) + " --n=33 --repeat=2 --warmup=0", tmp.path());
  if (!gpu) {
    EXPECT_EQ(r.status, 2) << r.output;
    EXPECT_EQ(r.output, "magicube: no GPU: " + reason + "\n");
  } else {
    EXPECT_EQ(r.status, 0) << r.output;
    EXPECT_NE(r.output.find("exact: yes"), std::string::npos) << r.output;
    EXPECT_NE(r.output.find("M=16 K=6 N=33 V=4 nnz-vectors=7"), std::string::npos) << r.output;
  }
  // A malformed file is named, with no GPU needed.
  std::string bad = tmp.file("bad.smtx");
  { std::ofstream(bad) << "2, 2, 1\n0 1\n0\n"; }
  CliResult b = cli("run --matrix=" + shell_quote(bad) + " --n=8", tmp.path());
  EXPECT_EQ(b.status, 1) << b.output;
  EXPECT_NE(b.output.find(bad), std::string::npos) << b.output;
}

TEST(Cli, RunRefusesBadInputsWithoutAGpu) {
  TempDir tmp;
  // int32 beyond max_exact_k: s16 x s16 is exact only for K = 1.
  CliResult k = cli("run --lhs=s16 --rhs=s16 --m=16 --k=64 --sparsity=0 --n=8", tmp.path());
  EXPECT_EQ(k.status, 1) << k.output;
  EXPECT_NE(k.output.find("max_exact_k"), std::string::npos) << k.output;
  EXPECT_NE(k.output.find("K=64"), std::string::npos) << k.output;

  struct Bad {
    std::string flags, needle;
  } bad[] = {
      {"--m=16 --k=16 --n=8", "--sparsity"},
      {"--m=16 --k=16 --sparsity=0.5", "n: --n=0"},
      {"--m=16 --k=16 --sparsity=1 --n=8", "sparsity: --sparsity=1"},
      {"--m=0 --k=16 --sparsity=0.5 --n=8", "m: --m=0"},
      {"--m=16 --k=16 --sparsity=0.5 --n=8 --repeat=0", "repeat:"},
      {"--m=16 --k=16 --sparsity=0.5 --n=8 --scale=tensor", "scale: a tensor scale needs a float output"},
      {"--m=16 --k=16 --sparsity=0.5 --n=8 --out=f16 --bias=diag", "bias: unknown bias 'diag'"},
      {"--m=16 --k=16 --sparsity=0.5 --n=8 --layout=srbcrs", "layout: --layout=srbcrs applies to --op=sddmm only"},
      {"--m=16 --k=16 --sparsity=0.5 --n=8 --stride=16", "stride: --stride=16 applies to --op=sddmm only"},
      {"--m=16 --k=16 --sparsity=0.5 --n=8 --candidate=99", "candidate:"},
      {"--m=16 --k=16 --sparsity=0.5 --n=8 --layers=0", "layers: --layers=0 is not allowed (allowed: 1..64)"},
      {"--m=16 --k=16 --sparsity=0.5 --n=8 --layers=65", "layers: --layers=65 is not allowed"},
      {"--op=sddmm --m=16 --n=16 --sparsity=0.5 --k=8 --layers=2", "layers: --layers applies to --op=spmm only"},
      {"--matrix=/no/such/file.smtx --n=8", "/no/such/file.smtx"},
      {"--matrix=x.smtx --m=4 --n=8", "cannot be combined"},
  };
  for (const Bad &b : bad) {
    CliResult r = cli("run " + b.flags, tmp.path());
    EXPECT_EQ(r.status, 1) << b.flags << "\n" << r.output;
    EXPECT_NE(r.output.find(b.needle), std::string::npos) << b.flags << "\n" << r.output;
  }
}

// Float outputs: --scale and --bias go through the IR (validated there) into the plan.
TEST(Cli, PlanFloatScaleAndBias) {
  TempDir tmp;
  CliResult r = cli("plan --out=f16 --scale=rowcol --bias=col", tmp.path());
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_NE(r.output.find("plan spmm.s8xs8.v8.n128.pf.f16+rc+colbias.sm_90"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("epilogue  f16: int64 sum of terms, in double * row_scale[r] * col_scale[c] + bias[c], "
                          "rounded to nearest even"),
            std::string::npos)
      << r.output;
  CliResult t = cli("plan --op=sddmm --out=bf16 --scale=tensor --format=json", tmp.path());
  ASSERT_EQ(t.status, 0) << t.output;
  auto v = llvm::json::parse(t.output);
  ASSERT_TRUE(bool(v)) << llvm::toString(v.takeError());
  const llvm::json::Object *spec = v->getAsObject() ? v->getAsObject()->getObject("spec") : nullptr;
  ASSERT_NE(spec, nullptr) << t.output;
  EXPECT_EQ(spec->getString("scale").getValueOr(""), "tensor") << t.output;
  EXPECT_EQ(spec->getString("out").getValueOr(""), "bf16") << t.output;
  EXPECT_EQ(spec->getString("bias").getValueOr(""), "none") << t.output;
  // The defaults are none: the integer plans are unchanged.
  CliResult none = cli("plan --out=f32", tmp.path());
  ASSERT_EQ(none.status, 0) << none.output;
  EXPECT_NE(none.output.find("plan spmm.s8xs8.v8.n128.pf.f32.sm_90"), std::string::npos) << none.output;
}

TEST(Cli, ScaleAndBiasAreValidatedByTheIr) {
  TempDir tmp;
  struct Bad {
    std::string flags, needle;
  } bad[] = {
      {"--scale=rowcol --out=int32", "magicube: error: scale: a rowcol scale needs a float output (out is i32"},
      {"--scale=tensor --out=int64", "magicube: error: scale: a tensor scale needs a float output (out is i64"},
      {"--bias=row", "magicube: error: bias: a row bias needs a float output"},
      {"--op=sddmm --out=f16 --bias=col", "magicube: error: bias: SDDMM takes no bias"},
      {"--out=f16 --scale=perchannel", "magicube: error: scale: unknown scale 'perchannel' (allowed: none, tensor, rowcol)"},
      {"--out=f16 --bias=both", "magicube: error: bias: unknown bias 'both' (allowed: none, row, col)"},
      {"--c-order=diag", "magicube: error: c-order: 'diag' is not allowed (allowed: row, col)"},
      {"--op=sddmm --c-order=col", "magicube: error: out: +ccol (a column-major C) is an SpMM option"},
  };
  for (const Bad &b : bad) {
    CliResult r = cli("plan " + b.flags, tmp.path());
    EXPECT_EQ(r.status, 1) << b.flags;
    EXPECT_NE(r.output.find(b.needle), std::string::npos) << b.flags << ":\n" << r.output;
  }
  // compile and run validate the same way, before anything else.
  CliResult c = cli("compile --scale=rowcol --emit=cuda -o " + shell_quote(tmp.file("x.cu")), tmp.path());
  EXPECT_EQ(c.status, 1);
  EXPECT_NE(c.output.find("scale:"), std::string::npos) << c.output;
  EXPECT_FALSE(llvm::sys::fs::exists(tmp.file("x.cu")));
  CliResult r = cli("run --op=sddmm --out=f16 --bias=row --m=16 --n=16 --sparsity=0.5 --k=16", tmp.path());
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.output.find("bias:"), std::string::npos) << r.output;
}

TEST(Cli, CompileFloatEpilogue) {
  TempDir tmp;
  CliResult r = cli("compile --out=f16 --scale=rowcol --bias=row --emit=cuda -o -", tmp.path());
  ASSERT_EQ(r.status, 0) << r.output;
  OpSpec s{OpKind::SpMM, {8, true}, {8, true}, 8, 128, true, OutType::F16, 90, Scale::RowCol, Bias::Row};
  EXPECT_NE(r.output.find(kernel_name_of(s)), std::string::npos) << kernel_name_of(s);
  EXPECT_NE(r.output.find("row_scale"), std::string::npos);
}

// Float SpMM: random scales and bias, every element bitwise equal to the rounded double
// reference; or the one-line no-GPU message.
TEST(Cli, RunFloatSpmm) {
  TempDir tmp;
  std::string reason;
  bool gpu = has_gpu(&reason);
  for (const std::string &flags :
       {std::string("--lhs=s8 --rhs=s8 --v=8 --out=f16 --scale=rowcol --bias=col"),
        std::string("--lhs=s12 --rhs=u4 --v=4 --out=f32 --scale=tensor --bias=row"),
        std::string("--lhs=u4 --rhs=s4 --v=2 --out=bf16"), std::string("--lhs=s16 --rhs=s16 --v=8 --out=f32")}) {
    CliResult r = cli("run " + flags + " --m=100 --k=300 --sparsity=0.7 --n=70 --repeat=3 --warmup=1", tmp.path());
    if (!gpu) {
      EXPECT_EQ(r.status, 2) << flags << "\n" << r.output;
      EXPECT_EQ(r.output, "magicube: no GPU: " + reason + "\n") << flags;
    } else {
      EXPECT_EQ(r.status, 0) << flags << "\n" << r.output;
      EXPECT_NE(r.output.find("exact: yes (bitwise equal to the rounded double reference)"), std::string::npos)
          << flags << "\n" << r.output;
      EXPECT_NE(r.output.find("max relative error"), std::string::npos) << r.output;
      EXPECT_NE(r.output.find("epilogue  "), std::string::npos) << r.output;
      EXPECT_NE(r.output.find("TOPS"), std::string::npos) << r.output;
    }
  }
}

// SDDMM: synthetic and .smtx masks, both output layouts, integer and float outputs.
TEST(Cli, RunSddmm) {
  TempDir tmp;
  std::string reason;
  bool gpu = has_gpu(&reason);
  std::string m = tmp.file("mask.smtx");
  { std::ofstream(m) << "4, 6, 7\n0 2 3 3 7\n0 5 1 0 2 4 5\n"; }
  struct Case {
    std::string flags, problem;
  } cases[] = {
      {"--lhs=s8 --rhs=s8 --v=8 --m=100 --n=90 --sparsity=0.7 --k=300", "M=100 N=90 K=300 V=8"},
      {"--lhs=s12 --rhs=u4 --v=4 --m=64 --n=200 --sparsity=0.5 --k=77 --layout=srbcrs --stride=16",
       "M=64 N=200 K=77 V=4"},
      {"--lhs=s16 --rhs=s16 --v=2 --out=int64 --m=33 --n=50 --sparsity=0.2 --k=100 --layout=srbcrs",
       "M=33 N=50 K=100 V=2"},
      {"--lhs=s8 --rhs=s8 --v=8 --out=f16 --scale=rowcol --m=64 --n=128 --sparsity=0.9 --k=64", "M=64 N=128 K=64 V=8"},
      {"--lhs=u5 --rhs=s3 --v=4 --out=bf16 --scale=tensor --matrix=" + shell_quote(m) + " --k=40 --layout=srbcrs",
       "M=16 N=6 K=40 V=4 nnz-vectors=7"},
  };
  for (const Case &c : cases) {
    CliResult r = cli("run --op=sddmm " + c.flags + " --repeat=3 --warmup=1", tmp.path());
    if (!gpu) {
      EXPECT_EQ(r.status, 2) << c.flags << "\n" << r.output;
      EXPECT_EQ(r.output, "magicube: no GPU: " + reason + "\n") << c.flags;
    } else {
      EXPECT_EQ(r.status, 0) << c.flags << "\n" << r.output;
      EXPECT_NE(r.output.find("exact: yes"), std::string::npos) << c.flags << "\n" << r.output;
      EXPECT_NE(r.output.find(c.problem), std::string::npos) << c.flags << "\n" << r.output;
      EXPECT_NE(r.output.find("median"), std::string::npos) << r.output;
      EXPECT_NE(r.output.find("2 * nnz-vectors * V * K"), std::string::npos) << r.output;
    }
  }
}

TEST(Cli, RunSddmmRefusesBadInputsWithoutAGpu) {
  TempDir tmp;
  struct Bad {
    std::string flags, needle;
  } bad[] = {
      {"--m=16 --n=16 --sparsity=0.5", "k: --k=0"},
      {"--m=16 --sparsity=0.5 --k=16", "(missing: --n)"},
      {"--m=16 --n=16 --sparsity=1 --k=16", "sparsity: --sparsity=1"},
      {"--m=16 --n=0 --sparsity=0.5 --k=16", "n: --n=0"},
      {"--m=16 --n=16 --sparsity=0.5 --k=16 --layout=csr", "layout: 'csr' is not allowed (allowed: bcrs, srbcrs)"},
      {"--m=16 --n=16 --sparsity=0.5 --k=16 --stride=0", "stride: --stride=0 is not allowed"},
      {"--matrix=x.smtx --n=16 --k=16", "cannot be combined with --m, --n or --sparsity"},
      {"--matrix=/no/such/mask.smtx --k=16", "/no/such/mask.smtx"},
      {"--lhs=s16 --rhs=s16 --m=16 --n=16 --sparsity=0.5 --k=64", "max_exact_k"},
      {"--m=16 --n=16 --sparsity=0.5 --k=16 --candidate=99", "candidate:"},
  };
  for (const Bad &b : bad) {
    CliResult r = cli("run --op=sddmm " + b.flags, tmp.path());
    EXPECT_EQ(r.status, 1) << b.flags << "\n" << r.output;
    EXPECT_NE(r.output.find(b.needle), std::string::npos) << b.flags << "\n" << r.output;
  }
}

}  // namespace
