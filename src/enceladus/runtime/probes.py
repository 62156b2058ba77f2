"""Run-time probes of what Enceladus assumes about a device (MSL_AUDIT D1-D11), each with its fallback.

Nothing in this repository has run on Apple hardware. Every assumption a Mac may break is checked here by a
small kernel the first time it matters, and a failed probe switches the code generator to a slower path that
is correct, with one warning: never a wrong answer. Results are cached per device and OS build (the cache
directory's ``probes`` entries), so a Mac pays for each probe once per OS update.

Probes that change generated code feed the compile key (``constraints``): the fragment lane mapping (D4) and
the matmul2d tiles a device refused (D1/D2, probed on first use of each tile). The others are reported by
``enceladus doctor --probe`` and ``python -m enceladus.selftest`` (``run_all``). The metal backend probes
before compiling; the cpu backend only when ``probe_on_compile`` is set (the tests' deliberately wrong twins).
"""

from __future__ import annotations

import re
import threading
import warnings
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

PROBE_VERSION = 5  # bump when a probe kernel or its verdict changes: cached results are then ignored


@dataclass
class ProbeResult:
    """One probe: what it checks, whether the device passed, and the fallback taken if not."""

    name: str
    audit: str  # the MSL_AUDIT item, e.g. "D4"
    assumption: str
    status: str  # "ok", "failed" (the fallback is taken), "error" (the probe itself could not run), "n/a"
    detail: str = ""
    fallback: str = ""

    @property
    def ok(self) -> bool:
        """The assumption holds (or the probe does not apply here)."""
        return self.status in ("ok", "n/a")


FRAGMENT_LANES_MSL = """#include <metal_stdlib>
using namespace metal;
kernel void enceladus_probe_fragment_lanes(device const float* m [[buffer(0)]], device float* out [[buffer(1)]],
                                           uint lane [[thread_index_in_simdgroup]]) {
    threadgroup float t[64];
    for (uint i = lane; i < 64; i += 32) t[i] = m[i];
    threadgroup_barrier(mem_flags::mem_threadgroup);
    simdgroup_float8x8 f;
    simdgroup_load(f, t, 8);
    out[2 * lane] = f.thread_elements()[0];
    out[2 * lane + 1] = f.thread_elements()[1];
}
"""

SHUFFLE_XOR_MSL = """#include <metal_stdlib>
using namespace metal;
kernel void enceladus_probe_shuffle_xor(device const float* x [[buffer(0)]], device float* f [[buffer(1)]],
                                        device half* h [[buffer(2)]], uint lane [[thread_index_in_simdgroup]]) {
    f[lane] = simd_shuffle_xor(x[lane], ushort(5));
    h[lane] = simd_shuffle_xor(half(x[lane]), ushort(9));
}
"""

PRAGMA_MSL = """#include <metal_stdlib>
#pragma METAL fp math_mode(safe)
using namespace metal;
kernel void enceladus_probe_pragma(device float* x [[buffer(0)]], uint i [[thread_position_in_grid]]) {
    x[i] = x[i] * 3.0f;
}
"""

POOLED_ATOMICS_MSL = """#include <metal_stdlib>
using namespace metal;
kernel void enceladus_probe_pooled_atomics(device const int* x [[buffer(0)]], device int* out [[buffer(1)]],
                                           uint t [[thread_index_in_threadgroup]]) {
    threadgroup float4 pool4[16];
    threadgroup uchar* pool = (threadgroup uchar*)pool4;
    threadgroup float* staged = (threadgroup float*)pool;
    staged[t] = float(t);  // the same bytes are plain floats first ...
    threadgroup_barrier(mem_flags::mem_threadgroup);
    out[64 + t] = int(staged[63 - t]);
    threadgroup_barrier(mem_flags::mem_threadgroup);
    threadgroup atomic_int* bins = (threadgroup atomic_int*)pool;  // ... then atomic bins
    if (t < 8) atomic_store_explicit(&bins[t], 0, memory_order_relaxed);
    threadgroup_barrier(mem_flags::mem_threadgroup);
    atomic_fetch_add_explicit(&bins[x[t] & 7], 1, memory_order_relaxed);
    threadgroup_barrier(mem_flags::mem_threadgroup);
    if (t < 8) out[t] = atomic_load_explicit(&bins[t], memory_order_relaxed);
}
"""

