"""The machine a benchmark ran on (CPU model, cores, OS, Python, package versions), for results JSON."""

from __future__ import annotations

import os
import platform
import subprocess
from importlib import metadata


def cpu_model() -> str:
    """The CPU model name from /proc/cpuinfo (Linux) or sysctl (macOS); platform.processor() otherwise."""
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.lower().startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    try:
        out = subprocess.run(["sysctl", "-n", "machdep.cpu.brand_string"], capture_output=True, text=True, timeout=5)
        if out.returncode == 0 and out.stdout.strip():
            return out.stdout.strip()
    except (OSError, subprocess.SubprocessError):
        pass
    return platform.processor() or platform.machine()


def version_of(package: str) -> str | None:
    """The installed distribution's version, or None when it is not installed."""
    try:
        return metadata.version(package)
    except metadata.PackageNotFoundError:
        return None


def cxx_version() -> str | None:
    """The C++ compiler the cpu backend would use (first line of its banner), or None."""
    try:
        from enceladus.backends.cpu import find_compiler

        info = find_compiler()
        return f"{info.kind}: {info.version.splitlines()[0] if info.version else info.command}"
    except Exception:  # noqa: BLE001 - no compiler is a fact to report, not an error
        return None


def describe() -> dict[str, object]:
    """A JSON-ready description of this machine and the relevant package versions."""
    return {
        "cpu": cpu_model(),
        "cores": os.cpu_count(),
        "arch": platform.machine(),
        "os": f"{platform.system()} {platform.release()}",
        "python": platform.python_version(),
        "versions": {p: version_of(p) for p in ("enceladus", "numpy", "triton", "torch", "matplotlib")},
        "cxx": cxx_version(),
    }


def one_line(m: dict[str, object]) -> str:
    """``AMD EPYC, 2 cores, Linux 6.x, Python 3.11.7`` for table headers."""
    return f"{m['cpu']}, {m['cores']} cores, {m['os']}, Python {m['python']}"
