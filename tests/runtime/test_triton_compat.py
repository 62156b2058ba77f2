"""The Triton compatibility entry (enceladus.triton) and the host API Triton programs use."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import warnings

import numpy as np
import pytest

import enceladus
import enceladus.language as tl
from enceladus import triton as compat

ENV = {**os.environ}


def _run(args: list[str], cwd: str, extra_env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    env = {**ENV, **(extra_env or {})}
    env["PYTHONPATH"] = os.pathsep.join(p for p in (cwd, env.get("PYTHONPATH", "")) if p)
    return subprocess.run([sys.executable, *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=300)


@pytest.fixture
def fake_triton(tmp_path):
    """A directory holding a stand-in 'installed' triton package."""
    pkg = tmp_path / "triton"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("INSTALLED = True\n")
    return tmp_path


@pytest.fixture
def aliased():
    triton = compat.install()
    try:
        yield triton
    finally:
        compat.uninstall()


def test_importing_enceladus_leaves_triton_alone(fake_triton):
    code = ("import sys, enceladus, enceladus.triton, enceladus.language\n"
            "assert 'triton' not in sys.modules, sys.modules.get('triton')\n"
            "import triton\nassert triton.INSTALLED\n"
            "enceladus.triton.install(); import triton as t2\nassert t2.jit is enceladus.jit\n"
            "enceladus.triton.uninstall(); import triton as t3\nassert t3.INSTALLED\nprint('ok')\n")
    r = _run(["-c", code], str(fake_triton))
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "ok"


def test_alias_names(aliased):
    import triton
    import triton.language as tl2
    from triton.runtime import driver
    from triton.runtime.errors import InterpreterError
    from triton.tools.tensor_descriptor import TensorDescriptor

    assert tl2 is enceladus.language
    for name in ("jit", "autotune", "Config", "heuristics", "cdiv", "next_power_of_2", "testing", "reinterpret",
                 "TensorWrapper", "constexpr_function", "set_allocator", "knobs", "must_use_result", "TritonError",
                 "CompilationError", "InterpreterError", "OutOfResources"):
        assert hasattr(triton, name), name
    assert triton.jit is enceladus.jit and triton.knobs is enceladus.knobs
    assert {"do_bench", "perf_report", "Benchmark", "assert_close"} <= set(dir(triton.testing))
    assert issubclass(triton.CompilationError, triton.TritonError)
    assert issubclass(InterpreterError, triton.TritonError)
    assert TensorDescriptor is enceladus.TensorDescriptor
    target = driver.active.get_current_target()
    assert target.backend in ("cpu", "metal") and target.warp_size == 32
    props = driver.active.utils.get_device_properties(0)
    assert {"multiprocessor_count", "max_shared_mem", "max_num_regs", "warpSize"} <= set(props)
    assert props["warpSize"] == 32 and props["max_shared_mem"] > 0
    with pytest.raises(ModuleNotFoundError, match="docs/porting.md"):
        import triton.backends  # noqa: F401


def test_multiprocessor_count_is_the_cpu_pool_size(monkeypatch):
    """Tutorials size persistent grids by ``multiprocessor_count``: on the cpu backend it is the thread pool's size
    (ENCELADUS_CPU_THREADS, else the CPUs in the affinity mask), not os.cpu_count()."""
    from enceladus.triton.driver import driver

    if driver.active.get_current_target().backend != "cpu":
        pytest.skip("the cpu backend's value")
    monkeypatch.setenv("ENCELADUS_CPU_THREADS", "3")
    assert driver.active.utils.get_device_properties(0)["multiprocessor_count"] == 3
    monkeypatch.delenv("ENCELADUS_CPU_THREADS")
    expected = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    assert driver.active.utils.get_device_properties(0)["multiprocessor_count"] == expected


@enceladus.jit(launch_metadata=lambda grid, metadata, args: {"n": args["n"], "grid": grid})
def _double(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(y_ptr + offs, tl.load(x_ptr + offs, mask=mask) * 2, mask=mask)


@enceladus.jit
def _gather_rows(ptrs, out, n, BLOCK: tl.constexpr):
    """Rows read through int64 addresses (as tutorial 08's tensor of data_ptr()s), in a loop, so the last op of
    the kernel is the loop's yield and one op is a cast from an integer to a pointer."""
    for g in range(n):
        row = tl.load(ptrs + g).to(tl.pointer_type(tl.float32))
        offs = tl.arange(0, BLOCK)
        tl.store(out + g * BLOCK + offs, tl.load(row + offs) * 2)


def test_compiled_kernel_keeps_its_name():
    # the compiler named every kernel after its last op ('yield', 'store', ...): cache listings, error messages
    # and the unknown-address warning ("kernel 'yield' at line ...") said so
    x = np.arange(100, dtype=np.float32)
    assert _double.warmup(x, np.zeros_like(x), x.size, BLOCK=64, grid=(1,)).name == "_double"
    rows = [np.arange(16, dtype=np.float32) + 100 * i for i in range(3)]
    ptrs = np.array([r.ctypes.data for r in rows], np.int64)
    out = np.zeros(48, np.float32)
    assert _gather_rows.warmup(ptrs, out, 3, BLOCK=16, grid=(1,)).name == "_gather_rows"
    with pytest.warns(RuntimeWarning, match="kernel '_gather_rows' at line"):
        _gather_rows[(1,)](ptrs, out, 3, BLOCK=16)
    np.testing.assert_array_equal(out, 2 * np.concatenate(rows))


def test_warmup_returns_a_launchable_kernel():
    x = np.arange(100, dtype=np.float32)
    y = np.zeros_like(x)
    compiled = _double.warmup(x, y, x.size, BLOCK=64, grid=(1,))
    compiled._init_handles()
    assert compiled.n_regs > 0 and compiled.n_spills == 0
    assert compiled.metadata.num_warps == 4 and compiled.metadata.shared >= 0
    compiled[(2, 1, 1)](x, y, x.size, 64)
    np.testing.assert_array_equal(y, 2 * x)
    with pytest.raises(TypeError, match="constexprs included"):
        compiled[(2,)](x, y, x.size)


def test_launch_hooks_and_launch_metadata():
    from enceladus import knobs

    x = np.arange(100, dtype=np.float32)
    y = np.zeros_like(x)
    _double[(2,)](x, y, x.size, BLOCK=64)  # a fast path exists before the hook is set
    seen, left = [], []

    def enter(md):
        seen.append(md.get())

    knobs.runtime.launch_enter_hook.add(enter)
    knobs.runtime.launch_exit_hook.add(left.append)
    try:
        y[:] = 0
        _double[(2,)](x, y, x.size, BLOCK=64)
    finally:
        knobs.runtime.launch_enter_hook.remove(enter)
        knobs.runtime.launch_exit_hook.remove(left.append)
    np.testing.assert_array_equal(y, 2 * x)
    assert len(seen) == 1 and len(left) == 1
    assert seen[0]["name"] == "_double" and seen[0]["n"] == 100 and seen[0]["grid"] == (2, 1, 1)
    assert not knobs.hooks_active()
    _double[(2,)](x, y, x.size, BLOCK=64)
    assert len(seen) == 1  # removed: not called again


def test_extern_libs_accepted():
    x = np.arange(10, dtype=np.float32)
    y = np.zeros_like(x)
    _double[(1,)](x, y, x.size, BLOCK=16, extern_libs={"libdevice": "/opt/cuda/libdevice.10.bc"})
    np.testing.assert_array_equal(y, 2 * x)


@enceladus.jit
def _patchable(x_ptr, y_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(y_ptr + offs, tl.load(x_ptr + offs) + 1)


def test_src_and_unsafe_update_src():
    kernel = enceladus.JITFunction(_patchable.fn)
    assert kernel.src.startswith("def _patchable(")
    kernel._unsafe_update_src(kernel.src.replace("+ 1", "+ 5"))
    x = np.arange(16, dtype=np.float32)
    y = np.zeros_like(x)
    kernel[(1,)](x, y, BLOCK=16)
    np.testing.assert_array_equal(y, x + 5)
    _patchable[(1,)](x, y, BLOCK=16)  # the original is untouched
    np.testing.assert_array_equal(y, x + 1)


def test_kernel_built_with_exec():
    src = textwrap.dedent("""
        @enceladus.jit
        def made_by_exec(x_ptr, y_ptr, BLOCK: tl.constexpr):
            offs = tl.arange(0, BLOCK)
            tl.store(y_ptr + offs, tl.load(x_ptr + offs) * 3)
    """)
    namespace: dict = {}
    exec(src, globals(), namespace)
    x = np.arange(16, dtype=np.float32)
    y = np.zeros_like(x)
    namespace["made_by_exec"][(1,)](x, y, BLOCK=16)
    np.testing.assert_array_equal(y, 3 * x)


def test_script_entry(tmp_path):
    script = tmp_path / "prog.py"
    script.write_text(textwrap.dedent("""
        import sys
        import numpy as np
        import triton
        import triton.language as tl
        import enceladus

        @triton.jit
        def add_one(x_ptr, n, BLOCK: tl.constexpr):
            offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
            tl.store(x_ptr + offs, tl.load(x_ptr + offs, mask=offs < n) + 1, mask=offs < n)

        assert tl is enceladus.language
        x = np.zeros(100, np.float32)
        add_one[(triton.cdiv(100, 64),)](x, 100, BLOCK=64)
        assert (x == 1).all()
        print("ran", sys.argv[1:], __name__)
    """))
    r = _run(["-m", "enceladus.triton", str(script), "a", "b"], str(tmp_path))
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "ran ['a', 'b'] __main__"


def test_pytest_plugin(tmp_path, fake_triton):
    (tmp_path / "test_uses_triton.py").write_text(textwrap.dedent("""
        import pytest
        import triton
        import triton.language as tl
        from triton._internal_testing import is_interpreter, is_cuda

        @pytest.mark.interpreter
        def test_alias():
            import enceladus
            assert tl is enceladus.language and is_interpreter() and not is_cuda()
    """))
    r = _run(["-m", "pytest", "-p", "enceladus.triton", "-q", "-p", "no:cacheprovider", "test_uses_triton.py"],
             str(tmp_path))
    assert r.returncode == 0, r.stdout + r.stderr
    assert "1 passed" in r.stdout


def test_explain_on_autotuned_kernel():
    tuned = enceladus.autotune([enceladus.Config({"BLOCK": 32}), enceladus.Config({"BLOCK": 64}, num_warps=2)],
                               key=["n"])(enceladus.jit(_double.fn))
    x = np.arange(100, dtype=np.float32)
    text = tuned.explain(x, np.zeros_like(x), x.size)
    assert "first config" in text and "BLOCK: 32" in text and "threads per threadgroup" in text


def test_autotuner_times_identical_configs_once():
    calls = []

    def bench(fn, quantiles=None):
        fn()
        calls.append(1)
        return [1.0 + len(calls), 1.0, 1.0]

    configs = [enceladus.Config({"BLOCK": 64}, num_stages=s) for s in (1, 2, 3, 4)]
    configs.append(enceladus.Config({"BLOCK": 32}))
    tuned = enceladus.autotune(configs, key=["n"], do_bench=bench)(enceladus.jit(_double.fn))
    x = np.arange(100, dtype=np.float32)
    y = np.zeros_like(x)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        tuned[lambda m: (enceladus.cdiv(m["n"], m["BLOCK"]),)](x, y, x.size)
    np.testing.assert_array_equal(y, 2 * x)
    assert len(calls) == 2  # BLOCK=64 once (four configs, the same MSL), BLOCK=32 once
    timings = tuned.configs_timings
    assert timings is not None and len({tuple(timings[c]) for c in configs[:4]}) == 1


def test_autotuner_times_identical_configs_with_the_same_pre_hook_once():
    # tutorial 06's and 09's configs all carry the same pre_hook and differ in num_stages: each distinct launch is
    # timed once, after its hook ran; a config with another hook function is timed on its own
    calls, hooked = [], []

    def bench(fn, quantiles=None):
        fn()
        calls.append(1)
        return [1.0 + len(calls), 1.0, 1.0]

    def hook(nargs):
        hooked.append(nargs["BLOCK"])

    def other_hook(nargs):
        hooked.append(-nargs["BLOCK"])

    configs = [enceladus.Config({"BLOCK": 64}, num_stages=s, pre_hook=hook) for s in (2, 3, 4)]
    configs += [enceladus.Config({"BLOCK": 32}, num_stages=s, pre_hook=hook) for s in (2, 3)]
    configs.append(enceladus.Config({"BLOCK": 64}, num_stages=5, pre_hook=other_hook))
    tuned = enceladus.autotune(configs, key=["n"], do_bench=bench)(enceladus.jit(_double.fn))
    x = np.arange(100, dtype=np.float32)
    y = np.zeros_like(x)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        tuned[lambda m: (enceladus.cdiv(m["n"], m["BLOCK"]),)](x, y, x.size)
    np.testing.assert_array_equal(y, 2 * x)
    assert len(calls) == 3  # BLOCK=64 with hook, BLOCK=32 with hook, BLOCK=64 with other_hook
    timings = tuned.configs_timings
    assert len({tuple(timings[c]) for c in configs[:3]}) == 1 and len({tuple(timings[c]) for c in configs[3:5]}) == 1
    assert tuple(timings[configs[5]]) != tuple(timings[configs[0]])
    assert {32, 64, -64} <= set(hooked)  # every hook ran before its config was compared or timed


def test_interpreter_times_configs_differing_only_in_gpu_knobs_once():
    # the interpreter runs a program as a whole: num_warps / num_stages / num_ctas / maxnreg change nothing it
    # computes (tutorial 09 lists 24 configs, 4 distinct launches in the interpreter)
    from enceladus.runtime.jit import JITFunction

    calls, hooked = [], []

    def bench(fn, quantiles=None):
        fn()
        calls.append(1)
        return [1.0 + len(calls), 1.0, 1.0]

    def hook(nargs):
        hooked.append(nargs["BLOCK"])

    configs = [enceladus.Config({"BLOCK": 64}, num_warps=w, num_stages=s) for w in (2, 4) for s in (2, 3)]
    configs += [enceladus.Config({"BLOCK": 64}, num_warps=w, pre_hook=hook) for w in (4, 8)]
    configs += [enceladus.Config({"BLOCK": 32}, num_warps=w, num_ctas=1, maxnreg=r) for w in (1, 2) for r in (None, 64)]
    tuned = enceladus.autotune(configs, key=["n"], do_bench=bench)(JITFunction(_double.fn, interpret=True))
    x = np.arange(100, dtype=np.float32)
    y = np.zeros_like(x)
    tuned[lambda m: (enceladus.cdiv(m["n"], m["BLOCK"]),)](x, y, x.size)
    np.testing.assert_array_equal(y, 2 * x)
    assert len(calls) == 3  # BLOCK=64, BLOCK=64 with the hook, BLOCK=32
    timings = tuned.configs_timings
    assert [len({tuple(timings[c]) for c in group}) for group in (configs[:4], configs[4:6], configs[6:])] == [1, 1, 1]
    assert 64 in hooked


def test_reinterpret_unsigned_data(aliased):
    import triton

    signed = np.array([-1, 1, 2], np.int32)  # as Triton's tests hold uint32 data in int32 torch tensors
    wrapped = triton.reinterpret(signed, tl.uint32)
    out = np.zeros(3, np.uint32)

    @triton.jit
    def copy(x_ptr, y_ptr, BLOCK: tl.constexpr):
        offs = tl.arange(0, BLOCK)
        tl.store(y_ptr + offs, tl.load(x_ptr + offs, mask=offs < 3) >> 1, mask=offs < 3)

    copy[(1,)](wrapped, out, BLOCK=4)
    np.testing.assert_array_equal(out, np.array([0xFFFFFFFF >> 1, 0, 1], np.uint32))


def test_suite_script_exclusions_and_classes():
    import importlib.util
    import pathlib

    path = pathlib.Path(__file__).resolve().parents[2] / "tools" / "triton_suite.py"
    spec = importlib.util.spec_from_file_location("triton_suite_under_test", path)
    suite = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(suite)
    assert suite.excluded("test/unit/language/test_core.py::test_bin_op[float64-int8-+]") == "float64"
    assert suite.excluded("test/unit/language/test_core.py::test_atomic_rmw[add-int64-False-acq_rel]") == "atomic64"
    assert suite.excluded("test/unit/language/test_core.py::test_atomic_rmw[add-float32-False-acq_rel]") is None
    assert suite.excluded("test/unit/language/test_core.py::test_bin_op[int64-int8-+]") is None
    assert suite.classify("E   AssertionError: Not equal to tolerance")[0] == "wrong values"
    assert suite.classify("CompilationError: x\n    tl.foo()\nerror: tl.foo takes 2 arguments")[0] == "compile error"


def test_suite_script_names_the_modules_the_test_python_lacks(tmp_path):
    import importlib.util
    import pathlib
    import sys

    path = pathlib.Path(__file__).resolve().parents[2] / "tools" / "triton_suite.py"
    spec = importlib.util.spec_from_file_location("triton_suite_under_test", path)
    suite = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(suite)
    # a Python whose torch, scipy and ml_dtypes cannot be imported: a wrapper that hides them
    fake = tmp_path / "python"
    fake.write_text("#!/bin/sh\nexec " + sys.executable + " -c 'import sys; sys.modules.update(torch=None, scipy=None, "
                    "ml_dtypes=None); import importlib.util as u; f = u.find_spec; "
                    "u.find_spec = lambda m, *a: None if m in (\"torch\", \"scipy\", \"ml_dtypes\") else f(m, *a); "
                    "exec(sys.argv[2])' \"$@\"\n")
    fake.chmod(0o755)
    with pytest.raises(SystemExit, match=r"lacks torch, scipy, ml_dtypes: install them"):
        suite.check_python(str(fake))
    with pytest.raises(SystemExit, match="does not run"):
        suite.check_python(str(tmp_path / "no-such-python"))


def test_warmup_under_the_interpreter():
    interpreted = enceladus.jit(interpret=True)(_double.fn)
    x = np.arange(100, dtype=np.float32)
    y = np.zeros_like(x)
    compiled = interpreted.warmup(x, y, x.size, BLOCK=64, grid=(1,))
    compiled._init_handles()  # builds nothing: launches run in the interpreter
    assert compiled.n_regs > 0 and compiled.metadata.num_warps == 4
    compiled[(2,)](x, y, x.size, 64)
    np.testing.assert_array_equal(y, 2 * x)


def test_dtype_mantissa_width_and_exponent_bias_match_numpy_finfo():
    # Triton's tests read tl.float16.fp_mantissa_width / exponent_bias on the host; checked against NumPy's
    # (and ml_dtypes') own description of each format: bias = 1 - minexp for these formats
    ml_dtypes = pytest.importorskip("ml_dtypes")
    formats = {tl.float16: np.float16, tl.float32: np.float32, tl.float64: np.float64,
               tl.bfloat16: ml_dtypes.bfloat16, tl.float8e4nv: ml_dtypes.float8_e4m3fn,
               tl.float8e5: ml_dtypes.float8_e5m2, tl.float8e4b8: ml_dtypes.float8_e4m3fnuz,
               tl.float8e5b16: ml_dtypes.float8_e5m2fnuz}
    for ty, np_ty in formats.items():
        info = ml_dtypes.finfo(np_ty)
        assert (ty.fp_mantissa_width, ty.exponent_bias) == (info.nmant, 1 - info.minexp), ty
    assert (tl.float8e4b15.fp_mantissa_width, tl.float8e4b15.exponent_bias) == (3, 15)
    with pytest.raises(AttributeError, match="'int32' is not a floating-point type"):
        tl.int32.fp_mantissa_width  # noqa: B018 - the attribute access is what is tested


def test_suite_script_shards_the_cases_over_jobs(monkeypatch):
    import importlib.util
    import pathlib
    import threading

    path = pathlib.Path(__file__).resolve().parents[2] / "tools" / "triton_suite.py"
    spec = importlib.util.spec_from_file_location("triton_suite_under_test", path)
    suite = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(suite)
    calls = []

    def fake_run_cases(python, pydir, mode, ids, case_timeout, deadline, log):
        calls.append((tuple(ids), log, threading.get_ident()))
        return {i: {"id": i, "outcome": "passed", "text": None} for i in ids}

    monkeypatch.setattr(suite, "run_cases", fake_run_cases)
    ids = [f"t.py::case{i}" for i in range(10)]
    res = suite.run_sharded("py", "dir", "compiled", ids, 10, 0.0, "/tmp/log", jobs=4)
    assert sorted(res) == sorted(ids) and len(calls) == 4
    assert sorted(c[0] for c in calls) == sorted(tuple(ids[k::4]) for k in range(4))  # every case once
    assert {c[1] for c in calls} == {f"/tmp/log.shard{k}" for k in range(4)}  # a log per shard
    calls.clear()
    suite.run_sharded("py", "dir", "compiled", ids, 10, 0.0, "/tmp/log", jobs=1)
    assert calls == [(tuple(ids), "/tmp/log", calls[0][2])]  # one process, the plain log


def test_suite_script_resume_runs_only_the_cases_without_an_outcome(monkeypatch, tmp_path):
    import importlib.util
    import json
    import pathlib

    path = pathlib.Path(__file__).resolve().parents[2] / "tools" / "triton_suite.py"
    spec = importlib.util.spec_from_file_location("triton_suite_under_test", path)
    suite = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(suite)
    ids = [f"test/unit/language/test_core.py::case{i}" for i in range(6)]
    ran = []

    def fake_run_cases(python, pydir, mode, todo, case_timeout, deadline, log):
        ran.extend(todo)
        return {i: {"id": i, "outcome": "failed" if i.endswith("5") else "passed", "text": None} for i in todo}

    monkeypatch.setattr(suite, "check_python", lambda python: None)
    monkeypatch.setattr(suite, "collect", lambda python, pydir, mode: ids)
    monkeypatch.setattr(suite, "run_cases", fake_run_cases)
    earlier = {i: {"id": i, "outcome": "passed", "text": None} for i in ids[:3]}
    earlier[ids[3]] = {"id": ids[3], "outcome": "not run", "text": "the run's time budget ran out"}
    (tmp_path / "first.json").write_text(json.dumps({"summary": {}, "baseline": None,
                                                      "results": {"compiled": earlier}}))
    out = tmp_path / "second.json"
    assert suite.main(["--triton-python", str(tmp_path), "--full", "--mode", "compiled", "--resume",
                       str(tmp_path / "first.json"), "--json", str(out)]) == 0
    assert ran == ids[3:]  # the three with an outcome are kept, the 'not run' one runs again
    data = json.loads(out.read_text())
    assert sorted(data["results"]["compiled"]) == sorted(ids)
    assert data["summary"]["modes"]["compiled"]["passed"] == 5
    assert data["summary"]["modes"]["compiled"]["failed"] == 1
