"""What a question asks for and which words carry meaning: the rules of
resources/answer_checks.toml, read once.  Retrieval (evidence.py) and the checks
(checks.py) both read a question through these, so neither imports the other's module
for them."""

from __future__ import annotations

import functools
import re
import tomllib
from dataclasses import dataclass

from ..config import resource_root
from ..errors import ConfigError


@dataclass(frozen=True)
class QuestionKind:
    kind: str
    cues: tuple[re.Pattern, ...]
    sections: tuple[str, ...]
    facts: tuple[str, ...]


@dataclass(frozen=True)
class AnswerRules:
    version: str
    kinds: tuple[QuestionKind, ...]
    meta_talk: re.Pattern
    refusal: re.Pattern
    repeat_words: int
    repeat_times: int
    repeat_times_dosing: int
    dosing_words: frozenset[str]
    echo_share: float
    least_words: int
    stop_words: frozenset[str]


def _phrase(phrase: str) -> str:
    text = re.escape(phrase.lower().rstrip("*"))
    text = text.replace(r"\ ", r"\s+").replace("'", "['’]")
    return rf"(?<![\w]){text}" + (r"\w*" if phrase.endswith("*") else r"(?![\w])")


def _any_phrase(phrases: list[str]) -> re.Pattern:
    return re.compile("|".join(_phrase(p) for p in sorted(phrases, key=len, reverse=True)),
                      re.IGNORECASE)


@functools.lru_cache(maxsize=1)
def answer_rules() -> AnswerRules:
    path = resource_root() / "resources" / "answer_checks.toml"
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
        bad = data["degenerate"]
        return AnswerRules(
            version=data["version"],
            kinds=tuple(QuestionKind(k["kind"], tuple(re.compile(_phrase(c), re.IGNORECASE)
                                                      for c in k["cues"]),
                                     tuple(k["sections"]), tuple(k["facts"]))
                        for k in data["question_kind"]),
            meta_talk=_any_phrase(bad["meta_talk"]), refusal=_any_phrase(bad["refusal"]),
            repeat_words=int(bad["repeat_words"]), repeat_times=int(bad["repeat_times"]),
            repeat_times_dosing=int(bad["repeat_times_dosing"]),
            dosing_words=frozenset(bad["dosing_words"]),
            echo_share=float(bad["echo_share"]), least_words=int(bad["least_words"]),
            stop_words=frozenset(bad["stop_words"]))
    except (OSError, tomllib.TOMLDecodeError, KeyError, TypeError, ValueError, re.error) as exc:
        raise ConfigError(f"Lumen's answer checks ({path}) cannot be read ({exc}).",
                          "Reinstall Lumen; the file ships with it.") from exc


def question_kinds(question: str) -> list[QuestionKind]:
    """The kinds of thing a question asks for, in the order of the rules file."""
    return [kind for kind in answer_rules().kinds
            if any(cue.search(question) for cue in kind.cues)]


_WORD = re.compile(r"[a-z0-9]+(?:['’][a-z]+)?")


def words(text: str) -> list[str]:
    return _WORD.findall(text.lower())


def content_words(text: str) -> list[str]:
    stop = answer_rules().stop_words
    return [w for w in words(text) if w not in stop]
