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

    # A handout the same way (the model's rewrites are greedy: the same text both times).
    result = run_lumen("simplify", str(summary_file), "--json")
    assert result.returncode == 0, result.stderr
    with Session.open(profile, settings) as session:
        session.simplify(summary)
    runs, audit = stored(profile)
    assert runs[2] == runs[3] and runs[2][0] == "simplify"
    assert audit[2] == audit[3] and audit[2][0] == "simplify.run"


def test_an_action_needs_the_open_store(profile, settings):
    session = Session(profile, settings)  # no store: nothing could be kept
    with pytest.raises(LumenError, match="not open"):
        session.ask(SUMMARY, QUESTION, method="evidence")
    session.close()


# ---- the same change through both faces, into two profiles ----

CHANGES = ("model.added", "model.role_assigned", "model.removed", "settings.changed",
           "files.made_private", "bench.dataset_imported", "bench.run_created", "bench.run_complete",
           "bench.report_exported", "glossary.local_saved", "glossary.local_deleted",
           "glossary.exported", "glossary.medlineplus_imported", "profile.backed_up", "profile.restored", "kb.add", "kb.remove",
           "cases.import", "cases.remove", "database.key_changed",
           "glossary.medlineplus_imported", "knowledge.run")


# One made-up topic in the layout of MedlinePlus's health-topics file.
TOPICS = """<?xml version="1.0" encoding="UTF-8"?>
<health-topics total="1" date-generated="03/01/2026 01:30:00">
<health-topic meta-desc="A made-up topic." title="Ward Rounds" url="https://example.invalid/w.html" id="9" language="English" date-created="01/02/2003">
<full-summary>&lt;p&gt;A made-up summary for a test.&lt;/p&gt;</full-summary>
</health-topic>
</health-topics>
"""


def second_profile(tmp_path, shared_models):
    """Another profile beside the fixture's, with the same settings and its own database."""
    from desktop_app.core.config import Paths, Settings

    other = Paths.resolve(str(tmp_path / "second"))
    other.ensure()
    Settings(models_dir=str(shared_models)).save(other)
    return other


def audited(paths, skip=("from", "run"), passphrase=None) -> list[tuple[str, dict]]:
    """The audit log's changes, oldest first, without who acted and the runs' random ids."""
    with open_store(paths.database_file, passphrase) as store:
        return [(e["action"], {k: v for k, v in e["detail"].items() if k not in skip})
                for e in reversed(store.audit_entries(1000)) if e["action"] in CHANGES]


def faces(paths) -> set[str]:
    with open_store(paths.database_file) as store:
        return {e["detail"]["from"] for e in store.audit_entries(1000) if "from" in e["detail"]}


def test_model_and_settings_changes_are_audited_alike_by_both_faces(
        profile, settings, passphrase_env, shared_models, tmp_path):
    import shutil

    from desktop_app.core.config import Settings
    from helpers import smollm2_file

    model = tmp_path / "ward-model.gguf"
    shutil.copyfile(smollm2_file(shared_models), model)
    assert run_lumen("audit").returncode == 0  # the database to audit into
    for command in (("models", "add", str(model), "--role", "judge"),
                    ("models", "role", "judge", "smollm2-135m-instruct-q4_1"),
                    ("models", "remove", "ward-model"),
                    ("settings", "set", "seed", "7"), ("settings", "reset")):
        result = run_lumen(*command)
        assert result.returncode == 0, (command, result.stderr)
    (profile.config_dir / "settings.toml").chmod(0o644)
    fixed = run_lumen("doctor", "--fix-permissions", "--no-speed", "--json")
    assert "Made private: " in fixed.stderr, fixed.stderr

    other = second_profile(tmp_path, shared_models)
    with Session.open(other, Settings.load(other)) as session:
        session.models.add(model, roles=["judge"])
        assert session.settings.role_judge == "ward-model"  # in effect at once
        session.models.assign_role("judge", "smollm2-135m-instruct-q4_1")
        session.models.remove("ward-model")
        session.change_settings(session.settings.with_value("seed", "7"))
        session.reset_settings()
        (other.config_dir / "settings.toml").chmod(0o644)
        assert session.make_files_private()  # the window's "Make private" button

    assert audited(other) == audited(profile)
    assert [action for action, _ in audited(profile)] == [
        "model.added", "model.role_assigned", "model.removed", "settings.changed",
        "settings.changed", "files.made_private"]
    assert faces(profile) == {"command line"} and faces(other) == {"window"}
    assert Settings.load(other) == Settings.load(profile) == Settings()


