"""Benchmark: how often Lumen's own evidence answer is flagged "not in the summary".

An evidence answer is the summary's own lines, written for the patient (a count written
out, a timing in words, a wrapped line joined); every grounding flag on it is either a
fact Lumen's rendering changed or a false alarm, and each one puts a "CHECK:" line in
front of a nurse.  Every layout summary (tests/data/layouts, tuned on, and
bench/data/layouts-heldout, kept apart) is asked six everyday questions with
`--method evidence` (no model), by two commits checked out into temporary worktrees and
run in child processes, in one run; the flags are counted per corpus and listed for the
`--after` commit.

    python bench/bench_false_flags.py --before 1273e68 [--after HEAD]
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
QUESTIONS = ("What medicines should I take?", "When is my follow-up appointment?",
             "What signs mean I should come back?", "What should I take for pain?",
             "Which medicines were stopped?", "What can I eat?")
CORPORA = {"tuned": ROOT / "tests" / "data" / "layouts",
           "held out": ROOT / "bench" / "data" / "layouts-heldout"}


def child(tree: str, models: str) -> None:
    sys.path.insert(0, tree)
    from desktop_app.core import offline

    offline.activate()
    from desktop_app.core.config import Paths, Settings
    from desktop_app.core.glossary.glossary import load_glossary
    from desktop_app.core.models.runtime import ModelRuntime
    from desktop_app.core.pipelines.ask import AskPipeline

    assert Path(sys.modules["desktop_app"].__file__).is_relative_to(tree)
    home = tempfile.TemporaryDirectory(prefix="lumen-bench-flags-")
    paths = Paths.resolve(home.name)
    paths.ensure()
    settings = Settings(models_dir=models)
    runtime = ModelRuntime(paths, settings)
    pipeline = AskPipeline(runtime, load_glossary(None), settings, paths.cache_dir)
    for corpus, folder in CORPORA.items():
        for summary in sorted(folder.glob("*.txt")):
            text = summary.read_text(encoding="utf-8")
            for question in QUESTIONS:
                result = pipeline.run(text, question, method="evidence")
                print(json.dumps({"corpus": corpus, "summary": summary.name, "question": question,
                                  "flags": result.trace.grounding_flags}))
    runtime.close()
    home.cleanup()


def run_tree(commit: str, models: str) -> tuple[str, list[dict]]:
    tree = Path(tempfile.mkdtemp(prefix="lumen-flags-")) / "tree"
    subprocess.run(["git", "-C", str(ROOT), "worktree", "add", "--detach", str(tree), commit],
                   check=True, capture_output=True)
    try:
        short = subprocess.run(["git", "-C", str(tree), "rev-parse", "--short", "HEAD"],
                               capture_output=True, text=True).stdout.strip()
        out = subprocess.run([sys.executable, __file__, "--child", str(tree), "--models", models],
                             capture_output=True, text=True, check=True, cwd=str(tree)).stdout
        return short, [json.loads(line) for line in out.splitlines() if line.startswith("{")]
    finally:
        subprocess.run(["git", "-C", str(ROOT), "worktree", "remove", "--force", str(tree)],
                       check=False, capture_output=True)
        shutil.rmtree(tree.parent, ignore_errors=True)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--before", help="the commit to compare with")
    parser.add_argument("--after", default="HEAD")
    parser.add_argument("--models", default="", help="models folder (default: Lumen's own)")
    parser.add_argument("--child")
    args = parser.parse_args()
    if args.child:
        child(args.child, args.models)
        return 0
    sys.path.insert(0, str(ROOT))
    from desktop_app.core.config import Paths, Settings

    models = args.models or str(Settings().models_path(Paths.resolve()))
    runs = {name: run_tree(commit, models) for name, commit in
            (("before", args.before), ("after", args.after)) if commit}
    print("| commit | corpus | evidence answers | answers with a flag | flags |")
    print("|---|---|---|---|---|")
    for name, (short, rows) in runs.items():
        for corpus in CORPORA:
            mine = [r for r in rows if r["corpus"] == corpus]
            print(f"| {name} ({short}) | {corpus} | {len(mine)} | "
                  f"{sum(1 for r in mine if r['flags'])} | {sum(len(r['flags']) for r in mine)} |")
    print("\nFlags left after:")
    for row in runs["after"][1]:
        for flag in row["flags"]:
            print(f"- {row['summary']}, \"{row['question']}\": {flag['kind']} '{flag['text']}'")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
