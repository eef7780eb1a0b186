"""Hostile and odd files never crash an importer (issue #15).

Hypothesis writes files (raw bytes, and JSON, CSV, TOML and XML built to reach the
readers' corners: deep nesting, integers of thousands of digits, lone surrogates, stray
quotes, unknown encodings) and hands them to every reader Lumen has: the benchmark
importers in every format, the case importer, the glossary's local-entry and MedlinePlus
importers, and the document reader.  Each must return, or raise a LumenError with a
message; nothing else, within the deadline; what a benchmark importer returns is saved into
a real database (issue #32: storage refused a lone surrogate the reader let through), and a
failed import into the database leaves it as it was.

`make test` runs a few hundred examples per reader; LUMEN_FUZZ_EXAMPLES raises that
(bench/bench_fuzz.py runs over 100,000 in all).
"""

from __future__ import annotations

import json
import os
import re
import string
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from desktop_app.core.documents import read_document
from desktop_app.core.errors import LumenError
from desktop_app.core.evaluation.importers import import_dataset
from desktop_app.core.knowledge.cases import read_cases

EXAMPLES = int(os.environ.get("LUMEN_FUZZ_EXAMPLES", "250"))
FUZZ = settings(max_examples=EXAMPLES, deadline=int(os.environ.get("LUMEN_FUZZ_DEADLINE_MS", "5000")),
                derandomize=not os.environ.get("LUMEN_FUZZ_EXAMPLES"),
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                       HealthCheck.function_scoped_fixture])

# ---- what the files are made of --------------------------------------------------------

# A value no message may quote (issue #32): among the texts and the column names, which in
# a file without a header row are a patient's values too.
MARKER = "Zqx-Patient-Marker-7731"
_WORDS = st.sampled_from(["question", "answer", "id", "complaint", "diagnosis", "age", "name",
                          "summary", "true_answer", "Expert_Answer", "Question", "qid", "x", "",
                          MARKER])
_ODD_TEXT = st.one_of(
    st.text(max_size=40),
    st.sampled_from(["\ud800", "a\udfffb", "\u2028", "\x00", "\"", "'", "\\", "\r\n", "é" * 3,
                     MARKER, MARKER + "\ud800"]),
)
class BigNumber:
    """An integer of thousands of digits, written into the file as digits (Python itself
    will not print one that long)."""

    def __init__(self, digits: int) -> None:
        self.digits = digits

    def __repr__(self) -> str:
        return f"BigNumber({self.digits} digits)"


_ODD_NUMBERS = st.one_of(st.integers(), st.floats(allow_nan=True, allow_infinity=True),
                         st.sampled_from([BigNumber(5000), BigNumber(4400), 1e308, -0.0]))
_SCALARS = st.one_of(st.none(), st.booleans(), _ODD_NUMBERS, _ODD_TEXT)
_VALUES = st.recursive(_SCALARS, lambda inner: st.one_of(
    st.lists(inner, max_size=4), st.dictionaries(st.one_of(_WORDS, st.text(max_size=8)), inner, max_size=4)),
    max_leaves=12)
_RECORDS = st.lists(st.dictionaries(_WORDS, _VALUES, max_size=6), max_size=5)


def _json_text(value) -> str:
    """JSON as a writer would give it, big numbers written out in digits."""
    def big(item):
        return f"BIG{item.digits}BIG"
    text = json.dumps(value, ensure_ascii=False, default=big)
    return re.sub(r'"BIG(\d+)BIG"', lambda m: "9" * int(m.group(1)), text)


@st.composite
def jsonl_files(draw) -> bytes:
    records = draw(_RECORDS)
    lines = [_json_text(r) for r in records]
    lines += draw(st.lists(st.sampled_from(["[" * 3000, "{\"a\": " + "9" * 5000 + "}", "{",
                                            "\"\\ud800\"", "{\"question\": \"\\udc00\"}", "null",
                                            "\u2028", ""]), max_size=2))
    order = draw(st.permutations(lines))
    text = "\n".join(order)
    return _encoded(draw, text)


@st.composite
def json_array_files(draw) -> bytes:
    text = _json_text(draw(_RECORDS))
    if draw(st.booleans()):
        cut = draw(st.integers(0, len(text)))
        text = text[:cut]
    return _encoded(draw, text)


@st.composite
def csv_files(draw) -> bytes:
    columns = draw(st.lists(_WORDS, min_size=1, max_size=5))
    rows = draw(st.lists(st.lists(st.one_of(_ODD_TEXT, st.just("\"open quote"), st.just("a\"b"),
                                            st.just("1e999"), st.just("200")),
                                  min_size=0, max_size=6), max_size=5))
    text = "\n".join([",".join(columns)] + [",".join(row) for row in rows])
    return _encoded(draw, text)


