"""The first page: the doctor's findings (models, database, offline status)."""

from __future__ import annotations

from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QBrush, QColor
from PySide6.QtWidgets import (QCheckBox, QHBoxLayout, QHeaderView, QLabel, QMessageBox,
                               QPushButton, QTableWidget, QTableWidgetItem, QVBoxLayout, QWidget)

from ..core.results import DoctorReport, OfflineVerification, TourReport, finding_meaning
from ..core.errors import Cancelled
from ..core.session import Session
from .messages import show_error
from .progress_bar import TaskProgress
from .shortcuts import keyboard_shortcut
from .workers import SessionOp

_STATUS_TEXT = {"ok": "OK", "warn": "Note", "fail": "Problem"}
_PLAIN_FINDING = {"ok": "Works."}  # an OK finding's technical detail is one click away
_STATUS_COLOUR = {"ok": "#1b7a3a", "warn": "#9a6700", "fail": "#b3261e"}


# What the window says and offers for a finding the command line would fix with a command.
ACTIONS = {
    "restore-models": ("Restore embedded models",
                       "Press the button: Lumen copies its embedded models into place again."),
    "verify-models": ("Verify model files", "Press the button to check every model file's "
                      "sha256 on the Models tab, then choose another generator model there."),
    "add-model": ("Add a model…", "Press the button and choose the model's GGUF file."),
    "verify-offline": ("Verify offline…", "Delete the file(s) named, then press the button "
                       "to check this installation."),
    "import-glossary": ("Import topics…", "Optional: press the button and choose NLM's "
                        "mplus_topics file to add MedlinePlus topics to the glossary."),
    "make-private": ("Make private", "Press the button: Lumen's folders and files become "
                     "this account's only."),
}