DENORMAL_MSL = """#include <metal_stdlib>
#pragma METAL fp math_mode(safe)
using namespace metal;
kernel void enceladus_probe_denormals(device const float* x [[buffer(0)]], device float* y [[buffer(1)]],
                                      uint i [[thread_position_in_grid]]) {
    y[i] = x[i] * 0.5f;
}
"""


def matmul2d_msl(m: int, n: int, k: int, ta: str, tb: str, simdgroups: int) -> str:
    """A kernel with one matmul2d of the generated shape and operand types, on device tensors."""
    t = {"fp16": "half", "fp32": "float", "bf16": "bfloat"}
    a, b = t[ta], t[tb]
    return f"""#include <metal_stdlib>
#include <metal_tensor>
#include <MetalPerformancePrimitives/MetalPerformancePrimitives.h>
using namespace metal;
using namespace mpp::tensor_ops;
kernel void enceladus_probe_matmul2d(device {a}* pa [[buffer(0)]], device {b}* pb [[buffer(1)]],
                                     device float* pc [[buffer(2)]]) {{
    using TA = tensor<device {a}, dextents<int32_t, 2>, tensor_inline>;
    using TB = tensor<device {b}, dextents<int32_t, 2>, tensor_inline>;
    using TC = tensor<device float, dextents<int32_t, 2>, tensor_inline>;
    constexpr auto desc = matmul2d_descriptor({m}, {n}, {k}, false, false, false,
                                              matmul2d_descriptor::mode::multiply_accumulate);
    matmul2d<desc, execution_simdgroups<{simdgroups}>> op;
    TA ta(pa, dextents<int32_t, 2>({k}, {m})); TB tb(pb, dextents<int32_t, 2>({n}, {k}));
    TC tc(pc, dextents<int32_t, 2>({n}, {m}));
    op.run(ta, tb, tc);
}}
"""


def fragment_lane_layout() -> np.ndarray:
    """The element (row * 8 + column) each lane's thread_elements()[0, 1] hold in the assumed layout."""
    lane = np.arange(32)
    row = 4 * ((lane >> 4) & 1) + 2 * ((lane >> 2) & 1) + ((lane >> 1) & 1)
    col = 4 * ((lane >> 3) & 1) + 2 * (lane & 1)
    return np.stack([row * 8 + col, row * 8 + col + 1], 1).reshape(-1).astype(np.float32)