def _encoded(draw, text: str) -> bytes:
    encoding = draw(st.sampled_from(["utf-8", "utf-8-sig", "utf-16", "cp1252", "surrogates"]))
    if encoding == "surrogates":
        return text.encode("utf-8", errors="surrogatepass")
    return text.encode(encoding, errors="replace")


@st.composite
def medquad_xml(draw) -> bytes:
    declaration = draw(st.sampled_from(["", "<?xml version='1.0' encoding='UTF-8'?>",
                                        "<?xml version='1.0' encoding='x-unknown-9'?>",
                                        "<?xml version='1.0' encoding='utf-16'?>"]))
    pairs = "".join(
        f"<QAPair><Question qid='{draw(st.text(string.ascii_letters, max_size=4))}'>"
        f"{draw(st.text(max_size=20)).replace('<', '')}</Question>"
        f"<Answer>{draw(st.text(max_size=20)).replace('<', '')}</Answer></QAPair>"
        for _ in range(draw(st.integers(0, 3))))
    body = draw(st.sampled_from([f"<Document id='1'><QAPairs>{pairs}</QAPairs></Document>",
                                 f"<doc><qaPairs>{pairs}</qaPairs></doc>", "<Document>", "",
                                 "<!DOCTYPE a [<!ENTITY e SYSTEM 'http://example.invalid/x'>]><Document>&e;</Document>"]))
    return (declaration + body).encode("utf-8", errors="surrogatepass")


def _write(folder: Path, name: str, data: bytes) -> Path:
    path = folder / name
    path.write_bytes(data)
    return path


def _says_without_quoting(exc: LumenError) -> None:
    """A message, with what to do, that quotes no value of the file."""
    assert exc.message
    assert MARKER not in exc.message + exc.fix, exc.message + " / " + exc.fix


def _never_crashes(call) -> None:
    try:
        call()
    except LumenError as exc:
        _says_without_quoting(exc)
    # anything else propagates and fails the test, with the input that caused it


# ---- the benchmark importers -----------------------------------------------------------


def _imports_and_saves(store, path: Path, format: str) -> None:
    """Import, and save what imported (the database write finds what storage refuses, a
    lone surrogate in a column no field was mapped to); a refusal saves nothing."""
    from desktop_app.core.evaluation.runs import EvaluationStore

    before = store.query("SELECT count(*) FROM eval_sample")[0][0]
    try:
        dataset = import_dataset(path, format)
    except LumenError as exc:
        _says_without_quoting(exc)
        assert store.query("SELECT count(*) FROM eval_sample")[0][0] == before
        return
    EvaluationStore(store).save_dataset(dataset)
    assert MARKER not in json.dumps(store.audit_entries(1))  # the import's audit entry


@pytest.mark.parametrize("format, name", [("medisumqa", "x.jsonl"), ("generic", "x.jsonl"),
                                          ("permedcqa", "x.jsonl"), ("cases", "x.jsonl"),
                                          ("dialogue", "x.jsonl")])
@FUZZ
@given(data=st.one_of(jsonl_files(), st.binary(max_size=300)))
def test_jsonl_benchmarks_never_crash(fuzz_store, format, name, data):
    with tempfile.TemporaryDirectory() as folder:
        path = _write(Path(folder), name, data)
        _imports_and_saves(fuzz_store, path, format)


@pytest.mark.parametrize("format, name", [
    ("hivmedqa", "HIV_evaluation_questionare_category_1.json"), ("generic", "x.json"),
    ("medisumqa", "x.json"), ("dialogue", "x.json")])
@FUZZ
@given(data=st.one_of(json_array_files(), st.binary(max_size=300)))
def test_json_array_benchmarks_never_crash(fuzz_store, format, name, data):
    with tempfile.TemporaryDirectory() as folder:
        path = _write(Path(folder), name, data)
        _imports_and_saves(fuzz_store, path, format)


@pytest.mark.parametrize("format", ["generic", "medisumqa", "cases", "dialogue"])
@FUZZ
@given(data=st.one_of(csv_files(), st.binary(max_size=300)))
def test_csv_benchmarks_never_crash(fuzz_store, format, data):
    with tempfile.TemporaryDirectory() as folder:
        path = _write(Path(folder), "x.csv", data)
        _imports_and_saves(fuzz_store, path, format)


@FUZZ
@given(data=st.one_of(medquad_xml(), st.binary(max_size=300)))
def test_medquad_xml_never_crashes(fuzz_store, data):
    with tempfile.TemporaryDirectory() as folder:
        path = _write(Path(folder), "0001.xml", data)
        _imports_and_saves(fuzz_store, path, "medquad")


