"""Tabular files read one way everywhere: benchmark datasets (evaluation/importers.py),
patient case sets (knowledge/cases.py), the HIVMedQA paper's scores (evaluation/judges.py)
and the relevance calibration's benchmark (pipelines/calibration.py) alike.  CSV, TSV, JSON lines, a JSON array and
Parquet, by the rules of textfiles.py (UTF-8 or UTF-16 with its mark, strict CSV quoting,
the same limits), each record numbered so an error names the record it is in."""

from __future__ import annotations

import csv
import io
import json
import re
from pathlib import Path
from typing import Any

from .errors import DatasetFormatError
from .textfiles import LIMITS, csv_rows, json_depth, json_lines, json_value, read_text

# The extensions the tabular readers understand, and how each is read.
_TABULAR = {".jsonl": "jsonl", ".ndjson": "jsonl", ".json": "json", ".csv": "csv",
            ".tsv": "tsv", ".parquet": "parquet"}

Record = dict[str, Any]


def tabular_kind(path: Path) -> str:
    if not path.exists():
        raise DatasetFormatError(path.name or str(path), None, f"there is no file at {path}",
                                 "Check the path and try again.")
    if path.is_dir():
        raise DatasetFormatError(path.name, None, "this is a folder; this format reads one file",
                                 "Choose the file inside the folder.")
    kind = _TABULAR.get(path.suffix.lower())
    if kind is None:
        raise DatasetFormatError(path.name, None, f"files ending {path.suffix or '(no extension)'} "
                                 "cannot be read", "Use a .jsonl, .json, .csv, .tsv or .parquet file.")
    return kind


def read_records(path: Path, *, limit: int | None = None,
                 kind: str | None = None) -> list[tuple[int, Record]]:
    """(record number, record) for every data record of a tabular file; `limit`: the
    largest file read, in bytes (textfiles.LIMITS.file_bytes unless given); `kind`
    ("csv", "tsv", "jsonl", "json" or "parquet"): read the file as that whatever its
    extension (a loader that takes one format only, such as a benchmark's JSON lines)."""
    if kind is None:
        kind = tabular_kind(path)
    elif kind not in _TABULAR.values():
        raise ValueError(f"unknown tabular kind {kind!r}")
    if kind == "parquet":
        if not path.is_file():
            tabular_kind(path)  # no file, or a folder: the same message as without `kind`
        return _read_parquet(path)
    text = read_text(path, limit=limit)
    if kind in ("csv", "tsv"):
        return _read_csv(text, path.name, "\t" if kind == "tsv" else ",")
    if kind == "json":
        if text.lstrip().startswith("["):
            return _read_json_array(text, path.name)
        if len([line for line in text.split("\n") if line.strip()]) > 1:
            try:
                whole = json.loads(text)
            except json.JSONDecodeError:
                whole = None
            if isinstance(whole, dict):
                raise DatasetFormatError(path.name, None, "the file holds one JSON object, not an array "
                                         "of records or one record per line",
                                         "Export the records as a JSON array or as JSON lines.")
    return _read_jsonl(text, path.name)  # .jsonl, and .json files written as JSON lines


def problem(error: DatasetFormatError) -> str:
    """A reader's error without the file's name and the outcome, for a loader that words
    its own message around it: "record 3: line 4 is not valid JSON (...)"."""
    return f"record {error.record}: {error.reason}" if error.record is not None else error.reason


def _read_jsonl(text: str, source: str) -> list[tuple[int, Record]]:
    records = []
    for number, value in json_lines(text, source):
        if not isinstance(value, dict):
            raise DatasetFormatError(source, number, "it is not a JSON object")
        records.append((number, value))
    return records


def _read_json_array(text: str, source: str) -> list[tuple[int, Record]]:
    """A JSON array read element by element, so a syntax error names its record."""
    decoder = json.JSONDecoder()
    whitespace = re.compile(r"\s*")
    position = whitespace.match(text, 0).end() + 1  # after "["
    records: list[tuple[int, Record]] = []

    def fail(number: int | None, at: int, what: str) -> None:
        line = text.count("\n", 0, at) + 1
        column = at - text.rfind("\n", 0, at)
        raise DatasetFormatError(source, number, f"{what} at line {line}, column {column}")

    position = whitespace.match(text, position).end()
    if text.startswith("]", position):
        position += 1
    else:
        while True:
            number = len(records) + 1
            try:
                value, position = decoder.raw_decode(text, position)
            except json.JSONDecodeError as exc:
                fail(number, exc.pos, f"not valid JSON ({exc.msg})")
            except (RecursionError, ValueError):
                # Re-read alone for the same message as a JSON line gets.
                json_value(text[position:], source, number, "the record")
                raise  # pragma: no cover - json_value raised already
            if number > LIMITS.records:
                fail(None, position, f"more than {LIMITS.records:,} records")
            if json_depth(value) > LIMITS.json_depth:
                fail(number, position, f"arrays or objects nested more than {LIMITS.json_depth} "
                     "levels deep")
            if not isinstance(value, dict):
                fail(number, position, "not a JSON object")
            records.append((number, value))
            position = whitespace.match(text, position).end()
            if text.startswith(",", position):
                position = whitespace.match(text, position + 1).end()
                continue
            if text.startswith("]", position):
                position += 1
                break
            fail(number + 1 if position < len(text) else None, position,
                 "expected ',' or ']' after the previous record" if position < len(text)
                 else "the JSON array is not closed (the file may be cut short)")
    if text[position:].strip():
        fail(None, whitespace.match(text, position).end(), "unexpected text after the JSON array")
    return records


