"""File → Change database key… and File → Back up profile…: the window's faces of
core/store/custody.py (the command line's are `lumen key change` and `lumen backup`).
A restore goes into a profile without a database, so it is a command-line job
(`lumen --profile NEW restore FILE`), said so in the backup's notice."""

from __future__ import annotations

from pathlib import Path
from typing import Callable

from PySide6.QtWidgets import (QDialog, QDialogButtonBox, QFileDialog, QFormLayout, QLabel,
                               QLineEdit, QMessageBox, QVBoxLayout, QWidget)

from ..core.errors import LumenError
from ..core.session import Session
from ..core.results import MIN_PASSPHRASE_LENGTH
from .messages import show_error, show_info
from .workers import SessionOp


def _password_field(name: str) -> QLineEdit:
    field = QLineEdit()
    field.setObjectName(name)
    field.setEchoMode(QLineEdit.EchoMode.Password)
    return field


class PassphraseDialog(QDialog):
    """A new passphrase, typed twice, and (when `check_current` is given) the current one,
    checked before the dialog closes."""

    def __init__(self, title: str, intro: str, parent: QWidget | None = None, *,
                 check_current: Callable[[str], str] | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("passphraseDialog")
        self.setWindowTitle(title)
        self.check_current = check_current
        text = QLabel(intro)
        text.setWordWrap(True)
        self.current = _password_field("currentPassphrase")
        self.new = _password_field("newPassphrase")
        self.new.setPlaceholderText(f"at least {MIN_PASSPHRASE_LENGTH} characters")
        self.repeat = _password_field("repeatPassphrase")
        form = QFormLayout()
        if check_current is not None:
            form.addRow("Current passphrase:", self.current)
        form.addRow("New passphrase:", self.new)
        form.addRow("Repeat:", self.repeat)
        self.error = QLabel()
        self.error.setObjectName("passphraseError")
        self.error.setStyleSheet("color: #b3261e")
        self.error.setWordWrap(True)
        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Ok
                                   | QDialogButtonBox.StandardButton.Cancel)
        buttons.accepted.connect(self.accept)
        buttons.rejected.connect(self.reject)
        layout = QVBoxLayout(self)
        layout.addWidget(text)
        layout.addLayout(form)
        layout.addWidget(self.error)
        layout.addWidget(buttons)
        (self.current if check_current is not None else self.new).setFocus()

    def accept(self) -> None:
        if len(self.new.text()) < MIN_PASSPHRASE_LENGTH:
            self.error.setText(f"Use at least {MIN_PASSPHRASE_LENGTH} characters; a few "
                               "unrelated words work well.")
            return
        if self.new.text() != self.repeat.text():
            self.error.setText("The two new passphrases differ.")
            return
        if self.check_current is not None:
            problem = self.check_current(self.current.text())
            if problem:
                self.error.setText(problem)
                self.current.selectAll()
                return
        super().accept()


def current_passphrase_check(session: Session) -> Callable[[str], str]:
    """'' when `phrase` opens the session's database, else what to tell the user (a wrong
    try is noted as a failed unlock, like any other)."""
    def check(phrase: str) -> str:
        if not phrase:
            return "Enter the current passphrase."
        try:
            opens = session.records.opens_with(phrase)
        except LumenError as exc:
            return f"{exc.message} {exc.fix}"
        return "" if opens else "That is not the current passphrase."
    return check


def change_database_key(parent: QWidget, session: Session) -> None:
    if not session.is_open:
        return
    if session.records.key_source == "passphrase":
        dialog = PassphraseDialog(
            "Change the passphrase",
            "The database will be re-encrypted under the new passphrase; the old one will "
            "open nothing. It cannot be recovered: keep it safe. Close other Lumen windows "
            "first.", parent, check_current=current_passphrase_check(session))
        if dialog.exec() != QDialog.DialogCode.Accepted:
            return
        phrase = dialog.new.text()
    else:
        answer = QMessageBox.question(
            parent, "Rotate the database key",
            "Re-encrypt the database under a new random key in the OS keyring? The old key is "
            "removed and will open nothing. Close other Lumen windows first.")
        if answer != QMessageBox.StandardButton.Yes:
            return
        phrase = None
    try:
        session.records.change_key(phrase)
    except LumenError as exc:
        show_error(parent, exc)
        return
    show_info(parent, "Database key changed",
              "The database is now encrypted under the new "
              + ("passphrase." if phrase else "key in the OS keyring."))


def back_up_profile(parent: QWidget, session: Session, on_done: Callable[[dict], None] | None = None,
                    destination: Path | None = None) -> None:
    if not session.is_open:
        return
    if destination is None:
        # The save dialog itself asks before a file is replaced.
        chosen, _ = QFileDialog.getSaveFileName(parent, "Back up Lumen's profile",
                                                str(Path.home() / "lumen-backup.db"),
                                                "Lumen backup (*.db)")
        if not chosen:
            return
        destination = Path(chosen)
        asked = True
    else:
        asked = False
    try:  # before anything is asked: a target that is refused whatever the answer
        session.records.check_backup_target(destination, force=True)
    except LumenError as exc:
        show_error(parent, exc)
        return
    if destination.exists() and not asked:
        answer = QMessageBox.question(
            parent, "Replace the file?",
            f"{destination} exists already. Replace it with the new backup?",
            QMessageBox.StandardButton.Yes | QMessageBox.StandardButton.No,
            QMessageBox.StandardButton.No)
        if answer != QMessageBox.StandardButton.Yes:
            return
    # Replacing was agreed to: here, or by the save dialog, which asks itself.
    force = True
    dialog = PassphraseDialog(
        "A passphrase for the backup",
        "The backup holds patient text, encrypted with a passphrase of its own. Keep it "
        "apart from the backup file: without it the backup cannot be restored.", parent)
    if dialog.exec() != QDialog.DialogCode.Accepted:
        return
    records = session.records

    def work(progress, cancel):
        return records.backup(destination, dialog.new.text(), force=force)

    def done(summary: dict) -> None:
        rows = sum(summary["tables"].values())
        show_info(parent, "Backup written",
                  f"{summary['path']} was read back whole: it holds {rows} rows and {', '.join(summary['files']) or 'no'} "
                  "profile files. To restore it, on this or another workstation: "
                  "lumen --profile NEW_FOLDER restore FILE.")
        if on_done is not None:
            on_done(summary)

    SessionOp(parent, work, name="Backup").success(done).run_in_background()
