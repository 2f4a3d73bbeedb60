"""Results cards: a Croissant 1.1 card (croissant.json) of a summary's model x task matrix, or of a whole matrix
run's (one record set per group's summary), so a leaderboard row points to the data card it was measured on.

Each record is one cell of matrix.csv: model id and revision, adapter, harness, task, output type and variant (the
key), the task version, the accuracy and its interval, lmms-eval's version, commit and patch set, and the data
version, which references the card's `data_cards` records: each data version's card (`<version>/croissant.json`
in the data dir, relative to it) with its sha256 as found when the card was written ("unknown" when that version
is not prepared there). Other files the card lists (matrix.json, the summaries' and comparisons' own cards) carry
their sha256 only.
"""

from __future__ import annotations

import csv
import datetime
from collections.abc import Mapping, Sequence
from pathlib import Path

from levante_tasks import __version__
from levante_tasks.cards import croissant as cr
from levante_tasks.filehash import sha256_file
from levante_tasks.runs.model import UNKNOWN
from levante_tasks.schema import layout

CARD_FILE = layout.CARD_FILE  # every card of the package has this name in its folder
RESULT_KEY = ("model", "revision", "adapter", "harness", "task", "output_type", "variant")
RESULT_FIELDS = (*RESULT_KEY, "test_model", "n_items", "n_responses", "accuracy", "ci95_low", "ci95_high",
                 "task_version", "task_config_sha256", "lmms_eval_version", "lmms_eval_commit", "patch_set_sha256",
                 "dataset_fingerprint", "data_version", "synthetic_data", "sources")
RESULT_TYPES = {"n_items": cr.INTEGER, "n_responses": cr.INTEGER, "accuracy": cr.FLOAT}
DATA_CARDS = "data_cards"
DATA_CARD_FIELDS = ("data_version", "card", "sha256")


def read_rows(path: Path) -> list[dict[str, str]]:
    """The rows of a matrix.csv."""
    with open(path, encoding="utf-8", newline="") as handle:
        return list(csv.DictReader(handle))


def result_key(rows: list[dict[str, str]]) -> list[str]:
    """RESULT_KEY, plus `sources` where `--allow-mismatch` kept two cells of one model x task that differ only in
    their comparison keys."""
    keys = [tuple(row.get(c) for c in RESULT_KEY) for row in rows]
    return list(RESULT_KEY) if len(set(keys)) == len(keys) else [*RESULT_KEY, "sources"]


def results_record_set(set_id: str, file_id: str, key: list[str]) -> dict:
    """One record per cell of a summary's matrix.csv; `data_version` references the card's `data_cards`."""
    fields = [cr.field(set_id, c, RESULT_TYPES.get(c, cr.TEXT), file_id) for c in RESULT_FIELDS]
    for node in fields:
        if node["name"] == "data_version":
            node["references"] = {"field": {"@id": f"{DATA_CARDS}/data_version"}}
    return cr.record_set(set_id, fields, key,
                         "One record per model x task cell (docs/summary.md); model is the public id, revision its "
                         "commit ('unknown' when not pinned); data_version points to its data card in data_cards.")


def data_versions(tables: Sequence[list[dict[str, str]]]) -> list[str]:
    """The distinct data_version values of these matrix.csv rows, sorted."""
    return sorted({row.get("data_version") or UNKNOWN for rows in tables for row in rows})


def data_card_rows(versions: Sequence[str], data_dir: Path | None) -> list[dict[str, str]]:
    """Per data version: its card's path in the data dir and sha256 ("unknown" when no card is found there)."""
    rows = []
    for version in versions:
        known = version != UNKNOWN and layout.is_version_name(version)
        path = layout.version_dir(version, data_dir) / layout.CARD_FILE if known else None
        rows.append({"data_version": version, "card": f"{version}/{layout.CARD_FILE}" if known else UNKNOWN,
                     "sha256": sha256_file(path) if path is not None and path.is_file() else UNKNOWN})
    return rows


def data_cards_record_set(rows: list[dict[str, str]]) -> dict:
    """The data cards the results were measured on, as the card's own records (keyed by data version)."""
    fields = [{"@type": "cr:Field", "@id": f"{DATA_CARDS}/{c}", "name": c, "dataType": cr.TEXT}
              for c in DATA_CARD_FIELDS]
    node = cr.record_set(DATA_CARDS, fields, ["data_version"],
                         "Each data version's Croissant card (`card`: relative to the data dir) and its sha256 when "
                         "this card was written ('unknown': that version was not prepared there).")
    return {**node, "data": [{f"{DATA_CARDS}/{k}": v for k, v in row.items()} for row in rows]}


def results_card(folder: Path, tables: Mapping[str, str], linked: Mapping[str, str], data_dir: Path | None) -> dict:
    """The results card of `folder`: `tables` maps a record set id to a matrix.csv (relative to `folder`), `linked`
    maps further files (relative) to what they are (those present are listed). No table (a matrix whose every
    summary failed): no data_cards either."""
    files = [cr.local_file_object(folder, rel, "a summary's model x task matrix (levante-tasks summarize)")
             for rel in tables.values()]
    files += [cr.local_file_object(folder, rel, what) for rel, what in linked.items() if (folder / rel).is_file()]
    tables_rows = {set_id: read_rows(folder / rel) for set_id, rel in tables.items()}
    record_sets = [results_record_set(set_id, cr.file_id(rel), result_key(tables_rows[set_id]))
                   for set_id, rel in tables.items()]
    rows = data_card_rows(data_versions(list(tables_rows.values())), data_dir)
    return cr.dataset(
        "levante-tasks-results", "Models' results on LEVANTE's tasks (levante-tasks): one record per model x task "
        "cell with the model's id and revision, the task version, lmms-eval's version and patch set, and the data "
        "card (sha256) of the prepared data it was measured on.",
        [cr.CC_BY_NC_4_0, cr.MIT], files, [*record_sets, *([data_cards_record_set(rows)] if rows else [])],
        url="https://github.com/levante-framework", version=__version__,
        datePublished=datetime.datetime.now(datetime.UTC).date().isoformat(),
        citeAs="LEVANTE: Learning Variability Network Exchange (levante-framework.org)",
        **{"rai:dataUseCases": "Leaderboards and audits of models on LEVANTE's developmental tasks; rows marked "
                               "test_model or synthetic_data are not results about real models or real items."},
    )


def write_results_card(folder: Path, tables: Mapping[str, str], linked: Mapping[str, str],
                       data_dir: Path | None = None) -> None:
    """Write croissant.json into `folder` (`results_card`)."""
    cr.write_card(folder / CARD_FILE, results_card(folder, tables, linked, data_dir))
