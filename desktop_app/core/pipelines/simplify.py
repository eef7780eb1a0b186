"""Simplify: a whole discharge summary turned into a handout a patient can read.

The handout is built on the summary's facts (summary_facts.py), read without a model, in
the order a patient needs it:

1. **What to do now**: "Your medicines", a table of every medication (take / how much /
   when / until / the most in a day), NEW, CHANGED, STOP, ON HOLD and RESTART marked, with
   the reason when written (a line the parser cannot read without doubt, which medicine a
   status is for, is marked ASK and quoted whole, never turned into an instruction); then
   "Your appointments and tests", "Call or come back if" and "What to do and avoid", from
   the follow-ups, warning signs and restrictions, the lines of those sections no fact
   covers, and the summary's instructions and allergies;
2. **What happened in hospital**: at most Settings.handout_story_sentences sentences, the
   diagnoses first, then the sentences of the hospital course and results a patient needs
   (`story_lines`: lab values, doses given in hospital and long detail stay out),
   rewritten by the simplifier (model A) where the rewrite passes every check (nothing
   left out, nothing added, no degenerate text, a reading grade below the limit, with the
   verifier, model B, helping on the grade) and reads easier than Lumen's own plain
   rendering; else that plain rendering (plain.py: plain words, the patient as "you",
   checked line by line to keep every fact);
3. **Words to know**: the glossary's definitions of the hard words still in parts 1-2;
4. **For your care team**: every other narrative section as the summary writes it (record
   fields taken out), so the handout loses nothing and the patient can show it.

Last, the whole handout is compared with the summary: any dose, timing, date or medicine
still missing is copied in word for word under a note.  Never lost.
"""

from __future__ import annotations

import dataclasses
import re
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from ..errors import LumenError
from ..glossary.glossary import Glossary
from ..models.generation import TextModel
from ..progress import CancelToken, ProgressCallback, report
from ..readability import lines_as_sentences
from ..templates import render
from .ask import EventCallback
from .base import Pipeline
from .answer_rules import answer_rules, content_words
from .checks import clean_reply, degeneracy_problems, failing_early, first_sentences
from .evidence import Explainer
from .grounding import missing_facts, unsupported_facts
from .plain import list_items
from .safety import inspect_document, neutralise_control_markers, reads_like_instruction
from .summary_facts import (LIST_ITEM, NOTHING_LISTED, RECORD_NOTE, SIGNED_LINE, how_taken, line_indent, Medication, SummaryFacts, SummarySection, medicine_names,
                            patient_text, read_summary, same_day_dose, section_items, sentences_of, uk_dose_times)
from .retry import Turns, attempts_until_passed
from .trace import Attempt, CallRecord, Gate, Trace, trace_header
from .vocabulary import DATE, NUMBER_WORDS, plain_date, vocabulary

MAX_WORDS_TO_KNOW = 30
SECTION_CHARS = 1200  # a longer narrative section is rewritten in pieces of about this size
LIST_KINDS = ("medications", "follow_up", "warning_signs", "restrictions")
# A line about the list itself ("The list below is what prints on the After Visit Summary",
# "The following medications were reconciled:") tells the patient nothing to do.
_ABOUT_THE_LIST = re.compile(r"^(?:the|this)\s+(?:list|table|following)\b|\b(?:list|table)\s+"
                             r"(?:below|above)\b|\bas\s+(?:below|follows)\s*:?\s*$",
                             re.IGNORECASE)
CHANGE_LABELS = {"new": "NEW", "changed": "CHANGED", "stopped": "STOP", "held": "ON HOLD",
                 "resume": "RESTART", "unchanged": "NO CHANGE"}
DOUBT_LABEL = "ASK"
COPIED_NOTE = ("Copied from your summary word for word, because the handout above did not "
               "hold it (please ask your care team about these):")
EXPLAINED_NOTE = "From your summary, in plain words."
FOR_DOCTOR_LEAD = "Your summary asks your family doctor:"
NOW_TITLE = "What to do now"
STORY_TITLE = "What happened in hospital"
CARE_TEAM_TITLE = "For your care team"
CARE_TEAM_NOTE = ("The rest of your discharge summary, as it was written, for the doctors, "
                  "nurses and pharmacists who see you next.")
# Narrative sections shown on page one ("Weigh yourself every morning", an allergy), and
# those "What happened in hospital" is told from.
NOW_KINDS = ("instructions", "allergies")
STORY_KINDS = ("diagnoses", "hospital_course", "results", "history")
STORY_DIAGNOSES = 3  # at most this many of the story's sentences are diagnosis lines
STORY_LONGEST = 45  # words; a longer sentence is detail for the care team
STORY_SAID_LONGER = 8  # most words a diagnosis said again may add ("RSV bronchiolitis, resolved")


@dataclass
class MedicineRow:
    medicine: str  # the name as the summary writes it
    about: str  # what it is, from the glossary ("A strong water pill ...")
    how_much: str
    when: str
    until: str  # "until 06/04/2025", "for 5 days", or ""
    change: str  # NEW, CHANGED, STOP, ON HOLD, RESTART, or ""
    why: str  # the reason, and for a change what it was before
    source: str  # the line it was read from


@dataclass
class HandoutItem:
    """One appointment, warning sign or restriction: the summary's line, explained."""

    text: str
    source: str
    who: str = ""
    when: str = ""
    test: str = ""
    # The line a list of warning signs hangs from, explained ("Seek urgent help (999 or
    # A&E) if"): where to go for these signs, which may differ from list to list.
    lead: str = ""


@dataclass
class HandoutSection:
    title: str  # as in the summary
    plain_title: str
    original: str
    text: str
    source: str  # "model" (a rewrite that passed every check), "explained" or "record"
    fkgl_before: float | None = None
    fkgl_after: float | None = None
    problems: list[str] = field(default_factory=list)  # why no rewrite was shown
    # Where it is shown: "record" (the stay's dates, at the top), "now" (page one),
    # "story" (What happened in hospital) or "care_team" (as written, at the end).
    part: str = "care_team"
    kind: str = ""  # the summary section's kind ("instructions", "allergies", ...)

    @property
    def is_record(self) -> bool:
        return self.part == "record"


