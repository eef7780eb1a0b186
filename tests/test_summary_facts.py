"""Facts of a discharge summary, read without a model, checked field by field on
summaries written for these tests in several layouts (tests/data/summaries): capital
headings, numbered problems, a medication table after a one-line record field, free
narrative with no headings, and a 2,000-word stay."""

from pathlib import Path

import pytest

from desktop_app.core.pipelines.grounding import missing_facts, unsupported_facts
from desktop_app.core.pipelines.summary_facts import how_taken, patient_text, read_summary, section_items, split_summary
from desktop_app.core.pipelines.vocabulary import DATE, date_value, same_date, vocabulary

SUMMARIES = Path(__file__).parent / "data" / "summaries"
MEDICATION_FIELDS = ("dose", "route", "frequency", "as_needed", "duration", "until", "status",
                     "changed_from", "changed_to", "reason")


def facts_of(name: str, glossary):
    text = (SUMMARIES / f"{name}.txt").read_text(encoding="utf-8")
    return text, read_summary(text, glossary)


def check_medications(facts, expected: dict[str, dict]):
    assert [m.name for m in facts.medications] == list(expected)
    for name, fields in expected.items():
        medication = facts.medication(name)
        got = {key: getattr(medication, key) for key in MEDICATION_FIELDS}
        want = {key: fields.get(key, False if key == "as_needed" else "") for key in MEDICATION_FIELDS}
        assert got == want, name


def check_offsets(text: str, facts):
    """Every fact points at the text it was read from."""
    for medication in facts.medications:
        assert medication.name.lower() in text[medication.start:medication.end].lower()
    for item in [*facts.follow_ups, *facts.warning_signs, *facts.restrictions]:
        assert " ".join(text[item.start:item.end].split()).endswith(item.text[-20:])


def test_capital_headings(glossary):
    text, facts = facts_of("caps_headings", glossary)
    kinds = [(s.title, s.kind) for s in facts.sections]
    assert ("DISCHARGE MEDICATIONS", "medications") in kinds
    assert ("HOSPITAL COURSE", "hospital_course") in kinds
    assert ("FOLLOW-UP", "follow_up") in kinds and ("SERVICE", "header") in kinds
    check_medications(facts, {
        "Aspirin": {"dose": "81 mg", "route": "by mouth", "frequency": "1/day", "status": "unchanged"},
        "Ticagrelor": {"dose": "90 mg", "route": "by mouth", "frequency": "2/day",
                       "duration": "12 months", "status": "new", "reason": "keeps the stent open"},
        "Atorvastatin": {"dose": "80 mg", "route": "by mouth", "frequency": "bedtime",
                         "status": "changed", "changed_from": "20 mg", "changed_to": "80 mg"},
        "Metoprolol tartrate": {"dose": "25 mg", "route": "by mouth", "frequency": "2/day",
                                "status": "new"},
        "Nitroglycerin": {"dose": "0.4 mg", "route": "under the tongue", "frequency": "every 5 minutes",
                          "as_needed": True, "status": "new", "reason": "chest pain"},
        "Amlodipine": {"dose": "5 mg", "route": "by mouth", "frequency": "1/day", "status": "stopped"},
    })
    assert [(f.who, f.when, f.test) for f in facts.follow_ups] == [
        ("Cardiology clinic, Dr. ___", "in 1 week", ""),
        ("Cardiac rehabilitation", "", ""),
        ("Primary care", "--03-20", "blood test")]
    assert [w.signs for w in facts.warning_signs] == [
        "chest pain that does not go away 5 minutes after one nitroglycerin",
        "the wrist becomes swollen, numb or cold"]
    assert [r.kind for r in facts.restrictions] == ["activity", "activity", "bathing", "diet"]
    check_offsets(text, facts)


def test_numbered_problems_and_status_prefixes(glossary):
    text, facts = facts_of("numbered_problems", glossary)
    problems = [s for s in facts.sections if s.kind == "problem"]
    assert [p.title for p in problems] == ["Community-acquired pneumonia", "Acute kidney injury",
                                           "Atrial fibrillation"]
    assert all(p.parent == "hospital_course" for p in problems)
    assert problems[1].text(text).startswith("Creatinine rose from 0.9 to 1.7 mg/dL")
    check_medications(facts, {
        "Amoxicillin-clavulanate": {"dose": "875 mg", "route": "by mouth", "frequency": "2/day",
                                    "duration": "3 days", "status": "new", "reason": "pneumonia"},
        "Warfarin": {"dose": "2.5 mg", "route": "by mouth", "frequency": "1/day", "status": "changed",
                     "changed_from": "5 mg daily", "changed_to": "2.5 mg", "reason": "INR was high"},
        "Furosemide": {"dose": "40 mg", "route": "by mouth", "frequency": "1/day", "until": "--06-09",
                       "status": "held", "reason": "kidney injury"},
        "Naproxen": {"dose": "500 mg", "route": "by mouth", "frequency": "2/day", "status": "stopped"},
        "Tiotropium": {"dose": "18 micrograms", "route": "inhaled", "frequency": "1/day"},
        "Albuterol": {"dose": "2 puffs", "route": "inhaled", "frequency": "every 4 hours",
                      "as_needed": True, "reason": "wheezing"},
    })
    # In-hospital medicines of the course (IV ceftriaxone) are not discharge medications.
    assert facts.medication("ceftriaxone") is None
    assert [(f.who, f.when, f.test) for f in facts.follow_ups] == [
        ("anticoagulation clinic", "--06-09", "INR"), ("primary care", "in 1-2 weeks", "")]
    assert [w.signs for w in facts.warning_signs] == [
        "trouble breathing, a fever over 38.5 C, or coughing up blood"]
    check_offsets(text, facts)


def test_a_record_field_does_not_take_the_text_after_it(glossary):
    text, facts = facts_of("medication_table", glossary)
    attending = next(s for s in facts.sections if s.title == "Attending")
    assert attending.kind == "header" and attending.text(text) == "Cardiology"
    after = facts.sections[facts.sections.index(attending) + 1]
    assert after.title == "" and after.text(text).startswith("The patient is a 68-year-old man")
    check_medications(facts, {
        "Furosemide": {"dose": "40 mg", "frequency": "2/day", "status": "changed",
                       "changed_from": "20 mg twice daily", "changed_to": "40 mg"},
        "Spironolactone": {"dose": "25 mg", "frequency": "1/day", "status": "new"},
        "Empagliflozin": {"dose": "10 mg", "frequency": "1/day", "status": "new"},
        "Sacubitril-valsartan": {"dose": "24/26 mg", "frequency": "2/day", "status": "unchanged"},
        "Potassium chloride": {"dose": "20 mEq", "frequency": "1/day", "status": "stopped"},
    })
    assert [(f.who, f.when, f.test) for f in facts.follow_ups] == [
        ("Heart failure clinic", "2024-11-25", "blood test")]
    assert [r.kind for r in facts.restrictions] == ["fluids"]
    assert len(facts.warning_signs) == 1 and "1 kg in a day" in facts.warning_signs[0].signs
    check_offsets(text, facts)


def test_free_narrative_without_headings(glossary):
    text, facts = facts_of("free_narrative", glossary)
    assert [s.kind for s in facts.sections] == ["other"]
    check_medications(facts, {
        "acetaminophen": {"dose": "1000 mg", "route": "by mouth", "frequency": "3/day",
                          "as_needed": True, "reason": "pain"},
        # "only if the pain is severe": only when needed
        "oxycodone": {"dose": "5 mg", "route": "by mouth", "frequency": "4/day", "as_needed": True,
                      "duration": "3 days"},
        "ibuprofen": {"status": "stopped", "until": "her surgeon says it is safe"},
        "omeprazole": {"dose": "20 mg", "frequency": "1/day", "status": "unchanged"},
    })
    assert [(f.who, f.when) for f in facts.follow_ups] == [("surgical clinic", "in 2 weeks")]
    assert [r.kind for r in facts.restrictions] == ["bathing", "activity"]
    assert "yellow skin or eyes" in facts.warning_signs[0].signs
    check_offsets(text, facts)


def test_a_two_thousand_word_stay(glossary):
    text, facts = facts_of("long_stay", glossary)
    assert 1900 <= len(text.split()) <= 2400
    problems = [s.title for s in facts.sections if s.kind == "problem"]
    assert problems[0] == "Sepsis due to E. coli bacteremia" and len(problems) >= 5
    check_medications(facts, {
        "Ciprofloxacin": {"dose": "500 mg", "route": "by mouth", "frequency": "2/day",
                          "duration": "5 days", "status": "new", "reason": "E. coli bacteremia"},
        "Apixaban": {"dose": "5 mg", "route": "by mouth", "frequency": "2/day", "status": "new",
                     "reason": "atrial fibrillation"},
        "Metoprolol succinate": {"dose": "50 mg", "route": "by mouth", "frequency": "1/day",
                                 "status": "new"},
        "Levothyroxine": {"dose": "75 micrograms", "route": "by mouth", "frequency": "1/day",
                          "status": "unchanged"},
        "Lisinopril": {"dose": "20 mg", "route": "by mouth", "frequency": "1/day", "until": "--03-03",
                       "status": "held", "reason": "kidney injury"},
        "Metformin": {"dose": "1000 mg", "route": "by mouth", "frequency": "2/day", "until": "--03-03",
                      "status": "held"},
        "Glipizide": {"dose": "5 mg", "route": "by mouth", "frequency": "1/day", "status": "changed",
                      "changed_from": "10 mg", "changed_to": "5 mg", "reason": "low blood sugars"},
        "Ibuprofen": {"dose": "400 mg", "route": "by mouth", "frequency": "3/day", "status": "stopped",
                      "reason": "kidney injury"},
        "Acetaminophen": {"dose": "650 mg", "route": "by mouth", "frequency": "4/day",
                          "as_needed": True, "reason": "pain"},
    })
    assert [(f.when, f.test) for f in facts.follow_ups] == [
        ("--03-03", "blood test"), ("in 2 weeks", ""), ("in 1 week", "urine culture")]
    assert "primary care" in facts.follow_ups[0].who and "Cardiology" in facts.follow_ups[1].who
    assert len(facts.warning_signs) == 4
    assert {r.kind for r in facts.restrictions} >= {"activity", "fluids", "diet", "bathing"}
    check_offsets(text, facts)


def test_sub_headings_of_a_medication_list_give_their_status():
    facts = read_summary("Discharge Medications:\nNew medicines:\n- Apixaban 5 mg twice daily\n"
                         "Medicines to stop:\n- Aspirin 81 mg daily\nKeep taking:\n"
                         "- Levothyroxine 50 mcg daily\n")
    assert [(m.name, m.status) for m in facts.medications] == [
        ("Apixaban", "new"), ("Aspirin", "stopped"), ("Levothyroxine", "unchanged")]


def test_a_problem_heading_may_hold_a_number_and_a_numbered_medicine_is_no_heading():
    text = ("Hospital Course:\n# Heart failure: diuresed with IV furosemide.\n"
            "# Hyperkalemia / AKI on CKD 3a: K 5.3 mEq/L on admission. Spironolactone held.\n"
            "# Type 2 DM: A1c 7.2%.\n\nDischarge Medications:\n"
            "1. Amoxicillin 400 mg/5 mL suspension: give 4.4 mL twice daily\n")
    facts = read_summary(text)
    problems = [s.title for s in facts.sections if s.kind == "problem"]
    assert problems == ["Heart failure", "Hyperkalemia / AKI on CKD 3a", "Type 2 DM"]
    assert [m.name for m in facts.medications] == ["Amoxicillin"]
    assert facts.sections[-1].kind == "medications"


def test_a_problem_of_the_course_is_a_problem_whatever_its_title_names():
    # "Feeding" names a diet section elsewhere; in the course it is a problem of the stay,
    # and the problems after it stay the course's.
    text = ("Hospital Course:\n# Bronchiolitis: high-flow oxygen for 2 days.\n"
            "# Feeding/hydration: tube feeds for 36 hours, then bottles every 3 hours.\n"
            "# Ear infection: started amoxicillin.\n\nDischarge Instructions:\n"
            "- Offer smaller feeds more often.\n")
    facts = read_summary(text)
    kinds = {s.title: (s.kind, s.effective_kind) for s in facts.sections}
    assert kinds["Feeding/hydration"] == ("problem", "hospital_course")
    assert kinds["Ear infection"] == ("problem", "hospital_course")
    assert kinds["Discharge Instructions"][1] == "instructions"


def test_a_line_with_its_own_label_is_an_item_of_its_own():
    # A long first line with no full stop would otherwise run on into the next.
    text = ("Discharge Diagnoses:\n"
            "Primary: Community-acquired pneumonia of the left lower lobe with sepsis\n"
            "Secondary: COPD, hyponatremia (resolved), type 2 DM\n\n"
            "Hospital Course:\nTreated with IV ceftriaxone and azithromycin, then switched to\n"
            "oral amoxicillin on day 3 when her fever had settled.\n")
    facts = read_summary(text)
    items = {s.title: [text[a:b] for a, b in section_items(text, s)] for s in facts.sections}
    every = [item for found in items.values() for item in found]
    assert "Primary: Community-acquired pneumonia of the left lower lobe with sepsis" in every
    assert not any("Primary" in item and "Secondary" in item for item in every), items
    # A sentence wrapped at a fixed width is still one item.
    assert any(item.startswith("Treated with") and item.endswith("settled.")
               for found in items.values() for item in found), items


def test_sections_cover_the_text_in_order():
    text = (SUMMARIES / "long_stay.txt").read_text(encoding="utf-8")
    sections = split_summary(text)
    assert all(a.end <= b.start for a, b in zip(sections, sections[1:]))
    covered = "".join(text[s.start:s.end] for s in sections)
    assert "".join(covered.split()) == "".join(text.split())


@pytest.mark.parametrize("written, value", [
    ("06/04/2025", "2025-06-04"), ("6/4/25", "2025-06-04"), ("06/04", "--06-04"),
    ("2025-06-04", "2025-06-04"), ("June 4, 2025", "2025-06-04"), ("4 June", "--06-04"),
    ("Sept 3rd", "--09-03"),
])
def test_dates_with_and_without_a_year(written, value):
    match = DATE.search(f"on {written}.")
    assert match and date_value(match) == value


@pytest.mark.parametrize("not_a_date", ["BP 120/80", "5/325 mg", "a 13/45 ratio"])
def test_fractions_are_not_dates(not_a_date):
    assert [date_value(m) for m in DATE.finditer(not_a_date) if date_value(m)] == []


def test_a_date_without_a_year_matches_any_year_but_not_another_day():
    assert same_date("--06-04", "2025-06-04") and same_date("2025-06-04", "--06-04")
    assert not same_date("--06-04", "2025-06-05") and not same_date("2024-06-04", "2025-06-04")


def test_grounding_knows_dates_without_a_year_stems_and_bare_numbers(glossary):
    source = "Lisinopril 10 mg daily - HOLD until 06/04/2025. Metoprolol 25 mg BID."

    def flagged(answer: str) -> list[tuple[str, str]]:
        return [(f.kind, f.text) for f in unsupported_facts(answer, source, glossary)]
    assert flagged("Do not take lisinopril until 06/04.") == []
    assert flagged("Restart it on 06/05.") == [("date", "06/05")]
    assert flagged("It was held due to a lack of insulin.") == [("medicine", "insulin")]
    assert flagged("Take bisoprolol 5 mg.") == [("medicine", "bisoprolol"), ("quantity", "5 mg")]
    assert flagged("The answer is: 11") == [("number", "11")]
    assert flagged("The answer is: 10") == []  # 10 is in the summary
    assert flagged("Take 2 tablets.") == [("quantity", "2 tablets")]  # a form, not a medicine
    assert [f.text for f in missing_facts(source, "Hold lisinopril 10 mg daily until 06/04; "
                                                  "metoprolol 25 mg twice a day.", glossary)] == []


