"""Reading past patient cases from CSV or JSONL, de-identified as they are read.

A case has a complaint (or a dialogue), a diagnosis, a treatment and demographics.
Columns are found by their usual names (or mapped by the user); columns that are
none of these are not imported at all.  A name column is used only to find and
remove that name from the texts.  Every removal is kept with the case so the user
can see what was taken out.
"""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import LumenError
from ..progress import CancelToken, ProgressCallback, report
from ..tabular import read_records
from ..errors import DatasetFormatError
from ..hashing import sha256_path
from ..textfiles import checked_text, unreadable
from .base import CaseRecord
from .deid import deidentify

FIELDS = ("key", "complaint", "diagnosis", "treatment", "name")
ALIASES: dict[str, tuple[str, ...]] = {
    "key": ("id", "case_id", "record_id", "instance_id", "case"),
    "complaint": ("complaint", "chief_complaint", "general_complaint", "dialogue", "conversation", "presentation",
                  "symptoms", "history", "question"),
    "diagnosis": ("diagnosis", "label", "dx", "final_diagnosis"),
    "treatment": ("treatment", "plan", "management", "doctor_answer", "answer", "advice"),
    "name": ("name", "patient_name", "patient", "full_name"),
}
DEMOGRAPHICS = ("age", "sex", "gender", "weight")
MAX_BYTES = 200_000_000
# HIPAA Safe Harbor: ages over 89 are grouped, since they can identify.
OLDEST_AGE_SHOWN = 89
OLDEST_AGE_READ = 130  # an older "age" is a wrong column or a typo, not a patient
# De-identification runs at a few microseconds per character, growing linearly
# (bench/bench_deid.py): a field of this size takes seconds, not minutes.
DEID_MAX_CHARS = 1_000_000
# A name column holds a name: longer is a wrong column (and every word of a name becomes a
# pattern the de-identifier looks for, so a 64,000-word "name" took minutes).
NAME_MAX_CHARS = 200
# Free-text demographics (sex, weight) are kept short, after de-identification.
DEMOGRAPHIC_MAX_CHARS = 100


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
    """The file's records and its columns, read as every tabular file is (tabular.py)."""
    records = [record for _number, record in read_records(path, limit=MAX_BYTES)]
    columns: list[str] = []
    for record in records:
        columns.extend(name for name in record if name not in columns)
    return records, columns


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


def _first_row(columns: list[str]) -> str:
    """The file's columns, counted, never quoted: in a file without a header row their
    names are the first patient's values, and messages reach terminals and logs."""
    return (f"The file's first row names {len(columns)} column{'s' * (len(columns) != 1)}; "
            "open the file to see them.")


def _column_map(columns: list[str], mapping: dict[str, str]) -> dict[str, str]:
    lowered = {c.lower().strip(): c for c in columns}
    chosen: dict[str, str] = {}
    for name in FIELDS:
        if name in mapping:
            if mapping[name] not in columns:
                raise DatasetFormatError("the mapping", None,
                                         f"there is no column '{mapping[name]}' for {name}",
                                         f"{_first_row(columns)} Map a name exactly as it is "
                                         "written there.")
            chosen[name] = mapping[name]
            continue
        for alias in ALIASES[name]:
            if alias in lowered and lowered[alias] not in chosen.values():
                chosen[name] = lowered[alias]
                break
    return chosen


def _text(row: dict[str, Any], column: str | None, source: str, number: int) -> str:
    """A field as text, checked (textfiles.checked_text)."""
    try:
        text = _flatten(row.get(column))
    except ValueError:  # an integer longer than Python prints
        raise DatasetFormatError(source, number, f"its {column!r} field is a number too long "
                                 "to read") from None
    return checked_text(text, source, number, column or "")


def read_cases(path: Path, mapping: dict[str, str] | None = None, *,
               progress: ProgressCallback = None, cancel: CancelToken | None = None) -> CaseFile:
    """Every case of the file, de-identified; any bad record stops the whole import, with
    a message that names the record and the field, never their text.  De-identification
    reports each case to `progress` and stops at `cancel`."""
    path = Path(path)
    try:
        return _read_cases(path, mapping, progress, cancel)
    except LumenError:
        raise
    except Exception as exc:  # hostile or odd input must give a message, never a traceback
        raise unreadable(path.name, exc) from None


