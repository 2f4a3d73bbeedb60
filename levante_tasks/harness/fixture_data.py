"""A tiny prepared data dir in the item-row schema (docs/design.md §3), for tests and offline demos.

Every image encodes what it is by its colour: option images the canonical option index, context images a
separate colour, so a model that decodes colours can prove which image it received at which position.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
from PIL import Image

from levante_tasks.atomic import atomic_path, write_json, write_text
from levante_tasks.schema.items import LETTERS

CONTEXT_COLOUR = (0, 0, 255)
IMAGE_SIZE = (32, 24)


def option_colour(index: int) -> tuple[int, int, int]:
    """Colour of the option image with canonical index `index` (0 .. len(LETTERS) - 1)."""
    return (25 * index + 5, 255 - 25 * index, 0)


def decode_colour(image: Image.Image) -> int | None:
    """Canonical index encoded by an image's colour; -1 for a context image; None when it matches nothing."""
    pixel = image.convert("RGB").getpixel((image.width // 2, image.height // 2))
    if pixel == CONTEXT_COLOUR:
        return -1
    for index in range(len(LETTERS)):
        if all(abs(a - b) <= 2 for a, b in zip(pixel, option_colour(index), strict=True)):
            return index
    return None


# (internal task, task_id, trial types, option counts cycled over items, option kind, context image, items)
SPECS = (
    ("vocab", "vocab", ("test",), (4,), "image", False, 9),
    ("trog", "trog", ("noun", "verb"), (4,), "image", False, 9),
    ("theory-of-mind", "tom", ("false_belief_question", "reality_check_question"), (2, 3, 4), "image", False, 9),
    ("matrix-reasoning", "matrix", ("Matrix Reasoning",), (4,), "image", True, 6),
    ("mental-rotation", "mrot", ("2", "3"), (2,), "image", True, 6),
    ("same-different-selection", "sds", ("test-dimensions", "something-same-1"), (3, 4), "image", False, 6),
)
MATH_TYPES = {
    "Number Identification": (4, False),
    "Number Comparison": (2, False),
    "Missing Number": (4, False),
    "Addition": (4, False),
    "Subtraction": (4, False),
    "Multiplication": (4, False),
    "Fraction": (4, False),
    "Non-symbolic Number Identification": (4, True),
    "Non-symbolic Number Comparison": (2, True),
    "Counting": (2, True),
    "Counting AFC": (3, True),
    "Number Line 4afc": (4, True),
}
LISTING = {"image": "<image{k}>", "text": "<option{k}>"}


def _image(root: Path, rel: str, colour: tuple[int, int, int]) -> str:
    path = root / rel
    if not path.is_file():
        path.parent.mkdir(parents=True, exist_ok=True)
        with atomic_path(path) as tmp:
            Image.new("RGB", IMAGE_SIZE, colour).save(tmp, format="PNG")
    return rel


def _row(
    root: Path, task: str, task_id: str, uid: str, trial_type: str, n: int, kind: str, context: bool, number: int
) -> dict[str, Any]:
    letters = LETTERS[:n]
    listing = "; ".join(f"{letters[k - 1]}: {LISTING[kind].format(k=k)}" for k in range(1, n + 1))
    options = [str(number + i) for i in range(n)] if kind == "text" else [f"{uid}-opt{i}" for i in range(n)]
    images = (
        [_image(root, f"release/visual/{task}/{o}.png", option_colour(i)) for i, o in enumerate(options)]
        if kind == "image"
        else []
    )
    stimulus = _image(root, f"release/visual/{task}/{uid}-context.png", CONTEXT_COLOUR) if context else ""
    prefix = "<image0> " if context else ""
    return {
        "item_uid": uid,
        "source_item_uid": uid,
        "task": task,
        "task_id": task_id,
        "trial_type": trial_type,
        "prompt": "Choose the correct option.",
        "prompt_phrase": f"phrase {number}",
        "prompt_text": f'{prefix}Choose the option for "phrase {number}". Answer with A or B. {listing}',
        "story": "Here is a short story." if task == "theory-of-mind" else "",
        "answer": options[0],
        "options": options,
        "option_kind": kind,
        "option_images": images,
        "stimulus_image": stimulus,
        "chance_level": 1.0 / n,
        "n_options": n,
        "response_format": "choice",
        "range_min": math.nan,
        "range_max": math.nan,
        "manifest_row": number,
    }


def _slider_row(root: Path, number: int, target: int, top: int) -> dict[str, Any]:
    uid = f"math_slider_{target}_{top}"
    stimulus = _image(root, f"generated/egma-math/number-line-0-{top}.png", CONTEXT_COLOUR)
    return {
        "item_uid": uid,
        "source_item_uid": uid,
        "task": "egma-math",
        "task_id": "math",
        "trial_type": "Number Line Slider",
        "prompt": "",
        "prompt_phrase": "",
        "prompt_text": "",
        "story": "",
        "answer": str(target),
        "options": [str(target)],
        "option_kind": "slider",
        "option_images": [],
        "stimulus_image": stimulus,
        "chance_level": 0.3,
        "n_options": 1,
        "response_format": "slider",
        "range_min": 0.0,
        "range_max": float(top),
        "manifest_row": number,
    }


def _write_dataset(root: Path, version: str, task: str, rows: list[dict[str, Any]]) -> None:
    folder = root / "datasets" / task
    folder.mkdir(parents=True, exist_ok=True)
    with atomic_path(folder / "test.parquet") as tmp:
        pq.write_table(pa.Table.from_pylist(rows), tmp)
    write_json(
        folder / "dataset.json",
        {"schema_version": 1, "task": task, "version": version, "n_items": len(rows), "image_root": "../.."},
    )


def write_fixture(data_dir: str | Path, version: str = "fixture-v1") -> Path:
    """Write `<data_dir>/<version>/` with one small dataset per task and `<data_dir>/default_version`."""
    root = Path(data_dir) / version
    number = 1
    for task, task_id, types, counts, kind, context, n_items in SPECS:
        rows = []
        for i in range(n_items):
            rows.append(
                _row(
                    root,
                    task,
                    task_id,
                    f"{task_id}_item{i}",
                    types[i % len(types)],
                    counts[i % len(counts)],
                    kind,
                    context,
                    number,
                )
            )
            number += 1
        _write_dataset(root, version, task, rows)
    math_rows = []
    for trial_type, (n, context) in MATH_TYPES.items():
        for i in range(3):
            uid = f"math_{trial_type.lower().replace(' ', '_').replace('-', '_')}_{i}"
            math_rows.append(_row(root, "egma-math", "math", uid, trial_type, n, "text", context, number))
            number += 1
    math_rows += [
        _slider_row(root, number + i, target, top) for i, (target, top) in enumerate(((3, 10), (40, 100), (700, 1000)))
    ]
    _write_dataset(root, version, "egma-math", math_rows)
    write_text(Path(data_dir) / "default_version", version + "\n")
    return root
