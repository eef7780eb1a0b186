"""Lumen's one encrypted database (SQLCipher through sqlcipher3).

Everything with patient text in it lives here and nowhere else.  The file is
unreadable without its key; a wrong key is detected before anything is written.
"""

from __future__ import annotations

import contextlib
import datetime as _dt
import json
import logging
import os
import threading
import time
from pathlib import Path
from typing import Any, Iterator

import sqlcipher3

from .. import offline
from ..locks import FileLock
from ..errors import StoreError, UnlockThrottled, WrongKeyError
from .audit_chain import HEAD_KEY, SECRET_KEY, ChainCheck, os_account, seal, verify_rows
from . import witness
from .keys import DatabaseKey, KeyManager
from .migrations import LATEST_VERSION, MIGRATIONS

log = logging.getLogger(__name__)


AUDIT_CHAIN_SCHEMA = 6  # the schema version that seals the audit log (migrations.py)


def _utc_now() -> str:
    return _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="milliseconds")


class Store:
    """An open, unlocked database.  Thread-safe: statements run under one lock."""

    def __init__(self, path: Path, key: DatabaseKey, *, collects_refusals: bool = True) -> None:
        """`collects_refusals`: this store's audit log receives the network guard's
        refusals (the user's database); a throw-away or foreign database must not take
        them away from it."""
        self.path = Path(path)
        self.key_source = key.source
        self._collects_refusals = collects_refusals
        self._lock = threading.RLock()
        self._closed = False
        self._witness_file = witness.witness_file(self.path)
        self._witness_on = False  # until the log is sealed and the witness read
        self.witness_problem = ""
        wait = witness.wait_before_next_unlock(_failed_unlocks(self.path))
        if wait > 0:
            raise UnlockThrottled(
                f"Too many wrong tries in a row to open Lumen's database: the next try is "
                f"allowed in {wait:.0f} seconds.",
                "Wait, then check the passphrase carefully. Every try is recorded in the audit "
                "log.")
        try:
            self._conn = sqlcipher3.connect(str(self.path), check_same_thread=False,
                                            isolation_level=None, timeout=10)
        except sqlcipher3.Error as exc:
            raise StoreError(f"Lumen cannot open its database at {self.path} ({exc}).",
                             "Check that the data folder exists and is writable.") from exc
        if os.name == "posix":
            # This account only; SQLite gives its -wal and -shm files the same mode.
            try:
                os.chmod(self.path, 0o600)
            except OSError as exc:  # not this account's file: the doctor reports it
                log.warning("The database's mode could not be made private: %s", exc)
        # SQLCipher prints its own errors to stderr on a wrong key; Lumen reports them itself.
        self._conn.execute("PRAGMA cipher_log_level = NONE")
        self._conn.execute(f"PRAGMA key = {key.pragma_value()}")
        try:
            # The first read decrypts page 1: it fails on a wrong key, and writes nothing.
            self._conn.execute("SELECT count(*) FROM sqlite_master").fetchone()
        except sqlcipher3.OperationalError as exc:
            self._conn.close()
            raise StoreError(f"Lumen cannot open its database at {self.path} ({exc}).",
                             "Check that the file is a Lumen database and that your user may "
                             "read and write it.") from exc
        except sqlcipher3.DatabaseError:
            self._conn.close()
            _note_failed_unlock(self.path, key.source)
            what = "passphrase" if key.source == "passphrase" else "key from the OS keyring"
            raise WrongKeyError(
                f"The {what} does not open Lumen's database.",
                "Check the passphrase and try again. Nothing was changed."
                if key.source == "passphrase" else
                "The keyring holds a different key than the one this database was made with; "
                "restore the matching keyring entry or database backup.") from None
        # Every open store holds this shared lock; changing the key or restoring takes the
        # exclusive one (custody.py), so neither happens under another window's feet.
        self._in_use = FileLock(self.path.with_name(self.path.name + ".in-use"), shared=True)
        if not self._in_use.acquire():
            self._conn.close()
            raise StoreError("Lumen's database is having its key changed by another Lumen "
                             "window or command.", "Wait a moment, then try again.")
        try:
            self._conn.execute("PRAGMA foreign_keys = ON")
            mode = self._conn.execute("PRAGMA journal_mode = WAL").fetchone()[0]
            if mode.lower() != "wal":
                log.warning("Database journal mode is %s, not WAL", mode)
            self._migrate()
            self._open_witness(key)
        except sqlcipher3.Error as exc:
            self._conn.close()
            self._in_use.release()
            raise _store_error(self.path, exc) from None
        except BaseException:
            self._conn.close()
            self._in_use.release()
            raise
        self._audit_refused_connections()
        self._witness_catch_up()

    # ---- the audit log's witness (witness.py) ----

    def _open_witness(self, key: DatabaseKey) -> None:
        """Read the witness and compare it with the log; start it for a database that has
        none yet (new, restored, or from before the witness), or note that it is missing."""
        if self.schema_version < AUDIT_CHAIN_SCHEMA:  # an old database kept at its schema
            return
        self._witness_key = witness.witness_key(key.source, key.secret)
        self._witness = witness.read_state(self._witness_file, self._witness_key)
        # Failed unlocks the witness holds that no entry follows yet: audited now (the
        # side file may have been deleted), which also ends the throttle.
        self._witness_failures = list(self._witness.trailing_failures)
        started = self._conn.execute("SELECT value FROM app_meta WHERE key = ?",
                                     (witness.STARTED_KEY,)).fetchone()
        if started is None:
            if self._witness_file.exists():  # another database's, left behind: kept aside
                aside = self._witness_file.with_name(
                    f"{self._witness_file.name}.before-{_utc_now().replace(':', '')}")
                os.replace(self._witness_file, aside)
                log.warning("An audit witness without its database was moved to %s", aside.name)
                self._witness = witness.WitnessState()
                self._witness_failures = []
            self._witness_file.touch()  # begun, even before the first entry
            self._conn.execute("INSERT OR REPLACE INTO app_meta (key, value) VALUES (?, ?)",
                               (witness.STARTED_KEY, _utc_now()))
            self.witness_problem = ""
        elif not self._witness_file.exists():
            self.witness_problem = ("the audit witness file beside the database is missing "
                                    f"(it was started {started[0]})")
        else:
            self.witness_problem = witness.compare(self._witness, self._audit_hashes())
        if self.witness_problem:
            log.warning("The audit log does not match its witness: %s", self.witness_problem)
        self._witness_on = True
        self._witness_catch_up()

    def _audit_hashes(self, after: int = 0) -> dict[int, str]:
        return dict(self._conn.execute("SELECT id, entry_hash FROM audit_log WHERE id > ? "
                                       "ORDER BY id", (after,)).fetchall())

    def _witness_catch_up(self) -> None:
        """Witness the committed entries it does not hold yet.  Never while a transaction
        is open (an entry rolled back must not be witnessed), nor once the log and the
        witness differ (the difference is the evidence)."""
        with self._lock:
            if not self._witness_on or self.witness_problem or self._conn.in_transaction:
                return
            last = self._witness.entries[-1][0] if self._witness.entries else 0
            new = [(seq, h) for seq, h in self._audit_hashes(last).items() if h]
            if not new:
                return
            try:
                witness.append_entries(self._witness_file, self._witness_key, self._witness, new)
            except OSError as exc:
                log.warning("The audit witness could not be written: %s", exc)

    # ---- schema ----

    @property
    def schema_version(self) -> int:
        return int(self._conn.execute("PRAGMA user_version").fetchone()[0])

    def _migrate(self) -> None:
        current = self.schema_version
        if current > LATEST_VERSION:
            raise StoreError(
                f"Lumen's database was written by a newer Lumen (schema {current}; this one "
                f"knows up to {LATEST_VERSION}).",
                "Update Lumen on this workstation before opening this database.")
        for version, description, script in MIGRATIONS:
            if version <= current:
                continue
            log.info("Migrating database to schema %d (%s)", version, description)
            with self._lock:
                try:
                    self._conn.executescript(
                        f"BEGIN IMMEDIATE;\n{script}\nPRAGMA user_version = {version};\nCOMMIT;")
                except sqlcipher3.Error:
                    if self._conn.in_transaction:
                        self._conn.execute("ROLLBACK")
                    raise
            if version == AUDIT_CHAIN_SCHEMA:
                self._seal_earlier_entries()

    # ---- statements ----

    @contextlib.contextmanager
    def transaction(self) -> Iterator[Any]:
        """A write transaction; commits on success, rolls back on any error."""
        with self._lock:
            try:
                self._conn.execute("BEGIN IMMEDIATE")
            except sqlcipher3.OperationalError as exc:
                raise _store_error(self.path, exc) from None
            try:
                yield self._conn
            except BaseException:
                if self._conn.in_transaction:
                    self._conn.execute("ROLLBACK")
                raise
            try:
                self._conn.execute("COMMIT")
            except sqlcipher3.OperationalError as exc:
                if self._conn.in_transaction:
                    self._conn.execute("ROLLBACK")
                raise _store_error(self.path, exc) from None

    def execute(self, sql: str, params: tuple | dict = ()) -> int:
        with self._lock:
            try:
                return self._conn.execute(sql, params).rowcount
            except sqlcipher3.OperationalError as exc:
                raise _store_error(self.path, exc) from None

    def query(self, sql: str, params: tuple | dict = ()) -> list[tuple]:
        with self._lock:
            try:
                return self._conn.execute(sql, params).fetchall()
            except sqlcipher3.OperationalError as exc:
                raise _store_error(self.path, exc) from None

    # ---- audit log ----

    @contextlib.contextmanager
    def audited(self, action: str, detail: dict[str, Any] | None = None) -> Iterator[Any]:
        """A write transaction whose audit entry commits with it, or neither does (issue #32):
        an action that cannot be audited is not done.  `detail` may be filled in inside
        the block (an id known only after an insert); it is read when the block ends."""
        detail = {} if detail is None else detail
        with self.transaction() as conn:
            yield conn
            self._insert_audit(action, detail, None)
        # Outside the transaction: these empty queues a rollback would not refill.
        self._audit_refused_connections()
        self._witness_catch_up()

    def audit(self, action: str, detail: dict[str, Any] | None = None,
              actor: str | None = None) -> None:
        """Record an action.  `detail` holds ids and counts only, never patient text."""
        self._insert_audit(action, detail, actor)
        self._audit_refused_connections()
        self._witness_catch_up()

    def _insert_audit(self, action: str, detail: dict[str, Any] | None, actor: str | None) -> None:
        """Append a sealed entry: its link to the newest entry, its seal and the new head
        are written in one transaction, so two processes never fork the chain."""
        actor = actor or os_account()
        at, text = _utc_now(), json.dumps(detail or {}, sort_keys=True)
        with self._lock:
            own = not self._conn.in_transaction
            try:
                if own:
                    self._conn.execute("BEGIN IMMEDIATE")
                secret = self._audit_secret()
                last = self._conn.execute("SELECT id, entry_hash FROM audit_log "
                                          "ORDER BY id DESC LIMIT 1").fetchone()
                prev_hash = last[1] if last else ""
                # An id is never used twice, even after entries were cut from the end:
                # the next one is past the witness's newest too.
                witnessed = (self._witness.entries[-1][0]
                             if self._witness_on and self._witness.entries else 0)
                entry_id = self._conn.execute(
                    "INSERT INTO audit_log (id, at, actor, action, detail, prev_hash) "
                    "VALUES (?, ?, ?, ?, ?, ?)",
                    (max(last[0] if last else 0, witnessed) + 1, at, actor, action, text,
                     prev_hash)).lastrowid
                entry_hash = seal(secret, prev_hash, entry_id, at, actor, action, text)
                self._conn.execute("UPDATE audit_log SET entry_hash = ? WHERE id = ?",
                                   (entry_hash, entry_id))
                self._conn.execute("INSERT OR REPLACE INTO app_meta (key, value) VALUES (?, ?)",
                                   (HEAD_KEY, f"{entry_id}:{entry_hash}"))
                if own:
                    self._conn.execute("COMMIT")
            except BaseException as exc:
                if own and self._conn.in_transaction:
                    self._conn.execute("ROLLBACK")
                if isinstance(exc, sqlcipher3.Error):
                    raise _store_error(self.path, exc) from None
                raise

    def _audit_secret(self) -> bytes:
        row = self._conn.execute("SELECT value FROM app_meta WHERE key = ?",
                                 (SECRET_KEY,)).fetchone()
        if row is None:
            raise StoreError("The audit log's sealing key is missing from the database.",
                             "Restore the database from a backup; 'lumen audit verify' "
                             "shows what can still be checked.")
        return bytes.fromhex(row[0])

    def _seal_earlier_entries(self) -> None:
        """Seal, in order, the entries written before the log was sealed (once, when the
        database reaches that schema)."""
        with self.transaction() as conn:
            secret = self._audit_secret()
            previous, head = "", ""
            for entry_id, at, actor, action, detail in conn.execute(
                    "SELECT id, at, actor, action, detail FROM audit_log ORDER BY id").fetchall():
                entry_hash = seal(secret, previous, entry_id, at, actor, action, detail)
                conn.execute("UPDATE audit_log SET prev_hash = ?, entry_hash = ? WHERE id = ?",
                             (previous, entry_hash, entry_id))
                previous, head = entry_hash, f"{entry_id}:{entry_hash}"
            if head:
                conn.execute("INSERT OR REPLACE INTO app_meta (key, value) VALUES (?, ?)",
                             (HEAD_KEY, head))

    def verify_audit(self) -> ChainCheck:
        """Check every entry's seal and link, and that none is missing from the end."""
        with self._lock:
            rows = self.query("SELECT id, at, actor, action, detail, prev_hash, entry_hash "
                              "FROM audit_log ORDER BY id")
            head = self.query("SELECT value FROM app_meta WHERE key = ?", (HEAD_KEY,))
            try:
                secret = self._audit_secret()
            except StoreError as exc:
                return ChainCheck(False, len(rows), rows[0][0] if rows else None, exc.message)
            check = verify_rows(secret, rows, head[0][0] if head else "")
            if not check.ok or not self._witness_on:
                return check
            # Then against the witness, read afresh: what the seals inside the database
            # cannot show (a cut by someone with the key, an older copy put in place).
            if not self._witness_file.exists():
                problem = self.witness_problem or "the audit witness file beside the database is missing"
            else:
                problem = witness.compare(witness.read_state(self._witness_file, self._witness_key),
                                          {row[0]: row[6] for row in rows})
            if problem:
                return ChainCheck(False, len(rows), None, problem)
            return check

    def _audit_refused_connections(self) -> None:
        """Write the network guard's refusals since the last write into the audit log.
        An attempt names a host and the code that tried, never patient text.  Failed
        unlocks noted since the database was last opened go in too."""
        if not self._collects_refusals:
            return
        noted = _failed_unlocks_file(self.path)
        attempts = _side_file_failures(noted)
        # The same attempt is in the side file and the witness: deleting either one
        # leaves it in the other.
        seen = {a.get("id") for a in attempts if a.get("id")}
        attempts += [a for a in getattr(self, "_witness_failures", ())
                     if not a.get("id") or a.get("id") not in seen]
        for attempt in attempts:
            self._insert_audit("database.unlock_failed",
                               {"at": str(attempt.get("at", "")),
                                "key_source": str(attempt.get("key_source", ""))},
                               str(attempt.get("actor", "unknown")))
        self._witness_failures = []
        noted.unlink(missing_ok=True)
        pending = _pending_actions_file(self.path)
        # A new database's first entry is its creation; what waited for it comes after.
        if pending.exists() and not self._conn.execute("SELECT 1 FROM audit_log LIMIT 1").fetchone():
            return
        for record in _side_file_failures(pending):
            if isinstance(record.get("action"), str) and isinstance(record.get("detail"), dict):
                self._insert_audit(record["action"], {**record["detail"],
                                                      "noted_at": str(record.get("at", ""))},
                                   str(record.get("actor", "unknown")))
        pending.unlink(missing_ok=True)
        attempts = offline.take_unaudited()
        for index, attempt in enumerate(attempts):
            try:
                if attempt.allowed:
                    self._insert_audit("network.connect_failed" if attempt.failed else
                                       "network.connected", {"server": attempt.endpoint,
                                                             "target": attempt.target,
                                                             "caller": attempt.caller}, None)
                else:
                    self._insert_audit("network.refused", {"event": attempt.event,
                                                           "target": attempt.target,
                                                           "caller": attempt.caller}, None)
            except StoreError:
                offline.return_unaudited(attempts[index:])
                raise

    # ---- secrets other than the key (a model server's API key) ----

    def set_secret(self, name: str, value: str) -> None:
        """Keep a secret inside the encrypted database (never in a settings file)."""
        self.execute("INSERT OR REPLACE INTO app_meta (key, value) VALUES (?, ?)",
                     ("secret:" + name, value))

    def secret(self, name: str) -> str | None:
        rows = self.query("SELECT value FROM app_meta WHERE key = ?", ("secret:" + name,))
        return rows[0][0] if rows else None

    def forget_secret(self, name: str) -> None:
        self.execute("DELETE FROM app_meta WHERE key = ?", ("secret:" + name,))

    def audit_entries(self, limit: int = 100) -> list[dict[str, Any]]:
        rows = self.query("SELECT at, actor, action, detail FROM audit_log "
                          "ORDER BY id DESC LIMIT ?", (limit,))
        return [{"at": at, "actor": actor, "action": action, "detail": json.loads(detail)}
                for at, actor, action, detail in rows]

    # ---- key custody (custody.py decides when; these do it) ----

    def rekey(self, key: DatabaseKey) -> None:
        """Re-encrypt every page under `key`, in place."""
        with self._lock:
            try:
                self._conn.execute(f"PRAGMA rekey = {key.pragma_value()}").fetchall()
                self._conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchall()
            except sqlcipher3.Error as exc:
                raise _store_error(self.path, exc) from None
            new_witness_key = witness.witness_key(key.source, key.secret)
            if not self._witness_on:
                self._witness_key = new_witness_key
                self.key_source = key.source
                return
            try:
                witness.reseal(self._witness_file, self._witness_key, new_witness_key)
            except OSError as exc:
                log.warning("The audit witness could not be sealed under the new key: %s", exc)
            self._witness_key = new_witness_key
            self._witness = witness.read_state(self._witness_file, new_witness_key)
        self.key_source = key.source

    def export_to(self, path: Path, passphrase: str, files: dict[str, str]) -> dict[str, int]:
        """Copy every table into a new SQLCipher file under `passphrase`, with `files`
        (name -> text) in a table of their own; returns the rows copied per table."""
        quoted = "'" + passphrase.replace("'", "''") + "'"
        target = "'" + str(path).replace("'", "''") + "'"
        with self._lock:
            try:
                self._conn.execute(f"ATTACH DATABASE {target} AS backup KEY {quoted}")
                try:
                    self._conn.execute("SELECT sqlcipher_export('backup')")
                    self._conn.execute(f"PRAGMA backup.user_version = {self.schema_version}")
                    self._conn.execute("CREATE TABLE backup.lumen_profile_file "
                                       "(name TEXT PRIMARY KEY, content TEXT NOT NULL)")
                    self._conn.executemany("INSERT INTO backup.lumen_profile_file VALUES (?, ?)",
                                           sorted(files.items()))
                    tables = [row[0] for row in self._conn.execute(
                        "SELECT name FROM sqlite_master WHERE type = 'table' "
                        "AND name NOT LIKE 'sqlite_%'")]
                    return {table: self._conn.execute(
                        f'SELECT count(*) FROM backup."{table}"').fetchone()[0] for table in tables}
                finally:
                    self._conn.execute("DETACH DATABASE backup")
            except sqlcipher3.Error as exc:
                raise _store_error(path, exc) from None

    # ---- health ----

    def cipher_version(self) -> str:
        return str(self.query("PRAGMA cipher_version")[0][0])

    def integrity_problems(self) -> list[str]:
        """Empty when every page's HMAC and the b-tree structure check out."""
        problems = [row[0] for row in self.query("PRAGMA cipher_integrity_check")]
        problems += [row[0] for row in self.query("PRAGMA quick_check") if row[0] != "ok"]
        return problems

    def close(self) -> None:
        with self._lock:
            if self._closed:
                return
            self._closed = True
            try:
                self._audit_refused_connections()
                self._witness_catch_up()
            except StoreError as exc:
                log.warning("Refused network attempts could not be audited: %s", exc.message)
            self._conn.close()
            self._in_use.release()

    def __enter__(self) -> "Store":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _failed_unlocks_file(database: Path) -> Path:
    return database.with_name(database.name + ".failed-unlocks")


