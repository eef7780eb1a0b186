"""What a cold command loads (issue #35): IT scripts call `lumen` once per file, so a
command pays for every library it imports.  Each command below runs in a fresh process
and must not import the heavy libraries it has no use for."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from helpers import ROOT, starts_processes

SUMMARY = ROOT / "tests" / "data" / "layouts" / "30-caps_colon-ed-kidney-stone.txt"

# Lumen's costly imports (each a tenth of a second to a second on 2 cores; keyring brings
# D-Bus and cryptography, a tenth of a second, asked only when a database is opened).
HEAVY = ("numpy", "scipy", "onnxruntime", "tokenizers", "llama_cpp", "chromadb", "nltk",
         "textstat", "wordfreq", "PySide6", "jinja2", "sacrebleu", "rouge_score", "httpx",
         "pyarrow", "rank_bm25", "keyring")

# command → the heavy libraries it may import; any other is a regression.
MAY_IMPORT = {
    ("--version",): set(),
    ("facts", str(SUMMARY)): set(),
    ("ask", "--summary", str(SUMMARY), "--question", "What do I take for the pain?",
     "--method", "evidence"): {"numpy", "onnxruntime", "tokenizers", "textstat", "wordfreq",
                               "rank_bm25"},
    ("evaluate", "list"): set(),
    # A name the glossary knows is answered without the embedder (the search by meaning
    # runs only when no name matches).
    ("glossary", "lookup", "heart failure"): set(),
    ("history",): set(),
}

# Runs the command line in this process, then says which of HEAVY were imported.
RUN_AND_LIST = """
import json, sys
heavy = json.loads(sys.argv[1])
from desktop_app.cli import main
try:
    code = main(sys.argv[2:])
except SystemExit as exit:
    code = exit.code
print(json.dumps({"code": code, "imported": sorted(h for h in heavy if h in sys.modules)}))
"""


# Commands that open no database run as on a workstation without LUMEN_PASSPHRASE: there,
# asking whether a passphrase is needed would import keyring.
NO_DATABASE = ("--version", "facts")


@starts_processes
def imported_by(arguments: tuple[str, ...]) -> tuple[int, set[str]]:
    env = dict(os.environ)
    if arguments[0] in NO_DATABASE:
        env.pop("LUMEN_PASSPHRASE", None)
    result = subprocess.run([sys.executable, "-c", RUN_AND_LIST, json.dumps(HEAVY), *arguments],
                            cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr[-2000:]
    outcome = json.loads(result.stdout.strip().splitlines()[-1])
    return outcome["code"], set(outcome["imported"])


@pytest.mark.quick
def test_each_command_imports_only_the_heavy_libraries_it_uses(profile, passphrase_env):
    imported = {}
    for arguments, allowed in MAY_IMPORT.items():
        code, found = imported_by(arguments)
        assert code in (0, None), (arguments, code)
        imported[arguments[0]] = found
        assert found <= allowed, f"lumen {' '.join(arguments)} imports {sorted(found - allowed)}"
    # The check sees what is imported: the evidence answer needs the embedder and textstat.
    assert {"onnxruntime", "textstat"} <= imported["ask"]
    # Once the profile's cache holds the word-grade table, wordfreq (with langcodes and
    # ftfy, a third of a second) is no longer imported to answer.
    evidence = next(arguments for arguments in MAY_IMPORT if "evidence" in arguments)
    code, again = imported_by(evidence)
    assert code in (0, None) and "onnxruntime" in again and "wordfreq" not in again
