"""Lumen's HTML pages come from resources/templates (issue #34): every value a page shows
is escaped, in every template, and a value a template needs but is not given is an error.
Each page is rendered for real, by the code that makes it where that code takes plain
values, with text that would be markup if it were not escaped."""

from __future__ import annotations

import jinja2
import pytest

from desktop_app.core.errors import LumenError
from desktop_app.core.evaluation.report import to_html
from desktop_app.core.pipelines.simplify import (Handout, HandoutItem, HandoutSection,
                                                  MedicineRow)
from desktop_app.core.pipelines.trace import Trace
from desktop_app.core.templates import render
from helpers import ROOT

P = ' <script>alert("x")</script> & co'
ESCAPED = " &lt;script&gt;alert(&#34;x&#34;)&lt;/script&gt; &amp; co"


def report_page() -> str:
    metric = {"label": f"SARI{P}", "n": 30, "missing": 0, "mean": 41.5, "ci_low": 38.0,
              "ci_high": 45.0, "interval": f"bootstrap{P}", "no_interval": "",
              "higher_is_better": True, "scale": "0-100"}
    summary = {
        "run": {"id": f"run1{P}", "system": f"dialogue:plain{P}", "status": f"complete{P}",
                "created_at": f"2025-03-02T10:00:00{P}", "limit": 30,
                "config": {"app_version": f"1.0{P}", "prompt_versions": {f"ask{P}": f"v1{P}"},
                           "seed": 42, "settings": {"temperature": 0.0},
                           "machine": {"cpu": f"cpu{P}", "cores": 2, "system": f"Linux{P}",
                                       "python": f"3.11{P}"},
                           "models": {f"generator{P}": {"id": f"smollm2{P}", "sha256": f"00{P}"},
                                      "judge": {"id": "j", "endpoint": f"http://host{P}",
                                                "server_model": f"m{P}"}}}},
        "dataset": {"name": f"demo{P}", "format": f"medisumqa{P}", "sample_count": 30,
                    "source_file": f"demo.jsonl{P}", "source_sha256": f"ab{P}"},
        "counts": {"samples": 30, "answered": 29, "errors": 1, "judge_unparseable": 1,
                   "judge_cut_off": 1, "findings": 1},
        "rules": {"resamples": 1000, "min_samples": 20, "finding": f"incorrect{P}",
                  "allowed_findings": 0, "max_error_share": 0.1},
        "metrics": {"sari": metric, "fkgl": {**metric, "label": f"FKGL{P}", "ci_low": None,
                                             "no_interval": f"too few{P}", "scale": "US school grade"}},
        "timing": {"seconds": 95.0, "samples_per_minute": 19.0, "clock": True},
        "errors": [{"count": 1, "samples": [f"s1{P}"], "error": f"timeout{P}"}],
        "not_measured": [f"BERTScore{P}"],
        "medjudge": {f"clinical_impact{P}": {f"critical{P}": 1}},
        "judged": 29,
        "worst": [{"sample_id": f"s2{P}", "finding": True, "labels": {f"correctness{P}": f"wrong{P}"},
                   "analysis": f"Doubles the dose{P}", "question": f"How much?{P}",
                   "reference": f"10 mg{P}", "answer": f"20 mg{P}"}],
        "consultation": {
            "diagnosis": {"macro_f1": 0.5, "weighted_f1": 0.5, "accuracy": 0.5, "cases": 2,
                          "none_rate": 0.0,
                          "macro_f1_interval": {"ci_low": None, "ci_high": None,
                                                "no_interval": f"too few{P}"},
                          "per_label": {f"stye{P}": {"support": 1, "precision": 1.0, "recall": 1.0,
                                                     "f1": 1.0}}},
            "utterances": {"mean": 8.0, "sd": 1.0, "median": 8.0},
            "ended_by": {f"break{P}": 2}, "competence": {f"competent{P}": 2}, "assessed": 2,
            "failed": 1, "chance": 0.2,
            "by_category": {f"eye{P}": {"cases": 2, "macro_f1": 0.5}},
            "by_temperament": {f"calm{P}": {"cases": 1, "macro_f1": 0.5}}},
    }
    criteria = [{"criterion": f"sari > 40{P}", "actual": 41.5, "passed": True},
                {"criterion": f"bleu > 10{P}", "actual": None, "passed": False, "measured": False,
                 "why": f"not scored{P}"}]
    comparison = {"baseline": f"run0{P}", "shared_samples": 30, "tests": 1, "rows": [
        {"label": f"SARI{P}", "mean_a": 40.0, "mean_b": 41.5, "difference": 1.5, "ci_low": 0.5,
         "ci_high": 2.5, "p_bonferroni": 0.01, "significant": True, "p_bh": 0.01, "p_wilcoxon": 0.02}]}
    modes = {"shared_samples": 2, "tests": 1, "alpha": 0.01, "warning": f"Few cases{P}",
             "runs": [{"mode": f"hint{P}", "id": f"run2{P}", "macro_f1": 0.5}],
             "rows": [{"label": f"macro F1{P}", "mode_a": f"hint{P}", "mean_a": 0.5,
                       "mode_b": f"plain{P}", "mean_b": 0.4, "n": 2, "p_wilcoxon": 0.5,
                       "p_bh": 0.5, "significant": False}]}
    return to_html(summary, criteria, comparison, bertscore_note=f"MiniLM{P}", baseline=summary,
                   modes=modes)