def test_an_evaluation_through_both_faces_stores_the_same(
        profile, settings, passphrase_env, shared_models, tmp_path):
    from desktop_app.core.config import Settings

    benchmark = ROOT / "tests" / "data" / "benchmarks" / "medisumqa_sample.csv"
    assert run_lumen("evaluate", "import", "--format", "medisumqa", str(benchmark),
                     "--name", "ward check").returncode == 0
    ran = run_lumen("evaluate", "run", "ward check", "--system", "evidence", "--scorer",
                    "reference", "--limit", "2", "--json")
    assert ran.returncode == 0, ran.stderr
    (cli_run,) = [r["id"] for r in json.loads(run_lumen("evaluate", "list", "--json").stdout)["runs"]]
    reported = run_lumen("evaluate", "report", cli_run, "--out", str(tmp_path / "a.csv"))
    # Two samples decide nothing: the report is written and the verdict, undecided, exits 1.
    assert reported.returncode == 1 and (tmp_path / "a.csv").exists(), reported.stderr
    assert "Not enough samples to decide" in reported.stdout + reported.stderr

    other = second_profile(tmp_path, shared_models)
    with Session.open(other, Settings.load(other)) as session:
        saved, _dataset = session.evaluation.import_file(benchmark, "medisumqa", name="ward check")
        (run_id,) = session.evaluation.start(saved.id, ["evidence"], ["reference"], limit=2)
        session.evaluation.resume(run_id)
        shown = session.evaluation.summary(run_id)
        assert shown["metrics"] == json.loads(ran.stdout)["metrics"]
        from desktop_app.export import write_report

        write_report(session.evaluation.report(run_id), tmp_path / "b.csv", session._store)

    def results(paths):
        with open_store(paths.database_file) as store:
            return store.query("SELECT sample_id, output, scores, error FROM eval_result "
                               "ORDER BY ordinal")
    assert results(other) == results(profile) and len(results(profile)) == 2
    assert audited(other) == audited(profile)
    assert [action for action, _ in audited(profile)] == [
        "bench.dataset_imported", "bench.run_created", "bench.run_complete", "bench.report_exported"]
    assert (tmp_path / "a.csv").read_text() == (tmp_path / "b.csv").read_text().replace(
        run_id, cli_run)


def test_a_glossary_setting_rebuilds_the_session_s_glossary(profile, settings):
    session = Session(profile, settings)
    first = session.glossary
    session.change_settings(settings.with_value("threads", 1))
    assert session.glossary is first  # nothing it is built with changed
    session.change_settings(session.settings.with_value("glossary_plain_grade", 6))
    assert session.glossary is not first and session.glossary.plain_grade == 6
    session.close()


def test_glossary_and_custody_actions_through_both_faces_are_audited_alike(
        profile, settings, passphrase_env, shared_models, tmp_path):
    from desktop_app.core.config import Paths, Settings

    backup_env = {"LUMEN_BACKUP_PASSPHRASE": "a backup passphrase for the test"}
    entry = ("--term", "Ward round", "--definition", "The daily visit of the care team.",
             "--category", "procedure")
    exported = tmp_path / "cli" / "entries.toml"  # the same name: the audit entry holds it
    exported.parent.mkdir()
    topics = tmp_path / "mplus_topics_2026-03-01.xml"
    topics.write_text(TOPICS, encoding="utf-8")
    for command in (("glossary", "import", str(topics)),
                    ("glossary", "add", *entry), ("glossary", "export", str(exported)),
                    ("glossary", "import", str(exported)), ("glossary", "delete", "local:1"),
                    ("backup", str(tmp_path / "cli-backup.db"))):
        result = run_lumen(*command, env=backup_env)
        assert result.returncode == 0, (command, result.stderr)
    again = run_lumen("glossary", "export", str(exported))
    assert again.returncode == 2 and "exists already" in again.stderr  # never overwritten unasked
    for key, said in (("local:1", "no staff entry local:1"), ("lumen:aspirin", "not a staff entry"),
                      ("local:x", "not a staff entry"), ("local:²", "not a staff entry")):
        refused = run_lumen("glossary", "delete", key)
        assert refused.returncode == 2 and said in refused.stderr, refused.stderr
    new_key = "a new passphrase for the test"
    changed = run_lumen("key", "change", env={"LUMEN_NEW_PASSPHRASE": new_key})
    assert changed.returncode == 0, changed.stderr
    restored = run_lumen("--profile", str(tmp_path / "cli-restored"), "restore",
                         str(tmp_path / "cli-backup.db"), env=backup_env)
    assert restored.returncode == 0, restored.stderr

    other = second_profile(tmp_path, shared_models)
    window_export = tmp_path / "window" / "entries.toml"
    window_export.parent.mkdir()
    with Session.open(other, Settings.load(other)) as session:
        assert session.terms.import_file(topics)["topics"] == 1
        key = session.terms.save_local(term="Ward round", category="procedure",
                                       definition="The daily visit of the care team.")
        assert "Ward round" in {e.term for e in session.glossary.entries}  # rebuilt at once
        session.terms.export_local(window_export)
        with pytest.raises(LumenError, match="exists already"):
            session.terms.export_local(window_export)
        assert session.terms.import_file(window_export) == {"local_entries": 1}
        session.terms.delete_local(key)
        assert key not in session.glossary.by_key
        session.records.backup(tmp_path / "window-backup.db",
                               backup_env["LUMEN_BACKUP_PASSPHRASE"])
        session.records.change_key(new_key)
    fresh = Paths.resolve(str(tmp_path / "window-restored"))
    fresh.ensure()
    with Session(fresh, Settings.load(fresh), face="window") as session:
        _key, _files, check = session.records.restore(
            tmp_path / "window-backup.db", backup_env["LUMEN_BACKUP_PASSPHRASE"],
            passphrase_env if session.records.restore_needs_passphrase() else None)
        assert check.ok and session.records.runs() == []

    assert exported.read_text() == window_export.read_text()
    skip = ("from", "run", "rows", "bytes")  # a backup's size depends on the log's own rows
    assert audited(other, skip, new_key) == audited(profile, skip, new_key)
    assert [action for action, _ in audited(profile, passphrase=new_key)] == [
        "glossary.medlineplus_imported", "glossary.local_saved", "glossary.exported", "glossary.local_saved",
        "glossary.local_deleted", "profile.backed_up", "database.key_changed"]
    restored_cli = Paths.resolve(str(tmp_path / "cli-restored"))
    (window_restore,) = [e for e in audited(fresh, skip) if e[0] == "profile.restored"]
    assert audited(restored_cli, skip)[-1] == window_restore
    assert "settings.toml" in window_restore[1]["files"]


