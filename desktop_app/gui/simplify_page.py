"""The Simplify tab: the original summary and its plain-language handout side by side:
the medicines table, appointments and warning signs first (read from the summary's
facts), then each section, rewritten where the rewrite passed every check and the
summary's own words explained where none did; jargon in the original marked with
glossary definitions on hover; export to PDF/HTML/text, and printing."""

from __future__ import annotations

from pathlib import Path

from PySide6.QtGui import QKeySequence
from PySide6.QtWidgets import (QFileDialog, QHBoxLayout, QLabel, QPushButton, QSplitter,
                               QStackedWidget, QVBoxLayout, QWidget)

from ..core.results import TRACE_NOTICE as NOTICE
from ..core.results import Glossary, Handout, handout_status
from ..core.session import Session
from ..export import write_handout
from .messages import show_error, show_info
from .progress_bar import TaskProgress
from .summary_input import EventBridge, GlossaryBrowser, SummaryEditor, highlighted_html, print_html
from .workers import SessionOp, show_failure


class SimplifyPage(QWidget):
    def __init__(self, session: Session, glossary: Glossary, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.session = session
        self.glossary = glossary
        self.handout: Handout | None = None
        self._task = None
        self._partial: Handout | None = None  # the handout while it is being made
        self.editor = SummaryEditor()
        self.original = GlossaryBrowser(glossary)
        self.original.setObjectName("originalView")
        self.source = QStackedWidget()  # the editor before a run, the marked-up original after
        self.source.addWidget(self.editor)
        self.source.addWidget(self.original)
        self.plain = GlossaryBrowser(glossary)
        self.plain.setObjectName("handoutView")
        self.plain.setPlaceholderText("The plain-language handout appears here, section by section.")
        self.open_button = QPushButton("Open summary…")
        self.open_button.setShortcut(QKeySequence.StandardKey.Open)
        self.open_button.clicked.connect(self._open)
        self.edit_button = QPushButton("Edit summary")
        self.edit_button.setShortcut(QKeySequence("Ctrl+Shift+E"))
        self.edit_button.clicked.connect(lambda: self.source.setCurrentWidget(self.editor))
        self.run_button = QPushButton("Make handout")
        self.run_button.setToolTip("Rewrite the whole summary for the patient (Ctrl+Enter)")
        self.run_button.clicked.connect(self.simplify)
        self.run_button.setShortcut(QKeySequence("Ctrl+Return"))
        self.export_button = QPushButton("Export…")
        self.export_button.setShortcut(QKeySequence("Ctrl+E"))
        self.export_button.setToolTip("Save the handout as PDF, HTML or text (Ctrl+E)")
        self.export_button.clicked.connect(self.choose_export)
        self.print_button = QPushButton("Print…")
        self.print_button.setShortcut(QKeySequence.StandardKey.Print)
        self.print_button.clicked.connect(lambda: self.handout and print_html(
            self, self.handout.to_html(), "Lumen handout", self.session,
            "simplify.printed", run=self.handout.trace.id))
        for button in (self.export_button, self.print_button):
            button.setEnabled(False)
        self.grades = QLabel()
        self.grades.setObjectName("grades")
        self.grades.setWordWrap(True)
        self.progress = TaskProgress()
        notice = QLabel(NOTICE)
        notice.setWordWrap(True)
        notice.setStyleSheet("border:1px solid #999;padding:4px;background:#f4f4f4")
        top = QHBoxLayout()
        for button in (self.open_button, self.edit_button, self.run_button):
            top.addWidget(button)
        top.addStretch(1)
        top.addWidget(self.export_button)
        top.addWidget(self.print_button)
        splitter = QSplitter()
        for title, widget in (("Discharge summary (medical words marked in blue; hover for meaning)",
                               self.source), ("Plain-language handout", self.plain)):
            column = QVBoxLayout()
            column.addWidget(QLabel(f"<b>{title}</b>"))
            column.addWidget(widget, 1)
            holder = QWidget()
            holder.setLayout(column)
            splitter.addWidget(holder)
        # The handout, with its medicines table, needs the wider half.
        splitter.setStretchFactor(0, 2)
        splitter.setStretchFactor(1, 3)
        layout = QVBoxLayout(self)
        layout.addLayout(top)
        layout.addWidget(self.progress)
        layout.addWidget(splitter, 1)
        layout.addWidget(self.grades)
        layout.addWidget(notice)
        self.bridge = EventBridge()
        self.bridge.event.connect(self._on_event)

    def _open(self) -> None:
        self.source.setCurrentWidget(self.editor)
        self.editor.choose_file()

    def show_original(self, text: str) -> None:
        self.original.setHtml(f"<div style='font-size:11pt'>{highlighted_html(text, self.glossary)}</div>")
        self.source.setCurrentWidget(self.original)

    # ---- running ----

    def simplify(self) -> None:
        if self._task is not None:
            return
        summary = self.editor.toPlainText()
        session, bridge = self.session, self.bridge

        def work(progress, cancel):
            return session.simplify(summary, on_event=bridge, progress=progress, cancel=cancel)

        if summary.strip():
            self.show_original(summary)
        self._partial = None
        self.handout = None
        self.plain.clear()
        self.grades.setText("")
        for button in (self.export_button, self.print_button):  # until there is a handout
            button.setEnabled(False)
        self._task = SessionOp(self, work, progress=self.progress, message="Making the handout…",
                               disable=(self.run_button,), name="Simplify"
                               ).success(self._done).failure(self._failed).run_in_background()

    def _on_event(self, kind: str, data: dict) -> None:
        # The medicines, appointments and warning signs come first, read without a model;
        # the narrative sections follow as each is done.
        if kind == "tables":
            self._partial = data["handout"]
        if kind in ("tables", "section") and self._partial is not None:
            self.plain.setHtml(self._partial.to_html())

    def _done(self, handout: Handout) -> None:
        self._task = None
        self._partial = None
        self.handout = handout
        self.plain.setHtml(handout.to_html())
        for button in (self.export_button, self.print_button):
            button.setEnabled(True)
        self.grades.setText(handout_status(handout, self.session.settings.handout_grade_goal))

    def _failed(self, exc: BaseException) -> None:
        self._task = None
        show_failure(self, exc)

    # ---- export ----

    def choose_export(self) -> None:
        if self.handout is None:
            return
        path, _ = QFileDialog.getSaveFileName(self, "Save the handout", str(Path.home() / "handout.pdf"),
                                              "PDF (*.pdf);;Web page (*.html);;Text (*.txt)")
        if path:
            self.export(Path(path))

    def export(self, path: Path) -> None:
        try:
            write_handout(self.handout, path, self.session, force=True)  # the save dialog asked
        except Exception as exc:
            show_error(self, exc)
            return
        show_info(self, "Handout saved", f"The handout was saved as {path}.")
