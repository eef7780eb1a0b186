"""Simplify a whole summary into a handout; reading summaries from files; the commands."""

import dataclasses
import json
import re
from pathlib import Path

import pytest

from desktop_app.core.config import Settings
from desktop_app.core.documents import read_document
from desktop_app.core.errors import LumenError
from desktop_app.core.pipelines.grounding import missing_facts
from desktop_app.core.pipelines.simplify import SimplifyPipeline, handout_pieces
from desktop_app.core.pipelines.summary_facts import read_summary
from desktop_app.export import html_to_pdf, write_handout
from helpers import TEST_PASSPHRASE, assert_fills_the_page, run_lumen

SHORT = """Admission Date: 02/03/2025
Discharge Date: 02/06/2025

Hospital Course:
The patient had cellulitis of the left lower leg and was treated with IV cefazolin, then switched to cephalexin.

Discharge Medications:
1. Cephalexin 500 mg by mouth four times daily for 7 days
2. Acetaminophen 650 mg by mouth every 6 hours as needed for pain

Follow-up:
Primary care clinic on 02/13/2025.
"""


def settings(**changes) -> Settings:
    return dataclasses.replace(Settings(context_size=2048, section_tokens=120, feedback_tokens=32),
                               **changes)


SUMMARIES = Path(__file__).parent / "data" / "summaries"
NSTEMI = """Admission Date: 04/02/2025
Attending: Cardiology
Hospital Course:
Presented with chest pain. Troponin rose to 1.8 ng/mL. Cardiac catheterization on 04/03 showed
a 90% stenosis of the mid LAD, treated with a drug-eluting stent.
Discharge Medications:
1. Aspirin 81 mg PO daily
2. Ticagrelor 90 mg PO BID x 12 months (NEW)
3. Atorvastatin 80 mg PO qhs (increased from 40 mg)
STOP: Ibuprofen
Follow-up:
Cardiology clinic on 04/16.
Return precautions: Call 911 for chest pain lasting more than 5 minutes.
"""


def make(runtime, glossary, tmp_path, summary, **changes):
    return SimplifyPipeline(runtime, glossary, settings(**changes), tmp_path).run(summary)


def test_a_record_field_does_not_swallow_the_sections_after_it(runtime, glossary, tmp_path):
    handout = make(runtime, glossary, tmp_path, NSTEMI, simplification_attempts=1)
    records = {s.title: s.text for s in handout.sections if s.is_record}
    assert records == {"Admission Date": "04/02/2025", "Attending": "Cardiology"}
    assert not any("continued" in s.plain_title for s in handout.sections)
    assert [s.title for s in handout.part("care_team")] == ["Hospital Course"]
    assert handout.story() is not None and handout.story().part == "story"


def test_the_handout_starts_with_the_medicines_appointments_and_warning_signs(runtime, glossary,
                                                                              tmp_path):
    handout = make(runtime, glossary, tmp_path, NSTEMI, simplification_attempts=1)
    rows = {r.medicine: r for r in handout.medicines}
    assert set(rows) == {"Aspirin", "Ticagrelor", "Atorvastatin", "Ibuprofen"}
    assert (rows["Ticagrelor"].change, rows["Ticagrelor"].how_much, rows["Ticagrelor"].when,
            rows["Ticagrelor"].until) == ("NEW", "90 mg", "by mouth twice a day", "for 12 months")
    assert rows["Atorvastatin"].change == "CHANGED" and "Was 40 mg" in rows["Atorvastatin"].why
    assert rows["Ibuprofen"].change == "STOP"
    assert [a.when for a in handout.appointments] == ["04/16"]
    assert any("chest pain" in w.text for w in handout.warnings)
    text = handout.to_text()
    order = [text.index(h) for h in ("What to do now", "Your medicines",
                                     "Your appointments and tests", "Call or come back if",
                                     "What happened in hospital", "For your care team",
                                     "Hospital Course")]
    assert order == sorted(order)
    # The care team's part is the summary as written; the story is in plain words, and it
    # leaves the lab value to the care team's part.
    story = handout.story().text
    assert story.startswith("Came in with chest pain") and "1.8 ng/mL" not in story
    assert "Troponin rose to 1.8 ng/mL" in text.split("For your care team")[1]
    assert "1.8 ng/mL" not in handout.main_text()
    page = handout.to_html()
    assert "<th>Medicine</th>" in page and "<span class='change'>NEW</span>" in page


@pytest.mark.slow
@pytest.mark.parametrize("name", ["caps_headings", "numbered_problems", "medication_table",
                                  "free_narrative", "long_stay"])
def test_every_medication_dose_date_and_follow_up_is_in_the_handout(name, runtime, glossary,
                                                                   tmp_path):
    """Whatever the model writes: with one short attempt per section, most rewrites fail and
    the summary's own words are shown; the final check copies in anything still missing."""
    summary = (SUMMARIES / f"{name}.txt").read_text(encoding="utf-8")
    handout = make(runtime, glossary, tmp_path, summary, simplification_attempts=1,
                   section_tokens=64)
    text = handout.to_text()
    assert missing_facts(summary, text, glossary) == []
    facts = read_summary(summary, glossary)
    for medication in facts.medications:
        assert medication.name.lower() in text.lower()
    for follow_up in facts.follow_ups:  # who it is with (a "Follow up with" may read "See")
        who = follow_up.who.split(",")[0] or follow_up.test
        assert who.lower() in text.lower(), follow_up.text
    assert len(handout.medicines) == len(facts.medications)
    assert len(handout.appointments) == len(facts.follow_ups)


@pytest.mark.slow
def test_a_section_is_shown_rewritten_only_when_the_rewrite_passed_every_check(
        runtime, glossary, tmp_path, monkeypatch):
    from desktop_app.core.pipelines import simplify

    def verdict(passed):
        def check(self, original, text, summary, finish_reason):
            gate = simplify.Gate("readability", 5.0, 10.0, passed, "FKGL < 10")
            return gate, [] if passed else ["it leaves out 1.8 ng/mL"]
        return check

    monkeypatch.setattr(SimplifyPipeline, "_check", verdict(False))
    failed = make(runtime, glossary, tmp_path, NSTEMI, simplification_attempts=2,
                  rewrite_easy_sections=True)
    course = failed.story()
    assert course.source == "explained" and "facts: it leaves out 1.8 ng/mL" in course.problems
    assert course.text.startswith("Came in with chest pain") and "90%" in course.text
    assert "(From your summary, in plain words.)" in failed.to_text()
    attempts = [a for a in failed.trace.attempts if a.stage == "section"]
    assert len(attempts) <= 2 and not any(a.chosen for a in attempts)

    monkeypatch.setattr(SimplifyPipeline, "_check", verdict(True))
    passed = make(runtime, glossary, tmp_path, NSTEMI, simplification_attempts=2,
                  rewrite_easy_sections=True)
    course = passed.story()
    chosen = [a for a in passed.trace.attempts if a.chosen]
    assert course.source == "model" and [course.text] == [a.text for a in chosen]


def test_a_section_s_verifications_and_retries_are_turns_after_its_rewrite(
        runtime, glossary, tmp_path, monkeypatch):
    from desktop_app.core.pipelines import simplify

    def too_hard(self, original, text, summary, finish_reason):  # every rewrite fails the grade
        return simplify.Gate("readability", 12.0, 10.0, False, "FKGL < 10"), []

    monkeypatch.setattr(SimplifyPipeline, "_check", too_hard)
    handout = make(runtime, glossary, tmp_path, NSTEMI, simplification_attempts=3,
                   rewrite_easy_sections=True)
    sections: list[list] = []  # each section's attempts, in order
    for attempt in (a for a in handout.trace.attempts if a.stage == "section"):
        if attempt.number == 1:
            sections.append([])
        sections[-1].append(attempt)
    assert sections
    for attempts in sections:
        calls = [c for a in attempts for c in a.calls]
        first = calls[0]
        assert first.prompt == "rewrite" and calls[1].purpose == "verify"  # the grade failed
        assert all(a.calls[0].prompt == "rewrite_retry" for a in attempts[1:])
        # The section, the job and its definitions are read once: each later call reuses
        # at least the first request's state (a token may merge where the reply starts).
        for later in calls[1:]:
            assert later.prompt_tokens - later.prompt_tokens_evaluated >= first.prompt_tokens - 1


