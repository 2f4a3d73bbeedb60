"""Children's option distributions per item and 1-logit ability bin; KL(human || model) with a fitted beta.

Human p: counts of canonical options (mapped by text, `alignment`) / n in (item, bin); cells with n < min_n are
dropped (counted). Model q = softmax(beta * option_scores); KL uses the natural log, p = 0 terms add 0, q == 0 is
replaced by epsilon = 1e-5 (philentropy's rule). Cells are weighted by their children's count n: the weighted mean
KL is, up to a constant, the mean negative log-likelihood of the children's individual responses under the model,
so beta (one per model x task, in [0.025, 40]) is the maximum-likelihood inverse temperature. It is found on a
201-point log grid, then by golden-section search on log(beta) between the best point's neighbours (xatol 1e-10),
for all models of a task at once, each model's result the same as fitted alone. The grid's best point is found
without evaluating every point where that cannot change it (`_grid_minimum`): the objective is convex in beta, so
from every 8th point and the points between the best one's neighbours, a unit whose two window ends exceed the
window's best by more than twice a rounding bound has the whole grid's first minimum there, bit for bit; a unit
that is not so shown (a flat objective, or a score so far below its item's best that the epsilon rule applies) is
evaluated on every grid point. Baseline: a uniform model (q = 1/K), whose KL needs no beta; whether a model beats
it is decided by a permutation test over items (`uniform_test`). `mean_kl_unweighted` (every cell equal, DevBench's
mean) is reported at its own best beta, `beta_unweighted`.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

import numpy as np
import pandas as pd

from levante_tasks.compare.conventions import BETA_BOUNDS, KL_EPSILON
from levante_tasks.compare.golden_section import golden_section_min
from levante_tasks.compare.tables import positions, rows_with_items
from levante_tasks.compare.uniform_test import centred_scores, permutation_test

GRID_POINTS = 201
COARSE_STEP = 8  # the grid's first pass takes every 8th point (26 of 201: GRID_POINTS - 1 is a multiple of it)
ROUNDING_SLACK = 8.0  # the objective's rounding bound (`_Objective.rounding_bound`) taken this many times over
BETA_XATOL = 1e-10
TINY_Z = -700.0  # below it exp(z) nears underflow: q is formed and the epsilon rule applied exactly
GRID_CHUNK_ELEMENTS = 2_000_000  # beta x model x item x option values evaluated at once (memory bound)
DIST_COLUMNS = ["item_uid", "bin_low", "ability_bin", "n_options", "option_index", "option", "n", "n_bin", "p"]
NO_PAIRS = "no (item, bin) pair with children's data and model option scores"
USABLE, NOT_ANSWERED, NO_SCORES, COUNT_MISMATCH, NAN_SCORES, INFINITE_SCORES = range(6)
ITEM_REASONS = {
    NOT_ANSWERED: "items_not_answered_by_model",
    NO_SCORES: "items_without_option_scores",
    COUNT_MISMATCH: "items_option_count_mismatch",
    NAN_SCORES: "items_with_nan_scores",
    INFINITE_SCORES: "items_with_infinite_scores",
}


def bin_label(low: int) -> str:
    """Label of the 1-logit bin [low, low + 1), e.g. `-1_0`."""
    return f"{low}_{low + 1}"


def human_distributions(
    trials: pd.DataFrame,
    children: pd.DataFrame,
    uids: set[str],
    min_n: int,
    exclusions: Counter,
    options: dict[str, list[str]] | None = None,
) -> pd.DataFrame:
    """Tidy option proportions per (item_uid, bin_low, option_index) with counts n, n_bin and p (sums to 1).

    `trials` carry the canonical `option_index` (-1 = the response names no option: counted, not in n) and
    `n_options`; `children` carry each run's `theta` (calibration) that sets its bin.
    """
    task = trials[rows_with_items(trials, uids)]
    option = task["option_index"].to_numpy()
    exclusions["trials_response_unmatched"] += int((option < 0).sum())
    task = task[option >= 0]
    run = positions(task["run_id"], pd.Index(children["run_id"].astype(str), dtype=object))
    theta = np.where(run >= 0, children["theta"].to_numpy(float)[run], np.nan)
    no_theta = np.isnan(theta)
    exclusions["trials_without_theta"] += int(no_theta.sum())
    task, theta = task[~no_theta], theta[~no_theta]
    if task.empty:
        return pd.DataFrame(columns=DIST_COLUMNS)
    item_index = pd.Index(sorted(uids), dtype=object)
    uid_code, uid_values = positions(task["item_uid"], item_index), item_index.to_numpy()
    low = np.floor(theta).astype(int)
    span = int(low.max() - low.min()) + 1
    cell_key, cell = np.unique(uid_code * span + (low - low.min()), return_inverse=True)
    k_of_row = task["n_options"].to_numpy(int)
    kmax = int(k_of_row.max())
    counts = np.bincount(cell * kmax + task["option_index"].to_numpy(int), minlength=len(cell_key) * kmax)
    counts = counts.reshape(len(cell_key), kmax)
    n_cell = counts.sum(axis=1)
    k_cell = np.zeros(len(cell_key), dtype=int)
    k_cell[cell] = k_of_row
    keep = n_cell >= min_n
    exclusions["item_bins_below_min_n"] += int((~keep).sum())
    cell_uid = np.asarray(uid_values, dtype=object)[cell_key // span][keep]
    cell_low = (cell_key % span + low.min())[keep]
    counts, n_cell, k_cell = counts[keep], n_cell[keep], k_cell[keep]
    rows = np.repeat(np.arange(len(cell_uid)), k_cell)
    index = np.arange(len(rows)) - np.repeat(np.cumsum(k_cell) - k_cell, k_cell)
    labels = [
        (options or {}).get(u, [])[j] if j < len((options or {}).get(u, [])) else ""
        for u, j in zip(cell_uid[rows], index, strict=True)
    ]
    n = counts[rows, index]
    return pd.DataFrame(
        {
            "item_uid": cell_uid[rows],
            "bin_low": cell_low[rows],
            "ability_bin": [bin_label(int(b)) for b in cell_low[rows]],
            "n_options": k_cell[rows],
            "option_index": index,
            "option": labels,
            "n": n,
            "n_bin": n_cell[rows],
            "p": n / n_cell[rows],
        }
    )


def softmax(scores: np.ndarray, beta: float) -> np.ndarray:
    """Softmax(beta * scores) over the last axis, stable for large beta; -inf scores get probability 0."""
    z = beta * scores
    z = z - np.max(z, axis=-1, keepdims=True)
    e = np.exp(z)
    return e / e.sum(axis=-1, keepdims=True)


def shifted_scores(scores: np.ndarray) -> np.ndarray:
    """scores - max over the last axis (the same for every beta > 0): the softmax's stable form."""
    with np.errstate(invalid="ignore"):
        return scores - np.max(scores, axis=-1, keepdims=True)


