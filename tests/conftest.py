"""Test set-up.  The network guard goes in before any other import, so every test
in the suite runs under it; each test gets its own profile folder (LUMEN_HOME),
and the embedded models are provisioned once per run into a shared folder."""

from desktop_app.core import offline

offline.activate()

import os  # noqa: E402
from pathlib import Path  # noqa: E402

import keyring  # noqa: E402
import pytest  # noqa: E402
from jaraco.classes import properties  # noqa: E402
from keyring.backend import KeyringBackend  # noqa: E402

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")


def _pin_xdist_worker() -> None:
    """With `-n N` (pytest-xdist), each worker runs on its own share of the cores, and so
    does every `lumen` it starts: llama.cpp and onnxruntime size their thread pools by the
    cores a process may use (config.usable_cores), and two workers each spinning a thread
    per core of the machine spend their time waiting on each other."""
    worker = os.environ.get("PYTEST_XDIST_WORKER", "")
    count = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1"))
    if not worker.startswith("gw") or count < 2 or not hasattr(os, "sched_setaffinity"):
        return
    cores = sorted(os.sched_getaffinity(0))
    if len(cores) < count:
        return
    index = int(worker[2:])
    os.sched_setaffinity(0, cores[index::count])


_pin_xdist_worker()

from desktop_app.core.config import Paths, Settings, private_files  # noqa: E402

# As `lumen` and the window do before anything else: files Lumen writes in this process
# are this account's only (test_config sets a loose umask itself to test the store's chmod).
private_files()
from desktop_app.core.models import manage  # noqa: E402

import lanes  # noqa: E402
from helpers import TEST_PASSPHRASE, smollm2_file  # noqa: E402


class MemoryKeyring(KeyringBackend):
    """An in-process keyring standing in for the desktop's (headless Linux has none).
    The passphrase path, which needs no keyring, is tested against the real store too."""

    @properties.classproperty
    def priority(cls) -> float:
        # keyring picks up every backend subclass by priority; raising marks this one not
        # viable, so only the `memory_keyring` fixture ever installs it.
        raise RuntimeError("test keyring")

    def __init__(self) -> None:
        super().__init__()
        self.items: dict[tuple[str, str], str] = {}

    def get_password(self, service, username):
        return self.items.get((service, username))

    def set_password(self, service, username, password):
        self.items[(service, username)] = password

    def delete_password(self, service, username):
        self.items.pop((service, username), None)


@pytest.fixture(scope="session")
def shared_models(tmp_path_factory) -> Path:
    """The embedded models, provisioned once from their packages for the whole run."""
    root = tmp_path_factory.mktemp("models-profile")
    paths = Paths.resolve(root)
    paths.ensure()
    manage.provision(paths, Settings())
    return paths.default_models_dir


@pytest.fixture
def profile(tmp_path, monkeypatch, shared_models) -> Paths:
    """An isolated Lumen home whose settings point at the shared models folder."""
    home = tmp_path / "home"
    monkeypatch.setenv("LUMEN_HOME", str(home))
    monkeypatch.delenv("LUMEN_PASSPHRASE", raising=False)
    paths = Paths.resolve()
    paths.ensure()
    Settings(models_dir=str(shared_models)).save(paths)
    return paths


@pytest.fixture
def settings(profile) -> Settings:
    return Settings.load(profile)


@pytest.fixture
def passphrase_env(monkeypatch) -> str:
    monkeypatch.setenv("LUMEN_PASSPHRASE", TEST_PASSPHRASE)
    return TEST_PASSPHRASE


@pytest.fixture
def memory_keyring():
    previous = keyring.get_keyring()
    backend = MemoryKeyring()
    keyring.set_keyring(backend)
    yield backend
    keyring.set_keyring(previous)


@pytest.fixture(scope="session")
def runtime_settings(shared_models) -> Settings:
    return Settings(models_dir=str(shared_models), context_size=2048)


@pytest.fixture(scope="session")
def runtime(tmp_path_factory, runtime_settings):
    """One ModelRuntime (one loaded SmolLM2) shared by the runtime tests."""
    from desktop_app.core.models.runtime import ModelRuntime

    paths = Paths.resolve(tmp_path_factory.mktemp("runtime-profile"))
    paths.ensure()
    rt = ModelRuntime(paths, runtime_settings)
    yield rt
    rt.close()


@pytest.fixture
def no_connections():
    """Asserts that the test made no attempt to reach another machine."""
    offline.clear_attempts()
    yield
    attempts = offline.attempts()
    assert attempts == [], f"connection attempts were made: {attempts}"