def test_a_section_that_already_reads_easily_is_not_rewritten(runtime, glossary, tmp_path):
    easy = ("Hospital Course:\nYou came in with a bad cough. We gave you fluids and rest. "
            "You felt better on day two and went home.\n")
    handout = make(runtime, glossary, tmp_path, easy, simplification_attempts=1)
    course = handout.story()
    assert course.source == "explained" and course.problems == []
    assert course.fkgl_after < settings().readability_limit
    assert "bad cough" in course.text
    assert not handout.trace.attempts  # no model call for it
    # The setting hands every section to the model again.
    again = make(runtime, glossary, tmp_path, easy, simplification_attempts=1,
                 rewrite_easy_sections=True)
    assert [a.stage for a in again.trace.attempts] == ["section"]
    # A section that reads hard, even explained, still goes to the model.
    hard_summary = (
        "Hospital Course:\nThe patient was admitted with community-acquired pneumonia "
        "complicated by acute hypoxemic respiratory failure requiring supplemental oxygen "
        "administration, intravenous antimicrobial therapy and subsequent transition to oral "
        "therapy following clinical stabilization, defervescence and radiographic "
        "improvement of the consolidation.\n")
    pipeline = SimplifyPipeline(runtime, glossary, settings(), tmp_path)
    story = next(p for p in handout_pieces(hard_summary, read_summary(hard_summary, glossary),
                                           glossary, 6) if p.part == "story")
    assert pipeline._easy(story.section, story.text, hard_summary) is None
    hard = make(runtime, glossary, tmp_path, hard_summary, simplification_attempts=1)
    assert [a.stage for a in hard.trace.attempts] == ["section"]


def test_the_real_checks_refuse_a_rewrite_that_loses_or_invents_a_fact(runtime, glossary,
                                                                       tmp_path):
    pipeline = SimplifyPipeline(runtime, glossary, settings(), tmp_path)
    original = "Troponin rose to 1.8 ng/mL. Ticagrelor 90 mg twice daily."
    good = "Your troponin rose to 1.8 ng/mL. Take ticagrelor 90 mg twice a day."
    assert pipeline._check(original, good, NSTEMI, "stop")[1] == []
    lost = pipeline._check(original, "Take ticagrelor twice a day.", NSTEMI, "stop")[1]
    assert any("90 mg" in p for p in lost) and any("1.8 ng/mL" in p for p in lost)
    invented = pipeline._check(original, good + " Also take 60 mg of furosemide.", NSTEMI, "stop")[1]
    assert any("furosemide" in p for p in invented) and any("60 mg" in p for p in invented)
    looping = pipeline._check(original, good + " Take it with food." * 4, NSTEMI, "stop")[1]
    assert any("again and again" in p for p in looping)


def test_handout_files(runtime, glossary, tmp_path):
    handout = make(runtime, glossary, tmp_path, SHORT, simplification_attempts=1)
    for name in ("handout.txt", "handout.html", "handout.pdf"):
        write_handout(handout, tmp_path / name)
    assert (tmp_path / "handout.pdf").read_bytes().startswith(b"%PDF")
    assert read_document(tmp_path / "handout.pdf").count("Your medicines") >= 1
    from pypdf import PdfReader

    assert PdfReader(str(tmp_path / "handout.pdf")).metadata.title == "Your hospital stay"
    assert_fills_the_page(tmp_path / "handout.pdf")
    with pytest.raises(LumenError, match="cannot write a handout"):
        write_handout(handout, tmp_path / "handout.docx")
    # A file there already is replaced only when asked, and whole (no temporary left).
    (tmp_path / "mine.txt").write_text("the liaison's own notes")
    with pytest.raises(LumenError, match="exists already") as refused:
        write_handout(handout, tmp_path / "mine.txt")
    assert "--force" in refused.value.fix
    assert (tmp_path / "mine.txt").read_text() == "the liaison's own notes"
    write_handout(handout, tmp_path / "mine.txt", force=True)
    assert "Your medicines" in (tmp_path / "mine.txt").read_text()
    assert not list(tmp_path.glob(".mine-*"))
    trace = handout.trace
    assert trace.kind == "simplify" and trace.prompt_version.startswith("simplify-")
    assert all(a.stage == "section" for a in trace.attempts)
    assert {c.purpose for c in trace.calls()} <= {"rewrite", "verify"}
    assert len(trace.sections) == len(handout.sections)


def test_reading_txt_docx_and_pdf(tmp_path):
    import docx

    (tmp_path / "a.txt").write_bytes(SHORT.encode("cp1252"))
    assert read_document(tmp_path / "a.txt").startswith("Admission Date")
    document = docx.Document()
    for line in SHORT.splitlines():
        document.add_paragraph(line)
    document.save(tmp_path / "a.docx")
    assert "Cephalexin 500 mg" in read_document(tmp_path / "a.docx")
    html_to_pdf("<p>" + SHORT.replace("\n", "<br>") + "</p>", tmp_path / "a.pdf")
    assert "Cephalexin 500 mg" in read_document(tmp_path / "a.pdf")


@pytest.mark.parametrize("name,content,phrase", [
    ("a.rtf", b"{\\rtf1}", "reads .txt, .docx and .pdf"),
    ("a.docx", b"not a zip file", "not a readable Word document"),
    ("a.pdf", b"%PDF-1.4 garbage", "not a readable PDF"),
    ("a.txt", b"   \n  ", "holds no text"),
])
def test_unreadable_documents_say_what_to_do(tmp_path, name, content, phrase):
    (tmp_path / name).write_bytes(content)
    with pytest.raises(LumenError) as info:
        read_document(tmp_path / name)
    assert phrase in info.value.message and info.value.fix


def test_documents_are_checked_against_the_limits_as_they_expand(tmp_path, monkeypatch):
    """Issue #32: a Word file's zip parts and a PDF's pages are checked while read (the
    limits made small so a small file expands past them)."""
    import docx

    from desktop_app.core import textfiles

    document = docx.Document()
    document.add_paragraph("cough " * 2_000)
    document.save(tmp_path / "a.docx")
    html_to_pdf("<p>" + "cough " * 400 + "</p>", tmp_path / "a.pdf")
    assert read_document(tmp_path / "a.docx") and read_document(tmp_path / "a.pdf")
    monkeypatch.setattr(textfiles, "LIMITS", textfiles.Limits(field_chars=1_000))
    with pytest.raises(LumenError, match="12,000 characters of text, more than the 1,000"):
        read_document(tmp_path / "a.docx")
    with pytest.raises(LumenError, match="more text than that by page 1"):
        read_document(tmp_path / "a.pdf")
    monkeypatch.setattr(textfiles, "LIMITS", textfiles.Limits(file_bytes=20_000))
    with pytest.raises(LumenError, match=r"expands to \d+ MB, more than the"):
        read_document(tmp_path / "a.docx")


def test_scanned_pdf_without_text_is_explained(tmp_path):
    html_to_pdf("<p></p>", tmp_path / "scan.pdf")
    with pytest.raises(LumenError, match="no text layer"):
        read_document(tmp_path / "scan.pdf")


def _fast_profile(profile):
    fast = Settings.load(profile)
    for key, value in (("answer_tokens", 48), ("feedback_tokens", 32), ("section_tokens", 120),
                       ("simplification_attempts", 1), ("extraction_attempts", 2),
                       ("context_size", 2048)):
        fast = fast.with_value(key, value)
    fast.save(profile)


def test_ask_and_simplify_commands(profile, tmp_path):
    _fast_profile(profile)
    env = {"LUMEN_PASSPHRASE": TEST_PASSPHRASE}
    summary = tmp_path / "summary.txt"
    summary.write_text(SHORT)
    asked = run_lumen("ask", "--summary", str(summary), "--question",
                      "How long do I take the antibiotic?", "--json", env=env)
    assert asked.returncode == 0, asked.stderr
    data = json.loads(asked.stdout)
    assert data["answer"] and data["trace"]["method"] == "lamp" and data["notice"]
    plain = run_lumen("ask", "--summary", str(summary), "--question", "Why was I in hospital?",
                      "--method", "zero-shot", env=env)
    assert plain.returncode == 0 and "does not make them" in plain.stdout
    switched = Path(__file__).parent / "data" / "summaries" / "switched_medicine.txt"
    quoted = run_lumen("ask", "--summary", str(switched), "--question",
                       "Why was I switched from spironolactone to furosemide?",
                       "--method", "evidence", env=env)
    assert quoted.returncode == 0, quoted.stderr
    assert "> [FOLLOW-UP] - Blood test for potassium on 04/14  (the follow-up for it)" in quoted.stdout
    out = tmp_path / "handout.html"
    simplified = run_lumen("simplify", str(summary), "--out", str(out), env=env)
    assert simplified.returncode == 0, simplified.stderr
    assert "Your medicines" in out.read_text() and "Handout written" in simplified.stderr
    history = run_lumen("history", "--json", env=env)
    runs = json.loads(history.stdout)
    assert [r["kind"] for r in runs].count("ask") == 3 and [r["kind"] for r in runs].count("simplify") == 1
    audited = json.loads(run_lumen("audit", "--json", env=env).stdout)
    exports = [e["detail"] for e in audited if e["action"] == "simplify.exported"]
    assert exports == [{"format": "html", "run": next(r["id"] for r in runs if r["kind"] == "simplify")}]
    assert not any("handout" in json.dumps(e["detail"]) for e in audited)  # not the file's name
    shown = run_lumen("history", runs[0]["id"], env=env)
    assert json.loads(shown.stdout)["trace"]["id"] == runs[0]["id"]
    bad = run_lumen("simplify", str(summary), "--out", str(tmp_path / "x.doc"), env=env)
    assert bad.returncode == 2 and "cannot write a handout" in bad.stderr
    missing = run_lumen("ask", "--summary", str(tmp_path / "nope.txt"), "--question", "q?", env=env)
    assert missing.returncode == 2 and "cannot be opened" in missing.stderr


