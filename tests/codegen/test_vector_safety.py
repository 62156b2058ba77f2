"""Vectorized loads and stores checked on values, not only on metadata: ragged tails and views misaligned
by one element, for every vector width, with sentinels around every array (tests/paths.py ``guard``).

A compiler that vectorized a misaligned access or let a vector store run past the mask would pass the
metadata tests; here it fails: a misaligned 16-byte access faults on the cpu backend (the compat headers'
vector types are 16-byte aligned, as Metal requires), a store past ``n`` overwrites the sentinel tail.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import enceladus
from paths import ALL_PATHS, cpu_available, guard, needs_cpu, on_path, path_missing

from . import vec_kernels as vk

# (dtype, BLOCK, elements per access when aligned and n is a multiple of 16): every vector width
WIDTHS = [(np.int8, 2048, 16), (np.float16, 2048, 8), (np.float32, 2048, 4), (np.int64, 2048, 2),
          (np.float32, 256, 2)]


def _copy(dtype, n: int, x_off: int, out_off: int, block: int, path: str):
    """Copy n elements with copy_kernel from a view x_off elements past a 64-byte boundary to one out_off
    past; return (compiled accesses, output) after checking values and sentinels."""
    item = np.dtype(dtype).itemsize
    src = (np.arange(n) % 97 + 1).astype(dtype)
    gx, go = guard(src, x_off * item), guard(np.zeros(n, dtype), out_off * item)
    kernel = on_path(vk.copy_kernel, path)
    grid = (enceladus.cdiv(n, block),)
    kernel[grid](gx.view, go.view, n, BLOCK=block)
    what = f"copy of {n} {np.dtype(dtype)} on the {path} path, x +{x_off}, out +{out_off} elements"
    go.check(f"{what}: out")
    gx.check(f"{what}: x")
    np.testing.assert_array_equal(go.view, src, err_msg=what)
    if path == "cpu":
        return [(a.kind, a.vector) for a in vk.copy_kernel.warmup(gx.view, go.view, n, BLOCK=block, grid=grid)
                .accesses]
    return None


@pytest.mark.parametrize("path", ALL_PATHS)
@pytest.mark.parametrize("dtype,block,vec", WIDTHS, ids=lambda v: getattr(v, "__name__", str(v)))
def test_ragged_tails_and_misaligned_views(dtype, block, vec, path):
    if path == "cpu" and not cpu_available():
        path_missing("cpu", "no C++ compiler")
    # n a multiple of 16 but not of BLOCK: the last program's mask cuts off at a vector boundary
    acc = _copy(dtype, block + 16, 0, 0, block, path)
    assert acc in (None, [("load", vec), ("store", vec)])
    # ragged n: the masks are constant only in runs of 1, so every run checks its mask: a vector where it is
    # true throughout, element by element in the run that holds n (a vector there would cross n)
    for n in (block + 1, block + vec - 1 if vec > 2 else block + 3):
        acc = _copy(dtype, n, 0, 0, block, path)
        assert acc in (None, [("load", vec), ("store", vec)])
    # a view offset by one element: only the access through that pointer loses its vectors
    acc = _copy(dtype, 2 * block, 1, 0, block, path)
    assert acc in (None, [("load", 1), ("store", vec)])
    acc = _copy(dtype, 2 * block - 16, 0, 1, block, path)
    assert acc in (None, [("load", vec), ("store", 1)])


_MUTANT = r"""
import sys
import numpy as np
sys.path[:0] = ["tests", "."]
from enceladus.compiler.codegen_msl.memory import MemoryMixin
from paths import guard
from tests.codegen import vec_kernels as vk

real = MemoryMixin.vector_width
def ignore_alignment(self, op, layout, itemsize):  # the mutation: every pointer taken as 16-byte aligned
    key = op.operands[0].id
    info = self.axis[key]  # an immutable AxisInfo: replaced for the call, then put back
    self.axis[key] = info._replace(divisibility=tuple(max(d, 16) for d in info.divisibility))
    try:
        return real(self, op, layout, itemsize)
    finally:
        self.axis[key] = info
MemoryMixin.vector_width = ignore_alignment

x = np.arange(4096, dtype=np.float32)
gx, go = guard(x, 4), guard(np.zeros(4096, np.float32), 4)
ck = vk.copy_kernel.warmup(gx.view, go.view, 4096, BLOCK=1024, grid=(4,))
print("MUTATED", [a.vector for a in ck.accesses], flush=True)
vk.copy_kernel[(4,)](gx.view, go.view, 4096, BLOCK=1024)
go.check("out")
assert np.array_equal(go.view, x)
print("PASSED", flush=True)
"""


@needs_cpu
def test_a_compiler_ignoring_alignment_fails_on_a_misaligned_view(tmp_path: Path):
    # run in a child process: the misaligned 16-byte access faults (SIGSEGV) on x86 with the compat headers
    env = {**os.environ, "ENCELADUS_CACHE_DIR": str(tmp_path)}
    root = Path(__file__).resolve().parents[2]
    out = subprocess.run([sys.executable, "-c", _MUTANT], cwd=root, env=env, capture_output=True, text=True,
                         timeout=300)
    assert "MUTATED [4, 4]" in out.stdout, out.stdout + out.stderr  # the mutation took effect
    assert "PASSED" not in out.stdout and out.returncode != 0, out.stdout + out.stderr


@pytest.mark.parametrize("path", ALL_PATHS)
@pytest.mark.parametrize("n", [4096, 4096 - 16, 4093, 4090, 1])
def test_masked_load_with_varying_other(n, path):
    # the run that holds n takes each element from memory or from `other` (-offset) on its own
    if path == "cpu" and not cpu_available():
        path_missing("cpu", "no C++ compiler")
    block, size = 1024, 4096
    x = (np.arange(size) % 97 + 1).astype(np.float32)
    gx, go = guard(x), guard(np.zeros(size, np.float32))
    grid = (size // block,)
    on_path(vk.copy_other_varies, path)[grid](gx.view, go.view, n, BLOCK=block)
    gx.check("x")
    go.check("out")
    expected = np.where(np.arange(size) < n, x, -np.arange(size, dtype=np.float32))
    np.testing.assert_array_equal(go.view, expected, err_msg=f"n={n} on the {path} path")
    if path == "cpu":
        (load, store) = vk.copy_other_varies.warmup(gx.view, go.view, n, BLOCK=block, grid=grid).accesses
        assert (load.vector, store.vector) == (4, 4)
        assert "each run checks it" in load.reason  # `other` varies inside every run: each run checks
