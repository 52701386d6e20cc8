"""On the GPU (each test skips with one line without one): numpy in, numpy out against a
numpy reference; torch tensors on the device in every layout, on a side stream and inside a
CUDA graph; SparseLinear against a torch reference from the same integers, and under
torch.compile(fullgraph=True)."""
import numpy as np
import pytest

import magicube
from conftest import vector_sparse


def _ref(a, b):
    return a.astype(np.int64) @ b.astype(np.int64)


@pytest.mark.parametrize("n", [1, 7, 256, 300])
def test_numpy_spmm_every_layout(gpu, n):
    rng = np.random.default_rng(n)
    a = vector_sparse(rng, 70, 200, 8, 0.3)
    b = rng.integers(-128, 128, size=(200, n)).astype(np.int8)
    w = magicube.pack_weight(a, "spmm.s8xs8.v8.i32.sm_80", n=n)
    want = _ref(a, b)
    assert np.array_equal(magicube.spmm(w, b), want)
    assert np.array_equal(magicube.spmm(w, np.ascontiguousarray(b.T), b_layout="col", out_layout="col"), want.T)


def test_numpy_spmm_4bit_and_float(gpu):
    rng = np.random.default_rng(5)
    a = vector_sparse(rng, 64, 128, 8, 0.3)
    b = rng.integers(0, 16, size=(128, 33)).astype(np.uint8)
    w = magicube.pack_weight(a, "spmm.s8xu4.v8.i32.sm_80")
    assert np.array_equal(magicube.spmm(w, b), _ref(a, b))
    wf = magicube.pack_weight(a, "spmm.s8xu4.v8.f32+rc.sm_80")
    rs, cs = rng.random(64).astype(np.float32), rng.random(33).astype(np.float32)
    got = magicube.spmm(wf, b, row_scale=rs, col_scale=cs)
    want = (_ref(a, b) * rs[:, None].astype(np.float64) * cs[None, :].astype(np.float64)).astype(np.float32)
    assert np.array_equal(got, want)


def test_numpy_sddmm(gpu):
    rng = np.random.default_rng(6)
    mask = vector_sparse(rng, 40, 60, 8, 0.2)
    a = rng.integers(-8, 8, size=(40, 96)).astype(np.int8)
    bt = rng.integers(-8, 8, size=(60, 96)).astype(np.int8)  # N x K: B column-major
    m = magicube.pack_mask(mask, "sddmm.s4xs4.v8.i32.sm_80", k=96)
    out = magicube.sddmm(m, a, bt)
    full = _ref(a, bt.T)
    want = [full[b + r, c] for b in range(0, 40, 8) for c in np.nonzero((mask[b:b + 8] != 0).any(axis=0))[0]
            for r in range(8)]
    assert np.array_equal(out, np.array(want))


def _check_torch_layouts_streams_and_graph(w, a):
    """A packed 96 x 256 weight `w` (matrix `a`) through DLPack and the torch op for N = 1, 16,
    512 (the dense route reads X in place and writes C^T directly; B is transposed in the
    workspace for the op), then on a side stream, captured in a CUDA graph and replayed on new
    input: every result equals the int64 reference."""
    import torch
    import magicube.torch as mt
    for n in (1, 16, 512):
        x = torch.randint(-128, 128, (n, 256), dtype=torch.int8, device="cuda")
        want = torch.from_numpy(_ref(a, x.cpu().numpy().T)).cuda()
        y = magicube.spmm(w, x, b_layout="col", out_layout="col")  # DLPack path
        assert torch.equal(y.long(), want.T)
        y2 = mt.spmm(w, x.t().contiguous())  # torch op, K x N -> M x N
        assert torch.equal(y2.long(), want)
    x = torch.randint(-128, 128, (64, 256), dtype=torch.int8, device="cuda")
    s = torch.cuda.Stream()
    with torch.cuda.stream(s):
        mt.spmm(w, x, b_transposed=True, out_transposed=True)  # warm-up: plans and kernels loaded
    torch.cuda.synchronize()
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        yg = mt.spmm(w, x, b_transposed=True, out_transposed=True)
    x.copy_(torch.randint(-128, 128, (64, 256), dtype=torch.int8, device="cuda"))
    g.replay()
    torch.cuda.synchronize()
    assert torch.equal(yg.long(), torch.from_numpy(_ref(a, x.cpu().numpy().T)).cuda().T)


