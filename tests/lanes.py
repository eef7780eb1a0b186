"""The `subprocess` lane (issue #34): which tests start a process, found where the process
is started, and a guard that fails a quick-lane test that starts one all the same.

A test is in the `subprocess` lane when
- one of its fixtures, at any depth, requests `starts_processes` (conftest.py): a fixture
  that starts a process says so itself (test_server.py's `server`);
- it, one of its fixtures, or a function of the tests' own modules (its own module,
  helpers.py, conftest.py...) that these call, followed down, is tagged with
  helpers.starts_processes (run_lumen) or has a process start in its source (_SPAWNS).
  A helper called at test time cannot mark the test it runs in, so this one source
  check stays, and it follows imported helpers, `helpers.run_lumen(...)` included.

What neither sees (Lumen's own code starting a process: the network probe's tour) the
guard catches: while a test of the quick lane (neither slow, subprocess nor quick) is set
up and run, every way of starting a process raises ProcessStartRefused, and a refusal
the test swallowed (a worker thread's) fails it after it ran.
"""

from __future__ import annotations

import inspect
import os
import re
import sys
import threading
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

import pytest

TESTS = Path(__file__).resolve().parent

# A process start in a test's or a helper's source; Lumen's own starters by name.
_SPAWNS = ("subprocess.", "Popen(", "multiprocessing", "run_watched(", "run_tour(",
           "sys.executable")
_CALL = re.compile(r"\b([A-Za-z_][\w.]*)\(")

_SOURCES: dict = {}  # function -> its source: collection meets the same fixtures and helpers
# in thousands of tests, and each xdist worker collects the whole suite
_CALLS: dict = {}  # function -> the tests' own functions it calls


class ProcessStartRefused(RuntimeError):
    """A test of the quick lane started a process."""


def _source(function) -> str:
    if function not in _SOURCES:
        try:
            _SOURCES[function] = inspect.getsource(function)
        except (OSError, TypeError, AttributeError):
            _SOURCES[function] = ""
    return _SOURCES[function]


def _ours(value) -> bool:
    """A function of the tests' own modules (not this machinery's)."""
    if not inspect.isfunction(value) or value.__module__ == __name__:
        return False
    try:
        return Path(inspect.getfile(value)).resolve().parent == TESTS
    except (OSError, TypeError):
        return False


_HELPERS: dict = {}  # the helper modules seen -> their tagged functions


def _tagged() -> dict:
    """The functions tagged helpers.starts_processes in the tests' helper modules
    (helpers*.py), by name."""
    modules = tuple(name for name in list(sys.modules) if name.startswith("helpers"))
    if modules not in _HELPERS:
        _HELPERS.clear()
        _HELPERS[modules] = {
            name: value for module in modules for name, value in vars(sys.modules[module]).items()
            if _ours(value) and getattr(value, "starts_processes", False)}
    return _HELPERS[modules]


def _called(function) -> list:
    """The tests' own functions `function` calls, by name or dotted name
    (`helpers.run_lumen(`), resolved in its module."""
    if function not in _CALLS:
        found = []
        names = getattr(function, "__globals__", {})
        for dotted in dict.fromkeys(_CALL.findall(_source(function))):
            first, *rest = dotted.split(".")
            # A name imported inside the function (`from helpers import run_lumen`) is not
            # in its module's names: a tagged helper of the tests' modules by that name.
            value = names.get(first) if first in names else _tagged().get(first)
            for attribute in rest:
                value = getattr(value, attribute, None)
            if _ours(value) and value is not function:
                found.append(value)
        _CALLS[function] = found
    return _CALLS[function]


def _starts(function) -> bool:
    return (getattr(function, "starts_processes", False)
            or any(spawn in _source(function) for spawn in _SPAWNS))


def starts_a_process(item) -> bool:
    """Whether a collected test starts a process, by its fixtures and its source."""
    if "starts_processes" in getattr(item, "fixturenames", ()):
        return True
    info = getattr(item, "_fixtureinfo", None)
    pending = [item.function] + [
        definition.func for definitions in (info.name2fixturedefs.values() if info else ())
        for definition in definitions]
    seen: set = set()
    while pending:
        function = pending.pop()
        if function in seen:
            continue
        seen.add(function)
        if _starts(function):
            return True
        pending.extend(_called(function))
    return False


def guarded(item) -> bool:
    """Whether `item` runs under the guard: in the quick lane and not marked `quick`."""
    return not any(item.get_closest_marker(name) for name in ("slow", "subprocess", "quick"))


# ---- the guard --------------------------------------------------------------------------

# Standard-library probes a process makes once and caches (`uname -p` for
# platform.processor(), ldconfig for ctypes.util.find_library): not a test's process.
_PROBES = (os.sep + "platform.py", os.path.join("ctypes", "util.py"))
_REFUSED = pytest.StashKey[list]()


def _a_probe() -> bool:
    frame = sys._getframe(2)
    while frame is not None:
        if frame.f_code.co_filename.endswith(_PROBES):
            return True
        frame = frame.f_back
    return False


@contextmanager
def refusing_processes(item) -> Iterator[None]:
    """Every way of starting a process refused while `item` is set up or run."""
    import multiprocessing.process
    import subprocess

    refused = item.stash.setdefault(_REFUSED, [])

    def guard(owner, name: str, what: str):
        original = getattr(owner, name)

        def refuse(*args, **kwargs):
            if _a_probe():
                return original(*args, **kwargs)
            shown = args[1] if name == "_execute_child" else args[:1]
            message = (f"{item.nodeid} started a process ({what}: {shown!r:.200}) in the quick "
                       "lane. Mark it where the process starts: a fixture that starts one "
                       "requests `starts_processes`, a helper is tagged with "
                       "helpers.starts_processes; or mark the test `subprocess` (or `quick` "
                       "if its processes take seconds in all).")
            refused.append(f"{message} (thread {threading.current_thread().name})")
            raise ProcessStartRefused(message)
        return refuse

    targets = [(subprocess.Popen, "_execute_child", "subprocess"),
               (multiprocessing.process.BaseProcess, "start", "multiprocessing"),
               *((os, name, f"os.{name}") for name in ("fork", "forkpty", "posix_spawn",
                                                      "posix_spawnp", "system")
                 if hasattr(os, name))]
    with pytest.MonkeyPatch.context() as patch:
        for owner, name, what in targets:
            patch.setattr(owner, name, guard(owner, name, what))
        yield


def refused(item) -> list[str]:
    """The process starts refused in `item` so far (a test of the guard clears them)."""
    return item.stash.setdefault(_REFUSED, [])
