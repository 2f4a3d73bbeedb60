"""The real sample prepared with LEVANTE's real translation table (../shared/levante-sample/translations, read in place:
CC-BY-NC, never copied here): de and es-CO hold what the table's own coverage script says is translated."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from levante_tasks.compare.alignment import read_items
from levante_tasks.core.locale_text import text
from levante_tasks.schema import layout
from levante_tasks.schema.locales import locale
from levante_tasks.schema.task_source import TASKS_DIR
from levante_tasks.schema.tasks import task_info
from levante_tasks.schema.variant import parse_name
from levante_tasks.testing.lmms_fork import run_cli
from levante_tasks.testing.models import FixedLetterModel

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
def data(real_sample_data: Path) -> Path:
    """The session's real sample prepared with the real table (conftest)."""
    return real_sample_data


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


def _at_chance(records: list[dict], where: str) -> None:
    """A fixed letter is within one item of chance on the task and on each of its sub-types (balanced orders)."""
    by_subtype: dict[str, list[dict]] = {"(whole task)": records}
    for record in records:
        by_subtype.setdefault(task_info(record["task"]).subtype_of(record["trial_type"]), []).append(record)
    for subtype, chosen in by_subtype.items():
        expected = sum(1 / len(r["presented_order"]) for r in chosen)
        assert abs(sum(r["correct"] for r in chosen) - expected) <= 1, (where, subtype, expected)


def test_lmms_eval_runs_locale_tasks_and_a_fixed_letter_is_at_chance(data, tmp_path):
    """`lmms-eval --tasks levante_trog_de,levante_vocab_es_co` (lmms-eval's own CLI, test models registered): the
    locale's items only, shown in the locale, read back and scored at chance by a fixed letter."""
    env = {**os.environ, "LEVANTE_DATA_DIR": str(data), "LEVANTE_DATA_VERSION": VERSION,
           "HF_DATASETS_OFFLINE": "1", "HF_HUB_OFFLINE": "1"}
    out = tmp_path / "out"
    args = ["--model", "levante_fixed", "--model_args", "letter=B", "--tasks", "levante_trog_de,levante_vocab_es_co",
            "--output_path", str(out), "--log_samples"]
    ran = run_cli(args, cwd=tmp_path, env=env, timeout=900)
    assert ran.returncode == 0, ran.stderr[-3000:]
    results = json.loads(next(out.rglob("*_results.json")).read_text())
    build = built(data)["locales"]
    for name, code, task, words in (("levante_trog_de", "de", "trog", ("Wähle", "Antworte mit A, B, C oder D.")),
                                    ("levante_vocab_es_co", "es-CO", "vocab", ("Elige", "Responde con A, B, C o D."))):
        lines = [json.loads(line) for line in next(out.rglob(f"*_samples_{name}.jsonl")).read_text().splitlines()]
        records = [line["levante_item"] for line in lines]
        assert len(records) == build[code][task]["n_items"]
        assert results["results"][name]["levante_acc,none"] == pytest.approx(sum(r["correct"] for r in records)
                                                                              / len(records))
        assert results["configs"][name]["metadata"]["levante"]["provenance"]["dataset_fingerprint"] == \
            build[code][task]["fingerprint"]
        assert all(r["choice_letter"] == "B" for r in records)
        _at_chance(records, name)
        assert all(word in line["input"] for line in lines for word in words), lines[0]["input"]  # what was sent


@pytest.mark.parametrize("group", ["levante_de", "levante_es_co_mc"])
def test_a_fixed_letter_is_at_chance_on_every_task_of_a_locale(data, monkeypatch, group):
    from lmms_eval import evaluator
    from lmms_eval.tasks import TaskManager

    monkeypatch.setenv("LEVANTE_DATA_DIR", str(data))
    monkeypatch.setenv("LEVANTE_DATA_VERSION", VERSION)
    manager = TaskManager(include_path=str(TASKS_DIR), include_defaults=False)
    out = evaluator.simple_evaluate(model=FixedLetterModel(letter="C"), tasks=[group], task_manager=manager,
                                    log_samples=True)
    code = parse_name(group).locale.code
    held = {task: entry["n_items"] for task, entry in built(data)["locales"][code].items()}
    seen = {}
    for name, samples in out["samples"].items():
        records = [s["levante_item"] for s in samples]
        seen[records[0]["task"]] = len(records)
        _at_chance([r for r in records if len(r["presented_order"]) >= 3], name)  # C is an option of these only
    assert seen == held  # every task the locale holds ran once, on each of its items


def test_inspect_runs_a_task_in_its_locale_and_refuses_an_unknown_one(data, monkeypatch):
    """`-T locale=de`: the locale's items, in German, under the leaf name `levante_trog_de`; an unknown locale or an
    unbuilt one is one line naming the task."""
    from levante_tasks.inspect.task import PROVENANCE_KEY, LevanteTaskError, levante_task

    monkeypatch.setenv("LEVANTE_DATA_DIR", str(data))
    monkeypatch.setenv("LEVANTE_DATA_VERSION", VERSION)
    trog = task_info("trog")
    german = levante_task(trog, locale="de")
    spec = german.metadata[PROVENANCE_KEY]
    assert spec["locale"] == "de" and german.dataset.name == "levante_trog_de"
    assert len(german.dataset) == built(data)["locales"]["de"]["trog"]["n_items"]
    assert spec["provenance"]["dataset_fingerprint"] == built(data)["locales"]["de"]["trog"]["fingerprint"]
    assert "Wähle" in german.dataset[0].input[0].content[0].text
    assert "locale" not in levante_task(trog).metadata[PROVENANCE_KEY]  # English names none
    for code, problem in (("xx", "locale='xx': unknown locale 'xx'"), ("nl", "in nl")):
        with pytest.raises(LevanteTaskError, match=problem) as caught:
            levante_task(trog, locale=code)
        assert str(caught.value).startswith("levante_tasks/levante_trog: ") and "\n" not in str(caught.value)