def test_torch_device_layouts_streams_and_graphs(gpu):
    pytest.importorskip("torch")
    rng = np.random.default_rng(7)
    a = vector_sparse(rng, 96, 256, 8, 0.3)
    w = magicube.pack_weight(a, "spmm.s8xs8.v8.i32.sm_80")
    _check_torch_layouts_streams_and_graph(w, a)


def test_torch_op_workspace_follows_the_operands_alignment(gpu):
    """The torch op keeps workspace sizes by their arguments: B read in place (16-byte aligned),
    then the same shape at an odd address (repacked through the workspace), then in place again."""
    torch = pytest.importorskip("torch")
    import magicube.torch as mt
    rng = np.random.default_rng(11)
    a = vector_sparse(rng, 96, 256, 8, 0.3)
    w = magicube.pack_weight(a, "spmm.s8xs8.v8.i32.sm_80")
    b = torch.randint(-128, 128, (256, 256), dtype=torch.int8, device="cuda")
    b_odd = torch.empty(256 * 256 + 1, dtype=torch.int8, device="cuda")[1:].view(256, 256)
    b_odd.copy_(b)
    assert b_odd.data_ptr() % 16 == 1
    want = torch.from_numpy(_ref(a, b.cpu().numpy())).cuda()
    for x in (b, b_odd, b):
        assert torch.equal(mt.spmm(w, x).long(), want)


def test_sparse_linear_matches_a_reference_and_compiles(gpu):
    torch = pytest.importorskip("torch")
    import magicube.torch as mt
    torch.manual_seed(0)
    lin = torch.nn.Linear(512, 256).cuda()
    layer = mt.SparseLinear.from_dense(lin.weight, lin.bias, sparsity=0.7, v=8).cuda()
    x = torch.randn(4, 9, 512, device="cuda")
    y = layer(x)
    xq, xs = mt.quantize_per_token(x.reshape(-1, 512))
    wq, ws = mt.prune_and_quantize(lin.weight, 0.7, 8)
    acc = (xq.double() @ wq.double().T)
    ref = (acc * ws.double()[None, :] * xs.double()[:, None] + lin.bias.double()[None, :]).reshape(4, 9, 256)
    assert y.dtype == torch.bfloat16
    diff = (y.double() - ref).abs() / ref.abs().clamp(min=1e-3)
    assert diff.max() <= 2 ** -8  # one rounding to bf16
    compiled = torch.compile(layer, fullgraph=True)
    # The per-token quantization is an op of ours (one kernel), not traced into Inductor's: equal.
    assert torch.equal(compiled(x), y)
    # magicube::linear (the layer's one op) is quantize_per_token, then spmm with the tokens' scales.
    two = torch.ops.magicube.spmm(layer.packed, list(layer.header), xq, layer.spec, layer.candidate, True, True, 1.0,
                                  layer.weight_scale, xs, layer.bias)
    assert torch.equal(y.reshape(-1, 256), two)
    for dtype in (torch.bfloat16, torch.float16):  # activations in the model's dtype, quantized as they are
        xd = x.to(dtype)
        q, s = mt.quantize_per_token(xd.reshape(-1, 512))
        want = torch.ops.magicube.spmm(layer.packed, list(layer.header), q, layer.spec, layer.candidate, True, True,
                                       1.0, layer.weight_scale, s, layer.bias)
        assert torch.equal(layer(xd).reshape(-1, 256), want)


