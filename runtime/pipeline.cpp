#include "runtime/pipeline.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>
#include <map>

#include "compiler/dense_chunks.h"
#include "compiler/planner.h"
#include "runtime/dense_epilogue.h"
#include "runtime/dense_gemm.h"
#include "runtime/dense_route.h"
#include "runtime/packing.h"
#include "runtime/reference.h"
#include "runtime/srbcrs.h"
#include "support/parallel.h"

namespace magicube {

namespace {

llvm::Error err(const llvm::Twine &msg) { return llvm::createStringError(llvm::inconvertibleErrorCode(), msg); }

// The device copy of what `pack` packs for key `key`, packed and uploaded once per key.
template <class Device, class Pack>
llvm::Expected<const Device *> upload_once(std::map<std::string, Device> &cache, const std::string &key, Pack pack) {
  if (auto it = cache.find(key); it != cache.end()) return &it->second;
  auto packed = pack();
  if (!packed) return packed.takeError();
  return &cache.emplace(key, std::move(*packed)).first->second;
}

// Unit scales and a zero bias: a float epilogue runs with every pointer it needs.
EpilogueArgs unit_epilogue(const OpSpec &spec, int64_t rows, int64_t cols) {
  EpilogueArgs e;
  if (!is_float(spec.out)) return e;
  if (spec.scale == Scale::RowCol) {
    e.row_scale.assign(size_t(rows), 1.0f);
    e.col_scale.assign(size_t(cols), 1.0f);
  }
  if (spec.bias != Bias::None) e.bias.assign(size_t(spec.bias == Bias::Row ? rows : cols), 0.0f);
  return e;
}

// The element as the kernel stores it (integers sign-extended, float bits zero-extended).
int64_t stored(const OpSpec &spec, int64_t acc, double x) {
  switch (spec.out) {
    case OutType::Int32: return int32_t(uint32_t(uint64_t(acc)));
    case OutType::Int64: return acc;
    case OutType::F32: return f32_bits(x);
    case OutType::F16: return f16_bits(x);
    case OutType::BF16: return bf16_bits(x);
  }
  return acc;
}

std::string chunks_key(const std::vector<Chunk> &cs) {
  std::string s;
  for (const Chunk &c : cs) s += c.str() + "/" + std::to_string(c.storage_bits) + " ";
  return s;
}

// Row-blocks [b0, b1) of `a` as a matrix of their own (rows from b0 * V).
VectorSparse block_slice(const VectorSparse &a, int64_t b0, int64_t b1) {
  VectorSparse s;
  s.v = a.v;
  s.cols = a.cols;
  s.rows = std::min(a.rows - b0 * a.v, (b1 - b0) * a.v);
  const int64_t v0 = a.block_ptr[b0], v1 = a.block_ptr[b1];
  for (int64_t i = b0; i <= b1; ++i) s.block_ptr.push_back(a.block_ptr[i] - v0);
  s.col.assign(a.col.begin() + v0, a.col.begin() + v1);
  if (!a.values.empty()) s.values.assign(a.values.begin() + v0 * a.v, a.values.begin() + v1 * a.v);
  return s;
}

class SpmmPipeline : public Pipeline {
 public:
  SpmmPipeline(const OpSpec &spec, const VectorSparse &a, std::vector<int64_t> b, int64_t n,
               std::shared_ptr<SpmmLhsCache> lhs)
      : Pipeline(spec), a_(a), b_(std::move(b)), n_(n), lhs_(lhs ? std::move(lhs) : std::make_shared<SpmmLhsCache>()) {
    count_ = a.rows * n;
    epi_host_ = unit_epilogue(spec, a.rows, n);
  }
  llvm::Error check(const Plan &p) const override { return check_reduction_length(p, a_.max_block_length()); }
  llvm::Error prepare(const Plan &p) override {
    std::string lk = std::to_string(p.k_stride) + " " + chunks_key(p.lhs);
    if (p.shuffle_b)
      for (int x : p.shuffle) lk += "s" + std::to_string(x);
    if (p.spec.resident) lk += " bank-balanced";
    if (p.launch.family == KernelFamily::SpmmDecode) lk += " 16-bit indices";
    if (p.spec.panel) lk += " K panels of " + std::to_string(p.spec.panel);
    auto da = upload_once(lhs_->packed, lk, [&]() -> llvm::Expected<DeviceLhs> {
      ++lhs_->packs;
      auto layout = build_srbcrs(a_, p);
      if (!layout) return layout.takeError();
      auto packed = pack_lhs(*layout, p);
      if (!packed) return packed.takeError();
      return upload(*packed, *layout);
    });
    if (!da) return da.takeError();
    const std::string rk = chunks_key(p.rhs) + (p.spec.resident ? " slices of " + std::to_string(p.spec.bsn) : "");
    auto db = upload_once(rhs_, rk, [&]() -> llvm::Expected<DeviceRhs> {
      auto packed = pack_rhs(b_, a_.cols, n_, p);
      if (!packed) return packed.takeError();
      return upload(*packed);
    });
    if (!db) return db.takeError();
    cur_a_ = *da;
    cur_b_ = *db;
    if (auto e = allocate_output()) return e;
    return upload_epilogue_once();
  }
  llvm::Error launch(const Kernel &k, CUstream stream) override {
    return k.launch(*cur_a_, *cur_b_, out_.ptr(), stream, epi_ ? &*epi_ : nullptr);
  }
  llvm::Error prepare_dense(const Context &ctx) override {
    if (std::string why = dense_route_refusal(spec_); !why.empty()) return err("route: " + why);
    if (std::string why = dense_reduction_refusal(spec_, a_.max_block_length(), a_.cols); !why.empty())
      return err("route: " + why);
    if (!dense_) {
      // A column-major C is C^T row-major: the GEMM of Bt and A with the roles swapped.
      auto g = spec_.c_col ? DenseGemm::create(n_, a_.rows, a_.cols) : DenseGemm::create(a_.rows, n_, a_.cols);
      if (!g) return g.takeError();
      if (lhs_->dense.bytes() == 0) {
        auto da = DeviceBuffer::from(dense_lhs_int8(a_, spec_));
        if (!da) return da.takeError();
        lhs_->dense = std::move(*da);
      }
      auto db = DeviceBuffer::from(dense_rhs_t_int8(b_, a_.cols, n_, spec_.rhs));
      if (!db) return db.takeError();
      auto ws = DeviceBuffer::allocate((*g)->workspace_bytes());
      if (!ws) return ws.takeError();
      if (auto e = allocate_output()) return e;
      if (dense_needs_scratch(spec_)) {  // the GEMMs' int32 results, which the epilogue kernel reads
        auto acc = DeviceBuffer::allocate(dense_scratch_bytes(spec_, a_.rows, n_));
        if (!acc) return acc.takeError();
        dense_acc_ = std::move(*acc);
        if (auto e = preload_dense_epilogue(ctx, spec_)) return e;
      }
      const CUdeviceptr ga = spec_.c_col ? db->ptr() : lhs_->dense.ptr(), gb = spec_.c_col ? lhs_->dense.ptr() : db->ptr();
      if (auto e = (*g)->select(ctx, ga, gb, gemm_out(), ws->ptr())) return e;
      dense_bt_ = std::move(*db), dense_ws_ = std::move(*ws);
      dense_ = std::move(*g);
      ctx_ = &ctx;
    }
    if (auto e = allocate_output()) return e;
    if (auto e = upload_epilogue_once()) return e;
    auto ev = epilogue_values(spec_, epi_ ? &*epi_ : nullptr, a_.rows, n_);
    if (!ev) return ev.takeError();
    dense_epi_ = *ev;
    return llvm::Error::success();
  }
  llvm::Error launch_dense(CUstream stream) override {
    if (!dense_) return err("dense route: launch_dense before prepare_dense");
    return dense_route_on_device(*ctx_, spec_, *dense_, lhs_->dense.ptr(), dense_bt_.ptr(), out_.ptr(), a_.rows,
                                 a_.cols, n_, spec_.c_col, dense_ws_.ptr(), dense_acc_.ptr(), dense_epi_, stream);
  }
  llvm::Error poison() override {
    if (auto e = Pipeline::poison()) return e;
    return dense_acc_.bytes() ? dense_acc_.memset(0xAB) : llvm::Error::success();
  }
  const DeviceBuffer *dense_scratch() const override { return dense_acc_.bytes() ? &dense_acc_ : nullptr; }
  std::string dense_describe() const override {
    if (!dense_) return "";
    const DenseChunks ch = dense_chunks(spec_);
    return dense_->describe() + (ch.needs_epilogue() ? "; in int8 chunks " + ch.str() : std::string());
  }

