"""Benchmark importers: each format on the real files where they are available
(../shared/data, absent on a user's machine) or on faithful samples written for
these tests (tests/data/benchmarks), and the malformed cases, each of which must
name the record and import nothing."""

from __future__ import annotations

import csv
import json
import re
import subprocess
import sys
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from desktop_app.core.errors import LumenError
from desktop_app.core.errors import DatasetFormatError
from desktop_app.core.evaluation.dataset import Dataset
from desktop_app.core.hashing import sha256_path
from desktop_app.core.choices import FORMATS
from desktop_app.core.evaluation.importers import columns, import_dataset, normalise_persian

ROOT = Path(__file__).resolve().parents[1]
SHARED_DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data"
HIVMEDQA = SHARED_DATA / "hivmedqa"
MEDQUAD_NIDDK = SHARED_DATA / "medquad" / "5_NIDDK_QA"
FIXTURES = Path(__file__).resolve().parent / "data" / "benchmarks"
DEMO = ROOT / "resources" / "benchmarks" / "lumen-demo.jsonl"

needs_hivmedqa = pytest.mark.skipif(
    not HIVMEDQA.is_dir(), reason="../shared/data/hivmedqa is absent (as on a user's machine)")
needs_medquad = pytest.mark.skipif(
    not MEDQUAD_NIDDK.is_dir(), reason="../shared/data/medquad/5_NIDDK_QA is absent (as on a user's machine)")

ZWNJ = "\u200c"
ARABIC_LETTERS = ("\u064a", "\u0649", "\u0643")  # yeh, alef maksura, kaf


def write_jsonl(path: Path, records: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records), encoding="utf-8")
    return path


def medisumqa_record(n: int, **changes) -> dict:
    record = {"id": f"t-{n}", "summary": f"Discharge summary number {n}: take aspirin 81 mg daily.",
              "question": f"Question {n}: what dose of aspirin?", "answer": "81 mg once a day.",
              "split": "test"}
    record.update(changes)
    return record


def texts(sample) -> list[str]:
    return [sample.input, sample.target, sample.context,
            *(v for v in sample.metadata.values() if isinstance(v, str))]


# ---- the format list and general errors -----------------------------------------------


def test_formats_are_described():
    assert set(FORMATS) == {"medisumqa", "hivmedqa", "permedcqa", "medquad", "generic", "cases",
                            "dialogue"}
    assert all(isinstance(text, str) and text and "\n" not in text for text in FORMATS.values())


def test_unknown_format_lists_the_formats():
    with pytest.raises(LumenError) as caught:
        import_dataset(DEMO, "medqa")
    message = str(caught.value)
    assert "'medqa'" in message
    for name in FORMATS:
        assert name in message


def test_missing_path_is_a_clear_error(tmp_path):
    missing = tmp_path / "nowhere.jsonl"
    with pytest.raises(DatasetFormatError) as caught:
        import_dataset(missing, "medisumqa")
    assert caught.value.record is None
    assert "no file or folder" in caught.value.message and str(missing) in caught.value.message
    with pytest.raises(DatasetFormatError):
        columns(missing)


def test_unreadable_extension_and_empty_file(tmp_path):
    odd = tmp_path / "benchmark.xlsx"
    odd.write_bytes(b"PK\x03\x04")
    with pytest.raises(DatasetFormatError, match=r"\.xlsx"):
        import_dataset(odd, "generic", mapping={"input": "q", "target": "a"})
    empty = tmp_path / "empty.jsonl"
    empty.write_text("\n\n", encoding="utf-8")
    with pytest.raises(DatasetFormatError, match="no questions"):
        import_dataset(empty, "medisumqa")


def test_importers_do_not_import_qt():
    code = ("import sys; import desktop_app.core.evaluation.importers; "
            "print(sorted(m for m in sys.modules if m.startswith(('PySide', 'PyQt', 'shiboken'))))")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT,
                            timeout=60)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "[]"


# ---- medisumqa ------------------------------------------------------------------------


def test_lumen_demo_benchmark_imports_as_medisumqa():
    dataset = import_dataset(DEMO, "medisumqa")
    assert isinstance(dataset, Dataset)
    assert (dataset.format, dataset.name, dataset.source_file, dataset.language) == \
        ("medisumqa", "lumen-demo", "lumen-demo.jsonl", "en")
    assert dataset.source_sha256 == sha256_path(DEMO)
    assert len(dataset.samples) == 84
    raw = [json.loads(line) for line in DEMO.read_text(encoding="utf-8").splitlines() if line.strip()]
    for sample, record in zip(dataset.samples, raw):
        assert sample.id == record["id"]
        assert sample.context == record["summary"].strip() and sample.context
        assert sample.input == record["question"].strip() and sample.target == record["answer"].strip()
        assert sample.metadata == {"summary_id": record["summary_id"], "split": record["split"]}
    assert {s.metadata["split"] for s in dataset.samples} == {"dev", "test"}
    # stable: a second import gives the same ids in the same order
    assert [s.id for s in import_dataset(DEMO, "medisumqa").samples] == [s.id for s in dataset.samples]


