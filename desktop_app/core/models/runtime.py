"""Running GGUF models through llama-cpp-python.

One `LlamaModel` per model file, shared by every role that uses that file (on a
small machine a second copy of the weights is memory nobody has).  Each call
renders the messages with the explicitly resolved chat template, checks that
prompt plus answer fit the context, and streams tokens to a callback with a
cancellation check per token.  llama-cpp-python keeps the KV state of the
previous call and reuses its longest common prefix; a RAM state cache extends
that to alternating prompts (two roles over one document), so a retry costs
only the tokens after the shared prefix.  Each `Generation` reports how many
prompt tokens llama.cpp actually evaluated, read from its own perf counters.
"""

from __future__ import annotations

import contextlib
import ctypes
import functools
import json
import logging
import sys
import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Iterator

from ..config import Paths, Settings
from ..errors import Cancelled, ContextOverflowError, ModelError
from ..progress import CancelToken, current_job, report
from .catalog import GENERATING_KINDS, ModelRegistry, ModelSpec
from .chat import ChatRenderer, Message, resolve_chat_template
from .cpu import LlamaBuild, llama_build
from .generation import Generation, TextModel, checked_json_reply, json_reply_limit
from .grammar import json_grammar
from .manage import hash_cache, require_verified

if TYPE_CHECKING:
    from .embedder import Embedder
    from .server import ServerModel

log = logging.getLogger(__name__)

TokenCallback = Callable[[str], None]


def _counted_ram_cache(llama_cpp: Any, capacity_bytes: int) -> Any:
    """llama-cpp-python's RAM cache, with every byte a saved state holds counted.

    Its own size counts only llama.cpp's state; each saved state also carries a copy of
    the scores (with prompt lookup, context × vocabulary floats; else one row, see
    ModelRuntime), so a 512 MB cache grew to several GB before this.
    """

    class CountedRAMCache(llama_cpp.LlamaRAMCache):
        @property
        def cache_size(self) -> int:
            return sum(state.llama_state_size + state.scores.nbytes + state.input_ids.nbytes
                       for state in self.cache_state.values())

    return CountedRAMCache(capacity_bytes=capacity_bytes)


def require_runnable_build() -> LlamaBuild:
    """The installed llama.cpp's build, if this CPU can run it; a clear error otherwise
    (instead of the process dying with "Illegal instruction" at the first token)."""
    build = llama_build()
    if build.missing:
        raise ModelError(
            f"Lumen's llama.cpp was built for CPU instructions this computer lacks "
            f"({', '.join(build.missing)}; {build.describe()}).",
            "Reinstall with 'make install LLAMA_CPU=baseline' (any x86-64 CPU), or use a "
            "release bundle built for older CPUs.")
    return build


_params_lock = threading.Lock()


@contextlib.contextmanager
def _model_params(llama_cpp: Any, *, use_extra_bufts: bool) -> Iterator[None]:
    """Load with llama.cpp's extra buffer types switched off when asked.

    llama-cpp-python's Llama() takes no such argument; it builds the parameters from
    llama_model_default_params() inside its constructor, so that one call is wrapped
    for the duration of the load (under a lock: loads in other threads wait)."""
    if use_extra_bufts:
        yield
        return
    module = llama_cpp.llama_cpp
    with _params_lock:
        original = module.llama_model_default_params

        def without_extra_bufts():
            params = original()
            params.use_extra_bufts = False
            return params
        module.llama_model_default_params = without_extra_bufts
        try:
            yield
        finally:
            module.llama_model_default_params = original


def _draft_model(settings: Settings) -> Any:
    """Prompt-lookup decoding's guesser when the setting asks for it (else None)."""
    if not settings.prompt_lookup_tokens:
        return None
    from llama_cpp.llama_speculative import LlamaPromptLookupDecoding

    return LlamaPromptLookupDecoding(num_pred_tokens=settings.prompt_lookup_tokens)


@functools.cache
def _strlen_address() -> int:
    libc = ctypes.cdll.msvcrt if sys.platform == "win32" else ctypes.CDLL(None)
    return ctypes.cast(libc.strlen, ctypes.c_void_p).value


