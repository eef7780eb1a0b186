"""The encrypted store on a real SQLCipher file."""

import os
import sqlite3

import pytest

from desktop_app.core.errors import PassphraseRequired, StoreError, WrongKeyError
from desktop_app.core.store import KeyManager, open_store
from desktop_app.core.store.keys import KEYRING_SERVICE
from desktop_app.core.store.migrations import LATEST_VERSION
from helpers import TEST_PASSPHRASE


def test_passphrase_database_round_trip(profile, passphrase_env):
    with open_store(profile.database_file) as store:
        assert store.key_source == "passphrase"
        store.audit("test.action", {"count": 2})
    with open_store(profile.database_file) as store:
        actions = [e["action"] for e in store.audit_entries()]
        assert actions[:2] == ["test.action", "database.created"]
        assert store.schema_version == LATEST_VERSION
        assert store.integrity_problems() == []
        assert store.query("PRAGMA journal_mode")[0][0] == "wal"
        assert store.cipher_version().startswith("4.")


def test_file_is_unreadable_without_the_key(profile, passphrase_env):
    marker = "marker-text-that-must-not-appear-in-plaintext"
    with open_store(profile.database_file) as store:
        store.audit(marker)
        store.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    raw = profile.database_file.read_bytes()
    assert marker.encode() not in raw
    assert not raw.startswith(b"SQLite format 3")
    with pytest.raises(sqlite3.DatabaseError):
        sqlite3.connect(profile.database_file).execute("SELECT * FROM sqlite_master").fetchall()


def test_wrong_passphrase_is_refused_and_touches_nothing(profile, monkeypatch):
    monkeypatch.setenv("LUMEN_PASSPHRASE", TEST_PASSPHRASE)
    open_store(profile.database_file).close()
    before = profile.database_file.read_bytes()
    mtime = os.stat(profile.database_file).st_mtime_ns
    listing = sorted(os.listdir(profile.data_dir))
    with pytest.raises(WrongKeyError) as info:
        open_store(profile.database_file, "not the right passphrase")
    assert "does not open" in info.value.message and "Nothing was changed" in info.value.fix
    assert profile.database_file.read_bytes() == before
    assert os.stat(profile.database_file).st_mtime_ns == mtime
    assert sorted(os.listdir(profile.data_dir)) == listing
    with open_store(profile.database_file) as store:  # the right one still works
        assert store.audit_entries()


def test_no_keyring_and_no_passphrase_creates_nothing(profile):
    assert KeyManager(profile.database_file).is_new()
    with pytest.raises(PassphraseRequired) as info:
        open_store(profile.database_file)
    assert "LUMEN_PASSPHRASE" in info.value.fix
    assert not profile.database_file.exists()


def test_existing_passphrase_database_asks_for_it(profile, passphrase_env, monkeypatch):
    open_store(profile.database_file).close()
    monkeypatch.delenv("LUMEN_PASSPHRASE")
    assert KeyManager(profile.database_file).needs_passphrase()
    with pytest.raises(PassphraseRequired):
        open_store(profile.database_file)


def test_short_passphrase_is_refused(profile):
    with pytest.raises(StoreError) as info:
        open_store(profile.database_file, "short")
    assert "too short" in info.value.message
    assert not profile.database_file.exists()


def test_keyring_key_is_random_and_kept_in_the_keyring(profile, memory_keyring):
    with open_store(profile.database_file) as store:
        assert store.key_source == "keyring"
    keys = KeyManager(profile.database_file)
    secret = memory_keyring.items[(KEYRING_SERVICE, keys.keyring_account)]
    assert len(bytes.fromhex(secret)) == 32
    assert secret.encode() not in profile.database_file.read_bytes()
    assert secret not in keys.source_file.read_text()
    assert not keys.needs_passphrase()
    with open_store(profile.database_file) as store:
        assert store.audit_entries()


def test_missing_keyring_entry_has_no_plaintext_fallback(profile, memory_keyring):
    open_store(profile.database_file).close()
    memory_keyring.items.clear()
    with pytest.raises(StoreError) as info:
        open_store(profile.database_file)
    assert "missing from the OS keyring" in info.value.message


def test_wrong_keyring_key_is_a_clear_error(profile, memory_keyring):
    open_store(profile.database_file).close()
    keys = KeyManager(profile.database_file)
    memory_keyring.items[(KEYRING_SERVICE, keys.keyring_account)] = "00" * 32
    with pytest.raises(WrongKeyError) as info:
        open_store(profile.database_file)
    assert "keyring" in info.value.message


def test_keyring_database_without_keyring_backend(profile, memory_keyring, monkeypatch):
    open_store(profile.database_file).close()
    monkeypatch.setattr("desktop_app.core.store.keys.keyring_available", lambda: False)
    with pytest.raises(StoreError) as info:
        open_store(profile.database_file)
    assert "not available" in info.value.message


def test_database_from_a_newer_lumen_is_refused(profile, passphrase_env):
    with open_store(profile.database_file) as store:
        store.execute(f"PRAGMA user_version = {LATEST_VERSION + 5}")
    with pytest.raises(StoreError) as info:
        open_store(profile.database_file)
    assert "newer Lumen" in info.value.message


def test_transaction_rolls_back_on_error(profile, passphrase_env):
    with open_store(profile.database_file) as store:
        before = len(store.audit_entries(1000))
        with pytest.raises(RuntimeError):
            with store.transaction() as conn:
                conn.execute("INSERT INTO audit_log (at, actor, action) VALUES ('t', 'a', 'x')")
                raise RuntimeError("boom")
        assert len(store.audit_entries(1000)) == before


def test_folder_in_place_of_the_database_gives_clear_error(profile, passphrase_env, tmp_path):
    open_store(profile.database_file).close()
    broken = tmp_path / "folder.db"
    broken.mkdir()
    (tmp_path / "folder.db.keysource").write_text('{"source": "passphrase"}')
    with pytest.raises(StoreError) as info:
        open_store(broken)
    assert not isinstance(info.value, WrongKeyError)
    assert "cannot open" in info.value.message


def test_new_database_never_overwrites_an_old_key(profile, memory_keyring, tmp_path):
    """Moving the database away (a backup) and starting again makes a new key; the old
    database, put back with its .keysource, still opens."""
    with open_store(profile.database_file) as store:
        store.audit("old.database")
    backup = tmp_path / "backup"
    backup.mkdir()
    for name in ("lumen.db", "lumen.db.keysource"):
        (profile.data_dir / name).rename(backup / name)
    for suffix in ("-wal", "-shm"):
        (profile.data_dir / f"lumen.db{suffix}").unlink(missing_ok=True)
    open_store(profile.database_file).close()
    assert len(memory_keyring.items) == 2
    with open_store(backup / "lumen.db") as old:
        assert "old.database" in [e["action"] for e in old.audit_entries()]
