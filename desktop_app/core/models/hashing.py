"""sha256 of model files, remembered per (path, size, mtime) so multi-GB files
are hashed once rather than at every start."""

from __future__ import annotations

import hashlib
import json
import threading
from pathlib import Path

from ..progress import CancelToken, ProgressCallback, report

_CHUNK = 4 << 20
_lock = threading.Lock()


def sha256_file(path: Path, progress: ProgressCallback = None,
                cancel: CancelToken | None = None) -> str:
    digest = hashlib.sha256()
    total = path.stat().st_size
    done = 0
    with path.open("rb") as handle:
        while chunk := handle.read(_CHUNK):
            digest.update(chunk)
            done += len(chunk)
            if cancel is not None:
                cancel.raise_if_cancelled()
            report(progress, done, total, f"Checking {path.name}")
    return digest.hexdigest()


class HashCache:
    """A small JSON file in the cache folder; holds file paths and hashes only."""

    def __init__(self, cache_file: Path) -> None:
        self.cache_file = cache_file

    def _load(self) -> dict:
        try:
            return json.loads(self.cache_file.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return {}

    def sha256(self, path: Path, progress: ProgressCallback = None,
               cancel: CancelToken | None = None, *, force: bool = False) -> str:
        stat = path.stat()
        key = str(path.resolve())
        stamp = [stat.st_size, stat.st_mtime_ns]
        with _lock:
            entry = self._load().get(key)
        if entry and entry.get("stamp") == stamp and not force:
            return entry["sha256"]
        value = sha256_file(path, progress, cancel)
        with _lock:
            data = self._load()
            data[key] = {"stamp": stamp, "sha256": value}
            try:
                self.cache_file.parent.mkdir(parents=True, exist_ok=True)
                tmp = self.cache_file.with_suffix(".tmp")
                tmp.write_text(json.dumps(data, indent=1), encoding="utf-8")
                tmp.replace(self.cache_file)
            except OSError:
                pass  # a cache that cannot be written only costs time
        return value
