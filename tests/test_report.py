"""The validation report says no more than its data: the verdict counts judge findings,
intervals stay within each metric's range (and give way to "too few samples"), the
worst answers are shown with their question and reference, what was not measured is
listed, the charts put every run side by side, and the PDF fills its pages.

Judge labels and scores are written into a real encrypted store by hand here: what is
tested is what the report makes of them.  The judges that produce them are tested in
test_judges.py, and whole runs in test_evaluation.py."""

from __future__ import annotations

import xml.etree.ElementTree as ET

import numpy as np
import pytest

from desktop_app.core.errors import LumenError
from desktop_app.core.evaluation.chart import Bar, axis_range, bar_chart_svg
from desktop_app.core.evaluation.importers import import_dataset
from desktop_app.core.evaluation.report import (ReportRules, build_report, charts, check_criteria,
                                                metric_info,
                                                parse_criteria, report_kind, summarize, verdict)
from desktop_app.core.evaluation.runs import EvaluationStore
from desktop_app.core.pipelines.calibration import demo_benchmark
from desktop_app.core.store import open_store
from desktop_app.export import html_to_pdf, write_report
from helpers import assert_fills_the_page

CONFIG = {"app_version": "test", "models": {"generator": {"id": "smollm2", "sha256": "0" * 64}},
          "prompt_versions": {"ask": "ask-test"}, "seed": 42, "settings": {"temperature": 0.0},
          "machine": {"cpu": "test cpu", "cores": 2, "system": "Linux", "python": "3.11"}}
FINE = {"brief_analysis": "Matches the reference.", "key_missing_facts": [], "key_extra_facts": [],
        "correctness": "correct", "coverage": "equal", "clinical_impact": "negligible",
        "judge_confidence": "high"}


@pytest.fixture
def evaluations(profile, passphrase_env):
    with open_store(profile.database_file) as store:
        yield EvaluationStore(store)


def stored_run(evaluations, labels: list[dict | None], *, scorers=("medjudge", "reference"),
               bleu: list[float] | None = None, limit: int | None = None) -> tuple[str, list]:
    """A run whose samples carry the given MedJudge labels (None: no judge reply)."""
    dataset = evaluations.save_dataset(import_dataset(demo_benchmark(), "medisumqa", name="demo"))
    samples = evaluations.samples(dataset.id, limit=len(labels))
    run_id = evaluations.create_run(dataset.id, "lamp:glossary", list(scorers), CONFIG, limit)
    for index, (sample, label) in enumerate(zip(samples, labels)):
        judge = {} if label is None else {"medjudge": {"unparseable": False, "labels": label}}
        scores = {} if bleu is None else {"bleu": bleu[index]}
        evaluations.save_result(run_id, sample, index, output=f"Answer {index} <b>", scores=scores,
                                judge=judge, trace={}, error="", seconds=1.0, model_seconds=0.5)
    evaluations.set_status(run_id, "complete")
    return run_id, samples


def test_a_contradictory_critical_answer_fails_the_run_whatever_the_criteria(evaluations):
    bad = {**FINE, "correctness": "contradictory", "clinical_impact": "critical",
           "brief_analysis": "Says to double the dose."}
    run_id, samples = stored_run(evaluations, [FINE] * 11 + [bad])
    report = build_report(evaluations, run_id, ReportRules(resamples=1000), "errors == 0")
    assert report.criteria[0]["passed"]
    decided = report.verdict
    assert decided["status"] == "failed"
    assert "1 of 12 judged answers are findings" in decided["headline"]
    worst = report.summary["worst"][0]
    assert worst["finding"] and worst["sample_id"] == samples[11].id
    assert worst["question"] == samples[11].input.strip() or samples[11].input.startswith(
        worst["question"].rstrip(" …"))
    assert worst["reference"] and worst["labels"]["clinical impact"] == "critical"
    page = report.to_html()
    assert "Validation FAILED" in page and "(finding)" in page and "Says to double the dose." in page
    assert "Answer 11 &lt;b&gt;" in page  # answers are escaped
    assert "all acceptance criteria met" not in page.lower()


