"""`distribution: {orders: auto}`: after each block of replicate orders, whether a (model, task) has enough.

A block is the task's largest option count (plan.block_size: one Latin square of its items with that many
options). After each block the model's finished cells of the task are compared with the config's children
(`compare:`); the comparison's orders unit (compare.order_units, compare.replicates) gives the half-width of the
KL's interval over replicates alone (items fixed), the noise more orders remove. The task stops adding orders when
that half-width is <= `tolerance` (for a group task, every member task's), when every distinct order has been
asked (n! for the task's largest option count n: later seeds repeat earlier orders and are never counted), or
when `max_orders` is reached.
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass
from pathlib import Path

from levante_tasks.matrix.config import Distribution, MatrixConfig
from levante_tasks.matrix.plan import Cell

SCRATCH = ".auto"  # under --out: each decision's comparison (rewritten per block, removed at the end)


@dataclass(frozen=True)
class Decision:
    """After a block: the orders run, the replicate half-width then (None when none could be estimated), and why
    the task stops (None: it goes on)."""

    orders: int
    halfwidth: float | None
    stop: str | None


def decide(spec: Distribution, orders: int, halfwidth: float | None, distinct: int) -> Decision:
    """Whether a task with `orders` orders run and that half-width has enough (the rule in the module doc);
    `distinct`: the task's n! distinct orders."""
    tolerance = spec.tolerance or 0.0
    if halfwidth is not None and halfwidth <= tolerance:
        return Decision(orders, halfwidth, f"half-width {halfwidth:.4f} <= tolerance {tolerance:g} at {orders} "
                                           "orders")
    if orders >= distinct:
        return Decision(orders, halfwidth, f"every order asked (n! = {distinct})")
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
    import pandas as pd  # here, not at the top: every matrix run imports this module, few models decide orders

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
