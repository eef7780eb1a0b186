"""The glossary: Lumen's own entries, the MedlinePlus importer on the real file, jargon
matching, lookup, and staff entries."""

import html
import json
import re
import xml.etree.ElementTree as ET

import pytest

from desktop_app.core.glossary import entries as glossary_entries
from desktop_app.core.glossary.entries import CATEGORIES, load_builtin
from desktop_app.core.glossary.glossary import Glossary, load_glossary
from desktop_app.core.glossary.matcher import fold, normalise_form
from desktop_app.core.glossary.medlineplus import ImportFormatError, import_medlineplus
from desktop_app.core.readability import flesch_kincaid_grade
from desktop_app.core.store import open_store
from helpers import SHARED, run_lumen

MPLUS_XML = SHARED / "data" / "medlineplus" / "mplus_topics_2025-10-12.xml"
needs_mplus = pytest.mark.skipif(not MPLUS_XML.exists(),
                                 reason="../shared/data/medlineplus is not present (a user's machine has no shared/)")

SUMMARY = """DISCHARGE SUMMARY
HPI: 67 y/o M with h/o CHF and COPD, s/p CABG in 2019, presented with SOB and leg edema.
He had an acute kidney injury (AKI) and two UTIs. CT angiogram ruled out PE. The X-ray
showed small pleural effusions; no pulmonary
emboli. Medications: furosemide 40 mg PO BID, metformin 500 mg BID, albuterol PRN.
NPO after midnight. He likes pepper, peaches and a Pe-style pen."""


@pytest.fixture(scope="module")
def builtin():
    return load_builtin()


@pytest.fixture
def store(profile, passphrase_env):
    with open_store(profile.database_file) as opened:
        yield opened


# ---- Lumen's own glossary -------------------------------------------------------------


def test_glossary_is_large_and_well_formed(builtin):
    assert len(builtin) >= 800
    for entry in builtin:
        assert entry.term and entry.definition and entry.category in CATEGORIES, entry.term
        assert len(re.findall(r"[.!?](\s|$)", entry.definition)) in (1, 2), entry.term
        for abbreviation in entry.abbreviations:
            assert re.search(r"[A-Z/]", abbreviation), (entry.term, abbreviation)


def test_every_definition_reads_at_grade_8_or_below(builtin, tmp_path):
    too_hard = {}
    for entry in builtin:
        grade = flesch_kincaid_grade(entry.definition, tmp_path)
        if grade > 8.0:
            too_hard[entry.term] = round(grade, 1)
    assert too_hard == {}


def test_no_two_entries_share_a_name(builtin):
    owner: dict[tuple[str, str], str] = {}
    clashes = []
    for entry in builtin:
        forms = [("word", normalise_form(f)) for f in (entry.term, *entry.aliases)]
        forms += [("abbreviation", a) for a in entry.abbreviations]
        for form in forms:
            if form in owner and owner[form] != entry.key:
                clashes.append((form, owner[form], entry.key))
            owner[form] = entry.key
    assert clashes == []
    assert len({e.key for e in builtin}) == len(builtin)


@pytest.mark.parametrize("abbreviation", ["PRN", "BID", "TID", "QHS", "NPO", "SOB", "CHF", "COPD",
                                          "AKI", "UTI", "DVT", "PE", "MI", "CABG", "s/p", "h/o",
                                          "c/o", "r/o"])
def test_discharge_abbreviations_are_covered(builtin, abbreviation):
    assert any(abbreviation in entry.abbreviations for entry in builtin)


