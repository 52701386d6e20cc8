"""ctypes declarations of the C ABI (include/magicube/magicube.h) and the library's loading.

The library is, in order: $MAGICUBE_LIBRARY, the copy inside this package (magicube/lib/),
or libmagicube.so.0 wherever the dynamic loader finds it. NVRTC (libnvrtc.so.13) is found by
the library's RUNPATH, the loader's path, $CUDA_HOME or /usr/local/cuda.
"""
import ctypes
import os
import threading
from ctypes import POINTER, c_char_p, c_float, c_int, c_int64, c_size_t, c_void_p
from pathlib import Path

# ---- status codes, enums (magicube.h) ---------------------------------------------------------

SUCCESS, ERROR_INVALID, ERROR_COMPILE, ERROR_CUDA, ERROR_NO_GPU, ERROR_BUFFER_TOO_SMALL, ERROR_INTERNAL = range(7)
KIND_NAMES = {1: "invalid", 2: "compile", 3: "cuda", 4: "no-gpu", 5: "buffer-too-small", 6: "internal"}

INT8, UINT8, INT16, UINT16, INT32, INT64, FLOAT32, FLOAT16, BFLOAT16 = range(1, 10)
ROW_MAJOR, COL_MAJOR = 0, 1
BCRS, SRBCRS = 0, 1
TEXT_PLAN, TEXT_SPEC, TEXT_KERNEL, TEXT_CHOSEN_BY, TEXT_ROUTE_WHY = range(5)
(QUERY_OP, QUERY_V, QUERY_LHS_BITS, QUERY_RHS_BITS, QUERY_OUTPUT_DTYPE, QUERY_OUTPUT_ELEMENT_BYTES,
 QUERY_MAX_REDUCTION, QUERY_CANDIDATE, QUERY_DEVICE, QUERY_SCALE, QUERY_BIAS, QUERY_ROUTE) = range(12)
DENSE_NEVER, DENSE_ALLOWED, DENSE_FORCED = range(3)
PACKED_HEADER_BYTES = 256
PACKED_MAGIC = 0x4B5043414D
PACKED_FORMAT_VERSION = 4


class Error(Exception):
    """The one exception of the magicube package: a refused input or a failed stage.

    `kind` is "invalid" (a bad spec, value, shape or option: the message names it), "compile",
    "cuda", "no-gpu", "buffer-too-small" or "internal"; `status` the C status code.
    """

    def __init__(self, message, kind="invalid", status=ERROR_INVALID):
        super().__init__(message)
        self.kind = kind
        self.status = status


# ---- structs ----------------------------------------------------------------------------------


class Matrix(ctypes.Structure):
    _fields_ = [("rows", c_int64), ("cols", c_int64), ("dtype", c_int), ("values", c_void_p),
                ("block_ptr", POINTER(c_int64)), ("col", POINTER(ctypes.c_int32)), ("v", c_int)]


class OpOptions(ctypes.Structure):
    _fields_ = [("candidate", c_int), ("device", c_int)]


class OpOptionsEx(ctypes.Structure):
    """magicube_op_options_ex: `size` first (sizeof as this binding knows it)."""
    _fields_ = [("size", c_size_t), ("candidate", c_int), ("device", c_int), ("dense", c_int)]


_HEADER_FIELDS = ["magic", "format_version", "op", "plan_fingerprint", "rows", "cols", "v", "num_blocks",
                  "max_block_length", "num_slots", "num_vectors", "stride", "total_bytes", "row_ptr_offset",
                  "col_idx_offset", "bcrs_ptr_offset", "num_planes"]


class PackedHeader(ctypes.Structure):
    """magicube_packed_header: 32 int64 values (a packed blob's first 256 bytes)."""
    _fields_ = ([(f, c_int64) for f in _HEADER_FIELDS] + [("plane_offset", c_int64 * 4), ("plane_bytes", c_int64 * 4),
                                                           ("route", c_int64), ("dense_offset", c_int64),
                                                           ("dense_bytes", c_int64), ("reserved", c_int64 * 4)])

    def to_list(self):
        return list((c_int64 * 32).from_buffer_copy(bytes(self)))

    @classmethod
    def from_list(cls, values):
        values = list(values)
        if len(values) != 32:
            raise Error(f"header: {len(values)} values, expected 32")
        return cls.from_buffer_copy(bytes((c_int64 * 32)(*values)))


assert ctypes.sizeof(PackedHeader) == PACKED_HEADER_BYTES


class Dense(ctypes.Structure):
    _fields_ = [("data", c_void_p), ("dtype", c_int), ("layout", c_int)]


class Epilogue(ctypes.Structure):
    _fields_ = [("alpha", c_float), ("row_scale", c_void_p), ("col_scale", c_void_p), ("bias", c_void_p)]


# ---- loading ----------------------------------------------------------------------------------

_lock = threading.Lock()
_lib = None


def _candidates():
    env = os.environ.get("MAGICUBE_LIBRARY")
    if env:
        return [env]
    here = Path(__file__).resolve().parent / "lib" / "libmagicube.so"
    return ([str(here)] if here.exists() else []) + ["libmagicube.so.0"]


