"""Turn the prepared item rows of a task into lmms-eval docs (docs/design.md §3b).

Rows come from `<data_dir>/<version>/datasets/<internal_name>/test.parquet` (written by `levante-tasks
prepare`; a translated locale's from `datasets/locales/<code>/<internal_name>/`); the version is
$LEVANTE_DATA_VERSION, else the one named in `<data_dir>/default_version`.
Each doc adds the option-order seed, the presented order, the letters, the target letter, the control
variant and the image paths to show, in the order the model receives them; a translated locale's docs also carry
`locale` (its code).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from levante_tasks.core import controls
from levante_tasks.core.options import presented_orders
from levante_tasks.errors import LevanteError, problem_text
from levante_tasks.schema import layout
from levante_tasks.schema.dataset import SCHEMA_VERSION, DatasetInfo, read_build_tasks, read_dataset_info
from levante_tasks.schema.items import ITEM_SCHEMA, letters_for
from levante_tasks.schema.locales import ENGLISH, Locale
from levante_tasks.schema.records import VARIANTS
from levante_tasks.schema.tasks import task_info


def repair_hint(version: str) -> str:
    """What to run when a prepared file of `version` is missing or damaged (re-hashes and rebuilds it)."""
    return f"rerun `levante-tasks prepare --verify --release BASE --version {version}`"


class TaskNotHeld(LevanteError):
    """The prepared version holds no items of a task: its release lacks the task (or every row was left out)."""


def held_tasks(version: str, locale: Locale = ENGLISH) -> dict[str, int] | None:
    """The tasks a prepared version holds (in a translated `locale`), {internal name: items}, read from its
    `datasets/build.json` (written by `prepare` for every task the release has, and per locale it built; {} for a
    locale it did not build); None for a version without one (data not made by `prepare`)."""
    path = layout.version_dir(version) / layout.DATASETS_DIR / layout.BUILD_FILE
    if not path.is_file():
        return None
    shown = f"{version}/{layout.DATASETS_DIR}/{layout.BUILD_FILE}"
    try:
        return {task: entry["n_items"] for task, entry in read_build_tasks(path, shown, locale).items()}
    except LevanteError as exc:
        raise LevanteError(f"{exc}: {repair_hint(version)}") from None


def check_held(task: str, version: str, locale: Locale = ENGLISH) -> None:
    """TaskNotHeld (one line naming the version and the tasks it does hold) when `version` has no items of `task`
    (in `locale`)."""
    held = held_tasks(version, locale)
    if held is None or held.get(task, 0) > 0:
        return
    having = ", ".join(name for name, n in held.items() if n > 0) or "none"
    if task in held:
        why = "every row was left out (see its build.json)"
    elif held or locale.is_source:
        why = "its release has no such task"
    else:
        why = "it was prepared without a translation table that translates this locale"
    where = "" if locale.is_source else f" in {locale.code}"
    raise TaskNotHeld(f"{task}: data version {version} holds no {task} items{where} ({why}; tasks it holds{where}: "
                      f"{having})")


def load_rows(task: str, version: str, locale: Locale = ENGLISH) -> list[dict[str, Any]]:
    """The item rows of one task (in `locale`), as plain Python values; a missing or damaged dataset, or one of
    another dataset schema (schema.dataset.SCHEMA_VERSION: older data is not read in its old form), is one line
    naming it."""
    folder = f"{version}/{layout.dataset_relpath(task, locale)}"
    parquet = layout.dataset_dir(version, task, locale=locale) / layout.DATASET_FILE
    where = f"{folder}/{layout.DATASET_FILE}"
    if not parquet.is_file():
        hint = layout.PREPARE_HINT.replace("VERSION", version)
        raise LevanteError(f"{task}: no prepared dataset for version {version}"
                           f"{'' if locale.is_source else ' in ' + locale.code}: {hint}")
    schema = dataset_info(task, version, locale).raw["schema_version"]
    if schema != SCHEMA_VERSION:
        raise LevanteError(f"{task}: {folder} was prepared by another levante-tasks "
                           f"version (dataset schema {schema}, this one reads {SCHEMA_VERSION}): re-run "
                           f"`levante-tasks prepare --release BASE --version {version}`")
    try:
        table = pq.read_table(parquet)
        missing = [name for name in ITEM_SCHEMA.names if name not in table.column_names]
        if missing:
            raise LevanteError(f"{where}: missing columns {', '.join(missing)} (not a dataset written by "
                               f"levante-tasks prepare): {repair_hint(version)}")
        return table.to_pylist()
    except OSError as exc:
        raise LevanteError(f"{where}: {problem_text(exc)}: {repair_hint(version)}") from None
    except pa.ArrowException as exc:
        raise LevanteError(f"{where}: not a readable parquet file, corrupt or truncated "
                           f"({exc.__class__.__name__}): {repair_hint(version)}") from None


def _visual_paths(row: Mapping[str, Any], order: Sequence[int]) -> list[str]:
    """Context image (if any) then option images in presented order: `<image N>` is index N-1."""
    context = [row["stimulus_image"]] if row.get("stimulus_image") else []
    option_images = list(row.get("option_images") or [])
    return context + ([option_images[i] for i in order] if option_images else [])


def _is_missing(value: Any) -> bool:
    return value is None or (isinstance(value, float) and math.isnan(value))


def _group_docs(rows: list[dict[str, Any]], orders: Mapping[str, list[int]], *, seed: int, variant: str,
                version: str) -> list[dict[str, Any]]:
    """Docs of one group of rows: the presented `orders` of `seed` (the gold option 0's position is the target),
    images per `variant`."""
    docs = []
    for row in rows:
        for key in ("range_min", "range_max", "chance_level"):
            row[key] = None if _is_missing(row.get(key)) else float(row[key])
        if row["response_format"] == "choice":
            order = orders[row["item_uid"]]
            gold = order.index(0)
            letters = letters_for(int(row["n_options"]))
            target = letters[gold]
        else:
            order, letters, target = [0], [], ""
        docs.append(
            {
                **row,
                "options": [str(o) for o in row["options"]],
                "option_images": list(row.get("option_images") or []),
                "seed": seed,
                "presented_order": order,
                "letters": letters,
                "target_letter": target,
                "variant": variant,
                "data_version": version,
                "visual_paths": _visual_paths(row, order),
                "visual_donor": "",
            }
        )
    if variant == "shuffled":
        controls.shuffle_visuals(docs)
    return docs


def build_docs(rows: Iterable[Mapping[str, Any]], *, seed: int, variant: str, version: str) -> list[dict[str, Any]]:
    """Docs for one task variant, in row order. Option orders are balanced over the whole task and within each
    reported sub-type at once (`TaskInfo.subtypes`), and each block of n seeds shows an n-option item every option
    at every position once (options.presented_orders); shuffled images are exchanged within each sub-type (the
    whole task when it has none)."""
    if variant not in VARIANTS:
        raise ValueError(f"unknown variant {variant!r}; expected one of {VARIANTS}")
    rows = [dict(r) for r in rows]
    groups: dict[str, list[dict[str, Any]]] = {}
    strata: dict[str, str] = {}
    for row in rows:
        strata[row["item_uid"]] = task_info(row["task"]).subtype_of(row["trial_type"])
        groups.setdefault(strata[row["item_uid"]], []).append(row)
    choices = [(r["item_uid"], int(r["n_options"])) for r in rows if r["response_format"] == "choice"]
    orders = presented_orders(choices, seed, strata)
    by_uid = {}
    for group in groups.values():
        by_uid.update((d["item_uid"], d) for d in _group_docs(group, orders, seed=seed, variant=variant,
                                                              version=version))
    return [by_uid[row["item_uid"]] for row in rows]


def task_docs(task: str, *, seed: int, variant: str, choice_only: bool, locale: Locale = ENGLISH
              ) -> list[dict[str, Any]]:
    """The docs of one task variant (in `locale`) from the prepared data lmms-eval runs on; `choice_only` drops
    slider items (multiple_choice has no slider form). Missing data is a LevanteError naming the file and the fix;
    a task the version does not hold at all (in that locale) is TaskNotHeld (lmms-eval groups leave such a task
    out). A translated locale's docs carry `locale`: its code."""
    version = layout.data_version()
    check_held(task, version, locale)
    rows = load_rows(task, version, locale)
    if choice_only:
        rows = [r for r in rows if r["response_format"] == "choice"]
    if not rows:
        raise LevanteError(f"{task}: version {version} has no prepared items (see its dataset.json)")
    docs = build_docs(rows, seed=seed, variant=variant, version=version)
    if not locale.is_source:
        for doc in docs:
            doc["locale"] = locale.code
    return docs


def dataset_fingerprint(task: str, version: str, locale: Locale = ENGLISH) -> str | None:
    """The fingerprint `prepare` recorded for a task's dataset (`dataset.json`), None when it has none."""
    return dataset_info(task, version, locale).fingerprint


def dataset_synthetic(task: str, version: str, locale: Locale = ENGLISH) -> bool | None:
    """Whether `prepare` built the task's dataset from a synthetic release (`dataset.json`); None: not recorded."""
    return dataset_info(task, version, locale).synthetic


def dataset_info(task: str, version: str, locale: Locale = ENGLISH) -> DatasetInfo:
    """A task's `dataset.json` (in `locale`) as written by `prepare` (schema.dataset); unreadable or damaged:
    LevanteError."""
    shown = f"{version}/{layout.dataset_relpath(task, locale)}/{layout.DATASET_INFO_FILE}"
    try:
        return read_dataset_info(layout.dataset_dir(version, task, locale=locale) / layout.DATASET_INFO_FILE, shown)
    except LevanteError as exc:
        raise LevanteError(f"{task}: {exc}: {repair_hint(version)}") from exc


def version_root(doc: Mapping[str, Any]) -> Path:
    """`<data_dir>/<version>/` of a doc: image paths in docs are relative to it."""
    return layout.version_dir(doc["data_version"])
