"""Significance tests: paired bootstrap, Wilcoxon, Bonferroni, Benjamini-Hochberg and the
confidence interval of a mean, on inputs whose answers are known."""

import math

import numpy as np
import pytest
from scipy import stats as scipy_stats

from desktop_app.core.evaluation.stats import (
    benjamini_hochberg, bonferroni, bootstrap_interval, metric_interval, paired_bootstrap, wilcoxon,
    wilson_interval)

# Benjamini and Hochberg (1995), section 3.2: the 15 p-values of their worked example.
BH_1995_P = [0.0001, 0.0004, 0.0019, 0.0095, 0.0201, 0.0278, 0.0298, 0.0344, 0.0459,
             0.3240, 0.4262, 0.5719, 0.6528, 0.7590, 1.0000]
# By hand: p(i) x 15 / i, then the running minimum from the largest p down.
# i = 6 gives 0.0278 x 15/6 = 0.0695, lowered to i = 7's 0.0298 x 15/7 = 0.063857...
BH_1995_ADJUSTED = [0.0015, 0.003, 0.0095, 0.035625, 0.0603, 0.0298 * 15 / 7, 0.0298 * 15 / 7,
                    0.0645, 0.0765, 0.486, 0.4262 * 15 / 11, 0.714875, 0.6528 * 15 / 13,
                    0.7590 * 15 / 14, 1.0]


# --- paired bootstrap -----------------------------------------------------------------

@pytest.fixture(scope="module")
def shifted_scores():
    """System A = system B + 2 points, with per-sample noise: the true mean difference is 2."""
    rng = np.random.default_rng(3)
    b = rng.normal(50, 10, 200)
    return b + 2 + rng.normal(0, 1, 200), b


def test_bootstrap_ci_contains_the_true_shift_and_p_is_small(shifted_scores):
    a, b = shifted_scores
    result = paired_bootstrap(a, b)
    assert result["mean_difference"] == pytest.approx(float(np.mean(a - b)))
    assert result["ci_low"] < 2.0 < result["ci_high"]
    assert result["ci_low"] < result["mean_difference"] < result["ci_high"]
    assert result["p_value"] < 0.001


def test_bootstrap_of_an_exact_constant_shift():
    b = np.linspace(0, 100, 50)
    result = paired_bootstrap(b + 5, b, resamples=2000)
    assert result["mean_difference"] == pytest.approx(5)
    assert result["ci_low"] == pytest.approx(5) and result["ci_high"] == pytest.approx(5)
    assert result["p_value"] == 0.0


def test_bootstrap_of_identical_systems_gives_p_1():
    scores = np.random.default_rng(0).uniform(0, 100, 100)
    result = paired_bootstrap(scores, scores.copy())
    assert result == {"mean_difference": 0.0, "ci_low": 0.0, "ci_high": 0.0, "p_value": 1.0}


def test_bootstrap_of_pure_noise_gives_a_large_p():
    rng = np.random.default_rng(5)
    a, b = rng.normal(0, 1, 200), rng.normal(0, 1, 200)
    result = paired_bootstrap(a, b, seed=1)
    assert result["ci_low"] < 0 < result["ci_high"]
    assert result["p_value"] > 0.2


def test_bootstrap_p_is_the_doubled_tail_share(shifted_scores):
    """Reproduce the definition by hand: resampled means at or below zero (the observed
    mean is below zero here, so at or above zero), doubled."""
    a, b = shifted_scores
    a = b + np.random.default_rng(9).normal(-0.1, 1, b.size)  # small negative shift
    result = paired_bootstrap(a, b, resamples=3000, seed=4)
    d = a - b
    means = d[np.random.default_rng(4).integers(0, d.size, size=(3000, d.size))].mean(axis=1)
    assert d.mean() < 0
    assert result["p_value"] == pytest.approx(min(1.0, 2 * np.mean(means >= 0)))
    assert result["ci_low"] == pytest.approx(np.percentile(means, 2.5))
    assert result["ci_high"] == pytest.approx(np.percentile(means, 97.5))


def test_bootstrap_is_deterministic_for_a_seed(shifted_scores):
    a, b = shifted_scores
    a = b + np.random.default_rng(2).normal(0.05, 1, b.size)
    assert paired_bootstrap(a, b, seed=7) == paired_bootstrap(a, b, seed=7)
    assert paired_bootstrap(a, b, seed=7) != paired_bootstrap(a, b, seed=8)


def test_bootstrap_refuses_unpaired_or_empty_input():
    with pytest.raises(ValueError):
        paired_bootstrap([1, 2, 3], [1, 2])
    with pytest.raises(ValueError):
        paired_bootstrap([], [])
    with pytest.raises(ValueError):
        paired_bootstrap([1, float("nan")], [1, 2])


# --- Wilcoxon -------------------------------------------------------------------------

def test_wilcoxon_equals_scipy_on_a_fixed_vector():
    a = [61.2, 55.0, 70.4, 48.9, 66.3, 59.1, 72.8, 50.5, 63.7, 58.2, 67.9, 54.4]
    b = [58.0, 56.1, 65.2, 47.0, 60.9, 59.1, 69.5, 52.3, 60.0, 55.7, 61.1, 50.2]
    expected = scipy_stats.wilcoxon(a, b)
    result = wilcoxon(a, b)
    assert result == {"statistic": float(expected.statistic), "p_value": float(expected.pvalue)}


