"""The Python API over the C ABI: planning, packing, and SpMM / SDDMM on DLPack tensors."""
import ctypes
import threading
from ctypes import byref, c_int64, c_size_t, c_void_p

import numpy as np

from . import _dlpack, _lib
from ._lib import Error, check

_LAYOUTS = {"row": _lib.ROW_MAJOR, "col": _lib.COL_MAJOR}
_SPARSE_LAYOUTS = {"bcrs": _lib.BCRS, "srbcrs": _lib.SRBCRS}


def _layout(value, name, table=_LAYOUTS):
    if value not in table:
        raise Error(f"{name}: '{value}' is not a layout (allowed: {', '.join(table)})")
    return table[value]


def plan(spec: str) -> str:
    """What `magicube plan` prints for `spec` (e.g. "spmm.s8xs8.v8.i32.sm_90"): the dispatch's
    plan with no matrix, on the reference device of the spec's arch. Raises Error naming a bad
    field."""
    if not isinstance(spec, str):
        raise Error(f"spec: expected a str, got {type(spec).__name__}")
    return _lib.text(lambda b, c, n: _lib.lib().magicube_plan_describe(spec.encode(), b, c, n))


def version() -> str:
    """The loaded library's version."""
    return _lib.lib().magicube_version().decode()


# ---- host matrices ----------------------------------------------------------------------------


def _host_matrix(obj, name, v):
    """A dense 2-D integer host array as a magicube_matrix (and the array that keeps it alive)."""
    vw = _dlpack.view(obj, name)
    if vw.on_device:
        raise Error(f"{name}: pack from a host array (numpy, or .cpu() of a tensor); this one is on the device")
    if len(vw.shape) != 2:
        raise Error(f"{name}: a 2-D array is needed, got shape {vw.shape}")
    if vw.dtype not in (_lib.INT8, _lib.UINT8, _lib.INT16, _lib.UINT16, _lib.INT32, _lib.INT64):
        raise Error(f"{name}: dtype {vw.dtype_name} is not an integer type (quantize first)")
    m = _lib.Matrix(vw.shape[0], vw.shape[1], vw.dtype, vw.ptr, None, None, v)
    return m, vw


def _dense_option(allow_dense):
    """The C ABI's magicube_dense_route for allow_dense (False, True or "force")."""
    if isinstance(allow_dense, str):
        if allow_dense == "force":
            return _lib.DENSE_FORCED
    elif allow_dense in (False, True):
        return _lib.DENSE_ALLOWED if allow_dense else _lib.DENSE_NEVER
    raise Error(f"allow_dense: {allow_dense!r} (allowed: False, True, 'force')")


