"""Run every comparison for every (model, task, children's language) and write tidy CSV/JSON, plots, the
Markdown section and the Croissant card of the children's data used (compare.card).

Tasks are tied to IRT models by `--irt TASK=PATH` (`TASK@LANGUAGE=PATH`: the record of one language, LEVANTE's
`by_language/<language>`), a `task` column of an item CSV, or the task most of the model's records (else children's
trials) name for the IRT items. A model run in locale L meets the children of L (compare.languages) on the record
of L's language when the task is calibrated per language, else on the task's record. Every exclusion is counted in
the outputs.

The output folder is built in a staging folder next to `--out` and swapped in whole only when everything was
written, so a failure, a full disk or kill -9 leaves the earlier output as it was (the next run removes the
dead run's staging folder). `--out` must be absent, empty, or an earlier output (it holds comparison.json).
Impossible inputs never become published numbers: ages outside 0-25 years are counted exclusions, g/u outside
0 <= g < u <= 1 and runs sharing no run_id with the trials are errors, option scores without a softmax are
counted exclusions, and a model with no item in the IRT model gets no theta or age (NaN, counted).
"""

from __future__ import annotations

import errno
from collections import Counter
from pathlib import Path

import numpy as np
import pandas as pd
from tqdm import tqdm

from levante_tasks import __version__, blas
from levante_tasks.atomic import clean_stale, replaceable_dir, staged_dir
from levante_tasks.compare import conventions as conv
from levante_tasks.compare.alignment import read_items
from levante_tasks.compare.card import write_children_card
from levante_tasks.compare.crosslanguage import cross_language_counts, cross_language_items
from levante_tasks.compare.difficulty import MIN_ITEMS
from levante_tasks.compare.distributions import GRID_POINTS
from levante_tasks.compare.family import adjust_uniform_tests
from levante_tasks.compare.humans import read_runs, read_trials
from levante_tasks.compare.irt import IrtModel, read_irt
from levante_tasks.compare.labels import synthetic_evidence
from levante_tasks.compare.languages import (
    ACROSS_FLAG,
    NOT_RECORDED,
    ChildLanguages,
    by_language,
    child_languages,
    language_name,
    locale_rank,
    pairings,
    split_irt_task,
)
from levante_tasks.compare.records import read_model_records
from levante_tasks.compare.replicates import ALPHA
from levante_tasks.compare.results import Results, Settings
from levante_tasks.compare.tables import rows_with_items
from levante_tasks.compare.task import Comparison, compare_task, irt_summary, item_table
from levante_tasks.compare.writers import OUTPUT_MARKER, write_outputs
from levante_tasks.errors import LevanteError, display_path, os_error
from levante_tasks.schema.locales import ENGLISH, locale
from levante_tasks.schema.tasks import find_task

__all__ = ["Results", "Settings", "irt_record", "run_compare"]

IrtKey = tuple[str, str | None]  # (internal task name, language of a by_language record or None: the task's record)


def _majority(values: pd.Series) -> str | None:
    """Most common value (ties: first in sorted order), None when empty."""
    counts = values.value_counts()
    return str(sorted(counts[counts == counts.max()].index)[0]) if len(counts) else None


def _internal_name(task: str) -> str:
    """The catalogue's internal name of any spelling of a task; an unknown name as it is."""
    info = find_task(task)
    return info.name if info is not None else task


def _of_language(language: str | None) -> str:
    """` for language <l>` for messages (nothing for a task's own record)."""
    return f" for language {language!r}" if language else ""


def assign_tasks(
    models: list[tuple[str | None, IrtModel]], records: pd.DataFrame, trials: pd.DataFrame
) -> dict[IrtKey, IrtModel]:
    """(task, language) -> IRT model (`--irt TASK@LANGUAGE=`; a task calibrated per language reads its unqualified
    record as English's); two models for one key, or no task inferable, is a user error."""
    out: dict[IrtKey, IrtModel] = {}
    for spec, model in models:
        override, language = split_irt_task(spec, f"--irt {spec}")
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
        if language == ENGLISH.language and by_language(task):
            language = None  # vocab=PATH is the English record
        if (task, language) in out:
            raise LevanteError(f"{model.name}: a second IRT model for task {task!r}{_of_language(language)} "
                               f"({out[task, language].name})")
        model.task = task
        out[task, language] = model
    return out


