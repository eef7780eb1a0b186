"""Plain words (issue #31): the lay lexicon, the patient as "you", record shorthand, shorter
sentences, and the fact check that keeps a line as written where plain words would lose
anything.  All without a model, on the real lexicon and glossary."""

import re
from pathlib import Path

import pytest

from desktop_app.core.pipelines import plain
from desktop_app.core.pipelines.evidence import Explainer
from desktop_app.core.pipelines.plain import (Reader, lay_words, lexicon, list_items, lost_facts,
                                              negations, read_lexicon, shorter_sentences)
from desktop_app.core.pipelines.grounding import missing_facts, record_shorthand, unsupported_facts
from desktop_app.core.pipelines.simplify import handout_without_model

DATA = Path(__file__).parent / "data"
TEST_SUMMARIES = sorted((DATA / "layouts").glob("*.txt")) + sorted((DATA / "summaries").glob("*.txt"))


# ---- the lexicon, as data ---------------------------------------------------------------


def test_every_entry_keeps_the_numbers_and_negations_of_its_clinical_words():
    words = lexicon()
    assert len(words.plain) >= 300
    for form, said in words.plain.items():
        assert re.findall(r"\d+", form) == re.findall(r"\d+", said) or \
            set(re.findall(r"\d+", form)) <= set(re.findall(r"\d+", said)), form
        assert negations(said) >= negations(form), form
        assert said.strip() and said != form, form


def test_the_lexicon_leaves_the_glossary_s_shorthand_and_the_dose_words_alone(glossary):
    """One concept, one place: the glossary writes out its abbreviations, the summary
    vocabulary its timings and routes; the lexicon repeats neither."""
    from desktop_app.core.pipelines.vocabulary import vocabulary

    vocab = vocabulary()
    abbreviations = {a for entry in glossary.entries for a in entry.abbreviations}
    for form in lexicon().plain:
        assert form not in abbreviations, form
        assert not vocab.frequency.fullmatch(form) and not vocab.route.fullmatch(form), form


def test_a_form_given_twice_is_refused(tmp_path):
    path = tmp_path / "plain_words.toml"
    path.write_text('version = 1\n[actions]\n"voided" = "passed urine"\n'
                    '[record]\n"voided" = "emptied"\n', encoding="utf-8")
    from desktop_app.core.errors import ConfigError

    with pytest.raises(ConfigError, match="'voided'"):
        read_lexicon(path)


@pytest.mark.parametrize("path", TEST_SUMMARIES, ids=lambda p: p.stem)
def test_the_lexicon_keeps_every_fact_of_every_line_of_the_test_summaries(path, glossary):
    """Each line with its clinical words swapped, without the Explainer's safety net: no
    dose, timing, date, medicine, number or negation may go (a glossary term may give way
    to its plain words, which lay_words already allows for)."""
    for line in path.read_text(encoding="utf-8").splitlines():
        swapped, replaced = lay_words(line, glossary)
        lost = [f for f in lost_facts(line, swapped, glossary, replaced)
                if not f.startswith("term ")]
        assert lost == [], (line, swapped)


def test_clinical_words_become_the_patient_s_words(glossary):
    swapped, replaced = lay_words("Ambulating 150 ft, tolerating a regular diet, voiding "
                                  "without difficulty; afebrile.", glossary)
    assert swapped.startswith("Walking") and "tolerating" not in swapped and "voiding" not in swapped
    assert "150" in swapped and {"Ambulating", "voiding"} <= set(replaced)
    # A word inside a longer glossary term stays, so the term (and its definition) do too.
    kept, _ = lay_words("Acute kidney injury, resolved.", glossary)
    assert kept.startswith("Acute kidney injury")


# ---- to the reader ---------------------------------------------------------------------

LETTER = ("Re: Mrs Ada Okafor\nMrs Okafor is a 72-year-old woman admitted with heart failure. "
          "She was treated with IV furosemide and she improved. Her daughter will stay with her. "
          "She should not drive until reviewed. She should weigh herself daily.")


