"""3MDBench consultation cases (issue #18): the 'dialogue' format in each file type, the
demo cases, bad records named with nothing imported, and the diagnosis scores against
values worked out by hand."""

from __future__ import annotations

import json

import pytest

from desktop_app.core.errors import DatasetFormatError, LumenError
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
    """A cap of 4 (two replies each way) shows the alternation, the cap and the label as
    well as a longer one would, in less time: each reply usually runs to its token limit
    on the small model, about 6 s the patient's and 10 s the doctor's."""
    from desktop_app.core.evaluation.consultation import (ASSESSOR_ITEMS, COMPETENCE,
                                                          ConsultationSimulator)

    cap = 4
    sample = import_dataset(DEMO, "dialogue").samples[17]  # the stye case
    simulator = ConsultationSimulator(runtime, runtime.settings, max_utterances=cap)
    seen: list[int] = []
    consultation = simulator.run(sample, mode, on_turn=lambda index, turn: seen.append(index))
    speakers = [turn.speaker for turn in consultation.turns]
    assert speakers[0] == "patient" and consultation.turns[0].text
    assert all(a != b for a, b in zip(speakers, speakers[1:]))  # strict alternation
    assert seen == list(range(len(speakers)))  # every turn reported as it finished
    assert len(speakers) <= cap
    if mode == "no-dialogue":
        assert speakers == ["patient", "doctor"] and consultation.ended_by == "no-dialogue"
    else:
        assert consultation.ended_by in ("break", "cap", "context")
        assert consultation.ended_by != "cap" or len(speakers) == cap
        assert all("REASONING" not in t.text.upper() for t in consultation.turns
                   if t.speaker == "doctor")
    protocol = dialogue_protocol()
    assert consultation.diagnosis == NONE or consultation.diagnosis in protocol.labels
    if consultation.assessment is not None:
        assert all(consultation.assessment[item] in (0, 1) for item in ASSESSOR_ITEMS)
        assert consultation.assessment["4.1"] in COMPETENCE


def test_a_reasoning_only_reply_is_followed_by_a_request_for_the_message(runtime, monkeypatch):
    """In rationale mode a doctor reply with no ANSWER part would send the patient nothing:
    the doctor is asked once more, as the next turn after that reply, on the real model.
    The first reply is made reasoning-only here (the small model writes one only
    sometimes); what the second says is the model's, so only its handling is asserted.
    The first reply's own text is thrown away, so the model writes one token of it only
    (the 512 it would write cost 10 s); each reply is sampled with the seed afresh, so
    the second is what it would have been."""
    import dataclasses

    from desktop_app.core.evaluation.consultation import ConsultationSimulator, doctor_reply

    sample = import_dataset(DEMO, "dialogue").samples[17]
    simulator = ConsultationSimulator(runtime, runtime.settings, max_utterances=2)
    model = runtime.for_role("generator")
    real_generate = model.generate
    doctor_calls: list[tuple[list, str]] = []

    def generate(messages, **options):
        doctor = messages[0]["content"].startswith("You are an experienced family doctor")
        if doctor and not doctor_calls:  # the doctor's first reply: reasoning only
            generation = dataclasses.replace(real_generate(messages, **{**options, "max_tokens": 1}),
                                             text="REASONING: the eyelid bump may be a stye.")
        else:
            generation = real_generate(messages, **options)
        if doctor:
            doctor_calls.append((messages, generation.text))
        return generation

    monkeypatch.setattr(model, "generate", generate)
    consultation = simulator.converse(sample, "rationale")
    doctor = [turn for turn in consultation.turns if turn.speaker == "doctor"]
    assert len(doctor) == 1 and len(doctor_calls) == 2
    (first_messages, first_reply), (again_messages, again_reply) = doctor_calls
    assert again_messages[:-2] == first_messages
    assert again_messages[-2] == {"role": "assistant", "content": first_reply}
    assert again_messages[-1] == {"role": "user",
                                  "content": simulator.prompts.text("doctor", "answer_only")}
    assert doctor[0].text == doctor_reply(again_reply, "rationale")[0]
    assert "REASONING" not in doctor[0].text.upper()
    assert doctor[0].reasoning.startswith("the eyelid bump may be a stye.")


