#include "runtime/autotune.h"
#include "runtime/dense_gemm.h"
#include "runtime/dense_route.h"
#include "runtime/dispatch.h"
#include "runtime/pipeline.h"
#include "runtime/timing.h"

#include <algorithm>
#include <cmath>
#include <ctime>
#include <functional>
#include <random>
#include <set>
#include <tuple>

#include <fmt/format.h>

#include "cache/disk_cache.h"
#include "cache/safe_file.h"
#include "compiler/codegen.h"
#include "compiler/launch.h"
#include "compiler/planner.h"
#include "support/text.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "runtime/epilogue.h"
#include "runtime/packing.h"
#include "runtime/reference.h"
#include "support/atomic_file.h"
#include "support/field_count.h"
#include "support/hash.h"
#include "support/log.h"
#include "support/parallel.h"

namespace magicube {

namespace {

llvm::Error err(const llvm::Twine &msg) { return llvm::createStringError(llvm::inconvertibleErrorCode(), msg); }

constexpr const char *kRecordFormat = "magicube-tuning-1";

// ---- JSON field readers: the error names the field ----
llvm::Expected<const llvm::json::Object *> object(const llvm::json::Value &v, llvm::StringRef what) {
  const llvm::json::Object *o = v.getAsObject();
  if (!o) return err(what + ": expected an object");
  return o;
}
llvm::Expected<std::string> str_field(const llvm::json::Object &o, llvm::StringRef name, llvm::StringRef what) {
  auto s = o.getString(name);
  if (!s) return err(what + ": missing string field '" + name + "'");
  return s->str();
}
llvm::Expected<int64_t> int_field(const llvm::json::Object &o, llvm::StringRef name, llvm::StringRef what) {
  auto i = o.getInteger(name);
  if (!i) return err(what + ": missing integer field '" + name + "'");
  return *i;
}
llvm::Expected<double> num_field(const llvm::json::Object &o, llvm::StringRef name, llvm::StringRef what) {
  auto d = o.getNumber(name);
  if (!d) return err(what + ": missing number field '" + name + "'");
  return *d;
}
llvm::Expected<bool> bool_field(const llvm::json::Object &o, llvm::StringRef name, llvm::StringRef what) {
  auto b = o.getBoolean(name);
  if (!b) return err(what + ": missing boolean field '" + name + "'");
  return *b;
}
llvm::Expected<const llvm::json::Value *> field(const llvm::json::Object &o, llvm::StringRef name,
                                                llvm::StringRef what) {
  const llvm::json::Value *v = o.get(name);
  if (!v) return err(what + ": missing field '" + name + "'");
  return v;
}

}  // namespace

// ---- knobs and candidates ----------------------------------------------------------------

const std::vector<KnobInfo> &knob_table() {
  static_assert(field_count<Knobs>() == 6, "a Knobs field was added: give it a row here");
  static const std::vector<KnobInfo> table = {
      // 16 and 48 are resident-B (and decode) widths only (three mma tiles per stride; other kernels skip it)
      {"bsn", &Knobs::bsn, {16, 32, 48, 64, 128, 256}, [](OpSpec &s, int v) { s.bsn = v; },
       [](const OpSpec &s) { return s.bsn; }, [](int v) { return "--bsn=" + std::to_string(v); }},
      // 0: off; 1: on, automatic ring depth; 2..4: SpMM's cp.async ring depth (SDDMM: on)
      {"prefetch", &Knobs::prefetch, {4, 3, 2, 0},
       [](OpSpec &s, int v) {
         s.prefetch = v != 0;
         s.stages = v >= 2 && s.op == OpKind::SpMM ? v : 0;
       },
       [](const OpSpec &s) { return s.prefetch ? (s.stages ? s.stages : 1) : 0; },
       [](int v) {
         return v == 0 ? std::string("--no-prefetch") : v == 1 ? std::string() : "--stages=" + std::to_string(v);
       }},
      // SpMM only (SDDMM keeps 1); plans without the int8 m16n8k32 kernel refuse 2 and are skipped
      {"split", &Knobs::split, {1, 2}, [](OpSpec &s, int v) { s.split = s.op == OpKind::SpMM ? v : 1; },
       [](const OpSpec &s) { return s.split; },
       [](int v) { return v == 1 ? std::string() : "--split=" + std::to_string(v); }},
      // SpMM's resident-B kernel (0 or 1); combinations it cannot build (split 2, BSn 256, no
      // prefetch, plans other than int8 m16n8k32) are skipped, and a launch that needs more
      // shared memory than a block has (K x BSn too large) is skipped with its reason
      {"resident", &Knobs::resident, {0, 1}, [](OpSpec &s, int v) { s.resident = s.op == OpKind::SpMM && v; },
       [](const OpSpec &s) { return int(s.resident); },
       [](int v) { return v ? std::string("--resident") : std::string(); }},
      // SpMM's decode kernel (0 or 1): a resident-B layout, so it is tried with resident 1
      // (resident 0 and decode 1 is the plain spec again, tried once); BSn 16..64 only,
      // split 1, prefetch on; the launch skips it, with its reason, when K x BSn does not fit
      {"decode", &Knobs::decode, {0, 1},
       [](OpSpec &s, int v) { s.decode = s.op == OpKind::SpMM && v && s.resident; },
       [](const OpSpec &s) { return int(s.decode); },
       [](int v) { return v ? std::string("--decode") : std::string(); }},
      // The decode kernel's warps a block (0: the plan's 16; 20, 24, 32 where their registers hold
      // its 3, 2, 1 accumulator tiles: the planner refuses the rest, skipped); decode specs only
      {"warps", &Knobs::warps, {0, 20, 24, 32}, [](OpSpec &s, int v) { s.warps = s.decode ? v : 0; },
       [](const OpSpec &s) { return s.warps; },
       [](int v) { return v ? "--warps=" + std::to_string(v) : std::string(); }},
  };
  return table;
}

Knobs knobs_of(const OpSpec &spec) {
  Knobs k;
  for (const KnobInfo &i : knob_table()) k.*i.field = i.read(spec);
  return k;
}

OpSpec with_knobs(OpSpec spec, const Knobs &k) {
  for (const KnobInfo &i : knob_table()) i.apply(spec, k.*i.field);
  spec.pinned = kPinAll;  // a candidate's spec fixes every knob
  return spec;
}

llvm::json::Value to_json(const Knobs &k) {
  llvm::json::Object o;
  for (const KnobInfo &i : knob_table()) o[i.name] = k.*i.field;
  return o;
}

llvm::Expected<Knobs> knobs_from_json(const llvm::json::Value &v) {
  auto o = object(v, "knobs");
  if (!o) return o.takeError();
  Knobs k;
  for (const KnobInfo &i : knob_table()) {
    static const std::set<std::string> later = {"resident", "decode", "warps"};  // knobs added after the first records
    if (later.count(i.name) && !(*o)->get(i.name)) continue;  // a record older than the knob: its default
    auto x = int_field(**o, i.name, "knobs");
    if (!x) return x.takeError();
    k.*i.field = int(*x);
  }
  return k;
}

std::string plan_id(const Plan &p) {
  return p.shape.str() + ".i" + std::to_string(p.native_bits) + "." + orientation_name(p.orient);
}

std::string Candidate::str() const {
  std::string s;
  for (const KnobInfo &i : knob_table()) s += std::string(i.name) + "=" + std::to_string(knobs.*i.field) + " ";
  return s + "plan=" + std::to_string(plan) + " " + plan_id;
}

std::string Candidate::run_flags() const {
  std::string s;
  for (const KnobInfo &i : knob_table()) {
    std::string f = i.flag(knobs.*i.field);
    if (!f.empty()) s += f + " ";
  }
  return s + "--candidate=" + std::to_string(plan);
}

namespace {

struct Enumerated {
  Candidate candidate;
  Plan plan;
};

llvm::Expected<std::vector<Enumerated>> enumerate(const OpSpec &base, const TuneOptions &opts) {
  const auto &table = knob_table();
  for (const auto &[name, values] : opts.knob_values) {
    const std::string &knob = name;  // a lambda may not capture a structured binding before C++20 (the fuzz build)
    bool known = std::any_of(table.begin(), table.end(), [&](const KnobInfo &i) { return knob == i.name; });
    if (!known) {
      std::string names;
      for (const KnobInfo &i : table) names += std::string(names.empty() ? "" : ", ") + i.name;
      return err("tune: unknown knob '" + name + "' (knobs: " + names + ")");
    }
  }
  // The values of each knob, duplicates dropped, order kept.
  std::vector<std::vector<int>> values;
  for (const KnobInfo &i : table) {
    auto it = opts.knob_values.find(i.name);
    const std::vector<int> &given = it == opts.knob_values.end() ? i.values : it->second;
    std::vector<int> vs;
    for (int x : given)
      if (std::find(vs.begin(), vs.end(), x) == vs.end()) vs.push_back(x);
    if (vs.empty()) return err("tune: knob '" + llvm::Twine(i.name) + "' has no value to try");
    values.push_back(std::move(vs));
  }
  std::vector<Enumerated> out;
  std::vector<size_t> at(table.size(), 0);  // odometer, the first knob slowest
  for (;;) {
    Knobs k;
    for (size_t i = 0; i < table.size(); ++i) k.*table[i].field = values[i][at[i]];
    OpSpec spec = with_knobs(base, k);
    llvm::Error invalid = validate(spec);
    if (invalid && !spec.resident && !resident_only_bsn(spec.bsn)) return invalid;
    if (invalid) {
      // resident B with split 2, BSn 256 or no prefetch; a resident-only BSn without it
      llvm::consumeError(std::move(invalid));
    } else {
      k = knobs_of(spec);  // as the spec holds them (SDDMM: prefetch 1 for any depth)
      auto plans = plan_candidates(spec);
      if (!plans && (spec.split > 1 || spec.resident)) {
        // no plan's kernel can build these knobs (e.g. two rings that do not fit): skip them
        llvm::consumeError(plans.takeError());
        plans = std::vector<Plan>{};
      }
      if (!plans) return plans.takeError();
      // Knob values that give an op the same spec (SDDMM has no ring depth) are tried once.
      const bool seen =
          std::any_of(out.begin(), out.end(), [&](const Enumerated &x) { return x.candidate.spec == spec; });
      for (size_t p = 0; !seen && p < plans->size(); ++p) {
        Enumerated e{{spec, k, int(p), plan_id((*plans)[p])}, std::move((*plans)[p])};
        out.push_back(std::move(e));
      }
    }
    size_t i = table.size();
    while (i > 0 && ++at[i - 1] == values[i - 1].size()) at[--i] = 0;
    if (i == 0) break;
  }
  return out;
}

}  // namespace

llvm::Expected<std::vector<Candidate>> tuning_candidates(const OpSpec &base, const TuneOptions &opts) {
  auto e = enumerate(base, opts);
  if (!e) return e.takeError();
  std::vector<Candidate> out;
  for (Enumerated &x : *e) out.push_back(std::move(x.candidate));
  return out;
}

// ---- matrix signature and key ------------------------------------------------------------

namespace {
MatrixSignature signature(const VectorSparse &a, int64_t m, int64_t k, int64_t n) {
  MatrixSignature s;
  s.m = m;
  s.k = k;
  s.n = n;
  s.v = a.v;
  s.vectors = a.num_vectors();
  s.blocks = std::max<int64_t>(0, a.num_blocks());
  if (s.blocks > 0) {
    s.mean = double(s.vectors) / double(s.blocks);
    double ss = 0;
    int64_t longest = 0;
    for (int64_t b = 0; b < s.blocks; ++b) {
      int64_t len = a.block_ptr[b + 1] - a.block_ptr[b];
      longest = std::max(longest, len);
      ss += (double(len) - s.mean) * (double(len) - s.mean);
    }
    s.max = double(longest);
    s.cv = s.mean > 0 ? std::sqrt(ss / double(s.blocks)) / s.mean : 0.0;
  }
  if (s.vectors > 0) {
    s.mean_bucket = int(std::lround(4.0 * std::log2(s.mean)));
    s.max_bucket = int(std::floor(2.0 * std::log2(s.max / s.mean) + 1e-9));
  }
  s.cv_bucket = std::min(8, int(std::floor(4.0 * s.cv + 1e-9)));
  return s;
}
}  // namespace

std::string MatrixSignature::key() const {
  return fmt::format("m{}.k{}.n{}.v{}.mean{}.max{}.cv{}", m, k, n, v, mean_bucket, max_bucket, cv_bucket);
}

MatrixSignature spmm_signature(const VectorSparse &a, int64_t n) { return signature(a, a.rows, a.cols, n); }
MatrixSignature sddmm_signature(const VectorSparse &mask, int64_t k) {
  return signature(mask, mask.rows, k, mask.cols);
}

llvm::json::Value to_json(const MatrixSignature &s) {
  static_assert(field_count<MatrixSignature>() == 12, "a MatrixSignature field was added: write it here and read it below");
  return llvm::json::Object{{"m", s.m},           {"k", s.k},
                            {"n", s.n},           {"v", s.v},
                            {"vectors", s.vectors}, {"blocks", s.blocks},
                            {"mean", s.mean},     {"max", s.max},
                            {"cv", s.cv},         {"mean_bucket", s.mean_bucket},
                            {"max_bucket", s.max_bucket}, {"cv_bucket", s.cv_bucket},
                            {"key", s.key()}};
}

llvm::Expected<MatrixSignature> signature_from_json(const llvm::json::Value &v) {
  auto o = object(v, "signature");
  if (!o) return o.takeError();
  MatrixSignature s;
  for (auto [name, dst] : {std::pair{"m", &s.m}, {"k", &s.k}, {"n", &s.n}, {"vectors", &s.vectors},
                           {"blocks", &s.blocks}}) {
    auto x = int_field(**o, name, "signature");
    if (!x) return x.takeError();
    *dst = *x;
  }
  for (auto [name, dst] : {std::pair{"v", &s.v}, {"mean_bucket", &s.mean_bucket}, {"max_bucket", &s.max_bucket},
                           {"cv_bucket", &s.cv_bucket}}) {
    auto x = int_field(**o, name, "signature");
    if (!x) return x.takeError();
    *dst = int(*x);
  }
  for (auto [name, dst] : {std::pair{"mean", &s.mean}, {"max", &s.max}, {"cv", &s.cv}}) {
    auto x = num_field(**o, name, "signature");
    if (!x) return x.takeError();
    *dst = *x;
  }
  return s;
}

std::string TuneKey::str() const { return op + "|" + gpu + "|" + signature + "|" + generator; }

std::string TuneKey::file_name() const { return op + "." + fmt::format("{:016x}", hash64(str())) + ".json"; }

TuneKey make_tune_key(const OpSpec &base, llvm::StringRef gpu, const MatrixSignature &sig) {
  return TuneKey{to_string(with_knobs(base, Knobs{})), gpu.str(), sig.key(), kGeneratorVersion};
}

// ---- records -----------------------------------------------------------------------------

namespace {

llvm::json::Object candidate_json(const Candidate &c) {
  return llvm::json::Object{{"spec", to_string(c.spec)},
                            {"knobs", to_json(c.knobs)},
                            {"plan", c.plan},
                            {"plan_id", c.plan_id},
                            {"run_flags", c.run_flags()}};  // for readers; not read back
}

llvm::Expected<Candidate> candidate_from_json(const llvm::json::Object &o, llvm::StringRef what) {
  Candidate c;
  auto spec_text = str_field(o, "spec", what);
  if (!spec_text) return spec_text.takeError();
  auto spec = parse_opspec(*spec_text);
  if (!spec) return err(what + ": spec: " + llvm::toString(spec.takeError()));
  auto kv = field(o, "knobs", what);
  if (!kv) return kv.takeError();
  auto knobs = knobs_from_json(**kv);
  if (!knobs) return knobs.takeError();
  if (!(knobs_of(*spec) == *knobs)) return err(what + ": knobs do not match the spec " + *spec_text);
  auto plan = int_field(o, "plan", what);
  if (!plan) return plan.takeError();
  auto id = str_field(o, "plan_id", what);
  if (!id) return id.takeError();
  c.spec = *spec;
  c.knobs = *knobs;
  c.plan = int(*plan);
  c.plan_id = *id;
  return c;
}

}  // namespace

llvm::json::Value to_json(const TuneRecord &r) {
  static_assert(field_count<TuneRecord>() == 7 && field_count<TuneKey>() == 4 && field_count<Choice>() == 3 &&
                    field_count<CandidateTiming>() == 7 && field_count<Candidate>() == 4,
                "a tuning record field was added: write it here and read it in tune_record_from_json");
  llvm::json::Object choice = candidate_json(r.choice.candidate);
  choice["median_ms"] = r.choice.median_ms;
  if (r.choice.dense_ms > 0) choice["dense_ms"] = r.choice.dense_ms;
  llvm::json::Array cands;
  for (const CandidateTiming &t : r.timings) {
    llvm::json::Object o = candidate_json(t.candidate);
    o["kernel"] = t.kernel;
    o["ok"] = t.ok;
    if (t.ok) {
      o["median_ms"] = t.median_ms;
      o["min_ms"] = t.min_ms;
      o["max_ms"] = t.max_ms;
    } else {
      o["skipped"] = t.skipped;
    }
    cands.push_back(std::move(o));
  }
  return llvm::json::Object{
      {"format", kRecordFormat},
      {"key", llvm::json::Object{{"op", r.key.op},
                                 {"gpu", r.key.gpu},
                                 {"signature", r.key.signature},
                                 {"generator", r.key.generator}}},
      {"signature", to_json(r.signature)},
      {"choice", std::move(choice)},
      {"candidates", std::move(cands)},
      {"warmup", r.warmup},
      {"repeat", r.repeat},
      {"created", r.created},
  };
}

llvm::Expected<TuneRecord> tune_record_from_json(const llvm::json::Value &v) {
  auto o = object(v, "tuning record");
  if (!o) return o.takeError();
  const llvm::json::Object &root = **o;
  auto format = str_field(root, "format", "tuning record");
  if (!format) return format.takeError();
  if (*format != kRecordFormat)
    return err("tuning record: format " + quoted(*format) + " is not " + kRecordFormat);
  TuneRecord r;
  auto kv = field(root, "key", "tuning record");
  if (!kv) return kv.takeError();
  auto ko = object(**kv, "key");
  if (!ko) return ko.takeError();
  for (auto [name, dst] : {std::pair{"op", &r.key.op}, {"gpu", &r.key.gpu}, {"signature", &r.key.signature},
                           {"generator", &r.key.generator}}) {
    auto s = str_field(**ko, name, "key");
    if (!s) return s.takeError();
    *dst = *s;
  }
  auto sv = field(root, "signature", "tuning record");
  if (!sv) return sv.takeError();
  auto sig = signature_from_json(**sv);
  if (!sig) return sig.takeError();
  r.signature = *sig;
  auto cv = field(root, "choice", "tuning record");
  if (!cv) return cv.takeError();
  auto co = object(**cv, "choice");
  if (!co) return co.takeError();
  auto choice = candidate_from_json(**co, "choice");
  if (!choice) return choice.takeError();
  r.choice.candidate = *choice;
  auto ms = num_field(**co, "median_ms", "choice");
  if (!ms) return ms.takeError();
  r.choice.median_ms = *ms;
  if ((*co)->get("dense_ms")) {  // optional: records of ops the dense route cannot run lack it
    auto dms = num_field(**co, "dense_ms", "choice");
    if (!dms) return dms.takeError();
    if (!(*dms > 0)) return err("tuning record: choice.dense_ms must be > 0");
    r.choice.dense_ms = *dms;
  }
  const llvm::json::Array *arr = root.getArray("candidates");
  if (!arr) return err("tuning record: missing array field 'candidates'");
  for (size_t i = 0; i < arr->size(); ++i) {
    std::string what = "candidates[" + std::to_string(i) + "]";
    auto eo = object((*arr)[i], what);
    if (!eo) return eo.takeError();
    CandidateTiming t;
    auto c = candidate_from_json(**eo, what);
    if (!c) return c.takeError();
    t.candidate = *c;
    auto kernel = str_field(**eo, "kernel", what);
    if (!kernel) return kernel.takeError();
    t.kernel = *kernel;
    auto ok = bool_field(**eo, "ok", what);
    if (!ok) return ok.takeError();
    t.ok = *ok;
    if (t.ok) {
      for (auto [name, dst] : {std::pair{"median_ms", &t.median_ms}, {"min_ms", &t.min_ms}, {"max_ms", &t.max_ms}}) {
        auto x = num_field(**eo, name, what);
        if (!x) return x.takeError();
        *dst = *x;
      }
    } else {
      auto why = str_field(**eo, "skipped", what);
      if (!why) return why.takeError();
      t.skipped = *why;
    }
    r.timings.push_back(std::move(t));
  }
  for (auto [name, dst] : {std::pair{"warmup", &r.warmup}, {"repeat", &r.repeat}}) {
    auto x = int_field(root, name, "tuning record");
    if (!x) return x.takeError();
    *dst = int(*x);
  }
  auto created = int_field(root, "created", "tuning record");
  if (!created) return created.takeError();
  r.created = *created;
  return r;
}

namespace {
// Refuses text nested deeper than `max_depth` arrays and objects, without recursing.
llvm::Error check_json_depth(llvm::StringRef text, int max_depth) {
  int depth = 0;
  bool in_string = false, escaped = false;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (in_string) {
      if (escaped) escaped = false;
      else if (c == '\\') escaped = true;
      else if (c == '"') in_string = false;
      continue;
    }
    if (c == '"') in_string = true;
    else if (c == '[' || c == '{') {
      if (++depth > max_depth)
        return err("nested deeper than " + llvm::Twine(max_depth) + " levels (at byte " + llvm::Twine(i) +
                   "); not parsed");
    } else if (c == ']' || c == '}') {
      --depth;
    }
  }
  return llvm::Error::success();
}
}  // namespace

