"""GPU time per call of torch.ops.magicube.quantize_rows (20 calls captured in a CUDA graph,
replayed 50 times; per call = replay time / 20), and its bits against the library's CPU path."""
import sys
import torch
import magicube.torch  # noqa: F401  (registers the ops)

torch.manual_seed(0)
for rows, cols in ((1, 4096), (16, 4096), (2048, 4096), (8192, 4096), (2048, 14336)):
    for dt in (torch.float32, torch.bfloat16, torch.float16):
        x = torch.randn(rows, cols, device="cuda").to(dt)
        q, s = torch.ops.magicube.quantize_rows(x)
        qc, sc = torch.ops.magicube.quantize_rows(x.cpu())
        same = torch.equal(q.cpu(), qc) and torch.equal(s.cpu().view(torch.int32), sc.view(torch.int32))
        g = torch.cuda.CUDAGraph()
        st = torch.cuda.Stream()
        with torch.cuda.stream(st):
            for _ in range(3): torch.ops.magicube.quantize_rows(x)
            torch.cuda.synchronize()
            with torch.cuda.graph(g, stream=st):
                for _ in range(20): torch.ops.magicube.quantize_rows(x)
        torch.cuda.synchronize()
        for _ in range(5): g.replay()
        torch.cuda.synchronize()
        ts = []
        for _ in range(30):
            a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            a.record(); g.replay(); b.record(); torch.cuda.synchronize()
            ts.append(a.elapsed_time(b) * 1000 / 20)
        ts.sort()
        mb = rows * cols * (x.element_size() + 1) / 1e6
        print(f"{sys.argv[1]} {rows}x{cols} {str(dt)[6:]:9s} {ts[15]:7.2f} us/call (min {ts[0]:.2f}), {mb / ts[15]:.2f} TB/s, equal to the CPU path: {same}", flush=True)
