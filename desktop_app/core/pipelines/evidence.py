"""Evidence: the lines of a discharge summary that answer a question, and the answer
Lumen can give from them without a model.

The summary is cut into units, each a line of a list or a sentence of running text,
inside the sections summary_facts.py finds.  Each unit is scored three ways:

- lexical: BM25 (rank_bm25) over words and the glossary entries a text names, so
  "shortness of breath" meets "SOB" and a brand name meets its generic name;
- by meaning: cosine between the unit (with its section's title) and the question,
  from Lumen's embedder;
- by place: units in the sections a kind of question is answered from (medicines for
  "how much", follow-up for "when", ...; resources/answer_checks.toml), units of a
  section the question names by its heading ("What follow-up do I have?") and units
  that name a medicine the question names get a bonus.

The top units, with their character offsets, are the evidence; a question that asks two
things ("How much do I take now, and what do I do if my weight goes up?") has the best
unit for each part among them (Question.parts), scored against the part and the whole
question together.  Three kinds of line join
them because a patient needs them next to the answer, even when they score low against
the question's words: the medication-list line of a medicine the question or an answer
line names (its dose and timing: "replaced with lisinopril" -> "Lisinopril 5 mg by mouth
once daily (NEW)"); for a "why" question, the sentence just before the best line in its
paragraph, where a reason is most often written ("K 5.3 on admission. Spironolactone was
held."); and the follow-up line that names a medicine, test or condition of the question
or the best line (when it is checked again).  They are marked `related`.
The evidence is quoted in the Ask tab and highlighted in the summary; the ranked lines
(not the related ones: a short prompt is most of the model's speed) are given to the
model in place of the whole summary; and, when no model answer passes the checks
(checks.py), the lines that answer (at most Settings.answer_lines) and the related lines
are rendered into plain sentences as the evidence answer: abbreviations written out, medical words glossed
from the glossary, a medication line turned into "Take ... by mouth twice a day".
Nothing of a line is lost in that rendering: a rendering that drops a fact of its
line is replaced by the line itself, explained.
"""

from __future__ import annotations

import functools
import re
from dataclasses import asdict, dataclass
from typing import Any, Callable

import numpy as np

from ..config import Settings
from ..glossary.glossary import Glossary
from ..glossary.names import ends_no_sentence
from .answer_rules import content_words
from .grounding import fact_values, record_shorthand, unsupported_facts
from .plain import Reader, lay_words, lexicon, lost_facts, shorter_sentences, sides_written_out
from .question import Question, medicine_words, name_words, retrieval_tokens
from .safety import reads_like_instruction
from .summary_facts import (NAMES_A_DEVICE, how_taken, line_indent, RELEASE_FORMS, Medication, SummaryFacts, medicine_kinds, medicine_names,
                            patient_text, read_summary, reads_as_warning, same_day_dose, section_items)
from .vocabulary import DATE, SALT_WORD, date_order_of, plain_date, vocabulary

# How the three scores are weighed, and how close to the best a line must score to be
# part of the evidence answer.
LEXICAL_WEIGHT = 0.3
MEANING_WEIGHT = 0.7
SECTION_BONUS = 0.25
MEDICINE_BONUS = 0.25
# A line that names an asked medicine only after another, which it is about, gets less.
MENTION_BONUS = 0.125
# What happened before the stay (complaint, history) and record fields rarely answer
# what a patient asks about going home.
PAST_SECTIONS = ("history", "header")
PAST_PENALTY = 0.15
ANSWER_SHARE_OF_BEST = 0.6
# Below this best score no line answers the question; the closest are still listed.
EVIDENCE_FLOOR = 0.25
NO_EVIDENCE = ("Lumen found no line in your summary that answers what you asked. The closest "
               "lines are listed below; please ask your care team.")
# Said after a medication line quoted whole because it cannot be read without doubt.
UNCERTAIN_LINE = ("Lumen cannot tell for certain what this line asks of each medicine it names; "
                  "please check with your care team.")
ANSWER_LINES = Settings.answer_lines  # the setting's default, for callers without settings
# Lines added for what the question or the best line names (see the module's docstring).
RELATED_MEDICINES = 2
RELATED_FOLLOW_UPS = 1
# How the Ask tab and `lumen ask` say why a related line is listed.
RELATED_LABELS = {"medicine": "this medicine in the discharge list",
                  "follow-up": "the follow-up for it",
                  "reason": "the sentence before it, often the reason",
                  "next-visit": "your first planned visit",
                  "instead": "a new medicine of the same kind",
                  "step": "another step of the same plan"}
GLOSSES_PER_ANSWER = 1
# Related lines said in the answer itself; the others are listed under the evidence only.
IN_THE_ANSWER = ("medicine", "instead", "reason", "next-visit", "follow-up", "step")
# A follow-up that shares a word with the question is said in the answer only when the
# question asks when, for how long or what to watch for; otherwise it is one click away,
# under the evidence, and the answer stays short (docs/BENCHMARKS.md, "Answers first").
FOLLOW_UP_KINDS = ("when", "duration", "warning")
# Questions of how much and how long, whose answer is a dose, a date or a span.
AMOUNT_KINDS = frozenset({"dose", "duration"})
# Sections that say what to do, which answer before the stay's story does.
TO_DO_SECTIONS = ("medications", "instructions", "warning_signs", "follow_up", "restrictions")
GLOSS_WORDS = 14  # longest gloss
# A definition's sentence for a medicine's other use at low doses ("In low doses it keeps
# platelets from clumping, ..."), and the most a dose in mg may be to be read as one: low-dose
# aspirin is 75-150 mg, its doses for pain 300 mg and more.
_LOW_DOSE_SENSE = re.compile(r"(?<=[.!?]\s)In low doses[^.!?]*[.!?]")
LOW_DOSE_MG = 150


def _low_dose(dose: str) -> bool:
    written = re.fullmatch(r"(\d+(?:\.\d+)?)\s*mg", dose.strip())
    return written is not None and float(written.group(1)) <= LOW_DOSE_MG


@dataclass
class EvidenceLine:
    text: str  # the unit as written, its line breaks and runs of spaces as one space
    start: int  # character offsets into the summary
    end: int
    section: str  # the section's title ("" when the text has none)
    section_kind: str
    score: float
    lexical: float
    meaning: float
    bonus: float
    # Why a line was added beside the best-scoring ones: "medicine" (the medication-list
    # line of a medicine named), "follow-up" (the follow-up of something named), or "".
    related: str = ""
    names_asked: bool = False  # names a medicine the question asks about
    # For a question that asks more than one thing, the number (from 1) of the part this
    # line answers best (Question.parts); 0 for any other line.
    part: int = 0
    # For a line added as another step of a plan (related "step"), the start of the
    # answer line whose plan it belongs to; -1 for any other line.
    step_of: int = -1

    def quote(self) -> str:
        """The line with the section it comes from, as the model and the reader see it."""
        return f"[{self.section}] {self.text}" if self.section else self.text

    def describe(self) -> str:
        """The line as a reader is shown it under an answer (the Ask tab, `lumen ask`, the
        copied and printed answer): its quote, and why it is listed when it was added for
        what the answer names."""
        related = RELATED_LABELS.get(self.related)
        return f"{self.quote()}  ({related})" if related else self.quote()

    def to_dict(self) -> dict[str, Any]:
        return {k: (round(v, 4) if isinstance(v, float) else v) for k, v in asdict(self).items()}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "EvidenceLine":
        """A line as a trace keeps it (to_dict), read back."""
        return cls(**{name: data[name] for name in cls.__dataclass_fields__ if name in data})


