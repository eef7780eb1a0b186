"""The Knowledge tab (DoctorRAG): a question answered from the hospital's own documents
and similar past cases, with the sources side by side, the cases retrieved, and the
Med-TextGrad refinement timeline; and the library of documents and case sets."""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import Qt
from PySide6.QtGui import QGuiApplication, QKeySequence
from PySide6.QtWidgets import (QAbstractItemView, QCheckBox, QComboBox, QFileDialog, QHBoxLayout,
                               QHeaderView, QLabel, QLineEdit, QMessageBox, QPlainTextEdit,
                               QPushButton, QSpinBox, QSplitter, QTableWidget, QTableWidgetItem,
                               QTabWidget, QTextBrowser, QTreeWidget, QTreeWidgetItem, QVBoxLayout,
                               QWidget)

from ..core.errors import LumenError
from ..core.choices import ABLATIONS
from ..core.results import (KNOWLEDGE_FILES, KNOWLEDGE_NOTICE, Glossary,
                             KnowledgeResult, chapter_title, model_calls_needed, parse_labels)
from ..core.session import Session
from ..core.templates import render
from .messages import show_error, show_info
from .progress_bar import TaskProgress
from .summary_input import EventBridge, print_html
from .workers import SessionOp, show_failure

ABLATION_LABELS = {"full": "Knowledge + cases, chapter filter (recommended)",
                   "no-cases": "Without similar cases", "no-knowledge": "Without knowledge",
                   "no-tags": "Without the chapter filter", "vanilla": "Plain retrieval (knowledge only)"}
ROUND_PARTS = (("answer", "Answer"), ("context_critique", "Context critique"),
               ("patient_critique", "Patient critique"),
               ("answer_gradient_context", "How to revise (context)"),
               ("answer_gradient_patient", "How to revise (patient)"),
               ("prompt_gradient_context", "Prompt advice (context)"),
               ("prompt_gradient_patient", "Prompt advice (patient)"),
               ("updated_prompt", "Updated prompt"))


def _table(headers: list[str], name: str) -> QTableWidget:
    table = QTableWidget(0, len(headers))
    table.setObjectName(name)
    table.setHorizontalHeaderLabels(headers)
    table.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
    table.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
    table.setWordWrap(True)
    table.horizontalHeader().setSectionResizeMode(len(headers) - 1, QHeaderView.ResizeMode.Stretch)
    table.verticalHeader().setVisible(False)
    return table


def _cell(text: str) -> QTableWidgetItem:
    item = QTableWidgetItem(text)
    item.setToolTip(text)
    return item


