"""Locks on files that the operating system releases however their process ends (exit,
crash, kill -9, power loss): flock on POSIX, msvcrt.locking on Windows.

Used for "is this evaluation run being carried on?" (an exclusive lock per run) and
"is any other Lumen using this database?" (every open store holds a shared lock; changing
the key or restoring needs the exclusive one).  Windows' msvcrt has no shared lock: there
a shared lock is not taken and an exclusive one only excludes other exclusive ones.
"""

from __future__ import annotations

import os
from pathlib import Path


class FileLock:
    """A non-blocking lock on `path` (created if missing), shared or exclusive."""

    def __init__(self, path: Path, *, shared: bool = False) -> None:
        self.path = Path(path)
        self.shared = shared
        self._handle = None

    @property
    def held(self) -> bool:
        return self._handle is not None

    def acquire(self) -> bool:
        """Take the lock at once, or return False when another holder has it."""
        if self._handle is not None:
            return True
        self.path.parent.mkdir(parents=True, exist_ok=True)
        handle = open(self.path, "a+b")  # noqa: SIM115 - kept open while the lock is held
        try:
            if os.name == "nt":
                if not self.shared:
                    import msvcrt

                    handle.seek(0)
                    msvcrt.locking(handle.fileno(), msvcrt.LK_NBLCK, 1)
            else:
                import fcntl

                fcntl.flock(handle.fileno(),
                            (fcntl.LOCK_SH if self.shared else fcntl.LOCK_EX) | fcntl.LOCK_NB)
        except OSError:
            handle.close()
            return False
        self._handle = handle
        return True

    def release(self) -> None:
        if self._handle is not None:
            self._handle.close()  # closing the file lets go of the lock
            self._handle = None

    def held_elsewhere(self) -> bool:
        """Whether another holder (another process, or another FileLock) has the lock in a
        way that excludes this one."""
        if self._handle is not None or not self.path.exists():
            return False
        if self.acquire():
            self.release()
            return False
        return True
