// magicube-bench, the parts that need no GPU: the options and what they expand to, the
// result rows and their CSV form, the published Magicube H100 times, geomeans, the
// summary.md text and the progress line. bench_suite.h runs the contenders on the GPU.
#pragma once

#include <cmath>
#include <cstdint>
#include <array>
#include <cstdio>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "compiler/ir.h"
#include "llvm/Support/Error.h"

namespace magicube::bench {

// ---- contenders ----------------------------------------------------------------------------

// The `contender` column of results.csv.
inline constexpr const char *kOurs = "magicube-jit";
inline constexpr const char *kCublasLtS8 = "cublaslt-s8s32";    // dense, s8 x s8 -> s32
inline constexpr const char *kCublasF16 = "cublas-f16";         // dense, f16 (f32 accumulate)
inline constexpr const char *kBellF16 = "cusparse-bell-f16";    // Blocked-ELL, smallest block accepted
inline constexpr const char *kBellS8 = "cusparse-bell-s8";      // Blocked-ELL int8
inline constexpr const char *kCsrF16 = "cusparse-csr-f16";      // scalar CSR fp16
inline constexpr const char *kMagicubePub = "magicube-h100-published";  // h100.md, not measured here
// The LLM section (source "llm") only:
inline constexpr const char *kOursSparse = "magicube-jit-sparse";  // the sparse kernel itself, whatever the route
inline constexpr const char *kCublasBf16 = "cublas-bf16";          // dense, bf16 (f32 accumulate)
inline constexpr const char *kCusparseLtS8 = "cusparselt-s8-2:4";  // cuSPARSELt 2:4 int8 (s = 0.5 only)
// The llm section's cuBLASLt s8 -> s32 restricted to the storage of our API's default call
// (B K x N row-major, C M x N row-major; A either way: the dense copy is the library's): the
// best of the same timed configurations as kCublasLtS8, not a run of its own.
inline constexpr const char *kCublasLtS8ApiStorage = "cublaslt-s8s32-api-storage";
// The same restricted to a row-major C, M x N (A and B in any storage: our dense route stores
// A and B K-contiguous itself).
inline constexpr const char *kCublasLtS8RowC = "cublaslt-s8s32-row-c";
// The llm section's paired timing of one problem: ours (the dispatch's route) and the
// kCublasLtS8 contender's winning configuration run again, alternately in one timing loop
// (bench/timing.h's sample_ms_alternating), after both chose their configurations. Both rows
// carry ours's problem (precision, V, sparsity): the pair is compared, not the rows above.
inline constexpr const char *kOursPaired = "magicube-jit-paired";
inline constexpr const char *kCublasLtS8Paired = "cublaslt-s8s32-paired";

// The vendor contenders, in table order.
const std::vector<std::string> &vendor_contenders();
// Every contender that ours is compared with, in table order (vendors, then the published
// Magicube times).
const std::vector<std::string> &compared_contenders();
// A short column title ("cuBLASLt s8").
std::string contender_title(const std::string &contender);
// Vendor rows do not depend on our precision: one vendor row serves every precision of ours
// on the same problem. The published Magicube rows are per precision.
bool is_vendor(const std::string &contender);

// ---- precisions ----------------------------------------------------------------------------

struct Precision {
  std::string name;  // "L8-R8" when both are signed (Magicube's naming), else "u8xs4"
  ElemType lhs, rhs;
};
std::string precision_name(const ElemType &lhs, const ElemType &rhs);
// "L8-R8" (signed both), "s8xu4", "u8-s4" forms; the error names the text.
llvm::Expected<Precision> parse_precision(llvm::StringRef text);

// The precisions: L8-R8, L8-R4, L4-R4, L16-R8, L16-R16, then L5-R3, L6-R6, L12-R4.
std::vector<Precision> default_spmm_precisions();
// SDDMM's: L8-R8, L4-R4, L16-R16.
std::vector<Precision> default_sddmm_precisions();

// ---- options -------------------------------------------------------------------------------

// What magicube-bench was asked for (filled from the command line by bench/bench_main.cpp).
struct BenchOptions {
  std::string out_dir = "magicube-bench";
  std::string dlmc;          // a folder tree of .smtx files or the DLMC .tar.gz; "" = look for the archive
  bool dlmc_given = false;
  int dlmc_limit = -1;       // files per sparsity (0 = all; -1: 10, or 2 with --quick)
  bool quick = false;
  std::string filter;        // precisions, comma-separated ("" = all)
  std::string vs;            // "8,4,2" ("" = default)
  std::string ns;            // "256,512" ("" = default)
  std::string sections;      // "synthetic,dlmc,sddmm,small,jit" ("" = all)
  int repeat = 20, warmup = 10;
  uint64_t seed = 1;
  std::string l2 = "warm";   // warm | flush
  bool no_vendor = false;
  bool no_plots = false;
  bool tune = false;         // autotune every problem of ours before timing it (slow)
  std::string llm_grid = "default";  // quick | default | full (the llm section)
  std::string llm_ns;                // --llm-n: the grid's N values to run ("" = all), e.g. "1,16,512"
  std::string llm_shapes;            // --llm-shapes: the grid's M x K to run ("" = all), e.g. "4096x4096"
};

// ---- the LLM section (--sections=llm) ------------------------------------------------------

enum class LlmGrid { Quick, Default, Full };
const char *to_string(LlmGrid g);
// "quick" | "default" | "full"; the error reads "llm-grid: --llm-grid=X is not allowed (...)".
llvm::Expected<LlmGrid> parse_llm_grid(llvm::StringRef text);

// One problem: pruned, quantized weights W (M x K, uniform V x 1 vector sparsity) times N
// tokens (B is K x N).
struct LlmProblem {
  int64_t m = 0, k = 0, n = 0;
  double sparsity = 0;
  int v = 8;
  Precision precision;
};
// The weight shapes (M x K) of the grid, in run order.
std::vector<std::pair<int64_t, int64_t>> llm_shapes(LlmGrid g);
// Every problem of the grid, shape-major, then N, V, precision, sparsity (the run order).
//   quick:   4096x4096 and 11008x4096; N 1, 16, 64, 512, 2048; s 0.5, 0.9; V=8; L8-R8
//   default: 6 shapes; N 1..8192 (11); s 0.5, 0.7, 0.9; V=8 at L8-R8, L4-R8, L4-R4; and
//            V=4, V=2 at L8-R8 for 4096x4096 only
//   full:    6 shapes x 11 N x 3 s x V 8, 4, 2 x L8-R8, L4-R8, L4-R4
std::vector<LlmProblem> llm_problems(LlmGrid g);
// The N values of the grid, in run order.
std::vector<int64_t> llm_ns(LlmGrid g);
// The grid's problems that the config keeps (--filter, --v, --llm-n, --llm-shapes).
struct BenchConfig;
std::vector<LlmProblem> llm_problems(const BenchConfig &c);
// The distinct (M, K, N) of the grid: the dense contenders run once each.
std::vector<std::array<int64_t, 3>> llm_dense_problems(LlmGrid g);
// Those the config's problems of ours have (--filter, --v, --llm-n, --llm-shapes): no dense
// contender runs where no problem of ours would be compared with it.
std::vector<std::array<int64_t, 3>> llm_dense_problems(const BenchConfig &c);
// The config's weight shapes (--llm-shapes), in the grid's run order.
std::vector<std::pair<int64_t, int64_t>> llm_shapes(const BenchConfig &c);
// --llm-n=1,16,512 against the grid: each value an integer among the grid's N, at least one;
// the error names the flag, the bad value and the grid's N.
llvm::Expected<std::vector<int64_t>> parse_llm_ns(llvm::StringRef text, LlmGrid g);
// --llm-shapes=4096x4096,11008x4096 (M x K) against the grid's shapes, the same way.
llvm::Expected<std::vector<std::pair<int64_t, int64_t>>> parse_llm_shapes(llvm::StringRef text, LlmGrid g);

// Whether a cuBLASLt configuration of the dense contender ("cuBLASLt A row, B row, C row (NN,
// ...), heuristic 2/8 (...)") has our API's storage: B K x N row-major and C M x N row-major.
bool has_api_storage(const std::string &dense_config);
// Whether it writes a row-major C, M x N (A and B in any storage).
bool has_row_major_c(const std::string &dense_config);
// The fastest of `timed` (configuration, ms) whose configuration passes `keep`; nullopt when
// none ran.
std::optional<std::pair<std::string, double>> best_where(const std::vector<std::pair<std::string, double>> &timed,
                                                         bool (*keep)(const std::string &));

// The llm section's cuBLASLt s8 contender restricted to a storage, as rows of their own (the
// best of the same timed configurations, not runs of their own).
struct RestrictedDense {
  const char *contender;                     // kCublasLtS8ApiStorage, kCublasLtS8RowC
  bool (*keep)(const std::string &config);  // has_api_storage, has_row_major_c
  const char *what;                          // "our API's storage"
  const char *storage;                       // "B K x N row-major, C M x N row-major"
};
const std::vector<RestrictedDense> &restricted_dense_contenders();

// Peaks the LLM section reports against, in one place.
// int8 dense tensor-core peak of the H100 SXM: 1,979 TOPS (NVIDIA H100 Tensor Core GPU
// datasheet, "INT8 Tensor Core 3,958 TOPS" with sparsity, i.e. 1,979 dense; shared/docs/h100.md
// measures 1,957-1,973 with wgmma).
inline constexpr double kH100SxmInt8DenseTops = 1979.0;
// HBM3 bandwidth of the H100 SXM: 3.35 TB/s (the same datasheet). The suite reads the
// device's memory clock x bus width instead where the device reports them.
inline constexpr double kH100SxmHbmBytesPerSecond = 3.35e12;
// Decode (N <= 64) is reported as a share of HBM bandwidth, prefill (N >= 512) as a share of
// the int8 dense peak; N in between as neither.
inline bool llm_is_decode(int64_t n) { return n <= 64; }
inline bool llm_is_prefill(int64_t n) { return n >= 512; }

// Bytes a dense int8 GEMM moves: A (M x K s8) + B (K x N s8) + C (M x N s32).
double llm_dense_bytes(int64_t m, int64_t k, int64_t n);
// Bytes our SpMM moves: the packed A values (every slot of the SR-BCRS layout, padding
// included, at the stored bits of its chunks), one column index per slot (index_bytes: int32,
// or the decode kernel's uint16), two int32 row pointers per row-block where the kernel reads
// them (the decode kernel reads its schedule from the indices instead: a few words a block),
// B (K x N at the stored rhs bits) and C (M x N of out_bytes).
struct SparseTraffic {
  int64_t slots = 0, num_blocks = 0;
  int v = 8;
  int lhs_storage_bits = 8, rhs_storage_bits = 8;
  int64_t m = 0, k = 0, n = 0;
  int out_bytes = 4;
  int index_bytes = 4;
  bool row_pointers = true;
};
double llm_sparse_bytes(const SparseTraffic &t);
// Slots of an SR-BCRS layout with `stride` slots per stride: every row-block's vector count
// (from block_ptr) rounded up to a multiple of `stride`, and to one stride at least where
// `empty_gets_a_stride` (the decode kernel's layout: runtime/packing.h).
int64_t padded_slots(const std::vector<int64_t> &block_ptr, int stride, bool empty_gets_a_stride = false);
// The same for a decode plan in K panels of `panel_rows` columns (runtime/packing.h): each
// (panel, row-block) pair's vectors (`col`: each vector's column) rounded up to whole strides,
// one stride at least, over `panels` panels.
int64_t padded_panel_slots(const std::vector<int64_t> &block_ptr, const std::vector<int32_t> &col, int64_t panel_rows,
                           int64_t panels, int stride);
// Percent of `peak_bytes_per_s` that `bytes` in `ms` is; of kH100SxmInt8DenseTops that
// `tops` is. NaN when ms or tops is not positive and finite.
double percent_of_bandwidth(double bytes, double ms, double peak_bytes_per_s);
double percent_of_int8_peak(double tops);

// The options expanded into what runs.
struct BenchConfig {
  std::vector<Precision> spmm_precisions, sddmm_precisions;
  std::vector<int> vs;
  std::vector<int64_t> ns;
  std::vector<double> sparsities;        // synthetic SpMM and SDDMM masks
  int64_t m = 4096, k = 4096;            // synthetic SpMM
  std::vector<int64_t> sddmm_ks;         // SDDMM reduction lengths
  int64_t sddmm_m = 4096, sddmm_n = 4096;
  std::vector<int> sddmm_vs;             // SDDMM mask V: the --v list; V != 8 only at the sparsities
                                         // Magicube published (its V=8 times are the yardstick)
  std::vector<double> small_sparsities;  // the small problem: M=256 K=2304 N=256, V=8
  int64_t small_m = 256, small_k = 2304, small_n = 256;
  std::vector<int> dlmc_vs;
  std::vector<int64_t> dlmc_ns;
  int dlmc_limit = 10;
  bool synthetic = true, dlmc = true, sddmm = true, small = true, jit = true;
  bool llm = false;  // only when --sections names it
  bool chain = false;  // decode chains of the llm grid's problems (N 1 and 16 unless --llm-n): only when named
  LlmGrid llm_grid = LlmGrid::Default;
  // The llm grid's problems kept: precision names and V, from --filter and --v when given
  // (empty: all of the grid's).
  std::vector<std::string> llm_precisions;
  std::vector<int> llm_vs;
  // ... and N and weight shapes, from --llm-n and --llm-shapes (empty: all of the grid's).
  std::vector<int64_t> llm_ns;
  std::vector<std::pair<int64_t, int64_t>> llm_shapes;
  // Whether any of the four narrowed the grid (the summary says "of the grid's").
  bool llm_filtered() const { return !llm_precisions.empty() || !llm_vs.empty() || !llm_ns.empty() || !llm_shapes.empty(); }
  bool vendors = true;
  int repeat = 20, warmup = 10;
  bool flush_l2 = false;
  uint64_t seed = 1;
  bool tune = false;
};

// Checks the options and expands them (--quick, --filter, lists, --sections); the error
// names the flag and the bad value.
llvm::Expected<BenchConfig> make_config(const BenchOptions &o);

llvm::Expected<std::vector<int64_t>> parse_int_list(llvm::StringRef text, llvm::StringRef flag);

// ---- results -------------------------------------------------------------------------------

inline constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// One row of results.csv: one contender on one problem.
struct ResultRow {
  std::string source;     // synthetic | dlmc | small
  std::string matrix;     // "uniform-M4096-K4096-s0.9", "rn50/magnitude_pruning/0.9/<layer>"
  std::string op;         // spmm | sddmm
  std::string precision;  // ours and published: "L8-R8"; vendors: their types ("s8->s32", "f16")
  std::string contender;  // kOurs, kCublasLtS8, ...
  int v = 8;
  int64_t m = 0, k = 0, n = 0;  // SpMM: A is M x K, B K x N. SDDMM: output M x N, reduction K
  double sparsity = 0;          // nominal: the synthetic one, or the DLMC folder's
  int64_t nnz_vectors = 0;      // V x 1 vectors of A (SpMM) or of the mask (SDDMM)
  double ms = kNaN;             // median
  double tops = kNaN;           // effective: 2 * nnz_vectors * V * (SpMM: N, SDDMM: K) / time
  std::string status;           // ok | unsupported | error | published
  std::string exact;            // ours: "yes", "yes (sample ...)" or "NO: ..."; else ""
  std::string out;              // ours: i32 | i64; vendors: their output type
  std::string config;           // ours: the op spec and kernel; vendors: the winning configuration
  std::string note;             // why unsupported / the error
  double bytes = kNaN;          // llm: bytes the call moves (not a CSV column; also in `config`)

