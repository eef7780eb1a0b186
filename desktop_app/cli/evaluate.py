"""`lumen evaluate` (also `bench`, its first name): validation on medical QA benchmarks
(Session.evaluation, as the Evaluation tab)."""

from __future__ import annotations

import argparse
from pathlib import Path

from ..core.errors import LumenError
from .common import (EXIT_OK, EXIT_PROBLEM, add_json_option, column_mapping, command_session,
                    profile_session, progress_for, progress_printer, show_result, tell)


def cmd_bench_import(args, paths, settings) -> int:
    mapping = column_mapping(args.map)
    with command_session(paths, settings) as session:
        saved, dataset = session.evaluation.import_file(Path(args.file), args.format,
                                                        mapping=mapping, name=args.name)

    def for_reader() -> None:
        print(f"{'Imported' if saved.new else 'Already imported'} {saved.name}: {saved.sample_count} "
              f"samples ({saved.format}), dataset id {saved.id}.")
        for note in dataset.notes:
            print(f"  {note[:1].upper()}{note[1:]}.")
    show_result(args, {**saved.to_dict(), "notes": dataset.notes}, for_reader)
    return EXIT_OK


def cmd_bench_list(args, paths, settings) -> int:
    from ..core.choices import FORMATS
    from ..core.evaluation.systems import systems
    from ..core.evaluation.scorers import scorer_descriptions

    with command_session(paths, settings) as session:
        datasets, runs = session.evaluation.datasets(), session.evaluation.runs()

    def for_reader() -> None:
        print("Datasets:")
        for d in datasets:
            print(f"  {d.id:34} {d.name:28} {d.sample_count:6} samples  ({d.format})")
        print("Runs:")
        for r in runs:
            print(f"  {r['id']}  {r['status']:11} {r['system']:26} {r['finished']} done  dataset {r['dataset_id']}")
        print("Systems: " + ", ".join(systems()))
        print("Scorers: " + ", ".join(scorer_descriptions()))
    show_result(args, {"datasets": [d.to_dict() for d in datasets], "runs": runs,
                       "systems": systems(), "scorers": scorer_descriptions(),
                       "formats": FORMATS}, for_reader)
    return EXIT_OK


def cmd_bench_run(args, paths, settings) -> int:
    from ..core.evaluation.scorers import default_scorers
    from ..core.evaluation.systems import is_consultation

    if not args.resume and not args.dataset:
        raise LumenError("Name the dataset to run, or a run to resume.",
                         "For example 'lumen evaluate run lumen-demo --limit 5', or "
                         "'lumen evaluate run --resume RUN'; 'lumen evaluate list' shows both.")
    with command_session(paths, settings) as session:
        evaluation = session.evaluation
        (run_id,) = [args.resume] if args.resume else evaluation.start(
            args.dataset, [args.system], args.scorer or default_scorers([args.system]),
            args.limit)
        tell(args, f"Run {run_id} (resume with 'lumen evaluate run --resume {run_id}').")

        def on_sample(outcome, done, total):
            shown = ", ".join(f"{k} {v:.1f}" for k, v in outcome.scores.items()
                              if isinstance(v, (int, float)))
            tell(args, f"  [{done}/{total}] {outcome.sample.id}: {shown}"
                 + (f" (error: {outcome.error})" if outcome.error else ""))
        # A consultation takes minutes: say which utterance it has reached.
        consults = is_consultation(evaluation.run(run_id)["system"])
        run = evaluation.resume(run_id, on_sample=on_sample,
                                progress=progress_printer(consults and not args.json))
        session.unload_models()  # the models' memory back before the summary's statistics
        summary = evaluation.summary(run_id)

    def for_reader() -> None:
        counts = summary["counts"]
        print(f"Run {run['id']} {run['status']}: {counts['samples']} samples"
              + (f", {counts['errors']} ended in an error (left out of every metric; "
                 f"'--resume {run['id']}' tries them again)" if counts["errors"] else "") + ".")
        for row in summary["metrics"].values():
            mean = "—" if row["mean"] is None else f"{row['mean']:.2f}"
            interval = (row["no_interval"] if row["ci_low"] is None else
                        f"95% CI {row['ci_low']:.2f} – {row['ci_high']:.2f}, {row['interval']}")
            print(f"  {row['label']:44} {mean:>8}  ({interval}; n={row['n']})")
        if summary.get("consultation"):
            scores = summary["consultation"]["diagnosis"]
            band = scores["macro_f1_interval"]
            shown = (band["no_interval"] if band["ci_low"] is None else
                     f"95% CI {band['ci_low']:.2f} – {band['ci_high']:.2f}, bootstrap")
            print(f"  {'Macro F1 (diagnosis)':44} {scores['macro_f1']:>8.2f}  ({shown}; "
                  f"n={scores['cases']}); no diagnosis in {scores['none_rate']:.0%}")
    show_result(args, summary, for_reader)
    return EXIT_OK