@dataclass
class Unit:
    text: str
    start: int
    end: int
    section: str
    section_kind: str


def _plain_space(text: str) -> str:
    return re.sub(r"\s+", " ", text).strip()


# A table's heading row or rule: cells of a few words, no number ("| Medication | Dose |").
_TABLE_HEADING = re.compile(r"^\|?(?:\s*[A-Za-z /:-]{0,30}\s*\|)+\s*[A-Za-z /:-]{0,30}\s*\|?$"
                            r"|^\|?[\s:|-]+\|?$")
_BULLET = re.compile(r"^\s*(?:[-•*·▪◦#]|\(?\d{1,2}[.)]|\[\s?\])\s+")


# A sentence that tells the patient what to do, perhaps after the case it is for ("If
# ketones are above 1.5 mmol/L, take an extra dose ..."; "Check blood ketones whenever ...").
_TELLS_WHAT_TO_DO = re.compile(
    r"(?:if\b(?:[^,;.]|(?<=\d)\.(?=\d)){3,90},\s*)?(?:check|take|call|phone|go|come|return|drink|eat|keep|avoid|"
    r"do not|don't|never|weigh|pause|stop|restart|resume|sip|wear|bring|use|give|inject|apply|"
    r"seek|contact|make sure|limit|rest|walk)\b", re.IGNORECASE)


def evidence_units(summary: str, facts: SummaryFacts) -> list[Unit]:
    """Every line of a list and every sentence of running text, in order, each with its
    section; a heading on its own is no unit, and neither is a line that reads like an
    instruction to an AI (safety.py), which is data never to be repeated.  A medication
    line whose status comes from the label above it carries that label ("Stopped:
    Doxazosin 4 mg once daily"), so no quote of it loses its status."""
    units = []
    for section in facts.sections:
        kind = section.effective_kind
        items = section_items(summary, section)
        if kind == "header":  # a record field, read whole ("Admit 4/9 D/C 4/14 Attending: ...")
            items = [(section.start, section.end)]
        for start, end in items:
            text = patient_text(_plain_space(summary[start:end]))  # no record field is quoted
            if (not re.search(r"[A-Za-z0-9]", text) or reads_like_instruction(text)
                    or _TABLE_HEADING.match(text)):
                continue
            medication = facts.medication_at(start, end)
            if medication is not None and medication.said_elsewhere:
                text = f"{text} {medication.said_elsewhere}"  # "It caused ..., so we have stopped it."
            if medication is not None and medication.label and \
                    medication.label.lower() not in text.lower():
                text = f"{medication.label}: {text}"
            # In a paragraph under no heading, a sentence that tells the patient what to
            # do is an instruction (a letter's or a note's sick-day rules).
            told = "instructions" if kind == "other" and _TELLS_WHAT_TO_DO.match(text) else kind
            units.append(Unit(text, start, end, section.title, told))
    return units


def _medicine_kinds(text: str, glossary: Glossary | None) -> set[str]:
    return set().union(*(medicine_kinds(name, key, glossary)
                         for *_span, name, key in medicine_names(text, glossary)))


def find_evidence(summary: str, question: Question, *, embed: Callable[[list[str]], np.ndarray],
                  glossary: Glossary | None, facts: SummaryFacts | None = None,
                  count: int = 4, answer_count: int = ANSWER_LINES) -> list[EvidenceLine]:
    """The `count` units of `summary` that best answer `question`, best first (and, for a
    question that asks more than one thing, the line that answers each part best), then
    the lines related to the `answer_count` that answer it (see answer_lines)."""
    facts = facts if facts is not None else read_summary(summary, glossary)
    units = evidence_units(summary, facts)
    if not units or not question.text.strip():
        return []
    corpus = [retrieval_tokens(f"{u.text}", glossary) for u in units]
    bm25 = None
    if any(corpus):
        from rank_bm25 import BM25Okapi

        bm25 = BM25Okapi([c or ["∅"] for c in corpus])
    parts = [Question.read(part, glossary) for part in question.parts]
    vectors = embed([f"{u.section}: {u.text}" if u.section else u.text for u in units]
                    + [question.text] + [part.text for part in parts])
    lines = _scored(units, question, bm25, vectors[:len(units)], vectors[len(units)], facts, glossary)
    # A question that asks two things ("How much do I take now, and what do I do if my
    # weight goes up?") is answered for each: the line that best answers a part, read
    # together with the whole question (so "how should it be timed?" stays about the
    # lithium test), is in the answer.
    for number, part in enumerate(parts, start=1):
        scored = _scored(units, part, bm25, vectors[:len(units)], vectors[len(units) + number],
                         facts, glossary)
        best = max(range(len(units)), key=lambda i: (scored[i].score + lines[i].score, -i))
        if scored[best].score >= EVIDENCE_FLOOR and not lines[best].part:
            lines[best].part = number
    lines.sort(key=lambda line: (-line.score, line.start))
    chosen = lines[:count] + [line for line in lines[count:] if line.part]
    if chosen and chosen[0].score >= EVIDENCE_FLOOR:
        for line in related_lines(lines, answer_lines(chosen, answer_count), question, facts, glossary,
                                  summary):
            if line not in chosen:
                chosen.append(line)
    return chosen


@functools.lru_cache(maxsize=256)
def _title_medicines(title: str, glossary: Glossary | None) -> frozenset[str]:
    return frozenset(medicine_words(title, glossary)) if title else frozenset()


