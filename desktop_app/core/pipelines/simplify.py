"""Simplify: a whole discharge summary turned into a handout a patient can read.

The summary is split at its headings.  Short header lines (dates, names of services)
are kept as they are.  Each other section goes through the simplifier (model A) with
the readability gate (FKGL below the limit) and the verifier (model B), as in Ask,
plus a check that nothing was lost: every medicine, dose, number, date and frequency
of the section must be in its rewrite.  What a rewrite drops is named in the
feedback for the next attempt; whatever is still missing after the last attempt is
copied into the handout word for word, under a note, and flagged.  Never lost.
"""

from __future__ import annotations

import html
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from ... import __version__
from ..errors import LumenError
from ..progress import CancelToken, ProgressCallback, report
from .ask import EventCallback, clean_reply
from .base import Pipeline
from .context import _HEADING, is_heading, split_chunks
from .grounding import missing_facts
from .safety import inspect_document, neutralise_control_markers
from .trace import Attempt, CallRecord, Gate, Trace, sha256_text

PLAIN_TITLES = {
    "chief complaint": "Why you came to the hospital",
    "reason for admission": "Why you came to the hospital",
    "history of present illness": "What happened before you came in",
    "hpi": "What happened before you came in",
    "hospital course": "What happened in the hospital",
    "brief hospital course": "What happened in the hospital",
    "past medical history": "Your other health conditions",
    "pmh": "Your other health conditions",
    "procedures": "Procedures you had",
    "discharge diagnoses": "Your diagnoses",
    "discharge diagnosis": "Your diagnoses",
    "diagnoses": "Your diagnoses",
    "discharge medications": "Your medicines",
    "medications on discharge": "Your medicines",
    "medications": "Your medicines",
    "allergies": "Your allergies",
    "discharge instructions": "What to do at home",
    "instructions": "What to do at home",
    "follow-up": "Your follow-up visits",
    "follow up": "Your follow-up visits",
    "followup": "Your follow-up visits",
    "discharge condition": "How you were when you left",
    "pertinent results": "Test results",
    "results": "Test results",
}
MAX_WORDS_TO_KNOW = 30


@dataclass
class Section:
    title: str
    text: str


@dataclass
class HandoutSection:
    title: str
    plain_title: str
    original: str
    text: str
    rewritten: bool
    fkgl_before: float | None = None
    fkgl_after: float | None = None
    missing: list[str] = field(default_factory=list)  # facts no attempt kept
    kept_lines: list[str] = field(default_factory=list)  # copied word for word because of them


@dataclass
class Handout:
    sections: list[HandoutSection]
    words_to_know: list[dict[str, str]]
    trace: Trace

    @property
    def notice(self) -> str:
        return self.trace.notice

    def flagged(self) -> list[HandoutSection]:
        return [s for s in self.sections if s.missing]

    def to_dict(self) -> dict[str, Any]:
        return {"sections": [asdict(s) for s in self.sections], "words_to_know": self.words_to_know,
                "notice": self.notice, "trace": self.trace.to_dict()}

    def to_text(self) -> str:
        lines = ["Your hospital stay in plain words", "=" * 33, "", self.notice, ""]
        for section in self.sections:
            if not section.rewritten:
                lines += [f"{section.title}: {section.text}", ""]
                continue
            lines += [section.plain_title, "-" * len(section.plain_title), section.text]
            if section.kept_lines:
                lines += ["Copied from your summary word for word (please ask about these):",
                          *[f"  {line}" for line in section.kept_lines]]
            lines.append("")
        if self.words_to_know:
            lines += ["Words to know", "-" * 13,
                      *[f"- {w['term']}: {w['definition']}" for w in self.words_to_know]]
        return "\n".join(lines).rstrip() + "\n"

    def to_html(self) -> str:
        esc = html.escape
        parts = ["<html><head><meta charset='utf-8'><title>Your hospital stay</title><style>",
                 "body{font-family:sans-serif;font-size:13pt;line-height:1.45;max-width:46em}",
                 "h1{font-size:20pt}h2{font-size:15pt;margin-top:1.2em}",
                 ".notice{border:1px solid #999;padding:.5em;background:#f4f4f4}",
                 ".kept{border-left:4px solid #b3261e;padding-left:.6em}</style></head><body>",
                 "<h1>Your hospital stay in plain words</h1>",
                 f"<p class='notice'>{esc(self.notice)}</p>"]
        for section in self.sections:
            if not section.rewritten:
                parts.append(f"<p><b>{esc(section.title)}:</b> {esc(section.text)}</p>")
                continue
            parts.append(f"<h2>{esc(section.plain_title)}</h2>")
            parts += [f"<p>{esc(line)}</p>" for line in section.text.split("\n") if line.strip()]
            if section.kept_lines:
                kept = "".join(f"<li>{esc(line)}</li>" for line in section.kept_lines)
                parts.append(f"<div class='kept'><p>Copied from your summary word for word "
                             f"(please ask your care team about these):</p><ul>{kept}</ul></div>")
        if self.words_to_know:
            items = "".join(f"<li><b>{esc(w['term'])}</b>: {esc(w['definition'])}</li>"
                            for w in self.words_to_know)
            parts.append(f"<h2>Words to know</h2><ul>{items}</ul>")
        parts.append("</body></html>")
        return "\n".join(parts)