def irt_record(task: str, children: str, irt: dict[IrtKey, IrtModel]) -> IrtModel:
    """The IRT record a comparison of `task` with `children` (a locale code, or NOT_RECORDED) is scored on: the
    record given for the children's language, else the task's record; a task calibrated per language (vocab,
    theory-of-mind) has no fallback outside English. A missing record is one line naming the `--irt` to pass."""
    language = None if children == NOT_RECORDED else locale(children).language
    if language is not None and (task, language) in irt:
        return irt[task, language]
    if by_language(task) and language not in (None, ENGLISH.language):
        raise LevanteError(
            f"{task}: no IRT record for {language_name(children)} children ({task} is calibrated per language); "
            f"pass --irt {task}@{language}=PATH (LEVANTE's {task}/by_language/{language} record)")
    if (task, None) in irt:
        return irt[task, None]
    given = ", ".join(f"{task}@{lang}" for t, lang in irt if t == task)
    raise LevanteError(f"{task}: no IRT record for {language_name(children)} children (given: {given}); pass "
                       f"--irt {task}=PATH")


def run_languages(trials: pd.DataFrame, children: ChildLanguages) -> tuple[np.ndarray, np.ndarray]:
    """(each trial's run code, -1 for a missing run_id; each run's language label plus a last None for code -1), so
    `labels[codes]` labels every trial with one lookup per run."""
    codes, run_ids = pd.factorize(trials["run_id"])
    labels = children.label(pd.Index(np.asarray(run_ids, dtype=object)).astype(str))
    return codes, np.append(labels, None)


def _runs_by_language(codes: np.ndarray, labels: np.ndarray) -> dict[str, int]:
    """Distinct runs per language label among trials with these run codes (runs without one left out), in report
    order."""
    found = Counter(label for label in labels[np.unique(codes)] if label is not None)
    return {str(k): found[k] for k in sorted(found, key=locale_rank)}


