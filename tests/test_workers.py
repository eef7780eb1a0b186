"""SessionOp (gui/workers.py): how every page runs a core call in the background, with
real Qt widgets and the real thread pool (issue #34)."""

from __future__ import annotations

import ast
import threading
from pathlib import Path

from desktop_app.core.errors import LumenError

GUI = Path(__file__).resolve().parent.parent / "desktop_app" / "gui"
# What starts work off the GUI thread by itself: the bare helper under SessionOp, a pool,
# a runnable, a thread.  Only gui/workers.py may use them.
STARTERS = {"run_in_background", "QThreadPool", "QRunnable", "QThread", "Thread",
            "ThreadPoolExecutor"}


def test_a_session_op_disables_its_buttons_tracks_progress_and_reports_once(qtbot):
    from PySide6.QtWidgets import QMessageBox, QPushButton, QWidget

    from desktop_app.core.progress import ProgressReport
    from desktop_app.gui.progress_bar import TaskProgress
    from desktop_app.gui.workers import SessionOp, show_failure

    page = QWidget()
    qtbot.addWidget(page)
    button, progress = QPushButton("Import", page), TaskProgress(page)
    page.show()
    release, results = threading.Event(), []

    def work(progress, cancel):
        progress(ProgressReport(1, 2, "Halfway"))
        release.wait(10)
        return 42

    seen = []  # what a page's own progress handler (the time left) sees, after the bar
    SessionOp(page, work, progress=progress, message="Importing…", disable=(button,)
              ).progressed(lambda update: seen.append((update.done, progress.label.text()))
                           ).success(results.append).run_in_background()
    assert not button.isEnabled() and progress.isVisible()
    qtbot.waitUntil(lambda: progress.label.text() == "Halfway", timeout=5000)
    qtbot.waitUntil(lambda: seen == [(1, "Halfway")], timeout=5000)
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

    # A page's own failure handler replaces the dialog...
    failures = []
    SessionOp(page, broken, disable=(button,)).failure(failures.append).run_in_background()
    qtbot.waitUntil(lambda: len(failures) == 1, timeout=5000)
    assert isinstance(failures[0], LumenError) and button.isEnabled()

    # ...and one that tidies its page first ends with the same dialog (show_failure).
    def tidy_then_tell(exc: BaseException) -> None:
        failures.append(exc)
        show_failure(page, exc)
    SessionOp(page, broken, disable=(button,)).failure(tidy_then_tell).run_in_background()
    qtbot.waitUntil(lambda: len(page.findChildren(QMessageBox, "errorDialog")) == 2, timeout=5000)
    assert "not a glossary" in page.findChildren(QMessageBox, "errorDialog")[-1].text()
    assert len(failures) == 2 and button.isEnabled()


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


def background_work_outside_session_op(source: str) -> list[str]:
    """Where `source` (a module of gui/) starts background work other than through
    `SessionOp(...).run_in_background()`: the names of STARTERS it imports or uses, and
    the thread modules it imports."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ImportFrom):
            found += [alias.name for alias in node.names if alias.name in STARTERS]
            if node.module in ("threading", "concurrent.futures"):
                found.append(node.module)
        elif isinstance(node, ast.Import):
            found += [alias.name for alias in node.names
                      if alias.name.split(".")[0] in ("threading", "concurrent")]
        elif isinstance(node, ast.Name) and node.id in STARTERS:
            found.append(node.id)
        elif (isinstance(node, ast.Attribute) and node.attr in STARTERS
              and isinstance(node.value, ast.Name) and node.value.id in ("workers", "QtCore")):
            found.append(f"{node.value.id}.{node.attr}")
    return sorted(set(found))


def test_every_page_starts_background_work_through_session_op():
    """Issue #34: one helper runs the window's background work, so buttons, progress,
    Cancel and the failure dialog are the same on every page.  A page that calls the bare
    `run_in_background` (or starts a thread) repeats them by hand."""
    found = {path.name: names for path in sorted(GUI.glob("**/*.py")) if path.name != "workers.py"
             and (names := background_work_outside_session_op(path.read_text(encoding="utf-8")))}
    assert found == {}, ("start background work with SessionOp(page, work, ...).success(...)"
                         ".run_in_background() (gui/workers.py):\n" + "\n".join(
                             f"{name}: {', '.join(names)}" for name, names in found.items()))


def test_a_page_s_own_background_work_is_caught():
    assert background_work_outside_session_op(
        "from .workers import SessionOp\n"
        "SessionOp(self, work).success(done).run_in_background()\n"
        "op = SessionOp(self, work)\nop.run_in_background()\n") == []
    assert background_work_outside_session_op(
        "from .workers import run_in_background\n"
        "task = run_in_background(work, on_success=done, on_error=failed)\n"
        ) == ["run_in_background"]
    assert background_work_outside_session_op(
        "from . import workers\nworkers.run_in_background(work, on_success=d, on_error=f)\n"
        ) == ["workers.run_in_background"]
    assert background_work_outside_session_op(
        "import threading\nthreading.Thread(target=work).start()\n") == ["threading"]
    assert background_work_outside_session_op(
        "from PySide6.QtCore import QThreadPool\nQThreadPool.globalInstance().start(t)\n"
        ) == ["QThreadPool"]
