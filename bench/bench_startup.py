"""Benchmark: how long `lumen --version` and the window take to start, before and after
a change (issue #16), in one run.

Each commit (`--before`, and `--after`, HEAD by default) is checked out into a temporary
git worktree; each measurement is a fresh Python process with the tree first on its
path, timed from the parent (interpreter start included), repeated `--repeat` times and
reported as the median and the fastest.  The two commits take turns start by start (which
goes first alternating), so a machine whose speed drifts during the run (a shared virtual
machine's does, by a third) weighs on both alike:

- `lumen --version`: parsing the command line and printing the version;
- the window: the offscreen main window built and shown over a throw-away encrypted
  database (made by the first start, opened by the others), with the installed models;
  the start-up checks that run after it is shown are left out;
- the window with a summary opened in the Ask tab and one question answered by the tab's
  default method (its peak memory is issue #35's "window with a summary and one answer").

- long jobs, one start per commit (issue #35's peak memory per command): `lumen simplify`
  of the same summary with the model, and `lumen evaluate run` of 10 demo samples
  (imported when the profile is made);
- commands as IT scripts call them (issue #35), each a fresh `python -m desktop_app`
  over one throw-away encrypted profile (LUMEN_PASSPHRASE) with the installed models:
  `lumen facts` on a discharge summary, `lumen ask --method evidence` (no model) and
  `lumen ask` (the embedded model), with each process's peak memory (its maximum resident
  set, from wait4).  The profile's database is made by an untimed first `lumen facts`.

FIRST_START: the window with an answer and each command start once on their profile,
untimed, before the timed starts: a workstation's profile holds what Lumen derives from
the files it ships (the parsed glossary, the syllable and word-grade tables, the
embedder's rows-first copy) after its first use; that first start's peak memory is
reported apart.

The raw engine here is the interpreter itself: `python -c pass` in the same run, so a
start-up is also given as a multiple of a bare Python start.

    python bench/bench_startup.py --before b253b42 [--repeat 7]
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

VERSION = """
import sys
import desktop_app
assert desktop_app.__file__.startswith(sys.argv[1]), desktop_app.__file__
from desktop_app.cli import main
try:
    main(["--version"])
except SystemExit as exit:
    assert not exit.code
"""

WINDOW = """
import os, sys
os.environ["QT_QPA_PLATFORM"] = "offscreen"
import desktop_app
assert desktop_app.__file__.startswith(sys.argv[1]), desktop_app.__file__
from desktop_app.core import offline
offline.activate()
from desktop_app.core.config import Paths, Settings
from desktop_app.core.session import Session
from desktop_app.core.store import Store
from desktop_app.core.store.keys import DatabaseKey
from desktop_app.gui.app import application
from desktop_app.gui.main_window import MainWindow

app = application()
paths = Paths.resolve(sys.argv[2])
paths.ensure()
settings = Settings(models_dir=sys.argv[3])
store = Store(paths.database_file, DatabaseKey("raw", "5" * 64))  # the same key each start
window = MainWindow(Session(paths, settings, store))
window.show()
app.processEvents()
sys.stdout.flush()
os._exit(0)
"""

# The window as a ward nurse uses it (issue #35's "the window with a summary open and one
# answer"): WINDOW, then a summary opened in the Ask tab and one question answered by the
# tab's default method, the process's peak memory being what the workstation must hold.
WINDOW_ANSWER = WINDOW.replace("sys.stdout.flush()\nos._exit(0)\n", """import time
from pathlib import Path
page = window.ask_page
window.tabs.setCurrentWidget(page)
assert page.summary.open_file(Path(sys.argv[4]))
page.question.setText(sys.argv[5])
page.ask_button.click()
deadline = time.monotonic() + 600
while page.result is None and time.monotonic() < deadline:
    app.processEvents()
    time.sleep(0.01)
