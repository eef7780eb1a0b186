"""The scorers an evaluation run can use, each declared once, in the spirit of inspect_ai's
`@scorer`: its name, one line of help, the metrics it writes (label, direction, scale,
whether the Evaluation tab shows it as a column), what a report says when it did not run,
the kinds of system it goes with by default, and the function that scores one sample.

The command line's `--scorer` choices, the Evaluation tab's boxes and columns, the
runner and the report all read `SCORERS`, so adding a scorer is one decorated function
here (docs/ARCHITECTURE.md shows one).  Importing this module loads nothing heavy
(scipy, numpy, llama.cpp): the score functions, and the metric declarations that live
beside heavy code, are reached only when a run or a report needs them.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Protocol

from ..errors import LumenError
from .systems import ANSWER_KINDS, SYSTEMS, system_kind

if TYPE_CHECKING:
    from ..glossary.glossary import Glossary
    from ..models.runtime import ModelRuntime
    from ..progress import CancelToken
    from .consultation import ConsultationSimulator
    from .dataset import Sample
    from .judges import RubricJudge

MetricDeclarations = dict[str, dict[str, Any]]


class Scoring(Protocol):
    """What scorers may use of the run's evaluator (runner.Evaluator): its models, glossary
    and judges."""

    runtime: "ModelRuntime"
    glossary: "Glossary"
    cache_dir: Path
    rubric: "RubricJudge"
    consultations: "ConsultationSimulator"

    def similarity_judge(self, prediction: str, reference: str,
                         cancel: "CancelToken | None") -> tuple[int | None, dict[str, Any]]: ...


@dataclass
class ScoreContext:
    """One sample being scored: what the scorers read, and what they write."""

    evaluator: Scoring
    sample: "Sample"
    output: str
    trace: dict[str, Any]
    cancel: "CancelToken | None"
    scores: dict[str, float | None] = field(default_factory=dict)
    judge: dict[str, Any] = field(default_factory=dict)  # the judges' replies, by judge
    seconds: float = 0.0  # model time the scorers spent (judges, the assessor)


@dataclass(frozen=True)
class Scorer:
    name: str
    description: str  # one line: `lumen evaluate list`, the tab's tooltip
    score: Callable[[ScoreContext], None]
    declare_metrics: Callable[[], MetricDeclarations]
    # "Not measured: <measures>." in a report of a run without this scorer ("": never said)
    measures: str = ""
    measured_on: tuple[str, ...] = ()  # formats on which its absence is a gap (all: ())
    default_for: tuple[str, ...] = ()  # system kinds that use it unless others are chosen
    needs_reference: bool = True  # a sample with no reference answer is not scored on it
    asks_judge: bool = False  # calls the judge model (decides which servers a run needs)
    # System kinds it scores alone: it goes with no other kind, and they take no other scorer
    only_for: tuple[str, ...] = ()
    # (key, title) of the judge reply it keeps with each result (ScoreContext.judge[key]),
    # shown under the title in the tab's drill-down
    judge: tuple[str, str] = ("", "")

    def metrics(self) -> MetricDeclarations:
        return self.declare_metrics()

    def missing_is_a_gap(self, dataset_format: str) -> bool:
        return bool(self.measures) and (not self.measured_on or dataset_format in self.measured_on)


SCORERS: dict[str, Scorer] = {}


def scorer(name: str, *, description: str, metrics: MetricDeclarations | Callable[[], MetricDeclarations],
           measures: str = "", measured_on: tuple[str, ...] = (),
           default_for: tuple[str, ...] = (), needs_reference: bool = True,
           asks_judge: bool = False, only_for: tuple[str, ...] = (),
           judge: tuple[str, str] = ("", "")) -> Callable[[Callable[[ScoreContext], None]],
                                                  Callable[[ScoreContext], None]]:
    """Register the decorated function as the scorer `name`.  `metrics` is a dict of
    metric name -> {"label", "higher_is_better", "scale", and optionally "rate" (each
    score is 0 or 1, so its interval is Wilson's), "range", "tab"}, or a function giving
    one (for declarations that live beside heavy code).  `only_for` names the kinds of
    system this scorer alone scores (the consultation scorer's, "consultation"); `judge`
    the key and title of the judge reply it keeps with each result."""
    declare = metrics if callable(metrics) else (lambda: metrics)

    def register(function: Callable[[ScoreContext], None]) -> Callable[[ScoreContext], None]:
        if name in SCORERS:
            raise ValueError(f"A scorer named {name!r} is registered already.")
        SCORERS[name] = Scorer(name, description, function, declare, measures, measured_on,
                               default_for, needs_reference, asks_judge, only_for, judge)
        return function

    return register


def scorer_descriptions() -> dict[str, str]:
    return {name: entry.description for name, entry in SCORERS.items()}


def judge_titles() -> dict[str, str]:
    """The title of each judge reply a result may keep, by its key (Scorer.judge)."""
    return {entry.judge[0]: entry.judge[1] for entry in SCORERS.values() if entry.judge[0]}


def default_scorers(chosen_systems) -> list[str]:
    """The scorers a run uses unless others are chosen, for the systems `chosen_systems`,
    in registry order.  The command line and the Evaluation tab both start from these."""
    kinds = {system_kind(system) for system in chosen_systems}
    return [name for name, entry in SCORERS.items() if kinds & set(entry.default_for)]


def _scores_alone(system: str) -> list[str]:
    """The scorers that alone score `system`'s kind (Scorer.only_for); [] for most kinds."""
    kind = system_kind(system)
    return [name for name, entry in SCORERS.items() if kind in entry.only_for]


def scorers_for(system: str, scorers: list[str]) -> list[str]:
    """The scorers of one system when a list was chosen for several (the Evaluation tab's
    boxes): a kind some scorers score alone (a consultation) gets those, any other system
    the rest.  A list that gives a system none of its own is passed on, to be refused."""
    alone = _scores_alone(system)
    if alone:
        return [name for name in alone if name in scorers] or scorers
    others = [name for name in scorers if name not in SCORERS or not SCORERS[name].only_for]
    return others or scorers


def check_scorers_go_with(system: str, scorers: list[str]) -> None:
    """Refuse scorers that do not go with `system`: a scorer that scores other kinds alone
    (Scorer.only_for), or, for a kind some scorers score alone, any list but exactly
    those."""
    kind = system_kind(system)
    alone = _scores_alone(system)
    astray = [name for name in scorers if name in SCORERS and SCORERS[name].only_for
              and kind not in SCORERS[name].only_for]
    if astray or (alone and sorted(scorers) != sorted(alone)):
        name = (astray or alone)[0]
        prefixes = list(dict.fromkeys(prefix for prefix, family in SYSTEMS.items()
                                      if family.kind in SCORERS[name].only_for))
        raise LumenError(f"The '{name}' scorer goes with the {' and '.join(prefixes)} systems, "
                         "and only it.",
                         f"Run {' or '.join(f'{p}:<mode>' for p in prefixes)} with --scorer "
                         f"{name}, and other systems with the other scorers.")


def judge_scorers() -> list[str]:
    return [name for name, entry in SCORERS.items() if entry.asks_judge]


def registered_metrics() -> MetricDeclarations:
    """Every metric of every scorer, in registry order (report.metric_info completes them)."""
    declared: MetricDeclarations = {}
    for entry in SCORERS.values():
        for metric, meta in entry.metrics().items():
            declared[metric] = dict(meta)
    return declared


def result_metrics() -> list[str]:
    """The metrics the Evaluation tab shows as columns of its results table."""
    return [name for name, meta in registered_metrics().items() if meta.get("tab")]


def score_sample(evaluator: Scoring, scorers: list[str], sample: "Sample", output: str,
                 cancel: "CancelToken | None", trace: dict[str, Any]) -> ScoreContext:
    context = ScoreContext(evaluator, sample, output, trace, cancel)
    for name, entry in SCORERS.items():
        if name in scorers and (sample.target or not entry.needs_reference):
            entry.score(context)
    return context


# ---- the scorers, in the order of the tab's columns ---------------------------------------


def _reference_metrics() -> MetricDeclarations:
    from .metrics import METRICS

    return {name: {**meta, "tab": True} for name, meta in METRICS.items()}


@scorer("reference", default_for=ANSWER_KINDS, metrics=_reference_metrics,
        description="SARI, FKGL, SBERT, Token F1, BLEU, ROUGE-L, BERTScore vs the reference",
        measures="similarity to the reference answers (SARI, BLEU, ROUGE-L, SBERT, BERTScore) "
                 "and reading grade")
def reference_scores(context: ScoreContext) -> None:
    from . import metrics

    sample, evaluator = context.sample, context.evaluator
    context.scores.update(metrics.score_all(context.output, sample.target,
                                            sample.context or sample.input,
                                            embedder=evaluator.runtime.embedder(),
                                            cache_dir=evaluator.cache_dir))


@scorer("similarity-judge", default_for=ANSWER_KINDS, asks_judge=True,
        judge=("similarity", "Similarity to the reference answer (a model judge, 1 to 5)"),
        metrics={"judge_similarity": {"label": "LLM judge (1-5)", "higher_is_better": True,
                                      "scale": "1-5", "tab": True}},
        description="LLM judge of semantic similarity, 1-5 (LAMP-MedQA)",
        measures="the LLM judge's similarity to the reference (1-5)")
def similarity_judge(context: ScoreContext) -> None:
    if context.output.strip():
        value, detail = context.evaluator.similarity_judge(context.output, context.sample.target,
                                                           context.cancel)
        context.judge["similarity"] = detail
        context.seconds += float(detail.get("seconds", 0.0))
    else:
        value = 1  # a blank answer is the worst case, as in LAMP-MedQA
        context.judge["similarity"] = {"unparseable": False, "reply": "",
                                       "reason": "blank prediction"}
    context.scores["judge_similarity"] = value


@scorer("diagnosis-accuracy", default_for=("diagnosis",),
        metrics={"diagnosis_accuracy": {"label": "Diagnosis accuracy", "higher_is_better": True,
                                        "scale": "0-1", "rate": True, "tab": True}},
        description="DoctorRAG diagnosis mode: 1 when the label picked is the case's")
def diagnosis_accuracy(context: ScoreContext) -> None:
    # Only labelled case sets have a diagnosis to match; free answers are never exact.
    sample = context.sample
    if sample.metadata.get("labels"):
        context.scores["diagnosis_accuracy"] = float(
            context.output.strip().casefold() == sample.target.strip().casefold())


@scorer("key-facts", default_for=ANSWER_KINDS, needs_reference=False,
        metrics={"key_fact_recall": {"label": "Key-fact recall", "higher_is_better": True,
                                     "scale": "0-1", "tab": True},
                 "unsupported_facts": {"label": "Unsupported facts per answer",
                                       "higher_is_better": False, "scale": "count", "tab": True},
                 "degenerate": {"label": "Degenerate answers", "higher_is_better": False,
                                "scale": "0-1", "rate": True, "tab": True},
                 "model_answer": {"label": "Shown answer is the model's",
                                  "higher_is_better": True, "scale": "0-1", "rate": True,
                                  "tab": True}},
        description="share of the reference's doses, timings, dates and medicines in the "
                    "answer; facts the document lacks; degenerate text; model or evidence",
        measures="key facts of the reference kept in the answer, and facts the document lacks")
def key_facts(context: ScoreContext) -> None:
    context.scores.update(key_fact_scores(context.output, context.sample,
                                          context.evaluator.glossary,
                                          str(context.trace.get("answer_source", ""))))


def key_fact_scores(output: str, sample: "Sample", glossary: "Glossary",
                    source: str) -> dict[str, float | None]:
    """Lumen's key-facts scorer (issue #13): which of the reference's doses, timings, dates
    and medicines the answer holds (by the parser of summary_facts.py and grounding.py),
    how many facts of the answer the document lacks, whether the answer is degenerate
    text (checks.py), and whether it is a model's text or the evidence answer."""
    from ..pipelines.checks import degeneracy_problems
    from ..pipelines.grounding import key_fact_recall, unsupported_facts

    scores: dict[str, float | None] = {}
    if sample.target:
        present, wanted = key_fact_recall(sample.target, output, glossary)
        scores["key_fact_recall"] = present / wanted if wanted else None
    document = sample.context or ""
    if document:  # with no document (an open question) there is nothing to be unsupported by
        scores["unsupported_facts"] = float(len(unsupported_facts(output, document, glossary)))
    scores["degenerate"] = float(bool(degeneracy_problems(output, sample.input)))
    if source:
        scores["model_answer"] = float(source == "model")
    return scores


def assessor_metric(item: str) -> str:
    """The score name of an assessor item: "1.1" -> "assessor_1_1"."""
    return "assessor_" + item.replace(".", "_")


def _consultation_metrics() -> MetricDeclarations:
    from .dialogue import ASSESSOR_ITEM_NAMES

    declared: MetricDeclarations = {
        "diagnosis_correct": {"label": "Consultation diagnosis right", "higher_is_better": True,
                              "scale": "0-1", "rate": True, "tab": True},
        "dialogue_utterances": {"label": "Utterances per consultation",
                                "higher_is_better": False, "scale": "count", "tab": True},
        "ended_by_break": {"label": "Ended by the patient (BREAK)", "higher_is_better": True,
                           "scale": "0-1", "rate": True, "tab": True}}
    for item, name in ASSESSOR_ITEM_NAMES.items():
        declared[assessor_metric(item)] = {"label": f"Assessor {item} {name}",
                                           "higher_is_better": True, "scale": "0-1", "rate": True}
    declared["assessor_4_1"] = {"label": "Assessor 4.1 competence (0-2)",
                                "higher_is_better": True, "scale": "0-2", "tab": True}
    return declared


@scorer("consultation", default_for=("consultation",), only_for=("consultation",),
        judge=("assessor", "Consultation assessor (3MDBench)"),
        metrics=_consultation_metrics,
        description="3MDBench consultations: diagnosis right or not (macro F1 in the report), "
                    "utterances, ended by BREAK, assessor items 1.1-4.1")
def consultation_scores(context: ScoreContext) -> None:
    """3MDBench's per-case scores; a consultation that failed scores a wrong diagnosis
    and nothing else.  An unreadable assessor reply leaves its items missing, never 0."""
    from .consultation import ASSESSOR_ITEMS, COMPETENCE, Consultation

    scores, trace = context.scores, context.trace
    scores["diagnosis_correct"] = float(context.output == context.sample.target)
    if "consultation" not in trace:
        return
    consultation = Consultation.from_dict(trace["consultation"])
    scores["dialogue_utterances"] = float(len(consultation.turns))
    scores["ended_by_break"] = float(consultation.ended_by == "break")
    started = time.perf_counter()
    marks = context.evaluator.consultations.assess(consultation, context.sample.target,
                                                   context.cancel)
    seconds = time.perf_counter() - started
    context.judge["assessor"] = {"unparseable": marks is None, "marks": marks,
                                 "seconds": round(seconds, 3)}
    for item in ASSESSOR_ITEMS:
        scores[assessor_metric(item)] = None if marks is None else float(marks[item])
    scores["assessor_4_1"] = None if marks is None else float(COMPETENCE.index(marks["4.1"]))
    context.seconds += seconds


@scorer("medjudge", asks_judge=True, metrics={},
        judge=("medjudge", "Clinical correctness and impact (MedJudge)"),
        description="MedJudge rubric (PerMedCQA): correctness, coverage, clinical impact labels",
        measures="clinical correctness and impact of each answer (MedJudge)")
def medjudge(context: ScoreContext) -> None:
    # Its labels are counted per run (the report's label tables), not averaged per sample.
    if context.output.strip():
        labels, detail = context.evaluator.rubric.medjudge(
            context.sample.input, context.sample.target, context.output, context.cancel)
        context.judge["medjudge"] = {**detail, "labels": labels}
        context.seconds += float(detail.get("seconds", 0.0))
    else:
        context.judge["medjudge"] = {"unparseable": False, "blank": True, "labels": None}


def _hivmedqa_metrics() -> MetricDeclarations:
    from .judges import HIV_DIMENSIONS

    return {f"hiv_{dimension}": {"label": f"HIVMedQA {dimension.replace('_', ' ')} (0-5)",
                                 "higher_is_better": True, "scale": "0-5"}
            for dimension in (*HIV_DIMENSIONS, "overall")}


# The HIVMedQA judge's rubric is for HIV questions: not running it elsewhere is no gap.
@scorer("hivmedqa-judge", asks_judge=True, metrics=_hivmedqa_metrics, measured_on=("hivmedqa",),
        judge=("hivmedqa", "HIVMedQA judge (0 to 5 on each dimension)"),
        description="HIVMedQA judge: five dimensions 0-5 and their mean",
        measures="the HIVMedQA judge's five dimensions")
def hivmedqa_judge(context: ScoreContext) -> None:
    from .judges import HIV_DIMENSIONS, hivmedqa_scores

    if context.output.strip():
        value, detail = context.evaluator.rubric.hivmedqa(
            context.sample.input, context.sample.target, context.output, context.cancel)
        context.judge["hivmedqa"] = {**detail, "scores": value}
        context.seconds += float(detail.get("seconds", 0.0))
    else:  # no answer at all scores 0 on every dimension, as in the HIVMedQA paper
        value = {**{d: 0 for d in HIV_DIMENSIONS}, "overall": 0.0}
        context.judge["hivmedqa"] = {"unparseable": False, "blank": True, "scores": value}
    context.scores.update(hivmedqa_scores(value))
