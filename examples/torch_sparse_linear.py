#!/usr/bin/env python3
"""A quantized sparse linear layer in PyTorch with Magicube JIT (GPU only).

The weight (out x in) is pruned to V = 8 x 1 vectors at 70 % sparsity (in each block of 8
output rows, the 30 % of input columns with the largest vector norms stay) and quantized to
int8 with one scale per output channel; activations are quantized per token to int8; the
kernel computes the exact int32 product X_q W_q^T and its fused epilogue writes
bf16(acc * w_scale[o] * x_scale[t] + bias[o]), N x out, row-major.

1. Checks the layer against a torch reference computed from the same integers (exact int64
   product, the same double arithmetic, one rounding to bf16), also under
   torch.compile(fullgraph=True).
2. Times it against torch._int_mm (dense int8 -> int32) and a bf16 matmul (F.linear) at
   4096x4096, 11008x4096 and 4096x11008 (out x in) for N = 1, 2, 4, ..., 2048 tokens, and
   the layer made with allow_dense=True and n_hint=N: the dispatch then runs it as a dense int8
   GEMM (cuBLASLt, the same fused epilogue, the same bits) where that is faster for the weight
   and N, and `route` says which it chose.

    pip install ./python torch      # then
    python examples/torch_sparse_linear.py [--quick] [--csv out.csv]

Without a GPU it prints one line, "no GPU: <reason>", and exits 0.
"""
import argparse
import statistics
import sys

import torch

import magicube
import magicube.torch as mt


def check(layer, lin, x):
    """The layer's output against the reference from the same integers; returns the max error in bf16 ulps."""
    y = layer(x)
    xq, xs = mt.quantize_per_token(x.reshape(-1, lin.in_features))
    wq, ws = mt.prune_and_quantize(lin.weight, 0.7, 8)
    acc = xq.double() @ wq.double().T  # exact: |sums| < 2^53
    ref = acc * ws.double()[None, :] * xs.double()[:, None] + lin.bias.double()[None, :]
    ref = ref.reshape(y.shape)
    # One rounding to bf16 from the double: within half an ulp (2^-9 relative), save double-rounding ties.
    rel = ((y.double() - ref).abs() / ref.abs().clamp(min=1e-30)).max().item()
    exact = (y == ref.to(torch.bfloat16)).float().mean().item()
    return rel, exact, y


def time_ms(fn, warmup=5, repeat=20):
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(repeat):
        start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        stop.record()
        stop.synchronize()
        times.append(start.elapsed_time(stop))
    return statistics.median(times)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="N = 1, 16, 256, 2048 only")
    parser.add_argument("--csv", help="also write the timings to this CSV file")
    args = parser.parse_args()

    ok, why = magicube.gpu_available()
    if not ok or not torch.cuda.is_available():
        print(why or "no GPU: torch sees no CUDA device")
        return 0
    torch.manual_seed(0)
    dev = torch.device("cuda")
    print(f"magicube {magicube.__version__}, torch {torch.__version__}, {torch.cuda.get_device_name()}")

    # ---- 1. correctness ----
    lin = torch.nn.Linear(1024, 768, device=dev)
    layer = mt.SparseLinear.from_dense(lin.weight, lin.bias, sparsity=0.7, v=8)
    x = torch.randn(3, 37, 1024, device=dev)
    rel, exact, y = check(layer, lin, x)
    print(f"check: {layer.spec}: max relative error {rel:.2e} (bf16 rounding: <= 2^-9 = {2 ** -9:.2e}), "
          f"{100 * exact:.3f} % bit-equal to the reference rounded once")
    if rel > 2 ** -8:
        print("FAIL: the layer does not match the reference")
        return 1
    compiled = torch.compile(layer, fullgraph=True)
    yc = compiled(x)
    print(f"check: torch.compile(fullgraph=True): max |difference| to eager {(yc.float() - y.float()).abs().max():.3g}")

    # ---- 2. timing ----
    ns = [1, 16, 256, 2048] if args.quick else [2 ** i for i in range(12)]
    rows = []
    header = (f"{'out x in':>12} {'N':>5} {'sparse op':>10} {'layer':>9} {'allowed':>9} {'route':>6} {'_int_mm':>9} "
              f"{'bf16 mm':>9}  (ms; layer = quantize x + op; allowed: allow_dense=True, n_hint=N)")
    print(header)
    for m, k in ((4096, 4096), (11008, 4096), (4096, 11008)):
        w = torch.randn(m, k, device=dev) / k ** 0.5
        bias = torch.randn(m, device=dev)
        layer = mt.SparseLinear.from_dense(w, bias, sparsity=0.7, v=8)
        wq_t = mt.prune_and_quantize(w, 0.7, 8)[0].t()  # K x M, column-major (the dense int8 weight)
        w_bf16 = w.to(torch.bfloat16)
        for n in ns:
            x = torch.randn(n, k, device=dev)
            xq, xs = mt.quantize_per_token(x)
            xb = x.to(torch.bfloat16)

            def op():
                return torch.ops.magicube.spmm(layer.packed, list(layer.header), xq, layer.spec, layer.candidate,
                                               True, True, 1.0, layer.weight_scale, xs, layer.bias)

            t_op = time_ms(op)
            t_layer = time_ms(lambda: layer(x))
            allowed = mt.SparseLinear.from_dense(w, bias, sparsity=0.7, v=8, allow_dense=True, n_hint=n)
            t_allowed = time_ms(lambda: allowed(x))
            try:
                t_int = time_ms(lambda: torch._int_mm(xq, wq_t))
            except RuntimeError:
                t_int = float("nan")  # _int_mm refuses small N on some versions
            t_bf16 = time_ms(lambda: torch.nn.functional.linear(xb, w_bf16))
            rows.append((m, k, n, t_op, t_layer, t_allowed, allowed.route, t_int, t_bf16))
            print(f"{f'{m}x{k}':>12} {n:>5} {t_op:>10.4f} {t_layer:>9.4f} {t_allowed:>9.4f} {allowed.route:>6} "
                  f"{t_int:>9.4f} {t_bf16:>9.4f}")
    if args.csv:
        with open(args.csv, "w") as f:
            f.write("out,in,n,sparse_op_ms,layer_ms,allowed_layer_ms,allowed_route,int_mm_ms,bf16_mm_ms\n")
            for r in rows:
                f.write(",".join(str(v) for v in r) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
