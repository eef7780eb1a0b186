"""The glossary as one object: merged entries, the jargon matcher, and lookup.

Lookup tries, in order: the exact term, another name or abbreviation, a fuzzy
match of the spelling (rapidfuzz), and, for words the glossary does not know, the
nearest entries by meaning through the embedder.
"""

from __future__ import annotations

import functools
import hashlib
import logging
import re
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from ..config import Settings
from ..derived_cache import PYTHON_TAG, cache_file, code_fingerprint, load_or_build
from ..store import Store
from .entries import GlossaryEntry, load_builtin, load_imported, load_local, merge
from .matcher import (FOLDED_AS_SPACE, MIN_WORD_FORM, SOURCE_PRIORITY, GlossaryMatch,
                      JargonMatcher, abbreviation_variants, fold, load_senses, matcher_tables,
                      normalise_form, term_variants, word_variants)

if TYPE_CHECKING:
    import numpy as np

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class LookupResult:
    entry: GlossaryEntry
    how: str  # "exact", "synonym", "fuzzy", "semantic"
    score: float  # 100 for exact and synonym; rapidfuzz score; cosine × 100

    def to_dict(self) -> dict:
        return {"how": self.how, "score": round(self.score, 1), **self.entry.to_dict()}


class Glossary:
    def __init__(self, entries: list[GlossaryEntry], *, plain_grade: int = 8,
                 cache_dir: Path | None = None) -> None:
        self.entries = entries
        # Words familiar at or below this school grade are plain English: not highlighted
        # or explained (Settings.glossary_plain_grade).
        self.plain_grade = plain_grade
        self.cache_dir = cache_dir  # where the word-grade table is kept (readability)
        self.by_key = {entry.key: entry for entry in entries}
        self._matcher: JargonMatcher | None = None
        self._tables = derived_tables(entries, cache_dir)
        self._vectors: np.ndarray | None = None

    # The name tables are for lookup and search; reading a summary needs only the matcher.
    @functools.cached_property
    def _terms(self) -> dict[str, list[GlossaryEntry]]:
        return {form: [self.entries[n] for n in numbers]
                for form, numbers in self._tables["terms"].items()}

    @functools.cached_property
    def _synonyms(self) -> dict[str, list[GlossaryEntry]]:
        return {form: [self.entries[n] for n in numbers]
                for form, numbers in self._tables["synonyms"].items()}

    @functools.cached_property
    def _forms(self) -> list[str]:
        return sorted(set(self._tables["terms"]) | set(self._tables["synonyms"]))

    @functools.cached_property
    def _fuzzy_forms(self) -> list[str]:
        # Misspellings are compared with whole names of some length; short forms ("ue",
        # "bid") would otherwise look close to anything.
        return [form for form in self._forms if len(form) >= 4]

    @property
    def matcher(self) -> JargonMatcher:
        if self._matcher is None:
            self._matcher = JargonMatcher(self.entries, load_senses(),
                                          (self._tables["words"], self._tables["abbreviations"]))
        return self._matcher

    def match(self, text: str) -> list[GlossaryMatch]:
        return self.matcher.match(text)

    def is_hard(self, name: str, form: str = "term", category: str = "",
                everyday: bool = False) -> bool:
        """Whether a glossary name, as written, is above the reader's grade. Shorthand is;
        a name of an `everyday` entry written out is not ("vomiting", "chest pain");
        so is a name of several words (a term of art: "heart failure"), unless it is the
        written-out form of shorthand in plain words ("history of"); one word is when
        everyday English uses it too rarely for `plain_grade` (readability.word_grade), so
        "normal", "stable" and "history" are not jargon and "cellulitis" is."""
        from ..readability import word_grade

        words = [w.lower() for w in re.findall(r"[A-Za-z]+", name)]
        if category == "unit":  # "litres", "mg": a dose's unit is read as written
            return False
        if form == "abbreviation" or not words:
            return True
        if everyday:
            return False
        plain = all(word_grade(w, self.cache_dir) <= self.plain_grade for w in words)
        if len(words) > 1:
            return not (plain and category in ("care", "abbreviation"))
        return not plain

    def jargon(self, text: str) -> list[GlossaryMatch]:
        """The matches a reader may need explained: those above the reader's grade."""
        return [m for m in self.match(text) if self.is_hard(
            m.text, m.form, m.category, self.by_key[m.key].everyday)]

    def terms_to_explain(self, text: str, limit: int = 15) -> list[tuple[GlossaryMatch, GlossaryEntry]]:
        """The glossary terms in `text` worth a plain definition, each once, in order.

        A match through an alias of a care or shorthand entry ("every day" for "once a
        day") is plain language already and needs none, and so is a word familiar at the
        reader's grade (`is_hard`)."""
        chosen: list[tuple[GlossaryMatch, GlossaryEntry]] = []
        seen: set[str] = set()
        for match in self.jargon(text):
            entry = self.by_key[match.key]
            if match.key in seen or (match.form == "alias"
                                     and entry.category in ("care", "abbreviation")):
                continue
            seen.add(match.key)
            chosen.append((match, entry))
            if len(chosen) >= limit:
                break
        return chosen

    def counts(self) -> dict[str, int]:
        counts: dict[str, int] = {}
        for entry in self.entries:
            counts[entry.source] = counts.get(entry.source, 0) + 1
        return counts

    # ---- search as you type ----

    def search(self, text: str, limit: int = 60) -> list[GlossaryEntry]:
        """Entries whose name starts with, then contains, what was typed; then fuzzy ones."""
        typed = normalise_form(text)
        if not typed:
            return sorted(self.entries, key=lambda e: e.term.lower())[:limit]
        ranked: dict[str, tuple[int, GlossaryEntry]] = {}
        for form in self._forms:
            if typed in form:
                rank = 0 if form == typed else 1 if form.startswith(typed) else 2
                for entry in self._terms.get(form, []) + self._synonyms.get(form, []):
                    if entry.key not in ranked or rank < ranked[entry.key][0]:
                        ranked[entry.key] = (rank, entry)
        if len(ranked) < limit and len(typed) >= 4:
            from rapidfuzz import fuzz, process

            for form, _score, _ in process.extract(typed, self._fuzzy_forms, scorer=fuzz.ratio,
                                                   score_cutoff=80, limit=limit):
                for entry in self._terms.get(form, []) + self._synonyms.get(form, []):
                    ranked.setdefault(entry.key, (3, entry))
        return [entry for _rank, entry in sorted(
            ranked.values(), key=lambda item: (item[0], SOURCE_PRIORITY.get(item[1].source, 9),
                                               item[1].term.lower()))][:limit]

    # ---- lookup ----

    def lookup(self, query: str, *, settings: Settings | None = None, embedder=None,
               cache_dir: Path | None = None, limit: int = 5) -> list[LookupResult]:
        """`embedder` is the embedder, or a function that gives it: then it is loaded only
        when no name matches and the search by meaning runs."""
        settings = settings or Settings()
        form = normalise_form(query)
        if not form:
            return []
        results = [LookupResult(e, "exact", 100.0) for e in _ranked(self._terms.get(form, []))]
        seen = {r.entry.key for r in results}
        results += [LookupResult(e, "synonym", 100.0) for e in _ranked(self._synonyms.get(form, []))
                    if e.key not in seen]
        if results:
            return results[:limit]
        from rapidfuzz import fuzz, process

        for candidate, score, _ in process.extract(form, self._fuzzy_forms, scorer=fuzz.ratio,
                                                   score_cutoff=settings.glossary_fuzzy_cutoff,
                                                   limit=limit * 2):
            for entry in _ranked(self._terms.get(candidate, []) + self._synonyms.get(candidate, [])):
                if entry.key not in seen:
                    seen.add(entry.key)
                    results.append(LookupResult(entry, "fuzzy", float(score)))
        if results or embedder is None:
            return results[:limit]
        import numpy as np  # only here: reading a summary's terms needs none of it

        if callable(embedder) and not hasattr(embedder, "embed_one"):
            embedder = embedder()
        vectors = self.entry_vectors(embedder, cache_dir)
        similarity = vectors @ embedder.embed_one(query)
        for index in np.argsort(-similarity)[:limit]:
            if similarity[index] >= settings.glossary_semantic_min:
                results.append(LookupResult(self.entries[index], "semantic",
                                            float(similarity[index]) * 100))
        return results

    def entry_vectors(self, embedder, cache_dir: Path | None = None) -> np.ndarray:
        """One vector per entry ("term: definition"), cached on disk by content."""
        import numpy as np

        if self._vectors is not None:
            return self._vectors
        texts = [f"{e.term}: {e.definition}" for e in self.entries]
        digest = hashlib.sha256("\n".join(texts).encode() + str(embedder.model_path).encode()).hexdigest()[:20]
        cache = Path(cache_dir) / f"glossary-vectors-{digest}.npy" if cache_dir else None
        if cache is not None and cache.exists():
            self._vectors = np.load(cache)
        else:
            self._vectors = embedder.embed(texts)
            if cache is not None:
                cache.parent.mkdir(parents=True, exist_ok=True)
                np.save(cache, self._vectors)
        return self._vectors