class AbortFlag:
    """The cancel flag llama.cpp asks between the steps of its computation (a few hundred
    per token), read with no Python in the way: the callback is the C library's `strlen`
    over a two-byte buffer, which returns 1 once the first byte is set and 0 before; the
    C ABIs return a bool in the low byte of the same register.  A Python callback took the
    GIL at every step: within noise on a quiet interpreter, but generation ran at a third
    of its speed while another Python thread was busy, as the window's is while a reply
    streams (docs/BENCHMARKS.md)."""

    def __init__(self, llama_cpp: Any) -> None:
        self._buffer = ctypes.create_string_buffer(2)
        self.callback = llama_cpp.ggml_abort_callback(_strlen_address())
        self.data = ctypes.cast(self._buffer, ctypes.c_void_p)

    def raise_flag(self) -> None:
        self._buffer[0] = b"\x01"

    def lower(self) -> None:
        self._buffer[0] = b"\x00"

    @property
    def raised(self) -> bool:
        return self._buffer[0] == b"\x01"

    def reads_as_set(self) -> bool:
        """What llama.cpp sees: the callback called as C calls it."""
        return bool(self.callback(self.data.value))


class LlamaModel:
    """A loaded GGUF model.  Thread-safe: calls are serialised on one lock."""

    def __init__(self, spec: ModelSpec, path: Path, settings: Settings, sha256: str) -> None:
        import llama_cpp

        self.spec = spec
        self.path = path
        self.sha256 = sha256
        self.settings = settings
        self._lock = threading.Lock()
        self._holder = ""  # the job generating now, named for those waiting for it
        self._closed = False
        self._grammars: dict[str, Any] = {}
        self._llama_cpp = llama_cpp
        self.n_ctx = settings.context_size  # what a prompt and its answer may fill
        if spec.context_length:
            self.n_ctx = min(self.n_ctx, spec.context_length)
        self.abort_flag = AbortFlag(llama_cpp)
        self.llama = self._load(self._start_size())
        try:
            template = resolve_chat_template(self.llama.metadata.get("tokenizer.chat_template"),
                                             spec.chat_format or None, model_label=path.name,
                                             prefer_format=spec.prefer_chat_format)
            self.renderer = ChatRenderer(template, bos_token=self._token_text(self.llama.token_bos()),
                                         eos_token=self._token_text(self.llama.token_eos()),
                                         model_label=path.name)
        except BaseException:
            self.llama.close()
            raise

    def _start_size(self) -> int:
        """The context llama.cpp is created with: room for context_start_size tokens (never
        less than one prompt batch, so batches split as they would in the full context)."""
        start = self.settings.context_start_size
        if not start:
            return self.n_ctx
        return min(self.n_ctx, max(start, self.settings.batch_size))

    def _load(self, n_ctx: int) -> Any:
        """A llama.cpp context of `n_ctx` tokens over the model file.  The key-value cache
        (about 23 kB a token for the 135M model) is allocated whole when a context is made,
        so the context starts small and _make_room replaces it with a larger one when a
        prompt needs it; a text that fits gives the same tokens in either."""
        llama_cpp, settings, path = self._llama_cpp, self.settings, self.path
        threads = settings.effective_threads()
        build = require_runnable_build()
        draft = _draft_model(settings)
        try:
            with _model_params(llama_cpp, use_extra_bufts=not build.avoid_amx_repacking):
                llama = llama_cpp.Llama(
                    model_path=str(path), n_ctx=n_ctx, n_batch=min(settings.batch_size, self.n_ctx),
                    n_threads=threads, n_threads_batch=threads, seed=settings.seed,
                    n_gpu_layers=settings.gpu_layers, draft_model=draft,
                    # A draft model needs every position's scores; llama-cpp-python 0.3.36
                    # switches that on but sizes the scores for one batch unless told.
                    logits_all=draft is not None, verbose=False)
        except (ValueError, RuntimeError, OSError) as exc:
            raise ModelError(
                f"llama.cpp could not load the model file {path.name} ({exc}).",
                "The file may be damaged or of a newer format than this Lumen supports; "
                "run 'lumen models verify', or copy the file again.") from exc
        if draft is None:
            # llama-cpp-python 0.3.36 samples inside llama.cpp and writes `scores` (batch size
            # × vocabulary floats: 100 MB for SmolLM2) only with logits_all, for logprobs and
            # prompt lookup; every saved prompt state copied the unused array whole, and a
            # restored one filled it.  One row serves its bookkeeping (Lumen evaluates a
            # prompt's last token again after a restore, so no saved logits are read).
            import numpy as np

            llama.scores = np.zeros((1, llama.n_vocab()), dtype=np.single)
        # llama.cpp asks the flag between the steps of its computation, so a cancel stops a
        # prompt batch in milliseconds rather than at its end (a 512-token batch takes 2 s
        # on a 2-core workstation); the KV entries of the stopped batch are removed by
        # llama.cpp, and the next call is what it would have been.
        llama_cpp.llama_set_abort_callback(llama.ctx, self.abort_flag.callback,
                                           self.abort_flag.data)
        if settings.state_cache_mb and settings.reuse_prompt_state:
            llama.set_cache(_counted_ram_cache(llama_cpp, settings.state_cache_mb << 20))
        return llama

    def _make_room(self, needed: int) -> None:
        """A context of at least `needed` tokens (at most n_ctx): the context doubles until
        it holds them.  The saved prompt states belong to the old context and go with it."""
        held = size = self.llama.n_ctx()
        if needed <= size:
            return
        while size < needed:
            size *= 2
        self.llama.close()
        self.llama = None
        try:
            self.llama = self._load(min(size, self.n_ctx))
        except ModelError as exc:
            self.llama = self._load(held)
            raise ModelError(
                f"Lumen could not make room for {needed} word pieces at once with "
                f"{self.spec.name}: {exc.message}",
                "Close other programs, or lower 'Longest text a model reads at once' in "
                "Settings so long texts are read in parts.") from exc

    def _token_text(self, token: int) -> str:
        if token < 0:
            return ""
        return self.llama.detokenize([token], special=True).decode("utf-8", "replace")

    @property
    def chat_template_source(self) -> str:
        return self.renderer.chat_template.source

    def render(self, messages: list[Message]) -> str:
        return self.renderer.render(messages)

    def _tokenize(self, text: str) -> list[int]:
        # The template writes any BOS itself, so llama.cpp must not add another.
        return self.llama.tokenize(text.encode("utf-8"), add_bos=False, special=True)

    def tokenize(self, text: str) -> list[int]:
        with self._turn():
            return self._tokenize(text)

    def count_tokens(self, messages: list[Message]) -> int:
        return len(self.tokenize(self.render(messages)))

    def _prime(self, tokens: list[int], cancel: CancelToken | None = None) -> int:
        """Bring llama.cpp's state to exactly `tokens[:-1]`, reusing what matches; the
        prompt tokens left to evaluate (the last one included).

        llama.cpp's batched and one-token kernels round differently, so the logits of
        the last prompt token depend on how it was evaluated.  Evaluating it on its own
        in every case (fresh prompt, reused prefix, or a state restored from the cache)
        makes temperature 0 give the same answer to the same prompt every time.

        The prompt is evaluated one batch (n_batch tokens) at a time, as llama.eval would,
        with a cancel check between batches; within a batch, the abort callback stops it.
        """
        llama = self.llama
        target = len(tokens) - 1
        if not self.settings.reuse_prompt_state:
            llama.reset()
        reused = llama.longest_token_prefix(llama._input_ids.tolist(), tokens)
        if llama.cache is not None and self.settings.reuse_prompt_state:
            try:
                item = llama.cache[tokens]
            except KeyError:
                item = None
            if item is not None:
                # A saved state's input_ids is llama-cpp-python's whole token buffer: past
                # its n_tokens lie stale tokens of older, longer prompts, which may match
                # this one.  Counting them put the next evaluation past the state's end,
                # and llama_decode refused the batch (-1; found replaying consultations).
                cached = llama.longest_token_prefix(item.input_ids[:item.n_tokens].tolist(),
                                                    tokens)
                if cached > reused:
                    llama.load_state(item)
                    reused = cached
        reused = min(reused, target)
        llama.n_tokens = reused
        pending = tokens[reused:target]
        llama.eval(pending[:llama.n_batch])  # also drops any KV state past `reused`
        for start in range(llama.n_batch, len(pending), llama.n_batch):
            if cancel is not None:
                cancel.raise_if_cancelled()
            llama.eval(pending[start:start + llama.n_batch])
        return len(tokens) - reused

    def _grammar(self, schema: dict) -> Any:
        key = json.dumps(schema, sort_keys=True)
        if key not in self._grammars:
            # Built from the schema as written: the grammar emits properties in their order,
            # which protocols such as MedJudge's fix (analysis first, labels after).
            self._grammars[key] = self._llama_cpp.LlamaGrammar.from_string(
                json_grammar(schema), verbose=False)
        return self._grammars[key]

    def generate(self, messages: list[Message], *, max_tokens: int | None = None,
                 temperature: float | None = None, json_schema: dict | None = None,
                 stop: tuple[str, ...] = (), on_token: TokenCallback | None = None,
                 cancel: CancelToken | None = None,
                 stop_when: Callable[[str], bool] | None = None) -> Generation:
        """`stop_when(text so far)` returning True ends the reply there, with the finish
        reason "stopped" (a reply that has already failed, going round in circles or
        inventing a dose, need not run on to its token limit)."""
        max_tokens = max_tokens or self.settings.max_answer_tokens
        temperature = self.settings.temperature if temperature is None else temperature
        with self._turn(cancel):
            self.abort_flag.lower()
            listening = (cancel.listening(self.abort_flag.raise_flag) if cancel is not None
                         else contextlib.nullcontext())
            try:
                with listening:
                    return self._generate_locked(messages, max_tokens, temperature, json_schema,
                                                 stop, on_token, cancel, stop_when)
            except RuntimeError as exc:  # "llama_decode returned 2": stopped by the cancel
                if cancel is not None and cancel.cancelled:
                    raise Cancelled() from exc
                raise
            finally:
                self.abort_flag.lower()
                if self._closed:
                    self._free()

    @contextlib.contextmanager
    def _turn(self, cancel: CancelToken | None = None) -> Iterator[None]:
        """Hold the model for one call: llama.cpp serves one caller at a time."""
        self._wait_for_turn(cancel)
        try:
            if self._closed:
                raise ModelError(f"The model {self.spec.name} was unloaded (its settings changed).",
                                 "Start the task again.")
            yield
        finally:
            self._holder = ""
            self._lock.release()

    def _wait_for_turn(self, cancel: CancelToken | None) -> None:
        """Take the model; while another job holds it, say so through this job's progress
        and stay cancellable (a model generates for one caller at a time)."""
        me = current_job()
        if not self._lock.acquire(blocking=False):
            holder = self._holder or "another task"
            report(me.progress if me else None, 0, 0, f"Waiting for the model ({holder} is running)")
            tokens = [t for t in (cancel, me.cancel if me else None) if t is not None]
            while not self._lock.acquire(timeout=0.1):
                for token in tokens:
                    token.raise_if_cancelled()
            report(me.progress if me else None, 0, 0, f"The model is free; {me.name if me else 'this task'} goes on")
        self._holder = me.name if me else ""

    def _generate_locked(self, messages, max_tokens, temperature, json_schema, stop, on_token,
                         cancel, stop_when=None) -> Generation:
        settings = self.settings
        cpp = self._llama_cpp
        pieces: list[str] = []
        finish = "stop"
        tokens = self._tokenize(self.render(messages))
        if len(tokens) + max_tokens > self.n_ctx:
            raise ContextOverflowError(len(tokens), max_tokens, self.n_ctx)
        self._make_room(len(tokens) + max_tokens)
        grammar = self._grammar(json_schema) if json_schema is not None else None
        if cancel is not None:
            cancel.raise_if_cancelled()
        cpp.llama_perf_context_reset(self.llama.ctx)
        started = time.perf_counter()
        to_evaluate = self._prime(tokens, cancel)
        stream = self.llama.create_completion(
            prompt=tokens, max_tokens=max_tokens, temperature=temperature,
            top_p=settings.top_p, seed=settings.seed, grammar=grammar,
            stop=list(self.renderer.stop) + list(stop), stream=True)
        try:
            for chunk in stream:
                if cancel is not None and cancel.cancelled:
                    raise Cancelled()
                choice = chunk["choices"][0]
                if choice["text"]:
                    pieces.append(choice["text"])
                    if on_token is not None:
                        on_token(choice["text"])
                finish = choice.get("finish_reason") or finish
                if stop_when is not None and choice["text"] and stop_when("".join(pieces)):
                    finish = "stopped"
                    break
        finally:
            stream.close()
        seconds = time.perf_counter() - started
        perf = cpp.llama_perf_context(self.llama.ctx)
        # The KV cache now holds the prompt plus every generated token that was fed
        # back; the last sampled token (end-of-turn, or the one that hit max_tokens)
        # never is.  llama.cpp counts one-token decodes as "eval", so generated tokens
        # and a one-token prompt remainder both land there.
        fed_back = max(0, self.llama.n_tokens - len(tokens))
        text = "".join(pieces)
        completion_tokens = fed_back + (1 if finish in ("length", "stopped") else 0)
        evaluated = perf.n_p_eval + max(0, perf.n_eval - fed_back)
        if self.llama.draft_model is not None:
            # With prompt lookup, guesses checked in the last step stay in the state whether
            # or not they were written, and llama.cpp counts every checked guess as prompt
            # evaluation: the written text's tokens and the prompt's own are counted instead.
            completion_tokens = len(self._tokenize(text))
            evaluated = to_evaluate
        return Generation(text=text, finish_reason=finish, prompt_tokens=len(tokens),
                          prompt_tokens_evaluated=int(evaluated),
                          completion_tokens=completion_tokens, seconds=seconds,
                          model_id=self.spec.id, model_sha256=self.sha256, max_tokens=max_tokens)

    def generate_json(self, messages: list[Message], schema: dict, *,
                      max_tokens: int | None = None, **kwargs: Any) -> tuple[Any, Generation]:
        """Generate under a grammar built from a JSON schema; parse and validate the reply."""
        generation = self.generate(messages, json_schema=schema,
                                   max_tokens=json_reply_limit(schema, max_tokens), **kwargs)
        return checked_json_reply(generation, schema), generation

    def identity(self) -> dict[str, Any]:
        """What a trace records of this model."""
        return {"id": self.spec.id, "sha256": self.sha256}

    def _free(self) -> None:
        if getattr(self, "llama", None) is not None:
            self.llama.close()
            self.llama = None

    def close(self) -> None:
        """Unload now if idle; a call in progress finishes and unloads it afterwards."""
        self._closed = True
        if self._lock.acquire(blocking=False):
            try:
                self._free()
            finally:
                self._lock.release()


