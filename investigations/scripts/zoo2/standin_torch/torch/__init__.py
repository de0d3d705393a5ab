"""A stand-in for the few PyTorch calls zoo2.py's GPU work makes, over the
stand-in CUDA runtime of tests/standin (same symbol names, so a capture
probes it as it would the real one). For running the zoo2 causes that need
no real tensor work on a machine without a GPU: the causes themselves (the
garbage collector, a subprocess, a pipe, a lock, a queue, files, a memory
map) are the real thing; only the GPU work is stood in for.

INGERO_STANDIN_LIB_DIR names the folder with libcudart.so.13 and
libcuda.so.1; the stand-in's INGERO_STANDIN_SYNC_US sets how long each
synchronisation waits (the GPU time of a step)."""
import ctypes
import os

__version__ = "0.0-standin"


class _Version:
    cuda = "standin"


version = _Version()

bfloat16, float32, uint8, long, int64 = "bfloat16", "float32", "uint8", "int64", "int64"
_NP = {"uint8": "uint8", "float32": "float32", "bfloat16": "float32", "int64": "int64"}


class _Dim3(ctypes.Structure):
    _fields_ = [("x", ctypes.c_uint), ("y", ctypes.c_uint), ("z", ctypes.c_uint)]


_rt = None


def _lib():
    global _rt
    if _rt is None:
        d = os.environ["INGERO_STANDIN_LIB_DIR"]
        ctypes.CDLL(os.path.join(d, "libcuda.so.1"), mode=ctypes.RTLD_GLOBAL)
        _rt = ctypes.CDLL(os.path.join(d, "libcudart.so.13"), mode=ctypes.RTLD_GLOBAL)
        _rt.cudaLaunchKernel.argtypes = [ctypes.c_void_p, _Dim3, _Dim3, ctypes.c_void_p,
                                         ctypes.c_size_t, ctypes.c_void_p]
        _rt.cudaMemcpyAsync.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_size_t,
                                        ctypes.c_int, ctypes.c_void_p]
        _rt.cudaStreamSynchronize.argtypes = [ctypes.c_void_p]
    return _rt


# The stand-in's copies move real bytes: between two scratch buffers, at
# most 1 MiB a copy (the bytes a copy stands for are not the point here).
_SCRATCH = 1 << 20
_src = ctypes.create_string_buffer(_SCRATCH)
_dst = ctypes.create_string_buffer(_SCRATCH)


def _copy(nbytes):
    n = max(1, min(int(nbytes), _SCRATCH))
    _lib().cudaMemcpyAsync(ctypes.addressof(_dst), ctypes.addressof(_src), n, 1, None)


def _size(args):
    if len(args) == 1 and isinstance(args[0], (tuple, list)):
        return tuple(args[0])
    return tuple(args)


class Tensor:
    """Shape and dtype only; device tensors live on the stand-in GPU."""

    def __init__(self, shape, dtype="float32", device="cpu"):
        self.shape, self.dtype, self.device = tuple(shape), dtype, str(device)

    def numel(self):
        n = 1
        for s in self.shape:
            n *= int(s)
        return n

    def numpy(self):
        import numpy as np
        return np.zeros(self.shape, dtype=_NP.get(self.dtype, "float32"))

    def copy_(self, src, non_blocking=False):
        if "cuda" in self.device or "cuda" in getattr(src, "device", ""):
            _copy(self.numel())
        return self

    def to(self, *a, **k):
        dev = k.get("device") or next((x for x in a if isinstance(x, str)), self.device)
        out = Tensor(self.shape, self.dtype, dev)
        if "cuda" in str(dev):
            _copy(self.numel())
        return out

    def cuda(self, *a, **k):
        return self.to("cuda")

    def pin_memory(self):
        return self

    def item(self):
        return 0.0

    def __getattr__(self, name):
        return lambda *a, **k: self


def _make(*size, dtype="float32", device="cpu", **_):
    return Tensor(_size(size), dtype, device)


randn = zeros = empty = ones = _make


def full(size, value, dtype="float32", device="cpu", **_):
    return Tensor(_size([size]), dtype, device)


def empty_like(t, **_):
    return Tensor(t.shape, t.dtype, t.device)


def from_numpy(a):
    return Tensor(a.shape, str(a.dtype), "cpu")


def mm(x, y, out=None):
    _lib().cudaLaunchKernel(None, _Dim3(64, 1, 1), _Dim3(256, 1, 1), None, 0, None)
    return out if out is not None else Tensor((x.shape[0], y.shape[-1]), x.dtype, x.device)


def set_num_threads(n):
    pass


def get_num_threads():
    return os.cpu_count() or 1


class _NoGrad:
    def __enter__(self):
        return self

    def __exit__(self, *a):
        return False


def no_grad():
    return _NoGrad()


class _Event:
    """Events time the stand-in's synchronisation: one sync per timed batch."""

    def __init__(self, enable_timing=False):
        self.t = 0.0

    def record(self, stream=None):
        import time
        self.t = time.perf_counter()

    def synchronize(self):
        _lib().cudaStreamSynchronize(None)

    def elapsed_time(self, other):
        sync_us = float(os.environ.get("INGERO_STANDIN_SYNC_US", "0") or 0)
        return max(sync_us / 1e3, 0.001)


class _Cuda:
    Event = _Event

    @staticmethod
    def init():
        _lib()

    @staticmethod
    def synchronize():
        _lib().cudaStreamSynchronize(None)

    @staticmethod
    def get_device_name(i=0):
        return "stand-in GPU"

    @staticmethod
    def empty_cache():
        pass

    @staticmethod
    def memory_reserved(*a):
        return 0

    @staticmethod
    def _sleep(cycles):
        raise RuntimeError("no sleep kernel on the stand-in")


cuda = _Cuda()
