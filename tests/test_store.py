"""The encrypted store on a real SQLCipher file."""

import os
import sqlite3

import pytest

from desktop_app.core.errors import PassphraseRequired, StoreError, WrongKeyError
from desktop_app.core.store import KeyManager, open_store
from desktop_app.core.store.keys import KEYRING_SERVICE
from desktop_app.core.store.migrations import LATEST_VERSION
from helpers import TEST_PASSPHRASE, run_lumen


def test_passphrase_database_round_trip(profile, passphrase_env):
    with open_store(profile.database_file) as store:
        assert store.key_source == "passphrase"
        store.audit("test.action", {"count": 2})
    with open_store(profile.database_file) as store:
        actions = [e["action"] for e in store.audit_entries()]
        assert actions[:2] == ["test.action", "database.created"]
        assert store.schema_version == LATEST_VERSION
        assert store.integrity_problems() == []
        assert store.query("PRAGMA journal_mode")[0][0] == "wal"
        assert store.cipher_version().startswith("4.")


def test_file_is_unreadable_without_the_key(profile, passphrase_env):
    marker = "marker-text-that-must-not-appear-in-plaintext"
    with open_store(profile.database_file) as store:
        store.audit(marker)
        store.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    raw = profile.database_file.read_bytes()
    assert marker.encode() not in raw
    assert not raw.startswith(b"SQLite format 3")
    with pytest.raises(sqlite3.DatabaseError):
        sqlite3.connect(profile.database_file).execute("SELECT * FROM sqlite_master").fetchall()


def test_wrong_passphrase_is_refused_and_touches_nothing(profile, monkeypatch):
    monkeypatch.setenv("LUMEN_PASSPHRASE", TEST_PASSPHRASE)
    open_store(profile.database_file).close()
    before = profile.database_file.read_bytes()
    mtime = os.stat(profile.database_file).st_mtime_ns
    listing = sorted(os.listdir(profile.data_dir))
    with pytest.raises(WrongKeyError) as info:
        open_store(profile.database_file, "not the right passphrase")
    assert "does not open" in info.value.message and "Nothing was changed" in info.value.fix
    assert profile.database_file.read_bytes() == before
    assert os.stat(profile.database_file).st_mtime_ns == mtime
    # The attempt waits beside the database (when, who, which kind of key; never the key)
    # and is audited when the right key opens it.
    note = profile.database_file.with_name(profile.database_file.name + ".failed-unlocks")
    assert sorted(os.listdir(profile.data_dir)) == sorted(listing + [note.name])
    assert "not the right passphrase" not in note.read_text()
    with open_store(profile.database_file) as store:  # the right one still works
        failed = [e for e in store.audit_entries() if e["action"] == "database.unlock_failed"]
        assert len(failed) == 1 and failed[0]["detail"]["key_source"] == "passphrase"
        assert store.verify_audit().ok
    assert sorted(os.listdir(profile.data_dir)) == listing


def test_no_keyring_and_no_passphrase_creates_nothing(profile):
    assert KeyManager(profile.database_file).is_new()
    with pytest.raises(PassphraseRequired) as info:
        open_store(profile.database_file)
    assert "LUMEN_PASSPHRASE" in info.value.fix
    assert not profile.database_file.exists()


def test_existing_passphrase_database_asks_for_it(profile, passphrase_env, monkeypatch):
    open_store(profile.database_file).close()
    monkeypatch.delenv("LUMEN_PASSPHRASE")
    assert KeyManager(profile.database_file).needs_passphrase()
    with pytest.raises(PassphraseRequired):
        open_store(profile.database_file)


def test_short_passphrase_is_refused(profile):
    with pytest.raises(StoreError) as info:
        open_store(profile.database_file, "short")
    assert "too short" in info.value.message
    assert not profile.database_file.exists()


def test_keyring_key_is_random_and_kept_in_the_keyring(profile, memory_keyring):
    with open_store(profile.database_file) as store:
        assert store.key_source == "keyring"
    keys = KeyManager(profile.database_file)
    secret = memory_keyring.items[(KEYRING_SERVICE, keys.keyring_account)]
    assert len(bytes.fromhex(secret)) == 32
    assert secret.encode() not in profile.database_file.read_bytes()
    assert secret not in keys.source_file.read_text()
    assert not keys.needs_passphrase()
    with open_store(profile.database_file) as store:
        assert store.audit_entries()


