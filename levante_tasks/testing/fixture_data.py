"""A tiny prepared data dir of `ItemRow`s (levante_tasks.schema.items), for tests and offline demos.

Every image encodes what it is by its colour: option images the canonical option index, context images a
separate colour, so a model that decodes colours can prove which image it received at which position.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
from PIL import Image

from levante_tasks.atomic import atomic_path, write_json, write_text
from levante_tasks.core import prompts
from levante_tasks.schema import layout
from levante_tasks.schema.dataset import IMAGE_ROOT, dataset_info_document
from levante_tasks.schema.items import ITEM_SCHEMA, LETTERS, ItemRow, slider_chance
from levante_tasks.schema.layout import DATASET_FILE, DEFAULT_VERSION_FILE
from levante_tasks.schema.tasks import TASKS, TaskInfo, entry_for, stray_entries, task_info
from levante_tasks.tasks import piece_file, pieces
from levante_tasks.testing.fixture_spec import FixtureSpec

CONTEXT_COLOUR = (0, 0, 255)
IMAGE_SIZE = (32, 24)

RELEASE_VISUAL = f"{layout.RELEASE_DIR}/{layout.VISUAL_DIR}"  # image paths are relative to the version folder


def option_colour(index: int) -> tuple[int, int, int]:
    """Colour of the option image with canonical index `index` (0 .. len(LETTERS) - 1)."""
    return (25 * index + 5, 255 - 25 * index, 0)


def decode_colour(image: Image.Image) -> int | None:
    """Canonical index encoded by an image's colour; -1 for a context image; None when it matches nothing."""
    pixel = image.convert("RGB").getpixel((image.width // 2, image.height // 2))

    def near(colour: tuple[int, int, int]) -> bool:  # resampling by a model's processor may move a channel by 1-2
        return all(abs(a - b) <= 2 for a, b in zip(pixel, colour, strict=True))

    if near(CONTEXT_COLOUR):
        return -1
    return next((index for index in range(len(LETTERS)) if near(option_colour(index))), None)


SPEC_MODULE = "fixture"  # levante_tasks/tasks/<folder>/fixture.py defines SPEC
SPECS: dict[str, FixtureSpec] = pieces(SPEC_MODULE, "SPEC")  # task name -> its fixture spec, in registry order


def fixture_spec(info: TaskInfo) -> FixtureSpec:
    """The fixture spec of a catalogue row (a clear error naming its folder's file when the row has none)."""
    return entry_for(SPECS, info, "fixture spec", piece_file(info.folder, SPEC_MODULE))


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


def _image(root: Path, rel: str, colour: tuple[int, int, int]) -> str:
    path = root / rel
    if not path.is_file():
        path.parent.mkdir(parents=True, exist_ok=True)
        with atomic_path(path) as tmp:
            Image.new("RGB", IMAGE_SIZE, colour).save(tmp, format="PNG")
    return rel


def _row(root: Path, task: str, uid: str, trial_type: str, n: int, kind: str, context: bool,
         number: int, story: str = "") -> dict[str, Any]:
    """A choice item whose option images (or numbers) and context image are easy to recognise; `story` starts
    its prompt."""
    options = [str(number + i) for i in range(n)] if kind == "text" else [f"{uid}-opt{i}" for i in range(n)]
    images = ([_image(root, f"{RELEASE_VISUAL}/{task}/{o}.png", option_colour(i)) for i, o in enumerate(options)]
              if kind == "image" else [])
    stimulus = _image(root, f"{RELEASE_VISUAL}/{task}/{uid}-context.png", CONTEXT_COLOUR) if context else ""
    stem = prompts.with_context_placeholder(f'{story} Choose the option for "phrase {number}".'.strip(), context)
    return ItemRow(
        item_uid=uid, source_item_uid=uid, task=task, task_id=task_info(task).task_id, trial_type=trial_type,
        prompt="Choose the correct option.", prompt_phrase=f"phrase {number}",
        question=stem, story=story, answer=options[0],
        options=options, option_kind=kind, option_images=images, stimulus_image=stimulus,
        chance_level=1.0 / n, n_options=n, manifest_row=number,
    ).as_dict()


def _slider_row(root: Path, number: int, target: int, top: int) -> dict[str, Any]:
    uid = f"math_slider_{target}_{top}"
    return ItemRow(
        item_uid=uid, source_item_uid=uid, task="egma-math", task_id="math", trial_type="Number Line Slider",
        question=prompts.slider_question(0.0, float(top), str(target)), answer=str(target), option_kind="slider",
        stimulus_image=_image(root, f"{layout.GENERATED_DIR}/egma-math/number-line-0-{top}.png", CONTEXT_COLOUR),
        chance_level=slider_chance(float(target), 0.0, float(top)), response_format="slider", range_min=0.0,
        range_max=float(top), manifest_row=number,
    ).as_dict()


def _write_dataset(root: Path, version: str, task: str, rows: list[dict[str, Any]]) -> None:
    folder = root / layout.DATASETS_DIR / task
    folder.mkdir(parents=True, exist_ok=True)
    with atomic_path(folder / DATASET_FILE) as tmp:
        pq.write_table(pa.Table.from_pylist(rows, schema=ITEM_SCHEMA), tmp)
    write_json(folder / layout.DATASET_INFO_FILE,
               dataset_info_document(task, version, len(rows), image_root=IMAGE_ROOT))


def write_fixture(data_dir: str | Path, version: str = "fixture-v1") -> Path:
    """Write `<data_dir>/<version>/` with one small dataset per task and `<data_dir>/default_version`."""
    if stray_entries(SPECS):
        raise KeyError(f"levante_tasks/tasks: fixture specs of tasks not in the catalogue: "
                       f"{', '.join(stray_entries(SPECS))}")
    root = Path(data_dir) / version
    number = 1
    for info in TASKS:  # registry order; every catalogue row has a spec (a clear error otherwise)
        spec = fixture_spec(info)
        first = number if spec.first_number is None else spec.first_number
        number = max(number, _write_task(root, version, info, spec, first))
    write_text(Path(data_dir) / DEFAULT_VERSION_FILE, version + "\n")
    return root


def _write_task(root: Path, version: str, info: TaskInfo, spec: FixtureSpec, number: int) -> int:
    """One task's fixture dataset, its items numbered from `number`; the number after its last item."""
    if spec.kind == "math":
        return _write_math(root, version, number)
    rows = []
    types, counts = spec.trial_types, spec.option_counts
    for i in range(spec.n_items):
        rows.append(_row(root, info.name, f"{info.task_id}_item{i}", types[i % len(types)], counts[i % len(counts)],
                         spec.option_kind, spec.context_image, number + i, spec.story))
    _write_dataset(root, version, info.name, rows)
    return number + spec.n_items


def _write_math(root: Path, version: str, number: int) -> int:
    """The egma-math fixture: three items of every `MATH_TYPES` entry, then three sliders; the next number."""
    math_rows = []
    for trial_type, (n, context) in MATH_TYPES.items():
        for i in range(3):
            uid = f"math_{trial_type.lower().replace(' ', '_').replace('-', '_')}_{i}"
            math_rows.append(_row(root, "egma-math", uid, trial_type, n, "text", context, number))
            number += 1
    sliders = ((3, 10), (40, 100), (700, 1000))
    math_rows += [_slider_row(root, number + i, target, top) for i, (target, top) in enumerate(sliders)]
    _write_dataset(root, version, "egma-math", math_rows)
    return number + len(sliders)
