"""Discharge summaries as hospitals write them (tests/data/layouts, written for these tests):
the facts parser reads every medicine with every field its line gives, in every layout;
a status stays with its own medicine and is never dropped from a quote; "D/C" in a
medicine's line is never "discharge"; names and initials are never medical words; record
and letter matter never reaches the patient; the handout's "Your medicines" holds every
medicine of the facts."""

from __future__ import annotations

import re

import pytest

from desktop_app.core.pipelines.evidence import (EvidenceLine, Explainer, evidence_answer,
                                                 evidence_units)
from desktop_app.core.pipelines.simplify import handout_tables, in_row_order, narrative_pieces
from desktop_app.core.pipelines.summary_facts import read_summary
from desktop_app.core.pipelines.trace import Trace as _Trace
from layout_corpus import CORPUS as CORPUS_DIR, compare_medications, compare_other, load, same_name

CORPUS = load()
IDS = [expected.name for expected in CORPUS]
LAYOUTS = ("caps_colon", "plain_headings", "transcription", "pipe_table", "letter_uk", "soap",
           "prose", "pediatric", "surgical", "long_stay")


def Trace(kind: str) -> _Trace:
    return _Trace(kind=kind, method="", variant="", prompt_version="", app_version="", models={},
                  settings={}, summary_sha256="")


def read(expected, glossary):
    return read_summary(expected.text, glossary, expected.date_order)


def test_the_corpus_has_every_layout_twice_and_a_long_stay():
    assert len(CORPUS) >= 16
    counts = {layout: sum(e.layout == layout for e in CORPUS) for layout in LAYOUTS}
    assert all(counts[layout] >= 2 for layout in LAYOUTS if layout != "long_stay"), counts
    long_stays = [e for e in CORPUS if e.layout == "long_stay"]
    assert long_stays and all(1900 <= len(e.text.split()) <= 2400 for e in long_stays)
    assert all(e.medications for e in CORPUS)


@pytest.mark.parametrize("expected", CORPUS, ids=IDS)
def test_every_medicine_with_every_field(expected, glossary):
    """Every medicine, with every field right, and every follow-up, warning sign and
    restriction found; except exactly the misses its facts file lists as known (so that
    a fix shows as well as a regression)."""
    facts = read(expected, glossary)
    comparison = compare_medications(expected.medications, [m.to_dict() for m in facts.medications])
    problems = ([f"missing {name}" for name in comparison.missing]
                + [f"extra {name}" for name in comparison.extra]
                + comparison.wrong + compare_other(expected, facts.to_dict()))
    known = [k for k in expected.facts.get("known", {}).get("misses", []) if not k.startswith("heading ")]
    unexplained = [p for p in problems if not any(p.startswith(k) for k in known)]
    fixed = [k for k in known if not any(p.startswith(k) for p in problems)]
    assert unexplained == [] and fixed == [], (unexplained, fixed)


def _title(title: str) -> str:
    """A heading without the aside some writers put after it ("Return precautions (reviewed
    with the patient)"): facts files write it either way."""
    return re.sub(r"\s*\([^()]*\)\s*$", "", title).lower()


@pytest.mark.parametrize("expected", CORPUS, ids=IDS)
def test_the_headings_a_reader_sees(expected, glossary):
    facts = read(expected, glossary)
    found = {_title(s.title): {s.kind, s.effective_kind} for s in facts.sections}
    known = {_title(k[len("heading "):].strip("'\"")) for k in expected.facts.get("known", {}).get("misses", [])
             if k.startswith("heading ")}
    for section in expected.facts.get("section", []):
        if section["kind"] in ("other", "header"):
            continue  # a document's title, a record field: not a section a reader relies on
        kinds = found.get(_title(section["title"]))
        read_right = kinds is not None and section["kind"] in kinds
        # a heading the facts file lists as a known miss must still be missed
        assert read_right != (_title(section["title"]) in known), (section, kinds)


