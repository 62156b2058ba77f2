"""``@enceladus.autotune``, ``enceladus.Config`` and ``@enceladus.heuristics``, as in Triton.

    @enceladus.autotune(configs=[enceladus.Config({"BLOCK": 256}, num_warps=2),
                                 enceladus.Config({"BLOCK": 1024}, num_warps=8)], key=["n"])
    @enceladus.jit
    def kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr): ...

On the first launch for a new value of the ``key`` arguments (and new argument dtypes), every config
is compiled — in parallel on a thread pool; on the ``cpu`` backend the C++ builds run concurrently —
then timed with :func:`enceladus.testing.do_bench`, and the fastest is kept for that key in memory and,
with ``cache_results=True`` or ``ENCELADUS_CACHE_AUTOTUNING=1``, on disk. Configs that fail to compile
or exceed the device's resources are skipped with a warning; only if none works is an error raised.
``ENCELADUS_PRINT_AUTOTUNING=1`` prints each choice.
"""

from __future__ import annotations

import builtins
import functools
import hashlib
import os
import platform
import sys
import time
import warnings
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from ..errors import CompilationError, LaunchError, OutOfResources

_TRUTHY = ("1", "true", "yes", "on")


def _env_flag(name: str) -> bool:
    return os.environ.get(name, "").strip().lower() in _TRUTHY


class Config:
    """One candidate for the autotuner: constexpr values (``kwargs``) and launch options.

    ``Config({"BLOCK_M": 64, "BLOCK_N": 64}, num_warps=4)``. ``pre_hook(nargs)`` runs before each
    launch with this config (``nargs``: every argument by name, with this config's values).
    """

    def __init__(self, kwargs: dict[str, Any], num_warps: int = 4, num_stages: int = 3, num_ctas: int = 1,
                 maxnreg: int | None = None, pre_hook: Callable[[dict[str, Any]], None] | None = None,
                 dot_backend: str | None = None, enable_fp_fusion: bool | None = None):
        if not isinstance(kwargs, dict):
            raise TypeError(f"Config(kwargs) takes a dict of constexpr values, got {type(kwargs).__name__}")
        self.kwargs = dict(kwargs)
        self.num_warps = num_warps
        self.num_stages = num_stages
        self.num_ctas = num_ctas
        self.maxnreg = maxnreg
        self.pre_hook = pre_hook
        self.dot_backend = dot_backend  # "simdgroup", "matmul2d" or "auto" (None: the launch's default)
        self.enable_fp_fusion = enable_fp_fusion  # None: the launch's default (on)

    def all_kwargs(self) -> dict[str, Any]:
        """The keyword arguments a launch with this config adds: constexprs and launch options."""
        opts = (("num_warps", self.num_warps), ("num_ctas", self.num_ctas), ("num_stages", self.num_stages),
                ("maxnreg", self.maxnreg), ("dot_backend", self.dot_backend),
                ("enable_fp_fusion", self.enable_fp_fusion))
        return {**self.kwargs, **{k: v for k, v in opts if v is not None}}

    def _identity(self) -> tuple:
        return (tuple(sorted((k, repr(v)) for k, v in self.kwargs.items())), self.num_warps, self.num_stages,
                self.num_ctas, self.maxnreg, self.dot_backend, self.enable_fp_fusion)

    def __eq__(self, other: object) -> bool:  # the pre-hook counts, as in Triton (not in the disk key: _identity)
        return isinstance(other, Config) and self._identity() == other._identity() and self.pre_hook == other.pre_hook

    def __hash__(self) -> int:
        return hash((self._identity(), self.pre_hook))

    def __str__(self) -> str:
        parts = [f"{k}: {v}" for k, v in self.kwargs.items()]
        parts += [f"num_warps: {self.num_warps}", f"num_ctas: {self.num_ctas}", f"num_stages: {self.num_stages}",
                  f"maxnreg: {self.maxnreg}"]
        if self.dot_backend is not None:
            parts.append(f"dot_backend: {self.dot_backend}")
        if self.enable_fp_fusion is not None:
            parts.append(f"enable_fp_fusion: {self.enable_fp_fusion}")
        return ", ".join(parts)

    def __repr__(self) -> str:
        return f"Config({self.kwargs!r}, num_warps={self.num_warps}, num_stages={self.num_stages})"