def test_missing_keyring_entry_has_no_plaintext_fallback(profile, memory_keyring):
    open_store(profile.database_file).close()
    memory_keyring.items.clear()
    with pytest.raises(StoreError) as info:
        open_store(profile.database_file)
    assert "missing from the OS keyring" in info.value.message


def test_wrong_keyring_key_is_a_clear_error(profile, memory_keyring):
    open_store(profile.database_file).close()
    keys = KeyManager(profile.database_file)
    memory_keyring.items[(KEYRING_SERVICE, keys.keyring_account)] = "00" * 32
    with pytest.raises(WrongKeyError) as info:
        open_store(profile.database_file)
    assert "keyring" in info.value.message


def test_keyring_database_without_keyring_backend(profile, memory_keyring, monkeypatch):
    open_store(profile.database_file).close()
    monkeypatch.setattr("desktop_app.core.store.keys.keyring_available", lambda: False)
    with pytest.raises(StoreError) as info:
        open_store(profile.database_file)
    assert "not available" in info.value.message


def test_database_from_a_newer_lumen_is_refused(profile, passphrase_env):
    with open_store(profile.database_file) as store:
        store.execute(f"PRAGMA user_version = {LATEST_VERSION + 5}")
    with pytest.raises(StoreError) as info:
        open_store(profile.database_file)
    assert "newer Lumen" in info.value.message


def test_transaction_rolls_back_on_error(profile, passphrase_env):
    with open_store(profile.database_file) as store:
        before = len(store.audit_entries(1000))
        with pytest.raises(RuntimeError):
            with store.transaction() as conn:
                conn.execute("INSERT INTO audit_log (at, actor, action) VALUES ('t', 'a', 'x')")
                raise RuntimeError("boom")
        assert len(store.audit_entries(1000)) == before


def test_folder_in_place_of_the_database_gives_clear_error(profile, passphrase_env, tmp_path):
    open_store(profile.database_file).close()
    broken = tmp_path / "folder.db"
    broken.mkdir()
    (tmp_path / "folder.db.keysource").write_text('{"source": "passphrase"}')
    with pytest.raises(StoreError) as info:
        open_store(broken)
    assert not isinstance(info.value, WrongKeyError)
    assert "cannot open" in info.value.message


def test_new_database_never_overwrites_an_old_key(profile, memory_keyring, tmp_path):
    """Moving the database away (a backup) and starting again makes a new key; the old
    database, put back with its .keysource, still opens."""
    with open_store(profile.database_file) as store:
        store.audit("old.database")
    backup = tmp_path / "backup"
    backup.mkdir()
    for name in ("lumen.db", "lumen.db.keysource"):
        (profile.data_dir / name).rename(backup / name)
    for suffix in ("-wal", "-shm"):
        (profile.data_dir / f"lumen.db{suffix}").unlink(missing_ok=True)
    open_store(profile.database_file).close()
    assert len(memory_keyring.items) == 2
    with open_store(backup / "lumen.db") as old:
        assert "old.database" in [e["action"] for e in old.audit_entries()]


# ---- the sealed audit log (issue #15) ---------------------------------------------------


def _raw_connection(path, passphrase):
    """A plain SQLCipher connection with the key: what anyone holding it could edit with."""
    import sqlcipher3

    conn = sqlcipher3.connect(str(path), isolation_level=None)
    conn.execute("PRAGMA key = '" + passphrase.replace("'", "''") + "'")
    return conn


def _sealed_store_with_entries(profile, count=5):
    with open_store(profile.database_file) as store:
        for index in range(count):
            store.audit("test.action", {"index": index})
        ids = [row[0] for row in store.query("SELECT id FROM audit_log ORDER BY id")]
        assert store.verify_audit().ok and store.verify_audit().entries == len(ids)
    return ids