def cmd_bench_report(args, paths, settings) -> int:
    from ..core.results import report_kind
    from ..export import refuse_to_replace, write_report

    out = Path(args.out)
    report_kind(out.name)  # refused before any work
    refuse_to_replace(out, "report", args.force)
    with command_session(paths, settings) as session:
        report = session.evaluation.report(args.run, criteria=args.accept, baseline=args.baseline)
        write_report(report, out, session, force=args.force)
    decided = report.verdict
    print(f"Report written to {out}. {decided['headline']}")
    for note in decided["notes"] + report.summary["not_measured"]:
        print(f"  {note}")
    # Only a pass (or a report that claims nothing) exits 0: IT scripts read the status.
    return EXIT_PROBLEM if decided["status"] in ("failed", "undecided") else EXIT_OK


def cmd_bench_compare(args, paths, settings) -> int:
    with command_session(paths, settings) as session:
        result = session.evaluation.compare(args.run_a, args.run_b)

    def for_reader() -> None:
        print(f"{args.run_b} against baseline {args.run_a}: {result['shared_samples']} shared samples, "
              f"Bonferroni over {result['tests']} tests.")
        for r in result["rows"]:
            print(f"  {r['label']:28} {r['mean_a']:8.2f} → {r['mean_b']:8.2f}  diff {r['difference']:+.2f} "
                  f"[{r['ci_low']:+.2f}, {r['ci_high']:+.2f}]  p_bonf {r['p_bonferroni']:.4f}"
                  f"{' *' if r['significant'] else ''}  p_wilcoxon {r['p_wilcoxon']:.4f}")
    show_result(args, result, for_reader)
    return EXIT_OK


def cmd_bench_compare_modes(args, paths, settings) -> int:
    with command_session(paths, settings) as session:
        result = session.evaluation.compare_modes(args.runs)

    def for_reader() -> None:
        print(f"{len(result['runs'])} consultation runs on {result['shared_samples']} shared cases; "
              f"Wilcoxon, Benjamini-Hochberg over {result['tests']} tests, alpha {result['alpha']:g}.")
        if result["warning"]:
            print(f"  Warning: {result['warning']}")
        for run in result["runs"]:
            print(f"  {run['mode']:12} {run['id']}  macro F1 {run['macro_f1']:.2f}")
        for r in result["rows"]:
            print(f"  {r['label']:44} {r['mode_a']:>11} {r['mean_a']:6.2f}  {r['mode_b']:>11} "
                  f"{r['mean_b']:6.2f}  p {r['p_wilcoxon']:.4f}  p_bh {r['p_bh']:.4f}"
                  f"{' *' if r['significant'] else ''}")
    show_result(args, result, for_reader)
    return EXIT_OK


