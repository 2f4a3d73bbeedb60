"""Corrupt releases: every validation error is one line naming the file/row, a non-zero exit, no output."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest
from data_helpers import default_rows, math_row, vocab_row, write_release

from levante_tasks.cli import main
from levante_tasks.data.manifest import MANIFEST_COLUMNS


def run_prepare(base: Path, data: Path, *extra: str) -> int:
    return main(["prepare", "--release", str(base), "--version", "2026-01-01", "--data-dir", str(data),
                 "--quiet", *extra])


def test_valid_release_builds_datasets(tmp_path, capsys):
    write_release(tmp_path / "rel")
    assert run_prepare(tmp_path / "rel", tmp_path / "data") == 0
    vocab = pd.read_parquet(tmp_path / "data/2026-01-01/datasets/vocab/test.parquet")
    assert list(vocab["item_uid"]) == ["vocab__cat", "vocab__dog"]
    assert list(vocab.iloc[0]["options"]) == ["cat", "dog", "cup", "sun"]  # canonical: answer first
    assert list(vocab.iloc[0]["option_images"])[1] == "release/visual/vocab/dog.png"
    math = pd.read_parquet(tmp_path / "data/2026-01-01/datasets/egma-math/test.parquet")
    assert math.iloc[0]["question"] == "Add the numbers and choose the correct answer: 1+1."  # the clause apart
    assert "vocab" in capsys.readouterr().out
    import datasets

    loaded = datasets.load_dataset("parquet", data_files=str(tmp_path / "data/2026-01-01/datasets/vocab/test.parquet"),
                                   split="train", cache_dir=str(tmp_path / "hf-cache"))
    assert loaded[0]["options"] == ["cat", "dog", "cup", "sun"] and loaded[0]["chance_level"] == 0.25


def _assert_fails(tmp_path: Path, capsys, expected: str, *extra: str) -> None:
    status = run_prepare(tmp_path / "rel", tmp_path / "data", *extra)
    err = capsys.readouterr().err
    assert status != 0
    assert expected in err, err
    assert not (tmp_path / "data/2026-01-01/datasets").exists()


def test_missing_column(tmp_path, capsys):
    write_release(tmp_path / "rel", columns=tuple(c for c in MANIFEST_COLUMNS if c != "answer"))
    _assert_fails(tmp_path, capsys, "manifest.csv: missing columns: answer")


def test_extra_column(tmp_path, capsys):
    write_release(tmp_path / "rel", columns=(*MANIFEST_COLUMNS, "bonus"))
    _assert_fails(tmp_path, capsys, "manifest.csv: unexpected columns: bonus", "--lenient")


def test_duplicate_item_uid_with_different_content(tmp_path, capsys):
    rows = [*default_rows(), math_row("math_add_1_1", "1+1", "3", "0,1,2")]
    write_release(tmp_path / "rel", rows=rows)
    expected = "manifest.csv:5: math_add_1_1: duplicate item_uid (first at row 3; differs in answer"
    _assert_fails(tmp_path, capsys, expected)


def test_identical_duplicate_rows_are_one_item(tmp_path):
    write_release(tmp_path / "rel", rows=[*default_rows(), default_rows()[0]])
    assert run_prepare(tmp_path / "rel", tmp_path / "data") == 0
    assert len(pd.read_parquet(tmp_path / "data/2026-01-01/datasets/vocab/test.parquet")) == 2


def test_answer_among_distractors(tmp_path, capsys):
    write_release(tmp_path / "rel", rows=[*default_rows(), math_row("math_add_3_3", "3+3", "6", "5,6,7")])
    _assert_fails(tmp_path, capsys, "manifest.csv:5: math_add_3_3: answer '6' also listed as a distractor")


def test_unknown_task(tmp_path, capsys):
    bad = {**math_row("x_1", "1+1", "2", "1,3"), "task": "hearts-and-flowers"}
    write_release(tmp_path / "rel", rows=[*default_rows(), bad])
    _assert_fails(tmp_path, capsys, "manifest.csv:5: x_1: unknown task 'hearts-and-flowers'")


def test_missing_image(tmp_path, capsys):
    write_release(tmp_path / "rel", rows=[*default_rows(), vocab_row("owl", "cat,dog,cup")])
    _assert_fails(tmp_path, capsys, "manifest.csv:5: vocab__owl: option 1 image 'owl' not found in visual/vocab/")


def test_unreadable_image(tmp_path, capsys):
    root = write_release(tmp_path / "rel")
    (root / "visual/vocab/sun.png").write_bytes(b"not a png at all")
    _assert_fails(tmp_path, capsys, "vocab__cat: option 4 image visual/vocab/sun.png is unreadable")


def test_lenient_drops_and_counts(tmp_path):
    rows = [*default_rows(), vocab_row("owl", "cat,dog,cup"), math_row("math_add_3_3", "3+3", "6", "5,6,7")]
    write_release(tmp_path / "rel", rows=rows)
    assert run_prepare(tmp_path / "rel", tmp_path / "data", "--lenient") == 0
    info = pd.read_json(tmp_path / "data/2026-01-01/datasets/vocab/dataset.json", typ="series")
    assert info["n_items"] == 2 and info["excluded"] == {"dropped:image_missing": 1}
    math_info = pd.read_json(tmp_path / "data/2026-01-01/datasets/egma-math/dataset.json", typ="series")
    assert math_info["excluded"] == {"dropped:answer_among_distractors": 1}


def test_failed_rebuild_keeps_previous_datasets(tmp_path, capsys):
    root = write_release(tmp_path / "rel")
    assert run_prepare(tmp_path / "rel", tmp_path / "data") == 0
    before = (tmp_path / "data/2026-01-01/datasets/vocab/test.parquet").read_bytes()
    (root / "visual/vocab/sun.png").write_bytes(b"broken!")  # same size class of change: a corrupt image
    assert run_prepare(tmp_path / "rel", tmp_path / "data") != 0
    assert (tmp_path / "data/2026-01-01/datasets/vocab/test.parquet").read_bytes() == before
    assert "unreadable" in capsys.readouterr().err


def test_corrupt_manifest_encoding(tmp_path, capsys):
    root = write_release(tmp_path / "rel")
    (root / "manifest.csv").write_bytes(b"\xff\xfe\x00garbage")
    _assert_fails(tmp_path, capsys, "manifest.csv:1: not UTF-8 text (byte 0xff at byte offset 0)")


def test_second_prepare_does_no_work(tmp_path, capsys):
    write_release(tmp_path / "rel")
    assert run_prepare(tmp_path / "rel", tmp_path / "data") == 0
    parquet = tmp_path / "data/2026-01-01/datasets/vocab/test.parquet"
    mtime = parquet.stat().st_mtime_ns
    capsys.readouterr()
    assert run_prepare(tmp_path / "rel", tmp_path / "data") == 0
    out = capsys.readouterr().out
    assert "fetched 0 file(s); datasets up to date" in out
    assert parquet.stat().st_mtime_ns == mtime


def test_version_resolution_picks_newest_dated(tmp_path, capsys):
    write_release(tmp_path / "rel", version="2026-01-01")
    write_release(tmp_path / "rel", version="2026-02-01")
    write_release(tmp_path / "rel", version="hackathon")
    assert main(["prepare", "--release", str(tmp_path / "rel"), "--data-dir", str(tmp_path / "d"), "--quiet"]) == 0
    assert "LEVANTE 2026-02-01" in capsys.readouterr().out
    assert (tmp_path / "d/default_version").read_text().strip() == "2026-02-01"


@pytest.mark.parametrize("version", ["2027-01-01", "latest"])
def test_unknown_version_is_one_line(tmp_path, capsys, version):
    write_release(tmp_path / "rel")
    assert main(["prepare", "--release", str(tmp_path / "rel"), "--version", version,
                 "--data-dir", str(tmp_path / "d")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [f"levante-tasks: error: version {version!r} not found in the release (found: 2026-01-01)"]
