"""The encrypted store: SQLCipher database, its key, migrations and audit log."""

from .database import Store, open_store
from .keys import KeyManager, keyring_available

__all__ = ["Store", "open_store", "KeyManager", "keyring_available"]