@pytest.mark.parametrize("tamper, broken, problem", [
    ("UPDATE audit_log SET detail = '{\"index\": 9}' WHERE id = {third}", "third", "was changed"),
    ("UPDATE audit_log SET actor = 'someone-else' WHERE id = {third}", "third", "was changed"),
    ("UPDATE audit_log SET at = '2020-01-01T00:00:00.000+00:00' WHERE id = {third}", "third",
     "was changed"),
    ("DELETE FROM audit_log WHERE id = {third}", "fourth", "was removed or changed"),
    ("DELETE FROM audit_log WHERE id >= {fourth}", "third", "removed from its end"),
    ("UPDATE audit_log SET entry_hash = '' WHERE id = {third}", "third", "has no seal"),
])
def test_an_altered_audit_log_is_named_at_its_first_altered_entry(profile, passphrase_env,
                                                                   tamper, broken, problem):
    ids = _sealed_store_with_entries(profile)
    names = dict(zip(("first", "second", "third", "fourth", "fifth"), ids))
    conn = _raw_connection(profile.database_file, passphrase_env)
    conn.execute(tamper.replace("{third}", str(names["third"])).replace("{fourth}", str(names["fourth"])))
    conn.close()
    with open_store(profile.database_file) as store:
        check = store.verify_audit()
    assert not check.ok and check.broken_at == names[broken] and problem in check.problem


def test_the_actor_is_the_os_account_whatever_the_environment_says(profile, passphrase_env,
                                                                    monkeypatch):
    import pwd

    for name in ("LOGNAME", "USER", "LNAME", "USERNAME"):
        monkeypatch.setenv(name, "mallory")
    with open_store(profile.database_file) as store:
        store.audit("test.action")
        actors = {e["actor"] for e in store.audit_entries()}
    assert actors == {pwd.getpwuid(os.getuid()).pw_name}


def test_entries_written_before_the_seal_are_sealed_on_upgrade(profile, passphrase_env,
                                                               monkeypatch):
    from desktop_app.core.store import database
    from desktop_app.core.store.keys import DatabaseKey

    key = DatabaseKey("passphrase", passphrase_env)
    monkeypatch.setattr(database, "MIGRATIONS", database.MIGRATIONS[:5])
    monkeypatch.setattr(database, "LATEST_VERSION", 5)
    with database.Store(profile.database_file, key, collects_refusals=False) as old:
        assert old.schema_version == 5
        for index in range(3):
            old.execute("INSERT INTO audit_log (at, actor, action, detail) VALUES (?, ?, ?, ?)",
                        (f"2025-01-0{index + 1}T00:00:00.000+00:00", "nurse", "old.action", "{}"))
    monkeypatch.undo()
    with database.Store(profile.database_file, key, collects_refusals=False) as store:
        assert store.schema_version == LATEST_VERSION
        assert store.verify_audit().ok and store.verify_audit().entries == 3
        store.audit("new.action")
        assert store.verify_audit().ok and store.verify_audit().entries == 4


def test_two_processes_writing_at_once_keep_one_chain(profile, passphrase_env):
    import subprocess
    import sys

    with open_store(profile.database_file):
        pass
    script = ("import sys\nfrom desktop_app.core.config import Paths\n"
              "from desktop_app.core.store import open_store\n"
              "with open_store(Paths.resolve().database_file) as store:\n"
              "    for i in range(40):\n"
              "        store.audit('test.concurrent', {'writer': sys.argv[1], 'i': i})\n")
    writers = [subprocess.Popen([sys.executable, "-c", script, name], env=os.environ.copy())
               for name in ("a", "b", "c")]
    assert [w.wait(timeout=120) for w in writers] == [0, 0, 0]
    with open_store(profile.database_file) as store:
        check = store.verify_audit()
    assert check.ok, check.problem
    assert check.entries == 1 + 3 * 40


def _without_the_sealing_key(store) -> None:
    from desktop_app.core.store.audit_chain import SECRET_KEY

    store.execute("DELETE FROM app_meta WHERE key = ?", (SECRET_KEY,))


