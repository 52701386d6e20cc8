#include "compiler/plan_interpreter.h"

#include "compiler/planner.h"

#include <algorithm>

namespace magicube {

namespace {

llvm::Error err(const llvm::Twine &msg) { return llvm::createStringError(llvm::inconvertibleErrorCode(), msg); }

// One mma accumulator tile (M x N of the mma shape), int32 with two's-complement wrap.
struct AccTile {
  int m, n;
  std::vector<uint32_t> d;
  AccTile(int m_, int n_) : m(m_), n(n_), d(size_t(m_) * n_, 0) {}
  uint32_t &at(int i, int j) { return d[size_t(i) * n + j]; }
};

// (lane, reg) -> (row, col) of an mma C fragment (PTX ISA, integer mma accumulators).
std::pair<int, int> c_coord(const MmaShape &s, int lane, int reg) {
  int group = lane >> 2, tig = lane & 3;
  if (s.m == 16) return {group + 8 * (reg >> 1), tig * 2 + (reg & 1)};
  return {group, tig * 2 + reg};  // m8n8
}
int c_regs(const MmaShape &s) { return s.m * s.n / 32; }

// The data a warp holds for one step: the stacked lhs operand (V side x k) and one rhs
// chunk's dense operand (k x dense side), as chunk values.
struct StepOperands {
  // lhs_rows[g][vidx][kk]: stacked lhs chunk values of group g (slot = vidx / V)
  std::vector<std::vector<std::vector<int32_t>>> lhs;
  // rhs[j][kk][d]: rhs chunk j at k-position kk, dense index d
  std::vector<std::vector<std::vector<int32_t>>> rhs;
};

// D += the mma of one group and one rhs chunk, in the plan's orientation.
void mma(const Plan &p, AccTile &acc, const std::vector<std::vector<int32_t>> &lhs_stack,
         const std::vector<std::vector<int32_t>> &rhs_chunk) {
  const int vs = p.v_side(), ds = p.dense_side(), k = p.shape.k;
  for (int vi = 0; vi < vs; ++vi)
    for (int di = 0; di < ds; ++di) {
      uint32_t s = 0;
      for (int kk = 0; kk < k; ++kk) s += uint32_t(int64_t(lhs_stack[vi][kk]) * rhs_chunk[kk][di]);
      if (p.orient == Orientation::DenseOnM)
        acc.at(di, vi) += s;
      else
        acc.at(vi, di) += s;
    }
}

// The epilogue on the C fragments: each element is shifted by its term's shift (lhs chunk
// of its slot, rhs chunk of its tile), the tiles are summed, then the butterfly exchange
// sums the slots. Acc is uint32_t (int32 output, wrapping) or int64_t.
template <class Acc>
std::vector<std::vector<Acc>> epilogue(const Plan &p, std::vector<std::vector<AccTile>> &tiles) {
  const int regs = c_regs(p.shape), v = p.spec.v;
  std::vector<std::vector<Acc>> frag(32, std::vector<Acc>(regs, 0));
  for (size_t g = 0; g < p.groups.size(); ++g)
    for (size_t j = 0; j < p.rhs.size(); ++j)
      for (int lane = 0; lane < 32; ++lane)
        for (int reg = 0; reg < regs; ++reg) {
          auto [row, col] = c_coord(p.shape, lane, reg);
          int vidx = p.orient == Orientation::DenseOnM ? col : row;
          size_t slot = vidx / v;
          if (slot >= p.groups[g].lhs_chunks.size()) continue;  // no chunk there: its rows are zero
          int shift = p.lhs[p.groups[g].lhs_chunks[slot]].lo_bit + p.rhs[j].lo_bit;
          Acc x = Acc(int64_t(int32_t(tiles[g][j].at(row, col))));  // the int32 accumulator
          frag[lane][reg] += Acc(x << shift);
        }
  for (const ExchangeStep &e : p.exchange) {
    auto src = frag;
    for (int lane = 0; lane < 32; ++lane)
      for (int reg = 0; reg < regs; ++reg)
        frag[lane][reg] += e.kind == ExchangeStep::Reg ? src[lane][reg ^ e.mask] : src[lane ^ e.mask][reg];
  }
  return frag;
}

// Runs the accumulated tiles through the epilogue and hands each (V row, dense index)
// result of slot 0 to `write`.
template <class Write>
void finish(const Plan &p, std::vector<std::vector<AccTile>> &tiles, Write write) {
  const int regs = c_regs(p.shape);
  auto emit = [&](auto frag) {
    for (int lane = 0; lane < 32; ++lane)
      for (int reg = 0; reg < regs; ++reg) {
        auto [row, col] = c_coord(p.shape, lane, reg);
        int vidx = p.orient == Orientation::DenseOnM ? col : row;
        int didx = p.orient == Orientation::DenseOnM ? row : col;
        if (vidx < p.spec.v) write(vidx, didx, int64_t(frag[lane][reg]));
      }
  };
  if (p.spec.out == OutType::Int32) {
    auto f = epilogue<uint32_t>(p, tiles);
    std::vector<std::vector<int32_t>> s(32, std::vector<int32_t>(regs));
    for (int l = 0; l < 32; ++l)
      for (int r = 0; r < regs; ++r) s[l][r] = int32_t(f[l][r]);
    emit(s);
  } else {
    emit(epilogue<int64_t>(p, tiles));
  }
}

// Lhs chunk values stacked on the V side: lhs_stack[g][vidx][kk].
template <class LhsValue>
std::vector<std::vector<std::vector<int32_t>>> stack_lhs(const Plan &p, LhsValue value) {
  const int vs = p.v_side(), k = p.shape.k, v = p.spec.v;
  std::vector<std::vector<std::vector<int32_t>>> out(p.groups.size(),
                                                     std::vector<std::vector<int32_t>>(vs, std::vector<int32_t>(k, 0)));
  for (size_t g = 0; g < p.groups.size(); ++g)
    for (int vi = 0; vi < vs; ++vi) {
      size_t slot = vi / v;
      if (slot >= p.groups[g].lhs_chunks.size()) continue;
      const Chunk &c = p.lhs[p.groups[g].lhs_chunks[slot]];
      for (int kk = 0; kk < k; ++kk) out[g][vi][kk] = int32_t(chunk_value(value(vi % v, kk), c));
    }
  return out;
}

std::vector<std::vector<AccTile>> zero_tiles(const Plan &p) {
  return std::vector<std::vector<AccTile>>(p.groups.size(),
                                           std::vector<AccTile>(p.rhs.size(), AccTile(p.shape.m, p.shape.n)));
}

void step(const Plan &p, std::vector<std::vector<AccTile>> &tiles,
          const std::vector<std::vector<std::vector<int32_t>>> &lhs_stack,
          const std::vector<std::vector<int64_t>> &rhs_values /* [kk][d] */) {
  const int k = p.shape.k, ds = p.dense_side();
  for (size_t j = 0; j < p.rhs.size(); ++j) {
    std::vector<std::vector<int32_t>> rc(k, std::vector<int32_t>(ds));
    for (int kk = 0; kk < k; ++kk)
      for (int d = 0; d < ds; ++d) rc[kk][d] = int32_t(chunk_value(rhs_values[kk][d], p.rhs[j]));
    for (size_t g = 0; g < p.groups.size(); ++g) mma(p, tiles[g][j], lhs_stack[g], rc);
  }
}

}  // namespace

int64_t chunk_value(int64_t x, const Chunk &c) {
  int64_t u = (x >> c.lo_bit) & ((int64_t{1} << c.bits) - 1);
  if (c.is_signed && (u >> (c.bits - 1))) u -= int64_t{1} << c.bits;
  return u;
}

llvm::Expected<std::vector<int64_t>> interpret_spmm(const Plan &p, const SrBcrs &a, const std::vector<int64_t> &b,
                                                    int64_t n) {
  if (p.spec.op != OpKind::SpMM) return err("interpret_spmm: the plan is for " + llvm::Twine(op_name(p.spec.op)));
  if (a.v != p.spec.v || a.stride != p.k_stride || a.shuffled != p.shuffle_b)
    return err("interpret_spmm: the SR-BCRS layout (V=" + llvm::Twine(a.v) + ", stride " + llvm::Twine(a.stride) +
               ") was not built for this plan (V=" + llvm::Twine(p.spec.v) + ", stride " + llvm::Twine(p.k_stride) + ")");
  if (auto e = check_range(a, p.spec.lhs, "lhs A")) return e;
  if (auto e = check_range_dense(b, a.cols, n, false, p.spec.rhs, "rhs B")) return e;
  if (auto e = check_reduction_length(p, a.max_block_length)) return e;

  const int k = p.shape.k, ds = p.dense_side(), v = p.spec.v;
  std::vector<int64_t> c(a.rows * n, 0);
  for (int64_t blk = 0; blk < a.num_blocks(); ++blk) {
    const int64_t begin = a.row_ptr[2 * blk], end = a.padded_end(blk);
    for (int64_t d0 = 0; d0 < n; d0 += ds) {
      auto tiles = zero_tiles(p);
      for (int64_t s = begin; s < end; s += k) {
        // A's stride as stored (row-major, natural k order).
        auto lhs_stack = stack_lhs(p, [&](int r, int kk) { return a.values[a.value_index(s + kk, r)]; });
        // B rows gathered by the stored column indices (pad -1 reads row 0, times A's zero);
        // slot p lands at k-position shuffle[p] within its group of G.
        std::vector<std::vector<int64_t>> rhs(k, std::vector<int64_t>(ds, 0));
        const int G = p.shuffle_b ? int(p.shuffle.size()) : 1;
        for (int slot = 0; slot < k; ++slot) {
          int kk = p.shuffle_b ? (slot / G) * G + p.shuffle[slot % G] : slot;
          int64_t row = std::max<int64_t>(a.col_idx[s + slot], 0);
          for (int d = 0; d < ds; ++d)
            if (d0 + d < n) rhs[kk][d] = b[row * n + d0 + d];  // columns past N load as 0
        }
        step(p, tiles, lhs_stack, rhs);
      }
      finish(p, tiles, [&](int r, int d, int64_t x) {
        int64_t row = blk * v + r, col = d0 + d;
        if (row < a.rows && col < n) c[row * n + col] = x;
      });
    }
  }
  return c;
}

llvm::Expected<std::vector<int64_t>> interpret_sddmm(const Plan &p, const SrBcrs &mask, const std::vector<int64_t> &a,
                                                     const std::vector<int64_t> &b, int64_t kdim) {
  if (p.spec.op != OpKind::SDDMM) return err("interpret_sddmm: the plan is for " + llvm::Twine(op_name(p.spec.op)));
  if (mask.v != p.spec.v)
    return err("interpret_sddmm: the mask has V=" + llvm::Twine(mask.v) + " but the plan is for V=" + llvm::Twine(p.spec.v));
  if (mask.shuffled) return err("interpret_sddmm: an SDDMM mask must not be shuffled");
  if (auto e = check_range_dense(a, mask.rows, kdim, false, p.spec.lhs, "lhs A")) return e;
  if (auto e = check_range_dense(b, kdim, mask.cols, true, p.spec.rhs, "rhs B")) return e;
  if (auto e = check_reduction_length(p, kdim)) return e;

  const int k = p.shape.k, ds = p.dense_side(), v = p.spec.v;
  std::vector<int64_t> out(mask.values.size(), 0);
  for (int64_t blk = 0; blk < mask.num_blocks(); ++blk) {
    const int64_t begin = mask.row_ptr[2 * blk], end = mask.row_ptr[2 * blk + 1];
    for (int64_t q0 = begin; q0 < end; q0 += ds) {  // ds sampled columns per tile
      auto tiles = zero_tiles(p);
      for (int64_t k0 = 0; k0 < kdim; k0 += k) {
        auto lhs_stack = stack_lhs(p, [&](int r, int kk) -> int64_t {
          int64_t row = blk * v + r, col = k0 + kk;
          return row < mask.rows && col < kdim ? a[row * kdim + col] : 0;  // K tail and rows past M load 0
        });
        std::vector<std::vector<int64_t>> rhs(k, std::vector<int64_t>(ds, 0));
        for (int d = 0; d < ds && q0 + d < end; ++d) {
          int64_t col = mask.col_idx[q0 + d];
          for (int kk = 0; kk < k && k0 + kk < kdim; ++kk) rhs[kk][d] = b[col * kdim + k0 + kk];
        }
        step(p, tiles, lhs_stack, rhs);
      }
      finish(p, tiles, [&](int r, int d, int64_t x) {
        if (q0 + d < end) out[mask.value_index(q0 + d, r)] = x;
      });
    }
  }
  return out;
}

}  // namespace magicube