def test_the_vocabulary_is_data():
    vocab = vocabulary()
    assert vocab.frequencies["bid"].value == "2/day" and vocab.routes["po"].value == "by mouth"
    assert vocab.section_kind("Discharge Activity") == "restrictions"
    assert vocab.is_medicine_word("empagliflozin") and not vocab.is_medicine_word("cholesterol")


def test_facts_command(profile):
    import json

    from helpers import run_lumen

    path = SUMMARIES / "numbered_problems.txt"
    shown = run_lumen("facts", str(path))
    assert shown.returncode == 0, shown.stderr
    assert "HELD         Furosemide: 40 mg, by mouth, once a day, until 06/09, (kidney injury)" \
        in shown.stdout
    data = json.loads(run_lumen("facts", str(path), "--json").stdout)
    text = path.read_text(encoding="utf-8")
    furosemide = next(m for m in data["medications"] if m["name"] == "Furosemide")
    assert furosemide["status"] == "held" and furosemide["until"] == "--06-09"
    assert "Furosemide" in text[furosemide["start"]:furosemide["end"]]
    assert {s["kind"] for s in data["sections"]} >= {"medications", "follow_up", "problem"}


def test_a_title_and_its_initial_end_no_sentence():
    from desktop_app.core.pipelines.summary_facts import _sentences

    text = ("Mr. T. is a 22-year-old man. Plan discussed with Dr. Okafor of oncology. "
            "Seen by Dr. A. Smith today. Screened for hepatitis B. Negative.")
    assert [text[a:b] for a, b in _sentences(text, 0, len(text))] == [
        "Mr. T. is a 22-year-old man.", "Plan discussed with Dr. Okafor of oncology.",
        "Seen by Dr. A. Smith today.", "Screened for hepatitis B.", "Negative."]


def test_a_dose_form_before_a_name_ends_no_sentence():
    """South Asian prescriptions write the form first ("Tab. Ecosprin", "Inj. Enoxaparin"):
    the story had said "managed with dual antiplatelets, high dose statin, Inj."."""
    from desktop_app.core.pipelines.summary_facts import _sentences

    text = ("Managed with high dose statin, Inj. Enoxaparin 60 mg s/c and fluids. "
            "Started Tab. Glycomet 500 mg 1-0-1. Given 1 Tab. Then observed.")
    assert [text[a:b] for a, b in _sentences(text, 0, len(text))] == [
        "Managed with high dose statin, Inj. Enoxaparin 60 mg s/c and fluids.",
        "Started Tab. Glycomet 500 mg 1-0-1.", "Given 1 Tab.", "Then observed."]


def test_the_record_s_line_is_no_appointment(glossary):
    """The patient's name, record number and visit date head a one-page summary; its date
    is the record's, and no line of the handout's appointments may carry the name."""
    summary = ("EMERGENCY DEPARTMENT DISCHARGE INSTRUCTIONS\n"
               "PATIENT: DOE-SMITH, ALEX     MRN: 000-00-0000     VISIT DATE: 06/14/2025\n\n"
               "FOLLOW-UP: Urology clinic in 2-3 days.\n")
    follow_ups = read_summary(summary, glossary).follow_ups
    assert [f.text for f in follow_ups] == ["FOLLOW-UP: Urology clinic in 2-3 days."] or \
        [f.who for f in follow_ups] == ["Urology clinic"]
    assert not any("DOE-SMITH" in f.text for f in follow_ups)


def test_a_sign_to_call_under_the_medicine_list_is_no_medicine(glossary):
    summary = ("Discharge Medications:\n1. Albuterol inhaler 2 puffs every 4 hours as needed\n"
               "Call 911 at once if he is too breathless to talk.\n")
    facts = read_summary(summary, glossary)
    assert [m.name for m in facts.medications] == ["Albuterol inhaler"] or \
        [m.name.split()[0] for m in facts.medications] == ["Albuterol"]
    assert [w.text for w in facts.warning_signs] == ["Call 911 at once if he is too breathless to talk."]


# Readings the fifth tuning round added (session 43), each shown with its wrong reading's
# cause: a status never moves to the medicine of another clause or question.
@pytest.mark.parametrize("summary, name, status", [
    # the note after the start says what not to take with it: naltrexone is still new
    ("A/P:\n#Alcohol use disorder\n- START naltrexone 50 mg PO daily for cravings. LFTs fine. Pt\n"
     "  counseled: do NOT take any opioid pain meds while on this.\n", "naltrexone", "new"),
    # how long, not a stop
    ("Discharge medications\n\nNew:\n1. Aspirin 81 mg PO daily for thrombocytosis - continue until\n"
     "   your PCP tells you to stop.\n", "Aspirin", "new"),
    # a stop with a planned restart is a pause
    ("DISCHARGE MEDICATIONS:\nHOLD:\n- Meloxicam 15 mg daily - do NOT take while on celecoxib; may\n"
     "  resume 06/18/2025.\n", "Meloxicam", "held"),
    # ... and the medicine it is taken beside is given no status of it, list or not
    ("Plan:\n- Meloxicam 15 mg daily - do NOT take while on celecoxib; may resume 06/18/2025.\n",
     "celecoxib", None),
    # when to skip a dose is no hold
    ("NEW:\n- Senna 8.6 mg 2 tabs qHS and docusate 100 mg BID were prescribed to prevent\n"
     "  constipation while taking oxycodone; hold for loose stools.\n", "Senna", "new"),
])
def test_a_status_stays_with_what_its_line_says_of_the_medicine(summary, name, status, glossary):
    facts = read_summary(summary, glossary)
    assert [m.status for m in facts.medications if m.name == name] == ([status] if status else [])


def test_a_question_for_the_doctor_is_no_instruction_and_a_withheld_medicine_stays_on_hold(glossary):
    summary = ("Summary of admission\nHis cilazapril 5 mg daily was withheld on admission because of the\n"
               "kidney injury, and since then we have not restarted it.\n\nActions for GP\n"
               "1. Please recheck his creatinine and decide whether to restart cilazapril.\n")
    facts = read_summary(summary, glossary, "dmy")
    assert [(m.name, m.status) for m in facts.medications] == [("cilazapril", "held")]


def test_a_combination_is_another_product_than_its_part(glossary):
    summary = ("DISCHARGE MEDICATIONS:\n1. Tiotropium/olodaterol 2.5/2.5 mcg inhaler: 2 puffs once daily - NEW\n"
               "2. Tiotropium 18 mcg inhaled daily - D/C, replaced by the combination inhaler above\n")
    facts = read_summary(summary, glossary)
    assert [(m.name, m.status) for m in facts.medications] == [
        ("Tiotropium/olodaterol", "new"), ("Tiotropium", "stopped")]


def test_another_name_in_brackets_is_the_same_medicine(glossary):
    summary = ("Changes to medication\nNEW - Insulin isophane (Protaphane) 16 units subcutaneously each morning\n\n"
               "Medication on discharge\nProtaphane 16 units mane, subcut\n")
    facts = read_summary(summary, glossary, "dmy")
    assert [(m.name, m.status, m.dose) for m in facts.medications] == [("Insulin isophane", "new", "16 units")]


def test_a_home_medicine_stopped_in_hospital_and_not_listed_is_stopped(glossary):
    summary = ("HOSPITAL COURSE:\nHer home amlodipine 5 mg daily was stopped for soft blood pressures.\n\n"
               "DISCHARGE MEDICATIONS:\nFUROSEMIDE 40 MG PO DAILY - NEW\n")
    facts = read_summary(summary, glossary)
    assert [(m.name.lower(), m.status) for m in facts.medications] == [("furosemide", "new"),
                                                                        ("amlodipine", "stopped")]


def test_a_greeting_without_a_comma_and_the_letter_head_before_it_are_the_letter_s(glossary):
    summary = ("CITY HOSPITAL\nPrivate Bag 99999, Valley 0000\nPh (09) 000 0000\n\n10/09/2024\n\n"
               "Dear Dr Whitfield\n\nDiagnoses\n1. Pneumonia\n")
    sections = read_summary(summary, glossary, "dmy").sections
    assert all(s.kind == "letter" for s in sections if "Private Bag" in summary[s.start:s.end])
    assert any(s.kind == "letter" and s.title.startswith("Dear") for s in sections)


# The sixth round (session 43).
def test_a_medicines_instructions_indented_below_it_are_one_item(glossary):
    summary = ("DISCHARGE MEDICATIONS\n\nSTART taking these medications\n"
               "  lansoprazole 30 mg orally disintegrating tablet\n"
               "     Disperse 1 tablet in 10 mL water and give through PEG tube once daily before the\n"
               "     first feed. For reflux (replaces omeprazole).\n"
               "  aspirin 81 mg chewable tablet\n"
               "     Hold until 10/14/2025 (new PEG site), then restart 81 mg through the tube once\n"
               "     daily.\n")
    facts = read_summary(summary, glossary)
    assert [(m.name, m.status, m.route) for m in facts.medications] == [
        ("lansoprazole", "new", "through the feeding tube"), ("omeprazole", "stopped", ""),
        ("aspirin", "held", "through the feeding tube")]


def test_tablets_and_eye_drops_of_one_medicine_stay_two_entries(glossary):
    summary = ("Discharge medications\nNew\n- prednisone 40 mg by mouth every morning for 4 weeks.\n"
               "- Pred Forte (prednisolone acetate 1%) eye drops - 1 drop in the RIGHT eye\n"
               "  four times a day for 1 week, then twice a day for 1 week, then stop.\n")
    facts = read_summary(summary, glossary)
    assert [(m.name, m.route, m.frequency, m.count) for m in facts.medications] == [
        ("prednisone", "by mouth", "morning", ""), ("Pred Forte", "in the eye", "4/day", "1 drop"),
        ("Pred Forte", "in the eye", "2/day", "1 drop")]


def test_labelled_rows_of_a_space_aligned_table_and_the_letter_after_it(glossary):
    summary = ("Medication changes\n"
               "Started:       Folic acid 5 mg         ONE tablet once daily                  folate deficiency\n"
               "               Accrete D3              ONE tablet twice daily                 bone protection\n"
               "Dose changed:  Lansoprazole            30 mg to 15 mg once daily              dyspepsia settled\n"
               "Stopped:       Naproxen 500 mg         (was twice daily)                      blood loss risk\n\n"
               "I reviewed Ms Ashdown in clinic today, three weeks after her admission with exertional\n"
               "breathlessness. During the admission she was given ferric carboxymaltose 1000 mg IV; her\n"
               "haemoglobin today is 112 g/L. Her TSH was raised on admission, so I have increased her\n"
               "levothyroxine to 100 micrograms.\n")
    facts = read_summary(summary, glossary, "dmy")
    read = [(m.name, m.status, m.changed_from, m.changed_to) for m in facts.medications]
    assert read[:4] == [("Folic acid", "new", "", ""), ("Accrete D3", "new", "", ""),
                        ("Lansoprazole", "changed", "30 mg", "15 mg"), ("Naproxen", "stopped", "", "")]
    assert not any(m.name.lower() in ("her", "i", "ferric carboxymaltose") for m in facts.medications)


def test_the_patients_address_and_family_doctor_are_the_record_s(glossary):

    summary = ("Re: Mrs Isobel Drummond-Hay, DOB 14/02/1946\n14 Kinloch Terrace, Glenbrae\n\n"
               "Diagnoses\n1. Wrist fracture\n")
    sections = read_summary(summary, glossary, "dmy").sections
    assert all(not s.is_content for s in sections if "Kinloch" in summary[s.start:s.end])
    assert "Whitcombe" not in patient_text("GP/LMO: Dr S. Whitcombe, Eastmoor Family Practice")
    assert "Eastmoor" not in patient_text("GP/LMO: Dr S. Whitcombe, Eastmoor Family Practice")


def test_a_doctor_named_in_a_sentence_stays_and_a_field_of_one_goes():

    assert patient_text("Please see your GP Dr Mackintosh in 2 weeks for bloods.") == \
        "Please see your GP Dr Mackintosh in 2 weeks for bloods."
    assert patient_text("Follow up with your PCP Dr. Ellison on 10/25/2024.") == \
        "Follow up with your PCP Dr. Ellison on 10/25/2024."
    assert patient_text("PCP: Tobias Lindqvist, MD") == ""
    assert "Ferreira" not in patient_text("Medicines reconciled by ward pharmacist G. Ferreira-Lund (MPharm).")


# The seventh round (session 43).
def test_a_table_of_brands_and_generics_is_read_and_named_by_brand(glossary):
    summary = ("Medications on discharge\n"
               "| Brand | Generic | Strength | Directions | Indication | Status / comments |\n"
               "|---|---|---|---|---|---|\n"
               "| Plavix | clopidogrel | 75 mg | 1 tablet daily | TIA - stroke prevention | NEW - long term |\n"
               "| Zocor | simvastatin | 20 mg | 1 tablet nocte | - | CEASED - switched to Crestor |\n")
    facts = read_summary(summary, glossary, "dmy")
    # (by brand: "Plavix" as the glossary knows it, else "Zocor (simvastatin)"; what it was
    # switched to is new)
    assert [(m.name.split(" (")[0], m.status) for m in facts.medications] == [
        ("Plavix", "new"), ("Zocor", "stopped"), ("Crestor", "new")]


def test_a_new_medicine_that_cannot_be_stopped_abruptly_is_not_stopped(glossary):
    summary = ("A/P:\n# Benzodiazepine dependence\n"
               "- Xanax (alprazolam) 1 mg PO TID - D/C. Replaced by clonazePAM taper (cannot stop abruptly\n"
               "  - seizure risk).\n"
               "- Start clonazePAM 0.5 mg PO BID x 7 days, then 0.5 mg PO at bedtime x 7 days, then stop.\n")
    facts = read_summary(summary, glossary)
    assert {m.status for m in facts.medications if m.name.lower() == "clonazepam"} == {"new"}


# The eighth round (session 44).
def _fields(summary: str, glossary, order: str = "mdy") -> list[dict]:
    """Each medication's fields that are set, without where it was read."""
    return [{key: value for key, value in m.to_dict().items()
             if value and key not in ("text", "start", "end", "key", "section")}
            for m in read_summary(summary, glossary, order).medications]


def test_then_uptitrate_to_is_the_next_step(glossary):
    meds = _fields("Discharge medications:\n- Carvedilol 3.125 mg twice daily, then uptitrate to 6.25 mg "
                   "twice daily after 2 weeks\n", glossary)
    assert [(m["dose"], m.get("step")) for m in meds] == [("3.125 mg", 1), ("6.25 mg", 2)]


def test_no_longer_needed_is_no_reason(glossary):
    [meds] = _fields("Medications stopped:\n- Omeprazole 20 mg daily - no longer needed\n", glossary)
    assert meds["status"] == "stopped" and "reason" not in meds


def test_recommence_in_capitals_restarts_and_its_date_is_no_end(glossary):
    [meds] = _fields("Discharge medications:\n2. Warfarin 5mg PO daily for AF - RECOMMENCE today 14/03\n",
                     glossary, "dmy")
    assert meds["status"] == "resume" and meds["reason"] == "AF" and "until" not in meds


def test_a_patch_s_rate_is_its_dose_and_changing_it_is_no_change_of_dose(glossary):
    nicotine, fentanyl, estradiol = _fields(
        "Discharge medications:\n- Nicotine patch 21 mg/24 h, apply one each morning\n"
        "- Fentanyl patch 25 mcg/hr, change every 72 hours\n"
        "- Estradiol patch 50 mcg/24 hours, change twice weekly\n", glossary)
    assert nicotine["dose"] == "21 mg/24 hours" and fentanyl["dose"] == "25 micrograms/hour"
    assert fentanyl["frequency"] == "every 72 hours" and "status" not in fentanyl
    assert estradiol["frequency"] == "2/week" and "status" not in estradiol


def test_pieces_of_gum_are_counted_like_tablets(glossary):
    [gum] = _fields("Discharge medications:\n- Nicotine gum 2 mg, 1 piece every 1-2 hours as needed for "
                    "cravings, max 20 pieces a day\n", glossary)
    assert (gum["dose"], gum["count"], gum["maximum"]) == ("2 mg", "1 piece", "20 pieces per day")