def split_sections(summary: str) -> list[Section]:
    sections: list[Section] = []
    title, lines = "", []
    for line in summary.splitlines():
        if is_heading(line):
            if title or any(l.strip() for l in lines):
                sections.append(Section(title, "\n".join(lines).strip()))
            match = _HEADING.match(line)
            title = (match.group(1) if match else line.strip().rstrip(":")).strip()
            lines = [match.group(2)] if match and match.group(2).strip() else []
        else:
            lines.append(line)
    if title or any(l.strip() for l in lines):
        sections.append(Section(title, "\n".join(lines).strip()))
    return [s for s in sections if s.text or s.title]


def plain_title(title: str) -> str:
    return PLAIN_TITLES.get(title.lower().strip(), title)


HEADER_TITLES = {"admission date", "discharge date", "date of admission", "date of discharge",
                 "service", "attending", "date of birth", "sex", "age", "unit", "room",
                 "discharge disposition", "disposition", "code status"}


def _is_header_line(section: Section) -> bool:
    """Dates, services and other one-line record facts stay as written."""
    if "\n" in section.text:
        return False
    return section.title.lower().strip() in HEADER_TITLES or len(section.text) < 25


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
            models={"generator": {"id": generator.spec.id, "sha256": generator.sha256}}
            | ({"reviewer": {"id": reviewer.spec.id, "sha256": reviewer.sha256}} if reviewer else {}),
            settings={"readability_limit": s.readability_limit,
                      "simplification_attempts": s.simplification_attempts,
                      "temperature": s.temperature, "seed": s.seed},
            summary_sha256=sha256_text(summary))
        trace.safety = inspect_document(summary).to_dict()
        pieces: list[Section] = []
        for section in split_sections(summary):
            chunks = [section.text] if _is_header_line(section) else split_chunks(section.text, 1500)
            for number, chunk in enumerate(chunks):
                title = section.title if number == 0 else f"{section.title} (continued)"
                pieces.append(Section(title, chunk))
        handout_sections: list[HandoutSection] = []
        for index, piece in enumerate(pieces):
            report(progress, index, len(pieces), f"Section {index + 1} of {len(pieces)}: "
                                                  f"{piece.title or 'opening'}")
            if cancel is not None:
                cancel.raise_if_cancelled()
            if _is_header_line(piece) or not piece.text:
                done = HandoutSection(piece.title, plain_title(piece.title), piece.text, piece.text, False)
            else:
                done = self._rewrite(piece, generator, reviewer, variant, trace, emit, cancel)
            handout_sections.append(done)
            emit("section", {"index": index, "section": done})
        trace.sections = [{k: v for k, v in asdict(s).items() if k not in ("original", "text")}
                          for s in handout_sections]
        trace.glossary_terms = [{"term": entry.term, "definition": entry.definition}
                                for _match, entry in self.glossary.terms_to_explain(
                                    summary, MAX_WORDS_TO_KNOW)]
        trace.final_fkgl = self.grade("\n".join(s.text for s in handout_sections if s.rewritten))
        trace.seconds = time.perf_counter() - started
        report(progress, len(pieces), len(pieces), "Handout ready")
        return Handout(handout_sections, trace.glossary_terms, trace)

    def _definitions(self, text: str) -> str:
        return "\n".join(f"- {match.text}: {entry.definition}"
                         for match, entry in self.glossary.terms_to_explain(text))

    def _rewrite(self, piece: Section, generator, reviewer, variant: str, trace: Trace,
                 emit: EventCallback, cancel: CancelToken | None) -> HandoutSection:
        s = self.settings
        system = self.prompts.text("shared", "system", title=piece.title or "Summary",
                                   section=neutralise_control_markers(piece.text)[0])
        definitions = self._definitions(piece.text) if variant == "glossary" else ""
        block = f"\nPlain meanings of medical words in this section:\n{definitions}" if definitions else ""
        attempts: list[Attempt] = []
        previous, feedback = "", ""
        tries = s.simplification_attempts
        for number in range(1, tries + 1):
            if number == 1:
                prompt, user = "rewrite", self.prompts.text("rewrite", "user", definitions_block=block)
            else:
                prompt = "rewrite_retry"
                user = self.prompts.text("rewrite_retry", "user", definitions_block=block,
                                         previous=previous, feedback=feedback)
            emit("stage", {"stage": "section", "title": piece.title, "attempt": number})
            generation = generator.generate(
                [{"role": "system", "content": system}, {"role": "user", "content": user}],
                max_tokens=s.section_tokens, cancel=cancel,
                on_token=lambda text: emit("token", {"purpose": "rewrite", "text": text}))
            text = clean_reply(generation.text)
            grade = self.grade(text)
            readable = grade is not None and grade < s.readability_limit
            missing = [f.text for f in missing_facts(piece.text, text, self.glossary)]
            attempt = Attempt("section", number, text,
                              gate=Gate("readability", grade, s.readability_limit, readable,
                                        f"FKGL < {s.readability_limit:g}"),
                              missing=missing,
                              calls=[CallRecord.of("rewrite", "generator", prompt, generation)])
            attempts.append(attempt)
            trace.attempts.append(attempt)
            if readable and not missing:
                break
            if number == tries:
                break
            notes = []
            if missing:
                notes.append("You left out: " + "; ".join(missing[:12]) + ". Put each of them back exactly.")
            if not readable and reviewer is not None:
                verify_user = self.prompts.text("verify", "user", grade=f"{grade or 0:.1f}",
                                                limit=f"{s.readability_limit:g}", text=text or "(empty)")
                verify = reviewer.generate(
                    [{"role": "system", "content": system}, {"role": "user", "content": verify_user}],
                    max_tokens=s.feedback_tokens, cancel=cancel)
                attempt.calls.append(CallRecord.of("verify", "reviewer", "verify", verify))
                notes.append(clean_reply(verify.text))
            if not notes:
                break  # only readability failed and no verifier: one attempt, as in the ablation
            feedback = " ".join(notes)
            attempt.feedback = feedback
            previous = text
        best = min(attempts, key=lambda a: (len(a.missing), not a.gate.passed,
                                            a.gate.score if a.gate.score is not None else 1e9))
        best.chosen = True
        kept_lines = []
        if best.missing:
            for line in piece.text.splitlines():
                if any(fact in line for fact in best.missing) and line.strip() not in kept_lines:
                    kept_lines.append(line.strip())
        return HandoutSection(piece.title, plain_title(piece.title), piece.text, best.text or piece.text,
                              True, self.grade(piece.text), self.grade(best.text),
                              best.missing, kept_lines)


def handout_file_kind(path: Path) -> str:
    suffix = path.suffix.lower()
    if suffix not in (".txt", ".html", ".htm", ".pdf"):
        raise LumenError(f"Lumen cannot write a handout as '{suffix or path.name}'.",
                         "Use a file name ending in .pdf, .html or .txt.")
    return {"htm": "html"}.get(suffix[1:], suffix[1:])
