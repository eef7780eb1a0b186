"""Automatic logoff: after `auto_lock_minutes` without a key press or mouse use (or at
once with Ctrl+L), the window shows this screen in place of its tabs, so no patient text
is on display, until the passphrase is entered again (or, with the key in the OS
keyring, the key is read from it again).  Work in progress goes on behind it; locking
and unlocking are audited, a wrong passphrase as a failed unlock."""

from __future__ import annotations

from typing import Callable

from PySide6.QtCore import QEvent, QObject, QTimer, Signal
from PySide6.QtWidgets import (QApplication, QHBoxLayout, QLabel, QLineEdit, QPushButton,
                               QVBoxLayout, QWidget)

from ..core.errors import LumenError
from ..core.session import Session
from .key_dialogs import current_passphrase_check

_INPUT_EVENTS = {QEvent.Type.KeyPress, QEvent.Type.MouseButtonPress, QEvent.Type.MouseMove,
                 QEvent.Type.Wheel, QEvent.Type.TouchBegin}


class LockScreen(QWidget):
    unlocked = Signal()

    def __init__(self, session: Session, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.session = session
        self.setObjectName("lockScreen")
        title = QLabel("Lumen is locked")
        title.setStyleSheet("font-size:20px; font-weight:600")
        self.explanation = QLabel()
        self.explanation.setWordWrap(True)
        self.passphrase = QLineEdit()
        self.passphrase.setObjectName("lockPassphrase")
        self.passphrase.setEchoMode(QLineEdit.EchoMode.Password)
        self.passphrase.setPlaceholderText("Passphrase")
        self.passphrase.returnPressed.connect(self.try_unlock)
        self.unlock_button = QPushButton("Unlock")
        self.unlock_button.setObjectName("unlockButton")
        self.unlock_button.setDefault(True)
        self.unlock_button.clicked.connect(self.try_unlock)
        self.error = QLabel()
        self.error.setObjectName("lockError")
        self.error.setStyleSheet("color: #b3261e")
        self.error.setWordWrap(True)
        box = QVBoxLayout()
        box.addWidget(title)
        box.addWidget(self.explanation)
        row = QHBoxLayout()
        row.addWidget(self.passphrase, 1)
        row.addWidget(self.unlock_button)
        box.addLayout(row)
        box.addWidget(self.error)
        panel = QWidget()
        panel.setFixedWidth(460)  # wide enough for the explanation to wrap, not clip
        panel.setLayout(box)
        # Stretches around the panel, not an alignment flag: an aligned widget gets its
        # size hint, which leaves a wrapped label too short for its lines.
        middle = QHBoxLayout()
        middle.addStretch(1)
        middle.addWidget(panel)
        middle.addStretch(1)
        outer = QVBoxLayout(self)
        outer.addStretch(1)
        outer.addLayout(middle)
        outer.addStretch(2)

    def prepare(self, reason: str) -> None:
        needs_phrase = (self.session.is_open
                        and self.session.records.key_source == "passphrase")
        self.passphrase.setVisible(needs_phrase)
        self.passphrase.clear()
        self.error.clear()
        self.explanation.setText(
            f"{reason} Patient text is hidden; work in progress goes on. "
            + ("Enter the database passphrase to go on." if needs_phrase else
               "Unlock reads the database key from the OS keyring again."))
        (self.passphrase if needs_phrase else self.unlock_button).setFocus()

    def try_unlock(self) -> None:
        records = self.session.records
        key_source = records.key_source if self.session.is_open else None
        if key_source == "passphrase":
            problem = current_passphrase_check(self.session)(self.passphrase.text())
            if problem:
                self.error.setText(problem)
                self.passphrase.selectAll()
                return
        elif key_source == "keyring":
            try:
                records.check_keyring_key()
            except LumenError as exc:
                self.error.setText(f"{exc.message} {exc.fix}")
                return
        self.passphrase.clear()
        self.unlocked.emit()


class IdleWatch(QObject):
    """Calls `on_idle` after `minutes` with no input anywhere in the application."""

    def __init__(self, minutes: int, on_idle: Callable[[], None], parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.timer = QTimer(self)
        self.timer.setSingleShot(True)
        self.timer.timeout.connect(on_idle)
        self.set_minutes(minutes)
        QApplication.instance().installEventFilter(self)

    def set_minutes(self, minutes: int) -> None:
        self.minutes = minutes
        if minutes > 0:
            self.timer.start(minutes * 60_000)
        else:
            self.timer.stop()

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:
        if event.type() in _INPUT_EVENTS and self.minutes > 0:
            self.timer.start(self.minutes * 60_000)
        return False