def cmd_bench_calibrate_judge(args, paths, settings) -> int:
    with profile_session(paths, settings, store=False) as session:
        result = session.evaluation.calibrate_judge(Path(args.csv), limit=args.limit,
                                                    progress=progress_for(args))

    def for_reader() -> None:
        print(f"Local judge {result['judge_model']} against the paper's GPT-4o scores on "
              f"{result['rows']} answers ({result['unparseable']} unparseable replies):")
        for dimension, row in result["dimensions"].items():
            mae = "—" if row["mae"] is None else f"{row['mae']:.2f}"
            rho = "—" if row["spearman"] is None else f"{row['spearman']:.2f}"
            print(f"  {dimension:18} MAE {mae:>5}   Spearman {rho:>5}   (n={row['n']})")
    show_result(args, result, for_reader)
    return EXIT_OK


def register(sub) -> None:
    from ..core.evaluation.scorers import SCORERS

    # "evaluate", as the Evaluation tab; "bench" (its first name) still works for a release,
    # while bench/ is the speed benchmarks' folder.
    bench = sub.add_parser("evaluate", aliases=["bench"],
                           help="validate models on medical QA benchmarks (also: bench)")
    bsub = bench.add_subparsers(dest="bench_command", metavar="ACTION", required=True)
    from ..core.choices import FORMATS

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
    add_json_option(p)
    p.set_defaults(func=cmd_bench_import)
    p = bsub.add_parser("list", help="datasets, runs, systems and scorers")
    add_json_option(p)
    p.set_defaults(func=cmd_bench_list)
    from ..core.evaluation.systems import systems

    p = bsub.add_parser(
        "run", help="run a system over a dataset (or --resume a run)",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="systems:\n" + "\n".join(f"  {name:26} {text}" for name, text in systems().items())
        + "\n\nscorers (by default those marked for the system's kind):\n" + "\n".join(
            f"  {name:26} {entry.description}"
            + (f" [{', '.join(entry.default_for)}]" if entry.default_for else "")
            for name, entry in SCORERS.items()))
    p.add_argument("dataset", nargs="?", help="dataset name or id (see 'lumen evaluate list')")
    p.add_argument("--system", default="lamp:glossary", metavar="SYSTEM",
                   help="the system to run (listed below; default lamp:glossary)")
    p.add_argument("--scorer", action="append", choices=tuple(SCORERS),
                   help="repeat for several (listed below; default: those for the system's kind)")
    p.add_argument("--limit", type=int, help="only the first N samples")
    p.add_argument("--resume", metavar="RUN", help="continue a paused or interrupted run")
    add_json_option(p)
    p.set_defaults(func=cmd_bench_run)
    p = bsub.add_parser("report", help="write the validation report of a run")
    p.add_argument("run")
    p.add_argument("--out", required=True, help="report.html, report.pdf or report.csv")
    p.add_argument("--force", action="store_true", help="replace the file if it exists")
    p.add_argument("--baseline", help="another run on the same dataset to compare against")
    p.add_argument("--accept", help="acceptance criteria (default: the setting)")
    p.set_defaults(func=cmd_bench_report)
    p = bsub.add_parser("calibrate-judge",
                        help="compare the local HIVMedQA judge with the paper's GPT-4o scores")
    p.add_argument("csv", help="question_answers_pairs_and_source.csv from the HIVMedQA data")
    p.add_argument("--limit", type=int, help="only the first N answers")
    add_json_option(p)
    p.set_defaults(func=cmd_bench_calibrate_judge)
    p = bsub.add_parser("compare", help="compare two runs on their shared samples")
    p.add_argument("run_a", help="baseline run")
    p.add_argument("run_b")
    add_json_option(p)
    p.set_defaults(func=cmd_bench_compare)
    p = bsub.add_parser("compare-modes",
                        help="compare consultation runs (dialogue:<mode>) on their shared cases")
    p.add_argument("runs", nargs="+", metavar="RUN", help="two or more dialogue:<mode> runs")
    add_json_option(p)
    p.set_defaults(func=cmd_bench_compare_modes)

