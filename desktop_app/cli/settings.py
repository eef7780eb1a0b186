"""`lumen settings`: every setting with its default and meaning; changes saved and
audited by the Session, as the window's Settings dialog does."""

from __future__ import annotations

from ..core.results import Settings
from .common import EXIT_OK, add_json_option, profile_session, show_result


def cmd_settings_show(args, paths, settings) -> int:
    def for_reader() -> None:
        for f in Settings.describe():
            print(f"{f.name} = {getattr(settings, f.name)!r}    (default {f.default!r})")
            print(f"    {f.metadata['help']}")
        print(f"\nSettings file: {paths.settings_file}")
    show_result(args, settings.to_dict(), for_reader)
    return EXIT_OK


def cmd_settings_set(args, paths, settings) -> int:
    updated = settings.with_value(args.key, args.value)  # a bad value is refused first
    with profile_session(paths, settings) as session:
        session.change_settings(updated)
    print(f"{args.key} = {getattr(updated, args.key)!r}")
    return EXIT_OK


def cmd_settings_reset(args, paths, settings) -> int:
    with profile_session(paths, settings) as session:
        session.reset_settings()
    print("Settings are back to their defaults.")
    return EXIT_OK


def register(sub) -> None:
    settings = sub.add_parser("settings", help="show or change settings")
    ssub = settings.add_subparsers(dest="settings_command", metavar="ACTION", required=True)
    p = ssub.add_parser("show", help="every setting with its default and meaning")
    add_json_option(p)
    p.set_defaults(func=cmd_settings_show)
    p = ssub.add_parser("set", help="change one setting")
    p.add_argument("key")
    p.add_argument("value")
    p.set_defaults(func=cmd_settings_set)
    p = ssub.add_parser("reset", help="go back to the defaults")
    p.set_defaults(func=cmd_settings_reset)

