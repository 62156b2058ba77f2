"""The ``enceladus`` command line: compile a kernel to MSL, explain it, manage the cache, check the setup.

Built on ``argparse`` (standard library): the command works in every install, with no extra dependency.
"""

from __future__ import annotations

import argparse
import ast
import contextlib
import importlib.util
import json
import os
import platform
import sys
import time
from pathlib import Path
from typing import Any

EXAMPLES = """\
examples:
  enceladus compile examples/01_vector_add.py::add_kernel --signature "*fp32,*fp32,*fp32,i32" -D BLOCK=1024
  enceladus compile kernels.py::matmul -s "*fp16:16,*fp16:16,*fp32:16,i32,i32,i32" -D BLOCK_M=64 --emit ir
  enceladus explain kernels.py::softmax -s "*fp32,*fp32,i32" -D BLOCK=1024 --svg softmax-layout.svg
  enceladus cache list
  enceladus cache clear --older-than 30
  enceladus doctor
"""

SIGNATURE_HELP = (
    "types of the kernel's runtime parameters in order, comma-separated: pointers '*fp32', '*fp16', '*i32', ...; "
    "scalars 'i32', 'i64', 'u64', 'fp32', 'i1'. Append ':16' when a pointer is 16-byte aligned or an integer is "
    "divisible by 16 (as the launcher specializes them), e.g. '*fp32:16,i32:16'."
)


class CLIError(Exception):
    """Bad input on the command line: printed as ``enceladus: error: ...`` with exit status 2."""


