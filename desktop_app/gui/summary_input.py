"""Shared pieces of the Ask and Simplify tabs: a summary box that opens and accepts
dropped .txt/.docx/.pdf files and marks evidence lines, glossary highlighting with
definitions on hover, the bridge that carries pipeline events to the GUI thread, and
printing."""

from __future__ import annotations

import html
from pathlib import Path

from PySide6.QtCore import QObject, QUrl, Signal
from PySide6.QtGui import QColor, QCursor, QPalette, QTextCursor, QTextDocument
from PySide6.QtWidgets import QFileDialog, QPlainTextEdit, QTextBrowser, QTextEdit, QToolTip, QWidget

from ..core.results import DOCUMENT_TYPES, Glossary, read_document
from .messages import show_error

FILE_FILTER = "Discharge summaries (*.txt *.docx *.pdf);;All files (*)"
EVIDENCE_BACKGROUND = "#fff0b3"  # pale yellow: dark text stays readable on it


def qt_position(text: str, index: int) -> int:
    """A Python str index as a Qt document position.  Qt counts UTF-16 code units, so a
    character outside the Basic Multilingual Plane (an emoji, some CJK) takes two."""
    return index + sum(1 for ch in text[:index] if ord(ch) > 0xFFFF)


class EventBridge(QObject):
    """Pipeline events from a worker thread, delivered as a Qt signal on the GUI thread."""

    event = Signal(str, object)

    def __call__(self, kind: str, data: dict) -> None:
        self.event.emit(kind, data)


class SummaryEditor(QPlainTextEdit):
    """The summary, typed, pasted, opened or dropped in.  Evidence lines are marked with a
    background (extra selections: the text itself is never rewritten) and one of them can
    be selected and scrolled into view; the marks go when the text changes."""

    loaded = Signal(str)  # file name

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("summaryEditor")
        self.setPlaceholderText("Paste the discharge summary here, open a file (Ctrl+O), or drop "
                                "a .txt, .docx or .pdf file on this box.")
        self.setAcceptDrops(True)
        # Tab and Shift+Tab move to the next control, as in every other box of the window
        # (a summary is pasted or opened, not laid out with typed tabs; pasted tabs stay);
        # the setting tab_types_tab gives Tab back to the text.
        self.set_tab_types_tab(False)
        self._evidence_text: str | None = None  # the text the evidence offsets point into
        self._evidence_spans: list[tuple[int, int]] = []
        self._jumped: tuple[int, int] | None = None  # Qt positions of the span last selected
        # A line selected from the evidence list stays visible while the list keeps focus.
        palette = self.palette()
        for role in (QPalette.ColorRole.Highlight, QPalette.ColorRole.HighlightedText):
            palette.setColor(QPalette.ColorGroup.Inactive, role,
                             palette.color(QPalette.ColorGroup.Active, role))
        self.setPalette(palette)
        self.textChanged.connect(self._text_changed)

    def set_tab_types_tab(self, types: bool) -> None:
        self.setTabChangesFocus(not types)

    # ---- evidence ----

    def span_cursor(self, start: int, end: int, text: str | None = None) -> QTextCursor:
        """A cursor selecting text[start:end] (Python offsets) in the document; the
        cursor's position is the span's start, its anchor the end."""
        text = self.toPlainText() if text is None else text
        last = self.document().characterCount() - 1
        cursor = QTextCursor(self.document())
        cursor.setPosition(min(qt_position(text, end), last))
        cursor.setPosition(min(qt_position(text, start), last), QTextCursor.MoveMode.KeepAnchor)
        return cursor

    def show_evidence(self, text: str, spans: list[tuple[int, int]]) -> bool:
        """Mark the spans (offsets into `text`, the summary as it was asked about); nothing
        is marked, and False returned, when the box no longer holds that text."""
        self.clear_evidence()
        if self.toPlainText() != text:
            return False
        self._evidence_text, self._evidence_spans = text, list(spans)
        selections = []
        for start, end in spans:
            selection = QTextEdit.ExtraSelection()
            selection.cursor = self.span_cursor(start, end, text)
            selection.format.setBackground(QColor(EVIDENCE_BACKGROUND))
            selection.format.setForeground(QColor("#1f1f1f"))
            selections.append(selection)
        self.setExtraSelections(selections)
        return True

    def evidence_current(self) -> bool:
        """The marks still point at the text in the box."""
        return self._evidence_text is not None and self._evidence_text == self.toPlainText()

    def evidence_spans(self) -> list[tuple[int, int]]:
        return list(self._evidence_spans)

    def clear_evidence(self) -> None:
        self._evidence_text, self._evidence_spans = None, []
        if self.extraSelections():
            self.setExtraSelections([])

    def select_span(self, start: int, end: int) -> bool:
        """Select an evidence span and scroll it into view (its end first, then its start,
        so a short span shows whole and a long one from its beginning)."""
        if not self.evidence_current():
            return False
        end_only = self.span_cursor(end, end)
        self.setTextCursor(end_only)
        self.ensureCursorVisible()
        cursor = self.span_cursor(start, end)
        self.setTextCursor(cursor)
        self.ensureCursorVisible()
        self._jumped = (cursor.selectionStart(), cursor.selectionEnd())
        return True

    def forget_jump(self) -> None:
        """Deselect the evidence span last jumped to, if it is still the selection."""
        cursor = self.textCursor()
        if self._jumped == (cursor.selectionStart(), cursor.selectionEnd()) and cursor.hasSelection():
            cursor.clearSelection()
            self.setTextCursor(cursor)
        self._jumped = None

    def _text_changed(self) -> None:
        if self._evidence_text is not None and not self.evidence_current():
            self.clear_evidence()

    def open_file(self, path: Path) -> bool:
        try:
            text = read_document(path)
        except Exception as exc:
            show_error(self, exc)
            return False
        self.setPlainText(text)
        self.loaded.emit(Path(path).name)
        return True

    def choose_file(self) -> None:
        path, _ = QFileDialog.getOpenFileName(self, "Open a discharge summary", str(Path.home()),
                                              FILE_FILTER)
        if path:
            self.open_file(Path(path))

    def dragEnterEvent(self, event) -> None:  # noqa: N802 (Qt's name)
        if event.mimeData().hasUrls():
            event.acceptProposedAction()
        else:
            super().dragEnterEvent(event)

    def dragMoveEvent(self, event) -> None:  # noqa: N802
        if event.mimeData().hasUrls():
            event.acceptProposedAction()
        else:
            super().dragMoveEvent(event)

    def dropEvent(self, event) -> None:  # noqa: N802
        urls = [u for u in event.mimeData().urls() if u.isLocalFile()]
        if urls:
            path = Path(urls[0].toLocalFile())
            if path.suffix.lower() in DOCUMENT_TYPES:
                self.open_file(path)
                event.acceptProposedAction()
                return
        super().dropEvent(event)