class Op:
    """One planned op, spmm or sddmm as the spec says. With `matrix` (a host integer array: A
    for SpMM, the mask for SDDMM) and `n_or_k` (N for SpMM, K for SDDMM) the dispatch plans
    for that matrix (a tuning record or the policy); without, the policy's defaults.

    allow_dense (SpMM, any operand types and output): True lets the dispatch run the op as
    dense int8 GEMMs (cuBLASLt; operands wider than int8, u8 too, in int8 chunks, one GEMM per
    chunk pair) where that is faster for the matrix, keeping a dense copy of A (M x K bytes a
    chunk) in the packed weight instead of the sparse one; "force" always does
    (or raises, naming why not); False (the default) never. `route` and `route_why` say what
    was chosen."""

    def __init__(self, spec, matrix=None, n_or_k=0, *, candidate=-1, device=0, allow_dense=False):
        L = _lib.lib()
        self._lib = L
        opts = _lib.OpOptionsEx(ctypes.sizeof(_lib.OpOptionsEx), candidate, device, _dense_option(allow_dense))
        handle = c_void_p()
        mptr = None
        if matrix is not None:
            v = int(spec.split(".")[2][1:]) if spec.count(".") >= 2 and spec.split(".")[2][1:].isdigit() else 0
            m, keep = _host_matrix(matrix, "matrix", v)
            mptr = byref(m)
        check(L.magicube_op_create_ex(spec.encode(), mptr, int(n_or_k), byref(opts), byref(handle)))
        self._handle = handle
        self.device = device

    def __del__(self):
        h = getattr(self, "_handle", None)
        if h is not None and h.value:
            self._lib.magicube_op_destroy(h)
            self._handle = None

    def _text(self, kind):
        return _lib.text(lambda b, c, n: self._lib.magicube_op_text(self._handle, kind, b, c, n))

    def query(self, kind):
        v = c_int64(0)
        check(self._lib.magicube_op_query(self._handle, kind, byref(v)))
        return v.value

    @property
    def plan(self):
        return self._text(_lib.TEXT_PLAN)

    @property
    def spec(self):
        """The chosen plan's spec, every knob pinned."""
        return self._text(_lib.TEXT_SPEC)

    @property
    def kernel_name(self):
        return self._text(_lib.TEXT_KERNEL)

    @property
    def chosen_by(self):
        return self._text(_lib.TEXT_CHOSEN_BY)

    @property
    def candidate(self):
        return self.query(_lib.QUERY_CANDIDATE)

    @property
    def route(self):
        """"sparse" (the kernel) or "dense" (a cuBLASLt int8 GEMM)."""
        return "dense" if self.query(_lib.QUERY_ROUTE) == 1 else "sparse"

    @property
    def route_why(self):
        """Why this route ("" when allow_dense was False)."""
        return self._text(_lib.TEXT_ROUTE_WHY)

    @property
    def is_sddmm(self):
        return self.query(_lib.QUERY_OP) == 1

    @property
    def v(self):
        return self.query(_lib.QUERY_V)

    @property
    def output_dtype(self):
        """The output's magicube dtype code (see output_dtype_name)."""
        return self.query(_lib.QUERY_OUTPUT_DTYPE)

    @property
    def output_dtype_name(self):
        return _dlpack.DTYPE_NAMES[self.output_dtype]

    @property
    def max_reduction_length(self):
        return self.query(_lib.QUERY_MAX_REDUCTION)

    def load(self):
        """Compiles and loads the kernel now (needs a GPU). A dense op: times cuBLASLt's
        algorithms for the matrix's shape once (synchronizes)."""
        check(self._lib.magicube_op_load(self._handle))

    def pack(self, matrix):
        """Packs a host matrix (SpMM: A's integer values; SDDMM: the mask, nonzero = kept)."""
        m, keep = _host_matrix(matrix, "matrix", self.v)
        p = c_void_p()
        check(self._lib.magicube_pack(self._handle, byref(m), byref(p)))
        try:
            n = self._lib.magicube_packed_bytes(p)
            blob = np.empty(n, dtype=np.uint8)
            ctypes.memmove(blob.ctypes.data, self._lib.magicube_packed_data(p), n)
            header = _lib.PackedHeader.from_buffer_copy(self._lib.magicube_packed_get_header(p).contents)
        finally:
            self._lib.magicube_packed_destroy(p)
        return Packed(self, blob, header)


class Packed:
    """A packed sparse operand (SpMM's A, the weight; or an SDDMM mask): the blob (a numpy
    uint8 array, header first) and the op it was packed for. `to(device_tensor_like)` gives
    its copy on a device (cached)."""

    def __init__(self, op, blob, header):
        self.op, self.blob, self.header = op, blob, header
        self._device = {}
        self._lock = threading.Lock()

    @property
    def rows(self):
        return self.header.rows

    @property
    def cols(self):
        return self.header.cols

    @property
    def nbytes(self):
        return int(self.blob.nbytes)

    @property
    def header_list(self):
        """The header as 32 ints (what magicube.torch's ops take)."""
        return self.header.to_list()

    @classmethod
    def from_bytes(cls, op, data):
        """A blob saved earlier (bytes or a uint8 array) for `op`; the whole blob is checked
        against `op` (magicube_packed_check: its header, and a body that the kernels read within
        bounds, with values of the op's type) before it is used."""
        blob = np.frombuffer(bytes(data), dtype=np.uint8).copy()
        header = _lib.PackedHeader()
        check(_lib.lib().magicube_packed_check(op._handle, blob.ctypes.data, blob.nbytes, byref(header)))
        return cls(op, blob, header)

    def device_blob(self, like):
        """The blob on the device of tensor `like` (a torch or CuPy tensor), copied once."""
        fw, dev = _framework(like)
        key = (fw, dev)
        with self._lock:
            if key not in self._device:
                if fw == "torch":
                    import torch
                    self._device[key] = torch.from_numpy(self.blob).to(like.device)
                else:
                    import cupy
                    with cupy.cuda.Device(dev):
                        self._device[key] = cupy.asarray(self.blob)
            return self._device[key]


