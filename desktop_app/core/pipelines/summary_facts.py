"""Facts of a discharge summary, read without a model.

A summary is split into sections by its headings in the styles hospitals use ("Hospital
Course:", "DISCHARGE MEDICATIONS", "1. Pneumonia:", "## Follow-up", "Discharge
medications" alone on its line, "S:" of a progress note, a dictated run-on's
"MEDICATIONS:,1. ...,2. ..."), each with a kind (medications, follow_up, warning_signs,
restrictions, instructions, for_doctor, hospital_course, diagnoses, history, results,
allergies, header, and the two that hold no patient content: letter (a letter's head,
greeting, closing, signature) and identifier (MRN, DOB, NHS number)).  One-line record
fields ("Attending: Cardiology") never take the text after them; a table's header row
names its columns and is never a fact.

From the sections come structured facts, each with its character offsets:

- medications: name, strength and count, route, frequency, clock time, daily maximum,
  duration or end date, status (new, changed from → to, stopped, held, resume,
  unchanged) from the medicine's own clause, the label it sat under, the reason, and
  `doubt` where its status can only be guessed from another medicine's words; a dose that
  changes on a schedule is one medication per step;
- follow-ups: who, when, which test;
- warning signs: when to call or come back;
- restrictions: activity, diet, fluids, bathing, medicines (what not to take).

Medicine names come from the glossary's medicines, the name stems and names of
resources/summary_vocabulary.toml (-olol, -pril, -xaban, co-amoxiclav, ...) and the lines
of a medications section.  Units, timings, routes, status words, headings, table columns,
letter and record cues are in that vocabulary file; the patterns of how they combine in a
sentence are here.  `patient_text` takes the record's fields out of what a patient is
shown.  tests/data/layouts holds the summaries it is measured on (bench/bench_facts.py).
"""

from __future__ import annotations

import dataclasses
import re
from dataclasses import asdict, dataclass, field, replace
from typing import Any

from ..glossary.glossary import Glossary
from ..glossary.matcher import GlossaryMatch
from ..glossary.names import DOSE_FORM_SHORTHAND, ends_no_sentence
from .vocabulary import (DATE, NUMBER_WORDS, SALT_WORD, SLOT_FREQUENCIES, SLOTS, Vocabulary,
                         date_order_of, date_value, number_value, slots_count, vocabulary)

# ---- sections --------------------------------------------------------------------------

_TITLED = re.compile(r"^\s*(?:#{1,4}\s*)?(?P<title>[A-Za-z][A-Za-z0-9 /&(),'-]{1,80}?)\s*:\s*(?P<rest>.*)$")
_CAPS = re.compile(r"^\s*(?:#{1,4}\s*)?(?P<title>[A-Z][A-Z0-9 /&(),'-]{3,90}?)\s*:?\s*$")
_MARKDOWN = re.compile(r"^\s*#{1,4}\s+(?P<title>[A-Za-z][^\n:]{1,60}?)\s*:?\s*$")
_PROBLEM = re.compile(r"^\s*(?:#\s*|(?:\d{1,2}|[A-Za-z])[.)]\s+)(?P<title>[A-Z][A-Za-z0-9 /&(),.'-]{2,50}?)"
                      r"\s*(?::|\s[-–—]{1,2}\s)\s*(?P<rest>.*)$")
# A list item's mark at a line's start: a dash, a bullet, "1." or "(1)", a checkbox.
LIST_ITEM = re.compile(r"^\s*(?:[-•*·▪◦]|\(?\d{1,2}[.)]|\[\s?\])\s+")
# A progress note's parts: "S:", "O:", "A:", "P:", "A/P:".
_SOAP = re.compile(r"^\s*(?P<title>[SOAP]|A\s?/\s?P|A\s?&\s?P)\s*:\s*(?P<rest>.*)$")
# A numbered line that is only a title ("5. Transfusional iron overload").
_NUMBERED_TITLE = re.compile(r"^\s*\d{1,2}[.)]\s+(?P<title>[A-Z][A-Za-z0-9 /&(),.'-]{2,60}?)\s*$")
# A heading by its shape alone: a short line, no colon, no full stop ("Discharge medications").
_SHAPED = re.compile(r"^\s*(?:#{1,4}\s*)?(?P<title>[A-Z][A-Za-z0-9 /&(),'-]{1,60}?)\s*$")
_BANNER = re.compile(r"^\s*[=*~#-]{3,}\s*(?P<title>[A-Za-z][A-Za-z0-9 /&(),'-]{1,60}?)\s*[=*~#-]{3,}\s*$")
# A long lead-in to a list of warning signs, ending "if", "for" or "when"
_WARNING_LEAD_IN = re.compile(r"^\s*(?P<title>[A-Z][A-Za-z0-9 /&(),'-]{1,120}?\b(?:if|for|when)"
                              r"(?:\s+(?:[A-Z][a-z]+|he|she|they|you|your child|your baby)"
                              r"(?:\s+(?:has|have|gets?|notices?|develops?|sees?))?)?)\s*:?\s*$")
# A letter's greeting and closing (resources/summary_vocabulary.toml [letter]).
_TABLE_ROW = re.compile(r"^\s*\|.*\|\s*$|^[^|\n]+(?:\|[^|\n]*){2,}$")
_TABLE_RULE = re.compile(r"^\s*\|?\s*:?-{2,}:?\s*(?:[|+]\s*:?-{2,}:?\s*)*\|?\s*$")

# Sections that hold the writer's and the record's matter, never what the patient is told.
NOT_CONTENT = ("letter", "identifier")
# A record field ("Attending: Cardiology") is one line: the text after it is not its own.
_ONE_LINE = ("header", "identifier", "letter")


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

    @property
    def is_content(self) -> bool:
        """Whether the section says something to or about the patient's care (not a
        letter's greeting or signature, nor an identifier of the record)."""
        return self.kind not in NOT_CONTENT

    def text(self, summary: str) -> str:
        return summary[self.body_start:self.end].strip()

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


# Dictated notes whose line breaks were turned into commas ("MEDICATIONS:,1. X.,2. Y.")
_RUN_ON_LINE = re.compile(r"[.:;]\s*,\s*\S|[A-Za-z)],\d{1,2}[.)]\s")  # (also "...high-resolution CT,2. Acute")
_RUN_ON_CUT = re.compile(r"(?<=:)\s*,\s*(?=\S)|(?<=[.;])\s*,\s*(?=[A-Z0-9(\[])|,\s*(?=\d{1,2}[.)]\s)"
                         r"|,\s*(?=[A-Z][A-Z0-9 /&()'#-]{2,60}:)|,+\s*(?=[A-Z]{1,3}\s*:\s*\S)")
# A dictation's stamps: "D: 02/10/2025 15:12" (dictated), "T: ..." (transcribed).
_DICTATION = re.compile(r"^\s*(?P<title>[DT])\s*:\s*(?=\d)")


# A heading at the end of a paragraph's line, over a list: "... until then. Discharge insulin plan:"
# (not after "Dr.", nor a sentence: "We advised him to:")
_TRAILING_TITLE = re.compile(r"(?<=[a-z]{3}[.!?])\s+(?!(?:We|He|She|You|They|I|It|This|Please)\b)"
                             r"(?=[A-Z][A-Za-z /&'-]{2,50}:\s*$)")
_LIST_LINE_NEXT = re.compile(r"\s*(?:[-*•]|\d{1,2}[.)])\s")


def _line_spans(text: str) -> list[tuple[int, int]]:
    """(start, end) of each line of `text`, without its line break; a line of a dictated
    run-on ("HEADING:,text.,1. item,2. item") is cut where its line breaks once were, and
    a heading that ends a paragraph's line over a list is a line of its own."""
    spans, offset = [], 0
    for line in text.splitlines(keepends=True):
        body = line.rstrip("\r\n")
        trailing = _TRAILING_TITLE.search(body)
        if trailing and _LIST_LINE_NEXT.match(text, offset + len(line)):
            spans += [(offset, offset + trailing.start()), (offset + trailing.end(), offset + len(body))]
        elif _RUN_ON_LINE.search(body):
            position = 0
            for cut in _RUN_ON_CUT.finditer(body):
                if re.search(r"(?<![A-Za-z])(?:[A-Za-z]\.){2,}$", body[:cut.start()]) and not \
                        re.match(r"\d{1,2}[.)]\s|[A-Z][A-Z0-9 /&()'-]{2,60}:", body[cut.end():]):
                    continue  # "t.i.d., DISCONTINUE": the comma after shorthand is a comma
                if body[position:cut.start()].strip():
                    spans.append((offset + position, offset + cut.start()))
                position = cut.end()
            if body[position:].strip() or not spans:
                spans.append((offset + position, offset + len(body)))
        else:
            spans.append((offset, offset + len(body)))
        offset += len(line)
    return spans


def _reads_as_item(title: str, vocab: Vocabulary) -> bool:
    """A line that states a dose, a timing or a medicine is a list item, not a heading
    ("LITHIUM SAFETY" names a medicine and is a heading)."""
    if vocab.names_a_medicine_topic(title):
        return False
    return bool(vocab.quantity.search(title)
                or vocab.route.search(title) and vocab.section_kind(title) == "other"  # not "MEDICATIONS VIA PEG"
                or any(vocab.is_medicine_word(m.group(0)) for m in vocab.stem_word.finditer(title)))


def _says_what_to_do_with_a_medicine(title: str, vocab: Vocabulary) -> bool:
    """"4. Omeprazole discontinued - no ongoing indication" is a plan's line, not a problem."""
    return bool(_status(title, vocab)) and any(vocab.is_medicine_word(m.group(0))
                                               for m in vocab.stem_word.finditer(title))


def _heading(line: str, vocab: Vocabulary, inside: str, *, shouting: bool = False,
             next_line: str = "", after_blank: bool = True) -> tuple[str, str, int] | None:
    """(title, kind, offset of the inline text) when `line` is a heading.  `next_line` is
    the next line with text, `after_blank` whether a blank line (or the start) comes
    before; `shouting` whether the summary is written in capitals, where capitals alone
    do not make a heading.

    Long: every heading layout the parser knows, tried in one ordered pass (the order
    decides)."""
    numbered = _NUMBERED_TITLE.match(line)
    if (numbered and inside not in ("medications", "follow_up") and LIST_ITEM.match(next_line)
            and next_line[:1].isspace() and not vocab.quantity.search(numbered.group("title"))):
        # "5. Transfusional iron overload" over indented "- ..." lines: a problem
        title = numbered.group("title").strip()
        kind = vocab.section_kind(title)
        return title, kind if kind != "other" else "problem", len(line)
    if not line.strip() or LIST_ITEM.match(line) and not _PROBLEM.match(line):
        return None
    if _TABLE_ROW.match(line) or _TABLE_RULE.match(line) or _is_table_header(line, "", vocab) or (
            len(re.split(r"\s{2,}", line.strip())) >= 4 and not re.search(r":\s", line)):
        # ("DRUG      DOSE     ROUTE     FREQ", "Date     Cr    WBC    CRP (mg/L)": a table's
        # header laid out with spaces)
        return None
    if not after_blank and len(line) - len(line.lstrip()) >= 20:
        return None  # a table's cell wrapped far to the right, under the row above
    banner = _BANNER.match(line)
    if banner:  # "==================== MEDICATION CHANGES ===================="
        return banner.group("title"), vocab.section_kind(banner.group("title")), len(line)
    match = _DICTATION.match(line)
    if match:
        return match.group("title"), "letter", len(line)
    match = _SOAP.match(line)
    if match:
        title = re.sub(r"\s", "", match.group("title"))
        return title, vocab.section_kind(title), match.start("rest")
    match = _PROBLEM.match(line)
    if match and line.lstrip().startswith("#") and inside not in ("medications", "follow_up"):
        title = match.group("title").strip()
        kind = vocab.section_kind(title)
        if inside in ("hospital_course", "problem") and line[match.start("rest"):].strip():
            # "# Feeding/hydration: took poor volumes on day 1 ..." in the course is a
            # problem of the stay, whatever its title's words would name elsewhere.
            kind = "problem"
        return title, kind if kind != "other" else "problem", match.start("rest")
    match = re.match(r"^\s*#(?P<title>[A-Z][^\n:]{1,60}?)\s*$", line)
    if match and inside in ("instructions", "problem", "hospital_course") and LIST_ITEM.match(next_line):
        # "#Tobacco use, 1 ppd" over its plan's "- ..." lines: a problem of a plan by problems
        title = match.group("title").strip()
        kind = vocab.section_kind(title)
        return title, kind if kind != "other" else "problem", len(line)
    match = _MARKDOWN.match(line)
    if match:
        title = match.group("title").strip()
        return title, vocab.section_kind(title), len(line)
    aside = re.match(r"^(?P<head>[^()]+?)\s*\([^()]{2,80}\)\s*:?\s*$", line)
    if aside and (_CAPS.match(aside.group("head")) and vocab.section_kind(aside.group("head")) != "other"
                  or _SHAPED.match(aside.group("head"))
                  and vocab.section_kind(aside.group("head"), exact=True) != "other"):
        # "MEDICATIONS ON DISCHARGE (14 days supplied; dosette by community pharmacy)",
        # "Return precautions (reviewed with the patient, teach-back done):"
        return line.strip().rstrip(":").strip(), vocab.section_kind(aside.group("head")), len(line)
    bracketed = re.sub(r"\s*\([^()]{2,60}\)", "", line)
    if bracketed != line and _CAPS.match(bracketed) and vocab.section_kind(bracketed.strip().rstrip(":")) \
            == "warning_signs" and line.rstrip().endswith(":"):
        # "RETURN TO ED OR RING THE IBD ADVICE LINE (01632 960742, Mon-Fri 9-5) IF:"
        return line.strip().rstrip(":").strip(), "warning_signs", len(line)
    match = _CAPS.match(line)
    if match and (len(match.group("title").split()) <= 8 or len(match.group("title").split()) <= 12
                  and vocab.section_kind(match.group("title")) != "other") \
            and not _reads_as_item(match.group("title"), vocab):
        title = match.group("title").strip()
        kind = vocab.section_kind(title)
        if not shouting or kind != "other" or line.rstrip().endswith(":"):
            return title, kind, len(line)
    match = _PROBLEM.match(line)
    # ("2. TYPE 2 DM - UNCONTROLLED (HBA1C 11.4%), NO DKA" in a list of diagnoses is one of
    # them; "5. Chemotherapy plan - Discussed with Dr. A. Cycle 3 delayed ..." a problem's story)
    listed = inside == "diagnoses" and match is not None and len(match.group("rest").split()) <= 12 \
        and not re.search(r"[.!?]\s+[A-Z]", match.group("rest"))
    if match and inside not in ("medications", "follow_up") and not listed and not vocab.quantity.search(
            match.group("title")) and not _says_what_to_do_with_a_medicine(match.group("title"), vocab):
        title = match.group("title").strip()
        kind = vocab.section_kind(title)
        return title, kind if kind != "other" else "problem", match.start("rest")
    match = _TITLED.match(line)
    if match:
        title, rest = match.group("title").strip(), match.group("rest")
        kind = vocab.section_kind(title)
        if title[:1].islower() and not any(title.lower() == heading for _kind, _plain, headings
                                           in vocab.sections for heading in headings):
            return None  # "... Repeat on 19/02\nafter medication changes: drop 12/4": prose
        if kind == "other" and inside in _LIST_SECTIONS:
            return None  # "STOP: naproxen", "Monday: clinic" are items of the list
        if kind == "header" and inside == "medications" and not after_blank:
            return None  # "Weight used for doses: 16.4 kg." right under the list's heading
        if kind == "medications" and inside == "medications" and any(
                vocab.is_medicine_word(word) for word in title.split()):
            return None  # "Prednisone taper:" over its steps, in the list of medicines
        words = len(title.split())
        # ("She knows to call the IBD Advice Line, or NHS 24 on 111 out of hours, or 999 in an
        # emergency, if she has:" over its list)
        long_lead = re.search(r"\b(?:if|for|when)(?:\s+(?:she|he|they|you|your child|the patient)\s+"
                              r"(?:has|have|gets?|notices?|develops?|is|are))?\s*$", title, re.IGNORECASE)
        if kind != "other" and (words <= 6 or words <= 10 and not rest.strip()
                                or kind == "warning_signs" and words <= (30 if long_lead else 20) and not rest.strip()):
            return title, kind, match.start("rest")
        # An unknown "Title: text" is a heading only when it looks like one: few words,
        # a capital, and little text after it.
        if words <= 4 and title[0].isupper() and len(rest) < 40 and not vocab.quantity.search(title):
            return title, "other", match.start("rest")
        return None
    lead_in = _WARNING_LEAD_IN.match(line)
    if lead_in and after_blank and LIST_ITEM.match(next_line) and len(lead_in.group("title").split()) <= 30 \
            and vocab.section_kind(lead_in.group("title"), exact=True) == "warning_signs":
        # "See your GP urgently or return to the Emergency Department (call 000 in an
        # emergency) if" over its list
        return lead_in.group("title"), "warning_signs", len(line)
    match = _SHAPED.match(line)
    if match and next_line.strip() and not line.rstrip().endswith((",", ";")):
        # A short line of its own followed by text: a heading when the vocabulary names it
        # ("Discharge medications", "Wound care"), or when it stands after a blank line
        # and reads like one (few words, no number, no dose, no medicine).
        title = match.group("title").strip()
        kind = vocab.section_kind(title, exact=True)
        if kind == "other" and re.match(r"when to (?:call|get|seek|go|return|come|phone|ring|contact)\b", title,
                                        re.IGNORECASE):
            kind = "warning_signs"  # "When to call 911", "When to call the Neurology office"
        if kind != "other" and (len(title.split()) <= 8 or kind == "warning_signs" and after_blank
                                and len(title.split()) <= 14) and not _reads_as_item(title, vocab):
            # "Call your doctor or go to the emergency department for" over its list
            return title, kind, len(line)
        if kind == "medications" and after_blank and re.search(
                r"\b(?:plan|schedule|taper|dosing|regimen)$", title, re.IGNORECASE):
            return title, kind, len(line)  # "Amantadine plan" over the steps of its dose
        parts = [part for part in re.split(r"\s+(?:and|&)\s+", title)
                 if vocab.section_kind(part, exact=True) != "other" and not _reads_as_item(part, vocab)]
        if (kind == "other" and after_blank and parts and " and " in f" {title.lower()} "
                and len(title.split()) <= 8 and not vocab.quantity.search(title)
                and vocab.section_kind(title) != "other"):  # (not a letterhead's "Department of ...")
            # "Daily Weights and Furosemide Plan", "Daycare and activity": a part names the
            # section (the last such part), though another names a medicine (which alone
            # would make it a list's line) or nothing the vocabulary knows
            return title, vocab.section_kind(parts[-1], exact=True), len(line)
        if (after_blank and not shouting
                and len(title.split()) <= 6 and not re.search(r"\d", title)
                and not _reads_as_item(title, vocab) and not next_line[:1].islower()
                and not next_line.lstrip()[:1].islower()):
            return title, "other", len(line)
    return None


_LIST_SECTIONS = ("medications", "follow_up", "warning_signs", "restrictions")


def _shouting(summary: str) -> bool:
    """Whether the summary is written in capitals (some hospitals print them so)."""
    letters = [c for c in summary if c.isalpha()]
    return len(letters) > 40 and sum(c.isupper() for c in letters) > 0.7 * len(letters)


def _starts_with(line: str, phrases: tuple[str, ...]) -> bool:
    lowered = line.strip().lower()
    return any(lowered == p or lowered.startswith((p + " ", p + ",", p + ":")) for p in phrases)


def _letter_closing(summary: str, spans: list[tuple[int, int]], vocab: Vocabulary) -> int | None:
    """The index of the line that closes a letter ("Yours sincerely,"): it and all after it
    (signature, copies) are the letter's, not the patient's."""
    for index, (start, end) in enumerate(spans):
        line = summary[start:end]
        if (start > 0.4 * len(summary) and len(line.split()) <= 8
                and _starts_with(line.rstrip(",. "), vocab.letter_closings)):
            return index
    return None


def _is_greeting(line: str, vocab: Vocabulary) -> bool:
    return len(line.split()) <= 8 and _starts_with(line, vocab.letter_greetings) and not \
        line.rstrip().endswith(".")


_DEMOGRAPHIC = re.compile(r"\b(?:y/?o|yo|yrs?|years?|old|year-old|female|male|woman|man|girl|boy|"
                          r"sex|age|f|m|patient|pt|name|ward|bed|room|no|number|id)\b|[\d/#:x.,()-]+",
                          re.IGNORECASE)


# A clinician's name with a credential or post: "L. Haverford, MD, PGY-3 OB/GYN",
# "Dr T. Ngata, Surgical Registrar", "Resident: Priya Aldana-Moss, MD (PGY-2)".
_CREDENTIAL = (r"(?:MD|M\.D\.|DO|PA-C|PA|NP|RN|MBBS|MBChB|MB BCh|FRCP|FRCS|FRACP|FRACS|MRCP|PhD|CNS|"
               r"PGY-?\d|FY\d|SHO|SpR|StR|ST\d|CT\d|MPharm|PharmD|RPh|[Rr]egistrar|[Cc]onsultant|[Rr]esident|[Ff]ellow|[Hh]ouse [Oo]fficer|"
               r"[Nn]urse [Pp]ractitioner|[Pp]hysician [Aa]ssistant|[Hh]ospitalist|[Aa]ttending)")
_SIGNATURE = re.compile(rf"^\s*(?:[A-Za-z ]{{2,30}}:\s*)?(?:(?i:Dr|Mr|Mrs|Ms|Prof)\.?\s+)?(?:[A-Z][\w.'’-]*\s+){{0,3}}"
                        rf"[A-Z][\w'’-]+,?\s+(?:[A-Z][\w.'-]*,?\s+)?(?i:{_CREDENTIAL})\b")  # (capitals too)
# "Printed 04/30/2025 15:47 by user xxxxxx", "Time spent on discharge: 45 minutes"
_STAMP = re.compile(r"\bprinted\s+\d{1,2}/\d{1,2}/\d{2,4}\b.*\bby\b|^\s*(?:total\s+)?time spent\b|"
                    r"\belectronically signed\b|^\s*cop(?:y|ies) to\b|"
                    # "eDS sent electronically to GP via ...", "Typed 19/03/2025 (kp) cc: GP"
                    r"\b(?:sent|transmitted)\s+electronically\b|"
                    r"^\s*(?:typed|dictated|transcribed)\s+\d{1,2}[/.-]\d{1,2}[/.-]\d{2,4}\b", re.IGNORECASE)


# Record fields that are also words of a sentence ("the emergency room", "ext"): dropped only
# with a value or a colon.
_FIELD_WORDS = re.compile(r"room|rm|ext|extension|fin|chi|ur|medicare|bleep|pager|health card|ip",
                          re.IGNORECASE)
# A ward's or bed's number after the unit it belongs to ("Female Medical Ward, Bed 9",
# "Surgical Unit B, Ward 14"): the record's, not the patient's.
_BED_NUMBER = re.compile(r"(?:,\s*|(?<=^)|(?<=\n))(?-i:Ward|Bed|WARD|BED)(?:\s+(?:No\.?|Number))?\s*\d+[A-Z]?\b"
                         # and the record's field "Ward: Surgical Ward B, Bed No. 12", whole
                         r"|^[ \t]*(?-i:Ward|Bed|WARD|BED)(?:\s+No\.?)?[ \t]*:[^\n]*", re.MULTILINE)


def patient_text(text: str, vocab: Vocabulary | None = None) -> str:
    """`text` without the record's fields it holds: identifiers with their values ("MRN:
    000-00-0000", "(DOB xx/xx/1940, NHS No 000 000 0000)") and clinicians' names in staff
    fields ("Attending: K. Obi, MD"); what a patient is shown or read."""
    vocab = vocabulary() if vocab is None else vocab
    value = r"[\w/#.,'’-]*\d[\w/#.'’-]*|x{2,}[\w/#.-]*"

    def drop(pattern: re.Pattern, text: str) -> str:
        return pattern.sub(" ", text)
    # A bracket of identifiers goes whole: "(MRN 000-00-0000, DOB xx/xx/2003)".
    text = re.sub(rf"\((?:\s*(?:{vocab.record_identifier.pattern})\s*(?:{value})(?:\s+(?:{value}))*[,;]?)+\s*\)",
                  " ", text, flags=re.IGNORECASE)
    # A field with its value ("MRN 000-00-0000", "DOB" alone at a line's end); a word that
    # names a field in a sentence ("the emergency room") stays.
    values = rf"(?:(?-i:[A-Z]{{1,3}})\s)?(?:{value})(?:\s(?:{value}))*"  # ("MP 0931472")
    identifier = re.compile(rf"(?P<field>{vocab.record_identifier.pattern})\s*(?P<value>{values})?", re.IGNORECASE)
    text = identifier.sub(lambda m: m.group(0) if not m.group("value") and _FIELD_WORDS.fullmatch(
        m.group("field").strip()) else " ", text)
    text = _BED_NUMBER.sub(" ", text)
    name = r"[A-Z][\w'’-]+\b(?!\s*:)"
    person = (rf"(?:(?:Dr|Mr|Mrs|Ms|Prof)\.?\s+(?:[A-Z]\.\s*)*{name}(?:\s+{name})?"
              rf"|(?:[A-Z]\.\s*)+{name}|{name}(?:\s+{name}){{0,2}}(?=,?\s*{_CREDENTIAL}\b))"
              rf"(?:,?\s*\(?{_CREDENTIAL}\b\)?)*"
              # "..., Eastmoor Family Practice": the doctor's practice goes with the name
              rf"(?:,\s*(?:[A-Z][\w'’-]*\s+){{0,4}}(?:Practice|Surgery|Medical Cent(?:re|er)|Health Cent(?:re|er)|"
              rf"Health Team|Clinic)\b)?")
    # A field ("GP: Dr X", "Attending: R. Obi, MD") or a signature ("Dictated by J. Marsh,
    # MD"); in a sentence ("see your GP Dr Mackintosh in 2 weeks") the name stays.
    titles = sorted(vocab.record_staff, key=len, reverse=True)
    signed = "|".join(re.escape(t) for t in titles if t.endswith(" by"))
    fields = "|".join(re.escape(t) for t in titles if not t.endswith(" by"))
    role = r"(?:(?:the\s+)?(?:ward\s+|clinical\s+|staff\s+)?(?:pharmacist|nurse|doctor|physician|registrar|consultant)\s+)?"
    # ("Primary care: Brookfield Pediatrics, Dr. A. Obi": the practice, then the doctor)
    practice = r"(?:(?:[A-Z][\w'’-]*\s+){0,3}[A-Z][\w'’-]*,\s*(?=(?:Dr|Mr|Mrs|Ms|Prof)\b|[A-Z]\.))?"
    staff = re.compile(rf"(?i:\b(?:(?:{signed})\s*:?\s*{role}|(?:{fields})\s*:))\s*{practice}{person}")
    text = drop(staff, text)
    # A dictated run-on's line breaks, written as commas ("ADMISSION DATE:,04/08/2025,")
    text = re.sub(r":\s*,(?=\s*\S)", ": ", text).strip(", ")
    # "Time spent on discharge: 45 minutes.", ">30 min spent on discharge planning", "Nurse
    # signature: ______"
    text = re.sub(r"(?i:\b(?:total\s+)?time spent\b[^.]*\.?)|(?i:\b\w+\s+signature)\s*:\s*_+"
                  r"|(?i:[>≥]?\s*\d+\s*min(?:utes|s)?\s+(?:were\s+)?spent\b[^.]*\.?)", " ", text)
    # "born xx/xx/1945", "Page 1 of 1", and the notes of how the instructions were given
    # ("teach-back done with the dosing syringe", "verbalized understanding")
    text = re.sub(r"(?i:\bborn\s+(?:on\s+)?(?:xx|\d{1,2})[/.-](?:xx|\d{1,2})[/.-](?:x{2,4}|\d{2,4}))"
                  r"|(?i:\bpage\s+\d+\s+of\s+\d+\b)"
                  r"|(?i:[^.;]*\b(?:teach[- ]back|verbali[sz]ed (?:good )?understanding)\b[^.]*\.?)",
                  " ", text)
    # A transcriptionist's initials after the dictation's time ("21:02,mt/xx", "plan.,MEW/xx,D:")
    # (or alone, once the run-on is cut into its items: "CVR/xx")
    text = re.sub(r"(?<=\d)\s*,\s*[a-z]{2,3}/[a-z]{2,3}\s*$|(?<=[,.])\s*[A-Za-z]{2,4}/[a-z]{2,3}(?=\s*(?:,|$))"
                  r"|^\s*[A-Za-z]{2,4}/xx\s*$",
                  "", text)
    text = re.sub(r"(?i)\bcop(?:y|ies) to (?:the )?(?:gp|pcp|patient|family doctor|family physician)\b[^.]*\.?",
                  " ", text)  # "Copy to GP."
    # "(Pharmacist-checked 20/11/2025, T. Ashworth)"; "Code status: Full"
    text = re.sub(r"(?i)\((?:[a-z]+[- ])?(?:checked|verified|reconciled)\b[^()]*\)"
                  r"|(?i:\bcode\s+status\s*:\s*)(?:(?i:full(?:\s+code)?)|DNR/DNI|DNR|DNI|DNACPR)\b",
                  " ", text)
    # "Discussed with Dr. X, who agrees with the plan": the note's attestation
    text = re.sub(r"(?i)\b(?:seen and )?discussed with (?:the )?(?:attending\s+)?(?:dr\.?\s+)?[^.]{0,60}?\bagree[sd]?\b"
                  r"[^.]*\.?", " ", text)
    return re.sub(r"\s{2,}", " ", re.sub(r"\s+([,.;])", r"\1", text)).strip(" ,;")


_STAFF_WORDS = {"provider", "nurse", "physician", "consultant", "attending", "resident", "registrar",
                "doctor", "clinician", "author", "pa", "np", "surgeon", "signature"}


def _is_staff_field(title: str, vocab: Vocabulary) -> bool:
    """A field that names a clinician ("Attending", "ED provider", "Discharging nurse")."""
    words = title.lower().split()
    return title.lower() in vocab.record_staff or bool(words) and words[-1] in _STAFF_WORDS \
        and words[-1] != "surgeon"


def _names_a_person(text: str) -> bool:
    """Whether a record field's value is a person ("R. Halvorsen, MD", "Dr Obi") rather than
    a service ("Cardiology")."""
    return bool(re.search(rf"\b(?:Dr|Mr|Mrs|Ms|Prof)\b\.?|\b[A-Z]\.\s*[A-Z]|,?\s{_CREDENTIAL}\b", text))


def _is_signature(line: str, vocab: Vocabulary) -> bool:
    """A line that signs the summary (a clinician's name with a post), or stamps it."""
    if _STAMP.search(line):
        return True
    return (len(line.split()) <= 16 and bool(_SIGNATURE.match(line)) and not DATE.search(line)
            and not vocab.follow_up_cue.search(line) and not vocab.quantity.search(line))


_ADDRESS = re.compile(r"^\s*\d{1,5}[A-Za-z]?\s+(?:[A-Z][\w'’-]*\s+){1,3}(?:Street|St|Road|Rd|Terrace|Avenue|Ave|"
                      r"Lane|Ln|Drive|Dr|Close|Crescent|Cres|Way|Place|Pl|Court|Ct|Gardens|Grove|Square|"
                      r"Boulevard|Blvd|Row|Mews|Parade|Brae|Wynd|Loan|Rise|View|Vale|Park|Hill|Walk|Green|Gate|Bank|Highway|Hwy)\b\.?(?:,\s*[A-Z][\w'’ -]*)?\s*$")