@needs_mplus
def test_medlineplus_links_are_real_and_no_summary_text_is_copied(builtin):
    titles, grams = {}, set()

    def ngrams(text, n=8):
        words = re.findall(r"[a-z0-9']+", text.lower())
        return {" ".join(words[i:i + n]) for i in range(len(words) - n + 1)}
    for _event, topic in ET.iterparse(MPLUS_XML):
        if topic.tag == "health-topic":
            titles[topic.get("title")] = topic.get("url")
            summary = re.sub(r"<[^>]+>", " ", html.unescape(topic.findtext("full-summary") or ""))
            grams |= ngrams(summary) | ngrams(topic.get("meta-desc") or "")
            topic.clear()
    linked = [e for e in builtin if e.medlineplus_title]
    assert len(linked) >= 100
    for entry in linked:
        assert titles.get(entry.medlineplus_title) == entry.medlineplus_url, entry.term
    copied = {e.term: sorted(ngrams(e.definition) & grams)[:1] for e in builtin
              if ngrams(e.definition) & grams}
    assert copied == {}


# ---- MedlinePlus importer ------------------------------------------------------------


@needs_mplus
def test_import_of_the_real_file_is_complete_and_idempotent(store):
    counts = import_medlineplus(store, MPLUS_XML)
    assert counts.topics == 1017 and counts.new_topics == 1017
    assert counts.also_called == 901
    assert counts.source_date == "2025-10-12"
    assert store.query("SELECT count(*) FROM mplus_topic")[0][0] == 1017
    assert store.query("SELECT count(*) FROM mplus_name WHERE kind = 'also-called'")[0][0] == 901
    again = import_medlineplus(store, MPLUS_XML)
    assert again.new_topics == 0 and again.updated_topics == 1017
    assert store.query("SELECT count(*) FROM mplus_topic")[0][0] == 1017
    assert store.query("SELECT count(*) FROM mplus_name")[0][0] == 901
    summary = store.query("SELECT summary FROM mplus_topic WHERE title = 'A1C'")[0][0]
    assert "<p>" not in summary and "&lt;" not in summary and summary.startswith("A1C is a blood test")
    assert store.query("SELECT count(*) FROM mplus_import")[0][0] == 2


OFFICIAL_LAYOUT = """<?xml version="1.0" encoding="UTF-8"?>
<health-topics total="2" date-generated="03/01/2026 01:30:00">
<health-topic meta-desc="Short description." title="Kidney Stones" url="https://example.invalid/kidneystones.html" id="101" language="English" date-created="01/02/2003">
<also-called>Renal calculi</also-called>
<also-called>Nephrolithiasis</also-called>
<full-summary>&lt;p&gt;A made-up summary for a test. It has &lt;b&gt;markup&lt;/b&gt;.&lt;/p&gt;&lt;ul&gt;&lt;li&gt;first point&lt;/li&gt;&lt;/ul&gt;</full-summary>
<group url="https://example.invalid/g" id="7">Kidneys and Urinary System</group>
<language-mapped-topic url="https://example.invalid/spanish/kidneystones.html" id="202" language="Spanish">Cálculos renales</language-mapped-topic>
<mesh-heading><descriptor id="D007669">Kidney Calculi</descriptor></mesh-heading>
<primary-institute url="https://example.invalid/inst">An institute</primary-institute>
<see-reference>Stones, Kidney</see-reference>
<site title="Somewhere" url="https://example.invalid/site"><information-category>Learn More</information-category></site>
</health-topic>
<health-topic meta-desc="Descripción." title="Cálculos renales" url="https://example.invalid/spanish/kidneystones.html" id="202" language="Spanish" date-created="01/02/2003">
<full-summary>&lt;p&gt;Un resumen inventado.&lt;/p&gt;</full-summary>
<language-mapped-topic url="https://example.invalid/kidneystones.html" id="101" language="English">Kidney Stones</language-mapped-topic>
</health-topic>
</health-topics>
"""