def _read_cases(path: Path, mapping: dict[str, str] | None, progress: ProgressCallback,
                cancel: CancelToken | None) -> CaseFile:
    """Long: one pass over a case file's rows, each column's reading beside the error that
    names its record."""
    source = path.name
    rows, columns = _rows(path)
    if not rows:
        raise DatasetFormatError(source, None, "the file holds no cases")
    chosen = _column_map(columns, mapping or {})
    if "complaint" not in chosen:
        raise DatasetFormatError(
            source, None, "no complaint column was found",
            f"Name it one of {', '.join(ALIASES['complaint'])}, or map it "
            f"(--map complaint=COLUMN). {_first_row(columns)}")
    lowered = {c.lower(): c for c in columns}
    demographic_columns = {d: lowered[d] for d in DEMOGRAPHICS if d in lowered}
    used = set(chosen.values()) | set(demographic_columns.values())
    records: list[CaseRecord] = []
    seen: dict[str, int] = {}
    for number, row in enumerate(rows, start=1):
        if cancel is not None:
            cancel.raise_if_cancelled()
        report(progress, number - 1, len(rows), f"De-identifying case {number} of {len(rows)}")
        stop = cancel.raise_if_cancelled if cancel is not None else None
        names = [_text(row, chosen["name"], source, number)] if "name" in chosen else []
        if names and len(names[0]) > NAME_MAX_CHARS:
            raise DatasetFormatError(source, number, f"its name field has {len(names[0]):,} "
                                     f"characters, more than the {NAME_MAX_CHARS} of a name",
                                     "Check that the name column is mapped to the right column.")
        known = [n for n in names if n]
        removals: list[dict[str, Any]] = []

        def clean(part: str, raw: str) -> str:
            """A field de-identified, its removals kept for review."""
            if len(raw) > DEID_MAX_CHARS:
                raise DatasetFormatError(source, number, f"its {part} field has {len(raw):,} "
                                         f"characters, more than the {DEID_MAX_CHARS:,} Lumen "
                                         "de-identifies in one field",
                                         "Split the case, or import only the part needed.")
            result = deidentify(raw, known_names=known, check_cancel=stop)
            removals.extend({"field": part, "kind": r.kind, "rule": r.rule, "text": r.text,
                             "replacement": r.replacement} for r in result.removals)
            return result.text

        # The id is shown in lists and messages: one that carries an identifier (a name, a
        # record number) is replaced by the row's number.
        key = _text(row, chosen.get("key"), source, number) if "key" in chosen else f"row-{number}"
        if not key:
            raise DatasetFormatError(source, number, "the record has an empty id")
        if len(key) > NAME_MAX_CHARS or clean("id", key) != key:
            if len(key) > NAME_MAX_CHARS:
                removals.append({"field": "id", "kind": "long id", "rule": "id-too-long",
                                 "text": key[:40] + "…", "replacement": f"row-{number}"})
            key = f"row-{number}"
        if key in seen:
            raise DatasetFormatError(source, number, f"its id is also the id of record {seen[key]}",
                                     "Give every case its own id, or leave the id column out.")
        seen[key] = number
        complaint = _text(row, chosen["complaint"], source, number)
        if not complaint:
            raise DatasetFormatError(source, number, "its complaint is empty")
        texts = {part: clean(part, _text(row, chosen[part], source, number) if part in chosen else "")
                 for part in ("complaint", "diagnosis", "treatment")}
        demographics: dict[str, Any] = {}
        for label, column in demographic_columns.items():
            value = row.get(column)
            if value in (None, ""):
                continue
            if label == "age":
                try:
                    age = float(value)
                except (TypeError, ValueError, OverflowError):
                    age = math.nan
                if not math.isfinite(age) or not 0 <= age <= OLDEST_AGE_READ:
                    raise DatasetFormatError(source, number, f"its {label} field is not an age "
                                             f"in years (0 to {OLDEST_AGE_READ})")
                if age > OLDEST_AGE_SHOWN:
                    removals.append({"field": "age", "kind": "age", "rule": "age-over-89",
                                     "text": str(value), "replacement": "90+"})
                    value = "90+"
                else:
                    value = int(age) if age.is_integer() else age
            if isinstance(value, str):
                text = checked_text(value, source, number, label)
                if len(text) > DEID_MAX_CHARS:
                    raise DatasetFormatError(source, number, f"its {label} field has "
                                             f"{len(text):,} characters")
                value = clean(label, text)[:DEMOGRAPHIC_MAX_CHARS]
            elif not isinstance(value, (int, float)) or isinstance(value, bool):
                raise DatasetFormatError(source, number, f"its {label} field is not text or a number")
            demographics["sex" if label == "gender" else label] = value
        records.append(CaseRecord(key, texts["complaint"], texts["diagnosis"], texts["treatment"],
                                  demographics, tuple(removals)))
    return CaseFile(source, sha256_path(path), records,
                    {k: v for k, v in chosen.items() if k != "name"},
                    [c for c in columns if c not in used])
