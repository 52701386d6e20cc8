// magicube_baselines: the vendor baselines of bench/baselines.h for M = K = 4096 and
// N = 256, 512 on the current GPU, as a Markdown table on stdout.
//
//   magicube_baselines [-v|--verbose]     -v also lists every configuration tried
//
// Exits 0 with one line "no CUDA device: ..." where there is no usable GPU; 1 when a
// contender fails (not when a library refuses a configuration: that is a table entry).
#include <cstdio>
#include <ctime>
#include <functional>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "bench/baselines.h"
#include "support/log.h"

using namespace magicube::bench;

namespace {

struct Row {
  std::string name;
  std::vector<std::string> cells, configs;  // per N
};

std::string utc_now() {
  std::time_t t = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[64];
  std::strftime(buf, sizeof buf, "%Y-%m-%d %H:%M UTC", &tm);
  return buf;
}

}  // namespace

int main(int argc, char **argv) {
  bool verbose = false;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "-v" || a == "--verbose") verbose = true;
    else {
      std::fprintf(stderr, "usage: %s [-v|--verbose]\n", argv[0]);
      return 2;
    }
  }

  if (llvm::Error e = require_cuda_device()) {
    std::printf("%s\n", llvm::toString(std::move(e)).c_str());
    return 0;
  }
  auto dev = device_summary();
  if (!dev) {
    std::printf("error: %s\n", llvm::toString(dev.takeError()).c_str());
    return 1;
  }

  const int64_t M = 4096, K = 4096;
  const std::vector<int64_t> Ns = {256, 512};
  const std::vector<double> sparsities = {0.7, 0.9, 0.98};
  const int V = 8;
  BaselineOptions opts;

  std::vector<Row> rows;
  std::vector<std::string> errors, notes, tried;
  std::set<std::string> seen_notes;
  auto add = [&](Row &row, size_t col, const std::string &label, llvm::Expected<Measurement> m) {
    if (!m) {
      std::string msg = llvm::toString(m.takeError());
      row.cells[col] = "error";
      errors.push_back(label + ": " + msg);
      return;
    }
    if (verbose)
      for (const std::string &t : m->tried) tried.push_back(label + ": " + t);
    if (m->supported) {
      row.cells[col] = fmt::format("{:.4f}", m->ms);
      row.configs[col] = m->config;
    } else {
      row.cells[col] = "unsupported";
      std::string note = row.name + ": " + m->unsupported_reason;
      if (seen_notes.insert(note).second) notes.push_back(note);
    }
  };
  auto new_row = [&](std::string name) -> Row & {
    rows.push_back({std::move(name), std::vector<std::string>(Ns.size(), "-"), std::vector<std::string>(Ns.size())});
    return rows.back();
  };

  // Rows are filled column by column; build them all first so references stay valid.
  rows.reserve(3 + 3 * sparsities.size());
  Row &r_i8 = new_row("dense cuBLASLt s8 -> s32");
  Row &r_i8o = new_row("dense cuBLASLt s8 -> s8 (f32 scale)");
  Row &r_f16 = new_row("dense cuBLAS(Lt) f16 (f32 acc)");
  std::vector<Row *> r_bell16, r_bell8, r_csr;
  for (double s : sparsities) {
    r_bell16.push_back(&new_row(fmt::format("cuSPARSE Blocked-ELL f16, V={} s={}", V, s)));
    r_bell8.push_back(&new_row(fmt::format("cuSPARSE Blocked-ELL s8, V={} s={}", V, s)));
    r_csr.push_back(&new_row(fmt::format("cuSPARSE CSR f16, V={} s={}", V, s)));
  }

  std::vector<VectorPattern> patterns;
  for (size_t si = 0; si < sparsities.size(); ++si)
    patterns.push_back(random_vector_pattern(M, K, V, sparsities[si], 1000 + si));

  for (size_t ni = 0; ni < Ns.size(); ++ni) {
    int64_t N = Ns[ni];
    std::string n = fmt::format("N={}", N);
    add(r_i8, ni, r_i8.name + " " + n, dense_cublaslt_i8(M, N, K, opts));
    add(r_i8o, ni, r_i8o.name + " " + n, dense_cublaslt_i8_i8out(M, N, K, 1.0f / 4096, opts));
    add(r_f16, ni, r_f16.name + " " + n, dense_cublas_f16(M, N, K, opts));
    for (size_t si = 0; si < sparsities.size(); ++si) {
      const VectorPattern &p = patterns[si];
      add(*r_bell16[si], ni, r_bell16[si]->name + " " + n,
          cusparse_spmm_blocked_ell_smallest(M, K, N, p, SpDtype::f16, {8, 16, 32}, opts));
      add(*r_bell8[si], ni, r_bell8[si]->name + " " + n,
          cusparse_spmm_blocked_ell_smallest(M, K, N, p, SpDtype::i8, {8, 16, 32}, opts));
      add(*r_csr[si], ni, r_csr[si]->name + " " + n, cusparse_spmm_csr_f16(M, K, N, p, opts));
    }
  }

  std::printf("GPU: %s; %s; %s\n\n", dev->c_str(), library_versions().c_str(), utc_now().c_str());
  std::printf("Vendor baselines, M = K = %lld, median of %d runs after %d warm-up (CUDA events), ms:\n\n",
              (long long)M, opts.timing.reps, opts.timing.warmup);
  std::printf("| contender |");
  for (int64_t N : Ns) std::printf(" N=%lld |", (long long)N);
  std::printf(" fastest configuration |\n| --- |");
  for (size_t i = 0; i < Ns.size(); ++i) std::printf(" --- |");
  std::printf(" --- |\n");
  for (const Row &r : rows) {
    std::printf("| %s |", r.name.c_str());
    for (const std::string &c : r.cells) std::printf(" %s |", c.c_str());
    // One configuration for every N: said once; otherwise "N=256: ...; N=512: ...".
    std::set<std::string> distinct(r.configs.begin(), r.configs.end());
    std::string cfg;
    if (distinct.size() == 1) cfg = *distinct.begin();
    else
      for (size_t i = 0; i < Ns.size(); ++i)
        if (!r.configs[i].empty()) cfg += (cfg.empty() ? "" : "; ") + fmt::format("N={}: {}", Ns[i], r.configs[i]);
    std::printf(" %s |\n", cfg.c_str());
  }
  if (!notes.empty()) {
    std::printf("\nUnsupported:\n");
    for (const std::string &n : notes) std::printf("- %s\n", n.c_str());
  }
  if (!tried.empty()) {
    std::printf("\nEvery configuration tried:\n");
    for (const std::string &t : tried) std::printf("- %s\n", t.c_str());
  }
  if (!errors.empty()) {
    std::printf("\nErrors:\n");
    for (const std::string &e : errors) std::printf("- %s\n", e.c_str());
    return 1;
  }
  return 0;
}
