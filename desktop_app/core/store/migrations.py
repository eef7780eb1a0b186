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
    (5, "knowledge base and patient case base (DoctorRAG)", """
        -- A document (or the glossary) added to the knowledge base.  Its text lives only
        -- here; the vector index (chromadb) holds vectors, ids and chapter tags.
        CREATE TABLE kb_document (
            id            TEXT PRIMARY KEY,
            name          TEXT NOT NULL,      -- file name, no folders
            source_sha256 TEXT NOT NULL,
            kind          TEXT NOT NULL CHECK (kind IN ('file', 'glossary')),
            declarative   INTEGER NOT NULL,   -- 1 when chunks were rewritten as statements
            added_at      TEXT NOT NULL
        );
        CREATE TABLE kb_chunk (
            id          TEXT PRIMARY KEY,     -- random; also the vector's id
            document_id TEXT NOT NULL REFERENCES kb_document(id) ON DELETE CASCADE,
            ordinal     INTEGER NOT NULL,
            text        TEXT NOT NULL,        -- the chunk as read
            statement   TEXT NOT NULL,        -- what is embedded and shown: the chunk or its statements
            chapter     TEXT NOT NULL         -- ICD-10 chapter code range, e.g. 'I00-I99'
        );
        CREATE INDEX kb_chunk_document ON kb_chunk(document_id);
        CREATE TABLE case_set (
            id            TEXT PRIMARY KEY,
            name          TEXT NOT NULL,
            source_sha256 TEXT NOT NULL,
            imported_at   TEXT NOT NULL,
            removals      TEXT NOT NULL DEFAULT '{}'  -- JSON: identifier kind -> count removed
        );
        -- De-identified on import; only `complaint` is embedded, as in DoctorRAG.
        CREATE TABLE case_record (
            id           TEXT PRIMARY KEY,    -- random; also the vector's id
            set_id       TEXT NOT NULL REFERENCES case_set(id) ON DELETE CASCADE,
            record_key   TEXT NOT NULL,       -- the record's id in the source file
            ordinal      INTEGER NOT NULL,
            complaint    TEXT NOT NULL,
            diagnosis    TEXT NOT NULL DEFAULT '',
            treatment    TEXT NOT NULL DEFAULT '',
            demographics TEXT NOT NULL DEFAULT '{}',  -- JSON: age, sex, ...
            removals     TEXT NOT NULL DEFAULT '[]'   -- JSON: what de-identification removed
        );
        CREATE INDEX case_record_set ON case_record(set_id);
        CREATE INDEX case_record_key ON case_record(record_key);
        -- Knowledge answers are saved runs too: the kind check is widened (SQLite rebuilds
        -- a table to change a CHECK).
        CREATE TABLE pipeline_run_v5 (
            id             TEXT PRIMARY KEY,
            kind           TEXT NOT NULL CHECK (kind IN ('ask', 'simplify', 'knowledge')),
            created_at     TEXT NOT NULL,
            method         TEXT NOT NULL,
            variant        TEXT NOT NULL,
            summary_sha256 TEXT NOT NULL,
            summary        TEXT NOT NULL,
            question       TEXT NOT NULL DEFAULT '',
            result         TEXT NOT NULL,
            trace          TEXT NOT NULL
        );
        INSERT INTO pipeline_run_v5 SELECT * FROM pipeline_run;
        DROP TABLE pipeline_run;
        ALTER TABLE pipeline_run_v5 RENAME TO pipeline_run;
        CREATE INDEX pipeline_run_created ON pipeline_run(created_at);
    """),
    (6, "tamper-evident audit log", """
        -- Each entry is sealed with an HMAC over the previous entry's seal and its own
        -- fields (store/audit_chain.py); the HMAC key is random and lives here, so it is
        -- as secret as the database key and survives a change of that key.  Entries
        -- written before this version are sealed in order when the database opens.
        ALTER TABLE audit_log ADD COLUMN prev_hash TEXT NOT NULL DEFAULT '';
        ALTER TABLE audit_log ADD COLUMN entry_hash TEXT NOT NULL DEFAULT '';
        INSERT OR IGNORE INTO app_meta (key, value)
            VALUES ('audit_hmac_key', lower(hex(randomblob(32))));
    """),
    (7, "consultation turns (3MDBench)", """
        -- Each utterance of a simulated consultation, written in its own transaction as it
        -- finishes: a replay killed mid-dialogue resumes at the next utterance, with none
        -- lost or said twice.  `ends` marks the utterance that ended the dialogue ('break':
        -- the patient said BREAK; 'no-dialogue': the doctor's one reply in that mode).
        CREATE TABLE eval_turn (
            run_id      TEXT NOT NULL REFERENCES eval_run(id) ON DELETE CASCADE,
            sample_id   TEXT NOT NULL,
            turn        INTEGER NOT NULL,
            speaker     TEXT NOT NULL CHECK (speaker IN ('patient', 'doctor')),
            text        TEXT NOT NULL,
            reasoning   TEXT NOT NULL DEFAULT '',  -- the doctor's hidden reasoning
            ends        TEXT NOT NULL DEFAULT '',
            seconds     REAL NOT NULL,
            finished_at TEXT NOT NULL,
            PRIMARY KEY (run_id, sample_id, turn)
        );
    """),
    (8, "an evaluation run's clock", """
        -- Each stretch of time a process carried a run on (a start, a resume): its start
        -- and the last time a sample was kept in it, in wall-clock seconds (from a
        -- monotonic clock, so a clock change does not bend it).  A run's time is their
        -- sum: samples in parallel count once, the time before a kill is kept.
        CREATE TABLE eval_run_span (
            id            INTEGER PRIMARY KEY,
            run_id        TEXT NOT NULL REFERENCES eval_run(id) ON DELETE CASCADE,
            started_at    TEXT NOT NULL,
            ended_at      TEXT NOT NULL,
            seconds       REAL NOT NULL,
            started_clock REAL NOT NULL
        );
        CREATE INDEX eval_run_span_run ON eval_run_span(run_id);
    """),
]

LATEST_VERSION = MIGRATIONS[-1][0]
