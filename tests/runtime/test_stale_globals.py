"""Stale state (issue #19): a kernel launched after a global it read has changed raises StaleGlobalError naming
the global, its old and new values and the kernel line; it never runs silently with the old value."""

from __future__ import annotations

import sys
import types

import numpy as np
import pytest

import enceladus
import enceladus.language as tl
from enceladus import StaleGlobalError

THIS = sys.modules[__name__]

OFFSET = 2
PAIR = (1, 3)


class Cfg:
    ATTR = 5


cfg = types.ModuleType("enc_test_stale_cfg")
cfg.K = 7


@enceladus.jit
def helper(x, s=10):
    return x * s


@enceladus.jit
def reads_everything(x_ptr, out_ptr):
    offs = tl.arange(0, 16)
    x = tl.load(x_ptr + offs)
    tl.store(out_ptr + offs, helper(x) + OFFSET + PAIR[1] + Cfg.ATTR + cfg.K)


def expected(x: np.ndarray, s: int = 10, offset: int = 2, pair1: int = 3, attr: int = 5, k: int = 7) -> np.ndarray:
    return x * s + offset + pair1 + attr + k


def _launch(out: np.ndarray) -> np.ndarray:
    x = np.arange(16, dtype=np.float32)
    reads_everything[(1,)](x, out)
    return x


def _redefined_helper(extra: int):
    @enceladus.jit
    def helper(x, s=10):
        return x * s + extra
    return helper


CHANGES = {
    "module global": (lambda mp: mp.setattr(THIS, "OFFSET", 3), r"Global variable OFFSET has changed .* from 2 to 3"),
    "global int to float": (lambda mp: mp.setattr(THIS, "OFFSET", 2.0), r"Global variable OFFSET .* from 2 to 2\.0"),
    "tuple global": (lambda mp: mp.setattr(THIS, "PAIR", (1, 4)), r"Global variable PAIR .* from \(1, 3\) to \(1, 4\)"),
    "class attribute": (lambda mp: mp.setattr(Cfg, "ATTR", 6), r"Global variable Cfg\.ATTR .* from 5 to 6"),
    "module attribute": (lambda mp: mp.setattr(cfg, "K", 8), r"Global variable cfg\.K .* from 7 to 8"),
    "redefined helper": (lambda mp: mp.setattr(THIS, "helper", _redefined_helper(1)), r"Global variable helper .*"),
    "helper defaults": (lambda mp: mp.setattr(helper.fn, "__defaults__", (11,)),
                        r"The defaults of helper \(__defaults__\) have changed .* from \(10,\) to \(11,\)"),
    "deleted global": (lambda mp: mp.delattr(THIS, "OFFSET"), r"Global variable OFFSET .* from 2 to <deleted>"),
}


@pytest.mark.parametrize("path", ["fast", "slow"])
@pytest.mark.parametrize("change", list(CHANGES))
def test_a_changed_global_is_refused_with_name_values_and_line(change: str, path: str,
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    out = np.zeros(16, dtype=np.float32)
    x = _launch(out)
    np.testing.assert_array_equal(out, expected(x))
    apply, message = CHANGES[change]
    apply(monkeypatch)
    if path == "slow":
        reads_everything._fast.clear()
    out[:] = -1
    with pytest.raises(StaleGlobalError, match=message) as info:
        _launch(out)
    text = str(info.value)
    assert f"{__file__}:" in text and "tl.store(out_ptr + offs, helper(x) + OFFSET" in text
    assert "kernel.cache.clear()" in text
    np.testing.assert_array_equal(out, -1)  # the refused launch wrote nothing
    monkeypatch.undo()
    _launch(out)  # back to the compiled values: launches again
    np.testing.assert_array_equal(out, expected(x))


def test_rebinding_to_an_equal_value_is_not_a_change(monkeypatch: pytest.MonkeyPatch) -> None:
    out = np.zeros(16, dtype=np.float32)
    x = _launch(out)
    monkeypatch.setattr(THIS, "PAIR", (1, 3))  # a new tuple object with the same value
    monkeypatch.setattr(THIS, "OFFSET", int("2"))
    monkeypatch.setattr(helper.fn, "__defaults__", (int("10"),))  # an equal defaults tuple
    out[:] = 0
    _launch(out)
    np.testing.assert_array_equal(out, expected(x))


def test_clearing_the_cache_after_a_change_compiles_the_new_value(monkeypatch: pytest.MonkeyPatch,
                                                                   tmp_path) -> None:
    monkeypatch.setenv("ENCELADUS_CACHE_DIR", str(tmp_path / "cache"))
    out = np.zeros(16, dtype=np.float32)
    x = _launch(out)
    monkeypatch.setattr(Cfg, "ATTR", 50)  # a class attribute: part of the disk key too
    monkeypatch.setattr(cfg, "K", 70)
    reads_everything.cache.clear()
    _launch(out)
    np.testing.assert_array_equal(out, expected(x, attr=50, k=70))
    monkeypatch.undo()
    reads_everything.cache.clear()
    _launch(out)  # the original values again: from the disk cache, still right
    np.testing.assert_array_equal(out, expected(x))


@enceladus.jit
def with_defaults(x_ptr, out_ptr, scale=2.0, BLOCK: tl.constexpr = 16):
    offs = tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, tl.load(x_ptr + offs) * scale)


def test_changed_defaults_of_the_kernel_itself_are_used(monkeypatch: pytest.MonkeyPatch) -> None:
    x = np.arange(32, dtype=np.float32)
    out = np.zeros_like(x)
    with_defaults[(1,)](x, out)
    with_defaults[(1,)](x, out)  # the fast path, filling in the defaults
    np.testing.assert_array_equal(out[:16], 2 * x[:16])
    monkeypatch.setattr(with_defaults.fn, "__defaults__", (3.0, 32))
    out[:] = 0
    with_defaults[(1,)](x, out)
    np.testing.assert_array_equal(out, 3 * x)  # on main: 2 * x[:16], the old defaults

