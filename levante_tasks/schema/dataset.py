"""`datasets/<internal_name>/dataset.json` (schema.layout.DATASET_INFO_FILE): what `prepare` records beside a task's
test.parquet. `prepare` (data.build) writes it with `dataset_info_document`; everything else reads it with
`read_dataset_info`.

Keys: `schema_version` (int), `task` (internal name), `version` (data version), `n_items` (int) always;
`fingerprint` (sha256 hex over the item rows and images: FINGERPRINT_COVERS), `synthetic` (bool: built from a
release carrying schema.markers' marker), `excluded` ({`excluded:<reason>` | `dropped:<problem>`: rows}),
`chance_levels`, `trial_types`, `slider_tolerance`, `fingerprint_covers` and `image_root` (image paths are
relative to it: the version folder) where `prepare` writes them; `locale` (a translated locale's code) in a
translated locale's dataset only, whose `excluded` also counts the items left untranslated (`untranslated:<why>`).

`datasets/build.json` (schema.layout.BUILD_FILE) names the build that made `datasets/` and, under `tasks`, every
task the release holds with its `n_items`, `fingerprint` and `excluded` counts; under `locales` (a build with a
translation table) the same per task for each translated locale it built: `{code: {task: {...}}}`.
`read_build_tasks` reads either. It is how the catalogue learns which tasks a prepared version holds
(core.docs.held_tasks).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from levante_tasks.errors import LevanteError, display_path
from levante_tasks.schema.locales import ENGLISH, Locale
from levante_tasks.textfile import read_text

SCHEMA_VERSION = 2  # 2: items store `question`; the answer clause is composed (1: `prompt_text` held both)
IMAGE_ROOT = "../.."  # from datasets/<internal_name>/ to the version folder (image_root() for any dataset folder)
FINGERPRINT_COVERS = "item rows (key-sorted JSON) + sha256 of every referenced image"
REQUIRED: dict[str, type | tuple[type, ...]] = {"schema_version": int, "task": str, "version": str, "n_items": int}
OPTIONAL: dict[str, type | tuple[type, ...]] = {
    "fingerprint": str, "synthetic": bool, "excluded": dict, "chance_levels": list, "trial_types": list,
    "slider_tolerance": (int, float), "fingerprint_covers": str, "image_root": str, "locale": str,
}


def image_root(dataset_relpath: str) -> str:
    """The `image_root` of a dataset folder given relative to the version folder (`../..` for `datasets/vocab`)."""
    return "/".join(".." for _ in dataset_relpath.split("/"))


@dataclass(frozen=True)
class DatasetInfo:
    """A task's dataset.json, checked; `raw` holds every key as written."""

    task: str
    version: str
    n_items: int
    fingerprint: str | None = None  # None: not recorded (an older or hand-made dataset)
    synthetic: bool | None = None  # None: not recorded
    raw: dict[str, Any] = field(default_factory=dict)


def dataset_info_document(task: str, version: str, n_items: int, **recorded: Any) -> dict[str, Any]:
    """The dataset.json document of one task: the required keys, then `recorded` (keys of OPTIONAL only)."""
    unknown = sorted(set(recorded) - set(OPTIONAL))
    if unknown:
        raise ValueError(f"dataset.json has no key(s) {', '.join(unknown)}")
    return {"schema_version": SCHEMA_VERSION, "task": task, "version": version, "n_items": n_items,
            **recorded}


def _type_name(kind: type | tuple[type, ...]) -> str:
    names = {int: "an integer", str: "a string", bool: "true/false", dict: "an object", list: "a list",
             float: "a number"}
    return names[kind] if isinstance(kind, type) else "a number"


def read_dataset_info(path: Path, shown: str | None = None) -> DatasetInfo:
    """The dataset.json at `path`, called `shown` in messages (default errors.display_path).

    Raises LevanteError with one line naming the file and the problem: unreadable (missing included), not UTF-8,
    not JSON, not an object, a required key missing or a key of the wrong type.
    """
    shown = display_path(path) if shown is None else shown
    try:
        document = json.loads(read_text(path, shown))
    except json.JSONDecodeError as exc:
        raise LevanteError(f"{shown}: invalid JSON at line {exc.lineno} column {exc.colno}") from None
    if not isinstance(document, dict):
        raise LevanteError(f"{shown}: not a JSON object")
    for key, kind in {**REQUIRED, **OPTIONAL}.items():
        value = document.get(key)
        if value is None:
            if key in REQUIRED:
                raise LevanteError(f"{shown}: missing key {key!r}")
            continue
        kinds = kind if isinstance(kind, tuple) else (kind,)
        if not isinstance(value, kinds) or (isinstance(value, bool) and bool not in kinds):
            raise LevanteError(f"{shown}: key {key!r} is not {_type_name(kind)}")
    return DatasetInfo(task=document["task"], version=document["version"], n_items=document["n_items"],
                       fingerprint=document.get("fingerprint") or None, synthetic=document.get("synthetic"),
                       raw=document)


def read_build_tasks(path: Path, shown: str | None = None, locale: Locale = ENGLISH) -> dict[str, dict[str, Any]]:
    """The `tasks` of a build.json at `path` ({internal name: {n_items, fingerprint, excluded}}), or those of a
    translated `locale` (`locales.<code>`; {} when the build made none), called `shown` in messages. Raises
    LevanteError with one line naming the file: unreadable, not UTF-8, not JSON, or no `tasks` object (no
    `locales` object of such objects) whose entries each carry an integer `n_items`."""
    shown = display_path(path) if shown is None else shown
    try:
        document = json.loads(read_text(path, shown))
    except json.JSONDecodeError as exc:
        raise LevanteError(f"{shown}: invalid JSON at line {exc.lineno} column {exc.colno}") from None
    tasks = document.get("tasks") if isinstance(document, dict) else None
    if not isinstance(tasks, dict):
        raise LevanteError(f"{shown}: no 'tasks' object")
    if not locale.is_source:
        locales = document.get("locales", {})
        tasks = locales.get(locale.code, {}) if isinstance(locales, dict) else None
        if not isinstance(tasks, dict):
            raise LevanteError(f"{shown}: no 'locales' object of {locale.code} tasks")
    for task, entry in tasks.items():
        if not isinstance(entry, dict) or not isinstance(entry.get("n_items"), int) or isinstance(
                entry.get("n_items"), bool):
            raise LevanteError(f"{shown}: task {task!r} has no integer 'n_items'")
    return tasks
