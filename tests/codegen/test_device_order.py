"""Global loads and stores of one program take effect in program order, whichever threads make them.

Without device-memory barriers, the cpu backend runs a threadgroup's threads one after another between
barriers, so a thread that stores an element before another thread loads it (or the reverse) shows up as a
wrong value every time. The same kernels without such pairs get no barrier (passes/device_order.py).
"""

import numpy as np
import pytest

import enceladus
from enceladus.backends.cpu.errors import KernelLaunchError
from paths import needs_cpu, run_on_all_paths

from . import kernels
from . import order_kernels as ok

DEVICE_BARRIER = "threadgroup_barrier(mem_flags::mem_device)"


@pytest.fixture(autouse=True)
def fast_answers_checked(monkeypatch):
    """Every pair that the pass decides without thread maps (``_never_shared``) in this file's kernels is decided
    again by comparing the thread maps element by element, which must agree (no barrier needed)."""
    from enceladus.compiler.passes import access_pairs

    never_shared = access_pairs._never_shared
    checked = []

    def checking(a, b, ga, gb, d, symbolic):
        shown = never_shared(a, b, ga, gb, d, symbolic)
        if shown:
            monkeypatch.setattr(access_pairs, "_never_shared", lambda *args: False)
            try:
                assert access_pairs.conflict(a, b) is None, (a.op, b.op, ga, gb, d)
            finally:
                monkeypatch.setattr(access_pairs, "_never_shared", checking)
            checked.append((a, b))
        return shown

    checking.original = never_shared
    monkeypatch.setattr(access_pairs, "_never_shared", checking)

    # kernels the pass clears without looking at pairs at all (device_order._one_thread_per_address): the full
    # analysis, its pairs decided by the thread maps, must find no barrier either
    from enceladus.compiler import driver, ir
    from enceladus.compiler.passes import device_order

    plan_device_order = device_order.plan_device_order

    def checking_kernel(fn, plan, num_warps, *args, **kwargs):
        order = plan_device_order(fn, plan, num_warps, *args, **kwargs)
        if device_order._one_thread_per_address(fn, plan, ir.select(ir.walk(fn.ops), device_order._MEMORY_SET)):
            assert not order.barriers_before
            monkeypatch.setattr(access_pairs, "_never_shared", lambda *args: False)
            try:
                roots = device_order.pointer_roots(fn)
                full = device_order._Analysis(fn, plan, num_warps, roots, device_order.written_roots(fn, roots)).run()
                assert not full.barriers_before, full.barriers_before
            finally:
                monkeypatch.setattr(access_pairs, "_never_shared", checking)
            checked.append(("kernel", fn.name))
        return order

    monkeypatch.setattr(driver.device_order, "plan_device_order", checking_kernel)
    return checked


@pytest.mark.parametrize("col", [False, True])
@pytest.mark.parametrize("shape", [(16, 16), (64, 128), (8, 256)])
def test_broadcast_row_then_store(shape, col):
    m, n = shape
    z = np.random.default_rng(m + n).standard_normal(shape).astype(np.float32)
    run_on_all_paths(ok.add_broadcast_kernel, (1,), lambda: (z.copy(),),
                     lambda z: {0: z + (z[:, :1] if col else z[:1, :])}, constexprs={"M": m, "N": n, "COL": col})


@pytest.mark.parametrize("epilogue", ["rows", "cols"])
@pytest.mark.parametrize("in_dtype", [np.float16, np.float32])
@pytest.mark.parametrize("mnk", [(32, 64, 32), (64, 128, 128)])
def test_dot_epilogue_reads_its_output(mnk, in_dtype, epilogue):
    m, n, k = mnk
    rng = np.random.default_rng(k)
    x = rng.standard_normal((m, k)).astype(in_dtype)
    y = rng.standard_normal((k, n)).astype(in_dtype)
    z = rng.standard_normal((m, n)).astype(np.float32)

    def reference(x, y, z, *_):
        extra = z[:, :1] if epilogue == "rows" else z[:1, :]
        return {2: x.astype(np.float32) @ y.astype(np.float32) + extra}

    run_on_all_paths(ok.dot_epilogue_kernel, (1,), lambda: (x, y, z.copy(), n, 1), reference,
                     constexprs={"M": m, "N": n, "K": k, "EPILOGUE": epilogue}, rtol=1e-3, atol=1e-3)