@pytest.mark.parametrize("written, turned", [
    ("She should not drive until 04/16/2025.", "Do not drive until 04/16/2025."),
    ("She should weigh herself daily.", "Weigh yourself daily."),
    ("She was treated with IV furosemide and she improved.",
     "You were treated with IV furosemide and you improved."),
    ("Mrs Okafor is a 72-year-old woman.", "You are a 72-year-old woman."),
    ("Mrs Okafor's ankles were swollen.", "Your ankles were swollen."),
    ("The patient denies chest pain and needs bloods in 1 week.",
     "You deny chest pain and need bloods in 1 week."),
    ("We started her on bisoprolol; her breathing settled.",
     "We started you on bisoprolol; your breathing settled."),
    # Every verb of the patient's, after "or", "and" or a comma; nouns and another
    # subject's verb stay.
    ("Ring 999 if she becomes very sleepy, has a temperature or shivers, or has a fall and "
     "hits her head.", "Ring 999 if you become very sleepy, have a temperature or shivers, "
     "or have a fall and hit your head."),
    ("She reports cough, falls and faints in the morning.",
     "You report cough, falls and faints in the morning."),
    ("She says her scar, which is healing, is dry.", "You say your scar, which is healing, is dry."),
    # Anyone else a pronoun could stand for: the sentence stays as written.
    ("Her daughter will stay with her.", "Her daughter will stay with her."),
    ("She will see Dr Shah, who will check her kidneys.",
     "She will see Dr Shah, who will check her kidneys."),
])
def test_the_patient_becomes_you(written, turned):
    assert Reader.of(LETTER).turn(written) == turned


def test_the_patient_s_name_comes_only_from_the_line_that_names_the_patient():
    summary = ("Patient: OKONKWO, Bernard    NHS No: 000 000 0000\n"
               "Consultant: Mr Fintan Gallagher    GP: Dr Ruth Penn\n"
               "He was admitted with a bowel blockage. He had surgery. His wound has healed. "
               "Mr Gallagher will see him in clinic. Mr Gallagher is pleased with his progress.")
    reader = Reader.of(summary)
    assert reader.names == ("OKONKWO",) and reader.pronouns[0] == "he"
    assert reader.turn("Mr Gallagher is pleased.") == "Mr Gallagher is pleased."
    assert reader.turn("No driving for 2 weeks.") == "No driving for 2 weeks."
    assert reader.turn("Mr Okonkwo is to rest.") == "You are to rest."
    assert reader.turn("OKONKWO is to rest.") == "You are to rest."
    assert reader.turn("We told Okonkwo to rest.") == "We told you to rest."
    assert reader.turn("Mr Bernard Okonkwo's leg healed.") == "Your leg healed."


@pytest.mark.parametrize("summary, child", [
    ("Name: Mateo    Age: 7 yrs\nAsthma attack.", True),
    ("A 7-month-old girl with a urine infection.", True),
    ("Age: 74\nHer grandchild is a newborn, so avoid contact until the rash crusts.", False),
    ("Past surgical history: appendectomy aged 12. Now 54 y/o.", True),  # the first age written
    ("Riverside Children's Hospital\nAsthma.", True),
    ("A 61-year-old man with chest pain, for 3 days.", False),
])
def test_a_child_is_told_from_the_patient_s_age(summary, child):
    assert plain.is_child(summary) is child


def test_a_child_s_summary_and_an_unclear_patient_are_not_turned():
    child = "Jordan is a 6-year-old boy admitted with asthma. He should use his inhaler."
    assert Reader.of(child).turn("He should use his inhaler.") == "He should use his inhaler."
    # She and he as often: whose pronoun it is cannot be told.
    mixed = "She says he is her husband. He drove her in. She has pain."
    assert not Reader.of(mixed).pronouns


