"""What Lumen can run, by name, with one line each: the answering methods and their
variants, the kinds of evaluation system (the systems: evaluation/systems.py; the scorers:
evaluation/scorers.py), the benchmark formats and the DoctorRAG
set-ups.  The command line's help and choices, the window's lists and the core's own
checks read them here, so naming what exists never loads what runs it (scipy,
chromadb, llama.cpp)."""

from __future__ import annotations

METHODS = ("lamp", "lamp-no-reviewer", "lamp-no-verifier", "lamp-no-loops", "zero-shot",
           "one-shot", "evidence")
VARIANTS = ("glossary", "plain")
# One line each, for `lumen evaluate run --help`, the Evaluation tab and the Ask tab's tooltips.
METHOD_DESCRIPTIONS = {
    "lamp": "LAMP-MedQA on the evidence (extract, review, rewrite, verify), shown if checked",
    "lamp-no-reviewer": "LAMP-MedQA without the reviewer's feedback loop",
    "lamp-no-verifier": "LAMP-MedQA without the readability verifier's loop",
    "lamp-no-loops": "LAMP-MedQA with neither loop: one extraction, one rewrite",
    "zero-shot": "one model answers from the whole summary, with no example",
    "one-shot": "one model answers from the whole summary, after one worked example",
    "evidence": "no model: the summary's lines that answer, medical words explained",
}
VARIANT_DESCRIPTIONS = {"glossary": "with glossary definitions", "plain": "without glossary"}

# What a system's answers are, which decides the acceptance criteria its report holds it
# to by default (Settings: <kind>_acceptance_criteria; "document" is acceptance_criteria).
SYSTEM_KINDS = {"document": "a model's answers about a document",
                "evidence": "the document's own lines, no model",
                "qa": "a model's answers to open questions, no document",
                "consultation": "simulated consultations",
                "diagnosis": "diagnoses of labelled cases"}


FORMATS: dict[str, str] = {
    "medisumqa": "MeDiSumQA: discharge summary, patient question, reference answer (CSV, JSONL, JSON, Parquet)",
    "hivmedqa": "HIVMedQA: the category files HIV_evaluation_questionare_category_N.json, or their folder",
    "permedcqa": "PerMedCQA: Persian consumer questions with expert answers (JSON, JSONL or Parquet)",
    "medquad": "MedQuAD: NIH question-answer XML documents, one file or a folder of them",
    "generic": "Any JSONL, JSON array, CSV or Parquet file: question and answer columns found by "
               "their usual names (question/answer, query/response, input/output), or mapped",
    "cases": "Labelled patient cases (CSV or JSONL: id, complaint, diagnosis, ...) for diagnosis "
             "accuracy; de-identified as read",
    "dialogue": "3MDBench consultation cases (JSONL, JSON, CSV or Parquet: general_complaint, "
                "complaints, diagnosis, personality, image): simulated consultations with the "
                "dialogue systems; images are kept by reference and not used",
}

# 3MDBench's doctor modes (consultation.MODES), text only.
CONSULTATION_MODES = {
    "no-dialogue": "the doctor diagnoses from the patient's first message, asking nothing",
    "dialogue": "the doctor asks one question at a time, then gives one diagnosis",
    "rationale": "as dialogue, with hidden reasoning before each message",
    "hint": "as dialogue, told the diagnoses of the most similar past cases in the case base "
            "(a text stand-in for the paper's image classifier)",
}

ABLATIONS: dict[str, dict[str, bool]] = {
    "full": {"knowledge": True, "cases": True, "tags": True},
    "no-cases": {"knowledge": True, "cases": False, "tags": True},
    "no-knowledge": {"knowledge": False, "cases": True, "tags": True},
    "no-tags": {"knowledge": True, "cases": True, "tags": False},
    "vanilla": {"knowledge": True, "cases": False, "tags": False},
}
