"""Progress reporting and cancellation for long work, with no GUI dependency.

Core functions that take a while accept `progress` (a callable taking a
`ProgressReport`) and `cancel` (a `CancelToken`).  The GUI turns reports into
Qt signals and wires its Cancel button to the token; the command line prints
them.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import Callable, Optional

from .errors import Cancelled


@dataclass(frozen=True)
class ProgressReport:
    done: int
    total: int  # 0 when unknown
    message: str = ""

    @property
    def fraction(self) -> float | None:
        return self.done / self.total if self.total else None


ProgressCallback = Optional[Callable[[ProgressReport], None]]


class CancelToken:
    """Set from any thread; checked by the worker at safe points."""

    def __init__(self) -> None:
        self._event = threading.Event()

    def cancel(self) -> None:
        self._event.set()

    @property
    def cancelled(self) -> bool:
        return self._event.is_set()

    def raise_if_cancelled(self) -> None:
        if self._event.is_set():
            raise Cancelled()


def report(progress: ProgressCallback, done: int, total: int, message: str = "") -> None:
    if progress is not None:
        progress(ProgressReport(done, total, message))
