"""Streams: in-order queues of asynchronous launches (one ``MTLCommandQueue`` each on Metal).

    s = enceladus.Stream()
    with s:                                  # launches on Tensors inside go to s
        kernel[grid](x, y, out, n, BLOCK=256)
    s.synchronize()                          # or enceladus.synchronize(): every stream

Launches whose array arguments are all ``enceladus.Tensor`` are queued and return at once. Launches
with NumPy arrays (or torch CPU tensors) are synchronous: they first wait for every stream, then run
on the calling thread, so their results are in the arrays when the call returns. An error raised by
a queued kernel is raised, with the kernel's name, by the next synchronization or launch on that
stream; the stream stays usable.
"""

from __future__ import annotations

import atexit
import contextlib
import threading
import weakref
from typing import Any

from .backend import get_backend


class Stream:
    """An in-order queue of kernel launches on the current backend."""

    def __init__(self) -> None:
        self._queue = get_backend().new_queue()
        _streams.add(self)

    @property
    def queue(self) -> Any:
        """The backend's queue object (``submit``, ``synchronize``, ``error``, ``take_error``)."""
        return self._queue

    def synchronize(self) -> None:
        """Wait for every launch queued so far; raise the first error of a queued kernel, if any."""
        self._queue.synchronize()
        self.raise_pending()

    def query(self) -> bool:
        """True when every queued launch has finished."""
        return bool(self._queue.idle)

    def raise_pending(self) -> None:
        """Raise (and clear) the first error of an already-finished queued kernel, if there is one."""
        err = self._queue.take_error()
        if err is not None:
            raise err

    def __enter__(self) -> Stream:
        _local.stack = (*_local.stack, self)
        return self

    def __exit__(self, *exc: Any) -> None:
        _local.stack = _local.stack[:-1]

    def __repr__(self) -> str:
        return f"<enceladus.Stream {'idle' if self.query() else 'busy'}>"


class _Local(threading.local):
    """Per thread: ``stack``, the ``with stream:`` blocks entered (innermost last). The empty default is a class
    attribute, so that reading it in a thread that entered none raises nothing: ``getattr(local, name, None)``
    on a missing attribute of a plain ``threading.local`` formats and discards an AttributeError (~1 us, on
    every launch)."""

    stack: tuple[Stream, ...] = ()


_streams: weakref.WeakSet[Stream] = weakref.WeakSet()
_local = _Local()
_default: Stream | None = None
_default_lock = threading.Lock()


def default_stream() -> Stream:
    """The stream used outside any ``with stream:`` block (created on first use)."""
    global _default
    if _default is None:
        with _default_lock:
            if _default is None:
                _default = Stream()
    return _default


def current_stream() -> Stream:
    """The innermost ``with stream:`` of this thread, else the default stream."""
    stack = _local.stack
    return stack[-1] if stack else (_default or default_stream())


def existing_stream() -> Stream | None:
    """``current_stream()`` if it exists already (None before the first asynchronous launch): synchronous
    launches check it for a pending error without creating the default stream and its worker."""
    stack = _local.stack
    return stack[-1] if stack else _default


def synchronize() -> None:
    """Wait for every stream's queued launches; raise the first error of a queued kernel, if any."""
    errors = []
    for s in list(_streams):
        s._queue.synchronize()
        err = s._queue.take_error()
        if err is not None:
            errors.append(err)
    if errors:
        raise errors[0]


def wait_all_idle() -> None:
    """Wait for every stream without raising (errors stay pending); used before synchronous launches."""
    for s in list(_streams):
        q = s._queue
        if not q.idle:
            q.synchronize()


@atexit.register
def _drain_at_exit() -> None:
    # Daemon workers must not run kernels while the interpreter tears down the arrays they use.
    with contextlib.suppress(Exception):
        wait_all_idle()