def _note_failed_unlock(database: Path, key_source: str) -> None:
    """A wrong key cannot write to the database it failed to open: the attempt (when,
    which account, which kind of key; never the key) waits in a side file and in the
    audit witness, and goes into the audit log the next time the database opens."""
    import secrets

    record = {"id": secrets.token_hex(8), "at": _utc_now(), "t": round(time.time(), 3),
              "actor": os_account(), "key_source": key_source}
    try:
        with _failed_unlocks_file(database).open("a", encoding="utf-8") as handle:
            handle.write(json.dumps(record) + "\n")
    except OSError as exc:
        log.warning("A failed unlock could not be noted: %s", exc)
    try:
        witness.append_failure(witness.witness_file(database), record)
    except OSError as exc:
        log.warning("A failed unlock could not be witnessed: %s", exc)


def _pending_actions_file(database: Path) -> Path:
    return database.with_name(database.name + ".pending-audit")


def note_pending_action(database: Path, action: str, detail: dict[str, Any]) -> None:
    """An action taken while no database was open to record it (a model server added to a
    fresh profile, before the first start creates the database): it waits in a private
    side file beside where the database will be, and goes into the audit log with the
    time it was taken when the database is next written.  Ids and addresses only."""
    record = {"at": _utc_now(), "actor": os_account(), "action": action, "detail": detail}
    path = _pending_actions_file(database)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
        with os.fdopen(descriptor, "a", encoding="utf-8") as handle:
            handle.write(json.dumps(record, sort_keys=True) + "\n")
    except OSError as exc:
        log.warning("An action could not be noted for the audit log: %s", exc)


