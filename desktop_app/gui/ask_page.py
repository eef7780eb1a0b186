"""The Ask tab: a summary, a patient's question, and a plain answer that streams in,
with its readability and relevance badges, grounding flags, a timeline of attempts,
and copy and print."""

from __future__ import annotations

import html

from PySide6.QtCore import Qt
from PySide6.QtGui import QGuiApplication, QKeySequence, QShortcut
from PySide6.QtWidgets import (QComboBox, QHBoxLayout, QHeaderView, QLabel, QLineEdit, QPushButton, QSplitter,
                               QTreeWidget, QTreeWidgetItem, QVBoxLayout, QWidget)

from ..core.glossary.glossary import Glossary
from ..core.pipelines.ask import METHODS, AskPipeline, AskResult
from ..core.pipelines.trace import NOTICE, Attempt, save_run
from ..core.session import Session
from .messages import show_error
from .progress_bar import TaskProgress
from .summary_input import EventBridge, GlossaryBrowser, SummaryEditor, highlighted_html, print_html
from .workers import run_in_background

METHOD_LABELS = {
    "lamp": "Full pipeline (recommended)", "lamp-no-reviewer": "Without reviewer",
    "lamp-no-verifier": "Without readability verifier", "lamp-no-loops": "Without both checks",
    "zero-shot": "One model, no examples", "one-shot": "One model, one example"}
STAGE_LABELS = {"extraction": "Finding the answer", "simplification": "Writing it plainly",
                "answer": "Answer", "review": "Reviewer", "verify": "Readability verifier"}


def badge(text: str, good: bool | None) -> str:
    colour = {True: "#1b7a3a", False: "#b3261e", None: "#5f6368"}[good]
    return (f"<span style='background:{colour};color:white;padding:2px 6px;border-radius:3px'>"
            f"&nbsp;{html.escape(text)}&nbsp;</span>")


