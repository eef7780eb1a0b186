"""The shorthand of discharge summaries, read from resources/summary_vocabulary.toml.

One place for units, dose timings, routes, medication status words, section headings,
follow-up and warning cues, restriction words and medicine-name stems: the facts parser
(summary_facts.py) and the grounding check (grounding.py) both read them from here, and
changing what Lumen understands is editing that file, not code.
"""

from __future__ import annotations

import functools
import re
import tomllib
from dataclasses import dataclass

from ..config import resource_root
from ..errors import ConfigError

# The last word of a heading about one medicine's safe use ("LITHIUM SAFETY")
_MEDICINE_TOPICS = frozenset({"safety", "monitoring", "precautions", "advice", "information",
                              "education", "counselling", "counseling", "warnings", "teaching"})
_MONTHS = {"jan": 1, "feb": 2, "mar": 3, "apr": 4, "may": 5, "jun": 6, "jul": 7, "aug": 8,
           "sep": 9, "oct": 10, "nov": 11, "dec": 12}
_MONTH_WORD = (r"(?:jan(?:uary)?|feb(?:ruary)?|mar(?:ch)?|apr(?:il)?|may|june?|july?|"
               r"aug(?:ust)?|sept?(?:ember)?|oct(?:ober)?|nov(?:ember)?|dec(?:ember)?)\.?")


def _alternation(forms) -> str:
    """A regex alternative of whole-word forms, longest first; a space in a form matches any
    run of spaces or a line break ("twice\n daily")."""
    return "|".join(re.escape(f).replace("\\ ", r"\s+")
                    for f in sorted(forms, key=len, reverse=True))


def _trie_alternation(forms) -> str:
    """What _alternation matches, written as a trie ("ab(?:c|d)"): Python's re tries every
    alternative at every word, so a thousand names cost a thousand tries a word; a trie
    tries only the names that share the letters read so far. A name that goes on is tried
    before the shorter one it starts with, as longest-first does."""
    trie: dict = {}
    for form in forms:
        node = trie
        for char in form:
            node = node.setdefault(char, {})
        node[""] = {}

    def written(node: dict) -> str:
        branches = [(r"\s+" if char == " " else re.escape(char)) + written(child)
                    for char, child in sorted(node.items()) if char]
        if not branches:
            return ""
        body = branches[0] if len(branches) == 1 else f"(?:{'|'.join(branches)})"
        return f"(?:{body})?" if "" in node else body
    return written(trie)


def _whole(forms) -> re.Pattern:
    return re.compile(rf"(?<![\w/]){'(' + _alternation(forms) + ')'}(?![\w/])", re.IGNORECASE)


@dataclass(frozen=True)
class Term:
    value: str  # normal form
    plain: str  # how Lumen writes it for a patient
    one: str = ""  # how Lumen writes one of it ("1 tablet"), where that differs
    # A route's words after what is given by it, where the summary writes the route first
    # ("IV fluids" -> "fluids given into a vein (IV)", not "into a vein (IV) fluids").
    given: str = ""

    def written(self, count: float) -> str:
        return self.one if count == 1 and self.one else self.plain


@dataclass(frozen=True)
class MedicineKind:
    """A kind of medicine a patient may name instead of a medicine ("the antibiotic")."""
    kind: str
    cue: re.Pattern
    topics: frozenset[str]
    defined_as: tuple[str, ...]
    stems: tuple[str, ...]

    def includes(self, name: str, topic: str = "", definition: str = "") -> bool:
        """Whether a medicine (its name, glossary topic and definition) is of this kind."""
        lowered, definition = name.lower(), definition.lower()
        return (topic in self.topics
                or any(phrase in definition for phrase in self.defined_as)
                or any(lowered.endswith(stem) for stem in self.stems))


@dataclass(frozen=True)
class ProcedureKind:
    """A kind of test or procedure a patient may name instead of it ("another scope")."""
    kind: str
    cue: re.Pattern
    entries: frozenset[str]  # glossary terms, lower case

    @property
    def token(self) -> str:
        """How retrieval writes this kind as one word (evidence._tokens)."""
        return f"§kind:{self.kind}"


