"""Option-order balance on real item sets: a model that always answers one letter is within one item of chance on
every task, every reported sub-type, every option-order seed, letter and output type (the real sample's and the
synthetic release's prepared items; generate_until and multiple_choice docs differ only by the slider items)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from data_helpers import prepared_synthetic

from levante_tasks.core import docs
from levante_tasks.core.options import DEFAULT_SEEDS, gold_positions
from levante_tasks.data.prepare import prepare
from levante_tasks.data.standins import write_standin_release
from levante_tasks.schema.items import letters_for
from levante_tasks.schema.tasks import TASKS

REAL_VERSION = "2026-03-24"


@pytest.fixture(scope="module")
def item_sets(sample_base: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[Path, str]]:
    """name -> (prepared data dir, version) of the real sample (stand-in pictures) and the synthetic release."""
    real = tmp_path_factory.mktemp("real-sample")
    write_standin_release(sample_base, REAL_VERSION, real / "release")
    prepare(str(real / "release"), REAL_VERSION, str(real / "data"), strict=False, progress=False)
    synthetic = tmp_path_factory.mktemp("synthetic")
    prepared_synthetic(synthetic)
    return {"real": (real / "data", REAL_VERSION), "synthetic": (synthetic / "data", "synthetic")}


def _fixed_letter_gaps(task_docs: list[dict[str, Any]], subtype_of: Any) -> list[tuple[str, str, float]]:
    """(scope, letter, hits - chance) of a model always answering each letter, over the task and each sub-type."""
    choice = [d for d in task_docs if d["response_format"] == "choice"]
    scopes: dict[str, list[dict[str, Any]]] = {"(task)": choice}
    for doc in choice:
        scopes.setdefault(subtype_of(doc["trial_type"]) or "(none)", []).append(doc)
    widest = max((len(d["letters"]) for d in choice), default=0)
    gaps = []
    for scope, selected in scopes.items():
        for letter in letters_for(widest):
            hits = sum(d["target_letter"] == letter for d in selected)
            chance = sum(1 / len(d["letters"]) for d in selected if letter in d["letters"])
            gaps.append((scope, letter, hits - chance))
    return gaps


@pytest.mark.parametrize("item_set", ["real", "synthetic"])
def test_fixed_letter_is_within_one_item_of_chance_everywhere(item_sets: dict, item_set: str,
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    data_dir, version = item_sets[item_set]
    monkeypatch.setenv("LEVANTE_DATA_DIR", str(data_dir))
    monkeypatch.setenv("LEVANTE_DATA_VERSION", version)
    checked = 0
    held = [info for info in TASKS if (docs.held_tasks(version) or {}).get(info.name)]  # a task added since: none
    for info in held:
        for multiple_choice in (False, True):
            for seed in DEFAULT_SEEDS:
                found = docs.task_docs(info.name, seed=seed, variant="original", choice_only=multiple_choice)
                for scope, letter, gap in _fixed_letter_gaps(found, info.subtype_of):
                    assert abs(gap) <= 1 + 1e-9, (item_set, info.name, multiple_choice, seed, scope, letter, gap)
                    checked += 1
    math_scopes = len(dict(TASKS[2].subtypes)) + 1
    assert len(held) >= 7 and checked > 2 * len(DEFAULT_SEEDS) * (len(held) + math_scopes) * 2  # every task,
    # sub-type and letter of the release (both hold the seven first tasks)


def test_balancing_each_sub_type_alone_leaves_the_task_off_chance(item_sets: dict,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    """The check can fail: positions balanced per sub-type only (the old rule) put real egma-math > 1 item off."""
    data_dir, version = item_sets["real"]
    monkeypatch.setenv("LEVANTE_DATA_DIR", str(data_dir))
    rows = [r for r in docs.load_rows("egma-math", version) if r["response_format"] == "choice"]
    info = TASKS[2]
    worst = 0.0
    for seed in DEFAULT_SEEDS:
        positions: dict[str, int] = {}
        for subtype, _ in info.subtypes:
            chosen = [(r["item_uid"], int(r["n_options"])) for r in rows if info.subtype_of(r["trial_type"]) == subtype]
            positions.update(gold_positions(chosen, seed))
        made = [{"response_format": "choice", "trial_type": r["trial_type"],
                 "letters": letters_for(int(r["n_options"])),
                 "target_letter": letters_for(int(r["n_options"]))[positions[r["item_uid"]]]} for r in rows]
        worst = max(worst, *(abs(gap) for scope, _, gap in _fixed_letter_gaps(made, info.subtype_of)
                             if scope == "(task)"))
    assert worst > 1
