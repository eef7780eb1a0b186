"""One way to read the text files people hand Lumen (benchmarks, past cases, glossary
entries, discharge summaries), with the same rules and limits everywhere.

- Encoding: UTF-8 (with or without its byte-order mark) or UTF-16 with its mark;
  anything else is refused with the byte offset where it stops being UTF-8, never
  guessed (a guess turns "é" into "Ã©" in a patient's record without a word).
- JSON lines are split on line feeds only (a JSON string may hold U+2028 unescaped).
- CSV quoting is strict: an unbalanced quote is an error naming its line, never records
  silently merged.
- Limits, stated up front and enforced as the file is read: LIMITS.  Python's own
  failures on hostile input (nesting deep enough to exhaust the stack, integers of
  thousands of digits, lone surrogates) become messages that name the file, the record
  and the field.

No message quotes a value of a record: values may be patient text, and messages go to
terminals, logs and screenshots.
"""

from __future__ import annotations

import csv
import io
import json
import re
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator

from .errors import DatasetFormatError


@dataclass(frozen=True)
class Limits:
    file_bytes: int = 200_000_000     # a whole file
    field_chars: int = 5_000_000      # one field (a long stay's summary is ~100,000)
    records: int = 1_000_000          # records in one file
    json_depth: int = 64              # nesting of arrays and objects in one record
    # Text in one file once decoded (Parquet's compressed pages and dictionaries, XML's
    # entities): what a 2 KB file may expand to is checked against this while it is read.
    total_chars: int = 200_000_000


LIMITS = Limits()

_BOMS = ((b"\xef\xbb\xbf", "utf-8"), (b"\xff\xfe", "utf-16-le"), (b"\xfe\xff", "utf-16-be"))
_SURROGATE = re.compile("[\ud800-\udfff]")


def read_text(path: Path, *, source: str | None = None, limit: int | None = None,
              outcome: str = "Nothing was imported.") -> str:
    """A file's text by the rules above."""
    path = Path(path)
    source = source or path.name
    limit = limit or LIMITS.file_bytes

    def fail(reason: str, fix: str) -> DatasetFormatError:
        return DatasetFormatError(source, None, reason, fix, outcome=outcome)

    try:
        if path.is_dir():
            raise fail("this is a folder, not a file", "Choose the file inside the folder.")
        size = path.stat().st_size
        if size > limit:
            raise fail(f"the file is {size / 1e6:.0f} MB, more than the {limit / 1e6:.0f} MB "
                       "Lumen reads", "Split the file, or import only what is needed.")
        raw = path.read_bytes()
    except OSError as exc:
        raise fail(f"the file cannot be read ({exc.strerror or type(exc).__name__})",
                   "Check the path and that your user may read the file.") from None
    for mark, encoding in _BOMS:
        if raw.startswith(mark):
            try:
                return raw[len(mark):].decode(encoding)
            except UnicodeDecodeError as exc:
                raise fail(f"the file is marked {encoding.upper()} but byte {exc.start + len(mark)} "
                           "is not", "Save the file again as UTF-8.") from None
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise fail(f"the file is not UTF-8 text (byte {exc.start} is not UTF-8)",
                   "Save the file as UTF-8 (in most editors: Save as → Encoding: UTF-8) and "
                   "try again.") from None


def text_problem(value: str) -> str | None:
    """Why a text cannot be kept (too long, or a lone surrogate, which SQLite and every
    file format refuse to store), or None."""
    if len(value) > LIMITS.field_chars:
        return f"has {len(value):,} characters, more than the {LIMITS.field_chars:,} Lumen reads"
    if _SURROGATE.search(value):
        return "holds a character that is not valid text (a lone UTF-16 surrogate)"
    return None


def checked_text(value: str, source: str, record: int | None, field: str) -> str:
    """A text field within the limits and free of lone surrogates."""
    problem = text_problem(value)
    if problem is not None:
        raise DatasetFormatError(source, record, f"its {field!r} field {problem}",
                                 "Save the file again from its source; the field may be "
                                 "damaged." if "surrogate" in problem else "")
    return value


