"""Facts of a discharge summary, read without a model.

A summary is split into sections by its headings, in the usual styles ("Hospital
Course:", "DISCHARGE MEDICATIONS", "1. Pneumonia:", "## Follow-up"), each with a kind
(medications, follow_up, warning_signs, restrictions, instructions, hospital_course,
diagnoses, history, results, allergies, header, other).  One-line record fields
("Attending: Cardiology") are sections of their own and never take the text after them.

From the sections come structured facts, each with its character offsets:

- medications: name, dose, route, frequency, duration or end date, and status (new,
  changed from → to, stopped, held, resume, unchanged) with the reason when written;
- follow-ups: who, when, which test;
- warning signs: when to call or come back;
- restrictions: activity, diet, fluids, bathing.

Medicine names come from the glossary's medicines, the name stems of
resources/summary_vocabulary.toml (-olol, -pril, -xaban, ...) and the lines of a
medications section.  Everything Lumen knows of units, timings, routes and status words
is in that vocabulary file.
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass, field
from typing import Any

from ..glossary.glossary import Glossary
from .vocabulary import DATE, Vocabulary, date_value, number_value, vocabulary

# ---- sections --------------------------------------------------------------------------

_TITLED = re.compile(r"^\s*(?:#{1,4}\s*)?(?P<title>[A-Za-z][A-Za-z0-9 /&(),'-]{1,60}?)\s*:\s*(?P<rest>.*)$")
_CAPS = re.compile(r"^\s*(?:#{1,4}\s*)?(?P<title>[A-Z][A-Z0-9 /&(),'-]{3,60}?)\s*:?\s*$")
_MARKDOWN = re.compile(r"^\s*#{1,4}\s+(?P<title>[A-Za-z][^\n:]{1,60}?)\s*:?\s*$")
_PROBLEM = re.compile(r"^\s*(?:#\s*|(?:\d{1,2}|[A-Za-z])[.)]\s+)(?P<title>[A-Z][A-Za-z0-9 /&(),.'-]{2,50}?)"
                      r"\s*(?::|\s[-–—]{1,2}\s)\s*(?P<rest>.*)$")
_BULLET = re.compile(r"^\s*(?:[-•*·▪◦]|\(?\d{1,2}[.)]|\[\s?\])\s+")


@dataclass
class SummarySection:
    title: str
    kind: str
    start: int  # offset of the heading (or of the first line, untitled)
    end: int
    body_start: int  # offset where the section's own text starts
    parent: str = ""  # for a numbered problem or a sub-heading: the kind of section it sits in

    @property
    def effective_kind(self) -> str:
        return self.parent if self.kind in ("problem", "other") and self.parent else self.kind

    def text(self, summary: str) -> str:
        return summary[self.body_start:self.end].strip()

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def _line_spans(text: str) -> list[tuple[int, int]]:
    spans, offset = [], 0
    for line in text.splitlines(keepends=True):
        spans.append((offset, offset + len(line.rstrip("\r\n"))))
        offset += len(line)
    return spans


def _heading(line: str, vocab: Vocabulary, inside: str) -> tuple[str, str, int] | None:
    """(title, kind, offset of the inline text) when `line` is a heading."""
    if not line.strip() or _BULLET.match(line) and not _PROBLEM.match(line):
        return None
    match = _MARKDOWN.match(line)
    if match:
        title = match.group("title").strip()
        return title, vocab.section_kind(title), len(line)
    match = _CAPS.match(line)
    if match and len(match.group("title").split()) <= 8:
        title = match.group("title").strip()
        return title, vocab.section_kind(title), len(line)
    match = _PROBLEM.match(line)
    if match and inside not in ("medications", "follow_up") and not vocab.quantity.search(
            match.group("title")):
        title = match.group("title").strip()
        kind = vocab.section_kind(title)
        return title, kind if kind != "other" else "problem", match.start("rest")
    match = _TITLED.match(line)
    if match:
        title, rest = match.group("title").strip(), match.group("rest")
        kind = vocab.section_kind(title)
        if kind == "other" and inside in _LIST_SECTIONS:
            return None  # "STOP: naproxen", "Monday: clinic" are items of the list
        words = len(title.split())
        if kind != "other" and words <= 6:
            return title, kind, match.start("rest")
        # An unknown "Title: text" is a heading only when it looks like one: few words,
        # a capital, and little text after it.
        if words <= 4 and title[0].isupper() and len(rest) < 40 and not vocab.quantity.search(title):
            return title, "other", match.start("rest")
    return None


_LIST_SECTIONS = ("medications", "follow_up", "warning_signs", "restrictions")


def split_summary(summary: str, vocab: Vocabulary | None = None) -> list[SummarySection]:
    """The sections of a summary, in order, covering all of its text."""
    vocab = vocab or vocabulary()
    sections: list[SummarySection] = []
    current: SummarySection | None = None
    major = ""  # the kind of the last non-problem section, for numbered problems
    for start, end in _line_spans(summary):
        line = summary[start:end]
        found = _heading(line, vocab, current.kind if current else "")
        if found is not None:
            title, kind, inline = found
            if current is not None:
                current.end = start
                sections.append(current)
            parent = ""
            if kind == "problem":
                parent = major or "hospital_course"
            elif kind == "other" and major and not line[inline:].strip():
                parent = major  # "Primary:" under "Discharge Diagnoses:"
            else:
                major = kind
            current = SummarySection(title, kind, start, end, start + inline, parent)
            if kind == "header" and line[inline:].strip():
                # A record field: one line; what follows it is not its text.
                sections.append(current)
                current = None
            continue
        if current is None:
            if not line.strip():
                continue
            current = SummarySection("", "other", start, end, start)
        current.end = end
    if current is not None:
        sections.append(current)
    for section in sections:
        section.end = max(section.end, section.body_start)
    return sections


# ---- facts -----------------------------------------------------------------------------


@dataclass
class Medication:
    name: str
    dose: str = ""          # as Lumen writes it: "40 mg", "5/325 mg", "2 puffs"
    route: str = ""         # normal form: "by mouth", ...
    frequency: str = ""     # normal form: "2/day", "every 4 hours", "as needed", ...
    as_needed: bool = False  # only when needed (PRN), whatever the frequency
    duration: str = ""      # "5 days"
    until: str = ""         # a date ("--06-04", "2025-06-04") or words ("follow-up")
    status: str = ""        # new, changed, stopped, held, resume, unchanged, or "" (not said)
    changed_from: str = ""
    changed_to: str = ""
    reason: str = ""
    text: str = ""          # the line or sentence it was read from
    start: int = 0
    end: int = 0
    section: str = ""

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class FollowUp:
    text: str
    who: str = ""
    when: str = ""   # a date value, or words such as "in 2 weeks"
    test: str = ""
    start: int = 0
    end: int = 0

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class WarningSign:
    text: str   # the whole sentence or line
    signs: str  # the condition itself ("chest pain, fever over 38.5 C")
    start: int = 0
    end: int = 0

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class Restriction:
    kind: str  # activity, diet, fluids, bathing
    text: str
    start: int = 0
    end: int = 0

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class SummaryFacts:
    sections: list[SummarySection] = field(default_factory=list)
    medications: list[Medication] = field(default_factory=list)
    follow_ups: list[FollowUp] = field(default_factory=list)
    warning_signs: list[WarningSign] = field(default_factory=list)
    restrictions: list[Restriction] = field(default_factory=list)

    def medication(self, name: str) -> Medication | None:
        lowered = name.lower()
        return next((m for m in self.medications if m.name.lower() == lowered), None)

    def to_dict(self) -> dict[str, Any]:
        return {"sections": [s.to_dict() for s in self.sections],
                "medications": [m.to_dict() for m in self.medications],
                "follow_ups": [f.to_dict() for f in self.follow_ups],
                "warning_signs": [w.to_dict() for w in self.warning_signs],
                "restrictions": [r.to_dict() for r in self.restrictions]}


# A full stop after a title or a title's initial ends no sentence ("Dr. Patel", "Mr. T. is").
_TITLES = ("Dr", "Mr", "Mrs", "Ms", "Prof", "St", "Drs")
_NOT_AN_END = "".join([rf"(?<!\b{t}\.)" for t in _TITLES]
                      + [rf"(?<!\b{t}\. [A-Z]\.)" for t in _TITLES])
_SENTENCE_END = re.compile(rf"(?<=[.!?]){_NOT_AN_END}\s+(?=[A-Z0-9(\"'])|\n\s*\n|"
                           r"\n(?=\s*(?:[-•*·]|\d{1,2}[.)])\s)")
_STATUS_PREFIX = re.compile(r"^\s*\(?(?P<word>new|stop(?:ped)?|discontinued?|change[d]?|"
                            r"hold|held|on hold|resume|restart|continue[d]?|unchanged|increase[d]?|"
                            r"decrease[d]?)\)?\s*[:\-–—]\s*", re.IGNORECASE)
_FROM_TO = re.compile(r"\bfrom\s+(?P<from>[^;,()]*?\d[^;,()]*?)\s+to\s+(?P<to>[^;,()]*?\d[^;,()]*?)"
                      r"(?=$|[;,()]|\s+(?:daily|once|twice|three|four|every|at|by|in|for|and|because|due))",
                      re.IGNORECASE)
_FROM_ONLY = re.compile(r"\b(?:increased|decreased|reduced|changed|raised|lowered)\s+from\s+"
                        r"(?P<from>\d[\d.,/]*\s*[A-Za-z%]+(?:\s+(?:daily|once daily|twice daily|bid|tid|"
                        r"qd|[a-z]+ a day))?)", re.IGNORECASE)
_TO_DOSE = re.compile(r"\b(?:increased|decreased|reduced|changed|raised|lowered)\s+to\s+"
                      r"(?P<to>\d[\d.,/]*\s*[A-Za-z%]+)", re.IGNORECASE)
_DURATION = re.compile(r"(?:\bx\s*|\bfor\s+(?:another\s+|a total of\s+|the next\s+|no more than\s+|"
                       r"up to\s+|at most\s+)?|\btimes\s+)"
                       r"(?P<n>\d+|one|two|three|four|five|six|seven|eight|nine|ten|fourteen)\s*"
                       r"(?:more\s+)?(?P<unit>days?|weeks?|months?|d|wks?)\b", re.IGNORECASE)
_UNTIL = re.compile(r"\b(?:until|till|through|thru)\s+(?P<what>[^;,.()]{2,60})", re.IGNORECASE)
_RESUME_ON = re.compile(r"\b(?:resume|restart)\w*\b[^;.()]*?\b(?:on|after)\s+(?P<what>[^;,.()]{2,40})",
                        re.IGNORECASE)
_REASON = re.compile(r"(?:\bfor\b|\bbecause(?: of)?\b|\bdue to\b|\bgiven\b|\bsince\b)\s+"
                     r"(?P<why>[^;.()]{3,80})", re.IGNORECASE)
_AS_NEEDED_FOR = re.compile(r"\b(?:prn|as needed|when needed|if needed)\s+(?:for\s+)?"
                            r"(?P<why>[A-Za-z][A-Za-z ,'-]{2,40}?)\s*(?:$|[;.(]|\bx\s*\d)",
                            re.IGNORECASE)
_PARENS = re.compile(r"\(([^()]{2,80})\)")
_DR = re.compile(r"\b(?:Dr\.?|Doctor)\s+(?:[A-Z][A-Za-z'-]+(?:\s+[A-Z][A-Za-z'-]+)?|_{2,})")
_WITH = re.compile(r"\bwith\s+(?:your\s+|the\s+|a\s+)?(?P<who>(?:[A-Z][\w'.-]*\s*){1,5}"
                   r"(?:clinic|Clinic|team|Team)?|[a-z]+\s+(?:clinic|team|doctor|surgeon))")
_IN_TIME = re.compile(r"\b(?:in|within|after|over the next)\s+(?:about\s+)?"
                      r"(?:\d+|one|two|three|four|five|six|seven|eight|ten|twelve)"
                      r"(?:\s*(?:-|to)\s*\d+)?\s+(?:days?|weeks?|months?)\b|\bnext week\b|\btomorrow\b"
                      r"|\b(?:on\s+)?(?:monday|tuesday|wednesday|thursday|friday|saturday|sunday)\b",
                      re.IGNORECASE)
_IF = re.compile(r"\b(?:if|when|for)\b\s+(?:you\s+(?:have|get|notice|feel|develop|see)\s+)?(?P<signs>.+)$",
                 re.IGNORECASE | re.DOTALL)
# "do not stop" says to continue; "through 02/09, then stop" ends a course (the date says it).
_NEGATED_STOP = re.compile(r"\b(?:(?:do not|don't|never|must not)\s+(?:stop|skip|miss)\w*|"
                           r"(?:then|and then)\s+(?:stop|discontinue)\w*)", re.IGNORECASE)
_CALL_IF = re.compile(r"\b(?:call|contact|phone|ring|page)\b[^.;]*?\b(?:if|for|when)\b", re.IGNORECASE)
_WAS = re.compile(r"\bwas\s+(?P<from>\d[\d.,/]*\s*[A-Za-z%]+(?:\s+(?:daily|once daily|twice daily|"
                  r"bid|tid|qd|[a-z]+ a day))?)", re.IGNORECASE)
_NAME_END = re.compile(r"\s*(?:\d|\(|\[|[-–—:,;]\s|\bx\s*\d)")


def _plain_space(text: str) -> str:
    """Display text: the source's line breaks and runs of spaces as one space."""
    return re.sub(r"\s+", " ", text).strip()


