"""The Ask tab: a summary, a patient's question, and a plain answer.

Evidence first: the lines of the summary that answer the question are listed (and
marked in the summary, click to jump) as soon as they are found, before any model runs.
A model's draft streams in grey, labelled as a draft being checked; when the run ends
the box shows only the answer Lumen vouches for: a model text that passed every check,
or the summary's own words explained, with a note saying so.  Badges vouch only for
what was checked; the timeline shows every attempt with each of its checks."""

from __future__ import annotations

import html
from dataclasses import dataclass

from PySide6.QtCore import Qt
from PySide6.QtGui import QBrush, QColor, QGuiApplication, QKeySequence
from PySide6.QtWidgets import (QAbstractItemView, QComboBox, QHBoxLayout, QHeaderView, QLabel,
                               QLineEdit, QListWidget, QListWidgetItem, QPushButton, QSplitter,
                               QTreeWidget, QTreeWidgetItem, QVBoxLayout, QWidget)

from ..core.choices import METHODS
from ..core.results import TRACE_NOTICE as NOTICE
from ..core.results import AskResult, Attempt, EvidenceLine, Glossary
from ..core.session import Session
from ..core.templates import render
from .progress_bar import TaskProgress
from .summary_input import (EVIDENCE_BACKGROUND, EventBridge, GlossaryBrowser, SummaryEditor,
                            highlighted_html, print_html)
from .shortcuts import keyboard_shortcut
from .workers import SessionOp, show_failure

METHOD_LABELS = {
    "lamp": "Full pipeline (recommended)", "lamp-no-reviewer": "Without reviewer",
    "lamp-no-verifier": "Without readability verifier", "lamp-no-loops": "Without both checks",
    "zero-shot": "One model, no examples", "one-shot": "One model, one example",
    "evidence": "Summary's own words (no model)"}
STAGE_LABELS = {"extraction": "Finding the answer", "simplification": "Writing it plainly",
                "answer": "Answer", "review": "Reviewer", "verify": "Readability verifier"}
CHECK_LABELS = {"relevance": "Relevance", "degeneracy": "Degeneracy", "support": "Support",
                "coverage": "Coverage", "readability": "Readability"}
CHECK_TIPS = {
    "relevance": "Close in meaning to the question, and closer to the summary's lines than the "
                 "question itself is.",
    "degeneracy": "No loop, no echo of the question, no talk about the question instead of an "
                  "answer, no refusal, not empty, too short or cut off.",
    "support": "Every number, unit, timing, date and medicine is in the summary.",
    "coverage": "Carries the dose, duration, date or name the question asks for.",
    "readability": "Reads below the grade limit set in Settings.",
}
# Badge colours (white text on each is readable).  Green only ever means "checked and
# passed"; what Lumen did not check, or what only informs, is never green.
TONES = {"good": "#1b7a3a", "bad": "#b3261e", "warn": "#8a5300", "neutral": "#3d5a80",
         "info": "#5f6368"}
PASSED_COLOUR, FAILED_COLOUR, SHOWN_COLOUR = "#1b7a3a", "#b3261e", "#0b4f8a"
SHOWN = "✓ shown"


@dataclass(frozen=True)
class Badge:
    text: str
    tone: str  # a key of TONES
    tip: str


