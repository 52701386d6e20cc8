"""magicube.torch without a GPU: the ops are registered, their fake implementations give the
shapes and dtypes torch.compile traces with, and SparseLinear prunes, quantizes and packs.
Skipped where torch is not installed (CI installs no torch)."""
import numpy as np
import pytest

torch = pytest.importorskip("torch")
import magicube  # noqa: E402
import magicube.torch as mt  # noqa: E402


def test_ops_are_registered():
    assert hasattr(torch.ops.magicube, "spmm") and hasattr(torch.ops.magicube, "sddmm")


def test_a_header_of_the_wrong_length_is_named_and_not_kept():
    from magicube.torch import _header, _headers
    for _ in range(2):  # refused again: the op's header table keeps only good headers
        with pytest.raises(magicube.Error, match="header: 31 values, expected 32"):
            _header([0] * 31)
    assert (0,) * 31 not in _headers
    h, key = _header([1] * 32)
    assert key in _headers and _header([1] * 32)[0] is h


def test_fake_shapes_on_meta_tensors():
    w = np.zeros((40, 64), np.int8)
    w[0:8, 3] = 1
    p = magicube.pack_weight(w, "spmm.s8xs8.v8.bf16+rc.sm_90")
    packed = torch.empty(p.nbytes, dtype=torch.uint8, device="meta")
    x = torch.empty(5, 64, dtype=torch.int8, device="meta")
    y = torch.ops.magicube.spmm(packed, p.header_list, x, p.op.spec, p.op.candidate, True, True, 1.0, None, None,
                                None)
    assert y.shape == (5, 40) and y.dtype == torch.bfloat16 and y.device.type == "meta"
    y = torch.ops.magicube.spmm(packed, p.header_list, x.t(), p.op.spec, p.op.candidate, False, False, 1.0, None,
                                None, None)
    assert y.shape == (40, 5)
    m = magicube.pack_mask(w, "sddmm.s8xs8.v8.f16+rc.sm_90")
    mp = torch.empty(m.nbytes, dtype=torch.uint8, device="meta")
    s = torch.ops.magicube.sddmm(mp, m.header_list, torch.empty(40, 16, dtype=torch.int8, device="meta"),
                                 torch.empty(64, 16, dtype=torch.int8, device="meta"), m.op.spec, m.op.candidate,
                                 False, True, False, 1.0, None, None)
    assert s.shape == (8,) and s.dtype == torch.float16


def test_prune_and_quantize():
    torch.manual_seed(0)
    w = torch.randn(20, 64)
    q, scale = mt.prune_and_quantize(w, sparsity=0.75, v=8)
    assert q.dtype == torch.int8 and q.shape == w.shape and scale.shape == (20,)
    blocks = torch.nn.functional.pad(q, (0, 0, 0, 4)).reshape(3, 8, 64)
    kept = (blocks != 0).any(dim=1).sum(dim=1)
    assert (kept <= 16).all()  # round(0.25 * 64) vectors a row-block
    assert q.abs().max() == 127


def test_sparse_linear_on_the_cpu_packs_and_traces():
    torch.manual_seed(1)
    lin = torch.nn.Linear(64, 24)
    layer = mt.SparseLinear.from_dense(lin.weight, lin.bias, sparsity=0.7, v=8, arch="sm_90")
    assert layer.packed.dtype == torch.uint8 and layer.packed.numel() == layer.header[12]
    assert "+rowbias" in layer.spec and ".bf16+rc" in layer.spec and "+ccol" in layer.spec  # y written as C^T
    assert set(layer.state_dict()) == {"packed", "weight_scale", "bias"}
    from torch._subclasses.fake_tensor import FakeTensorMode
    with FakeTensorMode(allow_non_fake_inputs=True):
        y = layer(torch.empty(3, 7, 64))
    assert y.shape == (3, 7, 24) and y.dtype == torch.bfloat16


def test_sparse_linear_checks_a_loaded_state_dict():
    # A layer of the same plan loads another weight's blob (its header follows it); a corrupt blob
    # or one packed for another plan is refused when loaded, before any kernel could read it.
    torch.manual_seed(3)
    a = mt.SparseLinear.from_dense(torch.nn.Linear(64, 24).weight, sparsity=0.7, v=8, arch="sm_90")
    b = mt.SparseLinear.from_dense(torch.nn.Linear(64, 24).weight, sparsity=0.7, v=8, arch="sm_90")
    assert a.spec == b.spec and a.packed.numel() == b.packed.numel() and not torch.equal(a.packed, b.packed)
    a.load_state_dict(b.state_dict())
    assert a.header == b.header and torch.equal(a.packed, b.packed)
    kept = a.packed.clone()
    bad = b.state_dict()
    bad["packed"] = bad["packed"].clone()
    bad["packed"][80] += 1  # the header's num_vectors (int64 10), one more than the body holds
    with pytest.raises(magicube.Error, match="the state dict's packed: packed: .* the header's num_vectors says"):
        a.load_state_dict(bad)
    wrong = b.state_dict()
    wrong["packed"] = wrong["packed"].clone()
    wrong["packed"][24] ^= 1  # the header's plan_fingerprint (int64 3)
    with pytest.raises(magicube.Error, match="packed for another plan"):
        a.load_state_dict(wrong, assign=True)
    assert torch.equal(a.packed, kept) and a.header == b.header  # a refused blob is not kept


