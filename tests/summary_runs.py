"""Real lmms-eval output for the summary tests: two offline models on the tiny task fixture, made once per session.

`real_runs(tmp_path_factory)` runs lmms-eval's CLI (`levante_tasks.testing.lmms_cli`, which registers the test
models; forked by `lmms_fork`) twice, levante_fixed letter=B and levante_image_oracle, over option-order seeds 0 and
1, the blank and shuffled controls, egma-math (per-sub-type metrics) and one multiple_choice task, with
`--log_samples`; later calls return the same folder. `group_run(tmp_path_factory)` is one run of the `levante` group
(levante_fixed letter=B, every item: tasks of 6 to 39 items) on a fixture version whose build.json says it lacks
mental-rotation, so lmms-eval (patch 0014) leaves that member out: the group rows of a real run. Tests copy them
before breaking anything.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from levante_tasks.schema import task_source
from levante_tasks.schema.layout import BUILD_FILE, DATASET_INFO_FILE, DATASETS_DIR
from levante_tasks.testing.lmms_fork import run_cli

TASKS_DIR = task_source.TASKS_DIR
TASKS = ["levante_vocab", "levante_vocab_seed1", "levante_vocab_blank", "levante_vocab_shuffled",
         "levante_egma_math", "levante_trog_mc"]
ABSENT = "mental-rotation"  # the task group_run's data version lacks
MODELS = {"fixed": ("levante_fixed", "letter=B"), "oracle": ("levante_image_oracle", "")}
_MADE: dict[str, Path] = {}


def _run(model: str, model_args: str, out: Path, data: Path, cwd: Path, tasks: list[str] = TASKS) -> None:
    env = {**os.environ, "LEVANTE_DATA_DIR": str(data), "HF_DATASETS_OFFLINE": "1", "HF_HUB_OFFLINE": "1"}
    env.pop("LEVANTE_DATA_VERSION", None)
    args = ["--model", model, "--tasks", ",".join(tasks), "--include_path", str(TASKS_DIR), "--output_path", str(out),
            "--log_samples", "--seed", "0,1234,1234,1234", "--verbosity", "WARNING"]
    if model_args:
        args[2:2] = ["--model_args", model_args]
    done = run_cli(args, cwd=cwd, env=env, timeout=600)
    results = sorted(out.rglob("*_results.json"))
    assert done.returncode == 0 and len(results) == 1, done.stdout[-2000:] + done.stderr[-3000:]


def _fixture_root(factory: pytest.TempPathFactory, name: str) -> Path:
    """A new folder holding `data/`, the prepared tiny task fixture."""
    from levante_tasks.testing.fixture_data import write_fixture

    root = factory.mktemp(name)
    write_fixture(root / "data")
    return root


def real_runs(factory: pytest.TempPathFactory) -> Path:
    """`<root>/runs/{fixed,oracle}/<date>_results.json` + samples (and `<root>/data`, the prepared fixture)."""
    if "root" not in _MADE:
        root = _fixture_root(factory, "summary-real")
        for name, (model, model_args) in MODELS.items():
            _run(model, model_args, root / "runs" / name, root / "data", root)
        _MADE["root"] = root
    return _MADE["root"]


def group_run(factory: pytest.TempPathFactory) -> Path:
    """`<root>/runs/group/<date>_results.json` + samples of the `levante` group without ABSENT (and `<root>/data`)."""
    if "group" not in _MADE:
        root = _fixture_root(factory, "summary-group")
        (datasets,) = (root / "data").glob(f"*/{DATASETS_DIR}")
        infos = {f.name: f / DATASET_INFO_FILE for f in datasets.iterdir() if f.is_dir() and f.name != ABSENT}
        held = {name: {"n_items": json.loads(info.read_text(encoding="utf-8"))["n_items"]}
                for name, info in infos.items()}
        (datasets / BUILD_FILE).write_text(json.dumps({"tasks": held}), encoding="utf-8")
        _run("levante_fixed", "letter=B", root / "runs" / "group", root / "data", root, ["levante"])
        _MADE["group"] = root
    return _MADE["group"]


def copy_runs(root: Path, dest: Path, names: tuple[str, ...] = ("fixed", "oracle")) -> Path:
    """A private copy of some of the real runs (`dest/<name>/...`), for tests that break or duplicate files."""
    dest.mkdir(parents=True, exist_ok=True)
    for name in names:
        shutil.copytree(root / "runs" / name, dest / name)
    return dest


def results_file(folder: Path) -> Path:
    """The one results file under `folder`."""
    (path,) = sorted(folder.rglob("*_results.json"))
    return path


def edit_results(folder: Path, change) -> Path:
    """Load the results file under `folder`, apply `change(dict)`, write it back; returns its path."""
    path = results_file(folder)
    data = json.loads(path.read_text(encoding="utf-8"))
    change(data)
    path.write_text(json.dumps(data, indent=2), encoding="utf-8")
    return path


def samples(folder: Path, task: str) -> list[dict]:
    """The lines of `<date>_samples_<task>.jsonl` under `folder`."""
    (path,) = sorted(folder.rglob(f"*_samples_{task}.jsonl"))
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def accuracy(folder: Path, task: str) -> float:
    """Mean `correct` of the per-item records of one task (computed here, independently of the summarizer)."""
    records = [line["levante_item"] for line in samples(folder, task)]
    return sum(int(r["correct"]) for r in records) / len(records)
