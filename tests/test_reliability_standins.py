"""`levante-tasks standins` never loses anything good: bad names, overlapping folders, bad manifests, foreign
folders, escaping symlinks, unreadable folders and kill -9 each leave the source and any earlier output whole."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from data_helpers import write_release
from faults import fill_disk, kill9_when, one_error_line, run_cli, small_tmpfs, tree_snapshot

VERSION = "2026-01-01"


def standins(release: Path, out: Path, version: str = VERSION, **kwargs):
    return run_cli(["standins", "--release", release, "--version", version, "--out", out], **kwargs)


@pytest.fixture
def release(tmp_path: Path) -> Path:
    """A tiny release base whose vocab items lack one picture (so one stand-in is drawn)."""
    base = tmp_path / "release"
    write_release(base, VERSION, words=("cat", "dog", "cup"))
    return base


def assert_refused(result, *words: str) -> str:
    assert result.returncode == 2, result.stdout + result.stderr
    line = one_error_line(result.stderr)
    for word in words:
        assert word in line, line
    return line


def test_a_good_run_writes_the_copy_and_the_stand_ins(release: Path, tmp_path: Path) -> None:
    out = tmp_path / "out"
    result = standins(release, out)
    assert result.returncode == 0, result.stderr
    made = out / VERSION
    assert (made / "visual" / "vocab" / "sun.png").is_file()  # drawn
    assert (made / "visual" / "vocab" / "cat.png").read_bytes() == (release / VERSION / "visual" / "vocab"
                                                                    / "cat.png").read_bytes()
    assert "visual/vocab/sun.png" in (made / "STAND-INS.md").read_text(encoding="utf-8")
    assert [p.name for p in out.iterdir()] == [VERSION]  # no staging leftovers


def test_out_equal_to_release_is_refused_and_the_source_kept(release: Path) -> None:
    before = tree_snapshot(release)
    assert_refused(standins(release, release), "--out")
    assert tree_snapshot(release) == before


def test_out_inside_the_release_is_refused(release: Path) -> None:
    before = tree_snapshot(release)
    assert_refused(standins(release, release / VERSION / "visual"), "--out")
    assert_refused(standins(release, release / "standins"), "--out")
    assert tree_snapshot(release) == before


def test_out_holding_the_release_is_refused(tmp_path: Path) -> None:
    """`--out` such that `<out>/<version>` is a folder above the source: replacing it would delete the source."""
    base = tmp_path / VERSION / "base"
    write_release(base, VERSION)
    before = tree_snapshot(tmp_path)
    assert_refused(standins(base, tmp_path), "--out")
    assert tree_snapshot(tmp_path) == before


@pytest.mark.parametrize("version", ["..", ".", "../victim", "a/b", ""])
def test_unusable_version_names_are_refused(tmp_path: Path, version: str) -> None:
    """`--version ..` used to delete the parent of `<out>/<something>`; now no name outside one folder level."""
    base = tmp_path / "nest" / "release"
    write_release(base, VERSION)
    source = base / version  # make the folder the name points at look like a release, so only the name is wrong
    source.mkdir(parents=True, exist_ok=True)
    (source / "manifest.csv").write_bytes((base / VERSION / "manifest.csv").read_bytes())
    out = tmp_path / "out" / "inner"
    (out.parent / "victim").mkdir(parents=True)
    (out.parent / "victim" / "keep.txt").write_text("keep")
    out.mkdir()
    (out / "keep.txt").write_text("keep")
    before = tree_snapshot(tmp_path)
    assert_refused(standins(base, out, version=version), "version")
    assert tree_snapshot(tmp_path) == before


def test_bad_manifest_keeps_the_earlier_output_byte_identical(release: Path, tmp_path: Path) -> None:
    out = tmp_path / "out"
    assert standins(release, out).returncode == 0
    before = tree_snapshot(out)
    manifest = release / VERSION / "manifest.csv"
    manifest.write_text("task,item\nvocab,cat\n", encoding="utf-8")  # missing columns
    assert_refused(standins(release, out), "manifest.csv")
    assert tree_snapshot(out) == before
    assert sorted(p.name for p in out.iterdir()) == [VERSION]


def test_existing_output_that_is_not_a_stand_in_release_is_not_replaced(release: Path, tmp_path: Path) -> None:
    out = tmp_path / "out"
    (out / VERSION).mkdir(parents=True)
    (out / VERSION / "results.json").write_text("{}")
    before = tree_snapshot(out)
    assert_refused(standins(release, out), "STAND-INS.md")
    assert tree_snapshot(out) == before


def test_symlink_pointing_outside_the_release_is_refused(release: Path, tmp_path: Path) -> None:
    secret = tmp_path / "secret.png"
    secret.write_bytes(b"not part of the release")
    (release / VERSION / "visual" / "vocab" / "sun.png").symlink_to(secret)
    out = tmp_path / "out"
    assert_refused(standins(release, out), "visual/vocab/sun.png", "symlink")
    assert not out.exists() or not any(out.iterdir())


def test_symlink_inside_the_release_is_copied_as_a_file(release: Path, tmp_path: Path) -> None:
    (release / VERSION / "visual" / "vocab" / "sun.png").symlink_to("cat.png")
    out = tmp_path / "out"
    assert standins(release, out).returncode == 0
    copied = out / VERSION / "visual" / "vocab" / "sun.png"
    assert not copied.is_symlink() and copied.read_bytes() == (release / VERSION / "visual" / "vocab"
                                                               / "cat.png").read_bytes()


def test_unreadable_source_folder_is_one_line_not_a_smaller_copy(release: Path, tmp_path: Path) -> None:
    out = tmp_path / "out"
    assert standins(release, out).returncode == 0
    before = tree_snapshot(out)
    extra = release / VERSION / "corpus"
    extra.mkdir()
    (extra / "notes.csv").write_text("a\n1\n")
    extra.chmod(0)
    try:
        line = assert_refused(standins(release, out, drop_dac=True), "corpus", "permission denied")
    finally:
        extra.chmod(0o755)
    assert "Traceback" not in line
    assert tree_snapshot(out) == before


def test_kill9_midway_keeps_the_earlier_output_and_the_next_run_cleans_up(release: Path, tmp_path: Path) -> None:
    pad = release / VERSION / "visual" / "pad"
    pad.mkdir()
    for index in range(3000):
        (pad / f"p{index:04d}.bin").write_bytes(os.urandom(64))
    out = tmp_path / "out"
    assert standins(release, out).returncode == 0
    before = tree_snapshot(out / VERSION)

    def copying() -> bool:
        return any(p.is_dir() for p in out.glob(f".{VERSION}.staging-*/visual/pad"))

    status = kill9_when(["standins", "--release", release, "--version", VERSION, "--out", out], copying)
    assert status == -9
    assert tree_snapshot(out / VERSION) == before  # the earlier output is whole
    assert any(p.name.startswith(f".{VERSION}.staging-") for p in out.iterdir())  # the killed run's leftover
    again = standins(release, out)
    assert again.returncode == 0, again.stderr
    assert [p.name for p in out.iterdir()] == [VERSION]
    assert tree_snapshot(out / VERSION) == before


def test_full_disk_is_one_line_and_keeps_the_earlier_output(release: Path) -> None:
    (release / VERSION / "visual" / "vocab" / "pad.bin").write_bytes(os.urandom(200_000))
    with small_tmpfs("1m") as mount:
        out = mount / "out"
        assert standins(release, out).returncode == 0
        before = tree_snapshot(out)
        fill_disk(mount, keep_free=64 * 1024)
        line = assert_refused(standins(release, out), "no space left")
        assert "pad.bin" in line and "nothing was replaced" in line, line
        assert tree_snapshot(out) == before
        assert [p.name for p in out.iterdir()] == [VERSION]
