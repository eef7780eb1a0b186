"""Models on an inference server IT runs on the clinical network (issue #17).

llama.cpp's `llama-server`, vLLM, Ollama and llama-cpp-python's own server all speak
OpenAI's chat-completions API.  A `ServerModel` does what a `LlamaModel` does (the
same `generate`, `generate_json`, `tokenize`, `count_tokens`, `n_ctx`), over HTTP:

- replies stream (server-sent events) to the same token callback, and a cancel or a
  `stop_when` closes the connection, which ends the generation on the server;
- structured output goes through the server's own option (`response_format` with a
  JSON schema), so judges and rubric grammars keep working; the reply is checked
  against the schema here all the same;
- llama-server is asked to keep the prompt in its cache (`cache_prompt`), so a retry
  over the same summary evaluates only the new tokens, as the local state cache does;
- the network guard (core/offline.py) lets exactly this server's host and port through
  and writes each connection to the audit log; the connection never uses a proxy, and
  https is checked against the CA bundle IT provides, or the system's certificates.

The servers differ in small ways, learnt from each one's `/v1/models` answer
(`owned_by`): how to ask for a JSON schema, where to count tokens, where the context
length is said.  Where a server cannot count tokens (Ollama), counts are estimated
generously from the text's length.
"""

from __future__ import annotations

import json
import logging
import ssl
import threading
import time
from dataclasses import dataclass
from typing import Any, Callable
from urllib.parse import urlsplit, urlunsplit

from ..config import Settings
from ..errors import (Cancelled, ContextOverflowError, LumenError, ModelError,
                      OfflineViolation, ServerError)
from ..progress import CancelToken
from .catalog import ModelSpec
from .chat import Message
from .generation import Generation, checked_json_reply, json_reply_limit

log = logging.getLogger(__name__)

TokenCallback = Callable[[str], None]

# Tokens a chat template adds around each message (role markers, separators) and before
# the reply, where a server counts only text: generous for ChatML, Llama 3, Phi-3, Gemma.
MESSAGE_OVERHEAD_TOKENS = 8
REPLY_PRIMER_TOKENS = 8
# Where a server cannot count at all: one token per 3 bytes of UTF-8, above what English
# and clinical text need with any common tokenizer (about 4 bytes a token).
BYTES_PER_TOKEN_ESTIMATE = 3
# A streamed reply that ends with no finish reason was cut short (llama-cpp-python's server
# by default drops a reply when the next request arrives): asked again this many times,
# then an error; never taken as a short answer.
INTERRUPTED_REPLY_RETRIES = 1
# What to tell IT when a server of a kind is added (the window and `models add-server`).
SERVER_NOTES = {
    "llama-cpp-python": (
        "llama-cpp-python's server drops a streamed reply when the next request arrives "
        "unless it was started with --interrupt_requests False: Lumen asks once more, then "
        "stops with an error. Start it as: python -m llama_cpp.server --model MODEL.gguf "
        "--host 0.0.0.0 --port 8443 --interrupt_requests False")}
CONNECT_TIMEOUT_S = 10.0
SERVER_KINDS = ("llama-server", "llama-cpp-python", "vllm", "openai")
_OWNERS = {"llamacpp": "llama-server", "me": "llama-cpp-python", "vllm": "vllm"}


@dataclass(frozen=True)
class ServerAddress:
    """A server's base URL, split: `base` ends in /v1; `root` is scheme://host:port."""

    base: str
    root: str
    scheme: str
    host: str
    port: int

    @classmethod
    def parse(cls, url: str) -> "ServerAddress":
        parts = urlsplit(url.strip())
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ServerError(f"'{url}' is not a server address Lumen can use.",
                              "Give the server's URL, for example http://llm.hospital.local:8080 "
                              "or https://10.20.0.5:8443/v1.")
        if parts.username or parts.password:
            raise ServerError("A server address must not carry a user name or password.",
                              "Give the API key with --api-key-env or --api-key-stdin; it is "
                              "kept in the keyring or the encrypted database.")
        try:
            port = parts.port or (443 if parts.scheme == "https" else 80)
        except ValueError:
            raise ServerError(f"'{url}' has an invalid port.", "Use a port from 1 to 65535.") from None
        path = parts.path.rstrip("/")
        if not path.endswith("/v1"):
            path += "/v1"
        host = parts.hostname
        netloc = f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
        root = urlunsplit((parts.scheme, netloc, "", "", ""))
        return cls(root + path, root, parts.scheme, host, port)


