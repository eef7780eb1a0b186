"""Simplify: a whole discharge summary turned into a handout a patient can read.

The handout is built on the summary's facts (summary_facts.py), read without a model:

1. "Your medicines": a table of every medication (take / how much / when / until / the
   most in a day), NEW, CHANGED, STOP, ON HOLD and RESTART marked, with the reason when
   written; a line the parser cannot read without doubt (which medicine a status is for)
   is marked ASK and quoted whole, never turned into an instruction;
2. "Your appointments and tests", "Call or come back if" and "What to do and avoid",
   from the follow-ups, warning signs and restrictions;
3. then each narrative section (what happened, diagnoses, results, ...), rewritten by
   the simplifier (model A) where the rewrite passes every check: nothing of the
   section left out, nothing added that the summary lacks, no degenerate text (a loop,
   talk about the text), and a reading grade below the limit, with the verifier
   (model B) helping on the grade.  Where no rewrite passes, the section's own lines
   are shown explained: shorthand written out, medical words glossed (evidence.py).
   Record lines (dates, service) stay as written.

Lines of the list sections that no fact covers are shown, explained, under their
table.  Last, the whole handout is compared with the summary: any dose, timing, date
or medicine still missing is copied in word for word under a note.  Never lost.
"""

from __future__ import annotations

import dataclasses
import html
import re
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from ... import __version__
from ..errors import LumenError
from ..glossary.glossary import Glossary
from ..models.runtime import LlamaModel
from ..progress import CancelToken, ProgressCallback, report
from .ask import EventCallback, clean_reply
from .base import Pipeline
from .checks import degeneracy_problems, failing_early
from .evidence import Explainer
from .grounding import missing_facts, unsupported_facts
from .safety import inspect_document, neutralise_control_markers, reads_like_instruction
from .summary_facts import (Medication, SummaryFacts, SummarySection, patient_text,
                            read_summary, section_items)
from ..hashing import sha256_text
from .retry import Turns, attempts_until_passed
from .trace import Attempt, CallRecord, Gate, Trace
from .vocabulary import plain_date, vocabulary

MAX_WORDS_TO_KNOW = 30
SECTION_CHARS = 1200  # a longer narrative section is rewritten in pieces of about this size
LIST_KINDS = ("medications", "follow_up", "warning_signs", "restrictions")
CHANGE_LABELS = {"new": "NEW", "changed": "CHANGED", "stopped": "STOP", "held": "ON HOLD",
                 "resume": "RESTART", "unchanged": "NO CHANGE"}
DOUBT_LABEL = "ASK"
COPIED_NOTE = ("Copied from your summary word for word, because the handout above did not "
               "hold it (please ask your care team about these):")