def test_sparse_linear_layers_in_a_cuda_graph_equal_eager(gpu):
    """Two layers back to back (quantize_rows and spmm in each, the second on the first's
    output) captured in a CUDA graph after a warm-up: replays with new inputs equal eager calls."""
    torch = pytest.importorskip("torch")
    import magicube.torch as mt
    torch.manual_seed(5)
    l1 = mt.SparseLinear.from_dense(torch.randn(256, 512, device="cuda") / 20, torch.randn(256, device="cuda"),
                                    sparsity=0.7, v=8, n_hint=16)
    l2 = mt.SparseLinear.from_dense(torch.randn(128, 256, device="cuda") / 16, None, sparsity=0.5, v=8, n_hint=16)
    x = torch.randn(16, 512, device="cuda", dtype=torch.bfloat16)
    stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(stream):
        l2(l1(x))  # warm-up: kernels loaded, workspace sizes known
    torch.cuda.current_stream().wait_stream(stream)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        y = l2(l1(x))
    for _ in range(2):
        x.copy_(torch.randn(16, 512, device="cuda", dtype=torch.bfloat16))
        g.replay()
        torch.cuda.synchronize()
        assert torch.equal(y, l2(l1(x)))


def test_quantize_per_token_on_the_gpu_equals_the_documented_arithmetic(gpu):
    torch = pytest.importorskip("torch")
    import magicube.torch as mt
    g = torch.Generator().manual_seed(4)
    for dtype in (torch.float32, torch.bfloat16, torch.float16):
        for rows, cols in ((1, 4096), (16, 4096), (37, 1001), (3, 14336), (0, 5), (4, 0)):
            x = torch.randn(rows, cols, generator=g) * 3
            if rows >= 16 and cols >= 64:
                x[1] = (torch.arange(cols) % 64 - 31.5) * 0.25  # x / scale = k + 1/2: ties
                x[1, 0] = 127 * 0.25
                x[2] = 0
                x[3, 7] = float("nan")
                x[4, 9] = float("inf")
                x[5, :3] = 1e-14
            xt = x.to(dtype)
            qc, sc = mt.quantize_per_token(xt)  # the CPU path: torch ops
            qg, sg = mt.quantize_per_token(xt.cuda())  # one kernel
            assert qg.dtype == torch.int8 and qg.device.type == "cuda" and qg.shape == (rows, cols)
            assert torch.equal(qg.cpu(), qc), (dtype, rows, cols)
            assert torch.equal(sg.cpu().view(torch.int32), sc.view(torch.int32)), (dtype, rows, cols)
    x = torch.randn(64, 48, device="cuda")
    qt, st = mt.quantize_per_token(x.t())  # a transposed view: made contiguous first
    q2, s2 = mt.quantize_per_token(x.t().contiguous())
    assert torch.equal(qt, q2) and torch.equal(st, s2)
    qc, sc = torch.compile(mt.quantize_per_token, fullgraph=True)(x)
    assert torch.equal(qc, mt.quantize_per_token(x)[0]) and torch.equal(sc, mt.quantize_per_token(x)[1])


def _dense_weight(a, spec, n):
    try:
        return magicube.pack_weight(a, spec, n=n, allow_dense="force")
    except magicube.Error as e:
        if "dense route unavailable" in str(e):
            pytest.skip(str(e))
        raise


@pytest.mark.parametrize("n", [1, 7, 64, 512])
def test_numpy_spmm_dense_route_every_layout(gpu, n):
    rng = np.random.default_rng(100 + n)
    a = vector_sparse(rng, 77, 256, 8, 0.5)  # M not a multiple of V
    b = rng.integers(-128, 128, size=(256, n)).astype(np.int8)
    w = _dense_weight(a, "spmm.s8xs8.v8.i32.sm_80", n)
    assert w.op.route == "dense" and w.header.route == 1
    w.op.load()
    want = _ref(a, b)
    assert np.array_equal(magicube.spmm(w, b), want)
    assert np.array_equal(magicube.spmm(w, b, out_layout="col"), want.T)
    bt = np.ascontiguousarray(b.T)
    assert np.array_equal(magicube.spmm(w, bt, b_layout="col", out_layout="col"), want.T)
    assert np.array_equal(magicube.spmm(w, bt, b_layout="col"), want)


