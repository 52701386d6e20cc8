"""Decode layers as a model runs them in a CUDA graph: 16 distinct layers (their weights do not
fit the L2 together) applied to one input, replayed; per layer. SparseLinear (bf16 in, bf16 out:
quantize_rows + spmm) against torch's bf16 F.linear captured the same way."""
import statistics
import torch
import magicube.torch as mt


def per_layer_us(fn, layers, reps=20):
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        fn()
    torch.cuda.current_stream().wait_stream(s)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        fn()
    for _ in range(3):
        g.replay()
    torch.cuda.synchronize()
    times = []
    for _ in range(reps):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record(); g.replay(); b.record(); b.synchronize()
        times.append(a.elapsed_time(b) * 1000 / layers)
    return statistics.median(times)


torch.manual_seed(0)
L = 16
for m, k in ((4096, 4096), (11008, 4096)):
    ws = [torch.randn(m, k, device="cuda") / k ** 0.5 for _ in range(L)]
    for sp in (0.5, 0.7):
        layers = [mt.SparseLinear.from_dense(w, None, sparsity=sp, v=8, n_hint=16) for w in ws]
        wb = [w.to(torch.bfloat16) for w in ws]
        for n in (1, 16):
            x = torch.randn(n, k, device="cuda", dtype=torch.bfloat16)
            t_sparse = per_layer_us(lambda: [l(x) for l in layers], L)
            t_bf16 = per_layer_us(lambda: [torch.nn.functional.linear(x, w) for w in wb], L)
            print(f"{m}x{k} s={sp} N={n}: SparseLinear {t_sparse:6.2f} us/layer, bf16 F.linear {t_bf16:6.2f} us/layer, "
                  f"ratio {t_bf16 / t_sparse:.2f}x  (routes {set(l.route for l in layers)})", flush=True)
        del layers
    del ws