def plan_comparisons(
    irt: dict[IrtKey, IrtModel], records: pd.DataFrame, trials: pd.DataFrame, run_codes: tuple[np.ndarray, np.ndarray],
    children: ChildLanguages, settings: Settings, results: Results,
) -> list[tuple[Comparison, list[str]]]:
    """Every (task, children's language) comparison and the units it holds, before anything is computed (a missing
    by_language record is refused here). Notes per task what met no counterpart (`not_compared`), counted."""
    infos = {id(model): irt_summary(model, settings) for model in irt.values()}
    codes, labels = run_codes
    plan = []
    for task in sorted({task for task, _ in irt}):
        task_records = records[records["task"] == task]
        unit_locales = dict(zip(task_records["model"].to_numpy(dtype=object),  # numpy: not per-value pandas
                                task_records["locale"].to_numpy(dtype=object), strict=True))
        uids = set().union(*(set(m.items["item_uid"]) for (t, _), m in irt.items() if t == task))
        rows = rows_with_items(trials, uids)
        runs = _runs_by_language(codes[rows], labels)
        pairs = pairings(unit_locales, runs, children.recorded, settings.across_languages)
        for pairing in pairs:
            model = irt_record(task, pairing.language, irt)
            plan.append((Comparison(task, pairing.language, model, infos[id(model)]), pairing.units))
        met = {u for pairing in pairs for u in pairing.units}
        lonely = sorted(u for u in unit_locales if u not in met)
        unmet = {lang: n for lang, n in runs.items() if unit_locales and lang not in {p.language for p in pairs}}
        results.tasks[task] = {"children_runs_by_language": runs, "languages": {},
                               "not_compared": {"model_runs": {u: unit_locales[u] for u in lonely},
                                                "children_runs": unmet}}
        results.count(Counter(runs_language_without_model_run=sum(unmet.values())), task=task)
        for unit in lonely:
            results.count(Counter(models_without_children_of_their_language=1), task=task, model=unit,
                          language=unit_locales[unit])
    return plan


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
    records, replicates, record_counts = read_model_records(models_path, model_folders)
    # a records CSV may spell a task `mrot`, as --irt may (one lookup per distinct name, not per record)
    internal = {task: _internal_name(task) for task in records["task"].unique()}
    records["task"] = records["task"].map(internal)
    replicates["task"] = replicates["task"].map(internal)
    trials = read_trials(trials_path)
    run_counts: Counter = Counter()
    runs = read_runs(runs_path, run_counts)
    if not set(runs["run_id"]) & set(trials["run_id"].cat.categories.astype(str)):
        raise LevanteError(
            f"{runs_path.name}: shares no run_id with {trials_path.name} (children's ages cannot be joined)"
        )
    loaded = [(task, m) for task, path in irt for m in read_irt(path)]
    by_task = assign_tasks(loaded, records, trials)
    tasks = sorted({task for task, _ in by_task})
    items_file, item_counts = read_items(items_path) if items_path is not None else (None, Counter())
    results = Results()
    results.count(record_counts + run_counts + item_counts)
    language_counts: Counter = Counter()
    children = child_languages(trials, runs, language_counts)
    codes, run_labels = run_languages(trials, children)
    labels = run_labels[codes]
    known_uids = set().union(*(set(m.items["item_uid"]) for m in by_task.values()))
    results.count(
        language_counts + Counter(
            trials_item_not_in_irt=int((~rows_with_items(trials, known_uids)).sum()),
            trials_correct_missing=int(trials["correct"].isna().sum()),
            records_task_without_irt_model=int((~records["task"].isin(tasks)).sum()),
        )
    )
    for (task, _), model in sorted(by_task.items(), key=lambda pair: (pair[0][0], pair[0][1] or "")):
        results.add("items", item_table(task, model))
    plan = plan_comparisons(by_task, records, trials, (codes, run_labels), children, settings, results)
    with blas.one_thread():  # the products here are small
        for comparison, units in tqdm(plan, desc="compare tasks", leave=False, disable=None):
            rows = (run_labels == comparison.language)[codes]  # per run, not per trial; pooled: all NOT_RECORDED
            compare_task(comparison, records[records["model"].isin(units) & (records["task"] == comparison.task)],
                         trials if rows.all() else trials[rows], runs, items_file, settings, results,
                         replicates[replicates["model"].isin(units) & (replicates["task"] == comparison.task)])
    adjust_uniform_tests(results, settings.level)
    cross = cross_language_items(records[records["task"].isin(tasks)], trials,
                                 labels if children.recorded else np.full(len(trials), None), settings.min_n)
    results.add("cross_language_items", cross)
    if not any(unit["n_items"] for info in results.tasks.values() for comparison in info["languages"].values()
               for unit in comparison["models"].values()):
        raise LevanteError(f"{display_path(models_path)}: nothing compared: {_why_nothing(records, tasks, results)}")
    orders = any("orders" in lang for info in results.tasks.values() for lang in info["languages"].values())
    summary = {
        "conventions": {**conv.conventions(), **({"order_replicates": conv.ORDER_REPLICATES} if orders else {})},
        "settings": {
            "min_n": settings.min_n,
            "n_boot": settings.n_boot,
            "n_perm": settings.n_perm,
            "seed": settings.seed,
            "ci_level": settings.level,
            "beta_grid_points": GRID_POINTS,
            "min_items_for_r": MIN_ITEMS,
            "across_languages": settings.across_languages,
            "flag_drop": conv.FLAG_DROP,
            **({"orders_prior_alpha": ALPHA, "orders_tolerance": settings.orders_tolerance} if orders else {}),
        },
        "languages": {"recorded": children.recorded, "source": children.source,
                      "unknown_tags": children.unknown_tags},
        "cross_language_items": cross_language_counts(cross),
        "inputs": {
            "irt": [f"{spec}={p.name}" if spec else p.name for spec, p in irt],  # as given, file names only
            "trials": trials_path.name,
            "runs": runs_path.name,
            "models": models_path.name,
            "items": items_path.name if items_path is not None else None,
        },
        "data": {"synthetic_evidence": synthetic_evidence([trials_path, runs_path, *(p for _, p in irt)], trials),
                 "test_models": sorted(set(records.loc[records["test_model"].astype(bool), "model"])
                                       & {name for info in results.tasks.values() for lang in info["languages"].values()
                                          for name in lang["models"]})},
        "levante_tasks_version": __version__,
        "tasks": results.tasks,
        "exclusions": results.exclusions,
    }
    try:
        with staged_dir(target) as staging:
            write_outputs(staging, results, summary, settings)
            write_children_card(staging, {"trials": [trials_path], "runs": [runs_path], "irt": [p for _, p in irt],
                                          "items": [items_path] if items_path is not None else []},
                                trials, labels, summary["data"]["synthetic_evidence"])
    except OSError as exc:  # staged_dir names --out (or its file) for an error that names no file
        kept = "" if exc.errno in (errno.ENOSPC, errno.EDQUOT) else "nothing was replaced"  # the hint says so
        raise os_error(exc, kept) from None
    return summary


def _why_nothing(records: pd.DataFrame, tasks: list[str], results: Results) -> str:
    """Why no model answered an item compared with children: runs and children of different languages, or records
    of other tasks than the IRT models'."""
    lonely = {loc for info in results.tasks.values() for loc in info["not_compared"]["model_runs"].values()}
    unmet = {lang for info in results.tasks.values() for lang in info["not_compared"]["children_runs"]}
    if lonely:
        return (f"no model run meets children of its language (model runs' locales: "
                f"{', '.join(sorted(lonely, key=locale_rank))}; children's languages: "
                f"{', '.join(sorted(unmet, key=locale_rank)) or 'none'}); pass {ACROSS_FLAG} to compare across "
                "languages")
    return (f"no model answered an item of the IRT models (records' tasks: "
            f"{', '.join(sorted(set(records['task'])) or ['none'])}; IRT models' tasks: {', '.join(tasks)}); "
            "name each IRT model's task with --irt TASK=PATH")
