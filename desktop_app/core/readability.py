"""Readability scores through textstat, kept offline.

textstat would download NLTK's cmudict on first use; `offline.prepare_textstat`
serves it locally first, so import textstat only through this module.
"""

from __future__ import annotations

import functools
import threading
from pathlib import Path

from . import offline

_ready_lock = threading.Lock()
_ready_for: Path | None = None


def _textstat(cache_dir: Path):
    global _ready_for
    with _ready_lock:
        if _ready_for is None:
            offline.prepare_textstat(cache_dir)
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


@functools.lru_cache(maxsize=65536)
def word_grade(word: str) -> int:
    """The school grade at which `word` is a familiar word (WORD_GRADES)."""
    from wordfreq import zipf_frequency

    zipf = zipf_frequency(word, "en", wordlist="small")
    return next((grade for least, grade in WORD_GRADES if zipf >= least), RARE_WORD_GRADE)