llvm::Expected<TuneRecord> parse_tune_record(llvm::StringRef text) {
  if (text.size() > kMaxRecordBytes)
    return err("is " + llvm::Twine(text.size()) + " bytes, more than a record can be (" + llvm::Twine(kMaxRecordBytes) +
               "); not parsed");
  if (auto e = check_json_depth(text, kMaxRecordDepth)) return e;
  auto json = llvm::json::parse(text);
  if (!json) return json.takeError();
  return tune_record_from_json(*json);
}

// ---- the store ---------------------------------------------------------------------------

llvm::Expected<std::string> TuneStore::default_path() {
  auto base = DiskCache::default_path();
  if (!base) return base.takeError();
  llvm::SmallString<256> p(*base);
  llvm::sys::path::append(p, "tuning");
  return std::string(p.str());
}

llvm::Expected<TuneStore> TuneStore::open_default() {
  auto p = default_path();
  if (!p) return p.takeError();
  return open(*p);
}

std::string TuneStore::record_path(const TuneKey &key) const {
  llvm::SmallString<256> p(dir_);
  llvm::sys::path::append(p, key.file_name());
  return std::string(p.str());
}

std::optional<TuneRecord> TuneStore::load(const TuneKey &key) const {
  const std::string file = record_path(key);
  if (!llvm::sys::fs::exists(dir_)) return std::nullopt;
  // A record chooses which kernel runs: only from a directory nobody else can write.
  if (llvm::Error e = check_private_dir(dir_)) {
    warn_once("tuning-dir:" + dir_, "tuning records in " + dir_ + " ignored: " + llvm::toString(std::move(e)));
    return std::nullopt;
  }
  SafeRead read = read_regular_file(file, kMaxRecordBytes);
  switch (read.status) {
    case SafeRead::Status::Ok: break;
    case SafeRead::Status::Missing: return std::nullopt;
    case SafeRead::Status::Refused:
      log().warn("tuning record {} {}; ignoring it", file, read.why);
      return std::nullopt;
    case SafeRead::Status::Failed:
      log().warn("cannot read tuning record {}: {}; ignoring it", file, read.why);
      return std::nullopt;
  }
  auto rec = parse_tune_record(read.data);
  if (!rec) {
    log().warn("corrupt tuning record {}: {}; ignoring it", file, llvm::toString(rec.takeError()));
    return std::nullopt;
  }
  if (!(rec->key == key)) {
    log().warn("tuning record {} is for another key ({}, expected {}); ignoring it", file, quoted(rec->key.str(), 256),
               key.str());
    return std::nullopt;
  }
  return std::move(*rec);
}