@dataclass(frozen=True)
class Vocabulary:
    units: dict[str, Term]          # form (lower case) -> term
    dose_units: frozenset[str]      # unit values that are doses of a medicine
    dose_forms: frozenset[str]      # of those, what is counted ("2 tablets"), not a strength
    frequencies: dict[str, Term]
    routes: dict[str, Term]
    statuses: tuple[tuple[str, str, tuple[str, ...]], ...]  # (value, plain, forms), in order
    sections: tuple[tuple[str, str, tuple[str, ...]], ...]  # (kind, plain, headings)
    follow_up_cues: tuple[str, ...]
    follow_up_tests: tuple[str, ...]
    follow_up_who: tuple[str, ...]
    warning_cues: tuple[str, ...]
    restrictions: tuple[tuple[str, tuple[str, ...]], ...]   # (kind, words)
    restriction_cues: tuple[str, ...]
    stems: tuple[str, ...]
    medicine_names: tuple[str, ...]
    not_medicines: frozenset[str]
    medicine_kinds: tuple[MedicineKind, ...] = ()
    procedure_kinds: tuple[ProcedureKind, ...] = ()
    table_header_words: frozenset[str] = frozenset()
    status_columns: frozenset[str] = frozenset()
    reason_columns: frozenset[str] = frozenset()
    given_things: frozenset[str] = frozenset()  # what a route written first may give
    given_then: frozenset[str] = frozenset()  # words that go with it ("drip")
    route_kept: frozenset[str] = frozenset()  # no thing given ("IV access"): left as written
    given_after: tuple[str, ...] = ()  # words that may follow the thing given
    how_taken: tuple[str, ...] = ()  # "before breakfast", "with food": how a dose is taken
    sides: tuple[tuple[str, tuple[str, ...]], ...] = ()  # ("left", ("L", "Lt")), as written
    side_between: tuple[str, ...] = ()
    side_body: tuple[str, ...] = ()
    record_columns: frozenset[str] = frozenset()
    previous_dose_columns: frozenset[str] = frozenset()
    letter_greetings: tuple[str, ...] = ()
    letter_references: tuple[str, ...] = ()
    letter_closings: tuple[str, ...] = ()
    record_identifiers: tuple[str, ...] = ()
    record_signatures: tuple[str, ...] = ()
    record_staff: tuple[str, ...] = ()
    dc_forms: tuple[str, ...] = ()
    dc_discharge_after: tuple[str, ...] = ()

    # ---- compiled patterns ----

    @functools.cached_property
    def unit_pattern(self) -> str:
        return _alternation(self.units)

    @functools.cached_property
    def quantity(self) -> re.Pattern:
        """A number (or a dose like 5/325, 100/50/75) with its unit: '40 mg', '2 tabs', 'three days'."""
        number = r"\d+(?:[.,]\d+)?(?:/\d+(?:[.,]\d+)?){0,2}|" + "|".join(NUMBER_WORDS)
        # "2 orange tablets": a colour or size between the count and its form
        # (or a strength's mark: "1 DS tab", "2 ER tablets")
        described = (r"(?:(?:white|orange|blue|yellow|pink|green|red|purple|brown|grey|gray|small|large|big|"
                     r"DS|SS|ER|XR|XL|SR|MR|CR)\s+)?")
        return re.compile(rf"(?<![\w.])({number})\s*-?\s*{described}({self.unit_pattern})(?![\w/])",
                          re.IGNORECASE)

    @functools.cached_property
    def frequency(self) -> re.Pattern:
        return _whole(self.frequencies)

    def timings(self, text: str) -> list[tuple[int, int, str]]:
        """(start, end, normal form) of every dose timing in `text`, in order: the
        vocabulary's forms, and intervals it does not list ("every 4-6 hours", "q3h")
        in the normal form "every N hours" / "every N-M hours" (or the vocabulary's own
        form of that interval: every 8 hours is "3/day"), or "every N minutes"."""
        # Epic writes numbers twice ("2 (two) times a day", "every 6 (six) hours").
        text = _SPELLED_OUT.sub(lambda m: " " * len(m.group(0)), text)
        text = _ONCE_WHEN.sub(lambda m: " " * len(m.group(0)), text)
        found = [(m.start(), m.end(), self.frequencies[m.group(1)].value)
                 for m in self.frequency.finditer(text)]
        for m in SLOTS.finditer(text):
            value = slots_frequency(m.group(0))
            if value and not any(a < m.end() and m.start() < b for a, b, _ in found):
                found.append((m.start(), m.end(), value))
        for m in _INTERVAL.finditer(text):
            if any(a < m.end() and m.start() < b for a, b, _ in found):
                continue
            low, high = m.group("low") or m.group("low2"), m.group("high") or m.group("high2")
            written = f"every {low} hours" if not high else f"every {low}-{high} hours"
            known = self.frequencies.get(written) if not high else None
            found.append((m.start(), m.end(), known.value if known else written))
        for m in _MINUTES_INTERVAL.finditer(text):
            if not any(a < m.end() and m.start() < b for a, b, _ in found):
                found.append((m.start(), m.end(), f"every {int(m.group('n'))} minutes"))
        return sorted(found)

    def timing_values(self, text: str) -> list[str]:
        return [value for _a, _b, value in self.timings(text)]

    @functools.cached_property
    def route(self) -> re.Pattern:
        return _whole(self.routes)

    @functools.cached_property
    def status_patterns(self) -> tuple[tuple[str, str, re.Pattern], ...]:
        return tuple((value, plain, _whole(forms)) for value, plain, forms in self.statuses)

    @functools.cached_property
    def follow_up_cue(self) -> re.Pattern:
        return _whole(self.follow_up_cues)

    @functools.cached_property
    def follow_up_test(self) -> re.Pattern:
        return _whole(self.follow_up_tests)

    @functools.cached_property
    def warning_cue(self) -> re.Pattern:
        return _whole(self.warning_cues)

    @functools.cached_property
    def restriction_patterns(self) -> tuple[tuple[str, re.Pattern], ...]:
        return tuple((kind, _whole(words)) for kind, words in self.restrictions)

    @functools.cached_property
    def restriction_cue(self) -> re.Pattern:
        return re.compile("|".join(re.escape(c) for c in self.restriction_cues), re.IGNORECASE)

    @functools.cached_property
    def stem_word(self) -> re.Pattern:
        """A word ending in a medicine stem, or one of the listed medicine names."""
        return re.compile(rf"\b(?:{_trie_alternation(self.medicine_names)}|"
                          rf"[A-Za-z][A-Za-z-]{{2,}}(?:{_alternation(self.stems)}))\b",
                          re.IGNORECASE)

    @functools.cached_property
    def route_before_word(self) -> re.Pattern:
        """A route and the word after it (group 2), with a word that goes with that one
        (group 3), where the phrase ends there: "IV fluids", "IV furosemide 40 mg", "IV
        heparin drip", "IV access" (not "IV iron sucrose")."""
        return re.compile(rf"{self.route.pattern}\s+([A-Za-z][A-Za-z-]*)(?![\w-])"
                          rf"(?:\s+({_alternation(self.given_then)})(?![\w-]))?"
                          rf"(?=\s*(?:$|[^\sA-Za-z]|(?:{_alternation(self.given_after)})\b))",
                          re.IGNORECASE)

    @functools.cached_property
    def side(self) -> re.Pattern:
        """A side written as a letter before a part of the body ("L kidney", "R lower
        leg"); group `side` is the letter, as written (capitals only: "l" is a litre)."""
        letters = "|".join(re.escape(f) for _, forms in self.sides for f in forms)
        return re.compile(rf"(?<![\w/.])(?P<side>{letters})\.?(?=\s+(?i:(?:(?:{_alternation(self.side_between)})"
                          rf"\s+)?(?:{_alternation(self.side_body)}))\b)")

    def side_word(self, written: str) -> str:
        """"left" for "L" or "Lt" (as the [side] table writes them), else ''."""
        return next((word for word, forms in self.sides if written in forms), "")

    def is_given_thing(self, word: str) -> bool:
        """What a route written before it may give: fluids, antibiotics, a medicine."""
        return word.lower() in self.given_things or self.is_medicine_word(word)

    @functools.cached_property
    def medicine_name_set(self) -> frozenset[str]:
        return frozenset(self.medicine_names)

    def is_medicine_word(self, word: str) -> bool:
        """A word that reads as a medicine's name by its stem (6 letters or more)."""
        lowered = word.lower()
        if lowered in self.medicine_name_set:
            return True
        return (len(lowered) >= 6 and lowered not in self.not_medicines
                and any(lowered.endswith(stem) for stem in self.stems))

    def medicine_kinds_in(self, text: str) -> list[MedicineKind]:
        """The kinds of medicine a text names ("my water pill")."""
        return [kind for kind in self.medicine_kinds if kind.cue.search(text)]

    def procedure_kinds_of(self, text: str, terms: list[str]) -> list[ProcedureKind]:
        """The kinds of test a text speaks of: by a cue ("my heart tracing") or by naming
        one of the kind's glossary `terms` (the terms of the text's glossary matches)."""
        named = {term.lower() for term in terms}
        return [kind for kind in self.procedure_kinds
                if kind.entries & named or kind.cue.search(text)]

    @functools.cached_property
    def status_words(self) -> frozenset[str]:
        """Every word of a status form ("do", "not", "restart", "new", ...)."""
        return frozenset(word for _value, _plain, forms in self.statuses for form in forms
                         for word in form.split())

    @functools.cached_property
    def _heading_kinds(self) -> dict[str, str]:
        """Each section heading's kind (the first kind that lists it)."""
        table: dict[str, str] = {}
        for kind, _plain, headings in self.sections:
            for heading in headings:
                table.setdefault(heading, kind)
        return table

    def section_kind(self, title: str, exact: bool = False) -> str:
        """The kind of section a heading names ('other' when none): a heading of the
        vocabulary, or (unless `exact`) one followed by more words ("Diet: low salt")."""
        name = re.sub(r"[^a-z0-9/& -]+", " ", title.lower())
        name = re.sub(r"\s+", " ", name).strip()
        table = self._heading_kinds
        if re.match(r"(?:department|division|directorate|faculty|school|institute) of\b", name):
            return "other"  # a letterhead ("Department of Acute and Elderly Medicine"), no section
        if " / " in name:
            # "Dispo / F/U": of two headings in one, the one that says what to do
            kinds = [self.section_kind(part, exact) for part in name.split(" / ")]
            acted = [k for k in kinds if k in ("medications", "follow_up", "warning_signs",
                                                "restrictions", "instructions")]
            if acted:
                return acted[0]
        for candidate in (name, re.sub(r"^(?:discharge|brief|your|final|the)\s+", "", name)):
            if candidate in table:
                return table[candidate]
            words = candidate.split(" ")
            for count in range(len(words) - 1, 0, -1) if not exact else ():
                # The longest heading the title starts with; one letter ("A:" of a progress
                # note) is a heading only on its own.
                heading = " ".join(words[:count])
                if len(heading) > 2 and heading in table:
                    return table[heading]
        # "Call the pediatrician or come back to the ER if", "Signs of dehydration - call
        # your doctor if you see": a heading that says when to get help.
        if re.search(r"\b(?:call|return|come back|come to|come in|report to|attend|seek|go to|get help|contact|phone|"
                     r"ring|notify|transfer to)\b.*\b(?:if|for|when)"
                     r"(?:\s+(?:you|she|he|they)\s+(?:see|sees|notice|notices|have|has|get|gets|develop|develops))?$",
                     name):
            return "warning_signs"
        zone = re.match(r"(green|yellow|amber|orange|red)\s+zone\b", name)
        if zone:  # an action plan's zones: the green one says what to keep doing
            return "instructions" if zone.group(1) == "green" else "warning_signs"
        if re.search(r"\baction plan$", name) or re.match(r"(?:information|advice|leaflets?)\s+"
                                                          r"(?:given|provided)\b", name):
            return "instructions"  # "CF Action Plan", "Information given to Mrs X and her son"
        # "Requests for GP", "Suggested actions for the family doctor": what the writer asks
        # the family doctor to do.
        if re.search(r"\b(?:gp|pcp|primary care|family doctor|family physician|general practitioner)\b", name) \
                and re.search(r"\b(?:actions?|requests?|recommend\w*|notes?|to do|for|to|suggest\w*|"
                              r"plan|asks?|advice)\b", name):
            return "for_doctor"
        # "LITHIUM SAFETY", "Warfarin monitoring": what to watch while on one medicine
        if self.names_a_medicine_topic(name):
            return "instructions"
        # "Amantadine plan", "Prednisone taper": how to take one medicine
        words = name.split()
        if 2 <= len(words) <= 4 and words[-1] in ("plan", "schedule", "taper", "dosing", "regimen",
                                                  "instructions", "doses") \
                and any(self.is_medicine_word(word) for word in words[:-1]):
            return "medications"
        # "Medicines that have changed", "Pills to stop", "Rescue medicine": a list of
        # medicines ("Department of Medicine", "Hospital Medicine" are services)
        if re.search(r"\b(?:medicines|medications?|meds|drugs|prescriptions?|pills|tablets)\b"
                     r"|(?<!of )(?<!internal )(?<!family )(?<!emergency )(?<!hospital )(?<!general )"
                     r"(?<!sports )(?<!nuclear )(?<!respiratory )(?<!acute )\bmedicine\b", name) \
                and not re.search(r"\b(?:allerg|department|service|division|unit|ward)", name):
            return "medications"
        # "Why Sofia was in the hospital"
        if re.match(r"why\b.*\b(?:hospital|admitted|here|stay)$", name):
            return "diagnoses"
        # "About your stent", "Caring for your drain": what to know and do about one thing
        if re.fullmatch(r"(?:about|caring for|looking after|living with|care of)\s+(?:your|the|my)\s+[a-z/-]+"
                        r"(?:\s+[a-z/-]+)?", name):
            return "instructions"
        # "Fever instructions", "Wound advice": what to do about one thing
        if re.fullmatch(r"(?!(?:other|further|additional|general|special|more)\b)(?:[a-z/-]+\s+){1,2}"
                        r"(?:instructions|advice|guidance)", name):
            return "instructions"
        # "Diet and fluids", "Driving / activity": headings joined, read as the first's kind.
        joined = [part.strip() for part in re.split(r"\s+(?:and|&)\s+|\s*/\s*|,\s*", name)]
        if len(joined) > 1 and all(joined):
            kinds = [self.section_kind(part, exact=True) for part in joined]
            known = [k for k in kinds if k != "other"]
            if known and all(k == known[0] for k in known):
                return known[0]
        return "other"

    def names_a_medicine_topic(self, title: str) -> bool:
        """A heading of what to watch or know while on a medicine ("LITHIUM SAFETY",
        "Warfarin monitoring"), whose words are otherwise a medicine line's."""
        words = re.sub(r"[^a-z0-9 -]+", " ", title.lower()).split()
        return 2 <= len(words) <= 4 and words[-1] in _MEDICINE_TOPICS \
            and self.is_medicine_word(words[0]) \
            and all(self.is_medicine_word(word) or re.fullmatch(SALT_WORD, word) for word in words[1:-1])

    def section_plain(self, kind: str) -> str:
        """The handout's heading for a kind of section ("medications" -> "Your medicines")."""
        return next((plain for section_kind, plain, _ in self.sections if section_kind == kind), "")

    def plain_frequency(self, value: str) -> str:
        """How Lumen writes a timing's normal form ("2/day" -> "twice a day")."""
        return next((t.plain for t in self.frequencies.values() if t.value == value), value)

    def plain_timing(self, value: str, written: str) -> str:
        """A medicine's timing as a patient reads it: its normal form in plain words, but
        an interval the line gives ("q6h", "every 6 hours", "6-hourly") as "every 6 hours":
        a dose taken every 6 hours when needed is spaced, which "four times a day" does not
        say.  The interval only when it is the one timing of that value in `written`."""
        intervals = set()
        for start, end, found in self.timings(written):
            interval = _INTERVAL.fullmatch(written[start:end].strip())
            if found == value and interval:
                low = interval.group("low") or interval.group("low2")
                high = interval.group("high") or interval.group("high2")
                intervals.add(f"every {low}-{high} hours" if high else f"every {low} hours")
        return intervals.pop() if len(intervals) == 1 else self.plain_frequency(value)

    @functools.cached_property
    def record_identifier(self) -> re.Pattern:
        return re.compile(rf"(?<![\w/])(?:{_alternation(self.record_identifiers)})(?![\w/])"
                          r"\s*(?:no\.?|number|#)?\s*[:#]?", re.IGNORECASE)

    @functools.cached_property
    def dc(self) -> re.Pattern:
        return _whole(self.dc_forms)

    @functools.cached_property
    def _dc_discharge(self) -> re.Pattern:
        return re.compile(rf"\s*:?\s*(?:(?:{_alternation(self.dc_discharge_after)})\b|(?:on\s+)?\d)",
                          re.IGNORECASE)

    def dc_means_discharge(self, text: str, match: re.Match) -> bool:
        """Whether a "D/C" (a match of `dc` in `text`) means discharge by what follows it
        ("D/C home", "D/C: 05/01"); whether it means stop, or cannot be told, is the
        caller's to decide by the line it is in."""
        return bool(self._dc_discharge.match(text, match.end()))


