"""PyTorch integration: the custom ops magicube::spmm, magicube::sddmm, magicube::quantize_rows and
magicube::linear (the two before it in one call: SparseLinear's forward) (torch.library, with
fake implementations, so torch.compile(fullgraph=True) traces them) and SparseLinear, a
quantized vector-sparse linear layer. Inference only (no autograd formulas).

    import magicube.torch as mt
    layer = mt.SparseLinear.from_dense(linear.weight, linear.bias, sparsity=0.7, v=8).cuda()
    y = torch.compile(layer, fullgraph=True)(x)        # x: (..., K) float, y: (..., M) bf16

The ops take the packed weight as a uint8 tensor on the device and its header (32 ints, see
magicube.Packed.header_list); they run on the current CUDA stream, allocate through torch's
caching allocator, never synchronize, and can be captured in a CUDA graph once run once.
"""
import threading
from ctypes import byref, c_size_t

import torch

from . import _api, _lib
from ._lib import Error, check

__all__ = ["SparseLinear", "spmm", "sddmm", "quantize_per_token", "prune_and_quantize"]

_OUT_DTYPES = {"i32": torch.int32, "i64": torch.int64, "f32": torch.float32, "f16": torch.float16,
               "bf16": torch.bfloat16}
_IN_DTYPES = {torch.int8: _lib.INT8, torch.uint8: _lib.UINT8, torch.int16: _lib.INT16, torch.int32: _lib.INT32}
if hasattr(torch, "uint16"):
    _IN_DTYPES[torch.uint16] = _lib.UINT16
# header fields (magicube_packed_header): rows 4, cols 5, v 6, num_slots 9, num_vectors 10, route 25
_ROWS, _COLS, _V, _SLOTS, _VECTORS, _ROUTE = 4, 5, 6, 9, 10, 25


def _out_dtype(spec):
    try:
        return _OUT_DTYPES[spec.split(".")[-2].split("+")[0]]
    except (IndexError, KeyError):
        raise Error(f"spec: cannot read the output type of '{spec}'") from None


_ops, _ops_lock = {}, threading.Lock()
# Per-call host work the ops repeat with the same values (session 23, H100 host: 58 us of a
# decode call's 62 us in _spmm_cuda were header conversion, the workspace query, the stream
# and scale lookups, around 14 us in the C ABI): the header structures by header values and
# the workspace sizes by their arguments (both pure functions of them: the C ABI's layouts
# read the operands' alignment to 16 and 256 bytes, so the keys hold their addresses mod 256;
# a size too small for a run would be refused by name), each table bounded.
_headers, _ws_sizes, _CACHE_MAX = {}, {}, 4096


def _header(values):
    key = tuple(values)
    h = _headers.get(key)
    if h is None:
        h = _lib.PackedHeader.from_list(values)
        if len(_headers) >= _CACHE_MAX:
            _headers.clear()
        _headers[key] = h
    return h, key


def _workspace_bytes(query, key):
    size = _ws_sizes.get(key)
    if size is None:
        out = c_size_t(0)
        check(query(byref(out)))
        size = out.value
        if len(_ws_sizes) >= _CACHE_MAX:
            _ws_sizes.clear()
        _ws_sizes[key] = size
    return size


_raw_stream = getattr(torch._C, "_cuda_getCurrentRawStream", None)


def _stream(device_index):
    """The current CUDA stream's handle on a device (torch's raw accessor where it has one)."""
    if _raw_stream is not None:
        return _raw_stream(device_index)
    return torch.cuda.current_stream(device_index).cuda_stream


def _op(spec, candidate, device, dense=False):
    """The op of a packed weight's spec on a device; `dense`: its header says the dense route
    (a forced dense op: its cuBLASLt plan for each shape is made and timed once on the first
    run with that shape, unless the stream is being captured into a CUDA graph)."""
    key = (spec, candidate, device, dense)
    with _ops_lock:
        entry = _ops.get(key)
        if entry is None:
            op = _api.Op(spec, candidate=candidate, device=device, allow_dense="force" if dense else False)
            entry = _ops[key] = (op, op.output_dtype)
        return entry


def _dense(t, layout, name):
    if t.dtype not in _IN_DTYPES:
        raise Error(f"{name}: dtype {t.dtype} (allowed: {', '.join(str(d) for d in _IN_DTYPES)})")
    return _lib.Dense(t.data_ptr(), _IN_DTYPES[t.dtype], layout)