def compile_ops(ops, *, threads=0):
    """Compiles the kernels of `ops` (Op objects) at once, in parallel (threads 0: the host's
    cores), into the kernel caches, without a GPU; returns how many kernels were compiled or
    found (dense-route ops have none). A later load or run of them needs no compile."""
    ops = list(ops)
    lib = _lib.lib()
    handles = (c_void_p * max(1, len(ops)))(*[op._handle for op in ops])
    kernels = c_size_t()
    check(lib.magicube_ops_compile(handles, len(ops), int(threads), byref(kernels)))
    return kernels.value


def pack_weight(weight, spec, *, n=None, candidate=-1, device=0, allow_dense=False):
    """Plans `spec` (an spmm spec) for the host integer matrix `weight` (M x K) and N = `n`
    columns of B (None: the policy's defaults), and packs it. allow_dense: see Op (True needs
    `n`: the dispatch compares the routes for the matrix and N; "force" does not)."""
    op = Op(spec, weight if n is not None else None, n or 0, candidate=candidate, device=device,
            allow_dense=allow_dense)
    if op.is_sddmm:
        raise Error(f"spec: pack_weight needs an spmm spec, got '{spec}'")
    return op.pack(weight)


def pack_mask(mask, spec, *, k=None, candidate=-1, device=0):
    """Plans `spec` (an sddmm spec) for the host mask (M x N, nonzero = kept) and K = `k`,
    and packs the mask."""
    op = Op(spec, mask if k is not None else None, k or 0, candidate=candidate, device=device)
    if not op.is_sddmm:
        raise Error(f"spec: pack_mask needs an sddmm spec, got '{spec}'")
    return op.pack(mask)


# ---- running ----------------------------------------------------------------------------------


def _framework(t):
    mod = type(t).__module__.split(".")[0]
    if mod == "torch":
        return "torch", t.device.index if t.device.index is not None else 0
    if mod == "cupy":
        return "cupy", t.device.id
    raise Error(f"a device tensor of {mod} ({type(t).__name__}): pass out= and workspace= as device tensors, "
                "or use torch or CuPy tensors")


def _default_stream(t, stream):
    """The caller's stream, else the current stream of a torch or CuPy device tensor, else None."""
    if stream is not None:
        return stream
    mod = type(t).__module__.split(".")[0]
    if mod in ("torch", "cupy") and getattr(t, "is_cuda", mod == "cupy"):
        return _current_stream(t)
    return None


def _current_stream(t):
    fw, dev = _framework(t)
    if fw == "torch":
        import torch
        return torch.cuda.current_stream(dev).cuda_stream
    import cupy
    return cupy.cuda.get_current_stream().ptr


_TORCH_DTYPES = {_lib.INT32: "int32", _lib.INT64: "int64", _lib.FLOAT32: "float32", _lib.FLOAT16: "float16",
                 _lib.BFLOAT16: "bfloat16", _lib.UINT8: "uint8"}


def _empty(like, shape, dtype):
    fw, dev = _framework(like)
    if fw == "torch":
        import torch
        return torch.empty(shape, dtype=getattr(torch, _TORCH_DTYPES[dtype]), device=like.device)
    import cupy
    if dtype == _lib.BFLOAT16:
        raise Error("CuPy has no bfloat16: pass out= (a uint16 array of the shape)")
    with cupy.cuda.Device(dev):
        return cupy.empty(shape, dtype={_lib.UINT8: cupy.uint8}.get(dtype) or _dlpack.NUMPY_DTYPES[dtype])


def _host_output(raw, dtype, shape):
    """numpy output: integers and f16/f32 as they are; bf16 widened exactly to float32."""
    if dtype == _lib.BFLOAT16:
        return (raw.view(np.uint16).astype(np.uint32) << 16).view(np.float32).reshape(shape)
    return raw.view(_dlpack.NUMPY_DTYPES[dtype]).reshape(shape)


def _vector(obj, name, count, on_device, stream):
    if obj is None:
        return None, None
    vw = _dlpack.view(obj, name, stream)
    if vw.on_device != on_device:
        raise Error(f"{name}: on the {'device' if vw.on_device else 'host'}, but the operands are on the "
                    f"{'device' if on_device else 'host'}")
    if vw.dtype != _lib.FLOAT32 or not vw.contiguous:
        raise Error(f"{name}: a contiguous float32 vector is needed, got {vw.dtype_name}")
    size = int(np.prod(vw.shape)) if vw.shape else 1
    if size != count:
        raise Error(f"{name}: {size} values, expected {count}")
    return vw.ptr, vw