def test_words_for_the_family_doctor_are_not_turned_to_the_patient(glossary):
    explainer = Explainer(glossary, LETTER)
    request = "Please check her potassium and creatinine in 1 week."
    assert "her potassium" in explainer.explain(request, to_reader=False)
    assert "your potassium" in explainer.explain(request)


# ---- record shorthand and shorter sentences ----------------------------------------------


def test_record_shorthand_and_semicolons():
    assert record_shorthand("Dispensed #20, no refills. Take 1 tab at night.") == \
        "Dispensed 20 tablets, no refills. Take 1 tab at night."
    assert record_shorthand("Qty #14 caps") == "Qty 14 caps"
    assert record_shorthand("Oxycodone 5 mg, disp #12") == "Oxycodone 5 mg, disp a supply of 12"
    assert record_shorthand("Transferred to bed #4 with a #NOF") == \
        "Transferred to bed #4 with a #NOF"  # a bed number, and UK shorthand for a fracture
    assert shorter_sentences("Walked with physio; stairs done (with rail; supervised).") == \
        "Walked with physio. stairs done (with rail; supervised)."
    # a label heading the line is said of every part of it: the line stays whole
    assert shorter_sentences("STOPPED: Sertraline 150 mg daily; alprazolam 0.5 mg PRN") == \
        "STOPPED: Sertraline 150 mg daily; alprazolam 0.5 mg PRN"


def test_a_count_written_out_is_supported_by_the_line_it_came_from():
    """"#8" written out as "8 tablets" is the summary's own count, not a fact to check; a
    count the summary does not give is still flagged."""
    summary = ("PRESCRIPTIONS\nRx: Oxycodone-acetaminophen 5/325 mg 1 tab PO q6h PRN severe pain. "
               "#8, no refills\nRx: Ondansetron 4 mg PO q8h PRN nausea\n")
    shown = "Oxycodone-acetaminophen 5/325 mg 1 tab by mouth. 8 tablets, no refills."
    assert unsupported_facts(shown, summary, None) == []
    wrong = unsupported_facts(shown.replace("8 tablets", "12 tablets"), summary, None)
    assert [f.text for f in wrong] == ["12 tablets"]
    # The same item wrapped onto a second line, as summaries are typed (the evidence line
    # joins the two, so its count is written out from both).
    wrapped = summary.replace("PRN severe pain. ", "PRN severe pain\nnot relieved by ibuprofen. ")
    assert unsupported_facts(shown, wrapped, None) == []
    assert [f.text for f in unsupported_facts(shown.replace("8 tablets", "12 tablets"), wrapped,
                                              None)] == ["12 tablets"]


def test_lumens_own_reading_of_a_medicine_line_is_supported_and_a_wrong_fact_is_not():
    """What the facts parser reads from a line, written as Lumen writes it (a maximum per
    day, "4-hourly" as "every 4 hours", a wrapped item joined, a count written out), is the
    summary's own; a dose given to the wrong medicine, or a maximum it does not say, is
    still flagged."""
    summary = ("DISCHARGE MEDICATIONS:\n"
               "- Paracetamol 1000 mg PO q8h x 5 days (NEW). Max 3000 mg/24 hrs from all sources\n"
               "- Oxycodone IR 5 mg tab, 1 tab oral 4-hourly PRN severe pain not relieved by\n"
               "  paracetamol (NEW). Disp #10, no refills\n")
    shown = ("Take paracetamol 1000 mg by mouth every 8 hours for 5 days. Take no more than "
             "3000 mg in 24 hours. Oxycodone 5 mg, 1 tab by mouth every 4 hours only when needed "
             "for severe pain not relieved by paracetamol. 10 tablets, no refills.")
    assert unsupported_facts(shown, summary, None) == []
    wrong = unsupported_facts(shown.replace("3000 mg in", "4000 mg in")
                              .replace("Oxycodone 5 mg", "Oxycodone 1000 mg"), summary, None)
    assert sorted(f.text for f in wrong) == ["4000 mg", "Oxycodone 1000 mg"]


