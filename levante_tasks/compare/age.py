"""Age equivalence: invert the children's increasing theta-by-age curve at the model's theta.

Curve: weighted isotonic (non-decreasing) regression of theta on age (runs table, years), pooled at tied ages,
read between block mean ages by linear interpolation. Interval: percentile bootstrap that resamples children and
draws the model's theta from N(theta, SE^2). A theta outside the curve's range is "below youngest" / "above
oldest", never snapped to the youngest or oldest age: such a point estimate is NaN with its flag.

Edges: a draw is "below youngest" when it falls below its bootstrap curve or inverts to an age up to that curve's
youngest edge (the oldest age of its youngest level set or of its youngest `END_SHARE` of children, whichever is
older), and likewise "above oldest" from its oldest edge. Within its end level set the curve is flat, and an
isotonic fit's end levels are a minimum / maximum of running means over the fewest children (biased outward), so
the curve cannot place an age there (recovery: without this rule 95% intervals covered 0.86-0.93 at true ages
2-6 and 0.88 at 11-12 with children aged 5-12, now 0.95-1.00; docs/comparison.md section 4). An interval end that falls
among such draws is NaN with the flag `age_ci_low_flag` / `age_ci_high_flag`: a low end "below youngest" is open,
a high end "below youngest" bounds the age at `youngest_edge_age` (the point curve's edge), and likewise
`oldest_edge_age`.

The children's side (the curve and its bootstrap curves) is fitted once per task (`AgeCurves`); every model is
then inverted through all curves at once, with the same normal draws z (theta + SE * z), so models differ only
by their own theta and SE.
"""

from __future__ import annotations

import numpy as np
from scipy.optimize import isotonic_regression

BELOW, ABOVE = "below_youngest", "above_oldest"
END_SHARE = 0.05  # the youngest / oldest share of children whose ages an interval end cannot resolve (edges above)
SPACING = 16.0  # curves are stacked on one axis, curve r shifted by r * SPACING (EAP thetas lie in [-6, 6])
RESAMPLE_SLICE_DRAWS = 1 << 16  # children drawn per slice of bootstrap resamples (`_resample_sums`)