class KnowledgePage(QWidget):
    def __init__(self, session: Session, glossary: Glossary, parent: QWidget | None = None) -> None:
        """Long: the tab's widgets, shortcuts and signals, built in layout order."""
        super().__init__(parent)
        self.session = session
        self.glossary = glossary
        self.result: KnowledgeResult | None = None
        self._task = None
        self._streamed = ""

        # ---- question ----
        self.question = QLineEdit()
        self.question.setObjectName("knowledgeQuestion")
        self.question.setPlaceholderText("A clinical question, or a patient's presentation in diagnosis mode")
        self.question.returnPressed.connect(self.ask)
        self.ask_button = QPushButton("Ask")
        self.ask_button.setToolTip("Answer from the knowledge base and similar cases (Enter or Ctrl+Enter)")
        self.ask_button.clicked.connect(self.ask)
        self.ask_button.setShortcut(QKeySequence("Ctrl+Return"))
        self.mode = QComboBox()
        self.mode.addItem("Answer", "answer")
        self.mode.addItem("Diagnosis from a list", "diagnosis")
        self.mode.setToolTip("Diagnosis mode must pick one of the labels you give")
        self.setup = QComboBox()
        for name in ABLATIONS:
            self.setup.addItem(ABLATION_LABELS[name], name)
        self.setup.setToolTip("Which sources retrieval uses (the paper's ablation)")
        self.refine = QCheckBox("Refine (Med-TextGrad)")
        self.refine.setToolTip("Improve the answer with critics and textual gradients; many more model calls")
        self.rounds = QSpinBox()
        self.rounds.setRange(1, 10)
        self.rounds.setPrefix("rounds: ")
        self.calls = QLabel()
        self.calls.setObjectName("modelCalls")
        self.labels = QPlainTextEdit()
        self.labels.setObjectName("diagnosisLabels")
        self.labels.setPlaceholderText("Diagnoses to choose from, one per line")
        self.labels.setMaximumHeight(90)
        for widget in (self.mode, self.setup):
            widget.currentIndexChanged.connect(lambda _i: self._update_options())
        self.refine.toggled.connect(lambda _on: self._update_options())
        self.rounds.valueChanged.connect(lambda _v: self._update_options())
        self.progress = TaskProgress()
        self.chapter = QLabel()
        self.chapter.setObjectName("chapterLabel")
        self.answer = QTextBrowser()
        self.answer.setObjectName("knowledgeAnswer")
        self.answer.setPlaceholderText("The answer and its numbered references appear here.")
        self.notice = QLabel(KNOWLEDGE_NOTICE)
        self.notice.setWordWrap(True)
        self.notice.setStyleSheet("border:1px solid #999;padding:4px;background:#f4f4f4")
        self.sources = _table(["Ref", "Used", "Similarity", "Chapter", "Document", "Statement"],
                              "knowledgeSources")
        self.cases = _table(["Ref", "Used", "Similarity", "Case", "Diagnosis", "Complaint"],
                            "retrievedCases")
        self.timeline = QTreeWidget()
        self.timeline.setObjectName("refinementTimeline")
        self.timeline.setHeaderLabels(["Refinement", "Text"])
        self.timeline.header().setSectionResizeMode(0, QHeaderView.ResizeMode.ResizeToContents)
        self.copy_button = QPushButton("Copy answer")
        self.copy_button.setShortcut(QKeySequence("Ctrl+Shift+C"))
        self.copy_button.clicked.connect(self.copy_answer)
        self.print_button = QPushButton("Print…")
        self.print_button.setShortcut(QKeySequence.StandardKey.Print)
        self.print_button.clicked.connect(self.print_answer)
        for button in (self.copy_button, self.print_button):
            button.setEnabled(False)

        ask_tab = QWidget()
        ask_layout = QVBoxLayout(ask_tab)
        row = QHBoxLayout()
        row.addWidget(self.question, 1)
        row.addWidget(self.ask_button)
        ask_layout.addLayout(row)
        options = QHBoxLayout()
        options.addWidget(self.mode)
        options.addWidget(self.setup)
        options.addWidget(self.refine)
        options.addWidget(self.rounds)
        options.addWidget(self.calls, 1)
        ask_layout.addLayout(options)
        ask_layout.addWidget(self.labels)
        ask_layout.addWidget(self.progress)
        ask_layout.addWidget(self.chapter)
        answer_side = QWidget()
        answer_layout = QVBoxLayout(answer_side)
        answer_layout.setContentsMargins(0, 0, 0, 0)
        answer_layout.addWidget(self.answer, 1)
        answer_layout.addWidget(self.notice)
        actions = QHBoxLayout()
        actions.addStretch(1)
        actions.addWidget(self.copy_button)
        actions.addWidget(self.print_button)
        answer_layout.addLayout(actions)
        source_side = QWidget()
        source_layout = QVBoxLayout(source_side)
        source_layout.setContentsMargins(0, 0, 0, 0)
        source_layout.addWidget(QLabel("Knowledge (expertise):"))
        source_layout.addWidget(self.sources, 1)
        source_layout.addWidget(QLabel("Similar past cases (experience):"))
        source_layout.addWidget(self.cases, 1)
        side_by_side = QSplitter(Qt.Orientation.Horizontal)
        side_by_side.addWidget(answer_side)
        side_by_side.addWidget(source_side)
        side_by_side.setSizes([450, 650])
        vertical = QSplitter(Qt.Orientation.Vertical)
        vertical.addWidget(side_by_side)
        vertical.addWidget(self.timeline)
        vertical.setSizes([480, 200])
        ask_layout.addWidget(vertical, 1)

        # ---- library ----
        self.library = QTreeWidget()
        self.library.setObjectName("knowledgeLibrary")
        self.library.setHeaderLabels(["Name", "Pieces / cases", "Added", "Detail"])
        self.library.header().setSectionResizeMode(0, QHeaderView.ResizeMode.ResizeToContents)
        self.add_files_button = QPushButton("Add documents…")
        self.add_files_button.setShortcut(QKeySequence.StandardKey.Open)
        self.add_files_button.setToolTip(f"Add {', '.join(KNOWLEDGE_FILES)} files to the knowledge base")
        self.add_files_button.clicked.connect(self.choose_documents)
        self.add_glossary_button = QPushButton("Add glossary topics")
        self.add_glossary_button.setShortcut(QKeySequence("Ctrl+G"))
        self.add_glossary_button.setToolTip("Add every glossary entry as knowledge (one model call each)")
        self.add_glossary_button.clicked.connect(self.add_glossary)
        self.import_cases_button = QPushButton("Import cases…")
        self.import_cases_button.setShortcut(QKeySequence("Ctrl+I"))
        self.import_cases_button.setToolTip("Import past cases from CSV or JSONL; they are de-identified")
        self.import_cases_button.clicked.connect(self.choose_cases)
        self.remove_button = QPushButton("Remove")
        self.remove_button.setShortcut(QKeySequence("Ctrl+D"))
        self.remove_button.clicked.connect(self.remove_selected)
        self.library_summary = QLabel()
        self.library_progress = TaskProgress()
        self.removals = _table(["Case", "Field", "Kind", "Removed", "Replaced by"], "deidRemovals")
        self.removals_label = QLabel("Removed by de-identification on the last import:")
        library_tab = QWidget()
        library_layout = QVBoxLayout(library_tab)
        buttons = QHBoxLayout()
        for button in (self.add_files_button, self.add_glossary_button, self.import_cases_button,
                       self.remove_button):
            buttons.addWidget(button)
        buttons.addStretch(1)
        library_layout.addLayout(buttons)
        library_layout.addWidget(self.library_summary)
        library_layout.addWidget(self.library_progress)
        library_layout.addWidget(self.library, 2)
        library_layout.addWidget(self.removals_label)
        library_layout.addWidget(self.removals, 1)

        self.inner = QTabWidget()
        self.inner.addTab(ask_tab, "Ask")
        self.inner.addTab(library_tab, "Library")
        layout = QVBoxLayout(self)
        layout.addWidget(self.inner)
        self.bridge = EventBridge()
        self.bridge.event.connect(self._on_event)
        self.apply_settings()
        self.refresh_library()

    # ---- helpers ----

    def apply_settings(self) -> None:
        settings = self.session.settings
        self.refine.setChecked(settings.knowledge_refine)
        self.rounds.setValue(settings.knowledge_refine_rounds)
        self._update_options()

    def _update_options(self) -> None:
        diagnosis = self.mode.currentData() == "diagnosis"
        self.labels.setVisible(diagnosis)
        self.refine.setEnabled(not diagnosis)
        self.rounds.setEnabled(self.refine.isChecked() and not diagnosis)
        calls = model_calls_needed(self.session.settings, self.setup.currentData(),
                                   self.refine.isChecked() and not diagnosis, self.rounds.value())
        self.calls.setText(f"{calls} model call{'s' if calls != 1 else ''} per question")

    def _busy_buttons(self) -> tuple:
        """Disabled while a question or a library task runs (one at a time)."""
        return (self.ask_button, self.add_files_button, self.add_glossary_button,
                self.import_cases_button, self.remove_button)

    # ---- asking ----

    def ask(self) -> None:
        if self._task is not None:
            return
        question = self.question.text().strip()
        mode, setup = self.mode.currentData(), self.setup.currentData()
        labels = parse_labels(self.labels.toPlainText()) if mode == "diagnosis" else []
        refine = self.refine.isChecked() and mode == "answer"
        rounds = self.rounds.value()
        bridge = self.bridge
        session = self.session

        def work(progress, cancel):
            return session.ask_knowledge(question, mode=mode, labels=labels,
                                         ablation=setup, refine=refine, rounds=rounds,
                                         on_event=bridge, progress=progress, cancel=cancel)

        self.result = None
        self._streamed = ""
        self.answer.clear()
        self.chapter.setText("")
        self.sources.setRowCount(0)
        self.cases.setRowCount(0)
        self.timeline.clear()
        for button in (self.copy_button, self.print_button):  # until there is an answer
            button.setEnabled(False)
        self._task = SessionOp(self, work, progress=self.progress, message="Working on the answer…",
                               disable=self._busy_buttons(), name="a knowledge question"
                               ).success(self._done).failure(self._failed).run_in_background()

    def _on_event(self, kind: str, data: dict) -> None:
        if kind == "tag":
            self.chapter.setText(f"ICD-10 chapter of the question: {data['chapter']} ({data['title']})")
        elif kind == "retrieval":
            self._show_sources(data["retrieval"], [])
        elif kind == "answer":
            self.answer.setPlainText(data["answer"])
        elif kind == "stage" and data.get("stage") == "refine":
            self._streamed = ""
            self.answer.setPlainText(f"Refining, round {data['round']} of {data['rounds']}…")
        elif kind == "token":
            self._streamed += data["text"]
            self.answer.setPlainText(self._streamed)
        elif kind == "round":
            self._add_round(data["round"])
        elif kind == "note":
            self.chapter.setText(f"{self.chapter.text()}  Note: {data['note']}".strip())

    def _show_sources(self, retrieval, used: list[str]) -> None:
        self.sources.setRowCount(len(retrieval.knowledge))
        for row, s in enumerate(retrieval.knowledge):
            chapter = s.chapter + (" (other chapter)" if s.fallback else "")
            for column, text in enumerate((s.ref, "✓" if s.ref in used else "", f"{s.score:.2f}",
                                           chapter, s.document, s.statement)):
                self.sources.setItem(row, column, _cell(text))
        self.cases.setRowCount(len(retrieval.cases))
        for row, c in enumerate(retrieval.cases):
            for column, text in enumerate((c.ref, "✓" if c.ref in used else "", f"{c.score:.2f}",
                                           c.key, c.diagnosis, c.complaint)):
                self.cases.setItem(row, column, _cell(text))
        for table in (self.sources, self.cases):
            table.resizeRowsToContents()

    def _add_round(self, round_: dict) -> None:
        item = QTreeWidgetItem([f"Round {round_['number']}", round_["answer"][:160]])
        for key, label in ROUND_PARTS:
            if round_.get(key):
                child = QTreeWidgetItem([label, round_[key]])
                child.setToolTip(1, round_[key])
                item.addChild(child)
        self.timeline.addTopLevelItem(item)

    def answer_html(self) -> str:
        """The answer as shown and printed (resources/templates/knowledge_answer.html.j2):
        the knowledge statements (K refs) and past cases (C refs) it cites."""
        result = self.result
        if result is None:
            return ""
        sources = [{"ref": source.ref, "document": source.document, "statement": source.statement}
                   if source.ref.startswith("K") else
                   {"ref": source.ref, "case": source.key, "similarity": f"{source.score:.2f}",
                    "diagnosis": source.diagnosis or "not recorded"}
                   for source in result.cited_sources()]
        return render("knowledge_answer.html.j2", question=result.question, mode=result.mode,
                      diagnosis=result.diagnosis, answer=result.answer, sources=sources,
                      notice=KNOWLEDGE_NOTICE)

    def _done(self, result: KnowledgeResult) -> None:
        self._task = None
        self.result = result
        retrieval = result.retrieval
        if retrieval.chapter:
            filled = " Too few statements share it: others were added from other chapters." \
                if retrieval.fallback_used else ""
            self.chapter.setText(f"ICD-10 chapter of the question: {retrieval.chapter} "
                                 f"({chapter_title(retrieval.chapter)}); {retrieval.same_chapter} "
                                 f"statement(s) from it.{filled}")
        if result.trace.context.get("note"):
            self.chapter.setText(f"{self.chapter.text()}  Note: {result.trace.context['note']}".strip())
        self._show_sources(retrieval, result.references)
        self.answer.setHtml(self.answer_html())
        for button in (self.copy_button, self.print_button):
            button.setEnabled(True)

    def _failed(self, exc: BaseException) -> None:
        self._task = None
        self.answer.setPlainText("")
        show_failure(self, exc)

    def copy_answer(self) -> None:
        if self.result is not None:
            QGuiApplication.clipboard().setText(self.answer.toPlainText())

    def print_answer(self) -> None:
        if self.result is not None:
            print_html(self, self.answer_html(), "Lumen knowledge answer", self.session,
                       "kb.printed")

    # ---- library ----

    def refresh_library(self) -> None:
        self.library.clear()
        if not self.session.is_open:
            self.library_summary.setText("The database is locked.")
            return
        try:
            documents = self.session.library.documents()
            sets = self.session.library.case_sets()
        except LumenError as exc:
            self.library_summary.setText(f"The knowledge base cannot be read: {exc.message}")
            return
        docs_item = QTreeWidgetItem([f"Documents ({len(documents)})"])
        for doc in documents:
            chapters = ", ".join(f"{code} ×{n}" for code, n in doc.chapters.items())
            child = QTreeWidgetItem([doc.name, str(doc.chunks), doc.added_at[:16].replace("T", " "),
                                     ("statements; " if doc.declarative else "") + chapters])
            child.setData(0, Qt.ItemDataRole.UserRole, ("document", doc.id))
            docs_item.addChild(child)
        sets_item = QTreeWidgetItem([f"Case sets ({len(sets)})"])
        for case_set in sets:
            removed = ", ".join(f"{n} {kind.replace('_', ' ')}" for kind, n in case_set.removals.items())
            child = QTreeWidgetItem([case_set.name, str(case_set.count),
                                     case_set.imported_at[:16].replace("T", " "),
                                     f"de-identified: {removed or 'nothing found'}"])
            child.setData(0, Qt.ItemDataRole.UserRole, ("cases", case_set.id))
            sets_item.addChild(child)
        self.library.addTopLevelItem(docs_item)
        self.library.addTopLevelItem(sets_item)
        self.library.expandAll()
        pieces = sum(d.chunks for d in documents)
        cases = sum(s.count for s in sets)
        self.library_summary.setText(
            f"{pieces} knowledge pieces from {len(documents)} document(s); {cases} past cases."
            + ("" if pieces or cases else " Add documents or import cases to start."))

    def _library_task(self, work, message: str, done) -> None:
        def settled() -> None:
            self._task = None
            self.refresh_library()

        def finished(result) -> None:
            settled()
            done(result)

        def failed(exc: BaseException) -> None:
            settled()
            show_failure(self, exc)

        self._task = SessionOp(self, work, progress=self.library_progress, message=message,
                               disable=self._busy_buttons(), name="adding to the knowledge base"
                               ).success(finished).failure(failed).run_in_background()

    def add_documents(self, paths: list[Path]) -> None:
        if self._task is not None or not paths:
            return
        library = self.session.library

        def work(progress, cancel):
            return [library.add_file(path, progress=progress, cancel=cancel) for path in paths]

        def done(results) -> None:
            added = [doc for doc, new in results if new]
            again = [doc.name for doc, new in results if not new]
            text = f"Added {len(added)} document(s), {sum(d.chunks for d in added)} pieces."
            if again:
                text += f" Already in the knowledge base: {', '.join(again)}."
            self.library_summary.setText(self.library_summary.text() + "  " + text)

        self._library_task(work, "Adding documents…", done)

    def choose_documents(self) -> None:
        names, _ = QFileDialog.getOpenFileNames(
            self, "Add documents to the knowledge base", "",
            f"Documents ({' '.join('*' + s for s in KNOWLEDGE_FILES)})")
        self.add_documents([Path(n) for n in names])

    def add_glossary(self) -> None:
        if self._task is not None:
            return
        count = len([e for e in self.glossary.entries if not e.hidden])
        answer = QMessageBox.question(
            self, "Add glossary topics",
            f"Add {count} glossary entries to the knowledge base? Each piece needs one model call "
            "to place it in an ICD-10 chapter, so this can take a while; you can cancel it.")
        if answer != QMessageBox.StandardButton.Yes:
            return
        library = self.session.library
        self._library_task(lambda progress, cancel: library.add_glossary(progress=progress,
                                                                         cancel=cancel),
                           "Adding glossary topics…", lambda result: None)

    def import_cases(self, path: Path) -> None:
        if self._task is not None:
            return
        library = self.session.library

        def done(result) -> None:
            case_set, case_file, new = result
            rows = [(r.key, item) for r in case_file.records for item in r.removals]
            self.removals.setRowCount(len(rows))
            for row, (key, item) in enumerate(rows):
                for column, text in enumerate((key, item["field"], item["kind"].replace("_", " "),
                                               item["text"], item["replacement"])):
                    self.removals.setItem(row, column, _cell(text))
            self.removals_label.setText(
                f"Removed by de-identification from {case_file.name}: {len(rows)} item(s)"
                + ("" if new else " (this file was imported before; nothing was added)") + ".")
            if new and case_file.columns_dropped:
                show_info(self, "Cases imported",
                          f"Columns not imported: {', '.join(case_file.columns_dropped)}.")

        self._library_task(lambda progress, cancel: library.import_cases(path, progress=progress,
                                                                         cancel=cancel),
                           "Importing cases…", done)

    def choose_cases(self) -> None:
        name, _ = QFileDialog.getOpenFileName(self, "Import past cases", "",
                                              "Cases (*.csv *.jsonl *.json *.tsv)")
        if name:
            self.import_cases(Path(name))

    def remove_selected(self) -> None:
        items = self.library.selectedItems()
        data = items[0].data(0, Qt.ItemDataRole.UserRole) if items else None
        if not data:
            show_error(self, LumenError("Nothing is selected.", "Select a document or a case set."))
            return
        answer = QMessageBox.question(self, "Remove", f"Remove {items[0].text(0)} from the knowledge base?")
        if answer != QMessageBox.StandardButton.Yes:
            return
        self.remove(*data)

    def remove(self, kind: str, item_id: str) -> None:
        try:
            if kind == "document":
                self.session.library.remove_document(item_id)
            else:
                self.session.library.remove_case_set(item_id)
        except LumenError as exc:
            show_error(self, exc)
        self.refresh_library()
