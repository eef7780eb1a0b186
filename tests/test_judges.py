"""Rubric judges (MedJudge, HIVMedQA) with the real model, unparseable replies counted as
missing, and the HIVMedQA judge calibration against the paper's GPT-4o scores.  (That a
judge's reply always parses, whatever the model writes, is tested in test_grammar.py.)"""

import dataclasses
import json

import pytest

from desktop_app.core.config import Settings
from desktop_app.core.errors import ModelOutputError
from desktop_app.core.evaluation.importers import import_dataset
from desktop_app.core.evaluation.judges import (HIV_DIMENSIONS, RubricJudge,
                                                calibrate_hivmedqa_judge, hivmedqa_scores,
                                                label_distributions, load_paper_scores)
from desktop_app.core.evaluation.report import ReportRules, summarize, to_html
from desktop_app.core.evaluation.runner import Evaluator, continue_run, start_run
from desktop_app.core.evaluation.runs import EvaluationStore
from desktop_app.core.glossary.glossary import load_glossary
from desktop_app.core.store import open_store
from helpers import SHARED, run_lumen

HIV = SHARED / "data" / "hivmedqa"
PAPER_CSV = HIV / "question_answers_pairs_and_source.csv"
needs_hiv = pytest.mark.skipif(not HIV.exists(), reason="../shared/data/hivmedqa is not present "
                                                        "(a user's machine has no shared/)")


def test_hivmedqa_judge_scores_five_dimensions(runtime):
    value, detail = RubricJudge(runtime).hivmedqa(
        "How is HIV diagnosed?", "With HIV tests: antibody, antigen/antibody and nucleic acid tests.",
        "By blood tests that look for the virus or the body's antibodies.")
    assert detail["unparseable"] is False
    assert all(0 <= value[d] <= 5 for d in HIV_DIMENSIONS)
    assert value["overall"] == sum(value[d] for d in HIV_DIMENSIONS) / 5
    assert set(hivmedqa_scores(value)) == {f"hiv_{d}" for d in (*HIV_DIMENSIONS, "overall")}


def test_unparseable_replies_are_missing_never_zero(runtime, monkeypatch):
    judge = RubricJudge(runtime)
    model = runtime.for_role("judge")

    def broken(*args, **kwargs):
        raise ModelOutputError("The model's reply is not valid JSON.", '{"comprehension": 4')
    monkeypatch.setattr(model, "generate_json", broken)
    value, detail = judge.hivmedqa("q", "reference", "answer")
    assert value is None and detail["unparseable"] and detail["reply"]
    assert all(v is None for v in hivmedqa_scores(value).values())
    counts = label_distributions([None, {"correctness": "correct", "coverage": "equal",
                                         "clinical_impact": "negligible", "judge_confidence": "high"}])
    assert counts["unparseable"]["count"] == 1 and counts["correctness"]["correct"] == 1


@pytest.mark.slow
@needs_hiv
def test_judge_calibration_against_the_papers_scores(runtime):
    rows = load_paper_scores(PAPER_CSV)
    assert len(rows) == 82
    result = calibrate_hivmedqa_judge(RubricJudge(runtime), PAPER_CSV, limit=4)
    assert result["rows"] == 4
    for dimension in HIV_DIMENSIONS:
        row = result["dimensions"][dimension]
        assert row["n"] + result["unparseable"] == 4
        assert row["mae"] is None or 0 <= row["mae"] <= 5


@needs_hiv
def test_calibrate_judge_command(profile):
    result = run_lumen("evaluate", "calibrate-judge", str(PAPER_CSV), "--limit", "2", "--json")
    assert result.returncode == 0, result.stderr
    data = json.loads(result.stdout)
    assert data["rows"] == 2 and set(data["dimensions"]) == set(HIV_DIMENSIONS)
    wrong = run_lumen("evaluate", "calibrate-judge", str(HIV / "rephrased_all_questions_answers_scores.csv"))
    assert wrong.returncode == 2 and "holds scores without the texts" in wrong.stderr


@pytest.mark.slow
@needs_hiv
def test_hivmedqa_run_with_rubric_judges(profile, passphrase_env, runtime):
    settings = dataclasses.replace(Settings(), context_size=2048, answer_tokens=40,
                                   bootstrap_resamples=1000)
    with open_store(profile.database_file) as store:
        evaluations = EvaluationStore(store)
        dataset = evaluations.save_dataset(import_dataset(HIV, "hivmedqa"))
        assert dataset.sample_count == 92
        evaluator = Evaluator(runtime, load_glossary(None), settings, profile.cache_dir)
        run_id = start_run(evaluations, runtime, settings, dataset.id, "qa",
                           ["medjudge", "hivmedqa-judge"], limit=2)
        continue_run(evaluations, evaluator, run_id)
        summary = summarize(evaluations, run_id, ReportRules(resamples=1000))
    assert summary["counts"]["samples"] == 2
    distributions = summary["medjudge"]
    assert (sum(distributions["correctness"].values()) + distributions["unparseable"]["count"]
            + distributions["blank answers"]["count"]) == 2
    assert "hiv_overall" in summary["metrics"]
    page = to_html(summary, [])
    assert "MedJudge labels" in page and "HIVMedQA overall" in page