def test_findings_follow_the_thresholds_it_sets(evaluations):
    significant = {**FINE, "correctness": "incorrect", "clinical_impact": "significant"}
    run_id, _ = stored_run(evaluations, [FINE] * 11 + [significant])
    default = summarize(evaluations, run_id, ReportRules(resamples=1000))
    assert default["counts"]["findings"] == 0  # neither contradictory nor critical
    assert verdict(default, [])["status"] == "passed"
    strict = summarize(evaluations, run_id, ReportRules(resamples=1000, fail_impact="significant"))
    assert strict["counts"]["findings"] == 1 and verdict(strict, [])["status"] == "failed"
    assert not check_criteria(strict, parse_criteria("findings == 0"))[0]["passed"]
    wrong = summarize(evaluations, run_id, ReportRules(resamples=1000, fail_correctness="incorrect",
                                                      fail_impact="off"))
    assert wrong["counts"]["findings"] == 1 and "judged incorrect or worse" in wrong["rules"]["finding"]
    allowed = summarize(evaluations, run_id, ReportRules(resamples=1000, fail_impact="significant",
                                                        allowed_findings=1))
    assert verdict(allowed, [])["status"] == "passed"
    off = ReportRules(fail_correctness="off", fail_impact="off")
    assert not off.is_finding({**FINE, "correctness": "contradictory", "clinical_impact": "critical"})


def test_without_criteria_or_judge_the_report_makes_no_claim(evaluations):
    run_id, _ = stored_run(evaluations, [None] * 12, scorers=("reference",), bleu=[0.0] * 12)
    summary = summarize(evaluations, run_id, ReportRules(resamples=1000))
    decided = verdict(summary, [])
    assert decided["status"] == "no claim" and "makes no claim" in decided["headline"]
    assert any("could not fail on it" in note for note in decided["notes"])
    assert any("clinical correctness and impact" in note for note in summary["not_measured"])
    assert not any(note.startswith("Not measured: similarity to the reference answers")
                   for note in summary["not_measured"])
    # Criteria met without a judge: passed on what was measured, and it says what was not.
    checked = [{"criterion": "errors == 0", "actual": 0, "passed": True}]
    passed = verdict(summary, checked)
    assert passed["status"] == "passed" and passed["headline"].startswith("Passed on what was measured")
    assert passed["notes"]


def test_intervals_stay_in_range_and_give_way_to_too_few_samples(evaluations):
    bleu = [0.0] * 10 + [9.0, 12.0]  # a t-interval would go below 0 here
    run_id, _ = stored_run(evaluations, [FINE] * 12, bleu=bleu)
    summary = summarize(evaluations, run_id, ReportRules(resamples=2000))
    row = summary["metrics"]["bleu"]
    t_low = np.mean(bleu) - 2.2 * np.std(bleu, ddof=1) / np.sqrt(len(bleu))
    assert t_low < 0 <= row["ci_low"] <= row["mean"] <= row["ci_high"] <= 12.0
    assert row["interval"] == "bootstrap percentile" and row["n"] == 12
    few = summarize(evaluations, run_id, ReportRules(resamples=1000, min_samples=20))
    assert few["metrics"]["bleu"]["ci_low"] is None
    assert "too few samples (12" in few["metrics"]["bleu"]["no_interval"]
    assert any("BLEU: too few samples" in note for note in few["not_measured"])
    page = build_report(evaluations, run_id, ReportRules(resamples=1000, min_samples=20), "").to_html()
    assert "too few samples (12; an interval needs 20)" in page
    csv_header = build_report(evaluations, run_id, ReportRules(resamples=1000), "").to_csv().splitlines()[0]
    assert csv_header == "metric,label,n,missing,mean,ci_low,ci_high,interval,no_interval"


def test_a_limited_or_unfinished_run_says_how_much_was_answered(evaluations):
    run_id, _ = stored_run(evaluations, [FINE] * 3, limit=5)
    notes = summarize(evaluations, run_id, ReportRules(resamples=1000))["not_measured"]
    assert "Only 3 of 5 samples were answered (run complete)." in notes
    assert any("limited to 5 of the dataset's 84 samples" in note for note in notes)


