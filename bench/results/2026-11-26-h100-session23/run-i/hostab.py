"""Host time per call of the torch op and SparseLinear (300 calls, no sync inside the loop)."""
import sys, time
import torch
import magicube.torch as mt

torch.manual_seed(0)
for m, k, n in ((4096, 4096, 16), (4096, 4096, 1), (11008, 4096, 16)):
    w = torch.randn(m, k, device="cuda") / k ** 0.5
    bias = torch.randn(m, device="cuda")
    layer = mt.SparseLinear.from_dense(w, bias, sparsity=0.7, v=8, n_hint=n)
    x = torch.randn(n, k, device="cuda")
    xq, xs = mt.quantize_per_token(x)
    args = (layer.packed, list(layer.header), xq, layer.spec, layer.candidate, True, True, 1.0, layer.weight_scale, xs,
            layer.bias)
    for name, f in (("torch op", lambda: torch.ops.magicube.spmm(*args)), ("layer(x)", lambda: layer(x))):
        for _ in range(30): f()
        torch.cuda.synchronize()
        t = time.perf_counter()
        for _ in range(300): f()
        host = (time.perf_counter() - t) / 300 * 1e6
        torch.cuda.synchronize()
        total = (time.perf_counter() - t) / 300 * 1e6
        print(f"{sys.argv[1]} {m}x{k} N={n} {name:9s} host {host:6.1f} us/call, with the GPU {total:6.1f} us/call", flush=True)
