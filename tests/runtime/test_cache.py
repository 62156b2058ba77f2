"""The disk cache: keys by content, JSON round trip, fresh processes compile nothing, concurrency, damage."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

import enceladus
from enceladus import cachedir
from enceladus.runtime import cache, cache_listing, guards, serialize

from . import launch_kernels as lk

ROOT = Path(__file__).resolve().parents[2]

# A child process: runs a script, counts C++ compiler builds (subprocess calls with -shared) and prints stats.
RUNNER = textwrap.dedent("""
    import json, runpy, subprocess, sys
    builds = []
    _run = subprocess.run
    def counting_run(cmd, *a, **k):
        if "-shared" in list(cmd):
            builds.append(cmd)
        return _run(cmd, *a, **k)
    subprocess.run = counting_run
    runpy.run_path(sys.argv[1], run_name="__main__")
    from enceladus.runtime import cache
    print("STATS " + json.dumps({"compiled": cache.stats.compiled, "disk_hits": cache.stats.disk_hits,
                                 "corrupt": cache.stats.corrupt, "cxx_builds": len(builds)}))
""")

KERNEL_SCRIPT = textwrap.dedent("""
    import numpy as np
    import enceladus
    import enceladus.language as tl

    @enceladus.jit
    def axpy(x_ptr, y_ptr, out_ptr, n, a, BLOCK: tl.constexpr):
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        mask = offs < n
        tl.store(out_ptr + offs, a * tl.load(x_ptr + offs, mask=mask) + tl.load(y_ptr + offs, mask=mask), mask=mask)

    x = np.arange(3000, dtype=np.float32); y = np.ones_like(x); out = np.empty_like(x)
    axpy[(enceladus.cdiv(x.size, 256),)](x, y, out, x.size, 2.0, BLOCK=256)
    np.testing.assert_allclose(out, 2 * x + y)
""")


def run_child(script: Path, cache_dir: Path, **env: str) -> dict:
    runner = cache_dir.parent / "_runner.py"  # next to the cache, never in the repository
    runner.parent.mkdir(parents=True, exist_ok=True)
    runner.write_text(RUNNER)
    full_env = {**os.environ, "ENCELADUS_CACHE_DIR": str(cache_dir), **env}
    res = subprocess.run([sys.executable, str(runner), str(script)], capture_output=True, text=True, env=full_env,
                         timeout=300, cwd=ROOT)
    assert res.returncode == 0, res.stderr
    line = next(ln for ln in res.stdout.splitlines() if ln.startswith("STATS "))
    return json.loads(line[6:])


@pytest.fixture
def private_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    d = tmp_path / "cache"
    monkeypatch.setenv("ENCELADUS_CACHE_DIR", str(d))
    monkeypatch.delenv("ENCELADUS_CACHE", raising=False)
    return d


def _launch_scale(n: int = 1000, **kw) -> np.ndarray:
    x = np.arange(n, dtype=np.float32)
    out = np.zeros_like(x)
    lk.scale_kernel[(enceladus.cdiv(n, 128),)](x, out, n, 3.0, **kw)
    np.testing.assert_allclose(out, 3 * x)
    return out


def test_second_run_of_example_in_new_process_compiles_nothing(tmp_path: Path) -> None:
    cache_dir = tmp_path / "cache"
    example = ROOT / "examples" / "01_vector_add.py"
    first = run_child(example, cache_dir)
    assert first["compiled"] == 1 and first["disk_hits"] == 0
    second = run_child(example, cache_dir)
    assert second == {"compiled": 0, "disk_hits": 1, "corrupt": 0, "cxx_builds": 0}
    assert stat_mode(cache_dir) == 0o700 and stat_mode(cache_dir / "kernels") == 0o700


# What a process that only launches a cached kernel may load of the compiler: the kernel and ABI classes, Metal's
# limits, the source locator (all imported by `import enceladus`) and the MSL signature record of the cpu backend.
CACHED_PATH_COMPILER_MODULES = {"enceladus.compiler", "enceladus.compiler.kernel", "enceladus.compiler.metal_limits",
                                "enceladus.compiler.source"}  # (msl_signature: parsing only; the classes are in kernel)

LOADED_SCRIPT = KERNEL_SCRIPT + textwrap.dedent("""
    import json, sys
    from enceladus.runtime import stream
    loaded = sorted(m for m in sys.modules if m.startswith("enceladus.compiler"))
    cpu_modules = sorted(m for m in sys.modules if m.startswith("enceladus.backends.cpu."))
    default_stream = stream._default is not None
    k = axpy.warmup(x, y, out, x.size, 2.0, BLOCK=256)
    warmed = sorted(m for m in sys.modules if m.startswith("enceladus.compiler"))
    print("LOADED " + json.dumps({"compiler": loaded, "cpu": cpu_modules, "default_stream": default_stream,
                                  "warmup": warmed, "layouts": [str(lay) for lay in k.metadata["layouts"]]}))
