"""What a run found: per-metric means with confidence intervals, comparisons between
runs on the same samples (paired bootstrap and Wilcoxon, with Bonferroni and
Benjamini-Hochberg corrections), acceptance criteria set by IT, and the validation
report as HTML or CSV (PDF is drawn from the HTML by desktop_app.export)."""

from __future__ import annotations

import csv
import html
import io
import math
import operator
import re
from dataclasses import dataclass
from typing import Any

from ..errors import LumenError
from .runs import EvaluationStore

_OPERATORS = {"<": operator.lt, "<=": operator.le, ">": operator.gt, ">=": operator.ge,
              "==": operator.eq}
_CRITERION = re.compile(r"^\s*([a-z_0-9]+)\s*(<=|>=|==|<|>)\s*(-?\d+(?:\.\d+)?)\s*$")
COUNTS = ("judge_unparseable", "errors", "samples")


def metric_info() -> dict[str, dict[str, Any]]:
    from . import metrics

    from .judges import HIV_DIMENSIONS

    info = dict(metrics.METRICS)
    info["judge_similarity"] = {"label": "LLM judge (1-5)", "higher_is_better": True, "scale": "1-5"}
    info["diagnosis_accuracy"] = {"label": "Diagnosis accuracy", "higher_is_better": True,
                                  "scale": "0-1"}
    info["key_fact_recall"] = {"label": "Key-fact recall", "higher_is_better": True,
                               "scale": "0-1"}
    info["unsupported_facts"] = {"label": "Unsupported facts per answer",
                                 "higher_is_better": False, "scale": "count"}
    info["degenerate"] = {"label": "Degenerate answers", "higher_is_better": False,
                          "scale": "0-1"}
    info["model_answer"] = {"label": "Shown answer is the model's", "higher_is_better": True,
                            "scale": "0-1"}
    for dimension in (*HIV_DIMENSIONS, "overall"):
        info[f"hiv_{dimension}"] = {"label": f"HIVMedQA {dimension.replace('_', ' ')} (0-5)",
                                    "higher_is_better": True, "scale": "0-5"}
    return info


@dataclass(frozen=True)
class Criterion:
    metric: str
    op: str
    value: float

    def __str__(self) -> str:
        return f"{self.metric} {self.op} {self.value:g}"


def parse_criteria(text: str) -> list[Criterion]:
    known = set(metric_info()) | set(COUNTS)
    criteria = []
    for part in filter(None, (p.strip() for p in text.split(";"))):
        match = _CRITERION.match(part)
        if not match or match.group(1) not in known:
            raise LumenError(f"The acceptance criterion '{part}' is not understood.",
                             "Write it as METRIC OP NUMBER, e.g. 'fkgl < 10'; metrics: "
                             f"{', '.join(sorted(known))}.")
        criteria.append(Criterion(match.group(1), match.group(2), float(match.group(3))))
    return criteria


def summarize(evaluations: EvaluationStore, run_id: str, *, resamples: int = 10000) -> dict[str, Any]:
    from . import stats

    run = evaluations.run(run_id)
    results = evaluations.results(run_id)
    info = metric_info()
    table = {}
    for name, meta in info.items():
        values = [r["scores"].get(name) for r in results if name in r["scores"]]
        present = [v for v in values if v is not None]
        if not values:
            continue
        mean, low, high = stats.mean_ci(present) if present else (None, None, None)
        # One sample has no interval (NaN): stored and shown as missing, and valid JSON.
        low, high = (None if v is None or math.isnan(v) else v for v in (low, high))
        table[name] = {"label": meta["label"], "n": len(present), "missing": len(values) - len(present),
                       "mean": mean, "ci_low": low, "ci_high": high,
                       "higher_is_better": meta["higher_is_better"]}
    seconds = sum(r["seconds"] for r in results)
    counts = {"samples": len(results),
              "errors": sum(1 for r in results if r["error"]),
              "judge_unparseable": sum(1 for r in results for reply in r["judge"].values()
                                       if isinstance(reply, dict) and reply.get("unparseable")),
              "judge_cut_off": sum(1 for r in results for reply in r["judge"].values()
                                   if isinstance(reply, dict) and reply.get("cut_off"))}
    medjudge = [r["judge"]["medjudge"] for r in results if "medjudge" in r["judge"]]
    distributions = None
    if medjudge:
        from .judges import label_distributions

        distributions = label_distributions([m["labels"] for m in medjudge if not m.get("blank")])
        distributions["blank answers"] = {"count": sum(1 for m in medjudge if m.get("blank"))}
    dataset = evaluations.dataset(run["dataset_id"])
    return {"run": run, "dataset": dataset.to_dict(), "metrics": table, "counts": counts,
            "medjudge": distributions,
            "timing": {"seconds": round(seconds, 2),
                       "model_seconds": round(sum(r["model_seconds"] for r in results), 2),
                       "samples_per_minute": round(60 * len(results) / seconds, 2) if seconds else None}}