@pytest.mark.parametrize("sentence, lead, items", [
    ("Go back to the emergency department right away for a temperature of 38.5 C or more, "
     "new chest pain, a cough with blood in it, or feeling faint when you stand.",
     "Go back to the emergency department right away for",
     ["a temperature of 38.5 C or more", "new chest pain", "a cough with blood in it",
      "feeling faint when you stand"]),
    ("Phone the ward or call 999 if he stops feeding, has fewer than 4 wet nappies a day, "
     "looks blue around the lips (not just the hands), or is hard to wake.",
     "Phone the ward or call 999 if",
     ["he stops feeding", "has fewer than 4 wet nappies a day",
      "looks blue around the lips (not just the hands)", "is hard to wake"]),
    ("Call the surgical team for: a wound that opens, pus or a bad smell from the wound, "
     "a fever, or pain that keeps getting worse.", "Call the surgical team for",
     ["a wound that opens", "pus or a bad smell from the wound", "a fever",
      "pain that keeps getting worse"]),
])
def test_a_long_sentence_listing_what_to_watch_for_becomes_a_list(sentence, lead, items):
    assert list_items(sentence) == (lead, items)
    # Nothing of the sentence is lost but its commas, its last "or" and its full stop.
    said = re.sub(r"[,.:]|\bor\b", " ", f"{lead} {' '.join(items)}").split()
    assert said == re.sub(r"[,.:]|\bor\b", " ", sentence).split()


@pytest.mark.parametrize("sentence", [
    "Return for fever.",  # short
    # What comes after "or" ends in a place: does "from the wound" belong to "redness" too?
    "Call or come back for a fever over 38 C, new pain in the leg, vomiting that will not "
    "stop, or redness, swelling or fluid from the wound.",
    # A list inside the list.
    "Call the heart clinic if your weight goes up by 2 kg in a week, or if you are more "
    "breathless, need more pillows at night, or have more swelling.",
    # The list comes before what to do.
    "If your sugar is over 20 mmol/L, you are sick, or you cannot eat, call the diabetes "
    "nurse or go to the emergency department.",
    # Words that describe one noun ("a racing" is no item), with or without the last comma.
    "Call 999 at once if you have chest pain, a racing, pounding or fluttering heartbeat with "
    "breathlessness, or a faint.",
    "Call 999 at once if you have chest pain, a racing, pounding, or fluttering heartbeat "
    "with breathlessness, or a faint.",
    # Describing words joined by "or": "cold, pale or blue" are one item's.
    "Come back to the emergency department for pain the tablets do not help, toes that are "
    "cold, pale or blue, a cast that feels too tight, or a fever over 38 C.",
    # The conditions come first and the list is of what to do.
    "If you have thoughts of harming yourself, call the crisis line, call 999, or go to the "
    "nearest emergency department.",
    # A lead that is a heading, and a list of more than one sentence.
    "Salt: no more than 2 g a day. No added salt, so leave out tinned soups, cured meats, "
    "ready meals, and takeaways.",
    # Two things only.
    "Return to the emergency department if the swelling gets much worse over the next two "
    "days or the pain stops you from sleeping at night.",
])
def test_a_list_that_cannot_be_read_without_doubt_stays_a_sentence(sentence):
    assert list_items(sentence) is None


def test_the_handout_shows_a_long_warning_as_a_list_under_its_lead(glossary, tmp_path):
    summary = ("Diagnosis: Pneumonia of the right lower lobe.\n\n"
               "Discharge Medications:\n1. Amoxicillin 500 mg PO TID x 5 days\n\n"
               "Return Precautions:\n- Return to the emergency department for a fever over "
               "38.5 C, breathing that gets harder, chest pain, coughing up blood, or feeling "
               "confused or very sleepy.\n")
    handout = handout_without_model(summary, glossary)
    text = handout.to_text()
    assert "- Return to the emergency department for:\n  - a fever over 38.5 C\n" in text, text
    assert "  - feeling confused or very sleepy\n" in text, text
    html = handout.to_html()
    assert "for:<ul><li>a fever over 38.5 C</li>" in html
    assert missing_facts(summary, text, glossary) == []


