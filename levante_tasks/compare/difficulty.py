"""Accuracy vs IRT item difficulty: point-biserial (Pearson) and Spearman r between 0/1 correctness and b.

b = -d / a1 (higher = harder for children), so a child-aligned model has a NEGATIVE r. CIs: percentile
bootstrap over items (resampled with replacement; resamples with constant correctness or b are skipped).

All resamples of all models are computed at once: a resample is a row of item counts W (n_boot x items), so
Pearson r of a resample is a weighted correlation (matrix products), and Spearman rho is the Pearson r between
correctness and b's average ranks within the resample (correctness is 0/1, so its own ranks are an affine map of
it). Models that answered the same items share the resamples and the ranks (drawn with the same seed, as one
model's bootstrap would be).
"""

from __future__ import annotations

import numpy as np
from scipy import stats

MIN_ITEMS = 10
RESULT_KEYS = (
    "pearson_r",
    "pearson_ci_low",
    "pearson_ci_high",
    "pearson_p",
    "spearman_rho",
    "spearman_ci_low",
    "spearman_ci_high",
    "spearman_p",
    "n_boot_valid",
)


def _p_values(r: np.ndarray, n: int) -> np.ndarray:
    """Two-sided p of r under no correlation: t = r sqrt((n-2)/(1-r^2)) on n-2 df (scipy's pearsonr/spearmanr)."""
    r = np.clip(np.asarray(r, dtype=float), -1.0, 1.0)
    with np.errstate(divide="ignore", invalid="ignore"):
        t = r * np.sqrt((n - 2) / ((1.0 - r) * (1.0 + r)))
    return np.where(np.abs(r) >= 1.0, 0.0, 2.0 * stats.t.sf(np.abs(t), n - 2))


