"""What the faces read, by name: the values the core hands back (an Ask's result, a handout,
a knowledge answer, the doctor's report, the offline tour's), the readers that describe
them in words (a handout's status, a report's kind) and the constants the window and
the command line show (roles, glossary categories, notices, passphrase rules).

The window and `lumen` act through `core.session` and read through here, so the core's
module layout can change behind one list (tests/test_layers.py holds the faces to these
doors).  Each name is imported from its module when first asked (PEP 562), so naming one
costs what its own module costs and nothing more: `lumen facts` must not load the model
runtime because the command line can also print a handout (tests/test_imports.py).
"""

from __future__ import annotations

import importlib
from typing import Any

# name → (module under desktop_app.core, attribute)
_FROM: dict[str, tuple[str, str]] = {
    # the profile (core.startup finds and opens it)
    "Paths": ("config", "Paths"),
    "Settings": ("config", "Settings"),
    "Store": ("store", "Store"),
    "resource_root": ("config", "resource_root"),
    # documents the user opens, and what the command line reads from a summary
    "read_document": ("documents", "read_document"),
    "DOCUMENT_TYPES": ("documents", "SUPPORTED"),
    "read_summary": ("pipelines.summary_facts", "read_summary"),
    "vocabulary": ("pipelines.vocabulary", "vocabulary"),
    "plain_date": ("pipelines.vocabulary", "plain_date"),
    # answers and what describes them
    "AskResult": ("pipelines.ask", "AskResult"),
    "EvidenceLine": ("pipelines.evidence", "EvidenceLine"),
    "Attempt": ("pipelines.trace", "Attempt"),
    "TRACE_NOTICE": ("pipelines.trace", "NOTICE"),
    "Handout": ("pipelines.simplify", "Handout"),
    "handout_status": ("pipelines.simplify", "handout_status"),
    "handout_file_kind": ("pipelines.simplify", "handout_file_kind"),
    "KnowledgeResult": ("knowledge.doctorrag", "KnowledgeResult"),
    "KNOWLEDGE_FILES": ("knowledge.doctorrag", "KNOWLEDGE_FILES"),
    "KNOWLEDGE_NOTICE": ("knowledge.doctorrag", "KNOWLEDGE_NOTICE"),
    "model_calls_needed": ("knowledge.doctorrag", "model_calls_needed"),
    "parse_labels": ("knowledge.doctorrag", "parse_labels"),
    "chapter_title": ("knowledge.icd10", "title"),
    # the glossary
    "Glossary": ("glossary.glossary", "Glossary"),
    "GlossaryEntry": ("glossary.entries", "GlossaryEntry"),
    "GLOSSARY_CATEGORIES": ("glossary.entries", "CATEGORIES"),
    # evaluation reports
    "report_kind": ("evaluation.report", "report_kind"),
    "metric_info": ("evaluation.report", "metric_info"),
    "VERDICT_COLOURS": ("evaluation.report", "VERDICT_COLOURS"),
    "ASSESSOR_ITEM_NAMES": ("evaluation.dialogue", "ASSESSOR_ITEM_NAMES"),
    "Bar": ("evaluation.chart", "Bar"),
    "bar_chart_svg": ("evaluation.chart", "bar_chart_svg"),
    "axis_label": ("evaluation.chart", "axis_label"),
    "axis_range": ("evaluation.chart", "axis_range"),
    "benchmark_file_columns": ("evaluation.importers", "columns"),
    "detect_column_mapping": ("evaluation.importers", "detect_mapping"),
    "demo_benchmark": ("pipelines.calibration", "demo_benchmark"),
    # the installation's checks
    "DoctorReport": ("doctor", "DoctorReport"),
    "finding_meaning": ("doctor", "finding_meaning"),
    "OfflineVerification": ("netprobe", "OfflineVerification"),
    "TourReport": ("netprobe", "TourReport"),
    "StepResult": ("netprobe", "StepResult"),
    # models and keys
    "ROLES": ("models.catalog", "ROLES"),
    "GENERATION_ROLES": ("models.catalog", "GENERATION_ROLES"),
    "ROLE_PURPOSES": ("models.catalog", "ROLE_PURPOSES"),
    "SERVER_NOTES": ("models.server", "SERVER_NOTES"),
    "known_chat_formats": ("models.chat", "known_formats"),
    "PASSPHRASE_ENV": ("store.keys", "PASSPHRASE_ENV"),
    "MIN_PASSPHRASE_LENGTH": ("store.keys", "MIN_PASSPHRASE_LENGTH"),
    "keyring_available": ("store.keys", "keyring_available"),
}

__all__ = sorted(_FROM)


def __getattr__(name: str) -> Any:
    try:
        module, attribute = _FROM[name]
    except KeyError:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}") from None
    # Not kept here: the value is always its module's own (a test that replaces it there
    # replaces it for the faces too).
    return getattr(importlib.import_module(f"{__package__}.{module}"), attribute)


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_FROM))
