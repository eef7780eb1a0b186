"""Benchmark importers: files in the layouts of published benchmarks to a `Dataset`.

`import_dataset(path, format)` reads the whole file (or folder), checks every record,
and either returns the complete dataset or raises `DatasetFormatError` naming the
first bad record (numbered from 1, counting data records only: a CSV header and
blank JSONL lines are not records) and the reason.  Nothing partial is ever returned.

Sample ids are the file's own ids where it has them (they must be unique); otherwise
they are made from the record's position (``rec-00012``) or, for the benchmarks whose
layout has none, from where the question sits (``hiv-c3-q007``), so importing the same
file again gives the same ids.

Error messages name files, records, columns and ids, never the text of a record.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from xml.parsers import expat as pyexpat
from pathlib import Path
from typing import Any, Callable, Iterable

from ..choices import FORMATS
from ..errors import DatasetFormatError, LumenError
from ..hashing import sha256_path
from ..tabular import Record, columns, read_records
from ..textfiles import LIMITS, checked_text, json_value, read_text, text_problem, unreadable
from .dataset import Dataset, Sample


_MAPPING_KEYS = ("context", "input", "target", "id")



# ---- public API ---------------------------------------------------------------------


def import_dataset(path: Path, format: str, *, mapping: dict[str, str] | None = None,
                   name: str | None = None) -> Dataset:
    """Read a benchmark file (or folder) in the named format; see `FORMATS`.

    ``mapping`` names the file's columns for the sample's fields (keys ``context``,
    ``input``, ``target``, ``id``): required by "generic", an override for
    "medisumqa", not accepted by the others.  ``name`` defaults to the file's stem.
    """
    importer = _IMPORTERS.get(format)
    if importer is None:
        raise LumenError(f"Unknown benchmark format {format!r}. Known formats: "
                         + ", ".join(FORMATS) + ".",
                         "Choose one of: " + "; ".join(f"{k} ({v})" for k, v in FORMATS.items()))
    path = Path(path)
    if not path.exists():
        raise DatasetFormatError(path.name or str(path), None, f"there is no file or folder at {path}",
                                 "Check the path and try again.")
    if mapping is not None and format not in ("generic", "medisumqa", "cases"):
        raise DatasetFormatError(path.name, None, f"the {format} format takes no column mapping",
                                 "Leave the mapping out, or import the file with the generic format.")
    notes: list[str] = []
    try:
        samples, language = importer(path, mapping, notes)
    except LumenError:
        raise
    except Exception as exc:  # hostile or odd input must give a message, never a traceback
        raise unreadable(path.name, exc) from None
    if not samples:
        raise DatasetFormatError(path.name, None, "it holds no questions"
                                 + (f" ({'; '.join(notes)})" if notes else ""),
                                 "Check that this is the right file and format.")
    _check_unique(samples, path.name)
    _check_storable(samples, path.name)
    no_reference = sum(1 for sample in samples if not sample.target)
    if no_reference:
        notes.append(f"{no_reference} of {len(samples)} questions have no reference answer "
                     "(\"no reference\"): they are answered, but no reference metric or judge "
                     "scores them")
    return Dataset(name=name or (path.stem if path.is_file() else path.name), format=format,
                   source_file=path.name, source_sha256=sha256_path(path), samples=samples,
                   language=language, notes=notes)


# Column names benchmarks use, compared trimmed and case-folded, in order of preference.
USUAL_COLUMNS = {"input": ("question", "query", "input", "prompt"),
                 "target": ("answer", "response", "output", "reference", "target",
                            "expert_answer", "true_answer", "reference_answer"),
                 "context": ("context", "summary", "discharge_summary", "document"),
                 "id": ("id",)}
FIELD_NAMES = {"input": "question", "target": "reference answer", "context": "document",
               "id": "id"}


def detect_mapping(names: list[str]) -> dict[str, str]:
    """The usual columns among `names`: question/answer, Question/Answer, query/response,
    input/output, ... in any case and with spaces around; each field's first match."""
    folded = {name.strip().casefold().replace(" ", "_"): name for name in names}
    chosen = {}
    for field, usual in USUAL_COLUMNS.items():
        column = next((folded[u] for u in usual if u in folded), None)
        if column is not None and column not in chosen.values():
            chosen[field] = column
    return chosen


