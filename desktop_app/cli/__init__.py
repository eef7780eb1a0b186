"""The `lumen` command line: a thin layer over desktop_app.core.

With no subcommand it opens the window.  Every subcommand calls the same core Session
actions the window does; `--json` gives machine-readable output.  One module per command
group registers its arguments beside its handlers; engines (llama.cpp, onnxruntime,
chromadb, scipy, Qt) are imported only by the handler that runs one.
"""

from __future__ import annotations

# The network guard and offline environment go in before any third-party import.
from ..core import startup

startup.make_process_offline()

import argparse  # noqa: E402
import os  # noqa: E402
import sys  # noqa: E402
from pathlib import Path  # noqa: E402
from typing import Sequence  # noqa: E402

from .. import __version__  # noqa: E402
from ..core.errors import LumenError  # noqa: E402
from . import doctor, evaluate, glossary, knowledge, models, records, settings, summary  # noqa: E402
from .common import EXIT_BROKEN_PIPE, EXIT_ERROR  # noqa: E402

# In `lumen --help` order.
COMMAND_GROUPS = (doctor, models, settings, glossary, summary, evaluate, records, knowledge)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="lumen",
        description="Lumen: a private medical text assistant that runs entirely on this "
                    "computer. With no command, opens the window.")
    parser.add_argument("--version", action="version", version=f"Lumen {__version__}")
    parser.add_argument("--profile", metavar="DIR",
                        help="keep all data, settings, cache and logs under DIR "
                             "(also: LUMEN_HOME)")
    parser.add_argument("--selftest", action="store_true",
                        help="start the window offscreen, check it, and exit (0 = healthy)")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for group in COMMAND_GROUPS:
        group.register(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        if args.profile:
            # Child processes and the GUI see the same profile.
            os.environ["LUMEN_HOME"] = str(Path(args.profile).expanduser().resolve())
        paths, settings = startup.begin(
            args.profile, console_level=None if args.command is None else "WARNING")
        if args.command is None and args.selftest:
            os.environ["QT_QPA_PLATFORM"] = "offscreen"
            from ..gui.selftest import run_selftest

            return run_selftest(paths, settings)
        if args.command is None:
            from ..gui.app import run_gui

            return run_gui(paths, settings)
        try:
            code = args.func(args, paths, settings)
            sys.stdout.flush()  # a reader gone away is found here, not in Python's exit
            return code
        finally:
            warning = startup.record_network_events(paths)
            if warning:
                print(f"Warning: {warning}", file=sys.stderr)
    except LumenError as exc:
        print(f"Error: {exc.message}", file=sys.stderr)
        if exc.fix:
            print(f"What to do: {exc.fix}", file=sys.stderr)
        if args.command is None and not args.selftest and os.environ.get("QT_QPA_PLATFORM") != "offscreen":
            from ..gui.app import show_startup_error

            show_startup_error(exc)
        return EXIT_ERROR
    except KeyboardInterrupt:
        print("Interrupted.", file=sys.stderr)
        return 130
    except BrokenPipeError:
        # The reader stopped reading (`lumen evaluate list | head -1`): what was done is
        # done; Python's own flush at exit must not fail on the closed pipe either.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return EXIT_BROKEN_PIPE



if __name__ == "__main__":
    sys.exit(main())