def _scored(units: list[Unit], question: Question, bm25, vectors: np.ndarray,
            question_vector: np.ndarray, facts: SummaryFacts,
            glossary: Glossary | None) -> list[EvidenceLine]:
    """Each unit as a line scored against `question`, in the units' order."""
    query = list(question.tokens)
    if bm25 is not None and query:
        # Scaled by what a line holding every word of the question once would score (each
        # word adds its idf; a word no line holds, the rarest idf), so one weak word in
        # common ("heart" in "heart-healthy") is not a full match.
        rarest = max(bm25.idf.values())
        ideal = sum(max(bm25.idf.get(word, rarest), 0.0) for word in set(query)) or 1.0
        lexical = np.clip(np.asarray(bm25.get_scores(query), float) / ideal, 0.0, 1.0)
    else:
        lexical = np.zeros(len(units))
    meaning = np.clip(vectors @ question_vector, 0.0, None)
    kinds = question.kinds
    wanted_sections = {s for kind in kinds for s in kind.sections}
    # A question that names a section by its heading ("What follow-up do I have?") wants
    # that section's lines, over those that share only its small words with the question
    # (short headings such as "f/u" are too easily met by chance).
    asked_text = " " + re.sub(r"[^a-z/&' -]+", " ", question.text.lower()) + " "
    named_sections = {kind for kind, _plain, headings in vocabulary().sections
                      if any(f" {h} " in asked_text for h in headings if len(h) > 4)}
    # A warning sign, follow-up or restriction the parser found outside its own section
    # ("Call 911 at once for face drooping ..." under "Stroke") counts as in it.
    wanted_facts = [(f.start, f.end) for kind in kinds for f in
                    {"warning": facts.warning_signs, "when": facts.follow_ups,
                     "activity": facts.restrictions}.get(kind.kind, [])]
    warning = question.has_kind("warning")
    asked = question.asked_medicines([unit.text for unit in units]
                                     + sorted({unit.section for unit in units}), glossary)
    lines = []
    for index, unit in enumerate(units):
        bonus = SECTION_BONUS if (unit.section_kind in wanted_sections or any(
            a < unit.end and unit.start < b for a, b in wanted_facts)
            or (warning and reads_as_warning(unit.text))) else 0.0
        if unit.section_kind in named_sections:
            bonus += SECTION_BONUS
        if unit.section_kind in PAST_SECTIONS:
            bonus -= PAST_PENALTY
        if unit.section_kind == "header" and lexical[index] == 0:
            bonus -= PAST_PENALTY  # a record field ("Admission Date") unless it is asked about
        # (a line under a heading that names the medicine names it too: "PREDNISOLONE
        # REDUCING SCHEDULE" over "- then 50 mg each morning for 14 days")
        names_asked = bool(asked and asked & (medicine_words(unit.text, glossary)
                                              | _title_medicines(unit.section, glossary)))
        if names_asked:
            bonus += MEDICINE_BONUS if _about(unit, asked, glossary) else MENTION_BONUS
        score = LEXICAL_WEIGHT * lexical[index] + MEANING_WEIGHT * meaning[index] + bonus
        lines.append(EvidenceLine(unit.text, unit.start, unit.end, unit.section,
                                  unit.section_kind, float(score), float(lexical[index]),
                                  float(meaning[index]), bonus, names_asked=names_asked))
    return lines


def _about(unit: Unit, asked: set[str], glossary: Glossary | None) -> bool:
    """Whether `unit` is about an asked medicine: the first medicine it names is one, or its
    section's title names one ("ibuprofen 400 mg PRN - D/C - bleeding risk with Eliquis"
    is about ibuprofen, and only mentions Eliquis)."""
    if asked & _title_medicines(unit.section, glossary):
        return True
    names = medicine_names(unit.text, glossary)
    if not names:
        return False
    _start, _end, name, key = min(names)
    return bool(asked & name_words(name, key))


def _terms(text: str, glossary: Glossary | None) -> set[str]:
    """The glossary entries and the tests (resources/summary_vocabulary.toml) a text names."""
    tests = {f"test:{m.group(1).lower()}" for m in vocabulary().follow_up_test.finditer(text)}
    return tests | {w for w in retrieval_tokens(text, glossary) if w.startswith("§")}


# What a plan's step is measured by: "If ketones are above 1.5 ...", "If weight goes up by
# more than 1 kg ...", "If your blood pressure is 160/110 or higher ...".
_IF_MEASURE = re.compile(
    r"\W*if\s+(?:(?:your|the|his|her|their|my|a|an|any)\s+)?"
    r"(?P<measure>(?!(?:you|he|she|they|we|it|there|this)\b)[a-z]+(?:[ -][a-z]+){0,2}?)\s+"
    r"(?:is|are|was|goes|go|drops|drop|rises|rise|falls|fall|stays|stay|gets|reaches|remains|"
    r"climbs|increases|decreases|reads|reading)\b", re.IGNORECASE)


def plan_measure(text: str) -> str:
    """The thing a conditional step is measured by ("ketones", "weight", "blood pressure"),
    lower case; '' for any other line."""
    found = _IF_MEASURE.match(_BULLET.sub("", text, count=1))
    return found.group("measure").lower() if found else ""


def _steps_of(line: EvidenceLine, ranked: list[EvidenceLine], summary: str, asked: set[str],
              glossary: Glossary | None) -> list[EvidenceLine]:
    """The other steps of the plan `line` is a step of (see related_lines), in order."""
    measure = plan_measure(line.text)
    steps = [other for other in ranked if measure and other is not line
             and other.section == line.section and plan_measure(other.text) == measure]
    if asked and line.section and asked & _title_medicines(line.section, glossary) \
            and line.section_kind == "medications":
        steps += [other for other in ranked if other is not line and other.section == line.section]
    if summary and line.section_kind == "medications" and _BULLET.match(
            summary[summary.rfind("\n", 0, line.start) + 1:line.end]):
        below = sorted((other for other in ranked if other.section == line.section
                        and other.start >= line.end), key=lambda other: other.start)
        depth = line_indent(summary, line.start)
        for other in below:
            if summary[line.end:other.start].count("\n\n") or line_indent(summary, other.start) <= depth:
                break
            steps.append(other)
    return sorted({id(other): other for other in steps}.values(), key=lambda other: other.start)


# A line that gives its own reason needs no sentence before it for one.
_SAYS_WHY = re.compile(r"\b(?:because|due to|owing to|caused by|as a result of|since)\b", re.IGNORECASE)


def _taken_instead(ranked: list[EvidenceLine], said: list[EvidenceLine], question: Question,
                  facts: SummaryFacts, glossary: Glossary | None) -> EvidenceLine | None:
    """For a medicine the question names that was stopped or held, the list line of the
    new medicine of the same kind, most often what is taken instead ("hydrochlorothiazide
    stopped", "amlodipine 5 mg daily (NEW)"); None when `said` holds one already."""
    replaced = set().union(*(_medicine_kinds(m.name, glossary) for m in facts.medications
                             if m.status in ("stopped", "held")
                             and question.medicine_words & medicine_words(m.name, glossary)))
    for line in said:  # the new one is already there ("sertraline to venlafaxine")
        medication = _medication_of(line, facts)
        if medication is not None and medication.status == "new":
            replaced -= _medicine_kinds(medication.name, glossary)
    for line in ranked if replaced else []:
        medication = _medication_of(line, facts)
        if (medication is not None and medication.status == "new" and line not in said
                and replaced & _medicine_kinds(medication.name, glossary)):
            return line
    return None


def _plan_steps(ranked: list[EvidenceLine], answer: list[EvidenceLine], found: list[EvidenceLine],
                question: Question, summary: str, glossary: Glossary | None) -> list[EvidenceLine]:
    """The other steps of the plans the answer's lines are steps of, marked "step" (and
    the answer's own lines that are steps of another's plan, marked with it): a step of
    a plan measured by one thing ("If ketones are above 3.0 mmol/L, go to the emergency
    department") is read with the plan's other steps ("If ketones are above 1.5 mmol/L,
    take an extra dose"), a list item with its own sub-items ("1. apixaban 5 mg tablet -
    NEW" over "- take 2 tablets ... through 03/14", "- then 1 tablet ... from 03/15"),
    and a line of a list under a heading that names the medicine asked about
    ("PREDNISOLONE REDUCING SCHEDULE") with the list: one step alone misleads."""
    asked = question.asked_medicines(
        [line.text for line in ranked] + sorted({line.section for line in ranked}), glossary)
    steps: list[EvidenceLine] = []
    for line in answer:
        if line.step_of != -1:
            continue  # a step of a plan already gathered
        for other in _steps_of(line, ranked, summary, asked, glossary):
            if other in answer:  # said with the plan, in its place
                other.step_of = line.start if other.step_of == -1 else other.step_of
            elif other not in found and other not in steps:
                other.related, other.step_of = "step", line.start
                steps.append(other)
    return steps


