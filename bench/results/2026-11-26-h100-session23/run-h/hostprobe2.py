"""Where the torch op's host time per call goes (300 calls each, no sync inside the loop)."""
import time
from ctypes import byref, c_size_t
import torch
import magicube.torch as mt
from magicube import _lib
from magicube.torch import _op, _dense, _vec, _device_index, _spmm_cuda

dev = "cuda"
torch.manual_seed(0)
m = k = 4096
w = torch.randn(m, k, device=dev) / k ** 0.5
bias = torch.randn(m, device=dev)
layer = mt.SparseLinear.from_dense(w, bias, sparsity=0.7, v=8, n_hint=16)
n = 16
x = torch.randn(n, k, device=dev)
xq, xs = mt.quantize_per_token(x)
hdr = list(layer.header)
args = (layer.packed, hdr, xq, layer.spec, layer.candidate, True, True, 1.0, layer.weight_scale, xs, layer.bias)
h = _lib.PackedHeader.from_list(hdr)
op = _op(layer.spec, layer.candidate, 0, h.route == 1)
op = op[0] if isinstance(op, tuple) else op
L = _lib.lib()
out = torch.empty((n, m), dtype=torch.bfloat16, device=dev)
bd = _dense(xq, _lib.COL_MAJOR, "b")
cd = _lib.Dense(out.data_ptr(), op.output_dtype, _lib.COL_MAJOR)
ws_bytes = c_size_t(0)
_lib.check(L.magicube_spmm_workspace_bytes(op._handle, byref(h), byref(bd), n, byref(cd), byref(ws_bytes)))
ws = torch.empty(max(1, ws_bytes.value), dtype=torch.uint8, device=dev)
epi = _lib.Epilogue(1.0, layer.weight_scale.data_ptr(), xs.data_ptr(), layer.bias.data_ptr())
stream = torch.cuda.current_stream(xq.device).cuda_stream
pk = layer.packed.data_ptr()
print("spec", layer.spec, "workspace", ws_bytes.value)
cases = [
    ("torch op (dispatcher + _spmm_cuda)", lambda: torch.ops.magicube.spmm(*args)),
    ("_spmm_cuda direct", lambda: _spmm_cuda(*args)),
    ("C ABI magicube_spmm_run only", lambda: L.magicube_spmm_run(op._handle, byref(h), pk, byref(bd), n, byref(cd), byref(epi),
                                                                 ws.data_ptr() if ws_bytes.value else None, ws_bytes.value, stream or None)),
    ("C ABI workspace_bytes only", lambda: L.magicube_spmm_workspace_bytes(op._handle, byref(h), byref(bd), n, byref(cd), byref(ws_bytes))),
    ("PackedHeader.from_list", lambda: _lib.PackedHeader.from_list(hdr)),
    ("_op lookup", lambda: _op(layer.spec, layer.candidate, 0, False)),
    ("op.output_dtype", lambda: op.output_dtype),
    ("torch.empty out", lambda: torch.empty((n, m), dtype=torch.bfloat16, device=dev)),
    ("_vec x3", lambda: (_vec(layer.weight_scale, xq.device), _vec(xs, xq.device), _vec(layer.bias, xq.device))),
    ("current_stream", lambda: torch.cuda.current_stream(xq.device).cuda_stream),
    ("b.contiguous + _device_index", lambda: (xq.contiguous(), _device_index(xq))),
    ("_dense + Dense", lambda: (_dense(xq, _lib.COL_MAJOR, "b"), _lib.Dense(out.data_ptr(), 3, _lib.COL_MAJOR))),
    ("layer(x)", lambda: layer(x)),
    ("quantize_per_token", lambda: mt.quantize_per_token(x)),
]
for rep in range(2):
    for name, f in cases:
        for _ in range(30): f()
        torch.cuda.synchronize()
        t = time.perf_counter()
        for _ in range(300): f()
        host = (time.perf_counter() - t) / 300 * 1e6
        torch.cuda.synchronize()
        total = (time.perf_counter() - t) / 300 * 1e6
        print(f"{name:40s} host {host:7.1f} us/call, with the GPU {total:7.1f} us/call")
