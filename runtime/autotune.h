// The autotuner: for one op and one matrix, times every candidate kernel on the GPU (each
// plan of plan_candidates x every value of every tuning knob: BSn, prefetch, ...), picks the
// fastest and stores the choice on disk, so that another process reuses it without timing.
//
//   Candidate   a plan of plan_candidates (mma shape, width, orientation) + the knobs
//   Signature   what the choice depends on: exact M, K, N, V and bucketed row-block length
//               statistics, so that near-identical matrices share one record
//   TuneKey     op (its spec with every knob at its default) + GPU name + signature +
//               generator version
//   TuneStore   one JSON file per key in <cache dir>/tuning/, written atomically, holding
//               the choice and the timing of every candidate; a corrupt file is a miss
//               with a warning
//
// Usage:
//   auto r = tune_spmm(ctx, spec, a, n, {});                 // times; stores the record
//   // no timing, in any process: runtime/dispatch.h's dispatch() finds the stored choice
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "compiler/plan.h"
#include "llvm/Support/Error.h"
#include "llvm/Support/JSON.h"
#include "runtime/cuda_driver.h"
#include "runtime/kernel.h"
#include "runtime/vector_sparse.h"

namespace magicube {

// ---- knobs and candidates ----------------------------------------------------------------

// The kernel knobs a candidate sets on top of its plan, one field per knob. A knob that
// codegen gains (warps, stages, split-K) is one more field here plus one row in
// knob_table(); enumeration, keys, JSON records, printing and run flags follow the table.
struct Knobs {
  int bsn = 64;      // OpSpec::bsn: dense tile width of one thread block
  int prefetch = 1;  // OpSpec::prefetch and ::stages: 0 off, 1 on (automatic depth), 2..4 ring depth
  int split = 1;     // OpSpec::split: SpMM warp groups sharing a row-block's strides, 1 or 2
  int decode = 0;    // OpSpec::decode: SpMM's decode kernel (N <= 64), 0 or 1
  int resident = 0;  // OpSpec::resident: SpMM's B slice kept in shared memory, 0 or 1
  int warps = 0;     // OpSpec::warps: the decode kernel's warps a block (0: the plan's choice)
  friend bool operator==(const Knobs &, const Knobs &) = default;
};

// One row per Knobs field.
struct KnobInfo {
  const char *name;                        // "bsn": JSON field, TuneOptions::knob_values key
  int Knobs::*field;
  std::vector<int> values;                 // tried by default
  void (*apply)(OpSpec &spec, int value);  // sets the knob on a spec
  int (*read)(const OpSpec &spec);         // the knob's value in a spec
  std::string (*flag)(int value);          // the `magicube run` flag that sets it ("" if none needed)
};
const std::vector<KnobInfo> &knob_table();

Knobs knobs_of(const OpSpec &spec);
OpSpec with_knobs(OpSpec spec, const Knobs &k);
// The knobs as JSON ({"bsn": 64, "prefetch": 1}) and back (every knob required).
llvm::json::Value to_json(const Knobs &k);
llvm::Expected<Knobs> knobs_from_json(const llvm::json::Value &v);

// Which plan of plan_candidates a candidate uses, independent of the cost order (which
// depends on the knobs): "m16n8k32.i8.dense_on_m".
std::string plan_id(const Plan &p);

struct Candidate {
  OpSpec spec;         // the base spec with `knobs` applied
  Knobs knobs;
  int plan = 0;        // index into plan_candidates(spec): `magicube run --candidate=`
  std::string plan_id; // plan_id() of that plan
  std::string str() const;        // "bsn=64 prefetch=1 plan=0 m16n8k32.i8.dense_on_m"
  std::string run_flags() const;  // "--bsn=128 --no-prefetch --candidate=1"
};

// Where tuning is: stage "compile" (done = 0 before the parallel NVRTC compiles, total
// after) or "time" (done candidates of total timed, `candidate` the last one).
struct TuneProgress {
  std::string stage;
  size_t done = 0, total = 0;
  std::string candidate;
};

struct TuneOptions {
  // Values to try per knob name (a knob not named here: its knob_table() values).
  std::map<std::string, std::vector<int>> knob_values;
  int warmup = 10;          // untimed launches before the timed ones, per candidate
  int repeat = 20;          // timed launches, each between its own pair of events; median taken
  uint64_t seed = 1;        // the random dense operand(s)
  bool verify = false;      // check every candidate's output against the CPU reference; a
                            // mismatch skips the candidate
  bool save = true;         // write the record to the store
  std::string store_dir;    // empty: TuneStore::default_path()
  int compile_threads = 0;  // parallel NVRTC compiles before timing; 0: min(16, cores)
  // The cost model prunes before anything compiles: a candidate is timed only when its plan's
  // cost (Plan::cost) is within `prune` times the cheapest plan of the same knobs (0: keep
  // all), and at most `max_candidates` of them are timed (0: no limit), those the route model
  // (runtime/policy.h, estimate_routes) puts fastest on the matrix (SDDMM: the cheapest). The
  // policy's choice (the untuned default) is always timed.
  double prune = 1.5;
  int max_candidates = 32;
  // Called from the tuning thread as it goes (may be empty).
  std::function<void(const TuneProgress &)> progress;
  // A device memset enqueued ahead of each candidate's timed launches keeps the GPU busy
  // while the host enqueues them, so host launch latency is not timed (0: none).
  size_t filler_bytes = size_t(256) << 20;
  // SpMM: also time the dense route (when it can compute the op), so that the record says
  // which route is faster for this matrix.
  bool dense = true;
  // Flush the L2 before each timed launch (a model layer's weight comes from HBM).
  bool flush_l2 = false;
  // SDDMM: the mask's SR-BCRS stride and the output layout.
  int sddmm_stride = 32;
  SparseLayout sddmm_layout = SparseLayout::Bcrs;
};

// Every candidate for `base`: each knob combination (in knob_table() order, values as given)
// x each plan of plan_candidates(spec), best plan first. The error names an unknown knob, an
// empty or invalid value list, or why the spec cannot be planned.
llvm::Expected<std::vector<Candidate>> tuning_candidates(const OpSpec &base, const TuneOptions &opts = {});

// ---- matrix signature and key ------------------------------------------------------------

struct MatrixSignature {
  // SpMM: A is m x k, B k x n. SDDMM: the mask is m x n, the reduction length k.
  int64_t m = 0, k = 0, n = 0;
  int v = 1;
  // Row-block lengths (vectors per row-block), exact; for the record, not the key.
  int64_t vectors = 0, blocks = 0;
  double mean = 0, max = 0, cv = 0;  // cv: standard deviation / mean
  // The key's buckets. The vector count enters through the mean (blocks is fixed by m, v).
  int mean_bucket = -1;  // round(4 log2 mean): quarter octaves; -1 when there is no vector
  int max_bucket = 0;    // floor(2 log2 (max / mean)): half octaves of the longest over the mean
  int cv_bucket = 0;     // floor(4 cv), at most 8
  std::string key() const;  // "m4096.k4096.n256.v8.mean25.max0.cv0"
};
MatrixSignature spmm_signature(const VectorSparse &a, int64_t n);
MatrixSignature sddmm_signature(const VectorSparse &mask, int64_t k);
llvm::json::Value to_json(const MatrixSignature &s);
llvm::Expected<MatrixSignature> signature_from_json(const llvm::json::Value &v);

struct TuneKey {
  std::string op;         // to_string of the base spec with every knob at its default
  std::string gpu;        // Context::name(), e.g. "NVIDIA H100 80GB HBM3"
  std::string signature;  // MatrixSignature::key()
  std::string generator;  // kGeneratorVersion: new codegen, new timings
  std::string str() const;        // all four, '|'-separated
  std::string file_name() const;  // "<op>.<16 hex of a hash of str()>.json"
  friend bool operator==(const TuneKey &, const TuneKey &) = default;
};
TuneKey make_tune_key(const OpSpec &base, llvm::StringRef gpu, const MatrixSignature &sig);

// ---- records and the store ---------------------------------------------------------------

struct CandidateTiming {
  Candidate candidate;
  std::string kernel;    // kernel name (empty when skipped before codegen)
  bool ok = false;
  std::string skipped;   // why, when !ok: the compile, launch or verify failure
  double median_ms = 0, min_ms = 0, max_ms = 0;
};

struct Choice {
  Candidate candidate;   // candidate.spec + candidate.plan reproduce the kernel
  double median_ms = 0;
  // SpMM: the dense route (runtime/dense_route.h) timed the same way, when it could run
  // (0: not timed); the dispatch takes it where the caller allows it and it was faster.
  double dense_ms = 0;
  const OpSpec &spec() const { return candidate.spec; }
  int plan_index() const { return candidate.plan; }
};

struct TuneRecord {
  TuneKey key;
  MatrixSignature signature;
  Choice choice;
  std::vector<CandidateTiming> timings;  // every candidate, in enumeration order
  int warmup = 0, repeat = 0;
  int64_t created = 0;                   // unix seconds
};
llvm::json::Value to_json(const TuneRecord &r);
llvm::Expected<TuneRecord> tune_record_from_json(const llvm::json::Value &v);
// A record from its file's text: refused before parsing when larger than kMaxRecordBytes or
// nested deeper than kMaxRecordDepth (the JSON parser recurses once per level), then parsed
// and read with tune_record_from_json. The error says what is wrong.
inline constexpr size_t kMaxRecordBytes = size_t(16) << 20;
inline constexpr int kMaxRecordDepth = 64;
llvm::Expected<TuneRecord> parse_tune_record(llvm::StringRef text);

class TuneStore {
 public:
  // <DiskCache::default_path()>/tuning ($MAGICUBE_CACHE_DIR, $XDG_CACHE_HOME/magicube or
  // ~/.cache/magicube). MAGICUBE_CACHE=0 does not affect it.
  static llvm::Expected<std::string> default_path();
  static llvm::Expected<TuneStore> open_default();
  // Nothing is created until the first save().
  static TuneStore open(std::string dir) { return TuneStore(std::move(dir)); }