def related_lines(ranked: list[EvidenceLine], answer: list[EvidenceLine], question: Question,
                  facts: SummaryFacts, glossary: Glossary | None,
                  summary: str = "") -> list[EvidenceLine]:
    """The medication-list lines of the medicines the question or the best line names,
    then of those the other answer lines name (at most RELATED_MEDICINES in all); for a
    medicine the question names that was stopped or held, the new medicine of the same
    kind; for a "why" question, the sentence just before the best line in its
    paragraph; then the follow-up line that shares a medicine or a glossary term with
    the question or the best line (at most RELATED_FOLLOW_UPS), or, for a question about
    when to come back and when none does, the first dated follow-up line; each marked
    `related`."""
    if not answer:
        return []
    # Read whole, not as the question's terms and the line's: the glossary matches across
    # a line break, so the two can differ.
    asked = f"{question.text}\n{answer[0].text}"
    named = (question.asked_medicines([line.text for line in ranked], glossary)
             | medicine_words(asked, glossary))
    terms = named | _terms(asked, glossary)
    found: list[EvidenceLine] = []
    # The medicines the question and the best line name first, then those the other
    # answer lines name ("replaced with lisinopril"): their list lines say how to take them.
    also = set().union(*(medicine_words(line.text, glossary) for line in answer[1:])) - named
    for wanted in (named, also):
        for line in ranked:
            if len(found) >= RELATED_MEDICINES:
                break
            if (line not in answer and line not in found
                    and wanted & medicine_words(line.text, glossary)
                    and _medication_of(line, facts) is not None):
                line.related = "medicine"
                found.append(line)
    instead = _taken_instead(ranked, answer + found, question, facts, glossary)
    if instead is not None:
        instead.related = "instead"
        found.append(instead)
    if summary and question.has_kind("why"):
        # A reason is most often written just before what was done about it, in the same
        # paragraph ("K 5.3 on admission. Spironolactone was held.").
        before = max((line for line in ranked if line.end <= answer[0].start), default=None,
                     key=lambda line: line.end)
        if (before is not None and before not in answer and before not in found
                and not _SAYS_WHY.search(answer[0].text)
                and "\n" not in summary[before.end:answer[0].start]):
            before.related = "reason"
            found.append(before)
    found += _plan_steps(ranked, answer, found, question, summary, glossary)
    follow_ups = 0
    for line in ranked:
        if follow_ups >= RELATED_FOLLOW_UPS:
            break
        if (line.section_kind == "follow_up" and line not in answer and line not in found
                and terms & (_terms(line.text, glossary) | medicine_words(line.text, glossary))):
            line.related = "follow-up"
            found.append(line)
            follow_ups += 1
    if not follow_ups and question.has_kind("warning"):
        # "When should I come back?" is also asked of the planned visit: the first dated
        # follow-up line, after the signs that mean coming back sooner.
        planned = [line for line in ranked if line.section_kind == "follow_up"
                   and line not in answer and line not in found and DATE.search(line.text)]
        if planned:
            first = min(planned, key=lambda line: line.start)
            first.related = "next-visit"
            found.append(first)
    return found


def evidence_block(evidence: list[EvidenceLine]) -> str:
    """The evidence as the model reads it: one quoted line each, in the summary's order."""
    return "\n".join(f"- {line.quote()}" for line in sorted(evidence, key=lambda e: e.start))


# ---- the evidence answer ---------------------------------------------------------------


def short_gloss(definition: str) -> str:
    """The first sentence of a glossary definition, short enough to follow "X means"
    ("A small, finger-shaped pouch ..." -> "a small, finger-shaped pouch ..."); '' when
    even its first clause is too long for that."""
    first = re.split(r"(?<=[.!?])\s", definition.strip(), maxsplit=1)[0].rstrip(".!?")
    if len(first.split()) > GLOSS_WORDS:
        # Cut where a new clause starts (", often", ", which", "; it"), never inside a list
        # of words ("a thin, soft tube").
        first = re.split(r"(?:,|;|\s[-–—])\s+(?=(?:often|usually|which|who|such as|so|and it|"
                         r"but|as|when|where|it|this|for example)\b)", first, maxsplit=1)[0]
        if len(first.split()) > GLOSS_WORDS or len(first.split()) < 3:
            first = ""
    return first[:1].lower() + first[1:]


def _syllables(word: str) -> int:
    return len(re.findall(r"[aeiouy]+", word.lower().rstrip("e"))) or 1


