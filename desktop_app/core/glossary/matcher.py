"""Finding glossary terms in a text, in time linear in its length.

Two Aho-Corasick automata (pyahocorasick) scan the text once each: one for terms
and aliases, case-insensitive, over a folded copy of the text of the same length
(lower case; hyphens and line breaks read as spaces, so "X-ray" and "x ray" and a
term broken across lines all match); one for abbreviations, case-sensitive over
the original text, so "PE" matches and "pe" inside "pepper" or "Pe" does not.
Term forms include plurals and simple inflections of their last word.  A match
must start and end at word boundaries.  Overlapping matches are resolved longest
first ("heart failure" beats "failure"); ties go to the leftmost.  A match whose
neighbouring words show a sense its entry does not cover (glossary/senses.toml: "ST"
before "depression") is dropped, and so is one inside a person's name or initials
(names.py: "Dr. K. Osei" names no potassium).
"""

from __future__ import annotations

import functools
import re
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, Sequence

import ahocorasick

from ..config import resource_root
from .entries import GlossaryEntry, GlossaryError
from .names import in_name, name_spans

FOLDED_AS_SPACE = str.maketrans({c: " " for c in "-\u2010\u2011\u2012\u2013\u00ad\t\n\r\f\v\u00a0"})
SOURCE_PRIORITY = {"local": 0, "lumen": 1, "medlineplus": 2}
MIN_WORD_FORM = 3  # shorter case-insensitive forms ("is", "ms") match too much


@dataclass(frozen=True)
class GlossaryMatch:
    start: int
    end: int
    text: str  # as written in the document
    key: str
    term: str
    category: str
    source: str
    form: str  # which name matched: "term", "alias" or "abbreviation"

    def to_dict(self) -> dict:
        return dict(self.__dict__)


def fold(text: str) -> str:
    """Lower case, with hyphens and whitespace as plain spaces; same length as `text`."""
    folded = text.translate(FOLDED_AS_SPACE).lower()
    if len(folded) == len(text):
        return folded
    # A few characters lower-case to two (e.g. 'İ'); keep those as they are.
    return "".join(c if len(c.lower()) != 1 else c.lower() for c in text.translate(FOLDED_AS_SPACE))


def normalise_form(form: str) -> str:
    return re.sub(r" +", " ", fold(form).strip())


def word_variants(word: str) -> set[str]:
    """Plural and simple inflected forms of one (lower-case) word."""
    forms = {word}
    if not word.isalpha() or len(word) < 3:
        return forms
    if word.endswith("is"):
        forms.add(word[:-2] + "es")  # diagnosis -> diagnoses
    if word.endswith("us"):
        forms.add(word[:-2] + "i")  # embolus -> emboli
    if word.endswith("um"):
        forms.add(word[:-2] + "a")  # bacterium -> bacteria
    if word.endswith(("ix", "ex")):
        forms.add(word[:-2] + "ices")  # appendix -> appendices
    if word.endswith("a"):
        forms.add(word + "e")  # vertebra -> vertebrae
    if word.endswith("y") and word[-2] not in "aeiou":
        forms.update({word[:-1] + "ies", word[:-1] + "ied"})
    elif word.endswith(("s", "x", "z", "ch", "sh")):
        forms.add(word + "es")
    else:
        forms.add(word + "s")
    if word.endswith("e"):
        forms.update({word + "d", word[:-1] + "ing"})
    elif not word.endswith("y"):
        forms.update({word + "ed", word + "ing"})
    return forms


@functools.lru_cache(maxsize=32768)
def term_variants(form: str) -> frozenset[str]:
    """The written forms of a glossary name (its last word inflected).  Kept per name:
    the glossary and its matcher both ask for every name's, each time one is built."""
    words = normalise_form(form).split(" ")
    if not words or not words[-1]:
        return frozenset()
    return frozenset(" ".join([*words[:-1], last]) for last in word_variants(words[-1]))


def abbreviation_variants(abbreviation: str) -> set[str]:
    forms = {abbreviation.strip()}
    if abbreviation[-1:].isupper():
        forms.add(abbreviation + "s")  # UTIs, CTs
    return forms


def _is_word_char(char: str) -> bool:
    return char.isalnum()


@dataclass(frozen=True)
class Sense:
    """Words around a term that show a sense its entry does not cover (glossary/senses.toml)."""

    term: str  # normalise_form of the entry's term or of another of its names
    before: tuple[str, ...] = ()  # normalise_form of each
    after: tuple[str, ...] = ()


def other_sense(text: str, start: int, end: int, sense: Sense) -> bool:
    """Whether the words right before or after text[start:end] are among `sense`'s."""
    before = normalise_form(text[max(0, start - 40):start])
    after = normalise_form(text[end:end + 40])
    return (any(before == w or before.endswith(" " + w) for w in sense.before)
            or any(after == w or after.startswith(w + " ") for w in sense.after))


# form -> (the entry's number in the glossary's list, which name matched: "term", "alias"
# or "abbreviation"); plain data, so the glossary can keep it in its cache.
MatcherTable = dict[str, tuple[int, str]]


