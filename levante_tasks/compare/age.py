"""Age equivalence: invert the children's increasing theta-by-age curve at the model's theta.

Curve: weighted isotonic (non-decreasing) regression of calibration theta on age (runs table, years), pooled
at tied ages, read between block mean ages by linear interpolation. Interval: percentile bootstrap
that resamples children and draws the model's theta from N(theta, SE^2). Outside the curve's range: flagged,
never extrapolated.
"""

from __future__ import annotations

import numpy as np
from scipy.optimize import isotonic_regression


def fit_curve(age: np.ndarray, theta: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(block ages, block thetas): the isotonic fit's level sets at their mean ages, strictly increasing."""
    ages, inverse = np.unique(age, return_inverse=True)
    weights = np.bincount(inverse).astype(float)
    means = np.bincount(inverse, weights=theta) / weights
    fitted = isotonic_regression(means, weights=weights).x
    starts = np.flatnonzero(np.r_[True, np.diff(fitted) != 0])
    block_w = np.add.reduceat(weights, starts)
    block_age = np.add.reduceat(ages * weights, starts) / block_w
    return block_age, fitted[starts]


def invert(theta: float, ages: np.ndarray, levels: np.ndarray) -> tuple[float, str]:
    """Age where the curve reaches `theta`; (youngest/oldest block age, flag) outside the fitted range."""
    if theta < levels[0]:
        return float(ages[0]), "below_youngest"
    if theta > levels[-1]:
        return float(ages[-1]), "above_oldest"
    return float(np.interp(theta, levels, ages)), ""


def age_equivalent(
    theta: float,
    se: float,
    age: np.ndarray,
    child_theta: np.ndarray,
    n_boot: int = 2000,
    seed: int = 0,
    level: float = 0.95,
) -> dict[str, object]:
    """Point age, bootstrap interval and range flag for one model theta against children (age, theta)."""
    ages, levels = fit_curve(age, child_theta)
    point, flag = invert(theta, ages, levels)
    rng = np.random.default_rng(seed)
    draws = np.empty(n_boot)
    for i in range(n_boot):
        idx = rng.integers(0, len(age), len(age))
        b_ages, b_levels = fit_curve(age[idx], child_theta[idx])
        draws[i] = invert(float(rng.normal(theta, se)), b_ages, b_levels)[0]
    alpha = (1.0 - level) / 2.0
    low, high = np.quantile(draws, [alpha, 1.0 - alpha])
    return {
        "age_equivalent": point,
        "age_ci_low": float(low),
        "age_ci_high": float(high),
        "age_flag": flag,
        "n_children": int(len(age)),
        "child_age_min": float(np.min(age)),
        "child_age_max": float(np.max(age)),
    }