def test_aliased_arguments():
    z = np.random.default_rng(3).standard_normal((32, 64)).astype(np.float32)

    def make():
        a = z.copy()
        return a, a  # one array, two pointer arguments

    run_on_all_paths(ok.aliased_rows_kernel, (1,), make, lambda a, _: {1: 2 * a + a[:1, :]},
                     constexprs={"M": 32, "N": 64})


@pytest.mark.parametrize("block", [128, 512])
def test_read_after_write_by_other_threads(block):
    offs = np.arange(block, dtype=np.int32)
    run_on_all_paths(ok.read_back_reversed_kernel, (1,),
                     lambda: (np.zeros(block, np.int32), np.zeros(block, np.int32)),
                     lambda x, out: {0: offs * 3 + 1, 1: (offs * 3 + 1)[::-1]}, constexprs={"BLOCK": block})


def test_scalar_read_after_tile_write():
    offs = np.arange(256, dtype=np.int32)
    run_on_all_paths(ok.read_back_scalar_kernel, (1,),
                     lambda: (np.zeros(256, np.int32), np.zeros(256, np.int32), 201),
                     lambda x, out, n: {0: offs * 5, 1: offs + 5 * n}, constexprs={"BLOCK": 256})


@pytest.mark.parametrize("block", [128, 1024])
def test_write_after_write_by_other_threads(block):
    offs = np.arange(block, dtype=np.int32)
    run_on_all_paths(ok.store_twice_kernel, (1,), lambda: (np.zeros(block, np.int32),),
                     lambda x: {0: (offs + 1000)[::-1]}, constexprs={"BLOCK": block})


def test_read_after_write_across_loop_iterations():
    nb, block = 6, 256
    x0 = np.random.default_rng(9).integers(-100, 100, nb * block).astype(np.int32)

    def reference(x):
        x = x.reshape(nb, block).copy()
        for k in range(1, nb):
            x[k] += x[k - 1][::-1]
        return {0: x.ravel()}

    run_on_all_paths(ok.blocks_chain_kernel, (1,), lambda: (x0.copy(),), reference,
                     constexprs={"NB": nb, "BLOCK": block})
    msl = enceladus.compile(ok.blocks_chain_kernel, signature="*i32", constexprs={"NB": nb, "BLOCK": block}).asm["msl"]
    assert msl.count(DEVICE_BARRIER) == 1  # one per iteration, inside the loop


def test_in_place_shift_by_one():
    """Same row, same form of offsets with different stride arguments, shifted by one: still ordered."""
    rows = np.random.default_rng(4).standard_normal((3, 256)).astype(np.float32)

    def make():
        a = rows.copy()
        return a, a, 256, 256

    def reference(a, *_):
        out = np.zeros_like(a)
        out[:, 1:] = a[:, :-1]
        return {0: out}

    run_on_all_paths(ok.shift_row_kernel, (3,), make, reference, constexprs={"N": 256})


def _msl(kernel, signature, constexprs):
    return enceladus.compile(kernel, signature=signature, constexprs=constexprs).asm["msl"]


@pytest.mark.parametrize("case", ["in place", "in place loop", "copy2d", "dot epilogue", "matrix epilogue"])
def test_same_thread_pairs_need_no_barrier(case, fast_answers_checked):
    """Each element loaded and stored by the same thread (or loads consumed by a dot): no device barrier."""
    msl = {
        "in place": lambda: _msl(ok.in_place_kernel, "*fp32, i32", {"BLOCK": 1024}),
        "in place loop": lambda: _msl(ok.in_place_loop_kernel, "*fp32, *fp32, i32", {"N": 4096, "BLOCK": 512}),
        "copy2d": lambda: _msl(kernels.copy2d_kernel, "*fp16, *fp16, i32, i32, i32, i32, i32, i32",
                               {"BLOCK_M": 32, "BLOCK_N": 64}),
        "dot epilogue": lambda: _msl(ok.dot_epilogue_kernel, "*fp16, *fp16, *fp32, i32, i32",
                                     {"M": 64, "N": 64, "K": 32, "EPILOGUE": "none"}),
        "matrix epilogue": lambda: _msl(ok.dot_epilogue_kernel, "*fp32, *fp32, *fp32, i32, i32",
                                        {"M": 64, "N": 64, "K": 32, "EPILOGUE": "matrix"}),
    }[case]()
    assert DEVICE_BARRIER not in msl
    if case != "dot epilogue":  # (its loads feed the dot: no pair with the store is left to decide)
        assert fast_answers_checked  # decided without thread maps, and checked against them


