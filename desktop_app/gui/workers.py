"""Long core calls off the GUI thread.

`run_in_background` runs a core function on Qt's thread pool, passing it a
progress callback and a cancel token, and delivers the result, error or
progress back on the GUI thread through signals (in the spirit of Anki's
CollectionOp(...).run_in_background()).
"""

from __future__ import annotations

from typing import Any, Callable

from PySide6.QtCore import QObject, QRunnable, QThreadPool, Signal

from ..core.progress import CancelToken, ProgressReport, job



class _Signals(QObject):
    progress = Signal(object)
    succeeded = Signal(object)
    failed = Signal(object)


class BackgroundTask(QRunnable):
    def __init__(self, fn: Callable[..., Any], name: str = "") -> None:
        super().__init__()
        self.fn = fn
        self.name = name  # what the user calls this work ("Simplify"), shown to tasks waiting for it
        self.signals = _Signals()
        self.cancel = CancelToken()
        self.silenced = False  # set when the window closes: nobody is left to tell
        self.setAutoDelete(False)

    def run(self) -> None:
        try:
            with job(self.name or "another task", self.signals.progress.emit, self.cancel):
                result = self.fn(progress=self.signals.progress.emit, cancel=self.cancel)
        except BaseException as exc:  # delivered to the GUI thread, shown there
            self.signals.failed.emit(exc)
        else:
            self.signals.succeeded.emit(result)


_running: set[BackgroundTask] = set()


def run_in_background(fn: Callable[..., Any], *, on_success: Callable[[Any], None],
                      on_error: Callable[[BaseException], None],
                      on_progress: Callable[[ProgressReport], None] | None = None,
                      name: str = "") -> BackgroundTask:
    """Start `fn(progress=..., cancel=...)` on the thread pool; returns the task (for cancel).
    `name` is what the user calls the work: a task that has to wait for a model this one
    holds says "Waiting for the model (NAME is running)"."""
    task = BackgroundTask(fn, name)
    _running.add(task)

    def finished_ok(result: Any) -> None:
        _running.discard(task)
        if not task.silenced:
            on_success(result)

    def finished_error(exc: BaseException) -> None:
        _running.discard(task)
        # A task stopped because the window is closing reports to nobody: its handlers would
        # read a database already closed and leave an orphan error dialog behind the window.
        if not task.silenced:
            on_error(exc)

    task.signals.succeeded.connect(finished_ok)
    task.signals.failed.connect(finished_error)
    if on_progress is not None:
        task.signals.progress.connect(on_progress)
    QThreadPool.globalInstance().start(task)
    return task


def cancel_all(reason: str = "") -> None:
    """Cancel every task; `reason` "quit" (the window closing) also silences their handlers."""
    for task in list(_running):
        task.silenced = task.silenced or reason == "quit"
        task.cancel.cancel(reason)


def wait_for_all(timeout_ms: int = 30000) -> bool:
    return QThreadPool.globalInstance().waitForDone(timeout_ms)


def show_failure(parent: Any, exc: BaseException) -> None:
    """The shared failure path: the error dialog (what went wrong, what to do, and the
    page's session's log file); nothing for a cancelled task."""
    from .messages import show_error

    session = getattr(parent, "session", None)
    show_error(parent, exc, log_file=str(session.paths.log_file) if session is not None else "")


class SessionOp:
    """One core call run off the GUI thread the way every page runs one (Anki's
    `CollectionOp(parent, op).success(...).run_in_background()`): the buttons named are
    disabled while it runs and enabled again after, progress goes to the page's
    `TaskProgress` (with Cancel), and a failure shows the shared error dialog, with the log
    file, unless the page gives its own handler (which can end with `show_failure`).
    `work(progress=..., cancel=...)`; `.progressed(...)` also sees each progress report
    (an estimate of the time left).  A page's own events (tokens as the model writes them)
    come through its EventBridge, not through here.

        SessionOp(self, work, progress=self.progress, message="Importing…",
                  disable=(self.import_button,)).success(self.imported).run_in_background()
    """

    def __init__(self, parent: Any, work: Callable[..., Any], *, progress: Any = None,
                 message: str = "", disable: tuple[Any, ...] = (), name: str = "") -> None:
        self.parent, self.work, self.progress = parent, work, progress
        self.message, self.disable, self.name = message, disable, name
        self._on_success: Callable[[Any], None] = lambda _result: None
        self._on_failure: Callable[[BaseException], None] | None = None
        self._on_progress: Callable[[ProgressReport], None] | None = None

    def success(self, handler: Callable[[Any], None]) -> "SessionOp":
        self._on_success = handler
        return self

    def failure(self, handler: Callable[[BaseException], None]) -> "SessionOp":
        self._on_failure = handler
        return self

    def progressed(self, handler: Callable[[ProgressReport], None]) -> "SessionOp":
        """Called with each progress report too, after the progress bar has shown it."""
        self._on_progress = handler
        return self

    def _progressed(self, update: ProgressReport) -> None:
        if self.progress is not None:
            self.progress.update_progress(update)
        if self._on_progress is not None:
            self._on_progress(update)

    def _settle(self) -> None:
        if self.progress is not None:
            self.progress.finish()
        for widget in self.disable:
            widget.setEnabled(True)

    def _succeeded(self, result: Any) -> None:
        self._settle()
        self._on_success(result)

    def _failed(self, exc: BaseException) -> None:
        self._settle()
        if self._on_failure is not None:
            self._on_failure(exc)
        else:
            show_failure(self.parent, exc)

    def run_in_background(self) -> BackgroundTask:
        for widget in self.disable:
            widget.setEnabled(False)
        task = run_in_background(
            self.work, on_success=self._succeeded, on_error=self._failed,
            on_progress=self._progressed if self.progress is not None
            or self._on_progress is not None else None, name=self.name)
        if self.progress is not None:
            self.progress.track(task, self.message)
        return task
