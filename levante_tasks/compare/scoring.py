"""Score response vectors on an IRT model's scale: models (reference-group prior) and calibration children."""

from __future__ import annotations

import numpy as np
import pandas as pd

from levante_tasks.compare.eap import eap
from levante_tasks.compare.irt import GroupPrior, IrtModel


def _eap(matrix: np.ndarray, params: pd.DataFrame, prior: GroupPrior) -> tuple[np.ndarray, np.ndarray]:
    """EAP of response rows against the item parameter rows (same column order) under one group prior."""
    columns = [params[name].to_numpy() for name in ("a1", "d", "g", "u")]
    return eap(matrix, *columns, prior.mean, prior.var)


def score_items(model: IrtModel, correct: pd.Series, prior: GroupPrior) -> tuple[float, float, int]:
    """EAP (theta, se, n_items) of one respondent: `correct` maps item_uid -> 0/1; unknown uids ignored.

    With no matched item the EAP would be the prior itself, not a measurement: theta and se are NaN then.
    """
    items = model.first_instances()
    answered = correct[correct.index.isin(items.index)].astype(float)
    if answered.empty:
        return float("nan"), float("nan"), 0
    theta, se = _eap(answered.to_numpy()[None, :], items.loc[answered.index], prior)
    return float(theta[0]), float(se[0]), int(len(answered))


def score_matrix(
    model: IrtModel, responses: pd.DataFrame, groups: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """EAP for a persons x irt_item matrix (NaN = not seen), each row with the prior of its group name."""
    params = model.items.set_index("irt_item").loc[list(responses.columns)]
    theta = np.full(len(responses), np.nan)
    se = np.full(len(responses), np.nan)
    matrix = responses.to_numpy(dtype=float)
    for name in dict.fromkeys(groups):
        prior = model.group(str(name))
        rows = groups == name
        theta[rows], se[rows] = _eap(matrix[rows], params, prior)
    return theta, se


def rescore_calibration(model: IrtModel) -> pd.DataFrame:
    """Rescore the record's calibration `data` with each row's own group (checks against `scores`)."""
    if model.data is None or model.data_groups is None:
        raise ValueError(f"{model.name}: record has no calibration data to rescore")
    theta, se = score_matrix(model, model.data, model.data_groups)
    return pd.DataFrame({"group": model.data_groups, "ability": theta, "se": se})