NUMBER_WORDS = {"one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7,
                "eight": 8, "nine": 9, "ten": 10, "eleven": 11, "twelve": 12, "fourteen": 14,
                "twenty": 20, "thirty": 30, "half": 0.5, "½": 0.5, "¼": 0.25, "¾": 0.75}


def number_value(text: str) -> float:
    """A number as written: "1,000" and "3,000" with a thousands comma, "0,5" with a
    decimal comma (as in much of Europe), "half"."""
    lowered = text.lower()
    if lowered in NUMBER_WORDS:
        return float(NUMBER_WORDS[lowered])
    if re.fullmatch(r"\d{1,3}(?:,\d{3})+", lowered):
        return float(lowered.replace(",", ""))
    return float(lowered.replace(",", "."))


# The salt written after a medicine's name ("fluticasone furoate", "metoprolol succinate",
# "potassium chloride"): where it stands before a combination's "/" or "+", the name goes on.
SALT_WORD = r"[a-z]{3,}(?:ate|ide)"

# An interval the vocabulary does not list as a form: "every 4-6 hours", "q4-6h", "q 3 hrs",
# "4-hourly" (UK).
_INTERVAL = re.compile(r"(?<![\w/])(?:(?:every|q\.?)\s*(?P<low>\d{1,2})(?:\s*(?:-|–|to)\s*(?P<high>\d{1,2}))?"
                       r"\s*(?:hours?|hrs?|h)\b\.?|(?P<low2>\d{1,2})(?:\s*(?:-|–|to)\s*(?P<high2>\d{1,2}))?"
                       r"[\s-]?(?:hourly|hrly)\b)", re.IGNORECASE)
