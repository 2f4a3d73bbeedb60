"""`lmms_fork.run_cli` stands for `python -m levante_tasks.testing.lmms_cli`: the same command through both gives the
same results file (less its clock readings and object addresses), the same exit status and the same last error line,
for a good run and for bad ones."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from levante_tasks.schema.task_source import TASKS_DIR
from levante_tasks.testing.lmms_fork import MODULES, run_cli

CLOCK = ("date", "start_time", "end_time", "total_evaluation_time_seconds")
ADDRESS = re.compile(r" at 0x[0-9a-f]+>")


@pytest.fixture(scope="module")
def data(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from levante_tasks.testing.fixture_data import write_fixture

    root = tmp_path_factory.mktemp("levante-data")
    write_fixture(root)
    return root


def both(args: list[str], data: Path, tmp_path: Path,
         entry: str = "lmms_cli") -> dict[str, tuple[subprocess.CompletedProcess[str], Path]]:
    """Run `python -m MODULES[entry] args` as a real process and through `run_cli`, each in its own folder
    (`--output_path out`)."""
    env = {**os.environ, "LEVANTE_DATA_DIR": str(data), "HF_DATASETS_OFFLINE": "1", "HF_HUB_OFFLINE": "1"}
    env.pop("LEVANTE_DATA_VERSION", None)
    runs = {}
    for way in ("real", "fork"):
        (tmp_path / way).mkdir()
        full = [*args, "--output_path", "out"]
        if way == "real":
            done = subprocess.run([sys.executable, "-m", MODULES[entry], *full], cwd=tmp_path / way, env=env,
                                  capture_output=True, text=True, timeout=600, check=False)
        else:
            done = run_cli(full, cwd=tmp_path / way, env=env, entry=entry)
        runs[way] = (done, tmp_path / way / "out")
    return runs


def comparable(results: Path) -> dict[str, Any]:
    """A results file without what differs from run to run: clock readings and the addresses of the task hooks."""
    document = json.loads(ADDRESS.sub(">", results.read_text(encoding="utf-8")))
    return {key: value for key, value in document.items() if key not in CLOCK}


def test_a_good_run_gives_the_same_results_and_samples(data: Path, tmp_path: Path) -> None:
    args = ["--model", "levante_fixed", "--model_args", "letter=B", "--tasks", "levante_trog,levante_vocab_mc",
            "--include_path", str(TASKS_DIR), "--log_samples", "--seed", "0,1234,1234,1234", "--verbosity", "WARNING"]
    runs = both(args, data, tmp_path)
    found = {}
    for way, (done, out) in runs.items():
        assert done.returncode == 0, (way, done.stderr[-3000:])
        (results,) = out.rglob("*_results.json")
        samples = {path.name.split("_samples_")[1]: path.read_text(encoding="utf-8")
                   for path in out.rglob("*_samples_*.jsonl")}
        found[way] = (comparable(results), samples)
    assert found["fork"] == found["real"]
    assert found["fork"][0]["results"]["levante_trog"]["levante_acc,none"] > 0  # a real run, scored
    assert sorted(found["fork"][1]) == ["levante_trog.jsonl", "levante_vocab_mc.jsonl"]
    assert runs["fork"][0].stdout.splitlines()[-4:] == runs["real"][0].stdout.splitlines()[-4:]  # the table


@pytest.mark.parametrize(("entry", "args"), [
    ("lmms_cli", ["--model", "levante_fixed", "--tasks", "no_such_task_x"]),
    ("lmms_cli", ["--model", "levante_fixed", "--tasks", "levante_trog", "--no_such_flag"]),
    ("lmms_eval", ["--model", "dummy", "--tasks", "levante_trog", "--no_such_flag"]),
], ids=["unknown-task", "unknown-flag", "lmms_eval-unknown-flag"])
def test_a_bad_run_fails_alike(entry: str, args: list[str], data: Path, tmp_path: Path) -> None:
    runs = both(args, data, tmp_path, entry)
    (real, _), (fork, _) = runs["real"], runs["fork"]
    assert real.returncode in (1, 2) and fork.returncode == real.returncode, (real.stderr[-2000:], fork.stderr[-2000:])
    assert fork.stderr.strip().splitlines()[-1] == real.stderr.strip().splitlines()[-1]
    assert not any(out.exists() and any(out.rglob("*_results.json")) for _, out in runs.values())
