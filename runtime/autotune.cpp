#include "runtime/autotune.h"

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <ctime>
#include <functional>
#include <random>
#include <set>
#include <thread>

#include <fcntl.h>
#include <unistd.h>

#include <fmt/format.h>

#include "cache/disk_cache.h"
#include "cache/safe_file.h"
#include "compiler/codegen.h"
#include "compiler/log.h"
#include "compiler/planner.h"
#include "compiler/text.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "runtime/epilogue.h"
#include "runtime/packing.h"
#include "runtime/reference.h"

namespace magicube {

namespace {

llvm::Error err(const llvm::Twine &msg) { return llvm::createStringError(llvm::inconvertibleErrorCode(), msg); }

constexpr const char *kRecordFormat = "magicube-tuning-1";

uint64_t fnv1a(llvm::StringRef s) {
  uint64_t h = 1469598103934665603ull;
  for (unsigned char c : s) {
    h ^= c;
    h *= 1099511628211ull;
  }
  return h;
}

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
  static const std::vector<KnobInfo> table = {
      // 48 is a resident-B width only (three mma tiles per stride; other kernels skip it)
      {"bsn", &Knobs::bsn, {32, 48, 64, 128, 256}, [](OpSpec &s, int v) { s.bsn = v; },
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
    if (std::string(i.name) == "resident" && !(*o)->get("resident")) continue;  // records older than the knob
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
      if (!plans) return plans.takeError();
      // Knob values that give an op the same spec (SDDMM has no ring depth) are tried once.
      const bool seen =
          std::any_of(out.begin(), out.end(), [&](const Enumerated &x) { return x.candidate.spec == spec; });
      for (size_t p = 0; !seen && p < plans->size(); ++p) {
        if (!can_split((*plans)[p])) continue;  // split 2: only the int8 m16n8k32 kernel whose rings fit
        if (spec.resident && !can_reside((*plans)[p])) continue;  // resident B: that kernel, whole 16-byte rows
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

std::string TuneKey::file_name() const { return op + "." + fmt::format("{:016x}", fnv1a(str())) + ".json"; }

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
  llvm::json::Object choice = candidate_json(r.choice.candidate);
  choice["median_ms"] = r.choice.median_ms;
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

  static thread_local std::mt19937_64 rng{std::random_device{}() ^ (uint64_t(getpid()) << 32)};
  std::string tmp;
  int fd = -1, e = 0;
  for (int attempt = 0; attempt < 16 && fd < 0; ++attempt) {
    tmp = file + ".tmp." + std::to_string(getpid()) + "." + fmt::format("{:016x}", rng());
    fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    e = fd < 0 ? errno : 0;
    if (fd < 0 && e != EEXIST) break;
  }
  if (fd < 0) return err("cannot create a temp file for tuning record " + file + ": " + std::strerror(e));
  const char *step = nullptr;
  for (size_t done = 0; done < text.size() && !step;) {
    ssize_t w = ::write(fd, text.data() + done, text.size() - done);
    if (w < 0 && errno == EINTR) continue;
    if (w < 0) step = "write", e = errno;
    else done += size_t(w);
  }
  if (!step && ::fsync(fd) != 0) step = "fsync", e = errno;
  if (::close(fd) != 0 && !step) step = "close", e = errno;
  if (!step && ::rename(tmp.c_str(), file.c_str()) != 0) step = "rename", e = errno;
  if (step) {
    ::unlink(tmp.c_str());
    return err("cannot write tuning record " + file + ": " + step + " of " + tmp + " failed: " + std::strerror(e));
  }
  int dfd = ::open(dir_.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);  // make the rename durable
  if (dfd >= 0) {
    ::fsync(dfd);
    ::close(dfd);
  }
  return llvm::Error::success();
}

// ---- tuning ------------------------------------------------------------------------------

namespace {

// The output element as the kernel stores it (ints sign-extended, float bits zero-extended).
int64_t stored(const OpSpec &spec, int64_t acc, const EpilogueArgs &args, int64_t row, int64_t col) {
  switch (spec.out) {
    case OutType::Int32: return int32_t(uint32_t(uint64_t(acc)));
    case OutType::Int64: return acc;
    case OutType::F32: return f32_bits(dequantize(spec, acc, args, row, col));
    case OutType::F16: return f16_bits(dequantize(spec, acc, args, row, col));
    case OutType::BF16: return bf16_bits(dequantize(spec, acc, args, row, col));
  }
  return acc;
}

std::vector<int64_t> random_values(std::mt19937_64 &rng, size_t count, const ElemType &t) {
  std::vector<int64_t> v(count);
  const uint64_t span = uint64_t(t.max_value() - t.min_value() + 1);
  for (int64_t &x : v) x = t.min_value() + int64_t(rng() % span);
  return v;
}

// Unit scales and a zero bias: the float epilogue runs with every pointer it needs.
EpilogueArgs unit_epilogue(const OpSpec &spec, int64_t rows, int64_t cols) {
  EpilogueArgs e;
  if (!is_float(spec.out)) return e;
  e.row_scale.assign(size_t(rows), 1.0f);
  e.col_scale.assign(size_t(cols), 1.0f);
  e.bias.assign(size_t(std::max(rows, cols)), 0.0f);
  return e;
}

std::string chunks_key(const std::vector<Chunk> &cs) {
  std::string s;
  for (const Chunk &c : cs) s += c.str() + "/" + std::to_string(c.storage_bits) + " ";
  return s;
}

// One op on one input, uploaded as each plan packs it (one upload per distinct packing).
class Workload {
 public:
  virtual ~Workload() = default;
  virtual llvm::Error check(const Plan &p) const = 0;  // before anything is uploaded
  virtual llvm::Error prepare(const Plan &p) = 0;      // the operands packed for p
  virtual llvm::Error launch(const Kernel &k) = 0;     // asynchronous, on the null stream
  virtual llvm::Error poison() = 0;                    // fills the output with 0xAB
  virtual std::string verify(const Plan &p) = 0;       // after a synchronize: "" or the mismatch
};

class SpmmWorkload : public Workload {
 public:
  SpmmWorkload(const OpSpec &base, const VectorSparse &a, int64_t n, uint64_t seed)
      : spec_(base), a_(a), n_(n), epi_host_(unit_epilogue(base, a.rows, n)) {
    std::mt19937_64 rng(seed);
    b_ = random_values(rng, size_t(a.cols * n), base.rhs);
  }
  llvm::Error init() {
    auto c = DeviceBuffer::allocate(std::max<size_t>(1, size_t(a_.rows * n_) * stored_bytes(spec_.out)));
    if (!c) return c.takeError();
    c_ = std::move(*c);
    auto e = upload(epi_host_);
    if (!e) return e.takeError();
    epi_ = std::move(*e);
    return llvm::Error::success();
  }
  llvm::Error check(const Plan &p) const override { return check_reduction_length(p, a_.max_block_length()); }
  llvm::Error prepare(const Plan &p) override {
    std::string lk = std::to_string(p.k_stride) + " " + chunks_key(p.lhs);
    if (p.shuffle_b)
      for (int x : p.shuffle) lk += "s" + std::to_string(x);
    if (p.spec.resident) lk += " bank-balanced";
    if (!lhs_.count(lk)) {
      auto layout = build_srbcrs(a_, p);
      if (!layout) return layout.takeError();
      auto packed = pack_lhs(*layout, p);
      if (!packed) return packed.takeError();
      auto d = upload(*packed, *layout);
      if (!d) return d.takeError();
      lhs_.emplace(lk, std::move(*d));
    }
    std::string rk = chunks_key(p.rhs) + (p.spec.resident ? " slices of " + std::to_string(p.spec.bsn) : "");
    if (!rhs_.count(rk)) {
      auto packed = pack_rhs(b_, a_.cols, n_, p);
      if (!packed) return packed.takeError();
      auto d = upload(*packed);
      if (!d) return d.takeError();
      rhs_.emplace(rk, std::move(*d));
    }
    cur_a_ = &lhs_.at(lk);
    cur_b_ = &rhs_.at(rk);
    return llvm::Error::success();
  }
  llvm::Error launch(const Kernel &k) override { return k.launch(*cur_a_, *cur_b_, c_.ptr(), nullptr, &epi_); }
  llvm::Error poison() override { return c_.memset(0xAB); }
  std::string verify(const Plan &p) override {
    if (want_.empty()) {
      std::vector<int64_t> ref = reference_spmm(a_, b_, n_);
      want_.resize(ref.size());
      for (int64_t r = 0; r < a_.rows; ++r)
        for (int64_t c = 0; c < n_; ++c) want_[r * n_ + c] = stored(spec_, ref[r * n_ + c], epi_host_, r, c);
    }
    auto got = download_stored(c_, a_.rows * n_, spec_.out);
    if (!got) return llvm::toString(got.takeError());
    for (size_t i = 0; i < want_.size(); ++i)
      if ((*got)[i] != want_[i])
        return fmt::format("not exact: C[{}, {}] = {}, expected {}", int64_t(i) / n_, int64_t(i) % n_, (*got)[i],
                           want_[i]);
    return "";
  }

 private:
  OpSpec spec_;
  const VectorSparse &a_;
  int64_t n_;
  std::vector<int64_t> b_, want_;
  EpilogueArgs epi_host_;
  DeviceEpilogue epi_;
  DeviceBuffer c_;
  std::map<std::string, DeviceLhs> lhs_;
  std::map<std::string, DeviceRhs> rhs_;
  const DeviceLhs *cur_a_ = nullptr;
  const DeviceRhs *cur_b_ = nullptr;
};

class SddmmWorkload : public Workload {
 public:
  SddmmWorkload(const OpSpec &base, const VectorSparse &mask, int64_t k, const TuneOptions &opts)
      : spec_(base), mask_(mask), k_(k), layout_(opts.sddmm_layout),
        epi_host_(unit_epilogue(base, mask.rows, mask.cols)) {
    std::mt19937_64 rng(opts.seed);
    a_ = random_values(rng, size_t(mask.rows * k), base.lhs);
    b_ = random_values(rng, size_t(k * mask.cols), base.rhs);
    m_ = build_srbcrs(mask, opts.sddmm_stride, false, {0, 1, 2, 3, 4, 5, 6, 7});
    count_ = (layout_ == SparseLayout::Bcrs ? mask.num_vectors() : m_.num_slots()) * mask.v;
  }
  llvm::Error init() {
    auto dm = upload_mask(m_, mask_);
    if (!dm) return dm.takeError();
    dm_ = std::move(*dm);
    auto out = DeviceBuffer::allocate(std::max<size_t>(1, size_t(count_) * stored_bytes(spec_.out)));
    if (!out) return out.takeError();
    out_ = std::move(*out);
    auto e = upload(epi_host_);
    if (!e) return e.takeError();
    epi_ = std::move(*e);
    return llvm::Error::success();
  }
  llvm::Error check(const Plan &p) const override { return check_reduction_length(p, k_); }
  llvm::Error prepare(const Plan &p) override {
    std::string lk = chunks_key(p.lhs), rk = chunks_key(p.rhs);
    if (!lhs_.count(lk)) {
      auto packed = pack_sddmm_lhs(a_, mask_.rows, k_, p);
      if (!packed) return packed.takeError();
      auto d = upload(*packed);
      if (!d) return d.takeError();
      lhs_.emplace(lk, std::move(*d));
    }
    if (!rhs_.count(rk)) {
      auto packed = pack_sddmm_rhs(b_, k_, mask_.cols, p);
      if (!packed) return packed.takeError();
      auto d = upload(*packed);
      if (!d) return d.takeError();
      rhs_.emplace(rk, std::move(*d));
    }
    cur_a_ = &lhs_.at(lk);
    cur_b_ = &rhs_.at(rk);
    return llvm::Error::success();
  }
  llvm::Error launch(const Kernel &k) override {
    return k.launch_sddmm(dm_, *cur_a_, *cur_b_, out_.ptr(), layout_, nullptr, &epi_);
  }
  llvm::Error poison() override { return out_.memset(0xAB); }
  std::string verify(const Plan &p) override {
    if (ref_.empty()) ref_ = reference_sddmm(mask_, a_, b_, k_);
    auto got = download_stored(out_, count_, spec_.out);
    if (!got) return llvm::toString(got.takeError());
    const int v = mask_.v;
    for (int64_t blk = 0; blk < mask_.num_blocks(); ++blk)
      for (int64_t i = mask_.block_ptr[blk]; i < mask_.block_ptr[blk + 1]; ++i)
        for (int r = 0; r < v; ++r) {
          int64_t row = blk * v + r;
          if (row >= mask_.rows) continue;  // rows past M are not written
          int64_t slot = m_.row_ptr[2 * blk] + (i - mask_.block_ptr[blk]);
          int64_t at = layout_ == SparseLayout::Bcrs ? i * v + r : m_.value_index(slot, r);
          int64_t want = stored(spec_, ref_[i * v + r], epi_host_, row, mask_.col[i]);
          if ((*got)[at] != want)
            return fmt::format("not exact: vector {} (row {}, column {}) = {}, expected {}", i, row, mask_.col[i],
                               (*got)[at], want);
        }
    return "";
  }

 private:
  OpSpec spec_;
  const VectorSparse &mask_;
  int64_t k_;
  SparseLayout layout_;
  std::vector<int64_t> a_, b_, ref_;
  EpilogueArgs epi_host_;
  SrBcrs m_;
  int64_t count_ = 0;
  DeviceMask dm_;
  DeviceEpilogue epi_;
  DeviceBuffer out_;
  std::map<std::string, DeviceDense> lhs_, rhs_;
  const DeviceDense *cur_a_ = nullptr, *cur_b_ = nullptr;
};

// NVRTC-compiles every plan for the device, in parallel (through the process's compile
// cache, so Kernel::get finds the cubins); the error text of each plan that fails ("" if none).
std::vector<std::string> precompile(const Context &ctx, const std::vector<Enumerated> &cands, int threads) {
  std::vector<std::string> errors(cands.size());
  std::atomic<size_t> next{0};
  unsigned n = threads > 0 ? unsigned(threads) : std::max(1u, std::min(16u, std::thread::hardware_concurrency()));
  n = std::min<unsigned>(n, unsigned(std::max<size_t>(1, cands.size())));
  const int cc = ctx.compute_capability();
  auto work = [&] {
    for (size_t i; (i = next++) < cands.size();) {
      const Plan &p = cands[i].plan;
      auto arch = target_arch(p, cc);
      if (!arch) {
        errors[i] = llvm::toString(arch.takeError());
        continue;
      }
      auto src = generate(p);
      if (!src) {
        errors[i] = "codegen: " + llvm::toString(src.takeError());
        continue;
      }
      auto cubin = kernel_cubin(p, *src, *arch);
      if (!cubin) errors[i] = "compile: " + llvm::toString(cubin.takeError());
    }
  };
  std::vector<std::thread> pool;
  for (unsigned t = 1; t < n; ++t) pool.emplace_back(work);
  work();
  for (auto &t : pool) t.join();
  return errors;
}

double median_of(std::vector<double> ms) {
  std::sort(ms.begin(), ms.end());
  size_t h = ms.size() / 2;
  return ms.size() % 2 ? ms[h] : (ms[h - 1] + ms[h]) / 2;
}

llvm::Expected<TuneResult> tune(const Context &ctx, const OpSpec &base, const MatrixSignature &sig, Workload &work,
                                const TuneOptions &opts) {
  if (opts.repeat < 1) return err("tune: repeat=" + llvm::Twine(opts.repeat) + " is not allowed (allowed: >= 1)");
  if (opts.warmup < 0) return err("tune: warmup=" + llvm::Twine(opts.warmup) + " is not allowed (allowed: >= 0)");
  auto cands = enumerate(base, opts);
  if (!cands) return cands.takeError();
  if (auto e = ctx.make_current()) return e;

  TuneResult result;
  result.key = make_tune_key(base, ctx.name(), sig);
  result.signature = sig;
  result.warmup = opts.warmup;
  result.repeat = opts.repeat;
  result.created = int64_t(std::time(nullptr));

  std::vector<std::string> compile_errors = precompile(ctx, *cands, opts.compile_threads);

  // Reused by every candidate: the event pairs and the filler.
  std::vector<Event> start, stop;
  for (int i = 0; i < opts.repeat; ++i) {
    auto e0 = Event::create();
    if (!e0) return e0.takeError();
    auto e1 = Event::create();
    if (!e1) return e1.takeError();
    start.push_back(std::move(*e0));
    stop.push_back(std::move(*e1));
  }
  DeviceBuffer filler;
  if (opts.filler_bytes > 0) {
    auto f = DeviceBuffer::allocate(opts.filler_bytes);
    if (f) filler = std::move(*f);
    else log().warn("tune: no {}-byte filler ({}); host launch latency may be timed", opts.filler_bytes,
                    llvm::toString(f.takeError()));
  }

  // Times one candidate; the error (or mismatch) is the reason it is skipped.
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
    if (opts.verify)
      if (std::string bad = work.verify(c.plan); !bad.empty()) return err(bad);
    for (int i = 0; i < opts.warmup; ++i)
      if (auto e = work.launch(**k)) return e;
    if (auto e = ctx.synchronize()) return e;
    if (filler.bytes() > 0)
      if (auto e = filler.memset(0)) return e;
    for (int i = 0; i < opts.repeat; ++i) {
      if (auto e = start[i].record(nullptr)) return e;
      if (auto e = work.launch(**k)) return e;
      if (auto e = stop[i].record(nullptr)) return e;
    }
    if (auto e = ctx.synchronize()) return e;
    std::vector<double> ms;
    for (int i = 0; i < opts.repeat; ++i) {
      auto x = elapsed_ms(start[i], stop[i]);
      if (!x) return x.takeError();
      ms.push_back(*x);
    }
    t.median_ms = median_of(ms);
    t.min_ms = *std::min_element(ms.begin(), ms.end());
    t.max_ms = *std::max_element(ms.begin(), ms.end());
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
  }
  if (best < 0) {
    std::string why;
    for (const CandidateTiming &t : result.timings) why += "\n  " + t.candidate.str() + ": " + t.skipped;
    return err("tune " + to_string(base) + ": no candidate could be timed:" + why);
  }
  result.choice.candidate = result.timings[best].candidate;
  result.choice.median_ms = result.timings[best].median_ms;

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
  SpmmWorkload work(base, a, n, opts.seed);
  if (auto e = work.init()) return e;
  return tune(ctx, base, spmm_signature(a, n), work, opts);
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
  SddmmWorkload work(base, mask, k, opts);
  if (auto e = work.init()) return e;
  return tune(ctx, base, sddmm_signature(mask, k), work, opts);
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

llvm::Expected<Plan> tuned_plan(const TuneStore &store, const OpSpec &base, const MatrixSignature &sig,
                                llvm::StringRef gpu) {
  if (auto e = validate(base)) return e;
  if (std::optional<Choice> c = lookup_tuned(store, base, sig, gpu)) {
    auto plans = plan_candidates(c->spec());
    if (!plans) return plans.takeError();
    return std::move((*plans)[c->plan_index()]);
  }
  return plan(base);
}

llvm::Expected<Plan> tuned_plan(const OpSpec &base, const MatrixSignature &sig, llvm::StringRef gpu) {
  auto store = TuneStore::open_default();
  if (!store) {
    log().debug("no tuning store: {}", llvm::toString(store.takeError()));
    return plan(base);
  }
  return tuned_plan(*store, base, sig, gpu);
}

}  // namespace magicube