# ---- cases, documents, glossary ---------------------------------------------------------


@pytest.mark.parametrize("name, files", [("cases.jsonl", jsonl_files()), ("cases.csv", csv_files()),
                                         ("cases.json", json_array_files())])
@FUZZ
@given(data=st.data())
def test_case_files_never_crash(name, files, data):
    content = data.draw(st.one_of(files, st.binary(max_size=300)))
    with tempfile.TemporaryDirectory() as folder:
        path = _write(Path(folder), name, content)
        _never_crashes(lambda: read_cases(path))


@pytest.mark.parametrize("name", ["summary.txt", "summary.md", "summary.docx", "summary.pdf"])
@FUZZ
@given(data=st.one_of(st.binary(max_size=400), st.text(max_size=200).map(
    lambda t: t.encode("utf-8", errors="surrogatepass")),
    st.sampled_from([b"PK\x03\x04" + b"\x00" * 40, b"%PDF-1.7\n1 0 obj << /Length 99999 >>",
                     b"\xff\xfe" + "text".encode("utf-16-le"), b"\xfe\xff\x00"])))
def test_documents_never_crash(name, data):
    with tempfile.TemporaryDirectory() as folder:
        path = _write(Path(folder), name, data)
        _never_crashes(lambda: read_document(path))


@st.composite
def glossary_toml(draw) -> bytes:
    rows = draw(st.lists(st.dictionaries(
        st.sampled_from(["term", "definition", "category", "aliases", "abbreviations", "hidden"]),
        st.one_of(st.text(max_size=30), st.lists(st.text(max_size=8), max_size=3), st.integers(),
                  st.booleans()), max_size=6), max_size=4))
    import tomli_w

    try:
        text = tomli_w.dumps({"entry": rows})
    except (TypeError, ValueError):
        text = "entry = 3"
    text += draw(st.sampled_from(["", "\n[[entry]]\nterm = ", "\nentry = [" * 40, "\n= x"]))
    return text.encode("utf-8", errors="surrogatepass")


@FUZZ
@given(data=st.one_of(glossary_toml(), st.binary(max_size=300)))
def test_local_glossary_files_never_crash_and_never_import_in_part(fuzz_store, data):
    from desktop_app.core.glossary import entries

    before = fuzz_store.query("SELECT count(*) FROM glossary_local")[0][0]
    with tempfile.TemporaryDirectory() as folder:
        path = _write(Path(folder), "local.toml", data)
        try:
            entries.import_local(fuzz_store, path)
        except LumenError as exc:
            assert exc.message
            assert fuzz_store.query("SELECT count(*) FROM glossary_local")[0][0] == before


@FUZZ
@given(data=st.one_of(st.binary(max_size=300), st.sampled_from([
    b"<?xml version='1.0' encoding='x-unknown-9'?><health-topics/>",
    b"<health-topics><health-topic id='1' title='A' language='English' url='u'>",
    b"<health-topics>" + b"<a>" * 3000,
    b"<!DOCTYPE h [<!ENTITY e SYSTEM 'file:///etc/passwd'>]><health-topics>&e;</health-topics>",
    b"<!DOCTYPE h [<!ENTITY a 'aaaaaaaaaa'><!ENTITY b '&a;&a;&a;&a;&a;&a;&a;&a;&a;&a;'>"
    b"<!ENTITY c '&b;&b;&b;&b;&b;&b;&b;&b;&b;&b;'>]><health-topics>&c;</health-topics>"])))
def test_medlineplus_files_never_crash_and_never_import_in_part(fuzz_store, data):
    from desktop_app.core.glossary.medlineplus import import_medlineplus

    before = fuzz_store.query("SELECT count(*) FROM mplus_topic")[0][0]
    with tempfile.TemporaryDirectory() as folder:
        path = _write(Path(folder), "mplus_topics_2025-01-01.xml", data)
        try:
            import_medlineplus(fuzz_store, path)
        except LumenError as exc:
            assert exc.message
            assert fuzz_store.query("SELECT count(*) FROM mplus_topic")[0][0] == before


@pytest.fixture(scope="module")
def fuzz_store(tmp_path_factory):
    from desktop_app.core.store import open_store

    path = tmp_path_factory.mktemp("fuzz-store") / "lumen.db"
    with open_store(path, "fuzzing passphrase") as store:
        yield store


# ---- no message quotes a record ---------------------------------------------------------


def _marked(**fields) -> dict:
    return {key: (value if value is not None else MARKER) for key, value in fields.items()}


