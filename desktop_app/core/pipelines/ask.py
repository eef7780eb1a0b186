"""Ask: a patient's question about a discharge summary, answered in plain language.

Evidence first (evidence.py): the lines of the summary that answer the question are
found without a model, with their offsets, and rendered into plain sentences, the
evidence answer.  Then LAMP-MedQA's pipeline, reading the evidence instead of the whole
summary: the extractor (model A, the generator role) writes a short answer; it must
pass every check (checks.py: relevance to the question and the evidence, support by
the summary, coverage of what was asked, no degenerate text) or the reviewer (model
B, which never sees a reference answer) says what is wrong and A tries again, at most
N times; the simplifier (model A) rewrites the answer at an 8th-grade level,
optionally with plain definitions of its medical words from the glossary; that text
must pass the readability gate (FKGL below the limit) and the same checks, or the
verifier (model B) gives feedback and A tries again.  Methods switch loops off (the
paper's ablation), ask one model directly from the whole summary (zero-shot and
one-shot baselines), or give the evidence answer alone ("evidence").

A model's text is shown only when it passed every check.  Otherwise the answer is
the evidence answer, marked as the summary's own words explained, and the model's
attempts stay in the trace.

Every call about one question starts with the same system message holding the
evidence (or, for the baselines, the summary), so llama.cpp reuses its state across
attempts, roles and stages.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass
from typing import Any, Callable

from ..choices import METHODS, VARIANTS
from ..errors import LumenError, ServerError
from ..models.generation import Generation, TextModel
from ..progress import CancelToken, ProgressCallback, report
from .base import Pipeline
from .answer_rules import answer_rules
from .checks import Check, check_answer, clean_reply, failing_early, first_sentences
from .context import FittedDocument, fit_document
from .evidence import EvidenceLine, evidence_answer, evidence_block, find_evidence
from .grounding import Flag, unsupported_facts
from .question import Question
from .safety import echoed_instruction_words, inspect_document, neutralise_control_markers
from .summary_facts import read_summary
from .retry import Turns, attempts_until_passed
from .trace import Attempt, CallRecord, Gate, Trace

log = logging.getLogger(__name__)

MAX_GLOSSARY_TERMS = 12
EVIDENCE_NOTE = ("No model answer passed Lumen's checks, so this is your summary's own "
                 "words, with medical words explained.")
EVIDENCE_METHOD_NOTE = ("This is your summary's own words, with medical words explained; no "
                        "model was used.")

EventCallback = Callable[[str, dict[str, Any]], None]

@dataclass
class AskResult:
    answer: str
    trace: Trace

    @property
    def flags(self) -> list[dict[str, Any]]:
        return self.trace.grounding_flags

    def flag_lines(self) -> list[str]:
        """The grounding flags as the sentences a reader is shown ("Check before use")."""
        return [Flag.from_dict(flag).describe() for flag in self.flags]

    @property
    def source(self) -> str:
        """"model": a model's text that passed every check; "evidence": the summary's
        own lines, explained."""
        return self.trace.answer_source

    @property
    def evidence(self) -> list[dict[str, Any]]:
        return self.trace.evidence

    def evidence_lines(self) -> list[EvidenceLine]:
        return [EvidenceLine.from_dict(line) for line in self.trace.evidence]

    @property
    def note(self) -> str:
        if self.source != "evidence":
            return ""
        return EVIDENCE_METHOD_NOTE if self.trace.method == "evidence" else EVIDENCE_NOTE

    def to_dict(self) -> dict[str, Any]:
        return {"answer": self.answer, "source": self.source, "note": self.note,
                "fkgl": self.trace.final_fkgl, "flags": self.flags, "evidence": self.evidence,
                "notice": self.trace.notice, "trace": self.trace.to_dict()}


class AskPipeline(Pipeline):
    prompt_set = "ask"

    # ---- helpers ----

    def _messages(self, system: str, user: str) -> list[dict[str, str]]:
        return [{"role": "system", "content": system}, {"role": "user", "content": user}]

    def _summary_system(self, document: str) -> str:
        return self.prompts.text("shared", "system", summary=document)

    def _models_used(self, method: str) -> dict[str, TextModel]:
        if method == "evidence":
            return {}
        if method in ("zero-shot", "one-shot"):
            return {self.settings.baseline_role: self.runtime.for_role(self.settings.baseline_role)}
        models = {"generator": self.runtime.for_role("generator")}
        if method != "lamp-no-loops":
            models["reviewer"] = self.runtime.for_role("reviewer")
        return models

    def _fit(self, summary: str, question: str, models: dict[str, TextModel]) -> FittedDocument:
        """The summary (or its parts nearest the question) for the one-model baselines."""
        s = self.settings
        probe = self._messages(self._summary_system(""), self.prompts.text(
            "one_shot", "user", question=question))
        overhead = max(m.count_tokens(probe) for m in models.values())
        reserve = overhead + 2 * s.answer_tokens
        budget = min(m.n_ctx for m in models.values()) - reserve
        if budget < 200:
            raise LumenError(
                f"The model's context ({min(m.n_ctx for m in models.values())} tokens) leaves no "
                "room for the summary.", "Raise 'Longest text a model reads at once' in Settings (Generation).")
        embedder = self.runtime.embedder()
        return fit_document(summary, question, budget_tokens=budget,
                            count_tokens=lambda t: max(len(m.tokenize(t)) for m in models.values()),
                            embed=embedder.embed)

    def _fit_evidence(self, evidence: list[EvidenceLine], models: dict[str, TextModel],
                      question: str) -> str:
        """The evidence block, fewer lines when a small context cannot hold them all."""
        s = self.settings
        lines = list(evidence)
        while True:
            block = neutralise_control_markers(evidence_block(lines))[0]
            system = self.prompts.text("evidence", "system", evidence=block)
            # The longest prompts are the retries: the first request, the reply, then the
            # retry request.  The reserve holds the extraction and its definitions (for a
            # simplification), the reply, the feedback and the new reply, with one answer's
            # room to spare for the checks' findings.
            probes = [
                self._messages(system, self.prompts.text("extract", "user", question=question))
                + [{"role": "assistant", "content": ""},
                   {"role": "user", "content": self.prompts.text(
                       "extract_retry", "user", question=question, feedback="")}],
                self._messages(system, self.prompts.text("simplify_glossary", "user", answer="",
                                                         definitions=""))
                + [{"role": "assistant", "content": ""},
                   {"role": "user", "content": self.prompts.text("simplify_retry", "user",
                                                                 feedback="")}]]
            need = (max(m.count_tokens(probe) for m in models.values() for probe in probes)
                    + 4 * s.answer_tokens + s.feedback_tokens)
            if need <= min(m.n_ctx for m in models.values()) or len(lines) == 1:
                if need > min(m.n_ctx for m in models.values()):
                    raise LumenError(
                        f"The model's context ({min(m.n_ctx for m in models.values())} tokens) "
                        "cannot hold even one line of evidence and an answer.",
                        "Raise 'Longest text a model reads at once' in Settings (Generation).")
                return block
            lines = lines[:-1]

    def _relevance(self, text: str, question_vector, evidence_vectors) -> tuple[Gate, Check]:
        """LAMP-MedQA's gate (cosine to the question ≥ τ) and Lumen's addition: closer to the
        evidence than the question itself is, by the margin, so an echo fails.  Closeness
        to the evidence is the better of closeness to its best line (an answer that quotes
        one line) and to all of its lines together (an answer that joins several)."""
        s = self.settings
        if not text:
            gate = Gate("relevance", 0.0, s.relevance_threshold, False,
                        f"cosine ≥ {s.relevance_threshold:.3f}")
            return gate, Check("relevance", False, "the reply is empty", 0.0)
        vector = self.runtime.embedder().embed_one(text)
        to_question = float(vector @ question_vector)
        gate = Gate("relevance", round(to_question, 4), s.relevance_threshold,
                    to_question >= s.relevance_threshold, f"cosine ≥ {s.relevance_threshold:.3f}")
        problems = []
        if not gate.passed:
            problems.append(f"it is not close enough to the question ({to_question:.2f}, needs "
                            f"{s.relevance_threshold:.2f})")
        if evidence_vectors is not None:
            if evidence_margin(vector, question_vector, evidence_vectors) < s.evidence_margin:
                problems.append("it says no more of the summary's lines than the question does")
        return gate, Check("relevance", not problems, "; ".join(problems), round(to_question, 4))

    # ---- the run ----

    def run(self, summary: str, question: str, *, method: str | None = None,
            variant: str | None = None, on_event: EventCallback | None = None,
            progress: ProgressCallback = None, cancel: CancelToken | None = None,
            evidence_if_server_fails: bool = True) -> AskResult:
        """The answer to `question` from `summary` by `method`.  When a model server cannot
        be used (down, refusing, a reply cut short), the summary's own lines are shown with
        a note saying so (`evidence_if_server_fails`; a benchmark replay turns it off, so
        the sample is an error rather than scored as the model's)."""
        asked = Question.read(question, self.glossary)
        try:
            return self._run(summary, asked, method=method, variant=variant,
                             on_event=on_event, progress=progress, cancel=cancel)
        except ServerError as exc:
            if not evidence_if_server_fails:
                raise
            log.warning("A model server failed during Ask; showing the evidence answer")
            result = self._run(summary, asked, method="evidence", variant=variant,
                               on_event=on_event, progress=progress, cancel=cancel)
            result.trace.fallback_reason = (
                f"The model server could not be used ({exc.message}), so this answer is the "
                "summary's own lines. " + exc.fix).strip()
            return result

    def _run(self, summary: str, question: Question, *, method: str | None,
             variant: str | None, on_event: EventCallback | None,
             progress: ProgressCallback, cancel: CancelToken | None) -> AskResult:
        method = method or self.settings.ask_system
        variant = variant or self.settings.ask_variant
        if method not in METHODS:
            raise LumenError(f"'{method}' is not an answering method.", f"Use one of: {', '.join(METHODS)}.")
        if variant not in VARIANTS:
            raise LumenError(f"'{variant}' is not a simplifier variant.", "Use glossary or plain.")
        if not summary.strip():
            raise LumenError("The discharge summary is empty.", "Open or paste a summary first.")
        if not question.text.strip():
            raise LumenError("There is no question.", "Type the patient's question.")
        return AskRun(self, summary, question, method, variant, on_event, progress, cancel).answer()

    def _readability_gate(self, text: str) -> Gate:
        limit = self.settings.readability_limit
        grade = self.grade(text)
        if grade is None:
            return Gate("readability", None, limit, False, f"FKGL < {limit:g} (empty reply)")
        return Gate("readability", grade, limit, grade < limit, f"FKGL < {limit:g}")


class AskRun:
    """One Ask, a method per stage: the evidence and its answer; then, by method, the
    one-model baseline from the summary, or LAMP-MedQA's extraction (with the reviewer)
    and simplification (with the verifier) over the evidence; then what is shown.  What
    the stages share (the question, the evidence, the trace, the callbacks) is held here."""

    def __init__(self, pipeline: AskPipeline, summary: str, question: Question, method: str,
                 variant: str, on_event: EventCallback | None, progress: ProgressCallback,
                 cancel: CancelToken | None) -> None:
        self.settings = pipeline.settings
        self.pipeline, self.glossary = pipeline, pipeline.glossary
        self.summary, self.question, self.method, self.variant = summary, question, method, variant
        self.progress, self.cancel = progress, cancel
        self.started = time.perf_counter()
        self.emit: EventCallback = on_event or (lambda kind, data: None)
        self.models = pipeline._models_used(method)
        self.embedder = pipeline.runtime.embedder()
        self.trace = pipeline.new_trace(
            "ask", method, variant if method.startswith("lamp") else "-", summary,
            models=self.models, embedder=True, checks_version=answer_rules().version,
            settings=pipeline.setting_values(
                "relevance_threshold", "evidence_margin", "evidence_lines", "answer_lines",
                "readability_limit", "extraction_attempts", "simplification_attempts",
                "temperature", "seed", "context_size", "summary_date_order"))
        self.evidence: list[EvidenceLine] = []
        # Set by the stages that use a model (embed_question, extraction, simplification).
        self.question_model = ""
        self.question_vector = None
        self.evidence_vectors = None
        self.system = ""
        self.extraction_turns: Turns | None = None
        self.simplification_turns: Turns | None = None
        self.definitions = ""
        self.tries = 1  # of the stage under way

    def answer(self) -> AskResult:
        self.gather_evidence()
        if self.method == "evidence":
            return self.finish(None, "")
        self.embed_question()
        if self.method in ("zero-shot", "one-shot"):
            return self.finish(self.answer_from_summary(), "")
        extractions = self.extraction()
        best = _best(extractions)
        best.chosen = True
        if not best.passed:
            return self.finish(None, "no extraction passed: " + "; ".join(best.problems()))
        self.glossary_definitions(best.text)
        return self.simplification(best.text, extractions)

    # ---- the stages ----

    def gather_evidence(self) -> None:
        """The lines that answer the question, and the evidence answer from them."""
        s, trace = self.settings, self.trace
        report(self.progress, 0, 4, "Finding the lines that answer the question")
        safety = inspect_document(self.summary)
        trace.safety = safety.to_dict()
        facts = read_summary(self.summary, self.glossary, s.summary_date_order)
        self.evidence = find_evidence(self.summary, self.question, embed=self.embedder.embed_recent,
                                      glossary=self.glossary, facts=facts,
                                      count=max(s.evidence_lines, s.answer_lines),
                                      answer_count=s.answer_lines)
        trace.evidence = [e.to_dict() for e in self.evidence]
        trace.evidence_answer = evidence_answer(self.evidence, facts, self.glossary, self.summary,
                                                s.answer_lines, s.plain_words, self.question)
        self.emit("evidence", {"evidence": self.evidence, "answer": trace.evidence_answer})

    def embed_question(self) -> None:
        """The question as the models read it, and the vectors the relevance check compares."""
        self.question_model, _ = neutralise_control_markers(self.question.text)
        self.question_vector = self.embedder.embed_one(self.question.text)
        self.evidence_vectors = (self.embedder.embed([e.text for e in self.evidence]
                                                     + [" ".join(e.text for e in self.evidence)])
                                 if self.evidence else None)

    def answer_from_summary(self) -> Attempt:
        """The zero-shot and one-shot baselines: one model reads the summary (or its parts
        nearest the question) and answers once."""
        s, pipeline = self.settings, self.pipeline
        fitted = pipeline._fit(neutralise_control_markers(self.summary)[0], self.question_model,
                               self.models)
        self.trace.context = fitted.to_dict()
        self.emit("context", self.trace.context)
        role = s.baseline_role
        report(self.progress, 1, 2, "Answering")
        self.emit("stage", {"stage": "answer", "attempt": 1})
        prompt = self.method.replace("-", "_")
        text, record, generation = self.call(
            self.models[role], role, "answer", prompt, pipeline._messages(
                pipeline._summary_system(fitted.text),
                pipeline.prompts.text(prompt, "user", question=self.question_model)),
            s.answer_tokens, True)
        attempt = self.checked(Attempt("answer", 1, text, calls=[record]), generation,
                               relevance=True, readability=True)
        attempt.chosen = True
        self.trace.attempts.append(attempt)
        self.emit("attempt", {"attempt": attempt})
        return attempt

    def extraction(self) -> list[Attempt]:
        """1-2. Extraction, checked; the reviewer says what the checks found wrong."""
        s, pipeline = self.settings, self.pipeline
        # The model reads the ranked lines only: the related lines (a medicine's list line, a
        # follow-up) stay in the shown evidence and the evidence answer, and a shorter prompt
        # is most of the model's time on a CPU.
        ranked = [line for line in self.evidence if not line.related]
        self.system = pipeline.prompts.text("evidence", "system", evidence=pipeline._fit_evidence(
            ranked, self.models, self.question_model))
        self.trace.context = {"evidence_lines": len(ranked), "whole": False,
                              "note": ""}
        use_reviewer = self.method in ("lamp", "lamp-no-verifier")
        self.tries = s.extraction_attempts if use_reviewer else 1
        self.extraction_turns = Turns(pipeline._messages(self.system, pipeline.prompts.text(
            "extract", "user", question=self.question_model)), pipeline.prompts.text("empty", "text"))
        return attempts_until_passed(self.tries, self.extract, self.review if use_reviewer else None,
                                     self.trace, self.shown)

    def extract(self, number: int, previous: str, feedback: str) -> Attempt:
        asked, prompts = self.extraction_turns, self.pipeline.prompts
        report(self.progress, 1, 4, f"Finding the answer (attempt {number} of {self.tries})")
        self.emit("stage", {"stage": "extraction", "attempt": number})
        prompt = "extract" if number == 1 else "extract_retry"
        messages = asked.request if number == 1 else asked.after(
            number - 1, prompts.text("extract_retry", "user", question=self.question_model,
                                     feedback=feedback))
        text, record, generation = self.call(self.models["generator"], "generator", "extract",
                                             prompt, messages, self.settings.answer_tokens, True)
        asked.replies[number] = generation.text.strip()
        return self.checked(Attempt("extraction", number, text, calls=[record]), generation,
                            relevance=True, readability=False)

    def review(self, attempt: Attempt) -> str:
        report(self.progress, 1, 4, "Reviewer checking the answer")
        self.emit("stage", {"stage": "review", "attempt": attempt.number})
        problems = "; ".join(attempt.problems())
        advice, record, _ = self.call(
            self.models["reviewer"], "reviewer", "review", "review",
            self.extraction_turns.after(attempt.number, self.pipeline.prompts.text(
                "review", "user", problems=problems)),
            self.settings.feedback_tokens, False)
        attempt.calls.append(record)
        return f"{problems}. {first_sentences(advice)}".strip()

    def glossary_definitions(self, extraction: str) -> None:
        """3. Glossary help for the simplifier."""
        if self.variant != "glossary":
            return
        terms = [{"text": match.text, "term": entry.term, "key": entry.key,
                  "definition": entry.definition}
                 for match, entry in self.glossary.terms_to_explain(extraction,
                                                                    MAX_GLOSSARY_TERMS)]
        # At most an answer's worth of tokens, as the evidence's fit reserved.
        definitions = ""
        while terms:
            definitions = "\n".join(f"- {t['text']}: {t['definition']}" for t in terms)
            if len(self.models["generator"].tokenize(definitions)) <= self.settings.answer_tokens:
                break
            terms.pop()
        self.trace.glossary_terms = terms
        self.definitions = definitions if terms else ""

    def simplification(self, extraction: str, extractions: list[Attempt]) -> AskResult:
        """3-4. Simplification, checked (readability too); the verifier helps with the grade.
        When no simplification passes, the extraction is shown if it reads below the limit
        too, else the evidence answer."""
        s, prompts = self.settings, self.pipeline.prompts
        use_verifier = self.method in ("lamp", "lamp-no-reviewer")
        self.tries = s.simplification_attempts if use_verifier else 1
        first = (prompts.text("simplify_glossary", "user", answer=extraction,
                              definitions=self.definitions) if self.definitions else
                 prompts.text("simplify", "user", answer=extraction))
        self.simplification_turns = Turns(self.pipeline._messages(self.system, first),
                                          prompts.text("empty", "text"))
        simplifications = attempts_until_passed(self.tries, self.simplify,
                                                self.verify if use_verifier else None, self.trace,
                                                self.shown)
        best = _best(simplifications)
        if not best.passed:
            # The extraction passed every check; when it also reads below the limit it is
            # a text that passed everything, and better than the evidence answer.
            chosen = next(a for a in extractions if a.chosen)
            grade = self.pipeline._readability_gate(chosen.text)
            if grade.passed:
                chosen.checks.append(Check("readability", True, "", grade.score).to_dict())
                return self.finish(chosen, "")
            chosen.chosen = False
        best.chosen = True
        return self.finish(best, "" if best.passed else
                           "no simplification passed: " + "; ".join(best.problems()))

    def simplify(self, number: int, previous: str, feedback: str) -> Attempt:
        rewritten, prompts = self.simplification_turns, self.pipeline.prompts
        report(self.progress, 2, 4, f"Writing it plainly (attempt {number} of {self.tries})")
        self.emit("stage", {"stage": "simplification", "attempt": number})
        if number == 1:
            prompt = "simplify_glossary" if self.definitions else "simplify"
            messages = rewritten.request
        else:
            prompt = "simplify_retry"
            messages = rewritten.after(number - 1, prompts.text(prompt, "user", feedback=feedback))
        text, record, generation = self.call(self.models["generator"], "generator", "simplify",
                                             prompt, messages, self.settings.answer_tokens, True)
        rewritten.replies[number] = generation.text.strip()
        return self.checked(Attempt("simplification", number, text, calls=[record]), generation,
                            relevance=False, readability=True)

    def verify(self, attempt: Attempt) -> str:
        notes = [p for p in attempt.problems() if not p.startswith("readability")]
        if not attempt.gate.passed:
            report(self.progress, 3, 4, "Verifier checking readability")
            self.emit("stage", {"stage": "verify", "attempt": attempt.number})
            advice, record, _ = self.call(
                self.models["reviewer"], "reviewer", "verify", "verify",
                self.simplification_turns.after(attempt.number, self.pipeline.prompts.text(
                    "verify", "user", grade=f"{attempt.gate.score or 0:.1f}",
                    limit=f"{self.settings.readability_limit:g}")),
                self.settings.feedback_tokens, False)
            attempt.calls.append(record)
            notes.append(first_sentences(advice))
        return " ".join(notes)

    def finish(self, chosen: Attempt | None, why_not: str) -> AskResult:
        """Show the chosen model text only when it passed every check; else the evidence
        answer.  Grounding flags are computed on what is shown, whatever it is."""
        trace, summary, glossary = self.trace, self.summary, self.glossary
        report(self.progress, 4, 4, "Checking the answer against the summary")
        if chosen is not None and chosen.passed:
            answer, trace.answer_source = chosen.text, "model"
            trace.shown_attempt = trace.attempts.index(chosen)
        else:
            answer, trace.answer_source = trace.evidence_answer, "evidence"
            trace.fallback_reason = why_not or (
                "; ".join(chosen.problems()) if chosen is not None else "")
        trace.final_fkgl = self.pipeline.grade(answer)
        trace.grounding_flags = [f.to_dict() for f in unsupported_facts(answer, summary, glossary)]
        echoed = echoed_instruction_words(answer, summary, inspect_document(summary))
        if echoed:
            trace.safety["echoed_words"] = echoed
            trace.grounding_flags.append(Flag("instruction", ", ".join(echoed),
                                              "repeats text that gives instructions", -1,
                                              -1).to_dict())
        trace.seconds = time.perf_counter() - self.started
        return AskResult(answer, trace)

    # ---- what every stage uses ----

    def shown(self, attempt: Attempt) -> None:
        self.emit("attempt", {"attempt": attempt})

    def checked(self, attempt: Attempt, generation: Generation, *, relevance: bool,
                readability: bool) -> Attempt:
        text = attempt.text
        checks = check_answer(text, question=self.question, summary=self.summary,
                              evidence=self.evidence, glossary=self.glossary,
                              finish_reason=generation.finish_reason)
        if relevance:
            attempt.gate, check = self.pipeline._relevance(text, self.question_vector,
                                                           self.evidence_vectors)
            checks.insert(0, check)
        if readability:
            attempt.gate = self.pipeline._readability_gate(text)
            checks.append(Check("readability", attempt.gate.passed,
                                "" if attempt.gate.passed else
                                f"it reads at grade {attempt.gate.score or 0:.1f}; it must be "
                                f"below {self.settings.readability_limit:g}", attempt.gate.score))
        attempt.checks = [c.to_dict() for c in checks]
        return attempt

    def call(self, model: TextModel, role: str, purpose: str, prompt: str,
             messages: list[dict[str, str]], max_tokens: int,
             stream: bool) -> tuple[str, CallRecord, Generation]:
        """One model call; a text for the patient (`stream`) stops as soon as it fails."""
        if self.cancel is not None:
            self.cancel.raise_if_cancelled()
        generation = model.generate(
            messages, max_tokens=max_tokens, cancel=self.cancel,
            stop_when=failing_early(self.summary if stream else None, self.glossary),
            on_token=(lambda piece: self.emit("token", {"purpose": purpose, "text": piece}))
            if stream else None)
        return clean_reply(generation.text), CallRecord.of(purpose, role, prompt, generation), \
            generation


def evidence_margin(answer_vector, question_vector, evidence_vectors) -> float:
    """How much closer in meaning an answer is to the evidence than the question is: to the
    best single line, or to all lines together (the last row), whichever is more."""
    answer = evidence_vectors @ answer_vector
    question = evidence_vectors @ question_vector
    return float(max(answer[:-1].max() - question[:-1].max(), answer[-1] - question[-1]))


def _best(attempts: list[Attempt]) -> Attempt:
    """The attempt that passed (the first), else the one with the fewest failed checks."""
    return min(attempts, key=lambda a: (not a.passed, len(a.problems()),
                                        -(a.gate.score or 0) if a.gate and a.gate.name == "relevance"
                                        else (a.gate.score or 1e9) if a.gate else 0))
