"""The vectorised computations equal their one-at-a-time definitions: r, rho, their p-values and Fisher-z
intervals, age draws through each bootstrap curve, the beta fit, and all models of a task at once vs one model at a
time.
"""

from __future__ import annotations

from collections import Counter

import numpy as np
import pandas as pd
import pytest
from scipy import optimize, stats

from levante_tasks.compare import age as age_module
from levante_tasks.compare.age import END_SHARE, AgeCurves, _edges, fit_curve, invert, level_sets
from levante_tasks.compare.difficulty import correlate_many
from levante_tasks.compare.distributions import (
    COARSE_STEP,
    GRID_POINTS,
    Cells,
    _grid_minimum,
    _grid_values,
    _Objective,
    compare_model,
    compare_units,
    fit_betas,
    shifted_scores,
)
from levante_tasks.compare.golden_section import golden_section_min
from levante_tasks.compare.irt import GroupPrior, IrtModel, item_table
from levante_tasks.compare.scoring import ml_theta


def test_point_estimates_p_values_and_intervals_equal_their_definitions() -> None:
    """r, rho and p as scipy; r's interval as scipy's (Fisher z, se 1/sqrt(n-3)); rho's with se sqrt(1.06/(n-3))."""
    rng = np.random.default_rng(3)
    b = np.round(rng.normal(0, 1, 40), 1)  # rounded: tied b, average ranks
    x = (rng.random((4, 40)) < 1 / (1 + np.exp(b))).astype(float)
    for level in (0.95, 0.8):
        for row, res in zip(x, correlate_many(x, b, level=level), strict=True):
            pearson, spearman = stats.pearsonr(row, b), stats.spearmanr(row, b)
            assert res["pearson_r"] == pytest.approx(pearson.statistic, abs=1e-12)
            assert res["pearson_p"] == pytest.approx(pearson.pvalue, rel=1e-9)
            assert res["spearman_rho"] == pytest.approx(spearman.statistic, abs=1e-12)
            assert res["spearman_p"] == pytest.approx(spearman.pvalue, rel=1e-9)
            ci = pearson.confidence_interval(level)
            assert (res["pearson_ci_low"], res["pearson_ci_high"]) == pytest.approx((ci.low, ci.high), abs=1e-12)
            z, half = np.arctanh(spearman.statistic), stats.norm.ppf((1 + level) / 2) * np.sqrt(1.06 / 37)
            assert res["spearman_ci_low"] == pytest.approx(np.tanh(z - half), abs=1e-12)
            assert res["spearman_ci_high"] == pytest.approx(np.tanh(z + half), abs=1e-12)
            assert res["spearman_ci_low"] < res["spearman_rho"] < res["spearman_ci_high"]


def test_age_draws_equal_inverting_each_bootstrap_curve() -> None:
    rng = np.random.default_rng(8)
    age = np.round(rng.uniform(5, 12, 120), 1)
    theta = 0.4 * (age - 8.5) + rng.normal(0, 0.5, 120)
    curves = AgeCurves(age, theta, n_boot=80, seed=4)
    draws = curves.draws(np.array([0.3, 1.4]), np.array([0.5, 0.9]))
    replay = np.random.default_rng(4)  # AgeCurves draws resample indices, then the normal deviates z
    idx = replay.integers(0, 120, (80, 120))
    z = replay.standard_normal(80)
    opened = 0
    share = int(np.ceil(END_SHARE * 120))
    for r in range(80):
        ages, levels, first_ages, last_ages = level_sets(age[idx[r]], theta[idx[r]])
        assert np.array_equal((ages, levels), fit_curve(age[idx[r]], theta[idx[r]]))
        resampled = np.sort(age[idx[r]])
        youngest_edge = max(last_ages[0], resampled[share - 1])  # its youngest level set or youngest 5%
        oldest_edge = min(first_ages[-1], resampled[-share])
        for m, (t, se) in enumerate([(0.3, 0.5), (1.4, 0.9)]):
            value, flag = invert(t + se * z[r], ages, levels)
            if not flag and value <= youngest_edge:  # the curve cannot place an age there
                flag, opened = "below_youngest", opened + 1
            elif not flag and value >= oldest_edge:
                flag, opened = "above_oldest", opened + 1
            want = {"below_youngest": -np.inf, "above_oldest": np.inf}.get(flag, value)
            assert draws[m, r] == pytest.approx(want, abs=1e-9), (r, m)
    assert opened  # the end-set rule was exercised



