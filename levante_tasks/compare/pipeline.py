"""Run every comparison for every (model, task) and write tidy CSV/JSON, plots and the Markdown section.

Tasks are tied to IRT models by `--irt TASK=PATH`, a `task` column of an item CSV, or the task most of the
model's records (else children's trials) name for the IRT items. Every exclusion is counted in the outputs.

The output folder is built in a staging folder next to `--out` and swapped in whole only when everything was
written, so a failure, a full disk or kill -9 leaves the earlier output as it was (the next run removes the
dead run's staging folder). `--out` must be absent, empty, or an earlier output (it holds comparison.json).
Impossible inputs never become published numbers: ages outside 0-25 years are counted exclusions, g/u outside
0 <= g < u <= 1 and runs sharing no run_id with the trials are errors, option scores without a softmax are
counted exclusions, and a model with no item in the IRT model gets no theta or age (NaN, counted).
"""

from __future__ import annotations

import errno
import importlib.metadata
import os
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd
from tqdm import tqdm

from levante_tasks.atomic import atomic_open, clean_stale, staged_dir, write_json, write_text
from levante_tasks.compare import age as age_mod
from levante_tasks.compare import conventions as conv
from levante_tasks.compare.difficulty import correlate
from levante_tasks.compare.distributions import compare_model, human_distributions
from levante_tasks.compare.humans import children_theta, read_runs, read_trials
from levante_tasks.compare.irt import IrtModel, read_irt
from levante_tasks.compare.records import read_records
from levante_tasks.compare.scoring import rescore_calibration, score_items
from levante_tasks.errors import LevanteError, describe_os_error, display_path, os_error

OUTPUT_MARKER = "comparison.json"  # an `--out` folder holding it is an earlier output and may be replaced
NO_ITEMS = "no items matched the IRT model"


@dataclass
class Settings:
    """Tunable parameters of a comparison run (all recorded in comparison.json)."""

    min_n: int = 10
    n_boot: int = 2000
    seed: int = 0
    level: float = 0.95
    plots: bool = True


@dataclass
class Results:
    """Tidy tables and nested summaries collected while comparing."""

    tables: dict[str, list[pd.DataFrame]] = field(default_factory=dict)
    exclusions: list[dict[str, object]] = field(default_factory=list)
    tasks: dict[str, dict[str, object]] = field(default_factory=dict)

    def add(self, name: str, table: pd.DataFrame) -> None:
        """Append rows to the named output table."""
        self.tables.setdefault(name, []).append(table)

    def count(self, counts: Counter, task: str = "", model: str = "") -> None:
        """Record counted exclusions for a scope (global, task, or model x task)."""
        for reason, n in sorted(counts.items()):
            if n:
                self.exclusions.append({"task": task, "model": model, "reason": reason, "count": int(n)})

    def table(self, name: str) -> pd.DataFrame:
        """One concatenated output table (empty when nothing was added)."""
        parts = [p for p in self.tables.get(name, []) if not p.empty]
        return pd.concat(parts, ignore_index=True) if parts else pd.DataFrame()


def _majority(values: pd.Series) -> str | None:
    """Most common value (ties: first in sorted order), None when empty."""
    counts = values.value_counts()
    return str(sorted(counts[counts == counts.max()].index)[0]) if len(counts) else None


def assign_tasks(
    models: list[tuple[str | None, IrtModel]], records: pd.DataFrame, trials: pd.DataFrame
) -> dict[str, IrtModel]:
    """Task name -> IRT model; two models for one task, or none inferable, is a user error."""
    out: dict[str, IrtModel] = {}
    for override, model in models:
        uids = set(model.items["item_uid"])
        task = (
            override
            or model.task
            or _majority(records.loc[records["item_uid"].isin(uids), "task"])
            or (
                _majority(trials.loc[trials["item_uid"].isin(uids), "task_id"])
                if "task_id" in trials.columns
                else None
            )
        )
        if task is None:
            raise LevanteError(
                f"{model.name}: cannot tell its task (no records or trials share its items); "
                "use --irt TASK=PATH"
            )
        if task in out:
            raise LevanteError(f"{model.name}: a second IRT model for task {task!r} ({out[task].name})")
        model.task = task
        out[task] = model
    return out