def spmm(weight, b, *, b_layout="row", out_layout="row", row_scale=None, col_scale=None, bias=None, alpha=1.0,
         out=None, workspace=None, stream=None):
    """C = A x B for a packed weight A (M x K). B: K x N ("row") or N x K ("col", a linear
    layer's X), an integer DLPack tensor of the spec's rhs type. The result: M x N ("row") or
    N x M ("col", Y = X A^T) in the op's output type. On the host (numpy) the call runs on the
    GPU synchronously and returns numpy (bf16 widened exactly to float32); on the device (torch,
    CuPy) it is queued on the current stream (or `stream`) and returns a tensor of the same
    framework (or writes `out`). Float outputs take row_scale (M), col_scale (N), bias (M or N)
    and alpha as the spec says."""
    op = weight.op
    if op.is_sddmm:
        raise Error("weight: a packed SDDMM mask given to spmm")
    bl, cl = _layout(b_layout, "b_layout"), _layout(out_layout, "out_layout")
    stream = _default_stream(b, stream)
    bv = _dlpack.view(b, "b", stream)
    if len(bv.shape) != 2:
        raise Error(f"b: a 2-D tensor is needed, got shape {bv.shape}")
    k = weight.cols
    kk, n = (bv.shape[0], bv.shape[1]) if bl == _lib.ROW_MAJOR else (bv.shape[1], bv.shape[0])
    if kk != k:
        raise Error(f"b: shape {bv.shape} ({b_layout}) has K={kk} but A is {weight.rows} x {k}")
    if not bv.contiguous:
        raise Error("b: a contiguous tensor is needed (call .contiguous())")
    m, odt = weight.rows, op.output_dtype
    oshape = (m, n) if cl == _lib.ROW_MAJOR else (n, m)
    L = _lib.lib()
    nb = m if op.query(_lib.QUERY_BIAS) == 1 else n
    rs, _k1 = _vector(row_scale, "row_scale", m, bv.on_device, stream)
    cs, _k2 = _vector(col_scale, "col_scale", n, bv.on_device, stream)
    bs, _k3 = _vector(bias, "bias", nb, bv.on_device, stream)
    epi = _lib.Epilogue(alpha, rs, cs, bs)
    if not bv.on_device:
        raw = np.empty(m * n * op.query(_lib.QUERY_OUTPUT_ELEMENT_BYTES), dtype=np.uint8)
        bd = _lib.Dense(bv.ptr, bv.dtype, bl)
        cd = _lib.Dense(raw.ctypes.data, odt, cl)
        check(L.magicube_spmm_host(op._handle, byref(weight.header), weight.blob.ctypes.data, byref(bd), n, byref(cd),
                                   byref(epi)))
        return _host_output(raw, odt, oshape)
    blob = weight.device_blob(b)
    bd = _lib.Dense(bv.ptr, bv.dtype, bl)
    if out is None:
        out = _empty(b, oshape, odt)
    ov = _dlpack.view(out, "out", stream)
    if ov.shape != oshape or not ov.contiguous:
        raise Error(f"out: shape {ov.shape}, expected a contiguous {oshape}")
    cd = _lib.Dense(ov.ptr, odt, cl)
    ws_bytes = c_size_t(0)
    check(L.magicube_spmm_workspace_bytes(op._handle, byref(weight.header), byref(bd), n, byref(cd), byref(ws_bytes)))
    ws_ptr = None
    if ws_bytes.value:
        if workspace is None:
            workspace = _empty(b, (ws_bytes.value,), _lib.UINT8)
        wv = _dlpack.view(workspace, "workspace", stream)
        if int(np.prod(wv.shape)) * (1 if wv.dtype in (_lib.INT8, _lib.UINT8) else 0) < ws_bytes.value:
            raise Error(f"workspace: a uint8 tensor of at least {ws_bytes.value} bytes is needed")
        ws_ptr = wv.ptr
    check(L.magicube_spmm_run(op._handle, byref(weight.header), _dlpack.view(blob, "blob", stream).ptr, byref(bd), n,
                              byref(cd), byref(epi), ws_ptr, ws_bytes.value, stream or None))
    return out


