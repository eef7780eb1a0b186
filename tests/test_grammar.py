"""Constrained replies always fit their token limit, whatever the model writes.

The limit is derived from the grammar (models/grammar.py).  These tests check the
derivation against llama.cpp itself: the longest reply each grammar allows is forced
through the real model and the real parser, and every constrained output Lumen makes
is bounded and leaves room for a prompt in the default context."""

import json

import jsonschema
import pytest

from desktop_app.core.config import Settings
from desktop_app.core.errors import ModelOutputError, ReplyCutOff
from desktop_app.core.evaluation.judges import (HIVMEDQA_SCHEMA, MEDJUDGE_SCHEMA, RubricJudge,
                                                unparseable_detail)
from desktop_app.core.evaluation.runner import JUDGE_MAX_TOKENS, SIMILARITY_SCHEMA
from desktop_app.core.knowledge import doctorrag, icd10
from desktop_app.core.models.grammar import (json_grammar, longest_reply, longest_reply_bytes,
                                             reply_token_limit)
from desktop_app.core.models.runtime import Generation

# The 34 labels of 3MDBench, as long as diagnosis lists get in practice.
DIAGNOSES = ["eczema", "hives", "herpes", "allergic contact dermatitis", "contact dermatitis",
             "seborrheic dermatitis", "rosacea", "conjunctivitis", "tonsillitis", "chronic lichen",
             "keratosis pilaris", "molluscum contagiosum", "lichen planus", "periodontitis",
             "caries", "psoriasis", "ingrown nail", "stye", "acne", "onychomycosis",
             "seborrheic keratosis", "chalazion", "vitiligo", "shingles", "mycosis",
             "actinic keratosis", "onycholysis", "chickenpox", "dental calculus", "warts",
             "stomatitis", "abscess", "gingivitis", "nail dystrophy"]


class _Sources:
    def __init__(self, knowledge: int, cases: int) -> None:
        self.knowledge = [type("S", (), {"ref": f"K{i + 1}"})() for i in range(knowledge)]
        self.cases = [type("S", (), {"ref": f"C{i + 1}"})() for i in range(cases)]


def _most_sources() -> _Sources:
    top_k = [f for f in Settings.describe() if f.name == "knowledge_top_k"][0]
    return _Sources(int(top_k.metadata["maximum"]), int(top_k.metadata["maximum"]))


CONSTRAINED = {
    "MedJudge": MEDJUDGE_SCHEMA,
    "HIVMedQA judge": HIVMEDQA_SCHEMA,
    "similarity judge": SIMILARITY_SCHEMA,
    "ICD-10 chapter tag": icd10.TAG_SCHEMA,
    "DoctorRAG diagnosis": doctorrag._reply_schema("diagnosis", _most_sources(), DIAGNOSES),
}


@pytest.mark.parametrize("name", list(CONSTRAINED))
def test_every_constrained_reply_is_bounded_and_leaves_room_for_its_prompt(name):
    schema = CONSTRAINED[name]
    limit = reply_token_limit(schema)
    assert limit is not None, f"{name}: the grammar allows an endless reply"
    # The default context must hold the longest reply and still half of it for the prompt.
    assert limit <= Settings().context_size // 2, f"{name}: {limit} tokens"
    # And the bound is exact: a reply of exactly that many bytes exists and is valid.
    witness = longest_reply(json_grammar(schema))
    assert len(witness.encode("utf-8")) + 1 == limit
    jsonschema.validate(json.loads(witness), schema)


def test_a_knowledge_answer_always_has_its_budget_after_the_longest_references():
    schema = doctorrag._reply_schema("answer", _most_sources(), [])
    assert reply_token_limit(schema) is None  # the answer is free text: it may be cut off...
    limit = doctorrag._reply_limit(schema, "answer", Settings().knowledge_answer_tokens)
    references_only = longest_reply_bytes(json_grammar(
        {**schema, "properties": {"references": schema["properties"]["references"]},
         "required": ["references"]}))
    # ...but only inside the answer, after its references, which are then always complete.
    assert limit >= Settings().knowledge_answer_tokens + references_only + 1


def test_the_paper_judge_limit_is_at_least_the_grammar_bound():
    assert JUDGE_MAX_TOKENS >= reply_token_limit(SIMILARITY_SCHEMA)


