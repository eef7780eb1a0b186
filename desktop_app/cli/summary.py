"""The discharge-summary commands: `lumen facts`, `ask`, `simplify` and `calibrate`
(Session.ask and Session.simplify, as the Ask and Simplify tabs)."""

from __future__ import annotations

import sys
from pathlib import Path

from .common import (EXIT_OK, add_json_option, command_session, glossary_for, profile_session,
                    progress_for, show_result, tell)


def stage_printer(enabled: bool):
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
    from ..core.results import plain_date, read_document, read_summary, vocabulary

    summary = sys.stdin.read() if args.summary == "-" else read_document(Path(args.summary))
    order = args.date_order or settings.summary_date_order
    facts = read_summary(summary, glossary_for(paths, settings), order)

    def for_reader() -> None:
        print("Sections: " + "; ".join(f"{s.title or '(untitled)'} [{s.kind}]" for s in facts.sections))
        print("Dates read " + ("day first (dd/mm)" if facts.date_order == "dmy" else "month first (mm/dd)")
              + ("" if facts.date_order == order else " (as the summary's own dates show)"))
        vocab = vocabulary()
        print(f"\nMedications ({len(facts.medications)}):")
        for m in facts.medications:
            timing = vocab.plain_frequency(m.frequency) if m.frequency else ""
            if m.time:
                timing = f"{timing} at {m.time}".strip()
            if m.as_needed and m.frequency != "as needed":
                timing = f"{timing}, only when needed"
            details = ", ".join(filter(None, [
                m.count and m.dose and f"{m.count} of {m.dose}" or m.dose or m.count, m.route, timing,
                m.maximum and f"no more than {m.maximum}", m.duration and f"for {m.duration}",
                m.until and f"until {plain_date(m.until, facts.date_order)}",
                m.changed_from and f"was {m.changed_from}", m.reason and f"({m.reason})",
                m.label and f"listed under \"{m.label}\""]))
            status = "ASK" if m.doubt else m.status.upper() or "(as listed)"
            print(f"  {status:12} {m.name}: {details}")
            if m.doubt:
                print(f"  {'':12} the line, whole: \"{m.quote}\" ({m.doubt})")
        print(f"\nFollow-up ({len(facts.follow_ups)}):")
        for f in facts.follow_ups:
            print(f"  {f.who or '-'} | {plain_date(f.when, facts.date_order) or '-'} | {f.test or '-'} | {f.text}")
        print(f"\nCall or come back if ({len(facts.warning_signs)}):")
        for w in facts.warning_signs:
            print(f"  {w.signs}")
        print(f"\nRestrictions ({len(facts.restrictions)}):")
        for r in facts.restrictions:
            print(f"  {r.kind}: {r.text}")
    show_result(args, facts.to_dict(), for_reader)
    return EXIT_OK


def cmd_ask(args, paths, settings) -> int:
    from ..core.results import read_document

    summary = sys.stdin.read() if args.summary == "-" else read_document(Path(args.summary))
    with command_session(paths, settings) as session:
        result = session.ask(summary, args.question, method=args.method, variant=args.variant,
                             on_event=stage_printer(not args.json))

    def for_reader() -> None:
        print(result.answer)
        trace = result.trace
        if result.note:
            print(f"\n({result.note})")
        print("\nFrom the summary:")
        for line in result.evidence_lines():
            print(f"  > {line.describe()}")
        model_attempts = [a for a in trace.attempts if a.stage in ("extraction", "simplification",
                                                                    "answer")]
        print(f"\n{trace.plain_account()}")
        print(f"Reading grade {trace.final_fkgl if trace.final_fkgl is not None else '-'}; "
              f"{len(model_attempts)} model attempt(s); run {trace.id}.")
        if trace.context.get("note"):
            print(trace.context["note"])
        for line in result.flag_lines():
            print(f"CHECK: {line}.")
        print(trace.notice)
    show_result(args, result.to_dict(), for_reader)
    return EXIT_OK


