"""The model's distribution from order replicates (compare.replicates): counting, the prior, whole blocks, the
weighted KL against hand-computed values, and the bootstrap intervals."""

from __future__ import annotations

import math
import time

import numpy as np
import pandas as pd
import pytest

from levante_tasks.compare.distributions import Cells
from levante_tasks.compare.replicates import (
    NOT_COUNTED,
    UNPARSED,
    align_choices,
    by_orders,
    choices_from_records,
    dirichlet_q,
    orders_enough,
    prefix,
    readout_orders,
    replicate_estimate,
)


def cells_of(rows: list[tuple[str, int, list[float], int]]) -> Cells:
    """Cells from (item_uid, bin_low, p, n) rows."""
    tidy = [
        {"item_uid": uid, "bin_low": low, "ability_bin": f"{low}_{low + 1}", "n_options": len(p),
         "option_index": k, "option": "", "n": round(pk * n), "n_bin": n, "p": pk}
        for uid, low, p, n in rows for k, pk in enumerate(p)
    ]
    return Cells.from_dist(pd.DataFrame(tidy))


def records(uid: str, n_options: int, answers: list[float | None], seeds: list[int] | None = None) -> pd.DataFrame:
    """Record rows of one item: answer r at seed r (or at `seeds[r]`)."""
    return pd.DataFrame({"item_uid": uid, "seed": seeds if seeds is not None else range(len(answers)),
                         "choice_index": answers, "n_options": n_options})


def kl(p: list[float], q: list[float]) -> float:
    """KL(p || q), natural log, 0 ln 0 = 0."""
    return sum(pk * math.log(pk / qk) for pk, qk in zip(p, q, strict=True) if pk > 0)


def test_counts_whole_blocks_from_seed_zero_and_unparsed_apart():
    frame = pd.concat([
        records("a", 2, [0, 1, 0, 0, 1]),  # seeds 0..4: two whole blocks of 2, seed 4 left out
        records("b", 3, [2, None, 1, 0, 0], seeds=[0, 1, 2, 3, 5]),  # seed 4 missing: R = 4, one block of 3
        records("c", 3, [0, 1], seeds=[0, 1]),  # no whole block
    ])
    uids, choices, n_options = choices_from_records(frame)
    assert uids == ["a", "b", "c"]
    assert n_options.tolist() == [2, 3, 3]
    x = NOT_COUNTED
    assert choices.tolist() == [[0, 1, 0, 0, x, x], [2, UNPARSED, 1, x, x, x], [x, x, x, x, x, x]]


def test_several_records_of_one_seed_all_count():
    frame = records("a", 2, [0, 1, 1, 1], seeds=[0, 0, 1, 1])
    _, choices, _ = choices_from_records(frame)
    assert choices.tolist() == [[0, 1, 1, 1]]  # seed-major: seed * 2 + sample


def test_a_choice_outside_the_options_is_refused():
    with pytest.raises(ValueError, match="choice_index 2 is not an option of 2"):
        choices_from_records(records("a", 2, [0, 2]))


def test_dirichlet_prior():
    q = dirichlet_q(np.array([[3, 1, 0], [0, 0, 0]]), np.array([2, 3]))
    assert q[0].tolist() == pytest.approx([3.5 / 5, 1.5 / 5, 0.0])
    assert q[1].tolist() == pytest.approx([1 / 3] * 3)
    assert dirichlet_q(np.array([[2, 0]]), np.array([2]), alpha=1.0)[0].tolist() == pytest.approx([0.75, 0.25])


def test_weighted_kl_by_hand():
    cells = cells_of([("a", 0, [1.0, 0.0], 10), ("a", 1, [0.5, 0.5], 30), ("b", 0, [0.2, 0.3, 0.5], 20)])
    uids, choices, n_options = choices_from_records(pd.concat([
        records("b", 3, [0, 1, 2, 2, 2, 2]), records("a", 2, [0, 0, 1, 0])]))
    choices, n_options = align_choices(cells, uids, choices, n_options)
    out = replicate_estimate(cells, choices, n_options, n_boot=200, seed=1)
    qa, qb = [3.5 / 5, 1.5 / 5], [1.5 / 7.5, 1.5 / 7.5, 4.5 / 7.5]
    expected = (10 * kl([1, 0], qa) + 30 * kl([0.5, 0.5], qa) + 20 * kl([0.2, 0.3, 0.5], qb)) / 60
    assert out["kl"] == pytest.approx(expected, rel=1e-12)
    assert (out["n_items"], out["replicates"], out["replicates_min"], out["replicates_max"]) == (2, 6, 4, 6)
    assert out["unparsed_share"] == 0
    assert out["kl_ci_low"] <= out["kl"] <= out["kl_ci_high"]


def test_an_unparsed_answer_is_never_an_option():
    cells = cells_of([("a", 0, [0.5, 0.5], 10)])
    out = replicate_estimate(cells, np.array([[0, UNPARSED, UNPARSED, 1]]), np.array([2]), n_boot=50, seed=0)
    assert out["kl"] == pytest.approx(0.0, abs=1e-15)  # c = [1, 1]: q = [0.5, 0.5]
    assert out["unparsed_share"] == 0.5
    assert out["replicates_min"] == 4


def test_a_partial_block_is_not_counted():
    cells = cells_of([("a", 0, [0.7, 0.3], 10)])
    whole = choices_from_records(records("a", 2, [0, 1]))
    partial = choices_from_records(records("a", 2, [0, 1, 0]))  # seed 2 starts a block it does not finish
    one = replicate_estimate(cells, *align_choices(cells, *whole), n_boot=50, seed=0)
    two = replicate_estimate(cells, *align_choices(cells, *partial), n_boot=50, seed=0)
    assert two["kl"] == one["kl"] == pytest.approx(kl([0.7, 0.3], [0.5, 0.5]))
    assert two["replicates_max"] == 2


