"""`prepare --translations`: each task in every locale LEVANTE's translation table translates (small tables in the
real layout; the real table is tested in test_locale_real_sample.py)."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest
from data_helpers import ADD_PROMPT, TABLE_HEADER, table_rows, write_release, write_translations
from faults import tree_snapshot

from levante_tasks.cli import main
from levante_tasks.core import docs
from levante_tasks.core.locale_text import text
from levante_tasks.data.prepare import prepare
from levante_tasks.data.translations import language_neutral, read_translations
from levante_tasks.errors import LevanteError
from levante_tasks.schema import layout
from levante_tasks.schema.locales import locale

VERSION = "2026-01-01"
DE, ES = locale("de"), locale("es-CO")


def build(base: Path, data: Path, table: Path | None, **kwargs):
    return prepare(str(base), VERSION, str(data), strict=True, progress=False,
                   translations=str(table) if table else None, **kwargs)


def rows(data: Path, task: str, code: str = "") -> pd.DataFrame:
    folder = layout.dataset_dir(VERSION, task, data, locale(code))
    return pd.read_parquet(folder / layout.DATASET_FILE).set_index("item_uid")


def info(data: Path, task: str, code: str = "") -> dict:
    return json.loads((layout.dataset_dir(VERSION, task, data, locale(code)) / layout.DATASET_INFO_FILE).read_text())


@pytest.fixture
def release(tmp_path: Path) -> Path:
    write_release(tmp_path / "rel")
    return tmp_path / "rel"


def test_each_translated_locale_gets_its_datasets_and_english_stays_byte_identical(release, tmp_path):
    plain, localized = tmp_path / "plain", tmp_path / "localized"
    build(release, plain, None)
    result = build(release, localized, write_translations(tmp_path / "t.csv"))
    for task in ("vocab", "egma-math"):
        for name in (layout.DATASET_FILE, layout.DATASET_INFO_FILE):
            english = layout.dataset_dir(VERSION, task, plain) / name
            assert (layout.dataset_dir(VERSION, task, localized) / name).read_bytes() == english.read_bytes()
    assert sorted(result.locales) == ["de", "es-CO"]  # fr-CA has a column but no translated item
    assert {t.task: t.n_items for t in result.locales["de"]} == {"egma-math": 2, "vocab": 1}

    vocab = rows(localized, "vocab", "de")
    english = rows(plain, "vocab")
    assert list(vocab.index) == ["vocab__cat"]  # "the dog" has no approved German text: left out, never English
    assert vocab.loc["vocab__cat", "question"] == text(DE, "match_text", phrase="die Katze")
    assert vocab.loc["vocab__cat", "prompt_phrase"] == "die Katze"
    for column in ("options", "option_images", "answer", "stimulus_image", "source_item_uid"):
        assert list(vocab.loc["vocab__cat", column]) == list(english.loc["vocab__cat", column])
    assert info(localized, "vocab", "de")["locale"] == "de"
    assert info(localized, "vocab", "de")["excluded"] == {"untranslated:not_approved": 1}
    assert info(localized, "vocab", "de")["image_root"] == "../../../.."
    assert "locale" not in info(localized, "vocab")

    math = rows(localized, "egma-math", "es-CO")
    assert math.loc["math_add_1_1", "question"] == "Suma los números y escoge la respuesta correcta. 1+1"
    assert list(math.loc["math_add_1_1", "options"]) == ["2", "0", "1", "3"]  # numbers are language-neutral

    build_json = json.loads((localized / VERSION / "datasets/build.json").read_text())
    assert build_json["locales"]["es-CO"]["vocab"]["n_items"] == 2
    assert "locales" not in json.loads((plain / VERSION / "datasets/build.json").read_text())
    lock = json.loads((localized / VERSION / layout.RELEASE_LOCK_FILE).read_text())
    assert lock["build"]["translations"] == {"sha256": read_translations(tmp_path / "t.csv", "t").sha256,
                                             "from": "file t.csv"}


def test_every_left_out_item_is_counted_with_its_reason(release, tmp_path):
    table = [["vocab-item-001", "vocab", "the cat", "the cat", "", ""],  # es-CO repeats the English, de is empty
             ["vocab-item-002", "vocab", "the dog", "", "der Hund", ""],
             ["addition-prompt1", "math", ADD_PROMPT, "Suma los números.", "  ", ""]]  # de: blank
    result = build(release, tmp_path / "data", write_translations(tmp_path / "t.csv", table))
    counts = {code: {t.task: (t.n_items, t.excluded) for t in tasks} for code, tasks in result.locales.items()}
    assert counts == {
        "de": {"egma-math": (0, {"untranslated:empty": 2}), "vocab": (1, {"untranslated:empty": 1})},
        "es-CO": {"egma-math": (2, {}),
                  "vocab": (0, {"untranslated:empty": 1, "untranslated:same_as_english": 1})}}
    assert not layout.dataset_dir(VERSION, "egma-math", tmp_path / "data", DE).exists()
    assert not layout.dataset_dir(VERSION, "vocab", tmp_path / "data", ES).exists()


@pytest.mark.parametrize("header, labels", [
    (("identifier", "labels", "text", "de"), "vocab"),  # the repository CSV's layout
    (("item_id", "labels", "en", "isHidden", "de"), "vocab, Vocabulary"),
])
def test_levante_table_layouts_read_alike(release, tmp_path, header, labels):
    cells = {"de": "die\nKatze", "isHidden": ""}  # a multi-line quoted cell; its whitespace is collapsed
    row = ["vocab-item-001", labels, "the cat", *(cells[name] for name in header[3:])]
    build(release, tmp_path / "data", write_translations(tmp_path / "t.csv", [row], header))
    assert rows(tmp_path / "data", "vocab", "de").loc["vocab__cat", "prompt_phrase"] == "die Katze"


def test_language_neutral_cells_are_no_untranslated_repeats(tmp_path):
    table = read_translations(write_translations(tmp_path / "t.csv", [
        ["n-1", "math", "1, 2, _, 4", "1, 2, _, 4", "1, 2, _, 4", ""],
        ["n-2", "math", "3x4", "", "3x4", ""],
        ["no", "theory-of-mind", "no", "no", "no", ""]]), "t.csv")
    assert table.translation(table.by_id["n-1"], DE).text == "1, 2, _, 4"
    assert table.translation(table.by_id["n-2"], DE).text == "3x4"
    assert table.translation(table.by_id["no"], ES).text == "no"  # Spanish "no" is our own es-CO word for no
    assert table.translation(table.by_id["no"], DE).missing == "same_as_english"
    assert language_neutral("1/5+1/5") and not language_neutral("1 apple")


@pytest.mark.parametrize("content, problem", [
    (b"item_id,labels,en,de\nvocab-item-001,vocab,the cat,die Katze\xff\n", "t.csv:2: not UTF-8 text"),
    (b"item_id,labels,de\nvocab-item-001,vocab,die Katze\n", "t.csv: missing column en or text"),
    (b"item_id,labels,en,de\na,vocab,the cat,die Katze\na,vocab,the dog,der Hund\n",
     "t.csv:3: duplicate item_id 'a' (first at line 2)"),
    (b"item_id,labels,en,de\na,vocab,the cat\n", "t.csv:2: row has 3 cells, the header has 4"),
    (b"item_id,labels,en,de\n", "t.csv: translates no item into any locale (locale columns: de)"),
    (b"item_id,labels,en,de-DE\nvocab-item-001,vocab,the cat,die Katze\n",
     "t.csv: translates no item into any locale (locale columns: none; known: de, es-CO, fr-CA, nl, de-CH)"),
])
def test_a_bad_table_is_one_line_and_leaves_the_prepared_version_as_it_was(release, tmp_path, capsys, content,
                                                                           problem):
    data = tmp_path / "data"
    build(release, data, write_translations(tmp_path / "good.csv"))
    before = tree_snapshot(data)
    (tmp_path / "t.csv").write_bytes(content)
    status = main(["prepare", "--release", str(release), "--version", VERSION, "--data-dir", str(data), "--quiet",
                   "--translations", str(tmp_path / "t.csv")])
    err = capsys.readouterr().err
    assert status == 2 and len(err.splitlines()) == 1 and problem in err, err
    assert tree_snapshot(data) == before


def test_only_a_changed_table_rebuilds(release, tmp_path):
    data, path = tmp_path / "data", write_translations(tmp_path / "t.csv")
    assert build(release, data, path).rebuilt
    again = build(release, data, path)
    assert not again.rebuilt and sorted(again.locales) == ["de", "es-CO"]
    changed = table_rows()
    changed[0][4] = "die Hauskatze"
    write_translations(path, changed)
    assert build(release, data, path).rebuilt
    assert rows(data, "vocab", "de").loc["vocab__cat", "prompt_phrase"] == "die Hauskatze"
    only = build(release, data, path, locales=["de"])
    assert only.rebuilt and sorted(only.locales) == ["de"]
    assert not (data / VERSION / "datasets/locales/es-CO").exists()


def test_a_prepare_without_the_table_keeps_the_locales_it_built(release, tmp_path):
    """The build keeps its table (locked with the datasets): a later plain `prepare` neither drops nor rebuilds the
    locales; a kept copy edited behind the lock's back (same size) is refused in one line, nothing replaced."""
    data, path = tmp_path / "data", write_translations(tmp_path / "t.csv")
    build(release, data, path)
    path.unlink()
    again = build(release, data, None)
    assert not again.rebuilt and sorted(again.locales) == ["de", "es-CO"]
    lock = json.loads((data / VERSION / layout.RELEASE_LOCK_FILE).read_text())
    assert lock["build"]["translations"]["from"] == "file t.csv"
    kept = data / VERSION / layout.DATASETS_DIR / layout.LOCALES_DIR / layout.KEPT_TRANSLATIONS_FILE
    text_before = kept.read_text(encoding="utf-8")
    kept.write_text(text_before.replace("Katze", "Kotze"), encoding="utf-8")
    before = tree_snapshot(data / VERSION / layout.DATASETS_DIR / "vocab")
    with pytest.raises(LevanteError, match=r"item-bank-translations\.csv: changed since prepare kept it") as caught:
        build(release, data, None)
    assert "\n" not in str(caught.value)
    assert tree_snapshot(data / VERSION / layout.DATASETS_DIR / "vocab") == before


