"""The one retry loop (core/pipelines/retry.py) that Ask's extraction and simplification
and each handout section use.  Its attempts here are plain functions, so each stopping
rule is seen on its own; the real loop with the embedded model runs in tests/test_ask.py
and tests/test_simplify.py."""

from desktop_app.core.pipelines.retry import attempts_until_passed
from desktop_app.core.pipelines.trace import Attempt, Trace


def trace() -> Trace:
    return Trace("ask", "lamp", "glossary", "test", "test", {}, {}, "")


def attempt_of(texts: list[str], passing: set[str], seen: list[tuple[int, str, str]]):
    def make(number: int, previous: str, feedback: str) -> Attempt:
        seen.append((number, previous, feedback))
        text = texts[number - 1]
        return Attempt("extraction", number, text,
                       checks=[{"name": "facts", "passed": text in passing,
                                "detail": "" if text in passing else f"{text} is wrong",
                                "score": None}])
    return make


def test_it_stops_at_the_first_attempt_that_passes_and_keeps_every_attempt():
    seen: list = []
    kept = trace()
    attempts = attempts_until_passed(
        5, attempt_of(["a", "b", "c", "d", "e"], {"c"}, seen),
        lambda failed: f"fix {failed.text}", kept)
    assert [a.text for a in attempts] == ["a", "b", "c"]
    assert kept.attempts == attempts and attempts[-1].passed
    # Each try is given the one before it and the feedback on it.
    assert seen == [(1, "", ""), (2, "a", "fix a"), (3, "b", "fix b")]
    assert [a.feedback for a in attempts] == ["fix a", "fix b", ""]


def test_it_stops_at_the_last_try_without_asking_for_feedback_nobody_will_read():
    asked: list[str] = []
    attempts = attempts_until_passed(
        2, attempt_of(["a", "b"], set(), []),
        lambda failed: asked.append(failed.text) or "again", trace())
    assert [a.text for a in attempts] == ["a", "b"] and asked == ["a"]


def test_it_stops_when_the_model_writes_what_it_wrote_before():
    attempts = attempts_until_passed(5, attempt_of(["a", "b", "a", "c", "d"], set(), []),
                                     lambda failed: "again", trace())
    assert [a.text for a in attempts] == ["a", "b", "a"]


def test_it_stops_when_there_is_no_feedback_to_give():
    # Simplify's ablation without a verifier: only the grade failed, nothing to say.
    attempts = attempts_until_passed(3, attempt_of(["a", "b", "c"], set(), []),
                                     lambda failed: "", trace())
    assert [a.text for a in attempts] == ["a"]
    one_try = attempts_until_passed(3, attempt_of(["a", "b", "c"], set(), []), None, trace())
    assert [a.text for a in one_try] == ["a"]


def test_every_attempt_is_reported_after_its_feedback():
    reported: list[tuple[str, str]] = []
    attempts_until_passed(3, attempt_of(["a", "b", "c"], {"b"}, []),
                          lambda failed: f"fix {failed.text}", trace(),
                          lambda attempt: reported.append((attempt.text, attempt.feedback)))
    assert reported == [("a", "fix a"), ("b", "")]