def _children_bins(children: pd.DataFrame) -> pd.DataFrame:
    """Children per ability bin with their mean age (the bin -> age map of the KL-min bin idea)."""
    lows = np.floor(children["theta"].to_numpy()).astype(int)
    frame = children.assign(bin_low=lows)
    return frame.groupby("bin_low", as_index=False).agg(
        n_children=("run_id", "size"), mean_child_age=("age", "mean")
    )


def compare_task(
    task: str,
    model: IrtModel,
    records: pd.DataFrame,
    trials: pd.DataFrame,
    runs: pd.DataFrame,
    settings: Settings,
    results: Results,
) -> None:
    """All comparisons of one task: children's side once, then each model scoring unit."""
    counts: Counter = Counter()
    info: dict[str, object] = {
        "irt_model": model.name,
        "model_class": model.model_class,
        "itemtype": model.itemtype,
        "invariance": model.invariance,
        "groups": [{"name": g.name, "mean": g.mean, "var": g.var} for g in model.groups],
        "reference_group": model.reference.name,
        "prior_assumed": model.prior_assumed,
        "n_irt_items": int(len(model.items)),
    }
    if model.data is not None and model.scores is not None and model.data_groups is not None:
        rescored = rescore_calibration(model)
        info["calibration_rescore_max_abs_diff"] = {
            "ability": float(
                np.max(np.abs(rescored["ability"].to_numpy() - model.scores["ability"].to_numpy()))
            ),
            "se": float(np.max(np.abs(rescored["se"].to_numpy() - model.scores["se"].to_numpy()))),
        }
    items = model.first_instances()
    results.add(
        "items",
        items.reset_index().assign(task=task, convention=conv.B_DEFINITION)[
            ["task", "item_uid", "irt_item", "a1", "d", "g", "u", "b", "convention"]
        ],
    )
    children = children_theta(model, trials, counts).merge(runs[["run_id", "age"]], on="run_id", how="left")
    results.add("children_theta", children.assign(task=task))
    with_age = children.dropna(subset=["age"])
    counts["children_without_age"] += int(len(children) - len(with_age))
    dist = human_distributions(trials, children, set(items.index), settings.min_n, counts)
    results.add("human_distributions", dist.assign(task=task, convention=conv.OPTION_ORDER))
    child_bins = _children_bins(children)
    results.count(counts, task=task)
    info.update(
        n_children=int(len(children)),
        n_children_with_age=int(len(with_age)),
        n_item_bins=int(len(dist.drop_duplicates(["item_uid", "bin_low"]))) if len(dist) else 0,
    )
    task_records = records[records["task"] == task]
    info["models"] = {}
    units = task_records.groupby("model", sort=True)
    for unit, recs in tqdm(units, desc=f"models on {task}", leave=False, disable=None):
        info["models"][unit] = compare_unit(
            task, unit, model, recs, items, children, with_age, dist, child_bins, settings, results
        )
    results.tasks[task] = info


