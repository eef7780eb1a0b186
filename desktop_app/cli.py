"""The `lumen` command line: a thin layer over desktop_app.core.

With no subcommand it opens the window.  Every subcommand calls the same core
functions the window does; `--json` gives machine-readable output.
"""

from __future__ import annotations

# The network guard and offline environment go in before any third-party import.
from .core import offline

offline.activate()

import argparse  # noqa: E402
import getpass  # noqa: E402
import json  # noqa: E402
import os  # noqa: E402
import sys  # noqa: E402
from pathlib import Path  # noqa: E402
from typing import Any, Sequence  # noqa: E402

from . import __version__  # noqa: E402
from .core.config import Paths, Settings  # noqa: E402
from .core.errors import LumenError, PassphraseRequired  # noqa: E402
from .core.logs import configure_logging  # noqa: E402
from .core.progress import ProgressReport  # noqa: E402

EXIT_OK, EXIT_PROBLEM, EXIT_ERROR = 0, 1, 2


def _print_json(value: Any) -> None:
    print(json.dumps(value, indent=2, default=str))


def _progress_printer(enabled: bool):
    last = {"message": None}

    def show(update: ProgressReport) -> None:
        if enabled and update.message != last["message"]:
            last["message"] = update.message
            print(f"  {update.message}…", file=sys.stderr)
    return show


def _passphrase_for(paths: Paths) -> str | None:
    """Ask on the terminal when the database needs a passphrase and none is set."""
    from .core.store import KeyManager
    from .core.store.keys import PASSPHRASE_ENV

    keys = KeyManager(paths.database_file)
    if not keys.needs_passphrase() or not sys.stdin.isatty():
        return None
    if keys.is_new():
        print("Lumen keeps patient text in an encrypted database. This computer has no OS "
              "keyring, so choose a passphrase (it cannot be recovered).", file=sys.stderr)
        first = getpass.getpass("New passphrase: ")
        if getpass.getpass("Repeat passphrase: ") != first:
            raise LumenError("The two passphrases differ.", "Run the command again.")
        return first
    return getpass.getpass(f"Passphrase for Lumen's database (or set {PASSPHRASE_ENV}): ")


# ---- commands --------------------------------------------------------------------------


def cmd_doctor(args: argparse.Namespace, paths: Paths, settings: Settings) -> int:
    from .core.doctor import run_doctor

    passphrase = None
    try:
        passphrase = _passphrase_for(paths)
    except PassphraseRequired:
        pass  # reported as a finding
    report = run_doctor(paths, settings, passphrase=passphrase, measure_speed=not args.no_speed,
                        progress=_progress_printer(not args.json))
    if args.json:
        _print_json(report.to_dict())
    else:
        marks = {"ok": "OK  ", "warn": "WARN", "fail": "FAIL"}
        for finding in report.findings:
            print(f"[{marks[finding.status]}] {finding.area} / {finding.check}: {finding.detail}")
            if finding.fix and finding.status != "ok":
                print(f"       → {finding.fix}")
        print("\nAll checks passed." if report.ok else
              f"\n{len(report.failures())} problem(s) found; see the → lines for what to do.")
    return EXIT_OK if report.ok else EXIT_PROBLEM


def cmd_models_provision(args, paths, settings) -> int:
    from .core.models import manage

    results = manage.provision(paths, settings, progress=_progress_printer(not args.json))
    if args.json:
        _print_json([{"model": r.model_id, "file": r.file, "path": str(r.path), "action": r.action}
                     for r in results])
    else:
        for r in results:
            print(f"{r.action:8} {r.model_id}: {r.path}")
    return EXIT_OK


