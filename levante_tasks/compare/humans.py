"""Children's data: Redivis-layout trials, runs with ages, and per-run ability on an IRT model's scale.

Trials are held as categoricals (a 1M-row file is a few MB of codes); per-row work happens on integer codes and
per-category work once per distinct value. Each run gets two abilities: `theta`, its calibration score (or an EAP
under its own group's prior when it is not in the calibration), and `theta_common`, an EAP from its trials under
the reference group's prior, the prior the models are scored with (docs/comparison.md, "One scale").

A run's IRT group is the one LEVANTE's scorer gives it (`levantemodels::score_irt` renames `dataset` to group):
its calibration group, else the record's group named by its `dataset`, else by its `site`, else the reference
group (rlevante's rule for an unseen group; counted). `group_source` in children_theta.csv says which.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import numpy as np
import pandas as pd

from levante_tasks.compare.alignment import split_alternatives
from levante_tasks.compare.irt import IrtModel
from levante_tasks.compare.scoring import eap_rows
from levante_tasks.compare.tables import numeric, parse_correct, positions, read_columns, read_table, rows_with_items
from levante_tasks.errors import LevanteError
from levante_tasks.schema.crosswalk import canonical_uid

TRIAL_COLUMNS = ("run_id", "item_uid", "response", "answer", "distractors")
OPTIONAL_COLUMNS = ("correct", "site", "task_id", "trial_number", "dataset", "language")
AGE_RANGE = (0.0, 25.0)  # years; outside it an age is impossible for a LEVANTE child (months, typos, -1 codes)
CHILD_COLUMNS = ["run_id", "group", "group_source", "theta", "se", "theta_source", "theta_common", "se_common",
                 "n_trials"]
GROUP_SOURCES = ("calibration", "dataset", "site", "reference prior")  # where a run's IRT group came from
UNSEEN_GROUP = "runs_rescored_unseen_group_reference_prior"  # rescored runs whose dataset and site name no group


def parse_distractors(value: object) -> list[str]:
    """Distractor keys in listed order from a comma list or a Python-dict string (dict sorted by its keys)."""
    return split_alternatives(value)


def _map_categories(column: pd.Series, func) -> pd.Series:
    """Apply `func` to each category once (not to each row); categories mapped to one value are merged."""
    mapped = pd.Index([func(str(c)) for c in column.cat.categories], dtype=object)
    codes, merged = pd.factorize(mapped)
    old = column.cat.codes.to_numpy()
    new = np.where(old >= 0, codes[np.maximum(old, 0)] if len(codes) else -1, -1)
    return pd.Series(pd.Categorical.from_codes(new, categories=pd.Index(merged, dtype=object)), index=column.index)


def _correct(trials: pd.DataFrame, path: Path) -> np.ndarray:
    """The `correct` column as 1.0/0.0, NaN where empty or NA (missing: the trial's IRT item is skipped, never
    counted wrong, whatever the response); other values name the file and row."""
    column = trials["correct"]
    values = np.zeros(len(column.cat.categories))
    for k, cat in enumerate(column.cat.categories):
        try:
            parsed = parse_correct(cat)
        except ValueError as exc:
            row = int(np.flatnonzero(column.cat.codes.to_numpy() == k)[0]) + 1
            raise LevanteError(f"{path.name}: row {row}: {exc}") from None
        values[k] = parsed
    codes = column.cat.codes.to_numpy()
    return np.where(codes >= 0, values[np.maximum(codes, 0)] if len(values) else np.nan, np.nan)


def read_trials(path: Path) -> pd.DataFrame:
    """Trials with canonical item uids (categoricals) and a 0/1/NaN `correct` (float).

    `correct` must be true/false-like or 0/1; an empty or NA cell is missing (NaN: skipped in the likelihood,
    counted by the caller); without the column, a response equal to the trial's answer is correct.
    Rows keep the file's order (the order repeated items were seen).
    """
    trials = read_columns(path, "trials", TRIAL_COLUMNS + OPTIONAL_COLUMNS, TRIAL_COLUMNS)
    trials["item_uid"] = _map_categories(trials["item_uid"], lambda u: canonical_uid(u))
    if "correct" in trials.columns:
        trials["correct"] = _correct(trials, path)
    else:
        same = trials["response"].astype(object).str.strip() == trials["answer"].astype(object).str.strip()
        trials["correct"] = same.fillna(False).to_numpy(dtype=float)
    return trials


def read_runs(path: Path, exclusions: Counter) -> pd.DataFrame:
    """Runs table (run_id, age in years, and `language` when present). Empty ages stay NaN; impossible ones
    (outside 0-25) become NaN and are counted (`runs_impossible_age`); text is an error, and so is a file whose
    every age is impossible."""
    table = read_table(path, "runs", dtype={"run_id": str, "language": str})
    missing = [c for c in ("run_id", "age") if c not in table.columns]
    if missing:
        raise LevanteError(f"{path.name}: runs table lacks columns {missing}")
    runs = table.assign(age=numeric(table, "age", path, key="run_id")).drop_duplicates("run_id")
    age = runs["age"]
    impossible = age.notna() & ~age.between(*AGE_RANGE)
    if impossible.any() and not (age.notna() & ~impossible).any():
        raise LevanteError(
            f"{path.name}: no age is within {AGE_RANGE[0]:g}-{AGE_RANGE[1]:g} years "
            f"(e.g. {age[impossible].iloc[0]:g}); give ages in years"
        )
    exclusions["runs_impossible_age"] += int(impossible.sum())
    return runs.assign(age=age.mask(impossible), run_id=runs["run_id"].astype(str))


def response_matrix(model: IrtModel, trials: pd.DataFrame, counts: Counter) -> tuple[pd.Index, np.ndarray]:
    """(run ids, runs x irt-item 0/1/NaN matrix in `model.items` order) from the task's trials.

    A run's k-th trial of an item is the item's instance k (rlevante `add_item_ids`, in `trial_number` order when
    the column is numeric, else file order); a repeat the IRT model has no instance for is dropped and counted.
    """
    items = model.items.reset_index(drop=True)
    if "trial_number" in trials.columns:
        order = pd.to_numeric(trials["trial_number"].astype(object), errors="coerce")
        trials = trials.assign(_order=order.fillna(np.inf).to_numpy()).sort_values(["_order"], kind="stable")
    run_codes, runs = pd.factorize(trials["run_id"])
    item_uids = pd.Index(items["item_uid"].unique())
    uid_codes = positions(trials["item_uid"], item_uids)
    instance = trials.groupby([run_codes, uid_codes], sort=False).cumcount().to_numpy() + 1
    n_instances = int(items["instance"].max())
    lookup = np.full((len(item_uids), n_instances + 1), -1)
    lookup[item_uids.get_indexer(items["item_uid"]), items["instance"].to_numpy(int)] = np.arange(len(items))
    col = np.where((uid_codes >= 0) & (instance <= n_instances),
                   lookup[np.maximum(uid_codes, 0), np.minimum(instance, n_instances)], -1)
    known = col >= 0
    counts["trials_repeat_without_irt_instance"] += int((~known & (instance > 1)).sum())
    matrix = np.full((len(runs), len(items)), np.nan)
    matrix[run_codes[known], col[known]] = trials["correct"].to_numpy()[known]
    return pd.Index(np.asarray(runs, dtype=object).astype(str)), matrix


def _calibration_groups(model: IrtModel) -> dict[str, str]:
    """run_id -> calibration group, from the record's `runs` and `groups` slots (row by row)."""
    if model.data_runs is None or model.data_groups is None or len(model.data_runs) != len(model.data_groups):
        return {}
    return dict(zip(model.data_runs, model.data_groups, strict=True))