@dataclass
class Handout:
    medicines: list[MedicineRow]
    appointments: list[HandoutItem]
    warnings: list[HandoutItem]
    restrictions: list[HandoutItem]
    more_from_lists: dict[str, list[str]]  # plain heading -> explained lines no fact covers
    sections: list[HandoutSection]
    copied: list[str]  # summary lines copied word for word by the final completeness check
    words_to_know: list[dict[str, str]]
    trace: Trace

    @property
    def notice(self) -> str:
        return self.trace.notice

    def explained_sections(self) -> list[HandoutSection]:
        """Narrative sections shown as the summary's own words (no rewrite passed)."""
        return [s for s in self.sections if s.source == "explained"]

    def to_dict(self) -> dict[str, Any]:
        return {"medicines": [asdict(m) for m in self.medicines],
                "appointments": [asdict(a) for a in self.appointments],
                "warnings": [asdict(w) for w in self.warnings],
                "restrictions": [asdict(r) for r in self.restrictions],
                "more_from_lists": self.more_from_lists,
                "sections": [asdict(s) for s in self.sections], "copied": self.copied,
                "words_to_know": self.words_to_know, "notice": self.notice,
                "trace": self.trace.to_dict()}

    # ---- rendering ----

    def _headings(self) -> dict[str, str]:
        vocab = vocabulary()
        return {kind: vocab.section_plain(kind) for kind in LIST_KINDS}

    def part(self, name: str) -> list[HandoutSection]:
        return [s for s in self.sections if s.part == name]

    def story(self) -> HandoutSection | None:
        """"What happened in hospital" (None when the summary tells nothing of the stay)."""
        return next(iter(self.part("story")), None)

    def page_one_lists(self) -> list[tuple[str, list[str]]]:
        """The lists of "What to do now" under the medicines, each (heading, items): the
        allergies, the appointments, when to call, and what to do and avoid (with the
        summary's own instructions: "Weigh yourself every morning")."""
        head = self._headings()
        lines_of = {kind: [sentence_case(line) for section in self.part("now") if section.kind == kind
                           for line in section.text.split("\n") if line.strip()]
                    for kind in NOW_KINDS}
        lists = [(vocabulary().section_plain("allergies"), lines_of["allergies"])]
        for kind, items in (("follow_up", self.appointments), ("warning_signs", self.warnings),
                            ("restrictions", self.restrictions)):
            lists.append((head[kind], _under_leads(items) + self.more_from_lists.get(kind, [])
                          + (lines_of["instructions"] if kind == "restrictions" else [])))
        return [(heading, items) for heading, items in lists if items]

    def main_text(self, about: bool = True) -> str:
        """What a patient reads first: "What to do now" and "What happened in hospital",
        without the handout's title, notice, words to know and care team part; with
        `about` False, without what each medicine is (itself a definition)."""
        return self._text_parts(main_only=True, about=about)

    def to_text(self) -> str:
        lines = ["Your hospital stay in plain words", "=" * 33, "", self.notice, ""]
        records = self.part("record")
        for section in records:
            lines.append(f"{section.title}: {section.text}" if section.title else section.text)
        if records:
            lines.append("")
        lines.append(self._text_parts(main_only=False))
        return "\n".join(lines).rstrip() + "\n"

    def _text_parts(self, main_only: bool, about: bool = True) -> str:
        head = self._headings()
        lines = [NOW_TITLE, "=" * len(NOW_TITLE), ""]
        if self.medicines:
            lines += [head["medications"], "-" * len(head["medications"])]
            for row in self.medicines:
                how = ", ".join(p for p in (row.how_much, row.when, row.until) if p)
                lines.append(f"- {row.change + ': ' if row.change else ''}{row.medicine}"
                             + (f": {how}" if how else "")
                             + (f". {row.why}" if row.why else "")
                             + (f" ({row.about})" if row.about and about else ""))
            if self.more_from_lists.get("medications"):
                lines += [f"- {line}" for line in self.more_from_lists["medications"]]
            lines.append("")
        for heading, items in self.page_one_lists():
            lines += [heading, "-" * len(heading)]
            for item in items:
                listed = item if isinstance(item, tuple) else list_items(item)
                lines += ([f"- {listed[0]}:", *[f"  - {part}" for part in listed[1]]]
                          if listed else [f"- {item}"])
            lines.append("")
        story = self.story()
        if story is not None:
            lines += [STORY_TITLE, "=" * len(STORY_TITLE), f"({story_note(story)})", "",
                      story.text, ""]
        if main_only:
            return "\n".join(lines).rstrip() + "\n"
        if self.words_to_know:
            lines += ["Words to know", "-" * 13,
                      *[f"- {w['term']}: {w['definition']}" for w in self.words_to_know], ""]
        care = self.part("care_team")
        if care:
            lines += [CARE_TEAM_TITLE, "=" * len(CARE_TEAM_TITLE), CARE_TEAM_NOTE, ""]
            previous = None
            for section in care:
                if section.title and section.title != previous:
                    lines += [section.title, "-" * len(section.title)]
                lines += [section.text, ""]
                previous = section.title
        if self.copied:
            lines += [COPIED_NOTE, *[f"  {line}" for line in self.copied], ""]
        return "\n".join(lines).rstrip() + "\n"

    def to_html(self) -> str:
        """The handout as one HTML page (resources/templates/handout.html.j2)."""
        head = self._headings()
        medicines = [{"medicine": r.medicine, "about": r.about,
                      "how": ", ".join(p for p in (r.how_much, r.when, r.until) if p),
                      "change": r.change, "why": r.why} for r in self.medicines]
        lists = [(heading, [_list_entry(item) for item in items])
                 for heading, items in self.page_one_lists()]
        story = self.story()
        care, previous = [], None
        for section in self.part("care_team"):
            care.append({"heading": section.title if section.title != previous else "",
                         "lines": _shown_lines(section.text)})
            previous = section.title
        return render(
            "handout.html.j2", notice=self.notice,
            records=[(s.title, s.text) for s in self.part("record")],
            now_title=NOW_TITLE, medications_heading=head["medications"], medicines=medicines,
            more_medications=self.more_from_lists.get("medications", []), lists=lists,
            story_title=STORY_TITLE, story=None if story is None else {
                "note": story_note(story), "lines": _shown_lines(story.text)},
            words_to_know=self.words_to_know, care_team_title=CARE_TEAM_TITLE,
            care_team_note=CARE_TEAM_NOTE, care=care, copied_note=COPIED_NOTE, copied=self.copied)


def _under_leads(items: list[HandoutItem]) -> list[str | tuple[str, list[str]]]:
    """Items as a list shows them: those under one lead as (lead, their texts), in order."""
    shown: list[str | tuple[str, list[str]]] = []
    for item in items:
        if not item.lead:
            shown.append(item.text)
        elif shown and isinstance(shown[-1], tuple) and shown[-1][0] == item.lead:
            shown[-1][1].append(item.text)
        else:
            shown.append((item.lead, [item.text]))
    return shown


_WHERE_TO_GO = re.compile(r"\b(?:911|999|000|111|112|108|emergency|A&E|casualty|ambulance|GP|doctor|"
                          r"clinic|hospital|nurse|surgeon)\b", re.IGNORECASE)
_LEAD_WORDS = re.compile(r"\b(?:if|for|when|any of|following)\b", re.IGNORECASE)
# Short words a summary in capitals writes that are no abbreviation (besides the stop words).
_SHORT_WORDS = frozenset({"get", "go", "see", "new", "all", "him", "day", "use", "now", "way", "out"})


def sentence_case(text: str, glossary: Glossary | None = None, start: bool = True) -> str:
    """A line written in capitals ("RETURN TO THE ED FOR") as a sentence is ("Return to the
    ED for"): a name the glossary writes with capitals keeps them (COPD, NSAIDs, INR), and
    so does a short word that is no common word (GP, A&E, BP); `start` False for words said
    inside a sentence ("until neuromuscular clinic")."""
    if not re.search(r"[A-Z]{2}", text) or re.search(r"[a-z]", text):
        return text
    common = answer_rules().stop_words | _SHORT_WORDS
    said = re.sub(r"[A-Za-z&]+", lambda m: m.group(0) if len(m.group(0)) <= 3 and m.group(0).lower()
                  not in common else m.group(0).lower(), text)
    for match in glossary.match(text) if glossary is not None else []:
        entry = glossary.by_key.get(match.key)
        forms = (entry.term, *entry.aliases, *entry.abbreviations) if entry else ()
        written = next((f for f in forms if f.lower() == match.text.lower() and f != f.lower()), None)
        if written:
            said = said[:match.start] + written + said[match.end:]
    first = re.search(r"[A-Za-z]", said)
    return said if first is None or not start else said[:first.start()] + said[first.start()].upper() + said[first.start() + 1:]


# "Emergency phone (24 hours): 0000-000000", "Ward 7 telephone: 01234 567890"
# ("Nurse advice line, day or night: 555-0100", "For queries: Urology ward (24 hrs) 0422-000 0001")
_PHONE_LINE = re.compile(r"[^:\n]{0,40}\b(?:phone|telephone|tel|helpline|hotline|contact number|advice line|"
                         r"queries|enquiries)\b[^:\n]{0,30}:\s*[^\n]{0,40}?[+(]?\d{3}",
                         re.IGNORECASE)


def _plain_lead(text: str) -> str:
    return " ".join(text.lower().rstrip(":. ").split())


def warning_lead(summary: str, start: int) -> str:
    """The line a warning sign of a list hangs from ("Seek urgent help (999 or A&E) if:",
    "Call 911 right away if"), without its colon; '' when the sign is no list item or its list has no such line (a
    heading such as "WARNING SIGNS:" says no more than the handout's own)."""
    line_start = summary.rfind("\n", 0, start) + 1
    if not LIST_ITEM.match(summary[line_start:start + 3]):
        return ""
    for line in reversed(summary[:line_start].split("\n")[:-1]):
        if not line.strip():
            return ""
        if LIST_ITEM.match(line) or line[:1] in " \t":
            continue  # an item of the same list, or a wrapped line of one
        line = line.strip()
        # ("Call 911 right away if", with no colon: its last word leads into the list; "When
        # to call 911" over its list says where to go, which "WARNING SIGNS" does not)
        ends_as_lead = line.endswith(":") or re.search(r"\b(?:if|for|when)$", line, re.IGNORECASE)
        says_where = re.match(r"when to\b", line, re.IGNORECASE) and _WHERE_TO_GO.search(line)
        return line.rstrip(":").strip() if (ends_as_lead and _LEAD_WORDS.search(line)) or says_where else ""
    return ""


def _list_entry(item: str | tuple[str, list[str]]) -> dict[str, Any]:
    """A line of a list as HTML shows it: a sentence that lists what to look for as its
    lead and the things listed, any other line as its lead alone."""
    listed = item if isinstance(item, tuple) else list_items(item)
    return {"lead": listed[0], "parts": listed[1]} if listed else {"lead": item, "parts": []}


def _shown_lines(text: str) -> list[str]:
    """A section's lines as HTML shows them, one paragraph each: blank lines left out."""
    return [line for line in text.split("\n") if line.strip()]


def story_note(section: HandoutSection) -> str:
    """What "What happened in hospital" vouches for, and no more."""
    if section.source == "model":
        return ("Rewritten by Lumen's model from your summary; checked to keep every dose, "
                "date and medicine of the lines it is told from, and to add none.")
    return EXPLAINED_NOTE


# ---- the tables, from the facts -------------------------------------------------------


# A sentence of a line that is a status word or the supply, which the row says already
# (a status is a note's last word only in a note of a few words: "Dose unchanged.", not "...
# and decide whether to restart.")
# (a status word in a few words, but not one said "not" of: "Do not restart" tells the patient
# what not to do)
_ROW_SAYS = re.compile(r"^(?!.*\b(?:not|never|n't|don't)\b)\W*(?:\w+\W+){0,2}(?:new|continue[ds]?|stopped|stop|changed|held|"
                       r"hold|unchanged|same|restart(?:ed)?)\W*$"
                       r"|\d+\s+(?:tablets?|capsules?|tabs?)\s+(?:dispensed|supplied|only)\b|\brefills?\b"
                       # the most in a day, and nothing else ("Max 8 tabs in 24 hrs."): the row's maximum
                       r"|^\W*max(?:imum)?\W+[\d,.]+\s*[a-z]+\s*(?:/|in|per)\s*(?:\d+\s*)?[a-z]+\W*$", re.IGNORECASE)