def name_tables(entries: list[GlossaryEntry]) -> tuple[dict[str, list[int]], dict[str, list[int]]]:
    """Each written form of an entry's term, and of its other names, -> the numbers of the
    entries it names (lookup and search as you type)."""
    terms: dict[str, list[int]] = {}
    synonyms: dict[str, list[int]] = {}
    for number, entry in enumerate(entries):
        for variant in term_variants(entry.term):
            terms.setdefault(variant, []).append(number)
        for other in (*entry.aliases, *entry.abbreviations):
            for variant in term_variants(other) | {normalise_form(other)}:
                synonyms.setdefault(variant, []).append(number)
    return terms, synonyms


def _built_tables(entries: list[GlossaryEntry]) -> dict[str, dict]:
    terms, synonyms = name_tables(entries)
    words, abbreviations = matcher_tables(entries)
    return {"terms": terms, "synonyms": synonyms, "words": words, "abbreviations": abbreviations}


_TABLE_CODE = (name_tables, matcher_tables, _built_tables, term_variants, abbreviation_variants,
               normalise_form, fold, word_variants)
_TABLE_DATA = repr((SOURCE_PRIORITY, MIN_WORD_FORM, sorted(FOLDED_AS_SPACE.items())))


def derived_tables(entries: list[GlossaryEntry], cache_dir: Path | None) -> dict[str, dict]:
    """The name tables and the matcher's, which take a cold command longer to build than
    to read: kept in the profile's cache under a digest of the entries' names and of the
    code that builds them.  A table made for another glossary is removed when its
    successor is written (a staff entry added makes a new one)."""
    if cache_dir is None:
        return _built_tables(entries)
    digest = hashlib.sha256(code_fingerprint(*_TABLE_CODE).encode() + _TABLE_DATA.encode())
    for entry in entries:
        digest.update("\x1e".join((entry.source, entry.term, "\x1f".join(entry.aliases),
                                   "\x1f".join(entry.abbreviations), "\x1d")).encode())
    path = cache_file(cache_dir, "glossary", f"tables-{digest.hexdigest()[:20]}")

    def build() -> dict[str, dict]:
        for stale in path.parent.glob(f"tables-*-{PYTHON_TAG}.marshal"):
            if stale != path:
                stale.unlink(missing_ok=True)
        return _built_tables(entries)
    return load_or_build(path, build, lambda held: isinstance(held, dict) and set(held) == {
        "terms", "synonyms", "words", "abbreviations"})


def _ranked(entries: list[GlossaryEntry]) -> list[GlossaryEntry]:
    return sorted(entries, key=lambda e: SOURCE_PRIORITY.get(e.source, 9))


def load_glossary(store: Store | None, settings: Settings | None = None,
                  cache_dir: Path | None = None) -> Glossary:
    """Lumen's glossary, plus imported topics and staff entries when the store is open;
    `cache_dir` keeps the parsed glossary file and the word-grade table for the next
    process."""
    settings = settings or Settings()
    builtin = load_builtin(cache_dir=cache_dir)
    if store is None:
        return Glossary(builtin, plain_grade=settings.glossary_plain_grade, cache_dir=cache_dir)
    return Glossary(merge(builtin, load_imported(store, settings.glossary_language), load_local(store)),
                    plain_grade=settings.glossary_plain_grade, cache_dir=cache_dir)
