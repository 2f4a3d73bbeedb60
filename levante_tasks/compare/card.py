"""The Croissant 1.1 card of the children's data one compare run used, written into its output as croissant.json.

It lists every input file (trials, runs, IRT records, items) by name with its sha256 under `inputs/` (the files are
not copied: a reader who holds them places them there to check the card), declares the trials keyed by
(run_id, trial_id), the runs keyed by run_id and the children's option distributions (human_distributions.csv)
keyed by (task, children's language, item_uid, ability bin, option), and counts runs and trials per site, dataset
and language. Only those counts are written into the card: no child's row, id or age.
"""

from __future__ import annotations

import csv
import datetime
from collections import Counter
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pandas as pd

from levante_tasks import __version__
from levante_tasks.cards import croissant as cr
from levante_tasks.compare import conventions as conv
from levante_tasks.compare.languages import NOT_RECORDED
from levante_tasks.filehash import sha256_file
from levante_tasks.schema.layout import CARD_FILE

INPUTS = "inputs"  # the folder the card names the input files under (relative to the card)
TRIAL_KEYS = ("trial_id", "trial_number")  # a trial's id within its run: trial_id, else (older exports) its number
TRIAL_FIELDS = ("run_id", "item_uid", "response", "answer", "distractors", "correct", "site", "dataset", "language",
                "task_id")  # what compare reads (plus the ids): declared as the trials' fields when present
RUN_FIELDS = ("run_id", "age", "site", "dataset", "language")
DISTRIBUTION_KEY = ("task", "children_language", "item_uid", "ability_bin", "option_index")
DISTRIBUTION_FIELDS = (*DISTRIBUTION_KEY, "option", "n", "n_bin", "p")
GROUP_FIELDS = ("site", "dataset", "language", "n_runs", "n_trials")
NOT_GIVEN = "not recorded"  # a site or dataset the trials do not name
LICENSE = ("The children's data is LEVANTE's, under the data use agreement it was obtained with; this card adds no "
           "licence to it")


def csv_header(path: Path) -> list[str]:
    """The column names of a CSV file's first line (a UTF-8 byte-order mark dropped)."""
    with open(path, encoding="utf-8-sig", newline="") as handle:
        return next(csv.reader(handle), [])


def input_names(paths: Sequence[Path]) -> list[str]:
    """Each input's contentUrl: `inputs/<name>`, or `inputs/<k>/<name>` for the k-th file of a name already used
    (two by_language records are often both `vocab_2pl_f1.rds`)."""
    used: Counter = Counter()
    names = []
    for path in paths:
        used[path.name] += 1
        k = used[path.name]
        names.append(f"{INPUTS}/{path.name}" if k == 1 else f"{INPUTS}/{k}/{path.name}")
    return names


def _fields(set_id: str, columns: Sequence[str], file_id: str, data_types: dict[str, str] | None = None) -> list:
    """Text fields (unless `data_types` says otherwise) read from the same-named columns of `file_id`."""
    return [cr.field(set_id, c, (data_types or {}).get(c, cr.TEXT), file_id) for c in columns]


def trials_record_set(file_id: str, header: list[str]) -> dict:
    """The trials, keyed by (run_id, trial_id) (trial_number for an export without trial ids)."""
    trial_key = next((c for c in TRIAL_KEYS if c in header), None)
    key = ["run_id", trial_key] if trial_key else []
    columns = [*key, *(c for c in TRIAL_FIELDS if c in header and c not in key)]
    node = cr.record_set("trials", _fields("trials", columns, file_id), key,
                         "One record per trial of a child's run (the file as given to compare).")
    if not key:
        node.pop("key")
        node["description"] += " The file has no trial_id or trial_number column: its trials have no declared key."
    return node


def runs_record_set(file_id: str, header: list[str]) -> dict:
    """The runs with their ages, keyed by run_id."""
    columns = [c for c in RUN_FIELDS if c in header]
    return cr.record_set("runs", _fields("runs", columns, file_id), ["run_id"],
                         "One record per run: the child's age in years and, when present, site, dataset, language.")