def fit_curve(age: np.ndarray, theta: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(block ages, block thetas): the isotonic fit's level sets at their mean ages, strictly increasing."""
    return level_sets(age, theta)[:2]


def level_sets(age: np.ndarray, theta: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The isotonic fit's level sets: mean age, level, youngest and oldest age of each (ages ascending)."""
    ages, inverse = np.unique(age, return_inverse=True)
    weights = np.bincount(inverse).astype(float)
    means = np.bincount(inverse, weights=theta) / weights
    fitted = isotonic_regression(means, weights=weights).x
    starts = np.flatnonzero(np.r_[True, np.diff(fitted) != 0])
    block_age = np.add.reduceat(ages * weights, starts) / np.add.reduceat(weights, starts)
    return block_age, fitted[starts], ages[starts], ages[np.r_[starts[1:], len(ages)] - 1]


def invert(theta: float, ages: np.ndarray, levels: np.ndarray) -> tuple[float, str]:
    """Age where the curve reaches `theta`; (NaN, flag) outside the fitted range."""
    if theta < levels[0]:
        return float("nan"), BELOW
    if theta > levels[-1]:
        return float("nan"), ABOVE
    return float(np.interp(theta, levels, ages)), ""


class AgeCurves:
    """The children's curve and `n_boot` bootstrap curves of one task, stacked for vectorised inversion.

    All bootstrap fits are one isotonic regression: resample r's pooled means are shifted by r * SPACING, which
    keeps every resample non-decreasing against the next, so the pooled-adjacent-violators solution of the
    concatenation is each resample's own fit (shifted); levels stay shifted in `stacked_levels`.
    """

    def __init__(self, age: np.ndarray, theta: np.ndarray, n_boot: int, seed: int) -> None:
        age, theta = np.asarray(age, dtype=float), np.asarray(theta, dtype=float)
        self.n_children = len(age)
        self.age_min, self.age_max = float(np.min(age)), float(np.max(age))
        self.ages, self.levels, first_ages, last_ages = level_sets(age, theta)
        unique_ages, code = np.unique(age, return_inverse=True)
        low, high = _edges(unique_ages, np.bincount(code)[None, :])
        self.youngest_edge_age = max(float(last_ages[0]), float(low[0]))
        self.oldest_edge_age = min(float(first_ages[-1]), float(high[0]))
        rng = np.random.default_rng(seed)
        weights, sums = _resample_sums(rng, code, theta, len(unique_ages), n_boot)
        self.z = rng.standard_normal(n_boot)
        drawn = np.flatnonzero(weights)
        row = drawn // len(unique_ages)
        w = weights[drawn]
        fitted = isotonic_regression(sums[drawn] / w + row * SPACING, weights=w).x
        starts = np.flatnonzero(np.r_[True, (np.diff(fitted) != 0) | (np.diff(row) != 0)])
        block_w = np.add.reduceat(w, starts)
        drawn_ages = unique_ages[drawn % len(unique_ages)]  # ascending within each resample
        self.stacked_ages = np.add.reduceat(drawn_ages * w, starts) / block_w
        self.stacked_levels = fitted[starts]
        block_row = row[starts]
        self.starts = np.searchsorted(block_row, np.arange(n_boot), side="left")
        self.ends = np.searchsorted(block_row, np.arange(n_boot), side="right") - 1
        low, high = _edges(unique_ages, weights.reshape(n_boot, len(unique_ages)))
        self.first_edge = np.maximum(drawn_ages[np.r_[starts[1:], len(drawn_ages)] - 1][self.starts], low)
        self.last_edge = np.minimum(drawn_ages[starts][self.ends], high)

    def draws(self, theta: np.ndarray, se: np.ndarray) -> np.ndarray:
        """Bootstrap age draws, models x n_boot: -inf below the curve or up to its youngest edge, +inf above it or
        from its oldest edge (module docstring; a flat one-set curve keeps its one age for a draw on its level)."""
        t = np.asarray(theta, dtype=float)[:, None] + np.asarray(se, dtype=float)[:, None] * self.z[None, :]
        shift = SPACING * np.arange(len(self.z))[None, :]
        low = self.stacked_levels[self.starts][None, :] - shift
        high = self.stacked_levels[self.ends][None, :] - shift
        pos = np.searchsorted(self.stacked_levels, t + shift, side="left")
        pos = np.clip(pos, self.starts[None, :] + 1, np.maximum(self.ends[None, :], self.starts[None, :] + 1))
        pos = np.minimum(pos, len(self.stacked_levels) - 1)
        x0, x1 = self.stacked_levels[pos - 1] - shift, self.stacked_levels[pos] - shift
        a0, a1 = self.stacked_ages[pos - 1], self.stacked_ages[pos]
        with np.errstate(invalid="ignore", divide="ignore"):
            inside = np.where(x1 > x0, a0 + (t - x0) / (x1 - x0) * (a1 - a0), a0)
        single = (self.ends == self.starts)[None, :]  # a flat bootstrap curve: one block, one age
        inside = np.where(single, self.stacked_ages[self.starts][None, :], inside)
        below = (t < low) | (~single & (inside <= self.first_edge[None, :]))
        above = (t > high) | (~single & (inside >= self.last_edge[None, :]))
        return np.where(below, -np.inf, np.where(above, np.inf, inside))

    def band(self, ages: np.ndarray, level: float = 0.95) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The curve at `ages` and its pointwise percentile band over the bootstrap curves (each read like the
        curve: linear between its level sets' mean ages, flat beyond them)."""
        ages = np.asarray(ages, dtype=float)
        curves = np.empty((len(self.z), len(ages)))
        for r, (start, end) in enumerate(zip(self.starts, self.ends, strict=True)):
            blocks = slice(start, end + 1)
            curves[r] = np.interp(ages, self.stacked_ages[blocks], self.stacked_levels[blocks] - r * SPACING)
        alpha = (1.0 - level) / 2.0
        low, high = np.quantile(curves, [alpha, 1.0 - alpha], axis=0)
        return np.interp(ages, self.ages, self.levels), low, high

    def equivalents(self, theta: np.ndarray, se: np.ndarray, level: float = 0.95) -> list[dict[str, object]]:
        """Point age, percentile interval and flags per model (theta, SE arrays)."""
        draws = np.sort(self.draws(theta, se), axis=1)
        alpha = (1.0 - level) / 2.0
        out = []
        for t, row in zip(np.asarray(theta, dtype=float), draws, strict=True):
            point, flag = invert(float(t), self.ages, self.levels)
            low, low_flag = _quantile(row, alpha)
            high, high_flag = _quantile(row, 1.0 - alpha)
            out.append({
                "age_equivalent": point,
                "age_ci_low": low,
                "age_ci_high": high,
                "age_flag": flag,
                "age_ci_low_flag": low_flag,
                "age_ci_high_flag": high_flag,
                "n_children": self.n_children,
                "child_age_min": self.age_min,
                "child_age_max": self.age_max,
                "youngest_edge_age": self.youngest_edge_age,
                "oldest_edge_age": self.oldest_edge_age,
            })
        return out


def _resample_sums(rng: np.random.Generator, code: np.ndarray, theta: np.ndarray, n_ages: int,
                   n_boot: int) -> tuple[np.ndarray, np.ndarray]:
    """(children drawn, sum of their thetas) per resample and age, flat (resample-major): `n_boot` resamples of
    all children with replacement (`code`: each child's age position among the `n_ages` distinct ages).

    Drawn a slice of resamples at a time, so each slice's draws stay in cache (one resample-by-child array of
    several MB per task cost more in memory traffic than in arithmetic); the draws, the summation order and so the
    bits are those of one `rng.integers(0, n, (n_boot, n))` (the generator's stream does not depend on how the
    draws are split)."""
    n = len(code)
    weights = np.empty(n_boot * n_ages)
    sums = np.empty(n_boot * n_ages)
    rows = max(1, RESAMPLE_SLICE_DRAWS // max(n, 1))
    for start in range(0, n_boot, rows):
        stop = min(start + rows, n_boot)
        idx = rng.integers(0, n, (stop - start, n))
        flat = code[idx]
        flat += n_ages * np.arange(stop - start)[:, None]
        flat = flat.ravel()
        size = (stop - start) * n_ages
        weights[start * n_ages : stop * n_ages] = np.bincount(flat, minlength=size)
        sums[start * n_ages : stop * n_ages] = np.bincount(flat, weights=theta[idx].ravel(), minlength=size)
    return weights, sums


def _edges(ages: np.ndarray, counts: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per row of `counts` (children per age of `ages`, ascending; every row has the same total n): the age of its
    ceil(END_SHARE * n)-th youngest and oldest child: the first age whose count up to it reaches m and the last
    whose count from it to the oldest does. Every row sums to n, so one running sum over all rows is row r's own
    plus r * n: non-decreasing across rows, and each row's two ages are two binary searches in it (counts are
    whole numbers, exact as floats)."""
    n_rows, n_ages = counts.shape
    n = counts[0].sum()
    m = max(int(np.ceil(END_SHARE * n)), 1)
    running = np.cumsum(counts)  # row-major: row r's running count + r * n
    before = running - counts.ravel()  # the count of children younger than each age, + r * n
    offset = np.arange(n_rows) * n
    first = np.arange(n_rows) * n_ages
    youngest = np.searchsorted(running, offset + m, side="left") - first
    oldest = np.searchsorted(before, offset + (n - m), side="right") - first - 1
    return ages[youngest], ages[oldest]


def _quantile(sorted_draws: np.ndarray, q: float) -> tuple[float, str]:
    """Linear-interpolation quantile of sorted draws; (NaN, flag) when it touches an out-of-range draw."""
    h = (len(sorted_draws) - 1) * q
    lo, hi = int(np.floor(h)), int(np.ceil(h))
    a, b = sorted_draws[lo], sorted_draws[hi]
    if a == -np.inf or b == -np.inf:
        return float("nan"), BELOW
    if a == np.inf or b == np.inf:
        return float("nan"), ABOVE
    return float(a + (h - lo) * (b - a)), ""


def age_equivalent(
    theta: float,
    se: float,
    age: np.ndarray,
    child_theta: np.ndarray,
    n_boot: int = 2000,
    seed: int = 0,
    level: float = 0.95,
) -> dict[str, object]:
    """Point age, bootstrap interval and range flags for one model theta against children (age, theta)."""
    return AgeCurves(age, child_theta, n_boot, seed).equivalents(np.array([theta]), np.array([se]), level)[0]
