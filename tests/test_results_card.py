"""Results cards (summary.card) on hand-made matrix.csv files: the key, the data cards, a matrix with no summary."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest

from levante_tasks.cards.croissant import CardError, check_card
from levante_tasks.schema.layout import CARD_FILE
from levante_tasks.summary.card import write_results_card
from levante_tasks.summary.writers import CSV_FIELDS


def write_matrix(folder: Path, rows: list[dict[str, str]]) -> None:
    """A matrix.csv of these cells (other columns empty)."""
    folder.mkdir(parents=True, exist_ok=True)
    with open(folder / "matrix.csv", "w", encoding="utf-8", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=CSV_FIELDS, lineterminator="\n")
        writer.writeheader()
        writer.writerows({"n_items": "4", "n_responses": "4", "accuracy": "0.5", **row} for row in rows)


def cell(source: str, **values: str) -> dict[str, str]:
    return {"model": "m", "revision": "unknown", "adapter": "levante_fixed", "harness": "lmms-eval",
            "task": "levante_trog", "output_type": "generate_until", "variant": "original", "data_version": "v1",
            "sources": json.dumps([source]), **values}


def data_cards(folder: Path) -> list[dict[str, str]]:
    card = json.loads((folder / CARD_FILE).read_text(encoding="utf-8"))
    return [rs["data"] for rs in card["recordSet"] if rs["@id"] == "data_cards"][0]


def test_cells_that_differ_only_in_their_comparison_keys_are_keyed_by_their_sources(tmp_path: Path) -> None:
    """--allow-mismatch keeps two cells of one model x task: the key adds `sources`, so every key stays unique."""
    write_matrix(tmp_path, [cell("a/r.json", limit="4"), cell("b/r.json", limit="8")])
    write_results_card(tmp_path, {"results": "matrix.csv"}, {}, tmp_path / "no-data")
    assert check_card(tmp_path / CARD_FILE).records == {"results": 2, "data_cards": 1}
    assert data_cards(tmp_path) == [{"data_cards/data_version": "v1", "data_cards/card": f"v1/{CARD_FILE}",
                                     "data_cards/sha256": "unknown"}]  # v1 is not prepared in that data dir
    write_matrix(tmp_path, [cell("a/r.json"), cell("a/r.json")])  # a true repeat still fails, naming the file
    write_results_card(tmp_path, {"results": "matrix.csv"}, {}, tmp_path / "no-data")
    with pytest.raises(CardError, match=r"^matrix\.csv: key \(m, unknown, .*\) repeats in record set results"):
        check_card(tmp_path / CARD_FILE)


def test_a_matrix_whose_every_summary_failed_gets_a_card_of_its_matrix_json(tmp_path: Path) -> None:
    (tmp_path / "matrix.json").write_text("{}", encoding="utf-8")
    write_results_card(tmp_path, {}, {"matrix.json": "the matrix", "summary/g/croissant.json": "absent"})
    card = json.loads((tmp_path / CARD_FILE).read_text(encoding="utf-8"))
    assert [node["contentUrl"] for node in card["distribution"]] == ["matrix.json"] and card["recordSet"] == []
    assert check_card(tmp_path / CARD_FILE).records == {}
