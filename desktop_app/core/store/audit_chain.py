"""The audit log's seal: every entry carries an HMAC-SHA256 over the previous entry's
seal and its own fields, and the database keeps the newest entry's id and seal.

Changing an entry breaks its seal; removing or reordering entries breaks the next one's
link; removing the newest entries leaves the kept head pointing past the end.  The HMAC
key is random, kept in the encrypted database (app_meta), so nobody without the
database key can compute a seal.  What this does not stop, written in docs/SECURITY.md:
someone holding the database key and this code can rewrite the whole chain.

The actor of an entry is the operating system's account of the process (the real user
id on POSIX, the Windows account on Windows), never an environment variable, which any
user can set.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
from dataclasses import asdict, dataclass

HEAD_KEY = "audit_head"  # app_meta: "<id>:<seal>" of the newest entry
SECRET_KEY = "audit_hmac_key"


def os_account() -> str:
    """The account this process runs as, from the operating system itself."""
    if os.name == "nt":
        import ctypes

        size = ctypes.c_ulong(257)
        buffer = ctypes.create_unicode_buffer(size.value)
        if ctypes.windll.advapi32.GetUserNameW(buffer, ctypes.byref(size)):  # type: ignore[attr-defined]
            return buffer.value
        return "unknown"
    import pwd

    try:
        return pwd.getpwuid(os.getuid()).pw_name
    except KeyError:  # an account without a name (a container's bare uid)
        return f"uid {os.getuid()}"


def seal(secret: bytes, prev_hash: str, entry_id: int, at: str, actor: str, action: str,
         detail: str) -> str:
    message = json.dumps([prev_hash, entry_id, at, actor, action, detail],
                         ensure_ascii=True, separators=(",", ":"))
    return hmac.new(secret, message.encode("ascii"), hashlib.sha256).hexdigest()


@dataclass
class ChainCheck:
    ok: bool
    entries: int
    broken_at: int | None = None  # the id of the first entry whose seal or link fails
    problem: str = ""

    def to_dict(self) -> dict:
        return asdict(self)


def verify_rows(secret: bytes, rows: list[tuple], head: str) -> ChainCheck:
    """Check rows (id, at, actor, action, detail, prev_hash, entry_hash) in id order
    against their seals and the kept head."""
    previous = ""
    for entry_id, at, actor, action, detail, prev_hash, entry_hash in rows:
        if not entry_hash:
            return ChainCheck(False, len(rows), entry_id, f"entry {entry_id} has no seal")
        if prev_hash != previous:
            return ChainCheck(False, len(rows), entry_id,
                              f"the entry before entry {entry_id} was removed or changed")
        if not hmac.compare_digest(seal(secret, prev_hash, entry_id, at, actor, action, detail),
                                   entry_hash):
            return ChainCheck(False, len(rows), entry_id, f"entry {entry_id} was changed")
        previous = entry_hash
    last = f"{rows[-1][0]}:{rows[-1][6]}" if rows else ""
    if head != last:
        kept_id = head.split(":", 1)[0] if head else "none"
        return ChainCheck(False, len(rows), rows[-1][0] if rows else None,
                          f"the log ends before its newest entry (entry {kept_id}): "
                          "entries were removed from its end")
    return ChainCheck(True, len(rows))
