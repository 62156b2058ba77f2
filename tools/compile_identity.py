"""Check that a compiler change leaves every compile's output byte for byte the same.

A speed-up of the compiler must not change what it produces. This tool harvests the arguments of every
``compile_kernel`` call that a test run makes, then replays them on any tree and compares fingerprints of
everything a compile returns (the MSL, the IR printouts, the ABI, the metadata, the accesses, or the error):

    # 1. harvest (once): the arguments of every compile that these tests make, with a cold kernel cache
    PYTHONPATH=tools python -m pytest -q -p no:cacheprovider -p compile_identity tests/codegen tests/conformance
    #    -> $TMPDIR/enceladus-compile-corpus/*.pickle (ENCELADUS_IDENTITY_CORPUS=DIR to choose another folder)

    # 2. replay on a tree (any src/ folder: this checkout, or `git archive REV src` extracted somewhere)
    python tools/compile_identity.py replay --src /tmp/base/src --out /tmp/base.json
    python tools/compile_identity.py replay --out /tmp/new.json         # this checkout's src/

    # 3. compare
    python tools/compile_identity.py compare /tmp/base.json /tmp/new.json

Also replayed: the kernels of benchmarks/compile_latency.py (vector add, softmax, layer norm, matmul, flash
attention), so the benchmark's own workload is always covered. Kernels defined inside test functions cannot be
re-imported and are counted as skipped at harvest time.
"""

from __future__ import annotations

import argparse
import hashlib
import importlib
import json
import os
import pickle
import re
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_CORPUS = Path(tempfile.gettempdir()) / "enceladus-compile-corpus"
_ADDRESS = re.compile(r" at 0x[0-9a-fA-F]+")


# ---- harvest: a pytest plugin (-p compile_identity with tools/ on PYTHONPATH) -------------------------------

class _RefPickler(pickle.Pickler):
    """Functions and @jit kernels are stored as (module, qualname): replay imports them again."""

    def persistent_id(self, obj: Any) -> Any:
        if getattr(obj, "__enceladus_jit__", False) and hasattr(obj, "fn"):
            return ("jit", *_where(obj.fn))
        if callable(obj) and hasattr(obj, "__code__") and hasattr(obj, "__qualname__"):
            return ("fn", *_where(obj))
        return None


def _where(fn: Any) -> tuple[str, str]:
    if "<locals>" in fn.__qualname__ or "<lambda>" in fn.__qualname__:
        raise pickle.PicklingError(f"{fn.__qualname__} cannot be imported again")
    return fn.__module__, fn.__qualname__


class _RefUnpickler(pickle.Unpickler):
    def persistent_load(self, pid: Any) -> Any:
        kind, module, qualname = pid
        obj: Any = importlib.import_module(module)
        for part in qualname.split("."):
            obj = getattr(obj, part)
        if kind == "fn" and getattr(obj, "__enceladus_jit__", False):
            return obj.fn
        return obj


def pytest_configure(config: Any) -> None:
    corpus = Path(os.environ.get("ENCELADUS_IDENTITY_CORPUS", DEFAULT_CORPUS))
    corpus.mkdir(parents=True, exist_ok=True)
    os.environ["ENCELADUS_CACHE_DIR"] = tempfile.mkdtemp(prefix="enceladus-identity-cache-")  # every compile runs
    from enceladus.compiler import driver

    original = driver.compile_kernel
    worker = os.environ.get("PYTEST_XDIST_WORKER", "main")
    seen: set[bytes] = set()
    skipped = [0]
    out = corpus / f"corpus-{worker}-{os.getpid()}.pickle"

    def recording(source: Any, *args: Any, **kwargs: Any) -> Any:
        try:
            entry = {"fn": source.fn, "text_override": source.text_override, "args": args, "kwargs": kwargs}
            import io

            buf = io.BytesIO()
            _RefPickler(buf, protocol=4).dump(entry)
            data = buf.getvalue()
            if data not in seen:
                seen.add(data)
                with out.open("ab") as f:
                    f.write(len(data).to_bytes(8, "little") + data)
        except Exception:  # noqa: BLE001 - a kernel that cannot be re-imported: counted, not replayed
            skipped[0] += 1
        return original(source, *args, **kwargs)

    driver.compile_kernel = recording
    for mod in ("enceladus", "enceladus.runtime.jit", "enceladus.cli"):
        m = importlib.import_module(mod)
        if getattr(m, "compile_kernel", None) is original:
            m.compile_kernel = recording
    config._identity_skipped = skipped


def pytest_unconfigure(config: Any) -> None:
    skipped = getattr(config, "_identity_skipped", [0])[0]
    if skipped:
        print(f"\ncompile_identity: {skipped} compiles of kernels defined inside functions not recorded")


# ---- replay ------------------------------------------------------------------------------------------------

def read_corpus(folder: Path) -> list[bytes]:
    entries: dict[bytes, None] = {}
    for path in sorted(folder.glob("*.pickle")):
        data = path.read_bytes()
        i = 0
        while i < len(data):
            n = int.from_bytes(data[i:i + 8], "little")
            if i + 8 + n > len(data):
                break  # a record still being written by a harvest in progress
            entries[data[i + 8:i + 8 + n]] = None
            i += 8 + n
    return list(entries)