def test_bounded_strings_count_bytes_in_any_language():
    schema = {"type": "object", "properties": {"note": {"type": "string", "maxLength": 12}},
              "required": ["note"], "additionalProperties": False}
    assert longest_reply_bytes(json_grammar(schema)) == len('{ "note" : "" } ') + 12
    assert reply_token_limit({"type": "object", "properties": {"note": {"type": "string"}}}) is None


@pytest.mark.slow
@pytest.mark.parametrize("name", ["MedJudge", "HIVMedQA judge", "ICD-10 chapter tag"])
def test_the_longest_reply_goes_through_the_real_model_and_parser_uncut(runtime, monkeypatch, name):
    """llama.cpp is made to write the longest reply the grammar allows: it ends before
    the limit, and generate_json parses and validates it."""
    from llama_cpp import LlamaGrammar

    schema = CONSTRAINED[name]
    witness = longest_reply(json_grammar(schema))
    model = runtime.for_role("judge")
    forced = LlamaGrammar.from_string("root ::= " + json.dumps(witness), verbose=False)
    monkeypatch.setattr(model, "_grammar", lambda schema: forced)
    value, generation = model.generate_json([{"role": "user", "content": "Reply."}], schema)
    assert generation.finish_reason == "stop"
    assert generation.completion_tokens <= generation.max_tokens == reply_token_limit(schema)
    assert value == json.loads(witness)


@pytest.mark.slow
def test_medjudge_reply_from_the_real_model_parses_whatever_it_writes(runtime):
    labels, detail = RubricJudge(runtime).medjudge(
        "How often should I take the tablet?", "Once a day, in the morning.", "Twice a day.")
    assert detail["unparseable"] is False, detail.get("reason")
    assert detail["max_tokens"] == reply_token_limit(MEDJUDGE_SCHEMA)
    assert list(labels) == list(MEDJUDGE_SCHEMA["properties"])  # the protocol's order
    jsonschema.validate(labels, MEDJUDGE_SCHEMA)


def _cut_off(model, monkeypatch, text):
    fake = Generation(text=text, finish_reason="length", prompt_tokens=5,
                      prompt_tokens_evaluated=5, completion_tokens=17, seconds=0.1,
                      model_id="m", model_sha256="s", max_tokens=17)
    monkeypatch.setattr(model, "generate", lambda *args, **kwargs: fake)


def test_a_reply_cut_off_is_reported_as_cut_off_not_as_a_parse_error(runtime, monkeypatch):
    model = runtime.for_role("judge")
    _cut_off(model, monkeypatch, '{ "comprehension" : 4, "reasoning')
    with pytest.raises(ReplyCutOff) as info:
        model.generate_json([{"role": "user", "content": "q"}], HIVMEDQA_SCHEMA)
    assert info.value.message == "reply cut off at 17 tokens"
    detail = unparseable_detail(info.value)
    assert detail["cut_off"] == 17 and detail["reason"] == "reply cut off at 17 tokens"


def test_a_limit_below_the_grammar_bound_or_an_unbounded_schema_is_refused(runtime):
    model = runtime.for_role("judge")
    with pytest.raises(ValueError, match="below this schema's longest reply"):
        model.generate_json([{"role": "user", "content": "q"}], icd10.TAG_SCHEMA, max_tokens=5)
    with pytest.raises(ValueError, match="bounded"):
        model.generate_json([{"role": "user", "content": "q"}],
                            {"type": "object", "properties": {"a": {"type": "string"}}})


def test_an_unparseable_reply_is_still_a_model_output_error(runtime, monkeypatch):
    model = runtime.for_role("judge")
    fake = Generation(text="not json", finish_reason="stop", prompt_tokens=5,
                      prompt_tokens_evaluated=5, completion_tokens=3, seconds=0.1,
                      model_id="m", model_sha256="s", max_tokens=30)
    monkeypatch.setattr(model, "generate", lambda *args, **kwargs: fake)
    with pytest.raises(ModelOutputError) as info:
        model.generate_json([{"role": "user", "content": "q"}], icd10.TAG_SCHEMA)
    assert not isinstance(info.value, ReplyCutOff)
