"""FKGL through textstat with Lumen's syllable table (issue #35): the same counts as
textstat's own NLTK dictionary, word for word and text for text, and a table file that
is written once and rebuilt when damaged."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from desktop_app.core import offline
from desktop_app.core.readability import (SyllableTable, _table_file, flesch_kincaid_grade,
                                          syllable_counts_from_cmudict, syllable_table)

TESTS = Path(__file__).parent


def _texts() -> list[str]:
    """Discharge summaries in every layout the tests hold, and the demo benchmark's
    summaries and answers."""
    from desktop_app.core.pipelines.calibration import demo_benchmark

    texts = [p.read_text(encoding="utf-8") for folder in ("layouts", "summaries")
             for p in sorted((TESTS / "data" / folder).glob("*.txt"))]
    with demo_benchmark().open(encoding="utf-8") as handle:
        for line in handle:
            row = json.loads(line)
            texts += [row["summary"], row["answer"]]
    return texts


@pytest.fixture(scope="module")
def nltk_dictionary(tmp_path_factory):
    """textstat's own dictionary: NLTK's reader over the file offline.prepare_textstat
    writes, as textstat 0.7.13 reads it when left alone."""
    from nltk.corpus.reader import CMUDictCorpusReader

    cache = tmp_path_factory.mktemp("nltk-cache")
    offline.prepare_textstat(cache)
    return CMUDictCorpusReader(str(offline.nltk_data_dir(cache) / "corpora" / "cmudict"),
                               ["cmudict"]).dict()


def test_the_table_holds_each_word_s_first_pronunciation_as_nltk_reads_it(nltk_dictionary):
    counts = syllable_counts_from_cmudict()
    assert counts.keys() == nltk_dictionary.keys()
    differing = [w for w, pronunciations in nltk_dictionary.items()
                 if counts[w] != sum(1 for p in pronunciations[0] if p[-1].isdigit())]
    assert differing == []
    # Words with several pronunciations: the first one counts ("read" twice, one vowel).
    assert counts["abdominal"] == 4 and counts["hypertension"] == 4 and counts["the"] == 1


def test_textstat_counts_the_same_syllables_with_the_table_on_every_test_text(
        tmp_path, nltk_dictionary, monkeypatch):
    import textstat.backend.counts._count_syllables as syllables

    flesch_kincaid_grade("Take one tablet.", tmp_path)  # installs the table
    table = syllables.get_cmudict("en")
    assert isinstance(table, SyllableTable), "textstat no longer asks get_cmudict: see readability.py"
    count = syllables.count_syllables.__wrapped__  # past textstat's cache
    texts = _texts()
    assert len(texts) > 150
    with_table = [count(text, "en") for text in texts]
    monkeypatch.setattr(syllables, "get_cmudict", lambda lang: nltk_dictionary)
    with_nltk = [count(text, "en") for text in texts]
    assert with_table == with_nltk
    assert sum(with_table) > 50_000


def test_the_table_file_is_written_once_and_rebuilt_when_damaged(tmp_path):
    first = syllable_table(tmp_path)
    path = _table_file(tmp_path)
    assert path.is_file() and list(path.parent.iterdir()) == [path]  # no partial file left
    written = path.stat().st_mtime_ns
    assert syllable_table(tmp_path).counts == first.counts
    assert path.stat().st_mtime_ns == written  # read, not written again
    for damage in (b"", b"\x00not marshal", path.read_bytes()[:1000]):
        path.write_bytes(damage)
        assert syllable_table(tmp_path).counts == first.counts
        assert len(path.read_bytes()) > 1000
    with pytest.raises(KeyError):
        first["notaword"]
    assert first["hello"] == [("1", "1")] and len(first) == len(first.counts)


def test_word_grades_from_the_table_are_wordfreq_s_for_every_word(tmp_path):
    """Every word of wordfreq's list, every word of the test texts, and words no list
    holds get the grade wordfreq itself gives (readability.word_grade_table)."""
    import re

    from wordfreq import get_frequency_dict, zipf_frequency

    from desktop_app.core.readability import RARE_WORD_GRADE, WORD_GRADES, word_grade

    def by_wordfreq(word: str) -> int:
        zipf = zipf_frequency(word, "en", wordlist="small")
        return next((grade for least, grade in WORD_GRADES if zipf >= least), RARE_WORD_GRADE)

    words = {w for w in get_frequency_dict("en", wordlist="small") if re.fullmatch("[a-z]+", w)}
    words |= {w.lower() for text in _texts() for w in re.findall(r"[A-Za-z]+", text)}
    words |= {"cellulitis", "sepsis", "zzqx", "history", "normal", "the"}
    differing = [w for w in sorted(words) if word_grade(w, tmp_path) != by_wordfreq(w)]
    assert differing == []
    assert {by_wordfreq(w) for w in words} == {4, 6, 8, 10, 12, RARE_WORD_GRADE}
    # A word that is not plain letters is asked of wordfreq itself.
    assert word_grade("follow-up", tmp_path) == by_wordfreq("follow-up")


def test_hyphenation_patterns_from_the_cache_give_pyphen_s_positions(tmp_path):
    """textstat's fallback for words cmudict lacks: pyphen's patterns read from Lumen's
    cache (readability.load_hyphenation) hyphenate every word as pyphen's own parse does."""
    import re

    import pyphen
    from wordfreq import get_frequency_dict

    from desktop_app.core.readability import load_hyphenation

    path = pyphen.LANGUAGES[pyphen.language_fallback("en")]
    fresh = pyphen.HyphDict(path)
    saved = pyphen.hdcache.pop(path, None)
    try:
        load_hyphenation(tmp_path)  # parses and writes the cache file
        assert list((tmp_path / "readability").glob("hyphenation-*"))
        pyphen.hdcache.pop(path)
        load_hyphenation(tmp_path)  # reads it
        cached = pyphen.hdcache[path]
        assert cached is not fresh and cached.patterns == fresh.patterns
        words = set(get_frequency_dict("en", wordlist="small"))
        words |= {w.lower() for text in _texts() for w in re.findall(r"[A-Za-z]+", text)}
        differing = [w for w in sorted(words) if cached.positions(w) != fresh.positions(w)]
        assert differing == [] and len(words) > 20000
        # A cache file that holds something else is parsed again, not trusted.
        import marshal

        file = next((tmp_path / "readability").glob("hyphenation-*"))
        file.write_bytes(marshal.dumps({"patterns": {}}))
        pyphen.hdcache.pop(path)
        load_hyphenation(tmp_path)
        assert pyphen.hdcache[path].patterns == fresh.patterns
    finally:
        pyphen.hdcache.pop(path, None)
        if saved is not None:
            pyphen.hdcache[path] = saved
