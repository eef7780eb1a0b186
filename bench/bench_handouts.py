"""Benchmark: what a patient reads in a handout, before and after issue #31.

Every summary of three corpora is turned into the handout Lumen gives without a model's
rewrite, three ways, on the same machine in one run:

- `before`: the handout of an earlier commit (`--before`, 7d0db36 by default: every
  narrative section in the summary's own words, shorthand written out and medical words
  glossed, under the tables), that commit checked out into a temporary git worktree and
  run in a child process;
- `shape only`: this commit's handout (What to do now, What happened in hospital, Words to
  know, For your care team) with the `plain_words` setting off;
- `after`: this commit's handout with plain words (lay words, the patient as "you",
  semicolons cut, each line shown so only where it keeps every fact).

The corpora: `tests/data/layouts` (the layout corpus the facts parser and the lay
lexicon were tuned on), `bench/data/layouts-heldout` (summaries in other hands, never
read while writing the lexicon or the story rules: the honest figure), and the demo
benchmark's summaries (resources/benchmarks/lumen-demo.jsonl).

What is measured is the handout's main part, what a patient reads first (everything
before "Words to know", without the title and the notice; for `before`, everything before
"Words to know"): its Flesch-Kincaid grade (textstat) as printed, and with each line
that ends without a full stop read as a sentence (a heading, a list item, a table row;
readability.lines_as_sentences), the source measured both ways too; its words against
the source's; summary lines copied word for word at the end because the handout did not
hold one of their facts; and, after, how many lines plain words changed and how many
they could not change without losing a fact.  There is no model in these handouts, so no
raw engine to compare; speed is milliseconds per handout.

With `--model N`, the first N summaries of each corpus are also made into handouts by the
Simplify pipeline with the embedded model (SmolLM2-135M, default settings), as the tab
makes them: how often the model's rewrite of "What happened in hospital" is shown (it
passed every check and reads easier than the plain rendering), how often the plain
rendering already read easily (no model call), how often the rewrite failed; and seconds
per handout, also in plain-engine tokens (seconds x raw llama-cpp-python tokens/s,
measured in the same run).

    python bench/bench_handouts.py [--before 7d0db36] [--json out.json] [--show 3] [--model 10]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
GOAL_GRADE = 6.5
CORPORA = {"tuned layouts": ROOT / "tests" / "data" / "layouts",
           "held-out layouts": ROOT / "bench" / "data" / "layouts-heldout",
           "demo benchmark": ROOT / "resources" / "benchmarks" / "lumen-demo.jsonl"}


def summaries(source: Path) -> list[tuple[str, str, str]]:
    """(name, summary, date order) of every summary of a corpus."""
    import tomllib

    if source.suffix == ".jsonl":
        seen: dict[str, str] = {}
        for line in source.read_text(encoding="utf-8").splitlines():
            record = json.loads(line)
            seen.setdefault(record["summary_id"], record["summary"])
        return [(name, text, "") for name, text in seen.items()]
    found = []
    for path in sorted(source.glob("*.txt")):
        facts = path.with_name(path.stem + ".facts.toml")
        order = (tomllib.loads(facts.read_text(encoding="utf-8")).get("date_order", "")
                 if facts.exists() else "")
        found.append((path.stem, path.read_text(encoding="utf-8"), order))
    return found


def legacy_handout(summary: str, glossary, order: str):
    """The handout of a commit before handout_without_model: the tables, then each
    narrative section explained (as that commit's pipeline showed it when no rewrite
    passed), then the final completeness check."""
    from desktop_app.core.pipelines import simplify
    from desktop_app.core.pipelines.evidence import Explainer
    from desktop_app.core.pipelines.grounding import missing_facts
    from desktop_app.core.pipelines.summary_facts import read_summary
    from desktop_app.core.pipelines.trace import Trace

    trace = Trace(kind="simplify", method="", variant="", prompt_version="", app_version="",
                  models={}, settings={}, summary_sha256="")
    facts = read_summary(summary, glossary, order)
    handout = simplify.handout_tables(summary, facts, glossary, trace)
    for section, text in simplify.narrative_pieces(summary, facts):
        if section.kind == "header":
            handout.sections.append(simplify.HandoutSection(section.title, section.title, text,
                                                            text, "record"))
            continue
        explainer = Explainer(glossary, summary)
        explained = "\n".join(explainer.explain(line) for line in text.split("\n") if line.strip())
        handout.sections.append(simplify.HandoutSection(section.title, section.title, text,
                                                        explained, "explained"))
    text = handout.to_text()
    for fact in missing_facts(summary, text, glossary):
        start = summary.rfind("\n", 0, fact.start) + 1
        end = summary.find("\n", fact.end)
        line = summary[start:end if end >= 0 else len(summary)].strip()
        if line and line not in handout.copied:
            handout.copied.append(line)
    return handout


def child(tree: str, out: str, plain_modes: list[str]) -> None:
    """Make every handout with the code in `tree`; one JSON object."""
    sys.path.insert(0, tree)
    from desktop_app.core import offline

    offline.activate()
    from desktop_app.core.glossary.glossary import load_glossary
    from desktop_app.core.pipelines import evidence, simplify

    assert Path(sys.modules["desktop_app"].__file__).is_relative_to(tree)
    glossary = load_glossary(None)
    explainers: list = []
    original_init = evidence.Explainer.__init__

    def counting_init(self, *args, **kwargs):  # every explainer, to count its plain lines
        original_init(self, *args, **kwargs)
        explainers.append(self)
    evidence.Explainer.__init__ = counting_init
    results: dict = {}
    for mode in plain_modes:
        for corpus, source in CORPORA.items():
            if not source.exists():
                continue
            rows = results.setdefault(mode, {}).setdefault(corpus, [])
            for name, summary, order in summaries(source):
                explainers.clear()
                started = time.perf_counter()
                if hasattr(simplify, "handout_without_model"):
                    handout = simplify.handout_without_model(summary, glossary, date_order=order,
                                                             plain=mode == "after")
                    main = handout.main_text()
                else:
                    handout = legacy_handout(summary, glossary, order)
                    main = handout.to_text().split("\nWords to know\n", 1)[0]
                    main = main.split(handout.notice, 1)[-1] if handout.notice else main
                seconds = time.perf_counter() - started
                rows.append({
                    "name": name, "summary": summary, "main": main, "ms": seconds * 1000,
                    "copied": len(handout.copied),
                    "plain_lines": sum(getattr(e, "plain_kept", 0) for e in explainers),
                    "refused": [r for e in explainers for r in getattr(e, "plain_refused", [])]})
    Path(out).write_text(json.dumps(results), encoding="utf-8")


def run_child(tree: Path, modes: list[str]) -> dict:
    out = Path(tempfile.mkstemp(suffix=".json")[1])
    env = dict(os.environ, PYTHONPATH=str(tree))
    try:
        subprocess.run([sys.executable, __file__, "--child", str(tree), "--out", str(out),
                        *modes], check=True, env=env, cwd=str(tree))
        return json.loads(out.read_text(encoding="utf-8"))
    finally:
        out.unlink(missing_ok=True)


def with_model(count: int, models: str) -> dict:
    """The model's share of "What happened in hospital", per corpus (see the docstring)."""
    from desktop_app.core.config import Paths, Settings
    from desktop_app.core.glossary.glossary import load_glossary
    from desktop_app.core.models.runtime import ModelRuntime
    from desktop_app.core.pipelines.simplify import SimplifyPipeline

    sys.path.insert(0, str(ROOT / "bench"))
    from bench_answers import raw_tokens_per_second

    home = tempfile.TemporaryDirectory(prefix="lumen-bench-handouts-")
    paths = Paths.resolve(home.name)
    paths.ensure()
    settings = Settings(models_dir=models)
    raw = raw_tokens_per_second(str(next(Path(models).glob("smollm2-135m-instruct-q4_1/*.gguf"))),
                                settings.effective_threads())
    runtime = ModelRuntime(paths, settings)
    glossary = load_glossary(None)
    results = {"raw_tokens_per_second": raw}
    for corpus, source in CORPORA.items():
        if not source.exists():
            continue
        counts = {"model": 0, "plain, easy already": 0, "plain, rewrite failed": 0,
                  "no story": 0}
        seconds = []
        for _name, summary, order in summaries(source)[:count]:
            pipeline = SimplifyPipeline(runtime, glossary,
                                        Settings(models_dir=models, summary_date_order=order),
                                        paths.cache_dir)
            started = time.perf_counter()
            handout = pipeline.run(summary)
            seconds.append(time.perf_counter() - started)
            story = handout.story()
            counts["no story" if story is None else "model" if story.source == "model" else
                   "plain, rewrite failed" if story.problems else "plain, easy already"] += 1
        results[corpus] = {"counts": counts, "median_seconds": statistics.median(seconds),
                           "median_plain_tokens": statistics.median(seconds) * raw}
    runtime.close()
    home.cleanup()
    return results


