"""Per call: quantize_per_token and SparseLinear (quantize + op), host-only and with the GPU
(200 calls after 20, no sync inside the loop), K = 4096, N = 1 / 16 / 256 / 2048."""
import sys, time
import torch
import magicube.torch as mt

torch.manual_seed(0)
k = 4096
for m in (4096, 11008):
    w = torch.randn(m, k, device="cuda") / k ** 0.5
    bias = torch.randn(m, device="cuda")
    for n in (1, 16, 256, 2048):
        layer = mt.SparseLinear.from_dense(w, bias, sparsity=0.7, v=8, n_hint=n)
        x = torch.randn(n, k, device="cuda")
        xb = x.to(torch.bfloat16)
        cases = [("quantize f32", lambda: mt.quantize_per_token(x)), ("quantize bf16", lambda: mt.quantize_per_token(xb)),
                 ("layer(x) f32", lambda: layer(x)), ("layer(x) bf16", lambda: layer(xb))]
        for name, f in cases:
            if m != 4096 and name.startswith("quantize"):
                continue
            for _ in range(20): f()
            torch.cuda.synchronize()
            t = time.perf_counter()
            for _ in range(200): f()
            host = (time.perf_counter() - t) / 200 * 1e6
            torch.cuda.synchronize()
            total = (time.perf_counter() - t) / 200 * 1e6
            print(f"{sys.argv[1]} {m}x{k} N={n} {name:14s} host {host:7.1f} us/call, with the GPU {total:7.1f} us/call", flush=True)