def _is_record_line(line: str, vocab: Vocabulary) -> bool:
    """A line of the record's fields ("71 y/o female MRN: xxxxxx"): an identifier, and
    little else but values and demographics; a signature ("Electronically signed by"); or
    a street address ("14 Kinloch Terrace, Glenbrae")."""
    if _starts_with(line, vocab.record_signatures) and len(line.split()) <= 16 or _ADDRESS.match(line):
        return True
    if re.search(r"\bsignature\s*:", line, re.IGNORECASE) and len(line.split()) <= 8:
        return True  # "House Officer signature: ____________"
    found = vocab.record_identifier.search(line)
    if not found or len(line.split()) > 14:
        return False
    rest = re.sub(rf"(?:{vocab.record_identifier.pattern})\s*(?:[\w/#.,'’-]*\d[\w/#.'’-]*)?", " ", line,
                  flags=re.IGNORECASE)
    rest = _DEMOGRAPHIC.sub(" ", rest)
    # (names, a surname in capitals, "Ward 6 Older Adults & Medicine")
    rest = re.sub(r"\b(?:Dr|Mr|Mrs|Ms|Miss)\b\.?|\b[A-Z][a-z'-]+\b|\b[A-Z]\.|\b[A-Z]{2,}\b|\b\d+\b", " ", rest)
    return len([word for word in rest.split() if re.search(r"[A-Za-z]", word)]) <= 2


def _prose_paragraph(line: str, next_line: str, vocab: Vocabulary) -> bool:
    """Whether a line opens a paragraph of wrapped prose (two long lines of words, no dose,
    no medicine's name to open it)."""
    words = line.split()
    opens = (line.lstrip()[:1].isupper() and not LIST_ITEM.match(line) and not _TABLE_ROW.match(line)
             and not any(vocab.is_medicine_word(word) for word in words[:3]))
    # ("Mrs Lennox is a 41-year-old teacher ... on mesalazine 2.4 g daily until this spring.
    # She had been taking ...": a paragraph on one line, doses and all)
    story = len(words) >= 25 and len(re.findall(r"[a-z)]\.\s+[A-Z]", line)) >= 1
    return opens and (story or len(line.strip()) >= 60 and len(next_line.strip()) >= 50
                      and not _quantities(line, vocab) and len(words) >= 10)


def _record_or_letter(line: str, found: tuple[str, str, int] | None, inside: str, after_blank: bool,
                      next_line: str, vocab: Vocabulary) -> tuple[tuple[str, str, int] | None, bool]:
    """The heading `found` for `line` (or None), amended for what is the letter's or the
    record's (a greeting, a signature, a record line, a staff field) and for prose that
    ends a list; and whether it is a section of one line."""
    # ("J. Obi, MD FRCPC - electronically signed ..." is no heading, whatever its shape)
    if line.strip() and (_is_greeting(line, vocab) or (found is None or _STAMP.search(line))
                         and _is_signature(line, vocab)):
        # ("Dear Dr Whitfield" with no comma reads like a short heading too)
        return (line.strip(), "letter", len(line)), True
    if found is None and line.strip() and _is_record_line(line, vocab):
        return (line.strip(), "identifier", len(line)), True
    if found is None and after_blank and inside == "medications" and _prose_paragraph(line, next_line, vocab):
        # "I reviewed Ms X in clinic today, three weeks after ..." after a letter's list of
        # medicines: the letter goes on, not the list
        return ("", "other", 0), False
    if found is not None and _is_staff_field(found[0], vocab) and _names_a_person(line[found[2]:]):
        # "Attending: R. Halvorsen, MD": who wrote or signed, not what the patient needs
        return (found[0], "letter", found[2]), True
    field = vocab.record_identifier.match(found[0]) if found is not None else None
    if found is not None and found[1] in ("other", "header") and (vocab.record_identifier.search(
            line[found[2]:]) or field and field.end() >= len(found[0].rstrip(" :"))) and len(line.split()) <= 16:
        # "PATIENT: ALVAREZ-KING, TOMAS MRN: 000-00-0000": the record's own fields
        return (found[0], "identifier", found[2]), True
    return found, False


def split_summary(summary: str, vocab: Vocabulary | None = None) -> list[SummarySection]:
    """The sections of a summary, in order, covering all of its text."""
    vocab = vocab or vocabulary()
    spans = _line_spans(summary)
    shouting = _shouting(summary)
    closing = _letter_closing(summary, spans, vocab)
    sections: list[SummarySection] = []
    current: SummarySection | None = None
    major = ""  # the kind of the last non-problem section, for numbered problems
    after_blank = True
    for index, (start, end) in enumerate(spans):
        line = summary[start:end]
        if index == closing:
            # The closing, the signature and any copies: one section to the end.
            if current is not None:
                current.end = start
                sections.append(current)
            current = SummarySection(line.strip().rstrip(","), "letter", start, len(summary),
                                     len(summary))
            break
        next_line = next((summary[a:b] for a, b in spans[index + 1:] if summary[a:b].strip()), "")
        found = _heading(line, vocab, current.kind if current else "", shouting=shouting,
                         next_line=next_line, after_blank=after_blank)
        found, one_line = _record_or_letter(line, found, current.kind if current else "", after_blank,
                                            next_line, vocab)
        after_blank = not line.strip()
        if found is not None:
            title, kind, inline = found
            if current is not None:
                current.end = start
                sections.append(current)
            parent = ""
            if kind == "problem":
                parent = major or "hospital_course"
            elif kind == "other" and major and not line[inline:].strip() and (
                    ":" in line or line.lstrip().startswith("#")
                    or major == "medications" and (vocab.quantity.search(next_line) or any(
                        vocab.is_medicine_word(m.group(0)) for m in vocab.stem_word.finditer(next_line)))):
                # "Primary:" under "Discharge Diagnoses:", "# Anemia" under "Plan", "AS NEEDED"
                # over more medicine lines
                parent = major
            elif kind not in _ONE_LINE:
                major = kind if kind != "other" else ""
            current = SummarySection(title, kind, start, end, start + inline, parent)
            if kind in _ONE_LINE and (line[inline:].strip() or one_line):
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
    # A letter's head (the hospital's and the family doctor's addresses, "Private and
    # confidential") comes before its greeting.
    greeting = next((i for i, s in enumerate(sections) if s.kind == "letter" and
                     _is_greeting(summary[s.start:s.body_start], vocab)), None)
    for section in sections[:greeting or 0]:
        if section.kind in ("other", "header"):
            section.kind = "letter"
    return sections


# ---- facts -----------------------------------------------------------------------------


@dataclass
class Medication:
    name: str
    dose: str = ""          # the strength as Lumen writes it: "40 mg", "5/325 mg", "15 mg/5 mL";
                            # or, with no strength, what is taken: "2 puffs"
    count: str = ""         # what is taken beside a strength: "2 tablets", "10 mL", "1-2 tablets"
    route: str = ""         # normal form: "by mouth", ...
    frequency: str = ""     # normal form: "2/day", "every 4-6 hours", "as needed", ...
    as_needed: bool = False  # only when needed (PRN), whatever the frequency
    time: str = ""          # clock times: "10 pm", "8 am, 6 pm"
    maximum: str = ""       # "3000 mg per day", "4 doses in 24 hours"
    duration: str = ""      # "5 days"
    until: str = ""         # a date ("--06-04", "2025-06-04") or words ("follow-up")
    status: str = ""        # new, changed, stopped, held, resume, unchanged, or "" (not said)
    changed_from: str = ""
    changed_to: str = ""
    reason: str = ""
    # The words outside its own line that the status was read from: a label line
    # ("Stopped:") or a sub-heading ("Medicines to stop"); '' when the line says it.
    label: str = ""
    # The summary's words elsewhere that give its status, quoted after its line: the next
    # sentence, said of "it" ("It caused ankle swelling, so we have stopped it."), or "… "
    # and another line that names it ("… Started this admission: Entresto, spironolactone").
    said_elsewhere: str = ""
    key: str = ""           # its glossary entry (a brand and its generic name share one)
    # Read from what was done in hospital ("naproxen was held on admission"): a later
    # instruction ("must be stopped") says its status at discharge.
    said_in_hospital: bool = field(default=False, repr=False, compare=False)
    # A dose that changes on a schedule ("10 mg twice a day for 7 days, then 5 mg twice a
    # day") is one medication per step, numbered from 1; 0 when there are no steps.
    step: int = 0
    # The last step of such a dose ends the course ("..., then 2 mg for 5 days, then STOP").
    course_ends: bool = False
    # Why the line cannot be read without doubt ('' when it can): such a line is quoted
    # whole, never turned into an instruction.
    doubt: str = ""
    text: str = ""          # the line or sentence it was read from
    start: int = 0
    end: int = 0
    section: str = ""
    # The other lines that name it and were merged into it: (start, end) in the summary
    mentions: list[tuple[int, int]] = field(default_factory=list, repr=False, compare=False)

    def to_dict(self) -> dict[str, Any]:
        found = asdict(self)
        del found["said_in_hospital"], found["mentions"]
        return found

    @property
    def quote(self) -> str:
        """Its line as written, with the label its status came from ("Stopped: W (rash)")."""
        text = f"{self.text} {self.said_elsewhere}" if self.said_elsewhere else self.text
        if self.label and self.label.lower() not in self.text.lower():
            return f"{self.label}: {text}"
        return text


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
    kind: str  # activity, diet, fluids, bathing, medicines
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
    date_order: str = "mdy"  # how the summary writes dates in numbers

    def medication(self, name: str) -> Medication | None:
        lowered = name.lower()
        return next((m for m in self.medications if m.name.lower() == lowered), None)

    def kind_at(self, offset: int) -> str:
        """The kind of the section holding `offset` ("" outside every section)."""
        return next((s.effective_kind for s in self.sections if s.start <= offset < s.end), "")

    def medication_at(self, start: int, end: int) -> Medication | None:
        """The medication read from the text between `start` and `end` (a line)."""
        return next((m for m in self.medications if start <= m.start and m.end <= end + 1), None)

    def to_dict(self) -> dict[str, Any]:
        return {"sections": [s.to_dict() for s in self.sections],
                "medications": [m.to_dict() for m in self.medications],
                "follow_ups": [f.to_dict() for f in self.follow_ups],
                "warning_signs": [w.to_dict() for w in self.warning_signs],
                "restrictions": [r.to_dict() for r in self.restrictions],
                "date_order": self.date_order}


_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9(\"'])|\n\s*\n|"
                           r"\n(?=\s*(?:[-•*·]|\d{1,2}[.)])\s)")
_STATUS_PREFIX = re.compile(r"^\s*\(?(?P<word>new|stop(?:ped)?|discontinued?|change[d]?|"
                            r"hold|held|on hold|resume|restart|continue[d]?|unchanged|increase[d]?|"
                            r"decrease[d]?|started|d/c)\)?\s*[:\-–—]\s*", re.IGNORECASE)
# Words by which an item of a line says what to do of its own accord.
_OWN_ORDER = re.compile(r"\b(?:take|taking|use|using|give|continue|start|stop|hold|resume|restart|"
                        r"increase|decrease|reduce|change|switch|instead|then|until|but|not|no|"
                        r"avoid|new|was|is|were|are)\b", re.IGNORECASE)
_FROM_TO = re.compile(r"\bfrom\s+(?P<from>[^;,()]*?\d[^;,()]*?)\s+to\s+(?P<to>[^;,()]*?\d[^;,()]*?)"
                      r"(?=$|[;,()]|\s+(?:daily|once|twice|three|four|every|at|by|in|for|and|because|due|"
                      r"po|bid|tid|qd|od|bd|nightly|each|as|on|with|x)\b)",
                      re.IGNORECASE)
_FROM_ONLY = re.compile(r"(?:\b(?:increased|decreased|reduced|changed|raised|lowered|titrated)\s+|\()from\s+"
                        # (a ratio: "from 1 unit per 12 g" of carbohydrate)
                        r"(?P<from>\d[\d.,/]*\s*[A-Za-z%]+(?:\s+per\s+\d+(?:\.\d+)?\s*g\b)?"
                        r"(?:\s+(?:daily|once daily|twice daily|bid|tid|qd|[a-z]+ a day))?)", re.IGNORECASE)
# "increased to 20 mg", and in the imperative "reduce to 10 mg daily", "wean - 5 mg qhs"
_TO_DOSE = re.compile(r"\b(?:(?:increase|decrease|reduce|change|raise|lower|titrate|uptitrate|downtitrate|wean)d?|"
                      r"halved|doubled|weaning|wean)\s*"
                      r"(?:up\s+|down\s+)?"
                      r"(?:to\s+|[-–—:]\s*)(?P<to>\d[\d.,/]*\s*[A-Za-z%]+)", re.IGNORECASE)
_DURATION = re.compile(r"(?:\bx\s*|\bfor\s+(?:another\s+|a total of\s+|the next\s+|no more than\s+|"
                       r"a further\s+|further\s+|(?P<least>at least\s+|a minimum of\s+)|"
                       r"up to\s+|at most\s+)?|\btimes\s+|\b(?:to\s+)?complete\s+(?:a\s+total\s+of\s+)?|"
                       r"\bcourse\s+of\s+|\btotal\s+of\s+)"
                       r"(?P<n>\d+|one|two|three|four|five|six|seven|eight|nine|ten|fourteen)\s*"
                       r"(?:more\s+|further\s+|additional\s+)?(?P<unit>days?|weeks?|months?|years?|d|wks?|"
                       r"hours?|hrs?|h)\b", re.IGNORECASE)
_UNTIL = re.compile(r"\b(?:until|till|stop once|stop when)\s+(?P<what>(?:[^;,.()|]|(?<=\b(?:Dr|Mr|Ms|St))\.|"
                    r"(?<=\bMrs)\.|(?<=\d)\.(?=\d)){2,60})", re.IGNORECASE)  # "until Dr. Oyelowo rechecks ...",
# "until your creatinine is 1.2 or lower"
# A course's last day given as a date: "to 13/03/2025", "last dose on 05/31", "ending 4/22".
_ENDS_ON = re.compile(r"\b(?:(?:(?:up to|until|till) and including|to|until|till|through|thru|stop|resume|restart|"
                      r"recommence|up to)\s+"
                      r"(?:on\s+)?(?=\d{1,2}/\d{1,2}|\d{4}-\d{2}|"
                      r"(?-i:[A-Z][a-z]{2,8})\.?\s+\d{1,2}\b|\d{1,2}\s+[A-Z][a-z]{2,8}\b)|ending|ends|"
                      r"finishing|finish(?:es)?|last (?:\w+ )?(?:dose|drops?|tablets?|capsules?|injections?|"
                      r"application|patch)|last day|final dose|(?:stop|cease|discontinue)\s+after)\b", re.IGNORECASE)
_RESUME_ON = re.compile(r"(?<!not )(?<!n't )(?<!never )\b(?:resume|restart|recommence)\w*\b[^;.()]*?\b(?:on|after)\s+"
                        r"(?!being\b)(?P<what>[^;,.()]{2,40})", re.IGNORECASE)
_REASON_CUE = re.compile(r"(?:\bfor\b|\bbecause(?: of)?\b|\bdue to\b|\bd/t\b|\bgiven\b|"
                         # an after-visit summary's "Indications: E. coli bacteremia"
                         r"\b(?:indications?|used\s+for|reason)\s*:|"
                         r"\b(?:discontinued|stopped|ceased|held|reduced|increased|lowered|changed)\s+as\b|"
                         r",\s*as\s+(?!needed|required|directed|before|well|usual|prescribed|tolerated|"
                         r"above|below|follows|does|do|did|is|are|a\b|an\b))\s*", re.IGNORECASE)
_REASON_WHY = re.compile(r"(?P<why>(?:[^;.()]|(?<=\b[A-Z])\.(?=\s?[a-z])){3,120})")
_AS_NEEDED_FOR = re.compile(r"(?:\bprn\b|\bp\.r\.n\.?|\bas needed\b|\bwhen needed\b|\bif needed\b|"
                            r"\bas required\b|\bwhen required\b|\bif required\b)\s*(?:for\s+)?"
                            r"(?P<why>[A-Za-z][A-Za-z ,'/-]{2,40}?)\s*(?:$|[;.(\[|#]|\s{2,}|\bx\s*\d|\bmax|"
                            r",?\s[-–—]\s|,\s*(?:max|no more|not more|do not|up to|not to|never)|"
                            # how long: "PRN severe pain, for up to 3 days", "PRN pain for 5 days"
                            r",?\s+for\s+(?:up to\s+|no more than\s+|at most\s+)?\d)",
                            re.IGNORECASE)
# "Do not take, raises bleeding risk", "STOP - causes dizziness": why it was stopped.
_STOPPED_BECAUSE = re.compile(r"\b(?:do not take|don't take|stop(?:ped)?|discontinued?|d/c)\s*(?:it\s*)?"
                              r"[,:;–—-]\s*(?P<why>(?:it\s+)?(?:raises|causes|caused|increases|can|may|"
                              r"makes|made|led|worsens|worsened|interacts|not needed|no longer|risk|"
                              r"high|low)[^.;|()]{3,80})"
                              # "CEASED, do not restart: hormone receptor positive breast cancer"
                              r"|\b(?:stop(?:ped)?|ceased|discontinued|do not restart|don't restart|d/c|"
                              r"held|hold)\s*:\s*(?P<why2>[^.;|()]{3,80})"
                              # "Naproxen - STOP (kidney and bleeding risk after heart surgery)"
                              r"|\b(?:stop(?:ped)?|ceased|discontinued?|d/c|held|hold|do not restart|"
                              r"don't restart)\s*\((?P<why3>[^()]{3,80})\)",
                              re.IGNORECASE)
# "-- CONTINUE, viral prophylaxis while on chemo"
_STATUS_THEN_WHY = re.compile(r"\b(?<!what\s)(?:continue|new|start(?:ed)?|changed?|stop(?:ped)?|hold|held|resume)\s*[,:;]\s*"
                              r"(?P<why>[a-z][^.;|()]{4,80})", re.IGNORECASE)
# "D/C aspirin 81 mg - no longer needed after delivery"
_DASH_REASON = re.compile(r"\s[-–—:]\s*(?P<why>(?:no longer|not needed|not required|causes?|caused|causing|"
                          r"raises|risk|interacts|too (?:low|high)|led to)\b[^.;|()]{3,80})", re.IGNORECASE)
# "It lowers cholesterol.", "It has been replaced by furosemide.", "It can harm your kidneys."
# "It caused ankle swelling, so we have stopped it": a sentence about the medicine before.
_IT = re.compile(r"\b(?:it|this medicine|this medication|this tablet)\b", re.IGNORECASE)
_CAUSED = re.compile(r"\b(?:it|this)\s+(?:caused|causes|was causing|has caused|gave (?:her|him|them))\s+"
                     r"(?P<why>[^,;.()]{3,60})", re.IGNORECASE)
# ("..., which slows the heart and eases angina")
_IT_DOES = re.compile(r"(?:\b(?:it|this)|,\s*which)\s+(?P<why>(?:helps|protects|lowers|prevents|treats|thins|reduces|slows|"
                      r"controls|eases|relieves|keeps|can harm|can cause|can damage|may harm|may cause|"
                      r"can hide|may hide|can mask|may mask|blocks|interferes with|undoes|"
                      r"raises|increases|has been replaced (?:by|with)|was replaced (?:by|with)|"
                      r"is replaced by)\b[^.;()]{3,100}(?=[.;()]|$))|(?P<why2>\breplaced (?:by|with) [^.;()]{3,40})",
                      re.IGNORECASE)
# "to prevent blood clots", "helps to lower blood pressure"
_PURPOSE = re.compile(r"(?i:(?<!how )(?<!when )(?<!what )(?<!need )(?<!have )\b(?:to|helps?(?: to)?)\s+"
                      r"(?P<why>(?:prevent|treat|protect|reduce|control|"
                      r"lower|thin|ease|relieve|settle|stop|keep|help|suit|allow|match|(?<!advised to )(?<!told to )(?<!asked to )(?<!advice to )avoid)\b[^;.()]{3,60}))"
                      # "Clot prevention", "SBP prophylaxis" (shorthand in capitals only)
                      r"|(?P<why2>\b(?:(?i:clot|blood clot|dvt|vte|stroke|infection|ulcer|seizure|viral|"
                      r"fungal|pcp|pjp|gi|stress ulcer)|[A-Z]{2,5})\s+(?i:prevention|prophylaxis)\b)")
_PARENS = re.compile(r"\(([^()]{2,80})\)")
# A long bracket's first clause: "(may have triggered the manic episode; do not restart ...)"
_LONG_PARENS = re.compile(r"\(([^();]{2,80});[^()]{0,200}\)")
_DR = re.compile(r"\b(?:Dr\.?|Doctor)\s+(?:(?:[A-Z]\.\s*)*[A-Z][A-Za-z'-]+(?:\s+[A-Z][A-Za-z'-]+)?|_{2,})")
_WITH = re.compile(r"\bwith\s+(?:your\s+|the\s+|a\s+)?(?P<who>(?:[A-Z][\w'.-]*\s*){1,5}"
                   r"(?:clinic|Clinic|team|Team)?|[a-z]+\s+(?:clinic|team|doctor|surgeon))")
_IN_TIME = re.compile(r"\b(?:in|within|after|over the next)\s+(?:about\s+)?"
                      r"(?:\d+|one|two|three|four|five|six|seven|eight|ten|twelve)"
                      r"(?:\s*(?:-|to)\s*\d+)?\s+(?:days?|weeks?|wks?|months?|mos?)\b|\bnext week\b|\btomorrow\b"
                      r"|\b(?:weekly|every week|monthly|every \d+ weeks)\b"
                      r"|\b(?:on\s+)?(?:monday|tuesday|wednesday|thursday|friday|saturday|sunday)\b"
                      r"|\b\d+(?:\s*(?:-|to)\s*\d+)?\s+(?:days?|weeks?|months?)\s+(?:after|from|post)\s+"
                      r"(?:surgery|discharge|the operation|your operation|today|delivery)\b",
                      re.IGNORECASE)
_IF = re.compile(r"\b(?:if|when|for)\b\s+(?:you\s+(?:have|get|notice|feel|develop|see)\s+)?(?P<signs>.+)$",
                 re.IGNORECASE | re.DOTALL)
# "do not stop" says to continue; "through 02/09, then stop" ends a course (the date says it).
_NEGATED_STOP = re.compile(r"\b(?:(?:do not|don't|never|must not|cannot|can't|can not|should not|shouldn't)\s+"
                           r"(?:stop|skip|miss)\w*|"
                           r"(?:then|and then)\s+(?:stop|discontinue)\w*|"
                           # advice, not a status: "do not take any other product with X",
                           # "never take it together with Y", "do not take more than 8"
                           r"(?:do not|don't|never|must not|not to)\s+(?:take|use|give|drink|drive)\s+"
                           # ("do not use any more: it stings" is a stop: "any more" with no "than")
                           r"(?:it\s+|them\s+|this\s+)?(?:any\s+)?(?:other|more(?!\s*[:.,;)\-–—])|extra|"
                           r"with|together|alcohol|on an|if|before|after|within|at the same|double|two doses|"
                           r"for(?! now)))|"
                           # "do not change the dose", "withhold if loose stools": no status
                           r"\b(?:do not|don't|never)\s+(?:change|increase|decrease|adjust|alter|"
                           r"double)\w*|\b(?:will|may|might|could|can)\s+(?:likely\s+|probably\s+|"
                           r"possibly\s+)?(?:be\s+)?(?:lowered|raised|increased|decreased|reduced|changed|"
                           r"stopped|restarted|adjusted|tapered|bring|brought|resumed)\w*|"
                           r"\b(?:hold|withhold|stop|omit|skip|pause)\s+(?:it\s+|this\s+|"
                           r"(?:the\s+)?dose\s+)?(?:if|when)\b|"
                           r"\bavoid\s+(?:other|any|nsaids?|alcohol|grapefruit|driving|products?|"
                           r"taking (?:other|any|extra)|medicines? (?:that|containing|with)|"
                           r"over-the-counter|otc|sun)\w*",
                           re.IGNORECASE)
# "if she develops a sore throat ...": a sign to act on, said of the patient.
_IF_DEVELOPS = re.compile(r"\bif\s+(?:she|he|you|they|the patient|your child|the child|the baby|baby)\s+"
                          r"(?:develops?|gets?|notices?|becomes?|starts?|has any|have any)\b"
                          r"|^\s*(?:[-*•]\s*)?if\b(?:[^.]|\.(?=\d))*\b(?:call|go to|come back|return|seek|contact|ring|phone)\b",
                          re.IGNORECASE)
# Who a section for the family doctor speaks to ("Actions for GP").
_DOCTOR_IN_TITLE = re.compile(r"\b(?:GP|PCP|primary care(?: physician| provider)?|family doctor)\b",
                              re.IGNORECASE)
# ("a morning call for medicines and meals", "the phone call": a call as a thing, no warning)
_CALL_IF = re.compile(r"(?<!\ba )(?<!\bthe )(?<!morning )(?<!evening )(?<!daily )(?<!phone )(?<!video )"
                      r"(?<!welfare )(?<!on-)\b(?:call|contact|phone|ring|page)\b[^.;]*?\b(?:if|for|when)\b",
                      re.IGNORECASE)


# A line that says first to get help: "Go to the ED if ...", "Call the ward for ..."
_GET_HELP_FIRST = re.compile(r"\s*(?:[-*•]\s*)?(?:call|go to|return|come back|seek|ring|phone|contact)\b",
                             re.IGNORECASE)


def _names_medicines_only_as_signs(line: str, glossary: Glossary | None, vocab: Vocabulary) -> bool:
    """Whether a line names no medicine, or names medicines only among the signs of a line
    that says first to get help ("Go to the ED ... for a headache that does not go away with
    acetaminophen"): no medicine of the list, and no reason for one."""
    names = medicine_names(line, glossary, vocab)
    condition = re.search(r"\b(?:if|for|when)\b", line, re.IGNORECASE)
    return not names or bool(_GET_HELP_FIRST.match(line) and condition
                             and all(start > condition.start() for start, *_rest in names))


def reads_as_warning(text: str, vocab: Vocabulary | None = None) -> bool:
    """Whether a line says when to call or come back ("Call 911 at once if ...", "If she
    develops a fever ..."), wherever it sits."""
    vocab = vocabulary() if vocab is None else vocab
    return bool(vocab.warning_cue.search(text) or _CALL_IF.search(text) or _IF_DEVELOPS.search(text))
_WAS = re.compile(r"\b(?:(?<!pressure )(?<!BP )(?<!rate )(?<!level )(?<!sugar )(?<!glucose )was|previously|formerly|prev\.?|(?<!\bas )before|used to take|used to be|up from|down from)(?:\s+|\s*:\s*)(?P<from>\d[\d.,/]*\s*[A-Za-z%]+(?:\s+(?:daily|once daily|twice daily|"
                  r"bid|tid|qd|[a-z]+ a day))?)", re.IGNORECASE)
# Amounts by time of day: "18 units - 0 - 12 units" (each slot an amount or 0).
_SLOT_DOSE = r"(?:\d+(?:\.\d+)?\s*(?:units?|mL|mg|tablets?|tabs?|puffs?)|0)"
_SLOT_DOSES = re.compile(rf"(?<![\w/.]){_SLOT_DOSE}(?:\s+-\s+{_SLOT_DOSE}){{2,3}}(?![\w/])", re.IGNORECASE)
# "Tab. Ecosprin": the form a South Asian prescription writes before the name is no part of it.
_DOSE_FORM_FIRST = re.compile(r"^(?:tabs?|caps?|inj|syp|syr|susp|oint)\.?\s+(?=\w)", re.IGNORECASE)
_NAME_END = re.compile(r"\s+\d|\s*(?:\(|\[|[-–—:,;|]\s|\bx\s*\d)")
# Clock times: "10 pm", "8:30 a.m.", "22:00".
_CLOCK = re.compile(r"(?<![\w:/.])(?P<h>1[0-2]|0?[1-9])(?::(?P<m>[0-5]\d))?\s*(?P<ap>[ap])\.?\s?m\b\.?"
                    r"|(?<![\w:/.])(?P<h24>[01]\d|2[0-3]):(?P<m24>[0-5]\d)(?![\w:])", re.IGNORECASE)
# A ceiling on the doses of a day: "max 3,000 mg per day", "no more than 4 doses in 24 hours".
_MAXIMUM_LEAD = (r"\b(?:max(?:imum)?\.?(?:\s+(?:dose|total|daily\s+dose|of))?|no\s+more\s+than|not\s+more\s+than|"
                 r"(?:do\s+not|don't|never)\s+(?:give|take|use|have)\s+more\s+than|"
                 r"not\s+to\s+exceed|do\s+not\s+exceed|don't\s+exceed|never\s+more\s+than|up\s+to|at\s+most)\s*:?\s*")
_PER_DAY = (r"\s*(?:(?:in|per|/|a|each|every|within|in any|over)\s*(?:one\s+|a\s+|any\s+)?"
            r"(?:(?P<hours>24\s*-?\s*h(?:ours?|rs?|r)?)|(?P<day>day|d))\b|(?P<daily>daily))")
# Words of a list line that say what to do, not what the medicine is called.
_INSTRUCTION_WORDS = {"take", "give", "use", "apply", "inhale", "continue", "start", "stop", "new",
                      "home", "resume", "restart", "hold", "d/c", "dc", "discontinue", "then",
                      "and", "or", "with", "plus", "increase", "decrease", "change", "changed",
                      "continued", "started", "stopped", "held", "please", "also", "no", "not",
                      "never", "do", "don't", "keep", "if", "for", "the", "your"}
_TAKING_NAME = re.compile(r"\b(?:stop|start|keep|continue|resume|restart)\s+taking\s+(?:your\s+|the\s+|"
                          r"his\s+|her\s+)?(?P<name>[A-Z][A-Za-z0-9-]{2,}(?:\s+[A-Z][A-Za-z0-9-]+)?)\b")
# A sentence of a plan that starts by saying what to do with a medicine ("Continue X 1 tab daily").
_INSTRUCTION_LEAD = re.compile(r"\s*(?:continue|start|started|stop|resume|restart|hold|take|begin|"
                               r"increase|decrease|reduce|d/c|discontinue)\b", re.IGNORECASE)
# Relations between two medicines of one line: the one after the word is replaced.
_REPLACES = re.compile(r"\b(?:replaces|replacing|(?<!been )(?<!was )(?<!is )replaced(?! with| by)|in place of|"
                       r"instead of|switched from|"
                       r"changed from|swapped from|substitutes? for|in lieu of)\s*$", re.IGNORECASE)
_SWITCHED_TO = re.compile(r"\b(?:switch(?:ed)?|chang(?:e|ed)|swap(?:ped)?|convert(?:ed)?)\s+"
                          r"(?:from\s+)?$", re.IGNORECASE)
# A status said of several medicines at once, after them: "X and Y were prescribed".
_PLURAL_STATUS = re.compile(r"\b(?:were|are|have been|both|all|continue|remain|stay)\b", re.IGNORECASE)
# What was done in hospital, not what to do at home ("was given IV ceftriaxone").
_IN_HOSPITAL = re.compile(r"\b(?:in (?:the )?hospital|on admission|in the (?:ed|er|emergency)|during "
                          r"(?:her|his|their|the) (?:stay|admission)|on the ward|(?:was|were) given|"
                          r"received|(?:was|were) treated with|intravenous(?:ly)?|iv|infusion|drip|"
                          r"loading dose|inpatient|in icu|while (?:in hospital|on the ward|an inpatient|"
                          r"admitted|in (?:the )?icu)|on hospital day|on hd\d|"
                          r"on pod\d?|(?:was|were) used|(?:was|were) replaced|had been (?:started|taking|"
                          r"on|prescribed|given)|at urgent care|prior to admission|before admission|"
                          r"previously|in clinic last)\b", re.IGNORECASE)
_AT_HOME = re.compile(r"\b(?:at home|home|on discharge|at discharge|discharge|discharged|going home|"
                      r"continue|continues|should|will|until|more days?|to take|take|please|"
                      r"prescribed|restart|resume|stop|hold|held|new)\b", re.IGNORECASE)


