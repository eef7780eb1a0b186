"""Sentence embeddings with onnxruntime and a `tokenizers` WordPiece tokenizer:
batched, mean-pooled over the attention mask, L2-normalised (the recipe the
sentence-transformers MiniLM models were trained with)."""

from __future__ import annotations

import sys
import threading
from collections import OrderedDict
from pathlib import Path

import numpy as np

from ..errors import ModelError
from ..progress import CancelToken, ProgressCallback, report

REQUIRED_INPUTS = {"input_ids", "attention_mask"}
# Sentences of different lengths and kinds, run through a rewritten copy of the model and
# the original once, when the copy is made: the copy is used only if every vector is the
# same to the bit (onnx_rows).
PROBES = ("Take one tablet twice a day with food.",
          "Call 999 if you have chest pain, trouble breathing or weakness on one side.",
          "Metoprolol succinate 25 mg PO daily; furosemide 40 mg IV BID x2 days, then PO.",
          "a")
RECENT_TEXTS = 4096  # vectors kept by embed_recent (about 6 MB at 384 dimensions)
TOKENISED_AT_ONCE = 2048  # texts; the steps are grouped by length within each window
M_MMAP_THRESHOLD = -3  # glibc's mallopt parameter
LARGE_BUFFER = 128 * 1024


def give_large_buffers_back() -> None:
    """Each embedding call allocates and frees buffers of megabytes.  glibc's malloc, after
    the first such buffer is freed, raises its threshold for giving memory straight back
    to the system and keeps later ones in the process heap, where they stay after the
    call (about 45 MB held after a cold `lumen ask`, docs/BENCHMARKS.md).  Fixing the
    threshold at glibc's own starting value keeps every large buffer its own mapping,
    returned when freed.  Elsewhere (another C library, Windows) this does nothing."""
    import ctypes

    if not sys.platform.startswith("linux"):
        return
    try:
        ctypes.CDLL("libc.so.6").mallopt(M_MMAP_THRESHOLD, LARGE_BUFFER)
    except (OSError, AttributeError):  # not glibc (ctypes.util.find_library would start ldconfig)
        pass