class KernelInterface:
    """Launch syntax shared by the wrappers: ``kernel[grid](*args, **kwargs)``."""

    fn: Any
    arg_names: list[str]

    def run(self, *args: Any, grid: Any, **kwargs: Any) -> Any:  # pragma: no cover - overridden
        raise NotImplementedError

    def __getitem__(self, grid: Any) -> Callable[..., Any]:
        return functools.partial(self.run, grid=grid)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        raise RuntimeError(f"kernel '{self.__name__}' must be launched with a grid: {self.__name__}[grid](...)")

    @property
    def param_names(self) -> list[str]:
        return self.arg_names

    @property
    def base_fn(self) -> Any:
        """The ``@jit`` function under the stack of wrappers."""
        fn = self.fn
        while isinstance(fn, KernelInterface):
            fn = fn.fn
        return fn

    def explain(self, *args: Any, **kwargs: Any) -> str:
        """``explain()`` of the kernel underneath, with the arguments each wrapper adds (configs, heuristics)."""
        return self.fn.explain(*args, **kwargs)


def _arg_names(fn: Any) -> list[str]:
    names = getattr(fn, "arg_names", None) or getattr(fn, "param_names", None)
    if names is None:
        raise TypeError(f"expected an @enceladus.jit function (or another autotune/heuristics wrapper), got {fn!r}")
    return list(names)


# --- argument helpers for reset_to_zero / restore_value (NumPy, enceladus.Tensor, torch) ----------------------------
def _array_view(x: Any) -> Any:
    if hasattr(x, "__enceladus_array__"):
        return x.__enceladus_array__()
    return x


def _zero(x: Any) -> None:
    if hasattr(x, "zero_"):
        x.zero_()
    else:
        _array_view(x)[...] = 0


def _clone(x: Any) -> Any:
    return x.clone() if hasattr(x, "clone") else _array_view(x).copy()


def _copy_into(dst: Any, src: Any) -> None:
    if hasattr(dst, "copy_"):
        dst.copy_(src)
    else:
        _array_view(dst)[...] = src


class _Progress:
    """A progress bar on an interactive stderr, shown only once tuning has taken ``delay`` seconds."""

    def __init__(self, total: int, desc: str, delay: float = 1.5):
        self.total, self.desc, self.delay = total, desc, delay
        self.start = time.perf_counter()
        self.done = 0
        self.shown = False
        self.bar = None
        self.enabled = sys.stderr is not None and sys.stderr.isatty() and not _env_flag("ENCELADUS_NO_PROGRESS")
        if self.enabled:
            try:
                from tqdm import tqdm
            except ImportError:
                pass
            else:
                self.bar = tqdm(total=total, desc=desc, delay=delay, leave=False, unit="config")

    def update(self) -> None:
        self.done += 1
        if self.bar is not None:
            self.bar.update()
        elif self.enabled and time.perf_counter() - self.start > self.delay:
            self.shown = True
            width = 30
            filled = width * self.done // max(self.total, 1)
            sys.stderr.write(f"\r{self.desc}: [{'#' * filled}{'.' * (width - filled)}] {self.done}/{self.total}")
            sys.stderr.flush()

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()
        elif self.shown:
            sys.stderr.write("\r" + " " * (len(self.desc) + 50) + "\r")
            sys.stderr.flush()


