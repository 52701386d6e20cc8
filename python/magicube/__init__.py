"""Magicube JIT from Python: quantized sparse tensor-core kernels (SpMM, SDDMM), planned,
generated and compiled at run time by libmagicube.so (a ctypes layer over its C ABI).

    import magicube
    print(magicube.plan("spmm.s8xs8.v8.i32.sm_90"))           # what `magicube plan` prints
    w = magicube.pack_weight(w_int8, "spmm.s8xs8.v8.i32.sm_90")  # numpy M x K, host
    y = magicube.spmm(w, x, b_layout="col", out_layout="col")    # x: torch/CuPy N x K on the GPU

`magicube.torch` adds the torch.library ops magicube::spmm / magicube::sddmm and SparseLinear.
Every refused input or failure raises magicube.Error (its `kind`: invalid, compile, cuda,
no-gpu, ...).
"""
from ._version import __version__
from ._lib import Error, library_path
from ._api import Op, Packed, compile_ops, gpu_available, pack_mask, pack_weight, plan, sddmm, spmm, version

__all__ = ["__version__", "Error", "Op", "Packed", "compile_ops", "gpu_available", "library_path", "pack_mask", "pack_weight",
           "plan", "sddmm", "spmm", "version"]
