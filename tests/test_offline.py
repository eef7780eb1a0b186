"""Nothing leaves the machine: the guard refuses and records, and real work
(generation, embedding, readability, chromadb) runs under it with no attempt."""

import socket
import threading
from types import SimpleNamespace

import pytest

from desktop_app.core import offline
from desktop_app.core.errors import OfflineViolation


def test_guard_is_installed_and_environment_is_offline():
    import os

    assert offline.guard_installed()
    for key, value in offline.OFFLINE_ENVIRONMENT.items():
        assert os.environ[key] == value
    # A proxy on this machine would relay what the guard lets through as loopback.
    assert not any(os.environ.get(key) for key in offline.PROXY_VARIABLES)


def test_proxy_variables_are_removed(monkeypatch):
    import os

    monkeypatch.setenv("HTTPS_PROXY", "http://127.0.0.1:3128")
    monkeypatch.setenv("all_proxy", "socks5://localhost:1080")
    offline.apply_environment()
    assert "HTTPS_PROXY" not in os.environ and "all_proxy" not in os.environ
    assert os.environ["NO_PROXY"] == "*"


def test_remote_connection_is_refused_and_recorded():
    offline.clear_attempts()
    # A UDP connect sends no packet even if the guard were missing: safe to try.
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    try:
        with pytest.raises(OfflineViolation):
            sock.connect(("192.0.2.10", 53))
    finally:
        sock.close()
    attempts = offline.attempts()
    assert len(attempts) == 1
    assert attempts[0].event == "socket.connect" and attempts[0].target == "192.0.2.10:53"
    assert "test_offline.py" in attempts[0].caller
    offline.clear_attempts()


@pytest.mark.parametrize("event,args", [
    ("socket.getaddrinfo", ("huggingface.co", 443, 0, 0, 0)),
    ("socket.gethostbyname", ("us.i.posthog.com",)),
    ("socket.connect", (None, ("10.1.2.3", 80))),
    ("socket.sendto", (None, ("8.8.8.8", 53))),
    ("socket.connect", (None, ("2001:db8::1", 443, 0, 0))),
    ("socket.connect", (SimpleNamespace(family=40), (2, 1024))),  # AF_VSOCK to the host
    ("socket.connect", (SimpleNamespace(family=socket.AF_INET), ("10.0.0.1", 3128))),
])
def test_guard_refuses_remote_lookups_and_sends(event, args):
    offline.clear_attempts()
    with pytest.raises(OfflineViolation):
        offline.check_event(event, args)
    assert len(offline.attempts()) == 1
    offline.clear_attempts()


@pytest.mark.parametrize("event,args", [
    ("socket.getaddrinfo", ("localhost", 80, 0, 0, 0)),
    ("socket.getaddrinfo", (None, 0, 0, 0, 0)),
    ("socket.connect", (None, ("127.0.0.1", 80))),
    ("socket.connect", (None, ("::1", 80, 0, 0))),
    ("socket.connect", (None, "/run/dbus/system_bus_socket")),
    ("socket.sendto", (SimpleNamespace(family=socket.AF_NETLINK), (0, 0))),
    ("open", ("/etc/hosts", "r", 0)),
])
def test_guard_allows_this_machine(event, args):
    offline.clear_attempts()
    offline.check_event(event, args)
    assert offline.attempts() == []


def test_loopback_connection_works_under_the_guard(no_connections):
    server = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    server.bind(("127.0.0.1", 0))
    server.listen(1)
    port = server.getsockname()[1]
    received = []

    def serve():
        conn, _ = server.accept()
        received.append(conn.recv(16))
        conn.close()
    thread = threading.Thread(target=serve)
    thread.start()
    with socket.create_connection(("localhost", port), timeout=5) as client:
        client.sendall(b"ping")
    thread.join(5)
    server.close()
    assert received == [b"ping"]


def test_real_work_runs_without_any_connection_attempt(runtime, tmp_path, no_connections):
    """Generation, embedding, readability and a chromadb collection, under the guard."""
    import chromadb
    import nltk
    from chromadb.config import Settings as ChromaSettings

    from desktop_app.core.readability import flesch_kincaid_grade

    model = runtime.for_role("generator")
    generation = model.generate([{"role": "user", "content": "Say hello in three words."}],
                                max_tokens=12)
    assert generation.text.strip()

    embedder = runtime.embedder()
    vectors = embedder.embed(["blood pressure is high", "hypertension", "a sunny beach"])
    assert vectors.shape == (3, 384)

    grade = flesch_kincaid_grade("Take one tablet twice a day with water.", tmp_path / "cache")
    assert 0 < grade < 8
    with pytest.raises(OfflineViolation):
        nltk.download("cmudict")  # replaced by a refusal...
    assert offline.attempts()[-1].event == "nltk.download"
    offline.clear_attempts()  # ...which is recorded; the real work below must record nothing

    client = chromadb.PersistentClient(path=str(tmp_path / "chroma"),
                                       settings=ChromaSettings(anonymized_telemetry=False))
    collection = client.get_or_create_collection("offline-check", embedding_function=None)
    collection.add(ids=["a", "b", "c"], embeddings=vectors.tolist())
    hits = collection.query(query_embeddings=[vectors[1].tolist()], n_results=1)
    assert hits["ids"] == [["b"]]
    grade_again = flesch_kincaid_grade("The patient was discharged home in stable condition.",
                                       tmp_path / "cache")
    assert grade_again > 0


FRESH_PROCESS = """
import json, sys
from pathlib import Path
from desktop_app.core import offline
offline.activate()
from desktop_app.core.readability import flesch_kincaid_grade
cache = Path(sys.argv[1])
grade = flesch_kincaid_grade("The nurse will check your wound tomorrow morning.", cache)
print(json.dumps({"grade": grade, "attempts": [str(a) for a in offline.attempts()],
                  "cmudict": (cache / "nltk_data/corpora/cmudict/cmudict").exists()}))
"""


def test_textstat_on_a_fresh_machine_never_downloads(tmp_path):
    """A new process, an empty cache and no NLTK data anywhere: textstat still works,
    from the local cmudict package, and nothing tries to connect."""
    import json
    import os
    import subprocess
    import sys

    from helpers import ROOT

    env = dict(os.environ, HOME=str(tmp_path / "home"), NLTK_DATA=str(tmp_path / "no-nltk-data"))
    result = subprocess.run([sys.executable, "-c", FRESH_PROCESS, str(tmp_path / "cache")],
                            capture_output=True, text=True, env=env, cwd=ROOT, timeout=120)
    assert result.returncode == 0, result.stderr
    outcome = json.loads(result.stdout.strip().splitlines()[-1])
    assert outcome["attempts"] == []
    assert outcome["cmudict"] is True
    assert 0 < outcome["grade"] < 8
