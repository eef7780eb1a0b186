"""Benchmark: simulated consultations (3MDBench, issue #18), each doctor mode in one run.

The first N demo cases (resources/benchmarks/lumen-dialogue-demo.jsonl) are replayed with
the systems dialogue:no-dialogue, dialogue:dialogue, dialogue:rationale and dialogue:hint
(the hint drawn from the demo imported as the case base, each case's own record left out)
and the consultation scorer, exactly as `lumen evaluate run` does, utterances kept in the
encrypted database as they finish.

Reported per mode: consultations per minute; utterances per consultation and how they
ended; the model-time share (time inside llama.cpp for the patient, the doctor, the
extraction and the assessor, over the wall time: the rest is Lumen's own work, the
database and the hint's retrieval); the dialogue's generation speed (tokens of what the
patient and doctor wrote, hidden reasoning included, per second of their turns) as a
ratio to the raw engine's tokens/s measured in the same run, which shows what the growing
prompts cost; and macro F1 and accuracy, which with the embedded 135M model are near
chance (one label in 34 is about 3%) and say nothing of a production model.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from desktop_app.core import offline  # noqa: E402

offline.activate()

from desktop_app.core.choices import CONSULTATION_MODES  # noqa: E402
from desktop_app.core.config import Paths, Settings  # noqa: E402
from desktop_app.core.evaluation.dialogue import diagnosis_scores  # noqa: E402
from desktop_app.core.models import manage  # noqa: E402
from desktop_app.core.session import Session  # noqa: E402
from desktop_app.core.store import open_store  # noqa: E402

PASSPHRASE = "benchmark passphrase"
DEMO = ROOT / "resources" / "benchmarks" / "lumen-dialogue-demo.jsonl"
PROMPT = [{"role": "user", "content": "Explain in three sentences what a discharge summary is."}]


def raw_tokens_per_second(session: Session, tokens: int) -> float:
    model = session._runtime.for_role("generator")
    model.generate(PROMPT, max_tokens=8, temperature=0.0)  # warm-up
    generation = model.generate(PROMPT, max_tokens=tokens, temperature=0.0)
    return generation.completion_tokens / generation.seconds


def replay(session: Session, dataset_id: str, mode: str, cases: int) -> dict:
    (run_id,) = session.evaluation.start(dataset_id, [f"dialogue:{mode}"], ["consultation"],
                                         limit=cases)
    started = time.perf_counter()
    session.evaluation.resume(run_id)
    wall = time.perf_counter() - started
    results = session.evaluation.results(run_id)
    model = session._runtime.for_role("generator")
    turns = [t for r in results for t in r["trace"]["consultation"]["turns"]]
    written = sum(len(model.tokenize(t["text"] + t["reasoning"])) for t in turns if
                  t["text"] + t["reasoning"])
    turn_seconds = sum(t["seconds"] for t in turns)
    ended: dict[str, int] = {}
    for r in results:
        how = r["trace"]["consultation"]["ended_by"]
        ended[how] = ended.get(how, 0) + 1
    scores = diagnosis_scores([(r["target"], r["output"] or "none") for r in results])
    return {"run": run_id, "consultations": len(results), "wall_s": round(wall, 1),
            "per_minute": round(60 * len(results) / wall, 2),
            "utterances": round(len(turns) / len(results), 1), "ended_by": ended,
            "model_share": round(sum(r["model_seconds"] for r in results) / wall, 3),
            "dialogue_tokens_per_second": round(written / turn_seconds, 1) if turn_seconds else None,
            "macro_f1": round(scores["macro_f1"], 3), "accuracy": round(scores["accuracy"], 3),
            "none_rate": round(scores["none_rate"], 3)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cases", type=int, default=4, help="demo cases per mode (34 at most)")
    parser.add_argument("--cap", type=int, default=28, help="utterance cap (the protocol: 28)")
    parser.add_argument("--modes", default=",".join(CONSULTATION_MODES))
    parser.add_argument("--threads", type=int, default=os.cpu_count() or 2)
    parser.add_argument("--json", type=Path, help="also write the results here")
    args = parser.parse_args()
    results: dict[str, dict] = {}
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        settings = Settings(threads=args.threads, dialogue_max_utterances=args.cap)
        models = Paths.resolve(folder / "models")
        models.ensure()
        manage.provision(models, settings)
        settings = settings.with_value("models_dir", str(models.default_models_dir))
        paths = Paths.resolve(folder / "profile")
        paths.ensure()
        settings.save(paths)
        with Session(paths, settings, open_store(paths.database_file, PASSPHRASE)) as session:
            saved, _ = session.evaluation.import_file(DEMO, "dialogue", name="dialogue-demo")
            session.knowledge().import_cases(DEMO)  # the hint mode's past cases
            raw = raw_tokens_per_second(session, 96)
            print(f"raw engine: {raw:.1f} tokens/s", flush=True)
            for mode in args.modes.split(","):
                results[mode] = replay(session, saved.id, mode, args.cases)
                print(mode, results[mode], flush=True)
    print(f"\n{args.cases} demo cases per mode, cap {args.cap} utterances, context "
          f"{settings.context_size}, {args.threads} threads; raw engine {raw:.1f} tokens/s")
    print(f"{'mode':12} {'per min':>8} {'utter.':>7} {'model share':>12} {'dialogue tok/s ÷ raw':>21} "
          f"{'macro F1':>9} {'accuracy':>9}  ended by")
    for mode, row in results.items():
        ratio = (row["dialogue_tokens_per_second"] or 0) / raw
        print(f"{mode:12} {row['per_minute']:8.2f} {row['utterances']:7.1f} {row['model_share']:12.2f} "
              f"{ratio:21.2f} {row['macro_f1']:9.2f} {row['accuracy']:9.2f}  "
              + ", ".join(f"{k} {v}" for k, v in sorted(row["ended_by"].items())))
    if args.json:
        args.json.write_text(json.dumps({"raw_tokens_per_second": raw, "cases": args.cases,
                                         "cap": args.cap, "modes": results}, indent=1))


if __name__ == "__main__":
    main()
