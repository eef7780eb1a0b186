"""Chat templates, resolved explicitly.

llama-cpp-python falls back to the llama-2 prompt format without a word when a
GGUF has no template, and the model then answers with garbage.  Lumen uses the
GGUF's own `tokenizer.chat_template`; failing that, the named format from the
catalog (or given when the model was added), from resources/chat_templates.toml;
failing that, it refuses.
"""

from __future__ import annotations

import functools
import tomllib
from dataclasses import dataclass

from ..config import resource_root
from ..errors import ChatTemplateError

Message = dict[str, str]


@dataclass(frozen=True)
class ChatTemplate:
    source: str  # "gguf" or "format:<name>"
    template: str
    stop: tuple[str, ...]


@functools.cache
def known_formats() -> dict[str, dict]:
    path = resource_root() / "resources" / "chat_templates.toml"
    return tomllib.loads(path.read_text(encoding="utf-8"))


def resolve_chat_template(gguf_template: str | None, chat_format: str | None,
                          *, model_label: str, prefer_format: bool = False) -> ChatTemplate:
    """The GGUF's template first, unless `prefer_format` (the user named a format to use
    instead of a broken one in the file)."""
    if gguf_template and not (prefer_format and chat_format):
        return ChatTemplate("gguf", gguf_template, ())
    formats = known_formats()
    if chat_format:
        if chat_format not in formats:
            raise ChatTemplateError(
                f"The chat format '{chat_format}' given for {model_label} is not one Lumen knows.",
                f"Use one of: {', '.join(sorted(formats))}.",
            )
        entry = formats[chat_format]
        return ChatTemplate(f"format:{chat_format}", entry["template"], tuple(entry.get("stop", ())))
    raise ChatTemplateError(
        f"{model_label} carries no chat template, and its chat format is not known.",
        "Add it again naming its format, for example "
        f"'lumen models add FILE --chat-format chatml' (formats: {', '.join(sorted(formats))}).",
    )


SAMPLE_CONVERSATION = [{"role": "system", "content": "You explain medical words simply."},
                       {"role": "user", "content": "What does BID mean?"}]


def check_template_compiles(template: str, *, model_label: str) -> None:
    """llama-cpp-python compiles every template in a GGUF when it loads the file, so a
    file whose own template does not compile cannot be loaded, whatever format Lumen
    would use instead."""
    import jinja2
    from jinja2.sandbox import ImmutableSandboxedEnvironment

    try:
        ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True).from_string(template)
    except jinja2.TemplateError as exc:
        raise ChatTemplateError(
            f"The chat template inside {model_label} is broken ({type(exc).__name__}: "
            f"{getattr(exc, 'message', exc)}), and llama.cpp cannot load a file with a broken "
            "template.",
            "Get a corrected GGUF from the model's publisher.") from None


class ChatRenderer:
    """Turns a list of messages into the model's prompt text."""

    def __init__(self, chat_template: ChatTemplate, bos_token: str, eos_token: str,
                 *, model_label: str = "the model") -> None:
        import jinja2
        from llama_cpp.llama_chat_format import Jinja2ChatFormatter

        self.chat_template = chat_template
        try:
            self._formatter = Jinja2ChatFormatter(
                template=chat_template.template, eos_token=eos_token, bos_token=bos_token,
                add_generation_prompt=True)
            # Lumen always sends a system and a user message: the template must take both.
            sample = self._formatter(messages=SAMPLE_CONVERSATION).prompt
        except jinja2.TemplateError as exc:
            raise ChatTemplateError(
                f"The chat template of {model_label} cannot be used ({type(exc).__name__}: "
                f"{getattr(exc, 'message', exc)}).",
                "Add the model again with a named format, for example "
                "'--chat-format chatml', which replaces the file's own template.") from None
        if "What does BID mean?" not in sample:
            raise ChatTemplateError(f"The chat template of {model_label} drops the user's message.",
                                    "Add the model again with a named format ('--chat-format').")
        stops = list(chat_template.stop)
        if eos_token and eos_token not in stops:
            stops.append(eos_token)
        self.stop = tuple(stops)

    def render(self, messages: list[Message]) -> str:
        return self._formatter(messages=messages).prompt
