"""Per-sample evaluation scores: SARI against the published reference values, token F1
against SQuAD's rules, BLEU and ROUGE-L against their libraries, the embedding scores
on Lumen's real MiniLM, and worst-case scores for blank answers."""

import numpy as np
import pytest
import sacrebleu
from rouge_score import rouge_scorer

from desktop_app.core.evaluation import metrics
from desktop_app.core.evaluation.metrics import (
    BERTSCORE_ENCODER_NOTE, METRICS, WORST_FKGL, bertscore, bleu, fkgl, rouge_l, sari,
    sbert_cosine, score_all, token_embeddings, token_f1)
from desktop_app.core.readability import flesch_kincaid_grade

# The worked example of Xu et al.'s SARI.py (its main()), also used by tensor2tensor's
# sari_hook_test.py and HF evaluate's `sari` docstring.
XU_SOURCE = "About 95 species are currently accepted ."
XU_REFERENCES = ["About 95 species are currently known .",
                 "About 95 species are now accepted .",
                 "95 species are now accepted ."]


@pytest.fixture(scope="module")
def embedder(runtime):
    return runtime.embedder()


# --- SARI ---------------------------------------------------------------------------

def test_sari_matches_hf_evaluate_docstring_example():
    # evaluate.load("sari") docstring: {'sari': 26.953601953601954}
    assert sari(XU_SOURCE, "About 95 you now get in .", XU_REFERENCES) == \
        pytest.approx(26.953601953601954, rel=1e-12)


@pytest.mark.parametrize("prediction, expected", [
    ("About 95 you now get in .", 0.2695360),
    ("About 95 species are now agreed .", 0.6170966),
    ("About 95 species are currently agreed .", 0.5088682),
])
def test_sari_matches_tensor2tensor_test_values(prediction, expected):
    # tensor2tensor/utils/sari_hook_test.py, testSariSent1-3 (assertAlmostEqual: 7 places)
    assert sari(XU_SOURCE, prediction, XU_REFERENCES) / 100 == pytest.approx(expected, abs=5e-8)


def test_sari_of_a_copy_of_the_source_by_hand():
    """source "a b c", prediction = source, reference "a b d". By order n:
    n=1: keep P 2/3, R 2/2 -> F 0.8; nothing deleted -> 1; add P 1 (0/0), R 0/1 -> 0.
    n=2: keep P 1/2, R 1/1 -> F 2/3; delete 1; add 0.
    n=3: keep P 0/1, R 1 (0/0) -> F 0; delete 1; add 0.
    n=4: no 4-grams anywhere, every 0/0 counts as 1 -> keep 1, delete 1, add 1.
    keep 37/60, delete 1, add 1/4; SARI = (37/60 + 1 + 1/4) / 3 = 28/45."""
    assert sari("a b c", "a b c", ["a b d"]) == pytest.approx(100 * 28 / 45)


def test_sari_is_100_when_prediction_matches_the_reference():
    source = "The patient was commenced on furosemide 40 mg once daily for oedema ."
    reference = "You started furosemide 40 mg once a day for swelling ."
    assert sari(source, reference, [reference]) == pytest.approx(100)
    assert sari(source, source, [source]) == pytest.approx(100)


def test_sari_blank_prediction_scores_zero():
    assert sari(XU_SOURCE, "", XU_REFERENCES) == 0.0
    assert sari(XU_SOURCE, "  \n", XU_REFERENCES) == 0.0


def test_sari_lowercases_and_splits_punctuation_13a_style():
    tokenised = sari("She takes aspirin daily .", "she takes it every day .", ["She takes it daily ."])
    raw = sari("She takes aspirin daily.", "She takes it every day.", ["she takes it daily."])
    assert raw == pytest.approx(tokenised)


def test_sari_accepts_one_reference_as_a_string_and_refuses_none():
    assert sari("a b c", "a b c", "a b d") == pytest.approx(sari("a b c", "a b c", ["a b d"]))
    with pytest.raises(ValueError):
        sari("a b c", "a b c", [])


# --- token F1 -----------------------------------------------------------------------

