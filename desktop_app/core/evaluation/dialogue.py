"""3MDBench consultation dialogues (issue #18): the protocol's labels and temperaments
(resources/dialogue.toml) and the diagnosis scores.

The simulation itself (patient agent, doctor modes, assessor) builds on these; so far
Lumen imports the cases (`importers._import_dialogue`, format "dialogue") and scores a
set of final diagnoses the way the paper does: F1 per label, averaged over the labels
(macro), with "none" (no diagnosis, or one outside the list) counted as a miss and its
rate reported on its own.
"""

from __future__ import annotations

import functools
import re
import tomllib
from dataclasses import dataclass
from typing import Any, Iterable

from ..config import resource_root

NONE = "none"


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
    return {"cases": len(pairs),
            "macro_f1": sum(row["f1"] for row in per_label.values()) / len(per_label),
            "accuracy": sum(1 for t, p in pairs if t == p) / len(pairs),
            "none_rate": sum(1 for _, p in pairs if p == NONE) / len(pairs),
            "per_label": per_label}