class Autotuner(KernelInterface):
    """Picks the fastest :class:`Config` per key; made by :func:`autotune`."""

    def __init__(self, fn: Any, arg_names: list[str], configs: Sequence[Config], key: Sequence[str],
                 reset_to_zero: Sequence[str] | None = None, restore_value: Sequence[str] | None = None,
                 pre_hook: Callable[..., None] | None = None, post_hook: Callable[..., None] | None = None,
                 prune_configs_by: dict[str, Any] | None = None, warmup: float | None = None,
                 rep: float | None = None, do_bench: Callable[..., Any] | None = None, cache_results: bool = False):
        self.fn = fn
        self.arg_names = arg_names
        self.__name__ = getattr(fn, "__name__", "kernel")
        self.__doc__ = getattr(fn, "__doc__", None)
        self.configs = list(configs) if configs else [Config({})]
        for c in self.configs:
            if not isinstance(c, Config):
                raise TypeError(f"autotune configs must be enceladus.Config objects, got {c!r}")
            unknown = [k for k in c.kwargs if k not in arg_names]
            if unknown:
                raise ValueError(f"autotune config {c} sets {', '.join(unknown)}, which kernel '{self.__name__}' does "
                                 f"not take (parameters: {', '.join(arg_names)})")
        if isinstance(key, str):
            key = [key]
        missing = [k for k in key if k not in arg_names]
        if missing:
            raise ValueError(f"autotune key {', '.join(map(repr, missing))} is not a parameter of kernel "
                             f"'{self.__name__}' (parameters: {', '.join(arg_names)})")
        self.keys = list(key)
        self.cache: dict[tuple, Config] = {}
        self.configs_timings: dict[Config, list[float]] | None = None
        self.best_config: Config | None = None
        self.bench_time = 0.0
        self.nargs: dict[str, Any] = {}
        self.reset_to_zero = list(reset_to_zero or [])
        self.restore_value = list(restore_value or [])
        for name in self.reset_to_zero + self.restore_value:
            if name not in arg_names:
                raise ValueError(f"reset_to_zero/restore_value name '{name}' is not a parameter of '{self.__name__}'")
        self.restore_copies: dict[str, Any] = {}
        if pre_hook is not None:
            self.pre_hook = pre_hook
        elif self.reset_to_zero or self.restore_value:
            self.pre_hook = self._default_pre_hook
        else:
            self.pre_hook = lambda kwargs, reset_only=False: None
        if post_hook is not None:
            self.post_hook = post_hook
        elif self.restore_value:
            self.post_hook = self._default_post_hook
        else:
            self.post_hook = lambda kwargs, exception=None: None
        prune = prune_configs_by or {}
        unknown_prune = set(prune) - {"perf_model", "top_k", "early_config_prune"}
        if unknown_prune:
            raise ValueError(f"prune_configs_by takes perf_model, top_k, early_config_prune; got {sorted(unknown_prune)}")
        self.perf_model = prune.get("perf_model")
        self.configs_top_k = prune.get("top_k", 1.0)
        self.early_config_prune = prune.get("early_config_prune")
        self.num_warmups = 25 if warmup is None else warmup
        self.num_reps = 100 if rep is None else rep
        self.cache_results = cache_results or _env_flag("ENCELADUS_CACHE_AUTOTUNING")
        if do_bench is None:
            from ..testing import do_bench as default_bench

            do_bench = functools.partial(default_bench, warmup=self.num_warmups, rep=self.num_reps)
        self.do_bench = do_bench

    def __repr__(self) -> str:
        return f"Autotuner({self.fn!r}, {len(self.configs)} configs, key={self.keys})"

    # --- hooks ----------------------------------------------------------------------------------------------
    def _default_pre_hook(self, kwargs: dict[str, Any], reset_only: bool = False) -> None:
        for name in self.reset_to_zero:
            _zero(kwargs[name])
        if not reset_only:
            self.restore_copies = {name: _clone(kwargs[name]) for name in self.restore_value}

    def _default_post_hook(self, kwargs: dict[str, Any], exception: BaseException | None = None) -> None:
        for name in self.restore_value:
            _copy_into(kwargs[name], self.restore_copies[name])
        self.restore_copies = {}

    # --- choosing ---------------------------------------------------------------------------------------------
    def _tuning_key(self, args: tuple, kwargs: dict[str, Any]) -> tuple:
        all_args = {**self.nargs, **kwargs}
        key: list[Any] = [all_args[k] for k in self.keys if k in all_args]
        for arg in all_args.values():
            if hasattr(arg, "dtype"):
                key.append(str(arg.dtype))
        out = []
        for v in key:
            try:
                hash(v)
                out.append(v)
            except TypeError:
                out.append(repr(v))
        return tuple(out)

    def prune_configs(self, kwargs: dict[str, Any]) -> list[Config]:
        """The configs worth timing: ``early_config_prune``, then the ``top_k`` of ``perf_model``."""
        pruned = self.configs
        if self.early_config_prune:
            pruned = list(self.early_config_prune(self.configs, self.nargs, **kwargs))
            if not pruned:
                raise ValueError(f"autotune of '{self.__name__}': early_config_prune removed every config")
        if self.perf_model:
            top_k = self.configs_top_k
            if isinstance(top_k, float) and top_k <= 1.0:
                top_k = max(1, int(len(self.configs) * top_k))
            elif not isinstance(top_k, int):
                raise TypeError("prune_configs_by['top_k'] must be an int, or a float <= 1.0 (a fraction of the configs)")
            if len(pruned) > top_k:
                est = {c: self.perf_model(**self.nargs, **kwargs, **c.all_kwargs()) for c in pruned}
                pruned = sorted(est, key=est.get)[:top_k]
        return pruned

    def _check_conflicts(self, kwargs: dict[str, Any], config: Config) -> None:
        conflicts = set(kwargs) & set(config.kwargs)
        if conflicts:
            raise ValueError(f"Conflicting meta-parameters: {', '.join(sorted(conflicts))}. Make sure that you don't "
                             "re-define auto-tuned symbols.")

    def _compile_all(self, args: tuple, grid: Any, kwargs: dict[str, Any],
                     configs: list[Config]) -> tuple[list[Config], dict[Config, BaseException]]:
        """Compile (and, on the cpu backend, build) every config in parallel. Returns (ok, failures).

        A config with a ``pre_hook`` is compiled when it is first timed, after its hook ran: the hook may change
        the arguments the kernel is specialized on (tutorial 09 sets its tensor descriptors' ``block_shape``
        to the config's blocks), so compiling it before, or alongside the other configs' hooks, would compile
        it for other arguments."""
        base = self.base_fn
        self._same_as: dict[Config, Config] = {}
        if getattr(base, "interpret", False):
            self._same_as = self._identical_in_interpreter(grid, kwargs, configs)
            return list(configs), {}
        hooked = [c for c in configs if c.pre_hook is not None]
        configs = [c for c in configs if c.pre_hook is None]

        def build(config: Config) -> None:
            kernel = self.fn.warmup(*args, grid=grid, **kwargs, **config.all_kwargs())
            if getattr(kernel, "program", 1) is None:
                from .backend import get_backend
                from .launch import build_program

                kernel.program = build_program(get_backend(), kernel)

        failures: dict[Config, BaseException] = {}
        workers = max(1, min(len(configs), os.cpu_count() or 1, 8))
        with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="enceladus-autotune") as pool:
            futures = {c: pool.submit(build, c) for c in configs}
            for c, fut in futures.items():
                exc = fut.exception()
                if exc is None:
                    continue
                if not _is_resource_or_compile_error(exc):
                    raise exc
                failures[c] = exc
        ok = [c for c in configs if c not in failures]
        self._same_as = self._identical_configs(args, grid, kwargs, ok)
        return ok + hooked, failures

    def _identical_configs(self, args: tuple, grid: Any, kwargs: dict[str, Any],
                           configs: list[Config]) -> dict[Config, Config]:
        """Configs that would launch exactly what an earlier config launches (the same MSL, threads per
        threadgroup and grid, no pre-hook of their own), mapped to that earlier config: they are not timed.
        Configs differing only in knobs with no effect on Apple GPUs (``num_stages``, ``num_ctas``, ``maxnreg``)
        are the usual case. Configs with a pre-hook are compared when they are timed (``_same_hooked``)."""
        return _same_as_earlier([c for c in configs if c.pre_hook is None],
                                lambda c: self._launch_identity(args, grid, kwargs, c))

    def _identical_in_interpreter(self, grid: Any, kwargs: dict[str, Any],
                                  configs: list[Config]) -> dict[Config, Config]:
        """In the interpreter, which runs each program as a whole, ``num_warps``, ``num_stages``, ``num_ctas`` and
        ``maxnreg`` change nothing a launch computes: configs equal in everything else (constexprs, pre-hook
        function, ``dot_backend``, ``enable_fp_fusion``) and in their grid are timed once."""
        from .jit import resolve_grid

        def identity(c: Config) -> tuple:
            launch_grid = resolve_grid(grid, {**self.nargs, **kwargs, **c.all_kwargs()})
            return (c._identity()[0], c.pre_hook, c.dot_backend, c.enable_fp_fusion, tuple(launch_grid))

        return _same_as_earlier(configs, identity)

    def _launch_identity(self, args: tuple, grid: Any, kwargs: dict[str, Any], c: Config) -> tuple:
        """What a config launches: its generated MSL, threads per threadgroup and grid (compiles if needed)."""
        from .jit import resolve_grid

        kernel = self.fn.warmup(*args, grid=grid, **kwargs, **c.all_kwargs())  # cached: no recompilation
        nargs = {**self.nargs, **kwargs, **c.all_kwargs()}
        return kernel.asm["msl"], kernel.abi.threads_per_threadgroup, resolve_grid(grid, nargs)

    def _same_hooked(self, args: tuple, grid: Any, kwargs: dict[str, Any], c: Config,
                     seen: dict[tuple, Config]) -> Config | None:
        """For a config with a ``pre_hook``: run the hook, compile, and return an earlier config with the same hook
        function that launched exactly the same thing (its timing stands for this one), else None (and remember
        this one). Compile errors propagate, as they would from timing it."""
        if getattr(self.base_fn, "interpret", False):
            return None
        c.pre_hook({**self.nargs, **kwargs, **c.all_kwargs()})
        ident = (c.pre_hook, *self._launch_identity(args, grid, kwargs, c))
        first = seen.get(ident)
        if first is None:
            seen[ident] = c
        return first

    def _bench(self, *args: Any, grid: Any, config: Config, **meta: Any) -> list[float]:
        self._check_conflicts(meta, config)
        current = dict(meta, **config.all_kwargs())
        full_nargs = {**self.nargs, **current}

        def kernel_call() -> None:
            if config.pre_hook:
                config.pre_hook(full_nargs)
            self.pre_hook(full_nargs)
            try:
                self.fn.run(*args, grid=grid, **current)
            except Exception as e:
                try:
                    self.post_hook(full_nargs, exception=e)
                finally:
                    raise
            self.post_hook(full_nargs, exception=None)

        result = self.do_bench(kernel_call, quantiles=(0.5, 0.2, 0.8))
        return list(result) if isinstance(result, (list, tuple)) else [float(result)] * 3

    def _tune(self, args: tuple, grid: Any, kwargs: dict[str, Any], key: tuple) -> Config:
        start = time.perf_counter()
        configs = self.prune_configs(kwargs)
        for c in configs:
            self._check_conflicts(kwargs, c)
        ok, failures = self._compile_all(args, grid, kwargs, configs)
        timings: dict[Config, list[float]] = {c: [float("inf")] * 3 for c in failures}
        same_as = dict(getattr(self, "_same_as", {}))
        hooked_seen: dict[tuple, Config] = {}
        progress = _Progress(len(ok) - len(same_as), f"autotuning {self.__name__}")
        try:
            for c in ok:
                if c in same_as:
                    continue
                try:
                    first = self._same_hooked(args, grid, kwargs, c, hooked_seen) if c.pre_hook else None
                    if first is not None:
                        same_as[c] = first
                        continue
                    timings[c] = self._bench(*args, grid=grid, config=c, **kwargs)
                except Exception as e:
                    if not _is_resource_or_compile_error(e):
                        raise
                    failures[c] = e
                    timings[c] = [float("inf")] * 3
                progress.update()
        finally:
            progress.close()
        for c, first in same_as.items():  # identical launches: the first one's timing stands for all
            timings[c] = timings.get(first, [float("inf")] * 3)
        for c, exc in failures.items():
            warnings.warn(f"autotune of '{self.__name__}': skipping config {{{c}}}: {_first_line(exc)}", stacklevel=4)
        if len(failures) == len(configs):
            raise _all_configs_failed(self.__name__, [(c, failures[c]) for c in configs])
        self.bench_time = time.perf_counter() - start
        self.configs_timings = timings
        return builtins.min((c for c in configs if c in timings), key=lambda c: timings[c][0])

    # --- disk -------------------------------------------------------------------------------------------------------
    def _disk_key(self, key: tuple) -> str | None:
        from . import cache

        try:
            parts = [cache.function_digest(self.base_fn), cache.compiler_digest(), cache.target(),
                     platform.machine(), str(os.cpu_count()), repr(self.keys), repr(key),
                     repr([c._identity() for c in self.configs])]
        except Exception:  # noqa: BLE001 - no stable key: keep the result in memory only
            return None
        return hashlib.sha256("\0".join(parts).encode()).hexdigest()[:48]

    def _load_choice(self, key: tuple) -> Config | None:
        from . import cache, serialize

        dkey = self._disk_key(key) if cache.enabled() else None
        data = serialize.load_data("autotune", dkey) if dkey else None
        if not isinstance(data, dict):
            return None
        i = data.get("best")
        if not isinstance(i, int) or not 0 <= i < len(self.configs) or str(self.configs[i]) != data.get("config"):
            return None
        return self.configs[i]

    def _store_choice(self, key: tuple, best: Config) -> None:
        from . import cache, serialize

        dkey = self._disk_key(key) if cache.enabled() else None
        if dkey is None:
            return
        timings = {str(c): t for c, t in (self.configs_timings or {}).items()}
        serialize.store_data("autotune", dkey, {"kernel": self.__name__, "key": repr(key), "best": self.configs.index(best),
                                                "config": str(best), "timings_ms": timings})

    # --- launch ---------------------------------------------------------------------------------------------------
    def run(self, *args: Any, grid: Any, **kwargs: Any) -> Any:
        """Launch with the best config for these arguments (tuning first if this key is new)."""
        if len(args) > len(self.arg_names):
            raise TypeError(f"kernel '{self.__name__}' takes {len(self.arg_names)} arguments but {len(args)} were given")
        self.nargs = dict(zip(self.arg_names, args))
        used_cached = True
        if len(self.configs) > 1:
            key = self._tuning_key(args, kwargs)
            if key not in self.cache:
                choice = self._load_choice(key) if self.cache_results else None
                source = "disk cache"
                if choice is None:
                    used_cached = False
                    source = "benchmark"
                    choice = self._tune(args, grid, kwargs, key)
                    if self.cache_results:
                        self._store_choice(key, choice)
                self.cache[key] = choice
                full_nargs = {**self.nargs, **kwargs, **choice.all_kwargs()}
                self.pre_hook(full_nargs, reset_only=True)
                if _env_flag("ENCELADUS_PRINT_AUTOTUNING"):
                    how = (f"finished after {self.bench_time:.2f}s" if not used_cached
                           else "loaded from the disk cache")
                    print(f"Enceladus autotuning for function {self.__name__},\nwith key as {key},\n{how} "
                          f"({source}),\nbest config selected: {choice};")
            config = self.cache[key]
        else:
            config = self.configs[0]
        self.best_config = config
        self._check_conflicts(kwargs, config)
        full_nargs = {**self.nargs, **kwargs, **config.all_kwargs()}
        if config.pre_hook is not None:
            config.pre_hook(full_nargs)
        return self.fn.run(*args, grid=grid, **kwargs, **config.all_kwargs())

    def warmup(self, *args: Any, grid: Any = None, **kwargs: Any) -> list[Any]:
        """Compile every (pruned) config for these arguments without launching; returns the compiled kernels."""
        self.nargs = dict(zip(self.arg_names, args))
        return [self.fn.warmup(*args, grid=grid, **kwargs, **c.all_kwargs()) for c in self.prune_configs(kwargs)]

    def explain(self, *args: Any, **kwargs: Any) -> str:
        """``explain()`` for the config these arguments launch with: the tuned choice for their key if tuning
        already ran, else the first config (say so in the first line)."""
        kwargs.pop("grid", None)
        self.nargs = dict(zip(self.arg_names, args))
        config = self.configs[0]
        how = "the first config (not tuned yet for these arguments)"
        if len(self.configs) > 1:
            key = self._tuning_key(args, kwargs)
            if key in self.cache:
                config, how = self.cache[key], "the tuned config"
        elif self.configs:
            how = "the only config"
        text = self.fn.explain(*args, **kwargs, **config.all_kwargs())
        return f"autotuned kernel '{self.__name__}': {how}: {{{config}}}\n{text}"