def json_depth(value: Any) -> int:
    """How deeply arrays and objects nest in a parsed value (without recursion)."""
    deepest, stack = 0, [(value, 0)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, (dict, list)):
            depth += 1
            deepest = max(deepest, depth)
            if depth > LIMITS.json_depth:
                return depth
            stack.extend((child, depth) for child in (item.values() if isinstance(item, dict) else item))
    return deepest


def json_value(text: str, source: str, record: int | None, where: str) -> Any:
    """One JSON value; `where` says where it is in the file ("line 3")."""
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        raise DatasetFormatError(source, record, f"{where} is not valid JSON ({exc.msg} at "
                                 f"column {exc.colno})") from None
    except RecursionError:
        raise DatasetFormatError(source, record, f"{where} nests arrays or objects too deeply "
                                 f"(Lumen reads up to {LIMITS.json_depth} levels)") from None
    except ValueError as exc:  # an integer of thousands of digits, and kin
        reason = ("a number with more digits than Python reads" if "digits" in str(exc)
                  else type(exc).__name__)
        raise DatasetFormatError(source, record, f"{where} holds a value that cannot be read "
                                 f"({reason})") from None
    if json_depth(value) > LIMITS.json_depth:
        raise DatasetFormatError(source, record, f"{where} nests arrays or objects more than "
                                 f"{LIMITS.json_depth} levels deep")
    return value


def json_lines(text: str, source: str) -> Iterator[tuple[int, Any]]:
    """(record number, value) for each non-blank line; split on line feeds only."""
    number = 0
    for line_number, line in enumerate(text.split("\n"), 1):
        if not line.strip():
            continue
        number += 1
        if number > LIMITS.records:
            raise DatasetFormatError(source, None, f"the file has more than {LIMITS.records:,} records")
        yield number, json_value(line, source, number, f"line {line_number}")


def csv_rows(text: str, source: str, delimiter: str = ",") -> tuple[list[str], list[tuple[int, dict[str, str]]]]:
    """The header and (record number, row) for each non-blank row, with strict quoting:
    a quote left open is an error at its line, not records run together."""
    limit = LIMITS.field_chars
    if csv.field_size_limit() < limit:
        csv.field_size_limit(min(limit, sys.maxsize))
    reader = csv.reader(io.StringIO(text, newline=""), delimiter=delimiter, strict=True)
    rows: list[tuple[int, dict[str, str]]] = []
    try:
        header = next(reader, None)
        if not header:
            return [], []
        header = [column.strip() for column in header]
        twice = [n for n, c in enumerate(header, 1) if header.count(c) > 1]
        if twice:
            # By position: without a header row, these names are a patient's values.
            raise DatasetFormatError(source, None, "the first row names two columns alike "
                                     f"(columns {', '.join(map(str, twice))})",
                                     "Give every column its own name in the first row; a file "
                                     "without a header row needs one added.")
        for row in reader:
            if not any(cell.strip() for cell in row):
                continue  # a blank line
            number = len(rows) + 1
            if number > LIMITS.records:
                raise DatasetFormatError(source, None, f"the file has more than {LIMITS.records:,} records")
            if len(row) != len(header):
                raise DatasetFormatError(source, number, f"it has {len(row)} fields but the header "
                                         f"has {len(header)} (line {reader.line_num})")
            rows.append((number, dict(zip(header, row))))
    except csv.Error as exc:
        raise DatasetFormatError(source, len(rows) + 1 if rows or reader.line_num > 1 else None,
                                 f"not valid CSV at line {reader.line_num} ({exc})",
                                 "Check the quotes around that line: every opening quote needs "
                                 "its closing one.") from None
    return header, rows



def unreadable(source: str, exc: BaseException, outcome: str = "Nothing was imported.") -> DatasetFormatError:
    """The message for a failure no reader foresaw: its type and where in Lumen it
    happened (logged the same way), never its text, which may quote the file."""
    import logging
    import traceback

    frames = traceback.extract_tb(exc.__traceback__)
    place = f"{Path(frames[-1].filename).name}:{frames[-1].lineno}" if frames else "?"
    logging.getLogger(__name__).error("Unexpected %s while reading a file (at %s)",
                                      type(exc).__name__, place)
    return DatasetFormatError(source, None, f"it could not be read ({type(exc).__name__} at "
                              f"{place})", "Check that this is the right file and format. If it "
                              "is, please report this to Lumen's developers with the message.",
                              outcome=outcome)