@pytest.mark.slow
def test_a_dialogue_ends_while_its_scoring_still_fits_the_context(runtime, tmp_path):
    """With no cap in reach, the dialogue ends by the context, early enough that the
    extraction and the assessor read the whole transcript (a consultation the assessor
    could not read crashed the replay of a run).

    The same model with a 1,280-token context (its own runtime, loaded in about a second)
    reaches the rule in a few replies rather than the shared 2,048's many: the assessor's
    prompt (~330 tokens), the patient's opening (at most 256 tokens) and a doctor's reply
    (512) with the assessor's answer (106) still fit, so the rule lets the doctor reply
    before it ends the dialogue (on this case, after that reply)."""
    import dataclasses

    from desktop_app.core.config import Paths
    from desktop_app.core.evaluation.consultation import ConsultationSimulator
    from desktop_app.core.models.generation import json_reply_limit
    from desktop_app.core.models.runtime import ModelRuntime

    sample = import_dataset(DEMO, "dialogue").samples[2]
    paths = Paths.resolve(tmp_path / "small-context")
    paths.ensure()
    small = ModelRuntime(paths, dataclasses.replace(runtime.settings, context_size=1280))
    try:
        judge = small.for_role("judge")
        assert judge.n_ctx == 1280
        simulator = ConsultationSimulator(small, small.settings, max_utterances=200)
        consultation = simulator.run(sample, "dialogue")
        assert consultation.ended_by in ("context", "break")
        assert len(consultation.turns) >= 2  # the rule let a reply through, then ended it
        for _section, schema, messages in simulator._scoring(consultation.turns, sample.target):
            assert judge.count_tokens(messages) + json_reply_limit(schema, None) <= judge.n_ctx
    finally:
        small.close()
    assert consultation.diagnosis == NONE or consultation.diagnosis in dialogue_protocol().labels


def test_the_assessor_s_longest_reply_fits_its_token_budget():
    from desktop_app.core.evaluation.consultation import ASSESSOR_SCHEMA, extraction_schema
    from desktop_app.core.models.grammar import reply_token_limit

    assert reply_token_limit(ASSESSOR_SCHEMA) is not None
    assert reply_token_limit(ASSESSOR_SCHEMA) <= 512  # the paper's assessor budget
    assert reply_token_limit(extraction_schema(list(dialogue_protocol().labels))) <= 512


# ---- consultations as evaluation runs ------------------------------------------------


@pytest.fixture
def evaluations(profile, passphrase_env):
    from desktop_app.core.evaluation.runs import EvaluationStore
    from desktop_app.core.store import open_store

    with open_store(profile.database_file) as store:
        yield EvaluationStore(store)


def _demo(evaluations):
    return evaluations.save_dataset(import_dataset(DEMO, "dialogue", name="dialogue-demo"))


def test_a_dialogue_system_needs_consultation_cases_and_its_own_scorer(evaluations, runtime):
    from desktop_app.core.evaluation.runner import start_run
    from desktop_app.core.pipelines.calibration import demo_benchmark

    cases = _demo(evaluations)
    questions = evaluations.save_dataset(import_dataset(demo_benchmark(), "medisumqa"))
    settings = runtime.settings
    with pytest.raises(LumenError, match="not a set of consultation cases"):
        start_run(evaluations, runtime, settings, questions.id, "dialogue:dialogue", ["consultation"])
    with pytest.raises(LumenError, match="goes with the dialogue systems"):
        start_run(evaluations, runtime, settings, cases.id, "dialogue:dialogue", ["reference"])
    with pytest.raises(LumenError, match="goes with the dialogue systems"):
        start_run(evaluations, runtime, settings, questions.id, "zero-shot", ["consultation"])
    with pytest.raises(LumenError, match="not a system"):
        start_run(evaluations, runtime, settings, cases.id, "dialogue:telepathy", ["consultation"])
    run_id = start_run(evaluations, runtime, settings, cases.id, "dialogue:rationale",
                       ["consultation"], limit=2)
    config = evaluations.run(run_id)["config"]
    assert config["prompt_versions"]["dialogue"].startswith("dialogue-")
    assert config["models"]["patient"]["sha256"] and config["settings"]["dialogue_max_utterances"] == 28


