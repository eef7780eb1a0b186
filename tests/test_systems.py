"""The system registry (core/evaluation/systems.py): each family of systems one class,
read by the command line, the Evaluation tab, the runner and the report; a family
registered in a test reaches all four (issue #34)."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import pytest

from desktop_app.core.errors import LumenError

ROOT = Path(__file__).resolve().parents[1]
BENCHMARK = ROOT / "tests" / "data" / "benchmarks" / "medisumqa_sample.csv"


def test_the_families_name_every_system_with_its_kind():
    from desktop_app.core.evaluation.systems import (criteria_setting, family_of, parse_system,
                                                     system_kind, systems)

    names = list(systems())
    assert names[:2] == ["lamp:glossary", "lamp:plain"] and names[-1] == "dialogue:hint"
    assert {"zero-shot", "one-shot", "evidence", "qa", "doctorrag:full", "doctorrag:vanilla",
            "dialogue:no-dialogue", "lamp-no-loops:plain"} <= set(names)
    # Four LAMP methods x 2 variants; zero-shot, one-shot, evidence, qa; 5 set-ups; 4 modes.
    assert len(names) == 8 + 4 + 5 + 4
    assert {name: system_kind(name) for name in ("lamp:plain", "zero-shot", "evidence", "qa",
                                                 "doctorrag:no-tags", "dialogue:hint")} == {
        "lamp:plain": "document", "zero-shot": "document", "evidence": "evidence", "qa": "qa",
        "doctorrag:no-tags": "diagnosis", "dialogue:hint": "consultation"}
    assert criteria_setting("lamp:glossary") == "acceptance_criteria"
    assert criteria_setting("dialogue:dialogue") == "consultation_acceptance_criteria"
    assert parse_system("lamp:glossary") == ("lamp", "glossary")
    assert parse_system("qa") == ("qa", None)
    assert parse_system("zero-shot:plain") == ("zero-shot", "plain")  # as older runs name it
    assert family_of("doctorrag:full").sequential and not family_of("qa").sequential
    for unknown in ("gpt-5", "lamp:fancy", "qa:plain", "dialogue:telepathy"):
        with pytest.raises(LumenError, match="not a system"):
            parse_system(unknown)


@pytest.fixture
def echo_system():
    """A toy family, registered as a new one would be: one class."""
    from desktop_app.core.evaluation.systems import SYSTEMS, SystemFamily, system_family

    @system_family
    class Echo(SystemFamily):
        prefixes = ("echo",)
        kind = "qa"

        def names(self):
            return {"echo": "repeats the question (a test's toy system)"}

        def answer(self, evaluator, prefix, variant, sample, cancel, journal):
            return sample.input, {"echoed": True}, 0.0

    yield "echo"
    del SYSTEMS["echo"]


def test_a_registered_system_reaches_the_command_line_the_runner_the_report_and_the_tab(
        echo_system, profile, passphrase_env, open_window, capsys):
    from desktop_app.cli import build_parser, main

    parser = build_parser()
    for name in ("evaluate", "run"):
        parser = next(action for action in parser._actions
                      if isinstance(action, argparse._SubParsersAction)).choices[name]
    assert "repeats the question (a test's toy system)" in parser.format_help()
    assert main(["evaluate", "import", "--format", "medisumqa", str(BENCHMARK),
                 "--name", "echoes"]) == 0
    capsys.readouterr()
    assert main(["evaluate", "run", "echoes", "--system", echo_system, "--scorer", "key-facts",
                 "--json"]) == 0
    ran = json.loads(capsys.readouterr().out)
    assert ran["metrics"]["degenerate"]["n"] == 2
    assert main(["evaluate", "list", "--json"]) == 0
    listed = json.loads(capsys.readouterr().out)
    assert listed["systems"][echo_system] == "repeats the question (a test's toy system)"
    (run,) = listed["runs"]
    assert run["system"] == echo_system
    # The report names the system by its line of help, and holds it to the criteria of
    # its kind (open questions: qa_acceptance_criteria).
    # Two samples answered, fewer than a verdict needs (10): undecided, exit 1, with the
    # qa criteria it did not meet on those few.
    assert main(["evaluate", "report", run["id"], "--out", str(profile.data_dir / "e.html")]) == 1
    said = capsys.readouterr().out
    assert ("Not enough samples to decide: 2 answered without error, and a verdict needs at "
            "least 10. On these few, not met: key_fact_recall >= 0.5") in said
    report = (profile.data_dir / "e.html").read_text()
    assert "repeats the question" in report and "key_fact_recall" in report

    window = open_window()
    listed_in_tab = [window.evaluation_page.systems.item(i).text()
                     for i in range(window.evaluation_page.systems.count())]
    assert echo_system in listed_in_tab


@pytest.fixture
def chat_system():
    """A toy consultation family: its kind, not its name, makes it one."""
    from desktop_app.core.evaluation.systems import SYSTEMS, SystemFamily, system_family

    journals = []

    @system_family
    class Chat(SystemFamily):
        prefixes = ("chat",)
        kind = "consultation"
        sequential = True

        def names(self):
            return {"chat:plain": "a toy consultation that names the right diagnosis"}

        def answer(self, evaluator, prefix, variant, sample, cancel, journal):
            journals.append(journal)
            return sample.target, {}, 0.0

    yield "chat:plain", journals
    del SYSTEMS["chat"]


def test_a_family_of_the_consultation_kind_is_a_consultation_to_the_runner_and_the_report(
        chat_system, profile, passphrase_env, capsys):
    """No `startswith("dialogue:")`: the command line, the runner and the report ask the
    registry (systems.is_consultation, Scorer.only_for) whether a run is a consultation."""
    from desktop_app.cli import main
    from desktop_app.core.evaluation.scorers import check_scorers_go_with, scorers_for
    from desktop_app.core.evaluation.systems import answers_questions, is_consultation

    chat, journals = chat_system
    assert is_consultation(chat) and is_consultation("dialogue:hint")
    assert not is_consultation("doctorrag:full") and not is_consultation("lamp:glossary")
    assert not answers_questions(chat) and not answers_questions("doctorrag:full")
    assert answers_questions("evidence") and answers_questions("an-old-run's-system")
    # The consultation scorer alone, and it with the consultation kinds alone.
    assert scorers_for(chat, ["reference", "consultation"]) == ["consultation"]
    assert scorers_for("qa", ["reference", "consultation"]) == ["reference"]
    with pytest.raises(LumenError, match="'consultation' scorer goes with the dialogue and "
                                         "chat systems, and only it"):
        check_scorers_go_with(chat, ["consultation", "key-facts"])
    with pytest.raises(LumenError, match="goes with the dialogue and chat systems"):
        check_scorers_go_with("qa", ["consultation"])
    check_scorers_go_with(chat, ["consultation"])

    demo = ROOT / "resources" / "benchmarks" / "lumen-dialogue-demo.jsonl"
    assert main(["evaluate", "import", "--format", "dialogue", str(demo), "--name", "chats"]) == 0
    capsys.readouterr()
    # The command line says which sample a consultation has reached; the runner hands the
    # family a journal to keep each utterance in.
    assert main(["evaluate", "run", "chats", "--system", chat, "--limit", "2"]) == 0
    ran = capsys.readouterr()
    assert "Sample 1 of 2…" in ran.err and "dlg-001: diagnosis_correct 1.0" in ran.err
    assert len(journals) == 2 and all(journal is not None for journal in journals)
    assert main(["evaluate", "list", "--json"]) == 0
    (run,) = json.loads(capsys.readouterr().out)["runs"]
    # The report is a consultation's: its section, its notes, and no MedJudge note.
    out = profile.data_dir / "chat.html"
    assert main(["evaluate", "report", run["id"], "--out", str(out)]) == 1
    said = capsys.readouterr().out
    assert "The consultations are text only" in said and "MedJudge" not in said
    report = out.read_text()
    assert "<h2>Consultations (3MDBench)</h2>" in report
    assert "the consultation's patient and doctor: 0.6" in report