def _sentences(summary: str, start: int, end: int) -> list[tuple[int, int]]:
    """(start, end) of each sentence or list item in summary[start:end]."""
    spans, position = [], start
    text = summary[start:end]
    for match in _SENTENCE_END.finditer(text):
        piece_end = start + match.start()
        if summary[position:piece_end].strip():
            spans.append((position, piece_end))
        position = start + match.end()
    if summary[position:end].strip():
        spans.append((position, end))
    trimmed = []
    for a, b in spans:
        while a < b and summary[a].isspace():
            a += 1
        while b > a and summary[b - 1].isspace():
            b -= 1
        trimmed.append((a, b))
    return trimmed


def section_items(summary: str, section: SummarySection) -> list[tuple[int, int]]:
    """The items of a section: each line of a list (with the lines it wraps onto), and the
    sentences of a paragraph, its lines wrapped at a fixed width joined again."""
    prose = section.effective_kind not in _LIST_SECTIONS
    blocks: list[list | None] = []  # [start, end, bulleted], or None for a blank line
    for start, end in _line_spans(summary[section.body_start:section.end]):
        a, b = section.body_start + start, section.body_start + end
        line = summary[a:b]
        if not line.strip():
            blocks.append(None)
            continue
        bulleted = bool(_BULLET.match(line))
        previous = blocks[-1] if blocks else None
        if previous is not None and not bulleted:
            so_far = summary[previous[0]:previous[1]].rstrip()
            last_line = so_far.rsplit("\n", 1)[-1]
            # A line continues the one before when that one is left open (no full stop,
            # colon or semicolon) and this one reads on: lower case, or prose wrapped at
            # a fixed width.
            if not re.search(r"[.!?:;]$", so_far) and (
                    line.lstrip()[:1].islower() or (prose and len(last_line) >= 50)
                    or (previous[2] and line[:1].isspace())):
                previous[1] = b
                continue
        lead = len(line) - len(line.lstrip())
        blocks.append([a + lead, b, bulleted])
    spans = []
    for block in blocks:
        if block is None:
            continue
        a, b, bulleted = block
        # Running text is cut into sentences; a list item stays whole unless it runs on.
        if not bulleted and (prose or b - a > 160):
            spans.extend(_sentences(summary, a, b))
        else:
            spans.append((a, b))
    return spans