def distributions_record_set(file_id: str) -> dict:
    """The children's option proportions per (item, 1-logit ability bin) that models are compared with."""
    types = {"option_index": cr.INTEGER, "n": cr.INTEGER, "n_bin": cr.INTEGER, "p": cr.FLOAT}
    return cr.record_set("human_distributions", _fields("human_distributions", DISTRIBUTION_FIELDS, file_id, types),
                         list(DISTRIBUTION_KEY),
                         f"Children's option proportions per item and ability bin, one record per option; "
                         f"{conv.BIN_DEFINITION}.")


def _factor(values: pd.Series | np.ndarray | list[str | None], fill: str) -> tuple[np.ndarray, list[str]]:
    """(code of each row, its distinct names) of a column whose missing values read as `fill`; work per distinct
    value (a categorical's categories), not per row; other values are factorized as Python objects (a Series of
    them would first be converted to pandas' string dtype, row by row)."""
    if isinstance(getattr(values, "dtype", None), pd.CategoricalDtype):
        column = pd.Series(values, copy=False)
        codes, names = column.cat.codes.to_numpy(), list(column.cat.categories.astype(object))
    else:
        codes, uniques = pd.factorize(np.asarray(values, dtype=object), use_na_sentinel=True)
        names = list(uniques)
    codes = np.where(codes < 0, len(names), codes)
    merged, distinct = pd.factorize(pd.Index([*names, fill], dtype=object))  # a value spelled as `fill` is one
    return merged[codes], list(distinct)


def _distinct(values: np.ndarray, space: int) -> tuple[np.ndarray, np.ndarray]:
    """(sorted distinct values, each value's position among them) of non-negative integers below `space`, as
    `np.unique(values, return_inverse=True)`; counted in a table of `space` slots when that is no larger than the
    values (a few sites, datasets and languages; runs per group), which avoids sorting a 1M-row column."""
    if space > max(len(values), 1):
        return np.unique(values, return_inverse=True)
    seen = np.zeros(space, dtype=bool)
    seen[values] = True
    distinct = np.flatnonzero(seen)
    position = np.cumsum(seen) - 1
    return distinct, position[values]


