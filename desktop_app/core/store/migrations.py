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
    (4, "evaluation datasets, runs and per-sample results", """
        CREATE TABLE eval_dataset (
            id            TEXT PRIMARY KEY,
            name          TEXT NOT NULL,
            format        TEXT NOT NULL,
            source_file   TEXT NOT NULL,
            source_sha256 TEXT NOT NULL,
            language      TEXT NOT NULL DEFAULT 'en',
            sample_count  INTEGER NOT NULL,
            imported_at   TEXT NOT NULL
        );
        CREATE TABLE eval_sample (
            dataset_id TEXT NOT NULL REFERENCES eval_dataset(id) ON DELETE CASCADE,
            sample_id  TEXT NOT NULL,
            ordinal    INTEGER NOT NULL,
            input      TEXT NOT NULL,
            target     TEXT NOT NULL DEFAULT '',
            context    TEXT NOT NULL DEFAULT '',
            metadata   TEXT NOT NULL DEFAULT '{}',
            PRIMARY KEY (dataset_id, sample_id)
        );
        CREATE TABLE eval_run (
            id          TEXT PRIMARY KEY,
            dataset_id  TEXT NOT NULL REFERENCES eval_dataset(id),
            system      TEXT NOT NULL,
            scorers     TEXT NOT NULL,     -- JSON list
            config      TEXT NOT NULL,     -- JSON: versions, model hashes, settings, seed, machine
            status      TEXT NOT NULL CHECK (status IN ('running', 'paused', 'cancelled',
                                                        'complete', 'failed')),
            sample_limit INTEGER,
            created_at  TEXT NOT NULL,
            updated_at  TEXT NOT NULL
        );
        -- One row per finished sample, written in its own transaction: a run killed at any
        -- moment resumes with every finished sample kept and none scored twice.
        CREATE TABLE eval_result (
            run_id     TEXT NOT NULL REFERENCES eval_run(id) ON DELETE CASCADE,
            sample_id  TEXT NOT NULL,
            ordinal    INTEGER NOT NULL,
            output     TEXT NOT NULL,
            scores     TEXT NOT NULL,      -- JSON: metric -> value (null = missing)
            judge      TEXT NOT NULL DEFAULT '{}',  -- JSON: judge replies and reasons
            trace      TEXT NOT NULL DEFAULT '{}',
            error      TEXT NOT NULL DEFAULT '',
            seconds    REAL NOT NULL,
            model_seconds REAL NOT NULL DEFAULT 0,
            finished_at TEXT NOT NULL,
            PRIMARY KEY (run_id, sample_id)
        );
    """),
]

LATEST_VERSION = MIGRATIONS[-1][0]