def _preload_nvrtc():
    """Loads libnvrtc.so.13 globally from the usual places, for a library whose RUNPATH misses it."""
    dirs = [os.environ.get("CUDA_HOME"), os.environ.get("CUDA_PATH"), "/usr/local/cuda"]
    for d in filter(None, dirs):
        for sub in ("lib64", "lib", "targets/x86_64-linux/lib"):
            p = Path(d) / sub / "libnvrtc.so.13"
            if p.exists():
                try:
                    ctypes.CDLL(str(p), mode=ctypes.RTLD_GLOBAL)
                    return True
                except OSError:
                    pass
    return False


def _declare(lib):
    def fn(name, restype, *argtypes):
        f = getattr(lib, name)
        f.restype = restype
        f.argtypes = list(argtypes)

    fn("magicube_last_error", c_char_p)
    fn("magicube_status_name", c_char_p, c_int)
    fn("magicube_version", c_char_p)
    fn("magicube_plan_describe", c_int, c_char_p, c_char_p, c_size_t, POINTER(c_size_t))
    fn("magicube_op_create", c_int, c_char_p, POINTER(Matrix), c_int64, POINTER(OpOptions), POINTER(c_void_p))
    fn("magicube_op_create_ex", c_int, c_char_p, POINTER(Matrix), c_int64, POINTER(OpOptionsEx), POINTER(c_void_p))
    fn("magicube_op_destroy", None, c_void_p)
    fn("magicube_op_text", c_int, c_void_p, c_int, c_char_p, c_size_t, POINTER(c_size_t))
    fn("magicube_op_query", c_int, c_void_p, c_int, POINTER(c_int64))
    fn("magicube_op_load", c_int, c_void_p)
    fn("magicube_ops_compile", c_int, POINTER(c_void_p), c_size_t, c_int, POINTER(c_size_t))
    fn("magicube_pack", c_int, c_void_p, POINTER(Matrix), POINTER(c_void_p))
    fn("magicube_packed_destroy", None, c_void_p)
    fn("magicube_packed_data", c_void_p, c_void_p)
    fn("magicube_packed_bytes", c_size_t, c_void_p)
    fn("magicube_packed_get_header", POINTER(PackedHeader), c_void_p)
    fn("magicube_packed_read_header", c_int, c_void_p, c_size_t, POINTER(PackedHeader))
    fn("magicube_packed_check", c_int, c_void_p, c_void_p, c_size_t, POINTER(PackedHeader))
    fn("magicube_spmm_workspace_bytes", c_int, c_void_p, POINTER(PackedHeader), POINTER(Dense), c_int64,
       POINTER(Dense), POINTER(c_size_t))
    fn("magicube_spmm_run", c_int, c_void_p, POINTER(PackedHeader), c_void_p, POINTER(Dense), c_int64, POINTER(Dense),
       POINTER(Epilogue), c_void_p, c_size_t, c_void_p)
    fn("magicube_sddmm_workspace_bytes", c_int, c_void_p, POINTER(PackedHeader), POINTER(Dense), POINTER(Dense),
       c_int64, POINTER(c_size_t))
    fn("magicube_sddmm_run", c_int, c_void_p, POINTER(PackedHeader), c_void_p, POINTER(Dense), POINTER(Dense),
       c_int64, c_void_p, c_int, POINTER(Epilogue), c_void_p, c_size_t, c_void_p)
    fn("magicube_output_elements", c_int, POINTER(PackedHeader), c_int64, POINTER(c_int64))
    fn("magicube_output_bytes", c_int, c_void_p, POINTER(PackedHeader), c_int64, POINTER(c_size_t))
    fn("magicube_quantize_rows", c_int, c_int, POINTER(Dense), c_int64, c_int64, c_void_p, c_void_p, c_void_p)
    fn("magicube_spmm_host", c_int, c_void_p, POINTER(PackedHeader), c_void_p, POINTER(Dense), c_int64, POINTER(Dense),
       POINTER(Epilogue))
    fn("magicube_sddmm_host", c_int, c_void_p, POINTER(PackedHeader), c_void_p, POINTER(Dense), POINTER(Dense), c_int64,
       c_void_p, c_int, POINTER(Epilogue))
    return lib


def lib():
    """The loaded libmagicube.so (loaded on first use)."""
    global _lib
    if _lib is not None:
        return _lib
    with _lock:
        if _lib is not None:
            return _lib
        errors = []
        for path in _candidates():
            for attempt in range(2):
                try:
                    _lib = _declare(ctypes.CDLL(path, mode=ctypes.RTLD_LOCAL))
                    _lib._magicube_path = path
                    return _lib
                except OSError as e:
                    errors.append(f"{path}: {e}")
                    if attempt == 0 and "nvrtc" in str(e) and _preload_nvrtc():
                        continue
                    break
        raise Error("cannot load libmagicube.so (set MAGICUBE_LIBRARY to its path): " + "; ".join(errors),
                    kind="internal", status=ERROR_INTERNAL)


def library_path():
    """The file libmagicube.so was loaded from."""
    return lib()._magicube_path


def check(status):
    """Raises Error for a failed C call, with the library's message for this thread."""
    if status != SUCCESS:
        message = lib().magicube_last_error().decode("utf-8", "replace")
        raise Error(message, KIND_NAMES.get(status, "internal"), status)


def text(write):
    """A text the C ABI writes into a buffer: asks its size, then fills it."""
    needed = c_size_t(0)
    check(write(None, 0, ctypes.byref(needed)))
    buf = ctypes.create_string_buffer(needed.value)
    check(write(buf, needed.value, ctypes.byref(needed)))
    return buf.value.decode("utf-8")
