"""Significance tests for comparing two systems on the same samples, as LAMP-MedQA
reports them: per-sample paired bootstrap (Koehn 2004; Berg-Kirkpatrick et al. 2012)
with 10,000 resamples, Wilcoxon signed-rank as a robustness check, Bonferroni across
all tests; Benjamini-Hochberg is offered as the less conservative alternative.

A metric's own interval (`metric_interval`) respects the metric's range: Wilson for
rates (a metric whose every score is 0 or 1 by definition), percentile bootstrap for
every other score, none below a sample count IT sets.

Inputs to the paired tests are per-sample scores of system A and system B in the same sample order;
differences are always A - B.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from scipy import stats as scipy_stats

# Resampled means are computed this many resamples at a time, so that 10,000
# resamples of a large dataset never need a 10,000 x n index matrix at once.
_RESAMPLE_CHUNK_ELEMENTS = 2_000_000


def _paired_differences(a: Sequence[float], b: Sequence[float]) -> np.ndarray:
    a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    if a.ndim != 1 or a.shape != b.shape:
        raise ValueError(f"Paired scores need two lists of the same length ({a.shape} and {b.shape}).")
    if a.size == 0:
        raise ValueError("Paired scores are empty.")
    if not (np.isfinite(a).all() and np.isfinite(b).all()):
        raise ValueError("Paired scores contain NaN or infinite values.")
    return a - b


def _resampled_means(values: np.ndarray, resamples: int, rng: np.random.Generator) -> np.ndarray:
    """Means of `resamples` bootstrap samples (n draws with replacement) of `values`."""
    n = values.size
    chunk = max(1, _RESAMPLE_CHUNK_ELEMENTS // n)
    means = np.empty(resamples, dtype=np.float64)
    for start in range(0, resamples, chunk):
        stop = min(start + chunk, resamples)
        indices = rng.integers(0, n, size=(stop - start, n))
        means[start:stop] = values[indices].mean(axis=1)
    return means


def paired_bootstrap(a: Sequence[float], b: Sequence[float], resamples: int = 10_000,
                     seed: int = 0, *, confidence: float = 0.95) -> dict[str, float]:
    """Paired bootstrap on per-sample differences d = a - b.

    Each resample draws n samples with replacement (the same draw for A and B, which is
    what makes it paired) and takes the mean of d. Returns:

    - mean_difference: mean of d on the real data;
    - ci_low, ci_high: percentile interval of the resampled means (2.5th and 97.5th
      percentiles at the default 95%);
    - p_value (two-sided): the share of resampled means on the other side of zero from
      the observed mean, zero itself included (<= 0 when the observed mean is >= 0,
      >= 0 when it is < 0), doubled and capped at 1. This is LAMP-MedQA's definition
      (statistical_tests.py). The smallest non-zero value is 2/resamples; 0 means
      "below 1/resamples", not impossible.

    The same seed gives the same result.
    """
    if resamples < 1:
        raise ValueError("At least one bootstrap resample is needed.")
    differences = _paired_differences(a, b)
    observed = float(differences.mean())
    means = _resampled_means(differences, resamples, np.random.default_rng(seed))
    tail = (means <= 0) if observed >= 0 else (means >= 0)
    alpha = 1.0 - confidence
    low, high = np.percentile(means, [100 * alpha / 2, 100 * (1 - alpha / 2)])
    return {"mean_difference": observed, "ci_low": float(low), "ci_high": float(high),
            "p_value": float(min(1.0, 2.0 * tail.mean()))}


def wilcoxon(a: Sequence[float], b: Sequence[float]) -> dict[str, float]:
    """Wilcoxon signed-rank test (Wilcoxon 1945) of a - b, two-sided, by
    `scipy.stats.wilcoxon` with its defaults (zero differences dropped, exact
    distribution for small samples). If every difference is zero there is nothing to
    rank and no evidence of a difference: statistic 0, p = 1."""
    differences = _paired_differences(a, b)
    if not differences.any():
        return {"statistic": 0.0, "p_value": 1.0}
    result = scipy_stats.wilcoxon(differences)
    return {"statistic": float(result.statistic), "p_value": float(result.pvalue)}


def _checked_p_values(p_values: Sequence[float]) -> np.ndarray:
    p = np.asarray(p_values, dtype=np.float64).reshape(-1)
    if ((p < 0) | (p > 1) | ~np.isfinite(p)).any():
        raise ValueError("p-values must lie between 0 and 1.")
    return p


def bonferroni(p_values: Sequence[float]) -> list[float]:
    """Bonferroni-adjusted p-values (p x m, capped at 1), in input order; m is the number
    of p-values given (LAMP-MedQA corrects over all m = 90 tests of the paper at once)."""
    p = _checked_p_values(p_values)
    return [float(x) for x in np.minimum(p * p.size, 1.0)]


def benjamini_hochberg(p_values: Sequence[float]) -> list[float]:
    """Benjamini-Hochberg (1995) adjusted p-values (false discovery rate), in input
    order, by `scipy.stats.false_discovery_control(method="bh")`."""
    p = _checked_p_values(p_values)
    if p.size == 0:
        return []
    return [float(x) for x in scipy_stats.false_discovery_control(p, method="bh")]


def wilson_interval(successes: int, n: int, confidence: float = 0.95) -> tuple[float, float]:
    """Wilson score interval for a rate of `successes` in `n` (Wilson 1927), by
    `scipy.stats.binomtest(...).proportion_ci(method="wilson")`: it stays inside 0 to 1
    and keeps a width at 0 and n successes, where a normal interval collapses."""
    if n < 1:
        raise ValueError("A rate needs at least one sample.")
    interval = scipy_stats.binomtest(int(successes), int(n)).proportion_ci(
        confidence_level=confidence, method="wilson")
    return float(interval.low), float(interval.high)


def bootstrap_interval(values: Sequence[float], resamples: int = 10_000, seed: int = 0, *,
                       confidence: float = 0.95) -> tuple[float, float]:
    """Percentile bootstrap interval of the mean (`scipy.stats.bootstrap`,
    method="percentile"): its bounds are means of resampled values, so they never leave
    the range the values themselves lie in (a BLEU interval never goes below 0).
    Identical values give a zero-width interval."""
    x = np.asarray(values, dtype=np.float64).reshape(-1)
    if x.size < 2:
        raise ValueError("An interval needs at least two values.")
    if not np.isfinite(x).all():
        raise ValueError("Scores contain NaN or infinite values.")
    if np.ptp(x) == 0.0:
        return float(x[0]), float(x[0])
    result = scipy_stats.bootstrap((x,), np.mean, n_resamples=resamples, method="percentile",
                                   confidence_level=confidence, random_state=seed,
                                   vectorized=True)
    low, high = result.confidence_interval
    # Rounding in the resampled means can land a hair outside the data's range.
    return float(max(low, x.min())), float(min(high, x.max()))


def metric_interval(values: Sequence[float], *, min_samples: int, rate: bool = False,
                    resamples: int = 10_000, confidence: float = 0.95) -> dict[str, Any]:
    """The mean of one metric's per-sample scores with the interval that suits it:
    Wilson for a rate (`rate`: a metric whose scores are 0 or 1 by definition), percentile
    bootstrap otherwise, whose bounds are means of the scores and so stay within the
    metric's range.  Scores that merely happen to be 0 and 1 (a SARI of 0 on every
    sample, a 1-5 judge at 1) are not a rate: a Wilson interval on them would be a
    proportion's, outside the metric's scale.  With fewer than `min_samples` scores there
    is no interval, and the reason says so."""
    x = np.asarray(values, dtype=np.float64).reshape(-1)
    if x.size == 0:
        raise ValueError("No values to average.")
    # The mean of scores never leaves their range; summing in floating point can, by a hair.
    mean = float(min(max(x.mean(), x.min()), x.max()))
    row: dict[str, Any] = {"mean": mean, "n": int(x.size), "ci_low": None,
                           "ci_high": None, "interval": "", "no_interval": ""}
    if x.size < max(2, min_samples):
        row["no_interval"] = f"too few samples ({x.size}; an interval needs {max(2, min_samples)})"
        return row
    if rate:
        if not np.isin(x, (0.0, 1.0)).all():
            raise ValueError("A rate's scores are 0 or 1.")
        row["ci_low"], row["ci_high"] = wilson_interval(int(x.sum()), int(x.size), confidence)
        row["interval"] = "Wilson"
    else:
        row["ci_low"], row["ci_high"] = bootstrap_interval(x, resamples, confidence=confidence)
        row["interval"] = "bootstrap percentile"
    return row
