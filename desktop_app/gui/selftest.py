"""`lumen --selftest`: the window, offscreen, against this installation.

Checks the models (sha256), the embedder, SQLCipher (in a throwaway database, so
no passphrase is needed) and the GUI: the main window is built, the doctor's
findings reach the Status page and the Models page lists the models.  Then the
libraries that features load only when used, each once on a tiny input: the
vector store (chromadb), the evaluation metrics and statistics, the document
readers and Parquet import; in an installed bundle these are the parts most
likely to be missing.  Prints each check and returns 0 only if all pass.
"""

from __future__ import annotations

import secrets
import sqlite3
import sys
import tempfile
import time
from pathlib import Path

from ..core.config import Paths, Settings
from ..core.store import Store
from ..core.store.keys import DatabaseKey


def _check_encryption(folder: Path) -> str:
    path = folder / "selftest.db"
    marker = "selftest-" + secrets.token_hex(8)
    with Store(path, DatabaseKey("raw", secrets.token_hex(32)), collects_refusals=False) as store:
        store.audit(marker)
        store.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    if marker.encode() in path.read_bytes():
        raise AssertionError("the test database holds readable text")
    try:
        sqlite3.connect(path).execute("SELECT * FROM sqlite_master").fetchall()
    except sqlite3.DatabaseError:
        return "SQLCipher database unreadable without its key"
    raise AssertionError("plain SQLite could read the encrypted test database")


_SENTENCES = ("Take one tablet by mouth each morning with food.",
              "The wound on your leg is healing well.",
              "Quarterly tax forms are due in April.")


def _check_vector_store(folder: Path, embedder) -> str:
    import chromadb
    from chromadb.config import Settings as ChromaSettings

    client = chromadb.PersistentClient(
        path=str(folder / "vectors"),
        settings=ChromaSettings(anonymized_telemetry=False, allow_reset=True))
    try:
        collection = client.create_collection("selftest", embedding_function=None,
                                              metadata={"hnsw:space": "cosine"})
        collection.add(ids=["0", "1", "2"], embeddings=embedder.embed(list(_SENTENCES)).tolist(),
                       documents=list(_SENTENCES))
        query = embedder.embed(["The cut on the leg is getting better."]).tolist()
        nearest = collection.query(query_embeddings=query, n_results=1)["ids"][0][0]
        if nearest != "1":
            raise AssertionError(f"the nearest stored sentence was #{nearest}, not #1")
        return f"chromadb {chromadb.__version__}: stored 3 vectors, nearest neighbour found"
    finally:
        client.clear_system_cache()


def _check_metrics(embedder, cache_dir: Path) -> str:
    import math

    from ..core.evaluation import metrics, stats

    text = _SENTENCES[0]
    scores = metrics.score_all(text, text, text, embedder=embedder, cache_dir=cache_dir)
    exact = {name: scores[name] for name in ("bleu", "rouge_l", "token_f1", "sbert", "bertscore_f1")}
    if any(not math.isclose(value, 100.0, abs_tol=0.5) for value in exact.values()):
        raise AssertionError(f"identical texts did not score 100: {exact}")
    low, high = stats.bootstrap_interval([1.0, 2.0, 3.0, 4.0], resamples=1000)
    mean = 2.5
    test = stats.wilcoxon([3.0, 4.0, 5.0, 6.0, 7.0, 8.0], [1.0, 1.5, 2.0, 2.5, 3.0, 3.5])
    if not (low < mean < high and 0.0 < test["p_value"] <= 1.0):
        raise AssertionError("the statistics gave impossible values")
    from ..core.readability import RARE_WORD_GRADE, word_grade

    # The word list ships with wordfreq (packaging/hooks/hook-wordfreq.py keeps English only).
    if not word_grade("history") < word_grade("cellulitis") == RARE_WORD_GRADE:
        raise AssertionError("word grades are missing: wordfreq's English list was not found")
    return (f"SARI {scores['sari']:.0f}, FKGL {scores['fkgl']:.1f}, BLEU, ROUGE-L, Token F1, "
            f"SBERT and BERTScore 100 on identical texts; bootstrap interval and Wilcoxon (scipy) "
            f"work; word grades read")


def _check_documents(folder: Path) -> str:
    import docx

    from ..core.documents import read_document
    from ..export import html_to_pdf

    word = folder / "summary.docx"
    document = docx.Document()
    document.add_paragraph(_SENTENCES[0])
    document.save(str(word))
    pdf = folder / "summary.pdf"
    html_to_pdf(f"<p>{_SENTENCES[1]}</p>", pdf)
    read_word, read_pdf = read_document(word), read_document(pdf)
    if "tablet" not in read_word or "healing" not in read_pdf:
        raise AssertionError("a written document did not read back")
    return "a .docx (python-docx) and a PDF (Qt, read back by pypdf) round-trip"


def _check_parquet(folder: Path) -> str:
    import pyarrow as pa
    import pyarrow.parquet as pq

    from ..core.evaluation.importers import columns

    path = folder / "benchmark.parquet"
    pq.write_table(pa.table({"question": ["Why?"], "answer": ["Because."]}), path)
    found = columns(path)
    if found != ["question", "answer"]:
        raise AssertionError(f"the Parquet file's columns read as {found}")
    return f"pyarrow {pa.__version__}: a Parquet benchmark file's columns read back"


def _check_charts() -> str:
    """Result charts are SVG: QtSvg draws them in the window, Qt's SVG image plugin in PDFs."""
    from PySide6.QtCore import QByteArray
    from PySide6.QtGui import QImageReader
    from PySide6.QtSvg import QSvgRenderer

    from ..core.evaluation.chart import Bar, bar_chart_svg

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
    from .app import application
    from .main_window import MainWindow

    app = application()
    results: list[tuple[str, bool, str]] = []

    def record(name: str, ok: bool, detail: str) -> None:
        results.append((name, ok, detail))
        print(f"[{'PASS' if ok else 'FAIL'}] {name}: {detail}", flush=True)

    with tempfile.TemporaryDirectory(prefix="lumen-selftest-", ignore_cleanup_errors=True) as folder:
        try:
            record("Encrypted database", True, _check_encryption(Path(folder)))
        except Exception as exc:
            record("Encrypted database", False, str(exc))
        with Store(Path(folder) / "session.db", DatabaseKey("raw", secrets.token_hex(32)),
                   collects_refusals=False) as store:
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
            components = (
                ("Vector store", lambda: _check_vector_store(Path(folder),
                                                             session.runtime.embedder())),
                ("Evaluation metrics", lambda: _check_metrics(session.runtime.embedder(),
                                                              paths.cache_dir)),
                ("Documents", lambda: _check_documents(Path(folder))),
                ("Parquet import", lambda: _check_parquet(Path(folder))),
                ("Charts", _check_charts),
            )
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