def describe_mapping(mapping: dict[str, str]) -> str:
    return "columns: " + ", ".join(f"{FIELD_NAMES[field]} from {column.strip()!r}"
                                   for field, column in mapping.items())


_ARABIC_TO_PERSIAN = str.maketrans({"\u064a": "\u06cc",  # Arabic yeh -> Persian yeh
                                    "\u0649": "\u06cc",  # alef maksura -> Persian yeh
                                    "\u0643": "\u06a9"})  # Arabic kaf -> Persian keheh
_HORIZONTAL_SPACE = re.compile(r"[^\S\n]+")  # any whitespace but a line break (ZWNJ is not whitespace)


def normalise_persian(text: str) -> str:
    """Persian letters for their Arabic look-alikes (yeh, alef maksura, kaf), line
    breaks unified, runs of other whitespace (tabs, no-break and thin spaces, ...) made
    one space, blank-line runs one blank line, ends trimmed.  ZWNJ (U+200C, the
    half-space inside Persian words) is kept."""
    text = text.translate(_ARABIC_TO_PERSIAN)
    text = text.replace("\r\n", "\n").replace("\r", "\n").replace("\u2028", "\n").replace("\u2029", "\n")
    lines = [_HORIZONTAL_SPACE.sub(" ", line).strip(" ") for line in text.split("\n")]
    return re.sub(r"\n{3,}", "\n\n", "\n".join(lines)).strip()


# ---- checking fields ------------------------------------------------------------------


def _text_value(value: Any, source: str, number: int, column: str) -> str:
    if value is None:
        return ""
    if isinstance(value, str):
        return checked_text(value, source, number, column)
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        try:
            return str(value)
        except ValueError:  # an integer longer than Python prints
            raise DatasetFormatError(source, number, f"field {column!r} is a number too long "
                                     "to read") from None
    raise DatasetFormatError(source, number, f"field {column!r} is not text")


def _field(record: Record, column: str, source: str, number: int, *, required: bool = True,
           what: str = "", column_required: bool = False) -> str:
    """The stripped text of a column; a missing column or (if required) empty text is an
    error; `column_required`: the column must exist even when its text may be empty."""
    if column not in record:
        if not required and not column_required:
            return ""
        raise DatasetFormatError(source, number, f"it has no {column!r} field" + (f" ({what})" if what else ""),
                                 "Check the column names, or set the column mapping.")
    text = _text_value(record[column], source, number, column).strip()
    if required and not text:
        raise DatasetFormatError(source, number, f"its {column!r} field is empty"
                                 + (f" ({what})" if what else ""))
    return text


def _plain(value: Any) -> Any:
    """A metadata value as JSON-friendly Python (Parquet may give dates, decimals, bytes)."""
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, bytes):
        return value.decode("utf-8", errors="replace")
    return str(value)


def _check_storable(samples: list[Sample], source: str) -> None:
    """Every text a sample keeps, the columns no field was mapped to included, within the
    field limit and free of lone surrogates (which no database or file stores), so that a
    dataset that imports also saves.  These columns are named by position (among the ones
    kept): in a file without a header row their names are a patient's values."""
    for number, sample in enumerate(samples, 1):
        for position, (key, value) in enumerate(sample.metadata.items(), 1):
            stack = [key, value]
            while stack:
                item = stack.pop()
                if isinstance(item, str) and (problem := text_problem(item)) is not None:
                    raise DatasetFormatError(
                        source, number, f"a value in its column number {position} among those "
                        f"that are not the question, answer, context or id {problem}",
                        "Save the file again from its source, or leave that column out.")
                if isinstance(item, dict):
                    stack.extend(item.keys())
                    stack.extend(item.values())
                elif isinstance(item, (list, tuple)):
                    stack.extend(item)


