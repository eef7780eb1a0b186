"""Running a system under test over a dataset, scoring each sample as it finishes.

Systems are declared in systems.py, a class per family (the Ask methods on a document,
`qa` on open questions, `doctorrag:<set-up>` on labelled cases, `dialogue:<mode>`
consultations, whose utterances are kept as they finish, in eval_turn, so a run stopped
mid-dialogue goes on from the next one).

Scorers are declared in scorers.py, each with its metrics.  A blank
prediction gets worst-case reference scores, as in LAMP-MedQA; a sample that failed with
an error has no prediction and no score: it is listed with its reason, left out of every
metric, and tried again when the run is resumed.  A run stops as failed once more samples
are in error than Settings.run_max_error_share allows.
"""

from __future__ import annotations

import functools
import os
import platform
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable

from ... import __version__
from ..config import Settings
from ..errors import Cancelled, LumenError, ModelOutputError
from ..glossary.glossary import Glossary
from ..models.catalog import ROLES
from ..models.runtime import ModelRuntime
from ..pipelines.ask import AskPipeline
from ..pipelines.base import Pipeline
from ..progress import CancelToken, ProgressCallback, report
from ..prompts import load_prompts
from .dataset import Sample
from .judges import RubricJudge, unparseable_detail
from .runs import EvaluationStore, SavedDataset
from .scorers import SCORERS, check_scorers_go_with, judge_scorers, score_sample
from .systems import SYSTEMS, family_of, is_consultation, parse_system

if TYPE_CHECKING:
    from ..knowledge.doctorrag import DoctorRAG
    from .consultation import ConsultationSimulator

# An enum, not minimum/maximum: llama.cpp's schema grammar ignores integer bounds.
SIMILARITY_SCHEMA = {"type": "object", "properties": {"similarity": {"type": "integer",
                                                                     "enum": [1, 2, 3, 4, 5]}},
                     "required": ["similarity"], "additionalProperties": False}
JUDGE_MAX_TOKENS = 150  # the paper's judge setting (far above what the grammar allows)


def machine() -> dict[str, Any]:
    cpu = platform.processor() or ""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return {"system": f"{platform.system()} {platform.release()}", "cpu": cpu,
            "cores": os.cpu_count(), "python": platform.python_version()}


def run_config(runtime: ModelRuntime, settings: Settings, system: str, scorers: list[str],
               dataset_sha256: str) -> dict[str, Any]:
    """What a report needs to say exactly what was run, on what."""
    models = {}
    for role in ROLES:
        spec = runtime.registry.for_role(role)
        if spec.is_server:
            models[role] = {"id": spec.id, "endpoint": spec.endpoint,
                            "server_model": spec.server_model, "server_kind": spec.server_kind}
        else:
            models[role] = {"id": spec.id, "sha256": spec.primary_file().sha256,
                            "quantisation": spec.quantisation, "file": spec.primary_file().name}
    return {"app_version": __version__, "system": system, "scorers": scorers, "models": models,
            "prompt_versions": {name: load_prompts(name).version
                                for name in ("ask", "judge", "knowledge", "dialogue")},
            "settings": settings.to_dict(), "seed": settings.seed, "machine": machine(),
            "dataset_sha256": dataset_sha256}


@dataclass
class SampleOutcome:
    sample: Sample
    output: str
    scores: dict[str, float | None]
    judge: dict[str, Any]
    trace: dict[str, Any]
    error: str
    seconds: float
    model_seconds: float


