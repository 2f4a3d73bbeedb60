"""lmms-eval's `levante` group rows equal the accuracy pooled over the items of their tasks, for any `--limit`.

lmms-eval 0.7.x weights each task in a group mean by the item count of the task's last aggregated metric and
pools stderrs with a (sum n - k) denominator; every metric of a LEVANTE task has one value per doc
(lmms/metrics.py), so the weights are item counts and `--limit 1` (one item per task) gives "N/A" stderrs
instead of a ZeroDivisionError.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from levante_tasks.cli import main
from levante_tasks.schema.task_source import TASKS_DIR
from levante_tasks.schema.tasks import TASKS
from levante_tasks.testing.fixture_data import write_fixture
from levante_tasks.testing.lmms_fork import run_cli
from levante_tasks.testing.models import FixedLetterModel

GROUPS = ["levante", "levante_mc"]


@pytest.fixture(scope="module")
def data_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("levante-data")
    write_fixture(root)
    return root


def _pooled(records_by_task: dict[str, list[dict[str, Any]]], leaves: list[str]) -> float:
    """Correct items over all items of the group's leaf tasks."""
    return (sum(r["correct"] for t in leaves for r in records_by_task[t])
            / sum(len(records_by_task[t]) for t in leaves))


def _printed_rows(stdout: str, group: str) -> dict[str, str]:
    """metric -> value string of one group's rows in lmms-eval's printed group table."""
    rows = {}
    for line in stdout.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) >= 6 and cells[0] == group:
            rows[cells[3]] = cells[5]
    return rows


@pytest.mark.parametrize("limit", [1, 3])
def test_cli_group_rows_equal_pooled_accuracy_and_verify(data_dir: Path, tmp_path: Path, limit: int,
                                                         capsys: pytest.CaptureFixture[str],
                                                         tiny_checkpoint: Callable[[str], Path]) -> None:
    """A real `lmms-eval` CLI run (levante_clip, tiny random-init CLIP): --limit 3 is the ZeroDivisionError case,
    --limit 1 the one where each leaf has one item and the group's stderr is N/A."""
    clip = tiny_checkpoint("clip")
    out = tmp_path / "out"
    env = {**os.environ, "LEVANTE_DATA_DIR": str(data_dir), "HF_DATASETS_OFFLINE": "1", "HF_HUB_OFFLINE": "1"}
    args = ["--model", "levante_clip", "--model_args", f"pretrained={clip}", "--tasks", ",".join(GROUPS),
            "--include_path", str(TASKS_DIR), "--output_path", str(out), "--batch_size", "16", "--log_samples",
            "--limit", str(limit), "--verbosity", "WARNING"]
    proc = run_cli(args, cwd=tmp_path, env=env, timeout=600, entry="lmms_eval")
    found = sorted(out.rglob("*_results.json"))
    assert proc.returncode == 0 and found, proc.stdout[-2000:] + proc.stderr[-3000:]
    results = json.loads(found[-1].read_text())
    records = {task: [json.loads(line)["levante_item"] for line in path.read_text().splitlines()]
               for path in found[-1].parent.glob("*_samples_*.jsonl")
               for task in [re.sub(r"^.*_samples_(.*)\.jsonl$", r"\1", path.name)]}
    for group in GROUPS:
        leaves = results["group_subtasks"][group]
        assert len(leaves) == len(TASKS) and all(len(records[t]) == limit for t in leaves)
        pooled = _pooled(records, leaves)
        assert results["groups"][group]["levante_acc,none"] == pytest.approx(pooled), group
        # lmms-eval prints "%.4f", which its table writer may shorten ("1" for 1.0000 at --limit 1)
        assert float(_printed_rows(proc.stdout, group)["levante_acc"]) == pytest.approx(pooled, abs=5e-5), group
        stderr = results["groups"][group]["levante_acc_stderr,none"]
        assert stderr == "N/A" if limit == 1 else isinstance(stderr, float), (group, stderr)
    status = main(["verify", str(out), "--data-dir", str(data_dir), "--skip-installation"])
    assert status == 0, capsys.readouterr()


@pytest.mark.parametrize("limit", [1, 2, 3, 4, 5])
def test_any_limit_runs_and_groups_pool(data_dir: Path, limit: int, monkeypatch: pytest.MonkeyPatch) -> None:
    """In-process lmms-eval (the same group consolidation as its CLI) with 1..5 items per task."""
    from lmms_eval import evaluator
    from lmms_eval.tasks import TaskManager

    monkeypatch.setenv("LEVANTE_DATA_DIR", str(data_dir))
    manager = TaskManager(include_path=str(TASKS_DIR), include_defaults=False)
    out = evaluator.simple_evaluate(model=FixedLetterModel(letter="B"), tasks=GROUPS,
                                    task_manager=manager, log_samples=True, limit=limit)
    records = {task: [s["levante_item"] for s in samples] for task, samples in out["samples"].items()}
    assert all(len(recs) == limit for recs in records.values())
    for group in GROUPS:
        leaves = out["group_subtasks"][group]
        assert out["groups"][group]["levante_acc,none"] == pytest.approx(_pooled(records, leaves)), group
        stderr = out["groups"][group]["levante_acc_stderr,none"]
        assert stderr == "N/A" if limit == 1 else isinstance(stderr, float), (group, stderr)
