"""All model scoring units of one task as arrays: 0/1 correctness matrix, option scores, and their abilities.

Ability of a unit: EAP under every group's prior (the reference one is the headline `theta`) and, for units that
answered every IRT item, the ML estimate (no prior). Its place among children is read on one scale: the share of
children whose EAP under the same reference prior (`theta_common`) is lower, and, per group, the share of that
group's children (calibration theta, their own group's prior) below the unit's EAP under that group's prior.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from levante_tasks.compare.eap import eap
from levante_tasks.compare.irt import IrtModel
from levante_tasks.compare.scoring import ml_theta

NOT_ALL_ITEMS = "ML only for units that answered every IRT item"
ML_AT_BOUND = "likelihood has no maximum inside [-6, 6] (e.g. all right or all wrong)"


@dataclass
class Units:
    """Scoring units (sorted names) of one task against the IRT items' first instances (`items`, uid index)."""

    names: list[str]
    items: pd.DataFrame
    correct: np.ndarray  # units x items, NaN = not answered
    scores: list[dict[str, list[float] | None]]  # per unit: item_uid -> option scores (IRT items only)
    counts: list[Counter] = field(default_factory=list)
    locales: list[str] = field(default_factory=list)  # per unit: the locale code of its records

    @classmethod
    def build(cls, records: pd.DataFrame, items: pd.DataFrame) -> Units:
        """Units from one task's records; records of items outside the IRT model are counted per unit."""
        names = sorted(records["model"].unique())
        unit = pd.Index(names).get_indexer(records["model"])
        col = items.index.get_indexer(records["item_uid"])
        known = col >= 0
        correct = np.full((len(names), len(items)), np.nan)
        correct[unit[known], col[known]] = records["correct"].to_numpy(float)[known]
        scores: list[dict[str, list[float] | None]] = [{} for _ in names]
        for u, uid, s in zip(unit[known], records["item_uid"].to_numpy()[known],
                             records["option_scores"].to_numpy()[known], strict=True):
            scores[u][uid] = s
        outside = np.bincount(unit[~known], minlength=len(names))
        answered = (~np.isnan(correct)).sum(axis=1)
        counts = [Counter(model_items_not_in_irt=int(o), irt_items_not_answered=int(len(items) - a))
                  for o, a in zip(outside, answered, strict=True)]
        locales = records.drop_duplicates("model").set_index("model")["locale"] if len(records) else pd.Series()
        return cls(names, items, correct, scores, counts, [str(locales[name]) for name in names])

    def answered(self) -> np.ndarray:
        """Units x items mask of answered items."""
        return ~np.isnan(self.correct)

    def thetas(self, model: IrtModel) -> dict[str, tuple[np.ndarray, np.ndarray]]:
        """EAP (theta, se) per group name; NaN for units that answered no IRT item."""
        columns = [self.items[c].to_numpy(float) for c in ("a1", "d", "g", "u")]
        scored = self.answered().any(axis=1)
        out = {}
        for prior in model.groups:
            theta, se = eap(self.correct, *columns, prior.mean, prior.var)
            out[prior.name] = (np.where(scored, theta, np.nan), np.where(scored, se, np.nan))
        return out

    def ml(self) -> tuple[np.ndarray, np.ndarray, list[str]]:
        """ML (theta, se, note) per unit: only units that answered every item; NaN with a note otherwise."""
        complete = self.answered().all(axis=1)
        theta = np.full(len(self.names), np.nan)
        se = np.full(len(self.names), np.nan)
        if complete.any():
            theta[complete], se[complete] = ml_theta(self.correct[complete], self.items)
        notes = ["" if c and np.isfinite(t) else (ML_AT_BOUND if c else NOT_ALL_ITEMS)
                 for c, t in zip(complete, theta, strict=True)]
        return theta, se, notes


def share_below(values: np.ndarray, thresholds: np.ndarray) -> np.ndarray:
    """Share of `values` strictly below each threshold (NaN for NaN thresholds or no values)."""
    values = np.sort(values[np.isfinite(values)])
    thresholds = np.asarray(thresholds, dtype=float)
    if not len(values):
        return np.full(len(thresholds), np.nan)
    share = np.searchsorted(values, thresholds, side="left") / len(values)
    return np.where(np.isfinite(thresholds), share, np.nan)
