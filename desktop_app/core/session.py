"""One user's working session: paths, settings, the unlocked store and loaded models.

The window holds one of these.  The command line still assembles the same pieces in
each command (issue #16 makes this the one API both faces call).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from .config import Paths, Settings
from .models.runtime import ModelRuntime
from .store import Store


@dataclass
class Session:
    paths: Paths
    settings: Settings
    store: Store | None = None
    runtime: ModelRuntime = field(init=False)

    def __post_init__(self) -> None:
        self.runtime = ModelRuntime(self.paths, self.settings)

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
