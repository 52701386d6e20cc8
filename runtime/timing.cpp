#include "runtime/timing.h"

#include <algorithm>

#include "support/log.h"

namespace magicube {

llvm::Expected<Timing> time_launches(const Context &ctx, llvm::function_ref<llvm::Error()> launch,
                                     const TimingOptions &opts) {
  if (opts.repeat < 1) return llvm::createStringError(llvm::inconvertibleErrorCode(), "timing: repeat must be >= 1");
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
    else log().warn("timing: no {}-byte filler ({}); host launch latency may be timed", opts.filler_bytes,
                    llvm::toString(f.takeError()));
  }
  DeviceBuffer flush;
  if (opts.flush_bytes > 0) {
    auto f = DeviceBuffer::allocate(opts.flush_bytes);
    if (!f) return f.takeError();
    flush = std::move(*f);
  }
  for (int i = 0; i < opts.warmup; ++i)
    if (auto e = launch()) return e;
  if (auto e = ctx.synchronize()) return e;
  if (filler.bytes() > 0)
    if (auto e = filler.memset(0)) return e;
  for (int i = 0; i < opts.repeat; ++i) {
    if (flush.bytes() > 0)
      if (auto e = flush.memset(uint8_t(i))) return e;
    if (auto e = start[i].record(nullptr)) return e;
    if (auto e = launch()) return e;
    if (auto e = stop[i].record(nullptr)) return e;
  }
  if (auto e = ctx.synchronize()) return e;
  Timing t;
  for (int i = 0; i < opts.repeat; ++i) {
    auto x = elapsed_ms(start[i], stop[i]);
    if (!x) return x.takeError();
    t.samples_ms.push_back(*x);
  }
  std::vector<double> s = t.samples_ms;
  std::sort(s.begin(), s.end());
  t.median_ms = s.size() % 2 ? s[s.size() / 2] : (s[s.size() / 2 - 1] + s[s.size() / 2]) / 2;
  t.min_ms = s.front();
  t.max_ms = s.back();
  return t;
}

size_t l2_flush_bytes(const Context &ctx) {
  return std::max<size_t>(size_t(64) << 20, 2 * size_t(ctx.l2_bytes()));
}

}  // namespace magicube
