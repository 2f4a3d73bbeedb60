"""LEVANTE lmms-eval tasks end to end on a tiny fixture: balanced orders, image alignment, records, controls."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from levante_tasks.harness import docs, lmms_task, prompts, yamlgen
from levante_tasks.harness.fixture_data import decode_colour, write_fixture
from levante_tasks.harness.test_models import FixedLetterModel, ImageIndexOracle

TASKS_DIR = Path(yamlgen.__file__).resolve().parents[1] / "tasks"
SEED_GROUPS = ["levante", "levante_seed1", "levante_seed2", "levante_mc", "levante_mc_seed1", "levante_mc_seed2"]


@pytest.fixture(scope="module")
def fixture_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("levante-data")


@pytest.fixture(autouse=True)
def _data_env(fixture_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    if not (fixture_dir / "default_version").is_file():
        write_fixture(fixture_dir)
    monkeypatch.setenv("LEVANTE_DATA_DIR", str(fixture_dir))
    monkeypatch.delenv("LEVANTE_DATA_VERSION", raising=False)
    monkeypatch.setenv("HF_DATASETS_OFFLINE", "1")
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")


def evaluate(model: Any, tasks: list[str]) -> dict[str, Any]:
    """One in-process lmms-eval run over our tasks only (a model instance: no entry-point lookup needed)."""
    from lmms_eval import evaluator
    from lmms_eval.tasks import TaskManager

    manager = TaskManager(include_path=str(TASKS_DIR), include_defaults=False)
    return evaluator.simple_evaluate(model=model, tasks=tasks, task_manager=manager, log_samples=True)


def leaf_records(out: dict[str, Any]) -> dict[str, list[dict[str, Any]]]:
    return {task: [s["levante_item"] for s in samples] for task, samples in out["samples"].items()}


def test_yaml_tree_is_generated_and_in_sync() -> None:
    rendered = yamlgen.render_tree()
    on_disk = {str(p.relative_to(TASKS_DIR)) for p in TASKS_DIR.rglob("*.yaml")}
    assert on_disk == set(rendered)
    for rel, text in rendered.items():
        assert (TASKS_DIR / rel).read_text(encoding="utf-8") == text, rel


@pytest.mark.parametrize("letter", ["A", "B", "C", "D"])
def test_fixed_letter_scores_chance_on_every_task_seed_and_output_type(letter: str) -> None:
    out = evaluate(FixedLetterModel(letter=letter), SEED_GROUPS)
    records = leaf_records(out)
    assert len(records) == 6 * (6 + 11) - 3  # six groups of 17 leaves; slider has no multiple_choice form
    position = "ABCD".index(letter)
    for task, recs in records.items():
        if "slider" in task:
            continue
        hits = sum(r["correct"] for r in recs)
        # multiple_choice: a letter the item lacks gets no loss advantage, so the argmin falls on A
        effective = [position if len(r["presented_order"]) > position else (0 if "_mc" in task else None) for r in recs]
        expected = sum(1 / len(r["presented_order"]) for r, p in zip(recs, effective, strict=True) if p is not None)
        assert abs(hits - expected) <= 1, (task, hits, expected)
        assert out["results"][task]["levante_acc,none"] == pytest.approx(hits / len(recs))
        assert out["results"][task]["levante_item,none"] == pytest.approx(hits / len(recs))


def test_image_oracle_proves_option_image_alignment_for_every_image_task() -> None:
    image_tasks = [
        "levante_vocab",
        "levante_trog",
        "levante_theory_of_mind",
        "levante_matrix_reasoning",
        "levante_mental_rotation",
        "levante_same_different",
    ]
    variants = [f"{t}{s}" for t in image_tasks for s in ("", "_seed1", "_mc_seed2", "_blank", "_shuffled")]
    out = evaluate(ImageIndexOracle(), variants)
    for task, recs in leaf_records(out).items():
        acc = sum(r["correct"] for r in recs) / len(recs)
        if task.endswith("_blank"):
            assert all(r["parse_method"] == "none" for r in recs), task
        elif task.endswith("_shuffled"):
            assert acc < 1.0, task
        else:
            assert acc == 1.0, task
            assert all(
                r["choice_index"] == 0 and r["option_scores"] is None or r["option_scores"][0] == 0.0 for r in recs
            ), task


def test_context_image_comes_first_for_math_and_matrix() -> None:
    for spec in ({"task": "egma-math", "trial_types": ["Number Line 4afc"]}, {"task": "matrix-reasoning"}):
        for doc in lmms_task.load_task_docs({**spec, "seed": 1, "variant": "original"}):
            images = lmms_task.doc_to_visual(doc)
            assert decode_colour(images[0]) == -1
            text = lmms_task.doc_to_text(doc)
            assert text.startswith("<image0>")
            if doc["option_kind"] == "image":
                assert [decode_colour(im) for im in images[1:]] == doc["presented_order"]


def test_records_and_prompts_follow_the_presented_order() -> None:
    tom = lmms_task.load_task_docs({"task": "theory-of-mind", "seed": 2, "variant": "original"})
    for doc in tom:
        text = lmms_task.doc_to_text(doc)
        assert prompts.answer_instruction(doc["letters"]) in text and text.startswith("Here is a short story.")
        result = lmms_task.process_results(doc, [doc["target_letter"]])
        record = result["levante_item"]
        assert record["correct"] == 1 and record["choice_index"] == 0 and record["seed"] == 2
        assert record["presented_order"] == doc["presented_order"]
    math = lmms_task.load_task_docs({"task": "egma-math", "trial_types": ["Addition"], "seed": 0})
    for doc in math:
        shown = [doc["options"][i] for i in doc["presented_order"]]
        assert "; ".join(f"{letter}: {o}" for letter, o in zip(doc["letters"], shown, strict=True)) in doc_text(doc)
        wrong = next(p for p, i in enumerate(doc["presented_order"]) if i != 0)
        record = lmms_task.process_results(doc, [shown[wrong]])["levante_item"]
        assert record["parse_method"] == "option_text" and record["correct"] == 0
        assert record["choice_index"] == doc["presented_order"][wrong]


def doc_text(doc: dict[str, Any]) -> str:
    return lmms_task.doc_to_text(doc)


def test_scores_json_are_stored_in_canonical_order() -> None:
    doc = lmms_task.load_task_docs({"task": "trog", "seed": 1, "variant": "original"})[0]
    scores = {letter: -float(p) for p, letter in enumerate(doc["letters"])}
    record = lmms_task.process_results(doc, [str(scores).replace("'", '"').join(['{"scores": ', "}"])])
    item = record["levante_item"]
    assert item["parse_method"] == "scores" and item["choice_letter"] == "A"
    assert item["option_scores"] == [-float(doc["presented_order"].index(i)) for i in range(len(doc["letters"]))]


def test_slider_uses_stated_tolerance() -> None:
    docs_ = lmms_task.load_task_docs({"task": "egma-math", "trial_types": ["Number Line Slider"], "seed": 0})
    doc = next(d for d in docs_ if d["range_max"] == 100.0)
    assert "Where does the number 40 go?" in lmms_task.doc_to_text(doc)
    inside = lmms_task.process_results(doc, ["0.54"])["levante_item"]
    outside = lmms_task.process_results(doc, ["0.56"])["levante_item"]
    assert (inside["correct"], outside["correct"], inside["tolerance"]) == (1, 0, 15.0)


def test_shuffled_control_is_a_derangement() -> None:
    original = {d["item_uid"]: d["visual_paths"] for d in lmms_task.load_task_docs({"task": "vocab"})}
    shuffled = lmms_task.load_task_docs({"task": "vocab", "variant": "shuffled"})
    assert all(d["visual_paths"] != original[d["item_uid"]] for d in shuffled)
    assert {d["visual_donor"] for d in shuffled} == set(original)


def test_missing_data_fails_with_one_line(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("LEVANTE_DATA_DIR", str(tmp_path))
    with pytest.raises(SystemExit) as info:
        evaluate(FixedLetterModel(), ["levante_trog"])
    message = str(info.value)
    assert "\n" not in message and "levante-tasks prepare" in message and "levante_trog" in message
    monkeypatch.setenv("LEVANTE_DATA_VERSION", "v9")
    with pytest.raises(Exception, match="version v9"):
        docs.load_rows("trog", docs.data_version())


def test_cli_run_writes_results_and_samples_and_lists_tasks(fixture_dir: Path, tmp_path: Path) -> None:
    cli = [sys.executable, "-m", "lmms_eval"]
    run = subprocess.run(
        [
            *cli,
            "--model",
            "dummy",
            "--tasks",
            "levante_vocab,levante_egma_math_addition_mc",
            "--include_path",
            str(TASKS_DIR),
            "--output_path",
            str(tmp_path),
            "--log_samples",
        ],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    results = list(tmp_path.rglob("*_results.json"))
    assert len(results) == 1, run.stderr[-2000:]
    import json

    summary = json.loads(results[0].read_text())
    for task in ("levante_vocab", "levante_egma_math_addition_mc"):
        (samples,) = tmp_path.rglob(f"*_samples_{task}.jsonl")
        recs = [json.loads(line)["levante_item"] for line in samples.read_text().splitlines()]
        assert summary["results"][task]["levante_acc,none"] == pytest.approx(
            sum(r["correct"] for r in recs) / len(recs)
        )
    listing = subprocess.run(
        [*cli, "--tasks", "list", "--include_path", str(TASKS_DIR)],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    text = listing.stdout + listing.stderr
    for name in [
        "levante",
        "levante_egma_math",
        "levante_egma_math_number_line_slider",
        "levante_trog_mc_shuffled",
        "levante_same_different_blank",
        "levante_vocab_seeds",
    ]:
        assert f" {name} " in text or f"|{name}|" in text.replace(" ", "") or name in text.split(), name
