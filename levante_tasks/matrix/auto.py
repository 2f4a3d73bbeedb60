"""`distribution: {orders: auto}`: after each block of replicate orders, whether a (model, task) has enough.

A block is the task's largest option count (one Latin square of its items with that many options). After each
block the model's finished cells of the task are compared with the config's children (`compare:`): their (item,
ability bin) option distributions and the replicate estimator (compare.replicates) give the half-width of the
KL's interval over replicates alone (items fixed), the noise more orders remove. The task stops adding orders when
that half-width is <= `tolerance` (for a group task, every member task's), or when `max_orders` is reached.
"""

from __future__ import annotations

import math
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd
import pyarrow.parquet as pq

from levante_tasks.errors import LevanteError
from levante_tasks.matrix.config import Distribution, MatrixConfig
from levante_tasks.matrix.plan import Cell, datasets_of
from levante_tasks.runs.lmms import FileProblem, read_samples, samples_name
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


def choice_records(folders: list[Path]) -> pd.DataFrame:
    """item_uid, task, seed, choice_index (canonical; None unparsed) and n_options of every per-item record of
    choice items in the cells' samples files."""
    rows = []
    for folder in folders:
        for path in sorted(folder.rglob("*.jsonl")):
            if not samples_name(path.name):
                continue
            try:
                lines = read_samples(path, path.name)
            except FileProblem as exc:
                raise LevanteError(str(exc)) from None
            rows += [{"item_uid": r["item_uid"], "task": r["task"], "seed": int(r["seed"]),
                      "choice_index": r.get("choice_index"), "n_options": len(r["presented_order"])}
                     for r in (line.record for line in lines) if r and r.get("presented_order")]
    return pd.DataFrame(rows, columns=["item_uid", "task", "seed", "choice_index", "n_options"])


def replicate_halfwidth(config: MatrixConfig, cells: list[Cell], out: Path) -> float | None:
    """The largest replicate half-width over the tasks and children's languages the finished `cells` (of one model
    and config task) are compared on; None when no task could be estimated. The children's distributions come
    from a comparison of these cells alone, written to OUT/.auto/ (no plots; one draw of its own bootstraps, whose
    intervals the decision does not read)."""
    from levante_tasks.compare.distributions import Cells
    from levante_tasks.compare.pipeline import Settings, run_compare
    from levante_tasks.compare.replicates import (
        align_choices,
        choices_from_records,
        records_per_seed,
        replicate_estimate,
    )

    spec = config.compare
    if spec is None or not cells:
        return None
    scratch = out / SCRATCH / cells[0].model.name
    shutil.rmtree(scratch, ignore_errors=True)
    folders = [out / c.rel_dir for c in cells]
    run_compare(list(spec.irt), spec.trials, spec.runs, out / "cells" / cells[0].model.group, scratch,
                Settings(min_n=spec.min_n, n_boot=1, seed=spec.seed, plots=False), items_path=spec.items,
                model_folders=folders)
    distributions = scratch / "human_distributions.csv"
    dist = pd.read_csv(distributions) if distributions.is_file() else pd.DataFrame()
    records = choice_records(folders)
    widths = []
    for (task, _language), rows in (dist.groupby(["task", "children_language"]) if len(dist) else []):
        frame = records[records["task"] == task]
        if frame.empty:
            continue
        children = Cells.from_dist(rows)
        uids, choices, n_options = choices_from_records(frame)
        choices, n_options = align_choices(children, uids, choices, n_options)
        estimate = replicate_estimate(children, choices, n_options, n_boot=spec.n_boot, seed=spec.seed,
                                      per_seed=records_per_seed(frame))
        width = float(estimate["kl_replicate_halfwidth"])
        if not math.isnan(width):
            widths.append(width)
    return max(widths) if widths else None