def _vec(t, device):
    if t is None:
        return None, None
    if not (t.dtype == torch.float32 and t.device == device and t.is_contiguous()):
        t = t.to(device=device, dtype=torch.float32).contiguous()
    return t, t.data_ptr()


def _device_index(t):
    return t.device.index if t.device.index is not None else torch.cuda.current_device()


_lib_def = torch.library.Library("magicube", "DEF")
_lib_def.define("spmm(Tensor packed, int[] header, Tensor b, str spec, int candidate, bool b_transposed, "
                "bool out_transposed, float alpha, Tensor? row_scale, Tensor? col_scale, Tensor? bias) -> Tensor")
_lib_def.define("sddmm(Tensor packed, int[] header, Tensor a, Tensor b, str spec, int candidate, bool a_transposed, "
                "bool b_transposed, bool srbcrs, float alpha, Tensor? row_scale, Tensor? col_scale) -> Tensor")
_lib_def.define("quantize_rows(Tensor x) -> (Tensor, Tensor)")
_lib_def.define("linear(Tensor packed, int[] header, Tensor x, str spec, int candidate, Tensor w_scale, "
                "Tensor? bias) -> Tensor")


def _same_device(t, like, name):
    if t.device != like.device:
        raise Error(f"{name}: on {t.device}, but the operands are on {like.device} (move it with .to())")


def _spmm_cuda(packed, header, b, spec, candidate, b_transposed, out_transposed, alpha, row_scale, col_scale, bias):
    _same_device(packed, b, "packed")
    h, hkey = _header(header)
    m = h.rows
    b = b.contiguous()
    n = b.shape[0] if b_transposed else b.shape[1]
    dev = _device_index(b)
    op, out_dtype = _op(spec, candidate, dev, h.route == 1)
    out = torch.empty((n, m) if out_transposed else (m, n), dtype=_out_dtype(spec), device=b.device)
    b_layout = _lib.COL_MAJOR if b_transposed else _lib.ROW_MAJOR
    c_layout = _lib.COL_MAJOR if out_transposed else _lib.ROW_MAJOR
    bd = _dense(b, b_layout, "b")
    cd = _lib.Dense(out.data_ptr(), out_dtype, c_layout)
    L = _lib.lib()
    ws_bytes = _workspace_bytes(lambda out: L.magicube_spmm_workspace_bytes(op._handle, byref(h), byref(bd), n, byref(cd), out),
                                ("spmm", op._handle.value, hkey, bd.dtype, b_layout, (bd.data or 0) % 256, n, out_dtype, c_layout,
                                 (cd.data or 0) % 256))
    ws = torch.empty(ws_bytes, dtype=torch.uint8, device=b.device) if ws_bytes else None
    rs, rsp = _vec(row_scale, b.device)
    cs, csp = _vec(col_scale, b.device)
    bs, bsp = _vec(bias, b.device)
    epi = _lib.Epilogue(alpha, rsp, csp, bsp)
    check(L.magicube_spmm_run(op._handle, byref(h), packed.data_ptr(), byref(bd), n, byref(cd), byref(epi),
                              ws.data_ptr() if ws is not None else None, ws_bytes, _stream(dev) or None))
    return out


def _spmm_fake(packed, header, b, spec, candidate, b_transposed, out_transposed, alpha, row_scale, col_scale, bias):
    m = header[_ROWS]
    n = b.shape[0] if b_transposed else b.shape[1]
    return b.new_empty((n, m) if out_transposed else (m, n), dtype=_out_dtype(spec))


