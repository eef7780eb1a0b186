"""The knowledge base and the patient case base: texts in the encrypted database,
vectors in the index, kept in step.

Writes go to the database first, in one transaction, then to the index; if the
index write fails, the database rows are removed again, so an item is either in
both or in neither.  Reads take ids from the index and texts from the database,
skipping any id the database no longer has.
"""

from __future__ import annotations

import datetime as _dt
import json
import re
import uuid
from dataclasses import dataclass, field
from typing import Any, Iterable

import numpy as np

from ..errors import LumenError
from ..store import Store
from .index import CASES, KNOWLEDGE, VectorIndex


def _now() -> str:
    return _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")


def new_id() -> str:
    # Random, so an id in the unencrypted index says nothing about the text behind it.
    return uuid.uuid4().hex


# ---- chunking ---------------------------------------------------------------------------

_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9(\"'])")


def _words(text: str) -> int:
    return len(text.split())


def chunk_text(text: str, words: int) -> list[str]:
    """Pieces of about `words` words, cut at paragraph and then sentence boundaries.

    A heading (a short line without a full stop) stays with the paragraph after it,
    so a piece keeps the topic it is about.
    """
    paragraphs = [p.strip() for p in re.split(r"\n\s*\n", text) if p.strip()]
    units: list[str] = []
    heading = ""
    for paragraph in paragraphs:
        # Markdown marks ("## ", "> ", "- ") carry no meaning for retrieval.
        flat = " ".join(re.sub(r"^(#{1,6}|>)\s*", "", line.strip())
                        for line in paragraph.splitlines() if line.strip())
        if len(paragraph.splitlines()) == 1 and _words(flat) <= 12 and not flat.endswith((".", "?", "!")):
            heading = f"{heading} {flat}".strip()
            continue
        if heading:
            flat = f"{heading}: {flat}"
            heading = ""
        if _words(flat) <= words:
            units.append(flat)
            continue
        current = ""
        for sentence in _SENTENCE_END.split(flat):
            if current and _words(current) + _words(sentence) > words:
                units.append(current)
                current = ""
            current = f"{current} {sentence}".strip()
            while _words(current) > words * 2:  # a run-on "sentence" (a table, a list)
                parts = current.split()
                units.append(" ".join(parts[:words]))
                current = " ".join(parts[words:])
        if current:
            units.append(current)
    if heading:
        units.append(heading)
    # Short neighbours are joined so each piece carries enough to be found by meaning.
    chunks: list[str] = []
    for unit in units:
        if chunks and _words(chunks[-1]) + _words(unit) <= words and _words(unit) < words // 2:
            chunks[-1] = f"{chunks[-1]}\n{unit}"
        else:
            chunks.append(unit)
    return chunks


# ---- knowledge base ---------------------------------------------------------------------

@dataclass(frozen=True)
class KnowledgeDocument:
    id: str
    name: str
    kind: str
    declarative: bool
    added_at: str
    chunks: int
    chapters: dict[str, int] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {"id": self.id, "name": self.name, "kind": self.kind,
                "declarative": self.declarative, "added_at": self.added_at,
                "chunks": self.chunks, "chapters": self.chapters}


@dataclass(frozen=True)
class Statement:
    id: str
    document_id: str
    document_name: str
    text: str  # as read
    statement: str  # as embedded and shown
    chapter: str


@dataclass(frozen=True)
class PreparedChunk:
    text: str
    statement: str
    chapter: str


