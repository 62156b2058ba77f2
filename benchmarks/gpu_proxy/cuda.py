"""The CUDA driver API through ctypes (no extra package): load cubins, launch, allocate, copy, time.

Every call's status is checked; a failure raises CudaError naming the call and CUDA's error string.
"""

from __future__ import annotations

import ctypes
import os
import struct
import subprocess
import threading
from collections.abc import Sequence

HERE = os.path.dirname(os.path.abspath(__file__))
INCLUDE = os.path.join(HERE, "include")
# No fast-math flags: IEEE division and square root, denormals kept (nvcc's defaults, spelled out).
NVCC_FLAGS = ("-std=c++20", "-arch=sm_90", "-O3", "-cubin", "-ftz=false", "-prec-div=true", "-prec-sqrt=true",
              "-diag-suppress=177,550,1835")


class CudaError(RuntimeError):
    """A CUDA driver call failed."""


_lib: ctypes.CDLL | None = None


def lib() -> ctypes.CDLL:
    """libcuda, initialised, with the primary context of device 0 current on this thread."""
    global _lib
    if _lib is None:
        _lib = ctypes.CDLL("libcuda.so.1")
        check(_lib.cuInit(0), "cuInit")
        dev = ctypes.c_int()
        check(_lib.cuDeviceGet(ctypes.byref(dev), 0), "cuDeviceGet")
        ctx = ctypes.c_void_p()
        check(_lib.cuDevicePrimaryCtxRetain(ctypes.byref(ctx), dev), "cuDevicePrimaryCtxRetain")
        check(_lib.cuCtxSetCurrent(ctx), "cuCtxSetCurrent")
    return _lib


def check(status: int, what: str) -> None:
    """Raise CudaError when a driver call returned an error."""
    if status != 0:
        msg = ctypes.c_char_p()
        if _lib is not None:
            _lib.cuGetErrorString(status, ctypes.byref(msg))
        raise CudaError(f"{what} failed: error {status} ({(msg.value or b'?').decode()})")


def nvcc_flags(extra: Sequence[str] = ()) -> list[str]:
    """NVCC_FLAGS followed by ``extra``, where an extra ``-name=value`` replaces NVCC_FLAGS' ``-name=...``
    (nvcc refuses an option given twice with different values)."""
    keys = {f.split("=", 1)[0] for f in extra if "=" in f}
    return [f for f in NVCC_FLAGS if f.split("=", 1)[0] not in keys or "=" not in f] + list(extra)


def build_cubin(source: str, out_path: str, extra: Sequence[str] = ()) -> str:
    """Compile CUDA source text to a cubin with nvcc (cached by the caller); returns nvcc's messages."""
    # private file names: several processes (sanitizer shards) may build into one directory at once
    stem = f"{out_path[: -len('.cubin')]}.{os.getpid()}.{threading.get_ident()}"
    src, tmp = stem + ".cu", stem + ".cubin.tmp"
    with open(src, "w") as f:
        f.write(source)
    cmd = ["nvcc", *nvcc_flags(extra), "-I", INCLUDE, src, "-o", tmp]
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode != 0:
        raise CudaError(f"nvcc failed for {src}:\n{proc.stderr[-4000:]}")
    os.replace(tmp, out_path)
    return proc.stderr


class Module:
    """A loaded cubin."""

    def __init__(self, path: str) -> None:
        self.handle = ctypes.c_void_p()
        with open(path, "rb") as f:
            self._image = f.read()
        check(lib().cuModuleLoadData(ctypes.byref(self.handle), self._image), f"cuModuleLoadData({path})")

    def function(self, symbol: str) -> ctypes.c_void_p:
        fn = ctypes.c_void_p()
        check(lib().cuModuleGetFunction(ctypes.byref(fn), self.handle, symbol.encode()),
              f"cuModuleGetFunction({symbol})")
        return fn


def launch(fn: ctypes.c_void_p, grid: Sequence[int], block: int, params: Sequence[bytes], stream: int = 0) -> None:
    """Launch with each parameter given as its raw bytes (pointers as 8-byte little-endian ints)."""
    bufs = [ctypes.create_string_buffer(p, max(len(p), 1)) for p in params]
    arr = (ctypes.c_void_p * max(len(bufs), 1))(*[ctypes.cast(b, ctypes.c_void_p) for b in bufs])
    check(lib().cuLaunchKernel(fn, ctypes.c_uint(grid[0]), ctypes.c_uint(grid[1]), ctypes.c_uint(grid[2]),
                               ctypes.c_uint(block), ctypes.c_uint(1), ctypes.c_uint(1), ctypes.c_uint(0),
                               ctypes.c_void_p(stream), arr, None), "cuLaunchKernel")


def pointer(address: int) -> bytes:
    """A device pointer as a kernel parameter."""
    return struct.pack("<Q", address)


def alloc(nbytes: int) -> int:
    ptr = ctypes.c_uint64()
    check(lib().cuMemAlloc_v2(ctypes.byref(ptr), ctypes.c_size_t(max(nbytes, 1))), f"cuMemAlloc({nbytes})")
    return ptr.value


def free(ptr: int) -> None:
    check(lib().cuMemFree_v2(ctypes.c_uint64(ptr)), "cuMemFree")


def upload(ptr: int, data: bytes) -> None:
    check(lib().cuMemcpyHtoD_v2(ctypes.c_uint64(ptr), data, ctypes.c_size_t(len(data))), "cuMemcpyHtoD")


def download(ptr: int, nbytes: int) -> bytes:
    buf = ctypes.create_string_buffer(nbytes)
    check(lib().cuMemcpyDtoH_v2(buf, ctypes.c_uint64(ptr), ctypes.c_size_t(nbytes)), "cuMemcpyDtoH")
    return buf.raw


def synchronize() -> None:
    check(lib().cuCtxSynchronize(), "cuCtxSynchronize (a kernel failed)")
