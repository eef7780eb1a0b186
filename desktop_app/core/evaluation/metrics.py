"""Per-sample scores for the evaluation engine, as in LAMP-MedQA (Table 1).

Every score compares one prediction with one reference answer (SARI also with the
source document). Scores are on a 0-100 scale, higher is better, except FKGL
(a US school grade, lower is better). LAMP-MedQA's LLM judge (1-5) is not here: it
needs a model call and lives with the engine.

A blank prediction (empty or only whitespace) gets the worst case for every score,
as LAMP-MedQA does ("Blank predictions receive worst-case scores"): 0 on the 0-100
scales and `WORST_FKGL` for FKGL.

Everything here runs offline: SARI and token F1 are written out below, BLEU comes
from sacrebleu, ROUGE-L from rouge-score, FKGL from textstat through
`..readability`, and the two embedding scores from Lumen's own ONNX MiniLM.
"""

from __future__ import annotations

import functools
import re
import string
import threading
from collections import Counter
from pathlib import Path
from typing import Any, Protocol

import numpy as np

from ..readability import flesch_kincaid_grade

# A blank answer is scored as if it were unreadable: grade 20 is past any school
# grade and past the FKGL of the densest clinical prose (discharge summaries score
# around 12-16), so a blank never looks more readable than a real answer.
WORST_FKGL = 20.0

BERTSCORE_ENCODER_NOTE = (
    "BERTScore uses Lumen's embedded all-MiniLM-L6-v2 (int8 ONNX), last hidden layer, "
    "greedy cosine matching, no idf weighting, no baseline rescaling; LAMP-MedQA used "
    "distilbert-base-uncased, which Lumen does not ship, so values are not directly "
    "comparable with the paper's.")

METRICS: dict[str, dict[str, Any]] = {
    "sari": {"label": "SARI", "higher_is_better": True, "scale": "0-100"},
    "fkgl": {"label": "FKGL", "higher_is_better": False, "scale": "US school grade"},
    # A cosine x 100: below 0 for opposed texts.
    "sbert": {"label": "SBERT cosine", "higher_is_better": True, "scale": "0-100",
              "range": (-100.0, 100.0)},
    "token_f1": {"label": "Token F1", "higher_is_better": True, "scale": "0-100"},
    "bleu": {"label": "BLEU", "higher_is_better": True, "scale": "0-100"},
    "rouge_l": {"label": "ROUGE-L", "higher_is_better": True, "scale": "0-100"},
    "bertscore_f1": {"label": "BERTScore F1", "higher_is_better": True, "scale": "0-100"},
}

SARI_MAX_NGRAM = 4


class SentenceEmbedder(Protocol):
    def embed(self, texts: list[str]) -> np.ndarray: ...


def is_blank(text: str | None) -> bool:
    return text is None or not text.strip()


# --- SARI -----------------------------------------------------------------------------

def sari_tokens(text: str) -> list[str]:
    """Lower case, sacrebleu's 13a tokenisation, split on whitespace.

    Xu et al.'s SARI.py only lowercases and splits on single spaces, because its
    test data (TurkCorpus) was tokenised already. Model answers are not, and "day."
    would never match "day"; HF `evaluate` and EASSE therefore run the same 13a
    tokeniser first, and so do we. Splitting on any whitespace (not " ") keeps
    double spaces from making empty tokens.
    """
    return _tokenizer_13a()(text.lower()).split()


@functools.cache
def _tokenizer_13a():
    from sacrebleu.tokenizers.tokenizer_13a import Tokenizer13a

    return Tokenizer13a()


def ngrams(tokens: list[str], n: int) -> Counter:
    return Counter(tuple(tokens[i:i + n]) for i in range(len(tokens) - n + 1))


def harmonic_mean(precision: float, recall: float) -> float:
    """F1 of a precision and a recall; 0 when both are 0."""
    return 2 * precision * recall / (precision + recall) if precision + recall > 0 else 0.0


def sari_keep(source: Counter, prediction: Counter, references: Counter, n_refs: int) -> float:
    """Keep F1. Source and prediction counts are multiplied by the number of references
    so they are on the same footing as the reference counts summed over references.
    Recall uses the corrected denominator (tensor2tensor / HF evaluate; cocoxu issue #6)."""
    source_rep = Counter({g: c * n_refs for g, c in source.items()})
    prediction_rep = Counter({g: c * n_refs for g, c in prediction.items()})
    kept = source_rep & prediction_rep
    kept_good = kept & references
    kept_by_refs = source_rep & references
    precision = sum(kept_good[g] / kept[g] for g in kept_good) / len(kept) if kept else 1.0
    recall = sum(kept_good.values()) / sum(kept_by_refs.values()) if kept_by_refs else 1.0
    return harmonic_mean(precision, recall)


