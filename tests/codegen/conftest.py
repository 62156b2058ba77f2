"""Every kernel the codegen tests launch also goes through the GPU proxy's MSL -> CUDA rewrite
(benchmarks/gpu_proxy), and the result must type-check as C++ against a CUDA stub header. No GPU or
nvcc is needed; the check runs once per test session (per xdist worker), over that session's kernels."""

import hashlib

import pytest


@pytest.fixture(scope="session", autouse=True)
def gpu_proxy_rewrite_of_every_kernel():
    from enceladus.backends.cpu import find_compiler
    from enceladus.runtime import launch

    seen: dict[str, str] = {}
    original = launch.KernelLauncher.__init__

    def record(self, kernel):
        msl = kernel.asm["msl"]
        seen.setdefault(hashlib.sha256(msl.encode()).hexdigest(), msl)
        original(self, kernel)

    launch.KernelLauncher.__init__ = record
    try:
        yield seen
    finally:
        launch.KernelLauncher.__init__ = original
    if not seen:
        return
    from .gpu_proxy_loader import gpu_proxy

    syntax_check = gpu_proxy("check").syntax_check
    problems = syntax_check(seen.values(), find_compiler().command)
    if problems:
        pytest.fail(f"the GPU proxy's rewrite of {len(seen)} kernels launched by tests/codegen failed:\n"
                    + "\n".join(problems)[:12000], pytrace=False)
