"""Each picture is verified and decoded once per process (core.image_cache): counted on lmms-eval's own
multiple_choice path, fresh after a file is replaced, safe against callers that change their copy, bounded."""

from __future__ import annotations

import hashlib
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from PIL import Image, ImageDraw

from levante_tasks.core import image_cache, images
from levante_tasks.errors import LevanteError
from levante_tasks.schema.task_source import TASKS_DIR
from levante_tasks.testing.fixture_data import write_fixture
from levante_tasks.testing.models import ImageIndexOracle


@pytest.fixture(autouse=True)
def fresh_cache(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Every test starts with an empty process cache sized from its own environment (and leaves one behind)."""
    monkeypatch.delenv(image_cache.BUDGET_ENV, raising=False)
    image_cache.shared_cache.cache_clear()
    yield
    image_cache.shared_cache.cache_clear()


@pytest.fixture
def opens(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Counts Pillow's `Image.open` calls (one to verify a file, one to decode it)."""
    calls: list[int] = []
    real_open = Image.open

    def counting_open(*args: Any, **kwargs: Any) -> Image.Image:
        calls.append(1)
        return real_open(*args, **kwargs)

    monkeypatch.setattr(Image, "open", counting_open)
    return calls


def run_lmms_eval(data_dir: Path, task: str, monkeypatch: pytest.MonkeyPatch) -> tuple[list[dict], list[dict]]:
    """(records, docs) of one task run in-process by lmms-eval with the image oracle."""
    from lmms_eval import evaluator
    from lmms_eval.tasks import TaskManager

    monkeypatch.setenv("LEVANTE_DATA_DIR", str(data_dir))
    monkeypatch.delenv("LEVANTE_DATA_VERSION", raising=False)
    manager = TaskManager(include_path=str(TASKS_DIR), include_defaults=False)
    out = evaluator.simple_evaluate(model=ImageIndexOracle(), tasks=[task], task_manager=manager, log_samples=True)
    samples = out["samples"][task]
    return [s["levante_item"] for s in samples], [s["doc"] for s in samples]


def distinct_pictures(data_dir: Path, docs: list[dict]) -> set[bytes]:
    """The sha256 of each distinct picture the docs show (the fixture draws one picture per option colour)."""
    version = data_dir / (data_dir / "default_version").read_text().strip()
    return {hashlib.sha256((version / path).read_bytes()).digest() for d in docs for path in d["visual_paths"]}


@pytest.fixture(scope="module")
def fixture_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("levante-data")
    write_fixture(root)
    return root


def test_multiple_choice_decodes_each_picture_once_not_once_per_option(
        fixture_dir: Path, opens: list[int], monkeypatch: pytest.MonkeyPatch) -> None:
    records, docs = run_lmms_eval(fixture_dir, "levante_vocab_mc", monkeypatch)
    pictures = distinct_pictures(fixture_dir, docs)
    asked = sum(len(d["presented_order"]) * len(d["visual_paths"]) for d in docs)  # lmms-eval: per option, all
    assert len(docs) >= 2 and asked > len(pictures) >= 4
    assert image_cache.shared_cache().decodes == len(pictures)
    assert len(opens) == 2 * len(pictures)  # each distinct picture verified and decoded once, never per option
    assert all(r["correct"] for r in records)  # the oracle still sees every option's own picture in its place
    # the plain variant in the same process decodes nothing again; the _mc records equal those without a cache
    plain, _ = run_lmms_eval(fixture_dir, "levante_vocab", monkeypatch)
    assert len(opens) == 2 * len(pictures) and all(r["correct"] for r in plain)
    monkeypatch.setenv(image_cache.BUDGET_ENV, "0")
    image_cache.shared_cache.cache_clear()
    uncached, _ = run_lmms_eval(fixture_dir, "levante_vocab_mc", monkeypatch)
    assert uncached == records
    assert image_cache.shared_cache().decodes == asked  # the anchor: every picture decoded for every option


def write_picture(path: Path, colour: tuple[int, int, int]) -> None:
    Image.new("RGB", (8, 6), colour).save(path, format="BMP")  # BMP: every colour gives a file of one size


def test_a_file_replaced_at_the_same_size_and_mtime_is_decoded_anew(tmp_path: Path, opens: list[int]) -> None:
    write_picture(tmp_path / "a.bmp", (200, 0, 0))
    stamp = os.stat(tmp_path / "a.bmp")
    assert images.open_image(tmp_path, "a.bmp").getpixel((0, 0)) == (200, 0, 0)
    assert images.open_image(tmp_path, "a.bmp").getpixel((0, 0)) == (200, 0, 0)
    assert len(opens) == 2  # verified and decoded once
    write_picture(tmp_path / "a.bmp", (0, 0, 200))
    os.utime(tmp_path / "a.bmp", ns=(stamp.st_atime_ns, stamp.st_mtime_ns))
    assert os.stat(tmp_path / "a.bmp").st_size == stamp.st_size
    assert images.open_image(tmp_path, "a.bmp").getpixel((0, 0)) == (0, 0, 200)
    assert len(opens) == 4  # the new content is verified again before it is decoded


def test_a_damaged_file_fails_every_time_and_is_never_held(tmp_path: Path) -> None:
    write_picture(tmp_path / "a.bmp", (1, 2, 3))
    (tmp_path / "a.bmp").write_bytes((tmp_path / "a.bmp").read_bytes()[:40])
    for _ in range(2):
        with pytest.raises(LevanteError, match=r"^a\.bmp: unreadable image \("):
            images.open_image(tmp_path, "a.bmp")
    assert image_cache.shared_cache().held_bytes == 0


def test_a_caller_changing_its_picture_leaves_the_cached_one_alone(tmp_path: Path) -> None:
    write_picture(tmp_path / "a.bmp", (10, 20, 30))
    first = images.open_image(tmp_path, "a.bmp")
    first.putpixel((0, 0), (255, 255, 255))
    ImageDraw.Draw(first).rectangle((0, 0, 7, 5), fill=(0, 255, 0))
    first.paste((0, 0, 255), (0, 0, 4, 4))
    first.thumbnail((2, 2))
    second = images.open_image(tmp_path, "a.bmp")
    assert second.size == (8, 6) and second.getcolors() == [(8 * 6, (10, 20, 30))]
    assert image_cache.shared_cache().decodes == 1


def test_least_recently_used_pictures_are_dropped_beyond_the_budget() -> None:
    pictures = {key: Image.new("RGB", (8, 6), (n, 0, 0)) for n, key in enumerate((b"a", b"b", b"c"))}
    cache = image_cache.DecodedImages(budget_bytes=2 * image_cache.footprint(pictures[b"a"]))  # room for two
    decoded: list[bytes] = []
    for key in (b"a", b"b", b"a", b"c", b"a", b"b"):
        shown = cache.get(key, lambda key=key: decoded.append(key) or pictures[key])
        assert shown.getpixel((0, 0)) == pictures[key].getpixel((0, 0))
    assert decoded == [b"a", b"b", b"c", b"b"]  # c pushed out b, the least recently used; a stayed
    assert cache.held_bytes == cache.budget_bytes and cache.hits == 2


@pytest.mark.parametrize("value", ["lots", "\u00b2", "-1"])
def test_a_bad_budget_is_one_line_naming_the_variable(monkeypatch: pytest.MonkeyPatch, value: str) -> None:
    monkeypatch.setenv(image_cache.BUDGET_ENV, value)
    with pytest.raises(LevanteError, match=r"^\$LEVANTE_IMAGE_CACHE_MIB: expected a whole number of MiB"):
        image_cache.budget_from_env()
