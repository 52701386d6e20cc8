// perf_probe: times SpMM kernels of the performance targets' shapes (M=K=4096, V=8,
// uniformly random vectors) after checking one run bit-exact; a developer's probe between
// magicube-bench runs. Usage: perf_probe [candidate] [bsn] [pf 0|1] [stages 0|2|3|4]
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "compiler/planner.h"
#include "runtime/kernel.h"
#include "runtime/reference.h"
#include "runtime/synthetic.h"
#include "tests/test_util.h"

using namespace magicube;

int main(int argc, char **argv) {
  int cand = argc > 1 ? atoi(argv[1]) : 0, bsn = argc > 2 ? atoi(argv[2]) : 128, pf = argc > 3 ? atoi(argv[3]) : 1;
  const int stages = argc > 4 ? atoi(argv[4]) : 0;
  if (!no_gpu_reason().empty()) { printf("no GPU: %s\n", no_gpu_reason().c_str()); return 2; }
  auto ctx = Context::create(0);
  if (!ctx) { printf("%s\n", llvm::toString(ctx.takeError()).c_str()); return 1; }
  std::mt19937_64 rng(7);
  printf("%-8s %-4s %-5s %-10s %-8s %s\n", "prec", "N", "s", "ms", "TOPS", "kernel");
  const std::pair<ElemType, ElemType> precs[] = {{{8, true}, {8, true}}, {{8, true}, {4, true}}, {{4, true}, {4, true}},
                                                 {{16, true}, {8, true}}, {{16, true}, {16, true}}};
  for (auto [l, r] : precs)
    for (int64_t n : {256, 512})
      for (double s : {0.7, 0.9, 0.98}) {
        if (const char *only = std::getenv("PROBE_ONLY")) {  // e.g. "8,8,256,0.9"
          char want[64];
          snprintf(want, sizeof want, "%d,%d,%lld,%.2g", l.bits, r.bits, (long long)n, s);
          if (std::string(only) != want) continue;
        }
        VectorSparse a = synthetic_sparse(rng, 4096, 4096, s, 8, [&] { return magicube::testing::draw(rng, l); });
        OutType out = a.max_block_length() <= max_exact_k(l, r) ? OutType::Int32 : OutType::Int64;
        OpSpec spec{OpKind::SpMM, l, r, 8, bsn, bool(pf), out, 90};
        spec.stages = stages;
        auto ps = plan_candidates(spec);
        if (!ps) { printf("%s\n", llvm::toString(ps.takeError()).c_str()); return 1; }
        const Plan &p = (*ps)[std::min<size_t>(cand, ps->size() - 1)];
        std::vector<int64_t> b = magicube::testing::random_dense(rng, 4096 * n, r);
        auto layout = build_srbcrs(a, p);
        auto pa = pack_lhs(*layout, p);
        auto pb = pack_rhs(b, 4096, n, p);
        auto da = upload(*pa, *layout);
        auto db = upload(*pb);
        size_t eb = out == OutType::Int32 ? 4 : 8;
        auto c = DeviceBuffer::allocate(4096 * n * eb);
        auto k = Kernel::get(*ctx, p);
        if (!k) { printf("%s\n", llvm::toString(k.takeError()).c_str()); return 1; }
        if (auto e = (*k)->launch(*da, *db, c->ptr(), nullptr)) { printf("%s\n", llvm::toString(std::move(e)).c_str()); return 1; }
        (void)ctx->synchronize();
        std::vector<int64_t> want = reference_spmm(a, b, n);
        bool exact = true;
        if (eb == 4) { auto h = c->download<int32_t>(); for (size_t i = 0; i < want.size(); ++i) exact &= (*h)[i] == want[i]; }
        else { auto h = c->download<int64_t>(); for (size_t i = 0; i < want.size(); ++i) exact &= (*h)[i] == want[i]; }
        std::vector<float> ms;
        auto e0 = Event::create(), e1 = Event::create();
        for (int i = 0; i < 10; ++i) (void)(*k)->launch(*da, *db, c->ptr(), nullptr);
        for (int i = 0; i < 30; ++i) {
          (void)e0->record();
          (void)(*k)->launch(*da, *db, c->ptr(), nullptr);
          (void)e1->record();
          ms.push_back(*elapsed_ms(*e0, *e1));
        }
        std::sort(ms.begin(), ms.end());
        double med = ms[ms.size() / 2];
        double tops = 2.0 * a.num_vectors() * 8 * n / (med * 1e-3) / 1e12;
        printf("L%d-R%-3d %-4lld %-5.2f %-10.4f %-8.1f %s%s\n", l.bits, r.bits, (long long)n, s, med, tops,
               p.kernel_name().c_str(), exact ? "" : "  NOT EXACT");
        fflush(stdout);
      }
  return 0;
}
