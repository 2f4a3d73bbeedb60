"""Children's option distributions per item and 1-logit ability bin; KL(human || model) with a fitted beta.

Human p: counts of canonical options / n in (item, bin); bins with n < min_n are dropped (counted).
Model q = softmax(beta * option_scores) over canonical options; KL uses the natural log, p = 0 terms add 0,
q == 0 is replaced by epsilon = 1e-5 (philentropy's rule). Items whose scores give no softmax (NaN, +inf, all
-inf, overflow) are excluded and counted, never fitted. beta (one per model x task) minimises the mean KL
over all (item, bin) pairs in [0.025, 40]: a log-spaced grid of 201 points, then Brent on log(beta) between
the grid neighbours of the best point (xatol 1e-10). DevBench fits beta per age bin instead; we do not.
"""

from __future__ import annotations

from collections import Counter

import numpy as np
import pandas as pd
from scipy.optimize import minimize_scalar

from levante_tasks.compare.conventions import BETA_BOUNDS, KL_EPSILON

GRID_POINTS = 201


def bin_label(low: int) -> str:
    """Label of the 1-logit bin [low, low + 1), e.g. `-1_0`."""
    return f"{low}_{low + 1}"


def human_distributions(
    trials: pd.DataFrame, children: pd.DataFrame, uids: set[str], min_n: int, exclusions: Counter
) -> pd.DataFrame:
    """Tidy option proportions per (item_uid, bin_low, option_index) with counts n, n_bin and p."""
    task = trials[trials["item_uid"].isin(uids)]
    unmatched = task["option_index"] < 0
    exclusions["trials_response_unmatched"] += int(unmatched.sum())
    task = task[~unmatched].merge(children[["run_id", "theta"]], on="run_id", how="left")
    no_theta = task["theta"].isna()
    exclusions["trials_without_theta"] += int(no_theta.sum())
    task = task[~no_theta]
    if task.empty:
        return pd.DataFrame(
            columns=[
                "item_uid",
                "bin_low",
                "ability_bin",
                "n_options",
                "option_index",
                "option",
                "n",
                "n_bin",
                "p",
            ]
        )
    n_options = task.groupby("item_uid")["n_options"].agg(lambda s: s.mode().iloc[0])
    options = task.drop_duplicates("item_uid").set_index("item_uid")["options"]
    task = task.assign(bin_low=np.floor(task["theta"].to_numpy()).astype(int))
    counts = task.groupby(["item_uid", "bin_low", "option_index"]).size().rename("n").reset_index()
    n_bin = counts.groupby(["item_uid", "bin_low"])["n"].transform("sum")
    counts = counts.assign(n_bin=n_bin)
    small = counts.drop_duplicates(["item_uid", "bin_low"])["n_bin"] < min_n
    exclusions["item_bins_below_min_n"] += int(small.sum())
    counts = counts[counts["n_bin"] >= min_n]
    rows = []
    for (uid, low), group in counts.groupby(["item_uid", "bin_low"], sort=True):
        k = int(n_options[uid])
        found = dict(zip(group["option_index"], group["n"], strict=True))
        total = int(group["n_bin"].iloc[0])
        for j in range(k):
            option = options[uid][j] if j < len(options[uid]) else ""
            rows.append((uid, int(low), bin_label(int(low)), k, j, option, int(found.get(j, 0)), total))
    table = pd.DataFrame(
        rows,
        columns=["item_uid", "bin_low", "ability_bin", "n_options", "option_index", "option", "n", "n_bin"],
    )
    return table.assign(p=table["n"] / table["n_bin"])


def softmax(scores: np.ndarray, beta: float) -> np.ndarray:
    """Row-wise softmax(beta * scores), stable for large beta; -inf scores get probability 0."""
    z = beta * scores
    z = z - np.max(z, axis=-1, keepdims=True)
    e = np.exp(z)
    return e / e.sum(axis=-1, keepdims=True)


def kl_divergence(p: np.ndarray, q: np.ndarray) -> np.ndarray:
    """Row-wise KL(p || q), natural log; p = 0 terms are 0; q == 0 becomes epsilon."""
    q = np.where(q == 0, KL_EPSILON, q)
    with np.errstate(divide="ignore", invalid="ignore"):
        terms = np.where(p > 0, p * np.log(p / q), 0.0)
    return terms.sum(axis=-1)


def softmax_defined(scores: list[float]) -> bool:
    """Whether softmax(beta * scores) is a distribution for every beta in the fitted range.

    It is not for a +inf score, for scores with no finite value (all -inf), or for finite scores so large that
    beta * score overflows; such items are excluded (counted), so no NaN KL ever reaches beta or the closest bin.
    A -inf score alone is fine: that option gets probability 0 (epsilon in the KL).
    """
    s = np.asarray(scores, dtype=float)[None, :]
    with np.errstate(over="ignore", invalid="ignore"):
        return all(bool(np.isfinite(softmax(s, beta)).all()) for beta in BETA_BOUNDS)


