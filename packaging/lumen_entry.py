"""Entry point of the bundled `lumen` program (PyInstaller runs this file).

It does what the `lumen` console script does, plus one thing for validation runs:
with LUMEN_OFFLINE_STRICT=1 in the environment, any attempt to reach another
machine ends the process at once with exit status 70 and a line on stderr,
instead of being refused and merely recorded.  IT uses it to prove an
installation quiet (`LUMEN_OFFLINE_STRICT=1 lumen --selftest`), and the
packaging test runs the bundle that way.

The strict hook is installed before `desktop_app.cli` is imported, so before the
ordinary network guard: Python calls audit hooks in the order they were added and
stops at the first that raises, so a hook added later would never see a refused
connection.  It applies the guard's own rules (desktop_app.core.offline) for what
is this machine and what is not.  Without the variable nothing changes: the guard
refuses and records, as it does in a source install.
"""

from __future__ import annotations

import os
import sys

STRICT_ENV = "LUMEN_OFFLINE_STRICT"
STRICT_EXIT = 70  # EX_SOFTWARE: something in this build tried to use the network


def _say(line: str) -> None:
    if sys.stderr is not None:  # None in the windowed Windows program (lumenw.exe)
        sys.stderr.write(line + "\n")
        sys.stderr.flush()


def _die(reason: str) -> None:
    try:
        _say(f"lumen: strict offline mode: {reason}; stopping.")
    finally:
        os._exit(STRICT_EXIT)


def _first_outside(skip: tuple[str, ...]) -> str:
    """file:line of the innermost frame outside `skip` and the standard library: the
    code that tried to connect (as the network guard reports it)."""
    import sysconfig
    import traceback

    stdlib = sysconfig.get_paths()["stdlib"]
    for frame in reversed(traceback.extract_stack(limit=40)):
        if frame.filename not in skip and not frame.filename.startswith(stdlib):
            return f"{os.path.basename(frame.filename)}:{frame.lineno}"
    return "unknown"


def install_strict_guard() -> None:
    """Make any connection the network guard would refuse fatal (cannot be undone).

    The guard's own hook would raise first and so hide the event from a later hook;
    this one goes in before it and asks the guard's rules (offline.verdict: what counts
    as this machine, which servers IT configured) without recording anything.
    """
    from desktop_app.core import offline  # standard library only; activates nothing

    verdict = offline.verdict
    skip = (__file__, offline.__file__)

    def strict_hook(event: str, args: tuple) -> None:
        if not event.startswith("socket."):
            return
        decided = verdict(event, args)
        # A configured model server passes: offline.allow_endpoint admits one in strict
        # mode only when IT's allowlist file names it.
        if decided is not None and decided[0] == "refuse":
            attempt = f"{event} to {decided[1]} from {_first_outside(skip)}"
            offline.log.error("Strict offline mode: %s; stopping", attempt)
            _die(f"refused {attempt}")

    sys.addaudithook(strict_hook)


def strict_requested() -> bool:
    return os.environ.get(STRICT_ENV, "").strip().lower() in ("1", "true", "yes", "on")


def main() -> int:
    strict = strict_requested()
    if strict:
        install_strict_guard()
        _say(f"lumen: strict offline mode: any attempt to reach another machine stops Lumen "
             f"(exit {STRICT_EXIT}).")
    from desktop_app.cli import main as lumen_main  # activates the network guard first
    from desktop_app.core import offline

    code = lumen_main()
    # Refusals that go through no socket (an NLTK download) are only recorded: make
    # them fatal too, once the command has finished.
    if strict and offline.attempts():
        _die("refused " + "; ".join(str(a) for a in offline.attempts()))
    return code


if __name__ == "__main__":
    import multiprocessing

    multiprocessing.freeze_support()  # a frozen child process must not start Lumen again
    sys.exit(main())