def measure(rows: list[dict], cache: Path) -> list[dict]:
    from desktop_app.core.readability import flesch_kincaid_grade, lines_as_sentences

    for row in rows:
        row["source_words"] = len(row["summary"].split())
        row["words"] = len(row["main"].split())
        row["source_printed"] = flesch_kincaid_grade(row["summary"], cache)
        row["source_lines"] = flesch_kincaid_grade(lines_as_sentences(row["summary"]), cache)
        row["printed"] = flesch_kincaid_grade(row["main"], cache)
        row["lines"] = flesch_kincaid_grade(lines_as_sentences(row["main"]), cache)
    return rows


def table(results: dict) -> str:
    def median(rows, key):
        return statistics.median(r[key] for r in rows)
    out = ["| corpus | summaries | | source | before | shape only | after | after: goal met |",
           "|---|---|---|---|---|---|---|---|"]
    for corpus in results["after"]:
        before, shape, after = (results[m][corpus] for m in ("before", "shape", "after"))
        n = len(after)
        out += [
            f"| {corpus} | {n} | grade as printed (median) | {median(after, 'source_printed'):.1f} | "
            f"{median(before, 'printed'):.1f} | {median(shape, 'printed'):.1f} | "
            f"{median(after, 'printed'):.1f} | {sum(r['printed'] <= GOAL_GRADE for r in after)}/{n} "
            f"at or under {GOAL_GRADE:g} |",
            f"| | | grade, each line a sentence | {median(after, 'source_lines'):.1f} | "
            f"{median(before, 'lines'):.1f} | {median(shape, 'lines'):.1f} | "
            f"{median(after, 'lines'):.1f} | {sum(r['lines'] <= GOAL_GRADE for r in after)}/{n} |",
            f"| | | words (median) | {median(after, 'source_words'):.0f} | "
            f"{median(before, 'words'):.0f} | {median(shape, 'words'):.0f} | "
            f"{median(after, 'words'):.0f} | {sum(r['words'] <= r['source_words'] for r in after)}/{n}"
            " no longer than the source |",
            f"| | | lines copied word for word (all) | - | {sum(r['copied'] for r in before)} | "
            f"{sum(r['copied'] for r in shape)} | {sum(r['copied'] for r in after)} | |",
            f"| | | lines in plain words / kept as written | - | - | - | "
            f"{sum(r['plain_lines'] for r in after)} / {sum(len(r['refused']) for r in after)} | |",
            f"| | | ms per handout (median) | - | {median(before, 'ms'):.0f} | "
            f"{median(shape, 'ms'):.0f} | {median(after, 'ms'):.0f} | |"]
    return "\n".join(out)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--before", default="7d0db36", help="the commit to compare with")
    parser.add_argument("--json", type=Path, help="write every measurement here")
    parser.add_argument("--show", type=int, default=0,
                        help="print the main part of this many handouts of the tuned corpus, after")
    parser.add_argument("--model", type=int, default=0,
                        help="also make this many handouts per corpus with the embedded model")
    parser.add_argument("--models", default="", help="models folder (default: Lumen's own)")
    parser.add_argument("--child")
    parser.add_argument("--out")
    parser.add_argument("modes", nargs="*")
    args = parser.parse_args()
    if args.child:  # before anything imports Lumen: the child's Lumen is the tree's
        child(args.child, args.out, args.modes)
        return
    sys.path.insert(0, str(ROOT))
    from desktop_app.core import offline

    offline.activate()
    work = Path(tempfile.mkdtemp(prefix="lumen-bench-handouts-"))
    tree = work / "before"
    subprocess.run(["git", "worktree", "add", "--detach", str(tree), args.before], cwd=ROOT,
                   check=True, capture_output=True)
    try:
        results = {"before": run_child(tree, ["before"])["before"]}
    finally:
        subprocess.run(["git", "worktree", "remove", "--force", str(tree)], cwd=ROOT,
                       capture_output=True)
    now = run_child(ROOT, ["shape", "after"])
    results.update(now)
    cache = work / "cache"
    for runs in results.values():
        for rows in runs.values():
            measure(rows, cache)
    print(f"before = {args.before}; shape only and after = this checkout "
          f"({subprocess.run(['git', 'rev-parse', '--short', 'HEAD'], cwd=ROOT, capture_output=True, text=True).stdout.strip()})")
    print(table(results))
    counts: dict[str, int] = {}
    for rows in results["after"].values():
        for row in rows:
            for reasons in row["refused"]:
                for reason in reasons:
                    kind = reason.split(" '")[0]
                    counts[kind] = counts.get(kind, 0) + 1
    if counts:
        print("lines kept as written, by what plain words would have lost:",
              ", ".join(f"{k} {v}" for k, v in sorted(counts.items(), key=lambda kv: -kv[1])))
    for row in results["after"].get("tuned layouts", [])[:args.show]:
        print(f"\n==== {row['name']} (grade {row['printed']:.1f} as printed, {row['lines']:.1f} by "
              f"lines, {row['words']} words; source {row['source_printed']:.1f}, "
              f"{row['source_words']} words)\n{row['main']}")
    if args.model:
        from desktop_app.core.config import Paths, Settings

        models = args.models or str(Settings().models_path(Paths.resolve()))
        share = with_model(args.model, models)
        print(f"\nWith the embedded model (raw engine {share['raw_tokens_per_second']:.1f} "
              "tokens/s): who wrote \"What happened in hospital\"")
        print("| corpus | handouts | the model's rewrite | plain, easy already | "
              "plain, rewrite failed | no story | median s per handout | in plain-engine tokens |")
        print("|---|---|---|---|---|---|---|---|")
        for corpus, row in share.items():
            if corpus == "raw_tokens_per_second":
                continue
            c = row["counts"]
            print(f"| {corpus} | {sum(c.values())} | {c['model']} | {c['plain, easy already']} | "
                  f"{c['plain, rewrite failed']} | {c['no story']} | {row['median_seconds']:.1f} | "
                  f"{row['median_plain_tokens']:.0f} |")
        results["with_model"] = share
    if args.json:
        for when, runs in results.items():
            if when == "with_model":
                continue
            for rows in runs.values():
                for row in rows:
                    row.pop("summary", None)
        args.json.write_text(json.dumps(results, indent=1), encoding="utf-8")


if __name__ == "__main__":
    main()