def test_must_not_resume_is_stopped(glossary):
    [naproxen] = _fields("Discharge medications:\n- Naproxen 500 mg twice daily - must not resume (kidney "
                         "injury)\n", glossary)
    assert (naproxen["status"], naproxen["reason"]) == ("stopped", "kidney injury")


def test_a_wean_after_a_dash_is_the_new_dose(glossary):
    [zopiclone] = _fields("Discharge medications:\n- Zopiclone 7.5 mg at night: wean - 3.75 mg at night for "
                          "7 days, then stop\n", glossary, "dmy")
    assert (zopiclone["status"], zopiclone["dose"], zopiclone["changed_from"]) == ("changed", "3.75 mg", "7.5 mg")


def test_once_she_is_eating_is_no_frequency(glossary):
    [metformin] = _fields("Discharge medications:\n- Metformin 500 mg - restart once she is eating normally\n",
                          glossary)
    [gliclazide] = _fields("Discharge medications:\n- Gliclazide 40 mg with breakfast, once eating again\n",
                           glossary, "dmy")
    assert "frequency" not in metformin and metformin["status"] == "resume"
    assert gliclazide.get("frequency") != "once"


def test_a_hold_during_the_stay_yields_to_a_restart_now(glossary):
    [metformin] = _fields("Discharge medications:\n- Metformin 1 g twice daily with food - withheld on "
                          "admission - RECOMMENCE now\n", glossary, "dmy")
    assert metformin["status"] == "resume"


def test_a_status_read_from_the_stay_is_quoted_from_the_discharge_line(glossary):
    summary = ("Her metoprolol was withheld for the first two days while the rate was slow. She goes home "
               "on metoprolol 25 mg twice daily, reduced from 50 mg twice daily.\n")
    [metoprolol] = read_summary(summary, glossary).medications
    assert metoprolol.status == "changed" and "reduced from" in metoprolol.text


def test_hold_the_dose_and_call_is_a_rule_not_a_hold(glossary):
    [nadolol] = _fields("Discharge medications:\n- Nadolol 20 mg daily. Hold the dose and call if your "
                        "pulse is under 55.\n", glossary)
    assert "status" not in nadolol


def test_a_brand_before_its_generic_in_brackets_and_what_it_does(glossary):
    [bisoprolol] = _fields("We started Cardicor (bisoprolol) 2.5 mg each morning, which slows the heart.\n",
                           glossary, "dmy")
    assert (bisoprolol["name"], bisoprolol["reason"]) == ("Cardicor", "slows the heart")


def test_a_level_or_toxicity_of_a_medicine_is_not_a_medicine(glossary):
    meds = _fields("She came in with digoxin toxicity after a week of vomiting. Serum digoxin was 4.2 on "
                   "arrival and she was given an antidote.\n", glossary, "dmy")
    assert meds == []


def test_a_bare_kind_is_not_a_second_medicine_when_the_list_names_it(glossary):
    meds = _fields("Discharge medications:\n- Insulin glargine 20 units at night - new\n"
                   "- Gliclazide 80 mg twice daily - stopped, replaced by insulin\n", glossary, "dmy")
    assert [m["name"] for m in meds] == ["Insulin glargine", "Gliclazide"]


def test_reduce_to_gives_the_new_dose_and_the_old(glossary):
    [prednisolone] = _fields("Discharge medications:\n- Prednisolone 40 mg daily: reduce to 30 mg daily on "
                             "02/06/2025\n", glossary, "dmy")
    assert (prednisolone["dose"], prednisolone["changed_from"]) == ("30 mg", "40 mg")


def test_on_in_a_frequency_cell_is_at_night(glossary):
    [amitriptyline] = _fields("Discharge medications:\n| Drug | Dose | Frequency |\n|---|---|---|\n"
                              "| Amitriptyline | 10 mg | ON |\n", glossary, "dmy")
    assert amitriptyline["frequency"] == "bedtime"


def test_where_a_medicine_came_from_is_no_reason_and_a_reason_column_is(glossary):
    [atorvastatin] = _fields("Discharge medications:\n- Atorvastatin 40 mg at night (PTA)\n", glossary, "dmy")
    assert "reason" not in atorvastatin
    [ibuprofen] = _fields("Discharge medications:\n| Drug | Dose | Status | Reason stopped |\n|---|---|---|---|\n"
                          "| Ibuprofen | 400 mg | STOPPED | kidney injury - avoid |\n", glossary, "dmy")
    assert (ibuprofen["status"], ibuprofen["reason"]) == ("stopped", "kidney injury")


def test_half_a_tablet_written_as_a_fraction(glossary):
    [warfarin] = _fields("Discharge medications:\n- Warfarin 1 mg tablets, ½ tablet daily\n", glossary, "dmy")
    assert warfarin["count"] == "0.5 tablets"


def test_a_practice_before_the_doctor_and_a_typist_s_initials_are_record_matter():
    assert patient_text("Primary care: Brookfield Pediatrics, Dr. A. Okafor") == ""
    assert patient_text("CVR/xx") == ""
    assert patient_text("Attending: Cardiology") == "Attending: Cardiology"


# The formulary (session 44): medicine names the glossary and the stems do not know.
def test_the_formulary_names_medicines_no_glossary_entry_or_stem_knows(glossary):
    # (without it, "Commenced" was read as the name of the medicine after it)
    meds = _fields("MEDICATION CHANGES\nCeased: lacosamide (rash)\nCommenced: brivaracetam 50 mg BD\n",
                   glossary, "dmy")
    assert [(m["name"], m["status"]) for m in meds] == [("lacosamide", "stopped"), ("brivaracetam", "new")]


def test_a_combination_over_a_name_the_glossary_knows_is_one_medicine(glossary):
    meds = _fields("Discharge medications:\n- Tiotropium/olodaterol 2.5/2.5 mcg inhaler: 2 puffs once daily - new\n"
                   "- Tiotropium 18 mcg inhaled daily - stopped\n", glossary)
    assert [(m["name"], m["status"]) for m in meds] == [("Tiotropium/olodaterol", "new"), ("Tiotropium", "stopped")]


def test_a_combination_with_its_first_part_s_salt_is_one_medicine(glossary):
    """A patient's triple inhaler is no plain "Fluticasone" in the handout's table."""
    meds = _fields("Discharge medications:\n3. Fluticasone furoate/umeclidinium/vilanterol (Trelegy "
                   "Ellipta) 100/62.5/25 mcg 1 inhalation once daily (NEW).\n"
                   "4. Metoprolol succinate 25 mg daily\n", glossary)
    assert [(m["name"], m["dose"]) for m in meds] == [
        ("Fluticasone furoate/umeclidinium/vilanterol", "100/62.5/25 micrograms"),
        ("Metoprolol succinate", "25 mg")]


def test_a_brand_named_in_apposition_is_the_same_medicine(glossary):
    meds = _fields("You also have a new glyceryl trinitrate spray, brand name Nitrolingual, 400 micrograms "
                   "under the tongue as needed for chest pain.\n", glossary, "dmy")
    assert [m["name"] for m in meds] == ["glyceryl trinitrate"]


def test_the_medicine_names_trie_finds_what_the_plain_alternation_finds():
    import re

    from desktop_app.core.pipelines import vocabulary as vocabulary_module
    names = vocabulary().medicine_names
    plain = re.compile(rf"\b(?:{vocabulary_module._alternation(names)})\b", re.IGNORECASE)
    trie = re.compile(rf"\b(?:{vocabulary_module._trie_alternation(names)})\b", re.IGNORECASE)
    text = "\n".join(path.read_text(encoding="utf-8") for path in (SUMMARIES.parent / "layouts").glob("*.txt"))
    text += " insulin  glargine, Insulin\nGlargine, insulin glargin, co-amoxiclav, tylenol #3, Keppra XR"
    assert [m.span() for m in trie.finditer(text)] == [m.span() for m in plain.finditer(text)]
    assert len(names) > 2000


# The ninth round (session 44).
def test_an_after_visit_summary_block_is_read_whole(glossary):
    summary = ("YOUR MEDICINES\n"
               "Your medication list has changed. Please read the whole list.\n\n"
               "START taking these medications\n"
               "    ciprofloxacin 500 mg tablet\n"
               "    Commonly known as: CIPRO\n"
               "        Take 1 tablet (500 mg total) by mouth every 12 (twelve) hours for 5 days.\n"
               "        Indications: E. coli bacteremia\n"
               "        Take with a full glass of water.\n\n"
               "CHANGE how you take these medications\n"
               "    losartan 100 mg tablet\n"
               "    Commonly known as: COZAAR\n"
               "    What changed: medication strength\n"
               "        Take 1 tablet (100 mg total) by mouth daily.\n"
               "        Previously: 25 mg daily. Now: 100 mg daily.\n"
               "        Reason: protein in the urine\n\n"
               "CONTINUE taking these medications\n"
               "    lidocaine-prilocaine cream\n"
               "    Commonly known as: EMLA\n"
               "        Apply a thick layer over your port 1 hour before it is accessed.\n")
    cipro, losartan, emla = _fields(summary, glossary)
    assert (cipro["status"], cipro["frequency"], cipro["duration"], cipro["reason"]) == (
        "new", "2/day", "5 days", "E. coli bacteremia")
    assert (losartan["status"], losartan["changed_from"], losartan["reason"]) == (
        "changed", "25 mg daily", "protein in the urine")
    assert (emla["name"], emla["status"]) == ("lidocaine-prilocaine", "unchanged")


def test_a_sick_day_rule_s_until_is_no_end_of_the_medicine(glossary):
    meds = _fields("Discharge medications:\n1. Metformin 1 g p.o. b.d. Continue.\n"
                   "2. Empagliflozin (Jardiance) 10 mg p.o. daily. Continue.\nSpecial instructions:\n"
                   "If he is vomiting he is to miss the metformin and empagliflozin until eating again, keep "
                   "taking the Lantus.\n", glossary, "dmy")
    assert all("until" not in m for m in meds if m["name"] != "Lantus")


def test_counts_in_roman_numerals_shorthand_timings_and_units(glossary):
    paracetamol, iron, tiotropium, senna, haloperidol, dexamethasone = _fields(
        "Discharge medications:\n"
        "1. Paracetamol 500 mg i-ii tabs po q4-6h prn pain\n"
        "2. Ferrous fumarate 300 mg po every second day\n"
        "3. Tiotropium 2.5 microg, 2 puffs mane\n"
        "4. Senna 7.5 mg tabs - 2 tabs on\n"
        "5. Haloperidol 500mcg on prn for nausea\n"
        "6. Dexamethasone 8 mg om for 5 days\n", glossary, "dmy")
    assert paracetamol["count"] == "1-2 tablets" and iron["frequency"] == "every other day"
    assert tiotropium["dose"] == "2.5 micrograms" and senna["frequency"] == "bedtime"
    assert haloperidol["frequency"] == "bedtime" and dexamethasone["frequency"] == "morning"


def test_a_combination_joined_by_plus_and_its_count_by_multiplication(glossary):
    [augmentin] = _fields("Discharge medications:\n| Medicine | Dose | Route | Frequency |\n|---|---|---|---|\n"
                          "| Amoxicillin + clavulanic acid 875/125 mg tab | 1 x 875/125 mg tab | PO | BD |\n",
                          glossary, "dmy")
    assert (augmentin["name"], augmentin["count"]) == ("Amoxicillin + clavulanic acid", "1 tablet")


def test_a_banner_heading_and_bare_status_labels_under_it(glossary):
    summary = ("==================== MEDICATION CHANGES ====================\n"
               "COMMENCED\n  Loperamide 2 mg caps - 1 x 2mg cap po tds\n"
               "DOSE ALTERED\n  Metformin XR 500 mg tabs - now 1 tab po nocte (was 2 tabs nocte)\n"
               "WITHHELD\n  Perindopril 5 mg po mane until GP review\n"
               "CEASED\n  Celecoxib 200 mg po daily PRN knee pain\n"
               "  Gliclazide MR 30 mg - 1 tab mane (BSLs high once the SGLT2 inhibitor was stopped)\n")
    meds = _fields(summary, glossary, "dmy")
    assert [(m["name"].split()[0], m["status"]) for m in meds] == [
        ("Loperamide", "new"), ("Metformin", "changed"), ("Perindopril", "held"), ("Celecoxib", "stopped"),
        ("Gliclazide", "stopped")]


def test_a_long_lead_in_to_a_list_of_warning_signs_is_their_heading(glossary):
    summary = ("Advice\nRest at home for a week.\n\n"
               "See your GP urgently or return to the Emergency Department (call 000 in an emergency) if\n"
               "- breathing gets worse\n- coughing up blood\n\n"
               "Call the family doctor the same day if Nolan:\n- is waking at night with a cough\n")
    facts = read_summary(summary, glossary, "dmy")
    signs = " ".join(w.text for w in facts.warning_signs)
    assert "breathing gets worse" in signs and "coughing up blood" in signs and "waking at night" in signs


def test_what_is_no_reason_and_what_is(glossary):
    prednisolone, insulin, ibuprofen, valproate = _fields(
        "Discharge medications:\n"
        "- Prednisolone liquid 5 mg/5 mL (1 mg/kg per dose, rounded) 17 mL twice a day - new\n"
        "- Insulin aspart 20 units with meals plus sliding scale as per the chart given to him\n"
        "- Ibuprofen - STOP. It blocks the way aspirin protects the heart.\n"
        "- Sodium valproate modified release (Epilim Chrono) 1 g at night - new\n", glossary, "dmy")
    assert "reason" not in prednisolone and "reason" not in insulin
    assert ibuprofen["reason"].startswith("blocks the way aspirin")
    assert valproate["name"].lower() == "sodium valproate"


def test_a_topical_product_and_its_brand_in_a_list(glossary):
    [lanolin] = _fields("Discharge medications:\n9. Lanolin (Lansinoh) - apply to nipples as needed.\n", glossary)
    assert lanolin["name"] == "Lanolin" and lanolin["as_needed"]


def test_a_blood_pressure_that_was_is_no_dose_that_was(glossary):
    [thiazide] = _fields("Stopped: bendroflumethiazide (his blood pressure was 118/70 off it).\n", glossary, "dmy")
    assert thiazide["status"] == "stopped" and "changed_from" not in thiazide


def test_a_patch_worn_for_sixteen_hours(glossary):
    [patch] = _fields("Discharge medications:\n- Nicotine patch 25 mg/16 hours, one patch each morning - new\n",
                      glossary, "dmy")
    assert patch["dose"] == "25 mg/16 hours"


def test_a_pronoun_is_no_medicine_and_two_doses_at_two_times_are_two_lines(glossary):
    meds = _fields("Discharge medications:\n| Medicine | Dose | Time | Status |\n|---|---|---|---|\n"
                   "| Hydrocortisone 10 mg tab | 1 tab | 07:00 | UNCHANGED |\n"
                   "| Hydrocortisone 5 mg tab | 1 tab | 14:00 | UNCHANGED |\n\n"
                   "Medication notes:\nShe has stopped hormonal contraception and is using condoms.\n",
                   glossary, "dmy")
    assert [(m["name"], m["dose"], m["time"]) for m in meds] == [("Hydrocortisone", "10 mg", "07:00"),
                                                                 ("Hydrocortisone", "5 mg", "14:00")]


def test_record_matter_of_the_ninth_round_is_kept_from_the_patient():
    assert patient_text("Medicare: 0000 00000 0") == ""
    assert patient_text("Date: 12/09/2025 Hosp no: 0000000") == "Date: 12/09/2025"
    assert "Ashworth" not in patient_text("Adcal-D3 - stopped (Pharmacist-checked 20/11/2025, T. Ashworth)")
    assert "Code status" not in patient_text("Code status: Full code. Home with her husband.")


