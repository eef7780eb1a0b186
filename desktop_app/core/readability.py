"""Readability scores through textstat, kept offline.

textstat would download NLTK's cmudict on first use; `offline.prepare_textstat`
serves it locally first, so import textstat only through this module.
"""

from __future__ import annotations

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


def flesch_kincaid_grade(text: str, cache_dir: Path) -> float:
    """Flesch-Kincaid grade level (FKGL) of English text."""
    return float(_textstat(cache_dir).flesch_kincaid_grade(text))
