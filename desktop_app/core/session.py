"""One user's working session: paths, settings, the unlocked store, the glossary and the
loaded models, and the actions both faces call on them.

The window holds one Session for its life; the command line builds one per command
(`Session.open`).  An action on a Session runs the core pipeline, keeps what it produced
in the encrypted store and writes its audit entry, so the window and the command line
store the same rows for the same action (tests/test_session.py).  `session.knowledge()`
is the one way both faces reach DoctorRAG.  Issue #16 moves the remaining actions
(knowledge answers, evaluation, models, settings) here the same way.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from .config import Paths, Settings
from .errors import LumenError
from .models.runtime import ModelRuntime
from .store import Store

if TYPE_CHECKING:
    from .glossary.glossary import Glossary
    from .knowledge.doctorrag import DoctorRAG
    from .pipelines.ask import AskResult, EventCallback
    from .pipelines.simplify import Handout
    from .progress import CancelToken, ProgressCallback


@dataclass
class Session:
    paths: Paths
    settings: Settings
    store: Store | None = None
    runtime: ModelRuntime = field(init=False)
    _glossary: "Glossary | None" = field(default=None, init=False, repr=False)

    def __post_init__(self) -> None:
        self.runtime = ModelRuntime(self.paths, self.settings)

    @classmethod
    def open(cls, paths: Paths, settings: Settings, passphrase: str | None = None) -> "Session":
        """A Session on the profile's encrypted store (the keyring's key, or `passphrase`)."""
        from .store import open_store

        return cls(paths, settings, open_store(paths.database_file, passphrase))

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

            self._glossary = load_glossary(self.store, self.settings)
        return self._glossary

    @glossary.setter
    def glossary(self, glossary: "Glossary") -> None:
        self._glossary = glossary

    def _open_store(self) -> Store:
        if self.store is None:
            raise LumenError("Lumen's database is not open.",
                             "Unlock Lumen (or start it again) and try again.")
        return self.store

    def knowledge(self) -> "DoctorRAG":
        """DoctorRAG (core/knowledge) over the session's store, models and glossary: the
        knowledge base, the case base and the answers drawn from them."""
        from .knowledge.doctorrag import DoctorRAG

        return DoctorRAG.open(self.paths, self.settings, self._open_store(), self.runtime,
                              self.glossary)

    # ---- actions ----

    def ask(self, summary: str, question: str, *, method: str | None = None,
            variant: str | None = None, on_event: "EventCallback | None" = None,
            progress: "ProgressCallback" = None,
            cancel: "CancelToken | None" = None) -> "AskResult":
        """Answer a question about a discharge summary (pipelines/ask.py) and keep the run
        (summary, question, shown answer, trace) in the encrypted store, audited."""
        from .pipelines.ask import AskPipeline
        from .pipelines.trace import save_run

        store = self._open_store()
        result = AskPipeline(self.runtime, self.glossary, self.settings, self.paths.cache_dir).run(
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

        store = self._open_store()
        handout = SimplifyPipeline(self.runtime, self.glossary, self.settings,
                                   self.paths.cache_dir).run(
            summary, use_verifier=use_verifier, variant=variant, on_event=on_event,
            progress=progress, cancel=cancel)
        save_run(store, handout.trace, summary=summary, question="", result=handout.to_text())
        return handout

    def apply_settings(self, settings: Settings) -> None:
        """Save new settings; loaded models are dropped so the next call uses them."""
        changed = settings.changed_from(self.settings)
        settings.save(self.paths)
        if changed and self.store is not None:
            self.store.audit("settings.changed", {"settings": changed, "from": "window"})
        self.settings = settings
        self.runtime.close()
        self.runtime = ModelRuntime(self.paths, settings)

    def close(self) -> None:
        self.runtime.close()
        if self.store is not None:
            self.store.close()
            self.store = None
