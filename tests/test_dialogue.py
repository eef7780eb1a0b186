"""3MDBench consultation cases (issue #18): the 'dialogue' format in each file type, the
demo cases, bad records named with nothing imported, and the diagnosis scores against
values worked out by hand."""

from __future__ import annotations

import json

import pytest

from desktop_app.core.errors import DatasetFormatError
from desktop_app.core.evaluation.dialogue import NONE, diagnosis_scores, dialogue_protocol
from desktop_app.core.evaluation.importers import import_dataset
from helpers import ROOT

DEMO = ROOT / "resources" / "benchmarks" / "lumen-dialogue-demo.jsonl"
CASE = {"id": "c1", "general_complaint": "My eyelid has a sore red bump.",
        "complaints": ["It started two days ago.", "It hurts when I blink."],
        "diagnosis": "stye", "personality": "choleric"}


def test_the_protocol_has_34_labels_in_five_categories_and_four_temperaments():
    protocol = dialogue_protocol()
    assert len(protocol.labels) == 34 and len(set(protocol.labels.values())) == 5
    assert protocol.temperaments == ("sanguine", "choleric", "melancholic", "phlegmatic")
    assert protocol.label_of("Allergic_Contact-Dermatitis ") == "allergic contact dermatitis"
    assert protocol.label_of("flu") is None


def test_the_demo_cases_cover_every_label_once_with_balanced_temperaments():
    dataset = import_dataset(DEMO, "dialogue")
    protocol = dialogue_protocol()
    assert sorted(s.target for s in dataset.samples) == sorted(protocol.labels)
    counts = {t: sum(s.metadata["personality"] == t for s in dataset.samples)
              for t in protocol.temperaments}
    assert sorted(counts.values()) == [8, 8, 9, 9]
    for sample in dataset.samples:
        assert sample.input and 4 <= len(sample.metadata["complaints"]) <= 6
        assert sample.metadata["labels"] == list(protocol.labels)
        told = " ".join([sample.input, *sample.metadata["complaints"]]).casefold()
        assert sample.target not in told  # the patient never names the diagnosis
    assert dataset.notes == []  # no images, nothing to say


def test_csv_json_and_parquet_cases_import_alike(tmp_path):
    import pyarrow as pa
    import pyarrow.parquet as pq

    (tmp_path / "cases.json").write_text(json.dumps([CASE]), encoding="utf-8")
    (tmp_path / "cases.csv").write_text(
        "id,general_complaint,complaints,diagnosis,personality\n"
        'c1,My eyelid has a sore red bump.,"- It started two days ago.\n- It hurts when I blink.",'
        "Stye,Choleric\n", encoding="utf-8")
    image = {"bytes": b"\x89PNG not really", "path": "stye-1.png"}
    pq.write_table(pa.Table.from_pylist([{**CASE, "image": image}]), tmp_path / "cases.parquet")
    imported = [import_dataset(tmp_path / name, "dialogue")
                for name in ("cases.json", "cases.csv", "cases.parquet")]
    first = imported[0].samples[0]
    assert (first.id, first.input, first.target) == ("c1", CASE["general_complaint"], "stye")
    for dataset in imported[1:]:
        sample = dataset.samples[0]
        assert (sample.input, sample.target, sample.metadata["complaints"],
                sample.metadata["personality"]) == (first.input, "stye", CASE["complaints"],
                                                    "choleric")
    image_ref = imported[2].samples[0].metadata["image"]
    assert image_ref["path"] == "stye-1.png" and len(image_ref["sha256"]) == 64
    assert "text only" in imported[2].notes[0]


@pytest.mark.parametrize("change,record,message", [
    ({"diagnosis": "sunburn"}, 2, "not one of the 34 labels"),
    ({"personality": "cheerful"}, 2, "personality is not one of"),
    ({"general_complaint": ""}, 2, "'general_complaint' field is empty"),
    ({"complaints": 7}, 2, "'complaints' field is not a list"),
    ({"id": "c1"}, 2, "repeats the id of record 1"),
])
def test_a_bad_record_is_named_and_nothing_is_imported(tmp_path, change, record, message):
    good = dict(CASE)
    bad = {**CASE, "id": "c2", **change}
    path = tmp_path / "cases.jsonl"
    path.write_text(json.dumps(good) + "\n" + json.dumps(bad) + "\n", encoding="utf-8")
    with pytest.raises(DatasetFormatError) as caught:
        import_dataset(path, "dialogue")
    assert caught.value.record == record and message in caught.value.message


