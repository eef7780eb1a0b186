"""A 3MDBench consultation, simulated (issue #18): the patient agent (role "patient"),
the doctor under test (role "generator") in one of the paper's text modes, then the
final diagnosis extracted and the consultation assessed (role "judge"), each under a
JSON grammar.  Prompts: resources/prompts/dialogue.toml.

Every utterance is handed to `on_turn` as it finishes (the runner keeps it in the
encrypted database, table eval_turn) and a consultation can start again from the
utterances kept (`resume`): each reply is generated with the settings' seed, so a
resumed dialogue goes on as the interrupted one would have.
"""

from __future__ import annotations

import re
import time
from dataclasses import asdict, dataclass, field
from typing import Any, Callable

from ..choices import CONSULTATION_MODES
from ..config import Settings
from ..errors import ContextOverflowError, LumenError, ModelOutputError
from ..models.generation import json_reply_limit
from ..models.runtime import ModelRuntime
from ..progress import CancelToken
from ..prompts import load_prompts
from .dataset import Sample
from .dialogue import ASSESSOR_ITEMS, COMPETENCE, NONE, dialogue_protocol

MODES = tuple(CONSULTATION_MODES)
PATIENT_TOKENS, DOCTOR_TOKENS = 256, 512  # the paper's limits per reply
ASSESSOR_SCHEMA = {
    "type": "object",
    "properties": {**{item: {"type": "integer", "enum": [0, 1]} for item in ASSESSOR_ITEMS},
                   "4.1": {"type": "string", "enum": list(COMPETENCE)}},
    "required": [*ASSESSOR_ITEMS, "4.1"], "additionalProperties": False}
_BREAK = re.compile(r"\bBREAK\b")
_ANSWER = re.compile(r"\bANSWER\s*:", re.IGNORECASE)
_REASONING = re.compile(r"^\s*REASONING\s*:", re.IGNORECASE)

HintProvider = Callable[[Sample], list[str]]


def extraction_schema(labels: list[str]) -> dict:
    return {"type": "object", "properties": {"diagnosis": {"type": "string",
                                                           "enum": [*labels, NONE]}},
            "required": ["diagnosis"], "additionalProperties": False}


@dataclass
class Turn:
    speaker: str  # "patient" or "doctor"
    text: str  # what the other side reads
    reasoning: str = ""  # the doctor's hidden reasoning (rationale mode)
    seconds: float = 0.0
    ends: str = ""  # "break" or "no-dialogue" on the utterance that ended the dialogue

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "Turn":
        return cls(data["speaker"], data["text"], data.get("reasoning", ""),
                   float(data.get("seconds", 0.0)), data.get("ends", ""))


@dataclass
class Consultation:
    case_id: str
    mode: str
    temperament: str
    turns: list[Turn] = field(default_factory=list)
    ended_by: str = ""  # "break", "cap", "context", "no-dialogue"
    diagnosis: str = NONE  # extracted: a label or "none"
    assessment: dict[str, Any] | None = None  # None: the assessor's reply was unusable
    hint: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "Consultation":
        return cls(data["case_id"], data["mode"], data["temperament"],
                   [Turn.from_dict(t) for t in data["turns"]], data.get("ended_by", ""),
                   data.get("diagnosis", NONE), data.get("assessment"), list(data.get("hint", [])))


def transcript_of(turns: list[Turn]) -> str:
    """What the extraction and the assessor read: one line per utterance, by speaker."""
    return "\n".join(f"{t.speaker.capitalize()}: {t.text}" for t in turns)


def patient_reply(text: str) -> tuple[str, bool]:
    """The patient's message without BREAK, and whether it said BREAK (which ends it)."""
    found = _BREAK.search(text)
    if found is None:
        return text.strip(), False
    return text[:found.start()].strip(), True


def doctor_reply(text: str, mode: str) -> tuple[str, str]:
    """(message the patient reads, hidden reasoning).  In rationale mode only the part
    after ANSWER: is sent; without an ANSWER: part, nothing of a REASONING: part is."""
    if mode != "rationale":
        return text.strip(), ""
    found = _ANSWER.search(text)
    if found is not None:
        reasoning = _REASONING.sub("", text[:found.start()]).strip()
        return text[found.end():].strip(), reasoning
    if _REASONING.match(text):
        return "", _REASONING.sub("", text).strip()
    return text.strip(), ""


