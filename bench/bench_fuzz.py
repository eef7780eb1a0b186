"""Benchmark: the importers under a long fuzzing run (issue #15).

Runs tests/test_fuzz.py with LUMEN_FUZZ_EXAMPLES examples per reader (default 5,000:
over 100,000 files in all across the 20 reader tests), randomised (the suite's short run
is derandomised), and prints how many files were tried, how many crashed (an exception
that is not a LumenError), how many ran past the per-file deadline (hypothesis's
`deadline`, 10 s here), the wall time and the run's peak memory (the pytest process's
maximum resident set).  What a benchmark importer returns is saved into a real database
(issue #32), so a failure to store is a crash too.  pytest reports the first failing input of
any reader, shrunk, so a crash comes with the file that caused it.

    python bench/bench_fuzz.py [--examples 5000]
"""

from __future__ import annotations

import argparse
import os
import resource
import re
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--examples", type=int, default=5000, help="examples per reader test")
    args = parser.parse_args()
    env = dict(os.environ, LUMEN_FUZZ_EXAMPLES=str(args.examples), LUMEN_FUZZ_DEADLINE_MS="10000")
    started = time.perf_counter()
    run = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                          "tests/test_fuzz.py", "-k", "never_crash", "--hypothesis-show-statistics"],
                         cwd=ROOT, env=env, capture_output=True, text=True)
    seconds = time.perf_counter() - started
    output = run.stdout + run.stderr
    tests = re.findall(r"tests/test_fuzz\.py::(\S+):", output)
    counted = re.findall(r"- (\d+) passing, (\d+) failing", output)
    passing = [int(p) for p, _f in counted]
    failing = [int(f) for _p, f in counted]
    deadline = output.count("DeadlineExceeded")
    summary = re.findall(r"(\d+ (?:passed|failed).*?) in ", output)
    print(f"reader tests: {len(set(tests)) or len(passing)}; files tried: {sum(passing) + sum(failing):,} "
          f"({args.examples:,} asked per test); crashing files: {sum(failing)}; past the "
          f"10 s deadline: {deadline}; wall time {seconds:.0f} s; peak memory "
          f"{resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024:.0f} MB; "
          f"pytest: {summary[-1] if summary else '?'}")
    if run.returncode != 0:
        print(output[-6000:])
    return run.returncode


if __name__ == "__main__":
    sys.exit(main())
