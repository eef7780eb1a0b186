"""Versioned schema migrations, tracked in SQLite's `PRAGMA user_version`.

Each migration runs in one transaction together with the version bump, so a
database is always at exactly one version.  Later features append here; never
edit a migration that has shipped.
"""

from __future__ import annotations

MIGRATIONS: list[tuple[int, str, str]] = [
    (1, "metadata and audit log", """
        CREATE TABLE app_meta (
            key   TEXT PRIMARY KEY,
            value TEXT NOT NULL
        );
        -- Who did what, when.  `detail` is JSON of ids and counts: never patient text.
        CREATE TABLE audit_log (
            id     INTEGER PRIMARY KEY,
            at     TEXT NOT NULL,
            actor  TEXT NOT NULL,
            action TEXT NOT NULL,
            detail TEXT NOT NULL DEFAULT '{}'
        );
        CREATE INDEX audit_log_at ON audit_log(at);
    """),
]

LATEST_VERSION = MIGRATIONS[-1][0]