def _tls(scheme: str, ca_bundle: str) -> ssl.SSLContext | bool:
    if scheme != "https":
        return False
    try:
        # The system's certificates unless IT gives the clinical network's own CA.
        return ssl.create_default_context(cafile=ca_bundle or None)
    except (OSError, ssl.SSLError) as exc:
        raise ServerError(f"The CA bundle {ca_bundle} cannot be read ({exc}).",
                          "Give the PEM file of the certificates that signed the server's "
                          "certificate (ask IT).") from None


class ServerClient:
    """HTTP to one server: never through a proxy, with the guard's permission."""

    def __init__(self, url: str, *, ca_bundle: str = "", api_key: str = "",
                 timeout_s: float = 120.0, connections: int = 4) -> None:
        import httpx

        from .. import offline

        self.address = ServerAddress.parse(url)
        verify = _tls(self.address.scheme, ca_bundle)
        try:
            offline.allow_endpoint(self.address.base, self.address.host, self.address.port)
        except OfflineViolation as exc:
            raise ServerError(str(exc), "Ask IT to add the server to the allowlist file, or "
                                       "choose another model for this role.") from None
        headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self._httpx = httpx
        self._closed = False
        self.client = httpx.Client(
            base_url=self.address.root, headers=headers, verify=verify,
            trust_env=False,  # no proxy, no .netrc: straight to the configured server
            timeout=httpx.Timeout(timeout_s, connect=CONNECT_TIMEOUT_S),
            limits=httpx.Limits(max_connections=max(1, connections) + 1))

    def path(self, name: str) -> str:
        """A path under the /v1 base (`name` without a leading slash)."""
        return self.address.base[len(self.address.root):] + "/" + name

    def _failure(self, exc: Exception) -> ModelError:
        httpx, url = self._httpx, self.address.base
        if isinstance(exc, (httpx.ConnectError, httpx.ConnectTimeout)):
            from .. import offline

            offline.connection_failed(url)  # audited as failed, not as connected
        if "works offline and refused" in str(exc):  # the network guard, inside httpcore
            return ServerError(f"Lumen's network guard refused a connection while using the "
                               f"model server {url} ({exc}).",
                               "Only the configured server's host and port are allowed; check "
                               "that the server does not redirect elsewhere.")
        if isinstance(exc, httpx.ConnectError) and "CERTIFICATE" in str(exc).upper():
            return ServerError(f"The model server {url} has a certificate this workstation "
                               "does not trust.", "Add the model server again with IT's CA "
                               "bundle (--ca-bundle FILE).")
        if isinstance(exc, httpx.TimeoutException):
            return ServerError(f"The model server {url} did not answer in time.",
                               "Check that it runs and is not overloaded, or raise 'Model server "
                               "timeout' in Settings (Generation).")
        return ServerError(f"Lumen cannot reach the model server {url} ({type(exc).__name__}).",
                           "Check that the server runs and that this workstation may reach it; "
                           "'lumen doctor' checks every server.")

    @staticmethod
    def _refusal(response: Any, url: str) -> ModelError:
        # Only the status and the server's error type: a validation error may echo the
        # request, and the request holds patient text.
        kind = ""
        try:
            error = response.json().get("error")
            if isinstance(error, dict):
                kind = str(error.get("type") or error.get("code") or "")[:60]
        except (ValueError, AttributeError):
            pass
        if response.status_code in (401, 403):
            return ServerError(f"The model server {url} refused Lumen's API key "
                               f"(HTTP {response.status_code}).",
                               "Add the server again with the right key (--api-key-env or "
                               "--api-key-stdin).")
        if response.status_code == 404:
            return ServerError(f"The model server {url} does not know the model asked for, or "
                               "is not OpenAI-compatible (HTTP 404).",
                               "Check the model's name with 'lumen doctor'.")
        return ServerError(f"The model server {url} refused the request (HTTP "
                           f"{response.status_code}{', ' + kind if kind else ''}).",
                           "Its own log says why; a prompt longer than its context is a "
                           "common cause.")

    def get(self, name: str, *, root: bool = False) -> Any:
        try:
            response = self.client.get(("/" + name) if root else self.path(name))
        except self._httpx.HTTPError as exc:
            raise self._failure(exc) from None
        if response.status_code != 200:
            raise self._refusal(response, self.address.base)
        return response.json()

    def post(self, name: str, body: dict, *, root: bool = False) -> Any:
        try:
            response = self.client.post(("/" + name) if root else self.path(name), json=body)
        except self._httpx.HTTPError as exc:
            raise self._failure(exc) from None
        if response.status_code != 200:
            raise self._refusal(response, self.address.base)
        return response.json()

    def stream(self, name: str, body: dict):
        """The server-sent events of one streamed reply, each as parsed JSON."""
        httpx = self._httpx
        try:
            with self.client.stream("POST", self.path(name), json=body) as response:
                if response.status_code != 200:
                    response.read()
                    raise self._refusal(response, self.address.base)
                for line in response.iter_lines():
                    if not line.startswith("data:"):
                        continue  # blank separators and ": ping" comments
                    data = line[5:].strip()
                    if data == "[DONE]":
                        return
                    try:
                        yield json.loads(data)
                    except ValueError:
                        raise ServerError(f"The model server {self.address.base} sent a reply "
                                          "Lumen cannot read.", "Check that it is an "
                                          "OpenAI-compatible server.") from None
        except httpx.HTTPError as exc:
            raise self._failure(exc) from None

    def close(self) -> None:
        if not self._closed:
            self._closed = True
            self.client.close()
            from .. import offline

            offline.release_endpoint(self.address.base)


