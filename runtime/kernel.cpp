#include "runtime/kernel.h"

#include <algorithm>
#include <cstdlib>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <numeric>
#include <optional>
#include <unordered_map>

#include "llvm/ADT/SmallVector.h"

#include "cache/cache_key.h"
#include "cache/memory_cache.h"
#include "compiler/planner.h"
#include "jit/compile_cache.h"
#include "jit/nvrtc.h"
#include "support/log.h"
#include "support/parallel.h"
#include "support/text.h"

namespace magicube {

namespace {
llvm::Error err(const llvm::Twine &msg) { return llvm::createStringError(llvm::inconvertibleErrorCode(), msg); }

MemoryCache<Kernel> &loaded_kernels() {
  // Intentionally never destroyed: unloading modules from a static destructor at exit races
  // with the driver's own teardown (and with the release of the context that owns them).
  static MemoryCache<Kernel> *cache = new MemoryCache<Kernel>();
  return *cache;
}

// The hot path's index over the same kernels: (context, plan fingerprint, arch), no strings,
// one hash lookup under one mutex.
class FastIndex {
 public:
  std::shared_ptr<Kernel> get(const void *ctx, uint64_t fp, int arch) {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = map_.find(Key{ctx, fp, arch});
    return it == map_.end() ? nullptr : it->second;
  }
  void put(const void *ctx, uint64_t fp, int arch, std::shared_ptr<Kernel> k) {
    std::lock_guard<std::mutex> lock(mu_);
    map_.emplace(Key{ctx, fp, arch}, std::move(k));
  }