def test_calibrate_command(profile):
    result = run_lumen("calibrate", "--json")
    assert result.returncode == 0, result.stderr
    data = json.loads(result.stdout)
    assert data["calibration"]["split"] == "dev" and data["held_out"]["positives"] == 63
    assert data["applied"] is False
    margin = data["evidence_margin"]
    assert (margin["positives"], margin["negatives"]) == (21, 84)
    assert abs(margin["threshold"] - Settings().evidence_margin) < 0.02  # the documented default
    assert margin["specificity"] > 0.9 and data["evidence_margin_held_out"]["positives"] == 63


def test_page_one_of_a_short_summary_s_handout_is_what_to_do_now(glossary, tmp_path):
    """A one-page emergency department summary (243 words): its printed handout's first
    page holds the whole of "What to do now", every medicine to the last thing to avoid."""
    pdfium = pytest.importorskip("pypdfium2", reason="pypdfium2 renders the PDF (test extra)")
    from desktop_app.core.pipelines.simplify import handout_without_model

    summary = (Path(__file__).parent / "data" / "layouts" / "30-caps_colon-ed-kidney-stone.txt"
               ).read_text(encoding="utf-8")
    assert len(summary.split()) < 300
    handout = handout_without_model(summary, glossary)
    html_to_pdf(handout.to_html(), tmp_path / "handout.pdf")
    first = " ".join(pdfium.PdfDocument(str(tmp_path / "handout.pdf"))[0].get_textpage()
                     .get_text_range().split())
    first = re.sub(r"(\w)- (\w)", r"\1-\2", first)  # "Oxycodone-" at a line's end
    assert "What to do now" in first
    assert all(row.medicine in first for row in handout.medicines)
    for _heading, items in handout.page_one_lists():
        # (a list under its lead, "Call the clinic if you have:", is the lead and its items)
        texts = [t for item in items for t in ([item[0], *item[1]] if isinstance(item, tuple) else [item])]
        assert all(" ".join(text.split()) in first for text in texts)


def test_a_count_beside_a_total_is_never_a_count_of_that_strength(glossary):
    """"Take 2 tablets (40 mg total)" with no strength written is 2 tablets making 40 mg, not
    "2 tablets of 40 mg" (twice the dose); beside a strength it reads "2 tablets of 20 mg"."""
    from desktop_app.core.pipelines.evidence import Explainer
    from desktop_app.core.pipelines.simplify import medicine_row
    from desktop_app.core.pipelines.summary_facts import Medication

    explainer = Explainer(glossary, "", "mdy", True, glosses=0)
    total = Medication("Prednisone", dose="40 mg", count="2 tablets",
                       text="Prednisone: take 2 tablets (40 mg total) every morning")
    strength = Medication("Prednisone", dose="20 mg", count="2 tablets",
                          text="Prednisone 20 mg tablet: take 2 tablets (40 mg total) every morning")
    assert medicine_row(total, explainer).how_much == "2 tablets (40 mg in all)"
    assert medicine_row(strength, explainer).how_much == "2 tablets of 20 mg"


def test_a_low_dose_medicine_is_explained_by_what_it_does_at_that_dose(glossary):
    """Aspirin 81 mg keeps platelets from clumping; it is not "a common pain and fever
    medicine" to the patient who takes it after a stent (issue #31); 600 mg is for pain."""
    from desktop_app.core.pipelines.evidence import Explainer
    from desktop_app.core.pipelines.simplify import medicine_row
    from desktop_app.core.pipelines.summary_facts import Medication

    low = medicine_row(Medication("Aspirin", dose="81 mg", text="Aspirin 81 mg daily"),
                       Explainer(glossary, "", "mdy", True, glosses=0))
    high = medicine_row(Medication("Aspirin", dose="600 mg", text="Aspirin 600 mg every 6 hours as needed"),
                        Explainer(glossary, "", "mdy", True, glosses=0))
    assert "platelets" in low.about and "pain" not in low.about
    assert "pain" in high.about


def test_a_later_step_of_a_taper_reads_as_the_next_step(glossary):
    from desktop_app.core.pipelines.evidence import Explainer
    from desktop_app.core.pipelines.simplify import medicine_row
    from desktop_app.core.pipelines.summary_facts import Medication

    explainer = Explainer(glossary, "", "mdy", True, glosses=0)
    first = medicine_row(Medication("Prednisone", dose="20 mg", frequency="morning", step=1), explainer)
    second = medicine_row(Medication("Prednisone", dose="10 mg", frequency="morning", step=2), explainer)
    assert first.how_much == "20 mg" and second.how_much == "then 10 mg"


def test_warning_signs_stay_under_the_line_that_says_where_to_go(glossary):
    """Two lists of signs, one for 999 and one for the family doctor the same day, must not
    run together: each sign stays under its own lead, on paper and in the window's HTML."""
    from desktop_app.core.pipelines.simplify import handout_without_model

    summary = ("WARNING SIGNS:\nSeek urgent help (999 or A&E) if:\n- chest pain\n"
               "- black, tarry stools\n\nContact the GP or heart failure nurse (same day) if:\n"
               "- ankles or legs more swollen\n- weight up by more than 2 kg in 3 days\n\n"
               "Come to Casualty at once (open 24 hours) if there is:\n- fever or chills\n")
    handout = handout_without_model(summary, glossary)
    text = handout.main_text()
    urgent = text.index("- Seek urgent help (999 or A&E) if:")
    same_day = text.index("- Contact the GP or heart failure nurse (same day) if:")
    assert urgent < text.index("  - Chest pain") < text.index("  - Black, tarry stools") < same_day
    assert same_day < text.index("  - Ankles or legs more swollen")
    assert text.count("Come to Casualty at once") == 1 and "  - Fever or chills" in text
    html = handout.to_html()
    assert re.search(r"Seek urgent help \(999 or A&amp;E\) if:\s*<ul>\s*<li>Chest pain", html), html
    # A lead in capitals reads as a sentence, its abbreviations kept.
    shouted = handout_without_model("DISCHARGE INSTRUCTIONS:\nRETURN TO THE ED OR CALL YOUR GP FOR:\n"
                                    "- FEVER OVER 38 C\n- PAIN NOT CONTROLLED BY YOUR MEDICINES\n",
                                    glossary).main_text()
    assert "- Return to the emergency department or call your GP for:" in shouted, shouted
    assert "  - Fever over 38 C." in shouted, shouted


def test_a_summary_in_capitals_reads_as_sentences_on_page_one(glossary):
    """Capitals are harder to read: the handout's rows and lines say a summary's words in
    sentence case, its abbreviations (ER, NPH, BMP) kept."""
    from desktop_app.core.pipelines.simplify import handout_without_model

    summary = ("ALLERGIES: PENICILLIN (HIVES)\n\nDISCHARGE MEDICATIONS:\n"
               "1. POTASSIUM CHLORIDE ER 20 MEQ PO DAILY (NEW)\n2. INSULIN NPH 12 UNITS SC QAM (NEW)\n"
               "3. FAMOTIDINE 20 MG BID - STOP, REPLACED BY PANTOPRAZOLE\n"
               "4. PANTOPRAZOLE 40 MG PO QAM (NEW)\n\n"
               "FOLLOW-UP:\n- BMP ON 01/27/2025 (POTASSIUM AND CREATININE ON FUROSEMIDE)\n")
    handout = handout_without_model(summary, glossary)
    text = handout.main_text()
    assert [row.medicine for row in handout.medicines] == [
        "Potassium chloride ER", "Insulin NPH", "Famotidine", "Pantoprazole"], text
    assert "Penicillin (hives)" in text and "PENICILLIN" not in text, text
    assert "(potassium and creatinine on furosemide)" in text, text
    assert "Replaced by Pantoprazole" in text, text