def handout_page() -> str:
    def item(text: str) -> HandoutItem:
        return HandoutItem(text=text, source="")

    def section(title: str, text: str, part: str, kind: str = "") -> HandoutSection:
        return HandoutSection(title=title, plain_title=title, original=text, text=text,
                              source="explained", part=part, kind=kind)

    trace = Trace(kind="simplify", method="plain", variant="", prompt_version="",
                  app_version="", models={}, settings={}, summary_sha256="", notice=f"Notice{P}")
    handout = Handout(
        medicines=[MedicineRow(medicine=f"Cephalexin{P}", about=f"An antibiotic{P}",
                               how_much=f"500 mg{P}", when=f"four times a day{P}", until="",
                               change=f"NEW{P}", why=f"for the infection{P}", source="")],
        appointments=[item(f"Clinic on 13/02{P}")],
        warnings=[item("Call your doctor for fever, new pain, redness that spreads, or vomiting"
                       f" that does not stop{P}"), item(f"Call 911 for chest pain{P}")],
        restrictions=[], more_from_lists={"medications": [f"Keep taking aspirin{P}"]},
        sections=[section(f"Admitted{P}", f"02/03/2025{P}", "record"),
                  section("", f"No known allergies{P}", "now", "allergies"),
                  section(f"Course{P}", f"You had cellulitis.{P}\nIt got better.", "story"),
                  section(f"Labs{P}", f"WBC 12{P}", "care_team")],
        copied=[f"Cefazolin 2 g{P}"], words_to_know=[{"term": f"cellulitis{P}",
                                                     "definition": f"a skin infection{P}"}],
        trace=trace)
    return handout.to_html()


def ask_page() -> str:
    return render("ask_answer.html.j2", question=f"How long?{P}\nReally?", answer=f"7 days{P}",
                  note=f"From the summary{P}", evidence=[f"[Medications] Cephalexin{P}"],
                  flags=[f"Check the dose{P}"], notice=f"Not advice{P}")


def knowledge_page() -> str:
    sources = [{"ref": f"K1{P}", "document": f"asthma.md{P}", "statement": f"Give salbutamol{P}"},
               {"ref": f"C2{P}", "case": f"case-17{P}", "similarity": "0.73",
                "diagnosis": f"Asthma{P}"}]
    return render("knowledge_answer.html.j2", question=f"What first?{P}", mode="answer",
                  diagnosis="", answer=f"Salbutamol{P}", sources=sources, notice=f"Not advice{P}")


def consultation_page() -> str:
    from desktop_app.gui.evaluation_page import consultation_html

    marks = {item: True for item in ("1.1", "1.2", "1.3", "2.1", "2.2", "3.1", "3.2")}
    return consultation_html({
        "sample_id": f"dlg-1{P}", "output": f"stye{P}", "target": f"chalazion{P}",
        "error": f"stopped{P}", "judge": {"assessor": {"marks": {**marks, "4.1": f"good{P}"}}},
        "trace": {"consultation": {
            "mode": "hint", "temperament": f"calm{P}", "ended_by": f"odd{P}", "hint": [f"stye{P}"],
            "turns": [{"speaker": "patient", "text": f"A lump{P}\non my eyelid", "reasoning": ""},
                      {"speaker": "doctor", "text": f"Does it hurt?{P}", "reasoning": f"stye{P}"}]}}})


PAGES = {"report.html.j2": report_page, "handout.html.j2": handout_page,
         "ask_answer.html.j2": ask_page, "knowledge_answer.html.j2": knowledge_page,
         "consultation.html.j2": consultation_page}


def test_every_template_is_checked_here():
    shipped = {path.name for path in (ROOT / "resources" / "templates").glob("*.j2")}
    assert shipped == set(PAGES)


@pytest.mark.parametrize("name", sorted(PAGES))
def test_every_value_a_page_shows_is_escaped(name):
    page = PAGES[name]()
    assert "<script>" not in page and "& co" not in page
    assert ESCAPED in page
    # Line breaks in free text become <br>, and only those (the text escaped first).
    if name in ("ask_answer.html.j2", "consultation.html.j2", "handout.html.j2"):
        assert "<br>" in page


def test_a_value_a_template_needs_but_is_not_given_is_an_error():
    with pytest.raises(jinja2.UndefinedError, match="answer"):
        render("ask_answer.html.j2", question="How long?", note="", evidence=[], flags=[],
               notice="")


def test_a_missing_template_says_to_reinstall():
    with pytest.raises(LumenError, match="Reinstall"):
        render("no-such-page.html.j2")
