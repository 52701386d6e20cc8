"""Packing from numpy (and any host DLPack array), the blob and its header, and the errors of
bad matrices and of runs refused before the GPU is touched."""
import numpy as np
import pytest

import magicube
from conftest import vector_sparse


class HostDLPack:
    """A host array seen only through the DLPack protocol."""

    def __init__(self, a):
        self._a = a

    def __dlpack__(self, stream=None):
        return self._a.__dlpack__()

    def __dlpack_device__(self):
        return self._a.__dlpack_device__()


def test_pack_weight_header_and_blob():
    rng = np.random.default_rng(0)
    w = vector_sparse(rng, 40, 96, 8, 0.3)
    p = magicube.pack_weight(w, "spmm.s8xs8.v8.i32.sm_90", n=64)
    assert (p.rows, p.cols) == (40, 96)
    h = p.header
    assert h.magic == 0x4B5043414D and h.format_version == 4 and h.op == 0 and h.route == 0 and h.v == 8
    nvec = sum(int((w[b:b + 8] != 0).any(axis=0).sum()) for b in range(0, 40, 8))
    assert h.num_vectors == nvec
    assert h.total_bytes == p.nbytes and p.nbytes % 256 == 0
    assert p.blob.dtype == np.uint8
    assert bytes(p.blob[:256]) == bytes(h)  # the blob starts with its header
    assert len(p.header_list) == 32 and p.header_list[4] == 40
    q = magicube.Packed.from_bytes(p.op, p.blob.tobytes())
    assert q.header_list == p.header_list
    # The same matrix through DLPack only, and as int16: the same blob.
    assert np.array_equal(magicube.pack_weight(HostDLPack(w), p.op.spec, candidate=p.op.candidate).blob, p.blob)
    assert np.array_equal(p.op.pack(w.astype(np.int16)).blob, p.blob)


def test_corrupt_blobs_are_refused():
    w = vector_sparse(np.random.default_rng(1), 16, 32, 8, 0.5)
    p = magicube.pack_weight(w, "spmm.s8xs8.v8.i32.sm_90")
    bad = p.blob.copy()
    bad[0] ^= 1
    with pytest.raises(magicube.Error, match="magic"):
        magicube.Packed.from_bytes(p.op, bad)
    with pytest.raises(magicube.Error, match="header"):
        magicube.Packed.from_bytes(p.op, p.blob[:100])
    # The body too: a column index past K, a value outside the op's type.
    h = p.header
    bad = p.blob.copy()
    real = next(i for i in range(h.num_slots) if bad[h.col_idx_offset + 4 * i:][:4].view(np.int32)[0] >= 0)
    bad[h.col_idx_offset + 4 * real:][:4].view(np.int32)[0] = 32
    with pytest.raises(magicube.Error, match="is 32, outside A's K=32"):
        magicube.Packed.from_bytes(p.op, bad)
    q = magicube.pack_weight(np.clip(w, -8, 7), "spmm.s4xs8.v8.n64.i32.sm_80")
    bad = q.blob.copy()
    assert magicube.Packed.from_bytes(q.op, bad).nbytes == q.nbytes
    bad[q.header.plane_offset[0]:q.header.plane_offset[0] + q.header.plane_bytes[0]] = 0x88  # -8 everywhere
    with pytest.raises(magicube.Error, match=r"in a pad \(pads hold 0\)"):
        magicube.Packed.from_bytes(q.op, bad)


@pytest.mark.parametrize("matrix, spec, needle", [
    (np.full((8, 8), 100, np.int16), "spmm.s4xs8.v8.i32.sm_90", "lhs A"),
    (np.ones((8, 8), np.float32), "spmm.s8xs8.v8.i32.sm_90", "float32"),
    (np.ones(8, np.int8), "spmm.s8xs8.v8.i32.sm_90", "2-D"),
    (np.ones((8, 8), np.bool_), "spmm.s8xs8.v8.i32.sm_90", "bool"),
])
def test_bad_matrices(matrix, spec, needle):
    with pytest.raises(magicube.Error, match=needle) as e:
        magicube.pack_weight(matrix, spec)
    assert e.value.kind == "invalid"