# What a held medicine's restart depends on ("and only if the CBC shows her hemoglobin
# holding at 8.5 or higher", "restart on 17/05/2025 if urine is clear")
_CLAUSE_WORDS = r"(?:[^.;()|]|(?<=\d)\.(?=\d))"  # up to a sentence's end, "8.5" whole
_RESTART_IF = re.compile(rf"\bonly\s+if\s+(?P<if>{_CLAUSE_WORDS}{{5,120}})|\b(?:restart|resume)\w*\b[^.;()|]{{0,40}}?"
                         rf"\bif\s+(?!needed|required)(?P<if2>{_CLAUSE_WORDS}{{3,80}})", re.IGNORECASE)
# When a later step starts, on its own line ("from 06/21/2026", "starting the morning of 03/15")
_STEP_STARTS = re.compile(rf"\b(?:from|starting|beginning)\s+(?:the\s+(?:morning|evening)\s+of\s+|on\s+)?"
                          rf"(?P<date>{DATE.pattern})", re.IGNORECASE)
# The words of a status a row's label says already ("NEW", "Continued", "Withheld")
_STATUS_WORDS = (r"(?:new|continue[ds]?|stop(?:ped)?|changed|held|hold|unchanged|same|ceased|withheld|"
                 r"restart(?:ed)?|resume[d]?)")
_STATUS_CELL = re.compile(rf"{_STATUS_WORDS}\b", re.IGNORECASE)


def _line_notes(m: Medication, row: str, explainer: Explainer) -> str:
    """The sentences of a medicine's own line after the one that names it, which its row's
    fields do not say ("Never skip this dose, even if not eating.", "Do not swallow.",
    "Rinse mouth after use.", a table row's "Do not stop suddenly"): as written, for the
    row; not for a later step (its first step's row has them), and never a sentence of another medicine's
    (_said_of_this) or of what was done on the ward."""
    line = LIST_ITEM.sub("", m.text, count=1).strip()
    if m.step > 1:
        return ""
    if "|" in line:
        # A table row: the sentences of its cells of a few words or more after the name's
        # that its fields do not say (a comments column's "Do not stop suddenly"), not a
        # dose's cell ("60 mg (reducing - see schedule below)")
        # of the medicine's own row (a stopped medicine read from its successor's "Replaces
        # ramipril" has none of that row's notes), and not its status cell ("NEW - started
        # 10/07/2025")
        # (its own row, where it was read from another's, "Replaces ramipril", and merged
        # with its own: "| Ramipril (Altace) | ... | Never take both ... |")
        rows = [line] + [_line_at(explainer.summary, a) for a, _b in m.mentions]
        line = next((row for row in rows if "|" in row
                     and m.name.lower() in row.strip("| ").split("|")[0].lower()), "")
        if not line:
            return ""
        name, *cells = [c.strip() for c in line.strip("| ").split("|")]
        sentences = [""] + [sentence for cell in cells if len(cell.split()) >= 3
                            and not vocabulary().quantity.match(cell) and not _STATUS_CELL.match(cell)
                            for sentence in re.split(r"(?<=[.!?])\s+(?=[A-Z(])|;\s+", cell)]
        named = 0
    else:
        # (a clause after a semicolon is a sentence of its own here: "...; may repeat once
        # after 10 minutes if still seizing; call 911"; so is a line of its own, indented,
        # under the medicine's: "- Isophane insulin 12 units at night - NEW\n   Check sugar
        # ..."; not a line wrapped at the page's width)
        own = explainer.summary[m.start:m.end]
        if m.name.lower() in own.lower():
            line = _LAID_OUT_ROW.sub(_laid_out_row, LIST_ITEM.sub("", own.strip(), count=1))
        parts = re.split(r"((?<=[.!?])(?<!\bDr\.)(?<!\bMr\.)(?<!\bMs\.)(?<!\bMrs\.)\s+(?=[A-Z(])|;\s+|\n[ \t]+(?=[A-Za-z(])|\n[ \t]+\+\s*)", line)
        sentences = [" ".join(part.split()) for part in parts[0::2]]
        # after the sentence that names it ("Take apixaban ...; do not skip doses. Do not take
        # aspirin ...": nothing of aspirin's comes before its name)
        named = next((i for i, s in enumerate(sentences) if m.name.lower() in s.lower()), 0)
        sentences = _unwrapped(sentences, [""] + parts[1::2], named, m.name)
        # what its own sentence says in brackets to do ("... x 1 year (do not stop without
        # asking cardiologist)"), after it
        sentences[named + 1:named + 1] = _bracketed_to_do(sentences[named])
    known = set(content_words(row))
    kept = []
    for sentence in sentences[named + 1:]:
        sentence = _STATUS_AT_END.sub("", sentence).strip()  # "call 911 (NEW)": the row says NEW
        if sentence.count(")") > sentence.count("("):  # "...; do not restart unless advised)"
            sentence = "".join(sentence.rsplit(")", 1)).rstrip()
        if not (sentence and not _ROW_SAYS.search(sentence) and not _DONE_IN_HOSPITAL.search(sentence)
                and content_words(sentence) and _said_of_this(sentence, m, explainer.glossary)):
            continue
        if sum(w not in known for w in content_words(sentence)) > len(content_words(sentence)) / 2:
            kept.append(sentence if sentence.rstrip(")")[-1:] in (".", "!", "?") else f"{sentence}.")
        else:  # a sentence the row says, but for what it says in brackets ("(remove the old one)")
            kept += [f"{said}." for said in _bracketed_to_do(sentence)]
    return " ".join(kept)


def _bracketed_to_do(sentence: str) -> list[str]:
    """What a sentence says in brackets to do ("do not stop without asking cardiologist")."""
    return [said.strip()[:1].upper() + said.strip()[1:] for said in re.findall(r"\(([^()]{6,120})\)", sentence)
            if _TELLS.match(said.strip())]


_CLAUSE_BREAK = re.compile(r",\s+|\s+[-–—]\s+|:\s+")
# A row of a small table under a medicine's line, its cells laid out with spaces ("12.1 -
# 16.0               2 units" of an insulin's correction scale)
_LAID_OUT_ROW = re.compile(r"(?<=\n)(?P<indent>[ \t]+)(?P<row>\S.*?\S[ \t]{3,}\S.*?)[ \t]*(?=\n|$)")


def _laid_out_row(match: re.Match) -> str:
    """A laid-out row as a sentence of its own, its cells joined ("12.1 - 16.0: 2 units;"),
    not run into the rows above and below it."""
    cells = re.split(r"[ \t]{3,}", match.group("row"))
    return f"{match.group('indent')}{': '.join(cells).rstrip(';.')};"


def _unwrapped(sentences: list[str], breaks: list[str], named: int, name: str) -> list[str]:
    """`sentences` (each after its break: `breaks`) with a line wrapped at the page's width
    after the one at `named` joined to the line it goes on from ("Dr. Okafor will decide" +
    "whether to restart it"), not told as two notes; one that starts a later step ("then
    150 mg ...") stays a sentence, as does one after a semicolon."""
    joined = sentences[:named + 1]
    for sentence, before in zip(sentences[named + 1:], breaks[named + 1:]):
        # (or a line that ends on a word no sentence ends with: "She will use" + "Panadol Osteo
        # as before for her knee.")
        goes_on = re.match(r"[a-z]", sentence) or re.search(
            r"\b(?:use|take|with|and|or|the|a|an|to|of|for|on|in|at|her|his|your|their|will|should|can|may)$",
            joined[-1], re.IGNORECASE)
        if (before.startswith("\n") and "+" not in before and goes_on
                and not re.match(r"then\b", sentence) and not re.search(r"[.!?:]$", joined[-1])):
            if len(joined) > named + 1:
                joined[-1] = f"{joined[-1]} {sentence}"
                continue
            # the sentence that names it goes on: its last clause with it ("when Dr. Okonjo
            # will review" + "your kidney blood test ..."), not half a sentence; the sentence
            # itself when that clause is the medicine's own (the row says it)
            clause = _CLAUSE_BREAK.split(joined[-1])[-1]
            if re.match(r"then\b", clause, re.IGNORECASE):
                continue  # ("..., then 1 DS tab PO daily" + "for PJP prophylaxis ..."): a later step's row says it
            if joined[-1].endswith(","):
                # ("... before breakfast, lunch and evening meal," + "according to the scale
                # below"): the line ended its clause; what goes on is a clause of its own
                joined.append(sentence)
                continue
            if clause == joined[-1] or name.lower() in clause.lower():
                joined[-1] = f"{joined[-1]} {sentence}"
                continue
            sentence = f"{clause} {sentence}"
        joined.append(sentence)
    return joined


