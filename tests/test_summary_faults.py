"""The summary output folder is replaced whole or not at all: foreign folders, kill -9, full disk, no permission."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest
from faults import fill_disk, kill9_when, one_error_line, run_cli, small_tmpfs, tree_snapshot
from summary_runs import copy_runs, real_runs


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = real_runs(tmp_path_factory)
    return copy_runs(root, tmp_path_factory.mktemp("faults") / "runs")


def args(runs: Path, out: Path, *extra: str) -> list[str]:
    return ["summarize", str(runs), "--out", str(out), *extra]


def good_output(runs: Path, out: Path, *extra: str) -> dict[str, bytes]:
    done = run_cli(args(runs, out, *extra))
    assert done.returncode == 0, done.stderr
    return tree_snapshot(out)


def leftovers(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if p.name.startswith("."))


def test_out_folder_that_is_not_a_summary_is_refused(runs: Path, tmp_path: Path) -> None:
    out = tmp_path / "mine"
    out.mkdir()
    (out / "notes.txt").write_text("my notes\n")
    done = run_cli(args(runs, out))
    assert done.returncode == 2
    line = one_error_line(done.stderr)
    assert "mine" in line and "matrix.json" in line
    assert tree_snapshot(out) == {"notes.txt": b"my notes\n"}


def test_rerun_replaces_an_earlier_summary_whole(runs: Path, tmp_path: Path) -> None:
    out = tmp_path / "out"
    before = good_output(runs, out)
    assert "heatmap.png" in before
    after = good_output(runs, out, "--no-plot")
    assert "heatmap.png" not in after and leftovers(tmp_path) == []


def test_kill9_midway_keeps_the_old_output(runs: Path, tmp_path: Path) -> None:
    out = tmp_path / "out"
    before = good_output(runs, out, "--no-plot")

    def staging_has_csv() -> bool:
        return any(p.name == "matrix.csv" for p in tmp_path.glob(".out.staging-*/*"))

    assert kill9_when(args(runs, out), staging_has_csv) == -9
    assert tree_snapshot(out) == before
    assert leftovers(tmp_path)
    assert run_cli(args(runs, out, "--no-plot")).returncode == 0
    assert leftovers(tmp_path) == []


def test_disk_full_is_one_line_and_keeps_the_old_output(runs: Path) -> None:
    """Room for the new matrix.csv but not for the heatmap: nothing of the old output may change."""
    with small_tmpfs("4m") as mount:
        out = mount / "out"
        before = good_output(runs, out)
        fill_disk(mount, keep_free=len(before["matrix.csv"]) + 16 * 1024)
        done = run_cli(args(runs / "fixed", out))  # other inputs: every file would change
        assert done.returncode == 2
        # names the output (or the file of it) that did not fit, never the hidden staging folder
        assert re.search(r"/out(/[\w.]+)?: no space left", one_error_line(done.stderr)), done.stderr
        assert tree_snapshot(out) == before
        assert leftovers(mount) == [".filler"]


def test_read_only_parent_is_one_line(runs: Path, tmp_path: Path) -> None:
    parent = tmp_path / "ro"
    parent.mkdir()
    os.chmod(parent, 0o555)
    done = run_cli(args(runs, parent / "out"), drop_dac=True)
    assert done.returncode == 2 and "permission denied" in one_error_line(done.stderr)
    assert list(parent.iterdir()) == []


def test_unreadable_run_folder_is_one_line_and_the_rest_is_summarized(runs: Path, tmp_path: Path) -> None:
    locked = tmp_path / "runs"
    copy_runs(runs.parent, locked)
    os.chmod(locked / "oracle", 0)
    try:
        done = run_cli(args(locked, tmp_path / "out"), drop_dac=True)
    finally:
        os.chmod(locked / "oracle", 0o755)
    assert done.returncode == 1, done.stderr
    line = one_error_line(done.stderr)
    assert "oracle" in line and "permission denied" in line
    assert (tmp_path / "out" / "matrix.json").is_file()


def test_disk_full_under_verify_still_prints_what_verify_found(runs: Path) -> None:
    """`summarize --verify` on a full disk: verify's closing line and mismatch lines (it had read every run) come
    before the one error line; the old output is kept."""
    with small_tmpfs("4m") as mount:
        out = mount / "out"
        before = good_output(runs, out)
        fill_disk(mount, keep_free=len(before["matrix.csv"]) + 16 * 1024)
        done = run_cli(args(runs / "fixed", out, "--verify"))
        assert done.returncode == 2
        assert "verified 1 run(s), " in done.stdout, done.stdout
        errors = [line for line in done.stderr.splitlines() if line.startswith("levante-tasks: error: ")]
        assert len(errors) == 1 and "no space left" in errors[0] and done.stderr.rstrip().endswith(errors[0])
        assert tree_snapshot(out) == before
