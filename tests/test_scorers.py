"""The scorer registry (core/evaluation/scorers.py): each scorer declared once, with its
metrics, and read by the command line, the Evaluation tab, the runner and the report; a
scorer registered in a test reaches all four (issue #34)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
BENCHMARK = ROOT / "tests" / "data" / "benchmarks" / "medisumqa_sample.csv"


def test_every_scorer_declares_what_the_report_and_the_tab_read():
    from desktop_app.core.choices import SYSTEM_KINDS
    from desktop_app.core.evaluation.report import SCALE_RANGES, metric_info
    from desktop_app.core.evaluation.scorers import (SCORERS, default_scorers, judge_scorers,
                                                     result_metrics)

    declared_by: dict[str, str] = {}
    for name, entry in SCORERS.items():
        assert entry.description and set(entry.default_for) <= set(SYSTEM_KINDS), name
        for metric, meta in entry.metrics().items():
            assert metric not in declared_by, f"{metric}: {declared_by.get(metric)} and {name}"
            declared_by[metric] = name
            assert meta["label"] and isinstance(meta["higher_is_better"], bool), metric
            assert meta["scale"] in SCALE_RANGES, metric
    info = metric_info()
    assert list(info) == list(declared_by)
    assert all(low < high for low, high in (meta["range"] for meta in info.values()))
    assert info["sbert"]["range"] == (-100.0, 100.0) and info["degenerate"]["rate"]
    # Each kind of system has its default scorers, as before the registry.
    assert default_scorers(["lamp:glossary"]) == default_scorers(["qa"]) == [
        "reference", "similarity-judge", "key-facts"]
    assert default_scorers(["dialogue:dialogue"]) == ["consultation"]
    assert default_scorers(["doctorrag:full"]) == ["diagnosis-accuracy"]
    assert judge_scorers() == ["similarity-judge", "medjudge", "hivmedqa-judge"]
    assert result_metrics() == [
        "sari", "fkgl", "sbert", "token_f1", "bleu", "rouge_l", "bertscore_f1",
        "judge_similarity", "diagnosis_accuracy", "key_fact_recall", "unsupported_facts",
        "degenerate", "model_answer", "diagnosis_correct", "dialogue_utterances",
        "ended_by_break", "assessor_4_1"]


def test_a_scorer_name_is_registered_once():
    from desktop_app.core.evaluation.scorers import scorer

    with pytest.raises(ValueError, match="registered already"):
        scorer("reference", description="again", metrics={})(lambda context: None)


@pytest.fixture
def answer_words():
    """A toy scorer, registered as a new scorer would be: one decorated function."""
    from desktop_app.core.evaluation.scorers import SCORERS, scorer

    @scorer("answer-words", description="how many words each answer has",
            measures="the answers' length in words", needs_reference=False,
            judge=("words", "Words counted (a toy judge)"),
            metrics={"answer_words": {"label": "Words per answer", "higher_is_better": False,
                                      "scale": "count", "tab": True}})
    def count_words(context) -> None:
        context.scores["answer_words"] = float(len(context.output.split()))
        context.judge["words"] = {"unparseable": False, "reply": "counted"}

    yield "answer-words"
    del SCORERS["answer-words"]


def test_a_registered_scorer_reaches_the_command_line_the_runner_the_report_and_the_tab(
        answer_words, profile, passphrase_env, open_window, qtbot, tmp_path, capsys):
    from desktop_app.cli import build_parser, main
    from desktop_app.core.config import Settings
    from desktop_app.core.session import Session

    # The command line: a choice of --scorer, listed in the help.
    parser = build_parser()
    assert parser.parse_args(["evaluate", "run", "x", "--scorer", answer_words]).scorer == [
        answer_words]
    assert main(["evaluate", "import", "--format", "medisumqa", str(BENCHMARK),
                 "--name", "words"]) == 0
    capsys.readouterr()
    assert main(["evaluate", "run", "words", "--system", "evidence", "--scorer", answer_words,
                 "--json"]) == 0
    ran = json.loads(capsys.readouterr().out)
    # The runner scored every sample with it, and the report summarised it by its label.
    assert ran["metrics"]["answer_words"]["n"] == 2 and ran["metrics"]["answer_words"]["mean"] > 0
    listed = main(["evaluate", "list", "--json"])
    assert listed == 0
    catalogue = json.loads(capsys.readouterr().out)
    assert catalogue["scorers"][answer_words] == "how many words each answer has"
    (run_id,) = [run["id"] for run in catalogue["runs"]]
    # Two samples answered, fewer than a verdict needs (report_min_samples, 10): undecided,
    # which exits EXIT_PROBLEM (only a pass, or a report that claims nothing, exits 0).
    assert main(["evaluate", "report", run_id, "--out", str(tmp_path / "words.csv")]) == 1
    assert ("Not enough samples to decide: 2 answered without error, and a verdict needs at "
            "least 10.") in capsys.readouterr().out
    assert "Words per answer" in (tmp_path / "words.csv").read_text()
    # A run without it says so under "Not measured".
    with Session.open(profile, Settings.load(profile)) as session:
        (dataset,) = session.evaluation.datasets()
        (other,) = session.evaluation.start(dataset.id, ["evidence"], ["key-facts"])
        session.evaluation.resume(other)
        without = session.evaluation.summary(other)
    assert "Not measured: the answers' length in words." in without["not_measured"]

    # The tab: a box to choose it, and a column in the results table.
    window = open_window()
    page = window.evaluation_page
    assert answer_words in page.scorer_boxes and not page.scorer_boxes[answer_words].isChecked()
    page.refresh_results()

    def headers() -> list[str]:
        return [page.results.horizontalHeaderItem(i).text()
                for i in range(page.results.columnCount())]
    qtbot.waitUntil(lambda: "Words per answer ↓" in headers(), timeout=20000)
    # Its judge reply, kept with each result, is shown under the title it registered.
    from desktop_app.gui.evaluation_page import readable_judge

    (result,) = [r for r in session_results(profile, run_id) if r["judge"]][:1]
    assert readable_judge(result["judge"]).startswith("Words counted (a toy judge)\n")


def session_results(profile, run_id: str) -> list[dict]:
    from desktop_app.core.config import Settings
    from desktop_app.core.session import Session

    with Session.open(profile, Settings.load(profile)) as session:
        return session.evaluation.results(run_id)