assert page.result is not None, "no answer within 10 minutes"
sys.stdout.flush()
os._exit(0)
""")

SUMMARY = ROOT / "tests" / "data" / "layouts" / "30-caps_colon-ed-kidney-stone.txt"
QUESTION = "What should I take for the pain?"
COMMANDS = (
    ("facts", "`lumen facts`", ("facts", str(SUMMARY))),
    ("evidence", "`lumen ask --method evidence`",
     ("ask", "--summary", str(SUMMARY), "--question", QUESTION, "--method", "evidence")),
    ("ask", "`lumen ask` (embedded model)",
     ("ask", "--summary", str(SUMMARY), "--question", QUESTION)),
)

DEMO = ROOT / "resources" / "benchmarks" / "lumen-demo.jsonl"
# Long jobs (issue #35 item 3: peak memory per command), one start per commit each: a
# handout written by the model, and a benchmark run of 10 samples of the demo set.
LONG_COMMANDS = (
    ("simplify", "`lumen simplify` (embedded model)", ("simplify", str(SUMMARY))),
    ("evaluate", "`lumen evaluate run`, 10 demo samples (lamp:glossary)",
     ("evaluate", "run", "lumen-demo", "--limit", "10")),
)

GNU_TIME = Path("/usr/bin/time")


def timed(command: list[str], cwd: Path, repeat: int, env: dict[str, str] | None = None
          ) -> tuple[list[float], list[int]]:
    """Seconds and peak resident memory (KB) of each of `repeat` runs.  The peak is read
    by GNU time where it is installed: a child forked from this (larger) process keeps
    this process's resident size as its high-water mark until it execs."""
    import os

    times, peaks = [], []
    for _ in range(repeat):
        with tempfile.NamedTemporaryFile("r", suffix=".peak") as peak:
            wrapped = ([str(GNU_TIME), "-f", "%M", "-o", peak.name] + command
                       if GNU_TIME.exists() else command)
            started = time.perf_counter()
            child = subprocess.Popen(wrapped, cwd=str(cwd), stdout=subprocess.DEVNULL,
                                     stderr=subprocess.PIPE,
                                     env=env or {"PATH": "/usr/bin:/bin",
                                                 "HOME": tempfile.gettempdir(),
                                                 "PYTHONPATH": str(cwd),
                                                 "LUMEN_HOME": str(cwd / ".bench-home")})
            _, status, usage = os.wait4(child.pid, 0)
            times.append(time.perf_counter() - started)
            errors = child.stderr.read().decode(errors="replace") if child.stderr else ""
            if status != 0:
                raise SystemExit(f"{' '.join(command)} failed ({status}):\n{errors[-2000:]}")
            written = peak.read().split()
            peaks.append(int(written[-1]) if written else usage.ru_maxrss)
    return times, peaks