# ---- the check that keeps a line as written ------------------------------------------------


def test_a_rendering_that_loses_a_fact_is_not_shown(glossary, monkeypatch, tmp_path):
    """A lexicon with a bad entry (it drops a negation and a number): the Explainer shows
    the line explained instead, and says which facts plain words would have lost."""
    path = tmp_path / "plain_words.toml"
    path.write_text('version = 1\n[findings]\n"no fever" = "a fever"\n"x3" = "a few times"\n'
                    '"afebrile" = "fever-free"\n', encoding="utf-8")
    monkeypatch.setattr(plain, "lexicon", lambda: read_lexicon(path))
    explainer = Explainer(glossary, "")
    assert explainer.explain("No fever at home.") == "No fever at home."
    assert "3" in explainer.explain("Vomited x3 overnight.")
    assert explainer.plain_refused == [["a negation"], ["number '3'"]]
    assert explainer.explain("Afebrile overnight.").startswith("Fever-free overnight")
    assert explainer.plain_kept == 1
    assert lost_facts("Furosemide 40 mg daily.", "Furosemide daily.", glossary) == \
        ["quantity '40 mg'", "number '40'"]


def test_plain_words_can_be_turned_off(glossary):
    line = "Ambulating with a walker; afebrile."
    assert "Walking" in Explainer(glossary, "").explain(line)
    assert "Ambulating" in Explainer(glossary, "", plain=False).explain(line)


def test_a_condition_keeps_its_name_beside_its_plain_words_once(glossary):
    explainer = Explainer(glossary, "")
    first = explainer.explain("History of hypertension and hyperlipidemia.")
    assert "high blood pressure (hypertension)" in first
    assert "(hypertension)" not in explainer.explain("Hypertension: amlodipine continued.")


def test_words_to_know_are_only_the_hard_words_still_in_the_handout(glossary):
    summary = (DATA / "summaries" / "caps_headings.txt").read_text(encoding="utf-8")
    handout = handout_without_model(summary, glossary)
    text = handout.to_text().split("\nWords to know\n")[0].lower()
    assert handout.words_to_know
    for word in handout.words_to_know:
        assert word["term"].lower() in text or any(
            name.lower() in text for entry in glossary.entries if entry.term == word["term"]
            for name in (*entry.aliases, *entry.abbreviations)), word


def test_what_a_letter_asks_the_family_doctor_stays_asked_of_the_doctor(glossary):
    from desktop_app.core.pipelines.simplify import FOR_DOCTOR_LEAD

    summary = (DATA / "layouts" / "09-letter_uk-thyrotoxicosis-af.txt").read_text(encoding="utf-8")
    handout = handout_without_model(summary, glossary, date_order="dmy")
    asked = [a.text for a in handout.appointments if a.text.startswith(FOR_DOCTOR_LEAD)]
    assert any("Please check" in a for a in asked)
    assert any("her creatinine" in a for a in asked)
    assert not any("your creatinine" in a.lower() for a in handout.to_text().splitlines())


def test_the_story_is_short_and_leaves_lab_values_to_the_care_team(glossary):
    summary = (DATA / "summaries" / "long_stay.txt").read_text(encoding="utf-8")
    handout = handout_without_model(summary, glossary, story_sentences=3)
    story = handout.story()
    assert story is not None and 1 <= len(story.text.splitlines()) <= 3
    care = handout.to_text().split("For your care team")[1]
    for section in handout.part("care_team"):  # every other section, as written
        assert section.text == section.original and section.text.split("\n")[0] in care
    main = handout.main_text()
    assert "Words to know" not in main and "For your care team" not in main