def test_import_reads_every_part_of_the_official_layout(store, tmp_path):
    path = tmp_path / "mplus_topics_2026-03-01.xml"
    path.write_text(OFFICIAL_LAYOUT, encoding="utf-8")
    counts = import_medlineplus(store, path)
    assert counts.by_language == {"English": 1, "Spanish": 1}
    assert (counts.also_called, counts.see_references, counts.groups, counts.mesh_headings,
            counts.language_links) == (2, 1, 1, 1, 2)
    summary = store.query("SELECT summary FROM mplus_topic WHERE id = '101'")[0][0]
    assert summary == "A made-up summary for a test. It has markup.\n• first point"
    english = load_glossary(store).by_key["mplus:101"]
    assert set(english.aliases) == {"Renal calculi", "Nephrolithiasis", "Stones, Kidney"}
    assert "mplus:202" not in load_glossary(store).by_key  # Spanish joins only when chosen
    from desktop_app.core.config import Settings

    spanish = load_glossary(store, Settings(glossary_language="Spanish"))
    assert "mplus:202" in spanish.by_key


@pytest.mark.parametrize("content,phrase", [
    (OFFICIAL_LAYOUT[:1500], "line"),
    (OFFICIAL_LAYOUT.replace('<also-called>Renal calculi</also-called>',
                             '<also-called>Renal calculi</also-calld>'), "line 4"),
    ('<?xml version="1.0"?><recipes><recipe/></recipes>', "not a MedlinePlus"),
    (OFFICIAL_LAYOUT.replace(' id="202"', ""), "has no id"),
])
def test_malformed_files_are_reported_and_import_nothing(store, tmp_path, content, phrase):
    path = tmp_path / "mplus_topics_2026-03-01.xml"
    path.write_text(content, encoding="utf-8")
    with pytest.raises(ImportFormatError) as info:
        import_medlineplus(store, path)
    assert phrase in info.value.message
    assert store.query("SELECT count(*) FROM mplus_topic")[0][0] == 0
    assert store.query("SELECT count(*) FROM mplus_import")[0][0] == 0


# ---- matching ---------------------------------------------------------------------------


def _found(glossary, text):
    return {m.text: m for m in glossary.match(text)}


def test_matching_a_discharge_summary(builtin):
    glossary = Glossary(builtin)
    matches = glossary.match(SUMMARY)
    for m in matches:
        assert SUMMARY[m.start:m.end] == m.text
    found = {m.text: m for m in matches}
    for expected in ("y/o", "h/o", "CHF", "COPD", "s/p", "CABG", "SOB", "edema", "AKI", "UTIs",
                     "PE", "X-ray", "pleural effusions", "furosemide", "PO", "BID", "metformin",
                     "PRN", "NPO"):
        assert expected in found, expected
    assert found["acute kidney injury"].form == "term"
    assert found["UTIs"].term == found["UTI"].term if "UTI" in found else True
    # Longest match wins: the whole name, not the word inside it.
    assert "kidney injury" not in found and "injury" not in found
    # Abbreviations only in capitals and as whole words.
    assert not any(m.text.lower() in ("pe", "pep") for m in matches if m.text != "PE")
    assert all(m.text != "Pe" for m in matches)
    # Broken across a line: "pulmonary\nemboli" is found as one term.
    assert any(m.text == "pulmonary\nemboli" for m in matches)


def test_matching_is_case_insensitive_for_words_and_handles_plurals(builtin):
    glossary = Glossary(builtin)
    found = _found(glossary, "PNEUMONIA and Pneumonias; two biopsies; several stents.")
    assert {"PNEUMONIA", "Pneumonias", "biopsies", "stents"} <= set(found)


def test_fold_keeps_offsets():
    text = "İstanbul X-ray\theart\nfailure"
    assert len(fold(text)) == len(text)
    assert fold("X-ray") == "x ray"


@needs_mplus
def test_imported_topics_and_local_entries_join_the_matcher(store):
    text = "She was seen for vitiligo and a made-up condition called glimmerfoot."
    before = {m.text for m in load_glossary(store).match(text)}
    import_medlineplus(store, MPLUS_XML)
    glossary_entries.save_local(store, term="glimmerfoot", definition="A pretend foot problem for a test.",
                                category="condition")
    after = {m.text: m for m in load_glossary(store).match(text)}
    assert "glimmerfoot" in after and after["glimmerfoot"].source == "local"
    assert "glimmerfoot" not in before
    imported = [m for m in after.values() if m.source == "medlineplus"]
    assert imported or "vitiligo" in before  # vitiligo comes from Lumen or from MedlinePlus


