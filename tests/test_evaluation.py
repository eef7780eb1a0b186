"""The evaluation engine: datasets into the encrypted store, runs scored sample by
sample, resume after a kill with nothing lost or scored twice, reports and comparisons."""

import dataclasses
import json
import os
import signal
import subprocess
import sys
import time

import pytest

from desktop_app.core.config import Settings
from desktop_app.core.errors import LumenError
from desktop_app.core.evaluation.importers import import_dataset
from desktop_app.core.evaluation.report import (ReportRules, check_criteria, compare,
                                                parse_criteria, summarize, to_csv, to_html)
from desktop_app.core.evaluation.runner import Evaluator, continue_run, start_run
from desktop_app.core.evaluation.systems import parse_system
from desktop_app.core.evaluation.runs import EvaluationStore
from desktop_app.core.glossary.glossary import load_glossary
from desktop_app.core.pipelines.calibration import demo_benchmark
from desktop_app.core.progress import CancelToken
from desktop_app.core.store import open_store
from helpers import ROOT, TEST_PASSPHRASE, run_lumen

FAST = dict(context_size=2048, answer_tokens=32, feedback_tokens=24, extraction_attempts=1,
            simplification_attempts=1, bootstrap_resamples=1000)


@pytest.fixture
def evaluations(profile, passphrase_env):
    with open_store(profile.database_file) as store:
        yield EvaluationStore(store)


@pytest.fixture
def evaluator(runtime, profile):
    return Evaluator(runtime, load_glossary(None), dataclasses.replace(Settings(), **FAST),
                     profile.cache_dir)


def demo(evaluations):
    return evaluations.save_dataset(import_dataset(demo_benchmark(), "medisumqa", name="lumen-demo"))


def test_datasets_are_stored_once(evaluations, profile):
    first = demo(evaluations)
    again = demo(evaluations)
    assert first.new and not again.new and first.id == again.id
    assert first.sample_count == 84 == len(evaluations.samples(first.id))
    assert evaluations.find_dataset("lumen-demo").id == first.id
    sample = evaluations.samples(first.id, limit=1)[0]
    assert sample.context and sample.input and sample.target
    evaluations.store.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    assert sample.input.encode() not in profile.database_file.read_bytes()


@pytest.mark.slow
def test_a_run_scores_every_sample_and_records_its_configuration(evaluations, evaluator, runtime):
    dataset = demo(evaluations)
    run_id = start_run(evaluations, runtime, evaluator.settings, dataset.id, "lamp-no-loops:plain",
                       ["reference", "similarity-judge"], limit=3)
    seen = []
    run = continue_run(evaluations, evaluator, run_id, on_sample=lambda o, d, t: seen.append(d))
    assert run["status"] == "complete" and seen == [1, 2, 3]
    config = run["config"]
    assert config["system"] == "lamp-no-loops:plain" and config["seed"] == 42
    assert len(config["models"]["generator"]["sha256"]) == 64
    assert config["prompt_versions"]["ask"].startswith("ask-")
    assert config["machine"]["cores"] and config["dataset_sha256"] == dataset.source_sha256
    results = evaluations.results(run_id)
    assert [r["ordinal"] for r in results] == [0, 1, 2]
    for result in results:
        for metric in ("sari", "fkgl", "sbert", "token_f1", "bleu", "rouge_l", "bertscore_f1"):
            assert result["scores"][metric] is not None
        judged = result["scores"]["judge_similarity"]
        unparseable = result["judge"]["similarity"]["unparseable"]
        assert (judged is None) == unparseable  # missing, never 0
        assert judged is None or 1 <= judged <= 5
        assert result["error"] or result["trace"]["method"] == "lamp-no-loops"
    summary = summarize(evaluations, run_id, ReportRules(resamples=1000, min_samples=2))
    assert summary["counts"]["samples"] == 3
    assert summary["metrics"]["sari"]["n"] == 3
    mean, low, high = (summary["metrics"]["fkgl"][k] for k in ("mean", "ci_low", "ci_high"))
    assert low <= mean <= high