class Explainer:
    """Turns summary lines into plain sentences: shorthand written out, medical words
    glossed once each (at most GLOSSES_PER_ANSWER per answer), and never a gloss that
    brings a fact of its own (a medicine, a dose) the summary does not hold."""

    def __init__(self, glossary: Glossary | None, summary: str = "", date_order: str = "",
                 plain: bool = True, glosses: int = GLOSSES_PER_ANSWER) -> None:
        self.glossary = glossary
        self.glosses = glosses  # glosses written after the lines, in all
        self.gloss_medicines = True
        self.summary = summary
        self.vocab = vocabulary()
        self.glossed: set[str] = set()
        # With `defer_glosses`, the glosses are kept here instead of following their line,
        # for an answer that says its lines first (evidence_answer).
        self.defer_glosses = False
        self.deferred: list[str] = []
        # Plain words (plain.py): shown only where they keep every fact of the line; the
        # lines where they would not are counted, for the benchmark and the trace.
        self.plain = plain
        self.reader = Reader.of(summary) if plain else Reader((), ())
        self.plain_kept = 0
        self.named: set[str] = set()  # conditions named once beside their plain words
        self.plain_refused: list[list[str]] = []
        # Dates are written back in the order the summary writes them (24/03 stays 24/03).
        self.date_order = date_order or date_order_of(summary)

    def _shorthand(self, text: str, lexical: bool = False) -> str:
        """Timings, routes and durations in the words Lumen writes for patients, each
        between _OPEN and _CLOSE so that the glossary leaves Lumen's own words alone
        ("into a vein (IV)" is not explained again).  `lexical`: a phrase of the lay
        lexicon that holds one ("tolerating PO": "eating and drinking without problems")
        is left whole for it, not made "managing by mouth"."""
        vocab = self.vocab
        words = lexicon()

        @functools.lru_cache(maxsize=4)
        def phrases(text: str) -> list[tuple[int, int]]:
            return [m.span() for m in words.pattern.finditer(text)
                    if " " in m.group(0).strip() and words.key_of(m.group(0))] if lexical else []

        def shorthand(written: str) -> bool:
            # Shorthand only (BID, q6h, PO, QHS); words already written out ("daily",
            # "oral", "every 12 hours") stay as written.
            return " " not in written and (len(written) <= 3 or written.isupper()
                                           or any(c.isdigit() for c in written))

        def plain(table):
            def replace(m: re.Match) -> str:
                written = m.group(0)
                if not shorthand(written) or m.string.count(_OPEN, 0, m.start()) > m.string.count(
                        _CLOSE, 0, m.start()) or any(
                            a <= m.start() and m.end() <= b for a, b in phrases(m.string)):
                    return written  # written out already, Lumen's own words, or the lexicon's
                term = table[m.group(1).lower()]
                # "q6h" is "every 6 hours", as the summary spaces the doses, not "four times
                # a day" (vocabulary.plain_timing)
                said = vocab.plain_timing(term.value, written) if table is vocab.frequencies \
                    else term.plain
                # "PRN pain" -> "only when needed for pain", not "only when needed pain".
                after = m.string[m.end():]
                if (said.endswith("needed") and _WHAT_FOR.match(after)
                        and not vocab.frequency.match(after.lstrip())
                        and not vocab.route.match(after.lstrip())):
                    said += " for"
                return f"{_OPEN}{said}{_CLOSE}"
            return replace

        def given(m: re.Match) -> str:
            term, thing = vocab.routes[m.group(1)], m.group(2)
            if not (term.given and shorthand(m.group(1))):
                return m.group(0)
            if thing.lower() in vocab.route_kept:
                return f"{_OPEN}{m.group(1)}{_CLOSE}{m.string[m.end(1):m.end()]}"
            if not vocab.is_given_thing(thing):
                return m.group(0)
            then = f" {m.group(3)}" if m.group(3) else ""
            return f"{thing}{then} {_OPEN}{term.given}{_CLOSE}"

        text = vocab.frequency.sub(plain(vocab.frequencies), text)
        text = vocab.route_before_word.sub(given, text)
        text = vocab.route.sub(plain(vocab.routes), text)
        return re.sub(r"\bx\s*(\d+)\s*(days?|weeks?|months?|d|wks?)\b",
                      lambda m: f"{_OPEN}for {m.group(1)} {_unit_word(m.group(2), m.group(1))}{_CLOSE}",
                      text, flags=re.IGNORECASE)

    def _gloss(self, entry, limited: bool = True) -> str:
        if limited and entry.category == "medication" and not self.gloss_medicines:
            return ""
        if (entry.key in self.glossed or (limited and len(self.glossed) >= self.glosses)
                or entry.category in ("abbreviation", "unit", "care")
                or not self.glossary.is_hard(entry.term, category=entry.category,
                                             everyday=entry.everyday)):
            return ""
        gloss = short_gloss(entry.definition)
        if not gloss or (self.summary and unsupported_facts(gloss, self.summary, self.glossary)):
            return ""
        self.glossed.add(entry.key)
        return gloss

    def explain(self, text: str, *, to_reader: bool = True) -> str:
        """`text` as plain sentences; `to_reader` False for words meant for the care team
        ("Please check her potassium" stays so)."""
        if not self.plain:
            return _undoubled(self._explain(text))
        glossed, deferred = set(self.glossed), list(self.deferred)
        rendered, replaced, named = self._explain_plain(text, to_reader)
        rendered = _undoubled(rendered)
        glossed_plain, self.glossed = self.glossed, glossed
        deferred_plain, self.deferred = self.deferred, list(deferred)
        explained = _undoubled(self._explain(text))
        if rendered == explained:
            return explained
        # What the plain steps lost of the line, over what explaining alone does
        # (writing "q6h" out loses nothing either way).
        lost = set(lost_facts(text, rendered, self.glossary, replaced)) - set(
            lost_facts(text, explained, self.glossary))
        if lost:
            self.plain_refused.append(sorted(lost))
            return explained
        self.plain_kept += 1
        self.glossed, self.named, self.deferred = glossed_plain, named, deferred_plain
        return rendered

    def _explain_plain(self, text: str, to_reader: bool) -> tuple[str, list[str], set[str]]:
        replaced: list[str] = []
        named = set(self.named)

        def plain(text: str) -> str:
            text = shorter_sentences(text)
            if to_reader:
                text = self.reader.turn(text)
            text = sides_written_out(record_shorthand(text))
            kept = [(m.start(), m.end()) for m in self.vocab.quantity.finditer(text)]
            kept += [(m.start(), m.end()) for m in DATE.finditer(text)]
            kept += [(m.start(), m.end()) for m in _MARKED.finditer(text)]
            text, words = lay_words(text, self.glossary, kept, (_OPEN, _CLOSE), named)
            replaced.extend(words)
            return text

        def lay(before: str, term: str, after: str, written: str) -> str:
            # An abbreviation written out ("HTN" -> "hypertension") in plain words too
            # ("high blood pressure (hypertension)"), read with the words around it.
            full = before + term + after
            out, words = lay_words(full, self.glossary,
                                   [(0, len(before)), (len(before) + len(term), len(full))],
                                   (_OPEN, _CLOSE), named)
            if not words:
                return term
            replaced.extend([*words, written])
            return out[len(before):len(out) - len(after)]
        return self._explain(text, plain, lay), replaced, named

    def _explain(self, text: str, plain: Callable[[str], str] | None = None,
                 lay: Callable[[str, str, str, str], str] | None = None) -> str:
        text = _BULLET.sub("", text, count=1).strip()
        if text.count("|") >= 2:  # a table row: its cells, one after another
            text = ", ".join(c.strip() for c in text.strip("| ").split("|") if c.strip())
        text = self._shorthand(text, lexical=plain is not None)
        text = self._dc(text)
        if plain is not None:
            text = plain(text)
        if self.glossary is None:
            return _sentence(_unmarked(text))
        # Doses and dates stay as written ("5.6 mEq/L" is not "5.6 milliequivalent/L"), and
        # so does what Lumen wrote out itself, and a "D/C" whose sense cannot be told.
        kept = [(m.start(), m.end()) for m in self.vocab.quantity.finditer(text)]
        kept += [(m.start(), m.end()) for m in DATE.finditer(text)]
        kept += [(m.start(), m.end()) for m in _MARKED.finditer(text)]
        explain = {m.start for m, _e in self.glossary.terms_to_explain(text, limit=40)}
        out, meanings, position = [], [], 0
        for match in self.glossary.match(text):
            if (match.start < position or any(a < match.end and match.start < b for a, b in kept)
                    or text[match.start - 1:match.start] == "/" or text[match.end:match.end + 1] == "/"
                    or re.search(r"\d\s?$", text[max(0, match.start - 2):match.start])):
                continue  # inside a dose, a date or a unit such as ng/mL or "8 L/min"
            if match.form == "abbreviation" and match.text.lower() in RELEASE_FORMS and re.search(
                    r"[A-Za-z]{4,}\s+$", text[max(0, match.start - 30):match.start]) and any(
                    self.vocab.is_medicine_word(w) for w in text[max(0, match.start - 30):match.start].split()[-2:]):
                continue  # "Nifedipine ER" is its slow-release form, not the emergency room (ER)
            entry = self.glossary.by_key[match.key]
            replacement = text[match.start:match.end]
            laid = False
            if match.form == "abbreviation":
                # SOB -> shortness of breath; an abbreviation whose full name is itself hard
                # to read ("SC": subcutaneous) -> what it means.
                hard = (entry.category == "abbreviation" and len(entry.term.split()) == 1
                        and _syllables(entry.term) >= 4)
                meaning = short_gloss(entry.definition) if hard else ""
                sided = _sided(text[match.start:match.end], entry)
                replacement = meaning or sided
                own = self._in_own_sense(text, match, position)
                if own is not None:
                    out.append(own[0])
                    position = own[1]
                    continue
                if (text[match.start - 1:match.start] == "(" and text[match.end:match.end + 1] == ")"
                        and text[:match.start - 1].rstrip().lower().endswith(entry.term.lower())):
                    replacement = ""  # "nasal cannula (HFNC)": the name is written already
                if lay is not None and replacement == sided:
                    replacement = lay(text[max(0, match.start - 30):match.start], replacement,
                                      text[match.end:match.end + 30], text[match.start:match.end])
                    laid = replacement != sided
            # An alias is plain words already ("kidney infection"), and so is an
            # abbreviation the lexicon wrote out.
            gloss = (self._gloss(entry) if match.start in explain and match.form != "alias"
                     and not laid else "")
            if gloss:
                # A sentence of its own after the line, not brackets inside it: shorter
                # sentences read more easily (and grade lower) than one long one.
                meanings.append(f"{_capital(_unmarked(replacement))} means {gloss}.")
            out.append(text[position:match.start])
            out.append(replacement)
            position = match.end
        out.append(text[position:])
        joined = "".join(out)
        if plain is not None:
            # Plain words that end in a name ("... pain medicine (NSAID)") before the line's
            # own brackets: one pair, "(NSAID; ibuprofen, naproxen)".
            joined = re.sub(rf"\)({re.escape(_CLOSE)})\s*\(", r"\1; ", joined)
        written = re.sub(r"\s*\(\s*\)", "", _unmarked(joined))
        if self.defer_glosses:
            self.deferred.extend(m for m in meanings if m not in self.deferred)
            meanings = []
        return " ".join([_sentence(written), *meanings])

    def _in_own_sense(self, text: str, match, position: int) -> tuple[str, int] | None:
        """An abbreviation the summary writes out itself, in that sense: (the text from
        `position` up to it with its long form, where to go on), or None when the glossary's
        sense stands.  "Spontaneous bacterial peritonitis (SBP)": this summary's SBP is no
        blood pressure; only a sense the glossary knows as another entry, whole, wins (a
        long form it does not know keeps the glossary's plain words, "swallow study" for
        FEES); where the long form was just said, the abbreviation is left out."""
        own = _defined_abbreviations(self.summary).get(text[match.start:match.end])
        senses = {m.key for m in self.glossary.match(own) if m.start == 0 and m.end == len(own)} if own else set()
        if not own or not senses or match.key in senses:
            return None
        before = text[position:match.start]
        if _unmarked(text[:match.start]).rstrip(" (;,)").lower().endswith(own):
            opened = before.rstrip(" ;,").endswith("(")
            return before.rstrip(" (;,"), match.end + (1 if opened and text[match.end:match.end + 1] == ")" else 0)
        return before + own, match.end

    def _dc(self, text: str) -> str:
        """"D/C" is read both ways: in a medicine's line it means stop, and is written so;
        before "home", a date and the like it means discharge (the glossary's sense);
        elsewhere it is left as written, marked so that nothing explains it."""
        if not self.vocab.dc.search(text):
            return text
        names_medicine = bool(medicine_names(text, self.glossary))
        out, position = [], 0
        for match in self.vocab.dc.finditer(text):
            discharge = self.vocab.dc_means_discharge(text, match)
            out.append(text[position:match.start()])
            if names_medicine and not discharge:
                out.append(f"{_OPEN}stop{_CLOSE}")
            elif discharge:
                out.append(match.group(0))
            else:
                out.append(f"{_OPEN}{match.group(0)}{_CLOSE}")
            position = match.end()
        out.append(text[position:])
        return "".join(out)

    def meaning(self, name: str, dose: str = "") -> str:
        """What a word means, from the glossary ('' when it has no gloss worth giving); for
        a medicine taken at a low `dose`, its definition's "In low doses ..." sentence
        (aspirin 81 mg keeps platelets from clumping; it is not there for pain)."""
        if self.glossary is None:
            return ""
        # "Fluticasone furoate/umeclidinium/vilanterol" is the triple inhaler the glossary
        # knows as "fluticasone/umeclidinium/vilanterol", not its first part's steroid.
        name = re.sub(rf"\s+{SALT_WORD}(?=\s*[/+-])", "", name)
        for match in self.glossary.match(name):
            if re.search(r"[/+-]\s*$", name[:match.start]) or _JOINED.match(name[match.end:]):
                continue  # one part of a combination is not what the combination is
            entry = self.glossary.by_key[match.key]
            low = _LOW_DOSE_SENSE.search(entry.definition) if _low_dose(dose) else None
            if low and entry.key not in self.glossed and not (
                    self.summary and unsupported_facts(low.group(0), self.summary, self.glossary)):
                self.glossed.add(entry.key)
                return low.group(0).strip()
            gloss = self._gloss(entry, limited=False)
            if gloss:
                return _capital(gloss) + "."
        return ""

    def medication(self, medication: Medication) -> str:
        """A medication as what to do: "Take torsemide 40 mg by mouth once a day."; '' when
        the line says nothing to do but the name (its own words are shown instead, since
        "Albuterol is not prescribed" must never read as "Take albuterol")."""
        m, vocab = medication, self.vocab
        if m.doubt or NAMES_A_DEVICE.search(m.name):
            # a line read with doubt is quoted whole, never turned into an instruction; nor is
            # a device's ("Do not take Insulin pump")
            return ""
        if (m.status in ("", "unchanged") and not (m.dose or m.route or m.frequency
                                                     or m.duration or m.until)):
            return ""
        until = plain_date(m.until, self.date_order) if m.until else ""
        reason = m.reason
        timing = vocab.plain_timing(m.frequency, m.text) if m.frequency != "as needed" else ""
        what = " ".join(p for p in (m.dose, m.route, timing) if p)
        what = f" ({what})" if what else ""
        if m.status == "stopped":
            sentence = f"Stop taking {m.name}{what}."
        elif m.status == "held":
            sentence = (f"Do not take {m.name}{what} for now" + (f", until {until}" if until else "")
                        + ".")
        elif m.status == "resume":
            sentence = f"Start taking {m.name} again" + (f" on {until}" if until else "") + "."
        else:
            # The verb says the status: a new medicine is started, an unchanged one kept.
            verb = {"unchanged": "Keep taking", "new": "Start taking"}.get(m.status, "Take")
            if m.step > 1 and not same_day_dose(m):  # a later step: after the one before it, which says why
                verb, reason = "Then take", ""
            # What a medicine taken when needed is needed for reads in the sentence, in
            # plain words ("only when you need it for shortness of breath or wheeze").
            need_for = ""
            if m.as_needed and m.reason:
                need_for = re.sub(r"^for\s+", "", _inline(self.explain(m.reason)), flags=re.IGNORECASE)
                reason = ""
            # How it is taken ("with food", "before breakfast"), as its own words say
            taken = [phrase for phrase in how_taken(m, self.summary, vocab)
                     if phrase not in timing.lower() and phrase not in m.reason.lower()]
            parts = [verb, m.count and f"{m.count} of", m.name, m.dose, m.route, timing,
                     f"at {m.time}" if m.time else "",
                     "only when you need it" if m.as_needed else "",
                     f"for {need_for}" if need_for else "",
                     f"for {m.duration}" if m.duration else "",
                     f"until {until}" if until else ""]
            sentence = ", ".join([" ".join(p for p in parts if p)] + taken
                                 + (["then stop"] if m.course_ends else [])) + "."
            if m.maximum:
                sentence += f" Take no more than {m.maximum}."
            if m.status == "changed" and m.changed_from and m.changed_to:
                changed = [_inline(self.explain(dose)).rstrip(".") for dose in (m.changed_from, m.changed_to)]
                sentence += f" The dose changed from {changed[0]} to {changed[1]}."
            elif m.status == "changed":
                sentence += " The dose changed."
        if reason:
            sentence += f" ({self.explain(reason).strip().rstrip('.')})."
        return sentence