def _is_resource_or_compile_error(e: BaseException) -> bool:
    if isinstance(e, (CompilationError, OutOfResources, LaunchError)):
        return True
    try:
        from ..backends.cpu.errors import CpuBackendError
    except ImportError:  # pragma: no cover
        return False
    return isinstance(e, CpuBackendError)


def _all_configs_failed(name: str, failures: list[tuple[Config, BaseException]]) -> CompilationError:
    """The error when no config works: the first failure that is not a resource limit (the real error, with its
    file, line and fix), or, when every config ran out of resources, a resource error suggesting smaller configs."""
    real = [(c, e) for c, e in failures if not isinstance(e, OutOfResources)]
    config, first = (real or failures)[0]
    reasons = "\n".join(f"  {{{c}}}: {_first_line(e)}" for c, e in failures)
    message = (f"autotune of '{name}': no config compiled and ran; every one failed:\n{reasons}\n"
               f"first error (config {{{config}}}): {getattr(first, 'message', None) or str(first).strip()}")
    if real:
        cls, fix = CompilationError, getattr(first, "fix", None) or "fix the error above; it is not a resource limit"
    else:
        cls, fix = OutOfResources, "add configs that fit the device (smaller blocks, fewer warps or stages)"
    where = {k: getattr(first, k, None) for k in ("filename", "lineno", "col", "source_line")}
    err = cls(message, kernel=name, fix=fix, **where)
    err.__cause__ = first
    return err