@dataclass(frozen=True)
class ServerInfo:
    """What a server says of itself and of one model."""

    kind: str
    models: tuple[str, ...]
    context_length: int  # 0 when the server does not say


def _server_kind(entries: list[dict]) -> str:
    owners = {str(e.get("owned_by", "")).lower() for e in entries}
    for owner, kind in _OWNERS.items():
        if owner in owners:
            return kind
    return "openai"


def describe_server(client: ServerClient, model: str = "") -> ServerInfo:
    """The server's kind, its models, and `model`'s context length where it says."""
    listing = client.get("models")
    entries = [e for e in (listing.get("data") or []) if isinstance(e, dict)]
    kind = _server_kind(entries)
    names = tuple(str(e.get("id", "")) for e in entries)
    context = 0
    for entry in entries:
        if entry.get("id") == model and entry.get("max_model_len"):  # vLLM
            context = int(entry["max_model_len"])
    if not context and kind == "llama-server":
        try:
            props = client.get("props", root=True)
            context = int((props.get("default_generation_settings") or {}).get("n_ctx")
                          or props.get("n_ctx") or 0)
        except (LumenError, ValueError, TypeError):
            context = 0
    return ServerInfo(kind, names, context)


def response_format(kind: str, schema: dict) -> dict:
    """The structured-output request each server understands."""
    if kind == "llama-cpp-python":  # its server takes the schema beside json_object
        return {"type": "json_object", "schema": schema}
    return {"type": "json_schema", "json_schema": {"name": "reply", "schema": schema,
                                                   "strict": True}}


