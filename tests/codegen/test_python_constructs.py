"""Python in kernels as Triton 3.9 accepts it (issue #18): ``and``/``or``/``not`` on runtime values, while
conditions with ``and``, ``None`` and ``None:`` slices, ``tl.constexpr(...)`` calls, ``hasattr``, ``tl.tuple``,
tile ``.item()``/``.numel``/``.type``, ``ptr.dtype.element_ty``, ``tl.str_to_ty``, the ``tl.random`` module and
``tl.div_rn``/``tl.sqrt_rn`` at top level; each kernel on every path against NumPy."""

import numpy as np
import pytest

import enceladus
import enceladus.language as tl
from enceladus import CompilationError
from paths import on_path, run_on_all_paths

RNG = np.random.default_rng(18)


@enceladus.jit
def bool_ops(x_ptr, out_ptr, n, B: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * B + tl.arange(0, B)
    x = tl.load(x_ptr + offs)
    if pid % 2 == 0 and n > 3:  # scalar runtime booleans: logical and
        x = x + 1.0
    if not (pid > 1) or pid == 3:  # not, or
        x = x * 2.0
    if True and pid >= 2:  # a constexpr operand that does not decide drops out
        x = x - 0.5
    keep = (offs % 3 == 0) or (x > 10.0)  # boolean tiles: elementwise, as Triton
    keep = keep and not (offs == 4)  # noqa: SIM201 - `not` on a boolean tile is what is tested
    tl.store(out_ptr + offs, tl.where(keep, x, 0.0))


def _bool_ops_ref(x, n, B):
    out = np.zeros_like(x)
    for pid in range(x.size // B):
        offs = pid * B + np.arange(B)
        v = x[offs].copy()
        if pid % 2 == 0 and n > 3:
            v = v + 1
        if not pid > 1 or pid == 3:
            v = v * 2
        if pid >= 2:
            v = v - 0.5
        keep = ((offs % 3 == 0) | (v > 10)) & ~(offs == 4)
        out[offs] = np.where(keep, v, 0)
    return out


def test_and_or_not_on_runtime_values():
    B = 8
    x = RNG.uniform(0, 12, 4 * B).astype(np.float32)
    run_on_all_paths(bool_ops, (4,), lambda: (x.copy(), np.zeros_like(x), 5),
                     lambda x, out, n: {1: _bool_ops_ref(x, n, B)}, constexprs={"B": B})


@enceladus.jit
def while_and(out_ptr, n, cap):
    i = 0
    total = 0
    pid = tl.program_id(0)
    while i < n + pid and total < cap:  # tutorial 08's style of condition
        total += i
        i += 1
    tl.store(out_ptr + pid, total * 1000 + i)


def test_while_condition_with_and():
    def ref(out, n, cap):
        res = np.zeros_like(out)
        for pid in range(out.size):
            i = total = 0
            while i < n + pid and total < cap:
                total += i
                i += 1
            res[pid] = total * 1000 + i
        return {0: res}

    run_on_all_paths(while_and, (6,), lambda: (np.zeros(6, np.int32), 7, 20), ref)


@enceladus.jit
def none_slices(x_ptr, out_ptr, B: tl.constexpr):
    BB = tl.constexpr(B)  # tl.constexpr(...) called in a kernel is the value itself
    offs = tl.arange(0, BB)
    x = tl.load(x_ptr + offs)
    rows = x[:, None]
    cols = x[None, None:]  # a slice whose parts are None is ':'
    tl.store(out_ptr + offs[:, None] * B + offs[None, :], rows * 10.0 + cols)


def test_none_and_none_slice_indexing_and_constexpr_call():
    B = 8
    x = RNG.standard_normal(B).astype(np.float32)
    run_on_all_paths(none_slices, (1,), lambda: (x.copy(), np.zeros(B * B, np.float32)),
                     lambda x, out: {1: (x[:, None] * 10 + x[None, :]).ravel()}, constexprs={"B": B})


@enceladus.jit
def colons_past_rank(total_ptr, B: tl.constexpr):
    x = tl.full([B, B], 1.0, tl.float32)
    total = tl.sum(x, axis=None, keep_dims=True)  # shape (1, 1)
    tl.store(total_ptr[None, None, :], total)  # two Nones, and one ':' too many for a scalar pointer


@pytest.mark.parametrize("path", ["interpreter", "cpu"])
def test_more_colons_than_dimensions_are_refused_as_in_triton_39(path):
    # Triton 3.9 refuses this too ("too many indices for tensor of rank 0"; its test_reduce cases that index a
    # scalar pointer so fail in its own interpreter)
    with pytest.raises(CompilationError, match="too many"):
        on_path(colons_past_rank, path)[(1,)](np.zeros(1, np.float32), B=8)


@enceladus.jit
def rank_broadcast(x_ptr, y_ptr, out_ptr, hist_ptr, M: tl.constexpr, N: tl.constexpr):
    rm = tl.arange(0, M)
    rn = tl.arange(0, N)
    row = tl.load(x_ptr + rn)  # [N]
    mat = tl.load(y_ptr + rm[:, None] * N + rn[None, :])  # [M, N]
    # a tile of lower rank gets leading size-1 dimensions, as in Triton 3.9 (its test_histogram adds [N] + [M, N])
    tl.store(out_ptr + rm[:, None] * N + rn[None, :], row + mat * 2 + tl.where(row > 3, 1.0, 0.0))
    h = tl.histogram(rm % N, N)
    tl.store(hist_ptr + rm[:, None] * N + rn[None, :], h + tl.full([M, N], 1, tl.int32))


def test_lower_rank_tiles_broadcast_with_leading_dimensions():
    M, N = 4, 8
    x = RNG.standard_normal(N).astype(np.float32) * 4
    y = RNG.standard_normal((M, N)).astype(np.float32)
    hist = np.bincount(np.arange(M) % N, minlength=N).astype(np.int32)
    run_on_all_paths(rank_broadcast, (1,),
                     lambda: (x.copy(), y.copy(), np.zeros((M, N), np.float32), np.zeros((M, N), np.int32)),
                     lambda x, y, o, h: {2: x[None, :] + y * 2 + (x > 3)[None, :].astype(np.float32),
                                         3: np.broadcast_to(hist + 1, (M, N)).copy()},
                     constexprs={"M": M, "N": N})


@enceladus.jit
def introspect(x_ptr, out_ptr, B: tl.constexpr):
    offs = tl.arange(0, B)
    x = tl.load(x_ptr + offs)
    first = tl.load(x_ptr + tl.arange(0, 1)).item()  # a scalar: usable as a runtime if's condition
    if first > 0:
        x = x + 100
    pair = tl.tuple([x, offs])
    tl.static_assert(isinstance(pair, tl.tuple) and len(pair) == 2)
    tl.static_assert(x.numel == B and x.type.numel == B and len(x.type.shape) == 1 and x.type.shape[0] == B and x.type.element_ty == x.dtype)
    tl.static_assert(x_ptr.dtype.element_ty == tl.int32 and x_ptr.type.element_ty == tl.int32)
    tl.static_assert(x.shape == [B] and first.shape == [])  # equal to lists (Triton's test_full compares so)
    tl.static_assert(isinstance(x.type, tl.block_type) and not isinstance(first.type, tl.block_type))
    tl.static_assert(isinstance(x.type, tl.block_type) and not isinstance(first.type, tl.block_type))
    tl.static_assert(tl.str_to_ty("*i32") == x_ptr.dtype and tl.str_to_ty("i32") == tl.int32)
    if hasattr(x, "dtype") and not hasattr(x, "no_such_attribute"):
        x = pair[0] + pair[1] * 0 + x.numel
    tl.store(out_ptr + offs, x.to(x_ptr.dtype.element_ty))


@enceladus.jit
def shape_as_tuple(x_ptr, B: tl.constexpr):
    x = tl.load(x_ptr + tl.arange(0, B))
    tl.static_assert(x.shape == (B,) and x.shape == [B] and x.shape != [B + 1] and len(x.shape) == 1)
    tl.store(x_ptr + tl.arange(0, B), x + 1)


def test_compiled_shape_equals_tuples_and_lists():
    # Triton 3.9's shape is a tl.tuple, equal to both; the interpreter's is a list (equal to lists only)
    enceladus.compile(shape_as_tuple, signature="*fp32", constexprs={"B": 8})


@pytest.mark.parametrize("first", [5, -5])
def test_item_numel_type_element_ty_tuple_hasattr_str_to_ty(first):
    B = 16
    x = RNG.integers(-50, 50, B, dtype=np.int32)
    x[0] = first

    def ref(x, out):
        return {1: (x + (100 if x[0] > 0 else 0) + B).astype(np.int32)}

    run_on_all_paths(introspect, (1,), lambda: (x.copy(), np.zeros(B, np.int32)), ref, constexprs={"B": B})


@enceladus.jit
def random_module_and_rn(out_ptr, q_ptr, a_ptr, b_ptr, seed, B: tl.constexpr):
    offs = tl.arange(0, B)
    r1 = tl.random.rand(seed, offs)
    r2 = tl.rand(seed, offs)
    tl.store(out_ptr + offs, r1 - r2 + tl.random.randint(seed, offs).to(tl.float32) * 0.0 + r1)
    a = tl.load(a_ptr + offs)
    b = tl.load(b_ptr + offs)
    tl.store(q_ptr + offs, tl.div_rn(a, b) + tl.sqrt_rn(b))


def test_random_module_and_top_level_div_rn_sqrt_rn():
    B = 64
    a = RNG.uniform(-3, 3, B).astype(np.float32)
    b = RNG.uniform(0.5, 4, B).astype(np.float32)

    def check(args, expected, path):
        out, q = args[0], args[1]
        assert ((out >= 0) & (out < 1)).all() and np.unique(out).size > B // 2, path  # uniform values in [0, 1)
        np.testing.assert_array_equal(q, (a / b + np.sqrt(b)).astype(np.float32), err_msg=path)

    res = run_on_all_paths(random_module_and_rn, (1,),
                           lambda: (np.zeros(B, np.float32), np.zeros(B, np.float32), a.copy(), b.copy(), 7),
                           lambda *args: {}, check=check, constexprs={"B": B})
    if "cpu" in res:
        np.testing.assert_array_equal(res["cpu"][0], res["interpreter"][0])  # same Philox values on both paths


@enceladus.jit
def and_on_ints(x_ptr, n):
    if n and tl.program_id(0):
        tl.store(x_ptr, 1)


@enceladus.jit
def slice_with_bound(x_ptr, B: tl.constexpr):
    x = tl.load(x_ptr + tl.arange(0, B))
    tl.store(x_ptr + tl.arange(0, B), x[None, 1:])


@enceladus.jit
def not_on_float_tile(x_ptr, B: tl.constexpr):
    x = tl.load(x_ptr + tl.arange(0, B))
    tl.store(x_ptr + tl.arange(0, B), tl.where(not x, 1.0, 2.0))


@enceladus.jit
def map_bad_pack(x_ptr, B: tl.constexpr):
    x = tl.load(x_ptr + tl.arange(0, B))
    (y,) = tl.map_elementwise(swap_pair, x, x, pack=3)
    tl.store(x_ptr + tl.arange(0, B), y)


def _plain_python(x):
    return x


@enceladus.jit
def map_not_jit(x_ptr, B: tl.constexpr):
    x = tl.load(x_ptr + tl.arange(0, B))
    tl.store(x_ptr + tl.arange(0, B), tl.map_elementwise(_plain_python, x))


@enceladus.jit
def _plus_pid(x):
    return x + tl.program_id(0)


@enceladus.jit
def map_uses_program_id(x_ptr, B: tl.constexpr):
    x = tl.load(x_ptr + tl.arange(0, B))
    tl.store(x_ptr + tl.arange(0, B), tl.map_elementwise(_plus_pid, x))


@pytest.mark.parametrize("kernel,sig,consts,text", [
    (map_uses_program_id, "*i32", {"B": 8}, "'program_id' (program ids, memory, printing, asserts) is not available"),
    (map_bad_pack, "*i32", {"B": 8}, "pack=3 must be a power of two dividing the last dimension"),
    (map_not_jit, "*i32", {"B": 8}, "must be an @enceladus.jit function"),
    (and_on_ints, "*i32,i32", {}, "'and' needs boolean operands"),
    (slice_with_bound, "*fp32", {"B": 8}, "tiles can only be indexed with None and ':'"),
    (not_on_float_tile, "*fp32", {"B": 8}, "'not' needs a boolean tile"),
])
def test_refusals_are_located(kernel, sig, consts, text):
    with pytest.raises(CompilationError) as info:
        enceladus.compile(kernel, signature=sig, constexprs=consts)
    assert text in info.value.message and info.value.lineno is not None and info.value.fix


@enceladus.jit
def assert_stmt(x_ptr, n, B: tl.constexpr, CHECK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * B + tl.arange(0, B)
    x = tl.load(x_ptr + offs, mask=offs < n, other=0)
    assert (x < 100) | (offs >= n), "x must stay below 100"
    assert pid < 3 and n > 0, "at most three programs"
    assert CHECK, "CHECK is false"  # a constexpr: checked at run time in debug mode, as in Triton
    tl.store(x_ptr + offs, x + 1, mask=offs < n)


def test_assert_is_a_device_assert_checked_only_in_debug_mode():
    B, n = 16, 40
    good = np.arange(48, dtype=np.int32)
    ref = lambda x, n: {0: np.where(np.arange(x.size) < n, x + 1, x).astype(np.int32)}  # noqa: E731
    for debug in (False, True):  # nothing fails: the same results with and without the checks
        run_on_all_paths(assert_stmt, (3,), lambda: (good.copy(), n), ref, constexprs={"B": B, "CHECK": True},
                         debug=debug)
    bad = good.copy()
    bad[37] = 500
    # without debug mode asserts are not checked (Triton's default): the kernel runs on
    run_on_all_paths(assert_stmt, (3,), lambda: (bad.copy(), n), ref, constexprs={"B": B, "CHECK": False})
    run_on_all_paths(assert_stmt, (4,), lambda: (good.copy(), n), ref, constexprs={"B": B, "CHECK": True})
    line = assert_stmt.fn.__code__.co_firstlineno
    for path in ("interpreter", "cpu"):
        k = on_path(assert_stmt, path)
        cases = [((3,), bad, True, "x must stay below 100", line + 5, "program (2, 0, 0)"),
                 ((4,), good, True, "at most three programs", line + 6, "program (3, 0, 0)"),
                 ((1,), good, False, "CHECK is false", line + 7, "program (0, 0, 0)")]
        for grid, data, check, msg, lineno, program in cases:
            with pytest.raises(AssertionError, match=msg) as info:
                k[grid](data.copy(), n, B=B, CHECK=check, debug=True)
            text = str(info.value)
            assert program in text and str(lineno) in text, (path, text)


@enceladus.jit
def pick(x, n, pid):
    if pid < n:
        if pid % 2 == 0:
            return x * 2
        return x + 1
    elif pid == n:
        return x - x
    return x - 1


@enceladus.jit
def nested_returns(x_ptr, out_ptr, n, B: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * B + tl.arange(0, B)
    x = tl.load(x_ptr + offs)
    if pid > 0:
        if pid == 3:
            tl.store(out_ptr + offs, x * 0 - 3)
            return  # nested in two runtime ifs, code after the outer if
        x = x + 10
    y = pick(x, n, pid)  # an inlined function that returns from nested runtime ifs
    if pid == 5:
        return
    tl.store(out_ptr + offs, y)


def test_return_inside_nested_runtime_ifs():
    B, grid, n = 4, 7, 4
    x = RNG.integers(-20, 20, B * grid, dtype=np.int32)

    def ref(x, out, n):
        out = out.copy()
        for pid in range(grid):
            s = slice(pid * B, (pid + 1) * B)
            v = x[s].copy()
            if pid > 0:
                if pid == 3:
                    out[s] = -3
                    continue
                v = v + 10
            y = (v * 2 if pid % 2 == 0 else v + 1) if pid < n else (v - v if pid == n else v - 1)
            if pid == 5:
                continue
            out[s] = y
        return {1: out}

    run_on_all_paths(nested_returns, (grid,), lambda: (x.copy(), np.full(B * grid, 99, np.int32), n), ref,
                     constexprs={"B": B})


@enceladus.jit
def half_return(x, pid):
    if pid > 1:
        return x
    x = x + 1


@enceladus.jit
def returns_on_one_path(x_ptr):
    tl.store(x_ptr, half_return(tl.load(x_ptr), tl.program_id(0)))


@enceladus.jit
def return_in_loop(x_ptr, n):
    for i in range(n):
        if i == 3:
            return
        tl.store(x_ptr + i, i)


@pytest.mark.parametrize("kernel,sig,text", [
    (returns_on_one_path, "*i32", "returns a value on one path and nothing on another"),
    (return_in_loop, "*i32,i32", "'return' inside a loop is not supported"),
])
def test_return_refusals(kernel, sig, text):
    with pytest.raises(CompilationError) as info:
        enceladus.compile(kernel, signature=sig)
    assert text in info.value.message and info.value.lineno is not None and info.value.fix


@enceladus.jit
def selu_scalar(x, alpha):
    if x > 0:  # per element: only the branch taken runs
        return x
    return alpha * (tl.exp(x) - 1)


@enceladus.jit
def collatz_steps(n, cap):
    steps = 0
    while n != 1 and steps < cap:  # a loop whose trip count differs per element
        if n % 2 == 0:
            n = n // 2
        else:
            n = 3 * n + 1
        steps += 1
    return steps, n


@enceladus.jit
def swap_pair(a0, a1, b0, b1):
    return a1 + b0 * 0, a0 + b1 * 0  # pack=2: two elements in, two out (swapped within the pair)


@enceladus.jit
def map_kernel(x_ptr, n_ptr, y_ptr, s_ptr, r_ptr, p_ptr, B: tl.constexpr):
    offs = tl.arange(0, B)
    x = tl.load(x_ptr + offs)
    tl.store(y_ptr + offs, tl.map_elementwise(selu_scalar, x, 1.5))
    n = tl.load(n_ptr + offs)
    steps, rest = tl.map_elementwise(collatz_steps, n, 20)
    tl.store(s_ptr + offs, steps)
    tl.store(r_ptr + offs, rest)
    (swapped,) = tl.map_elementwise(swap_pair, n, n, pack=2)  # packed results come back as a tuple, as in Triton
    tl.store(p_ptr + offs, swapped)


def test_map_elementwise():
    B = 64
    x = RNG.standard_normal(B).astype(np.float32)
    n = RNG.integers(1, 60, B, dtype=np.int32)

    def collatz(v, cap=20):
        steps = 0
        while v != 1 and steps < cap:
            v = v // 2 if v % 2 == 0 else 3 * v + 1
            steps += 1
        return steps, v

    def ref(x, n, y, s, r, p):
        pairs = [collatz(int(v)) for v in n]
        return {2: np.where(x > 0, x, 1.5 * (np.exp(x.astype(np.float64)) - 1)).astype(np.float32),
                3: np.array([a for a, _ in pairs], np.int32), 4: np.array([b for _, b in pairs], np.int32),
                5: n.reshape(-1, 2)[:, ::-1].ravel()}

    run_on_all_paths(map_kernel, (1,), lambda: (x.copy(), n.copy(), np.zeros(B, np.float32), np.zeros(B, np.int32),
                                                 np.zeros(B, np.int32), np.zeros(B, np.int32)),
                     ref, constexprs={"B": B}, rtol=1e-5, atol=1e-6)


@enceladus.jit
def random_surface(seed, f_ptr, u_ptr, q_ptr, B: tl.constexpr):
    offs = tl.arange(0, B)
    u0, u1, u2, u3 = tl.random.rand4x(seed, offs)
    n0, n1, n2, n3 = tl.randn4x(seed, offs)
    c = offs.to(tl.uint32)
    k = (offs * 0 + 12345).to(tl.uint32)
    p0, p1, p2, p3 = tl.philox_impl(c, c + 1, c + 2, c + 3, k, k + 7, n_rounds=7)
    w = offs.to(tl.uint64) * 0x100000001
    q0, q1, q2, q3 = tl.random.philox_impl(w, w + 1, w + 2, w + 3, w * 3, w + 5)
    a, b = tl.pair_uniform_to_normal(u0, u1)
    floats = (u0, u1, u2, u3, n0, n1, n2, n3, tl.uint_to_uniform_float(p0), tl.random.uint_to_uniform_float(q0),
              a, b)
    for i in tl.static_range(len(floats)):
        tl.store(f_ptr + i * B + offs, floats[i])
    uints = (p0, p1, p2, p3)
    for i in tl.static_range(4):
        tl.store(u_ptr + i * B + offs, uints[i])
    wides = (q0, q1, q2, q3)
    for i in tl.static_range(4):
        tl.store(q_ptr + i * B + offs, wides[i])


def _philox_ref(c, k, rounds, bits):
    """Philox-4xN on Python integers (the published constants), for counters c[0..3] and key k[0..1]."""
    m = (1 << bits) - 1
    if bits == 32:
        ka, kb, ra, rb = 0x9E3779B9, 0xBB67AE85, 0xD2511F53, 0xCD9E8D57
    else:
        ka, kb, ra, rb = 0x9E3779B97F4A7C15, 0xBB67AE8584CAA73B, 0xD2E7470EE14C6C93, 0xCA5A826395121157
    c0, c1, c2, c3 = c
    k0, k1 = k
    for _ in range(rounds):
        p0, p2 = ra * c0, rb * c2
        c0, c1, c2, c3 = (p2 >> bits) ^ c1 ^ k0, p2 & m, (p0 >> bits) ^ c3 ^ k1, p0 & m
        k0, k1 = (k0 + ka) & m, (k1 + kb) & m
    return c0, c1, c2, c3


def _uniform_ref(x, bits):
    i = x - (1 << bits) if x >= 1 << (bits - 1) else x
    i = -i - 1 if i < 0 else i
    return np.float32(i) * np.float32(4.6566127342e-10 if bits == 32 else 1.0842020432385337e-19)


def _normal_ref(u1, u2):
    u1 = np.maximum(np.float32(1e-7), u1)
    r = np.sqrt(-2.0 * np.log(u1.astype(np.float64)))
    th = 6.283185307179586 * u2.astype(np.float64)
    return (r * np.cos(th)).astype(np.float32), (r * np.sin(th)).astype(np.float32)


def test_random_module_surface():
    B, seed = 32, 1234567
    rows = {i: np.zeros(B, np.float32) for i in range(12)}
    p = [[0] * B for _ in range(4)]
    q = [[0] * B for _ in range(4)]
    for j in range(B):
        r = _philox_ref((j, 0, 0, 0), (seed, 0), 10, 32)
        for i in range(4):
            rows[i][j] = _uniform_ref(r[i], 32)
        pj = _philox_ref((j, j + 1, j + 2, j + 3), (12345, 12352), 7, 32)
        w = j * 0x100000001
        qj = _philox_ref((w, w + 1, w + 2, w + 3), (w * 3, w + 5), 10, 64)
        for i in range(4):
            p[i][j], q[i][j] = pj[i], qj[i]
        rows[8][j] = _uniform_ref(pj[0], 32)
        rows[9][j] = _uniform_ref(qj[0], 64)
    rows[4], rows[5] = _normal_ref(rows[0], rows[1])
    rows[6], rows[7] = _normal_ref(rows[2], rows[3])
    rows[10], rows[11] = rows[4], rows[5]
    expected = {1: np.concatenate([rows[i] for i in range(12)]), 2: np.array(p, np.uint32).ravel(),
                3: np.array(q, np.uint64).ravel()}
    run_on_all_paths(random_surface, (1,), lambda: (seed, np.zeros(12 * B, np.float32), np.zeros(4 * B, np.uint32),
                                                    np.zeros(4 * B, np.uint64)),
                     lambda *args: expected, constexprs={"B": B}, rtol=1e-5, atol=2e-5)


@enceladus.jit
def small_surface(x_ptr, i_ptr, s_ptr, n_ptr, n, BM: tl.constexpr, BN: tl.constexpr):
    tl.static_assert(BM * BN <= tl.TRITON_MAX_TENSOR_NUMEL and i_ptr.dtype == tl.pi32_t)
    rm = tl.arange(0, BM)
    rn = tl.arange(0, BN)
    x = tl.load(x_ptr + rm[:, None] * BN + rn[None, :])
    tl.store(s_ptr + rm[:, None] * BN + rn[None, :], tl.softmax(x))  # along dim 0, as Triton's default
    tl.store(s_ptr + BM * BN + rm[:, None] * BN + rn[None, :], tl.softmax(x, dim=1, ieee_rounding=True))
    i = tl.load(i_ptr + rn)
    r = tl.mul(tl.sub(tl.add(i, 3), i // 2, sanitize_overflow=False), 5)
    tl.store(i_ptr + rn, r)
    big = tl.to_tensor(3_000_000_000)  # uint32, as the literal alone
    flag = tl.to_tensor(True)
    tl.static_assert(big.dtype == tl.uint32 and flag.dtype == tl.int1 and tl.to_tensor(2.5).dtype == tl.float32)
    k = 0
    while tl.condition(k < n, disable_licm=True):
        k += 2
    tl.store(n_ptr, tl.where(flag, k, -1) + (big - 3_000_000_000).to(tl.int32))


def test_small_surface_add_sub_mul_to_tensor_softmax_condition():
    BM, BN = 8, 16
    x = RNG.standard_normal((BM, BN)).astype(np.float32)
    i = RNG.integers(-100, 100, BN, dtype=np.int32)

    def softmax(v, axis):
        e = np.exp(v - v.max(axis=axis, keepdims=True))
        return e / e.sum(axis=axis, keepdims=True)

    def ref(x, i, s, n_out, n):
        return {1: ((i + 3 - np.trunc(i / 2).astype(np.int32)) * 5).astype(np.int32),
                2: np.concatenate([softmax(x, 0).ravel(), softmax(x, 1).ravel()]).astype(np.float32),
                3: np.array([n + (n % 2)], np.int32)}

    run_on_all_paths(small_surface, (1,), lambda: (x.copy(), i.copy(), np.zeros(2 * BM * BN, np.float32),
                                                    np.zeros(1, np.int32), 7),
                     ref, constexprs={"BM": BM, "BN": BN}, rtol=1e-5, atol=1e-6)


@enceladus.jit
def literals_and_expect_zero(x_ptr, out_ptr, B: tl.constexpr):
    offs = tl.arange(0, B)
    c = 7
    big = 3_000_000_000
    h = 0.5
    tl.static_assert(c.dtype == tl.int32 and big.dtype == tl.uint32 and h.dtype == tl.float32)
    x = tl.load(x_ptr + offs)
    x = tl.expect_zero(x, offs >= B - 2)  # the last two elements are expected to be zero
    tl.store(out_ptr + offs, x.to(c.dtype) + c)


def test_literal_dtype_and_expect_zero():
    B = 16
    x = RNG.integers(1, 9, B).astype(np.float32)
    x[-2:] = 0
    ref = lambda x, out: {1: (x.astype(np.int32) + 7).astype(np.int32)}  # noqa: E731
    for debug in (False, True):
        run_on_all_paths(literals_and_expect_zero, (1,), lambda: (x.copy(), np.zeros(B, np.int32)), ref,
                         constexprs={"B": B}, debug=debug)
    bad = x.copy()
    bad[-1] = 3
    for path in ("interpreter", "cpu"):  # a non-zero where the mask holds: reported in debug mode only
        on_path(literals_and_expect_zero, path)[(1,)](bad.copy(), np.zeros(B, np.int32), B=B)
        with pytest.raises(AssertionError, match="expect_zero expected x == 0"):
            on_path(literals_and_expect_zero, path)[(1,)](bad.copy(), np.zeros(B, np.int32), B=B, debug=True)


@enceladus.jit
def standard_and_target(x_ptr, out_ptr, B: tl.constexpr):
    offs = tl.arange(0, B)
    x = tl.load(x_ptr + offs)
    if tl.target_info.is_cuda() or tl.target_info.is_hip() or tl.target_info.cuda_capability_geq(8, 0):
        y = x * 0.0  # a CUDA/HIP-only path: never taken here
    else:
        y = tl.standard.softmax(x) + tl.standard.sum(x, 0) + tl.standard.max(x, 0)
    tl.static_assert(not (tl.target_info.is_hip_cdna3() or tl.target_info.is_hip_cdna4()
                          or tl.target_info.is_hip_gfx1250()))
    tl.store(out_ptr + offs, y)


def test_standard_and_target_info_modules():
    B = 32
    x = RNG.standard_normal(B).astype(np.float32)

    def ref(x, out):
        e = np.exp(x - x.max())
        return {1: (e / e.sum() + x.sum() + x.max()).astype(np.float32)}

    run_on_all_paths(standard_and_target, (1,), lambda: (x.copy(), np.zeros(B, np.float32)), ref,
                     constexprs={"B": B}, rtol=1e-5, atol=1e-5)


@enceladus.jit
def surface_sweep(x_ptr, bits_ptr, out_ptr, n, B: tl.constexpr):
    pid = tl.program_id(0)
    offs = tl.multiple_of(tl.max_contiguous(tl.arange(0, B), B), B)
    tl.assume(n > 0)
    x = tl.load(x_ptr + offs)
    tl.static_print("surface_sweep x:", x)
    tl.static_assert(isinstance(x, tl.tensor) and isinstance(x_ptr.dtype, tl.pointer_type))
    c = tl.core.constexpr(3)
    one = tl.max_constancy(tl.zeros_like(x) + 1.0, B)
    row, col = tl.broadcast(tl.unsqueeze(x, 0), tl.unsqueeze(one, 1))  # [1, B] and [B, 1] -> [B, B]
    y = tl.sum(row * col, 1) / B + tl.math.exp(x * 0.0) * c + tl.extra.libdevice.tanh(x * 0.0)
    si, sj = tl.swizzle2d(pid // 3, pid % 3, 4, 3, 2)
    tl.debug_barrier()
    tl.store(out_ptr + pid * B + offs, tl.cast(y, tl.float32) + (si * 10 + sj).to(tl.float32))
    tl.atomic_and(bits_ptr, ~(1 << pid))
    tl.atomic_or(bits_ptr + 1, 1 << pid)
    tl.atomic_xor(bits_ptr + 2, pid * 5)


def _swizzle2d_ref(i, j, size_i, size_j, size_g):
    ij = i * size_j + j
    size_gj = size_g * size_j
    group_id = ij // size_gj
    off_i = group_id * size_g
    size_g = min(size_i - off_i, size_g)
    ij = ij % size_gj
    return off_i + ij % size_g, ij // size_g


def test_surface_sweep_hints_atomics_shapes_modules():
    B, grid = 16, 12
    x = RNG.standard_normal(B).astype(np.float32)

    def ref(x, bits, out, n):
        res = np.zeros(grid * B, np.float32)
        xor = 0
        for pid in range(grid):
            si, sj = _swizzle2d_ref(pid // 3, pid % 3, 4, 3, 2)
            res[pid * B:(pid + 1) * B] = np.float32(x.sum(dtype=np.float32) / np.float32(B)) + 3.0 + si * 10 + sj
            xor ^= pid * 5
        return {1: np.array([-1 & ~((1 << grid) - 1), (1 << grid) - 1, xor], np.int32), 2: res}

    run_on_all_paths(surface_sweep, (grid,), lambda: (x.copy(), np.array([-1, 0, 0], np.int32),
                                                      np.zeros(grid * B, np.float32), 5),
                     ref, constexprs={"B": B}, rtol=1e-5, atol=1e-5)
