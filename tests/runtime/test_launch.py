"""Launching: argument binding, specialization, grids, arrays and views, and clear launch errors."""

import os

import numpy as np
import pytest

import enceladus

from . import launch_kernels as lk


def test_grid_callable_receives_bound_arguments():
    x = np.arange(1000, dtype=np.float32)
    out = np.zeros_like(x)
    seen = {}

    def grid(meta):
        seen.update(meta)
        return (enceladus.cdiv(meta["n"], meta["BLOCK"]),)

    lk.scale_kernel[grid](x, out, x.size, 2.0, BLOCK=256)
    np.testing.assert_allclose(out, 2 * x)
    assert seen["n"] == 1000 and seen["BLOCK"] == 256 and seen["alpha"] == 2.0


def test_constexpr_default_and_keyword_arguments():
    x = np.arange(300, dtype=np.float32)
    out = np.zeros_like(x)
    lk.scale_kernel[(3,)](x, out_ptr=out, n=300, alpha=0.5)
    np.testing.assert_allclose(out, 0.5 * x)


def test_specialization_keys():
    x = np.zeros(64, np.float32)
    k = lk.scale_kernel
    k.cache.clear()
    k[(1,)](x, x.copy(), 64, 1.0)
    k[(1,)](x, x.copy(), 48, 1.0)  # also divisible by 16: same kernel
    assert len(k.cache) == 1
    k[(1,)](x, x.copy(), 50, 1.0)  # not divisible by 16: new specialization
    k[(1,)](x, x.copy(), 1, 1.0)  # == 1: constant
    assert len(k.cache) == 3
    k[(1,)](x, x.copy(), 64, 1.0, num_warps=2)
    assert len(k.cache) == 4
    ck = k.warmup(x, x.copy(), 1, 1.0)
    assert "%n" not in ck.asm["ir"].split("\n")[0]  # n == 1 is folded into the kernel, not an argument


def test_do_not_specialize():
    x = np.zeros(64, np.float32)
    k = lk.scale_no_spec
    k.cache.clear()
    for n in (64, 1, 50):
        k[(1,)](x, x.copy(), n, 1.0)
    assert len(k.cache) == 1


def test_large_ints_become_int64():
    x = np.zeros(16, np.float32)
    ck = lk.annotated.warmup(x, 5, BLOCK=16)
    assert "int64" in ck.asm["ir"].split("\n")[0]
    lk.annotated[(1,)](x, 2**33, BLOCK=16)
    np.testing.assert_allclose(x, (np.arange(16) + 2**33).astype(np.float32))