@needs_mplus
def test_local_edits_survive_a_reimport_and_can_hide_entries(store, builtin):
    import_medlineplus(store, MPLUS_XML)
    target = next(e for e in builtin if e.term == "heart failure")
    glossary_entries.save_local(store, term="heart failure", definition="Our ward's own wording.",
                                category="condition", abbreviations=["CHF"], overrides=target.key)
    import_medlineplus(store, MPLUS_XML)
    glossary = load_glossary(store)
    match = next(m for m in glossary.match("Known CHF.") if m.text == "CHF")
    assert match.source == "local" and glossary.by_key[match.key].definition == "Our ward's own wording."
    hidden = next(e for e in builtin if e.term == "edema")
    glossary_entries.save_local(store, term=hidden.term, definition=hidden.definition,
                                category=hidden.category, overrides=hidden.key, hidden=True)
    assert not any(m.key == hidden.key or m.text == "edema"
                   for m in load_glossary(store).match("leg edema") if m.source != "medlineplus")


def test_local_entries_export_and_import(store, tmp_path, profile, monkeypatch):
    glossary_entries.save_local(store, term="ward round", definition="When the team visits each patient.",
                                category="care", aliases=["rounds"])
    out = tmp_path / "local.toml"
    assert glossary_entries.export_local(store, out) == 1
    other = tmp_path / "other.db"
    with open_store(other, "another passphrase") as second:
        assert glossary_entries.import_local(second, out) == 1
        assert load_glossary(second).lookup("rounds")[0].entry.term == "ward round"
    bad = tmp_path / "bad.toml"
    bad.write_text('[[entry]]\nterm = "x"\ndefinition = "y."\ncategory = "x"\n'
                   '[[entry]]\nterm = "z"\ndefinition = ""\ncategory = "care"\n')
    with pytest.raises(glossary_entries.GlossaryError) as info:
        glossary_entries.import_local(store, bad)
    assert "Entry 1" in info.value.message and "Nothing was imported" in info.value.message


# ---- lookup -----------------------------------------------------------------------------


def test_lookup_exact_synonym_and_fuzzy(builtin):
    glossary = Glossary(builtin)
    exact = glossary.lookup("heart failure")
    assert exact[0].how == "exact" and exact[0].entry.term == "heart failure"
    synonym = glossary.lookup("CHF")
    assert synonym[0].how == "synonym" and synonym[0].entry.term == "heart failure"
    fuzzy = glossary.lookup("pnuemonia")
    assert fuzzy and fuzzy[0].how == "fuzzy" and "pneumonia" in fuzzy[0].entry.term.lower()
    assert glossary.lookup("zzqxv") == []


@pytest.mark.slow
def test_semantic_lookup_uses_the_embedder(builtin, runtime, tmp_path):
    glossary = Glossary(builtin)
    results = glossary.lookup("my sugar levels are too high", embedder=runtime.embedder(),
                              cache_dir=tmp_path)
    assert results and results[0].how == "semantic"
    assert any("sugar" in r.entry.definition.lower() or "diabet" in r.entry.term.lower()
               or "glucose" in r.entry.term.lower() for r in results)
    assert list(tmp_path.glob("glossary-vectors-*.npy"))  # cached for the next lookup


def test_search_as_you_type(builtin):
    glossary = Glossary(builtin)
    hits = glossary.search("pneum")
    assert hits and all("pneum" in " ".join([h.term, *h.aliases]).lower() for h in hits[:5])
    assert glossary.search("")[:1]


# ---- command line -----------------------------------------------------------------------


