"""What every `lumen` command shares: exit statuses, printing, the passphrase, reading
files named on the command line, and the command's one Session."""

from __future__ import annotations

import getpass
import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable

from ..core import startup
from ..core.errors import LumenError
from ..core.progress import ProgressReport

if TYPE_CHECKING:
    from ..core.results import Glossary, Paths, Settings, Store
    from ..core.session import Session

EXIT_OK, EXIT_PROBLEM, EXIT_ERROR = 0, 1, 2
# As a shell reports a command stopped by SIGPIPE (128 + 13): its reader went away.
EXIT_BROKEN_PIPE = 141
FACE = "command line"  # as the audit log names who acted


def add_json_option(parser, what: str = "the result") -> None:
    """`--json`, the same on every command that prints a result (for IT's scripts)."""
    parser.add_argument("--json", action="store_true",
                        help=f"print {what} as JSON instead of text")


def print_json(value: Any) -> None:
    print(json.dumps(value, indent=2, default=str))


def show_result(args, value: Any, for_reader: Callable[[], None]) -> None:
    """A command's result: as JSON with `--json` (for IT's scripts), else printed for a
    reader by `for_reader`.  The one place that chooses between the two."""
    if getattr(args, "json", False):
        print_json(value)
    else:
        for_reader()


def tell(args, text: str) -> None:
    """A note for a reader, on stderr; none when the command prints JSON."""
    if not getattr(args, "json", False):
        print(text, file=sys.stderr)


def progress_for(args):
    """Progress lines on stderr, unless the command prints JSON (a script reads it)."""
    return progress_printer(not getattr(args, "json", False))


def progress_printer(enabled: bool):
    last = {"message": None}

    def show(update: ProgressReport) -> None:
        if enabled and update.message != last["message"]:
            last["message"] = update.message
            print(f"  {update.message}…", file=sys.stderr)
    return show


def passphrase_for(paths: Paths) -> str | None:
    """Ask on the terminal when the database needs a passphrase and none is set."""
    from ..core.results import PASSPHRASE_ENV

    state = startup.database_state(paths)
    if not state.needs_passphrase or not sys.stdin.isatty():
        return None
    if state.is_new:
        print("Lumen keeps patient text in an encrypted database. This computer has no OS "
              "keyring, so choose a passphrase (it cannot be recovered).", file=sys.stderr)
        first = getpass.getpass("New passphrase: ")
        if getpass.getpass("Repeat passphrase: ") != first:
            raise LumenError("The two passphrases differ.", "Run the command again.")
        return first
    return getpass.getpass(f"Passphrase for Lumen's database (or set {PASSPHRASE_ENV}): ")


def read_text(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        raise LumenError(f"{path.name} is not UTF-8 text.",
                         "Save it as plain text (UTF-8) and try again.") from None
    except OSError as exc:
        raise LumenError(f"{path} cannot be read ({exc.strerror or exc}).",
                         "Check the path and that your user may read it.") from None


def column_mapping(items: list[str] | None) -> dict[str, str]:
    """--map FIELD=COLUMN options as a dict."""
    mapping = {}
    for item in items or []:
        field, sep, column = item.partition("=")
        if not sep or not field.strip() or not column.strip():
            raise LumenError(f"'{item}' is not a column mapping.", "Write it as FIELD=COLUMN.")
        mapping[field.strip()] = column.strip()
    return mapping


def open_store_for(paths: Paths, required: bool, purpose: str = "glossary") -> "Store | None":
    """The unlocked store.  Optional (`required=False`) where a command can do without it,
    saying so: the glossary's match and lookup use Lumen's own entries, and a change to
    the profile is made without its audit entry."""
    if not required and not startup.database_state(paths).exists:
        return None
    try:
        return startup.open_records(paths, passphrase_for(paths))
    except LumenError as exc:
        if required:
            raise
        print(("Note: using Lumen's own glossary only; imported and local entries need the "
               f"database ({exc.message})") if purpose == "glossary" else
              (f"Warning: the audit log cannot be written, so this command's entry will be "
               f"missing from it: {exc.message} {exc.fix}"), file=sys.stderr)
        return None


def glossary_for(paths: Paths, settings: Settings) -> "Glossary":
    """The whole glossary when the database can be opened, else Lumen's own (said on stderr)."""
    with profile_session(paths, settings, purpose="glossary") as session:
        return session.glossary


def command_session(paths: Paths, settings: Settings) -> "Session":
    """The command's one Session, on the unlocked store (closed when the command ends)."""
    from ..core.session import Session

    return Session.open(paths, settings, passphrase_for(paths), face=FACE)


def profile_session(paths: Paths, settings: Settings, store: bool = True,
                    purpose: str = "audit") -> "Session":
    """A Session for a change to the profile (settings, models): on the store when there
    is one to audit into (a fresh profile has none until the first start creates it), or
    with `store=False` on none, for what only reads the profile's files.  With
    `purpose="glossary"`, for a command that can do with Lumen's own glossary."""
    from ..core.session import Session

    return Session(paths, settings, open_store_for(paths, required=False, purpose=purpose)
                   if store else None, FACE)