def _check_unique(samples: list[Sample], source: str) -> None:
    seen: dict[str, int] = {}
    for number, sample in enumerate(samples, 1):
        if sample.id in seen:
            raise DatasetFormatError(source, number, "its id is also the id of "
                                     f"question {seen[sample.id]}; ids must be unique",
                                     "Give every record its own id, or leave the id column unmapped.")
        seen[sample.id] = number


def _record_id(record: Record, column: str | None, source: str, number: int) -> str:
    if column is None:
        return f"rec-{number:05d}"
    return _field(record, column, source, number, what="the record's id")


def _unique_ids(records: Iterable[tuple[int, str]], source: str) -> None:
    """Ids from the file itself must not repeat; the error names the second record."""
    seen: dict[str, int] = {}
    for number, sample_id in records:
        if sample_id in seen:
            raise DatasetFormatError(source, number, "its id repeats the id of record "
                                     f"{seen[sample_id]}; ids must be unique",
                                     "Give every record its own id.")
        seen[sample_id] = number


def _check_mapping(mapping: dict[str, str], source: str, required: tuple[str, ...]) -> dict[str, str]:
    if not isinstance(mapping, dict):
        raise DatasetFormatError(source, None, "the column mapping must map field names to column names")
    unknown = sorted(set(mapping) - set(_MAPPING_KEYS))
    if unknown:
        raise DatasetFormatError(source, None, "the column mapping has unknown fields "
                                 + ", ".join(map(repr, unknown)) + "; it takes "
                                 + ", ".join(_MAPPING_KEYS))
    missing = [key for key in required if not mapping.get(key)]
    if missing:
        raise DatasetFormatError(source, None, "the column mapping does not say which column holds "
                                 + " and ".join(missing),
                                 "Choose a column for " + " and ".join(missing) + ".")
    for key, column in mapping.items():
        if column is not None and (not isinstance(column, str) or not column.strip()):
            raise DatasetFormatError(source, None, f"the column mapping for {key!r} is not a column name")
    return {key: column for key, column in mapping.items() if column}


def _mapped_samples(path: Path, mapping: dict[str, str], *, context_required: bool,
                    target_required: bool = True,
                    normalise: Callable[[str], str] = lambda text: text) -> list[Sample]:
    source = path.name
    records = read_records(path)
    samples = []
    id_column = mapping.get("id")
    used = set(mapping.values())
    for number, record in records:
        sample_id = _record_id(record, id_column, source, number)
        context = ""
        if "context" in mapping:
            context = _field(record, mapping["context"], source, number, required=context_required,
                             what="the context")
        question = _field(record, mapping["input"], source, number, what="the question")
        answer = _field(record, mapping["target"], source, number, what="the reference answer",
                        required=target_required, column_required=True)
        metadata = {key: _plain(value) for key, value in record.items() if key not in used}
        samples.append(Sample(id=sample_id, input=normalise(question), target=normalise(answer),
                              context=normalise(context), metadata=metadata))
    if id_column:
        _unique_ids(zip((number for number, _ in records), (sample.id for sample in samples)), source)
    return samples


# ---- the formats ----------------------------------------------------------------------


_MEDISUMQA_CONTEXT = ("summary", "discharge_summary", "context")


def _import_medisumqa(path: Path, mapping: dict[str, str] | None,
                      notes: list[str]) -> tuple[list[Sample], str]:
    """MeDiSumQA: context = the discharge summary, input = the patient's question, target =
    the reference answer; ``split`` and every other column go to metadata."""
    records = read_records(path)
    source = path.name
    if not records:
        return [], "en"
    override = _check_mapping(mapping or {}, source, ())
    first = records[0][1]
    chosen = {"input": "question", "target": "answer"}
    if "id" in first and not ("id" in (mapping or {}) and not mapping["id"]):  # {"id": None}: use positions
        chosen["id"] = "id"
    context = next((c for c in _MEDISUMQA_CONTEXT if c in first), None)
    if context is None and "context" not in override:
        raise DatasetFormatError(source, 1, "it has no discharge summary field (looked for "
                                 + ", ".join(map(repr, _MEDISUMQA_CONTEXT)) + ")",
                                 "Rename the column, or map the context to it.")
    if context is not None:
        chosen["context"] = context
    chosen.update(override)
    return _mapped_samples(path, chosen, context_required=True), "en"