def _side_file_failures(noted: Path) -> list[dict]:
    try:
        lines = noted.read_text(encoding="utf-8").splitlines() if noted.exists() else []
    except OSError as exc:
        log.warning("Failed unlocks could not be read: %s", exc)
        return []
    attempts = []
    for line in lines:
        try:
            attempt = json.loads(line)
        except ValueError:
            continue
        if isinstance(attempt, dict):
            attempts.append(attempt)
    return attempts


def _failed_unlocks(database: Path) -> list[dict]:
    """The failed unlocks since the last one that opened the database: the side file's
    or the witness's trailing ones, whichever holds more (one may have been deleted)."""
    from_witness = witness.read_state(witness.witness_file(database), None).trailing_failures
    from_side_file = _side_file_failures(_failed_unlocks_file(database))
    return max(from_witness, from_side_file, key=len)


def _store_error(path: Path, exc: Exception) -> StoreError:
    """A clear message for what SQLite reports when the file cannot be used.

    SQLite's messages here name conditions ("database or disk is full", "database is
    locked", "attempt to write a readonly database"), never the data."""
    text = str(exc).lower()
    if "locked" in text or "busy" in text:
        fix = "Another Lumen window or command may be using the database; close it and try again."
    elif "full" in text:
        fix = "Free disk space on the drive holding Lumen's data folder, then try again."
    elif "readonly" in text or "read-only" in text:
        fix = "Give your user write access to the data folder and the database file."
    else:
        fix = "Check that the data folder and the database file are writable and the disk is not full."
    return StoreError(f"Lumen cannot use its database at {path} ({exc}).", fix)


