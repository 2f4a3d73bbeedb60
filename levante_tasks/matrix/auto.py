"""`distribution: {orders: auto}`: after each block of replicate orders, whether a (model, task) has enough.

A block is the task's largest option count (one Latin square of its items with that many options). After each
block the model's finished cells of the task are compared with the config's children (`compare:`); the
comparison's orders unit (compare.order_units, compare.replicates) gives the half-width of the KL's interval over
replicates alone (items fixed), the noise more orders remove. The task stops adding orders when
that half-width is <= `tolerance` (for a group task, every member task's), or when `max_orders` is reached.
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd
import pyarrow.parquet as pq

from levante_tasks.errors import LevanteError
from levante_tasks.matrix.config import Distribution, MatrixConfig
from levante_tasks.matrix.plan import Cell, datasets_of
from levante_tasks.schema import layout
from levante_tasks.schema.locales import locale as locale_of

SCRATCH = ".auto"  # under --out: each decision's comparison (rewritten per block, removed at the end)


@dataclass(frozen=True)
class Decision:
    """After a block: the orders run, the replicate half-width then (None when none could be estimated), and why
    the task stops (None: it goes on)."""

    orders: int
    halfwidth: float | None
    stop: str | None


def block_size(task: str, data: dict[str, Any]) -> int:
    """The largest option count of the choice items the task reads (its prepared datasets): one block of orders."""
    largest = 0
    for key in datasets_of(task):
        name, _, code = key.partition("@")
        path = layout.dataset_dir(data["version"], name, data["dir"], locale_of(code)) / layout.DATASET_FILE
        try:
            table = pq.read_table(path, columns=["n_options", "response_format"]).to_pydict()
        except (OSError, ValueError) as exc:
            raise LevanteError(f"{task}: cannot read the option counts of {name} ({exc.__class__.__name__}); "
                               "prepare the data first") from None
        counts = [n for n, kind in zip(table["n_options"], table["response_format"], strict=True) if kind == "choice"]
        largest = max([largest, *counts])
    if largest < 2:
        raise LevanteError(f"{task}: no choice item with two or more options: nothing for orders to balance")
    return largest


def decide(spec: Distribution, orders: int, halfwidth: float | None) -> Decision:
    """Whether a task with `orders` orders run and that half-width has enough (the rule in the module doc)."""
    tolerance = spec.tolerance or 0.0
    if halfwidth is not None and halfwidth <= tolerance:
        return Decision(orders, halfwidth, f"half-width {halfwidth:.4f} <= tolerance {tolerance:g} at {orders} "
                                           "orders")
    if orders >= spec.most_orders:
        shown = "not estimable" if halfwidth is None else f"{halfwidth:.4f}"
        return Decision(orders, halfwidth, f"max_orders {spec.most_orders} reached (half-width {shown})")
    return Decision(orders, halfwidth, None)


def replicate_halfwidth(config: MatrixConfig, cells: list[Cell], out: Path) -> float | None:
    """The largest replicate half-width (`kl_replicate_halfwidth`) of the orders units of a comparison of the
    finished `cells` (of one model and config task) alone with the config's children, over the tasks and
    children's languages it compares them on; None when none could be estimated. The comparison is the end
    step's (its min_n, n_boot, seed, across_languages), written to OUT/.auto/<model>/ (no plots; one permutation:
    the decision does not read the uniform test)."""
    from levante_tasks.compare.conventions import ORDER_REPLICATES
    from levante_tasks.compare.pipeline import Settings, run_compare

    spec = config.compare
    if spec is None or not cells:
        return None
    scratch = out / SCRATCH / cells[0].model.name
    shutil.rmtree(scratch, ignore_errors=True)
    run_compare(list(spec.irt), spec.trials, spec.runs, out / "cells" / cells[0].model.group, scratch,
                Settings(min_n=spec.min_n, n_boot=spec.n_boot, n_perm=1, seed=spec.seed, plots=False,
                         across_languages=spec.across_languages,
                         orders_tolerance=cells[0].model.distribution.tolerance),
                items_path=spec.items, model_folders=[out / c.rel_dir for c in cells])
    summary = scratch / "kl_summary.csv"
    table = pd.read_csv(summary) if summary.is_file() and summary.stat().st_size else pd.DataFrame()
    if "kl_replicate_halfwidth" not in table.columns:
        return None
    widths = table.loc[table["kl_definition"] == ORDER_REPLICATES, "kl_replicate_halfwidth"].dropna()
    return float(widths.max()) if len(widths) else None