def medicine_names(text: str, glossary: Glossary | None,
                   vocab: Vocabulary | None = None) -> list[tuple[int, int, str, str]]:
    """(start, end, name as written, key) of every medicine named in `text`: by the
    glossary (key: its entry, so a brand and its generic name agree), then by name stem or
    the vocabulary's medicine names (key: the name in lower case)."""
    vocab = vocab or vocabulary()
    found: list[tuple[int, int, str, str]] = []
    if glossary is not None:
        for match in glossary.match(text):
            # The glossary files dose forms (tablet, capsule) as medications too.
            if match.category == "medication" and match.text.lower() not in vocab.units:
                found.append((match.start, match.end, match.text, match.key))
    for match in vocab.stem_word.finditer(text):
        if vocab.is_medicine_word(match.group(0)) and not any(
                s <= match.start() < e for s, e, _, _ in found):
            found.append((match.start(), match.end(), match.group(0), match.group(0).lower()))
    return sorted(found)


def medicine_kinds(name: str, key: str, glossary: Glossary | None) -> set[str]:
    """The kinds of medicine (summary_vocabulary.toml [[medicine_kind]]) a medicine named
    `name` (glossary key `key`) is of: by its glossary topic, definition or name stem."""
    entry = glossary.by_key.get(key) if glossary is not None else None
    topic, definition = (entry.medlineplus_title, entry.definition) if entry else ("", "")
    return {kind.kind for kind in vocabulary().medicine_kinds
            if kind.includes(name, topic, definition)}