def test_an_action_and_its_audit_entry_commit_together_or_not_at_all(profile, passphrase_env):
    """Issue #32, finding 7: an action that cannot be audited is not done."""
    from desktop_app.core.evaluation.dataset import Dataset, Sample
    from desktop_app.core.evaluation.runs import EvaluationStore as Evaluations
    from desktop_app.core.glossary.entries import save_local

    dataset = Dataset(name="tiny", format="generic", source_file="tiny.jsonl",
                      source_sha256="0" * 64, samples=[Sample(id="1", input="q", target="a")])
    with open_store(profile.database_file) as store:
        evaluations = Evaluations(store)
        saved = evaluations.save_dataset(dataset)
        assert store.audit_entries(1)[0]["action"] == "bench.dataset_imported"
        _without_the_sealing_key(store)
        for action in (lambda: evaluations.save_dataset(
                           Dataset(**{**dataset.__dict__, "source_sha256": "1" * 64})),
                       lambda: evaluations.create_run(saved.id, "zero-shot", [], {}, None),
                       lambda: save_local(store, term="A term", definition="A definition.",
                                          category="condition")):
            with pytest.raises(StoreError, match="sealing key is missing"):
                action()
        assert store.query("SELECT count(*) FROM eval_dataset")[0][0] == 1
        assert store.query("SELECT count(*) FROM eval_run")[0][0] == 0
        assert store.query("SELECT count(*) FROM glossary_local")[0][0] == 0


def test_an_import_that_cannot_be_audited_imports_nothing(profile):
    from desktop_app.core.pipelines.calibration import demo_benchmark
    from helpers import run_lumen

    env = {"LUMEN_PASSPHRASE": TEST_PASSPHRASE}
    with open_store(profile.database_file, TEST_PASSPHRASE) as store:
        _without_the_sealing_key(store)
    imported = run_lumen("evaluate", "import", "--format", "medisumqa", str(demo_benchmark()),
                         env=env)
    assert imported.returncode == 2 and "sealing key is missing" in imported.stderr
    assert "Traceback" not in imported.stderr
    with open_store(profile.database_file, TEST_PASSPHRASE) as store:
        assert store.query("SELECT count(*) FROM eval_dataset")[0][0] == 0
        assert store.query("SELECT count(*) FROM eval_sample")[0][0] == 0


# ---- issue #32: the audit witness, and failed unlocks that cannot be erased or hurried ----


def _cut_the_tail(store, keep: int) -> None:
    """What someone with the passphrase can do inside the database: delete the newest
    entries and point the head at the last one kept."""
    from desktop_app.core.store.audit_chain import HEAD_KEY

    store.execute("DELETE FROM audit_log WHERE id > ?", (keep,))
    last = store.query("SELECT id, entry_hash FROM audit_log ORDER BY id DESC LIMIT 1")
    store.execute("INSERT OR REPLACE INTO app_meta (key, value) VALUES (?, ?)",
                  (HEAD_KEY, f"{last[0][0]}:{last[0][1]}" if last else ""))


def _reseal_with_the_key_inside(store) -> None:
    """What someone with the passphrase and this code can do inside the database: change
    an entry, then seal every entry again with the HMAC key the database holds."""
    from desktop_app.core.store.audit_chain import HEAD_KEY, SECRET_KEY, seal

    secret = bytes.fromhex(store.query("SELECT value FROM app_meta WHERE key = ?",
                                       (SECRET_KEY,))[0][0])
    store.execute("UPDATE audit_log SET detail = '{}' WHERE id = 2")
    previous = ""
    for entry_id, at, actor, action, detail in store.query(
            "SELECT id, at, actor, action, detail FROM audit_log ORDER BY id"):
        entry_hash = seal(secret, previous, entry_id, at, actor, action, detail)
        store.execute("UPDATE audit_log SET prev_hash = ?, entry_hash = ? WHERE id = ?",
                      (previous, entry_hash, entry_id))
        previous = entry_hash
        store.execute("INSERT OR REPLACE INTO app_meta (key, value) VALUES (?, ?)",
                      (HEAD_KEY, f"{entry_id}:{entry_hash}"))
    assert store.verify_audit().problem.startswith("entry 2 differs")  # the seals pass


@pytest.mark.parametrize("attack", ["cut the tail", "delete every entry",
                                    "cut, then write new entries", "older copy put in place",
                                    "witness deleted", "re-sealed with the key inside"])