@pytest.mark.parametrize("expected", CORPUS, ids=IDS)
def test_your_medicines_holds_every_medicine_of_the_facts(expected, glossary):
    """Completeness is checked against the facts, not the text: a medicine's line being
    somewhere in the handout is not enough."""
    facts = read(expected, glossary)
    handout = handout_tables(expected.text, facts, glossary, Trace(kind="simplify"))
    rows = [row.medicine for row in handout.medicines]
    missing = {k[len("missing "):] for k in expected.facts.get("known", {}).get("misses", [])
               if k.startswith("missing ")}  # the parser's known misses (the test above holds them)
    for medicine in expected.medications:
        if medicine["name"] not in missing:
            assert any(same_name(medicine["name"], row) for row in rows), (medicine["name"], rows)
    statuses = {"new": "NEW", "changed": "CHANGED", "stopped": "STOP", "held": "ON HOLD",
                "resume": "RESTART", "unchanged": "NO CHANGE"}
    for row, medication in zip(handout.medicines, in_row_order(facts.medications)):
        assert row.change == ("ASK" if medication.doubt else statuses.get(medication.status, ""))


@pytest.mark.parametrize("expected", CORPUS, ids=IDS)
def test_record_and_letter_matter_never_reaches_the_patient(expected, glossary):
    facts = read(expected, glossary)
    handout = handout_tables(expected.text, facts, glossary, Trace(kind="simplify"))
    shown = "\n".join([handout.to_text()] + [text for _section, text in
                                             narrative_pieces(expected.text, facts)]
                      + [unit.text for unit in evidence_units(expected.text, facts)])
    for phrase in expected.facts.get("hidden", {}).get("phrases", []):
        assert not re.search(rf"(?<!\w){re.escape(phrase)}(?!\w)", shown, re.IGNORECASE), phrase


# The words that say a status, in the summary's shorthand or in Lumen's own words.
STATUS_WORDS = {
    "stopped": r"stop|discontinu|d/c|cease|no longer|do not (?:take|restart|use|give)|avoid|replac|->|"
               r"switch|not to (?:restart|resume|take|use)|(?:do|must|should) not (?:be )?resume|never resume",
    "held": r"hold|held|on hold|do not (?:take|restart)|withh[oe]ld|pause|suspend|omit",
    "new": r"new|start|commenc|prescri|begin|added|\brx\b|->|replaced (?:with|by)|switch|replaces",
    "changed": r"chang|increas|decreas|reduc|was \d|from .* to|adjust|lower|rais|modif|titrat|->|halv|doubl|"
               r"used to|wean|taper|[↑↓→]",
    "resume": r"resume|restart|recommence|start .* again|start again|go back (?:to|on)|back on",
    "unchanged": r"continu|\bcont\b|cont'?d|no change|unchanged|same|keep (?:taking|giving|using)|"
                 r"(?:as|like) before|carry on|not changed",
}


@pytest.mark.parametrize("expected", CORPUS, ids=IDS)
def test_every_quote_of_a_medication_line_shows_its_status(expected, glossary):
    """The evidence and the answer written from it, for each medication line alone: its
    status is there, in the line's words, a label above it, or Lumen's sentence."""
    facts = read(expected, glossary)
    units = evidence_units(expected.text, facts)
    for medication in facts.medications:
        if not medication.status:
            continue
        unit = next((u for u in units if u.start <= medication.start < u.end), None)
        assert unit is not None, medication.name
        line = EvidenceLine(unit.text, unit.start, unit.end, unit.section, unit.section_kind,
                            1.0, 1.0, 1.0, 0.0)
        for shown in (unit.text, evidence_answer([line], facts, glossary, expected.text)):
            assert re.search(STATUS_WORDS[medication.status], shown, re.IGNORECASE), \
                (medication.name, medication.status, shown)