def test_medisumqa_csv_with_discharge_summary_column():
    path = FIXTURES / "medisumqa_sample.csv"
    dataset = import_dataset(path, "medisumqa", name="fixture")
    assert dataset.name == "fixture" and len(dataset.samples) == 2
    first = dataset.samples[0]
    assert first.id == "fx-1"
    assert first.context.startswith("Admission Date: 03/02/2025\nDischarge Date")  # quoted line breaks kept
    assert "cephalexin 500 mg" in first.target
    assert first.metadata == {"split": "test", "note_source": "fixture"}
    assert columns(path) == ["id", "discharge_summary", "question", "answer", "split", "note_source"]


def test_medisumqa_without_ids_gets_stable_positional_ids(tmp_path):
    records = [{k: v for k, v in medisumqa_record(n).items() if k != "id"} for n in (1, 2, 3)]
    path = write_jsonl(tmp_path / "no-ids.jsonl", records)
    first = [s.id for s in import_dataset(path, "medisumqa").samples]
    assert first == ["rec-00001", "rec-00002", "rec-00003"]
    assert [s.id for s in import_dataset(path, "medisumqa").samples] == first
    with_ids = write_jsonl(tmp_path / "ids.jsonl", [medisumqa_record(n) for n in (1, 2)])
    unmapped = import_dataset(with_ids, "medisumqa", mapping={"id": None})
    assert [s.id for s in unmapped.samples] == ["rec-00001", "rec-00002"]
    assert unmapped.samples[0].metadata["id"] == "t-1"


def test_medisumqa_mapping_overrides_column_names(tmp_path):
    records = [{"note": "Summary text: start lisinopril 10 mg.", "ask": "Which new medicine?",
                "gold": "Lisinopril 10 mg.", "key": f"k{n}", "summary": "another column"} for n in (1, 2)]
    path = write_jsonl(tmp_path / "mapped.jsonl", records)
    dataset = import_dataset(path, "medisumqa",
                             mapping={"context": "note", "input": "ask", "target": "gold", "id": "key"})
    assert [s.id for s in dataset.samples] == ["k1", "k2"]
    sample = dataset.samples[0]
    assert (sample.context, sample.input, sample.target) == \
        ("Summary text: start lisinopril 10 mg.", "Which new medicine?", "Lisinopril 10 mg.")
    assert sample.metadata == {"summary": "another column"}


def test_jsonl_with_broken_line_3_names_record_3(tmp_path):
    lines = [json.dumps(medisumqa_record(n)) for n in (1, 2, 3, 4)]
    lines[2] = lines[2][:-5]  # cut short
    path = tmp_path / "broken.jsonl"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    with pytest.raises(DatasetFormatError) as caught:
        import_dataset(path, "medisumqa")
    assert caught.value.record == 3
    assert caught.value.source == "broken.jsonl"
    assert "record 3 of broken.jsonl" in caught.value.message and "not valid JSON" in caught.value.message
    assert "Nothing was imported" in caught.value.message


def test_csv_missing_the_answer_column(tmp_path):
    path = tmp_path / "no-answer.csv"
    path.write_text("id,summary,question\nc1,Some summary.,A question?\n", encoding="utf-8")
    with pytest.raises(DatasetFormatError) as caught:
        import_dataset(path, "medisumqa")
    assert caught.value.record == 1
    assert "'answer'" in caught.value.reason


def test_csv_row_with_wrong_field_count(tmp_path):
    path = tmp_path / "ragged.csv"
    path.write_text("id,summary,question,answer\nc1,S.,Q?,A.\nc2,S.,Q?\n", encoding="utf-8")
    with pytest.raises(DatasetFormatError) as caught:
        import_dataset(path, "medisumqa")
    assert caught.value.record == 2 and "3 fields" in caught.value.reason


def test_empty_question_names_its_record(tmp_path):
    records = [medisumqa_record(1), medisumqa_record(2), medisumqa_record(3),
               medisumqa_record(4, question="   "), medisumqa_record(5)]
    path = write_jsonl(tmp_path / "empty-question.jsonl", records)
    with pytest.raises(DatasetFormatError) as caught:
        import_dataset(path, "medisumqa")
    assert caught.value.record == 4
    assert "'question'" in caught.value.reason and "empty" in caught.value.reason


def test_record_numbers_count_records_not_blank_lines(tmp_path):
    path = tmp_path / "gaps.jsonl"
    good, bad = json.dumps(medisumqa_record(1)), json.dumps(medisumqa_record(2, answer=""))
    path.write_text(f"\n{good}\n\n{bad}\n", encoding="utf-8")
    with pytest.raises(DatasetFormatError) as caught:
        import_dataset(path, "medisumqa")
    assert caught.value.record == 2


def test_duplicate_ids_are_refused(tmp_path):
    records = [medisumqa_record(1), medisumqa_record(2), medisumqa_record(3, id="t-1")]
    path = write_jsonl(tmp_path / "dupes.jsonl", records)
    with pytest.raises(DatasetFormatError) as caught:
        import_dataset(path, "medisumqa")
    assert caught.value.record == 3
    # The record's number, never its value (an id may be patient text).
    assert "t-1" not in str(caught.value) and "record 1" in caught.value.reason


