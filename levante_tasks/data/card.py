"""The data card of a prepared version: a Croissant 1.1 card (cards.croissant) made from its `release.lock.json`.

Every mirrored release file and every file `prepare` built is a FileObject whose sha256 is the lock's (so the card
and the lock cannot disagree); each prepared dataset (a task, or a task of a translated locale) is a record set
keyed by `item_uid` with one field per parquet column (options and option pictures as arrays), its item count and
excluded / dropped rows. The card says whose licence covers what and, for a release made by `levante-tasks synth`,
that its items are synthetic. `prepare` writes it as `<version>/croissant.json`; contentUrls are relative to the
version folder.
"""

from __future__ import annotations

import datetime
import json
import re
from pathlib import Path, PurePosixPath
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from levante_tasks import __version__
from levante_tasks.cards import croissant
from levante_tasks.data.mirror import read_lock
from levante_tasks.errors import LevanteError, display_path
from levante_tasks.schema import layout
from levante_tasks.schema.dataset import read_dataset_info
from levante_tasks.schema.locales import ENGLISH, locale
from levante_tasks.schema.markers import STANDIN_RELEASE_MARKER

CARD_KEY = ("item_uid",)  # unique within a prepared dataset (schema.items.ItemRow)
_DATED = re.compile(r"^(\d{4})-(\d{2})-(\d{2})$")
_COLUMN_NOTES = {
    "item_uid": "the item's id, unique within the task (the record set's key)",
    "options": "the answer options in canonical order (the answer first)",
    "option_images": "one picture per option, a path relative to the version folder (empty for text options)",
    "stimulus_image": "the context picture, a path relative to the version folder ('' when none)",
    "answer": "the key of the correct option (the target number of a slider item)",
    "question": "the model-facing question (`<image N>` marks picture N)",
}
LICENSE_NOTE = ("LEVANTE's task content (items, instructions, pictures) is licensed CC-BY-NC 4.0 by the LEVANTE "
                "project; levante-tasks, whose `prepare` built the datasets, is MIT-licensed code.")


def _data_type(column: pa.Field, shown: str) -> tuple[str, bool]:
    """The Croissant data type of a parquet column and whether it holds a list per row."""
    kind = column.type
    is_array = pa.types.is_list(kind)
    if is_array:
        kind = kind.value_type
    for test, data_type in ((pa.types.is_string, croissant.TEXT), (pa.types.is_boolean, croissant.BOOLEAN),
                            (pa.types.is_integer, croissant.INTEGER), (pa.types.is_floating, croissant.FLOAT)):
        if test(kind):
            return data_type, is_array
    raise LevanteError(f"{shown}: column {column.name} has type {column.type}, which the card cannot describe")


def _record_set(version_root: Path, parquet_rel: str) -> tuple[dict[str, Any], str, bool]:
    """The record set of one prepared dataset, its locale code and whether it is synthetic."""
    folder = PurePosixPath(parquet_rel).parent
    info = read_dataset_info(version_root / folder / layout.DATASET_INFO_FILE, f"{folder}/{layout.DATASET_INFO_FILE}")
    code = info.raw.get("locale") or ENGLISH.code
    set_id = info.task if code == ENGLISH.code else f"{info.task}.{code}"
    try:
        schema = pq.read_schema(version_root / parquet_rel)
    except (OSError, pa.ArrowInvalid) as exc:
        raise LevanteError(f"{parquet_rel}: not a readable parquet file ({exc.__class__.__name__})") from None
    fields = []
    for column in schema:
        data_type, is_array = _data_type(column, parquet_rel)
        fields.append(croissant.field(set_id, column.name, data_type, croissant.file_id(parquet_rel),
                                      _COLUMN_NOTES.get(column.name, ""), is_array=is_array))
    excluded = ", ".join(f"{reason}={count}" for reason, count in (info.raw.get("excluded") or {}).items())
    language = locale(code).name
    description = (f"The prepared items of task {info.task} in {language} ({code}): {info.n_items} items; rows "
                   f"left out of the release's manifest (excluded by design / dropped / untranslated): "
                   f"{excluded or 'none'}.")
    return croissant.record_set(set_id, fields, CARD_KEY, description), code, bool(info.synthetic)


def card_version(version: str) -> str:
    """The card's semantic version of a data version: `2026-03-24` -> `2026.3.24`, any other -> `0.0.0+<name>`."""
    dated = _DATED.match(version)
    if dated:
        return ".".join(str(int(part)) for part in dated.groups())
    return "0.0.0+" + (re.sub(r"[^0-9A-Za-z-]+", "-", version).strip("-") or "unnamed")


def _published(version: str, version_root: Path) -> str:
    """The release date of a dated version; for any other, the date its card already gives, else the day the card
    is first made (UTC): a card rewritten on a later day (prepare again, `card --out`) keeps its date and bytes."""
    if _DATED.match(version):
        return version
    try:
        kept = json.loads((version_root / layout.CARD_FILE).read_text(encoding="utf-8")).get("datePublished")
    except (OSError, UnicodeDecodeError, json.JSONDecodeError, AttributeError):
        kept = None
    if isinstance(kept, str) and _DATED.match(kept):
        return kept
    return datetime.datetime.now(datetime.timezone.utc).date().isoformat()


