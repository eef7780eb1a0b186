"""How a face starts: the process made safe and private, the profile found, logging set up,
the encrypted database's state read and the database opened.

`lumen`, the window, its self-test and the screenshot tour all start the same way, so the
steps live here once; the faces call these and then act through `core.session`
(tests/test_layers.py holds them to that).  This module imports only the standard library
when loaded: `cli/__init__` imports it before anything else, and the network guard must
be in place before any third-party library is (`offline.activate`).
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .config import Paths, Settings
    from .store import Store


def make_process_offline() -> None:
    """The network guard and the offline environment (telemetry, hub downloads, NLTK),
    before any third-party import (core/offline.py)."""
    from . import offline

    offline.activate()


def network_guard_installed() -> bool:
    from . import offline

    return offline.guard_installed()


def keep_files_private() -> None:
    """What Lumen writes from now on is this account's only (0600 files, 0700 folders)."""
    from .config import private_files

    private_files()


def begin(profile: str | None = None, *, console_level: str | None = None
          ) -> "tuple[Paths, Settings]":
    """The profile's paths (made, private: 0600 files, 0700 folders) and its settings, with
    logging to the profile's log file (and the console at `console_level`)."""
    from .config import Paths, Settings
    from .logs import configure_logging

    keep_files_private()
    paths = Paths.resolve(profile)
    paths.ensure()
    settings = Settings.load(paths)
    configure_logging(paths, settings.log_level, console_level=console_level)
    return paths, settings


def log_failure(logger: logging.Logger, what: str, exc: BaseException) -> None:
    """An unexpected failure in the log, without the patient text its message may quote."""
    from .logs import log_failure as write

    write(logger, what, exc)


class DatabaseState:
    """What a face needs to know before opening the profile's database.  Each answer is
    read when asked: whether a passphrase is needed asks the OS keyring, whose import
    (D-Bus, cryptography) a command that only checks the file should not pay."""

    def __init__(self, paths: "Paths") -> None:
        from .store import KeyManager

        self._keys = KeyManager(paths.database_file)

    @property
    def exists(self) -> bool:
        return self._keys.database_exists()

    @property
    def is_new(self) -> bool:
        return not self.exists

    @property
    def needs_passphrase(self) -> bool:
        """No keyring key and no LUMEN_PASSPHRASE: the user must type it."""
        return self._keys.needs_passphrase()


def database_state(paths: "Paths") -> DatabaseState:
    return DatabaseState(paths)


def open_records(paths: "Paths", passphrase: str | None = None) -> "Store":
    """The profile's encrypted database, unlocked by the keyring's key or `passphrase`
    (created on first use); `WrongKeyError` or `PassphraseRequired` say why not."""
    from .store import open_store

    return open_store(paths.database_file, passphrase)


def record_network_events(paths: "Paths") -> str:
    """Network events of a command that never opened the database (refusals, connections
    to a configured model server) written to its audit log now, when it opens without
    asking; otherwise they stay in the log file, where the guard always writes them.
    Returns a warning for the user, or "" when there is nothing to say."""
    from . import offline
    from .errors import LumenError

    pending = offline.take_unaudited()
    if not pending:
        return ""
    offline.return_unaudited(pending)
    state = database_state(paths)
    if not state.exists:
        return ""
    try:
        with open_records(paths):
            pass  # opening the store writes them
    except LumenError as exc:
        return (f"{len(pending)} network event(s) could not be written to the audit log "
                f"({exc.message}); they are in the log file.")
    return ""
