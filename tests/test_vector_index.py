"""The vector index's chapter parts (issue #35): a chapter-filtered search asks a small
collection of that chapter's statements instead of filtering the whole, with the same
hits; removing and rebuilding keep the parts in step.  Real chromadb, in a temporary
folder."""

from __future__ import annotations

import numpy as np
import pytest

from desktop_app.core.knowledge.index import KNOWLEDGE, SPLIT_MARK, VectorIndex, part_name

CHAPTERS = ("A00-B99", "I00-I99", "J00-J99")


def unit_vectors(count: int, seed: int) -> np.ndarray:
    vectors = np.random.default_rng(seed).normal(size=(count, 16)).astype(np.float32)
    return vectors / np.linalg.norm(vectors, axis=1, keepdims=True)


@pytest.fixture
def filled(tmp_path):
    """An index of 120 statements over three chapters, and 6 with no chapter."""
    index = VectorIndex(tmp_path / "index")
    ids = [f"s{n}" for n in range(126)]
    metadatas = [{"chapter": CHAPTERS[n % 3] if n < 120 else "", "document": "d1"}
                 for n in range(126)]
    vectors = unit_vectors(126, seed=1)
    index.add(KNOWLEDGE, ids, vectors, metadatas)
    return index, ids, metadatas, vectors


def filtered_on_the_whole(index: VectorIndex, vector: np.ndarray, chapter: str, n: int) -> list[str]:
    """The search the parts replace: chromadb's own filtered query over every statement."""
    result = index.collection(KNOWLEDGE).query(query_embeddings=[vector], n_results=n,
                                               where={"chapter": chapter}, include=["distances"])
    return result["ids"][0]


def test_a_chapter_search_asks_its_part_and_finds_what_the_filter_finds(filled):
    index, ids, metadatas, vectors = filled
    assert index.split_field(KNOWLEDGE) == "chapter"
    assert index.collection(KNOWLEDGE).metadata == {SPLIT_MARK: "chapter"}
    for chapter in CHAPTERS:
        assert index.count(part_name(KNOWLEDGE, chapter)) == 40
    assert index.count(KNOWLEDGE) == 126  # the whole keeps every statement, chapter or not
    for seed in range(5):
        query = unit_vectors(1, seed=100 + seed)[0]
        for chapter in CHAPTERS:
            hits = index.query(KNOWLEDGE, query, 6, {"chapter": chapter})
            assert [h.id for h in hits] == filtered_on_the_whole(index, query, chapter, 6)
            assert all(h.metadata["chapter"] == chapter for h in hits)
    # A statement's own vector finds it first in its chapter, with similarity 1.
    best = index.query(KNOWLEDGE, vectors[7], 1, {"chapter": metadatas[7]["chapter"]})[0]
    assert best.id == "s7" and best.score == pytest.approx(1.0, abs=1e-5)
    # Unfiltered, and filtered on a value that names no part, search the whole.
    assert index.query(KNOWLEDGE, vectors[122], 1)[0].id == "s122"
    assert [h.id for h in index.query(KNOWLEDGE, vectors[122], 3, {"chapter": ""})] == \
        filtered_on_the_whole(index, vectors[122], "", 3)


def test_removed_statements_leave_their_part_and_a_drop_takes_the_parts(filled):
    index, ids, metadatas, vectors = filled
    index.delete(KNOWLEDGE, ids=ids[:30])
    assert index.count(KNOWLEDGE) == 96
    assert sum(index.count(part_name(KNOWLEDGE, c)) for c in CHAPTERS) == 90
    assert "s3" not in {h.id for h in index.query(KNOWLEDGE, vectors[3], 10, {"chapter": CHAPTERS[0]})}
    index.delete(KNOWLEDGE, where={"document": "d1"})
    assert index.count(KNOWLEDGE) == 0
    assert all(index.count(part_name(KNOWLEDGE, c)) == 0 for c in CHAPTERS)
    index.drop(KNOWLEDGE)
    names = {getattr(c, "name", c) for c in index.client.list_collections()}
    assert not any(name == KNOWLEDGE or name.startswith(KNOWLEDGE + ".") for name in names)


def test_an_index_made_before_the_parts_is_searched_with_the_filter_until_rebuilt(tmp_path):
    index = VectorIndex(tmp_path / "index")
    # As an older Lumen made it: no split mark.
    index.client.get_or_create_collection(KNOWLEDGE, embedding_function=None,
                                          configuration={"hnsw": {"space": "cosine"}})
    vectors = unit_vectors(30, seed=2)
    metadatas = [{"chapter": CHAPTERS[n % 3]} for n in range(30)]
    index.add(KNOWLEDGE, [f"s{n}" for n in range(30)], vectors, metadatas)
    assert index.split_field(KNOWLEDGE) is None
    assert index.count(part_name(KNOWLEDGE, CHAPTERS[0])) == 0  # no part was written
    hits = index.query(KNOWLEDGE, vectors[4], 3, {"chapter": CHAPTERS[1]})
    assert hits[0].id == "s4" and all(h.metadata["chapter"] == CHAPTERS[1] for h in hits)
    # A rebuild (`lumen knowledge reindex`: drop, then add) makes it split.
    index.drop(KNOWLEDGE)
    index.add(KNOWLEDGE, [f"s{n}" for n in range(30)], vectors, metadatas)
    assert index.split_field(KNOWLEDGE) == "chapter"
    assert index.count(part_name(KNOWLEDGE, CHAPTERS[1])) == 10


def test_a_failed_write_to_a_part_takes_back_everything_written(tmp_path, monkeypatch):
    """The all-or-nothing rule with the failure planted in the second write (the parts);
    the real writes are the tests above."""
    index = VectorIndex(tmp_path / "index")
    real = VectorIndex._add_batches
    calls = []

    def fail_on_the_part(self, collection, *args):
        calls.append(collection.name)
        if collection.name != KNOWLEDGE:
            raise RuntimeError("disk full")
        return real(self, collection, *args)
    monkeypatch.setattr(VectorIndex, "_add_batches", fail_on_the_part)
    with pytest.raises(RuntimeError):
        index.add(KNOWLEDGE, ["a", "b"], unit_vectors(2, seed=3),
                  [{"chapter": CHAPTERS[0]}, {"chapter": CHAPTERS[0]}])
    assert calls[0] == KNOWLEDGE and index.count(KNOWLEDGE) == 0


def test_part_names_are_valid_collection_names_or_none():
    assert part_name(KNOWLEDGE, "S00-T98") == "knowledge.S00-T98"
    for bad in ("", None, "a b", "../x", "-A", "x" * 60):
        assert part_name(KNOWLEDGE, bad) is None