llvm::Error TuneStore::save(const TuneRecord &r) const {
  if (dir_.empty()) return err("tuning store: the directory path is empty");
  if (std::error_code ec =
          llvm::sys::fs::create_directories(dir_, /*IgnoreExisting=*/true, llvm::sys::fs::perms::owner_all))
    return err("tuning store " + dir_ + " cannot be created: " + ec.message());
  if (llvm::Error e = check_private_dir(dir_)) return err("tuning store: " + llvm::toString(std::move(e)));
  const std::string file = record_path(r.key);
  std::string text;
  llvm::raw_string_ostream(text) << llvm::formatv("{0:2}", to_json(r)) << "\n";

  return write_file_atomic(file, text, "tuning record");
}

// ---- tuning ------------------------------------------------------------------------------

namespace {

std::vector<int64_t> random_values(std::mt19937_64 &rng, size_t count, const ElemType &t) {
  std::vector<int64_t> v(count);
  const uint64_t span = uint64_t(t.max_value() - t.min_value() + 1);
  for (int64_t &x : v) x = t.min_value() + int64_t(rng() % span);
  return v;
}

// NVRTC-compiles every plan for the device, in parallel (precompile_kernels: through the
// process's compile cache, so Kernel::get finds the cubins); the error text of each plan that
// fails ("" if none).
std::vector<std::string> precompile(const Context &ctx, const std::vector<Enumerated> &cands, int threads) {
  std::vector<std::string> errors(cands.size());
  std::vector<PlanTarget> targets;
  std::vector<size_t> which;  // targets[j] is cands[which[j]]
  const int cc = ctx.compute_capability();
  for (size_t i = 0; i < cands.size(); ++i) {
    auto arch = target_arch(cands[i].plan, cc);
    if (!arch) {
      errors[i] = llvm::toString(arch.takeError());
      continue;
    }
    targets.push_back(PlanTarget{cands[i].plan, *arch});
    which.push_back(i);
  }
  std::vector<Precompiled> done = precompile_kernels(targets, threads > 0 ? unsigned(threads) : 0);
  for (size_t j = 0; j < done.size(); ++j) errors[which[j]] = std::move(done[j].error);
  return errors;
}


// The candidates worth timing: within opts.prune of the cheapest plan (Plan::cost) of the same
// knobs, then opts.max_candidates of them: the policy's choice (the untuned default) first, then
// each kernel shape's (its knobs but the ring depth, and its plan) fastest by `estimate_us` (the
// route model's time of the plan on this matrix), then each one's second, and so on. The model
// does not tell ring depths or warp counts apart, so this keeps every shape in before a second
// depth of any. (Ranked by Plan::cost, a matrix-blind figure, the 32 kept on the H100 at
// 6144x4096 N=16 and 4096x4096 N=2048 were the policy's decode kernel and 31 ring kernels
// 2-14x slower: no other warp count or slice width of the decode kernel was timed. By the
// estimate alone, the ring depths of the slice widths it puts first filled the list: session 29.)
// The policy's choice (its first plan): the untuned default every tune times.
bool is_policy(const Enumerated &c, const OpSpec &policy) { return c.candidate.spec == policy && c.candidate.plan == 0; }

std::vector<Enumerated> prune(std::vector<Enumerated> cands, const OpSpec &policy, const TuneOptions &opts,
                              const std::function<double(const Plan &)> &estimate_us) {
  if (opts.prune > 0) {
    std::map<std::string, double> best;  // knobs -> the cheapest plan's cost
    for (const Enumerated &c : cands) {
      auto [it, fresh] = best.emplace(to_string(c.candidate.spec), c.plan.cost);
      if (!fresh) it->second = std::min(it->second, c.plan.cost);
    }
    std::vector<Enumerated> kept;
    for (Enumerated &c : cands)
      if (c.plan.cost <= opts.prune * best[to_string(c.candidate.spec)] || is_policy(c, policy))
        kept.push_back(std::move(c));
    cands = std::move(kept);
  }
  if (opts.max_candidates > 0 && cands.size() > size_t(opts.max_candidates)) {
    struct Ranked {
      int rank;  // among its shape's candidates, by estimate (-1: the policy's choice)
      double us;
      size_t index;
    };
    std::vector<Ranked> order;
    // A kernel shape: the knobs but the ring depth (prefetch on or off), and the plan.
    using Shape = std::tuple<int, int, int, int, int, bool, std::string>;
    std::map<Shape, std::vector<size_t>> shapes;
    for (size_t i = 0; i < cands.size(); ++i) {
      order.push_back({0, estimate_us(cands[i].plan), i});
      const Knobs &k = cands[i].candidate.knobs;
      shapes[Shape{k.bsn, k.split, k.decode, k.resident, k.warps, k.prefetch != 0, cands[i].candidate.plan_id}].push_back(i);
    }
    for (auto &[shape, members] : shapes) {
      std::stable_sort(members.begin(), members.end(), [&](size_t x, size_t y) { return order[x].us < order[y].us; });
      for (size_t r = 0; r < members.size(); ++r) order[members[r]].rank = int(r);
    }
    for (Ranked &r : order)
      if (is_policy(cands[r.index], policy)) r.rank = -1;
    std::stable_sort(order.begin(), order.end(),
                     [](const Ranked &x, const Ranked &y) { return std::tie(x.rank, x.us) < std::tie(y.rank, y.us); });
    std::vector<Enumerated> kept;
    for (size_t j = 0; j < size_t(opts.max_candidates); ++j) kept.push_back(std::move(cands[order[j].index]));
    cands = std::move(kept);
  }
  return cands;
}

llvm::Expected<std::vector<Enumerated>> timed_enumerated(const OpSpec &base, const MatrixSignature &sig,
                                                         const DeviceFacts &dev, const TuneOptions &opts) {
  auto all = enumerate(base, opts);
  if (!all) return all.takeError();
  // The policy's choice is timed too (it may hold knob values the grid does not: automatic
  // ring depth, a pinned knob): it is the untuned default tune reports its gain over.
  const OpSpec policy = policy_spec(base, &sig, dev).spec;
  if (std::none_of(all->begin(), all->end(), [&](const Enumerated &c) { return is_policy(c, policy); })) {
    if (auto ps = plan_candidates(policy)) {
      Enumerated e{Candidate{policy, knobs_of(policy), 0, plan_id(ps->front())}, std::move(ps->front())};
      all->insert(all->begin(), std::move(e));
    } else {
      llvm::consumeError(ps.takeError());
    }
  }
  // Candidates whose B does not fit shared memory at this K cannot run on the matrix (where
  // none can, the error says why: a pinned tile too wide for K).
  std::string too_wide;
  all->erase(std::remove_if(all->begin(), all->end(),
                            [&](const Enumerated &c) {
                              std::string why = check_shared_memory(c.plan, sig.k);
                              if (!why.empty() && too_wide.empty()) too_wide = why;
                              return !why.empty();
                            }),
             all->end());
  if (all->empty() && !too_wide.empty()) return err("tune " + to_string(base) + ": " + too_wide);
  // SpMM: the route model's time on this matrix; SDDMM (no such model): the plan's cost.
  auto estimate_us = [&](const Plan &p) {
    return p.spec.op == OpKind::SpMM ? estimate_routes(p, sig, dev).sparse_us : p.cost;
  };
  std::vector<Enumerated> kept = prune(std::move(*all), policy, opts, estimate_us);
  if (kept.empty()) return err("tune " + to_string(base) + ": no candidate is left to time");
  return kept;
}

llvm::Expected<TuneResult> tune(const Context &ctx, const OpSpec &base, const MatrixSignature &sig, Pipeline &work,
                                const TuneOptions &opts) {
  if (opts.repeat < 1) return err("tune: repeat=" + llvm::Twine(opts.repeat) + " is not allowed (allowed: >= 1)");
  if (opts.warmup < 0) return err("tune: warmup=" + llvm::Twine(opts.warmup) + " is not allowed (allowed: >= 0)");
  if (auto e = ctx.make_current()) return e;
  auto timed = timed_enumerated(base, sig, device_facts(ctx), opts);
  if (!timed) return timed.takeError();
  auto cands = std::make_unique<std::vector<Enumerated>>(std::move(*timed));

  TuneResult result;
  result.key = make_tune_key(base, ctx.name(), sig);
  result.signature = sig;
  result.warmup = opts.warmup;
  result.repeat = opts.repeat;
  result.created = int64_t(std::time(nullptr));
  auto progress = [&](const char *stage, size_t done, const Candidate *c) {
    if (opts.progress) opts.progress(TuneProgress{stage, done, cands->size(), c ? c->str() : std::string()});
  };

  progress("compile", 0, nullptr);
  std::vector<std::string> compile_errors = precompile(ctx, *cands, opts.compile_threads);
  progress("compile", cands->size(), nullptr);

  TimingOptions timing{opts.warmup, opts.repeat, opts.filler_bytes};
  if (opts.flush_l2) timing.flush_bytes = l2_flush_bytes(ctx);
  // Times one candidate through the library's pipeline; the error (or mismatch) is the reason
  // it is skipped.
  auto time_one = [&](const Enumerated &c, CandidateTiming &t) -> llvm::Error {
    if (auto e = work.check(c.plan)) return e;
    if (auto e = work.prepare(c.plan)) return e;
    auto k = Kernel::get(ctx, c.plan);
    if (!k) return k.takeError();
    t.kernel = (*k)->source().name;
    if (opts.verify)
      if (auto e = work.poison()) return e;
    if (auto e = work.launch(**k)) return e;
    if (auto e = ctx.synchronize()) return e;
    if (opts.verify) {
      auto v = work.verify();
      if (!v) return v.takeError();
      if (!v->exact())
        return err(fmt::format("not exact: element {} (row {}, column {}) = {}, expected {} ({} of {} differ)",
                               v->first ? v->first->at : 0, v->first ? v->first->row : 0, v->first ? v->first->col : 0,
                               v->first ? v->first->got : 0, v->first ? v->first->want : 0, v->differ, v->checked));
    }
    auto timed = time_launches(ctx, [&] { return work.launch(**k); }, timing);
    if (!timed) return timed.takeError();
    t.median_ms = timed->median_ms;
    t.min_ms = timed->min_ms;
    t.max_ms = timed->max_ms;
    return llvm::Error::success();
  };

  int best = -1;
  for (size_t i = 0; i < cands->size(); ++i) {
    const Enumerated &c = (*cands)[i];
    CandidateTiming t;
    t.candidate = c.candidate;
    if (!compile_errors[i].empty()) {
      t.skipped = compile_errors[i];
    } else if (auto e = time_one(c, t)) {
      t.skipped = llvm::toString(std::move(e));
    } else {
      t.ok = true;
    }
    if (!t.ok)
      log().warn("tune {}: skipping candidate {}: {}", to_string(base), c.candidate.str(), t.skipped);
    else
      log().debug("tune {}: {} median {:.4f} ms", to_string(base), c.candidate.str(), t.median_ms);
    if (t.ok && (best < 0 || t.median_ms < result.timings[best].median_ms)) best = int(i);
    result.timings.push_back(std::move(t));
    progress("time", i + 1, &c.candidate);
  }
  if (best < 0) {
    std::string why;
    for (const CandidateTiming &t : result.timings) why += "\n  " + t.candidate.str() + ": " + t.skipped;
    return err("tune " + to_string(base) + ": no candidate could be timed:" + why);
  }
  result.choice.candidate = result.timings[best].candidate;
  result.choice.median_ms = result.timings[best].median_ms;
  // The dense route, timed the same way, where it can compute the op.
  if (opts.dense && base.op == OpKind::SpMM && dense_route_refusal(base).empty() && sig.k % 4 == 0 &&
      dense_library_unavailable().empty()) {
    progress("dense", cands->size(), nullptr);
    auto dense = [&]() -> llvm::Expected<double> {
      if (auto e = work.prepare_dense(ctx)) return e;
      if (opts.verify) {
        if (auto e = work.poison()) return e;
        if (auto e = work.launch_dense()) return e;
        if (auto e = ctx.synchronize()) return e;
        auto v = work.verify();
        if (!v) return v.takeError();
        if (!v->exact()) return err("the dense route is not exact");
      }
      auto t = time_launches(ctx, [&] { return work.launch_dense(); }, timing);
      if (!t) return t.takeError();
      return t->median_ms;
    }();
    if (dense) result.choice.dense_ms = *dense;
    else log().warn("tune {}: the dense route could not be timed: {}", to_string(base), llvm::toString(dense.takeError()));
  }

  auto store = opts.store_dir.empty() ? TuneStore::open_default() : llvm::Expected<TuneStore>(TuneStore::open(opts.store_dir));
  if (!store) {
    log().warn("tune: the tuning record is not saved: {}", llvm::toString(store.takeError()));
    return result;
  }
  result.path = store->record_path(result.key);
  if (opts.save) {
    if (auto e = store->save(result)) log().warn("tune: the tuning record is not saved: {}", llvm::toString(std::move(e)));
    else result.saved = true;
  }
  return result;
}

}  // namespace