def test_one_scorer_list_serves_mixed_systems_and_a_bad_mix_creates_no_run(profile, settings,
                                                                           passphrase_env):
    from desktop_app.core.pipelines.calibration import demo_benchmark
    from desktop_app.core.evaluation.scorers import scorers_for
    from desktop_app.core.session import Session

    everything = ["reference", "similarity-judge", "consultation", "key-facts"]
    assert scorers_for("dialogue:hint", everything) == ["consultation"]
    assert scorers_for("zero-shot", everything) == ["reference", "similarity-judge", "key-facts"]
    assert scorers_for("dialogue:dialogue", ["reference"]) == ["reference"]  # refused later
    with Session.open(profile, settings) as session:
        cases, _ = session.evaluation.import_file(DEMO, "dialogue")
        questions, _ = session.evaluation.import_file(demo_benchmark(), "medisumqa")
        with pytest.raises(LumenError, match="not a set of consultation cases"):
            session.evaluation.start(questions.id, ["zero-shot", "dialogue:dialogue"], everything)
        assert session.evaluation.runs() == []  # the first system's run was not made
        with pytest.raises(LumenError, match="case base is empty"):
            session.evaluation.start(cases.id, ["dialogue:hint"], everything)
        started = session.evaluation.start(cases.id, ["dialogue:dialogue", "dialogue:rationale"],
                                           everything, limit=1)
        assert [session.evaluation.run(r)["scorers"] for r in started] == [
            ["consultation"], ["consultation"]]


def test_utterances_are_kept_once_and_in_order(evaluations, runtime):
    from desktop_app.core.evaluation.runner import start_run

    cases = _demo(evaluations)
    run_id = start_run(evaluations, runtime, runtime.settings, cases.id, "dialogue:dialogue",
                       ["consultation"])
    first = {"speaker": "patient", "text": "My eyelid hurts.", "seconds": 1.5}
    assert evaluations.save_turn(run_id, "dlg-001", 0, first)
    assert not evaluations.save_turn(run_id, "dlg-001", 0, {**first, "text": "again"})
    with pytest.raises(LumenError, match="came before"):
        evaluations.save_turn(run_id, "dlg-001", 2, {"speaker": "doctor", "text": "?"})
    assert evaluations.save_turn(run_id, "dlg-001", 1, {"speaker": "doctor", "text": "Since when?",
                                                        "reasoning": "a stye?"})
    assert [t["text"] for t in evaluations.turns(run_id, "dlg-001")] == ["My eyelid hurts.",
                                                                         "Since when?"]
    assert evaluations.turns(run_id, "dlg-001")[1]["reasoning"] == "a stye?"
    assert evaluations.turns(run_id, "dlg-002") == []


def test_a_consultation_that_had_ended_resumes_without_a_model(runtime):
    from desktop_app.core.evaluation.consultation import ConsultationSimulator, Turn

    sample = import_dataset(DEMO, "dialogue").samples[0]
    # No model is touched: the runtime is not even there.
    simulator = ConsultationSimulator(None, runtime.settings)
    kept = [Turn("patient", "I have spots."), Turn("doctor", "Any itching?"),
            Turn("patient", "No. Thanks!", ends="break")]
    consultation = simulator.converse(sample, "dialogue", resume=kept)
    assert consultation.ended_by == "break" and consultation.turns == kept


@pytest.mark.slow
def test_the_patient_agent_is_deterministic_under_the_seed(runtime):
    """Every reply is sampled with the settings' seed (at the protocol's temperature 0.6),
    so the same case opens the same way: what lets a resumed dialogue go on as the
    interrupted one would have."""
    from desktop_app.core.evaluation.consultation import ConsultationSimulator

    sample = import_dataset(DEMO, "dialogue").samples[5]
    simulator = ConsultationSimulator(runtime, runtime.settings, max_utterances=1)
    first = simulator.converse(sample, "dialogue")
    runtime.for_role("patient").generate([{"role": "user", "content": "Say hello."}],
                                         max_tokens=8)  # something else in between
    again = simulator.converse(sample, "dialogue")
    assert first.ended_by == again.ended_by == "cap" and len(first.turns) == 1
    assert again.turns[0].text == first.turns[0].text


