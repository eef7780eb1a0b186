"""Ask: a patient's question about a discharge summary, answered in plain language.

LAMP-MedQA's pipeline: the extractor (model A, the generator role) writes a short
answer; a relevance gate (cosine between answer and question, from Lumen's embedder,
≥ τ) accepts it or the reviewer (model B, which never sees a reference answer) gives
feedback and A tries again, at most N times; the simplifier (model A) rewrites the
answer at an 8th-grade level, optionally with plain definitions of the medical words
it contains from the glossary; a readability gate (FKGL below the limit) accepts it or
the verifier (model B) gives feedback and A tries again.  Methods switch loops off
(the paper's ablation) or ask one model directly (zero-shot and one-shot baselines).

Every call about the document starts with the same system message holding the
summary, so llama.cpp reuses its state across attempts, roles and stages.
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass
from typing import Any, Callable

from ... import __version__
from ..errors import LumenError
from ..models.runtime import LlamaModel
from ..progress import CancelToken, ProgressCallback, report
from .base import Pipeline
from .context import FittedDocument, fit_document
from .grounding import unsupported_facts
from .safety import echoed_instruction_words, inspect_document, neutralise_control_markers
from .trace import Attempt, CallRecord, Gate, Trace, sha256_text

METHODS = ("lamp", "lamp-no-reviewer", "lamp-no-verifier", "lamp-no-loops", "zero-shot", "one-shot")
VARIANTS = ("glossary", "plain")
MAX_GLOSSARY_TERMS = 12

EventCallback = Callable[[str, dict[str, Any]], None]

_ECHO = re.compile(r"^\s*(answer|plain version|easier version|feedback|improved version)\s*:\s*",
                   re.IGNORECASE)


def clean_reply(text: str) -> str:
    """The model's reply without an echoed label ("Answer:") or stray whitespace."""
    return re.sub(r"[ \t]+", " ", _ECHO.sub("", text.strip())).strip()


@dataclass
class AskResult:
    answer: str
    trace: Trace

    @property
    def flags(self) -> list[dict[str, Any]]:
        return self.trace.grounding_flags

    def to_dict(self) -> dict[str, Any]:
        return {"answer": self.answer, "fkgl": self.trace.final_fkgl, "flags": self.flags,
                "notice": self.trace.notice, "trace": self.trace.to_dict()}


