"""Reading past patient cases from CSV or JSONL, de-identified as they are read.

A case has a complaint (or a dialogue), a diagnosis, a treatment and demographics.
Columns are found by their usual names (or mapped by the user); columns that are
none of these are not imported at all.  A name column is used only to find and
remove that name from the texts.  Every removal is kept with the case so the user
can see what was taken out.
"""

from __future__ import annotations

import csv
import io
import json
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..evaluation.dataset import DatasetFormatError, sha256_path
from .base import CaseRecord
from .deid import deidentify

FIELDS = ("key", "complaint", "diagnosis", "treatment", "name")
ALIASES: dict[str, tuple[str, ...]] = {
    "key": ("id", "case_id", "record_id", "instance_id", "case"),
    "complaint": ("complaint", "chief_complaint", "dialogue", "conversation", "presentation",
                  "symptoms", "history", "question"),
    "diagnosis": ("diagnosis", "label", "dx", "final_diagnosis"),
    "treatment": ("treatment", "plan", "management", "doctor_answer", "answer", "advice"),
    "name": ("name", "patient_name", "patient", "full_name"),
}
DEMOGRAPHICS = ("age", "sex", "gender", "weight")
MAX_BYTES = 200_000_000
# HIPAA Safe Harbor: ages over 89 are grouped, since they can identify.
OLDEST_AGE_SHOWN = 89


@dataclass
class CaseFile:
    name: str
    sha256: str
    records: list[CaseRecord]
    columns_used: dict[str, str]  # field -> column
    columns_dropped: list[str] = field(default_factory=list)

    def removal_counts(self) -> dict[str, int]:
        counts: Counter[str] = Counter()
        for record in self.records:
            counts.update(r["kind"] for r in record.removals)
        return dict(sorted(counts.items()))


def _rows(path: Path) -> tuple[list[dict[str, Any]], list[str]]:
    source = path.name
    if not path.is_file():
        raise DatasetFormatError(source, None, f"there is no file at {path}",
                                 "Check the path and try again.")
    if path.stat().st_size > MAX_BYTES:
        raise DatasetFormatError(source, None, "the file is larger than 200 MB")
    raw = path.read_bytes()
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError:
        text = raw.decode("cp1252", errors="replace")
    suffix = path.suffix.lower()
    if suffix in (".jsonl", ".ndjson", ".json"):
        rows: list[dict[str, Any]] = []
        columns: list[str] = []
        lines = text.splitlines()
        if suffix == ".json" and text.lstrip().startswith("["):
            try:
                items = json.loads(text)
            except json.JSONDecodeError as exc:
                raise DatasetFormatError(source, None, f"not valid JSON ({exc.msg} at line {exc.lineno})")
            lines = [json.dumps(item) for item in items]
        for number, line in enumerate(lines, start=1):
            if not line.strip():
                continue
            try:
                row = json.loads(line)
            except json.JSONDecodeError as exc:
                raise DatasetFormatError(source, number, f"line {number} is not valid JSON ({exc.msg})")
            if not isinstance(row, dict):
                raise DatasetFormatError(source, number, "a record must be a JSON object")
            rows.append(row)
            columns.extend(k for k in row if k not in columns)
        return rows, columns
    if suffix in (".csv", ".tsv"):
        dialect = "excel-tab" if suffix == ".tsv" else "excel"
        reader = csv.DictReader(io.StringIO(text, newline=""), dialect=dialect)
        rows = []
        try:
            for row in reader:
                if None in row:
                    raise DatasetFormatError(source, reader.line_num - 1,
                                             "the row has more cells than the header")
                rows.append(row)
        except csv.Error as exc:
            raise DatasetFormatError(source, reader.line_num, f"not valid CSV ({exc})")
        return rows, list(reader.fieldnames or [])
    raise DatasetFormatError(source, None, f"'{path.suffix}' files cannot be read as cases",
                             "Use a .csv or .jsonl file.")


