"""The host side of ``tl.device_print`` / ``tl.device_assert`` in compiled kernels.

Kernels that print or assert take a hidden log buffer (see compiler/codegen_msl/debug.py); after the
launch the host prints the records (ordered by program, call site and element, in the interpreter's
format) and raises ``DeviceAssertionError`` for the first failed assertion.
"""

from __future__ import annotations

import linecache
import sys
from typing import Any

import numpy as np

from ..errors import LaunchError
from ..language import dtypes as D

LOG_PARAM = "__enc_log"
EXT_PARAM = "__enc_extents"  # msl_bounds_checks: [base, end) bytes of each pointer argument (codegen_msl/debug.py)
KIND_BOUNDS = 3
CAPACITY_WORDS = 1 << 20  # 4 MiB of records per launch; more are dropped, and the report says so


class DeviceAssertionError(LaunchError, AssertionError):
    """A ``tl.device_assert`` condition was false for some element."""


class DeviceBoundsError(LaunchError):
    """An access the MSL's bounds checks (``msl_bounds_checks``) found outside its pointer argument."""


def new_extents(kernel: Any) -> np.ndarray:
    """The extents buffer of a kernel compiled with ``msl_bounds_checks``: two words per pointer argument."""
    n = sum(1 for p in kernel.abi.buffer_params if not p.name.startswith("__enc_"))
    return np.zeros(2 * n, np.uint64)


def fill_extents(extents: np.ndarray, spans: list[tuple[int, int]]) -> None:
    """Write each pointer argument's ``(first byte, one past the last byte)`` address, in argument order."""
    if len(spans) * 2 != len(extents):
        raise LaunchError(f"the bounds-check extents buffer has room for {len(extents) // 2} arguments, "
                          f"got {len(spans)}")
    for i, (lo, hi) in enumerate(spans):
        extents[2 * i], extents[2 * i + 1] = lo, hi


def uses_log(kernel: Any) -> bool:
    return bool(kernel.metadata.get("log_sites"))


def new_log() -> np.ndarray:
    log = np.zeros(CAPACITY_WORDS, np.uint32)
    log[0] = 2  # records start after the cursor and the capacity
    log[1] = CAPACITY_WORDS
    return log


def _value(words: np.ndarray, dtype_name: str, hex_: bool) -> str:
    lo, hi = int(words[0]), int(words[1])
    raw = lo | (hi << 32)
    ty = D.BY_NAME[dtype_name]
    bits = ty.primitive_bitwidth
    if hex_:
        return f"0x{raw & ((1 << max(bits, 8)) - 1):0{max(bits, 8) // 4}x}"
    if ty.is_bool():
        return str(bool(raw & 1))
    if ty.is_floating():
        np_t = {"fp32": np.uint32, "fp16": np.uint16, "bf16": np.uint16}[dtype_name]
        v = np.array([raw], np.uint64).astype(np_t).view(ty.to_numpy())[0]
        return str(v.item() if dtype_name != "bf16" else float(v))
    v = raw & ((1 << bits) - 1)
    if ty.is_int_signed() and v >= 1 << (bits - 1):
        v -= 1 << bits
    return str(v)


def bounds_message(kernel: Any, info: dict, pid: tuple, thread: int, offset: int,
                   extents: np.ndarray | None) -> str:
    """The error for an access the MSL's bounds checks refused, worded as the cpu backend's checks word theirs."""
    itemsize = int(info["itemsize"])
    element = offset // itemsize if offset % itemsize == 0 else offset / itemsize
    arg = info["arg"]
    size = ""
    if extents is not None:
        names = [p.name for p in sorted(kernel.abi.buffer_params, key=lambda p: p.slot)
                 if not p.name.startswith("__enc_")]
        i = names.index(arg)
        size = f" ('{arg}' has {(int(extents[2 * i + 1]) - int(extents[2 * i])) // itemsize} elements)"
    where = ""
    if info.get("line"):
        text = linecache.getline(info["file"] or "", info["line"]).strip()
        where = f"\n  at line {info['line']} of {info['file']}" + (f": {text}" if text else "")
    return (f"kernel '{kernel.name}', program ({pid[0]},{pid[1]},{pid[2]}), thread {thread}: out-of-bounds "
            f"{info['access']} of {info['nbytes']} bytes through argument '{arg}' at element index {element}{size}; "
            f"found by the MSL's bounds checks (msl_bounds_checks), which skipped the access{where}")


def report(kernel: Any, log: np.ndarray, file: Any = None, extents: np.ndarray | None = None) -> None:
    """Print the launch's device_print records, then raise for the first out-of-bounds access the MSL's bounds
    checks logged, else for the first failed device_assert."""
    sites = kernel.metadata["log_sites"]
    end = min(int(log[0]), len(log))
    records = []
    at = 2
    while at < end:
        head = int(log[at])
        site, kind = head & 0xFFFFFF, head >> 24
        info = sites[site]
        n = 5 + 2 * len(info.get("dtypes", []))
        pid = (int(log[at + 1]), int(log[at + 2]), int(log[at + 3]))
        records.append((pid[::-1], site, int(log[at + 4]), kind, pid, log[at + 5:at + n]))
        at += n
    records.sort(key=lambda r: r[:3])
    out = file or sys.stdout
    failed = None
    bounds = None
    for _, site, element, kind, pid, words in records:
        info = sites[site]
        shape = info.get("shape") or []
        idx = ", ".join(str(int(i)) for i in np.unravel_index(element, shape)) if shape else ""
        if kind == 1:
            vals = " ".join(_value(words[2 * i:2 * i + 2], t, info.get("hex", False))
                            for i, t in enumerate(info["dtypes"]))
            print(f"pid {pid} idx ({idx}) {info['prefix']}{vals}", file=out)
        elif kind == KIND_BOUNDS:
            if bounds is None:
                offset = int(np.array(words[:2], np.uint32).view(np.int64)[0])
                bounds = bounds_message(kernel, info, pid, element, offset, extents)
        elif failed is None:
            failed = (pid, idx, info)
    if int(log[0]) > len(log):
        print(f"[enceladus] kernel '{kernel.name}': the device log overflowed; some records were dropped", file=out)
    if bounds is not None:
        raise DeviceBoundsError(bounds)
    if failed is not None:
        pid, idx, info = failed
        where = f" (line {info['line']} of {info['file']})" if info.get("line") else ""
        raise DeviceAssertionError(f"device_assert failed in kernel '{kernel.name}', program {pid}"
                                   + (f", tile index ({idx})" if idx else "") + f": {info['msg']}{where}")