def command_profile(tree: Path, models: str) -> tuple[Path, dict[str, str]]:
    """A throw-away encrypted profile for the commands of `tree`, its database made by an
    untimed `lumen facts`; its folder and the environment the commands run in."""
    home = Path(tempfile.mkdtemp(prefix="lumen-start-profile-"))
    env = {"PATH": "/usr/bin:/bin", "HOME": str(home), "PYTHONPATH": str(tree),
           "LUMEN_HOME": str(home / "lumen"), "LUMEN_PASSPHRASE": "bench-start-up-passphrase",
           "QT_QPA_PLATFORM": "offscreen"}
    python = [sys.executable, "-m", "desktop_app"]
    subprocess.run(python + ["settings", "set", "models_dir", models], cwd=str(tree),
                   env=env, check=True, capture_output=True)
    timed(python + list(COMMANDS[0][2]), tree, 1, env)  # makes the database: untimed
    subprocess.run(python + ["evaluate", "import", str(DEMO), "--format", "medisumqa",
                             "--name", "lumen-demo"], cwd=str(tree), env=env, check=True,
                   capture_output=True)
    return home, env


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--before", required=True, help="the commit to compare with")
    parser.add_argument("--after", default="HEAD")
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--models", default="", help="models folder (default: Lumen's own)")
    args = parser.parse_args()
    sys.path.insert(0, str(ROOT))
    from desktop_app.core.config import Paths, Settings
    from desktop_app.core.evaluation.runner import machine

    models = args.models or str(Settings().models_path(Paths.resolve()))
    python = sys.executable
    bare, _ = timed([python, "-c", "pass"], ROOT, args.repeat)
    names = ("before", "after")
    trees, homes, envs, commits, scratch = {}, {}, {}, {}, []
    results: dict[str, dict] = {name: {} for name in names}
    try:
        for name, commit in (("before", args.before), ("after", args.after)):
            tree = Path(tempfile.mkdtemp(prefix=f"lumen-start-{name}-")) / "tree"
            subprocess.run(["git", "-C", str(ROOT), "worktree", "add", "--detach", str(tree),
                            commit], check=True, capture_output=True)
            trees[name] = tree
            commits[name] = subprocess.run(["git", "-C", str(tree), "rev-parse", "--short", "HEAD"],
                                           capture_output=True, text=True).stdout.strip()
            homes[name] = Path(tempfile.mkdtemp(prefix="lumen-start-home-"))
            profile, envs[name] = command_profile(tree, models)
            scratch += [homes[name], profile]

        def command(key: str, name: str) -> tuple[list[str], dict[str, str] | None]:
            tree, home = trees[name], homes[name]
            if key == "version":
                return [python, "-c", VERSION, str(tree)], None
            if key == "window":
                return [python, "-c", WINDOW, str(tree), str(home), models], None
            if key == "window_answer":
                return [python, "-c", WINDOW_ANSWER, str(tree), str(home), models, str(SUMMARY),
                        QUESTION], None
            arguments = next(a for k, _label, a in COMMANDS + LONG_COMMANDS if k == key)
            return [python, "-m", "desktop_app", *arguments], envs[name]

        # The two trees take turns, start by start (the one to go first alternating), so
        # a machine that slows down or speeds up during the run weighs on both alike.
        firsts = ("window_answer", *(key for key, _label, _arguments in COMMANDS))
        for key in ("version", "window", "window_answer", *(k for k, _l, _a in COMMANDS)):
            if key in firsts:  # FIRST_START, untimed
                for name in names:
                    argv, env = command(key, name)
                    results[name][f"{key}_first"] = timed(argv, trees[name], 1, env)
            for name in names:
                results[name][key] = ([], [])
            for turn in range(args.repeat):
                for name in (names if turn % 2 == 0 else names[::-1]):
                    argv, env = command(key, name)
                    seconds, peaks = timed(argv, trees[name], 1, env)
                    results[name][key][0].extend(seconds)
                    results[name][key][1].extend(peaks)
        for key, _label, _arguments in LONG_COMMANDS:
            for name in names:
                argv, env = command(key, name)
                results[name][key] = timed(argv, trees[name], 1, env)
    finally:
        for tree in trees.values():
            subprocess.run(["git", "-C", str(ROOT), "worktree", "remove", "--force", str(tree)],
                           check=False, capture_output=True)
            shutil.rmtree(tree.parent, ignore_errors=True)
        for folder in scratch:
            shutil.rmtree(folder, ignore_errors=True)
    for name in names:
        results[name]["commit"] = commits[name]
    print(f"Machine: {machine()}")
    print(f"Commits: before {results['before']['commit']}, after {results['after']['commit']}; "
          f"{args.repeat} starts each, the two taking turns")
    base = statistics.median(bare)
    print(f"Raw: a bare `python -c pass` starts in {base:.3f} s (median)\n")
    print("| start-up | before: median (fastest) | after: median (fastest) | after ÷ before "
          "| after ÷ bare Python | peak memory before → after |")
    print("|---|---|---|---|---|---|")
    rows = [("version", "`lumen --version`"), ("window", "main window shown"),
            ("window_answer", "window: a summary opened and one answer")] + [
        (key, label) for key, label, _arguments in COMMANDS]
    for key, label in rows:
        (before, before_kb), (after, after_kb) = results["before"][key], results["after"][key]
        print(f"| {label} | {statistics.median(before):.2f} s ({min(before):.2f}) | "
              f"{statistics.median(after):.2f} s ({min(after):.2f}) | "
              f"{statistics.median(after) / statistics.median(before):.2f} | "
              f"{statistics.median(after) / base:.1f} | "
              f"{max(before_kb) / 1024:.0f} → {max(after_kb) / 1024:.0f} MB |")
    print("\nLong jobs, one start each (the same profile as the commands):\n")
    print("| job | before: seconds | after: seconds | after ÷ before | peak memory before → after |")
    print("|---|---|---|---|---|")
    for key, label, _arguments in LONG_COMMANDS:
        (before, before_kb), (after, after_kb) = results["before"][key], results["after"][key]
        print(f"| {label} | {before[0]:.1f} | {after[0]:.1f} | {after[0] / before[0]:.2f} | "
              f"{before_kb[0] / 1024:.0f} → {after_kb[0] / 1024:.0f} MB |")
    print("\nThe first start on a new profile, untimed above (FIRST_START), peak memory:")
    for key, label in rows:
        if f"{key}_first" in results["before"]:
            before_kb, after_kb = (results[name][f"{key}_first"][1][0] for name in ("before", "after"))
            print(f"- {label}: {before_kb / 1024:.0f} → {after_kb / 1024:.0f} MB")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