 private:
  struct Key {
    const void *ctx;
    uint64_t fp;
    int arch;
    bool operator==(const Key &) const = default;
  };
  struct Hash {
    size_t operator()(const Key &k) const { return size_t(k.fp ^ (uintptr_t(k.ctx) * 0x9e3779b97f4a7c15ull) ^ unsigned(k.arch)); }
  };
  std::mutex mu_;
  std::unordered_map<Key, std::shared_ptr<Kernel>, Hash> map_;
};

FastIndex &fast_index() {
  static FastIndex *index = new FastIndex();  // never destroyed, like loaded_kernels()
  return *index;
}
}  // namespace

size_t stored_bytes(OutType t) {
  switch (t) {
    case OutType::Int32: return 4;
    case OutType::Int64: return 8;
    case OutType::F32: return 4;
    default: return 2;
  }
}

llvm::Expected<std::vector<int64_t>> download_stored(const DeviceBuffer &buf, int64_t count, OutType t) {
  const size_t w = stored_bytes(t);
  auto raw = buf.download<uint8_t>(size_t(count) * w);
  if (!raw) return raw.takeError();
  std::vector<int64_t> v(static_cast<size_t>(count));
  for (int64_t i = 0; i < count; ++i) {
    const uint8_t *p = raw->data() + i * w;
    if (t == OutType::Int32) { int32_t x; std::memcpy(&x, p, 4); v[i] = x; }
    else if (t == OutType::Int64) { int64_t x; std::memcpy(&x, p, 8); v[i] = x; }
    else if (t == OutType::F32) { uint32_t x; std::memcpy(&x, p, 4); v[i] = x; }
    else { uint16_t x; std::memcpy(&x, p, 2); v[i] = x; }
  }
  return v;
}

llvm::Expected<int> target_arch(const Plan &plan, int device_cc) {
  if (device_cc < plan.spec.arch)
    return err("the plan is for " + llvm::Twine(arch_name(plan.spec.arch)) + " but the device is " +
               llvm::Twine(arch_name(device_cc)) + ": plan for the device's arch");
  return device_cc;
}

std::string canonical_plan(const Plan &plan) {
  std::string s;
  llvm::raw_string_ostream(s) << to_json(plan);
  return s;
}

namespace {
std::string joined(const std::vector<std::string> &opts) {
  std::string s;
  for (const std::string &o : opts) s += o + " ";
  return s;
}
}  // namespace

const std::vector<std::string> &env_nvrtc_options() {
  static const std::vector<std::string> opts = [] {
    std::vector<std::string> o;
    const char *v = std::getenv("MAGICUBE_NVRTC_OPTIONS");
    if (!v) return o;
    llvm::SmallVector<llvm::StringRef, 8> parts;
    llvm::StringRef(v).split(parts, ' ', -1, /*KeepEmpty=*/false);
    for (llvm::StringRef p : parts) {
      p = p.trim();
      if (p.empty()) continue;
      if (!p.startswith("-")) {
        warn_once("MAGICUBE_NVRTC_OPTIONS:" + p.str(),
                  "MAGICUBE_NVRTC_OPTIONS: ignoring " + quoted(p) + " (not an option: options start with '-')");
        continue;
      }
      o.push_back(p.str());
    }
    if (!o.empty()) log().info("NVRTC options from MAGICUBE_NVRTC_OPTIONS: {}", v);
    return o;
  }();
  return opts;
}

std::vector<std::string> kernel_nvrtc_options(const Plan &plan) {
  if (plan.launch.language == KernelLanguage::Ptx) return {};
  std::vector<std::string> opts = nvrtc_options(plan);
  const std::vector<std::string> &extra = env_nvrtc_options();
  opts.insert(opts.end(), extra.begin(), extra.end());
  return opts;
}

CacheKey kernel_cache_key(const Plan &plan, int arch) {
  return make_cache_key(kGeneratorVersion, canonical_plan(plan), joined(kernel_nvrtc_options(plan)), arch,
                        toolchain_version());
}

namespace {
SourceKind source_kind(const Plan &plan) {
  return plan.launch.language == KernelLanguage::Ptx ? SourceKind::Ptx : SourceKind::Cuda;
}
}  // namespace

llvm::Expected<std::string> compile_kernel_source(const Plan &plan, const KernelSource &src, int arch) {
  return compile_cubin(source_kind(plan), src.source, src.file_name(), arch, kernel_nvrtc_options(plan));
}

CompileCache &kernel_compile_cache() {
  CompileCache &cache = CompileCache::process();
  cache.use_process_bundles(kGeneratorVersion);  // once: $MAGICUBE_BUNDLE or the installed bundle
  return cache;
}

llvm::Expected<std::string> kernel_cubin(const Plan &plan, const KernelSource &src, int arch) {
  return kernel_compile_cache().get_cubin(
      kernel_cache_key(plan, arch), arch, [&]() -> llvm::Expected<std::string> { return src.source; },
      src.file_name(), kernel_nvrtc_options(plan), source_kind(plan));
}

std::vector<Precompiled> precompile_kernels(llvm::ArrayRef<PlanTarget> targets, unsigned threads) {
  std::vector<Precompiled> out(targets.size());
  parallel_for(
      targets.size(),
      [&](size_t i) {
        const auto t0 = std::chrono::steady_clock::now();
        const PlanTarget &t = targets[i];
        Precompiled &r = out[i];
        r.key = kernel_cache_key(t.plan, t.arch);
        auto src = generate(t.plan);
        if (!src) {
          r.error = "codegen: " + llvm::toString(src.takeError());
          return;
        }
        r.name = src->name;
        auto cubin = kernel_cubin(t.plan, *src, t.arch);
        if (cubin) r.cubin = std::move(*cubin);
        else r.error = "compile: " + llvm::toString(cubin.takeError());
        r.ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
      },
      threads > 0 ? threads : std::min(16u, hardware_threads()));
  return out;
}

llvm::Expected<DeviceLhs> upload(const PackedLhs &a, const SrBcrs &layout) {
  DeviceLhs d;
  auto rp = DeviceBuffer::from(a.row_ptr);
  if (!rp) return rp.takeError();
  auto ci = DeviceBuffer::from(a.col_idx);
  if (!ci) return ci.takeError();
  d.row_ptr = std::move(*rp);
  d.col_idx = std::move(*ci);
  for (const Plane &p : a.planes) {
    auto buf = DeviceBuffer::from(p);
    if (!buf) return buf.takeError();
    d.planes.push_back(std::move(*buf));
  }
  d.rows = layout.rows;
  d.cols = layout.cols;
  d.index_bits = a.index_bits;
  d.panel_rows = a.panel_rows;
  d.num_blocks = layout.num_blocks();
  d.max_block_length = layout.max_block_length;
  return d;
}

llvm::Expected<DeviceRhs> upload(const PackedRhs &b) {
  DeviceRhs d;
  for (const Plane &p : b.planes) {
    auto buf = DeviceBuffer::from(p);
    if (!buf) return buf.takeError();
    d.planes.push_back(std::move(*buf));
  }
  d.k = b.k;
  d.n = b.n;
  d.ldb = b.ldb;
  return d;
}

llvm::Expected<DeviceEpilogue> upload(const EpilogueArgs &e) {
  DeviceEpilogue d;
  d.alpha = e.alpha;
  for (auto [host, dev] : {std::pair{&e.row_scale, &d.row_scale}, {&e.col_scale, &d.col_scale}, {&e.bias, &d.bias}}) {
    if (host->empty()) continue;
    auto buf = DeviceBuffer::from(*host);
    if (!buf) return buf.takeError();
    *dev = std::move(*buf);
  }
  return d;
}

namespace {
// The values of one launch, by parameter kind; args() points at them in the order of the
// plan's parameter list (Plan::launch.params), the list codegen printed.
struct LaunchValues {
  CUdeviceptr row_ptr = 0, col_idx = 0, out = 0, bcrs_ptr = 0, stride_meta = 0, stride_next = 0, panel_first = 0;
  llvm::SmallVector<CUdeviceptr, 8> lhs, rhs;
  int m = 0, n = 0, k = 0, ldb = 0, ldk = 0, out_stride = 0, strides = 0;
  EpilogueValues epi;

