"""Datasets, runs and per-sample results in the encrypted database.

A run writes each finished sample in its own transaction, keyed by (run, sample), so
a run that is paused, cancelled or killed mid-way resumes where it stopped: finished
samples are kept and none is scored twice.

The process carrying a run on holds an operating-system lock on a file named after the
run (locks.FileLock); the system lets go of it however the process ends.  A run marked running
whose lock nobody holds was interrupted (killed, crashed, the machine switched off), and
is shown as such, ready to resume; two processes never carry on the same run.
"""

from __future__ import annotations

import contextlib
import datetime as _dt
import json
import time
import uuid
from dataclasses import dataclass
from typing import Any, Iterator

from ..errors import LumenError
from ..locks import FileLock
from ..store import Store
from .dataset import Dataset, Sample


def _now() -> str:
    return _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")


@dataclass
class SavedDataset:
    id: str
    name: str
    format: str
    source_file: str
    source_sha256: str
    language: str
    sample_count: int
    imported_at: str
    new: bool = False

    def to_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


class EvaluationStore:
    def __init__(self, store: Store) -> None:
        self.store = store

    def _lock(self, run_id: str) -> FileLock:
        return FileLock(self.store.path.parent / "run-locks" / f"{run_id}.lock")

    def _status_now(self, run_id: str, status: str) -> str:
        """'interrupted' for a run marked running that no process carries on."""
        if status == "running" and not self._lock(run_id).held_elsewhere():
            return "interrupted"
        return status

    @contextlib.contextmanager
    def carrying_on(self, run_id: str) -> Iterator[None]:
        """Hold the run's lock while it is carried on; refuse when another process does."""
        lock = self._lock(run_id)
        if not lock.acquire():
            raise LumenError(f"Run {run_id} is being carried on by another Lumen window or "
                             "command.", "Wait for it to finish, or stop it there first.")
        try:
            yield
        finally:
            lock.release()

    # ---- datasets ----

    def save_dataset(self, dataset: Dataset) -> SavedDataset:
        """Keep a dataset; the same file imported again in the same format is the same one."""
        dataset_id = f"{dataset.format}-{dataset.source_sha256[:16]}"
        existing = self.dataset(dataset_id, missing_ok=True)
        if existing is not None:
            return existing
        imported_at = _now()
        with self.store.audited("bench.dataset_imported",
                                {"dataset": dataset_id, "format": dataset.format,
                                 "samples": len(dataset.samples)}) as conn:
            conn.execute("INSERT INTO eval_dataset (id, name, format, source_file, source_sha256, "
                         "language, sample_count, imported_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                         (dataset_id, dataset.name, dataset.format, dataset.source_file,
                          dataset.source_sha256, dataset.language, len(dataset.samples), imported_at))
            conn.executemany(
                "INSERT INTO eval_sample (dataset_id, sample_id, ordinal, input, target, context, "
                "metadata) VALUES (?, ?, ?, ?, ?, ?, ?)",
                [(dataset_id, s.id, n, s.input, s.target, s.context,
                  json.dumps(s.metadata, ensure_ascii=False, default=str))
                 for n, s in enumerate(dataset.samples)])
        saved = self.dataset(dataset_id)
        saved.new = True
        return saved

    def dataset(self, dataset_id: str, *, missing_ok: bool = False) -> SavedDataset | None:
        rows = self.store.query("SELECT id, name, format, source_file, source_sha256, language, "
                                "sample_count, imported_at FROM eval_dataset WHERE id = ?", (dataset_id,))
        if not rows:
            if missing_ok:
                return None
            raise LumenError(f"There is no imported dataset '{dataset_id}'.",
                             "List datasets with 'lumen evaluate list'.")
        return SavedDataset(*rows[0])

    def find_dataset(self, name_or_id: str) -> SavedDataset:
        rows = self.store.query("SELECT id FROM eval_dataset WHERE id = ? OR name = ? "
                                "ORDER BY imported_at DESC", (name_or_id, name_or_id))
        if not rows:
            raise LumenError(f"There is no imported dataset called '{name_or_id}'.",
                             "Import one with 'lumen evaluate import', or list them with 'lumen evaluate list'.")
        return self.dataset(rows[0][0])

    def datasets(self) -> list[SavedDataset]:
        return [SavedDataset(*row) for row in self.store.query(
            "SELECT id, name, format, source_file, source_sha256, language, sample_count, "
            "imported_at FROM eval_dataset ORDER BY imported_at DESC")]

    def samples(self, dataset_id: str, limit: int | None = None) -> list[Sample]:
        rows = self.store.query(
            "SELECT sample_id, input, target, context, metadata FROM eval_sample "
            "WHERE dataset_id = ? ORDER BY ordinal" + (" LIMIT ?" if limit else ""),
            (dataset_id, limit) if limit else (dataset_id,))
        return [Sample(sid, text, target, context, json.loads(meta))
                for sid, text, target, context, meta in rows]

    # ---- runs ----

    def create_run(self, dataset_id: str, system: str, scorers: list[str], config: dict[str, Any],
                   limit: int | None) -> str:
        run_id = uuid.uuid4().hex[:12]
        now = _now()
        with self.store.audited("bench.run_created", {"run": run_id, "dataset": dataset_id,
                                                      "system": system, "limit": limit}) as conn:
            conn.execute(
                "INSERT INTO eval_run (id, dataset_id, system, scorers, config, status, "
                "sample_limit, created_at, updated_at) VALUES (?, ?, ?, ?, ?, 'paused', ?, ?, ?)",
                (run_id, dataset_id, system, json.dumps(scorers), json.dumps(config), limit, now,
                 now))
        return run_id

    def run(self, run_id: str) -> dict[str, Any]:
        rows = self.store.query("SELECT id, dataset_id, system, scorers, config, status, sample_limit, "
                                "created_at, updated_at FROM eval_run WHERE id = ?", (run_id,))
        if not rows:
            raise LumenError(f"There is no evaluation run '{run_id}'.",
                             "List runs with 'lumen evaluate list'.")
        rid, dataset_id, system, scorers, config, status, limit, created, updated = rows[0]
        return {"id": rid, "dataset_id": dataset_id, "system": system, "scorers": json.loads(scorers),
                "config": json.loads(config), "status": self._status_now(rid, status), "limit": limit,
                "created_at": created, "updated_at": updated}

    def runs(self) -> list[dict[str, Any]]:
        rows = self.store.query(
            "SELECT r.id, r.dataset_id, r.system, r.status, r.created_at, r.sample_limit, "
            "(SELECT count(*) FROM eval_result WHERE run_id = r.id) FROM eval_run r "
            "ORDER BY r.created_at DESC")
        return [{"id": r[0], "dataset_id": r[1], "system": r[2],
                 "status": self._status_now(r[0], r[3]), "created_at": r[4],
                 "limit": r[5], "finished": r[6]} for r in rows]

    def set_status(self, run_id: str, status: str) -> None:
        self.store.execute("UPDATE eval_run SET status = ?, updated_at = ? WHERE id = ?",
                           (status, _now(), run_id))

    def finished_ids(self, run_id: str) -> set[str]:
        """The samples answered; one that ended in an error is not finished: a resume tries
        it again."""
        return {row[0] for row in self.store.query(
            "SELECT sample_id FROM eval_result WHERE run_id = ? AND error = ''", (run_id,))}

    def error_count(self, run_id: str) -> int:
        return self.store.query("SELECT count(*) FROM eval_result WHERE run_id = ? AND error != ''",
                                (run_id,))[0][0]

    def has_documents(self, dataset_id: str) -> bool:
        """Whether any sample of the dataset carries a document to answer about."""
        return bool(self.store.query("SELECT 1 FROM eval_sample WHERE dataset_id = ? AND "
                                     "trim(context) != '' LIMIT 1", (dataset_id,)))

    def save_result(self, run_id: str, sample: Sample, ordinal: int, *, output: str,
                    scores: dict[str, float | None], judge: dict[str, Any], trace: dict[str, Any],
                    error: str, seconds: float, model_seconds: float) -> bool:
        """Keep one sample's result; False if it was already kept (never scored twice).  A
        result that ended in an error gives way to the sample's next try."""
        with self.store.transaction() as conn:
            inserted = conn.execute(
                "INSERT INTO eval_result (run_id, sample_id, ordinal, output, scores, judge, "
                "trace, error, seconds, model_seconds, finished_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) "
                "ON CONFLICT (run_id, sample_id) DO UPDATE SET output = excluded.output, "
                "scores = excluded.scores, judge = excluded.judge, trace = excluded.trace, "
                "error = excluded.error, seconds = excluded.seconds, "
                "model_seconds = excluded.model_seconds, finished_at = excluded.finished_at "
                "WHERE eval_result.error != ''",
                (run_id, sample.id, ordinal, output, json.dumps(scores), json.dumps(judge),
                 json.dumps(trace, default=str), error, seconds, model_seconds, _now())).rowcount
            conn.execute("UPDATE eval_run SET updated_at = ? WHERE id = ?", (_now(), run_id))
        return bool(inserted)

    # ---- the run's clock ----

    def start_span(self, run_id: str) -> int:
        """A stretch of time in which a process carries the run on; its end moves with every
        sample kept (touch_span)."""
        now = _now()
        with self.store.transaction() as conn:
            return conn.execute("INSERT INTO eval_run_span (run_id, started_at, ended_at, "
                                "seconds, started_clock) VALUES (?, ?, ?, 0, ?)",
                                (run_id, now, now, time.monotonic())).lastrowid

    def touch_span(self, span: int) -> None:
        self.store.execute("UPDATE eval_run_span SET ended_at = ?, seconds = ? - started_clock "
                           "WHERE id = ?", (_now(), time.monotonic(), span))

    def spans(self, run_id: str) -> list[dict[str, Any]]:
        return [{"started_at": r[0], "ended_at": r[1], "seconds": r[2]} for r in self.store.query(
            "SELECT started_at, ended_at, seconds FROM eval_run_span WHERE run_id = ? ORDER BY id",
            (run_id,))]

    def wall_seconds(self, run_id: str) -> float | None:
        """The run's time on the clock: the sum of its spans (each from its start to its
        last kept sample or its stop), parallel samples counted once, plus the samples'
        own times for any kept before its first span (a run begun by an older Lumen);
        None for a run with no span at all (its time is then the sum of its samples')."""
        spans = self.spans(run_id)
        if not spans:
            return None
        before = self.store.query("SELECT coalesce(sum(seconds), 0) FROM eval_result "
                                  "WHERE run_id = ? AND finished_at < ?",
                                  (run_id, spans[0]["started_at"]))[0][0]
        return sum(span["seconds"] for span in spans) + float(before)

    # ---- consultation turns (3MDBench) ----

    def save_turn(self, run_id: str, sample_id: str, index: int, turn: dict[str, Any]) -> bool:
        """Keep one utterance as it finishes; False if that utterance was already kept.
        An utterance out of order (index past the ones kept) is a bug, refused."""
        with self.store.transaction() as conn:
            kept = conn.execute("SELECT count(*) FROM eval_turn WHERE run_id = ? AND sample_id = ?",
                                (run_id, sample_id)).fetchone()[0]
            if index > kept:
                raise LumenError(f"Utterance {index + 1} of sample {sample_id} came before "
                                 f"utterance {kept + 1} was kept.", "Report this as a bug.")
            inserted = conn.execute(
                "INSERT OR IGNORE INTO eval_turn (run_id, sample_id, turn, speaker, text, reasoning, "
                "ends, seconds, finished_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (run_id, sample_id, index, turn["speaker"], turn["text"], turn.get("reasoning", ""),
                 turn.get("ends", ""), float(turn.get("seconds", 0.0)), _now())).rowcount
            conn.execute("UPDATE eval_run SET updated_at = ? WHERE id = ?", (_now(), run_id))
        return bool(inserted)

    def turns(self, run_id: str, sample_id: str) -> list[dict[str, Any]]:
        """The utterances kept for one sample, in order."""
        return [{"speaker": r[0], "text": r[1], "reasoning": r[2], "ends": r[3], "seconds": r[4]}
                for r in self.store.query(
                    "SELECT speaker, text, reasoning, ends, seconds FROM eval_turn "
                    "WHERE run_id = ? AND sample_id = ? ORDER BY turn", (run_id, sample_id))]

    def results(self, run_id: str) -> list[dict[str, Any]]:
        rows = self.store.query(
            "SELECT r.sample_id, r.ordinal, r.output, r.scores, r.judge, r.trace, r.error, r.seconds, "
            "r.model_seconds, s.input, s.target, s.context, s.metadata FROM eval_result r "
            "JOIN eval_run u ON u.id = r.run_id "
            "JOIN eval_sample s ON s.dataset_id = u.dataset_id AND s.sample_id = r.sample_id "
            "WHERE r.run_id = ? ORDER BY r.ordinal", (run_id,))
        return [{"sample_id": r[0], "ordinal": r[1], "output": r[2], "scores": json.loads(r[3]),
                 "judge": json.loads(r[4]), "trace": json.loads(r[5]), "error": r[6],
                 "seconds": r[7], "model_seconds": r[8], "input": r[9], "target": r[10],
                 "context": r[11], "metadata": json.loads(r[12])} for r in rows]