def _rai(synthetic: bool, standins: bool, locales: list[str]) -> dict[str, Any]:
    """The Responsible-AI fields that apply to prepared task items (no child took part in making them)."""
    if synthetic:
        collection = ("SYNTHETIC: made-up items and pictures written by `levante-tasks synth` in LEVANTE's release "
                      "layout (with simulated children for the pipeline checks); no LEVANTE content, not for any "
                      "result about models or children.")
        kind = ["Synthetic data"]
    else:
        collection = ("LEVANTE's published release: the items, instructions and pictures of its child-facing "
                      "developmental tasks, mirrored and validated by `levante-tasks prepare`; no responses of "
                      "children are part of these datasets.")
        kind = ["Reused data (LEVANTE's published release)"]
    if standins:
        collection += (f" Some pictures are labelled STAND-INS drawn by `levante-tasks standins` (listed in "
                       f"{layout.RELEASE_DIR}/{STANDIN_RELEASE_MARKER}), not LEVANTE's: a pipeline check only.")
    return {
        "rai:dataCollection": collection,
        "rai:dataCollectionType": kind,
        "rai:dataPreprocessingProtocol": (
            "`levante-tasks prepare` checks every manifest row and picture, keeps the scored items (rows excluded "
            "by design or dropped in a lenient build are counted per record set), orders options answer-first, and "
            "draws number-line pictures; translated locales keep the items the translation table translates."),
        "rai:dataUseCases": (
            "Evaluating vision-language models on LEVANTE's developmental tasks and placing them on LEVANTE's IRT "
            "ability scales beside children; non-commercial research only (CC-BY-NC 4.0)."),
        "rai:dataLimitations": (
            f"Items are child-facing tasks (English source{', translated: ' + ', '.join(locales) if locales else ''}"
            "); a translated locale holds only the items its table translates; item counts are small per task, "
            "so per-task scores are noisy."),
        "rai:personalSensitiveInformation": "None: task items and stimulus pictures only, no data about any child.",
    }


def data_card(version_root: Path) -> dict[str, Any]:
    """The Croissant card of the prepared version in `version_root`, from its lock and its prepared datasets."""
    lock_file = version_root / layout.RELEASE_LOCK_FILE
    lock = read_lock(lock_file)
    outputs = (lock.get("build") or {}).get("outputs") or {}
    if not lock["files"] or not outputs:
        raise LevanteError(f"{display_path(lock_file)}: no prepared version here: {layout.PREPARE_HINT}")
    version = str(lock.get("version") or version_root.name)
    distribution = [croissant.file_object(f"{layout.RELEASE_DIR}/{rel}", entry["sha256"])
                    for rel, entry in sorted(lock["files"].items())]
    distribution += [croissant.file_object(rel, entry["sha256"]) for rel, entry in sorted(outputs.items())]
    record_sets, codes, synthetic = [], [ENGLISH.code], False
    for rel in sorted(outputs):
        if rel.startswith(f"{layout.DATASETS_DIR}/") and PurePosixPath(rel).name == layout.DATASET_FILE:
            node, code, is_synthetic = _record_set(version_root, rel)
            record_sets.append(node)
            codes += [code] if code not in codes else []
            synthetic = synthetic or is_synthetic
    standins = STANDIN_RELEASE_MARKER in lock["files"]
    what = (f"SYNTHETIC data in LEVANTE's release layout (made-up items, not LEVANTE's), version {version}"
            if synthetic else f"The prepared items of LEVANTE release {version}")
    description = (f"{what}: one record set per task (and per task of each translated locale) built by "
                   f"levante-tasks {__version__} `prepare`, with every release file and every prepared file and its "
                   f"sha256.{' Some pictures are labelled stand-ins.' if standins else ''} {LICENSE_NOTE}")
    citation = (f"LEVANTE (Learning Variability Network Exchange) developmental task items, release {version}"
                f"{' (synthetic)' if synthetic else ''}; prepared with levante-tasks {__version__}.")
    return croissant.dataset(
        f"levante-{version}", description, [croissant.CC_BY_NC_4_0, croissant.MIT], distribution, record_sets,
        version=card_version(version), datePublished=_published(version, version_root), citeAs=citation,
        inLanguage=codes, keywords=["LEVANTE", "developmental tasks", "vision-language models",
                                    *(["synthetic"] if synthetic else [])],
        **_rai(synthetic, standins, codes[1:]))


def write_data_card(version_root: Path, out: Path | None = None) -> Path:
    """Write the data card of `version_root` to `out` (default `<version_root>/croissant.json`) unless it already
    holds that card (a rerun of an unchanged `prepare` writes nothing); returns its path."""
    target = out or version_root / layout.CARD_FILE
    card = data_card(version_root)
    try:
        current = json.loads(target.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError):
        current = None
    if current != card:
        croissant.write_card(target, card)
    return target