# A sentence of what was done on the ward ("A one-time 300 mg loading dose was given on
# 04/09."), which is the care team's, not what to do at home
_DONE_IN_HOSPITAL = re.compile(r"\b(?:was|were)\s+(?:given|started|used|administered|received)\b|\bloading\s+dose\b"
                               r"|\bin\s+hospital\b", re.IGNORECASE)
_STATUS_AT_END = re.compile(rf"\s*(?:[-–—]\s*|[(\[]\s*){_STATUS_WORDS}\s*[)\]]?\s*\.?\s*$", re.IGNORECASE)


def _said_of_this(sentence: str, m: Medication, glossary: Glossary | None) -> bool:
    """Whether a sentence of a medicine's line is said of that medicine: it names no other,
    or it tells what to do with no subject, another medicine coming later ("Continue long
    term after aspirin stops."; not "Aspirin is no longer needed." nor "Stop aspirin.")."""
    others = [start for start, _end, _name, key in medicine_names(sentence, glossary) if key != m.key
              # (nor one named only in a clause of when: "... will reduce the dose as the
              # dexamethasone is reduced")
              and not re.search(r"\b(?:as|while|when|until|once)\s+(?:the\s+|your\s+|his\s+|her\s+)?$",
                                sentence[:start], re.IGNORECASE)]
    return not others or bool(re.match(r"(?:continue|take|keep|do\s+not|don't|never|use|give|avoid)\b", sentence,
                                       re.IGNORECASE) and len(sentence[:min(others)].split()) >= 3)


def _in_a_sentence(said: str) -> str:
    """An explained phrase ("Shortness of breath or wheeze.") as part of a sentence."""
    said = said.strip().rstrip(".")
    first = said.split(" ", 1)[0]
    return said[:1].lower() + said[1:] if first[1:].islower() else said


# Who decides a held medicine's restart, before its condition: the family doctor or the team
# ("GP to restart only if ...", "Please review amlodipine at that visit; restart if ...")
_THE_DOCTOR_DECIDES = re.compile(r"\b(?:GP|doctor|dr|please|team|clinic|consultant|physician|specialist)\b",
                                 re.IGNORECASE)


def _sentence_start(summary: str, at: int) -> int:
    """Where the sentence holding `at` starts (a paragraph's start, or after a full stop)."""
    ends = [found + 2 for found in (summary.rfind(". ", 0, at), summary.rfind("\n\n", 0, at)) if found >= 0]
    return max([*ends, at - 300, 0])


def _line_at(summary: str, at: int) -> str:
    """The whole line of the summary that holds offset `at`, without its list mark."""
    end = summary.find("\n", at)
    return LIST_ITEM.sub("", summary[summary.rfind("\n", 0, at) + 1:end if end >= 0 else len(summary)],
                         count=1).strip()


def _how_long_said(m: Medication, explainer: Explainer) -> str:
    """A row's "until" column: how long, until when (a held medicine's date is when it may
    start again, never "take until"), on what its restart depends, and when a later step
    on a line of its own starts."""
    order = explainer.date_order
    until_said = sentence_case(plain_date(m.until, order), explainer.glossary, start=False) if m.until else ""
    # (a held medicine's date is when it may start again, never "take until")
    until = (f"restart on {until_said}" if m.until and m.status == "resume" else
             f"do not take until {until_said}" if m.until and m.status == "held" else
             f"until {until_said}" if m.until else "")
    if m.duration:
        until = f"for {m.duration}" + (f", {until}" if until else "")
    if m.course_ends:  # the last step of a dose that changes: nothing after it
        until = f"{until}, then stop" if until else "then stop"
    # (in the medicine's line, or in a sentence of the summary that said it again: "not to take
    # it until Thursday 10/23/2025, and only if the CBC ... shows her hemoglobin holding")
    # (a sentence that names it from its start: "Please review amlodipine ...; restart if ...")
    said_in = [m.text] + [explainer.summary[_sentence_start(explainer.summary, a):b] for a, b in m.mentions]
    condition = next((found for text in said_in if (found := _RESTART_IF.search(text))), None) \
        if m.status in ("held", "resume") else None
    if condition:  # "not until 10/23, and only if her hemoglobin is 8.5 or higher": both
        said = (condition.group("if") or condition.group("if2")).strip().rstrip(",")
        said = _in_a_sentence(explainer.explain(sentence_case(said, explainer.glossary)))
        sentence = re.split(r"(?<=[.!?])\s+", condition.string[:condition.start()])[-1]
        if _THE_DOCTOR_DECIDES.search(sentence):
            # "GP to restart only if BP is above 150/90": the doctor's decision, never the
            # patient's to make from a home reading
            until = f"{until}; your doctor will restart it only if {said}" if until else \
                f"your doctor will restart it only if {said}"
        else:
            until = f"{until}, only if {said}" if until else f"restart only if {said}"
    starts = _STEP_STARTS.search(m.text) if m.step > 1 and m.name.lower() not in m.text.lower() else None
    if starts:  # a later step on a line of its own: "- then 20 mg once a day from 06/21/2026"
        begun = f"from {starts.group('date')}"  # (as the summary writes it)
        until = f"{begun}, {until}" if until else begun
    return until


# What says a stopped medicine is never to be taken again
_NOT_AGAIN = re.compile(r"\b(?:do\s+not|don't|never|not\s+to)\s+(?:re-?start|resume|take\s+(?:it\s+|this\s+)?again)\b",
                        re.IGNORECASE)


# A line that tells the patient what to do ("Do not take ...", "Return it to the pharmacy")
_TELLS = re.compile(r"(?:do\s+not|don't|never|return|take|keep|bring|give|use|throw|dispose|stop|remove|rinse|"
                    r"rotate|swallow|chew|shake|store)\b", re.IGNORECASE)


def _told_elsewhere(m: Medication, summary: str, row: str) -> list[str]:
    """What another line that names the medicine, merged into its row, tells the patient to
    do with it ("Do not take the Panadeine Forte left at home. Return it to the
    pharmacy.", under "Opioid safety"), when the row does not say it already."""
    said, known = [], set(content_words(row))
    for a, _b in m.mentions:
        line = _line_at(summary, a)
        words = content_words(line)
        if "|" not in line and _TELLS.match(line) and sum(w not in known for w in words) > len(words) / 2:
            said.append(line if line[-1:] in ".!?" else f"{line}.")
            known |= set(words)
    return said


def medicine_row(medication: Medication, explainer: Explainer, first_reason: str | None = None) -> MedicineRow:
    """A row of "Your medicines": every field the summary gives of the medicine.  A later
    step's reason is said only when it differs from its first step's (`first_reason`;
    None when not known): "then 1 tablet ... for prevention" after a treatment dose."""
    m, vocab = medication, vocabulary()
    when = (vocab.plain_timing(m.frequency, m.text)
            if m.frequency and m.frequency != "as needed" else "")
    if m.time:
        when = f"{when} at {m.time}".strip()
    # What an as-needed dose is for is when to take it ("only when needed for chest pain"),
    # not a bare "Chest pain." after the row
    needed_for = bool(m.as_needed and m.reason and re.search(
        r"(?:\bprn|\bp\.r\.n\.?|\b(?:as|when|if)\s+(?:needed|required))\s*(?:for\s+)?"
        + re.escape(m.reason.split()[0]), m.text, re.IGNORECASE))
    if m.as_needed:
        # (the reason in plain words: "for shortness of breath or wheeze", not "for SOB")
        needed = (f" for {_in_a_sentence(explainer.explain(sentence_case(m.reason, explainer.glossary)))}"
                  if needed_for else "")
        # a repeat in minutes follows the symptom it repeats for ("only when needed for chest
        # pain, every 5 minutes"), not the other way round
        when = (f"only when needed{needed}, {when}" if m.frequency.endswith(" minutes")
                else f"{when}, only when needed{needed}").strip(", ")
    # "before breakfast", "with food": how the dose is taken, from its own words
    for phrase in how_taken(m, explainer.summary, vocab):
        if phrase not in when.lower() and phrase not in m.reason.lower():
            when = f"{when}, {phrase}".lstrip(", ")
    if m.maximum:
        when = f"{when}; no more than {m.maximum}".lstrip("; ")
    until = _how_long_said(m, explainer)
    how_much = f"{m.count} of {m.dose}" if m.count and m.dose else m.dose or m.count
    written = [w.group(1) for w in re.finditer(rf"(?<![\d.]){re.escape(m.dose)}(\s+(?:total|in\s+(?:all|total))\b)?",
                                                m.text, re.IGNORECASE)] if m.count and m.dose else []
    # "TWO tablets (10mg)" after "5mg tablets": the amount in brackets after the count is
    # what they make in all
    spaced_dose = re.escape(m.dose).replace(r"\ ", r"\s*")
    counted = bool(m.count and m.dose and re.search(
        rf"\b(?:\d+|{'|'.join(NUMBER_WORDS)})\s+(?:tablets?|capsules?|tabs?|caps?|puffs?|sachets?)\s*"
        rf"\(\s*{spaced_dose}\s*\)", m.text, re.IGNORECASE))
    if (written and all(written)) or counted:
        # "Take 2 tablets (40 mg total)" with no tablet strength written: never "2 tablets of
        # 40 mg", which would be twice the dose
        how_much = f"{m.count} ({m.dose} in all)"
    if m.step > 1 and not same_day_dose(m):
        # A later step of a dose that changes on a schedule reads as one ("then 2 tablets of
        # 20 mg ...", under the row of the step before)
        how_much = f"then {how_much}".strip()
    if m.doubt:
        # Which medicine the line's status is for cannot be told: its own words, whole.
        return MedicineRow(sentence_case(m.name, explainer.glossary), explainer.meaning(m.name, m.dose),
                           how_much, " ".join(filter(None, [m.route, when])), until, DOUBT_LABEL,
                           f'Your summary says: "{m.quote.rstrip(".")}". Please ask your care team '
                           "what this means for this medicine.", m.text)
    why = []
    if m.status == "changed" and m.changed_from:
        why.append(explainer.explain(f"Was {uk_dose_times(m.changed_from)}."))
    if m.reason and not needed_for and not (m.step > 1 and not same_day_dose(m)
                                            and (first_reason is None or m.reason == first_reason)):
        # (a later step's reason is its first step's, said in that row)
        # ("replaced by PANTOPRAZOLE": Lumen's words, and the new medicine's name as written)
        reason = re.sub(r"^(replaced by )(.+)$", lambda r: r.group(1) + sentence_case(r.group(2), explainer.glossary),
                        m.reason)
        why.append(explainer.explain(sentence_case(reason, explainer.glossary)))
    notes = _line_notes(m, " ".join([m.name, how_much, m.route, when, until, *why]), explainer)
    if notes:
        why.append(explainer.explain(sentence_case(notes, explainer.glossary)))
    told = _told_elsewhere(m, explainer.summary, " ".join([m.name, how_much, m.route, when, until, *why]))
    if told and m.step <= 1:
        why.append(explainer.explain(sentence_case(" ".join(told), explainer.glossary)))
    if m.status == "stopped" and _NOT_AGAIN.search(m.text) and not _NOT_AGAIN.search(" ".join(why)):
        # ("STOPPED, do not restart (raises potassium)": said in the line's own sentence, which
        # the row's fields hold all but this of)
        why.append("Do not restart.")
    return MedicineRow(_named_with_brand(m, explainer.glossary), explainer.meaning(m.name, m.dose),
                       how_much, " ".join(filter(None, [m.route, when])), until,
                       CHANGE_LABELS.get(m.status, ""), " ".join(why), m.quote)


