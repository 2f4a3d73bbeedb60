"""The real LEVANTE sample (../shared/levante-sample/2026-03-24): concrete facts the data layer must reproduce."""

from __future__ import annotations

import csv
import json
from collections import Counter
from pathlib import Path

import pandas as pd
import pytest

from levante_tasks.core import prompts
from levante_tasks.data.items import read_release_items
from levante_tasks.data.manifest import read_manifest
from levante_tasks.data.prepare import prepare
from levante_tasks.data.problems import ProblemLog
from levante_tasks.errors import LevanteError
from levante_tasks.schema.crosswalk import canonical_uid, redivis_uid, strip_instance

VERSION = "2026-03-24"


@pytest.fixture(scope="module")
def prepared(sample_base: Path, tmp_path_factory) -> Path:
    data = tmp_path_factory.mktemp("data")
    # the sample ships vocab pictures only: trog, matrix-reasoning, mental-rotation and sds end with no items
    prepare(str(sample_base), VERSION, str(data), strict=False, progress=False, allow_empty_tasks=True)
    return data / VERSION


def test_manifest_counts(sample_base):
    with open(sample_base / VERSION / "manifest.csv", newline="", encoding="utf-8") as handle:
        raw = list(csv.DictReader(handle))
    assert len(raw) == 853
    assert Counter(r["task"] for r in raw) == {"egma-math": 255, "vocab": 170, "same-different-selection": 129,
                                               "trog": 99, "mental-rotation": 83, "matrix-reasoning": 80,
                                               "theory-of-mind": 37}
    rows = read_manifest(sample_base / VERSION / "manifest.csv", ProblemLog())
    assert len(rows) == 853 - 20  # 20 rows repeat an earlier row exactly (13 mental-rotation, 7 egma-math)
    assert len(list((sample_base / VERSION / "visual/vocab").glob("*.webp"))) == 673


def test_strict_prepare_reports_real_defects(sample_base, tmp_path):
    with pytest.raises(LevanteError) as failure:
        prepare(str(sample_base), VERSION, str(tmp_path), strict=True, progress=False)
    message = str(failure.value)
    assert "manifest.csv:248: math_compare_7_5: duplicate item_uid (first at row 24; differs in answer)" in message
    assert message.splitlines()[-1].endswith("rerun with --lenient to drop these items (counted)")
    every = [str(problem) for problem in failure.value.problems]
    assert any("not found in visual/trog/" in line for line in every)  # the sample ships vocab images only
    assert not any("visual/vocab/" in line for line in every)
    assert not (tmp_path / VERSION / "datasets").exists()


def test_lenient_prepare_refuses_to_empty_the_tasks_without_pictures(sample_base, tmp_path):
    with pytest.raises(LevanteError) as failure:
        prepare(str(sample_base), VERSION, str(tmp_path), strict=False, progress=False)
    hint = "pass --allow-empty-tasks to build the other tasks anyway"
    assert str(failure.value).splitlines() == [
        f"matrix-reasoning: all 80 rows dropped (dropped:image_missing=80); {hint}",
        f"mental-rotation: all 70 rows dropped (dropped:image_missing=70); {hint}",
        "same-different-selection: all 129 rows dropped (dropped:image_missing=29, "
        f"excluded:instruction_or_multi_select_trial=100); {hint}",
        f"trog: all 99 rows dropped (dropped:image_missing=99); {hint}"]
    assert not (tmp_path / VERSION / "datasets").exists()
    assert not (tmp_path / "default_version").exists()


def test_prepared_tasks_and_counts(prepared):
    built = json.loads((prepared / "datasets/build.json").read_text(encoding="utf-8"))["tasks"]
    assert {task: info["n_items"] for task, info in built.items()} == {
        "egma-math": 224, "matrix-reasoning": 0, "mental-rotation": 0, "same-different-selection": 0,
        "theory-of-mind": 31, "trog": 0, "vocab": 170}