def check_criteria(summary: dict[str, Any], criteria: list[Criterion]) -> list[dict[str, Any]]:
    checked = []
    for criterion in criteria:
        if criterion.metric in COUNTS:
            actual = summary["counts"].get(criterion.metric)
        else:
            actual = summary["metrics"].get(criterion.metric, {}).get("mean")
        passed = actual is not None and _OPERATORS[criterion.op](actual, criterion.value)
        checked.append({"criterion": str(criterion), "actual": actual, "passed": bool(passed)})
    return checked


def compare(evaluations: EvaluationStore, run_a: str, run_b: str, *, resamples: int = 10000
            ) -> dict[str, Any]:
    """Run B against baseline run A, on the samples both finished, metric by metric."""
    from . import stats

    a = {r["sample_id"]: r["scores"] for r in evaluations.results(run_a)}
    b = {r["sample_id"]: r["scores"] for r in evaluations.results(run_b)}
    shared = sorted(set(a) & set(b))
    if not shared:
        raise LumenError("The two runs have no finished samples in common.",
                         "Compare runs on the same dataset.")
    rows = []
    for name, meta in metric_info().items():
        pairs = [(a[s][name], b[s][name]) for s in shared
                 if a[s].get(name) is not None and b[s].get(name) is not None]
        if len(pairs) < 2:
            continue
        xs, ys = [p[0] for p in pairs], [p[1] for p in pairs]
        boot = stats.paired_bootstrap(ys, xs, resamples=resamples)
        rows.append({"metric": name, "label": meta["label"], "n": len(pairs),
                     "mean_a": sum(xs) / len(xs), "mean_b": sum(ys) / len(ys),
                     "difference": boot["mean_difference"], "ci_low": boot["ci_low"],
                     "ci_high": boot["ci_high"], "p_bootstrap": boot["p_value"],
                     "p_wilcoxon": stats.wilcoxon(ys, xs)["p_value"],
                     "higher_is_better": meta["higher_is_better"]})
    p_values = [row["p_bootstrap"] for row in rows]
    for row, bonferroni, bh in zip(rows, stats.bonferroni(p_values), stats.benjamini_hochberg(p_values)):
        row["p_bonferroni"], row["p_bh"] = bonferroni, bh
        row["significant"] = bonferroni < 0.05
    return {"baseline": run_a, "run": run_b, "shared_samples": len(shared), "tests": len(rows),
            "rows": rows}


# ---- output -------------------------------------------------------------------------


def _fmt(value: Any, digits: int = 2) -> str:
    if value is None:
        return "—"
    if isinstance(value, float):
        return f"{value:.{digits}f}"
    return str(value)


def to_csv(summary: dict[str, Any]) -> str:
    buffer = io.StringIO()
    writer = csv.writer(buffer)
    writer.writerow(["metric", "label", "n", "missing", "mean", "ci_low", "ci_high"])
    for name, row in summary["metrics"].items():
        writer.writerow([name, row["label"], row["n"], row["missing"], row["mean"], row["ci_low"],
                         row["ci_high"]])
    for name, value in summary["counts"].items():
        writer.writerow([name, name.replace("_", " "), value, "", "", "", ""])
    return buffer.getvalue()


