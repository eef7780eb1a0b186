"""Screenshots of every tab at 1280×800, for docs/screenshots and the Help menu's guides.

    python -m desktop_app.gui.screenshots [--out docs/screenshots] [--only ask,status]

(`make screenshots`).  Each tab is shown in a state a user meets: the Ask tab with an
answer to a demo question, Simplify with a handout, Evaluation with a small run of the
demo benchmark, and so on.  Everything runs on this machine in a throw-away profile
(its own encrypted database, a random passphrase), with the embedded models; nothing of
the user's profile is read or changed but the location of the models.
"""

from __future__ import annotations

import argparse
import json
import os
import secrets
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Callable

SIZE = (1280, 800)
TABS = ("status", "ask", "simplify", "knowledge", "glossary", "evaluation", "consultation",
        "models", "settings", "locked")
DEMO_ROW = 0  # the demo benchmark's first summary and question


def _wait(app, condition: Callable[[], bool], timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise TimeoutError("the window did not reach the state to photograph in time")
        app.processEvents()
        time.sleep(0.02)
    for _ in range(20):  # let layouts and repaints settle
        app.processEvents()
        time.sleep(0.01)


def take(out: Path, only: tuple[str, ...] = TABS, models_dir: str | None = None) -> list[Path]:
    """Photograph the tabs in `only`; returns the files written (OUT/<tab>.png).

    Long: one screenshot per window state, in the order the guides show them."""
    if not (os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY")):
        os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
    from ..core import startup

    startup.make_process_offline()
    from PySide6.QtCore import Qt

    from ..core.results import Paths, Settings, demo_benchmark, resource_root

    startup.keep_files_private()  # as `lumen` does: the throw-away profile's files are private too
    # The user's models folder is the one thing read from their profile.
    user = Paths.resolve()
    real_models = models_dir or str(Settings.load(user).models_path(user))
    home = Path(tempfile.mkdtemp(prefix="lumen-screenshots-"))
    os.environ["LUMEN_HOME"] = str(home)
    # The pictures show a fresh workstation, not what other programs left in the
    # developer's own cache folder (the Status tab lists known telemetry files there).
    os.environ["XDG_CACHE_HOME"] = str(home / "user-cache")
    from ..core.session import Session
    from .app import application
    from .main_window import MainWindow
    from .workers import wait_for_all

    app = application()
    paths = Paths.resolve(home)
    paths.ensure()
    # Consultations are cut at 6 utterances so that the picture takes a minute, not ten.
    settings = Settings(models_dir=real_models, dialogue_max_utterances=6)
    settings.save(paths)
    store = startup.open_records(paths, secrets.token_urlsafe(16))
    window = MainWindow(Session(paths, settings, store))
    window.resize(*SIZE)
    window.show()
    out.mkdir(parents=True, exist_ok=True)
    row = json.loads(demo_benchmark().read_text(encoding="utf-8").splitlines()[DEMO_ROW])
    written = []

    def shoot(name: str, widget=None) -> None:
        path = out / f"{name}.png"
        (widget or window).grab().save(str(path))
        written.append(path)

    try:
        for name in only:
            if name == "status":
                window.tabs.setCurrentWidget(window.status_page)
                done = []
                window.status_page.checked.connect(done.append)
                window.status_page.run_checks(measure_speed=False)
                _wait(app, lambda: bool(done), 300)
            elif name == "ask":
                page = window.ask_page
                window.tabs.setCurrentWidget(page)
                page.summary.setPlainText(row["summary"])
                page.question.setText(row["question"])
                page.ask()
                _wait(app, lambda: page.result is not None and page._task is None, 600)
            elif name == "simplify":
                page = window.simplify_page
                window.tabs.setCurrentWidget(page)
                page.editor.setPlainText(row["summary"])
                page.simplify()
                _wait(app, lambda: page.handout is not None and page._task is None, 900)
            elif name == "knowledge":
                window.tabs.setCurrentWidget(window.knowledge_page)
            elif name == "glossary":
                page = window.glossary_page
                window.tabs.setCurrentWidget(page)
                page.search.setText("heart failure")
                page.refresh_results()
                _wait(app, lambda: page.current_entry() is not None, 10)
            elif name == "evaluation":
                page = window.evaluation_page
                window.tabs.setCurrentWidget(page)
                page.import_file(demo_benchmark(), "medisumqa")
                _wait(app, lambda: page.import_button.isEnabled(), 120)
                for box in app.topLevelWidgets():  # the "imported" notice
                    if box.objectName() == "infoDialog":
                        box.close()
                for index in range(page.systems.count()):
                    item = page.systems.item(index)
                    item.setCheckState(Qt.CheckState.Checked if item.text() in ("evidence", "zero-shot")
                                       else Qt.CheckState.Unchecked)
                for scorer, box in page.scorer_boxes.items():
                    box.setChecked(scorer in ("reference", "key-facts"))
                page.limit.setValue(12)
                page.start()
                _wait(app, lambda: page.run_button.isEnabled() and page.results.rowCount() == 2, 900)
                page.runs.selectRow(0)
                page.chart_metric.setCurrentIndex(max(0, page.chart_metric.findData("key_fact_recall")))
                _wait(app, lambda: len(page.chart.rows) == 2, 120)
            elif name == "consultation":
                page = window.evaluation_page
                window.tabs.setCurrentWidget(page)
                page.import_file(resource_root() / "resources" / "benchmarks"
                                 / "lumen-dialogue-demo.jsonl", "dialogue")
                _wait(app, lambda: page.import_button.isEnabled(), 120)
                for box in app.topLevelWidgets():
                    if box.objectName() == "infoDialog":
                        box.close()
                for index in range(page.systems.count()):
                    item = page.systems.item(index)
                    item.setCheckState(Qt.CheckState.Checked if item.text() == "dialogue:rationale"
                                       else Qt.CheckState.Unchecked)
                page.limit.setValue(1)
                page.start()
                _wait(app, lambda: page.run_button.isEnabled() and any(
                    page.runs.item(r, 1).text() == "dialogue:rationale"
                    and page.runs.item(r, 2).text() == "complete"
                    for r in range(page.runs.rowCount())), 900)
                row = next(r for r in range(page.runs.rowCount())
                           if page.runs.item(r, 1).text() == "dialogue:rationale")
                page.runs.selectRow(row)
                page.samples.selectRow(0)
            elif name == "models":
                window.tabs.setCurrentWidget(window.models_page)
            elif name == "locked":
                window.lock("Locked from the File menu.")
                _wait(app, lambda: True, 1)
                shoot(name)
                window.unlock()
                continue
            elif name == "settings":
                dialog = window.open_settings()
                dialog.resize(900, 700)
                _wait(app, dialog.isVisible, 10)
                shoot(name, dialog)
                dialog.reject()
                continue
            else:
                raise ValueError(f"No tab named {name!r}; choose from {', '.join(TABS)}.")
            _wait(app, lambda: True, 1)
            shoot(name)
    finally:
        wait_for_all(60000)
        window.close()
        store.close()
        shutil.rmtree(home, ignore_errors=True)
    return written


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Screenshots of every tab at 1280×800.")
    parser.add_argument("--out", default="docs/screenshots", help="folder for the PNG files")
    parser.add_argument("--only", help="comma-separated tabs: " + ", ".join(TABS))
    parser.add_argument("--models", help="models folder (default: Lumen's own)")
    args = parser.parse_args(argv)
    only = tuple(args.only.split(",")) if args.only else TABS
    for path in take(Path(args.out), only, args.models):
        print(path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