def test_vocab_items_and_images(prepared):
    vocab = pd.read_parquet(prepared / "datasets/vocab/test.parquet").set_index("item_uid")
    assert len(vocab) == 170
    acorn = vocab.loc["vocab__acorn"]
    assert list(acorn["options"]) == ["acorn", "coconut", "key", "clothesline"]
    assert list(acorn["option_images"]) == [f"release/visual/vocab/{w}.webp"
                                            for w in ("acorn", "coconut", "key", "clothesline")]
    assert all((prepared / p).is_file() for p in acorn["option_images"])
    assert acorn["chance_level"] == 0.25 and acorn["option_kind"] == "image"
    assert Counter(vocab["trial_type"]) == {"test": 159, "practice": 8, "catch": 3}


def test_theory_of_mind_from_corpus(prepared):
    tom = pd.read_parquet(prepared / "datasets/theory-of-mind/test.parquet").set_index("item_uid")
    assert len(tom) == 31  # 37 questions minus 6 hostile-attribution ones
    assert not any(uid.startswith("ha_") for uid in tom.index)
    item = tom.loc["tom_reality_known_false_belief"]
    assert item["story"] == (
        "Here is Madison. This morning, Madison put her book behind the chair, because she didn’t want anyone "
        "to find it. But when Madison was outside playing, someone did find it! And hid it under the rug. "
        "So now it’s reading time and Madison wants her book.")
    assert item["question"] == f"{item['story']} Where will Madison look for her book first?"
    assert prompts.compose(item).endswith("Where will Madison look for her book first? Answer with A or B. "
                                          "A: <option1>; B: <option2>")
    assert list(item["options"]) == ["chair", "rug"]
    # a later question of block 2 sees the instruction rows that came after the first question, too
    assert tom.loc["tom_moral_reasoning_emotion_reasoning_1"]["story"].endswith("the book that is Hannah's!")
    counts = Counter(tom["trial_type"])
    assert counts["false_belief_question"] == 13 and "attribution_question" not in counts


def test_math_items(prepared):
    math = pd.read_parquet(prepared / "datasets/egma-math/test.parquet").set_index("item_uid")
    assert math.loc["math_compare_7_5"]["answer"] == "7"  # first copy kept; the second (answer 8) dropped
    line = math.loc["math_line_3_10"]
    assert line["stimulus_image"] == "generated/egma-math/number-line-3-0-10.png"
    assert (prepared / line["stimulus_image"]).is_file()
    slider = math.loc["math_slider_3_10"]
    assert slider["response_format"] == "slider" and slider["range_max"] == 10
    assert slider["chance_level"] == pytest.approx(0.3)  # window 3 +- 1.5 on a 0-10 line
    assert "number-line-blank" in slider["stimulus_image"]
    assert "Counting" not in set(math["trial_type"])  # Correct/Incorrect options: excluded by design


def test_irt_fixture_items_match_manifest_uids(shared, sample_base):
    rows = read_manifest(sample_base / VERSION / "manifest.csv", ProblemLog())
    manifest_uids = sorted({r.item_uid for r in rows})
    with open(shared / "levante-sample/irt-fixture/true_item_params.csv", newline="") as handle:
        fixture_uids = [r["item_uid"] for r in csv.DictReader(handle)]
    assert [uid for uid in fixture_uids if canonical_uid(uid) not in manifest_uids] == []
    assert strip_instance("counting-afc-2-1") == ("counting-afc-2", 1)


def test_vocab_crosswalk_round_trip_on_real_items(sample_base):
    rows = read_manifest(sample_base / VERSION / "manifest.csv", ProblemLog())
    vocab = [r.item_uid for r in rows if r.task == "vocab"]
    redivis = [redivis_uid(uid) for uid in vocab]
    assert redivis[0].startswith("vocab_word_")
    assert [canonical_uid(uid) for uid in redivis] == vocab


def test_items_read_directly_from_release(sample_base):
    result = read_release_items(sample_base / VERSION, ProblemLog())
    assert result.exact_duplicates == 20
    assert result.excluded["same-different-selection"]["instruction_or_multi_select_trial"] == 100