def _row_pearson(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Pearson r of each row of x (non-constant) with the vector y."""
    xc = x - x.mean(axis=1, keepdims=True)
    yc = y - y.mean()
    return (xc @ yc) / np.sqrt((xc * xc).sum(axis=1) * (yc @ yc))


def resample_counts(n_items: int, n_boot: int, seed: int) -> np.ndarray:
    """W[r, i] = how often item i is drawn in resample r (n_items draws with replacement per resample)."""
    idx = np.random.default_rng(seed).integers(0, n_items, (n_boot, n_items))
    flat = idx + n_items * np.arange(n_boot)[:, None]
    return np.bincount(flat.ravel(), minlength=n_boot * n_items).reshape(n_boot, n_items).astype(float)


def resample_ranks(b: np.ndarray, counts: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Average rank of each item's b within each resample (as `rankdata` of the drawn values) and whether the
    resample's b is constant."""
    order = np.argsort(b, kind="stable")
    new_group = np.r_[True, np.diff(b[order]) != 0]
    tie_group = np.cumsum(new_group) - 1
    group_counts = np.add.reduceat(counts[:, order], np.flatnonzero(new_group), axis=1)
    below = np.cumsum(group_counts, axis=1) - group_counts  # drawn values smaller than the group's b
    group_rank = below + (group_counts + 1.0) / 2.0
    ranks = np.empty_like(counts)
    ranks[:, order] = group_rank[:, tie_group]
    constant = np.count_nonzero(group_counts, axis=1) <= 1
    return ranks, constant


def _weighted_r(counts: np.ndarray, x: np.ndarray, y: np.ndarray, n: int) -> np.ndarray:
    """Pearson r per resample and model: counts (R x I), x models x I (0/1), y I or R x I; returns R x models."""
    xw = counts @ x.T / n  # mean of x per resample
    if y.ndim == 1:
        yw = counts @ y / n
        yy = counts @ (y * y) / n
        xy = counts @ (x * y).T / n
    else:
        yw = np.sum(counts * y, axis=1) / n
        yy = np.sum(counts * y * y, axis=1) / n
        xy = (counts * y) @ x.T / n
    cov = xy - xw * yw[:, None]
    var_x = xw - xw**2  # x is 0/1: mean of x^2 = mean of x
    var_y = yy - yw**2
    with np.errstate(invalid="ignore", divide="ignore"):
        return cov / np.sqrt(var_x * var_y[:, None])


def column_quantiles(values: np.ndarray, qs: tuple[float, ...]) -> np.ndarray:
    """Per column, the linear-interpolation quantiles (numpy's default) of its non-NaN values; NaN if none."""
    ordered = np.sort(values, axis=0)  # NaN sorts last
    n = np.count_nonzero(~np.isnan(values), axis=0)
    cols = np.arange(values.shape[1])
    out = np.full((len(qs), values.shape[1]), np.nan)
    for k, q in enumerate(qs):
        h = np.maximum(n - 1, 0) * q
        lo, hi = np.floor(h).astype(int), np.ceil(h).astype(int)
        low, high = ordered[lo, cols], ordered[hi, cols]
        out[k] = np.where(n > 0, low + (h - lo) * (high - low), np.nan)
    return out


def bootstrap(x: np.ndarray, b: np.ndarray, n_boot: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Pearson r and Spearman rho of every item resample (n_boot x models); NaN where correctness or b is
    constant in the resample. Row r is what r_pb / rho of the items drawn by `resample_counts(...)[r]` give."""
    n = len(b)
    counts = resample_counts(n, n_boot, seed)
    ranks, constant_b = resample_ranks(b, counts)
    n_right = counts @ x.T
    degenerate = constant_b[:, None] | (n_right == 0) | (n_right == n)
    boot_r = np.where(degenerate, np.nan, _weighted_r(counts, x, b, n))
    boot_rho = np.where(degenerate, np.nan, _weighted_r(counts, x, ranks, n))
    return boot_r, boot_rho


def correlate_many(
    correct: np.ndarray, b: np.ndarray, n_boot: int = 2000, seed: int = 0, level: float = 0.95
) -> list[dict[str, object]]:
    """r_pb and Spearman rho with bootstrap CIs and p-values for each row of `correct` (models x items, 0/1).

    All rows must have answered every item of `b` (callers group models by their answered items).
    """
    correct = np.atleast_2d(np.asarray(correct, dtype=float))
    b = np.asarray(b, dtype=float)
    n = len(b)
    results = []
    for row in correct:
        result: dict[str, object] = {"n_items": int(n), "accuracy": float(row.mean()) if n else np.nan}
        result.update({k: np.nan for k in RESULT_KEYS})
        if n < MIN_ITEMS:
            result["note"] = f"fewer than {MIN_ITEMS} matched items"
        elif np.ptp(row) == 0:
            result["note"] = "correctness is constant (all right or all wrong): r undefined"
        else:
            result["note"] = ""
        results.append(result)
    todo = [i for i, r in enumerate(results) if r["note"] == ""]
    if not todo:
        return results
    x = correct[todo]
    rank_b = stats.rankdata(b)
    boot_r, boot_rho = bootstrap(x, b, n_boot, seed)
    degenerate = np.isnan(boot_r)
    r, rho = _row_pearson(x, b), _row_pearson(x, rank_b)
    p_r, p_rho = _p_values(r, n), _p_values(rho, n)
    alpha = (1.0 - level) / 2.0
    valid = ~degenerate
    bounds = [column_quantiles(boot, (alpha, 1.0 - alpha)) for boot in (boot_r, boot_rho)]
    for j, i in enumerate(todo):
        res = results[i]
        res.update(pearson_r=float(r[j]), spearman_rho=float(rho[j]), pearson_p=float(p_r[j]),
                   spearman_p=float(p_rho[j]), n_boot_valid=int(valid[:, j].sum()))
        if valid[:, j].any():
            res.update(pearson_ci_low=bounds[0][0, j], pearson_ci_high=bounds[0][1, j],
                       spearman_ci_low=bounds[1][0, j], spearman_ci_high=bounds[1][1, j])
    return results


def correlate(
    correct: np.ndarray, b: np.ndarray, n_boot: int = 2000, seed: int = 0, level: float = 0.95
) -> dict[str, object]:
    """r_pb and Spearman rho with bootstrap CIs and p-values of one model; NaN with a `note` when < 10 items."""
    return correlate_many(np.asarray(correct, dtype=float)[None, :], b, n_boot, seed, level)[0]
