"""Is every number, dose, frequency, date and drug in an answer also in the summary?

Facts are pulled out of both texts and compared in a normal form (the units and timings
of resources/summary_vocabulary.toml), so "40 milligrams" in an answer is found as
"40 mg" in the summary, "twice a day" as "BID", "three days" as "3 days", and "06/04"
(no year) as "06/04/2025".  Dates in numbers are read in the order the source writes
them (vocabulary.date_order_of: a UK letter's 24/03/2025 is day first), the answer's
in the same order.  Medicines are found with the glossary's matcher (category
"medication"), so a brand name matches the generic name the glossary lists it under, and
by their name stems (-olol, -pril, ...), so a medicine the glossary lacks is still
checked.  The same facts, compared the other way,
tell what a rewritten handout section left out.
"""

from __future__ import annotations

import functools
import re
from dataclasses import asdict, dataclass

from ..glossary.glossary import Glossary
from .summary_facts import medicine_names, read_summary, section_items, split_summary
from .vocabulary import DATE, date_order_of, date_value, number_value, same_date, vocabulary


@dataclass(frozen=True)
class Fact:
    kind: str  # "quantity", "frequency", "date", "medicine"
    text: str  # as written
    value: str  # normal form compared between texts
    start: int
    end: int

    def to_dict(self) -> dict:
        return asdict(self)


@dataclass(frozen=True)
class Flag(Fact):
    """A fact of Lumen's text that the summary does not hold (a grounding flag), or an
    instruction's words repeated from it (kind "instruction"); kept in a trace as a dict."""

    @classmethod
    def from_dict(cls, data: dict) -> "Flag":
        return cls(data["kind"], data["text"], data.get("value", ""), data.get("start", -1),
                   data.get("end", -1))

    def describe(self) -> str:
        """The one sentence that flags it, in the answer's "Check before use" list, the
        checks' problems and the command line alike."""
        if self.kind == "instruction":  # words the summary does hold, but that instruct
            return f"'{self.text}' repeats words of the summary that give instructions"
        return f"'{self.text}' ({self.kind}) is not in the summary"


def _quantity_value(number: str, unit_form: str) -> str:
    unit = vocabulary().units[unit_form.lower()].value
    if "/" in number:
        return f"{number} {unit}"
    return f"{number_value(number):g} {unit}"


_BARE_NUMBER = re.compile(r"(?<![\w.,/-])\d+(?:[.,]\d+)?(?![\w/]|[.,]\d)")


def _numbers(text: str) -> set[str]:
    """Every number written in `text`, in normal form ("10", "2.5")."""
    return {f"{number_value(n):g}" for n in re.findall(r"\d+(?:[.,]\d+)?", text)}


def extract_facts(text: str, glossary: Glossary | None = None, *,
                  bare_numbers: bool = False, date_order: str = "") -> list[Fact]:
    """Quantities, dose timings, dates (with or without a year) and medicines in `text`,
    each in the normal form of resources/summary_vocabulary.toml; with `bare_numbers`,
    also numbers that stand alone ("The answer is: 10").  Dates in numbers are read in
    `date_order` ("mdy", "dmy"; by default the text's own, date_order_of)."""
    date_order = date_order or date_order_of(text)
    vocab = vocabulary()
    facts: list[Fact] = []
    for m in vocab.quantity.finditer(text):
        facts.append(Fact("quantity", m.group(0), _quantity_value(m.group(1), m.group(2)),
                          m.start(), m.end()))
    for m in vocab.frequency.finditer(text):
        facts.append(Fact("frequency", m.group(0), vocab.frequencies[m.group(1).lower()].value,
                          m.start(), m.end()))
    for m in DATE.finditer(text):
        value = date_value(m, date_order)
        if value:
            facts.append(Fact("date", m.group(0), value, m.start(), m.end()))
    for start, end, name, key in medicine_names(text, glossary, vocab):
        facts.append(Fact("medicine", name, key, start, end))
    if bare_numbers:
        taken = [(f.start, f.end) for f in facts]
        for m in _BARE_NUMBER.finditer(text):
            if not any(a <= m.start() < b for a, b in taken):
                facts.append(Fact("number", m.group(0), f"{number_value(m.group(0)):g}",
                                  m.start(), m.end()))
    return sorted(facts, key=lambda f: f.start)