def _medicine_rows(summary: str, glossary) -> list:
    """The handout's rows of a summary's medicines, as the handout makes them."""
    from desktop_app.core.pipelines.evidence import Explainer
    from desktop_app.core.pipelines.simplify import medicine_row
    explainer = Explainer(glossary, summary, "mdy", True, glosses=0)
    return [medicine_row(m, explainer) for m in read_summary(summary, glossary).medications]


def test_two_doses_of_one_day_are_not_steps_one_after_the_other(glossary):
    # "300 mg in the morning and 600 mg at bedtime" had read "then 600 mg", as if the
    # morning dose were to be replaced.
    for line, later in (("Gabapentin 300 mg in the morning and 600 mg at night - NEW", "600 mg"),
                        ("Prednisolone 40 mg daily for 5 days, then 30 mg daily for 5 days - NEW", "then 30 mg")):
        assert _medicine_rows("DISCHARGE MEDICATIONS\n" + line + "\n", glossary)[1].how_much == later, line


def test_a_medicine_row_keeps_its_line_s_other_sentences(glossary):
    # "Never skip this dose, even if not eating." and "Do not swallow." had been dropped
    # from the handout's rows.
    rows = _medicine_rows("DISCHARGE MEDICATIONS\n- Insulin detemir 20 units SC at night - NEW. Do not miss a dose, even "
                         "when unwell.\n- Chlorhexidine mouthwash 10 mL twice a day - NEW. Rinse and spit out.\n"
                         "- Warfarin 3 mg daily - CONTINUE. Aspirin is no longer needed.\n"
                         "- Ticagrelor 90 mg twice daily - NEW. Keep taking it for a year after aspirin stops. "
                         "(A 180 mg loading dose was given on 03/04.)\n",
                         glossary)
    assert "Keep taking it for a year after aspirin stops." in rows[-1].why  # its own, naming another
    assert "loading" not in rows[-1].why  # what was given on the ward is the care team's
    assert "Do not miss a dose, even when unwell." in rows[0].why
    assert "Rinse and spit out." in rows[1].why
    assert "Aspirin" not in rows[2].why  # another medicine's sentence is that medicine's


def test_a_ratio_changed_from_keeps_its_grams(glossary):
    [lispro] = read_summary("DISCHARGE MEDICATIONS\n2. Insulin aspart with meals: 1 unit per 8 g carbohydrate "
                            "(CHANGED from 1 unit per 10 g)\n", glossary).medications
    assert lispro.changed_from == "1 unit per 10 g"


def test_a_medicine_row_says_how_the_dose_is_taken(glossary):
    # "before breakfast", "with spacer", "during menstruation" had been dropped: taken
    # with food, levothyroxine works less; a 5-day course "now" is not one each period.
    rows = _medicine_rows("DISCHARGE MEDICATIONS\n- Levothyroxine 100 mcg daily before breakfast - CONTINUE\n"
                          "- Esomeprazole 40 mg BID before breakfast and supper for 8 weeks, then 40 mg daily - NEW\n"
                          "- Ibuprofen 400 mg TID PRN pain, with food - NEW\n", glossary)
    assert rows[0].when.endswith("before breakfast")
    assert "before breakfast and supper" in rows[1].when
    assert "breakfast" not in rows[2].when  # the next step's words are not told apart: none
    assert rows[3].when.count("with food") + rows[3].why.count("with food") == 1


def test_a_medicine_named_as_when_something_is_avoided_takes_nothing_from_it(glossary):
    facts = read_summary("DISCHARGE MEDICATIONS\nOlanzapine - CHANGED from 10 mg to 5 mg PO QHS\n\n"
                         "OTHER INSTRUCTIONS\nNo driving while olanzapine doses are being adjusted and until "
                         "reviewed by the community psychiatrist.\n", glossary)
    [olanzapine] = facts.medications
    assert olanzapine.until == ""
    assert any("No driving" in r.text for r in facts.restrictions)


def test_a_word_to_know_is_named_as_the_handout_writes_it(glossary):
    # "cefdinir" was defined for a handout that says "Cefpodoxime", and "bedside commode"
    # for one that says "raised toilet seat": the patient looks for a word that is not there.
    from desktop_app.core.pipelines.simplify import handout_without_model, words_to_know
    summary = ("DISCHARGE MEDICATIONS\n- Cefpodoxime 200 mg PO BID for 10 days - NEW\n\n"
               "FOLLOW-UP\n- Occupational therapy arranged a raised toilet seat and a shower chair.\n")
    terms = [w["term"] for w in words_to_know(handout_without_model(summary, glossary), glossary)]
    assert "cefpodoxime" in terms and "cefdinir" not in terms
    assert "bedside commode" not in terms


def test_a_letter_s_request_of_the_family_doctor_is_not_turned_to_the_patient(glossary):
    # "We would be grateful if you could repeat her liver tests" had read "... repeat your
    # liver tests": the patient was asked to do what the doctor was asked.
    from desktop_app.core.pipelines.simplify import handout_without_model
    summary = ("Dear Dr Okafor,\n\nShe went home on 03/02/2025. We would be grateful if you could repeat her "
               "kidney function in 1 week. She has a clinic appointment with us on 03/20/2025.\n\nYours sincerely,\n"
               "Dr A. Example\n")
    text = handout_without_model(summary, glossary).main_text()
    assert "Your summary asks your family doctor: We would be grateful if you could repeat her kidney" in text
    assert "repeat your kidney" not in text


def test_a_problem_heading_that_names_no_problem_is_not_a_diagnosis(glossary):
    from desktop_app.core.pipelines.simplify import story_lines
    summary = ("HOSPITAL COURSE\n# Problem: Community-acquired pneumonia\nTreated with antibiotics and improved.\n"
               "# Unexpected finding: A small lung nodule was seen on the scan.\n")
    lines = story_lines(summary, read_summary(summary, glossary), glossary, 6)
    assert "Problem" not in lines and "Unexpected finding" not in lines


def test_a_letter_in_paragraphs_still_tells_what_happened(glossary):
    # A letter with no course or diagnosis heading had no "What happened in hospital".
    from desktop_app.core.pipelines.simplify import story_lines
    summary = ("Dear Dr Ames,\n\nThank you for seeing him. He came to the emergency department on 03/02 with a "
               "swollen, painful left calf. An ultrasound showed a clot in the calf vein. He was started on "
               "apixaban and improved.\n\nYours sincerely,\nDr B. Example\n")
    lines = story_lines(summary, read_summary(summary, glossary), glossary, 6)
    assert lines and lines[0].startswith("He came to the emergency department")
    assert not any(line.startswith("Thank you") for line in lines)


def test_a_medicine_row_keeps_its_clauses_but_none_of_another_medicine_s(glossary):
    summary = ("DISCHARGE MEDICATIONS\n2. Buccal midazolam 10 mg for a seizure of 5 minutes or longer; may "
               "give a second dose after 10 minutes; call 999 (NEW)\n3. Citalopram 20 mg daily - STOPPED "
               "(may have caused the low sodium; do not restart unless the psychiatrist advises)\n\n"
               "INSTRUCTIONS\n- Take rivaroxaban with food; never skip a dose. Do not take aspirin or "
               "naproxen unless a doctor agrees.\n")
    rows = {row.medicine.lower(): row for row in _medicine_rows(summary, glossary)}
    assert "May give a second dose after 10 minutes. Call 999." in rows["buccal midazolam"].why
    assert rows["citalopram"].why.endswith("Do not restart unless the psychiatrist advises.")
    assert "skip" not in rows["aspirin"].why and "skip" not in rows["naproxen"].why
    [ketorolac] = read_summary("DISCHARGE MEDICATIONS\n5. Ketorolac 10 mg PO q6h PRN pain, max 5 days (NEW)\n",
                               glossary).medications
    assert ketorolac.duration == "5 days"