def test_medisumqa_without_summary_field(tmp_path):
    path = write_jsonl(tmp_path / "no-summary.jsonl", [{"question": "Q?", "answer": "A."}])
    with pytest.raises(DatasetFormatError) as caught:
        import_dataset(path, "medisumqa")
    assert caught.value.record == 1 and "discharge summary" in caught.value.reason


def test_mapping_is_refused_where_the_layout_is_fixed():
    with pytest.raises(DatasetFormatError, match="no column mapping"):
        import_dataset(FIXTURES / "permedcqa_sample.jsonl", "permedcqa", mapping={"input": "Question"})


# ---- hivmedqa -------------------------------------------------------------------------


@needs_hivmedqa
def test_hivmedqa_folder_gives_all_categories():
    dataset = import_dataset(HIVMEDQA, "hivmedqa")
    assert dataset.source_file == "hivmedqa" and dataset.language == "en"
    assert len(dataset.samples) == 92
    per_category = {}
    for sample in dataset.samples:
        per_category[sample.metadata["category"]] = per_category.get(sample.metadata["category"], 0) + 1
        assert sample.input and sample.target and not sample.context
        assert re.fullmatch(r"hiv-c[1-6]-q\d{3}", sample.id)
    assert per_category == {1: 11, 2: 12, 3: 24, 4: 11, 5: 24, 6: 10}
    assert len({s.id for s in dataset.samples}) == 92
    assert dataset.samples[0].id == "hiv-c1-q001"
    assert dataset.source_sha256 == sha256_path(HIVMEDQA)


@needs_hivmedqa
def test_hivmedqa_single_file_keeps_the_same_ids():
    path = HIVMEDQA / "HIV_evaluation_questionare_category_3.json"
    dataset = import_dataset(path, "hivmedqa")
    assert len(dataset.samples) == 24
    assert {s.metadata["category"] for s in dataset.samples} == {3}
    assert dataset.samples[6].id == "hiv-c3-q007"
    whole = {s.id: s for s in import_dataset(HIVMEDQA, "hivmedqa").samples}
    assert all(whole[s.id] == s for s in dataset.samples)
    raw = json.loads(path.read_text(encoding="utf-8"))
    assert dataset.samples[0].input == raw[0]["question"].strip()
    assert dataset.samples[0].target == raw[0]["true_answer"].strip()


def test_hivmedqa_bad_record_and_bad_names(tmp_path):
    path = tmp_path / "HIV_evaluation_questionare_category_7.json"
    path.write_text(json.dumps([{"question": "Is PrEP taken daily?", "true_answer": "Often, yes."},
                                {"question": "What does U=U mean?"}]), encoding="utf-8")
    with pytest.raises(DatasetFormatError) as caught:
        import_dataset(tmp_path, "hivmedqa")
    assert caught.value.source == path.name and caught.value.record == 2
    assert "'true_answer'" in caught.value.reason
    other = tmp_path / "questions.json"
    other.write_text("[]", encoding="utf-8")
    with pytest.raises(DatasetFormatError, match="category"):
        import_dataset(other, "hivmedqa")
    empty_folder = tmp_path / "empty"
    empty_folder.mkdir()
    with pytest.raises(DatasetFormatError, match="category_N"):
        import_dataset(empty_folder, "hivmedqa")


# ---- permedcqa ------------------------------------------------------------------------


PERMEDCQA = FIXTURES / "permedcqa_sample.jsonl"
PERMEDCQA_META = {"Category", "Specialty", "Age", "Weight", "Sex", "dataset_source", "Tag", "QuestionType"}


def check_permedcqa(dataset: Dataset) -> None:
    assert dataset.format == "permedcqa" and dataset.language == "fa"
    assert [s.id for s in dataset.samples] == [str(n) for n in range(100101, 100107)]
    raw = [json.loads(line) for line in PERMEDCQA.read_text(encoding="utf-8").splitlines()]
    for sample, record in zip(dataset.samples, raw):
        assert set(sample.metadata) == PERMEDCQA_META
        for text in texts(sample):
            assert not any(letter in text for letter in ARABIC_LETTERS), sample.id
            assert "\t" not in text and "\r" not in text and "\u00a0" not in text and "  " not in text
        title = normalise_persian(record["Title"] or "")
        question = normalise_persian(record["Question"])
        assert sample.input == (f"{title}\n{question}" if title else question)
        assert sample.target == normalise_persian(record["Expert_Answer"])
    first, second, third, fourth = dataset.samples[:4]
    assert first.input.startswith("سردرد صبحگاهی\n") and ZWNJ in first.input  # ZWNJ kept
    assert not second.input.startswith("\n")  # empty title: the question alone
    assert second.input.startswith("قند خون ناشتای من") and "آیا دیابت" in second.input
    assert "کمک زیادی می\u200cکند" in second.target and second.metadata["Tag"] == "دیابت"
    assert third.input.startswith("تب کودک سه ساله\n")
    assert "\n" in third.target  # a line break in the answer stays a line break
    assert fourth.input == normalise_persian(raw[3]["Question"])  # null title
    assert first.metadata["Sex"] == "مرد" and first.metadata["Age"] == "42"