def test_wilcoxon_exact_p_when_every_difference_is_positive():
    # n = 10 positive differences: W- = 0, exact two-sided p = 2 / 2**10
    result = wilcoxon(np.arange(1, 11) + 0.5, np.zeros(10))
    assert result["statistic"] == 0.0
    assert result["p_value"] == pytest.approx(2 / 2 ** 10)


def test_wilcoxon_all_zero_differences_gives_p_1():
    assert wilcoxon([3.0, 4.0, 5.0], [3.0, 4.0, 5.0]) == {"statistic": 0.0, "p_value": 1.0}


# --- multiple comparisons ----------------------------------------------------------------

def test_bonferroni_multiplies_by_m_and_caps_at_1():
    assert bonferroni([0.01, 0.2, 0.0004, 0.5]) == pytest.approx([0.04, 0.8, 0.0016, 1.0])
    assert bonferroni([0.001] * 90)[0] == pytest.approx(0.09)  # LAMP-MedQA's m = 90
    assert bonferroni([]) == []


def test_benjamini_hochberg_matches_the_1995_worked_example():
    adjusted = benjamini_hochberg(BH_1995_P)
    assert adjusted == pytest.approx(BH_1995_ADJUSTED)
    # the paper's conclusion at q = 0.05: the four smallest p-values are rejected
    assert sum(p <= 0.05 for p in adjusted) == 4


def test_benjamini_hochberg_keeps_the_input_order():
    order = np.random.default_rng(11).permutation(len(BH_1995_P))
    shuffled = [BH_1995_P[i] for i in order]
    assert benjamini_hochberg(shuffled) == pytest.approx([BH_1995_ADJUSTED[i] for i in order])
    assert benjamini_hochberg([]) == []


def test_adjustments_refuse_values_that_are_not_p_values():
    with pytest.raises(ValueError):
        bonferroni([0.5, 1.2])
    with pytest.raises(ValueError):
        benjamini_hochberg([-0.1])


# --- a metric's own interval --------------------------------------------------------------

def test_wilson_interval_matches_the_formula_and_stays_within_zero_and_one():
    z = 1.959963984540054
    # 0 of 10: low 0, high z^2 / (n + z^2)
    low, high = wilson_interval(0, 10)
    assert low == pytest.approx(0.0, abs=1e-12) and high == pytest.approx(z * z / (10 + z * z), abs=1e-6)
    low, high = wilson_interval(5, 10)
    centre, half = (5 + z * z / 2) / (10 + z * z), z / (10 + z * z) * math.sqrt(10 * 0.25 + z * z / 4)
    assert (low, high) == (pytest.approx(centre - half, abs=1e-6), pytest.approx(centre + half, abs=1e-6))
    assert wilson_interval(10, 10)[1] == pytest.approx(1.0)
    with pytest.raises(ValueError):
        wilson_interval(0, 0)


def test_bootstrap_interval_never_leaves_the_range_of_the_scores():
    # A small run of BLEU-like scores, most of them 0: a t-interval goes below 0 here.
    values = [0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 12.5]
    t_low = np.mean(values) - 2.36 * np.std(values, ddof=1) / math.sqrt(len(values))
    assert t_low < 0
    low, high = bootstrap_interval(values, resamples=2000)
    assert 0.0 <= low <= np.mean(values) <= high <= 12.5
    assert bootstrap_interval([4.0, 4.0, 4.0]) == (4.0, 4.0)
    assert bootstrap_interval(values, resamples=2000) == (low, high)  # seeded
    wide = bootstrap_interval(np.random.default_rng(1).normal(10, 2, 40), resamples=4000)
    narrow = bootstrap_interval(np.random.default_rng(1).normal(10, 2, 40), resamples=4000,
                                confidence=0.8)
    assert wide[0] < narrow[0] < narrow[1] < wide[1]
    with pytest.raises(ValueError):
        bootstrap_interval([7.0])


def test_metric_interval_picks_wilson_for_rates_and_refuses_too_few_samples():
    rate = metric_interval([1, 0, 1, 1, 0, 1, 1, 1, 1, 1], min_samples=10, rate=True,
                           resamples=2000)
    assert rate["interval"] == "Wilson" and rate["n"] == 10 and rate["mean"] == pytest.approx(0.8)
    assert (rate["ci_low"], rate["ci_high"]) == pytest.approx(wilson_interval(8, 10))
    # Scores that happen to be 0 and 1 are not a rate: a 1-5 judge at 1 on every sample (all
    # of them blank) is 1 to 1, not Wilson's 0.72 to 1 below the scale.
    judge = metric_interval([1.0] * 10, min_samples=10, resamples=2000)
    assert judge["interval"] == "bootstrap percentile" and (judge["ci_low"], judge["ci_high"]) == (1, 1)
    with pytest.raises(ValueError):
        metric_interval([0.5] * 10, min_samples=10, rate=True)
    scores = metric_interval([0.2, 0.5, 0.9, 0.4, 0.7, 0.1, 0.3, 0.8, 0.6, 0.5],
                             min_samples=10, resamples=2000)
    assert scores["interval"] == "bootstrap percentile" and 0.1 <= scores["ci_low"] < scores["ci_high"] <= 0.9
    few = metric_interval([0.2, 0.5, 0.9], min_samples=10)
    assert few["ci_low"] is None and few["ci_high"] is None and few["mean"] == pytest.approx(1.6 / 3)
    assert "too few samples (3" in few["no_interval"]
    assert metric_interval([7.0], min_samples=1)["no_interval"]  # one value has no spread
    with pytest.raises(ValueError):
        metric_interval([], min_samples=1)
