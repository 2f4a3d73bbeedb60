"""The real sample prepared with LEVANTE's real translation table (../shared/levante-sample/translations, read in place:
CC-BY-NC, never copied here): de and es-CO hold what the table's own coverage script says is translated."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from levante_tasks.compare.alignment import read_items
from levante_tasks.core.locale_text import text
from levante_tasks.data.prepare import prepare
from levante_tasks.data.standins import write_standin_release
from levante_tasks.schema import layout
from levante_tasks.schema.locales import locale

VERSION = "2026-03-24"
TABLE = "item_bank_translations.csv"  # the 1cb5bfc version: real de and es-CO text (README of translations/)
# Items coverage.py counts as translated that the English build leaves out, so no locale build can hold them:
# egma-math: 7 rows repeating an earlier row exactly, 5 Counting items (excluded by design) and 3 of the 4 rows that
# reuse an item_uid with other content (dropped; the 4th, "Choose the 1.", has no row anyway); mental-rotation:
# 13 exact repeats; theory-of-mind: the 6 hostile-attribution items (excluded by design), and in es-CO also the 6
# scene-4 questions whose story needs ToM-scene4-instruct3, which has no es-CO text (coverage.py checks only the
# question's own row; a story sentence missing leaves the item out here).
ENGLISH_LEAVES_OUT = {"de": {"egma-math": 15, "mental-rotation": 13, "theory-of-mind": 6},
                      "es-CO": {"egma-math": 15, "mental-rotation": 13, "theory-of-mind": 12}}


@pytest.fixture(scope="module")
def translations(shared: Path) -> Path:
    return shared / "levante-sample" / "translations"


@pytest.fixture(scope="module")
def data(sample_base: Path, translations: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    base = tmp_path_factory.mktemp("standin-release")
    write_standin_release(sample_base, VERSION, base)
    data = tmp_path_factory.mktemp("data")
    prepare(str(base), VERSION, str(data), strict=False, progress=False, translations=str(translations / TABLE))
    return data


def built(data: Path) -> dict:
    return json.loads((data / VERSION / layout.DATASETS_DIR / layout.BUILD_FILE).read_text(encoding="utf-8"))


def items(data: Path, task: str, code: str = "") -> pd.DataFrame:
    folder = layout.dataset_dir(VERSION, task, data, locale(code))
    return pd.read_parquet(folder / layout.DATASET_FILE).set_index("item_uid")


def coverage_ok(translations: Path) -> dict[str, dict[str, int]]:
    """`<locale> ok` per task, as the table's own coverage.py prints it (the outside reference)."""
    out = subprocess.run([sys.executable, str(translations / "coverage.py"), "--translations", TABLE],
                         capture_output=True, text=True, check=True).stdout
    header = next(line for line in out.splitlines() if line.startswith("| task |"))
    names = [cell.strip() for cell in header.strip("|").split("|")]
    found: dict[str, dict[str, int]] = {"de": {}, "es-CO": {}}
    for line in out.splitlines():
        cells = dict(zip(names, (cell.strip() for cell in line.strip("|").split("|")), strict=False))
        if line.startswith("| ") and cells.get("task") not in ("task", "all", None):
            for code in found:
                found[code][cells["task"]] = int(cells[f"{code} ok"])
    return found


def test_locale_counts_equal_what_coverage_reports_translated(data, translations):
    reference = coverage_ok(translations)
    assert reference["de"]["vocab"] == 169 and reference["de"]["trog"] == 99  # the numbers
    locales = built(data)["locales"]
    assert sorted(locales) == ["de", "es-CO"]  # fr-CA, nl, de-CH columns are empty in this version
    for code, tasks in locales.items():
        assert {task: entry["n_items"] for task, entry in tasks.items()} == {
            task: n - ENGLISH_LEAVES_OUT[code].get(task, 0) for task, n in reference[code].items()}, code


def test_every_english_item_is_in_the_locale_or_counted(data):
    build = built(data)
    for code, tasks in build["locales"].items():
        for task, entry in tasks.items():
            english = build["tasks"][task]
            untranslated = {k: v for k, v in entry["excluded"].items() if k not in english["excluded"]}
            assert all(k.startswith(("untranslated:", "not_localized:")) for k in untranslated), untranslated
            assert entry["n_items"] + sum(untranslated.values()) == english["n_items"], (code, task)
            assert {k: entry["excluded"][k] for k in english["excluded"]} == english["excluded"]
    assert build["locales"]["es-CO"]["theory-of-mind"]["excluded"]["untranslated:empty"] == 7
    assert build["locales"]["de"]["egma-math"]["excluded"]["not_localized:slider_question"] == 38


def test_locale_items_keep_their_keys_and_show_only_the_locale(data):
    for code in ("de", "es-CO"):
        for task in built(data)["locales"][code]:
            english, local = items(data, task), items(data, task, code)
            assert set(local.index) <= set(english.index)
            for uid, row in local.iterrows():
                source = english.loc[uid]
                assert row["question"] != source["question"], (code, uid)
                assert list(row["option_images"]) == list(source["option_images"])
                assert row["stimulus_image"] == source["stimulus_image"]
                if row["option_kind"] == "image":
                    assert list(row["options"]) == list(source["options"]) and row["answer"] == source["answer"]
                assert row["answer"] == row["options"][0]


def test_real_texts_per_kind_of_cell(data):
    de, es = locale("de"), locale("es-CO")
    assert items(data, "vocab", "de").loc["vocab__acorn", "question"] == text(de, "match_text", phrase="die eichel")
    assert items(data, "trog", "de").loc["trog_noun_shoe", "question"] == "Wähle das Bild mit dem Schuh."
    assert items(data, "egma-math", "es-CO").loc["math_add_1_1", "question"] == \
        "Suma los números y escoge la respuesta correcta. 1+1"
    assert items(data, "egma-math", "de").loc["num-ident-8", "question"] == "Wähle die 8."  # the 8 is already there
    assert items(data, "matrix-reasoning", "es-CO").iloc[1]["question"].startswith("<image 1> Escoge ")
    tom_de, tom_es = items(data, "theory-of-mind", "de"), items(data, "theory-of-mind", "es-CO")
    first = tom_de.loc["tom_reality_known_false_belief"]
    assert "Laura" in first["story"] and "Madison" not in first["question"]  # names are localised
    assert first["question"].endswith(" Wo wird Laura zuerst nach ihrem Buch suchen?")
    assert list(first["options"]) == ["Hinter dem Stuhl", "Unter dem Teppich"] and first["answer"] == "Hinter dem Stuhl"
    assert "Marisol" in tom_es.loc["tom_reality_known_false_belief", "story"]
    # the table's es-CO "no" equals the English: kept, since it is also our own es-CO word for no (core.locale_text)
    assert list(tom_es.loc["tom_moral_reasoning_false_belief_1", "options"]) == ["no", text(es, "yes").lower()]
    assert sum("no" in list(options) for options in tom_es["options"]) == 5


def test_compare_reads_the_english_options_of_a_datasets_folder_holding_locales(data):
    options, counts = read_items(data / VERSION / layout.DATASETS_DIR)
    assert counts["items_with_conflicting_options"] == 0  # the translated theory-of-mind options are not read
    assert options["tom_reality_known_false_belief"] == ["chair", "rug"]
    german, _ = read_items(data / VERSION / layout.DATASETS_DIR / layout.LOCALES_DIR / "de")
    assert german["tom_reality_known_false_belief"] == ["Hinter dem Stuhl", "Unter dem Teppich"]
