"""Build tiny releases in the real layout for data-layer tests (and the prepared synthetic release)."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest
from built_once import built_once
from PIL import Image

from levante_tasks.data.manifest import MANIFEST_COLUMNS
from levante_tasks.data.prepare import prepare
from levante_tasks.synth import write_synthetic_release

VOCAB_TEMPLATE = ('Choose the image that matches the text: "<prompt_phrase>". Answer with A, B, C, or D. '
                  "A: <image1>; B: <image2>; C: <image3>; D: <image4>")
MATH_TEMPLATE = ("Add the numbers and choose the correct answer: <prompt_phrase>. Answer with A, B, C, or D. "
                 "A: <option1>; B: <option2>; C: <option3>; D: <option4>")


def vocab_row(word: str, alternatives: str) -> dict[str, str]:
    """A vocab manifest row in the real layout."""
    return {"task": "vocab", "task_id": "vocab", "item_uid": f"vocab__{word}", "trial_type": "test",
            "prompt": "NA", "item": word, "answer": word, "response_alternatives": alternatives,
            "chance_level": "0.25", "prompt_phrase": word, "prompt_image": "NA", "full_prompt": VOCAB_TEMPLATE}


def math_row(uid: str, item: str, answer: str, alternatives: str) -> dict[str, str]:
    """An addition manifest row in the real layout (text options)."""
    return {"task": "egma-math", "task_id": "math", "item_uid": uid, "trial_type": "Addition",
            "prompt": "Add the numbers and choose the correct answer.", "item": item, "answer": answer,
            "response_alternatives": alternatives, "chance_level": "0.25", "prompt_phrase": item,
            "prompt_image": "NA", "full_prompt": MATH_TEMPLATE}


def default_rows() -> list[dict[str, str]]:
    """Two vocab items and two math items, all valid."""
    return [vocab_row("cat", "dog,cup,sun"), vocab_row("dog", "cat,cup,sun"),
            math_row("math_add_1_1", "1+1", "2", "0,1,3"), math_row("math_add_2_2", "2+2", "4", "3,5,6")]


def write_release(base: Path, version: str = "2026-01-01", rows: list[dict[str, str]] | None = None,
                  columns: tuple[str, ...] = MANIFEST_COLUMNS, words: tuple[str, ...] = ("cat", "dog", "cup", "sun")
                  ) -> Path:
    """Write `<base>/<version>/manifest.csv` and one PNG per vocab word; returns the version folder."""
    root = base / version
    (root / "visual" / "vocab").mkdir(parents=True, exist_ok=True)
    with open(root / "manifest.csv", "w", newline="", encoding="utf-8") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(columns), extrasaction="ignore", restval="NA")
        writer.writeheader()
        for row in rows if rows is not None else default_rows():
            writer.writerow(row)
    for index, word in enumerate(words):
        Image.new("RGB", (8, 8), (40 * index, 0, 0)).save(root / "visual" / "vocab" / f"{word}.png")
    return root


TABLE_HEADER = ("item_id", "labels", "en", "es-CO", "de", "fr-CA")
ADD_PROMPT = "Add the numbers and choose the correct answer."


def table_rows() -> list[list[str]]:
    """A small translation table in LEVANTE's layout for `default_rows()`: de lacks an approved "the dog", fr-CA
    is all empty."""
    return [["vocab-item-001", "vocab, Vocabulary", "the cat", "el gato", "die Katze", ""],
            ["vocab-item-002", "vocab, Vocabulary", "the dog", "el perro", "NO APPROVED TRANSLATION", ""],
            ["addition-prompt1", "math", ADD_PROMPT, "Suma los números y escoge la respuesta correcta.",
             "Addiere die Zahlen und wähle die richtige Antwort.", ""]]


def write_translations(path: Path, rows: list[list[str]] | None = None,
                       header: tuple[str, ...] = TABLE_HEADER) -> Path:
    """Write a translation table CSV (LEVANTE's layout: RFC-4180, UTF-8) at `path`; returns it."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(header)
        writer.writerows(table_rows() if rows is None else rows)
    return path


def prepared_synthetic(root: Path) -> None:
    """The synthetic release (seed 0, version `synthetic`) written to `<root>/release`, prepared into `<root>/data`."""
    write_synthetic_release(root / "release", seed=0, version="synthetic")
    prepare(str(root / "release"), "synthetic", str(root / "data"), strict=True, progress=False)


def prepared_release(factory: pytest.TempPathFactory) -> Path:
    """The prepared synthetic release (`release/` and `data/`, version `synthetic`: `prepared_synthetic`), built once
    per test run and shared by the xdist workers (tests/built_once.py): only read."""
    return built_once(factory, "prepared-synthetic", prepared_synthetic)


def prepared_demo(factory: pytest.TempPathFactory) -> Path:
    """The demo's release prepared (`levante-tasks demo --prepare-only`): its `--out` folder, built once per test run
    and shared by the xdist workers (tests/built_once.py): only read."""

    def build(root: Path) -> None:
        from levante_tasks.cli import main

        assert main(["demo", "--out", str(root / "demo-out"), "--prepare-only"]) == 0

    return built_once(factory, "demo-prepared", build) / "demo-out"
