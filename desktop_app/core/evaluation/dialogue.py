"""3MDBench consultation dialogues (issue #18): the protocol's labels and temperaments
(resources/dialogue.toml) and the scores of a run's consultations.

The cases are imported by `importers._import_dialogue` (format "dialogue") and simulated
by consultation.py.  Final diagnoses are scored as the paper does: F1 per label, averaged
over the labels (macro; the support-weighted mean too), with "none" (no diagnosis, or one
outside the list) counted as a miss and its rate reported on its own; the macro F1's
interval is a percentile bootstrap over the cases.
"""

from __future__ import annotations

import functools
import re
import tomllib
from dataclasses import dataclass
from typing import Any, Iterable

import numpy as np

from ..config import resource_root

NONE = "none"
COMPETENCE = ("unsatisfactory", "satisfactory", "excellent")
# The assessor's items 1.1-3.2 (0/1) and 4.1's levels (Mini-CEX based), named as the report shows them.
ASSESSOR_ITEM_NAMES = {"1.1": "history taking", "1.2": "current symptoms",
                       "1.3": "conclusion explained", "2.1": "respect and empathy",
                       "2.2": "patient's wishes respected", "3.1": "diagnostic plan",
                       "3.2": "treatment plan"}
ASSESSOR_ITEMS = tuple(ASSESSOR_ITEM_NAMES)


@dataclass(frozen=True)
class DialogueProtocol:
    version: str
    labels: dict[str, str]  # label -> category
    temperaments: tuple[str, ...]

    def label_of(self, text: str) -> str | None:
        """The protocol's label for a diagnosis as written (any case, underscores or
        hyphens for spaces), or None when it is not one of them."""
        key = re.sub(r"[\s_-]+", " ", text).strip().casefold()
        return key if key in self.labels else None


@functools.cache
def dialogue_protocol() -> DialogueProtocol:
    data = tomllib.loads((resource_root() / "resources" / "dialogue.toml").read_text("utf-8"))
    return DialogueProtocol(data["version"], dict(data["labels"]), tuple(data["temperaments"]))


def diagnosis_scores(pairs: Iterable[tuple[str, str]]) -> dict[str, Any]:
    """Scores of (true label, predicted label or "none") pairs.

    Per label: precision, recall and F1 (0 where undefined, as scikit-learn's
    zero_division=0); macro F1 is their mean over every label that is a true label or a
    prediction ("none" is never a label: a "none" lowers its case's recall only).  Also
    the share of "none" predictions and plain accuracy."""
    pairs = list(pairs)
    if not pairs:
        return {"cases": 0, "macro_f1": None, "accuracy": None, "none_rate": None,
                "per_label": {}}
    labels = sorted({t for t, _ in pairs} | {p for _, p in pairs if p != NONE})
    per_label = {}
    for label in labels:
        true_positive = sum(1 for t, p in pairs if t == label and p == label)
        predicted = sum(1 for _, p in pairs if p == label)
        actual = sum(1 for t, _ in pairs if t == label)
        precision = true_positive / predicted if predicted else 0.0
        recall = true_positive / actual if actual else 0.0
        f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
        per_label[label] = {"precision": precision, "recall": recall, "f1": f1,
                            "support": actual}
    supported = [row for row in per_label.values() if row["support"]]
    return {"cases": len(pairs),
            "macro_f1": sum(row["f1"] for row in per_label.values()) / len(per_label),
            "weighted_f1": (sum(row["f1"] * row["support"] for row in supported)
                            / sum(row["support"] for row in supported)),
            "accuracy": sum(1 for t, p in pairs if t == p) / len(pairs),
            "none_rate": sum(1 for _, p in pairs if p == NONE) / len(pairs),
            "per_label": per_label}