def test_charts_put_every_run_side_by_side_with_axis_unit_and_intervals(evaluations):
    run_a, _ = stored_run(evaluations, [FINE] * 12, bleu=[float(i) for i in range(12)])
    run_b = evaluations.create_run(evaluations.runs()[0]["dataset_id"], "zero-shot", ["reference"],
                                   CONFIG, None)
    for index, sample in enumerate(evaluations.samples(evaluations.runs()[0]["dataset_id"], limit=12)):
        evaluations.save_result(run_b, sample, index, output="x", scores={"bleu": 20.0 + index},
                                judge={}, trace={}, error="", seconds=1.0, model_seconds=0.5)
    rules = ReportRules(resamples=1000)
    drawn = charts([("this run", summarize(evaluations, run_a, rules)),
                    ("baseline", summarize(evaluations, run_b, rules))])
    title, svg = next((t, s) for t, s in drawn if "0-100" in t)
    root = ET.fromstring(svg)  # well-formed SVG
    texts = [t.text for t in root.iter("{http://www.w3.org/2000/svg}text")]
    assert "this run" in texts and "baseline" in texts and "BLEU" in texts
    assert any(t and t.startswith("score, 0 to 100") for t in texts)
    assert {"0", "20", "40", "60", "80", "100"} <= set(texts)  # axis ticks
    assert len(root.findall("{http://www.w3.org/2000/svg}rect")) >= 2 + 2 + 1  # bars, legend, ground
    assert len(root.findall("{http://www.w3.org/2000/svg}line")) >= 6  # whiskers with caps, axes
    report = build_report(evaluations, run_a, rules, "", baseline_id=run_b)
    assert report.comparison["shared_samples"] == 12
    assert report.to_html().count("data:image/svg+xml;base64,") == len(charts(
        [("a", report.baseline), ("b", report.summary)]))


def test_chart_axis_covers_the_metric_and_a_bar_without_interval_says_so():
    assert axis_range("0-100", 40) == (0.0, 100.0)
    assert axis_range("1-5", 3) == (0.0, 5.0)
    assert axis_range("US school grade", 13.2) == (0.0, 20.0)
    svg = bar_chart_svg("FKGL", "grade", [("FKGL", [Bar("a", 7.5)])], (0.0, 20.0))
    assert "7.5 (no CI)" in svg


def test_the_report_pdf_fills_an_a4_page_with_its_own_title(evaluations, tmp_path):
    from pypdf import PdfReader

    bad = {**FINE, "correctness": "contradictory", "clinical_impact": "critical"}
    run_id, _ = stored_run(evaluations, [FINE] * 11 + [bad], bleu=[float(i) for i in range(12)])
    report = build_report(evaluations, run_id, ReportRules(resamples=1000), "errors == 0")
    path = tmp_path / "report.pdf"
    write_report(report, path)
    with pytest.raises(LumenError, match="exists already"):  # never replaced unasked
        write_report(report, path)
    before = path.read_bytes()
    write_report(report, path, force=True)
    assert path.read_bytes()[:4] == before[:4] == b"%PDF"
    reader = PdfReader(str(path))
    created = evaluations.run(run_id)["created_at"][:10]
    assert reader.metadata.title == f"Lumen validation report: demo, lamp:glossary, smollm2, {created} (run {run_id})"
    box = reader.pages[0].mediabox
    assert (round(float(box.width)), round(float(box.height))) == (595, 842)  # A4 in points
    assert "Validation FAILED" in " ".join(reader.pages[0].extract_text().split())
    assert_fills_the_page(path)


def test_a_long_table_repeats_its_header_on_every_page(tmp_path):
    rows = "".join(f"<tr><td>row {i}</td><td>{i}</td></tr>" for i in range(150))
    html_to_pdf("<html><head><title>Long</title></head><body><table><thead><tr><th>HEADNAME</th>"
                f"<th>value</th></tr></thead>{rows}</table></body></html>", tmp_path / "long.pdf")
    from pypdf import PdfReader

    pages = PdfReader(str(tmp_path / "long.pdf")).pages
    assert len(pages) >= 2
    assert all("HEADNAME" in " ".join(page.extract_text().split()) for page in pages)


def test_report_file_kinds_are_checked_before_any_work(tmp_path):
    assert report_kind("a.PDF") == "pdf" and report_kind("b.htm") == "html"
    with pytest.raises(LumenError, match="cannot write a report as '.docx'"):
        report_kind("report.docx")
    with pytest.raises(LumenError, match="cannot write a report as 'report'"):
        report_kind("report")