  const std::string &path() const { return dir_; }
  std::string record_path(const TuneKey &key) const;
  // The record, or nullopt: no file, or an unreadable or corrupt one, or one for another
  // key (each logged with a warning naming the file and left in place). Records are read as
  // the kernel cache reads its entries (cache/safe_file.h): from a private directory only,
  // never through a symlink, only regular files of at most kMaxRecordBytes.
  std::optional<TuneRecord> load(const TuneKey &key) const;
  // Creates the dir (0700) if needed, writes a unique temp file in it, fsyncs and renames it
  // over the record, so readers see the old record or the new one, never a partial one.
  llvm::Error save(const TuneRecord &r) const;

 private:
  explicit TuneStore(std::string dir) : dir_(std::move(dir)) {}
  std::string dir_;
};

// ---- tuning and lookup -------------------------------------------------------------------

struct DeviceFacts;
// The candidates tune_spmm/tune_sddmm time for this matrix on `dev`: tuning_candidates pruned
// by the cost model (TuneOptions::prune, max_candidates), the policy's choice always first
// among equals. No GPU.
llvm::Expected<std::vector<Candidate>> timed_candidates(const OpSpec &base, const MatrixSignature &sig,
                                                       const DeviceFacts &dev, const TuneOptions &opts = {});

struct TuneResult : TuneRecord {
  std::string path;  // the record's file
  bool saved = false;
};

// Times every candidate of `base` (SpMM) on A (a.v must equal base.v) x a random K x n B in
// the rhs type, on `ctx`'s device, after warm-up; candidates that fail to compile, load,
// launch (or verify) are skipped with a logged warning. The error says why nothing could be
// timed, or names a bad input. A record that cannot be saved is a warning (saved = false).
llvm::Expected<TuneResult> tune_spmm(const Context &ctx, const OpSpec &base, const VectorSparse &a, int64_t n,
                                     const TuneOptions &opts = {});
// SDDMM: the sampled mask (V x 1 vectors), M x K A and K x N B random in their types.
llvm::Expected<TuneResult> tune_sddmm(const Context &ctx, const OpSpec &base, const VectorSparse &mask, int64_t k,
                                      const TuneOptions &opts = {});

// The stored choice for (base, signature, GPU), or nullopt; never times. The choice's plan
// index is re-derived from its plan id, so a record stays usable when the planner's order
// changes; a record whose plan no longer exists is a miss with a warning.
std::optional<Choice> lookup_tuned(const TuneStore &store, const OpSpec &base, const MatrixSignature &sig,
                                   llvm::StringRef gpu);
// The same in the default store (a miss when it cannot be resolved).
std::optional<Choice> lookup_tuned(const OpSpec &base, const MatrixSignature &sig, llvm::StringRef gpu);

}  // namespace magicube