def _known(fact: Fact, facts: list[Fact]) -> bool:
    """Whether `facts` hold `fact` (a date without a year matches any year)."""
    for other in facts:
        if other.kind != fact.kind:
            continue
        if other.value == fact.value or (fact.kind == "date" and same_date(fact.value, other.value)):
            return True
    return False


_CLAUSE = re.compile(r"(?<=[.!?;])\s+|\n")


def _doses_of_medicines(text: str, facts: list[Fact]) -> list[tuple[Fact, Fact]]:
    """(medicine, dose) pairs: each dose with the medicine named last before it in the same
    sentence or line ("Take torsemide 40 mg" pairs torsemide with 40 mg)."""
    pairs = []
    for clause in _CLAUSE.split(text):
        start = text.find(clause)
        end = start + len(clause)
        medicine = None
        for fact in facts:
            if not start <= fact.start < end:
                continue
            if fact.kind == "medicine":
                medicine = fact
            elif fact.kind == "quantity" and medicine is not None and \
                    fact.value.split()[-1] in vocabulary().dose_units:
                pairs.append((medicine, fact))
    return pairs


# Record shorthand, written out by plain.py's step 3 (and so supported by the line it
# came from: "#8" in a line naming tablets is "8 tablets").
_DISPENSED = re.compile(r"\b(?:dispensed|disp|qty|quantity|supply|refills?)\b", re.IGNORECASE)
_COUNT = re.compile(r"(?<![\w&])#\s?(\d+)\b")
_FORMS = (("capsules", re.compile(r"\bcap(?:s|sule|sules)?\b", re.IGNORECASE)),
          ("tablets", re.compile(r"\b(?:tab|tabs|tablet|tablets|pills?)\b", re.IGNORECASE)))


def record_shorthand(text: str) -> str:
    """"Dispensed #20" -> "Dispensed 20 tablets" (the form the line names; "a supply of 20"
    when it names none).  A "#" elsewhere (a bed number, UK shorthand for a fracture) stays."""
    if not _DISPENSED.search(text):
        return text
    form = next((name for name, pattern in _FORMS if pattern.search(text)), "")

    def count(m: re.Match) -> str:
        if any(p.match(text, m.end() + 1) for _name, p in _FORMS):
            return m.group(1)  # "#20 tabs"
        return f"{m.group(1)} {form}" if form else f"a supply of {m.group(1)}"
    return _COUNT.sub(count, text)


@functools.lru_cache(maxsize=8)
def _source_facts(source: str, glossary: Glossary | None
                  ) -> tuple[list[Fact], set[str], str, set[tuple[str, str]]]:
    """A source's facts, numbers, lower-case text and the doses it gives each medicine (in
    any line or item that names both), read once however many answers are checked
    against it.  Lumen's own text quotes a summary's items as the facts parser reads
    them (an item wrapped onto the next line joined again, a count written out: "#8" ->
    "8 tablets"), so the items are read as well as the lines."""
    facts = extract_facts(source, glossary)
    items = [" ".join(source[start:end].split()) for section in split_summary(source)
             for start, end in section_items(source, section)]
    written_out = [record_shorthand(text) for text in [*source.splitlines(), *items]]
    facts += [f for f in extract_facts("\n".join(written_out), glossary) if f.kind == "quantity"]
    # The fields the facts parser read from a medicine's line, as Lumen writes them
    # ("Max 3000 mg/24 hrs" -> "3000 mg in 24 hours", "4-hourly" -> "every 4 hours"): support
    # for what they say, not for pairing a dose with another medicine.
    fields = "\n".join(" ".join((m.count, m.frequency, m.maximum, m.duration))
                       for m in read_summary(source, glossary).medications)
    facts += [f for f in extract_facts(fields, glossary) if f.kind in ("quantity", "frequency")]
    doses = set()
    for line in [*_CLAUSE.split(source), *(c for text in written_out for c in _CLAUSE.split(text))]:
        line_facts = extract_facts(line, glossary, date_order="mdy")  # doses only
        medicines = [f.value for f in line_facts if f.kind == "medicine"]
        quantities = [f.value for f in line_facts if f.kind == "quantity"]
        doses |= {(m, q) for m in medicines for q in quantities}
    return facts, _numbers(source), source.lower(), doses