@pytest.mark.parametrize("prediction, reference, expected", [
    ("the Denver Broncos", "Denver Broncos", 100.0),  # articles dropped
    ("Denver Broncos!", "denver broncos", 100.0),  # case and punctuation dropped
    ("Broncos", "Denver Broncos", 100 * 2 * 1 * 0.5 / 1.5),  # P 1, R 1/2
    # SQuAD v1.1 dev style: 3 of the reference's 11 normalised tokens -> P 1, R 3/11, F1 6/14
    ("Santa Clara, California",
     "Levi's Stadium in the San Francisco Bay Area at Santa Clara, California.", 100 * 6 / 14),
    ("Carolina Panthers", "Denver Broncos", 0.0),
    ("the", "the", 0.0),  # nothing left after normalisation: v1.1 gives 0
])
def test_token_f1_follows_squad_v1_1(prediction, reference, expected):
    assert token_f1(prediction, reference) == pytest.approx(expected)


def test_token_f1_counts_repeated_tokens_once_each():
    # common = min counts: "take" x1; P 1/3, R 1/1 -> F1 0.5
    assert token_f1("take take take", "take") == pytest.approx(50.0)


def test_token_f1_blank_prediction_scores_zero():
    assert token_f1("   ", "Denver Broncos") == 0.0


# --- BLEU and ROUGE-L ---------------------------------------------------------------

PAIRS = [
    ("Take one tablet of metformin twice a day with food.",
     "Take metformin 500 mg twice daily with meals."),
    ("Your heart was not pumping well, so fluid built up in your lungs.",
     "You had heart failure, which caused fluid in your lungs."),
    ("Come back if the pain gets worse.", "Return to the hospital if your chest pain worsens."),
]


@pytest.mark.parametrize("prediction, reference", PAIRS)
def test_bleu_equals_sacrebleu_sentence_bleu(prediction, reference):
    assert bleu(prediction, reference) == sacrebleu.sentence_bleu(prediction, [reference]).score


def test_bleu_identity_is_100_and_blank_is_0():
    assert bleu(PAIRS[0][1], PAIRS[0][1]) == pytest.approx(100.0)
    assert bleu("", PAIRS[0][1]) == 0.0


@pytest.mark.parametrize("prediction, reference", PAIRS)
def test_rouge_l_equals_rouge_score(prediction, reference):
    scorer = rouge_scorer.RougeScorer(["rougeL"], use_stemmer=True)
    expected = 100 * scorer.score(reference, prediction)["rougeL"].fmeasure
    assert rouge_l(prediction, reference) == pytest.approx(expected)


def test_rouge_l_by_hand_and_with_stemming():
    # LCS "the cat on the mat" = 5 of 6 tokens each side: P = R = F = 5/6
    assert rouge_l("the cat lay on the mat", "the cat sat on the mat") == pytest.approx(500 / 6)
    assert rouge_l("Take the tablets", "take the tablet") == pytest.approx(100.0)
    assert rouge_l("\t", "take the tablet") == 0.0


# --- FKGL ---------------------------------------------------------------------------

def test_fkgl_uses_readability_and_blank_gets_the_worst_grade(tmp_path):
    text = "You had a heart attack. Take your pills every day. Call us if the pain comes back."
    assert fkgl(text, tmp_path) == flesch_kincaid_grade(text, tmp_path)
    assert fkgl(text, tmp_path) < 10
    assert fkgl("", tmp_path) == WORST_FKGL == 20.0


# --- SBERT and BERTScore on Lumen's MiniLM -------------------------------------------

ANCHOR = "The patient has a high fever."
PARAPHRASE = "The patient is running a high temperature."
UNRELATED = "The invoice is due at the end of the month."


def test_sbert_cosine_is_the_embedders_cosine_times_100(embedder):
    a, b = embedder.embed([ANCHOR, PARAPHRASE])
    assert sbert_cosine(ANCHOR, PARAPHRASE, embedder) == pytest.approx(100 * float(a @ b), abs=1e-4)
    assert sbert_cosine(ANCHOR, ANCHOR, embedder) == pytest.approx(100, abs=1e-3)
    assert sbert_cosine(ANCHOR, PARAPHRASE, embedder) > sbert_cosine(ANCHOR, UNRELATED, embedder) + 20
    assert sbert_cosine("", ANCHOR, embedder) == 0.0


