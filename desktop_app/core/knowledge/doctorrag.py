"""DoctorRAG: answers from the hospital's own knowledge and from similar past patients.

Adding knowledge: documents are read, cut into chunks, optionally rewritten as
declarative statements by the generator, tagged with one first-level ICD-10 chapter
(the generator chooses under a grammar that allows only the chapter codes),
embedded, and stored (text in the encrypted database, vectors in the index).

Answering: the question is tagged and embedded.  Knowledge statements score by
cosine only when their chapter is the question's (otherwise −∞, the paper's hard
filter); when fewer than k pass, the `knowledge_tag_fallback` setting decides whether the
remaining places go to the most similar statements of other chapters (marked as
fallback) or stay empty.  Cases score by plain cosine.  Sources that are the
question's own record, or nearly the same text (cosine above the near-duplicate
cut-off), are left out.  The prompt gives the statements (expertise), then the
cases (experience); the reply is JSON under a grammar whose references may name
only the sources given.  Diagnosis mode must pick one label from a given list.
"""

from __future__ import annotations

import json
import re
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable

import numpy as np

from ..choices import ABLATIONS
from ..config import Paths, Settings
from ..documents import read_document
from ..errors import ContextOverflowError, LumenError, ModelOutputError, ReplyCutOff
from ..hashing import sha256_path
from ..glossary.glossary import Glossary
from ..models.grammar import reply_token_limit
from ..models.generation import Generation, TextModel
from ..models.runtime import ModelRuntime
from ..pipelines.base import Pipeline
from ..pipelines.safety import neutralise_control_markers
from ..hashing import sha256_text
from ..pipelines.trace import Attempt, CallRecord, Trace, save_run
from ..progress import CancelToken, ProgressCallback, report
from ..store import Store
from . import icd10
from .base import (CaseBase, CaseSet, KnowledgeBase, KnowledgeDocument, PreparedChunk, chunk_text)
from .cases import CaseFile, read_cases
from .index import CASES, KNOWLEDGE, Hit, VectorIndex
from .textgrad import med_textgrad, refinement_calls

MODES = ("answer", "diagnosis")
KNOWLEDGE_FILES = (".txt", ".md", ".pdf", ".docx")
TAG_TEXT_WORDS = 300  # the start of a long text is enough to place it in a chapter
CASE_PROMPT_WORDS = 160  # a long dialogue is cut in the prompt (the full text stays stored)
_REFERENCE = re.compile(r"\[?\b([KC]\d{1,2})\b\]?")

EventCallback = Callable[[str, dict[str, Any]], None]
KNOWLEDGE_NOTICE = ("Lumen supports clinical decisions; it does not make them. Check the answer "
                    "against its sources and your own judgement: the cases are past patients, "
                    "not this one, and the knowledge is only what was added here.")


def vector_folder(paths: Paths) -> Path:
    return paths.data_dir / "vectors"


def _shorten(text: str, words: int) -> str:
    parts = text.split()
    return text if len(parts) <= words else " ".join(parts[:words]) + " …"


@dataclass
class KnowledgeSource:
    ref: str  # "K1": how the prompt and the answer name it
    id: str
    score: float
    chapter: str
    document: str
    statement: str
    fallback: bool = False  # from another chapter, to fill the k places


@dataclass
class CaseSource:
    ref: str  # "C1"
    id: str
    score: float
    key: str
    complaint: str
    diagnosis: str
    treatment: str
    demographics: dict[str, Any]


