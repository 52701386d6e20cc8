"""Reads any DLPack tensor (numpy, torch, CuPy, JAX, ...) into a small description: data
pointer, shape, dtype, device. Host tensors become numpy arrays; device tensors are only
described (their memory is the producer's: keep the object alive while work runs on it)."""
import ctypes
from ctypes import POINTER, c_int, c_int64, c_uint8, c_uint16, c_uint64, c_void_p

import numpy as np

from . import _lib
from ._lib import Error

KDL_CPU, KDL_CUDA, KDL_CUDA_HOST, KDL_CUDA_MANAGED = 1, 2, 3, 13


class _DLDevice(ctypes.Structure):
    _fields_ = [("device_type", c_int), ("device_id", c_int)]


class _DLDataType(ctypes.Structure):
    _fields_ = [("code", c_uint8), ("bits", c_uint8), ("lanes", c_uint16)]


class _DLTensor(ctypes.Structure):
    _fields_ = [("data", c_void_p), ("device", _DLDevice), ("ndim", c_int), ("dtype", _DLDataType),
                ("shape", POINTER(c_int64)), ("strides", POINTER(c_int64)), ("byte_offset", c_uint64)]


class _DLManagedTensor(ctypes.Structure):
    _fields_ = [("dl_tensor", _DLTensor), ("manager_ctx", c_void_p), ("deleter", c_void_p)]


_get_pointer = ctypes.pythonapi.PyCapsule_GetPointer
_get_pointer.restype = c_void_p
_get_pointer.argtypes = [ctypes.py_object, ctypes.c_char_p]

# (DLPack type code, bits) -> magicube_dtype; codes: 0 int, 1 uint, 2 float, 4 bfloat
_DTYPES = {(0, 8): _lib.INT8, (1, 8): _lib.UINT8, (0, 16): _lib.INT16, (1, 16): _lib.UINT16, (0, 32): _lib.INT32,
           (0, 64): _lib.INT64, (2, 32): _lib.FLOAT32, (2, 16): _lib.FLOAT16, (4, 16): _lib.BFLOAT16}
DTYPE_NAMES = {_lib.INT8: "int8", _lib.UINT8: "uint8", _lib.INT16: "int16", _lib.UINT16: "uint16",
               _lib.INT32: "int32", _lib.INT64: "int64", _lib.FLOAT32: "float32", _lib.FLOAT16: "float16",
               _lib.BFLOAT16: "bfloat16"}
NUMPY_DTYPES = {_lib.INT8: np.int8, _lib.UINT8: np.uint8, _lib.INT16: np.int16, _lib.UINT16: np.uint16,
                _lib.INT32: np.int32, _lib.INT64: np.int64, _lib.FLOAT32: np.float32, _lib.FLOAT16: np.float16}


class View:
    """A tensor as the C ABI takes it: ptr, shape, magicube dtype, device, contiguity."""

    def __init__(self, obj, ptr, shape, dtype, device_type, device_id, contiguous, capsule=None):
        self.obj, self.ptr, self.shape, self.dtype = obj, ptr, tuple(shape), dtype
        self.device_type, self.device_id, self.contiguous = device_type, device_id, contiguous
        self._capsule = capsule  # keeps the producer's export alive

    @property
    def on_device(self):
        return self.device_type in (KDL_CUDA, KDL_CUDA_MANAGED)

    @property
    def dtype_name(self):
        return DTYPE_NAMES.get(self.dtype, "unsupported")


def _from_numpy(a, name):
    if a.dtype == np.dtype("bool") or a.dtype.kind not in "iuf":
        raise Error(f"{name}: dtype {a.dtype} is not supported (integers of 8..64 bits, float16/32)")
    code = {"i": 0, "u": 1, "f": 2}[a.dtype.kind]
    dtype = _DTYPES.get((code, a.dtype.itemsize * 8))
    if dtype is None:
        raise Error(f"{name}: dtype {a.dtype} is not supported")
    return View(a, a.ctypes.data, a.shape, dtype, KDL_CPU, 0, a.flags.c_contiguous)


def view(obj, name, stream=None):
    """Describes `obj` (numpy array, or anything with __dlpack__). Host arrays come back as
    C-contiguous numpy views (copied only when not contiguous)."""
    if isinstance(obj, np.ndarray):
        return _from_numpy(np.ascontiguousarray(obj), name)
    if not hasattr(obj, "__dlpack__"):
        try:
            return _from_numpy(np.ascontiguousarray(np.asarray(obj)), name)
        except Exception as e:  # noqa: BLE001
            raise Error(f"{name}: a {type(obj).__name__} is neither a DLPack tensor nor array-like ({e})") from None
    dev_type, dev_id = obj.__dlpack_device__()
    if int(dev_type) in (KDL_CPU, KDL_CUDA_HOST):
        return _from_numpy(np.ascontiguousarray(np.from_dlpack(obj)), name)
    if int(dev_type) not in (KDL_CUDA, KDL_CUDA_MANAGED):
        raise Error(f"{name}: a tensor on DLPack device type {int(dev_type)} (supported: CPU, CUDA)")
    # The consumer's stream: the producer orders its work before it (1 = the legacy default stream).
    capsule = obj.__dlpack__(stream=stream if stream else 1)
    managed = _DLManagedTensor.from_address(_get_pointer(capsule, b"dltensor"))
    t = managed.dl_tensor
    if t.dtype.lanes != 1 or (t.dtype.code, t.dtype.bits) not in _DTYPES:
        raise Error(f"{name}: DLPack dtype (code {t.dtype.code}, {t.dtype.bits} bits) is not supported")
    shape = [t.shape[i] for i in range(t.ndim)]
    contiguous = True
    if t.strides:
        expected = 1
        for i in reversed(range(t.ndim)):
            if shape[i] != 1 and t.strides[i] != expected:
                contiguous = False
            expected *= shape[i]
    ptr = (t.data or 0) + t.byte_offset
    return View(obj, ptr, shape, _DTYPES[(t.dtype.code, t.dtype.bits)], t.device.device_type, t.device.device_id,
                contiguous, capsule)