# A repeat in minutes, for a medicine taken again while a symptom lasts ("nitroglycerin 0.4 mg
# every 5 minutes, up to 3 doses", "salbutamol every 20 minutes"), said as written.
_MINUTES_INTERVAL = re.compile(r"(?<![\w/])(?:every|q\.?)\s*(?P<n>\d{1,2})\s*(?:minutes?|mins?)\b\.?",
                               re.IGNORECASE)
# Doses by time of day, as South Asian prescriptions write them: morning-noon-night
# ("1-0-1"), sometimes with a fourth slot at bedtime ("1-1-1-1"); a steroid's morning
# dose may be many tablets ("6-0-0" of prednisolone 5 mg).
SLOTS = re.compile(r"(?<![\w/.-])[0-9½](?:\s*-\s*[0-4½]){2,3}(?![\w/.-]|\s*-\s*\d)")
SLOT_FREQUENCIES = {0: "morning", 1: "1/day", 2: "bedtime", 3: "bedtime"}


def slots_frequency(written: str) -> str:
    """The frequency doses by time of day give ("1-0-1": "2/day", "0-0-1": "bedtime"); ''
    when none is taken."""
    slots = [part.strip() for part in written.split("-")]
    given = [index for index, slot in enumerate(slots) if slot != "0"]
    if not given:
        return ""
    return SLOT_FREQUENCIES[given[0]] if len(given) == 1 else f"{len(given)}/day"


