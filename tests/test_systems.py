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
    assert main(["evaluate", "report", run["id"], "--out", str(profile.data_dir / "e.html")]) in (0, 1)
    report = (profile.data_dir / "e.html").read_text()
    assert "repeats the question" in report and "key_fact_recall" in report

    window = open_window()
    listed_in_tab = [window.evaluation_page.systems.item(i).text()
                     for i in range(window.evaluation_page.systems.count())]
    assert echo_system in listed_in_tab
