"""A patient's question, read once into a `Question` (issue #34): what it asks for, the
medicines and glossary terms it names, the words retrieval compares; and Ask reads each of
them once per question, however many parts of the pipeline use them."""

import sys
from collections import Counter

import pytest

from desktop_app.core.config import Settings
from desktop_app.core.pipelines.ask import AskPipeline
from desktop_app.core.pipelines.calibration import demo_benchmark, load_items
from desktop_app.core.pipelines.question import Question
from desktop_app.core.pipelines.vocabulary import Vocabulary


def test_a_question_holds_what_it_asks_and_what_it_names(glossary):
    dose = Question.read("How much aspirin do I take?", glossary)
    assert [kind.kind for kind in dose.kinds] == ["dose"] and dose.has_kind("dose")
    assert not dose.has_kind("why")
    assert [key for *_span, _name, key in dose.medicines] == ["lumen:aspirin"]
    assert dose.medicine_words == {"aspirin", "§lumen:aspirin"}
    assert "§lumen:aspirin" in dose.tokens and "much" not in dose.tokens  # a stop word

    terms = Question.read("Is my SOB from heart failure?", glossary)
    assert [match.key for match in terms.terms] == ["lumen:shortness-of-breath",
                                                    "lumen:heart-failure"]
    assert terms.medicines == () and terms.kinds == ()

    brand = Question.read("When do I stop Bactrim?", glossary)
    assert brand.kind_names == {"when", "duration"}
    assert "§lumen:trimethoprim-sulfamethoxazole" in brand.medicine_words  # the generic's entry


def test_a_kind_of_medicine_asked_about_without_its_name(glossary):
    unnamed = Question.read("Why was my water pill stopped?", glossary)
    assert unnamed.medicine_kinds == unnamed.unnamed_medicine_kinds == {"water pill"}
    assert unnamed.medicines == ()
    named = Question.read("Why was my water pill, the hydrochlorothiazide, stopped?", glossary)
    assert named.medicine_kinds == {"water pill"} and named.unnamed_medicine_kinds == set()
    # The summary's medicines of that kind are what it asks about.
    lines = ["STOPPED: Hydrochlorothiazide 25 mg daily", "Amlodipine 5 mg daily (NEW)"]
    assert "hydrochlorothiazide" in unnamed.asked_medicines(lines, glossary)
    assert "amlodipine" not in unnamed.asked_medicines(lines, glossary)


def test_a_question_without_a_glossary_is_read_by_its_words():
    question = Question.read("How long do I take lisinopril?", None)
    assert question.terms == () and question.has_kind("duration")
    assert [key for *_span, _name, key in question.medicines] == ["lisinopril"]  # by its stem


def test_ask_reads_each_part_of_the_question_once(runtime, glossary, tmp_path, monkeypatch):
    """The evidence, its related lines and the evidence answer all use what the question
    asks for and names; each is derived from the question's text once per Ask."""
    item = next(i for i in load_items(demo_benchmark(), "") if i["summary_id"] == "demo-01")
    text = item["question"]
    calls: Counter = Counter()

    def counting(name, original):
        def wrapper(*args, **kwargs):
            if text in args:
                calls[name] += 1
            return original(*args, **kwargs)
        return wrapper
    # Wherever a pipeline module holds the name, so a new use from any module is counted.
    for module in [m for name, m in sys.modules.items()
                   if name.startswith("desktop_app.core.pipelines.")]:
        for name in ("question_kinds", "retrieval_tokens", "medicine_names", "medicine_words"):
            if hasattr(module, name):
                monkeypatch.setattr(module, name, counting(name, getattr(module, name)))
    for name in ("medicine_kinds_in", "procedure_kinds_of"):
        original = getattr(Vocabulary, name)
        monkeypatch.setattr(Vocabulary, name, lambda self, *args, _name=name, _original=original:
                            counting(_name, lambda *a: _original(self, *a))(*args))
    monkeypatch.setattr(glossary, "match", counting("glossary.match", glossary.match))

    result = AskPipeline(runtime, glossary, Settings(), tmp_path).run(
        item["summary"], text, method="evidence")
    assert result.source == "evidence" and result.evidence
    assert calls == {"question_kinds": 1, "retrieval_tokens": 1, "medicine_names": 1,
                     "medicine_kinds_in": 1, "procedure_kinds_of": 1, "glossary.match": 1}


@pytest.mark.parametrize("question", ["", "   "])
def test_an_empty_question_is_still_refused(question, runtime, glossary, tmp_path):
    from desktop_app.core.errors import LumenError

    with pytest.raises(LumenError, match="no question"):
        AskPipeline(runtime, glossary, Settings(), tmp_path).run("Discharge summary.", question,
                                                                 method="evidence")


@pytest.mark.parametrize("text, parts", [
    ("How much of my heart pill do I take now, and what do I do if I feel faint?",
     ("How much of my heart pill do I take now", "what do I do if I feel faint?")),
    ("When is my scan? Can I drive before it?", ("When is my scan", "Can I drive before it?")),
    ("Which cream do I use and how often do I put it on?",
     ("Which cream do I use", "how often do I put it on?")),
    # One question each: "and" joins what is asked about, not two questions.
    ("Can I eat and drink normally?", ()),
    ("Do I take it in the morning or at night?", ()),
    ("Can I shower, and why?", ()),  # "and why?" asks nothing of its own
    ("Why was my water pill stopped?", ()),
])
def test_a_question_that_asks_two_things_has_two_parts(text, parts, glossary):
    assert Question.read(text, glossary).parts == parts