@pytest.mark.slow
def test_cancel_pauses_and_resume_finishes_without_repeats(evaluations, evaluator, runtime):
    dataset = demo(evaluations)
    run_id = start_run(evaluations, runtime, evaluator.settings, dataset.id, "zero-shot",
                       ["reference"], limit=4)
    token = CancelToken()
    from desktop_app.core.errors import Cancelled

    with pytest.raises(Cancelled):
        continue_run(evaluations, evaluator, run_id,
                     on_sample=lambda o, done, total: done == 2 and token.cancel(), cancel=token)
    assert evaluations.run(run_id)["status"] == "paused"
    assert len(evaluations.finished_ids(run_id)) == 2
    run = continue_run(evaluations, evaluator, run_id)
    assert run["status"] == "complete"
    ids = [r["sample_id"] for r in evaluations.results(run_id)]
    assert len(ids) == 4 == len(set(ids))


@pytest.mark.slow
def test_a_run_carried_on_elsewhere_is_neither_interrupted_nor_run_twice(evaluations, evaluator,
                                                                         runtime):
    from desktop_app.core.locks import FileLock

    dataset = demo(evaluations)
    run_id = start_run(evaluations, runtime, evaluator.settings, dataset.id, "zero-shot",
                       ["reference"], limit=1)
    assert evaluations.run(run_id)["status"] == "paused"  # created, not yet carried on
    evaluations.set_status(run_id, "running")
    assert evaluations.run(run_id)["status"] == "interrupted"  # marked running, held by none
    other = FileLock(evaluations.store.path.parent / "run-locks" / f"{run_id}.lock")
    assert other.acquire()  # as another process carrying it on would
    try:
        assert evaluations.run(run_id)["status"] == "running"
        assert [r["status"] for r in evaluations.runs() if r["id"] == run_id] == ["running"]
        with pytest.raises(LumenError, match="another Lumen window"):
            continue_run(evaluations, evaluator, run_id)
        assert evaluations.finished_ids(run_id) == set()
    finally:
        other.release()
    assert continue_run(evaluations, evaluator, run_id)["status"] == "complete"


def test_a_failed_sample_is_not_scored_and_a_blank_answer_scores_the_worst(evaluations,
                                                                            evaluator, runtime):
    from desktop_app.core.evaluation import metrics

    dataset = evaluations.save_dataset(import_dataset(demo_benchmark(), "medisumqa"))
    sample = evaluations.samples(dataset.id, limit=1)[0]
    blank = dataclasses.replace(sample, context="")  # an Ask system cannot answer without a summary
    outcome = evaluator.evaluate("lamp:plain", ["reference", "similarity-judge"], blank, None)
    assert outcome.output == "" and "no document" in outcome.error
    assert outcome.scores == {} and outcome.judge == {}  # no answer is not a bad answer
    assert outcome.trace["error_fix"] == "Use the 'qa' system for this dataset."
    # A blank answer is an answer, and the worst one, as in LAMP-MedQA.
    scores, judge, _ = evaluator.score(["reference", "similarity-judge"], sample, "  ", None)
    assert scores["sari"] == 0 and scores["fkgl"] == metrics.WORST_FKGL
    assert scores["judge_similarity"] == 1 and judge["similarity"]["reason"] == "blank prediction"


