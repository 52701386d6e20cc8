// plan, compile and cache (run is in run.cpp).
#include <cstdio>
#include <string>

#include <fmt/format.h>

#include "cache/disk_cache.h"
#include "jit/bundle.h"
#include "compiler/codegen.h"
#include "compiler/planner.h"
#include "support/text.h"
#include "jit/compile.h"
#include "jit/nvrtc.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/raw_ostream.h"
#include <optional>
#include <random>

#include "runtime/autotune.h"
#include "runtime/dispatch.h"
#include "runtime/kernel.h"
#include "tools/commands.h"
#include "tools/inputs.h"

namespace magicube::tool {

namespace {
llvm::Error err(const llvm::Twine &msg) { return llvm::createStringError(llvm::inconvertibleErrorCode(), msg); }

std::string human_bytes(uint64_t b) { return format_bytes(b); }

// Writes `bytes` to `path` ("-": stdout); the error names the file.
llvm::Error write_file(const std::string &path, const std::string &bytes) {
  if (path == "-") {
    llvm::outs() << bytes;
    llvm::outs().flush();
    return llvm::Error::success();
  }
  std::error_code ec;
  llvm::raw_fd_ostream os(path, ec, llvm::sys::fs::OF_None);
  if (ec) return err("-o " + path + ": cannot open for writing: " + ec.message());
  os << bytes;
  os.close();
  if (os.has_error()) {
    std::string msg = os.error().message();
    os.clear_error();
    return err("-o " + path + ": write failed: " + msg);
  }
  return llvm::Error::success();
}
}  // namespace

int fail(llvm::Error e) {
  llvm::errs() << "magicube: error: " << llvm::toString(std::move(e)) << "\n";
  return 1;
}
int fail(const llvm::Twine &message) { return fail(err(message)); }

llvm::Expected<DenseRoute> route_from_flags(const OpFlags &f) {
  if (f.route == "auto") return DenseRoute::Allowed;
  if (f.route == "sparse") return DenseRoute::Never;
  if (f.route == "dense") return DenseRoute::Forced;
  return err("route: '" + f.route + "' is not allowed (allowed: auto, sparse, dense)");
}

llvm::Expected<OpSpec> spec_from_flags(const OpFlags &f) {
  OpSpec s;
  auto op = parse_op(f.op);
  if (!op) return op.takeError();
  auto lhs = parse_elem(f.lhs, "lhs");
  if (!lhs) return lhs.takeError();
  auto rhs = parse_elem(f.rhs, "rhs");
  if (!rhs) return rhs.takeError();
  auto out = parse_out(f.out);
  if (!out) return out.takeError();
  auto arch = parse_arch(f.arch);
  if (!arch) return arch.takeError();
  auto scale = parse_scale(f.scale);
  if (!scale) return scale.takeError();
  auto bias = parse_bias(f.bias);
  if (!bias) return bias.takeError();
  s.op = *op;
  s.lhs = *lhs;
  s.rhs = *rhs;
  s.v = f.v;
  s.bsn = f.bsn;
  s.prefetch = !f.no_prefetch;
  s.stages = f.stages;
  s.split = f.split;
  s.decode = f.decode || f.panel || f.warps || f.shares;  // --panel, --warps, --shares imply --decode (and resident B)
  s.resident = f.resident || s.decode;
  s.panel = f.panel;
  s.warps = f.warps;
  s.shares = f.shares;
  s.out = *out;
  s.arch = *arch;
  s.scale = *scale;
  s.bias = *bias;
  if (f.c_order != "row" && f.c_order != "col")
    return err("c-order: '" + f.c_order + "' is not allowed (allowed: row, col)");
  s.c_col = f.c_order == "col";
  s.pinned = f.pinned;
  if (f.candidate_given && f.candidate < 0)
    return err("candidate: --candidate=" + llvm::Twine(f.candidate) + " is out of range (allowed: 0.. the candidate count - 1; see plan --all)");
  if (auto e = validate(s)) return e;
  return s;
}

llvm::Expected<std::optional<MatrixSignature>> signature_from_flags(const OpSpec &spec, const RunArgs &r) {
  const bool sddmm = spec.op == OpKind::SDDMM;
  const bool any = !r.matrix.empty() || r.m_given || r.k_given || r.sparsity_given || r.n_given;
  if (!any) return std::optional<MatrixSignature>();
  if (!sddmm && r.n <= 0) return err("n: give --n=N (the columns of B and C) with the matrix flags");
  if (sddmm && r.k <= 0) return err("k: give --k=K (the reduction length) with the mask flags");
  std::mt19937_64 rng(r.seed);
  auto sparse = sddmm ? make_sparse(r, spec, ElemType{1, false}, r.n, "n", rng)
                      : make_sparse(r, spec, spec.lhs, r.k, "k", rng);
  if (!sparse) return sparse.takeError();
  return std::optional<MatrixSignature>(sddmm ? sddmm_signature(*sparse, r.k) : spmm_signature(*sparse, r.n));
}

int cmd_plan(const OpFlags &f, const RunArgs &r, const std::string &format, bool all) {
  if (format != "text" && format != "json")
    return fail("format: '" + format + "' is not allowed (allowed: text, json)");
  auto spec = spec_from_flags(f);
  if (!spec) return fail(spec.takeError());
  auto sig = signature_from_flags(*spec, r);
  if (!sig) return fail(sig.takeError());
  // The GPU's own facts when there is one (and --arch is not given), else the arch's reference device.
  DeviceFacts dev = DeviceFacts::reference_for(spec->arch);
  if (no_gpu_reason().empty()) {
    if (auto ctx = process_context()) {
      if (!f.arch_given)
        if (auto arch = device_plan_arch(**ctx)) spec->arch = *arch;
      dev = device_facts(**ctx);
    } else {
      llvm::consumeError(ctx.takeError());
    }
  }
  auto route = route_from_flags(f);
  if (!route) return fail(route.takeError());
  auto d = dispatch(*spec, *sig ? &**sig : nullptr, dev, f.candidate_given ? f.candidate : -1, nullptr, *route);
  if (!d) return fail(d.takeError());
  std::vector<Plan> shown;
  if (all) {
    auto plans = plan_candidates(d->plan.spec);
    if (!plans) return fail(plans.takeError());
    shown = std::move(*plans);
  } else {
    shown.push_back(d->plan);
  }
  if (format == "json") {
    llvm::json::Array arr;
    for (const Plan &p : shown) arr.push_back(to_json(p));
    llvm::json::Value v = all ? llvm::json::Value(std::move(arr)) : std::move(arr[0]);
    if (auto *o = v.getAsObject()) {
      (*o)["chosen_by"] = d->chosen_by();
      if (!d->route_why.empty()) (*o)["route"] = llvm::json::Object{{"route", route_name(d->route)}, {"why", d->route_why}};
    }
    llvm::outs() << llvm::formatv("{0:2}", v) << "\n";
  } else {
    for (size_t i = 0; i < shown.size(); ++i) {
      if (all) llvm::outs() << "# --candidate=" << i << " (" << i + 1 << " of " << shown.size() << ")\n";
      llvm::outs() << shown[i].str();
    }
    llvm::outs() << d->chosen_by() << (dev.reference ? " on " + dev.name + " (reference device: no GPU asked)" : " on " + dev.name)
                 << "\n";
    if (*sig) llvm::outs() << "matrix    " << (*sig)->key() << "\n";
    if (!d->route_why.empty()) llvm::outs() << "route     " << route_name(d->route) << " (" << d->route_why << ")\n";
  }
  return 0;
}

int cmd_compile(const OpFlags &f, const std::string &emit, const std::string &out_file) {
  if (emit.empty()) return fail("emit: --emit is required (allowed: cuda, ptx, cubin)");
  if (emit != "cuda" && emit != "ptx" && emit != "cubin")
    return fail("emit: '" + emit + "' is not allowed (allowed: cuda, ptx, cubin)");
  if (out_file.empty()) return fail("-o: an output file is required (-o FILE, or -o - for stdout)");
  auto spec = spec_from_flags(f);
  if (!spec) return fail(spec.takeError());
  auto d = dispatch(*spec, nullptr, DeviceFacts::reference_for(spec->arch), f.candidate_given ? f.candidate : -1);
  if (!d) return fail(d.takeError());
  const Plan *p = &d->plan;
  // --emit=cuda of a plan whose kernel is written in PTX: the same plan's CUDA kernel (what
  // MAGICUBE_PTX=0 runs), for reading; the other emits are of the kernel the plan runs.
  const bool ptx_kernel = p->launch.language == KernelLanguage::Ptx;
  Plan cuda_plan = *p;
  cuda_plan.launch.language = KernelLanguage::Cuda;
  auto src = generate(emit == "cuda" ? cuda_plan : *p);
  if (!src) return fail(src.takeError());
  std::string bytes;
  if (emit == "cuda") {
    bytes = src->source;
  } else if (emit == "ptx" && ptx_kernel) {
    bytes = src->source;
  } else if (emit == "ptx") {
    auto ptx = nvrtc_compile(src->source, src->name + ".cu", p->spec.arch, Emit::PTX);
    if (!ptx) return fail(ptx.takeError());
    bytes = std::move(*ptx);
  } else {
    auto cubin = kernel_cubin(*p, *src, p->spec.arch);  // through the process's compile cache
    if (!cubin) return fail(cubin.takeError());
    bytes = std::move(*cubin);
  }
  if (auto e = write_file(out_file, bytes)) return fail(std::move(e));
  if (out_file != "-")
    llvm::outs() << "wrote " << out_file << ": " << emit << " of " << src->name << " for " << arch_name(p->spec.arch)
                 << " (" << bytes.size() << " bytes" << (emit == "cuda" && ptx_kernel ? "; the plan runs it written in PTX" : "")
                 << ")\n";
  return 0;
}

int cmd_cache(const std::string &action) {
  if (action != "path" && action != "stats" && action != "clear")
    return fail("cache: " + (action.empty() ? std::string("an action is required") : "'" + action + "' is not an action") +
                " (allowed: path, stats, clear, warm, inspect)");
  auto path = DiskCache::default_path();
  if (!path) return fail(path.takeError());
  bool disabled = false;
  if (const char *v = std::getenv("MAGICUBE_CACHE")) disabled = std::string(v) == "0";
  if (action == "path") {
    llvm::SmallString<256> abs(*path);
    (void)llvm::sys::fs::make_absolute(abs);
    llvm::sys::path::remove_dots(abs, /*remove_dot_dot=*/true);
    llvm::outs() << abs << "\n";
    if (disabled) llvm::errs() << "magicube: note: the disk cache is disabled by MAGICUBE_CACHE=0\n";
    return 0;
  }
  // The AOT bundles a process would use, each opened and checked as a process does.
  auto print_bundles = [] {
    BundlePaths paths = bundle_paths_from_env();
    if (paths.paths.empty()) {
      llvm::outs() << "bundles  none (" << (paths.given ? "MAGICUBE_BUNDLE=0" : "none installed at " + default_bundle_path())
                   << ")\n";
      return;
    }
    for (const std::string &p : paths.paths) {
      auto b = Bundle::open(p);
      llvm::Error e = b ? (*b)->check_versions(kGeneratorVersion, toolchain_version()) : b.takeError();
      llvm::outs() << "bundle   " << p << ": "
                   << (e ? "refused: " + llvm::toString(std::move(e))
                         : std::to_string((*b)->entries().size()) + " kernels, " + human_bytes((*b)->bytes()))
                   << (paths.given ? " (MAGICUBE_BUNDLE)" : " (installed)") << "\n";
    }
  };
  // stats and clear look at the directory; they never create it.
  llvm::SmallString<256> abs(*path);
  (void)llvm::sys::fs::make_absolute(abs);
  llvm::sys::path::remove_dots(abs, /*remove_dot_dot=*/true);
  if (!llvm::sys::fs::exists(abs)) {
    if (action == "stats") {
      llvm::outs() << "path     " << abs << " (does not exist yet)\n"
                   << "enabled  " << (disabled ? "no (MAGICUBE_CACHE=0)" : "yes") << "\n"
                   << "entries  0\n"
                   << "bytes    0 (0 B)\n";
      print_bundles();
    } else {
      llvm::outs() << "cleared 0 entries (0 B) from " << abs << " (it does not exist)\n";
    }
    return 0;
  }
  auto cache = DiskCache::open(*path);
  if (!cache) return fail(cache.takeError());
  DiskCache::Stats st = cache->stats();
  if (action == "stats") {
    const uint64_t bound = cache_max_bytes_from_env();
    llvm::outs() << "path     " << cache->path() << "\n"
                 << "enabled  "
                 << (!cache->enabled() ? "no (MAGICUBE_CACHE=0)" : cache->writable() ? "yes" : "yes, read-only") << "\n"
                 << "entries  " << st.entries << "\n"
                 << "bytes    " << st.bytes << " (" << human_bytes(st.bytes) << ")\n"
                 << "bound    " << (bound ? human_bytes(bound) : std::string("none"))
                 << " (MAGICUBE_CACHE_MAX_BYTES; least recently used entries are evicted)\n";
    if (st.temps) llvm::outs() << "temps    " << st.temps << " (files of writers in progress or killed)\n";
    print_bundles();
    return 0;
  }
  if (auto e = cache->clear()) return fail(std::move(e));
  llvm::outs() << "cleared " << st.entries << " entries (" << human_bytes(st.bytes) << ") from " << cache->path()
               << "\n";
  return 0;
}

}  // namespace magicube::tool
