"""The checks every answer passes before Lumen shows it.

A model's text is shown only when it passes all of them; otherwise Lumen shows the
evidence answer (evidence.py), the summary's own lines explained, and keeps the
model's attempts in the trace.  The checks:

- support: every number, unit, timing, date and medicine in the answer is in the
  summary (grounding.py: dates without a year, medicines by name stem, bare numbers);
- coverage: when the question asks how much, how long, when or which, the answer
  carries the dose, duration, date or name the top evidence holds;
- degeneracy: no loop (a phrase said again and again), no echo of the question, no
  talk about the question, the reader or the text instead of an answer, no refusal,
  no empty, too short or cut-off reply;
- relevance: close to the question (LAMP-MedQA's τ), and closer to the evidence than
  the question itself is, which an echo never is;
- readability (simplified answers): FKGL below the limit.

What a question asks and the phrases of a degenerate answer are data:
resources/answer_checks.toml.
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any, Callable

from ..glossary.glossary import Glossary
from .answer_rules import answer_rules, content_words, words
from .grounding import RELATIVE_WHEN, extract_facts, fact_values, unsupported_facts
from .question import Question
from .summary_facts import medicine_names, medicines_of_kinds
from .vocabulary import same_date

if TYPE_CHECKING:
    from .evidence import EvidenceLine


@dataclass(frozen=True)
class Check:
    name: str  # support, coverage, degeneracy, relevance, readability
    passed: bool
    detail: str = ""  # what failed, in words a reviewer model and a user can act on
    score: float | None = None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


# ---- degeneracy ------------------------------------------------------------------------

def repeated_phrase(text: str) -> str:
    """A phrase of `repeat_words` words said `repeat_times` times or more (a phrase of
    dosing words with a number in it or just before it, as each line of a medicine list
    has, such as "mg by mouth every 6" or "81 | mg by mouth daily new",
    `repeat_times_dosing` times), or ''."""
    rules = answer_rules()
    tokens = words(text)
    n = rules.repeat_words
    counts: dict[tuple[str, ...], int] = {}
    for index in range(len(tokens) - n + 1):
        gram = tuple(tokens[index:index + n])
        counts[gram] = counts.get(gram, 0) + 1
        numbers = [word for word in gram if word.replace(".", "").isdigit()]
        # Just after a number, or after a number and its unit ("20 mg | by mouth once a day").
        after_number = (index > 0 and tokens[index - 1].replace(".", "").isdigit()) or (
            index > 1 and tokens[index - 1] in rules.dosing_words
            and tokens[index - 2].replace(".", "").isdigit())
        dosing = (numbers or after_number) and all(word in rules.dosing_words or word in numbers
                                                   for word in gram)
        if counts[gram] >= (rules.repeat_times_dosing if dosing else rules.repeat_times):
            return " ".join(gram)
    # A long sentence said twice is a loop too; short ones ("This is a new medicine.")
    # may rightly come back.
    seen: set[str] = set()
    for sentence in re.split(r"\n|(?<=[.!?])\s+", text):
        said = " ".join(words(sentence))
        if len(said.split()) >= 8 and said in seen:
            return said
        seen.add(said)
    return ""


# Labels and lead-ins a small model puts before its answer; they are cut off, and what
# follows is checked like any answer.
_LABEL = re.compile(r"^\s*(?:(?:the\s+)?(?:answer|plain version|easier version|feedback|"
                    r"improved version|patient'?s? answer)(?:\s+to\s+(?:the|your)\s+"
                    r"(?:patient'?s\s+)?question)?\s*(?:is)?\s*:\s*)+", re.IGNORECASE)
_QUESTION_LINE = re.compile(r"^\s*(?:the\s+)?(?:patient'?s\s+)?question\s*(?:is|was)?\s*:.*(?:\n|$)",
                            re.IGNORECASE)


# The number or bullet of a list line the model copied ("1. Amoxicillin 1 g ...").
_LIST_MARK = re.compile(r"^(?:\d{1,2}[.)]|[-*•])[ \t]+(?=[A-Za-z])")


def clean_reply(text: str) -> str:
    """The model's reply without a repeated question line, a label ("Answer:", "The
    answer to the patient's question is:") or a list line's number, and without stray
    whitespace."""
    text = text.strip()
    while _QUESTION_LINE.match(text) and "\n" in text:
        text = _QUESTION_LINE.sub("", text, count=1).strip()
    return _LIST_MARK.sub("", re.sub(r"[ \t]+", " ", _LABEL.sub("", text)).strip())


# LAMP-MedQA's reviewer and verifier give "1-2 sentences of feedback" (the paper's
# protocol; the prompts ask for one or two).
FEEDBACK_SENTENCES = 2
# The end of a sentence, once the next one has begun ("... dose. The"): a full stop
# followed by a digit ("2.5") or by nothing yet may still be inside a number.
_SENTENCE_BREAK = re.compile(r"[.!?](?=\s+\S)")
# The end of a clause once the next word has begun: what comes before it is whole words
# ("1,000" has no space after its comma).
_CLAUSE_BREAK = re.compile(r"[,;:](?=\s+\S)")


def first_sentences(text: str, count: int = FEEDBACK_SENTENCES) -> str:
    """`text` up to the end of its `count`th sentence (all of it when it has fewer)."""
    breaks = list(_SENTENCE_BREAK.finditer(text))
    return text[:breaks[count - 1].end()].strip() if len(breaks) >= count else text.strip()


def failing_early(summary: str | None = None,
                  glossary: Glossary | None = None) -> Callable[[str], bool]:
    """For streaming: True as soon as the text so far has failed for good, or is done,
    so generation stops there instead of running to the token limit: a loop at any
    point; for a text meant for the patient (`summary` given), talk about the text or a
    refusal at the end of a clause, a fact the summary lacks at the end of a sentence;
    for feedback (no `summary`), its second sentence ended (what follows is cut off by
    `first_sentences`).  The text is judged as `clean_reply` leaves it, so a label such as
    "The answer is:" does not stop it."""
    rules = answer_rules()

    def failed_already(text: str) -> bool:
        if repeated_phrase(text):
            return True
        if summary is None:
            return len(_SENTENCE_BREAK.findall(text)) >= FEEDBACK_SENTENCES
        if _QUESTION_LINE.match(text) and "\n" not in text:
            return False  # a repeated question line, cut off once its line ends
        clause = [m.start() for m in _CLAUSE_BREAK.finditer(text)]
        ended = re.search(r"[.!?\n]\s*$", text)
        said = clean_reply(text if ended else text[:clause[-1] + 1] if clause else "")
        if not said:
            return False
        if rules.meta_talk.search(said) or rules.refusal.search(said):
            return True
        return bool(ended and summary and unsupported_facts(said, summary, glossary))
    return failed_already


_ENDS_A_SENTENCE = re.compile(r"[.!?)\]\"'’”]\s*$")


def degeneracy_problems(text: str, question: str, finish_reason: str = "stop") -> list[str]:
    """What makes `text` no answer to `question` (empty when it is one)."""
    rules = answer_rules()
    stripped = text.strip()
    if not stripped:
        return ["the reply is empty"]
    problems = []
    if finish_reason == "length" or not _ENDS_A_SENTENCE.search(stripped):
        problems.append("the reply is cut off")
    loop = repeated_phrase(stripped)
    if loop:
        problems.append(f"it says '{loop}' again and again")
    if len(words(stripped)) < rules.least_words:
        problems.append("it is too short to be an answer")
    mine, theirs = content_words(stripped), set(content_words(question))
    if mine and theirs and sum(w in theirs for w in mine) / len(mine) >= rules.echo_share:
        problems.append("it repeats the question instead of answering it")
    elif " ".join(words(question)) in " ".join(words(stripped)) and len(words(question)) >= 4:
        problems.append("it repeats the question instead of answering it")
    meta = rules.meta_talk.search(stripped)
    if meta:
        problems.append(f"it talks about the question or the text ('{meta.group(0)}') "
                        "instead of answering")
    refusal = rules.refusal.search(stripped)
    if refusal:
        problems.append(f"it does not answer ('{refusal.group(0)}')")
    return problems


# ---- coverage --------------------------------------------------------------------------


def _relative_number(value: str) -> str:
    match = re.search(r"\d+|one|two|three|four|five|six|seven|eight|nine|ten|twelve|fourteen",
                      value)
    return match.group(0) if match else value


def _has(answer_values: list[tuple[str, str]], wanted: tuple[str, str]) -> bool:
    kind, value = wanted
    for other_kind, other in answer_values:
        if other_kind != kind:
            continue
        if kind == "date" and same_date(value, other):
            return True
        if kind == "relative" and _relative_number(value) == _relative_number(other):
            return True
        if other == value:
            return True
    return False


def coverage_problems(text: str, question: Question, evidence: list["EvidenceLine"],
                      glossary: Glossary | None) -> list[str]:
    """What the question asks for that the top evidence holds and the answer lacks."""
    if not evidence:
        return []
    top = evidence[0].text
    problems = []
    for kind in question.kinds:
        for fact_kind in kind.facts:
            wanted = fact_values(top, fact_kind, glossary)
            if wanted and not any(_has(fact_values(text, fact_kind, glossary), w) for w in wanted):
                shown = ", ".join(dict.fromkeys(_shown(top, fact_kind, glossary)))
                problems.append(f"the question asks {_ASKS.get(kind.kind, kind.kind)} and the "
                                f"summary says {shown}, which the answer leaves out")
    # A question about a kind of medicine ("why was her bladder pill stopped?") is answered
    # only by naming which one, when the evidence names one of that kind.
    kinds = set(question.unnamed_medicine_kinds)
    if kinds:
        wanted = {key: name for line in evidence[:KIND_LINES]
                  for *_span, name, key in medicines_of_kinds(kinds, line.text, glossary)}
        named = {key for *_span, _name, key in medicine_names(text, glossary)}
        if wanted and not named & wanted.keys():
            problems.append(f"the question asks about the {' or '.join(sorted(kinds))} and the "
                            f"summary names {', '.join(dict.fromkeys(wanted.values()))}, which "
                            "the answer leaves out")
    return problems


KIND_LINES = 3  # the evidence lines whose medicines of the kind asked about an answer must name


_ASKS = {"dose": "how much", "duration": "how long", "when": "when", "which": "which medicine"}


def _shown(text: str, fact_kind: str, glossary: Glossary | None) -> list[str]:
    if fact_kind in ("when", "duration"):
        shown = [f.text for f in extract_facts(text, glossary) if f.kind == "date"]
        return shown + [m.group(0) for m in RELATIVE_WHEN.finditer(text)]
    kind = {"quantity": "quantity", "medicine": "medicine"}[fact_kind]
    return [f.text for f in extract_facts(text, glossary) if f.kind == kind]


# ---- support ---------------------------------------------------------------------------


def support_problems(text: str, summary: str, glossary: Glossary | None) -> list[str]:
    return [f.describe() for f in unsupported_facts(text, summary, glossary)]


def check_answer(text: str, *, question: Question, summary: str, evidence: list["EvidenceLine"],
                 glossary: Glossary | None, finish_reason: str = "stop",
                 coverage: bool = True) -> list[Check]:
    """Support, coverage and degeneracy of one reply (relevance and readability need the
    embedder and the grader, which the pipeline holds)."""
    checks = []
    problems = degeneracy_problems(text, question.text, finish_reason)
    checks.append(Check("degeneracy", not problems, "; ".join(problems)))
    problems = support_problems(text, summary, glossary)
    checks.append(Check("support", not problems, "; ".join(problems)))
    if coverage:
        problems = coverage_problems(text, question, evidence, glossary)
        checks.append(Check("coverage", not problems, "; ".join(problems)))
    return checks


def failed(checks: list[Check]) -> list[Check]:
    return [c for c in checks if not c.passed]