@needs_mplus
def test_glossary_commands(profile, tmp_path):
    env = {"LUMEN_PASSPHRASE": "a test passphrase for lumen"}
    imported = run_lumen("glossary", "import", str(MPLUS_XML), "--json", env=env)
    assert imported.returncode == 0, imported.stderr
    assert json.loads(imported.stdout)["topics"] == 1017
    text = tmp_path / "summary.txt"
    text.write_text(SUMMARY)
    matched = run_lumen("glossary", "match", str(text), "--json", env=env)
    assert matched.returncode == 0, matched.stderr
    rows = json.loads(matched.stdout)
    assert any(r["text"] == "CHF" and r["definition"] for r in rows)
    looked = run_lumen("glossary", "lookup", "CHF", "--json", "--no-semantic", env=env)
    assert json.loads(looked.stdout)[0]["term"] == "heart failure"
    missing = run_lumen("glossary", "lookup", "zzqxv", "--no-semantic", env=env)
    assert missing.returncode == 1 and "No glossary entry" in missing.stdout
    added = run_lumen("glossary", "add", "--term", "ward round", "--definition",
                      "When the team visits each patient.", "--category", "care", env=env)
    assert added.returncode == 0, added.stderr
    out = tmp_path / "local.toml"
    assert run_lumen("glossary", "export", str(out), env=env).returncode == 0
    assert "ward round" in out.read_text()
    broken = tmp_path / "mplus_topics_2026-01-01.xml"
    broken.write_text(MPLUS_XML.read_text(encoding="utf-8")[:200_000], encoding="utf-8")
    failed = run_lumen("glossary", "import", str(broken), env=env)
    assert failed.returncode == 2 and "line" in failed.stderr and "Traceback" not in failed.stderr


# ---- senses and plain words (what a reader sees highlighted) ---------------------------


def test_a_phrase_wins_over_its_word_and_a_neighbour_can_rule_a_sense_out(builtin):
    glossary = Glossary(builtin)
    mood = "major depressive disorder"  # "depression" is one of its names
    found = {m.text: m.term for m in glossary.match("ECG: 1 mm ST depressions in V5. Hx of depression.")}
    assert found["ST depressions"] == "ST depression" and found["depression"] == mood
    for text in ("Respiratory depression after opioids.", "ST-segment depression on the tracing.",
                 "Bone marrow depression from chemotherapy."):
        assert mood not in {m.term for m in glossary.match(text)}, text
    assert [m.term for m in glossary.match("Depression is treated.")] == [mood]


@pytest.mark.parametrize("text, clot", [
    ("No PE or football at break time for a week.", False),
    ("He can do PE and swimming again.", False),
    ("Take 2 puffs before recess/PE.", False),
    ("No PE class until the cast is off.", False),
    ("CT pulmonary angiogram: no PE.", True),  # a finding: no clot
    ("Treated for a PE with apixaban.", True),
])
def test_pe_at_school_is_not_a_clot_in_the_lung(builtin, text, clot):
    terms = {m.term.lower() for m in Glossary(builtin).match(text)}
    assert ("pulmonary embolism" in terms) == clot, terms


@pytest.mark.parametrize("text, term, meant", [
    ("1 sachet in 1 litre of boiled and cooled water", "abscess", False),
    ("Drink only boiled or filtered water.", "abscess", False),
    ("A boil on the neck was drained.", "abscess", True),
    ("Low-potassium diet as the dietitian explained.", "hypokalemia", False),
    ("Low potassium on admission, replaced.", "hypokalemia", True),
    ("Apply it thinly to the patches twice a day.", "patch", False),
    ("Right renal pelvic calculus, 14 mm.", "pelvis", False),
    ("DJ stent removal in 4 weeks.", "stent placement", False),
    ("GP in 1 week: bloods (pathology form given).", "pathology report", False),
    ("Call if you feel a pounding heartbeat.", "pound", False),
    ("Weight 150 pounds.", "pound", True),
])
def test_a_word_in_another_sense_is_not_explained_by_its_entry(builtin, text, term, meant):
    """A pharmacist read "boiled: A pocket of pus ...", "low-potassium: too little potassium"
    beside a low-potassium diet, and a heart stent beside a kidney tube."""
    terms = {m.term.lower() for m in Glossary(builtin).match(text)}
    assert (term in terms) == meant, terms