def _model_rows(paths: Paths, settings: Settings, verify: bool) -> list[dict[str, Any]]:
    from .core.models import manage
    from .core.models.catalog import ModelRegistry

    registry = ModelRegistry(paths, settings)
    cache = manage.hash_cache(paths)
    rows = []
    for spec in registry.all():
        statuses = manage.verify_spec(registry, spec, cache, force=verify) if (
            spec.files and verify) else []
        present = bool(spec.files) and all(registry.file_path(spec, f).exists() for f in spec.files)
        rows.append({
            "id": spec.id, "name": spec.name, "kind": spec.kind,
            "roles": registry.roles_of(spec.id), "can_play": list(spec.roles),
            "licence": spec.licence, "source": "embedded" if spec.embedded else spec.source,
            "quantisation": spec.quantisation, "context_length": spec.context_length,
            "chat_format": spec.chat_format,
            "files": [{"name": f.name, "path": str(registry.file_path(spec, f)), "sha256": f.sha256}
                      for f in spec.files],
            "state": ("not added" if not spec.files else
                      ("ok" if all(s.ok for s in statuses) else
                       "; ".join(s.describe() for s in statuses if not s.ok)) if verify else
                      ("present" if present else "missing")),
        })
    return rows


def cmd_models_list(args, paths, settings) -> int:
    rows = _model_rows(paths, settings, verify=False)
    if args.json:
        _print_json(rows)
        return EXIT_OK
    for row in rows:
        roles = ", ".join(row["roles"]) or "-"
        print(f"{row['id']:34} {row['state']:10} roles: {roles:28} {row['name']} [{row['source']}]")
    return EXIT_OK


def cmd_models_verify(args, paths, settings) -> int:
    rows = [r for r in _model_rows(paths, settings, verify=True) if r["state"] != "not added"]
    if args.json:
        _print_json(rows)
    else:
        for row in rows:
            print(f"{row['id']:34} {row['state']}")
    bad = [r for r in rows if r["state"] != "ok"]
    if bad and not args.json:
        print("\nRun 'lumen models provision' for embedded models, or add damaged models again.")
    return EXIT_PROBLEM if bad else EXIT_OK


def cmd_models_add(args, paths, settings) -> int:
    from .core.models import manage

    spec, settings = manage.add_gguf(paths, settings, Path(args.path), roles=args.role or [],
                                     chat_format=args.chat_format, model_id=args.id,
                                     progress=_progress_printer(not args.json))
    _audit(paths, "model.added", {"model": spec.id, "sha256": spec.files[0].sha256,
                                  "roles": args.role or []})
    if args.json:
        _print_json(spec.to_toml())
    else:
        print(f"Added {spec.id}: {spec.architecture}, {spec.quantisation}, context "
              f"{spec.context_length}, chat format "
              f"{spec.chat_format or 'from the file'}; sha256 {spec.files[0].sha256}")
        if args.role:
            print(f"Roles: {', '.join(args.role)}")
    return EXIT_OK


def cmd_models_role(args, paths, settings) -> int:
    from .core.models import manage

    manage.assign_role(paths, settings, args.role, args.model_id)
    _audit(paths, "model.role_assigned", {"model": args.model_id, "role": args.role})
    print(f"The {args.role} role now uses {args.model_id}.")
    return EXIT_OK


def cmd_models_remove(args, paths, settings) -> int:
    from .core.models.catalog import ModelRegistry

    registry = ModelRegistry(paths, settings)
    in_roles = registry.roles_of(args.model_id)
    if in_roles:
        raise LumenError(f"'{args.model_id}' is in use for: {', '.join(in_roles)}.",
                         "Give those roles another model first ('lumen models role ROLE MODEL').")
    registry.remove_user_model(args.model_id)
    print(f"Removed {args.model_id} from Lumen's list (the file itself was not deleted).")
    return EXIT_OK


def cmd_settings_show(args, paths, settings) -> int:
    if args.json:
        _print_json(settings.to_dict())
        return EXIT_OK
    for f in Settings.describe():
        print(f"{f.name} = {getattr(settings, f.name)!r}    (default {f.default!r})")
        print(f"    {f.metadata['help']}")
    print(f"\nSettings file: {paths.settings_file}")
    return EXIT_OK


def cmd_settings_set(args, paths, settings) -> int:
    updated = settings.with_value(args.key, args.value)
    updated.save(paths)
    print(f"{args.key} = {getattr(updated, args.key)!r}")
    return EXIT_OK


def cmd_settings_reset(args, paths, settings) -> int:
    Settings().save(paths)
    print("Settings are back to their defaults.")
    return EXIT_OK


