"""16-bit atomics under contention on every path: float16/bfloat16 add, max, min, xchg and cas, int16/uint16
cas. Metal has no 16-bit atomics; the compiled kernels loop on the aligned 32-bit word holding the element, and
the runtime binds each 16-bit buffer so that this word lies in memory it owns. The buffers here have an odd
number of elements (the last element's word reaches past the array: the binding pads it), and neighbouring
elements share a word, so a lost update of either half shows up in the totals."""

import shutil

import numpy as np
import pytest

import enceladus
from paths import ALL_PATHS, cpu_available, guard, needs_cpu, on_path, path_missing, run_on_all_paths

from . import word_atomic_kernels as wk

RNG = np.random.default_rng(18)
BF16 = pytest.importorskip("ml_dtypes").bfloat16
DTYPES = {"float16": np.float16, "bfloat16": BF16, "int16": np.int16, "uint16": np.uint16}
# the largest per-slot total whose running sums are exact: integers up to 2048 (float16), 256 (bfloat16)
EXACT = {"float16": 2048, "bfloat16": 256}
INIT = {"add": 0, "max": -100, "min": 100, "xchg": 0, "cas": 0}


def _case(kind: str, dtype: str, nslot: int) -> tuple[np.ndarray, int]:
    dt = DTYPES[dtype]
    if kind == "add":
        n = (EXACT[dtype] // 2 - 1) * nslot  # values 1 or 2: each slot's total stays exact
        return RNG.integers(1, 3, n).astype(dt), n
    n = 3000 if dtype != "bfloat16" else 1000
    if kind == "cas":  # nonzero values, exact in the type
        return (np.arange(n) % (200 if dtype == "bfloat16" else 2000) + 1).astype(dt), n
    return RNG.integers(-50, 50, n).astype(dt), n


def _check(kind, vals, nslot, mem, old):
    vals, mem, old = (np.asarray(a).astype(np.float64) for a in (vals, mem, old))
    init = INIT[kind]
    for slot in range(nslot):
        v, o, final = vals[slot::nslot], old[slot::nslot], mem[slot]
        what = f"slot {slot} of {nslot}"
        if kind == "add":
            assert final == v.sum(), what
            steps = np.diff(np.append(np.sort(o), final))  # running totals of some order of the additions
            np.testing.assert_array_equal(np.sort(steps), np.sort(v), err_msg=what)
        elif kind in ("max", "min"):
            want = max(v.max(), init) if kind == "max" else min(v.min(), init)
            assert final == want, what
            assert set(o) <= set(v) | {init}, what  # every old value was in memory at some point
            assert (o <= final).all() if kind == "max" else (o >= final).all(), what
        elif kind == "xchg":  # every value went through the slot once: old values plus the last are a permutation
            np.testing.assert_array_equal(np.sort(np.append(o, final)), np.sort(np.append(v, init)), err_msg=what)
        else:  # cas from 0: exactly one lane wins; every other lane sees the winner's value
            winners = np.flatnonzero(o == 0)
            assert winners.size == 1 and v[winners[0]] == final, (what, winners)
            assert (np.delete(o, winners) == final).all(), what


@pytest.mark.parametrize("nslot", [3, 4])
@pytest.mark.parametrize("kind,dtype", [(k, d) for k in ("add", "max", "min", "xchg", "cas")
                                        for d in ("float16", "bfloat16")] + [("cas", "int16"), ("cas", "uint16")])
def test_word_atomics_under_contention(kind, dtype, nslot):
    vals, n = _case(kind, dtype, nslot)
    block = 64
    grid = (enceladus.cdiv(n, block),)

    def make():
        return (np.full(nslot, INIT[kind], DTYPES[dtype]), vals.copy(), np.zeros(n, DTYPES[dtype]), n)

    def check(args, expected, path):
        _check(kind, vals, nslot, args[0], args[2])

    run_on_all_paths(wk.word_atomic_kernel, grid, make, lambda *a: {}, check=check,
                     constexprs={"NSLOT": nslot, "KIND": kind, "BLOCK": block})


@pytest.mark.parametrize("path", ALL_PATHS)
def test_word_atomics_on_a_view_starting_mid_word(path):
    """An argument whose element 0 is the upper half of a word (a view at byte offset 2) and whose end is mid-word:
    both boundary words are padded by the binding; the bytes around the view stay untouched."""
    if path == "cpu" and not cpu_available():
        path_missing(path, "no C++ compiler")
    vals, n = _case("add", "float16", 3)
    g = guard(np.zeros(3, np.float16), offset_bytes=2)
    old = np.zeros(n, np.float16)
    on_path(wk.word_atomic_kernel, path)[(enceladus.cdiv(n, 64),)](g.view, vals, old, n, NSLOT=3, KIND="add",
                                                                    BLOCK=64)
    g.check(f"the mid-word view on the {path} path")
    _check("add", vals, 3, g.view, old)


@needs_cpu
def test_word_atomics_on_tensors_of_odd_length():
    """enceladus.Tensor arguments (queued launches): their allocation holds the last element's whole word."""
    vals, n = _case("max", "bfloat16", 5)
    mem = enceladus.tensor(np.full(5, INIT["max"], BF16))
    old = enceladus.tensor(np.zeros(n, BF16))
    wk.word_atomic_kernel[(enceladus.cdiv(n, 64),)](mem, enceladus.tensor(vals), old, n, NSLOT=5, KIND="max",
                                                     BLOCK=64)
    enceladus.synchronize()
    _check("max", vals, 5, mem.numpy(), old.numpy())


def test_scalar_word_atomic_gives_each_program_a_ticket():
    run_on_all_paths(wk.word_atomic_scalar_kernel, (40,), lambda: (np.zeros(1, np.float16), np.full(40, -1, np.float16)),
                     lambda m, o: {0: np.float16(40)},
                     check=lambda args, exp, path: (np.testing.assert_array_equal(args[0], [40]),
                                                    np.testing.assert_array_equal(np.sort(args[1]), np.arange(40))))


@pytest.mark.parametrize("path", ALL_PATHS)
@pytest.mark.parametrize("kind", ["and", "or", "xor"])
def test_bitwise_atomics_on_halves_are_refused(kind, path):
    if path == "cpu" and not cpu_available():
        path_missing(path, "no C++ compiler")
    with pytest.raises(enceladus.CompilationError, match=f"tl.atomic_{kind} needs an integer pointer, got fp16"):
        on_path(wk.word_bitwise_kernel, path)[(1,)](np.zeros(4, np.float16), KIND=kind)


@pytest.mark.parametrize("dtype", ["float32", "int32", "uint32", "float16", "bfloat16", "int16"])
def test_atomic_load_and_store(dtype):
    dt = DTYPES.get(dtype, np.dtype(dtype))
    n = 301  # odd: the 16-bit arrays' last word is padded
    x = RNG.integers(-40, 40 if dtype != "uint32" else 80, n).astype(np.float64)
    x = (np.abs(x) if dtype == "uint32" else x).astype(dt)
    run_on_all_paths(wk.atomic_copy_kernel, (enceladus.cdiv(n, 128),), lambda: (x.copy(), np.zeros(2 * n, dt), n),
                     lambda x, y, n: {1: np.concatenate([(x.astype(np.float64) * 2).astype(dt), x])},
                     constexprs={"BLOCK": 128}, rtol=0, atol=0)


@pytest.mark.parametrize("dtype", ["int8", "uint8", "bool"])
def test_byte_atomic_load_and_store_keep_their_neighbours(dtype):
    n, nprog = 301, 7  # odd: the last word is padded; the 7 programs' bytes interleave within every word
    x = RNG.integers(0, 2, n).astype(bool) if dtype == "bool" else RNG.integers(-128 if dtype == "int8" else 0,
                                                                                 128 if dtype == "int8" else 256, n).astype(dtype)
    first = ~x if dtype == "bool" else (x.astype(np.int64) * 3).astype(dtype)  # int8 * 3 wraps
    run_on_all_paths(wk.byte_atomic_kernel, (nprog,), lambda: (x.copy(), np.zeros(2 * n, x.dtype), n),
                     lambda x, y, n: {1: np.concatenate([first, x])}, constexprs={"NPROG": nprog, "BLOCK": 64},
                     rtol=0, atol=0)


@pytest.mark.parametrize("flag_dtype", ["int32", "int16", "uint32"])
def test_chained_sum_with_poll_load_and_store(flag_dtype):
    programs, block = 24, 64
    x = RNG.integers(-100, 100, programs * block).astype(np.int32)

    def make():
        flags = np.zeros(programs + 1, flag_dtype)
        flags[0] = 1  # program 0 starts at once
        return x, np.zeros(1, np.int32), flags, np.zeros(programs, np.int32)

    sums = np.cumsum(x.reshape(programs, block).sum(1)).astype(np.int32)
    run_on_all_paths(wk.chained_sum_kernel, (programs,), make,
                     lambda x, t, f, o: {1: sums[-1:], 2: np.ones(programs + 1, flag_dtype), 3: sums},
                     constexprs={"BLOCK": block})


@needs_cpu
@pytest.mark.skipif(shutil.which("g++") is None, reason="g++ is not installed")
def test_a_32_bit_poll_builds_with_gpp(monkeypatch):
    # the 16-bit poll helper called the 16-bit load helper, which 32-bit polls do not include: clang++ let the
    # uninstantiated template pass, g++ refused the kernel (found by Triton's test_atomic_poll on a g++-only host)
    monkeypatch.setenv("ENCELADUS_CXX", "g++")
    programs, block = 4, 64
    x = RNG.integers(-100, 100, programs * block).astype(np.int32)
    flags = np.zeros(programs + 1, np.int32)
    flags[0] = 1
    total, out = np.zeros(1, np.int32), np.zeros(programs, np.int32)
    enceladus.jit(wk.chained_sum_kernel.fn)[(programs,)](x, total, flags, out, BLOCK=block)
    np.testing.assert_array_equal(out, np.cumsum(x.reshape(programs, block).sum(1)).astype(np.int32))


@pytest.mark.parametrize("scope", ["gpu", "sys"])
@pytest.mark.parametrize("flag_dtype", [np.int64, np.uint64])
def test_chained_tickets_on_64_bit_flags(flag_dtype, scope):
    programs, magic = 16, 0x1_2345_6789

    def make():
        flags = np.full(programs + 1, magic & 0xFFFF_FFFF, flag_dtype)  # the right low word, the wrong high word
        flags[0] = magic
        return flags, np.zeros(1, np.int32), np.full(programs, -1, np.int32)

    run_on_all_paths(wk.chained_ticket64_kernel, (programs,), make,
                     lambda f, c, o: {0: np.full(programs + 1, magic, flag_dtype), 1: np.array([programs], np.int32),
                                      2: np.arange(programs, dtype=np.int32)},
                     constexprs={"MAGIC": magic, "SCOPE": scope})


@pytest.mark.parametrize("path", ALL_PATHS)
@pytest.mark.parametrize("kind,dtype,message", [
    ("load64", np.int64, "tl.atomic_load on int64 is not available on Apple GPUs"),
    ("timeout", np.int32, "Metal shaders have no clock"),
    ("poll_float", np.float32, "tl.atomic_poll only supports integer elements"),
    ("sem", np.int32, "tl.atomic_store only supports release and relaxed semantics"),
])
def test_atomic_access_refusals(kind, dtype, message, path):
    if path == "cpu" and not cpu_available():
        path_missing(path, "no C++ compiler")
    with pytest.raises(enceladus.CompilationError, match=message):
        on_path(wk.atomic_access_refusals, path)[(1,)](np.zeros(4, dtype), KIND=kind)


def test_interpreter_reports_a_poll_that_never_ends():
    flags = np.zeros(25, np.int32)  # no flag set: program 0 would wait forever
    with pytest.raises(RuntimeError, match="waits for a value that no earlier program stored"):
        on_path(wk.chained_sum_kernel, "interpreter")[(24,)](np.zeros(24 * 64, np.int32), np.zeros(1, np.int32),
                                                             flags, np.zeros(24, np.int32), BLOCK=64)


def test_uint64_atomic_max_and_min():
    n, nslot = 2000, 5
    v = RNG.integers(0, 2**64 - 1, n, dtype=np.uint64, endpoint=True)
    v[7] = 2**64 - 1  # the largest value: an unsigned comparison
    mx, mn = np.zeros(nslot + 1, np.uint64), np.full(nslot, 2**64 - 1, np.uint64)
    want_mx = np.append([v[s::nslot].max() for s in range(nslot)], v.max())
    want_mn = np.array([v[s::nslot].min() for s in range(nslot)], np.uint64)
    run_on_all_paths(wk.u64_minmax_kernel, (enceladus.cdiv(n, 128),), lambda: (mx.copy(), mn.copy(), v, n),
                     lambda *a: {0: want_mx, 1: want_mn}, constexprs={"NSLOT": nslot, "BLOCK": 128})


@needs_cpu
def test_uint64_atomic_old_value_is_refused():
    with pytest.raises(enceladus.CompilationError, match="cannot return the old values on Apple GPUs") as e:
        on_path(wk.u64_old_value_kernel, "cpu")[(1,)](np.zeros(4, np.uint64), np.zeros(4, np.uint64))
    assert e.value.lineno is not None


def test_uint64_atomics_need_the_gpu_family():
    """The metal backend reports devices outside Apple9 / Apple8+Mac2 as device={"atomic_u64_minmax": False}."""
    from enceladus.compiler.driver import compile_kernel

    k = wk.u64_minmax_kernel
    sig = {"mx_ptr": "*u64", "mn_ptr": "*u64", "val_ptr": "*u64", "n": "i32"}
    args = (k.source, k.__name__, k.param_names, sig, {"NSLOT": 5, "BLOCK": 128})
    assert "atomic_max_explicit((device atomic_ulong*)" in compile_kernel(*args, device={}).asm["msl"]
    with pytest.raises(enceladus.CompilationError, match="Apple9 family") as e:
        compile_kernel(*args, device={"atomic_u64_minmax": False})
    assert e.value.lineno is not None


@pytest.mark.parametrize("path", ALL_PATHS)
def test_signed_int64_atomic_max_is_refused_with_the_biased_fix(path):
    if path == "cpu" and not cpu_available():
        path_missing(path, "no C++ compiler")
    with pytest.raises(enceladus.CompilationError, match="int64 is not available on Apple GPUs") as info:
        on_path(wk.signed64_max_kernel, path)[(1,)](np.zeros(1, np.int64), np.ones(4, np.int64), 4, BLOCK=4)
    assert "0x8000000000000000" in str(info.value)


def test_the_biased_fix_gives_signed_int64_max_and_min():
    n, nslot = 1000, 3
    v = RNG.integers(-2**63, 2**63 - 1, n, dtype=np.int64, endpoint=True)
    v[:2] = [-2**63, 2**63 - 1]  # the extremes
    bias = np.uint64(1 << 63)
    start = np.concatenate([np.full(nslot, 0, np.uint64), np.full(nslot, 2**64 - 1, np.uint64)])  # -2**63, 2**63-1
    want_max = np.array([v[s::nslot].max() for s in range(nslot)])
    want_min = np.array([v[s::nslot].min() for s in range(nslot)])

    def check(args, expected, path):
        got = (args[0] ^ bias).view(np.int64)
        np.testing.assert_array_equal(got, np.concatenate([want_max, want_min]), err_msg=path)

    run_on_all_paths(wk.biased_signed64_max_kernel, (enceladus.cdiv(n, 128),), lambda: (start.copy(), v, n),
                     lambda *a: {}, check=check, constexprs={"NSLOT": nslot, "BLOCK": 128})