def medicines_of_kinds(kinds: set[str], text: str, glossary: Glossary | None
                       ) -> list[tuple[int, int, str, str]]:
    """The medicines `text` names (as medicine_names gives them) of any of `kinds`."""
    return [found for found in medicine_names(text, glossary)
            if kinds & medicine_kinds(found[2], found[3], glossary)]


def _quantity_text(number: str, unit_form: str, vocab: Vocabulary) -> str:
    term = vocab.units[unit_form.lower()]
    if "/" not in number:
        value = number_value(number)
        number = f"{value:g}"
    return f"{number} {term.plain}"


def _first_dose(text: str, vocab: Vocabulary) -> tuple[str, re.Match | None]:
    for match in vocab.quantity.finditer(text):
        if vocab.units[match.group(2).lower()].value in vocab.dose_units:
            return _quantity_text(match.group(1), match.group(2), vocab), match
    return "", None


def _status(text: str, vocab: Vocabulary) -> str:
    """The status a line states: its prefix ("STOP:") first, else its words, where a longer
    phrase hides the words inside it ("no change" is not "change") and, between phrases
    that do not overlap, the vocabulary's order decides ("hold" before "stop")."""
    text = _NEGATED_STOP.sub(" ", text)  # "do not stop" says to continue
    prefix = _STATUS_PREFIX.match(text)
    for candidate in ([prefix.group("word")] if prefix else []) + [text]:
        found = [(m.start(1), m.end(1), rank, value)
                 for rank, (value, _plain, pattern) in enumerate(vocab.status_patterns)
                 for m in pattern.finditer(candidate)]
        kept = [f for f in found if not any(o[0] <= f[0] and f[1] <= o[1] and o[1] - o[0] > f[1] - f[0]
                                            for o in found)]
        if kept:
            return min(kept, key=lambda f: f[2])[3]
    return ""