def cmd_audit(args, paths, settings) -> int:
    from .core.store import open_store

    with open_store(paths.database_file, _passphrase_for(paths)) as store:
        entries = store.audit_entries(args.limit)
    if args.json:
        _print_json(entries)
    else:
        for e in entries:
            print(f"{e['at']}  {e['actor']:12} {e['action']:24} {json.dumps(e['detail'])}")
    return EXIT_OK


def _audit(paths: Paths, action: str, detail: dict[str, Any]) -> None:
    """Record a change in the audit log (asking for the passphrase on a terminal)."""
    from .core.store import KeyManager, open_store

    if not KeyManager(paths.database_file).database_exists():
        return  # no database yet: nothing to audit into; it is created on first start
    try:
        with open_store(paths.database_file, _passphrase_for(paths)) as store:
            store.audit(action, detail)
    except LumenError as exc:
        print(f"Warning: the change was made, but it could not be written to the audit log: "
              f"{exc.message} {exc.fix}", file=sys.stderr)


# ---- parser -----------------------------------------------------------------------------


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

    doctor = sub.add_parser("doctor", help="check this installation")
    doctor.add_argument("--json", action="store_true")
    doctor.add_argument("--no-speed", action="store_true", help="skip the generation speed test")
    doctor.set_defaults(func=cmd_doctor)

    models = sub.add_parser("models", help="list, provision, add and verify models")
    msub = models.add_subparsers(dest="models_command", metavar="ACTION", required=True)
    p = msub.add_parser("provision", help="copy the embedded models into the models folder")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_models_provision)
    p = msub.add_parser("list", help="list known models and their roles")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_models_list)
    p = msub.add_parser("verify", help="check every model file against its sha256")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_models_verify)
    p = msub.add_parser("add", help="check and register your own GGUF model")
    p.add_argument("path", help="the .gguf file")
    p.add_argument("--role", action="append", choices=("generator", "reviewer", "judge"),
                   help="assign this role to the model (repeatable)")
    p.add_argument("--chat-format", help="chat format when the file has no template "
                                          "(chatml, phi3, gemma, llama3)")
    p.add_argument("--id", help="model id to use (default: from the file name)")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_models_add)
    p = msub.add_parser("role", help="assign a model to a role")
    p.add_argument("role", choices=("generator", "reviewer", "judge", "embedder"))
    p.add_argument("model_id")
    p.set_defaults(func=cmd_models_role)
    p = msub.add_parser("remove", help="forget a model you added (the file stays)")
    p.add_argument("model_id")
    p.set_defaults(func=cmd_models_remove)

    settings = sub.add_parser("settings", help="show or change settings")
    ssub = settings.add_subparsers(dest="settings_command", metavar="ACTION", required=True)
    p = ssub.add_parser("show", help="every setting with its default and meaning")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_settings_show)
    p = ssub.add_parser("set", help="change one setting")
    p.add_argument("key")
    p.add_argument("value")
    p.set_defaults(func=cmd_settings_set)
    p = ssub.add_parser("reset", help="go back to the defaults")
    p.set_defaults(func=cmd_settings_reset)

    audit = sub.add_parser("audit", help="show the audit log (who did what, when)")
    audit.add_argument("--limit", type=int, default=50)
    audit.add_argument("--json", action="store_true")
    audit.set_defaults(func=cmd_audit)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        paths = Paths.resolve(args.profile)
        if args.profile:
            # Child processes and the GUI see the same profile.
            os.environ["LUMEN_HOME"] = str(Path(args.profile).expanduser().resolve())
        paths.ensure()
        settings = Settings.load(paths)
        configure_logging(paths, settings.log_level,
                          console_level=None if args.command is None else "WARNING")
        if args.command is None:
            from .gui.app import run_gui

            return run_gui(paths, settings, selftest=args.selftest)
        return args.func(args, paths, settings)
    except LumenError as exc:
        print(f"Error: {exc.message}", file=sys.stderr)
        if exc.fix:
            print(f"What to do: {exc.fix}", file=sys.stderr)
        if args.command is None and not args.selftest and os.environ.get("QT_QPA_PLATFORM") != "offscreen":
            from .gui.app import show_startup_error

            show_startup_error(exc)
        return EXIT_ERROR
    except KeyboardInterrupt:
        print("Interrupted.", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