def pair_arrays(
    dist: pd.DataFrame, scores: dict[str, list[float] | None], exclusions: Counter
) -> list[tuple[pd.DataFrame, np.ndarray, np.ndarray]]:
    """Group (item, bin) pairs by option count: (pair keys, P matrix, S matrix) with usable model scores."""
    keys = dist.drop_duplicates(["item_uid", "bin_low"])[
        ["item_uid", "bin_low", "ability_bin", "n_options", "n_bin"]
    ]
    usable = []
    for uid, k in keys.drop_duplicates("item_uid")[["item_uid", "n_options"]].itertuples(index=False):
        s = scores.get(uid)
        if uid not in scores:
            exclusions["items_not_answered_by_model"] += 1
        elif s is None:
            exclusions["items_without_option_scores"] += 1
        elif len(s) != k:
            exclusions["items_option_count_mismatch"] += 1
        elif np.isnan(s).any():
            exclusions["items_with_nan_scores"] += 1
        elif not softmax_defined(s):
            exclusions["items_with_infinite_scores"] += 1
        else:
            usable.append(uid)
    keys = keys[keys["item_uid"].isin(usable)]
    groups = []
    for _, part in keys.groupby("n_options", sort=True):
        p = (
            dist[dist["item_uid"].isin(part["item_uid"])]
            .pivot_table(index=["item_uid", "bin_low"], columns="option_index", values="p", aggfunc="first")
            .loc[list(zip(part["item_uid"], part["bin_low"], strict=True))]
            .to_numpy(float)
        )
        s = np.array([scores[u] for u in part["item_uid"]], dtype=float)
        groups.append((part.reset_index(drop=True), np.nan_to_num(p, nan=0.0), s))
    return groups


def mean_kl(beta: float, groups: list[tuple[pd.DataFrame, np.ndarray, np.ndarray]]) -> float:
    """Mean KL(human || model) over all (item, bin) pairs at inverse temperature beta."""
    total = sum(kl_divergence(p, softmax(s, beta)).sum() for _, p, s in groups)
    count = sum(len(keys) for keys, _, _ in groups)
    return float(total / count)


def fit_beta(groups: list[tuple[pd.DataFrame, np.ndarray, np.ndarray]]) -> tuple[float, bool]:
    """beta* in [0.025, 40] minimising the mean KL (grid, then Brent on log beta); flags a bound optimum."""
    low, high = BETA_BOUNDS
    grid = np.geomspace(low, high, GRID_POINTS)
    values = np.array([mean_kl(b, groups) for b in grid])
    best = int(np.argmin(values))
    lo, hi = np.log(grid[max(best - 1, 0)]), np.log(grid[min(best + 1, GRID_POINTS - 1)])
    res = minimize_scalar(
        lambda x: mean_kl(float(np.exp(x)), groups),
        bounds=(lo, hi),
        method="bounded",
        options={"xatol": 1e-10},
    )
    beta = float(np.exp(res.x)) if res.fun <= values[best] else float(grid[best])
    at_bound = bool(np.isclose(beta, low, rtol=1e-4) or np.isclose(beta, high, rtol=1e-4))
    return beta, at_bound


def compare_model(
    dist: pd.DataFrame, scores: dict[str, list[float] | None], exclusions: Counter, beta: float | None = None
) -> tuple[pd.DataFrame, dict[str, object]]:
    """KL per (item, bin) at the fitted (or given) beta and a summary (beta, mean KL, closest bin)."""
    groups = pair_arrays(dist, scores, exclusions)
    if not groups:
        return pd.DataFrame(), {"note": "no (item, bin) pair with children's data and model option scores"}
    beta, at_bound = fit_beta(groups) if beta is None else (beta, False)
    parts = [keys.assign(kl=kl_divergence(p, softmax(s, beta))) for keys, p, s in groups]
    pairs = pd.concat(parts, ignore_index=True).sort_values(["item_uid", "bin_low"]).reset_index(drop=True)
    bins = pairs.groupby(["bin_low", "ability_bin"], as_index=False).agg(
        n_items=("kl", "size"), mean_kl=("kl", "mean")
    )
    closest = bins.sort_values(["mean_kl", "bin_low"], kind="stable").iloc[0]
    summary = {
        "beta": beta,
        "beta_at_bound": at_bound,
        "mean_kl": float(pairs["kl"].mean()),
        "n_pairs": int(len(pairs)),
        "n_items": int(pairs["item_uid"].nunique()),
        "closest_bin": str(closest["ability_bin"]),
        "closest_bin_mean_kl": float(closest["mean_kl"]),
        "note": "",
    }
    return pairs, summary