def test_permedcqa_jsonl_sample():
    dataset = import_dataset(PERMEDCQA, "permedcqa")
    assert dataset.source_file == "permedcqa_sample.jsonl"
    check_permedcqa(dataset)


def test_permedcqa_parquet_and_json_array(tmp_path):
    raw = [json.loads(line) for line in PERMEDCQA.read_text(encoding="utf-8").splitlines()]
    parquet = tmp_path / "permedcqa_sample.parquet"
    pq.write_table(pa.Table.from_pylist(raw), parquet)
    from_parquet = import_dataset(parquet, "permedcqa")
    check_permedcqa(from_parquet)
    assert from_parquet.samples == import_dataset(PERMEDCQA, "permedcqa").samples
    assert columns(parquet) == list(raw[0])
    array = tmp_path / "permedcqa_sample.json"
    array.write_text(json.dumps(raw, ensure_ascii=False, indent=2), encoding="utf-8")
    assert import_dataset(array, "permedcqa").samples == from_parquet.samples


def test_permedcqa_empty_answer_and_duplicate_ids(tmp_path):
    raw = [json.loads(line) for line in PERMEDCQA.read_text(encoding="utf-8").splitlines()]
    no_answer = [dict(r) for r in raw]
    no_answer[4]["Expert_Answer"] = " \u00a0 "
    with pytest.raises(DatasetFormatError) as caught:
        import_dataset(write_jsonl(tmp_path / "a.jsonl", no_answer), "permedcqa")
    assert caught.value.record == 5 and "'Expert_Answer'" in caught.value.reason
    twice = raw + [dict(raw[1])]
    with pytest.raises(DatasetFormatError) as caught:
        import_dataset(write_jsonl(tmp_path / "b.jsonl", twice), "permedcqa")
    assert caught.value.record == 7 and "record 2" in caught.value.reason
    assert "100102" not in str(caught.value)


def test_normalise_persian():
    assert normalise_persian("\u064a\u0649\u0643") == "\u06cc\u06cc\u06a9"
    assert normalise_persian("كتاب عربي") == "کتاب عربی"
    assert normalise_persian("مصطفى") == "مصطفی"
    assert normalise_persian(f"می{ZWNJ}خواهم") == f"می{ZWNJ}خواهم"
    assert normalise_persian(" الف\t\tب\u00a0ج\u2009د  ") == "الف ب ج د"
    assert normalise_persian("سطر یک  \r\nسطر دو\r\n\r\n\r\n\r\nسطر سه") == "سطر یک\nسطر دو\n\nسطر سه"
    assert normalise_persian("") == ""
    assert normalise_persian("already Persian: ی ک") == "already Persian: ی ک"


# ---- medquad --------------------------------------------------------------------------


@needs_medquad
def test_medquad_niddk_folder():
    dataset = import_dataset(MEDQUAD_NIDDK, "medquad")
    assert dataset.name == "5_NIDDK_QA" and dataset.language == "en"
    assert len(dataset.samples) == 1192  # every pair in this collection has an answer
    assert len({s.id for s in dataset.samples}) == len(dataset.samples)
    for sample in dataset.samples:
        assert sample.input.strip() and sample.target.strip() and not sample.context
        assert set(sample.metadata) >= {"focus", "qtype", "document", "url"}
        assert sample.id.startswith(sample.metadata["document"] + "-")
        assert sample.metadata["url"].startswith("http")
    first = dataset.samples[0]
    assert first.id == "0000001-1" and first.metadata["focus"] == "Acromegaly"
    assert first.metadata["qtype"] == "information" and first.metadata["document"] == "0000001"
    assert "\n\n" in first.target and "&quot;" not in first.target  # paragraphs kept, entities decoded
    assert dataset.source_sha256 == sha256_path(MEDQUAD_NIDDK)
    # 157 documents, of which 6 (0000056, 0000064, 0000065, 0000077, 0000175, 0000177) hold no pairs
    assert len(list(MEDQUAD_NIDDK.glob("*.xml"))) == 157
    assert len({s.metadata["document"] for s in dataset.samples}) == 151


@needs_medquad
def test_medquad_single_real_file():
    dataset = import_dataset(MEDQUAD_NIDDK / "0000001.xml", "medquad")
    assert dataset.samples and all(s.id.startswith("0000001-") for s in dataset.samples)


def test_medquad_sample_skips_empty_answers():
    dataset = import_dataset(FIXTURES / "medquad_sample.xml", "medquad")
    assert [s.id for s in dataset.samples] == ["9000001-1", "9000001-2"]  # pair 3 has no answer
    first = dataset.samples[0]
    assert first.input == "What is (are) Kidney Stones ?"
    assert first.target == ("A kidney stone is a hard lump that forms from minerals in the urine.\n\n"
                            "Small stones may pass without help; larger ones can block the flow of "
                            "urine and cause strong pain.")
    assert first.metadata == {"focus": "Kidney Stones", "qtype": "information", "document": "9000001",
                              "url": "https://example.org/lumen-test/kidney-stones", "source": "LumenTest"}


