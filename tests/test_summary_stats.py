"""Statistics of the summary matrix against textbook values: Wilson intervals, seed spread, lmms-eval's stderrs."""

from __future__ import annotations

import math

import numpy as np
import pytest

from levante_tasks.summary import stats


@pytest.mark.parametrize(
    ("k", "n", "low", "high"),
    [
        (0, 10, 0.0, 0.27753),  # upper = z^2 / (n + z^2)
        (5, 10, 0.23659, 0.76341),
        (10, 10, 0.72247, 1.0),
        (2, 9, 0.06323, 0.54741),
    ],
)
def test_wilson_interval_matches_published_values(k: int, n: int, low: float, high: float) -> None:
    lo, hi = stats.wilson_interval(k, n)
    assert lo == pytest.approx(low, abs=5e-5) and hi == pytest.approx(high, abs=5e-5)


def test_wilson_interval_of_no_items_is_undefined() -> None:
    assert stats.wilson_interval(0, 0) == (None, None)


def test_seed_summary_uses_sample_sd_and_t_quantile() -> None:
    two = stats.seed_summary([0.2, 0.4])
    assert two["n"] == 2 and two["mean"] == pytest.approx(0.3)
    assert two["sd"] == pytest.approx(math.sqrt(0.02))  # ddof = 1
    assert two["ci95_radius"] == pytest.approx(12.7062047 * math.sqrt(0.02) / math.sqrt(2))
    three = stats.seed_summary([0.0, 0.5, 1.0])
    assert three["sd"] == pytest.approx(0.5)
    assert three["ci95_radius"] == pytest.approx(4.30265273 * 0.5 / math.sqrt(3))


def test_seed_summary_of_one_seed_has_no_spread() -> None:
    one = stats.seed_summary([0.7])
    assert one == {"n": 1, "mean": pytest.approx(0.7), "sd": None, "ci95_radius": None}


def test_lmms_eval_stderrs() -> None:
    values = [1.0, 0.0, 0.0, 1.0, 1.0]
    p = 0.6
    expected = math.sqrt(p * (1 - p) * 5 / 4 / 5)
    assert stats.mean_stderr(values) == pytest.approx(expected)
    assert stats.mean_stderr([1.0]) is None
    # pooled over two subtasks of sizes 5 and 4 (lmms-eval's group stderr)
    pooled = stats.pooled_sample_stderr([expected, 0.25], [5, 4])
    assert pooled == pytest.approx(math.sqrt(((4 * expected**2 * 5) + (3 * 0.25**2 * 4)) / 7 / 9))


@pytest.mark.parametrize(("df", "table"), [(1, 12.7062), (2, 4.3027), (3, 3.1824), (4, 2.7764), (7, 2.3646),
                                           (10, 2.2281), (30, 2.0423), (120, 1.9799)])
def test_t_quantile_matches_the_published_table(df: int, table: float) -> None:
    """t(0.975, df) as printed in t tables (4 decimals)."""
    assert stats.t_quantile_975(df) == pytest.approx(table, abs=5e-5)


def test_t_quantile_table_is_scipys_to_the_bit() -> None:
    """The table that spares summarize the scipy import holds exactly what stdtrit gives (and the call past it)."""
    for df in range(1, len(stats.T_975) + 2):
        assert stats.t_quantile_975(df) == stats.t_quantile_975_scipy(df), df


def _coverage(k: int, pooled: bool, sims: int = 1500, n_items: int = 40) -> tuple[float, float]:
    """(coverage of the true mean item probability, mean width) of the 95% interval over simulated runs: each
    run draws n_items items with success probability p_i ~ Beta(0.4, 0.6) (true mean 0.4) and asks each k times."""
    rng = np.random.default_rng(20261201 + k)
    covered, widths = 0, []
    for _ in range(sims):
        p = rng.beta(0.4, 0.6, size=n_items)
        hits = rng.binomial(k, p)
        if pooled:  # the old rule: Wilson over the n * k responses as if they were independent
            low, high = stats.wilson_interval(int(hits.sum()), n_items * k)
        else:
            low, high = stats.item_interval(list(hits / k), n_items * k)
        covered += low <= 0.4 <= high
        widths.append(high - low)
    return covered / sims, float(np.mean(widths))


def test_item_interval_recovers_the_mean_and_does_not_narrow_with_seeds() -> None:
    """Recovery: near-95% coverage for 1, 3 and 8 seeds of the same items. The width does not shrink as 1/sqrt(k):
    only as the SE of the mean item probability does, sqrt((Var(p_i) + E[p_i(1 - p_i)] / k) / n), whose ratio to
    k = 1 is sqrt((0.12 + 0.12 / k) / 0.24) here (0.816 for k = 3, 0.750 for k = 8; 1/sqrt(k) = 0.577, 0.354).
    The old pooled Wilson interval shrinks as 1/sqrt(k) and under-covers."""
    found = {k: _coverage(k, pooled=False) for k in (1, 3, 8)}
    for k, (coverage, width) in found.items():
        assert 0.93 <= coverage <= 0.98, (k, coverage)
        assert width / found[1][1] == pytest.approx(math.sqrt((0.12 + 0.12 / k) / 0.24), abs=0.04), k
    old_coverage, old_width = _coverage(8, pooled=True)
    assert old_coverage < 0.85 and old_width < 0.6 * found[8][1]


def test_item_interval_with_one_replicate_is_the_wilson_interval() -> None:
    outcomes = [1] * 13 + [0] * 27
    assert stats.item_interval(outcomes, 40) == pytest.approx(stats.wilson_interval(13, 40))
    assert stats.item_interval([0.0] * 10, 30) == pytest.approx(stats.wilson_interval(0, 10))
    assert stats.item_interval([], 0) == (None, None)
