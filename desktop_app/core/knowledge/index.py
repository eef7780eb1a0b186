"""The vector index: chromadb collections of vectors, ids and tags, and nothing else.

Text stays in the encrypted database; chromadb's files are not encrypted, so they
are given only random ids, unit vectors and metadata that is not patient text (the
ICD-10 chapter, and the id of the document or case set an item came from).  The
collections use cosine space, so chromadb's distance is 1 − cosine.
"""

from __future__ import annotations

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
            self._collections[name] = self.client.get_or_create_collection(
                name, embedding_function=None,
                configuration={"hnsw": {"space": "cosine", "ef_search": EF_SEARCH,
                                        "ef_construction": EF_CONSTRUCTION}})
        return self._collections[name]

    def add(self, name: str, ids: list[str], vectors: np.ndarray,
            metadatas: list[dict[str, str]]) -> None:
        if not ids:
            return
        collection = self.collection(name)
        step = max(1, min(5000, self.client.get_max_batch_size()))
        start = 0
        try:
            for start in range(0, len(ids), step):
                collection.add(ids=ids[start:start + step],
                               embeddings=np.asarray(vectors[start:start + step], dtype=np.float32),
                               metadatas=metadatas[start:start + step])
        except BaseException:
            # All or nothing: batches written before the failure are taken out again.
            if start:
                collection.delete(ids=ids[:start])
            raise

    def query(self, name: str, vector: np.ndarray, n: int,
              where: dict[str, Any] | None = None) -> list[Hit]:
        if n <= 0:
            return []
        # No count() first: it costs more than the search itself at 100,000 items, and an
        # empty collection simply returns no hits.
        result = self.collection(name).query(query_embeddings=[np.asarray(vector, dtype=np.float32)],
                                  n_results=n, where=where, include=["distances", "metadatas"])
        return [Hit(item_id, 1.0 - float(distance), dict(metadata or {}))
                for item_id, distance, metadata in zip(result["ids"][0], result["distances"][0],
                                                       result["metadatas"][0])]

    def delete(self, name: str, *, ids: list[str] | None = None,
               where: dict[str, Any] | None = None) -> None:
        collection = self.collection(name)
        if ids is not None:
            for start in range(0, len(ids), 5000):
                collection.delete(ids=ids[start:start + 5000])
        elif where is not None:
            collection.delete(where=where)

    def ids(self, name: str) -> set[str]:
        return set(self.collection(name).get(include=[])["ids"])

    def count(self, name: str) -> int:
        return self.collection(name).count()

    def drop(self, name: str) -> None:
        """Remove a whole collection (used to rebuild it from the database)."""
        try:
            self.client.delete_collection(name)
        except Exception:  # absent already
            pass
        self._collections.pop(name, None)