def test_strided_view_is_addressed_with_its_strides():
    base = np.arange(64 * 40, dtype=np.float32).reshape(64, 40)
    view = base.T  # (40, 64), strides (1, 40) in elements
    out = np.zeros((40, 64), np.float32)
    sm, sn = (s // 4 for s in view.strides)
    lk.strided_scale[(enceladus.cdiv(40, 16),)](view, out, 40, 64, sm, sn, BLOCK_M=16, BLOCK_N=64)
    np.testing.assert_allclose(out, view + 1)


def test_sliced_view_starts_at_its_first_element():
    base = np.arange(100, dtype=np.float32)
    view = base[10:90:2]
    out = np.zeros(40, np.float32)
    lk.strided_scale[(1,)](view, out, 1, 40, 0, 2, BLOCK_M=1, BLOCK_N=64)
    np.testing.assert_allclose(out, view + 1)


def test_torch_cpu_tensors_are_accepted():
    torch = pytest.importorskip("torch")
    x = torch.arange(200, dtype=torch.float32)
    out = torch.zeros(200)
    lk.scale_kernel[(2,)](x, out, 200, 3.0)
    assert torch.allclose(out, 3 * x)


def test_zero_grid_launches_nothing():
    x = np.ones(8, np.float32)
    out = np.zeros(8, np.float32)
    lk.scale_kernel[(0,)](x, out, 8, 2.0)
    assert not out.any()


# --- errors (each leaves the caller's arrays untouched) ---------------------------------------------

@pytest.fixture
def arrays():
    x = np.arange(16, dtype=np.float32)
    out = np.full(16, 7, np.float32)
    return x, out


def assert_untouched(out):
    assert (out == 7).all()


@pytest.mark.parametrize("call,exc,match", [
    (lambda x, o: lk.scale_kernel[(1,)](x, o, 16), TypeError, "missing argument 'alpha'"),
    (lambda x, o: lk.scale_kernel[(1,)](x, o, 16, 1.0, 5, 6), TypeError, "takes 5 arguments"),
    (lambda x, o: lk.scale_kernel[(1,)](x, o, 16, 1.0, blok=3), TypeError, "unexpected keyword argument 'blok'"),
    (lambda x, o: lk.scale_kernel[(1,)](x, o, 16, 1.0, n=3), TypeError, "multiple values for argument 'n'"),
    (lambda x, o: lk.scale_kernel[(1.5,)](x, o, 16, 1.0), TypeError, r"grid\[0\] must be an int"),
    (lambda x, o: lk.scale_kernel[(-1,)](x, o, 16, 1.0), ValueError, "negative"),
    (lambda x, o: lk.scale_kernel[(1, 1, 1, 1)](x, o, 16, 1.0), TypeError, "1 to 3 ints"),
    (lambda x, o: lk.scale_kernel[(2**32,)](x, o, 16, 1.0), ValueError, "Metal's limit"),
    (lambda x, o: lk.scale_kernel[(1,)](x.astype(np.float64), o, 16, 1.0), enceladus.CompilationError,
     "float64 array can only be stored to"),
    (lambda x, o: lk.scale_kernel[(1,)](x.astype(np.complex64), o, 16, 1.0), TypeError, "complex64"),
    (lambda x, o: lk.scale_kernel[(1,)](np.array([object()] * 16), o, 16, 1.0), TypeError, "object"),
    (lambda x, o: lk.scale_kernel[(1,)](x[::-1], o, 16, 1.0), ValueError, "negative strides"),
    (lambda x, o: lk.scale_kernel[(1,)](x, o, 16, "2.0"), TypeError, "argument 'alpha' has type str"),
    (lambda x, o: lk.scale_kernel[(1,)](x, o, 2**64, 1.0), ValueError, "does not fit in 64 bits"),
    (lambda x, o: lk.scale_kernel(x, o, 16, 1.0), RuntimeError, "must be launched with a grid"),
])
def test_launch_errors(arrays, call, exc, match):
    x, out = arrays
    with pytest.raises(exc, match=match):
        call(x, out)
    assert_untouched(out)


def test_read_only_output_is_refused(arrays):
    x, out = arrays
    out.flags.writeable = False
    with pytest.raises(ValueError, match="read-only array"):
        lk.scale_kernel[(1,)](x, out, 16, 1.0)
    out.flags.writeable = True
    assert_untouched(out)
    x.flags.writeable = False  # read-only inputs are fine
    out2 = np.zeros(16, np.float32)
    lk.scale_kernel[(1,)](x, out2, 16, 2.0)
    np.testing.assert_allclose(out2, 2 * x)


def test_misaligned_array_is_refused(arrays):
    _, out = arrays
    raw = np.zeros(65, np.uint8)
    x = raw[1:].view(np.float32)
    with pytest.raises(ValueError, match="not aligned"):
        lk.scale_kernel[(1,)](x, out, 16, 1.0)
    assert_untouched(out)


def test_compile_signature_string_and_errors():
    ck = enceladus.compile(lk.scale_kernel, signature="*fp32, *fp32, i32, fp32", constexprs={"BLOCK": 64})
    assert "kernel void scale_kernel(" in ck.asm["msl"]
    assert [p.kind for p in ck.abi.params] == ["buffer", "buffer", "scalar", "scalar"]
    assert ck.abi.args_size == 8 and ck.abi.args_slot == 2
    with pytest.raises(TypeError, match="unknown pointer type"):
        enceladus.compile(lk.scale_kernel, signature="*fp33, *fp32, i32, fp32")
    with pytest.raises(enceladus.CompilationError, match="float64 array can only be stored to"):
        enceladus.compile(lk.scale_kernel, signature="*fp64, *fp32, i32, fp32")
    with pytest.raises(TypeError, match="4 runtime parameters"):
        enceladus.compile(lk.scale_kernel, signature="*fp32, *fp32")
    with pytest.raises(TypeError, match="unknown parameter"):
        enceladus.compile(lk.scale_kernel, signature={"x_ptr": "*fp32", "bogus": "i32"})


def test_dump_writes_ir_and_msl(tmp_path, monkeypatch):
    monkeypatch.setenv("ENCELADUS_DUMP", str(tmp_path))
    enceladus.compile(lk.scale_kernel, signature="*fp32, *fp32, i32, fp32", constexprs={"BLOCK": 1024})
    files = sorted(os.listdir(tmp_path))
    assert [f.rsplit(".", 1)[1] for f in files] == ["ir", "metal"]
    msl = (tmp_path / files[1]).read_text()
    assert "kernel void scale_kernel(" in msl
    assert "blocked<shape=[1024], spt=[4], tpw=[32], wpc=[4]" in (tmp_path / files[0]).read_text()


def test_launch_plan_follows_every_change_of_the_kernel_cache():
    """The fast path skips hashing the specialization key while JITFunction.cache is unchanged (a dict that
    notes its changes): every way of changing it sends the next launch back to the cache."""
    k = lk.scale_kernel
    k.cache.clear()
    assert isinstance(k.cache, dict)
    x = enceladus.tensor(np.arange(64, dtype=np.float32))
    out = enceladus.tensor(np.zeros(64, np.float32))
    grid = (1,)

    def launch(alpha):
        kernel = k[grid](x, out, 64, alpha)
        np.testing.assert_allclose(out.numpy(), alpha * np.arange(64, dtype=np.float32))
        return kernel

    first = launch(2.0)
    assert launch(3.0) is first  # the launch plan
    (key,) = k.cache
    k.cache.pop(key)
    second = launch(4.0)
    assert second is not first and k.cache[key] is second
    k.cache[key] = first  # replaced: the plan of `second` must not be used
    assert launch(5.0) is first
    k.cache |= {key: second}
    assert launch(6.0) is second
    k.cache.update({key: first})
    assert launch(7.0) is first
    del k.cache[key]
    third = launch(8.0)
    assert third is not first and third is not second
    k.cache.popitem()
    fourth = launch(9.0)
    assert fourth is not third
    k.cache.clear()
    assert launch(1.5) is not fourth
    k.cache = {}  # a plain dict put in its place: still followed
    fifth = launch(2.5)
    assert k.cache[key] is fifth
    k.cache[key] = first
    assert launch(3.5) is first


def test_debug_environment_variable_is_read_at_every_launch(monkeypatch):
    k = lk.scale_kernel
    x = enceladus.tensor(np.arange(64, dtype=np.float32))
    out = enceladus.tensor(np.zeros(64, np.float32))
    plain = k[(1,)](x, out, 64, 2.0)
    assert k[(1,)](x, out, 64, 2.0) is plain
    monkeypatch.setenv("ENCELADUS_DEBUG", "1")
    debug = k[(1,)](x, out, 64, 2.0)
    assert debug is not plain  # the debug build
    monkeypatch.setenv("ENCELADUS_DEBUG", "0")
    assert k[(1,)](x, out, 64, 2.0) is plain
    os.environ.pop("ENCELADUS_DEBUG")
    assert k[(1,)](x, out, 64, 2.0) is plain


def test_kernel_cache_notes_every_change():
    from enceladus.runtime.fastpath import KernelCache

    c = KernelCache({"a": 1})
    seen = {c.version}
    for change in (lambda: c.__setitem__("b", 2), lambda: c.pop("b"), lambda: c.pop("zz", None),
                   lambda: c.setdefault("c", 3), lambda: c.update(d=4), lambda: c.__ior__({"e": 5}),
                   lambda: c.__delitem__("e"), lambda: c.popitem(), lambda: c.clear()):
        change()
        assert c.version not in seen
        seen.add(c.version)
    assert c == {} and isinstance(c, dict)
