"""Writing handouts and answers to files, and printing them.

Text and HTML come from the core.  A PDF needs a layout engine: Qt's QTextDocument
and QPdfWriter draw the same HTML offline, which is why this lives outside the core
(the core never imports Qt).  Both the command line and the window use it.
"""

from __future__ import annotations

from pathlib import Path

from typing import Any, Protocol

from .core.errors import LumenError
from .core.results import Handout, handout_file_kind


class AuditLog(Protocol):
    """Where an export is recorded: the Session (as the faces pass it) or a Store."""

    def audit(self, action: str, detail: dict[str, Any]) -> None: ...


def html_to_pdf(html: str, path: Path, title: str = "") -> None:
    """An A4 page with 18 mm margins, fonts at their print size, the document's <title>
    (or `title`) as the PDF's title."""
    import os
    import re

    if not (os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY")):
        os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")  # a PDF needs no screen
    from PySide6.QtCore import QMarginsF, QSizeF
    from PySide6.QtGui import QGuiApplication, QPageLayout, QPageSize, QPdfWriter, QTextDocument
    from PySide6.QtWidgets import QApplication

    # Fonts need an application object. A widgets one, so that a window opened later in the
    # same process (the test suite does) does not abort on a GUI-only application.
    app = QGuiApplication.instance() or QApplication([])  # noqa: F841
    writer = QPdfWriter(str(path))
    writer.setPageSize(QPageSize(QPageSize.PageSizeId.A4))
    writer.setPageMargins(QMarginsF(18, 18, 18, 18), QPageLayout.Unit.Millimeter)
    named = re.search(r"<title>(.*?)</title>", html, re.IGNORECASE | re.DOTALL)
    writer.setTitle(title or (named.group(1).strip() if named else "Lumen"))
    writer.setCreator("Lumen")
    document = QTextDocument()
    # Laid out for the PDF's own resolution: a point is then a point on paper (laid out for
    # the screen, the page came out at a quarter of its size in one corner).
    document.documentLayout().setPaintDevice(writer)
    document.setHtml(html)
    document.setPageSize(QSizeF(writer.width(), writer.height()))
    document.print_(writer)
    if not path.exists() or path.stat().st_size == 0:
        raise LumenError(f"The PDF {path} could not be written.",
                         "Check that the folder is writable and the disk is not full.")


def refuse_to_replace(path: Path, what: str, force: bool) -> None:
    """An existing file is replaced only when asked (`--force`, or the save dialog's
    question answered): refused before any work."""
    if path.exists() and not force:
        raise LumenError(f"{path} exists already; Lumen does not replace a file unasked.",
                         f"Choose another name for the {what}, or add --force to replace it.")


def _write_whole(path: Path, what: str, write) -> None:
    """`write(temporary)` then the temporary file renamed over `path`: a failure or a kill
    part-way leaves any earlier file at `path` as it was, never half a file."""
    import os
    import tempfile

    try:
        handle, name = tempfile.mkstemp(prefix=f".{path.stem}-", suffix=path.suffix,
                                        dir=path.parent if str(path.parent) else ".")
        os.close(handle)
        temporary = Path(name)
        try:
            write(temporary)
            os.replace(temporary, path)
        finally:
            temporary.unlink(missing_ok=True)
    except OSError as exc:
        raise LumenError(f"The {what} {path} could not be written ({exc.strerror or exc}).",
                         "Choose a folder you may write to.") from None


def write_report(report, path: Path, audit_log: AuditLog | None = None, *,
                 force: bool = False) -> None:
    """A validation report (core.evaluation.report.ValidationReport) as HTML, PDF or CSV,
    by the file's suffix, written whole (never over a file unless `force`); recorded in
    `audit_log`."""
    from .core.results import report_kind

    kind = report_kind(path.name)
    refuse_to_replace(path, "report", force)

    def write(target: Path) -> None:
        if kind == "csv":
            target.write_text(report.to_csv(), encoding="utf-8")
        elif kind == "pdf":
            html_to_pdf(report.to_html(), target)
        else:
            target.write_text(report.to_html(), encoding="utf-8")
    _write_whole(path, "report", write)
    audit_output(audit_log, "bench.report_exported", kind, run=report.summary["run"]["id"])


def write_handout(handout: Handout, path: Path, audit_log: AuditLog | None = None, *,
                  force: bool = False) -> None:
    """A handout as PDF, HTML or text, by the file's suffix, written whole (never over a
    file unless `force`); recorded in `audit_log`."""
    kind = handout_file_kind(path)
    refuse_to_replace(path, "handout", force)

    def write(target: Path) -> None:
        if kind == "pdf":
            html_to_pdf(handout.to_html(), target)
        else:
            target.write_text(handout.to_text() if kind == "txt" else handout.to_html(),
                              encoding="utf-8")
    _write_whole(path, "handout", write)
    audit_output(audit_log, "simplify.exported", kind, run=handout.trace.id)


def audit_output(audit_log: AuditLog | None, action: str, kind: str, **ids: str) -> None:
    """Record that patient or validation text left Lumen (a file or a printer): what and
    in which form, never the file's name, which may name a patient."""
    if audit_log is not None:
        audit_log.audit(action, {"format": kind, **ids})
