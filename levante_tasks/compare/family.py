"""Holm's family-wise adjustment of each model's beats-uniform tests, and the verdict read from it.

A model is tested against the uniform model once per comparison (task, and children's language); reading "beats
uniform" off every per-task p <= 0.05 lets a model with no signal pass somewhere by chance (a random-init model
passed on 2 of 7 tasks). The family is one model unit's (or orders unit's) tests in one compare run: every task
and children's language it was compared on (without `--across-languages`, its tasks). Holm's step-down adjustment
keeps the probability of any false "beats uniform" in the family at most 1 - level, whatever the tests' dependence.
"""

from __future__ import annotations

import numpy as np

from levante_tasks.compare.results import Results


def holm(p_values: np.ndarray) -> np.ndarray:
    """Holm's adjusted p-values of one family: the i-th smallest p times (m - i + 1), made monotone, capped at 1;
    NaN (no test) stays NaN and is not counted in the family's size m."""
    p = np.asarray(p_values, dtype=float)
    adjusted = np.full(p.shape, np.nan)
    tested = np.flatnonzero(~np.isnan(p))
    order = tested[np.argsort(p[tested], kind="stable")]
    scaled = (len(order) - np.arange(len(order))) * p[order]
    adjusted[order] = np.minimum(1.0, np.maximum.accumulate(scaled))
    return adjusted


def adjust_uniform_tests(results: Results, level: float) -> None:
    """Per model: Holm over its tests (module docstring) into kl_summary (after `uniform_test_p`) and each
    comparison.json summary: `uniform_test_p_holm`, `uniform_test_family_size` and the verdict
    `better_than_uniform` = adjusted p <= 1 - level and a count-weighted KL below the uniform model's."""
    table = results.table("kl_summary")
    if "uniform_test_p" not in table.columns:
        return
    p = table["uniform_test_p"].astype(float)
    tested = p.notna()
    by_model = table["model"].astype(object)
    adjusted = p.groupby(by_model, sort=False).transform(holm)
    size = tested.groupby(by_model, sort=False).transform("sum").where(tested)
    better = ((adjusted <= 1.0 - level) & (table["mean_kl"].astype(float) < table["uniform_mean_kl"].astype(float)))
    columns = {"uniform_test_p_holm": adjusted, "uniform_test_family_size": size,
               "better_than_uniform": better.astype(object).where(tested)}
    table = table.drop(columns=[c for c in columns if c in table.columns])
    at = table.columns.get_loc("uniform_test_p") + 1
    for offset, (name, values) in enumerate(columns.items()):
        table.insert(at + offset, name, values)
    results.tables["kl_summary"] = [table]
    for k in np.flatnonzero(tested.to_numpy()):
        row = table.iloc[k]
        scope = results.tasks[row["task"]]["languages"][row["children_language"]]
        kl = (scope["models"].get(row["model"]) or scope["orders"][row["model"]])["kl"]
        kl.update({"uniform_test_p_holm": float(row["uniform_test_p_holm"]),
                   "uniform_test_family_size": int(row["uniform_test_family_size"]),
                   "better_than_uniform": bool(row["better_than_uniform"])})

