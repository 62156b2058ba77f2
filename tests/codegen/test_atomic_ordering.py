"""Memory ordering of atomics (MSL_AUDIT B1): Triton's sem/scope become device-scope fences around Metal's relaxed
atomics, written buffers of such kernels are coherent(device); scope='sys' runs on the cpu backend (the device is the
host) and in the interpreter, and the metal backend refuses its launch; the cpu backend's fences are real host fences
(threadgroups run on several OS threads)."""

import re

import numpy as np
import pytest

import enceladus
import enceladus.language as tl
from paths import on_path

FENCE = "atomic_thread_fence(mem_flags::mem_device, memory_order_seq_cst, {})"


@enceladus.jit
def ordered_ticket_kernel(counter_ptr, out_ptr, SEM: tl.constexpr, SCOPE: tl.constexpr):
    ticket = tl.atomic_add(counter_ptr, 1, sem=SEM, scope=SCOPE)
    tl.store(out_ptr + tl.program_id(0), ticket)


@enceladus.jit
def default_tile_atomic_kernel(ptr, old_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(old_ptr + offs, tl.atomic_add(ptr + offs, 1))


@enceladus.jit
def last_block_sums_kernel(x_ptr, partial_ptr, counter_ptr, out_ptr, BLOCK: tl.constexpr):
    # "the last program to finish reduces": plain stores published by a release, read after an acquire
    pid = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    tl.store(partial_ptr + pid, tl.sum(tl.load(x_ptr + pid * BLOCK + offs), 0))
    tl.debug_barrier()
    ticket = tl.atomic_add(counter_ptr, 1)  # acq_rel at gpu scope by default
    if ticket == tl.num_programs(0) - 1:
        parts = tl.load(partial_ptr + offs, mask=offs < tl.num_programs(0), other=0.0)
        tl.store(out_ptr, tl.sum(parts, 0))


def _msl(kernel, *args, **kw) -> str:
    return kernel.warmup(*args, **kw).asm["msl"]


def _body(msl: str) -> list[str]:
    return [line.strip() for line in msl.split("kernel void", 1)[1].splitlines()]


@pytest.mark.parametrize("sem,before,after", [(None, 1, 1), ("acq_rel", 1, 1), ("release", 1, 0), ("acquire", 0, 1),
                                              ("relaxed", 0, 0)])
def test_fences_follow_sem(sem, before, after):
    msl = _msl(ordered_ticket_kernel, np.zeros(1, np.int32), np.zeros(4, np.int32), SEM=sem, SCOPE=None, grid=(4,))
    body = _body(msl)
    atomic = next(i for i, line in enumerate(body) if "atomic_fetch_add_explicit" in line)
    fence = FENCE.format("thread_scope_device")
    assert sum(fence in line for line in body[:atomic]) == before
    assert sum(fence in line for line in body[atomic:]) == after
    # the buffers such a kernel writes are device-coherent; without device-scope fences nothing is
    assert ("coherent(device) device int* counter_ptr" in msl) == bool(before or after)
    assert "coherent(device) device int* out_ptr" in msl if (before or after) else "coherent" not in msl


def test_cta_scope_fences_the_threadgroup_only():
    msl = _msl(ordered_ticket_kernel, np.zeros(1, np.int32), np.zeros(4, np.int32), SEM="acq_rel", SCOPE="cta",
               grid=(4,))
    assert msl.count(FENCE.format("thread_scope_threadgroup")) == 2
    assert "thread_scope_device" not in msl and "coherent" not in msl


def test_default_tile_atomic_is_fenced_and_explain_says_so():
    ck = default_tile_atomic_kernel.warmup(np.zeros(128, np.int32), np.zeros(128, np.int32), BLOCK=128, grid=(1,))
    assert ck.asm["msl"].count(FENCE.format("thread_scope_device")) == 2
    assert re.search(r"acq_rel at gpu scope", ck.explain())


@pytest.mark.parametrize("path", ["interpreter", "cpu"])
def test_system_scope_runs_where_the_device_is_the_host(path):
    """scope='sys' compiles to device-scope fences (Metal's widest), which on the cpu backend are host fences."""
    ck = ordered_ticket_kernel.warmup(np.zeros(1, np.int32), np.zeros(4, np.int32), SEM="acq_rel", SCOPE="sys",
                                      grid=(4,))
    assert ck.asm["msl"].count(FENCE.format("thread_scope_device")) == 2 and ck.metadata["sys_scope"]
    counter, out = np.zeros(1, np.int32), np.full(64, -1, np.int32)
    on_path(ordered_ticket_kernel, path)[(64,)](counter, out, SEM="acq_rel", SCOPE="sys")
    assert counter[0] == 64 and sorted(out) == list(range(64))


def test_metal_refuses_system_scope_at_launch():
    """Metal's fences reach at most the device: the launch is refused with the reason (the recording stand-in for
    libobjc plays the Metal device)."""
    pytest.importorskip("enceladus.backends.cpu")
    from backends.metal.objc_recorder import RecordingObjCRuntime
    from enceladus.backends.cpu import CpuBackend
    from enceladus.backends.metal import MetalBackend
    from enceladus.runtime.backend import use_backend

    metal = MetalBackend(runtime=RecordingObjCRuntime(cpu_backend=CpuBackend()), macos=15)
    with use_backend(metal), pytest.raises(enceladus.LaunchError, match="scope='sys'") as info:
        enceladus.jit(ordered_ticket_kernel.fn)[(4,)](np.zeros(1, np.int32), np.zeros(4, np.int32), SEM="acq_rel",
                                                    SCOPE="sys")
    assert "thread_scope_device" in str(info.value) and "scope='gpu'" in str(info.value)


@pytest.mark.parametrize("path", ["interpreter", "cpu"])
def test_last_program_reduces_what_the_others_published(path):
    n, block = 64, 64
    x = np.random.default_rng(5).standard_normal(n * block).astype(np.float32)
    partial = np.zeros(n, np.float32)
    out = np.zeros(1, np.float32)
    counter = np.zeros(1, np.int32)
    on_path(last_block_sums_kernel, path)[(n,)](x, partial, counter, out, BLOCK=block)
    assert counter[0] == n
    np.testing.assert_allclose(out[0], x.reshape(n, block).sum(1).sum(), rtol=1e-4)