def cmd_simplify(args, paths, settings) -> int:
    from ..core.results import read_document
    from ..core.results import handout_file_kind, handout_status
    from ..export import refuse_to_replace, write_handout

    out = Path(args.out) if args.out else None
    if out is not None:
        handout_file_kind(out)  # refuse a bad file name, or one already there, before the long work
        refuse_to_replace(out, "handout", args.force)
    summary = read_document(Path(args.file))
    with command_session(paths, settings) as session:
        handout = session.simplify(summary, use_verifier=not args.no_verifier,
                                   variant=args.variant, progress=progress_for(args))
        if out is not None:
            write_handout(handout, out, session, force=args.force)

    def for_reader() -> None:
        if out is None:  # else it is in the file
            print(handout.to_text())
    show_result(args, handout.to_dict(), for_reader)
    tell(args, "  " + handout_status(handout, settings.handout_grade_goal))
    story = handout.story()
    if story is not None and story.problems:
        tell(args, "  Why the model's rewrite was not shown: " + "; ".join(story.problems[:3]))
    if out is not None:
        tell(args, f"Handout written to {out}.")
    return EXIT_OK


def cmd_calibrate(args, paths, settings) -> int:
    with profile_session(paths, settings, purpose="glossary") as session:
        found = session.calibrate(Path(args.dataset) if args.dataset else None, args.split,
                                  args.check_split)
        result, margin = found["calibration"], found["evidence_margin"]
        held_out, margin_held_out = found["held_out"], found["evidence_margin_held_out"]
        dataset = found["dataset"]
        if args.apply:
            session.change_settings(settings.with_value("relevance_threshold", result.threshold)
                                    .with_value("evidence_margin", margin.threshold))

    def for_reader() -> None:
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
    show_result(args, {"calibration": result.to_dict(), "evidence_margin": margin.to_dict(),
                       "held_out": held_out, "evidence_margin_held_out": margin_held_out,
                       "applied": args.apply}, for_reader)
    return EXIT_OK


def register(sub) -> None:
    from ..core.choices import METHODS, VARIANTS

    facts = sub.add_parser("facts", help="the sections, medications, follow-ups, warning signs "
                                         "and restrictions of a discharge summary (no model)")
    facts.add_argument("summary", help="the summary: .txt, .docx or .pdf ('-' for stdin)")
    add_json_option(facts, "every fact with its character offsets")
    facts.add_argument("--date-order", choices=("mdy", "dmy"),
                       help="read dates such as 05/03/2025 month first (mdy) or day first (dmy) "
                            "when the summary does not show which (default: the setting "
                            "summary_date_order)")
    facts.set_defaults(func=cmd_facts)

    ask = sub.add_parser("ask", help="answer a patient's question about a discharge summary")
    ask.add_argument("--summary", required=True, help="the summary: .txt, .docx or .pdf ('-' for stdin)")
    ask.add_argument("--question", required=True)
    ask.add_argument("--variant", choices=VARIANTS, help="simplifier with or without the glossary")
    ask.add_argument("--method", choices=METHODS, help="the full pipeline, an ablation, a baseline, or evidence (the summary's own lines explained, no model)")
    add_json_option(ask, "the answer with its whole trace")
    ask.set_defaults(func=cmd_ask)

    simplify = sub.add_parser("simplify", help="turn a whole discharge summary into a patient handout")
    simplify.add_argument("file", help="the summary: .txt, .docx or .pdf")
    simplify.add_argument("--out", help="handout file: .pdf, .html or .txt (default: print text)")
    simplify.add_argument("--force", action="store_true", help="replace --out if it exists")
    simplify.add_argument("--variant", choices=VARIANTS)
    simplify.add_argument("--no-verifier", action="store_true", help="skip the readability verifier")
    add_json_option(simplify)
    simplify.set_defaults(func=cmd_simplify)

    calibrate = sub.add_parser("calibrate", help="tune the relevance threshold τ for the embedder")
    calibrate.add_argument("--dataset", help="JSONL with summary_id, question, answer, split "
                                             "(default: the demo benchmark)")
    calibrate.add_argument("--split", default="dev")
    calibrate.add_argument("--check-split", default="test", help="split to report τ on, unfitted")
    calibrate.add_argument("--apply", action="store_true", help="save τ in the settings")
    add_json_option(calibrate)
    calibrate.set_defaults(func=cmd_calibrate)

