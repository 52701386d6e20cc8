// The IR: one value type, OpSpec, that describes one quantized sparse op.
//
// Text form (canonical; parse(print(x)) == x):
//   <op>.<lhs>x<rhs>.v<V>[.n<BSn>[k2|r|d[w<warps>][p<rows>|s]]][.<pf|pf2|pf3|pf4|nopf>].<out>[+t|+rc][+rowbias|+colbias].<arch>
//   (a missing tile or prefetch field leaves those knobs to the dispatch: OpSpec::pinned)
//   e.g. spmm.s8xu4.v8.n64.pf.i32.sm_90, spmm.s8xs8.v8.n128.pf3.i32.sm_90,
//        sddmm.s8xs8.v8.n64.nopf.f16+rc.sm_90
#pragma once

#include <cstdint>
#include <string>

#include "llvm/Support/Error.h"
#include "llvm/Support/JSON.h"

namespace magicube {

enum class OpKind { SpMM, SDDMM };

// Bits of OpSpec::pinned.
enum : uint8_t { kPinBsn = 1, kPinPrefetch = 2, kPinSplit = 4, kPinResident = 8, kPinTile = 13, kPinAll = 15 };

// An integer element type of 1..16 bits, signed (two's complement) or unsigned.
struct ElemType {
  int bits = 8;
  bool is_signed = true;

  int64_t min_value() const { return is_signed ? -(int64_t{1} << (bits - 1)) : 0; }
  int64_t max_value() const {
    return is_signed ? (int64_t{1} << (bits - 1)) - 1 : (int64_t{1} << bits) - 1;
  }
  bool contains(int64_t x) const { return x >= min_value() && x <= max_value(); }
  std::string str() const;  // "s8", "u4"
  friend bool operator==(const ElemType &, const ElemType &) = default;
};

// Output element type. int32 is exact up to the plan's max_exact_k; int64 adds the chunk
// terms in 64 bits; the float types dequantize the exact int64 result in the epilogue.
enum class OutType { Int32, Int64, F32, F16, BF16 };
inline bool is_float(OutType t) { return t == OutType::F32 || t == OutType::F16 || t == OutType::BF16; }

// Dequantization scales of a float output: none (1), one per tensor, or a per-row vector
// times a per-column vector (per-channel x per-token quantization).
enum class Scale { None, Tensor, RowCol };
// Optional bias of a float SpMM output, per row or per column.
enum class Bias { None, Row, Col };

struct OpSpec {
  OpKind op = OpKind::SpMM;
  ElemType lhs{8, true};   // the sparse operand A (SpMM) / the left dense operand (SDDMM)
  ElemType rhs{8, true};   // the dense operand B
  int v = 8;               // 1-D block length (rows of a V x 1 vector): 1, 2, 4 or 8
  int bsn = 64;            // dense tile width of one thread block: 32, 64, 128 or 256 (resident: 16..128)
  bool prefetch = true;    // RHS (SpMM) / LHS (SDDMM) prefetch pipeline
  OutType out = OutType::Int32;
  int arch = 90;           // compute capability: 80, 86, 89 or 90
  Scale scale = Scale::None;  // float outputs only
  Bias bias = Bias::None;     // float SpMM outputs only
  bool c_col = false;         // SpMM: C written column-major (element (r, c) at c * M + r: the
                              // token-major Y = X W^T of a linear layer); text: out option +ccol
  int stages = 0;             // SpMM's cp.async ring depth with prefetch on: 2, 3 or 4; 0 = the
                              // deepest that fits 48 KiB of shared memory (text: pf2, pf3, pf4)
  int split = 1;              // SpMM: warp groups that share a row-block's strides, 1 or 2, each
                              // with its own ring, summed at the end (text: n256k2)
  bool resident = false;      // SpMM: each thread block keeps a K x BSn slice of B in shared memory
                              // and its warps gather rows from it for a run of row-blocks (text:
                              // n32r); BSn 16, 48 and 96 are allowed only here
  bool decode = false;        // SpMM, N <= 64 (decode): the whole N (BSn = N rounded up to 16) in one
                              // block, B resident as in `resident` (which it implies: the same B
                              // slices and bank-balanced A), each row-block's strides split over the
                              // block's warps (text: n16d; BSn 16, 32, 48 or 64; spmm-decode kernel).
                              // Pinned with kPinResident (the B-residency knob)
  int panel = 0;              // decode, integer output: B's rows a pass keeps in shared memory (a
                              // multiple of 64; 0: all K at once). The kernel runs ceil(K / panel)
                              // passes over A packed panel by panel, adding each pass into C
                              // (text: n48dp4800). Pinned with the tile (kPinResident)
  int warps = 0;              // decode: warps a block (8, 16, 20, 24 or 32; 0: the plan's choice, 16,
                              // or 8 for more than four accumulator tiles). More warps, fewer
                              // registers each: 20 hold three tiles, 24 two, 32 one (text: n16dw32;
                              // the dispatch asks 20 and 32 past N = 64). Pinned with the tile
  bool shares = false;        // decode without K panels: the kernel may also run one block an SM, each
                              // taking an equal share of all slices' strides, slice after slice (a
                              // grid of (1, SMs): runtime/kernel.h, decode_grid); the dispatch asks it
                              // where whole waves would leave SMs idle (text: n48dw20s). Pinned with
                              // the tile
  // The kernel knobs (bsn, prefetch + stages, split, resident) the caller fixed, as kPin*
  // bits; the dispatch (runtime/dispatch.h) chooses the others for the matrix and the GPU.
  // The text form omits an unpinned tile field (n..) or prefetch field (pf..):
  // "spmm.s8xs8.v8.i32.sm_90" pins nothing, "spmm.s8xs8.v8.n64.pf.i32.sm_90" every knob.
  uint8_t pinned = 15;

  friend bool operator==(const OpSpec &, const OpSpec &) = default;
};

// Names and parsers of the pieces; errors name the field, the value and what is allowed.
const char *op_name(OpKind k);
const char *out_name(OutType t);        // i32 i64 f32 f16 bf16
const char *scale_name(Scale s);        // none tensor rowcol
const char *bias_name(Bias b);          // none row col
llvm::Expected<Scale> parse_scale(llvm::StringRef s);
llvm::Expected<Bias> parse_bias(llvm::StringRef s);
std::string arch_name(int arch);        // "sm_90"
llvm::Expected<OpKind> parse_op(llvm::StringRef s);
llvm::Expected<ElemType> parse_elem(llvm::StringRef s, llvm::StringRef field);
llvm::Expected<OutType> parse_out(llvm::StringRef s);
llvm::Expected<int> parse_arch(llvm::StringRef s);

// Checks every field; the error names the field, the value and what is allowed.
llvm::Error validate(const OpSpec &spec);
// BSn widths only a resident-B (or decode) SpMM may use (16, 48, 96).
inline bool resident_only_bsn(int bsn) { return bsn == 16 || bsn == 48 || bsn == 96; }

std::string to_string(const OpSpec &spec);                  // canonical text form
// The tile field of the text form, also the kernel name's: n<BSn>[k<split>][d|r][w<warps>][p<rows>|s].
std::string tile_text(const OpSpec &spec);
llvm::Expected<OpSpec> parse_opspec(llvm::StringRef text);  // inverse of to_string, validated
llvm::json::Value to_json(const OpSpec &spec);
llvm::Expected<OpSpec> opspec_from_json(const llvm::json::Value &v);

// Stable 64-bit hash (xxHash64 of the canonical text, support/hash.h); same on every platform and run.
uint64_t stable_hash(const OpSpec &spec);

}  // namespace magicube