def compare_unit(
    task: str,
    unit: str,
    model: IrtModel,
    recs: pd.DataFrame,
    items: pd.DataFrame,
    children: pd.DataFrame,
    with_age: pd.DataFrame,
    dist: pd.DataFrame,
    child_bins: pd.DataFrame,
    settings: Settings,
    results: Results,
) -> dict[str, object]:
    """Theta, difficulty correlation, KL and age equivalence of one model scoring unit on one task."""
    counts: Counter = Counter()
    known = recs["item_uid"].isin(items.index)
    counts["model_items_not_in_irt"] += int((~known).sum())
    counts["irt_items_not_answered"] += int(len(items) - known.sum())
    matched = recs[known]
    correct = matched.set_index("item_uid")["correct"]
    thetas = []
    for prior in model.groups:
        theta, se, n = score_items(model, correct, prior)
        thetas.append(
            {
                "model": unit,
                "task": task,
                "group": prior.name,
                "is_reference": prior is model.reference,
                "prior_mean": prior.mean,
                "prior_var": prior.var,
                "n_items": n,
                "theta": theta,
                "se": se,
            }
        )
    results.add("model_theta", pd.DataFrame(thetas).assign(convention=conv.EAP_DEFINITION))
    ref = thetas[0]
    scored = bool(np.isfinite(ref["theta"]))
    counts["models_without_matched_items"] += int(not scored)
    share = float(np.mean(children["theta"].to_numpy() < ref["theta"])) if len(children) and scored else np.nan
    summary: dict[str, object] = {
        "theta": ref["theta"],
        "se": ref["se"],
        "n_items": ref["n_items"],
        "children_below_theta": share,
        "note": "" if scored else NO_ITEMS,
    }
    b = items.loc[correct.index, "b"].to_numpy()
    results.add(
        "model_items",
        pd.DataFrame(
            {"model": unit, "task": task, "item_uid": correct.index, "correct": correct.to_numpy(), "b": b}
        ),
    )
    corr = correlate(correct.to_numpy(), b, settings.n_boot, settings.seed, settings.level, f"{unit} {task}")
    corr = {"model": unit, "task": task, **corr, "b_definition": conv.B_DEFINITION, "sign": conv.R_SIGN}
    results.add("difficulty", pd.DataFrame([corr]))
    summary["difficulty"] = {
        k: corr[k]
        for k in (
            "pearson_r",
            "pearson_ci_low",
            "pearson_ci_high",
            "spearman_rho",
            "spearman_ci_low",
            "spearman_ci_high",
            "accuracy",
            "note",
        )
    }
    scores = dict(zip(matched["item_uid"], matched["option_scores"], strict=True))
    pairs, kl = (
        compare_model(dist, scores, counts)
        if len(dist)
        else (pd.DataFrame(), {"note": "no children's (item, bin) pairs with n >= min_n"})
    )
    if len(pairs):
        results.add(
            "kl_items", pairs.assign(model=unit, task=task, beta=kl["beta"], kl_definition=conv.KL_DEFINITION)
        )
        bins = pairs.groupby(["bin_low", "ability_bin"], as_index=False).agg(
            n_items=("kl", "size"), mean_kl=("kl", "mean")
        )
        bins = bins.merge(child_bins, on="bin_low", how="left")
        results.add("kl_bins", bins.assign(model=unit, task=task, beta=kl["beta"]))
        closest = bins[bins["ability_bin"] == kl["closest_bin"]].iloc[0]
        kl["closest_bin_mean_child_age"] = float(closest["mean_child_age"])
    results.add(
        "kl_summary", pd.DataFrame([{"model": unit, "task": task, **kl, "kl_definition": conv.KL_DEFINITION}])
    )
    summary["kl"] = kl
    if not scored:
        age = {"age_equivalent": np.nan, "age_ci_low": np.nan, "age_ci_high": np.nan, "age_flag": NO_ITEMS}
    elif len(with_age) >= 2:
        age = age_mod.age_equivalent(
            ref["theta"],
            ref["se"],
            with_age["age"].to_numpy(float),
            with_age["theta"].to_numpy(float),
            settings.n_boot,
            settings.seed,
            settings.level,
        )
    else:
        age = {"age_equivalent": np.nan, "age_flag": "fewer than 2 children with age"}
    results.add(
        "age_equivalence",
        pd.DataFrame([{"model": unit, "task": task, "theta": ref["theta"], "se": ref["se"], **age}]),
    )
    summary["age"] = age
    results.count(counts, task=task, model=unit)
    return summary


def _write_csv(path: Path, table: pd.DataFrame) -> None:
    """Write a CSV atomically with full float precision (R parity compares to 1e-8)."""
    with atomic_open(path, "w", encoding="utf-8", newline="") as handle:
        table.to_csv(handle, index=False, float_format="%.17g")


