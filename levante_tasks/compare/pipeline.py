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

import contextlib
import errno
from collections import Counter
from pathlib import Path

import pandas as pd
from tqdm import tqdm

from levante_tasks import __version__
from levante_tasks.atomic import clean_stale, replaceable_dir, staged_dir
from levante_tasks.compare import conventions as conv
from levante_tasks.compare.alignment import read_items
from levante_tasks.compare.difficulty import MIN_ITEMS
from levante_tasks.compare.distributions import GRID_POINTS
from levante_tasks.compare.humans import read_runs, read_trials
from levante_tasks.compare.irt import IrtModel, read_irt
from levante_tasks.compare.labels import synthetic_evidence
from levante_tasks.compare.records import read_records
from levante_tasks.compare.results import Results, Settings
from levante_tasks.compare.tables import rows_with_items
from levante_tasks.compare.task import compare_task
from levante_tasks.compare.writers import OUTPUT_MARKER, write_outputs
from levante_tasks.errors import LevanteError, display_path, os_error
from levante_tasks.schema.tasks import find_task

__all__ = ["Results", "Settings", "run_compare"]


def _majority(values: pd.Series) -> str | None:
    """Most common value (ties: first in sorted order), None when empty."""
    counts = values.value_counts()
    return str(sorted(counts[counts == counts.max()].index)[0]) if len(counts) else None


def _internal_name(task: str) -> str:
    """The catalogue's internal name of any spelling of a task; an unknown name as it is."""
    info = find_task(task)
    return info.name if info is not None else task


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
                _majority(trials.loc[rows_with_items(trials, uids), "task_id"].astype(object).dropna())
                if "task_id" in trials.columns
                else None
            )
        )
        if task is None:
            raise LevanteError(
                f"{model.name}: cannot tell its task (no records or trials share its items); "
                "use --irt TASK=PATH"
            )
        task = _internal_name(task)  # an item CSV's `task` column or trials' task_id may use another spelling
        if task in out:
            raise LevanteError(f"{model.name}: a second IRT model for task {task!r} ({out[task].name})")
        model.task = task
        out[task] = model
    return out


def check_out(out: Path) -> Path:
    """The folder to write (symlinks resolved): absent, empty or an earlier compare output; the output folder is
    replaced whole, so a non-empty folder without comparison.json (a user's own folder) is never touched."""
    return replaceable_dir(out, OUTPUT_MARKER, "compare output")


def run_compare(
    irt: list[tuple[str | None, Path]],
    trials_path: Path,
    runs_path: Path,
    models_path: Path,
    out: Path,
    settings: Settings,
    items_path: Path | None = None,
    model_folders: list[Path] | None = None,
) -> dict[str, object]:
    """The whole `levante-tasks compare` run; returns the JSON summary it wrote.

    `items_path` (`--items`) gives every item's canonical options; without it they come from the trials.
    `model_folders`: read only these folders under `models_path` (the matrix: its finished cells).
    """
    target = check_out(out)
    clean_stale(target.parent)
    records, record_counts = read_records(models_path, model_folders)
    # a records CSV may spell a task `mrot`, as --irt may (one lookup per distinct name, not per record)
    records["task"] = records["task"].map({task: _internal_name(task) for task in records["task"].unique()})
    trials = read_trials(trials_path)
    run_counts: Counter = Counter()
    runs = read_runs(runs_path, run_counts)
    if not set(runs["run_id"]) & set(trials["run_id"].cat.categories.astype(str)):
        raise LevanteError(
            f"{runs_path.name}: shares no run_id with {trials_path.name} (children's ages cannot be joined)"
        )
    loaded = [(task, m) for task, path in irt for m in read_irt(path)]
    by_task = assign_tasks(loaded, records, trials)
    items_file, item_counts = read_items(items_path) if items_path is not None else (None, Counter())
    results = Results()
    results.count(record_counts + run_counts + item_counts)
    known_uids = set().union(*(set(m.items["item_uid"]) for m in by_task.values()))
    results.count(
        Counter(
            trials_item_not_in_irt=int((~rows_with_items(trials, known_uids)).sum()),
            trials_correct_missing=int(trials["correct"].isna().sum()),
            records_task_without_irt_model=int((~records["task"].isin(by_task)).sum()),
        )
    )
    with _one_blas_thread():
        for task in tqdm(sorted(by_task), desc="compare tasks", leave=False, disable=None):
            compare_task(task, by_task[task], records, trials, runs, items_file, settings, results)
    if not any(unit["n_items"] for info in results.tasks.values() for unit in info["models"].values()):
        raise LevanteError(
            f"{display_path(models_path)}: nothing compared: no model answered an item of the IRT models (records' "
            f"tasks: {', '.join(sorted(set(records['task'])) or ['none'])}; IRT models' tasks: "
            f"{', '.join(sorted(by_task))}); name each IRT model's task with --irt TASK=PATH")
    summary = {
        "conventions": conv.conventions(),
        "settings": {
            "min_n": settings.min_n,
            "n_boot": settings.n_boot,
            "n_perm": settings.n_perm,
            "seed": settings.seed,
            "ci_level": settings.level,
            "beta_grid_points": GRID_POINTS,
            "min_items_for_r": MIN_ITEMS,
        },
        "inputs": {
            "irt": [p.name for _, p in irt],
            "trials": trials_path.name,
            "runs": runs_path.name,
            "models": models_path.name,
            "items": items_path.name if items_path is not None else None,
        },
        "data": {"synthetic_evidence": synthetic_evidence([trials_path, runs_path, *(p for _, p in irt)], trials),
                 "test_models": sorted(set(records.loc[records["test_model"].astype(bool), "model"])
                                       & {name for info in results.tasks.values() for name in info["models"]})},
        "levante_tasks_version": __version__,
        "tasks": results.tasks,
        "exclusions": results.exclusions,
    }
    try:
        with staged_dir(target) as staging:
            write_outputs(staging, results, summary, settings)
    except OSError as exc:  # staged_dir names --out (or its file) for an error that names no file
        kept = "" if exc.errno in (errno.ENOSPC, errno.EDQUOT) else "nothing was replaced"  # the hint says so
        raise os_error(exc, kept) from None
    return summary


def _one_blas_thread() -> contextlib.AbstractContextManager:
    """BLAS limited to one thread: the products here are small (at most ~2000 x 100 x 100), where OpenBLAS's
    threads cost more than they save (18x slower measured on a busy 2-core machine). threadpoolctl comes with
    scikit-learn (an lmms-eval dependency); without it BLAS keeps its default threads."""
    try:
        from threadpoolctl import threadpool_limits
    except ImportError:
        return contextlib.nullcontext()
    return threadpool_limits(limits=1, user_api="blas")
