"""The database key: a random 256-bit key in the OS keyring, or a passphrase.

There is no third way.  Where the keyring has no backend (a headless Linux
session), the user sets a passphrase, from which SQLCipher derives the key
(PBKDF2-HMAC-SHA512 with a per-database salt).  `LUMEN_PASSPHRASE` supplies it
to scripts and tests.  Which of the two a database uses is written beside it in
`lumen.db.keysource` (no secret in it) so Lumen knows whom to ask.
"""

from __future__ import annotations

import datetime as _dt
import json
import os
import secrets
from dataclasses import dataclass
from pathlib import Path

from ..errors import ModelError, PassphraseRequired, StoreError

KEYRING_SERVICE = "Lumen"
PASSPHRASE_ENV = "LUMEN_PASSPHRASE"
MIN_PASSPHRASE_LENGTH = 8


@dataclass(frozen=True)
class DatabaseKey:
    source: str  # "keyring", "passphrase", or "raw" (a throwaway key, self-test only)
    secret: str  # hex key or passphrase; never logged
    account: str = ""  # keyring entry name, for keys kept there

    def pragma_value(self) -> str:
        if self.source in ("keyring", "raw"):
            return f"\"x'{self.secret}'\""
        return "'" + self.secret.replace("'", "''") + "'"

    def __repr__(self) -> str:
        return f"DatabaseKey(source={self.source!r})"


def keyring_available() -> bool:
    """True when the OS keyring has a real backend (not keyring's 'fail' stand-in)."""
    try:
        import keyring
        from keyring.backends import chainer, fail

        backend = keyring.get_keyring()
    except Exception:
        return False
    if isinstance(backend, fail.Keyring):
        return False
    if isinstance(backend, chainer.ChainerBackend) and not backend.backends:
        return False
    return True


class KeyManager:
    """Finds or creates the key for one database file."""

    def __init__(self, database_file: Path) -> None:
        self.database_file = Path(database_file)
        self.source_file = self.database_file.with_name(self.database_file.name + ".keysource")

    @property
    def keyring_account(self) -> str:
        """The keyring entry of this database: random per database, recorded beside it, so a
        new database (after the old file was moved to a backup, say) never overwrites the
        key of an old one."""
        recorded = self._record().get("keyring_account")
        if not recorded:
            raise StoreError("Lumen's database does not say which keyring entry holds its key.",
                             f"Restore {self.source_file.name} from the backup of the database.")
        return recorded

    def database_exists(self) -> bool:
        return self.database_file.exists() and self.database_file.stat().st_size > 0

    def _record(self) -> dict:
        try:
            data = json.loads(self.source_file.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return {}
        return data if isinstance(data, dict) else {}

    def recorded_source(self) -> str | None:
        return self._record().get("source")

    def record_source(self, key: "DatabaseKey") -> None:
        record = {"source": key.source,
                  "created": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")}
        if key.account:
            record["keyring_account"] = key.account
        self.source_file.write_text(json.dumps(record), encoding="utf-8")

    def record_pending(self, key: "DatabaseKey") -> None:
        """Note a keyring key a key change is about to re-encrypt the database with."""
        record = self._record()
        record["pending_account"] = key.account
        self.source_file.write_text(json.dumps(record), encoding="utf-8")

    def clear_pending(self) -> None:
        record = self._record()
        if record.pop("pending_account", None) is not None:
            self.source_file.write_text(json.dumps(record), encoding="utf-8")

    def pending_key(self) -> "DatabaseKey | None":
        account = self._record().get("pending_account")
        if not account or not keyring_available():
            return None
        import keyring

        secret = keyring.get_password(KEYRING_SERVICE, account)
        return DatabaseKey("keyring", secret, account) if secret else None

    def needs_passphrase(self) -> bool:
        """Whether opening (or creating) the database needs a passphrase from the user."""
        if os.environ.get(PASSPHRASE_ENV):
            return False
        if self.database_exists():
            return self.recorded_source() == "passphrase" or (
                self.recorded_source() is None and not keyring_available())
        return not keyring_available()

    def is_new(self) -> bool:
        return not self.database_exists()

    def _passphrase(self, given: str | None) -> str | None:
        return given if given else os.environ.get(PASSPHRASE_ENV) or None

    def key_for_existing(self, passphrase: str | None = None) -> DatabaseKey:
        source = self.recorded_source()
        phrase = self._passphrase(passphrase)
        if source == "passphrase" or (source is None and phrase):
            if not phrase:
                raise PassphraseRequired(
                    "Lumen's database is locked with a passphrase.",
                    f"Enter it in the window, or set {PASSPHRASE_ENV} for the command line.")
            return DatabaseKey("passphrase", phrase)
        if not keyring_available():
            raise StoreError(
                "Lumen's database key is kept in the OS keyring, which is not available in "
                "this session.",
                "Start Lumen from the desktop session where it was set up (the keyring unlocks "
                "when you log in). Without that key the database cannot be opened.")
        import keyring

        account = self.keyring_account
        secret = keyring.get_password(KEYRING_SERVICE, account)
        if not secret:
            raise StoreError(
                "The key for Lumen's database is missing from the OS keyring.",
                "Restore the keyring entry or the database from a backup; without its key the "
                "database cannot be read, by design.")
        return DatabaseKey("keyring", secret, account)

    def key_for_new(self, passphrase: str | None = None) -> DatabaseKey:
        phrase = self._passphrase(passphrase)
        if phrase:
            if len(phrase) < MIN_PASSPHRASE_LENGTH:
                raise StoreError(
                    f"The passphrase is too short (fewer than {MIN_PASSPHRASE_LENGTH} characters).",
                    "Choose a longer passphrase; a few unrelated words work well.")
            return DatabaseKey("passphrase", phrase)
        if not keyring_available():
            raise PassphraseRequired(
                "This computer has no OS keyring to keep the database key in.",
                f"Set a passphrase in the window, or set {PASSPHRASE_ENV} for the command line.")
        return DatabaseKey("keyring", secrets.token_hex(32), f"database-key-{secrets.token_hex(8)}")

    def store_new_key(self, key: DatabaseKey) -> None:
        if key.source == "keyring":
            import keyring

            if keyring.get_password(KEYRING_SERVICE, key.account) is not None:
                raise StoreError("A keyring entry of that name exists already.", "Try again.")
            keyring.set_password(KEYRING_SERVICE, key.account, key.secret)
        self.record_source(key)


def server_secret_name(model_id: str) -> str:
    return f"server:{model_id}"


def server_api_key(spec, store) -> str:
    """A model server's API key (`spec`: its ModelSpec), from where it was kept when the
    server was added: the OS keyring, or the encrypted database `store` (or None)."""
    secret = None
    if spec.api_key == "keyring":
        import keyring

        secret = keyring.get_password(KEYRING_SERVICE, server_secret_name(spec.id))
    elif spec.api_key == "database":
        if store is None:
            raise ModelError(f"The API key of the model server '{spec.id}' is in Lumen's "
                             "database, which is not open.", "Unlock Lumen and try again.")
        secret = store.secret(server_secret_name(spec.id))
    if not secret:
        raise ModelError(f"The API key of the model server '{spec.id}' is missing from the "
                         f"{'keyring' if spec.api_key == 'keyring' else 'database'}.",
                         "Add the server again with its key (lumen models add-server).")
    return secret