def matcher_tables(entries: Sequence[GlossaryEntry]) -> tuple[MatcherTable, MatcherTable]:
    """The forms the two automata look for: names matched case-insensitively, and
    abbreviations matched as written."""
    words: dict[str, tuple[tuple, int, str]] = {}
    abbreviations: dict[str, tuple[tuple, int, str]] = {}

    def offer(table, form, number, entry, kind):
        # Local > Lumen > MedlinePlus, so Lumen's plain definitions win over imported
        # summaries; within a source a term beats another entry's alias.
        rank = (SOURCE_PRIORITY.get(entry.source, 9), kind != "term")
        if form not in table or rank < table[form][0]:
            table[form] = (rank, number, kind)
    for number, entry in enumerate(entries):
        # An alias in capitals ("CHF" among MedlinePlus's also-called names) is an
        # abbreviation: matched with its capitals, so "chf" in prose is not taken.
        shouty = [a for a in entry.aliases if a.isupper() and " " not in a.strip()]
        for kind, forms in (("term", (entry.term,)),
                            ("alias", [a for a in entry.aliases if a not in shouty])):
            for form in forms:
                for variant in term_variants(form):
                    if len(variant) >= MIN_WORD_FORM:
                        offer(words, variant, number, entry, kind)
        for abbreviation in (*entry.abbreviations, *shouty):
            for variant in abbreviation_variants(abbreviation):
                if variant:
                    offer(abbreviations, variant, number, entry, "abbreviation")
    return ({form: (number, kind) for form, (_rank, number, kind) in words.items()},
            {form: (number, kind) for form, (_rank, number, kind) in abbreviations.items()})


class JargonMatcher:
    def __init__(self, entries: Iterable[GlossaryEntry], senses: Iterable[Sense] = (),
                 tables: tuple[MatcherTable, MatcherTable] | None = None) -> None:
        """`tables`: matcher_tables(entries), when the caller kept them."""
        entries = list(entries)
        self._senses = {sense.term: sense for sense in senses}
        words, abbreviations = tables if tables is not None else matcher_tables(entries)
        self.word_forms = len(words)
        self.abbreviation_forms = len(abbreviations)
        self._words = self._automaton(words, entries)
        self._abbreviations = self._automaton(abbreviations, entries)

    @staticmethod
    def _automaton(table: MatcherTable, entries: list[GlossaryEntry]):
        automaton = ahocorasick.Automaton()
        for form, (number, kind) in table.items():
            automaton.add_word(form, (len(form), entries[number], kind))
        if len(automaton):
            automaton.make_automaton()
        return automaton

    def _candidates(self, automaton, haystack: str, text: str):
        if not len(automaton):
            return
        size = len(text)
        for last, (length, entry, kind) in automaton.iter(haystack):
            start = last - length + 1
            end = last + 1
            if start > 0 and _is_word_char(text[start - 1]) and _is_word_char(text[start]):
                continue
            if end < size and _is_word_char(text[end]) and _is_word_char(text[end - 1]):
                continue
            yield start, end, entry, kind

    def match(self, text: str) -> list[GlossaryMatch]:
        candidates = list(self._candidates(self._words, fold(text), text))
        candidates += self._candidates(self._abbreviations, text, text)
        # Longest first, then leftmost; the same span found by both automata goes to the
        # higher-priority source (local > Lumen > MedlinePlus).
        candidates.sort(key=lambda c: (c[0] - c[1], c[0], SOURCE_PRIORITY.get(c[2].source, 9)))
        taken = bytearray(len(text))
        chosen = []
        names = name_spans(text) if candidates else []
        for start, end, entry, kind in candidates:
            if taken.find(1, start, end) != -1 or (names and in_name(names, start, end)):
                continue
            written = normalise_form(text[start:end])
            sense = (self._senses.get(normalise_form(entry.term)) or self._senses.get(written)
                     or self._senses.get(written.rstrip("s")))
            if sense is not None and other_sense(text, start, end, sense):
                continue  # the entry's definition would be the wrong sense here
            taken[start:end] = b"\x01" * (end - start)
            chosen.append(GlossaryMatch(start, end, text[start:end], entry.key, entry.term,
                                        entry.category, entry.source, kind))
        chosen.sort(key=lambda m: m.start)
        return chosen


def load_senses(path: Path | None = None) -> list[Sense]:
    """glossary/senses.toml: the senses an entry does not cover, by the words around it."""
    path = path or resource_root() / "glossary" / "senses.toml"
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
        return [Sense(normalise_form(raw["term"]),
                      tuple(normalise_form(w) for w in raw.get("before", ())),
                      tuple(normalise_form(w) for w in raw.get("after", ())))
                for raw in data.get("sense", [])]
    except (OSError, tomllib.TOMLDecodeError, KeyError, TypeError) as exc:
        raise GlossaryError(f"Lumen's glossary senses {path} cannot be read: {exc}.",
                            "Reinstall Lumen; the file ships with it.") from exc