def test_examples_or_other_medicines_in_brackets_are_no_reason(glossary):
    for line, name in (("STOPPED: Bendroflumethiazide 2.5 mg daily. Do not take any water pill of this kind "
                        "(thiazides, including indapamide) again.", "bendroflumethiazide"),
                       ("Ibuprofen - STOPPED. Avoid all anti-inflammatory pain medicines (naproxen, diclofenac, "
                        "high-dose aspirin products).", "ibuprofen")):
        [medicine] = [m for m in read_summary("DISCHARGE MEDICATIONS\n" + line + "\n", glossary).medications
                      if m.name.lower() == name]
        assert medicine.reason == "", line


def test_a_list_line_merged_into_another_row_is_not_listed_again(glossary):
    # "Nifedipine ER 60 mg - NEW" was merged into the plan's nifedipine row and then shown
    # again, as a line no fact covered ("Nifedipine emergency department 60 mg"): a
    # mother could have taken both.
    from desktop_app.core.pipelines.simplify import handout_without_model
    summary = ("Plan: Felodipine extended-release was started at 5 mg daily and increased to 10 mg daily.\n\n"
               "Discharge meds:\n- Felodipine ER 10 mg PO once daily - NEW.\n- Paracetamol 1 g QDS PRN - CONTINUE.\n")
    text = handout_without_model(summary, glossary).main_text()
    assert text.count("Felodipine") == 1 and "emergency" not in text
    from desktop_app.core.pipelines.evidence import Explainer
    assert "ER 10 mg" in Explainer(glossary, "").explain("Felodipine ER 10 mg daily.")
    assert "emergency" in Explainer(glossary, "").explain("Come back to the ER if the pain returns.")


def test_a_medicine_for_a_future_pregnancy_is_quoted_for_the_care_team_to_explain(glossary):
    [aspirin] = [m for m in read_summary("Discharge meds:\n- Labetalol 200 mg BID - NEW\n\nFuture pregnancies:\n"
                                         "In any future pregnancy she should start aspirin 150 mg at night from 12 "
                                         "weeks.\n", glossary).medications if m.name.lower() == "aspirin"]
    assert aspirin.doubt and aspirin.status == ""


def test_an_as_needed_medicine_says_what_for_in_its_timing(glossary):
    """"only when needed for shortness of breath or wheeze" (the reason explained, and not
    again as a bare "SOB or wheeze." after the row); a repeat in minutes follows the
    symptom it repeats for."""
    inhaler, spray, patch = _medicine_rows(
        "DISCHARGE MEDICATIONS\n"
        "- Salbutamol 100 micrograms 2 puffs inhaled every 4 hours PRN SOB or wheeze\n"
        "- Glyceryl trinitrate spray 400 micrograms under the tongue every 5 minutes PRN angina, "
        "up to 3 doses (NEW)\n"
        "- Nicotine patch 21 mg once daily (NEW) for smoking cessation\n", glossary)
    assert inhaler.when.endswith("only when needed for shortness of breath or wheeze")
    assert "SOB" not in inhaler.why and "wheeze" not in inhaler.why
    assert spray.when == "under the tongue only when needed for angina, every 5 minutes; no more than 3 doses"
    assert "only when needed" not in patch.when and "smoking" in patch.why.lower()


def test_a_patients_own_plan_is_on_page_one_and_a_clinicians_plan_is_not(glossary):
    """A heading with "plan" in it had sent its section to the care team's part, so a
    weight plan ("take one extra tablet") was never on page one."""
    from desktop_app.core.pipelines.simplify import for_page_one
    from desktop_app.core.pipelines.summary_facts import SummarySection

    def section(title, kind="instructions"):
        return SummarySection(title, kind, 0, 0, 0)

    assert for_page_one(section("Daily weights and furosemide plan"))
    assert for_page_one(section("Sick-day plan"))
    assert not for_page_one(section("Assessment and plan"))
    assert not for_page_one(section("A/P"))
    assert not for_page_one(section("Plan"))


def test_a_held_medicines_date_a_bracketed_total_and_a_lead_without_a_colon(glossary):
    """A held medicine's date says when it may start again ("do not take until"), never
    "until" as an active row says it; "TWO tablets (10mg)" of 5 mg tablets is 10 mg in all,
    not "2 tablets of 10 mg"; "Call 911 right away if" over its list leads its signs."""
    from desktop_app.core.pipelines.simplify import handout_without_model

    held, steroid = _medicine_rows(
        "DISCHARGE MEDICATIONS\n"
        "- Naproxen 500 mg twice daily - HOLD until 24/10/2025\n"
        "- Prednisolone 5mg tablets - TWO tablets (10mg) each morning for 5 days\n\n"
        "Changes to medication\n"
        "- Prednisolone increased from 5mg to 10mg each morning for 5 days.\n", glossary)
    assert held.change == "ON HOLD" and held.until.startswith("do not take until")
    assert steroid.how_much == "2 tablets (10 mg in all)"  # its dose read as the 10 mg
    summary = ("Discharge medications\n- Apixaban 2.5 mg twice daily\n\n"
               "When to call your surgeon\nCall the office for:\n- Fever over 101.5 F\n\n"
               "Call 911 right away if\n- Sudden shortness of breath\n- You cough up blood\n")
    text = handout_without_model(summary, glossary).main_text()
    assert "- Call 911 right away if:\n  - Sudden shortness of breath." in text


def test_a_medicines_sub_lines_and_later_steps_stay_with_its_row(glossary):
    """A medicine's own sub-lines (a loading dose and the dose after it) had shown at the
    end of "Your medicines" with no medicine named; a taper's later steps had come after
    another medicine named between them, each repeating the first step's reason."""
    from desktop_app.core.pipelines.simplify import handout_without_model

    summary = ("Discharge medicines\n"
               "1. rivaroxaban 15 mg tablet - NEW - for the clot in the leg\n"
               "   - take 1 tablet twice a day with food through 06/20/2026\n"
               "   - then 20 mg once a day from 06/21/2026\n"
               "2. omeprazole 20 mg daily - unchanged\n\n"
               "Course: We started naproxen for the pericarditis: 500 mg twice a day for 1 week, "
               "and colchicine 0.5 mg twice a day for 3 months. After the first week, then 250 mg "
               "twice a day for 1 week.\n")
    handout = handout_without_model(summary, glossary)
    text = handout.main_text()
    rivaroxaban = [line for line in text.split("\n") if "rivaroxaban" in line.lower()]
    assert "06/20/2026" in rivaroxaban[0] and "from 06/21/2026" in " ".join(rivaroxaban)
    assert text.count("06/21/2026") == 1 and "- Then 20 mg" not in text  # no unnamed line
    letter = ("Dear Dr Lam,\n\nWe started ibuprofen and colchicine on March 8. He goes home on ibuprofen "
              "for the pericarditis, always taken with food: 600 mg three times a day for 2 weeks, then "
              "400 mg three times a day for 1 week, and then he stops. He will also take colchicine 0.6 mg "
              "twice a day for 3 months.\n\nYours sincerely,\nDr Okoro\n")
    first, later, _colchicine = handout_without_model(letter, glossary).medicines
    assert (first.medicine, later.medicine, later.how_much) == ("ibuprofen", "ibuprofen", "then 400 mg")
    assert "pericarditis" in first.why.lower() and later.why == ""


def test_a_doses_later_steps_come_right_after_its_first(glossary):
    from desktop_app.core.pipelines.simplify import in_row_order
    from desktop_app.core.pipelines.summary_facts import Medication

    first = Medication(name="Ibuprofen", start=10, end=20, step=1)
    other = Medication(name="Colchicine", start=25, end=30)
    later = Medication(name="Ibuprofen", start=40, end=50, step=2)
    assert in_row_order([first, other, later]) == [first, later, other]


def test_a_way_a_dose_is_not_taken_is_never_said_as_how_to_take_it(glossary):
    """"Take with orange juice, not with milk, tea or coffee" had read "with orange juice,
    with milk": the "not" was lost."""
    iron, = _medicine_rows("DISCHARGE MEDICATIONS\n- Ferrous fumarate 210 mg once daily. Take with orange "
                           "juice, not with milk, tea or coffee.\n", glossary)
    # what it is not taken with is said too, with its "not"
    assert iron.when.endswith("with orange juice, not with milk, tea or coffee")
    assert not re.search(r"(?<!not )with milk", iron.when)