def test_a_line_naming_a_new_and_a_replaced_medicine_gives_each_its_own_status(glossary):
    summary = ("DISCHARGE MEDICATIONS:\n1. SYMBICORT 160/4.5 MCG 2 PUFFS B.I.D. - NEW (REPLACES "
               "ADVAIR DISKUS, WHICH SHOULD BE STOPPED)\n")
    facts = read_summary(summary, glossary)
    assert [(m.name, m.status) for m in facts.medications] == [("SYMBICORT", "new"),
                                                                ("ADVAIR", "stopped")]
    unit = evidence_units(summary, facts)[0]
    answer = evidence_answer([EvidenceLine(unit.text, unit.start, unit.end, unit.section,
                                           unit.section_kind, 1.0, 1.0, 1.0, 0.0)],
                             facts, glossary, summary)
    assert "Stop taking SYMBICORT" not in answer and "SYMBICORT" in answer
    assert re.search(r"Stop taking ADVAIR", answer) and "Start taking 2 puffs of SYMBICORT" in answer


def test_a_status_the_line_does_not_give_its_medicine_is_quoted_whole(glossary):
    summary = "Discharge medications:\n- Metformin 500 mg twice daily, glipizide 5 mg daily - stop\n"
    facts = read_summary(summary, glossary)
    metformin, glipizide = facts.medications
    assert glipizide.status == "stopped" and not glipizide.doubt
    assert metformin.status == "" and metformin.doubt
    unit = evidence_units(summary, facts)[0]
    answer = evidence_answer([EvidenceLine(unit.text, unit.start, unit.end, unit.section,
                                           unit.section_kind, 1.0, 1.0, 1.0, 0.0)],
                             facts, glossary, summary)
    assert answer.startswith('Your summary says: "Metformin 500 mg twice daily, glipizide')
    assert "Take Metformin" not in answer and "cannot tell for certain" in answer
    row = handout_tables(summary, facts, glossary, Trace(kind="simplify")).medicines[0]
    assert row.change == "ASK" and "glipizide 5 mg daily - stop" in row.why


@pytest.mark.parametrize("line", ["D/C lorazepam (used for withdrawal in hospital only)",
                                  "lorazepam 1 mg - D/C", "Aspirin 81 mg: D/C'd"])
def test_dc_in_a_medicine_line_means_stop(line, glossary):
    facts = read_summary(f"Plan:\n1. {line}\n2. Thiamine 100 mg daily\n", glossary)
    assert facts.medications[0].status == "stopped"
    explained = Explainer(glossary).explain(line)
    assert "discharge" not in explained.lower() and re.search(r"\bstop", explained, re.IGNORECASE)


def test_dc_elsewhere_is_discharge_or_left_as_written(glossary):
    explainer = Explainer(glossary)
    assert explainer.explain("D/C home with wife.").lower().startswith("discharge home")
    assert explainer.explain("Plan D/C tomorrow.") == "Plan discharge tomorrow."
    for undecided in ("Plan D/C when stable.", "Foley D/C in the morning."):
        assert "D/C" in explainer.explain(undecided)  # cannot be told: as written
    facts = read_summary("ADMIT: 04/27/2025   D/C: 05/01/2025\nD/C HOME WITH WIFE\n", glossary)
    assert facts.medications == []


@pytest.mark.parametrize("text, name", [
    ("Surgeon: Dr. K. Vandermeer", "K. Vandermeer"), ("B.K. is a 30-year-old woman.", "B.K."),
    ("Seen by Mr T. Ruiz and Dr P. Okafor.", "T. Ruiz"), ("Re: Mrs J. Hale, DOB 01/02/1950", "J. Hale"),
    ("Septic shock from a K. pneumoniae liver abscess.", "K."),  # a genus's initial
])
def test_names_and_initials_are_never_medical_words(text, name, glossary):
    assert not [m for m in glossary.match(text) if m.text in name], glossary.match(text)
    explained = Explainer(glossary).explain(text)
    assert name in explained and "potassium" not in explained.lower()
    assert "T. Is" not in explained and "B.K. Is" not in explained


