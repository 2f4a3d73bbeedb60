"""Benchmark of picture loading and the shuffled control.

- Pictures: `levante_vocab_mc` (lmms-eval's multiple_choice path asks `doc_to_visual` once per option) and
  `levante_vocab`, run in this process by lmms-eval's evaluator with the offline image oracle on the test fixture,
  its pictures redrawn like vocab's (224 x 224 WebP of random shapes, a distinct file per option and item, the
  option colour kept in the centre). For each: pictures decoded per item and CPU per item with the decoded-image
  cache (`core.image_cache`) and without it (`$LEVANTE_IMAGE_CACHE_MIB=0`, the anchor), and the ratio. `pictures`
  is CPU spent opening pictures (`core.images.open_image`: read, sha256, verify and decode or a cached copy); `run`
  is the whole evaluate call (lmms-eval's task building, the model, scoring) over the items. Goal: decodes per
  item = pictures per item for both output types.
- `_shuffled`: CPU seconds of `core.controls.shuffle_visuals` on 1k, 4k and 16k docs (1 to 4 pictures each) vs the
  first, quadratic exchange (`testing.reference_shuffle`), whose output it must reproduce. Goal: 16k docs < 0.1 s.

CPU is process_time (user + system), the median of `--repeats` runs. `--tiny`: 64 x 64 pictures, one run each,
shuffles of 250/1k/2k docs (a few seconds beyond importing lmms-eval). Exits 1 when a figure cannot be produced or
the shuffles differ. Run: `.venv/bin/python benchmarks/images.py` (about a minute on 2 cores).
"""

from __future__ import annotations

import argparse
import gc
import os
import random
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from PIL import Image, ImageDraw

from levante_tasks.core import controls, hooks, image_cache
from levante_tasks.schema.task_source import TASKS_DIR
from levante_tasks.testing.fixture_data import write_fixture
from levante_tasks.testing.reference_shuffle import quadratic_shuffle, shuffle_docs

TASKS = ("levante_vocab_mc", "levante_vocab")