def _first_line(e: BaseException) -> str:
    text = str(getattr(e, "message", None) or e).strip().splitlines()
    return f"{type(e).__name__}: {text[0] if text else ''}"


def autotune(configs: Sequence[Config], key: Sequence[str], prune_configs_by: dict[str, Any] | None = None,
             reset_to_zero: Sequence[str] | None = None, restore_value: Sequence[str] | None = None,
             pre_hook: Callable[..., None] | None = None, post_hook: Callable[..., None] | None = None,
             warmup: float | None = None, rep: float | None = None, use_cuda_graph: bool = False,
             do_bench: Callable[..., Any] | None = None,
             cache_results: bool = False) -> Callable[[Any], Autotuner]:
    """Decorator: time each :class:`Config` on the first launch per ``key`` and launch with the fastest.

    ``key``: argument names whose values (with the arguments' dtypes) select a tuning result.
    ``prune_configs_by``: ``{"early_config_prune": fn(configs, nargs, **kwargs) -> configs,
    "perf_model": fn(**nargs, **config) -> estimate, "top_k": int or fraction}``.
    ``reset_to_zero`` / ``restore_value``: arguments zeroed / restored around each timing run (for kernels
    that accumulate into or overwrite their inputs). ``pre_hook(nargs, reset_only=False)`` /
    ``post_hook(nargs, exception)`` replace those defaults. ``warmup`` / ``rep``: ``do_bench`` budgets in ms
    (25 / 100). ``cache_results``: keep the choice on disk across processes (also
    ``ENCELADUS_CACHE_AUTOTUNING=1``). ``use_cuda_graph`` is accepted for compatibility and ignored.

    Stack it above ``@enceladus.jit`` (and above ``@enceladus.heuristics``), as in Triton.
    """

    def decorator(fn: Any) -> Autotuner:
        return Autotuner(fn, _arg_names(fn), configs, key, reset_to_zero, restore_value, pre_hook=pre_hook,
                         post_hook=post_hook, prune_configs_by=prune_configs_by, warmup=warmup, rep=rep,
                         do_bench=do_bench, cache_results=cache_results)

    return decorator


