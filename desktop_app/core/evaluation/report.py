"""What a run found: per-metric means with confidence intervals, comparisons between
runs on the same samples (paired bootstrap and Wilcoxon, with Bonferroni and
Benjamini-Hochberg corrections), acceptance criteria set by IT, and the validation
report as HTML or CSV (PDF is drawn from the HTML by desktop_app.export)."""

from __future__ import annotations

import csv
import io
import operator
import re
from dataclasses import asdict, dataclass
from typing import Any

from ..errors import LumenError
from ..templates import render
from .runs import EvaluationStore
from .systems import answers_questions, is_consultation, systems

_OPERATORS = {"<": operator.lt, "<=": operator.le, ">": operator.gt, ">=": operator.ge,
              "==": operator.eq}
_CRITERION = re.compile(r"^\s*([a-z_0-9]+)\s*(<=|>=|==|<|>)\s*(-?\d+(?:\.\d+)?|chance)\s*$")
COUNTS = ("judge_unparseable", "errors", "samples", "findings")


# The values each scale's scores can take: an interval of a mean never leaves them.
# FKGL's floor is textstat's for one-syllable words.
SCALE_RANGES = {"0-1": (0.0, 1.0), "0-100": (0.0, 100.0), "1-5": (1.0, 5.0),
                "0-5": (0.0, 5.0), "0-2": (0.0, 2.0), "count": (0.0, float("inf")),
                "US school grade": (-3.4, float("inf"))}


def metric_info() -> dict[str, dict[str, Any]]:
    """Every per-sample metric of the registered scorers (scorers.py): its label,
    direction, scale and range, whether it is a rate (each score 0 or 1 by definition, so
    its interval is Wilson's), and whether the Evaluation tab shows it as a column."""
    from .scorers import registered_metrics

    info = registered_metrics()
    for meta in info.values():
        meta.setdefault("rate", False)
        meta.setdefault("tab", False)
        meta.setdefault("range", SCALE_RANGES[meta["scale"]])
    return info


@dataclass(frozen=True)
class Criterion:
    """METRIC OP NUMBER, or METRIC OP chance.  A metric ending in `_low` is the lower bound
    of its 95% interval ("macro_f1_low > chance": better than guessing, with the sampling
    error taken into account); `chance` is the metric's chance level in this run
    (`chance_levels`)."""

    metric: str
    op: str
    value: float | None  # None: the chance level

    def __str__(self) -> str:
        return f"{self.metric} {self.op} {'chance' if self.value is None else f'{self.value:g}'}"

    @property
    def base(self) -> str:
        return self.metric[:-4] if self.metric.endswith("_low") else self.metric


# The metrics with a chance level, and how it is taken.
CHANCE = {"macro_f1": "guessing with the cases' own diagnosis frequencies (1/K for K diagnoses)",
          "diagnosis_accuracy": "picking one of each case's labels at random"}


def parse_criteria(text: str) -> list[Criterion]:
    info = metric_info()
    with_interval = [*info, "macro_f1"]
    known = set(info) | set(COUNTS) | {"macro_f1"} | {f"{name}_low" for name in with_interval}
    criteria = []
    for part in filter(None, (p.strip() for p in text.split(";"))):
        match = _CRITERION.match(part)
        if not match or match.group(1) not in known:
            raise LumenError(f"The acceptance criterion '{part}' is not understood.",
                             "Write it as METRIC OP NUMBER, e.g. 'fkgl < 10' (METRIC_low for "
                             "the lower end of its interval, 'chance' for its chance level: "
                             "'macro_f1_low > chance'); metrics: "
                             f"{', '.join(sorted(set(info) | set(COUNTS) | {'macro_f1'}))}.")
        criterion = Criterion(match.group(1), match.group(2),
                              None if match.group(3) == "chance" else float(match.group(3)))
        if criterion.value is None and criterion.base not in CHANCE:
            raise LumenError(f"The acceptance criterion '{part}' compares with a chance level, "
                             f"and {criterion.base} has none.",
                             f"Chance levels are known for: {', '.join(CHANCE)}.")
        criteria.append(criterion)
    return criteria