def _sddmm_cuda(packed, header, a, b, spec, candidate, a_transposed, b_transposed, srbcrs, alpha, row_scale, col_scale):
    _same_device(packed, a, "packed")
    _same_device(b, a, "b")
    h, hkey = _header(header)
    a, b = a.contiguous(), b.contiguous()
    k = a.shape[0] if a_transposed else a.shape[1]
    dev = _device_index(a)
    op, _ = _op(spec, candidate, dev)
    count = (h.num_slots if srbcrs else h.num_vectors) * h.v
    out = torch.empty(count, dtype=_out_dtype(spec), device=a.device)
    a_layout = _lib.COL_MAJOR if a_transposed else _lib.ROW_MAJOR
    b_layout = _lib.COL_MAJOR if b_transposed else _lib.ROW_MAJOR
    ad = _dense(a, a_layout, "a")
    bd = _dense(b, b_layout, "b")
    L = _lib.lib()
    ws_bytes = _workspace_bytes(lambda out: L.magicube_sddmm_workspace_bytes(op._handle, byref(h), byref(ad), byref(bd), k, out),
                                ("sddmm", op._handle.value, hkey, ad.dtype, a_layout, (ad.data or 0) % 256, bd.dtype, b_layout,
                                 (bd.data or 0) % 256, k))
    ws = torch.empty(ws_bytes, dtype=torch.uint8, device=a.device) if ws_bytes else None
    rs, rsp = _vec(row_scale, a.device)
    cs, csp = _vec(col_scale, a.device)
    epi = _lib.Epilogue(alpha, rsp, csp, None)
    check(L.magicube_sddmm_run(op._handle, byref(h), packed.data_ptr(), byref(ad), byref(bd), k, out.data_ptr(),
                               _lib.SRBCRS if srbcrs else _lib.BCRS, byref(epi),
                               ws.data_ptr() if ws is not None else None, ws_bytes, _stream(dev) or None))
    return out


def _sddmm_fake(packed, header, a, b, spec, candidate, a_transposed, b_transposed, srbcrs, alpha, row_scale,
                col_scale):
    count = (header[_SLOTS] if srbcrs else header[_VECTORS]) * header[_V]
    return a.new_empty((count,), dtype=_out_dtype(spec))


# ---- per-token quantization: magicube::quantize_rows ------------------------------------------
# One kernel on CUDA (magicube_quantize_rows, include/magicube/magicube.h); elsewhere the same
# float32 arithmetic in torch ops: true divisions by tensors (torch's CUDA division by a Python
# number multiplies by its reciprocal instead), rint, a NaN row's scale the C ABI's NaN.
_FLOAT_DTYPES = {torch.float32: _lib.FLOAT32, torch.float16: _lib.FLOAT16, torch.bfloat16: _lib.BFLOAT16}
_SCALE_NAN = 0x7FFFFFFF


def _check_rows(x):
    if x.dim() != 2:
        raise Error(f"x: a matrix (tokens x features) is needed, got {x.dim()} dimensions")
    if x.dtype not in _FLOAT_DTYPES:
        raise Error(f"x: dtype {x.dtype} (allowed: float32, float16, bfloat16)")


def _quantize_rows_cuda(x):
    _check_rows(x)
    x = x.contiguous()
    rows, cols = x.shape
    q = torch.empty((rows, cols), dtype=torch.int8, device=x.device)
    s = torch.empty((rows,), dtype=torch.float32, device=x.device)
    dev = _device_index(x)
    xd = _lib.Dense(x.data_ptr(), _FLOAT_DTYPES[x.dtype], _lib.ROW_MAJOR)
    check(_lib.lib().magicube_quantize_rows(dev, byref(xd), rows, cols, q.data_ptr(), s.data_ptr(),
                                            _stream(dev) or None))
    return q, s


def _quantize_rows_ops(x):
    _check_rows(x)
    xf = x.float()
    amax = xf.abs().amax(dim=-1) if xf.shape[1] else xf.new_zeros(xf.shape[0])
    s = amax.clamp(min=1e-12).div(torch.full_like(amax, 127.0))
    s = torch.where(amax.isnan(), torch.tensor(_SCALE_NAN, dtype=torch.int32, device=x.device).view(torch.float32), s)
    t = torch.round(xf.div(s[:, None]))
    q = torch.nan_to_num(t, nan=0.0).clamp(-127, 127).to(torch.int8)
    return q, s


def _quantize_rows_fake(x):
    _check_rows(x)
    return x.new_empty(x.shape, dtype=torch.int8), x.new_empty((x.shape[0],), dtype=torch.float32)


# ---- SparseLinear's forward as one op: magicube::linear -----------------------------------------
# quantize_rows, then spmm with x's scales as col_scale (B = q as N x K, C column-major: y is
# tokens x M): the two ops' work in one call, so an eager layer crosses torch's dispatcher once
# (about 18 us of host time a crossing on the H100 host, bench/NOTES.md Session 23).
def _linear_cuda(packed, header, x, spec, candidate, w_scale, bias):
    q, s = _quantize_rows_cuda(x)
    return _spmm_cuda(packed, header, q, spec, candidate, True, True, 1.0, w_scale, s, bias)