def unsupported_facts(answer: str, source: str, glossary: Glossary | None) -> list[Flag]:
    """Facts in `answer` that `source` does not contain (the grounding flags), and doses the
    answer gives a medicine that the source gives it nowhere ("torsemide 400 mg" when 400 mg
    is the ibuprofen)."""
    known, source_numbers, lowered_source, source_doses = _source_facts(source, glossary)
    order = date_order_of(source)
    flags = []
    answer_facts = extract_facts(answer, glossary, bare_numbers=True, date_order=order)
    # "every 4 hours" is one timing: its "4 hours" is no length of time of its own.
    timings = [(f.start, f.end) for f in answer_facts if f.kind == "frequency" and _known(f, known)]
    for fact in answer_facts:
        if _known(fact, known) or (fact.kind == "number" and fact.value in source_numbers):
            continue
        if fact.kind == "quantity" and any(a <= fact.start and fact.end <= b for a, b in timings):
            continue
        if fact.kind == "medicine" and fact.text.lower() in lowered_source:
            continue
        flags.append(Flag(**asdict(fact)))
    flagged = {(f.start, f.end) for f in flags}
    answer_facts = extract_facts(answer, glossary, date_order=order)
    for medicine, dose in _doses_of_medicines(answer, answer_facts):
        if (medicine.start, medicine.end) in flagged or (dose.start, dose.end) in flagged:
            continue  # already flagged on its own
        if (medicine.value, dose.value) not in source_doses:
            flags.append(Flag("dose", answer[medicine.start:dose.end], f"{medicine.value} {dose.value}",
                              medicine.start, dose.end))
    return sorted(flags, key=lambda f: f.start)


def missing_facts(source: str, rewrite: str, glossary: Glossary | None) -> list[Fact]:
    """Facts of `source` that its rewrite left out (each distinct value once)."""
    order = date_order_of(source)
    kept = extract_facts(rewrite, glossary, date_order=order)
    lowered_rewrite = rewrite.lower()
    missing, seen = [], set()
    for fact in extract_facts(source, glossary, date_order=order):
        key = (fact.kind, fact.value)
        if key in seen or _known(fact, kept) or (fact.kind == "medicine"
                                                 and fact.text.lower() in lowered_rewrite):
            continue
        seen.add(key)
        missing.append(fact)
    return missing


def key_facts(text: str, glossary: Glossary | None) -> list[Fact]:
    """The facts a reference answer turns on (each distinct value once): quantities,
    timings, dates and medicines."""
    seen, found = set(), []
    for fact in extract_facts(text, glossary):
        if (fact.kind, fact.value) not in seen:
            seen.add((fact.kind, fact.value))
            found.append(fact)
    return found


def key_fact_recall(reference: str, answer: str, glossary: Glossary | None) -> tuple[int, int]:
    """(facts of `reference` present in `answer`, facts of `reference`)."""
    wanted = key_facts(reference, glossary)
    return len(wanted) - len(missing_facts(reference, answer, glossary)), len(wanted)


# A span or a day said without a date ("in 2 weeks", "x 7 days", "next week")
RELATIVE_WHEN = re.compile(
    r"\b(?:in|within|after|for|over the next|x)\s*(?:about\s+)?(?:\d+|one|two|three|four|five|"
    r"six|seven|eight|nine|ten|twelve|fourteen)(?:\s*(?:-|to)\s*\d+)?\s*(?:days?|weeks?|months?|"
    r"wks?|d)\b|\b(?:tomorrow|next week|monday|tuesday|wednesday|thursday|friday|saturday|"
    r"sunday)\b", re.IGNORECASE)


def fact_values(text: str, kind: str, glossary: Glossary | None) -> list[tuple[str, str]]:
    """(kind of fact, value) of each fact of `text` of one of the kinds of fact a kind of
    question asks for (resources/answer_checks.toml `facts`: quantity, duration, when, medicine)."""
    if kind == "when":
        found = [("date", f.value) for f in extract_facts(text, glossary) if f.kind == "date"]
        found += [("relative", re.sub(r"\s+", " ", m.group(0).lower()))
                  for m in RELATIVE_WHEN.finditer(text)]
        return found
    if kind == "duration":
        found = [("relative", re.sub(r"\s+", " ", m.group(0).lower()))
                 for m in RELATIVE_WHEN.finditer(text)]
        found += [("date", f.value) for f in extract_facts(text, glossary) if f.kind == "date"]
        return found
    facts = extract_facts(text, glossary)
    if kind == "quantity":
        return [("quantity", f.value) for f in facts if f.kind == "quantity"]
    if kind == "medicine":
        return [("medicine", f.value) for f in facts if f.kind == "medicine"]
    return []
