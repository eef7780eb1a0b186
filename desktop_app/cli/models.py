"""`lumen models`: the models Lumen knows, their files and roles (Session.models, as the
window's Models page)."""

from __future__ import annotations

import os
import sys
from pathlib import Path

from ..core.errors import LumenError
from ..core.results import GENERATION_ROLES, ROLES

from .common import (EXIT_OK, EXIT_PROBLEM, add_json_option, command_session, profile_session,
                    progress_for, show_result)


def cmd_models_provision(args, paths, settings) -> int:
    with profile_session(paths, settings, store=False) as session:
        results = session.models.provision(progress=progress_for(args))

    def for_reader() -> None:
        for r in results:
            print(f"{r.action:8} {r.model_id}: {r.path}")
    show_result(args, [{"model": r.model_id, "file": r.file, "path": str(r.path),
                        "action": r.action} for r in results], for_reader)
    return EXIT_OK


def cmd_models_list(args, paths, settings) -> int:
    with profile_session(paths, settings, store=False) as session:
        rows = session.models.rows()

    def for_reader() -> None:
        for row in rows:
            roles = ", ".join(row["roles"]) or "-"
            print(f"{row['id']:34} {row['state']:10} roles: {roles:28} {row['name']} "
                  f"[{row['source']}]")
    show_result(args, rows, for_reader)
    return EXIT_OK


def cmd_models_verify(args, paths, settings) -> int:
    with profile_session(paths, settings, store=False) as session:
        rows = [r for r in session.models.rows(verify=True)
                if r["state"] not in ("not added", "on server")]
    bad = [r for r in rows if r["state"] != "ok"]

    def for_reader() -> None:
        for row in rows:
            print(f"{row['id']:34} {row['state']}")
        if bad:
            print("\nRun 'lumen models provision' for embedded models, or add damaged models "
                  "again.")
    show_result(args, rows, for_reader)
    return EXIT_PROBLEM if bad else EXIT_OK


def cmd_models_add(args, paths, settings) -> int:
    with profile_session(paths, settings) as session:
        spec = session.models.add(Path(args.path), roles=args.role or [],
                                  chat_format=args.chat_format, model_id=args.id,
                                  progress=progress_for(args))

    def for_reader() -> None:
        print(f"Added {spec.id}: {spec.architecture}, {spec.quantisation}, context "
              f"{spec.context_length}, chat format "
              f"{spec.chat_format or 'from the file'}; sha256 {spec.files[0].sha256}")
        if args.role:
            print(f"Roles: {', '.join(args.role)}")
    show_result(args, spec.to_toml(), for_reader)
    return EXIT_OK


def _api_key(args) -> str:
    """The key from an environment variable or standard input, never from the command
    line itself (where shell history and the process list would show it)."""
    if args.api_key_env:
        value = os.environ.get(args.api_key_env, "")
        if not value:
            raise LumenError(f"The environment variable {args.api_key_env} is empty.",
                             "Set it to the server's API key, or use --api-key-stdin.")
        return value
    if args.api_key_stdin:
        value = sys.stdin.readline().strip()
        if not value:
            raise LumenError("No API key came on standard input.",
                             "Pipe the key in, for example from your password manager.")
        return value
    return ""


def cmd_models_add_server(args, paths, settings) -> int:
    from ..core.results import keyring_available

    api_key = _api_key(args)
    # A key goes into the keyring, or else into the database, which must then be open.
    opened = (command_session(paths, settings) if api_key and not keyring_available()
              else profile_session(paths, settings))
    with opened as session:
        spec = session.models.add_server(
            args.url, name=args.name, model=args.model, roles=args.role or [],
            ca_bundle=args.ca_bundle or "", api_key=api_key,
            context_length=args.context or 0, model_id=args.id)

    def for_reader() -> None:
        from ..core.results import SERVER_NOTES

        context = (f"context {spec.context_length}" if spec.context_length else
                   f"context not said by the server: Lumen uses {settings.context_size} "
                   "(--context N to set it)")
        print(f"Added {spec.id}: '{spec.server_model}' on {spec.endpoint} "
              f"({spec.server_kind}); {context}; API key: "
              f"{ {'keyring': 'in the keyring', 'database': 'in the encrypted database'}.get(spec.api_key, 'none')}")
        if args.role:
            print(f"Roles: {', '.join(args.role)}")
        if spec.server_kind in SERVER_NOTES:
            print(f"Note: {SERVER_NOTES[spec.server_kind]}")
    show_result(args, spec.to_toml(), for_reader)
    return EXIT_OK


def cmd_models_role(args, paths, settings) -> int:
    with profile_session(paths, settings) as session:
        session.models.assign_role(args.role, args.model_id)
    print(f"The {args.role} role now uses {args.model_id}.")
    return EXIT_OK


def cmd_models_remove(args, paths, settings) -> int:
    with profile_session(paths, settings) as session:
        session.models.remove(args.model_id)
    print(f"Removed {args.model_id} from Lumen's list (the file itself was not deleted).")
    return EXIT_OK


def register(sub) -> None:
    models = sub.add_parser("models", help="list, provision, add and verify models")
    msub = models.add_subparsers(dest="models_command", metavar="ACTION", required=True)
    p = msub.add_parser("provision", help="copy the embedded models into the models folder")
    add_json_option(p)
    p.set_defaults(func=cmd_models_provision)
    p = msub.add_parser("list", help="list known models and their roles")
    add_json_option(p)
    p.set_defaults(func=cmd_models_list)
    p = msub.add_parser("verify", help="check every model file against its sha256")
    add_json_option(p)
    p.set_defaults(func=cmd_models_verify)
    p = msub.add_parser("add", help="check and register your own GGUF model")
    p.add_argument("path", help="the .gguf file")
    p.add_argument("--role", action="append", choices=GENERATION_ROLES,
                   help="assign this role to the model (repeatable)")
    p.add_argument("--chat-format", help="chat format when the file has no template "
                                          "(chatml, phi3, gemma, llama3)")
    p.add_argument("--id", help="model id to use (default: from the file name)")
    add_json_option(p)
    p.set_defaults(func=cmd_models_add)
    p = msub.add_parser("add-server", help="use a model on an inference server IT runs "
                                            "(llama-server, vLLM, Ollama: OpenAI-compatible)")
    p.add_argument("url", help="the server's address, e.g. https://llm.hospital.local:8443")
    p.add_argument("--name", required=True, help="a name for it in Lumen")
    p.add_argument("--model", required=True, help="the model's name on the server")
    p.add_argument("--role", action="append", choices=GENERATION_ROLES,
                   help="assign this role to the model (repeatable)")
    p.add_argument("--ca-bundle", metavar="FILE",
                   help="PEM certificates that signed the server's (https; default: the system's)")
    key = p.add_mutually_exclusive_group()
    key.add_argument("--api-key-env", metavar="VAR",
                     help="read the server's API key from this environment variable")
    key.add_argument("--api-key-stdin", action="store_true",
                     help="read the server's API key from standard input")
    p.add_argument("--context", type=int, metavar="TOKENS",
                   help="the model's context length, where the server does not say it")
    p.add_argument("--id", help="model id to use (default: from --name)")
    add_json_option(p)
    p.set_defaults(func=cmd_models_add_server)
    p = msub.add_parser("role", help="assign a model to a role")
    p.add_argument("role", choices=ROLES)
    p.add_argument("model_id")
    p.set_defaults(func=cmd_models_role)
    p = msub.add_parser("remove", help="forget a model you added (the file stays)")
    p.add_argument("model_id")
    p.set_defaults(func=cmd_models_remove)