def test_modes_are_compared_with_wilcoxon_and_benjamini_hochberg(evaluations, runtime):
    from scipy import stats as scipy_stats

    from desktop_app.core.evaluation.report import (MODE_ALPHA, build_report, compare_modes,
                                                    mode_siblings, ReportRules)
    from desktop_app.core.evaluation.runner import start_run

    cases = _demo(evaluations)
    samples = evaluations.samples(cases.id)[:12]
    runs = {mode: start_run(evaluations, runtime, runtime.settings, cases.id, f"dialogue:{mode}",
                            ["consultation"]) for mode in ("no-dialogue", "dialogue")}
    # Fixed predictions: the dialogue mode right on all 12 cases, no dialogue on 2.
    for ordinal, sample in enumerate(samples):
        for mode, run_id in runs.items():
            right = mode == "dialogue" or ordinal < 2
            output = sample.target if right else NONE
            utterances = 2.0 if mode == "no-dialogue" else 8.0 + ordinal
            evaluations.save_result(
                run_id, sample, ordinal, output=output,
                scores={"diagnosis_correct": float(right), "dialogue_utterances": utterances,
                        "ended_by_break": float(mode == "dialogue")},
                judge={}, trace={"consultation": {"turns": [{}] * int(utterances),
                                                  "ended_by": "break" if mode == "dialogue"
                                                  else "no-dialogue"}},
                error="", seconds=1.0, model_seconds=1.0)
    result = compare_modes(evaluations, list(runs.values()))
    assert result["shared_samples"] == 12 and result["alpha"] == MODE_ALPHA == 0.01
    rows = {row["metric"]: row for row in result["rows"]}
    assert set(rows) == {"diagnosis_correct", "dialogue_utterances", "ended_by_break"}
    expected = scipy_stats.wilcoxon([1.0] * 10).pvalue  # ten differences of +1, two of 0
    assert rows["diagnosis_correct"]["p_wilcoxon"] == pytest.approx(expected)
    adjusted = scipy_stats.false_discovery_control(
        [row["p_wilcoxon"] for row in result["rows"]], method="bh")
    assert [row["p_bh"] for row in result["rows"]] == pytest.approx(list(adjusted))
    assert all(row["significant"] == (row["p_bh"] < 0.01) for row in result["rows"])
    f1 = {run["mode"]: run["macro_f1"] for run in result["runs"]}
    assert f1["dialogue"] == 1.0 and f1["no-dialogue"] == pytest.approx(2 / 12)
    assert sorted(mode_siblings(evaluations, runs["dialogue"])) == sorted(runs.values())
    report = build_report(evaluations, runs["dialogue"], ReportRules(resamples=500), "macro_f1 >= 0.9")
    assert report.modes["tests"] == 3 and report.verdict["status"] == "passed"
    consultation = report.summary["consultation"]
    assert consultation["diagnosis"]["macro_f1"] == 1.0
    assert consultation["diagnosis"]["macro_f1_interval"]["ci_low"] == 1.0
    assert consultation["ended_by"] == {"break": 12}
    page = report.to_html()
    assert "Doctor modes compared" in page and "Macro F1 1.00" in page
    assert "macro_f1" in report.to_csv()
    with pytest.raises(LumenError, match="two or more consultation runs"):
        compare_modes(evaluations, [runs["dialogue"]])


def test_the_macro_f1_interval_holds_the_estimate():
    from desktop_app.core.evaluation.dialogue import macro_f1_interval

    pairs = [("acne", "acne"), ("acne", "rosacea"), ("rosacea", "rosacea"), ("stye", NONE),
             ("caries", "acne"), ("stye", "stye"), ("hives", "hives"), ("hives", NONE)]
    low, high = macro_f1_interval(pairs, resamples=2000)
    estimate = diagnosis_scores(pairs)["macro_f1"]
    assert 0.0 <= low <= estimate <= high <= 1.0 and low < high
    assert macro_f1_interval([("acne", "acne"), ("stye", "stye")], resamples=200) == (1.0, 1.0)