class DeviceProbes:
    """The probes of one backend instance, with their cached results."""

    result = ProbeResult  # the record a backend's host_probes builds (backends never import the runtime)

    def __init__(self, backend: Any) -> None:
        self.backend = backend
        self.lock = threading.RLock()
        self.results: dict[str, dict] = {}
        self._warned: set[str] = set()
        self._key = _cache_key(backend)
        self._load()

    # -- cache ---------------------------------------------------------------------------------------
    def _load(self) -> None:
        if self._key is None:
            return
        from . import cache, serialize

        data = serialize.load_data("probes", self._key) if cache.enabled() else None
        if isinstance(data, dict) and data.get("version") == PROBE_VERSION and isinstance(data.get("results"), dict):
            self.results = dict(data["results"])

    def _save(self) -> None:
        if self._key is None:
            return
        from . import cache, serialize

        if cache.enabled():
            serialize.store_data("probes", self._key, {"version": PROBE_VERSION, "results": self.results})

    def _record(self, key: str, result: ProbeResult) -> ProbeResult:
        with self.lock:
            self.results[key] = asdict(result)
            self._save()
        return result

    def _cached(self, key: str) -> ProbeResult | None:
        r = self.results.get(key)
        return ProbeResult(**r) if r is not None else None

    # -- running a probe kernel ----------------------------------------------------------------------
    def _shader(self, source: str) -> Any:
        from .backend import use_backend
        from .shader import ShaderLibrary

        with use_backend(self.backend):
            return ShaderLibrary(source)

    def _call(self, source: str, kernel: str, *args: Any, **launch: Any) -> None:
        from .backend import use_backend

        lib = self._shader(source)
        with use_backend(self.backend):
            getattr(lib, kernel)(*args, **launch)

    # -- the probes ------------------------------------------------------------------------------------
    def fragment_lanes(self) -> ProbeResult:
        """D4: the element-to-lane mapping of simdgroup_matrix thread_elements() (the spec calls it unspecified)."""
        cached = self._cached("fragment_lanes")
        if cached is None:
            cached = self._probe_fragment_lanes()
        if not cached.ok and "fragment_lanes" not in self._warned:  # one message per process
            self._warned.add("fragment_lanes")
            warnings.warn(f"Enceladus: this device's simdgroup_matrix lane mapping differs from the assumed one "
                          f"({cached.status}: {cached.detail}); tl.dot falls back to simdgroup_store through "
                          "threadgroup memory. Please report the output of `enceladus doctor --probe`.",
                          RuntimeWarning, stacklevel=3)
        return cached

    def _probe_fragment_lanes(self) -> ProbeResult:
        result = ProbeResult("fragment_lanes", "D4", "simdgroup_matrix thread_elements() holds row 4*l4+2*l2+l1, "
                             "columns 4*l3+2*l0 (+0, +1) of lane l (Apple patent US11256518B2)", "ok")
        try:
            out = np.full(64, -1.0, np.float32)
            self._call(FRAGMENT_LANES_MSL, "enceladus_probe_fragment_lanes", np.arange(64, dtype=np.float32), out,
                       threadgroups=(1,), threads_per_threadgroup=(32,))
            want = fragment_lane_layout()
            if not np.array_equal(out, want):
                bad = int(np.argmax(out != want))
                result.status = "failed"
                result.detail = (f"lane {bad // 2} element {bad % 2} holds element {out[bad]:g}, the assumed layout "
                                 f"says {want[bad]:g}")
                result.fallback = "every tl.dot moves its accumulator fragments through threadgroup memory with " \
                                  "simdgroup_store/simdgroup_load (slower, correct)"
        except Exception as exc:  # noqa: BLE001 - a probe that cannot run takes the safe path too
            result.status, result.detail = "error", f"{type(exc).__name__}: {exc}"[:300]
            result.fallback = "simdgroup_store through threadgroup memory (the probe could not run)"
        return self._record("fragment_lanes", result)

    def matmul2d_tile(self, tile: tuple) -> ProbeResult:
        """D1/D2: one matmul2d (M, N, K, A type, B type, SIMD groups) builds and computes A @ B."""
        m, n, k, ta, tb, groups = (tile[0], tile[1], tile[2], tile[3], tile[4], tile[5])
        key = f"matmul2d {m}x{n}x{k} {ta}x{tb} simdgroups={groups}"
        cached = self._cached(key)
        if cached is not None:
            return cached
        result = ProbeResult(key, "D1/D2", f"matmul2d accepts a {m}x{n}x{k} tile of {ta} x {tb} operands", "ok")
        try:
            rng = np.random.default_rng(0)
            dt = {"fp16": np.float16, "fp32": np.float32}
            a = rng.integers(-3, 4, (m, k)).astype(dt.get(ta, np.float32))
            b = rng.integers(-3, 4, (k, n)).astype(dt.get(tb, np.float32))
            c = np.zeros((m, n), np.float32)
            self._call(matmul2d_msl(m, n, k, ta, tb, groups), "enceladus_probe_matmul2d", a, b, c,
                       threadgroups=(1,), threads_per_threadgroup=(32 * groups,))
            want = a.astype(np.float32) @ b.astype(np.float32)
            if not np.array_equal(c, want):
                result.status, result.detail = "failed", "wrong product (exact small integers were multiplied)"
        except Exception as exc:  # noqa: BLE001 - a refused compile is the answer this probe looks for
            result.status = "failed"
            errors = [ln.split("error:", 1)[1] for ln in str(exc).splitlines() if "error:" in ln]
            quoted = [q for ln in errors for q in re.findall(r'"([^"]+)"', ln)]  # a static_assert's message
            detail = quoted[0] if quoted else (errors[-1] if errors else str(exc))
            result.detail = " ".join(detail.split())[:200]  # the compiler's own words, e.g. a static_assert
        if result.status != "ok":
            result.fallback = "tl.dot with this tile uses simdgroup_matrix (the reason is in explain())"
        return self._record(key, result)

    def check_matmul2d(self, tiles: Any) -> bool:
        """Probe each matmul2d tile of a compiled kernel on first use; True when one was refused (recompile)."""
        refused = False
        for tile in tiles or ():
            refused |= self.matmul2d_tile(tuple(tile)).status != "ok"
        return refused

    def matmul2d_rejects(self) -> tuple:
        """((M, N, K, A type, B type), reason) for every tile this device refused, for the compile key."""
        out = []
        for key, r in sorted(self.results.items()):
            if key.startswith("matmul2d ") and r["status"] != "ok":
                dims, types, _ = key.split(" ")[1:]
                m, n, k = (int(x) for x in dims.split("x"))
                ta, tb = types.split("x")
                out.append(((m, n, k, ta, tb), r["detail"][:200]))
        return tuple(dict(out).items())

    def constraints(self) -> tuple:
        """What the code generator must know about this device (part of every kernel's compile key)."""
        out: list[tuple[str, Any]] = []
        if not self.fragment_lanes().ok:
            out.append(("fragments", "store"))
        rejects = self.matmul2d_rejects()
        if rejects:
            out.append(("matmul2d_rejects", rejects))
        device = getattr(self.backend, "device", None)
        if device is not None and not getattr(device, "atomic_u64_minmax", True):  # a GPU family fact, no probe
            out.append(("atomic_u64_minmax", False))
        return tuple(out)

    def shuffle_xor_floats(self) -> ProbeResult:
        """D3: simd_shuffle_xor on float and half (the spec types it for integers)."""
        result = ProbeResult("shuffle_xor_floats", "D3", "simd_shuffle_xor accepts float and half", "ok",
                             fallback="(none needed) generated kernels shuffle float and half as their bits")
        try:
            x = np.arange(32, dtype=np.float32) + 0.5
            f, h = np.zeros(32, np.float32), np.zeros(32, np.float16)
            self._call(SHUFFLE_XOR_MSL, "enceladus_probe_shuffle_xor", x, f, h, threadgroups=(1,),
                       threads_per_threadgroup=(32,))
            lanes = np.arange(32)
            if not (np.array_equal(f, x[lanes ^ 5]) and np.array_equal(h, x[lanes ^ 9].astype(np.float16))):
                result.status, result.detail = "failed", "wrong values"
        except Exception as exc:  # noqa: BLE001
            result.status, result.detail = "failed", " ".join(str(exc).split())[:300]
        return result

    def fp_pragma(self) -> ProbeResult:
        """D9: `#pragma METAL fp math_mode(safe)` is accepted at the chosen MSL version."""
        result = ProbeResult("fp_pragma", "D9", "#pragma METAL fp math_mode(safe) compiles", "ok",
                             fallback="none: every generated kernel carries the pragma; the compile options also "
                                      "set MTLMathModeSafe")
        try:
            x = np.arange(8, dtype=np.float32)
            self._call(PRAGMA_MSL, "enceladus_probe_pragma", x, threads=(8,))
            if not np.array_equal(x, 3 * np.arange(8, dtype=np.float32)):
                result.status, result.detail = "failed", "wrong values"
        except Exception as exc:  # noqa: BLE001
            result.status, result.detail = "failed", " ".join(str(exc).split())[:300]
        return result

    def pooled_atomics(self) -> ProbeResult:
        """D10: threadgroup atomics carved out of a pool whose bytes were plain data before a barrier."""
        result = ProbeResult("pooled_atomics", "D10", "threadgroup atomic_int bins may reuse pooled threadgroup "
                             "memory that held plain values", "ok",
                             fallback="report it: generated histograms would need their own threadgroup array")
        try:
            x = np.random.default_rng(1).integers(0, 1000, 64).astype(np.int32)
            out = np.zeros(128, np.int32)
            self._call(POOLED_ATOMICS_MSL, "enceladus_probe_pooled_atomics", x, out, threadgroups=(1,),
                       threads_per_threadgroup=(64,))
            if not (np.array_equal(out[:8], np.bincount(x & 7, minlength=8)) and
                    np.array_equal(out[64:], 63 - np.arange(64))):
                result.status, result.detail = "failed", f"bins {out[:8].tolist()}"
        except Exception as exc:  # noqa: BLE001
            result.status, result.detail = "error", " ".join(str(exc).split())[:300]
        return result

    def denormals(self) -> ProbeResult:
        """D6: whether float32 subnormals survive arithmetic (MSL allows flushing them to zero)."""
        result = ProbeResult("denormals", "D6", "float32 subnormals are kept (MSL allows flush to zero)", "ok",
                             fallback="none needed for correctness: tests compare with tolerances that allow "
                                      "flush-to-zero (see docs/verification.md)")
        try:
            x = np.full(4, np.float32(2.0) ** -130, np.float32)
            y = np.zeros(4, np.float32)
            self._call(DENORMAL_MSL, "enceladus_probe_denormals", x, y, threads=(4,))
            if np.all(y == 0):
                result.status, result.detail = "failed", "2^-130 * 0.5 gave 0: subnormals are flushed to zero"
        except Exception as exc:  # noqa: BLE001
            result.status, result.detail = "error", " ".join(str(exc).split())[:300]
        return result

    def run_all(self) -> list[ProbeResult]:
        """Every probe, for the doctor's and the self-test's report (metal-only probes say so elsewhere)."""
        out = [self.fragment_lanes(), self.shuffle_xor_floats(), self.fp_pragma(), self.pooled_atomics(),
               self.denormals()]
        extra = getattr(self.backend, "host_probes", None)  # the metal backend: B4, D5, D7, D11, matmul2d
        if extra is not None:
            out += extra(self)
        return out


