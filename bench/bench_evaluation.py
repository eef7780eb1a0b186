"""Benchmark: the evaluation engine's overhead, in one run.

1. Replay: N questions of the demo benchmark through a system with the reference
   metrics and the similarity judge.  Reported: samples per minute, and the wall time
   against the sum of the time spent inside model calls (answer and judge) in the same
   run; the difference is the engine's own cost (metrics, embedding, bookkeeping,
   database writes).
2. Database writes: storing realistic per-sample results (output, scores, judge replies,
   a trace of a few kB) in Lumen's encrypted SQLCipher database, one transaction per
   sample as the engine does, against plain SQLite (unencrypted, same schema and
   payload, same transaction per sample).
"""

from __future__ import annotations

import argparse
import json
import os
import sqlite3
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from desktop_app.core import offline  # noqa: E402

offline.activate()

from desktop_app.core.config import Paths, Settings  # noqa: E402
from desktop_app.core.evaluation.dataset import Sample  # noqa: E402
from desktop_app.core.evaluation.importers import import_dataset  # noqa: E402
from desktop_app.core.evaluation.runner import Evaluator, continue_run, start_run  # noqa: E402
from desktop_app.core.evaluation.runs import EvaluationStore  # noqa: E402
from desktop_app.core.glossary.glossary import load_glossary  # noqa: E402
from desktop_app.core.models import manage  # noqa: E402
from desktop_app.core.models.runtime import ModelRuntime  # noqa: E402
from desktop_app.core.pipelines.calibration import demo_benchmark  # noqa: E402
from desktop_app.core.store import open_store  # noqa: E402
from desktop_app.core.store.migrations import MIGRATIONS  # noqa: E402


def replay(folder: Path, questions: int, system: str, threads: int) -> dict:
    paths = Paths.resolve(folder / "profile")
    paths.ensure()
    settings = Settings(threads=threads, context_size=2048, answer_tokens=64, bootstrap_resamples=2000)
    manage.provision(paths, settings)
    runtime = ModelRuntime(paths, settings)
    with open_store(paths.database_file, "benchmark passphrase") as store:
        evaluations = EvaluationStore(store)
        dataset = evaluations.save_dataset(import_dataset(demo_benchmark(), "medisumqa"))
        evaluator = Evaluator(runtime, load_glossary(None), settings, paths.cache_dir)
        runtime.for_role("generator")
        runtime.embedder().embed_one("warm-up")
        run_id = start_run(evaluations, runtime, settings, dataset.id, system,
                           ["reference", "similarity-judge"], limit=questions)
        started = time.perf_counter()
        continue_run(evaluations, evaluator, run_id)
        wall = time.perf_counter() - started
        results = evaluations.results(run_id)
    runtime.close()
    model = sum(r["model_seconds"] for r in results)
    return {"samples": len(results), "wall": wall, "model": model}


def payload(index: int) -> dict:
    trace = {"attempts": [{"text": "word " * 60, "calls": [{"prompt_tokens": 1200, "seconds": 1.5}] * 2}] * 3}
    return {"output": f"answer {index} " + "text " * 50,
            "scores": json.dumps({"sari": 40.1, "fkgl": 7.2, "sbert": 55.0, "token_f1": 30.0,
                                  "bleu": 5.0, "rouge_l": 25.0, "bertscore_f1": 70.0,
                                  "judge_similarity": 3}),
            "judge": json.dumps({"similarity": {"unparseable": False, "reply": '{"similarity": 3}'}}),
            "trace": json.dumps(trace)}


def write_encrypted(folder: Path, count: int) -> float:
    with open_store(folder / "encrypted.db", "benchmark passphrase") as store:
        evaluations = EvaluationStore(store)
        store.execute("INSERT INTO eval_dataset VALUES ('d', 'd', 'f', 'f', 'x', 'en', 0, 't')")
        store.execute("INSERT INTO eval_run VALUES ('r', 'd', 's', '[]', '{}', 'running', NULL, 't', 't')")
        started = time.perf_counter()
        for index in range(count):
            data = payload(index)
            evaluations.save_result("r", Sample(f"s{index}", "q"), index, output=data["output"],
                                    scores=json.loads(data["scores"]), judge=json.loads(data["judge"]),
                                    trace=json.loads(data["trace"]), error="", seconds=1.0,
                                    model_seconds=0.9)
        return time.perf_counter() - started


def write_plain(folder: Path, count: int) -> float:
    conn = sqlite3.connect(folder / "plain.db", isolation_level=None)
    conn.execute("PRAGMA journal_mode = WAL")
    schema = next(script for version, _, script in MIGRATIONS if version == 4)
    conn.executescript(schema)
    conn.execute("INSERT INTO eval_dataset VALUES ('d', 'd', 'f', 'f', 'x', 'en', 0, 't')")
    conn.execute("INSERT INTO eval_run VALUES ('r', 'd', 's', '[]', '{}', 'running', NULL, 't', 't')")
    started = time.perf_counter()
    for index in range(count):
        data = payload(index)
        conn.execute("BEGIN IMMEDIATE")
        conn.execute("INSERT OR IGNORE INTO eval_result (run_id, sample_id, ordinal, output, scores, "
                     "judge, trace, error, seconds, model_seconds, finished_at) "
                     "VALUES (?, ?, ?, ?, ?, ?, ?, '', 1.0, 0.9, 't')",
                     ("r", f"s{index}", index, data["output"], data["scores"], data["judge"], data["trace"]))
        conn.execute("UPDATE eval_run SET updated_at = 't' WHERE id = 'r'")
        conn.execute("COMMIT")
    elapsed = time.perf_counter() - started
    conn.close()
    return elapsed


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--questions", type=int, default=6)
    parser.add_argument("--system", default="lamp-no-loops:glossary")
    parser.add_argument("--writes", type=int, default=300)
    parser.add_argument("--threads", type=int, default=os.cpu_count() or 2)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="lumen-bench-") as folder:
        folder = Path(folder)
        run = replay(folder, args.questions, args.system, args.threads)
        encrypted = write_encrypted(folder, args.writes)
        plain = write_plain(folder, args.writes)
    print(f"Replay: {run['samples']} demo questions, system {args.system}, reference metrics + "
          f"similarity judge, {args.threads} threads, SmolLM2-135M Q4_1\n")
    print("| measure | Lumen | raw | ratio |")
    print("|---|---|---|---|")
    print(f"| replay: wall seconds vs seconds inside model calls | {run['wall']:.1f} | {run['model']:.1f} | "
          f"{run['wall'] / run['model']:.2f} |")
    print(f"| samples per minute (wall) | {60 * run['samples'] / run['wall']:.1f} | "
          f"{60 * run['samples'] / run['model']:.1f} if only model calls counted | |")
    print(f"| result write, ms per sample ({args.writes} samples, a transaction each) | "
          f"{1000 * encrypted / args.writes:.2f} (SQLCipher) | {1000 * plain / args.writes:.2f} (plain SQLite) | "
          f"{encrypted / plain:.2f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