class AskPage(QWidget):
    def __init__(self, session: Session, glossary: Glossary, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.session = session
        self.glossary = glossary
        self.result: AskResult | None = None
        self._task = None
        self._streamed = ""
        self.summary = SummaryEditor()
        self.open_button = QPushButton("Open summary…")
        self.open_button.setShortcut(QKeySequence.StandardKey.Open)
        self.open_button.setToolTip("Open a .txt, .docx or .pdf file (Ctrl+O); you can also drop one on the box")
        self.open_button.clicked.connect(self.summary.choose_file)
        self.source_label = QLabel("")
        self.question = QLineEdit()
        self.question.setObjectName("question")
        self.question.setPlaceholderText("The patient's question, e.g. \"Why did they stop my water pill?\"")
        self.question.returnPressed.connect(self.ask)
        self.method = QComboBox()
        for name in METHODS:
            self.method.addItem(METHOD_LABELS[name], name)
        self.method.setToolTip("How the answer is made. The full pipeline checks relevance and readability.")
        self.variant = QComboBox()
        self.variant.addItem("With glossary help", "glossary")
        self.variant.addItem("Without glossary", "plain")
        self.variant.setToolTip("Give the simplifier plain definitions of the medical words it meets")
        self.ask_button = QPushButton("Ask")
        self.ask_button.setDefault(True)
        self.ask_button.setToolTip("Answer the question (Enter, or Ctrl+Enter anywhere on this tab)")
        self.ask_button.clicked.connect(self.ask)
        QShortcut(QKeySequence("Ctrl+Return"), self, self.ask)
        self.progress = TaskProgress()
        self.badges = QLabel()
        self.badges.setObjectName("badges")
        self.answer = GlossaryBrowser(glossary)
        self.answer.setObjectName("answerView")
        self.answer.setPlaceholderText("The answer appears here.")
        self.context_note = QLabel()
        self.context_note.setWordWrap(True)
        self.context_note.setStyleSheet("color:#9a6700")
        self.notice = QLabel(NOTICE)
        self.notice.setWordWrap(True)
        self.notice.setObjectName("notice")
        self.notice.setStyleSheet("border:1px solid #999;padding:4px;background:#f4f4f4")
        self.timeline = QTreeWidget()
        self.timeline.setObjectName("timeline")
        self.timeline.setHeaderLabels(["Step", "Check", "Tokens (evaluated / prompt / written)", "Seconds"])
        header = self.timeline.header()
        header.setStretchLastSection(False)
        for column, mode in enumerate((QHeaderView.ResizeMode.ResizeToContents,
                                       QHeaderView.ResizeMode.Stretch,
                                       QHeaderView.ResizeMode.ResizeToContents,
                                       QHeaderView.ResizeMode.ResizeToContents)):
            header.setSectionResizeMode(column, mode)
        self.copy_button = QPushButton("Copy answer")
        self.copy_button.clicked.connect(self.copy_answer)
        self.print_button = QPushButton("Print…")
        self.print_button.setShortcut(QKeySequence.StandardKey.Print)
        self.print_button.clicked.connect(self.print_answer)
        for button in (self.copy_button, self.print_button):
            button.setEnabled(False)

        left = QVBoxLayout()
        row = QHBoxLayout()
        row.addWidget(self.open_button)
        row.addWidget(self.source_label, 1)
        left.addLayout(row)
        left.addWidget(self.summary, 1)
        left_widget = QWidget()
        left_widget.setLayout(left)
        right = QVBoxLayout()
        ask_row = QHBoxLayout()
        ask_row.addWidget(self.question, 1)
        ask_row.addWidget(self.ask_button)
        right.addLayout(ask_row)
        options = QHBoxLayout()
        options.addWidget(QLabel("Method:"))
        options.addWidget(self.method)
        options.addWidget(self.variant)
        options.addStretch(1)
        right.addLayout(options)
        right.addWidget(self.progress)
        right.addWidget(self.badges)
        right.addWidget(self.answer, 2)
        right.addWidget(self.context_note)
        right.addWidget(self.notice)
        actions = QHBoxLayout()
        actions.addStretch(1)
        actions.addWidget(self.copy_button)
        actions.addWidget(self.print_button)
        right.addLayout(actions)
        right.addWidget(QLabel("How the answer was made:"))
        right.addWidget(self.timeline, 1)
        right_widget = QWidget()
        right_widget.setLayout(right)
        splitter = QSplitter()
        splitter.addWidget(left_widget)
        splitter.addWidget(right_widget)
        splitter.setSizes([480, 620])
        layout = QVBoxLayout(self)
        layout.addWidget(splitter)
        self.summary.loaded.connect(lambda name: self.source_label.setText(f"Opened {name}"))
        self.bridge = EventBridge()
        self.bridge.event.connect(self._on_event)
        self.apply_settings()

    def apply_settings(self) -> None:
        settings = self.session.settings
        self.method.setCurrentIndex(max(0, self.method.findData(settings.ask_system)))
        self.variant.setCurrentIndex(max(0, self.variant.findData(settings.ask_variant)))

    # ---- running ----

    def ask(self) -> None:
        if self._task is not None:
            return
        summary, question = self.summary.toPlainText(), self.question.text().strip()
        session, glossary = self.session, self.glossary
        method, variant = self.method.currentData(), self.variant.currentData()
        bridge = self.bridge

        def work(progress, cancel):
            pipeline = AskPipeline(session.runtime, glossary, session.settings, session.paths.cache_dir)
            result = pipeline.run(summary, question, method=method, variant=variant,
                                  on_event=bridge, progress=progress, cancel=cancel)
            if session.store is not None:
                save_run(session.store, result.trace, summary=summary, question=question,
                         result=result.answer)
            return result

        self.result = None
        self._streamed = ""
        self.timeline.clear()
        self.answer.clear()
        self.badges.setText("")
        self.context_note.setText("")
        for button in (self.ask_button, self.copy_button, self.print_button):
            button.setEnabled(False)
        self._task = run_in_background(work, on_success=self._done, on_error=self._failed,
                                       on_progress=self.progress.update_progress)
        self.progress.track(self._task, "Working on the answer…")

    def _on_event(self, kind: str, data: dict) -> None:
        if kind == "stage":
            self._streamed = ""
            self.answer.setPlainText(f"{STAGE_LABELS.get(data['stage'], data['stage'])}"
                                     f" (attempt {data['attempt']})…\n")
        elif kind == "token":
            self._streamed += data["text"]
            self.answer.setPlainText(self._streamed)
        elif kind == "attempt":
            self._add_attempt(data["attempt"])
        elif kind == "context" and data.get("note"):
            self.context_note.setText(data["note"])

    def _add_attempt(self, attempt: Attempt) -> None:
        gate = attempt.gate
        check = ""
        if gate is not None:
            score = "no reply" if gate.score is None else f"{gate.score:.2f}"
            check = f"{gate.name} {score} ({gate.rule}): {'passed' if gate.passed else 'failed'}"
        calls = attempt.calls
        tokens = " + ".join(f"{c.prompt_tokens_evaluated}/{c.prompt_tokens}/{c.completion_tokens}"
                            for c in calls)
        item = QTreeWidgetItem([f"{STAGE_LABELS.get(attempt.stage, attempt.stage)} {attempt.number}",
                                check, tokens, f"{sum(c.seconds for c in calls):.1f}"])
        item.setData(0, Qt.ItemDataRole.UserRole, attempt)
        text_item = QTreeWidgetItem(["Text", attempt.text])
        text_item.setToolTip(1, attempt.text)
        item.addChild(text_item)
        if attempt.feedback:
            feedback = QTreeWidgetItem(["Feedback", attempt.feedback])
            feedback.setToolTip(1, attempt.feedback)
            item.addChild(feedback)
        self.timeline.addTopLevelItem(item)

    def _done(self, result: AskResult) -> None:
        self._task = None
        self.progress.finish()
        self.result = result
        trace = result.trace
        self.ask_button.setEnabled(True)
        self.copy_button.setEnabled(True)
        self.print_button.setEnabled(True)
        self.answer.setHtml(f"<p style='font-size:14pt'>"
                            f"{highlighted_html(result.answer, self.glossary, result.flags)}</p>")
        for item_index in range(self.timeline.topLevelItemCount()):
            item = self.timeline.topLevelItem(item_index)
            attempt = item.data(0, Qt.ItemDataRole.UserRole)
            if attempt is not None and attempt.chosen:
                item.setText(0, item.text(0) + "  ✓ used")
        limit = self.session.settings.readability_limit
        parts = []
        if trace.final_fkgl is not None:
            parts.append(badge(f"Reading grade {trace.final_fkgl:.1f}", trace.final_fkgl < limit))
        relevance = [a for a in trace.attempts if a.stage == "extraction" and a.chosen]
        if relevance:
            parts.append(badge(f"Relevance {relevance[0].gate.score:.2f}", relevance[0].gate.passed))
        flags = result.flags
        parts.append(badge(f"{len(flags)} to check" if flags else "Grounded in the summary", not flags))
        self.badges.setText(" ".join(parts))
        if trace.context.get("note"):
            self.context_note.setText(trace.context["note"])

    def _failed(self, exc: BaseException) -> None:
        self._task = None
        self.progress.finish()
        self.ask_button.setEnabled(True)
        self.answer.setPlainText("")
        show_error(self, exc, log_file=str(self.session.paths.log_file))

    # ---- copy and print ----

    def answer_html(self) -> str:
        if self.result is None:
            return ""
        flags = "".join(f"<li>'{html.escape(f['text'])}' ({html.escape(f['kind'])}) is not in the summary</li>"
                        for f in self.result.flags)
        return (f"<h2>Question</h2><p>{html.escape(self.question.text())}</p>"
                f"<h2>Answer</h2><p>{html.escape(self.result.answer)}</p>"
                + (f"<p><b>Check before use:</b></p><ul>{flags}</ul>" if flags else "")
                + f"<p><i>{html.escape(NOTICE)}</i></p>")

    def copy_answer(self) -> None:
        if self.result is not None:
            QGuiApplication.clipboard().setText(f"{self.result.answer}\n\n{NOTICE}")

    def print_answer(self) -> None:
        if self.result is not None:
            print_html(self, self.answer_html(), "Lumen answer")
