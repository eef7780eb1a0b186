"""`lumen doctor` and the command line, run as a user would (child processes)."""

import json
import os
import shutil

from desktop_app.core.config import Settings
from desktop_app.core.doctor import run_doctor
from helpers import TEST_PASSPHRASE, run_lumen, smollm2_file


def test_doctor_passes_on_a_provisioned_install(profile, settings, passphrase_env, no_connections):
    report = run_doctor(profile, settings)
    assert report.ok, [f for f in report.failures()]
    checks = {(f.area, f.check) for f in report.findings}
    assert ("Offline", "Network guard") in checks
    assert ("Database", "Encrypted database") in checks
    assert ("Models", "Embedder") in checks
    generation = next(f for f in report.findings if f.check == "Generation")
    assert generation.data["tokens_per_second"] > 0


def test_doctor_reports_a_damaged_model_with_the_fix(profile, passphrase_env, shared_models, tmp_path):
    models = tmp_path / "models"
    shutil.copytree(shared_models, models)
    with smollm2_file(models).open("r+b") as handle:
        handle.seek(-128, 2)
        handle.write(b"\x00" * 64)
    settings = Settings(models_dir=str(models))
    report = run_doctor(profile, settings, measure_speed=False)
    assert not report.ok
    bad = [f for f in report.failures() if f.area == "Models"]
    assert bad and "sha256 does not match" in bad[0].detail
    assert "lumen models provision" in bad[0].fix


def test_a_check_that_breaks_is_a_failed_finding_and_the_others_still_run(
        profile, settings, passphrase_env, monkeypatch):
    import dataclasses

    from desktop_app.core import doctor

    def broken(run):
        raise KeyError("no such setting")

    checks = [dataclasses.replace(check, function=broken) if check.name == "Embedder" else check
              for check in doctor.DOCTOR_CHECKS]
    monkeypatch.setattr(doctor, "DOCTOR_CHECKS", checks)
    steps = []
    report = run_doctor(profile, settings, measure_speed=False,
                        progress=lambda step: steps.append(step.message))
    embedder = [f for f in report.findings if f.check == "Embedder"]
    assert [(f.status, f.detail) for f in embedder] == [
        ("fail", "Unexpected error: KeyError: 'no such setting'")]
    # Every other check ran, in order, after it as before it.
    assert [f.check for f in report.findings if f.area == "Database"] == [
        "Encrypted database", "Audit log", "OS keyring"]
    assert report.findings[-1].check == "Readability (textstat)"
    assert steps == ["Versions", "Network guard", "Models", "Embedder", "Generation", "Database",
                     "Done"]


def test_doctor_without_passphrase_names_the_fix(profile, settings):
    report = run_doctor(profile, settings, measure_speed=False)
    database = next(f for f in report.findings if f.check == "Encrypted database")
    assert database.status == "fail" and "LUMEN_PASSPHRASE" in database.fix


def test_doctor_command_json_and_exit_code(profile):
    ok = run_lumen("doctor", "--json", env={"LUMEN_PASSPHRASE": TEST_PASSPHRASE})
    assert ok.returncode == 0, ok.stderr
    data = json.loads(ok.stdout)
    assert data["ok"] is True and len(data["findings"]) >= 10
    missing = run_lumen("doctor", "--no-speed", env={"LUMEN_PASSPHRASE": TEST_PASSPHRASE,
                                                     "LUMEN_HOME": str(profile.data_dir.parent / "other")})
    # The other profile has no models provisioned: problems, each with a fix, no traceback.
    assert missing.returncode == 1
    assert "lumen models provision" in missing.stdout
    assert "Traceback" not in missing.stdout + missing.stderr


def test_models_commands(profile, shared_models, truncated_gguf, tmp_path):
    listed = run_lumen("models", "list", "--json")
    assert listed.returncode == 0, listed.stderr
    rows = {row["id"]: row for row in json.loads(listed.stdout)}
    assert rows["smollm2-135m-instruct-q4_1"]["roles"] == ["generator", "reviewer", "judge",
                                                          "patient"]
    assert rows["minilm-l6-v2-int8"]["state"] == "present"
    verified = run_lumen("models", "verify")
    assert verified.returncode == 0 and "ok" in verified.stdout

    refused = run_lumen("models", "add", str(truncated_gguf), "--role", "generator")
    assert refused.returncode == 2
    assert "Error:" in refused.stderr and "What to do:" in refused.stderr
    assert "Traceback" not in refused.stderr

    copy = tmp_path / "ward-model.gguf"
    shutil.copyfile(smollm2_file(shared_models), copy)
    added = run_lumen("models", "add", str(copy), "--role", "judge")
    assert added.returncode == 0, added.stderr
    assert "Added ward-model" in added.stdout
    assert Settings.load(profile).role_judge == "ward-model"
    role = run_lumen("models", "role", "judge", "smollm2-135m-instruct-q4_1")
    assert role.returncode == 0
    removed = run_lumen("models", "remove", "ward-model")
    assert removed.returncode == 0 and copy.exists()