""")


def _first_and_cached_run(tmp_path: Path, script_text: str, tag: str, parse) -> tuple:
    """Run ``script_text`` in two fresh processes sharing a new cache directory (the first compiles and fills it)
    and return what each printed on its line starting with ``tag``, parsed."""
    script = tmp_path / "child.py"
    script.write_text(script_text)
    env = {**os.environ, "ENCELADUS_CACHE_DIR": str(tmp_path / "cache")}
    env.pop("ENCELADUS_CACHE", None)
    runs = []
    for _ in range(2):
        res = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, env=env, timeout=300,
                             cwd=ROOT)
        assert res.returncode == 0, res.stderr
        runs.append(parse(next(ln for ln in res.stdout.splitlines() if ln.startswith(tag))[len(tag):]))
    return runs[0], runs[1]


def test_cached_launch_in_a_fresh_process_loads_no_compiler(tmp_path: Path) -> None:
    """The cached path of a fresh process (#26): no compiler module beyond the kernel records, no MSL parser or
    translator of the cpu backend, no memory module or stream worker for a synchronous launch on NumPy arrays; nor
    does ``warmup`` (its handle's metadata leaves the layouts undecoded until read), and the layouts still read back."""
    first, cached = _first_and_cached_run(tmp_path, LOADED_SCRIPT, "LOADED ", json.loads)
    assert "enceladus.compiler.driver" in first["compiler"]  # (the check sees what a compile loads)
    assert set(cached["compiler"]) <= CACHED_PATH_COMPILER_MODULES, cached["compiler"]
    assert set(cached["warmup"]) <= CACHED_PATH_COMPILER_MODULES, cached["warmup"]
    assert not {"enceladus.backends.cpu.signature", "enceladus.backends.cpu.translate",
                "enceladus.backends.cpu.queue", "enceladus.backends.cpu.memory"} & set(cached["cpu"]), cached["cpu"]
    assert not cached["default_stream"]  # a launch on NumPy arrays ran on the calling thread
    assert cached["layouts"] == first["layouts"] and cached["layouts"]


# The child records every file it opens after the imports (an audit hook) and reports without importing json.
OPENED_SCRIPT = textwrap.dedent("""
    import sys
    import numpy, enceladus, enceladus.language
    had_json = "json" in sys.modules or "_json" in sys.modules
    opened = []
    sys.addaudithook(lambda event, args: opened.append(str(args[0])) if event == "open" else None)
""") + KERNEL_SCRIPT.replace("np.testing.assert_allclose(out, 2 * x + y)", textwrap.dedent("""
    json_modules = sorted(m for m in sys.modules if m in ("json", "_json") or m.startswith("json."))
    assert (out == 2 * x + y).all()  # (numpy.testing would import json)
""").strip()) + textwrap.dedent("""
    print("OPENED " + repr({"json": json_modules, "had_json": had_json, "opened": opened}))
""")


def test_cached_launch_in_a_fresh_process_imports_no_json_and_reads_no_runtime_source(tmp_path: Path) -> None:
    """#26: cache entries and records are marshal data (cachedir.dump_data), so neither a cached launch nor a compile
    loads a JSON decoder (the json package, four modules, nor its C scanner ``_json``, a shared library: ~0.2-0.3 ms of
    a fresh process); the cached cpu runtime is found by a key derived from the headers' digest, without reading its
    61 KB source; the integrity checks still read each library once."""
    import ast

    cache_dir = tmp_path / "cache"
    script = tmp_path / "axpy_opened.py"
    script.write_text(OPENED_SCRIPT)
    env = {**os.environ, "ENCELADUS_CACHE_DIR": str(cache_dir)}
    env.pop("ENCELADUS_CACHE", None)
    runs = []
    for _ in range(2):  # the first process compiles and fills the cache
        res = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, env=env, timeout=300,
                             cwd=ROOT)
        assert res.returncode == 0, res.stderr
        runs.append(ast.literal_eval(next(ln for ln in res.stdout.splitlines() if ln.startswith("OPENED "))[7:]))
    first, cached = runs
    assert not first["had_json"] and not cached["had_json"]  # (`import enceladus` itself never loads it)
    assert first["json"] == [] and cached["json"] == [], (first["json"], cached["json"])
    names = [os.path.basename(p) for p in cached["opened"]]
    assert "runtime.cpp" in [os.path.basename(p) for p in first["opened"]]  # built from its source once
    assert "runtime.cpp" not in names, names
    libraries = [n for n in names if n.endswith(".so") and n.startswith(("runtime-", "kernel-"))]
    assert {n.split("-")[0] for n in libraries} == {"runtime", "kernel"}, names  # each verified (and loaded)


# What only a process that compiles, builds or lists the cache runs: defined in modules a cached launch never imports
# (#26: a module's import time grows with its code; runtime/serialize.py, runtime/cache_listing.py, backends/cpu/build.py).
WRITING_AND_BUILDING = ("encode", "to_json", "to_payload", "store_kernel", "store_data", "list_entries", "clear", "probe",
                        "build_shared_library", "precompiled_prelude", "write_library_index", "hash_sources")

# The child lists the modules the launch imported (after `import numpy, enceladus`), before numpy.testing runs, and
# which of them define a name of WRITING_AND_BUILDING.
MODULES_SCRIPT = KERNEL_SCRIPT.replace("import enceladus.language as tl\n",
                                       "import enceladus.language as tl\nimport sys\nbefore = set(sys.modules)\n") \
    .replace("np.testing.assert_allclose(out, 2 * x + y)", textwrap.dedent(f"""
        new = sorted(set(sys.modules) - before)
        defined = sorted(f"{{m}}.{{n}}" for m in new if m.startswith("enceladus.") for n in {WRITING_AND_BUILDING!r}
                         if callable(vars(sys.modules[m]).get(n)))
        print('MODULES ' + repr({{"modules": new, "defined": defined}}))
        assert (out == 2 * x + y).all()""").strip())

# The Enceladus modules a launch of a cached kernel imports after `import enceladus` (#26: a fresh process pays each
# module 0.15-0.25 ms): the backends packages, the cpu backend's library and toolchain, the cache directory and the
# disk cache. Session 5's path also imported runtime/serialize.py and backends/cpu/errors.py.
CACHED_PATH_MODULES = {"enceladus.backends", "enceladus.backends.cpu", "enceladus.backends.cpu.library",
                       "enceladus.backends.cpu.toolchain", "enceladus.cachedir", "enceladus.runtime.cache"}


def test_cached_launch_in_a_fresh_process_imports_six_enceladus_modules(tmp_path: Path) -> None:
    import ast

    first, cached = _first_and_cached_run(tmp_path, MODULES_SCRIPT, "MODULES ", ast.literal_eval)
    assert "enceladus.compiler.driver" in first["modules"]  # (the check sees what a compile imports)
    assert {m for m in cached["modules"] if m.startswith("enceladus.")} == CACHED_PATH_MODULES, cached
    assert {"enceladus.runtime.serialize.store_kernel", "enceladus.backends.cpu.build.build_shared_library"} <= \
        set(first["defined"])  # (the check sees the modules that define them)
    assert cached["defined"] == [], cached["defined"]


def stat_mode(p: Path) -> int:
    return p.stat().st_mode & 0o777


def test_two_processes_compiling_the_same_kernel_at_once(tmp_path: Path) -> None:
    cache_dir = tmp_path / "cache"
    script = tmp_path / "axpy.py"
    script.write_text(KERNEL_SCRIPT)
    (tmp_path / "_runner.py").write_text(RUNNER)
    env = {**os.environ, "ENCELADUS_CACHE_DIR": str(cache_dir)}
    procs = [subprocess.Popen([sys.executable, str(tmp_path / "_runner.py"), str(script)], env=env, cwd=ROOT,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for _ in range(2)]
    for p in procs:
        out, err = p.communicate(timeout=300)
        assert p.returncode == 0, err
        assert "STATS" in out
    entries = list((cache_dir / "kernels").rglob("*"))
    files = [p for p in entries if p.is_file()]
    assert len(files) == 1 and not files[0].name.startswith(".")  # one entry, no temporary left behind
    third = run_child(script, cache_dir)
    assert third["compiled"] == 0 and third["disk_hits"] == 1 and third["cxx_builds"] == 0


def _only_entry(cache_dir: Path) -> Path:
    (entry,) = list((cache_dir / "kernels").rglob("*.json"))
    return entry


@pytest.mark.parametrize("damage", ["truncate", "flip", "empty", "tampered-class"])
def test_damaged_entry_is_detected_and_recompiled(private_cache: Path, damage: str) -> None:
    lk.scale_kernel.cache.clear()
    _launch_scale()
    entry = _only_entry(private_cache)
    raw = entry.read_bytes()
    if damage == "truncate":
        entry.write_bytes(raw[: len(raw) // 2])
    elif damage == "flip":
        i = len(raw) - 10
        entry.write_bytes(raw[:i] + bytes([raw[i] ^ 0x20]) + raw[i + 1:])
    elif damage == "empty":
        entry.write_bytes(b"")
    else:  # a well-formed, checksummed file naming a class outside Enceladus must not be constructed
        data = cachedir.load_data(raw.partition(b"\n")[2])
        assert data["abi"]["dc"] == "enceladus.compiler.kernel:KernelABI"
        data["abi"]["dc"] = "subprocess:Popen"
        cache.write_entry(entry, cachedir.dump_data(data))
    before = (cache.stats.compiled, cache.stats.corrupt)
    lk.scale_kernel.cache.clear()
    _launch_scale()
    assert cache.stats.compiled == before[0] + 1
    assert cache.stats.corrupt == before[1] + 1
    assert cache.from_payload(cache.read_entry(_only_entry(private_cache)))  # rewritten, valid again


def test_entries_of_an_earlier_format_are_recompiled(private_cache: Path) -> None:
    """Entries written before payloads were marshal data (header format 2, a JSON payload) are replaced quietly and the
    kernel recompiled; a JSON payload under the current header (a foreign writer, checksum valid) is refused with one
    warning and recompiled, never decoded as something else."""
    lk.scale_kernel.cache.clear()
    _launch_scale()
    entry = _only_entry(private_cache)
    data = cachedir.load_data(cache.read_entry(entry))
    key = entry.stem
    as_json = json.dumps({**data, "format": 3}, separators=(",", ":")).encode()
    for header_format, warned in ((cachedir.ENTRY_FORMAT - 1, 0), (cachedir.ENTRY_FORMAT, 1)):
        header = b"%s %d %s %s %d\n" % (cachedir.MAGIC, header_format, key.encode(),
                                          cachedir.sha256(as_json).hexdigest().encode(), len(as_json))
        entry.write_bytes(header + as_json)
        before = (cache.stats.compiled, cache.stats.corrupt, len(cache.stats.notes))
        lk.scale_kernel.cache.clear()
        _launch_scale()
        assert (cache.stats.compiled, cache.stats.corrupt, len(cache.stats.notes)) == \
            (before[0] + 1, before[1] + warned, before[2] + warned), header_format
        assert cache.from_payload(cache.read_entry(_only_entry(private_cache)))  # rewritten in the current format


def test_memory_miss_loads_from_disk(private_cache: Path) -> None:
    lk.scale_kernel.cache.clear()
    _launch_scale(num_warps=2)
    compiled, hits = cache.stats.compiled, cache.stats.disk_hits
    lk.scale_kernel.cache.clear()
    _launch_scale(num_warps=2)
    assert (cache.stats.compiled, cache.stats.disk_hits) == (compiled, hits + 1)
    k = lk.scale_kernel.warmup(np.zeros(4, np.float32), np.zeros(4, np.float32), 1000, 3.0, num_warps=2)
    assert k.metadata["cache"] == "disk" and k.metadata["target"] == "cpu" and k.metadata["simd_groups"] == 2


def test_cache_disabled(private_cache: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ENCELADUS_CACHE", "0")
    lk.scale_kernel.cache.clear()
    compiled = cache.stats.compiled
    _launch_scale()
    assert cache.stats.compiled == compiled + 1
    assert not (private_cache / "kernels").exists()


def test_directory_must_be_private(private_cache: Path) -> None:
    private_cache.mkdir(mode=0o700)
    os.chmod(private_cache, 0o777)
    lk.scale_kernel.cache.clear()
    with pytest.raises(cache.CacheSecurityError, match="writable by group or others"):
        _launch_scale(n=77)


@pytest.mark.parametrize("name", ["scale_kernel", "strided_scale"])
def test_json_round_trip(name: str) -> None:
    fn = getattr(lk, name)
    sig = {"scale_kernel": "*fp32,*fp16,i32,fp32", "strided_scale": "*fp32,*fp32,i32,i32,i32,i32"}[name]
    consts = {"scale_kernel": {"BLOCK": 256}, "strided_scale": {"BLOCK_M": 8, "BLOCK_N": 32}}[name]
    k = enceladus.compile(fn, sig, consts)
    back = serialize.from_json(serialize.to_json(k))
    assert back.asm == k.asm and back.abi == k.abi and back.accesses == k.accesses
    assert back.metadata["layouts"] == k.metadata["layouts"]
    per_process = ("read_globals", "global_reads", "stored_global_reads")  # bound to this process on load
    assert {key: v for key, v in back.metadata.items() if key not in per_process} == \
        {key: v for key, v in k.metadata.items() if key not in per_process}
    assert back.metadata["stored_global_reads"] == guards.encode_reads(k.metadata["global_reads"])
    assert back.explain() == k.explain()


def test_loaded_metadata_decodes_layouts_on_first_use() -> None:
    """A loaded kernel's layouts are decoded when first read (#26); the metadata behaves as a plain dict."""
    k = enceladus.compile(lk.scale_kernel, "*fp32,*fp16,i32,fp32", {"BLOCK": 256})
    md = serialize.from_json(serialize.to_json(k)).metadata
    assert dict.__contains__(md, "num_warps") and not dict.__contains__(md, "layouts")  # not decoded yet
    assert "layouts" in md and len(md) == len(md.names())
    assert md.copy()["layouts"] == k.metadata["layouts"] and dict.__contains__(md, "layouts")
    md2 = serialize.from_json(serialize.to_json(k)).metadata
    md2["layouts"] = ["replaced"]  # an assignment wins over the pending decode
    assert md2["layouts"] == ["replaced"] and dict(md2)["layouts"] == ["replaced"]
    md3 = serialize.from_json(serialize.to_json(k)).metadata
    assert md3.pop("layouts") == k.metadata["layouts"] and "layouts" not in md3
    md4 = serialize.from_json(serialize.to_json(k)).metadata
    del md4["layouts"]
    assert "layouts" not in md4 and md4.get("layouts") is None and "layouts" not in repr(md4)


def test_lazy_metadata_read_by_many_threads_at_once() -> None:
    """Autotune configs that differ only in num_stages share one kernel, compiled and inspected on a thread pool:
    every thread reading a lazy value at once gets it (one of them raised KeyError deleting the maker)."""
    import threading
    import time

    from enceladus.compiler.kernel import LazyDict

    for _ in range(3):
        start = threading.Barrier(8)

        def slow():
            time.sleep(0.05)  # every thread finds the maker before the first one has stored the value
            return ["decoded"]

        md = LazyDict({"num_warps": 4}, lazy={"layouts": slow})
        got, errors = [], []

        def read(start: threading.Barrier, md: LazyDict, got: list, errors: list) -> None:
            start.wait()
            try:
                got.append(md["layouts"])
            except Exception as e:  # noqa: BLE001 - collected and asserted below
                errors.append(e)

        threads = [threading.Thread(target=read, args=(start, md, got, errors)) for _ in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert errors == [] and got == [["decoded"]] * 8
        assert dict.__contains__(md, "layouts") and md.names() == ["num_warps", "layouts"]


def test_a_copy_of_lazy_metadata_makes_nothing_and_shares_what_is_made() -> None:
    """What ``warmup`` returns copies the kernel's metadata (``KernelMetadata``) without decoding its layouts (#26:
    decoding them imports the compiler's layout classes, ~1.3 ms of a fresh process); read from either, a value is
    made once."""
    from enceladus.compiler.kernel import LazyDict
    from enceladus.runtime.compiled import KernelMetadata

    made = []
    source = LazyDict({"num_warps": 4}, lazy={"layouts": lambda: made.append(1) or ["L0"]})
    md = KernelMetadata.copy_of(source)
    md.update(name="k", num_warps=8)
    assert made == [] and md.names() == ["num_warps", "name", "layouts"] and len(md) == 3
    assert md.num_warps == 8 and source["num_warps"] == 4 and md.name == "k"  # the copy's own values
    assert md.layouts == ["L0"] and source["layouts"] == ["L0"] and made == [1]
    md.update(layouts=["mine"])  # a value given replaces the maker (dict.update would keep both)
    assert md["layouts"] == ["mine"] and source["layouts"] == ["L0"]
    assert KernelMetadata.copy_of({"a": 1}) == {"a": 1}


def test_encoding_refuses_foreign_objects() -> None:
    with pytest.raises(serialize.SerializationError):
        serialize.encode(object())
    assert isinstance(serialize.decode(serialize.encode(object(), strict=False)), serialize.Opaque)
    for value in [(1, (2.5, "x")), {"a": [1, None]}, {(1, 2): "t"}, float("inf"), {"~k": 1}]:
        assert serialize.decode(serialize.encode(value)) == value
    with pytest.raises(serialize.SerializationError):
        serialize.decode({"dc": "os:PathLike", "f": {}})


MODULE = """
import enceladus
import enceladus.language as tl
SCALE = {scale}

@enceladus.jit
def helper(x):
    return x * {factor}

@enceladus.jit
def kern(x_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(x_ptr + offs, helper(tl.load(x_ptr + offs)) + SCALE, mask=offs < n)
"""


def _load(root: Path, scale: int, factor: int, tag: str):
    path = root / tag / "m.py"  # a new directory each time: a rewritten file could reuse stale bytecode
    path.parent.mkdir()
    path.write_text(MODULE.format(scale=scale, factor=factor))
    spec = importlib.util.spec_from_file_location(f"cache_key_mod_{tag}", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_key_covers_callees_and_globals_not_identity(tmp_path: Path) -> None:
    def key(mod) -> str:
        return cache.kernel_key(mod.kern, {"x_ptr": "*fp32", "n": "i32"}, {"BLOCK": 64}, {}, {"num_warps": 4})

    base = key(_load(tmp_path, 1, 2, "a"))
    assert key(_load(tmp_path, 1, 2, "b")) == base  # same content in a new module object
    assert key(_load(tmp_path, 1, 3, "c")) != base  # callee source changed
    assert key(_load(tmp_path, 5, 2, "d")) != base  # a global the kernel reads changed
    mod = _load(tmp_path, 1, 2, "e")
    assert cache.kernel_key(mod.kern, {"x_ptr": "*fp32", "n": "i32"}, {"BLOCK": 128}, {}, {"num_warps": 4}) != base
    assert cache.kernel_key(mod.kern, {"x_ptr": "*fp16", "n": "i32"}, {"BLOCK": 64}, {}, {"num_warps": 4}) != base
    assert cache.kernel_key(mod.kern, {"x_ptr": "*fp32", "n": "i32"}, {"BLOCK": 64},
                            {"n": (True, False)}, {"num_warps": 4}) != base
    assert cache.kernel_key(mod.kern, {"x_ptr": "*fp32", "n": "i32"}, {"BLOCK": object()}, {}, {}) is None


def test_cache_listing_size_and_clear(private_cache: Path) -> None:
    lk.scale_kernel.cache.clear()
    _launch_scale(n=999)
    entries = cache_listing.list_entries()
    assert any(e.kind == "kernels" and e.name == "scale_kernel" for e in entries)
    sizes = cache_listing.total_size()
    assert sizes["kernels"] > 0
    n, nbytes = cache_listing.clear(("kernels",))
    assert n >= 1 and nbytes == sizes["kernels"]
    assert cache_listing.total_size()["kernels"] == 0


TRACKING_SCRIPT = KERNEL_SCRIPT + textwrap.dedent("""
    import sys
    assert "enceladus.backends.cpu.memory" not in sys.modules  # the runtime is loaded, nothing allocated yet
    t = enceladus.zeros(16)
    from enceladus.backends.cpu import library, memory
    assert memory._register is library._TRACKING[0] and memory.LIVE  # the allocation went to the runtime
    print("TRACKED")
""")


def test_an_allocation_after_the_runtime_is_loaded_is_tracked(tmp_path: Path) -> None:
    """The memory module is imported on the first allocation (a launch on NumPy arrays never allocates); when the
    runtime library was loaded before, the allocations are still registered with it (what the checks of pointers
    made from integer addresses look them up in)."""
    script = tmp_path / "tracking.py"
    script.write_text(TRACKING_SCRIPT)
    env = {**os.environ, "ENCELADUS_CACHE_DIR": str(tmp_path / "cache")}
    env.pop("ENCELADUS_CACHE", None)
    res = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, env=env, timeout=300, cwd=ROOT)
    assert res.returncode == 0 and "TRACKED" in res.stdout, res.stderr
