"""The framework-interop paths' checks that run without a GPU (the launches themselves are unverified)."""

from __future__ import annotations

import numpy as np
import pytest

from enceladus.backends.metal.interop import is_mlx_array, is_torch_mps, launch_torch_mps

torch = pytest.importorskip("torch")


def test_detection() -> None:
    assert not is_torch_mps(torch.zeros(3))
    assert not is_torch_mps(np.zeros(3))
    assert not is_mlx_array(np.zeros(3))


def test_torch_path_refuses_cpu_tensors_before_touching_mps() -> None:
    with pytest.raises(TypeError, match="must be an mps tensor"):
        launch_torch_mps("kernel void k() {}", "k", (1,), 128, {0: torch.zeros(4)}, b"\0\0\0\0", 1)
