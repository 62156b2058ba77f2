"""The ``enceladus`` command line and layout pictures."""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from enceladus.cli import main, parse_define
from enceladus.compiler.layout import BlockedLayout, default_blocked
from enceladus.tools.layout_svg import element_owners

ROOT = Path(__file__).resolve().parents[2]
KERNELS = str(ROOT / "tests" / "runtime" / "launch_kernels.py")
SCALE = f"{KERNELS}::scale_kernel"


@pytest.fixture(autouse=True)
def private_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("ENCELADUS_CACHE_DIR", str(tmp_path / "cache"))
    return tmp_path / "cache"


def run(capsys: pytest.CaptureFixture, *argv: str) -> tuple[int, str, str]:
    try:
        code = main(list(argv))
    except SystemExit as e:  # argparse errors and --help
        code = e.code
    out = capsys.readouterr()
    return code, out.out, out.err


def test_compile_emits_msl_ir_cpp_abi_json(capsys: pytest.CaptureFixture, tmp_path: Path) -> None:
    code, out, _ = run(capsys, "compile", SCALE, "-s", "*fp32:16,*fp32:16,i32:16,fp32", "-D", "BLOCK=512")
    assert code == 0 and "kernel void scale_kernel(" in out
    code, plain, _ = run(capsys, "compile", SCALE, "-s", "*fp32,*fp32,i32,fp32", "-D", "BLOCK=512")
    assert code == 0 and plain != out  # the :16 facts reach the compiler (vectorized accesses)
    code, out, _ = run(capsys, "compile", SCALE, "-s", "*fp32,*fp32,i32,fp32", "--emit", "ir", "-w", "2")
    assert code == 0 and "load" in out and "blocked<" in out
    code, out, _ = run(capsys, "compile", SCALE, "-s", "*fp32,*fp32,i32,fp32", "--emit", "cpp")
    assert code == 0 and "#include <metal_stdlib>" in out
    code, out, _ = run(capsys, "compile", SCALE, "-s", "*fp32,*fp32,i32,fp32", "--emit", "abi")
    assert code == 0 and json.loads(out)["dc"].endswith("KernelABI")
    target = tmp_path / "k.json"
    code, _, err = run(capsys, "compile", SCALE, "-s", "*fp32,*fp32,i32,fp32", "--emit", "json", "-o", str(target))
    assert code == 0 and "wrote" in err and json.loads(target.read_text())["name"] == "scale_kernel"


@pytest.mark.parametrize(("argv", "message"), [
    (["compile", "nope.py::k", "-s", "i32"], "no such file"),
    (["compile", KERNELS, "-s", "i32"], "FILE.py::KERNEL_NAME"),
    (["compile", f"{KERNELS}::missing", "-s", "i32"], "has no 'missing'; kernels in this file: "),
    (["compile", f"{KERNELS}::enceladus", "-s", "i32"], "not an @enceladus.jit kernel"),
    (["compile", SCALE, "-s", "*fp32,i32"], "has 2 type(s) but kernel 'scale_kernel' has 4"),
    (["compile", SCALE, "-s", "*fp32,*fp32,i32,fp32", "-D", "BLOK=1"], "no such parameter"),
    (["compile", SCALE, "-s", "*fp32,*fp32,i32,fp32", "-D", "BLOCK"], "NAME=VALUE"),
    (["compile", SCALE, "-s", "*fp33,*fp32,i32,fp32"], "unknown pointer type"),
    (["compile", SCALE, "-s", "*fp32:8,*fp32,i32,fp32"], "':16'"),
])
def test_bad_input_is_a_clear_error(capsys: pytest.CaptureFixture, argv: list[str], message: str) -> None:
    code, _, err = run(capsys, *argv)
    assert code == 2 and "enceladus: error:" in err and message in err


def test_compilation_error_is_reported_with_location(capsys: pytest.CaptureFixture) -> None:
    code, _, err = run(capsys, "compile", SCALE, "-s", "*fp32,*fp32,i32,fp32", "-D", "BLOCK=100")
    assert code == 1 and "error:" in err and "launch_kernels.py" in err


def test_explain_and_svg(capsys: pytest.CaptureFixture, tmp_path: Path) -> None:
    pytest.importorskip("matplotlib")
    svg = tmp_path / "layout.svg"
    code, out, _ = run(capsys, "explain", f"{KERNELS}::strided_scale", "-s", "*fp32,*fp32,i32,i32,i32,i32",
                       "-D", "BLOCK_M=16", "-D", "BLOCK_N=32", "--svg", str(svg))
    assert code == 0 and "threads per threadgroup" in out and "layout picture written" in out
    text = svg.read_text()
    assert text.lstrip().startswith("<?xml") and "<svg" in text and "SIMD group 0" in text
    code, _, err = run(capsys, "explain", SCALE, "-s", "*fp32,*fp32,i32,fp32", "--svg", str(tmp_path / "x.gif"))
    assert code == 2 and ".svg, .png or .pdf" in err


