"""Accuracy vs IRT item difficulty: point-biserial (Pearson) r and Spearman rho between 0/1 correctness and b.

b = -d / a1, so a child-aligned model has a NEGATIVE r. Estimand: the model's expected correlation over draws of
its answers on the fixed item bank (the items are not resampled; what varies is the model's answers).

CIs: Fisher z. z = atanh(r) +- q * se with q the normal quantile of the level, back-transformed with tanh;
se = 1 / sqrt(n - 3) for r and sqrt(1.06 / (n - 3)) for Spearman rho (Fieller, Hartley & Pearson 1957), n = the
number of items. (A percentile bootstrap over items under-covered on short banks: 0.86-0.89 on 18 items;
docs/comparison.md.) p-values: t = r sqrt((n-2)/(1-r^2)) on n-2 df, as scipy's pearsonr and spearmanr.
Fewer than MIN_ITEMS items or constant correctness: NaN with a `note`.
"""

from __future__ import annotations

import numpy as np
from scipy.special import ndtri, stdtr  # what scipy.stats' norm.ppf and t.sf evaluate; scipy.stats adds ~1 s of import

MIN_ITEMS = 10
SPEARMAN_VARIANCE = 1.06  # var(atanh(rho)) ~ 1.06 / (n - 3) (Fieller, Hartley & Pearson 1957)
RESULT_KEYS = (
    "pearson_r",
    "pearson_ci_low",
    "pearson_ci_high",
    "pearson_p",
    "spearman_rho",
    "spearman_ci_low",
    "spearman_ci_high",
    "spearman_p",
)


def _p_values(r: np.ndarray, n: int) -> np.ndarray:
    """Two-sided p of r under no correlation: t = r sqrt((n-2)/(1-r^2)) on n-2 df (scipy's pearsonr/spearmanr)."""
    r = np.clip(np.asarray(r, dtype=float), -1.0, 1.0)
    with np.errstate(divide="ignore", invalid="ignore"):
        t = r * np.sqrt((n - 2) / ((1.0 - r) * (1.0 + r)))
    return np.where(np.abs(r) >= 1.0, 0.0, 2.0 * stdtr(n - 2, -np.abs(t)))


def average_ranks(values: np.ndarray) -> np.ndarray:
    """1-based ranks, tied values sharing their mean rank (scipy.stats.rankdata's default); all NaN if any is NaN."""
    values = np.asarray(values, dtype=float)
    if np.isnan(values).any():
        return np.full(len(values), np.nan)
    order = np.argsort(values, kind="stable")
    ordered = values[order]
    starts = np.flatnonzero(np.r_[True, ordered[1:] != ordered[:-1]])
    counts = np.diff(np.r_[starts, len(values)])
    ranks = np.empty(len(values))
    ranks[order] = np.repeat(starts + 1 + (counts - 1) / 2, counts)
    return ranks


def row_pearson(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Pearson r of each row of x (non-constant) with the vector y."""
    xc = x - x.mean(axis=1, keepdims=True)
    yc = y - y.mean()
    return (xc @ yc) / np.sqrt((xc * xc).sum(axis=1) * (yc @ yc))


def fisher_interval(r: np.ndarray, n: int, level: float = 0.95,
                    variance: float = 1.0) -> tuple[np.ndarray, np.ndarray]:
    """tanh(atanh(r) -+ q sqrt(variance / (n - 3))), q the normal quantile of `level` (two-sided); variance 1 for
    Pearson r, SPEARMAN_VARIANCE for Spearman rho; n > 3. r = +-1 gives [r, r]."""
    r = np.clip(np.asarray(r, dtype=float), -1.0, 1.0)
    half = ndtri(0.5 + level / 2.0) * np.sqrt(variance / (n - 3))
    with np.errstate(divide="ignore"):
        z = np.arctanh(r)
    return np.tanh(z - half), np.tanh(z + half)


def correlate_many(correct: np.ndarray, b: np.ndarray, level: float = 0.95) -> list[dict[str, object]]:
    """r_pb and Spearman rho with Fisher-z CIs and p-values for each row of `correct` (models x items, 0/1).

    All rows must have answered every item of `b` (callers group models by their answered items), so n = len(b).
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
    with np.errstate(invalid="ignore", divide="ignore"):  # constant b: r is NaN
        r, rho = row_pearson(x, b), row_pearson(x, average_ranks(b))
    r_low, r_high = fisher_interval(r, n, level)
    rho_low, rho_high = fisher_interval(rho, n, level, SPEARMAN_VARIANCE)
    p_r, p_rho = _p_values(r, n), _p_values(rho, n)
    for j, i in enumerate(todo):
        results[i].update(pearson_r=float(r[j]), pearson_ci_low=float(r_low[j]), pearson_ci_high=float(r_high[j]),
                          pearson_p=float(p_r[j]), spearman_rho=float(rho[j]), spearman_ci_low=float(rho_low[j]),
                          spearman_ci_high=float(rho_high[j]), spearman_p=float(p_rho[j]))
    return results


def correlate(correct: np.ndarray, b: np.ndarray, level: float = 0.95) -> dict[str, object]:
    """r_pb and Spearman rho with Fisher-z CIs and p-values of one model; NaN with a `note` when < 10 items."""
    return correlate_many(np.asarray(correct, dtype=float)[None, :], b, level)[0]