def sari_delete(source: Counter, prediction: Counter, references: Counter, n_refs: int) -> float:
    """Deletion precision only, as in SARI's final definition (Xu et al. 2016; beta = 0
    in tensor2tensor): the share of deleted source n-grams that the references delete
    too, each weighted by how many references agree."""
    source_rep = Counter({g: c * n_refs for g, c in source.items()})
    prediction_rep = Counter({g: c * n_refs for g, c in prediction.items()})
    deleted = source_rep - prediction_rep
    deleted_good = deleted - references
    if not deleted:
        return 1.0
    return sum(deleted_good[g] / deleted[g] for g in deleted_good) / len(deleted)


def sari_add(source: Counter, prediction: Counter, references: Counter) -> float:
    """Addition F1 over n-gram types (presence, not counts), as in the original."""
    added = set(prediction) - set(source)
    added_good = added & set(references)
    added_by_refs = set(references) - set(source)
    precision = len(added_good) / len(added) if added else 1.0
    recall = len(added_good) / len(added_by_refs) if added_by_refs else 1.0
    return harmonic_mean(precision, recall)


def sari(source: str, prediction: str, references: list[str] | str) -> float:
    """SARI (Xu et al. 2016, "Optimizing Statistical Machine Translation for Text
    Simplification", TACL 4), 0-100.

    Mean over n = 1..4 of keep F1, deletion precision and addition F1, averaged over the
    three operations. The arithmetic is that of Xu's SARI.py (cocoxu/simplification,
    commit 0210f15) with the two changes of tensor2tensor's sari_hook.py, also made
    by HF evaluate's `sari`: 0/0 counts as 1 (an operation with nothing to do is done
    perfectly) and the keep-recall fix of cocoxu/simplification issue #6. Tokens: see
    `sari_tokens`. Sentence level; a corpus SARI (EASSE) pools counts and differs.
    """
    if isinstance(references, str):
        references = [references]
    if not references:
        raise ValueError("SARI needs at least one reference.")
    if is_blank(prediction):
        return 0.0
    source_tokens, prediction_tokens = sari_tokens(source), sari_tokens(prediction)
    reference_tokens = [sari_tokens(r) for r in references]
    keep = delete = add = 0.0
    for n in range(1, SARI_MAX_NGRAM + 1):
        s, p = ngrams(source_tokens, n), ngrams(prediction_tokens, n)
        r = sum((ngrams(t, n) for t in reference_tokens), Counter())
        keep += sari_keep(s, p, r, len(references))
        delete += sari_delete(s, p, r, len(references))
        add += sari_add(s, p, r)
    return 100.0 * (keep + delete + add) / (3 * SARI_MAX_NGRAM)


# --- token F1 ---------------------------------------------------------------------------

_ARTICLES = re.compile(r"\b(a|an|the)\b")
_PUNCTUATION = set(string.punctuation)


def squad_normalise(text: str) -> str:
    """SQuAD v1.1's `normalize_answer`: lower case, drop punctuation, drop a/an/the,
    collapse whitespace (Rajpurkar et al. 2016, official evaluate-v1.1.py)."""
    text = "".join(ch for ch in text.lower() if ch not in _PUNCTUATION)
    return " ".join(_ARTICLES.sub(" ", text).split())


def token_f1(prediction: str, reference: str, *, source: str = "") -> float:
    """SQuAD v1.1 token-overlap F1 (Rajpurkar et al. 2016), 0-100."""
    if is_blank(prediction):
        return 0.0
    predicted, expected = squad_normalise(prediction).split(), squad_normalise(reference).split()
    same = sum((Counter(predicted) & Counter(expected)).values())
    if same == 0:
        return 0.0
    precision, recall = same / len(predicted), same / len(expected)
    return 100.0 * 2 * precision * recall / (precision + recall)


# --- BLEU and ROUGE-L ----------------------------------------------------------------

def bleu(prediction: str, reference: str, *, source: str = "") -> float:
    """Sentence BLEU (Papineni et al. 2002) by sacrebleu's `sentence_bleu` with its
    defaults (13a tokens, exponential smoothing, effective order), 0-100."""
    import sacrebleu

    if is_blank(prediction):
        return 0.0
    return float(sacrebleu.sentence_bleu(prediction, [reference]).score)


_rouge_lock = threading.Lock()
_rouge_scorer = None


def _rouge_l_scorer():
    global _rouge_scorer
    with _rouge_lock:
        if _rouge_scorer is None:
            from rouge_score import rouge_scorer

            _rouge_scorer = rouge_scorer.RougeScorer(["rougeL"], use_stemmer=True)
        return _rouge_scorer