def scored_run(evaluations, scores: list[dict], *, system="lamp:glossary", errors=(),
               scorers=("reference", "key-facts"), dataset=None, output="An answer.") -> str:
    """A run whose samples carry the given scores; the samples numbered in `errors` ended
    in an error instead (no output, no score)."""
    dataset = dataset or evaluations.save_dataset(import_dataset(demo_benchmark(), "medisumqa",
                                                                 name="demo"))
    samples = evaluations.samples(dataset.id, limit=len(scores))
    run_id = evaluations.create_run(dataset.id, system, list(scorers), CONFIG, None)
    for index, (sample, values) in enumerate(zip(samples, scores)):
        failed = index in errors
        evaluations.save_result(run_id, sample, index, output="" if failed else output,
                                scores={} if failed else values, judge={}, trace={},
                                error="LumenError: the model file is damaged." if failed else "",
                                seconds=1.0, model_seconds=0.5)
    evaluations.set_status(run_id, "complete")
    return run_id


def test_every_interval_of_every_metric_stays_in_its_range_on_adversarial_runs(evaluations):
    """All equal at either end of the scale, the two ends mixed, n = 1, 2, 3 and 12, and
    runs whose every sample ended in an error: no mean or interval leaves the metric's
    range (a Wilson interval on a 0-100 score, or on a 1-5 judge at 1, did)."""
    info = metric_info()

    def ends(name):
        low, high = info[name]["range"]
        return low, (low + 40.0 if high == float("inf") else high)

    patterns = {"bottom": lambda lo, hi, i: lo, "top": lambda lo, hi, i: hi,
                "mixed": lambda lo, hi, i: (lo, hi)[i % 2]}
    checked = 0
    for n in (1, 2, 3, 12):
        for pattern, value in patterns.items():
            scores = [{name: value(*ends(name), i) for name in info} for i in range(n)]
            run_id = scored_run(evaluations, scores)
            summary = summarize(evaluations, run_id, ReportRules(resamples=500, min_samples=2))
            assert set(summary["metrics"]) == set(info)
            for name, row in summary["metrics"].items():
                low, high = info[name]["range"]
                assert low <= row["mean"] <= high, (name, pattern, n)
                if row["ci_low"] is not None:
                    checked += 1
                    assert low <= row["ci_low"] <= row["mean"] <= row["ci_high"] <= high, \
                        (name, pattern, n, row)
                    assert row["interval"] == ("Wilson" if info[name]["rate"]
                                               else "bootstrap percentile")
                else:
                    assert n < 2 and row["no_interval"]
    assert checked >= 3 * 3 * len(info) - 1
    for n in (1, 3, 12):
        run_id = scored_run(evaluations, [{}] * n, errors=range(n))
        summary = summarize(evaluations, run_id, ReportRules(resamples=500))
        assert summary["metrics"] == {} and summary["counts"]["errors"] == n
        assert summary["errors"] == [{"error": "LumenError: the model file is damaged.",
                                      "count": n, "samples": [r["sample_id"] for r in
                                                              evaluations.results(run_id)]}]
        decided = verdict(summary, check_criteria(summary, parse_criteria("errors == 0")))
        assert decided["status"] == "failed" and f"{n} of {n} samples ended in an error" in \
            decided["headline"]


def test_errors_are_left_out_of_every_metric_and_listed(evaluations):
    scores = [{"bleu": 50.0, "key_fact_recall": 1.0}] * 12
    run_id = scored_run(evaluations, scores, errors={3})
    summary = summarize(evaluations, run_id, ReportRules(resamples=500))
    assert summary["metrics"]["bleu"]["mean"] == 50.0 and summary["metrics"]["bleu"]["n"] == 11
    assert summary["counts"] == {**summary["counts"], "samples": 12, "answered": 11, "errors": 1}
    assert any("1 of 12 samples ended in an error" in note and "left out of every metric" in note
               for note in summary["not_measured"])
    page = build_report(evaluations, run_id, ReportRules(resamples=500), "errors == 0").to_html()
    assert "the model file is damaged" in page
    assert "(no answer)" not in page