class Embedder:
    def __init__(self, model_path: Path, tokenizer_path: Path, *, threads: int = 0,
                 batch_size: int = 64, max_length: int = 256, tokens_per_step: int = 512,
                 expected_dimensions: int | None = None, cache_dir: Path | None = None) -> None:
        import onnxruntime
        from tokenizers import Tokenizer

        # ORT_DISABLE_TELEMETRY (core/offline.py) already stops onnxruntime's native
        # telemetry for the process; this also drops its non-essential events, in case a
        # host process imported onnxruntime before Lumen could set the variable.
        disable_events = getattr(onnxruntime, "disable_telemetry_events", None)
        if disable_events is not None:
            disable_events()
        give_large_buffers_back()
        self.model_path = Path(model_path)
        self.batch_size = max(1, batch_size)
        self.tokens_per_step = max(1, tokens_per_step)
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
            self.tokenizer = Tokenizer.from_file(str(tokenizer_path))
        except Exception as exc:
            raise ModelError(f"The tokenizer file {Path(tokenizer_path).name} cannot be read ({exc}).",
                             fix) from exc
        self.tokenizer.enable_truncation(max_length=max_length)
        self.tokenizer.no_padding()  # each step is padded to its own longest text (_run)
        # A rows-first copy checked when it was made is loaded instead of the original;
        # one made now is checked against the original first (onnx_rows).
        copy, made_now = self._rows_first_copy(cache_dir)
        self.session = None
        self.session_path = self.model_path  # the file the session runs: the model or its copy
        if copy is not None and not made_now:
            self.session = self._load_copy(onnxruntime, options, copy)
            if self.session is not None:
                self.session_path = copy
        if self.session is None:
            try:
                self.session = onnxruntime.InferenceSession(
                    str(self.model_path), sess_options=options,
                    providers=["CPUExecutionProvider"])
            except Exception as exc:  # onnxruntime raises its own exception types
                raise ModelError(f"{self.model_path.name} is not a valid ONNX model ({exc}).",
                                 fix) from exc
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
        if copy is not None and made_now:
            checked = self._load_copy(onnxruntime, options, copy)
            if checked is not None and self._same_vectors(checked):
                self.session, self.session_path = checked, copy
            else:
                from . import onnx_rows

                onnx_rows.refuse(copy)

    def _rows_first_copy(self, cache_dir: Path | None) -> tuple[Path | None, bool]:
        if cache_dir is None:
            return None, False
        from . import onnx_rows

        try:
            return onnx_rows.rows_first_copy(self.model_path, Path(cache_dir))
        except (OSError, onnx_rows.WireFormatError):
            return None, False  # the original still loads, or says what is wrong with it

    @staticmethod
    def _load_copy(onnxruntime, options, copy: Path):
        try:
            return onnxruntime.InferenceSession(str(copy), sess_options=options,
                                                providers=["CPUExecutionProvider"])
        except Exception:  # onnxruntime's own exception types: a damaged copy
            from . import onnx_rows

            onnx_rows.refuse(copy)
            return None

    def _same_vectors(self, session) -> bool:
        try:
            return all(np.array_equal(self._run([encoding], session), self._run([encoding]))
                       for encoding in self.tokenizer.encode_batch(list(PROBES)))
        except Exception:  # onnxruntime's own exception types
            return False

    def _feed(self, encodings: list) -> dict[str, np.ndarray]:
        """The session's inputs for tokenised texts, padded with [PAD] (id 0) to the longest."""
        length = max(len(e.ids) for e in encodings)
        ids = np.zeros((len(encodings), length), dtype=np.int64)
        mask = np.zeros_like(ids)
        types = np.zeros_like(ids)
        for row, encoding in enumerate(encodings):
            used = len(encoding.ids)
            ids[row, :used] = encoding.ids
            mask[row, :used] = encoding.attention_mask
            types[row, :used] = encoding.type_ids
        feed = {"input_ids": ids, "attention_mask": mask}
        if "token_type_ids" in self._input_names:
            feed["token_type_ids"] = types
        return feed

    def hidden_states(self, texts: list[str]) -> tuple[np.ndarray, list]:
        """The model's last hidden state for `texts` read in one step (texts × longest ×
        dimensions, padding rows past each text's own length), and their encodings."""
        encodings = self.tokenizer.encode_batch(texts)
        feed = self._feed(encodings)
        with self._lock:
            return self.session.run(None, feed)[0], encodings

    def _run(self, encodings: list, session=None) -> np.ndarray:
        """Unit vectors for tokenised texts: mean-pooled over their tokens, L2-normalised."""
        feed = self._feed(encodings)
        with self._lock:
            hidden = (session or self.session).run(None, feed)[0]
        mask = feed["attention_mask"]
        weights = mask[..., None].astype(np.float32)
        pooled = (hidden * weights).sum(axis=1) / np.clip(weights.sum(axis=1), 1e-9, None)
        norms = np.linalg.norm(pooled, axis=1, keepdims=True)
        return (pooled / np.clip(norms, 1e-12, None)).astype(np.float32)

    def steps(self, lengths: list[int]) -> list[list[int]]:
        """The texts' indices grouped into steps: texts of similar length together (less
        padding), at most `batch_size` texts and `tokens_per_step` padded word pieces a step.
        A step's memory grows with its padded size (attention with its square), so a
        batch of long texts is cut into several where one of short texts is not."""
        order = sorted(range(len(lengths)), key=lambda i: lengths[i])
        groups: list[list[int]] = []
        for index in order:
            group = groups[-1] if groups else None
            if (group is None or len(group) >= self.batch_size
                    or (len(group) + 1) * lengths[index] > self.tokens_per_step):
                groups.append([index])
            else:
                group.append(index)
        return groups

    def embed(self, texts: list[str], progress: ProgressCallback = None,
              cancel: CancelToken | None = None) -> np.ndarray:
        """Unit vectors, one row per text, in the order given."""
        if not texts:
            return np.zeros((0, self.dimensions or 0), dtype=np.float32)
        result: np.ndarray | None = None
        done = 0
        # Tokenised a window at a time, so a library of 100,000 passages is never held as
        # encodings all at once, and a cancel is heard before the next window.
        for window in range(0, len(texts), TOKENISED_AT_ONCE):
            if cancel is not None:
                cancel.raise_if_cancelled()
            encodings = self.tokenizer.encode_batch(texts[window:window + TOKENISED_AT_ONCE])
            for group in self.steps([len(e.ids) for e in encodings]):
                if cancel is not None:
                    cancel.raise_if_cancelled()
                vectors = self._run([encodings[i] for i in group])
                if result is None:
                    result = np.empty((len(texts), vectors.shape[1]), dtype=np.float32)
                result[[window + i for i in group]] = vectors
                done += len(group)
                report(progress, done, len(texts), "Embedding")
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
