"""The one retry loop of every text a model writes for a reader: Ask's extraction and
simplification, and each section of a handout (issue #16), and the conversation its
retries, reviews and verifications are turns of (Turns).

An attempt is made and checked; one that passes ends the loop.  Otherwise the feedback
for the next try (the checks' findings, and the reviewer's or verifier's advice) is asked
for, and the next attempt is made with it.  The loop also ends at the last try, when the
model writes what it wrote before (at temperature 0 the next try would too), or when
there is no feedback to give (another try with the same prompt changes nothing).  Every
attempt goes into the trace, passed or not.
"""

from __future__ import annotations

from typing import Callable

from .trace import Attempt, Trace

# (number, the previous attempt's text, the feedback on it) -> the checked attempt
MakeAttempt = Callable[[int, str, str], Attempt]
# The failed attempt -> the feedback for the next try ("" for none: stop)
FeedbackFor = Callable[[Attempt], str]


def attempts_until_passed(tries: int, make: MakeAttempt, feedback_for: FeedbackFor | None,
                          trace: Trace, on_attempt: Callable[[Attempt], None] | None = None
                          ) -> list[Attempt]:
    attempts: list[Attempt] = []
    previous, feedback = "", ""
    for number in range(1, tries + 1):
        attempt = make(number, previous, feedback)
        attempts.append(attempt)
        trace.attempts.append(attempt)
        last = (attempt.passed or number == tries or feedback_for is None
                or repeats(attempt, attempts))
        if not last:
            feedback = feedback_for(attempt)
            attempt.feedback = feedback
            last = not feedback
        if on_attempt is not None:
            on_attempt(attempt)
        if last:
            break
        previous = attempt.text
    return attempts


def repeats(attempt: Attempt, attempts: list[Attempt]) -> bool:
    """The model wrote what it wrote before: with the same prompt state a further try
    would too (at temperature 0), so trying again costs time and changes nothing."""
    return any(other.text == attempt.text for other in attempts if other is not attempt)


class Turns:
    """A first request and the replies to it.  A review, a verification or a retry is the
    turn after a reply: the request, the reply as the model wrote it (the assistant's
    turn), then the new request; llama.cpp then reuses the state of the request and
    often of the reply, and evaluates only the new request."""

    def __init__(self, request: list[dict[str, str]], empty: str) -> None:
        self.request = request
        self.empty = empty  # shown in place of an empty reply
        self.replies: dict[int, str] = {}  # attempt number -> the reply

    def after(self, number: int, user: str) -> list[dict[str, str]]:
        reply = self.replies[number] or self.empty
        return self.request + [{"role": "assistant", "content": reply},
                               {"role": "user", "content": user}]