def test_a_space_laid_table_s_header_and_a_stamp_are_no_content(glossary):
    summary = ("Medicines reconciliation\n"
               "Medicine          Home dose     Action      Discharge dose     Comment\n"
               "Lansoprazole      -             NEW         30 mg om           Stomach protection\n\n"
               "Follow-up\nGP in 1 week.\n\n"
               "eDS sent electronically to GP via the messaging service\n"
               "Typed 19/03/2025 (kp) cc: GP\n")
    facts = read_summary(summary, glossary, "dmy")
    section = next(s for s in facts.sections if s.title == "Medicines reconciliation")
    items = [summary[a:b] for a, b in section_items(summary, section)]
    assert not any("Home dose" in item for item in items) and len(items) == 1
    assert [(m.name, m.status, m.frequency) for m in facts.medications] == [("Lansoprazole", "new", "morning")]
    assert {s.kind for s in facts.sections if s.title.startswith(("eDS", "Typed"))} == {"letter"}


def test_on_and_once_that_are_no_timing(glossary):
    # (a wrapped line is no column gap; "once during the day" is once)
    [prednisolone] = _fields("Discharge medications:\n- Prednisolone 20 mg on\n      alternate days\n",
                             glossary, "dmy")
    [iron] = _fields("Discharge medications:\n- Ferrous sulfate 200 mg, take once during the day\n", glossary, "dmy")
    assert prednisolone["frequency"] == "every other day" and iron["frequency"] == "once"


def test_what_a_medicine_does_is_never_cut_mid_word(glossary):
    [ibuprofen] = _fields("Discharge medications:\n- Ibuprofen 200 mg - STOP. It can hide a fever and raises bleeding "
                          "risk when your platelets are low.\n", glossary)
    assert ibuprofen["reason"].endswith("platelets are low")


# Session 45.
def test_a_taper_step_s_total_is_no_new_strength(glossary):
    # "(50 mg total)" is what 2.5 tablets of 20 mg add up to; the reason after the steps is
    # every step's
    meds = _fields("DISCHARGE MEDICATIONS:\npredniSONE 20 mg tablet\n    Take 3 tablets (60 mg total) by mouth "
                   "every morning for 7 days, THEN 2.5 tablets (50 mg total) every morning for 7 days, THEN 2 "
                   "tablets (40 mg total) every morning. Reason: lupus nephritis\n", glossary)
    assert [(m["dose"], m["count"], m.get("reason")) for m in meds] == [
        ("20 mg", "3 tablets", "lupus nephritis"), ("20 mg", "2.5 tablets", "lupus nephritis"),
        ("20 mg", "2 tablets", "lupus nephritis")]


def test_a_space_laid_reconciliation_table_is_read_by_its_columns(glossary):
    # the dose before the stay is the change's "from", never what to take now; a stopped
    # row's only dose is its home dose; comments give the reason, not when or where from
    summary = ("Medicines reconciliation\n"
               "Medicine              Home dose           Action      Discharge dose      Comment\n"
               "Levothyroxine      100 micrograms om      INCREASED   125 micrograms om   Rifampicin speeds its breakdown\n"
               "Desogestrel           75 micrograms od    STOPPED     -                   Makes it unreliable\n"
               "Paracetamol           1 g qds prn         CHANGED     1 g qds             Regular now\n"
               "Zoladex LA 10.8 mg    -                   Continue    no change           Next implant due 12/12/2025\n")
    levothyroxine, desogestrel, paracetamol, zoladex = _fields(summary, glossary, "dmy")
    assert (levothyroxine["dose"], levothyroxine["changed_from"], levothyroxine["changed_to"],
            levothyroxine["reason"]) == ("125 micrograms", "100 micrograms om", "125 micrograms om",
                                         "Rifampicin speeds its breakdown")
    assert (desogestrel["status"], desogestrel["dose"], desogestrel["frequency"]) == ("stopped", "75 micrograms", "1/day")
    assert "as_needed" not in paracetamol and paracetamol["changed_from"] == "1 g qds prn"
    assert "reason" not in paracetamol and "reason" not in zoladex


def test_a_pipe_table_s_home_dose_is_no_dose_to_take(glossary):
    [omeprazole] = _fields("Discharge medications:\n| Medicine | Home dose | Discharge dose | Change |\n"
                           "|---|---|---|---|\n| Omeprazole | 20 mg daily prn | 40 mg twice daily | Increased |\n",
                           glossary)
    assert (omeprazole["dose"], omeprazole["frequency"], omeprazole["changed_from"]) == (
        "40 mg", "2/day", "20 mg daily prn") and "as_needed" not in omeprazole


def test_a_liquid_combination_keeps_both_strengths(glossary):
    [hydrocodone] = _fields("Discharge medications:\n4. Hydrocodone-acetaminophen 7.5-325 mg/15 mL oral solution,"
                            " 10 mL by mouth every 6 hours as needed\n", glossary)
    assert (hydrocodone["dose"], hydrocodone["count"]) == ("7.5-325 mg/15 mL", "10 mL")


def test_a_long_reason_is_never_cut_mid_word(glossary):
    long_for, long_purpose = _fields(
        "Discharge medications:\n- Cefalexin 500 mg four times daily for cellulitis of the left lower leg spreading "
        "from the ankle towards the knee despite oral treatment\n"
        "- Apixaban 5 mg twice daily to prevent blood clots forming in the heart chambers while the rhythm "
        "stays irregular\n", glossary)
    for reason in (long_for["reason"], long_purpose["reason"]):
        assert reason.split()[-1] in ("towards", "the", "knee", "despite", "oral", "treatment", "rhythm",
                                      "while", "stays", "irregular", "chambers"), reason


def test_a_reason_on_its_own_indented_line_under_the_medicine(glossary):
    # and never a line the one above runs on to, nor a name
    loperamide, perindopril, labetalol, lisinopril = _fields(
        "DISCHARGE MEDICATIONS\nNEW\n  Loperamide (Imodium) 2 mg caps - 1 x 2mg cap po tds, 30 min before meals\n"
        "      To thicken stoma output. Do not stop without talking to the stoma nurse.\n"
        "WITHHELD\n  Perindopril (Coversyl) 5 mg po mane - WITHHELD until GP review\n"
        "      AKI with high stoma output. Restart when creatinine stable.\n"
        "CHANGED\n- Labetalol up-titrated from 100 mg to 200 mg\n  PO BID. No severe-range BPs.\n"
        "- lisinopril 20 mg daily - do not take until your kidney labs are rechecked next week;\n"
        "  Ms. Amundsen will tell you when to restart\n", glossary, "dmy")
    assert loperamide["reason"] == "To thicken stoma output"
    assert perindopril["reason"] == "AKI with high stoma output"
    assert "reason" not in labetalol and "reason" not in lisinopril


def test_the_last_drops_and_cease_after_end_a_course(glossary):
    drops, somac = _fields("Discharge medications:\n5. Chloramphenicol 0.5% eye drops - 1 drop into both eyes four "
                           "times a day, last drops on 24/07/2025 [NEW]\n"
                           "6. Somac 40 mg once daily - NEW. Cease after 02/07/2025 together with Cartia\n",
                           glossary, "dmy")
    assert (drops["until"], somac["until"]) == ("2025-07-24", "2025-07-02")


def test_an_after_visit_summary_with_its_instructions_under_the_name_unindented(glossary):
    # the instruction line is the medicine's, not a medicine of its own or of the name in its
    # indication; "HOLD these medications - do not take until ..." labels the lines below it
    summary = ("START taking these medications\n\namLODIPine 5 MG tablet\nCommonly known as: NORVASC\n"
               "Take 1 tablet (5 mg total) by mouth daily.\n    Indication: blood pressure while lisinopril is on hold\n\n"
               "HOLD these medications - do not take until your doctor tells you to restart\n\n"
               "lisinopril 20 MG tablet\nCommonly known as: ZESTRIL\nTake 20 mg by mouth daily.\n"
               "    Why on hold: acute kidney injury. Do not take until your creatinine is 1.2 or lower.\n")
    amlodipine, lisinopril = _fields(summary, glossary)
    assert (amlodipine["name"], amlodipine["status"], amlodipine["frequency"], amlodipine["reason"]) == (
        "amLODIPine", "new", "1/day", "blood pressure while lisinopril is on hold")
    assert (lisinopril["status"], lisinopril["reason"], lisinopril["until"]) == (
        "held", "acute kidney injury", "your creatinine is 1.2 or lower")


def test_a_long_heading_in_capitals_over_warning_signs(glossary):
    facts = read_summary("FOLLOW-UP APPOINTMENTS\n- Clinic on 09/11/2025\n\n\n"
                         "CALL YOUR DOCTOR OR RETURN TO THE EMERGENCY DEPARTMENT IF YOU HAVE\n"
                         "- Temperature of 100.4 F (38 C) or higher\n- Yellow skin or eyes\n", glossary)
    assert [w.text for w in facts.warning_signs] == ["Temperature of 100.4 F (38 C) or higher", "Yellow skin or eyes"]


def test_uk_on_before_an_arrow_or_a_dash_and_a_labelled_reason_below(glossary):
    atorvastatin, tamsulosin, bisoprolol = _fields(
        "Changes to medication\nDose increased:\n  Atorvastatin 20 mg ON -> 80 mg ON\n     secondary prevention after TIA\n"
        "Unchanged:\n  Tamsulosin 400 micrograms ON - no change\nStarted:\n  Bisoprolol 2.5 mg OM\n     rate control of AF\n",
        glossary, "dmy")
    assert (atorvastatin["dose"], atorvastatin["changed_from"], atorvastatin["frequency"], atorvastatin["reason"]) == (
        "80 mg", "20 mg ON", "bedtime", "secondary prevention after TIA")
    assert tamsulosin["frequency"] == "bedtime" and bisoprolol["reason"] == "rate control of AF"


def test_a_rescue_dose_given_if_and_a_schedule_by_lines(glossary):
    levetiracetam_1, levetiracetam_2, diazepam = _fields(
        "Owen's medicines\n1. Levetiracetam oral solution 100 mg/mL - NEW, daily seizure medicine\n"
        "   For the first 2 weeks (through 10/14/2025): give 2.4 mL (240 mg) by mouth twice a day.\n"
        "   Starting 10/15/2025: give 4.8 mL (480 mg) by mouth twice a day.\n\n"
        "2. Diazepam nasal spray 10 mg - NEW, RESCUE medicine\n"
        "   Give 1 spray (10 mg) in ONE nostril if a seizure lasts 5 minutes or longer, or if he has 3 seizures.\n",
        glossary)
    assert (levetiracetam_1["frequency"], levetiracetam_1["duration"], levetiracetam_1["count"]) == ("2/day", "2 weeks", "2.4 mL (240 mg)")
    assert (levetiracetam_2["count"], levetiracetam_2["step"]) == ("4.8 mL", 2)
    assert (diazepam["frequency"], diazepam["as_needed"], diazepam["reason"]) == (
        "as needed", True, "a seizure lasts 5 minutes or longer")


def test_a_med_rec_table_in_capitals_with_wrapped_comments(glossary):
    summary = ("DISCHARGE MEDICATION (TTO):\n"
               "DRUG                   DOSE      ROUTE  FREQ           DURATION     STATUS     COMMENTS\n"
               "PANTOPRAZOLE           40 MG     PO     BD             8 WEEKS      NEW        GASTRIC ULCER\n"
               "WARFARIN               5 MG      PO     NOCTE          -            RESUMED    MECHANICAL VALVE. HELD 14/04.\n"
               "                                                                               DOSE AS PER CLINIC\n"
               "DICLOFENAC             50 MG     PO     TDS            -            STOPPED    CONTRIBUTED TO ULCER\n\n"
               "DISCHARGE MED REC\nMedication                   Sig                              Status\n"
               "insulin glargine (Lantus)    18 units SC nightly at 9 PM      CHANGED (was 22 units)\n"
               "acetaminophen                650 mg PO q6h PRN pain           CONTINUE\n")
    facts = read_summary(summary, glossary, "dmy")
    assert [(m.name, m.status, m.duration, m.reason) for m in facts.medications] == [
        ("PANTOPRAZOLE", "new", "8 weeks", "GASTRIC ULCER"), ("WARFARIN", "resume", "", "MECHANICAL VALVE"),
        ("DICLOFENAC", "stopped", "", "CONTRIBUTED TO ULCER"), ("insulin glargine", "changed", "", ""),
        ("acetaminophen", "unchanged", "", "pain")]
    assert not any(s.title.startswith(("DRUG", "DOSE AS")) for s in facts.sections)


def test_a_status_stays_in_its_own_clause_and_odt_is_the_same_medicine(glossary):
    acetaminophen, ibuprofen = _fields("A/P:\n - acetaminophen 650 mg PO q6h PRN pain\n"
                                       " - HOLD home ibuprofen 400 mg PRN until BMP rechecked; use "
                                       "acetaminophen instead\n", glossary)
    assert ibuprofen["status"] == "held" and "status" not in acetaminophen
    [ondansetron] = _fields("Plan:\n- ondansetron 4 mg PO q8h PRN nausea\n\nDischarge medications:\n"
                            "- ondansetron ODT 4 mg PO q8h PRN nausea - NEW\n", glossary)
    assert ondansetron["status"] == "new"


def test_a_status_label_heading_a_line_is_each_plain_item_s(glossary):
    """"STOPPED: X ...; Y ..." stops both (the answer had quoted the line whole as one Lumen
    could not read); an item that says what to do of its own accord keeps its doubt."""
    facts = read_summary("Discharge Medications:\n1. Donepezil 10 mg by mouth QHS (unchanged)\n"
                         "STOPPED: Oxybutynin 5 mg BID; diphenhydramine 25 mg QHS PRN sleep\n"
                         "HOLD: lisinopril 20 mg daily; metformin 1000 mg BID until creatinine "
                         "rechecked\n", glossary)
    read = {m.name.lower(): (m.status, bool(m.doubt)) for m in facts.medications}
    assert read["oxybutynin"] == ("stopped", False)
    assert read["diphenhydramine"] == ("stopped", False)
    assert read["lisinopril"] == ("held", False)
    assert read["metformin"] == ("", True)  # "until ..." is its own


def test_warning_signs_under_when_to_call_a_long_lead_in_and_urgent_advice(glossary):
    facts = read_summary(
        "Seizure Action Plan\nWrite down the time.\n\nWhen to call 911\n- The seizure happens in water.\n\n"
        "Plan\nShe must not stop prednisolone suddenly.\n\nShe knows to call the IBD Advice Line, or NHS 24 on 111 out of hours, or 999 in an emergency, if she has:\n"
        "- a temperature of 38C or above\n- dizziness or fainting\n\n"
        "He should seek urgent advice (111 or A&E) for bleeding that will not stop while on apixaban.\n",
        glossary, "dmy")
    signs = " | ".join(w.text for w in facts.warning_signs)
    for sign in ("happens in water", "38C or above", "dizziness or fainting", "bleeding that will not stop"):
        assert sign in signs, signs


def test_a_letter_s_story_after_its_list_of_medicines_is_no_medicine_line(glossary):
    summary = ("Current medication on discharge\nMesalazine (Octasa MR) 4.8 g OD\nAdcal-D3 one tablet BD\n\n"
               "Mrs Lennox is a 41-year-old teacher with ulcerative colitis, well controlled on mesalazine 2.4 g "
               "daily until this spring. She had been taking ibuprofen for three weeks for knee pain.\n\n"
               "She was treated with IV hydrocortisone 100 mg four times a day and prophylactic dalteparin. By day 3 "
               "her stool frequency was down. She received ferric carboxymaltose 1 g IV on 09/06/2025.\n")
    names = [m.name.lower() for m in read_summary(summary, glossary, "dmy").medications]
    assert "hydrocortisone" not in names and "ferric carboxymaltose" not in names


def test_restarted_at_the_same_dose_from_today_is_a_restart(glossary):
    [cilazapril] = _fields("Her blood pressure was 102/58, so her cilazapril was withheld on admission. Her "
                           "cilazapril 2.5 mg once daily has been restarted at the same dose from today.\n", glossary, "dmy")
    assert cilazapril["status"] == "resume"