class KnowledgeBase:
    def __init__(self, store: Store, index: VectorIndex) -> None:
        self.store = store
        self.index = index

    def find_document(self, source_sha256: str) -> KnowledgeDocument | None:
        rows = self.store.query("SELECT id FROM kb_document WHERE source_sha256 = ?", (source_sha256,))
        return self.document(rows[0][0]) if rows else None

    def add(self, name: str, kind: str, source_sha256: str, chunks: list[PreparedChunk],
            vectors: np.ndarray, *, declarative: bool) -> KnowledgeDocument:
        if not chunks:
            raise LumenError(f"{name} gave no text to add.", "Check that it is the right file.")
        document_id = new_id()
        ids = [new_id() for _ in chunks]
        # The vectors first, then the rows with their audit entry in one transaction: a
        # failure in either leaves neither (the vectors are taken out again).
        self.index.add(KNOWLEDGE, ids, vectors,
                       [{"chapter": c.chapter, "document": document_id} for c in chunks])
        try:
            with self.store.audited("kb.add", {"document": document_id, "kind": kind,
                                               "chunks": len(chunks),
                                               "declarative": declarative}) as conn:
                conn.execute("INSERT INTO kb_document (id, name, source_sha256, kind, "
                             "declarative, added_at) VALUES (?, ?, ?, ?, ?, ?)",
                             (document_id, name, source_sha256, kind, int(declarative), _now()))
                conn.executemany(
                    "INSERT INTO kb_chunk (id, document_id, ordinal, text, statement, chapter) "
                    "VALUES (?, ?, ?, ?, ?, ?)",
                    [(chunk_id, document_id, n, c.text, c.statement, c.chapter)
                     for n, (chunk_id, c) in enumerate(zip(ids, chunks))])
        except BaseException:
            self.index.delete(KNOWLEDGE, ids=ids)
            raise
        return self.document(document_id)

    def documents(self) -> list[KnowledgeDocument]:
        rows = self.store.query("SELECT id FROM kb_document ORDER BY added_at, name")
        return [self.document(r[0]) for r in rows]

    def document(self, document_id: str) -> KnowledgeDocument:
        rows = self.store.query("SELECT id, name, kind, declarative, added_at FROM kb_document "
                                "WHERE id = ? OR id LIKE ?", (document_id, document_id + "%"))
        if len(rows) != 1:
            raise LumenError(f"There is no single knowledge document with id {document_id}.",
                             "List them with 'lumen knowledge list'.")
        doc_id, name, kind, declarative, added_at = rows[0]
        chapters = dict(self.store.query(
            "SELECT chapter, COUNT(*) FROM kb_chunk WHERE document_id = ? GROUP BY chapter "
            "ORDER BY COUNT(*) DESC", (doc_id,)))
        return KnowledgeDocument(doc_id, name, kind, bool(declarative), added_at,
                                 sum(chapters.values()), chapters)

    def remove(self, document_id: str) -> KnowledgeDocument:
        document = self.document(document_id)
        ids = [r[0] for r in self.store.query("SELECT id FROM kb_chunk WHERE document_id = ?",
                                              (document.id,))]
        self.index.delete(KNOWLEDGE, ids=ids)
        with self.store.audited("kb.remove", {"document": document.id, "chunks": len(ids)}) as conn:
            conn.execute("DELETE FROM kb_document WHERE id = ?", (document.id,))
        return document

    def statements(self, ids: Iterable[str]) -> dict[str, Statement]:
        ids = list(ids)
        found: dict[str, Statement] = {}
        for start in range(0, len(ids), 500):
            part = ids[start:start + 500]
            marks = ",".join("?" * len(part))
            for row in self.store.query(
                    "SELECT c.id, c.document_id, d.name, c.text, c.statement, c.chapter "
                    f"FROM kb_chunk c JOIN kb_document d ON d.id = c.document_id WHERE c.id IN ({marks})",
                    tuple(part)):
                found[row[0]] = Statement(*row)
        return found

    def count(self) -> int:
        return self.store.query("SELECT COUNT(*) FROM kb_chunk")[0][0]

    def all_statements(self) -> list[tuple[str, str, str, str]]:
        """(id, statement, chapter, document id) of every chunk, for rebuilding the index."""
        return [tuple(r) for r in self.store.query(
            "SELECT id, statement, chapter, document_id FROM kb_chunk ORDER BY document_id, ordinal")]


# ---- patient case base ------------------------------------------------------------------

@dataclass(frozen=True)
class CaseRecord:
    """One past patient: what they presented with, what it was, what was done."""

    key: str  # the record's id in its source file
    complaint: str  # complaint or dialogue: the only part embedded
    diagnosis: str = ""
    treatment: str = ""
    demographics: dict[str, Any] = field(default_factory=dict)
    removals: tuple[dict[str, Any], ...] = ()  # what de-identification took out


@dataclass(frozen=True)
class StoredCase:
    id: str
    set_id: str
    record: CaseRecord


@dataclass(frozen=True)
class CaseSet:
    id: str
    name: str
    imported_at: str
    count: int
    removals: dict[str, int]

    def to_dict(self) -> dict[str, Any]:
        return {"id": self.id, "name": self.name, "imported_at": self.imported_at,
                "cases": self.count, "removed": self.removals}