def test_a_table_rows_comments_are_in_its_row_and_a_schedule_is_said_once(glossary):
    """A medicines table's comments column ("Do not stop suddenly", the injection day and
    what to do with a fever) had been left off the rows; a dose schedule under its own
    heading was listed twice, as steps of the medicine and again as unnamed lines."""
    from desktop_app.core.pipelines.simplify import handout_without_model

    summary = ("MEDICATIONS ON DISCHARGE\n"
               "| Medicine | Dose | When | Status | Indication | Comments |\n"
               "|---|---|---|---|---|---|\n"
               "| Methylprednisolone | 16 mg (reducing - see schedule below) | mane | NEW | Vasculitis |"
               " Do not stop suddenly |\n"
               "| Etanercept pen | 50 mg | once weekly, Mondays | NEW | Vasculitis |"
               " Skip the dose and phone the clinic if you have a fever |\n"
               "| Furosemide | 40 mg | mane | NEW | Swelling | Weigh yourself daily |\n\n"
               "METHYLPREDNISOLONE REDUCING SCHEDULE\n"
               "- 16 mg each morning until 10/06/2026\n"
               "- then 8 mg each morning until 24/06/2026\n\n"
               "FOLLOW UP\n- Clinic on 01/07/2026.\n")
    handout = handout_without_model(summary, glossary)
    rows = {}
    for row in handout.medicines:
        rows.setdefault(row.medicine.lower(), row)  # a medicine's first row
    assert "Do not stop suddenly" in rows["methylprednisolone"].why
    assert "Skip the dose and phone the clinic if you have a fever" in rows["etanercept"].why
    text = handout.main_text()
    assert text.count("24/06/2026") == 1 and "- 16 mg each morning" not in text


def test_where_to_go_leads_its_signs_and_a_check_is_no_way_of_taking_a_dose(glossary):
    """"When to call 911" and a run-on "REPORT TO EMERGENCY IMMEDIATELY IF:" lead their
    signs; "Check sugar before breakfast and before supper" under an insulin line had
    become its injection times."""
    from desktop_app.core.pipelines.simplify import handout_without_model

    summary = ("Medicines\n- Isophane insulin 12 units SC at night - NEW\n"
               "      Check sugar before breakfast and before supper and write it down.\n\n"
               "When to call 911\n- She is struggling to breathe\n- Her lips look blue\n\n"
               "FOLLOW UP:,Clinic on 18/09/2025.,REPORT TO EMERGENCY IMMEDIATELY IF:,Bleeding from gums, "
               "black stools, fainting.,DICTATED BY: Dr. A. Rao\n")
    handout = handout_without_model(summary, glossary)
    insulin, = handout.medicines
    assert "before breakfast" not in insulin.when and "Check sugar before breakfast" in insulin.why
    text = handout.main_text()
    assert "- When to call 911:\n  - " in text and "struggling to breathe" in text
    assert "- Report to emergency immediately if:\n  - Bleeding from gums" in text


def test_a_held_medicines_row_says_what_its_restart_depends_on(glossary):
    """"HOLD till 17/05/2025, restart on 17/05/2025 if urine is clear": the row had said
    only the date, so a patient would restart whatever the urine."""
    aspirin, metformin = _medicine_rows(
        "DISCHARGE MEDICATIONS\n"
        "- Aspirin 75 mg daily - HOLD till 17/05/2025, restart on 17/05/2025 if urine is clear\n"
        "- Metformin 1g twice a day - WITHHELD, restart on 24/03/2025 if U&Es are satisfactory\n", glossary)
    assert aspirin.until.endswith("only if urine is clear")
    assert metformin.until.endswith("only if U&Es are satisfactory")


def test_a_restart_condition_said_in_another_sentence_reaches_the_row(glossary):
    """A letter's "not to take it until Thursday 10/23/2025, and only if the CBC ... shows
    her hemoglobin holding at 8.5 or higher", a sentence after the held medicine's own."""
    from desktop_app.core.pipelines.simplify import handout_without_model

    summary = ("Medications at discharge\n- Rivaroxaban 20 mg daily - HOLD\n- Omeprazole 40 mg daily\n\n"
               "Plan\nShe is not to restart rivaroxaban until 11/12/2025, and only if the blood count on "
               "11/10 shows her hemoglobin holding at 9.5 or higher.\n")
    row = next(r for r in handout_without_model(summary, glossary).medicines if r.medicine.lower() == "rivaroxaban")
    assert row.change == "ON HOLD" and "only if" in row.until and "9.5 or higher" in row.until


def test_a_medicine_line_wrapped_at_the_page_s_width_gives_whole_notes(glossary):
    """A note that went on to the next line was cut in two ("Dr. Okafor will decide." and
    "Whether to restart it."), one at the end of the medicine's own sentence was half a
    sentence ("Check on 28/03/2025."), and how a dose is taken on the next line was not
    read; a note that only ends with "restart" is no status word."""
    summary = ("DISCHARGE MEDICATIONS\n"
               "1. Candesartan 8 mg daily - WITHHELD, do not restart before your BP\n"
               "   check on 28/03/2025. Dr. Okafor from the renal team will decide\n"
               "   whether to restart it.\n"
               "2. Naproxen 250 mg PO BID PRN joint pain,\n"
               "   with food or milk.\n")
    candesartan, naproxen = _medicine_rows(summary, glossary)
    assert "Do not restart before your blood pressure check on 28/03/2025." in candesartan.why
    assert "Dr. Okafor from the renal team will decide whether to restart it." in candesartan.why
    assert naproxen.when.endswith("only when needed for joint pain, with food or milk")
    assert "With food" not in naproxen.why


def test_a_number_to_ring_under_a_list_of_signs_is_no_sign(glossary):
    from desktop_app.core.pipelines.simplify import handout_without_model

    summary = ("DISCHARGE MEDICATIONS:\n1. Salbutamol inhaler 2 puffs PRN wheeze\n\n"
               "RETURN TO HOSPITAL AT ONCE IF:\n- Breathless when resting\n- Blue lips\n"
               "Emergency department phone (day and night): 0000-111222\n")
    text = handout_without_model(summary, glossary, plain=True).to_text()
    assert "  - Blue lips." in text and "\n- Emergency department phone (day and night): 0000-111222" in text, text


def test_a_note_naming_another_medicine_only_in_a_clause_of_when_stays_with_its_row(glossary):
    """"The nurses will reduce the dose as the prednisolone is reduced": the note is the
    insulin's, though it names prednisolone."""
    insulin, = [row for row in _medicine_rows(
        "DISCHARGE MEDICATIONS\n- Insulin glargine 12 units SC at 08:00 - NEW. The diabetes nurses will "
        "reduce the dose as the prednisolone is reduced - do not change it yourself.\n", glossary)
        if row.medicine.lower().startswith("insulin")]
    assert "reduce the dose as the prednisolone is reduced" in insulin.why, insulin


def test_a_medicine_s_notes_on_its_own_line_or_under_its_number_stay_in_its_row(glossary):
    """"Take with food; all doses before 2 pm." after the dexamethasone's sentence, and
    "Give with food. Do not stop it suddenly." at the column of "2. Prednisolone ...",
    were loose lines at the end of the list, where "it" pointed at the row above them;
    the last step lost "then stop"."""
    from desktop_app.core.pipelines.simplify import handout_tables
    from desktop_app.core.pipelines.trace import Trace

    summary = ("Medications on discharge\n\n"
               "Dexamethasone tablets - ORAL - NEW, for spinal cord compression. Take with food; all\n"
               "doses before 2 pm. Reducing course:\n"
               "   02/12 to 05/12/2025: 8 mg twice a day at 08:00 and 12:00\n"
               "   then 4 mg once a day at 08:00 for 4 days\n"
               "   then 2 mg once a day at 08:00 for 5 days, then STOP\n"
               "Lansoprazole 30 mg capsules - ONE capsule ORAL once daily in the morning - NEW\n\n"
               "MEDICINES AT HOME\n"
               "2. Prednisolone oral liquid 5 mg/mL (steroid) - weaning course:\n"
               "   - 3 mL (15 mg) by mouth twice a day up to and including 07/02/2025\n"
               "   - then 1.5 mL (7.5 mg) once a day in the morning for 5 days, then stop.\n"
               "   Give with food. Do not stop it suddenly.\n"
               "3. Omeprazole oral liquid 2 mg/mL - 5 mL (10 mg) by mouth once a day in the morning.\n")
    facts = read_summary(summary, glossary, "dmy")
    handout = handout_tables(summary, facts, glossary, Trace(
        kind="simplify", method="", variant="", prompt_version="", app_version="", models={}, settings={},
        summary_sha256=""))
    rows = {(row.medicine, row.how_much): row for row in handout.medicines}
    assert not handout.more_from_lists.get("medications"), handout.more_from_lists
    dexamethasone = [row for row in handout.medicines if row.medicine == "Dexamethasone"]
    assert "Take with food. All doses before 2 pm." in dexamethasone[0].why
    assert dexamethasone[-1].until.endswith("for 5 days, then stop")
    assert "Give with food. Do not stop it suddenly." in rows["Prednisolone", "3 mL (15 mg) of 5 mg/mL"].why
    assert rows["Prednisolone", "then 1.5 mL (7.5 mg) of 5 mg/mL"].until.endswith("then stop")


