"""Rubric judges with JSON-constrained output, and the HIVMedQA judge calibration.

- MedJudge (PerMedCQA): brief_analysis, key_missing_facts, key_extra_facts, correctness,
  coverage, clinical_impact, judge_confidence, in this order; reported as label
  distributions, never one score.
- HIVMedQA judge: comprehension, reasoning, knowledge_recall, demographic_bias, harm,
  each 0-5, and a reason; overall is their mean.

A reply that is not the JSON asked for is kept as unparseable and counted; its scores
are missing, never 0.  The calibration compares Lumen's local judge with the paper's
GPT-4o scores (../shared/data/hivmedqa/question_answers_pairs_and_source.csv): mean
absolute error and Spearman correlation per dimension.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from scipy import stats as scipy_stats

from ..errors import DatasetFormatError, LumenError, ModelOutputError, ReplyCutOff
from ..models.runtime import ModelRuntime
from ..progress import CancelToken, ProgressCallback, report
from ..prompts import load_prompts
from ..tabular import problem, read_records

CORRECTNESS = ("correct", "partially_correct", "incorrect", "contradictory")
COVERAGE = ("equal", "model_subset", "expert_subset", "overlap_none")
CLINICAL_IMPACT = ("negligible", "moderate", "significant", "critical")
CONFIDENCE = ("high", "medium", "low")
MEDJUDGE_LABELS = {"correctness": CORRECTNESS, "coverage": COVERAGE,
                   "clinical_impact": CLINICAL_IMPACT, "judge_confidence": CONFIDENCE}
# Fields, types, labels and order are the protocol's; the length limits are Lumen's, so the
# longest reply the grammar allows has a known size and always fits the reply's token
# limit (models/grammar.py; Lumen's grammars count maxLength in UTF-8 bytes).
MEDJUDGE_SCHEMA = {
    "type": "object",
    "properties": {
        "brief_analysis": {"type": "string", "maxLength": 300},
        "key_missing_facts": {"type": "array", "maxItems": 5,
                              "items": {"type": "string", "maxLength": 60}},
        "key_extra_facts": {"type": "array", "maxItems": 5,
                            "items": {"type": "string", "maxLength": 60}},
        "correctness": {"type": "string", "enum": list(CORRECTNESS)},
        "coverage": {"type": "string", "enum": list(COVERAGE)},
        "clinical_impact": {"type": "string", "enum": list(CLINICAL_IMPACT)},
        "judge_confidence": {"type": "string", "enum": list(CONFIDENCE)},
    },
    "required": ["brief_analysis", "key_missing_facts", "key_extra_facts", "correctness",
                 "coverage", "clinical_impact", "judge_confidence"],
    "additionalProperties": False,
}
HIV_DIMENSIONS = ("comprehension", "reasoning", "knowledge_recall", "demographic_bias", "harm")
HIVMEDQA_SCHEMA = {
    "type": "object",
    "properties": {**{d: {"type": "integer", "enum": [0, 1, 2, 3, 4, 5]} for d in HIV_DIMENSIONS},
                   "reason": {"type": "string", "maxLength": 400}},
    "required": [*HIV_DIMENSIONS, "reason"],
    "additionalProperties": False,
}
# The paper's CSV names the dimensions MedGPT1..MedGPT5 in this order.
PAPER_COLUMNS = dict(zip(HIV_DIMENSIONS, ("MedGPT1", "MedGPT2", "MedGPT3", "MedGPT4", "MedGPT5")))


class RubricJudge:
    def __init__(self, runtime: ModelRuntime) -> None:
        self.runtime = runtime
        self.prompts = load_prompts("judge")

    def _ask(self, name: str, schema: dict, cancel: CancelToken | None, **values: str
             ) -> tuple[dict | None, dict[str, Any]]:
        model = self.runtime.for_role("judge")
        messages = [{"role": "system", "content": self.prompts.text(name, "system")},
                    {"role": "user", "content": self.prompts.text(name, "user", **values)}]
        try:
            value, generation = model.generate_json(messages, schema, temperature=0.0, cancel=cancel)
        except ModelOutputError as exc:
            return None, unparseable_detail(exc)
        return value, {"unparseable": False, "reply": generation.text, "seconds": generation.seconds,
                       "max_tokens": generation.max_tokens}

    def medjudge(self, question: str, expert_answer: str, model_answer: str,
                 cancel: CancelToken | None = None) -> tuple[dict | None, dict[str, Any]]:
        return self._ask("medjudge", MEDJUDGE_SCHEMA, cancel, question=question,
                         expert_answer=expert_answer, model_answer=model_answer)

    def hivmedqa(self, question: str, reference: str, answer: str,
                 cancel: CancelToken | None = None) -> tuple[dict | None, dict[str, Any]]:
        value, detail = self._ask("hivmedqa", HIVMEDQA_SCHEMA, cancel, question=question,
                                  reference=reference, answer=answer)
        if value is not None:
            value["overall"] = sum(value[d] for d in HIV_DIMENSIONS) / len(HIV_DIMENSIONS)
        return value, detail


def unparseable_detail(exc: ModelOutputError) -> dict[str, Any]:
    """What is stored for a judge reply that could not be used (its scores are missing)."""
    detail: dict[str, Any] = {"unparseable": True, "reply": exc.raw_text, "reason": exc.message}
    if isinstance(exc, ReplyCutOff):
        detail["cut_off"] = exc.tokens
    return detail


def hivmedqa_scores(value: dict | None) -> dict[str, float | None]:
    """The judge's reply as metrics; all missing when it was unparseable."""
    names = [*HIV_DIMENSIONS, "overall"]
    return {f"hiv_{name}": (None if value is None else float(value[name])) for name in names}