@pytest.mark.slow
def test_a_consultation_run_keeps_every_utterance_and_scores_each_case(evaluations, runtime,
                                                                       profile):
    import dataclasses

    from desktop_app.core.evaluation.consultation import COMPETENCE, ASSESSOR_ITEMS
    from desktop_app.core.evaluation.report import ReportRules, summarize
    from desktop_app.core.evaluation.runner import Evaluator, continue_run, start_run
    from desktop_app.core.glossary.glossary import load_glossary

    cap = 3  # enough to keep utterances of both speakers in order; each costs 6-10 s
    settings = dataclasses.replace(runtime.settings, dialogue_max_utterances=cap)
    evaluator = Evaluator(runtime, load_glossary(None), settings, profile.cache_dir)
    cases = _demo(evaluations)
    run_id = start_run(evaluations, runtime, settings, cases.id, "dialogue:dialogue",
                       ["consultation"], limit=1)
    run = continue_run(evaluations, evaluator, run_id)
    assert run["status"] == "complete"
    labels = dialogue_protocol().labels
    for result in evaluations.results(run_id):
        consultation = result["trace"]["consultation"]
        kept = evaluations.turns(run_id, result["sample_id"])
        assert [(t["speaker"], t["text"]) for t in kept] == [
            (t["speaker"], t["text"]) for t in consultation["turns"]]
        speakers = [t["speaker"] for t in kept]
        assert speakers[0] == "patient" and all(a != b for a, b in zip(speakers, speakers[1:]))
        assert 1 <= len(kept) <= cap and consultation["ended_by"] in ("break", "cap", "context")
        assert result["output"] == NONE or result["output"] in labels
        scores = result["scores"]
        assert scores["diagnosis_correct"] == float(result["output"] == result["target"])
        assert scores["dialogue_utterances"] == len(kept)
        assessor = result["judge"]["assessor"]
        if assessor["unparseable"]:
            assert all(scores[f"assessor_{i.replace('.', '_')}"] is None for i in ASSESSOR_ITEMS)
        else:
            assert all(scores[f"assessor_{i.replace('.', '_')}"] in (0.0, 1.0)
                       for i in ASSESSOR_ITEMS)
            assert assessor["marks"]["4.1"] in COMPETENCE
            assert scores["assessor_4_1"] == COMPETENCE.index(assessor["marks"]["4.1"])
    summary = summarize(evaluations, run_id, ReportRules(resamples=200))
    pairs = [(r["target"], r["output"]) for r in evaluations.results(run_id)]
    assert summary["consultation"]["diagnosis"]["macro_f1"] == diagnosis_scores(pairs)["macro_f1"]


@pytest.mark.slow
def test_a_run_killed_mid_dialogue_resumes_at_the_next_utterance(profile, passphrase_env):
    """A child `lumen evaluate run` is killed (SIGKILL) in the middle of a consultation;
    the resumed run goes on from the utterances kept: none lost, none said twice.  With a
    cap of 4 and the kill at two kept, the resume has two utterances left to say (6 left
    it four, at 6-10 s each)."""
    import os
    import signal
    import subprocess
    import sys
    import time

    from desktop_app.core.config import Settings
    from desktop_app.core.store import open_store
    from helpers import TEST_PASSPHRASE, run_lumen

    cap = 4
    Settings.load(profile).with_value("dialogue_max_utterances", cap).with_value(
        "context_size", 2048).save(profile)
    env = dict(os.environ, LUMEN_PASSPHRASE=TEST_PASSPHRASE)
    imported = run_lumen("evaluate", "import", "--format", "dialogue", str(DEMO), "--name",
                         "dialogue-demo", env=env)
    assert imported.returncode == 0, imported.stderr
    child = subprocess.Popen([sys.executable, "-m", "desktop_app", "evaluate", "run",
                              "dialogue-demo", "--system", "dialogue:dialogue", "--limit", "1"],
                             cwd=ROOT, env=env, stdout=subprocess.DEVNULL,
                             stderr=subprocess.DEVNULL)

    def counts() -> tuple[int, int]:
        with open_store(profile.database_file, TEST_PASSPHRASE) as store:
            return (store.query("SELECT count(*) FROM eval_turn")[0][0],
                    store.query("SELECT count(*) FROM eval_result")[0][0])
    try:
        deadline = time.monotonic() + 240
        while time.monotonic() < deadline and counts()[0] < 2:
            time.sleep(0.3)
            assert child.poll() is None, "the run ended before it could be killed"
    finally:
        child.send_signal(signal.SIGKILL)
        child.wait(30)
    with open_store(profile.database_file, TEST_PASSPHRASE) as store:
        run_id = store.query("SELECT id FROM eval_run")[0][0]
        before = [tuple(row) for row in store.query(
            "SELECT turn, speaker, text FROM eval_turn ORDER BY turn")]
    kept, finished = counts()
    assert kept >= 2 and finished == 0, "killed after the consultation was scored"
    resumed = run_lumen("evaluate", "run", "--resume", run_id, "--json", env=env)
    assert resumed.returncode == 0, resumed.stderr
    assert json.loads(resumed.stdout)["counts"]["samples"] == 1
    with open_store(profile.database_file, TEST_PASSPHRASE) as store:
        after = [tuple(row) for row in store.query(
            "SELECT turn, speaker, text FROM eval_turn ORDER BY turn")]
        trace = json.loads(store.query("SELECT trace FROM eval_result")[0][0])
    assert after[:len(before)] == before  # nothing kept was lost or rewritten
    assert [row[0] for row in after] == list(range(len(after)))  # none doubled or skipped
    speakers = [row[1] for row in after]
    assert all(a != b for a, b in zip(speakers, speakers[1:])) and len(after) <= cap
    assert len(after) > len(before)  # the resume said the next utterance itself
    assert trace["resumed_at"] == len(before)
    assert [t["text"] for t in trace["consultation"]["turns"]] == [row[2] for row in after]


