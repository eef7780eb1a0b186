"""What a pipeline run did, call by call: the trace stored with every answer and handout."""

from __future__ import annotations

import datetime as _dt
import json
import uuid
from dataclasses import asdict, dataclass, field
from typing import Any

from ..errors import LumenError
from ..models.runtime import Generation
from ..store import Store

# What a failed check says of the model's answers, for ward staff (Trace.plain_account).
PLAIN_CHECKS = {"relevance": "they did not answer the question",
                "support": "they said things the summary does not",
                "coverage": "they left out part of what was asked",
                "degeneracy": "they were not usable text (repeated, cut off or empty)",
                "readability": "they were too hard to read",
                "facts": "they lost or added a fact"}

NOTICE = ("Lumen supports clinical decisions; it does not make them. Check this text against "
          "the discharge summary, and ask the care team about anything that is unclear.")


@dataclass
class CallRecord:
    """One model call: which role and model, how many tokens, how long."""

    purpose: str  # "extract", "review", "simplify", "verify", "answer", "rewrite"
    role: str
    model_id: str
    model_sha256: str
    prompt: str  # which prompt of the prompt set
    prompt_tokens: int
    prompt_tokens_evaluated: int
    completion_tokens: int
    seconds: float
    finish_reason: str
    endpoint: str = ""  # a server model's URL, and the model name it reported
    server_model: str = ""

    @classmethod
    def of(cls, purpose: str, role: str, prompt: str, generation: Generation) -> "CallRecord":
        return cls(purpose, role, generation.model_id, generation.model_sha256, prompt,
                   generation.prompt_tokens, generation.prompt_tokens_evaluated,
                   generation.completion_tokens, round(generation.seconds, 4),
                   generation.finish_reason, generation.endpoint, generation.server_model)


@dataclass
class Gate:
    name: str  # "relevance" or "readability"
    score: float | None  # None: nothing to score (an empty reply)
    threshold: float
    passed: bool
    rule: str  # e.g. "cosine ≥ 0.300" or "FKGL < 10"


@dataclass
class Attempt:
    stage: str  # "extraction", "simplification", "answer", "section"
    number: int
    text: str
    gate: Gate | None = None
    feedback: str = ""
    missing: list[str] = field(default_factory=list)  # facts a rewrite left out
    calls: list[CallRecord] = field(default_factory=list)
    chosen: bool = False
    checks: list[dict[str, Any]] = field(default_factory=list)  # checks.Check, each

    @property
    def passed(self) -> bool:
        """Every check (and the gate) passed: the only text Lumen may show."""
        return (self.gate is None or self.gate.passed) and all(c["passed"] for c in self.checks)

    def problems(self) -> list[str]:
        return [f"{c['name']}: {c['detail']}" for c in self.checks if not c["passed"]]