def test_provision_command_in_a_fresh_profile(tmp_path):
    result = run_lumen("models", "provision", "--json", env={"LUMEN_HOME": str(tmp_path / "fresh")})
    assert result.returncode == 0, result.stderr
    actions = {row["file"]: row["action"] for row in json.loads(result.stdout)}
    assert actions == {"SmolLM2-135M-Instruct.Q4_1.gguf": "copied", "model.onnx": "copied",
                       "tokenizer.json": "copied"}


def test_settings_commands(profile):
    assert run_lumen("settings", "set", "threads", "2").returncode == 0
    assert Settings.load(profile).threads == 2
    bad = run_lumen("settings", "set", "threads", "-4")
    assert bad.returncode == 2 and "between" in bad.stderr
    shown = run_lumen("settings", "show", "--json")
    assert json.loads(shown.stdout)["threads"] == 2
    # A change from the command line is audited (names, not values); one made before the
    # database existed goes in when it is created, with the time it was made.
    env = {"LUMEN_PASSPHRASE": TEST_PASSPHRASE}
    assert run_lumen("audit", env=env).returncode == 0  # creates the database
    assert run_lumen("settings", "set", "seed", "7", env=env).returncode == 0
    assert run_lumen("settings", "reset", env=env).returncode == 0
    entries = json.loads(run_lumen("audit", "--json", env=env).stdout)
    changes = [e["detail"] for e in reversed(entries) if e["action"] == "settings.changed"]
    assert changes[0]["settings"] == ["threads"] and changes[0]["noted_at"]
    assert changes[1:] == [{"from": "command line", "settings": ["seed"]},
                           {"from": "command line", "settings": ["models_dir", "threads", "seed"]}]


def test_profile_flag_isolates_everything(tmp_path):
    home = tmp_path / "flagged"
    result = run_lumen("--profile", str(home), "settings", "set", "seed", "7",
                       env={"LUMEN_HOME": str(tmp_path / "ignored")})
    assert result.returncode == 0, result.stderr
    assert (home / "config" / "settings.toml").exists()
    assert not (tmp_path / "ignored").exists()


def test_wrong_passphrase_on_the_command_line(profile):
    assert run_lumen("audit", env={"LUMEN_PASSPHRASE": TEST_PASSPHRASE}).returncode == 0
    wrong = run_lumen("audit", env={"LUMEN_PASSPHRASE": "definitely not it"})
    assert wrong.returncode == 2
    assert "does not open" in wrong.stderr and "Traceback" not in wrong.stderr


def test_unwritable_data_folder_on_the_command_line(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("x")
    result = run_lumen("models", "list", env={"LUMEN_HOME": str(blocker / "home")})
    assert result.returncode == 2
    assert "cannot write" in result.stderr and "Traceback" not in result.stderr


def test_audit_verify_command_and_doctor_name_the_altered_entry(profile):
    import sqlcipher3

    env = {"LUMEN_PASSPHRASE": TEST_PASSPHRASE}
    intact = run_lumen("audit", "verify", env=env)
    assert intact.returncode == 0 and "intact" in intact.stdout, intact.stdout + intact.stderr
    entries = json.loads(run_lumen("audit", "verify", "--json", env=env).stdout)["entries"]
    assert entries >= 1
    conn = sqlcipher3.connect(str(profile.database_file), isolation_level=None)
    conn.execute(f"PRAGMA key = '{TEST_PASSPHRASE}'")
    first = conn.execute("SELECT min(id) FROM audit_log").fetchone()[0]
    conn.execute("UPDATE audit_log SET action = 'nothing.happened' WHERE id = ?", (first,))
    conn.close()
    altered = run_lumen("audit", "verify", env=env)
    assert altered.returncode == 1 and f"entry {first} was changed" in altered.stdout
    doctor = json.loads(run_lumen("doctor", "--no-speed", "--json", env=env).stdout)
    audit = next(f for f in doctor["findings"] if f["check"] == "Audit log")
    assert audit["status"] == "fail" and f"entry {first} was changed" in audit["detail"]


def test_a_reader_that_stops_early_gets_no_traceback(profile):
    """`lumen evaluate list | head -1` (issue #32): the pipe closes before Lumen has
    written; the command ends quietly with the shell's status for a closed pipe."""
    import subprocess
    import sys

    from helpers import ROOT

    child = subprocess.Popen([sys.executable, "-m", "desktop_app", "evaluate", "list"],
                             cwd=ROOT, env={**os.environ, "LUMEN_PASSPHRASE": TEST_PASSPHRASE},
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    child.stdout.close()  # the reader goes away at once
    error = child.stderr.read().decode()
    assert child.wait(120) == 141, error
    assert "Traceback" not in error and "BrokenPipe" not in error, error