class AskPipeline(Pipeline):
    prompt_set = "ask"

    # ---- helpers ----

    def _messages(self, document: str, user: str) -> list[dict[str, str]]:
        return [{"role": "system", "content": self.prompts.text("shared", "system", summary=document)},
                {"role": "user", "content": user}]

    def _models_used(self, method: str) -> dict[str, LlamaModel]:
        if method in ("zero-shot", "one-shot"):
            return {self.settings.baseline_role: self.runtime.for_role(self.settings.baseline_role)}
        models = {"generator": self.runtime.for_role("generator")}
        if method != "lamp-no-loops":
            models["reviewer"] = self.runtime.for_role("reviewer")
        return models

    def _fit(self, summary: str, question: str, models: dict[str, LlamaModel]) -> FittedDocument:
        s = self.settings
        # Room for the prompt around the summary, an earlier answer, feedback, and the reply.
        probe = self._messages("", self.prompts.text(
            "extract_retry", "user", question=question, previous="", feedback=""))
        overhead = max(m.count_tokens(probe) for m in models.values())
        reserve = overhead + 2 * s.answer_tokens + s.feedback_tokens + 2 * s.answer_tokens
        budget = min(m.n_ctx for m in models.values()) - reserve
        if budget < 200:
            raise LumenError(
                f"The model's context ({min(m.n_ctx for m in models.values())} tokens) leaves no "
                "room for the summary.", "Raise 'Context size (tokens)' in Settings.")
        embedder = self.runtime.embedder()
        return fit_document(summary, question, budget_tokens=budget,
                            count_tokens=lambda t: max(len(m.tokenize(t)) for m in models.values()),
                            embed=embedder.embed)

    # ---- the run ----

    def run(self, summary: str, question: str, *, method: str | None = None,
            variant: str | None = None, on_event: EventCallback | None = None,
            progress: ProgressCallback = None, cancel: CancelToken | None = None) -> AskResult:
        s = self.settings
        method = method or s.ask_system
        variant = variant or s.ask_variant
        if method not in METHODS:
            raise LumenError(f"'{method}' is not an answering method.", f"Use one of: {', '.join(METHODS)}.")
        if variant not in VARIANTS:
            raise LumenError(f"'{variant}' is not a simplifier variant.", "Use glossary or plain.")
        if not summary.strip():
            raise LumenError("The discharge summary is empty.", "Open or paste a summary first.")
        if not question.strip():
            raise LumenError("There is no question.", "Type the patient's question.")
        started = time.perf_counter()
        emit = on_event or (lambda kind, data: None)
        models = self._models_used(method)
        embedder = self.runtime.embedder()
        trace = Trace(
            kind="ask", method=method, variant=variant if method.startswith("lamp") else "-",
            prompt_version=self.prompts.version, app_version=__version__,
            models={role: {"id": m.spec.id, "sha256": m.sha256} for role, m in models.items()}
            | {"embedder": {"id": self.runtime.registry.for_role("embedder").id,
                            "sha256": self.runtime.registry.for_role("embedder").file("model.onnx").sha256}},
            settings={"relevance_threshold": s.relevance_threshold,
                      "readability_limit": s.readability_limit,
                      "extraction_attempts": s.extraction_attempts,
                      "simplification_attempts": s.simplification_attempts,
                      "temperature": s.temperature, "seed": s.seed, "context_size": s.context_size},
            summary_sha256=sha256_text(summary))
        report(progress, 0, 4, "Reading the summary")
        safety = inspect_document(summary)
        trace.safety = safety.to_dict()
        original_summary = summary
        summary, _ = neutralise_control_markers(summary)
        question, _ = neutralise_control_markers(question)
        fitted = self._fit(summary, question, models)
        trace.context = fitted.to_dict()
        emit("context", trace.context)

        def call(model: LlamaModel, role: str, purpose: str, prompt: str, user: str,
                 max_tokens: int, stream: bool) -> tuple[str, CallRecord]:
            if cancel is not None:
                cancel.raise_if_cancelled()
            generation = model.generate(
                self._messages(fitted.text, user), max_tokens=max_tokens, cancel=cancel,
                on_token=(lambda piece: emit("token", {"purpose": purpose, "text": piece}))
                if stream else None)
            return clean_reply(generation.text), CallRecord.of(purpose, role, prompt, generation)

        if method in ("zero-shot", "one-shot"):
            role = s.baseline_role
            report(progress, 1, 2, "Answering")
            emit("stage", {"stage": "answer", "attempt": 1})
            text, record = call(models[role], role, "answer", method.replace("-", "_"),
                                self.prompts.text(method.replace("-", "_"), "user", question=question),
                                s.answer_tokens, True)
            attempt = Attempt("answer", 1, text, calls=[record], chosen=True)
            attempt.gate = self._readability_gate(text)
            trace.attempts.append(attempt)
            emit("attempt", {"attempt": attempt})
            return self._finish(trace, text, original_summary, started, progress)

        generator = models["generator"]
        reviewer = models.get("reviewer")
        question_vector = embedder.embed_one(question)

        # 1-2. Extraction with the relevance gate and reviewer feedback.
        use_reviewer = method in ("lamp", "lamp-no-verifier")
        tries = s.extraction_attempts if use_reviewer else 1
        previous, feedback = "", ""
        extractions: list[Attempt] = []
        for number in range(1, tries + 1):
            report(progress, 1, 4, f"Finding the answer (attempt {number} of {tries})")
            emit("stage", {"stage": "extraction", "attempt": number})
            prompt = "extract" if number == 1 else "extract_retry"
            user = (self.prompts.text("extract", "user", question=question) if number == 1 else
                    self.prompts.text("extract_retry", "user", question=question,
                                      previous=previous, feedback=feedback))
            text, record = call(generator, "generator", "extract", prompt, user, s.answer_tokens, True)
            score = float(embedder.embed_one(text) @ question_vector) if text else 0.0
            passed = bool(text) and score >= s.relevance_threshold
            attempt = Attempt("extraction", number, text, calls=[record], gate=Gate(
                "relevance", round(score, 4), s.relevance_threshold, passed,
                f"cosine ≥ {s.relevance_threshold:.3f}"))
            extractions.append(attempt)
            trace.attempts.append(attempt)
            if not passed and use_reviewer and number < tries:
                report(progress, 1, 4, "Reviewer checking the answer")
                emit("stage", {"stage": "review", "attempt": number})
                feedback, review = call(
                    reviewer, "reviewer", "review", "review",
                    self.prompts.text("review", "user", question=question, answer=text or "(empty)",
                                      score=f"{score:.2f}", threshold=f"{s.relevance_threshold:.2f}"),
                    s.feedback_tokens, False)
                attempt.feedback = feedback
                attempt.calls.append(review)
            emit("attempt", {"attempt": attempt})
            if passed:
                break
            previous = text
        # After the last try, the most relevant extraction goes on.
        best = max(extractions, key=lambda a: (a.gate.passed, a.gate.score))
        best.chosen = True
        extraction = best.text
        if not extraction:
            raise LumenError("The model returned no answer.",
                             "Try again, or use a larger model for the generator role (Models page).")

        # 3. Glossary help for the simplifier.
        definitions = ""
        if variant == "glossary":
            trace.glossary_terms = [
                {"text": match.text, "term": entry.term, "key": entry.key,
                 "definition": entry.definition}
                for match, entry in self.glossary.terms_to_explain(extraction, MAX_GLOSSARY_TERMS)]
            definitions = "\n".join(f"- {t['text']}: {t['definition']}" for t in trace.glossary_terms)

        # 3-4. Simplification with the readability gate and verifier feedback.
        use_verifier = method in ("lamp", "lamp-no-reviewer")
        tries = s.simplification_attempts if use_verifier else 1
        simplifications: list[Attempt] = []
        previous, feedback = "", ""
        for number in range(1, tries + 1):
            report(progress, 2, 4, f"Writing it plainly (attempt {number} of {tries})")
            emit("stage", {"stage": "simplification", "attempt": number})
            if number == 1:
                prompt = "simplify_glossary" if definitions else "simplify"
                user = (self.prompts.text(prompt, "user", answer=extraction, definitions=definitions)
                        if definitions else self.prompts.text(prompt, "user", answer=extraction))
            else:
                prompt = "simplify_retry"
                block = f"\nPlain meanings of medical words:\n{definitions}" if definitions else ""
                user = self.prompts.text(prompt, "user", previous=previous, feedback=feedback,
                                         definitions_block=block)
            text, record = call(generator, "generator", "simplify", prompt, user, s.answer_tokens, True)
            attempt = Attempt("simplification", number, text, calls=[record],
                              gate=self._readability_gate(text))
            simplifications.append(attempt)
            trace.attempts.append(attempt)
            if not attempt.gate.passed and use_verifier and number < tries:
                report(progress, 3, 4, "Verifier checking readability")
                emit("stage", {"stage": "verify", "attempt": number})
                feedback, verify = call(
                    reviewer, "reviewer", "verify", "verify",
                    self.prompts.text("verify", "user", grade=f"{attempt.gate.score:.1f}",
                                      limit=f"{s.readability_limit:g}", text=text or "(empty)"),
                    s.feedback_tokens, False)
                attempt.feedback = feedback
                attempt.calls.append(verify)
            emit("attempt", {"attempt": attempt})
            if attempt.gate.passed:
                break
            previous = text
        best = min(simplifications, key=lambda a: (not a.gate.passed,
                                                   a.gate.score if a.gate.score is not None else 1e9))
        best.chosen = True
        return self._finish(trace, best.text, original_summary, started, progress)

    def _readability_gate(self, text: str) -> Gate:
        limit = self.settings.readability_limit
        grade = self.grade(text)
        if grade is None:
            return Gate("readability", None, limit, False, f"FKGL < {limit:g} (empty reply)")
        return Gate("readability", grade, limit, grade < limit, f"FKGL < {limit:g}")

    def _finish(self, trace: Trace, answer: str, summary: str, started: float,
                progress: ProgressCallback) -> AskResult:
        report(progress, 4, 4, "Checking the answer against the summary")
        trace.final_fkgl = self.grade(answer)
        trace.grounding_flags = [f.to_dict() for f in unsupported_facts(answer, summary, self.glossary)]
        echoed = echoed_instruction_words(answer, summary, inspect_document(summary))
        if echoed:
            trace.safety["echoed_words"] = echoed
            trace.grounding_flags.append({"kind": "instruction", "text": ", ".join(echoed),
                                          "value": "repeats text that gives instructions",
                                          "start": -1, "end": -1})
        trace.seconds = time.perf_counter() - started
        return AskResult(answer, trace)
