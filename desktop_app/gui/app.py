"""Starting the window: unlock the database, then show the main window."""

from __future__ import annotations

import logging
import os
import sys
from typing import NoReturn

from ..core import startup
from ..core.errors import LumenError, PassphraseRequired
from ..core.results import Paths, Settings
from ..core.session import Session

log = logging.getLogger(__name__)


def _install_excepthook(log_file: str) -> None:
    """An unexpected error shows a plain dialog; its traceback goes to the log only."""
    from .messages import show_error

    def hook(kind, value, traceback) -> None:
        from PySide6.QtWidgets import QApplication

        show_error(QApplication.activeWindow(), value, log_file=log_file)  # logs it safely
    sys.excepthook = hook


def application():
    from PySide6.QtWidgets import QApplication

    from .garbage import collect_garbage_on_gui_thread

    app = QApplication.instance() or QApplication(sys.argv[:1])
    app.setApplicationName("Lumen")
    app.setApplicationDisplayName("Lumen")
    app.setOrganizationName("Lumen")
    collect_garbage_on_gui_thread(app)  # a worker must never destroy the window's objects
    return app


def unlock(paths: Paths):
    """The open store, after asking for a passphrase if one is needed; None if the user gives up."""
    from .messages import show_error
    from .unlock_dialog import UnlockDialog

    if not startup.database_state(paths).needs_passphrase:
        try:
            return startup.open_records(paths)
        except PassphraseRequired:
            pass
        except LumenError as exc:
            show_error(None, exc, title="Lumen cannot open its database")
            return None
    dialog = UnlockDialog(paths)
    if dialog.exec() and dialog.store is not None:
        return dialog.store
    return None


def run_gui(paths: Paths, settings: Settings) -> int:
    if (sys.platform.startswith("linux") and not os.environ.get("QT_QPA_PLATFORM")
            and not os.environ.get("DISPLAY") and not os.environ.get("WAYLAND_DISPLAY")):
        raise LumenError(
            "There is no screen to open Lumen's window on (no DISPLAY or WAYLAND_DISPLAY).",
            "Start Lumen from a desktop session, use the 'lumen' commands (see 'lumen --help'), "
            "or set QT_QPA_PLATFORM=offscreen to run the window without a screen.")
    app = application()
    _install_excepthook(str(paths.log_file))
    store = unlock(paths)
    if store is None:
        return 2
    from .main_window import MainWindow
    from .messages import show_error

    session = Session(paths, settings, store)
    try:
        session.audit("app.started", {})
        window = MainWindow(session)
    except LumenError as exc:
        session.close()
        show_error(None, exc, title="Lumen cannot start")
        return 2
    window.show()
    log.info("Main window shown")
    window.first_checks()
    return leave(window, app.exec())


def leave(window, code: int) -> NoReturn:
    """End the process after the window closed: running jobs cancelled and waited for, the
    models unloaded and the database closed (closeEvent), the logs flushed; then exit at
    once. Python's own teardown would then free Qt and llama.cpp objects in an order
    PySide6 does not promise, which is where a quit after a run could die with "Fatal
    Python error: bool_dealloc"; nothing is left for it to do."""
    from .workers import cancel_all, wait_for_all

    window.close()  # a no-op when it closed already; else cancels and waits (closeEvent)
    cancel_all()
    wait_for_all(60000)
    window.session.close()
    log.info("Lumen closed (exit status %s)", code)
    logging.shutdown()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):
            pass
    os._exit(code)


def show_startup_error(exc: LumenError) -> None:
    """A start-up failure in a dialog too, for someone who launched Lumen from a menu."""
    if sys.platform.startswith("linux") and not (os.environ.get("DISPLAY")
                                                 or os.environ.get("WAYLAND_DISPLAY")):
        return  # no screen: the terminal message is all there is
    try:
        from .messages import show_error

        application()
        show_error(None, exc, title="Lumen cannot start")
    except Exception:
        log.warning("Could not show the start-up error in a window", exc_info=False)