def log_q(shifted: np.ndarray, beta: np.ndarray) -> np.ndarray:
    """ln q with q = softmax(beta * scores) over the last axis and q == 0 replaced by epsilon.

    `shifted` = `shifted_scores(scores)`; `beta` broadcasts against `shifted` without its last axis. ln q is
    z - ln(sum exp z) with z = beta * shifted; only where z < -700 is q itself formed, to apply the epsilon rule
    exactly where exp underflows (and to -inf scores: q = 0).
    """
    z = np.asarray(beta)[..., None] * shifted
    e = np.exp(z)
    total = e.sum(axis=-1, keepdims=True)
    out = z - np.log(total)
    tiny = z < TINY_Z
    if tiny.any():
        q = (e / total)[tiny]
        out[tiny] = np.log(np.where(q == 0, KL_EPSILON, q))
    return out


@dataclass
class Cells:
    """The children's side of one task, built once and shared by every model: (item, bin) cells with n >= min_n.

    `p` is cells x K (zero beyond an item's option count); `m` sums counts over an item's cells (items x K),
    which is all the weighted beta fit needs; `m_unweighted` sums p over them (each cell weighs 1: the
    unweighted fit); `plogp` is sum_k p ln p per cell.
    """

    keys: pd.DataFrame  # item_uid, bin_low, ability_bin, n_options, n_bin (one row per cell, sorted)
    items: list[str]
    n_options: np.ndarray  # per item
    item: np.ndarray  # cell -> item position
    p: np.ndarray
    n: np.ndarray  # children per cell
    m: np.ndarray
    m_unweighted: np.ndarray
    plogp: np.ndarray

    @classmethod
    def from_dist(cls, dist: pd.DataFrame) -> Cells:
        """Cells from the tidy distribution table (`human_distributions`)."""
        dist = dist.sort_values(["item_uid", "bin_low", "option_index"], kind="stable")
        uid = dist["item_uid"].to_numpy(dtype=object)
        low = dist["bin_low"].to_numpy(int)
        starts = np.r_[True, (uid[1:] != uid[:-1]) | (low[1:] != low[:-1])] if len(dist) else np.array([], bool)
        cell = np.cumsum(starts) - 1
        keys = dist.loc[starts, ["item_uid", "bin_low", "ability_bin", "n_options", "n_bin"]].reset_index(drop=True)
        kmax = int(keys["n_options"].max()) if len(keys) else 1
        p = np.zeros((len(keys), kmax))
        p[cell, dist["option_index"].to_numpy(int)] = dist["p"].to_numpy(float)
        item, items = pd.factorize(keys["item_uid"], sort=True)
        n = keys["n_bin"].to_numpy(float)
        m = np.zeros((len(items), kmax))
        np.add.at(m, item, p * n[:, None])
        m_unweighted = np.zeros((len(items), kmax))
        np.add.at(m_unweighted, item, p)
        n_options = np.zeros(len(items), dtype=int)
        n_options[item] = keys["n_options"].to_numpy(int)
        with np.errstate(divide="ignore", invalid="ignore"):
            plogp = np.where(p > 0, p * np.log(p), 0.0).sum(axis=1)
        return cls(keys, list(items), n_options, item, p, n, m, m_unweighted, plogp)

    def uniform_kl(self) -> np.ndarray:
        """KL(human || uniform) per cell = ln K + sum p ln p (the baseline of a model that knows nothing)."""
        return np.log(self.n_options[self.item]) + self.plogp


