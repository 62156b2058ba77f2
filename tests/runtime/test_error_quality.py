"""Host-side errors name what is wrong: scalar ranges, deep expressions, failed autotuning, the CLI in a pipe,
dumps of cached kernels (issue #19)."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest

import enceladus
import enceladus.language as tl
from enceladus import Config

ROOT = Path(__file__).resolve().parents[2]


@enceladus.jit
def scaled_add(x_ptr, out_ptr, n: tl.int32, alpha, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, tl.load(x_ptr + offs) * alpha + n)


@enceladus.jit
def unsigned_arg(out_ptr, n: tl.uint32, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, offs.to(tl.uint32) + n)


@pytest.mark.parametrize("warm", [False, True], ids=["first-launch", "fast-path"])
@pytest.mark.parametrize(("n", "alpha", "message"), [
    (2**40, 1.0, r"argument 'n' = 1099511627776 is outside the range of int32 \[-2147483648, 2147483647\]"),
    (-2**31 - 1, 1.0, r"argument 'n' = -2147483649 is outside the range of int32"),
    (3, 1e40, r"argument 'alpha' = 1e\+40 is outside the range of fp32 \[-3.4028235e\+38, 3.4028235e\+38\]"),
    (3, -1e39, r"argument 'alpha' = -1e\+39 is outside the range of fp32"),
])
def test_scalar_out_of_range_names_argument_value_and_range(n, alpha, message, warm) -> None:
    x = np.arange(16, dtype=np.float32)
    out = np.full(16, 7.0, dtype=np.float32)
    if warm:  # the same kinds of arguments launched once: the failing launch takes the fast path
        scaled_add[(1,)](x, out, 1, 1.0, BLOCK=16)
        out[:] = 7.0
    with pytest.raises(OverflowError, match=message):
        scaled_add[(1,)](x, out, n, alpha, BLOCK=16)
    np.testing.assert_array_equal(out, 7.0)  # the refused launch wrote nothing
    np.testing.assert_array_equal(x, np.arange(16, dtype=np.float32))


def test_scalars_at_the_edges_of_their_range_still_launch() -> None:
    x = np.zeros(16, dtype=np.float32)
    out = np.empty_like(x)
    scaled_add[(1,)](x, out, 2**31 - 1, 3.4028235e38, BLOCK=16)
    np.testing.assert_array_equal(out, np.float32(2**31 - 1))
    scaled_add[(1,)](x + 1, out, 0, float("inf"), BLOCK=16)
    assert np.isinf(out).all()
    u = np.empty(16, dtype=np.uint32)
    unsigned_arg[(1,)](u, -1, BLOCK=16)  # negative values of unsigned parameters wrap, as in C
    assert u[0] == 2**32 - 1
    with pytest.raises(OverflowError, match=r"argument 'n' = 4294967296 is outside the range of uint32 \[0, 4294967295\]"):
        unsigned_arg[(1,)](u, 2**32, BLOCK=16)


def _load_source(tmp_path: Path, name: str, body: str):
    path = tmp_path / f"{name}.py"
    path.write_text("import enceladus\nimport enceladus.language as tl\n\n\n" + body)
    spec = importlib.util.spec_from_file_location(f"enc_errq_{name}", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod, path


@pytest.mark.parametrize("terms", [400, 1500])
def test_a_long_chain_of_terms_compiles(tmp_path: Path, terms: int) -> None:
    chain = " + ".join(f"x * {i % 7}" if i % 3 == 0 else "x" for i in range(terms))
    mod, _ = _load_source(tmp_path, f"chain{terms}", f"""@enceladus.jit
def chain(x_ptr, out_ptr):
    offs = tl.arange(0, 16)
    x = tl.load(x_ptr + offs)
    y = {chain}
    tl.store(out_ptr + offs, y)
""")
    x = np.arange(16, dtype=np.float32)
    out = np.zeros_like(x)
    mod.chain[(1,)](x, out)
    coeff = sum((i % 7) if i % 3 == 0 else 1 for i in range(terms))
    np.testing.assert_allclose(out, coeff * x)


def test_an_expression_too_deep_to_compile_is_refused_with_its_location(tmp_path: Path) -> None:
    mod, path = _load_source(tmp_path, "deep", f"""@enceladus.jit
def deep(x_ptr, out_ptr):
    offs = tl.arange(0, 16)
    x = tl.load(x_ptr + offs)
    y = {"-" * 1200}x
    tl.store(out_ptr + offs, y)