class Evaluator(Pipeline):
    prompt_set = "judge"

    def __init__(self, runtime: ModelRuntime, glossary: Glossary, settings: Settings,
                 cache_dir: Path, knowledge: "DoctorRAG | None" = None) -> None:
        super().__init__(runtime, glossary, settings, cache_dir)
        self.ask = AskPipeline(runtime, glossary, settings, cache_dir)
        self.rubric = RubricJudge(runtime)
        self.knowledge = knowledge  # the knowledge and case bases, for doctorrag systems

    # ---- the system under test ----

    def answer(self, system: str, sample: Sample, cancel: CancelToken | None,
               journal: "TurnJournal | None" = None) -> tuple[str, dict, float]:
        """The system's output for the sample, its trace and the model seconds
        (systems.SYSTEMS: each family answers in its own class)."""
        prefix, variant = parse_system(system)
        return SYSTEMS[prefix].answer(self, prefix, variant, sample, cancel, journal)

    @functools.cached_property
    def consultations(self) -> "ConsultationSimulator":
        from .consultation import ConsultationSimulator, case_base_hint

        hint = (case_base_hint(self.knowledge) if self.knowledge is not None
                and self.knowledge.casebase.count() else None)
        return ConsultationSimulator(self.runtime, self.settings, hint)

    # ---- scorers ----

    def similarity_judge(self, prediction: str, reference: str,
                         cancel: CancelToken | None) -> tuple[int | None, dict[str, Any]]:
        judge = self.runtime.for_role("judge")
        messages = [{"role": "system", "content": self.prompts.text("similarity", "system")},
                    {"role": "user", "content": self.prompts.text(
                        "similarity", "user", reference=reference, prediction=prediction)}]
        try:
            value, generation = judge.generate_json(messages, SIMILARITY_SCHEMA, temperature=0.0,
                                                    max_tokens=JUDGE_MAX_TOKENS, cancel=cancel)
        except ModelOutputError as exc:
            return None, unparseable_detail(exc)
        return int(value["similarity"]), {"unparseable": False, "reply": generation.text,
                                          "seconds": generation.seconds}

    def score(self, scorers: list[str], sample: Sample, output: str,
              cancel: CancelToken | None, trace: dict[str, Any] | None = None
              ) -> tuple[dict[str, float | None], dict[str, Any], float]:
        """The scores, the judges' replies and the model seconds of the scorers chosen
        (scorers.SCORERS, each in its own function)."""
        scored = score_sample(self, scorers, sample, output, cancel, trace or {})
        return scored.scores, scored.judge, scored.seconds

    def evaluate(self, system: str, scorers: list[str], sample: Sample,
                 cancel: CancelToken | None, journal: "TurnJournal | None" = None
                 ) -> SampleOutcome:
        started = time.perf_counter()
        error, trace, model_seconds = "", {}, 0.0
        try:
            output, trace, model_seconds = self.answer(system, sample, cancel, journal)
        except Cancelled:
            raise
        except LumenError as exc:
            # No answer is not a bad answer: an errored sample is kept with its reason (and
            # the fix, for the run's message) and scored on nothing (report.summarize).
            output, error = "", f"{type(exc).__name__}: {exc.message}"
            trace = {"error_fix": exc.fix}
            return SampleOutcome(sample, output, {}, {}, trace, error,
                                 time.perf_counter() - started, model_seconds)
        scores, judge, judge_seconds = self.score(scorers, sample, output, cancel, trace)
        return SampleOutcome(sample, output, scores, judge, trace, error,
                             time.perf_counter() - started, model_seconds + judge_seconds)


class TurnJournal:
    """Where a run keeps each consultation utterance as it finishes (eval_turn)."""

    def __init__(self, evaluations: EvaluationStore, run_id: str,
                 on_saved: Callable[[str, int], None] | None = None) -> None:
        self.evaluations, self.run_id, self.on_saved = evaluations, run_id, on_saved

    def turns(self, sample_id: str) -> list[dict[str, Any]]:
        return self.evaluations.turns(self.run_id, sample_id)

    def save(self, sample_id: str, index: int, turn: dict[str, Any]) -> None:
        self.evaluations.save_turn(self.run_id, sample_id, index, turn)
        if self.on_saved is not None:
            self.on_saved(sample_id, index)


SampleCallback = Callable[[SampleOutcome, int, int], None]


def start_run(evaluations: EvaluationStore, runtime: ModelRuntime, settings: Settings, dataset_id: str,
              system: str, scorers: list[str], limit: int | None = None) -> str:
    dataset = check_run(evaluations, dataset_id, system, scorers)
    config = run_config(runtime, settings, system, scorers, dataset.source_sha256)
    return evaluations.create_run(dataset_id, system, scorers, config, limit)