class ConsultationSimulator:
    def __init__(self, runtime: ModelRuntime, settings: Settings,
                 hint_provider: HintProvider | None = None,
                 max_utterances: int | None = None) -> None:
        self.runtime = runtime
        self.settings = settings
        self.prompts = load_prompts("dialogue")
        self.protocol = dialogue_protocol()
        self.hint_provider = hint_provider
        self.max_utterances = max_utterances or settings.dialogue_max_utterances

    # ---- prompts ----

    def _patient_messages(self, sample: Sample, turns: list[Turn]) -> list[dict[str, str]]:
        temperament = sample.metadata["personality"]
        traits = self.prompts.sections["temperaments"][temperament]
        system = self.prompts.text(
            "patient", "system", general_complaint=sample.input, temperament=temperament,
            complaints="\n".join(f"- {c}" for c in sample.metadata.get("complaints", [])),
            **traits)
        messages = [{"role": "system", "content": system},
                    {"role": "user", "content": self.prompts.text("patient", "opening")}]
        for turn in turns:
            if turn.speaker == "patient":
                messages.append({"role": "assistant", "content": turn.text})
            else:
                messages.append({"role": "user",
                                 "content": self.prompts.text("patient", "turn", doctor=turn.text)})
        return messages

    def _doctor_messages(self, mode: str, turns: list[Turn], hint: list[str]
                         ) -> list[dict[str, str]]:
        labels = ", ".join(self.protocol.labels)
        intro = self.prompts.text("doctor", "labels_intro", labels=labels)
        system = self.prompts.text("doctor", mode, labels_intro=intro,
                                   hint=", ".join(hint) or "none found")
        messages = [{"role": "system", "content": system}]
        for turn in turns:
            if turn.speaker == "patient":
                messages.append({"role": "user",
                                 "content": self.prompts.text("doctor", "turn", patient=turn.text)})
            else:
                messages.append({"role": "assistant", "content": turn.text})
        return messages

    # ---- the dialogue ----

    def _fits(self, model: Any, messages: list[dict[str, str]], max_tokens: int) -> bool:
        return model.count_tokens(messages) + max_tokens <= model.n_ctx

    def run(self, sample: Sample, mode: str, *, cancel: CancelToken | None = None,
            on_turn: Callable[[int, Turn], None] | None = None,
            resume: list[Turn] | None = None, assess: bool = True) -> Consultation:
        """The consultation of one case in one mode: the dialogue (from the utterances in
        `resume` on, when given), the extracted diagnosis and, with `assess`, the
        assessor's marks."""
        consultation = self.converse(sample, mode, cancel=cancel, on_turn=on_turn, resume=resume)
        consultation.diagnosis = self.extract(consultation, cancel)
        if assess:
            consultation.assessment = self.assess(consultation, sample.target, cancel)
        return consultation

    def converse(self, sample: Sample, mode: str, *, cancel: CancelToken | None = None,
                 on_turn: Callable[[int, Turn], None] | None = None,
                 resume: list[Turn] | None = None) -> Consultation:
        if mode not in MODES:
            raise LumenError(f"'{mode}' is not a consultation mode.",
                             f"Modes: {', '.join(MODES)}.")
        if mode == "hint" and self.hint_provider is None:
            raise LumenError("The hint mode needs past cases to draw its hint from.",
                             "Import a case set in the Knowledge tab first.")
        consultation = Consultation(sample.id, mode, sample.metadata["personality"])
        if mode == "hint":
            consultation.hint = list(self.hint_provider(sample))[:3]
        turns = consultation.turns
        turns.extend(resume or [])
        ended = next((t.ends for t in turns if t.ends), "")
        if ended:  # the dialogue had ended before the stop: only its scoring was left
            consultation.ended_by = ended
            return consultation
        patient = self.runtime.for_role("patient")
        doctor = self.runtime.for_role("generator")

        def add(turn: Turn) -> None:
            turns.append(turn)
            if on_turn is not None:
                on_turn(len(turns) - 1, turn)

        if not turns:
            # The patient opens with the main complaint; an empty opening (a small model's
            # failure) is replaced by the case's own words, so the doctor always has it.
            started = time.perf_counter()
            opening = patient.generate(self._patient_messages(sample, []),
                                       max_tokens=PATIENT_TOKENS, temperature=0.6, cancel=cancel)
            text, _ = patient_reply(opening.text)
            add(Turn("patient", text or sample.input, seconds=time.perf_counter() - started))
        while True:
            if len(turns) >= self.max_utterances:
                consultation.ended_by = "cap"
                break
            speaker_is_doctor = turns[-1].speaker == "patient"
            model, max_tokens = (doctor, DOCTOR_TOKENS) if speaker_is_doctor else (patient,
                                                                                   PATIENT_TOKENS)
            messages = (self._doctor_messages(mode, turns, consultation.hint) if speaker_is_doctor
                        else self._patient_messages(sample, turns))
            # The dialogue ends while its transcript, one more full reply included, still
            # fits the extraction's and the assessor's prompts: every consultation is scored.
            if not (self._fits(model, messages, max_tokens)
                    and self._scoring_fits(turns, sample.target, max_tokens)):
                consultation.ended_by = "context"
                break
            started = time.perf_counter()
            generation = model.generate(messages, max_tokens=max_tokens, temperature=0.6,
                                        cancel=cancel)
            seconds = time.perf_counter() - started
            if speaker_is_doctor:
                message, reasoning = doctor_reply(generation.text, mode)
                if not message and mode == "rationale":
                    message, reasoning, more_seconds = self._answer_part(
                        doctor, messages, generation.text, reasoning, cancel)
                    seconds += more_seconds
                ends = "no-dialogue" if mode == "no-dialogue" else ""
                add(Turn("doctor", message, reasoning, seconds, ends))
            else:
                message, said_break = patient_reply(generation.text)
                ends = "break" if said_break else ""
                add(Turn("patient", message, seconds=seconds, ends=ends))
            if ends:
                consultation.ended_by = ends
                break
        return consultation

    def _answer_part(self, doctor: Any, messages: list[dict[str, str]], reply: str,
                     reasoning: str, cancel: CancelToken | None) -> tuple[str, str, float]:
        """A rationale-mode reply that held only reasoning sends the patient nothing: the
        doctor is asked once more, as the next turn after that reply, for the message
        alone (the same request at the same seed would write the same reply). Returns
        (message, reasoning, seconds); the message stays empty when the doctor still
        writes none, and the transcript records it so."""
        follow_up = messages + [{"role": "assistant", "content": reply.strip()},
                                {"role": "user", "content": self.prompts.text("doctor", "answer_only")}]
        if not self._fits(doctor, follow_up, DOCTOR_TOKENS):
            return "", reasoning, 0.0
        started = time.perf_counter()
        again = doctor.generate(follow_up, max_tokens=DOCTOR_TOKENS, temperature=0.6, cancel=cancel)
        message, more = doctor_reply(again.text, "rationale")
        return message, "\n".join(part for part in (reasoning, more) if part), \
            time.perf_counter() - started

    # ---- after the dialogue ----

    def _scoring(self, turns: list[Turn], diagnosis: str
                 ) -> list[tuple[str, dict, list[dict[str, str]]]]:
        """The extraction's and the assessor's (section, schema, messages) for a transcript."""
        labels = list(self.protocol.labels)
        transcript = transcript_of(turns)
        return [(section, schema, [
            {"role": "system", "content": self.prompts.text(section, "system")},
            {"role": "user", "content": self.prompts.text(section, "user", **values)}])
            for section, schema, values in (
                ("extract", extraction_schema(labels),
                 {"labels": ", ".join(labels), "transcript": transcript}),
                ("assess", ASSESSOR_SCHEMA, {"diagnosis": diagnosis, "transcript": transcript}))]

    def _scoring_fits(self, turns: list[Turn], diagnosis: str, next_tokens: int) -> bool:
        """Whether the extraction and the assessor could still read the transcript after
        one more reply of `next_tokens` (a few more for its "Doctor: " line)."""
        judge = self.runtime.for_role("judge")
        return all(judge.count_tokens(messages) + next_tokens + 8
                   + json_reply_limit(schema, None) <= judge.n_ctx
                   for _section, schema, messages in self._scoring(turns, diagnosis))

    def _judge(self, section: str, consultation: Consultation, diagnosis: str,
               cancel: CancelToken | None) -> dict | None:
        judge = self.runtime.for_role("judge")
        _section, schema, messages = next(
            item for item in self._scoring(consultation.turns, diagnosis) if item[0] == section)
        try:
            value, _generation = judge.generate_json(messages, schema, temperature=0.0,
                                                     cancel=cancel)
        except (ModelOutputError, ContextOverflowError):
            # A transcript the judge cannot read (a run resumed with a smaller context):
            # no diagnosis, no marks, never a crash of the run.
            return None
        return value

    def extract(self, consultation: Consultation, cancel: CancelToken | None = None) -> str:
        """The final diagnosis in the transcript: a label, or "none" (also when the
        extraction's reply was unusable)."""
        value = self._judge("extract", consultation, NONE, cancel)
        return value["diagnosis"] if value else NONE

    def assess(self, consultation: Consultation, diagnosis: str,
               cancel: CancelToken | None = None) -> dict[str, Any] | None:
        """Items 1.1-3.2 as 0/1 and 4.1 as a competence level; None when unusable."""
        return self._judge("assess", consultation, diagnosis, cancel)


def case_base_hint(knowledge: Any) -> HintProvider:
    """A stand-in for the paper's image classifier: the labels of the most similar past
    cases in the Knowledge tab's case base (the case itself left out), most similar first."""
    protocol = dialogue_protocol()

    def hint(sample: Sample) -> list[str]:
        own = knowledge.casebase.ids_for_key(sample.id)
        retrieval = knowledge.retrieve(sample.input, ablation="no-knowledge", exclude_ids=own,
                                       k=10)
        found: list[str] = []
        for case in retrieval.cases:
            label = protocol.label_of(case.diagnosis)
            if label and label not in found:
                found.append(label)
        return found[:3]
    return hint
