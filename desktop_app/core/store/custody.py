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
import tempfile
from pathlib import Path
from typing import Iterable, Iterator

import sqlcipher3

from ..errors import StoreError, WrongKeyError
from ..locks import FileLock
from .witness import STARTED_KEY
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


def _same_file(a: Path, b: Path) -> bool:
    try:
        return os.path.samefile(a, b)
    except OSError:
        return False


def _lumen_database_beside(target: Path) -> Path | None:
    """The Lumen database that `target` is, or is a side file of (its write-ahead log, shared
    memory or journal): every Lumen database has an `.in-use` lock file beside it."""
    name = target.name
    for suffix in ("-wal", "-shm", "-journal"):
        if name.endswith(suffix):
            name = name[: -len(suffix)]
            break
    database = target.with_name(name)
    return database if in_use_lock(database, shared=False).path.exists() else None


def check_backup_target(store, destination: Path, *, force: bool = False,
                        profile_folders: Iterable[Path] = ()) -> Path:
    """The resolved path a backup may be written to, or a StoreError saying why not.

    A backup never goes inside the profile (its folders hold the live database and its side
    files), onto any Lumen database or its side files (beside an `.in-use` lock, open or not),
    onto a hard link or a symbolic link to the live database, or over an existing file unless
    `force` is given."""
    target = Path(destination).expanduser().resolve()
    folders = {Path(folder).resolve() for folder in profile_folders}
    folders.add(Path(store.path).resolve().parent)
    for folder in sorted(folders):
        if target == folder or folder in target.parents:
            raise StoreError(f"{target} is inside Lumen's profile ({folder}); a backup there "
                             "would be lost with the profile, or overwrite its database.",
                             "Choose a file outside the profile: another disk, or a folder "
                             "your hospital backs up. Nothing was written.")
    if target.is_dir():
        raise StoreError(f"{target} is a folder.", "Choose a file name for the backup.")
    database = _lumen_database_beside(target)
    if database is not None or _same_file(target, store.path):
        what = ("a Lumen database" if database in (None, target)
                else f"a side file of the Lumen database {database}")
        raise StoreError(f"{target} is {what}; a backup never replaces one.",
                         "Choose a new file name outside the profile. Nothing was written.")
    if target.exists() and not force:
        raise StoreError(f"{target} exists already; a backup never overwrites a file unless "
                         "asked to.",
                         "Choose a new file name, or add --force to replace that file "
                         "(the window asks first). Nothing was written.")
    return target


def _verify_backup(path: Path, passphrase: str, counts: dict[str, int],
                   files: dict[str, str]) -> None:
    """Open the written backup as a restore would and check every page's seal, the
    b-tree, the rows of every table and the profile files; a StoreError when any differs."""
    conn = sqlcipher3.connect(str(path), isolation_level=None)
    try:
        conn.execute("PRAGMA cipher_log_level = NONE")
        conn.execute(f"PRAGMA key = {_quoted(passphrase)}")
        problems = _integrity_problems(conn)
        if not problems:
            for table, expected in counts.items():
                found = conn.execute(f'SELECT count(*) FROM "{table}"').fetchone()[0]
                if found != expected:
                    problems.append(f"{table} holds {found} rows, not {expected}")
            if dict(conn.execute(f"SELECT name, content FROM {PROFILE_FILES_TABLE}")) != files:
                problems.append("the profile files differ")
    except sqlcipher3.DatabaseError as exc:
        problems = [str(exc)]
    finally:
        conn.close()
    if problems:
        raise StoreError(f"The backup did not read back whole ({problems[0]}); it was not kept.",
                         "Check the disk (room, errors) and back up again.")


def _sync(path: Path) -> None:
    """Flush a file, or a folder's entry list, to the disk (a rename is durable only then)."""
    try:
        handle = os.open(path, os.O_RDONLY)
    except OSError:  # Windows cannot open a folder; its renames are flushed by NTFS
        return
    try:
        os.fsync(handle)
    except OSError:
        pass
    finally:
        os.close(handle)


