"""Proof that nothing leaves the machine, taken below Python.

The network guard (offline.py) sees only what Python code does.  Lumen's native
libraries (llama.cpp, onnxruntime, chromadb's Rust core, Qt) call the C library
directly; onnxruntime's telemetry did exactly that.  This module runs real Lumen
commands in child processes and watches them at two levels:

1. the C library: a small shared library (resources/netprobe/netprobe.c) preloaded
   into every child records and refuses each name lookup and each connect/send to
   another machine, from any library and any thread;
2. the kernel: where `strace` is installed and allowed, every connect/send system
   call is traced too, which also catches code that bypasses the C library.

Each child also runs under Lumen's own guard, whose refusals go to the audit log of
the tour's throw-away database; those are counted as well.  Finally the tour's HOME
is a fresh folder, listed before and after: a file appearing there (a telemetry
queue, a device id) is a finding too.

`lumen verify-offline` and the test suite run the same tour (`run_tour`).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import secrets
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Callable

from . import offline
from .config import Paths, Settings, resource_root
from .errors import Cancelled, LumenError
from .progress import CancelToken, ProgressCallback, report

PROBE_SOURCE = Path("resources") / "netprobe" / "netprobe.c"
PROBE_LIBRARY_NAME = "libnetprobe.so"
PROBE_LOG_ENV = "LUMEN_NETPROBE_LOG"
STEP_TIMEOUT_S = 900
RUN_PLACEHOLDER = "{run}"  # replaced by the id of the run the replay step started
_RUN_LINE = re.compile(r"^Run (\S+) \(resume", re.MULTILINE)
TRACED_SYSCALLS = "connect,sendto,sendmsg,sendmmsg"


@dataclass(frozen=True)
class NetworkEvent:
    """One attempt to reach another machine, as one level saw it."""

    level: str     # "C library", "system call" or "Lumen guard"
    call: str      # getaddrinfo, connect, sendto, ...
    target: str    # host name or address:port
    step: str = ""

    def __str__(self) -> str:
        return f"{self.call} {self.target} ({self.level}, during '{self.step}')"


@dataclass
class StepResult:
    name: str
    command: list[str]
    returncode: int
    seconds: float
    events: list[NetworkEvent] = field(default_factory=list)
    output: str = ""  # stdout and stderr together
    accepted: tuple[int, ...] = (0,)  # exit statuses that mean the command did its work

    @property
    def output_tail(self) -> str:
        return self.output[-2000:]

    @property
    def ran(self) -> bool:
        return self.returncode in self.accepted

    @property
    def ok(self) -> bool:
        return self.ran and not self.events


@dataclass
class TourReport:
    steps: list[StepResult]
    files_outside: list[str]          # files that appeared in the tour's HOME
    syscall_level: bool               # strace watched too
    guard_refusals: list[NetworkEvent]
    workdir: str

    @property
    def events(self) -> list[NetworkEvent]:
        return [e for step in self.steps for e in step.events] + self.guard_refusals

    @property
    def ok(self) -> bool:
        return (all(step.ran for step in self.steps) and not self.events
                and not self.files_outside)

    def to_dict(self) -> dict[str, Any]:
        return {"ok": self.ok, "syscall_level": self.syscall_level,
                "files_outside": self.files_outside,
                "events": [asdict(e) for e in self.events],
                "steps": [{"name": s.name, "returncode": s.returncode,
                           "seconds": round(s.seconds, 1),
                           "events": [asdict(e) for e in s.events]} for s in self.steps]}


@dataclass
class OfflineVerification:
    """`Session.verify_offline`: the tour, the model servers the guard lets Lumen reach
    (endpoint -> roles), and the audit log's record of connections (None without the
    database)."""
    tour: TourReport
    servers: dict[str, list[str]]
    recorded: dict[str, Any] | None

    def server_lines(self) -> list[str]:
        lines = [f"Model server in use: {endpoint} ({', '.join(roles)}). The guard lets Lumen "
                 "reach it and nothing else; the tour ran on the embedded models, so it did "
                 "not reach it." for endpoint, roles in self.servers.items()]
        if self.recorded is not None:
            lines.append(describe_recorded(self.recorded))
        return lines


# ---- the preloaded library -------------------------------------------------------------


def bundled_probe_library() -> Path | None:
    """The ready-made library inside an installed bundle (no compiler on workstations)."""
    candidate = resource_root() / PROBE_SOURCE.parent / PROBE_LIBRARY_NAME
    return candidate if candidate.is_file() else None


def build_probe_library(target: Path) -> Path:
    """Compile netprobe.c into `target` with the system's C compiler."""
    compiler = os.environ.get("CC") or shutil.which("cc") or shutil.which("gcc")
    if not compiler:
        raise LumenError("The network probe needs a C compiler to be built, and none was found.",
                         "Install gcc (Debian/Ubuntu: apt install gcc), or run the check from "
                         "the installed bundle, which carries the probe ready-made.")
    target.parent.mkdir(parents=True, exist_ok=True)
    partial = target.with_name(target.name + f".{os.getpid()}.partial")
    result = subprocess.run([compiler, "-shared", "-fPIC", "-O2", "-o", str(partial),
                             str(resource_root() / PROBE_SOURCE), "-ldl"],
                            capture_output=True, text=True)
    if result.returncode != 0:
        partial.unlink(missing_ok=True)
        raise LumenError(f"The network probe did not compile: {result.stderr.strip()[-400:]}",
                         "Check that gcc and the C library headers (libc6-dev) are installed.")
    partial.replace(target)
    return target


