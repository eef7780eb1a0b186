"""The Glossary tab: search as you type, read an entry with its source, add and edit
local entries (kept apart from shipped and imported ones), import and export."""

from __future__ import annotations

import html
from pathlib import Path

from PySide6.QtCore import Qt, QTimer
from PySide6.QtGui import QKeySequence
from PySide6.QtWidgets import (QCheckBox, QComboBox, QDialog, QDialogButtonBox, QFileDialog,
                               QFormLayout, QHBoxLayout, QLabel, QLineEdit, QListWidget,
                               QListWidgetItem, QPlainTextEdit, QPushButton, QSplitter,
                               QTextBrowser, QVBoxLayout, QWidget)

from ..core.results import GLOSSARY_CATEGORIES as CATEGORIES
from ..core.results import Glossary, GlossaryEntry
from ..core.session import Session
from .messages import show_error, show_info
from .progress_bar import TaskProgress
from .shortcuts import keyboard_shortcut
from .workers import SessionOp

SOURCE_LABEL = {"lumen": "Lumen glossary", "medlineplus": "MedlinePlus (imported)",
                "local": "Added or edited here"}


def _split(text: str) -> list[str]:
    return [part.strip() for part in text.split(",") if part.strip()]


class EntryDialog(QDialog):
    """Add a local entry, or edit (override) any entry, with the grade level shown live."""

    def __init__(self, session: Session, entry: GlossaryEntry | None, parent: QWidget) -> None:
        super().__init__(parent)
        self.session = session
        self.entry = entry
        self.setObjectName("entryDialog")
        self.setWindowTitle("Edit glossary entry" if entry else "New glossary entry")
        self.term = QLineEdit(entry.term if entry else "")
        self.aliases = QLineEdit(", ".join(entry.aliases) if entry else "")
        self.aliases.setPlaceholderText("other names, separated by commas")
        self.abbreviations = QLineEdit(", ".join(entry.abbreviations) if entry else "")
        self.abbreviations.setPlaceholderText("e.g. CHF, HF (matched with exact capitals)")
        self.category = QComboBox()
        self.category.addItems(CATEGORIES)
        self.category.setCurrentText(entry.category if entry else "condition")
        self.definition = QPlainTextEdit(entry.definition if entry else "")
        self.definition.setPlaceholderText("One or two short sentences a patient can read.")
        self.grade = QLabel()
        self.grade.setObjectName("gradeLabel")
        self.hide_entry = QCheckBox("Hide this entry everywhere")
        self.hide_entry.setVisible(entry is not None)
        self.error = QLabel()
        self.error.setStyleSheet("color: #b3261e")
        self.error.setWordWrap(True)
        form = QFormLayout()
        form.addRow("Term:", self.term)
        form.addRow("Other names:", self.aliases)
        form.addRow("Abbreviations:", self.abbreviations)
        form.addRow("Category:", self.category)
        form.addRow("Definition:", self.definition)
        form.addRow("", self.grade)
        form.addRow("", self.hide_entry)
        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Save
                                   | QDialogButtonBox.StandardButton.Cancel)
        buttons.accepted.connect(self.accept)
        buttons.rejected.connect(self.reject)
        layout = QVBoxLayout(self)
        if entry is not None and entry.source != "local":
            note = QLabel(f"Your edit is kept apart from the {SOURCE_LABEL[entry.source]} entry "
                          "and replaces it here; re-importing does not undo it.")
            note.setWordWrap(True)
            layout.addWidget(note)
        layout.addLayout(form)
        layout.addWidget(self.error)
        layout.addWidget(buttons)
        self.definition.textChanged.connect(self._update_grade)
        self._update_grade()
        self.saved_key: str | None = None

    def _update_grade(self) -> None:
        text = self.definition.toPlainText().strip()
        if not text:
            self.grade.setText("")
            return
        grade = self.session.terms.reading_grade(text)
        self.grade.setText(f"Reading grade {grade:.1f}" + (" (aim for 8 or below)" if grade > 8 else ""))

    def accept(self) -> None:
        entry = self.entry
        try:
            self.saved_key = self.session.terms.save_local(
                term=self.term.text(), definition=self.definition.toPlainText(),
                category=self.category.currentText(), aliases=_split(self.aliases.text()),
                abbreviations=_split(self.abbreviations.text()),
                overrides=(entry.overrides or None) if entry and entry.source == "local"
                else (entry.key if entry else None),
                hidden=self.hide_entry.isChecked(),
                entry_key=entry.key if entry and entry.source == "local" else None)
        except Exception as exc:  # shown in the dialog, which stays open
            self.error.setText(getattr(exc, "message", str(exc)) + " " + getattr(exc, "fix", ""))
            return
        super().accept()