def test_senses_file_names_real_entries_or_other_names_and_loads():
    from desktop_app.core.glossary.matcher import load_senses

    senses = load_senses()
    assert {"depression", "elevation", "stroke"} <= {s.term for s in senses}
    assert all(s.before or s.after for s in senses)


def test_only_words_above_the_readers_grade_are_jargon(builtin):
    glossary = Glossary(builtin)  # plain_grade 8, the default
    text = ("Discharge home, stable, normal exam. History of gout. Cellulitis of the leg, "
            "SOB on exertion, heart failure. Take twice a day.")
    shown = {m.text for m in glossary.jargon(text)}
    assert {"Cellulitis", "SOB", "heart failure", "gout"} <= shown
    assert not {"Discharge", "stable", "normal", "twice a day"} & shown
    assert {m.text for m in glossary.match(text)} >= shown | {"Discharge", "twice a day"}
    strict = Glossary(builtin, plain_grade=3)  # a reader of grade 3 gets "discharge" explained
    assert "Discharge" in {m.text for m in strict.jargon(text)}
    explained = {entry.term for _m, entry in glossary.terms_to_explain(text)}
    assert "cellulitis" in explained and "discharge" not in explained


def test_words_patients_use_themselves_are_not_jargon_though_rare_in_print(builtin):
    """"Vomiting" and "dizziness" are rare in print (word grade 10 and 12) and a patient's
    own words; the entries marked `everyday` are matched but neither marked nor explained,
    unless written as shorthand ("SOB")."""
    from desktop_app.core.readability import word_grade

    glossary = Glossary(builtin)
    assert word_grade("vomiting") > glossary.plain_grade and word_grade("dizziness") > glossary.plain_grade
    text = "Vomiting and dizziness, then chest pain and SOB. Cellulitis of the knee."
    assert {m.text for m in glossary.match(text)} >= {"Vomiting", "dizziness", "chest pain", "knee"}
    assert {m.text for m in glossary.jargon(text)} == {"SOB", "Cellulitis"}
    assert [entry.term for _m, entry in glossary.terms_to_explain(text)] == [
        "shortness of breath", "cellulitis"]
    everyday = {entry.term for entry in builtin if entry.everyday}
    assert {"vomiting", "chest pain", "antibiotic", "blood clot"} <= everyday
    # Names of what a patient has but may not know the sense of stay explained.
    assert not {"heart failure", "stroke", "pneumonia", "cellulitis"} & everyday


def test_a_local_edit_of_an_everyday_entry_stays_everyday(builtin):
    from dataclasses import replace

    vomiting = next(e for e in builtin if e.term == "vomiting")
    edit = replace(vomiting, key="local:1", source="local", everyday=False, overrides=vomiting.key,
                   definition="Being sick, in our ward's words.")
    merged = {e.key: e for e in glossary_entries.merge(builtin, [], [edit])}
    assert merged["local:1"].definition == "Being sick, in our ward's words."
    assert merged["local:1"].everyday and vomiting.key not in merged


def test_word_grades_follow_how_common_a_word_is():
    from desktop_app.core.readability import RARE_WORD_GRADE, word_grade

    assert word_grade("history") <= word_grade("discharge") <= 8 < word_grade("pneumonia")
    assert word_grade("cellulitis") == RARE_WORD_GRADE