def _undoubled(text: str) -> str:
    """`text` without a word of five letters or more said twice in a row: most often a
    shorthand written out that ends with the word after it ("PJP pneumonia" had read
    "Pneumocystis pneumonia pneumonia"), sometimes the summary's own slip."""
    return re.sub(r"\b([A-Za-z]{5,})\s+\1\b", r"\1", text, flags=re.IGNORECASE)


_JOINED = re.compile(r"\s*(?:[/+]|-(?=[A-Za-z]))\s*")
_SIDES = {"L": "left", "R": "right", "B": "both"}


_SMALL_WORDS = frozenset({"of", "and", "the", "with", "in", "to", "for", "on"})


@functools.lru_cache(maxsize=8)
def _defined_abbreviations(summary: str) -> dict[str, str]:
    """The abbreviations a summary defines itself, "Long form (LF)": {"LF": "long form"};
    the long form's words (but small ones) start with the abbreviation's letters."""
    defined: dict[str, str] = {}
    for m in re.finditer(r"\(([A-Z]{2,6})\)", summary):
        abbreviation = m.group(1)
        words = re.findall(r"[A-Za-z][A-Za-z-]*", summary[max(0, m.start() - 120):m.start()])
        taken: list[str] = []
        letters = abbreviation
        for word in reversed(words):
            if not letters:
                break
            if word.lower() in _SMALL_WORDS and taken:
                taken.append(word)
                continue
            if word[0].lower() != letters[-1].lower():
                break
            taken.append(word)
            letters = letters[:-1]
        if not letters and abbreviation not in defined:
            defined[abbreviation] = " ".join(reversed(taken)).lower()
    return defined