def test_record_fields_leave_patient_text_and_words_of_a_sentence_stay():
    shown = patient_text("Go to the emergency room if worse. Medicare No: 0000 00000 0. Ward/Bed: 64/12. "
                         "Back to the ward today. HPCSA NO: MP 0931472. Patient (DOB\nxx/xx/1940) of")
    assert shown.split() == "Go to the emergency room if worse. Back to the ward today. Patient of".split()


def test_a_comment_cell_s_reason_keeps_an_initial(glossary):
    [amoxicillin] = _fields("DISCHARGE MEDICATION (TTO):\n| DRUG | DOSE | FREQ | STATUS | COMMENTS |\n"
                            "| AMOXICILLIN | 1 G | BD | NEW | H. PYLORI ERADICATION. RAISES INR |\n", glossary)
    assert amoxicillin["reason"] == "H. PYLORI ERADICATION"


def test_a_clock_time_in_a_taper_s_line_is_no_step_label(glossary):
    meds = _fields("Medications on discharge\n\nDexamethasone tablets - ORAL - NEW. Reducing course:\n"
                   "   02/12 to 05/12/2025: 8 mg twice a day at 08:00 and 12:00\n"
                   "   then 8 mg once a day at 08:00 for 4 days\n   then 4 mg once a day at 08:00 for 4 days\n",
                   glossary, "dmy")
    assert [(m["dose"], m.get("time")) for m in meds] == [("8 mg", "08:00, 12:00"), ("8 mg", "08:00"), ("4 mg", "08:00")]


def test_a_results_table_s_header_is_no_heading_and_its_dates_are_no_appointments(glossary):
    facts = read_summary("PERTINENT RESULTS\n\nDate     Cr    WBC    CRP (mg/L)   Glucose\n08/04    2.9   24.6   310          412\n"
                         "08/24    1.7    9.1    31          143\n\n"
                         "HbA1c 10.8%. Repeat cultures 08/06, 08/08: no growth.\n\nFOLLOW-UP APPOINTMENTS\n"
                         "- Endocrinology - 09/24/2025 at 10:00 AM.\n", glossary)
    assert not any(s.title.startswith("Date") for s in facts.sections)
    assert [f.when for f in facts.follow_ups] == ["2025-09-24"]


# ---- South Asian prescriptions (session 46) ----------------------------------------------


def test_doses_by_time_of_day_give_the_frequency_and_the_form_is_no_part_of_the_name(glossary):
    meds = _fields("MEDICATIONS:\n1. Tab. Ecosprin 75 mg 0-1-0 after food\n2. Tab. Atorva 80 mg 0-0-1\n"
                   "3. Tab. Met XL 25 mg 1-0-0\n4. Tab. Glycomet 500 mg 1-0-1 after food\n"
                   "5. Cap. Amoxicillin 500 mg 1-1-1 x 5 days\n6. Tab. Panadol 500 mg 2-0-2 SOS for fever\n"
                   "7. Tab. Paracetamol 1 g 1-1-1-1\n", glossary, "dmy")
    assert [(m["name"], m.get("frequency"), m.get("count", ""), m.get("route", "")) for m in meds] == [
        ("Ecosprin", "1/day", "", ""), ("Atorva", "bedtime", "", ""), ("Met XL", "morning", "", ""),
        ("Glycomet", "2/day", "", ""), ("Amoxicillin", "3/day", "", ""),
        ("Panadol", "2/day", "2 tablets", ""), ("Paracetamol", "4/day", "", "")]
    assert meds[5]["as_needed"] and meds[5]["reason"] == "fever"  # SOS: only when needed
    # A date or a range is no dose by time of day.
    from desktop_app.core.pipelines.vocabulary import vocabulary
    assert vocabulary().timing_values("seen on 1-1-2025, pain 0-1-2-10 scale") == []


def test_an_insulin_with_a_morning_and_a_night_dose_is_two_doses_of_its_mix(glossary):
    meds = _fields("MEDICATIONS:\n4. Inj. Human Mixtard 30/70 18 units - 0 - 12 units s/c before food (new)\n",
                   glossary, "dmy")
    assert [(m["name"], m["dose"], m["frequency"], m["status"]) for m in meds] == [
        ("Human Mixtard 30/70", "18 units", "morning", "new"),
        ("Human Mixtard 30/70", "12 units", "bedtime", "new")]
    # Tablets by time of day are counts of the tablet's strength, which stays.
    meds = _fields("MEDICATIONS:\n1. Tab. Glycomet 500 mg 2 tabs - 0 - 1 tab after food\n", glossary, "dmy")
    assert [(m["dose"], m["count"], m["frequency"]) for m in meds] == [
        ("500 mg", "2 tablets", "morning"), ("500 mg", "1 tablet", "bedtime")]


def test_a_change_to_tablets_in_hospital_is_no_status_at_discharge(glossary):
    meds = _fields("POST-OPERATIVE COURSE\nIV cefuroxime and metronidazole were given for 48 hours and "
                   "then changed to tablets.\n\nDRUGS ON DISCHARGE\n1. Tab. Metronidazole 400 mg 1-1-1 "
                   "x 5 days\n", glossary, "dmy")
    assert meds == [{"name": "Metronidazole", "dose": "400 mg", "frequency": "3/day",
                     "duration": "5 days"}]


def test_a_reason_said_in_another_sentence_is_no_reason_this(glossary):
    meds = _fields("POST-OPERATIVE COURSE\nThere was a small ooze from the port site on day 2, which "
                   "settled with a fresh dressing; his aspirin is being held for a few days because of "
                   "this.\n\nDRUGS ON DISCHARGE\n1. Tab. Aspirin 75 mg 0-1-0 - HOLD for 5 days because of "
                   "the wound ooze, do not take until 29/09/2025\n", glossary, "dmy")
    assert meds[0]["status"] == "held" and meds[0]["reason"] == "the wound ooze"


def test_a_call_as_a_thing_is_no_warning_sign(glossary):
    facts = read_summary("FUNCTION\nBefore admission he was independent, with a morning call for "
                         "medicines and meals.\n\nWARNING SIGNS\nCall 999 if you have chest pain.\n", glossary)
    assert [w.text for w in facts.warning_signs] == ["Call 999 if you have chest pain."]


def test_ward_and_bed_numbers_are_record_matter():
    assert patient_text("Female Medical Ward, Bed 9") == "Female Medical Ward"
    assert patient_text("Ward: Surgical Ward B, Bed No. 12\nSeen by the dietitian.").strip() == (
        "Seen by the dietitian.")
    assert patient_text("UHID: SGH-2025-004417 IP No.: IP/25/8831").strip() == ""
    # A ward spoken of stays, and so does a surname ("Achebe-Ward").
    for kept in ("He went back to the ward 2 days later.", "Endocrinology, Dr. T. Achebe-Ward - 04/08/2025"):
        assert patient_text(kept) == kept


def test_a_reason_stops_at_a_maximum_and_at_its_bracket(glossary):
    meds = _fields("Medicines at discharge\n2. Tab. Panadol 500 mg 2-0-2 SOS for fever, not more than 8 "
                   "tablets in 24 hours\n7. Syp. Mucaine - STOP while taking Azomax (it lowers the absorption "
                   "of Azomax)\n", glossary, "dmy")
    assert [(m["name"], m["reason"]) for m in meds] == [
        ("Panadol", "fever"), ("Mucaine", "lowers the absorption of Azomax")]
    assert meds[0]["maximum"] == "8 tablets in 24 hours"


def test_a_signature_line_to_fill_in_is_record_matter(glossary):
    facts = read_summary("Come back to the emergency if\nBlack or bloody stools\nFainting\n\n"
                         "House Officer signature: ____________\nDr. F. Qureshi, Consultant Physician\n",
                         glossary)
    assert [w.text for w in facts.warning_signs] == ["Black or bloody stools", "Fainting"]


def test_a_brand_s_strength_without_a_unit_stays_in_its_name(glossary):
    """"Glycomet GP 2" and "Glycomet GP 1" are two strengths: the number is never dropped."""
    meds = _fields("MEDICATIONS:\n1. Tab. Glycomet GP 2 1-0-1 after food (new)\n2. Tab. Dolo 650 SOS for fever\n"
                   "3. Tab. Paracetamol 500 1-0-1\n", glossary, "dmy")
    assert [(m["name"], m.get("dose", ""), m["frequency"]) for m in meds] == [
        ("Glycomet GP 2", "", "2/day"), ("Dolo 650", "", "as needed"), ("Paracetamol 500", "", "2/day")]


def test_doses_by_time_of_day_that_are_not_one_each_are_never_said_as_a_timing_alone(glossary):
    """"1-0-2" is one in the morning and two at night: "twice a day" alone would lose the
    night's second tablet, so without a count the line is quoted whole (doubt)."""
    meds = read_summary("MEDICATIONS:\n1. Tab. Glycomet 500 mg 1-0-2 after food\n2. Tab. Amlong 5 mg ½-0-½\n"
                        "3. Metformin 500 mg 2-0-2\n", glossary, "dmy").medications
    assert [(m.name, m.count, bool(m.doubt)) for m in meds] == [
        ("Glycomet", "", True), ("Amlong", "½ tablet", False), ("Metformin", "", True)]


@pytest.mark.parametrize("line", [
    "1. Oxycodone 5 mg by mouth every 6 hours PRN severe pain, for up to 3 days (12 tablets, no refills)",
    "3. Oxycodone 5 mg by mouth every 6 hours PRN severe pain (#6 tablets, no refills)",
    "Oxycodone | 5 mg PO q6h PRN severe pain | NEW | 8 tablets only",
])
def test_the_number_of_tablets_supplied_is_no_dose(line, glossary):
    """Read as a count, the supply told a patient to take 12 tablets of an opioid at once
    (the handout's "How much: 12 tablets of 5 mg"); and "no refills" is no reason."""
    (medication,) = read_summary("Discharge Medications:\n" + line + "\n", glossary).medications
    assert (medication.dose, medication.count) == ("5 mg", "")
    assert "refill" not in medication.reason
    # A count that is a dose stays one, "only" after it in a line included.
    for dose_line in ("Senna 8.6 mg 2 tablets by mouth at bedtime",
                      "Paracetamol 500 mg take 2 tablets only"):
        (taken,) = read_summary("Discharge Medications:\n" + dose_line + "\n", glossary).medications
        assert taken.count == "2 tablets", dose_line


def test_what_a_medicine_is_needed_for_ends_where_how_long_begins(glossary):
    # The reason had run on into the duration and been dropped ("PRN severe pain, for up
    # to 3 days" gave none), so the answer said no "for severe pain".
    for line, duration in (("Oxycodone 5 mg PO q6h PRN severe pain, for up to 3 days "
                            "(12 tablets, no refills)", "3 days"),
                           ("Oxycodone 5 mg PO q6h PRN severe pain for 5 days", "5 days")):
        [oxycodone] = read_summary("Discharge Medications:\n" + line + "\n", glossary).medications
        assert (oxycodone.reason, oxycodone.duration, oxycodone.as_needed) == (
            "severe pain", duration, True), line


def test_a_second_sentence_of_a_list_line_that_starts_with_a_medicine_is_that_medicine_s(glossary):
    # Ibuprofen was missing from the facts table (and so from the handout's STOP rows),
    # read as a medicine the furosemide line named in passing.
    facts = read_summary("Discharge Medications:\n1. Torsemide 40 mg by mouth once daily (NEW, "
                         "replaces furosemide)\nSTOPPED: Furosemide 40 mg daily (replaced by "
                         "torsemide). Ibuprofen (do not restart).\n", glossary)
    read = {m.name.lower(): m.status for m in facts.medications}
    assert read == {"torsemide": "new", "furosemide": "stopped", "ibuprofen": "stopped"}
    # a name in the same sentence stays a mention
    [aspirin] = read_summary("Discharge Medications:\nAspirin 81 mg daily, do not take with "
                             "ibuprofen.\n", glossary).medications
    assert aspirin.name == "Aspirin"


@pytest.mark.parametrize("listed, name, status", [
    # how long, said by another medicine or by the doctor: no stop
    ("- Senna 8.6 mg PO at night while you need the morphine, until you stop taking morphine\n",
     "senna", ""),
    ("1. Clopidogrel 75 mg tablet - one a day with breakfast. New for the stent. Keep taking it "
     "until the clinic on 04/06/2025 - the cardiologist will tell you when to stop.\n",
     "clopidogrel", "new"),
    # something else came to an end (under a label that gives the status)
    ("NEW:\n- Metronidazole 500 mg PO TID until 04/02/2025\n      For the infection. Finish every "
     "tablet even though the fever has stopped.\n", "metronidazole", "new"),
])
def test_words_of_stopping_that_are_no_status(listed, name, status, glossary):
    facts = read_summary("Discharge Medications:\n" + listed, glossary)
    [medicine] = [m for m in facts.medications if m.name.lower() == name]
    assert medicine.status == status, listed


def test_when_to_leave_a_dose_out_is_no_status(glossary):
    from desktop_app.core.pipelines.summary_facts import _medications_of_line
    from desktop_app.core.pipelines.vocabulary import vocabulary

    line = "Do not give ibuprofen if he is vomiting or not drinking."
    [ibuprofen] = _medications_of_line(line, 0, len(line), "Medicines to give at home", glossary,
                                       vocabulary(), "dmy", in_list=False)
    assert ibuprofen.status == ""  # it had been "stopped", from the lead "Do not give"


def test_a_label_over_a_list_is_not_said_of_a_medicine_the_line_allows_or_only_names(glossary):
    facts = read_summary("Discharge Medications:\n- Clarithromycin 500 mg PO BID for 14 days (NEW)\n\n"
                         "Things to avoid:\nNo aspirin or ibuprofen.\nParacetamol is safe for the "
                         "headache.\nNo alcohol while taking clarithromycin.\n\n"
                         "STOP taking these medications:\n  famotidine 20 mg tablet (started in "
                         "hospital) - no longer needed\n  levetiracetam 500 mg tablet (started in "
                         "hospital) - the course is over\n", glossary)
    read = {m.name.lower(): m.status for m in facts.medications}
    # (under "Things to avoid", now read as what to do and avoid, paracetamol is no row at
    # all; never one the label stops)
    assert read.get("paracetamol", "") == "" and read["clarithromycin"] == "new"
    # "(started in hospital)" says when it began; the list's label says what now
    assert read["famotidine"] == "stopped" and read["levetiracetam"] == "stopped"


def test_what_was_done_to_the_next_medicine_and_a_transfusion_are_not_a_medicine_s(glossary):
    from desktop_app.core.pipelines.summary_facts import _medications_of_line
    from desktop_app.core.pipelines.vocabulary import vocabulary

    # The held medicine's status and the IV of the next clause had run on: pantoprazole
    # read "on hold", "2 units" (of blood), and apixaban "into a vein".
    line = ("We stopped her rivaroxaban, started an IV esomeprazole infusion and gave her three "
            "units of packed red cells.")
    rivaroxaban, esomeprazole = _medications_of_line(line, 0, len(line), "Hospital course",
                                                     glossary, vocabulary(), "mdy", in_list=False)
    assert (rivaroxaban.status, rivaroxaban.route) == ("stopped", "")
    assert esomeprazole.status != "stopped" and esomeprazole.dose == ""