def test_in_place_kernels_run_on_all_paths():
    x = np.random.default_rng(5).standard_normal(3000).astype(np.float32)
    run_on_all_paths(ok.in_place_kernel, (3,), lambda: (x.copy(), x.size), lambda x, n: {0: 2 * x + 1},
                     constexprs={"BLOCK": 1024})
    rows = np.random.default_rng(6).standard_normal((3, 1024)).astype(np.float32)

    def make():
        a = rows.copy()
        return a, a, 1024

    run_on_all_paths(ok.in_place_loop_kernel, (3,), make, lambda a, _, __: {0: 2 * a},
                     constexprs={"N": 1024, "BLOCK": 256})


def test_barrier_is_explained():
    ck = enceladus.compile(ok.add_broadcast_kernel, signature="*fp32", constexprs={"M": 16, "N": 16, "COL": False})
    notes = [n for n in ck.metadata["notes"] if n.startswith("device-memory barrier")]
    assert len(notes) == 1 and "the load at line" in notes[0] and "the store at line" in notes[0], notes
    assert ck.asm["msl"].count(DEVICE_BARRIER) == 1


def test_thread_maps_are_memoised_and_read_only(monkeypatch):
    """The pass memoises thread-of-element maps and exact pair decisions (compile latency): compiling a kernel
    again reuses them and decides the same barrier, and no caller can change a shared map."""
    from enceladus.compiler.passes import access_pairs

    def compile_once():
        return enceladus.compile(ok.add_broadcast_kernel, signature="*fp32",
                                 constexprs={"M": 16, "N": 16, "COL": False})

    first = compile_once()
    maps, pairs = access_pairs.element_threads.cache_info(), access_pairs._exact_conflict.cache_info()
    second = compile_once()
    assert access_pairs.element_threads.cache_info().misses == maps.misses
    assert access_pairs._exact_conflict.cache_info().misses == pairs.misses
    assert access_pairs._exact_conflict.cache_info().hits > pairs.hits
    assert first.asm["msl"] == second.asm["msl"] and second.asm["msl"].count(DEVICE_BARRIER) == 1

    handed_out = []

    def spy(*key):
        handed_out.append(orig(*key))
        return handed_out[-1]

    orig = access_pairs.element_threads
    monkeypatch.setattr(access_pairs, "element_threads", spy)
    access_pairs._thread_facts.cache_clear()
    access_pairs._exact_conflict.cache_clear()
    compile_once()
    assert handed_out
    for tids, elems in handed_out:
        assert not tids.flags.writeable and not elems.flags.writeable
        with pytest.raises(ValueError):
            tids[0] = 1


def test_symbolic_pairs_in_one_layout_are_decided_without_thread_maps(monkeypatch):
    """Pairs of accesses whose offsets hold runtime strides (an epilogue reading the whole output it stores,
    through stride arguments) in one layout that holds each element once are decided from the offsets and the
    layout alone (``_never_shared``): no thread map is built, no element-by-element comparison is made, and the
    MSL is the same as that comparison gives (the pair needs no barrier)."""
    from enceladus.compiler.passes import access_pairs

    def compile_once():
        return enceladus.compile(ok.dot_epilogue_kernel, signature="*fp32, *fp32, *fp32, i32, i32",
                                 constexprs={"M": 32, "N": 64, "K": 32, "EPILOGUE": "matrix"})

    monkeypatch.setattr(access_pairs, "_never_shared", access_pairs._never_shared.original)  # (not checked here)
    for memo in (access_pairs._symbolic_conflict, access_pairs._exact_conflict, access_pairs.element_threads):
        memo.cache_clear()
    first = compile_once()
    assert access_pairs._symbolic_conflict.cache_info().misses == 0
    assert access_pairs._exact_conflict.cache_info().misses == 0
    assert access_pairs.element_threads.cache_info().misses == 0
    monkeypatch.setattr(access_pairs, "_never_shared", lambda *args: False)
    compared = compile_once()  # the element-by-element comparison gives the same MSL
    assert access_pairs._symbolic_conflict.cache_info().misses > 0  # the pair is there, with runtime strides
    assert compared.asm["msl"] == first.asm["msl"]