def test_a_run_with_too_many_errors_stops_as_failed_and_retries_them_on_resume(
        evaluations, evaluator, runtime, tmp_path):
    """A document system on a set of open questions is refused before it starts; a run
    whose samples keep failing stops as failed, says why and what to do, and a resume
    tries the failed samples again (none kept as a score)."""
    from desktop_app.core.evaluation.runner import check_run

    questions = evaluations.save_dataset(import_dataset(
        ROOT / "tests" / "data" / "benchmarks" / "generic_sample.json", "generic"))
    with pytest.raises(LumenError, match="none of the samples") as refused:
        check_run(evaluations, questions.id, "lamp:glossary", ["key-facts"])
    assert "--system qa" in refused.value.fix
    rows = [{"question": f"Question {i}?", "answer": "Take 5 mg daily.",
             "context": "Discharge: take 5 mg daily." if i == 0 else ""} for i in range(12)]
    mixed = tmp_path / "mixed.jsonl"
    mixed.write_text("\n".join(json.dumps(row) for row in rows))
    dataset = evaluations.save_dataset(import_dataset(mixed, "generic"))
    run_id = start_run(evaluations, runtime, evaluator.settings, dataset.id, "evidence",
                       ["key-facts"])
    with pytest.raises(LumenError, match="stopped as failed: 2 of 12 samples ended in an error"
                       ) as stopped:
        continue_run(evaluations, evaluator, run_id)
    assert "Most often (2): LumenError: The sample has no document" in stopped.value.message
    assert stopped.value.fix.startswith("Use the 'qa' system for this dataset.")
    assert f"--resume {run_id}" in stopped.value.fix
    assert evaluations.run(run_id)["status"] == "failed"
    assert len(evaluations.finished_ids(run_id)) == 1 and evaluations.error_count(run_id) == 2
    summary = summarize(evaluations, run_id, ReportRules(resamples=500))
    assert summary["counts"]["errors"] == 2 and all(
        row["n"] == 1 for row in summary["metrics"].values())
    assert any(e["action"] == "bench.run_failed" for e in evaluations.store.audit_entries(20))
    # Resumed, the two failed samples are tried again (and fail again): never scored twice.
    with pytest.raises(LumenError, match="stopped as failed"):
        continue_run(evaluations, evaluator, run_id)
    results = evaluations.results(run_id)
    assert len(results) == 3 == len({r["sample_id"] for r in results})
    assert len(evaluations.spans(run_id)) == 2


def test_systems_and_criteria_are_checked():
    assert parse_system("lamp:glossary") == ("lamp", "glossary")
    assert parse_system("qa") == ("qa", None)
    with pytest.raises(LumenError, match="not a system"):
        parse_system("gpt-5")
    criteria = parse_criteria("fkgl < 10; judge_similarity >= 3; errors == 0")
    assert [str(c) for c in criteria] == ["fkgl < 10", "judge_similarity >= 3", "errors == 0"]
    with pytest.raises(LumenError, match="not understood"):
        parse_criteria("fkgl is low")
    summary = {"metrics": {"fkgl": {"mean": 7.5}, "judge_similarity": {"mean": 2.0}},
               "counts": {"errors": 0}}
    checked = check_criteria(summary, criteria)
    assert [c["passed"] for c in checked] == [True, False, True]


@pytest.mark.slow
def test_report_and_comparison(evaluations, evaluator, runtime):
    dataset = demo(evaluations)
    runs = []
    for system in ("zero-shot", "one-shot"):
        run_id = start_run(evaluations, runtime, evaluator.settings, dataset.id, system,
                           ["reference"], limit=4)
        continue_run(evaluations, evaluator, run_id)
        runs.append(run_id)
    summary = summarize(evaluations, runs[1], ReportRules(resamples=1000, min_samples=2))
    comparison = compare(evaluations, runs[0], runs[1], resamples=1000)
    assert comparison["shared_samples"] == 4 and comparison["tests"] >= 5
    row = next(r for r in comparison["rows"] if r["metric"] == "fkgl")
    assert row["p_bonferroni"] >= row["p_bootstrap"] and row["p_bh"] >= row["p_bootstrap"]
    checked = check_criteria(summary, parse_criteria("fkgl < 100; errors == 0"))
    page = to_html(summary, checked, comparison, bertscore_note="BERTScore with MiniLM")
    assert "Lumen validation report" in page and "<table" in page and "PASS" in page
    assert summary["run"]["config"]["models"]["generator"]["sha256"] in page
    assert "FKGL" in page or "fkgl" in page
    assert to_csv(summary).splitlines()[0].startswith("metric,label,n")


def _fast_profile(profile):
    settings = Settings.load(profile)
    for key, value in FAST.items():
        settings = settings.with_value(key, value)
    settings.save(profile)


SAMPLES = 6


