"""What the matrix test modules share, built once per test run (tests/built_once.py) and only read: the prepared
synthetic release, and a local two-cell matrix of fixed-letter models through real lmms-eval (test_matrix_slurm's
reference for a submitted run; its cell b's lmms-eval output is what the fake lmms-eval of the fault tests copies)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml
from built_once import built_once
from data_helpers import prepared_release
from faults import run_cli


def real_config(folder: Path, data: Path, letters: list[str], **slurm: Any) -> Path:
    """matrix.yaml: fixed-letter models on levante_trog (limit 4) through real lmms-eval, jobs under
    --export=NONE."""
    config = {"data": {"dir": str(data), "version": "synthetic"},
              "env": {"HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1"},
              "lmms_eval_module": "levante_tasks.testing.forked_doubles",  # exec'd under --export=NONE
              "models": [{"name": letter.lower(), "model": "levante_fixed", "model_args": f"letter={letter}"}
                         for letter in letters],
              "tasks": ["levante_trog"], "limit": 4, "batch_sizes": [4],
              "slurm": {"options": ["--export=NONE"], **slurm}}
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "matrix.yaml"
    path.write_text(yaml.safe_dump(config), encoding="utf-8")
    return path


def fixed_letter_matrix(factory: pytest.TempPathFactory) -> dict[str, Path]:
    """The prepared data, the finished local matrix of models a (letter A) and b (letter B) run locally, and cell
    b's lmms-eval output folder."""
    data = prepared_release(factory) / "data"

    def build(root: Path) -> None:
        config = real_config(root, data, ["A", "B"])
        done = run_cli(["matrix", "--config", config, "--out", root / "out"], cwd=root)
        assert done.returncode == 0, done.stdout + done.stderr

    out = built_once(factory, "matrix-fixed-letters", build) / "out"
    return {"data": data, "local": out, "lmms": next((out / "cells" / "all").glob("b__*")) / "lmms"}