@dataclass(frozen=True)
class ReportRules:
    """What a report holds a run to (Settings, group Evaluation): the intervals' resamples
    and fewest samples, and which MedJudge labels are findings that fail a run."""

    resamples: int = 10_000
    min_samples: int = 10
    fail_correctness: str = "contradictory"  # a CORRECTNESS label, or "off"
    fail_impact: str = "critical"  # a CLINICAL_IMPACT label, or "off"
    allowed_findings: int = 0
    worst_answers: int = 5
    max_error_share: float = 0.1  # more samples than this in error: a failed run

    @classmethod
    def from_settings(cls, settings) -> "ReportRules":
        return cls(settings.bootstrap_resamples, settings.report_min_samples,
                   settings.report_fail_correctness, settings.report_fail_impact,
                   settings.report_allowed_findings, settings.report_worst_answers,
                   settings.run_max_error_share)

    def is_finding(self, labels: dict[str, Any]) -> bool:
        from .judges import CLINICAL_IMPACT, CORRECTNESS

        wrong = (self.fail_correctness in CORRECTNESS and CORRECTNESS.index(labels["correctness"])
                 >= CORRECTNESS.index(self.fail_correctness))
        harmful = (self.fail_impact in CLINICAL_IMPACT and CLINICAL_IMPACT.index(labels["clinical_impact"])
                   >= CLINICAL_IMPACT.index(self.fail_impact))
        return wrong or harmful

    def describe(self) -> str:
        """The finding rule in words, as the report states it."""
        parts = []
        if self.fail_correctness != "off":
            parts.append(f"judged {self.fail_correctness.replace('_', ' ')}"
                         + (" or worse" if self.fail_correctness != "contradictory" else ""))
        if self.fail_impact != "off":
            parts.append(f"of {self.fail_impact} clinical impact"
                         + (" or worse" if self.fail_impact != "critical" else ""))
        return "an answer " + " or ".join(parts) if parts else "no judge label (findings are off)"


def _severity(labels: dict[str, Any]) -> tuple[int, int]:
    from .judges import CLINICAL_IMPACT, CORRECTNESS

    return CLINICAL_IMPACT.index(labels["clinical_impact"]), CORRECTNESS.index(labels["correctness"])


def _clip(text: str | None, limit: int = 600) -> str:
    text = (text or "").strip()
    return text if len(text) <= limit else text[:limit].rsplit(" ", 1)[0] + " …"


# Without a MedJudge verdict, the worst answers are those with the lowest of these scores.
_WORST_BY = ("judge_similarity", "hiv_overall", "key_fact_recall")


def _worst_answers(results: list[dict[str, Any]], rules: ReportRules) -> list[dict[str, Any]]:
    """The answers a reader should look at first: by MedJudge severity (clinical impact,
    then correctness), else by the lowest judge or key-fact score."""
    judged = [(r, r["judge"]["medjudge"]["labels"]) for r in results
              if (r["judge"].get("medjudge") or {}).get("labels")]
    if judged:
        # An answer judged correct and harmless is no one's worst answer.
        judged = [(r, labels) for r, labels in judged if _severity(labels) != (0, 0)]
        ranked = sorted(judged, key=lambda pair: _severity(pair[1]), reverse=True)
        worst = [(r, {"correctness": labels["correctness"], "clinical impact": labels["clinical_impact"],
                      "coverage": labels["coverage"]}, labels.get("brief_analysis", ""),
                  rules.is_finding(labels)) for r, labels in ranked]
    else:
        metric = next((m for m in _WORST_BY if any(r["scores"].get(m) is not None for r in results)), None)
        if metric is None:
            return []
        scored = sorted((r for r in results if r["scores"].get(metric) is not None),
                        key=lambda r: r["scores"][metric])
        label = metric_info()[metric]["label"]
        worst = [(r, {label: round(r["scores"][metric], 2)}, "", False) for r in scored]
    return [{"sample_id": r["sample_id"], "question": _clip(r["input"]),
             "reference": _clip(r["target"]), "answer": _clip(r["output"]) or "(no answer)",
             "labels": labels, "analysis": _clip(analysis, 300), "finding": finding}
            for r, labels, analysis, finding in worst[:rules.worst_answers]]


