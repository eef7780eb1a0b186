"""The vector index: chromadb collections of vectors, ids and tags, and nothing else.

Text stays in the encrypted database; chromadb's files are not encrypted, so they
are given only random ids, unit vectors and metadata that is not patient text (the
ICD-10 chapter, and the id of the document or case set an item came from).  The
collections use cosine space, so chromadb's distance is 1 − cosine.
"""

from __future__ import annotations

import re
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import LumenError

KNOWLEDGE = "knowledge"
CASES = "cases"
# HNSW search breadth, above chromadb's default: the chapter-filtered top-4 matched brute
# force at 10,000 statements and 93-97% of it at 100,000 (bench/bench_knowledge.py); the
# search stays approximate, as any HNSW index is.
EF_SEARCH = 200
EF_CONSTRUCTION = 200

_clients: dict[Path, Any] = {}
_clients_lock = threading.Lock()


@dataclass(frozen=True)
class Hit:
    id: str
    score: float  # cosine similarity with the query
    metadata: dict[str, Any]


def _client(folder: Path) -> Any:
    # chromadb allows one client per folder per process; the window and its workers share it.
    import chromadb
    from chromadb.config import Settings as ChromaSettings

    folder = folder.resolve()
    with _clients_lock:
        if folder not in _clients:
            folder.mkdir(parents=True, exist_ok=True)
            try:
                _clients[folder] = chromadb.PersistentClient(
                    path=str(folder),
                    settings=ChromaSettings(anonymized_telemetry=False, allow_reset=False))
            except Exception as exc:  # chromadb raises its own types for a damaged folder
                raise LumenError(
                    f"The vector index in {folder} cannot be opened ({type(exc).__name__}).",
                    "Close other Lumen windows. If the folder is damaged, remove it and rebuild "
                    "the index with 'lumen knowledge reindex' (the texts are safe in the database).",
                ) from exc
        return _clients[folder]


# A chapter-filtered search over one large collection is slow in chromadb (47 ms median
# at 100,000 statements, bench/bench_knowledge.py), while an unfiltered search of a small
# one takes a millisecond or two.  So a collection listed here also keeps each of its
# items in a part collection of its own value of that field ("knowledge.J00-J99"), and a
# search filtered on exactly that field asks the part.  The whole collection still serves
# unfiltered searches, counts and ids.  A collection made before this (no SPLIT_MARK in
# its metadata) is searched with the filter as before until it is rebuilt (`lumen
# knowledge reindex`).
SPLIT_BY = {KNOWLEDGE: "chapter"}
SPLIT_MARK = "lumen_split_by"
_PART_VALUE = re.compile(r"[A-Za-z0-9][A-Za-z0-9-]{0,40}")


def part_name(name: str, value: object) -> str | None:
    """The part collection of `name` holding the items whose split field is `value`, or
    None when the value cannot name a collection (then the item is in the whole only)."""
    value = str(value or "")
    return f"{name}.{value}" if _PART_VALUE.fullmatch(value) else None


