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