def _not_measured(run: dict[str, Any], dataset: dict[str, Any], results: list[dict[str, Any]],
                  table: dict[str, Any], counts: dict[str, int]) -> list[str]:
    """What this report cannot speak for, in plain sentences."""
    from .scorers import SCORERS

    consults = is_consultation(run["system"])
    notes = [] if consults else [f"Not measured: {entry.measures}." for name, entry in
                                 SCORERS.items() if name not in run["scorers"]
                                 and entry.missing_is_a_gap(dataset["format"])]
    if consults:
        notes.append("The consultations are text only: the cases' images, which the published "
                     "protocol shows the doctor, were not used.")
        if run["system"] == "dialogue:hint":
            notes.append("The hint is the diagnoses of the most similar past cases in the case "
                         "base, a text stand-in for the paper's image classifier.")
    expected = min(dataset["sample_count"], run["limit"] or dataset["sample_count"])
    if len(results) < expected:
        notes.append(f"Only {len(results)} of {expected} samples were answered (run {run['status']}).")
    if run["limit"] and run["limit"] < dataset["sample_count"]:
        notes.append(f"The run was limited to {run['limit']} of the dataset's "
                     f"{dataset['sample_count']} samples.")
    no_reference = sum(1 for r in results if not (r["target"] or "").strip())
    if no_reference:
        notes.append(f"{no_reference} samples have no reference answer: no reference metric or "
                     "judge scored them.")
    if counts["errors"]:
        notes.append(f"{counts['errors']} of {counts['samples']} samples ended in an error: they "
                     "are listed with their reasons and left out of every metric.")
    if counts["judge_unparseable"]:
        notes.append(f"{counts['judge_unparseable']} judge replies could not be read: those "
                     "answers are unjudged on that judge (missing, not 0).")
    # One reason, said once, with the metrics it holds for ("too few samples" for all of them).
    reasons: dict[str, list[str]] = {}
    for row in table.values():
        if row["no_interval"]:
            reasons.setdefault(row["no_interval"], []).append(row["label"])
    for reason, labels in reasons.items():
        notes.append(f"No interval, {reason}: {', '.join(labels)}." if len(labels) > 1
                     else f"{labels[0]}: {reason}.")
    return notes