# ---- the Evaluation tab --------------------------------------------------------------


def test_the_transcript_view_shows_who_said_what_and_the_marks():
    from desktop_app.gui.evaluation_page import consultation_html

    result = {"sample_id": "dlg-018", "output": "stye", "target": "chalazion", "error": "",
              "judge": {"assessor": {"unparseable": True, "marks": None}},
              "trace": {"consultation": {
                  "mode": "rationale", "temperament": "phlegmatic", "ended_by": "cap", "hint": [],
                  "turns": [{"speaker": "patient", "text": "A lump on my <eyelid>.", "reasoning": ""},
                            {"speaker": "doctor", "text": "Does it hurt?",
                             "reasoning": "stye or chalazion"}]}}}
    page = consultation_html(result)
    assert "rationale" in page and "phlegmatic" in page and "the utterance cap" in page
    assert "&lt;eyelid&gt;" in page  # patient text is escaped, never markup
    assert "not shown to the patient: stye or chalazion" in page
    assert "✗ wrong" in page and "chalazion" in page
    assert "could not be read" in page


@pytest.mark.slow
def test_the_evaluation_tab_runs_a_consultation_and_shows_its_transcript(qtbot, window):
    from PySide6.QtCore import Qt
    from PySide6.QtWidgets import QMessageBox

    page = window.evaluation_page
    window.tabs.setCurrentWidget(page)
    page.import_file(DEMO, "dialogue")
    qtbot.waitUntil(lambda: page.findChild(QMessageBox, "infoDialog") is not None, timeout=60_000)
    info = page.findChild(QMessageBox, "infoDialog")
    assert info is not None and "34 samples" in info.text()
    info.close()
    for index in range(page.systems.count()):
        item = page.systems.item(index)
        item.setCheckState(Qt.CheckState.Checked if item.text() == "dialogue:no-dialogue"
                           else Qt.CheckState.Unchecked)
    # The default scorers of a consultation: its own; a question scorer chosen as well
    # is not applied to it (below).
    assert [name for name, box in page.scorer_boxes.items() if box.isChecked()] == [
        "consultation"]
    page.scorer_boxes["reference"].click()
    page.limit.setValue(1)
    qtbot.mouseClick(page.run_button, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: page.run_button.isEnabled() and page.results.rowCount() == 1,
                    timeout=300_000)
    assert page.runs.item(0, 2).text() == "complete"
    header = [page.results.horizontalHeaderItem(c).text() for c in range(page.results.columnCount())]
    assert any(h.startswith("Consultation diagnosis right") for h in header)
    assert not any(h.startswith("SARI") for h in header)  # no question scorer ran
    page.runs.selectRow(0)
    page.samples.selectRow(0)
    shown = page.detail.toPlainText()
    assert "Patient" in shown and "Doctor" in shown and "no dialogue in this mode" in shown
    assert "Diagnosis extracted" in shown and "case's label" in shown