def redraw_pictures(version_root: Path, side: int) -> int:
    """Redraw every vocab picture as `side` x `side` random shapes with its colour in the centre, stored as WebP like
    the real vocab pictures; the number redrawn."""
    rng = random.Random(0)
    paths = sorted((version_root / "release" / "visual" / "vocab").glob("*.png"))
    for path in paths:
        with Image.open(path) as small:
            colour = small.convert("RGB").getpixel((small.width // 2, small.height // 2))
        picture = Image.new("RGB", (side, side), (255, 255, 255))
        draw = ImageDraw.Draw(picture)
        for _ in range(48):
            x, y = rng.randrange(side), rng.randrange(side)
            box = (x, y, x + rng.randrange(4, side // 2), y + rng.randrange(4, side // 2))
            fill = tuple(rng.randrange(256) for _ in range(3))
            (draw.ellipse if rng.random() < 0.5 else draw.rectangle)(box, fill=fill, outline=(0, 0, 0), width=2)
        draw.rectangle((side // 4, side // 4, 3 * side // 4, 3 * side // 4), fill=colour)
        picture.save(path, format="WEBP")  # Pillow reads a file by its content, not its name
    return len(paths)


def timed_open(spent: list[float]) -> Callable[..., Image.Image]:
    """`open_image` that adds the CPU it takes to `spent[0]`."""
    real = hooks.open_image

    def open_image(*args: Any) -> Image.Image:
        start = time.process_time()
        try:
            return real(*args)
        finally:
            spent[0] += time.process_time() - start
    return open_image


def run_task(task: str, cached: bool) -> dict[str, float]:
    """One in-process lmms-eval run of `task` with a fresh cache (or none): decodes, CPU and items."""
    from lmms_eval import evaluator
    from lmms_eval.tasks import TaskManager

    from levante_tasks.testing.models import ImageIndexOracle

    os.environ[image_cache.BUDGET_ENV] = str(image_cache.DEFAULT_BUDGET_MIB if cached else 0)
    image_cache.shared_cache.cache_clear()
    spent = [0.0]
    real, hooks.open_image = hooks.open_image, timed_open(spent)
    try:
        manager = TaskManager(include_path=str(TASKS_DIR), include_defaults=False)
        start = time.process_time()
        out = evaluator.simple_evaluate(model=ImageIndexOracle(), tasks=[task], task_manager=manager,
                                        log_samples=True, verbosity="ERROR")
        run = time.process_time() - start
    finally:
        hooks.open_image = real
    docs = [sample["doc"] for sample in out["samples"][task]]
    return {"items": len(docs), "pictures": sum(len(d["visual_paths"]) for d in docs),
            "decodes": image_cache.shared_cache().decodes, "open_cpu": spent[0], "run_cpu": run}


def measure_pictures(repeats: int) -> list[str]:
    """Rows of the pictures table; raises RuntimeError when a run shows no pictures."""
    rows = [f"{'task':<18} {'cache':<6} {'pictures/item':>13} {'decodes/item':>12} {'pictures ms/item':>16} "
            f"{'run ms/item':>11} {'ratio (pictures)':>16}"]
    for task in TASKS:
        figures = {}
        for cached in (False, True):
            runs = [run_task(task, cached) for _ in range(repeats)]
            items = runs[0]["items"]
            if not items or not runs[0]["pictures"]:
                raise RuntimeError(f"{task}: the run showed no pictures")
            figures[cached] = {"pictures": runs[0]["pictures"] / items, "decodes": runs[0]["decodes"] / items,
                               "open": statistics.median(r["open_cpu"] for r in runs) / items * 1e3,
                               "run": statistics.median(r["run_cpu"] for r in runs) / items * 1e3}
        for cached in (False, True):
            f = figures[cached]
            ratio = "anchor" if not cached else f"{f['open'] / figures[False]['open']:.3f}x"
            rows.append(f"{task:<18} {'on' if cached else 'off':<6} {f['pictures']:>13.1f} {f['decodes']:>12.1f} "
                        f"{f['open']:>16.2f} {f['run']:>11.1f} {ratio:>16}")
    return rows


def shuffle_cpu(shuffle: Callable[[list[dict[str, Any]]], None], counts: list[int], repeats: int) -> float:
    """Median CPU seconds of one exchange over fresh docs with these picture counts (building them untimed)."""
    times = []
    for _ in range(repeats):
        docs = shuffle_docs(counts)
        gc.collect()  # no collection of the rest of the heap left pending to land inside the timed call
        start = time.process_time()
        shuffle(docs)
        times.append(time.process_time() - start)
    return statistics.median(times)


def measure_shuffles(sizes: tuple[int, ...], repeats: int) -> list[str]:
    """Rows of the shuffle table; raises RuntimeError when the linear exchange differs from the reference."""
    rows = [f"{'docs':>6} {'quadratic s':>11} {'linear s':>9} {'ratio':>8}"]
    for size in sizes:
        counts = [1 + n % 4 for n in range(size)]
        linear_docs, reference_docs = shuffle_docs(counts), shuffle_docs(counts)
        controls.shuffle_visuals(linear_docs)
        quadratic_shuffle(reference_docs)
        if linear_docs != reference_docs:
            raise RuntimeError(f"{size} docs: the linear exchange differs from the quadratic one")
        old = shuffle_cpu(quadratic_shuffle, counts, 1)
        new = shuffle_cpu(controls.shuffle_visuals, counts, repeats)
        rows.append(f"{size:>6} {old:>11.4f} {new:>9.4f} {new / old:>7.4f}x")
    return rows


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tiny", action="store_true", help="64 px pictures, one run each, small shuffles")
    parser.add_argument("--repeats", type=int, default=3, help="runs per figure (median); default 3")
    args = parser.parse_args()
    repeats = 1 if args.tiny else args.repeats
    os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    with tempfile.TemporaryDirectory() as folder:
        data = Path(folder)
        redraw_pictures(write_fixture(data), 64 if args.tiny else 224)
        os.environ["LEVANTE_DATA_DIR"] = str(data)
        os.environ.pop("LEVANTE_DATA_VERSION", None)
        try:
            shuffles = measure_shuffles((250, 1000, 2000) if args.tiny else (1000, 4000, 16000), repeats)
            pictures = measure_pictures(repeats)
        except RuntimeError as exc:
            print(f"benchmarks/images.py: {exc}", file=sys.stderr)
            return 1
    print("Pictures per item on lmms-eval's path (image oracle; cache off = the anchor; CPU medians):")
    print("\n".join(pictures))
    print("\n_shuffled: CPU of the exchange vs the quadratic one (ratio = linear / quadratic):")
    print("\n".join(shuffles))
    return 0


if __name__ == "__main__":
    sys.exit(main())