class BadgeRow(QWidget):
    """A row of badges, each a label with its own tooltip saying what it vouches for."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.items: list[Badge] = []
        self.labels: list[QLabel] = []
        self._layout = QHBoxLayout(self)
        self._layout.setContentsMargins(0, 0, 0, 0)
        self._layout.setSpacing(6)
        self._layout.addStretch(1)

    def set_badges(self, badges: list[Badge]) -> None:
        for label in self.labels:
            self._layout.removeWidget(label)
            label.deleteLater()
        self.items, self.labels = list(badges), []
        for index, item in enumerate(badges):
            label = QLabel(item.text)
            label.setObjectName("badge")
            label.setProperty("tone", item.tone)
            label.setStyleSheet(f"QLabel{{background:{TONES[item.tone]};color:white;"
                                f"padding:2px 8px;border-radius:3px;font-weight:600}}")
            label.setToolTip(item.tip)
            label.setAccessibleName(f"{item.text}. {item.tip}")
            self._layout.insertWidget(index, label)
            self.labels.append(label)

    def clear(self) -> None:
        self.set_badges([])

    def text(self) -> str:
        return " · ".join(item.text for item in self.items)

    def tone_of(self, text: str) -> str | None:
        return next((item.tone for item in self.items if item.text == text), None)


class AskPage(QWidget):
    def __init__(self, session: Session, glossary: Glossary, parent: QWidget | None = None) -> None:
        """Long: the tab's widgets, shortcuts and signals, built in layout order."""
        super().__init__(parent)
        self.session = session
        self.glossary = glossary
        self.result: AskResult | None = None
        self._task = None
        self._streamed = ""
        self._draft_stage = ""
        self.showing_draft = False
        self._asked_summary = ""
        self._evidence: list[EvidenceLine] = []
        self.summary = SummaryEditor()
        self.open_button = QPushButton("Open summary…")
        self.open_button.setShortcut(QKeySequence.StandardKey.Open)
        self.open_button.setToolTip("Open a .txt, .docx or .pdf file (Ctrl+O); you can also drop one on the box")
        self.open_button.clicked.connect(self.summary.choose_file)
        self.source_label = QLabel("")
        self.question = QLineEdit()
        self.question.setObjectName("question")
        self.question.setPlaceholderText("The patient's question (Alt+Q), e.g. \"Why did they stop my water pill?\"")
        self.question.returnPressed.connect(self.ask)
        self.method = QComboBox()
        for name in METHODS:
            self.method.addItem(METHOD_LABELS.get(name, name), name)
        self.method.setToolTip("How the answer is made. The full pipeline checks every model text "
                               "(relevance, support by the summary, coverage, degeneracy, "
                               "readability) and shows the summary's own words when none passes. "
                               "\"Summary's own words\" uses no model at all.")
        self.variant = QComboBox()
        self.variant.addItem("With glossary help", "glossary")
        self.variant.addItem("Without glossary", "plain")
        self.variant.setToolTip("Give the simplifier plain definitions of the medical words it meets")
        self.ask_button = QPushButton("Ask")
        self.ask_button.setDefault(True)
        self.ask_button.setToolTip("Answer the question (Enter, or Ctrl+Enter anywhere on this tab)")
        self.ask_button.clicked.connect(self.ask)
        self.ask_button.setShortcut(QKeySequence("Ctrl+Return"))
        self.progress = TaskProgress()
        self.badges = BadgeRow()
        self.badges.setObjectName("badges")
        self.answer_note = QLabel()
        self.answer_note.setObjectName("answerNote")
        self.answer_note.setWordWrap(True)
        self.answer_note.setStyleSheet(f"QLabel{{background:#e8eef6;color:#1f2a37;padding:6px;"
                                       f"border-left:4px solid {TONES['neutral']}}}")
        self.answer_note.setVisible(False)
        self.answer = GlossaryBrowser(glossary)
        self.answer.setObjectName("answerView")
        self.answer.setPlaceholderText("The answer appears here.")
        self.context_note = QLabel()
        self.context_note.setWordWrap(True)
        self.context_note.setStyleSheet("color:#9a6700")
        self.notice = QLabel(NOTICE)
        self.notice.setWordWrap(True)
        self.notice.setObjectName("notice")
        self.notice.setStyleSheet("border:1px solid #999;padding:4px;background:#f4f4f4;color:#1f1f1f")
        self.evidence_list = QListWidget()
        self.evidence_list.setObjectName("evidenceList")
        self.evidence_list.setWordWrap(True)
        self.evidence_list.setAlternatingRowColors(True)
        self.evidence_list.setStyleSheet("QListWidget::item{padding:3px 2px}")
        self.evidence_list.setSelectionMode(QAbstractItemView.SelectionMode.SingleSelection)
        self.evidence_list.setToolTip("The lines of the summary that answer the question, found "
                                      "without a model. Click a line, or select it and press "
                                      "Enter, to find it in the summary (Alt+V comes here).")
        self.evidence_list.setAccessibleName("Evidence from the summary")
        self.evidence_list.itemClicked.connect(self.jump_to_evidence)
        self.evidence_list.itemActivated.connect(self.jump_to_evidence)
        self.evidence_label = QLabel("Evidence from the summary (Alt+V)")
        # Alt+V, not Alt+E: Alt+E is the Evaluation tab's mnemonic.
        keyboard_shortcut(self, "Alt+V", self.focus_evidence, "Go to the evidence lines")
        keyboard_shortcut(self, "Alt+Q", self.focus_question, "Go to the question box")
        self.evidence_label.setStyleSheet("font-weight:600")
        self.evidence_hint = QLabel("")
        self.evidence_hint.setObjectName("evidenceHint")
        self.evidence_hint.setWordWrap(True)
        self.evidence_hint.setStyleSheet("color:#5f6368")
        self.timeline = QTreeWidget()
        self.timeline.setObjectName("timeline")
        self.timeline.setHeaderLabels(["Step", "Checks", "Tokens", "Seconds"])
        self.timeline.headerItem().setToolTip(2, "Tokens per model call: evaluated / in the prompt "
                                                 "/ written")
        header = self.timeline.header()
        header.setStretchLastSection(False)
        for column, mode in enumerate((QHeaderView.ResizeMode.ResizeToContents,
                                       QHeaderView.ResizeMode.Stretch,
                                       QHeaderView.ResizeMode.ResizeToContents,
                                       QHeaderView.ResizeMode.ResizeToContents)):
            header.setSectionResizeMode(column, mode)
        # How the answer was made, in plain words; the attempts, checks and tokens are the
        # technical detail, one click away.
        self.trace_account = QLabel("")
        self.trace_account.setObjectName("traceAccount")
        self.trace_account.setWordWrap(True)
        self.details_button = QPushButton("Show details")
        self.details_button.setObjectName("traceDetails")
        self.details_button.setCheckable(True)
        self.details_button.setShortcut(QKeySequence("Ctrl+Shift+D"))
        self.details_button.setToolTip("Show or hide each model attempt, its checks and its "
                                       "tokens (Ctrl+Shift+D)")
        self.details_button.toggled.connect(self._show_details)
        self.timeline.setVisible(False)
        self.copy_button = QPushButton("Copy answer")
        self.copy_button.setShortcut(QKeySequence("Ctrl+Shift+C"))
        self.copy_button.setToolTip("Copy the answer, its note, the evidence lines and the notice")
        self.copy_button.clicked.connect(self.copy_answer)
        self.print_button = QPushButton("Print…")
        self.print_button.setShortcut(QKeySequence.StandardKey.Print)
        self.print_button.setToolTip("Print the question, answer, note, evidence lines and notice (Ctrl+P)")
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

        top = QVBoxLayout()
        top.setContentsMargins(0, 0, 0, 0)
        ask_row = QHBoxLayout()
        ask_row.addWidget(self.question, 1)
        ask_row.addWidget(self.ask_button)
        top.addLayout(ask_row)
        options = QHBoxLayout()
        options.addWidget(QLabel("Method:"))
        options.addWidget(self.method)
        options.addWidget(self.variant)
        options.addStretch(1)
        top.addLayout(options)
        top.addWidget(self.progress)
        top.addWidget(self.badges)
        top.addWidget(self.answer_note)
        top.addWidget(self.answer, 1)
        top.addWidget(self.context_note)
        top.addWidget(self.notice)
        actions = QHBoxLayout()
        actions.addStretch(1)
        actions.addWidget(self.copy_button)
        actions.addWidget(self.print_button)
        top.addLayout(actions)
        top_widget = QWidget()
        top_widget.setLayout(top)
        middle = QVBoxLayout()
        middle.setContentsMargins(0, 0, 0, 0)
        middle.addWidget(self.evidence_label)
        middle.addWidget(self.evidence_list, 1)
        middle.addWidget(self.evidence_hint)
        middle_widget = QWidget()
        middle_widget.setLayout(middle)
        bottom = QVBoxLayout()
        bottom.setContentsMargins(0, 0, 0, 0)
        made = QHBoxLayout()
        made.addWidget(QLabel("How the answer was made:"))
        made.addStretch(1)
        made.addWidget(self.details_button)
        bottom.addLayout(made)
        bottom.addWidget(self.trace_account)
        bottom.addWidget(self.timeline, 1)
        bottom.addStretch(0)
        bottom_widget = QWidget()
        bottom_widget.setLayout(bottom)
        right = QSplitter(Qt.Orientation.Vertical)
        right.setChildrenCollapsible(False)
        for widget in (top_widget, middle_widget, bottom_widget):
            right.addWidget(widget)
        right.setSizes([350, 200, 170])
        right.setStretchFactor(0, 3)
        right.setStretchFactor(1, 1)
        right.setStretchFactor(2, 1)
        splitter = QSplitter()
        splitter.addWidget(left_widget)
        splitter.addWidget(right)
        splitter.setSizes([480, 620])
        layout = QVBoxLayout(self)
        layout.addWidget(splitter)
        self.summary.loaded.connect(lambda name: self.source_label.setText(f"Opened {name}"))
        self.summary.textChanged.connect(self._summary_changed)
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
        session = self.session
        method, variant = self.method.currentData(), self.variant.currentData()
        bridge = self.bridge

        def work(progress, cancel):
            return session.ask(summary, question, method=method, variant=variant,
                               on_event=bridge, progress=progress, cancel=cancel)

        self.result = None
        self._streamed = ""
        self._draft_stage = ""
        self.showing_draft = False
        self._asked_summary = summary
        self.timeline.clear()
        self.trace_account.setText("")
        self.answer.clear()
        self.badges.clear()
        self.answer_note.setText("")
        self.answer_note.setVisible(False)
        self.context_note.setText("")
        self._set_evidence([])
        for button in (self.copy_button, self.print_button):  # until there is an answer
            button.setEnabled(False)
        self._task = SessionOp(self, work, progress=self.progress, message="Working on the answer…",
                               disable=(self.ask_button,), name="Ask"
                               ).success(self._done).failure(self._failed).run_in_background()

    def _on_event(self, kind: str, data: dict) -> None:
        if kind == "evidence":
            self._set_evidence(list(data["evidence"]))
            if not data["evidence"]:
                self.evidence_hint.setText("No line of the summary was found to answer this "
                                           "question.")
        elif kind == "stage":
            self._streamed = ""
            self._draft_stage = (f"{STAGE_LABELS.get(data['stage'], data['stage'])} "
                                 f"(attempt {data['attempt']})")
            self._show_draft()
        elif kind == "token":
            self._streamed += data["text"]
            self._show_draft()
        elif kind == "attempt":
            self.timeline.addTopLevelItem(self._attempt_item(data["attempt"], shown=False))
            tip_every_cell(self.timeline)
        elif kind == "context" and data.get("note"):
            self.context_note.setText(data["note"])

    def _show_draft(self) -> None:
        """The model's text as it is written: grey, and labelled as a draft that is shown
        as the answer only if it passes every check."""
        self.showing_draft = True
        self.answer.setHtml(
            "<p style='color:#5f6368'><i>Checking… " + html.escape(self._draft_stage)
            + ": a draft from the model. Lumen shows it as the answer only if it passes every "
            "check.</i></p><p style='color:#80868b'>"
            + html.escape(self._streamed).replace("\n", "<br>") + "</p>")

    # ---- evidence ----

    def _set_evidence(self, lines: list[EvidenceLine]) -> None:
        """List the evidence lines and mark them in the summary (when it still holds the
        text that was asked about)."""
        self._evidence = lines
        self.evidence_list.clear()
        self.summary.forget_jump()
        self.summary.clear_evidence()
        for index, line in enumerate(lines):
            item = QListWidgetItem(line.describe())
            item.setData(Qt.ItemDataRole.UserRole, (line.start, line.end))
            item.setToolTip(f"Line {index + 1} of the evidence, from "
                            f"{line.section or 'the summary'}. Click, or press Enter, "
                            f"to find it in the summary.")
            self.evidence_list.addItem(item)
        if not lines:
            self.evidence_hint.setText("")
            return
        marked = self.summary.show_evidence(self._asked_summary,
                                            [(line.start, line.end) for line in lines])
        self._update_evidence_hint(marked)

    def _update_evidence_hint(self, current: bool) -> None:
        if current:
            self.evidence_hint.setText(
                f"{len(self._evidence)} line{'s' if len(self._evidence) != 1 else ''}, marked "
                f"<span style='background:{EVIDENCE_BACKGROUND};color:#1f1f1f'>&nbsp;like this"
                f"&nbsp;</span> in the summary. Click one (or press Enter) to find it there.")
        else:
            self.evidence_hint.setText("The summary was changed after this question; ask again "
                                       "to find these lines in it.")

    def _summary_changed(self) -> None:
        if self._evidence and not self.summary.evidence_current():
            self._update_evidence_hint(False)

    def jump_to_evidence(self, item: QListWidgetItem) -> bool:
        """Select the item's line in the summary and scroll it into view."""
        span = item.data(Qt.ItemDataRole.UserRole)
        if span is None:
            return False
        found = self.summary.select_span(*span)
        if not found:
            self._update_evidence_hint(False)
        return found

    def focus_question(self) -> None:
        self.question.setFocus(Qt.FocusReason.ShortcutFocusReason)
        self.question.selectAll()

    def focus_evidence(self) -> None:
        self.evidence_list.setFocus(Qt.FocusReason.ShortcutFocusReason)
        if self.evidence_list.currentRow() < 0 and self.evidence_list.count():
            self.evidence_list.setCurrentRow(0)

    # ---- the timeline ----

    def _attempt_item(self, attempt: Attempt, *, shown: bool) -> QTreeWidgetItem:
        calls = attempt.calls
        tokens = " + ".join(f"{c.prompt_tokens_evaluated}/{c.prompt_tokens}/{c.completion_tokens}"
                            for c in calls)
        failed = [c["name"] for c in attempt.checks if not c["passed"]]
        if attempt.gate is not None and not attempt.gate.passed and attempt.gate.name not in failed:
            failed.append(attempt.gate.name)
        verdict = "passed every check" if attempt.passed else "failed: " + ", ".join(
            CHECK_LABELS.get(name, name).lower() for name in failed)
        title = f"{STAGE_LABELS.get(attempt.stage, attempt.stage)} {attempt.number}"
        item = QTreeWidgetItem([f"{title}  {SHOWN}" if shown else title, verdict, tokens,
                                f"{sum(c.seconds for c in calls):.1f}"])
        item.setData(0, Qt.ItemDataRole.UserRole, attempt)
        item.setForeground(1, QBrush(QColor(PASSED_COLOUR if attempt.passed else FAILED_COLOUR)))
        if shown:
            item.setForeground(0, QBrush(QColor(SHOWN_COLOUR)))
            item.setToolTip(0, "This attempt's text is the answer shown.")
        for check in attempt.checks:
            result = "passed" if check["passed"] else "failed"
            if check.get("score") is not None:
                result += f" ({check['score']:.2f})"
            if check.get("detail"):
                result += f": {check['detail']}"
            child = QTreeWidgetItem([CHECK_LABELS.get(check["name"], check["name"]), result])
            child.setData(0, Qt.ItemDataRole.UserRole + 1, check["name"])
            child.setForeground(1, QBrush(QColor(PASSED_COLOUR if check["passed"] else FAILED_COLOUR)))
            child.setToolTip(0, CHECK_TIPS.get(check["name"], ""))
            child.setToolTip(1, result)
            item.addChild(child)
        if attempt.gate is not None:
            gate = attempt.gate
            score = "no reply" if gate.score is None else f"{gate.score:.2f}"
            item.setToolTip(1, f"{verdict}. Gate: {gate.name} {score} ({gate.rule}): "
                               f"{'passed' if gate.passed else 'failed'}")
        text_item = QTreeWidgetItem(["Text", attempt.text])
        text_item.setToolTip(1, attempt.text)
        item.addChild(text_item)
        if attempt.feedback:
            feedback = QTreeWidgetItem(["Feedback", attempt.feedback])
            feedback.setToolTip(1, attempt.feedback)
            item.addChild(feedback)
        return item

    def _show_details(self, shown: bool) -> None:
        self.timeline.setVisible(shown)
        # setText drops a shortcut set before it when the text has no "&": set it again.
        self.details_button.setText("Hide details" if shown else "Show details")
        self.details_button.setShortcut(QKeySequence("Ctrl+Shift+D"))

    @staticmethod
    def shown_attempt(result: AskResult) -> Attempt | None:
        """The attempt whose text is the answer shown (the trace records which)."""
        index = result.trace.shown_attempt
        return result.trace.attempts[index] if result.source == "model" and index >= 0 else None

    def _fill_timeline(self, result: AskResult) -> None:
        """Every attempt as the trace ends (checks can be added after an attempt's event),
        "✓ shown" on the one whose text is the answer, or a last row for the evidence
        answer with why no model text was shown."""
        trace = result.trace
        self.timeline.clear()
        shown = self.shown_attempt(result)
        for attempt in trace.attempts:
            self.timeline.addTopLevelItem(self._attempt_item(attempt, shown=attempt is shown))
        if result.source == "evidence":
            item = QTreeWidgetItem([f"Evidence answer  {SHOWN}", "the summary's own words, no model"])
            item.setForeground(0, QBrush(QColor(SHOWN_COLOUR)))
            if trace.fallback_reason:
                why = trace.fallback_reason
            elif trace.method == "evidence":
                why = f"Method: {METHOD_LABELS['evidence']}"
            else:
                why = "No model text passed every check."
            reason = QTreeWidgetItem(["Why", why])
            reason.setToolTip(1, why)
            item.addChild(reason)
            text_item = QTreeWidgetItem(["Text", trace.evidence_answer])
            text_item.setToolTip(1, trace.evidence_answer)
            item.addChild(text_item)
            self.timeline.addTopLevelItem(item)
            item.setExpanded(True)
        tip_every_cell(self.timeline)

    # ---- the result ----

    def _badges(self, result: AskResult) -> list[Badge]:
        trace = result.trace
        limit = self.session.settings.readability_limit
        badges = []
        if result.source == "model":
            badges.append(Badge("Checked answer", "good",
                                "A model wrote this text and it passed every check: relevance to "
                                "the question, support by the summary, coverage of what was "
                                "asked, no degenerate text, and readability."))
        else:
            badges.append(Badge("Your summary's own words", "neutral",
                                "No model text passed every check, so the answer is the lines of "
                                "the summary that answer the question, with shorthand written out "
                                "and medical words explained. No model wrote it."))
        grade = trace.final_fkgl
        if grade is not None:
            if grade < limit:
                badges.append(Badge(f"Reading grade {grade:.1f}", "good",
                                    f"Reads at school grade {grade:.1f} (Flesch-Kincaid), below the "
                                    f"limit of {limit:g} set in Settings."))
            else:
                badges.append(Badge(f"Reading grade {grade:.1f}", "warn",
                                    f"Reads at school grade {grade:.1f} (Flesch-Kincaid), at or "
                                    f"above the limit of {limit:g} set in Settings: it may be hard "
                                    f"to read."))
        if result.source == "model":
            relevance = next((c for a in trace.attempts if a.chosen and a.stage in ("extraction", "answer")
                              for c in a.checks if c["name"] == "relevance"), None)
            if relevance is not None and relevance.get("score") is not None:
                badges.append(Badge(f"Relevance {relevance['score']:.2f}",
                                    "good" if relevance["passed"] else "bad",
                                    "How close in meaning the answer is to the question (cosine); "
                                    "it must reach the threshold in Settings and be closer to the "
                                    "summary's lines than the question itself is."))
        flags = result.flags
        if flags:
            badges.append(Badge(f"{len(flags)} to check", "bad",
                                "Facts in the answer that Lumen did not find in the summary (marked "
                                "in the answer). Check them against the summary before use."))
        elif result.source == "model":
            badges.append(Badge("Every fact found in the summary", "good",
                                "Every number, unit, timing, date and medicine in the answer was "
                                "found in the summary."))
        return badges

    def _done(self, result: AskResult) -> None:
        self._task = None
        self.result = result
        trace = result.trace
        self.copy_button.setEnabled(True)
        self.print_button.setEnabled(True)
        self.showing_draft = False
        self.answer.setHtml(f"<p style='font-size:14pt'>"
                            f"{highlighted_html(result.answer, self.glossary, result.flags)}</p>")
        note = self.note_for(result)
        self.answer_note.setText(note)
        self.answer_note.setVisible(bool(note))
        evidence = result.evidence_lines()
        if [(e.start, e.end) for e in evidence] != [(e.start, e.end) for e in self._evidence]:
            self._set_evidence(evidence)
        self._fill_timeline(result)
        self.trace_account.setText(trace.plain_account())
        self.badges.set_badges(self._badges(result))
        if trace.context.get("note"):
            self.context_note.setText(trace.context["note"])

    @staticmethod
    def note_for(result: AskResult) -> str:
        """What to say above the answer (the pipeline's note for its source and method)."""
        return result.note

    def _failed(self, exc: BaseException) -> None:
        self._task = None
        self.showing_draft = False
        self.answer.setPlainText("")
        show_failure(self, exc)

    # ---- copy and print ----

    def answer_text(self) -> str:
        """The answer as plain text: the note (when any), the evidence lines, what to check
        and the notice."""
        if self.result is None:
            return ""
        parts = [self.result.answer]
        note = self.note_for(self.result)
        if note:
            parts.append(note)
        if self.result.evidence:
            parts.append("Evidence from the summary:\n" + "\n".join(
                f"- {line.describe()}" for line in self.result.evidence_lines()))
        if self.result.flags:
            parts.append("Check before use:\n" + "\n".join(
                f"- {line}" for line in self.result.flag_lines()))
        parts.append(NOTICE)
        return "\n\n".join(parts)

    def answer_html(self) -> str:
        """The answer as printed (resources/templates/ask_answer.html.j2)."""
        if self.result is None:
            return ""
        result = self.result
        return render("ask_answer.html.j2", question=self.question.text(), answer=result.answer,
                      note=self.note_for(result),
                      evidence=[line.describe() for line in result.evidence_lines()],
                      flags=result.flag_lines(), notice=NOTICE)

    def copy_answer(self) -> None:
        if self.result is not None:
            QGuiApplication.clipboard().setText(self.answer_text())

    def print_answer(self) -> None:
        if self.result is not None:
            print_html(self, self.answer_html(), "Lumen answer", self.session,
                       "ask.printed", run=self.result.trace.id)


def tip_every_cell(tree: QTreeWidget) -> None:
    """A cell too narrow for its text is elided by Qt; its tooltip holds the whole text."""
    pending = [tree.topLevelItem(i) for i in range(tree.topLevelItemCount())]
    while pending:
        item = pending.pop()
        pending.extend(item.child(i) for i in range(item.childCount()))
        for column in range(tree.columnCount()):
            if item.text(column) and not item.toolTip(column):
                item.setToolTip(column, item.text(column))
