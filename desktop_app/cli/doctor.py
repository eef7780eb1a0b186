"""`lumen doctor` and `lumen verify-offline`: is this installation whole, and does
nothing leave the machine."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING

from ..core.errors import PassphraseRequired
from .common import (EXIT_OK, EXIT_PROBLEM, add_json_option, passphrase_for, profile_session,
                    progress_for, show_result, tell)

if TYPE_CHECKING:
    from ..core.results import StepResult


def cmd_doctor(args, paths, settings) -> int:
    if args.fix_permissions:
        with profile_session(paths, settings) as session:
            for path in session.make_files_private():
                print(f"Made private: {path}", file=sys.stderr)
    passphrase = None
    try:
        passphrase = passphrase_for(paths)
    except PassphraseRequired:
        pass  # reported as a finding
    with profile_session(paths, settings, store=False) as session:
        report = session.check_installation(measure_speed=not args.no_speed,
                                            passphrase=passphrase, progress=progress_for(args))

    def for_reader() -> None:
        marks = {"ok": "OK  ", "warn": "WARN", "fail": "FAIL"}
        for finding in report.findings:
            print(f"[{marks[finding.status]}] {finding.area} / {finding.check}: {finding.detail}")
            if finding.fix and finding.status != "ok":
                print(f"       → {finding.fix}")
        print("\nAll checks passed." if report.ok else
              f"\n{len(report.failures())} problem(s) found; see the → lines for what to do.")
    show_result(args, report.to_dict(), for_reader)
    return EXIT_OK if report.ok else EXIT_PROBLEM


def cmd_verify_offline(args, paths, settings) -> int:
    def show(step: "StepResult") -> None:
        if args.json:
            return
        mark = "OK  " if step.ok else "FAIL"
        print(f"[{mark}] {step.name}: exit {step.returncode}, {step.seconds:.0f} s, "
              f"{len(step.events)} outside attempt(s)", flush=True)
        for event in step.events:
            print(f"       → {event.call} {event.target} ({event.level})")
        if not step.ran:
            for line in step.output_tail.strip().splitlines()[-5:]:
                print(f"       | {line}")

    tell(args, "Running Lumen's features in child processes, watched for any attempt to "
               "reach another machine (this takes a few minutes)…")
    with profile_session(paths, settings) as session:
        verification = session.verify_offline(quick=args.quick,
                                              use_strace=False if args.no_strace else None,
                                              on_step=show)
    tour = verification.tour
    show_result(args, tour.to_dict(), lambda: _print_tour(verification))
    return EXIT_OK if tour.ok else EXIT_PROBLEM


def _print_tour(verification) -> None:
    tour = verification.tour
    for event in tour.guard_refusals:
        print(f"[FAIL] Lumen's guard refused {event.call} to {event.target}")
    for name in tour.files_outside:
        print(f"[FAIL] written outside Lumen's folders: ~/{name}")
    levels = ("the C library (every name lookup, connect and send, from any library)"
              + (" and system calls (strace)" if tour.syscall_level else
                 "; strace is not available here, so system calls were not traced"))
    if tour.ok:
        print(f"\nNothing tried to leave this machine: {len(tour.steps)} steps watched at {levels}, "
              "and no file was written outside Lumen's own folders.")
    else:
        print(f"\nNOT offline-clean: {len(tour.events)} outside attempt(s), "
              f"{len(tour.files_outside)} file(s) outside Lumen's folders, "
              f"{sum(1 for s in tour.steps if not s.ran)} step(s) failed. Watched at {levels}.")
    for line in verification.server_lines():
        print(line)


def register(sub) -> None:
    doctor = sub.add_parser("doctor", help="check this installation")
    add_json_option(doctor)
    doctor.add_argument("--no-speed", action="store_true", help="skip the generation speed test")
    doctor.add_argument("--fix-permissions", action="store_true",
                        help="first make Lumen's folders (0700) and files (0600) this account's only")
    doctor.set_defaults(func=cmd_doctor)

    verify = sub.add_parser(
        "verify-offline",
        help="prove that nothing leaves this machine: run every feature watched below Python")
    verify.add_argument("--quick", action="store_true",
                        help="only the window's start-up and the doctor (under a minute)")
    verify.add_argument("--no-strace", action="store_true",
                        help="watch the C library only, not system calls")
    add_json_option(verify)
    verify.set_defaults(func=cmd_verify_offline)