def check_out(out: Path) -> Path:
    """The folder to write (symlinks resolved); refuse a file, or a folder that is not an earlier compare output.

    The output folder is replaced whole, so a non-empty folder without comparison.json (a user's own folder)
    is never touched.
    """
    target = Path(os.path.realpath(out)) if out.is_symlink() else out
    if target.exists() and not target.is_dir():
        raise LevanteError(f"{display_path(out)}: exists and is not a folder; choose another --out")
    if target.is_dir():
        try:
            first = next(target.iterdir(), None)
        except OSError as exc:
            raise os_error(exc, "checking --out") from None
        if first is not None and not (target / OUTPUT_MARKER).is_file():
            raise LevanteError(
                f"{display_path(out)}: not empty and holds no {OUTPUT_MARKER} (not an earlier compare output); "
                "it is not replaced: choose another --out"
            )
    return target


def write_outputs(folder: Path, results: Results, summary: dict[str, object], settings: Settings) -> None:
    """Every output file into `folder` (the staging folder): tidy CSVs, comparison.json, plots, comparison.md."""
    from levante_tasks.compare import plots, report

    names = [
        "items",
        "model_theta",
        "model_items",
        "difficulty",
        "human_distributions",
        "kl_items",
        "kl_bins",
        "kl_summary",
        "age_equivalence",
        "children_theta",
    ]
    for name in names:
        _write_csv(folder / f"{name}.csv", results.table(name))
    _write_csv(
        folder / "exclusions.csv", pd.DataFrame(results.exclusions, columns=["task", "model", "reason", "count"])
    )
    write_json(folder / OUTPUT_MARKER, _jsonable(summary))
    figures = plots.write_all(results, folder / "plots") if settings.plots else []
    write_text(folder / "comparison.md", report.section(summary, figures))


def run_compare(
    irt: list[tuple[str | None, Path]],
    trials_path: Path,
    runs_path: Path,
    models_path: Path,
    out: Path,
    settings: Settings,
) -> dict[str, object]:
    """The whole `levante-tasks compare` run; returns the JSON summary it wrote."""
    target = check_out(out)
    clean_stale(target.parent)
    records, record_counts = read_records(models_path)
    trials = read_trials(trials_path)
    run_counts: Counter = Counter()
    runs = read_runs(runs_path, run_counts)
    if not set(runs["run_id"]) & set(trials["run_id"]):
        raise LevanteError(
            f"{runs_path.name}: shares no run_id with {trials_path.name} (children's ages cannot be joined)"
        )
    loaded = [(task, m) for task, path in irt for m in read_irt(path)]
    by_task = assign_tasks(loaded, records, trials)
    results = Results()
    results.count(record_counts + run_counts)
    known_uids = set().union(*(set(m.items["item_uid"]) for m in by_task.values()))
    results.count(
        Counter(
            trials_item_not_in_irt=int((~trials["item_uid"].isin(known_uids)).sum()),
            records_task_without_irt_model=int((~records["task"].isin(by_task)).sum()),
        )
    )
    for task in sorted(by_task):
        compare_task(task, by_task[task], records, trials, runs, settings, results)
    summary = {
        "conventions": conv.conventions(),
        "settings": {
            "min_n": settings.min_n,
            "n_boot": settings.n_boot,
            "seed": settings.seed,
            "ci_level": settings.level,
            "beta_grid_points": 201,
            "min_items_for_r": 10,
        },
        "inputs": {
            "irt": [p.name for _, p in irt],
            "trials": trials_path.name,
            "runs": runs_path.name,
            "models": models_path.name,
        },
        "levante_tasks_version": importlib.metadata.version("levante-tasks"),
        "tasks": results.tasks,
        "exclusions": results.exclusions,
    }
    try:
        with staged_dir(target) as staging:
            write_outputs(staging, results, summary, settings)
    except OSError as exc:
        problem = describe_os_error(OSError(exc.errno, exc.strerror))
        kept = "" if exc.errno in (errno.ENOSPC, errno.EDQUOT) else " (nothing was replaced)"
        raise LevanteError(f"{display_path(out)}: {problem}{kept}") from None
    return summary


def _jsonable(value: object) -> object:
    """Recursively turn numpy scalars and NaN into JSON-friendly values (NaN -> None)."""
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_jsonable(v) for v in value]
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, float) and not np.isfinite(value):
        return None
    return value