def _plain_space(text: str) -> str:
    """Display text: the source's line breaks and runs of spaces as one space."""
    return re.sub(r"\s+", " ", text).strip()


def sentences_of(text: str) -> list[str]:
    """The sentences of `text`, where a title's or a dose form's full stop ends none ("Dr.
    Osei", "treated with Inj. Ceftriaxone")."""
    return [text[a:b] for a, b in _sentences(text, 0, len(text))]


def _sentences(summary: str, start: int, end: int) -> list[tuple[int, int]]:
    """(start, end) of each sentence or list item in summary[start:end]; the full stop of
    a title or an initial ends none ("Dr. K. Osei", "B.K. is", names.py)."""
    spans, position = [], start
    text = summary[start:end]
    for match in _SENTENCE_END.finditer(text):
        if "\n" not in match.group(0) and ends_no_sentence(text[:match.start()]):
            continue
        piece_end = start + match.start()
        if summary[position:piece_end].strip():
            spans.append((position, piece_end))
        position = start + match.end()
    if summary[position:end].strip():
        spans.append((position, end))
    return _trimmed(summary, spans)


def _trimmed(summary: str, spans: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """Spans without the spaces, and a dictated run-on's commas, at their ends."""
    trimmed = []
    for a, b in spans:
        while a < b and (summary[a].isspace() or summary[a] == ","):
            a += 1
        while b > a and (summary[b - 1].isspace() or summary[b - 1] == ","):
            b -= 1
        if a < b:
            trimmed.append((a, b))
    return trimmed


def _cells(line: str) -> list[str]:
    """A table row's cells; a row of a space-laid table that wraps onto more lines (its
    lines piped by _piped, each line's bars counting from its first column) adds each wrapped
    cell's words to the cell of its column ("Pain not controlled by paracetamol" + "and
    ibuprofen")."""
    first, *more = line.strip().split("\n")
    cells = [cell.strip() for cell in first.strip().strip("|").split("|")]
    for wrapped in more:
        if "|" not in wrapped:
            cells[-1] = f"{cells[-1]} {wrapped.strip()}".strip()
            continue
        for index, cell in enumerate(wrapped.split("|")):
            if cell.strip() and index < len(cells):
                cells[index] = f"{cells[index]} {cell.strip()}".strip()
    return cells


def _is_table_header(line: str, next_line: str, vocab: Vocabulary) -> bool:
    """A table's header row: its columns' names, never a fact ("| Medication | Dose |"), also
    when the columns are laid out with spaces ("Medicine     Home dose     Action")."""
    if re.search(r"\d", line):
        return False
    if not _TABLE_ROW.match(line):
        spaced = [c.strip().lower() for c in re.split(r"\s{2,}", line.strip())]
        return len(spaced) >= 3 and all(c in vocab.table_header_words for c in spaced)
    cells = [c.lower() for c in _cells(line) if c]
    if len(cells) < 2:
        return False
    if _TABLE_RULE.match(next_line):
        return True
    named = sum(1 for c in cells if c.rstrip(":").strip() in vocab.table_header_words)
    return named >= max(2, (2 * len(cells) + 2) // 3)


def spaced_columns(summary: str, section: SummarySection, position: int,
                   vocab: Vocabulary | None = None) -> list[tuple[str, int]]:
    """The columns (name in lower case, where it starts on the line) of the space-laid table
    ("Medicine      Home dose     Action     Discharge dose     Comment") the row at
    `position` belongs to, or []: a blank line ends a table."""
    vocab = vocab or vocabulary()
    columns: list[tuple[str, int]] = []
    for a, b in _line_spans(summary[section.body_start:section.end]):
        start = section.body_start + a
        if start > position:
            break
        line = summary[start:section.body_start + b]
        if not line.strip():
            columns = []
        elif not _TABLE_ROW.match(line) and _is_table_header(line, "", vocab):
            columns = [(m.group(0).lower(), m.start()) for m in re.finditer(r"\S+(?: \S+)*", line)]
    return columns


def _piped(summary: str, a: int, b: int, columns: list[tuple[str, int]]) -> str:
    """The item `summary[a:b]`, a row of a space-laid table, with bars between its cells (each
    cell under the column it overlaps most; a word starting right at a column's start begins
    that column's cell), so that it reads as a table row; offsets kept."""
    line_start = summary.rfind("\n", 0, a) + 1
    line_end = summary.find("\n", a)
    if 0 <= line_end < b:
        # the lines the row wraps onto, each with its bars: one per column before its text
        # and between its cells, so that a wrapped cell is read with its column's
        piped = _piped(summary, a, line_end, columns)
        wrapped_start = line_end + 1
        while wrapped_start < b:
            wrapped_end = summary.find("\n", wrapped_start)
            wrapped_end = b if wrapped_end < 0 or wrapped_end > b else wrapped_end
            piped += "\n" + _wrapped_piped(summary[wrapped_start:wrapped_end], columns)
            wrapped_start = wrapped_end + 1
        return piped + summary[len(piped) + a:b]
    row = summary[line_start:b if line_end < 0 or line_end > b else line_end]
    starts = [start for _name, start in columns]
    pieces: list[tuple[int, int]] = []
    for m in re.finditer(r"\S+(?: \S+)*", row):
        cut = m.start()
        for start in starts:  # "... (max 8 tabs in 24 h) Pain or fever", "Pain" under "Comment"
            if cut < start < m.end() and row[start - 1] == " " and row[start - 2] != " ":
                pieces.append((cut, start - 1))
                cut = start
        pieces.append((cut, m.end()))
    cells: list[tuple[int, int, int]] = []
    for start, end in pieces:
        overlap = [max(0, min(end, (starts + [len(row) + 1])[i + 1]) - max(start, starts[i]))
                   for i in range(len(starts))]
        column = max(range(len(starts)), key=lambda i: (overlap[i], -i))
        cells.append((start, end, max(column, cells[-1][2] if cells else 0)))
    if len({column for _a, _b, column in cells}) < 2:
        return summary[a:b]
    chars = list(summary[a:b])
    for (_s, end, column), (start, _e, next_column) in zip(cells, cells[1:]):
        # one bar per column the gap passes; the gap holds at least one space beside them
        for bar in range(min(next_column - column, max(0, start - end - 1))):
            chars[line_start + end + bar - a] = "|"
        if next_column > column and start - end == 1:
            chars[line_start + end - a] = "|"
    return "".join(chars)


def _wrapped_piped(line: str, columns: list[tuple[str, int]]) -> str:
    """A line a space-laid table's row wraps onto, with bars in the spaces before each piece
    of its text, as many as the columns it moves on (offsets kept): "<spaces>17/06/2026
    <spaces>Sharps bin supplied." under Duration and Comments reads "||||17/06/2026||Sharps
    bin supplied."; the line as written when a piece starts left of the table's second
    column or its spaces are too few."""
    starts = [start for _name, start in columns]
    chars = list(line)
    column, previous_end = 0, 0
    for m in re.finditer(r"\S+(?: \S+)*", line):
        here = max(i for i, start in enumerate(starts) if start <= m.start() + 1 or i == 0)
        if here < 1 or here < column or m.start() - previous_end < here - column:
            return line
        for offset in range(here - column):
            chars[m.start() - 1 - offset] = "|"
        column, previous_end = here, m.end()
    return "".join(chars)


def table_header(summary: str, section: SummarySection, position: int,
                 vocab: Vocabulary | None = None) -> list[str]:
    """The column names (lower case) of the table the row at `position` belongs to, or []."""
    vocab = vocab or vocabulary()
    lines = [(a, b) for a, b in _line_spans(summary[section.body_start:section.end])]
    rows = [(section.body_start + a, summary[section.body_start + a:section.body_start + b])
            for a, b in lines]
    header: list[str] = []
    for index, (start, line) in enumerate(rows):
        if start > position:
            break
        if not line.strip() or not (_TABLE_ROW.match(line) or _TABLE_RULE.match(line)):
            header = []
            continue
        next_line = rows[index + 1][1] if index + 1 < len(rows) else ""
        if _is_table_header(line, next_line, vocab):
            header = [c.lower().rstrip(":") for c in _cells(line)]
    return header


_LABELLED_LINE = re.compile(r"\s*[A-Z][A-Za-z]+(?: [A-Za-z]+){0,2}:\s+\S")


_LEFT_OPEN = frozenset({"the", "her", "his", "a", "an", "your", "their", "its", "our", "my", "this", "that"})
# Words that go on with the line above ("then 30 mg ...", "and 5 mg at night").
_GOES_ON = frozenset({"then", "and", "or", "with", "for", "to", "until", "if", "but", "max", "x", "plus",
                      "as", "at", "in", "on", "before", "after", "when", "while", "not", "do", "take",
                      "give", "apply", "use", "inhale", "inject", "reduce", "increase", "decrease",
                      "every", "each", "once", "twice", "daily", "only", "by", "via", "from", "of"})


def _opens_a_medicine_line(line: str, above: str, vocab: Vocabulary) -> bool:
    """"pantoprazole 40 mg PO once daily" under "predniSONE 5 mg tabs - taper: ... [NEW]":
    a list line that starts with a name (lower case, as generic names are written) and
    gives a dose within its first words is a new item, unless the line above is left
    mid-sentence ("We have stopped" / "bendroflumethiazide 2.5mg ...", "..., lisinopril
    10 mg PO daily," / "hydroxychloroquine 200 mg PO BID.")."""
    words, ends = line.split(), above.split()[-1:] or [""]
    return (bool(words) and re.fullmatch(r"[A-Za-z][\w-]*", words[0]) is not None
            and words[0].lower() not in _GOES_ON and words[0].lower() not in vocab.status_words
            # (a brand in brackets is no word: "ferrous fumarate (Palafer) 300 mg")
            and bool(_quantities(" ".join(re.sub(r"\([^()]{1,30}\)", " ", line).split()[:4]), vocab))
            and not above.rstrip().endswith(",")
            # "... [NEW]", "... - no change" close a line; "We have stopped" leaves it open
            # ("- lowered your sodium; do not restart": the dash's note, closed)
            and (re.search(r"[\])]$|\s[-–—]{1,2}\s*[\w' .;]{1,40}$", above.rstrip()) is not None
                 or ends[0].lower().strip("()[],;") not in _GOES_ON | vocab.status_words | _LEFT_OPEN))


# An after-visit summary's labelled reason under a medicine, to the end of its line.
_LABELLED_WHY = re.compile(r"\b(?:indications?|why\s+(?:on\s+hold|held|stopped|paused|changed)|"
                           r"reason(?:\s+for\s+(?:stopping|holding|change))?)\s*:[ \t]*"
                           r"(?P<why>(?:[^.\n]|(?<=\b[A-Z])\.(?=\s?[a-z])|\.(?=\S))+)",
                           re.IGNORECASE)

# How an after-visit summary's instruction under a medicine's name begins.
_SIG_START = re.compile(r"\s*(?:take|inject|apply|use|give|inhale|place|dissolve|chew|insert|instill|spray|"
                        r"put|swallow|mix|you were taking|given in (?:the )?hospital)\b", re.IGNORECASE)


def _names_its_medicine(block: str, vocab: Vocabulary) -> bool:
    """An after-visit summary's head of a medicine: its name, strength and form alone
    ("amLODIPine 5 MG tablet"), or with "Commonly known as: NORVASC" under it."""
    lines = [line for line in block.split("\n") if line.strip()]
    if len(lines) == 2 and _KNOWN_AS.match(lines[1]):
        return True
    return (len(lines) == 1 and len(lines[0].split()) <= 6 and _opens_a_medicine_line(lines[0], "", vocab)
            and not vocab.timings(lines[0]) and not _SIG_START.search(lines[0]))


def _is_status_label(text: str, vocab: Vocabulary) -> bool:
    """"Not yet - restart on 04/25/2025" over the lines it labels: a status, no medicine, no dose."""
    return (len(text.split()) <= 8 and "\n" not in text.strip() and bool(_status(text, vocab))
            and not _quantities(text, vocab)
            and not any(vocab.is_medicine_word(m.group(0)) for m in vocab.stem_word.finditer(text)))


# An after-visit summary's line under a medicine: "Commonly known as: ZESTRIL", "What
# changed: how often to take this"
_KNOWN_AS = re.compile(r"\s*(?:commonly\s+|also\s+)?known\s+as\s*:|\s*brand(?:\s+names?)?\s*:|"
                       r"\s*what\s+changed\s*:", re.IGNORECASE)


def section_items(summary: str, section: SummarySection) -> list[tuple[int, int]]:
    """The items of a section: each line of a list (with the lines it wraps onto), and the
    sentences of a paragraph, its lines wrapped at a fixed width joined again.  A table's
    header row and rule are no items: they name the columns.

    Long: one pass over the lines, where each rule of joining a line to the item above needs
    the items read so far (the order of the rules decides)."""
    if not section.is_content:
        return []
    vocab = vocabulary()
    prose = section.effective_kind not in _LIST_SECTIONS
    blocks: list[list | None] = []  # [start, end, bulleted, indent], or None for a blank line
    lines = _line_spans(summary[section.body_start:section.end])
    row_column = 0  # where a space-aligned table's labelled rows start their text
    signed: set[int] = set()  # where a medicine's head with its instructions below starts
    spaced_table = False  # below a space-laid table's header, until a blank line
    for index, (start, end) in enumerate(lines):
        a, b = section.body_start + start, section.body_start + end
        line = summary[a:b]
        if not line.strip():
            blocks.append(None)
            spaced_table = False
            continue
        next_line = next((summary[section.body_start + c:section.body_start + d]
                          for c, d in lines[index + 1:index + 2]), "")
        if _TABLE_RULE.match(line) or _is_table_header(line, next_line, vocab):
            blocks.append(None)
            spaced_table = not _TABLE_ROW.match(line) and not _TABLE_RULE.match(line)
            continue
        if spaced_table and not line[:1].isspace():
            blocks.append([a, b, False, 0])  # a row of a table laid out with spaces
            continue
        bulleted = bool(LIST_ITEM.match(line)) or bool(_TABLE_ROW.match(line))
        previous = blocks[-1] if blocks else None
        indent = len(line) - len(line.lstrip())
        labelled = _ROW_LABEL.match(line)
        # "Started:       Folic acid 5 mg ..." over "               Accrete D3 ...": a row of
        # a space-aligned table starts where the label's row starts its text
        row_column = labelled.end() if labelled else row_column if indent >= row_column - 1 else 0
        new_row = bool(row_column) and not labelled and abs(indent - row_column) <= 1
        if previous is not None and _KNOWN_AS.match(line) and "\n" in summary[previous[1]:a]:
            previous[1] = b  # "Commonly known as: CIPRO" under its medicine's line
            continue
        if previous is not None and not prose and summary[previous[1]:a].count("\n") == 1 \
                and _SIG_START.match(line) and _names_its_medicine(summary[previous[0]:previous[1]], vocab):
            previous[1] = b  # "Take 1 tablet ... by mouth daily." under "amLODIPine 5 MG tablet"
            signed.add(previous[0])  # one item, however long
            continue
        if previous is not None and not bulleted and indent > previous[3] and not new_row and \
                "\n" in summary[previous[1]:a] and not _is_status_label(summary[previous[0]:previous[1]], vocab) \
                and not (summary[previous[0]:previous[1]].rstrip().endswith(":")
                         and re.match(r"\s*[A-Za-z][\w-]*(?:\s+[A-Za-z][\w-]*)?(?:\s+\([^()]{1,30}\))?\s+"
                                      r"\d", line) and _quantities(line, vocab)):
            # an indented line goes on with the item above it (not a medicine's line under
            # a lead-in: "H. pylori treatment - all three for 14 days:" over three of them)
            previous[1] = b
            continue
        if previous is not None and not bulleted and not (
                index and lines[index - 1][1] != start - 1 and summary[
                    section.body_start + lines[index - 1][1]:a].strip()):
            so_far = summary[previous[0]:previous[1]].rstrip()
            last_line = so_far.rsplit("\n", 1)[-1]
            # A line continues the one before when that one is left open (no full stop,
            # colon or semicolon) and this one reads on: lower case, or prose wrapped at
            # a fixed width.
            # A line that opens with its own label ("Secondary: AKI, ...") starts an item.
            if not re.search(r"[.!?:;]$", so_far) and "\n" in summary[previous[1]:a] and not \
                    _LABELLED_LINE.match(line) and not (not prose and _opens_a_medicine_line(line, so_far, vocab)) and (
                    line.lstrip()[:1].islower() or line.lstrip()[:1] == "("
                    # "..., atorvastatin\n20 mg at night": a dose wrapped away from its name
                    or vocab.quantity.match(line.lstrip()) and re.search(r"[A-Za-z]{4,}$", so_far)
                    and vocab.is_medicine_word(so_far.split()[-1])
                    or (prose and len(last_line) >= 50)
                    # a paragraph typed in capitals, wrapped at a fixed width ("... UNTIL THE
                    # CLINIC SAYS HE IS" / "NO LONGER INFECTIOUS.")
                    or (len(last_line) >= 60 and last_line.isupper() and line.strip().isupper()
                        and not LIST_ITEM.match(line) and section.effective_kind != "medications"
                        and not _quantities(" ".join(line.split()[:5]), vocab))
                    or (previous[2] and line[:1].isspace())):
                previous[1] = b
                continue
        blocks.append([a + indent, b, bulleted, indent])
    spans = []
    for block in blocks:
        if block is None:
            continue
        a, b, bulleted, indent = block
        # A list's line with its instructions indented below it ("amLODIPine 5 mg tablet" over
        # "Crush 1 tablet ...", "What changed: ...") is one item, however long.
        held_under = a in signed or not prose and "\n" in summary[a:b] and all(
            len(line) - len(line.lstrip()) > indent or _KNOWN_AS.match(line)
            for line in summary[a:b].split("\n")[1:] if line.strip())
        # "predniSONE 5 mg tabs - taper: ... clinic. Do not stop suddenly. [NEW]": one line of
        # a list that opens with a medicine is its item, whatever its sentences
        one_medicine = not prose and "\n" not in summary[a:b] and _opens_a_medicine_line(summary[a:b], "", vocab)
        # Running text is cut into sentences; a list item stays whole unless it runs on.
        if (not bulleted or prose and b - a > 200) and (prose or b - a > 160) and not held_under \
                and not one_medicine:
            spans.extend(_sentences(summary, a, b))
        else:
            spans.append((a, b))
    return _trimmed(summary, spans)


_SALT_THEN_SLASH = re.compile(rf"\s+{SALT_WORD}\s*/\s*")


# (one word, not the first of a longer brand, "Inj. Human Mixtard 30/70", "Tab. Glycomet GP 2",
# which a list line's own reading keeps whole)
_NAMED_AFTER_DOSE_FORM = re.compile(rf"(?<![\w.]){DOSE_FORM_SHORTHAND}\.\s+(?P<name>[A-Z][a-z]{{3,}}(?:-[A-Za-z]+)?)\b"
                                    r"(?!\s+[A-Z0-9])")


def medicine_names(text: str, glossary: Glossary | None, vocab: Vocabulary | None = None,
                   matches: list[GlossaryMatch] | None = None) -> list[tuple[int, int, str, str]]:
    """(start, end, name as written, key) of every medicine named in `text`: by the
    glossary (key: its entry, so a brand and its generic name agree; `matches`: the
    glossary's matches in `text`, when the caller has them), then by name stem or the
    vocabulary's medicine names (key: the name in lower case)."""
    vocab = vocab or vocabulary()
    found: list[tuple[int, int, str, str]] = []
    if glossary is not None:
        for match in glossary.match(text) if matches is None else matches:
            # The glossary files dose forms (tablet, capsule) as medications too.
            if (match.category == "medication" and match.text.lower() not in vocab.units
                    and match.text.lower() not in vocab.not_medicines):
                found.append((match.start, match.end, match.text, match.key))
    known = list(found)
    for match in vocab.stem_word.finditer(text):
        start, end, name = match.start(), match.end(), match.group(0)
        # A name over one the glossary knows is kept ("tiotropium/olodaterol", "ethinyl
        # estradiol"), one that only overlaps it is not.
        if not vocab.is_medicine_word(name) or any(start < e and s < end and not (start <= s and e <= end
                                                                                  and end - start > e - s)
                                                   for s, e, _, _ in known):
            continue
        found.append((start, end, name, name.lower()))
    # "Tab. Nimesulide", "Inj. Piptaz": the word after a dose form's shorthand names a
    # medicine, known or not.
    for match in _NAMED_AFTER_DOSE_FORM.finditer(text):
        start, end = match.span("name")
        if not any(start < e and s < end for s, e, _, _ in found):
            # its generic name in brackets after it ("Tab. Ecosprin (Aspirin)") gives its entry
            generic = next((key for s, _e, _n, key in found
                            if re.fullmatch(r"\s*\(\s*", text[end:s])), match.group("name").lower())
            found.append((start, end, match.group("name"), generic))
    # "Coloxyl with Senna" is one product: a name inside a longer one is part of it.
    found = [f for f in found if not any(o[0] <= f[0] and f[1] <= o[1] and o[1] - o[0] > f[1] - f[0]
                                         for o in found)]
    # "Tiotropium/olodaterol", "Lisinopril-HCTZ": a combination is one product, another
    # than either of its parts (its own key, so a stop of plain tiotropium is not its stop).
    joined: list[tuple[int, int, str, str]] = []
    for start, end, name, key in sorted(found):
        # Its salt may stand between them: "Fluticasone furoate/umeclidinium/vilanterol".
        if joined and (text[joined[-1][1]:start] in ("/", "-", " + ", "+")
                       or _SALT_THEN_SLASH.fullmatch(text[joined[-1][1]:start])):
            start = joined.pop()[0]
            name = text[start:end]
            key = name.lower()
        joined.append((start, end, name, key))
    found = joined
    # "Tylenol #3" (with codeine) is another product than Tylenol: its own name and key.
    numbered = []
    for start, end, name, key in found:
        # ("Tylenol PM", "Advil PM": a night-time product with a sleep aid, not a timing)
        suffix = re.match(r"\s*#\s?\d\b", text[end:]) or (re.match(r" PM\b", text[end:])
                                                          if name.lower() in _PM_BRANDS else None)
        if suffix:
            end += suffix.end()
            name = text[start:end]
            key = name.lower()
        numbered.append((start, end, name, key))
    # "Insulin pump - HOLD", "glucose meter": a device, not the medicine it holds or reads
    return sorted(n for n in numbered if not _DEVICE_AFTER.match(text, n[1]))


_DEVICE = r"(?:pumps?|meters?|monitors?|sensors?|test\s+strips|strips|infusion\s+sets?|cannulas?|lancets?|pump\s+supplies)"
_DEVICE_AFTER = re.compile(rf"\s+{_DEVICE}\b", re.IGNORECASE)
# "Insulin pump": a device a list line names, which is used, worn or kept off, never taken
NAMES_A_DEVICE = re.compile(rf"\b{_DEVICE}$", re.IGNORECASE)


# Pain relievers sold with a sleep aid as "<brand> PM"
_PM_BRANDS = frozenset({"tylenol", "advil", "aleve", "motrin", "excedrin", "bayer"})


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


# ---- the fields of a medicine's line -----------------------------------------------------


def _number_text(number: str) -> str:
    """'1,000' -> '1000', '0,5' -> '0.5', '8.60' -> '8.6'."""
    if "/" in number:
        return number
    return f"{number_value(number):g}"


@dataclass
class _Quantity:
    start: int
    end: int
    text: str   # as Lumen writes it: "8.6 mg", "2 tablets", "15 mg/5 mL", "1-2 tablets"
    unit: str   # the unit's normal form ("mg", "tablet"); a concentration's is its volume's
    concentration: bool = False


# "i-ii tabs", "ii caps": a count of tablets in lower-case Roman numerals
_ROMAN_COUNT = re.compile(r"(?<![\w.])(?-i:(i{1,3}|iv))(?:\s*-\s*(?-i:(i{1,3}|iv)))?(?=\s*(?i:tabs?|tablets?|caps?|"
                          r"capsules?|puffs?)\b)")
_ROMAN = {"i": "1", "ii": "2", "iii": "3", "iv": "4"}


def _arabic_count(match: re.Match) -> str:
    """The Roman count in figures, padded to its length (so the line's positions hold)."""
    written = _ROMAN[match.group(1)] + (f"-{_ROMAN[match.group(2)]}" if match.group(2) else "")
    return written.ljust(len(match.group(0)))


def _patch_rates(text: str, vocab: Vocabulary) -> list[_Quantity]:
    """A patch's rate: "21 mg/24 h", "25 mcg/hr" (what it gives each day or hour); a
    ceiling ("max 3 mg/hr") is no dose."""
    found = []
    for m in re.finditer(rf"(?<![\w.])(\d+(?:[.,]\d+)?)\s*({vocab.unit_pattern})\s*(?:/|per\s+)\s*(?:(16|24|72)\s*)?"
                         rf"(?:h|hr|hrs|hours?)\b", text, re.IGNORECASE):
        term = vocab.units[m.group(2).lower()]
        ceiling = re.search(r"\b(?:max(?:imum)?|no more than|up to|not (?:to )?exceed)\W*$",
                            text[max(0, m.start() - 25):m.start()], re.IGNORECASE)
        if term.value in vocab.dose_units and term.value not in vocab.dose_forms and not ceiling:
            per = f"{m.group(3)} hours" if m.group(3) else "hour"
            found.append(_Quantity(m.start(), m.end(), f"{_number_text(m.group(1))} {term.plain}/{per}",
                                   term.value))
    return found


def _quantities(text: str, vocab: Vocabulary) -> list[_Quantity]:
    """The doses `text` writes, in order: "15 mg/5 mL" as one concentration, "2-4 puffs" as
    one range, and "1 unit per 12 g" as one ratio."""
    text = _ROMAN_COUNT.sub(_arabic_count, text)
    unit = vocab.unit_pattern
    number = r"\d+(?:[.,]\d+)?"
    found: list[_Quantity] = []
    # ("7.5-325 mg/15 mL", "400/57 mg/5 mL", "400 mg/57 mg per 5 mL": a combination's two
    # strengths in one volume)
    concentration = re.compile(rf"(?<![\w.])({number}(?:\s*(?:{unit})?\s*[-/]\s*{number})?)\s*({unit})\s*"
                               rf"(?:/|\bper\b)\s*({number})?\s*({unit})(?![\w/])", re.IGNORECASE)
    # "90 mcg/puff", "50 mcg/spray": the strength of each one taken
    for m in re.finditer(rf"(?<![\w.])({number})\s*({unit})\s*(?:/|per\s+)(?:puff|spray|actuation|inhalation|"
                         rf"drop|dose)\b", text, re.IGNORECASE):
        term = vocab.units[m.group(2).lower()]
        found.append(_Quantity(m.start(), m.end(), f"{_number_text(m.group(1))} {term.plain}", term.value))
    found += _patch_rates(text, vocab)
    for m in concentration.finditer(text):
        first, second = vocab.units[m.group(2).lower()], vocab.units[m.group(4).lower()]
        if any(q.start <= m.start() < q.end for q in found):
            continue
        if first.value in vocab.dose_units and second.value in ("ml", "l"):
            per = f"{_number_text(m.group(3))} " if m.group(3) else ""
            strength = re.sub(r"[\d.,]+", lambda n: _number_text(n.group(0)),
                              re.sub(r"\s+|[A-Za-z]+", "", m.group(1)))  # ("400 mg/57": the first unit is the second's)
            found.append(_Quantity(m.start(), m.end(), f"{strength} {first.plain}/{per}{second.plain}",
                                   second.value, True))
    words = "|".join(NUMBER_WORDS)
    # "2-4 puffs", and "2.5ml to 5ml" with the unit written twice (the same unit)
    ranged = re.compile(rf"(?<![\w.])({number}|{words})\s*(?P<first>{unit})?\s*(?:-|–|to|or)\s*({number}|{words})"
                        rf"\s*-?\s*({unit})(?![\w/])", re.IGNORECASE)
    # (read where no concentration is, so "5 mg/5 mL - 2.5 mL to 5 mL" is not read from its "5 mL")
    masked = text
    for q in found:
        masked = masked[:q.start] + " " * (q.end - q.start) + masked[q.end:]
    for m in ranged.finditer(masked):
        term = vocab.units[m.group(4).lower()]
        if m.group("first") and (vocab.units[m.group("first").lower()].value != term.value
                                 or re.search(r"\bfrom\s*$", text[:m.start()], re.IGNORECASE)):
            continue  # "reduced from 40 mg to 20 mg" is a change, not a range
        if not any(q.start <= m.start() < q.end for q in found):
            found.append(_Quantity(m.start(), m.end(),
                                   f"{_number_text(m.group(1))}-{_number_text(m.group(3))} {term.plain}",
                                   term.value))
    for m in vocab.quantity.finditer(text):
        if any(q.start <= m.start() < q.end or q.start < m.end() <= q.end for q in found):
            continue
        if text[max(0, m.start() - 1):m.start()] == "/":
            continue  # the volume of a concentration
        term = vocab.units[m.group(2).lower()]
        value = number_value(m.group(1)) if "/" not in m.group(1) else 0
        written = term.written(value)
        found.append(_Quantity(m.start(), m.end(), f"{_number_text(m.group(1))}"
                                                   f"{'' if written == '%' else ' '}{written}",
                               term.value))
    # "2 x 500 mg tablets": how many of the strength, written as a multiplication
    for m in re.finditer(rf"(?<![\w.])(\d{{1,2}})\s*[x×]\s*{number}(?:/{number})?\s*(?:{unit})\s+({unit})\b", text,
                         re.IGNORECASE):
        form = vocab.units.get(m.group(2).lower())
        if form is not None and form.value in vocab.dose_forms and not any(
                q.unit in vocab.dose_forms and q.start >= m.start() and q.end <= m.end() for q in found):
            count = int(m.group(1))
            found = [q for q in found if not (q.unit == form.value and m.start() <= q.start < m.end())]
            found.append(_Quantity(m.start(), m.start() + len(m.group(1)),
                                   f"{count} {form.written(count)}", form.value))
    found.sort(key=lambda q: q.start)
    # A dose by ratio: "1 unit per 12 g (of carbohydrate)", "1 unit/10 g".
    for first, second in zip(found, found[1:]):
        between = text[first.end:second.start]
        if first.unit == "unit" and second.unit == "g" and re.fullmatch(r"\s*(?:per|for every|/|:)\s*",
                                                                         between):
            first.text = f"{first.text} per {second.text}"
            first.end = second.end
            found.remove(second)
            break
    return [q for q in found if (q.unit in vocab.dose_units or q.unit == "dose") and not _supplied(q, text, vocab)]


def _supplied(q: _Quantity, text: str, vocab: Vocabulary) -> bool:
    """Whether an amount is what was supplied, no dose ("A small supply (21 tablets)", "Qty:
    30 tablets", "(#6 tablets, no refills)", "(12 tablets, no refills)", "| 8 tablets only"):
    read as a dose it told a patient to take 12 tablets of an opioid at once."""
    return bool(re.search(r"(?:\b(?:supply|supplied|dispensed|disp|qty|quantity)|#)\W{0,3}(?:\w+\W{1,3}){0,2}$",
                          text[max(0, q.start - 30):q.start], re.IGNORECASE)
                or _REFILLS_AFTER.match(text, q.end)
                or (_ONLY_AFTER.match(text, q.end) and re.search(r"[|(]\s*$", text[max(0, q.start - 3):q.start]))
                # "... every 6 hours PRN severe pain, for up to 3 days (10 tablets)": a count
                # alone in brackets after the timing
                or (q.unit in vocab.dose_forms and re.search(r"\(\s*$", text[max(0, q.start - 3):q.start])
                    and re.match(r"\s*\)", text[q.end:]) and vocab.timings(text[:q.start])))


# Words after a number of tablets that make it the supply, not a dose: the refills
# beside it, or "only" closing a table's cell or a bracket ("| 8 tablets only |"; a line's
# "Take 1 tablet only" is a dose).
_REFILLS_AFTER = re.compile(r"(?:\s+only)?\s*,?\s*(?:no|zero|\d+|one|two|three)\s+refills?\b"
                            r"|\s+(?:dispensed|supplied)\b", re.IGNORECASE)  # ("10 tablets dispensed")
_ONLY_AFTER = re.compile(r"\s+only\s*(?:$|[|)\n])", re.IGNORECASE | re.MULTILINE)


def _dose_and_count(quantities: list[_Quantity], vocab: Vocabulary) -> tuple[str, str]:
    """(dose, count) of a line's doses: the first strength, and what is taken beside it."""
    strengths = [q for q in quantities if q.unit not in vocab.dose_forms and q.unit != "dose"
                 and not q.concentration]
    concentrations = [q for q in quantities if q.concentration]
    forms = [q for q in quantities if q.unit in vocab.dose_forms]
    if concentrations:
        given = [q for q in strengths if q.unit in ("ml", "l") and q.start > concentrations[0].start]
        given = given or forms
        if not given:
            return concentrations[0].text, ""
        return concentrations[0].text, _volume_with_amount(given[0], quantities, vocab)
    if strengths:
        return strengths[0].text, forms[0].text if forms else ""
    if forms:
        return forms[0].text, ""
    return "", ""


def _volume_with_amount(volume: _Quantity, quantities: list[_Quantity], vocab: Vocabulary) -> str:
    """A volume taken, with how much medicine it holds when the summary says so right after
    it ("4.4 mL (220 mg)")."""
    holds = next((q for q in quantities if q.unit in vocab.dose_units and 0 < q.start - volume.end <= 2), None)
    return f"{volume.text} ({holds.text})" if holds else volume.text


def _maximum(text: str, vocab: Vocabulary) -> tuple[str, tuple[int, int] | None]:
    """The most to take in a day, as written ("3000 mg per day"), and where it is."""
    words = "|".join(sorted(NUMBER_WORDS, key=len, reverse=True))  # "no more than four tablets"
    pattern = re.compile(rf"{_MAXIMUM_LEAD}(?P<amount>(?:\d[\d,.]*|(?:{words})\b)(?:\s*(?:-|to)\s*\d+)?\s*-?\s*"
                         rf"(?:{vocab.unit_pattern}))(?!\w)(?:{_PER_DAY})?", re.IGNORECASE)
    for m in pattern.finditer(text):
        lead = m.group(0)[:m.start("amount") - m.start()].lower()
        per = "in 24 hours" if m.group("hours") else "per day" if (m.group("daily")
                                                                    or m.group("day")) else ""
        if lead.startswith(("up to", "at most")) and not per and not re.match(
                r"\d+\s*doses?\b", m.group("amount"), re.IGNORECASE):
            continue  # "up to 2 tablets" is a dose, not a ceiling; "up to 3 doses" is one
        quantities = _quantities(m.group("amount"), vocab)
        amount = quantities[0].text if quantities else ""
        if not amount:
            doses = re.match(r"(\d+)\s*(doses?)", m.group("amount"), re.IGNORECASE)
            amount = f"{doses.group(1)} {'dose' if doses.group(1) == '1' else 'doses'}" if doses else ""
        if amount:
            return f"{amount} {per}".strip(), m.span()
    return "", None


def _clock_times(text: str) -> str:
    """The clock times a dose is taken at ("at 08:00, 12:00 and 16:00"), not the limits
    around them ("not after 6 pm")."""
    times = []
    for m in _CLOCK.finditer(text):
        if re.search(r"\b(?:after|before|by|until|later than|earlier than|past)\s*$", text[:m.start()],
                     re.IGNORECASE):
            continue
        if m.group("h24"):
            times.append(f"{m.group('h24')}:{m.group('m24')}")
        else:
            minutes = f":{m.group('m')}" if m.group("m") else ""
            times.append(f"{int(m.group('h'))}{minutes} {m.group('ap').lower()}m")
    return ", ".join(dict.fromkeys(times))


def uk_dose_times(text: str) -> str:
    """`text` with the UK's "ON" and "OM" after a dose in words: "40 mg PO ON", "| ON |",
    "2 tabs on    Constipation" (omni nocte) at night, never the word "on"; "30 mg om"
    (omni mane) in the morning."""
    after_dose = (r"(\|\s*|(?:(?<=\d)|\b)(?:mg|g|mcg|micrograms?|units?|UNITS?|tabs?|tablets?|caps?|sachets?|PO|po|oral|"
                  r"Oral|S/C|s/c|SC|sc|SUBCUT|subcut|INH|inh)\s+)")
    # ("... ON -> 80 mg ON", "400 micrograms ON - no change")
    # ("75 mg OM via PEG", "30 mg OM dispersed in water": the route or a note after it)
    ends = (r"(?=[ \t]*(?:\||$|PRN\b|prn\b|[,;])|[ \t]{2,}|[ \t]+(?:for|then|x|via|through|with|before|after|"
            r"dispersed|crushed)\b|[ \t]+(?:->|→|[-–—]\s))")
    text = re.sub(after_dose + r"O\.?N\.?" + ends, r"\1at night", text)
    return re.sub(after_dose + r"(?:o\.?n\.?|O\.?M\.?|o\.?m\.?)" + ends,
                  lambda m: m.group(1) + ("at night" if m.group(0).rstrip(". ")[-1] in "nN" else "in the morning"),
                  text)


def _frequency(text: str, vocab: Vocabulary) -> tuple[str, bool]:
    """(frequency, as needed) of a line: its first regular timing, where a time of day
    ("at night", "every morning") says more than "once a day"; "as needed" when it gives
    no other."""
    # "to be taken regularly rather than when needed"
    text = re.sub(r"\b(?:rather than|instead of|not)\s+(?:only\s+)?(?:(?:when|as|if)\s+(?:needed|required)|prn)\b",
                  " ", text, flags=re.IGNORECASE)
    # "only if the CBC shows her hemoglobin holding": when it may restart, not "when needed"
    text = re.sub(r"\bonly\s+if\s+(?:(?:the|her|his|your|their|a)\s+)?(?:repeat\s+|next\s+)?(?:cbc|blood|tests?|labs?|"
                  r"levels?|h[a]?emoglobin|hb|kidney|creatinine|potassium|sodium|inr|scan|results?|doctor|"
                  r"clinic|gp|team|consultant|cardiologist|specialist|bp|pressure|pulse|sugars?|glucose|"
                  r"sodium|egfr|weight)\b", " ", text, flags=re.IGNORECASE)
    # "restart ramipril ... only if it is above 140/90": a condition for starting again
    # ("only if she is unconscious" stays when it is needed)
    text = re.sub(r"\bonly\s+if\s+(?:it|they)\s+(?:is|are|stays|remains)\s+(?:above|below|over|under|"
                  r"higher|lower|less|more|greater)\b", " ", text, flags=re.IGNORECASE)
    # "a daily seizure medicine", "his daily tablets": what it is, not how often
    text = re.sub(r"\bdaily\s+(?=(?:[a-z-]+\s+)?(?:medicines?|medications?|pills?|tablets?|injections?)\b)",
                  "      ", text, flags=re.IGNORECASE)
    timings = vocab.timing_values(uk_dose_times(text))
    regular = [t for t in timings if t != "as needed"]
    specific = [t for t in regular if t in ("morning", "bedtime")]
    # "once each morning": "once" there is how many times a day, not a single dose
    if specific and all(t in ("1/day", "once", "morning", "bedtime") for t in regular):
        frequency = specific[0]
    else:
        frequency = regular[0] if regular else (timings[0] if timings else "")
    return frequency, "as needed" in timings


def _without_discharge_dc(text: str, vocab: Vocabulary) -> str:
    """`text` with each "D/C" that means discharge ("D/C home", "D/C: 05/01") blanked, so
    that only a D/C that means stop is read as a status."""
    def blank(m: re.Match) -> str:
        return " " * (m.end() - m.start()) if vocab.dc_means_discharge(text, m) else m.group(0)
    return vocab.dc.sub(blank, text)


# A status marked out from the words around it: "[NEW]", "(CONTINUE)", "*** STOP ***",
# "- NEW (replaces ...)".
_STATUS_MARK = re.compile(r"[(\[]\s*(?P<inner>[A-Za-z/' ]{2,30}?)\s*(?:[)\],;]|\s[-–—])|\*{2,}\s*(?P<stars>[A-Za-z/' ]{2,30}?)"
                          r"\s*\*{2,}|(?:^|\s[-–—]{1,2}\s*)(?P<caps>[A-Z][A-Z/' ]{1,25}?)(?=\s*(?:$|[.,;(\[]))")


def _marked_status(text: str, vocab: Vocabulary) -> str:
    """The status a line marks out ("[NEW]", "(CONTINUE)"), which outweighs a status word
    in its sentences ("(CONTINUE). Do not take it for ...")."""
    for mark in _STATUS_MARK.finditer(text):
        word = mark.group("inner") or mark.group("stars") or mark.group("caps") or ""
        # "(new PEG site)" uses the word of another thing: a mark is its status words, and
        # at most one more ("(stopped today)")
        others = [w for w in word.lower().split() if w not in vocab.status_words]
        if word.lower().startswith("not "):
            continue  # "WITHHELD (not stopped)"
        if len(word.split()) <= 3 and " if " not in f" {word.lower()} " and len(others) <= 1:
            status = _status(word, vocab, marks=False)
            if status:
                return status
    return ""


# Status words in another sense: "may have added to her confusion", "new-onset AF", "at
# the start of each meal", "to reduce her risk"; and statuses said of the past or only
# on a condition.
# "Do not give ibuprofen if she is vomiting": when to leave a dose out, not a status.
_CONDITIONAL_NO = re.compile(r"\b(?:do not|don't|never)\s+(?:give|take|use)\s+(?:[\w-]+\s+){0,3}?"
                             r"(?:if|when|unless)\b", re.IGNORECASE)
# "In any future pregnancy she should start aspirin", "If you become pregnant, start ...": a
# medicine for later, no status now
_FOR_A_LATER_PREGNANCY = re.compile(r"\bin\s+(?:any|a|the|her|your|his|their|each)\s+(?:future|next|later|"
                                    r"subsequent)\s+pregnanc(?:y|ies)\b|\b(?:if|when|once|should)\s+(?:she|you)\s+"
                                    r"(?:becomes?|gets?|is|are|falls?)\s+pregnant\b", re.IGNORECASE)
_NOT_A_STATUS = re.compile(r"\badded\s+to\s+(?:her|his|their|the|your|this|that|its|it|a)\b|\bnew[- ]onset\b|"
                           r"\bnew(?:ly)?\s+diagnos\w*|\b(?:the|a)\s+(?:new\s+)?start\s+of\b|\b(?:at|from)\s+the\s+start\b|"
                           # "to reduce her risk of a clot": what it is for, not a new dose
                           r"\bto\s+(?:reduce|lower|increase|decrease|raise)\s+(?!(?:the|her|his|your|its|this)?\s*"
                           r"(?:dose|dosage|to\b|from\b|by\b|\d))|"
                           # "reducing and then stopping": the end of a taper's last step
                           r"\b(?:and\s+)?then\s+stop(?:ping|s)?\b|"
                           # "NEW. Stop after the last prednisolone dose on 17/02/2025": its end
                           r"\bstop\s+(?:it\s+|taking\s+it\s+)?after\s+(?:the\s+|your\s+|his\s+|her\s+)?(?:last|final)\b|"
                           # "continue until your PCP tells you to stop": how long, not a stop
                           r"\b(?:continue\s+(?:(?:it|this|them|taking)\s+)?)?until\b[^.;()]{0,40}?\b"
                           r"(?:tells?|told|says?|asks?|advises?|advised)\s+"
                           r"(?:(?:you|her|him|them)\s+)?(?:to\s+)?(?:stop|change)\b|"
                           # "RESTARTED 08/02 after being held": what happened before
                           r"\bafter\s+being\s+(?:held|withheld|stopped|paused|omitted)\b|"
                           # "no supplement started"; "do not give aspart if she is not eating"
                           r"\b(?:no|not|never)\s+(?:\w+\s+)?(?:started|commenced|initiated|added)\b|"
                           # "meds being held by partner": kept by someone, not paused
                           r"\b(?:being\s+|are\s+|is\s+)?held\s+by\s+(?:her|his|their|the|a|an|family|partner|"
                           r"wife|husband|mother|father|son|daughter)\b|"
                           # "decide whether to restart cilazapril": a question for the doctor
                           r"\b(?:decide|deciding|consider|considering|whether)\s+(?:(?:to|or not to|if|on)\s+)?"
                           r"(?:re-?start|resum|start|stop|increas|decreas|reduc|chang|continu)\w*|"
                           # "hold for loose stools", "hold if SBP < 100": when to skip a dose
                           r"\b(?:hold|skip|omit)\s+(?:(?:it|them|this|the dose|dose|doses)\s+)?(?:if|when|for\s+"
                           r"(?!\d|\w+\s+(?:days?|weeks?|doses?|months?)\b|(?:a|one|two|three|now|the)\b))|"
                           # "Hold the dose and call if HR under 55"
                           r"\b(?:hold|skip|omit)\s+(?:it|them|this|the (?:next )?dose|a dose|dose|doses)\s+(?:and|&)\s+"
                           r"(?:call|ring|phone|contact|tell|check)\b[^.;]{0,40}?\b(?:if|when)\b|"
                           rf"{_CONDITIONAL_NO.pattern}|"
                           # "as these increase bleeding risk": what they do, no change of dose
                           r"\b(?:these|this|they|it|which|that|both)\s+(?:can\s+|may\s+|will\s+)?(?:increases?|raises?|"
                           r"lowers?|reduces?|decreases?)\b|"
                           # "No medicines were stopped": of none of them
                           r"\b(?:no|none\s+of\s+(?:the|her|his|their|your))\s+(?:other\s+)?(?:medicines?|medications?|meds|"
                           r"drugs|tablets)\s+(?:were|was|have\s+been|has\s+been|are|is|needed\s+to\s+be)\s+"
                           r"(?:stopped|changed|started|held|ceased|discontinued)\b|"
                           r"\b(?:nothing|none)\s+(?:was|were|has\s+been|have\s+been)\s+(?:stopped|changed|ceased)\b|"
                           # "In any future pregnancy she should start aspirin": not now
                           rf"(?:{_FOR_A_LATER_PREGNANCY.pattern})[^.;]*|"
                           # "change every 72 hours", "change the patch twice weekly": how often
                           # a patch is replaced
                           r"\bchange\s+(?:(?:it|them|the|each|your|a)\s+)?(?:(?:new\s+)?(?:patch|patches|dressing)\s+)?"
                           r"(?:every|each|once|twice|weekly|daily|on\s+(?:mon|tue|wed|thu|fri|sat|sun))|"
                           # "(BSLs 11-15 once the SGLT2 inhibitor was stopped)": what happened
                           # to another medicine before
                           r"\b(?:once|after|since|when)\s+(?:the|her|his|their|your)\s+(?:[\w-]+\s+){1,3}"
                           r"(?:was|were|had\s+been)\s+(?:stopped|started|held|withheld|ceased)\b|"
                           # "Thank you for your continued care of Mrs X": the doctor's care
                           r"\bcontinued\s+(?:care|support|input|involvement|review)\b|"
                           # "the cardiologist will tell you when to stop": how long, not a stop
                           r"\b(?:tell|tells|told|say|says|advise|advises|decide|decides)\s+(?:(?:you|her|him|them|us)\s+)?"
                           r"when\s+to\s+stop\b|"
                           # "until you stop taking oxycodone": how long, by another medicine
                           r"\buntil\s+(?:you|she|he|they|we|the\s+patient)\s+(?:stop|finish|come\s+off)\w*"
                           r"(?:\s+(?:taking|using|giving|the|your|her|his))?\b|"
                           # "even though the diarrhea has stopped": something else came to an end
                           # (with nothing stopped after it: "We have stopped his zopiclone" is one)
                           r"\b(?:has|have|had)\s+(?:now\s+|already\s+|largely\s+)?stopped"
                           r"(?=\s*(?:[.,;:)]|(?:and|but|now|completely|altogether|on\s+its\s+own)\b))|"
                           # "(started in hospital)": when it began, said beside a status of now
                           r"\(\s*(?:was\s+)?started\s+(?:in|during|on|at)\s+(?:the\s+)?(?:hospital|admission|"
                           r"ward|icu|stay|this\s+admission)\s*\)",
                           re.IGNORECASE)


# What was done to a medicine during the stay ("withheld on admission", "suspended on the
# ward", "withheld for the first two days") is not its status when the line restarts it now
# ("- RECOMMENCE now"; "withheld on admission ... not restarted" stays a hold).
_DURING_THE_STAY = re.compile(r"\b(?:withheld|held|stopped|suspended|omitted|paused|ceased)\s+(?:(?:on|from|since|"
                              r"during|in|at)\s+(?:the\s+)?(?:admission|arrival|hospital|ward|(?:her|his|their|"
                              r"your|the)\s+(?:stay|admission))|for\s+the\s+first\s+(?:\d+|one|two|three|"
                              r"four|five|a few)\s+(?:days?|doses?|hours?|hrs)(?!\s+(?:after|following)\s+"
                              r"(?:discharge|going home)))\b", re.IGNORECASE)
# A restart that is now, not one to come ("resume once the creatinine settles" is a hold)
# ("has been restarted at the same dose from today")
_RESUMED_NOW = re.compile(r"\b(?:resum|restart|recommenc|re-?start)\w*\s+(?:[a-z]+\s+){0,5}?(?:now|today|"
                          r"at discharge|on discharge|from today)\b|\b(?:RESUME|RESTART|RECOMMENCE)\b")


def _status(text: str, vocab: Vocabulary, *, marks: bool = True) -> str:
    """The status a line leaves its medicine with (_line_status), not counting what was done
    to it during the stay when the line says what to do now."""
    now = _DURING_THE_STAY.sub(" ", text)
    if now != text:
        status = _line_status(now, vocab, marks=marks)
        if status == "resume" and _RESUMED_NOW.search(now):
            return status
    return _line_status(text, vocab, marks=marks)


def _line_status(text: str, vocab: Vocabulary, *, marks: bool = True) -> str:
    """The status a line states: a marked one first ("[NEW]", "(CONTINUE)"), its prefix
    ("STOP:"), else its words, where a longer
    phrase hides the words inside it ("no change" is not "change", "do not restart" is
    not "restart") and, between phrases that do not overlap, the vocabulary's order decides
    ("hold" before "stop")."""
    text = _NEGATED_STOP.sub(" ", _without_discharge_dc(text, vocab))  # "do not stop" says to continue
    text = text.replace("↑", " increase ").replace("↓", " decrease ")  # "↑ quetiapine 25 → 50 mg"
    text = _NOT_A_STATUS.sub(" ", text)
    marked = _marked_status(text, vocab) if marks else ""
    if marked:
        return marked
    prefix = _STATUS_PREFIX.match(text)
    for candidate in ([prefix.group("word")] if prefix else []) + [text]:
        found = [(m.start(1), m.end(1), rank, value)
                 for rank, (value, _plain, pattern) in enumerate(vocab.status_patterns)
                 for m in pattern.finditer(candidate)]
        kept = [f for f in found if not any(o[0] <= f[0] and f[1] <= o[1] and o[1] - o[0] > f[1] - f[0]
                                            for o in found)]
        if any(f[3] == "stopped" and any(r[3] == "resume" and r[0] > f[0] for r in kept) for f in kept):
            return "held"  # "do NOT take while on celecoxib; may resume 06/18": a pause
        if kept:
            return min(kept, key=lambda f: f[2])[3]
    return ""


def _until(text: str, order: str) -> str:
    # The last end date the text gives is the nearest to its dose ("LAST DOSE 04/17: 40 mg
    # every morning through 04/03" is 04/03 for this step)
    dates = []
    for ends in _ENDS_ON.finditer(text):
        window = text[ends.end():ends.end() + 45]
        date = next((date_value(m, order) for m in DATE.finditer(window) if date_value(m, order)), None)
        if date:
            dates.append(date)
    if dates:
        last = dates[-1]
        # "through 10/31/2025. Last dose evening of 10/31": the same day, with its year
        return next((d for d in dates if d[-5:] == last[-5:] and not d.startswith("--")), last)
    # ("do not stop when feeling well" is no end: the opposite)
    match = next((m for m in _UNTIL.finditer(text) if not (m.group(0).lower().startswith("stop") and re.search(
        r"\b(?:not|never)\s+$|n't\s+$", text[:m.start()], re.IGNORECASE))), None) or _RESUME_ON.search(text)
    if not match:
        return ""
    what = re.split(r"\s+(?:d/t|due to|because|with|as|so|and then)\b", _plain_space(match.group("what")),
                    flags=re.IGNORECASE)[0].strip()
    date = next((date_value(m, order) for m in DATE.finditer(what) if date_value(m, order)), None)
    return date or what


def _names_a_medicine(text: str, vocab: Vocabulary) -> bool:
    """Whether brackets hold another name of the medicine ("(Keflex)", "(Infant Tylenol)")
    rather than a reason: a medicine's name in a few capitalised words."""
    words = text.split()
    if words and all(vocab.is_medicine_word(w.strip(",;")) or w.lower() in ("and", "/", "+")
                     for w in words):
        return True  # "(pancrelipase)", "(cyanocobalamin)"
    return (len(words) <= 4 and text.strip()[:1].isupper() and not text.isupper()
            and (bool(vocab.stem_word.search(text)) or all(w[:1].isupper() or w.isupper()
                                                           or w.lower() in ("drops", "hfa", "xl", "er")
                                                           for w in words)))


def _needed_for(text: str, vocab: Vocabulary) -> str:
    """What a dose taken when needed is for ("PRN abdominal pain"), without a route before
    it or the line's status after it; '' for a line that says none."""
    needed = _AS_NEEDED_FOR.search(text)
    if not needed:
        return ""
    why = needed.group("why").strip()
    route = vocab.route.match(why)
    if route and why[route.end():].strip():  # "PRN via PEG for right shoulder pain"
        why = re.sub(r"^\s*for\s+", "", why[route.end():]).strip()
    # "p.r.n. knee pain, D/C.", "PRN nausea NEW": the line's status after what it is for
    tail = re.search(r"(?:[,;]\s*|\s+[-–—]\s*|\s+)(?P<tail>(?:(?:which|is|are|was|were|also)\s+)*"
                     r"[A-Za-z/]+(?:\s+[A-Za-z]+)?)$", why, re.IGNORECASE)
    if tail and why[:tail.start()].strip() and _line_status(tail.group("tail"), vocab):
        why = why[:tail.start()].strip()
    # "PRN pain with food": how it is taken is not what it is for
    for phrase in vocab.how_taken:
        taken = re.search(rf"[,;]?\s*(?:take\s+)?{re.escape(phrase)}\s*$", why, re.IGNORECASE)
        if taken and why[:taken.start()].strip():
            why = why[:taken.start()].strip()
            break
    return why


def _reason(text: str, vocab: Vocabulary, *, brackets: bool = True) -> str:
    """Why a medicine is taken, stopped or changed, as the line says it: what it is needed
    for ("PRN abdominal pain"); else the first the line gives of a reason in brackets, one
    after a status ("STOP - causes dizziness", "CEASED: hormone receptor positive"), or one
    after "for", "because", "due to", "as", "to prevent"."""
    needed = _needed_for(text, vocab)
    if needed:
        return needed
    found: list[tuple[int, str]] = []
    if brackets:
        for group in sorted([*_PARENS.finditer(text), *_LONG_PARENS.finditer(text)], key=lambda m: m.start()):
            if re.search(r"\b(?:including|such as|e\.g\.?|for example)\b", group.group(1), re.IGNORECASE) or (
                    "," in group.group(1) and all(vocab.is_medicine_word(word) for word in
                                                  group.group(1).split(",")[0].split())):
                # "(thiazides, including chlorthalidone)", "(naproxen, diclofenac, high-dose aspirin
                # products)": what else to avoid, not why
                continue
            offset = group.start(1)
            for part in re.split(r"[;,]", group.group(1)) if group.re is _PARENS else [group.group(1)]:
                inside = re.sub(r"^\s*(?:for|because of|due to)\s+", "", part, flags=re.IGNORECASE)
                if _reason_in_brackets(inside, vocab):
                    found.append((offset, inside.strip()))
                    break
                offset += len(part) + 1
            if found:
                break
    stopped = (_STOPPED_BECAUSE.search(text) or _DASH_REASON.search(text)
               or _STATUS_THEN_WHY.search(text))
    why = (stopped.group("why") or stopped.groupdict().get("why2") or stopped.groupdict().get("why3")
           or "") if stopped else ""
    if stopped and stopped.groupdict().get("why3") and not _reason_in_brackets(why, vocab):
        why = ""
    if why and not re.match(r"(?:until|till|then|and|or|for|because|due to|on|from|after|before|when|if)\b",
                            why, re.IGNORECASE) and not DATE.search(why) \
            and not _INSTRUCTION_START.match(why.strip()):
        found.append((stopped.start(), why.strip()))
    inside_brackets = [m.span() for m in [*_PARENS.finditer(text), *_LONG_PARENS.finditer(text)]]
    for cue in _REASON_CUE.finditer(text):
        match = _REASON_WHY.match(text, cue.end())
        if match is None or any(a <= cue.start() < b for a, b in inside_brackets):
            continue
        if re.search(r"\b(?:tests?|checks?|bloods|labs?|appointment|visit|clinic|review|x-ray|scan|"
                     r"monitoring)\s*$", text[:cue.start()], re.IGNORECASE):
            continue  # "a blood test for potassium": what the test is for
        why = _whole_words(text, match, "why").strip()
        if re.fullmatch(r"(?:this|that|these|those|it|them)\W*", why, re.IGNORECASE):
            continue  # "held because of this": the reason is in another sentence
        if re.match(r"(?:every|each|per)\s+\d", why, re.IGNORECASE):
            continue  # "1 unit for every 10 g of carbohydrate": a rate, no reason
        # "for 5 days" and "for some years" are durations, "for pain" a reason.
        if re.match(r"(?:another\s+|a total of\s+|the next\s+|no more than\s+|up to\s+|at least\s+|"
                    r"at most\s+|a further\s+)?\d|\w+\s+(?:more\s+)?(?:days?|weeks?|months?|years?)\b|(?:some|many|"
                    r"several|a few|a couple of|years|months|now|the time being|a while)\b", why):
            continue
        why = re.split(r"\s+(?:x\s*\d|until|then|max)\b|,?\s+(?:not|no) more than\b|"
                       r",\s*#?\d+\s+(?:tablets?|tabs?|capsules?|caps?)\b|\s+[-–—]\s|,\s*(?:to|and|which|who|then|"
                       r"with|but|so|as|if|only|once)\b|\s+(?:you|she|he|they|we)\s+(?:can|may|should|"
                       r"will|must|need)\b"
                       # the next instruction of an after-visit summary ("... bacteremia Take with water")
                       r"|\s+(?:Take|Do|Apply|Use|Inject|Check|Give|Avoid|Keep|Call|Hold|Skip)\s", why)[0].strip()
        pieces = why.split(",")
        while len(pieces) > 1 and _status(pieces[-1], vocab) and len(pieces[-1].split()) <= 3:
            pieces.pop()  # "for athlete's foot, new"
        found.append((cue.start(), ",".join(pieces).strip()))
        break
    purpose = _PURPOSE.search(text) or _IT_DOES.search(text)
    if purpose:
        found.append((purpose.start(), _whole_words(text, purpose, "why" if purpose.group("why") else "why2").strip()))
    # "- 06:00, 10:00, 14:00" after a dash gives the times, "new for him" whom, not a reason
    # and "- no longer needed" says what to do, not why
    found = [(position, why) for position, why in found if re.search(r"[A-Za-z]{3}|^[A-Z]{2}$", why)
             and not re.fullmatch(r"(?:to\s+)?(?:him|her|them|you|me|it|us|the patient)", why, re.IGNORECASE)
             and not re.fullmatch(r"(?:no longer|not)\s+(?:needed|required|indicated)", why, re.IGNORECASE)]
    return _clean_reason(min(found)[1]) if found else ""


def _ranked_reason(text: str, vocab: Vocabulary, *, brackets: bool = True) -> str:
    """The reason a line gives, preferring what its words say ("for X", "to prevent X",
    "STOP - X") to what brackets hold, which as often say why the dose is what it is
    ("(lower dose for your kidneys), to help with alcohol cravings")."""
    worded = _reason(text, vocab, brackets=False)
    return worded or (_reason(text, vocab) if brackets else "")


def _reason_in_brackets(inside: str, vocab: Vocabulary) -> bool:
    """Whether brackets hold a reason: not a dose, a date, a timing, a status alone, a
    weekday, another name of the medicine or its release form."""
    lowered = inside.lower().strip()
    if (lowered.startswith("was ") and _WAS.match(lowered)) or _NEGATED_STOP.search(lowered):
        return False
    return not (vocab.quantity.search(inside) or DATE.search(inside) or vocab.timings(inside)
                or _status(inside, vocab) and len(inside.split()) <= 3 or _CLOCK.search(inside)
                or lowered in NUMBER_WORDS
                # "(12 tablets, no refills)": the supply
                or re.fullmatch(r"(?:no|zero|\d+|one|two|three)\s+refills?", lowered)
                # "(PTA)", "(home med)": where it came from
                or lowered in ("pta", "home med", "home medication", "own supply", "prior to admission", "otc",
                               "rounded", "rounded up", "rounded down", "approx", "approximately",
                               # "(scheduled)": taken by the clock, not only when needed
                               "scheduled", "regular", "regularly", "routine", "around the clock")
                or lowered.startswith(("until", "through", "x ", "see ", "e.g", "i.e", "or ", "and ",
                                       # "(especially water pills)": examples of what the line names
                                       "especially ", "such as ", "including ", "like ", "for example"))
                # "(chew)", "(with food)": how to take it
                or re.match(r"(?:chew|crush|dissolve|swallow|disperse|with food|after food|before food|"
                            r"with meals|on an empty stomach|with water)\w*\b", lowered)
                or re.fullmatch(r"(?:on\s+)?(?:mon|tues|wednes|thurs|fri|satur|sun)days?", lowered)
                or re.fullmatch(r"[A-Za-z][A-Za-z0-9]{0,6}\s*[<>=]?\s*\d[\d.,/]*\s*\S*", inside.strip())
                or _names_a_medicine(inside, vocab) or not re.search(r"[A-Za-z]{3}", inside)
                or re.search(r"\b(?:usual|maintenance|starting|loading|total)\s+dose\b|\bbased on\b|"
                             r"/\s*kg\b|\bper\s+(?:dose|kg)\b|"
                             r"\btotal\b", lowered)
                or re.fullmatch(r"(?:immediate|extended|modified|slow|sustained|controlled|delayed)"
                                r"[ -]release|otc|over the counter|ec|er|xl|sr|cr|dr|xr|la", lowered)
                or vocab.route.fullmatch(lowered))


def _unit_word(unit: str, count: float) -> str:
    base = {"d": "day", "wk": "week", "wks": "week", "h": "hour", "hr": "hour", "hrs": "hour"}.get(
        unit.lower(), unit.lower().rstrip("s"))
    return base if count == 1 else base + "s"


def _plain_doses(text: str, vocab: Vocabulary) -> str:
    """`text` with its doses as Lumen writes them ("112 mcg daily" -> "112 micrograms daily")."""
    out, position = [], 0
    for quantity in _quantities(text, vocab):
        out += [text[position:quantity.start], quantity.text]
        position = quantity.end
    return "".join(out + [text[position:]])


# "atorvastatin 20 mg -> 80 mg qHS"
# ("25 -> 50 mg": the old dose in the new one's unit)
_ARROW = re.compile(r"(?<![-–\d.,/])(?P<from>\d[\d.,/]*(?:\s*[A-Za-z%]+(?:\s+(?:daily|bid|tid|qid|qd|od|bd|tds|qds|qhs|"
                    r"qam|qpm|nocte|mane|on|om|nightly|weekly|at night|in the morning|at bedtime|"
                    r"twice daily|once daily|twice a day|once a day))?)?)"
                    r"\s*(?:->|→|=>|-->)\s*(?P<to>\d[\d.,/]*\s*[A-Za-z%]+)", re.IGNORECASE)
# "5 days only", "7 day course"
# "PRN severe pain, max 5 days": how long at most
_DURATION_MAX = re.compile(r"\bmax(?:imum)?\.?\s+(?:of\s+)?(?P<n>\d+)\s*(?P<unit>days?|weeks?)\b", re.IGNORECASE)
_PLUS_CORRECTION = re.compile(r"\bplus\s+(?:a\s+)?correction\b|\b(?:add|give|plus)\s+(?:a\s+)?correction\s+dose\b",
                              re.IGNORECASE)
# "START 07/01/2025", "starting on 10/15": a first dose on a later date
_STARTS_ON = re.compile(r"\b(?:start|starting|begin|beginning|commence|commencing)\s+(?:on\s+|from\s+)?",
                        re.IGNORECASE)
# "2 more days (11/08, 11/09) then STOP. 5 days total.": what is left, before the course's total
_DURATION_MORE = re.compile(r"\b(?P<n>\d+|one|two|three|four|five|six|seven)\s+(?:more|further|additional)\s+"
                            r"(?P<unit>days?|weeks?)\b", re.IGNORECASE)
_DURATION_AFTER = re.compile(r"\b(?P<n>\d+)\s*-?\s*(?P<unit>days?|weeks?|months?)\s+(?:only|course|total|"
                             r"in total|supply)\b", re.IGNORECASE)


# "Completes 7 days in total (IV + oral)", "10 days total including inpatient doses": the
# whole course, with what was given in hospital, not what is left to take at home
_WHOLE_COURSE = re.compile(r"\bcomplet(?:es?|ing)\b|\b(?:in\s+)?total\s*(?:\(\s*)?(?:iv|including|incl\.?|with)\b",
                           re.IGNORECASE)


# A dose given only when something happens: "Give 1 spray (10 mg) in ONE nostril if a seizure
# lasts 5 minutes or longer" (the condition its reason).
_GIVEN_IF = re.compile(r"\b(?:give|take|use|inject|spray|inhale|apply)\b[^.;\n]{0,60}?\bif\s+"
                       r"(?P<condition>(?!needed|required|you\s+(?:can|need))[^.;,]{3,80}?)(?=\s*(?:[.;,]|\bor\s+if\b|$))",
                       re.IGNORECASE)


# A blood pressure as a summary writes it ("148/82", "106/64 mmHg"): a reading, no dose.
_READING = re.compile(r"\d{2,3}/\d{2,3}(?:\s*mm\s*hg)?", re.IGNORECASE)
# A sentence about using something else beside the medicine ("Use condoms as backup until
# Mar 22" under the pill): its date is not the medicine's end.
_OTHER_THING_USED = re.compile(r"(?:^|(?<=[.;\n])\s*)(?:use|wear|carry)\s+(?!(?:it|them|this|these|the|your|"
                               r"a|an|one|two|\d)\b)(?P<thing>[A-Za-z][\w-]*)[^.;\n]*", re.IGNORECASE)


_TRANSFUSION = re.compile(r"\b(?:\d+|one|two|three|four|five|six)\s+(?:units?|bags?|pools?)\s+of\s+(?:packed\s+)?"
                          r"(?:red\s+(?:blood\s+)?cells|blood|platelets|plasma|ffp|fresh\s+frozen\s+plasma|"
                          r"prbcs?|rbcs?|cryo\w*)\b", re.IGNORECASE)


def _without_other_timings(part: str, maximum_span: tuple[int, int] | None, was: re.Match | None,
                           vocab: Vocabulary) -> str:
    """`part` without the timings that are not this dose's: "Do not exceed 3000 mg per day"
    is a ceiling, not "once a day"; "REDUCED (was 80 mg twice daily)" is the timing of
    before (of a medicine held or stopped, the one to go back to)."""
    for a, b in ([maximum_span] if maximum_span else []) + (
            [was.span("from")] if was and _status(part, vocab) == "changed" else []):
        part = part[:a] + " " * (b - a) + part[b:]
    return part


def _times_a_day(clock_times: str, quantities: list[_Quantity], vocab: Vocabulary) -> str:
    """"2/day" for "ONE tablet at 08:00 and ONE tablet at 14:00"; '' for one time, or for
    two doses of their own ("40 mg at 08:00 and 20 mg at 14:00")."""
    times = len(clock_times.split(", ")) if clock_times else 0
    if 2 <= times <= 4 and len({q.text.lower() for q in quantities if q.unit not in vocab.dose_forms}) <= 1:
        return f"{times}/day"
    return ""


def _read_until(medication: Medication, part: str, vocab: Vocabulary, order: str) -> None:
    """The medicine's end date; not one the line gives for something else it names ("Use
    condoms as backup until Mar 22" under the pill), whose line is then quoted whole so
    that the date stays with what it is for."""
    other_use = _OTHER_THING_USED.search(part)
    if other_use is None or vocab.is_medicine_word(other_use.group("thing")):
        medication.until = _until(part, order)
        return
    medication.until = _until(part[:other_use.start()] + " " * (other_use.end() - other_use.start())
                              + part[other_use.end():], order)
    if _until(other_use.group(0), order):
        medication.doubt = ("its line gives a date for something else it names "
                            f"('{other_use.group(0).strip()}')")


# "ONE sachet twice a day in 125 mL water", "1 sachet in 1 litre of boiled and cooled water",
# "in 1 glass water": what a dose is mixed in; its volume is no dose
MIXED_IN = re.compile(r"\b(?:(?:dissolved|mixed|diluted|stirred)\s+)?in\s+(?P<volume>(?:about\s+)?\d+(?:\.\d+)?\s*"
                      r"(?:ml|mls|l|litres?|liters?)\b|(?:a|one|1|half\s+a)\s+(?:small\s+|full\s+)?(?:glass|cup|tumbler)\b|a\s+little)"
                      r"\s*(?:of\s+)?(?:[a-z]+\s+(?:and\s+)?){0,3}?(?:water|juice|milk)\b", re.IGNORECASE)


def _fields(medication: Medication, part: str, vocab: Vocabulary, order: str) -> None:
    """Fill `medication` with what `part` (the medicine's own words) says of it."""
    maximum, maximum_span = _maximum(part, vocab)
    changed = _FROM_TO.search(part) or _ARROW.search(part)
    if changed and all(_READING.fullmatch(changed.group(side).strip(" .,;")) for side in ("from", "to")):
        changed = None  # "blood pressures fell from 148/82 to 106/64": readings, no doses
    skip = [maximum_span] if maximum_span else []
    if changed:
        skip.append(changed.span("from"))
    was = _WAS.search(part)
    if was:
        skip.append(was.span("from"))  # "home dose was 5 mg" is no dose of today
    # "gave her two units of packed red cells": a transfusion, no dose of the medicine
    skip += [m.span() for m in _TRANSFUSION.finditer(part)]
    skip += [m.span("volume") for m in MIXED_IN.finditer(part)]
    quantities = [q for q in _quantities(part, vocab)
                  if not any(a <= q.start < b for a, b in skip)]
    dose, count = _dose_and_count(quantities, vocab)
    routes = list(vocab.route.finditer(part))
    # "oral solution ... Give 20 mL through PEG tube": a tube outweighs the form's word
    route = next((m for m in routes if vocab.routes[m.group(1).lower()].value == "through the feeding tube"),
                 routes[0] if routes else None)
    frequency, as_needed = _frequency(_without_other_timings(part, maximum_span, was, vocab), vocab)
    given_if = _GIVEN_IF.search(part) if not frequency else None
    if given_if:  # "Give 1 spray in one nostril if a seizure lasts 5 minutes or longer"
        frequency, as_needed = "as needed", True
    if changed and vocab.timings(part[changed.start("to"):]):
        # "reduced from 300 mg daily to 100 mg every other day": the new regimen's timing
        frequency = _frequency(part[changed.start("to"):], vocab)[0]
    medication.dose, medication.count = dose, count
    medication.route = vocab.routes[route.group(1).lower()].value if route else ""
    if not medication.route and any(q.unit == "puff" for q in quantities):
        medication.route = "inhaled"  # puffs are breathed in
    if not medication.route and any(q.unit == "patch" for q in quantities):
        medication.route = "on the skin"
    medication.frequency, medication.as_needed = frequency, as_needed
    medication.time = _clock_times(part)
    if not frequency:
        medication.frequency = _times_a_day(medication.time, quantities, vocab)
    medication.maximum = maximum
    _how_long(medication, part, vocab, order)
    # Brackets right after the name give another name ("rifAXIMin (XIFAXAN) 550 mg"), not why.
    named_as = re.match(r"[^(|\d]{1,45}?\(([^()]{1,40})\)", part)
    if named_as and len(named_as.group(1).split()) <= 3 and not _status(named_as.group(1), vocab):
        part = part[:named_as.start(1) - 1] + " " * (len(named_as.group(1)) + 2) + part[named_as.end():]
    medication.reason = _clean_reason(_ranked_reason(_plain_space(part), vocab))
    when_needed = re.search(rf"{re.escape(medication.reason)}\s*,\s*(?P<if>if\s+[^.;()]{{3,60}})",
                            _plain_space(part), re.IGNORECASE) if as_needed and medication.reason else None
    if when_needed:  # "PRN ... for constipation, if no bowel movement for 2 days": when it is needed
        medication.reason = f"{medication.reason}, {when_needed.group('if').rstrip(' ,')}"
    if given_if and not _AS_NEEDED_FOR.search(part):
        medication.reason = _plain_space(given_if.group("condition"))
    to_dose = _TO_DOSE.search(part)
    if changed:
        medication.status = medication.status or "changed"
        medication.changed_from = _plain_doses(changed.group("from").strip(), vocab)
        medication.changed_to = _plain_doses(changed.group("to").strip(), vocab)
        if re.fullmatch(r"[\d.,/]+", medication.changed_from) and " " in medication.changed_to:
            medication.changed_from += " " + medication.changed_to.split(" ", 1)[1]
    elif to_dose:
        medication.status = medication.status or "changed"
        medication.changed_to = _plain_doses(to_dose.group("to").strip(), vocab)
        was = _FROM_ONLY.search(part) or _WAS.search(part)
        if was:  # "increased to 1500 mg PO daily (from 1000 mg)"
            medication.changed_from = _plain_doses(was.group("from").strip(), vocab)
        elif dose and dose.split()[1:] == medication.changed_to.split()[1:] and dose != medication.changed_to \
                and part.find(dose.split()[0]) < to_dose.start():
            # "Lisinopril 20 mg PO daily: reduce to 10 mg PO daily": from the line's dose
            medication.changed_from, medication.dose = dose, medication.changed_to
    elif _FROM_ONLY.search(part):
        medication.status = medication.status or "changed"
        medication.changed_from = _plain_doses(_FROM_ONLY.search(part).group("from").strip(), vocab)
        medication.changed_to = dose
    elif _WAS.search(part) and medication.status in ("", "changed"):
        medication.status = "changed"
        medication.changed_from = _plain_doses(_WAS.search(part).group("from").strip(), vocab)
        medication.changed_to = dose
    if medication.status == "changed" and medication.changed_to and not dose:
        medication.dose = medication.changed_to


def _how_long(medication: Medication, part: str, vocab: Vocabulary, order: str) -> None:
    """How long a medicine is taken: for how many days, until when, and whether it starts
    on a later date ("Ferrous sulfate 325 mg daily, START 07/01/2025": a row that said only
    "NEW" would have the patient start it now, so the line is quoted)."""
    # ("no alcohol ... for 3 days after the last dose": a time after the course, not its length)
    # (nor "if no bowel movement for 2 days": how long something lasts before a dose is taken)
    duration = next((m for m in _DURATION.finditer(part) if not re.match(
        r"\s+(?:after|beyond|past)\s+(?:the\s+)?(?:last|final|end|finishing|stopping|completing)\b",
        part[m.end():], re.IGNORECASE) and not re.search(r"\bif\s+(?:there\s+is\s+|he\s+has\s+|she\s+has\s+|you\s+have\s+)?"
                                                        r"(?:no|not)\b[^.;,()]{0,40}$", part[:m.start()], re.IGNORECASE)),
                    None) \
        or _DURATION_MORE.search(part) or next((m for m in _DURATION_AFTER.finditer(part)
                                                if not _WHOLE_COURSE.search(part[max(0, m.start() - 25):m.end() + 25])), None) \
        or _FIRST_WEEKS.search(part) or _DURATION_MAX.search(part)
    if duration:
        number = number_value(duration.group("n"))
        # "for at least 12 months" is a least, never an end: "for 12 months" would say stop then
        least = "at least " if "least" in duration.re.groupindex and duration.group("least") else ""
        medication.duration = f"{least}{number:g} {_unit_word(duration.group('unit'), number)}"
    _read_until(medication, part, vocab, order)
    starts = _STARTS_ON.search(part)
    if starts and medication.step <= 1 and DATE.match(part, starts.end()):
        medication.doubt = medication.doubt or "it starts on a later date"
    if _PLUS_CORRECTION.search(part):
        # "1 unit per 10 g, plus a correction of 1 unit for every 2 mmol/L above 8 mmol/L": a
        # row of dose and timing cannot hold the correction, so the line is quoted whole
        medication.doubt = medication.doubt or "its dose also follows the blood sugar"


def _named_parts(text: str, names: list[tuple[int, int, str, str]]
                 ) -> list[tuple[tuple[int, int, str, str], int, int]]:
    """Each medicine `text` names with its own words: from its name to the next medicine's
    name.  A name in brackets right after another ("Symbicort (budesonide-formoterol)")
    is the same medicine, not a second one."""
    kept: list[tuple[int, int, str, str]] = []
    for name in names:
        if kept:
            between = text[kept[-1][1]:name[0]]
            # ("hydrOXYzine pamoate (Vistaril)": its salt between them; "glyceryl trinitrate
            # spray, brand name Nitrolingual": the same medicine by its brand)
            # "sodium valproate modified release (Epilim Chrono)": its brand after its form)
            if re.fullmatch(r"\s*(?:(?:modified|extended|slow|sustained|controlled|delayed|prolonged|release|"
                            r"mr|er|xl|sr|cr|ec|tablets?|capsules?|liquid|oral|solution|suspension)\s+){0,3}[(\[]\s*"
                            r"|(?:\s+\w+)?\s*[,(]?\s*(?:brand(?:\s+name)?|also\s+(?:called|known\s+as)|"
                            r"known\s+as|sold\s+as|trade\s+name)\s*:?\s*", between, re.IGNORECASE) or (
                    name[3] == kept[-1][3] and re.fullmatch(r"\s*(?:[/(\[]|(?:[a-z]+\s+){1,2}[(\[])?\s*", between)) or (
                    # "Seretide MDI 125/25 mcg (fluticasone propionate/salmeterol)": its generic
                    # name alone in brackets after its form and strength
                    text[name[1]:].lstrip().startswith(")")
                    and re.fullmatch(r"\s*(?:[A-Za-z]+\s+){0,2}[\d.,/]+\s*(?:mcg|mg|g|micrograms?|units?|%)\s*\(\s*",
                                     between, re.IGNORECASE)):
                continue
        kept.append(name)
    parts = []
    for index, name in enumerate(kept):
        end = kept[index + 1][0] if index + 1 < len(kept) else len(text)
        parts.append((name, name[0], end))
    return parts


# Where a clause ends inside a medicine's words: the words after it that say what to do
# lead into the next medicine ("X 10 mg daily and start Y": "start" is Y's).
_CLAUSE_CUT = re.compile(r"\s+(?:and|or|then|but|plus)\s+|[,;]\s*|\s+[-–—]\s+|\(\s*|\.\s+")


_FILLER = re.compile(r"\s*(?:(?:taking|take|the|your|his|her|their|home|on|with|to|a|an|back|again|"
                     r"oral|po|regular|usual|iv|intravenous|sc|subcutaneous|im|inhaled|nebuli[sz]ed)\s*){0,3}",
                     re.IGNORECASE)


def _tail(own: str, name_end: int, vocab: Vocabulary) -> int:
    """Where the words that belong to the next medicine start in `own` (len(own) when none):
    after the last clause break, when what follows it is a status or a replacement said of
    the next medicine ("and start", "replaces")."""
    cuts = [m for m in _CLAUSE_CUT.finditer(own) if m.start() >= name_end]
    if not cuts:
        return len(own)
    tail = own[cuts[-1].end():]
    if _REPLACES.search(tail):
        return cuts[-1].end()
    ends = [m.end(1) for _value, _plain, pattern in vocab.status_patterns
            for m in pattern.finditer(tail)]
    if ends and _FILLER.fullmatch(tail[max(ends):]):
        return cuts[-1].end()
    return len(own)


def _own_medicines(named: str, names: list[tuple[int, int, str, str]],
                   vocab: Vocabulary, labelled: bool = False) -> list[tuple[int, int, str, str]]:
    """Of the medicines a list line names, those it says something of: the line's own, then
    any it replaces ("replaces lisinopril") or gives a dose of its own ("and glipizide
    5 mg daily"); others are mentioned in passing ("until you finish the enoxaparin")."""
    kept = names[:1]
    # "We have started co-codamol and Oramorph for the pain, Laxido to prevent constipation
    # from the codeine, and Fultium-D3": what to do, said before a list of medicines, is
    # said of every one the list goes on to (not of one named in passing: "the codeine").
    # (so does a status label the line starts with: "Stopped: Seretide 500 Accuhaler, Spiriva
    # HandiHaler, Uniphyllin Continus")
    lead_says = labelled or (bool(_status(named[:names[0][0]], vocab)) if names else False)
    for previous, name in zip(names, names[1:]):
        between = named[previous[1]:name[0]]
        if re.fullmatch(r"\s*(?:,|;|&|\+|and|or|plus|,\s*and|,\s*or)\s*", between, re.IGNORECASE):
            # "Levothyroxine, amlodipine and atorvastatin are unchanged": a list of names
            # goes on as long as the one before it was kept.
            # After a medicine named in passing ("from the codeine and morphine, and
            # Fultium-D3"), a comma goes back to the list the lead began.
            if name not in kept and (previous in kept or lead_says and "," in between):
                kept.append(name)
            continue
        if lead_says and re.search(r",\s*(?:and\s+)?$", between) and not re.search(
                r"\b(?:the|from|of|with|than|instead of|until|unlike|like)\s*$", between,
                re.IGNORECASE) and name not in kept:
            kept.append(name)
    for name in names[1:]:
        if name in kept:
            continue
        before = named[max((k[1] for k in kept if k[1] <= name[0]), default=name[0]):name[0]]
        after = named[name[1]:name[1] + 16]
        dose = vocab.quantity.match(after.lstrip()) if after.strip() else None
        if _REPLACES.search(before) or re.search(r"(?:->|→|=>|\breplaced (?:with|by)|\bswitched to|"
                                                 r"\bchanged to)(?:\s+(?:regular|the|a|an|oral|po|iv))*\s*$",
                                                 before, re.IGNORECASE) \
                or re.search(r"\bto\s*$", before) and re.search(
                r"\b(?:switch|change|swap|convert)", named[:name[0]], re.IGNORECASE) or (
                dose and re.search(r"(?:\band|[,;+&]|\bplus)\s*$", before)) or (
                # "Naproxen ... - D/C. Avoid all NSAIDs. Use acetaminophen 650 mg every 6 hours"
                dose and re.search(r"[.!?]\s+(?:instead\s*,?\s*)?(?:use|take|start|give|try)\s*$", before,
                                   re.IGNORECASE)) or (
                # "STOPPED: Furosemide 40 mg daily (replaced by torsemide). Ibuprofen (do not
                # restart).": a sentence of its own that starts with the name and says its
                # status or dose
                # ("STOPPED: Aspirin 81 mg daily. Ibuprofen PRN.": its timing says it is taken)
                re.search(r"[.!?;]\s+$", before) and name[2][:1].isupper()
                and (dose or _status(re.split(r"[.!?;](?:\s|$)", named[name[1]:], maxsplit=1)[0], vocab)
                     or vocab.timings(re.split(r"[.!?;](?:\s|$)", named[name[1]:], maxsplit=1)[0]))):
            kept.append(name)
    return sorted(kept)


# A premixed insulin's ratio, written after its name with no unit ("Mixtard 30/70").
_PREMIX_RATIO = re.compile(r"\s+\d{2}/\d{2}(?![\d/])(?!\s*(?:mg|mcg|micrograms?|g|ml|units?|iu|%))",
                           re.IGNORECASE)


def _list_name(named: str, found: tuple[int, int, str, str] | None) -> str:
    """The name of a list line's medicine: the medicine found in it, with the capitalised
    words before it that are part of its name ("Coloxyl with Senna"); or, when none is
    found, the words before the dose."""
    cut = _NAME_END.search(named)
    before_dose = named[:cut.start()] if cut else named
    if found is None:
        return before_dose.strip()
    lead = named[:found[0]]
    words = lead.split()
    release = _RELEASE.match(named, found[1])  # "Co-careldopa CR 50/200 mg"
    if release:
        found = (found[0], release.end(), named[found[0]:release.end()], found[3])
    premix = _PREMIX_RATIO.match(named, found[1]) if re.search(r"mix|insulin", found[2], re.IGNORECASE) else None
    # "Human Mixtard 30/70": which mix is its name; "Tab. Paracetamol 500 1-0-1": a strength
    # written without its unit stays with the name, never dropped
    extra = premix or _BRAND_STRENGTH.match(named, found[1])
    if extra:
        found = (found[0], extra.end(), named[found[0]:extra.end()], found[3])
    if lead.strip() and found[0] <= len(before_dose) and len(words) <= 3 and words[0][:1].isupper() \
            and not {w.lower().strip(":,") for w in words} & (_INSTRUCTION_WORDS - {"with", "and"}) - (
                {"plus"} if words[0].lower() != "plus" else set()) \
            and words[0].lower() not in ("her", "his", "their", "my", "our", "its", "a", "an", "this",
                                         "that", "these", "those", "usual", "regular", "current") \
            and not re.search(r"[(\[:;,]|\s[-–—]\s|medic", lead, re.IGNORECASE):
        return (lead + found[2]).strip()
    return found[2]


def _unnamed_medicine(named: str, vocab: Vocabulary, *, in_list: bool) -> tuple[int, int] | None:
    """Where the name of a medicine the glossary and the name stems do not know is, in a
    line that gives a dose right after it ("Started Acamprosate 666 mg PO TID", "Adcal-D3
    one tablet twice daily") or, in a list of medicines, a status ("Zopiclone has been
    stopped"); None when the line names none."""
    # (a table row's name cell starts after its bar and its number, "| Zolvexa | 1 tablet |",
    # "9.|   TAB. ECOSPRIN 75 MG|"; a dose form's shorthand is no part of the name)
    lead = re.match(rf"\s*(?:\d{{1,2}}[.)]?\s*\|)?\|?\s*(?:{DOSE_FORM_SHORTHAND}\.\s+)?(?:(?:"
                    + "|".join(re.escape(w) for w in sorted(_INSTRUCTION_WORDS, key=len, reverse=True))
                    + r")\b[\s:,-]*)*", named, re.IGNORECASE)
    start = lead.end() if lead else 0
    rest = named[start:]
    ends = [m.start() for m in (_NAME_END.search(rest),) if m]
    ends += [q.start for q in _quantities(rest, vocab)[:1]]
    ends += [a for a, _b, _v in vocab.timings(rest)[:1]]
    # the status right after the name ("Zopiclone has been stopped"), not one further on
    # ("Slow Sodium was started": the name is not "Slow")
    status = next((m for m in re.finditer(r"\s+(?:has been|have been|was|were|is|are|should be|-|:)?\s*"
                                          r"(?=\w)", rest)
                   if m.start() > 0 and _status(rest[m.end():m.end() + 30], vocab)
                   and rest[m.end():].split(" ", 1)[0].lower().strip(".,;:") in vocab.status_words), None)
    if in_list and status is not None:
        ends.append(status.start())
    if not ends:
        return None
    cut = min(ends)
    name = rest[:cut].strip()
    words = name.split()
    if (in_list and 1 <= len(words) <= 4 and words[0][:1].isupper() and (
            len(words) >= 2 and words[-1].lower() in ("cream", "ointment", "gel", "lotion", "emollient", "shampoo",
                                                      "wash")
            and re.match(r"\s*[-–—:,]?\s*(?:apply|use|massage|rub|smooth)\b", rest[cut:], re.IGNORECASE)
            # "Lanolin (Lansinoh) - apply to nipples as needed": a product and its brand
            or re.match(r"\s*\([A-Z][\w-]+\)\s*[-–—:,]\s*(?:apply|massage|rub|smooth)\b", rest[cut:],
                        re.IGNORECASE))):
        return start, start + len(name)  # "Glaxal Base cream - apply to whole body three times daily"
    if (not name or len(words) > 4 or not re.search(r"[A-Za-z]{3}", name) or not name[0].isalpha()
            or words[-1].lower() in vocab.not_medicines  # "Wear your CPAP every night"
            or re.search(r"\b(?:less|more|fewer)\s+than\b|\b(?:under|below|over|above)$", name,
                         re.IGNORECASE)  # "Sodium less than 2 g": a limit of the diet
            or {w.lower().strip(":,") for w in words} & _INSTRUCTION_WORDS
            # "Take the patch off at bedtime": the form of a medicine named before
            or words[0].lower() in vocab.units and vocab.units[words[0].lower()].value in vocab.dose_forms
            or words[0].lower() in ("she", "he", "they", "we", "you", "i", "it", "her", "his", "their",
                                    "patient", "mr", "mrs", "ms")  # "She has stopped ..."
            or words[0].lower() in ("taking", "using", "giving", "of", "pill", "pills", "tablet", "capsule",
                                    "tablets", "capsules", "dose", "doses",
                                    "more", "less", "than", "about", "approximately", "up", "at", "a",
                                    "an", "one", "two", "each", "every", "then", "after", "before",
                                    "these", "this", "those", "medications", "medicines", "meds",
                                    "the", "your", "his", "her", "their", "it",
                                    # "Max 4 tablets in 24 hours.", "Do not take until 14/10"
                                    "max", "max.", "maximum", "until", "till", "only", "total", "in", "for",
                                    # "Skip a day if ...", "What changed: ..." below a medicine
                                    "skip", "what", "why", "how", "when", "crush", "mix", "disperse",
                                    "dissolve", "remove", "inject", "shake", "note", "wear",
                                    "dr", "dr.", "mr", "mrs", "ms", "miss", "prof", "nurse",
                                    # "Drink 2.5-3 L of fluid per day": what to do, no medicine
                                    "drink", "eat", "weigh", "check", "walk", "rest", "avoid", "limit",
                                    "fluid", "fluids", "water", "stent", "catheter", "drain", "dressing")):
        return None
    after = rest[cut:]
    # "Florastor (Saccharomyces boulardii) 250 mg": the brackets hold its other name.
    after = re.sub(r"^\s*\([^()]{2,40}\)", lambda m: " " * len(m.group(0)), after)
    after = after[len(after) - len(after.lstrip(" \t\n|")):]  # (past a table's cell bar)
    if _quantities(after, vocab)[:1] and _quantities(after, vocab)[0].start <= 4:
        return start, start + len(name)
    # "Tab. Glycomet GP 2 1-0-1", "Tab. Dolo 650 SOS": a number with no unit before the doses
    # by time of day is the brand's strength, part of its name (never left out unsaid)
    strength = _BRAND_STRENGTH.match(rest, cut) if in_list else None
    if strength:
        return start, start + strength.end()
    if in_list and (vocab.timings(after[:25]) or status is not None and cut <= status.start()
                    and not rest[cut:status.start()].strip(" -–—:,0123456789")):  # "MICROGYNON 30 - withheld"
        return start, start + len(name)
    return None


_BRAND_STRENGTH = re.compile(r"\s+\d+(?:\.\d+)?(?=\s+(?:[0-4½](?:\s*-\s*[0-4½]){2,3}(?![\w/.-])|sos\b))",
                             re.IGNORECASE)
_WHILE_ON = re.compile(r"\bwhile\s+(?:(?:you|she|he|they)\s+(?:are|is)\s+|(?:still\s+)?)(?:on|taking|using)\s+"
                       r"(?:the\s+|her\s+|his\s+|your\s+|their\s+)?$", re.IGNORECASE)
_TREATS = re.compile(r"\b(?:for|treat|treats|prevent|replace|because of|due to)\s+(?:the\s+|her\s+|his\s+|their\s+|"
                     r"your\s+|a\s+|an\s+)?(?:low|high|raised|lack of|deficient|deficiency of)\s+$",
                     re.IGNORECASE)


_SCALE = re.compile(r"\b(?:correction|sliding)[- ]scale|\bper\s+(?:the\s+)?scale\b|\baccording to (?:the\s+|a\s+)?scale",
                    re.IGNORECASE)


def _in_brackets(named: str, position: int, names: list[tuple[int, int, str, str]],
                 vocab: Vocabulary) -> bool:
    """Whether `position` is inside brackets, after words ("(norgestimate/ethinyl
    estradiol)" is one name), that follow another medicine's name and do not begin with a
    status or a replacement of their own."""
    opened = named.rfind("(", 0, position)
    if opened < 0 or ")" in named[opened:position]:
        return False
    inside = named[opened + 1:position]
    first_words = " ".join(inside.split()[:1])  # "(new, replaces Y", "(stop aspirin"
    return bool(re.search(r"[A-Za-z]{2,}\s+\S", inside.rstrip())) and any(n[1] <= opened for n in names) \
        and not (_REPLACES.search(inside) or _status(first_words, vocab))


def _brands_before_brackets(named: str, names: list[tuple[int, int, str, str]], vocab: Vocabulary
                            ) -> list[tuple[int, int, str, str]]:
    """"We have also commenced Cardicor (bisoprolol) 2.5 mg", "Your Istin (amlodipine) has
    gone up": a brand the glossary does not know, its medicine alone in the brackets after it,
    is the name the sentence gives it."""
    kept = []
    for name in names:
        brand = re.search(r"(?<![\w'-])(?i:(?:your|her|his|their|the|my|our)\s+)?"
                          r"([A-Z][\w'-]{2,}(?:\s+[A-Z][\w'-]*){0,2})\s*\(\s*$", named[:name[0]])
        if (brand is None or not re.match(r"\s*\)", named[name[1]:])
                or _status(brand.group(1), vocab)
                or {w.lower() for w in brand.group(1).split()} & (_INSTRUCTION_WORDS | vocab.not_medicines)
                or any(other[0] < brand.end(1) and brand.start(1) < other[1] for other in names)):
            kept.append(name)
            continue
        kept.append((brand.start(1), brand.end(1), brand.group(1), name[3]))
    return kept


def _medications_of_line(text: str, start: int, end: int, section: str, glossary: Glossary | None,
                         vocab: Vocabulary, order: str, *, in_list: bool,
                         status_column: str = "", bulleted_plan: bool = False,
                         known: tuple[str, ...] = ()) -> list[Medication]:
    """The medications one line of a list or one sentence names, each with its own status:
    a status word belongs to the medicine of its own clause ("X 2 puffs - NEW (replaces Y,
    which should be stopped)": X new, Y stopped; "stop X and start Y"); words before the
    first medicine say what to do with every one that says nothing of its own ("Continue
    X and Y"), and so does a status said of them all after them ("X and Y were
    prescribed").  Where a medicine's status can only be guessed from another's words,
    it is marked `doubt`.

    Long: a medicine line's readings (status, dose, timing, US and UK forms) in the order they
    must be tried."""
    body = LIST_ITEM.sub("", text, count=1)
    if _KNOWN_AS.match(body):
        return []  # the brand of the medicine above ("Commonly known as: EMLA")
    # "Indication: blood pressure while lisinopril is on hold": why, labelled, naming neither
    # another medicine of the line nor its status
    labelled_why = _LABELLED_WHY.search(body)
    if labelled_why:
        body = body[:labelled_why.start()] + " " * (labelled_why.end() - labelled_why.start()) + body[labelled_why.end():]
    offset = len(text) - len(body)
    prefix = _STATUS_PREFIX.match(body)
    named = body[prefix.end():] if prefix else body
    shift = offset + (prefix.end() if prefix else 0)
    names = medicine_names(named, glossary, vocab)
    # "Pirfenidone, prednisone ... are new for him": a medicine the list above named, which
    # neither the glossary nor the name stems know
    before = _named_before(named, known)  # (the longer name wins: "Slow Sodium", not "Sodium")
    names = sorted(before + [n for n in names if not any(a < n[1] and n[0] < b for a, b, _n, _k in before)])
    # A brand the glossary does not know, named after what to do with it ("Please stop
    # taking Sprintec, your birth control pill").
    for taken in _TAKING_NAME.finditer(named):
        span = taken.span("name")
        if not any(a < span[1] and span[0] < b for a, b, _n, _k in names):
            names = sorted(names + [(span[0], span[1], taken.group("name"), taken.group("name").lower())])
    if names and names[0][0] > 0 and (in_list or bulleted_plan):
        # "Panadeine Forte 2 tablets ... has been replaced with regular paracetamol": a
        # medicine the glossary does not know, before one it knows.
        span = _unnamed_medicine(named[:names[0][0]], vocab, in_list=True)
        if span is not None:
            names = [(span[0], span[1], named[span[0]:span[1]], named[span[0]:span[1]].lower())] + names
    brand = re.match(r"\s*([A-Z][\w'-]*(?:\s+[A-Z][\w'-]*){0,2})\s*\(\s*$", named[:names[0][0]]) \
        if in_list and names else None
    if brand and not _status(brand.group(1), vocab) and not {
            w.lower() for w in brand.group(1).split()} & _INSTRUCTION_WORDS:
        # "Pred Forte (prednisolone acetate 1%) eye drops": a brand the glossary does not
        # know, its medicine in brackets after it
        names = [(brand.start(1), brand.end(1), brand.group(1), names[0][3])] + names[1:]
    if not in_list:
        names = _brands_before_brackets(named, names, vocab)
    # "D/C glipizide 10 mg BID (hypoglycemia risk w/ insulin)": a medicine named inside the
    # brackets of another's line is why, not one to take; except one it replaces, one given
    # a status there, and another name right after the bracket ("apixaban (ELIQUIS)").
    passing = [n for n in names if _in_brackets(named, n[0], names, vocab)]
    # "We have also started cholecalciferol 1000 units once daily for the low vitamin D":
    # a medicine named as what another treats.
    treated = [n for n in names[1:] if _TREATS.search(named[:n[0]])
               and not _quantities(named[n[1]:n[1] + 20], vocab)]
    # "do NOT take while on celecoxib": the medicine it is taken beside, not one to take.
    beside = [n for n in names[1:] if _WHILE_ON.search(named[:n[0]])]
    # "No driving while quetiapine doses are being adjusted": the medicine is when, not what
    beside += [n for n in names if n not in beside
               and re.search(r"\bwhile\s+(?:the\s+|her\s+|his\s+|your\s+|their\s+)?$", named[:n[0]], re.IGNORECASE)
               and re.match(r"\s+(?:doses?\s+)?(?:is|are)\s+being\b", named[n[1]:], re.IGNORECASE)]
    # "Serum digoxin was 3.1 nmol/L", "with digoxin toxicity": a blood level or a harm, no
    # medicine to take
    measured = [n for n in names if re.search(r"\b(?:serum|plasma|blood|random|trough|peak)\s+$", named[:n[0]],
                                              re.IGNORECASE)
                or re.match(r"\s*(?:levels?|concentrations?|toxicity|overdose|poisoning|assay|"
                            # "Sodium less than 2 g per day": a limit of the diet
                            r"less\s+than|under\s+\d|below\s+\d|intake|restriction|restricted|limit)\b|-(?:contaminated|"
                            r"laced|induced|related|associated|positive|negative)\b", named[n[1]:], re.IGNORECASE)]
    names = [n for n in names if n not in passing and n not in treated and n not in beside and n not in measured]
    parts = _named_parts(named, _own_medicines(named, names, vocab, labelled=bool(prefix)) if in_list else names)
    if not parts:
        span = _unnamed_medicine(named, vocab, in_list=in_list) if (
            in_list or bulleted_plan or _INSTRUCTION_LEAD.match(named)) else None
        if span is None:
            return []
        name = named[span[0]:span[1]]
        parts = [((span[0], span[1], name, name.lower()), span[0], len(named))]
    prefix_status = _status(prefix.group("word"), vocab) if prefix else ""
    # Status words are read with "D/C home" blanked: its meaning shows only in the whole line.
    said_of = _without_discharge_dc(named, vocab)
    for mentioned in passing:
        # "(course started w/ ceftriaxone 9/28; azithromycin x3d completed in house)" tells of
        # other medicines, and its words are not this line's; "(hypoglycemia risk w/
        # insulin)" says why.
        opened = named.rfind("(", 0, mentioned[0])
        closed = named.find(")", mentioned[1])
        closed = len(named) if closed < 0 else closed + 1
        if DATE.search(named[opened:closed]) or _status(named[opened:closed], vocab):
            said_of = said_of[:opened] + " " * (closed - opened) + said_of[closed:]
    # Each medicine's lead (the words before its name that say what to do) and own words.
    leads, owns = [], []
    lead_start = 0
    for index, (name, part_start, part_end) in enumerate(parts):
        own = said_of[part_start:part_end]
        cut = _tail(own, name[1] - part_start, vocab) if index + 1 < len(parts) else len(own)
        leads.append(said_of[lead_start:part_start])
        owns.append(own[:cut])
        lead_start = part_start + cut
    shared = prefix_status or (_status(leads[0], vocab) if not _CONDITIONAL_NO.search(said_of) else ""
                               ) or (status_column if in_list else "")
    found: list[Medication] = []  # one for each of `parts` (its last step, if it has steps)
    earlier_steps: dict[int, list[Medication]] = {}
    same_day: dict[int, list[Medication]] = {}  # the other doses of one day (_slot_doses)
    for index, (name, part_start, part_end) in enumerate(parts):
        own, lead = owns[index], leads[index]
        written = _list_name(named, name) if in_list and index == 0 else name[2]
        medication = Medication(name=_DOSE_FORM_FIRST.sub("", _plain_space(written).strip(" -–—:,;")),
                                key=name[3],
                                text=_plain_space(text), start=start + shift + name[0],
                                end=end if index == len(parts) - 1 else start + shift + part_end,
                                section=section)
        _fields(medication, own, vocab, order)
        scale = _SCALE.search(own)
        if scale and not _quantities(own[:scale.start()], vocab):
            # "insulin lispro before meals per correction scale below": the scale's rows
            # ("BG 200-249 -> 2 units") are no dose of it
            medication.dose = medication.count = ""
        if index == 0 and not medication.reason and lead.strip():
            # "For aches and pains she may take X"
            medication.reason = _clean_reason(_reason(_plain_space(lead), vocab, brackets=False))
        form = _DOSE_FORM_FIRST.match(_plain_space(written).strip(" -–—:,;"))
        slots = SLOTS.search(own) if form and not medication.count else None
        if slots and slots_count(slots.group(0)) and form.group(0).lower()[:3] in ("tab", "cap"):
            # "Tab. Panadol 500 mg 2-0-2": 2 tablets of 500 mg, morning and night
            medication.count = _slots_taken(slots.group(0), "tablet" if form.group(0).lower().startswith("tab")
                                            else "capsule")
        slots = SLOTS.search(own)
        if slots and not medication.count and set(slots.group(0).replace(" ", "").split("-")) - {"0", "1"}:
            # "1-0-2", "½-0-½" with no count read: "twice a day" alone would drop how much
            # each dose is, so the line is quoted whole
            medication.doubt = medication.doubt or "the doses by time of day are not one each"
        if index == 0 and not medication.count:
            taken = [q for q in _quantities(lead[-30:], vocab) if q.unit in vocab.dose_forms]
            if taken:
                medication.count = taken[-1].text  # "Take 3 pills of prednisone 20 mg"
                medication.dose = medication.dose or medication.count
                if medication.dose == medication.count:
                    medication.count = ""
        route = next((m for m in vocab.route.finditer(lead) if m.end() >= len(lead.rstrip()) - 1),
                     None) if index == 0 and not medication.route else None
        if route:
            medication.route = vocab.routes[route.group(1).lower()].value  # "started oral co-amoxiclav"
        maximum = _maximum(own, vocab)[1]
        said = own if maximum is None else own[:maximum[0]] + " " * (maximum[1] - maximum[0]) + own[maximum[1]:]
        # "While you are on apixaban please avoid contact sports": what is avoided is named
        # after the word, and it is not this medicine.
        said = re.sub(r"\bavoid\s+(?!it\b|them\b|this\b|these\b|taking\b|using\b)\w+",
                      lambda m: " " * len(m.group(0)), said, flags=re.IGNORECASE)
        # The medicine's own sentence says its status; one after it ("The dose will likely
        # be lowered as prednisolone is tapered") only when the first says none.
        first_end = re.search(r"[.!?](?=\s+[A-Z])", said[name[1] - part_start:])
        # ("START naltrexone 50 mg daily. ... do NOT take any opioid while on this": the lead
        # says it)
        if first_end and (_status(f"{lead} {said[:name[1] - part_start + first_end.end()]}", vocab)
                          # ("... while taking oxycodone. Her combined pill continues unchanged.":
                          # the next sentence is another thing's)
                          or re.match(r"\s+(?:Her|His|Their|Your)\s+(?!dose|doses|tablets?|medicine\b|medication\b)",
                                      said[name[1] - part_start + first_end.end():])):
            said = said[:name[1] - part_start + first_end.end()]
        status = _status(f"{lead if index else ''} {said}", vocab)
        if index == 0 and (prefix_status or in_list and status_column):
            status = prefix_status or status_column
        if index == 0 and not prefix_status:
            status = _status(f"{lead} {said}", vocab) if _status(lead, vocab) else status
        medication.status = status or medication.status
        if _FOR_A_LATER_PREGNANCY.search(f"{lead} {said}"):
            # "In any future pregnancy she should start aspirin 81 mg": not to take now
            medication.doubt = medication.doubt or "it is for a future pregnancy"
        if medication.status in ("stopped", "held"):
            # Why it was stopped is most often after a dash ("d/c HCTZ - hypokalemia (K 3.1)"),
            # in its own sentence ("Nurofen: stop - anti-inflammatories can trigger asthma ...
            # She will use Panadol Osteo as before for her knee.": not "for her knee")
            first = re.split(r"(?<=[.!?])\s+(?=[A-Z])", own, maxsplit=1)[0]
            medication.reason = (_reason(_plain_space(first), vocab, brackets=False)
                                 or _dash_reason(first, vocab, stopped=True)
                                 or _reason(_plain_space(own), vocab, brackets=False) or _indented_reason(own, vocab)
                                 or _dash_reason(own, vocab, stopped=True) or medication.reason)
        medication.reason = medication.reason or _indented_reason(own, vocab) or _dash_reason(own, vocab)
        steps = _steps(own, vocab)
        if len(steps) > 1:
            *earlier_steps[index], medication = _stepped(medication, own, steps, vocab, order)
        if index > 0 and _REPLACES.search(lead):
            # "X ... (replaces Y)": Y is stopped, X is what is taken instead.
            medication.status = medication.status if medication.status in ("stopped", "held") \
                else "stopped"
            # "Amlodipine 5 mg daily, new, replaces metoprolol, for blood pressure": the
            # reason after the replaced name is the new medicine's
            if medication.reason and not found[0].reason and not medication.reason.startswith("replaced"):
                found[0].reason = medication.reason
            medication.reason = f"replaced by {found[0].name}"
            found[0].status = found[0].status or "new"
        slot_doses = _slot_doses(medication, own, vocab)
        if slot_doses:
            # "18 units - 0 - 12 units": a morning dose and a night dose, each its own entry
            same_day[index], medication = slot_doses[:-1], slot_doses[-1]
        found.append(medication)
    # "stop taking Sprintec, ..., because the estrogen in it makes clots more likely": a
    # medicine only mentioned does not end the reason of the one before it.
    for index in range(len(found) - 1):
        mentioned = found[index + 1]
        if not (mentioned.status or mentioned.dose) and len(found[index].reason.split()) < 3 \
                and not re.search(r"[.!?]\s+[A-Z]", said_of[parts[index][1]:parts[index + 1][0][0] + 1]):
            longer = _reason(_plain_space(owns[index] + said_of[parts[index + 1][1]:parts[index + 1][2]]),
                             vocab)
            found[index].reason = _clean_reason(longer) or found[index].reason
    # "metoprolol tartrate 25 mg BID -> metoprolol succinate 50 mg daily", "X has been
    # replaced with Y": X replaced by Y.
    if len(found) == 2 and re.search(r"(?:->|→|=>|\breplaced (?:with|by)|\bswitched to|\bchanged to)"
                                     r"(?:\s+(?:regular|the|a|an|oral|po|iv))*\s*$",
                                     said_of[:parts[1][1]], re.IGNORECASE):
        found[0].status = found[0].status if found[0].status in ("stopped", "held") else "stopped"
        if not found[0].reason or found[0].reason.lower().startswith("replaced"):
            found[0].reason = f"replaced by {found[1].name}"
        found[1].status = found[1].status or "new"
    # "Switched from X to Y", "Switch X to Y": X stopped, Y new.
    if len(found) == 2 and re.search(r"\b(?:switch(?:ed)?|chang(?:e|ed)|swap(?:ped)?|convert(?:ed)?)\s+"
                                     r"(?:(?:\w+\s+)?from\s*)?$", leads[0], re.IGNORECASE) \
            and re.search(r"\bto\s*$", leads[1] or owns[0], re.IGNORECASE):
        found[0].status, found[1].status = "stopped", found[1].status or "new"
        found[0].reason = found[0].reason or f"replaced by {found[1].name}"
        replaced = True
    else:
        replaced = len(found) == 2 and found[0].reason.startswith("replaced by")
    # "Hold lisinopril and HCTZ until BMP on 4/16": a bare name in a list of names shares
    # what is said after the last one (not when one replaces the other).
    for index, medication in enumerate(found[:-1] if not replaced else []):
        if not (_quantities(owns[index], vocab) or vocab.timings(owns[index])
                or _status(owns[index], vocab)) \
                and not re.search(r"[.!?]\s+[A-Z]", said_of[parts[index][1]:parts[-1][0][0] + 1]):
            # (not one in a later sentence: "Avoid ibuprofen ... Acetaminophen is safe for pain")
            for key in ("until", "duration", "reason"):
                setattr(medication, key, getattr(medication, key) or getattr(found[-1], key))
    # "Amoxicillin 1 g bid and clarithromycin 500 mg bid, both for 14 days, for H. pylori":
    # what is said of both is each one's.
    if len(found) > 1 and not replaced and re.search(r",\s*(?:both|all|each)\b", owns[-1], re.IGNORECASE):
        for medication in found[:-1]:
            for key in ("duration", "until", "reason"):
                setattr(medication, key, getattr(medication, key) or getattr(found[-1], key))
    trailing = re.split(r"(?<=[.!?])\s+(?=[A-Z])", named[parts[-1][1]:])[0]  # (its own sentence)
    plural = _status(trailing, vocab) if len(found) > 1 and _PLURAL_STATUS.search(trailing) else ""
    for index in range(len(found) - 2, -1, -1):
        # "His amlodipine 10 mg once daily and atorvastatin 20 mg at night continue
        # unchanged": a plural verb after the second says the first's status too
        if (not found[index].status and found[index + 1].status
                and re.search(r"(?:\band|\btogether with|\balong with|\bas well as|\bplus)"
                              r"(?:\s+(?:one|two|three|\d+|the|her|his|their|your))?\s*$",
                              said_of[parts[index][0][1]:parts[index + 1][1]])
                and _PLURAL_STATUS.search(owns[index + 1])):
            found[index].status = found[index + 1].status
    for index in range(1, len(found)):
        # "..., as does his paracetamol": as the medicine before it
        if not found[index].status and re.search(r"\b(?:as does|as do|and so does|as is|likewise)\s+"
                                                 r"(?:his|her|their|your|the)?\s*$",
                                                 said_of[:parts[index][1]], re.IGNORECASE):
            found[index].status = found[index - 1].status
    for index, medication in enumerate(found):
        # "STOPPED: Oxybutynin 5 mg BID; diphenhydramine 25 mg QHS PRN sleep": a status label
        # that heads the line is every item's that is only a medicine and how it was taken
        # (nothing before its name, no word that says what to do: "STOP: aspirin; take
        # clopidogrel instead" is no list)
        if (index and prefix_status and not medication.status and not leads[index].strip(" ;,")
                and not _OWN_ORDER.search(owns[index])):
            medication.status = prefix_status
            continue
        # (a clause of its own: "HOLD ibuprofen ...; use acetaminophen instead")
        if index and re.search(r"\b(?:because|since|as|which|that|who|when|if|while|so)\b|;|\.\s", re.sub(
                r"\b(?:when|if|as)\s+(?:needed|required|necessary)\b", " ",
                said_of[parts[index - 1][0][1]:parts[index][1]], flags=re.IGNORECASE), re.IGNORECASE):
            continue  # "stop Sprintec, because the estrogen in it ...": not a list of medicines
        if index and not medication.status and found[index - 1].status in ("stopped", "held") \
                and re.fullmatch(r"\s*(?:,|,?\s*(?:and|or|nor))\s*", said_of[parts[index - 1][0][1]:parts[index][1]]) \
                and not _quantities(owns[index - 1], vocab):
            # "Do not take aspirin, ibuprofen or naproxen": each name of the list the stop
            # before it heads
            medication.status = found[index - 1].status
            continue
        medication.status = medication.status or shared or plural
    if len(found) > 1:
        stated = [m for m in found if m.status]
        for medication in found:
            if not medication.status and stated:
                medication.doubt = ("the line names several medicines, and the status it "
                                    "gives may be this one's too")
    if found and re.search(r"\b(?:if|unless)\b", said_of[:parts[0][1]], re.IGNORECASE):
        # "If he is vomiting ... miss the metformin and empagliflozin until eating again": a
        # sick-day rule's end is no end of the medicines
        for medication in found:
            medication.until = ""
    if labelled_why and len(found) == 1:
        why = _clean_reason(_plain_space(labelled_why.group("why")))
        for step in [*earlier_steps.get(0, []), found[0]]:
            step.reason = why or step.reason
    stepped = []
    for index, medication in enumerate(found):
        for step in earlier_steps.get(index, []) + same_day.get(index, []):
            step.status, step.doubt = step.status or medication.status, medication.doubt
            stepped.append(step)
        stepped.append(medication)
    return stepped


def _slots_taken(slots: str, unit: str) -> str:
    """How many of `unit` each dose of a "2-0-2" is ("2 tablets"); '' when not the same
    number at each dose."""
    taken = slots_count(slots) or ("1" if {s.strip() for s in slots.split("-")} == {"0", "1"} else "")
    return "" if not taken else f"{taken} {unit}" if taken in ("1", "½") else f"{taken} {unit}s"


def _slot_doses(medication: Medication, own: str, vocab: Vocabulary) -> list[Medication]:
    """One entry per dose of a day written by time of day with its own amounts
    ("Inj. Human Mixtard 30/70 18 units - 0 - 12 units": 18 units in the morning, 12 at
    night); [] when the line writes no such doses."""
    match = _SLOT_DOSES.search(own)
    if match is None:
        return []
    slots = [slot.strip() for slot in re.split(r"\s+-\s+", match.group(0))]
    given = [(index, slot) for index, slot in enumerate(slots) if slot != "0"]
    if len(given) < 2 or len({slot for _i, slot in given}) < 2:
        return []
    doses = []
    for index, slot in given:
        amount = _quantities(slot, vocab)[0]
        # "2 tablets - 0 - 1 tablet" of a 500 mg tablet: counts of its strength
        counted = amount.unit in vocab.dose_forms and medication.dose and medication.dose != medication.count
        doses.append(replace(medication, dose=medication.dose if counted else amount.text,
                             count=amount.text if counted else "", frequency=SLOT_FREQUENCIES[index]))
    return doses


# "..., then 5 mg twice a day": the next step of a dose that changes on a schedule.
# "then uptitrate to 50 mg", "then wean to 5 mg": the verbs that lead a step to its dose
_STEP_TO = r"(?:reduce|decrease|increase|go down|go up|uptitrate|titrate up|titrate|wean|taper|change)\s+to\s+"
_THEN_DOSE = re.compile(r"(?:[,;]\s*|\s+)(?:and\s+)?then\s+(?:take\s+|give\s+|" + _STEP_TO + r")?"
                        # ("then ONE tablet (5mg) each morning": a count in words)
                        r"(?=\d|(?:one|two|three|four|half)\s+(?:tablets?|capsules?|tabs?|caps?|puffs?|sachets?)\b"
                        # ("THEN one 14 mg patch every morning for 2 weeks")
                        r"|(?:one|two)\s+\d[\d.]*\s*(?:mg|mcg|micrograms?)\s+(?:patch|tablet|capsule)\b)"
                        # "x8 weeks, then decrease to once daily": a new timing, the dose kept
                        r"|(?:[,;]\s*|\s+)(?:and\s+)?then\s+" + _STEP_TO + r"(?=(?:once|twice|three times|four times)\s+(?:a\s+)?(?:daily|day)\b|"
                        r"(?:daily|nightly|bd|bid|od|qd|tds|tid)\b)"
                        # "four times a day for 1 week, then twice a day for 1 week": a new timing
                        r"|(?:[,;]\s*|\s+)then\s+(?=(?:once|twice|three times|four times|\d\s*(?:x|times))\s+"
                        r"(?:a\s+|per\s+)?(?:day|daily)\b|q\d+(?:-\d+)?h\b|every\s+\d+(?:-\d+)?\s+hours?\b)"
                        # "q8h scheduled for 2 weeks, then as needed"
                        r"|(?:[,;]\s*|\s+)then\s+(?=(?:only\s+)?(?:as needed|prn|sos|when needed|if needed)\b)"
                        # "1000 mg mane and 500 mg nocte", "10 units in the morning and 6 units
                        # at bedtime", "40 mg PO at 08:00 and 20 mg PO at 14:00": a dose for
                        # each time of day
                        r"|\s+and\s+(?=\d+(?:\.\d+)?\s*[a-z]+\s+(?:(?:po|p\.o\.|by mouth|orally|oral|sc|subcut|sl|"
                        r"inh|pr)\s+)?(?:mane|nocte|at\b|in the|every|"
                        r"with|before|after|qam|qpm|qhs|bd|tds|midday|noon))", re.IGNORECASE)


_THEN_NAMED = re.compile(r"(?:[,;]\s*|\s+)then\s+(?P<name>[A-Za-z][\w-]{3,})\s+(?=\d)", re.IGNORECASE)
# "   For the first 2 weeks (through 10/14/2025): give ...": a first step's length, at the
# start of its line ("withheld for the first two days" in the course is none)
_FIRST_WEEKS = re.compile(r"(?:^|\n|[.;|]\s+)[ \t]*for\s+the\s+first\s+(?P<n>\d+|one|two|three|four|five|six)\s*"
                          r"(?P<unit>days?|weeks?|months?)\b", re.IGNORECASE)
# A line of its own that starts the next step: "   Starting 10/15/2025: give 4.8 mL ...",
# "   From week 3: ..."
_STEP_LINE = re.compile(r"\n[ \t]*(?:starting|from|beginning|after)\b[^\n:]{1,40}:(?!\d)\s*", re.IGNORECASE)


def _steps(own: str, vocab: Vocabulary) -> list[tuple[int, int]]:
    """The steps of a medicine's own words, each giving a dose or a timing of its own."""
    # ("..., then 4-0-0 x 3 days": doses by time of day are a step's dose and timing)
    cuts = [m for m in _THEN_DOSE.finditer(own) if _quantities(own[m.end():m.end() + 20], vocab)
            or SLOTS.match(own, m.end())
            or not re.match(r"\d(?!\s*(?:x|times)\b)", own[m.end():m.end() + 12])
            and vocab.timings(own[m.end():m.end() + 25])]
    # "..., THEN\n   Apixaban 5 mg BID": the medicine named again at its next step
    cuts += [m for m in _THEN_NAMED.finditer(own) if vocab.is_medicine_word(m.group("name"))
             and _quantities(own[m.end():m.end() + 20], vocab)
             and not any(c.start() <= m.end() and m.start() <= c.end() for c in cuts)]
    cuts += [m for m in _STEP_LINE.finditer(own)
             if _quantities(own[m.end():m.end() + 40], vocab) and _quantities(own[:m.start()], vocab)
             and not any(c.start() <= m.end() and m.start() <= c.end() for c in cuts)]
    cuts.sort(key=lambda m: m.start())
    if not cuts:
        return [(0, len(own))]
    bounds = [0] + [m.start() for m in cuts] + [len(own)]
    starts = [0] + [m.end() for m in cuts]
    return [(starts[i], bounds[i + 1]) for i in range(len(starts))]


def _stepped(first: Medication, own: str, steps: list[tuple[int, int]], vocab: Vocabulary,
             order: str) -> list[Medication]:
    """One medication per step, the later ones taking what they do not say (route, timing,
    status, reason) from the first."""
    made = []
    # A reason said "for" the whole course ("[NEW - for drug rash]") is every step's; one in
    # brackets after the last step ("then 5 mg (usual maintenance dose)") is that step's.
    # (the reason's words may run over a line break of the summary's: "on hold\n    May")
    spread = r"\s+".join(map(re.escape, first.reason.split()))
    # ("... THEN 2 tablets every morning. Reason: lupus nephritis": a label after the steps)
    # ("..., then 1 DS tab PO daily for PJP prophylaxis until ...": prevention said in the last
    # step's own clause is that step's, not the treatment dose's before it)
    said_for = re.search(rf"\b(?:for|(?:reason|indications?)\s*:)\s+{spread}", own, re.IGNORECASE)
    shared = first.reason if said_for and not (
        len(steps) > 1 and said_for.start() >= steps[-1][0]
        and not re.search(r"[.;]\s", own[steps[-1][0]:said_for.start()])  # ("... ongoing. New, for ...": the course's)
        and re.search(r"\b(?:prophyla\w*|prevent\w*|maintenance)\b", first.reason, re.IGNORECASE)) else ""
    for number, (a, b) in enumerate(steps, start=1):
        step = Medication(first.name, key=first.key, text=first.text, start=first.start,
                          end=first.end, section=first.section, label=first.label, step=number)
        _fields(step, own[a:b], vocab, order)
        slots = SLOTS.search(own[a:b])
        if slots and first.count and not step.count:
            # "Tab. Prednisolone 5 mg 6-0-0 x 3 days, then 4-0-0 x 3 days": each step's own
            # number of tablets of the one strength
            step.count = _slots_taken(slots.group(0), re.sub(r"s$", "", first.count.split()[-1]))
        # "..., then twice a day for 1 week": a step that changes only the timing keeps the dose
        # ("then 4-0-0": a count of the first step's strength)
        kept = ("dose", "count") if not step.dose and not step.count else ("dose",) if not step.dose else ()
        strength = (made[0] if made else first).dose
        taken = _quantities(step.dose, vocab) if step.dose and not step.count else []
        if taken and taken[0].unit in vocab.dose_forms and strength and strength != step.dose \
                and not any(q.unit in vocab.dose_forms for q in _quantities(strength, vocab)):
            # "267 mg capsules, 1 capsule t.i.d. ..., then 2 capsules t.i.d.": more of the strength
            step.dose, step.count = strength, step.dose
        elif step.count and step.dose and strength and step.dose != strength and re.search(
                rf"{re.escape(step.dose)}\s+(?:total|in\s+(?:all|total))\b", own[a:b], re.IGNORECASE):
            # "THEN 2.5 tablets (50 mg total)": what the tablets add up to, of the same strength
            step.dose = strength
        elif _of_the_liquid(step.dose, strength, vocab):
            # "15 mg/5 mL ... 11 mL once a day for 4 weeks, then 11 mL every other day": more
            # of the same liquid
            step.dose, step.count = strength, step.dose
        for key in ("route", "frequency", "time", "status") + kept:
            if not getattr(step, key):
                setattr(step, key, getattr(made[0] if made else first, key))
        if not step.reason and step.as_needed and made and made[0].as_needed:
            step.reason = made[0].reason  # "PRN pain x 3 days, then 5 mg q6h PRN x 3 days"
        step.reason = step.reason or shared
        made.append(step)
    return made


# The first words of a line under a medicine that says what to do or what was done, not why.
_NOT_WHY = re.compile(r"(?:monitor|check|review|weigh|measure|recheck|reduce|increase|wean|titrate|"
                      r"dispensed|supplied|commonly|brand|indications?|last|next|pharmacy|patient|pt|"
                      r"wife|husband|mother|father|parents?|family|nurse|gp|dr|prescribed|given|"
                      r"may|can|should|must|will|crush|store|shake|swallow|chew|dissolve|"
                      r"usual|home|was|is|are|were|has|have|had)", re.IGNORECASE)


def _indented_reason(own: str, vocab: Vocabulary) -> str:
    """Why, written on its own indented line under a medicine's line ("Loperamide 2 mg caps -
    1 cap tds" over "    To thicken stoma output. Do not stop ..."): that line's first
    sentence, when it is short and neither what to do, a dose, a date nor a label."""
    lines = own.split("\n")
    if len(lines) < 2 or not lines[1][:1].isspace():
        return ""
    sentence = re.split(r"(?<=[.;!])\s", lines[1].strip())[0].rstrip(".;!").strip()
    # ("Bisoprolol 2.5 mg OM" over "   rate control of AF": the line above is whole)
    whole_above = lines[0].rstrip().endswith((")", "]")) or any(
        end >= len(uk_dose_times(lines[0]).rstrip()) - 1 for _start, end, _value in vocab.timings(uk_dose_times(lines[0])))
    if (not (sentence[:1].isupper() or sentence[:1].islower() and whole_above) or len(sentence.split()) > 10
            or ":" in sentence
            # a line the one above runs on to ("... 200 mg" over "PO BID", "...;" over "Ms. X")
            or lines[0].rstrip()[-1:] in ",;-" or vocab.timings(sentence) or vocab.route.search(sentence)
            or re.match(r"(?:Dr|Mr|Mrs|Ms|Miss|Prof)\b", sentence)
            or _INSTRUCTION_START.match(sentence) or _NOT_WHY.match(sentence) or _status(sentence, vocab)
            or _quantities(sentence, vocab) or DATE.search(sentence) or re.search(r"\b(?:you|your)\b", sentence,
                                                                                re.IGNORECASE)):
        return ""
    return sentence


def _whole_words(text: str, match: re.Match, group: str) -> str:
    """A group of a match its length limit cut off: without the cut word ("... to lower the
    blood press" is "... to lower the blood")."""
    found, end = match.group(group), match.end(group)
    if end < len(text) and text[end].isalnum() and found[-1:].isalnum() and " " in found.strip():
        return found.rsplit(" ", 1)[0]
    return found


def _clean_reason(reason: str) -> str:
    """A reason without the joining words its medicine's part ends on ("pain and", "reflux
    and her"), or the words of whoever takes it ("prevent constipation she should take")."""
    reason = re.sub(r"\s+(?:she|he|they|you|we)\s+(?:should|must|will|can|may)\s+(?:take|use|have|give)\b.*$",
                    "", reason, flags=re.IGNORECASE)
    # nor a clause of its own after it ("as it can harm the liver, and she should not take
    # ...", "for the liver she has been started on Tab")
    reason = re.sub(r",?\s+(?:and|but)\s+(?:she|he|they|you|we)\s+(?:should|must|will|can|may|need)\b.*$"
                    r"|\s+(?:she|he|they|you|we)\s+(?:has|have|had)\s+been\s+(?:started|given|put)\b.*$",
                    "", reason, flags=re.IGNORECASE)
    if reason.count(")") > reason.count("("):
        reason = re.sub(r"\)\s*$", "", reason)  # the bracket the reason was read from closes
    return re.sub(r"(?:[\s,;:|–—-]+|\b(?:and|or|but|then|with|plus|her|his|their|your|the)\b)+$", "",
                  reason).strip()  # (a table's cell border after it too)


# Words after a dash or a status that say what to do, not why ("- do not stop", "- take 1").
_INSTRUCTION_START = re.compile(
    r"(?:do|don't|take|give|use|apply|inject|until|till|then|stop|hold|restart|resume|continue|"
    r"please|never|no(?!\s+longer)|not to|new|see|on|from|after|when|if|d/c|skip|avoid|limit|check|call|keep|"
    r"rinse|finish|wear|bring|store|shake|swallow|chew|dissolve|with|without|at|in|\d)\b",
    re.IGNORECASE)


def _dash_reason(own: str, vocab: Vocabulary, *, stopped: bool = False) -> str:
    """A reason written after a dash in a medicine's line ("STOP Amoxicillin -- her germ is
    resistant to it", "aspirin 81 mg - now on apixaban; taking both raises bleeding risk");
    for a stopped medicine, also one that starts "no ..." ("no NSAIDs while platelets are
    low")."""
    for why in re.finditer(r"\s[-–—]{1,2}\s*(?P<why>[^.|()]{5,90})", own):
        text = why.group("why").strip()
        if stopped and re.match(r"no\s(?!longer\s+(?:needed|required|indicated)\b)", text, re.IGNORECASE) \
                and not DATE.search(text):
            return _plain_space(text)
        if (_INSTRUCTION_START.match(text) or DATE.search(text) or _status(text.split(";")[0], vocab)
                or vocab.timings(text) or _quantities(text, vocab) or _CLOCK.match(text)
                or not re.search(r"[A-Za-z]{3}", text)
                or re.match(r"(?:long[- ]term|lifelong|for life|indefinitely|ongoing|permanent)\b",
                            text, re.IGNORECASE)):
            continue  # "- 06:00, 10:00, 14:00", "- long term": when and how long, not why
        return _plain_space(text)
    return ""


def _dose_line(line: str, medication: Medication, vocab: Vocabulary) -> bool:
    """A line that is a dose of the medicine above it: its first, when it has none yet, or
    its next step ("then 15 mg qAM x 7 days")."""
    doses = [q for q in _quantities(line, vocab) if q.unit not in vocab.dose_forms]
    if not doses or not vocab.timings(line):
        return False
    return (not medication.dose or bool(re.match(r"\s*(?:[-*•]\s*)?then\b", line, re.IGNORECASE))
            or doses[0].text == medication.dose and medication.step == 0
            # ("Prednisolone oral liquid 5 mg/mL - weaning course:" over "- 3 mL (15 mg) ...")
            or medication.step == 0 and not medication.count and not medication.frequency
            and _of_the_liquid(doses[0].text, medication.dose, vocab))


def _of_the_liquid(volume: str, strength: str, vocab: Vocabulary) -> bool:
    """Whether `volume` ("3 mL") is how much is taken of a liquid of `strength` ("5 mg/mL",
    "15 mg/5 mL"), not a strength of its own."""
    taken = _quantities(volume, vocab) if volume and "/" not in volume else []
    return bool(taken) and taken[0].unit == "ml" and "/" in strength and strength.endswith("mL")


def _taper_step(facts: SummaryFacts, medication: Medication, line: str, vocab: Vocabulary) -> Medication:
    """Fill the medicine's first dose from `line`, or add its next step."""
    step = Medication(medication.name)
    _fields(step, line, vocab, facts.date_order)
    if _of_the_liquid(step.dose, medication.dose, vocab):
        # "- 3 mL (15 mg) ..." of a 5 mg/mL liquid
        quantities = _quantities(line, vocab)
        volume = next((q for q in quantities if q.text == step.dose), None)
        step.dose, step.count = medication.dose, (_volume_with_amount(volume, quantities, vocab) if volume
                                                  else step.dose)
        if not medication.count and not medication.frequency and medication.step == 0:
            medication.dose = ""  # its first dose: filled below
    if medication.dose and step.dose == medication.dose and step.frequency in ("", medication.frequency) \
            and step.count in ("", medication.count):
        # "- 40 mg every morning through 04/03/2025" under "Prednisolone 40 mg ... LAST DOSE
        # 04/17/2025": the first step's own end
        medication.until = step.until or medication.until
        medication.duration = step.duration or medication.duration
        return medication
    if not medication.dose:
        for key in ("dose", "count", "frequency", "time", "maximum", "duration", "until", "route"):
            setattr(medication, key, getattr(step, key) or getattr(medication, key))
        medication.as_needed = medication.as_needed or step.as_needed
        return medication
    medication.step = medication.step or 1
    step = dataclasses.replace(medication, dose=step.dose, count=step.count,
                               frequency=step.frequency or medication.frequency, time=step.time,
                               maximum=step.maximum, duration=step.duration, until=step.until,
                               changed_from="", changed_to="", step=medication.step + 1,
                               text=_plain_space(line), mentions=[])
    facts.medications.insert(facts.medications.index(medication) + 1, step)
    return step


def _goes_on(medication: Medication, sentence: str, vocab: Vocabulary, order: str,
             fields: tuple[str, ...] = ("count", "route", "frequency", "time", "maximum",
                                        "duration", "until")) -> None:
    """Fill what a sentence after a medicine's line says of it ("Give for 8 more days,
    last dose on 4/22", "Do not give more than 5 doses in 24 hours", "Give 1 spray into
    one nostril if:")."""
    more = Medication(medication.name)
    _fields(more, sentence, vocab, order)
    if more.dose and not more.count and medication.dose and more.dose != medication.dose \
            and _quantities(more.dose, vocab) and _quantities(more.dose, vocab)[0].unit in vocab.dose_forms:
        more.count = more.dose  # "Give 1 spray (10 mg)": what is taken of the dose above
    for key in fields:
        if not getattr(medication, key) and getattr(more, key):
            setattr(medication, key, getattr(more, key))
    medication.as_needed = medication.as_needed or more.as_needed
    if not medication.status:  # "5 days only.      [NEW]": the line's mark, wrapped below it
        medication.status = _marked_status(sentence, vocab)
    if not medication.reason and re.match(r"\s*(?:for|because|due to)\b", sentence, re.IGNORECASE):
        medication.reason = more.reason


def _same_medicine(one: str, other: str) -> bool:
    """Two names of one glossary entry name the same medicine when one is a brand of the
    other ("Flovent", "fluticasone") or says more of it ("metoprolol", "Metoprolol
    succinate"), not when they are two forms of it ("metoprolol tartrate", "metoprolol
    succinate")."""
    a, b = set(one.lower().split()), set(other.lower().split())
    return not a & b or a <= b or b <= a


# How a tablet releases its medicine, written after the name: another product of it.
RELEASE_FORMS = frozenset({"cr", "sr", "xr", "er", "xl", "la", "mr", "odt", "dr", "ec", "cd",
                            "retard", "continus", "prolonged-release", "modified-release",
                            "extended-release", "sustained-release", "controlled-release"})
_RELEASE = re.compile(r"\s+(?:" + "|".join(sorted((f.upper() if len(f) <= 3 else f"(?i:{f})")
                                                   for f in RELEASE_FORMS)) + r")(?![\w-])")


def _named_as(known: Medication, new: Medication) -> bool:
    """"Insulin isophane (Protaphane) 16 units ..." and, in the next list, "Protaphane 16
    units mane": the other name one line gives in brackets right after its own."""
    # (string search, not a pattern per pair: those would crowd out re's cache of compiled ones)
    for a, b in ((known, new), (new, known)):
        name, other, text = a.name.lower(), b.name.lower(), a.text.lower()
        at = text.find(name) if name and other else -1
        while at >= 0:
            rest = text[at + len(name):].lstrip()
            if rest.startswith("(") and rest[1:].lstrip().startswith(other) \
                    and rest[1:].lstrip()[len(other):].lstrip().startswith(")"):
                return True
            at = text.find(name, at + 1)
    return False


# The forms that release a medicine slowly, each a name of one kind of product
_SLOW_RELEASE = frozenset({"cr", "sr", "xr", "er", "xl", "la", "mr", "cd", "retard", "continus",
                           "prolonged-release", "modified-release", "extended-release", "sustained-release",
                           "controlled-release"})


def _release_forms(medication: Medication) -> set[str]:
    """The release forms a medicine's name gives, or the words right after its name in its
    line ("Nifedipine extended-release started at 30 mg" is "Nifedipine ER"); every slow
    release form is one."""
    words = medication.name.lower().split()
    at = medication.text.lower().find(medication.name.lower()) if medication.name else -1
    if at >= 0:
        words += medication.text.lower()[at + len(medication.name):].split()[:1]
    return {"slow" if word in _SLOW_RELEASE else word for word in words if word in RELEASE_FORMS}


def _merge(medications: list[Medication], new: Medication) -> Medication:
    """Add `new`, or fill what an earlier mention of the same medicine left unsaid; the
    medication it went into."""
    for known in medications:
        # A mention without steps fills the first step of one with steps, and the other way.
        same_step = known.step == new.step or new.step == 0 and known.step == 1 or \
            known.step == 0 and new.step == 1
        # "Co-careldopa 25/100 mg" and "Co-careldopa CR 50/200 mg", each with its dose, are
        # two products; "metoprolol succinate" named again is "Metoprolol succinate ER".
        released = _release_forms(known) ^ _release_forms(new)
        # ("ondansetron 4 mg" and "ondansetron ODT 4 mg": one medicine that melts on the tongue)
        two_products = bool(released and known.dose and new.dose
                            and (released - {"odt"} or known.dose != new.dose)) or bool(
            # eye drops and tablets of one medicine are two things to take
            known.route and new.route and known.route != new.route) or bool(
            # "| Hydrocortisone 10 mg tab | ... | 07:00 |" over "| Hydrocortisone 5 mg tab | ... |
            # 14:00 |": two doses of one day, each on its own line of the list
            known.section == new.section and known.dose and new.dose and known.dose != new.dose
            and known.time and new.time and known.time != new.time and not known.step and not new.step) or bool(
            # "18 units - 0 - 12 units": the morning and the night dose of one line
            known.start == new.start and known.text == new.text
            and (known.dose, known.count) != (new.dose, new.count) and known.frequency != new.frequency)
        if (known.name.lower() == new.name.lower() or known.key and known.key == new.key
                and _same_medicine(known.name, new.name) or _named_as(known, new)) \
                and same_step and not two_products:
            known.step = known.step or new.step
            if (new.start, new.end) != (known.start, known.end):
                known.mentions.append((new.start, new.end))
            if known.said_in_hospital and new.status and not new.said_in_hospital:
                # "withheld from admission ... she should restart it on 25/03": held till then
                paused = known.status in ("held", "stopped") and new.status == "resume" \
                    and not _RESUMED_NOW.search(new.text)
                known.status, known.said_in_hospital = "held" if paused else new.status, False
                known.reason = known.reason if paused else new.reason or known.reason
                if not paused:
                    # the line that says it at discharge is the one to quote
                    known.text, known.start, known.end = new.text, new.start, new.end
                    known.section, known.label = new.section, new.label
            if not known.status and new.status and not known.label and new.text != known.text:
                # The status another line gives ("Started this admission: Entresto, ...")
                # travels with this line's quote, in that line's words.
                known.said_elsewhere = f"… {new.quote}"
            if (new.status == "changed" and new.dose and known.dose and new.dose != known.dose
                    and new.changed_from.split()[:1] == known.dose.split()[:1] and known.status in ("", "new")):
                # "X 30 mg daily was started ... She will take X 60 mg daily (increased from
                # 30 mg)": the later change is the dose to take.
                known.dose, known.status = new.dose, "changed"
                known.changed_from, known.changed_to = new.changed_from, new.changed_to
            for key in ("dose", "count", "route", "frequency", "time", "maximum", "duration",
                        "until", "status", "changed_from", "changed_to", "reason", "label"):
                if not getattr(known, key) and getattr(new, key):
                    setattr(known, key, getattr(new, key))
            # ("uptitrate only if readings are high" in the GP's actions is no PRN)
            known.as_needed = known.as_needed or new.as_needed and bool(
                new.dose or new.frequency not in ("", "as needed") or not known.frequency)
            return known
    medications.append(new)
    return new


def _follow_up(text: str, start: int, end: int, vocab: Vocabulary, order: str) -> FollowUp:
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
    dates = [date_value(m, order) for m in DATE.finditer(text) if date_value(m, order)]
    when = dates[0] if dates else ""
    if not when:
        relative = _IN_TIME.search(text)
        when = relative.group(0).strip() if relative else ""
        # as a reader writes it: "in 6-8 wks" is "in 6-8 weeks"
        when = re.sub(r"\bwks?\b", "weeks", re.sub(r"\bmos?\b", "months", when))
    test = vocab.follow_up_test.search(text)
    return FollowUp(_plain_space(text), who_text, when,
                    test.group(1) if test else "", start, end)


# "Creatinine peaked at 1.4 and was back to 0.9 on 06/16": a result, no test to come
_PAST_RESULT = re.compile(r"\b(?:was|were|peaked|showed|came\s+back|fell|rose|improved|normali[sz]ed|"
                          r"had\s+(?:risen|fallen|improved))\b", re.IGNORECASE)
# "lithium level", "vancomycin trough": a blood test named by the medicine it measures
_A_LEVEL = re.compile(r"\b[A-Za-z-]+\s+(?:levels?|troughs?|concentrations?)\b", re.IGNORECASE)
_FOLLOW_UP_CLAUSE = re.compile(r",?\s+and\s+(?=(?:a|an|the|your|her|his|their|repeat|follow|then)\b)|;\s*")


# A line that identifies the patient's record: its dates are the record's, not a plan's.
_PATIENT_RECORD_LINE = re.compile(r"\b(?:MRN|D\.?O\.?B\.?|NHS\s+(?:No|number)|hospital\s+(?:no|number)|"
                                  r"date\s+of\s+birth|medical\s+record\s+(?:no|number|#))(?:\b|(?=#))",
                                  re.IGNORECASE)


def _follow_ups(summary: str, start: int, end: int, vocab: Vocabulary, order: str) -> list[FollowUp]:
    """The follow-ups of a sentence: one, or one per clause when each gives its own time
    ("an appointment on 09/12/2025, and a repeat HbA1c is due in 3 months")."""
    text = summary[start:end]
    clauses, position = [], 0
    for cut in _FOLLOW_UP_CLAUSE.finditer(text):
        clauses.append((position, cut.start()))
        position = cut.end()
    clauses.append((position, len(text)))
    timed = [(a, b) for a, b in clauses if DATE.search(text[a:b]) or _IN_TIME.search(text[a:b])]
    if len(timed) > 1 and len(timed) == len(clauses):
        return [_follow_up(text[a:b], start + a, start + b, vocab, order) for a, b in clauses]
    return [_follow_up(text, start, end, vocab, order)]


def line_indent(summary: str, offset: int) -> int:
    """How far the line holding `offset` is indented, a list mark counted as indent: a
    sub-line ("   - then 1 tablet ...") sits deeper than the item it hangs under."""
    begin = summary.rfind("\n", 0, offset) + 1
    lead = re.match(r"[ \t]*(?:[-•*·▪◦][ \t]+|\(?\d{1,2}[.)][ \t]+)?", summary[begin:])
    return len(lead.group(0).expandtabs(4))


# Who signed the summary, under its last list ("Dr. Tanvir Alam.", "Medical Officer, Medicine
# Unit-3.", "Signature & seal."): the record's, no sign nor item for the patient
# A note of the record under the signs, after them ("Summary discussed with patient and
# daughter ... and a copy given.", "CONDITION ON DISCHARGE: Stable, ..."): no sign
# (also a register's number, a doctor's signature with its date and time, and the condition
# at discharge alone: "TB REGISTER NO: PENDING", "Dr A. Wirihana, RMO Oncology, for Dr H.
# Sorensen 21/08/2025 16:05", "Improved.")
RECORD_NOTE = re.compile(r"\b(?:discussed\s+with|reconciled\s+by|copy\s+(?:given|sent)|dictated\s+by|"
                         r"transcribed\s+by|completed\s+by|electronically\s+signed|co-?signed|"
                         r"register\s+(?:no|number)\b)"
                         r"|^\s*(?:[-•*]\s*)?(?:CONDITION|STATUS|DISPOSITION)\s+(?:ON|AT)\s+DISCHARGE\s*:"
                         r"|^\s*(?:[-•*]\s*)?dr\.?\s+[A-Z][^\n]{0,80}\b\d{1,2}[/.-]\d{1,2}[/.-]\d{2,4},?\s+\d{1,2}:\d{2}\W*$"
                         r"|^\s*(?:[-•*]\s*)?(?:improved|stable|unchanged|satisfactory|good|fair)\.?\s*$", re.IGNORECASE)
SIGNED_LINE = re.compile(r"\s*(?:[-•*]\s*)?(?:dr\.?\s+[A-Z][\w.'-]*(?:\s+[A-Z][\w.'-]*){0,3}\.?\s*$|signature\b|"
                         r"[^.]*\bsignature\s*(?:&|and)\s*seal\b|(?:medical officer|consultant|registrar|resident|"
                         r"house officer|intern|junior doctor)\b)", re.IGNORECASE)


def _warning(text: str, start: int, end: int, in_list: bool) -> WarningSign:
    body = _plain_space(LIST_ITEM.sub("", text, count=1))
    condition = _IF.search(body)
    signs = condition.group("signs") if condition and not in_list else body
    if in_list and condition and body.lower().startswith(("call", "return", "come", "seek", "go ")):
        signs = condition.group("signs")
    referred = re.search(r"(?<=[.!?])\s+If\s+(?:any\s+of\s+)?(?:these|this|they|that)\b", body)
    if referred and "," in body[:referred.start()]:
        # "Signs of too much lithium: vomiting, ... If these happen, go to the ED": the signs
        # are what the sentence before lists
        signs = re.sub(r"^[^:]{0,60}:\s*", "", body[:referred.start()].strip()).rstrip(".")
    return WarningSign(body, re.sub(r"\s+", " ", signs).strip().rstrip("."), start, end)


_RESTRICTION_CLAUSE = re.compile(r";\s*|,\s*(?:and\s+)?(?=(?:to|do not|don't|avoid|no|limit|keep|drink|eat|"
                                 r"do|never|only|should|must|try|aim)\b)|\s+and\s+(?=(?:to|do not|don't|avoid|no|limit|keep|"
                                 r"drink|eat|never)\b)", re.IGNORECASE)


def _restrictions(summary: str, start: int, end: int, vocab: Vocabulary,
                  default: str = "") -> list[Restriction]:
    """The restrictions of one sentence or line: one, or one per clause when its clauses
    speak of different things ("stand up slowly, and drink about 2 litres a day")."""
    text = summary[start:end]
    body = LIST_ITEM.sub("", text, count=1)
    offset = start + len(text) - len(body)
    clauses, position = [], 0
    for cut in _RESTRICTION_CLAUSE.finditer(body):
        clauses.append((position, cut.start()))
        position = cut.end()
    clauses.append((position, len(body)))
    kinds = [_restriction_kind(body[a:b], vocab) for a, b in clauses]
    if len({k for k in kinds if k}) > 1:
        return [Restriction(kind, _plain_space(body[a:b]).rstrip("."), offset + a, offset + b)
                for (a, b), kind in zip(clauses, kinds) if kind]
    kind = next((k for k in kinds if k), "") or default
    return [Restriction(kind, _plain_space(body), offset, end)] if kind else []


# What says not to take a kind of medicine ("Avoid NSAIDs.", "NSAIDs should be avoided for
# good", "she should not take any other pain killer")
_AVOID = re.compile(r"\b(?:avoid\w*|(?:should|must|do|does|did)\s*(?:not|n't)\s+(?:take|use|buy|have)|never\s+(?:take|use)|"
                    r"not\s+to\s+(?:take|use))\b", re.IGNORECASE)


_CAUTION_CLAUSE = re.compile(r";\s*|,\s*(?:and|but)\s+")


# "PENDING AT DISCHARGE: None.": nothing to come back for, no appointment called "None"
NOTHING_LISTED = re.compile(r"\W*(?:none|nil|nothing|n/?a|not applicable|no)\W*", re.IGNORECASE)
# "... then 1 DS tab PO daily ... until ID clinic says to stop": how long a dose lasts, no visit
_UNTIL_TOLD = re.compile(r"\buntil\s+(?:the\s+|your\s+)?(?:[A-Z]{2,}\s+)?(?:clinic|team|doctor|GP|specialist|"
                         r"cardiologist|consultant)\s+(?:says|tells|decides|advises)\b", re.IGNORECASE)


def _medicine_cautions(summary: str, start: int, end: int, vocab: Vocabulary) -> list[Restriction]:
    """The clauses of a sentence that say not to take a kind of medicine (restriction kind
    "medicines"): a sentence of the course or one that says a medicine's status may hold
    one ("..., and she should not take any other pain killer or herbal medicine without
    asking a doctor")."""
    text = summary[start:end]
    cautions, position = [], 0
    for cut in [*_CAUTION_CLAUSE.finditer(text), None]:
        a, b = position, cut.start() if cut else len(text)
        clause = text[a:b]
        if _AVOID.search(clause) and _restriction_kind(clause, vocab) == "medicines":
            said = clause.rstrip(" \t\n.")
            cautions.append(Restriction("medicines", _plain_space(said), start + a, start + a + len(said)))
        position = cut.end() if cut else position
    return cautions


def _restriction_kind(text: str, vocab: Vocabulary) -> str:
    """The kind whose word comes first in `text` ('' when none)."""
    found = [(m.start(), kind) for kind, pattern in vocab.restriction_patterns
             for m in [pattern.search(text)] if m]
    return min(found)[1] if found else ""


_FACT_SECTIONS = ("medications", "follow_up", "warning_signs", "restrictions", "instructions",
                  "for_doctor", "other")


def _medication_table(header: list[str]) -> bool:
    return any(c in ("medication", "medications", "medicine", "medicines", "drug", "drugs", "name", "brand",
                     "generic", "brand name", "generic name", "medication name", "medicine name")
               for c in header)


def _column_is(name: str, columns: frozenset[str]) -> bool:
    """Whether a column ("status / comments") is one of `columns` ("status")."""
    return name in columns or any(part.strip() in columns for part in name.split("/"))


def _status_cell(line: str, header: list[str], vocab: Vocabulary) -> str:
    """The status a table row's status column gives ("| ... | STOPPED |")."""
    cells = _cells(line)
    for name, cell in zip(header, cells):
        if _column_is(name, vocab.status_columns):
            # "SAME" alone in a change column says no change ("same" in a sentence need not)
            return _status(cell, vocab) or ("unchanged" if cell.strip().lower() in ("same", "same.") else "")
    return ""


def _without_record_cells(line: str, header: list[str], vocab: Vocabulary) -> str:
    """A table row with the cells of its record columns blanked (offsets kept)."""
    bars = [m.start() for m in re.finditer(r"\|", line)]
    if line.lstrip().startswith("|"):
        bars = bars[1:]
    start = line.index("|") + 1 if line.lstrip().startswith("|") else 0
    cells = []
    for bar in bars + [len(line)]:
        cells.append((start, bar))
        start = bar + 1
    # The dose before the stay is read only when the row gives no other ("| 75 micrograms od
    # | STOPPED | - |": what is stopped)
    doses = [line[a:b] for name, (a, b) in zip(header, cells) if "dose" in name
             and name not in vocab.previous_dose_columns and name not in vocab.record_columns]
    stopped_only = bool(doses) and not any(re.search(r"\d", dose) for dose in doses)
    for name, (a, b) in zip(header, cells):
        if name in vocab.record_columns or name in vocab.previous_dose_columns and not stopped_only:
            line = line[:a] + " " * (b - a) + line[b:]
    return line


def _cell(line: str, header: list[str], columns: frozenset[str]) -> str:
    """The text of a table row's first cell under one of `columns` ('' when none)."""
    return next((cell for name, cell in zip(header, _cells(line)) if name in columns), "")


def _reason_cell(line: str, header: list[str], vocab: Vocabulary) -> str:
    """The reason a table row's reason or comments column gives ("| anti-rejection; ... |"):
    its first clause, when that is not what to do."""
    cells = _cells(line)
    for name, cell in zip(header, cells):
        if _column_is(name, vocab.reason_columns) and re.search(r"[A-Za-z]", cell):
            # "Recurrent UTI - do not resume"; "H. PYLORI ERADICATION. RAISES INR" (an initial is
            # no sentence's end)
            first = re.split(r";|(?<!\b[A-Za-z])\.\s|\s[-–—]\s", cell)[0].strip()
            pieces = first.split(",")
            while len(pieces) > 1 and _status(pieces[-1], vocab) and len(pieces[-1].split()) <= 3:
                pieces.pop()  # "anti-rejection, no change"
            first = ",".join(pieces).strip()
            # ("Regular now", "Next implant due 12/12/2025", "Hospital supply only": what changed,
            # when and where from, never why)
            if (first and not _INSTRUCTION_START.match(first) and not _quantities(first, vocab)
                    and not DATE.search(first) and not re.search(r"\b(?:now|due|supply|supplied)\b",
                                                                 first, re.IGNORECASE)
                    and not (_status(first, vocab) and len(first.split()) <= 3)
                    and not first.lower().startswith(("see ", "held", "increased", "reduced", "up from",
                                                      "decreased", "was ", "changed", "plus ", "also ",
                                                      "mix ", "expect ", "home dose", "max",
                                                      "no more", "not more"))):
                return first
    return ""


def read_summary(summary: str, glossary: Glossary | None = None,
                 date_order: str = "mdy") -> SummaryFacts:
    """Every section and fact of `summary`, with offsets into it.  Dates in numbers are
    read in the summary's own order where one of its dates shows it, else in `date_order`
    ("mdy" or "dmy", Settings.summary_date_order).

    Long: the summary's single pass, filling sections, tables, medicines and appointments in
    order."""
    vocab = vocabulary()
    order = date_order_of(summary, date_order)
    facts = SummaryFacts(sections=split_summary(summary, vocab), date_order=order)
    unknown_names: dict[str, bool] = {}  # the names read so far: whether no glossary entry or stem names it whole
    for section in facts.sections:
        kind = section.effective_kind
        if not section.is_content:
            continue
        if kind == "header" and len(section.text(summary).split()) > 12:
            kind = "other"  # "DISPOSITION: Home with his daughter. Pirfenidone ... are new for him"
        items = section_items(summary, section)
        if kind == "medications" or any(_TABLE_ROW.match(summary[a:b]) and _medication_table(
                table_header(summary, section, a, vocab)) for a, b in items):
            _read_medication_list(summary, section, items, glossary, vocab, facts)
            if kind == "medications":
                continue
        if kind == "follow_up":
            for a, b in items:
                text = summary[a:b]
                if (vocab.warning_cue.search(text) or _GET_HELP_FIRST.match(text)) \
                        and not re.search(r"\bwill\s+(?:call|contact|phone|ring)\b", text, re.IGNORECASE) \
                        and not (DATE.search(text) or _IN_TIME.search(text)):
                    # "RETURN TO ED IF you need your rescue inhaler more often ..." below the
                    # appointments: when to come back, no visit
                    facts.warning_signs.append(_warning(text, a, b, bool(LIST_ITEM.match(text))))
                elif re.search(r"[A-Za-z]{3}", text) and not NOTHING_LISTED.fullmatch(LIST_ITEM.sub("", text, count=1)):
                    facts.follow_ups.append(_follow_up(text, a, b, vocab, order))
            continue
        if kind == "warning_signs":
            # A list of signs, or advice written as sentences, where a sentence of what to
            # do or avoid ("stand up slowly") is a restriction, not a sign.
            for item in items:
                bulleted = bool(LIST_ITEM.match(summary[item[0]:item[1]]))
                if RECORD_NOTE.search(summary[item[0]:item[1]]):
                    continue  # "Medicines reconciled by ward pharmacist G. Ferreira-Lund ..."
                for a, b in [item] if bulleted else _sentences(summary, *item):
                    text = summary[a:b]
                    if SIGNED_LINE.match(text) or RECORD_NOTE.search(text):
                        continue
                    # "BG over 350 ..., vomiting and unable to keep fluids down" is a sign;
                    # what to do says so first ("Stand up slowly", "Avoid ...")
                    if (not bulleted and _restriction_kind(text, vocab)
                            and vocab.restriction_cue.search(text) and (
                                vocab.restriction_cue.search(text[:30]) or _ADVISED.search(text))
                            and not (vocab.warning_cue.search(text) or _CALL_IF.search(text)
                                     or _IF_DEVELOPS.search(text) or _IF.search(text))):
                        facts.restrictions += _restrictions(summary, a, b, vocab)
                    else:
                        facts.warning_signs.append(_warning(text, a, b, bulleted))
            continue
        if kind == "restrictions":
            for a, b in [sentence for item in items for sentence in
                         (_sentences(summary, *item) if not LIST_ITEM.match(summary[item[0]:item[1]])
                          else [item])]:
                text = summary[a:b]
                # "A community nurse will visit daily from 16/10" sits among wound care.
                if vocab.follow_up_cue.search(text) and (DATE.search(text) or _IN_TIME.search(text)):
                    facts.follow_ups += _follow_ups(summary, a, b, vocab, order)
                    continue
                facts.restrictions += _restrictions(
                    summary, a, b, vocab, _restriction_kind(section.title, vocab) or "activity")
            continue
        if kind not in _FACT_SECTIONS:
            # history, course, results: what happened, not what to do now; but "Avoid
            # NSAIDs." in the course's problem list is the patient's to know
            facts.restrictions += [caution for item in items for a, b in _sentences(summary, *item)
                                   for caution in _medicine_cautions(summary, a, b, vocab)]
            continue
        before: list[Medication] = []  # what the sentence before named, in its paragraph
        # the medicines read so far that the glossary and the name stems do not know
        for medication in facts.medications:
            if medication.name not in unknown_names:
                unknown_names[medication.name] = [(n[0], n[1]) for n in medicine_names(
                    medication.name, glossary, vocab)] != [(0, len(medication.name))]
        known = tuple(name for name, unknown in unknown_names.items() if unknown)
        signs_below = -1  # the column of a "Call 911 ... if:" line whose list below gives the signs
        for index, (a, b) in enumerate(items):
            text = summary[a:b]
            if index and "\n\n" in summary[items[index - 1][1]:a]:
                before = []
            if _PATIENT_RECORD_LINE.search(text):
                continue  # "PATIENT: ... MRN: ... VISIT DATE: 06/14/2025" is the record, no visit
            if _TABLE_ROW.match(text) and _medication_table(table_header(summary, section, a, vocab)):
                continue
            column = a - (summary.rfind("\n", 0, a) + 1)
            listed_sign = signs_below >= 0 and column > signs_below and bool(LIST_ITEM.match(text))
            signs_below = column if (_CALL_IF.search(text) or _CALL_NOW.search(text)) \
                and text.rstrip().endswith(":") else \
                signs_below if listed_sign else -1
            warning = bool(vocab.warning_cue.search(text) or _CALL_IF.search(text)
                           or _IF_DEVELOPS.search(text)) or listed_sign
            followed = False  # read as a follow-up
            if warning:
                facts.warning_signs.append(_warning(text, a, b, False))

            elif kind == "for_doctor" and (DATE.search(text) or _IN_TIME.search(text)
                                           or vocab.follow_up_test.search(text)
                                           or re.search(r"\brefer", text, re.IGNORECASE)):
                follow_up = _follow_up(text, a, b, vocab, order)
                doctor = _DOCTOR_IN_TITLE.search(section.title)
                follow_up.who = doctor.group(0) if doctor else follow_up.who
                facts.follow_ups.append(follow_up)
            elif vocab.follow_up_cue.search(_UNTIL_TOLD.sub(" ", text)) and (
                    DATE.search(text) or _IN_TIME.search(text) or vocab.follow_up_test.search(text)
                    or _DR.search(text)) or vocab.follow_up_test.search(text) and (
                    DATE.search(text) or _IN_TIME.search(text)) and not _PAST_RESULT.search(text) and not medicine_names(
                    _A_LEVEL.sub(" ", vocab.follow_up_test.sub(" ", text)), glossary, vocab):
                facts.follow_ups += _follow_ups(summary, a, b, vocab, order)
                followed = True
            elif _restriction_kind(text, vocab) and not medicine_names(text, glossary, vocab) \
                    and not (_PAST_RESULT.search(text) and vocab.follow_up_test.search(text) and DATE.search(text)) \
                    and (kind == "instructions" or vocab.restriction_cue.search(text)
                         or _ADVISED.search(text)):  # "We have asked her to drink 1.5 litres"
                facts.restrictions += _restrictions(summary, a, b, vocab)
            if warning:
                before = []
                continue  # "if she develops a sore throat, stop the carbimazole": not a status
            # "Check your temperature ... If it is 38.0 C or higher even once, call the oncology
            # line": a sentence of a paragraph says when to get help
            facts.warning_signs += [_warning(summary[c:d], c, d, False) for c, d in _sentences(summary, a, b)
                                    if (c, d) != (a, b) and (_IF_DEVELOPS.search(summary[c:d])
                                                             or _CALL_IF.search(summary[c:d]))]
            in_hospital = (_IN_HOSPITAL.search(text) or _DURING_THE_STAY.search(text)) and not _AT_HOME.search(text)
            said = []
            for medication in [m for c, d in _clauses(summary, a, b, glossary, vocab)
                               for m in _medications_of_line(summary[c:d], c, d, section.title, glossary, vocab,
                                                             order, in_list=False, known=known,
                                                             bulleted_plan=bool(LIST_ITEM.match(text)))]:
                if in_hospital and (medication.status in ("", "new") or medication.route == "into a vein"
                                    and medication.status != "stopped"
                                    # "... were given for 48 hours and then changed to tablets"
                                    or medication.status == "changed" and not medication.changed_to):
                    # what was done in hospital ("was started on IV ceftriaxone", "You had
                    # intravenous ceftriaxone ... and were then changed to tablets"; "D/C IV
                    # cefazolin" in the plan still says it is stopped)
                    _started_in_hospital(facts, medication, text)
                    continue
                medication.said_in_hospital = bool(in_hospital)
                if section.kind in ("problem", "other") and section.parent and section.title:
                    # A problem-based plan ("# HTN - continue amlodipine"): the problem is why.
                    medication.reason = medication.reason or section.title
                if medication.status or (medication.dose and medication.frequency):
                    said.append(medication)
            if said and not followed:
                # "The Tab. Nimesulide must be stopped, ..., and she should not take any other
                # pain killer or herbal medicine without asking a doctor."
                facts.restrictions += _medicine_cautions(summary, a, b, vocab)
            # "While you are on apixaban please avoid contact sports": the medicine is only
            # the context of what to avoid.
            if (not said and not followed and _restriction_kind(text, vocab) and not vocab.follow_up_cue.search(text)
                    and (kind == "instructions" or vocab.restriction_cue.search(text))
                    and medicine_names(text, glossary, vocab)):
                facts.restrictions += _restrictions(summary, a, b, vocab)
            named = medicine_names(text, glossary, vocab)
            # up to the first medicine it names ("It caused ankle swelling, so we have stopped
            # it, and ... once the perindopril is back on board")
            about_it = text[:named[0][0]] if named else text
            said_of_it = _status(about_it, vocab) if len(before) == 1 and (
                not named and _IT.search(text) or named and re.match(r"\s*(?:it|this)\b", text, re.IGNORECASE)
                and _IT.search(about_it, 3)) else ""
            if said_of_it and not before[0].status and said_of_it != "new":
                # "We have reviewed the lercanidipine she took. It caused ankle swelling, so we
                # have stopped it.": what is done with "it" is done with the medicine before.
                before[0].status, before[0].said_elsewhere = said_of_it, _plain_space(text)
                before[0].doubt = "its status is said of 'it' in the sentence after its own"
                why = _CAUSED.search(about_it)
                before[0].reason = before[0].reason or (why.group("why").strip() if why else "") \
                    or _reason(_plain_space(about_it), vocab, brackets=False)
                if not named:
                    continue
            if not named and len(before) == 1 and _quantities(text, vocab) and vocab.timings(text):
                # "For the first week the dose is higher: take 10 mg twice a day for 7 days,
                # then 5 mg twice a day" goes on about the medicine named just before.
                _continued(facts, before[0], text, vocab, order)
                continue
            for medication in said:
                _merge(facts.medications, medication)
            before = [m for m in facts.medications
                      if any(m.name.lower() == n[2].lower() or m.key == n[3] for n in named)] \
                if named else before
    _from_the_course(summary, facts, glossary, vocab)
    _fill_steps(facts, summary, vocab)
    facts.medications = _without_bare_kinds(facts.medications)
    return facts


def _without_bare_kinds(medications: list[Medication]) -> list[Medication]:
    """Less a kind of medicine named bare as what replaces another ("Glipizide ...
    discontinued, replaced by insulin") where the list names it in full ("Insulin glargine
    22 units at bedtime, new"): the same thing to take, said twice."""
    def bare(medication: Medication) -> bool:
        return (medication.status in ("", "new") and not (medication.dose or medication.count
                                                           or medication.frequency)
                and any(other is not medication and other.name.lower().startswith(medication.name.lower() + " ")
                        for other in medications))
    return [m for m in medications if not bare(m)]


# "... and it should not be restarted": a stop in hospital that holds after it.
_NEVER_AGAIN = re.compile(r"\b(?:should not|must not|not to|do not|don't|never|cannot)\s+(?:be\s+)?"
                          r"(?:restart|resume|re-?start|recommence|re-?introduce)\w*|\bpermanently\b|"
                          r"\bfor good\b", re.IGNORECASE)


# "YELLOW - call CF clinic 555-0142 the same day:", "RED - go to the ER or call 911:"
_CALL_NOW = re.compile(r"\b(?:call|phone|ring|go to|come to|return to|seek)\b", re.IGNORECASE)
_NOT_YET_BACK = re.compile(r"\b(?:not|n't)\s+(?:yet\s+)?(?:been\s+)?(?:restarted|resumed)\b|"
                           r"\bremains?\s+(?:on hold|withheld|held)\b", re.IGNORECASE)
# "Her home amlodipine was stopped for soft blood pressures", and the discharge list does not
# bring it back: stopped after discharge too.
_HOME_MEDICINE = re.compile(r"\b(?:her|his|their|your|the patient's)\s+(?:usual\s+)?home\b", re.IGNORECASE)


_ADVISED = re.compile(r"\b(?:advised|asked|told|should|must|please|try to)\b", re.IGNORECASE)


def _from_the_course(summary: str, facts: SummaryFacts, glossary: Glossary | None,
                     vocab: Vocabulary) -> None:
    """What the hospital course says that holds after discharge: a medicine of the
    discharge list the list gives no status was started in hospital ("She was commenced on
    bisoprolol"), so it is new to the patient; a medicine stopped in hospital "and it should
    not be restarted" is stopped, listed or not, and so is a home medicine stopped there
    that the list does not bring back; one withheld there and "not restarted" is on hold.
    Any other status in the course is what was done on the ward."""
    for section in facts.sections:
        if section.effective_kind != "hospital_course" or not section.is_content:
            continue
        for a, b in section_items(summary, section):
            text = summary[a:b]
            for medication in _medications_of_line(text, a, b, section.title, glossary, vocab,
                                                   facts.date_order, in_list=False):
                listed = next((m for m in facts.medications if m.name.lower() == medication.name.lower()
                               or m.key and m.key == medication.key), None)
                if medication.status == "new" and listed is not None and not listed.status:
                    listed.status, listed.said_elsewhere = "new", f"… {_plain_space(text)}"
                elif medication.status == "held" and listed is None and _NOT_YET_BACK.search(_plain_space(text)):
                    facts.medications.append(medication)  # "withheld ..., and we have not restarted it"
                elif medication.status == "stopped" and (_NEVER_AGAIN.search(_plain_space(text)) or (
                        listed is None and _HOME_MEDICINE.search(text))):
                    if listed is None:
                        facts.medications.append(medication)
                    elif not listed.status:
                        listed.status, listed.said_elsewhere = "stopped", f"… {_plain_space(text)}"
                        listed.reason = listed.reason or medication.reason


def _started_in_hospital(facts: SummaryFacts, medication: Medication, text: str) -> None:
    """"Slow Sodium was started on the ward": a listed medicine the list gives no status is
    new to the patient (as in the hospital course)."""
    listed = next((m for m in facts.medications if m.name.lower() == medication.name.lower()
                   or m.key and m.key == medication.key), None)
    if medication.status == "new" and listed is not None and not listed.status and listed.route != "into a vein":
        listed.status, listed.said_elsewhere = "new", f"… {_plain_space(text)}"


def _named_before(text: str, known: tuple[str, ...]) -> list[tuple[int, int, str, str]]:
    """Where `text` names one of the medicines `known` (whole words, any case)."""
    lowered, found = text.lower(), []
    for name in known:
        name = name.lower()
        at = lowered.find(name) if len(name) >= 4 else -1
        while at >= 0:
            end = at + len(name)
            if (at == 0 or not lowered[at - 1].isalnum()) and (end == len(lowered) or not lowered[end].isalnum()):
                found.append((at, end, text[at:end], name))
            at = lowered.find(name, end)
    return [f for f in found if not any(o[0] <= f[0] and f[1] <= o[1] and o != f for o in found)]


def _clauses(summary: str, start: int, end: int, glossary: Glossary | None,
             vocab: Vocabulary) -> list[tuple[int, int]]:
    """A sentence's clauses when each names medicines and says their status ("A, B and C
    are new for him, and his home X, Y and Z are unchanged"), else the sentence whole."""
    text = summary[start:end]
    joints = list(re.finditer(r",\s+and\s+|;\s+", text))
    spans = list(zip([start] + [start + m.end() for m in joints], [start + m.start() for m in joints] + [end]))
    if len(spans) > 1 and all(_status(summary[c:d], vocab) and medicine_names(summary[c:d], glossary, vocab)
                              for c, d in spans):
        return spans
    return [(start, end)]


# "..., then STOP", "then 2-0-0 x 3 days then stop": nothing after the last step
_COURSE_ENDS = re.compile(r"\bthen\s+(?:stop|discontinue|cease)\b\s*(?:[.;,()]|$)", re.IGNORECASE)


def _fill_steps(facts: SummaryFacts, summary: str, vocab: Vocabulary) -> None:
    """A later step takes the route, timing, status and reason of its first step when it gives
    none, even when the two were read from different lines (a table row, a taper below);
    a status taken from another line comes with its word, so a quote of this line says it.
    The last step ends the course when the summary says "then stop" after it."""
    def same_course(one: Medication, other: Medication) -> bool:
        # (by its glossary entry too: a first step merged with a mention by another name,
        # "TMP-SMX" for "Bactrim DS", is still the first of the steps after it)
        return one.name.lower() == other.name.lower() or bool(one.key and one.key == other.key)
    for medication in facts.medications:
        if medication.step and not any(m.step > medication.step and same_course(m, medication)
                                       for m in facts.medications):
            group = [m for m in facts.medications if m.step and same_course(m, medication)]
            said = [_plain_space(summary[a:b]) for m in group for a, b in [(m.start, m.end), *m.mentions]]
            medication.course_ends = any(_COURSE_ENDS.search(text) for text in said)
        if medication.step > 1:
            first = next((m for m in facts.medications if m.step == 1 and m.name.lower() == medication.name.lower()),
                         None) or next((m for m in facts.medications if m.step == 1 and same_course(m, medication)), None)
            if first is None:
                continue
            medication.name = first.name  # one name on every row of the course
            if not medication.status and first.status and first.text != medication.text:
                medication.label = medication.label or next(
                    plain for value, plain, _forms in vocab.statuses if value == first.status)
            for key in ("route", "frequency", "status", "reason"):
                setattr(medication, key, getattr(medication, key) or getattr(first, key))


def _continued(facts: SummaryFacts, medication: Medication, sentence: str, vocab: Vocabulary,
               order: str) -> None:
    """Fill a medicine with the doses a sentence gives of it without naming it: its fields,
    or, for a dose that changes on a schedule, one entry per step."""
    steps = _steps(sentence, vocab)
    made = _stepped(medication, sentence, steps, vocab, order) if len(steps) > 1 else []
    if not made:
        _goes_on(medication, sentence, vocab, order, fields=("dose", "count", "route", "frequency",
                                                             "time", "maximum", "duration", "until"))
        return
    first, *later = made
    for key in ("dose", "count", "route", "frequency", "time", "maximum", "duration", "until"):
        setattr(medication, key, getattr(medication, key) or getattr(first, key))
    medication.step = 1
    for step in later:  # the sentence's own "For the first week ..." is no reason
        step.reason, step.status = medication.reason, medication.status
    position = facts.medications.index(medication) + 1
    facts.medications[position:position] = later


_A_TO_B = re.compile(r"(?<![\w.])(?P<from>\d[\d.]*(?:\s*(?:mg|g|micrograms?|mcg|units?|ml|mL))?)\s+to\s+"
                     r"(?P<to>\d[\d.]*\s*(?:mg|g|micrograms?|mcg|units?|ml|mL))\b", re.IGNORECASE)


# A line that allows a medicine ("Acetaminophen is safe", "may still take paracetamol").
_ALLOWED = re.compile(r"\b(?:is|are)\s+(?:safe|fine|ok|okay|allowed|recommended)\b|\b(?:can|may)\s+"
                      r"(?:still\s+)?(?:be\s+)?(?:use|used|take|taken|give|given|continue|continued)\b",
                      re.IGNORECASE)


def _labelled(medication: Medication, status: str, label: str, line: str, vocab: Vocabulary) -> None:
    """Give a list line's medicine the status of the label it sits under ("Stopped:") when
    its own words give none, and a change its old and new dose ("30 mg to 15 mg")."""
    if status == "new" and medication.status == "changed" and not medication.changed_from \
            and not medication.doubt:
        # Under "STARTED:", "Dose reduced for age >= 80" says why the dose is low: a change
        # needs a dose it changed from.
        medication.status, medication.changed_to = "", ""
    if not medication.status and status and not _ALLOWED.search(line) and not re.search(
            rf"\bwhile\s+(?:\w+\s+){{0,3}}?(?:on|taking|using)\s+(?:the\s+|her\s+|his\s+|your\s+|their\s+)?"
            rf"{re.escape(medication.name)}", line, re.IGNORECASE):
        # (not "Acetaminophen is safe for the knees" under "What to avoid", nor "No
        # alcohol while taking metronidazole": allowed, or the medicine beside what to avoid)
        medication.status, medication.label = status, label
        if medication.status in ("stopped", "held") and not medication.reason:
            medication.reason = _dash_reason(_plain_space(line), vocab, stopped=True)
    changed = _A_TO_B.search(line) if (medication.status == "changed" and not medication.changed_to
                                       and medication.step <= 1) else None
    if changed:
        # under "Dose changed:", "30 mg to 15 mg once daily" is the old dose and the new
        medication.changed_from = _plain_doses(changed.group("from"), vocab)
        medication.changed_to = medication.dose = _plain_doses(changed.group("to"), vocab)
        if re.fullmatch(r"[\d.]+", medication.changed_from):
            medication.changed_from += " " + medication.changed_to.split(" ", 1)[-1]


_ROW_LABEL = re.compile(r"^\s*(?P<label>[A-Za-z][A-Za-z ]{2,20}):\s{2,}(?=\S)")


def _table_row(summary: str, section: SummarySection, a: int, b: int,
               vocab: Vocabulary) -> tuple[str, list[str]]:
    """The item `summary[a:b]` and the column names of the table it is a row of ([] when it
    is none); a row of a table laid out with spaces comes with bars between its cells."""
    line = summary[a:b]
    if _TABLE_ROW.match(line):
        return line, table_header(summary, section, a, vocab)
    spaced = spaced_columns(summary, section, a, vocab)
    if spaced:
        line = _piped(summary, a, b, spaced)
        if _TABLE_ROW.match(line.split("\n")[0]):
            return line, [name for name, _start in spaced]
    return line, []


def _from_columns(medication: Medication, row: str, header: list[str], before: str,
                  vocab: Vocabulary, order: str = "mdy") -> None:
    """What a table row's own columns add to its medicine: the brand, the change from the
    dose before the stay ("100 micrograms om" to "125 micrograms om"), the reason, how long
    and the last dose's date."""
    _brand_cell(medication, row, header)
    _whole_name(medication, _cell(row, header, _NAME_COLUMNS))
    now = _cell(row, header, frozenset(n for n in header if "dose" in n and n not in vocab.record_columns
                                       and n not in vocab.previous_dose_columns))
    if medication.status == "changed" and re.search(r"\w", before) and not medication.changed_from:
        medication.changed_from, medication.changed_to = before, now
    why = _reason_cell(row, header, vocab)
    if why and not medication.reason.startswith("replaced") and not (medication.as_needed and medication.reason):
        medication.reason = why  # the row's own column says why
    course = _cell(row, header, frozenset({"duration", "length", "course", "duration / stop",
                                           "duration/stop"})).strip()
    # "| 14 DAYS |" under "Duration"; "7 days, last dose 17/06/2026" (a cell wrapped onto two lines)
    length = re.match(r"(?P<n>\d+)\s*(?P<unit>days?|weeks?|months?)\b(?=\s*(?:$|[,;]))", course, re.IGNORECASE)
    if length and not medication.duration:
        medication.duration = f"{int(length.group('n'))} {_unit_word(length.group('unit'), int(length.group('n')))}"
    # "till DJ stent" + "removal" on the next line: the whole event the course runs to
    till = re.match(r"(?:till|until)\s+(?P<what>[^\d,;]+?)\s*$", course, re.IGNORECASE)
    if till and medication.until and not DATE.search(medication.until) \
            and till.group("what").lower().startswith(medication.until.lower()):
        medication.until = till.group("what")
    last = re.search(rf"\blast\s+dose\s+(?:on\s+)?(?P<date>{DATE.pattern})", course, re.IGNORECASE)
    if last and not medication.until:
        medication.until = date_value(DATE.search(last.group("date")), order) or ""
    # a held medicine's cell says when it may start again ("4 weeks - may restart from
    # 06/07/2026", "restart from 15/05/2025 morning"): that date, over any "until" the
    # comments hold ("use condoms until restarted")
    again = re.search(rf"\b(?:restart|resume|start again)\w*\s+(?:from|on)\s+(?P<date>{DATE.pattern})",
                      " ".join(_cells(row)[1:]), re.IGNORECASE)
    if again and medication.status in ("held", "resume"):
        medication.until = date_value(DATE.search(again.group("date")), order) or medication.until


_NAME_COLUMNS = frozenset({"drug", "drugs", "medicine", "medicines", "medication", "medications", "name",
                           "drug name"})


def _whole_name(medication: Medication, cell: str) -> None:
    """A name cell whose words before the name read go with it ("SYP. POTASSIUM MAGNESIUM
    CITRATE" is not magnesium citrate, another medicine): the cell's name whole, without
    its form's shorthand, strength or brackets, and no glossary entry of its last words."""
    written = re.sub(rf"^\s*{DOSE_FORM_SHORTHAND}\.\s*", "", cell, flags=re.IGNORECASE)
    written = re.split(r"\s*\(|\s+\d", written)[0].strip()
    if (len(written) > len(medication.name) and written.lower().endswith(" " + medication.name.lower())
            and re.fullmatch(r"[A-Za-z][A-Za-z -]*", written) and len(written.split()) <= 4):
        medication.name, medication.key = written, written.lower()


def _brand_cell(medication: Medication, row: str, header: list[str]) -> None:
    """"| Cartia | aspirin | 100 mg | ...": a table's brand column names the medicine as the
    patient's packet does, beside its generic name."""
    cells = _cells(row)
    brand = next((cells[i] for i, name in enumerate(header) if name.startswith("brand") and i < len(cells)), "")
    if re.search(r"[A-Za-z]{3}", brand) and brand.lower() not in medication.name.lower() \
            and medication.name.lower() not in brand.lower():
        medication.name = f"{brand} ({medication.name})"


def _row_label(line: str, row: tuple[str, str, int] | None,
               vocab: Vocabulary) -> tuple[str, str, int] | None:
    """The label a space-aligned table's first column gives its row and the rows below it
    left blank there ("Started:       Folic acid 5 mg ..." over "               Accrete D3"):
    (status, label, column of the rows' text), or None."""
    labelled = _ROW_LABEL.match(line)
    if labelled:
        status = _status(labelled.group("label"), vocab)
        return (status, labelled.group("label"), labelled.end()) if status else None
    if row and len(line) - len(line.lstrip()) >= row[2] - 1:
        return row
    return None


def _is_label_line(line: str, glossary: Glossary | None, vocab: Vocabulary) -> bool:
    """A label over the list lines below it ("Stopped:", "** NEW **"): short, a status, no dose;
    or an after-visit summary's "HOLD these medications - do not take until ...", however long."""
    if re.match(r"\s*[A-Za-z]+(?:\s+[a-z]+){0,3}\s+these\s+(?:medications|medicines)\b", line) \
            and _status(line, vocab) and not _quantities(line, vocab):
        return True
    return bool(len(line.split()) <= 8 and _status(line, vocab) and not _quantities(line, vocab)
                and not re.search(r"[.;]\s+\S", line.strip())  # "5 days only.   [NEW]" goes on
                # "Medicine (previous dose)     Reason     Restart?": a table's header row
                and not re.search(r"\S\s{3,}\S", line.strip()) and not line.rstrip().endswith("?")
                and (line.rstrip().endswith(":") or not medicine_names(line, glossary, vocab)
                     and not LIST_ITEM.match(line) and not vocab.timings(line)))


def _titled_medicine(title: str, glossary: Glossary | None, vocab: Vocabulary,
                     facts: SummaryFacts) -> list[Medication]:
    """"Amantadine plan" below the list: the medicine read already whose steps its lines of
    doses are ([] when the title names no one medicine)."""
    titled = medicine_names(title, glossary, vocab)
    if len(titled) != 1:
        return []
    return [m for m in facts.medications if m.name.lower() == titled[0][2].lower()
            or m.key == titled[0][3]][-1:]


def _read_medication_list(summary: str, section: SummarySection, items: list[tuple[int, int]],
                          glossary: Glossary | None, vocab: Vocabulary, facts: SummaryFacts) -> None:
    """The medicines of a list or table: each line's, with the status of the sub-heading or
    label line it sits under ("Medicines to stop:", "Stopped:") when it gives none."""
    listed_status = _status(section.title, vocab) if section.effective_kind == "medications" else ""
    label = section.title if listed_status else ""
    last = _titled_medicine(section.title, glossary, vocab, facts)  # the medicines of the item before
    condition_for: Medication | None = None  # a medicine given "if:" what the next line says
    row: tuple[str, str, int] | None = None  # the label of a space-aligned table's rows
    for a, b in items:
        line = summary[a:b]
        row = _row_label(summary[summary.rfind("\n", 0, a) + 1:b], row, vocab)
        line, header = _table_row(summary, section, a, b, vocab)
        as_written = line  # (a row's cells, before the record's own are blanked)
        if _TABLE_ROW.match(line) and not _medication_table(header) and header:
            continue  # a row of another table (follow-ups)
        if section.effective_kind != "medications" and not header:
            continue
        column = _status_cell(line, header, vocab) if header else ""
        if _is_label_line(line, glossary, vocab) and (a, b) != items[-1]:
            # A label over the lines below it: "Stopped:", "** NEW **" (the list's last line
            # labels nothing: "Combined oral contraceptive pill - CONTINUE"); one with no status
            # ("H. pylori treatment - all three for 14 days:") stays under the one above
            listed_status = _status(line, vocab) or listed_status
            label = line.strip().strip("*#=- ").rstrip(":").strip()
            last = []
            continue
        before = _cell(line, header, vocab.previous_dose_columns) if header else ""
        if header:  # the record's own columns ("| Last dose given | 06/12 08:00 |") are not read,
            # nor the dose before the stay ("| Home dose |")
            line = _without_record_cells(line, header, vocab)
        elif reads_as_warning(line, vocab) and _names_medicines_only_as_signs(line, glossary, vocab):
            # "Call 911 at once if he is too breathless to talk" under the list: a sign to
            # come back, never a medicine named "Call".
            facts.warning_signs.append(_warning(line, a, b, bool(LIST_ITEM.match(line))))
            continue
        medications = _medications_of_line(line, a, b, section.title, glossary, vocab,
                                           facts.date_order, in_list=True, status_column=column)
        if header and medications:
            _from_columns(medications[0], line, header, before, vocab, facts.date_order)
            if not _TABLE_ROW.match(summary[a:b]):  # a space-laid row: quoted cell by cell
                medications[0].text = " | ".join(c for c in map(_plain_space, _cells(as_written))
                                                 if c.strip("- "))
        if not medications:
            if line.rstrip().endswith(":") and len(line.split()) <= 6:
                listed_status = _status(line, vocab)
                label = line.strip().rstrip(":").strip() if listed_status else ""
                last = []
            elif len(last) == 1 and not medicine_names(line, glossary, vocab) and _dose_line(
                    line, last[0], vocab):
                # A taper under its medicine: "20 mg qAM x 7 days", "then 15 mg qAM x 7 days"
                if len(_steps(line, vocab)) > 1 and not last[0].dose:
                    _continued(facts, last[0], line, vocab, facts.date_order)  # several at once
                    last[0].mentions.append((a, b))
                    last = []
                    continue
                step = _taper_step(facts, last[0], line, vocab)
                step.mentions.append((a, b))  # the line it was read from is said in its row
                last = [step]
                continue
            elif len(last) == 1 and not medicine_names(line, glossary, vocab):
                if condition_for is not None and not condition_for.reason:
                    # "Give 1 spray if:" then "* a seizure lasts 5 minutes or longer, OR"
                    condition_for.reason = re.sub(r",?\s*\b(?:or|and)\s*$", "",
                                                  _plain_space(LIST_ITEM.sub("", line, count=1)),
                                                  flags=re.IGNORECASE).rstrip(".,; ")
                    continue
                _goes_on(last[0], line, vocab, facts.date_order)
                if re.search(r"\bif\s*:\s*$", line):
                    last[0].as_needed = True  # given only when what follows happens
                    last[0].frequency = last[0].frequency or "as needed"
                    condition_for = last[0]
            continue
        condition_for = None
        last = []
        for medication in medications:
            _labelled(medication, *(row[:2] if row else (listed_status, label)), line, vocab)
            last.append(_merge(facts.medications, medication))


def same_day_dose(m: Medication) -> bool:
    """Whether a later step is another dose of the same day ("300 mg in the morning and 600 mg
    at bedtime"): its dose follows "and", with no "then" before it."""
    amount = re.escape(m.count or m.dose)
    return bool(amount and re.search(rf"\band\s+(?:take\s+|give\s+)?{amount}", m.text, re.IGNORECASE)
                and not re.search(rf"\bthen\b[^.;]{{0,40}}?{amount}", m.text, re.IGNORECASE))


_MEAL = r"(?:food|meals?|eating|breakfast|lunch|supper|dinner|(?:the\s+)?evening\s+meal)"
_TIMED_TO_FOOD = re.compile(rf"\b(?:\d+(?:\s*(?:-|to)\s*\d+)?|one|half\s+an?)\s*(?:minutes?|mins?|hours?|hrs?)\s+"
                            rf"(?:before|after)\s+{_MEAL}(?:\s+and\s+(?:before\s+|after\s+)?{_MEAL})?\b")


def how_taken(medication: "Medication", summary: str, vocab: Vocabulary) -> list[str]:
    """The phrases of how a dose is taken ("with food", "before breakfast"; the vocabulary's
    [how_taken]) that a medicine's own words hold, in their order, none inside another:
    the handout's row and the answer's sentence both say them."""
    m = medication
    written = summary[m.start:m.end] if summary[m.start:m.end].strip() else m.text
    if m.step:  # a step's own words: the first step's before "then"; a later step's are not told apart
        written = re.split(r"\bthen\b", written, flags=re.IGNORECASE)[0] if m.step == 1 else ""
    own = written.lower()
    found: list[tuple[int, int, str]] = []
    # Only the sentence that names the dose and those that say how to take it ("Take with
    # food."), not one about something else ("Check sugar before breakfast and before supper.",
    # also on a line of its own; a line wrapped at the page's width goes on with its sentence)
    told = "".join(sentence.lower() if index == 0 or _SAYS_HOW_TO_TAKE.match(sentence.strip()) else " " * len(sentence)
                   for index, sentence in enumerate(re.split(r"(?<=[.!?])(?=\s)|(?=\n\s*[A-Z(])", written)))
    # "1 hour before food", "30 minutes before breakfast and before supper": a time to food
    for match in _TIMED_TO_FOOD.finditer(told):
        found.append((match.start(), match.end(), " ".join(match.group(0).split())))
    for phrase in vocab.how_taken:
        # with its other choice ("with food or milk", "before food or on an empty stomach")
        for match in re.finditer(rf"(?:\b(?:with|before|after)\s+[a-z]+\s+or\s+)?(?<!\w){re.escape(phrase)}(?!\w)"
                                 rf"(?:\s+or\s+(?:with\s+)?(?!(?:on|an|at|in|a)\b)[a-z]+\b(?=\s*(?:[.,;:)\n]|$)))?", told):
            # "with orange juice, not with milk, tea or coffee": a way it is NOT taken, and
            # the words listed after that "not" too
            clause = re.split(r"[.;]", own[:match.start()])[-1]
            if _NOT_TAKEN.search(clause):
                continue
            if not any(a < match.end() and match.start() < b for a, b, _p in found):
                found.append((match.start(), match.end(), " ".join(match.group(0).split())))
    # and what it is not taken with, as written ("not with tea or milk"): said with the way it
    # is; and what it is mixed in ("in 1 litre of boiled and cooled water")
    for match in [*_NOT_WITH.finditer(told), *MIXED_IN.finditer(told)]:
        if not any(a < match.end() and match.start() < b for a, b, _p in found):
            found.append((match.start(), match.end(), re.sub(r"\bml\b", "mL", " ".join(match.group(0).split()))))
    return [phrase for _a, _b, phrase in sorted(found)]


_NOT_WITH = re.compile(r"\b(?:not|never)\s+(?:take\s+(?:it\s+)?)?with\s+[a-z]+(?:(?:,\s*|\s+or\s+|\s+and\s+|\s+)[a-z]+){0,5}?"
                       r"(?=\s*(?:[.;:()\n]|\s-\s|,\s*(?:take|then|it|do|and\s+(?:take|do))\b|$))")


_SAYS_HOW_TO_TAKE = re.compile(r"(?:take|taken|give|given|use|inject|apply|swallow|chew|dissolve|inhale|"
                               r"spray|have|best|always|do not|don't|never)\b", re.IGNORECASE)
# What comes before a way of taking a dose that is not to be followed ("not with milk",
# "avoid taking with", "never with alcohol"), within its clause.
_NOT_TAKEN = re.compile(r"\b(?:not|never|avoid|don't|without)\b(?![^,]*\bbut\b)[^,]*(?:,(?!\s*take\b)[^,]*)?$|"
                        r"\b(?:not|never|avoid|don't)\s+(?:take\s+|taking\s+|give\s+)?$", re.IGNORECASE)