def backup(store, destination: Path, passphrase: str, profile_files: dict[str, Path], *,
           force: bool = False, profile_folders: Iterable[Path] = ()) -> dict:
    """Write every table and the named profile files into one encrypted file.

    The target is checked first (`check_backup_target`); the backup is written to a new
    file beside it, read back and checked, and only then renamed into place, so a failure
    at any point leaves the target as it was and the profile untouched."""
    _check_passphrase(passphrase, "backup passphrase")
    folders = [*profile_folders, *(path.parent for path in profile_files.values())]
    target = check_backup_target(store, destination, force=force, profile_folders=folders)
    files = {name: path.read_text(encoding="utf-8") for name, path in profile_files.items()
             if path.exists()}
    try:
        handle, name = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".partial",
                                        dir=target.parent)
    except OSError as exc:
        raise StoreError(f"The backup cannot be written in {target.parent}: "
                         f"{exc.strerror or exc}.",
                         "Check that the folder exists and that you may write there. "
                         "Nothing was written.") from None
    os.close(handle)  # an empty file: SQLite makes a new database in it
    partial = Path(name)
    try:
        counts = store.export_to(partial, passphrase, files)
        _verify_backup(partial, passphrase, counts, files)
        _sync(partial)
        if force:
            os.replace(partial, target)
        else:
            try:  # a link fails if a file appeared at the target since the check
                os.link(partial, target)
            except FileExistsError:
                raise StoreError(f"{target} appeared while the backup was written; it was "
                                 "left as it is.", "Choose a new file name.") from None
            except OSError:  # a file system without hard links (FAT on a USB stick)
                if target.exists():
                    raise StoreError(f"{target} exists already.", "Choose a new file name.") from None
                os.replace(partial, target)
        _sync(target.parent)
    except OSError as exc:
        raise StoreError(f"The backup could not be written to {target}: {exc.strerror or exc}.",
                         "Check the disk's free room and that you may write there. The "
                         "target was left as it was.") from None
    finally:
        partial.unlink(missing_ok=True)
    store.audit("profile.backed_up", {"tables": len(counts), "rows": sum(counts.values()),
                                      "files": sorted(files)})
    return {"tables": counts, "files": sorted(files), "path": str(target)}


def _damaged(source: Path, where: str) -> StoreError:
    return StoreError(f"The backup {source.name} is damaged ({where}); nothing was restored.",
                      "Restore an older backup, or a copy of this one kept on another disk.")


def _open_backup(conn, source: Path) -> int:
    """The backup's schema version, once its passphrase opens it and every page's seal and
    the b-tree check out; WrongKeyError or a StoreError that names the damage otherwise."""
    try:
        version = conn.execute("PRAGMA user_version").fetchone()[0]
        conn.execute("SELECT count(*) FROM sqlite_master").fetchone()
    except sqlcipher3.DatabaseError as exc:
        # A database is a whole number of pages (512 bytes at the least): a file that is
        # not was cut short. A wrong passphrase and a damaged first page read the same.
        if source.stat().st_size % 512 or "not a database" not in str(exc):
            raise _damaged(source, "it was cut short" if source.stat().st_size % 512
                           else str(exc)) from None
        raise WrongKeyError(f"The passphrase does not open the backup {source.name} (or "
                            "the start of the file is damaged).",
                            "Check the backup's passphrase; nothing was restored.") from None
    if source.stat().st_size % 512:
        raise _damaged(source, "it was cut short")
    problems = _integrity_problems(conn)
    if problems:
        raise _damaged(source, problems[0])
    return version


def _integrity_problems(conn, schema: str = "main") -> list[str]:
    """Every page's seal (the first bad page named), then the b-tree; empty when whole."""
    for pragma in ("cipher_integrity_check", "quick_check"):
        try:
            problems = [row[0] for row in conn.execute(f"PRAGMA {schema}.{pragma}")
                        if row[0] != "ok"]
        except sqlcipher3.DatabaseError as exc:
            problems = [str(exc)]
        if problems:
            return problems
    return []


def _remove_database(database_file: Path) -> None:
    for suffix in ("", "-wal", "-shm", "-journal"):
        database_file.with_name(database_file.name + suffix).unlink(missing_ok=True)


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
        version = _open_backup(conn, source)
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
            # The restored database starts a witness of its own at its first open.
            conn.execute("DELETE FROM restored.app_meta WHERE key = ?", (STARTED_KEY,))
            conn.execute(f"PRAGMA restored.user_version = {int(version)}")
        finally:
            conn.execute("DETACH DATABASE restored")
    except sqlcipher3.DatabaseError as exc:
        conn.close()
        _remove_database(database_file)
        raise _damaged(source, str(exc)) from None
    except BaseException:
        conn.close()
        _remove_database(database_file)
        raise
    conn.close()
    keys.store_new_key(key)
    return key, files
