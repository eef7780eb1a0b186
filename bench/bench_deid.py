"""Benchmark: de-identification time per megabyte, and that it grows linearly (issue #15).

Texts of 0.25, 0.5, 1 and 2 MB are built from sentence templates written for this
benchmark (names, dates, phone and record numbers among clinical words, about one
identifier per 60 characters), then de-identified (knowledge/deid.py) with a known name.
The baseline, measured on the same text in the same run, is one pass of a single
compiled regular expression for digit runs: de-identification runs some fifty rules
with several passes, so the ratio says what the rule set costs against the cheapest
possible scan.  Linear growth shows as a flat time per character from the smallest
text to the largest.

    python bench/bench_deid.py [--sizes 0.25,0.5,1,2]
"""

from __future__ import annotations

import argparse
import random
import re
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from desktop_app.core.knowledge.deid import deidentify  # noqa: E402

TEMPLATES = (
    "{name} came in on {date} with a cough for {n} days.",
    "Seen by Dr. {surname} in clinic; call {phone} with questions.",
    "MRN {mrn}. Chest pain eased after rest and aspirin.",
    "The daughter, {name}, says he walks less since {date}.",
    "Blood pressure was steady and the wound looks clean.",
    "Follow up with the heart clinic in {n} weeks.",
)
FIRST = ("Ana", "Ben", "Chloe", "Dev", "Eva", "Femi", "Goran", "Hana")
LAST = ("Okafor", "Lindqvist", "Moreau", "Tanaka", "Silva", "Novak", "Haddad", "Byrne")


def text_of(size: int, rng: random.Random) -> str:
    parts, length = [], 0
    while length < size:
        sentence = rng.choice(TEMPLATES).format(
            name=f"{rng.choice(FIRST)} {rng.choice(LAST)}", surname=rng.choice(LAST),
            date=f"{rng.randint(1, 12):02d}/{rng.randint(1, 28):02d}/20{rng.randint(10, 25)}",
            phone=f"555-{rng.randint(100, 999)}-{rng.randint(1000, 9999)}",
            mrn=rng.randint(1_000_000, 9_999_999), n=rng.randint(2, 9))
        parts.append(sentence)
        length += len(sentence) + 1
    return " ".join(parts)[:size]


def best_of(runs: int, call) -> float:
    best = float("inf")
    for _ in range(runs):
        started = time.perf_counter()
        call()
        best = min(best, time.perf_counter() - started)
    return best


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="0.25,0.5,1,2", help="megabytes, comma-separated")
    args = parser.parse_args()
    rng = random.Random(42)
    digits = re.compile(r"\d+")
    rows = []
    for megabytes in (float(s) for s in args.sizes.split(",")):
        size = int(megabytes * 1_000_000)
        text = text_of(size, rng)
        seconds = best_of(2, lambda: deidentify(text, known_names=["Ana Okafor"]))
        scan = best_of(3, lambda: digits.findall(text))
        removed = len(deidentify(text[:200_000], known_names=["Ana Okafor"]).removals)
        rows.append((megabytes, seconds, scan, removed))
        print(f"{megabytes:5.2f} MB: {seconds:6.2f} s ({seconds / megabytes:5.2f} s/MB, "
              f"{seconds / size * 1e6:4.2f} µs/char); one regex scan {scan * 1000:6.1f} ms; "
              f"ratio {seconds / scan:5.0f}×; {removed} identifiers in the first 200 kB", flush=True)
    first, last = rows[0], rows[-1]
    growth = (last[1] / last[0]) / (first[1] / first[0])
    print(f"time per MB at {last[0]} MB ÷ at {first[0]} MB: {growth:.2f} (1.00 is linear)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
