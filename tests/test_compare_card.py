"""The card of the children's data a compare run used (compare.card): valid Croissant down to the records, every
input named with its sha256, and no child-level data in it."""

from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from compare_inputs import compare, records, trog_trials
from shared_paths import irt_fixture_dir

from levante_tasks.cards.croissant import CardError, check_card, write_card
from levante_tasks.compare.card import _distinct, children_card, group_counts
from levante_tasks.filehash import sha256_file

IRT = "trog_rasch_f1_scalar.rds"


@pytest.fixture(scope="module")
def compared(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One compare of the fixture's trog children (their trials, runs, IRT record and items as given)."""
    tmp = tmp_path_factory.mktemp("compare-card")
    compare(tmp, trog_trials(), records(tmp / "recs.csv"))
    return tmp


def check_root(tmp: Path, out: Path, trials: Path, items: Path) -> Path:
    """A folder to check the card in: the compare output's files with the inputs placed under inputs/ (links)."""
    root = tmp / "check"
    (root / "inputs").mkdir(parents=True)
    for name in ("croissant.json", "human_distributions.csv"):
        os.symlink(out / name, root / name)
    for path in (trials, irt_fixture_dir() / "runs.csv", irt_fixture_dir() / IRT, items):
        os.symlink(path, root / "inputs" / path.name)
    return root


def test_the_card_validates_down_to_the_records_and_holds_no_child_level_data(compared: Path,
                                                                               tmp_path: Path) -> None:
    out = compared / "out"
    card = json.loads((out / "croissant.json").read_text(encoding="utf-8"))
    files = {node["contentUrl"]: node["sha256"] for node in card["distribution"]}
    assert files == {"inputs/out_trials.csv": sha256_file(compared / "out_trials.csv"),
                     "inputs/runs.csv": sha256_file(irt_fixture_dir() / "runs.csv"),
                     f"inputs/{IRT}": sha256_file(irt_fixture_dir() / IRT),
                     "inputs/out_items.csv": sha256_file(compared / "out_items.csv"),
                     "human_distributions.csv": sha256_file(out / "human_distributions.csv")}
    keys = {rs["@id"]: [k["@id"].split("/", 1)[1] for k in rs["key"]] for rs in card["recordSet"]}
    assert keys["trials"] == ["run_id", "trial_id"] and keys["runs"] == ["run_id"]
    assert keys["human_distributions"][2:4] == ["item_uid", "ability_bin"]
    checked = check_card(out / "croissant.json", root=check_root(tmp_path, out, compared / "out_trials.csv",
                                                                        compared / "out_items.csv"))
    trials = pd.read_csv(compared / "out_trials.csv", dtype=str)
    assert checked.records["trials"] == len(trials) and checked.records["runs"] == 500
    groups = [rs for rs in card["recordSet"] if rs["@id"] == "groups"][0]["data"]
    assert sum(g["groups/n_trials"] for g in groups) == len(trials)
    assert {g["groups/site"] for g in groups} == set(trials["site"])
    runs = pd.read_csv(irt_fixture_dir() / "runs.csv", dtype=str)
    text = (out / "croissant.json").read_text(encoding="utf-8")
    leaked = [v for column in (trials["run_id"], trials["trial_id"], trials["user_id"], runs["age"])
              for v in set(column) if f'"{v}"' in text]
    assert leaked == []  # no child's id or age, only the counts per site, dataset and language


@pytest.mark.parametrize("categorical", [False, True])
def test_group_counts_per_site_dataset_and_language(categorical: bool) -> None:
    """Counted on integer codes as pandas' groupby counted them: sorted, a missing value read as 'not recorded'
    (one group with a value spelled so), a trial without run_id counted as a trial but not a run."""
    trials = pd.DataFrame({"run_id": ["r1", "r1", "r2", None, "r3", "r3"],
                           "site": ["b", "b", None, "a", "not recorded", "b"]})
    trials = trials.astype("category") if categorical else trials
    rows = group_counts(trials, ["en", "en", None, "de", "en", None])
    assert [tuple(row.values()) for row in rows] == [
        ("a", "not recorded", "de", 0, 1),
        ("b", "not recorded", "en", 1, 2),
        ("b", "not recorded", "not recorded", 1, 1),
        ("not recorded", "not recorded", "en", 1, 1),
        ("not recorded", "not recorded", "not recorded", 1, 1),
    ]
    assert list(rows[0]) == [f"groups/{c}" for c in ("site", "dataset", "language", "n_runs", "n_trials")]


def test_a_changed_input_fails_naming_it(compared: Path, tmp_path: Path) -> None:
    out = compared / "out"
    trials = tmp_path / "out_trials.csv"
    data = bytearray((compared / "out_trials.csv").read_bytes())
    data[-2] = ord("0") if data[-2] != ord("0") else ord("1")  # one byte of the last trial's last value
    trials.write_bytes(bytes(data))
    with pytest.raises(CardError, match=r"^inputs/out_trials\.csv: sha256 differs from croissant\.json"):
        check_card(out / "croissant.json", root=check_root(tmp_path, out, trials, compared / "out_items.csv"))


def test_a_repeated_trial_fails_naming_the_trials_file(compared: Path, tmp_path: Path) -> None:
    out = tmp_path / "out"
    out.mkdir()
    os.symlink(compared / "out" / "human_distributions.csv", out / "human_distributions.csv")
    trials = tmp_path / "out_trials.csv"
    rows = pd.read_csv(compared / "out_trials.csv", dtype=str)
    pd.concat([rows.iloc[:40], rows.iloc[[5]]]).to_csv(trials, index=False)  # a few trials: the check is quick
    inputs = {"trials": [trials], "runs": [irt_fixture_dir() / "runs.csv"], "irt": [irt_fixture_dir() / IRT],
              "items": [compared / "out_items.csv"]}
    card = json.loads((compared / "out" / "croissant.json").read_text(encoding="utf-8"))
    groups = [rs for rs in card["recordSet"] if rs["@id"] == "groups"][0]["data"]
    write_card(out / "croissant.json", children_card(out, inputs, groups, []))
    row = rows.iloc[5]
    with pytest.raises(CardError, match=rf"^inputs/out_trials\.csv: key \({row['run_id']}, {row['trial_id']}\) "
                                        "repeats in record set trials"):
        check_card(out / "croissant.json", root=check_root(tmp_path, out, trials, compared / "out_items.csv"))


@pytest.mark.parametrize("space", [12, 13, 10_000])
def test_distinct_codes_equal_numpy_unique(space: int) -> None:
    """Counted in a table (space no larger than the values) or sorted, the distinct values and each value's position
    among them are np.unique's."""
    values = np.random.default_rng(space).integers(0, min(space, 12), 13) * (space // 12)
    distinct, position = _distinct(values, space)
    want, inverse = np.unique(values, return_inverse=True)
    assert np.array_equal(distinct, want) and np.array_equal(position, inverse)