def test_a_killed_run_resumes_with_every_sample_scored_once(profile, tmp_path):
    """A child `lumen bench run` is killed (SIGKILL) mid-run; resuming completes it.  Six
    samples: two or more kept before the kill, at least one left for the resume (each takes
    seconds; the kill follows within a second of the second), and a verdict at six."""
    _fast_profile(profile)
    Settings.load(profile).with_value("report_min_samples", SAMPLES).save(profile)
    env = dict(os.environ, LUMEN_PASSPHRASE=TEST_PASSPHRASE)
    imported = run_lumen("evaluate", "import", "--format", "medisumqa", str(demo_benchmark()),
                         "--name", "lumen-demo", env=env)
    assert imported.returncode == 0, imported.stderr
    child = subprocess.Popen([sys.executable, "-m", "desktop_app", "evaluate", "run", "lumen-demo",
                              "--system", "zero-shot", "--scorer", "reference", "--limit", str(SAMPLES)],
                             cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 240
        finished = 0
        while time.monotonic() < deadline and finished < 2:
            time.sleep(0.5)
            assert child.poll() is None, "the run ended before it could be killed"
            with open_store(profile.database_file, TEST_PASSPHRASE) as store:
                finished = store.query("SELECT count(*) FROM eval_result")[0][0]
        assert finished >= 2
    finally:
        child.send_signal(signal.SIGKILL)
        child.wait(30)
    with open_store(profile.database_file, TEST_PASSPHRASE) as store:
        run_id, status = store.query("SELECT id, status FROM eval_run")[0]
        before = store.query("SELECT count(*) FROM eval_result")[0][0]
    assert status == "running" and 2 <= before < SAMPLES  # killed: no chance to say "paused"
    # No process holds the run any more: it is shown as interrupted, ready to resume.
    listed = json.loads(run_lumen("evaluate", "list", "--json", env=env).stdout)
    assert [r["status"] for r in listed["runs"] if r["id"] == run_id] == ["interrupted"], listed
    resumed = run_lumen("evaluate", "run", "--resume", run_id, "--json", env=env)
    assert resumed.returncode == 0, resumed.stderr
    summary = json.loads(resumed.stdout)
    assert summary["run"]["status"] == "complete" and summary["counts"]["samples"] == SAMPLES
    with open_store(profile.database_file, TEST_PASSPHRASE) as store:
        rows = store.query("SELECT sample_id, scores FROM eval_result WHERE run_id = ?", (run_id,))
    assert len(rows) == SAMPLES == len({r[0] for r in rows})
    assert all(json.loads(r[1])["sari"] is not None for r in rows)
    with open_store(profile.database_file, TEST_PASSPHRASE) as store:
        resumes = [e["detail"] for e in store.audit_entries() if e["action"] == "bench.run_resumed"]
        spans = EvaluationStore(store).spans(run_id)
    assert resumes == [{"run": run_id, "was": "interrupted", "finished": before}]
    # The run's time is its clock's, both parts: the killed one up to its last kept sample.
    assert len(spans) == 2 and all(span["seconds"] > 0 for span in spans)
    assert summary["timing"]["clock"] and summary["timing"]["seconds"] == pytest.approx(
        sum(span["seconds"] for span in spans), abs=0.01)
    report = tmp_path / "report.html"
    written = run_lumen("evaluate", "report", run_id, "--out", str(report), "--accept", "errors == 0",
                        env=env)
    assert written.returncode == 0, written.stderr + written.stdout
    assert "Passed on what was measured: all 1 acceptance criteria met" in written.stdout
    assert "Not measured: clinical correctness and impact" in written.stdout
    assert "<table" in report.read_text()


def test_an_all_errored_run_exits_non_zero_from_the_command_line(profile, tmp_path):
    """Issue #33: a run whose every sample errored ended "complete" with exit 0."""
    env = dict(os.environ, LUMEN_PASSPHRASE=TEST_PASSPHRASE)
    rows = [{"question": f"Question {i}?", "answer": "Take 5 mg daily.",
             "context": "Discharge: take 5 mg daily." if i == 0 else ""} for i in range(12)]
    mixed = tmp_path / "mixed.jsonl"
    mixed.write_text("\n".join(json.dumps(row) for row in rows))
    assert run_lumen("evaluate", "import", "--format", "generic", str(mixed), "--name", "mixed",
                     env=env).returncode == 0
    ran = run_lumen("evaluate", "run", "mixed", "--system", "evidence", "--scorer", "key-facts",
                    env=env)
    assert ran.returncode == 2 and "stopped as failed" in ran.stderr
    assert "What to do: Use the 'qa' system" in ran.stderr and "Traceback" not in ran.stderr
    listed = json.loads(run_lumen("evaluate", "list", "--json", env=env).stdout)
    assert [r["status"] for r in listed["runs"]] == ["failed"]