def _canon(x: Any) -> str:
    """repr without memory addresses, the folder Enceladus was imported from (module reprs name it) or this
    checkout's (the tests' kernels are imported from it)."""
    import enceladus

    return _ADDRESS.sub("", repr(x)).replace(str(Path(enceladus.__file__).resolve().parent.parent), "<src>") \
        .replace(str(ROOT), "<root>")


def fingerprint(ck: Any, dump: Path | None = None) -> str:
    parts = [ck.asm["msl"], ck.asm["ir"], ck.asm["ir_layouts"], _canon(ck.abi),
             _canon(sorted(ck.metadata.items())), _canon(ck.accesses)]
    # the checkout the tests' kernels were imported from (paths in the metadata): replays run from two checkouts
    # of one commit compare equal
    digest = hashlib.sha256("\n\x00".join(parts).replace(str(ROOT), "<root>").encode()).hexdigest()
    if dump is not None:  # the parts themselves, to diff two replays that disagree
        (dump / digest[:16]).write_text("\n\n=====\n\n".join(parts))
    return digest


def _latency_entries() -> list[tuple[str, Any]]:
    """The compile_latency.py workload, compiled through the public API."""
    sys.path.insert(0, str(ROOT / "benchmarks"))
    import compile_latency as cl

    tmp = Path(tempfile.gettempdir()) / "enceladus-identity-latency"  # a fixed path: it is in the MSL's header
    tmp.mkdir(exist_ok=True)
    modules = cl.write_modules(tmp)
    out = []
    for name, origin, fn_name, signature, constexprs, num_warps in cl.KERNELS:
        kernel = getattr(cl.import_path(modules[origin][0]), fn_name)
        out.append((f"compile_latency {name}", (kernel, signature, constexprs, num_warps)))
    return out


def replay(corpus: Path, dump: Path | None = None) -> dict[str, str]:
    sys.path[:0] = [str(ROOT), str(ROOT / "tests"), str(ROOT / "examples")]
    import enceladus
    from enceladus.compiler import driver
    from enceladus.compiler.source import KernelSource

    results: dict[str, str] = {}
    for data in read_corpus(corpus):
        key = hashlib.sha256(data).hexdigest()[:24]
        try:
            import io

            entry = _RefUnpickler(io.BytesIO(data)).load()
        except Exception as e:  # noqa: BLE001
            results[key] = f"unreadable: {type(e).__name__}: {e}"
            continue
        source = KernelSource(entry["fn"], entry["text_override"])
        try:
            results[key] = fingerprint(driver.compile_kernel(source, *entry["args"], **entry["kwargs"]), dump)
        except Exception as e:  # noqa: BLE001 - a refusal is an output too
            results[key] = "error: " + type(e).__name__ + ": " + _canon(str(e))
    for label, (kernel, signature, constexprs, num_warps) in _latency_entries():
        results[label] = fingerprint(enceladus.compile(kernel, signature=signature, constexprs=constexprs,
                                                       num_warps=num_warps), dump)
    return results


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("replay", help="compile every harvested specialization; write their fingerprints")
    r.add_argument("--src", help="the src/ folder to import enceladus from (default: this checkout's)")
    r.add_argument("--corpus", default=str(DEFAULT_CORPUS))
    r.add_argument("--out", required=True)
    r.add_argument("--dump", help="also write each compile's outputs to this folder, named by fingerprint")
    c = sub.add_parser("compare", help="compare two replays")
    c.add_argument("a")
    c.add_argument("b")
    opts = ap.parse_args()
    if opts.cmd == "replay":
        if opts.src and os.environ.get("_IDENTITY_CHILD") != "1":  # re-run with that tree first on the path
            env = {**os.environ, "PYTHONPATH": str(Path(opts.src).resolve()), "_IDENTITY_CHILD": "1",
                   "ENCELADUS_CACHE_DIR": tempfile.mkdtemp(prefix="enceladus-identity-cache-")}
            env.pop("ENCELADUS_DUMP", None)
            sys.exit(subprocess.call([sys.executable, __file__, "replay", "--corpus", opts.corpus, "--out", opts.out,
                                      *(["--dump", opts.dump] if opts.dump else [])], env=env))
        import enceladus

        if opts.dump:
            Path(opts.dump).mkdir(parents=True, exist_ok=True)
        results = replay(Path(opts.corpus), Path(opts.dump) if opts.dump else None)
        Path(opts.out).write_text(json.dumps({"enceladus": enceladus.__file__, "results": results}, indent=1))
        errors = sum(1 for v in results.values() if v.startswith(("error", "unreadable")))
        print(f"{len(results)} compiles replayed ({errors} errors or refusals, compared like outputs) from "
              f"{enceladus.__file__}")
        return
    a = json.loads(Path(opts.a).read_text())["results"]
    b = json.loads(Path(opts.b).read_text())["results"]
    differ = sorted(k for k in a.keys() & b.keys() if a[k] != b[k])
    only = sorted(a.keys() ^ b.keys())
    for k in differ:
        print(f"DIFFERS {k}: {a[k][:80]} | {b[k][:80]}")
    for k in only:
        print(f"ONLY IN ONE {k}")
    print(f"{len(a.keys() & b.keys())} compared, {len(differ)} differ, {len(only)} in one side only")
    sys.exit(1 if differ or only else 0)


if __name__ == "__main__":
    main()