def _until(text: str) -> str:
    match = _UNTIL.search(text) or _RESUME_ON.search(text)
    if not match:
        return ""
    what = match.group("what").strip()
    date = next((date_value(m) for m in DATE.finditer(what) if date_value(m)), None)
    return date or what


def _reason(text: str, vocab: Vocabulary) -> str:
    for inside in [re.sub(r"^\s*(?:for|because of|due to)\s+", "", part, flags=re.IGNORECASE)
                   for group in _PARENS.findall(text) for part in re.split(r"[;,]", group)]:
        lowered = inside.lower().strip()
        if (lowered.startswith("was ") and _WAS.match(lowered)) or _NEGATED_STOP.search(lowered):
            continue
        if (vocab.quantity.search(inside) or DATE.search(inside) or vocab.frequency.search(inside)
                or _status(inside, vocab) or lowered.startswith(("until", "through", "x "))):
            continue
        return inside.strip()
    match = _REASON.search(text)
    if match:
        why = match.group("why").strip()
        # "for 5 days" is a duration, "for pain" a reason.
        if not re.match(r"(?:another\s+|a total of\s+|the next\s+|no more than\s+|up to\s+|"
                        r"at most\s+)?\d|\w+\s+(?:days?|weeks?)\b", why):
            return re.split(r"\s+(?:x\s*\d|until|then)\b", why)[0].strip()
    match = _AS_NEEDED_FOR.search(text)
    return match.group("why").strip() if match else ""


