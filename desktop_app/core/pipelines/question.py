"""A patient's question, read once: what it asks for, the medicines and glossary terms it
names, and the words retrieval compares.

Ask reads the question into a `Question` before anything else, and retrieval
(evidence.py), the evidence answer and the checks (checks.py) take that value, so
each reading of the question is made once per question, not once per use (issue #34).
What depends on the summary too (the medicines of a kind the question asks about, the
terms of the question and the best line together) is derived where the summary is,
from the value's parts.

The words retrieval compares and the medicine words of a text live here, beside the
question, because the summary's lines are read into the same words: a line and a
question meet on them.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from ..glossary.glossary import Glossary
from ..glossary.matcher import GlossaryMatch
from .answer_rules import QuestionKind, answer_rules, question_kinds
from .summary_facts import medicine_kinds, medicine_names, medicines_of_kinds
from .vocabulary import vocabulary

Medicine = tuple[int, int, str, str]  # (start, end, name as written, key): medicine_names


@dataclass(frozen=True)
class Question:
    text: str
    kinds: tuple[QuestionKind, ...]  # what it asks for (resources/answer_checks.toml)
    terms: tuple[GlossaryMatch, ...]  # the glossary's matches in it
    medicines: tuple[Medicine, ...]  # the medicines it names
    medicine_words: frozenset[str]  # their words and glossary entries (medicine_words)
    # The kinds of medicine it speaks of ("my water pill"; summary_vocabulary.toml
    # [[medicine_kind]]), and those of them it names no medicine of ("why was her
    # bladder pill stopped?"), which an answer must name (checks.py, coverage).
    medicine_kinds: frozenset[str]
    unnamed_medicine_kinds: frozenset[str]
    tokens: tuple[str, ...]  # the words retrieval compares (retrieval_tokens)
    # The questions it asks, when it asks more than one ("How much do I take now, and what
    # do I do if my weight goes up?"): each part is answered by its own best line.
    parts: tuple[str, ...] = ()

    @classmethod
    def read(cls, text: str, glossary: Glossary | None) -> "Question":
        terms = glossary.match(text) if glossary is not None else []
        medicines = medicine_names(text, glossary, matches=terms)
        kinds_named = frozenset(kind.kind for kind in vocabulary().medicine_kinds_in(text))
        unnamed = frozenset()
        if kinds_named and not kinds_named & set().union(
                *(medicine_kinds(name, key, glossary) for *_span, name, key in medicines)):
            unnamed = kinds_named
        return cls(text, tuple(question_kinds(text)), tuple(terms), tuple(medicines),
                   frozenset().union(*(name_words(name, key) for *_span, name, key in medicines)),
                   kinds_named, unnamed, tuple(retrieval_tokens(text, glossary, terms)),
                   question_parts(text))

    def has_kind(self, kind: str) -> bool:
        return kind in self.kind_names

    @property
    def kind_names(self) -> frozenset[str]:
        return frozenset(kind.kind for kind in self.kinds)

    def asked_medicines(self, texts: list[str], glossary: Glossary | None) -> set[str]:
        """The medicine words of what it asks about: the medicines it names, and the
        medicines of `texts` of each kind it speaks of ("the antibiotic" asks about
        amoxicillin)."""
        asked = set(self.medicine_words)
        if not self.medicine_kinds:
            return asked
        for text in texts:
            for *_span, name, key in medicines_of_kinds(set(self.medicine_kinds), text, glossary):
                asked |= name_words(name, key)
        return asked


# Where a second question starts: after "?", or after a comma, "and" or "or" when the words
# that follow ask again ("..., and when can I drive?").
_ASKS_AGAIN = re.compile(
    r"\?\s+(?=\S)|(?:,\s*|;\s*|\s)(?:and|or)\s+(?=(?:what|how|when|why|which|where|who|can|could|"
    r"do|does|did|should|is|are|will|was|were|may|must)\b)", re.IGNORECASE)
PART_WORDS = 3  # the fewest words a part may have: "and why?" asks nothing of its own


def question_parts(text: str) -> tuple[str, ...]:
    """The questions `text` asks when it asks more than one, each as written; () when it
    asks one ("Which pain medicine should I use, and when is the oxycodone for?" is two;
    "Can I eat and drink?" is one)."""
    parts = [p.strip(" ,;") for p in _ASKS_AGAIN.split(text.strip())]
    parts = [p for p in parts if p]
    if len(parts) < 2 or any(len(re.findall(r"[A-Za-z0-9]+", p)) < PART_WORDS for p in parts):
        return ()
    return tuple(parts)


def retrieval_tokens(text: str, glossary: Glossary | None,
                     matches: list[GlossaryMatch] | None = None) -> list[str]:
    """The words retrieval compares: content words, one "§key" per glossary entry named
    (`matches`: the glossary's matches in `text`, when the caller has them), and one word
    per kind of test the text speaks of (resources/summary_vocabulary.toml
    [[procedure_kind]]), whose cue words are left out: no line says "another scope", so
    "scope" would only count against every line."""
    stop = answer_rules().stop_words
    if matches is None:
        matches = glossary.match(text) if glossary is not None else []
    kinds = vocabulary().procedure_kinds_of(text, [m.term for m in matches])
    plain = text
    for kind in kinds:
        for cue in kind.cue.finditer(text):
            plain = plain[:cue.start()] + " " * (cue.end() - cue.start()) + plain[cue.end():]
            # "kidney" of "kidney numbers" is the kind, not the organ
            matches = [m for m in matches if m.end <= cue.start() or m.start >= cue.end()]
    words = [w[:-1] if len(w) > 4 and w.endswith("s") and not w.endswith("ss") else w
             for w in re.findall(r"[a-z0-9]+", plain.lower()) if w not in stop]
    return words + [f"§{m.key}" for m in matches] + [kind.token for kind in kinds]


def medicine_words(text: str, glossary: Glossary | None) -> set[str]:
    """The words of the medicine names in `text` and their glossary entries, so "insulin"
    meets "insulin glargine" and "Bactrim" meets "trimethoprim-sulfamethoxazole"."""
    found = set()
    for *_span, name, key in medicine_names(text, glossary):
        found |= name_words(name, key)
    return found


def name_words(name: str, key: str) -> set[str]:
    return {w for w in re.findall(r"[a-z]{3,}", name.lower())} | {f"§{key}"}