def slots_count(written: str) -> str:
    """What each dose of a "2-0-2" is ("2"), when every dose is the same and not one."""
    taken = {part.strip() for part in written.split("-")} - {"0"}
    return taken.pop() if len(taken) == 1 and taken != {"1"} else ""


_SPELLED_OUT = re.compile(r"(?<=\d)\s*\((?:one|two|three|four|five|six|seven|eight|nine|ten|eleven|"
                          r"twelve|twenty-four)\)", re.IGNORECASE)
# "once she is eating normally", "once the creatinine settles": when, not how often
_ONCE_WHEN = re.compile(r"\bonce\s+(?=(?:she|he|they|you|it|we|the|her|his|their|your|this|that|there|"
                        r"all|any|each|renal|kidney|creatinine|blood)\b|(?!(?:morning|evening|during)\b)[a-z]+ing\b)",
                        re.IGNORECASE)

# ---- dates -----------------------------------------------------------------------------

DATE = re.compile(
    r"(?<![\d/])(?P<m>\d{1,2})/(?P<d>\d{1,2})(?:/(?P<y>\d{4}|\d{2}))?(?![\d/])"
    r"|(?<!\d)(?P<iy>\d{4})-(?P<im>\d{2})-(?P<id>\d{2})(?!\d)"
    rf"|\b(?P<wm>{_MONTH_WORD})\s+(?P<wd>\d{{1,2}})(?:st|nd|rd|th)?\b(?:,?\s+(?P<wy>\d{{4}}))?"
    rf"|\b(?P<dd>\d{{1,2}})(?:st|nd|rd|th)?\s+(?P<dm>{_MONTH_WORD})\b(?:,?\s+(?P<dy>\d{{4}}))?",
    re.IGNORECASE)