def _medication(text: str, start: int, end: int, section: str, glossary: Glossary | None,
                vocab: Vocabulary, *, in_list: bool) -> Medication | None:
    """A medication read from one line or sentence, or None."""
    body = _BULLET.sub("", text, count=1)
    offset = len(text) - len(body)
    prefix = _STATUS_PREFIX.match(body)
    named = body[prefix.end():] if prefix else body
    names = medicine_names(named, glossary, vocab)
    if names:
        name = names[0][2]
    elif in_list:
        # In a medications list, the words before the dose are the name.
        cut = _NAME_END.search(named)
        name = named[:cut.start()].strip() if cut else named.strip()
        if not name or len(name.split()) > 5 or not re.search(r"[A-Za-z]{3}", name) or \
                not (vocab.quantity.search(named) or vocab.frequency.search(named)):
            return None
    else:
        return None
    name = re.sub(r"\s+", " ", name).strip(" -–—:,;")
    dose, dose_match = _first_dose(named, vocab)
    route = vocab.route.search(named)
    timings = [vocab.frequencies[m.group(1).lower()].value for m in vocab.frequency.finditer(named)]
    regular = [t for t in timings if t != "as needed"]
    duration = _DURATION.search(named)
    changed = _FROM_TO.search(named)
    to_dose = _TO_DOSE.search(named)
    status = _status(body, vocab)
    medication = Medication(
        name=name, dose=dose,
        route=vocab.routes[route.group(1).lower()].value if route else "",
        frequency=regular[0] if regular else (timings[0] if timings else ""),
        as_needed="as needed" in timings,
        duration=(f"{number_value(duration.group('n')):g} "
                  f"{_unit_word(duration.group('unit'), number_value(duration.group('n')))}"
                  if duration else ""),
        until=_until(named), status=status, reason=_reason(named, vocab),
        text=_plain_space(text), start=start + offset, end=end, section=section)
    if changed:
        medication.status = medication.status or "changed"
        medication.changed_from = changed.group("from").strip()
        medication.changed_to = changed.group("to").strip()
    elif to_dose:
        medication.status = medication.status or "changed"
        medication.changed_to = to_dose.group("to").strip()
    elif _FROM_ONLY.search(named):
        medication.status = medication.status or "changed"
        medication.changed_from = _FROM_ONLY.search(named).group("from").strip()
        medication.changed_to = dose
    elif _WAS.search(named) and medication.status in ("", "changed"):
        medication.status = "changed"
        medication.changed_from = _WAS.search(named).group("from").strip()
        medication.changed_to = dose
    if medication.status == "changed" and medication.changed_to and not dose_match:
        medication.dose = medication.changed_to
    return medication


def _medications_in_sentence(summary: str, start: int, end: int, section: str,
                             glossary: Glossary | None, vocab: Vocabulary) -> list[Medication]:
    """Medicines a sentence of running text says what to do with: each named medicine's
    part of the sentence (from its name to the next one) with the words before the first
    name ("Stop taking ... and ..."), counted when it gives a status, or a dose with its
    timing."""
    text = summary[start:end]
    names = medicine_names(text, glossary, vocab)
    lead = text[:names[0][0]] if names else ""
    found = []
    for index, (name_start, _name_end, _name, _key) in enumerate(names):
        part_end = names[index + 1][0] if index + 1 < len(names) else len(text)
        part = text[name_start:part_end]
        medication = _medication(part, start + name_start, start + part_end, section, glossary,
                                 vocab, in_list=False)
        if medication is None:
            continue
        medication.status = medication.status or _status(lead, vocab)
        medication.reason = re.sub(r"\s*(?:,|\band\b|\bor\b)\s*$", "", medication.reason)
        medication.text = _plain_space(text)
        if medication.status or (medication.dose and medication.frequency):
            found.append(medication)
    return found


def _unit_word(unit: str, count: float) -> str:
    base = {"d": "day", "wk": "week", "wks": "week"}.get(unit.lower(), unit.lower().rstrip("s"))
    return base if count == 1 else base + "s"


def _merge(medications: list[Medication], new: Medication) -> None:
    """Add `new`, or fill what an earlier mention of the same medicine left unsaid."""
    for known in medications:
        if known.name.lower() == new.name.lower():
            for key in ("dose", "route", "frequency", "duration", "until", "status",
                        "changed_from", "changed_to", "reason"):
                if not getattr(known, key) and getattr(new, key):
                    setattr(known, key, getattr(new, key))
            return
    medications.append(new)


