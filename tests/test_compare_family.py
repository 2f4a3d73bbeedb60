"""Issue 31.5: "beats uniform" is decided on Holm-adjusted p-values across each model's tests (compare.family).

Holm's values against a hand computation; then a seeded simulation of null models (option scores exchangeable
within every item, the test's null) on seven tasks, through the permutation test and the verdict code: per task
about 30% of the null models would "beat uniform" somewhere, the family-wise rate stays near 5%.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from levante_tasks.compare import report
from levante_tasks.compare.family import adjust_uniform_tests, holm
from levante_tasks.compare.results import Results
from levante_tasks.compare.uniform_test import centred_scores, permutation_test

ALPHA = 0.05
N_MODELS = 1000
N_TASKS = 7


def test_holm_matches_a_hand_computation_and_leaves_untested_out() -> None:
    # sorted 0.005, 0.01, 0.03, 0.04 (m = 4): 0.02, 0.03, 0.06, 0.04 -> monotone 0.02, 0.03, 0.06, 0.06
    got = holm(np.array([0.01, 0.04, 0.03, np.nan, 0.005]))
    assert got[[0, 1, 2, 4]] == pytest.approx([0.03, 0.06, 0.06, 0.02]) and np.isnan(got[3])
    assert holm(np.array([0.6, 0.9])).tolist() == [1.0, 1.0]  # capped at 1
    assert holm(np.array([0.2])).tolist() == [0.2]  # a family of one is its own p


def null_p_values(rng: np.random.Generator) -> np.ndarray:
    """N_MODELS x N_TASKS permutation p-values of models whose option scores are random (the test's null)."""
    p = np.empty((N_MODELS, N_TASKS))
    for task in range(N_TASKS):
        n_items, k = int(rng.integers(12, 25)), int(rng.integers(2, 5))
        m = rng.multinomial(40, rng.dirichlet(np.r_[4.0, np.ones(k - 1)], size=n_items))  # children's counts
        scores = rng.normal(size=(N_MODELS, n_items, k))
        n_options = np.full(n_items, k)
        centred = centred_scores(scores, np.ones((N_MODELS, n_items), bool), n_options)
        p[:, task] = permutation_test(m.astype(float), centred, n_options, n_perm=199, seed=task)[1]
    return p


def test_null_models_beat_uniform_at_most_alpha_family_wise() -> None:
    p = null_p_values(np.random.default_rng(31))
    per_task = (p <= ALPHA).any(axis=1).mean()
    assert per_task > 0.2  # unadjusted, 1 - 0.95^7 = 0.30 of the null models beat uniform somewhere
    results = Results()
    rows = [{"model": f"null{u}", "task": f"task{t}", "children_language": "en", "uniform_test_p": p[u, t],
             "mean_kl": 0.9, "uniform_mean_kl": 1.0}  # the fitted KL is always at or below the uniform model's
            for u in range(N_MODELS) for t in range(N_TASKS)]
    results.add("kl_summary", pd.DataFrame(rows))
    results.tasks = {f"task{t}": {"languages": {"en": {"models": {f"null{u}": {"kl": {}} for u in range(N_MODELS)}}}}
                     for t in range(N_TASKS)}
    adjust_uniform_tests(results, level=1 - ALPHA)
    table = results.table("kl_summary")
    flagged = table.groupby("model")["better_than_uniform"].any()
    se = np.sqrt(ALPHA * (1 - ALPHA) / N_MODELS)
    assert flagged.mean() <= ALPHA + 3 * se, flagged.mean()  # family-wise: near or below alpha
    assert (table["uniform_test_family_size"] == N_TASKS).all()
    first = results.tasks["task0"]["languages"]["en"]["models"]["null0"]["kl"]
    assert first["better_than_uniform"] == table.loc[0, "better_than_uniform"]
    assert first["uniform_test_p_holm"] == pytest.approx(table.loc[0, "uniform_test_p_holm"])


def summary_with_family(size: int, n_perm: int) -> dict:
    """The parts of comparison.json the permutation warning reads: one model tested `size` times."""
    models = {"m": {"kl": {"uniform_test_family_size": size}}}
    return {"settings": {"ci_level": 0.95, "n_perm": n_perm},
            "tasks": {f"t{k}": {"languages": {"en": {"models": models}}} for k in range(size)}}


def test_report_says_when_the_permutations_cannot_reach_the_level() -> None:
    """With 7 tests the smallest Holm p is 7/(1 + n_perm): 99 permutations can never give 0.05 (0.07), 139 can."""
    warning = report._too_few_permutations(summary_with_family(7, 99))
    assert "99 permutations are too few for 7 tests" in warning and "--n-perm 139 or more" in warning
    assert 7 / (1 + 139) <= 0.05 < 7 / (1 + 138)
    assert report._too_few_permutations(summary_with_family(7, 139)) == ""
    assert report._too_few_permutations(summary_with_family(1, 19)) == ""  # 1/20 = 0.05 is reachable