def rewrite_gguf(source: Path, target: Path, *, set_strings: dict[str, str] | None = None,
                 remove: tuple[str, ...] = ()) -> Path:
    """A copy of a GGUF with metadata changed, written by llama.cpp's own gguf tools."""
    import gguf
    from gguf.scripts.gguf_new_metadata import MetadataDetails, copy_with_new_metadata

    reader = gguf.GGUFReader(source, "r")
    arch = (set_strings or {}).get("general.architecture") or \
        reader.fields["general.architecture"].contents()
    writer = gguf.GGUFWriter(target, arch=arch, endianess=reader.endianess)
    new = {key: MetadataDetails(gguf.GGUFValueType.STRING, value)
           for key, value in (set_strings or {}).items() if key != "general.architecture"}
    copy_with_new_metadata(reader, writer, new, list(remove))
    return target


@pytest.fixture(scope="session")
def gguf_without_template(tmp_path_factory, shared_models) -> Path:
    """SmolLM2 with its `tokenizer.chat_template` removed."""
    return rewrite_gguf(smollm2_file(shared_models),
                        tmp_path_factory.mktemp("no-template") / "smollm2-no-template.gguf",
                        remove=("tokenizer.chat_template",))


@pytest.fixture(autouse=True)
def no_os_keyring():
    """Every test starts with no OS keyring (as on a headless workstation), whatever the
    developer's desktop has, so no test writes into a real keyring."""
    from keyring.backends import fail

    previous = keyring.get_keyring()
    keyring.set_keyring(fail.Keyring())
    yield
    keyring.set_keyring(previous)


@pytest.fixture
def truncated_gguf(tmp_path, shared_models) -> Path:
    target = tmp_path / "truncated.gguf"
    with smollm2_file(shared_models).open("rb") as source:
        target.write_bytes(source.read(5_000_000))
    return target




@pytest.fixture(autouse=True)
def gui_thread_garbage_collection(request):
    """A test with Qt widgets collects cycles on the GUI thread only, as the window does
    (desktop_app/gui/garbage.py: a worker that collects a widget crashes the process).
    Afterwards its garbage is collected here, on the main thread, before automatic
    collection comes back for the tests that have no Qt event loop to run the timer."""
    if "qtbot" not in request.fixturenames:
        yield
        return
    import gc

    from desktop_app.gui.garbage import collect_garbage_on_gui_thread

    collect_garbage_on_gui_thread(request.getfixturevalue("qapp"))
    try:
        yield
    finally:
        gc.collect()
        gc.enable()


# ---- the window ------------------------------------------------------------------------


@pytest.fixture
def open_window(qtbot, profile, settings, passphrase_env):
    """Opens the main window over the test's profile, as `lumen` does: a Session on the
    unlocked store, the settings with `changes` (dataclasses.replace, so a test may go
    outside the user-facing limits), shown.  After the test, running work is waited for
    and each window's Session closed (qtbot also closes the windows)."""
    import dataclasses

    from desktop_app.core.session import Session
    from desktop_app.core.store import open_store
    from desktop_app.gui.main_window import MainWindow
    from desktop_app.gui.workers import wait_for_all

    opened = []

    def open_(base: Settings | None = None, **changes):
        chosen = dataclasses.replace(base or settings, **changes)
        window = MainWindow(Session(profile, chosen, open_store(profile.database_file)))
        qtbot.addWidget(window)
        window.show()
        opened.append(window)
        return window
    yield open_
    wait_for_all()
    for window in opened:
        window.session.close()


@pytest.fixture(scope="session")
def glossary():
    """Lumen's own glossary (no database), built once: the tests read it, never change it."""
    from desktop_app.core.glossary.glossary import load_glossary

    return load_glossary(None)


@pytest.fixture
def window(open_window):
    """The main window with the test profile's settings."""
    return open_window()


# ---- lanes -----------------------------------------------------------------------------
# `make test` runs every test; `make check` the quick lane (pyproject.toml's markers).  A
# test's lanes follow from what it uses, so a new test needs no marker of its own:
# `gui` (Qt widgets: qtbot), `model` (the shared llama.cpp runtime), `subprocess` (starts
# `lumen` or another process: found where the process starts, tests/lanes.py); `slow` is
# set by hand on tests that take long for another reason; `quick`, by hand, keeps a test
# that starts only a few short processes in the quick lane.  A quick-lane test that starts
# a process all the same fails (lanes.refusing_processes).


@pytest.fixture(scope="session")
def starts_processes():
    """Requested by every fixture that starts a process: the tests that use such a fixture,
    however deep, are in the `subprocess` lane."""


def pytest_collection_modifyitems(config, items):
    for item in items:
        fixtures = set(getattr(item, "fixturenames", ()))
        if "qtbot" in fixtures:
            item.add_marker(pytest.mark.gui)
        if "runtime" in fixtures:
            item.add_marker(pytest.mark.model)
        if item.get_closest_marker("quick") is None and lanes.starts_a_process(item):
            item.add_marker(pytest.mark.subprocess)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_setup(item):
    if not lanes.guarded(item):
        return (yield)
    with lanes.refusing_processes(item):
        return (yield)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item):
    if not lanes.guarded(item):
        return (yield)
    with lanes.refusing_processes(item):
        result = yield
    if lanes.refused(item):
        pytest.fail("\n".join(lanes.refused(item)), pytrace=False)
    return result
