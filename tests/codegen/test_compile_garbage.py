"""A compile leaves no reference cycles behind but its kernel's own IR: its passes' working state is freed by
reference counting as soon as they return, and never waits for (nor slows down) the garbage collector."""

import gc

import enceladus
from enceladus.compiler.passes import access_pairs, device_order

from . import order_kernels as ok


def test_the_device_order_analysis_leaves_no_cyclic_garbage():
    # its records' offset closures and its loops' contexts refer back to it: it drops them when done
    for kernel, signature, constexprs in ((ok.blocks_chain_kernel, "*fp32", {"NB": 4, "BLOCK": 64}),
                                          (ok.in_place_loop_kernel, "*fp32, *fp32, i32", {"N": 256, "BLOCK": 64}),
                                          (ok.in_place_kernel, "*fp32, i32", {"BLOCK": 64})):
        gc.collect()
        gc.set_debug(gc.DEBUG_SAVEALL)
        try:
            compiled = enceladus.compile(kernel, signature=signature, constexprs=constexprs)  # kept: its IR is alive
            gc.collect()
            kinds = {type(o) for o in gc.garbage}
        finally:
            gc.set_debug(0)
            gc.garbage.clear()
        assert compiled.asm["msl"]
        assert not kinds & {device_order._Analysis, device_order._Context, access_pairs.Access}, kinds


def _watch_collector(monkeypatch):
    """Record gc.isenabled() at the start of every pass of the compiler's frontend."""
    from enceladus.compiler import driver

    seen = []
    lower = driver.lower_kernel

    def lower_and_look(*args, **kwargs):
        seen.append(gc.isenabled())
        return lower(*args, **kwargs)

    monkeypatch.setattr(driver, "lower_kernel", lower_and_look)
    return seen


def test_the_collector_is_paused_during_a_compile_and_resumed_after(monkeypatch):
    seen = _watch_collector(monkeypatch)
    assert gc.isenabled()
    compiled = enceladus.compile(ok.in_place_kernel, signature="*fp32, i32", constexprs={"BLOCK": 64})
    assert compiled.asm["msl"]
    assert seen == [False]
    assert gc.isenabled()


def test_a_failed_compile_resumes_the_collector():
    try:  # refused inside the compile, while the collector is paused
        enceladus.compile(ok.in_place_kernel, signature="*fp32, i32", constexprs={"BLOCK": 64}, num_warps=3)
    except enceladus.CompilationError:
        pass
    else:
        raise AssertionError("num_warps=3 must be refused")
    assert gc.isenabled()


def test_a_program_that_turned_the_collector_off_keeps_it_off(monkeypatch):
    seen = _watch_collector(monkeypatch)
    gc.disable()
    try:
        enceladus.compile(ok.in_place_kernel, signature="*fp32, i32", constexprs={"BLOCK": 64})
        assert seen == [False]
        assert not gc.isenabled()
    finally:
        gc.enable()


def test_concurrent_compiles_resume_the_collector_when_the_last_one_ends(monkeypatch):
    import threading

    from enceladus.compiler import driver

    inside, release = threading.Barrier(3), threading.Event()
    lower = driver.lower_kernel

    def lower_slowly(*args, **kwargs):
        inside.wait(timeout=30)  # both compiles are inside before either goes on
        release.wait(timeout=30)
        return lower(*args, **kwargs)

    monkeypatch.setattr(driver, "lower_kernel", lower_slowly)
    errors = []

    def compile_one(block):
        try:
            enceladus.compile(ok.in_place_kernel, signature="*fp32, i32", constexprs={"BLOCK": block})
        except Exception as e:  # pragma: no cover - reported below
            errors.append(e)

    threads = [threading.Thread(target=compile_one, args=(b,)) for b in (64, 128)]
    for t in threads:
        t.start()
    inside.wait(timeout=30)
    assert not gc.isenabled()  # paused while both run
    release.set()
    for t in threads:
        t.join(timeout=60)
    assert not errors, errors
    assert gc.isenabled()