class CaseBase:
    def __init__(self, store: Store, index: VectorIndex) -> None:
        self.store = store
        self.index = index

    def add(self, name: str, source_sha256: str, records: list[CaseRecord],
            vectors: np.ndarray, removals: dict[str, int]) -> CaseSet:
        if not records:
            raise LumenError(f"{name} holds no cases.", "Check that it is the right file.")
        set_id = new_id()
        ids = [new_id() for _ in records]
        self.index.add(CASES, ids, vectors, [{"set": set_id} for _ in records])
        try:
            with self.store.audited("cases.import", {"set": set_id, "cases": len(records),
                                                     "removed": removals}) as conn:
                conn.execute("INSERT INTO case_set (id, name, source_sha256, imported_at, "
                             "removals) VALUES (?, ?, ?, ?, ?)",
                             (set_id, name, source_sha256, _now(), json.dumps(removals)))
                conn.executemany(
                    "INSERT INTO case_record (id, set_id, record_key, ordinal, complaint, "
                    "diagnosis, treatment, demographics, removals) "
                    "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                    [(case_id, set_id, r.key, n, r.complaint, r.diagnosis, r.treatment,
                      json.dumps(r.demographics), json.dumps(list(r.removals)))
                     for n, (case_id, r) in enumerate(zip(ids, records))])
        except BaseException:
            self.index.delete(CASES, ids=ids)
            raise
        return self.case_set(set_id)

    def find_set(self, source_sha256: str) -> CaseSet | None:
        rows = self.store.query("SELECT id FROM case_set WHERE source_sha256 = ?", (source_sha256,))
        return self.case_set(rows[0][0]) if rows else None

    def case_set(self, set_id: str) -> CaseSet:
        rows = self.store.query("SELECT id, name, imported_at, removals FROM case_set "
                                "WHERE id = ? OR id LIKE ?", (set_id, set_id + "%"))
        if len(rows) != 1:
            raise LumenError(f"There is no single case set with id {set_id}.",
                             "List them with 'lumen cases list'.")
        sid, name, imported_at, removals = rows[0]
        count = self.store.query("SELECT COUNT(*) FROM case_record WHERE set_id = ?", (sid,))[0][0]
        return CaseSet(sid, name, imported_at, count, json.loads(removals))

    def sets(self) -> list[CaseSet]:
        return [self.case_set(r[0]) for r in
                self.store.query("SELECT id FROM case_set ORDER BY imported_at, name")]

    def remove(self, set_id: str) -> CaseSet:
        case_set = self.case_set(set_id)
        ids = [r[0] for r in self.store.query("SELECT id FROM case_record WHERE set_id = ?",
                                              (case_set.id,))]
        self.index.delete(CASES, ids=ids)
        with self.store.audited("cases.remove", {"set": case_set.id, "cases": len(ids)}) as conn:
            conn.execute("DELETE FROM case_set WHERE id = ?", (case_set.id,))
        return case_set

    def cases(self, ids: Iterable[str]) -> dict[str, StoredCase]:
        ids = list(ids)
        found: dict[str, StoredCase] = {}
        for start in range(0, len(ids), 500):
            part = ids[start:start + 500]
            marks = ",".join("?" * len(part))
            for row in self.store.query(
                    "SELECT id, set_id, record_key, complaint, diagnosis, treatment, demographics, "
                    f"removals FROM case_record WHERE id IN ({marks})", tuple(part)):
                found[row[0]] = StoredCase(row[0], row[1], CaseRecord(
                    row[2], row[3], row[4], row[5], json.loads(row[6]), tuple(json.loads(row[7]))))
        return found

    def ids_for_key(self, key: str) -> list[str]:
        return [r[0] for r in self.store.query("SELECT id FROM case_record WHERE record_key = ?", (key,))]

    def records(self, set_id: str) -> list[StoredCase]:
        ids = [r[0] for r in self.store.query(
            "SELECT id FROM case_record WHERE set_id = ? ORDER BY ordinal", (set_id,))]
        found = self.cases(ids)
        return [found[i] for i in ids]

    def count(self) -> int:
        return self.store.query("SELECT COUNT(*) FROM case_record")[0][0]

    def all_complaints(self) -> list[tuple[str, str, str]]:
        """(id, complaint, set id) of every case, for rebuilding the index."""
        return [tuple(r) for r in self.store.query(
            "SELECT id, complaint, set_id FROM case_record ORDER BY set_id, ordinal")]