def test_a_medicine_under_a_status_label_keeps_its_line_s_notes(glossary):
    """Under "NEW MEDICATIONS:", "Do not stop taking it unless the liver team tells you to."
    and "Do not skip doses." were dropped from the rows (a pharmacist's read): a status
    read from a label line had meant no notes at all."""
    summary = ("NEW MEDICATIONS:\n"
               "4. Ciprofloxacin 500 mg PO once daily - long term, to prevent another SBP infection.\n"
               "   Do not stop taking it unless the liver team tells you to.\n"
               "5. Apixaban 5 mg PO BID - for atrial fibrillation. Do not skip doses.\n")
    ciprofloxacin, apixaban = _medicine_rows(summary, glossary)
    assert ciprofloxacin.change == "NEW" and "Do not stop taking it unless the liver team tells you to." in ciprofloxacin.why
    assert "Do not skip doses." in apixaban.why


def test_a_correction_scale_under_a_medicine_is_read_row_by_row(glossary):
    """An insulin's correction scale laid out in columns ran into one sentence ("up to 12.0
    mmol/L none 12.1 - 16.0 2 units 16.1 ..."), and "before breakfast, lunch and evening
    meal," cut at the line's end gave the note "Lunch and evening meal, according to ..."."""
    summary = ("DISCHARGE MEDICATIONS\n"
               "5. Insulin aspart (NovoRapid) subcutaneously before breakfast, lunch and evening meal,\n"
               "   according to the correction scale below. NEW.\n"
               "      CBG before the meal       Aspart to give\n"
               "      up to 12.0 mmol/L         none\n"
               "      12.1 - 16.0               2 units\n"
               "      16.1 - 20.0               4 units\n"
               "      over 20.0                 6 units and check ketones; call the GP / out-of-hours\n"
               "   Do not give aspart if she is not going to eat the meal.\n"
               "6. Metformin 500 mg orally twice daily with breakfast and evening meal - NO CHANGE.\n")
    aspart, metformin = _medicine_rows(summary, glossary)
    assert aspart.when.endswith("before breakfast, lunch and evening meal"), aspart
    assert ("According to the correction scale below. Up to 12.0 mmol/L: none. 12.1 - 16.0: 2 units. "
            "16.1 - 20.0: 4 units. Over 20.0: 6 units and check ketones.") in aspart.why, aspart
    assert metformin.when.endswith("with breakfast and evening meal")


def test_record_notes_and_a_number_to_ring_are_no_signs_to_call_for(glossary):
    """Under "Call 999 if:" the handout listed "Summary discussed with patient and daughter
    ... and a copy given.", "Medicines reconciled by ward pharmacist G." and "CONDITION ON
    DISCHARGE: Stable, ..." as signs, and "For queries: Urology ward (24 hrs) 0422-000 0001"
    as one of them."""
    from desktop_app.core.pipelines.simplify import handout_without_model

    summary = ("DISCHARGE MEDICATIONS:\n1. Salbutamol inhaler 2 puffs PRN wheeze\n\n"
               "WHEN TO GET HELP\nCall 999 if:\n- Chest pain or severe breathlessness\n"
               "- For queries: Urology ward (24 hrs) 0422-000 0001.\n\n"
               "Summary discussed with patient and daughter (Bernadette) on 21/02/2025 and a copy given.\n"
               "Medicines reconciled by ward pharmacist G. Ferreira-Lund (MPharm) 21/02/2025.\n\n"
               "CONDITION ON DISCHARGE: Stable, walking with cane, home with daughter.\n\n"
               "RETURN IF:\n- Black stools\n- TB REGISTER NO: PENDING (CLINIC)\n"
               "- Dr A. Wirihana, RMO Oncology, for Dr H. Sorensen 21/08/2025 16:05\n- Improved.\n\n"
               "PENDING AT DISCHARGE: None.\n")
    facts = read_summary(summary, glossary, "dmy")
    assert [w.text for w in facts.warning_signs][-1:] == ["Black stools"]
    assert [w.text for w in facts.warning_signs][:1] == ["Chest pain or severe breathlessness"]
    assert not any(re.search(r"discussed|reconciled|Ferreira|CONDITION", w.text) for w in facts.warning_signs)
    text = handout_without_model(summary, glossary, plain=True).to_text()
    signs = text.split("Call or come back if")[1].split("Words to know")[0]
    assert "\n- For queries: Urology ward (24 hrs) 0422-000 0001." in signs, signs
    assert not re.search(r"discussed|reconciled|Ferreira|CONDITION|REGISTER|Wirihana|Improved", signs), signs
    assert "- None." not in text  # nothing pending is no appointment called "None"


def test_a_stopped_medicine_s_word_to_know_says_what_it_is_not_how_to_take_it(glossary):
    """"STOP: Ibuprofen" above "ibuprofen: ... so take it with food and only as directed"
    (a pharmacist read it as the handout contradicting itself)."""
    from desktop_app.core.pipelines.simplify import handout_without_model, words_to_know

    stopped = ("DISCHARGE MEDICATIONS:\n1. Ibuprofen 400 mg TDS - STOP, kidney injury. Do not restart.\n"
               "2. Amlodipine 5 mg daily - continue\n")
    taken = "DISCHARGE MEDICATIONS:\n1. Ibuprofen 400 mg TDS with food for 5 days - NEW\n"
    meaning = {}
    for name, summary in (("stopped", stopped), ("taken", taken)):
        meaning[name] = {w["term"]: w["definition"] for w in
                         words_to_know(handout_without_model(summary, glossary), glossary)}["ibuprofen"]
    assert meaning["stopped"] == "An NSAID that eases pain, fever and swelling."
    assert meaning["taken"].startswith(meaning["stopped"]) and "take it with food" in meaning["taken"]


def test_a_stopped_medicine_s_row_keeps_do_not_restart_and_its_own_row_s_warning(glossary):
    """"Do not restart" was dropped as a status word, or left inside the line's first
    sentence ("STOPPED, do not restart (raises potassium)"); a stopped medicine read from its
    successor's row ("Replaces ramipril") lost its own row's "Never take both"; "1 hour
    before food" was not how the dose is taken."""
    summary = ("DISCHARGE MEDICATIONS\n"
               "| Medication | Dose | Status | Comments |\n|---|---|---|---|\n"
               "| Sacubitril/valsartan (Entresto) | 24/26 mg twice daily | NEW | Replaces ramipril. |\n\n"
               "STOPPED\n| Medication | Dose | Reason |\n|---|---|---|\n"
               "| Ramipril (Altace) | 10 mg PO once daily | Replaced by Entresto. Never take both (risk of serious "
               "throat swelling). |\n\n"
               "OTHER MEDICINES\n"
               "- Spironolactone 25 mg PO daily - STOPPED, do not restart (raises potassium).\n"
               "- Minocycline 100 mg PO daily - STOPPED because of C. difficile infection. Do not restart; "
               "dermatology to advise on alternatives.\n"
               "- Flucloxacillin 500 mg capsules - TWO capsules orally four times a day, 1 hour before food.\n")
    rows = {row.medicine.lower(): row for row in _medicine_rows(summary, glossary)}
    assert "Never take both (risk of serious throat swelling)." in rows["ramipril"].why, rows["ramipril"]
    assert rows["spironolactone"].why.endswith("Do not restart."), rows["spironolactone"]
    assert "Do not restart. Dermatology to advise on alternatives." in rows["minocycline"].why
    assert rows["flucloxacillin"].when.endswith("four times a day, 1 hour before food")