def _first_value(first: pd.DataFrame, column: str, runs: pd.Index) -> np.ndarray:
    """Each run's value of a per-run column (`first`: each run's first trial), None where the column or the value
    is missing."""
    if column not in first.columns:
        return np.full(len(runs), None, dtype=object)
    values = pd.Series(first[column].astype(object).to_numpy(), index=first["run_id"].astype(str))
    return values.reindex(runs).to_numpy(dtype=object)


def run_groups(model: IrtModel, trials: pd.DataFrame, runs: pd.Index) -> tuple[np.ndarray, np.ndarray]:
    """(IRT group, its source in GROUP_SOURCES) of each run: its calibration group (record slots), else the
    record's group named by its `dataset`, else by its `site`, else the reference group."""
    names = [g.name for g in model.groups]
    calibration = pd.Series(runs, dtype=object).map(_calibration_groups(model)).to_numpy(dtype=object)
    first = trials.drop_duplicates("run_id")
    dataset, site = _first_value(first, "dataset", runs), _first_value(first, "site", runs)
    group = np.full(len(runs), model.reference.name, dtype=object)
    source = np.full(len(runs), GROUP_SOURCES[3], dtype=object)
    candidates = ((site, GROUP_SOURCES[2], pd.Series(site).isin(names)),
                  (dataset, GROUP_SOURCES[1], pd.Series(dataset).isin(names)),
                  (calibration, GROUP_SOURCES[0], pd.Series(calibration).notna()))
    for values, where, usable in candidates:  # lowest priority first: a later source overrides an earlier one
        mask = usable.to_numpy()
        group[mask], source[mask] = values[mask], where
    return group, source


def children_theta(model: IrtModel, trials: pd.DataFrame, exclusions: Counter) -> pd.DataFrame:
    """Per run of this task: group (`run_groups`), `theta`/`se` (calibration score, else EAP under its group's
    prior) and `theta_common`/`se_common` (EAP from its trials under the reference prior: the models' scale).
    Rescored runs whose dataset and site name no group of the record get the reference prior (counted)."""
    task_trials = trials[rows_with_items(trials, set(model.items["item_uid"]))]
    if task_trials.empty:
        return pd.DataFrame(columns=CHILD_COLUMNS)
    runs, matrix = response_matrix(model, task_trials, exclusions)
    group, group_source = run_groups(model, task_trials, runs)
    theta_common, se_common = eap_rows(model, matrix, np.full(len(runs), model.reference.name, dtype=object))
    frame = pd.DataFrame({"run_id": runs, "group": group, "group_source": group_source, "theta_common": theta_common,
                          "se_common": se_common, "n_trials": (~np.isnan(matrix)).sum(axis=1)})
    scores = model.scores.drop_duplicates("run_id").set_index("run_id") if model.scores is not None else None
    in_scores = runs.isin(scores.index) if scores is not None else np.zeros(len(runs), dtype=bool)
    theta = np.full(len(runs), np.nan)
    se = np.full(len(runs), np.nan)
    if scores is not None and in_scores.any():
        theta[in_scores] = scores.loc[runs[in_scores], "ability"].to_numpy()
        se[in_scores] = scores.loc[runs[in_scores], "se"].to_numpy()
    rest = ~in_scores
    if rest.any():
        theta[rest], se[rest] = eap_rows(model, matrix[rest], group[rest])
        exclusions["runs_rescored"] += int(rest.sum())
        exclusions[UNSEEN_GROUP] += int((group_source[rest] == GROUP_SOURCES[3]).sum())
    frame["theta"], frame["se"] = theta, se
    frame["theta_source"] = np.where(in_scores, "calibration", "rescored")
    return frame[CHILD_COLUMNS]
