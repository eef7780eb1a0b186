"""`lumen doctor`: is this installation fit to use?

The same findings fill the window's first page.  Each finding says what was
checked, what was found, and, when something is wrong, what to do.
"""

from __future__ import annotations

import importlib.metadata
import os
import platform
import time
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from typing import Any, Callable, Iterator

import numpy as np

from . import offline
from .config import Paths, Settings, not_private
from .errors import LumenError, OfflineViolation
from .models import manage
from .models.catalog import ROLE_PURPOSES, ROLES, ModelRegistry, ModelSpec
from .models.runtime import ModelRuntime
from .progress import CancelToken, ProgressCallback, report
from .store import Store, keyring_available, open_store

OK, WARN, FAIL = "ok", "warn", "fail"

VERSIONED_PACKAGES = ("llama-cpp-python", "onnxruntime", "tokenizers", "chromadb",
                      "PySide6-Essentials", "sqlcipher3", "keyring", "textstat", "platformdirs")


@dataclass
class Finding:
    area: str
    check: str
    status: str
    detail: str
    fix: str = ""
    data: dict[str, Any] = field(default_factory=dict)
    # What the window can do about it with one button (the command line prints `fix`):
    # restore-models, verify-models, add-model, verify-offline, import-glossary.
    action: str = ""


# What each check is about, in a sentence a nurse or a clerk reads (the Status page shows
# it first; the check's technical name and finding are one click away).
CHECK_MEANINGS = {
    "Versions": "Every part Lumen runs on is installed.",
    "Telemetry switches": "The usage reporting of the libraries Lumen uses is switched off.",
    "Telemetry files": "No library has queued usage reports to send.",
    "Model servers": "The model servers IT set up, if any, are allowed and answer.",
    "Network guard": "Lumen cannot send anything to another machine.",
    "Folders": "Lumen's folders are in place and can be written to.",
    "Private files": "Only your account can open Lumen's files.",
    "llama.cpp and this CPU": "The engine that runs the language models works on this computer.",
    "GPU offload": "Whether a graphics card speeds the models up (none is needed).",
    "Embedder": "The small model that compares sentences by meaning works.",
    "Generation": "The language model writes text on this computer.",
    "Encrypted database": "The encrypted store of patient text opens.",
    "Audit log": "The record of who did what is complete and unaltered.",
    "OS keyring": "The database key is kept in this computer's key store.",
    "Glossary": "The list of medical words and their plain meanings is in place.",
    "Readability (textstat)": "Reading grades are measured on this computer, without the internet.",
}


def finding_meaning(finding: "Finding") -> str:
    """What a finding's check is about, in plain words."""
    if finding.check in CHECK_MEANINGS:
        return CHECK_MEANINGS[finding.check]
    if finding.check.startswith("Role "):
        role = finding.check[5:]
        return f"A model is chosen for the {role} role. {ROLE_PURPOSES.get(role, '')}".strip()
    if finding.area == "Models":
        if finding.data.get("endpoint"):
            return f"The model server for {finding.check} answers."
        return f"The model {finding.check} is in place and unchanged."
    return finding.check


@dataclass
class DoctorReport:
    findings: list[Finding]

    @property
    def ok(self) -> bool:
        return all(f.status != FAIL for f in self.findings)

    def failures(self) -> list[Finding]:
        return [f for f in self.findings if f.status == FAIL]

    def to_dict(self) -> dict[str, Any]:
        return {"ok": self.ok, "findings": [asdict(f) for f in self.findings]}


