"""What every pipeline runs on: the loaded models, the glossary, the settings, the cache
folder and its prompt set; and the one rule for grading a text's readability."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ..config import Settings
from ..glossary.glossary import Glossary
from ..models.runtime import ModelRuntime
from ..prompts import PromptSet, load_prompts
from ..readability import flesch_kincaid_grade
from .trace import Trace, trace_header


class Pipeline:
    prompt_set = ""  # resources/prompts/<prompt_set>.toml

    def __init__(self, runtime: ModelRuntime, glossary: Glossary, settings: Settings,
                 cache_dir: Path) -> None:
        self.runtime = runtime
        self.glossary = glossary
        self.settings = settings
        self.cache_dir = cache_dir
        self.prompts: PromptSet = load_prompts(self.prompt_set)

    def grade(self, text: str) -> float | None:
        """FKGL of a text; None for an empty one (which no gate may pass)."""
        return round(flesch_kincaid_grade(text, self.cache_dir), 2) if text.strip() else None

    def setting_values(self, *names: str) -> dict[str, Any]:
        return {name: getattr(self.settings, name) for name in names}

    def new_trace(self, kind: str, method: str, variant: str, text: str, *,
                  models: dict[str, Any], settings: dict[str, Any], embedder: bool = False,
                  **fields: Any) -> Trace:
        """trace_header with this pipeline's prompt version and each loaded model's
        identity (the embedder's when it is used)."""
        identities = {role: model.identity() for role, model in models.items()}
        if embedder:
            spec = self.runtime.registry.for_role("embedder")
            identities["embedder"] = {"id": spec.id, "sha256": spec.file("model.onnx").sha256}
        return trace_header(kind, method, variant, text, prompt_version=self.prompts.version,
                            models=identities, settings=settings, **fields)
