"""Nothing leaves the machine, proven below Python.

The probe (core/netprobe.py) preloads a C library into child processes and, where
strace may run, traces their system calls.  These tests show that it sees what the
Python guard cannot (a lookup from a native thread, a raw system call), that a full
tour of Lumen's features under it makes no outside attempt and writes nothing outside
Lumen's folders, and that the same tour fails when onnxruntime's telemetry is left on.
"""

import os
import re
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from desktop_app.core import netprobe, offline
from desktop_app.core.config import Paths, Settings
from desktop_app.core.doctor import offline_findings
from desktop_app.core.store import open_store
from helpers import ROOT, TEST_PASSPHRASE

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux") or not shutil.which("cc"),
                                reason="the probe preloads a library built with the C compiler "
                                       "(Linux, cc)")

PLANTED = r"""
#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <pthread.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

/* What a telemetry client in a native library does: a lookup and a connect from its
   own thread.  192.0.2.0/24 is TEST-NET-1; a UDP connect sends no packet anyway. */
static void *phone_home(void *unused) {
    struct addrinfo *found = 0;
    getaddrinfo("telemetry.example.invalid", "443", 0, &found);
    int s = socket(AF_INET, SOCK_DGRAM, 0);
    struct sockaddr_in to = {0};
    to.sin_family = AF_INET;
    to.sin_port = htons(443);
    inet_pton(AF_INET, "192.0.2.7", &to.sin_addr);
    connect(s, (struct sockaddr *)&to, sizeof to);
    close(s);
    return unused;
}

int plant_native_lookup(void) {
    pthread_t thread;
    pthread_create(&thread, 0, phone_home, 0);
    return pthread_join(thread, 0);
}

/* A connect that goes straight to the kernel, past the C library's wrapper. */
int plant_raw_syscall(void) {
    int s = socket(AF_INET, SOCK_DGRAM, 0);
    struct sockaddr_in to = {0};
    to.sin_family = AF_INET;
    to.sin_port = htons(53);
    inet_pton(AF_INET, "192.0.2.8", &to.sin_addr);
    long result = syscall(SYS_connect, s, (struct sockaddr *)&to, sizeof to);
    close(s);
    return (int)result;
}
"""


@pytest.fixture(scope="module")
def probe(tmp_path_factory) -> Path:
    return netprobe.probe_library(tmp_path_factory.mktemp("probe-cache"))


@pytest.fixture(scope="module")
def planted(tmp_path_factory, starts_processes) -> Path:
    folder = tmp_path_factory.mktemp("planted")
    (folder / "planted.c").write_text(PLANTED)
    subprocess.run(["cc", "-shared", "-fPIC", "-o", str(folder / "libplanted.so"),
                    str(folder / "planted.c"), "-lpthread"], check=True)
    return folder / "libplanted.so"


def _call(library: Path, function: str) -> list[str]:
    return [sys.executable, "-c",
            f"import ctypes; ctypes.CDLL({str(library)!r}).{function}()"]


def test_the_probe_sees_a_lookup_and_a_connect_from_a_native_thread(probe, planted, tmp_path):
    result = netprobe.run_watched(_call(planted, "plant_native_lookup"), env=dict(os.environ),
                                  workdir=tmp_path, library=probe, use_strace=False,
                                  name="planted lookup")
    assert result.returncode == 0, result.output_tail
    seen = {(e.level, e.call, e.target) for e in result.events}
    assert ("C library", "getaddrinfo", "telemetry.example.invalid") in seen
    assert ("C library", "connect", "192.0.2.7:443") in seen


def test_only_the_system_call_level_sees_a_raw_system_call(probe, planted, tmp_path):
    if not netprobe.strace_usable():
        pytest.skip("strace is not installed or may not trace here")
    command = _call(planted, "plant_raw_syscall")
    without = netprobe.run_watched(command, env=dict(os.environ), workdir=tmp_path, library=probe,
                                   use_strace=False, name="raw without strace")
    assert without.events == []  # past the C library: the preloaded probe cannot see it
    traced = netprobe.run_watched(command, env=dict(os.environ), workdir=tmp_path, library=probe,
                                  use_strace=True, name="raw with strace")
    assert [(e.level, e.call, e.target) for e in traced.events] == [
        ("system call", "connect", "192.0.2.8:53")]