def sddmm(mask, a, b, *, a_layout="row", b_layout="col", out_layout="bcrs", row_scale=None, col_scale=None,
          alpha=1.0, out=None, workspace=None, stream=None):
    """out = (A x B) at a packed mask's V x 1 vectors. A: M x K ("row") or K x M ("col"); B:
    K x N ("row") or N x K ("col", e.g. attention's keys). The output is 1-D: the mask's
    vectors in order, V values each ("bcrs"), or its SR-BCRS value layout ("srbcrs"). Host
    (numpy) or device (torch, CuPy) operands as for spmm; host outputs are 0 where nothing is
    written (rows past M, padding)."""
    op = mask.op
    if not op.is_sddmm:
        raise Error("mask: a packed SpMM weight given to sddmm")
    al, bl = _layout(a_layout, "a_layout"), _layout(b_layout, "b_layout")
    ol = _layout(out_layout, "out_layout", _SPARSE_LAYOUTS)
    stream = _default_stream(a, stream)
    av, bv = _dlpack.view(a, "a", stream), _dlpack.view(b, "b", stream)
    m, n = mask.rows, mask.cols
    for v, name in ((av, "a"), (bv, "b")):
        if len(v.shape) != 2 or not v.contiguous:
            raise Error(f"{name}: a contiguous 2-D tensor is needed, got shape {v.shape}")
    am, k = (av.shape[0], av.shape[1]) if al == _lib.ROW_MAJOR else (av.shape[1], av.shape[0])
    kb, bn = (bv.shape[0], bv.shape[1]) if bl == _lib.ROW_MAJOR else (bv.shape[1], bv.shape[0])
    if am != m or bn != n or kb != k:
        raise Error(f"a {av.shape} ({a_layout}) and b {bv.shape} ({b_layout}) do not fit the {m} x {n} mask "
                    f"(A is M x K, B is K x N)")
    if av.on_device != bv.on_device:
        raise Error("a and b: one on the host, one on the device")
    count = c_int64(0)
    check(_lib.lib().magicube_output_elements(byref(mask.header), ol, byref(count)))
    odt, L = op.output_dtype, _lib.lib()
    rs, _k1 = _vector(row_scale, "row_scale", m, av.on_device, stream)
    cs, _k2 = _vector(col_scale, "col_scale", n, av.on_device, stream)
    epi = _lib.Epilogue(alpha, rs, cs, None)
    ad, bd = _lib.Dense(av.ptr, av.dtype, al), _lib.Dense(bv.ptr, bv.dtype, bl)
    if not av.on_device:
        raw = np.zeros(count.value * op.query(_lib.QUERY_OUTPUT_ELEMENT_BYTES), dtype=np.uint8)
        check(L.magicube_sddmm_host(op._handle, byref(mask.header), mask.blob.ctypes.data, byref(ad), byref(bd), k,
                                    raw.ctypes.data, ol, byref(epi)))
        return _host_output(raw, odt, (count.value,))
    blob = mask.device_blob(a)
    if out is None:
        out = _empty(a, (count.value,), odt)
    ov = _dlpack.view(out, "out", stream)
    if int(np.prod(ov.shape)) != count.value or not ov.contiguous:
        raise Error(f"out: shape {ov.shape}, expected {count.value} contiguous elements")
    ws_bytes = c_size_t(0)
    check(L.magicube_sddmm_workspace_bytes(op._handle, byref(mask.header), byref(ad), byref(bd), k, byref(ws_bytes)))
    ws_ptr = None
    if ws_bytes.value:
        if workspace is None:
            workspace = _empty(a, (ws_bytes.value,), _lib.UINT8)
        ws_ptr = _dlpack.view(workspace, "workspace", stream).ptr
    check(L.magicube_sddmm_run(op._handle, byref(mask.header), _dlpack.view(blob, "blob", stream).ptr, byref(ad),
                               byref(bd), k, ov.ptr, ol, byref(epi), ws_ptr, ws_bytes.value, stream or None))
    return out


_gpu = None


def gpu_available():
    """(True, "") when a GPU is usable, else (False, reason): compiles and loads a small kernel once."""
    global _gpu
    if _gpu is None:
        op = Op("spmm.s8xs8.v8.n64.pf.i32.sm_80")
        try:
            op.load()
            _gpu = (True, "")
        except Error as e:
            if e.kind != "no-gpu":
                raise
            _gpu = (False, str(e))
    return _gpu