_HIV_FILE = re.compile(r"^HIV_evaluation_questionn?ai?re_category_(\d+)\.json$", re.IGNORECASE)


def _import_hivmedqa(path: Path, mapping: dict[str, str] | None,
                     notes: list[str]) -> tuple[list[Sample], str]:
    """HIVMedQA: JSON arrays of {question, true_answer}, one file per category; the
    category comes from the file name; ids are ``hiv-c<category>-q<position>``."""
    if path.is_dir():
        files = [(int(m.group(1)), p) for p in path.iterdir()
                 if p.is_file() and (m := _HIV_FILE.match(p.name))]
        if not files:
            raise DatasetFormatError(path.name, None, "the folder has no "
                                     "HIV_evaluation_questionare_category_N.json files",
                                     "Choose the folder that holds HIVMedQA's category files.")
        files.sort()
    else:
        match = _HIV_FILE.match(path.name)
        if not match:
            raise DatasetFormatError(path.name, None, "the file name does not give its category "
                                     "(HIVMedQA files are named HIV_evaluation_questionare_category_N.json)",
                                     "Import the original category file, or use the generic format.")
        files = [(int(match.group(1)), path)]
    samples = []
    for category, file in files:
        if file.suffix.lower() != ".json" or not read_text(file).lstrip().startswith("["):
            raise DatasetFormatError(file.name, None, "the file is not a JSON array of questions")
        for number, record in read_records(file):
            question = _field(record, "question", file.name, number, what="the question")
            answer = _field(record, "true_answer", file.name, number, what="the reference answer")
            metadata: dict[str, Any] = {"category": category, "file": file.name}
            metadata.update({k: _plain(v) for k, v in record.items() if k not in ("question", "true_answer")})
            samples.append(Sample(id=f"hiv-c{category}-q{number:03d}", input=question, target=answer,
                                  metadata=metadata))
    return samples, "en"


def _import_permedcqa(path: Path, mapping: dict[str, str] | None,
                      notes: list[str]) -> tuple[list[Sample], str]:
    """PerMedCQA: input = Title, a line break, and Question (Title may be empty); target =
    Expert_Answer; the other fields go to metadata.  Every text field, metadata included,
    goes through `normalise_persian`."""
    source = path.name
    samples = []
    for number, record in read_records(path):
        sample_id = _field(record, "instance_id", source, number, what="the record's id")
        title = normalise_persian(_field(record, "Title", source, number, required=False))
        question = normalise_persian(_field(record, "Question", source, number, what="the question"))
        answer = normalise_persian(_field(record, "Expert_Answer", source, number,
                                          what="the expert's answer"))
        metadata = {}
        for key, value in record.items():
            if key in ("instance_id", "Title", "Question", "Expert_Answer"):
                continue
            value = _plain(value)
            metadata[key] = normalise_persian(value) if isinstance(value, str) else value
        samples.append(Sample(id=sample_id, input=f"{title}\n{question}" if title else question,
                              target=answer, metadata=metadata))
    _unique_ids(enumerate((s.id for s in samples), 1), source)
    return samples, "fa"


def _xml_text(element: ET.Element | None, *, paragraphs: bool = False) -> str:
    if element is None:
        return ""
    text = "".join(element.itertext())
    if not paragraphs:
        return re.sub(r"\s+", " ", text).strip()
    lines = [re.sub(r"[^\S\n]+", " ", line).strip() for line in text.splitlines()]
    return re.sub(r"\n{3,}", "\n\n", "\n".join(lines)).strip()


