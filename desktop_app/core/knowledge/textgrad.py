"""Med-TextGrad (DoctorRAG, Algorithm 1): refining an answer with critics and textual gradients.

Each round t of T: the generator writes an answer A_t from the prompt P_t; a context
critic (A_t against the retrieved material C) and a patient critic (A_t against the
question q) write critiques; for each critique an answer gradient says how to revise
A_t, and a prompt gradient says how to change P_t; in every round but the last, a
prompt update (textual gradient descent) combines both prompt gradients into P_{t+1}.
The answer of the last round is the result: 8 model calls a round, 7 in the last.

One deliberate difference from the paper: P_t holds the instructions only.  The
question and the retrieved material are attached to every generator call unchanged,
so a small model rewriting the prompt cannot drop or alter a source.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any, Callable

from ..progress import CancelToken, ProgressCallback, report
from ..prompts import PromptSet

# call(system, user, max_tokens, purpose, on_token) -> the model's reply text
ModelCall = Callable[[str, str, int, str, Callable[[str], None] | None], str]
EventCallback = Callable[[str, dict[str, Any]], None]


def refinement_calls(rounds: int) -> int:
    """Model calls Med-TextGrad makes for T rounds (shown before a user starts it)."""
    return 8 * rounds - 1 if rounds > 0 else 0


@dataclass
class Round:
    number: int
    prompt: str  # P_t: the instructions used this round
    answer: str  # A_t
    context_critique: str
    patient_critique: str
    answer_gradient_context: str
    answer_gradient_patient: str
    prompt_gradient_context: str
    prompt_gradient_patient: str
    updated_prompt: str = ""  # P_{t+1}; empty in the last round

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def med_textgrad(call: ModelCall, prompts: PromptSet, *, question: str, context: str,
                 first_answer: str, rounds: int, answer_tokens: int, critique_tokens: int,
                 on_event: EventCallback | None = None, progress: ProgressCallback = None,
                 cancel: CancelToken | None = None) -> tuple[str, list[Round]]:
    emit = on_event or (lambda kind, data: None)
    critique_system = prompts.text("textgrad", "system_critique")
    write_system = prompts.text("textgrad", "system_write")
    prompt = prompts.text("refine_prompt", "text")
    answer = first_answer
    timeline: list[Round] = []
    total = refinement_calls(rounds)
    done = 0

    def step(system: str, user: str, tokens: int, purpose: str, stream: bool = False) -> str:
        nonlocal done
        if cancel is not None:
            cancel.raise_if_cancelled()
        report(progress, done, total, f"Refining: {purpose.replace('_', ' ')}")
        text = call(system, user, tokens, purpose,
                    (lambda piece: emit("token", {"purpose": purpose, "text": piece})) if stream else None)
        done += 1
        return text.strip()

    for t in range(rounds):
        emit("stage", {"stage": "refine", "round": t + 1, "rounds": rounds})
        # (a) the generator: P_t with the question, the material and the current answer.
        answer = step(write_system, prompts.text(
            "refine_prompt", "with_answer", prompt=prompt, question=question, context=context,
            answer=answer), answer_tokens, "generator", stream=True) or answer
        # (b) the critics.
        context_critique = step(critique_system, prompts.text(
            "context_critic", "user", context=context, answer=answer), critique_tokens, "context_critic")
        patient_critique = step(critique_system, prompts.text(
            "patient_critic", "user", question=question, answer=answer), critique_tokens, "patient_critic")
        # (c) answer-level gradients.
        gradient_context = step(critique_system, prompts.text(
            "answer_gradient_context", "user", answer=answer, context=context,
            critique=context_critique), critique_tokens, "answer_gradient_context")
        gradient_patient = step(critique_system, prompts.text(
            "answer_gradient_patient", "user", answer=answer, question=question,
            critique=patient_critique), critique_tokens, "answer_gradient_patient")
        # (d) prompt-level gradients.
        prompt_gradient_context = step(write_system, prompts.text(
            "prompt_gradient_context", "user", prompt=prompt, answer=answer,
            gradient=gradient_context), critique_tokens, "prompt_gradient_context")
        prompt_gradient_patient = step(write_system, prompts.text(
            "prompt_gradient_patient", "user", prompt=prompt, answer=answer,
            gradient=gradient_patient), critique_tokens, "prompt_gradient_patient")
        this_round = Round(t + 1, prompt, answer, context_critique, patient_critique,
                           gradient_context, gradient_patient, prompt_gradient_context,
                           prompt_gradient_patient)
        # (e) the prompt update, in every round but the last.
        if t < rounds - 1:
            updated = step(write_system, prompts.text(
                "prompt_update", "user", prompt=prompt, answer=answer,
                gradient_context=prompt_gradient_context, gradient_patient=prompt_gradient_patient,
                question=question, first_answer=first_answer), critique_tokens * 2, "prompt_update")
            # An empty update would lose the instructions; the round keeps the old ones.
            this_round.updated_prompt = updated
            prompt = updated or prompt
        timeline.append(this_round)
        emit("round", {"round": this_round.to_dict()})
    report(progress, total, total, "Refinement done")
    return answer, timeline