def test_the_release_table_is_mirrored_locked_and_used(release, tmp_path):
    write_translations(release / VERSION / layout.TRANSLATIONS_FILE)
    data = tmp_path / "data"
    result = build(release, data, None)
    assert sorted(result.locales) == ["de", "es-CO"]
    lock = json.loads((data / VERSION / layout.RELEASE_LOCK_FILE).read_text())
    assert lock["files"][layout.TRANSLATIONS_FILE]["sha256"] == lock["build"]["translations"]["sha256"]
    assert lock["build"]["translations"]["from"] == f"release {layout.TRANSLATIONS_FILE}"
    override = write_translations(tmp_path / "t.csv", [r[:3] + ["", "Katze", ""] for r in table_rows()[:1]])
    assert sorted(build(release, data, override).locales) == ["de"]  # a --translations file wins


@pytest.mark.parametrize("codes, problem", [
    (["en"], "--locales: en is the manifest's own language"),
    (["xx"], "--locales: unknown locale 'xx'"),
    (["fr-CA"], "t.csv: translates no item into fr-CA (asked for with --locales)"),
    (["nl"], "t.csv: no nl column (asked for with --locales)"),
])
def test_locales_that_cannot_be_built_are_refused(release, tmp_path, codes, problem):
    with pytest.raises(LevanteError, match=problem.replace("(", r"\(").replace(")", r"\)")):
        build(release, tmp_path / "data", write_translations(tmp_path / "t.csv"), locales=codes)
    assert not (tmp_path / "data" / VERSION / "datasets").exists()


