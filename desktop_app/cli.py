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
from .core.config import Paths, Settings, private_files  # noqa: E402
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
    from .core.config import make_private
    from .core.doctor import run_doctor

    if args.fix_permissions:
        for path in make_private(paths):
            print(f"Made private: {path}", file=sys.stderr)
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


def cmd_verify_offline(args, paths, settings) -> int:
    from .core import netprobe

    def show(step: "netprobe.StepResult") -> None:
        if args.json:
            return
        mark = "OK  " if step.ok else "FAIL"
        print(f"[{mark}] {step.name}: exit {step.returncode}, {step.seconds:.0f} s, "
              f"{len(step.events)} outside attempt(s)", flush=True)
        for event in step.events:
            print(f"       → {event.call} {event.target} ({event.level})")
        if step.returncode != 0:
            for line in step.output_tail.strip().splitlines()[-5:]:
                print(f"       | {line}")

    if not args.json:
        print("Running Lumen's features in child processes, watched for any attempt to reach "
              "another machine (this takes a few minutes)…", file=sys.stderr)
    tour = netprobe.run_tour(paths, settings, quick=args.quick,
                             use_strace=False if args.no_strace else None, on_step=show)
    _audit(paths, "offline.verified", {"ok": tour.ok, "attempts": len(tour.events),
                                       "files_outside": len(tour.files_outside),
                                       "system_calls": tour.syscall_level, "quick": args.quick})
    if args.json:
        _print_json(tour.to_dict())
        return EXIT_OK if tour.ok else EXIT_PROBLEM
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
              f"{sum(1 for s in tour.steps if s.returncode)} step(s) failed. Watched at {levels}.")
    return EXIT_OK if tour.ok else EXIT_PROBLEM


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
    _save_settings(paths, settings, updated)
    print(f"{args.key} = {getattr(updated, args.key)!r}")
    return EXIT_OK


def cmd_settings_reset(args, paths, settings) -> int:
    _save_settings(paths, settings, Settings())
    print("Settings are back to their defaults.")
    return EXIT_OK


def _save_settings(paths: Paths, old: Settings, new: Settings) -> None:
    """Save settings and record the names of those that changed in the audit log."""
    changed = new.changed_from(old)
    new.save(paths)
    if changed:
        _audit(paths, "settings.changed", {"settings": changed, "from": "command line"})


def _open_store_for_glossary(paths: Paths, required: bool):
    """The store, for imported and local entries.  Optional for match and lookup: without
    it they use Lumen's own glossary and say so."""
    from .core.store import KeyManager, open_store

    if not required and not KeyManager(paths.database_file).database_exists():
        return None
    try:
        return open_store(paths.database_file, _passphrase_for(paths))
    except LumenError as exc:
        if required:
            raise
        print(f"Note: using Lumen's own glossary only; imported and local entries need the "
              f"database ({exc.message})", file=sys.stderr)
        return None


def cmd_glossary_import(args, paths, settings) -> int:
    from .core.glossary import entries
    from .core.glossary.medlineplus import import_medlineplus

    path = Path(args.file)
    with _open_store_for_glossary(paths, required=True) as store:
        if path.suffix.lower() == ".toml":
            count = entries.import_local(store, path)
            result: dict[str, Any] = {"local_entries": count}
        else:
            result = import_medlineplus(store, path,
                                        progress=_progress_printer(not args.json)).to_dict()
    if args.json:
        _print_json(result)
    elif "local_entries" in result:
        print(f"Imported {result['local_entries']} local entries from {path.name}.")
    else:
        languages = ", ".join(f"{n} {lang}" for lang, n in result["by_language"].items())
        print(f"Imported {result['topics']} topics from {result['source_file']} "
              f"(dated {result['source_date'] or 'unknown'}): {result['new_topics']} new, "
              f"{result['updated_topics']} updated; {languages}; {result['also_called']} "
              f"also-called names, {result['see_references']} see-references, "
              f"{result['groups']} group links, {result['mesh_headings']} MeSH headings.")
    return EXIT_OK


def _glossary(paths: Paths, settings: Settings):
    """The whole glossary when the database can be opened, else Lumen's own (said on stderr)."""
    from .core.glossary.glossary import load_glossary

    store = _open_store_for_glossary(paths, required=False)
    try:
        return load_glossary(store, settings)
    finally:
        if store is not None:
            store.close()


def cmd_glossary_match(args, paths, settings) -> int:
    text = sys.stdin.read() if args.file == "-" else _read_text(Path(args.file))
    glossary = _glossary(paths, settings)
    found = glossary.match(text)
    if args.json:
        _print_json([{**m.to_dict(), "definition": glossary.by_key[m.key].definition}
                     for m in found])
        return EXIT_OK
    for m in found:
        print(f"{m.start:>7}-{m.end:<7} {m.text!r:32} → {m.term} [{m.category}, {m.source}]")
    print(f"\n{len(found)} terms found ({len({m.key for m in found})} different).")
    return EXIT_OK


def cmd_glossary_lookup(args, paths, settings) -> int:
    from .core.models.runtime import ModelRuntime

    glossary = _glossary(paths, settings)
    embedder = None if args.no_semantic else ModelRuntime(paths, settings).embedder()
    results = glossary.lookup(args.term, settings=settings, embedder=embedder,
                              cache_dir=paths.cache_dir, limit=args.limit)
    if args.json:
        _print_json([r.to_dict() for r in results])
        return EXIT_OK if results else EXIT_PROBLEM
    if not results:
        print(f"No glossary entry for {args.term!r}.")
        return EXIT_PROBLEM
    for r in results:
        e = r.entry
        print(f"{e.term}  [{e.category}; {e.source}; {r.how} match {r.score:.0f}]")
        if e.aliases or e.abbreviations:
            print(f"  also: {', '.join((*e.abbreviations, *e.aliases))}")
        print(f"  {e.definition}")
        if e.medlineplus_url:
            print(f"  MedlinePlus: {e.medlineplus_title} <{e.medlineplus_url}>")
    return EXIT_OK