def test_the_witness_reports_what_the_seals_inside_the_database_cannot(profile, passphrase_env,
                                                                       tmp_path, attack):
    import shutil

    from desktop_app.core.store import witness

    with open_store(profile.database_file) as store:
        for n in range(4):
            store.audit("test.action", {"n": n})
        assert store.verify_audit().ok
    if attack == "older copy put in place":
        older = tmp_path / "older.db"
        shutil.copy(profile.database_file, older)  # closed: the WAL is checkpointed
    with open_store(profile.database_file) as store:
        for n in range(3):
            store.audit("test.later", {"n": n})
        if attack == "cut the tail":
            _cut_the_tail(store, keep=3)
        elif attack == "delete every entry":
            _cut_the_tail(store, keep=0)
        elif attack == "cut, then write new entries":
            _cut_the_tail(store, keep=3)
        elif attack == "re-sealed with the key inside":
            _reseal_with_the_key_inside(store)
    if attack == "older copy put in place":
        for suffix in ("-wal", "-shm"):
            profile.database_file.with_name(profile.database_file.name + suffix).unlink(missing_ok=True)
        shutil.copy(older, profile.database_file)  # no key needed
    if attack == "witness deleted":
        witness.witness_file(profile.database_file).unlink()
    with open_store(profile.database_file) as store:
        if attack == "cut, then write new entries":
            store.audit("test.after_the_cut", {})
            # The new entry's id is past every witnessed one: no id is used twice.
            newest = store.query("SELECT max(id) FROM audit_log")[0][0]
            assert newest > max(seq for seq, _ in witness.read_state(
                witness.witness_file(profile.database_file), None).entries)
        check = store.verify_audit()
    assert not check.ok, attack
    assert ("witness" in check.problem), check.problem
    verified = run_lumen("audit", "verify", env={"LUMEN_PASSPHRASE": TEST_PASSPHRASE})
    assert verified.returncode == 1 and "altered" in verified.stdout


def test_the_witness_is_resealed_with_a_new_key_and_a_forged_line_is_found(profile,
                                                                           passphrase_env):
    from desktop_app.core.store import witness
    from desktop_app.core.store.custody import change_key

    with open_store(profile.database_file) as store:
        store.audit("test.action")
        change_key(store, "a completely new passphrase")
        assert store.verify_audit().ok
    with open_store(profile.database_file, "a completely new passphrase") as store:
        assert store.verify_audit().ok
        path = witness.witness_file(profile.database_file)
        lines = path.read_text().splitlines()
        forged = lines[-1].replace('"mac":"', '"mac":"0')
        path.write_text("\n".join(lines[:-1] + [forged]) + "\n")
        check = store.verify_audit()
    assert not check.ok and "witness" in check.problem


def test_failed_unlocks_survive_a_deleted_side_file_and_slow_the_next_tries(profile,
                                                                            passphrase_env):
    import time

    from desktop_app.core.errors import UnlockThrottled
    from desktop_app.core.store import witness

    open_store(profile.database_file).close()
    for _ in range(5):
        with pytest.raises(WrongKeyError):
            open_store(profile.database_file, "not the passphrase")
    # Deleting the side file does not erase them: the witness holds them too.
    profile.database_file.with_name("lumen.db.failed-unlocks").unlink()
    with pytest.raises(UnlockThrottled, match="next try is allowed in"):
        open_store(profile.database_file)  # even the right passphrase waits
    time.sleep(witness.wait_before_next_unlock([{"t": time.time()}] * 5) + 0.2)
    with open_store(profile.database_file) as store:
        actions = [e["action"] for e in store.audit_entries()]
        assert actions.count("database.unlock_failed") == 5
        assert store.verify_audit().ok
    with pytest.raises(WrongKeyError):  # an unlock that worked starts the count again
        open_store(profile.database_file, "not the passphrase")
    open_store(profile.database_file).close()


def test_the_wait_grows_after_five_failures_and_is_capped():
    from desktop_app.core.store.witness import LONGEST_WAIT_S, wait_before_next_unlock

    def failures(n):
        return [{"t": 1000.0}] * n
    assert wait_before_next_unlock(failures(4), now=1000.0) == 0
    waits = [wait_before_next_unlock(failures(n), now=1000.0) for n in range(5, 14)]
    assert waits == sorted(waits) and waits[0] == 2 and waits[-1] == LONGEST_WAIT_S
    assert wait_before_next_unlock(failures(5), now=1003.0) == 0
