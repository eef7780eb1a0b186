"""The audit log's witness: a small append-only file beside the database that keeps, for
every audit entry, its id and seal, and every failed unlock (issue #32).

The seals inside the database stop an edit by anyone without the key, but whoever holds
the passphrase holds the seals' HMAC key too (it lives in the database), and copying an
older database file over the current one needs no key at all.  The witness is kept
outside the database and sealed with a key that is not stored anywhere: it is derived
from the database key (the passphrase, or the keyring's key) with a salt of its own.

- An entry line holds `seq` (the entry's id), `hash` (its seal) and `mac`: an
  HMAC-SHA256 over the chain so far and the line, so lines cannot be removed, changed or
  reordered without the key.
- A failed unlock cannot compute a MAC (the key was wrong); its line holds when, which
  account and which kind of key, and the next entry line's MAC covers its bytes, so once
  an entry follows it, it cannot be removed either.  The trailing failures since the
  last entry drive the unlock throttle.
- The database records that its witness was started (app_meta), so a deleted witness
  is reported, not silently begun again.

What it cannot stop, said in docs/SECURITY.md: someone with the key, this code and write
access to both files can rewrite both consistently.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import time
from dataclasses import dataclass, field
from pathlib import Path

from ..locks import FileLock

STARTED_KEY = "audit_witness_started"  # app_meta: the witness exists for this database
_SALT = b"lumen audit witness v1"


def witness_file(database: Path) -> Path:
    return database.with_name(database.name + ".audit-witness")


def witness_key(source: str, secret: str) -> bytes:
    """The witness's MAC key, derived from the database key with a salt of its own (a
    passphrase is stretched; a keyring key is random already)."""
    rounds = 200_000 if source == "passphrase" else 1
    return hashlib.pbkdf2_hmac("sha256", secret.encode("utf-8"), _SALT, rounds)


def _content(seq: int, entry_hash: str) -> str:
    return json.dumps({"kind": "entry", "seq": seq, "hash": entry_hash},
                      separators=(",", ":"), sort_keys=True)


@dataclass
class WitnessState:
    """What the file says: the witnessed entries in order, the failed unlocks after the
    last entry, and the first problem found (a damaged or re-sealed line)."""
    entries: list[tuple[int, str]] = field(default_factory=list)
    trailing_failures: list[dict] = field(default_factory=list)
    problem: str = ""
    chain: str = ""  # the running MAC after the last line read
    offset: int = 0  # bytes read


def read_state(path: Path, key: bytes | None, state: WitnessState | None = None) -> WitnessState:
    """Read the witness from `state.offset` on (all of it without a state); with no key,
    the MACs are not checked (an unlock not yet made counts its failures)."""
    state = state or WitnessState()
    try:
        with path.open("rb") as handle:
            handle.seek(state.offset)
            data = handle.read()
    except FileNotFoundError:
        return state
    end = data.rfind(b"\n") + 1  # a line still being written is read next time
    for raw in data[:end].split(b"\n")[:-1]:
        state.offset += len(raw) + 1
        if state.problem or not raw.strip():
            continue
        try:
            record = json.loads(raw)
        except ValueError:
            state.problem = "a line of the audit witness is damaged"
            continue
        if record.get("kind") == "unlock_failed":
            state.chain = hashlib.sha256(state.chain.encode() + raw).hexdigest()
            state.trailing_failures.append(record)
            continue
        try:
            seq, entry_hash, mac = int(record["seq"]), str(record["hash"]), str(record["mac"])
        except (KeyError, TypeError, ValueError):
            state.problem = "a line of the audit witness is damaged"
            continue
        if key is not None:
            expected = hmac.new(key, (state.chain + _content(seq, entry_hash)).encode(),
                                hashlib.sha256).hexdigest()
            if not hmac.compare_digest(expected, mac):
                state.problem = (f"the audit witness's line for entry {seq} was changed, "
                                 "removed or sealed with another key")
                continue
        state.chain = mac
        state.entries.append((seq, entry_hash))
        state.trailing_failures = []
    return state


def _locked(path: Path) -> FileLock:
    lock = FileLock(path.with_name(path.name + ".lock"))
    for _ in range(500):  # appends take microseconds; another process holds it briefly
        if lock.acquire():
            return lock
        time.sleep(0.01)
    raise OSError("the audit witness is held by another process")


def append_entries(path: Path, key: bytes, state: WitnessState,
                   entries: list[tuple[int, str]]) -> None:
    """Append entry lines after reading what other processes appended since `state`."""
    lock = _locked(path)
    try:
        read_state(path, key, state)
        known = {seq for seq, _ in state.entries}
        lines = []
        for seq, entry_hash in entries:
            if seq in known:
                continue
            content = _content(seq, entry_hash)
            mac = hmac.new(key, (state.chain + content).encode(), hashlib.sha256).hexdigest()
            lines.append(json.dumps({"kind": "entry", "seq": seq, "hash": entry_hash,
                                     "mac": mac}, separators=(",", ":"), sort_keys=True))
            state.chain = mac
            state.entries.append((seq, entry_hash))
            state.trailing_failures = []
        if lines:
            data = ("\n".join(lines) + "\n").encode()
            with path.open("ab") as handle:
                handle.write(data)
            state.offset += len(data)
    finally:
        lock.release()


def append_failure(path: Path, record: dict) -> None:
    """A failed unlock: no key, so no MAC; the next entry line covers it."""
    lock = _locked(path)
    try:
        with path.open("ab") as handle:
            handle.write((json.dumps({"kind": "unlock_failed", **record},
                                     separators=(",", ":"), sort_keys=True) + "\n").encode())
    finally:
        lock.release()


def reseal(path: Path, old_key: bytes, new_key: bytes) -> bool:
    """Seal every line again under a new key (after the database key changed), only when
    it verifies under the old one: a witness that shows tampering stays as it is."""
    lock = _locked(path)
    try:
        state = read_state(path, old_key)
        if state.problem or not path.exists():
            return False
        chain, out = "", []
        for raw in path.read_bytes().split(b"\n"):
            if not raw.strip():
                continue
            record = json.loads(raw)
            if record.get("kind") == "unlock_failed":
                chain = hashlib.sha256(chain.encode() + raw).hexdigest()
                out.append(raw)
                continue
            content = _content(int(record["seq"]), str(record["hash"]))
            chain = hmac.new(new_key, (chain + content).encode(), hashlib.sha256).hexdigest()
            out.append(json.dumps({**record, "mac": chain}, separators=(",", ":"),
                                  sort_keys=True).encode())
        partial = path.with_name(path.name + ".partial")
        partial.write_bytes(b"\n".join(out) + b"\n")
        os.replace(partial, path)
        return True
    finally:
        lock.release()


def compare(state: WitnessState, rows: dict[int, str]) -> str:
    """The first way the database's audit log differs from its witness ("" if none):
    every witnessed entry must be in the database with the same seal."""
    if state.problem:
        return state.problem
    for seq, entry_hash in state.entries:
        found = rows.get(seq)
        if found is None:
            return (f"entry {seq}, recorded in the audit witness, is missing from the database: "
                    "entries were removed, or an older copy of the database was put in its place")
        if not hmac.compare_digest(found, entry_hash):
            return (f"entry {seq} differs from the one recorded in the audit witness: it was "
                    "replaced, or an older copy of the database was put in its place")
    return ""


# ---- throttling failed unlocks -----------------------------------------------------------

FREE_ATTEMPTS = 5  # failed unlocks before a delay
LONGEST_WAIT_S = 300


def wait_before_next_unlock(failures: list[dict], now: float | None = None) -> float:
    """Seconds to wait before another unlock may be tried: none for the first five
    failures since the last successful unlock, then 2, 4, 8, ... seconds (at most 5
    minutes) after the latest."""
    if len(failures) < FREE_ATTEMPTS:
        return 0.0
    delay = min(LONGEST_WAIT_S, 2 ** (len(failures) - FREE_ATTEMPTS + 1))
    try:
        latest = float(failures[-1].get("t", 0))
    except (TypeError, ValueError):
        latest = 0.0
    return max(0.0, latest + delay - (time.time() if now is None else now))
