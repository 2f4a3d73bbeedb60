"""The Croissant data card of a prepared version: `prepare` (so `demo`) writes it, mlcroissant finds no error or
warning in it and generates every record set's records from the prepared files, each key unique; a changed file, a
repeated key or a card mlcroissant warns about fails with one line naming the file."""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from conftest import REAL_VERSION
from data_helpers import prepared_demo

from levante_tasks.cards import croissant
from levante_tasks.cli import main
from levante_tasks.data.card import card_version, data_card, write_data_card
from levante_tasks.data.mirror import read_lock
from levante_tasks.schema import layout


@pytest.fixture(scope="module")
def demo_version(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The demo's prepared synthetic version (`demo --prepare-only`), built once per test run; read only."""
    return prepared_demo(tmp_path_factory) / "data" / "synthetic"


@pytest.fixture
def version_copy(demo_version: Path, tmp_path: Path) -> Path:
    """A copy of the demo's prepared version that a test may change."""
    return Path(shutil.copytree(demo_version, tmp_path / "synthetic"))


def _dataset_infos(version_root: Path) -> dict[str, dict[str, Any]]:
    """Record set id -> dataset.json of every prepared dataset of the version."""
    found = {}
    for info_file in sorted((version_root / layout.DATASETS_DIR).rglob(layout.DATASET_INFO_FILE)):
        info = json.loads(info_file.read_text(encoding="utf-8"))
        found[info["task"] + (f".{info['locale']}" if "locale" in info else "")] = info
    return found


def tiny_card(folder: Path, uids: list[str]) -> Path:
    """A card of one small parquet (item_uid and a list column) made with the building blocks; returns it."""
    pq.write_table(pa.table({"item_uid": uids, "options": [["a", "b"]] * len(uids)}), folder / "items.parquet")
    fields = [croissant.field("items", "item_uid", croissant.TEXT, "items.parquet"),
              croissant.field("items", "options", croissant.TEXT, "items.parquet", is_array=True)]
    files = [croissant.local_file_object(folder, "items.parquet")]
    records = [croissant.record_set("items", fields, ["item_uid"])]
    card = croissant.dataset("tiny", "A tiny card.", [croissant.MIT], files, records, version="1.0.0",
                             datePublished="2026-01-01", citeAs="Tiny.")
    croissant.write_card(folder / "card.json", card)
    return folder / "card.json"


def _check_lines(capsys: pytest.CaptureFixture[str], card: Path, *extra: str) -> tuple[int, list[str]]:
    status = main(["card", "--check", str(card), *extra])
    captured = capsys.readouterr()
    return status, captured.err.splitlines() if status else captured.out.splitlines()


def test_the_demo_writes_a_synthetic_card_that_validates_down_to_its_records(demo_version: Path,
                                                                            tmp_path: Path) -> None:
    card_file = demo_version / layout.CARD_FILE
    card = json.loads(card_file.read_text(encoding="utf-8"))
    # `card --out` writes the same card elsewhere; checked there against the version folder (--root)
    out = tmp_path / "card.json"
    assert main(["card", "--version", "synthetic", "--data-dir", str(demo_version.parent), "--out", str(out)]) == 0
    assert json.loads(out.read_text(encoding="utf-8")) == card
    checked = croissant.check_card(out, root=demo_version)
    lock = read_lock(demo_version / layout.RELEASE_LOCK_FILE)
    infos = _dataset_infos(demo_version)
    # every mirrored and every prepared file, with the lock's sha256; the records are every dataset's items
    assert checked.files == len(lock["files"]) + len(lock["build"]["outputs"])
    assert {node["contentUrl"]: node["sha256"] for node in card["distribution"]} == {
        **{f"release/{rel}": entry["sha256"] for rel, entry in lock["files"].items()},
        **{rel: entry["sha256"] for rel, entry in lock["build"]["outputs"].items()}}
    assert checked.records == {set_id: info["n_items"] for set_id, info in infos.items()}
    assert {"vocab.de", "trog.es-CO"} <= set(infos) and card["inLanguage"][0] == "en"
    # every parquet column is a field (the list columns as arrays), the key is item_uid, exclusions are counted
    vocab = next(node for node in card["recordSet"] if node["@id"] == "vocab")
    columns = pq.read_schema(demo_version / "datasets/vocab/test.parquet").names
    assert [node["name"] for node in vocab["field"]] == columns
    assert {node["name"] for node in vocab["field"] if node.get("isArray")} == {"options", "option_images"}
    assert vocab["key"] == [{"@id": "vocab/item_uid"}] and "20 items" in vocab["description"]
    untranslated = next(node for node in card["recordSet"] if node["@id"] == "theory-of-mind.es-CO")
    assert "untranslated:" in untranslated["description"]
    # licences, RAI fields, and a synthetic release says so
    assert card["license"] == [croissant.CC_BY_NC_4_0, croissant.MIT]
    assert card["conformsTo"] == croissant.CROISSANT_1_1 and card["version"] == "0.0.0+synthetic"
    assert card["rai:dataCollectionType"] == ["Synthetic data"] and "SYNTHETIC" in card["rai:dataCollection"]
    assert "synthetic" in card["keywords"] and "SYNTHETIC" in card["description"]
    assert "/tmp" not in card_file.read_text(encoding="utf-8")  # no absolute path in the card


def test_an_unchanged_card_is_not_rewritten_and_a_card_away_from_its_files_fails_by_name(
        demo_version: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = write_data_card(demo_version, tmp_path / "card.json")
    mtime = out.stat().st_mtime_ns
    assert write_data_card(demo_version, out) == out and out.stat().st_mtime_ns == mtime
    status, lines = _check_lines(capsys, out)  # without --root its files are looked for beside it
    assert status == 2 and lines == ["levante-tasks: error: release/SYNTHETIC.md: missing (listed in card.json)"]


def test_a_one_byte_edit_in_one_prepared_parquet_fails_naming_that_file(
        version_copy: Path, capsys: pytest.CaptureFixture[str]) -> None:
    parquet = version_copy / "datasets/trog/test.parquet"
    data = bytearray(parquet.read_bytes())
    data[len(data) // 2] ^= 0x01
    parquet.write_bytes(bytes(data))
    status = main(["card", "--version", "synthetic", "--data-dir", str(version_copy.parent), "--check"])
    lines = capsys.readouterr().err.splitlines()
    assert status == 2 and len(lines) == 1, lines
    assert lines[0].startswith("levante-tasks: error: datasets/trog/test.parquet: sha256 differs from croissant.json")


def test_a_repeated_key_fails_naming_the_file_even_when_the_card_hashed_the_bad_file(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Its checksum matches (the card was made from the bad file): mlcroissant alone would yield both records."""
    assert _check_lines(capsys, tiny_card(tmp_path, ["a", "b"]))[0] == 0
    status, lines = _check_lines(capsys, tiny_card(tmp_path, ["a", "b", "a"]))
    assert status == 2 and lines == ["levante-tasks: error: items.parquet: key (a) repeats in record set items of "
                                     "card.json"]


@pytest.mark.parametrize(("change", "expected"), [
    (lambda card: card.pop("citeAs"), 'Croissant warning: [Metadata(tiny)] Property '
                                      '"http://mlcommons.org/croissant/citeAs" is recommended'),
    (lambda card: card["@context"].pop("transform"), "Croissant warning: WARNING: The JSON-LD `@context` is not "
                                                     "standard"),
    (lambda card: card["recordSet"][0]["field"][0].pop("dataType"), "not valid Croissant:"),
], ids=["missing-recommended-property", "non-standard-context", "field-without-type"])
def test_a_card_mlcroissant_warns_about_or_rejects_fails_naming_the_card(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], change: Any, expected: str) -> None:
    card_file = tiny_card(tmp_path, ["a", "b"])
    card = json.loads(card_file.read_text(encoding="utf-8"))
    change(card)
    croissant.write_card(card_file, card)
    status, lines = _check_lines(capsys, card_file)
    assert status == 2 and len(lines) == 1, lines
    assert lines[0].startswith(f"levante-tasks: error: card.json: {expected}"), lines


def test_a_file_name_with_a_space_gets_an_id_mlcroissant_takes(tmp_path: Path) -> None:
    """LEVANTE's pictures have names such as `rubber band.webp`: the @id has an underscore, the contentUrl not."""
    (tmp_path / "rubber band.webp").write_bytes(b"picture")
    node = croissant.local_file_object(tmp_path, "rubber band.webp")
    assert node["@id"] == "rubber_band.webp" and node["contentUrl"] == "rubber band.webp"
    assert node["encodingFormat"] == "image/webp"


def test_the_real_sample_card_lists_every_item_with_a_unique_key(real_sample_data: Path) -> None:
    version_root = real_sample_data / REAL_VERSION
    checked = croissant.check_card(version_root / layout.CARD_FILE)
    infos = _dataset_infos(version_root)
    assert checked.records == {set_id: info["n_items"] for set_id, info in infos.items()}
    english = {set_id: n for set_id, n in checked.records.items() if "." not in set_id}
    build = json.loads((version_root / "datasets" / layout.BUILD_FILE).read_text(encoding="utf-8"))
    assert english == {task: entry["n_items"] for task, entry in build["tasks"].items() if entry["n_items"]}
    assert {"vocab.de", "vocab.es-CO"} <= set(checked.records)
    card = data_card(version_root)
    assert card["version"] == "2026.3.24" and card["datePublished"] == REAL_VERSION
    assert card["rai:dataCollectionType"] == ["Reused data (LEVANTE's published release)"]
    assert "SYNTHETIC" not in card["description"] and "STAND-INS" in card["rai:dataCollection"]  # the sample's


def test_card_versions_are_semantic() -> None:
    assert card_version("2026-03-24") == "2026.3.24"
    assert card_version("synthetic") == "0.0.0+synthetic" and card_version("my_v 2") == "0.0.0+my-v-2"


def test_without_mlcroissant_the_check_names_the_extra_to_install(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    card_file = tiny_card(tmp_path, ["a"])
    monkeypatch.setitem(sys.modules, "mlcroissant", None)  # `import mlcroissant` raises ImportError
    status, lines = _check_lines(capsys, card_file)
    assert status == 2 and lines == [f"levante-tasks: error: card.json: {croissant.INSTALL_HINT}"]


def test_the_card_of_a_version_never_prepared_is_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["card", "--version", "2026-01-01", "--data-dir", str(tmp_path)]) == 2
    lines = capsys.readouterr().err.splitlines()
    assert len(lines) == 1 and "2026-01-01/release.lock.json: no prepared version here" in lines[0], lines
    assert not (tmp_path / "2026-01-01" / layout.CARD_FILE).exists()


def test_a_card_that_leaves_a_column_of_its_file_undeclared_fails_naming_the_file(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """mlcroissant passes a record set that declares only some of its file's columns (levante-bench's card declares
    one option picture of four): the check names the file and the column."""
    card_file = tiny_card(tmp_path, ["a", "b"])
    card = json.loads(card_file.read_text(encoding="utf-8"))
    card["recordSet"][0]["field"] = [node for node in card["recordSet"][0]["field"] if node["name"] != "options"]
    croissant.write_card(card_file, card)
    status, lines = _check_lines(capsys, card_file)
    assert status == 2 and lines == ["levante-tasks: error: items.parquet: column options is no record set's field "
                                     "in card.json"], lines


def test_a_wrong_sha256_fails_however_the_file_objects_type_is_spelled(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The full IRI of cr:FileObject is the same type to mlcroissant; the hash check must not skip it."""
    card_file = tiny_card(tmp_path, ["a", "b"])
    card = json.loads(card_file.read_text(encoding="utf-8"))
    card["distribution"][0].update({"@type": "http://mlcommons.org/croissant/FileObject", "sha256": "0" * 64})
    croissant.write_card(card_file, card)
    status, lines = _check_lines(capsys, card_file)
    assert status == 2 and lines == ["levante-tasks: error: items.parquet: sha256 differs from card.json (the file "
                                     "changed after the card was written)"], lines


def test_a_card_rewritten_on_a_later_day_keeps_its_date_and_bytes(
        version_copy: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """An undated version's card is dated the day it is first written; `prepare` again (or `card --out`) on a later
    day must not change the card, or its sha256 would drift with the calendar."""
    import datetime

    from levante_tasks.data import card as card_module

    card_file = version_copy / layout.CARD_FILE
    before, mtime = card_file.read_bytes(), card_file.stat().st_mtime_ns

    class Later(datetime.datetime):
        @classmethod
        def now(cls, tz: Any = None) -> datetime.datetime:
            return datetime.datetime(2099, 1, 2, tzinfo=tz)

    monkeypatch.setattr(card_module, "datetime", SimpleNamespace(datetime=Later, timezone=datetime.timezone))
    assert write_data_card(version_copy) == card_file
    assert card_file.read_bytes() == before and card_file.stat().st_mtime_ns == mtime
    assert write_data_card(version_copy, tmp_path / "copy.json").read_bytes() == before
    card_file.unlink()  # a version without a card gets today's date
    assert data_card(version_copy)["datePublished"] == "2099-01-02"
