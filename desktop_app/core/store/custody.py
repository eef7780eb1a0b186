"""Key custody: changing the database's key, and an encrypted backup and restore of a
whole profile in one file.

- Changing the key re-encrypts every page in place (SQLCipher's `PRAGMA rekey`): a
  passphrase database takes a new passphrase; a keyring database gets a new random key
  under a new keyring entry, written before the rekey and recorded as pending, so a crash
  between the two leaves a key that opens the file (open_store finishes the change).
  The old key opens nothing afterwards.
- A backup is a SQLCipher database of its own (`sqlcipher_export`), encrypted with a
  passphrase chosen for it, holding every table and the profile's settings and model
  list; the vector index is not in it (it holds no text and `lumen knowledge reindex` rebuilds
  it from the database).
- A restore goes into a profile without a database: the new database gets a key of its
  own (keyring or passphrase), every row is copied, and the audit log's seals, kept with
  the rows, still verify.

Both need the database to themselves: every open store holds a shared lock on
`<database>.in-use`, and these take the exclusive one or refuse with what to do.
"""

from __future__ import annotations

import contextlib
import os
import secrets
from pathlib import Path
from typing import Iterator

import sqlcipher3

from ..errors import StoreError, WrongKeyError
from ..locks import FileLock
from .keys import KEYRING_SERVICE, MIN_PASSPHRASE_LENGTH, DatabaseKey, KeyManager

PROFILE_FILES_TABLE = "lumen_profile_file"


def in_use_lock(database_file: Path, *, shared: bool) -> FileLock:
    return FileLock(database_file.with_name(database_file.name + ".in-use"), shared=shared)


def _check_passphrase(passphrase: str, what: str) -> None:
    if not passphrase or len(passphrase) < MIN_PASSPHRASE_LENGTH:
        raise StoreError(f"The {what} is too short (fewer than {MIN_PASSPHRASE_LENGTH} "
                         "characters).", "Choose a longer one; a few unrelated words work well.")


def _quoted(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


@contextlib.contextmanager
def alone_with(store) -> Iterator[None]:
    """The database to this store alone: refused while another window or command has it
    open."""
    own = store._in_use
    own.release()
    exclusive = in_use_lock(store.path, shared=False)
    if not exclusive.acquire():
        own.acquire()
        raise StoreError("Another Lumen window or command has the database open.",
                         "Close the other Lumen windows and commands, then try again.")
    try:
        yield
    finally:
        exclusive.release()
        own.acquire()


def change_key(store, new_passphrase: str | None = None) -> DatabaseKey:
    """Re-encrypt the database under a new key; returns it.  A passphrase database needs
    `new_passphrase`; a keyring database gets a fresh random key."""
    keys = KeyManager(store.path)
    if store.key_source == "passphrase":
        _check_passphrase(new_passphrase or "", "new passphrase")
        new_key = DatabaseKey("passphrase", new_passphrase or "")
    elif store.key_source == "keyring":
        import keyring

        new_key = DatabaseKey("keyring", secrets.token_hex(32),
                              f"database-key-{secrets.token_hex(8)}")
        old_account = keys.keyring_account
        keyring.set_password(KEYRING_SERVICE, new_key.account, new_key.secret)
        keys.record_pending(new_key)
    else:
        raise StoreError("This database's key cannot be changed (a throw-away key).", "")
    try:
        with alone_with(store):
            store.rekey(new_key)
    except BaseException:
        if new_key.source == "keyring":  # nothing changed: forget the key that was not used
            keys.clear_pending()
            try:
                keyring.delete_password(KEYRING_SERVICE, new_key.account)
            except Exception:
                pass
        raise
    if new_key.source == "keyring":
        keys.record_source(new_key)
        try:
            keyring.delete_password(KEYRING_SERVICE, old_account)
        except Exception:  # an entry that cannot open anything any more; never fatal
            pass
    store.audit("database.key_changed", {"key_source": new_key.source})
    return new_key


def backup(store, destination: Path, passphrase: str, profile_files: dict[str, Path]) -> dict:
    """Write every table and the named profile files into one encrypted file."""
    _check_passphrase(passphrase, "backup passphrase")
    destination = Path(destination)
    partial = destination.with_name(destination.name + ".partial")
    partial.unlink(missing_ok=True)
    files = {name: path.read_text(encoding="utf-8") for name, path in profile_files.items()
             if path.exists()}
    try:
        counts = store.export_to(partial, passphrase, files)
        os.replace(partial, destination)
    except BaseException:
        partial.unlink(missing_ok=True)
        raise
    store.audit("profile.backed_up", {"tables": len(counts), "rows": sum(counts.values()),
                                      "files": sorted(files)})
    return {"tables": counts, "files": sorted(files)}


def restore(source: Path, passphrase: str, database_file: Path,
            new_passphrase: str | None = None) -> tuple[DatabaseKey, dict[str, str]]:
    """Copy a backup into a new database at `database_file` (which must not exist) under a
    key of its own; returns the key and the profile files the backup holds (name ->
    text), for the caller to write."""
    keys = KeyManager(database_file)
    if not keys.is_new():
        raise StoreError(f"There is a database at {database_file} already; a restore never "
                         "overwrites one.",
                         "Restore into a new profile (lumen --profile NEW_FOLDER restore ...), "
                         "or move the current database away first.")
    source = Path(source)
    if not source.is_file():
        raise StoreError(f"The backup {source} cannot be opened.", "Check the file's name.")
    key = keys.key_for_new(new_passphrase)
    database_file.parent.mkdir(parents=True, exist_ok=True)
    conn = sqlcipher3.connect(str(source), isolation_level=None)
    try:
        conn.execute("PRAGMA cipher_log_level = NONE")
        conn.execute(f"PRAGMA key = {_quoted(passphrase)}")
        try:
            version = conn.execute("PRAGMA user_version").fetchone()[0]
            conn.execute("SELECT count(*) FROM sqlite_master").fetchone()
        except sqlcipher3.DatabaseError:
            raise WrongKeyError(f"The passphrase does not open the backup {source.name}.",
                                "Check the backup's passphrase; nothing was restored.") from None
        tables = {row[0] for row in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        if PROFILE_FILES_TABLE not in tables or "audit_log" not in tables:
            raise StoreError(f"{source.name} is not a Lumen backup.",
                             "Choose a file written by 'lumen backup' or File → Back up.")
        files = dict(conn.execute(f"SELECT name, content FROM {PROFILE_FILES_TABLE}").fetchall())
        conn.execute(f"ATTACH DATABASE {_quoted(str(database_file))} AS restored "
                     f"KEY {key.pragma_value()}")
        try:
            conn.execute("SELECT sqlcipher_export('restored')")
            conn.execute(f"DROP TABLE restored.{PROFILE_FILES_TABLE}")
            conn.execute(f"PRAGMA restored.user_version = {int(version)}")
        finally:
            conn.execute("DETACH DATABASE restored")
    except BaseException:
        conn.close()
        for suffix in ("", "-wal", "-shm", "-journal"):
            database_file.with_name(database_file.name + suffix).unlink(missing_ok=True)
        raise
    conn.close()
    keys.store_new_key(key)
    return key, files
