"""End to end: real `lmms-eval` runs of the LEVANTE tasks through `--model levante_clip` / `levante_vlm_mc` (entry
points), offline, on the tasks' tiny prepared fixture and tiny random-init checkpoints."""

from __future__ import annotations

import json
import math
import os
from pathlib import Path

import pytest

from levante_tasks.schema import task_source
from levante_tasks.testing.lmms_fork import run_cli

TASKS_DIR = task_source.TASKS_DIR
fixture_data = pytest.importorskip("levante_tasks.testing.fixture_data", reason="LEVANTE task fixture missing")


@pytest.fixture(scope="module")
def data_dir(tmp_path_factory):
    root = tmp_path_factory.mktemp("levante-data")
    fixture_data.write_fixture(root)
    return root


def _run(tmp: Path, data_dir: Path, model: str, model_args: str, tasks: list[str], batch_sizes: tuple[int, ...],
         limit: int | None = None) -> dict[int, Path]:
    """Run the lmms-eval CLI once, one evaluation per batch size in turn (its `--config` list); return each
    evaluation's results folder by batch size."""
    env = {**os.environ, "LEVANTE_DATA_DIR": str(data_dir), "HF_DATASETS_OFFLINE": "1", "HF_HUB_OFFLINE": "1"}
    runs = [{"model": model, "model_args": model_args, "tasks": ",".join(tasks), "include_path": str(TASKS_DIR),
             "output_path": str(tmp / f"out-batch-{size}"), "batch_size": size, "log_samples": True,
             "verbosity": "WARNING", **({"limit": limit} if limit else {})} for size in batch_sizes]
    config = tmp / "runs.yaml"
    config.write_text(json.dumps(runs), encoding="utf-8")  # JSON is YAML
    proc = run_cli(["--config", str(config)], cwd=tmp, env=env, timeout=600, entry="lmms_eval", models=[model])
    folders = {}
    for size in batch_sizes:
        results = sorted((tmp / f"out-batch-{size}").rglob("*_results.json"))
        assert proc.returncode == 0 and results, proc.stdout[-2000:] + proc.stderr[-3000:]
        folders[size] = results[-1].parent
    return folders


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


def _max_score_difference(one: Path, other: Path, tasks: list[str]) -> float:
    """The largest absolute difference between two runs' per-item option scores (every item and option of every
    task), after checking both hold the same items, each with as many scores (none for a slider item) in both."""
    worst = 0.0
    for task in tasks:
        first = {r["levante_item"]["item_uid"]: r["levante_item"]["option_scores"] for r in _records(one, task)}
        second = {r["levante_item"]["item_uid"]: r["levante_item"]["option_scores"] for r in _records(other, task)}
        assert first.keys() == second.keys() and any(first.values()), task
        for uid, scores in first.items():
            assert len(scores or []) == len(second[uid] or []), (task, uid)
            worst = max([worst, *(abs(a - b) for a, b in zip(scores or [], second[uid] or [], strict=True))])
    return worst


# Several tasks in one run, with 2, 3 and 4 options and pictures, so one batch holds items of different tasks and
# option counts (the VLM left-pads its prompts, CLIP pads its texts): batch 8 must score every item as batch 1 does.
MIXED_TASKS = ["levante_vocab", "levante_theory_of_mind", "levante_same_different", "levante_mental_rotation",
               "levante_matrix_reasoning", "levante_egma_math"]
SCORE_TOLERANCE = 1e-4  # float32 on CPU: padding and batch shape move a log-probability by ~1e-6


def test_levante_clip_runs_levante_tasks_in_lmms_eval_and_batch_8_scores_as_batch_1(tmp_path, data_dir,
                                                                                    tiny_checkpoint):
    clip = tiny_checkpoint("clip")
    tasks = [*MIXED_TASKS, "levante_vocab_mc"]
    folders = _run(tmp_path, data_dir, "levante_clip", f"pretrained={clip}", tasks, batch_sizes=(8, 1))
    for task in ("levante_vocab", "levante_matrix_reasoning", "levante_theory_of_mind"):
        _check_task(folders[8], task, "logprob", "levante_clip")
    _check_task(folders[8], "levante_vocab_mc", "neg_loss", None)
    difference = _max_score_difference(folders[1], folders[8], tasks)
    assert difference <= SCORE_TOLERANCE, f"batch 8 vs 1: max abs score difference {difference:.2e}"


def test_levante_vlm_mc_runs_levante_tasks_in_lmms_eval_and_batch_8_scores_as_batch_1(tmp_path, data_dir,
                                                                                      tiny_checkpoint):
    vlm = tiny_checkpoint("idefics3")
    tasks = ["levante_trog", *MIXED_TASKS, "levante_trog_mc"]
    folders = _run(tmp_path, data_dir, "levante_vlm_mc", f"pretrained={vlm}", tasks, batch_sizes=(8, 1))
    for task in ("levante_trog", "levante_mental_rotation"):
        _check_task(folders[8], task, "logprob", "levante_vlm_mc")
    _check_task(folders[8], "levante_trog_mc", "neg_loss", None)
    difference = _max_score_difference(folders[1], folders[8], tasks)
    assert difference <= SCORE_TOLERANCE, f"batch 8 vs 1: max abs score difference {difference:.2e}"


def test_levante_vlm_mc_yes_no_scoring_runs_in_lmms_eval_and_is_its_own_model(tmp_path, data_dir, tiny_checkpoint):
    """scoring=yes_no through the real CLI: one pass per option, records with the per-option logit gaps in
    canonical order and the argmax as the choice, and a summary that names the mode in the model's adapter."""
    from levante_tasks.summary.cli import summarize_runs

    vlm = tiny_checkpoint("idefics3")
    folder = _run(tmp_path, data_dir, "levante_vlm_mc", f"pretrained={vlm},scoring=yes_no", ["levante_trog"],
                  batch_sizes=(4,), limit=3)[4]
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