def _flatten(value: Any) -> str:
    """A dialogue given as a list of turns becomes one text, a turn per line."""
    if value is None:
        return ""
    if isinstance(value, list):
        lines = []
        for turn in value:
            if isinstance(turn, dict):
                speaker = turn.get("role") or turn.get("speaker") or ""
                said = turn.get("content") or turn.get("text") or turn.get("utterance") or ""
                lines.append(f"{speaker}: {said}" if speaker else str(said))
            else:
                lines.append(str(turn))
        return "\n".join(lines)
    return str(value).strip()


def _column_map(columns: list[str], mapping: dict[str, str]) -> dict[str, str]:
    lowered = {c.lower().strip(): c for c in columns}
    chosen: dict[str, str] = {}
    for name in FIELDS:
        if name in mapping:
            if mapping[name] not in columns:
                raise DatasetFormatError("the mapping", None,
                                         f"there is no column '{mapping[name]}' for {name}",
                                         f"Columns in the file: {', '.join(columns)}.")
            chosen[name] = mapping[name]
            continue
        for alias in ALIASES[name]:
            if alias in lowered and lowered[alias] not in chosen.values():
                chosen[name] = lowered[alias]
                break
    return chosen


def read_cases(path: Path, mapping: dict[str, str] | None = None) -> CaseFile:
    """Every case of the file, de-identified; any bad record stops the whole import."""
    path = Path(path)
    source = path.name
    rows, columns = _rows(path)
    if not rows:
        raise DatasetFormatError(source, None, "the file holds no cases")
    chosen = _column_map(columns, mapping or {})
    if "complaint" not in chosen:
        raise DatasetFormatError(
            source, None, "no complaint column was found",
            f"Name it one of {', '.join(ALIASES['complaint'])}, or map it "
            f"(--map complaint=COLUMN). Columns in the file: {', '.join(columns)}.")
    lowered = {c.lower(): c for c in columns}
    demographic_columns = {d: lowered[d] for d in DEMOGRAPHICS if d in lowered}
    used = set(chosen.values()) | set(demographic_columns.values())
    records: list[CaseRecord] = []
    seen: set[str] = set()
    for number, row in enumerate(rows, start=1):
        key = _flatten(row.get(chosen["key"])) if "key" in chosen else f"row-{number}"
        if not key:
            raise DatasetFormatError(source, number, "the record has an empty id")
        if key in seen:
            raise DatasetFormatError(source, number, f"the id '{key}' appears twice")
        seen.add(key)
        complaint = _flatten(row.get(chosen["complaint"]))
        if not complaint:
            raise DatasetFormatError(source, number, f"record '{key}' has an empty complaint")
        names = [_flatten(row.get(chosen["name"]))] if "name" in chosen else []
        removals: list[dict[str, Any]] = []
        texts = {}
        for part in ("complaint", "diagnosis", "treatment"):
            raw = _flatten(row.get(chosen[part])) if part in chosen else ""
            clean = deidentify(raw, known_names=[n for n in names if n])
            texts[part] = clean.text
            removals.extend({"field": part, "kind": r.kind, "rule": r.rule, "text": r.text,
                             "replacement": r.replacement} for r in clean.removals)
        demographics: dict[str, Any] = {}
        for label, column in demographic_columns.items():
            value = row.get(column)
            if value in (None, ""):
                continue
            if label == "age":
                try:
                    age = float(value)
                except (TypeError, ValueError):
                    raise DatasetFormatError(source, number, f"record '{key}' has age {value!r}, "
                                             "which is not a number") from None
                if age > OLDEST_AGE_SHOWN:
                    removals.append({"field": "age", "kind": "age", "rule": "age-over-89",
                                     "text": str(value), "replacement": "90+"})
                    value = "90+"
                else:
                    value = int(age) if age.is_integer() else age
            demographics["sex" if label == "gender" else label] = value
        records.append(CaseRecord(key, texts["complaint"], texts["diagnosis"], texts["treatment"],
                                  demographics, tuple(removals)))
    return CaseFile(source, sha256_path(path), records,
                    {k: v for k, v in chosen.items() if k != "name"},
                    [c for c in columns if c not in used])