def _bad_files() -> list[tuple[str, str, str]]:
    """(reader, file name, content): bad records whose every value holds the marker."""
    m = MARKER
    record = _marked(id=None, summary=None, question=None, answer=None, age=None, name=None)
    jsonl = [
        ("medisumqa", "dupes.jsonl", "\n".join(json.dumps(record) for _ in range(2))),
        ("medisumqa", "empty.jsonl", json.dumps({**record, "answer": "  "})),
        ("medisumqa", "nested.jsonl", json.dumps({**record, "question": {"text": m}})),
        ("medisumqa", "broken.jsonl", json.dumps(record)[:-3]),
        ("medisumqa", "surrogate.jsonl", json.dumps(record).replace(m, m + "\\ud800", 1)),
        # Issue #32: a lone surrogate in a column no field is mapped to, and files without
        # a header row, whose first row (the column names) is a patient's values.
        ("medisumqa", "unmapped.jsonl", json.dumps({**record, "note": m + "\ud800"})),
        ("generic", "no-header.csv", f"{m} 1,{m} 2\n{m} 3,{m} 4\n"),
        ("generic", "twice.csv", f"{m},{m}\nq,a\n"),
        ("generic", "list.jsonl", json.dumps([m, m])),
        ("generic", "quote.csv", f"question,answer\n\"{m},{m}\n"),
        ("generic", "fields.csv", f"question,answer\n{m},{m},{m}\n"),
        ("hivmedqa", "HIV_evaluation_questionare_category_1.json",
         json.dumps([{"question": m, "true_answer": m}, {"question": m}])),
        ("permedcqa", "p.jsonl", "\n".join(json.dumps({"Question": m, "Expert_Answer": m, "id": m})
                                           for _ in range(2))),
        ("medquad", "0001.xml", f"<Document id='{m}'><QAPairs>"
         + f"<QAPair><Question qid='{m}'>{m}</Question><Answer>{m}</Answer></QAPair>" * 2
         + "</QAPairs></Document>"),
    ]
    cases = [
        # (an id that holds the case's name is replaced by its row: the name differs here)
        ("cases", "dupes.csv", f"id,complaint,age,name\n{m},{m},40,Ann Lee\n{m},{m},41,Bo Ek\n"),
        ("cases", "age.csv", f"id,complaint,age,name\n1,{m},{m},{m}\n"),
        ("cases", "old.jsonl", json.dumps({"id": m, "complaint": m, "age": 10 ** 6, "name": m})),
        ("cases", "empty.jsonl", json.dumps({"id": m, "complaint": "", "name": m})),
        ("cases", "quote.csv", f"id,complaint\n1,\"{m}\n"),
        ("cases", "sex.jsonl", json.dumps({"id": m, "complaint": m, "sex": {"x": m}})),
        ("cases", "no-header.csv", f"{m} 1,{m} 2\n{m} 3,{m} 4\n"),
        ("cases", "twice.csv", f"{m},{m}\nq,a\n"),
        ("labelled", "no-diagnosis.jsonl", json.dumps({"id": m, "complaint": m,
                                                        "diagnosis": "acne"}) + "\n"
         + json.dumps({"id": m + " 2", "complaint": m})),
    ]
    def case(**change) -> str:
        return json.dumps({"id": m, "general_complaint": m, "complaints": [m, m],
                           "diagnosis": "acne", "personality": "sanguine", **change})
    dialogues = [
        ("dialogue", "label.jsonl", case(diagnosis=m)),
        ("dialogue", "temperament.jsonl", case(personality=m)),
        ("dialogue", "dupes.jsonl", case() + "\n" + case()),
        ("dialogue", "complaints.jsonl", case(complaints={"x": m})),
        ("dialogue", "list.csv", "id,general_complaint,complaints,diagnosis,personality\n"
                                 f"1,{m},\"[{m}\",acne,sanguine\n"),
    ]
    return jsonl + cases + dialogues


@pytest.mark.parametrize("reader, name, content", _bad_files(),
                         ids=[f"{r}-{n}" for r, n, _c in _bad_files()])
def test_no_message_or_log_quotes_a_bad_record(reader, name, content, tmp_path, caplog):
    import logging

    caplog.set_level(logging.DEBUG)
    path = tmp_path / name
    path.write_text(content, encoding="utf-8")
    with pytest.raises(LumenError) as caught:
        if reader == "cases":
            read_cases(path)
        elif reader == "labelled":
            import_dataset(path, "cases")
        else:
            import_dataset(path, reader)
    shown = str(caught.value) + repr(caught.value) + caplog.text
    assert MARKER not in shown, shown
    assert "record" in shown or name in shown  # it still says where
