"""Benchmark: jargon matching over clinical-style text, against a naive regex loop.

The full glossary is Lumen's own entries plus the 1,017 MedlinePlus topics of
../shared/data/medlineplus (imported into a throwaway encrypted database; without
shared/ the benchmark says so and uses Lumen's entries alone).  The text is built
from sentence templates written for this benchmark, filled with glossary names and
plain words, to a target size.  The baseline compiles one regular expression per
name (word boundaries, case-insensitive for words, an optional plural "s") and runs
each over the text, as a first implementation might.  Both run in the same process.
"""

from __future__ import annotations

import argparse
import random
import re
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from desktop_app.core import offline  # noqa: E402

offline.activate()

from desktop_app.core.glossary.glossary import Glossary, load_glossary  # noqa: E402
from desktop_app.core.glossary.medlineplus import import_medlineplus  # noqa: E402
from desktop_app.core.store import open_store  # noqa: E402

MPLUS = ROOT.parent / "shared" / "data" / "medlineplus" / "mplus_topics_2025-10-12.xml"
TEMPLATES = [
    "The patient was seen on the ward for {a} and was started on {b}.",
    "History of {a}; {b} was checked before discharge and was stable.",
    "She reports {a} since Tuesday, worse at night, and asks about {b}.",
    "Plan: continue {a}, review {b} at the follow-up visit in two weeks.",
    "{a} noted on admission. No sign of {b} today. Walking with a frame.",
    "Family were told about the {a}; the team will call if {b} changes.",
]
PLAIN = ["the kitchen", "a quiet morning", "his daughter", "the bus home", "a cup of tea",
         "the weekend", "her garden", "the stairs at home"]


def build_text(glossary: Glossary, size: int, seed: int = 7) -> str:
    rng = random.Random(seed)
    names = [name for entry in glossary.entries for name in (entry.term, *entry.abbreviations)]
    parts, length = [], 0
    while length < size:
        fill = [rng.choice(names) if rng.random() < 0.7 else rng.choice(PLAIN) for _ in range(2)]
        sentence = rng.choice(TEMPLATES).format(a=fill[0], b=fill[1])
        parts.append(sentence)
        length += len(sentence) + 1
    return " ".join(parts)[:size]


def naive_patterns(glossary: Glossary) -> list[re.Pattern]:
    patterns = []
    for entry in glossary.entries:
        for name in {entry.term, *entry.aliases}:
            if len(name) >= 3:
                patterns.append(re.compile(r"(?<!\w)" + re.escape(name) + r"s?(?!\w)", re.IGNORECASE))
        for abbreviation in entry.abbreviations:
            patterns.append(re.compile(r"(?<!\w)" + re.escape(abbreviation) + r"s?(?!\w)"))
    return patterns


def naive_match(patterns: list[re.Pattern], text: str) -> int:
    found = 0
    for pattern in patterns:
        found += sum(1 for _ in pattern.finditer(text))
    return found


def timed(fn, repeats: int) -> float:
    times = []
    for _ in range(repeats):
        started = time.perf_counter()
        fn()
        times.append(time.perf_counter() - started)
    return statistics.median(times)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--megabytes", type=float, default=1.0)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()

    with tempfile.TemporaryDirectory(prefix="lumen-bench-") as folder:
        store = open_store(Path(folder) / "bench.db", "benchmark passphrase")
        if MPLUS.exists():
            import_medlineplus(store, MPLUS)
        else:
            print("Note: ../shared/data/medlineplus is absent; Lumen's own entries only.")
        glossary = load_glossary(store)
        store.close()
    counts = glossary.counts()
    size = int(args.megabytes * 1_000_000)
    text = build_text(glossary, size)

    started = time.perf_counter()
    matcher = glossary.matcher
    build_seconds = time.perf_counter() - started
    sizes = [size // 4, size // 2, size]
    ours = {n: timed(lambda n=n: matcher.match(text[:n]), args.repeats) for n in sizes}
    matches = len(matcher.match(text))
    patterns = naive_patterns(glossary)
    naive_seconds = timed(lambda: naive_match(patterns, text), 1)

    print(f"Glossary: {len(glossary.entries)} entries ({counts.get('lumen', 0)} Lumen, "
          f"{counts.get('medlineplus', 0)} MedlinePlus); {matcher.word_forms} word forms and "
          f"{matcher.abbreviation_forms} abbreviation forms in the automata "
          f"(built in {build_seconds:.2f} s); naive loop: {len(patterns)} regexes")
    print(f"Text: {len(text):,} characters; {matches:,} matches\n")
    print("| measure | Lumen matcher | naive regex loop | naive ÷ Lumen |")
    print("|---|---|---|---|")
    print(f"| {len(text) / 1e6:.2f} MB, seconds | {ours[size]:.3f} | {naive_seconds:.2f} | "
          f"{naive_seconds / ours[size]:.0f}× |")
    print("\nScaling of the Lumen matcher (seconds per MB should stay flat):")
    for n in sizes:
        print(f"  {n / 1e6:.2f} MB: {ours[n]:.3f} s ({ours[n] / (n / 1e6):.3f} s/MB)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