def _read_csv(text: str, source: str, delimiter: str) -> list[tuple[int, Record]]:
    return csv_rows(text, source, delimiter)[1]


def _pyarrow_parquet(path: Path):
    try:
        import pyarrow.parquet as pq
    except ImportError:  # pragma: no cover - pyarrow is part of Lumen's install
        raise DatasetFormatError(path.name, None, "Parquet files need the pyarrow package, which "
                                 "is not installed", "Convert the file to JSONL, or reinstall Lumen.") from None
    return pq


def _read_parquet(path: Path) -> list[tuple[int, Record]]:
    """Every row of a Parquet file, within the limits before anything is decoded: the
    file's size, its row count and its pages' uncompressed size from the metadata; then
    batch by batch, each text's decoded size (a dictionary-encoded column is kept encoded
    until its values' lengths are known: 300 rows may repeat one 6 MB value) and the total,
    before the batch becomes Python values."""
    import pyarrow as pa
    import pyarrow.compute as pc

    pq = _pyarrow_parquet(path)
    source = path.name

    def refuse(record: int | None, reason: str) -> DatasetFormatError:
        return DatasetFormatError(source, record, reason, "Split the file, or import only the "
                                  "columns and rows that are needed.")

    size = path.stat().st_size
    if size > LIMITS.file_bytes:
        raise refuse(None, f"the file is {size / 1e6:.0f} MB, more than the "
                     f"{LIMITS.file_bytes / 1e6:.0f} MB Lumen reads")
    records: list[tuple[int, Record]] = []
    try:
        schema = pq.read_schema(path)
        texts = [field.name for field in schema
                 if pa.types.is_string(field.type) or pa.types.is_large_string(field.type)
                 or pa.types.is_binary(field.type) or pa.types.is_large_binary(field.type)]
        opened = pq.ParquetFile(path, read_dictionary=texts)
        metadata = opened.metadata
        if metadata.num_rows > LIMITS.records:
            raise refuse(None, f"the file has {metadata.num_rows:,} rows, more than the "
                         f"{LIMITS.records:,} Lumen reads")
        stored = sum(metadata.row_group(group).column(column).total_uncompressed_size
                     for group in range(metadata.num_row_groups)
                     for column in range(metadata.num_columns))
        if stored > LIMITS.file_bytes:
            raise refuse(None, f"its pages hold {stored / 1e6:.0f} MB once uncompressed, more "
                         f"than the {LIMITS.file_bytes / 1e6:.0f} MB Lumen reads")
        total = 0
        for batch in opened.iter_batches(batch_size=64):
            first = len(records) + 1
            for position, column in enumerate(batch.columns, 1):
                if pa.types.is_dictionary(column.type):
                    lengths = pc.take(pc.binary_length(column.dictionary), column.indices)
                elif schema.field(position - 1).name in texts:
                    lengths = pc.binary_length(column)
                else:  # numbers, lists, structs: their size as decoded
                    total += column.nbytes
                    continue
                longest = pc.max(lengths).as_py() or 0
                if longest > LIMITS.field_chars:
                    row = first + pc.index(lengths, longest).as_py()
                    raise refuse(row, f"its value in column {position} has {longest:,} bytes of "
                                 f"text, more than the {LIMITS.field_chars:,} Lumen reads")
                total += pc.sum(lengths).as_py() or 0
            if total > LIMITS.total_chars:
                raise refuse(None, f"its text comes to more than {LIMITS.total_chars / 1e6:.0f} "
                             "MB once decoded, more than Lumen reads from one file")
            records.extend(enumerate(batch.to_pylist(), first))
    except DatasetFormatError:
        raise
    except Exception as exc:  # pyarrow raises several types for damaged files
        raise DatasetFormatError(source, None, f"not a readable Parquet file ({type(exc).__name__})",
                                 "The file may be cut short or damaged; copy it again.") from None
    return records


def columns(path: Path) -> list[str]:
    """The field or column names of a CSV/TSV, JSONL, JSON array or Parquet file, in
    order of first appearance (for the column-mapping dialog)."""
    path = Path(path)
    kind = tabular_kind(path)
    if kind == "parquet":
        pq = _pyarrow_parquet(path)
        try:
            return list(pq.read_schema(path).names)
        except Exception as exc:  # pyarrow raises several types for damaged files
            raise DatasetFormatError(path.name, None, f"not a readable Parquet file ({type(exc).__name__})",
                                     "The file may be cut short or damaged; copy it again.") from None
    if kind in ("csv", "tsv"):
        text = read_text(path)
        reader = csv.reader(io.StringIO(text, newline=""), delimiter="\t" if kind == "tsv" else ",",
                            strict=True)
        try:
            header = next(reader, None)
        except csv.Error as exc:
            raise DatasetFormatError(path.name, None, f"the header line is not valid CSV ({exc})") from None
        if not header:
            raise DatasetFormatError(path.name, None, "the file is empty")
        return [column.strip() for column in header]
    names: dict[str, None] = {}
    for _, record in read_records(path):
        names.update(dict.fromkeys(record))
    return list(names)
