"""`lumen models`: the models Lumen knows, their files and roles (Session.models, as the
window's Models page)."""

from __future__ import annotations

from pathlib import Path

from .common import EXIT_OK, EXIT_PROBLEM, profile_session, print_json, progress_printer


def cmd_models_provision(args, paths, settings) -> int:
    results = profile_session(paths, settings, store=False).models.provision(progress=progress_printer(not args.json))
    if args.json:
        print_json([{"model": r.model_id, "file": r.file, "path": str(r.path), "action": r.action}
                    for r in results])
    else:
        for r in results:
            print(f"{r.action:8} {r.model_id}: {r.path}")
    return EXIT_OK


def cmd_models_list(args, paths, settings) -> int:
    rows = profile_session(paths, settings, store=False).models.rows()
    if args.json:
        print_json(rows)
        return EXIT_OK
    for row in rows:
        roles = ", ".join(row["roles"]) or "-"
        print(f"{row['id']:34} {row['state']:10} roles: {roles:28} {row['name']} [{row['source']}]")
    return EXIT_OK


def cmd_models_verify(args, paths, settings) -> int:
    rows = [r for r in profile_session(paths, settings, store=False).models.rows(verify=True)
            if r["state"] != "not added"]
    if args.json:
        print_json(rows)
    else:
        for row in rows:
            print(f"{row['id']:34} {row['state']}")
    bad = [r for r in rows if r["state"] != "ok"]
    if bad and not args.json:
        print("\nRun 'lumen models provision' for embedded models, or add damaged models again.")
    return EXIT_PROBLEM if bad else EXIT_OK


def cmd_models_add(args, paths, settings) -> int:
    with profile_session(paths, settings) as session:
        spec = session.models.add(Path(args.path), roles=args.role or [],
                                  chat_format=args.chat_format, model_id=args.id,
                                  progress=progress_printer(not args.json))
    if args.json:
        print_json(spec.to_toml())
    else:
        print(f"Added {spec.id}: {spec.architecture}, {spec.quantisation}, context "
              f"{spec.context_length}, chat format "
              f"{spec.chat_format or 'from the file'}; sha256 {spec.files[0].sha256}")
        if args.role:
            print(f"Roles: {', '.join(args.role)}")
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

