"""Benchmark: what a patient reads in a handout, before and after plain words (issue #31).

Every summary of three corpora is turned into the handout Lumen gives without a model's
rewrite (simplify.handout_without_model: the tables, and each narrative section as its
own lines explained), twice in one run on the same machine: with the `plain_words`
setting off (before: the summary's own words, shorthand written out, medical words
glossed) and on (after: plain words, the patient as "you", semicolons cut, each line
shown so only where it keeps every fact).  The corpora:

- `tests/data/layouts`: the layout corpus the facts parser was tuned on;
- `bench/data/layouts-heldout`: summaries in other hands, never read while writing the
  lay lexicon: the honest figure;
- the demo benchmark's summaries (resources/benchmarks/lumen-demo.jsonl).

For each: the handout's main part (everything before "Words to know", without the
title and the notice) against the source: Flesch-Kincaid grade (textstat), words, and
the share of summaries at or under the goals (grade <= 6.5, no longer than the source);
summary lines copied word for word at the end because the handout did not hold one of
their facts (0 is the goal: every dose, timing, date and medicine in the handout's own
parts); and, after, the share of lines shown in plain words (the others failed the
fact check and are shown explained).  There is no model in these handouts, so no raw
engine to compare; speed is milliseconds per handout.

    python bench/bench_handouts.py [--json out.json] [--show 3]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
GOAL_GRADE = 6.5
CORPORA = {"tuned layouts": ROOT / "tests" / "data" / "layouts",
           "held-out layouts": ROOT / "bench" / "data" / "layouts-heldout",
           "demo benchmark": ROOT / "resources" / "benchmarks" / "lumen-demo.jsonl"}


def summaries(source: Path) -> list[tuple[str, str]]:
    if source.suffix == ".jsonl":
        seen: dict[str, str] = {}
        for line in source.read_text(encoding="utf-8").splitlines():
            record = json.loads(line)
            seen.setdefault(record["summary_id"], record["summary"])
        return list(seen.items())
    return [(p.stem, p.read_text(encoding="utf-8")) for p in sorted(source.glob("*.txt"))]


def main_part(handout) -> str:
    """The handout's text before "Words to know", without its title and notice."""
    text = handout.to_text()
    text = text.split("\nWords to know\n", 1)[0]
    return text.split(handout.notice, 1)[-1] if handout.notice else text


def measure(name: str, summary: str, glossary, cache: Path, plain: bool) -> dict:
    import tomllib

    from desktop_app.core.pipelines import evidence
    from desktop_app.core.pipelines.simplify import handout_without_model
    from desktop_app.core.readability import flesch_kincaid_grade

    explainers = []
    original_init = evidence.Explainer.__init__

    def counting_init(self, *args, **kwargs):  # every explainer, to count its plain lines
        original_init(self, *args, **kwargs)
        explainers.append(self)
    evidence.Explainer.__init__ = counting_init
    facts_file = CORPORA["tuned layouts"] / f"{name}.facts.toml"
    if not facts_file.exists():
        facts_file = CORPORA["held-out layouts"] / f"{name}.facts.toml"
    order = (tomllib.loads(facts_file.read_text(encoding="utf-8")).get("date_order", "")
             if facts_file.exists() else "")
    try:
        started = time.perf_counter()
        handout = handout_without_model(summary, glossary, date_order=order, plain=plain)
        seconds = time.perf_counter() - started
    finally:
        evidence.Explainer.__init__ = original_init
    plain_lines = sum(e.plain_kept for e in explainers)
    refused = [reason for e in explainers for reason in e.plain_refused]
    main = main_part(handout)
    return {"name": name, "source_words": len(summary.split()),
            "source_grade": flesch_kincaid_grade(summary, cache),
            "words": len(main.split()), "grade": flesch_kincaid_grade(main, cache),
            "copied": len(handout.copied), "plain_lines": plain_lines,
            "refused_lines": len(refused), "refused": refused, "ms": seconds * 1000,
            "text": main}


def table(results: dict[str, dict[str, list[dict]]]) -> str:
    rows = ["| corpus | summaries | source grade | before: grade | after: grade | "
            f"after: grade <= {GOAL_GRADE:g} | source words | before: words | after: words | "
            "after: no longer than source | lines copied word for word (before / after) | "
            "after: lines in plain words | ms per handout (before / after) |",
            "|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for corpus, runs in results.items():
        before, after = runs["before"], runs["after"]
        n = len(after)

        def median(rows, key):
            return statistics.median(r[key] for r in rows)
        shares = sum(r["plain_lines"] for r in after), sum(r["refused_lines"] for r in after)
        rows.append(
            f"| {corpus} | {n} | {median(after, 'source_grade'):.1f} | "
            f"{median(before, 'grade'):.1f} | {median(after, 'grade'):.1f} | "
            f"{sum(r['grade'] <= GOAL_GRADE for r in after)}/{n} | "
            f"{median(after, 'source_words'):.0f} | {median(before, 'words'):.0f} | "
            f"{median(after, 'words'):.0f} | "
            f"{sum(r['words'] <= r['source_words'] for r in after)}/{n} | "
            f"{sum(r['copied'] for r in before)} / {sum(r['copied'] for r in after)} | "
            f"{shares[0]}/{sum(shares)} | "
            f"{median(before, 'ms'):.0f} / {median(after, 'ms'):.0f} |")
    return "\n".join(rows)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--json", type=Path, help="write every measurement here")
    parser.add_argument("--show", type=int, default=0,
                        help="print the main part of this many held-out handouts, after")
    args = parser.parse_args()
    from desktop_app.core import offline

    offline.activate()
    from desktop_app.core.glossary.glossary import load_glossary

    glossary = load_glossary(None)
    cache = Path(tempfile.mkdtemp(prefix="lumen-bench-handouts-"))
    results: dict[str, dict[str, list[dict]]] = {}
    for corpus, source in CORPORA.items():
        if not source.exists():
            print(f"skipped {corpus}: {source} is absent")
            continue
        found = summaries(source)
        results[corpus] = {when: [measure(name, text, glossary, cache, plain)
                                  for name, text in found]
                           for when, plain in (("before", False), ("after", True))}
    print(table(results))
    refused = [r for runs in results.values() for row in runs["after"] for r in row["refused"]]
    if refused:
        counts: dict[str, int] = {}
        for reasons in refused:
            for reason in reasons:
                kind = reason.split(" '")[0]
                counts[kind] = counts.get(kind, 0) + 1
        print("lines kept explained, by what plain words would have lost:",
              ", ".join(f"{k} {v}" for k, v in sorted(counts.items(), key=lambda kv: -kv[1])))
    held = results.get("held-out layouts", {}).get("after", [])
    for row in held[:args.show]:
        print(f"\n==== {row['name']} (grade {row['grade']:.1f}, {row['words']} words, source "
              f"{row['source_grade']:.1f}, {row['source_words']} words)\n{row['text']}")
    if args.json:
        args.json.write_text(json.dumps(results, indent=1), encoding="utf-8")


if __name__ == "__main__":
    main()
