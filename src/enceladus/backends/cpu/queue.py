"""A command queue for the cpu backend: one worker thread runs submitted launches in order.

Like an ``MTLCommandQueue``: ``submit`` returns at once; ``synchronize`` waits for everything submitted
so far. The first error raised by a job is kept (with the kernel's name in its message) and handed
to the caller by ``take_error`` at the next synchronization or launch; later jobs still run, as
later command buffers do on a GPU, and the queue stays usable.
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable
from typing import Any


class CpuQueue:
    """An in-order queue of launches executed by a daemon worker thread."""

    def __init__(self, name: str = "enceladus-stream") -> None:
        self._jobs: queue.SimpleQueue[tuple[Any, Any, Any]] = queue.SimpleQueue()
        self.error: BaseException | None = None  # first failure not yet reported
        self._submitted = 0  # written by the submitting threads only
        self._done = 0  # written by the worker only
        self._lock = threading.Lock()
        self._thread = threading.Thread(target=self._work, name=name, daemon=True)
        self._thread.start()

    def submit(self, run: Callable[[Any], None], packet: Any, keepalive: Any = None) -> None:
        """Queue ``run(packet)``; ``keepalive`` (e.g. the argument Tensors) lives until it has run."""
        with self._lock:  # several threads may submit to one queue
            self._submitted += 1
            self._jobs.put((run, packet, keepalive))

    @property
    def idle(self) -> bool:
        """True when every submitted job has finished."""
        return self._done == self._submitted

    def synchronize(self) -> None:
        """Wait until every job submitted so far has run (errors stay in ``error``)."""
        if self._done == self._submitted:
            return
        done = threading.Event()
        self.submit(_set_event, done)
        done.wait()

    def take_error(self) -> BaseException | None:
        """The first error since the last call, cleared."""
        with self._lock:
            err, self.error = self.error, None
        return err

    def _work(self) -> None:
        get = self._jobs.get
        while True:
            run, packet, keepalive = get()
            try:
                run(packet)
            except BaseException as exc:  # noqa: BLE001 - any failure is reported at the next sync
                with self._lock:
                    if self.error is None:
                        self.error = exc
            finally:
                del keepalive
                self._done += 1


def _set_event(event: threading.Event) -> None:
    event.set()
