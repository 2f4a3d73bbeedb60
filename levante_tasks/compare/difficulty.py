"""Accuracy vs IRT item difficulty: point-biserial (Pearson) and Spearman r between 0/1 correctness and b.

b = -d / a1 (higher = harder for children), so a child-aligned model has a NEGATIVE r. CIs: percentile
bootstrap over items (resampled with replacement; resamples with constant correctness or b are skipped).
"""

from __future__ import annotations

import numpy as np
from scipy import stats
from tqdm import tqdm

MIN_ITEMS = 10


def _pearson(x: np.ndarray, y: np.ndarray) -> float:
    """Pearson r, NaN when either vector is constant."""
    if np.ptp(x) == 0 or np.ptp(y) == 0:
        return float("nan")
    return float(np.corrcoef(x, y)[0, 1])


def _spearman(x: np.ndarray, y: np.ndarray) -> float:
    """Spearman rho (Pearson on average ranks, as R's cor(method = "spearman")), NaN when constant."""
    return _pearson(stats.rankdata(x), stats.rankdata(y))


def _bootstrap(correct: np.ndarray, b: np.ndarray, n_boot: int, seed: int, label: str) -> np.ndarray:
    """(n_boot, 2) Pearson and Spearman values over item resamples (NaN rows for degenerate resamples)."""
    rng = np.random.default_rng(seed)
    out = np.full((n_boot, 2), np.nan)
    for i in tqdm(range(n_boot), desc=f"bootstrap {label}", leave=False, disable=True if n_boot < 500 else None):
        idx = rng.integers(0, len(b), len(b))
        out[i] = _pearson(correct[idx], b[idx]), _spearman(correct[idx], b[idx])
    return out


def correlate(
    correct: np.ndarray,
    b: np.ndarray,
    n_boot: int = 2000,
    seed: int = 0,
    level: float = 0.95,
    label: str = "",
) -> dict[str, object]:
    """r_pb and Spearman rho with bootstrap CIs and p-values; NaN with a `note` when fewer than 10 items."""
    correct = np.asarray(correct, dtype=float)
    b = np.asarray(b, dtype=float)
    result: dict[str, object] = {
        "n_items": int(len(b)),
        "accuracy": float(correct.mean()) if len(b) else np.nan,
    }
    keys = [
        "pearson_r",
        "pearson_ci_low",
        "pearson_ci_high",
        "pearson_p",
        "spearman_rho",
        "spearman_ci_low",
        "spearman_ci_high",
        "spearman_p",
        "n_boot_valid",
    ]
    result.update({k: np.nan for k in keys})
    if len(b) < MIN_ITEMS:
        result["note"] = f"fewer than {MIN_ITEMS} matched items"
        return result
    if np.ptp(correct) == 0:
        result["note"] = "correctness is constant (all right or all wrong): r undefined"
        return result
    result["pearson_r"] = _pearson(correct, b)
    result["pearson_p"] = float(stats.pearsonr(correct, b).pvalue)
    result["spearman_rho"] = _spearman(correct, b)
    result["spearman_p"] = float(stats.spearmanr(correct, b).pvalue)
    boots = _bootstrap(correct, b, n_boot, seed, label)
    valid = boots[~np.isnan(boots).any(axis=1)]
    alpha = (1.0 - level) / 2.0
    if len(valid):
        low, high = np.quantile(valid, [alpha, 1.0 - alpha], axis=0)
        result.update(
            pearson_ci_low=low[0], pearson_ci_high=high[0], spearman_ci_low=low[1], spearman_ci_high=high[1]
        )
    result["n_boot_valid"] = int(len(valid))
    result["note"] = ""
    return result