def open_store(database_file: Path, passphrase: str | None = None, *,
               collects_refusals: bool = True) -> Store:
    """Open Lumen's database, creating it (and its key) on first use."""
    keys = KeyManager(database_file)
    if keys.is_new():
        key = keys.key_for_new(passphrase)
        database_file.parent.mkdir(parents=True, exist_ok=True)
        # Remove stray WAL/SHM files from an earlier, abandoned database of this name, and
        # its audit witness (a new database starts its own).
        for suffix in ("-wal", "-shm", witness.witness_file(Path("x")).name[1:]):
            database_file.with_name(database_file.name + suffix).unlink(missing_ok=True)
        store = Store(database_file, key, collects_refusals=collects_refusals)
        try:
            keys.store_new_key(key)
        except Exception as exc:
            store.close()
            database_file.unlink(missing_ok=True)
            raise StoreError(f"The new database key could not be saved ({exc}).",
                             "Check the OS keyring, or set a passphrase instead.") from exc
        store.audit("database.created", {"key_source": key.source})
        return store
    try:
        return Store(database_file, keys.key_for_existing(passphrase),
                     collects_refusals=collects_refusals)
    except WrongKeyError:
        # A key change that stopped between its new keyring entry and its record: the
        # pending key opens the file, and the change is finished now.
        pending = keys.pending_key()
        if pending is None:
            raise
        store = Store(database_file, pending, collects_refusals=collects_refusals)
        keys.record_source(pending)
        store.audit("database.key_changed", {"key_source": pending.source, "finished": True})
        return store
