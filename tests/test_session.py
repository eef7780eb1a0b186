"""The Session is the one core API both faces call (issue #16): the same action through
the command line (a real `lumen` process) and through a Session (as the window calls it)
stores the same run and writes the same audit entry."""

import json

import pytest

from desktop_app.core.documents import read_document
from desktop_app.core.errors import LumenError
from desktop_app.core.session import Session
from desktop_app.core.store import open_store
from helpers import ROOT, run_lumen

SUMMARY = (ROOT / "tests" / "data" / "summaries" / "switched_medicine.txt").read_text(
    encoding="utf-8")
QUESTION = "Why was I switched from spironolactone to furosemide?"
RUN_FIELDS = "kind, method, variant, summary_sha256, summary, question, result"


def stored(profile) -> tuple[list[tuple], list[tuple]]:
    """Every kept run (without its id and time) and every audit entry's action and the
    names in its detail, oldest first."""
    with open_store(profile.database_file) as store:
        runs = store.query(f"SELECT {RUN_FIELDS} FROM pipeline_run ORDER BY created_at")
        audit = [(entry["action"], sorted(entry["detail"]))
                 for entry in reversed(store.audit_entries(1000))
                 if entry["action"].endswith(".run")]
    return runs, audit


def test_ask_through_the_command_line_and_the_session_stores_the_same(profile, settings,
                                                                      passphrase_env, tmp_path):
    summary_file = tmp_path / "summary.txt"
    summary_file.write_text(SUMMARY, encoding="utf-8")
    result = run_lumen("ask", "--summary", str(summary_file), "--question", QUESTION,
                       "--method", "evidence", "--json")
    assert result.returncode == 0, result.stderr
    shown = json.loads(result.stdout)["answer"]
    (cli_run,), (cli_audit,) = stored(profile)

    # The window reads an opened file as the command line does.
    summary = read_document(summary_file)
    with Session.open(profile, settings) as session:
        answer = session.ask(summary, QUESTION, method="evidence").answer
    runs, audit = stored(profile)
    assert answer == shown
    assert runs == [cli_run, cli_run]  # the same fields, the patient text kept encrypted
    assert audit == [cli_audit, cli_audit] and cli_audit[0] == "ask.run"


def test_an_action_needs_the_open_store(profile, settings):
    session = Session(profile, settings)  # no store: nothing could be kept
    with pytest.raises(LumenError, match="not open"):
        session.ask(SUMMARY, QUESTION, method="evidence")
    session.close()