def _import_medquad(path: Path, mapping: dict[str, str] | None,
                    notes: list[str]) -> tuple[list[Sample], str]:
    """MedQuAD: one sample per question-answer pair with a non-empty answer.

    The published folders use three layouts: <Document id source url> (most), <doc docid
    corpus url> with lower-case <qaPairs><pair><question>/<answer> and <doctitle-focus>,
    and <DiseaseFile fid source url> (part of the CDC collection); all are read.  A file
    with no pairs is skipped with a note, not a refusal of the folder.  Pairs whose
    answer is empty are skipped and counted: MedQuAD removed the answers of three
    MedlinePlus collections (A.D.A.M. encyclopedia, drugs, herbs) for copyright, and those
    pairs cannot be scored.  A folder is read with its sub-folders (MedQuAD's
    collections); ids are the question's qid, prefixed with the sub-folder for files
    below the chosen folder.  Metadata: focus, qtype, document (its id), url, source.
    """
    if path.is_dir():
        files = sorted((p for p in path.rglob("*.xml") if p.is_file()),
                       key=lambda p: p.relative_to(path).parts)
        if not files:
            raise DatasetFormatError(path.name, None, "the folder has no MedQuAD .xml documents",
                                     "Choose a MedQuAD collection folder, such as 5_NIDDK_QA.")
    else:
        files = [path]
    samples = []
    seen: dict[str, str] = {}
    without_pairs: list[str] = []
    without_answer = 0
    for file in files:
        prefix = "/".join(file.relative_to(path).parts[:-1]) if path.is_dir() else ""
        root = _medquad_root(file)
        layout = _MEDQUAD_ROOTS.get(root.tag)
        if layout is None:
            raise DatasetFormatError(file.name, None, f"not a MedQuAD document (its root element is "
                                     f"<{root.tag}>, not " + ", ".join(f"<{t}>" for t in _MEDQUAD_ROOTS) + ")")
        id_attribute, source_attribute = layout
        focus = _xml_text(_first(root, "Focus", "doctitle-focus"))
        pairs = root.findall("./QAPairs/QAPair") + root.findall("./qaPairs/pair")
        if not pairs:
            without_pairs.append(f"{prefix}/{file.name}" if prefix else file.name)
            continue
        for number, pair in enumerate(pairs, 1):
            question_element = _first(pair, "Question", "question")
            if question_element is None:
                raise DatasetFormatError(file.name, number, "the question-answer pair has no <Question>")
            question = checked_text(_xml_text(question_element), file.name, number, "Question")
            if not question:
                raise DatasetFormatError(file.name, number, "its <Question> is empty")
            qid = (question_element.get("qid") or "").strip()
            if not qid:
                raise DatasetFormatError(file.name, number, "its <Question> has no qid")
            answer = checked_text(_xml_text(_first(pair, "Answer", "answer"), paragraphs=True),
                                  file.name, number, "Answer")
            if not answer:
                without_answer += 1
                continue
            sample_id = f"{prefix}/{qid}" if prefix else qid
            if sample_id in seen:
                raise DatasetFormatError(file.name, number, "its qid is also used in "
                                         f"{seen[sample_id]}; ids must be unique")
            seen[sample_id] = file.name
            samples.append(Sample(id=sample_id, input=question, target=answer, metadata={
                "focus": focus, "qtype": question_element.get("qtype") or "",
                "document": root.get(id_attribute) or file.stem, "url": root.get("url") or "",
                "source": root.get(source_attribute) or ""}))
    if without_pairs:
        notes.append(f"{len(without_pairs)} files have no question-answer pairs and were skipped: "
                     + ", ".join(without_pairs[:5]) + (" …" if len(without_pairs) > 5 else ""))
    if without_answer:
        notes.append(f"{without_answer} questions have no answer in the file (MedQuAD removed some "
                     "collections' answers) and were skipped")
    return samples, "en"