class GlossaryPage(QWidget):
    def __init__(self, session: Session, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.session = session
        self.glossary: Glossary = session.glossary
        self.search = QLineEdit()
        self.search.setObjectName("glossarySearch")
        self.search.setPlaceholderText("Search the glossary (Ctrl+F): a word, abbreviation or misspelling")
        self.search.setClearButtonEnabled(True)
        keyboard_shortcut(self, QKeySequence.StandardKey.Find, self.search.setFocus, "Search the glossary")
        self.results = QListWidget()
        self.results.setObjectName("glossaryResults")
        self.count = QLabel()
        self.view = QTextBrowser()
        self.view.setObjectName("glossaryEntry")
        self.view.setOpenExternalLinks(False)  # no browser: Lumen works offline
        self.new_button = QPushButton("New entry…")
        self.new_button.setShortcut(QKeySequence.StandardKey.New)
        self.new_button.setToolTip("Add a local entry (Ctrl+N)")
        self.edit_button = QPushButton("Edit…")
        self.edit_button.setShortcut(QKeySequence("Ctrl+E"))
        self.edit_button.setToolTip("Change this entry here; shipped and imported entries keep their original")
        self.delete_button = QPushButton("Delete local entry")
        self.delete_button.setShortcut(QKeySequence("Ctrl+D"))
        self.import_button = QPushButton("Import…")
        self.import_button.setShortcut(QKeySequence("Ctrl+I"))
        self.import_button.setToolTip("MedlinePlus health-topics XML, or local entries exported from another workstation")
        self.export_button = QPushButton("Export local entries…")
        self.export_button.setShortcut(QKeySequence("Ctrl+Shift+E"))
        self.progress = TaskProgress()
        for button, slot in ((self.new_button, self.new_entry), (self.edit_button, self.edit_entry),
                             (self.delete_button, self.delete_entry),
                             (self.import_button, self.choose_import),
                             (self.export_button, self.choose_export)):
            button.clicked.connect(slot)
        left = QVBoxLayout()
        left.addWidget(self.search)
        left.addWidget(self.results, 1)
        left.addWidget(self.count)
        left_widget = QWidget()
        left_widget.setLayout(left)
        right = QVBoxLayout()
        right.addWidget(self.view, 1)
        actions = QHBoxLayout()
        for button in (self.new_button, self.edit_button, self.delete_button):
            actions.addWidget(button)
        actions.addStretch(1)
        actions.addWidget(self.import_button)
        actions.addWidget(self.export_button)
        right.addLayout(actions)
        right_widget = QWidget()
        right_widget.setLayout(right)
        splitter = QSplitter()
        splitter.addWidget(left_widget)
        splitter.addWidget(right_widget)
        splitter.setSizes([360, 700])
        layout = QVBoxLayout(self)
        layout.addWidget(self.progress)
        layout.addWidget(splitter, 1)
        self._timer = QTimer(self)
        self._timer.setSingleShot(True)
        self._timer.setInterval(120)
        self._timer.timeout.connect(self.refresh_results)
        self.search.textChanged.connect(lambda _text: self._timer.start())
        self.results.currentItemChanged.connect(self._show_current)
        self.refresh_results()

    # ---- display ----

    def reload(self) -> None:
        """Show the session's glossary as it is now (after a change: Session.changed)."""
        self.glossary = self.session.glossary
        self.refresh_results()

    def refresh_results(self) -> None:
        found = self.glossary.search(self.search.text())
        self.results.clear()
        for entry in found:
            item = QListWidgetItem(f"{entry.term}" + (f"  ({', '.join(entry.abbreviations)})"
                                                      if entry.abbreviations else ""))
            item.setData(Qt.ItemDataRole.UserRole, entry.key)
            item.setToolTip(SOURCE_LABEL.get(entry.source, entry.source))
            self.results.addItem(item)
        counts = self.glossary.counts()
        self.count.setText(f"{len(found)} shown · {len(self.glossary.entries)} entries "
                           f"({counts.get('lumen', 0)} Lumen, {counts.get('medlineplus', 0)} "
                           f"MedlinePlus, {counts.get('local', 0)} local)")
        if found:
            self.results.setCurrentRow(0)
        else:
            self.view.setHtml("<p>No entry matches. Try another spelling, or add one with "
                              "<b>New entry…</b>.</p>")
        self._update_buttons()

    def current_entry(self) -> GlossaryEntry | None:
        item = self.results.currentItem()
        return self.glossary.by_key.get(item.data(Qt.ItemDataRole.UserRole)) if item else None

    def _update_buttons(self) -> None:
        entry = self.current_entry()
        self.edit_button.setEnabled(entry is not None)
        self.delete_button.setEnabled(entry is not None and entry.source == "local")

    def _show_current(self, *_args) -> None:
        entry = self.current_entry()
        self._update_buttons()
        if entry is None:
            return
        esc = html.escape
        parts = [f"<h2>{esc(entry.term)}</h2>",
                 f"<p><i>{esc(entry.category)} · {esc(SOURCE_LABEL.get(entry.source, entry.source))}"
                 f"</i></p>", f"<p style='font-size: 13pt'>{esc(entry.definition)}</p>"]
        if entry.abbreviations:
            parts.append(f"<p><b>Abbreviations:</b> {esc(', '.join(entry.abbreviations))}</p>")
        if entry.aliases:
            parts.append(f"<p><b>Also called:</b> {esc(', '.join(entry.aliases))}</p>")
        if entry.medlineplus_url:
            parts.append(f"<p><b>MedlinePlus:</b> {esc(entry.medlineplus_title)} — "
                         f"{esc(entry.medlineplus_url)}<br><small>(address shown for reference; "
                         "Lumen opens no web pages)</small></p>")
        if entry.summary and entry.summary != entry.definition:
            paragraphs = "".join(f"<p>{esc(line)}</p>" for line in entry.summary.split("\n"))
            parts.append(f"<h3>MedlinePlus summary</h3>{paragraphs}")
        if entry.groups:
            parts.append(f"<p><b>Groups:</b> {esc(', '.join(entry.groups))}</p>")
        self.view.setHtml("".join(parts))

    # ---- editing ----

    def _select(self, key: str) -> None:
        for row in range(self.results.count()):
            if self.results.item(row).data(Qt.ItemDataRole.UserRole) == key:
                self.results.setCurrentRow(row)
                return

    def _open_editor(self, entry: GlossaryEntry | None) -> EntryDialog:
        dialog = EntryDialog(self.session, entry, self)

        def saved() -> None:
            # Show what was just saved, whatever was searched before.
            self.search.blockSignals(True)
            self.search.setText(dialog.term.text().strip())
            self.search.blockSignals(False)
            self.reload()
            if dialog.saved_key:
                self._select(dialog.saved_key)
        dialog.accepted.connect(saved)
        dialog.open()
        return dialog

    def new_entry(self) -> EntryDialog:
        return self._open_editor(None)

    def edit_entry(self) -> EntryDialog | None:
        entry = self.current_entry()
        return self._open_editor(entry) if entry else None

    def delete_entry(self) -> None:
        entry = self.current_entry()
        if entry is None:
            return
        try:
            self.session.terms.delete_local(entry.key)
        except Exception as exc:
            show_error(self, exc)
            return
        self.reload()

    # ---- import and export ----

    def choose_import(self) -> None:
        path, _ = QFileDialog.getOpenFileName(
            self, "Import into the glossary", str(Path.home()),
            "MedlinePlus topics or local entries (*.xml *.toml);;All files (*)")
        if path:
            self.import_file(Path(path))

    def import_file(self, path: Path) -> None:
        terms = self.session.terms

        def work(progress, cancel):
            counts = terms.import_file(path, progress, cancel)
            if "local_entries" in counts:
                return f"{counts['local_entries']} local entries imported."
            return (f"{counts['topics']} MedlinePlus topics imported from {counts['source_file']} "
                    f"({counts['new_topics']} new, {counts['updated_topics']} updated, "
                    f"{counts['also_called']} other names).")

        def done(message: str) -> None:
            self.reload()
            show_info(self, "Glossary import", message)
        SessionOp(self, work, progress=self.progress, message=f"Importing {path.name}…",
                  disable=(self.import_button,)).success(done).run_in_background()

    def choose_export(self) -> None:
        path, _ = QFileDialog.getSaveFileName(self, "Export local glossary entries",
                                              str(Path.home() / "lumen-glossary-local.toml"),
                                              "Glossary entries (*.toml)")
        if path:
            self.export_file(Path(path))

    def export_file(self, path: Path) -> None:
        try:
            # The save dialog asked before a file was replaced.
            count = self.session.terms.export_local(path, force=True)
        except Exception as exc:
            show_error(self, exc)
            return
        show_info(self, "Glossary export", f"{count} local entries written to {path}.")
