"""What one model call returns, local or on a server, how a JSON reply is checked, and
what a model that writes text offers (shared by models/runtime.py and models/server.py)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable, Protocol, runtime_checkable

from ..errors import ModelOutputError, ReplyCutOff
from .grammar import reply_token_limit

if TYPE_CHECKING:
    from ..progress import CancelToken
    from .catalog import ModelSpec
    from .chat import Message


@dataclass(frozen=True)
class Generation:
    text: str
    finish_reason: str  # "stop", "length"
    prompt_tokens: int
    prompt_tokens_evaluated: int  # prompt tokens llama.cpp computed (the rest were reused)
    completion_tokens: int
    seconds: float
    model_id: str
    model_sha256: str
    max_tokens: int = 0  # the limit it ran under
    endpoint: str = ""  # a server model's URL (models/server.py)
    server_model: str = ""  # the model name that server reported

    @property
    def tokens_per_second(self) -> float:
        return self.completion_tokens / self.seconds if self.seconds > 0 else 0.0

    def to_dict(self) -> dict[str, Any]:
        return {k: getattr(self, k) for k in self.__dataclass_fields__}


def json_reply_limit(schema: dict, max_tokens: int | None) -> int:
    """The token limit of a reply under `schema`: the grammar's longest reply
    (models/grammar.py), so a reply is never cut off whatever the model writes; a
    smaller explicit limit is refused."""
    needed = reply_token_limit(schema)
    if needed is None:
        raise ValueError("generate_json needs a schema whose longest reply is bounded "
                         "(every string with maxLength, every array with maxItems)")
    if max_tokens is not None and max_tokens < needed:
        raise ValueError(f"max_tokens={max_tokens} is below this schema's longest reply "
                         f"({needed} tokens); leave it out to use the grammar's own limit")
    return max_tokens or needed


def checked_json_reply(generation: Generation, schema: dict) -> Any:
    """The reply parsed and validated against `schema` (local grammar or a server's
    structured output alike: neither is trusted to have held)."""
    import jsonschema

    if generation.finish_reason == "length":
        raise ReplyCutOff(generation.completion_tokens, generation.text)
    try:
        # llama.cpp's string grammar can let a raw line break through; JSON that is
        # otherwise well-formed is accepted with it.
        value = json.loads(generation.text, strict=False)
    except json.JSONDecodeError as exc:
        raise ModelOutputError(
            f"The model's reply is not valid JSON ({exc.msg} at character {exc.pos}).",
            generation.text) from None
    try:
        jsonschema.validate(value, schema)
    except jsonschema.ValidationError as exc:
        # jsonschema's own message quotes the model's output, which may hold patient text.
        where = exc.json_path if exc.path else "the reply"
        raise ModelOutputError(f"The model's JSON does not have the expected form "
                               f"({exc.validator} check failed at {where}).",
                               generation.text) from None
    return value


@runtime_checkable
class TextModel(Protocol):
    """What the pipelines use of a model that writes text: a GGUF file run by llama.cpp
    (runtime.LlamaModel) or a model on an inference server (server.ServerModel).  Both
    classes satisfy it (tests/test_runtime.py compares their signatures with these)."""

    spec: "ModelSpec"
    n_ctx: int

    @property
    def chat_template_source(self) -> str: ...

    def identity(self) -> dict[str, Any]: ...

    def tokenize(self, text: str) -> list[int]: ...

    def count_tokens(self, messages: list["Message"]) -> int: ...

    def generate(self, messages: list["Message"], *, max_tokens: int | None = None,
                 temperature: float | None = None, json_schema: dict | None = None,
                 stop: tuple[str, ...] = (), on_token: Callable[[str], None] | None = None,
                 cancel: "CancelToken | None" = None,
                 stop_when: Callable[[str], bool] | None = None) -> Generation: ...

    def generate_json(self, messages: list["Message"], schema: dict, *,
                      max_tokens: int | None = None, **kwargs: Any) -> tuple[Any, Generation]: ...

    def close(self) -> None: ...
