"""Changing the database's key, and encrypted backup and restore (issue #15), on real
SQLCipher files."""

import pytest

from desktop_app.core.config import Paths
from desktop_app.core.errors import StoreError, WrongKeyError
from desktop_app.core.store import KeyManager, open_store
from desktop_app.core.store.custody import backup, change_key, restore
from desktop_app.core.store.keys import KEYRING_SERVICE, DatabaseKey
from desktop_app.core.store.witness import STARTED_KEY
from helpers import TEST_PASSPHRASE

NEW_PASSPHRASE = "a different passphrase entirely"
BACKUP_PASSPHRASE = "the backup's own passphrase"
MARKER = "Marker-Sentence-Of-A-Patient-That-Must-Stay-Encrypted"


def _rows(store) -> dict[str, list[tuple]]:
    """Every row of every table; not when the audit witness was started, which a restored
    database does anew (its witness is a file of the profile, not in the backup)."""
    tables = [row[0] for row in store.query(
        "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' "
        "ORDER BY name")]
    return {table: [row for row in store.query(f'SELECT * FROM "{table}" ORDER BY rowid')
                    if not (table == "app_meta" and row[0] == STARTED_KEY)]
            for table in tables}


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


# ---- issue #32: a backup can never hurt the profile; a damaged backup says so ----


def _backup_targets_that_must_be_refused(profile, tmp_path):
    """Every way a target can be, or lead to, the live database or its profile."""
    hard_link = tmp_path / "hard-link.db"
    hard_link.hardlink_to(profile.database_file)
    symbolic = tmp_path / "symbolic.db"
    symbolic.symlink_to(profile.database_file)
    other = Paths.resolve(tmp_path / "other-profile")
    other.ensure()
    open_store(other.database_file, TEST_PASSPHRASE).close()
    return {
        "the live database": (profile.database_file, "inside Lumen's profile"),
        "its write-ahead log": (profile.database_file.with_name("lumen.db-wal"), "inside"),
        "a new file in the data folder": (profile.data_dir / "copy.db", "inside"),
        "the settings folder": (profile.config_dir / "backup.db", "inside"),
        "a hard link to it": (hard_link, "is a Lumen database"),
        "a symbolic link to it": (symbolic, "inside Lumen's profile"),
        "another profile's database": (other.database_file, "is a Lumen database"),
        "another profile's journal": (other.database_file.with_name("lumen.db-journal"),
                                      "side file of the Lumen database"),
    }


def test_a_backup_onto_the_live_database_or_into_the_profile_is_refused(profile, passphrase_env,
                                                                         tmp_path):
    with open_store(profile.database_file) as store:
        targets = _backup_targets_that_must_be_refused(profile, tmp_path)
        _with_patient_text(store)
        before = _rows(store)
        for name, (target, reason) in targets.items():
            existed = target.exists()
            with pytest.raises(StoreError, match=reason):
                backup(store, target, BACKUP_PASSPHRASE,
                       {"settings.toml": profile.settings_file}, force=True,
                       profile_folders=profile.folders)
            assert target.exists() == existed, name
        assert store.verify_audit().ok
    with open_store(profile.database_file) as store:  # the database still opens, as it was
        after = _rows(store)
        assert store.verify_audit().ok
    assert after == before
    assert not [p for p in tmp_path.rglob("*.partial")]


def test_a_backup_never_overwrites_without_force_and_is_read_back_before_it_counts(
        profile, passphrase_env, tmp_path):
    from desktop_app.core.store.custody import _verify_backup

    existing = tmp_path / "keep-me.db"
    existing.write_bytes(b"a file the user wanted")
    with open_store(profile.database_file) as store:
        _with_patient_text(store)
        with pytest.raises(StoreError, match="exists already"):
            backup(store, existing, BACKUP_PASSPHRASE, {})
        assert existing.read_bytes() == b"a file the user wanted"
        assert "profile.backed_up" not in [e["action"] for e in store.audit_entries()]
        summary = backup(store, existing, BACKUP_PASSPHRASE, {}, force=True)
    assert summary["path"] == str(existing.resolve())
    assert existing.read_bytes() != b"a file the user wanted"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["home", "keep-me.db"]  # no partial file
    # The read-back check fails on a backup damaged after it was written.
    _verify_backup(existing, BACKUP_PASSPHRASE, summary["tables"], {})
    damaged = bytearray(existing.read_bytes())
    damaged[len(damaged) // 2] ^= 0xFF
    existing.write_bytes(bytes(damaged))
    with pytest.raises(StoreError, match="did not read back whole"):
        _verify_backup(existing, BACKUP_PASSPHRASE, summary["tables"], {})


@pytest.mark.parametrize("damage", ["a flipped byte inside", "the last 1,000 bytes cut off",
                                    "the last page cut off"])
def test_a_damaged_backup_is_reported_as_damaged_and_restores_nothing(profile, passphrase_env,
                                                                      tmp_path, damage):
    archive = tmp_path / "backup.db"
    with open_store(profile.database_file) as store:
        _with_patient_text(store)
        backup(store, archive, BACKUP_PASSPHRASE, {})
    data = bytearray(archive.read_bytes())
    if damage == "a flipped byte inside":
        data[len(data) // 2] ^= 0xFF
    else:
        data = data[:-1000] if "1,000" in damage else data[:-4096]
    archive.write_bytes(bytes(data))
    fresh = Paths.resolve(tmp_path / "fresh")
    fresh.ensure()
    with pytest.raises(StoreError, match="is damaged") as raised:
        restore(archive, BACKUP_PASSPHRASE, fresh.database_file, NEW_PASSPHRASE)
    assert not isinstance(raised.value, WrongKeyError)
    assert "nothing was restored" in raised.value.message
    assert not fresh.database_file.exists()


def test_backup_and_restore_commands_refuse_what_would_hurt_the_data(profile, tmp_path):
    from helpers import run_lumen

    env = {"LUMEN_PASSPHRASE": TEST_PASSPHRASE, "LUMEN_BACKUP_PASSPHRASE": BACKUP_PASSPHRASE}
    onto_live = run_lumen("backup", str(profile.database_file), env=env)
    assert onto_live.returncode == 2 and "inside Lumen's profile" in onto_live.stderr
    assert "Traceback" not in onto_live.stderr
    assert run_lumen("audit", "verify", env=env).returncode == 0  # it still opens, intact
    archive = tmp_path / "backup.db"
    archive.write_text("keep")
    kept = run_lumen("backup", str(archive), env=env)
    assert kept.returncode == 2 and "--force" in kept.stderr and archive.read_text() == "keep"
    forced = run_lumen("backup", str(archive), "--force", env=env)
    assert forced.returncode == 0 and "read back whole" in forced.stdout, forced.stderr
    data = archive.read_bytes()
    archive.write_bytes(data[:-1000])
    damaged = run_lumen("--profile", str(tmp_path / "fresh"), "restore", str(archive),
                        env={**env, "LUMEN_PASSPHRASE": NEW_PASSPHRASE})
    assert damaged.returncode == 2 and "damaged (it was cut short)" in damaged.stderr
    assert "Traceback" not in damaged.stderr
    assert not Paths.resolve(tmp_path / "fresh").database_file.exists()