# "Etoricoxib (Arcoxia)", "Lithium carbonate (Priadel)": the name on the box in brackets
_BRAND_AFTER = re.compile(r"\s*\(\s*(?P<brand>[A-Za-z][A-Za-z-]{3,}(?:\s+[A-Za-z][A-Za-z-]*){0,3})\s*\)")


def _named_with_brand(m: Medication, glossary: Glossary | None) -> str:
    """A row's medicine as named, with the brand the summary gives in brackets after it (the
    name a patient knows from the box: "STOP: Etoricoxib (Arcoxia)"); a reason or a status
    in brackets ("(steroid)", "(NEW)") is no brand."""
    name = sentence_case(m.name, glossary)
    at = m.text.lower().find(m.name.lower())
    found = _BRAND_AFTER.match(m.text, at + len(m.name)) if at >= 0 and m.step <= 1 else None
    if found is None or _STATUS_CELL.match(found.group("brand")):
        return name
    brand = found.group("brand")
    named = medicine_names(brand, glossary)
    # a medicine's name, or in a summary in mixed case a name written with a capital
    if not (named and named[0][0] == 0) and not (brand[:1].isupper() and not brand.isupper()
                                                 and not m.text.isupper()):
        return name
    return f"{name} ({sentence_case(brand, glossary)})" if brand.lower() not in name.lower() else name


# A letter's request of the family doctor it is written to ("We would be grateful if you
# could repeat her liver tests"): "you" there is the doctor, never the patient.
_ASKS_THE_DOCTOR = re.compile(r"\b(?:we|I)\s+would\s+(?:be\s+grateful|appreciate\s+it)\s+if\s+you\s+(?:could|would)\b"
                              r"|\b(?:could|would)\s+you\s+(?:please\s+)?(?:kindly\s+)?(?:repeat|check|arrange|review|"
                              r"refer|recheck|consider)\b|\bplease\s+could\s+you\b", re.IGNORECASE)


def _covered(start: int, end: int, spans: list[tuple[int, int]]) -> bool:
    return any(a < end and start < b for a, b in spans)


def _fact_spans(facts: SummaryFacts) -> list[tuple[int, int]]:
    return [(f.start, f.end) for f in (*facts.medications, *facts.follow_ups,
                                       *facts.warning_signs, *facts.restrictions)] + [
        span for m in facts.medications for span in m.mentions]  # (a line merged into another's row)


def handout_tables(summary: str, facts: SummaryFacts, glossary: Glossary | None, trace: Trace,
                   plain: bool = True) -> Handout:
    """The handout's tables, read from the facts without a model: every medicine, follow-up,
    warning sign and restriction, and the lines of the list sections no fact covers."""
    # What a medicine is comes in its row's own column; other hard words are defined under
    # "Words to know", not after each line.
    explainer = Explainer(glossary, summary, facts.date_order, plain, glosses=0)
    first_reasons = {m.name.lower(): m.reason for m in facts.medications if m.step == 1}
    rows = {id(m): medicine_row(m, explainer, first_reasons.get(m.name.lower())) for m in facts.medications}
    medicines = [rows[id(m)] for m in in_row_order(facts.medications)]
    # What the patient reads holds no field of the record ("MRN: ...", "Attending: Dr ...").
    appointments = []
    for f in facts.follow_ups:
        if facts.kind_at(f.start) == "for_doctor" or _ASKS_THE_DOCTOR.search(f.text):
            # The letter asks the family doctor ("Please check her U&Es in 1 week"): said as
            # asked of the doctor, never turned into an instruction to the patient.
            text = f"{FOR_DOCTOR_LEAD} {explainer.explain(patient_text(f.text), to_reader=False)}"
        else:
            text = explainer.explain(sentence_case(patient_text(f.text), glossary))
        appointments.append(HandoutItem(text, f.text, f.who, plain_date(f.when, facts.date_order)
                                        if f.when else "", f.test))
    # (a number to ring is said on its own line, after the signs, never as one of them)
    leads = ["" if _PHONE_LINE.match(w.text) else warning_lead(summary, w.start) or _titled_lead(facts, w.start)
             for w in facts.warning_signs]
    warnings = [HandoutItem(explainer.explain(sentence_case(patient_text(w.text), glossary)), w.text,
                            lead=explainer.explain(sentence_case(patient_text(lead), glossary)).rstrip(".")
                            if lead else "")
                for w, lead in zip(facts.warning_signs, leads)
                # the lead read as a sign of its own is the list's lead, not one of its items
                if _plain_lead(w.text) not in {_plain_lead(lead) for lead in leads if lead}]
    restrictions = [HandoutItem(explainer.explain(sentence_case(patient_text(r.text), glossary)), r.text)
                    for r in facts.restrictions]
    # Lines of a list section that no fact covers ("Weigh yourself every morning").
    spans = _fact_spans(facts)
    more: dict[str, list[str]] = {}
    for section in facts.sections:
        kind = section.effective_kind
        if kind not in LIST_KINDS:
            continue
        for a, b in section_items(summary, section):
            # (a line wrapped at a fixed width is one line to the reader)
            line = re.sub(r"\s*\n\s*", " ", patient_text(summary[a:b].strip()))
            if (re.search(r"[A-Za-z]{3}", line) and not _covered(a, b, spans)
                    and not reads_like_instruction(line) and not _ABOUT_THE_LIST.search(line)
                    and not SIGNED_LINE.match(line) and not RECORD_NOTE.search(line)
                    and not NOTHING_LISTED.fullmatch(LIST_ITEM.sub("", line, count=1))):
                said = explainer.explain(sentence_case(line, glossary))
                owner = (_rest_of_line_of(summary, a, facts.medications) or _sub_item_of(summary, a, facts.medications)
                         if kind == "medications" else None)
                if owner is not None:  # the medicine's own sub-line: in its row, in order
                    row = rows[id(owner)]
                    row.why = f"{row.why} {said}".strip()
                else:
                    more.setdefault(kind, []).append(said)
    return Handout(medicines, appointments, warnings, restrictions, more, [], [], [], trace)


def in_row_order(medications: list[Medication]) -> list[Medication]:
    """The medicines in the summary's order, but a dose's later steps right after its first
    ("ibuprofen 600 mg ..., then 400 mg ..." with colchicine named between them)."""
    first: dict[str, int] = {}
    place = []
    for index, m in enumerate(medications):
        if m.step == 1:
            first[m.name.lower()] = index
        place.append((first.get(m.name.lower(), index) if m.step > 1 else index, index))
    return [medications[index] for _anchor, index in sorted(place)]


