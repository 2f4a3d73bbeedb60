"""The contracts in `levante_tasks.schema` are the ones the data layer, the task layer and lmms-eval really use."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from data_helpers import default_rows, math_row, prepared_release, write_release

from levante_tasks.cli import main
from levante_tasks.core import records
from levante_tasks.core.parsing import Parsed
from levante_tasks.data.manifest import load_manifest
from levante_tasks.data.problems import ProblemLog
from levante_tasks.schema import items, layout
from levante_tasks.schema.records import ItemRecord, SliderRecord
from levante_tasks.schema.tasks import BY_NAME, TASKS, task_info


@pytest.fixture(scope="module")
def synthetic(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A prepared synthetic release (every task): the suite's one preparation of it (only read here)."""
    return prepared_release(tmp_path_factory)


def test_catalogue_names_every_task_of_a_release_once(synthetic: Path) -> None:
    rows = load_manifest(synthetic / "release/synthetic/manifest.csv", ProblemLog()).rows
    assert {(r.task, r.get("task_id")) for r in rows} == {(t.name, t.task_id) for t in TASKS}
    for field in ("name", "task_id", "lmms_name", "folder"):
        assert len({getattr(t, field) for t in TASKS}) == len(TASKS), field
    with pytest.raises(KeyError, match="unknown LEVANTE task 'spelling'"):
        task_info("spelling")


def test_prepared_datasets_have_exactly_the_item_row_columns(synthetic: Path) -> None:
    for task in BY_NAME:
        schema = pq.read_schema(layout.dataset_dir("synthetic", task, synthetic / "data") / layout.DATASET_FILE)
        assert schema.equals(items.ITEM_SCHEMA, check_metadata=False), task
    assert items.ITEM_SCHEMA.names == [f.name for f in dataclasses.fields(items.ItemRow)]


def test_math_subtypes_cover_every_math_trial_type_once(synthetic: Path) -> None:
    math = task_info("egma-math")
    listed = [t for _, types in math.subtypes for t in types]
    assert len(listed) == len(set(listed))
    table = pq.read_table(layout.dataset_dir("synthetic", "egma-math", synthetic / "data") / layout.DATASET_FILE)
    assert all(math.subtype_of(t) for t in table.column("trial_type").to_pylist())
    assert task_info("vocab").subtype_of("test") == ""


def test_slider_tolerance_is_a_share_of_the_line_maximum() -> None:
    # rlevante recode_slider: |response - target| / max < 0.15 (one rule for scoring and for the chance level)
    assert items.slider_tolerance(1000.0) == pytest.approx(150.0)
    assert items.slider_chance(15.0, 10.0, 20.0) == pytest.approx(0.6)  # window 15 +- 3, all on the line
    assert items.slider_chance(3.0, 0.0, 10.0) == pytest.approx(0.3)
    doc = {"item_uid": "s", "task": "egma-math", "trial_type": "Number Line Slider", "seed": 0,
           "variant": "original", "presented_order": [0], "range_min": 10.0, "range_max": 20.0, "answer": "15"}
    record = records.slider_record(doc, 0.78, "lone_number")  # value 17.8: inside 0.15 x 20, outside 0.15 x 10
    assert record["correct"] == 1 and record["tolerance"] == pytest.approx(3.0)


def test_records_carry_exactly_the_schema_keys_in_order() -> None:
    doc = {"item_uid": "u", "task": "trog", "trial_type": "noun", "seed": 1, "variant": "blank",
           "presented_order": [2, 0, 1], "letters": ["A", "B", "C"]}
    choice = records.choice_record(doc, Parsed("B", "lone_letter"))
    assert list(choice) == [f.name for f in dataclasses.fields(ItemRecord)]
    assert (choice["choice_index"], choice["correct"]) == (0, 1)
    loss = records.loss_record(doc, [0.5, 0.2, 0.9])
    assert list(loss) == list(choice) and loss["option_scores"] == [-0.2, -0.9, -0.5]
    slider_doc = {**doc, "presented_order": [0], "range_min": 0.0, "range_max": 10.0, "answer": "3"}
    assert list(records.slider_record(slider_doc, None, "none")) == [f.name for f in dataclasses.fields(SliderRecord)]


def test_record_as_dict_is_dataclasses_asdict_and_shares_no_list() -> None:
    choice = ItemRecord("generate_until", "u", "trog", "noun", 1, "original", [2, 0, 1], "B", 0, 1, "lone_letter",
                        0.8, "3", ["cat", "dog", "hat"], [0.5, -1.0, 2.0], "logprob")
    slider = SliderRecord("generate_until", "s", "egma-math", "slider", 0, "original", [0], None, None, 0, "none",
                          0.0, "3", [], None, None, None, None, 0.0, 10.0, 3.0, 1.5, 0.3)
    for record in (choice, slider):
        plain = record.as_dict()
        assert plain == dataclasses.asdict(record) and list(plain) == list(dataclasses.asdict(record))
        record.presented_order.append(9)
        assert plain["presented_order"] != record.presented_order  # a copy, as asdict gives


def test_an_item_with_more_options_than_letters_is_a_validation_problem(tmp_path: Path, capsys) -> None:
    many = ",".join(str(n) for n in range(3, 3 + len(items.LETTERS)))  # answer + len(LETTERS) distractors
    write_release(tmp_path / "rel", rows=[*default_rows(), math_row("math_add_1_2", "1+2", "99", many)])
    status = main(["prepare", "--release", str(tmp_path / "rel"), "--version", "2026-01-01", "--data-dir",
                   str(tmp_path / "data"), "--quiet"])
    err = capsys.readouterr().err
    assert status != 0 and "math_add_1_2: 9 options, more than the letters ABCDEFGH" in err, err
    assert not (tmp_path / "data/2026-01-01/datasets").exists()