def test_medquad_malformed_xml_names_file_and_line(tmp_path):
    folder = tmp_path / "collection"
    folder.mkdir()
    good = (FIXTURES / "medquad_sample.xml").read_text(encoding="utf-8")
    (folder / "0000001.xml").write_text(good, encoding="utf-8")
    lines = good.splitlines()
    broken_line = next(i for i, line in enumerate(lines, 1) if 'qid="9000001-2"' in line)
    lines[broken_line - 1] = lines[broken_line - 1].replace("</Question>", "")
    (folder / "0000002.xml").write_text("\n".join(lines), encoding="utf-8")
    with pytest.raises(DatasetFormatError) as caught:
        import_dataset(folder, "medquad")
    assert caught.value.source == "0000002.xml"
    assert re.search(r"line \d+", caught.value.reason)
    line = int(re.search(r"line (\d+)", caught.value.reason).group(1))
    assert broken_line <= line <= broken_line + 2


def test_medquad_duplicate_qids_and_missing_question(tmp_path):
    folder = tmp_path / "collection"
    folder.mkdir()
    good = (FIXTURES / "medquad_sample.xml").read_text(encoding="utf-8")
    (folder / "a.xml").write_text(good, encoding="utf-8")
    (folder / "b.xml").write_text(good, encoding="utf-8")
    with pytest.raises(DatasetFormatError) as caught:
        import_dataset(folder, "medquad")
    assert caught.value.source == "b.xml" and caught.value.record == 1 and "a.xml" in caught.value.reason
    blank = tmp_path / "blank.xml"
    blank.write_text(good.replace(">How to prevent Kidney Stones ?<", ">  <"), encoding="utf-8")
    with pytest.raises(DatasetFormatError) as caught:
        import_dataset(blank, "medquad")
    assert caught.value.record == 2 and "empty" in caught.value.reason
    other = tmp_path / "other.xml"
    other.write_text("<root/>", encoding="utf-8")
    with pytest.raises(DatasetFormatError, match="not a MedQuAD document"):
        import_dataset(other, "medquad")


MEDQUAD_LAYOUTS = {
    # The usual layout, as in the fixture.
    "0000001.xml": None,
    # Lower-case pairs under a <doc> root, as some early MedQuAD files are written.
    "0000002.xml": """<?xml version="1.0" encoding="UTF-8"?>
<doc docid="9000002" corpus="LumenTestOld" url="https://example.org/lumen-test/gout">
<doctitle-focus>Gout</doctitle-focus>
<qaPairs>
  <pair pid="1"><question qid="9000002-1" qtype="information">What is gout ?</question>
  <answer>Gout is a painful swelling of a joint caused by crystals of uric acid.</answer></pair>
</qaPairs>
</doc>""",
    # A <DiseaseFile> root, as in part of the CDC collection.
    "0000003.xml": """<?xml version="1.0" encoding="UTF-8"?>
<DiseaseFile fid="9000003" source="LumenTestCDC" url="https://example.org/lumen-test/flu">
<Focus>Flu</Focus>
<QAPairs>
  <QAPair pid="1"><Question qid="9000003-1" qtype="prevention">How to prevent Flu ?</Question>
  <Answer>A yearly flu shot is the best way to lower the chance of catching the flu.</Answer></QAPair>
</QAPairs>
</DiseaseFile>""",
    # A document with no pairs at all: skipped with a note.
    "0000004.xml": """<?xml version="1.0" encoding="UTF-8"?>
<Document id="9000004" source="LumenTest" url="https://example.org/lumen-test/empty">
<Focus>Nothing here</Focus>
</Document>""",
}


def test_medquad_folder_reads_every_published_layout_and_skips_files_without_pairs(tmp_path):
    folder = tmp_path / "6_CDC_QA"
    folder.mkdir()
    for name, text in MEDQUAD_LAYOUTS.items():
        (folder / name).write_text(text or (FIXTURES / "medquad_sample.xml").read_text(encoding="utf-8"),
                                   encoding="utf-8")
    dataset = import_dataset(folder, "medquad")
    assert [s.id for s in dataset.samples] == ["9000001-1", "9000001-2", "9000002-1", "9000003-1"]
    gout, flu = dataset.samples[2], dataset.samples[3]
    assert gout.input == "What is gout ?" and gout.target.startswith("Gout is a painful swelling")
    assert gout.metadata == {"focus": "Gout", "qtype": "information", "document": "9000002",
                             "url": "https://example.org/lumen-test/gout", "source": "LumenTestOld"}
    assert flu.metadata["document"] == "9000003" and flu.metadata["source"] == "LumenTestCDC"
    assert flu.metadata["focus"] == "Flu" and flu.target.startswith("A yearly flu shot")
    assert "1 files have no question-answer pairs and were skipped: 0000004.xml" in dataset.notes
    assert any("1 questions have no answer in the file" in note for note in dataset.notes)
    with pytest.raises(DatasetFormatError, match="holds no questions .*no question-answer pairs"):
        import_dataset(folder / "0000004.xml", "medquad")


# ---- generic --------------------------------------------------------------------------


GENERIC_MAPPING = {"input": "prompt", "target": "reference", "id": "qid"}


