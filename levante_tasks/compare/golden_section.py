"""Golden-section minimisation of many one-dimensional functions at once (the beta fit, ML theta).

Kept instead of scipy.optimize.minimize_scalar, which searches one scalar function at a time: here every row (all
models of a task) is searched in the same steps, so the vectorised objective is called once per step for all rows.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

GOLDEN = (np.sqrt(5.0) - 1.0) / 2.0


def golden_section_min(f: Callable[[np.ndarray], np.ndarray], low: np.ndarray, high: np.ndarray,
                       xatol: float) -> np.ndarray:
    """Per row, the minimiser of `f` in [low, high] (the midpoint of a final bracket narrower than `xatol`).

    `f` maps one point per row to one value per row; it is called twice to start, then once per step. A row whose
    bracket is narrower than `xatol` stops there while wider ones go on, so each row's result is the one it has
    searched alone (`f` must value each row by its own point only).
    """
    c = high - GOLDEN * (high - low)
    d = low + GOLDEN * (high - low)
    fc, fd = f(c), f(d)
    while (active := high - low > xatol).any():
        left = fc < fd  # the minimum lies in [low, d]: c becomes the new d, one new point per row
        step_high = np.where(left, d, high)
        step_low = np.where(left, low, c)
        new = np.where(left, step_high - GOLDEN * (step_high - step_low), step_low + GOLDEN * (step_high - step_low))
        f_new = f(new)
        high, low = np.where(active, step_high, high), np.where(active, step_low, low)
        c, d, fc, fd = (np.where(active, np.where(left, new, d), c), np.where(active, np.where(left, c, new), d),
                        np.where(active, np.where(left, f_new, fd), fc),
                        np.where(active, np.where(left, fc, f_new), fd))
    return (low + high) / 2.0
