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
    (2, "MedlinePlus topics and local glossary entries", """
        -- NLM health topics as imported by `lumen glossary import` (English and Spanish).
        CREATE TABLE mplus_topic (
            id           TEXT PRIMARY KEY,
            title        TEXT NOT NULL,
            url          TEXT NOT NULL DEFAULT '',
            language     TEXT NOT NULL,
            date_created TEXT NOT NULL DEFAULT '',
            meta_desc    TEXT NOT NULL DEFAULT '',
            summary      TEXT NOT NULL DEFAULT '',  -- full-summary with its HTML cleaned
            source_file  TEXT NOT NULL,
            source_date  TEXT NOT NULL,
            imported_at  TEXT NOT NULL
        );
        CREATE INDEX mplus_topic_title ON mplus_topic(title);
        CREATE TABLE mplus_name (        -- also-called and see-reference names
            topic_id TEXT NOT NULL REFERENCES mplus_topic(id) ON DELETE CASCADE,
            kind     TEXT NOT NULL CHECK (kind IN ('also-called', 'see-reference')),
            name     TEXT NOT NULL,
            PRIMARY KEY (topic_id, kind, name)
        );
        CREATE TABLE mplus_group (
            topic_id TEXT NOT NULL REFERENCES mplus_topic(id) ON DELETE CASCADE,
            group_id TEXT NOT NULL DEFAULT '',
            name     TEXT NOT NULL,
            url      TEXT NOT NULL DEFAULT '',
            PRIMARY KEY (topic_id, name)
        );
        CREATE TABLE mplus_mesh (
            topic_id      TEXT NOT NULL REFERENCES mplus_topic(id) ON DELETE CASCADE,
            descriptor_id TEXT NOT NULL DEFAULT '',
            descriptor    TEXT NOT NULL,
            PRIMARY KEY (topic_id, descriptor)
        );
        CREATE TABLE mplus_language_link (   -- the same topic in the other language
            topic_id TEXT NOT NULL REFERENCES mplus_topic(id) ON DELETE CASCADE,
            other_id TEXT NOT NULL,
            language TEXT NOT NULL DEFAULT '',
            url      TEXT NOT NULL DEFAULT '',
            PRIMARY KEY (topic_id, other_id)
        );
        CREATE TABLE mplus_import (
            id           INTEGER PRIMARY KEY,
            source_file  TEXT NOT NULL,
            source_date  TEXT NOT NULL,
            imported_at  TEXT NOT NULL,
            topics       INTEGER NOT NULL,
            new_topics   INTEGER NOT NULL,
            names        INTEGER NOT NULL
        );
        -- Staff additions and edits.  `overrides` names the shipped or imported entry an
        -- edit replaces (NULL for a new entry); kept apart so a re-import never loses them.
        CREATE TABLE glossary_local (
            id            INTEGER PRIMARY KEY,
            overrides     TEXT UNIQUE,
            term          TEXT NOT NULL,
            aliases       TEXT NOT NULL DEFAULT '[]',
            abbreviations TEXT NOT NULL DEFAULT '[]',
            definition    TEXT NOT NULL,
            category      TEXT NOT NULL,
            hidden        INTEGER NOT NULL DEFAULT 0,
            author        TEXT NOT NULL DEFAULT '',
            updated_at    TEXT NOT NULL
        );
    """),
    (3, "Ask and Simplify runs with their traces", """
        -- Every answer and handout, with the question, the summary and the full trace
        -- (each attempt's text, gate scores, feedback, timings, model hashes).
        CREATE TABLE pipeline_run (
            id             TEXT PRIMARY KEY,
            kind           TEXT NOT NULL CHECK (kind IN ('ask', 'simplify')),
            created_at     TEXT NOT NULL,
            method         TEXT NOT NULL,
            variant        TEXT NOT NULL,
            summary_sha256 TEXT NOT NULL,
            summary        TEXT NOT NULL,
            question       TEXT NOT NULL DEFAULT '',
            result         TEXT NOT NULL,
            trace          TEXT NOT NULL
        );
        CREATE INDEX pipeline_run_created ON pipeline_run(created_at);
    """),
]

LATEST_VERSION = MIGRATIONS[-1][0]
