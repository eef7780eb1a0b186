"""Checks of the libraries Lumen's features load only when used, each once on a tiny
input, for `lumen --selftest` (gui/selftest.py adds the window's own): SQLCipher in a
throwaway database (so no passphrase is needed), the vector store (chromadb), the
evaluation metrics and statistics, word grades and Parquet import.  In an installed
bundle these are the parts most likely to be missing.  Each check returns what it saw
and raises when something is wrong."""

from __future__ import annotations

import secrets
import sqlite3
from pathlib import Path
from typing import Callable

from .store import Store
from .store.keys import DatabaseKey


def scratch_store(path: Path) -> Store:
    """A throw-away encrypted database under a random key, for checks that must not touch
    the user's records (and collect no network refusals of their own)."""
    return Store(path, DatabaseKey("raw", secrets.token_hex(32)), collects_refusals=False)


def check_encryption(folder: Path) -> str:
    path = folder / "selftest.db"
    marker = "selftest-" + secrets.token_hex(8)
    with scratch_store(path) as store:
        store.audit(marker)
        store.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    if marker.encode() in path.read_bytes():
        raise AssertionError("the test database holds readable text")
    try:
        sqlite3.connect(path).execute("SELECT * FROM sqlite_master").fetchall()
    except sqlite3.DatabaseError:
        return "SQLCipher database unreadable without its key"
    raise AssertionError("plain SQLite could read the encrypted test database")


SAMPLE_SENTENCES = ("Take one tablet by mouth each morning with food.",
              "The wound on your leg is healing well.",
              "Quarterly tax forms are due in April.")


def check_vector_store(folder: Path, embedder) -> str:
    import chromadb
    from chromadb.config import Settings as ChromaSettings

    client = chromadb.PersistentClient(
        path=str(folder / "vectors"),
        settings=ChromaSettings(anonymized_telemetry=False, allow_reset=True))
    try:
        collection = client.create_collection("selftest", embedding_function=None,
                                              metadata={"hnsw:space": "cosine"})
        collection.add(ids=["0", "1", "2"], embeddings=embedder.embed(list(SAMPLE_SENTENCES)).tolist(),
                       documents=list(SAMPLE_SENTENCES))
        query = embedder.embed(["The cut on the leg is getting better."]).tolist()
        nearest = collection.query(query_embeddings=query, n_results=1)["ids"][0][0]
        if nearest != "1":
            raise AssertionError(f"the nearest stored sentence was #{nearest}, not #1")
        return f"chromadb {chromadb.__version__}: stored 3 vectors, nearest neighbour found"
    finally:
        client.clear_system_cache()


def check_metrics(embedder, cache_dir: Path) -> str:
    import math

    from .evaluation import metrics, stats

    text = SAMPLE_SENTENCES[0]
    scores = metrics.score_all(text, text, text, embedder=embedder, cache_dir=cache_dir)
    exact = {name: scores[name] for name in ("bleu", "rouge_l", "token_f1", "sbert", "bertscore_f1")}
    if any(not math.isclose(value, 100.0, abs_tol=0.5) for value in exact.values()):
        raise AssertionError(f"identical texts did not score 100: {exact}")
    low, high = stats.bootstrap_interval([1.0, 2.0, 3.0, 4.0], resamples=1000)
    mean = 2.5
    test = stats.wilcoxon([3.0, 4.0, 5.0, 6.0, 7.0, 8.0], [1.0, 1.5, 2.0, 2.5, 3.0, 3.5])
    if not (low < mean < high and 0.0 < test["p_value"] <= 1.0):
        raise AssertionError("the statistics gave impossible values")
    from .readability import RARE_WORD_GRADE, word_grade

    # The word list ships with wordfreq (packaging/hooks/hook-wordfreq.py keeps English only).
    if not word_grade("history") < word_grade("cellulitis") == RARE_WORD_GRADE:
        raise AssertionError("word grades are missing: wordfreq's English list was not found")
    return (f"SARI {scores['sari']:.0f}, FKGL {scores['fkgl']:.1f}, BLEU, ROUGE-L, Token F1, "
            f"SBERT and BERTScore 100 on identical texts; bootstrap interval and Wilcoxon (scipy) "
            f"work; word grades read")


def check_parquet(folder: Path) -> str:
    import pyarrow as pa
    import pyarrow.parquet as pq

    from .evaluation.importers import columns

    path = folder / "benchmark.parquet"
    pq.write_table(pa.table({"question": ["Why?"], "answer": ["Because."]}), path)
    found = columns(path)
    if found != ["question", "answer"]:
        raise AssertionError(f"the Parquet file's columns read as {found}")
    return f"pyarrow {pa.__version__}: a Parquet benchmark file's columns read back"




def component_checks(folder: Path, embedder: Callable, cache_dir: Path
                     ) -> list[tuple[str, Callable[[], str]]]:
    """The checks above as (name, check), in the order they are shown; `embedder` gives
    the loaded embedder when a check needs it."""
    return [("Vector store", lambda: check_vector_store(folder, embedder())),
            ("Evaluation metrics", lambda: check_metrics(embedder(), cache_dir)),
            ("Parquet import", lambda: check_parquet(folder))]
