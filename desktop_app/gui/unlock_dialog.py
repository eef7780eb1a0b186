"""Asks for the database passphrase where there is no OS keyring, or sets one up
on first start.  A wrong passphrase is said so in the dialog, which stays open."""

from __future__ import annotations

from PySide6.QtWidgets import (QDialog, QDialogButtonBox, QFormLayout, QLabel, QLineEdit,
                               QVBoxLayout, QWidget)

from ..core.errors import LumenError, WrongKeyError
from ..core import startup
from ..core.results import MIN_PASSPHRASE_LENGTH, Paths, Store


class UnlockDialog(QDialog):
    def __init__(self, paths: Paths, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.paths = paths
        self.store: Store | None = None
        self.creating = startup.database_state(paths).is_new
        self.setObjectName("unlockDialog")
        self.setWindowTitle("Set a passphrase for Lumen" if self.creating else "Unlock Lumen")
        intro = QLabel(
            "Lumen keeps patient text in an encrypted database. This computer has no keyring "
            "to hold its key, so choose a passphrase. It cannot be recovered: keep it safe."
            if self.creating else
            "Enter the passphrase of Lumen's encrypted database.")
        intro.setWordWrap(True)
        self.passphrase = QLineEdit()
        self.passphrase.setObjectName("passphrase")
        self.passphrase.setEchoMode(QLineEdit.EchoMode.Password)
        self.repeat = QLineEdit()
        self.repeat.setObjectName("repeat")
        self.repeat.setEchoMode(QLineEdit.EchoMode.Password)
        form = QFormLayout()
        form.addRow("Passphrase:", self.passphrase)
        if self.creating:
            self.passphrase.setPlaceholderText(f"at least {MIN_PASSPHRASE_LENGTH} characters")
            form.addRow("Repeat:", self.repeat)
        self.error = QLabel()
        self.error.setObjectName("unlockError")
        self.error.setStyleSheet("color: #b3261e")
        self.error.setWordWrap(True)
        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Ok
                                   | QDialogButtonBox.StandardButton.Cancel)
        buttons.button(QDialogButtonBox.StandardButton.Ok).setText(
            "Create" if self.creating else "Unlock")
        buttons.accepted.connect(self.accept)
        buttons.rejected.connect(self.reject)
        layout = QVBoxLayout(self)
        layout.addWidget(intro)
        layout.addLayout(form)
        layout.addWidget(self.error)
        layout.addWidget(buttons)
        self.passphrase.setFocus()

    def accept(self) -> None:
        phrase = self.passphrase.text()
        if not phrase:
            self.error.setText("Enter the passphrase.")
            return
        if self.creating and phrase != self.repeat.text():
            self.error.setText("The two passphrases differ.")
            return
        try:
            self.store = startup.open_records(self.paths, phrase)
        except WrongKeyError:
            self.error.setText("That passphrase does not open the database. Nothing was changed; "
                               "try again.")
            self.passphrase.selectAll()
            return
        except LumenError as exc:
            self.error.setText(f"{exc.message} {exc.fix}")
            return
        super().accept()