def _medquad_root(file: Path) -> ET.Element:
    """A MedQuAD file's root element, read within the file limit; its texts are checked
    against the field limit after entities are expanded (by the caller)."""
    size = file.stat().st_size
    if size > LIMITS.file_bytes:
        raise DatasetFormatError(file.name, None, f"the file is {size / 1e6:.0f} MB, more than "
                                 f"the {LIMITS.file_bytes / 1e6:.0f} MB Lumen reads",
                                 "MedQuAD's files are a few kilobytes each; check that this is "
                                 "the right file.")
    try:
        return ET.fromstring(file.read_bytes())
    except LookupError:  # an XML declaration naming an encoding Python does not know
        raise DatasetFormatError(file.name, None, "it declares a text encoding Lumen cannot "
                                 "read", "Save the file again as UTF-8 (MedQuAD's files are "
                                 "UTF-8).") from None
    except ET.ParseError as exc:
        line, column = exc.position
        if exc.code == pyexpat.errors.codes[pyexpat.errors.XML_ERROR_UNDEFINED_ENTITY]:
            raise DatasetFormatError(file.name, None, "it uses an entity that the file does not "
                                     f"define (line {line}, column {column}); entities kept in "
                                     "other files or on the network are never fetched",
                                     "Use MedQuAD's files as published: they use no such "
                                     "entities.") from None
        raise DatasetFormatError(file.name, None, f"not well-formed XML at line {line}, column {column}",
                                 "The file may be cut short or damaged; copy it again.") from None


# MedQuAD's root elements: (the attribute holding the document's id, the one naming its source).
_MEDQUAD_ROOTS = {"Document": ("id", "source"), "doc": ("docid", "corpus"),
                  "DiseaseFile": ("fid", "source")}


def _first(element: ET.Element, *tags: str) -> ET.Element | None:
    """The first child with one of `tags` (the layouts differ in case)."""
    return next((found for tag in tags if (found := element.find(tag)) is not None), None)


def _import_generic(path: Path, mapping: dict[str, str] | None,
                    notes: list[str]) -> tuple[list[Sample], str]:
    """Any tabular file: the mapping names the columns for input and target (required)
    and context and id (optional); every other column goes to metadata."""
    if mapping is None:
        names = columns(path)
        mapping = detect_mapping(names)
        missing = [FIELD_NAMES[f] for f in ("input", "target") if f not in mapping]
        if missing:
            raise DatasetFormatError(
                path.name, None, f"none of the {len(names)} columns of its first row has a "
                f"usual name for the {' or the '.join(missing)}",
                "Name the columns with --map input=COLUMN --map target=COLUMN (in the window: "
                "the column dialog, which lists them).")
        notes.append("Chose the " + describe_mapping(mapping))
    chosen = _check_mapping(mapping, path.name, ("input", "target"))
    return _mapped_samples(path, chosen, context_required=False, target_required=False), "en"


def _import_cases(path: Path, mapping: dict[str, str] | None,
                  notes: list[str]) -> tuple[list[Sample], str]:
    """A labelled case set: the complaint is the input, the diagnosis the target, and every
    sample carries the set's diagnoses as the labels to choose from (DoctorRAG's diagnosis mode)."""
    from ..knowledge.cases import read_cases

    case_file = read_cases(path, mapping)
    labels = sorted({r.diagnosis for r in case_file.records if r.diagnosis})
    for number, record in enumerate(case_file.records, start=1):
        if not record.diagnosis:
            raise DatasetFormatError(path.name, number, "the case has no diagnosis",
                                     "Every case of a labelled set needs its diagnosis.")
    if len(labels) < 2:
        raise DatasetFormatError(path.name, None, "it has fewer than two different diagnoses",
                                 "A diagnosis benchmark needs at least two labels to choose from.")
    return [Sample(r.key, r.complaint, r.diagnosis, "",
                   {"labels": labels, "demographics": r.demographics,
                    "removed": len(r.removals)}) for r in case_file.records], "en"


