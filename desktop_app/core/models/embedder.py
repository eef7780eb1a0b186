"""Sentence embeddings with onnxruntime and a `tokenizers` WordPiece tokenizer:
batched, mean-pooled over the attention mask, L2-normalised (the recipe the
sentence-transformers MiniLM models were trained with)."""

from __future__ import annotations

import threading
from collections import OrderedDict
from pathlib import Path

import numpy as np

from ..errors import ModelError
from ..progress import CancelToken, ProgressCallback, report

REQUIRED_INPUTS = {"input_ids", "attention_mask"}
RECENT_TEXTS = 4096  # vectors kept by embed_recent (about 6 MB at 384 dimensions)


class Embedder:
    def __init__(self, model_path: Path, tokenizer_path: Path, *, threads: int = 0,
                 batch_size: int = 64, max_length: int = 256,
                 expected_dimensions: int | None = None) -> None:
        import onnxruntime
        from tokenizers import Tokenizer

        # ORT_DISABLE_TELEMETRY (core/offline.py) already stops onnxruntime's native
        # telemetry for the process; this also drops its non-essential events, in case a
        # host process imported onnxruntime before Lumen could set the variable.
        disable_events = getattr(onnxruntime, "disable_telemetry_events", None)
        if disable_events is not None:
            disable_events()
        self.model_path = Path(model_path)
        self.batch_size = max(1, batch_size)
        self._lock = threading.Lock()
        self._recent: OrderedDict[str, np.ndarray] = OrderedDict()
        self._recent_lock = threading.Lock()
        fix = ("Lumen's embedder must be a sentence-embedding ONNX model with its tokenizer.json; "
               "run 'lumen models provision' to restore the default one.")
        options = onnxruntime.SessionOptions()
        options.intra_op_num_threads = threads
        options.inter_op_num_threads = 1
        options.log_severity_level = 3
        # Constant folding turns the int8 model's quantised weights into float32 copies at
        # load: 120 MB more memory and 0.2 s more to start, to save about 15 ms on each
        # call.  A workstation runs few calls and shares its memory, so the weights stay as
        # shipped.  Unfolded, each call widens them into temporary buffers, which
        # onnxruntime's arena would keep for the life of the process: without the arena
        # they go back at once (a cold `lumen ask` peaks 40 MB lower with the model, 75 MB
        # without: docs/BENCHMARKS.md).
        options.add_session_config_entry("optimization.disable_specified_optimizers",
                                         "ConstantFolding")
        options.enable_cpu_mem_arena = False
        try:
            self.session = onnxruntime.InferenceSession(
                str(self.model_path), sess_options=options, providers=["CPUExecutionProvider"])
        except Exception as exc:  # onnxruntime raises its own exception types for bad files
            raise ModelError(f"{self.model_path.name} is not a valid ONNX model ({exc}).", fix) from exc
        inputs = {i.name for i in self.session.get_inputs()}
        outputs = self.session.get_outputs()
        if not REQUIRED_INPUTS <= inputs or not outputs or len(outputs[0].shape) != 3:
            raise ModelError(
                f"{self.model_path.name} is an ONNX model but not a sentence embedder "
                f"(inputs {sorted(inputs)}; a token-embedding output is needed).", fix)
        self._input_names = inputs
        self.dimensions = outputs[0].shape[2] if isinstance(outputs[0].shape[2], int) else None
        if expected_dimensions and self.dimensions and self.dimensions != expected_dimensions:
            raise ModelError(f"{self.model_path.name} makes {self.dimensions}-dimensional vectors, "
                             f"not the {expected_dimensions} expected.", fix)
        try:
            self.tokenizer = Tokenizer.from_file(str(tokenizer_path))
        except Exception as exc:
            raise ModelError(f"The tokenizer file {Path(tokenizer_path).name} cannot be read ({exc}).",
                             fix) from exc
        self.tokenizer.enable_truncation(max_length=max_length)
        self.tokenizer.enable_padding()

    def _run_batch(self, texts: list[str]) -> np.ndarray:
        encodings = self.tokenizer.encode_batch(texts)
        ids = np.asarray([e.ids for e in encodings], dtype=np.int64)
        mask = np.asarray([e.attention_mask for e in encodings], dtype=np.int64)
        feed = {"input_ids": ids, "attention_mask": mask}
        if "token_type_ids" in self._input_names:
            feed["token_type_ids"] = np.asarray([e.type_ids for e in encodings], dtype=np.int64)
        with self._lock:
            hidden = self.session.run(None, feed)[0]
        weights = mask[..., None].astype(np.float32)
        pooled = (hidden * weights).sum(axis=1) / np.clip(weights.sum(axis=1), 1e-9, None)
        norms = np.linalg.norm(pooled, axis=1, keepdims=True)
        return (pooled / np.clip(norms, 1e-12, None)).astype(np.float32)

    def embed(self, texts: list[str], progress: ProgressCallback = None,
              cancel: CancelToken | None = None) -> np.ndarray:
        """Unit vectors, one row per text, in the order given."""
        if not texts:
            return np.zeros((0, self.dimensions or 0), dtype=np.float32)
        # Batching texts of similar length wastes less work on padding.
        order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
        result: np.ndarray | None = None
        for start in range(0, len(order), self.batch_size):
            if cancel is not None:
                cancel.raise_if_cancelled()
            chunk = order[start:start + self.batch_size]
            vectors = self._run_batch([texts[i] for i in chunk])
            if result is None:
                result = np.empty((len(texts), vectors.shape[1]), dtype=np.float32)
            result[chunk] = vectors
            report(progress, min(start + self.batch_size, len(texts)), len(texts), "Embedding")
        assert result is not None
        return result

    def embed_one(self, text: str) -> np.ndarray:
        return self.embed([text])[0]

    def embed_recent(self, texts: list[str]) -> np.ndarray:
        """As `embed`, remembering the vectors of the last RECENT_TEXTS texts in memory, so
        the lines of a summary asked about again are not embedded again."""
        if not texts:
            return np.zeros((0, self.dimensions or 0), dtype=np.float32)
        with self._recent_lock:
            missing = list(dict.fromkeys(t for t in texts if t not in self._recent))
            if missing:
                for text, vector in zip(missing, self.embed(missing)):
                    self._recent[text] = vector
            found = np.stack([self._recent[t] for t in texts])
            for text in texts:
                self._recent.move_to_end(text)
            while len(self._recent) > RECENT_TEXTS:
                self._recent.popitem(last=False)
        return found


def cosine(a: np.ndarray, b: np.ndarray) -> float:
    """Cosine of two vectors (the embedder's are unit length already)."""
    denominator = float(np.linalg.norm(a) * np.linalg.norm(b))
    return float(np.dot(a, b) / denominator) if denominator else 0.0
