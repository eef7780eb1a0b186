"""Changing the database's key, and encrypted backup and restore (issue #15), on real
SQLCipher files."""

import pytest

from desktop_app.core.config import Paths
from desktop_app.core.errors import StoreError, WrongKeyError
from desktop_app.core.store import KeyManager, open_store
from desktop_app.core.store.custody import backup, change_key, restore
from desktop_app.core.store.keys import KEYRING_SERVICE, DatabaseKey
from helpers import TEST_PASSPHRASE

NEW_PASSPHRASE = "a different passphrase entirely"
BACKUP_PASSPHRASE = "the backup's own passphrase"
MARKER = "Marker-Sentence-Of-A-Patient-That-Must-Stay-Encrypted"


def _rows(store) -> dict[str, list[tuple]]:
    tables = [row[0] for row in store.query(
        "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' "
        "ORDER BY name")]
    return {table: store.query(f'SELECT * FROM "{table}" ORDER BY rowid') for table in tables}


def _with_patient_text(store) -> None:
    store.execute("INSERT INTO pipeline_run (id, kind, created_at, method, variant, "
                  "summary_sha256, summary, question, result, trace) VALUES "
                  "('r1', 'ask', '2025-01-01', 'lamp', 'glossary', 'x', ?, 'q', 'a', '{}')",
                  (MARKER,))
    store.audit("test.action", {"n": 1})


def test_a_new_passphrase_opens_the_database_and_the_old_one_opens_nothing(profile,
                                                                            passphrase_env):
    with open_store(profile.database_file) as store:
        _with_patient_text(store)
        before = _rows(store)
        change_key(store, NEW_PASSPHRASE)
        assert _rows(store)["pipeline_run"] == before["pipeline_run"]  # still readable
    with pytest.raises(WrongKeyError):
        open_store(profile.database_file, TEST_PASSPHRASE)
    with open_store(profile.database_file, NEW_PASSPHRASE) as store:
        rows = _rows(store)
        assert rows["pipeline_run"] == before["pipeline_run"]
        assert [e["action"] for e in store.audit_entries()][:2] == ["database.unlock_failed",
                                                                    "database.key_changed"]
        assert store.verify_audit().ok


def test_a_short_new_passphrase_is_refused_and_changes_nothing(profile, passphrase_env):
    with open_store(profile.database_file) as store:
        with pytest.raises(StoreError, match="too short"):
            change_key(store, "short")
    open_store(profile.database_file, TEST_PASSPHRASE).close()


def test_a_keyring_key_is_rotated_and_its_old_entry_removed(profile, memory_keyring):
    import sqlcipher3

    with open_store(profile.database_file) as store:
        _with_patient_text(store)
        old_account = KeyManager(profile.database_file).keyring_account
        old_secret = memory_keyring.items[(KEYRING_SERVICE, old_account)]
        new_key = change_key(store)
    keys = KeyManager(profile.database_file)
    assert keys.keyring_account == new_key.account != old_account
    assert (KEYRING_SERVICE, old_account) not in memory_keyring.items
    with open_store(profile.database_file) as store:
        assert store.query("SELECT summary FROM pipeline_run") == [(MARKER,)]
    conn = sqlcipher3.connect(str(profile.database_file))
    conn.execute(f"PRAGMA key = \"x'{old_secret}'\"")
    with pytest.raises(sqlcipher3.DatabaseError):
        conn.execute("SELECT count(*) FROM sqlite_master").fetchone()
    conn.close()


def test_a_key_change_cut_short_is_finished_at_the_next_open(profile, memory_keyring):
    """The new key was in the keyring and the file re-encrypted, but the process died
    before recording which entry holds the key."""
    with open_store(profile.database_file) as store:
        keys = KeyManager(profile.database_file)
        new_key = DatabaseKey("keyring", "ab" * 32, "database-key-pending")
        memory_keyring.set_password(KEYRING_SERVICE, new_key.account, new_key.secret)
        keys.record_pending(new_key)
        store.rekey(new_key)  # and then the process died
    with open_store(profile.database_file) as store:
        assert store.audit_entries()[0]["detail"] == {"key_source": "keyring", "finished": True}
    assert KeyManager(profile.database_file).keyring_account == "database-key-pending"


