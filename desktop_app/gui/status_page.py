"""The first page: the doctor's findings (models, database, offline status)."""

from __future__ import annotations

from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QBrush, QColor, QKeySequence, QShortcut
from PySide6.QtWidgets import (QHBoxLayout, QHeaderView, QLabel, QPushButton, QTableWidget,
                               QTableWidgetItem, QVBoxLayout, QWidget)

from ..core.doctor import DoctorReport, run_doctor
from ..core.session import Session
from .messages import show_error
from .progress_bar import TaskProgress
from .workers import run_in_background

_STATUS_TEXT = {"ok": "OK", "warn": "Note", "fail": "Problem"}
_STATUS_COLOUR = {"ok": "#1b7a3a", "warn": "#9a6700", "fail": "#b3261e"}


class StatusPage(QWidget):
    checked = Signal(object)  # DoctorReport

    def __init__(self, session: Session, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.session = session
        self.report: DoctorReport | None = None
        self.summary = QLabel("Checking this installation…")
        self.summary.setObjectName("statusSummary")
        self.summary.setWordWrap(True)
        font = self.summary.font()
        font.setPointSize(font.pointSize() + 3)
        self.summary.setFont(font)
        self.rerun = QPushButton("Check again")
        self.rerun.setToolTip("Run every check again (F5)")
        # clicked(bool) would land in measure_speed: call without arguments.
        self.rerun.clicked.connect(lambda: self.run_checks())
        QShortcut(QKeySequence("F5"), self, lambda: self.run_checks())
        self.table = QTableWidget(0, 4)
        self.table.setObjectName("findingsTable")
        self.table.setHorizontalHeaderLabels(["Status", "Check", "Finding", "What to do"])
        self.table.verticalHeader().hide()
        self.table.setEditTriggers(QTableWidget.EditTrigger.NoEditTriggers)
        self.table.setWordWrap(True)
        header = self.table.horizontalHeader()
        header.setSectionResizeMode(0, QHeaderView.ResizeMode.ResizeToContents)
        header.setSectionResizeMode(1, QHeaderView.ResizeMode.ResizeToContents)
        header.setSectionResizeMode(2, QHeaderView.ResizeMode.Stretch)
        header.setSectionResizeMode(3, QHeaderView.ResizeMode.Stretch)
        self.progress = TaskProgress()
        top = QHBoxLayout()
        top.addWidget(self.summary, 1)
        top.addWidget(self.rerun)
        layout = QVBoxLayout(self)
        layout.addLayout(top)
        layout.addWidget(self.progress)
        layout.addWidget(self.table, 1)
        note = QLabel("Lumen runs entirely on this computer: no text, question or answer is "
                      "sent anywhere. Patient text is kept only in the encrypted database.")
        note.setWordWrap(True)
        layout.addWidget(note)

    def run_checks(self, measure_speed: bool = True) -> None:
        if not self.rerun.isEnabled():
            return
        self.rerun.setEnabled(False)
        self.summary.setText("Checking this installation…")
        session = self.session
        task = run_in_background(
            lambda progress, cancel: run_doctor(session.paths, session.settings,
                                                store=session.store, runtime=session.runtime,
                                                measure_speed=measure_speed,
                                                progress=progress, cancel=cancel),
            on_success=self.show_report, on_error=self._failed,
            on_progress=self.progress.update_progress)
        self.progress.track(task, "Checking…")

    def _failed(self, exc: BaseException) -> None:
        self.progress.finish()
        self.rerun.setEnabled(True)
        self.summary.setText("The checks did not finish.")
        show_error(self, exc, log_file=str(self.session.paths.log_file))

    def show_report(self, report: DoctorReport) -> None:
        self.progress.finish()
        self.rerun.setEnabled(True)
        self.report = report
        self.table.setRowCount(len(report.findings))
        for row, finding in enumerate(report.findings):
            status = QTableWidgetItem(_STATUS_TEXT[finding.status])
            status.setForeground(QBrush(QColor(_STATUS_COLOUR[finding.status])))
            status.setData(Qt.ItemDataRole.UserRole, finding.status)
            cells = [status, QTableWidgetItem(f"{finding.area}: {finding.check}"),
                     QTableWidgetItem(finding.detail),
                     QTableWidgetItem(finding.fix if finding.status != "ok" else "")]
            for column, item in enumerate(cells):
                item.setToolTip(finding.fix or finding.detail)
                self.table.setItem(row, column, item)
        self.table.resizeRowsToContents()
        failures = report.failures()
        self.summary.setText("Lumen is ready: every check passed." if not failures else
                             f"{len(failures)} problem(s) need attention: see 'What to do'.")
        self.checked.emit(report)