EXPLAINED_NOTE = "Your summary's own words, with medical words explained."


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

    @property
    def is_record(self) -> bool:
        return self.source == "record"


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

    def to_text(self) -> str:
        head = self._headings()
        lines = ["Your hospital stay in plain words", "=" * 33, "", self.notice, ""]
        records = [s for s in self.sections if s.is_record]
        for section in records:
            lines.append(f"{section.title}: {section.text}" if section.title else section.text)
        if records:
            lines.append("")
        if self.medicines:
            lines += [head["medications"], "-" * len(head["medications"])]
            for row in self.medicines:
                lines.append(f"- {row.change + ': ' if row.change else ''}{row.medicine}: "
                             + ", ".join(p for p in (row.how_much, row.when, row.until) if p)
                             + (f". {row.why}" if row.why else "")
                             + (f" ({row.about})" if row.about else ""))
            lines.append("")
        for kind, items in (("follow_up", self.appointments), ("warning_signs", self.warnings),
                            ("restrictions", self.restrictions)):
            more = self.more_from_lists.get(kind, [])
            if items or more:
                lines += [head[kind], "-" * len(head[kind]), *[f"- {i.text}" for i in items],
                          *[f"- {line}" for line in more], ""]
        for kind in ("medications",):
            if self.more_from_lists.get(kind):
                lines += [f"More about {head[kind].lower()}:",
                          *[f"- {line}" for line in self.more_from_lists[kind]], ""]
        for section in self.sections:
            if section.is_record:
                continue
            title = section.plain_title
            lines += [title, "-" * len(title)]
            if section.source == "explained":
                lines.append(f"({EXPLAINED_NOTE})")
            lines += [section.text, ""]
        if self.copied:
            lines += [COPIED_NOTE, *[f"  {line}" for line in self.copied], ""]
        if self.words_to_know:
            lines += ["Words to know", "-" * 13,
                      *[f"- {w['term']}: {w['definition']}" for w in self.words_to_know]]
        return "\n".join(lines).rstrip() + "\n"

    def to_html(self) -> str:
        esc = html.escape
        head = self._headings()
        parts = ["<html><head><meta charset='utf-8'><title>Your hospital stay</title><style>",
                 "body{font-family:sans-serif;font-size:13pt;line-height:1.45;max-width:46em}",
                 "h1{font-size:20pt}h2{font-size:15pt;margin-top:1.2em}",
                 "table{border-collapse:collapse;width:100%}",
                 "th,td{border:1px solid #999;padding:4px 6px;text-align:left;vertical-align:top}",
                 "th{background:#e8e8e8}.change{font-weight:bold}.about{font-size:11pt;color:#333}",
                 ".notice{border:1px solid #999;padding:.5em;background:#f4f4f4}",
                 ".explained{color:#444;font-style:italic}",
                 ".kept{border-left:4px solid #b3261e;padding-left:.6em}</style></head><body>",
                 "<h1>Your hospital stay in plain words</h1>",
                 f"<p class='notice'>{esc(self.notice)}</p>"]
        records = [s for s in self.sections if s.is_record]
        if records:
            parts.append("<p>" + "<br>".join(f"<b>{esc(s.title)}:</b> {esc(s.text)}" if s.title
                                             else esc(s.text) for s in records) + "</p>")
        if self.medicines:
            rows = "".join(
                f"<tr><td><b>{esc(r.medicine)}</b>"
                + (f"<br><span class='about'>{esc(r.about)}</span>" if r.about else "") + "</td>"
                f"<td>{esc(', '.join(p for p in (r.how_much, r.when, r.until) if p))}</td>"
                f"<td><span class='change'>{esc(r.change)}</span>"
                + (f"<br>{esc(r.why)}" if r.why and r.change else esc(r.why)) + "</td></tr>"
                for r in self.medicines)
            parts.append(f"<h2>{esc(head['medications'])}</h2><table><thead><tr>"
                         "<th>Medicine</th><th>How to take it</th><th>Change and why</th>"
                         f"</tr></thead><tbody>{rows}</tbody></table>")
            if self.more_from_lists.get("medications"):
                parts.append("<ul>" + "".join(f"<li>{esc(line)}</li>" for line
                                              in self.more_from_lists["medications"]) + "</ul>")
        for kind, items in (("follow_up", self.appointments), ("warning_signs", self.warnings),
                            ("restrictions", self.restrictions)):
            more = self.more_from_lists.get(kind, [])
            if items or more:
                parts.append(f"<h2>{esc(head[kind])}</h2><ul>"
                             + "".join(f"<li>{esc(i.text)}</li>" for i in items)
                             + "".join(f"<li>{esc(line)}</li>" for line in more) + "</ul>")
        for section in self.sections:
            if section.is_record:
                continue
            parts.append(f"<h2>{esc(section.plain_title)}</h2>")
            if section.source == "explained":
                parts.append(f"<p class='explained'>{esc(EXPLAINED_NOTE)}</p>")
            parts += [f"<p>{esc(line)}</p>" for line in section.text.split("\n") if line.strip()]
        if self.copied:
            kept = "".join(f"<li>{esc(line)}</li>" for line in self.copied)
            parts.append(f"<div class='kept'><p>{esc(COPIED_NOTE)}</p><ul>{kept}</ul></div>")
        if self.words_to_know:
            items = "".join(f"<li><b>{esc(w['term'])}</b>: {esc(w['definition'])}</li>"
                            for w in self.words_to_know)
            parts.append(f"<h2>Words to know</h2><ul>{items}</ul>")
        parts.append("</body></html>")
        return "\n".join(parts)


# ---- the tables, from the facts -------------------------------------------------------


