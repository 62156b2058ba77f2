"""``enceladus.knobs``: run-time switches, laid out as ``triton.knobs`` (Triton 3.9).

What Enceladus honours:

- ``knobs.runtime.launch_enter_hook`` / ``launch_exit_hook``: chains of hooks called around every launch with
  the launch's metadata (``hook(metadata)``; ``metadata.get()`` is a dict with ``name``, ``function``,
  ``stream`` and whatever the kernel's ``@jit(launch_metadata=fn)`` returns). Add with ``.add(fn)``, remove
  with ``.remove(fn)``, or assign a single function as older Triton releases did. With no hook set, launches
  cost nothing extra.
- ``knobs.runtime.interpret`` (``ENCELADUS_INTERPRET``), ``knobs.cache.dir`` (``ENCELADUS_CACHE_DIR``),
  ``knobs.autotuning.print`` / ``cache`` (``ENCELADUS_PRINT_AUTOTUNING`` / ``ENCELADUS_CACHE_AUTOTUNING``):
  the same switches as the environment variables, read and written through them.

Every other knob Triton has (``compilation``, ``language``, ``nvidia``, ``amd``, the load and JIT-cache
hooks...) can be read, set and scoped, and has no effect. ``with knobs.runtime.scope(): ...`` restores a
group's values (and its environment variables) on exit, as in Triton.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Generator
from contextlib import contextmanager
from typing import Any

# Called with no argument whenever the set of launch hooks goes from empty to non-empty or back
# (runtime/jit.py drops its launch fast paths so that launches reach the code that calls the hooks).
_listeners: list[Callable[[], None]] = []


def hooks_active() -> bool:
    """Whether any launch hook is set."""
    return bool(runtime.launch_enter_hook) or bool(runtime.launch_exit_hook)


def _changed() -> None:
    for listener in _listeners:
        listener()


class HookChain:
    """Hooks of one kind, called in order (``reversed=True``: last added first, as Triton's exit hooks)."""

    def __init__(self, reversed: bool = False):
        self.calls: list[Callable[..., Any]] = []
        self.reversed = reversed

    def add(self, func: Callable[..., Any]) -> None:
        """Add ``func`` (once)."""
        if not callable(func):
            raise TypeError(f"a launch hook must be callable, got {func!r}")
        if func not in self.calls:
            self.calls.append(func)
            _changed()

    def remove(self, func: Callable[..., Any]) -> None:
        """Remove ``func`` if present."""
        if func in self.calls:
            self.calls.remove(func)
            _changed()

    def __bool__(self) -> bool:
        return bool(self.calls)

    def __call__(self, *args: Any, **kwargs: Any) -> None:
        for call in (reversed(self.calls) if self.reversed else self.calls):
            call(*args, **kwargs)


class _EnvKnob:
    """A knob stored in an environment variable (so that the process and its children agree)."""

    def __init__(self, env: str, kind: type = str, default: Any = None):
        self.env, self.kind, self.default = env, kind, default

    def __get__(self, obj: Any, owner: Any = None) -> Any:
        if obj is None:
            return self
        raw = os.environ.get(self.env)
        if raw is None or raw == "":
            return self.default
        if self.kind is bool:
            return raw.strip().lower() in ("1", "true", "yes", "on")
        return raw

    def __set__(self, obj: Any, value: Any) -> None:
        if value is None:
            os.environ.pop(self.env, None)
        elif self.kind is bool:
            os.environ[self.env] = "1" if value else "0"
        else:
            os.environ[self.env] = str(value)

    def __delete__(self, obj: Any) -> None:
        os.environ.pop(self.env, None)


class base_knobs:  # noqa: N801 - Triton's names
    """A group of knobs; ``scope()`` restores it on exit."""

    def _env_knobs(self) -> list[_EnvKnob]:
        return [v for c in type(self).__mro__ for v in vars(c).values() if isinstance(v, _EnvKnob)]

    @property
    def knobs(self) -> dict[str, Any]:
        """Every knob of the group by name."""
        names = [k for c in type(self).__mro__ for k, v in vars(c).items() if isinstance(v, _EnvKnob)]
        return {**{k: getattr(self, k) for k in names}, **{k: v for k, v in self.__dict__.items()
                                                           if not k.startswith("_")}}

    def copy(self) -> base_knobs:
        """A copy of the group."""
        res = type(self)()
        res.__dict__.update(self.__dict__)
        return res

    def reset(self) -> base_knobs:
        """Back to the defaults."""
        for knob in self._env_knobs():
            os.environ.pop(knob.env, None)
        fresh = type(self)()
        self.__dict__.clear()
        self.__dict__.update(fresh.__dict__)
        return self

    @contextmanager
    def scope(self) -> Generator[None, None, None]:
        """Restore the group's values and environment variables on exit."""
        env = {k.env: os.environ.get(k.env) for k in self._env_knobs()}
        orig = dict(self.__dict__)
        try:
            yield
        finally:
            self.__dict__.clear()
            self.__dict__.update(orig)
            for k, v in env.items():
                if v is None:
                    os.environ.pop(k, None)
                else:
                    os.environ[k] = v
            _changed()


class _Namespace(base_knobs):
    """A group Enceladus accepts and ignores: any attribute can be set and read back."""

    def __init__(self, **defaults: Any):
        self.__dict__.update(defaults)

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        return None


class runtime_knobs(base_knobs):  # noqa: N801
    """Launch hooks (honoured) and the interpreter switch."""

    interpret = _EnvKnob("ENCELADUS_INTERPRET", bool, False)
    debug = _EnvKnob("ENCELADUS_DEBUG", bool, False)

    def __init__(self) -> None:
        self.__dict__["launch_enter_hook"] = HookChain()
        self.__dict__["launch_exit_hook"] = HookChain(reversed=True)
        self.__dict__["kernel_load_start_hook"] = HookChain()
        self.__dict__["kernel_load_end_hook"] = HookChain(reversed=True)
        self.__dict__["kernel_unload_hook"] = HookChain()
        self.__dict__["jit_cache_hook"] = None
        self.__dict__["jit_post_compile_hook"] = None
        self.__dict__["add_stages_inspection_hook"] = None
        self.__dict__["override_arch"] = None

    def __setattr__(self, name: str, value: Any) -> None:
        if name in ("launch_enter_hook", "launch_exit_hook"):
            if value is not None and not callable(value):
                raise TypeError(f"knobs.runtime.{name} must be callable or None, got {value!r}")
            if value is None:  # Triton < 3.9 style: None turns the hooks off
                value = HookChain(reversed=name == "launch_exit_hook")
        object.__setattr__(self, name, value)
        if name in ("launch_enter_hook", "launch_exit_hook"):
            _changed()


class cache_knobs(base_knobs):  # noqa: N801
    """Where compiled kernels are kept (``ENCELADUS_CACHE_DIR``)."""

    dir = _EnvKnob("ENCELADUS_CACHE_DIR")


class autotuning_knobs(base_knobs):  # noqa: N801
    """Autotuner output and its disk cache."""

    print = _EnvKnob("ENCELADUS_PRINT_AUTOTUNING", bool, False)
    cache = _EnvKnob("ENCELADUS_CACHE_AUTOTUNING", bool, False)


runtime = runtime_knobs()
cache = cache_knobs()
autotuning = autotuning_knobs()
compilation = _Namespace(override_arch=None, always_compile=False, enable_fp_fusion=True)
language = _Namespace(fp32_default=None, default_fp_fusion=True)
build = _Namespace()
redis = _Namespace()
nvidia = _Namespace()
amd = _Namespace()
proton = _Namespace()
