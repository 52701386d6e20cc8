// cache warm and cache inspect: ahead-of-time kernel bundles (jit/bundle.h).
#include <sys/stat.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <string>

#include <fmt/format.h>

#include "compiler/codegen.h"
#include "jit/bundle.h"
#include "jit/compile.h"
#include "jit/nvrtc.h"
#include "llvm/ADT/SmallString.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/raw_ostream.h"
#include "runtime/aot_plans.h"
#include "cache/safe_file.h"
#include "support/parallel.h"
#include "support/text.h"
#include "tools/commands.h"

namespace magicube::tool {

namespace {
llvm::Error err(const llvm::Twine &msg) { return llvm::createStringError(llvm::inconvertibleErrorCode(), msg); }

// "sm_80,sm_90" -> {80, 90}; the error names the bad element.
llvm::Expected<std::vector<int>> parse_archs(const std::string &text) {
  std::vector<int> archs;
  llvm::SmallVector<llvm::StringRef, 4> parts;
  llvm::StringRef(text).split(parts, ',', -1, false);
  for (llvm::StringRef p : parts) {
    auto a = parse_arch(p.trim());
    if (!a) return err("arch: " + llvm::toString(a.takeError()));
    if (std::find(archs.begin(), archs.end(), *a) == archs.end()) archs.push_back(*a);
  }
  if (archs.empty()) return err("arch: --arch=" + quoted(text) + " names no arch (e.g. --arch=sm_80,sm_90)");
  return archs;
}

constexpr uint64_t kMaxListBytes = uint64_t(4) << 20;
}  // namespace

int cmd_cache_warm(const WarmArgs &a) {
  if (a.out.empty()) return fail("-o: the bundle to write is required (cache warm -o kernels.mcbundle)");
  std::vector<int> archs;
  if (!a.list.empty() && !a.archs_given) {
    // a list's specs name their own arch
  } else {
    auto parsed = parse_archs(a.archs);
    if (!parsed) return fail(parsed.takeError());
    archs = std::move(*parsed);
  }
  if (a.jobs < 0 || a.jobs > 256) return fail("jobs: --jobs=" + llvm::Twine(a.jobs) + " is out of range (0 = the host's threads, up to 256)");
  const auto t0 = std::chrono::steady_clock::now();
  llvm::Expected<std::vector<PlanTarget>> targets = std::vector<PlanTarget>();
  if (a.list.empty()) {
    targets = default_aot_plans(archs);
  } else {
    SafeRead r = read_regular_file(a.list, kMaxListBytes);
    if (r.status != SafeRead::Status::Ok)
      return fail("list: " + a.list + " " +
                  (r.status == SafeRead::Status::Missing ? std::string("does not exist") : r.why));
    targets = aot_plans_from_list(r.data, a.list, archs);
  }
  if (!targets) return fail(targets.takeError());
  const unsigned threads = a.jobs > 0 ? unsigned(a.jobs) : hardware_threads();
  llvm::outs() << "compiling " << targets->size() << " kernels on " << threads << " thread(s)\n";
  llvm::outs().flush();
  const CompileCache::Stats before = kernel_compile_cache().stats();
  std::vector<Precompiled> done = precompile_kernels(*targets, threads);
  const CompileCache::Stats after = kernel_compile_cache().stats();
  std::vector<BundleInput> entries;
  std::string failures;
  size_t failed = 0;
  for (size_t i = 0; i < done.size(); ++i) {
    const std::string spec = to_string((*targets)[i].plan.spec);
    if (!done[i].error.empty()) {
      if (++failed <= 5) failures += "\n  " + spec + " for " + arch_name((*targets)[i].arch) + ": " + done[i].error;
      continue;
    }
    entries.push_back(BundleInput{done[i].key, (*targets)[i].arch, spec, std::move(done[i].cubin)});
  }
  if (failed)
    return fail(llvm::Twine(failed) + " of " + llvm::Twine(done.size()) + " kernels failed to compile; no bundle written:" +
                failures + (failed > 5 ? "\n  ..." : ""));
  std::string arch_list;
  for (int x : archs) arch_list += (arch_list.empty() ? "" : " ") + arch_name(x);
  BundleMeta meta{kGeneratorVersion, toolchain_version(),
                  fmt::format("magicube cache warm{}, {} kernels{}", a.list.empty() ? " (default list)" : " --list",
                              entries.size(), arch_list.empty() ? "" : ", " + arch_list)};
  llvm::SmallString<256> parent(a.out);
  llvm::sys::path::remove_filename(parent);
  if (!parent.empty())
    if (std::error_code ec = llvm::sys::fs::create_directories(parent))
      return fail("-o " + a.out + ": cannot create its directory: " + ec.message());
  if (auto e = write_bundle(a.out, meta, entries)) return fail(std::move(e));
  // Read-only for everyone: a bundle is installed for every user of the library (the atomic
  // writer creates 0600 files).
  if (::chmod(a.out.c_str(), 0644) != 0)
    return fail("-o " + a.out + ": written, but chmod 0644 failed: " + std::strerror(errno));
  uint64_t size = 0;
  (void)llvm::sys::fs::file_size(a.out, size);
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  llvm::outs() << fmt::format("wrote {}: {} kernels, {} ({} compiled by NVRTC, {} from the caches) in {:.1f} s\n", a.out,
                              entries.size(), format_bytes(size), after.compiles - before.compiles,
                              entries.size() - (after.compiles - before.compiles), s);
  return 0;
}

int cmd_cache_inspect(const std::string &path) {
  if (path.empty()) return fail("cache inspect: the bundle to inspect is required (cache inspect kernels.mcbundle)");
  auto b = Bundle::open(path);
  if (!b) return fail("bundle " + path + " refused: " + llvm::toString(b.takeError()));
  const Bundle &bundle = **b;
  llvm::outs() << "bundle     " << path << "\n"
               << "format     " << Bundle::kFormatVersion << "\n"
               << "generator  " << quoted(bundle.meta().generator) << "\n"
               << "nvrtc      " << quoted(bundle.meta().nvrtc) << "\n"
               << "note       " << quoted(bundle.meta().note, 200) << "\n"
               << "size       " << format_bytes(bundle.bytes()) << "\n"
               << "entries    " << bundle.entries().size() << "\n";
  for (const BundleEntry &e : bundle.entries())
    llvm::outs() << fmt::format("  {:<6} {:>9}  {}  {}\n", arch_name(e.arch), format_bytes(e.size), e.key.substr(0, 16),
                                quoted(e.label, 200));
  llvm::Error usable = bundle.check_versions(kGeneratorVersion, toolchain_version());
  const std::string why = usable ? llvm::toString(std::move(usable)) : std::string();
  llvm::outs() << "usable     " << (why.empty() ? "yes (this library's generator and NVRTC)" : "no: " + why) << "\n";
  if (auto e = bundle.verify_all()) return fail("bundle " + path + " is corrupt: " + llvm::toString(std::move(e)));
  llvm::outs() << "verified   header, index and all " << bundle.entries().size() << " cubins match their SHA-256\n";
  return why.empty() ? 0 : 1;
}

}  // namespace magicube::tool
