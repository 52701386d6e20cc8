// Sparse attention scores with SDDMM: S = Q K^T / sqrt(d), computed only at the entries of a
// 90%-sparse attention mask of 8 x 1 blocks (each group of 8 consecutive queries attends to
// the same random 10% of the keys). Q and K are quantized to int8 per token; the kernel
// computes the exact int32 dot products on the tensor cores and dequantizes them in its
// epilogue (per-row Q scale x per-column K scale, 1/sqrt(d) folded into the Q scale),
// storing fp16 scores.
//
// Every score is checked against the CPU: the exact int64 reference, dequantized and
// rounded exactly as the kernel does (runtime/epilogue.h), must equal the GPU's fp16 bits.
//
// Exit status: 0 success, or no GPU (one line "no GPU: <reason>"); 1 a mismatch or error.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <random>
#include <vector>

#include "runtime/epilogue.h"
#include "runtime/magicube.h"
#include "runtime/reference.h"

namespace {

constexpr int64_t kSeq = 1024;     // queries = keys
constexpr int64_t kHead = 64;      // head dimension: the reduction length K
constexpr int kV = 8;              // mask block: 8 queries x 1 key
constexpr double kSparsity = 0.9;  // fraction of keys each query block skips

// Symmetric per-token int8 quantization of a tokens x kHead float matrix: x[t][i] ~=
// scale[t] * q[t][i], q in [-127, 127].
void quantize(const std::vector<float> &x, std::vector<int64_t> &q, std::vector<float> &scale) {
  const int64_t tokens = int64_t(x.size()) / kHead;
  q.assign(x.size(), 0);
  scale.assign(tokens, 1.0f);
  for (int64_t t = 0; t < tokens; ++t) {
    float amax = 0;
    for (int64_t i = 0; i < kHead; ++i) amax = std::max(amax, std::fabs(x[t * kHead + i]));
    scale[t] = amax > 0 ? amax / 127.0f : 1.0f;
    for (int64_t i = 0; i < kHead; ++i) q[t * kHead + i] = std::lround(x[t * kHead + i] / scale[t]);
  }
}

// The attention mask: row-block b (queries 8b..8b+7) attends to round((1 - sparsity) * keys)
// distinct random keys, in increasing order.
magicube::VectorSparse attention_mask(std::mt19937_64 &rng) {
  magicube::VectorSparse m;
  m.rows = kSeq;
  m.cols = kSeq;
  m.v = kV;
  m.block_ptr = {0};
  const int64_t per = std::llround((1.0 - kSparsity) * double(kSeq));
  std::vector<int32_t> keys(kSeq);
  for (int64_t j = 0; j < kSeq; ++j) keys[j] = int32_t(j);
  for (int64_t b = 0; b < kSeq / kV; ++b) {
    std::shuffle(keys.begin(), keys.end(), rng);
    std::vector<int32_t> pick(keys.begin(), keys.begin() + per);
    std::sort(pick.begin(), pick.end());
    for (int32_t c : pick) {
      m.col.push_back(c);
      for (int r = 0; r < kV; ++r) m.values.push_back(1);  // values of a mask are ignored
    }
    m.block_ptr.push_back(int64_t(m.col.size()));
  }
  return m;
}

}  // namespace

int main() {
  std::mt19937_64 rng(2024);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<float> qf(kSeq * kHead), kf(kSeq * kHead);
  for (float &x : qf) x = normal(rng);
  for (float &x : kf) x = normal(rng);
  std::vector<int64_t> q, k;
  std::vector<float> q_scale, k_scale;
  quantize(qf, q, q_scale);
  quantize(kf, k, k_scale);
  magicube::VectorSparse mask = attention_mask(rng);

  // SDDMM's operands: A = Q (seq x d, row-major); B = K^T (d x seq), column-major, which is
  // K itself, row-major. The epilogue: score = acc * (q_scale[i] / sqrt(d)) * k_scale[j].
  magicube::EpilogueArgs epi;
  for (float s : q_scale) epi.row_scale.push_back(s / std::sqrt(float(kHead)));
  epi.col_scale = k_scale;

  try {
    magicube::OpSpec spec = magicube::parse_spec("sddmm.s8xs8.v8.n64.pf.f16+rc.sm_80");
    spec.arch = magicube::device_arch();  // the GPU's own (throws NoGpu without one)
    magicube::Sddmm op(spec);
    // One fp16 score per (vector, row), BCRS order: vector i, query row r at i * 8 + r.
    std::vector<int64_t> scores = op.multiply(mask, q, k, kHead, magicube::SparseLayout::Bcrs, epi);

    std::vector<int64_t> exact = magicube::reference_sddmm(mask, q, k, kHead);
    int64_t checked = 0, differ = 0;
    std::printf("%s: %lld x %lld scores at %lld mask vectors (%.0f%% sparse), head dim %lld, kernel %s\n",
                magicube::to_string(op.spec()).c_str(), (long long)kSeq, (long long)kSeq,
                (long long)mask.num_vectors(), kSparsity * 100, (long long)kHead, op.kernel_name().c_str());
    for (int64_t blk = 0; blk < mask.num_blocks(); ++blk)
      for (int64_t i = mask.block_ptr[blk]; i < mask.block_ptr[blk + 1]; ++i)
        for (int r = 0; r < kV; ++r) {
          const int64_t row = blk * kV + r, col = mask.col[i];
          const double x = magicube::dequantize(op.spec(), exact[i * kV + r], epi, row, col);
          const int64_t want = magicube::f16_bits(x), got = scores[i * kV + r];
          ++checked;
          differ += got != want;
          // Show a few: query 0's first three keys and the last query's first two.
          const int64_t nth = i - mask.block_ptr[blk];
          if ((row == 0 && nth < 3) || (row == kSeq - 1 && nth < 2)) {
            double fp32 = 0;  // the unquantized score, for comparison
            for (int64_t t = 0; t < kHead; ++t) fp32 += double(qf[row * kHead + t]) * kf[col * kHead + t];
            fp32 /= std::sqrt(double(kHead));
            std::printf("  score[query %4lld, key %4lld] = %+.5f  (CPU reference %+.5f, unquantized %+.5f)\n",
                        (long long)row, (long long)col, magicube::stored_value(op.spec().out, got),
                        magicube::f16_value(uint16_t(want)), fp32);
          }
        }
    if (differ) {
      std::printf("mismatch: %lld of %lld fp16 scores differ from the CPU reference\n", (long long)differ,
                  (long long)checked);
      return 1;
    }
    std::printf("exact: all %lld fp16 scores equal the CPU reference bit for bit\n", (long long)checked);
    return 0;
  } catch (const magicube::Error &e) {
    if (e.kind() == magicube::Error::Kind::NoGpu) {
      std::printf("%s\n", e.what());  // "no GPU: <reason>"
      return 0;
    }
    std::fprintf(stderr, "error (%s): %s\n", magicube::Error::kind_name(e.kind()), e.what());
    return 1;
  }
}