def test_the_key_is_not_changed_while_another_window_has_the_database(profile, passphrase_env):
    with open_store(profile.database_file) as mine, open_store(profile.database_file):
        with pytest.raises(StoreError, match="Another Lumen window"):
            change_key(mine, NEW_PASSPHRASE)
        mine.audit("still.works")
    open_store(profile.database_file, TEST_PASSPHRASE).close()


def test_a_backup_restores_every_row_into_a_fresh_profile(profile, passphrase_env, tmp_path):
    profile.settings_file.write_text('threads = 3\n', encoding="utf-8")
    archive = tmp_path / "lumen-backup.db"
    with open_store(profile.database_file) as store:
        _with_patient_text(store)
        original = _rows(store)
        summary = backup(store, archive, BACKUP_PASSPHRASE, {"settings.toml": profile.settings_file})
        assert store.audit_entries()[0]["action"] == "profile.backed_up"
    assert summary["files"] == ["settings.toml"] and summary["tables"]["pipeline_run"] == 1
    raw = archive.read_bytes()
    assert MARKER.encode() not in raw and not raw.startswith(b"SQLite format 3")
    fresh = Paths.resolve(tmp_path / "fresh")
    fresh.ensure()
    with pytest.raises(WrongKeyError):
        restore(archive, "not the backup passphrase", fresh.database_file, NEW_PASSPHRASE)
    assert not fresh.database_file.exists()
    key, files = restore(archive, BACKUP_PASSPHRASE, fresh.database_file, NEW_PASSPHRASE)
    assert key.source == "passphrase" and files == {"settings.toml": "threads = 3\n"}
    with open_store(fresh.database_file, NEW_PASSPHRASE) as restored:
        rows = _rows(restored)
        assert restored.verify_audit().ok
    assert rows.keys() == original.keys()
    for table in original:
        assert rows[table] == original[table], table
    with pytest.raises(StoreError, match="never overwrites"):
        restore(archive, BACKUP_PASSPHRASE, fresh.database_file, NEW_PASSPHRASE)


def test_key_backup_and_restore_commands(profile, tmp_path):
    import json

    from helpers import run_lumen

    env = {"LUMEN_PASSPHRASE": TEST_PASSPHRASE}
    assert run_lumen("settings", "set", "threads", "3", env=env).returncode == 0
    archive = tmp_path / "profile-backup.db"
    backed = run_lumen("backup", str(archive), env={**env, "LUMEN_BACKUP_PASSPHRASE": BACKUP_PASSPHRASE})
    assert backed.returncode == 0 and "Backup written" in backed.stdout, backed.stderr
    changed = run_lumen("key", "change", env={**env, "LUMEN_NEW_PASSPHRASE": NEW_PASSPHRASE})
    assert changed.returncode == 0 and "old one opens nothing" in changed.stdout, changed.stderr
    refused = run_lumen("audit", env=env)
    assert refused.returncode == 2 and "does not open" in refused.stderr
    fresh = tmp_path / "fresh"
    restored = run_lumen("--profile", str(fresh), "restore", str(archive),
                         env={"LUMEN_BACKUP_PASSPHRASE": BACKUP_PASSPHRASE,
                              "LUMEN_PASSPHRASE": "the restored profile's passphrase"})
    assert restored.returncode == 0 and "audit log intact" in restored.stdout, restored.stderr
    assert "threads = 3" in (Paths.resolve(fresh).settings_file).read_text()
    entries = json.loads(run_lumen("--profile", str(fresh), "audit", "--json",
                                   env={"LUMEN_PASSPHRASE": "the restored profile's passphrase"}).stdout)
    actions = [e["action"] for e in entries]
    assert actions[0] == "profile.restored" and "profile.backed_up" not in actions
    assert actions[-1] == "database.created"  # the original's first entry, seal intact
    again = run_lumen("--profile", str(fresh), "restore", str(archive),
                      env={"LUMEN_BACKUP_PASSPHRASE": BACKUP_PASSPHRASE,
                           "LUMEN_PASSPHRASE": "the restored profile's passphrase"})
    assert again.returncode == 2 and "never overwrites" in again.stderr


def test_a_refused_keyring_rotation_leaves_no_key_behind(profile, memory_keyring):
    with open_store(profile.database_file) as mine, open_store(profile.database_file):
        entries = dict(memory_keyring.items)
        with pytest.raises(StoreError, match="Another Lumen window"):
            change_key(mine)
    assert memory_keyring.items == entries
    assert "pending_account" not in KeyManager(profile.database_file).source_file.read_text()
    open_store(profile.database_file).close()