def _linear_fake(packed, header, x, spec, candidate, w_scale, bias):
    _check_rows(x)
    return x.new_empty((x.shape[0], header[_ROWS]), dtype=_out_dtype(spec))


_lib_def.impl("spmm", _spmm_cuda, "CUDA")
_lib_def.impl("sddmm", _sddmm_cuda, "CUDA")
_lib_def.impl("quantize_rows", _quantize_rows_cuda, "CUDA")
_lib_def.impl("quantize_rows", _quantize_rows_ops, "CPU")
_lib_def.impl("linear", _linear_cuda, "CUDA")
_register_fake = getattr(torch.library, "register_fake", None) or torch.library.impl_abstract
_register_fake("magicube::spmm")(_spmm_fake)
_register_fake("magicube::sddmm")(_sddmm_fake)
_register_fake("magicube::quantize_rows")(_quantize_rows_fake)
_register_fake("magicube::linear")(_linear_fake)


def spmm(weight, b, *, b_transposed=False, out_transposed=False, alpha=1.0, row_scale=None, col_scale=None,
         bias=None):
    """torch.ops.magicube.spmm for a magicube.Packed weight (its blob copied to b's device once)."""
    return torch.ops.magicube.spmm(weight.device_blob(b), weight.header_list, b, weight.op.spec, weight.op.candidate,
                                   b_transposed, out_transposed, alpha, row_scale, col_scale, bias)


def sddmm(mask, a, b, *, a_transposed=False, b_transposed=True, srbcrs=False, alpha=1.0, row_scale=None,
          col_scale=None):
    """torch.ops.magicube.sddmm for a magicube.Packed mask; B defaults to N x K (b_transposed)."""
    return torch.ops.magicube.sddmm(mask.device_blob(a), mask.header_list, a, b, mask.op.spec, mask.op.candidate,
                                    a_transposed, b_transposed, srbcrs, alpha, row_scale, col_scale)


# ---- the layer --------------------------------------------------------------------------------


def quantize_per_token(x):
    """x (N x K float32, float16 or bfloat16) -> (int8 N x K, float32 scale N): symmetric, max |x|
    of each row to 127, in float32: scale = max(max |x|, 1e-12) / 127, q = clamp(rint(x / scale),
    -127, 127) (IEEE divisions, ties to even; a row with a NaN: scale NaN, q 0 where x / scale is
    NaN). torch.ops.magicube.quantize_rows: one kernel on CUDA, the same arithmetic in torch ops
    on the CPU."""
    return torch.ops.magicube.quantize_rows(x.detach())


def prune_and_quantize(weight, sparsity=0.7, v=8):
    """A float weight (M x K) pruned to V x 1 vectors (in each row-block, the round((1 -
    sparsity) * K) vectors of largest L2 norm stay) and quantized per output channel to int8
    (max |w| of each row to 127). Returns (int8 M x K, float32 scale M)."""
    w = weight.detach().float()
    m, k = w.shape
    pad = (-m) % v
    wp = torch.nn.functional.pad(w, (0, 0, 0, pad)).reshape(-1, v, k)
    norms = wp.norm(dim=1)  # (blocks, K)
    keep = max(0, min(k, round((1.0 - sparsity) * k)))
    mask = torch.zeros_like(norms, dtype=torch.bool)
    if keep:
        mask.scatter_(1, norms.topk(keep, dim=1).indices, True)
    wp = wp * mask[:, None, :]
    w = wp.reshape(-1, k)[:m]
    scale = w.abs().amax(dim=1).clamp(min=1e-12) / 127.0
    q = torch.round(w / scale[:, None]).clamp(-127, 127).to(torch.int8)
    return q, scale.float()


def _default_arch():
    if torch.cuda.is_available():
        major, minor = torch.cuda.get_device_capability()
        cc = major * 10 + minor
        best = max([a for a in (80, 86, 89, 90) if a <= cc], default=80)
        return f"sm_{best}"
    return "sm_90"