DATE_ORDERS = ("mdy", "dmy")


def date_value(match: re.Match, order: str = "mdy") -> str | None:
    """'YYYY-MM-DD', or '--MM-DD' when the text gives no year; None when it is no date
    (a fraction such as 120/80 or 5/325).  `order` says how the text writes a date in
    numbers: "mdy" (06/04/2025 is June 4) or "dmy" (4 June)."""
    groups = match.groupdict()
    if groups["m"]:
        month, day, year = int(groups["m"]), int(groups["d"]), groups["y"]
        if order == "dmy":
            month, day = day, month
    elif groups["iy"]:
        month, day, year = int(groups["im"]), int(groups["id"]), groups["iy"]
    elif groups["wm"]:
        month, day, year = _MONTHS[groups["wm"].lower()[:3]], int(groups["wd"]), groups["wy"]
    else:
        month = _MONTHS[groups["dm"].lower()[:3]]
        day, year = int(groups["dd"]), groups["dy"]
    if not (1 <= month <= 12 and 1 <= day <= 31):
        return None
    if year is None:
        return f"--{month:02d}-{day:02d}"
    year_number = int(year) + (2000 if len(year) == 2 else 0)
    return f"{year_number:04d}-{month:02d}-{day:02d}"


def date_order_of(text: str, default: str = "mdy") -> str:
    """How `text` writes dates in numbers: by its own dates where one can be read only one
    way (24/03/2025 is day first, 03/24/2025 month first), else `default` (a setting)."""
    votes = {"mdy": 0, "dmy": 0}
    for match in DATE.finditer(text):
        if match.group("m"):
            first, second = int(match.group("m")), int(match.group("d"))
            if first > 12 >= second >= 1 and first <= 31:
                votes["dmy"] += 1
            elif second > 12 >= first >= 1 and second <= 31:
                votes["mdy"] += 1
    if votes["dmy"] != votes["mdy"]:
        return max(votes, key=votes.get)
    return default if default in DATE_ORDERS else "mdy"