def _follow_up(text: str, start: int, end: int, vocab: Vocabulary) -> FollowUp:
    who: list[str] = []
    for word in sorted(vocab.follow_up_who, key=len, reverse=True):
        hit = re.search(rf"(?<!\w)(?:[A-Z][a-z]+\s+)?(?i:{re.escape(word)})(?i:\s+clinic)?(?!\w)",
                        text)
        if hit and not word.startswith("dr"):
            who.append(text[hit.start():hit.end()])
            break
    doctor = _DR.search(text)
    if doctor:
        who.append(doctor.group(0))
    elif not who:
        named = _WITH.search(text)
        if named:
            who.append(named.group("who"))
    who_text = ", ".join(dict.fromkeys(w.strip().rstrip(".,;") for w in who))
    dates = [date_value(m) for m in DATE.finditer(text) if date_value(m)]
    when = dates[0] if dates else ""
    if not when:
        relative = _IN_TIME.search(text)
        when = relative.group(0).strip() if relative else ""
    test = vocab.follow_up_test.search(text)
    return FollowUp(_plain_space(text), who_text, when,
                    test.group(1) if test else "", start, end)


def _warning(text: str, start: int, end: int, in_list: bool) -> WarningSign:
    body = _plain_space(_BULLET.sub("", text, count=1))
    condition = _IF.search(body)
    signs = condition.group("signs") if condition and not in_list else body
    if in_list and condition and body.lower().startswith(("call", "return", "come", "seek", "go ")):
        signs = condition.group("signs")
    return WarningSign(body, re.sub(r"\s+", " ", signs).strip().rstrip("."), start, end)


def _restriction_kind(text: str, vocab: Vocabulary) -> str:
    """The kind whose word comes first in `text` ('' when none)."""
    found = [(m.start(), kind) for kind, pattern in vocab.restriction_patterns
             for m in [pattern.search(text)] if m]
    return min(found)[1] if found else ""


_FACT_SECTIONS = ("medications", "follow_up", "warning_signs", "restrictions", "instructions",
                  "other")


def read_summary(summary: str, glossary: Glossary | None = None) -> SummaryFacts:
    """Every section and fact of `summary`, with offsets into it."""
    vocab = vocabulary()
    facts = SummaryFacts(sections=split_summary(summary, vocab))
    for section in facts.sections:
        kind = section.effective_kind
        if kind == "medications":
            # A sub-heading such as "Medicines to stop:" gives the lines under it a status.
            listed_status = _status(section.title, vocab)
            for a, b in section_items(summary, section):
                line = summary[a:b]
                medication = _medication(line, a, b, section.title, glossary, vocab,
                                         in_list=True)
                if medication is None:
                    if line.rstrip().endswith(":"):
                        listed_status = _status(line, vocab)
                    continue
                medication.status = medication.status or listed_status
                _merge(facts.medications, medication)
            continue
        if kind == "follow_up":
            facts.follow_ups += [_follow_up(summary[a:b], a, b, vocab)
                                 for a, b in section_items(summary, section)
                                 if re.search(r"[A-Za-z]{3}", summary[a:b])]
            continue
        if kind == "warning_signs":
            facts.warning_signs += [_warning(summary[a:b], a, b, True)
                                    for a, b in section_items(summary, section)]
            continue
        if kind == "restrictions":
            for a, b in section_items(summary, section):
                text = _BULLET.sub("", summary[a:b], count=1).strip()
                facts.restrictions.append(Restriction(
                    _restriction_kind(text, vocab) or _restriction_kind(section.title, vocab)
                    or "activity", _plain_space(text), a, b))
            continue
        if kind not in _FACT_SECTIONS:
            continue  # history, course, results: what happened, not what to do now
        for a, b in _sentences(summary, section.body_start, section.end):
            text = summary[a:b]
            if vocab.warning_cue.search(text) or _CALL_IF.search(text):
                facts.warning_signs.append(_warning(text, a, b, False))
            elif vocab.follow_up_cue.search(text) and (
                    DATE.search(text) or _IN_TIME.search(text) or vocab.follow_up_test.search(text)
                    or _DR.search(text)):
                facts.follow_ups.append(_follow_up(text, a, b, vocab))
            elif _restriction_kind(text, vocab) and not medicine_names(text, glossary, vocab) \
                    and (kind == "instructions" or vocab.restriction_cue.search(text)):
                facts.restrictions.append(Restriction(_restriction_kind(text, vocab),
                                                      _plain_space(_BULLET.sub("", text, count=1)),
                                                      a, b))
            for medication in _medications_in_sentence(summary, a, b, section.title, glossary,
                                                       vocab):
                _merge(facts.medications, medication)
    return facts
