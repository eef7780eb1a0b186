"""The systems an evaluation run can put under test, each family one registered class: its
names (`lamp:glossary`, `qa`, `doctorrag:full`, `dialogue:hint`, ...) with a line each,
the kind of its output (which decides the report's default criteria and the default
scorers), whether its samples must run one at a time, what it refuses before a run, and
how it answers one sample.

The command line's help, the Evaluation tab's list, the runner and the report read
`SYSTEMS`, so a new family is one class here.  Importing this module loads nothing heavy:
each family reaches its engine through the evaluator when it answers.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any, Callable, Protocol

from ..choices import (ABLATIONS, CONSULTATION_MODES, METHOD_DESCRIPTIONS, METHODS,
                       SYSTEM_KINDS, VARIANT_DESCRIPTIONS, VARIANTS)
from ..errors import LumenError

if TYPE_CHECKING:
    from ..config import Settings
    from ..knowledge.doctorrag import DoctorRAG
    from ..models.runtime import ModelRuntime
    from ..pipelines.ask import AskPipeline
    from ..progress import CancelToken
    from ..prompts import PromptSet
    from .consultation import ConsultationSimulator
    from .dataset import Sample
    from .runs import SavedDataset

Answer = tuple[str, dict[str, Any], float]  # the output, its trace, the model seconds

# The kinds of system (choices.SYSTEM_KINDS) whose output is an answer to a question.
ANSWER_KINDS = ("document", "evidence", "qa")


class Answering(Protocol):
    """What systems may use of the run's evaluator (runner.Evaluator)."""

    runtime: "ModelRuntime"
    settings: "Settings"
    prompts: "PromptSet"
    ask: "AskPipeline"
    knowledge: "DoctorRAG | None"
    consultations: "ConsultationSimulator"


class Journal(Protocol):
    """Where a consultation's utterances are kept as they finish (runner.TurnJournal)."""

    def turns(self, sample_id: str) -> list[dict[str, Any]]: ...

    def save(self, sample_id: str, index: int, turn: dict[str, Any]) -> None: ...


class SystemFamily:
    """Systems named `prefix` or `prefix:variant`."""

    prefixes: tuple[str, ...] = ()
    kind = "document"  # a key of choices.SYSTEM_KINDS
    sequential = False  # one sample at a time, even when every model is on a server

    def names(self) -> dict[str, str]:
        """Every system of the family, with its line of help."""
        raise NotImplementedError

    def knows(self, name: str) -> bool:
        """Whether `name` is one of this family's systems (a run names it so)."""
        return name in self.names()

    def check(self, system: str, dataset: "SavedDataset", has_documents: bool,
              scorers: list[str]) -> None:
        """Refuse, before anything is written, a run this system cannot do on `dataset`."""

    def answer(self, evaluator: Answering, prefix: str, variant: str | None, sample: "Sample",
               cancel: "CancelToken | None", journal: Journal | None) -> Answer:
        raise NotImplementedError

    def uses_knowledge(self, system: str) -> bool:
        """Whether `system` draws on the knowledge and case bases (its Evaluator gets them)."""
        return False

    def needs_past_cases(self, system: str) -> bool:
        """Whether `system` cannot run on an empty case base (refused before a run starts)."""
        return False


SYSTEMS: dict[str, SystemFamily] = {}  # by prefix, in the order of the lists


def system_family(cls: type[SystemFamily]) -> type[SystemFamily]:
    """Register a family (a class decorator)."""
    family = cls()
    assert family.kind in SYSTEM_KINDS, family.kind
    for prefix in family.prefixes:
        if prefix in SYSTEMS:
            raise ValueError(f"A system family named {prefix!r} is registered already.")
        SYSTEMS[prefix] = family
    return cls


def systems() -> dict[str, str]:
    """Every system name with its line of help, in the order the lists show them."""
    described: dict[str, str] = {}
    for family in dict.fromkeys(SYSTEMS.values()):
        described.update(family.names())
    return described


def parse_system(name: str) -> tuple[str, str | None]:
    """`name` as (prefix, variant or None); an unknown name is refused with the list."""
    prefix, _, variant = name.partition(":")
    if prefix not in SYSTEMS or not SYSTEMS[prefix].knows(name):
        raise LumenError(f"'{name}' is not a system Lumen can evaluate.",
                         f"Choose one of: {', '.join(systems())}.")
    return prefix, variant or None


def family_of(name: str) -> SystemFamily:
    return SYSTEMS[parse_system(name)[0]]