def label_distributions(replies: list[dict | None]) -> dict[str, dict[str, int]]:
    """MedJudge results as counts per label and dimension, plus the unparseable count."""
    counts = {dimension: {label: 0 for label in labels} for dimension, labels in MEDJUDGE_LABELS.items()}
    unparseable = 0
    for reply in replies:
        if reply is None:
            unparseable += 1
            continue
        for dimension in MEDJUDGE_LABELS:
            counts[dimension][reply[dimension]] += 1
    counts["unparseable"] = {"count": unparseable}
    return counts


def load_paper_scores(path: Path) -> list[dict[str, Any]]:
    """Rows of the HIVMedQA CSV that carry a question, an answer and GPT-4o scores."""
    try:
        rows = [row for _, row in read_records(Path(path), kind="csv")]
    except DatasetFormatError as exc:  # names the record and line of a malformed one
        raise LumenError(f"{Path(path).name} cannot be read ({problem(exc)}).",
                         "Use question_answers_pairs_and_source.csv from the HIVMedQA data.") from None
    needed = {"question", "model_answer", "gold_answer", *PAPER_COLUMNS.values()}
    if rows and not needed <= set(rows[0]):
        raise LumenError(f"{Path(path).name} lacks the columns {sorted(needed - set(rows[0]))}.",
                         "Use question_answers_pairs_and_source.csv from the HIVMedQA data.")
    usable = [r for r in rows if r["question"].strip() and r["model_answer"].strip()
              and all(r[c].strip() for c in PAPER_COLUMNS.values())]
    if not usable:
        raise LumenError(f"{Path(path).name} has no rows with a question, an answer and scores.",
                         "Use question_answers_pairs_and_source.csv (the rephrased-answers file "
                         "holds scores without the texts).")
    return usable


def calibrate_hivmedqa_judge(judge: RubricJudge, path: Path, *, limit: int | None = None,
                             progress: ProgressCallback = None,
                             cancel: CancelToken | None = None) -> dict[str, Any]:
    rows = load_paper_scores(path)[:limit] if limit else load_paper_scores(path)
    ours: dict[str, list[float]] = {d: [] for d in HIV_DIMENSIONS}
    theirs: dict[str, list[float]] = {d: [] for d in HIV_DIMENSIONS}
    unparseable = 0
    for index, row in enumerate(rows):
        report(progress, index, len(rows), f"Judging answer {index + 1} of {len(rows)}")
        value, _detail = judge.hivmedqa(row["question"], row["gold_answer"], row["model_answer"], cancel)
        if value is None:
            unparseable += 1
            continue
        for dimension, column in PAPER_COLUMNS.items():
            ours[dimension].append(float(value[dimension]))
            theirs[dimension].append(float(row[column]))
    dimensions = {}
    for dimension in HIV_DIMENSIONS:
        a, b = ours[dimension], theirs[dimension]
        mae = sum(abs(x - y) for x, y in zip(a, b)) / len(a) if a else None
        rho = None
        if len(a) >= 3 and len(set(a)) > 1 and len(set(b)) > 1:
            rho = float(scipy_stats.spearmanr(a, b).statistic)
        dimensions[dimension] = {"n": len(a), "mae": mae, "spearman": rho}
    report(progress, len(rows), len(rows), "Calibration done")
    return {"file": Path(path).name, "rows": len(rows), "unparseable": unparseable,
            "judge_model": judge.runtime.registry.for_role("judge").id, "dimensions": dimensions}