# --- debug mode: device-memory races within a threadgroup (ENCELADUS_DEBUG_DEVICE_RACES=1) -------------------------
def _race_cases():
    z = np.random.default_rng(0).standard_normal((64, 128)).astype(np.float32)
    # 64x128 fp32 results: too large to leave the fragment layout through threadgroup memory before the store (whose
    # barrier would order the epilogue's loads by accident), as in Triton's test_dot[1-64-128-128-4-...]
    x = np.random.default_rng(1).standard_normal((64, 128)).astype(np.float16)
    y = np.random.default_rng(2).standard_normal((128, 128)).astype(np.float16)
    shared = z[:32, :64].copy()
    return {
        "row broadcast": (ok.add_broadcast_kernel, (z.copy(),), {"M": 64, "N": 128, "COL": False}),
        "column broadcast": (ok.add_broadcast_kernel, (z.copy(),), {"M": 64, "N": 128, "COL": True}),
        "dot add-rows": (ok.dot_epilogue_kernel, (x, y, np.ones((64, 128), np.float32), 128, 1),
                         {"M": 64, "N": 128, "K": 128, "EPILOGUE": "rows"}),
        "dot add-cols": (ok.dot_epilogue_kernel, (x, y, np.ones((64, 128), np.float32), 128, 1),
                         {"M": 64, "N": 128, "K": 128, "EPILOGUE": "cols"}),
        "aliased arguments": (ok.aliased_rows_kernel, (shared, shared), {"M": 32, "N": 64}),
        "read after write": (ok.read_back_reversed_kernel, (np.zeros(256, np.int32), np.zeros(256, np.int32)),
                             {"BLOCK": 256}),
        "scalar read after write": (ok.read_back_scalar_kernel,
                                    (np.zeros(256, np.int32), np.zeros(256, np.int32), 201), {"BLOCK": 256}),
        "write after write": (ok.store_twice_kernel, (np.zeros(256, np.int32),), {"BLOCK": 256}),
        "across iterations": (ok.blocks_chain_kernel, (np.zeros(6 * 256, np.int32),), {"NB": 6, "BLOCK": 256}),
    }


@pytest.fixture
def device_races(monkeypatch, tmp_path):
    monkeypatch.setenv("ENCELADUS_DEBUG_DEVICE_RACES", "1")
    monkeypatch.setenv("ENCELADUS_CACHE_DIR", str(tmp_path / "cache"))  # kernels compiled here stay private


@needs_cpu
@pytest.mark.parametrize("case", sorted(_race_cases()))
def test_debug_mode_reports_missing_device_barrier(case, device_races, monkeypatch):
    """Compiled without the device-order pass (as before it existed), debug mode names the race."""
    from enceladus.compiler.passes import device_order
    from enceladus.runtime.jit import JITFunction

    monkeypatch.setattr(device_order, "plan_device_order", lambda *a, **k: device_order.DeviceOrderPlan())
    kernel, args, constexprs = _race_cases()[case]
    with pytest.raises(KernelLaunchError, match=r"device-memory race: thread \d+ (reads|writes) element \d+ of "
                                                 r"argument '\w+', which (thread \d+|other threads) (also )?(wrote|read)"):
        JITFunction(kernel.fn)[(1,)](*args, **constexprs, debug=True)


@needs_cpu
@pytest.mark.parametrize("case", sorted(_race_cases()))
def test_debug_mode_finds_no_race_after_the_pass(case, device_races):
    from enceladus.runtime.jit import JITFunction

    kernel, args, constexprs = _race_cases()[case]
    JITFunction(kernel.fn)[(1,)](*args, **constexprs, debug=True)