class VectorIndex:
    def __init__(self, folder: Path) -> None:
        self.folder = Path(folder)
        self._client: Any = None
        self._collections: dict[str, Any] = {}

    @property
    def client(self) -> Any:
        # Opened on first use: importing chromadb takes a second or two, which the window's
        # start-up and commands that only list the library should not pay.
        if self._client is None:
            self._client = _client(self.folder)
        return self._client

    def collection(self, name: str) -> Any:
        if name not in self._collections:
            # The mark is written only when the collection is created (chromadb ignores
            # metadata given for one that exists), so an older unsplit one stays unmarked.
            mark = {SPLIT_MARK: SPLIT_BY[name]} if name in SPLIT_BY else None
            self._collections[name] = self.client.get_or_create_collection(
                name, embedding_function=None, metadata=mark,
                configuration={"hnsw": {"space": "cosine", "ef_search": EF_SEARCH,
                                        "ef_construction": EF_CONSTRUCTION}})
        return self._collections[name]

    def split_field(self, name: str) -> str | None:
        """The field `name`'s items are also kept in parts by, if it is split."""
        field = SPLIT_BY.get(name)
        if field is None:
            return None
        return field if (self.collection(name).metadata or {}).get(SPLIT_MARK) == field else None

    def add(self, name: str, ids: list[str], vectors: np.ndarray,
            metadatas: list[dict[str, str]]) -> None:
        if not ids:
            return
        vectors = np.asarray(vectors, dtype=np.float32)
        written: list[tuple[Any, list[str]]] = []
        try:
            self._add_batches(self.collection(name), ids, vectors, metadatas, written)
            field = self.split_field(name)
            if field is not None:
                rows_by_part: dict[str, list[int]] = {}
                for row, metadata in enumerate(metadatas):
                    part = part_name(name, metadata.get(field))
                    if part is not None:
                        rows_by_part.setdefault(part, []).append(row)
                for part, rows in rows_by_part.items():
                    self._add_batches(self.collection(part), [ids[r] for r in rows], vectors[rows],
                                      [metadatas[r] for r in rows], written)
        except BaseException:
            # All or nothing: batches written before the failure are taken out again.
            for collection, batch in written:
                collection.delete(ids=batch)
            raise

    def _add_batches(self, collection: Any, ids: list[str], vectors: np.ndarray,
                     metadatas: list[dict[str, str]], written: list[tuple[Any, list[str]]]) -> None:
        step = max(1, min(5000, self.client.get_max_batch_size()))
        for start in range(0, len(ids), step):
            batch = ids[start:start + step]
            collection.add(ids=batch, embeddings=vectors[start:start + step],
                           metadatas=metadatas[start:start + step])
            written.append((collection, batch))

    def query(self, name: str, vector: np.ndarray, n: int,
              where: dict[str, Any] | None = None) -> list[Hit]:
        if n <= 0:
            return []
        collection = self.collection(name)
        field = self.split_field(name) if where else None
        if field is not None and list(where) == [field]:
            part = part_name(name, where[field])
            if part is not None:
                collection, where = self.collection(part), None
        # No count() first: it costs more than the search itself at 100,000 items, and an
        # empty collection simply returns no hits.
        result = collection.query(query_embeddings=[np.asarray(vector, dtype=np.float32)],
                                  n_results=n, where=where, include=["distances", "metadatas"])
        return [Hit(item_id, 1.0 - float(distance), dict(metadata or {}))
                for item_id, distance, metadata in zip(result["ids"][0], result["distances"][0],
                                                       result["metadatas"][0])]

    def delete(self, name: str, *, ids: list[str] | None = None,
               where: dict[str, Any] | None = None) -> None:
        collection = self.collection(name)
        field = self.split_field(name)
        if ids is None and where is not None:
            if field is None:
                collection.delete(where=where)
                return
            ids = collection.get(where=where, include=[])["ids"]
        for start in range(0, len(ids or []), 5000):
            batch = ids[start:start + 5000]
            if field is not None:
                # Each item's part, read before the item goes from the whole.
                found = collection.get(ids=batch, include=["metadatas"])
                by_part: dict[str, list[str]] = {}
                for item_id, metadata in zip(found["ids"], found["metadatas"]):
                    part = part_name(name, (metadata or {}).get(field))
                    if part is not None:
                        by_part.setdefault(part, []).append(item_id)
                for part, part_ids in by_part.items():
                    self.collection(part).delete(ids=part_ids)
            collection.delete(ids=batch)

    def ids(self, name: str) -> set[str]:
        return set(self.collection(name).get(include=[])["ids"])

    def count(self, name: str) -> int:
        return self.collection(name).count()

    def drop(self, name: str) -> None:
        """Remove a whole collection and its parts (used to rebuild it from the database)."""
        names = [getattr(c, "name", c) for c in self.client.list_collections()]
        for existing in names:
            if existing == name or existing.startswith(f"{name}."):
                try:
                    self.client.delete_collection(existing)
                except Exception:  # absent already
                    pass
                self._collections.pop(existing, None)
        self._collections.pop(name, None)
