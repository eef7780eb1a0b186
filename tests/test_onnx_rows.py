"""The embedder's word table read a row at a time (core/models/onnx_rows.py): a copy of
the shipped int8 MiniLM whose tables are gathered before they are widened, used only
when it gives the original's vectors to the bit."""

import re

import numpy as np
import pytest

from desktop_app.core.models import onnx_rows
from desktop_app.core.models.embedder import Embedder

from layout_corpus import CORPUS as LAYOUTS_DIR

LONG = "The patient was admitted with chest pain and shortness of breath. " * 30


@pytest.fixture(scope="module")
def original(runtime):
    embedder = runtime.embedder()
    return Embedder(embedder.model_path, embedder.model_path.parent / "tokenizer.json",
                    threads=1)


def _texts() -> list[str]:
    lines = []
    for path in sorted(LAYOUTS_DIR.glob("*.txt"))[:6]:
        lines += [line.strip() for line in path.read_text().splitlines() if line.strip()]
    return lines + [LONG, "a", "Ibuprofen 600 mg PO q6h PRN pain."]


def _with_copy(original, cache_dir) -> Embedder:
    return Embedder(original.model_path, original.model_path.parent / "tokenizer.json",
                    threads=1, cache_dir=cache_dir)


def test_the_fields_of_a_model_are_read_back_byte_for_byte(original):
    data = original.model_path.read_bytes()
    assert b"".join(field.raw for field in onnx_rows.fields(data)) == data


def test_the_copy_gives_the_original_s_vectors_to_the_bit(original, tmp_path):
    embedder = _with_copy(original, tmp_path)
    assert embedder.session_path != original.model_path
    assert embedder.session_path.parent == tmp_path / "embedder"
    texts = _texts()
    assert np.array_equal(embedder.embed(texts), original.embed(texts))
    # Made once: the next embedder loads the checked copy and does not write it again.
    written = embedder.session_path.stat().st_mtime_ns
    again = _with_copy(original, tmp_path)
    assert again.session_path == embedder.session_path
    assert again.session_path.stat().st_mtime_ns == written
    assert np.array_equal(again.embed(texts[:20]), original.embed(texts[:20]))


def test_the_copy_moves_only_the_word_and_position_tables(original):
    rewritten = onnx_rows.gather_rows_first(original.model_path.read_bytes())
    assert rewritten is not None
    names = set(re.findall(rb"lumen_rows_\d+_\d", rewritten))
    assert len(names) == 8  # two tables, each: rows, their scales, cast, scale
    assert onnx_rows.gather_rows_first(rewritten) is None  # nothing left to move


def test_a_model_with_no_widened_table_is_used_as_it_is(tmp_path):
    from onnxruntime.datasets import get_example

    assert onnx_rows.gather_rows_first(open(get_example("sigmoid.onnx"), "rb").read()) is None


def test_a_copy_that_gives_other_vectors_is_refused(original, tmp_path, monkeypatch):
    real = onnx_rows.gather_rows_first

    def scaled_wrongly(model: bytes) -> bytes:
        # The rows' scale added instead of multiplied: a model that loads and runs.
        return re.sub(rb"(lumen_rows_\d+_3\x22\x03)Mul", rb"\1Add", real(model))

    monkeypatch.setattr(onnx_rows, "gather_rows_first", scaled_wrongly)
    embedder = _with_copy(original, tmp_path)
    assert embedder.session_path == original.model_path
    texts = _texts()[:10]
    assert np.array_equal(embedder.embed(texts), original.embed(texts))
    # Refused for good: the next start uses the original without trying again.
    monkeypatch.setattr(onnx_rows, "gather_rows_first", real)
    assert _with_copy(original, tmp_path).session_path == original.model_path
    assert not list((tmp_path / "embedder").glob("*.onnx"))


def test_a_damaged_copy_falls_back_to_the_original(original, tmp_path):
    copy = _with_copy(original, tmp_path).session_path
    copy.write_bytes(copy.read_bytes()[:5000])
    embedder = _with_copy(original, tmp_path)
    assert embedder.session_path == original.model_path
    texts = _texts()[:10]
    assert np.array_equal(embedder.embed(texts), original.embed(texts))