def rouge_l(prediction: str, reference: str, *, source: str = "") -> float:
    """ROUGE-L F-measure (Lin 2004) by Google's rouge-score with the Porter stemmer,
    0-100. Its tokeniser keeps only [a-z0-9], so non-Latin text scores 0."""
    if is_blank(prediction):
        return 0.0
    score = _rouge_l_scorer().score(target=reference, prediction=prediction)
    return 100.0 * float(score["rougeL"].fmeasure)


# --- FKGL -------------------------------------------------------------------------------

def fkgl(text: str, cache_dir: Path) -> float:
    """Flesch-Kincaid grade level (Kincaid et al. 1975) through textstat, kept offline
    by `readability`; `WORST_FKGL` for a blank text. Lower is more readable."""
    if is_blank(text):
        return WORST_FKGL
    return flesch_kincaid_grade(text, cache_dir)


# --- embedding scores -------------------------------------------------------------------

def sbert_cosine(prediction: str, reference: str, embedder: SentenceEmbedder, *,
                 source: str = "") -> float:
    """Cosine of the two sentence embeddings (Reimers and Gurevych 2019) x 100.
    LAMP-MedQA used all-mpnet-base-v2; Lumen's embedder is all-MiniLM-L6-v2. The
    embedder returns unit vectors, so the dot product is the cosine."""
    if is_blank(prediction):
        return 0.0
    vectors = np.asarray(embedder.embed([prediction, reference]), dtype=np.float64)
    return 100.0 * float(vectors[0] @ vectors[1])


def token_embeddings(embedder: Any, texts: list[str]) -> list[np.ndarray]:
    """Contextual token vectors from the embedder's ONNX session, one (tokens x dims)
    array per text, without [CLS], [SEP] and padding (BERTScore drops [CLS] and [SEP]
    too). `Embedder.hidden_states` reads them as it reads sentences: same truncation,
    same inputs. The session's last hidden state is used: the ONNX export exposes no
    other layer."""
    if not texts:
        return []
    hidden, encodings = embedder.hidden_states(texts)
    vectors = []
    for row, encoding in enumerate(encodings):
        keep = [i for i, (attended, special) in
                enumerate(zip(encoding.attention_mask, encoding.special_tokens_mask))
                if attended and not special]
        vectors.append(np.asarray(hidden[row, keep], dtype=np.float64))
    return vectors


def greedy_match(candidate: np.ndarray, reference: np.ndarray) -> tuple[float, float, float]:
    """BERTScore's greedy cosine matching (Zhang et al. 2020, eq. 1-3, no idf): recall
    matches each reference token to its most similar candidate token, precision each
    candidate token to its most similar reference token."""
    if len(candidate) == 0 or len(reference) == 0:
        return 0.0, 0.0, 0.0
    candidate = candidate / np.linalg.norm(candidate, axis=1, keepdims=True)
    reference = reference / np.linalg.norm(reference, axis=1, keepdims=True)
    similarity = reference @ candidate.T  # reference tokens x candidate tokens
    precision = float(similarity.max(axis=0).mean())
    recall = float(similarity.max(axis=1).mean())
    return precision, recall, harmonic_mean(precision, recall)


def bertscore(prediction: str, reference: str, token_embedder: Any, *,
              source: str = "") -> dict[str, float]:
    """BERTScore precision, recall and F1 (Zhang et al. 2020, "BERTScore: Evaluating
    Text Generation with BERT", ICLR) x 100, on Lumen's MiniLM (see
    `BERTSCORE_ENCODER_NOTE`). `token_embedder` is an `Embedder`."""
    if is_blank(prediction):
        return {"precision": 0.0, "recall": 0.0, "f1": 0.0}
    candidate, expected = token_embeddings(token_embedder, [prediction, reference])
    precision, recall, f1 = greedy_match(candidate, expected)
    return {"precision": 100.0 * precision, "recall": 100.0 * recall, "f1": 100.0 * f1}


# --- everything at once -----------------------------------------------------------------

def score_all(prediction: str, reference: str, source: str, *, embedder: Any,
              cache_dir: Path) -> dict[str, float]:
    """Every score of `METRICS` for one sample; `embedder` is Lumen's `Embedder`."""
    return {
        "sari": sari(source, prediction, [reference]),
        "fkgl": fkgl(prediction, cache_dir),
        "sbert": sbert_cosine(prediction, reference, embedder),
        "token_f1": token_f1(prediction, reference),
        "bleu": bleu(prediction, reference),
        "rouge_l": rouge_l(prediction, reference),
        "bertscore_f1": bertscore(prediction, reference, embedder)["f1"],
    }
