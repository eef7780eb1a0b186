"""What every pipeline runs on: the loaded models, the glossary, the settings, the cache
folder and its prompt set; and the one rule for grading a text's readability."""

from __future__ import annotations

from pathlib import Path

from ..config import Settings
from ..glossary.glossary import Glossary
from ..models.runtime import ModelRuntime
from ..prompts import PromptSet, load_prompts
from ..readability import flesch_kincaid_grade


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