def test_an_abbreviation_written_out_is_in_plain_words_too(glossary):
    said = Explainer(glossary, "").explain("PMH: HTN, CAD s/p PCI, portal HTN. No NSAIDs (ibuprofen).")
    assert "high blood pressure (hypertension)" in said.lower(), said
    # ("CAD after PCI" read as if the disease came after the procedure)
    assert "heart artery disease (coronary artery disease) having had" in said, said
    assert "portal hypertension" in said, said  # another condition: its words stay
    assert "status post" not in said and "HTN" not in said, said
    # The plain words' name and the line's own brackets are one pair.
    assert "pain medicine (NSAID; ibuprofen)" in said, said
    # A plain name is no word to define.
    assert "Hypertension means" not in said and "Status post means" not in said, said


def test_an_abbreviation_keeps_the_side_it_names(glossary):
    line = "LLE DVT. RUE weakness. BLE oedema."
    said = Explainer(glossary, "").explain(line)
    assert "Left leg" in said and "Right arm" in said and "Both legs" in said, said
    written = Explainer(glossary, "", plain=False).explain(line)
    assert "Left lower extremity" in written and "Right upper extremity" in written, written
    assert "both lower extremities" in written.lower(), written


def test_a_diagnosis_said_twice_is_told_once_the_longer_way(glossary):
    summary = ("Hospital Course:\n# Bronchiolitis with low oxygen: high-flow oxygen for 2 days.\n"
               "# Ear infection: started amoxicillin.\n\nDischarge Diagnoses:\n"
               "1. Bronchiolitis with low oxygen, resolved\n2. Ear infection\n")
    story = handout_without_model(summary, glossary).story()
    lines = story.text.splitlines()
    assert sum("ronchiolitis" in line for line in lines) == 1, lines
    assert any("resolved" in line or "cleared up" in line for line in lines), lines
    assert sum("ar infection" in line for line in lines) == 1, lines
    # Only a name that another starts with, as a whole word: these are two each.
    for first, second in (("Gout", "Gouty arthritis of the knee"), ("Stroke", "Heat stroke")):
        summary = (f"Discharge Diagnoses:\n1. {first}\n2. {second}\n\nHospital Course:\n"
                   "Given fluids on day 1.\n")
        story = handout_without_model(summary, glossary).story().text.lower()
        assert f"{first.lower()}.\n" in story and second.lower() in story, story


def test_the_story_tells_diagnoses_in_order_without_labels_or_lists_of_results(glossary):
    """The course's problems in its order, each said once the longer way where it first
    comes; the record's "Primary:" label left out; a line listing test results is for the
    care team; a list line that starts with a problem's name is no longer way of it."""
    summary = ("Hospital Course:\n# Pneumonia: given antibiotics.\n# Hyperkalemia: treated on day 1.\n"
               "# Tobacco use: counselled.\n"
               "Legionella urinary antigen negative, blood cultures no growth.\n"
               "Walked the ward on day 2.\n\n"
               "Discharge Diagnoses:\nPrimary: Pneumonia of the right lower lobe, resolved\n"
               "Secondary: Hyperkalemia (resolved), gout, hypertension, asthma\n")
    lines = handout_without_model(summary, glossary).story().text.splitlines()
    assert not [line for line in lines if "Primary" in line or "Secondary" in line], lines
    assert not [line for line in lines if "cultures" in line], lines
    assert lines[0].startswith("Pneumonia") and "lower lobe" in lines[0], lines
    assert "otassium" in lines[1] and "gout" not in lines[1].lower(), lines


