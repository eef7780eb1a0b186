"""`lumen --selftest`: the window, offscreen, against this installation.

Checks the models (sha256), the embedder, SQLCipher (in a throwaway database, so
no passphrase is needed) and the GUI: the main window is built, the doctor's
findings reach the Status page and the Models page lists the models.  Prints
each check and returns 0 only if all pass.
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
    with Store(path, DatabaseKey("raw", secrets.token_hex(32))) as store:
        store.audit(marker)
        store.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    if marker.encode() in path.read_bytes():
        raise AssertionError("the test database holds readable text")
    try:
        sqlite3.connect(path).execute("SELECT * FROM sqlite_master").fetchall()
    except sqlite3.DatabaseError:
        return "SQLCipher database unreadable without its key"
    raise AssertionError("plain SQLite could read the encrypted test database")


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

    with tempfile.TemporaryDirectory(prefix="lumen-selftest-") as folder:
        try:
            record("Encrypted database", True, _check_encryption(Path(folder)))
        except Exception as exc:
            record("Encrypted database", False, str(exc))
        with Store(Path(folder) / "session.db", DatabaseKey("raw", secrets.token_hex(32))) as store:
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