@dataclass
class Retrieval:
    chapter: str  # the question's chapter ("" with tags off)
    knowledge: list[KnowledgeSource] = field(default_factory=list)
    cases: list[CaseSource] = field(default_factory=list)
    same_chapter: int = 0  # statements that passed the hard filter
    fallback_used: bool = False
    excluded: dict[str, int] = field(default_factory=dict)  # reason -> count
    dropped_for_context: int = 0

    def by_ref(self) -> dict[str, KnowledgeSource | CaseSource]:
        return {s.ref: s for s in [*self.knowledge, *self.cases]}

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class KnowledgeResult:
    question: str
    mode: str
    ablation: str
    answer: str  # the final answer (refined when refinement ran)
    first_answer: str
    diagnosis: str  # diagnosis mode only
    references: list[str]  # refs the answer used, e.g. ["K1", "C2"]
    retrieval: Retrieval
    trace: Trace

    @property
    def rounds(self) -> list[dict[str, Any]]:
        return self.trace.refinement

    def cited_sources(self) -> list[KnowledgeSource | CaseSource]:
        sources = self.retrieval.by_ref()
        return [sources[r] for r in self.references if r in sources]

    def to_dict(self) -> dict[str, Any]:
        return {"question": self.question, "mode": self.mode, "ablation": self.ablation,
                "answer": self.answer, "first_answer": self.first_answer,
                "diagnosis": self.diagnosis, "references": self.references,
                "chapter": self.retrieval.chapter,
                "chapter_title": icd10.title(self.retrieval.chapter) if self.retrieval.chapter else "",
                "sources": {"knowledge": [asdict(s) for s in self.retrieval.knowledge],
                            "cases": [asdict(s) for s in self.retrieval.cases]},
                "fallback_used": self.retrieval.fallback_used,
                "note": self.trace.context.get("note", ""),
                "excluded": self.retrieval.excluded,
                "refinement": self.trace.refinement, "notice": self.trace.notice,
                "trace": {"id": self.trace.id, **self.trace.totals()}}


def model_calls_needed(settings: Settings, ablation: str = "full", refine: bool | None = None,
                       rounds: int | None = None) -> int:
    """Model calls one question takes, shown before the user starts it."""
    refine = settings.knowledge_refine if refine is None else refine
    rounds = rounds or settings.knowledge_refine_rounds
    tags = ABLATIONS[ablation]["tags"]
    return int(tags) + 1 + (refinement_calls(rounds) if refine else 0)