@pytest.mark.parametrize("spec", ["spmm.u8xu8.v8.i32.sm_80", "spmm.s8xu8.v4.i64.sm_80"])
def test_numpy_spmm_dense_route_in_int8_chunks(gpu, spec):
    # u8 operands: their int8 chunk planes, one GEMM per chunk pair, summed by the epilogue.
    rng = np.random.default_rng(7)
    v = 8 if ".v8." in spec else 4
    a = vector_sparse(rng, 77, 256, v, 0.5, lo=0, hi=255, dtype=np.uint8) if spec.startswith("spmm.u8") \
        else vector_sparse(rng, 77, 256, v, 0.5)
    b = rng.integers(0, 256, size=(256, 64)).astype(np.uint8)
    w = _dense_weight(a, spec, 64)
    assert w.op.route == "dense"
    want = _ref(a, b)
    assert np.array_equal(magicube.spmm(w, b), want)
    assert np.array_equal(magicube.spmm(w, np.ascontiguousarray(b.T), b_layout="col", out_layout="col"), want.T)


def test_torch_dense_route_device_layouts_and_graphs(gpu):
    pytest.importorskip("torch")
    rng = np.random.default_rng(17)
    a = vector_sparse(rng, 96, 256, 8, 0.5)
    w = _dense_weight(a, "spmm.s8xs8.v8.i32.sm_80", 64)
    _check_torch_layouts_streams_and_graph(w, a)


def test_sparse_linear_dense_route_matches_the_sparse_route(gpu):
    torch = pytest.importorskip("torch")
    import magicube.torch as mt
    torch.manual_seed(3)
    lin = torch.nn.Linear(512, 256).cuda()
    sparse = mt.SparseLinear.from_dense(lin.weight, lin.bias, sparsity=0.5, v=8).cuda()
    try:
        dense = mt.SparseLinear.from_dense(lin.weight, lin.bias, sparsity=0.5, v=8, allow_dense="force").cuda()
    except magicube.Error as e:
        if "dense route unavailable" in str(e):
            pytest.skip(str(e))
        raise
    assert sparse.route == "sparse" and dense.route == "dense" and dense.spec == sparse.spec
    assert dense.packed.numel() == dense.header[12] and dense.header[25] == 1
    x = torch.randn(4, 9, 512, device="cuda")
    y, yd = sparse(x), dense(x)
    # The same integers through the same epilogue: the same bits on either route.
    assert yd.dtype == torch.bfloat16 and torch.equal(yd.view(torch.int16), y.view(torch.int16))
    xq, xs = mt.quantize_per_token(x.reshape(-1, 512))
    wq, ws = mt.prune_and_quantize(lin.weight, 0.5, 8)
    ref = ((xq.double() @ wq.double().T) * ws.double()[None, :] * xs.double()[:, None] +
           lin.bias.double()[None, :]).reshape(4, 9, 256)
    diff = (yd.double() - ref).abs() / ref.abs().clamp(min=1e-3)
    assert diff.max() <= 2 ** -8  # one rounding to bf16
    allowed = mt.SparseLinear.from_dense(lin.weight, lin.bias, sparsity=0.5, v=8, allow_dense=True, n_hint=4096).cuda()
    assert torch.equal(allowed(x).view(torch.int16), y.view(torch.int16))
    compiled = torch.compile(dense, fullgraph=True)
    torch.testing.assert_close(compiled(x).float(), yd.float(), rtol=0.02, atol=0.02 * float(yd.abs().max()))
