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

import hashlib
import marshal
import os
import sys
import types
from pathlib import Path
from typing import Any, Callable, Iterator, TypeVar

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


def _code_parts(code: types.CodeType) -> Iterator[bytes]:
    yield code.co_code
    yield repr(code.co_names).encode()
    for constant in code.co_consts:
        if isinstance(constant, types.CodeType):
            yield from _code_parts(constant)
        elif isinstance(constant, frozenset):  # its order changes with string hashing
            yield repr(sorted(map(repr, constant))).encode()
        else:
            yield repr(constant).encode()


def code_fingerprint(*functions: Callable) -> str:
    """A digest of what `functions` do (their bytecode, the names they call, their
    constants), for a cache derived by them: changed code makes a new file instead of a
    stale table.  Line numbers and file names are left out, so moving code about or
    running from a bundle keeps the file; frozen-set constants are read in sorted order,
    as their order changes from one process to the next."""
    digest = hashlib.sha256()
    for function in functions:
        function = getattr(function, "__wrapped__", function)  # through functools caches
        for part in _code_parts(function.__code__):
            digest.update(part)
    return digest.hexdigest()
