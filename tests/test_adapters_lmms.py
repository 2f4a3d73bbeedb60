"""End to end: real `lmms-eval` runs of the LEVANTE tasks through `--model levante_clip` / `levante_vlm_mc` (entry
points), offline, on the tasks' tiny prepared fixture and tiny random-init checkpoints."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from pathlib import Path

import pytest

from levante_tasks.schema import task_source
from levante_tasks.testing.tiny_models import build_tiny_clip, build_tiny_vlm

TASKS_DIR = task_source.TASKS_DIR
fixture_data = pytest.importorskip("levante_tasks.testing.fixture_data", reason="LEVANTE task fixture missing")


@pytest.fixture(scope="module")
def data_dir(tmp_path_factory):
    root = tmp_path_factory.mktemp("levante-data")
    fixture_data.write_fixture(root)
    return root


def _run(tmp: Path, data_dir: Path, model: str, model_args: str, tasks: list[str], batch_size: int,
         limit: int | None = None) -> Path:
    """Run the lmms-eval CLI; return the results folder (the CLI exits 0 even on errors: check the files)."""
    out = tmp / "out"
    env = {**os.environ, "LEVANTE_DATA_DIR": str(data_dir), "HF_DATASETS_OFFLINE": "1", "HF_HUB_OFFLINE": "1"}
    command = [sys.executable, "-m", "lmms_eval", "--model", model, "--model_args", model_args,
               "--tasks", ",".join(tasks), "--include_path", str(TASKS_DIR), "--output_path", str(out),
               "--batch_size", str(batch_size), "--log_samples", "--verbosity", "WARNING",
               *(["--limit", str(limit)] if limit else [])]
    proc = subprocess.run(command, cwd=tmp, env=env, capture_output=True, text=True, timeout=600)
    results = sorted(out.rglob("*_results.json"))
    assert proc.returncode == 0 and results, proc.stdout[-2000:] + proc.stderr[-3000:]
    return results[-1].parent


def _records(folder: Path, task: str) -> list[dict]:
    (path,) = folder.glob(f"*_samples_{task}.jsonl")
    return [json.loads(line) for line in path.read_text().splitlines()]


def _check_task(folder: Path, task: str, kind: str, scorer: str | None) -> None:
    results = json.loads(next(folder.glob("*_results.json")).read_text())["results"]
    lines = _records(folder, task)
    assert lines
    records = [line["levante_item"] for line in lines]
    for line, record in zip(lines, records, strict=True):
        assert record["parse_method"] == "scores"
        assert record["option_scores_kind"] == kind
        scores = record["option_scores"]
        assert len(scores) == len(record["presented_order"])
        assert math.isclose(sum(math.exp(s) for s in scores), 1.0, abs_tol=1e-3)
        assert record["choice_index"] == max(range(len(scores)), key=scores.__getitem__)
        if scorer:  # generate_until: the JSON answer carries the scorer and the model identity
            answer = json.loads(line["filtered_resps"])
            assert answer["scorer"] == scorer and answer["model"]["revision"] == "unknown"
    accuracy = sum(r["correct"] for r in records) / len(records)
    assert results[task]["levante_acc,none"] == pytest.approx(accuracy)


def test_levante_clip_runs_levante_tasks_in_lmms_eval(tmp_path, data_dir):
    clip = build_tiny_clip(tmp_path / "tiny-clip")
    tasks = ["levante_vocab", "levante_matrix_reasoning", "levante_theory_of_mind", "levante_vocab_mc"]
    folder = _run(tmp_path, data_dir, "levante_clip", f"pretrained={clip}", tasks, batch_size=8)
    for task in tasks[:3]:
        _check_task(folder, task, "logprob", "levante_clip")
    _check_task(folder, "levante_vocab_mc", "neg_loss", None)


def test_levante_vlm_mc_runs_levante_tasks_in_lmms_eval(tmp_path, data_dir):
    vlm = build_tiny_vlm(tmp_path / "tiny-vlm")
    tasks = ["levante_trog", "levante_mental_rotation", "levante_trog_mc"]
    folder = _run(tmp_path, data_dir, "levante_vlm_mc", f"pretrained={vlm}", tasks, batch_size=4)
    for task in tasks[:2]:
        _check_task(folder, task, "logprob", "levante_vlm_mc")
    _check_task(folder, "levante_trog_mc", "neg_loss", None)


def test_levante_vlm_mc_yes_no_scoring_runs_in_lmms_eval_and_is_its_own_model(tmp_path, data_dir):
    """scoring=yes_no through the real CLI: one pass per option, records with the per-option logit gaps in
    canonical order and the argmax as the choice, and a summary that names the mode in the model's adapter."""
    from levante_tasks.summary.cli import summarize_runs

    vlm = build_tiny_vlm(tmp_path / "tiny-vlm")
    folder = _run(tmp_path, data_dir, "levante_vlm_mc", f"pretrained={vlm},scoring=yes_no", ["levante_trog"],
                  batch_size=4, limit=3)
    lines = _records(folder, "levante_trog")
    assert len(lines) == 3
    for line in lines:
        record, answer = line["levante_item"], json.loads(line["filtered_resps"])
        assert answer["scoring"] == "yes_no" and record["option_scores_kind"] == "yes_no_logit"
        presented = list(answer["scores"].values())  # the letters as presented, in order
        canonical = [presented[record["presented_order"].index(k)] for k in range(len(presented))]
        assert record["option_scores"] == pytest.approx(canonical)
        assert record["choice_index"] == max(range(len(canonical)), key=canonical.__getitem__)
    document = summarize_runs([folder], tmp_path / "summary", plot=False)
    assert [model["adapter"] for model in document["models"]] == ["levante_vlm_mc[scoring=yes_no]"]
