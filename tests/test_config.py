import json
import os
from pathlib import Path

import pytest

from desktop_app.core.config import Paths, Settings
from desktop_app.core.errors import ConfigError


def test_profile_moves_every_folder(tmp_path, monkeypatch):
    monkeypatch.delenv("LUMEN_HOME", raising=False)
    paths = Paths.resolve(tmp_path / "p")
    for folder in (paths.data_dir, paths.config_dir, paths.cache_dir, paths.log_dir):
        assert tmp_path / "p" in folder.parents
    assert paths.database_file.parent == paths.data_dir


def test_lumen_home_and_profile_precedence(tmp_path, monkeypatch):
    monkeypatch.setenv("LUMEN_HOME", str(tmp_path / "env"))
    assert Paths.resolve().data_dir == (tmp_path / "env" / "data").resolve()
    assert Paths.resolve(tmp_path / "flag").data_dir == (tmp_path / "flag" / "data").resolve()


def test_platform_folders_without_profile(monkeypatch):
    monkeypatch.delenv("LUMEN_HOME", raising=False)
    paths = Paths.resolve()
    assert "lumen" in str(paths.data_dir).lower()
    assert paths.data_dir != paths.config_dir


def test_unwritable_data_folder_gives_clear_error(tmp_path):
    blocker = tmp_path / "not-a-folder"
    blocker.write_text("a file where the data folder should be")
    paths = Paths(blocker / "data", tmp_path / "c", tmp_path / "k", tmp_path / "l")
    with pytest.raises(ConfigError) as info:
        paths.ensure()
    assert "cannot write" in info.value.message
    assert "--profile" in info.value.fix


def test_settings_round_trip_and_defaults(profile):
    settings = Settings.load(profile).with_value("threads", "3").with_value("temperature", 0.5)
    settings.save(profile)
    again = Settings.load(profile)
    assert again.threads == 3 and again.temperature == 0.5
    assert again.context_size == Settings().context_size


def test_every_setting_is_documented():
    for f in Settings.describe():
        assert f.metadata["label"] and f.metadata["help"], f.name


@pytest.mark.parametrize("name,value,phrase", [
    ("threads", "many", "must be a int"),
    ("context_size", 10, "between"),
    ("log_level", "LOUD", "one of"),
    ("no_such_setting", 1, "no setting"),
    ("verify_hashes_on_load", "maybe", "must be a bool"),
])
def test_bad_setting_values_are_refused(name, value, phrase):
    with pytest.raises(ConfigError) as info:
        Settings().with_value(name, value)
    assert phrase in info.value.message


def test_malformed_settings_file_names_the_file(profile):
    profile.settings_file.write_text("threads = [unclosed")
    with pytest.raises(ConfigError) as info:
        Settings.load(profile)
    assert str(profile.settings_file) in info.value.message
    assert "delete it" in info.value.fix


def test_unknown_keys_in_settings_file_are_ignored(profile):
    profile.settings_file.write_text('threads = 2\nfuture_option = "x"\n')
    assert Settings.load(profile).threads == 2


def test_a_renamed_setting_is_still_read_under_its_old_name(profile):
    # The knowledge base's settings were kb_*; a settings file from before keeps its values.
    profile.settings_file.write_text("kb_top_k = 7\nkb_refine = true\n"
                                     "kb_refine_rounds = 2\nknowledge_refine_rounds = 5\n")
    loaded = Settings.load(profile)
    assert (loaded.knowledge_top_k, loaded.knowledge_refine, loaded.knowledge_refine_rounds) == (
        7, True, 5)  # saved under both names, the new one holds
    assert Settings().with_value("kb_top_k", "6").knowledge_top_k == 6
    loaded.save(profile)
    assert "kb_" not in profile.settings_file.read_text()


def test_models_folder_setting(profile):
    assert Settings().models_path(profile) == profile.default_models_dir
    assert Settings(models_dir="/srv/models").models_path(profile) == Path("/srv/models")


def test_failure_log_withholds_library_messages(caplog):
    import logging

    from desktop_app.core.errors import ModelError
    from desktop_app.core.logs import log_failure

    logger = logging.getLogger("lumen-test")
    patient = " ".join(["Mr", "Example", "has", "a", "fever"])  # data, not in the source line
    try:
        raise RuntimeError(f"tokenizer failed on: {patient!r}")
    except RuntimeError as exc:
        log_failure(logger, "Task failed", exc)
    log_failure(logger, "Task failed", ModelError("The model file is missing.", "Provision it."))
    assert "Mr Example" not in caplog.text
    assert "RuntimeError (message withheld)" in caplog.text
    assert "The model file is missing." in caplog.text


@pytest.mark.skipif(os.name != "posix", reason="POSIX file modes")
def test_folders_and_database_are_this_accounts_only(tmp_path, passphrase_env):
    import stat

    from desktop_app.core.config import make_private, not_private
    from desktop_app.core.store import open_store

    paths = Paths.resolve(tmp_path / "home")
    paths.ensure()
    for folder in paths.folders:
        assert stat.S_IMODE(folder.stat().st_mode) == 0o700, folder
    previous = os.umask(0o022)  # as a careless shell would leave it
    try:
        open_store(paths.database_file).close()
        (paths.config_dir / "settings.toml").write_text("")  # 0644 under this umask
    finally:
        os.umask(previous)
    assert stat.S_IMODE(paths.database_file.stat().st_mode) == 0o600
    paths.log_dir.chmod(0o755)
    shared = set(not_private(paths))
    assert {paths.log_dir, paths.config_dir / "settings.toml"} <= shared
    assert paths.database_file not in shared  # the store made it private itself
    assert set(make_private(paths)) == shared
    assert not_private(paths) == []
    assert stat.S_IMODE((paths.config_dir / "settings.toml").stat().st_mode) == 0o600


@pytest.mark.skipif(os.name != "posix", reason="POSIX file modes")
def test_doctor_names_files_other_accounts_may_read_and_the_command_fixes_them(profile, passphrase_env):
    from helpers import run_lumen

    (profile.config_dir / "settings.toml").chmod(0o644)
    found = run_lumen("doctor", "--no-speed", "--json")
    finding = next(f for f in json.loads(found.stdout)["findings"] if f["check"] == "Private files")
    assert finding["status"] == "fail" and finding["action"] == "make-private"
    assert str(profile.config_dir / "settings.toml") in finding["detail"]
    fixed = run_lumen("doctor", "--no-speed", "--json", "--fix-permissions")
    finding = next(f for f in json.loads(fixed.stdout)["findings"] if f["check"] == "Private files")
    assert finding["status"] == "ok" and "Made private" in fixed.stderr


@pytest.mark.skipif(not hasattr(os, "sched_setaffinity"), reason="CPU affinity is Linux's")
def test_threads_by_default_are_the_cores_the_process_may_run_on(monkeypatch):
    # A workstation (or the parallel test runner) may pin Lumen to some cores; one thread
    # per core of the whole machine would then make llama.cpp's threads wait on each other.
    monkeypatch.setattr(os, "cpu_count", lambda: 64)
    allowed = os.sched_getaffinity(0)
    try:
        os.sched_setaffinity(0, {min(allowed)})
        assert Settings().effective_threads() == 1
        assert Settings(threads=3).effective_threads() == 3
    finally:
        os.sched_setaffinity(0, allowed)
    assert Settings().effective_threads() == len(allowed)
