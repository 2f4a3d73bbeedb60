"""`prepare`: mirror a release version, validate it, and build the per-task datasets (no work when current).

Nothing good is lost: the new mirror and the new datasets are built in staging folders next to the old
ones and validated there; only when everything succeeded are `release/`, `generated/` and `datasets/`
swapped in by renames, then `release.lock.json` is replaced, then `default_version`; the data card
`croissant.json` (data.card) is then written from the lock. A failed, interrupted
or killed run leaves the prepared version as it was; the next run removes its leftovers. One run at a time
holds a version (`folder_lock`).

With a translation table (`--translations FILE`, else the release's own `translations/item-bank-translations.csv`,
else the one the current build kept) the build also holds each translated locale's datasets (data.localize); the
table's sha256 is part of the build key and of the lock, so a changed table rebuilds and an unchanged one does not.
The build keeps a copy of its table (`datasets/locales/item-bank-translations.csv`, locked with the datasets), so a
later `prepare` without `--translations` builds the same locales again instead of dropping them.

The build's modules (data.build, data.card: pyarrow and numpy, ~0.3 s of imports) are imported when first needed,
not at start-up; a first `prepare` of a local release imports them while its last pictures decode
(`_load_build_modules`), so the decode workers fork sooner and from a smaller process.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import importlib
import json
import re
import shutil
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from levante_tasks import folder_lock
from levante_tasks.atomic import atomic_path, clean_stale, make_staging_dir, swap_dir, write_json, write_text
from levante_tasks.data.decoding import Verdict, available_cores
from levante_tasks.data.mirror import (
    FETCH_DIR,
    build_lock,
    fetch_files,
    file_entry,
    intact,
    listing_from_lock,
    plan_mirror,
    read_lock,
    scan_files,
    sha256_file,
    stage_release,
)
from levante_tasks.data.sources import (
    HttpSource,
    LocalSource,
    SourceUnreachable,
    open_source,
    resolve_version,
)
from levante_tasks.data.translations import TranslationTable, read_translations
from levante_tasks.errors import LevanteError, display_path, problem_text
from levante_tasks.schema import layout
from levante_tasks.schema.dataset import SCHEMA_VERSION, read_build_tasks
from levante_tasks.schema.locales import ENGLISH, TRANSLATED, Locale, LocaleError, locale

if TYPE_CHECKING:
    from levante_tasks.data.build import LocaleRequest, TaskSummary

# Swapped in this order: build.json names a build once both are in place.
OUTPUT_DIRS = (layout.GENERATED_DIR, layout.DATASETS_DIR)
_LEGACY = re.compile(r"^\.(?:build-.+|datasets\.old|generated\.old)$")  # temp folders of earlier builders


@dataclass
class PrepareResult:
    """What one `prepare` did: the version, how many files it fetched, whether it rebuilt, and the tasks (English,
    and per translated locale it built)."""

    version: str
    fetched: int
    rebuilt: bool
    tasks: list[TaskSummary]
    locales: dict[str, list[TaskSummary]] = field(default_factory=dict)


def build_key(files: dict[str, dict[str, Any]], strict: bool, allow_empty_tasks: bool,
              locales: LocaleRequest | None = None) -> str:
    """Identity of a build: the release files' hashes, the builder and schema versions, and the mode (with a
    translation table: its sha256, the locales asked for and the localiser version)."""
    from levante_tasks.data.build import BUILDER_VERSION
    from levante_tasks.data.localize import LOCALIZER_VERSION

    payload: dict[str, Any] = {
        "files": {rel: entry["sha256"] for rel, entry in files.items()}, "builder": BUILDER_VERSION,
        "schema": SCHEMA_VERSION, "strict": strict, "allow_empty_tasks": allow_empty_tasks}
    if locales is not None:
        payload["translations"] = {"sha256": locales.table.sha256, "localizer": LOCALIZER_VERSION,
                                   "locales": None if locales.locales is None else [x.code for x in locales.locales]}
    return hashlib.sha256(json.dumps(payload, sort_keys=True).encode()).hexdigest()


def _requested_locales(codes: Sequence[str] | None) -> tuple[Locale, ...] | None:
    """The translated locales named by `--locales`, in registry order (None: not restricted); one line for an
    unknown code or English."""
    if not codes:
        return None
    try:
        named = {locale(code) for code in codes}
    except LocaleError as exc:
        raise LevanteError(f"--locales: {exc}") from None
    if ENGLISH in named:
        raise LevanteError(f"--locales: {ENGLISH.code} is the manifest's own language (translated locales: "
                           f"{', '.join(loc.code for loc in TRANSLATED)})")
    return tuple(loc for loc in TRANSLATED if loc in named)


def _kept_table(version_root: Path, build: dict[str, Any]) -> tuple[Path, dict[str, str]] | None:
    """The table the current build's locales were made from (kept under `datasets/locales/`) and its lock entry
    (`sha256`, `from`), when it has one."""
    kept = version_root / layout.DATASETS_DIR / layout.LOCALES_DIR / layout.KEPT_TRANSLATIONS_FILE
    return (kept, build["translations"]) if build.get("translations") and kept.is_file() else None


def _locale_request(translations: str | None, chosen: tuple[Locale, ...] | None, release: Path,
                    files: dict[str, dict[str, Any]],
                    kept: tuple[Path, dict[str, str]] | None) -> tuple[LocaleRequest | None, str, Path | None]:
    """The table to localise with (`translations`, else the release's own, else the one the current build kept),
    where it came from (for the lock) and its file; (None, "", None) when there is none. One line for a bad table,
    or for `--locales` it cannot serve."""
    from levante_tasks.data.build import LocaleRequest

    if translations:
        path = Path(translations).expanduser()
        origin = f"file {path.name}"
    elif layout.TRANSLATIONS_FILE in files:
        path, origin = release / layout.TRANSLATIONS_FILE, f"release {layout.TRANSLATIONS_FILE}"
    elif kept is not None:
        path, origin = kept[0], kept[1].get("from", "")
    elif chosen:
        raise LevanteError(f"--locales needs a translation table: pass --translations FILE (the release has no "
                           f"{layout.TRANSLATIONS_FILE})")
    else:
        return None, "", None
    shown = layout.TRANSLATIONS_FILE if path == release / layout.TRANSLATIONS_FILE else display_path(path)
    table = read_translations(path, shown)
    if kept is not None and path == kept[0] and table.sha256 != kept[1].get("sha256"):
        raise LevanteError(f"{shown}: changed since prepare kept it (sha256 differs from the lock); pass "
                           "--translations FILE")
    lacking = [loc.code for loc in chosen or () if loc not in table.locales]
    if lacking:
        raise LevanteError(f"{table.name}: no {lacking[0]} column (asked for with --locales)")
    return LocaleRequest(table, chosen), origin, path


def _translates_nothing(table: TranslationTable) -> str:
    """Why a `--translations` table that builds no locale is refused (its locale columns unknown, say `de-DE`, or
    empty): it would replace the locales built before with none."""
    columns = ", ".join(loc.code for loc in table.locales) or \
        f"none; known: {', '.join(loc.code for loc in TRANSLATED)}"
    return f"{table.name}: translates no item into any locale (locale columns: {columns})"


@contextlib.contextmanager
def _step(version_root: Path, doing: str) -> Iterator[None]:
    """Report an OSError of one step as one line naming the version folder and the step.

    On a full disk the download cache goes too: this run gives back the space it took.
    """
    try:
        yield
    except OSError as exc:
        if exc.errno in (errno.ENOSPC, errno.EDQUOT):
            shutil.rmtree(version_root / FETCH_DIR, ignore_errors=True)
        raise LevanteError(f"{display_path(version_root)}: {doing}: {problem_text(exc)}") from exc


def _tidy(version_root: Path, data_root: Path) -> None:
    """Undo what a killed run left (lock held): trees a swap had moved aside go back (`clean_stale`), temp
    files and staging folders go, and so do earlier builders' temp folders."""
    clean_stale(version_root, recursive=True)
    clean_stale(data_root)
    for path in version_root.iterdir():
        if _LEGACY.match(path.name) and path.is_dir():
            shutil.rmtree(path)


def _outputs_intact(version_root: Path, outputs: dict[str, dict[str, Any]], verify: bool) -> bool:
    """Whether `generated/` and `datasets/` hold exactly the files the lock records, unchanged."""
    present = {f"{name}/{rel}": info for name in OUTPUT_DIRS for rel, info in scan_files(version_root / name).items()}
    if not outputs or set(present) != set(outputs):
        return False
    return all(intact(version_root / rel, present[rel], entry, verify) for rel, entry in outputs.items())


def _record_outputs(staging: Path) -> dict[str, dict[str, Any]]:
    """Lock entries (sha256 + stat) of every file a build wrote."""
    recorded = {}
    for name in OUTPUT_DIRS:
        for rel in scan_files(staging / name):
            path = staging / name / rel
            recorded[f"{name}/{rel}"] = file_entry(path, sha256_file(path))
    return dict(sorted(recorded.items()))


def _built_tasks(datasets: Path, locale: Locale = ENGLISH) -> list[TaskSummary]:
    """The English (or a translated `locale`'s) tasks of the build.json in `datasets`."""
    from levante_tasks.data.build import TaskSummary

    build = read_build_tasks(datasets / layout.BUILD_FILE, locale=locale)
    return [TaskSummary(task, info["n_items"], info.get("fingerprint"), info.get("excluded") or {})
            for task, info in sorted(build.items())]


def _built_locales(datasets: Path) -> dict[str, list[TaskSummary]]:
    """The tasks of each translated locale the build.json in `datasets` holds."""
    found = {loc.code: _built_tasks(datasets, loc) for loc in TRANSLATED}
    return {code: tasks for code, tasks in found.items() if tasks}


def _commit(version_root: Path, data_root: Path, version: str, staged_release: Path | None,
            staged_build: Path | None, lock: dict[str, Any] | None) -> None:
    """Swap in the staged trees, then replace the lock, then `default_version` (each written to a temp file
    first, so a full disk fails before anything is swapped)."""
    default_file = data_root / layout.DEFAULT_VERSION_FILE
    try:
        new_default = default_file.read_text(encoding="utf-8") != version + "\n"
    except (FileNotFoundError, UnicodeDecodeError):
        new_default = True
    with (atomic_path(default_file) if new_default else contextlib.nullcontext()) as default_tmp, \
            (atomic_path(version_root / layout.RELEASE_LOCK_FILE) if lock else contextlib.nullcontext()) as lock_tmp:
        if default_tmp:
            write_text(default_tmp, version + "\n")
        if lock_tmp:
            write_json(lock_tmp, lock)
        if staged_release:
            swap_dir(staged_release, version_root / layout.RELEASE_DIR)
        if staged_build:
            for name in OUTPUT_DIRS:
                swap_dir(staged_build / name, version_root / name)


def _load_build_modules() -> None:
    """Import the modules that build the datasets and write the data card (pyarrow and numpy among them), which
    nothing before the build needs: `fetch_files` calls this while the decode workers finish."""
    for name in ("levante_tasks.data.build", "levante_tasks.data.card"):
        importlib.import_module(name)


def _prepare_locked(source: LocalSource | HttpSource | None, version: str, version_root: Path, data_root: Path,
                    strict: bool, progress: bool, verify: bool, allow_empty_tasks: bool, translations: str | None,
                    chosen: tuple[Locale, ...] | None, jobs: int) -> PrepareResult:
    release = version_root / layout.RELEASE_DIR
    with _step(version_root, "checking the local mirror"):
        locked = read_lock(version_root / layout.RELEASE_LOCK_FILE)
        listing = source.files(version) if source else listing_from_lock(locked["files"])
        plan = plan_mirror(source, version, release, listing, locked["files"], verify)
    if source is None and plan.fetch:
        raise LevanteError(f"{version}/{plan.fetch[0].relpath}: missing or changed in the local mirror, and the "
                           "release source is unreachable")
    staged_release = staged_build = None
    fetched = 0
    decoded: dict[str, Verdict] = {}
    try:
        files = plan.files
        if plan.changed:
            with _step(version_root, "fetching release files"):
                downloads = fetch_files(source, version, version_root, plan.fetch, progress, jobs,
                                        meanwhile=_load_build_modules)
                fetched = len(downloads.sha256)
            with _step(version_root, "staging the release"):
                staged_release, files = stage_release(release, plan, downloads, listing)
            decoded = {rel: verdict for rel, verdict in downloads.verdicts.items()  # the staged file is those bytes
                       if files[rel]["sha256"] == verdict.sha256}
        build = locked.get("build") or {}
        with _step(version_root, "reading the translation table"):
            locales, origin, table_file = _locale_request(translations, chosen, staged_release or release, files,
                                                          _kept_table(version_root, build))
        key = build_key(files, strict, allow_empty_tasks, locales)
        rebuilt = build.get("key") != key or not _outputs_intact(version_root, build.get("outputs") or {}, verify)
        if rebuilt:
            from levante_tasks.data.build import stage_datasets

            with _step(version_root, "building the datasets"):
                staged_build = make_staging_dir(version_root / layout.DATASETS_DIR)
                tasks = stage_datasets(staged_release or release, version, strict, key, staged_build,
                                       allow_empty_tasks=allow_empty_tasks, locales=locales, jobs=jobs,
                                       decoded=decoded)
                if table_file is not None:  # kept with the locales it built, so a prepare without it rebuilds them
                    copy = staged_build / layout.DATASETS_DIR / layout.LOCALES_DIR / layout.KEPT_TRANSLATIONS_FILE
                    copy.parent.mkdir(parents=True, exist_ok=True)
                    shutil.copyfile(table_file, copy)
                build = {"key": key, "outputs": _record_outputs(staged_build),
                         **({"translations": {"sha256": locales.table.sha256, "from": origin}} if locales else {})}
        else:
            tasks = _built_tasks(version_root / layout.DATASETS_DIR)
        built_locales = _built_locales((staged_build or version_root) / layout.DATASETS_DIR)
        if translations and locales is not None and not built_locales:
            raise LevanteError(_translates_nothing(locales.table))
        label = source.label if source else locked.get("source", "unknown")
        lock = build_lock(version, label, files, build)
        with _step(version_root, "replacing the prepared data"):
            _commit(version_root, data_root, version, staged_release, staged_build, lock if lock != locked else None)
        from levante_tasks.data.card import write_data_card

        with _step(version_root, "writing the data card"):
            write_data_card(version_root)
        shutil.rmtree(version_root / FETCH_DIR, ignore_errors=True)
    finally:
        for staging in (staged_release, staged_build):
            if staging is not None and staging.exists():
                shutil.rmtree(staging, ignore_errors=True)
    return PrepareResult(version, fetched, rebuilt, tasks, built_locales)


def _open(release: str, version: str | None, data_dir: str | None) -> tuple[LocalSource | HttpSource | None, str]:
    """The source and the version to prepare; (None, version) when the source is unreachable but a locked
    mirror of the requested version exists (offline rebuild)."""
    source = open_source(release)
    try:
        return source, resolve_version(source, version)
    except SourceUnreachable:
        if version and read_lock(layout.lock_path(version, data_dir))["files"]:
            return None, version
        raise


def prepare(release: str, version: str | None, data_dir: str | None, strict: bool, progress: bool = True,
            verify: bool = False, allow_empty_tasks: bool = False, translations: str | None = None,
            locales: Sequence[str] | None = None, jobs: int | None = None) -> PrepareResult:
    """Mirror, validate and build; returns what was done. Raises LevanteError with one line per problem.

    `verify` re-hashes every mirror file, dataset file (and local source file) instead of trusting
    size + mtime; `allow_empty_tasks` lets a lenient build keep a task whose items were all dropped.
    `translations`: a translation table file (default: the release's own, if it has one); `locales`: the
    translated locales to build (default: every one the table translates at least one item into). `jobs`: how
    many processes decode the pictures (default: every core this process may use); the output is the same.
    """
    chosen = _requested_locales(locales)
    source, resolved = _open(release, version, data_dir)
    data_root = layout.data_dir(data_dir)
    version_root = layout.version_dir(resolved, data_dir)
    with folder_lock.hold(version_root, layout.PREPARE_LOCK_FILE, who="another prepare", what="the prepare lock"):
        with _step(version_root, "removing leftovers of an interrupted run"):
            _tidy(version_root, data_root)
        return _prepare_locked(source, resolved, version_root, data_root, strict, progress, verify, allow_empty_tasks,
                               translations, chosen, jobs or available_cores())