def test_local_connections_are_not_events(probe, tmp_path):
    script = textwrap.dedent("""
        import socket
        server = socket.socket(); server.bind(("127.0.0.1", 0)); server.listen(1)
        client = socket.create_connection(("localhost", server.getsockname()[1]))
        client.close(); server.close()
        socket.socket(socket.AF_UNIX).close()
    """)
    result = netprobe.run_watched([sys.executable, "-c", script], env=dict(os.environ),
                                  workdir=tmp_path, library=probe,
                                  use_strace=netprobe.strace_usable(), name="loopback")
    assert result.returncode == 0, result.output_tail
    assert result.events == []


def test_strace_lines_are_read_as_outside_attempts_only_when_they_leave(tmp_path):
    log = "\n".join([
        '101 connect(3, {sa_family=AF_UNIX, sun_path="/run/dbus/system_bus_socket"}, 110) = 0',
        '101 connect(4, {sa_family=AF_INET, sin_port=htons(80), sin_addr=inet_addr("127.0.0.1")}, 16) = 0',
        '102 connect(5, {sa_family=AF_INET, sin_port=htons(53), sin_addr=inet_addr("10.255.255.53")}, 16) = 0',
        '102 sendto(5, "x", 1, MSG_NOSIGNAL, NULL, 0) = 1',
        '103 connect(6, {sa_family=AF_INET6, sin6_port=htons(443), sin6_flowinfo=htonl(0), '
        'inet_pton(AF_INET6, "2001:db8::1", &sin6_addr), sin6_scope_id=0}, 28 <unfinished ...>',
        '104 sendmsg(7, {msg_name={sa_family=AF_NETLINK, nl_pid=0, nl_groups=00000000}, '
        'msg_namelen=12}, 0) = 20',
    ])
    (tmp_path / "strace.log").write_text(log)
    targets = [(e.call, e.target) for e in netprobe.read_strace_log(tmp_path / "strace.log")]
    assert targets == [("connect", "10.255.255.53:53"), ("connect", "[2001:db8::1]:443")]


@pytest.mark.slow
def test_every_feature_runs_with_no_outside_attempt_and_nothing_written_outside(tmp_path,
                                                                              shared_models):
    """The window's start-up, the doctor, Ask with the embedded model, a knowledge ingest
    and query, an evaluation replay and its PDF report, each in its own process, watched
    at the C-library level (and system calls where strace may run)."""
    offline.take_unaudited()
    _refuse_here("192.0.2.55")  # this process's own refusal: not the tour's, and kept for its log
    report = netprobe.run_tour(Paths.resolve(tmp_path / "own"),
                               Settings(models_dir=str(shared_models)), workdir=tmp_path / "tour")
    assert [a.target for a in offline.take_unaudited()] == ["192.0.2.55:53"]
    offline.clear_attempts()
    for step in report.steps:
        assert step.ran, f"{step.name} failed:\n{step.output_tail}"
    assert [s.name for s in report.steps] == [s.name for s in netprobe.tour_steps(Path("."))]
    assert report.events == [], report.events
    assert report.files_outside == []
    assert report.ok
    assert report.syscall_level == netprobe.strace_usable()
    assert (tmp_path / "tour" / "inputs" / "report.pdf").stat().st_size > 1000
    # One sample decides nothing: the report says so (exit 1), and was written.
    assert next(s for s in report.steps if s.name == "evaluation: report").returncode == 1


SWITCH_LEFT_ON = """
import os, types
from desktop_app.core import offline
offline.OFFLINE_ENVIRONMENT = types.MappingProxyType(
    {k: v for k, v in offline.OFFLINE_ENVIRONMENT.items() if k != "ORT_DISABLE_TELEMETRY"})
os.environ.pop("ORT_DISABLE_TELEMETRY", None)
"""