def _titled_lead(facts: SummaryFacts, start: int) -> str:
    """The heading of a warning sign's section when it says where to go ("REPORT TO
    EMERGENCY IMMEDIATELY IF", "When to call 911"), for a sign with no lead line of its own
    (a list run on with commas); '' for "WARNING SIGNS" and the like."""
    section = next((s for s in facts.sections if s.start <= start < s.end), None)
    return section.title.rstrip(":") if (section is not None and section.effective_kind == "warning_signs"
                                         and _WHERE_TO_GO.search(section.title)) else ""


def _rest_of_line_of(summary: str, start: int, medications: list[Medication]) -> Medication | None:
    """The medicine whose line a text at `start` goes on from, on the same line of the
    summary ("Dexamethasone tablets - ORAL - NEW, for spinal cord compression. Take with
    food; all doses before 2 pm." read as two sentences): its note, not a loose line."""
    owner = max((m for m in medications if m.end <= start), key=lambda m: m.end, default=None)
    return owner if owner is not None and "\n" not in summary[owner.end:start] else None


def _sub_item_of(summary: str, start: int, medications: list[Medication]) -> Medication | None:
    """The medicine whose list line a line at `start` hangs under, indented deeper, with no
    blank line or other item between ("1. apixaban 5 mg tablet - NEW" over "   - take 2
    tablets ... through 03/14", "   - then 1 tablet ... from 03/15"); None for any other."""
    line_start = summary.rfind("\n", 0, start) + 1
    owner = max((m for m in medications if m.end <= line_start), key=lambda m: m.end, default=None)
    if owner is None or re.search(r"\n[ \t]*\n", summary[owner.end:line_start]):
        return None
    depth = line_indent(summary, owner.start)
    owner_begin = summary.rfind("\n", 0, owner.start) + 1
    marked = depth > len(summary[owner_begin:]) - len(summary[owner_begin:].lstrip(" \t"))

    def hangs(at: int) -> bool:
        # deeper than the item's text, or, under "2. Prednisolone ...", a line with no mark
        # of its own at the column of the item's text ("   Give with food.")
        text = summary[at:summary.find("\n", at) if "\n" in summary[at:] else len(summary)]
        plain = len(text) - len(text.lstrip(" \t"))
        return line_indent(summary, at) > depth or (marked and plain >= depth and line_indent(summary, at) == plain)
    # (every line between them hangs under it too; a blank one ended the item above)
    starts = [at + 1 for at in range(owner.end, line_start - 1) if summary[at] == "\n"] + [line_start]
    return owner if all(hangs(at) for at in starts) else None


@dataclass
class Piece:
    """A part of the summary's narrative and where the handout shows it (HandoutSection.part)."""

    section: SummarySection
    text: str  # its lines, one per line, record fields taken out
    part: str


def narrative_pieces(summary: str, facts: SummaryFacts) -> list[tuple[SummarySection, str]]:
    """Each narrative section's text without the lines the tables already hold, cut
    into pieces of about SECTION_CHARS; record fields as they are."""
    spans = [(f.start, f.end) for f in (*facts.follow_ups, *facts.warning_signs,
                                        *facts.restrictions)]
    pieces: list[tuple[SummarySection, str]] = []
    for section in facts.sections:
        kind = section.effective_kind
        if kind in LIST_KINDS:
            continue
        if kind == "header":
            whole = " ".join(summary[section.start:section.end].split())
            shown = patient_text(whole)
            if shown != whole:
                # A field of the record dropped ("Attending: K. Obi, MD"): the rest, whole.
                section = dataclasses.replace(section, title="")
            text = shown if shown != whole else patient_text(section.text(summary))
            if text:
                pieces.append((section, text))
            continue
        kept = [patient_text(" ".join(summary[a:b].split()))
                for a, b in section_items(summary, section) if not _covered(a, b, spans)]
        kept = [line for line in kept if line and not reads_like_instruction(line)]
        piece = ""
        for line in kept:
            if piece and len(piece) + len(line) > SECTION_CHARS:
                pieces.append((section, piece))
                piece = ""
            piece = f"{piece}\n{line}".strip()
        if piece:
            pieces.append((section, piece))
    return pieces


# A test's result as a report gives it; two in a sentence are a list of results.
_TEST_RESULT = re.compile(r"(?<!-)\b(?:positive|negative|no growth|not detected|unremarkable)\b"
                          r"(?!\s+(?:airway|pressure|inspiratory))", re.IGNORECASE)
# "Primary: ...", "Secondary diagnoses: ...": the record's label, not the patient's story.
_DIAGNOSIS_LABEL = re.compile(r"^(?:primary|secondary|principal|main|final|discharge|other)"
                              r"(?:\s+diagnos[ie]s)?\s*:\s*", re.IGNORECASE)
_TIME_SPAN = re.compile(r"\b\d+(?:\.\d+)?(?:\s*(?:-|to)\s*\d+)?\s*(?:hours?|hrs?|days?|nights?|"
                        r"weeks?|wks?|months?|years?|yrs?)\b", re.IGNORECASE)


def care_team_detail(text: str, glossary: Glossary | None) -> bool:
    """Whether a sentence is detail for the care team rather than the patient's story: lab
    values (two numbers or more, not counting dates and lengths of time), a dose given in
    hospital, or a sentence longer than STORY_LONGEST words."""
    plain = _TIME_SPAN.sub(" ", DATE.sub(" ", text))
    numbers = len(re.findall(r"\d+(?:[.,]\d+)?", plain))
    if numbers >= 2 or (numbers and len(text.split()) <= 6):  # "BNP 2460."
        return True
    if len(_TEST_RESULT.findall(text)) >= 2:  # "Legionella antigen negative, blood cultures no growth"
        return True
    if vocabulary().quantity.search(text) and medicine_names(text, glossary):
        return True
    return len(text.split()) > STORY_LONGEST


def story_lines(summary: str, facts: SummaryFacts, glossary: Glossary | None,
                count: int) -> list[str]:
    """The sentences "What happened in hospital" is told from, at most `count`: the
    diagnoses (at most STORY_DIAGNOSES, each once; a numbered problem's title is one), or
    without them the first sentence of the history (why the patient came); then the
    sentences of the hospital course and the results, in the summary's order, leaving out
    detail for the care team (care_team_detail)."""
    diagnoses, history, course, results = [], [], [], []
    for section in facts.sections:
        kind = section.effective_kind
        if section.kind == "problem" and section.title and kind in (*STORY_KINDS, "instructions"):
            # A numbered problem of a course or a plan is named by a diagnosis.
            title = patient_text(section.title).strip(" :")
            if title and not care_team_detail(title, glossary) and not _GENERIC_TITLE.fullmatch(title):
                diagnoses.append(title)
        if kind not in STORY_KINDS:
            continue
        for a, b in section_items(summary, section):
            # A line after the first that ends in a colon leads the list below it
            # ("Complications / new problems this admission:"), not this item's words.
            first, *rest = summary[a:b].split("\n")
            text = patient_text(" ".join(" ".join([first, *(line for line in rest
                                                             if not line.rstrip().endswith(":"))]).split()))
            if (not re.search(r"[A-Za-z]{3}", text) or reads_like_instruction(text)
                    or (kind != "diagnoses" and care_team_detail(text, glossary))):
                continue
            if kind == "diagnoses":
                text = _DIAGNOSIS_LABEL.sub("", text)
            {"diagnoses": diagnoses, "history": history, "results": results}.get(
                kind, course).append(text)
    # A problem's title said again in the diagnoses, with more after it ("RSV
    # bronchiolitis" and "RSV bronchiolitis, resolved"), is said once, the longer way;
    # "Stroke" and "Heat stroke", or "Gout" and "Gouty arthritis", are two.
    named: dict[str, tuple[str, str]] = {}  # by the name without its list number
    for d in diagnoses:
        name = re.sub(r"^[\s\-*•\d.)]+", "", d)
        named.setdefault(name.lower(), (d, name))
    said: list[str] = []
    for d, name in named.values():  # the longer way, where the name first comes
        # ... and not a list line that starts with it ("Hyperkalemia (resolved), metabolic
        # acidosis (resolved), hypertension, ...").
        longer = [other_d for other_d, other in named.values()
                  if name != other and re.match(rf"{re.escape(name)}(?!\w)", other, re.IGNORECASE)
                  and len(other[len(name):].split()) <= STORY_SAID_LONGER
                  and other[len(name):].count(",") <= 1]
        d = longer[0] if longer else d
        if d not in said:
            said.append(d)
    diagnoses = said
    lead = diagnoses[:STORY_DIAGNOSES] or history[:1]
    return (lead + course + results)[:count] or _untitled_story(summary, facts, glossary, count)


# What happened, told in the past: "She came to the emergency department ...", "He was treated with ..."
_TOLD_IN_THE_PAST = re.compile(r"\b(?:was|were|had|came|presented|attended|went|received|needed|showed|"
                               r"developed|improved|settled|recovered|underwent)\b", re.IGNORECASE)


