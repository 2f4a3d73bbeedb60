"""Statistics of the summary matrix against textbook values: Wilson intervals, seed spread, lmms-eval's stderrs."""

from __future__ import annotations

import math

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


@pytest.mark.parametrize("df", [1, 2, 3, 4, 7, 10, 30, 120])
def test_t_quantile_matches_scipy(df: int) -> None:
    from scipy.special import stdtrit

    assert stats.t_quantile_975(df) == pytest.approx(float(stdtrit(df, 0.975)), rel=1e-10)
