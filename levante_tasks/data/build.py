"""Build one evaluation dataset per task (parquet + dataset.json) from a mirrored release, all or nothing; with a
translation table, also one per task of each translated locale (data.localize)."""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq

from levante_tasks.atomic import write_json
from levante_tasks.data import numberline
from levante_tasks.data.columns import rows_table
from levante_tasks.data.decoding import Verdict
from levante_tasks.data.items import ReleaseItems, read_release_items
from levante_tasks.data.localize import localize
from levante_tasks.data.mirror import sha256_file
from levante_tasks.data.problems import Problem, ProblemLog
from levante_tasks.data.translations import TranslationTable
from levante_tasks.errors import LevanteError
from levante_tasks.schema import layout
from levante_tasks.schema.dataset import FINGERPRINT_COVERS, dataset_info_document, image_root
from levante_tasks.schema.items import ITEM_SCHEMA, SLIDER_TOLERANCE
from levante_tasks.schema.locales import ENGLISH, Locale
from levante_tasks.schema.markers import SYNTHETIC_RELEASE_MARKER
from levante_tasks.schema.tasks import BY_NAME

BUILDER_VERSION = 4  # bump whenever item construction changes, so `prepare` rebuilds (4: `<image N>` markers)
MAX_PROBLEM_LINES = 50
EMPTY_TASK_HINT = "pass --allow-empty-tasks to build the other tasks anyway"


class ValidationError(LevanteError):
    """A release failed validation: the message holds one line per problem."""

    def __init__(self, problems: list[Problem], hint: str) -> None:
        lines = [str(p) for p in problems[:MAX_PROBLEM_LINES]]
        if len(problems) > MAX_PROBLEM_LINES:
            lines.append(f"... and {len(problems) - MAX_PROBLEM_LINES} more problems")
        lines.append(f"{len(problems)} problem(s) in the release; {hint}")
        super().__init__("\n".join(lines))
        self.problems = problems


@dataclass
class TaskSummary:
    """What `prepare` built for one task."""

    task: str
    n_items: int
    fingerprint: str
    excluded: dict[str, int] = field(default_factory=dict)

    def entry(self) -> dict[str, Any]:
        """The task's entry in build.json."""
        return {"n_items": self.n_items, "fingerprint": self.fingerprint, "excluded": self.excluded}


@dataclass(frozen=True)
class LocaleRequest:
    """The translation table a build localises with, and the locales asked for (None: every translated locale the
    table has a column for and translates at least one item into)."""

    table: TranslationTable
    locales: tuple[Locale, ...] | None = None


def _json_safe(value: Any) -> Any:
    if isinstance(value, float) and math.isnan(value):
        return None
    return value


def dataset_fingerprint(items: list[dict[str, Any]], resolve: Callable[[str], Path],
                        cache: dict[str, str] | None = None) -> str:
    """sha256 over each item row (key-sorted JSON, in order) and the bytes of every image it references (`cache`:
    image hashes already taken from the bytes read in this build, shared by its datasets)."""
    digest = hashlib.sha256()
    cache = {} if cache is None else cache
    for item in items:
        row = {k: _json_safe(v) for k, v in item.items()}
        digest.update(json.dumps(row, sort_keys=True, ensure_ascii=False).encode("utf-8"))
        for rel in [item["stimulus_image"], *item["option_images"]]:
            if rel:
                if rel not in cache:
                    cache[rel] = sha256_file(resolve(rel))
                digest.update(f"{rel}\0{cache[rel]}\0".encode())
    return digest.hexdigest()


def _draw_generated(result: ReleaseItems, staging_root: Path) -> None:
    for rel, (low, high, marked) in sorted(result.generated.items()):
        numberline.save_number_line(staging_root / rel, low, high, marked)


def _write_task(items: list[dict[str, Any]], task: str, version: str, staging: Path, fingerprint: str,
                excluded: dict[str, int], synthetic: bool, locale: Locale = ENGLISH) -> None:
    relpath = layout.dataset_relpath(task, locale)
    out_dir = staging / relpath
    out_dir.mkdir(parents=True, exist_ok=True)
    pq.write_table(rows_table(items, ITEM_SCHEMA), out_dir / layout.DATASET_FILE)
    chance = sorted({round(i["chance_level"], 6) for i in items if not math.isnan(i["chance_level"])})
    write_json(out_dir / layout.DATASET_INFO_FILE, dataset_info_document(
        task, version, len(items),
        fingerprint=fingerprint,
        fingerprint_covers=FINGERPRINT_COVERS,
        excluded=excluded,
        chance_levels=chance,
        trial_types=sorted({i["trial_type"] for i in items}),
        slider_tolerance=SLIDER_TOLERANCE,
        image_root=image_root(relpath),
        synthetic=synthetic,  # the release holds levante-tasks synth's marker (schema.markers): made-up items
        **({} if locale.is_source else {"locale": locale.code}),
    ))