def test_the_default_criteria_fail_a_useless_model_for_every_kind_of_system(evaluations,
                                                                         tmp_path):
    """A model that answers "I don't know" to everything, its answers scored by the real
    scorers and the run summarized by the real report, fails each kind of system's
    default criteria; a lenient judge (5 of 5, FKGL 3) does not save it."""
    from desktop_app.core.choices import SYSTEM_KINDS
    from desktop_app.core.evaluation.systems import criteria_setting, system_kind
    from desktop_app.core.config import Settings
    from desktop_app.core.evaluation.dataset import Sample
    from desktop_app.core.evaluation.scorers import key_fact_scores
    from desktop_app.core.glossary.glossary import load_glossary
    from desktop_app.core.config import resource_root

    glossary = load_glossary(None)
    demo = evaluations.save_dataset(import_dataset(demo_benchmark(), "medisumqa", name="demo"))
    consultations = evaluations.save_dataset(import_dataset(
        resource_root() / "resources" / "benchmarks" / "lumen-dialogue-demo.jsonl", "dialogue"))
    cases = tmp_path / "cases.csv"
    cases.write_text("id,complaint,diagnosis\n" + "".join(
        f"c{i},complaint number {i},{('flu', 'asthma', 'gout', 'eczema')[i % 4]}\n"
        for i in range(20)))
    labelled = evaluations.save_dataset(import_dataset(cases, "cases"))
    useless = "I don't know."
    kinds = set()
    for system in ("lamp:glossary", "zero-shot", "evidence", "qa", "dialogue:dialogue",
                   "doctorrag:full"):
        kind = system_kind(system)
        kinds.add(kind)
        dataset, output = demo, useless
        samples = evaluations.samples(demo.id, limit=20)
        if kind == "consultation":
            dataset, output = consultations, "none"  # no diagnosis reached
            scores = [{"diagnosis_correct": 0.0}] * 20
        elif kind == "diagnosis":
            dataset = labelled
            scores = [{"diagnosis_accuracy": float(useless == s.target)}
                      for s in evaluations.samples(labelled.id)]
        elif system == "lamp:glossary":
            # The checks refuse "I don't know", so the summary's own lines are shown (here
            # the reference itself, the best they could be): the model's share fails it.
            output = "(the reference)"
            scores = [key_fact_scores(s.target, s, glossary, "evidence") for s in samples]
        elif kind == "qa":
            scores = [key_fact_scores(useless, Sample(s.id, s.input, s.target, "", {}), glossary,
                                      "model") for s in samples]
        else:
            scores = [key_fact_scores(useless, s, glossary, "evidence" if kind == "evidence"
                                      else "model") for s in samples]
        if kind not in ("consultation", "diagnosis"):
            scores = [{**s, "fkgl": 3.0, "judge_similarity": 5.0} for s in scores]
        run_id = scored_run(evaluations, scores, system=system, dataset=dataset, output=output)
        summary = summarize(evaluations, run_id, ReportRules(resamples=500))
        criteria = parse_criteria(getattr(Settings(), criteria_setting(system)))
        checked = check_criteria(summary, criteria)
        decided = verdict(summary, checked)
        assert decided["status"] == "failed", (system, decided)
        assert all(c["measured"] for c in checked), (system, checked)
        if kind in ("consultation", "diagnosis"):
            assert "chance" in decided["headline"] and summary["chance"]
    assert kinds == set(SYSTEM_KINDS)


def test_too_few_samples_or_an_unmeasured_criterion_decide_nothing(evaluations):
    run_id = scored_run(evaluations, [{"key_fact_recall": 1.0, "bleu": 40.0}] * 4)
    summary = summarize(evaluations, run_id, ReportRules(resamples=500))
    decided = verdict(summary, check_criteria(summary, parse_criteria("key_fact_recall >= 0.5")))
    assert decided["status"] == "undecided"
    assert decided["headline"].startswith("Not enough samples to decide: 4 answered")
    run_id = scored_run(evaluations, [{"bleu": 40.0}] * 12)
    summary = summarize(evaluations, run_id, ReportRules(resamples=500))
    checked = check_criteria(summary, parse_criteria("bleu > 10; key_fact_recall >= 0.5"))
    assert [c["measured"] for c in checked] == [True, False]
    decided = verdict(summary, checked)
    assert decided["status"] == "undecided" and "Key-fact recall was not measured" in decided["headline"]
    assert "NOT MEASURED" in build_report(evaluations, run_id, ReportRules(resamples=500),
                                          "bleu > 10; key_fact_recall >= 0.5").to_html()
    with pytest.raises(LumenError, match="has none"):
        parse_criteria("bleu > chance")
    assert str(parse_criteria("macro_f1_low > chance")[0]) == "macro_f1_low > chance"