# --- loading a kernel from FILE.py::name ----------------------------------------------------------------------------
def load_kernel(target: str) -> Any:
    """The ``@enceladus.jit`` function named by ``FILE.py::name`` (the file is imported: its top-level code runs)."""
    from .runtime.jit import JITFunction

    if "::" not in target:
        raise CLIError(f"'{target}' does not name a kernel; use FILE.py::KERNEL_NAME, e.g. examples/01_vector_add.py"
                       "::add_kernel")
    file, _, name = target.rpartition("::")
    path = Path(file)
    if not path.is_file():
        raise CLIError(f"no such file: {file}")
    if path.suffix != ".py":
        raise CLIError(f"{file} is not a Python file (.py)")
    module_name = f"_enceladus_cli_{abs(hash(str(path.resolve())))}"
    spec = importlib.util.spec_from_file_location(module_name, path)
    if spec is None or spec.loader is None:
        raise CLIError(f"cannot import {file}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[module_name] = module  # dataclasses and pickling-free introspection need the module registered
    sys.path.insert(0, str(path.resolve().parent))
    try:
        with contextlib.redirect_stdout(sys.stderr):  # the file's own prints must not mix with our output
            spec.loader.exec_module(module)
    except SystemExit:
        pass
    except Exception as e:
        raise CLIError(f"importing {file} failed: {type(e).__name__}: {e}") from e
    finally:
        sys.path.pop(0)
    obj: Any = module
    for part in name.split("."):
        if not hasattr(obj, part):
            kernels = sorted(k for k, v in vars(module).items() if isinstance(v, JITFunction) or hasattr(v, "base_fn"))
            hint = f"; kernels in this file: {', '.join(kernels)}" if kernels else "; the file defines no @enceladus.jit kernel"
            raise CLIError(f"{file} has no '{name}'{hint}")
        obj = getattr(obj, part)
    while hasattr(obj, "base_fn") and not isinstance(obj, JITFunction):  # @autotune / @heuristics wrappers
        obj = obj.base_fn
    if not isinstance(obj, JITFunction):
        raise CLIError(f"'{name}' in {file} is a {type(obj).__name__}, not an @enceladus.jit kernel")
    return obj


def parse_define(text: str) -> tuple[str, Any]:
    """``NAME=VALUE``: VALUE as a Python literal (1024, 0.5, True, 'x', (1, 2)) or a dtype name (fp16, tl.float16)."""
    name, sep, raw = text.partition("=")
    name = name.strip()
    if not sep or not name.isidentifier():
        raise CLIError(f"-D expects NAME=VALUE (e.g. -D BLOCK=1024), got '{text}'")
    raw = raw.strip()
    try:
        return name, ast.literal_eval(raw)
    except (ValueError, SyntaxError):
        pass
    from . import language
    from .language import dtypes

    short = raw.split(".")[-1]
    value = dtypes.BY_NAME.get(short, getattr(language, short, None))
    if isinstance(value, dtypes.dtype):
        return name, value
    return name, raw  # a bare word: a string constexpr


def compile_from_args(args: argparse.Namespace) -> Any:
    """Compile the kernel the command line names; returns the CompiledKernel (with ``asm["cpp"]`` on cpu)."""
    import inspect

    from .compiler.driver import compile_kernel
    from .runtime import cache
    from .runtime.serialize import complete

    fn = load_kernel(args.kernel)
    constexprs = dict(parse_define(d) for d in args.define or [])
    unknown = [n for n in constexprs if n not in fn.param_names]
    if unknown:
        raise CLIError(f"-D {', '.join(unknown)}: kernel '{fn.__name__}' has no such parameter "
                       f"(parameters: {', '.join(fn.param_names)})")
    for p in fn.params:
        if p.is_constexpr and p.name not in constexprs:
            if p.default is inspect.Parameter.empty:
                raise CLIError(f"constexpr parameter '{p.name}' needs a value: add -D {p.name}=...")
            constexprs[p.name] = p.default
    runtime = [p.name for p in fn.params if p.name not in constexprs]
    types = [t.strip() for t in (args.signature or "").split(",") if t.strip()]
    if len(types) != len(runtime):
        raise CLIError(f"--signature has {len(types)} type(s) but kernel '{fn.__name__}' has {len(runtime)} runtime "
                       f"parameter(s): {', '.join(runtime) or '(none)'}; e.g. --signature \""
                       f"{','.join('*fp32' if 'ptr' in n else 'i32' for n in runtime)}\"")
    signature: dict[str, str] = {}
    facts: dict[str, tuple[bool, bool]] = {}
    for pname, t in zip(runtime, types):
        ty, _, hint = t.partition(":")
        if hint not in ("", "16"):
            raise CLIError(f"--signature: '{t}': the only specialization hint is ':16'")
        signature[pname] = ty.strip()
        facts[pname] = (hint == "16", False)
    try:
        kernel = compile_kernel(fn.source, fn.__name__, fn.param_names, signature, constexprs, facts,
                                num_warps=args.num_warps, origin=os.path.basename(fn.source.filename))
    except TypeError as e:  # bad type names in the signature
        raise CLIError(str(e)) from None
    return complete(kernel, cache.target(), "compiled")


# --- commands -------------------------------------------------------------------------------------------------------
def cmd_compile(args: argparse.Namespace) -> int:
    from .runtime import serialize

    kernel = compile_from_args(args)
    if args.emit == "abi":
        text = json.dumps(serialize.encode(kernel.abi), indent=2)
    elif args.emit == "json":
        text = serialize.to_json(kernel)
    elif args.emit == "cpp" and "cpp" not in kernel.asm:
        raise CLIError("no C++ for this target: --emit cpp is the cpu backend's translation (ENCELADUS_BACKEND=cpu)")
    else:
        text = kernel.asm[{"ir": "ir_layouts"}.get(args.emit, args.emit)]
    _write(text, args.output)
    return 0


def cmd_explain(args: argparse.Namespace) -> int:
    kernel = compile_from_args(args)
    text = kernel.explain()
    if args.svg:
        from .tools.layout_svg import save_kernel_layouts

        try:
            path = save_kernel_layouts(kernel, args.svg)
        except (ImportError, ValueError) as e:
            raise CLIError(str(e)) from None
        text += f"\nlayout picture written to {path}"
    _write(text, None)
    return 0


def _write(text: str, output: str | None) -> None:
    if output and output != "-":
        Path(output).write_text(text if text.endswith("\n") else text + "\n")
        print(f"wrote {output}", file=sys.stderr)
    else:
        sys.stdout.write(text if text.endswith("\n") else text + "\n")


def _human(n: float) -> str:
    for unit in ("B", "KB", "MB", "GB"):
        if n < 1024 or unit == "GB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n:.1f} GB"


def _age(seconds: float) -> str:
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if seconds >= size:
            return f"{seconds / size:.0f}{unit}"
    return f"{seconds:.0f}s"


def cmd_cache(args: argparse.Namespace) -> int:
    from .runtime import cache, cache_listing

    kinds = tuple(args.kind) if getattr(args, "kind", None) else cache.KINDS
    base = cache.cache_base()
    if args.action == "list":
        entries = cache_listing.list_entries(kinds)
        if args.json:
            print(json.dumps([{"kind": e.kind, "name": e.name, "size": e.size, "mtime": e.mtime, "path": str(e.path)}
                              for e in entries], indent=2))
            return 0
        if not entries:
            print(f"the cache at {base} is empty")
            return 0
        now = time.time()
        rows = [(e.kind, e.name, _human(e.size), _age(now - e.mtime), os.path.splitext(os.path.basename(e.path))[0][:16] if e.kind != "cpu" else "")
                for e in entries]
        header = ("KIND", "NAME", "SIZE", "AGE", "KEY")
        widths = [max(len(r[i]) for r in [header, *rows]) for i in range(5)]
        for r in [header, *rows]:
            print("  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip())
        print(f"{len(entries)} entries in {base}")
    elif args.action == "size":
        sizes = cache_listing.total_size(kinds)
        counts = dict.fromkeys(kinds, 0)
        for e in cache_listing.list_entries(kinds):
            counts[e.kind] += 1
        for k in kinds:
            print(f"{k:<9} {counts[k]:>6} files  {_human(sizes[k]):>9}")
        print(f"{'total':<9} {sum(counts.values()):>6} files  {_human(sum(sizes.values())):>9}  ({base})")
    else:  # clear
        older = args.older_than * 86400 if args.older_than is not None else None
        n, nbytes = cache_listing.clear(kinds, older)
        print(f"removed {n} files ({_human(nbytes)}) from {base}")
    return 0


def _version(module: str) -> str | None:
    try:
        from importlib.metadata import version

        return version(module)
    except Exception:  # noqa: BLE001 - not installed, or installed without metadata
        return None


def cmd_doctor(args: argparse.Namespace) -> int:
    import numpy as np

    import enceladus

    from .runtime import cache

    ok = True
    lines: list[tuple[str, str]] = [
        ("Enceladus", f"{enceladus.__version__} ({Path(enceladus.__file__).parent})"),
        ("Python", f"{platform.python_version()} ({sys.executable})"),
        ("NumPy", np.__version__),
        ("platform", f"{platform.system()} {platform.release()} {platform.machine()}"),
    ]
    chosen = cache.target()
    forced = os.environ.get("ENCELADUS_BACKEND")
    lines.append(("backend", f"{chosen}" + (f" (ENCELADUS_BACKEND={forced})" if forced else " (default for this OS)")))
    if sys.platform == "darwin":
        try:
            from .runtime.backend import get_backend

            b = get_backend("metal")
            device = getattr(b, "device_name", None) or getattr(b, "name", "metal")
            lines.append(("Metal", f"available: {device}"))
        except Exception as e:  # noqa: BLE001 - report whatever stops it
            lines.append(("Metal", f"not usable: {e}"))
            ok = ok and chosen != "metal"
    else:
        lines.append(("Metal", "not available (Metal needs macOS on Apple silicon); the cpu backend runs the MSL"))
    try:
        from .backends.cpu import find_compiler

        cc = find_compiler()
        lines.append(("C++ compiler", f"{cc.kind}: {' '.join(cc.command)} — {cc.version}"))
    except Exception as e:  # noqa: BLE001
        lines.append(("C++ compiler", f"NOT FOUND: {e}"))
        ok = ok and chosen != "cpu"
    if cache.enabled():
        base = cache.cache_base()
        try:
            import warnings

            from . import cachedir

            with warnings.catch_warnings():
                warnings.simplefilter("ignore", cachedir.CacheDirWarning)
                used = os.path.dirname(cache.cache_dir("kernels"))
            from .runtime.cache_listing import list_entries

            entries = list_entries()
            state = f"{base} (private; {len(entries)} files, {_human(sum(e.size for e in entries))})"
            if used != base:
                state = f"{base}: NOT USABLE (a file, not creatable or not writable); using a private temporary " \
                        f"directory per process ({used})"
        except Exception as e:  # noqa: BLE001
            state = f"{base}: PROBLEM: {e}"
            ok = False
    else:
        state = "disabled (ENCELADUS_CACHE=0)"
    lines.append(("cache", state))
    optional = [(m, _version(m)) for m in ("matplotlib", "tqdm", "ml_dtypes", "torch", "mlx")]
    lines.append(("optional", ", ".join(f"{m} {v}" if v else f"{m} -" for m, v in optional)))
    env = {k: v for k, v in os.environ.items() if k.startswith("ENCELADUS_")}
    lines.append(("environment", ", ".join(f"{k}={v}" for k, v in sorted(env.items())) or "(no ENCELADUS_* variables)"))
    if args.run and ok:
        lines.append(("smoke test", _smoke_test()))
    width = max(len(k) for k, _ in lines)
    for k, v in lines:
        print(f"{k:<{width}}  {v}")
    if args.probe and ok:  # every run-time probe of the device's assumptions (runtime/probes.py)
        from .runtime.backend import get_backend
        from .runtime.probes import report

        print(report(get_backend()))
    print("status: ready" if ok else "status: NOT READY — see the lines above")
    return 0 if ok else 1


def _smoke_test() -> str:
    """Compile and run a vector add on the selected backend."""
    import numpy as np

    from .tools.doctor_kernel import add_one

    x = np.arange(1000, dtype=np.float32)
    out = np.zeros_like(x)
    try:
        t0 = time.perf_counter()
        add_one[(4,)](x, out, x.size, BLOCK=256)
        dt = time.perf_counter() - t0
    except Exception as e:  # noqa: BLE001
        return f"FAILED: {type(e).__name__}: {e}"
    good = np.array_equal(out, x + 1)
    return f"vector add {'OK' if good else 'WRONG RESULT'} ({dt * 1e3:.0f} ms, compile included)"


# --- parser ---------------------------------------------------------------------------------------------------------
def _add_kernel_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("kernel", metavar="FILE.py::KERNEL", help="the kernel: a Python file and the @enceladus.jit "
                   "function in it (the file is imported, so its top-level code runs)")
    p.add_argument("-s", "--signature", required=True, metavar="TYPES", help=SIGNATURE_HELP)
    p.add_argument("-D", "--define", action="append", metavar="NAME=VALUE",
                   help="a constexpr value, e.g. -D BLOCK=1024 -D DTYPE=fp16 (repeatable); defaults apply otherwise")
    p.add_argument("-w", "--num-warps", type=int, default=4, metavar="N",
                   help="SIMD groups of 32 threads per threadgroup: 1, 2, 4, 8, 16 or 32 (default 4)")


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of the ``enceladus`` command."""
    from . import __version__

    parser = argparse.ArgumentParser(
        prog="enceladus", description="Enceladus: Triton-style kernels in Python, compiled to Metal Shading Language.",
        epilog=EXAMPLES, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--version", action="version", version=f"enceladus {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)

    p = sub.add_parser("compile", help="compile a kernel and print its MSL (or IR, C++, ABI)",
                       description="Compile one specialization of a kernel and print the result.",
                       formatter_class=argparse.RawDescriptionHelpFormatter,
                       epilog="example:\n  enceladus compile examples/01_vector_add.py::add_kernel "
                              "-s '*fp32:16,*fp32:16,*fp32:16,i32' -D BLOCK=1024 --emit msl")
    _add_kernel_args(p)
    p.add_argument("--emit", choices=("msl", "ir", "cpp", "abi", "json"), default="msl",
                   help="what to print: msl (default), ir (tile IR with layouts), cpp (the cpu backend's C++), "
                        "abi (argument binding, JSON), json (the whole compiled kernel, as the cache stores it)")
    p.add_argument("-o", "--output", metavar="PATH", help="write to PATH instead of standard output")
    p.set_defaults(func=cmd_compile)

    p = sub.add_parser("explain", help="show layouts, threads, vectorization decisions and the IR of a kernel",
                       description="Explain how a kernel is compiled: threads per threadgroup, the layout of each "
                                   "tile, why each load/store is or is not vectorized, and the IR.")
    _add_kernel_args(p)
    p.add_argument("--svg", metavar="PATH", help="also draw each tile's layout (colour = SIMD group, label = "
                   "lane/register) to PATH (.svg, .png or .pdf; needs matplotlib)")
    p.set_defaults(func=cmd_explain)

    p = sub.add_parser("cache", help="list, measure or clear the disk cache",
                       description="The disk cache ($ENCELADUS_CACHE_DIR or ~/.cache/enceladus): compiled kernels, "
                                   "autotuning results and the cpu backend's libraries.")
    csub = p.add_subparsers(dest="action", metavar="ACTION", required=True)
    kinds_help = "only this kind of entry: kernels, autotune, cpu or probes (repeatable)"
    c = csub.add_parser("list", help="list cached entries, newest first")
    c.add_argument("--kind", action="append", choices=("kernels", "autotune", "cpu", "probes"), help=kinds_help)
    c.add_argument("--json", action="store_true", help="print JSON instead of a table")
    c = csub.add_parser("size", help="show the space used per kind of entry")
    c.add_argument("--kind", action="append", choices=("kernels", "autotune", "cpu", "probes"), help=kinds_help)
    c = csub.add_parser("clear", help="delete cached entries (they are rebuilt when needed)")
    c.add_argument("--kind", action="append", choices=("kernels", "autotune", "cpu", "probes"), help=kinds_help)
    c.add_argument("--older-than", type=float, metavar="DAYS", help="only entries not written for DAYS days")
    p.set_defaults(func=cmd_cache)

    p = sub.add_parser("doctor", help="check the setup: Python, NumPy, backend, Metal or C++ compiler, cache",
                       description="Report what Enceladus finds on this machine and whether kernels can run.")
    p.add_argument("--no-run", dest="run", action="store_false",
                   help="skip the smoke test (compiling and running a small kernel)")
    p.add_argument("--probe", action="store_true",
                   help="also run every device probe (lane mapping, matmul2d, shuffles, pragmas, ...) and print a "
                        "report to paste into a bug report")
    p.set_defaults(func=cmd_doctor)
    return parser


def main(argv: list[str] | None = None) -> int:
    """Entry point of the ``enceladus`` command; returns the exit status."""
    parser = build_parser()
    args = parser.parse_args(argv)
    from .errors import CompilationError

    try:
        return int(args.func(args) or 0)
    except CLIError as e:
        parser.exit(2, f"enceladus: error: {e}\n")
    except CompilationError as e:
        print(str(e), file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:  # `enceladus cache list | head`: the reader left; stop quietly, as cat does
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())  # so the interpreter's final flush does not fail again
        return 141
    return 0


if __name__ == "__main__":
    sys.exit(main())