def system_kind(name: str) -> str:
    """The kind of a system's output (choices.SYSTEM_KINDS); "document" for a name no
    family has (an old run's)."""
    family = SYSTEMS.get(name.partition(":")[0])
    return family.kind if family is not None else "document"


def is_consultation(name: str) -> bool:
    """Whether a system simulates consultations (its family's kind is "consultation", as
    `dialogue:<mode>`): its utterances are kept as they finish, its report speaks of
    diagnoses, transcripts and modes.  False for a name no family has (an old run's)."""
    return system_kind(name) == "consultation"


def uses_knowledge(name: str) -> bool:
    """Whether a system draws on the knowledge and case bases; False for a name no family
    has (an old run's)."""
    family = SYSTEMS.get(name.partition(":")[0])
    return family is not None and family.uses_knowledge(name)


def needs_past_cases(name: str) -> bool:
    family = SYSTEMS.get(name.partition(":")[0])
    return family is not None and family.needs_past_cases(name)


def answers_questions(name: str) -> bool:
    """Whether a system's output is an answer to a question (ANSWER_KINDS), which a judge
    such as MedJudge can read; a name no family has counts as a document's answers."""
    return system_kind(name) in ANSWER_KINDS


def criteria_setting(system: str) -> str:
    """The Settings field that holds a system's default acceptance criteria."""
    kind = system_kind(system)
    return "acceptance_criteria" if kind == "document" else f"{kind}_acceptance_criteria"


# ---- the families ------------------------------------------------------------------------


def _ask_names(methods: tuple[str, ...]) -> dict[str, str]:
    described = {}
    for method in methods:
        for variant in (VARIANTS if method.startswith("lamp") else ("",)):
            name = f"{method}:{variant}" if variant else method
            described[name] = METHOD_DESCRIPTIONS[method] + (
                f"; {VARIANT_DESCRIPTIONS[variant]}" if variant else "")
    return described


@system_family
class AskMethods(SystemFamily):
    """Every Ask method on a sample's document and question, as the Ask tab runs it."""

    prefixes = tuple(m for m in METHODS if m != "evidence")
    kind = "document"

    def names(self) -> dict[str, str]:
        return _ask_names(self.prefixes)

    def knows(self, name: str) -> bool:
        # Every Ask method takes either variant (runs have been saved as "zero-shot:plain";
        # only the LAMP methods' rewrite uses it), and none other.
        prefix, _, variant = name.partition(":")
        return prefix in self.prefixes and variant in ("", *VARIANTS)

    def check(self, system: str, dataset: "SavedDataset", has_documents: bool,
              scorers: list[str]) -> None:
        if not has_documents:
            raise LumenError(f"'{system}' answers questions about a document, and none of the "
                             f"samples of {dataset.name} has one (it is a set of open questions).",
                             "Run it with the 'qa' system (--system qa): a model answers each "
                             "question alone.")

    def answer(self, evaluator: Answering, prefix: str, variant: str | None, sample: "Sample",
               cancel: "CancelToken | None", journal: Journal | None) -> Answer:
        system = f"{prefix}:{variant}" if variant else prefix
        if not sample.context:
            raise LumenError(f"The sample has no document, and '{system}' answers questions "
                             "about a document.", "Use the 'qa' system for this dataset.")
        # A server down is the sample's error here, never the summary's lines scored as
        # the model's answer.
        result = evaluator.ask.run(sample.context, sample.input, method=prefix, variant=variant,
                                   cancel=cancel, evidence_if_server_fails=False)
        trace = result.trace.to_dict()
        return result.answer, trace, trace["totals"]["model_seconds"]


@system_family
class EvidenceAnswers(AskMethods):
    """The summary's own lines that answer, with no model (the Ask tab's evidence method)."""

    prefixes = ("evidence",)
    kind = "evidence"


@system_family
class OpenQuestions(SystemFamily):
    """One model answers each question alone, with no document (HIVMedQA, MedQuAD, ...)."""

    prefixes = ("qa",)
    kind = "qa"

    def names(self) -> dict[str, str]:
        return {"qa": "one model answers the question alone, with no document, for open "
                      "question sets"}

    def answer(self, evaluator: Answering, prefix: str, variant: str | None, sample: "Sample",
               cancel: "CancelToken | None", journal: Journal | None) -> Answer:
        from ..pipelines.checks import clean_reply

        prompts = evaluator.prompts
        generation = evaluator.runtime.for_role("generator").generate(
            [{"role": "system", "content": prompts.text("qa", "system")},
             {"role": "user", "content": prompts.text("qa", "user", question=sample.input)}],
            max_tokens=evaluator.settings.answer_tokens * 2, cancel=cancel)
        return clean_reply(generation.text), {"calls": [generation.to_dict()]}, generation.seconds


