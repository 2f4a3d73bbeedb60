"""Score response vectors on an IRT model's scale: EAP under a group prior, ML without a prior, and the
calibration check (the record's `data` rescored and matched to its `scores` by run id).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from levante_tasks.compare.eap import eap, prob_correct
from levante_tasks.compare.golden_section import golden_section_min
from levante_tasks.compare.irt import GroupPrior, IrtModel

ML_BOUNDS = (-6.0, 6.0)  # the EAP grid's range: an ML estimate beyond it is off the children's scale
ML_GRID = 1201


def _columns(params: pd.DataFrame) -> list[np.ndarray]:
    """a1, d, g, u arrays of item parameter rows."""
    return [params[name].to_numpy(float) for name in ("a1", "d", "g", "u")]


def eap_rows(model: IrtModel, matrix: np.ndarray, groups: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """EAP for a persons x item matrix in `model.items` order (NaN = not seen), each row under its group's prior.

    A row without any observed response gets NaN (its EAP would be the prior itself, not a measurement).
    """
    theta = np.full(len(matrix), np.nan)
    se = np.full(len(matrix), np.nan)
    columns = _columns(model.items)
    for name in dict.fromkeys(groups):
        prior = model.group(str(name))
        rows = groups == name
        theta[rows], se[rows] = eap(matrix[rows], *columns, prior.mean, prior.var)
    empty = np.isnan(matrix).all(axis=1) if matrix.size else np.ones(len(matrix), dtype=bool)
    theta[empty] = se[empty] = np.nan
    return theta, se


def score_items(model: IrtModel, correct: pd.Series, prior: GroupPrior) -> tuple[float, float, int]:
    """EAP (theta, se, n_items) of one respondent: `correct` maps item_uid -> 0/1; unknown uids ignored.

    With no matched item the EAP would be the prior itself, not a measurement: theta and se are NaN then.
    """
    items = model.first_instances()
    answered = correct[correct.index.isin(items.index)].astype(float)
    if answered.empty:
        return float("nan"), float("nan"), 0
    theta, se = eap(answered.to_numpy()[None, :], *_columns(items.loc[answered.index]), prior.mean, prior.var)
    return float(theta[0]), float(se[0]), int(len(answered))


def _loglik(theta: np.ndarray, x: np.ndarray, params: list[np.ndarray]) -> np.ndarray:
    """Log-likelihood of each row of complete 0/1 responses `x` at its own theta (one value per row)."""
    a1, d, g, u = params
    p = np.clip(g + (u - g) / (1.0 + np.exp(-(theta[:, None] * a1 + d))), 1e-300, 1.0 - 1e-16)
    return np.sum(x * np.log(p) + (1.0 - x) * np.log1p(-p), axis=1)


def ml_theta(x: np.ndarray, params: pd.DataFrame, xatol: float = 1e-10) -> tuple[np.ndarray, np.ndarray]:
    """Maximum-likelihood theta (no prior) and SE = 1 / sqrt(test information) for complete 0/1 rows.

    Grid of 1201 points on [-6, 6], then golden-section search between the best point's neighbours (all rows at
    once). A maximum on a bound means none inside the scale (e.g. every answer right): theta and SE are NaN.
    """
    x = np.atleast_2d(np.asarray(x, dtype=float))
    columns = _columns(params)
    grid = np.linspace(*ML_BOUNDS, ML_GRID)
    p = np.clip(prob_correct(grid, *columns), 1e-300, 1.0 - 1e-16)
    values = x @ np.log(p).T + (1.0 - x) @ np.log1p(-p).T  # rows x grid
    best = np.argmax(values, axis=1)
    at_bound = (best == 0) | (best == ML_GRID - 1)
    low = grid[np.maximum(best - 1, 0)]
    high = grid[np.minimum(best + 1, ML_GRID - 1)]
    theta = golden_section_min(lambda t: -_loglik(t, x, columns), low, high, xatol)
    a1, dd, g, u = columns
    logistic = 1.0 / (1.0 + np.exp(-(theta[:, None] * a1 + dd)))
    prob = g + (u - g) * logistic
    slope = a1 * (u - g) * logistic * (1.0 - logistic)
    info = np.sum(slope**2 / (prob * (1.0 - prob)), axis=1)
    se = 1.0 / np.sqrt(info)
    theta[at_bound] = se[at_bound] = np.nan
    return theta, se


def rescore_calibration(model: IrtModel) -> pd.DataFrame:
    """Rescore the record's calibration `data` with each row's own group; run ids from the `runs` slot."""
    if model.data is None or model.data_groups is None:
        raise ValueError(f"{model.name}: record has no calibration data to rescore")
    params = model.items.set_index("irt_item").loc[list(model.data.columns)]
    matrix = model.data.to_numpy(dtype=float)
    theta = np.full(len(matrix), np.nan)
    se = np.full(len(matrix), np.nan)
    for name in dict.fromkeys(model.data_groups):
        prior = model.group(str(name))
        rows = model.data_groups == name
        theta[rows], se[rows] = eap(matrix[rows], *_columns(params), prior.mean, prior.var)
    runs = model.data_runs if model.data_runs is not None and len(model.data_runs) == len(matrix) else None
    return pd.DataFrame({"run_id": runs, "group": model.data_groups, "ability": theta, "se": se})


def calibration_check(model: IrtModel) -> dict[str, object] | None:
    """Largest |rescored - recorded| ability and SE over calibration runs matched BY RUN ID (never by row).

    None when the record has no calibration data or scores; a record without a `runs` slot cannot be matched
    and says so instead of comparing rows by position.
    """
    if model.data is None or model.scores is None or model.data_groups is None:
        return None
    rescored = rescore_calibration(model)
    if rescored["run_id"].isna().all():
        return {"note": "record has no runs slot matching its data rows: rescore not checked"}
    recorded = model.scores.drop_duplicates("run_id").set_index("run_id")
    matched = rescored[rescored["run_id"].isin(recorded.index)]
    if matched.empty:
        return {"n_runs": 0, "note": "no calibration run id in both data and scores"}
    ref = recorded.loc[matched["run_id"]]
    return {
        "ability": float(np.max(np.abs(matched["ability"].to_numpy() - ref["ability"].to_numpy()))),
        "se": float(np.max(np.abs(matched["se"].to_numpy() - ref["se"].to_numpy()))),
        "n_runs": int(len(matched)),
        "n_runs_unmatched": int(len(rescored) - len(matched)),
    }