def probe_library(cache_dir: Path) -> Path:
    """The probe library: the bundle's, or compiled once into Lumen's cache folder."""
    bundled = bundled_probe_library()
    if bundled is not None:
        return bundled
    source = resource_root() / PROBE_SOURCE
    digest = hashlib.sha256(source.read_bytes()).hexdigest()[:16]
    target = Path(cache_dir) / "netprobe" / f"libnetprobe-{digest}.so"
    return target if target.is_file() else build_probe_library(target)


def _log_lines(path: Path) -> list[str]:
    """A child's log, or nothing when it never wrote one (no event)."""
    try:
        return path.read_text(encoding="utf-8", errors="replace").splitlines()
    except FileNotFoundError:
        return []


def read_probe_log(path: Path, step: str = "") -> list[NetworkEvent]:
    """Events from the probe's log: one line '<call> <pid> <tid> <target>' each."""
    events = []
    for line in _log_lines(path):
        parts = line.split(" ", 3)
        if len(parts) == 4:
            events.append(NetworkEvent("C library", parts[0], parts[3], step))
    return events


# ---- strace ------------------------------------------------------------------------------

_SYSCALL_LINE = re.compile(r"^(?:\[pid\s+)?(\d+)\]?\s+(connect|sendto|sendmsg|sendmmsg)\((.*)$")
_INET = re.compile(r'sa_family=AF_INET, sin_port=htons\((\d+)\), sin_addr=inet_addr\("([^"]+)"\)')
_INET6 = re.compile(r'sa_family=AF_INET6, sin6_port=htons\((\d+)\).*?inet_pton\(AF_INET6, "([^"]+)"')
_FAMILY = re.compile(r"sa_family=(AF_[A-Z0-9]+)")
_LOCAL_FAMILIES = {"AF_UNIX", "AF_LOCAL", "AF_NETLINK", "AF_UNSPEC"}