 protected:
  int64_t num_blocks() const override { return a_.num_blocks(); }
  double reference_cost() const override { return double(a_.num_vectors()) * a_.v * double(n_); }
  std::vector<int64_t> block_reference(int64_t blk) const override {
    return reference_spmm(block_slice(a_, blk, blk + 1), b_, n_);
  }
  void block_elements(int64_t blk, const std::vector<int64_t> &ref,
                      const std::function<void(int64_t, int64_t, int64_t, int64_t)> &fn) const override {
    for (int64_t r = 0; r < a_.v && blk * a_.v + r < a_.rows; ++r)
      for (int64_t j = 0; j < n_; ++j) {
        const int64_t row = blk * a_.v + r;
        fn(spec_.c_col ? j * a_.rows + row : row * n_ + j, ref[size_t(r * n_ + j)], row, j);
      }
  }
  int64_t block_offset(int64_t blk) const override { return blk * a_.v * n_; }

 private:
  const VectorSparse &a_;
  std::vector<int64_t> b_;
  int64_t n_;
  std::shared_ptr<SpmmLhsCache> lhs_;
  std::map<std::string, DeviceRhs> rhs_;
  const DeviceLhs *cur_a_ = nullptr;
  const DeviceRhs *cur_b_ = nullptr;
  // Where the dense GEMMs write: the output itself (int32 of one GEMM), else the scratch planes
  // the epilogue reads.
  CUdeviceptr gemm_out() const { return dense_needs_scratch(spec_) ? dense_acc_.ptr() : out_.ptr(); }