def test_the_parsed_glossary_file_is_kept_in_the_cache_and_follows_the_file(tmp_path):
    """A cold command reads Lumen's glossary from the profile's cache (core/derived_cache.py)
    instead of parsing the TOML again: the same entries, a damaged cache file is written
    again, and an edited glossary file is read anew (its hash is in the cache's name)."""
    from desktop_app.core.glossary.entries import builtin_file, load_builtin

    cache = tmp_path / "cache"
    parsed = load_builtin()
    assert load_builtin(cache_dir=cache) == parsed  # built and written
    [written] = list((cache / "glossary").glob("glossary-*.marshal"))
    assert load_builtin(cache_dir=cache) == parsed  # read back
    written.write_bytes(b"\x00 not marshal")
    assert load_builtin(cache_dir=cache) == parsed
    assert written.read_bytes() != b"\x00 not marshal"

    edited = tmp_path / "glossary.toml"
    edited.write_text(builtin_file().read_text(encoding="utf-8").replace(
        parsed[0].definition, "An edited definition.", 1), encoding="utf-8")
    assert load_builtin(edited, cache_dir=cache)[0].definition == "An edited definition."
    assert len(list((cache / "glossary").glob("glossary-*.marshal"))) == 2


def test_the_glossary_tables_are_kept_in_the_cache_and_follow_the_entries(builtin, tmp_path):
    """The name tables and the matcher's are read from the profile's cache by a cold
    command: the same matches, lookups and searches as tables built anew; a damaged file is
    written again; a staff entry added makes a new table (a stale one would not match the
    new name) and the old table is removed."""
    from desktop_app.core.glossary.entries import GlossaryEntry

    cache = tmp_path / "cache"

    def answers(glossary):
        return ([m.to_dict() for m in glossary.match(SUMMARY)],
                [r.to_dict() for q in ("HTN", "heart failure", "furosemid") for r in glossary.lookup(q)],
                [e.key for q in ("hyp", "emboli", "bid") for e in glossary.search(q)])

    built = answers(Glossary(builtin))
    assert answers(Glossary(builtin, cache_dir=cache)) == built  # built and written
    [written] = list((cache / "glossary").glob("tables-*.marshal"))
    assert answers(Glossary(builtin, cache_dir=cache)) == built  # read back
    written.write_bytes(b"\x00 not marshal")
    assert answers(Glossary(builtin, cache_dir=cache)) == built
    assert written.read_bytes() != b"\x00 not marshal"

    staff = GlossaryEntry(key="local:1", term="glimmerfoot", definition="A pretend foot problem.",
                          category="condition", source="local", abbreviations=("GMF",))
    grown = Glossary([staff, *builtin], cache_dir=cache)
    assert {m.text for m in grown.match("Seen for glimmerfoots and GMF.")} == {"glimmerfoots", "GMF"}
    assert [r.entry.key for r in grown.lookup("GMF")] == ["local:1"]
    [newer] = list((cache / "glossary").glob("tables-*.marshal"))
    assert newer != written


FINGERPRINTED = '''
import sys
sys.path.insert(0, sys.argv[1])
from desktop_app.core.derived_cache import code_fingerprint

def first(word):
    return word in {"alpha", "beta", "gamma", "delta"} and len(word) > 2

def second(word):
    return word in {"alpha", "beta", "gamma", "delta"} and len(word) > 3

print(code_fingerprint(first), code_fingerprint(second))
'''


def test_a_cache_fingerprint_follows_the_code_and_not_the_process(tmp_path):
    """The tables' file name carries a digest of the code that builds them: different for
    code that differs in one constant, the same in every process (a set constant's order
    changes with Python's string hashing, so it is read sorted)."""
    import os
    import subprocess
    import sys
    from pathlib import Path

    script = tmp_path / "fingerprint.py"
    script.write_text(FINGERPRINTED, encoding="utf-8")
    root = str(Path(__file__).resolve().parents[1])
    printed = {subprocess.run([sys.executable, str(script), root], capture_output=True, text=True,
                              check=True, env={**os.environ, "PYTHONHASHSEED": seed}).stdout
               for seed in ("1", "2", "3", "4")}
    [both] = printed
    first, second = both.split()
    assert first != second