def strace_usable() -> bool:
    """strace is installed and may trace here (containers often forbid ptrace)."""
    tool = shutil.which("strace")
    if not tool:
        return False
    try:
        result = subprocess.run([tool, "-f", "-qq", "-e", "trace=connect", "-o", os.devnull, "true"],
                                capture_output=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return False
    return result.returncode == 0


def _outside_address(args: str) -> str | None:
    """The remote address a traced call names, or None when it stays on this machine."""
    match = _INET.search(args)
    if match:
        port, host = match.groups()
        return None if host.startswith("127.") or host == "0.0.0.0" else f"{host}:{port}"
    match = _INET6.search(args)
    if match:
        port, host = match.groups()
        local = host in ("::1", "::") or host.startswith("::ffff:127.")
        return None if local else f"[{host}]:{port}"
    family = _FAMILY.search(args)
    if family and family.group(1) not in _LOCAL_FAMILIES:
        return family.group(1)
    return None  # no address (a connected socket) or a local family


def read_strace_log(path: Path, step: str = "") -> list[NetworkEvent]:
    """Events from strace's log: connect and send calls that name another machine."""
    events = []
    for line in _log_lines(path):
        match = _SYSCALL_LINE.match(line)
        if not match:
            continue
        target = _outside_address(match.group(3))
        if target is not None:
            events.append(NetworkEvent("system call", match.group(2), target, step))
    return events


# ---- running a watched command -----------------------------------------------------------


def run_watched(command: list[str], *, env: dict[str, str], workdir: Path, library: Path,
                use_strace: bool, name: str = "", timeout: float = STEP_TIMEOUT_S,
                cancel: CancelToken | None = None) -> StepResult:
    """Run one command with the probe preloaded (and under strace when asked)."""
    tag = re.sub(r"[^a-z0-9]+", "-", (name or command[-1]).lower()).strip("-") or "step"
    probe_log = workdir / f"netprobe-{tag}.log"
    trace_log = workdir / f"strace-{tag}.log"
    for stale in (probe_log, trace_log):
        stale.unlink(missing_ok=True)
    child_env = dict(env)
    child_env["LD_PRELOAD"] = " ".join(filter(None, [str(library), env.get("LD_PRELOAD", "")]))
    child_env[PROBE_LOG_ENV] = str(probe_log)
    argv = list(command)
    if use_strace:
        argv = [shutil.which("strace") or "strace", "-f", "-qq", "--seccomp-bpf", "-e",
                f"trace={TRACED_SYSCALLS}", "-e", "signal=none", "-s", "64", "-o", str(trace_log),
                *argv]
    started = time.monotonic()
    process = subprocess.Popen(argv, env=child_env, cwd=str(workdir), stdout=subprocess.PIPE,
                               stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, text=True,
                               encoding="utf-8", errors="replace")
    output = ""
    try:
        while True:
            try:
                output, _ = process.communicate(timeout=1.0)
                break
            except subprocess.TimeoutExpired:
                if cancel is not None and cancel.cancelled:
                    raise Cancelled() from None
                if time.monotonic() - started > timeout:
                    raise LumenError(f"The step '{name}' did not finish within {timeout:.0f} s.",
                                     "Run it on its own to see where it stops.") from None
    finally:
        if process.poll() is None:
            process.kill()
            process.communicate()
    events = read_probe_log(probe_log, name)
    if use_strace:
        events += read_strace_log(trace_log, name)
    return StepResult(name, command, process.returncode, time.monotonic() - started, events,
                      output)


def lumen_command() -> list[str]:
    """How to start this Lumen in a child process (the bundle's program, or the module)."""
    if getattr(sys, "frozen", False):
        return [sys.executable]
    return [sys.executable, "-m", "desktop_app"]


def _files_under(folder: Path) -> set[str]:
    return {str(p.relative_to(folder)) for p in folder.rglob("*") if p.is_file() or p.is_symlink()}


# ---- the tour ----------------------------------------------------------------------------


@dataclass(frozen=True)
class TourStep:
    name: str
    args: tuple[str, ...]
    quick: bool = False  # part of `verify-offline --quick`
    accepted: tuple[int, ...] = (0,)


def configured_servers(paths: Paths, settings: Settings) -> dict[str, list[str]]:
    """The model servers this profile's roles use (endpoint -> roles): the only machines
    the guard lets Lumen reach.  The tour itself runs on the embedded models, in a
    profile of its own, so it never reaches them; `verify-offline` names them."""
    from .models.catalog import ROLES, ModelRegistry

    servers: dict[str, list[str]] = {}
    try:
        registry = ModelRegistry(paths, settings)
        for role in ROLES:
            spec = registry.for_role(role)
            if spec.is_server:
                servers.setdefault(spec.endpoint, []).append(role)
    except LumenError:
        pass  # a broken model list is the doctor's finding, not the tour's
    return servers


def recorded_connections(store, servers: dict[str, list[str]]) -> dict[str, Any]:
    """What this profile's audit log says Lumen reached: connections by server (those not
    configured now listed apart), failed connections, refused attempts by target."""
    connected: dict[str, int] = {}
    failed: dict[str, int] = {}
    refused: dict[str, int] = {}
    rows = store.query("SELECT action, detail FROM audit_log WHERE action IN "
                       "('network.connected', 'network.connect_failed', 'network.refused')")
    for action, detail in rows:
        data = json.loads(detail)
        if action == "network.refused":
            target = str(data.get("target", ""))
            refused[target] = refused.get(target, 0) + 1
        else:
            chosen = connected if action == "network.connected" else failed
            server = str(data.get("server", ""))
            chosen[server] = chosen.get(server, 0) + 1
    return {"connected": connected, "failed": failed, "refused": refused,
            "not_configured": sorted(set(connected) - set(servers))}


def describe_recorded(recorded: dict[str, Any]) -> str:
    """The audit log's record of connections, in a sentence or two."""
    connected, refused = recorded["connected"], recorded["refused"]
    if not connected and not recorded["failed"]:
        text = "The audit log records no connection to any other machine"
    else:
        text = ("The audit log records connections only to model servers: " + "; ".join(
            f"{server} ({count})" for server, count in sorted(connected.items())))
        if recorded["failed"]:
            text += "; failed: " + "; ".join(f"{server} ({count})" for server, count
                                             in sorted(recorded["failed"].items()))
        if recorded["not_configured"]:
            text += (" (no longer configured: " + ", ".join(recorded["not_configured"]) + ")")
    if refused:
        text += ("; the guard refused " + "; ".join(f"{target} ({count})" for target, count
                                                    in sorted(refused.items())))
    return text + "."


# The tour's model work, kept short: the tour proves where connections go, which no answer's
# length changes (each feature still calls the model, the embedder and the store; Ask
# tries once where it would retry).
TOUR_SETTINGS = {"answer_tokens": 32, "feedback_tokens": 16, "extraction_attempts": 1,
                 "simplification_attempts": 1, "knowledge_answer_tokens": 32,
                 "max_answer_tokens": 64}


def tour_steps(inputs: Path) -> list[TourStep]:
    """Every feature once: the window's start-up, the doctor, Ask, the knowledge base,
    an evaluation replay with its report, a simulated consultation."""
    return [
        TourStep("window start-up (self-test)", ("--selftest",), quick=True),
        TourStep("doctor", ("doctor",), quick=True),
        TourStep("ask", ("ask", "--summary", str(inputs / "summary.txt"), "--question",
                         "Which medicines should I take at home?", "--method", "lamp")),
        TourStep("knowledge: add a document", ("knowledge", "add", str(inputs / "guidance.md"))),
        TourStep("knowledge: ask", ("knowledge", "ask", "What should I watch for at home?")),
        TourStep("evaluation: import", ("bench", "import", "--format", "medisumqa",
                                        str(inputs / "benchmark.jsonl"), "--name", "offline-tour")),
        TourStep("evaluation: replay", ("bench", "run", "offline-tour", "--limit", "1",
                                        "--system", "zero-shot:plain", "--scorer", "reference",
                                        "--scorer", "medjudge")),
        # The tour checks the network, not the model: a one-sample replay decides nothing
        # (exit 1, "not enough samples"), and the report is written all the same.
        TourStep("evaluation: report", ("bench", "report", RUN_PLACEHOLDER, "--out",
                                        str(inputs / "report.pdf"), "--accept", "errors == 0"),
                 accepted=(0, 1)),
        TourStep("consultation: import", ("bench", "import", "--format", "dialogue",
                                          str(inputs / "consultation.jsonl"), "--name",
                                          "offline-consultation")),
        TourStep("consultation: replay", ("bench", "run", "offline-consultation", "--limit", "1",
                                          "--system", "dialogue:no-dialogue")),
    ]


def _write_inputs(inputs: Path) -> None:
    """A summary, a guidance page and a one-sample benchmark from Lumen's demo material."""
    inputs.mkdir(parents=True, exist_ok=True)
    demo = resource_root() / "resources" / "benchmarks" / "lumen-demo.jsonl"
    with demo.open(encoding="utf-8") as handle:
        first = json.loads(handle.readline())
    (inputs / "summary.txt").write_text(first["summary"], encoding="utf-8")
    (inputs / "benchmark.jsonl").write_text(json.dumps(first) + "\n", encoding="utf-8")
    cases = resource_root() / "resources" / "benchmarks" / "lumen-dialogue-demo.jsonl"
    with cases.open(encoding="utf-8") as handle:
        (inputs / "consultation.jsonl").write_text(handle.readline(), encoding="utf-8")
    pages = sorted((resource_root() / "resources" / "knowledge" / "demo-kb").glob("*.md"))
    shutil.copyfile(pages[0], inputs / "guidance.md")


def tour_environment(home: Path, profile: Path, passphrase: str,
                     base: dict[str, str] | None = None) -> dict[str, str]:
    """The children's environment: a fresh HOME (every XDG folder inside it, so whatever a
    library writes for this user lands where it is listed), a throw-away Lumen profile
    unlocked by a random passphrase, no OS keyring, Qt off screen, and no variable that
    tells a library it runs in a build pipeline (offline.QUIETING_MARKERS)."""
    env = dict(os.environ if base is None else base)
    # Lumen's own switches are left for each child to set: inherited from this process,
    # they would hide a child that failed to.
    # Nor a CI marker: with one, onnxruntime keeps quiet on its own and the proof would
    # pass under CI whatever Lumen's switches do.
    for key in [k for k in env if (k.startswith("XDG_") and k.endswith("_HOME"))
                or k in offline.OFFLINE_ENVIRONMENT or k in offline.QUIETING_MARKERS]:
        del env[key]
    env.update({
        "HOME": str(home), "XDG_CACHE_HOME": str(home / ".cache"),
        "XDG_CONFIG_HOME": str(home / ".config"), "XDG_DATA_HOME": str(home / ".local/share"),
        "XDG_STATE_HOME": str(home / ".local/state"),
        "LUMEN_HOME": str(profile), "LUMEN_PASSPHRASE": passphrase,
        "PYTHON_KEYRING_BACKEND": "keyring.backends.fail.Keyring",
        "QT_QPA_PLATFORM": "offscreen",
    })
    env.pop("LUMEN_OFFLINE_STRICT", None)
    return env


def run_tour(paths: Paths, settings: Settings, *, workdir: Path | None = None,
             quick: bool = False, use_strace: bool | None = None,
             extra_env: dict[str, str] | None = None,
             progress: ProgressCallback = None, cancel: CancelToken | None = None,
             on_step: Callable[[StepResult], None] | None = None) -> TourReport:
    """Run the tour in `workdir` (a new temporary folder when None) and report.  The
    tour's profile uses the models of `paths` and `settings`, and the probe is built
    into `paths`' cache folder."""
    own = workdir is None
    workdir = Path(workdir or tempfile.mkdtemp(prefix="lumen-offline-tour-"))
    try:
        return _tour(paths, settings, workdir, quick, use_strace, extra_env, progress,
                     cancel, on_step)
    finally:
        if own:
            shutil.rmtree(workdir, ignore_errors=True)


def _tour(paths, settings, workdir, quick, use_strace, extra_env, progress, cancel,
          on_step) -> TourReport:
    library = probe_library(paths.cache_dir)
    if use_strace is None:
        use_strace = strace_usable()
    home, profile, inputs = workdir / "home", workdir / "profile", workdir / "inputs"
    for folder in (home, profile):
        folder.mkdir(parents=True, exist_ok=True)
    _write_inputs(inputs)
    tour_paths = Paths.resolve(profile)
    tour_paths.ensure()
    # The tour's own profile uses this installation's models, where they are.
    # The tour checks the network, not the model: its report fails on no judge finding
    # (the embedded model's labels are near chance), only on the replay's errors; and its
    # answers are short and tried once (TOUR_SETTINGS), which reach the same code paths.
    Settings(models_dir=str(settings.models_path(paths)), context_size=settings.context_size,
             threads=settings.threads, report_fail_correctness="off",
             report_fail_impact="off", **TOUR_SETTINGS).save(tour_paths)
    passphrase = secrets.token_urlsafe(24)
    env = tour_environment(home, profile, passphrase)
    env.update(extra_env or {})
    before = _files_under(home)
    steps = [s for s in tour_steps(inputs) if s.quick or not quick]
    results: list[StepResult] = []
    run_id = ""
    for index, step in enumerate(steps):
        if cancel is not None:
            cancel.raise_if_cancelled()
        report(progress, index, len(steps), f"Watching: {step.name}")
        args = [run_id if arg == RUN_PLACEHOLDER else arg for arg in step.args]
        result = run_watched([*lumen_command(), *args], env=env, workdir=workdir,
                             library=library, use_strace=use_strace, name=step.name,
                             cancel=cancel)
        result.accepted = step.accepted
        found = _RUN_LINE.search(result.output)
        run_id = found.group(1) if found else run_id
        results.append(result)
        if on_step is not None:
            on_step(result)
    report(progress, len(steps), len(steps), "Done")
    files = sorted(_files_under(home) - before)
    return TourReport(results, files, use_strace, _guard_refusals(tour_paths, passphrase),
                      str(workdir))


def _guard_refusals(paths: Paths, passphrase: str) -> list[NetworkEvent]:
    """Refusals the children's own network guard wrote into the tour database's audit log."""
    from .store import open_store

    if not paths.database_file.exists():
        return []
    # Read only: this process's own refusals belong in the user's audit log, not here.
    with open_store(paths.database_file, passphrase, collects_refusals=False) as store:
        rows = store.query("SELECT detail FROM audit_log WHERE action = 'network.refused'")
    events = []
    for (detail,) in rows:
        data = json.loads(detail)
        events.append(NetworkEvent("Lumen guard", data.get("event", "?"),
                                   f"{data.get('target', '?')} from {data.get('caller', '?')}"))
    return events