def test_readings_and_the_timing_of_before_are_no_dose_or_timing_of_now(glossary):
    from desktop_app.core.pipelines.summary_facts import _medications_of_line
    from desktop_app.core.pipelines.vocabulary import vocabulary

    # Blood pressures "from 148/82 to 106/64" had become bisoprolol's change of dose, and
    # "should not go back on it" a pause; "REDUCED (was 80 mg twice daily)" had given the
    # reduced dose the old timing, twice the new daily amount.
    line = "He was dizzy on metoprolol, and his standing pressures fell from 152/90 to 102/60."
    [metoprolol] = _medications_of_line(line, 0, len(line), "Hospital course", glossary,
                                        vocabulary(), "mdy", in_list=False)
    assert metoprolol.status == "" and metoprolol.dose == ""
    facts = read_summary(
        "Discharge Medications:\nHis metoprolol 50 mg daily has been stopped and he should not "
        "go back on it.\n- Glipizide 5 mg tablet every morning - REDUCED (was 10 mg twice daily)\n"
        "- Lisinopril 10 mg tablet - HELD (was 10 mg once daily)\n"
        "1. FUROSEMIDE 20mg tablets\n   ONE tablet ORALLY at 08:00 and ONE tablet at 14:00\n"
        "   ** CHANGED ** - was 20mg once daily.\n", glossary)
    read = {m.name.lower(): m for m in facts.medications}
    assert (read["metoprolol"].status, read["metoprolol"].dose) == ("stopped", "50 mg")
    assert (read["glipizide"].frequency, read["glipizide"].status) == ("morning", "changed")
    assert read["lisinopril"].frequency == "1/day"  # a held medicine's timing, to go back to
    assert read["furosemide"].frequency == "2/day"


def test_a_paragraph_in_capitals_wrapped_at_a_fixed_width_is_one_item(glossary):
    # "... UNTIL THE CLINIC SAYS HE IS" / "NO LONGER INFECTIOUS." had become two items, the
    # second saying he is no longer infectious.
    facts = read_summary("ACTIVITY:\nOFF SCHOOL FOR 10 DAYS, NO CONTACT SPORT OR SWIMMING UNTIL THE "
                         "CLINIC SAYS SHE IS\nNO LONGER INFECTIOUS.\n", glossary)
    said = [r.text for r in facts.restrictions]
    assert not any(text.startswith("NO LONGER") for text in said), said
    assert any("SAYS SHE IS NO LONGER INFECTIOUS" in text for text in said), said


def test_a_date_for_something_else_the_line_names_is_not_the_medicine_s_end(glossary):
    # "until Mar 22" of the condoms had become the pill's end date ("NO CHANGE: ... once a
    # day, until 03/22"); the line is quoted whole instead.
    [pill] = read_summary("CONTINUED - NO CHANGE\n- Norethindrone 0.35 mg: 1 tablet PO daily\n"
                          "      Use condoms as well until April 3.\n", glossary).medications
    assert pill.until == "" and pill.doubt and pill.frequency == "1/day"
    [inhaler] = read_summary("Discharge Medications:\n- Salbutamol 100 mcg 2 puffs PRN. Use a "
                             "spacer.\n", glossary).medications
    assert not inhaler.doubt  # no date: nothing to misread


def test_do_not_use_any_more_is_a_stop_and_do_not_give_more_than_is_advice(glossary):
    facts = read_summary("Discharge Medications:\n  1. Aqueous cream - do not use any more: it "
                         "burns the skin.\n  2. Ibuprofen syrup 100 mg/5 ml - 5 ml three times a "
                         "day\n  Do not give more ibuprofen than written.\n", glossary)
    read = {m.name.lower(): m.status for m in facts.medications}
    assert read["aqueous cream"] == "stopped" and read["ibuprofen"] == ""


def test_medicines_indented_under_a_lead_in_are_each_their_own(glossary):
    # Three antibiotics under "H. pylori treatment - all three for 14 days:" had been one
    # item: the first medicine, carrying the others' words; two were missing.
    facts = read_summary("Discharge Medications:\nNEW\nTriple therapy - all three for 10 days, start "
                         "today:\n      amoxicillin 1 g po BID\n      clarithromycin 500 mg po BID\n"
                         "ferrous sulfate (Feosol) 325 mg po every other day\n", glossary)
    read = {m.name.lower(): (m.dose, m.frequency) for m in facts.medications}
    assert read["amoxicillin"] == ("1 g", "2/day")
    assert read["clarithromycin"] == ("500 mg", "2/day")
    assert read["ferrous sulfate"] == ("325 mg", "every other day")


def test_only_if_a_test_result_is_when_to_restart_not_when_needed(glossary):
    facts = read_summary("Discharge Medications:\nHer rivaroxaban 20 mg PO daily remains on hold; she "
                         "is not to take it until 11/02/2025, and only if the CBC that week shows "
                         "her hemoglobin above 9.\n", glossary)
    [rivaroxaban] = facts.medications
    assert rivaroxaban.status == "held" and not rivaroxaban.as_needed
    [glucagon] = read_summary("Discharge Medications:\nGlucagon 1 mg injection, to be given only if "
                              "she is unconscious.\n", glossary).medications
    assert glucagon.as_needed  # a rescue medicine is given when needed


WARFARIN_SUMMARY = """DISCHARGE MEDICATIONS
Warfarin 5 mg PO daily at 6 pm - NEW
Metformin 500 mg twice daily - STOPPED (caused stomach upset; to be reviewed at the diabetes clinic in three months before restarting it)
Progestogen-only pill - CONTINUE

WARFARIN SAFETY
- INR check on 03/14/2025 at the anticoagulation clinic, before the evening dose.
- Do not take aspirin or ibuprofen; they raise the risk of bleeding. Paracetamol is fine for aches or a temperature.
- Tell the pharmacist that you take warfarin before buying any remedy (especially herbal ones or cough mixtures).
- Signs of bleeding: black stools, blood in the urine, nosebleeds that will not stop, or a bad headache. If any of these happen, go to the ED.
"""


def test_a_heading_that_names_one_medicine_s_safety_ends_the_list_of_medicines(glossary):
    # "LITHIUM SAFETY" was read as one more medicine line, so its advice became medicines
    # ("Drink" NEW once a day), its blood test and its danger signs were lost, and the
    # list's last medicine was taken for a label over the lines below it.
    facts = read_summary(WARFARIN_SUMMARY, glossary)
    kinds = {section.title: section.effective_kind for section in facts.sections}
    assert kinds["WARFARIN SAFETY"] == "instructions"
    by_name = {m.name.lower(): m for m in facts.medications}
    assert by_name["progestogen-only pill"].status == "unchanged"
    assert by_name["warfarin"].status == "new" and not by_name["warfarin"].reason
    assert by_name["metformin"].reason == "caused stomach upset"
    assert not by_name["aspirin"].reason and not by_name["ibuprofen"].reason
    assert [f.when for f in facts.follow_ups] == ["2025-03-14"]
    assert not any("INR" in r.text for r in facts.restrictions)
    (sign,) = facts.warning_signs
    assert sign.signs.startswith("black stools") and "go to the ED" in sign.text


def test_a_heading_names_a_medicine_topic_only_after_medicine_words(glossary):
    vocab = vocabulary()
    for title in ("LITHIUM SAFETY", "Warfarin monitoring", "lithium carbonate precautions"):
        assert vocab.names_a_medicine_topic(title), title
    for title in ("PATIENT SAFETY", "Lithium 300 mg safety", "SAFETY", "Prednisone taper"):
        assert not vocab.names_a_medicine_topic(title), title


def test_each_rule_the_medicine_safety_heading_needed_holds_alone(glossary):
    def meds(text):
        return {m.name.lower(): m for m in read_summary(text, glossary).medications}
    # a long bracket's first clause says why; examples in brackets say nothing of why
    assert meds("Discharge Medications:\nMetformin 500 mg BID - STOPPED (caused stomach upset; to be "
                "reviewed at the diabetes clinic in three months before restarting it)\n"
                )["metformin"].reason == "caused stomach upset"
    assert meds("Plan:\nTell your pharmacist you take digoxin before starting cough remedies (especially "
                "ones for a blocked nose).\nDigoxin 125 mcg PO daily - continue\n")["digoxin"].reason == ""
    # what a later sentence says of another medicine is not why these are stopped
    read = meds("Plan:\n- Avoid aspirin, naproxen and other pain relievers of that kind; they thin the "
                "blood. Paracetamol is safe for aches or a temperature.\n")
    assert read["aspirin"].reason == read["naproxen"].reason == ""
    # the last line of a list labels nothing below it
    assert meds("Discharge Medications:\nWarfarin 5 mg daily - NEW\nProgestogen-only pill - CONTINUE\n"
                )["progestogen-only pill"].status == "unchanged"
    # a test of a medicine's level, with a date, is an appointment
    facts = read_summary("Plan:\n- Next digoxin level and potassium on 04/02/2025, before the morning dose.\n",
                         glossary)
    assert [f.when for f in facts.follow_ups] == ["2025-04-02"] and not facts.restrictions
    # "If these happen" points back to the signs listed before it
    facts = read_summary("Plan:\n- Warning signs: fainting, a racing heart, or new chest pain. If these "
                         "happen, go to the ER.\n", glossary)
    assert [s.signs for s in facts.warning_signs] == ["fainting, a racing heart, or new chest pain"]


def test_a_medicine_named_among_the_signs_of_a_get_help_line_is_no_medicine_line(glossary):
    # Under the list, "Go to the ED ... for a headache that does not go away with
    # acetaminophen" gave acetaminophen a reason ("a headache that does not go away"), and
    # its danger signs were lost.
    facts = read_summary("Discharge meds:\n- Paracetamol 1 g PO q6h PRN - CONTINUE.\n- Return to the ED "
                         "if the rash spreads, or for a fever that does not come down with paracetamol.\n",
                         glossary)
    [paracetamol] = facts.medications
    assert paracetamol.reason == "" and paracetamol.status == "unchanged"
    assert [s.signs for s in facts.warning_signs] == [
        "the rash spreads, or for a fever that does not come down with paracetamol"]
    # a sign to act on that says what to do with a medicine stays that medicine's line
    [carbimazole] = read_summary("Discharge meds:\n- Carbimazole 20 mg daily - NEW. If you get a sore "
                                 "throat, stop it and call us.\n", glossary).medications
    assert carbimazole.status == "new"


def test_a_medicine_for_a_future_pregnancy_is_not_new_now(glossary):
    for line in ("In a future pregnancy she should start low-dose aspirin 150 mg at night from 12 weeks.",
                 "If you become pregnant, start folic acid 5 mg daily."):
        later = read_summary("Discharge meds:\n- Labetalol 200 mg BID - NEW\n\nPlan:\n" + line + "\n",
                             glossary).medications[1:]
        assert all(medication.status == "" for medication in later), line


def test_a_release_form_said_in_words_is_the_same_product_as_its_letters(glossary):
    # "Nifedipine extended-release ... increased to 60 mg" and "Nifedipine ER 60 mg - NEW"
    # were two rows: a patient could have taken both.
    facts = read_summary("Plan: Felodipine extended-release was started at 5 mg daily and increased to "
                         "10 mg daily.\n\nDischarge meds:\n- Felodipine ER 10 mg PO once daily - NEW.\n",
                         glossary)
    assert [m.name.lower().split()[0] for m in facts.medications] == ["felodipine"]
    # a slow-release form beside a plain one of another dose stays two products
    facts = read_summary("Discharge meds:\n- Co-careldopa 25/100 mg TDS\n- Co-careldopa CR 50/200 mg at "
                         "night\n", glossary)
    assert len(facts.medications) == 2


def test_a_device_named_after_its_medicine_is_not_that_medicine(glossary):
    # "Insulin pump - HOLD" read as insulin on hold: a handout told a man with type 1
    # diabetes, just treated for ketoacidosis, "ON HOLD: Insulin".
    facts = read_summary("Discharge medications:\n- Insulin detemir 18 units SC at night - NEW\n"
                         "- Insulin pump - HOLD until the pump team has seen him.\n", glossary)
    read = {m.name.lower(): m.status for m in facts.medications}
    assert read == {"insulin detemir": "new", "insulin pump": "held"}
    # and no answer says "Do not take Insulin pump": its line is quoted as written
    from desktop_app.core.pipelines.evidence import Explainer
    assert Explainer(glossary, "").medication(facts.medications[1]) == ""


def test_a_heading_that_ends_a_paragraph_line_over_a_list_starts_its_section(glossary):
    summary = ("He stays on injections for now and keeps the pump off. Discharge insulin plan:\n"
               "- Insulin detemir 18 units SC at night - NEW\n- Insulin lispro 4 units SC with meals - NEW\n")
    kinds = [(s.title, s.effective_kind) for s in read_summary(summary, glossary).sections]
    assert kinds[-1] == ("Discharge insulin plan", "medications")
    # a sentence before a list, and a title after "Dr.", stay where they are
    for summary in ("She was seen today. We advised her to:\n- rest\n",
                    "Follow-up: Call Dr. Okoye's office for:\n- a fever\n"):
        assert not any(s.title in ("We advised her to", "Okoye's office for")
                       for s in read_summary(summary, glossary).sections), summary


def test_a_result_with_a_date_is_no_test_to_come(glossary):
    facts = read_summary("Plan:\nHer potassium was 2.9 on 05/02/2025 and came back to 4.1 with replacement.\n"
                         "Potassium on 05/09/2025 at the practice.\n", glossary)
    assert [f.when for f in facts.follow_ups] == ["2025-05-09"] and not facts.restrictions


def test_a_suspension_s_strength_per_volume_is_no_dose(glossary):
    # "400 mg/57 mg per 5 mL: give 7 mL" had been read as a dose of 5 mL: a child would
    # have had about a third too little.
    [medicine] = read_summary("Discharge medications:\n- Co-amoxiclav suspension 250 mg/62 mg per 5 mL: "
                              "give 6 mL by mouth three times a day. NEW.\n", glossary).medications
    assert (medicine.dose, medicine.count) == ("250/62 mg/5 mL", "6 mL")


def test_tablets_dispensed_are_the_supply_and_no_reason(glossary):
    for line in ("Tramadol 50 mg PO q6h PRN pain - NEW. 14 tablets dispensed, no refills.",
                 "tramadol 50 mg every 6 hours as needed for pain, 14 tablets only, no refills"):
        [tramadol] = read_summary("Discharge medications:\n- " + line + "\n", glossary).medications
        assert (tramadol.dose, tramadol.count, tramadol.reason) == ("50 mg", "", "pain"), line


def test_no_medicines_were_stopped_stops_none_and_another_thing_s_sentence_gives_no_status(glossary):
    facts = read_summary("Medications on discharge: paracetamol 1 g four times a day as needed; senna 15 mg at "
                         "night while taking codeine. His inhalers continue unchanged. No medicines were "
                         "stopped.\n", glossary)
    assert {m.name.lower(): m.status for m in facts.medications} == {"paracetamol": "", "senna": ""}


def test_the_days_left_of_a_course_are_its_duration_not_the_total(glossary):
    [prednisolone] = read_summary("Discharge medications:\nPrednisolone | 30 mg | once daily | NEW - 3 more days "
                                  "then STOP. 7 days total.\n", glossary).medications
    assert prednisolone.duration == "3 days"


def test_a_sentence_of_a_paragraph_that_says_when_to_get_help_is_a_warning_sign(glossary):
    # "If temperature is 38.0 C or higher even once, call the oncology line" was lost from
    # a neutropenic patient's handout: its paragraph began with other advice, and the
    # decimal point ended the "if" clause early.
    facts = read_summary("Infection advice: Wash your hands often and keep away from anyone with a cold. "
                         "If your temperature is 37.8 C or more, ring the haematology ward at once, day or "
                         "night. Eat well-cooked food.\n", glossary)
    assert [s.signs for s in facts.warning_signs] == [
        "your temperature is 37.8 C or more, ring the haematology ward at once, day or night"]
    assert vocabulary().section_kind("Infection advice") == "instructions"
    assert vocabulary().section_kind("Other advice") != "instructions"


def test_advice_lines_under_the_list_are_no_medicines(glossary):
    # "Drink 2.5-3 L of fluid per day" had become a medicine named "Drink", "Sodium less
    # than 2 g per day" one named "Sodium less than", and "It must NOT be left in for more
    # than 3 months" a CHANGED "stent".
    facts = read_summary("Discharge medications:\n- Furosemide 40 mg PO daily - NEW\n- Drink 1.5 L of fluid per day.\n"
                         "- Salt less than 2 g per day.\n- Potassium under 4 g a day.\n\nAbout your catheter:\n"
                         "- The catheter must be changed. It must NOT stay in for more than 12 weeks.\n", glossary)
    assert [m.name for m in facts.medications] == ["Furosemide"]
    assert ("About your catheter", "instructions") in [(s.title, s.effective_kind) for s in facts.sections]