@needs_cpu
def test_debug_mode_without_device_races_is_silent(monkeypatch, tmp_path):
    """Plain debug mode keeps its cost: device-memory tracking is asked for separately."""
    from enceladus.compiler.passes import device_order
    from enceladus.runtime.jit import JITFunction

    monkeypatch.delenv("ENCELADUS_DEBUG_DEVICE_RACES", raising=False)
    monkeypatch.setenv("ENCELADUS_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setattr(device_order, "plan_device_order", lambda *a, **k: device_order.DeviceOrderPlan())
    JITFunction(ok.store_twice_kernel.fn)[(1,)](np.zeros(256, np.int32), BLOCK=256, debug=True)


def test_offsets_decided_without_thread_maps():
    """The two shortcuts of ``_never_shared`` on offsets alone: distinct elements at least one element apart
    (``_disjoint_elements``: a mixed radix of the index coefficients), and byte ranges apart (``_apart``)."""
    from enceladus.compiler.passes.access_pairs import _apart, _disjoint_elements

    row_major = ((("#0",), 256), (("#1",), 4))  # 16 x 64 fp32, rows 256 bytes apart
    assert _disjoint_elements(row_major, (16, 64), 4)
    assert not _disjoint_elements(((("#0",), 128), (("#1",), 4)), (16, 64), 4)  # rows overlap
    assert not _disjoint_elements(((("#0",), 2),), (64,), 4)  # fp32 elements 2 bytes apart share bytes
    assert not _disjoint_elements(((("#1",), 4),), (16, 64), 4)  # the rows all read one row
    assert not _disjoint_elements(((("#0", "#1"), 4),), (16, 64), 4)  # a product of index variables
    assert not _disjoint_elements(((("#0",), 4), (("#0",), 8)), (16,), 4)  # one variable twice
    strided = ((("#0", "arg:stride"), 1), (("#1",), 4))
    assert _disjoint_elements(strided, (16, 64), 4)  # generic strides: rows never coincide
    assert not _disjoint_elements(((("#0", "arg:s"), 1), (("#1", "arg:s"), 1)), (16, 64), 4)  # i*s + j*s
    assert _apart(((("#0",), 4),), ((("#0",), 4),), -4096, (1024,), (1024,), 4, 4)  # the next block
    assert not _apart(((("#0",), 4),), ((("#0",), 4),), -4092, (1024,), (1024,), 4, 4)  # one element shared
    assert _apart((), (), 4, (), (), 4, 4) and not _apart((), (), 2, (), (), 4, 4)  # scalars


def test_polynomial_helpers_agree_with_their_general_forms():
    """poly_scale is poly_mul by a constant (the same terms, in the same order); conflict tells symbolic index terms
    by their monomial's last symbol, which holds only because monomials are sorted with the index variables first."""
    from enceladus.compiler.passes import access_pairs as ap

    p = {("#0",): 3, ("#0", "arg:stride"): -2, ("arg:n",): 5, (): 7}
    for c in (1, 2, 4, -3):
        assert list(ap.poly_scale(p, c).items()) == list(ap.poly_mul(p, ap.poly_const(c)).items())
    for m in ap.poly_mul({("#1",): 1, ("#0",): 2}, {("arg:s",): 1, (): 4}):
        assert list(m) == sorted(m) and (m[-1][0] != "#") == any(not s.startswith("#") for s in m)


def _cleared_without_pairs(monkeypatch, kernel, signature, constexprs, num_warps=4):
    """Whether the pass cleared ``kernel`` without looking at its pairs (device_order._one_thread_per_address)."""
    from enceladus.compiler.passes import device_order

    answers = []
    one_thread = device_order._one_thread_per_address

    def recording(*args):
        answers.append(one_thread(*args))
        return answers[-1]

    monkeypatch.setattr(device_order, "_one_thread_per_address", recording)
    enceladus.compile(kernel, signature=signature, constexprs=constexprs, num_warps=num_warps)
    assert answers  # (asked again by the fixture of this file when it says yes)
    return all(answers)


def test_elementwise_kernels_are_cleared_without_their_pairs(monkeypatch, fast_answers_checked):
    assert _cleared_without_pairs(monkeypatch, ok.in_place_kernel, "*fp32, i32", {"BLOCK": 1024})
    assert _cleared_without_pairs(monkeypatch, kernels.binary_kernel, "*fp32, *fp32, *fp32, i32",
                                  {"OP": "add", "BLOCK": 1024})
    assert _cleared_without_pairs(monkeypatch, ok.row_scale_kernel, "*fp32, *fp32, i32, i32", {"N": 256})
    assert ("kernel", "in_place_kernel") in fast_answers_checked  # and the full analysis agrees (the fixture)
    assert ("kernel", "row_scale_kernel") in fast_answers_checked


def test_row_kernels_in_place_run_on_all_paths():
    x = np.random.default_rng(7).standard_normal((3, 256)).astype(np.float32)

    def make():
        a = x.copy()
        return a, a, 256, 256

    run_on_all_paths(ok.row_scale_kernel, (3,), make, lambda a, *_: {0: 2 * a}, constexprs={"N": 256})


@pytest.mark.parametrize("case", ["reversed", "store twice", "shifted base", "narrow then wide", "atomic",
                                  "in a loop", "replicated", "two rows", "next row"])
def test_other_kernels_get_the_full_analysis(monkeypatch, case):
    kernel, signature, constexprs, num_warps = {
        "reversed": (ok.read_back_reversed_kernel, "*i32, *i32", {"BLOCK": 256}, 4),
        "store twice": (ok.store_twice_kernel, "*i32", {"BLOCK": 256}, 4),
        "shifted base": (ok.shifted_base_kernel, "*fp32", {"BLOCK": 256}, 4),
        "narrow then wide": (ok.narrow_then_wide_kernel, "*fp16, *fp32", {"BLOCK": 256}, 4),
        "atomic": (ok.in_place_atomic_kernel, "*fp32", {"BLOCK": 256}, 4),
        "in a loop": (ok.in_place_in_loop_kernel, "*fp32", {"NB": 3, "BLOCK": 256}, 4),
        "replicated": (ok.in_place_kernel, "*fp32, i32", {"BLOCK": 64}, 4),  # 64 elements, 128 threads
        "two rows": (ok.shift_row_kernel, "*fp32, *fp32, i32, i32", {"N": 256}, 4),
        "next row": (ok.next_row_kernel, "*fp32, *fp32", {"N": 256}, 4),
    }[case]
    assert not _cleared_without_pairs(monkeypatch, kernel, signature, constexprs, num_warps)


@pytest.mark.parametrize("case", ["shifted base", "narrow then wide", "next row"])
def test_kernels_the_shortcut_must_not_clear_run_on_all_paths(case):
    """The kernels closest to the elementwise shortcut that do need a barrier: the element each thread stores (or
    half of it) is another thread's load."""
    if case == "shifted base":
        x = np.arange(257, dtype=np.float32)
        msl = _msl(ok.shifted_base_kernel, "*fp32", {"BLOCK": 256})

        def want(x):
            out = x.copy()
            out[1:] = x[:-1] + 1
            return {0: out}

        run_on_all_paths(ok.shifted_base_kernel, (1,), lambda: (x.copy(),), want, constexprs={"BLOCK": 256})
    elif case == "next row":
        x = np.arange(4 * 3 + 256, dtype=np.float32)
        msl = _msl(ok.next_row_kernel, "*fp32, *fp32", {"N": 256})

        def want_rows(x, y):  # one program: row 0 only
            out = x.copy()
            out[:256] = x[4:260]
            return {0: out}

        run_on_all_paths(ok.next_row_kernel, (1,), lambda: (lambda a: (a, a))(x.copy()), want_rows,
                         constexprs={"N": 256})
    else:
        msl = _msl(ok.narrow_then_wide_kernel, "*fp16, *fp32", {"BLOCK": 256})
        x = np.arange(256, dtype=np.float16)
        run_on_all_paths(ok.narrow_then_wide_kernel, (1,), lambda: (x.copy(), np.zeros(256, np.float32)),
                         lambda x, y: {1: x.astype(np.float32)}, constexprs={"BLOCK": 256})
    assert DEVICE_BARRIER in msl