llvm::Expected<TuneResult> tune_spmm(const Context &ctx, const OpSpec &base, const VectorSparse &a, int64_t n,
                                     const TuneOptions &opts) {
  if (base.op != OpKind::SpMM) return err("tune_spmm: the spec is " + llvm::Twine(op_name(base.op)) + ", not spmm");
  if (a.v != base.v)
    return err("tune_spmm: the matrix has V=" + llvm::Twine(a.v) + " but the spec is for V=" + llvm::Twine(base.v));
  if (n <= 0 || n > INT32_MAX) return err("tune_spmm: n=" + llvm::Twine(n) + " is not allowed (allowed: 1..2^31-1)");
  if (a.rows <= 0 || a.cols <= 0)
    return err("tune_spmm: the matrix is " + llvm::Twine(a.rows) + " x " + llvm::Twine(a.cols) + " (empty)");
  if (auto e = ctx.make_current()) return e;
  std::mt19937_64 rng(opts.seed);
  auto work = Pipeline::spmm(base, a, random_values(rng, size_t(a.cols * n), base.rhs), n);
  return tune(ctx, base, spmm_signature(a, n), *work, opts);
}

llvm::Expected<TuneResult> tune_sddmm(const Context &ctx, const OpSpec &base, const VectorSparse &mask, int64_t k,
                                      const TuneOptions &opts) {
  if (base.op != OpKind::SDDMM)
    return err("tune_sddmm: the spec is " + llvm::Twine(op_name(base.op)) + ", not sddmm");
  if (mask.v != base.v)
    return err("tune_sddmm: the mask has V=" + llvm::Twine(mask.v) + " but the spec is for V=" + llvm::Twine(base.v));
  if (k <= 0 || k > INT32_MAX) return err("tune_sddmm: k=" + llvm::Twine(k) + " is not allowed (allowed: 1..2^31-1)");
  if (mask.rows <= 0 || mask.cols <= 0)
    return err("tune_sddmm: the mask is " + llvm::Twine(mask.rows) + " x " + llvm::Twine(mask.cols) + " (empty)");
  if (opts.sddmm_stride < 1 || opts.sddmm_stride > 1024)
    return err("tune_sddmm: sddmm_stride=" + llvm::Twine(opts.sddmm_stride) + " is not allowed (allowed: 1..1024)");
  if (auto e = ctx.make_current()) return e;
  std::mt19937_64 rng(opts.seed);
  std::vector<int64_t> a = random_values(rng, size_t(mask.rows * k), base.lhs);
  std::vector<int64_t> b = random_values(rng, size_t(k * mask.cols), base.rhs);
  auto work = Pipeline::sddmm(base, mask, std::move(a), std::move(b), k, opts.sddmm_layout, opts.sddmm_stride);
  return tune(ctx, base, sddmm_signature(mask, k), *work, opts);
}