class DoctorRAG(Pipeline):
    prompt_set = "knowledge"

    def __init__(self, runtime: ModelRuntime, glossary: Glossary, settings: Settings,
                 cache_dir: Path, store: Store, index: VectorIndex) -> None:
        super().__init__(runtime, glossary, settings, cache_dir)
        self.store = store
        self.index = index
        self.knowledge = KnowledgeBase(store, index)
        self.casebase = CaseBase(store, index)

    @classmethod
    def open(cls, paths: Paths, settings: Settings, store: Store, runtime: ModelRuntime,
             glossary: Glossary) -> "DoctorRAG":
        return cls(runtime, glossary, settings, paths.cache_dir, store,
                   VectorIndex(vector_folder(paths)))

    # ---- model calls ----

    def _model(self) -> TextModel:
        return self.runtime.for_role("generator")

    def tag(self, text: str, cancel: CancelToken | None = None) -> tuple[str, CallRecord]:
        """One ICD-10 chapter code for a text; the grammar allows no other reply."""
        model = self._model()
        messages = [{"role": "system", "content": self.prompts.text("tag", "system",
                                                                    chapters=icd10.chapter_list())},
                    {"role": "user", "content": self.prompts.text(
                        "tag", "user", text=neutralise_control_markers(_shorten(text, TAG_TEXT_WORDS))[0])}]
        value, generation = model.generate_json(messages, icd10.TAG_SCHEMA, temperature=0.0,
                                                cancel=cancel)
        return value["chapter"], CallRecord.of("tag", "generator", "tag", generation)

    def declarative(self, text: str, cancel: CancelToken | None = None) -> str:
        model = self._model()
        generation = model.generate(
            [{"role": "system", "content": self.prompts.text("declarative", "system")},
             {"role": "user", "content": self.prompts.text(
                 "declarative", "user", text=neutralise_control_markers(text)[0])}],
            max_tokens=min(self.settings.knowledge_chunk_words * 3, model.n_ctx // 2), cancel=cancel)
        # A statement that came back empty or cut off keeps the chunk itself.
        statement = generation.text.strip()
        return statement if statement and generation.finish_reason != "length" else text

    # ---- adding knowledge ----

    def prepare(self, texts: list[str], *, declarative: bool, label: str,
                progress: ProgressCallback = None, cancel: CancelToken | None = None
                ) -> list[PreparedChunk]:
        prepared = []
        for number, text in enumerate(texts):
            report(progress, number, len(texts), f"{label}: tagging piece {number + 1} of {len(texts)}")
            statement = self.declarative(text, cancel) if declarative else text
            chapter, _ = self.tag(statement, cancel)
            prepared.append(PreparedChunk(text, statement, chapter))
        return prepared

    def add_texts(self, name: str, kind: str, source_sha256: str, texts: list[str], *,
                  declarative: bool, progress: ProgressCallback = None,
                  cancel: CancelToken | None = None) -> KnowledgeDocument:
        prepared = self.prepare(texts, declarative=declarative, label=name,
                                progress=progress, cancel=cancel)
        report(progress, len(texts), len(texts), f"{name}: embedding")
        vectors = self.runtime.embedder().embed([c.statement for c in prepared], cancel=cancel)
        if cancel is not None:
            cancel.raise_if_cancelled()
        return self.knowledge.add(name, kind, source_sha256, prepared, vectors, declarative=declarative)

    def add_file(self, path: Path, *, declarative: bool | None = None,
                 progress: ProgressCallback = None, cancel: CancelToken | None = None
                 ) -> tuple[KnowledgeDocument, bool]:
        """Add one document; (the document, False) when the same file was added before."""
        path = Path(path)
        if path.suffix.lower() not in KNOWLEDGE_FILES:
            raise LumenError(f"Lumen cannot add {path.name} to the knowledge base.",
                             f"It reads {', '.join(KNOWLEDGE_FILES)} files.")
        text = read_document(path)
        digest = sha256_path(path)
        existing = self.knowledge.find_document(digest)
        if existing is not None:
            return existing, False
        declarative = self.settings.knowledge_declarative if declarative is None else declarative
        texts = chunk_text(text, self.settings.knowledge_chunk_words)
        return self.add_texts(path.name, "file", digest, texts, declarative=declarative,
                              progress=progress, cancel=cancel), True

    def add_glossary(self, *, limit: int | None = None, declarative: bool | None = None,
                     progress: ProgressCallback = None, cancel: CancelToken | None = None
                     ) -> tuple[KnowledgeDocument, bool]:
        """The glossary's topics (term and plain definition, or a topic's summary) as knowledge."""
        entries = [e for e in self.glossary.entries if not e.hidden][:limit]
        texts = []
        for entry in entries:
            body = entry.summary or entry.definition
            texts.extend(chunk_text(f"{entry.term}: {body}", self.settings.knowledge_chunk_words))
        digest = sha256_text("\n".join(texts))
        existing = self.knowledge.find_document(digest)
        if existing is not None:
            return existing, False
        declarative = self.settings.knowledge_declarative if declarative is None else declarative
        name = f"Glossary topics ({len(entries)})"
        return self.add_texts(name, "glossary", digest, texts, declarative=declarative,
                              progress=progress, cancel=cancel), True

    # ---- the case base ----

    def import_cases(self, path: Path, mapping: dict[str, str] | None = None,
                     progress: ProgressCallback = None, cancel: CancelToken | None = None
                     ) -> tuple[CaseSet, CaseFile, bool]:
        """De-identify and add a case file; (set, what was read, False) if it was imported before."""
        report(progress, 0, 2, "Reading and de-identifying cases")
        # De-identifying is the first half of the bar; embedding the second.
        case_file = read_cases(Path(path), mapping, cancel=cancel,
                               progress=lambda step: report(progress, step.done,
                                                            2 * max(step.total, 1), step.message))
        existing = self.casebase.find_set(case_file.sha256)
        if existing is not None:
            return existing, case_file, False
        report(progress, 1, 2, f"Embedding {len(case_file.records)} complaints")
        vectors = self.runtime.embedder().embed([r.complaint for r in case_file.records],
                                                cancel=cancel)
        case_set = self.casebase.add(case_file.name, case_file.sha256, case_file.records, vectors,
                                     case_file.removal_counts())
        report(progress, 2, 2, "Cases imported")
        return case_set, case_file, True

    def reindex(self, progress: ProgressCallback = None, cancel: CancelToken | None = None) -> dict[str, int]:
        """Rebuild the vector index from the database (after the index folder was lost)."""
        embedder = self.runtime.embedder()
        statements = self.knowledge.all_statements()
        complaints = self.casebase.all_complaints()
        report(progress, 0, 2, "Embedding knowledge")
        k_vectors = embedder.embed([s[1] for s in statements], cancel=cancel)
        report(progress, 1, 2, "Embedding cases")
        c_vectors = embedder.embed([c[1] for c in complaints], cancel=cancel)
        self.index.drop(KNOWLEDGE)
        self.index.drop(CASES)
        self.index.add(KNOWLEDGE, [s[0] for s in statements], k_vectors,
                       [{"chapter": s[2], "document": s[3]} for s in statements])
        self.index.add(CASES, [c[0] for c in complaints], c_vectors, [{"set": c[2]} for c in complaints])
        self.store.audit("kb.reindex", {"statements": len(statements), "cases": len(complaints)})
        report(progress, 2, 2, "Index rebuilt")
        return {"statements": len(statements), "cases": len(complaints)}

    # ---- retrieval ----

    def _top(self, name: str, vector: np.ndarray, k: int, where: dict[str, Any] | None,
             skip: set[str], excluded: dict[str, int], minimum: float | None) -> list[Hit]:
        """The k best hits not skipped, asking the index for more while exclusions eat into them."""
        near = self.settings.knowledge_near_duplicate
        n = k + 8
        while True:
            hits = self.index.query(name, vector, n, where)
            chosen: list[Hit] = []
            counted: dict[str, int] = {}
            for hit in hits:
                if hit.id in skip:
                    reason = "own record"
                elif hit.score > near:
                    reason = "near duplicate"
                elif minimum is not None and hit.score < minimum:
                    reason = "negative similarity"
                else:
                    chosen.append(hit)
                    if len(chosen) == k:
                        break
                    continue
                counted[reason] = counted.get(reason, 0) + 1
            if len(chosen) == k or len(hits) < n:
                for reason, count in counted.items():
                    excluded[reason] = excluded.get(reason, 0) + count
                return chosen
            n *= 4

    def retrieve(self, question: str, *, chapter: str = "", ablation: str = "full",
                 exclude_ids: Iterable[str] = (), vector: np.ndarray | None = None,
                 k: int | None = None) -> Retrieval:
        parts = ABLATIONS[ablation]
        k = k or self.settings.knowledge_top_k
        vector = self.runtime.embedder().embed_one(question) if vector is None else vector
        skip = set(exclude_ids)
        retrieval = Retrieval(chapter if parts["tags"] else "")
        if parts["knowledge"]:
            hits: list[tuple[Hit, bool]] = []
            if parts["tags"]:
                same = self._top(KNOWLEDGE, vector, k, {"chapter": chapter}, skip,
                                 retrieval.excluded, minimum=0.0)
                retrieval.same_chapter = len(same)
                hits = [(h, False) for h in same]
                if len(same) < k and self.settings.knowledge_tag_fallback == "fill":
                    taken = skip | {h.id for h in same}
                    extra = self._top(KNOWLEDGE, vector, k - len(same), None, taken, {}, minimum=0.0)
                    hits += [(h, True) for h in extra]
                    retrieval.fallback_used = bool(extra)
            else:
                hits = [(h, False) for h in self._top(KNOWLEDGE, vector, k, None, skip,
                                                       retrieval.excluded, minimum=0.0)]
            texts = self.knowledge.statements(h.id for h, _ in hits)
            for hit, fallback in hits:
                item = texts.get(hit.id)
                if item is None:  # in the index but removed from the database
                    continue
                retrieval.knowledge.append(KnowledgeSource(
                    f"K{len(retrieval.knowledge) + 1}", hit.id, round(hit.score, 4), item.chapter,
                    item.document_name, item.statement, fallback))
        if parts["cases"]:
            hits_c = self._top(CASES, vector, k, None, skip, retrieval.excluded, minimum=None)
            found = self.casebase.cases(h.id for h in hits_c)
            for hit in hits_c:
                case = found.get(hit.id)
                if case is None:
                    continue
                r = case.record
                retrieval.cases.append(CaseSource(
                    f"C{len(retrieval.cases) + 1}", hit.id, round(hit.score, 4), r.key,
                    r.complaint, r.diagnosis, r.treatment, r.demographics))
        return retrieval

    # ---- the answer ----

    def _sections(self, retrieval: Retrieval) -> tuple[str, str]:
        """The knowledge statements and the similar cases as the prompts give them
        (knowledge.toml's [context])."""
        text = self.prompts.text
        knowledge = "\n".join(
            text("context", "statement", ref=s.ref, chapter=s.chapter, document=s.document,
                 other_chapter=text("context", "other_chapter") if s.fallback else "",
                 statement=neutralise_control_markers(s.statement)[0])
            for s in retrieval.knowledge) or text("context", "none")
        unknown = text("context", "not_recorded")
        cases = []
        for c in retrieval.cases:
            who = ", ".join(f"{k} {v}" for k, v in c.demographics.items())
            cases.append(text(
                "context", "case", ref=c.ref, score=f"{c.score:.2f}",
                who=f"; {who}" if who else "",
                complaint=neutralise_control_markers(_shorten(c.complaint, CASE_PROMPT_WORDS))[0],
                diagnosis=c.diagnosis or unknown,
                treatment=neutralise_control_markers(_shorten(c.treatment, CASE_PROMPT_WORDS))[0]
                or unknown))
        return knowledge, "\n\n".join(cases) or text("context", "none")

    def _fit(self, model: TextModel, build: Callable[[Retrieval], list[dict[str, str]]],
             retrieval: Retrieval, max_tokens: int) -> list[dict[str, str]]:
        """Drop the least similar sources until the prompt and reply fit the context."""
        while True:
            messages = build(retrieval)
            if model.count_tokens(messages) + max_tokens <= model.n_ctx:
                return messages
            longer = retrieval.cases if len(retrieval.cases) >= len(retrieval.knowledge) else retrieval.knowledge
            if not longer:
                raise ContextOverflowError(model.count_tokens(messages), max_tokens, model.n_ctx)
            longer.pop()
            retrieval.dropped_for_context += 1

    def run(self, question: str, *, mode: str = "answer", labels: list[str] | None = None,
            ablation: str = "full", refine: bool | None = None, rounds: int | None = None,
            exclude_ids: Iterable[str] = (), on_event: EventCallback | None = None,
            progress: ProgressCallback = None, cancel: CancelToken | None = None) -> KnowledgeResult:
        """Long: the paper's steps in order (tag, retrieve, answer, refine), each with its
        trace record and cancel point."""
        s = self.settings
        question = question.strip()
        if not question:
            raise LumenError("There is no question.", "Type a question or a patient's presentation.")
        if mode not in MODES:
            raise LumenError(f"'{mode}' is not a Knowledge mode.", "Use answer or diagnosis.")
        if ablation not in ABLATIONS:
            raise LumenError(f"'{ablation}' is not a retrieval set-up.",
                             f"Use one of: {', '.join(ABLATIONS)}.")
        labels = [label.strip() for label in (labels or []) if label.strip()]
        labels = list(dict.fromkeys(labels))
        if mode == "diagnosis" and len(labels) < 2:
            raise LumenError("Diagnosis mode needs the list of diagnoses to choose from (at least two).",
                             "Give the labels, one per line (or --labels 'A; B; C').")
        parts = ABLATIONS[ablation]
        if (not parts["knowledge"] or self.knowledge.count() == 0) and \
                (not parts["cases"] or self.casebase.count() == 0):
            raise LumenError("There is nothing to answer from: the knowledge base and the case base "
                             "are empty (or switched off).",
                             "Add documents with 'lumen knowledge add' or import cases with 'lumen cases import'.")
        refine = s.knowledge_refine if refine is None else refine
        rounds = rounds or s.knowledge_refine_rounds
        emit = on_event or (lambda kind, data: None)
        started = time.perf_counter()
        model = self._model()
        trace = self.new_trace(
            "knowledge", ablation, mode, question, models={"generator": model}, embedder=True,
            notice=KNOWLEDGE_NOTICE,
            settings=self.setting_values("knowledge_top_k", "knowledge_tag_fallback",
                                         "knowledge_near_duplicate")
            | {"refine": refine, "rounds": rounds if refine else 0}
            | self.setting_values("temperature", "seed"))
        steps = 3 + (1 if refine else 0)
        safe_question = neutralise_control_markers(question)[0]

        # 1. Tag and embed the question.
        chapter = ""
        if parts["tags"]:
            report(progress, 0, steps, "Placing the question in an ICD-10 chapter")
            chapter, record = self.tag(question, cancel)
            trace.attempts.append(Attempt("tag", 1, chapter, calls=[record], chosen=True))
            emit("tag", {"chapter": chapter, "title": icd10.title(chapter)})
        # 2. Retrieve.
        report(progress, 1, steps, "Finding knowledge and similar cases")
        retrieval = self.retrieve(question, chapter=chapter, ablation=ablation, exclude_ids=exclude_ids)
        # 3. Answer (or pick a diagnosis) under a grammar.
        report(progress, 2, steps, "Writing the answer" if mode == "answer" else "Choosing a diagnosis")

        def build(r: Retrieval) -> list[dict[str, str]]:
            knowledge, cases = self._sections(r)
            if mode == "answer":
                user = self.prompts.text("answer", "user", knowledge=knowledge, cases=cases,
                                         question=safe_question)
            else:
                user = self.prompts.text("diagnose", "user", knowledge=knowledge, cases=cases,
                                         question=safe_question,
                                         labels="\n".join(f"- {label}" for label in labels))
            return [{"role": "system", "content": self.prompts.text(
                "answer" if mode == "answer" else "diagnose", "system")},
                    {"role": "user", "content": user}]

        # Fitting the sources into the context can only drop some, which shortens the
        # longest reply: the limit for all of them holds for what is kept.
        max_tokens = _reply_limit(_reply_schema(mode, retrieval, labels), mode, s.knowledge_answer_tokens)
        messages = self._fit(model, build, retrieval, max_tokens)
        trace.context = retrieval.to_dict()
        emit("retrieval", {"retrieval": retrieval})
        schema = _reply_schema(mode, retrieval, labels)
        generation = model.generate(messages, json_schema=schema, max_tokens=max_tokens, cancel=cancel)
        value, cut_off = _structured_reply(generation, schema, closable=mode == "answer")
        references = list(dict.fromkeys(value["references"]))
        diagnosis = value.get("diagnosis", "")
        first_answer = value.get("answer", "").strip() if mode == "answer" else diagnosis
        if cut_off:
            first_answer += " …"
            trace.context["note"] = (f"The answer reached the length limit ({max_tokens} tokens) and "
                                     "was cut off; raise 'Longest knowledge answer' in Settings.")
            emit("note", {"note": trace.context["note"]})
        trace.attempts.append(Attempt("answer", 1, first_answer,
                                      calls=[CallRecord.of(mode, "generator", mode, generation)],
                                      chosen=not refine))
        emit("answer", {"answer": first_answer, "references": references})
        answer = first_answer

        # 4. Med-TextGrad, when asked for (answer mode only: a label is not refined).
        if refine and mode == "answer":
            knowledge, cases = self._sections(retrieval)
            context = self.prompts.text("context", "refinement", knowledge=knowledge, cases=cases)
            calls: list[CallRecord] = []

            def call(system: str, user: str, tokens: int, purpose: str,
                     on_token: Callable[[str], None] | None) -> str:
                generation = model.generate([{"role": "system", "content": system},
                                             {"role": "user", "content": user}],
                                            max_tokens=tokens, cancel=cancel, on_token=on_token)
                calls.append(CallRecord.of(purpose, "generator", purpose, generation))
                return generation.text

            def on_round(kind: str, data: dict[str, Any]) -> None:
                if kind == "round":
                    trace.refinement.append(data["round"])
                emit(kind, data)

            report(progress, 3, steps, "Refining the answer")
            answer, _ = med_textgrad(
                call, self.prompts, question=safe_question, context=context,
                first_answer=first_answer, rounds=rounds, answer_tokens=s.knowledge_answer_tokens,
                critique_tokens=s.knowledge_critique_tokens, on_event=on_round, cancel=cancel,
                progress=lambda p: report(progress, 3, steps, p.message))
            trace.attempts.append(Attempt("refine", rounds, answer, calls=calls, chosen=True))
            # References the refined answer names itself join those of the first answer.
            retrieved = {src.ref for src in [*retrieval.knowledge, *retrieval.cases]}
            for ref in _REFERENCE.findall(answer):
                if ref in retrieved and ref not in references:
                    references.append(ref)
        trace.seconds = time.perf_counter() - started
        report(progress, steps, steps, "Done")
        return KnowledgeResult(question, mode, ablation, answer, first_answer, diagnosis,
                               references, retrieval, trace)

    def save(self, result: KnowledgeResult) -> str:
        """Keep the question, answer and trace (with the sources' texts) in the encrypted store."""
        result.trace.context = {**result.trace.context, **result.retrieval.to_dict(),
                                "references": result.references,
                                "first_answer": result.first_answer, "diagnosis": result.diagnosis}
        return save_run(self.store, result.trace, summary="", question=result.question,
                        result=result.answer)


def _reply_schema(mode: str, retrieval: "Retrieval", labels: list[str]) -> dict[str, Any]:
    """The JSON asked for: the references (only retrieved ids) first, then the answer, or
    the diagnosis (one of the labels) and its references."""
    refs = [src.ref for src in [*retrieval.knowledge, *retrieval.cases]]
    references: dict[str, Any] = {"type": "array", "items": {"type": "string", "enum": refs},
                                  "minItems": 1, "maxItems": len(refs)} if refs else \
        {"type": "array", "maxItems": 0}
    if mode == "answer":
        # References come first: a small model that runs on inside its answer then still
        # has named its sources, and the answer can be closed where it was cut off.
        return {"type": "object", "properties": {
            "references": references, "answer": {"type": "string", "minLength": 1}},
            "required": ["references", "answer"], "additionalProperties": False}
    return {"type": "object", "properties": {
        "diagnosis": {"type": "string", "enum": labels}, "references": references},
        "required": ["diagnosis", "references"], "additionalProperties": False}


def _reply_limit(schema: dict[str, Any], mode: str, answer_tokens: int) -> int:
    """Tokens for the reply: a diagnosis is never cut off (its grammar's longest form
    fits); an answer gets `answer_tokens` after the longest its references can be."""
    if mode != "answer":
        return reply_token_limit(schema)
    references_only = {**schema, "properties": {"references": schema["properties"]["references"]},
                       "required": ["references"]}
    return answer_tokens + reply_token_limit(references_only)


_TRAILING_ESCAPE = re.compile(r"(\\+)(u[0-9a-fA-F]{0,3})?$")


def _without_partial_escape(text: str) -> str:
    """`text` less an escape the limit cut in two (an odd run of backslashes at the end,
    perhaps with the start of a \\uXXXX)."""
    match = _TRAILING_ESCAPE.search(text)
    if match and len(match.group(1)) % 2 == 1:
        return text[:match.start()] + match.group(1)[:-1]
    return text


def _structured_reply(generation: Generation, schema: dict[str, Any], *, closable: bool
                      ) -> tuple[dict[str, Any], bool]:
    """The reply's JSON, checked against the schema; (value, whether it was cut off).

    A reply cut off inside its last string (the answer) is closed there when `closable`;
    anything else that is not the JSON asked for is a ModelOutputError.
    """
    import jsonschema

    text = generation.text
    cut_off = generation.finish_reason == "length"
    candidates = [text]
    if cut_off and closable:
        # Cut inside the answer (perhaps inside an escape), or after its closing quote.
        candidates = [_without_partial_escape(text) + '"}', text + "}", text.rstrip() + "}"]
    for candidate in candidates:
        try:
            value = json.loads(candidate, strict=False)
            jsonschema.validate(value, schema)
            return value, cut_off
        except (json.JSONDecodeError, jsonschema.ValidationError):
            continue
    if cut_off:
        raise ReplyCutOff(generation.completion_tokens, text)
    raise ModelOutputError("The model's reply is not the JSON asked for.", text)


def parse_labels(text: str) -> list[str]:
    """Labels given as lines, or separated by semicolons; a JSON list also works."""
    text = text.strip()
    if text.startswith("["):
        try:
            items = json.loads(text)
            return [str(i).strip() for i in items if str(i).strip()]
        except json.JSONDecodeError:
            pass
    parts = re.split(r"[;\n]", text)
    return list(dict.fromkeys(p.strip().lstrip("-• ").strip() for p in parts if p.strip()))