def plain_date(value: str, order: str = "mdy") -> str:
    """A date's normal form as written for a reader, in the order the summary writes its
    dates: "06/04/2025" (mdy) or "04/06/2025" (dmy), without a year when it has none;
    anything that is not a date value (words such as "follow-up") as it is."""
    match = re.fullmatch(r"(\d{4}|-)-(\d{2})-(\d{2})", value)
    if not match:
        return value
    year, month, day = match.groups()
    first, second = (day, month) if order == "dmy" else (month, day)
    return f"{first}/{second}" + ("" if year == "-" else f"/{year}")


def same_date(a: str, b: str) -> bool:
    """Dates agree when their month and day do and, where both give one, their year."""
    if a[-5:] != b[-5:]:
        return False
    return a.startswith("--") or b.startswith("--") or a == b


# ---- loading ---------------------------------------------------------------------------


class _Forms(dict):
    """Forms to terms, looked up as written in a text: any case, any run of spaces or a line
    break where the form has a space (the patterns match so: _alternation)."""

    def __getitem__(self, written: str) -> Term:
        return super().__getitem__(re.sub(r"\s+", " ", written.lower()))

    def get(self, written, default=None):
        return super().get(re.sub(r"\s+", " ", written.lower()), default)


def _terms(entries: list[dict]) -> dict[str, Term]:
    table: dict[str, Term] = _Forms()
    for entry in entries:
        term = Term(entry["value"], entry.get("plain", entry["value"]), entry.get("one", ""),
                    entry.get("given", ""))
        for form in entry["forms"]:
            table[form.lower()] = term
    return table


