"""Helpers shared by the tests."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared"
TEST_PASSPHRASE = "a test passphrase for lumen"


def smollm2_file(models_dir: Path) -> Path:
    return models_dir / "smollm2-135m-instruct-q4_1" / "SmolLM2-135M-Instruct.Q4_1.gguf"


def starts_processes(function):
    """Tags a helper that starts a process: a test that calls it, or calls a function that
    does, is in the `subprocess` lane (tests/lanes.py)."""
    function.starts_processes = True
    return function


@starts_processes
def run_lumen(*args: str, env: dict | None = None, timeout: int = 300,
              input: str | None = None) -> subprocess.CompletedProcess:
    """Run the real `lumen` entry point in a child process."""
    full_env = dict(os.environ)
    full_env.update(env or {})
    return subprocess.run([sys.executable, "-m", "desktop_app", *args], capture_output=True,
                          text=True, env=full_env, timeout=timeout, input=input,
                          cwd=ROOT)


def assert_fills_the_page(pdf) -> None:
    """The first page of an exported PDF, rendered as a reader sees it (pypdfium2), is laid
    out at print size: the text spans the page between its margins, and a line of body text
    is as tall as print makes it (a page drawn at a quarter of its size fails both)."""
    import numpy as np
    import pytest

    pdfium = pytest.importorskip("pypdfium2", reason="pypdfium2 renders the PDF (test extra)")
    page = pdfium.PdfDocument(str(pdf))[0].render(scale=1).to_numpy()
    height, width = page.shape[:2]
    ink = np.argwhere(page.min(axis=2) < 200)
    (top, left), (_bottom, right) = ink.min(axis=0), ink.max(axis=0)
    # 18 mm margins on 210 mm: the text runs from about 8.6% to beyond 80% of the width.
    assert left / width < 0.12 and right / width > 0.8 and top / height < 0.12, (left, right, top)
    # Body text at print size: a 10 pt line is about 1.2% of the page's height, not 0.3%.
    rows = np.flatnonzero((page.min(axis=2) < 128).any(axis=1))
    lines = np.split(rows, np.flatnonzero(np.diff(rows) > 1) + 1)
    assert np.median([len(line) for line in lines]) / height > 0.006
