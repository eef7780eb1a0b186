"""Python's cycle collector, run on the GUI thread only.

Python collects reference cycles in whichever thread happens to allocate when a generation
fills up.  In the window that is often a worker (an answer, an import, a benchmark run
allocating freely), and a cycle it collects may hold the last reference to a Qt object
made on the GUI thread (a closed dialog, a page's model): Qt then destroys that object on
the wrong thread, and the process dies with a segmentation fault.  CI met exactly this
(a worker building the glossary matcher collected a previous window's widgets).

So the window turns automatic collection off and runs it from a timer on the GUI thread,
by the same rule Python uses (a generation is collected once more objects were allocated
into it than its threshold), so memory behaves as before.  Objects freed by their
reference count alone are unaffected: they never were collected by the cycle collector.
"""

from __future__ import annotations

import gc
import time

from PySide6.QtCore import QCoreApplication, QObject, QTimer

# How often the GUI thread looks at the allocation counts.  A young-generation pass takes
# well under a millisecond; a worker can allocate a few hundred thousand objects in this
# time, which is what the thresholds let through anyway.
CHECK_INTERVAL_MS = 250
# Python spaces out full passes by how many long-lived objects there are (not readable from
# Python); here a full pass waits this many times as long as the last one took, so with a
# large heap (glossary, vector store) the window spends at most ~2% of its time in them.
FULL_PASS_SPACING = 50


class GuiThreadCollector(QObject):
    def __init__(self, parent: QObject) -> None:
        super().__init__(parent)
        self.collections = [0, 0, 0]  # passes run per generation (read by the tests)
        self._next_full_pass = 0.0
        self._timer = QTimer(self)
        self._timer.timeout.connect(self.collect_due)
        self._timer.start(CHECK_INTERVAL_MS)

    def collect_due(self) -> None:
        """Collects the oldest generation whose allocation count passed its threshold
        (collecting a generation also collects the younger ones), as Python would."""
        counts, thresholds = gc.get_count(), gc.get_threshold()
        for generation in (2, 1, 0):
            if not thresholds[generation] or counts[generation] <= thresholds[generation]:
                continue
            if generation == 2 and time.monotonic() < self._next_full_pass:
                continue
            started = time.monotonic()
            gc.collect(generation)
            self.collections[generation] += 1
            if generation == 2:
                finished = time.monotonic()
                self._next_full_pass = finished + FULL_PASS_SPACING * (finished - started)
            return


def collect_garbage_on_gui_thread(app: QCoreApplication | None = None) -> GuiThreadCollector:
    """Turns automatic collection off and gives `app` (the running application by default)
    a collector on its thread; once per application, so calling it again returns it."""
    app = app or QCoreApplication.instance()
    if app is None:
        raise RuntimeError("collect_garbage_on_gui_thread needs a running QApplication")
    existing = app.findChild(GuiThreadCollector)
    if existing is None:
        existing = GuiThreadCollector(app)
    gc.disable()
    return existing
