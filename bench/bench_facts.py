"""Benchmark: how much of a discharge summary the facts parser reads, field by field, before
and after a change (issue #30).

The parser of two commits (`--before`, and `--after`, HEAD by default) is run over the
layout corpora, each commit checked out into a temporary git worktree and run in a child
process, on the same machine in one run:

- `tests/data/layouts`: the corpus the parser was tuned on (122 summaries, 10 layouts);
- `bench/data/layouts-heldout`: 42 summaries in the same layouts written by someone who
  never saw the parser, and never read while tuning it: the honest figure.  With
  `--newer-than N` the held-out summaries numbered above N (a set written after the last
  tuning round) are also scored apart.

Each summary has a hand-written facts file (tests/data/layouts/README.md).  Both commits'
output is scored here with this checkout's tests/layout_corpus.py: per medicine field
(name, dose, count, route, frequency, as needed, clock time, maximum, duration, until,
status, change from/to, reason) precision (right / read) and recall (right / expected),
and the share of summaries in which every medicine is found; then the share of expected
follow-ups, warning signs and restrictions found.  Speed is reported as milliseconds per
summary for each commit (the parser uses no model, so there is no raw engine to compare).

    python bench/bench_facts.py [--before 8ddc7b7] [--after HEAD] [--newer-than 159] [--batch DIR]
                                [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
GOALS = {"name": 0.95, "dose": 0.95, "frequency": 0.95, "status": 0.95}


def child(tree: str, folders: list[str], out: str) -> None:
    """Read every summary of `folders` with the parser in `tree`; one JSON object."""
    sys.path.insert(0, tree)
    from desktop_app.core import offline

    offline.activate()
    import tomllib

    from desktop_app.core.glossary.glossary import load_glossary
    from desktop_app.core.pipelines.summary_facts import read_summary

    assert Path(sys.modules["desktop_app"].__file__).is_relative_to(tree)
    glossary = load_glossary(None)
    results, seconds = {}, 0.0
    for folder in folders:
        for path in sorted(Path(folder).glob("*.txt")):
            text = path.read_text(encoding="utf-8")
            order = tomllib.loads(path.with_name(path.stem + ".facts.toml").read_text(
                encoding="utf-8")).get("date_order", "mdy")
            started = time.perf_counter()
            try:
                facts = read_summary(text, glossary, order)
            except TypeError:  # an older parser, without a date order
                facts = read_summary(text, glossary)
            seconds += time.perf_counter() - started
            results[f"{Path(folder).name}/{path.stem}"] = facts.to_dict()
    Path(out).write_text(json.dumps({"facts": results, "seconds": seconds,
                                     "summaries": len(results)}), encoding="utf-8")


def run_child(tree: Path, folders: list[Path]) -> dict:
    out = Path(tempfile.mkstemp(suffix=".json")[1])
    env = dict(os.environ, PYTHONPATH=str(tree))
    try:
        subprocess.run([sys.executable, __file__, "--child", str(tree), "--out", str(out),
                        *map(str, folders)], check=True, env=env, cwd=str(tree))
        return json.loads(out.read_text(encoding="utf-8"))
    finally:
        out.unlink(missing_ok=True)


def score(folder: Path, run: dict, newer_than: int = 0) -> dict:
    """Field counts over the summaries of `folder` (those numbered above `newer_than`)."""
    from layout_corpus import FieldCounts, compare_medications, compare_other, load

    fields: dict[str, FieldCounts] = {}
    every, others, other_found, layouts = 0, 0, 0, {}
    corpus = [e for e in load(folder) if int(e.name.split("-")[0]) > newer_than]
    for expected in corpus:
        facts = run["facts"][f"{folder.name}/{expected.name}"]
        comparison = compare_medications(expected.medications, facts["medications"])
        for key, counts in comparison.fields.items():
            fields.setdefault(key, FieldCounts()).add(counts)
        every += comparison.every_medicine
        layouts.setdefault(expected.layout, []).append(comparison.every_medicine)
        wanted = (len(expected.facts.get("follow_up", [])) + len(expected.facts.get("warning", []))
                  + len(expected.facts.get("restriction", [])))
        others += wanted
        other_found += wanted - len(compare_other(expected, facts))
    return {"summaries": len(corpus),
            "fields": {k: {"precision": v.precision, "recall": v.recall, "right": v.right,
                           "read": v.read, "expected": v.expected} for k, v in fields.items()},
            "every_medicine": every / len(corpus) if corpus else None,
            "every_medicine_by_layout": {k: sum(v) / len(v) for k, v in layouts.items()},
            "other_facts_found": other_found / others if others else None}


def print_table(title: str, before: dict, after: dict) -> None:
    print(f"\n{title} ({after['summaries']} summaries)")
    if not after["summaries"]:
        return  # (--newer-than above every summary of the folder: nothing to score)
    print(f"  {'field':13} {'before P':>9} {'before R':>9} {'after P':>8} {'after R':>8}   goal")
    for key, now in after["fields"].items():
        then = before["fields"][key]
        goal = f">= {GOALS[key]:.2f}" if key in GOALS else ""
        print(f"  {key:13} {then['precision']:9.3f} {then['recall']:9.3f} {now['precision']:8.3f} "
              f"{now['recall']:8.3f}   {goal}")
    print(f"  every medicine present: {before['every_medicine']:.2f} -> {after['every_medicine']:.2f}"
          "   (goal 1.00)")
    print(f"  follow-ups, warning signs and restrictions found: {before['other_facts_found']:.2f} -> "
          f"{after['other_facts_found']:.2f}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--before", default="6b3e806", help="the commit to compare with")
    parser.add_argument("--after", default="HEAD", help="the commit measured as 'after'")
    parser.add_argument("--json", help="also write the results to this file")
    parser.add_argument("--newer-than", type=int, default=0,
                        help="also score apart the held-out summaries numbered above this one "
                             "(a set written after the last tuning round, measured once)")
    parser.add_argument("--batch", type=Path,
                        help="also score this folder apart (summaries with facts files): a new "
                             "batch, read by both commits before it is tuned on")
    parser.add_argument("--child")
    parser.add_argument("--out")
    parser.add_argument("folders", nargs="*")
    args = parser.parse_args()
    if args.child:  # before anything imports Lumen: the child's Lumen is the tree's
        child(args.child, args.folders, args.out)
        return 0
    sys.path.insert(0, str(ROOT / "tests"))
    from layout_corpus import CORPUS, HELD_OUT

    folders = [CORPUS, HELD_OUT] + ([args.batch.resolve()] if args.batch else [])
    results = {}
    with tempfile.TemporaryDirectory(prefix="lumen-bench-facts-") as scratch:
        trees = {}
        try:
            for name, commit in (("before", args.before), ("after", args.after)):
                trees[name] = Path(scratch) / name
                subprocess.run(["git", "-C", str(ROOT), "worktree", "add", "--detach", str(trees[name]),
                                commit], check=True, capture_output=True)
                results[name] = run_child(trees[name], folders)
        finally:
            for tree in trees.values():
                subprocess.run(["git", "-C", str(ROOT), "worktree", "remove", "--force", str(tree)],
                               capture_output=True)
    report = {"before_commit": args.before, "after_commit": args.after}
    for folder, title in ((CORPUS, "Tuned on (tests/data/layouts)"),
                          (HELD_OUT, "Held out (bench/data/layouts-heldout)")):
        scores = {name: score(folder, results[name]) for name in ("before", "after")}
        print_table(title, scores["before"], scores["after"])
        report[folder.name] = scores
    if args.newer_than:
        scores = {name: score(HELD_OUT, results[name], args.newer_than) for name in ("before", "after")}
        print_table(f"Held out, numbered above {args.newer_than}", scores["before"], scores["after"])
        report[f"{HELD_OUT.name}-above-{args.newer_than}"] = scores
    if args.batch:
        scores = {name: score(args.batch.resolve(), results[name]) for name in ("before", "after")}
        print_table(f"Batch ({args.batch})", scores["before"], scores["after"])
        report[f"batch-{args.batch.name}"] = scores
    for name in ("before", "after"):
        run = results[name]
        print(f"\n{name}: {1000 * run['seconds'] / run['summaries']:.1f} ms per summary "
              f"({run['summaries']} summaries)")
        report[f"{name}_ms_per_summary"] = 1000 * run["seconds"] / run["summaries"]
    if args.json:
        Path(args.json).write_text(json.dumps(report, indent=2), encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