def check_run(evaluations: EvaluationStore, dataset_id: str, system: str,
              scorers: list[str]) -> SavedDataset:
    """Refuse a run that cannot be: an unknown system or scorer, a consultation system on
    a dataset of questions, scorers that do not go with the system.  Nothing is written."""
    family = family_of(system)
    unknown = set(scorers) - set(SCORERS)
    if unknown:
        raise LumenError(f"Unknown scorer(s): {', '.join(sorted(unknown))}.",
                         f"Scorers: {', '.join(SCORERS)}.")
    dataset = evaluations.dataset(dataset_id)
    family.check(system, dataset, evaluations.has_documents(dataset_id), scorers)
    check_scorers_go_with(system, scorers)
    return dataset


def parallel_samples(evaluator: Evaluator, system: str, scorers: list[str]) -> int:
    """How many samples go to the models at once: the setting's N when every model the run
    generates with is on an inference server, else 1 (a local llama.cpp answers one call
    at a time, so more threads would only wait).  DoctorRAG replays and consultations
    (whose utterances are kept as they finish) stay sequential."""
    wanted = evaluator.settings.server_parallel_requests
    if wanted <= 1 or family_of(system).sequential:
        return 1
    roles = ("generator", "reviewer") + (("judge",) if set(scorers) & set(judge_scorers()) else ())
    return wanted if evaluator.runtime.all_on_servers(roles) else 1


def _evaluate_in_parallel(evaluator: Evaluator, run: dict[str, Any], todo: list[tuple[int, Sample]],
                          at_once: int, keep: Callable[[int, SampleOutcome], None],
                          say: Callable[[int], None], cancel: CancelToken | None) -> None:
    """Up to `at_once` samples in flight; each is kept (saved) by this thread as it
    finishes.  After a cancel or a failure nothing new starts, the samples in flight
    finish or stop, the finished ones are kept, and the first error is raised."""
    from concurrent.futures import FIRST_COMPLETED, ThreadPoolExecutor, wait

    queue = iter(todo)
    running: dict[Any, int] = {}
    failure: BaseException | None = None
    with ThreadPoolExecutor(at_once, thread_name_prefix="lumen-replay") as pool:
        def start_next() -> None:
            item = next(queue, None)
            if item is not None:
                running[pool.submit(evaluator.evaluate, run["system"], run["scorers"], item[1],
                                    cancel)] = item[0]
        for _ in range(at_once):
            start_next()
        while running:
            say(len(running))
            finished, _ = wait(running, return_when=FIRST_COMPLETED)
            for future in finished:
                ordinal = running.pop(future)
                try:
                    outcome = future.result()
                except BaseException as exc:  # noqa: BLE001 - raised again below
                    failure = failure or exc
                    continue
                keep(ordinal, outcome)
                if failure is None and not (cancel is not None and cancel.cancelled):
                    start_next()
    if failure is not None:
        raise failure
    if cancel is not None:
        cancel.raise_if_cancelled()


def too_many_errors(evaluations: EvaluationStore, run_id: str, errors: int, total: int,
                    share: float) -> LumenError:
    """The error that ends a run with more samples in error than allowed: how many, the
    most common reason, and its fix."""
    from .report import error_reasons

    results = evaluations.results(run_id)
    reasons = error_reasons(results)
    commonest = reasons[0] if reasons else {"error": "unknown", "count": errors, "samples": []}
    fix = next((r["trace"].get("error_fix", "") for r in results
                if r["error"] == commonest["error"]), "")
    evaluations.store.audit("bench.run_failed", {"run": run_id, "errors": errors,
                                                 "samples": total})
    return LumenError(
        f"Run {run_id} stopped as failed: {errors} of {total} samples ended in an error (at "
        f"most {share:.0%} may). Most often ({commonest['count']}): {commonest['error']}",
        (fix + " " if fix else "") + "The samples answered are kept; errored samples are "
        f"tried again with 'lumen evaluate run --resume {run_id}' once the cause is fixed.")


