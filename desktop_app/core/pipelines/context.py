"""Fitting a discharge summary into a model's context.

When the whole summary fits, it is used whole.  When it does not, the summary is cut
into sections and paragraphs, each piece is embedded, and the pieces most similar to
the question are kept, in their original order, until the budget is used; a marker
shows where text was left out.  The result says what was done, for the trace and the
answer view: nothing is ever cut off silently.
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass, field
from typing import Callable

import numpy as np

GAP_MARKER = "[… parts of the summary less related to the question were left out …]"
_HEADING = re.compile(r"^\s*([A-Z][A-Za-z0-9 /&(),'-]{2,60}):\s*(.*)$")
_ALL_CAPS = re.compile(r"^\s*[A-Z][A-Z0-9 /&(),'-]{3,60}:?\s*$")
_SENTENCE = re.compile(r"(?<=[.!?])\s+")


@dataclass
class FittedDocument:
    text: str
    whole: bool
    document_tokens: int
    budget_tokens: int
    chunks_total: int = 0
    chunks_used: list[int] = field(default_factory=list)

    @property
    def note(self) -> str:
        if self.whole:
            return ""
        return (f"The summary is too long for the model ({self.document_tokens:,} tokens; "
                f"{self.budget_tokens:,} fit), so the {len(self.chunks_used)} of its "
                f"{self.chunks_total} parts most related to the question were used.")

    def to_dict(self) -> dict:
        return {**asdict(self), "note": self.note}


def is_heading(line: str) -> bool:
    match = _HEADING.match(line)
    if match and len(match.group(2)) < 40 and len(match.group(1).split()) <= 6:
        return True
    return bool(_ALL_CAPS.match(line)) and len(line.split()) <= 8


def split_chunks(text: str, max_chars: int = 1200) -> list[str]:
    """Sections and paragraphs of a summary, none longer than about `max_chars`."""
    blocks: list[str] = []
    current: list[str] = []
    for line in text.splitlines():
        if not line.strip() or is_heading(line):
            if current:
                blocks.append("\n".join(current))
                current = []
            if line.strip():
                current.append(line)
            continue
        current.append(line)
    if current:
        blocks.append("\n".join(current))
    chunks: list[str] = []
    for block in blocks:
        if len(block) <= max_chars:
            chunks.append(block)
            continue
        piece = ""
        for sentence in _SENTENCE.split(block):
            if piece and len(piece) + len(sentence) + 1 > max_chars:
                chunks.append(piece)
                piece = ""
            piece = f"{piece} {sentence}".strip()
        if piece:
            chunks.append(piece)
    return [c for c in chunks if c.strip()]


def fit_document(text: str, question: str, *, budget_tokens: int,
                 count_tokens: Callable[[str], int], embed: Callable[[list[str]], np.ndarray]
                 ) -> FittedDocument:
    total = count_tokens(text)
    if total <= budget_tokens:
        return FittedDocument(text, True, total, budget_tokens)
    chunks = split_chunks(text)
    vectors = embed(chunks + [question])
    similarity = vectors[:-1] @ vectors[-1]
    marker_tokens = count_tokens(GAP_MARKER) + 2
    chosen: set[int] = set()
    used = 0
    for index in np.argsort(-similarity):
        cost = count_tokens(chunks[index]) + marker_tokens
        if used + cost <= budget_tokens:
            chosen.add(int(index))
            used += cost
    parts: list[str] = []
    previous = -1
    for index in sorted(chosen):
        if index != previous + 1:
            parts.append(GAP_MARKER)
        parts.append(chunks[index])
        previous = index
    if previous != len(chunks) - 1:
        parts.append(GAP_MARKER)
    return FittedDocument("\n".join(parts), False, total, budget_tokens, len(chunks),
                          sorted(chosen))