class StatusPage(QWidget):
    checked = Signal(object)  # DoctorReport
    verified = Signal(object)  # OfflineVerification
    action_requested = Signal(str)  # an ACTIONS key the main window carries out
    models_restored = Signal(object)  # the provision results

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
        keyboard_shortcut(self, "F5", lambda: self.run_checks(), "Check again")
        self.verify = QPushButton("Verify offline…")
        self.verify.setObjectName("verifyOffline")
        self.verify.setToolTip(
            "Run every feature once in watched processes and show that nothing tries to reach "
            "another machine, from any library (takes a few minutes; Ctrl+Shift+V)")
        self.verify.clicked.connect(lambda: self.run_verification())
        keyboard_shortcut(self, "Ctrl+Shift+V", lambda: self.run_verification(), "Verify offline")
        self.verification: TourReport | None = None
        self._quick = False
        self.table = QTableWidget(0, 5)
        self.table.setObjectName("findingsTable")
        self.table.setHorizontalHeaderLabels(["Status", "What is checked", "Finding", "What to do", ""])
        self.table.verticalHeader().hide()
        self.table.setEditTriggers(QTableWidget.EditTrigger.NoEditTriggers)
        self.table.setWordWrap(True)
        header = self.table.horizontalHeader()
        header.setSectionResizeMode(0, QHeaderView.ResizeMode.ResizeToContents)
        header.setSectionResizeMode(1, QHeaderView.ResizeMode.ResizeToContents)
        header.setSectionResizeMode(2, QHeaderView.ResizeMode.Stretch)
        header.setSectionResizeMode(3, QHeaderView.ResizeMode.Stretch)
        header.setSectionResizeMode(4, QHeaderView.ResizeMode.ResizeToContents)
        self.technical = QCheckBox("Show technical details")
        self.technical.setObjectName("technicalDetails")
        self.technical.setToolTip("Each check's technical name and what it measured (speeds, "
                                  "versions, hashes), for IT")
        self.technical.toggled.connect(lambda _on: self.report and self._fill(self.report))
        self.progress = TaskProgress()
        top = QHBoxLayout()
        top.addWidget(self.summary, 1)
        top.addWidget(self.verify)
        top.addWidget(self.rerun)
        layout = QVBoxLayout(self)
        layout.addLayout(top)
        layout.addWidget(self.progress)
        layout.addWidget(self.table, 1)
        layout.addWidget(self.technical)
        note = QLabel("Lumen runs entirely on this computer: no text, question or answer is "
                      "sent anywhere. Patient text is kept only in the encrypted database. "
                      "'Verify offline' proves it for this installation, below Python too.")
        note.setWordWrap(True)
        layout.addWidget(note)

    def run_checks(self, measure_speed: bool = True) -> None:
        if not self.rerun.isEnabled():
            return
        self.summary.setText("Checking this installation…")
        session = self.session
        SessionOp(self, lambda progress, cancel: session.check_installation(
            measure_speed=measure_speed, progress=progress, cancel=cancel),
            progress=self.progress, message="Checking…", disable=(self.rerun,),
            name="the Status page's checks").success(self.show_report).failure(
            self._failed).run_in_background()

    def restore_models(self, then_check: bool = True) -> None:
        """Copy the embedded models into this profile's models folder, with progress and
        Cancel here, then check again (on first start, and from a finding's button)."""
        if not self.rerun.isEnabled():
            return
        self.summary.setText("Copying Lumen's embedded models into place…")
        session = self.session

        def done(results) -> None:
            self.models_restored.emit(results)
            if then_check:
                self.run_checks()

        SessionOp(self, lambda progress, cancel: session.models.provision(progress, cancel),
                  progress=self.progress, message="Restoring the embedded models…",
                  disable=(self.rerun,), name="restoring the embedded models",
                  ).success(done).failure(self._failed).run_in_background()

    def _failed(self, exc: BaseException) -> None:
        self.summary.setText("The checks did not finish.")
        show_error(self, exc, log_file=str(self.session.paths.log_file))

    def show_report(self, report: DoctorReport) -> None:
        self.report = report
        self._fill(report)
        failures = report.failures()
        self.summary.setText("Lumen is ready: every check passed." if not failures else
                             f"{len(failures)} problem(s) need attention: see 'What to do'.")
        self.checked.emit(report)

    def _fill(self, report: DoctorReport) -> None:
        self.table.setRowCount(len(report.findings))
        for row, finding in enumerate(report.findings):
            status = QTableWidgetItem(_STATUS_TEXT[finding.status])
            status.setForeground(QBrush(QColor(_STATUS_COLOUR[finding.status])))
            status.setData(Qt.ItemDataRole.UserRole, finding.status)
            offered = ACTIONS.get(finding.action) if finding.status != "ok" else None
            what_to_do = offered[1] if offered else (finding.fix if finding.status != "ok" else "")
            technical = self.technical.isChecked()
            # A plain sentence first; the check's name and an OK finding's measurements
            # (speeds, versions, vectors) only with "Show technical details" or on hover.
            check = QTableWidgetItem(f"{finding.area}: {finding.check}" if technical
                                     else finding_meaning(finding))
            shown = finding.detail if technical else _PLAIN_FINDING.get(finding.status,
                                                                         finding.detail)
            cells = [status, check, QTableWidgetItem(shown), QTableWidgetItem(what_to_do)]
            for column, item in enumerate(cells):
                item.setToolTip(what_to_do or f"{finding.area}: {finding.check}. {finding.detail}")
                self.table.setItem(row, column, item)
            self.table.removeCellWidget(row, 4)
            if offered:
                button = QPushButton(offered[0])
                button.setObjectName(f"action-{finding.action}")
                button.setToolTip(what_to_do)
                button.clicked.connect(lambda _c=False, a=finding.action: self.action_requested.emit(a))
                self.table.setCellWidget(row, 4, button)
        self.table.resizeRowsToContents()

    # ---- the offline proof (core/netprobe.py; `lumen verify-offline`) ----

    def run_verification(self, quick: bool = False) -> None:
        if not self.verify.isEnabled():
            return
        self.summary.setText("Verifying that nothing leaves this computer…")
        self._quick = quick
        session = self.session
        SessionOp(self, lambda progress, cancel: session.verify_offline(
            quick=quick, progress=progress, cancel=cancel),
            progress=self.progress, message="Verifying offline…",
            disable=(self.verify, self.rerun)).success(self.show_verification).failure(
            self._verification_failed).run_in_background()

    def _verification_failed(self, exc: BaseException) -> None:
        self.summary.setText("Offline verification cancelled." if isinstance(exc, Cancelled)
                             else "The offline verification did not finish.")
        show_error(self, exc, log_file=str(self.session.paths.log_file))

    def show_verification(self, verification: OfflineVerification) -> None:
        tour = self.verification = verification.tour
        levels = "the C library" + (" and system calls" if tour.syscall_level else "")
        if tour.ok:
            self.summary.setText(f"Verified offline: nothing tried to leave this computer "
                                 f"({len(tour.steps)} features watched at {levels}).")
        else:
            self.summary.setText("Offline verification FAILED: see the details.")
        lines = [f"{'OK' if step.ok else 'FAILED'}  {step.name} ({step.seconds:.0f} s)"
                 + "".join(f"\n      attempt: {event.call} {event.target} ({event.level})"
                           for event in step.events)
                 for step in tour.steps]
        lines += [f"Lumen's guard refused {event.call} to {event.target}"
                  for event in tour.guard_refusals]
        lines += [f"Written outside Lumen's folders: ~/{name}" for name in tour.files_outside]
        box = QMessageBox(QMessageBox.Icon.Information if tour.ok else QMessageBox.Icon.Critical,
                          "Offline verification",
                          ("Nothing tried to leave this computer, and nothing was written outside "
                           "Lumen's folders." if tour.ok else
                           "Something tried to leave this computer, or wrote outside Lumen's "
                           "folders. Send the details to the Lumen developers; until then run "
                           "Lumen with LUMEN_OFFLINE_STRICT=1."), parent=self)
        box.setInformativeText(" ".join([f"Watched at {levels}, each feature in its own process.",
                                         *verification.server_lines()]))
        box.setDetailedText("\n".join(lines))
        box.setObjectName("verificationResult")
        box.setModal(False)
        box.show()
        self.verified.emit(verification)
