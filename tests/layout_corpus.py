"""The layout corpus (tests/data/layouts, README there): each summary's hand-written facts,
and the comparison of what the facts parser read with them, field by field.  Used by
tests/test_layouts.py and by bench/bench_facts.py (which scores an older commit's parser
with this same code)."""

from __future__ import annotations

import re
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

CORPUS = Path(__file__).parent / "data" / "layouts"
HELD_OUT = Path(__file__).resolve().parents[1] / "bench" / "data" / "layouts-heldout"

MEDICATION_FIELDS = ("dose", "count", "route", "frequency", "as_needed", "time", "maximum",
                     "duration", "until", "status", "changed_from", "changed_to", "reason")
# Compared by containment either way: wording the summary gives in its own words.
LOOSE_FIELDS = ("reason", "changed_from", "changed_to")


@dataclass
class Expected:
    name: str  # the file's stem
    text: str
    facts: dict[str, Any]

    @property
    def layout(self) -> str:
        return self.facts.get("layout", "")

    @property
    def medications(self) -> list[dict[str, Any]]:
        return self.facts.get("medication", [])

    @property
    def date_order(self) -> str:
        return self.facts.get("date_order", "mdy")


def load(folder: Path = CORPUS) -> list[Expected]:
    found = []
    for path in sorted(folder.glob("*.txt")):
        facts_path = path.with_name(path.stem + ".facts.toml")
        found.append(Expected(path.stem, path.read_text(encoding="utf-8"),
                              tomllib.loads(facts_path.read_text(encoding="utf-8"))))
    return found


def _norm(value: Any) -> str:
    text = str(value).lower().replace("µ", "micro").replace("’", "'")
    text = re.sub(r"\s+", " ", text)
    return text.strip(" .,;:-()")


def _words(value: str) -> str:
    return " " + re.sub(r"[^a-z0-9/.%]+", " ", _norm(value)).strip() + " "


def same_name(expected: str, read: str) -> bool:
    """The same medicine: the same name, or one's words inside the other's ("Enoxaparin"
    and "Enoxaparin sodium")."""
    a, b = _words(expected), _words(read)
    return a.strip() != "" and (a in b or b in a)


def same_value(key: str, expected: Any, read: Any) -> bool:
    if key == "as_needed":
        return bool(expected) == bool(read)
    a, b = _norm(expected), _norm(read)
    if key == "count" and not a.endswith(")"):
        # "2 mL (1.6 mg)": the volume taken, with the medicine it holds when the summary says it
        b = re.sub(r"\s*\(\d[\d.,]*\s*[a-z]+\)?$", "", b)  # (_norm took the last ")")
    if key in LOOSE_FIELDS:
        # "25mg BD" as written and "25 mg BD" as read are the same words, "75 mcg" and "75
        # micrograms" the same dose, "2 tabs" and "2 tablets" the same count
        a, b = (re.sub(r"(\d)\s+(?=[a-z])", r"\1", re.sub(r"\btab(?:let)?s?\b", "tab", re.sub(
            r"(?<=\d)(\s*)(?:mcg|µg|ug)\b", r"\1micrograms", value))) for value in (a, b))
        # (from a word's start, and more than a letter: a reason read as "H" is not "H. pylori
        # eradication")
        short, long = sorted((a, b), key=len)
        return len(re.sub(r"[^a-z0-9]", "", short)) >= 2 and re.search(
            r"(?<![a-z0-9])" + re.escape(short), long) is not None
    if key == "until" and not re.match(r"(\d{4}|-)-\d{2}-\d{2}$", a):
        return bool(a) and bool(b) and (a in b or b in a)
    return a == b


@dataclass
class FieldCounts:
    right: int = 0      # read and equal to the expected value
    read: int = 0       # read (a value, right or wrong)
    expected: int = 0   # expected (a value)

    def add(self, other: "FieldCounts") -> None:
        self.right += other.right
        self.read += other.read
        self.expected += other.expected

    @property
    def precision(self) -> float:
        return self.right / self.read if self.read else 1.0

    @property
    def recall(self) -> float:
        return self.right / self.expected if self.expected else 1.0


@dataclass
class Comparison:
    fields: dict[str, FieldCounts] = field(default_factory=dict)
    missing: list[str] = field(default_factory=list)   # expected medicines not read
    extra: list[str] = field(default_factory=list)     # medicines read but not expected
    wrong: list[str] = field(default_factory=list)     # "name.field: expected X, read Y"

    @property
    def every_medicine(self) -> bool:
        return not self.missing


def _present(key: str, value: Any) -> bool:
    return bool(value) if key == "as_needed" else _norm(value) != ""


def compare_medications(expected: list[dict[str, Any]], read: list[dict[str, Any]]) -> Comparison:
    """Field-level counts of `read` (the parser's medications, as dicts) against
    `expected` (a facts file's [[medication]] tables)."""
    result = Comparison({key: FieldCounts() for key in ("name", *MEDICATION_FIELDS)})
    unmatched = list(range(len(read)))
    for want in expected:
        index = next((i for i in unmatched if same_name(want["name"], read[i]["name"])), None)
        names = result.fields["name"]
        names.expected += 1
        if index is None:
            result.missing.append(want["name"])
            for key in MEDICATION_FIELDS:
                result.fields[key].expected += _present(key, want.get(key, ""))
            continue
        unmatched.remove(index)
        names.right += 1
        names.read += 1
        got = read[index]
        for key in MEDICATION_FIELDS:
            counts = result.fields[key]
            wanted, value = want.get(key, False if key == "as_needed" else ""), got.get(key, "")
            counts.expected += _present(key, wanted)
            counts.read += _present(key, value)
            if _present(key, wanted) and same_value(key, wanted, value):
                counts.right += 1
            elif _present(key, wanted) or _present(key, value):
                result.wrong.append(f"{want['name']}.{key}: expected {wanted!r}, read {value!r}")
    for index in unmatched:
        result.extra.append(read[index]["name"])
        result.fields["name"].read += 1
        for key in MEDICATION_FIELDS:
            result.fields[key].read += _present(key, read[index].get(key, ""))
    return result


def compare_other(expected: Expected, facts: dict[str, Any]) -> list[str]:
    """What the parser missed of the follow-ups, warning signs and restrictions."""
    problems = []
    for want in expected.facts.get("follow_up", []):
        found = [f for f in facts["follow_ups"]
                 if (not want.get("when") or _norm(want["when"]) == _norm(f["when"]))
                 and (not want.get("who") or _norm(want["who"]) in _norm(f["who"] + " " + f["text"]))
                 and (not want.get("test") or _norm(want["test"]) in _norm(f["test"] + " " + f["text"]))]
        if not found:
            problems.append(f"follow-up {want}")
    for want in expected.facts.get("warning", []):
        if not any(_norm(want["contains"]) in _norm(w["text"]) for w in facts["warning_signs"]):
            problems.append(f"warning {want['contains']!r}")
    for want in expected.facts.get("restriction", []):
        if not any(_norm(want["contains"]) in _norm(r["text"]) and r["kind"] == want["kind"]
                   for r in facts["restrictions"]):
            problems.append(f"restriction {want['kind']}: {want['contains']!r}")
    return problems