def _untitled_story(summary: str, facts: SummaryFacts, glossary: Glossary | None, count: int) -> list[str]:
    """For a summary with no course, diagnosis or history heading (a letter, a note in
    paragraphs), the sentences of its untitled paragraphs that tell what happened, in the
    past tense, leaving out the courtesies and detail for the care team."""
    told: list[str] = []
    for section in facts.sections:
        if section.effective_kind != "other" or not section.is_content or section.kind == "problem":
            continue
        for a, b in section_items(summary, section):
            for sentence in sentences_of(patient_text(" ".join(summary[a:b].split()))):
                if (_TOLD_IN_THE_PAST.search(sentence) and not re.match(r"(?:thank|dear|many thanks|i saw|we saw)\b",
                                                                       sentence, re.IGNORECASE)
                        and not reads_like_instruction(sentence) and not care_team_detail(sentence, glossary)):
                    told.append(sentence)
    return told[:count]


_PLAN = re.compile(r"\b(?:a\s*/\s*p|plan|assessment|impression)\b", re.IGNORECASE)
# The words of a clinician's plan heading ("Assessment and plan", "Plan by problem"); a
# title with other words ("Daily Weights and Furosemide Plan", "Sick-day plan") is the
# patient's own plan.
_PLAN_WORDS = frozenset({"a", "p", "plan", "plans", "assessment", "impression", "and", "by", "problem",
                         "problems", "discharge", "management", "recommendations", "the", "of", "care"})
# A problem's heading that names no problem ("# Problem: COPD flare", "Unexpected finding:"):
# its own text says what the problem is
_GENERIC_TITLE = re.compile(r"(?:(?:active|other|new|main)\s+)?(?:problems?|issues?|diagnos[ie]s|"
                            r"(?:unexpected|incidental)\s+findings?|findings?|health\s+maintenance|other|"
                            r"miscellaneous|misc)", re.IGNORECASE)


def for_page_one(section: SummarySection) -> bool:
    """Whether a narrative section speaks to the patient ("Discharge instructions", "Daily
    weights", "Allergies", "Daily weights and furosemide plan"), not a clinician's plan
    ("A/P", "Plan", "Assessment and plan", a problem under it)."""
    clinicians = bool(_PLAN.search(section.title)) and all(
        word in _PLAN_WORDS for word in re.findall(r"[a-z]+", section.title.lower()))
    return section.effective_kind in NOW_KINDS and section.kind != "problem" and not clinicians


def handout_pieces(summary: str, facts: SummaryFacts, glossary: Glossary | None,
                   story_sentences: int) -> list[Piece]:
    """The narrative of the summary, each piece with its part of the handout: the stay's
    record fields, the instructions and allergies for page one, the story (one piece,
    its sentences one per line), and every other section whole for the care team."""
    pieces = []
    for section, text in narrative_pieces(summary, facts):
        part = ("record" if section.kind == "header" else "now" if for_page_one(section)
                else "care_team")
        pieces.append(Piece(section, text, part))
    story = story_lines(summary, facts, glossary, story_sentences)
    if story:
        section = SummarySection("", "hospital_course", 0, 0, 0)
        at = next((i for i, p in enumerate(pieces) if p.part == "care_team"), len(pieces))
        pieces.insert(at, Piece(section, "\n".join(story), "story"))
    return pieces


def explained_lines(original: str, summary: str, section: SummarySection,
                    glossary: Glossary | None, plain: bool = True) -> str:
    """A section's own lines explained, in plain words where they keep every fact; words
    for the care team ("Please check her potassium") are not turned to the patient.  No
    definition is written after a line: the handout's "Words to know" holds them, and a
    sentence of definition between two of the story's would make it longer and harder."""
    explainer = Explainer(glossary, summary, plain=plain, glosses=0)
    to_reader = section.effective_kind != "for_doctor"
    return "\n".join(explainer.explain(line, to_reader=to_reader)
                     for line in original.split("\n") if line.strip())


def still_missing(summary: str, handout: Handout, glossary: Glossary | None,
                  facts: SummaryFacts | None = None) -> list[str]:
    """The summary's lines holding a dose, timing, date or medicine the handout lacks, as
    written (never a line that reads like an instruction to an AI, nor one of the record's:
    a letter's "Re: Mrs D. F..., DOB ..." holds a date no patient needs copied back)."""
    text = handout.to_text()
    copied: list[str] = []
    record = [(s.start, s.end) for s in (facts.sections if facts else []) if not s.is_content]
    for fact in missing_facts(summary, text, glossary):
        if any(a <= fact.start < b for a, b in record):
            continue
        line_start = summary.rfind("\n", 0, fact.start) + 1
        line_end = summary.find("\n", fact.end)
        line = summary[line_start:line_end if line_end >= 0 else len(summary)].strip()
        if line and line not in copied and not reads_like_instruction(line):
            copied.append(line)
    return copied


def words_to_know(handout: Handout, glossary: Glossary) -> list[dict[str, str]]:
    """The glossary's definitions of the hard words a patient reads first (What to do now,
    What happened in hospital); a word plain words replaced is not listed.  A medicine the
    patient is to stop gets what it is, not how it is taken ("An NSAID that eases pain,
    fever and swelling.", without "so take it with food" beside "STOP: Ibuprofen")."""
    stopped = {row.medicine.lower() for row in handout.medicines if row.change == "STOP"} - {
        row.medicine.lower() for row in handout.medicines if row.change != "STOP"}
    return [{"term": _as_written(match, entry),
             "definition": _first_sentence(entry.definition) if match.text.lower() in stopped else entry.definition}
            for match, entry in glossary.terms_to_explain(handout.main_text(about=False),
                                                          MAX_WORDS_TO_KNOW)]


def _first_sentence(text: str) -> str:
    return re.split(r"(?<=[.!?])\s+(?=[A-Z])", text, maxsplit=1)[0]


def _as_written(match, entry) -> str:
    """A word to know by the name the handout gives it: "cefpodoxime", not the entry it
    shares a definition with ("cefdinir"), which the patient would look for in vain."""
    if match.form != "alias":
        return entry.term
    return next((alias for alias in entry.aliases if alias.lower() == match.text.lower()), match.text.lower())


def section_of(piece: Piece, summary: str, glossary: Glossary | None, plain: bool
               ) -> HandoutSection:
    """A piece as shown without a model: record fields and the care team's part as
    written, page one and the story explained in plain words."""
    section = piece.section
    if piece.part in ("record", "care_team"):
        return HandoutSection(section.title, section.title or "From your summary", piece.text,
                              piece.text, "as written" if piece.part == "care_team" else "record",
                              part=piece.part)
    title = STORY_TITLE if piece.part == "story" else plain_title(section)
    return HandoutSection(section.title, title, piece.text,
                          explained_lines(piece.text, summary, section, glossary, plain),
                          "explained", part=piece.part, kind=section.effective_kind)


def handout_without_model(summary: str, glossary: Glossary, *, date_order: str = "",
                          plain: bool = True, story_sentences: int = 6) -> Handout:
    """The handout Lumen gives when no model's rewrite is used: the tables, page one's
    sections and the story in plain words, the care team's part as written.  What the
    benchmark measures and what a handout falls back to."""
    trace = trace_header("simplify", "plain" if plain else "explained", "", summary,
                         prompt_version="", models={},
                         settings={"plain_words": plain, "summary_date_order": date_order})
    facts = read_summary(summary, glossary, date_order)
    handout = handout_tables(summary, facts, glossary, trace, plain)
    handout.sections = [section_of(piece, summary, glossary, plain)
                        for piece in handout_pieces(summary, facts, glossary, story_sentences)]
    handout.copied = still_missing(summary, handout, glossary, facts)
    handout.words_to_know = words_to_know(handout, glossary)
    return handout


def plain_title(section: SummarySection) -> str:
    """A section's title in the patient's words, with the summary's own in brackets."""
    plain = vocabulary().section_plain(section.effective_kind) or section.title or "From your summary"
    if section.title and section.title.lower() != plain.lower():
        plain = f"{plain} ({section.title})" if section.kind != "problem" else section.title
    return plain


# ---- the pipeline ---------------------------------------------------------------------