def test_generic_json_array():
    path = FIXTURES / "generic_sample.json"
    dataset = import_dataset(path, "generic", mapping=GENERIC_MAPPING)
    assert [s.id for s in dataset.samples] == ["g1", "g2", "g3"]
    assert dataset.samples[1].input == "Can I take ibuprofen on an empty stomach?"
    assert dataset.samples[1].metadata == {"topic": "medicines"}
    assert columns(path) == ["qid", "prompt", "reference", "topic"]


def test_generic_csv_jsonl_and_parquet_agree(tmp_path):
    raw = json.loads((FIXTURES / "generic_sample.json").read_text(encoding="utf-8"))
    jsonl = write_jsonl(tmp_path / "g.jsonl", raw)
    csv_path = tmp_path / "g.csv"
    with csv_path.open("w", encoding="utf-8", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(raw[0]))
        writer.writeheader()
        writer.writerows(raw)
    expected = import_dataset(FIXTURES / "generic_sample.json", "generic", mapping=GENERIC_MAPPING).samples
    assert import_dataset(jsonl, "generic", mapping=GENERIC_MAPPING).samples == expected
    assert import_dataset(csv_path, "generic", mapping=GENERIC_MAPPING).samples == expected
    parquet = tmp_path / "g.parquet"
    pq.write_table(pa.Table.from_pylist(raw), parquet)
    assert import_dataset(parquet, "generic", mapping=GENERIC_MAPPING).samples == expected
    with_context = import_dataset(jsonl, "generic", mapping={"input": "prompt", "target": "reference",
                                                             "context": "topic"})
    assert with_context.samples[0].context == "heart" and with_context.samples[0].id == "rec-00001"


def test_generic_finds_the_usual_columns_and_refuses_others_with_what_to_do(tmp_path):
    found = import_dataset(FIXTURES / "generic_sample.json", "generic")  # prompt / reference
    assert found.samples == import_dataset(FIXTURES / "generic_sample.json", "generic",
                                           mapping={"input": "prompt", "target": "reference"}).samples
    assert "question from 'prompt', reference answer from 'reference'" in found.notes[0]
    odd = write_jsonl(tmp_path / "odd.jsonl", [{"q": "One?", "a": "1"}])
    with pytest.raises(DatasetFormatError) as caught:
        import_dataset(odd, "generic")
    assert "none of the 2 columns of its first row has a usual name for the question or the " \
        "reference answer" in caught.value.reason and "--map input=COLUMN" in caught.value.fix
    path = FIXTURES / "generic_sample.json"
    with pytest.raises(DatasetFormatError, match="target"):
        import_dataset(path, "generic", mapping={"input": "prompt"})
    with pytest.raises(DatasetFormatError, match="'answer_col'"):
        import_dataset(path, "generic", mapping={"input": "prompt", "target": "reference",
                                                 "answer_col": "x"})


@pytest.mark.parametrize("question, answer", [("question", "answer"), ("Question", "Answer"),
                                              (" QUESTION ", "Answer "), ("query", "response"),
                                              ("Input", "Output")])
