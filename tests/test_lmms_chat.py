"""Chat models get the same LEVANTE tasks as simple models (model_kinds.BothKindsTask): in-process, through
lmms-eval's CLI with an offline chat test model, and with lmms-eval's own `huggingface` chat model."""

from __future__ import annotations

import copy
import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest

from levante_tasks.lmms.model_bridge import KwargsAndHook
from levante_tasks.schema.task_source import TASKS_DIR
from levante_tasks.testing.fixture_data import write_fixture
from levante_tasks.testing.lmms_fork import run_cli
from levante_tasks.testing.models import ChatImageOracle, ImageIndexOracle

IMAGE_TASKS = ["levante_vocab", "levante_trog", "levante_theory_of_mind", "levante_matrix_reasoning",
               "levante_mental_rotation", "levante_same_different"]


@pytest.fixture(scope="module")
def fixture_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("levante-data")
    write_fixture(root)
    return root


@pytest.fixture(autouse=True)
def _data_env(fixture_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LEVANTE_DATA_DIR", str(fixture_dir))
    monkeypatch.delenv("LEVANTE_DATA_VERSION", raising=False)
    monkeypatch.setenv("HF_DATASETS_OFFLINE", "1")
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")


def evaluate(model: Any, tasks: list[str]) -> dict[str, list[dict[str, Any]]]:
    from lmms_eval import evaluator
    from lmms_eval.tasks import TaskManager

    manager = TaskManager(include_path=str(TASKS_DIR), include_defaults=False)
    out = evaluator.simple_evaluate(model=model, tasks=tasks, task_manager=manager, log_samples=True)
    return {task: [s["levante_item"] for s in samples] for task, samples in out["samples"].items()}


def test_chat_model_reads_messages_with_images_in_prompt_order() -> None:
    tasks = [f"{t}{suffix}" for t in IMAGE_TASKS for suffix in ("", "_seed2", "_shuffled")]
    chat = ChatImageOracle()
    records = evaluate(chat, tasks)
    assert set(records) == set(tasks)
    for task, recs in records.items():
        accuracy = sum(r["correct"] for r in recs) / len(recs)
        assert accuracy < 1.0 if task.endswith("_shuffled") else accuracy == 1.0, task
    # every request came as chat turns: the images first, then the prompt text
    assert chat.message_shapes and all(shape[-1] == "text" and set(shape[:-1]) == {"image"}
                                       for shape in chat.message_shapes)
    # and a chat model's records are the simple model's, item for item
    assert records == evaluate(ImageIndexOracle(), tasks)


def test_request_arguments_serve_both_layouts() -> None:
    calls = []
    argument = KwargsAndHook({"until": ["\n\n"], "max_new_tokens": 8}, lambda doc: calls.append(doc) or ["turn"])
    assert argument({"item_uid": "x"}) == ["turn"] and calls == [{"item_uid": "x"}]
    copied = copy.deepcopy(argument)  # models copy their generation kwargs: the task behind the hook is shared
    copied["until"].append("END")
    assert copied.hook is argument.hook and argument["until"] == ["\n\n"] and isinstance(copied, dict)


def cli(fixture_dir: Path, out: Path, model: str, *extra: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "LEVANTE_DATA_DIR": str(fixture_dir), "HF_DATASETS_OFFLINE": "1", "HF_HUB_OFFLINE": "1"}
    args = ["--model", model, "--tasks", "levante_matrix_reasoning", "--include_path", str(TASKS_DIR),
            "--output_path", str(out), "--log_samples", *extra]
    return run_cli(args, cwd=out.parent, env=env, timeout=600)


def samples(out: Path) -> list[dict[str, Any]]:
    (path,) = out.rglob("*_samples_levante_matrix_reasoning.jsonl")
    return [json.loads(line)["levante_item"] for line in path.read_text(encoding="utf-8").splitlines()]


def test_chat_model_through_the_lmms_eval_cli(fixture_dir: Path, tmp_path: Path) -> None:
    chat = cli(fixture_dir, tmp_path / "chat", "levante_chat_oracle")
    assert chat.returncode == 0, chat.stderr[-3000:]
    (results,) = (tmp_path / "chat").rglob("*_results.json")
    assert json.loads(results.read_text())["results"]["levante_matrix_reasoning"]["levante_acc,none"] == 1.0
    simple = cli(fixture_dir, tmp_path / "simple", "levante_image_oracle")
    assert simple.returncode == 0, simple.stderr[-3000:]
    assert samples(tmp_path / "chat") == samples(tmp_path / "simple")