@dataclass
class Trace:
    kind: str  # "ask", "simplify" or "knowledge"
    method: str
    variant: str
    prompt_version: str
    app_version: str
    models: dict[str, dict[str, str]]
    settings: dict[str, Any]
    summary_sha256: str
    id: str = field(default_factory=lambda: uuid.uuid4().hex)
    created_at: str = field(default_factory=lambda: _dt.datetime.now(_dt.timezone.utc)
                            .isoformat(timespec="seconds"))
    context: dict[str, Any] = field(default_factory=dict)
    attempts: list[Attempt] = field(default_factory=list)
    glossary_terms: list[dict[str, str]] = field(default_factory=list)
    grounding_flags: list[dict[str, Any]] = field(default_factory=list)
    final_fkgl: float | None = None
    sections: list[dict[str, Any]] = field(default_factory=list)  # handouts only
    safety: dict[str, Any] = field(default_factory=dict)  # instruction-like text found
    refinement: list[dict[str, Any]] = field(default_factory=list)  # Med-TextGrad rounds
    evidence: list[dict[str, Any]] = field(default_factory=list)  # evidence.EvidenceLine, each
    evidence_answer: str = ""  # the answer from the evidence alone, without a model
    answer_source: str = ""  # "model" (it passed every check) or "evidence"
    fallback_reason: str = ""  # why no model text was shown
    shown_attempt: int = -1  # index in `attempts` of the text shown; -1: the evidence answer
    checks_version: str = ""
    seconds: float = 0.0
    notice: str = NOTICE

    def plain_account(self) -> str:
        """How the answer shown was made, in ward staff's words (the Ask tab's first line
        under "How the answer was made", `lumen ask`); the checks' own names and details
        stay in the attempts."""
        if self.answer_source == "model":
            return ("The model's answer is shown: it passed every check (it answers the "
                    "question, the summary supports it, it covers what was asked, it reads "
                    "plainly).")
        if self.method == "evidence" or not self.attempts:
            return ("Answered from the summary's own lines; no model was asked (the method "
                    "chosen in the Ask tab or Settings).")
        failed: list[str] = []
        for attempt in self.attempts:
            names = [c["name"] for c in attempt.checks if not c["passed"]]
            if attempt.gate is not None and not attempt.gate.passed:
                names.append(attempt.gate.name)
            for name in names:
                said = PLAIN_CHECKS.get(name, "they failed a check")
                if said not in failed:
                    failed.append(said)
        why = ", ".join(failed[:-1]) + (" and " if len(failed) > 1 else "") + failed[-1] \
            if failed else "they failed a check"
        return (f"The model's answers did not pass: {why}. Showing the summary's own lines, "
                "in plain words.")

    def calls(self) -> list[CallRecord]:
        return [call for attempt in self.attempts for call in attempt.calls]

    def totals(self) -> dict[str, float]:
        calls = self.calls()
        return {
            "model_calls": len(calls),
            "prompt_tokens": sum(c.prompt_tokens for c in calls),
            "prompt_tokens_evaluated": sum(c.prompt_tokens_evaluated for c in calls),
            "completion_tokens": sum(c.completion_tokens for c in calls),
            "model_seconds": round(sum(c.seconds for c in calls), 3),
            "seconds": round(self.seconds, 3),
        }

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "totals": self.totals()}




def trace_header(kind: str, method: str, variant: str, text: str, *, prompt_version: str,
                 models: dict[str, Any], settings: dict[str, Any], **fields: Any) -> Trace:
    """The header every run's trace starts with, the same for Ask, Simplify, a handout
    without a model and the Knowledge tab: what ran (kind, method, variant, prompt and app
    versions), on which models (their identities), under which settings, and on which text
    (its sha256, never the text)."""
    from ... import __version__
    from ..hashing import sha256_text

    return Trace(kind=kind, method=method, variant=variant, prompt_version=prompt_version,
                 app_version=__version__, models=models, settings=settings,
                 summary_sha256=sha256_text(text), **fields)


def save_run(store: Store, trace: Trace, *, summary: str, question: str, result: str) -> str:
    """Keep a run in the encrypted database (the only place patient text is kept)."""
    with store.audited(f"{trace.kind}.run", {"run": trace.id, "method": trace.method,
                                             "variant": trace.variant, **trace.totals()}) as conn:
        conn.execute(
            "INSERT INTO pipeline_run (id, kind, created_at, method, variant, summary_sha256, "
            "summary, question, result, trace) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (trace.id, trace.kind, trace.created_at, trace.method, trace.variant,
             trace.summary_sha256, summary, question, result, json.dumps(trace.to_dict())))
    return trace.id


def load_run(store: Store, run_id: str) -> dict[str, Any]:
    rows = store.query("SELECT kind, summary, question, result, trace FROM pipeline_run "
                       "WHERE id = ?", (run_id,))
    if not rows:
        raise LumenError(f"There is no saved run {run_id}.", "List runs with 'lumen history'.")
    kind, summary, question, result, trace = rows[0]
    return {"id": run_id, "kind": kind, "summary": summary, "question": question,
            "result": result, "trace": json.loads(trace)}


def list_runs(store: Store, limit: int = 50) -> list[dict[str, Any]]:
    rows = store.query("SELECT id, kind, created_at, method, variant, question FROM pipeline_run "
                       "ORDER BY created_at DESC LIMIT ?", (limit,))
    return [{"id": r[0], "kind": r[1], "created_at": r[2], "method": r[3], "variant": r[4],
             "question": r[5]} for r in rows]