def macro_f1_interval(pairs: list[tuple[str, str]], resamples: int = 10_000, seed: int = 0,
                      confidence: float = 0.95) -> tuple[float, float]:
    """Percentile bootstrap interval of the macro F1, resampling cases with replacement;
    each resample's macro F1 is taken as diagnosis_scores takes it (over the labels that
    are a true label or a prediction in that resample).  Per label F1 = 2TP / (predicted +
    actual), which equals 2PR / (P + R)."""
    labels = sorted({t for t, _ in pairs} | {p for _, p in pairs if p != NONE})
    index = {label: number for number, label in enumerate(labels)}
    k = len(labels)
    truth = np.array([index[t] for t, _ in pairs])
    predicted = np.array([index.get(p, k) for _, p in pairs])  # "none" is k, never a label
    rng = np.random.default_rng(seed)
    values = np.empty(resamples)
    for draw in range(resamples):
        chosen = rng.integers(0, len(pairs), len(pairs))
        t, p = truth[chosen], predicted[chosen]
        hits = np.bincount(t[t == p], minlength=k + 1)[:k]
        both = np.bincount(t, minlength=k + 1)[:k] + np.bincount(p, minlength=k + 1)[:k]
        present = both > 0
        values[draw] = (2 * hits[present] / both[present]).mean()
    alpha = 1 - confidence
    low, high = np.percentile(values, [100 * alpha / 2, 100 * (1 - alpha / 2)])
    return float(low), float(high)


def consultation_summary(results: list[dict[str, Any]], *, resamples: int,
                         min_samples: int) -> dict[str, Any]:
    """What a report says of a run's consultations beyond the per-case rates: macro and
    weighted F1 (with the macro F1's interval), F1 by category and by temperament, how
    the dialogues ended, their length, and the assessor's competence levels."""
    protocol = dialogue_protocol()
    pairs = [(r["target"], r["output"] or NONE) for r in results]
    scores = diagnosis_scores(pairs)
    interval: dict[str, Any] = {"ci_low": None, "ci_high": None, "no_interval": ""}
    if len(pairs) < max(2, min_samples):
        interval["no_interval"] = (f"too few cases ({len(pairs)}; an interval needs "
                                   f"{max(2, min_samples)})")
    else:
        interval["ci_low"], interval["ci_high"] = macro_f1_interval(pairs, resamples)
    by_category = {}
    for category in dict.fromkeys(protocol.labels.values()):
        # Only the diagnoses the cases have: a category only ever guessed has no case to
        # score, and is left out rather than listed at 0.
        rows = [row for label, row in scores["per_label"].items()
                if protocol.labels.get(label) == category and row["support"]]
        if rows:
            by_category[category] = {"macro_f1": sum(row["f1"] for row in rows) / len(rows),
                                     "cases": sum(row["support"] for row in rows)}
    by_temperament = {}
    for temperament in protocol.temperaments:
        chosen = [pair for pair, r in zip(pairs, results)
                  if r["metadata"].get("personality") == temperament]
        if chosen:
            by_temperament[temperament] = {"cases": len(chosen),
                                           "macro_f1": diagnosis_scores(chosen)["macro_f1"]}
    consultations = [r["trace"]["consultation"] for r in results if "consultation" in r["trace"]]
    lengths = [len(c["turns"]) for c in consultations]
    ended: dict[str, int] = {}
    for c in consultations:
        ended[c["ended_by"]] = ended.get(c["ended_by"], 0) + 1
    marks = [r["judge"].get("assessor", {}).get("marks") for r in results]
    competence = {level: sum(1 for m in marks if m and m["4.1"] == level) for level in COMPETENCE}
    return {"diagnosis": {**scores, "macro_f1_interval": interval},
            "by_category": by_category, "by_temperament": by_temperament,
            "utterances": {"mean": float(np.mean(lengths)) if lengths else None,
                           "sd": float(np.std(lengths, ddof=1)) if len(lengths) > 1 else None,
                           "median": float(np.median(lengths)) if lengths else None},
            "ended_by": ended, "competence": competence,
            "assessed": sum(1 for m in marks if m),
            "failed": len(results) - len(consultations)}