def test_a_missing_complaints_field_is_named(tmp_path):
    path = tmp_path / "cases.jsonl"
    path.write_text(json.dumps({k: v for k, v in CASE.items() if k != "complaints"}) + "\n")
    with pytest.raises(DatasetFormatError, match="no 'complaints' field"):
        import_dataset(path, "dialogue")


def test_diagnosis_scores_match_hand_computed_values():
    pairs = [("acne", "acne"), ("acne", "rosacea"), ("rosacea", "rosacea"),
             ("stye", NONE), ("caries", "acne")]
    scores = diagnosis_scores(pairs)
    # acne: TP 1, predicted 2, actual 2 -> P 1/2, R 1/2, F1 1/2
    # rosacea: TP 1, predicted 2, actual 1 -> P 1/2, R 1, F1 2/3
    # stye: TP 0, actual 1, never predicted -> 0; caries: TP 0 -> 0
    assert scores["per_label"]["acne"] == {"precision": 0.5, "recall": 0.5, "f1": 0.5,
                                           "support": 2}
    assert scores["per_label"]["rosacea"]["f1"] == pytest.approx(2 / 3)
    assert scores["per_label"]["stye"]["f1"] == 0 and NONE not in scores["per_label"]
    assert scores["macro_f1"] == pytest.approx((0.5 + 2 / 3 + 0 + 0) / 4)
    assert scores["accuracy"] == pytest.approx(2 / 5)
    assert scores["none_rate"] == pytest.approx(1 / 5)
    assert diagnosis_scores([])["macro_f1"] is None


# ---- the simulation (core only so far) ---------------------------------------------


def test_patient_and_doctor_replies_are_read_by_the_protocol_s_rules():
    from desktop_app.core.evaluation.consultation import doctor_reply, patient_reply

    assert patient_reply("Thank you, doctor! BREAK") == ("Thank you, doctor!", True)
    assert patient_reply("It itches at night.") == ("It itches at night.", False)
    assert patient_reply("BREAKFAST makes no difference.")[1] is False
    assert doctor_reply("REASONING: maybe eczema.\nANSWER: Does it itch?", "rationale") == (
        "Does it itch?", "maybe eczema.")
    # Reasoning with no answer part is never shown to the patient.
    assert doctor_reply("REASONING: thinking about acne", "rationale") == (
        "", "thinking about acne")
    assert doctor_reply("REASONING: x\nANSWER: y", "dialogue")[0] == "REASONING: x\nANSWER: y"


@pytest.mark.slow
@pytest.mark.parametrize("mode", ["no-dialogue", "rationale"])
def test_a_consultation_alternates_stops_at_the_cap_and_ends_in_a_label_or_none(runtime, mode):
    from desktop_app.core.evaluation.consultation import (ASSESSOR_ITEMS, COMPETENCE,
                                                          ConsultationSimulator)

    sample = import_dataset(DEMO, "dialogue").samples[17]  # the stye case
    simulator = ConsultationSimulator(runtime, runtime.settings, max_utterances=6)
    seen: list[int] = []
    consultation = simulator.run(sample, mode, on_turn=lambda index, turn: seen.append(index))
    speakers = [turn.speaker for turn in consultation.turns]
    assert speakers[0] == "patient" and consultation.turns[0].text
    assert all(a != b for a, b in zip(speakers, speakers[1:]))  # strict alternation
    assert seen == list(range(len(speakers)))  # every turn reported as it finished
    assert len(speakers) <= 6
    if mode == "no-dialogue":
        assert speakers == ["patient", "doctor"] and consultation.ended_by == "no-dialogue"
    else:
        assert consultation.ended_by in ("break", "cap", "context")
        assert consultation.ended_by != "cap" or len(speakers) == 6
        assert all("REASONING" not in t.text.upper() for t in consultation.turns
                   if t.speaker == "doctor")
    protocol = dialogue_protocol()
    assert consultation.diagnosis == NONE or consultation.diagnosis in protocol.labels
    if consultation.assessment is not None:
        assert all(consultation.assessment[item] in (0, 1) for item in ASSESSOR_ITEMS)
        assert consultation.assessment["4.1"] in COMPETENCE


def test_the_assessor_s_longest_reply_fits_its_token_budget():
    from desktop_app.core.evaluation.consultation import ASSESSOR_SCHEMA, extraction_schema
    from desktop_app.core.models.grammar import reply_token_limit

    assert reply_token_limit(ASSESSOR_SCHEMA) is not None
    assert reply_token_limit(ASSESSOR_SCHEMA) <= 512  # the paper's assessor budget
    assert reply_token_limit(extraction_schema(list(dialogue_protocol().labels))) <= 512