def medicine_row(medication: Medication, explainer: Explainer) -> MedicineRow:
    """A row of "Your medicines": every field the summary gives of the medicine."""
    m, vocab, order = medication, vocabulary(), explainer.date_order
    when = vocab.plain_frequency(m.frequency) if m.frequency and m.frequency != "as needed" else ""
    if m.time:
        when = f"{when} at {m.time}".strip()
    if m.as_needed:
        when = f"{when}, only when needed".lstrip(", ")
    if m.maximum:
        when = f"{when}; no more than {m.maximum}".lstrip("; ")
    until = (f"until {plain_date(m.until, order)}" if m.until and m.status != "resume" else
             f"restart on {plain_date(m.until, order)}" if m.until else "")
    if m.duration:
        until = f"for {m.duration}" + (f", {until}" if until else "")
    how_much = f"{m.count} of {m.dose}" if m.count and m.dose else m.dose or m.count
    if m.doubt:
        # Which medicine the line's status is for cannot be told: its own words, whole.
        return MedicineRow(m.name, explainer.meaning(m.name), how_much,
                           " ".join(filter(None, [m.route, when])), until, DOUBT_LABEL,
                           f'Your summary says: "{m.quote.rstrip(".")}". Please ask your care team '
                           "what this means for this medicine.", m.text)
    why = []
    if m.status == "changed" and m.changed_from:
        why.append(f"Was {m.changed_from}.")
    if m.reason:
        why.append(explainer.explain(m.reason))
    return MedicineRow(m.name, explainer.meaning(m.name), how_much,
                       " ".join(filter(None, [m.route, when])), until,
                       CHANGE_LABELS.get(m.status, ""), " ".join(why), m.quote)


def _covered(start: int, end: int, spans: list[tuple[int, int]]) -> bool:
    return any(a < end and start < b for a, b in spans)


def _fact_spans(facts: SummaryFacts) -> list[tuple[int, int]]:
    return [(f.start, f.end) for f in (*facts.medications, *facts.follow_ups,
                                       *facts.warning_signs, *facts.restrictions)]


def handout_tables(summary: str, facts: SummaryFacts, glossary: Glossary | None, trace: Trace,
                   plain: bool = True) -> Handout:
    """The handout's tables, read from the facts without a model: every medicine, follow-up,
    warning sign and restriction, and the lines of the list sections no fact covers."""
    explainer = Explainer(glossary, summary, facts.date_order, plain)
    medicines = [medicine_row(m, explainer) for m in facts.medications]
    # What the patient reads holds no field of the record ("MRN: ...", "Attending: Dr ...").
    appointments = [HandoutItem(explainer.explain(patient_text(f.text)), f.text, f.who,
                                plain_date(f.when, facts.date_order) if f.when else "", f.test)
                    for f in facts.follow_ups]
    warnings = [HandoutItem(explainer.explain(patient_text(w.text)), w.text)
                for w in facts.warning_signs]
    restrictions = [HandoutItem(explainer.explain(patient_text(r.text)), r.text)
                    for r in facts.restrictions]
    # Lines of a list section that no fact covers ("Weigh yourself every morning").
    spans = _fact_spans(facts)
    more: dict[str, list[str]] = {}
    for section in facts.sections:
        kind = section.effective_kind
        if kind not in LIST_KINDS:
            continue
        for a, b in section_items(summary, section):
            line = patient_text(summary[a:b].strip())
            if (re.search(r"[A-Za-z]{3}", line) and not _covered(a, b, spans)
                    and not reads_like_instruction(line)):
                more.setdefault(kind, []).append(explainer.explain(line))
    return Handout(medicines, appointments, warnings, restrictions, more, [], [], [], trace)


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


def explained_lines(original: str, summary: str, section: SummarySection,
                    glossary: Glossary | None, plain: bool = True) -> str:
    """A section's own lines explained, in plain words where they keep every fact; words
    for the care team ("Please check her potassium") are not turned to the patient."""
    explainer = Explainer(glossary, summary, plain=plain)
    to_reader = section.effective_kind != "for_doctor"
    return "\n".join(explainer.explain(line, to_reader=to_reader)
                     for line in original.split("\n") if line.strip())


def still_missing(summary: str, handout: Handout, glossary: Glossary | None) -> list[str]:
    """The summary's lines holding a dose, timing, date or medicine the handout lacks, as
    written (never a line that reads like an instruction to an AI)."""
    text = handout.to_text()
    copied: list[str] = []
    for fact in missing_facts(summary, text, glossary):
        line_start = summary.rfind("\n", 0, fact.start) + 1
        line_end = summary.find("\n", fact.end)
        line = summary[line_start:line_end if line_end >= 0 else len(summary)].strip()
        if line and line not in copied and not reads_like_instruction(line):
            copied.append(line)
    return copied


def words_to_know(handout: Handout, glossary: Glossary) -> list[dict[str, str]]:
    """The glossary's definitions of the hard words the handout still holds (a word the
    plain words replaced is not listed)."""
    handout.words_to_know = []
    return [{"term": entry.term, "definition": entry.definition}
            for _match, entry in glossary.terms_to_explain(handout.to_text(), MAX_WORDS_TO_KNOW)]


