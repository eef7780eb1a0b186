"""Calibrating the relevance gate's τ for Lumen's embedder.

LAMP-MedQA tuned τ = 0.671 on 20 development items by balanced accuracy, with
all-mpnet-base-v2; our embedder (MiniLM-L6) spreads cosines differently, so τ is tuned
again the same way.  Positives: each development question with its own reference
answer.  Negatives: the same question with the reference answers to the *other*
questions about the same summary, which is exactly the failure the gate exists to
catch: an accurate answer about the wrong part of the document.  The threshold that
maximises balanced accuracy ((sensitivity + specificity) / 2) wins; among equal ones,
the middle of the best range.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np

from ..errors import DatasetFormatError, LumenError
from ..tabular import problem, read_records


@dataclass
class Calibration:
    threshold: float
    balanced_accuracy: float
    sensitivity: float
    specificity: float
    positives: int
    negatives: int
    dataset: str
    split: str

    def to_dict(self) -> dict:
        return asdict(self)


def load_items(path: Path, split: str) -> list[dict]:
    """The benchmark's items in `split` (every item when `split` is empty), one JSON object
    a line, read by tabular.py whatever the file's extension."""
    try:
        rows = [row for _, row in read_records(Path(path), kind="jsonl")]
    except DatasetFormatError as exc:  # names the record and line of a malformed one
        raise LumenError(f"{path} cannot be read as a JSONL benchmark ({problem(exc)}).",
                         "Use a file with summary_id, question and answer on each line.") from None
    items = [r for r in rows if not split or r.get("split") == split]
    if not items:
        raise LumenError(f"{Path(path).name} has no items in the '{split}' split.",
                         "Name another split with --split.")
    return items


def _pair_scores(items: list[dict], embed) -> tuple[np.ndarray, np.ndarray]:
    by_summary: dict[str, list[dict]] = defaultdict(list)
    for item in items:
        by_summary[item["summary_id"]].append(item)
    questions = embed([i["question"] for i in items])
    answers = embed([i["answer"] for i in items])
    index = {id(item): n for n, item in enumerate(items)}
    positive, negative = [], []
    for group in by_summary.values():
        for item in group:
            q = questions[index[id(item)]]
            positive.append(float(answers[index[id(item)]] @ q))
            negative += [float(answers[index[id(other)]] @ q) for other in group if other is not item]
    if not positive or not negative:
        raise LumenError("Calibration needs summaries with two or more questions each.",
                         "Use the demo benchmark's development split.")
    return np.array(positive), np.array(negative)


def rates_at(pos: np.ndarray, neg: np.ndarray, threshold: float) -> dict:
    """How a fixed threshold separates positives (≥ passes) from negatives (< is refused)."""
    sensitivity, specificity = float((pos >= threshold).mean()), float((neg < threshold).mean())
    return {"threshold": threshold, "balanced_accuracy": round((sensitivity + specificity) / 2, 4),
            "sensitivity": round(sensitivity, 4), "specificity": round(specificity, 4),
            "positives": len(pos), "negatives": len(neg)}


def best_threshold(pos: np.ndarray, neg: np.ndarray, *, dataset: str, split: str) -> Calibration:
    """The threshold with the highest balanced accuracy (every midpoint between observed
    scores, and just beyond both ends), the middle one among ties."""
    candidates = np.unique(np.concatenate([pos, neg]))
    thresholds = np.concatenate([[candidates[0] - 1e-6], (candidates[:-1] + candidates[1:]) / 2,
                                 [candidates[-1] + 1e-6]])
    sensitivity = np.array([(pos >= t).mean() for t in thresholds])
    specificity = np.array([(neg < t).mean() for t in thresholds])
    balanced = (sensitivity + specificity) / 2
    best = np.flatnonzero(np.isclose(balanced, balanced.max()))
    chosen = best[len(best) // 2]
    return Calibration(round(float(thresholds[chosen]), 3), round(float(balanced[chosen]), 4),
                       round(float(sensitivity[chosen]), 4), round(float(specificity[chosen]), 4),
                       len(pos), len(neg), dataset, split)


def balanced_accuracy(items: list[dict], embed, threshold: float) -> dict:
    """How a fixed τ separates the pairs of another split (no refitting)."""
    return rates_at(*_pair_scores(items, embed), threshold)


def calibrate_relevance(items: list[dict], embed, *, dataset: str = "", split: str = "") -> Calibration:
    return best_threshold(*_pair_scores(items, embed), dataset=dataset, split=split)


NOT_ANSWERS = ("The patient's question was: {question}", "{question}",
               "I'm unable to provide details about that.",
               "The patient can read this answer at an 8th-grade reading level.")


def evidence_margin_scores(items: list[dict], embed, glossary, evidence_lines: int
                           ) -> tuple[np.ndarray, np.ndarray]:
    """How much closer to the evidence than the question (ask.evidence_margin) each
    reference answer is (positives), and each of four texts that answer nothing: an echo
    with and without a label, a refusal and talk about the reader (negatives)."""
    from .ask import evidence_margin
    from .evidence import find_evidence
    from .question import Question

    positive, negative = [], []
    for item in items:
        evidence = find_evidence(item["summary"], Question.read(item["question"], glossary),
                                 embed=embed, glossary=glossary, count=evidence_lines)
        if not evidence:
            continue
        lines = embed([e.text for e in evidence] + [" ".join(e.text for e in evidence)])
        texts = [item["answer"], item["question"]] + [t.format(question=item["question"])
                                                       for t in NOT_ANSWERS]
        vectors = embed(texts)
        question = vectors[1]
        positive.append(evidence_margin(vectors[0], question, lines))
        negative += [evidence_margin(v, question, lines) for v in vectors[2:]]
    return np.array(positive), np.array(negative)


def evidence_margin_accuracy(items: list[dict], embed, glossary, evidence_lines: int,
                             margin: float) -> dict:
    """How a fixed margin separates the texts of another split (no refitting)."""
    return rates_at(*evidence_margin_scores(items, embed, glossary, evidence_lines), margin)


def calibrate_evidence_margin(items: list[dict], embed, glossary, evidence_lines: int, *,
                              dataset: str = "", split: str = "") -> Calibration:
    """The margin that best separates reference answers from texts that answer nothing,
    by balanced accuracy, as τ is tuned."""
    return best_threshold(*evidence_margin_scores(items, embed, glossary, evidence_lines),
                          dataset=dataset, split=split)


def demo_benchmark() -> Path:
    from ..config import resource_root

    return resource_root() / "resources" / "benchmarks" / "lumen-demo.jsonl"