def test_generic_csv_and_jsonl_with_usual_column_names_import_without_a_map(tmp_path, question, answer):
    rows = [{question: "What is a normal resting heart rate?", answer: "Sixty to a hundred beats a minute.",
             "Focus": "heart"},
            {question: "Is this tablet safe with food?", answer: "", "Focus": "medicines"},
            {question: "How long do stitches stay in?", answer: "About ten days.", "Focus": "wounds"}]
    csv_path = tmp_path / "qa.csv"
    with csv_path.open("w", encoding="utf-8", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    for path in (csv_path, write_jsonl(tmp_path / "qa.jsonl", rows)):
        dataset = import_dataset(path, "generic")
        assert [s.input for s in dataset.samples] == [r[question] for r in rows]
        assert [s.target for s in dataset.samples] == ["Sixty to a hundred beats a minute.", "",
                                                       "About ten days."]
        assert dataset.samples[0].metadata == {"Focus": "heart"}
        assert f"question from {question.strip()!r}, reference answer from {answer.strip()!r}" \
            in dataset.notes[0]
        assert '1 of 3 questions have no reference answer ("no reference")' in dataset.notes[1]


def test_generic_missing_mapped_column_names_first_record_lacking_it(tmp_path):
    records = [{"q": "One?", "a": "1"}, {"q": "Two?", "a": "2"}, {"q": "Three?"}, {"q": "Four?"}]
    path = write_jsonl(tmp_path / "partial.jsonl", records)
    with pytest.raises(DatasetFormatError) as caught:
        import_dataset(path, "generic", mapping={"input": "q", "target": "a"})
    assert caught.value.record == 3 and "'a'" in caught.value.reason


def test_json_array_syntax_error_names_the_record(tmp_path):
    path = tmp_path / "broken.json"
    path.write_text('[\n {"q": "One?", "a": "1"},\n {"q": "Two?", "a": "2",},\n {"q": "Three?", "a": "3"}\n]',
                    encoding="utf-8")
    with pytest.raises(DatasetFormatError) as caught:
        import_dataset(path, "generic", mapping={"input": "q", "target": "a"})
    assert caught.value.record == 2 and "line 3" in caught.value.reason
    one_object = tmp_path / "object.json"
    one_object.write_text('{\n "data": [{"q": "One?", "a": "1"}]\n}\n', encoding="utf-8")
    with pytest.raises(DatasetFormatError, match="one JSON object"):
        import_dataset(one_object, "generic", mapping={"input": "q", "target": "a"})
    cut = tmp_path / "cut.json"
    cut.write_text('[{"q": "One?", "a": "1"}', encoding="utf-8")
    with pytest.raises(DatasetFormatError, match="cut short"):
        import_dataset(cut, "generic", mapping={"input": "q", "target": "a"})


def test_text_fields_must_be_text(tmp_path):
    path = write_jsonl(tmp_path / "types.jsonl", [{"q": "One?", "a": 1}, {"q": ["not", "text"], "a": "2"}])
    with pytest.raises(DatasetFormatError) as caught:
        import_dataset(path, "generic", mapping={"input": "q", "target": "a"})
    assert caught.value.record == 2 and "not text" in caught.value.reason


def test_non_utf8_file_is_refused(tmp_path):
    path = tmp_path / "latin1.csv"
    path.write_bytes("q,a\nCaf\xe9?,yes\n".encode("latin-1"))
    with pytest.raises(DatasetFormatError, match="UTF-8"):
        import_dataset(path, "generic", mapping={"input": "q", "target": "a"})


def test_command_line_import_shows_the_columns_it_chose_and_help_lists_the_systems(
        profile, passphrase_env, tmp_path):
    from desktop_app.core.evaluation.systems import systems
    from helpers import run_lumen

    path = write_jsonl(tmp_path / "consumer-questions.jsonl", [
        {"Question": "Can I drink coffee with this tablet?", "Answer": "Yes, with water."},
        {"Question": "What does this cream do?", "Answer": "  "}])
    imported = run_lumen("evaluate", "import", "--format", "generic", str(path))
    assert imported.returncode == 0, imported.stderr
    assert "Imported consumer-questions: 2 samples" in imported.stdout
    assert "question from 'Question', reference answer from 'Answer'" in imported.stdout
    assert '1 of 2 questions have no reference answer ("no reference")' in imported.stdout
    shown = run_lumen("evaluate", "run", "--help")
    assert shown.returncode == 0
    # "bench", the command's first name, still works for a release.
    assert run_lumen("bench", "run", "--help").stdout == shown.stdout
    lines = shown.stdout.splitlines()
    for name, description in systems().items():
        assert any(line.split()[:1] == [name] and description in " ".join(line.split())
                   for line in lines), name


# ---- issue #32: one set of limits for every reader, checked while reading ---------------


def _small_limits(monkeypatch, **limits) -> None:
    """The readers' limits made small, so a small file can expand past each one."""
    from desktop_app.core import tabular, textfiles
    from desktop_app.core.evaluation import importers

    smaller = textfiles.Limits(**limits)
    for module in (textfiles, tabular, importers):
        monkeypatch.setattr(module, "LIMITS", smaller)


def test_a_two_kilobyte_parquet_bomb_is_refused_in_little_memory(tmp_path):
    """300 rows of one 6 MB string compress to under 2 KB; decoded they would take
    1.8 GB. The file is refused from the value's length before it is decoded."""
    bomb = tmp_path / "bomb.parquet"
    # Written as a dictionary, so this process never holds the 1.8 GB either.
    one_value = pa.DictionaryArray.from_arrays(pa.array([0] * 300, pa.int32()),
                                               pa.array(["x" * 6_000_000]))
    pq.write_table(pa.table({"question": one_value, "answer": ["a"] * 300}), bomb,
                   compression="zstd")
    assert bomb.stat().st_size < 2_000
    child = subprocess.run(
        [sys.executable, "-c",
         "import resource, sys\n"
         "from desktop_app.core.evaluation.importers import import_dataset\n"
         "from desktop_app.core.errors import LumenError\n"
         "try:\n    import_dataset(sys.argv[1], 'generic')\nexcept LumenError as exc:\n"
         "    print(exc.message)\n"
         # VmHWM: this process's own peak (ru_maxrss keeps the forking parent's across exec)
         "status = open('/proc/self/status').read() if sys.platform == 'linux' else ''\n"
         "hwm = [l.split()[1] for l in status.splitlines() if l.startswith('VmHWM')]\n"
         "print(int(hwm[0]) // 1024 if hwm else "
         "resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024)",
         str(bomb)], capture_output=True, text=True, cwd=Path(__file__).resolve().parents[1],
        timeout=120)
    message, peak_mb = child.stdout.strip().splitlines()
    assert "record 1 of bomb.parquet: its value in column 1 has 6,000,000 bytes" in message
    assert int(peak_mb) < 1024, peak_mb


@pytest.mark.parametrize("limit, table, reason", [
    ({"file_bytes": 3_000}, {"question": [f"q{i} " * 50 for i in range(100)],
                             "answer": ["a"] * 100}, "more than the 0 MB Lumen reads"),
    ({"records": 10}, {"question": ["q"] * 11, "answer": ["a"] * 11}, "11 rows, more than the 10"),
    ({"file_bytes": 50_000}, {"question": ["q" * 60_000], "answer": ["a"]}, "once uncompressed"),
    ({"total_chars": 20_000}, {"question": ["y" * 3_000] * 10, "answer": ["a"] * 10},
     "once decoded"),
    ({"field_chars": 1_000}, {"question": ["q", "z" * 1_001], "answer": ["a", "b"]},
     "record 2 of x.parquet: its value in column 1 has 1,001 bytes"),
], ids=["file", "rows", "pages", "total", "field"])
def test_parquet_is_checked_against_every_limit_while_it_is_read(tmp_path, monkeypatch, limit,
                                                                  table, reason):
    path = tmp_path / "x.parquet"
    pq.write_table(pa.table(table), path, compression="zstd")
    _small_limits(monkeypatch, **limit)
    with pytest.raises(DatasetFormatError, match=re.escape(reason)):
        import_dataset(path, "generic")


def test_medquad_xml_is_checked_against_the_limits_after_entities_expand(tmp_path, monkeypatch):
    entities = ("<!DOCTYPE Document [<!ENTITY a 'aaaaaaaaaa'>"
                "<!ENTITY b '&a;&a;&a;&a;&a;&a;&a;&a;&a;&a;'>"
                "<!ENTITY c '&b;&b;&b;&b;&b;&b;&b;&b;&b;&b;'>]>")
    path = tmp_path / "0001.xml"
    path.write_text(entities + "<Document id='1'><QAPairs><QAPair><Question qid='1'>Why?"
                    "</Question><Answer>&c;</Answer></QAPair></QAPairs></Document>")
    assert path.stat().st_size < 400
    assert len(import_dataset(path, "medquad").samples[0].target) == 1_000
    _small_limits(monkeypatch, field_chars=999)
    with pytest.raises(DatasetFormatError, match="'Answer' field has 1,000 characters"):
        import_dataset(path, "medquad")
    _small_limits(monkeypatch, file_bytes=200)
    with pytest.raises(DatasetFormatError, match="MB Lumen reads"):
        import_dataset(path, "medquad")


def test_medquad_xml_says_what_is_wrong_with_an_encoding_or_an_outside_entity(tmp_path):
    encoding = tmp_path / "0001.xml"
    encoding.write_bytes(b"<?xml version='1.0' encoding='x-unknown-9'?><Document/>")
    with pytest.raises(DatasetFormatError, match="declares a text encoding Lumen cannot read"):
        import_dataset(encoding, "medquad")
    outside = tmp_path / "0002.xml"
    outside.write_bytes(b"<!DOCTYPE a [<!ENTITY e SYSTEM 'http://example.invalid/x'>]>"
                        b"<Document>&e;</Document>")
    with pytest.raises(DatasetFormatError, match="never fetched") as caught:
        import_dataset(outside, "medquad")
    assert "damaged" not in str(caught.value) and "report this" not in caught.value.fix


# ---- issue #34: the calibration loaders read through tabular.py ------------------------


def test_calibration_loaders_read_through_tabular_and_name_a_malformed_record(tmp_path):
    from desktop_app.core.errors import LumenError
    from desktop_app.core.evaluation.judges import PAPER_COLUMNS, load_paper_scores
    from desktop_app.core.pipelines.calibration import load_items

    columns = ["question", "model_answer", "gold_answer", *PAPER_COLUMNS.values()]
    scores = ",".join("3" for _ in PAPER_COLUMNS)
    paper = tmp_path / "scores.txt"  # read as CSV whatever its extension, as before
    paper.write_text("\ufeff" + ",".join(columns) + f"\nQ1,A1,G1,{scores}\n\n,A2,G2,{scores}\n",
                     encoding="utf-8")
    assert [row["question"] for row in load_paper_scores(paper)] == ["Q1"]
    paper.write_text(",".join(columns) + f'\nQ1,A1,G1,{scores}\n"Q2,A2,G2,{scores}\n')
    with pytest.raises(LumenError, match=r"scores\.txt cannot be read \(record 2: not valid CSV "
                                         r"at line \d+") as error:
        load_paper_scores(paper)
    assert "Q2" not in str(error.value)  # no value of the record is quoted
    paper.write_text(",".join(columns) + f"\nQ1,A1,{scores}\n")  # a field short
    with pytest.raises(LumenError, match="record 1: it has .* fields but the header has .* \\(line 2\\)"):
        load_paper_scores(paper)

    benchmark = tmp_path / "bench.data"
    item = '{"summary_id": "s", "question": "q", "answer": "a", "split": "dev"}'
    benchmark.write_text(f"{item}\n\n{item}\n")
    assert len(load_items(benchmark, "dev")) == 2 and load_items(benchmark, "")[0]["answer"] == "a"
    benchmark.write_text(f'{item}\n\n{{"summary_id": "s", "question": secret}}\n')
    with pytest.raises(LumenError, match=r"cannot be read as a JSONL benchmark \(record 2: line 3 "
                                         r"is not valid JSON") as error:
        load_items(benchmark, "dev")
    assert "secret" not in str(error.value)
    benchmark.write_text(f"{item}\n[1, 2]\n")
    with pytest.raises(LumenError, match=r"record 2: it is not a JSON object"):
        load_items(benchmark, "dev")
