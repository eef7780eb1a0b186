"""Text in a summary is data, never instructions.

Three defences, besides the prompts' own framing (the summary sits between
<summary> tags under a system message that says it is information only):

1. Control markers are neutralised.  Prompts are tokenised with special tokens
   enabled (the chat template needs them), so a summary holding "<|im_start|>system"
   would otherwise become real control tokens and step outside its block.  Such
   sequences in anything a user supplies get a zero-width joiner inserted, so the
   tokenizer reads them as plain text; a patient sees no difference.
2. Lines that read like instructions to an AI ("ignore previous instructions",
   "you are now", "reply only with") are found and listed in the trace.
3. If an answer repeats words that appear only in those lines, it is flagged for
   the reader, like an unsupported number.
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass, field

_JOINER = "\u2060"  # WORD JOINER: invisible, and breaks the marker for the tokenizer
_CONTROL = re.compile(
    r"<\|[^|<>\n]{1,40}\|>|</?s>|\[/?INST\]|<<SYS>>|<</SYS>>|<start_of_turn>|<end_of_turn>"
    r"|<\|endoftext\|>|<bos>|<eos>", re.IGNORECASE)
_INSTRUCTION = re.compile(
    r"\b(ignore|disregard|forget|override)\b.{0,40}\b(instructions?|prompts?|rules|above|previous|prior)\b"
    r"|\byou are (now|no longer)\b|\b(system|developer) (prompt|message)\b"
    r"|\b(reply|respond|answer|output|say|print)\b.{0,20}\bonly\b.{0,30}\b(with|the word|the text)\b"
    r"|\bpretend (to be|you are)\b|\bjailbreak\b|\bnew instructions?\b",
    re.IGNORECASE)
_WORD = re.compile(r"[A-Za-z][A-Za-z'-]{3,}")
_COMMON = {"ignore", "previous", "instructions", "instruction", "reply", "respond", "answer",
           "only", "with", "word", "text", "that", "this", "your", "from", "above", "prior",
           "prompt", "system", "message", "rules", "disregard", "forget", "override", "output",
           "print", "now", "longer", "should", "must", "will", "what", "when", "they", "them",
           "have", "there", "their", "about", "follow", "obey", "please", "patient", "summary"}


def neutralise_control_markers(text: str) -> tuple[str, int]:
    """The text with chat-template control markers broken up, and how many there were."""
    count = 0

    def breakup(match: re.Match) -> str:
        nonlocal count
        count += 1
        marker = match.group(0)
        return marker[0] + _JOINER + marker[1:]
    return _CONTROL.sub(breakup, text), count


@dataclass
class SafetyReport:
    control_markers: int = 0
    instruction_lines: list[str] = field(default_factory=list)
    echoed_words: list[str] = field(default_factory=list)

    def to_dict(self) -> dict:
        return asdict(self)


def reads_like_instruction(text: str) -> bool:
    """A line that tells an AI what to do: never evidence, never quoted to a model."""
    return bool(_INSTRUCTION.search(text))


def inspect_document(text: str) -> SafetyReport:
    _, markers = neutralise_control_markers(text)
    lines = [line.strip() for line in text.splitlines() if _INSTRUCTION.search(line)]
    return SafetyReport(markers, lines[:20])


def echoed_instruction_words(answer: str, document: str, report: SafetyReport) -> list[str]:
    """Distinctive words of instruction-like lines that the answer repeats, when the rest
    of the document never uses them."""
    if not report.instruction_lines:
        return []
    rest = document
    for line in report.instruction_lines:
        rest = rest.replace(line, " ")
    rest_words = {w.lower() for w in _WORD.findall(rest)}
    answer_words = {w.lower() for w in _WORD.findall(answer)}
    suspicious = set()
    for line in report.instruction_lines:
        for word in _WORD.findall(line):
            lowered = word.lower()
            if lowered not in _COMMON and lowered not in rest_words and lowered in answer_words:
                suspicious.add(word)
    return sorted(suspicious)