  std::unique_ptr<DenseGemm> dense_;
  DeviceBuffer dense_bt_, dense_ws_, dense_acc_;
  EpilogueValues dense_epi_;  // the epilogue kernel's scales and bias, checked by prepare_dense
  const Context *ctx_ = nullptr;
};

class SddmmPipeline : public Pipeline {
 public:
  SddmmPipeline(const OpSpec &spec, const VectorSparse &mask, std::vector<int64_t> a, std::vector<int64_t> b, int64_t k,
                SparseLayout layout, int stride)
      : Pipeline(spec), mask_(mask), a_(std::move(a)), b_(std::move(b)), k_(k), layout_(layout) {
    m_ = build_srbcrs(mask, stride, false, {});
    count_ = (layout == SparseLayout::Bcrs ? mask.num_vectors() : m_.num_slots()) * mask.v;
    epi_host_ = unit_epilogue(spec, mask.rows, mask.cols);
  }
  llvm::Error check(const Plan &p) const override { return check_reduction_length(p, k_); }
  llvm::Error prepare(const Plan &p) override {
    if (!dm_) {
      auto dm = upload_mask(m_, mask_);
      if (!dm) return dm.takeError();
      dm_.emplace(std::move(*dm));
    }
    auto da = upload_once(lhs_, chunks_key(p.lhs), [&]() -> llvm::Expected<DeviceDense> {
      auto packed = pack_sddmm_lhs(a_, mask_.rows, k_, p);
      if (!packed) return packed.takeError();
      return upload(*packed);
    });
    if (!da) return da.takeError();
    auto db = upload_once(rhs_, chunks_key(p.rhs), [&]() -> llvm::Expected<DeviceDense> {
      auto packed = pack_sddmm_rhs(b_, k_, mask_.cols, p);
      if (!packed) return packed.takeError();
      return upload(*packed);
    });
    if (!db) return db.takeError();
    cur_a_ = *da;
    cur_b_ = *db;
    if (auto e = allocate_output()) return e;
    return upload_epilogue_once();
  }
  llvm::Error launch(const Kernel &k, CUstream stream) override {
    return k.launch_sddmm(*dm_, *cur_a_, *cur_b_, out_.ptr(), layout_, stream, epi_ ? &*epi_ : nullptr);
  }

