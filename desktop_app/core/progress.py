"""Progress reporting and cancellation for long work, with no GUI dependency.

Core functions that take a while accept `progress` (a callable taking a
`ProgressReport`) and `cancel` (a `CancelToken`).  The GUI turns reports into
Qt signals and wires its Cancel button to the token; the command line prints
them.
"""

from __future__ import annotations

import threading
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Callable, Iterator, Optional

from .errors import Cancelled


@dataclass(frozen=True)
class ProgressReport:
    done: int
    total: int  # 0 when unknown
    message: str = ""


ProgressCallback = Optional[Callable[[ProgressReport], None]]


class CancelToken:
    """Set from any thread; checked by the worker at safe points."""

    def __init__(self) -> None:
        self._event = threading.Event()
        self.reason = ""  # "quit": the window is closing (a run is then interrupted, not paused)
        self._listeners: list[Callable[[], None]] = []
        self._lock = threading.Lock()

    def cancel(self, reason: str = "") -> None:
        self.reason = self.reason or reason
        with self._lock:
            self._event.set()
            listeners = list(self._listeners)
        for listener in listeners:
            listener()

    @contextmanager
    def listening(self, listener: Callable[[], None]) -> Iterator[None]:
        """Within the block, `listener()` is called when the token is cancelled (at once if
        it is already): how a cancel reaches code that cannot poll the token, such as
        llama.cpp's computation (LlamaModel's abort flag).  It may be called twice."""
        with self._lock:
            self._listeners.append(listener)
            cancelled = self._event.is_set()
        if cancelled:
            listener()
        try:
            yield
        finally:
            with self._lock:
                self._listeners.remove(listener)

    @property
    def cancelled(self) -> bool:
        return self._event.is_set()

    def raise_if_cancelled(self) -> None:
        if self._event.is_set():
            raise Cancelled()


def report(progress: ProgressCallback, done: int, total: int, message: str = "") -> None:
    if progress is not None:
        progress(ProgressReport(done, total, message))


@dataclass(frozen=True)
class Job:
    """The work a thread is doing, by the name a user knows it by ("Simplify")."""

    name: str
    progress: ProgressCallback = None
    cancel: CancelToken | None = None


_current = threading.local()


@contextmanager
def job(name: str, progress: ProgressCallback = None,
        cancel: CancelToken | None = None) -> Iterator[Job]:
    """Name the work done in this thread: a task that must wait for a model another task
    holds then says what it waits for ("Waiting for the model (Simplify is running)")
    through this job's progress, and its Cancel still works while it waits."""
    previous = getattr(_current, "job", None)
    _current.job = Job(name, progress, cancel)
    try:
        yield _current.job
    finally:
        _current.job = previous


def current_job() -> Job | None:
    return getattr(_current, "job", None)
