"""Is every number, dose, frequency, date and drug in an answer also in the summary?

Facts are pulled out of both texts and compared in a normal form, so "40 milligrams"
in an answer is found as "40 mg" in the summary, "twice a day" as "BID", and
"three days" as "3 days".  Medicines are found with the glossary's matcher (category
"medication"), so a brand name in the answer matches the generic name in the summary
when the glossary lists it as another name.  The same facts, compared the other way,
tell what a rewritten handout section left out.
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass

from ..glossary.glossary import Glossary

_NUMBER_WORDS = {"one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7,
                 "eight": 8, "nine": 9, "ten": 10, "eleven": 11, "twelve": 12, "fourteen": 14,
                 "twenty": 20, "thirty": 30, "half": 0.5}
_UNITS = {
    "mg": ("mg", "milligram", "milligrams"), "mcg": ("mcg", "µg", "microgram", "micrograms"),
    "g": ("g", "gram", "grams"), "kg": ("kg", "kilogram", "kilograms", "kilo", "kilos"),
    "ml": ("ml", "milliliter", "milliliters", "millilitre", "millilitres", "cc"),
    "l": ("l", "liter", "liters", "litre", "litres"),
    "unit": ("unit", "units", "iu"), "%": ("%", "percent", "per cent"),
    "mmhg": ("mmhg",), "mg/dl": ("mg/dl",), "g/dl": ("g/dl",), "mmol/l": ("mmol/l",),
    "meq/l": ("meq/l",), "bpm": ("bpm", "beats per minute"),
    "minute": ("min", "mins", "minute", "minutes"), "hour": ("hr", "hrs", "hour", "hours", "h"),
    "day": ("day", "days"), "week": ("wk", "wks", "week", "weeks"),
    "month": ("month", "months"), "year": ("year", "years", "yr", "yrs"),
    "tablet": ("tab", "tabs", "tablet", "tablets", "pill", "pills", "capsule", "capsules"),
    "puff": ("puff", "puffs"), "cm": ("cm", "centimeter", "centimeters"),
    "lb": ("lb", "lbs", "pound", "pounds"), "mm": ("mm",),
}
_UNIT_OF = {alias: canon for canon, aliases in _UNITS.items() for alias in aliases}
_UNIT_PATTERN = "|".join(sorted((re.escape(a) for a in _UNIT_OF), key=len, reverse=True))
_NUMBER = r"\d+(?:[.,]\d+)?|" + "|".join(_NUMBER_WORDS)
_QUANTITY = re.compile(rf"(?<![\w.])({_NUMBER})\s*-?\s*({_UNIT_PATTERN})(?![\w/])", re.IGNORECASE)

_FREQUENCIES = {
    "1/day": ("once a day", "once daily", "daily", "every day", "each day", "qd", "q.d.", "od",
              "once each day", "every morning", "qam", "q24h", "every 24 hours"),
    "2/day": ("twice a day", "twice daily", "two times a day", "2 times a day", "bid", "b.i.d.",
              "every 12 hours", "q12h", "twice each day"),
    "3/day": ("three times a day", "three times daily", "3 times a day", "tid", "t.i.d.",
              "every 8 hours", "q8h"),
    "4/day": ("four times a day", "four times daily", "4 times a day", "qid", "q.i.d.",
              "every 6 hours", "q6h"),
    "bedtime": ("at bedtime", "at night", "nightly", "every night", "qhs", "q.h.s.", "hs"),
    "as needed": ("as needed", "when needed", "as required", "prn", "p.r.n."),
    "every other day": ("every other day", "qod", "q.o.d."),
    "weekly": ("once a week", "weekly", "every week"),
}
_FREQUENCY_OF = {phrase: canon for canon, phrases in _FREQUENCIES.items() for phrase in phrases}
_FREQUENCY = re.compile(r"(?<![\w.])(" + "|".join(sorted((re.escape(p) for p in _FREQUENCY_OF),
                                                        key=len, reverse=True)) + r")(?![\w])",
                        re.IGNORECASE)
_DATE = re.compile(r"(?<!\d)(\d{1,2})/(\d{1,2})/(\d{2,4})(?!\d)|(?<!\d)(\d{4})-(\d{2})-(\d{2})(?!\d)")


@dataclass(frozen=True)
class Fact:
    kind: str  # "quantity", "frequency", "date", "medicine"
    text: str  # as written
    value: str  # normal form compared between texts
    start: int
    end: int

    def to_dict(self) -> dict:
        return asdict(self)


def _number(text: str) -> float:
    lowered = text.lower()
    if lowered in _NUMBER_WORDS:
        return float(_NUMBER_WORDS[lowered])
    return float(lowered.replace(",", "."))


def extract_facts(text: str, glossary: Glossary | None = None) -> list[Fact]:
    facts: list[Fact] = []
    for m in _QUANTITY.finditer(text):
        value = _number(m.group(1))
        unit = _UNIT_OF[m.group(2).lower()]
        facts.append(Fact("quantity", m.group(0), f"{value:g} {unit}", m.start(), m.end()))
    for m in _FREQUENCY.finditer(text):
        facts.append(Fact("frequency", m.group(0), _FREQUENCY_OF[m.group(1).lower()],
                          m.start(), m.end()))
    for m in _DATE.finditer(text):
        if m.group(1):
            month, day, year = int(m.group(1)), int(m.group(2)), int(m.group(3))
        else:
            year, month, day = int(m.group(4)), int(m.group(5)), int(m.group(6))
        year += 2000 if year < 100 else 0
        facts.append(Fact("date", m.group(0), f"{year:04d}-{month:02d}-{day:02d}", m.start(), m.end()))
    if glossary is not None:
        for match in glossary.match(text):
            if match.category == "medication":
                facts.append(Fact("medicine", match.text, match.key, match.start, match.end))
    return sorted(facts, key=lambda f: f.start)


def _values(facts: list[Fact]) -> set[tuple[str, str]]:
    return {(f.kind, f.value) for f in facts}


def unsupported_facts(answer: str, source: str, glossary: Glossary | None) -> list[Fact]:
    """Facts in `answer` that `source` does not contain (the grounding flags)."""
    known = _values(extract_facts(source, glossary))
    lowered_source = source.lower()
    flags = []
    for fact in extract_facts(answer, glossary):
        if (fact.kind, fact.value) in known:
            continue
        if fact.kind == "medicine" and fact.text.lower() in lowered_source:
            continue
        flags.append(fact)
    return flags


def missing_facts(source: str, rewrite: str, glossary: Glossary | None) -> list[Fact]:
    """Facts of `source` that its rewrite left out (each distinct value once)."""
    kept = _values(extract_facts(rewrite, glossary))
    lowered_rewrite = rewrite.lower()
    missing, seen = [], set()
    for fact in extract_facts(source, glossary):
        key = (fact.kind, fact.value)
        if key in kept or key in seen or (fact.kind == "medicine" and fact.text.lower() in lowered_rewrite):
            continue
        seen.add(key)
        missing.append(fact)
    return missing