class ServerModel:
    """A model on an inference server, used like a LlamaModel.  Thread-safe: calls may
    run at once (a server answers several; parallel replay relies on it)."""

    sha256 = ""  # no file here: the trace names the endpoint and the served model

    def __init__(self, spec: ModelSpec, settings: Settings, api_key: str = "") -> None:
        self.spec = spec
        self.settings = settings
        self.client = ServerClient(spec.endpoint, ca_bundle=spec.ca_bundle, api_key=api_key,
                                   timeout_s=settings.server_timeout_s,
                                   connections=settings.server_parallel_requests)
        self.endpoint = self.client.address.base
        self.n_ctx = spec.context_length or settings.context_size
        self.reported_model = spec.server_model
        self._counts: dict[str, int] = {}
        self._counts_lock = threading.Lock()
        self._tokenize_works = True

    @property
    def chat_template_source(self) -> str:
        return f"the server ({self.spec.server_kind or 'openai'})"

    def identity(self) -> dict[str, Any]:
        """What a trace records of this model."""
        return {"id": self.spec.id, "endpoint": self.endpoint,
                "server_model": self.reported_model or self.spec.server_model}

    # ---- counting ----

    def _count_text(self, text: str) -> int:
        with self._counts_lock:
            if text in self._counts:
                return self._counts[text]
        kind = self.spec.server_kind
        if not self._tokenize_works:
            kind = ""  # the server's tokenize endpoint failed once: estimate from here on
        try:
            if kind == "llama-cpp-python":
                count = len(self.client.post("extras/tokenize", {"input": text}).get("tokens", []))
            elif kind == "llama-server":
                count = len(self.client.post("tokenize", {"content": text}, root=True)
                            .get("tokens", []))
            elif kind == "vllm":
                reply = self.client.post("tokenize", {"model": self.spec.server_model,
                                                      "prompt": text}, root=True)
                count = int(reply.get("count", len(reply.get("tokens", []))))
            else:
                count = -(-len(text.encode("utf-8")) // BYTES_PER_TOKEN_ESTIMATE)
        except (LumenError, ValueError, TypeError):
            self._tokenize_works = False  # asked once per model, not once per text
            count = -(-len(text.encode("utf-8")) // BYTES_PER_TOKEN_ESTIMATE)
        with self._counts_lock:
            if len(self._counts) > 20000:
                self._counts.clear()
            self._counts[text] = count
        return count

    def tokenize(self, text: str) -> list[int]:
        """As many placeholders as the text has tokens (callers count them; a server's
        token ids are of no use here)."""
        return [0] * self._count_text(text)

    def count_tokens(self, messages: list[Message]) -> int:
        return (sum(self._count_text(m["content"]) + MESSAGE_OVERHEAD_TOKENS for m in messages)
                + REPLY_PRIMER_TOKENS)

    # ---- generating ----

    def generate(self, messages: list[Message], *, max_tokens: int | None = None,
                 temperature: float | None = None, json_schema: dict | None = None,
                 stop: tuple[str, ...] = (), on_token: TokenCallback | None = None,
                 cancel: CancelToken | None = None,
                 stop_when: Callable[[str], bool] | None = None) -> Generation:
        settings = self.settings
        max_tokens = max_tokens or settings.max_answer_tokens
        temperature = settings.temperature if temperature is None else temperature
        prompt_tokens = self.count_tokens(messages)
        if prompt_tokens + max_tokens > self.n_ctx:
            raise ContextOverflowError(prompt_tokens, max_tokens, self.n_ctx)
        body: dict[str, Any] = {
            "model": self.spec.server_model, "messages": messages, "max_tokens": max_tokens,
            "temperature": temperature, "top_p": settings.top_p, "seed": settings.seed,
            "stream": True}
        if stop:
            body["stop"] = list(stop)
        kind = self.spec.server_kind
        if kind == "llama-server":
            body["cache_prompt"] = True
        if kind in ("llama-server", "vllm", "openai"):
            body["stream_options"] = {"include_usage": True}
        if json_schema is not None:
            body["response_format"] = response_format(kind, json_schema)
        for attempt in range(1 + INTERRUPTED_REPLY_RETRIES):
            if cancel is not None:
                cancel.raise_if_cancelled()
            generation = self._stream_reply(body, prompt_tokens, max_tokens, on_token, cancel,
                                            stop_when)
            if generation.finish_reason:
                return generation
            log.warning("The model server %s ended a reply without finishing it (try %d).",
                        self.endpoint, attempt + 1)
        raise ServerError(
            f"The model server {self.endpoint} ended its reply part-way, twice (no finish "
            "reason): another request interrupted it, or the server stopped.",
            "Start llama-cpp-python's server with --interrupt_requests False (packaging/"
            "README.md gives each server's start command), and check its log.")

    def _stream_reply(self, body: dict[str, Any], prompt_tokens: int, max_tokens: int,
                      on_token: TokenCallback | None, cancel: CancelToken | None,
                      stop_when: Callable[[str], bool] | None) -> Generation:
        """One streamed reply; its finish_reason is "" when the stream ended without one (a
        reply cut short: never to be taken as a short answer)."""
        pieces: list[str] = []
        chunks = 0
        finish = ""
        usage: dict[str, Any] = {}
        started = time.perf_counter()
        events = self.client.stream("chat/completions", body)
        try:
            for event in events:
                if cancel is not None and cancel.cancelled:
                    raise Cancelled()
                if event.get("model"):
                    self.reported_model = str(event["model"])
                if event.get("usage"):
                    usage = event["usage"]
                for choice in event.get("choices") or []:
                    text = (choice.get("delta") or {}).get("content") or ""
                    if text:
                        chunks += 1
                        pieces.append(text)
                        if on_token is not None:
                            on_token(text)
                    finish = choice.get("finish_reason") or finish
                    if stop_when is not None and text and stop_when("".join(pieces)):
                        finish = "stopped"
                        break
                if finish == "stopped":
                    break
        finally:
            events.close()  # closes the connection: the server stops generating
        seconds = time.perf_counter() - started
        cached = ((usage.get("prompt_tokens_details") or {}).get("cached_tokens") or 0)
        served_prompt = int(usage.get("prompt_tokens") or prompt_tokens)
        return Generation(
            text="".join(pieces), finish_reason=finish, prompt_tokens=served_prompt,
            prompt_tokens_evaluated=max(0, served_prompt - int(cached)),
            completion_tokens=int(usage.get("completion_tokens") or chunks), seconds=seconds,
            model_id=self.spec.id, model_sha256="", max_tokens=max_tokens,
            endpoint=self.endpoint, server_model=self.reported_model)

    def generate_json(self, messages: list[Message], schema: dict, *,
                      max_tokens: int | None = None, **kwargs: Any) -> tuple[Any, Generation]:
        limit = json_reply_limit(schema, max_tokens)
        generation = self.generate(messages, json_schema=schema, max_tokens=limit, **kwargs)
        return checked_json_reply(generation, schema), generation

    def one_token_seconds(self) -> float:
        """The time to a one-token reply (for `lumen doctor`)."""
        generation = self.generate([{"role": "user", "content": "Say OK."}], max_tokens=1,
                                   temperature=0.0)
        return generation.seconds

    def close(self) -> None:
        self.client.close()


def connect(url: str, *, ca_bundle: str = "", api_key: str = "", timeout_s: float = 30.0
            ) -> tuple[ServerClient, ServerInfo]:
    """A client for a server about to be added, and what the server says of itself."""
    client = ServerClient(url, ca_bundle=ca_bundle, api_key=api_key, timeout_s=timeout_s,
                          connections=1)
    try:
        return client, describe_server(client)
    except BaseException:
        client.close()
        raise
