"""Host time per call of the torch op and layer (no sync inside the loop), and a cProfile of the op."""
import cProfile, pstats, sys, time, io
import torch
import magicube.torch as mt

dev = "cuda"
torch.manual_seed(0)
m = k = 4096
w = torch.randn(m, k, device=dev) / k ** 0.5
bias = torch.randn(m, device=dev)
for allow in (False, "force"):
    layer = mt.SparseLinear.from_dense(w, bias, sparsity=0.7, v=8, allow_dense=allow, n_hint=16)
    for n in (1, 16, 512):
        x = torch.randn(n, k, device=dev)
        xq, xs = mt.quantize_per_token(x)
        def op():
            return torch.ops.magicube.spmm(layer.packed, list(layer.header), xq, layer.spec, layer.candidate, True, True,
                                           1.0, layer.weight_scale, xs, layer.bias)
        for f, name in ((op, "op"), (lambda: layer(x), "layer"), (lambda: mt.quantize_per_token(x), "quantize")):
            for _ in range(20): f()
            torch.cuda.synchronize()
            t = time.perf_counter()
            for _ in range(300): f()
            host = (time.perf_counter() - t) / 300 * 1e6
            torch.cuda.synchronize()
            total = (time.perf_counter() - t) / 300 * 1e6
            print(f"{layer.route:6} N={n:4} {name:8} host {host:7.1f} us/call, with the GPU {total:7.1f} us/call")
        if n == 16:
            pr = cProfile.Profile(); pr.enable()
            for _ in range(300): op()
            pr.disable(); torch.cuda.synchronize()
            s = io.StringIO(); pstats.Stats(pr, stream=s).sort_stats("tottime").print_stats(12); print(s.getvalue()[:3000])