def test_when_to_come_back_below_the_appointments_is_a_warning_sign(glossary):
    facts = read_summary("Follow-up:\n- GP in 1 week.\n- The clinic will call you if the scan needs repeating.\n\n"
                         "COME BACK TO THE ED IF your breathing gets worse or your lips turn blue.\n", glossary)
    assert [f.text for f in facts.follow_ups] == ["- GP in 1 week.",
                                                  "- The clinic will call you if the scan needs repeating."]
    assert [s.signs for s in facts.warning_signs] == ["your breathing gets worse or your lips turn blue"]


def test_a_medicine_named_again_after_then_is_its_next_step(glossary):
    # The 5 mg step of a loading dose was lost: the patient could have stayed on 10 mg
    # twice a day for months.
    facts = read_summary("DISCHARGE MEDICATIONS\n1. Rivaroxaban 15 mg by mouth twice daily with food for 21 days, THEN\n"
                         "   Rivaroxaban 20 mg by mouth once daily with food, for at least 3 months\n", glossary)
    read = [(m.dose, m.frequency, m.step, m.reason) for m in facts.medications]
    assert read == [("15 mg", "2/day", 1, ""), ("20 mg", "1/day", 2, "")]


def test_a_count_alone_in_brackets_after_the_timing_is_the_supply(glossary):
    [codeine] = read_summary("Discharge medications:\n1. Codeine 30 mg by mouth every 6 hours PRN pain, for up to "
                             "2 days (8 tablets)\n", glossary).medications
    assert (codeine.dose, codeine.count) == ("30 mg", "")
    [paracetamol] = read_summary("Discharge medications:\n1. Paracetamol 1 g (2 tablets) four times a day\n",
                                 glossary).medications
    assert paracetamol.count == "2 tablets"  # right after the strength: how many to take


def test_a_night_time_product_is_not_its_pain_reliever(glossary):
    facts = read_summary("Instructions:\nAvoid sleep aids such as Advil PM or Benadryl.\n", glossary)
    assert "advil pm" in [m.name.lower() for m in facts.medications]
    assert "advil" not in [m.name.lower() for m in facts.medications]


def test_a_status_label_over_two_sentences_holds_for_a_medicine_given_only_a_timing(glossary):
    # "STOPPED: Aspirin 81 mg daily. Ibuprofen PRN." had lost ibuprofen and made aspirin
    # "only when needed".
    for line in ("STOPPED: Clopidogrel 75 mg daily. Naproxen PRN.", "STOPPED: Clopidogrel 75 mg daily; Naproxen PRN."):
        facts = read_summary("DISCHARGE MEDICATIONS\n1. Bisoprolol 5 mg daily\n" + line + "\n", glossary)
        read = {m.name.lower(): (m.status, m.as_needed) for m in facts.medications}
        assert read["clopidogrel"] == ("stopped", False) and read["naproxen"] == ("stopped", True), line


def test_a_medicine_that_starts_on_a_later_date_is_quoted_not_started_now(glossary):
    # "Ferrous sulfate 325 mg daily, START 07/01/2025" read NEW with no date: the patient
    # would have taken iron with the antibiotic it blocks.
    [iron] = read_summary("DISCHARGE MEDICATIONS\n5. Ferrous fumarate 210 mg by mouth once daily, START 08/04/2025\n",
                          glossary).medications
    assert iron.doubt
    facts = read_summary("DISCHARGE MEDICATIONS\n1. Apixaban 10 mg twice daily for 7 days (started 07/03/2025), THEN\n"
                         "   Apixaban 5 mg twice daily starting 07/10/2025\n", glossary)
    assert not any(m.doubt for m in facts.medications)  # a later step's start is its step's


def test_a_list_of_names_after_do_not_take_stops_each(glossary):
    facts = read_summary("Instructions:\n- Do not take aspirin, ibuprofen or naproxen unless your doctor approves, as "
                         "these raise the risk of bleeding.\n", glossary)
    assert {m.name: m.status for m in facts.medications} == {
        "aspirin": "stopped", "ibuprofen": "stopped", "naproxen": "stopped"}
    [acetaminophen] = read_summary("DISCHARGE MEDICATIONS\n- Acetaminophen 650 mg every 6 hours (scheduled)\n",
                                   glossary).medications
    assert acetaminophen.reason == ""  # "scheduled" says how, not why


def test_an_insulin_with_a_correction_is_quoted_whole(glossary):
    # "plus a correction of 1 unit for every 2 mmol/L above 8 mmol/L" had lost its "8 mmol/L":
    # no row of dose and timing holds a correction scale, so the line is quoted.
    [aspart] = read_summary("DISCHARGE MEDICATIONS\n- Insulin aspart SC with meals: 1 unit for every 12 g of "
                            "carbohydrate, plus a correction of 1 unit for every 3 mmol/L above 10 mmol/L - NEW\n",
                            glossary).medications
    assert aspart.doubt and "every 12 g" not in aspart.reason


def test_a_least_course_and_a_repeat_in_minutes_are_read_as_written(glossary):
    """"for at least 12 months" is a least, never an end ("for 12 months" would say when
    to stop a stent's antiplatelet); "every 5 minutes ..., up to 3 doses" is how often and
    the most, not "as needed" alone."""
    summary = ("DISCHARGE MEDICATIONS\n"
               "1. Prasugrel 10 mg by mouth once daily for at least 12 months (NEW)\n"
               "2. Glyceryl trinitrate spray 400 micrograms under the tongue every 5 minutes PRN angina, "
               "up to 3 doses (NEW)\n"
               "3. Paracetamol 1 g by mouth up to 4 times a day PRN pain\n")
    facts = read_summary(summary, glossary)
    prasugrel, spray, paracetamol = facts.medications
    assert prasugrel.duration == "at least 12 months"
    assert (spray.frequency, spray.as_needed, spray.maximum) == ("every 5 minutes", True, "3 doses")
    assert spray.reason == "angina"
    assert paracetamol.maximum == ""  # "up to 4 times a day" is how often, not a ceiling


def test_a_status_after_what_a_dose_is_for_is_not_part_of_the_reason(glossary):
    """"p.r.n. knee pain, D/C." had the reason "knee pain, D/C", and the handout said "only
    when needed for knee pain, D/C"."""
    summary = ("DISCHARGE MEDICATIONS:\n"
               "1. Diclofenac 50 mg p.o. t.i.d. p.r.n. hip pain, D/C. It upsets the stomach.\n"
               "2. Cyclizine 50 mg p.o. t.d.s. p.r.n. nausea NEW\n"
               "3. Macrogol 1 sachet daily p.r.n. constipation, which is new\n"
               "4. Salbutamol 2 puffs p.r.n. wheeze, as before\n")
    reasons = {m.name: m.reason for m in read_summary(summary, glossary).medications}
    assert reasons == {"Diclofenac": "hip pain", "Cyclizine": "nausea", "Macrogol": "constipation",
                       "Salbutamol": "wheeze"}


def test_a_heading_that_names_a_medicine_beside_its_section_is_a_heading(glossary):
    """"Daily Weights and Bumetanide Plan" after a list of stopped medicines: it names a
    medicine, so it had read as the list's next line, and its weight plan and sick-day
    rule became that list's (a new medicine then carried "Stopped" as its label)."""
    summary = ("Discharge Medications\n"
               "| Medication | Dose | Status |\n|---|---|---|\n"
               "| Bumetanide | 1 mg daily | NEW |\n"
               "| Empagliflozin | 10 mg daily | NEW |\n\n"
               "Medications Stopped\n\n"
               "| Medication | Why |\n|---|---|\n"
               "| Verapamil | weakens the heart |\n\n"
               "Daily Weights and Bumetanide Plan\n"
               "- Weigh yourself each morning.\n"
               "- Sick days: skip empagliflozin and bumetanide that day.\n\n"
               "Swimming and activity\n"
               "No swimming for 2 weeks.\n")
    facts = read_summary(summary, glossary)
    kinds = {section.title: section.effective_kind for section in facts.sections}
    assert kinds["Daily Weights and Bumetanide Plan"] == "instructions"
    assert kinds["Swimming and activity"] == "restrictions"  # the part the vocabulary knows
    labels = {m.name: (m.status, m.label) for m in facts.medications}
    assert labels["Empagliflozin"] == ("new", "") and labels["Bumetanide"] == ("new", "")
    assert labels["Verapamil"][0] == "stopped"


def test_a_letterhead_and_a_dosing_weight_start_no_section(glossary):
    """"Department of Acute and Elderly Medicine" atop a letter is the hospital's, not a
    list of medicines (its address had shown among "Your medicines"); "Weight used for
    doses: 16 kg" under a medicines heading is the list's own note, not a record field
    that ends the list (the antibiotic's last-dose line had been lost)."""
    letter = ("Department of Renal and Elderly Medicine\nHillcrest Hospital, Mill Lane\n\n"
              "Dear Dr Osei,\n\nMedications on discharge\n- Furosemide 40 mg once daily\n")
    facts = read_summary(letter, glossary)
    assert [s.effective_kind for s in facts.sections][0] != "medications"
    assert [m.name for m in facts.medications] == ["Furosemide"]
    child = ("Medicines to give at home\nWeight used for doses: 16 kg.\n\n"
             "  * Amoxicillin liquid 250 mg/5 mL - give 5 mL by mouth three times a day\n"
             "      NEW - for the ear infection.\n"
             "      Last dose: bedtime on 12/04/2026.\n")
    amoxicillin, = read_summary(child, glossary, "dmy").medications
    assert (amoxicillin.count, amoxicillin.until, amoxicillin.status) == ("5 mL", "2026-04-12", "new")


def test_a_south_asian_treatment_list_a_year_and_a_restart_condition_are_read(glossary):
    """"TREATMENT ADVISED ON DISCHARGE" heads the medicines (none had been read); "x 1 year"
    is how long; "restart ... only if it is above 140/90" is when a held medicine may
    start again, not "only when needed"."""
    summary = ("TREATMENT ADVISED ON DISCHARGE:\n"
               "1. TAB. CLOPIDOGREL 75 MG 0-1-0 after food x 1 year\n"
               "2. TAB. GLICLAZIDE 40 MG - STOPPED - sugars low in ward\n\n"
               "Lisinopril 10mg tablets - ONE tablet once a day - WITHHELD\n\n"
               "Requests for GP\n"
               "1. Please check her blood pressure on 02/04/2026 and restart lisinopril 10mg once a day only\n"
               "   if it is above 140/90.\n")
    facts = read_summary(summary, glossary, "dmy")
    found = {m.name.lower(): m for m in facts.medications}
    assert found["clopidogrel"].duration == "1 year"
    assert found["gliclazide"].status == "stopped"
    assert found["lisinopril"].status == "held" and not found["lisinopril"].as_needed


def test_a_next_step_given_as_a_count_in_words_is_a_step(glossary):
    """"TWO tablets ... for 5 days, then ONE tablet (5mg) each morning ongoing": the ongoing
    dose had been lost, so the handout's only row ended after 5 days (a steroid the
    patient must never stop)."""
    summary = ("Medication on discharge\n"
               "Hydrocortisone 10mg tablets - TWO tablets each morning for 3 days, then ONE tablet "
               "(10mg) each morning ongoing\n")
    first, ongoing = read_summary(summary, glossary, "dmy").medications
    assert (first.count, first.duration) == ("2 tablets", "3 days")
    assert (ongoing.step, ongoing.count, ongoing.frequency) == (2, "1 tablet", "morning")


def test_continued_without_change_is_no_change(glossary):
    """A letter's list under "Continued without change" had read CHANGED (from "change")."""
    summary = ("Medication changes\nStarted: Apixaban 5 mg twice daily\n\n"
               "Continued without change\nRamipril 5 mg once daily\nMetformin 500 mg twice daily\n")
    statuses = {m.name: m.status for m in read_summary(summary, glossary, "dmy").medications}
    assert statuses == {"Apixaban": "new", "Ramipril": "unchanged", "Metformin": "unchanged"}


def test_om_before_a_route_is_in_the_morning_and_a_route_is_no_reason(glossary):
    """"75 mg OM via PEG" had no timing (a caregiver could not tell how often to give a
    stroke-prevention medicine); "PRN via PEG for right shoulder pain" had the reason
    "via PEG for right shoulder pain"."""
    summary = ("Discharge medications (all via PEG)\n"
               "1. Clopidogrel 75 mg OM via PEG - NEW\n"
               "2. Atorvastatin 40 mg ON via PEG - NEW\n"
               "3. Paracetamol 250 mg/5 mL, 20 mL QDS PRN via PEG for right shoulder pain\n")
    clopidogrel, atorvastatin, paracetamol = read_summary(summary, glossary, "dmy").medications
    assert clopidogrel.frequency == "morning" and atorvastatin.frequency == "bedtime"
    assert paracetamol.reason == "right shoulder pain"


def test_a_correction_dose_is_quoted_whole_and_a_long_reason_is_not_cut(glossary):
    """"Add a correction dose based on the pre-meal glucose" over a scale: a row of dose and
    timing cannot hold it, so the line is quoted whole (the scale was lost); a reason of
    more than 80 characters had been cut mid-clause ("... or cannot")."""
    summary = ("DISCHARGE MEDICATIONS\n"
               "- Insulin aspart SC with meals: 1 unit per 12 g carbohydrate\n"
               "      Add a correction dose based on the pre-meal glucose:\n"
               "        10.1 - 14.0 mmol/L    add 1 unit\n"
               "        above 14.0 mmol/L    add 2 units\n"
               "- Glucagon 1 mg injection PRN severe low sugar\n"
               "      For her partner to give if she is unconscious, having a fit, confused and "
               "unable to swallow safely.\n")
    aspart, glucagon = read_summary(summary, glossary, "dmy").medications
    assert aspart.doubt
    assert glucagon.reason.endswith("unable to swallow safely")


def test_what_a_line_says_of_something_else_is_not_the_medicines(glossary):
    """From a proof-read of held-out handouts: "do not stop when feeling well" had read as
    an end ("until feeling well", the opposite); "no alcohol ... for 3 days after the last
    dose" as a 3-day course (of a 14-day one); a signature under "COME TO EMERGENCY AT
    ONCE IF:" as a warning sign, a heading the parser had not known."""
    summary = ("DISCHARGE MEDICATIONS:\n"
               "1. Inh. Umeclidinium 55 mcg 1-0-0 (new, regular - do not stop when feeling well)\n"
               "2. Tab. Metronidazole 400 mg TDS for 14 days\n"
               "   No alcohol while taking metronidazole and for 3 days after the last dose.\n\n"
               "COME TO EMERGENCY AT ONCE IF:\n"
               "- Lips turn bluish\n"
               "- Chest pain\n"
               "Dr. Farzana Rahman\n"
               "Signature & seal\n")
    facts = read_summary(summary, glossary, "dmy")
    inhaler, metronidazole = facts.medications
    assert inhaler.until == ""
    assert metronidazole.duration == "14 days"
    assert [w.text for w in facts.warning_signs] == ["Lips turn bluish", "Chest pain"]


def test_a_status_label_is_every_listed_medicines_after_a_dose_or_a_device(glossary):
    """"Stopped: Seretide 500 Accuhaler, Spiriva HandiHaler, Uniphyllin Continus" read only
    Seretide: after a name with more words, the list's other names were taken as named in
    passing, so the stopped Spiriva never reached the handout (beside its replacement)."""
    summary = ("Medications on discharge\n- Trimbow 2 puffs twice daily (new)\n"
               "Stopped: Symbicort 200/6 Turbohaler, Spiriva Respimat, Uniphyllin Continus\n")
    statuses = {m.name: m.status for m in read_summary(summary, glossary, "dmy").medications}
    assert statuses == {"Trimbow": "new", "Symbicort": "stopped", "Spiriva": "stopped", "Uniphyllin": "stopped"}


