"""Prompts are data: resources/prompts/<set>.toml, each with a `version` that every
trace records.  Templates use {name} fields; values are inserted as they are, so
braces inside a document are harmless."""

from __future__ import annotations

import functools
import string
import tomllib
from dataclasses import dataclass

from .config import resource_root
from .errors import LumenError


@dataclass(frozen=True)
class PromptSet:
    name: str
    version: str
    sections: dict

    def text(self, section: str, part: str, /, **values: object) -> str:
        try:
            template = self.sections[section][part]
        except KeyError:
            raise LumenError(f"The prompt '{section}.{part}' is missing from {self.name}.toml.",
                             "Reinstall Lumen; its prompts ship with it.") from None
        fields = {name for _, name, _, _ in string.Formatter().parse(template) if name}
        missing = fields - set(values)
        if missing:
            raise LumenError(f"The prompt '{section}.{part}' needs {sorted(missing)}.",
                             "This is a bug in Lumen; please report it.")
        return template.format(**{k: v for k, v in values.items() if k in fields})


@functools.cache
def load_prompts(name: str) -> PromptSet:
    path = resource_root() / "resources" / "prompts" / f"{name}.toml"
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise LumenError(f"Lumen's prompts {path} cannot be read: {exc}.",
                         "Reinstall Lumen; its prompts ship with it.") from exc
    version = data.pop("version", "")
    if not version:
        raise LumenError(f"{path.name} has no version.", "Every prompt file must name its version.")
    return PromptSet(name, version, data)
