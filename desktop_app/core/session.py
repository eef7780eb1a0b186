"""One user's working session: paths, settings, the unlocked store, the glossary and the
loaded models, and the actions both faces call on them.

The window holds one Session for its life; the command line builds one per command
(`Session.open`).  An action on a Session runs the core call, keeps what it produced in the
encrypted store and writes its audit entry, so the window and the command line store the
same rows and audit the same entries for the same action (tests/test_session.py):

- `session.ask`, `session.simplify`, `session.ask_knowledge`: the pipelines, runs kept;
- `session.evaluation`: benchmarks imported, runs started and resumed, summaries,
  reports and comparisons (core/evaluation);
- `session.models`: the model list, adding, removing and assigning roles (core/models);
- `session.terms`: the glossary's staff entries, imports, export and look-ups;
- `session.records`: saved runs, the audit log, the database key, backup and restore;
- `session.library`: the knowledge base's documents and case sets: added, imported and
  re-indexed (with the embedder), listed and removed without loading a model;
- `session.change_settings`, `reset_settings`: settings saved and audited;
- `session.make_files_private`, `verify_offline`: the installation's checks that change
  or prove something, audited alike from both faces.

The store and the models are the session's own (`_store`, `_runtime`): the faces never
touch them (tests/test_layers.py).  A Session without a store can still list models and
change settings (a fresh profile has no database yet, so there is nothing to audit into);
an action that keeps patient text refuses.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable

from .config import Paths, Settings
from .errors import LumenError, ModelError
from .models.runtime import ModelRuntime
from .store import Store
from .store.keys import server_api_key, server_secret_name

if TYPE_CHECKING:
    from .evaluation.dataset import Dataset
    from .evaluation.report import ValidationReport
    from .evaluation.runs import EvaluationStore, SavedDataset
    from .glossary.glossary import Glossary
    from .knowledge.doctorrag import DoctorRAG, KnowledgeResult
    from .models.catalog import ModelSpec
    from .doctor import DoctorReport
    from .netprobe import OfflineVerification, StepResult
    from .pipelines.ask import AskResult, EventCallback
    from .pipelines.simplify import Handout
    from .progress import CancelToken, ProgressCallback


# The settings the glossary is built with (load_glossary): a change rebuilds it.
GLOSSARY_SETTINGS = ("glossary_language", "glossary_plain_grade")


@dataclass(frozen=True)
class Changes:
    """What an action changed, told to whoever listens (`Session.on_changes`), as Anki's
    OpChanges: the window refreshes the pages that show it, instead of each page pushing
    its news into the others by hand."""

    glossary: bool = False  # the session's glossary is built again on next use
    settings: bool = False
    models: bool = False  # the model list or a role
    knowledge: bool = False  # the knowledge library's documents or case sets


@dataclass
class Session:
    paths: Paths
    settings: Settings
    # The encrypted store and the loaded models are the session's own: the faces act
    # through its methods (issue #34), so every action is audited in one place.
    _store: Store | None = None
    # Who acts, as the settings audit entry records it ("window" or "command line").
    face: str = "window"
    _runtime: ModelRuntime = field(init=False)
    _glossary: "Glossary | None" = field(default=None, init=False, repr=False)
    _listeners: list[Callable[[Changes], None]] = field(default_factory=list, init=False,
                                                       repr=False)

    def __post_init__(self) -> None:
        self._runtime = ModelRuntime(self.paths, self.settings, self._server_api_key)
        self.models = ModelActions(self)
        self.evaluation = EvaluationActions(self)
        self.terms = GlossaryActions(self)
        self.records = RecordActions(self)
        self.library = KnowledgeLibrary(self)

    @classmethod
    def open(cls, paths: Paths, settings: Settings, passphrase: str | None = None, *,
             face: str = "window") -> "Session":
        """A Session on the profile's encrypted store (the keyring's key, or `passphrase`)."""
        from .store import open_store

        return cls(paths, settings, open_store(paths.database_file, passphrase), face)

    def __enter__(self) -> "Session":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    # ---- what an action works with ----

    @property
    def glossary(self) -> "Glossary":
        """Lumen's glossary with the store's imported topics and staff entries, loaded on
        first use; the window sets it again when the glossary changes."""
        if self._glossary is None:
            from .glossary.glossary import load_glossary

            self._glossary = load_glossary(self._store, self.settings, self.paths.cache_dir)
        return self._glossary

    @glossary.setter
    def glossary(self, glossary: "Glossary") -> None:
        self._glossary = glossary

    @property
    def is_open(self) -> bool:
        """Whether the encrypted store is unlocked (the window may be locked, or the
        profile new)."""
        return self._store is not None

    def open_store(self) -> Store:
        """The unlocked store, or a message saying to unlock Lumen."""
        if self._store is None:
            raise LumenError("Lumen's database is not open.",
                             "Unlock Lumen (or start it again) and try again.")
        return self._store

    def audit(self, action: str, detail: dict[str, Any]) -> None:
        """An audit entry; with no database open (a fresh profile has none until the first
        start creates it), noted beside it and written when it is next opened."""
        if self._store is not None:
            self._store.audit(action, detail)
        else:
            from .store.database import note_pending_action

            note_pending_action(self.paths.database_file, action, detail)

    def on_changes(self, listener: Callable[[Changes], None]) -> None:
        """Call `listener` with what each later action changed.  It may be called from the
        thread the action ran on (a background import): a window hands it to its own
        thread (gui/main_window.py does, through a queued signal)."""
        self._listeners.append(listener)

    def changed(self, **what: bool) -> None:
        """Tell the listeners what an action changed (Changes' fields)."""
        if what.get("glossary"):
            self._glossary = None
        changes = Changes(**what)
        for listener in list(self._listeners):
            listener(changes)

    def _server_api_key(self, spec: "ModelSpec") -> str:
        return server_api_key(spec, self._store)

    def _knowledge(self) -> "DoctorRAG":
        """DoctorRAG (core/knowledge) over the session's store, models and glossary: the
        knowledge base, the case base and the answers drawn from them."""
        from .knowledge.doctorrag import DoctorRAG

        return DoctorRAG.open(self.paths, self.settings, self.open_store(), self._runtime,
                              self.glossary)

    # ---- actions that keep patient text ----

    def ask(self, summary: str, question: str, *, method: str | None = None,
            variant: str | None = None, on_event: "EventCallback | None" = None,
            progress: "ProgressCallback" = None,
            cancel: "CancelToken | None" = None) -> "AskResult":
        """Answer a question about a discharge summary (pipelines/ask.py) and keep the run
        (summary, question, shown answer, trace) in the encrypted store, audited."""
        from .pipelines.ask import AskPipeline
        from .pipelines.trace import save_run

        store = self.open_store()
        result = AskPipeline(self._runtime, self.glossary, self.settings, self.paths.cache_dir).run(
            summary, question, method=method, variant=variant, on_event=on_event,
            progress=progress, cancel=cancel)
        save_run(store, result.trace, summary=summary, question=question, result=result.answer)
        return result

    def simplify(self, summary: str, *, use_verifier: bool = True, variant: str | None = None,
                 on_event: "EventCallback | None" = None, progress: "ProgressCallback" = None,
                 cancel: "CancelToken | None" = None) -> "Handout":
        """Turn a discharge summary into a patient handout (pipelines/simplify.py) and keep
        the run (summary, handout text, trace) in the encrypted store, audited."""
        from .pipelines.simplify import SimplifyPipeline
        from .pipelines.trace import save_run

        store = self.open_store()
        handout = SimplifyPipeline(self._runtime, self.glossary, self.settings,
                                   self.paths.cache_dir).run(
            summary, use_verifier=use_verifier, variant=variant, on_event=on_event,
            progress=progress, cancel=cancel)
        save_run(store, handout.trace, summary=summary, question="", result=handout.to_text())
        return handout

    def ask_knowledge(self, question: str, **options: Any) -> "KnowledgeResult":
        """Answer a question from the knowledge and case bases (DoctorRAG.run's options)
        and keep the run (question, answer, sources) in the encrypted store, audited."""
        rag = self._knowledge()
        result = rag.run(question, **options)
        rag.save(result)
        return result

    # ---- the installation ----

    def check_installation(self, *, measure_speed: bool = True, passphrase: str | None = None,
                           progress: "ProgressCallback" = None,
                           cancel: "CancelToken | None" = None) -> "DoctorReport":
        """Every check of core/doctor.py (files, models, database, offline guard, speed).
        With the store open the checks use it and the session's models; without it (the
        command line's doctor) the database is opened with `passphrase`, and a key that
        cannot be had is a finding, not an error."""
        from .doctor import run_doctor

        opened = self._store is not None
        return run_doctor(self.paths, self.settings, store=self._store, passphrase=passphrase,
                          runtime=self._runtime if opened else None, measure_speed=measure_speed,
                          progress=progress, cancel=cancel)

    def make_files_private(self) -> list[Path]:
        """Lumen's folders (0700) and files (0600) made this account's only; audited with
        how many changed, from either face."""
        from .config import make_private

        changed = make_private(self.paths)
        self.audit("files.made_private", {"count": len(changed), "from": self.face})
        return changed

    def verify_offline(self, *, quick: bool = False, use_strace: bool | None = None,
                       on_step: "Callable[[StepResult], None] | None" = None,
                       progress: "ProgressCallback" = None,
                       cancel: "CancelToken | None" = None) -> "OfflineVerification":
        """The offline tour (core/netprobe), the model servers this profile may reach, and
        what the audit log records of connections; audited as offline.verified."""
        from .netprobe import OfflineVerification, configured_servers, recorded_connections, run_tour

        tour = run_tour(self.paths, self.settings, quick=quick, use_strace=use_strace,
                        progress=progress, cancel=cancel, on_step=on_step)
        servers = configured_servers(self.paths, self.settings)
        self.audit("offline.verified", {"ok": tour.ok, "attempts": len(tour.events),
                                        "servers": sorted(servers),
                                        "files_outside": len(tour.files_outside),
                                        "system_calls": tour.syscall_level, "quick": quick,
                                        "from": self.face})
        recorded = recorded_connections(self._store, servers) if self._store is not None else None
        return OfflineVerification(tour, servers, recorded)

    def calibrate(self, dataset: Path | None = None, split: str = "train",
                  check_split: str | None = None) -> dict[str, Any]:
        """The relevance threshold and the evidence margin fitted on a benchmark's split
        (the demo benchmark unless `dataset` is given) with the session's embedder, and
        checked on `check_split`; nothing is saved (`change_settings` applies them)."""
        from .pipelines.calibration import (balanced_accuracy, calibrate_evidence_margin,
                                            calibrate_relevance, demo_benchmark,
                                            evidence_margin_accuracy, load_items)

        dataset = Path(dataset) if dataset else demo_benchmark()
        embedder, lines = self._runtime.embedder(), self.settings.evidence_lines
        items = load_items(dataset, split)
        relevance = calibrate_relevance(items, embedder.embed, dataset=dataset.name, split=split)
        margin = calibrate_evidence_margin(items, embedder.embed_recent, self.glossary, lines,
                                           dataset=dataset.name, split=split)
        check = load_items(dataset, check_split) if check_split else None
        return {"dataset": dataset, "calibration": relevance, "evidence_margin": margin,
                "held_out": (balanced_accuracy(check, embedder.embed, relevance.threshold)
                             if check is not None else None),
                "evidence_margin_held_out": (evidence_margin_accuracy(
                    check, embedder.embed_recent, self.glossary, lines, margin.threshold)
                    if check is not None else None)}

    # ---- settings ----

    def change_settings(self, settings: Settings) -> None:
        """Save new settings and audit the names of those that changed; loaded models are
        dropped so the next call uses them."""
        changed = settings.changed_from(self.settings)
        settings.save(self.paths)
        if changed:
            self.audit("settings.changed", {"settings": changed, "from": self.face})
        self._use_settings(settings)
        # The glossary is built again, with them, on next use.
        self.changed(settings=True, glossary=bool(set(changed) & set(GLOSSARY_SETTINGS)))

    def reset_settings(self) -> None:
        self.change_settings(Settings())

    def _use_settings(self, settings: Settings) -> None:
        """Settings already saved (by a model action) take effect in this session."""
        self.settings = settings
        self._runtime.close()
        self._runtime = ModelRuntime(self.paths, settings, self._server_api_key)

    def embedder(self) -> Any:
        """The session's sentence embedder (loaded on first use)."""
        return self._runtime.embedder()

    def unload_models(self) -> None:
        """The loaded models' memory given back; the next action that needs one loads it."""
        self._runtime.close()

    def close(self) -> None:
        self._runtime.close()
        if self._store is not None:
            self._store.close()
            self._store = None


class ModelActions:
    """`session.models`: the models Lumen knows, their files and roles (core/models)."""

    def __init__(self, session: Session) -> None:
        self._session = session

    def specs(self) -> list["ModelSpec"]:
        """Every known model (embedded, added, on a server), as the registry lists them."""
        from .models.catalog import ModelRegistry

        return ModelRegistry(self._session.paths, self._session.settings).all()

    def rows(self, verify: bool = False, progress: "ProgressCallback" = None,
             cancel: "CancelToken | None" = None) -> list[dict[str, Any]]:
        """One row per known model: what it is, its roles and the state of its files
        ("present", "missing", "not added", or with `verify` "ok" or what is wrong)."""
        from .models import manage
        from .models.catalog import ModelRegistry

        session = self._session
        registry = ModelRegistry(session.paths, session.settings)
        states = {}
        if verify:
            states = {spec.id: ("ok" if all(s.ok for s in statuses) else
                                "; ".join(s.describe() for s in statuses if not s.ok))
                      for spec, statuses in manage.verify(session.paths, session.settings,
                                                          progress, cancel, force=True,
                                                          only_registered=True)}
        rows = []
        for spec in registry.all():
            present = bool(spec.files) and all(registry.file_path(spec, f).exists()
                                               for f in spec.files)
            rows.append({
                "id": spec.id, "name": spec.name, "kind": spec.kind,
                "roles": registry.roles_of(spec.id), "can_play": list(spec.roles),
                "licence": spec.licence, "source": "embedded" if spec.embedded else spec.source,
                "quantisation": spec.quantisation, "context_length": spec.context_length,
                "chat_format": spec.chat_format,
                "files": [{"name": f.name, "path": str(registry.file_path(spec, f)),
                           "sha256": f.sha256} for f in spec.files],
                "endpoint": spec.endpoint, "server_model": spec.server_model,
                "state": ("on server" if spec.is_server else "not added" if not spec.files else
                          states.get(spec.id) or ("present" if present else "missing")),
            })
        return rows

    def provision(self, progress: "ProgressCallback" = None,
                  cancel: "CancelToken | None" = None) -> list:
        """The embedded models copied into the models folder where missing or damaged."""
        from .models import manage

        return manage.provision(self._session.paths, self._session.settings, progress, cancel)

    def embedded_missing(self) -> list[str]:
        """The embedded model files not in the models folder (by name, no hashing: quick
        enough for every start)."""
        from .models import manage

        return manage.embedded_missing(self._session.paths, self._session.settings)

    def add(self, path: Path, *, roles: list[str] | None = None, chat_format: str | None = None,
            model_id: str | None = None, progress: "ProgressCallback" = None,
            cancel: "CancelToken | None" = None) -> "ModelSpec":
        """A GGUF file checked and registered, with the given roles; audited."""
        from .models import manage

        session = self._session
        spec, settings = manage.add_gguf(session.paths, session.settings, Path(path),
                                         roles=roles or [], chat_format=chat_format,
                                         model_id=model_id, progress=progress, cancel=cancel)
        session._use_settings(settings)
        session.audit("model.added", {"model": spec.id, "sha256": spec.files[0].sha256,
                                      "roles": list(roles or [])})
        session.changed(models=True, settings=True)
        return spec

    def add_server(self, url: str, *, name: str, model: str, roles: list[str] | None = None,
                   ca_bundle: str = "", api_key: str = "", context_length: int = 0,
                   model_id: str | None = None) -> "ModelSpec":
        """A model on an inference server checked (it answers, it serves `model`) and
        registered with the given roles; its API key kept in the OS keyring, or in the
        encrypted database where there is no keyring; audited."""
        import dataclasses

        from .models import manage
        from .models.catalog import ModelRegistry

        session = self._session
        if api_key:
            _api_key_place(session)  # before anything is registered: refused, nothing changes
        spec = manage.add_server(session.paths, session.settings, url, name=name, model=model,
                                 roles=roles, ca_bundle=ca_bundle, api_key=api_key,
                                 context_length=context_length, model_id=model_id)
        _forget_api_key(session, spec.id)
        if api_key:
            spec = dataclasses.replace(spec, api_key=_keep_api_key(session, spec.id, api_key))
            ModelRegistry(session.paths, session.settings).save_user_model(spec)
        settings = session.settings
        for role in roles or []:
            settings = manage.assign_role(session.paths, settings, role, spec.id)
        session._use_settings(settings)
        session.audit("model.added", {"model": spec.id, "server": spec.endpoint,
                                      "server_model": spec.server_model,
                                      "api_key": spec.api_key or "none",
                                      "roles": list(roles or [])})
        for role in roles or []:  # as assign_role audits a role given later
            session.audit("model.role_assigned", {"model": spec.id, "role": role})
        session.changed(models=True, settings=True)
        return spec

    def server_models(self, url: str, *, ca_bundle: str = "", api_key: str = "") -> list[str]:
        """The models a server says it serves (to choose one before adding it)."""
        from .models.server import connect

        client, info = connect(url, ca_bundle=ca_bundle, api_key=api_key,
                               timeout_s=self._session.settings.server_timeout_s)
        client.close()
        return list(info.models)

    def assign_role(self, role: str, model_id: str) -> None:
        from .models import manage

        session = self._session
        session._use_settings(manage.assign_role(session.paths, session.settings, role,
                                                 model_id))
        session.audit("model.role_assigned", {"model": model_id, "role": role})
        session.changed(models=True, settings=True)

    def remove(self, model_id: str) -> None:
        """A model the user added forgotten (its file stays); refused while it has a role."""
        from .models.catalog import ModelRegistry

        session = self._session
        registry = ModelRegistry(session.paths, session.settings)
        in_roles = registry.roles_of(model_id)
        if in_roles:
            raise ModelError(f"'{model_id}' is in use for: {', '.join(in_roles)}.",
                             "Give those roles another model first.")
        registry.remove_user_model(model_id)
        _forget_api_key(session, model_id)
        session.audit("model.removed", {"model": model_id})
        session.changed(models=True)


def _api_key_place(session: Session) -> str:
    """Where a model server's key can go: the OS keyring, else the encrypted database."""
    from .store.keys import keyring_available

    if keyring_available():
        return "keyring"
    if session._store is None:
        raise ModelError("This computer has no keyring and Lumen's database is not open, so "
                         "the server's API key has nowhere safe to go.",
                         "Unlock Lumen (LUMEN_PASSPHRASE for the command line) and add the "
                         "server again.")
    return "database"


def _keep_api_key(session: Session, model_id: str, api_key: str) -> str:
    from .store.keys import KEYRING_SERVICE

    place = _api_key_place(session)
    if place == "keyring":
        import keyring

        keyring.set_password(KEYRING_SERVICE, server_secret_name(model_id), api_key)
    else:
        session.open_store().set_secret(server_secret_name(model_id), api_key)
    return place


def _forget_api_key(session: Session, model_id: str) -> None:
    from .store.keys import KEYRING_SERVICE, keyring_available

    if session._store is not None:
        session._store.forget_secret(server_secret_name(model_id))
    if keyring_available():
        import keyring
        from keyring.errors import PasswordDeleteError

        try:
            keyring.delete_password(KEYRING_SERVICE, server_secret_name(model_id))
        except PasswordDeleteError:
            pass


SampleCallback = Callable[[Any, int, int], None]


class EvaluationActions:
    """`session.evaluation`: benchmarks and their runs in the encrypted store
    (core/evaluation).  Importing and starting are audited by the evaluation store."""

    def __init__(self, session: Session) -> None:
        self._session = session

    @property
    def _store(self) -> "EvaluationStore":
        from .evaluation.runs import EvaluationStore

        return EvaluationStore(self._session.open_store())

    # What the faces read of the kept benchmarks and runs.
    def datasets(self) -> list["SavedDataset"]:
        return self._store.datasets()

    def dataset(self, dataset_id: str) -> "SavedDataset":
        return self._store.dataset(dataset_id)

    def runs(self) -> list[dict[str, Any]]:
        return self._store.runs()

    def run(self, run_id: str) -> dict[str, Any]:
        return self._store.run(run_id)

    def results(self, run_id: str) -> list[dict[str, Any]]:
        return self._store.results(run_id)

    def import_file(self, path: Path, fmt: str, *, mapping: dict[str, str] | None = None,
                    name: str | None = None) -> tuple["SavedDataset", "Dataset"]:
        """A benchmark file read in its format and kept (once: the same file again is found)."""
        from .evaluation.importers import import_dataset

        dataset = import_dataset(Path(path), fmt, mapping=mapping or None, name=name)
        if fmt not in ("cases", "dialogue") and not any(s.context.strip() for s in dataset.samples):
            # Said at the import, before a run of the default system errs on every sample.
            dataset.notes.append("no sample has a document, so it is a set of open questions: "
                                 "run it with the 'qa' system (lumen evaluate run NAME "
                                 "--system qa; in the Evaluation tab, 'qa')")
        return self._store.save_dataset(dataset), dataset

    def start(self, dataset: str, systems: list[str], scorers: list[str],
              limit: int | None = None) -> list[str]:
        """One new run per system on a dataset (its id or name); their ids."""
        from .evaluation.runner import check_run, start_run
        from .evaluation.scorers import scorers_for
        from .evaluation.systems import needs_past_cases

        session, store = self._session, self._store
        dataset_id = store.find_dataset(dataset).id
        needing = [system for system in systems if needs_past_cases(system)]
        if needing and session._knowledge().casebase.count() == 0:
            raise LumenError(f"'{needing[0]}' draws on past cases, and the case base is empty.",
                             "Import a case set in the Knowledge tab first (a 3MDBench file "
                             "imports as one), or choose another system.")
        for system in systems:  # every run checked before any is created
            check_run(store, dataset_id, system, scorers_for(system, scorers))
        return [start_run(store, session._runtime, session.settings, dataset_id, system,
                          scorers_for(system, scorers), limit) for system in systems]

    def resume(self, run_id: str, *, progress: "ProgressCallback" = None,
               cancel: "CancelToken | None" = None,
               on_sample: SampleCallback | None = None) -> dict[str, Any]:
        """Score every sample of a run not yet finished; safe to call again after any stop."""
        from .evaluation.runner import Evaluator, continue_run
        from .evaluation.systems import uses_knowledge

        session, store = self._session, self._store
        system = store.run(run_id)["system"]
        knowledge = session._knowledge() if uses_knowledge(system) else None
        evaluator = Evaluator(session._runtime, session.glossary, session.settings,
                              session.paths.cache_dir, knowledge)
        return continue_run(store, evaluator, run_id, progress=progress, cancel=cancel,
                            on_sample=on_sample)

    def _rules(self, resamples: int | None):
        import dataclasses

        from .evaluation.report import ReportRules

        rules = ReportRules.from_settings(self._session.settings)
        return rules if resamples is None else dataclasses.replace(rules, resamples=resamples)

    def summary(self, run_id: str, resamples: int | None = None) -> dict[str, Any]:
        """A run's metrics with their intervals (Settings' resamples unless given)."""
        from .evaluation.report import summarize

        return summarize(self._store, run_id, self._rules(resamples))

    def report(self, run_id: str, *, criteria: str | None = None,
               baseline: str | None = None) -> "ValidationReport":
        """Everything a validation report says of a run; the faces write it to a file
        (desktop_app/export.py, which audits the export)."""
        from .evaluation.report import build_report

        from .evaluation.systems import criteria_setting

        settings, store = self._session.settings, self._store
        default = getattr(settings, criteria_setting(store.run(run_id)["system"]))
        return build_report(store, run_id, self._rules(None),
                            default if criteria is None else criteria, baseline)

    def verdict(self, summary: dict[str, Any], criteria: str | None = None) -> dict[str, Any]:
        """What a run's report would conclude (its verdict), from its summary, with the
        default criteria of its kind of system unless `criteria` are given; the Evaluation
        tab shows it beside each run."""
        from .evaluation.systems import criteria_setting
        from .evaluation.report import check_criteria, parse_criteria, verdict

        if criteria is None:
            criteria = getattr(self._session.settings, criteria_setting(summary["run"]["system"]))
        return verdict(summary, check_criteria(summary, parse_criteria(criteria)))

    def compare_modes(self, run_ids: list[str]) -> dict[str, Any]:
        """Consultation runs (dialogue:<mode>) pair by pair on their shared cases: Wilcoxon
        with Benjamini-Hochberg at alpha 0.01, as 3MDBench."""
        from .evaluation.report import compare_modes

        return compare_modes(self._store, run_ids,
                             min_samples=self._session.settings.report_min_samples)

    def calibrate_judge(self, paper_scores: Path, *, limit: int | None = None,
                        progress: "ProgressCallback" = None,
                        cancel: "CancelToken | None" = None) -> dict[str, Any]:
        """The local HIVMedQA judge scored against the paper's published judge scores
        (MAE and Spearman per dimension); nothing is kept."""
        from .evaluation.judges import RubricJudge, calibrate_hivmedqa_judge

        return calibrate_hivmedqa_judge(RubricJudge(self._session._runtime), Path(paper_scores),
                                        limit=limit, progress=progress, cancel=cancel)

    def compare(self, run_a: str, run_b: str, resamples: int | None = None) -> dict[str, Any]:
        """Run B against baseline run A, on the samples both finished."""
        from .evaluation.report import compare

        return compare(self._store, run_a, run_b,
                       resamples=self._session.settings.bootstrap_resamples
                       if resamples is None else resamples)


class GlossaryActions:
    """`session.terms`: the glossary's staff entries, its imports and look-ups
    (core/glossary).  Each change is audited by the call that makes it, and the session's
    glossary is built again on its next use."""

    def __init__(self, session: Session) -> None:
        self._session = session

    def _changed(self) -> None:
        self._session.changed(glossary=True)

    def reload(self) -> "Glossary":
        """The glossary read again from the store (after a change made elsewhere)."""
        self._changed()
        return self._session.glossary

    def save_local(self, *, term: str, definition: str, category: str,
                   aliases: list[str] | tuple[str, ...] = (),
                   abbreviations: list[str] | tuple[str, ...] = (), overrides: str | None = None,
                   hidden: bool = False, entry_key: str | None = None) -> str:
        """A staff entry added, or the local edit of `overrides` / the entry `entry_key`
        replaced; its key."""
        from .glossary import entries

        key = entries.save_local(self._session.open_store(), term=term, definition=definition,
                                 category=category, aliases=aliases, abbreviations=abbreviations,
                                 overrides=overrides, hidden=hidden, entry_key=entry_key)
        self._changed()
        return key

    def delete_local(self, entry_key: str) -> None:
        from .glossary import entries

        entries.delete_local(self._session.open_store(), entry_key)
        self._changed()

    def import_file(self, path: Path, progress: "ProgressCallback" = None,
                    cancel: "CancelToken | None" = None) -> dict[str, Any]:
        """MedlinePlus topics (an XML file) or local entries (a .toml file written by
        `export_local`): `{"local_entries": n}` or the topic counts (ImportCounts.to_dict)."""
        from .glossary import entries
        from .glossary.medlineplus import import_medlineplus

        store, path = self._session.open_store(), Path(path)
        try:
            if path.suffix.lower() == ".toml":
                return {"local_entries": entries.import_local(store, path)}
            return import_medlineplus(store, path, progress, cancel).to_dict()
        finally:
            self._changed()

    def export_local(self, path: Path, *, force: bool = False) -> int:
        """The staff entries written to a .toml file, whole or not at all; an existing file
        is replaced only with `force` (the window's save dialog has asked)."""
        from .glossary import entries

        path = Path(path)
        if path.exists() and not force:
            raise LumenError(f"{path} exists already; it was left as it is.",
                             "Choose another file name, or add --force to replace it.")
        partial = path.with_name(path.name + ".partial")
        try:
            count = entries.export_local(self._session.open_store(), partial)
            partial.replace(path)
        finally:
            partial.unlink(missing_ok=True)
        # Staff entries leave the database: which file, how many, and by which face.
        self._session.audit("glossary.exported", {"entries": count, "file": path.name,
                                                  "from": self._session.face})
        return count

    def reading_grade(self, text: str) -> float:
        """A definition's Flesch-Kincaid grade, as the entry editor shows it while typing."""
        from .readability import flesch_kincaid_grade

        return flesch_kincaid_grade(text, self._session.paths.cache_dir)

    def lookup(self, term: str, *, semantic: bool = True, limit: int = 5) -> list[Any]:
        """Entries for a word: exact, other names, fuzzy and (with `semantic`) by meaning,
        with the session's embedder (loaded only when the search by meaning runs, once,
        closed with the session)."""
        session = self._session
        embedder = session._runtime.embedder if semantic else None
        return session.glossary.lookup(term, settings=session.settings, embedder=embedder,
                                       cache_dir=session.paths.cache_dir, limit=limit)


class RecordActions:
    """`session.records`: what Lumen keeps and its custody: saved runs, the audit log, the
    database key, backups and restores (core/store).  Key changes, backups and restores are
    audited."""

    def __init__(self, session: Session) -> None:
        self._session = session

    def runs(self, limit: int = 50) -> list[dict[str, Any]]:
        """Saved answers and handouts, newest first (no patient text but the question)."""
        from .pipelines.trace import list_runs

        return list_runs(self._session.open_store(), limit)

    def run(self, run_id: str) -> dict[str, Any]:
        """One saved run with its summary, result and trace."""
        from .pipelines.trace import load_run

        return load_run(self._session.open_store(), run_id)

    def audit_entries(self, limit: int = 100) -> list[dict[str, Any]]:
        return self._session.open_store().audit_entries(limit)

    def verify_audit(self) -> Any:
        """The audit log's seals and links checked (a ChainCheck)."""
        return self._session.open_store().verify_audit()

    @property
    def key_source(self) -> str:
        """"passphrase" or "keyring": where the open database's key comes from."""
        return self._session.open_store().key_source

    def opens_with(self, passphrase: str) -> bool:
        """Whether `passphrase` opens this profile's database (a wrong one is noted as a
        failed unlock, like any other)."""
        from .errors import WrongKeyError
        from .store import open_store

        try:
            open_store(self._session.paths.database_file, passphrase).close()
        except WrongKeyError:
            return False
        return True

    def check_keyring_key(self) -> None:
        """Raises a LumenError saying why, when the OS keyring no longer gives the open
        database's key (the lock screen's Unlock asks the keyring again)."""
        from .store import KeyManager

        KeyManager(self._session.open_store().path).key_for_existing()

    def change_key(self, new_passphrase: str | None = None) -> Any:
        """The database re-encrypted under a new passphrase, or a new keyring key."""
        from .store.custody import change_key

        return change_key(self._session.open_store(), new_passphrase)

    def check_backup_target(self, destination: Path, *, force: bool = False) -> None:
        """Refuses, before anything is asked, a backup file that would hurt the data (the
        database itself, a profile folder, an existing file without `force`)."""
        from .store.custody import check_backup_target

        check_backup_target(self._session.open_store(), Path(destination), force=force,
                            profile_folders=self._session.paths.folders)

    def backup(self, destination: Path, passphrase: str, *, force: bool = False) -> dict[str, Any]:
        """The database and the profile files copied into a backup under its own
        passphrase, and read back whole."""
        from .store.custody import backup

        paths = self._session.paths
        return backup(self._session.open_store(), Path(destination), passphrase,
                      paths.profile_files, force=force, profile_folders=paths.folders)

    def restore_needs_passphrase(self) -> bool:
        """Whether a restored database would need a passphrase (no usable keyring)."""
        from .store import KeyManager

        return KeyManager(self._session.paths.database_file).needs_passphrase()

    def restore(self, source: Path, passphrase: str,
                new_passphrase: str | None = None) -> tuple[Any, list[str], Any]:
        """A backup copied into this profile, which has no database yet: the database under
        a key of its own, the profile files written whole or not at all, the audit entry
        written, and the restored log checked.  The session then works on the restored
        database.  Returns the key, the profile files written and the audit check."""
        from .store import open_store
        from .store.custody import restore

        session = self._session
        if session._store is not None:
            raise LumenError("A restore goes into a profile without a database, and this one "
                             "has its database open.", "Restore into a new profile "
                             "(lumen --profile NEW_FOLDER restore FILE).")
        key, files = restore(Path(source), passphrase, session.paths.database_file,
                             new_passphrase)
        targets = session.paths.profile_files
        written = sorted(name for name in files if name in targets)
        for name in written:  # whole or not at all, as Settings.save does
            targets[name].parent.mkdir(parents=True, exist_ok=True)
            partial = targets[name].with_name(targets[name].name + ".tmp")
            partial.write_text(files[name], encoding="utf-8")
            partial.replace(targets[name])
        session._store = open_store(session.paths.database_file, new_passphrase)
        session.audit("profile.restored", {"files": sorted(files), "from": session.face})
        return key, written, session._store.verify_audit()


class KnowledgeLibrary:
    """`session.library`: the documents of the knowledge base and the past-case sets,
    listed and removed without loading any model (core/knowledge).  Removals are audited
    by the knowledge store."""

    def __init__(self, session: Session) -> None:
        self._session = session

    def _bases(self) -> tuple[Any, Any]:
        from .knowledge.base import CaseBase, KnowledgeBase
        from .knowledge.doctorrag import vector_folder
        from .knowledge.index import VectorIndex

        store = self._session.open_store()
        index = VectorIndex(vector_folder(self._session.paths))
        return KnowledgeBase(store, index), CaseBase(store, index)

    def documents(self) -> list[Any]:
        return self._bases()[0].documents()

    def case_sets(self) -> list[Any]:
        return self._bases()[1].sets()

    def cases(self, set_id: str) -> list[Any]:
        """The de-identified cases of one set (its id, or the start of it)."""
        base = self._bases()[1]
        return base.records(base.case_set(set_id).id)

    def _rag(self) -> "DoctorRAG":
        return self._session._knowledge()

    def add_file(self, path: Path, *, declarative: bool | None = None,
                 progress: "ProgressCallback" = None, cancel: "CancelToken | None" = None
                 ) -> tuple[Any, bool]:
        """A document added to the knowledge base (embedded, tagged by chapter); (the
        document, False) when the same file was added before."""
        added = self._rag().add_file(Path(path), declarative=declarative, progress=progress,
                                     cancel=cancel)
        if added[1]:
            self._session.changed(knowledge=True)
        return added

    def add_glossary(self, *, limit: int | None = None, declarative: bool | None = None,
                     progress: "ProgressCallback" = None, cancel: "CancelToken | None" = None
                     ) -> tuple[Any, bool]:
        """The glossary's topics added as knowledge; (the document, False) when the same
        topics were added before."""
        added = self._rag().add_glossary(limit=limit, declarative=declarative,
                                         progress=progress, cancel=cancel)
        if added[1]:
            self._session.changed(knowledge=True)
        return added

    def import_cases(self, path: Path, mapping: dict[str, str] | None = None,
                     progress: "ProgressCallback" = None, cancel: "CancelToken | None" = None
                     ) -> tuple[Any, Any, bool]:
        """A file of past cases de-identified and added; (set, what was read, False) when
        it was imported before."""
        imported = self._rag().import_cases(Path(path), mapping, progress=progress,
                                            cancel=cancel)
        if imported[2]:
            self._session.changed(knowledge=True)
        return imported

    def reindex(self, progress: "ProgressCallback" = None,
                cancel: "CancelToken | None" = None) -> dict[str, int]:
        """The vector index rebuilt from the database (after its folder was lost)."""
        return self._rag().reindex(progress=progress, cancel=cancel)

    def remove_document(self, document_id: str) -> Any:
        removed = self._bases()[0].remove(document_id)
        self._session.changed(knowledge=True)
        return removed

    def remove_case_set(self, set_id: str) -> Any:
        removed = self._bases()[1].remove(set_id)
        self._session.changed(knowledge=True)
        return removed