def test_a_letter_s_record_lines_and_signature_are_not_content(glossary):
    expected = next(e for e in CORPUS if e.layout == "letter_uk")
    facts = read(expected, glossary)
    kinds = [s.kind for s in facts.sections]
    assert "letter" in kinds and kinds[-1] == "letter"  # the closing and the signature
    assert not any(f.text.lower().startswith("yours") for f in facts.follow_ups)


def test_dates_follow_the_summary_s_own_order(glossary):
    uk = "Follow-up\nClinic on 24/03/2025.\nRenal clinic on 05/04/2025.\n"
    facts = read_summary(uk, glossary)  # the setting says month first; 24/03 says otherwise
    assert facts.date_order == "dmy"
    assert [f.when for f in facts.follow_ups] == ["2025-03-24", "2025-04-05"]
    ambiguous = "Follow-up\nRenal clinic on 05/04/2025.\n"
    assert read_summary(ambiguous, glossary).follow_ups[0].when == "2025-05-04"
    assert read_summary(ambiguous, glossary, "dmy").follow_ups[0].when == "2025-04-05"


def test_facts_command_shows_the_full_table_for_each_layout(profile, capsys):
    from desktop_app.cli import main

    for expected in CORPUS:
        assert main(["facts", str(CORPUS_DIR / f"{expected.name}.txt")]) == 0
        shown = capsys.readouterr().out
        # less the medicines its facts file lists as known misses, plus the known extras
        known = expected.facts.get("known", {}).get("misses", [])
        missing = {k[len("missing "):] for k in known if k.startswith("missing ")}
        extra = sum(k.startswith("extra ") for k in known)
        count = len([m for m in expected.medications if m["name"] not in missing]) + extra
        assert f"Medications ({count})" in shown, expected.name
        for medication in expected.medications:
            if medication["name"] not in missing:  # a combination may be shown by one part
                parts = re.split(r"[\s/]+", medication["name"])
                assert any(part.lower() in shown.lower() for part in parts
                           if len(part) > 3 or part == parts[0]), medication["name"]


@pytest.mark.parametrize("expected", [e for e in CORPUS if e.layout in ("transcription", "pipe_table")],
                         ids=[e.name for e in CORPUS if e.layout in ("transcription", "pipe_table")])
def test_run_ons_and_table_headers_never_reach_the_patient(expected, glossary):
    """A dictated run-on's ",2." and "HEADING:," are line breaks, and a table's header row
    names its columns: neither is ever a sentence of an answer or a handout."""
    facts = read(expected, glossary)
    handout = handout_tables(expected.text, facts, glossary, Trace(kind="simplify"))
    shown = ([unit.text for unit in evidence_units(expected.text, facts)]
             + [text for _section, text in narrative_pieces(expected.text, facts)]
             + handout.to_text().splitlines())
    headers = [line for line in expected.text.splitlines()
               if line.count("|") >= 2 and not re.search(r"\d", line) and "---" not in line]
    for text in shown:
        assert not re.search(r",\s*\d{1,2}\.\s|:\s*,", text), text
        for header in headers:
            cells = [c.strip() for c in header.strip().strip("|").split("|") if c.strip()]
            assert ", ".join(cells) not in text, text


def test_a_list_s_own_notes_reach_the_handout_whole_and_its_preamble_does_not(glossary):
    # (session 45: a note wrapped at a fixed width came out as a bullet broken in two)
    summary = ("DISCHARGE MEDICATIONS:\nThe list below is exactly what prints on the After Visit Summary.\n\n"
               "Your medication list has changed. Please read the whole list. Bring it and all of your pill\n"
               "bottles to every visit.\n\n"
               "1. Furosemide 40 mg by mouth daily - NEW\n")
    facts = read_summary(summary, glossary)
    handout = handout_tables(summary, facts, glossary, Trace(kind="simplify"))
    assert handout.more_from_lists["medications"] == [
        "Your medication list has changed. Please read the whole list. Bring it and all of your pill "
        "bottles to every visit."]