_PROBES: dict[int, DeviceProbes] = {}
_LOCK = threading.Lock()


def for_backend(backend: Any) -> DeviceProbes:
    """The probes of ``backend`` (one object per backend instance)."""
    with _LOCK:
        p = _PROBES.get(id(backend))
        if p is None or p.backend is not backend:
            p = _PROBES[id(backend)] = DeviceProbes(backend)
        return p


def _cache_key(backend: Any) -> str | None:
    """The cache key of ``backend``'s probe results: its identity (device and OS build), or None (not cached)."""
    ident = getattr(backend, "probe_identity", None)
    if ident is None:
        return None
    from .cache import sha256

    return sha256(f"{PROBE_VERSION}\n{ident()}".encode()).hexdigest()[:40]


def report(backend: Any) -> str:
    """The pasteable probe report (``enceladus doctor --probe``, ``python -m enceladus.selftest``): device, OS,
    MSL version, and every probe's result with the fallback taken. Says plainly that it is not a Mac's unless
    the metal backend ran it."""
    import platform

    from ..compiler.kernel import VERSION  # enceladus.__version__ (the runtime never imports the public API)

    lines = ["=== Enceladus device probe report (paste into a bug report) ===",
             f"enceladus {VERSION}; Python {platform.python_version()}; "
             f"{platform.platform()} ({platform.machine()})"]
    if backend.name == "metal":
        d = backend.device
        lines.append(f"device: {d.name}; macOS as Python reports it: {platform.mac_ver()[0] or '?'} "
                     f"(Darwin {platform.release()}); MSL chosen: {d.language_name}; families: Apple7={d.apple7} "
                     f"Metal4={d.metal4} Apple10={d.apple10}")
    else:
        lines.append(f"backend: {backend.name} (not Apple hardware: these results check the probes and the cpu twin, "
                     "not a Mac)")
    results = for_backend(backend).run_all()
    width = max(len(r.name) for r in results)
    for r in results:
        mark = {"ok": "ok    ", "n/a": "n/a   ", "failed": "FAILED", "error": "ERROR "}.get(r.status, r.status)
        line = f"  [{mark}] {r.audit:6s} {r.name:<{width}}  {r.assumption}"
        if r.detail:
            line += f" -- {r.detail}"
        if not r.ok and r.fallback:
            line += f"\n           fallback: {r.fallback}"
        lines.append(line)
    failed = [r for r in results if not r.ok]
    lines.append(f"{len(results) - len(failed)} of {len(results)} probes passed"
                 + (f"; fallbacks taken: {', '.join(r.name for r in failed)}" if failed else ""))
    return "\n".join(lines)