class SimplifyPipeline(Pipeline):
    prompt_set = "simplify"

    def run(self, summary: str, *, use_verifier: bool = True, variant: str | None = None,
            on_event: EventCallback | None = None, progress: ProgressCallback = None,
            cancel: CancelToken | None = None) -> Handout:
        s = self.settings
        variant = variant or s.ask_variant
        if not summary.strip():
            raise LumenError("The discharge summary is empty.", "Open or paste a summary first.")
        emit = on_event or (lambda kind, data: None)
        started = time.perf_counter()
        generator = self.runtime.for_role("generator")
        reviewer = self.runtime.for_role("reviewer") if use_verifier else None
        trace = self.new_trace(
            "simplify", "lamp" if use_verifier else "lamp-no-verifier", variant, summary,
            models={"generator": generator} | ({"reviewer": reviewer} if reviewer else {}),
            settings=self.setting_values("readability_limit", "simplification_attempts",
                                         "temperature", "seed", "summary_date_order"))
        trace.safety = inspect_document(summary).to_dict()
        report(progress, 0, 1, "Reading the summary's facts")
        facts = read_summary(summary, self.glossary, s.summary_date_order)
        handout = handout_tables(summary, facts, self.glossary, trace, s.plain_words)
        emit("tables", {"handout": handout})

        # Only the story is the model's to rewrite: page one is the facts' tables and the
        # summary's own instructions in plain words, the care team's part is as written.
        pieces = handout_pieces(summary, facts, self.glossary, s.handout_story_sentences)
        for index, piece in enumerate(pieces):
            title = STORY_TITLE if piece.part == "story" else piece.section.title or "opening"
            report(progress, index, len(pieces) + 1, f"Part {index + 1} of {len(pieces)}: {title}")
            if cancel is not None:
                cancel.raise_if_cancelled()
            if piece.part != "story":
                done = section_of(piece, summary, self.glossary, s.plain_words)
            elif (easy := None if s.rewrite_easy_sections else self._easy(piece.section, piece.text,
                                                                           summary)):
                done = easy
            else:
                done = self._rewrite(piece.section, piece.text, summary, generator, reviewer,
                                     variant, trace, emit, cancel)
            handout.sections.append(done)
            emit("section", {"index": index, "section": done})

        # Never lost: whatever the handout still lacks is copied in as written.
        handout.copied = still_missing(summary, handout, self.glossary, facts)
        trace.sections = [{k: v for k, v in asdict(s).items() if k not in ("original", "text")}
                          for s in handout.sections]
        trace.glossary_terms = words_to_know(handout, self.glossary)
        handout.words_to_know = trace.glossary_terms
        trace.final_fkgl = self.grade(lines_as_sentences(handout.main_text()))
        trace.seconds = time.perf_counter() - started
        report(progress, len(pieces) + 1, len(pieces) + 1, "Handout ready")
        return handout

    def _easy(self, section: SummarySection, original: str, summary: str
              ) -> HandoutSection | None:
        """The section as its own words explained, when that already reads below the
        limit: it keeps every fact and passes the gate, so a rewrite could only add risk."""
        explained = self._explained(original, summary, section)
        grade = self.grade(explained)
        if grade is None or grade >= self.settings.readability_limit:
            return None
        return HandoutSection(section.title, STORY_TITLE, original, explained,
                              "explained", self.grade(original), grade, part="story")

    def _explained(self, original: str, summary: str, section: SummarySection) -> str:
        return explained_lines(original, summary, section, self.glossary,
                               self.settings.plain_words)

    def _definitions(self, text: str) -> str:
        return "\n".join(f"- {match.text}: {entry.definition}"
                         for match, entry in self.glossary.terms_to_explain(text))

    def _check(self, original: str, text: str, summary: str, finish_reason: str) -> tuple[Gate, list[str]]:
        """The rewrite's reading grade, and every other problem: facts left out, facts
        added, degenerate text."""
        s = self.settings
        grade = self.grade(text)
        gate = Gate("readability", grade, s.readability_limit,
                    grade is not None and grade < s.readability_limit, f"FKGL < {s.readability_limit:g}")
        problems = [f"it leaves out {f.text}" for f in missing_facts(original, text, self.glossary)]
        problems += [f.describe() for f in unsupported_facts(text, summary, self.glossary)]
        problems += degeneracy_problems(text, "", finish_reason)
        return gate, problems

    def _rewrite(self, section: SummarySection, original: str, summary: str,
                 generator: TextModel, reviewer: TextModel | None, variant: str, trace: Trace,
                 emit: EventCallback, cancel: CancelToken | None) -> HandoutSection:
        """Long: one section's attempts with their gates, feedback and trace records, in
        order."""
        s = self.settings
        plain = STORY_TITLE
        system = self.prompts.text("shared", "system",
                                   title=section.title or self.prompts.text("shared", "untitled"),
                                   section=neutralise_control_markers(original)[0])
        definitions = self._definitions(original) if variant == "glossary" else ""
        block = (self.prompts.text("definitions", "block", definitions=definitions)
                 if definitions else "")
        # A rewrite needs about as many tokens as the section; half as many again is room.
        budget = min(s.section_tokens, 3 * generator.count_tokens(
            [{"role": "user", "content": original}]) // 2 + 32)
        problems_of: dict[int, list[str]] = {}  # the facts check's findings, by attempt
        # Retries and verifications are turns after a rewrite (retry.Turns): the section,
        # the request and the definitions are read once.
        rewritten = Turns([{"role": "system", "content": system},
                           {"role": "user", "content": self.prompts.text(
                               "rewrite", "user", definitions_block=block)}],
                          self.prompts.text("empty", "text"))

        def rewrite(number: int, _previous: str, feedback: str) -> Attempt:
            if number == 1:
                prompt, messages = "rewrite", rewritten.request
            else:
                prompt = "rewrite_retry"
                messages = rewritten.after(number - 1, self.prompts.text(
                    "rewrite_retry", "user", feedback=feedback))
            emit("stage", {"stage": "section", "title": section.title, "attempt": number})
            if cancel is not None:
                cancel.raise_if_cancelled()
            generation = generator.generate(
                messages, max_tokens=budget, cancel=cancel,
                stop_when=failing_early(summary, self.glossary),
                on_token=lambda text: emit("token", {"purpose": "rewrite", "text": text}))
            rewritten.replies[number] = generation.text.strip()
            text = clean_reply(generation.text)
            gate, problems = self._check(original, text, summary, generation.finish_reason)
            problems_of[number] = problems
            return Attempt("section", number, text, gate=gate,
                           calls=[CallRecord.of("rewrite", "generator", prompt, generation)],
                           checks=[{"name": "readability", "passed": gate.passed,
                                    "detail": "" if gate.passed else
                                    f"it reads at grade {gate.score or 0:.1f}", "score": gate.score},
                                   {"name": "facts", "passed": not problems,
                                    "detail": "; ".join(problems), "score": None}])

        def advise(attempt: Attempt) -> str:
            """The facts check's findings, and the verifier's advice on the grade; none
            (so no second try, as in the ablation) when only the grade failed and there
            is no verifier."""
            problems = problems_of[attempt.number]
            notes = []
            if problems:
                notes.append(self.prompts.text("facts_feedback", "text",
                                               problems="; ".join(problems[:8])))
            if not attempt.gate.passed and reviewer is not None:
                verify_user = self.prompts.text("verify", "user", grade=f"{attempt.gate.score or 0:.1f}",
                                                limit=f"{s.readability_limit:g}")
                verify = reviewer.generate(rewritten.after(attempt.number, verify_user),
                                           max_tokens=s.feedback_tokens, cancel=cancel,
                                           stop_when=failing_early())
                attempt.calls.append(CallRecord.of("verify", "reviewer", "verify", verify))
                notes.append(first_sentences(clean_reply(verify.text)))
            return " ".join(notes)

        attempts = attempts_until_passed(s.simplification_attempts, rewrite, advise, trace)
        best = min(attempts, key=lambda a: (not a.passed, len(a.problems()),
                                            a.gate.score if a.gate.score is not None else 1e9))
        explained = self._explained(original, summary, section)
        explained_grade = self.grade(explained)
        if best.passed and (explained_grade is None or (best.gate.score is not None
                                                        and best.gate.score < explained_grade)):
            best.chosen = True
            return HandoutSection(section.title, plain, original, best.text, "model",
                                  self.grade(original), self.grade(best.text), part="story")
        problems = best.problems() if not best.passed else [
            f"it reads at grade {best.gate.score or 0:.1f}, no easier than the summary's own "
            f"lines in plain words ({explained_grade:.1f})"]
        return HandoutSection(section.title, plain, original, explained, "explained",
                              self.grade(original), explained_grade, problems, part="story")


def handout_status(handout: Handout, grade_goal: float) -> str:
    """How the handout was made, in a few plain sentences (the Simplify tab, `lumen
    simplify`): what the tables hold, who wrote the story and why, the reading grade of
    what the patient reads first, and any line copied in word for word."""
    text = (f"{len(handout.medicines)} medicine(s), {len(handout.appointments)} appointment(s) "
            f"and {len(handout.warnings)} warning sign(s) read from the summary.")
    story = handout.story()
    if story is not None and story.source == "model":
        text += " \"What happened in hospital\" was rewritten by the model and passed every check."
    elif story is not None and story.problems:
        text += (" \"What happened in hospital\" is the summary's own lines in plain words: the "
                 "model's rewrite did not pass the checks.")
    elif story is not None:
        text += (" \"What happened in hospital\" is the summary's own lines in plain words; "
                 "they already read below the grade limit, so the model was not asked.")
    grade = handout.trace.final_fkgl
    if grade is not None:
        text += (f" Reading grade of what the patient reads first: {grade:.1f} (aim: "
                 f"{grade_goal:g} or lower"
                 + ("; medicine names and diagnoses keep their own words)." if grade > grade_goal
                    else ")."))
    care = len(handout.part("care_team"))
    if care:
        text += f" {care} part(s) of the summary are kept as written for the care team."
    if handout.copied:
        text += (f" {len(handout.copied)} line(s) were copied word for word so that nothing "
                 "is lost; check them.")
    return text


def handout_file_kind(path: Path) -> str:
    suffix = path.suffix.lower()
    if suffix not in (".txt", ".html", ".htm", ".pdf"):
        raise LumenError(f"Lumen cannot write a handout as '{suffix or path.name}'.",
                         "Use a file name ending in .pdf, .html or .txt.")
    return {"htm": "html"}.get(suffix[1:], suffix[1:])
