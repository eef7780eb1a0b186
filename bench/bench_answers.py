"""Benchmark: what a user is shown, before and after evidence-first Ask (issue #13).

Runs the demo benchmark's questions (resources/benchmarks/lumen-demo.jsonl; `--benchmark`
names another file, such as bench/data/heldout-answers.jsonl) through the Ask pipeline of two commits (`--after`, HEAD by default, and an earlier `--before`), each
checked out into a temporary git worktree and run in a child process, on the same
machine in one run:

- `before`: the earlier commit's `lamp:glossary`;
- `after`: the `--after` commit's `lamp:glossary` (HEAD by default, checked out on its own);
- `evidence`: the `--after` commit's evidence answer alone (no model).

Every shown answer is scored here with this checkout's code: key-fact recall against the
reference answer (grounding.key_fact_recall: doses, timings, dates and medicines), facts
the summary lacks that were shown without a flag, degenerate text shown as an answer
(checks.degeneracy_problems), and how often the shown answer is a model's text.  Latency
per question (median and p95) is reported in seconds and against the raw engine measured
in the same run: plain llama-cpp-python generating 128 tokens, so a question's latency
is also given as "plain tokens" (seconds × raw tokens/s), a unit that travels between
machines.  Then one handout of a summary of about 500 words is timed both ways.  Last,
the evidence answer alone at each `answer_lines` of `--sweep` (key-fact recall against
the answer's length in words), so the setting's default can be chosen on numbers.

    python bench/bench_answers.py --before b4fcbd8 [--limit 20]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DEMO = ROOT / "resources" / "benchmarks" / "lumen-demo.jsonl"
FIRST_WORDS = 40  # issue #31: the key facts of an answer within its first 40 words


def child(tree: str, method: str, limit: int, out: str, models: str, handout: bool,
          answer_lines: int = 0, benchmark: Path = DEMO) -> None:
    """Answer the questions with the pipeline in `tree`; one JSON line per question."""
    sys.path.insert(0, tree)
    from desktop_app.core import offline

    offline.activate()
    from desktop_app.core.config import Paths, Settings
    from desktop_app.core.glossary.glossary import load_glossary
    from desktop_app.core.models.runtime import ModelRuntime
    from desktop_app.core.pipelines.ask import AskPipeline

    assert Path(sys.modules["desktop_app"].__file__).is_relative_to(tree)
    home = tempfile.TemporaryDirectory(prefix="lumen-bench-answers-")
    paths = Paths.resolve(home.name)
    paths.ensure()
    # An answer is written from the evidence lines, so there are at least as many of them.
    settings = (Settings(models_dir=models, answer_lines=answer_lines,
                         evidence_lines=max(answer_lines, Settings().evidence_lines))
                if answer_lines else Settings(models_dir=models))
    runtime = ModelRuntime(paths, settings)
    glossary = load_glossary(None)
    rows = read_rows(benchmark, limit)
    pipeline = AskPipeline(runtime, glossary, settings, paths.cache_dir)
    pipeline.run(rows[0]["summary"], rows[0]["question"], method=method)  # load and warm up
    with open(out, "w", encoding="utf-8") as handle:
        for row in rows:
            started = time.perf_counter()
            result = pipeline.run(row["summary"], row["question"], method=method)
            seconds = time.perf_counter() - started
            trace = result.trace
            handle.write(json.dumps({
                "id": row["id"], "answer": result.answer, "seconds": seconds,
                "source": getattr(trace, "answer_source", "") or "model",
                "flags": trace.grounding_flags,
                "model_seconds": trace.totals()["model_seconds"]}) + "\n")
        if handout:
            from desktop_app.core.pipelines.simplify import SimplifyPipeline

            summary = handout_summary(rows)
            started = time.perf_counter()
            SimplifyPipeline(runtime, glossary, settings, paths.cache_dir).run(summary)
            handle.write(json.dumps({"handout_seconds": time.perf_counter() - started,
                                     "handout_words": len(summary.split())}) + "\n")
    runtime.close()
    home.cleanup()


def read_rows(benchmark: Path, limit: int) -> list[dict]:
    return [json.loads(line) for line in benchmark.read_text(encoding="utf-8").splitlines()
            if line.strip()][:limit]


def handout_summary(rows: list[dict]) -> str:
    """The demo summary nearest 500 words."""
    summaries = {row["summary_id"]: row["summary"] for row in rows}
    return min(summaries.values(), key=lambda text: abs(len(text.split()) - 500))


def raw_tokens_per_second(model: str, threads: int) -> float:
    import llama_cpp

    llama = llama_cpp.Llama(model_path=model, n_ctx=1024, n_threads=threads,
                            n_threads_batch=threads, seed=42, verbose=False)
    prompt = llama.tokenize(b"<|im_start|>user\nWrite about the heart.<|im_end|>\n<|im_start|>assistant\n")
    best = 0.0
    for _ in range(3):
        llama.reset()
        started = time.perf_counter()
        out = llama.create_completion(prompt=prompt, max_tokens=128, temperature=0.0,
                                      stop=[])
        tokens = out["usage"]["completion_tokens"]
        best = max(best, tokens / (time.perf_counter() - started))
    return best


def score(rows: list[dict], answers: list[dict]) -> dict:
    from desktop_app.core.glossary.glossary import load_glossary
    from desktop_app.core.pipelines.checks import degeneracy_problems
    from desktop_app.core.pipelines.grounding import key_fact_recall, unsupported_facts

    glossary = load_glossary(None)
    by_id = {row["id"]: row for row in rows}
    present = wanted = 0
    per_question, degenerate, unflagged, model_shown, seconds = [], 0, 0, 0, []
    up_front = 0  # answers whose every key fact found is within their first FIRST_WORDS words
    for answer in answers:
        row = by_id[answer["id"]]
        hit, total = key_fact_recall(row["answer"], answer["answer"], glossary)
        first, _ = key_fact_recall(row["answer"], " ".join(answer["answer"].split()[:FIRST_WORDS]),
                                   glossary)
        up_front += first == hit
        present, wanted = present + hit, wanted + total
        if total:
            per_question.append(hit / total)
        degenerate += bool(degeneracy_problems(answer["answer"], row["question"]))
        flagged = {f["text"] for f in answer["flags"]}
        unflagged += any(f.text not in flagged
                         for f in unsupported_facts(answer["answer"], row["summary"], glossary))
        model_shown += answer["source"] == "model"
        seconds.append(answer["seconds"])
    seconds.sort()
    words = sorted(len(answer["answer"].split()) for answer in answers)
    return {"median_words": statistics.median(words),
            "facts_up_front": up_front / len(answers) if answers else None,
            "p90_words": words[min(len(words) - 1, int(round(0.9 * (len(words) - 1))))],
            "questions": len(answers), "key_fact_recall": present / wanted if wanted else None,
            "key_fact_recall_macro": statistics.mean(per_question) if per_question else None,
            "degenerate_shown": degenerate, "unsupported_unflagged": unflagged,
            "model_answers_shown": model_shown,
            "median_seconds": statistics.median(seconds),
            "p95_seconds": seconds[min(len(seconds) - 1, int(round(0.95 * (len(seconds) - 1))))]}


def run_child(tree: Path, method: str, limit: int, models: str, handout: bool,
              answer_lines: int = 0, benchmark: Path = DEMO) -> list[dict]:
    out = Path(tempfile.mkstemp(suffix=".jsonl")[1])
    env = dict(os.environ, PYTHONPATH=str(tree))
    subprocess.run([sys.executable, __file__, "--child", str(tree), "--method", method,
                    "--limit", str(limit), "--out", str(out), "--models", models,
                    "--answer-lines", str(answer_lines), "--benchmark", str(benchmark)]
                   + (["--handout"] if handout else []), check=True, env=env, cwd=str(tree))
    try:
        return [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
    finally:
        out.unlink(missing_ok=True)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--before", default="b4fcbd8", help="the commit to compare with")
    parser.add_argument("--after", default="HEAD",
                        help="the commit measured as 'after' (checked out on its own, so edits "
                             "to the working tree during a run change nothing)")
    parser.add_argument("--limit", type=int, default=1000, help="most questions (default: all)")
    parser.add_argument("--benchmark", type=Path, default=DEMO,
                        help="the questions (JSON lines: summary, question, answer); the demo "
                             "benchmark by default, or bench/data/heldout-answers.jsonl, written "
                             "apart from the evidence rules, for a figure they were not tuned on")
    parser.add_argument("--models", default="", help="models folder (default: Lumen's own)")
    parser.add_argument("--json", help="also write the results to this file")
    parser.add_argument("--child")
    parser.add_argument("--method")
    parser.add_argument("--out")
    parser.add_argument("--handout", action="store_true")
    parser.add_argument("--answer-lines", type=int, default=0)
    parser.add_argument("--sweep", default="1,2,3,4,5,6",
                        help="answer_lines values to measure the evidence answer at ('' for none)")
    parser.add_argument("--sweep-only", action="store_true",
                        help="measure only the evidence answer at each --sweep value")
    args = parser.parse_args()
    if args.child:  # before anything imports Lumen: the child's Lumen is the tree's
        child(args.child, args.method, args.limit, args.out, args.models, args.handout,
              args.answer_lines, args.benchmark)
        return 0
    sys.path.insert(0, str(ROOT))
    from desktop_app.core.config import Paths, Settings

    models = args.models or str(Settings().models_path(Paths.resolve()))
    from desktop_app.core import offline

    offline.activate()
    from desktop_app.core.evaluation.runner import machine as machine_facts

    settings = Settings(models_dir=models)
    gguf = next(Path(models).glob("smollm2-135m-instruct-q4_1/*.gguf"))
    benchmark = args.benchmark.resolve()
    rows = read_rows(benchmark, args.limit)
    raw = raw_tokens_per_second(str(gguf), settings.effective_threads())
    trees = {}
    for name, commit in (("before", args.before), ("after", args.after)):
        trees[name] = Path(tempfile.mkdtemp(prefix=f"lumen-{name}-")) / "tree"
        subprocess.run(["git", "-C", str(ROOT), "worktree", "add", "--detach", str(trees[name]),
                        commit], check=True, capture_output=True)
    commits = {name: subprocess.run(["git", "-C", str(tree), "rev-parse", "--short", "HEAD"],
                                    capture_output=True, text=True).stdout.strip()
               for name, tree in trees.items()}
    try:
        results, shown = {}, {}
        for name, tree, method in () if args.sweep_only else (
                ("before", trees["before"], "lamp"), ("after", trees["after"], "lamp"),
                ("evidence", trees["after"], "evidence")):
            answers = run_child(tree, method, args.limit, models, name != "evidence", 0, benchmark)
            handout = [a for a in answers if "handout_seconds" in a]
            answers = [a for a in answers if "id" in a]
            results[name] = score(rows, answers)
            shown[name] = answers
            if handout:
                results[name].update(handout[0])
            print(f"{name}: {json.dumps(results[name])}", file=sys.stderr)
        sweep = {}
        for count in [int(c) for c in args.sweep.split(",") if c.strip()]:
            answers = run_child(trees["after"], "evidence", args.limit, models, False, count,
                                benchmark)
            sweep[count] = score(rows, answers)
    finally:
        for tree in trees.values():
            subprocess.run(["git", "-C", str(ROOT), "worktree", "remove", "--force", str(tree)],
                           check=False, capture_output=True)
            shutil.rmtree(tree.parent, ignore_errors=True)
    facts = machine_facts()
    print(f"Machine: {facts}")
    print(f"Commits: before {commits['before']}, after {commits['after']}")
    print(f"Questions: {len(rows)} of {benchmark.name}")
    print(f"Raw engine: plain llama-cpp-python, {raw:.1f} generated tokens/s (SmolLM2-135M "
          f"Q4_1, {settings.effective_threads()} threads)\n")
    if results:
        print("| | before (lamp:glossary) | after (lamp:glossary) | evidence answer alone |")
        print("|---|---|---|---|")

        def row(label, key, fmt):
            cells = [fmt(results[name].get(key)) if results[name].get(key) is not None else "-"
                     for name in ("before", "after", "evidence")]
            print(f"| {label} | " + " | ".join(cells) + " |")

        count = len(rows)
        row("key-fact recall (micro)", "key_fact_recall", lambda v: f"{v:.3f}")
        row("key-fact recall (per question)", "key_fact_recall_macro", lambda v: f"{v:.3f}")
        row(f"degenerate text shown (of {count})", "degenerate_shown", str)
        row(f"unsupported fact shown without a flag (of {count})", "unsupported_unflagged", str)
        row(f"shown answer written by the model (of {count})", "model_answers_shown", str)
        row("median words in the shown answer", "median_words", lambda v: f"{v:.0f}")
        row(f"every key fact found within the first {FIRST_WORDS} words", "facts_up_front",
            lambda v: f"{v:.0%}")
        row("median seconds per question", "median_seconds", lambda v: f"{v:.2f}")
        row("p95 seconds per question", "p95_seconds", lambda v: f"{v:.2f}")
        row("median, in plain-engine tokens", "median_seconds", lambda v: f"{v * raw:.0f}")
        row("handout seconds", "handout_seconds", lambda v: f"{v:.1f}")
        row("handout, in plain-engine tokens", "handout_seconds", lambda v: f"{v * raw:.0f}")
        print(f"\nHandout: the summary nearest 500 words "
              f"({results['after'].get('handout_words', '-')} words).")
    if sweep:
        print("\nThe evidence answer by `answer_lines` (the setting; related lines come on top):\n")
        print(f"| answer_lines | key-fact recall | median words | p90 words | key facts within "
              f"the first {FIRST_WORDS} words |")
        print("|---|---|---|---|---|")
        for count, result in sweep.items():
            print(f"| {count} | {result['key_fact_recall']:.3f} | {result['median_words']:.0f} | "
                  f"{result['p90_words']} | {result['facts_up_front']:.0%} |")
    if args.json:
        Path(args.json).write_text(json.dumps({"raw_tokens_per_second": raw, "machine": facts,
                                               "results": results, "sweep": sweep,
                                               "answers": shown},
                                              indent=2), encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