# onnxruntime uploads its telemetry a few seconds after a session starts, and drops it when
# the session ends first.  A workstation's session lives for hours; the quick tour's
# self-test ends its own within a second or two (since issue #35 made the self-test
# faster), so the planted fault keeps each session those seconds, as a real one would.
SESSION_LIVES_ON = """
import time, onnxruntime
_start = onnxruntime.InferenceSession.__init__
def _start_and_live_on(self, *args, **kwargs):
    _start(self, *args, **kwargs)
    time.sleep(3)
onnxruntime.InferenceSession.__init__ = _start_and_live_on
"""


@pytest.mark.slow
def test_the_tour_fails_when_onnxruntime_telemetry_is_left_on(tmp_path, shared_models,
                                                             monkeypatch):
    """A planted fault: Lumen's switch for onnxruntime's telemetry is taken out of the
    offline set-up (through sitecustomize, before Lumen starts).  The same check must
    then see onnxruntime's native lookups and its telemetry files.  A CI marker is set
    here, as a build pipeline sets one: onnxruntime keeps quiet under CI on its own, so
    the tour must take the marker away to see what a workstation would do."""
    monkeypatch.setenv("CI", "true")
    plant = tmp_path / "plant"
    plant.mkdir()
    (plant / "sitecustomize.py").write_text(SWITCH_LEFT_ON + SESSION_LIVES_ON)
    report = netprobe.run_tour(Paths.resolve(tmp_path / "own"),
                               Settings(models_dir=str(shared_models)),
                               workdir=tmp_path / "tour", quick=True,
                               extra_env={"PYTHONPATH": str(plant)})
    assert not report.ok
    assert any(".onnxruntime" in name for name in report.files_outside), report.files_outside
    targets = {e.target for e in report.events}
    assert "mobile.events.data.microsoft.com" in targets, report.events


def test_the_tour_takes_away_what_tells_a_library_it_runs_under_ci(tmp_path):
    base = {"PATH": "/usr/bin", "CI": "true", "GITHUB_ACTIONS": "true", "TF_BUILD": "True",
            "ORT_RUNNING_UNIT_TESTS": "1", "ORT_DISABLE_TELEMETRY": "1", "XDG_CACHE_HOME": "/x"}
    env = netprobe.tour_environment(tmp_path / "home", tmp_path / "profile", "pass", base)
    assert not set(env) & (set(offline.QUIETING_MARKERS) | {"ORT_DISABLE_TELEMETRY"})
    assert env["XDG_CACHE_HOME"] == str(tmp_path / "home" / ".cache")
    assert env["PATH"] == "/usr/bin"


def _refuse_here(host: str) -> None:
    """A refused attempt in this process (a UDP connect sends nothing even unguarded)."""
    import socket

    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    try:
        with pytest.raises(ConnectionRefusedError):
            sock.connect((host, 53))
    finally:
        sock.close()


def test_refused_attempts_reach_the_audit_log(profile, passphrase_env, tmp_path):
    offline.take_unaudited()
    with open_store(profile.database_file, TEST_PASSPHRASE) as store:
        _refuse_here("192.0.2.44")
        # A throw-away database opened meanwhile (the self-test's, the tour's) takes none.
        with open_store(tmp_path / "other.db", "another passphrase", collects_refusals=False) as other:
            other.audit("something")
        assert "network.refused" not in {e["action"] for e in other_entries(tmp_path / "other.db")}
    offline.clear_attempts()
    with open_store(profile.database_file, TEST_PASSPHRASE) as store:
        entries = [e for e in store.audit_entries() if e["action"] == "network.refused"]
    assert [(e["detail"]["event"], e["detail"]["target"]) for e in entries] == [
        ("socket.connect", "192.0.2.44:53")]
    assert "test_network_proof.py" in entries[0]["detail"]["caller"]


def other_entries(path: Path) -> list[dict]:
    with open_store(path, "another passphrase", collects_refusals=False) as store:
        return store.audit_entries()