  // One pointer per parameter (no heap allocation per launch). `this` must outlive the launch.
  llvm::SmallVector<void *, 24> args(const Launch &l) {
    llvm::SmallVector<void *, 24> a;
    for (const KernelParam &p : l.params) switch (p.kind) {
        case ParamKind::RowPtr: a.push_back(&row_ptr); break;
        case ParamKind::ColIdx: a.push_back(&col_idx); break;
        case ParamKind::LhsPlane: a.push_back(&lhs[size_t(p.plane)]); break;
        case ParamKind::RhsPlane: a.push_back(&rhs[size_t(p.plane)]); break;
        case ParamKind::Out: a.push_back(&out); break;
        case ParamKind::BcrsPtr: a.push_back(&bcrs_ptr); break;
        case ParamKind::M: a.push_back(&m); break;
        case ParamKind::N: a.push_back(&n); break;
        case ParamKind::K: a.push_back(&k); break;
        case ParamKind::Ldb: a.push_back(&ldb); break;
        case ParamKind::Ldk: a.push_back(&ldk); break;
        case ParamKind::OutStride: a.push_back(&out_stride); break;
        case ParamKind::Alpha: a.push_back(&epi.alpha); break;
        case ParamKind::RowScale: a.push_back(&epi.row_scale); break;
        case ParamKind::ColScale: a.push_back(&epi.col_scale); break;
        case ParamKind::Bias: a.push_back(&epi.bias); break;
        case ParamKind::StrideMeta: a.push_back(&stride_meta); break;
        case ParamKind::StrideNext: a.push_back(&stride_next); break;
        case ParamKind::Strides: a.push_back(&strides); break;
        case ParamKind::PanelFirst: a.push_back(&panel_first); break;
      }
    return a;
  }
};

}  // namespace

llvm::Expected<EpilogueValues> epilogue_values(const OpSpec &spec, const DeviceEpilogue *e, int64_t rows,
                                               int64_t cols) {
  EpilogueValues v;
  if (!is_float(spec.out)) return v;
  static const DeviceEpilogue none;
  if (!e) e = &none;
  auto need = [&](const DeviceBuffer &b, int64_t n, const char *what) -> llvm::Error {
    if (b.bytes() < size_t(n) * sizeof(float))
      return err("epilogue: " + llvm::Twine(what) + " has " + llvm::Twine(b.bytes() / sizeof(float)) +
                 " values, expected " + llvm::Twine(n));
    return llvm::Error::success();
  };
  if (spec.scale == Scale::RowCol) {
    if (auto x = need(e->row_scale, rows, "row_scale")) return x;
    if (auto x = need(e->col_scale, cols, "col_scale")) return x;
  }
  if (spec.bias == Bias::Row)
    if (auto x = need(e->bias, rows, "bias (per row)")) return x;
  if (spec.bias == Bias::Col)
    if (auto x = need(e->bias, cols, "bias (per column)")) return x;
  v.alpha = spec.scale == Scale::Tensor ? e->alpha : 1.0f;
  v.row_scale = e->row_scale.ptr();
  v.col_scale = e->col_scale.ptr();
  v.bias = e->bias.ptr();
  return v;
}

Dim3 resident_grid(const Launch &l, int64_t n, int64_t row_blocks, size_t smem, int sm_count) {
  // Slices of BSn columns x parts of the row-block list, enough parts to fill every SM once
  // (blocks per SM as shared memory and threads allow; 228 KiB of shared memory per SM).
  const int64_t slices = l.grid_x(n);
  const int64_t per_sm = std::max<int64_t>(1, std::min<int64_t>(2048 / l.threads, (228 * 1024) / int64_t(smem + 1024)));
  const int64_t parts = std::clamp<int64_t>(int64_t(sm_count) * per_sm / slices, 1, std::min<int64_t>(row_blocks, 65535));
  return Dim3{unsigned(slices), unsigned(parts), 1};
}

namespace {
constexpr double kDecodeRunLoads = 10;  // a block's run (or a segment of it): its fixed cost in slice loads
}  // namespace

Dim3 decode_grid(const Launch &l, int64_t n, int64_t row_blocks, int64_t strides, int64_t k, int sm_count,
                 unsigned cluster) {
  const int64_t slices = std::max<int64_t>(1, l.grid_x(n)), sms = std::max(1, sm_count);
  const int64_t max_parts = std::min<int64_t>({std::max<int64_t>(row_blocks, 1), 65535, 2 * sms});
  // A block loads its slice at about 12 us a MB and then runs a stride in about 22 ns
  // (4096x4096 s=0.9 N=2048, BSn=48, H100): one slice byte costs what 1/1800 of a stride does.
  // In clusters (Launch::panel_cluster) a block copies its panel's rows only.
  const int64_t cn = cluster ? cluster : l.cluster_blocks(k), rows = cn > 1 ? std::min<int64_t>(k, l.panel_rows) : k;
  const double load = double(std::max<int64_t>(rows, 8)) * l.slice_bytes_per_k / 1800.0;
  const double work = double(std::max<int64_t>(strides, 1));
  auto cost = [&](int64_t p) { return double((slices * p + sms - 1) / sms) * (work / double(p) + load); };
  // For a given number of waves the most parts that still fit them cost least (the strides a
  // part fall, the waves stay), so only those are tried: w waves hold floor(w x SMs / slices)
  // parts a slice. This runs at every launch: a few iterations (trying every part count took
  // 0.75 us a launch on the build machine).
  int64_t best = 1;
  double best_cost = cost(1);
  for (int64_t w = (slices + sms - 1) / sms;; ++w) {
    const int64_t p = std::min(max_parts, w * sms / slices);
    if (p >= 1) {
      const double c = cost(p);
      if (c < best_cost * (1 - 1e-9)) best = p, best_cost = c;
    }
    // Past here w' waves cost at least w' x load + the strides spread over every SM.
    if (p >= max_parts || double(w + 1) * load + work * double(slices) / double(sms) >= best_cost) break;
  }
  // A cluster's blocks share a part: whole clusters (each one more part of the row-blocks).
  if (cn > 1) best = std::max(cn, best / cn * cn);
  // With shares (Launch::slice_shares) a block may also take a G-th of all slices' strides, slice
  // after slice, copying each slice it touches (a grid of (1, G)): one wave of every SM, no idle
  // part of a last wave, and a copy only where a block starts a slice (N = 8192 at BSn=48 takes
  // 171 slices: 1.3 each on 132 SMs, 2-3 copies a block, against 4 waves of 3 parts a slice).
  // Compared with a run's whole fixed cost, about ten slice loads (its copy, the ring's drain and
  // refill, the cut sums, the barrier; H100, bench/NOTES.md Session 31: a second segment made
  // 4096x14336 N=2048 at 16 columns 2.5 % slower where 128 of 132 SMs had one slice each, and
  // shares took 5-17 % off N=8192), for every wave of the whole-wave grid and every segment.
  if (slices > 1 && l.slice_shares) {
    const int64_t g = sms;
    const double run = kDecodeRunLoads * load;
    const double waves = double((slices * best + sms - 1) / sms);
    if (double(decode_segments(slices, g)) * run + work * double(slices) / double(g) <
        best_cost + waves * (run - load) - 1e-9 * best_cost)
      return Dim3{1, unsigned(g), 1};
  }
  return Dim3{unsigned(slices), unsigned(best), 1};
}

int64_t decode_segments(int64_t slices, int64_t blocks) {
  // Block b's share is [b x S / G, (b + 1) x S / G) in slices: it touches every slice from the
  // floor of its start to the ceiling of its end (the strides' rounding moves the ends by less
  // than a stride; counted here in whole slices). Its start's fraction takes every multiple of
  // gcd(S, G) / G below 1, so the most is ceil((S + G - gcd(S, G)) / G).
  if (blocks <= 0 || slices <= 0) return 0;
  return (slices + 2 * blocks - std::gcd(slices, blocks) - 1) / blocks;
}

llvm::Error Kernel::launch(const DeviceLhs &a, const DeviceRhs &b, CUdeviceptr c, CUstream stream,
                           const DeviceEpilogue *epi) const {
  if (plan_.spec.op != OpKind::SpMM) return err("launch: this kernel is " + llvm::Twine(op_name(plan_.spec.op)));
  if (a.planes.size() != plan_.lhs.size() || b.planes.size() != plan_.rhs.size())
    return err("spmm: operands were packed for another plan (" + llvm::Twine(a.planes.size()) + " lhs and " +
               llvm::Twine(b.planes.size()) + " rhs planes, the plan has " + llvm::Twine(plan_.lhs.size()) + " and " +
               llvm::Twine(plan_.rhs.size()) + ")");
  if (a.cols != b.k)
    return err("spmm: A is " + llvm::Twine(a.rows) + " x " + llvm::Twine(a.cols) + " but B has " + llvm::Twine(b.k) +
               " rows");
  if (auto e = check_reduction_length(plan_, a.max_block_length)) return e;
  // B's layout follows the plan: slices of BSn columns for resident B, else rows of ldb.
  const Launch &l = plan_.launch;
  const bool resident = l.b_resident();
  if (resident ? b.ldb != plan_.spec.bsn : b.ldb % kLdbAlign != 0)
    return err("spmm: B was packed for another plan (ldb " + std::to_string(b.ldb) + "; this " +
               (resident ? std::string(l.family == KernelFamily::SpmmDecode ? "decode" : "resident-B") +
                               " plan wants slices of " + std::to_string(plan_.spec.bsn) + " columns"
                         : "plan wants rows padded to a multiple of " + std::to_string(kLdbAlign)) +
               "): pack B with this plan");
  const int index_bits = l.family == KernelFamily::SpmmDecode ? 16 : 32;
  if (a.index_bits != index_bits)
    return err("spmm: A was packed for another plan (" + llvm::Twine(a.index_bits) + "-bit column indices; this " +
               (index_bits == 16 ? "decode plan reads 16-bit ones" : "plan reads 32-bit ones") +
               "): pack A with this plan");
  if (a.panel_rows != plan_.spec.panel)
    return err("spmm: A was packed for another plan (" +
               (a.panel_rows ? "K panels of " + std::to_string(a.panel_rows) + " rows" : std::string("no K panels")) +
               "; this plan " +
               (plan_.spec.panel ? "takes K in panels of " + std::to_string(plan_.spec.panel) + " rows"
                                 : std::string("takes K whole")) +
               "): pack A with this plan");
  if (a.num_blocks == 0 || b.n == 0) return llvm::Error::success();
  if (a.num_blocks > 65535) return err("spmm: " + llvm::Twine(a.num_blocks) + " row-blocks exceed the grid's 65535");
  LaunchValues v;
  v.row_ptr = a.row_ptr.ptr();
  v.col_idx = a.col_idx.ptr();
  for (const DeviceBuffer &p : a.planes) v.lhs.push_back(p.ptr());
  for (const DeviceBuffer &p : b.planes) v.rhs.push_back(p.ptr());
  v.out = c;
  v.m = int(a.rows), v.n = int(b.n), v.ldb = int(b.ldb), v.k = int(b.k);
  if (l.family == KernelFamily::SpmmDecode) {
    auto sched = decode_schedule(a.col_idx.bytes(), a.num_blocks, l.panels(b.k));
    if (!sched) return sched.takeError();
    v.strides = int(sched->strides);
    v.stride_meta = a.col_idx.ptr() + CUdeviceptr(sched->meta_offset);
    v.stride_next = a.col_idx.ptr() + CUdeviceptr(sched->next_offset);
    if (plan_.spec.panel) v.panel_first = a.col_idx.ptr() + CUdeviceptr(sched->panel_offset);
  }
  auto ev = epilogue_values(plan_.spec, epi, a.rows, b.n);
  if (!ev) return ev.takeError();
  v.epi = *ev;
  auto args = v.args(l);
  const Dim3 block{unsigned(l.threads), 1, 1};
  if (resident) {
    const bool decode = l.family == KernelFamily::SpmmDecode;
    // A cluster of two where the part's sums fit beside the slice (Launch::panel_cluster), else none.
    unsigned cluster = decode ? l.cluster_blocks(b.k) : 1;
    Dim3 grid = decode ? decode_grid(l, b.n, a.num_blocks, v.strides, b.k, sm_count_, cluster)
                       : resident_grid(l, b.n, a.num_blocks, l.dynamic_smem(b.k), sm_count_);
    size_t smem = l.dynamic_smem(b.k);
    if (cluster > 1) {
      const int64_t parts = grid.y / cluster, per_part = (a.num_blocks + parts - 1) / parts;
      if (smem + l.cluster_sums_bytes(per_part) <= size_t(max_shared_))
        smem += l.cluster_sums_bytes(per_part);
      else
        cluster = 1, grid = decode_grid(l, b.n, a.num_blocks, v.strides, b.k, sm_count_, 1);
    }
    if (smem > size_t(max_shared_))
      return err("spmm: " + llvm::Twine(decode ? "decode: B" : "resident B") +
                 " needs " + llvm::Twine(smem) + " bytes of shared memory for K=" + llvm::Twine(b.k) +
                 " at BSn=" + llvm::Twine(plan_.spec.bsn) + " but a block may use " + llvm::Twine(max_shared_) +
                 "; use a smaller bsn or a plan without resident B");
    return magicube::launch(fn_, grid, block, unsigned(smem), stream, args.data(), true, l.pdl, cluster);
  }
  const Dim3 grid{l.grid_x(b.n), unsigned(a.num_blocks), 1};
  return magicube::launch(fn_, grid, block, 0, stream, args.data());
}

llvm::Expected<DeviceMask> upload_mask(const SrBcrs &mask, const VectorSparse &pattern) {
  if (mask.num_slots() > INT32_MAX / 16) return err("sddmm: too many vector slots for 32-bit indices");
  DeviceMask d;
  std::vector<int32_t> rp(mask.row_ptr.begin(), mask.row_ptr.end());
  auto r = DeviceBuffer::from(rp);
  if (!r) return r.takeError();
  auto c = DeviceBuffer::from(mask.col_idx);
  if (!c) return c.takeError();
  auto b = DeviceBuffer::from(pattern.block_ptr);
  if (!b) return b.takeError();
  d.row_ptr = std::move(*r);
  d.col_idx = std::move(*c);
  d.bcrs_ptr = std::move(*b);
  d.rows = mask.rows;
  d.cols = mask.cols;
  d.num_blocks = mask.num_blocks();
  d.max_block_length = mask.max_block_length;
  d.num_slots = mask.num_slots();
  d.num_vectors = pattern.num_vectors();
  d.stride = mask.stride;
  d.v = mask.v;
  return d;
}

llvm::Expected<DeviceDense> upload(const PackedDense &p) {
  DeviceDense d;
  for (const Plane &pl : p.planes) {
    auto buf = DeviceBuffer::from(pl);
    if (!buf) return buf.takeError();
    d.planes.push_back(std::move(*buf));
  }
  d.rows = p.rows;
  d.k = p.k;
  d.ld = p.ld;
  return d;
}

llvm::Error Kernel::launch_sddmm(const DeviceMask &mask, const DeviceDense &a, const DeviceDense &b, CUdeviceptr out,
                                 SparseLayout layout, CUstream stream, const DeviceEpilogue *epi) const {
  if (plan_.spec.op != OpKind::SDDMM) return err("launch_sddmm: this kernel is " + llvm::Twine(op_name(plan_.spec.op)));
  if (a.planes.size() != plan_.lhs.size() || b.planes.size() != plan_.rhs.size())
    return err("sddmm: operands were packed for another plan");
  if (mask.v != plan_.spec.v)
    return err("sddmm: the mask has V=" + llvm::Twine(mask.v) + " but the plan is for V=" + llvm::Twine(plan_.spec.v));
  if (a.k != b.k || a.ld != b.ld)
    return err("sddmm: A has K=" + llvm::Twine(a.k) + " but B has K=" + llvm::Twine(b.k));
  if (a.rows < mask.num_blocks * mask.v || b.rows < mask.cols)
    return err("sddmm: the mask is " + llvm::Twine(mask.rows) + " x " + llvm::Twine(mask.cols) + " but A has " +
               llvm::Twine(a.rows) + " rows and B " + llvm::Twine(b.rows) + " columns");
  if (auto e = check_reduction_length(plan_, a.k)) return e;
  if (auto e = check_dense_pitch(a.k, a.ld)) return e;
  if (mask.num_blocks == 0 || mask.max_block_length == 0) return llvm::Error::success();
  if (mask.num_blocks > 65535) return err("sddmm: " + llvm::Twine(mask.num_blocks) + " row-blocks exceed the grid's 65535");
  LaunchValues v;
  v.row_ptr = mask.row_ptr.ptr();
  v.col_idx = mask.col_idx.ptr();
  for (const DeviceBuffer &p : a.planes) v.lhs.push_back(p.ptr());
  for (const DeviceBuffer &p : b.planes) v.rhs.push_back(p.ptr());
  v.out = out;
  v.bcrs_ptr = layout == SparseLayout::Bcrs ? mask.bcrs_ptr.ptr() : CUdeviceptr(0);
  v.m = int(mask.rows), v.k = int(a.k), v.ldk = int(a.ld), v.out_stride = mask.stride;
  auto ev = epilogue_values(plan_.spec, epi, mask.rows, mask.cols);
  if (!ev) return ev.takeError();
  v.epi = *ev;
  auto args = v.args(plan_.launch);
  const Dim3 grid{plan_.launch.grid_x(mask.max_block_length), unsigned(mask.num_blocks), 1};
  const Dim3 block{unsigned(plan_.launch.threads), 1, 1};
  return magicube::launch(fn_, grid, block, 0, stream, args.data());
}

llvm::Expected<std::shared_ptr<const Kernel>> Kernel::get(const Context &ctx, const Plan &plan) {
  auto arch = target_arch(plan, ctx.compute_capability());
  if (!arch) return arch.takeError();
  // Hot path: the plan's fingerprint (no JSON, no SHA-256) in the per-context memory cache.
  const uint64_t fp = fingerprint(plan);
  if (auto hit = fast_index().get(ctx.get(), fp, *arch)) return std::shared_ptr<const Kernel>(std::move(hit));
  const CacheKey cache_key = kernel_cache_key(plan, *arch);
  const std::string &key = cache_key.hex;
  if (auto hit = loaded_kernels().get(ctx.get(), key)) {
    fast_index().put(ctx.get(), fp, *arch, hit);
    return std::shared_ptr<const Kernel>(hit);
  }
  // The source is generated only when it must be compiled: a cubin from memory, an AOT
  // bundle or the disk needs just the kernel's name (codegen costs about 0.8 ms).
  std::optional<KernelSource> generated;
  const std::string name = plan.kernel_name();
  auto cubin = kernel_compile_cache().get_cubin(
      cache_key, *arch,
      [&]() -> llvm::Expected<std::string> {
        auto src = generate(plan);
        if (!src) return src.takeError();
        generated = std::move(*src);
        return generated->source;
      },
      KernelSource{name, std::string(), plan.launch.language}.file_name(), kernel_nvrtc_options(plan),
      source_kind(plan));
  if (!cubin) return cubin.takeError();
  auto module = Module::load(*cubin);
  if (!module) return module.takeError();
  auto k = std::make_shared<Kernel>();
  k->plan_ = plan;
  k->src_ = generated ? std::move(*generated) : KernelSource{name, std::string(), plan.launch.language};
  k->arch_ = *arch;
  k->module_ = std::make_shared<Module>(std::move(*module));
  auto fn = k->module_->function(k->src_.name);
  if (!fn) return fn.takeError();
  k->fn_ = *fn;
  k->sm_count_ = ctx.sm_count();
  k->max_shared_ = ctx.max_shared_per_block_optin();
  if (plan.launch.b_resident()) {  // once, so that launches do not set it again
    auto fixed = static_shared_bytes(k->fn_);
    if (!fixed) return fixed.takeError();
    k->max_shared_ -= *fixed;  // what is left for dynamic shared memory
    if (auto e = raise_shared_limit(k->fn_, k->max_shared_)) return e;
  }
  log().debug("loaded {} for sm_{}", k->src_.name, *arch);
  auto stored = loaded_kernels().put(ctx.get(), key, k);
  fast_index().put(ctx.get(), fp, *arch, stored);
  return std::shared_ptr<const Kernel>(stored);
}

}  // namespace magicube