def _sided(written: str, entry) -> str:
    """The name an abbreviation stands for, with the side it names: "LLE" (L + "LE") is
    the left lower extremity, "BLE" both lower extremities; the glossary lists the sided
    forms under the one entry, whose name has no side."""
    side = _SIDES.get(written[:1])
    if side and written[1:] in entry.abbreviations:
        plural = next((a for a in entry.aliases if a.startswith(entry.term[:-1])
                       and a != entry.term), entry.term)
        return f"{side} {plural if side == 'both' else entry.term}"
    return entry.term


def _unit_word(unit: str, count: str) -> str:
    base = {"d": "day", "wk": "week", "wks": "week"}.get(unit.lower(), unit.lower().rstrip("s"))
    return base if count == "1" else base + "s"


_OPEN, _CLOSE = "\ue000", "\ue001"  # private-use marks around Lumen's own words
# What an "as needed" is for, right after it ("PRN pain", "PRN SOB or wheeze").
_WHAT_FOR = re.compile(r"\s+(?!(?:for|if|to|and|or|up|max|maximum|not|no|until|every|"
                       r"dispensed|disp|qty|take|with|at|in|on|then|while|per|as|once)\b)[A-Za-z]{2,}\b")
_MARKED = re.compile(f"{_OPEN}[^{_CLOSE}]*{_CLOSE}")


def _unmarked(text: str) -> str:
    return text.replace(_OPEN, "").replace(_CLOSE, "")


def _capital(text: str) -> str:
    return text[:1].upper() + text[1:]


def _inline(sentence: str) -> str:
    """A sentence said inside another: no full stop, and a capital only where the word
    keeps one ("Shortness of breath." -> "shortness of breath"; "H. PYLORI" stays)."""
    text = sentence.strip().rstrip(".")
    first = text.split(" ", 1)[0]
    if first[:1].isupper() and first[1:].islower():
        text = text[0].lower() + text[1:]
    return text


def _sentence(text: str) -> str:
    """Capitals where sentences start, a full stop at the end."""
    text = text.strip().rstrip(",;:")
    if not text:
        return ""
    text = re.sub(r"(^|[.!?]\s+)([a-z])",
                  lambda m: m.group(1) + (m.group(2) if m.start() and ends_no_sentence(
                      text[:m.start() + len(m.group(1).rstrip())]) else m.group(2).upper()), text)
    return text if re.search(r"[.!?]\)?$", text) else text + "."


def _medication_of(line: EvidenceLine, facts: SummaryFacts) -> Medication | None:
    """The medication a list line states (not one merely named in running text)."""
    found = _medications_of(line, facts)
    return found[0] if found else None


def _medications_of(line: EvidenceLine, facts: SummaryFacts) -> list[Medication]:
    """Every medication a list line states, each with its own status ("X - NEW (replaces
    Y, which should be stopped)" states X and Y)."""
    if line.section_kind != "medications":
        return []
    return [m for m in facts.medications if m.start >= line.start and m.end <= line.end + 1]


# A sentence that points back to the one before it ("This was stopped", "Restart them 24
# hours after ...", "It must not be left in") within its first words.
_POINTS_BACK = re.compile(r"^(?:\W*\w+\W+){0,2}?(?:it|this|that|they|them|these|those|both)\b",
                          re.IGNORECASE)


def _in_reading_order(lines: list[EvidenceLine], summary: str) -> list[EvidenceLine]:
    """`lines` in their order, but a line that points back to the sentence before it
    ("Restart them 24 hours after ...") right after that sentence when both are said:
    "Restart them" makes no sense before "Pause metformin and ramipril"."""
    def follows(line: EvidenceLine, before: EvidenceLine) -> bool:
        return (before.end <= line.start and before.section == line.section
                and not summary[before.end:line.start].strip()
                and bool(_POINTS_BACK.match(_BULLET.sub("", line.text, count=1))))
    ordered: list[EvidenceLine] = []
    for line in lines:
        if any(follows(line, before) for before in lines):
            continue  # said after its sentence
        chain = [line]
        while (after := next((other for other in lines if follows(other, chain[-1])), None)):
            chain.append(after)
        ordered += [other for other in chain if other not in ordered]
    return ordered


