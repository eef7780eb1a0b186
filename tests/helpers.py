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


def run_lumen(*args: str, env: dict | None = None, timeout: int = 300,
              input: str | None = None) -> subprocess.CompletedProcess:
    """Run the real `lumen` entry point in a child process."""
    full_env = dict(os.environ)
    full_env.update(env or {})
    return subprocess.run([sys.executable, "-m", "desktop_app", *args], capture_output=True,
                          text=True, env=full_env, timeout=timeout, input=input,
                          cwd=ROOT)