ApiKeyLookup = Callable[[ModelSpec], str]


class ModelRuntime:
    """Hands out loaded models by role; one instance per model file."""

    def __init__(self, paths: Paths, settings: Settings,
                 api_keys: ApiKeyLookup | None = None) -> None:
        self.paths = paths
        self.settings = settings
        self.registry = ModelRegistry(paths, settings)
        # A server model's API key, from the keyring or the encrypted store (Session).
        self.api_keys = api_keys
        self._lock = threading.Lock()
        self._closed = False
        self._models: dict[Path | str, Any] = {}
        self._embedders: dict[Path, Embedder] = {}

    def _check_open(self) -> None:
        if self._closed:
            raise ModelError("The models were unloaded because the settings changed.",
                             "Start the task again.")

    def _checked_path(self, spec: ModelSpec) -> tuple[Path, str]:
        require_verified(self.registry, spec, self.paths, self.settings.verify_hashes_on_load)
        item = spec.primary_file()
        path = self.registry.file_path(spec, item).resolve()
        return path, item.sha256 or hash_cache(self.paths).sha256(path)

    def model(self, model_id: str) -> TextModel:
        spec = self.registry.get(model_id)
        if spec.kind not in GENERATING_KINDS:
            raise ModelError(f"The model '{model_id}' cannot generate text.",
                             "Choose a GGUF or server model for this role on the Models page.")
        if spec.is_server:
            return self._server_model(spec)
        with self._lock:
            self._check_open()
            path, sha256 = self._checked_path(spec)
            if path not in self._models:
                log.info("Loading model %s", spec.id)
                self._models[path] = LlamaModel(spec, path, self.settings, sha256)
            return self._models[path]

    def _server_model(self, spec: ModelSpec) -> "ServerModel":
        from .server import ServerModel

        key = f"server:{spec.id}"
        with self._lock:
            self._check_open()
            if key not in self._models:
                api_key = ""
                if spec.api_key:
                    if self.api_keys is None:
                        raise ModelError(f"The API key of the model server '{spec.id}' is in "
                                         "Lumen's database, which is not open.",
                                         "Unlock Lumen and try again.")
                    api_key = self.api_keys(spec)
                self._models[key] = ServerModel(spec, self.settings, api_key)
            return self._models[key]

    def for_role(self, role: str) -> TextModel:
        return self.model(self.registry.for_role(role).id)

    def all_on_servers(self, roles: tuple[str, ...]) -> bool:
        """True when every one of these roles uses a server model (parallel replay)."""
        return all(self.registry.for_role(role).is_server for role in roles)

    def embedder(self) -> Embedder:
        spec = self.registry.for_role("embedder")
        with self._lock:
            self._check_open()
            require_verified(self.registry, spec, self.paths, self.settings.verify_hashes_on_load)
            model_path = self.registry.file_path(spec, spec.file("model.onnx")).resolve()
            if model_path not in self._embedders:
                from .embedder import Embedder  # numpy and onnxruntime: when first asked

                self._embedders[model_path] = Embedder(
                    model_path, self.registry.file_path(spec, spec.file("tokenizer.json")),
                    threads=self.settings.effective_threads(),
                    batch_size=self.settings.embedding_batch_size,
                    tokens_per_step=self.settings.embedding_tokens_per_step,
                    max_length=spec.max_sequence_length or 256,
                    expected_dimensions=spec.dimensions or None,
                    cache_dir=self.paths.cache_dir)
            return self._embedders[model_path]

    def loaded(self) -> list[LlamaModel]:
        with self._lock:
            return list(self._models.values())

    def close(self) -> None:
        """Unload every model; calls in progress finish first, new calls are refused."""
        with self._lock:
            self._closed = True
            for model in self._models.values():
                model.close()
            self._models.clear()
            self._embedders.clear()
