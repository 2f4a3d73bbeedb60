"""`levante-tasks synth` loses nothing good: kill -9 leftovers are cleaned by the next run, and a read-only or
full --out is one line with the earlier output untouched."""

from __future__ import annotations

from pathlib import Path

from faults import fill_disk, kill9_when, one_error_line, run_cli, small_tmpfs, tree_snapshot

ARGS = ["--seed", "3", "--children", "5"]
OUTPUTS = ["children", "irt", "synthetic"]


def synth(out: Path, **kwargs):
    return run_cli(["synth", "--out", out, *ARGS], **kwargs)


def test_kill9_midway_keeps_the_earlier_output_and_the_next_run_cleans_up(tmp_path: Path) -> None:
    out = tmp_path / "synth"
    assert synth(out).returncode == 0
    before = tree_snapshot(out)

    def writing() -> bool:
        return any(out.glob(".*/synthetic/manifest.csv"))

    assert kill9_when(["synth", "--out", out, *ARGS], writing) == -9
    assert any(p.name.startswith(".") for p in out.iterdir())  # the killed run's staging folder
    assert {k: v for k, v in tree_snapshot(out).items() if not k.startswith(".")} == before
    again = synth(out)
    assert again.returncode == 0, again.stderr
    assert sorted(p.name for p in out.iterdir()) == OUTPUTS  # leftovers cleaned
    assert tree_snapshot(out) == before


def test_read_only_out_is_one_line_and_keeps_the_earlier_output(tmp_path: Path) -> None:
    out = tmp_path / "synth"
    assert synth(out).returncode == 0
    before = tree_snapshot(out)
    out.chmod(0o555)
    try:
        result = synth(out, drop_dac=True)
    finally:
        out.chmod(0o755)
    assert result.returncode == 2
    line = one_error_line(result.stderr)
    assert "synth/" in line and "permission denied (writing the synthetic release)" in line, line
    assert tree_snapshot(out) == before
    assert sorted(p.name for p in out.iterdir()) == OUTPUTS


def test_full_disk_is_one_line_and_keeps_the_earlier_output(tmp_path: Path) -> None:
    with small_tmpfs("4m") as mount:
        out = mount / "synth"
        assert synth(out).returncode == 0
        before = tree_snapshot(out)
        fill_disk(mount, keep_free=256 * 1024)
        result = synth(out)
        assert result.returncode == 2
        line = one_error_line(result.stderr)
        assert "synth" in line and "no space left" in line and "nothing was replaced" in line, line
        assert tree_snapshot(out) == before
        assert sorted(p.name for p in out.iterdir()) == OUTPUTS
