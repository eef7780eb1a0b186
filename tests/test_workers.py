"""SessionOp (gui/workers.py): how every page runs a core call in the background, with
real Qt widgets and the real thread pool (issue #34)."""

from __future__ import annotations

import threading

from desktop_app.core.errors import LumenError


def test_a_session_op_disables_its_buttons_tracks_progress_and_reports_once(qtbot):
    from PySide6.QtWidgets import QMessageBox, QPushButton, QWidget

    from desktop_app.core.progress import ProgressReport
    from desktop_app.gui.progress_bar import TaskProgress
    from desktop_app.gui.workers import SessionOp

    page = QWidget()
    qtbot.addWidget(page)
    button, progress = QPushButton("Import", page), TaskProgress(page)
    page.show()
    release, results = threading.Event(), []

    def work(progress, cancel):
        progress(ProgressReport(1, 2, "Halfway"))
        release.wait(10)
        return 42

    SessionOp(page, work, progress=progress, message="Importing…", disable=(button,)
              ).success(results.append).run_in_background()
    assert not button.isEnabled() and progress.isVisible()
    qtbot.waitUntil(lambda: progress.label.text() == "Halfway", timeout=5000)
    release.set()
    qtbot.waitUntil(lambda: results == [42], timeout=5000)
    assert button.isEnabled() and not progress.isVisible()

    # A failure: the buttons come back, and the shared error dialog says what and what to do.
    def broken(progress, cancel):
        raise LumenError("The file is not a glossary.", "Choose a .toml or MedlinePlus file.")
    SessionOp(page, broken, disable=(button,)).success(results.append).run_in_background()
    qtbot.waitUntil(lambda: page.findChild(QMessageBox, "errorDialog") is not None, timeout=5000)
    dialog = page.findChild(QMessageBox, "errorDialog")
    assert "not a glossary" in dialog.text() and "Choose a .toml" in dialog.informativeText()
    assert button.isEnabled() and results == [42]
    dialog.close()

    # A page's own failure handler replaces the dialog.
    failures = []
    SessionOp(page, broken, disable=(button,)).failure(failures.append).run_in_background()
    qtbot.waitUntil(lambda: len(failures) == 1, timeout=5000)
    assert isinstance(failures[0], LumenError) and button.isEnabled()