 protected:
  int64_t num_blocks() const override { return mask_.num_blocks(); }
  double reference_cost() const override { return double(mask_.num_vectors()) * mask_.v * double(k_); }
  std::vector<int64_t> block_reference(int64_t blk) const override {
    VectorSparse one = block_slice(mask_, blk, blk + 1);
    std::vector<int64_t> rows(a_.begin() + blk * mask_.v * k_, a_.begin() + (blk * mask_.v + one.rows) * k_);
    return reference_sddmm(one, rows, b_, k_);
  }
  void block_elements(int64_t blk, const std::vector<int64_t> &ref,
                      const std::function<void(int64_t, int64_t, int64_t, int64_t)> &fn) const override {
    const int v = mask_.v;
    const int64_t first = mask_.block_ptr[blk];
    for (int64_t i = first; i < mask_.block_ptr[blk + 1]; ++i)
      for (int r = 0; r < v; ++r) {
        const int64_t row = blk * v + r;
        if (row >= mask_.rows) continue;  // rows past M are not written
        const int64_t slot = m_.row_ptr[2 * blk] + (i - first);
        const int64_t at = layout_ == SparseLayout::Bcrs ? i * v + r : m_.value_index(slot, r);
        fn(at, ref[size_t((i - first) * v + r)], row, int64_t(mask_.col[i]));
      }
  }
  int64_t block_offset(int64_t blk) const override { return mask_.block_ptr[blk] * mask_.v; }

