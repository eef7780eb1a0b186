"""How the window tells a user something went wrong: what happened and what to do,
never a traceback (that goes to the log file)."""

from __future__ import annotations

import logging

from PySide6.QtWidgets import QMessageBox, QWidget

from ..core.errors import Cancelled, LumenError
from ..core.startup import log_failure

log = logging.getLogger(__name__)


def error_text(exc: BaseException, log_file: str = "") -> tuple[str, str]:
    if isinstance(exc, LumenError):
        return exc.message, exc.fix
    log_failure(log, "Unexpected error", exc)
    where = f" Details are in the log file {log_file}." if log_file else ""
    return (f"Something went wrong ({type(exc).__name__}).",
            f"Try again; if it keeps happening, tell IT.{where}")


def show_error(parent: QWidget | None, exc: BaseException, *, title: str = "Lumen",
               log_file: str = "") -> None:
    if isinstance(exc, Cancelled):
        return
    message, fix = error_text(exc, log_file)
    box = QMessageBox(QMessageBox.Icon.Warning, title, message, QMessageBox.StandardButton.Ok, parent)
    if fix:
        box.setInformativeText(fix)
    box.setObjectName("errorDialog")
    if parent is not None:
        box.open()  # window-modal, does not block the event loop
    else:
        box.exec()


def show_info(parent: QWidget, title: str, text: str) -> QMessageBox:
    """A window-modal notice that does not block the event loop."""
    box = QMessageBox(QMessageBox.Icon.Information, title, text, QMessageBox.StandardButton.Ok, parent)
    box.setObjectName("infoDialog")
    box.open()
    return box
