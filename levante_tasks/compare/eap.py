"""EAP ability scoring, mirt's default recipe: 61 equally spaced points on [-6, 6], a normal group prior.

Missing responses (NaN) are skipped, not counted wrong; SE is the posterior standard deviation.
"""

from __future__ import annotations

import numpy as np

from levante_tasks.compare.conventions import THETA_GRID


def theta_grid() -> np.ndarray:
    """The quadrature grid (mirt default for one factor: theta_lim = c(-6, 6), 61 points)."""
    low, high, n = THETA_GRID
    return np.linspace(low, high, int(n))


def prob_correct(
    theta: np.ndarray, a1: np.ndarray, d: np.ndarray, g: np.ndarray, u: np.ndarray
) -> np.ndarray:
    """mirt 3/4PL response function P(correct | theta), shape (len(theta), n_items)."""
    logits = np.outer(theta, a1) + d
    return g + (u - g) / (1.0 + np.exp(-logits))


def eap(
    responses: np.ndarray,
    a1: np.ndarray,
    d: np.ndarray,
    g: np.ndarray,
    u: np.ndarray,
    mean: float,
    var: float,
) -> tuple[np.ndarray, np.ndarray]:
    """EAP theta and SE for each row of `responses` (persons x items, values 0/1/NaN), one group prior."""
    x = np.atleast_2d(np.asarray(responses, dtype=float))
    grid = theta_grid()
    p = np.clip(prob_correct(grid, a1, d, g, u), 1e-300, 1.0)
    q = np.clip(1.0 - p, 1e-300, 1.0)
    observed = ~np.isnan(x)
    x1 = np.where(observed, x, 0.0)
    x0 = np.where(observed, 1.0 - x, 0.0)
    loglik = x1 @ np.log(p).T + x0 @ np.log(q).T  # persons x grid
    log_post = loglik - (grid - mean) ** 2 / (2.0 * var)
    log_post -= log_post.max(axis=1, keepdims=True)
    weights = np.exp(log_post)
    weights /= weights.sum(axis=1, keepdims=True)
    theta = weights @ grid
    se = np.sqrt(np.sum(weights * (grid[None, :] - theta[:, None]) ** 2, axis=1))
    return theta, se
