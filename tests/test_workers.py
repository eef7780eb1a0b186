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


def _cycle_freed_after_worker_allocates() -> list[str]:
    """Makes a reference cycle whose finaliser records the thread that freed it, drops it,
    lets a worker thread make enough cyclic garbage to fill the young generation (what
    the collector counts is objects allocated less objects freed), and returns the
    list the finaliser writes its thread's name to (empty while nobody has freed it)."""
    freed_on: list[str] = []

    class Node:
        def __del__(self) -> None:
            freed_on.append(threading.current_thread().name)

    node = Node()
    node.self = node
    del node

    def allocate() -> None:
        for _ in range(20_000):
            garbage: list = []
            garbage.append(garbage)
    worker = threading.Thread(target=allocate, name="worker")
    worker.start()
    worker.join()
    return freed_on


def test_cycles_are_collected_on_the_gui_thread_never_in_a_worker(qtbot):
    """A cycle that holds the last reference to a Qt object and is collected in a worker
    destroys that object on the wrong thread (CI crashed so); the window collects on the
    GUI thread only (gui/garbage.py)."""
    import gc

    from PySide6.QtWidgets import QApplication

    from desktop_app.gui.app import application
    from desktop_app.gui.garbage import GuiThreadCollector

    # The control: with Python's own collection, a worker's allocations collect the cycle.
    gc.enable()
    gc.collect()
    assert _cycle_freed_after_worker_allocates() == ["worker"]

    app = application()  # what `lumen` and the self-test start with
    assert app is QApplication.instance() and not gc.isenabled()
    collector = app.findChild(GuiThreadCollector)
    assert collector is not None and application().findChildren(GuiThreadCollector) == [collector]

    gc.collect()
    freed_on = _cycle_freed_after_worker_allocates()
    assert freed_on == []
    qtbot.waitUntil(lambda: freed_on == [threading.main_thread().name], timeout=5000)