def _excluded_counts(result: ReleaseItems, dropped: dict[str, dict[str, int]], task: str) -> dict[str, int]:
    """`excluded:<reason>` (by design) and `dropped:<problem>` (lenient) row counts of one task, sorted."""
    counts = {**{f"excluded:{k}": v for k, v in result.excluded.get(task, {}).items()},
              **{f"dropped:{k}": v for k, v in dropped.get(task, {}).items()}}
    return dict(sorted(counts.items()))


def _check_nothing_emptied(result: ReleaseItems, accounts: dict[str, dict[str, int]],
                           allow_empty_tasks: bool) -> None:
    """Refuse a build with no items at all, or (unless allowed) one where a task's manifest rows all fell away."""
    if not any(result.items.values()):
        raise LevanteError("manifest.csv: no items left to build (every row was dropped or excluded)")
    if allow_empty_tasks:
        return
    emptied = [task for task in sorted(result.rows_by_task) if task in BY_NAME and not result.items.get(task)]
    if emptied:
        raise LevanteError("\n".join(
            f"{task}: all {result.rows_by_task[task]} rows dropped "
            f"({', '.join(f'{k}={v}' for k, v in accounts.get(task, {}).items())}); {EMPTY_TASK_HINT}"
            for task in emptied))


def _stage_locales(result: ReleaseItems, accounts: dict[str, dict[str, int]], request: LocaleRequest,
                   version: str, staging: Path, synthetic: bool, fingerprint: Callable[[list[dict[str, Any]]], str]
                   ) -> dict[str, dict[str, dict[str, Any]]]:
    """Write each requested locale's datasets under `staging` (a task with no translated item gets none); returns
    build.json's `locales`. A locale asked for by name that gets no item at all is an error; one not asked for is
    left out."""
    built: dict[str, dict[str, dict[str, Any]]] = {}
    for locale in request.locales or request.table.locales:
        localized = localize(result, request.table, locale)
        if not any(localized.items.values()):
            if request.locales:
                raise LevanteError(f"{request.table.name}: translates no item into {locale.code} (asked for with "
                                   "--locales)")
            continue
        built[locale.code] = {}
        for task in sorted(accounts):
            items = localized.items.get(task, [])
            excluded = dict(sorted({**accounts[task], **localized.left_out.get(task, {})}.items()))
            summary = TaskSummary(task, len(items), fingerprint(items), excluded)
            if items:
                _write_task(items, task, version, staging, summary.fingerprint, excluded, synthetic, locale)
            built[locale.code][task] = summary.entry()
    return built


def stage_datasets(release_root: Path, version: str, strict: bool, build_key: str, staging: Path,
                   allow_empty_tasks: bool = False, locales: LocaleRequest | None = None,
                   jobs: int = 1, decoded: dict[str, Verdict] | None = None) -> list[TaskSummary]:
    """Validate the release at `release_root` and write `datasets/` and `generated/` under `staging` only (with
    `locales`, also `datasets/locales/<code>/` and build.json's `locales`); pictures are decoded on up to `jobs`
    processes (the same bytes for every `jobs`), but for those in `decoded` (release relpath -> the verdict of its
    bytes, taken while copying them).

    Image references stay `release/...` (relative to the version dir). Raises ValidationError/LevanteError
    before anything is written when the release is not usable.
    """
    log = ProblemLog()
    result = read_release_items(release_root, log, jobs, decoded)
    if log.file_problems():
        raise ValidationError(log.file_problems(), "fix the release files named above")
    if strict and log.item_problems():
        raise ValidationError(log.item_problems(), "rerun with --lenient to drop these items (counted)")
    dropped = log.dropped_rows_by_task()

    def resolve(rel: str) -> Path:  # generated images exist only in staging; release files under release_root
        if rel.startswith(f"{layout.GENERATED_DIR}/"):
            return staging / rel
        return release_root / Path(rel).relative_to(layout.RELEASE_DIR)

    tasks = sorted(set(result.items) | set(result.excluded) | set(dropped))
    accounts = {task: _excluded_counts(result, dropped, task) for task in tasks}
    _check_nothing_emptied(result, accounts, allow_empty_tasks)
    (staging / layout.GENERATED_DIR).mkdir(parents=True, exist_ok=True)
    _draw_generated(result, staging)
    image_hashes = dict(result.picture_sha256)  # each picture hashed from the bytes it was decoded from
    synthetic = (release_root / SYNTHETIC_RELEASE_MARKER).is_file()
    summaries: list[TaskSummary] = []
    for task in tasks:
        items = result.items.get(task, [])
        fingerprint = dataset_fingerprint(items, resolve, image_hashes)
        summaries.append(TaskSummary(task, len(items), fingerprint, accounts[task]))
        if items:
            _write_task(items, task, version, staging, fingerprint, accounts[task], synthetic)
    document: dict[str, Any] = {"build_key": build_key, "tasks": {s.task: s.entry() for s in summaries}}
    if locales is not None:
        document["locales"] = _stage_locales(result, accounts, locales, version, staging, synthetic,
                                             lambda items: dataset_fingerprint(items, resolve, image_hashes))
    write_json(staging / layout.DATASETS_DIR / layout.BUILD_FILE, document)
    return summaries

