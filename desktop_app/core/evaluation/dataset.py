"""Samples and datasets, the common form every benchmark importer produces."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any



@dataclass(frozen=True)
class Sample:
    id: str  # unique within its dataset, stable across imports of the same file
    input: str  # the question, as the system under test receives it
    target: str = ""  # the reference answer ("" when the benchmark has none)
    context: str = ""  # the document the question is about (a discharge summary), if any
    metadata: dict[str, Any] = field(default_factory=dict)  # category, language, specialty, ...


@dataclass
class Dataset:
    name: str
    format: str  # the importer that read it
    source_file: str  # file or folder name (no directories)
    source_sha256: str  # of the file, or of the folder's files in name order
    samples: list[Sample]
    language: str = "en"  # "en", "fa" (Persian, shown right to left), ...
    # What the importer decided or skipped, said to the user at import (the columns it
    # chose, records with no reference answer, files with no questions).
    notes: list[str] = field(default_factory=list)