def test_what_another_line_tells_of_a_medicine_and_when_an_as_needed_dose_is_needed_reach_its_row(glossary):
    """"Do not take the Panadeine Forte left at home. Return it to the pharmacy." under
    "Opioid safety" was in no part of the handout; "if no bowel movement for 2 days" became
    "for 2 days"; "Avoid all other pain relievers except paracetamol" was dropped for naming
    paracetamol."""
    summary = ("Ceased medications\n| Medication | Reason ceased |\n|---|---|\n"
               "| Panadeine Forte (paracetamol/codeine 500/30 mg) 2 tabs QID | replaced by oxyCODONE |\n\n"
               "Opioid safety\nDo not take the Panadeine Forte left at home. Return it to the pharmacy.\n\n"
               "DISCHARGE MEDICATIONS\n"
               "1. Senna syrup 7.5 mg/5 mL, 10 mL ON PRN via PEG for constipation, if no bowel movement for 2 days\n"
               "2. Mefenamic acid 500 mg cap, STOP, risk of bleeding. Avoid all other pain relievers except paracetamol.\n")
    rows = {row.medicine.lower(): row for row in _medicine_rows(summary, glossary)}
    assert "Do not take the Panadeine Forte left at home. Return it to the pharmacy." in rows["panadeine forte"].why
    senna = rows["senna"]
    assert "for 2 days" not in senna.until and "if no bowel movement for 2 days" in senna.why + senna.when, senna
    assert "Avoid all other pain relievers except paracetamol." in rows["mefenamic acid"].why


def test_a_correction_on_its_own_line_and_a_first_weeks_step_in_a_cell_reach_the_rows(glossary):
    """"+ correction: add 2 units if pre-meal BM 12-16 ..." under "4 units with each main
    meal" ran into the medicine's own sentence and was lost (and "with each main meal" was
    no timing); "For the first 2 weeks take 3.125 mg twice daily; then 6.25 mg ..." in a
    table's comments cell gave the first step no length."""
    summary = ("DISCHARGE MEDICATIONS\n"
               "NOVORAPID FlexPen  SC\n"
               "    4 units with each main meal [NEW]\n"
               "    + correction: add 2 units if pre-meal BM 12-16, add 4 units if BM over 16\n\n"
               "| Medication | Dose | Qty | Route | Frequency | Status | Notes |\n|---|---|---|---|---|---|---|\n"
               "| Carvedilol | 3.125 mg | 1 tablet | PO | twice daily | NEW | For heart failure. Take with food. "
               "For the first 2 weeks take 3.125 mg twice daily; then 6.25 mg twice daily if pulse is above 60. |\n")
    novorapid, carvedilol, *_later = _medicine_rows(summary, glossary)
    assert novorapid.when.endswith("with meals"), novorapid
    assert "Correction: add 2 units if pre-meal BM 12-16, add 4 units if BM over 16." in novorapid.why, novorapid
    assert carvedilol.until == "for 2 weeks", carvedilol


def test_a_restart_the_doctor_decides_is_said_as_the_doctor_s(glossary):
    """"GP to restart only if BP is above 150/90" read "restart only if blood pressure is above
    150/90", as if the patient were to restart it from a home reading; a condition of the
    patient's own ("restart on 17/05/2025 if urine is clear") stays as it was."""
    summary = ("DISCHARGE MEDICATIONS\n"
               "WITHHELD - do not take for now:\n"
               " - Amlodipine 10 mg once daily - withheld (postural hypotension). GP to restart only if\n"
               "   BP is above 150/90 at the 2-week review.\n"
               " - Ecosprin 75 mg OD - WITHHOLD, restart on 17/05/2025 if urine is clear.\n")
    amlodipine, ecosprin = _medicine_rows(summary, glossary)
    assert amlodipine.until.startswith("your doctor will restart it only if blood pressure is above 150/90"), amlodipine
    assert ecosprin.until.endswith(", only if urine is clear") and "doctor" not in ecosprin.until, ecosprin


def test_a_pharmacist_s_third_read_brand_with_generic_caplets_brackets_and_a_patch_taper(glossary):
    """From a third read of 14 held-out handouts: "Seretide MDI 125/25 mcg (fluticasone
    propionate/salmeterol) 2 puffs BD" was two rows, NEW and NO CHANGE (a double dose);
    "262 mg caplets - 2 caplets po QID" lost its count; "(do not stop without asking
    cardiologist)" after a clopidogrel's course and "(remove the old one)" were dropped;
    "THEN one 14 mg patch" was no step; "18 UNITS S/C ON" had no time."""
    summary = ("DISCHARGE MEDICATIONS\n"
               "- START preventer: Seretide MDI 125/25 mcg (fluticasone propionate/salmeterol) 2 puffs BD via "
               "spacer. Rinse and spit after.\n"
               "- bismuth subsalicylate (Pepto-Bismol) 262 mg caplets - 2 caplets po QID\n"
               "- Tab. Clopilet 75 mg 0-1-0 after food x 1 year (do not stop without asking cardiologist)\n"
               "- INJ INSULIN GLARGINE (LANTUS SOLOSTAR) 18 UNITS S/C ON - CONTINUE, NO CHANGE\n"
               "- nicotine 21 mg patch\n"
               "    Apply 1 patch to the skin every morning (remove the old one) for 6 weeks, THEN one 14 mg\n"
               "    patch every morning for 2 weeks, THEN one 7 mg patch every morning for 2 weeks, then stop.\n")
    rows = _medicine_rows(summary, glossary)
    assert [row.medicine for row in rows if "Seretide" in row.medicine or "fluticasone" in row.medicine] == ["Seretide"]
    seretide, bismuth, clopilet, glargine, *nicotine = rows
    assert seretide.when.endswith("via spacer") and "Rinse and spit after." in seretide.why
    assert bismuth.how_much == "2 tablets of 262 mg"
    assert "Do not stop without asking cardiologist." in clopilet.why
    assert glargine.when.endswith("at bedtime"), glargine
    assert [row.how_much for row in nicotine] == ["1 patch of 21 mg", "then 14 mg", "then 7 mg"]
    assert "Remove the old one." in nicotine[0].why and nicotine[-1].until.endswith("then stop")


def test_a_later_step_with_its_own_reason_says_it(glossary):
    """"then 1 DS tab PO daily for PJP prophylaxis" after a treatment dose: the prevention
    dose's row says what it is for, and takes the first step's name where a mention by
    another name ("TMP-SMX") gave the first step its name."""
    from desktop_app.core.pipelines.simplify import handout_without_model

    rows = handout_without_model("A/P: improving on TMP-SMX + steroids.\n\n#PJP pneumonia\n"
                                 "  - Bactrim DS (800/160 mg) 2 tabs PO TID through 6/17/2025, then 1 DS tab PO daily\n"
                                 "    for PJP prophylaxis until ID clinic says to stop\n", glossary).medicines
    first, later = [row for row in rows if row.how_much.endswith("800/160 mg")]
    assert first.medicine == later.medicine
    assert "prophylaxis" not in first.why.lower() and "prevention" not in first.why.lower(), first
    assert "prevention" in later.why.lower() or "prophylaxis" in later.why.lower(), later


def test_a_row_names_the_brand_on_the_box_and_a_stopped_medicine_s_own_reason(glossary):
    """"TAB ETORICOXIB (ARCOXIA) ... STOP" read "STOP: Etoricoxib" though the GP had given it
    as Arcoxia; "Nurofen: stop - anti-inflammatories can trigger asthma in some people. She
    will use" over "Panadol Osteo as before for her knee." read "STOP: Nurofen. Your knee.
    You will use."; a reason in brackets is no brand."""
    rows = {row.medicine: row for row in _medicine_rows(
        "DISCHARGE MEDICATIONS:\n"
        "9. TAB ETORICOXIB (ARCOXIA) 90 MG PO OD PRN - STOP. CAUSED KIDNEY INJURY. DO NOT TAKE AGAIN.\n\n"
        "Changes\n"
        "- Nurofen: stop - anti-inflammatories can trigger asthma in some people. She will use\n"
        "  Panadol Osteo as before for her knee.\n"
        "- Prednisolone oral liquid 5 mg/mL (steroid) 3 mL daily for 5 days - NEW\n", glossary)}
    assert rows["Etoricoxib (Arcoxia)"].change == "STOP"
    nurofen = rows["Nurofen"]
    assert nurofen.why.startswith("Anti-inflammatories can trigger asthma in some people."), nurofen
    assert "knee" not in nurofen.why and "You will use" not in nurofen.why, nurofen
    assert "Prednisolone" in rows  # "(steroid)" is what it is for, not a brand



def test_a_sentence_is_read_from_its_first_letter():
    """Where a mention's sentence starts (read for who decides a restart): at the summary's
    start it had been its second letter ("P to restart ..." for "GP to restart ...")."""
    from desktop_app.core.pipelines.simplify import _sentence_start

    summary = "GP to restart ramipril if BP is above 140. Please check amlodipine too.\n\nLater."
    assert _sentence_start(summary, summary.index("ramipril")) == 0
    assert _sentence_start(summary, summary.index("amlodipine")) == summary.index("Please")
    assert _sentence_start(summary, summary.index("Later")) == summary.index("Later")
