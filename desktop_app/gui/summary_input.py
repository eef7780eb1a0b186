"""Shared pieces of the Ask and Simplify tabs: a summary box that opens and accepts
dropped .txt/.docx/.pdf files, glossary highlighting with definitions on hover, the
bridge that carries pipeline events to the GUI thread, and printing."""

from __future__ import annotations

import html
from pathlib import Path

from PySide6.QtCore import QObject, QUrl, Signal
from PySide6.QtGui import QCursor, QTextDocument
from PySide6.QtWidgets import QFileDialog, QPlainTextEdit, QTextBrowser, QToolTip, QWidget

from ..core.documents import SUPPORTED, read_document
from ..core.glossary.glossary import Glossary
from .messages import show_error

FILE_FILTER = "Discharge summaries (*.txt *.docx *.pdf);;All files (*)"


class EventBridge(QObject):
    """Pipeline events from a worker thread, delivered as a Qt signal on the GUI thread."""

    event = Signal(str, object)

    def __call__(self, kind: str, data: dict) -> None:
        self.event.emit(kind, data)


class SummaryEditor(QPlainTextEdit):
    """The summary, typed, pasted, opened or dropped in."""

    loaded = Signal(str)  # file name

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("summaryEditor")
        self.setPlaceholderText("Paste the discharge summary here, open a file (Ctrl+O), or drop "
                                "a .txt, .docx or .pdf file on this box.")
        self.setAcceptDrops(True)

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
            if path.suffix.lower() in SUPPORTED:
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
    for match in glossary.match(text):
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


def print_html(parent: QWidget, html_text: str, title: str) -> None:
    from PySide6.QtPrintSupport import QPrintDialog, QPrinter

    printer = QPrinter(QPrinter.PrinterMode.HighResolution)
    printer.setDocName(title)
    dialog = QPrintDialog(printer, parent)
    if dialog.exec() == QPrintDialog.DialogCode.Accepted:
        document = QTextDocument()
        document.setHtml(html_text)
        document.print_(printer)