  bool ok() const { return (status == "ok" || status == "published") && std::isfinite(ms) && ms > 0; }
  bool mismatch() const { return exact.rfind("NO", 0) == 0; }
  // The problem, without the precision and contender: the rows that are compared.
  std::string problem_key() const;
};

// 2 * nnz * V * len / ms, in TOPS (NaN when ms is not positive).
double effective_tops(int64_t nnz_vectors, int v, int64_t len, double ms);

// RFC 4180: quoted when it holds a comma, a quote, CR, LF or leading/trailing space; quotes
// doubled.
std::string csv_field(const std::string &s);
std::string csv_header();
std::string csv_line(const ResultRow &r);  // with the trailing "\n"
llvm::Error write_text_file(const std::string &path, const std::string &text);
llvm::Error write_csv(const std::string &path, const std::vector<ResultRow> &rows);
// Parses what csv_line writes (for tests and tools); the error names the line.
llvm::Expected<std::vector<std::vector<std::string>>> parse_csv(llvm::StringRef text);

// ---- the published Magicube kernels on the H100 ---------------------------------------------

struct MagicubeTime {
  const char *op;         // "spmm" | "sddmm"
  const char *precision;  // "L8-R8", ...
  double sparsity;
  int64_t n_or_k;         // SpMM: N; SDDMM: K
  double ms;
};
// The table of ../shared/docs/h100.md ("The published Magicube kernels on the same GPU"):
// V=8, uniformly random vector sparsity, SpMM M=K=4096, SDDMM M=N=4096 output.
const std::vector<MagicubeTime> &magicube_h100_times();
// Its time for (op, precision, sparsity, N or K); nullopt where h100.md has none.
std::optional<double> magicube_h100_ms(llvm::StringRef op, llvm::StringRef precision, double sparsity,
                                       int64_t n_or_k);

// ---- summary -------------------------------------------------------------------------------

// Geometric mean of positive finite values (others skipped); NaN when none.
double geomean(const std::vector<double> &xs);

// The JIT cost measurements (NaN: not measured; `notes` say why).
struct JitCosts {
  std::string variant_first, variant_cold;  // op specs
  double codegen_ms = kNaN;                 // plan -> CUDA source
  double nvrtc_first_ms = kNaN;             // first NVRTC compile in the process (start-up included)
  double nvrtc_again_ms = kNaN;             // the same source again, right after (NVRTC may cache it)
  double nvrtc_second_ms = kNaN;            // the same kernel under a new name: cold, after start-up
  double ptx_first_ms = kNaN;               // first PTX compile (nvJitLink) in the process, start-up included
  double cold_ms = kNaN;                    // median over the variants' cold-compile medians
  // Per variant (SpMM and SDDMM, L8-R8 and L4-R4, V=8): the median of a few cold compiles of
  // the kernel the library runs (PTX through nvJitLink, or CUDA through NVRTC), labelled with its language.
  std::vector<std::pair<std::string, double>> cold_each;
  // The same plans' CUDA kernels through NVRTC (MAGICUBE_PTX=0), for comparison.
  double cuda_cold_ms = kNaN;
  std::vector<std::pair<std::string, double>> cuda_cold_each;
  double nvrtc_fast_cold_ms = kNaN;         // the same with --Ofast-compile=min (opt-in), median
  double nvrtc_mid_cold_ms = kNaN;          // and with --Ofast-compile=mid
  double batch_per_variant_ms = kNaN;       // wall time of a parallel batch / its variants
  int batch_count = 0, batch_threads = 0;
  // First use from an AOT bundle (a fresh compile cache): open + verify, find, module load.
  double bundle_first_ms = kNaN, bundle_hit_ms = kNaN;  // first rep; median total
  double bundle_open_ms = kNaN, bundle_find_ms = kNaN, bundle_load_ms = kNaN;  // medians
  double bundle_kb = kNaN;
  int bundle_entries = 0;
  double cubin_kb = kNaN;
  double disk_read_ms = kNaN;        // DiskCache::load of the entry (read + SHA-256 check)
  double module_load_first_ms = kNaN;  // cuModuleLoadData + cuModuleGetFunction, first in the process
  double module_load_ms = kNaN;      // the same, median of later loads
  double disk_hit_ms = kNaN;         // read + module load (median)
  std::string launch_problem;        // what the launch costs were measured on
  double get_launch_us = kNaN;       // Kernel::get (memory-cache hit) + Kernel::launch, host us per call
  double launch_us = kNaN;           // Kernel::launch alone
  double bare_launch_us = kNaN;      // cuLaunchKernel of the same CUfunction and arguments
  double kernel_us = kNaN;           // the kernel's own time (events), for scale
  double empty_kernel_us = kNaN;     // an empty kernel's time, the same timing: the floor
  double empty_compile_ms = kNaN;    // NVRTC of that empty kernel: the fixed cost of any compile
  std::vector<std::string> notes;
};

// Facts about the run for the summary header.
struct RunInfo {
  std::string gpu, driver, cuda_runtime, nvrtc, libraries, date, command, timing, dlmc;
  std::vector<std::string> notes;
  // The llm section: the HBM peak used and where it came from.
  double hbm_bytes_per_s = kH100SxmHbmBytesPerSecond;
  std::string hbm_source = "H100 SXM datasheet, 3.35 TB/s";
  std::string llm;  // what the llm section ran ("" = not run)
};

// summary.md: header, mismatches (loudly), the targets, the table against the published
// Magicube times, geomean speedups per precision x V x sparsity against each contender,
// JIT costs, errors.
std::string summary_markdown(const RunInfo &info, const std::vector<ResultRow> &rows, const JitCosts &jit);

// The "## LLM shapes" section from the rows of source "llm" ("" when there are none): one
// table per precision and V (rows: shape x N; per sparsity ours ms, x dense cuBLASLt int8 and
// % of peak; the sparse kernel's ms; dense int8, bf16 and cuSPARSELt ms), the line "never
// slower than dense: X of Y problems (worst: ...)" and "bit-exact: X of Y".
std::string llm_markdown(const RunInfo &info, const std::vector<ResultRow> &rows);
// The "## Decode chains" section from the rows of source "chain" ("" when there are none).
std::string chain_markdown(const RunInfo &info, const std::vector<ResultRow> &rows);

// The published Magicube rows of results.csv that fit the measured synthetic problems of
// ours (V=8, M=K=4096 SpMM; M=N=4096 SDDMM): one per (problem, precision).
std::vector<ResultRow> published_rows(const std::vector<ResultRow> &rows);

// ---- progress ------------------------------------------------------------------------------

// One line on stderr updated in place with '\r' when it is a terminal; otherwise a plain line
// when the section changes and at most every few seconds.
class Progress {
 public:
  Progress(FILE *out, bool tty);
  static Progress for_stderr();
  void set_total(int64_t total) { total_ = total; }
  void add_total(int64_t more) { total_ += more; }
  // Starts step `what` of `section`; the count goes up when the next one starts or on done().
  void step(const std::string &section, const std::string &what);
  void done();                          // ends the line
  void message(const std::string &m);   // a line of its own, not overwritten
  int64_t count() const { return count_; }
  // The text of the line (for tests): "[####....]  12/345   3% 0:12 eta 1:23 section: what".
  static std::string format_line(int64_t count, int64_t total, double elapsed_s, const std::string &section,
                                 const std::string &what, int width);

 private:
  FILE *out_;
  bool tty_;
  int64_t count_ = 0, total_ = 0;
  std::string section_;
  double start_ = 0, last_plain_ = -1e9;
  bool open_line_ = false;
  double now() const;
};

}  // namespace magicube::bench