def highlighted_html(text: str, glossary: Glossary, flags: list[dict] | None = None) -> str:
    """Text as HTML with glossary terms linked (definitions on hover) and flagged facts marked."""
    marks: list[tuple[int, int, str, str]] = []
    for flag in flags or []:
        if flag.get("start", -1) >= 0:
            marks.append((flag["start"], flag["end"], "flag", flag.get("kind", "")))
    taken = {i for start, end, _, _ in marks for i in range(start, end)}
    for match in glossary.jargon(text):  # words above the reader's grade only
        if not taken.intersection(range(match.start, match.end)):
            marks.append((match.start, match.end, "term", match.key))
    marks.sort()
    out, position = [], 0
    for start, end, kind, value in marks:
        out.append(html.escape(text[position:start]))
        piece = html.escape(text[start:end])
        if kind == "flag":
            out.append(f"<span style='background:#ffd7d0' title='Not found in the summary'>"
                       f"<a href='flag:{html.escape(value)}' style='color:#7a1a12'>{piece}</a></span>")
        else:
            out.append(f"<a href='gloss:{html.escape(value)}' style='color:#0b4f8a;"
                       f"text-decoration:none;background:#eaf2fb'>{piece}</a>")
        position = end
    out.append(html.escape(text[position:]))
    return "".join(out).replace("\n", "<br>")


class GlossaryBrowser(QTextBrowser):
    """A read-only view whose glossary links show their definition when hovered."""

    def __init__(self, glossary: Glossary, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.glossary = glossary
        self.setOpenLinks(False)
        self.highlighted.connect(self._hovered)

    def definition_for(self, url: QUrl | str) -> str:
        link = url.toString() if isinstance(url, QUrl) else url
        if link.startswith("gloss:"):
            entry = self.glossary.by_key.get(link[6:])
            return f"{entry.term}: {entry.definition}" if entry else ""
        if link.startswith("flag:"):
            return ("Not found in the discharge summary. Check this against the summary "
                    "before using it.")
        return ""

    def _hovered(self, url: QUrl) -> None:
        text = self.definition_for(url)
        if text:
            QToolTip.showText(QCursor.pos(), text, self)
        else:
            QToolTip.hideText()


def print_html(parent: QWidget, html_text: str, title: str, audit_log=None, action: str = "",
               **ids: str) -> None:
    """Print through the system's dialog; a printed copy is recorded as `action` in
    `audit_log` (the Session)."""
    from PySide6.QtPrintSupport import QPrintDialog, QPrinter

    from ..export import audit_output

    printer = QPrinter(QPrinter.PrinterMode.HighResolution)
    printer.setDocName(title)
    dialog = QPrintDialog(printer, parent)
    if dialog.exec() == QPrintDialog.DialogCode.Accepted:
        document = QTextDocument()
        document.setHtml(html_text)
        document.print_(printer)
        audit_output(audit_log, action, "print", **ids)
