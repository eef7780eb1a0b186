"""`lumen --selftest`: the window, offscreen, against this installation.

Checks the models (sha256), the embedder, SQLCipher and the GUI: the main window is
built, the doctor's findings reach the Status page and the Models page lists the
models.  Then the libraries that features load only when used (core/selftest.py), the
document readers and writers, and the charts (QtSvg).  Prints each check and returns 0
only if all pass.
"""

from __future__ import annotations

import sys
import tempfile
import time
from pathlib import Path

from typing import TYPE_CHECKING

from ..core.selftest import SAMPLE_SENTENCES, check_encryption, component_checks, scratch_store
from .app import application

if TYPE_CHECKING:
    from ..core.results import Paths, Settings


def _check_documents(folder: Path) -> str:
    import docx

    from ..core.results import read_document
    from ..export import html_to_pdf

    word = folder / "summary.docx"
    document = docx.Document()
    document.add_paragraph(SAMPLE_SENTENCES[0])
    document.save(str(word))
    pdf = folder / "summary.pdf"
    html_to_pdf(f"<p>{SAMPLE_SENTENCES[1]}</p>", pdf)
    read_word, read_pdf = read_document(word), read_document(pdf)
    if "tablet" not in read_word or "healing" not in read_pdf:
        raise AssertionError("a written document did not read back")
    return "a .docx (python-docx) and a PDF (Qt, read back by pypdf) round-trip"


def _check_charts() -> str:
    """Result charts are SVG: QtSvg draws them in the window, Qt's SVG image plugin in PDFs."""
    from PySide6.QtCore import QByteArray
    from PySide6.QtGui import QImageReader
    from PySide6.QtSvg import QSvgRenderer

    from ..core.results import Bar, bar_chart_svg

    svg = bar_chart_svg("BLEU", "score, 0 to 100", [("BLEU", [Bar("run", 40.0, 30.0, 50.0)])],
                        (0.0, 100.0))
    if not QSvgRenderer(QByteArray(svg.encode())).isValid():
        raise AssertionError("QtSvg could not read a results chart")
    if b"svg" not in [bytes(f) for f in QImageReader.supportedImageFormats()]:
        raise AssertionError("Qt's SVG image plugin is missing: PDF reports would lack charts")
    return "results charts draw in the window and in PDFs (QtSvg and its image plugin)"


def run_selftest(paths: Paths, settings: Settings) -> int:
    from PySide6.QtCore import QEventLoop, QTimer

    from ..core.session import Session
    from .main_window import MainWindow

    app = application()
    results: list[tuple[str, bool, str]] = []

    def record(name: str, ok: bool, detail: str) -> None:
        results.append((name, ok, detail))
        print(f"[{'PASS' if ok else 'FAIL'}] {name}: {detail}", flush=True)

    with tempfile.TemporaryDirectory(prefix="lumen-selftest-", ignore_cleanup_errors=True) as folder:
        try:
            record("Encrypted database", True, check_encryption(Path(folder)))
        except Exception as exc:
            record("Encrypted database", False, str(exc))
        with scratch_store(Path(folder) / "session.db") as store:
            session = Session(paths, settings, store)
            window = MainWindow(session)
            window.show()
            loop = QEventLoop()
            window.status_page.checked.connect(lambda _report: loop.quit())
            QTimer.singleShot(180_000, loop.quit)
            started = time.perf_counter()
            window.status_page.run_checks(measure_speed=True)
            loop.exec()
            report = window.status_page.report
            if report is None:
                record("Status page", False, "the checks did not finish within 3 minutes")
            else:
                rows = window.status_page.table.rowCount()
                record("Status page", rows == len(report.findings) and rows > 0,
                       f"{rows} findings shown in {time.perf_counter() - started:.1f} s")
                for finding in report.findings:
                    if finding.area == "Database" and finding.check == "OS keyring":
                        continue  # a passphrase set-up is a valid installation
                    if finding.area in ("Models", "Offline", "Database", "System"):
                        record(f"{finding.area}: {finding.check}", finding.status != "fail",
                               finding.detail + (f" → {finding.fix}" if finding.status == "fail" else ""))
            components = [*component_checks(Path(folder), session.embedder,
                                            paths.cache_dir),
                          ("Documents", lambda: _check_documents(Path(folder))),
                          ("Charts", _check_charts)]
            for name, check in components:
                try:
                    record(name, True, check())
                except Exception as exc:
                    record(name, False, f"{type(exc).__name__}: {exc}")
            model_rows = window.models_page.table.rowCount()
            record("Models page", model_rows > 0, f"{model_rows} models listed")
            record("Window", window.isVisible() and window.tabs.count() >= 2,
                   f"{window.tabs.count()} tabs on platform {app.platformName()}")
            window.close()
            app.processEvents()
            session.close()
    failed = [name for name, ok, _ in results if not ok]
    print("Self-test passed." if not failed else f"Self-test FAILED: {', '.join(failed)}", flush=True)
    sys.stdout.flush()
    return 0 if not failed else 1