def test_bootstrap_curves_do_not_depend_on_how_the_resamples_are_sliced(monkeypatch: pytest.MonkeyPatch) -> None:
    """Drawing the resamples a few at a time gives the bits of one draw of them all (the generator's stream and the
    sums' order are the same), normal deviates z included."""
    rng = np.random.default_rng(5)
    age = np.round(rng.uniform(5, 12, 90), 1)
    theta = 0.4 * (age - 8.5) + rng.normal(0, 0.5, 90)
    whole = vars(AgeCurves(age, theta, n_boot=61, seed=2))
    monkeypatch.setattr(age_module, "RESAMPLE_SLICE_DRAWS", 7 * 90 + 5)  # slices of 7 resamples, a short last one
    sliced = vars(AgeCurves(age, theta, n_boot=61, seed=2))
    assert whole.keys() == sliced.keys()
    for name, value in whole.items():
        assert np.asarray(value).tobytes() == np.asarray(sliced[name]).tobytes(), name


def test_edges_equal_the_running_counts_from_each_end() -> None:
    """The youngest edge is the first age whose count from the youngest reaches ceil(END_SHARE * n), the oldest
    the first such age counted from the oldest (empty ages included)."""
    rng = np.random.default_rng(6)
    ages = np.arange(30) / 2.0
    for n in (1, 19, 20, 21, 400):
        counts = np.zeros((50, len(ages)), dtype=int)
        for row in counts:
            np.add.at(row, rng.integers(0, len(ages), n) // rng.integers(1, 4), 1)  # some ages never drawn
        m = max(int(np.ceil(END_SHARE * n)), 1)
        low, high = _edges(ages, counts)
        for row, lo, hi in zip(counts, low, high, strict=True):
            assert lo == ages[np.argmax(np.cumsum(row) >= m)]
            assert hi == ages[len(ages) - 1 - np.argmax(np.cumsum(row[::-1]) >= m)]


def cells_and_scores(seed: int = 0) -> tuple[pd.DataFrame, list[dict[str, list[float]]]]:
    """A children's distribution table (3-4 option items, 3 bins, unequal n) and three models' scores."""
    rng = np.random.default_rng(seed)
    rows = []
    for i in range(12):
        k = 3 + i % 2
        for low in (-1, 0, 1):
            n = int(rng.integers(10, 60))
            counts = rng.multinomial(n, rng.dirichlet(np.ones(k)))
            rows += [(f"it{i:02d}", low, f"{low}_{low + 1}", k, j, "", int(c), n, c / n) for j, c in enumerate(counts)]
    dist = pd.DataFrame(rows, columns=["item_uid", "bin_low", "ability_bin", "n_options", "option_index", "option",
                                       "n", "n_bin", "p"])
    units = [{f"it{i:02d}": list(rng.normal(0, s, 3 + i % 2)) for i in range(12)} for s in (0.5, 2.0, 8.0)]
    units[2]["it03"] = [0.0, -np.inf, 1.0, 2.0]  # probability 0 for one option: epsilon in the KL
    return dist, units


def kl_by_definition(p: np.ndarray, scores: list[float], beta: float) -> float:
    """KL(p || softmax(beta * scores)), natural log, p = 0 terms 0, q == 0 replaced by 1e-5 (docs/comparison.md)."""
    z = beta * np.asarray(scores, dtype=float)
    with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
        q = np.exp(z - z.max()) / np.exp(z - z.max()).sum()
        q = np.where(q == 0, 1e-5, q)
        return float(np.sum(np.where(p > 0, p * (np.log(p) - np.log(q)), 0.0)))  # no p / q overflow


def distribution_cells(dist: pd.DataFrame) -> list[tuple[str, float, np.ndarray]]:
    """Each (item, bin) cell of a distribution table: its item, its children's count, p in option order."""
    return [(uid, float(cell["n_bin"].iloc[0]), cell.sort_values("option_index")["p"].to_numpy())
            for (uid, _), cell in dist.groupby(["item_uid", "bin_low"])]


def weighted_kl(cells: list[tuple[str, float, np.ndarray]], scores: dict[str, list[float]], beta: float) -> float:
    """The count-weighted mean KL by its definition, one (item, bin) cell (`distribution_cells`) at a time."""
    total = weight = 0.0
    for uid, n_bin, p in cells:
        total += n_bin * kl_by_definition(p, scores[uid], beta)
        weight += n_bin
    return total / weight


def test_beta_fit_equals_bounded_search_on_the_definition() -> None:
    dist, units = cells_and_scores()
    cells = distribution_cells(dist)
    for scores in units:
        pairs, summary = compare_model(dist, scores, Counter())
        for row in pairs.itertuples():  # every cell's KL and uniform KL, not only their weighted mean
            cell = dist[(dist["item_uid"] == row.item_uid) & (dist["bin_low"] == row.bin_low)]
            p = cell.sort_values("option_index")["p"].to_numpy()
            assert row.kl == pytest.approx(kl_by_definition(p, scores[row.item_uid], summary["beta"]), rel=1e-10)
            assert row.kl_uniform == pytest.approx(kl_by_definition(p, [0.0] * len(p), 1.0), rel=1e-12)
        grid = np.geomspace(0.025, 40, 201)
        best = int(np.argmin([weighted_kl(cells, scores, g) for g in grid]))
        lo, hi = np.log(grid[max(best - 1, 0)]), np.log(grid[min(best + 1, 200)])
        ref = optimize.minimize_scalar(lambda v, s=scores: weighted_kl(cells, s, np.exp(v)), bounds=(lo, hi),
                                       method="bounded", options={"xatol": 1e-10})
        assert summary["beta"] == pytest.approx(np.exp(ref.x), rel=1e-6)
        assert summary["mean_kl"] == pytest.approx(weighted_kl(cells, scores, summary["beta"]), rel=1e-12)


BETA_GRID = np.geomspace(0.025, 40, GRID_POINTS)


class TableObjective:
    """A stand-in beta objective whose value at grid point j of unit u is `table[j, u]` (for `_grid_minimum`'s
    logic alone: which points it reads, when it trusts its window, what it falls back to)."""

    def __init__(self, table: np.ndarray, convex: np.ndarray, bound: float) -> None:
        self.table, self.is_convex, self.bound = table, convex, bound
        self.grid = BETA_GRID
        self.shifted = np.zeros((table.shape[1], 1, 2))

    def totals(self, beta: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        return beta, beta

    def value(self, beta: np.ndarray, *_: np.ndarray) -> np.ndarray:
        at = np.argmin(np.abs(np.log(beta)[..., None] - np.log(self.grid)), axis=-1)
        return self.table[at, np.arange(self.table.shape[1])]

    def convex(self) -> np.ndarray:
        return self.is_convex

    def rounding_bound(self) -> np.ndarray:
        return np.full(self.table.shape[1], self.bound)

    def of_units(self, units: np.ndarray) -> TableObjective:
        return TableObjective(self.table[:, units], self.is_convex[units], self.bound)


def test_the_grid_minimum_is_the_whole_grids_first_minimum_where_the_window_cannot_show_it() -> None:
    """The pruned grid pass reads every 8th point and a window; a unit whose window is not shown to hold the
    minimum (not convex, or window ends within rounding of its best) is read whole. Each case below fails without
    its rule: a narrow second dip of a non-convex unit, a flat objective whose rounding noise puts the first
    minimum far from the coarse one, ties (the first wins), minima at both ends of the grid."""
    j = np.arange(201.0)
    noise = np.random.default_rng(4).uniform(-1e-13, 1e-13, 201)
    noise[150] = -2e-13
    dip = (j - 40.0) ** 2
    dip[101] = -1.0  # between coarse points 96 and 104, far from the coarse best (40)
    tie = np.abs(j - 50.5).round()  # 50 and 51 both 0 (after rounding .5 to even: 0 and 0)
    table = np.stack([(j - 37.0) ** 2, dip, 5.0 + noise, tie, j, -j], axis=1)
    objective = TableObjective(table, np.array([True, False, True, True, True, True]), bound=1e-12)
    (coarse,) = _grid_values([objective], objective.grid[::COARSE_STEP, None] * np.ones(6))
    best, best_value = _grid_minimum(objective, objective.grid, coarse)
    assert best.tolist() == [37, 101, 150, 50, 0, 200]
    assert best_value.tolist() == table[best, np.arange(6)].tolist()


def pruned_grid_minimum_is_the_whole_grids(objective: _Objective) -> tuple[np.ndarray, np.ndarray]:
    """Assert that `_grid_minimum` gives, per unit, the index and the bits of the first minimum of all 201 grid
    values of the whole batch; returns that index and the coarse pass's values."""
    units = objective.shifted.shape[0]
    (coarse,) = _grid_values([objective], BETA_GRID[::COARSE_STEP, None] * np.ones(units))
    best, best_value = _grid_minimum(objective, BETA_GRID, coarse)
    (whole,) = _grid_values([objective], BETA_GRID[:, None] * np.ones(units))
    expected = np.argmin(whole, axis=0)
    assert best.tolist() == expected.tolist()
    assert np.array_equal(best_value, whole[expected, np.arange(units)])
    return best, coarse


def test_the_pruned_beta_grid_gives_the_whole_grids_minimum_bit_for_bit() -> None:
    """On real objectives (random scores: ties, -inf inside items and as padding, scores far below the best where
    the epsilon rule applies beside units where it does not, flat all-zero scores, children who all chose the best
    option), `_grid_minimum` gives the index and value of the first minimum of all 201 grid values of the whole
    batch, and both of its paths are taken."""
    rng = np.random.default_rng(7)
    shown = fallback = 0
    for trial in range(120):
        units, items, k = int(rng.integers(1, 10)), int(rng.integers(1, 25)), int(rng.integers(2, 5))
        scores = rng.normal(0, [0.1, 1, 5, 30, 3, 1][trial % 6], (units, items, k))
        if trial % 6 == 4:
            scores[::2, :, 1:] -= 20  # q underflows at beta > 37: the epsilon rule, not convex (every other unit)
            scores[1::3, :, 1:] = -rng.uniform(500, 40000, scores[1::3, :, 1:].shape)  # ln epsilon: a plateau
        if trial % 6 == 5:
            scores[: units // 2 + 1] = 0.0  # flat: every beta alike
        if trial % 4 == 0:
            scores[:, :, -1] = -np.inf
        counts = rng.integers(0, 40, scores.shape).astype(float)
        if trial % 3 == 0:
            counts = np.where(scores == scores.max(axis=-1, keepdims=True), counts + 1, 0.0)
        objective = _Objective(shifted_scores(scores), counts)
        best, coarse = pruned_grid_minimum_is_the_whole_grids(objective)
        window = np.abs(best - np.argmin(coarse, axis=0) * COARSE_STEP) <= COARSE_STEP
        shown += int((objective.convex() & window).sum())
        fallback += int((~objective.convex()).sum() + (scores == 0).all(axis=(1, 2)).sum())
    assert shown > 100 and fallback > 20


def test_a_units_beta_does_not_depend_on_the_units_fitted_beside_it() -> None:
    """Each unit's beta (both weightings) has the same bits fitted alone as in a batch, also where the epsilon rule
    applies (scores far below the best) and the objective is flat at ln epsilon: there a sum whose order depended on
    the batch moved the first grid minimum (28.70 in a batch against 29.78 alone, before). The pruned grid pass,
    which evaluates such units apart from the batch, still gives the whole batch's 201-point first minimum."""
    rng = np.random.default_rng(3)
    for case in range(8):
        units, items, k = 5, 11 if case == 0 else int(rng.integers(3, 15)), 4
        scores = rng.normal(0, 1, (units, items, k))
        scores[0, :, 1:] = -rng.uniform(500, 40000, (items, k - 1))  # q underflows: ln q = ln epsilon
        scores[0, :, 0] = 0.0
        if case:
            scores[1, :, 1:] -= 20  # the epsilon rule for the larger betas only
        counts = rng.integers(1, 1000, scores.shape).astype(float)
        counts[0, :, 1:] = rng.integers(0, 5, (items, k - 1))
        shares = counts / counts.sum(axis=-1, keepdims=True)
        pruned_grid_minimum_is_the_whole_grids(_Objective(shifted_scores(scores), counts))
        together = fit_betas(scores, counts, shares)
        for u in range(units):
            alone = fit_betas(scores[u : u + 1], counts[u : u + 1], shares[u : u + 1])
            for (beta, at_bound), (beta_alone, at_bound_alone) in zip(together, alone, strict=True):
                assert beta[u] == beta_alone[0] and at_bound[u] == at_bound_alone[0], u


def test_all_models_at_once_equal_one_at_a_time() -> None:
    dist, units = cells_and_scores(1)
    units.append({"it00": None, "it01": [1.0, 2.0]})  # no scores / wrong option count: counted, no pairs
    pairs, _, summaries, counters = compare_units(Cells.from_dist(dist), units)
    for u, scores in enumerate(units):
        counts: Counter = Counter()
        alone_pairs, alone = compare_model(dist, scores, counts)
        assert counters[u] == counts
        assert summaries[u].keys() == alone.keys()
        for key, value in alone.items():
            assert summaries[u][key] == (pytest.approx(value, rel=1e-12) if isinstance(value, float) else value)
        mine = pairs[pairs["unit"] == u].drop(columns="unit").reset_index(drop=True)
        pd.testing.assert_frame_equal(mine, alone_pairs.reset_index(drop=True))


def test_ml_of_many_rows_equals_each_row_alone() -> None:
    rng = np.random.default_rng(6)
    params = item_table(pd.DataFrame({"irt_item": [f"i{k}-1" for k in range(30)], "a1": rng.uniform(0.6, 2, 30),
                                      "d": rng.normal(0, 1, 30), "g": 0.25, "u": 1.0}))
    model = IrtModel("sim", params, [GroupPrior("ref", 0.0, 1.0)])
    x = (rng.random((5, 30)) < 0.6).astype(float)
    theta, se = ml_theta(x, model.items)
    for row in range(5):
        one_theta, one_se = ml_theta(x[row : row + 1], model.items)
        assert theta[row] == pytest.approx(one_theta[0], abs=1e-9) and se[row] == pytest.approx(one_se[0], rel=1e-9)


def test_beta_objective_equals_the_weighted_kl_at_any_beta() -> None:
    """The closed form used for the beta fit (one log-sum-exp per item) equals the definition, epsilon included,
    from beta = 0.025 up to 40, where scores 8 apart already underflow."""
    dist, units = cells_and_scores(2)
    cells = Cells.from_dist(dist)
    kmax = cells.p.shape[1]
    for scores in units:
        s = np.full((1, len(cells.items), kmax), -np.inf)
        for i, uid in enumerate(cells.items):
            s[0, i, : len(scores[uid])] = scores[uid]
        objective = _Objective(shifted_scores(s), cells.m[None])
        entropy = float(np.sum(cells.plogp * cells.n))
        for beta in (0.025, 0.7, 5.0, 40.0):
            got = (objective(np.array([beta]))[0] + entropy) / cells.n.sum()
            assert got == pytest.approx(weighted_kl(distribution_cells(dist), scores, beta), rel=1e-10), beta



def test_beta_totals_skip_only_exact_exponentials_and_keep_every_bit() -> None:
    """The beta fit's sum of exponentials, which skips an item's best option (exp 0 = 1) and padding
    (exp -inf = 0), has the bits of exponentiating every option and adding them in option order, for every kind of
    entry: ties at the best, -inf inside an item, NaN, scores far below the best, items all 0 (unusable)."""
    from levante_tasks.compare.distributions import _last_axis_sum

    rng = np.random.default_rng(5)
    scores = rng.normal(0, 2, (6, 40, 4))
    scores[:, ::3, 3] = -np.inf  # padding of 3-option items
    scores[:, 1::5, 1] = -np.inf  # a -inf score inside an item
    scores[:, 2::7, :2] = 1.5  # a tie at the best
    scores[:, 3::11] = 0.0  # an unusable item
    scores[0, 4, 2], scores[1, 5, 0], scores[2, 6, 1] = np.nan, -900.0, 30.0
    shifted = shifted_scores(scores)
    objective = _Objective(shifted, rng.integers(0, 9, scores.shape).astype(float))
    for beta in (np.geomspace(0.025, 40, 7)[:, None] * np.ones(6), rng.uniform(0.025, 40, 6)):
        with np.errstate(invalid="ignore"):
            expected = _last_axis_sum(np.exp(beta[..., None, None] * shifted))
            total, log_total = objective.totals(beta)
        assert np.array_equal(total, expected, equal_nan=True)
        assert np.array_equal(log_total, np.log(expected), equal_nan=True)


def test_golden_section_equals_minimize_scalar_per_row_with_one_call_per_step_for_all_rows() -> None:
    """Why ours and not scipy's: the same minimisers as minimize_scalar (bounded) row by row, but one objective call
    per step for all rows (minimize_scalar takes one scalar function: one call per step per row)."""
    rng = np.random.default_rng(11)
    centre, width = rng.uniform(-2, 2, 40), rng.uniform(0.5, 3, 40)
    low, high = centre - rng.uniform(0.1, 1, 40), centre + rng.uniform(0.1, 1, 40)

    def objective(v: np.ndarray, rows: slice = slice(None)) -> np.ndarray:
        return np.abs(v - centre[rows]) * width[rows]  # one minimum per row, at its centre (no flat bottom)

    calls = {"ours": 0, "scipy": 0}

    def counted(v: np.ndarray) -> np.ndarray:
        calls["ours"] += 1
        return objective(v)

    found = golden_section_min(counted, low, high, 1e-10)
    for row in range(40):
        ref = optimize.minimize_scalar(lambda v, r=row: objective(np.array([v]), slice(r, r + 1))[0],
                                       bounds=(low[row], high[row]), method="bounded", options={"xatol": 1e-10})
        calls["scipy"] += ref.nfev
        assert found[row] == pytest.approx(centre[row], abs=1e-9)
        assert found[row] == pytest.approx(ref.x, abs=1e-7)  # scipy's bounded search adds sqrt(eps) * |x| to xatol
    assert calls["ours"] * 10 < calls["scipy"], calls