class Heuristics(KernelInterface):
    """Computes constexprs from the other arguments at each launch; made by :func:`heuristics`."""

    def __init__(self, fn: Any, arg_names: list[str], values: dict[str, Callable[[dict[str, Any]], Any]]):
        self.fn = fn
        self.arg_names = arg_names
        self.__name__ = getattr(fn, "__name__", "kernel")
        if not isinstance(values, dict):
            raise TypeError("heuristics() takes a dict {parameter name: function(args) -> value}")
        for name, h in values.items():
            if name not in arg_names:
                raise ValueError(f"heuristics name '{name}' is not a parameter of kernel '{self.__name__}' "
                                 f"(parameters: {', '.join(arg_names)})")
            if not callable(h):
                raise TypeError(f"heuristics['{name}'] must be a function of the arguments dict, got {h!r}")
        self.values = values

    def _apply(self, args: tuple, kwargs: dict[str, Any]) -> dict[str, Any]:
        for name, h in self.values.items():
            kwargs[name] = h({**dict(zip(self.arg_names, args)), **kwargs})
        return kwargs

    def run(self, *args: Any, grid: Any, **kwargs: Any) -> Any:
        """Launch with the heuristic values added to the keyword arguments."""
        return self.fn.run(*args, grid=grid, **self._apply(args, kwargs))

    def warmup(self, *args: Any, grid: Any = None, **kwargs: Any) -> Any:
        """Compile with the heuristic values added, without launching."""
        return self.fn.warmup(*args, grid=grid, **self._apply(args, kwargs))

    def explain(self, *args: Any, **kwargs: Any) -> str:
        """``explain()`` with the heuristic values added."""
        kwargs.pop("grid", None)
        return self.fn.explain(*args, **self._apply(args, kwargs))


def heuristics(values: dict[str, Callable[[dict[str, Any]], Any]]) -> Callable[[Any], Heuristics]:
    """Decorator: ``@heuristics({"BLOCK": lambda args: enceladus.next_power_of_2(args["n"])})`` sets
    constexprs from the launch's arguments (a dict of every argument by name)."""

    def decorator(fn: Any) -> Heuristics:
        return Heuristics(fn, _arg_names(fn), values)

    return decorator


def _same_as_earlier(configs: list[Config], identity: Callable[[Config], tuple]) -> dict[Config, Config]:
    """Each config whose ``identity`` equals an earlier config's, mapped to that earlier one (not timed again);
    a config whose identity cannot be computed or hashed is left out, so it is timed."""
    seen: dict[tuple, Config] = {}
    same: dict[Config, Config] = {}
    for c in configs:
        try:
            ident = identity(c)
            hash(ident)
        except Exception:  # noqa: BLE001 - no identity: time it
            continue
        if ident in seen:
            same[c] = seen[ident]
        else:
            seen[ident] = c
    return same