def group_counts(trials: pd.DataFrame, languages: np.ndarray) -> list[dict[str, object]]:
    """Runs and trials per (site, dataset, children's language), in sorted order: counts only, never a child's
    row. Grouped on integer codes (a 1M-row file has a few distinct values per column)."""
    factors = [_factor(trials[c], NOT_GIVEN) if c in trials.columns else (np.zeros(len(trials), dtype=np.intp),
                                                                          [NOT_GIVEN]) for c in ("site", "dataset")]
    factors.append(_factor(languages, NOT_RECORDED))
    key = np.zeros(len(trials), dtype=np.int64)
    space = 1
    for codes, names in factors:
        key = key * len(names) + codes
        space *= len(names)
    keys, group = _distinct(key, space)
    size = np.bincount(group, minlength=len(keys))
    run, run_names = _factor(trials["run_id"], "")
    given = ~pd.isna(trials["run_id"]).to_numpy()  # a missing run_id is no run (pandas' nunique skips it)
    pairs = _distinct(group[given].astype(np.int64) * len(run_names) + run[given],
                      len(keys) * len(run_names))[0]  # distinct (group, run)
    runs = np.bincount(pairs // len(run_names), minlength=len(keys))
    rows = []
    for k, n_runs, n_trials in zip(keys, runs, size, strict=True):
        where = []
        for _, names in reversed(factors):
            k, code = divmod(int(k), len(names))
            where.append(names[code])
        rows.append((tuple(reversed(where)), int(n_runs), int(n_trials)))
    return [{f"groups/{name}": value for name, value in zip(GROUP_FIELDS, (*where, n_runs, n_trials), strict=True)}
            for where, n_runs, n_trials in sorted(rows)]


def groups_record_set(rows: list[dict[str, object]]) -> dict:
    """The counts per site, dataset and language as the card's own records (no file behind them)."""
    types = {"n_runs": cr.INTEGER, "n_trials": cr.INTEGER}
    fields = [{"@type": "cr:Field", "@id": f"groups/{c}", "name": c, "dataType": types.get(c, cr.TEXT)}
              for c in GROUP_FIELDS]
    node = cr.record_set("groups", fields, ["site", "dataset", "language"],
                         "Runs and trials per site, dataset and children's language (a language is a locale code, "
                         f"'{NOT_RECORDED}' when the data names none).")
    return {**node, "data": rows}


def children_card(folder: Path, inputs: dict[str, list[Path]], groups: list[dict[str, object]],
                  synthetic: list[str]) -> dict:
    """The card of the compare output in `folder` (a staging folder); `inputs` maps the role (trials, runs, irt,
    items) to the files given; `groups` from `group_counts`; `synthetic`: why the data is synthetic, if it is."""
    roles = [(role, path) for role in ("trials", "runs", "irt", "items") for path in inputs.get(role, [])
             if path.is_file()]  # `--items` may name prepared datasets: a folder, described by its data card
    urls = input_names([path for _, path in roles])
    described = {"trials": "children's trials (--trials)", "runs": "children's runs and ages (--runs)",
                 "irt": "IRT model record (--irt)", "items": "canonical options of the items (--items)"}
    files = [cr.file_object(url, sha256_file(path), f"{described[role]}; not copied: place it here to check")
             for (role, path), url in zip(roles, urls, strict=True)]
    ids = {role: node["@id"] for (role, _), node in zip(roles, files, strict=True)}
    output = cr.local_file_object(folder, "human_distributions.csv",
                                  "children's option proportions per item and ability bin (compare's output)")
    distributions = set(DISTRIBUTION_FIELDS) <= set(csv_header(folder / output["contentUrl"]))  # not when empty
    record_sets = [trials_record_set(ids["trials"], csv_header(inputs["trials"][0])),
                   runs_record_set(ids["runs"], csv_header(inputs["runs"][0])),
                   *([distributions_record_set(output["@id"])] if distributions else []), groups_record_set(groups)]
    collection = ("Simulated children (levante-tasks synth): no real child's responses." if synthetic else
                  "Children's responses to LEVANTE's tasks, exported from LEVANTE's data (Redivis) by the user who "
                  "ran compare.")
    kind = ("synthetic children's data (" + "; ".join(synthetic) + ")") if synthetic else "children's data"
    return cr.dataset(
        "levante-tasks-compare-children", f"The {kind} one levante-tasks compare run used: the input files by "
        "name and sha256 (not copied), their record sets, and counts per site, dataset and language. No child's "
        "row, id or age is in this card.",
        [LICENSE], [*files, output], record_sets,
        url="https://github.com/levante-framework", version=__version__,
        datePublished=datetime.datetime.now(datetime.UTC).date().isoformat(),
        citeAs="LEVANTE: Learning Variability Network Exchange (levante-framework.org)",
        **{"rai:dataCollection": collection,
           "rai:personalSensitiveInformation": "The input files hold child-level data (run ids, ages, responses); "
                                               "they stay with their holder and only their sha256 is recorded here.",
           "rai:dataUseCases": "Comparing models' item-level responses with children's on LEVANTE's IRT scale."},
    )


def write_children_card(folder: Path, inputs: dict[str, list[Path]], trials: pd.DataFrame, languages: np.ndarray,
                        synthetic: list[str]) -> None:
    """Write croissant.json into the compare output `folder` (a staging folder)."""
    card = children_card(folder, inputs, group_counts(trials, languages), synthetic)
    cr.write_card(folder / CARD_FILE, card)