def test_pack_mask_and_kinds():
    mask = vector_sparse(np.random.default_rng(2), 24, 50, 8, 0.2)
    m = magicube.pack_mask(mask, "sddmm.s8xs8.v8.f16+rc.sm_90", k=64)
    assert m.header.op == 1 and m.header.num_planes == 0
    with pytest.raises(magicube.Error, match="spmm spec"):
        magicube.pack_weight(mask, "sddmm.s8xs8.v8.i32.sm_90")
    with pytest.raises(magicube.Error, match="sddmm spec"):
        magicube.pack_mask(mask, "spmm.s8xs8.v8.i32.sm_90")
    w = magicube.pack_weight(mask, "spmm.s8xs8.v8.i32.sm_90")
    with pytest.raises(magicube.Error, match="SDDMM mask"):
        magicube.spmm(m, np.zeros((50, 4), np.int8))
    with pytest.raises(magicube.Error, match="SpMM weight"):
        magicube.sddmm(w, np.zeros((24, 4), np.int8), np.zeros((50, 4), np.int8))


def test_runs_refused_before_the_gpu():
    w = magicube.pack_weight(vector_sparse(np.random.default_rng(3), 16, 32, 8, 0.5), "spmm.s8xu8.v8.i32.sm_90")
    with pytest.raises(magicube.Error, match="K=31"):
        magicube.spmm(w, np.zeros((31, 4), np.uint8))
    with pytest.raises(magicube.Error, match="layout"):
        magicube.spmm(w, np.zeros((32, 4), np.uint8), b_layout="diagonal")
    with pytest.raises(magicube.Error, match="cannot hold"):
        magicube.spmm(w, np.zeros((32, 4), np.int8))  # u8 values need uint8 or wider
    with pytest.raises(magicube.Error, match="n: 0"):
        magicube.spmm(w, np.zeros((32, 0), np.uint8))
    f = magicube.pack_weight(vector_sparse(np.random.default_rng(3), 16, 32, 8, 0.5), "spmm.s8xs8.v8.f32+rc.sm_90")
    with pytest.raises(magicube.Error, match="row_scale"):
        magicube.spmm(f, np.zeros((32, 4), np.int8))
    with pytest.raises(magicube.Error, match="col_scale: 3 values"):
        magicube.spmm(f, np.zeros((32, 4), np.int8), row_scale=np.ones(16, np.float32),
                      col_scale=np.ones(3, np.float32))


def test_a_valid_run_needs_a_gpu():
    ok, _ = magicube.gpu_available()
    if ok:
        pytest.skip("a GPU is present (test_gpu.py runs it)")
    w = magicube.pack_weight(vector_sparse(np.random.default_rng(4), 16, 32, 8, 0.5), "spmm.s8xs8.v8.i32.sm_90")
    with pytest.raises(magicube.Error) as e:
        magicube.spmm(w, np.zeros((32, 4), np.int8))
    assert e.value.kind == "no-gpu" and str(e.value).startswith("no GPU: ")


def _dense_or_skip(w, spec, **kw):
    try:
        return magicube.pack_weight(w, spec, allow_dense="force", **kw)
    except magicube.Error as e:
        if "dense route unavailable" in str(e):
            pytest.skip(str(e))
        raise


def test_dense_route_is_opt_in():
    rng = np.random.default_rng(11)
    w = vector_sparse(rng, 40, 96, 8, 0.3)
    p = magicube.pack_weight(w, "spmm.s8xs8.v8.i32.sm_90", n=64)
    assert p.op.route == "sparse" and p.op.route_why == "" and p.header.route == 0
    allowed = magicube.Op("spmm.s8xs8.v8.i32.sm_90", allow_dense=True)
    assert allowed.route == "sparse" and allowed.route_why == "no matrix given"
    assert magicube.Op("spmm.s8xs8.v8.i32.sm_90", w, 64, allow_dense=True).route_why != ""
    with pytest.raises(magicube.Error, match="allow_dense: 'yes'"):
        magicube.pack_weight(w, "spmm.s8xs8.v8.i32.sm_90", allow_dense="yes")