 private:
  const VectorSparse &mask_;
  std::vector<int64_t> a_, b_;
  int64_t k_;
  SparseLayout layout_;
  SrBcrs m_;
  std::optional<DeviceMask> dm_;
  std::map<std::string, DeviceDense> lhs_, rhs_;
  const DeviceDense *cur_a_ = nullptr, *cur_b_ = nullptr;
};

}  // namespace

std::unique_ptr<Pipeline> Pipeline::spmm(const OpSpec &spec, const VectorSparse &a, std::vector<int64_t> b, int64_t n,
                                         std::shared_ptr<SpmmLhsCache> lhs_cache) {
  return std::make_unique<SpmmPipeline>(spec, a, std::move(b), n, std::move(lhs_cache));
}

std::unique_ptr<Pipeline> Pipeline::sddmm(const OpSpec &spec, const VectorSparse &mask, std::vector<int64_t> a,
                                          std::vector<int64_t> b, int64_t k, SparseLayout layout, int stride) {
  return std::make_unique<SddmmPipeline>(spec, mask, std::move(a), std::move(b), k, layout, stride);
}

llvm::Error Pipeline::prepare_dense(const Context &) {
  return err("route: " + dense_route_refusal(spec_));
}
llvm::Error Pipeline::launch_dense(CUstream) { return err("dense route: launch_dense before prepare_dense"); }

const std::vector<int64_t> &Pipeline::reference() {
  if (!ref_.empty() || num_blocks() == 0) return ref_;
  ref_.assign(size_t(block_offset(num_blocks())), 0);
  parallel_for(size_t(num_blocks()), [&](size_t blk) {
    std::vector<int64_t> part = block_reference(int64_t(blk));
    std::copy(part.begin(), part.end(), ref_.begin() + block_offset(int64_t(blk)));
  });
  return ref_;
}

void Pipeline::set_epilogue(EpilogueArgs e) {
  epi_host_ = std::move(e);
  epi_.reset();
}

llvm::Error Pipeline::upload_epilogue_once() {
  if (epi_ || !is_float(spec_.out)) return llvm::Error::success();
  auto d = upload(epi_host_);
  if (!d) return d.takeError();
  epi_.emplace(std::move(*d));
  return llvm::Error::success();
}

llvm::Error Pipeline::allocate_output() {
  if (out_.bytes() > 0) return llvm::Error::success();
  auto c = DeviceBuffer::allocate(std::max<size_t>(1, size_t(count_) * stored_bytes(spec_.out)));
  if (!c) return c.takeError();
  out_ = std::move(*c);
  return llvm::Error::success();
}

llvm::Expected<Verification> Pipeline::verify(double budget) {
  auto got = download_stored(out_, count_, spec_.out);
  if (!got) return got.takeError();
  // The row-blocks to check: all, or a sample of about `budget` multiply-adds.
  const int64_t nb = num_blocks();
  std::vector<int64_t> blocks;
  if (budget <= 0 || reference_cost() <= budget) {
    for (int64_t b = 0; b < nb; ++b) blocks.push_back(b);
  } else if (nb > 0) {
    const int64_t want = std::max<int64_t>(2, int64_t(double(nb) * budget / reference_cost()));
    for (int64_t i = 0; i < want; ++i) blocks.push_back(i * (nb - 1) / (want - 1));
    blocks.erase(std::unique(blocks.begin(), blocks.end()), blocks.end());
  }
  const bool floating = is_float(spec_.out);
  // The checked row-blocks' references: kept from an earlier verify, cut from reference(), or
  // computed now on the host's cores (and kept, for outputs of up to 32 M elements: 256 MiB of
  // int64 at most; larger ones are computed per row-block as they are checked).
  const bool keep = count_ <= (int64_t(1) << 25);
  if (ref_.empty() && keep) {
    std::vector<int64_t> missing;
    for (int64_t b : blocks)
      if (!block_refs_.count(b)) missing.push_back(b);
    std::vector<std::vector<int64_t>> computed(missing.size());
    parallel_for(missing.size(), [&](size_t i) { computed[i] = block_reference(missing[i]); });
    for (size_t i = 0; i < missing.size(); ++i) block_refs_.emplace(missing[i], std::move(computed[i]));
  }
  std::vector<Verification> part(blocks.size());
  parallel_for(blocks.size(), [&](size_t bi) {
    Verification &v = part[bi];
    const int64_t blk = blocks[bi];
    std::vector<int64_t> own;  // cut from reference(), or computed here when not kept
    if (!ref_.empty()) own.assign(ref_.begin() + block_offset(blk), ref_.begin() + block_offset(blk + 1));
    else if (!keep) own = block_reference(blk);
    const std::vector<int64_t> &ref = ref_.empty() && keep ? block_refs_.at(blk) : own;
    block_elements(blk, ref, [&](int64_t at, int64_t exact, int64_t row, int64_t col) {
      ++v.checked;
      const double x = floating ? dequantize(spec_, exact, epi_host_, row, col) : 0.0;
      const int64_t want = stored(spec_, exact, x), g = (*got)[size_t(at)];
      if (g != want) {
        if (!v.differ++) v.first = Verification::Mismatch{at, row, col, g, want, x};
        return;
      }
      if (floating) {
        const double y = stored_value(spec_.out, g);
        if (!std::isfinite(y)) ++v.nonfinite;
        else if (x != 0) v.max_rel = std::max(v.max_rel, std::fabs(y - x) / std::fabs(x));
      }
    });
  });
  Verification v;  // in row-block order: the first mismatch is the first by row
  v.blocks = nb;
  v.blocks_checked = int64_t(blocks.size());
  for (const Verification &p : part) {
    v.checked += p.checked, v.nonfinite += p.nonfinite, v.max_rel = std::max(v.max_rel, p.max_rel);
    if (p.differ && !v.differ) v.first = p.first;
    v.differ += p.differ;
  }
  return v;
}

}  // namespace magicube