def test_a_line_that_leads_the_next_list_is_no_part_of_the_diagnosis_above_it(glossary):
    summary = ("Allergies / adverse reactions\nCodeine - vomiting.\n\n"
               "Diagnoses\nPrimary: Right lower lobe community-acquired pneumonia with sepsis (CURB-65 = 3)\n"
               "Complications / new problems this admission:\n"
               "  1. Acute kidney injury stage 2 (pre-renal), recovering\n"
               "  2. Atrial fibrillation, new onset, with fast ventricular response\n"
               "  3. Constipation\n\nHospital course\nGiven antibiotics for 5 days.\n")
    lines = handout_without_model(summary, glossary).story().text.splitlines()
    assert lines[0].startswith("Right lower lobe pneumonia") and "problems" not in lines[0], lines


@pytest.mark.parametrize("written, kept", [
    ("Portal hypertension with varices.", "Portal hypertension"),  # not "high blood pressure"
    ("Intracranial hypertension.", "Intracranial hypertension"),
    ("Pulmonary oedema on the X-ray.", "Pulmonary oedema"),  # not "lung swelling"
])
def test_a_term_the_lexicon_does_not_know_whole_keeps_its_words(written, kept, glossary):
    assert Explainer(glossary, "").explain(written).startswith(kept)


def test_a_lexicon_form_never_cuts_a_medicine_s_name(glossary):
    # (session 44: with the formulary, "insulin lispro" is a name; "sliding scale insulin"
    # would have taken its first word)
    swapped, _replaced = lay_words("Sliding scale insulin lispro was used with meals.", glossary)
    assert "insulin lispro" in swapped


def test_a_verb_or_record_shorthand_beside_another_form_is_still_plain(glossary):
    # two forms side by side stay only where they could make one term together; a verb and
    # the record's shorthand never do ("underwent uncomplicated", "status post laparoscopic")
    text, words = lay_words("He underwent uncomplicated surgery, status post laparoscopic repair.", glossary)
    assert text == "He had problem-free surgery, having had keyhole repair."
    assert {"underwent", "uncomplicated", "status post"} <= set(words)


def test_a_number_written_with_a_thousands_comma_is_the_same_number_without_it():
    # The answer's medication sentence writes the facts' "3000 mg per day"; the line says
    # "max 3,000 mg/day", and the sentence had been refused for it (the line quoted instead).
    line = "Acetaminophen 650 mg PO q6h PRN knee pain, max 3,000 mg/day (NEW)"
    assert lost_facts(line, "Take acetaminophen 650 mg by mouth every 6 hours only when needed "
                            "for knee pain. Take no more than 3000 mg per day.", None) == []
    assert lost_facts(line, "Take acetaminophen 650 mg by mouth every 6 hours only when needed "
                            "for knee pain. Take no more than 300 mg per day.", None) == [
        "number '3000'"]
    assert lost_facts("Doses 1,2 and 3.", "Doses 1 and 3.", None) == ["number '1,2'"]


def test_her_back_and_an_adverb_before_the_verb_turn_to_the_reader():
    # "going through to you back", "You rarely drinks alcohol" in a letter's story
    from desktop_app.core.pipelines.plain import Reader
    reader = Reader(("she", "her", "herself"), ())
    assert reader.turn("She had pain going through to her back.") == "You had pain going through to your back."
    assert reader.turn("She rarely drinks alcohol.") == "You rarely drink alcohol."
    assert reader.turn("We will bring her back to clinic.") == "We will bring you back to clinic."


def test_a_sentence_is_turned_to_the_reader_though_a_word_in_it_can_name_a_person():
    """"a relative bradycardia", "a family history of", "a care home resident" name no one
    else; a relative who visits does."""
    from desktop_app.core.pipelines.plain import Reader

    reader = Reader.of("She is 71. She was admitted. She went home. Her son drove her.")
    assert reader.turn("On examination she had a relative bradycardia. She has a family history "
                       "of stroke. She is a care home resident. A relative says she is well.") == (
        "On examination you had a relative bradycardia. You have a family history of stroke. You "
        "are a care home resident. A relative says she is well.")