def test_listeners_hear_what_each_action_changed(profile, settings, passphrase_env, tmp_path):
    from desktop_app.core.session import Changes

    heard: list[Changes] = []
    with Session.open(profile, settings) as session:
        session.on_changes(heard.append)
        first = session.glossary
        key = session.terms.save_local(term="Ward round", category="procedure",
                                       definition="The daily visit of the care team.")
        assert heard == [Changes(glossary=True)]
        assert session.glossary is not first and key in session.glossary.by_key
        session.change_settings(session.settings.with_value("threads", 1))
        session.change_settings(session.settings.with_value("glossary_plain_grade", 6))
        assert heard[1:] == [Changes(settings=True), Changes(settings=True, glossary=True)]
        assert session.library.documents() == [] and len(heard) == 3  # reading changes nothing


KNOWLEDGE_QUESTION = "How is a weak heart that holds fluid treated?"


def test_the_knowledge_library_through_both_faces_is_audited_alike(
        profile, settings, passphrase_env, shared_models, tmp_path):
    from desktop_app.core.config import Settings

    guide = tmp_path / "guide.md"
    guide.write_text("# Ward note\n\nA weak heart that holds fluid is treated with water "
                     "tablets and a daily weight.\n", encoding="utf-8")
    cases = tmp_path / "cases.csv"
    cases.write_text("id,complaint,diagnosis\n1,Breathless when lying flat,Heart failure\n"
                     "2,Burning when passing urine,Urinary tract infection\n", encoding="utf-8")
    for command in (("knowledge", "add", str(guide)), ("cases", "import", str(cases))):
        result = run_lumen(*command, timeout=300)
        assert result.returncode == 0, (command, result.stderr)
    asked = run_lumen("knowledge", "ask", KNOWLEDGE_QUESTION, "--json", timeout=300)
    assert asked.returncode == 0, asked.stderr
    listed = json.loads(run_lumen("knowledge", "list", "--json").stdout)
    for command in (("knowledge", "remove", listed["documents"][0]["id"]),
                    ("cases", "remove", listed["case_sets"][0]["id"])):
        result = run_lumen(*command)
        assert result.returncode == 0, (command, result.stderr)

    other = second_profile(tmp_path, shared_models)
    heard = []
    with Session.open(other, Settings.load(other)) as session:
        session.on_changes(heard.append)
        document, new = session.library.add_file(guide)
        assert new and session.library.add_file(guide) == (document, False)  # found, not added
        case_set, _read, new = session.library.import_cases(cases)
        assert new and [d.id for d in session.library.documents()] == [document.id]
        answer = session.ask_knowledge(KNOWLEDGE_QUESTION).answer
        assert answer == json.loads(asked.stdout)["answer"]
        session.library.remove_document(document.id)
        session.library.remove_case_set(case_set.id)
        assert session.library.documents() == [] and session.library.case_sets() == []
    assert all(change.knowledge for change in heard) and len(heard) == 4

    # Random ids, and what a process's speed and its saved prompt states change.
    skip = ("document", "set", "run", "seconds", "model_seconds", "prompt_tokens_evaluated")
    assert audited(other, skip) == audited(profile, skip)
    assert [action for action, _ in audited(profile)] == [
        "kb.add", "cases.import", "knowledge.run", "kb.remove", "cases.remove"]