def answer_lines(evidence: list[EvidenceLine], count: int = ANSWER_LINES,
                 question: Question | None = None, summary: str = "") -> list[EvidenceLine]:
    """The best line, and those that score close to it (at most `count` in all), then the
    related lines a patient needs beside them (IN_THE_ANSWER; a follow-up only for a
    question of FOLLOW_UP_KINDS, else it stays in the evidence list); the sentence before
    the best line (a "why" question's reason) comes first, as the summary has it, and the
    new medicine taken instead of a stopped one right after the best line.  The best
    line of each part of a question that asks more than one thing is among them.  Unless the question asks why
    or what happened, a line that says what to do (a medicine's line, an instruction, a
    warning sign, a follow-up) comes before one that tells the stay's story, so the
    answer's first words are the instruction ("every 4 hours as needed"), not the course
    ("weaned to every 4 hours by day 2").  With the `summary`, a line that points back to
    the sentence before it is said right after that sentence."""
    ranked = [e for e in evidence if not e.related]
    if not ranked:
        return []
    best = ranked[0].score
    close = [e for e in ranked if e.score >= ANSWER_SHARE_OF_BEST * best][:max(1, count)]
    # Each part of a question that asks more than one thing has its best line in the
    # answer, in place of the weakest close lines, so the answer is no longer for it.
    parts = [e for e in ranked if e.part and e not in close]
    if parts:
        close = close[:max(1, count - len(parts))] + parts
    has_question = question is not None and bool(question.text)
    kinds = question.kind_names if has_question else frozenset()
    if has_question and not kinds & {"why", "what"}:
        # A line that says what to do goes first only when it is about what was asked (shares
        # a word with the question or names its medicine): a pain-medicine instruction
        # does not answer "Do I need antibiotics at home?" before the line that does.
        close.sort(key=lambda e: not (e.section_kind in TO_DO_SECTIONS
                                      and (e.lexical > 0 or e.names_asked)))  # stable
        if kinds & AMOUNT_KINDS and not kinds & {"warning", "todo", "activity"}:
            # Asked how much or how long, a line that says a dose, a date or a span answers
            # before one that does not ("through 08/24/2024" before "take 2 hours before
            # antacids").
            close.sort(key=lambda e: not any(fact_values(e.text, fact_kind, None)
                                             for kind in question.kinds for fact_kind in kind.facts))
    if summary:
        close = _in_reading_order(close, summary)
    # A plan's other steps are said with the step found, all in the summary's order.
    steps = [e for e in evidence if e.related == "step" or (e in close and e.step_of != -1)]
    if steps:
        anchors = {line.start for line in close}
        close = [e for line in close if line.step_of not in anchors or line.step_of == line.start
                 for e in sorted([line] + [s for s in steps if s.step_of == line.start and s is not line],
                                 key=lambda e: e.start)]
    reasons = [e for e in evidence if e.related == "reason"]
    # What is taken in place of a stopped medicine is said right after the best line ("Stop
    # taking metoprolol." "Start taking amlodipine ..."), before the course's story of why.
    instead = [e for e in evidence if e.related == "instead"]
    return reasons + close[:1] + instead + close[1:] + [
        e for e in evidence if e.related in IN_THE_ANSWER and e.related not in ("reason", "step", "instead")
        and (e.related != "follow-up" or kinds & set(FOLLOW_UP_KINDS))]


def evidence_answer(evidence: list[EvidenceLine], facts: SummaryFacts,
                    glossary: Glossary | None, summary: str = "",
                    count: int = ANSWER_LINES, plain: bool = True,
                    question: Question | None = None) -> str:
    """The top evidence as plain sentences, without a model; when no line scores at least
    EVIDENCE_FLOOR, a sentence saying that the summary does not seem to answer.  At most
    GLOSSES_PER_ANSWER definition, never of a medicine: its line says what it is for in
    this summary's words ("Aspirin ... (to prevent another stroke)"), and a glossary's
    general sense ("a common pain and fever medicine") may not be this patient's.  The
    definition comes after the lines, so the answer's first words are the answer; what
    the answer already says (a medicine from its list line and from the course, a line
    that runs on into a sentence said before) is not said twice."""
    if not evidence or evidence[0].score < EVIDENCE_FLOOR:
        return NO_EVIDENCE
    explainer = Explainer(glossary, summary, facts.date_order, plain)
    explainer.gloss_medicines = False
    explainer.defer_glosses = True  # the lines first; a word's meaning after them
    sentences: list[str] = []
    for line in answer_lines(evidence, count, question, summary):
        medications = _medications_of(line, facts)
        said = [explainer.medication(m) for m in medications]
        # Every fact, number and "not" of the line ("Call 911 at once" is no "Take Call once");
        # a medical word may give way to the glossary's plain name.
        if said and all(said) and not [f for f in lost_facts(_BULLET.sub("", line.text, count=1),
                                                             " ".join(said), glossary)
                                       if not f.startswith("term ")]:
            # A medicine said already (its list line found twice) is not said again.
            sentence = " ".join(s for s in said if s not in " ".join(sentences))
            # The line's other sentences ("Compatible with breastfeeding.", "Rinse mouth after
            # use."), which the medicine's own sentence does not say, as written, explained.
            known = set(content_words(" ".join(said)))
            extra = [s for s in _SENTENCE_BREAK.split(_BULLET.sub("", line.text, count=1).strip())[1:]
                     if sum(w not in known for w in content_words(s)) > len(content_words(s)) / 2]
            if sentence and extra:
                sentence += " " + explainer.explain(" ".join(extra))
        elif any(m.doubt for m in medications):
            quoted = _BULLET.sub("", line.text, count=1).strip()
            sentence = f'Your summary says: "{quoted}" {UNCERTAIN_LINE}'
        else:
            sentence = explainer.explain(line.text, to_reader=line.section_kind != "for_doctor")
        # A sentence said already (a list line that runs on into the course's sentence the
        # answer holds) is not said again.
        said_already = {_said_form(s) for s in _SENTENCE_BREAK.split(" ".join(sentences))}
        sentence = " ".join(s for s in _SENTENCE_BREAK.split(sentence)
                            if _said_form(s) not in said_already)
        sentence = re.sub(r"\s*…$", ".", sentence)
        if sentence and not _said_before(sentence, sentences, glossary):
            sentences.append(sentence)
    return " ".join(sentences + explainer.deferred)


# (also where a medicine's line quotes another, "... ongoing … - Prednisolone increased ...")
_SENTENCE_BREAK = re.compile(r"(?<=[.!?…])\s+(?=[A-Z(])|(?<=…)\s+[-–—]\s+(?=[A-Z(])")


def _said_form(sentence: str) -> str:
    return " ".join(sentence.lower().strip(" .…").split())


def _said_before(sentence: str, said: list[str], glossary: Glossary | None) -> bool:
    """Whether every fact and every word that matters of `sentence` is in the answer
    already (the same medicine from its list line and from the course, a line found
    twice), so saying it again adds only length."""
    before = " ".join(said)
    if not before:
        return False
    if lost_facts(sentence, before, glossary):
        return False
    known = set(content_words(before))
    return all(word in known for word in content_words(sentence))