""")
    out = np.full(16, 5.0, dtype=np.float32)
    with pytest.raises(enceladus.CompilationError) as info:
        mod.deep[(1,)](np.ones(16, np.float32), out)
    err = info.value
    assert err.filename == str(path) and err.lineno == 9 and "nests too deeply" in err.message and err.fix
    np.testing.assert_array_equal(out, 5.0)


@enceladus.autotune(configs=[Config({"BLOCK": 64}), Config({"BLOCK": 128})], key=["n"], warmup=1, rep=3)
@enceladus.jit
def tuned_with_a_bug(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) << 1.5, mask=mask)


@enceladus.autotune(configs=[Config({"BLOCK": 128}), Config({"BLOCK": 256})], key=["n"], warmup=1, rep=3)
@enceladus.jit
def tuned_too_big(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    r = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + r[:, None] * BLOCK + r[None, :])
    y = tl.reshape(tl.permute(tl.reshape(x, (BLOCK, BLOCK // 2, 2)), (2, 1, 0)), (BLOCK, BLOCK))
    tl.store(out_ptr + r[:, None] * BLOCK + r[None, :], y)  # needs BLOCK * BLOCK * 4 bytes of threadgroup memory


def test_autotune_with_every_config_failing_shows_the_first_real_error() -> None:
    x = np.arange(10, dtype=np.float32)
    with warnings.catch_warnings(), pytest.raises(enceladus.CompilationError) as info:
        warnings.simplefilter("ignore")
        tuned_with_a_bug[lambda m: (1,)](x, np.zeros_like(x), 10)
    err = info.value
    assert not isinstance(err, enceladus.OutOfResources)
    bug_line = Path(__file__).read_text().splitlines().index(
        "    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) << 1.5, mask=mask)") + 1
    assert err.filename == __file__ and err.lineno == bug_line and err.source_line and err.fix
    assert "first error (config {BLOCK: 64" in err.message and "for operator <<: it needs integer operands" in err.message
    assert "fit the device" not in str(err) and "smaller blocks" not in str(err)


def test_autotune_suggests_resources_only_when_resources_were_the_cause() -> None:
    x = np.arange(10, dtype=np.float32)
    with warnings.catch_warnings(), pytest.raises(enceladus.OutOfResources) as info:
        warnings.simplefilter("ignore")
        tuned_too_big[lambda m: (1,)](x, np.zeros_like(x), 10)  # refused before it runs: x is small
    assert "fit the device" in info.value.fix and info.value.lineno is not None


def test_cache_list_into_a_closed_pipe_ends_quietly(tmp_path: Path) -> None:
    cpu = tmp_path / "cache" / "cpu"
    cpu.mkdir(parents=True, mode=0o700)
    os.chmod(tmp_path / "cache", 0o700)
    for i in range(3000):  # more than a pipe buffer of listing
        (cpu / f"lib-{i:040d}.json").write_text("{}")
    env = {**os.environ, "ENCELADUS_CACHE_DIR": str(tmp_path / "cache")}
    res = subprocess.run(f"{sys.executable} -m enceladus.cli cache list | head -4", shell=True, env=env, cwd=ROOT,
                         capture_output=True, text=True, timeout=120)
    assert len(res.stdout.splitlines()) == 4
    assert "Traceback" not in res.stderr and "BrokenPipeError" not in res.stderr, res.stderr


def test_dump_writes_ir_and_msl_for_kernels_loaded_from_the_disk_cache(tmp_path: Path,
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ENCELADUS_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv("ENCELADUS_CACHE", raising=False)
    x = np.arange(16, dtype=np.float32)
    out = np.zeros_like(x)
    scaled_add.cache.clear()
    scaled_add[(1,)](x, out, 2, 3.0, BLOCK=16)  # compiled and stored
    scaled_add.cache.clear()
    dump = tmp_path / "dump"
    monkeypatch.setenv("ENCELADUS_DUMP", str(dump))
    kernel = scaled_add[(1,)](x, out, 2, 3.0, BLOCK=16)
    assert kernel.metadata["cache"] == "disk"
    files = sorted(os.listdir(dump))
    assert [f.rsplit(".", 1)[1] for f in files] == ["ir", "metal"]
    assert (dump / files[1]).read_text().rstrip("\n") == kernel.asm["msl"].rstrip("\n")
    assert "tt.func" in (dump / files[0]).read_text() or "scaled_add" in (dump / files[0]).read_text()