def continue_run(evaluations: EvaluationStore, evaluator: Evaluator, run_id: str, *,
                 progress: ProgressCallback = None, cancel: CancelToken | None = None,
                 on_sample: SampleCallback | None = None) -> dict[str, Any]:
    """Score every sample of the run not yet finished; safe to call again after any stop."""
    was = evaluations.run(run_id)["status"]  # before this process holds it: "interrupted", ...
    with evaluations.carrying_on(run_id):
        return _carry_on(evaluations, evaluator, run_id, was, progress, cancel, on_sample)


def _carry_on(evaluations: EvaluationStore, evaluator: Evaluator, run_id: str, was: str,
              progress: ProgressCallback, cancel: CancelToken | None,
              on_sample: SampleCallback | None) -> dict[str, Any]:
    run = evaluations.run(run_id)
    if run["status"] == "complete" and not evaluations.error_count(run_id):
        return run
    samples = evaluations.samples(run["dataset_id"], run["limit"])
    done = evaluations.finished_ids(run_id)
    if done:
        evaluations.store.audit("bench.run_resumed", {"run": run_id, "was": was,
                                                      "finished": len(done)})
    evaluations.set_status(run_id, "running")
    total = len(samples)
    todo = [(ordinal, sample) for ordinal, sample in enumerate(samples) if sample.id not in done]
    # The run's time is the clock's, span by span across resumes (runs.EvaluationStore.
    # wall_seconds); each saved sample moves this span's end, so a kill loses only the
    # time since the last one.
    span = evaluations.start_span(run_id)
    allowed = evaluator.settings.run_max_error_share * total
    errors = 0  # samples that ended in an error before are in `todo`, tried again

    def keep(ordinal: int, outcome: SampleOutcome) -> None:
        nonlocal errors
        # One transaction per sample, whatever order they finish in: a kill -9 loses at
        # most the samples in flight, which a resume answers again.
        evaluations.save_result(run_id, outcome.sample, ordinal, output=outcome.output,
                                scores=outcome.scores, judge=outcome.judge,
                                trace=outcome.trace, error=outcome.error,
                                seconds=outcome.seconds, model_seconds=outcome.model_seconds)
        evaluations.touch_span(span)
        done.add(outcome.sample.id)
        if on_sample is not None:
            on_sample(outcome, len(done), total)
        errors += bool(outcome.error)
        if errors > allowed:
            raise too_many_errors(evaluations, run_id, errors, total,
                                  evaluator.settings.run_max_error_share)

    # A consultation takes minutes: the bar says which utterance it has reached.
    def on_turn(_sample: str, index: int) -> None:
        evaluations.touch_span(span)
        report(progress, len(done), total, f"Sample {len(done) + 1} of {total}: utterance {index + 1}")

    journal = (TurnJournal(evaluations, run_id, on_turn)
               if is_consultation(run["system"]) else None)
    at_once = parallel_samples(evaluator, run["system"], run["scorers"])
    try:
        if at_once > 1:
            _evaluate_in_parallel(evaluator, run, todo, at_once, keep,
                                  lambda running: report(progress, len(done), total,
                                                         f"Sample {len(done) + 1} of {total} "
                                                         f"({running} at once on the server)"),
                                  cancel)
        for ordinal, sample in todo if at_once <= 1 else ():
            if cancel is not None:
                cancel.raise_if_cancelled()
            report(progress, len(done), total, f"Sample {len(done) + 1} of {total}")
            keep(ordinal, evaluator.evaluate(run["system"], run["scorers"], sample, cancel, journal))
    except (Cancelled, KeyboardInterrupt):
        evaluations.touch_span(span)
        # Paused by the user; a run the window's closing stopped stays "running", which
        # reads as "interrupted" once no process holds it, as a kill does.
        if not (cancel is not None and cancel.reason == "quit"):
            evaluations.set_status(run_id, "paused")
        raise
    except BaseException:
        evaluations.touch_span(span)
        evaluations.set_status(run_id, "failed")
        raise
    evaluations.touch_span(span)
    evaluations.set_status(run_id, "complete")
    report(progress, total, total, "Run complete")
    evaluations.store.audit("bench.run_complete", {"run": run_id, "samples": total})
    return evaluations.run(run_id)