@system_family
class DoctorRAGDiagnosis(SystemFamily):
    """Labelled cases through the Knowledge tab's diagnosis mode (DoctorRAG), with the full
    retrieval or one of the paper's ablations; each case's own record is kept out of the
    similar cases."""

    prefixes = ("doctorrag",)
    kind = "diagnosis"
    sequential = True

    def names(self) -> dict[str, str]:
        described = {}
        for setup, uses in ABLATIONS.items():
            sources = " and ".join(what for what, key in (("knowledge", "knowledge"),
                                                          ("similar cases", "cases")) if uses[key])
            described[f"doctorrag:{setup}"] = (
                f"DoctorRAG diagnosis of labelled cases from {sources}, "
                + ("filtered by ICD-10 chapter" if uses["tags"] else "no chapter filter"))
        return described

    def uses_knowledge(self, system: str) -> bool:
        return True

    def answer(self, evaluator: Answering, prefix: str, variant: str | None, sample: "Sample",
               cancel: "CancelToken | None", journal: Journal | None) -> Answer:
        knowledge = evaluator.knowledge
        if knowledge is None:
            raise LumenError("DoctorRAG systems need the knowledge and case bases.",
                             "Run them from the Evaluation tab or 'lumen evaluate run'.")
        labels = list(sample.metadata.get("labels") or [])
        if len(labels) < 2:
            raise LumenError("The sample has no labels to choose from.",
                             "Import the case set with the 'cases' format.")
        # The case itself may sit in the case base: it is left out, as in the paper.
        own = knowledge.casebase.ids_for_key(sample.id)
        result = knowledge.run(sample.input, mode="diagnosis", labels=labels,
                               ablation=variant or "full", refine=False, exclude_ids=own,
                               cancel=cancel)
        trace = {**result.trace.to_dict(), "references": result.references,
                 "retrieval": result.retrieval.to_dict()}
        return result.diagnosis, trace, trace["totals"]["model_seconds"]


@system_family
class Consultations(SystemFamily):
    """A simulated 3MDBench consultation per case (consultation.py): the patient agent,
    the doctor in the mode named, the final diagnosis extracted as a label or "none"; each
    utterance is kept as it finishes, so a run stopped mid-dialogue goes on from the next."""

    prefixes = ("dialogue",)
    kind = "consultation"
    sequential = True

    def names(self) -> dict[str, str]:
        return {f"dialogue:{mode}": f"3MDBench consultation: {what}"
                for mode, what in CONSULTATION_MODES.items()}

    def uses_knowledge(self, system: str) -> bool:
        return system == "dialogue:hint"  # the hint is drawn from past cases

    def needs_past_cases(self, system: str) -> bool:
        return system == "dialogue:hint"

    def check(self, system: str, dataset: "SavedDataset", has_documents: bool,
              scorers: list[str]) -> None:
        if dataset.format != "dialogue":
            raise LumenError(f"'{system}' simulates consultations, and {dataset.name} is not a "
                             "set of consultation cases.",
                             "Import 3MDBench cases in the 'dialogue' format (the demo: "
                             "lumen-dialogue-demo).")

    def answer(self, evaluator: Answering, prefix: str, variant: str | None, sample: "Sample",
               cancel: "CancelToken | None", journal: Journal | None) -> Answer:
        from .consultation import Turn

        if "personality" not in sample.metadata:
            raise LumenError("The sample is not a consultation case.",
                             "Import the cases in the 'dialogue' format.")
        kept = [Turn.from_dict(t) for t in journal.turns(sample.id)] if journal else []
        on_turn: Callable[[int, Any], None] | None = (
            (lambda index, turn: journal.save(sample.id, index, turn.__dict__))
            if journal else None)
        simulator = evaluator.consultations
        consultation = simulator.converse(sample, variant or "dialogue", cancel=cancel,
                                          on_turn=on_turn, resume=kept)
        started = time.perf_counter()
        consultation.diagnosis = simulator.extract(consultation, cancel)
        extraction_seconds = time.perf_counter() - started
        trace = {"consultation": consultation.to_dict(), "resumed_at": len(kept),
                 "extraction_seconds": round(extraction_seconds, 3)}
        model_seconds = sum(t.seconds for t in consultation.turns) + extraction_seconds
        return consultation.diagnosis, trace, model_seconds