def test_cache_commands(capsys: pytest.CaptureFixture, private_cache: Path) -> None:
    code, out, _ = run(capsys, "cache", "list")
    assert code == 0 and "empty" in out
    import enceladus.language as tl  # noqa: F401  (launch one kernel so the cache has entries)

    from . import launch_kernels as lk

    lk.scale_kernel.cache.clear()
    x = np.zeros(64, np.float32)
    lk.scale_kernel[(1,)](x, x.copy(), 64, 1.0, BLOCK=64)
    code, out, _ = run(capsys, "cache", "list")
    assert code == 0 and "scale_kernel" in out and "kernels" in out
    code, out, _ = run(capsys, "cache", "list", "--json", "--kind", "kernels")
    assert [e["name"] for e in json.loads(out)] == ["scale_kernel"]
    code, out, _ = run(capsys, "cache", "size")
    assert code == 0 and "total" in out and str(private_cache) in out
    code, out, _ = run(capsys, "cache", "clear", "--kind", "kernels", "--older-than", "1")
    assert code == 0 and "removed 0 files" in out
    code, out, _ = run(capsys, "cache", "clear")
    assert code == 0 and "removed" in out and "removed 0" not in out
    code, out, _ = run(capsys, "cache", "list", "--kind", "kernels")
    assert "empty" in out


def test_doctor(capsys: pytest.CaptureFixture) -> None:
    code, out, _ = run(capsys, "doctor")
    assert code == 0, out
    for word in ("Python", "NumPy", "backend", "C++ compiler", "cache", "smoke test", "vector add OK", "status: ready"):
        assert word in out


def test_help_and_version_through_the_entry_point() -> None:
    script = Path(sys.executable).parent / "enceladus"
    cmd = [str(script)] if script.exists() else [sys.executable, "-m", "enceladus.cli"]
    res = subprocess.run([*cmd, "--help"], capture_output=True, text=True, timeout=120)
    assert res.returncode == 0 and "compile" in res.stdout and "doctor" in res.stdout and "examples:" in res.stdout
    res = subprocess.run([*cmd, "compile", "--help"], capture_output=True, text=True, timeout=120)
    assert res.returncode == 0 and "--signature" in res.stdout and ":16" in res.stdout
    res = subprocess.run([*cmd, "--version"], capture_output=True, text=True, timeout=120)
    assert res.returncode == 0 and res.stdout.startswith("enceladus ")


def test_parse_define() -> None:
    import enceladus.language as tl

    assert parse_define("BLOCK=1024") == ("BLOCK", 1024)
    assert parse_define("A=0.5") == ("A", 0.5)
    assert parse_define("F=True") == ("F", True)
    assert parse_define("D=tl.float16") == ("D", tl.float16)
    assert parse_define("D=fp32") == ("D", tl.float32)
    assert parse_define("OP=add") == ("OP", "add")


# --- layouts ----------------------------------------------------------------------------------------------------------
@pytest.mark.parametrize(("shape", "itemsize", "warps"), [((1024,), 4, 4), ((256,), 2, 2), ((64, 64), 4, 4),
                                                          ((16, 128), 2, 8), ((32, 8), 4, 1), ((4, 4), 4, 4)])
def test_element_owners_cover_every_element(shape: tuple[int, ...], itemsize: int, warps: int) -> None:
    lay = default_blocked(shape, itemsize, warps)
    own = element_owners(lay)
    assert (own["warp"] >= 0).all() and (own["lane"] >= 0).all()
    assert own["copies"].sum() == 32 * warps * lay.elems_per_thread
    if not any(lay.replicated):
        assert (own["copies"] == 1).all()
        keys = own["warp"] * 32 * lay.elems_per_thread + own["lane"] * lay.elems_per_thread + own["register"]
        assert len(np.unique(keys)) == math.prod(shape)  # a bijection: (warp, lane, register) <-> element


def test_element_owners_match_the_documented_mapping() -> None:
    # 1-D, 4 per thread, 2 SIMD groups: element i belongs to thread i // 4, register i % 4, then repeats every 256
    lay = BlockedLayout((512,), (4,), (32,), (2,), (0,))
    own = element_owners(lay)
    i = np.arange(512)
    np.testing.assert_array_equal(own["register"], (i % 4) + 4 * (i // 256))
    np.testing.assert_array_equal(own["lane"], (i // 4) % 32)
    np.testing.assert_array_equal(own["warp"], (i // 128) % 2)
    # 2-D row-major: lanes go along the row first (order[0] == 1)
    lay = BlockedLayout((8, 16), (1, 4), (8, 4), (1, 1), (1, 0))
    own = element_owners(lay)
    assert own["lane"][0, 4] == 1 and own["lane"][1, 0] == 4 and own["register"][0, 3] == 3
    # replicated: a 8-element tile over 32 lanes is held 4 times
    own = element_owners(BlockedLayout((8,), (1,), (32,), (1,), (0,)))
    assert (own["copies"] == 4).all() and list(own["lane"]) == list(range(8))