def _formulary() -> list[str]:
    """The medicine names of resources/formulary.toml: generic names, brands and names of
    several words, as hospitals of the six countries write them."""
    path = resource_root() / "resources" / "formulary.toml"
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
        return [name for table in data.values() for name in table["names"]]
    except (OSError, tomllib.TOMLDecodeError, KeyError, TypeError) as exc:
        raise ConfigError(f"Lumen's list of medicine names ({path}) cannot be read ({exc}).",
                          "Reinstall Lumen; the file ships with it.") from exc


@functools.lru_cache(maxsize=1)
def vocabulary() -> Vocabulary:
    path = resource_root() / "resources" / "summary_vocabulary.toml"
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
        return Vocabulary(
            units=_terms(data["unit"]),
            dose_units=frozenset(data["dose"]["units"]),
            dose_forms=frozenset(data["dose"]["forms"]),
            frequencies=_terms(data["frequency"]),
            routes=_terms(data["route"]),
            statuses=tuple((s["value"], s["plain"], tuple(f.lower() for f in s["forms"]))
                           for s in data["status"]),
            sections=tuple((s["kind"], s["plain"], tuple(h.lower() for h in s["headings"]))
                           for s in data["section"]),
            follow_up_cues=tuple(data["follow_up"]["cues"]),
            follow_up_tests=tuple(data["follow_up"]["tests"]),
            follow_up_who=tuple(data["follow_up"]["who"]),
            warning_cues=tuple(data["warning_signs"]["cues"]),
            restrictions=tuple((r["kind"], tuple(r["words"])) for r in data["restriction"]),
            restriction_cues=tuple(data["restriction_cues"]["words"]),
            stems=tuple(sorted(set(data["medicine"]["stems"]), key=len, reverse=True)),
            medicine_names=tuple(dict.fromkeys(n.lower() for n in data["medicine"]["names"] + _formulary())),
            not_medicines=frozenset(w.lower() for w in data["medicine"]["not_medicines"]),
            medicine_kinds=tuple(
                MedicineKind(k["kind"], _whole(k["cues"]), frozenset(k["topics"]),
                             tuple(p.lower() for p in k["defined_as"]),
                             tuple(s.lower() for s in k["stems"]))
                for k in data["medicine_kind"]),
            procedure_kinds=tuple(
                ProcedureKind(k["kind"], _whole(k["cues"]), frozenset(e.lower() for e in k["entries"]))
                for k in data["procedure_kind"]),
            table_header_words=frozenset(w.lower() for w in data["table"]["header_words"]),
            status_columns=frozenset(w.lower() for w in data["table"]["status_columns"]),
            reason_columns=frozenset(w.lower() for w in data["table"]["reason_columns"]),
            given_things=frozenset(w.lower() for w in data["route_given"]["things"]),
            given_then=frozenset(w.lower() for w in data["route_given"]["then"]),
            route_kept=frozenset(w.lower() for w in data["route_given"]["kept"]),
            given_after=tuple(data["route_given"]["after"]),
            how_taken=tuple(sorted(set(data["how_taken"]["phrases"]), key=len, reverse=True)),
            sides=(("left", tuple(data["side"]["left"])), ("right", tuple(data["side"]["right"]))),
            side_between=tuple(data["side"]["between"]),
            side_body=tuple(data["side"]["body"]),
            record_columns=frozenset(w.lower() for w in data["table"]["record_columns"]),
            previous_dose_columns=frozenset(w.lower() for w in data["table"]["previous_dose_columns"]),
            letter_greetings=tuple(data["letter"]["greetings"]),
            letter_references=tuple(data["letter"]["references"]),
            letter_closings=tuple(data["letter"]["closings"]),
            record_identifiers=tuple(data["record"]["identifiers"]),
            record_signatures=tuple(data["record"]["signatures"]),
            record_staff=tuple(data["record"]["staff"]),
            dc_forms=tuple(data["dc"]["forms"]),
            dc_discharge_after=tuple(data["dc"]["discharge_after"]),
        )
    except (OSError, tomllib.TOMLDecodeError, KeyError, TypeError) as exc:
        raise ConfigError(f"Lumen's summary vocabulary ({path}) cannot be read ({exc}).",
                          "Reinstall Lumen; the file ships with it.") from exc