def test_token_embeddings_leave_out_cls_sep_and_padding(embedder):
    short, long = "High fever.", "The patient was admitted with a high fever and a productive cough."
    vectors = token_embeddings(embedder, [short, long])
    for text, matrix in zip([short, long], vectors):
        tokens = embedder.tokenizer.encode(text).tokens
        assert tokens[0] == "[CLS]" and tokens[-1] == "[SEP]"
        assert matrix.shape == (len(tokens) - 2, 384)
    # padding the short text to the long one's length does not change its vectors
    alone = token_embeddings(embedder, [short])[0]
    assert np.allclose(alone, vectors[0], atol=1e-4)


def test_bertscore_identical_texts_score_100(embedder):
    score = bertscore(ANCHOR, ANCHOR, embedder)
    for key in ("precision", "recall", "f1"):
        assert score[key] == pytest.approx(100, abs=1e-3)


def test_bertscore_prefers_a_paraphrase_to_an_unrelated_sentence(embedder):
    assert bertscore(PARAPHRASE, ANCHOR, embedder)["f1"] > bertscore(UNRELATED, ANCHOR, embedder)["f1"]


def test_bertscore_precision_and_recall_are_asymmetric_for_a_subset(embedder):
    part = "The patient has a fever."
    whole = "The patient has a fever, a cough and chest pain, and was given antibiotics."
    short_vs_long = bertscore(part, whole, embedder)
    long_vs_short = bertscore(whole, part, embedder)
    # every token of the shorter text has a close match in the longer one, not conversely
    assert short_vs_long["precision"] > short_vs_long["recall"] + 5
    assert long_vs_short["recall"] > long_vs_short["precision"] + 5
    # swapping the texts swaps precision and recall
    assert short_vs_long["precision"] == pytest.approx(long_vs_short["recall"], abs=1e-6)
    assert short_vs_long["f1"] == pytest.approx(long_vs_short["f1"], abs=1e-6)


def test_bertscore_blank_prediction_scores_zero(embedder):
    assert bertscore(" ", ANCHOR, embedder) == {"precision": 0.0, "recall": 0.0, "f1": 0.0}


def test_bertscore_note_names_the_substituted_encoder():
    assert "MiniLM" in BERTSCORE_ENCODER_NOTE and "distilbert-base-uncased" in BERTSCORE_ENCODER_NOTE


# --- all scores ---------------------------------------------------------------------

SOURCE = ("Discharge diagnosis: community-acquired pneumonia. The patient was treated with "
          "intravenous ceftriaxone and discharged on oral amoxicillin 500 mg three times daily "
          "for five days.")
REFERENCE = "You had a chest infection and should take amoxicillin 500 mg three times a day for five days."


def test_score_all_returns_every_metric_in_range(embedder, tmp_path):
    prediction = "You had a lung infection. Take amoxicillin 500 mg three times a day for five days."
    scores = score_all(prediction, REFERENCE, SOURCE, embedder=embedder, cache_dir=tmp_path)
    assert set(scores) == set(METRICS) == {"sari", "fkgl", "sbert", "token_f1", "bleu", "rouge_l",
                                           "bertscore_f1"}
    for name, value in scores.items():
        assert isinstance(value, float), name
        if METRICS[name]["scale"] == "0-100":
            assert 0 < value <= 100, name
    assert scores["sari"] == sari(SOURCE, prediction, [REFERENCE])
    assert scores["bertscore_f1"] == pytest.approx(bertscore(prediction, REFERENCE, embedder)["f1"])


def test_score_all_gives_a_blank_prediction_the_worst_case(embedder, tmp_path):
    scores = score_all("  ", REFERENCE, SOURCE, embedder=embedder, cache_dir=tmp_path)
    assert scores == {"sari": 0.0, "fkgl": WORST_FKGL, "sbert": 0.0, "token_f1": 0.0, "bleu": 0.0,
                      "rouge_l": 0.0, "bertscore_f1": 0.0}


def test_metric_table_says_which_direction_is_better():
    assert METRICS["fkgl"]["higher_is_better"] is False
    assert all(spec["higher_is_better"] for name, spec in METRICS.items() if name != "fkgl")
    assert all({"label", "higher_is_better", "scale"} <= set(spec) for spec in METRICS.values())
    assert metrics.WORST_FKGL == 20.0
