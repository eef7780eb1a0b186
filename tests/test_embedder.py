"""The ONNX embedder: batched, mean-pooled, L2-normalised; bad files refused clearly."""

import numpy as np
import pytest

from desktop_app.core.errors import ModelError
from desktop_app.core.models.embedder import Embedder, cosine

PAIRS = [
    ("The patient has a high fever.", "The patient is running a high temperature.",
     "The invoice is due at the end of the month."),
    ("Take the tablet twice a day.", "Use the pill two times daily.",
     "The football match was cancelled because of rain."),
    ("Her blood sugar was very high.", "She had severe hyperglycaemia.",
     "The train leaves the station at noon."),
]


def test_similar_sentences_are_closer_than_unrelated_ones(runtime):
    embedder = runtime.embedder()
    for anchor, similar, unrelated in PAIRS:
        a, s, u = embedder.embed([anchor, similar, unrelated])
        assert cosine(a, s) > cosine(a, u) + 0.2, anchor


def test_vectors_are_unit_length_and_batches_match_single_calls(runtime):
    embedder = runtime.embedder()
    texts = [text for triple in PAIRS for text in triple] + ["short", "a much longer sentence " * 20]
    batched = embedder.embed(texts)
    assert batched.shape == (len(texts), 384) and batched.dtype == np.float32
    assert np.allclose(np.linalg.norm(batched, axis=1), 1.0, atol=1e-5)
    singles = np.stack([embedder.embed_one(t) for t in texts])
    assert np.allclose(batched, singles, atol=1e-4)  # order kept despite length sorting


def test_empty_input_gives_empty_matrix(runtime):
    assert runtime.embedder().embed([]).shape[0] == 0


def test_onnx_file_that_is_not_an_embedder_is_refused(runtime):
    from onnxruntime.datasets import get_example

    tokenizer = runtime.embedder().model_path.parent / "tokenizer.json"
    with pytest.raises(ModelError) as info:
        Embedder(get_example("sigmoid.onnx"), tokenizer)
    assert "not a sentence embedder" in info.value.message
    assert "lumen models provision" in info.value.fix


def test_file_that_is_not_onnx_is_refused(runtime, tmp_path):
    bogus = tmp_path / "model.onnx"
    bogus.write_bytes(b"this is not a protobuf" * 10)
    tokenizer = runtime.embedder().model_path.parent / "tokenizer.json"
    with pytest.raises(ModelError) as info:
        Embedder(bogus, tokenizer)
    assert "not a valid ONNX model" in info.value.message


def test_long_texts_go_in_smaller_steps_than_short_ones(runtime):
    embedder = runtime.embedder()
    assert (embedder.batch_size, embedder.tokens_per_step) == (64, 512)  # the defaults
    lengths = [256] * 20 + [4] * 100
    steps = embedder.steps(lengths)
    assert [len(step) for step in steps] == [64, 36] + [2] * 10
    assert all(len(step) * max(lengths[i] for i in step) <= 512 for step in steps)
    assert sorted(i for step in steps for i in step) == list(range(120))
    # What each step reads is what one text alone reads.
    texts = ["a much longer sentence " * 60] * 9 + ["short"] * 3
    assert np.allclose(embedder.embed(texts), np.stack([embedder.embed_one(t) for t in texts]),
                       atol=1e-4)


def test_a_long_list_is_embedded_window_by_window_in_its_own_order(runtime, monkeypatch):
    from desktop_app.core.models import embedder as module

    embedder = runtime.embedder()
    texts = [f"line {i} " + "word " * (i % 7) for i in range(25)]
    whole = embedder.embed(texts)
    monkeypatch.setattr(module, "TOKENISED_AT_ONCE", 4)  # seven windows, the last of one
    assert np.allclose(embedder.embed(texts), whole, atol=1e-5)