def package_versions() -> dict[str, str]:
    from .. import __version__

    versions = {"lumen": __version__, "python": platform.python_version()}
    for name in VERSIONED_PACKAGES:
        try:
            versions[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            versions[name] = "not installed"
    return versions


def servers_finding(paths: Paths, settings: Settings) -> Finding:
    """The model servers the guard lets through, and IT's allowlist (issue #17)."""
    servers = [spec for spec in ModelRegistry(paths, settings).all() if spec.is_server]
    allowlist_path = offline.allowlist_file()
    try:
        allowed = offline.read_allowlist(allowlist_path)
    except OfflineViolation as exc:
        return Finding("Offline", "Model servers", FAIL, str(exc),
                       "Ask IT to fix the allowlist file.", {"allowlist": str(allowlist_path)})
    data = {"servers": [spec.endpoint for spec in servers], "allowlist": str(allowlist_path),
            "allowlisted": sorted(f"{h}:{p}" for h, p in allowed) if allowed is not None else None,
            "strict": offline.strict_mode()}
    if not servers:
        return Finding("Offline", "Model servers", OK,
                       "None configured: every model runs on this computer", data=data)
    rule = ("only servers in IT's allowlist " + str(allowlist_path) if allowed is not None else
            "strict mode without IT's allowlist: no server may be used" if offline.strict_mode()
            else "no IT allowlist file, so any server added here is allowed")
    refused = []
    if allowed is not None or offline.strict_mode():
        from .models.server import ServerAddress

        for spec in servers:
            address = ServerAddress.parse(spec.endpoint)
            if (address.host.lower(), address.port) not in (allowed or set()):
                refused.append(spec.endpoint)
    detail = (f"{len(servers)} configured ({', '.join(spec.endpoint for spec in servers)}); "
              f"the guard lets exactly these through and audits each connection; {rule}")
    if refused:
        return Finding("Offline", "Model servers", FAIL,
                       f"{detail}; not allowed: {', '.join(refused)}",
                       "Ask IT to add the server to the allowlist, or give its roles to "
                       "another model.", data)
    return Finding("Offline", "Model servers", OK, detail, data=data)


def offline_findings() -> list[Finding]:
    """The guard, the offline switches in this process, and known telemetry files."""
    findings = []
    refused = offline.attempts()
    if not offline.guard_installed():
        findings.append(Finding("Offline", "Network guard", FAIL, "The network guard is not running.",
                                "Start Lumen through the 'lumen' command, which turns it on first."))
    else:
        findings.append(Finding(
            "Offline", "Network guard", WARN if refused else OK,
            "On: connections to other machines are refused"
            + (f"; {len(refused)} attempt(s) refused so far (in the audit log)" if refused else ""),
            "See the audit log (lumen audit) for what tried to connect." if refused else "",
            {"refused": [str(a) for a in refused]}))
    problems = offline.environment_problems()
    findings.append(Finding(
        "Offline", "Telemetry switches", FAIL if problems else OK,
        ("; ".join(problems) if problems else
         f"All {len(offline.OFFLINE_SWITCHES)} switches in force in this process "
         "(onnxruntime, chromadb, OpenTelemetry, Hugging Face, proxies)"),
        "Something changed Lumen's environment after start; start Lumen again, and check "
        "for site customisations (sitecustomize.py, PYTHONSTARTUP)." if problems else "",
        {"problems": problems}))
    present = offline.telemetry_files_present()
    findings.append(Finding(
        "Offline", "Telemetry files", WARN if present else OK,
        ("Found: " + "; ".join(f"{path} ({library})" for library, path in present)) if present
        else "None of the known telemetry queues or ids exist for this user",
        ("Another program, or a Lumen from before this check, ran that library with its "
         "telemetry on. Lumen keeps it off; delete the file(s) named, and run "
         "'lumen verify-offline' to check this installation.") if present else "",
        {"files": [str(path) for _, path in present]}, "verify-offline" if present else ""))
    return findings


def _guarded(area: str, check: str, action: Callable[[], "Finding | list[Finding]"]
             ) -> list[Finding]:
    """Run one check; a LumenError becomes a failed finding, with its fix."""
    try:
        found = action()
    except LumenError as exc:
        return [Finding(area, check, FAIL, exc.message, exc.fix)]
    except Exception as exc:  # a check must never take the report down with it
        return [Finding(area, check, FAIL, f"Unexpected error: {type(exc).__name__}: {exc}",
                        "See the log file for details.")]
    return found if isinstance(found, list) else [found]


def check_server(runtime: ModelRuntime, registry: ModelRegistry, spec: "ModelSpec",
                 measure_speed: bool) -> Finding:
    """A model server: reachable, serving the model, its context, a one-token latency."""
    from .models.server import describe_server

    roles = registry.roles_of(spec.id)
    label = f"{spec.name}" + (f" ({', '.join(roles)})" if roles else "")
    try:
        model = runtime.model(spec.id)
        info = describe_server(model.client, spec.server_model)
    except LumenError as exc:
        return Finding("Models", label, FAIL if roles else WARN, exc.message, exc.fix,
                       {"id": spec.id, "endpoint": spec.endpoint})
    data = {"id": spec.id, "endpoint": spec.endpoint, "server_kind": info.kind,
            "served": list(info.models), "context_length": info.context_length or None,
            "roles": roles}
    if info.models and spec.server_model not in info.models:
        return Finding("Models", label, FAIL if roles else WARN,
                       f"{spec.endpoint} answers but no longer serves '{spec.server_model}' "
                       f"(it serves {', '.join(info.models)[:200]})",
                       "Add the server again with the model's current name.", data)
    context = (f"context {info.context_length}" if info.context_length else
               f"context not said by the server (Lumen uses {model.n_ctx})")
    latency = ""
    if measure_speed:
        seconds = model.one_token_seconds()
        data["one_token_seconds"] = round(seconds, 3)
        latency = f"; one-token reply in {seconds * 1000:.0f} ms"
    return Finding("Models", label, OK, f"{spec.endpoint} ({info.kind}) serves "
                   f"'{spec.server_model}'; {context}{latency}", data=data)


@dataclass
class DoctorRun:
    """What the checks of one `lumen doctor` run share."""

    paths: Paths
    settings: Settings
    runtime: ModelRuntime
    store: Store | None = None  # the open database, when the caller has one
    passphrase: str | None = None
    measure_speed: bool = True
    cancel: CancelToken | None = None

    @contextmanager
    def database(self, optional: bool = False) -> Iterator[Store | None]:
        """The caller's open database, or the file opened for one check and closed after.
        `optional`: None when there is no database file or it cannot be opened (another
        check says why)."""
        if self.store is not None:
            yield self.store
            return
        opened = None
        if not optional or self.paths.database_file.exists():
            try:
                opened = open_store(self.paths.database_file, self.passphrase)
            except LumenError:
                if not optional:
                    raise
        try:
            yield opened
        finally:
            if opened is not None:
                opened.close()


def check_versions(run: DoctorRun) -> Finding:
    versions = package_versions()
    missing = [n for n, v in versions.items() if v == "not installed"]
    return Finding(
        "System", "Versions", FAIL if missing else OK,
        ", ".join(f"{n} {v}" for n, v in versions.items()),
        f"Reinstall Lumen ('make run'); missing: {', '.join(missing)}." if missing else "",
        versions)


def check_folders(run: DoctorRun) -> Finding:
    paths = run.paths
    paths.ensure()
    return Finding("System", "Folders", OK, f"Data in {paths.data_dir}; logs in {paths.log_dir}",
                   data={"data": str(paths.data_dir), "config": str(paths.config_dir),
                         "cache": str(paths.cache_dir), "logs": str(paths.log_dir)})


def check_private_files(run: DoctorRun) -> Finding:
    if os.name != "posix":
        return Finding("System", "Private files", OK, "Windows: the profile folder's "
                       "access rights apply")
    shared = not_private(run.paths)
    if shared:
        return Finding("System", "Private files", FAIL,
                       "Other accounts on this computer may read: "
                       + ", ".join(str(p) for p in shared[:5]),
                       "Run 'lumen doctor --fix-permissions'.",
                       {"paths": [str(p) for p in shared]},
                       action="make-private")
    return Finding("System", "Private files", OK,
                   "Lumen's folders and files are this account's only (0700 and 0600)")


def check_offline(run: DoctorRun) -> list[Finding]:
    return offline_findings()


def check_servers(run: DoctorRun) -> Finding:
    return servers_finding(run.paths, run.settings)


def check_llama_cpu(run: DoctorRun) -> Finding:
    from .models.cpu import llama_build

    build = llama_build()
    detail = f"{build.describe()}; this CPU: {build.to_dict()['cpu']}"
    if build.missing:
        return Finding("System", "llama.cpp and this CPU", FAIL,
                       f"{detail}; missing here: {', '.join(build.missing)}",
                       "Reinstall with 'make install LLAMA_CPU=baseline' (any x86-64 CPU), or "
                       "use a release bundle built with --llama-cpu baseline.", build.to_dict())
    if build.avoid_amx_repacking:
        return Finding("System", "llama.cpp and this CPU", WARN,
                       f"{detail}; built with AMX kernels, which crash on this CPU: models "
                       "load without llama.cpp's weight repacking (slower)",
                       "Reinstall with 'make install' (the portable build has no AMX kernels).",
                       build.to_dict())
    return Finding("System", "llama.cpp and this CPU", OK, detail, data=build.to_dict())


def check_gpu_offload(run: DoctorRun) -> Finding:
    from .models.cpu import gpu_backends

    settings = run.settings
    backends = gpu_backends()
    layers = ("every layer" if settings.gpu_layers < 0 else
              f"{settings.gpu_layers} layer{'s' if settings.gpu_layers != 1 else ''}")
    if backends:
        return Finding("System", "GPU offload", OK,
                       f"llama.cpp was built with {', '.join(backends)}; {layers} of each "
                       "model on the GPU (setting 'Model layers on the GPU')",
                       data={"backends": list(backends), "gpu_layers": settings.gpu_layers})
    if settings.gpu_layers:
        return Finding("System", "GPU offload", WARN,
                       f"'Model layers on the GPU' asks for {layers}, but this llama.cpp is "
                       "built for the CPU only, so models run on the CPU",
                       "Set it back to 0, or have IT install a build with a GPU backend "
                       "(packaging/README.md, 'GPU builds').",
                       {"backends": [], "gpu_layers": settings.gpu_layers})
    return Finding("System", "GPU offload", OK,
                   "This llama.cpp is built for the CPU only; models run on the CPU",
                   data={"backends": [], "gpu_layers": 0})


def check_models(run: DoctorRun) -> list[Finding]:
    """Each model in use or on disk (its files' hashes, or its server), then each role's."""
    settings = run.settings
    registry = ModelRegistry(run.paths, settings)
    in_use = {settings.role(role) for role in ROLES}
    cache = manage.hash_cache(run.paths)
    findings: list[Finding] = []
    for spec in registry.all():
        if not (spec.embedded or spec.files or spec.id in in_use):
            continue  # a recommended model nobody has added: nothing to check

        if spec.is_server:
            findings += _guarded("Models", spec.name, lambda spec=spec: check_server(
                run.runtime, registry, spec, run.measure_speed))
            continue

        def check_model(spec=spec) -> Finding:
            statuses = manage.verify_spec(registry, spec, cache, cancel=run.cancel)
            bad = [s for s in statuses if not s.ok]
            roles = registry.roles_of(spec.id)
            label = f"{spec.name}" + (f" ({', '.join(roles)})" if roles else "")
            if bad:
                return Finding("Models", label, FAIL if roles else WARN,
                               "; ".join(s.describe() for s in bad), bad[0].fix(spec),
                               action="restore-models" if spec.embedded else "add-model")
            return Finding("Models", label, OK, "; ".join(s.describe() for s in statuses),
                           data={"id": spec.id, "roles": roles})
        findings += _guarded("Models", spec.name, check_model)
    for role in ROLES:
        findings += _guarded("Models", f"Role {role}",
                             lambda role=role: Finding("Models", f"Role {role}", OK,
                                                       registry.for_role(role).id))
    return findings


def check_embedder(run: DoctorRun) -> Finding:
    embedder = run.runtime.embedder()
    vectors = embedder.embed(["The wound is healing well.", "The cut is getting better.",
                              "Quarterly tax forms are due in April."])
    norms = np.linalg.norm(vectors, axis=1)
    related, unrelated = float(vectors[0] @ vectors[1]), float(vectors[0] @ vectors[2])
    if not np.allclose(norms, 1.0, atol=1e-3) or related <= unrelated:
        return Finding("Models", "Embedder", FAIL,
                       f"Vectors look wrong (related {related:.2f}, unrelated {unrelated:.2f}).",
                       "Run 'lumen models provision' to restore the embedder.",
                       action="restore-models")
    return Finding("Models", "Embedder", OK,
                   f"{vectors.shape[1]}-dimensional vectors; related pair {related:.2f}, "
                   f"unrelated pair {unrelated:.2f}",
                   data={"dimensions": int(vectors.shape[1])})


def check_generation(run: DoctorRun) -> list[Finding]:
    if not run.measure_speed:
        return []
    model = run.runtime.for_role("generator")
    generation = model.generate(
        [{"role": "user", "content": "Name three fruits, in one short sentence."}],
        max_tokens=24, temperature=0.0, cancel=run.cancel)
    if not generation.text.strip():
        return [Finding("Models", "Generation", FAIL, "The generator returned no text.",
                        "Run 'lumen models verify', then try another generator model.",
                        action="verify-models")]
    return [Finding("Models", "Generation", OK,
                    f"{generation.tokens_per_second:.0f} tokens/s with "
                    f"{run.settings.effective_threads()} threads "
                    f"(chat template from {model.chat_template_source})",
                    data={"tokens_per_second": round(generation.tokens_per_second, 1),
                          "completion_tokens": generation.completion_tokens})]


def check_database(run: DoctorRun) -> Finding:
    with run.database() as db:
        problems = db.integrity_problems()
        key_label = {"keyring": "key in the OS keyring", "passphrase": "passphrase"}.get(
            db.key_source, "temporary key")
        detail = (f"Unlocked ({key_label}); "
                  f"SQLCipher {db.cipher_version()}; schema {db.schema_version}")
        if problems:
            return Finding("Database", "Encrypted database", FAIL,
                           f"{detail}; integrity check found: {'; '.join(problems[:3])}",
                           "Restore the database from a backup.")
        return Finding("Database", "Encrypted database", OK, detail,
                       data={"path": str(db.path), "key_source": db.key_source,
                             "schema": db.schema_version})


def check_audit_log(run: DoctorRun) -> Finding:
    with run.database() as db:
        check = db.verify_audit()
    if check.ok:
        return Finding("Database", "Audit log", OK,
                       f"{check.entries} {'entry' if check.entries == 1 else 'entries'}, "
                       "each sealed and linked to the one before",
                       data=check.to_dict())
    return Finding("Database", "Audit log", FAIL, f"Altered: {check.problem}",
                   "Entries from there on cannot be trusted: keep a copy of the database "
                   "for your security office and restore the last backup you trust.",
                   data=check.to_dict())


def check_keyring(run: DoctorRun) -> Finding:
    available = keyring_available()
    return Finding("Database", "OS keyring", OK if available else WARN,
                   "Available" if available else
                   "Not available: the database key comes from a passphrase",
                   "" if available else
                   "That is fine; keep the passphrase safe, it cannot be recovered.")


def check_glossary(run: DoctorRun) -> Finding:
    from .glossary.glossary import load_glossary

    with run.database(optional=True) as db:  # unopened: the database finding says why
        counts = load_glossary(db, run.settings).counts()
    detail = (f"{counts.get('lumen', 0)} Lumen entries, {counts.get('medlineplus', 0)} "
              f"imported MedlinePlus topics, {counts.get('local', 0)} local entries")
    if not counts.get("medlineplus"):
        return Finding("Offline", "Glossary", WARN, detail,
                       "Optional: import NLM's topics with 'lumen glossary import "
                       "mplus_topics_YYYY-MM-DD.xml' (Glossary tab → Import).", counts,
                       "import-glossary")
    return Finding("Offline", "Glossary", OK, detail, data=counts)


def check_readability(run: DoctorRun) -> Finding:
    from .readability import flesch_kincaid_grade

    started = time.perf_counter()
    grade = flesch_kincaid_grade("Take one tablet by mouth each morning with food.",
                                 run.paths.cache_dir)
    return Finding("Offline", "Readability (textstat)", OK,
                   f"FKGL works offline (sample grade {grade:.1f}, "
                   f"{time.perf_counter() - started:.1f} s)")


@dataclass(frozen=True)
class DoctorCheck:
    area: str
    name: str
    function: Callable[[DoctorRun], "Finding | list[Finding]"]
    step: str = ""  # a new progress step starts here, with this message


# The checks in the order the report lists them; each may give one finding, several or none.
DOCTOR_CHECKS: list[DoctorCheck] = [
    DoctorCheck("System", "Versions", check_versions, step="Versions"),
    DoctorCheck("System", "Folders", check_folders),
    DoctorCheck("System", "Private files", check_private_files),
    DoctorCheck("Offline", "Network guard", check_offline, step="Network guard"),
    DoctorCheck("Offline", "Model servers", check_servers),
    DoctorCheck("System", "llama.cpp and this CPU", check_llama_cpu),
    DoctorCheck("System", "GPU offload", check_gpu_offload),
    DoctorCheck("Models", "Models", check_models, step="Models"),
    DoctorCheck("Models", "Embedder", check_embedder, step="Embedder"),
    DoctorCheck("Models", "Generation", check_generation, step="Generation"),
    DoctorCheck("Database", "Encrypted database", check_database, step="Database"),
    DoctorCheck("Database", "Audit log", check_audit_log),
    DoctorCheck("Database", "OS keyring", check_keyring),
    DoctorCheck("Offline", "Glossary", check_glossary),
    DoctorCheck("Offline", "Readability (textstat)", check_readability),
]


def run_doctor(paths: Paths, settings: Settings, *, store: Store | None = None,
               passphrase: str | None = None, runtime: ModelRuntime | None = None,
               measure_speed: bool = True, progress: ProgressCallback = None,
               cancel: CancelToken | None = None) -> DoctorReport:
    """Every check of DOCTOR_CHECKS, in order; one that breaks is a failed finding and the
    others still run."""
    if runtime is None:
        from .store.keys import server_api_key

        def api_key(spec: ModelSpec) -> str:
            if store is not None or spec.api_key != "database":
                return server_api_key(spec, store)
            with open_store(paths.database_file, passphrase) as opened:
                return server_api_key(spec, opened)
        runtime = ModelRuntime(paths, settings, api_key)
    run = DoctorRun(paths, settings, runtime, store, passphrase, measure_speed, cancel)
    steps = sum(1 for check in DOCTOR_CHECKS if check.step)
    findings: list[Finding] = []
    done = 0
    for check in DOCTOR_CHECKS:
        if check.step:
            if cancel is not None:
                cancel.raise_if_cancelled()
            report(progress, done, steps, check.step)
            done += 1
        findings += _guarded(check.area, check.name, lambda check=check: check.function(run))
    report(progress, steps, steps, "Done")
    return DoctorReport(findings)
