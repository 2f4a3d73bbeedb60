"""A release need not hold every catalogue task: the prepared data says which it holds, and `levante` runs those.

The release here is a real-layout one with vocab and egma-math rows only (tests/data_helpers.write_release), prepared
by `prepare`; the run is lmms-eval's own CLI (patched: 0014 leaves group members out that say they do not apply), in a
fork of a server that imported it (`lmms_fork`).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
from pathlib import Path

import pytest
from data_helpers import write_release

from levante_tasks.core import docs
from levante_tasks.data.prepare import prepare
from levante_tasks.schema.task_source import TASKS_DIR
from levante_tasks.schema.tasks import TASKS
from levante_tasks.schema.variant import OutputType, Variant
from levante_tasks.testing.lmms_fork import run_cli

VERSION = "2026-01-01"
ANSI = re.compile(r"\x1b\[[0-9;]*m")
HELD = {"vocab", "egma-math"}


@pytest.fixture(scope="module")
def data_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A prepared version of a release that holds vocab and egma-math only."""
    root = tmp_path_factory.mktemp("partial")
    write_release(root / "release", VERSION)
    prepare(str(root / "release"), VERSION, str(root / "data"), strict=True, progress=False)
    return root / "data"


@pytest.fixture()
def _data_env(data_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LEVANTE_DATA_DIR", str(data_dir))
    monkeypatch.delenv("LEVANTE_DATA_VERSION", raising=False)


@pytest.mark.usefixtures("_data_env")
def test_the_prepared_version_names_the_tasks_it_holds() -> None:
    assert docs.held_tasks(VERSION) == {"egma-math": 2, "vocab": 2}


@pytest.mark.usefixtures("_data_env")
def test_a_task_the_version_lacks_is_named_with_what_it_holds() -> None:
    with pytest.raises(docs.TaskNotHeld) as absent:
        docs.task_docs("trog", seed=0, variant="original", choice_only=False)
    assert str(absent.value) == (f"trog: data version {VERSION} holds no trog items (its release has no such task; "
                                 "tasks it holds: egma-math, vocab)")
    assert len(docs.task_docs("vocab", seed=0, variant="original", choice_only=False)) == 2


@pytest.mark.usefixtures("_data_env")
def test_a_damaged_build_file_is_one_line_naming_it(data_dir: Path, tmp_path: Path, monkeypatch) -> None:
    copy = tmp_path / "data"
    (copy / VERSION / "datasets").mkdir(parents=True)
    (copy / VERSION / "datasets" / "build.json").write_text('{"tasks": {"vocab": {"n_items": "2"}}}')
    monkeypatch.setenv("LEVANTE_DATA_DIR", str(copy))
    with pytest.raises(docs.LevanteError, match=rf"^{VERSION}/datasets/build.json: task 'vocab' has no integer "
                                               r"'n_items': rerun `levante-tasks prepare"):
        docs.held_tasks(VERSION)


def lmms_eval(data_dir: Path, out: Path, tasks: str) -> tuple[subprocess.CompletedProcess, dict | None]:
    """lmms-eval's CLI (`python -m lmms_eval`, in a fork of a server that imported it: `lmms_fork`) with the dummy
    model on `tasks`; the process and the results file (None when none)."""
    env = {**os.environ, "LEVANTE_DATA_DIR": str(data_dir), "HF_DATASETS_OFFLINE": "1", "HF_HUB_OFFLINE": "1"}
    env.pop("LEVANTE_DATA_VERSION", None)
    proc = run_cli(["--model", "dummy", "--tasks", tasks, "--include_path", str(TASKS_DIR), "--output_path", str(out)],
                   cwd=out.parent, env=env, timeout=600, entry="lmms_eval")
    found = sorted(out.rglob("*_results.json"))
    proc.stdout = ANSI.sub("", proc.stdout + proc.stderr)  # one log to search (lmms-eval's logger writes to both)
    return proc, (json.loads(found[-1].read_text()) if found else None)


def test_levante_runs_the_tasks_the_release_holds_and_names_the_others(data_dir: Path, tmp_path: Path) -> None:
    proc, results = lmms_eval(data_dir, tmp_path / "out", "levante,levante_mc")
    assert proc.returncode == 0 and results is not None, proc.stdout[-3000:]
    ran = {name for name in results["results"] if name not in ("levante", "levante_mc")}
    held = {info.lmms_name for info in TASKS if info.name in HELD}
    assert ran == {Variant(info.name, output).format() for info in TASKS if info.name in HELD for output in OutputType}
    assert set(results["group_subtasks"]["levante"]) == held
    for info in TASKS:
        if info.name not in HELD:
            for name in (Variant(info.name, output).format() for output in OutputType):
                assert f"leaving out {name}: {name}: {info.name}: data version {VERSION} holds no" in proc.stdout
    # The group's score is the item-weighted mean of the tasks that ran (both have two items here).
    group = results["results"]["levante"]["levante_acc,none"]
    members = [results["results"][name]["levante_acc,none"] for name in held]
    assert group == pytest.approx(sum(members) / len(members))


def test_a_lacking_task_asked_for_alone_stops_in_one_line(data_dir: Path, tmp_path: Path) -> None:
    proc, results = lmms_eval(data_dir, tmp_path / "out", "levante_trog_seeds")
    assert proc.returncode != 0 and results is None
    last = proc.stderr.strip().splitlines()[-1]
    assert last.startswith("levante_trog") and f"data version {VERSION} holds no trog items" in last