def _finite_softmax(scores: np.ndarray) -> np.ndarray:
    """Whether softmax(beta * scores) over the last axis is finite at both ends of the beta range."""
    ok = np.ones(scores.shape[:-1], dtype=bool)
    with np.errstate(over="ignore", invalid="ignore"):
        for beta in BETA_BOUNDS:
            ok &= np.isfinite(softmax(scores, beta)).all(axis=-1)
    return ok


def score_array(cells: Cells, units: list[dict[str, list[float] | None]]) -> tuple[np.ndarray, np.ndarray]:
    """(scores units x items x K, status units x items): unusable entries hold 0, padding beyond K is -inf.

    Status: not answered, no option scores, another option count than the children's item, NaN scores, or
    scores without a finite softmax (+inf, all -inf, overflow); else USABLE.
    """
    kmax = cells.p.shape[1]
    scores = np.full((len(units), len(cells.items), kmax), -np.inf)
    status = np.full((len(units), len(cells.items)), NOT_ANSWERED)
    n_options = cells.n_options.tolist()
    at: list[tuple[int, int, int]] = []  # (unit, item, option count) of each usable entry, its scores in `flat`
    flat: list[float] = []
    for u, unit in enumerate(units):
        for i, uid in enumerate(cells.items):
            if uid not in unit:
                continue
            s = unit[uid]
            if s is None:
                status[u, i] = NO_SCORES
            elif len(s) != n_options[i]:
                status[u, i] = COUNT_MISMATCH
            else:
                at.append((u, i, len(s)))
                flat.extend(s)
    if at:  # one assignment for every usable entry (per entry, numpy's setitem was the loop's main cost)
        u_at, i_at, k_at = np.array(at).T
        status[u_at, i_at] = USABLE
        option = np.arange(len(flat)) - np.repeat(np.cumsum(k_at) - k_at, k_at)
        scores[np.repeat(u_at, k_at), np.repeat(i_at, k_at), option] = np.array(flat, dtype=float)
    status[(status == USABLE) & np.isnan(scores).any(axis=-1)] = NAN_SCORES
    candidate = status == USABLE
    status[candidate & ~_finite_softmax(np.where(np.isnan(scores), 0.0, scores))] = INFINITE_SCORES
    scores[status != USABLE] = 0.0
    pad = np.arange(kmax)[None, :] >= cells.n_options[:, None]
    scores[:, pad] = -np.inf
    return scores, status