def test_items_without_counted_replicates_or_another_option_count_are_left_out():
    cells = cells_of([("a", 0, [1.0, 0.0], 10), ("b", 0, [0.0, 1.0], 10)])
    x = NOT_COUNTED
    out = replicate_estimate(cells, np.array([[0, 0], [x, x]]), np.array([2, 2]), n_boot=20, seed=0)
    assert out["n_items"] == 1
    assert out["kl"] == pytest.approx(kl([1, 0], [2.5 / 3, 0.5 / 3]))
    assert replicate_estimate(cells, np.array([[0, 0], [1, 1]]), np.array([3, 2]), n_boot=20, seed=0)["n_items"] == 1
    empty = replicate_estimate(cells, np.full((2, 2), x), np.array([2, 2]), n_boot=20, seed=0)
    assert empty["n_items"] == 0 and math.isnan(empty["kl"])


def simulated(n_items: int, orders: int, seed: int) -> tuple[Cells, np.ndarray, np.ndarray, np.ndarray]:
    """Cells of 4-option items (two bins each) and choices drawn from a known q per item; returns q too."""
    rng = np.random.default_rng(seed)
    q = rng.dirichlet(np.ones(4) * 2, n_items)
    p = rng.dirichlet(np.ones(4) * 2, (n_items, 2))
    cells = cells_of([(f"i{i:03d}", b, p[i, b].tolist(), 20 + 10 * b) for i in range(n_items) for b in range(2)])
    choices = np.array([rng.choice(4, orders, p=qi) for qi in q])
    return cells, choices, np.full(n_items, 4), q


def test_intervals_shrink_with_replicates_and_are_seeded():
    cells, choices, n_options, _ = simulated(40, 512, 3)
    small = replicate_estimate(cells, choices[:, :32], n_options, n_boot=400, seed=5)
    large = replicate_estimate(cells, choices, n_options, n_boot=400, seed=5)
    assert large["kl_replicate_halfwidth"] < small["kl_replicate_halfwidth"] / 2
    assert large["kl_ci_high"] - large["kl_ci_low"] < small["kl_ci_high"] - small["kl_ci_low"]
    assert replicate_estimate(cells, choices, n_options, n_boot=400, seed=5) == large
    assert replicate_estimate(cells, choices, n_options, n_boot=400, seed=6) != large


def test_the_interval_covers_the_exact_kl_at_many_replicates():
    cells, choices, n_options, q = simulated(60, 256, 11)
    exact = float(np.sum(cells.n * (cells.plogp - np.einsum("ck,ck->c", cells.p, np.log(q[cells.item]))))
                  / cells.n.sum())
    out = replicate_estimate(cells, choices, n_options, n_boot=500, seed=0)
    assert out["kl_ci_low"] <= exact <= out["kl_ci_high"]
    assert out["kl"] == pytest.approx(exact, abs=out["kl_replicate_halfwidth"] * 2)


def test_bootstrap_is_vectorised():
    cells, choices, n_options, _ = simulated(100, 32, 2)
    start = time.perf_counter()
    replicate_estimate(cells, choices, n_options, n_boot=2000, seed=0)
    assert time.perf_counter() - start < 2.0  # ~0.3 s unloaded; the bound leaves room for a busy machine


def test_readout_on_seed_prefixes_in_whole_blocks():
    assert readout_orders(8) == [2, 4, 8]
    assert readout_orders(2) == [1, 2]
    assert prefix(np.array([[0, 1, 2, 0, 1, 2, 0, 1]]), np.array([3]), 4).tolist() == [[0, 1, 2, NOT_COUNTED]]
    cells, choices, n_options, _ = simulated(30, 32, 4)
    table = by_orders(cells, choices, n_options, [8, 16, 32], 1.0, n_boot=200, seed=0)
    rows = table["rows"]
    assert [r["orders"] for r in rows] == [8, 16, 32]
    assert [r["replicates"] for r in rows] == [8, 16, 32]
    assert rows[-1] == {"orders": 32, **replicate_estimate(cells, choices, n_options, n_boot=200, seed=0)}
    halfwidths = [r["kl_replicate_halfwidth"] for r in rows]
    assert halfwidths == sorted(halfwidths, reverse=True)
    assert table["orders_enough"] == 8  # tolerance 1 nat: every row is within it
    between = (halfwidths[1] + halfwidths[2]) / 2
    assert by_orders(cells, choices, n_options, [8, 16, 32], between, n_boot=200, seed=0)["orders_enough"] == 32
    assert orders_enough(rows, 0.0) is None


def test_the_intervals_remove_the_upward_bias_of_a_re_estimated_q():
    cells, choices, n_options, _ = simulated(100, 8, 2)
    out = replicate_estimate(cells, choices, n_options, n_boot=500, seed=0)
    # a noisier q has a larger KL: the bootstrap draws sit above the estimate, so a basic interval lies below it
    assert (out["kl_replicate_ci_low"] + out["kl_replicate_ci_high"]) / 2 < out["kl"]
    assert out["kl_replicate_ci_high"] - out["kl_replicate_ci_low"] == pytest.approx(
        2 * out["kl_replicate_halfwidth"])
    assert out["kl_ci_high"] - out["kl_ci_low"] > 2 * out["kl_replicate_halfwidth"]  # items add their spread