def test_doctor_names_a_switched_off_switch_and_telemetry_files(monkeypatch, tmp_path):
    by_check = {f.check: f for f in offline_findings()}
    assert by_check["Telemetry switches"].status == "ok"
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    queue = tmp_path / "Microsoft" / "DeveloperTools" / ".onnxruntime" / "onnxruntime.db"
    queue.parent.mkdir(parents=True)
    queue.write_bytes(b"")
    monkeypatch.delenv("ORT_DISABLE_TELEMETRY")
    by_check = {f.check: f for f in offline_findings()}
    assert by_check["Telemetry switches"].status == "fail"
    assert "ORT_DISABLE_TELEMETRY" in by_check["Telemetry switches"].detail
    assert by_check["Telemetry files"].status == "warn"
    assert str(queue) in by_check["Telemetry files"].detail


def test_every_offline_switch_is_documented_with_its_reason():
    doc = (ROOT / "docs" / "OFFLINE.md").read_text(encoding="utf-8")
    for switch in offline.OFFLINE_SWITCHES:
        assert f"`{switch.variable}`" in doc, switch.variable
        assert switch.reason
    guide = (ROOT / "packaging" / "README.md").read_text(encoding="utf-8")
    assert "lumen verify-offline" in guide and "ORT_DISABLE_TELEMETRY" in guide


def test_verify_offline_quick_from_the_command_line(profile, passphrase_env):
    """One run in words (a second with --json would cost the same two children again: the
    step list is read off the per-step lines, which print each step's name)."""
    from helpers import run_lumen

    open_store(profile.database_file, TEST_PASSPHRASE).close()
    said = run_lumen("verify-offline", "--quick", timeout=600)
    assert said.returncode == 0, said.stdout + said.stderr
    steps = re.findall(r"^\[(OK  |FAIL)\] (.+?): exit ", said.stdout, flags=re.MULTILINE)
    assert steps == [("OK  ", "window start-up (self-test)"), ("OK  ", "doctor")], said.stdout
    with open_store(profile.database_file, TEST_PASSPHRASE) as store:
        actions = [e["action"] for e in store.audit_entries()]
    assert "offline.verified" in actions
    # The Status page's proof is the same Session call: the same audit entry but its face.
    from desktop_app.core.session import Session

    with Session.open(profile, Settings.load(profile), face="window") as session:
        assert session.verify_offline(quick=True).tour.ok
    with open_store(profile.database_file, TEST_PASSPHRASE) as store:
        window, command = [e["detail"] for e in store.audit_entries()
                           if e["action"] == "offline.verified"][:2]
    assert (window.pop("from"), command.pop("from")) == ("window", "command line")
    assert window == command
    # In words: clean, and what the audit log records of connections (none here).
    assert "Nothing tried to leave this machine: 2 steps watched" in said.stdout
    assert "NOT offline-clean" not in said.stdout
    assert "The audit log records no connection to any other machine." in said.stdout


def test_the_audit_log_s_record_of_connections_is_read_back(profile, passphrase_env):
    from desktop_app.core.netprobe import describe_recorded, recorded_connections

    with open_store(profile.database_file, TEST_PASSPHRASE) as store:
        for action, detail in (("network.connected", {"server": "https://llm:8443/v1"}),
                               ("network.connected", {"server": "https://llm:8443/v1"}),
                               ("network.connected", {"server": "https://old:8443/v1"}),
                               ("network.connect_failed", {"server": "https://llm:8443/v1"}),
                               ("network.refused", {"target": "203.0.113.9:443"})):
            store.audit(action, detail)
        recorded = recorded_connections(store, {"https://llm:8443/v1": ["judge"]})
    assert recorded["connected"] == {"https://llm:8443/v1": 2, "https://old:8443/v1": 1}
    assert recorded["not_configured"] == ["https://old:8443/v1"]
    said = describe_recorded(recorded)
    assert "only to model servers: https://llm:8443/v1 (2); https://old:8443/v1 (1)" in said
    assert "failed: https://llm:8443/v1 (1)" in said and "(no longer configured: https://old" in said
    assert "the guard refused 203.0.113.9:443 (1)" in said