llvm::Expected<std::vector<Candidate>> timed_candidates(const OpSpec &base, const MatrixSignature &sig,
                                                       const DeviceFacts &dev, const TuneOptions &opts) {
  auto e = timed_enumerated(base, sig, dev, opts);
  if (!e) return e.takeError();
  std::vector<Candidate> out;
  for (const Enumerated &x : *e) out.push_back(x.candidate);
  return out;
}

// ---- lookup ------------------------------------------------------------------------------

std::optional<Choice> lookup_tuned(const TuneStore &store, const OpSpec &base, const MatrixSignature &sig,
                                   llvm::StringRef gpu) {
  TuneKey key = make_tune_key(base, gpu, sig);
  std::optional<TuneRecord> rec = store.load(key);
  if (!rec) {
    log().debug("no tuning record for {} in {}", key.str(), store.path());
    return std::nullopt;
  }
  const std::string file = store.record_path(key);
  Choice c = rec->choice;
  OpSpec spec = with_knobs(base, c.candidate.knobs);
  auto plans = plan_candidates(spec);
  if (!plans) {
    log().warn("tuning record {}: its choice {} cannot be planned: {}; ignoring it", file, to_string(spec),
               llvm::toString(plans.takeError()));
    return std::nullopt;
  }
  int found = -1;
  for (size_t i = 0; i < plans->size() && found < 0; ++i)
    if (plan_id((*plans)[i]) == c.candidate.plan_id) found = int(i);
  if (found < 0) {
    log().warn("tuning record {}: plan {} is no longer a candidate of {}; ignoring it", file, c.candidate.plan_id,
               to_string(spec));
    return std::nullopt;
  }
  if (found != c.candidate.plan)
    log().debug("tuning record {}: plan {} is now candidate {} (was {})", file, c.candidate.plan_id, found,
                c.candidate.plan);
  c.candidate.spec = spec;
  c.candidate.plan = found;
  return c;
}

std::optional<Choice> lookup_tuned(const OpSpec &base, const MatrixSignature &sig, llvm::StringRef gpu) {
  auto store = TuneStore::open_default();
  if (!store) {
    log().debug("no tuning store: {}", llvm::toString(store.takeError()));
    return std::nullopt;
  }
  return lookup_tuned(*store, base, sig, gpu);
}

}  // namespace magicube
