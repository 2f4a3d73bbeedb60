"""Children's data: Redivis-layout trials mapped to canonical option indices, runs with ages, theta.

Canonical options are `[answer] + distractors` (distractors: comma list or a Python-dict string such as
"{'0': 'coconut', '1': 'key'}"); responses are matched by exact string, unmatched ones are counted
and excluded.
"""

from __future__ import annotations

import ast
from collections import Counter
from pathlib import Path

import numpy as np
import pandas as pd

from levante_tasks.compare.irt import IrtModel
from levante_tasks.compare.scoring import score_matrix
from levante_tasks.compare.tables import correct_column, numeric, read_table
from levante_tasks.data.crosswalk import canonical_uid
from levante_tasks.errors import LevanteError

TRIAL_COLUMNS = ("run_id", "item_uid", "response", "answer", "distractors")
AGE_RANGE = (0.0, 25.0)  # years; outside it an age is impossible for a LEVANTE child (months, typos, -1 codes)


def parse_distractors(value: object) -> list[str]:
    """Distractor keys in listed order from a comma list or a Python-dict string (dict sorted by its keys)."""
    if value is None or (isinstance(value, float) and np.isnan(value)):
        return []
    text = str(value).strip()
    if text in ("", "NA", "nan", "None"):
        return []
    if text.startswith("{"):
        try:
            parsed = ast.literal_eval(text)
        except (ValueError, SyntaxError):
            parsed = None
        if isinstance(parsed, dict):
            keys = sorted(parsed, key=lambda k: (0, int(k)) if str(k).isdigit() else (1, str(k)))
            return [str(parsed[k]).strip() for k in keys]
    return [part.strip() for part in text.split(",")]


def _read_table(path: Path, required: tuple[str, ...], what: str) -> pd.DataFrame:
    """Read a CSV as strings-where-possible and check its required columns (user error if absent)."""
    table = read_table(path, what, dtype={"run_id": str, "item_uid": str, "response": str, "answer": str})
    missing = [c for c in required if c not in table.columns]
    if missing:
        raise LevanteError(f"{path.name}: {what} table lacks columns {missing}")
    return table


def read_trials(path: Path) -> pd.DataFrame:
    """Trials with `options` (canonical), `option_index` (-1 = unmatched), `n_options` and 0/1 `correct`.

    `correct` must be true/false-like or 0/1 (an empty cell counts as 0, as before); anything else is an error.
    """
    trials = _read_table(path, TRIAL_COLUMNS, "trials")
    options = [
        [str(a)] + parse_distractors(d) for a, d in zip(trials["answer"], trials["distractors"], strict=True)
    ]
    index = [
        opts.index(r) if isinstance(r, str) and r in opts else -1
        for opts, r in zip(options, trials["response"], strict=True)
    ]
    trials = trials.assign(option_index=index, n_options=[len(o) for o in options], options=options,
                           item_uid=[canonical_uid(str(uid)) for uid in trials["item_uid"]])
    if "correct" in trials.columns:
        trials["correct"] = correct_column(trials, path, missing=0.0)
    else:
        trials["correct"] = (trials["option_index"] == 0).astype(float)
    return trials


def read_runs(path: Path, exclusions: Counter) -> pd.DataFrame:
    """Runs table (run_id, age in years). Empty ages stay NaN; impossible ones (outside 0-25) become NaN and
    are counted (`runs_impossible_age`); text is an error, and so is a file whose every age is impossible."""
    table = _read_table(path, ("run_id", "age"), "runs")
    runs = table.assign(age=numeric(table, "age", path, key="run_id")).drop_duplicates("run_id")
    age = runs["age"]
    impossible = age.notna() & ~age.between(*AGE_RANGE)
    if impossible.any() and not (age.notna() & ~impossible).any():
        raise LevanteError(
            f"{path.name}: no age is within {AGE_RANGE[0]:g}-{AGE_RANGE[1]:g} years "
            f"(e.g. {age[impossible].iloc[0]:g}); give ages in years"
        )
    exclusions["runs_impossible_age"] += int(impossible.sum())
    return runs.assign(age=age.mask(impossible))


def children_theta(model: IrtModel, trials: pd.DataFrame, exclusions: Counter) -> pd.DataFrame:
    """Per-run ability on the model's scale: calibration `scores` where present, else EAP from these trials.

    Rescored runs use their site's group prior when the model has it, else the reference group.
    """
    uids = set(model.items["item_uid"])
    task_trials = trials[trials["item_uid"].isin(uids)]
    parts = []
    if model.scores is not None:
        known = model.scores[model.scores["run_id"].isin(set(task_trials["run_id"]))]
        parts.append(
            pd.DataFrame(
                {
                    "run_id": known["run_id"],
                    "theta": known["ability"],
                    "se": known["se"],
                    "theta_source": "calibration",
                }
            )
        )
        done = set(known["run_id"])
    else:
        done = set()
    rest = task_trials[~task_trials["run_id"].isin(done)]
    if not rest.empty:
        first = model.first_instances()
        rest = rest.assign(irt_item=first.loc[rest["item_uid"], "irt_item"].to_numpy())
        wide = rest.pivot_table(index="run_id", columns="irt_item", values="correct", aggfunc="first")
        names = {g.name for g in model.groups}
        site = (
            rest.groupby("run_id")["site"].first().reindex(wide.index).astype(str)
            if "site" in rest.columns
            else pd.Series("", index=wide.index)
        )
        groups = np.where(site.isin(names), site, model.reference.name)
        exclusions["runs_rescored"] += len(wide)
        exclusions["runs_rescored_unseen_site_reference_prior"] += int((~site.isin(names)).sum())
        theta, se = score_matrix(model, wide, groups)
        parts.append(
            pd.DataFrame(
                {"run_id": wide.index.astype(str), "theta": theta, "se": se, "theta_source": "rescored"}
            )
        )
    if not parts:
        return pd.DataFrame(columns=["run_id", "theta", "se", "theta_source"])
    return pd.concat(parts, ignore_index=True)