def test_locales_without_a_table_are_refused(release, tmp_path):
    with pytest.raises(LevanteError, match="--locales needs a translation table"):
        build(release, tmp_path / "data", None, locales=["de"])


def test_docs_of_a_locale_carry_it_and_an_unbuilt_locale_is_not_held(release, tmp_path, monkeypatch):
    build(release, tmp_path / "data", write_translations(tmp_path / "t.csv"))
    monkeypatch.setenv(layout.DATA_DIR_ENV, str(tmp_path / "data"))
    monkeypatch.setenv(layout.VERSION_ENV, VERSION)
    assert docs.held_tasks(VERSION, DE) == {"egma-math": 2, "vocab": 1}
    german = docs.task_docs("vocab", seed=0, variant="original", choice_only=False, locale=DE)
    assert [(d["item_uid"], d["locale"]) for d in german] == [("vocab__cat", "de")]
    assert "locale" not in docs.task_docs("vocab", seed=0, variant="original", choice_only=False)[0]
    assert docs.held_tasks(VERSION, locale("fr-CA")) == {}
    with pytest.raises(docs.TaskNotHeld, match="holds no vocab items in fr-CA"):
        docs.task_docs("vocab", seed=0, variant="original", choice_only=False, locale=locale("fr-CA"))
    assert TABLE_HEADER[-1] == "fr-CA"  # the table has the column; it translates nothing into it