def cmd_glossary_add(args, paths, settings) -> int:
    from .core.glossary import entries

    with _open_store_for_glossary(paths, required=True) as store:
        key = entries.save_local(store, term=args.term, definition=args.definition,
                                 category=args.category, aliases=args.alias or [],
                                 abbreviations=args.abbreviation or [],
                                 overrides=args.overrides, hidden=args.hide)
    print(f"Saved {key}.")
    return EXIT_OK


def cmd_glossary_export(args, paths, settings) -> int:
    from .core.glossary import entries

    with _open_store_for_glossary(paths, required=True) as store:
        count = entries.export_local(store, Path(args.out))
    print(f"Exported {count} local entries to {args.out}.")
    return EXIT_OK


def _read_text(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        raise LumenError(f"{path.name} is not UTF-8 text.",
                         "Save it as plain text (UTF-8) and try again.") from None
    except OSError as exc:
        raise LumenError(f"{path} cannot be read ({exc.strerror or exc}).",
                         "Check the path and that your user may read it.") from None


def _mapping(items: list[str] | None) -> dict[str, str]:
    """--map FIELD=COLUMN options as a dict."""
    mapping = {}
    for item in items or []:
        field, sep, column = item.partition("=")
        if not sep or not field.strip() or not column.strip():
            raise LumenError(f"'{item}' is not a column mapping.", "Write it as FIELD=COLUMN.")
        mapping[field.strip()] = column.strip()
    return mapping


def _stage_printer(enabled: bool):
    def on_event(kind: str, data: dict) -> None:
        if not enabled:
            return
        if kind == "attempt":
            attempt = data["attempt"]
            problems = attempt.problems()
            if attempt.gate is not None and not attempt.gate.passed and not problems:
                problems = [f"{attempt.gate.name} {attempt.gate.score} ({attempt.gate.rule})"]
            print(f"  {attempt.stage} {attempt.number}: "
                  + ("passed every check" if attempt.passed else "failed: " + "; ".join(problems)),
                  file=sys.stderr)
        elif kind == "context" and data.get("note"):
            print(f"  Note: {data['note']}", file=sys.stderr)
    return on_event


def cmd_facts(args, paths, settings) -> int:
    from .core.documents import read_document
    from .core.pipelines.summary_facts import read_summary
    from .core.pipelines.vocabulary import plain_date, vocabulary

    summary = sys.stdin.read() if args.summary == "-" else read_document(Path(args.summary))
    facts = read_summary(summary, _glossary(paths, settings))
    if args.json:
        _print_json(facts.to_dict())
        return EXIT_OK
    print("Sections: " + "; ".join(f"{s.title or '(untitled)'} [{s.kind}]" for s in facts.sections))
    vocab = vocabulary()
    print(f"\nMedications ({len(facts.medications)}):")
    for m in facts.medications:
        timing = vocab.plain_frequency(m.frequency) if m.frequency else ""
        if m.as_needed and m.frequency != "as needed":
            timing = f"{timing}, only when needed"
        details = ", ".join(filter(None, [
            m.dose, m.route, timing, m.duration and f"for {m.duration}",
            m.until and f"until {plain_date(m.until)}",
            m.changed_from and f"was {m.changed_from}", m.reason and f"({m.reason})"]))
        print(f"  {m.status.upper() or '(as listed)':12} {m.name}: {details}")
    print(f"\nFollow-up ({len(facts.follow_ups)}):")
    for f in facts.follow_ups:
        print(f"  {f.who or '-'} | {plain_date(f.when) or '-'} | {f.test or '-'} | {f.text}")
    print(f"\nCall or come back if ({len(facts.warning_signs)}):")
    for w in facts.warning_signs:
        print(f"  {w.signs}")
    print(f"\nRestrictions ({len(facts.restrictions)}):")
    for r in facts.restrictions:
        print(f"  {r.kind}: {r.text}")
    return EXIT_OK


def _session(paths: Paths, settings: Settings):
    """The command's one Session, on the unlocked store (closed when the command ends)."""
    from .core.session import Session

    return Session.open(paths, settings, _passphrase_for(paths))


def cmd_ask(args, paths, settings) -> int:
    from .core.documents import read_document
    from .core.pipelines.evidence import RELATED_LABELS

    summary = sys.stdin.read() if args.summary == "-" else read_document(Path(args.summary))
    with _session(paths, settings) as session:
        result = session.ask(summary, args.question, method=args.method, variant=args.variant,
                             on_event=_stage_printer(not args.json))
    if args.json:
        _print_json(result.to_dict())
        return EXIT_OK
    print(result.answer)
    trace = result.trace
    if result.note:
        print(f"\n({result.note})")
    print("\nFrom the summary:")
    for line in result.evidence:
        related = RELATED_LABELS.get(line.get("related", ""))
        print(f"  > {line['text']}" + (f"  [{line['section']}]" if line["section"] else "")
              + (f"  ({related})" if related else ""))
    model_attempts = [a for a in trace.attempts if a.stage in ("extraction", "simplification",
                                                                "answer")]
    print(f"\nReading grade {trace.final_fkgl if trace.final_fkgl is not None else '-'}; "
          f"{'a model answer that passed every check' if result.source == 'model' else 'the evidence answer'}"
          f" ({len(model_attempts)} model attempt(s)); run {trace.id}.")
    if trace.context.get("note"):
        print(trace.context["note"])
    for flag in result.flags:
        print(f"CHECK: '{flag['text']}' ({flag['kind']}) is not in the summary.")
    print(trace.notice)
    return EXIT_OK


def cmd_simplify(args, paths, settings) -> int:
    from .core.documents import read_document
    from .core.pipelines.simplify import handout_file_kind
    from .export import write_handout

    out = Path(args.out) if args.out else None
    if out is not None:
        handout_file_kind(out)  # refuse a bad file name before the long work
    summary = read_document(Path(args.file))
    with _session(paths, settings) as session:
        handout = session.simplify(summary, use_verifier=not args.no_verifier,
                                   variant=args.variant, progress=_progress_printer(not args.json))
        if out is not None:
            write_handout(handout, out, session.store)
    if args.json:
        _print_json(handout.to_dict())
    elif out is None:
        print(handout.to_text())
    if not args.json:
        print(f"  {len(handout.medicines)} medicine(s), {len(handout.appointments)} appointment(s), "
              f"{len(handout.warnings)} warning sign(s), {len(handout.restrictions)} "
              "restriction(s), read from the summary.", file=sys.stderr)
        for section in handout.sections:
            if section.is_record:
                continue
            how = ("rewritten (passed every check)" if section.source == "model" else
                   "the summary's own words explained (no rewrite passed: "
                   + "; ".join(section.problems[:3]) + ")" if section.problems else
                   "the summary's own words explained (they already read below the grade "
                   "limit, so the model did not rewrite them)")
            print(f"  {section.plain_title}: {how}; grade {section.fkgl_before} → "
                  f"{section.fkgl_after}", file=sys.stderr)
        if handout.copied:
            print(f"  CHECK: {len(handout.copied)} line(s) copied word for word so that nothing "
                  "is lost.", file=sys.stderr)
        if out is not None:
            print(f"Handout written to {out}.", file=sys.stderr)
    return EXIT_OK


def cmd_calibrate(args, paths, settings) -> int:
    from .core.models.runtime import ModelRuntime
    from .core.pipelines.calibration import (balanced_accuracy, calibrate_evidence_margin,
                                             calibrate_relevance, demo_benchmark,
                                             evidence_margin_accuracy, load_items)

    dataset = Path(args.dataset) if args.dataset else demo_benchmark()
    embedder = ModelRuntime(paths, settings).embedder()
    items = load_items(dataset, args.split)
    result = calibrate_relevance(items, embedder.embed, dataset=dataset.name, split=args.split)
    margin = calibrate_evidence_margin(items, embedder.embed_recent, _glossary(paths, settings),
                                       settings.evidence_lines, dataset=dataset.name,
                                       split=args.split)
    held_out = (balanced_accuracy(load_items(dataset, args.check_split), embedder.embed,
                                  result.threshold) if args.check_split else None)
    margin_held_out = (evidence_margin_accuracy(
        load_items(dataset, args.check_split), embedder.embed_recent, _glossary(paths, settings),
        settings.evidence_lines, margin.threshold) if args.check_split else None)
    if args.apply:
        _save_settings(paths, settings, settings.with_value(
            "relevance_threshold", result.threshold).with_value("evidence_margin", margin.threshold))
    if args.json:
        _print_json({"calibration": result.to_dict(), "evidence_margin": margin.to_dict(),
                     "held_out": held_out, "evidence_margin_held_out": margin_held_out,
                     "applied": args.apply})
        return EXIT_OK
    print(f"τ = {result.threshold:.3f} on {dataset.name} ({args.split}): balanced accuracy "
          f"{result.balanced_accuracy:.3f} (sensitivity {result.sensitivity:.3f}, specificity "
          f"{result.specificity:.3f}; {result.positives} matching and {result.negatives} "
          f"mismatched answer-question pairs).")
    if held_out:
        print(f"On the '{args.check_split}' split, τ = {result.threshold:.3f} gives balanced "
              f"accuracy {held_out['balanced_accuracy']:.3f}.")
    print(f"Evidence margin = {margin.threshold:.3f}: balanced accuracy "
          f"{margin.balanced_accuracy:.3f} (reference answers passing {margin.sensitivity:.3f}, "
          f"echoes, refusals and talk about the reader refused {margin.specificity:.3f}).")
    if margin_held_out:
        print(f"On the '{args.check_split}' split, margin {margin.threshold:.3f} gives balanced "
              f"accuracy {margin_held_out['balanced_accuracy']:.3f} (reference answers passing "
              f"{margin_held_out['sensitivity']:.3f}, the others refused "
              f"{margin_held_out['specificity']:.3f}).")
    print("Saved as the relevance threshold and evidence margin." if args.apply else
          "Run again with --apply to use them (Settings: Relevance threshold, Evidence "
          "closeness margin).")
    return EXIT_OK


def _evaluation(session):
    """The evaluation store and an evaluator on the session's models, glossary and
    knowledge (for the DoctorRAG systems)."""
    from .core.evaluation.runner import Evaluator
    from .core.evaluation.runs import EvaluationStore

    return (EvaluationStore(session.store),
            Evaluator(session.runtime, session.glossary, session.settings, session.paths.cache_dir,
                      session.knowledge()))


def cmd_bench_import(args, paths, settings) -> int:
    from .core.evaluation.importers import import_dataset
    from .core.evaluation.runs import EvaluationStore

    mapping = _mapping(args.map)
    dataset = import_dataset(Path(args.file), args.format, mapping=mapping or None, name=args.name)
    with _open_store_for_glossary(paths, required=True) as store:
        saved = EvaluationStore(store).save_dataset(dataset)
    if args.json:
        _print_json({**saved.to_dict(), "notes": dataset.notes})
    else:
        print(f"{'Imported' if saved.new else 'Already imported'} {saved.name}: {saved.sample_count} "
              f"samples ({saved.format}), dataset id {saved.id}.")
        for note in dataset.notes:
            print(f"  {note[:1].upper()}{note[1:]}.")
    return EXIT_OK


def cmd_bench_list(args, paths, settings) -> int:
    from .core.choices import FORMATS, SCORERS, systems
    from .core.evaluation.runs import EvaluationStore

    with _open_store_for_glossary(paths, required=True) as store:
        evaluations = EvaluationStore(store)
        datasets, runs = evaluations.datasets(), evaluations.runs()
    if args.json:
        _print_json({"datasets": [d.to_dict() for d in datasets], "runs": runs,
                     "systems": systems(), "scorers": SCORERS, "formats": FORMATS})
        return EXIT_OK
    print("Datasets:")
    for d in datasets:
        print(f"  {d.id:34} {d.name:28} {d.sample_count:6} samples  ({d.format})")
    print("Runs:")
    for r in runs:
        print(f"  {r['id']}  {r['status']:11} {r['system']:26} {r['finished']} done  dataset {r['dataset_id']}")
    print("Systems: " + ", ".join(systems()))
    return EXIT_OK


def cmd_bench_run(args, paths, settings) -> int:
    from .core.evaluation.runner import continue_run, start_run

    if not args.resume and not args.dataset:
        raise LumenError("Name the dataset to run, or a run to resume.",
                         "For example 'lumen evaluate run lumen-demo --limit 5', or "
                         "'lumen evaluate run --resume RUN'; 'lumen evaluate list' shows both.")
    with _session(paths, settings) as session:
        evaluations, evaluator = _evaluation(session)
        if args.resume:
            run_id = args.resume
        else:
            dataset = evaluations.find_dataset(args.dataset)
            run_id = start_run(evaluations, session.runtime, settings, dataset.id, args.system,
                               args.scorer or ["reference", "similarity-judge", "key-facts"],
                               args.limit)
        if not args.json:
            print(f"Run {run_id} (resume with 'lumen evaluate run --resume {run_id}').", file=sys.stderr)

        def on_sample(outcome, done, total):
            if not args.json:
                shown = ", ".join(f"{k} {v:.1f}" for k, v in outcome.scores.items()
                                  if isinstance(v, (int, float)))
                print(f"  [{done}/{total}] {outcome.sample.id}: {shown}"
                      + (f" (error: {outcome.error})" if outcome.error else ""), file=sys.stderr)
        run = continue_run(evaluations, evaluator, run_id, on_sample=on_sample)
        session.runtime.close()  # the models' memory back before the summary's statistics
        from .core.evaluation.report import ReportRules, summarize

        summary = summarize(evaluations, run_id, ReportRules.from_settings(settings))
    if args.json:
        _print_json(summary)
    else:
        print(f"Run {run['id']} {run['status']}: {summary['counts']['samples']} samples.")
        for name, row in summary["metrics"].items():
            mean = "—" if row["mean"] is None else f"{row['mean']:.2f}"
            interval = (row["no_interval"] if row["ci_low"] is None else
                        f"95% CI {row['ci_low']:.2f} – {row['ci_high']:.2f}, {row['interval']}")
            print(f"  {row['label']:28} {mean:>8}  ({interval}; n={row['n']})")
    return EXIT_OK


def cmd_bench_report(args, paths, settings) -> int:
    from .core.evaluation.report import ReportRules, build_report, report_kind
    from .core.evaluation.runs import EvaluationStore
    from .export import write_report

    out = Path(args.out)
    report_kind(out.name)  # refused before any work
    criteria = args.accept if args.accept is not None else settings.acceptance_criteria
    with _open_store_for_glossary(paths, required=True) as store:
        report = build_report(EvaluationStore(store), args.run, ReportRules.from_settings(settings),
                              criteria, args.baseline)
        write_report(report, out, store)
    decided = report.verdict
    print(f"Report written to {out}. {decided['headline']}")
    for note in decided["notes"] + report.summary["not_measured"]:
        print(f"  {note}")
    return EXIT_PROBLEM if decided["status"] == "failed" else EXIT_OK


def cmd_bench_compare(args, paths, settings) -> int:
    from .core.evaluation.report import compare
    from .core.evaluation.runs import EvaluationStore

    with _open_store_for_glossary(paths, required=True) as store:
        result = compare(EvaluationStore(store), args.run_a, args.run_b,
                         resamples=settings.bootstrap_resamples)
    if args.json:
        _print_json(result)
        return EXIT_OK
    print(f"{args.run_b} against baseline {args.run_a}: {result['shared_samples']} shared samples, "
          f"Bonferroni over {result['tests']} tests.")
    for r in result["rows"]:
        print(f"  {r['label']:28} {r['mean_a']:8.2f} → {r['mean_b']:8.2f}  diff {r['difference']:+.2f} "
              f"[{r['ci_low']:+.2f}, {r['ci_high']:+.2f}]  p_bonf {r['p_bonferroni']:.4f}"
              f"{' *' if r['significant'] else ''}  p_wilcoxon {r['p_wilcoxon']:.4f}")
    return EXIT_OK


def cmd_bench_calibrate_judge(args, paths, settings) -> int:
    from .core.evaluation.judges import RubricJudge, calibrate_hivmedqa_judge
    from .core.models.runtime import ModelRuntime

    runtime = ModelRuntime(paths, settings)
    try:
        result = calibrate_hivmedqa_judge(RubricJudge(runtime), Path(args.csv), limit=args.limit,
                                          progress=_progress_printer(not args.json))
    finally:
        runtime.close()
    if args.json:
        _print_json(result)
        return EXIT_OK
    print(f"Local judge {result['judge_model']} against the paper's GPT-4o scores on "
          f"{result['rows']} answers ({result['unparseable']} unparseable replies):")
    for dimension, row in result["dimensions"].items():
        mae = "—" if row["mae"] is None else f"{row['mae']:.2f}"
        rho = "—" if row["spearman"] is None else f"{row['spearman']:.2f}"
        print(f"  {dimension:18} MAE {mae:>5}   Spearman {rho:>5}   (n={row['n']})")
    return EXIT_OK


def cmd_history(args, paths, settings) -> int:
    from .core.pipelines.trace import list_runs, load_run

    with _open_store_for_glossary(paths, required=True) as store:
        if args.run:
            _print_json(load_run(store, args.run))
            return EXIT_OK
        runs = list_runs(store, args.limit)
    if args.json:
        _print_json(runs)
    else:
        for run in runs:
            print(f"{run['created_at']}  {run['id']}  {run['kind']:8} {run['method']:17} "
                  f"{run['question'][:60]}")
    return EXIT_OK


def cmd_audit(args, paths, settings) -> int:
    from .core.store import open_store

    with open_store(paths.database_file, _passphrase_for(paths)) as store:
        if args.action == "verify":
            check = store.verify_audit()
        else:
            entries = store.audit_entries(args.limit)
    if args.action == "verify":
        if args.json:
            _print_json(check.to_dict())
        elif check.ok:
            print(f"The audit log is intact: {check.entries} "
                  f"{'entry' if check.entries == 1 else 'entries'}, each sealed and linked "
                  "to the one before, none missing from the end.")
        else:
            print(f"The audit log was altered: {check.problem}.\n"
                  "Entries from there on cannot be trusted. Keep a copy of the database for "
                  "your security office and restore the last backup you trust.")
        return EXIT_OK if check.ok else EXIT_PROBLEM
    if args.json:
        _print_json(entries)
    else:
        for e in entries:
            print(f"{e['at']}  {e['actor']:12} {e['action']:24} {json.dumps(e['detail'])}")
    return EXIT_OK


def _new_passphrase(variable: str, what: str) -> str:
    """A new passphrase from `variable`, or asked twice on a terminal."""
    given = os.environ.get(variable)
    if given:
        return given
    if not sys.stdin.isatty():
        raise LumenError(f"Lumen needs the {what}.", f"Set {variable}, or run the command in a "
                         "terminal to be asked for it.")
    first = getpass.getpass(f"{what[:1].upper()}{what[1:]}: ")
    if getpass.getpass("Repeat it: ") != first:
        raise LumenError("The two passphrases differ.", "Run the command again.")
    return first


def cmd_key(args, paths, settings) -> int:
    from .core.store import open_store
    from .core.store.custody import change_key

    with open_store(paths.database_file, _passphrase_for(paths)) as store:
        phrase = (_new_passphrase("LUMEN_NEW_PASSPHRASE", "new passphrase")
                  if store.key_source == "passphrase" else None)
        key = change_key(store, phrase)
    if key.source == "passphrase":
        print("The database is now encrypted under the new passphrase; the old one opens "
              "nothing. Keep the new one safe: it cannot be recovered.")
    else:
        print("The database is now encrypted under a new random key in the OS keyring; the "
              "old key was removed and opens nothing.")
    return EXIT_OK


def cmd_backup(args, paths, settings) -> int:
    from .core.store import open_store
    from .core.store.custody import backup

    out = Path(args.file)
    with open_store(paths.database_file, _passphrase_for(paths)) as store:
        phrase = _new_passphrase("LUMEN_BACKUP_PASSPHRASE", "passphrase for the backup")
        summary = backup(store, out, phrase, paths.profile_files)
    rows = sum(summary["tables"].values())
    print(f"Backup written to {out}: {rows} rows in {len(summary['tables'])} tables, and "
          f"{', '.join(summary['files']) or 'no profile files'}. It opens only with its "
          "passphrase.")
    return EXIT_OK


def cmd_restore(args, paths, settings) -> int:
    from .core.store import KeyManager, open_store
    from .core.store.custody import restore
    from .core.store.keys import PASSPHRASE_ENV

    phrase = os.environ.get("LUMEN_BACKUP_PASSPHRASE") or (
        getpass.getpass("Passphrase of the backup: ") if sys.stdin.isatty() else "")
    if not phrase:
        raise LumenError("Lumen needs the backup's passphrase.",
                         "Set LUMEN_BACKUP_PASSPHRASE, or run the command in a terminal.")
    new_phrase = (_new_passphrase(PASSPHRASE_ENV, "passphrase for the restored database")
                  if KeyManager(paths.database_file).needs_passphrase() else None)
    key, files = restore(Path(args.file), phrase, paths.database_file, new_phrase)
    targets = paths.profile_files
    for name, text in files.items():
        if name in targets:
            targets[name].parent.mkdir(parents=True, exist_ok=True)
            targets[name].write_text(text, encoding="utf-8")
    with open_store(paths.database_file, new_phrase) as store:
        store.audit("profile.restored", {"files": sorted(files)})
        check = store.verify_audit()
    print(f"Restored into {paths.database_file} ({'key in the OS keyring' if key.source == 'keyring' else 'your passphrase'}); "
          f"audit log {'intact' if check.ok else 'ALTERED: ' + check.problem}. Rebuild the "
          "knowledge index with 'lumen kb reindex'.")
    return EXIT_OK if check.ok else EXIT_PROBLEM


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


def _audit_refusals(paths: Paths) -> None:
    """Refused network attempts of a command that never opened the database go into the
    audit log now, when the database opens without asking (keyring or LUMEN_PASSPHRASE);
    otherwise they stay in the log file, where the guard always writes them."""
    from .core import offline
    from .core.store import KeyManager, open_store

    pending = offline.take_unaudited()
    if not pending:
        return
    offline.return_unaudited(pending)
    if not KeyManager(paths.database_file).database_exists():
        return
    try:
        with open_store(paths.database_file, None):
            pass  # opening the store writes them
    except LumenError as exc:
        print(f"Warning: {len(pending)} refused network attempt(s) could not be written to "
              f"the audit log ({exc.message}); they are in the log file.", file=sys.stderr)


# ---- knowledge (DoctorRAG) ----------------------------------------------------------


def cmd_kb_add(args, paths, settings) -> int:
    if not args.files and not args.glossary:
        raise LumenError("Nothing to add.", "Name documents (.txt, .md, .pdf, .docx) or use --glossary.")
    declarative = True if args.declarative else None
    added = []
    with _session(paths, settings) as session:
        rag = session.knowledge()
        progress = _progress_printer(not args.json)
        for name in args.files:
            document, new = rag.add_file(Path(name), declarative=declarative, progress=progress)
            added.append({**document.to_dict(), "new": new})
        if args.glossary:
            document, new = rag.add_glossary(limit=args.limit, declarative=declarative,
                                             progress=progress)
            added.append({**document.to_dict(), "new": new})
    if args.json:
        _print_json(added)
        return EXIT_OK
    for doc in added:
        if not doc["new"]:
            print(f"{doc['name']} is already in the knowledge base ({doc['id'][:8]}); not added again.")
            continue
        chapters = ", ".join(f"{code} ×{n}" for code, n in doc["chapters"].items())
        print(f"Added {doc['name']}: {doc['chunks']} pieces"
              f"{' as statements' if doc['declarative'] else ''} ({chapters}); id {doc['id'][:8]}.")
    return EXIT_OK


def _library(paths: Paths, store):
    """The knowledge base and the case base, without loading any model."""
    from .core.knowledge.base import CaseBase, KnowledgeBase
    from .core.knowledge.doctorrag import vector_folder
    from .core.knowledge.index import VectorIndex

    index = VectorIndex(vector_folder(paths))
    return KnowledgeBase(store, index), CaseBase(store, index)


def cmd_kb_list(args, paths, settings) -> int:
    with _open_store_for_glossary(paths, required=True) as store:
        knowledge, casebase = _library(paths, store)
        documents = [d.to_dict() for d in knowledge.documents()]
        sets = [c.to_dict() for c in casebase.sets()]
    if args.json:
        _print_json({"documents": documents, "case_sets": sets})
        return EXIT_OK
    if not documents and not sets:
        print("The knowledge base is empty. Add documents with 'lumen kb add FILES' and past "
              "cases with 'lumen cases import FILE'.")
    for doc in documents:
        print(f"{doc['id'][:8]}  {doc['added_at']}  {doc['chunks']:5} pieces  {doc['name']}")
    for case_set in sets:
        print(f"{case_set['id'][:8]}  {case_set['imported_at']}  {case_set['cases']:5} cases   "
              f"{case_set['name']}")
    return EXIT_OK


def cmd_kb_remove(args, paths, settings) -> int:
    with _open_store_for_glossary(paths, required=True) as store:
        document = _library(paths, store)[0].remove(args.id)
    print(f"Removed {document.name} ({document.chunks} pieces).")
    return EXIT_OK


def cmd_kb_reindex(args, paths, settings) -> int:
    with _session(paths, settings) as session:
        counts = session.knowledge().reindex(progress=_progress_printer(True))
    print(f"Rebuilt the vector index: {counts['statements']} statements, {counts['cases']} cases.")
    return EXIT_OK


def _knowledge_printer(enabled: bool):
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


def cmd_kb_ask(args, paths, settings) -> int:
    from .core.knowledge.doctorrag import model_calls_needed, parse_labels

    labels: list[str] = []
    if args.labels_file:
        labels = parse_labels(_read_text(Path(args.labels_file)))
    elif args.labels:
        labels = parse_labels(args.labels)
    mode = "diagnosis" if (args.diagnosis or labels) else "answer"
    refine = True if args.refine else None
    if refine and not args.json:
        calls = model_calls_needed(settings, args.ablation, True, args.rounds)
        print(f"  Refinement on: this question takes {calls} model calls.", file=sys.stderr)
    with _session(paths, settings) as session:
        rag = session.knowledge()
        result = rag.run(args.question, mode=mode, labels=labels, ablation=args.ablation,
                         refine=refine, rounds=args.rounds,
                         on_event=_knowledge_printer(not args.json),
                         progress=_progress_printer(not args.json))
        rag.save(result)
    if args.json:
        _print_json(result.to_dict())
        return EXIT_OK
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
    return EXIT_OK


def cmd_cases_import(args, paths, settings) -> int:
    mapping = _mapping(args.map)
    with _session(paths, settings) as session:
        case_set, case_file, new = session.knowledge().import_cases(
            Path(args.file), mapping, progress=_progress_printer(not args.json))
    removals = [{"record": r.key, **item} for r in case_file.records for item in r.removals]
    if args.json:
        _print_json({**case_set.to_dict(), "new": new, "columns": case_file.columns_used,
                     "columns_not_imported": case_file.columns_dropped, "removals": removals})
        return EXIT_OK
    if not new:
        print(f"{case_file.name} was imported before (set {case_set.id[:8]}); nothing was added.")
        return EXIT_OK
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
    return EXIT_OK


def cmd_cases_list(args, paths, settings) -> int:
    with _open_store_for_glossary(paths, required=True) as store:
        base = _library(paths, store)[1]
        if args.set:
            records = base.records(base.case_set(args.set).id)
            rows = [{"key": c.record.key, "complaint": c.record.complaint,
                     "diagnosis": c.record.diagnosis, "treatment": c.record.treatment,
                     "demographics": c.record.demographics, "removals": list(c.record.removals)}
                    for c in records]
            if args.json:
                _print_json(rows)
            else:
                for row in rows:
                    print(f"{row['key']}: {row['diagnosis']} | {row['complaint'][:100]}")
            return EXIT_OK
        sets = [c.to_dict() for c in base.sets()]
    if args.json:
        _print_json(sets)
    else:
        for case_set in sets:
            print(f"{case_set['id'][:8]}  {case_set['imported_at']}  {case_set['cases']:5} cases  "
                  f"{case_set['name']}  removed {json.dumps(case_set['removed'])}")
    return EXIT_OK


def cmd_cases_remove(args, paths, settings) -> int:
    with _open_store_for_glossary(paths, required=True) as store:
        case_set = _library(paths, store)[1].remove(args.id)
    print(f"Removed {case_set.name} ({case_set.count} cases).")
    return EXIT_OK


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
    verify.add_argument("--json", action="store_true")
    verify.set_defaults(func=cmd_verify_offline)

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

    glossary = sub.add_parser("glossary", help="the plain-language glossary")
    gsub = glossary.add_subparsers(dest="glossary_command", metavar="ACTION", required=True)
    p = gsub.add_parser("import", help="import MedlinePlus topics (mplus_topics_*.xml) or "
                                       "local entries (.toml from 'export')")
    p.add_argument("file")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_glossary_import)
    p = gsub.add_parser("match", help="find glossary terms in a text file ('-' for stdin)")
    p.add_argument("file")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_glossary_match)
    p = gsub.add_parser("lookup", help="look a word up (exact, other names, fuzzy, by meaning)")
    p.add_argument("term")
    p.add_argument("--limit", type=int, default=5)
    p.add_argument("--no-semantic", action="store_true", help="skip the lookup by meaning")
    p.add_argument("--json", action="store_true")
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
    p = gsub.add_parser("export", help="write local additions and edits to a .toml file")
    p.add_argument("out")
    p.set_defaults(func=cmd_glossary_export)

    from .core.choices import METHODS, VARIANTS

    facts = sub.add_parser("facts", help="the sections, medications, follow-ups, warning signs "
                                         "and restrictions of a discharge summary (no model)")
    facts.add_argument("summary", help="the summary: .txt, .docx or .pdf ('-' for stdin)")
    facts.add_argument("--json", action="store_true", help="every fact with its character offsets")
    facts.set_defaults(func=cmd_facts)

    ask = sub.add_parser("ask", help="answer a patient's question about a discharge summary")
    ask.add_argument("--summary", required=True, help="the summary: .txt, .docx or .pdf ('-' for stdin)")
    ask.add_argument("--question", required=True)
    ask.add_argument("--variant", choices=VARIANTS, help="simplifier with or without the glossary")
    ask.add_argument("--method", choices=METHODS, help="the full pipeline, an ablation, a baseline, or evidence (the summary's own lines explained, no model)")
    ask.add_argument("--json", action="store_true", help="print the answer with its whole trace")
    ask.set_defaults(func=cmd_ask)

    simplify = sub.add_parser("simplify", help="turn a whole discharge summary into a patient handout")
    simplify.add_argument("file", help="the summary: .txt, .docx or .pdf")
    simplify.add_argument("--out", help="handout file: .pdf, .html or .txt (default: print text)")
    simplify.add_argument("--variant", choices=VARIANTS)
    simplify.add_argument("--no-verifier", action="store_true", help="skip the readability verifier")
    simplify.add_argument("--json", action="store_true")
    simplify.set_defaults(func=cmd_simplify)

    calibrate = sub.add_parser("calibrate", help="tune the relevance threshold τ for the embedder")
    calibrate.add_argument("--dataset", help="JSONL with summary_id, question, answer, split "
                                             "(default: the demo benchmark)")
    calibrate.add_argument("--split", default="dev")
    calibrate.add_argument("--check-split", default="test", help="split to report τ on, unfitted")
    calibrate.add_argument("--apply", action="store_true", help="save τ in the settings")
    calibrate.add_argument("--json", action="store_true")
    calibrate.set_defaults(func=cmd_calibrate)

    from .core.choices import SCORERS

    # "evaluate", as the Evaluation tab; "bench" (its first name) still works for a release,
    # while bench/ is the speed benchmarks' folder.
    bench = sub.add_parser("evaluate", aliases=["bench"],
                           help="validate models on medical QA benchmarks (also: bench)")
    bsub = bench.add_subparsers(dest="bench_command", metavar="ACTION", required=True)
    from .core.choices import FORMATS

    p = bsub.add_parser(
        "import", help="import a benchmark file into the encrypted database",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="formats:\n" + "\n".join(f"  {name:10} {text}" for name, text in FORMATS.items()))
    p.add_argument("--format", required=True, choices=tuple(FORMATS), metavar="FORMAT",
                   help="the file's layout (listed below)")
    p.add_argument("file", help="file or folder")
    p.add_argument("--map", action="append", metavar="FIELD=COLUMN",
                   help="column mapping, e.g. --map input=question --map target=answer (generic: "
                        "found by itself when the columns have the usual names: question/answer, "
                        "query/response, input/output, in any case)")
    p.add_argument("--name", help="a name for the dataset")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_bench_import)
    p = bsub.add_parser("list", help="datasets, runs, systems and scorers")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_bench_list)
    from .core.choices import systems

    p = bsub.add_parser(
        "run", help="run a system over a dataset (or --resume a run)",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="systems:\n" + "\n".join(f"  {name:26} {text}" for name, text in systems().items()))
    p.add_argument("dataset", nargs="?", help="dataset name or id (see 'lumen evaluate list')")
    p.add_argument("--system", default="lamp:glossary", metavar="SYSTEM",
                   help="the system to run (listed below; default lamp:glossary)")
    p.add_argument("--scorer", action="append", choices=tuple(SCORERS),
                   help="repeat for several (default: reference, similarity-judge, key-facts)")
    p.add_argument("--limit", type=int, help="only the first N samples")
    p.add_argument("--resume", metavar="RUN", help="continue a paused or interrupted run")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_bench_run)
    p = bsub.add_parser("report", help="write the validation report of a run")
    p.add_argument("run")
    p.add_argument("--out", required=True, help="report.html, report.pdf or report.csv")
    p.add_argument("--baseline", help="another run on the same dataset to compare against")
    p.add_argument("--accept", help="acceptance criteria (default: the setting)")
    p.set_defaults(func=cmd_bench_report)
    p = bsub.add_parser("calibrate-judge",
                        help="compare the local HIVMedQA judge with the paper's GPT-4o scores")
    p.add_argument("csv", help="question_answers_pairs_and_source.csv from the HIVMedQA data")
    p.add_argument("--limit", type=int, help="only the first N answers")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_bench_calibrate_judge)
    p = bsub.add_parser("compare", help="compare two runs on their shared samples")
    p.add_argument("run_a", help="baseline run")
    p.add_argument("run_b")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_bench_compare)

    history = sub.add_parser("history", help="list saved answers and handouts, or show one")
    history.add_argument("run", nargs="?", help="a run id: print it with its trace")
    history.add_argument("--limit", type=int, default=30)
    history.add_argument("--json", action="store_true")
    history.set_defaults(func=cmd_history)

    from .core.choices import ABLATIONS

    kb = sub.add_parser("kb", help="the knowledge base: add documents, ask questions (DoctorRAG)")
    ksub = kb.add_subparsers(dest="kb_command", metavar="ACTION", required=True)
    p = ksub.add_parser("add", help="add documents (.txt, .md, .pdf, .docx) or the glossary's topics")
    p.add_argument("files", nargs="*")
    p.add_argument("--glossary", action="store_true", help="add the glossary's topics too")
    p.add_argument("--limit", type=int, help="only the first N glossary topics")
    p.add_argument("--declarative", action="store_true",
                   help="rewrite each piece as statements first (slower; see the setting)")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_kb_add)
    p = ksub.add_parser("list", help="documents and case sets in the knowledge base")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_kb_list)
    p = ksub.add_parser("remove", help="remove a document (its id from 'lumen kb list')")
    p.add_argument("id")
    p.set_defaults(func=cmd_kb_remove)
    p = ksub.add_parser("reindex", help="rebuild the vector index from the encrypted database")
    p.set_defaults(func=cmd_kb_reindex)
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
    p.add_argument("--json", action="store_true", help="the answer, its sources and trace as JSON")
    p.set_defaults(func=cmd_kb_ask)

    cases = sub.add_parser("cases", help="the case base of past patients (de-identified on import)")
    csub = cases.add_subparsers(dest="cases_command", metavar="ACTION", required=True)
    p = csub.add_parser("import", help="import cases from a CSV or JSONL file")
    p.add_argument("file")
    p.add_argument("--map", action="append", metavar="FIELD=COLUMN",
                   help="column for key, complaint, diagnosis, treatment or name")
    p.add_argument("--show-removed", action="store_true", help="list every de-identification removal")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_cases_import)
    p = csub.add_parser("list", help="case sets, or the cases of one set (--set ID)")
    p.add_argument("--set")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_cases_list)
    p = csub.add_parser("remove", help="remove a case set")
    p.add_argument("id")
    p.set_defaults(func=cmd_cases_remove)

    p = sub.add_parser(
        "key", help="change the database's passphrase, or rotate its keyring key",
        description="Re-encrypt the database under a new key (close other Lumen windows "
                    "first). A passphrase database asks for the new passphrase twice (or reads "
                    "LUMEN_NEW_PASSPHRASE); a keyring database gets a fresh random key. The old "
                    "key opens nothing afterwards.")
    p.add_argument("action", choices=("change",))
    p.set_defaults(func=cmd_key)
    p = sub.add_parser(
        "backup", help="write the whole profile to one encrypted file",
        description="Every table of the database, the settings and the model list, in one "
                    "SQLCipher file encrypted with a passphrase chosen for it (asked twice, or "
                    "LUMEN_BACKUP_PASSPHRASE). The vector index is rebuilt after a restore with "
                    "'lumen kb reindex'.")
    p.add_argument("file", help="the backup file to write")
    p.set_defaults(func=cmd_backup)
    p = sub.add_parser(
        "restore", help="restore a backup into a profile that has no database yet",
        description="Copy every row of a backup into a new database with a key of its own "
                    "(the OS keyring, or LUMEN_PASSPHRASE / a passphrase asked twice), and its "
                    "settings and model list. Never overwrites a database: restore into a new "
                    "profile with --profile DIR, or move the old database away first.")
    p.add_argument("file", help="a file written by 'lumen backup'")
    p.set_defaults(func=cmd_restore)
    audit = sub.add_parser(
        "audit", help="show the audit log (who did what, when), or verify its seals",
        description="Show the newest entries of the audit log, or, with 'verify', check "
                    "that no entry was changed, removed or reordered (exit status 1 names the "
                    "first entry that fails).")
    audit.add_argument("action", nargs="?", choices=("show", "verify"), default="show",
                       help="show (default) or verify")
    audit.add_argument("--limit", type=int, default=50, help="entries to show (default 50)")
    audit.add_argument("--json", action="store_true")
    audit.set_defaults(func=cmd_audit)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    private_files()  # what Lumen writes is this account's only (0600 files, 0700 folders)
    try:
        paths = Paths.resolve(args.profile)
        if args.profile:
            # Child processes and the GUI see the same profile.
            os.environ["LUMEN_HOME"] = str(Path(args.profile).expanduser().resolve())
        paths.ensure()
        settings = Settings.load(paths)
        configure_logging(paths, settings.log_level,
                          console_level=None if args.command is None else "WARNING")
        if args.command is None and args.selftest:
            os.environ["QT_QPA_PLATFORM"] = "offscreen"
            from .gui.selftest import run_selftest

            return run_selftest(paths, settings)
        if args.command is None:
            from .gui.app import run_gui

            return run_gui(paths, settings)
        try:
            return args.func(args, paths, settings)
        finally:
            _audit_refusals(paths)
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
