"""The orders units of one comparison: each model's option-order seeds pooled into one response distribution
(compare.replicates), compared with the children's cells like a scoring unit (KL rows per item and bin, the
uniform test fed ln q) and read out with intervals, the K/4, K/2, K table and `orders_enough`.

An orders unit (`<model>/original/<gen|mc>/orders`, records.orders_unit) exists where a model's records of a task
hold at least two seeds of one output type; its per-seed units are compared as before, and a white-box model's
per-seed softmax KLs are listed beside its orders row (`per_seed_softmax_kl`).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

import numpy as np
import pandas as pd

from levante_tasks.compare import conventions as conv
from levante_tasks.compare.distributions import Cells, compare_units
from levante_tasks.compare.replicates import (
    ALPHA,
    NOT_COUNTED,
    align_choices,
    by_orders,
    choices_from_records,
    readout_orders,
    records_per_seed,
    replicate_q,
)
from levante_tasks.compare.results import Results, Settings
from levante_tasks.compare.unit_rows import by_unit, children_bins, front
from levante_tasks.errors import LevanteError

FITTED = ("beta", "beta_at_bound", "beta_unweighted")  # compare_units' fit columns: an orders unit fits none


@dataclass
class OrderUnits:
    """The orders units of one comparison by position: names (sorted), locales, and each one's replicate rows."""

    names: list[str]
    locales: list[str]
    rows: list[pd.DataFrame]

    @classmethod
    def build(cls, replicates: pd.DataFrame) -> OrderUnits:
        """Units from one task's replicate rows (records.read_model_records)."""
        groups = dict(iter(replicates.groupby("orders_unit", sort=True)))
        return cls(list(groups), [str(g["locale"].iloc[0]) for g in groups.values()], list(groups.values()))


def _choices(cells: Cells, unit: str, rows: pd.DataFrame) -> tuple[np.ndarray, np.ndarray, int, int]:
    """(choices, n_options) aligned to the cells' items, records per seed, and the unit's records left uncounted."""
    try:
        uids, choices, n_options = choices_from_records(rows)
    except ValueError as exc:
        raise LevanteError(f"{unit}: {exc}") from None
    aligned, options = align_choices(cells, uids, choices, n_options)
    return aligned, options, records_per_seed(rows), int(len(rows) - (choices != NOT_COUNTED).sum())


def _log_q_scores(cells: Cells, choices: np.ndarray, n_options: np.ndarray) -> dict[str, list[float]]:
    """ln q per item as option scores (softmax at beta = 1 gives q back): compare_units reads them as it reads a
    scored model's; an item whose records give another option count than the children's keeps that count, so it
    is counted as a mismatch."""
    q, used = replicate_q(cells, choices, n_options)
    out = {}
    for i, uid in enumerate(cells.items):
        if used[i]:
            out[uid] = np.log(q[i, : cells.n_options[i]]).tolist()
        elif (choices[i] != NOT_COUNTED).any():
            out[uid] = [0.0] * int(n_options[i])
    return out


def compare_orders(
    task: str,
    language: str,
    replicates: pd.DataFrame,
    cells: Cells | None,
    children: pd.DataFrame,
    scored: dict[str, dict[str, object]],
    settings: Settings,
    results: Results,
    no_kl: str,
) -> dict[str, dict[str, object]]:
    """Every orders unit of one task x children's language (module docstring); returns comparison.json's entries.

    `scored`: the comparison's per-seed unit summaries (their softmax KLs are listed beside their orders unit).
    """
    units = OrderUnits.build(replicates)
    if not units.names:
        return {}
    per_seed = {
        name: {str(seed_unit): scored[seed_unit]["kl"]["mean_kl"] for seed_unit in sorted(rows["model"].unique())
               if isinstance(scored.get(seed_unit, {}).get("kl", {}).get("mean_kl"), float)}
        for name, rows in zip(units.names, units.rows, strict=True)
    }
    if cells is None:
        summaries: list[dict[str, object]] = [{"note": no_kl} for _ in units.names]
        results.add("kl_summary", pd.concat([front(units, task, language), pd.DataFrame(summaries)], axis=1))
        return {name: {"locale": loc, "children_language": language, "kl": summaries[u],
                       "per_seed_softmax_kl": per_seed[name]}
                for u, (name, loc) in enumerate(zip(units.names, units.locales, strict=True))}
    found = [_choices(cells, name, rows) for name, rows in zip(units.names, units.rows, strict=True)]
    pairs, bins, summaries, counters = compare_units(
        cells, [_log_q_scores(cells, c, n) for c, n, _, _ in found], betas=np.ones(len(found)),
        n_perm=settings.n_perm, seed=settings.seed)
    results.add("kl_items", by_unit(pairs.drop(columns="beta"), units, task, language))
    bins = bins.drop(columns=["beta", "beta_unweighted"]).merge(children_bins(children), on="bin_low", how="left")
    results.add("kl_bins", by_unit(bins, units, task, language))
    out, readouts = {}, []
    for u, (name, (choices, n_options, per_seed_records, left_out)) in enumerate(zip(units.names, found,
                                                                                  strict=True)):
        summary = {k: v for k, v in summaries[u].items() if k not in FITTED}
        entry: dict[str, object] = {"locale": units.locales[u], "children_language": language}
        if "mean_kl" in summary:
            total = int(choices.shape[1] // per_seed_records)
            table = by_orders(cells, choices, n_options, readout_orders(total), settings.orders_tolerance,
                              n_boot=settings.n_boot, seed=settings.seed, level=settings.level,
                              per_seed=per_seed_records)
            estimate = {k: v for k, v in table["rows"][-1].items() if k not in ("orders", "kl", "n_items")}
            summary = {**summary, **estimate, "prior_alpha": ALPHA, "orders_tolerance": settings.orders_tolerance,
                       "orders_enough": table["orders_enough"], "note": summary["note"]}
            readouts.append(pd.DataFrame(table["rows"]).assign(unit=u))
            entry["by_orders"] = table["rows"]
        entry.update(kl=summary, per_seed_softmax_kl=per_seed[name])
        out[name] = entry
        results.count(counters[u] + Counter(replicate_records_outside_whole_blocks=left_out), task=task,
                      model=name, language=language)
    results.add("kl_summary", pd.concat([front(units, task, language),
                                         pd.DataFrame([out[name]["kl"] for name in units.names])], axis=1)
                .assign(kl_definition=conv.ORDER_REPLICATES))
    if readouts:
        results.add("kl_orders", by_unit(pd.concat(readouts, ignore_index=True), units, task, language))
    return out
