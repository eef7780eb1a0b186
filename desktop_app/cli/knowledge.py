"""`lumen knowledge` and `lumen cases`: the knowledge base, the case base and the answers
drawn from them (DoctorRAG, core/knowledge; session.library and session.ask_knowledge, as
the Knowledge tab)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from ..core.errors import LumenError
from .common import (EXIT_OK, add_json_option, column_mapping, command_session,
                    progress_for, progress_printer, read_text, show_result, tell)


def cmd_knowledge_add(args, paths, settings) -> int:
    if not args.files and not args.glossary:
        raise LumenError("Nothing to add.", "Name documents (.txt, .md, .pdf, .docx) or use --glossary.")
    declarative = True if args.declarative else None
    added = []
    with command_session(paths, settings) as session:
        progress = progress_for(args)
        for name in args.files:
            document, new = session.library.add_file(Path(name), declarative=declarative,
                                                     progress=progress)
            added.append({**document.to_dict(), "new": new})
        if args.glossary:
            document, new = session.library.add_glossary(limit=args.limit,
                                                         declarative=declarative,
                                                         progress=progress)
            added.append({**document.to_dict(), "new": new})

    def for_reader() -> None:
        for doc in added:
            if not doc["new"]:
                print(f"{doc['name']} is already in the knowledge base ({doc['id'][:8]}); not added again.")
                continue
            chapters = ", ".join(f"{code} ×{n}" for code, n in doc["chapters"].items())
            print(f"Added {doc['name']}: {doc['chunks']} pieces"
                  f"{' as statements' if doc['declarative'] else ''} ({chapters}); id {doc['id'][:8]}.")
    show_result(args, added, for_reader)
    return EXIT_OK


def cmd_knowledge_list(args, paths, settings) -> int:
    with command_session(paths, settings) as session:
        documents = [d.to_dict() for d in session.library.documents()]
        sets = [c.to_dict() for c in session.library.case_sets()]

    def for_reader() -> None:
        if not documents and not sets:
            print("The knowledge base is empty. Add documents with 'lumen knowledge add FILES' and past "
                  "cases with 'lumen cases import FILE'.")
        for doc in documents:
            print(f"{doc['id'][:8]}  {doc['added_at']}  {doc['chunks']:5} pieces  {doc['name']}")
        for case_set in sets:
            print(f"{case_set['id'][:8]}  {case_set['imported_at']}  {case_set['cases']:5} cases   "
                  f"{case_set['name']}")
    show_result(args, {"documents": documents, "case_sets": sets}, for_reader)
    return EXIT_OK


def cmd_knowledge_remove(args, paths, settings) -> int:
    with command_session(paths, settings) as session:
        document = session.library.remove_document(args.id)
    print(f"Removed {document.name} ({document.chunks} pieces).")
    return EXIT_OK


def cmd_knowledge_reindex(args, paths, settings) -> int:
    with command_session(paths, settings) as session:
        counts = session.library.reindex(progress=progress_printer(True))
    print(f"Rebuilt the vector index: {counts['statements']} statements, {counts['cases']} cases.")
    return EXIT_OK


def knowledge_printer(enabled: bool):
    def on_event(kind: str, data: dict) -> None:
        if not enabled:
            return
        if kind == "tag":
            print(f"  ICD-10 chapter: {data['chapter']} ({data['title']})", file=sys.stderr)
        elif kind == "round":
            r = data["round"]
            print(f"  Refinement round {r['number']}: context critique: {r['context_critique'][:160]}",
                  file=sys.stderr)
    return on_event


def cmd_knowledge_ask(args, paths, settings) -> int:
    from ..core.results import model_calls_needed, parse_labels

    labels: list[str] = []
    if args.labels_file:
        labels = parse_labels(read_text(Path(args.labels_file)))
    elif args.labels:
        labels = parse_labels(args.labels)
    mode = "diagnosis" if (args.diagnosis or labels) else "answer"
    refine = True if args.refine else None
    if refine:
        calls = model_calls_needed(settings, args.ablation, True, args.rounds)
        tell(args, f"  Refinement on: this question takes {calls} model calls.")
    with command_session(paths, settings) as session:
        result = session.ask_knowledge(args.question, mode=mode, labels=labels,
                                       ablation=args.ablation, refine=refine, rounds=args.rounds,
                                       on_event=knowledge_printer(not args.json),
                                       progress=progress_for(args))

    def for_reader() -> None:
        if mode == "diagnosis":
            print(f"Diagnosis: {result.diagnosis}")
        else:
            print(result.answer)
        print()
        retrieval = result.retrieval
        if retrieval.chapter:
            print(f"Question's ICD-10 chapter: {retrieval.chapter} "
                  f"({retrieval.same_chapter} statement(s) from it"
                  f"{'; others filled in from other chapters' if retrieval.fallback_used else ''}).")
        if result.trace.context.get("note"):
            print(f"Note: {result.trace.context['note']}")
        print("References:")
        for source in result.cited_sources():
            if source.ref.startswith("K"):
                print(f"  [{source.ref}] {source.document} ({source.chapter}, similarity {source.score:.2f}): "
                      f"{source.statement[:200]}")
            else:
                print(f"  [{source.ref}] case {source.key} (similarity {source.score:.2f}): "
                      f"{source.diagnosis or 'no diagnosis recorded'}")
        print(result.trace.notice)
    show_result(args, result.to_dict(), for_reader)
    return EXIT_OK


def cmd_cases_import(args, paths, settings) -> int:
    mapping = column_mapping(args.map)
    with command_session(paths, settings) as session:
        case_set, case_file, new = session.library.import_cases(
            Path(args.file), mapping, progress=progress_for(args))
    removals = [{"record": r.key, **item} for r in case_file.records for item in r.removals]
    # What was removed is the identifiers themselves: printed only when asked for.
    show_result(args, {**case_set.to_dict(), "new": new, "columns": case_file.columns_used,
                       "columns_not_imported": case_file.columns_dropped,
                       **({"removals": removals} if args.show_removed else {})},
                lambda: _print_case_import(args, case_set, case_file, new, removals))
    return EXIT_OK


def _print_case_import(args, case_set, case_file, new: bool, removals: list[dict]) -> None:
    if not new:
        print(f"{case_file.name} was imported before (set {case_set.id[:8]}); nothing was added.")
        return
    counts = ", ".join(f"{n} {kind.replace('_', ' ')}(s)" for kind, n in case_set.removals.items())
    print(f"Imported {case_set.count} cases from {case_file.name} as set {case_set.id[:8]}.")
    print(f"Columns used: {', '.join(f'{k}={v}' for k, v in case_file.columns_used.items())}.")
    if case_file.columns_dropped:
        print(f"Columns not imported: {', '.join(case_file.columns_dropped)}.")
    print(f"De-identification removed: {counts or 'nothing'}.")
    if args.show_removed:
        for item in removals:
            print(f"  {item['record']}  {item['field']:10} {item['kind']:14} "
                  f"{item['text']!r} -> {item['replacement']}")
    elif removals:
        print("Run again with --show-removed (or see the Knowledge tab) to review each removal.")


def cmd_cases_list(args, paths, settings) -> int:
    with command_session(paths, settings) as session:
        if args.set:
            records = session.library.cases(args.set)
            rows = [{"key": c.record.key, "complaint": c.record.complaint,
                     "diagnosis": c.record.diagnosis, "treatment": c.record.treatment,
                     "demographics": c.record.demographics,
                     # the identifiers removed, only when asked for
                     "removals": [item if args.show_removed else
                                  {k: v for k, v in item.items() if k != "text"}
                                  for item in c.record.removals]}
                    for c in records]

            def for_reader() -> None:
                for row in rows:
                    print(f"{row['key']}: {row['diagnosis']} | {row['complaint'][:100]}")
            show_result(args, rows, for_reader)
            return EXIT_OK
        sets = [c.to_dict() for c in session.library.case_sets()]

    def for_reader() -> None:
        for case_set in sets:
            print(f"{case_set['id'][:8]}  {case_set['imported_at']}  {case_set['cases']:5} cases  "
                  f"{case_set['name']}  removed {json.dumps(case_set['removed'])}")
    show_result(args, sets, for_reader)
    return EXIT_OK


def cmd_cases_remove(args, paths, settings) -> int:
    with command_session(paths, settings) as session:
        case_set = session.library.remove_case_set(args.id)
    print(f"Removed {case_set.name} ({case_set.count} cases).")
    return EXIT_OK


def register(sub) -> None:
    from ..core.choices import ABLATIONS

    # "knowledge", as the Knowledge tab and core/knowledge; "kb" (its first name) still
    # works for a release.
    knowledge = sub.add_parser("knowledge", aliases=["kb"],
                               help="the knowledge base: add documents, ask questions "
                                    "(DoctorRAG; also: kb)")
    ksub = knowledge.add_subparsers(dest="knowledge_command", metavar="ACTION", required=True)
    p = ksub.add_parser("add", help="add documents (.txt, .md, .pdf, .docx) or the glossary's topics")
    p.add_argument("files", nargs="*")
    p.add_argument("--glossary", action="store_true", help="add the glossary's topics too")
    p.add_argument("--limit", type=int, help="only the first N glossary topics")
    p.add_argument("--declarative", action="store_true",
                   help="rewrite each piece as statements first (slower; see the setting)")
    add_json_option(p)
    p.set_defaults(func=cmd_knowledge_add)
    p = ksub.add_parser("list", help="documents and case sets in the knowledge base")
    add_json_option(p)
    p.set_defaults(func=cmd_knowledge_list)
    p = ksub.add_parser("remove", help="remove a document (its id from 'lumen knowledge list')")
    p.add_argument("id")
    p.set_defaults(func=cmd_knowledge_remove)
    p = ksub.add_parser("reindex", help="rebuild the vector index from the encrypted database")
    p.set_defaults(func=cmd_knowledge_reindex)
    p = ksub.add_parser("ask", help="answer a question from the knowledge base and similar cases")
    p.add_argument("question")
    p.add_argument("--diagnosis", action="store_true",
                   help="pick a diagnosis from --labels or --labels-file instead of answering")
    p.add_argument("--labels", help="diagnoses to choose from, separated by semicolons")
    p.add_argument("--labels-file", help="diagnoses to choose from, one per line")
    p.add_argument("--ablation", choices=tuple(ABLATIONS), default="full",
                   help="switch a part of retrieval off, as in the paper's ablation")
    p.add_argument("--refine", action="store_true", help="refine the answer with Med-TextGrad")
    p.add_argument("--rounds", type=int, help="Med-TextGrad rounds (default: the setting)")
    add_json_option(p, "the answer, its sources and trace")
    p.set_defaults(func=cmd_knowledge_ask)

    cases = sub.add_parser("cases", help="the case base of past patients (de-identified on import)")
    csub = cases.add_subparsers(dest="cases_command", metavar="ACTION", required=True)
    p = csub.add_parser("import", help="import cases from a CSV or JSONL file")
    p.add_argument("file")
    p.add_argument("--map", action="append", metavar="FIELD=COLUMN",
                   help="column for key, complaint, diagnosis, treatment or name")
    p.add_argument("--show-removed", action="store_true",
                   help="list every de-identification removal (with --json too: without it, "
                        "the removed identifiers are left out)")
    add_json_option(p)
    p.set_defaults(func=cmd_cases_import)
    p = csub.add_parser("list", help="case sets, or the cases of one set (--set ID)")
    p.add_argument("--set")
    add_json_option(p)
    p.add_argument("--show-removed", action="store_true",
                   help="with --set: include the identifiers de-identification removed")
    p.set_defaults(func=cmd_cases_list)
    p = csub.add_parser("remove", help="remove a case set")
    p.add_argument("id")
    p.set_defaults(func=cmd_cases_remove)