class SparseLinear(torch.nn.Module):
    """y = x W^T (+ bias), W (out_features x in_features) int8 and V x 1 vector-sparse with a
    per-output-channel scale; x is quantized per token to int8 on the fly and the exact int32
    product is dequantized in the kernel's epilogue (w_scale[o] * x_scale[t] (+ bias[o]),
    rounded once) into `out_dtype` (bf16, f16 or f32).

    allow_dense: True lets the dispatch run the layer as a dense int8 GEMM (cuBLASLt) where
    that is faster for the weight and `n_hint` tokens; "force" always. The dense route keeps a
    dense int8 copy of W (out x in bytes) as `packed` instead of the sparse one; its epilogue
    kernel dequantizes the exact int32 product as the sparse kernel's does, so both routes give
    the same bits. `route` says which.

    The packed weight is the buffer `packed` (uint8; moves with .to()/.cuda(), saved in the
    state dict); `header`, `spec`, `candidate` and `route` are plain attributes. A state dict's
    `packed` is checked whole against the layer's op when it is loaded (a blob packed for another
    plan, or a corrupt one, raises Error) and its header becomes the layer's."""

    def __init__(self, weight_q, weight_scale, bias=None, *, v=8, out_dtype=torch.bfloat16, arch=None, n_hint=256,
                 allow_dense=False):
        super().__init__()
        out = {torch.bfloat16: "bf16", torch.float16: "f16", torch.float32: "f32"}.get(out_dtype)
        if out is None:
            raise Error(f"out_dtype: {out_dtype} (allowed: bfloat16, float16, float32)")
        if weight_q.dtype != torch.int8 or weight_q.dim() != 2:
            raise Error(f"weight_q: an int8 matrix is needed, got {weight_q.dtype} {tuple(weight_q.shape)}")
        self.out_features, self.in_features = weight_q.shape
        arch = arch or _default_arch()
        w = weight_q.detach().cpu().numpy()
        # y (tokens x out_features) is C column-major: the kernel writes it so (+ccol), no transpose.
        spec = f"spmm.s8xs8.v{v}.{out}+rc{'+rowbias' if bias is not None else ''}+ccol.{arch}"
        packed = _api.pack_weight(w, spec, n=n_hint, allow_dense=allow_dense)
        self.route = packed.op.route
        self.spec, self.candidate, self.header = packed.op.spec, packed.op.candidate, tuple(packed.header_list)
        self.out_dtype = out_dtype
        # Every buffer on the weight's device (.to()/.cuda() move them together later).
        dev = weight_q.device
        self.register_buffer("packed", torch.from_numpy(packed.blob.copy()).to(dev))
        self.register_buffer("weight_scale", weight_scale.detach().float().reshape(-1).to(dev, copy=True))
        self.register_buffer("bias", None if bias is None else bias.detach().float().reshape(-1).to(dev, copy=True))
        if self.weight_scale.numel() != self.out_features:
            raise Error(f"weight_scale: {self.weight_scale.numel()} values, expected {self.out_features}")

    @classmethod
    def from_dense(cls, weight, bias=None, *, sparsity=0.7, v=8, **kwargs):
        """Prunes and quantizes a float weight (see prune_and_quantize)."""
        q, scale = prune_and_quantize(weight, sparsity, v)
        return cls(q, scale, bias, v=v, **kwargs)

    def _load_from_state_dict(self, state_dict, prefix, *args, **kwargs):
        # A checkpoint's `packed` may come from anywhere: the blob is checked whole against this
        # layer's op (magicube_packed_check: packed for this plan and route, a body the kernels read
        # within bounds) before any kernel reads it, and its own header replaces the one this layer
        # was built with.
        kept = self.packed.detach().clone()  # what the layer holds if the state dict's blob is refused
        super()._load_from_state_dict(state_dict, prefix, *args, **kwargs)
        if self.packed.device.type == "meta":
            return  # no bytes to check (nor to run)
        dev = self.packed.device.index if self.packed.device.type == "cuda" else 0
        op, _ = _op(self.spec, self.candidate, dev or 0, self.route == "dense")
        try:
            checked = _api.Packed.from_bytes(op, self.packed.detach().cpu().numpy())
        except Error as e:
            self._buffers["packed"] = kept
            raise Error(f"SparseLinear: the state dict's {prefix}packed: {e}") from None
        self.header = tuple(checked.header_list)

    def forward(self, x):
        lead = x.shape[:-1]
        # quantize_per_token, then the op with the tokens' scales as col_scale: one op call
        y = torch.ops.magicube.linear(self.packed, list(self.header), x.detach().reshape(-1, self.in_features),
                                      self.spec, self.candidate, self.weight_scale, self.bias)
        return y.reshape(*lead, self.out_features)

    def extra_repr(self):
        return (f"in_features={self.in_features}, out_features={self.out_features}, spec={self.spec}, "
                f"route={self.route}")