def to_html(summary: dict[str, Any], criteria: list[dict[str, Any]],
            comparison: dict[str, Any] | None = None, *, bertscore_note: str = "") -> str:
    esc = html.escape
    run, config, dataset = summary["run"], summary["run"]["config"], summary["dataset"]
    models = "".join(f"<tr><td>{esc(role)}</td><td>{esc(m['id'])}</td><td>{esc(m.get('quantisation') or '—')}"
                     f"</td><td><code>{esc(m['sha256'])}</code></td></tr>"
                     for role, m in config["models"].items())
    metric_rows = "".join(
        f"<tr><td>{esc(row['label'])}</td><td>{row['n']}</td><td>{row['missing']}</td>"
        f"<td><b>{_fmt(row['mean'])}</b></td><td>{_fmt(row['ci_low'])} – {_fmt(row['ci_high'])}</td></tr>"
        for row in summary["metrics"].values())
    criteria_rows = "".join(
        f"<tr><td>{esc(c['criterion'])}</td><td>{_fmt(c['actual'])}</td>"
        f"<td style='color:{'#1b7a3a' if c['passed'] else '#b3261e'}'><b>"
        f"{'PASS' if c['passed'] else 'FAIL'}</b></td></tr>" for c in criteria)
    verdict = all(c["passed"] for c in criteria) if criteria else None
    machine = config.get("machine", {})
    parts = [
        "<html><head><meta charset='utf-8'><title>Lumen validation report</title><style>"
        "body{font-family:sans-serif;font-size:11pt;max-width:60em}table{border-collapse:collapse;"
        "margin:.5em 0}td,th{border:1px solid #bbb;padding:3px 8px;text-align:left}"
        "th{background:#eee}code{font-size:9pt}</style></head><body>",
        "<h1>Lumen validation report</h1>",
        f"<p>Run <code>{esc(run['id'])}</code>, system <b>{esc(run['system'])}</b>, status "
        f"{esc(run['status'])}, started {esc(run['created_at'])}.</p>",
        (f"<p style='font-size:14pt'>Overall: <b style='color:{'#1b7a3a' if verdict else '#b3261e'}'>"
         f"{'all acceptance criteria met' if verdict else 'acceptance criteria NOT met'}</b></p>"
         if verdict is not None else ""),
        "<h2>Environment</h2><table>",
        f"<tr><th>Lumen</th><td>{esc(config['app_version'])}</td></tr>",
        f"<tr><th>Machine</th><td>{esc(str(machine.get('cpu', '')))}, {machine.get('cores')} cores, "
        f"{esc(str(machine.get('system', '')))}, Python {esc(str(machine.get('python', '')))}</td></tr>",
        f"<tr><th>Prompts</th><td>{esc(', '.join(f'{k} {v}' for k, v in config['prompt_versions'].items()))}</td></tr>",
        f"<tr><th>Seed, temperature</th><td>{config['seed']}, {config['settings'].get('temperature')}</td></tr>",
        "</table><h2>Models</h2><table><tr><th>role</th><th>model</th><th>quantisation</th><th>sha256</th></tr>",
        models, "</table>",
        f"<h2>Dataset</h2><p>{esc(dataset['name'])} ({esc(dataset['format'])}, "
        f"{dataset['sample_count']} samples; file {esc(dataset['source_file'])}, sha256 "
        f"<code>{esc(dataset['source_sha256'])}</code>); {summary['counts']['samples']} scored"
        + (f" (limit {run['limit']})" if run["limit"] else "") + ".</p>",
        "<h2>Results</h2><table><tr><th>metric</th><th>n</th><th>missing</th><th>mean</th>"
        "<th>95% CI</th></tr>", metric_rows, "</table>",
        f"<p>Errors: {summary['counts']['errors']}; unparseable judge replies (stored as missing, "
        f"not 0): {summary['counts']['judge_unparseable']}"
        + (f", of which {summary['counts']['judge_cut_off']} cut off at their token limit"
           if summary["counts"].get("judge_cut_off") else "") + ". Time: {summary['timing']['seconds']} s "
        f"({summary['timing']['samples_per_minute']} samples/min).</p>",
    ]
    if bertscore_note:
        parts.append(f"<p><small>{esc(bertscore_note)}</small></p>")
    if summary.get("medjudge"):
        rows = "".join(f"<tr><th>{esc(dimension.replace('_', ' '))}</th><td>"
                       + ", ".join(f"{esc(label)}: {count}" for label, count in labels.items())
                       + "</td></tr>" for dimension, labels in summary["medjudge"].items())
        parts += ["<h2>MedJudge labels (counts; no single score, as the protocol says)</h2>",
                  f"<table>{rows}</table>"]
    if criteria:
        parts += ["<h2>Acceptance criteria</h2><table><tr><th>criterion</th><th>actual</th>"
                  "<th>result</th></tr>", criteria_rows, "</table>"]
    if comparison:
        rows = "".join(
            f"<tr><td>{esc(r['label'])}</td><td>{_fmt(r['mean_a'])}</td><td>{_fmt(r['mean_b'])}</td>"
            f"<td>{_fmt(r['difference'])} [{_fmt(r['ci_low'])}, {_fmt(r['ci_high'])}]</td>"
            f"<td>{_fmt(r['p_bonferroni'], 4)}{' *' if r['significant'] else ''}</td>"
            f"<td>{_fmt(r['p_bh'], 4)}</td><td>{_fmt(r['p_wilcoxon'], 4)}</td></tr>"
            for r in comparison["rows"])
        parts += [f"<h2>Compared with run {esc(comparison['baseline'])}</h2>",
                  f"<p>{comparison['shared_samples']} samples in common; paired bootstrap "
                  f"(per-sample differences), Bonferroni over {comparison['tests']} tests; "
                  "* significant at α = 0.05 after correction.</p>",
                  "<table><tr><th>metric</th><th>baseline</th><th>this run</th><th>difference [95% CI]"
                  "</th><th>p (Bonferroni)</th><th>p (BH)</th><th>p (Wilcoxon)</th></tr>", rows,
                  "</table>"]
    parts.append("<p><small>Lumen supports clinical decisions; it does not make them. Scores from "
                 "small local judges are indicative, not a clinical validation.</small></p></body></html>")
    return "\n".join(parts)