def test_sparse_linear_traces_as_one_graph():
    # What torch.compile(fullgraph=True) needs: Dynamo captures the whole forward, the custom op
    # included, through its fake implementation (no GPU: strict torch.export runs Dynamo).
    torch.manual_seed(2)
    lin = torch.nn.Linear(64, 24)
    layer = mt.SparseLinear.from_dense(lin.weight, lin.bias, sparsity=0.7, v=8, arch="sm_90")
    ep = torch.export.export(layer, (torch.randn(5, 64),), strict=True)
    ops = [n.target for n in ep.graph.nodes if n.op == "call_function"]
    assert torch.ops.magicube.linear.default in ops  # quantize_rows and spmm in one op
    out = [n for n in ep.graph.nodes if n.op == "output"][0].args[0][0].meta["val"]
    assert tuple(out.shape) == (5, 24) and out.dtype == torch.bfloat16


def test_sparse_linear_dense_route_on_the_host():
    # The dense route's layer: the same float spec, the dense copy as `packed`, traced as one graph.
    torch.manual_seed(4)
    lin = torch.nn.Linear(64, 24)
    try:
        layer = mt.SparseLinear.from_dense(lin.weight, lin.bias, sparsity=0.5, v=8, arch="sm_90", allow_dense="force")
    except magicube.Error as e:
        if "dense route unavailable" in str(e):
            pytest.skip(str(e))
        raise
    assert layer.route == "dense" and ".bf16+rc+rowbias+ccol." in layer.spec and layer.header[25] == 1
    assert layer.packed.numel() == layer.header[12]
    from torch._subclasses.fake_tensor import FakeTensorMode
    with FakeTensorMode(allow_non_fake_inputs=True):
        y = layer(torch.empty(3, 7, 64))
    assert y.shape == (3, 7, 24) and y.dtype == torch.bfloat16
    ep = torch.export.export(layer, (torch.randn(5, 64),), strict=True)
    assert torch.ops.magicube.linear.default in [n.target for n in ep.graph.nodes if n.op == "call_function"]


def _quantize_reference(x):
    """The documented arithmetic in numpy float32: scale = max(max |x|, 1e-12) / 127, q =
    clamp(rint(x / scale), -127, 127); a NaN row's scale is the C ABI's NaN, a NaN quotient 0."""
    x = np.asarray(x, np.float32)
    with np.errstate(invalid="ignore", divide="ignore"):
        amax = np.abs(x).max(axis=1) if x.shape[1] else np.zeros(x.shape[0], np.float32)
        s = np.maximum(amax, np.float32(1e-12)) / np.float32(127)
        s = np.where(np.isnan(amax), np.array([0x7FFFFFFF], np.uint32).view(np.float32)[0], s).astype(np.float32)
        t = np.rint(x / s[:, None])
    q = np.clip(np.nan_to_num(t, nan=0.0), -127, 127).astype(np.int8)
    return q, s


def test_quantize_per_token_on_the_cpu_is_the_documented_arithmetic():
    rng = np.random.default_rng(3)
    x = rng.standard_normal((6, 33)).astype(np.float32) * np.float32(3)
    x[1] = (np.arange(33) - 16.5).astype(np.float32) * np.float32(0.25)  # ties: scale exactly ...
    x[1, 0] = np.float32(127 * 0.25)                                   # ... 0.25, x / scale = k + 1/2
    x[2] = 0
    x[3, 5] = np.nan
    x[4, 7] = -np.inf
    x[5, :2] = np.float32(1e-14)  # below the smallest scale's max
    for dtype in (torch.float32, torch.bfloat16, torch.float16):
        xt = torch.from_numpy(x).to(dtype)
        q, s = mt.quantize_per_token(xt)
        want_q, want_s = _quantize_reference(xt.float().numpy())
        assert q.dtype == torch.int8 and s.dtype == torch.float32
        np.testing.assert_array_equal(q.numpy(), want_q)
        np.testing.assert_array_equal(s.numpy().view(np.uint32), want_s.view(np.uint32))
    assert (mt.quantize_per_token(torch.from_numpy(x))[0][1, 1:5].tolist() == [-16, -14, -14, -12])  # ties to even
    assert mt.quantize_per_token(torch.zeros(0, 8))[0].shape == (0, 8)
    assert mt.quantize_per_token(torch.zeros(3, 0))[1].tolist() == [np.float32(1e-12) / np.float32(127)] * 3


def test_quantize_per_token_refuses_what_it_cannot_quantize():
    with pytest.raises(magicube.Error, match="x: dtype torch.int32"):
        mt.quantize_per_token(torch.zeros(2, 3, dtype=torch.int32))
    with pytest.raises(magicube.Error, match="x: a matrix"):
        mt.quantize_per_token(torch.zeros(2, 3, 4))


def test_linear_fake_shape_on_meta_tensors():
    w = np.zeros((40, 64), np.int8)
    w[0:8, 3] = 1
    p = magicube.pack_weight(w, "spmm.s8xs8.v8.bf16+rc+ccol.sm_90")
    packed = torch.empty(p.nbytes, dtype=torch.uint8, device="meta")
    x = torch.empty(5, 64, dtype=torch.bfloat16, device="meta")
    scale = torch.empty(40, device="meta")
    y = torch.ops.magicube.linear(packed, p.header_list, x, p.op.spec, p.op.candidate, scale, None)
    assert y.shape == (5, 40) and y.dtype == torch.bfloat16 and y.device.type == "meta"
    with pytest.raises(magicube.Error, match="x: dtype torch.int8"):
        torch.ops.magicube.linear(packed, p.header_list, x.to(torch.int8), p.op.spec, p.op.candidate, scale, None)