def error_reasons(results: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The samples that ended in an error, grouped by their message (most common first):
    what a reader needs to fix the cause, without a line per sample."""
    grouped: dict[str, list[str]] = {}
    for r in results:
        if r["error"]:
            grouped.setdefault(r["error"], []).append(r["sample_id"])
    return [{"error": error, "count": len(ids), "samples": ids}
            for error, ids in sorted(grouped.items(), key=lambda item: -len(item[1]))]


def summarize(evaluations: EvaluationStore, run_id: str, rules: ReportRules | None = None
              ) -> dict[str, Any]:
    """What a run found.  A sample that ended in an error has no answer to score: it is
    counted and listed with its reason, and left out of every metric and interval (a
    run whose samples all failed has no metric at all, not the worst of each)."""
    from . import stats

    rules = rules or ReportRules()
    run = evaluations.run(run_id)
    everything = evaluations.results(run_id)
    results = [r for r in everything if not r["error"]]
    info = metric_info()
    table = {}
    for name, meta in info.items():
        values = [r["scores"].get(name) for r in results if name in r["scores"]]
        present = [v for v in values if v is not None]
        if not values:
            continue
        row = (stats.metric_interval(present, min_samples=rules.min_samples, rate=meta["rate"],
                                     resamples=rules.resamples) if present else
               {"mean": None, "n": 0, "ci_low": None, "ci_high": None, "interval": "",
                "no_interval": "no sample was scored"})
        table[name] = {"label": meta["label"], "missing": len(values) - len(present),
                       "higher_is_better": meta["higher_is_better"], "scale": meta["scale"],
                       "rate": meta["rate"], **row}
    counts = {"samples": len(everything), "answered": len(results),
              "errors": len(everything) - len(results),
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
    counts["findings"] = sum(1 for m in medjudge if m.get("labels") and rules.is_finding(m["labels"]))
    dataset = evaluations.dataset(run["dataset_id"]).to_dict()
    consultation = None
    if is_consultation(run["system"]) and results:
        from .dialogue import consultation_summary

        consultation = consultation_summary(results, resamples=rules.resamples,
                                            min_samples=rules.min_samples)
        consultation["chance"] = chance_levels(results).get("macro_f1")
    wall = evaluations.wall_seconds(run_id)
    seconds = wall if wall is not None else sum(r["seconds"] for r in everything)
    return {"run": run, "dataset": dataset, "metrics": table, "counts": counts,
            "consultation": consultation, "errors": error_reasons(everything),
            "chance": chance_levels(results),
            "medjudge": distributions, "judged": sum(1 for m in medjudge if m.get("labels")),
            "rules": asdict(rules) | {"finding": rules.describe()},
            "worst": _worst_answers(results, rules),
            "not_measured": _not_measured(run, dataset, everything, table, counts),
            "timing": {"seconds": round(seconds, 2), "clock": wall is not None,
                       "model_seconds": round(sum(r["model_seconds"] for r in everything), 2),
                       "samples_per_minute": (round(60 * len(everything) / seconds, 2)
                                              if seconds else None)}}


def verdict(summary: dict[str, Any], checked: list[dict[str, Any]]) -> dict[str, Any]:
    """What the report may say of the run, and why: never more than its data.

    failed: more samples in error than allowed; or, with enough samples, a criterion not
      met or more judge findings than allowed;
    undecided: fewer samples answered than an interval needs (report_min_samples), or a
      criterion whose metric was not measured (its scorer did not run, no interval);
    passed: every criterion met and, if MedJudge ran, findings within what is allowed;
    no claim: no criterion set and no answer judged.
    The notes say what the verdict does not cover."""
    rules, counts = summary["rules"], summary["counts"]
    answered, samples = counts.get("answered", counts["samples"]), counts["samples"]
    reasons = [f"{c['criterion']} is not met (actual {_fmt(c['actual'])}"
               + (f", chance {_fmt(c['threshold'])}" if c.get("chance") else "") + ")"
               for c in checked if c.get("measured", True) and not c["passed"]]
    unmeasured = [f"{c['criterion']}: {c['why']}" for c in checked if not c.get("measured", True)]
    judged = summary.get("judged", 0)
    if counts.get("findings", 0) > rules["allowed_findings"]:
        reasons.append(f"{counts['findings']} of {judged} judged answers are findings "
                       f"({rules['finding']}); {rules['allowed_findings']} allowed")
    notes = []
    answers = answers_questions(summary["run"]["system"])
    if answers and not judged:
        notes.append("No answer was judged for clinical correctness or impact (MedJudge not run "
                     "or no reply readable), so this run could not fail on it.")
    if counts.get("errors"):
        notes.append(f"{counts['errors']} of {samples} samples ended in an error and are left "
                     "out of every metric.")
    too_many_errors = samples and counts.get("errors", 0) > rules.get("max_error_share", 0.1) * samples
    if too_many_errors:
        status = "failed"
        headline = (f"Validation FAILED: {counts['errors']} of {samples} samples ended in an "
                    f"error (at most {rules.get('max_error_share', 0.1):.0%} may); the run "
                    "measured too little to judge the system.")
    elif answered < rules["min_samples"]:
        status = "undecided"
        headline = (f"Not enough samples to decide: {answered} answered without error, and a "
                    f"verdict needs at least {rules['min_samples']}."
                    + (f" On these few, not met: {'; '.join(reasons)}." if reasons else ""))
    elif reasons:
        status, headline = "failed", "Validation FAILED: " + "; ".join(reasons) + "."
    elif unmeasured:
        status = "undecided"
        headline = ("Not decided: " + "; ".join(unmeasured) + ". The other criteria were met.")
    elif not checked and not judged:
        status, headline = ("no claim", "No acceptance criteria were set and no answer was "
                            "judged: this report makes no claim of acceptance.")
    else:
        met = f"all {len(checked)} acceptance criteria met" if checked else "no criteria set"
        judged_text = (f"; no judge finding beyond the {rules['allowed_findings']} allowed among "
                       f"{judged} judged answers" if judged else "")
        status = "passed"
        headline = f"Passed on what was measured: {met}{judged_text}."
    return {"status": status, "headline": headline, "reasons": reasons, "notes": notes}


def chance_levels(summary_results: list[dict[str, Any]]) -> dict[str, float]:
    """The chance level of the metrics that have one (CHANCE), on the samples answered."""
    levels: dict[str, float] = {}
    labelled = [r for r in summary_results if (r["metadata"] or {}).get("labels")]
    if labelled:
        levels["diagnosis_accuracy"] = sum(1 / len(r["metadata"]["labels"])
                                           for r in labelled) / len(labelled)
    truths = {r["target"] for r in summary_results if r["target"]}
    if truths:
        levels["macro_f1"] = 1 / len(truths)
    return levels


def check_criteria(summary: dict[str, Any], criteria: list[Criterion]) -> list[dict[str, Any]]:
    """Each criterion with the run's value (`actual`), the value it is held to (`threshold`)
    and whether it was met; a criterion whose metric was not measured is not met and says
    why (`measured` False), which leaves the verdict undecided rather than passed."""
    info = metric_info()
    checked = []
    for criterion in criteria:
        name, why = criterion.base, ""
        if criterion.metric in COUNTS:
            actual = summary["counts"].get(criterion.metric)
        elif name == "macro_f1":  # a run's score, not a mean of samples'
            diagnosis = (summary.get("consultation") or {}).get("diagnosis", {})
            band = diagnosis.get("macro_f1_interval") or {}
            actual = band.get("ci_low") if criterion.metric != name else diagnosis.get("macro_f1")
            if actual is None:
                why = ("no consultation was scored" if not diagnosis.get("cases")
                       else f"no interval ({band.get('no_interval') or 'none'})")
        else:
            row = summary["metrics"].get(name)
            actual = None if row is None else row["ci_low" if criterion.metric != name else "mean"]
            if row is None:
                why = (f"{info[name]['label'] if name in info else name} was not measured "
                       "(its scorer did not run, or no sample could be scored on it)")
            elif actual is None:
                why = (f"no interval ({row['no_interval'] or 'none'})"
                       if criterion.metric != name else "no sample was scored")
        threshold = (summary.get("chance", {}).get(name) if criterion.value is None
                     else criterion.value)
        if threshold is None and not why:
            why = "no chance level for this run"
        measured = actual is not None and threshold is not None
        passed = measured and _OPERATORS[criterion.op](actual, threshold)
        checked.append({"criterion": str(criterion), "actual": actual, "passed": bool(passed),
                        "measured": measured, "why": why, "threshold": threshold,
                        "chance": criterion.value is None})
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


MODE_ALPHA = 0.01  # 3MDBench's significance level, after Benjamini-Hochberg
_MODE_METRICS = ("diagnosis_correct", "dialogue_utterances", "ended_by_break", "assessor_1_1",
                 "assessor_1_2", "assessor_1_3", "assessor_2_1", "assessor_2_2", "assessor_3_1",
                 "assessor_3_2", "assessor_4_1")


def compare_modes(evaluations: EvaluationStore, run_ids: list[str], *,
                  min_samples: int = ReportRules.min_samples) -> dict[str, Any]:
    """Consultation runs (one per doctor mode) compared pair by pair on the cases they
    share (cases that ended in an error in either are left out), as 3MDBench does:
    Wilcoxon signed-rank per metric, Benjamini-Hochberg over every test made, significant
    at alpha = 0.01; macro F1 of each run on those cases.  Below `min_samples` shared
    cases the p-values are given with a warning and nothing is called significant."""
    from . import stats
    from .dialogue import NONE, diagnosis_scores

    runs = [evaluations.run(run_id) for run_id in dict.fromkeys(run_ids)]
    if len(runs) < 2 or not all(is_consultation(r["system"]) for r in runs):
        raise LumenError("Comparing modes needs two or more consultation runs.",
                         "Give the ids of dialogue:<mode> runs on the same cases.")
    results = {r["id"]: {x["sample_id"]: x for x in evaluations.results(r["id"]) if not x["error"]}
               for r in runs}
    shared = sorted(set.intersection(*(set(found) for found in results.values())))
    if len(shared) < 2:
        raise LumenError("The runs have fewer than two finished cases in common.",
                         "Compare runs on the same dataset once they have finished.")
    info = metric_info()
    rows = []
    for position, a in enumerate(runs):
        for b in runs[position + 1:]:
            for metric in _MODE_METRICS:
                pairs = [(results[a["id"]][s]["scores"].get(metric),
                          results[b["id"]][s]["scores"].get(metric)) for s in shared]
                pairs = [(x, y) for x, y in pairs if x is not None and y is not None]
                if len(pairs) < 2:
                    continue
                xs, ys = [p[0] for p in pairs], [p[1] for p in pairs]
                rows.append({"run_a": a["id"], "mode_a": a["system"].split(":", 1)[1],
                             "run_b": b["id"], "mode_b": b["system"].split(":", 1)[1],
                             "metric": metric, "label": info[metric]["label"], "n": len(pairs),
                             "mean_a": sum(xs) / len(xs), "mean_b": sum(ys) / len(ys),
                             "p_wilcoxon": stats.wilcoxon(ys, xs)["p_value"]})
    few = len(shared) < min_samples
    for row, adjusted in zip(rows, stats.benjamini_hochberg([r["p_wilcoxon"] for r in rows])):
        row["p_bh"] = adjusted
        row["significant"] = adjusted < MODE_ALPHA and not few
    f1 = {r["id"]: diagnosis_scores([(results[r["id"]][s]["target"],
                                      results[r["id"]][s]["output"] or NONE)
                                     for s in shared])["macro_f1"] for r in runs}
    return {"runs": [{"id": r["id"], "mode": r["system"].split(":", 1)[1],
                      "macro_f1": f1[r["id"]]} for r in runs],
            "shared_samples": len(shared), "tests": len(rows), "alpha": MODE_ALPHA, "rows": rows,
            "warning": (f"Only {len(shared)} cases in common: below {min_samples}, a p-value "
                        "says little, and no difference is called significant." if few else "")}


def mode_siblings(evaluations: EvaluationStore, run_id: str) -> list[str]:
    """This consultation run and, for each other doctor mode, the newest run on the same
    dataset that has finished cases: what a report compares it with."""
    run = evaluations.run(run_id)
    chosen = {run["system"]: run_id}
    for other in evaluations.runs():  # newest first
        if (other["dataset_id"] == run["dataset_id"] and is_consultation(other["system"])
                and other["system"] not in chosen and other["finished"] >= 2):
            chosen[other["system"]] = other["id"]
    return list(chosen.values())


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
    writer.writerow(["metric", "label", "n", "missing", "mean", "ci_low", "ci_high", "interval",
                     "no_interval"])
    for name, row in summary["metrics"].items():
        writer.writerow([name, row["label"], row["n"], row["missing"], row["mean"], row["ci_low"],
                         row["ci_high"], row["interval"], row["no_interval"]])
    for name, value in summary["counts"].items():
        writer.writerow([name, name.replace("_", " "), value, "", "", "", "", "", ""])
    if summary.get("consultation"):
        scores = summary["consultation"]["diagnosis"]
        interval = scores["macro_f1_interval"]
        writer.writerow(["macro_f1", "Consultation macro F1", scores["cases"], "", scores["macro_f1"],
                         interval["ci_low"], interval["ci_high"],
                         "bootstrap percentile" if interval["ci_low"] is not None else "",
                         interval["no_interval"]])
        for name in ("weighted_f1", "none_rate"):
            writer.writerow([name, name.replace("_", " "), scores["cases"], "", scores[name],
                             "", "", "", ""])
    return buffer.getvalue()


def charts(runs: list[tuple[str, dict[str, Any]]]) -> list[tuple[str, str]]:
    """One SVG bar chart per metric scale, every run side by side in each metric:
    (title, svg). `runs` are (name shown in the legend, summary)."""
    from .chart import Bar, axis_label, axis_range, bar_chart_svg

    by_scale: dict[str, dict[str, list[Bar]]] = {}
    labels: dict[str, str] = {}
    for name, summary in runs:
        for metric, row in summary["metrics"].items():
            if row["mean"] is None:
                continue
            labels[metric] = row["label"]
            by_scale.setdefault(row.get("scale", ""), {}).setdefault(metric, []).append(
                Bar(name, row["mean"], row["ci_low"], row["ci_high"]))
    drawn = []
    for scale, metrics in by_scale.items():
        highest = max(max(b.mean, b.high or b.mean) for bars in metrics.values() for b in bars)
        title = f"Results on the {scale} scale" if scale[:1].isdigit() else f"Results ({scale})"
        svg = bar_chart_svg(title, axis_label(scale),
                            [(labels[m], bars) for m, bars in metrics.items()],
                            axis_range(scale, highest))
        drawn.append((title, svg))
    return drawn


# A verdict's colour, in the report and in the Evaluation tab.
VERDICT_COLOURS = {"passed": "#1b7a3a", "failed": "#b3261e", "no claim": "#555555",
                   "undecided": "#8a5a00"}


def to_html(summary: dict[str, Any], criteria: list[dict[str, Any]],
            comparison: dict[str, Any] | None = None, *, bertscore_note: str = "",
            baseline: dict[str, Any] | None = None, modes: dict[str, Any] | None = None) -> str:
    """The validation report as one HTML page (resources/templates/report.html.j2);
    `baseline`, the summary of the run compared with, draws it beside this run in the charts."""
    from .chart import svg_data_uri

    run, config = summary["run"], summary["run"]["config"]
    # A local model is named by its file's sha256; a server model by its endpoint and
    # the model name the server reports.
    models = [{"role": role, "id": m["id"], "quantisation": m.get("quantisation") or "—",
               "fingerprint": m.get("sha256") or (m.get("endpoint", "") + " · " + m.get("server_model", ""))}
              for role, m in config["models"].items()]
    shown = [(f"{run['system']} ({run['id'][:8]})", summary)]
    if baseline is not None:
        shown.insert(0, (f"{baseline['run']['system']} ({baseline['run']['id'][:8]}, baseline)", baseline))
    return render(
        "report.html.j2", title=report_title(summary), summary=summary, run=run, config=config,
        dataset=summary["dataset"], machine=config.get("machine", {}), models=models,
        prompts=", ".join(f"{k} {v}" for k, v in config["prompt_versions"].items()),
        system_description=system_description(run["system"]), generator=_generator(config),
        consultation_run=is_consultation(run["system"]), decided=verdict(summary, criteria),
        verdict_colours=VERDICT_COLOURS, timing=_timing(summary),
        errors=[{"count": item["count"], "samples": _some(item["samples"]), "error": item["error"]}
                for item in summary.get("errors") or []],
        bertscore_note=bertscore_note,
        charts=[(chart_title, svg_data_uri(svg)) for chart_title, svg in charts(shown)],
        criteria=criteria, comparison=comparison, modes=modes, fmt=_fmt)


def _generator(config: dict[str, Any]) -> str:
    model = config.get("models", {}).get("generator") or {}
    return model.get("server_model") or model.get("id") or "—"


def system_description(system: str) -> str:
    return systems().get(system, system)


def report_title(summary: dict[str, Any]) -> str:
    """What a report is of, in one line: dataset, system, model and the run's date."""
    run = summary["run"]
    return (f"Lumen validation report: {summary['dataset']['name']}, {run['system']}, "
            f"{_generator(run['config'])}, {run['created_at'][:10]} (run {run['id']})")


def _some(ids: list[str], shown: int = 8) -> str:
    return ", ".join(ids[:shown]) + (f" and {len(ids) - shown} more" if len(ids) > shown else "")


def _timing(summary: dict[str, Any]) -> str:
    timing = summary["timing"]
    rate = timing["samples_per_minute"]
    how = ("on the clock, across every start and resume" if timing.get("clock") else
           "the sum of the samples' own times (the run predates Lumen's run clock)")
    return (f"Time: {_duration(timing['seconds'])} ({how})"
            + (f", {rate:.1f} samples per minute." if rate else "."))


def _duration(seconds: float) -> str:
    seconds = int(round(seconds))
    if seconds < 120:
        return f"{seconds} s"
    minutes, seconds = divmod(seconds, 60)
    hours, minutes = divmod(minutes, 60)
    return f"{hours} h {minutes:02d} min" if hours else f"{minutes} min {seconds:02d} s"


REPORT_KINDS = {".html": "html", ".htm": "html", ".pdf": "pdf", ".csv": "csv"}


def report_kind(name: str) -> str:
    """html, pdf or csv from a file name; anything else is refused before any work."""
    suffix = "." + name.rsplit(".", 1)[-1].lower() if "." in name else ""
    if suffix not in REPORT_KINDS:
        raise LumenError(f"Lumen cannot write a report as '{suffix or name}'.",
                         "Use a file name ending in .html, .pdf or .csv.")
    return REPORT_KINDS[suffix]


@dataclass
class ValidationReport:
    summary: dict[str, Any]
    criteria: list[dict[str, Any]]  # as check_criteria returns them
    comparison: dict[str, Any] | None = None
    baseline: dict[str, Any] | None = None  # the baseline run's summary
    bertscore_note: str = ""
    modes: dict[str, Any] | None = None  # consultation runs: compare_modes over the modes

    @property
    def verdict(self) -> dict[str, Any]:
        return verdict(self.summary, self.criteria)

    def to_html(self) -> str:
        return to_html(self.summary, self.criteria, self.comparison,
                       bertscore_note=self.bertscore_note, baseline=self.baseline,
                       modes=self.modes)

    def to_csv(self) -> str:
        return to_csv(self.summary)


def build_report(evaluations: EvaluationStore, run_id: str, rules: ReportRules,
                 criteria_text: str, baseline_id: str | None = None) -> ValidationReport:
    """Everything a validation report says of a run, the same for the window and `lumen
    bench report`: its summary, the criteria checked, and the comparison with a baseline."""
    from . import metrics

    criteria = parse_criteria(criteria_text)
    summary = summarize(evaluations, run_id, rules)
    comparison = baseline = None
    if baseline_id and baseline_id != run_id:
        comparison = compare(evaluations, baseline_id, run_id, resamples=rules.resamples)
        baseline = summarize(evaluations, baseline_id, rules)
    modes = None
    if is_consultation(summary["run"]["system"]):
        siblings = mode_siblings(evaluations, run_id)
        if len(siblings) > 1:
            try:
                modes = compare_modes(evaluations, siblings, min_samples=rules.min_samples)
            except LumenError:  # too few shared cases: the report says nothing of modes
                modes = None
    return ValidationReport(summary, check_criteria(summary, criteria), comparison, baseline,
                            "" if summary["consultation"] else metrics.BERTSCORE_ENCODER_NOTE,
                            modes)