def _complaint_list(value: Any, source: str, number: int) -> list[str]:
    """A case's further complaints: a list (JSON, Parquet), or in a CSV cell a JSON list or
    one complaint per line (a leading "-" or "*" dropped)."""
    if isinstance(value, str):
        text = checked_text(value, source, number, "complaints").strip()
        if text.startswith("["):
            value = json_value(text, source, number, "its 'complaints' field")
        else:
            value = [line.strip().lstrip("-*• ").strip() for line in text.split("\n")]
    if not isinstance(value, (list, tuple)):
        raise DatasetFormatError(source, number, "its 'complaints' field is not a list of texts")
    complaints = [_text_value(item, source, number, "complaints").strip() for item in value]
    return [c for c in complaints if c]


def _image_reference(value: Any) -> dict[str, str] | None:
    """What a text-only run keeps of a case's image: its path, or the sha256 of its bytes
    (Parquet image columns are {"bytes": ..., "path": ...})."""
    import hashlib

    if value is None or value == "":
        return None
    if isinstance(value, dict):
        data, path = value.get("bytes"), value.get("path")
        if isinstance(data, (bytes, bytearray)) and data:
            return {"sha256": hashlib.sha256(data).hexdigest(), **({"path": str(path)} if path else {})}
        return {"path": str(path)} if path else None
    if isinstance(value, (bytes, bytearray)):
        return {"sha256": hashlib.sha256(value).hexdigest()}
    return {"path": str(value)}


def _import_dialogue(path: Path, mapping: dict[str, str] | None,
                     notes: list[str]) -> tuple[list[Sample], str]:
    """3MDBench consultation cases (issue #18): the patient's first complaint is the input,
    the diagnosis the target; the further complaints, the temperament and the label list
    travel in the metadata for the simulated patient and the doctor."""
    from .dialogue import dialogue_protocol

    protocol = dialogue_protocol()
    labels = list(protocol.labels)
    samples, images = [], 0
    for number, record in read_records(path):
        case_id = (_field(record, "id", path.name, number, what="the case's id")
                   if "id" in record else f"case-{number:05d}")
        complaint = _field(record, "general_complaint", path.name, number,
                           what="what the patient says first")
        if "complaints" not in record:
            raise DatasetFormatError(path.name, number, "it has no 'complaints' field "
                                     "(the further complaints the patient may tell)")
        complaints = _complaint_list(record["complaints"], path.name, number)
        diagnosis = protocol.label_of(_field(record, "diagnosis", path.name, number))
        if diagnosis is None:
            raise DatasetFormatError(path.name, number, "its diagnosis is not one of the "
                                     f"{len(labels)} labels of the protocol",
                                     "Check the spelling against resources/dialogue.toml.")
        temperament = _field(record, "personality", path.name, number).casefold()
        if temperament not in protocol.temperaments:
            raise DatasetFormatError(path.name, number, "its personality is not one of "
                                     + ", ".join(protocol.temperaments))
        image = _image_reference(record.get("image"))
        images += image is not None
        samples.append(Sample(case_id, complaint, diagnosis, "", {
            "complaints": complaints, "personality": temperament, "labels": labels,
            **({"image": image} if image else {})}))
    _unique_ids(((n, s.id) for n, s in enumerate(samples, 1)), path.name)
    if images:
        notes.append(f"{images} of {len(samples)} cases carry an image; Lumen's consultations "
                     "are text only, so the images are kept by reference and not used")
    return samples, "en"


_IMPORTERS: dict[str, Callable[[Path, dict[str, str] | None, list[str]], tuple[list[Sample], str]]] = {
    "medisumqa": _import_medisumqa,
    "hivmedqa": _import_hivmedqa,
    "permedcqa": _import_permedcqa,
    "medquad": _import_medquad,
    "generic": _import_generic,
    "cases": _import_cases,
    "dialogue": _import_dialogue,
}
