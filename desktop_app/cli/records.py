"""What Lumen keeps, and its custody: `lumen history`, `audit`, `key`, `backup` and
`restore`."""

from __future__ import annotations

import getpass
import json
import os
import sys
from pathlib import Path

from ..core.errors import LumenError
from .common import (EXIT_OK, EXIT_PROBLEM, add_json_option, command_session, print_json,
                    profile_session, show_result)


def cmd_history(args, paths, settings) -> int:
    with command_session(paths, settings) as session:
        if args.run:
            print_json(session.records.run(args.run))
            return EXIT_OK
        runs = session.records.runs(args.limit)

    def for_reader() -> None:
        for run in runs:
            print(f"{run['created_at']}  {run['id']}  {run['kind']:8} {run['method']:17} "
                  f"{run['question'][:60]}")
    show_result(args, runs, for_reader)
    return EXIT_OK


def cmd_audit(args, paths, settings) -> int:
    with command_session(paths, settings) as session:
        if args.action == "verify":
            check = session.records.verify_audit()
        else:
            entries = session.records.audit_entries(args.limit)
    if args.action == "verify":
        show_result(args, check.to_dict(), lambda: print(
            f"The audit log is intact: {check.entries} "
            f"{'entry' if check.entries == 1 else 'entries'}, each sealed and linked to the "
            "one before, none missing from the end." if check.ok else
            f"The audit log was altered: {check.problem}.\nEntries from there on cannot be "
            "trusted. Keep a copy of the database for your security office and restore the "
            "last backup you trust."))
        return EXIT_OK if check.ok else EXIT_PROBLEM

    def for_reader() -> None:
        for e in entries:
            print(f"{e['at']}  {e['actor']:12} {e['action']:24} {json.dumps(e['detail'])}")
    show_result(args, entries, for_reader)
    return EXIT_OK


def new_passphrase(variable: str, what: str) -> str:
    """A new passphrase from `variable`, or asked twice on a terminal."""
    given = os.environ.get(variable)
    if given:
        return given
    if not sys.stdin.isatty():
        raise LumenError(f"Lumen needs the {what}.", f"Set {variable}, or run the command in a "
                         "terminal to be asked for it.")
    first = getpass.getpass(f"{what[:1].upper()}{what[1:]}: ")
    if getpass.getpass("Repeat it: ") != first:
        raise LumenError("The two passphrases differ.", "Run the command again.")
    return first


def cmd_key(args, paths, settings) -> int:
    with command_session(paths, settings) as session:
        phrase = (new_passphrase("LUMEN_NEW_PASSPHRASE", "new passphrase")
                  if session.records.key_source == "passphrase" else None)
        key = session.records.change_key(phrase)
    if key.source == "passphrase":
        print("The database is now encrypted under the new passphrase; the old one opens "
              "nothing. Keep the new one safe: it cannot be recovered.")
    else:
        print("The database is now encrypted under a new random key in the OS keyring; the "
              "old key was removed and opens nothing.")
    return EXIT_OK


def cmd_backup(args, paths, settings) -> int:
    out = Path(args.file)
    with command_session(paths, settings) as session:
        session.records.check_backup_target(out, force=args.force)
        phrase = new_passphrase("LUMEN_BACKUP_PASSPHRASE", "passphrase for the backup")
        summary = session.records.backup(out, phrase, force=args.force)
    rows = sum(summary["tables"].values())
    print(f"Backup written to {summary['path']} and read back whole: {rows} rows in "
          f"{len(summary['tables'])} tables, and {', '.join(summary['files']) or 'no profile files'}. "
          "It opens only with its passphrase.")
    return EXIT_OK


def cmd_restore(args, paths, settings) -> int:
    from ..core.results import PASSPHRASE_ENV

    phrase = os.environ.get("LUMEN_BACKUP_PASSPHRASE") or (
        getpass.getpass("Passphrase of the backup: ") if sys.stdin.isatty() else "")
    if not phrase:
        raise LumenError("Lumen needs the backup's passphrase.",
                         "Set LUMEN_BACKUP_PASSPHRASE, or run the command in a terminal.")
    with profile_session(paths, settings, store=False) as session:
        new_phrase = (new_passphrase(PASSPHRASE_ENV, "passphrase for the restored database")
                      if session.records.restore_needs_passphrase() else None)
        key, _files, check = session.records.restore(Path(args.file), phrase, new_phrase)
    print(f"Restored into {paths.database_file} ({'key in the OS keyring' if key.source == 'keyring' else 'your passphrase'}); "
          f"audit log {'intact' if check.ok else 'ALTERED: ' + check.problem}. Rebuild the "
          "knowledge index with 'lumen knowledge reindex'.")
    return EXIT_OK if check.ok else EXIT_PROBLEM


def register(sub) -> None:
    history = sub.add_parser("history", help="list saved answers and handouts, or show one")
    history.add_argument("run", nargs="?", help="a run id: print it with its trace")
    history.add_argument("--limit", type=int, default=30)
    add_json_option(history)
    history.set_defaults(func=cmd_history)

    p = sub.add_parser(
        "key", help="change the database's passphrase, or rotate its keyring key",
        description="Re-encrypt the database under a new key (close other Lumen windows "
                    "first). A passphrase database asks for the new passphrase twice (or reads "
                    "LUMEN_NEW_PASSPHRASE); a keyring database gets a fresh random key. The old "
                    "key opens nothing afterwards.")
    p.add_argument("action", choices=("change",))
    p.set_defaults(func=cmd_key)
    p = sub.add_parser(
        "backup", help="write the whole profile to one encrypted file",
        description="Every table of the database, the settings and the model list, in one "
                    "SQLCipher file encrypted with a passphrase chosen for it (asked twice, or "
                    "LUMEN_BACKUP_PASSPHRASE). The vector index is rebuilt after a restore with "
                    "'lumen knowledge reindex'. The backup is written beside the target, read "
                    "back and checked, then renamed into place; it is never written inside the "
                    "profile or onto a database, and never over an existing file without "
                    "--force.")
    p.add_argument("file", help="the backup file to write (outside the profile)")
    p.add_argument("--force", action="store_true",
                   help="replace FILE if it exists (never a Lumen database)")
    p.set_defaults(func=cmd_backup)
    p = sub.add_parser(
        "restore", help="restore a backup into a profile that has no database yet",
        description="Copy every row of a backup into a new database with a key of its own "
                    "(the OS keyring, or LUMEN_PASSPHRASE / a passphrase asked twice), and its "
                    "settings and model list. Never overwrites a database: restore into a new "
                    "profile with --profile DIR, or move the old database away first.")
    p.add_argument("file", help="a file written by 'lumen backup'")
    p.set_defaults(func=cmd_restore)
    audit = sub.add_parser(
        "audit", help="show the audit log (who did what, when), or verify its seals",
        description="Show the newest entries of the audit log, or, with 'verify', check "
                    "that no entry was changed, removed or reordered (exit status 1 names the "
                    "first entry that fails).")
    audit.add_argument("action", nargs="?", choices=("show", "verify"), default="show",
                       help="show (default) or verify")
    audit.add_argument("--limit", type=int, default=50, help="entries to show (default 50)")
    add_json_option(audit)
    audit.set_defaults(func=cmd_audit)
