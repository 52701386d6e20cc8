# The torch op at out_transposed=True (y = x W^T, tokens x out): a +ccol spec (the kernel writes
# y itself) against the row-major spec (the C ABI writes C into its workspace and transposes).
import sys, numpy as np, torch
sys.path.insert(0, "python")
import magicube, magicube.torch as mt
torch.manual_seed(0)
rng = np.random.default_rng(0)
m, k = 4096, 4096
for sp in (0.7,):
    w = torch.randn(m, k)
    q, ws = mt.prune_and_quantize(w, sp, 8)
    for n in (16, 512, 2048):
        x = torch.randn(n, k, device="cuda")
        xq, xs = mt.quantize_per_token(x)
        res = {}
        for tag, spec in (("row", "spmm.s8xs8.v8.bf16+rc.sm_90"), ("ccol", "spmm.s8xs8.v8.bf16+rc+ccol.sm_90")):
            p = magicube.pack_weight(q.numpy(), spec, n=n)
            packed = torch.from_numpy(p.blob.copy()).cuda()
            wsc = ws.cuda()
            f = lambda: torch.ops.magicube.spmm(packed, p.header_list, xq, p.op.spec, p.op.candidate, True, True, 1.0, wsc, xs, None)
            y = f(); torch.cuda.synchronize()
            res[tag] = (f, y)
        assert torch.equal(res["row"][1], res["ccol"][1]), "outputs differ"
        for rep in range(2):
            for tag in ("row", "ccol"):
                f = res[tag][0]
                for _ in range(10): f()
                g = torch.cuda.CUDAGraph()
                with torch.cuda.graph(g):
                    for _ in range(20): f()
                torch.cuda.synchronize()
                e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                e0.record(); g.replay(); e1.record(); torch.cuda.synchronize()
                print(f"s={sp} N={n} {tag}: {e0.elapsed_time(e1) / 20 * 1000:.1f} us a call (20 calls in a CUDA graph, L2 warm)", flush=True)
