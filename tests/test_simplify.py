"""Simplify a whole summary into a handout; reading summaries from files; the commands."""

import dataclasses
import json

import pytest

from desktop_app.core.config import Settings
from desktop_app.core.documents import read_document
from desktop_app.core.errors import LumenError
from desktop_app.core.glossary.glossary import load_glossary
from desktop_app.core.pipelines.calibration import demo_benchmark, load_items
from desktop_app.core.pipelines.grounding import missing_facts
from desktop_app.core.pipelines.simplify import SimplifyPipeline, plain_title, split_sections
from desktop_app.export import html_to_pdf, write_handout
from helpers import TEST_PASSPHRASE, run_lumen

ITEMS = load_items(demo_benchmark(), "")
SUMMARY = next(i for i in ITEMS if i["summary_id"] == "demo-08")["summary"]
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


@pytest.fixture(scope="module")
def glossary():
    return load_glossary(None)


def settings(**changes) -> Settings:
    return dataclasses.replace(Settings(context_size=2048, section_tokens=120, feedback_tokens=32),
                               **changes)


def test_sections_are_found_with_their_headings():
    sections = split_sections(SUMMARY)
    titles = [s.title for s in sections]
    assert "Hospital Course" in titles and "Discharge Medications" in titles
    assert any(t.lower().startswith("follow") for t in titles)
    meds = next(s for s in sections if s.title == "Discharge Medications")
    assert meds.text.startswith("1.") or "mg" in meds.text
    assert plain_title("Discharge Medications") == "Your medicines"


def test_handout_keeps_every_medicine_dose_and_date(runtime, glossary, tmp_path):
    events = []
    handout = SimplifyPipeline(runtime, glossary, settings(simplification_attempts=2), tmp_path).run(
        SHORT, on_event=lambda kind, data: events.append(kind))
    by_title = {s.title: s for s in handout.sections}
    assert by_title["Admission Date"].text == "02/03/2025" and not by_title["Admission Date"].rewritten
    for section in handout.sections:
        if section.rewritten:
            assert section.fkgl_before is not None and section.plain_title
            kept = section.text + "\n" + "\n".join(section.kept_lines)
            # Nothing lost: each fact is in the rewrite or copied word for word, and flagged.
            assert missing_facts(section.original, kept, glossary) == []
            assert bool(section.kept_lines) == bool(section.missing)
    assert "section" in events
    text, page = handout.to_text(), handout.to_html()
    assert handout.notice in text and "Your medicines" in text
    assert "<h2>Your medicines</h2>" in page
    trace = handout.trace
    assert trace.kind == "simplify" and trace.prompt_version.startswith("simplify-")
    assert all(a.stage == "section" for a in trace.attempts)
    assert {c.purpose for c in trace.calls()} <= {"rewrite", "verify"}
    assert len(trace.sections) == len(handout.sections)


def test_missing_facts_drive_the_retry_feedback(runtime, glossary, tmp_path):
    handout = SimplifyPipeline(runtime, glossary, settings(simplification_attempts=2,
                                                          readability_limit=1000.0),
                               tmp_path).run(SHORT, use_verifier=False)
    for attempt in handout.trace.attempts:
        if attempt.missing and attempt.number == 1:
            assert attempt.feedback.startswith("You left out:")
            assert all(fact in attempt.feedback for fact in attempt.missing[:3])


def test_handout_files(runtime, glossary, tmp_path):
    handout = SimplifyPipeline(runtime, glossary, settings(simplification_attempts=1), tmp_path).run(SHORT)
    for name in ("handout.txt", "handout.html", "handout.pdf"):
        write_handout(handout, tmp_path / name)
    assert (tmp_path / "handout.pdf").read_bytes().startswith(b"%PDF")
    assert read_document(tmp_path / "handout.pdf").count("Your medicines") >= 1
    with pytest.raises(LumenError, match="cannot write a handout"):
        write_handout(handout, tmp_path / "handout.docx")


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
    out = tmp_path / "handout.html"
    simplified = run_lumen("simplify", str(summary), "--out", str(out), env=env)
    assert simplified.returncode == 0, simplified.stderr
    assert "Your medicines" in out.read_text() and "Handout written" in simplified.stderr
    history = run_lumen("history", "--json", env=env)
    runs = json.loads(history.stdout)
    assert [r["kind"] for r in runs].count("ask") == 2 and [r["kind"] for r in runs].count("simplify") == 1
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