def test_dense_route_takes_float_outputs():
    rng = np.random.default_rng(13)
    w = vector_sparse(rng, 40, 96, 8, 0.3)
    p = _dense_or_skip(w, "spmm.s8xs8.v8.bf16+rc+rowbias.sm_90", n=64)
    assert p.op.route == "dense" and p.header.route == 1
    assert np.array_equal(p.blob[p.header.dense_offset:][:40 * 96].view(np.int8).reshape(40, 96), w)


def test_dense_packed_weight_of_u8_holds_its_values_minus_128():
    # u8 does not fit int8: its dense copy is one plane of w - 128 (absent entries too: -128), and
    # the epilogue adds 128 times B's column sums back; against a u8 B it also holds A's row sums.
    rng = np.random.default_rng(14)
    w = vector_sparse(rng, 40, 96, 8, 0.3, lo=0, hi=255, dtype=np.uint8)
    p = _dense_or_skip(w, "spmm.u8xs8.v8.i32.sm_90", n=64)
    h = p.header
    assert p.op.route == "dense" and h.route == 1 and h.dense_bytes == 40 * 96
    plane = p.blob[h.dense_offset:h.dense_offset + h.dense_bytes].view(np.int8).reshape(40, 96)
    assert np.array_equal(plane, (w.astype(np.int16) - 128).astype(np.int8))
    q = _dense_or_skip(w, "spmm.u8xu8.v8.i32.sm_90", n=64).header
    sums_at = (40 * 96 + 255) // 256 * 256
    assert q.dense_bytes == sums_at + 40 * 4
    blob = _dense_or_skip(w, "spmm.u8xu8.v8.i32.sm_90", n=64).blob
    sums = blob[q.dense_offset + sums_at:q.dense_offset + q.dense_bytes].view(np.int32)
    assert np.array_equal(sums, (w.astype(np.int64) - 128).sum(axis=1))


def test_dense_packed_weight_holds_a_dense_copy():
    rng = np.random.default_rng(12)
    w = vector_sparse(rng, 44, 96, 4, 0.4)  # M not a multiple of V = 8... of 4 here: 11 row-blocks
    p = _dense_or_skip(w, "spmm.s8xs8.v4.i32.sm_90", n=16)
    assert p.op.route == "dense" and p.op.route_why == "asked for"
    h = p.header
    assert h.format_version == 4 and h.route == 1 and h.num_planes == 0
    assert h.dense_bytes == 44 * 96 and h.dense_offset % 256 == 0 and h.total_bytes == p.nbytes
    assert np.array_equal(p.blob[h.dense_offset:h.dense_offset + h.dense_bytes].view(np.int8).reshape(44, 96), w)
    q = magicube.Packed.from_bytes(p.op, p.blob.tobytes())
    assert q.header_list == p.header_list and q.header_list[25] == 1
    old = p.blob.copy()
    old[8] = 1  # format_version = 1
    with pytest.raises(magicube.Error, match="format version 1, written before the dense route"):
        magicube.Packed.from_bytes(p.op, old)
    # A sparse op refuses the dense blob (and the other way round) before any device work.
    sparse = magicube.Op(p.op.spec, candidate=p.op.candidate)
    b = np.zeros((96, 16), np.int8)
    with pytest.raises(magicube.Error, match="packed for the dense route, but this op"):
        magicube.spmm(magicube.Packed(sparse, p.blob, p.header), b)


def test_compile_ops_without_a_gpu():
    ops = [magicube.Op("spmm.s8xs8.v8.n64.pf.i32.sm_90"), magicube.Op("sddmm.s8xs8.v8.i32.sm_90")]
    assert magicube.compile_ops(ops, threads=2) == 2
    assert magicube.compile_ops([]) == 0
    with pytest.raises(magicube.Error, match="threads: -1 is not allowed"):
        magicube.compile_ops(ops, threads=-1)