class _Objective:
    """-sum_ik m_ik ln q_ik(beta) per unit: the count-weighted KL's beta-dependent part, for many betas at once.

    With z = beta * (s - max s), ln q = z - L where L = ln sum_k exp z, so the sum is
    sum_i n_i L_i - beta * sum_ik m_ik s_ik: one log per item and beta, and one exp per option that is neither the
    item's best (exp 0 = 1) nor padding (exp -inf = 0), the sum's terms added in option order. Exactness where the
    epsilon rule applies: an option with a -inf score that children chose has q = 0 for every beta (a constant
    m ln epsilon); where z < -700, q is formed as exp(z) / sum exp(z) and replaced by epsilon if it underflows,
    which can happen only for options scored more than 700 / 40 below the item's best (few, handled one by one).
    """

    def __init__(self, shifted: np.ndarray, m: np.ndarray) -> None:
        finite = np.isfinite(shifted)
        self.shifted, self.m = shifted, m
        # exp(beta * s) is exactly 1 at an item's best option (s = 0) and 0 at padding (s = -inf) for every
        # beta > 0: only the other entries (often half of them) need an exp per beta
        self.fixed = np.where(shifted == 0, 1.0, 0.0)
        live = (shifted != 0) & (shifted != -np.inf)
        self.live, self.live_s = np.flatnonzero(live), shifted[live]  # unit-major, as each unit's count repeats
        self.live_count = live.sum(axis=(-1, -2))
        self.n = np.where(finite, m, 0.0).sum(axis=-1)  # units x items
        self.a = np.where(finite, m * np.where(finite, shifted, 0.0), 0.0).sum(axis=(-1, -2))
        self.const = -np.log(KL_EPSILON) * np.where(~finite & (m > 0), m, 0.0).sum(axis=(-1, -2))
        low_score = finite & (m > 0) & (shifted < TINY_Z / BETA_BOUNDS[1])
        self.cand = np.nonzero(low_score)  # unit-major: each unit's entries are one run
        self.cand_s = shifted[low_score]
        self.cand_m = m[low_score]
        self.cand_units, self.cand_starts = np.unique(self.cand[0], return_index=True)

    def __call__(self, beta: np.ndarray) -> np.ndarray:
        """Objective per unit; `beta` has shape (..., units)."""
        return self.value(beta, *self.totals(beta))

    def of_units(self, units: np.ndarray) -> _Objective:
        """The objective of these units (positions) alone: each unit's values have the same bits as in the whole
        batch (`value` computes every unit from its own entries only)."""
        return _Objective(self.shifted[units], self.m[units])

    def convex(self) -> np.ndarray:
        """Per unit: whether its objective is convex in beta. It is a sum of n ln sum_k exp(beta s) (convex: a
        log-sum-exp of a linear map, n >= 0), a linear term and a constant, except where the epsilon rule replaces
        an underflowing q (the `cand` entries)."""
        convex = np.ones(self.shifted.shape[0], dtype=bool)
        convex[self.cand[0]] = False
        return convex

    def rounding_bound(self) -> np.ndarray:
        """Per unit, a bound on |computed - exact| objective at any beta in the bounds, `ROUNDING_SLACK` times
        over: each item's ln sum_k exp z lies in [0, ln K] (the best option's exp is 1, the others' at most 1) and
        carries a few roundings of itself and of its K terms; the sum over I items adds at most I roundings of the
        total's magnitude, as do the linear term (beta <= 40) and the constant."""
        items, k = self.shifted.shape[-2:]
        size = self.n.sum(axis=-1) * (1.0 + np.log(k)) + BETA_BOUNDS[1] * np.abs(self.a) + self.const
        return ROUNDING_SLACK * np.finfo(float).eps * (items + k + 8) * size

    def totals(self, beta: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(sum_k exp z, its log) per unit and item: the costly part, which depends on the scores only (so one
        evaluation serves every weighting of the same scores)."""
        e = np.broadcast_to(self.fixed, (*beta.shape[:-1], *self.fixed.shape)).copy()
        z = np.multiply(np.repeat(beta, self.live_count, axis=-1), self.live_s)
        e.reshape(*beta.shape[:-1], -1)[..., self.live] = np.exp(z, out=z)
        total = _last_axis_sum(e)
        return total, np.log(total)

    def value(self, beta: np.ndarray, total: np.ndarray, log_total: np.ndarray) -> np.ndarray:
        """Objective per unit from `totals(beta)`."""
        value = np.einsum("...ui,ui->...u", log_total, self.n) - beta * self.a + self.const
        if len(self.cand_s):
            u, i, _ = self.cand
            z = beta[..., u] * self.cand_s
            tiny = z < TINY_Z
            if tiny.any():
                q = np.exp(z) / total[..., u, i]
                exact = np.log(np.where(q == 0, KL_EPSILON, q))
                fix = np.where(tiny, self.cand_m * ((z - log_total[..., u, i]) - exact), 0.0)
                # each unit's corrections summed over its own run of entries alone: a unit's value has the same
                # bits whatever other units share the call (a matrix product's summation order depends on its shape)
                value[..., self.cand_units] += np.add.reduceat(fix, self.cand_starts, axis=-1)
        return value


def _last_axis_sum(values: np.ndarray) -> np.ndarray:
    """Sum over the short last axis (the options), added left to right as numpy's own sum does for fewer than 8
    terms (so the same bits), without the reduction's per-row overhead: the beta fit's hot loop."""
    total = values[..., 0].copy()
    for k in range(1, values.shape[-1]):
        total += values[..., k]
    return total


def fit_betas(scores: np.ndarray, *weights: np.ndarray) -> list[tuple[np.ndarray, np.ndarray]]:
    """Per weighting in `weights`: beta* per unit in [0.025, 40] minimising the count-weighted mean KL, and
    whether the optimum is at a bound.

    Each weighting is units x items x K (each unit's usable items' pooled children's counts, zero elsewhere); the
    first pass's exponentials depend on the scores only, so they are computed once for every weighting.
    """
    grid = np.geomspace(*BETA_BOUNDS, GRID_POINTS)
    shifted = shifted_scores(scores)
    objectives = [_Objective(shifted, m) for m in weights]
    coarse = grid[::COARSE_STEP, None] * np.ones(len(scores))
    found = _grid_values(objectives, coarse)
    return [_refine(objective, *_grid_minimum(objective, grid, values), grid)
            for objective, values in zip(objectives, found, strict=True)]


def _grid_values(objectives: list[_Objective], beta: np.ndarray) -> list[np.ndarray]:
    """Each objective at `beta` (points x units), a slice of points at a time (memory bound); the exponentials
    of each slice are shared by the objectives (all of the same scores)."""
    chunk = max(1, GRID_CHUNK_ELEMENTS // max(1, objectives[0].shifted.size))
    values: list[list[np.ndarray]] = [[] for _ in objectives]
    for start in range(0, len(beta), chunk):
        part = beta[start : start + chunk]
        totals = objectives[0].totals(part)
        for found, objective in zip(values, objectives, strict=True):
            found.append(objective.value(part, *totals))
    return [np.concatenate(found) for found in values]


def _grid_minimum(objective: _Objective, grid: np.ndarray,
                  coarse: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(index of the first minimum over every grid point, its value) per unit, from the values at every
    `COARSE_STEP`-th point (`coarse`, points x units).

    The window is every point between the best coarse point's neighbours. For a convex objective whose window ends
    both exceed the window's best value by more than twice the rounding bound, every point beyond is worse still
    (its exact value exceeds the nearer end's, which exceeds the best's exact value plus the bound), so its
    computed value exceeds the best's: the window's first minimum is the grid's, the same bits. Units not so shown
    are evaluated on the whole grid.
    """
    last = len(grid) - 1
    units = np.arange(coarse.shape[1])
    centre = np.argmin(coarse, axis=0) * COARSE_STEP
    low, high = np.maximum(centre - COARSE_STEP, 0), np.minimum(centre + COARSE_STEP, last)
    at = np.minimum(low + np.arange(2 * COARSE_STEP + 1)[:, None], high)  # a window cut by the grid's end repeats it
    (values,) = _grid_values([objective], grid[at])
    first = np.argmin(values, axis=0)
    best, best_value = at[first, units], values[first, units]
    margin = 2.0 * objective.rounding_bound()
    shown = (objective.convex() & ((low == 0) | (values[0] > best_value + margin))
             & ((high == last) | (values[-1] > best_value + margin)))
    rest = np.flatnonzero(~shown)
    if len(rest):
        (whole,) = _grid_values([objective.of_units(rest)], grid[:, None] * np.ones(len(rest)))
        best[rest] = np.argmin(whole, axis=0)
        best_value[rest] = whole[best[rest], np.arange(len(rest))]
    return best, best_value


def _refine(objective: _Objective, best: np.ndarray, best_value: np.ndarray,
            grid: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(beta*, at a bound) per unit: golden section between the grid neighbours of each unit's best grid point
    (`best`, its objective `best_value`); the grid point is kept unless the refined point is at least as good."""
    low, high = BETA_BOUNDS
    lo = np.log(grid[np.maximum(best - 1, 0)])
    hi = np.log(grid[np.minimum(best + 1, GRID_POINTS - 1)])
    x = golden_section_min(lambda v: objective(np.exp(v)), lo, hi, BETA_XATOL)
    fx = objective(np.exp(x))
    beta = np.where(fx <= best_value, np.exp(x), grid[best])
    at_bound = np.isclose(beta, low, rtol=1e-4) | np.isclose(beta, high, rtol=1e-4)
    return beta, at_bound


def compare_units(
    cells: Cells,
    units: list[dict[str, list[float] | None]],
    betas: np.ndarray | None = None,
    n_perm: int = 2000,
    seed: int = 0,
) -> tuple[pd.DataFrame, pd.DataFrame, list[dict[str, object]], list[Counter]]:
    """KL of every unit (model scoring unit) on one task's cells, all at once.

    Returns per-(unit, item, bin) KL rows (`unit` = position in `units`), per-(unit, bin) means, one summary per
    unit and one Counter of item exclusions per unit. `betas` fixes beta per unit (both fits) instead of fitting
    it. The permutation test against the uniform model (`n_perm` permutations, `seed`) gives each unit's p-value;
    the verdict waits for the family-wise adjustment over the unit's tasks (compare.family).
    """
    scores, status = score_array(cells, units)
    usable = status == USABLE
    counters = [
        Counter({ITEM_REASONS[r]: int(n) for r, n in zip(*np.unique(row[row != USABLE], return_counts=True),
                                                              strict=True)})
        for row in status
    ]
    has_pairs = usable.any(axis=1)
    m = np.where(usable[:, :, None], cells.m[None], 0.0)
    m_unweighted = np.where(usable[:, :, None], cells.m_unweighted[None], 0.0)
    beta = np.full(len(units), np.nan)
    beta_unweighted = np.full(len(units), np.nan)
    at_bound = np.zeros(len(units), dtype=bool)
    fit = np.flatnonzero(has_pairs)
    if len(fit):
        if betas is None:
            (beta[fit], at_bound[fit]), (beta_unweighted[fit], _) = fit_betas(scores[fit], m[fit], m_unweighted[fit])
        else:
            beta[fit] = beta_unweighted[fit] = np.asarray(betas, dtype=float)[fit]
    shifted = shifted_scores(scores)
    kl = _cell_kl(cells, shifted, beta)  # units x cells
    kl_unweighted = _cell_kl(cells, shifted, beta_unweighted)
    statistic, p_value = permutation_test(cells.m, centred_scores(scores, usable, cells.n_options),
                                          cells.n_options, n_perm, seed)
    mask = usable[:, cells.item]
    uniform = cells.uniform_kl()
    bins, bin_of = np.unique(cells.keys["bin_low"].to_numpy(int), return_inverse=True)
    onehot = np.zeros((len(cells.n), len(bins)))
    onehot[np.arange(len(cells.n)), bin_of] = 1.0
    w = mask * cells.n[None, :]
    with np.errstate(invalid="ignore", divide="ignore"):
        bin_n = w @ onehot
        bin_kl = np.where(mask, kl * cells.n, 0.0) @ onehot / bin_n
        bin_uniform = (w * uniform) @ onehot / bin_n
        bin_items = mask.astype(float) @ onehot
        bin_unweighted = np.where(mask, kl_unweighted, 0.0) @ onehot / bin_items
    summaries = []
    for u in range(len(units)):
        if not has_pairs[u]:
            summaries.append({"note": NO_PAIRS})
            continue
        sel = mask[u]
        n_u = cells.n[sel]
        mean_kl = float(np.sum(kl[u, sel] * n_u) / n_u.sum())
        uniform_mean = float(np.sum(uniform[sel] * n_u) / n_u.sum())
        present = bin_items[u] > 0
        order = np.lexsort((bins[present], bin_kl[u, present]))
        closest = int(np.flatnonzero(present)[order[0]])
        summaries.append({
            "beta": float(beta[u]),
            "beta_at_bound": bool(at_bound[u]),
            "mean_kl": mean_kl,
            "beta_unweighted": float(beta_unweighted[u]),
            "mean_kl_unweighted": float(kl_unweighted[u, sel].mean()),
            "uniform_mean_kl": uniform_mean,
            "kl_ratio_to_uniform": mean_kl / uniform_mean if uniform_mean > 0 else float("nan"),
            "uniform_test_statistic": float(statistic[u]),
            "uniform_test_p": float(p_value[u]),
            "n_pairs": int(sel.sum()),
            "n_items": int(usable[u].sum()),
            "n_responses": int(n_u.sum()),
            "closest_bin": bin_label(int(bins[closest])),
            "closest_bin_mean_kl": float(bin_kl[u, closest]),
            "closest_bin_uniform_kl": float(bin_uniform[u, closest]),
            "note": "",
        })
    unit_idx, cell_idx = np.nonzero(mask)
    pairs = cells.keys.iloc[cell_idx].reset_index(drop=True).assign(
        unit=unit_idx, kl=kl[unit_idx, cell_idx], kl_uniform=uniform[cell_idx], beta=beta[unit_idx]
    )
    b_unit, b_idx = np.nonzero(bin_items > 0)
    bin_table = pd.DataFrame({
        "unit": b_unit,
        "bin_low": bins[b_idx],
        "ability_bin": [bin_label(int(b)) for b in bins[b_idx]],
        "n_items": bin_items[b_unit, b_idx].astype(int),
        "n_responses": bin_n[b_unit, b_idx].astype(int),
        "mean_kl": bin_kl[b_unit, b_idx],
        "mean_kl_unweighted": bin_unweighted[b_unit, b_idx],
        "uniform_kl": bin_uniform[b_unit, b_idx],
        "beta": beta[b_unit],
        "beta_unweighted": beta_unweighted[b_unit],
    })
    return pairs, bin_table, summaries, counters


def _cell_kl(cells: Cells, shifted: np.ndarray, beta: np.ndarray) -> np.ndarray:
    """KL(human || softmax(beta * scores)) per unit x cell (NaN beta: evaluated at 1, masked by the caller)."""
    logq = log_q(shifted, np.where(np.isnan(beta), 1.0, beta)[:, None])  # units x items x K
    return cells.plogp[None, :] - np.einsum("ck,uck->uc", cells.p, logq[:, cells.item, :])


def compare_model(
    dist: pd.DataFrame, scores: dict[str, list[float] | None], exclusions: Counter, beta: float | None = None
) -> tuple[pd.DataFrame, dict[str, object]]:
    """One model: KL per (item, bin) at the fitted (or given) beta and a summary (beta, mean KL, closest bin)."""
    if dist.empty:
        return pd.DataFrame(), {"note": NO_PAIRS}
    cells = Cells.from_dist(dist)
    betas = None if beta is None else np.array([beta])
    pairs, _, summaries, counters = compare_units(cells, [scores], betas)
    exclusions.update(counters[0])
    return pairs.drop(columns="unit"), summaries[0]
