"""The allow_dense layer at N = 2048 (example timing: events around each call, synced)."""
import statistics, sys
import torch
import magicube.torch as mt


def time_ms(fn, warmup=5, repeat=20):
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(repeat):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record(); fn(); b.record(); b.synchronize()
        times.append(a.elapsed_time(b))
    return statistics.median(times)


torch.manual_seed(0)
for m, k in ((4096, 4096), (11008, 4096)):
    w = torch.randn(m, k, device="cuda") / k ** 0.5
    bias = torch.randn(m, device="cuda")
    x = torch.randn(2048, k, device="cuda")
    layer = mt.SparseLinear.from_dense(w, bias, sparsity=0.7, v=8, allow_dense=True, n_hint=2048)
    xq, xs = mt.quantize_per_token(x)
    op = lambda: torch.ops.magicube.spmm(layer.packed, list(layer.header), xq, layer.spec, layer.candidate, True, True,
                                         1.0, layer.weight_scale, xs, layer.bias)
    print(f"{sys.argv[1]} {m}x{k} N=2048 route {layer.route}: layer {time_ms(lambda: layer(x)):.4f} ms, "
          f"quantize {time_ms(lambda: mt.quantize_per_token(x)):.4f}, op {time_ms(op):.4f}, layer again {time_ms(lambda: layer(x)):.4f}", flush=True)
    if sys.argv[1] == "new" and m == 4096:
        with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA]) as prof:
            for _ in range(3):
                layer(x)
            torch.cuda.synchronize()
        print(prof.key_averages().table(sort_by="cuda_time_total", row_limit=12), flush=True)