def test_a_medicine_after_a_dose_form_s_shorthand_is_named_though_unknown(glossary):
    """"The Tab. Xylofen must be stopped, as it can harm the liver": a name the glossary
    does not know, after "Tab.", is a medicine; its stop was read as the stop of the
    medicine before it ("it" taken for that medicine)."""
    summary = ("She may take Tab. Paracetamol 500 mg SOS for fever, not more than 3 tablets a day. "
               "The Tab. Xylofen she bought must be stopped, as it can harm the liver.\n")
    meds = {m.name: m.status for m in read_summary(summary, glossary).medications}
    assert meds == {"Paracetamol": "", "Xylofen": "stopped"}
    # its reason ends where a clause of its own starts; so does one written before the name
    summary = ("For the joints she has been started on Tab. Colchicine 0.5 mg twice daily. The "
               "Tab. Xylofen must be stopped, as it can harm the liver, and she should not take "
               "any other pain killer.\n")
    reasons = {m.name: m.reason for m in read_summary(summary, glossary).medications}
    assert reasons == {"Colchicine": "the joints", "Xylofen": "as it can harm the liver"}
    # a kind of product named by its form is no medicine
    summary = "- Cold and flu syrups do not help and are not advised for children under 6.\n"
    assert read_summary(summary, glossary).medications == []
    # the story's sentences do not end at the shorthand's full stop
    from desktop_app.core.pipelines.summary_facts import sentences_of
    assert sentences_of("Before coming she had taken Tab. Xylofen for the fever. She was treated "
                        "with Inj. Ceftriaxone.") == ["Before coming she had taken Tab. Xylofen for the fever.",
                                                      "She was treated with Inj. Ceftriaxone."]


def test_a_space_laid_table_row_wrapped_onto_a_second_line_is_read_column_by_column(glossary):
    """A row's comments and duration cells go on under their columns on the next line:
    "Pain not eased by paracetamol" + "and ibuprofen" is one reason, and "7 days, last dose"
    + "17/06/2026" a course and its last day, not words of the comments."""
    summary = ("Medication on discharge\n"
               "Drug               Dose       Route  Freq          Duration               Status     Comments\n"
               "Codeine phosphate  30 mg      PO     QDS PRN       5 days                 NEW        Pain not eased by paracetamol\n"
               "                                                                                     and ibuprofen. Max 4 doses a day.\n"
               "Enoxaparin         40 mg      SC     OD 18:00      7 days, last dose      NEW        Clot prevention after surgery.\n"
               "                                                   17/06/2026                        Sharps bin supplied.\n")
    read = {m.name: (m.duration, m.until, m.reason) for m in read_summary(summary, glossary).medications}
    assert read == {"Codeine": ("5 days", "", "Pain not eased by paracetamol and ibuprofen"),
                    "Enoxaparin": ("7 days", "2026-06-17", "Clot prevention after surgery")}


def test_a_table_row_names_a_medicine_the_glossary_lacks_whatever_its_status(glossary):
    """"Zolvexa | 1 tablet | ... | WITHHELD": a name no glossary entry or stem knows, in a
    table's name column, is the row's medicine (it was read only when the row said NEW), and
    the column that says when it may start again gives its date."""
    piped = ("Medication on discharge\n| Drug | Dose | Route | Freq | Duration | Status | Comments |\n"
             "|---|---|---|---|---|---|---|\n| Zolvexa | 1 tablet | PO | OD | 4 weeks | HELD | Clot risk |\n")
    spaced = ("Date of discharge: 17/06/2026\n\nMedication on discharge\n"
              "Drug               Dose       Route  Freq          Duration / stop        Status     Comments\n"
              "Zolvexa            1 tablet   PO     OD            4 weeks - may restart  WITHHELD   Clot risk after\n"
              "                                                   from 06/07/2026                   surgery. Use condoms\n"
              "                                                                                     until restarted.\n")
    assert [(m.name, m.status, m.dose) for m in read_summary(piped, glossary).medications] == [
        ("Zolvexa", "held", "1 tablet")]
    assert [(m.name, m.status, m.until, m.reason) for m in read_summary(spaced, glossary).medications] == [
        ("Zolvexa", "held", "2026-07-06", "Clot risk after surgery")]



def test_a_numbered_space_laid_table_with_wrapped_cells_is_read_row_by_row(glossary):
    """A prescription table numbered "S.No" whose remarks and durations wrap onto a second
    line: each row's course, its date to restart, and an unknown brand held till a date
    (it had been read into the row above it)."""
    summary = ("Discharge date: 12/05/2025\n\nTREATMENT ADVISED ON DISCHARGE:\n"
               "S.No  Drug                          Dose     Frequency    Duration          Remarks\n"
               "1.    TAB. AMOXYCLAV 625 MG          1 tab    1-0-1        5 days            after food\n"
               "2.    CAP. SILODOSIN 8 MG            1 cap    0-0-1 (HS)   till DJ stent     for stent pain\n"
               "                                                           removal\n"
               "3.    TAB. METFORMIN 500 MG          1 tab    1-0-1        long term         restart from\n"
               "                                                                             15/05/2025 morning\n"
               "4.    TAB. ROSUVAS 10 MG             1 tab    0-0-1        continue          no change\n"
               "5.    TAB. DELOPRIN 75 MG            1 tab    0-1-0        -                 HOLD till 17/05/2025\n")
    read = {m.name.lower(): (m.status, m.duration, m.until) for m in read_summary(summary, glossary).medications}
    assert read["amoxyclav"][1] == "5 days"
    assert read["silodosin"][2] == "DJ stent removal"
    assert read["metformin"] == ("resume", "", "2025-05-15")
    assert read["deloprin"] == ("held", "", "2025-05-17")
    assert not read["rosuvas"][2]


def test_a_table_s_name_cell_is_the_medicine_s_whole_name(glossary):
    """"SYP. POTASSIUM MAGNESIUM CITRATE" is not magnesium citrate (a laxative): the name cell's
    words go together; a brand after "Tab." with its generic name in brackets takes the
    generic's entry."""
    summary = ("Discharge date: 12/05/2025\n\nTREATMENT ADVISED ON DISCHARGE:\n"
               "S.No  Drug                                   Dose     Frequency    Duration          Remarks\n"
               "1.    SYP. POTASSIUM MAGNESIUM CITRATE        10 ml    1-1-1        3 months          in water\n"
               "2.    TAB. CEFUROXIME 500 MG                  1 tab    1-0-1        5 days            after food\n\n"
               "ADVICE:\nTab. Ecosprin (Aspirin) 75 mg OD - WITHHOLD till review.\n")
    read = {m.name: m.key for m in read_summary(summary, glossary).medications}
    assert read["POTASSIUM MAGNESIUM CITRATE"] == "potassium magnesium citrate"
    assert "CEFUROXIME" in read  # a name cell with nothing before the name stays as read
    assert read["Ecosprin"] == "lumen:aspirin"


def test_stop_after_the_last_dose_of_another_medicine_is_an_end_not_a_stop(glossary):
    """"Famotidine ... NEW. Stop after the last prednisolone dose on 17/02/2025" is new until
    that day (it had read STOP); "STOP after this admission" is still a stop."""
    new = read_summary("DISCHARGE MEDICATIONS\n3. Famotidine 20 mg by mouth once a day to protect the "
                       "stomach. NEW. Stop after the last prednisolone dose on 17/02/2025.\n", glossary)
    assert [(m.status, m.until) for m in new.medications] == [("new", "2025-02-17")]
    stop = read_summary("DISCHARGE MEDICATIONS\n3. Ibuprofen 400 mg TDS - STOP after this admission.\n", glossary)
    assert [m.status for m in stop.medications] == ["stopped"]



def test_doses_by_time_of_day_step_down_and_the_course_ends(glossary):
    """"6-0-0 ... then 4-0-0 ... then 2-0-0 ... then stop" was read as one step of 4 tablets
    (a morning count over 4 was no dose by time of day); "1-1-1 x 5 days, then SOS" as
    as-needed from the start."""
    meds = _fields("DISCHARGE MEDICATIONS:\n"
                   "1. Tab. Prednisolone 5 mg 6-0-0 after breakfast x 3 days, then 4-0-0 x 3 days, "
                   "then 2-0-0 x 3 days then stop\n"
                   "2. Neb. Salbutamol 2.5 mg 1-1-1 x 5 days, then SOS\n", glossary, "dmy")
    steps = [(m["count"], m.get("dose"), m["frequency"], m["duration"], m.get("course_ends", False))
             for m in meds if m["name"] == "Prednisolone"]
    assert steps == [("6 tablets", "5 mg", "morning", "3 days", False), ("4 tablets", "5 mg", "morning", "3 days", False),
                     ("2 tablets", "5 mg", "morning", "3 days", True)]
    regular, as_needed = [m for m in meds if "Salbutamol" in m["name"]]
    assert (regular["frequency"], regular.get("as_needed", False), regular["duration"]) == ("3/day", False, "5 days")
    assert as_needed["as_needed"] is True


def test_a_liquid_s_volume_taken_with_what_it_holds(glossary):
    """The first dose under "Prednisolone oral liquid 5 mg/mL - weaning course:" was read
    as the strength alone, the later ones as a strength of "3 mL"; "5 mg/5 mL - 2.5 mL to
    5 mL" kept 2.5 mL only."""
    meds = _fields("MEDICINES AT HOME\n2. Prednisolone oral liquid 5 mg/mL (steroid) - weaning course:\n"
                   "   - 3 mL (15 mg) by mouth twice a day up to and including 07/02/2025\n"
                   "   - then 3 mL (15 mg) once a day in the morning for 5 days\n"
                   "   - then 1.5 mL (7.5 mg) once a day in the morning for 5 days, then stop.\n"
                   "3. OxyNorm (oxycodone) liquid 5 mg/5 mL - 2.5 mL to 5 mL ORAL every 2 hours WHEN REQUIRED\n",
                   glossary, "dmy")
    assert [(m["dose"], m["count"], m["step"]) for m in meds if m["name"] == "Prednisolone"] == [
        ("5 mg/mL", "3 mL (15 mg)", 1), ("5 mg/mL", "3 mL (15 mg)", 2), ("5 mg/mL", "1.5 mL (7.5 mg)", 3)]
    oxynorm, = [m for m in meds if m["name"] == "OxyNorm"]
    assert (oxynorm["dose"], oxynorm["count"]) == ("5 mg/5 mL", "2.5-5 mL")


def test_the_water_a_dose_is_mixed_in_is_no_dose_and_a_whole_course_is_no_length_left(glossary):
    """"ONE sachet twice a day in 125 mL water" read as a sachet of 125 mL; "Completes 7
    days in total (IV + oral)" under a last-dose date read as 7 more days."""
    summary = ("DISCHARGE MEDICATIONS\n"
               "1. Laxido (macrogol) sachets - ONE sachet ORAL twice a day in 125 mL water - NEW\n"
               "2. ORS (Electral powder) 1 sachet in 1 litre of boiled and cooled water, to be taken orally, "
               "sip through the day, once daily x 5 days.\n"
               "3. Co-amoxiclav 625 mg PO TDS, last dose 14/06/2026. Completes 7 days in total (IV + oral).\n")
    laxido, ors, coamoxiclav = read_summary(summary, glossary, "dmy").medications
    assert (laxido.dose, laxido.count) == ("1 sachet", "")
    assert how_taken(laxido, summary, vocabulary()) == ["in 125 mL water"]
    assert how_taken(ors, summary, vocabulary()) == ["in 1 litre of boiled and cooled water", "sip through the day"]
    assert (ors.dose, ors.duration) == ("1 sachet", "5 days")
    assert (coamoxiclav.duration, coamoxiclav.until) == ("", "2026-06-14")


def test_what_medicines_to_avoid_is_read_from_the_course_and_from_a_medicine_s_sentence(glossary):
    """"Avoid NSAIDs." in the course's problem list and "..., and she should not take any
    other pain killer or herbal medicine without asking a doctor" after a stopped medicine
    reached only the care team's part of the handout."""
    summary = ("HOSPITAL COURSE:\n5. AKI on CKD 3b: creatinine back to 1.6 with fluids. Avoid NSAIDs.\n"
               "NSAIDs were given once in the ED.\n\n"
               "PLAN:\nThe Tab. Nimesulide must be stopped, as it can harm the liver, and she should not take "
               "any other pain killer or herbal medicine without asking a doctor.\n")
    facts = read_summary(summary, glossary)
    assert [(r.kind, r.text) for r in facts.restrictions] == [
        ("medicines", "Avoid NSAIDs"),
        ("medicines", "she should not take any other pain killer or herbal medicine without asking a doctor")]
    assert [m.status for m in facts.medications] == ["stopped"]
    check_offsets(summary, facts)


def test_a_numbered_diagnosis_with_a_dash_is_one_of_the_list_not_a_heading(glossary):
    """"2. TYPE 2 DM - UNCONTROLLED (HBA1C 11.4%), NO DKA" under "DIAGNOSES:" was read as a
    problem's heading, so the handout's story lost the diagnosis's name."""
    summary = ("DIAGNOSES:\n1. PULMONARY TB, NEW CASE, BACTERIOLOGICALLY CONFIRMED\n"
               "2. TYPE 2 DM - UNCONTROLLED (HBA1C 11.4%), NO DKA\n3. HYPONATRAEMIA (NA 127) - RESOLVING\n\n"
               "CLINICAL COURSE:\n1. AKI - creatinine back to baseline with fluids.\n")
    facts = read_summary(summary, glossary)
    assert [s.title for s in facts.sections if s.effective_kind == "diagnoses"] == ["DIAGNOSES"]
    # (a problem's story under the diagnoses' heading is still a problem of its own)
    storied = read_summary("DIAGNOSES:\n1. Febrile neutropenia - cultures negative.\n5. Chemotherapy plan - Discussed "
                           "with Dr. Achterberg. Cycle 3 delayed by one week.\n", glossary)
    assert "Chemotherapy plan" in [s.title for s in storied.sections]
    assert "AKI" in [s.title for s in facts.sections]  # a problem of the course still is one


def test_a_treatment_dose_then_a_prevention_dose_until_the_clinic_says(glossary):
    """"Bactrim DS (800/160 mg) 2 tabs PO TID through 6/17/2025, then 1 DS tab PO daily for
    PJP prophylaxis until ID clinic says to stop" was one step (a count with "DS" before its
    form was no dose), "prophylaxis" the treatment dose's reason, and the line an appointment."""
    summary = ("#PJP pneumonia\n"
               "  - Bactrim DS (800/160 mg) 2 tabs PO TID through 6/17/2025, then 1 DS tab PO daily\n"
               "    for PJP prophylaxis until ID clinic says to stop\n")
    facts = read_summary(summary, glossary)
    treatment, prevention = [m for m in facts.medications if m.name.startswith("Bactrim")]
    assert (treatment.count, treatment.frequency, treatment.until) == ("2 tablets", "3/day", "2025-06-17")
    assert (prevention.count, prevention.frequency, prevention.step) == ("1 tablet", "1/day", 2)
    assert "prophylaxis" not in treatment.reason and "prophylaxis" in prevention.reason
    assert facts.follow_ups == []


def test_what_to_avoid_under_the_medicines_is_what_to_do_and_avoid(glossary):
    """"What to avoid" under the discharge medicines was read as more of the list, so "No
    alcohol while taking metronidazole and for 3 days after the last dose." was merged into
    the metronidazole row's mentions and shown in no part for the patient."""
    facts = read_summary("Discharge medications\nmetronidazole 500 mg po QID for 14 days\n\n"
                         "What to avoid\nNo alcohol while taking metronidazole and for 3 days after the last dose.\n"
                         "No heavy lifting (over 10 lb) for 2 weeks.\n", glossary)
    assert [s.effective_kind for s in facts.sections if s.title == "What to avoid"] == ["restrictions"]
    assert any("No alcohol while taking metronidazole" in r.text for r in facts.restrictions)