def handout_without_model(summary: str, glossary: Glossary, *, date_order: str = "",
                          plain: bool = True) -> Handout:
    """The handout Lumen gives when no model's rewrite is used: the tables, and every
    narrative section as its own lines explained (in plain words where they keep every
    fact).  What the benchmark measures and what a handout falls back to."""
    trace = Trace(kind="simplify", method="plain" if plain else "explained", variant="",
                  prompt_version="", app_version=__version__, models={},
                  settings={"plain_words": plain, "summary_date_order": date_order},
                  summary_sha256=sha256_text(summary))
    facts = read_summary(summary, glossary, date_order)
    handout = handout_tables(summary, facts, glossary, trace, plain)
    for section, text in narrative_pieces(summary, facts):
        if section.kind == "header":
            handout.sections.append(HandoutSection(section.title, section.title, text, text,
                                                   "record"))
        else:
            handout.sections.append(HandoutSection(
                section.title, plain_title(section), text,
                explained_lines(text, summary, section, glossary, plain), "explained"))
    handout.copied = still_missing(summary, handout, glossary)
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
        trace = Trace(
            kind="simplify", method="lamp" if use_verifier else "lamp-no-verifier", variant=variant,
            prompt_version=self.prompts.version, app_version=__version__,
            models={"generator": generator.identity()}
            | ({"reviewer": reviewer.identity()} if reviewer else {}),
            settings={"readability_limit": s.readability_limit,
                      "simplification_attempts": s.simplification_attempts,
                      "temperature": s.temperature, "seed": s.seed,
                      "summary_date_order": s.summary_date_order},
            summary_sha256=sha256_text(summary))
        trace.safety = inspect_document(summary).to_dict()
        report(progress, 0, 1, "Reading the summary's facts")
        facts = read_summary(summary, self.glossary, s.summary_date_order)
        handout = handout_tables(summary, facts, self.glossary, trace, s.plain_words)
        emit("tables", {"handout": handout})

        pieces = narrative_pieces(summary, facts)
        for index, (section, text) in enumerate(pieces):
            report(progress, index, len(pieces) + 1, f"Section {index + 1} of {len(pieces)}: "
                                                      f"{section.title or 'opening'}")
            if cancel is not None:
                cancel.raise_if_cancelled()
            if section.kind == "header":
                done = HandoutSection(section.title, section.title, text, text, "record")
            elif (easy := None if s.rewrite_easy_sections else self._easy(section, text, summary)):
                done = easy
            else:
                done = self._rewrite(section, text, summary, generator, reviewer, variant,
                                     trace, emit, cancel)
            handout.sections.append(done)
            emit("section", {"index": index, "section": done})

        # Never lost: whatever the handout still lacks is copied in as written.
        handout.copied = still_missing(summary, handout, self.glossary)
        trace.sections = [{k: v for k, v in asdict(s).items() if k not in ("original", "text")}
                          for s in handout.sections]
        trace.glossary_terms = words_to_know(handout, self.glossary)
        handout.words_to_know = trace.glossary_terms
        trace.final_fkgl = self.grade("\n".join(s.text for s in handout.sections
                                                if not s.is_record))
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
        return HandoutSection(section.title, plain_title(section), original, explained,
                              "explained", self.grade(original), grade)

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
        problems += [f"'{f.text}' is not in the summary"
                     for f in unsupported_facts(text, summary, self.glossary)]
        problems += degeneracy_problems(text, "", finish_reason)
        return gate, problems

    def _rewrite(self, section: SummarySection, original: str, summary: str,
                 generator: LlamaModel, reviewer: LlamaModel | None, variant: str, trace: Trace,
                 emit: EventCallback, cancel: CancelToken | None) -> HandoutSection:
        s = self.settings
        plain = plain_title(section)
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
                notes.append(clean_reply(verify.text))
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
                                  self.grade(original), self.grade(best.text))
        problems = best.problems() if not best.passed else [
            f"it reads at grade {best.gate.score or 0:.1f}, no easier than the summary's own "
            f"lines in plain words ({explained_grade:.1f})"]
        return HandoutSection(section.title, plain, original, explained, "explained",
                              self.grade(original), explained_grade, problems)


def handout_file_kind(path: Path) -> str:
    suffix = path.suffix.lower()
    if suffix not in (".txt", ".html", ".htm", ".pdf"):
        raise LumenError(f"Lumen cannot write a handout as '{suffix or path.name}'.",
                         "Use a file name ending in .pdf, .html or .txt.")
    return {"htm": "html"}.get(suffix[1:], suffix[1:])
