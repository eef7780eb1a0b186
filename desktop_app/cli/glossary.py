"""`lumen glossary`: the plain-language glossary (import, match, lookup, local entries)."""

from __future__ import annotations

import sys
from pathlib import Path

from .common import (EXIT_OK, EXIT_PROBLEM, add_json_option, command_session, glossary_for,
                    profile_session, progress_for, read_text, show_result)


def cmd_glossary_import(args, paths, settings) -> int:
    path = Path(args.file)
    with command_session(paths, settings) as session:
        result = session.terms.import_file(path, progress=progress_for(args))
    show_result(args, result, lambda: _print_import(result, path))
    return EXIT_OK


def _print_import(result: dict, path: Path) -> None:
    if "local_entries" in result:
        print(f"Imported {result['local_entries']} local entries from {path.name}.")
    else:
        languages = ", ".join(f"{n} {lang}" for lang, n in result["by_language"].items())
        print(f"Imported {result['topics']} topics from {result['source_file']} "
              f"(dated {result['source_date'] or 'unknown'}): {result['new_topics']} new, "
              f"{result['updated_topics']} updated; {languages}; {result['also_called']} "
              f"also-called names, {result['see_references']} see-references, "
              f"{result['groups']} group links, {result['mesh_headings']} MeSH headings.")


def cmd_glossary_match(args, paths, settings) -> int:
    text = sys.stdin.read() if args.file == "-" else read_text(Path(args.file))
    glossary = glossary_for(paths, settings)
    found = glossary.match(text)

    def for_reader() -> None:
        for m in found:
            print(f"{m.start:>7}-{m.end:<7} {m.text!r:32} → {m.term} [{m.category}, {m.source}]")
        print(f"\n{len(found)} terms found ({len({m.key for m in found})} different).")
    show_result(args, [{**m.to_dict(), "definition": glossary.by_key[m.key].definition}
                       for m in found], for_reader)
    return EXIT_OK


def cmd_glossary_lookup(args, paths, settings) -> int:
    with profile_session(paths, settings, purpose="glossary") as session:
        results = session.terms.lookup(args.term, semantic=not args.no_semantic,
                                       limit=args.limit)

    def for_reader() -> None:
        if not results:
            print(f"No glossary entry for {args.term!r}.")
        for r in results:
            e = r.entry
            print(f"{e.term}  [{e.category}; {e.source}; {r.how} match {r.score:.0f}]")
            if e.aliases or e.abbreviations:
                print(f"  also: {', '.join((*e.abbreviations, *e.aliases))}")
            print(f"  {e.definition}")
            if e.medlineplus_url:
                print(f"  MedlinePlus: {e.medlineplus_title} <{e.medlineplus_url}>")
    show_result(args, [r.to_dict() for r in results], for_reader)
    return EXIT_OK if results else EXIT_PROBLEM


def cmd_glossary_add(args, paths, settings) -> int:
    with command_session(paths, settings) as session:
        key = session.terms.save_local(term=args.term, definition=args.definition,
                                       category=args.category, aliases=args.alias or [],
                                       abbreviations=args.abbreviation or [],
                                       overrides=args.overrides, hidden=args.hide)
    print(f"Saved {key}.")
    return EXIT_OK


def cmd_glossary_delete(args, paths, settings) -> int:
    with command_session(paths, settings) as session:
        session.terms.delete_local(args.key)
    print(f"Deleted {args.key}.")
    return EXIT_OK


def cmd_glossary_export(args, paths, settings) -> int:
    with command_session(paths, settings) as session:
        count = session.terms.export_local(Path(args.out), force=args.force)
    print(f"Exported {count} local entries to {args.out}.")
    return EXIT_OK


def register(sub) -> None:
    glossary = sub.add_parser("glossary", help="the plain-language glossary")
    gsub = glossary.add_subparsers(dest="glossary_command", metavar="ACTION", required=True)
    p = gsub.add_parser("import", help="import MedlinePlus topics (mplus_topics_*.xml) or "
                                       "local entries (.toml from 'export')")
    p.add_argument("file")
    add_json_option(p)
    p.set_defaults(func=cmd_glossary_import)
    p = gsub.add_parser("match", help="find glossary terms in a text file ('-' for stdin)")
    p.add_argument("file")
    add_json_option(p)
    p.set_defaults(func=cmd_glossary_match)
    p = gsub.add_parser("lookup", help="look a word up (exact, other names, fuzzy, by meaning)")
    p.add_argument("term")
    p.add_argument("--limit", type=int, default=5)
    p.add_argument("--no-semantic", action="store_true", help="skip the lookup by meaning")
    add_json_option(p)
    p.set_defaults(func=cmd_glossary_lookup)
    p = gsub.add_parser("add", help="add a local entry, or edit a shipped/imported one")
    p.add_argument("--term", required=True)
    p.add_argument("--definition", required=True)
    p.add_argument("--category", required=True)
    p.add_argument("--alias", action="append")
    p.add_argument("--abbreviation", action="append")
    p.add_argument("--overrides", help="key of the entry this edit replaces (see lookup --json)")
    p.add_argument("--hide", action="store_true", help="hide the overridden entry instead")
    p.set_defaults(func=cmd_glossary_add)
    p = gsub.add_parser("delete", help="delete a local addition or edit (its key: local:N, "
                                       "printed by 'add')")
    p.add_argument("key")
    p.set_defaults(func=cmd_glossary_delete)
    p = gsub.add_parser("export", help="write local additions and edits to a .toml file")
    p.add_argument("out")
    p.add_argument("--force", action="store_true", help="replace OUT if it exists")
    p.set_defaults(func=cmd_glossary_export)

