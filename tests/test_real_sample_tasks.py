"""Every LEVANTE task runs in lmms-eval on the real sample (vocab's real images; stand-ins elsewhere)."""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from levante_tasks.core import docs
from levante_tasks.schema.task_source import TASKS_DIR
from levante_tasks.schema.tasks import TASKS, TaskInfo, task_info
from levante_tasks.schema.variant import OutputType, parse_name
from levante_tasks.testing.models import FixedLetterModel

VERSION = "2026-03-24"


@pytest.fixture(scope="module")
def real_data(real_sample_data: Path) -> Path:
    """The session's prepared real sample (conftest: stand-in pictures, English and every translated locale)."""
    return real_sample_data


@pytest.fixture(autouse=True)
def _env(real_data: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LEVANTE_DATA_DIR", str(real_data))
    monkeypatch.setenv("LEVANTE_DATA_VERSION", VERSION)
    monkeypatch.setenv("HF_DATASETS_OFFLINE", "1")
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")


def release_tasks() -> list[TaskInfo]:
    """The catalogue tasks the prepared real release holds (core.docs.held_tasks), in registry order; a task added
    since holds no items here, and the `levante*` groups leave it out."""
    held = docs.held_tasks(VERSION) or {}
    return [info for info in TASKS if held.get(info.name, 0) > 0]


def evaluate(model: Any, tasks: list[str]) -> dict[str, Any]:
    from lmms_eval import evaluator
    from lmms_eval.tasks import TaskManager

    manager = TaskManager(include_path=str(TASKS_DIR), include_defaults=False)
    return evaluator.simple_evaluate(model=model, tasks=tasks, task_manager=manager, log_samples=True)


@pytest.mark.parametrize("group", ["levante", "levante_mc"])
def test_fixed_letter_runs_every_task_at_chance(real_data: Path, sample_base: Path, group: str) -> None:
    out = evaluate(FixedLetterModel(letter="B"), [group])
    leaves = {task: [s["levante_item"] for s in samples] for task, samples in out["samples"].items()}
    prepared = {p.parent.name: json.loads(p.read_text())["n_items"]
                for p in (real_data / VERSION / "datasets").glob("*/dataset.json")}
    seen: dict[str, int] = {}
    for task, records in leaves.items():
        internal = records[0]["task"]
        seen[internal] = seen.get(internal, 0) + len(records)
        hits = sum(r["correct"] for r in records)
        assert out["results"][task]["levante_acc,none"] == pytest.approx(hits / len(records))
        sliders = [r for r in records if "tolerance" in r]
        assert all(r["tolerance"] in (0.15, 1.5, 15.0, 150.0) for r in sliders)  # 0.15 x max of 1, 10, 100, 1000
        assert not any(r["correct"] for r in sliders)  # no letters: a fixed letter parses as no position
        by_subtype: dict[str, list[dict[str, Any]]] = {}  # balanced within each math sub-type and the task
        for r in records:
            if "tolerance" not in r:
                by_subtype.setdefault(task_info(r["task"]).subtype_of(r["trial_type"]), []).append(r)
                by_subtype.setdefault("(whole task)", []).append(r)
        for subtype, choice in by_subtype.items():
            # B is a real option on every item here (>= 2 options); MC picks B by the lowest loss as well
            expected = sum(1 / len(r["presented_order"]) for r in choice)
            assert abs(sum(r["correct"] for r in choice) - expected) <= 1, (task, subtype, expected)
            assert all(r["choice_letter"] == "B" for r in choice)
    if parse_name(group).output_type is OutputType.MULTIPLE_CHOICE:  # the slider has no multiple_choice form
        math = pd.read_parquet(real_data / VERSION / "datasets/egma-math/test.parquet")
        prepared["egma-math"] -= int((math["response_format"] == "slider").sum())
    assert seen == prepared  # every prepared item of every task was evaluated exactly once
    assert set(seen) == {info.name for info in release_tasks()}  # every task of the release ran
    assert len(seen) >= 7  # the 2026-03-24 release holds the seven first tasks


def test_tiny_clip_runs_every_task_with_option_scores(real_data: Path, sample_base: Path,
                                                      tiny_checkpoint: Callable[[str], Path]) -> None:
    """A random-init tiny CLIP (real classes, real processor) through levante_clip on every real-sample task."""
    from levante_adapters.clip_scorer import LevanteClip

    model = LevanteClip(pretrained=str(tiny_checkpoint("clip")), device="cpu", batch_size=64)
    out = evaluate(model, ["levante"])
    internal = set()
    for task, samples in out["samples"].items():
        records = [s["levante_item"] for s in samples]
        internal.update(r["task"] for r in records)
        hits = sum(r["correct"] for r in records)
        assert out["results"][task]["levante_acc,none"] == pytest.approx(hits / len(records))
        for record in records:
            if "tolerance" in record:
                assert record["parse_method"] == "none"  # levante_clip gives no slider position
                continue
            scores = record["option_scores"]
            assert record["parse_method"] == "scores" and len(scores) == len(record["presented_order"])
            assert record["option_scores_kind"] == "logprob"
            assert sum(math.exp(s) for s in scores) == pytest.approx(1.0, abs=1e-4)  # a distribution over options
            assert record["choice_index"] == max(range(len(scores)), key=scores.__getitem__)
    assert internal == {info.name for info in release_tasks()}
