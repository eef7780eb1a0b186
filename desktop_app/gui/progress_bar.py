"""A progress bar with a Cancel button, for any background task."""

from __future__ import annotations

from PySide6.QtWidgets import QHBoxLayout, QLabel, QProgressBar, QPushButton, QWidget

from ..core.progress import ProgressReport
from .workers import BackgroundTask


class TaskProgress(QWidget):
    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        layout = QHBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        self.label = QLabel()
        self.bar = QProgressBar()
        self.bar.setMaximumWidth(260)
        self.cancel_button = QPushButton("Cancel")
        self.cancel_button.setToolTip("Stop this task (Esc)")
        self.cancel_button.setShortcut("Esc")
        layout.addWidget(self.label, 1)
        layout.addWidget(self.bar)
        layout.addWidget(self.cancel_button)
        self.cancel_button.clicked.connect(self._cancel)
        self._task: BackgroundTask | None = None
        self.hide()

    def track(self, task: BackgroundTask, message: str) -> None:
        self._task = task
        self.label.setText(message)
        self.bar.setRange(0, 0)  # busy until the first report
        self.cancel_button.setEnabled(True)
        self.show()

    def update_progress(self, update: ProgressReport) -> None:
        if update.message:
            self.label.setText(update.message)
        if update.total:
            self.bar.setRange(0, update.total)
            self.bar.setValue(update.done)

    def finish(self) -> None:
        self._task = None
        self.hide()

    def _cancel(self) -> None:
        if self._task is not None:
            self._task.cancel.cancel()
            self.label.setText("Cancelling…")
            self.cancel_button.setEnabled(False)
