"""levante_tasks.atomic: modes follow the umask (group-readable shared folders), swaps never lose the old tree,
a failed block leaves the target alone, and kill -9 leftovers are cleaned only when their writer is dead."""

from __future__ import annotations

import contextlib
import os
import signal
import stat
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from data_helpers import write_release
from faults import run_cli, tree_snapshot

from levante_tasks import atomic
from levante_tasks.temp_names import target_path

UMASKS = [pytest.param(0o022, id="umask022"), pytest.param(0o027, id="umask027")]


@contextlib.contextmanager
def umask(mask: int) -> Iterator[None]:
    """Run the block (and any subprocess it starts) under `mask`."""
    old = os.umask(mask)
    try:
        yield
    finally:
        os.umask(old)


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def wrong_modes(root: Path, mask: int) -> dict[str, str]:
    """Files not 0666 & ~mask and folders not 0777 & ~mask under `root` (root itself included)."""
    wrong = {}
    for path in [root, *sorted(root.rglob("*"))]:
        want = (0o777 if path.is_dir() else 0o666) & ~mask
        if mode(path) != want:
            wrong[path.relative_to(root).as_posix() or "."] = f"{mode(path):o} (want {want:o})"
    return wrong


@pytest.mark.parametrize("mask", UMASKS)
def test_umask_write_text_and_write_json_follow_the_umask(tmp_path: Path, mask: int) -> None:
    with umask(mask):
        atomic.write_text(tmp_path / "a.txt", "text\n")
        atomic.write_json(tmp_path / "b.json", {"k": 1})
        with atomic.atomic_open(tmp_path / "c.bin", "wb") as handle:
            handle.write(b"\0")
    for name in ("a.txt", "b.json", "c.bin"):
        assert mode(tmp_path / name) == 0o666 & ~mask, name


@pytest.mark.parametrize("mask", UMASKS)
def test_umask_staged_dir_folders_follow_the_umask(tmp_path: Path, mask: int) -> None:
    target = tmp_path / "out" / "tree"
    with umask(mask):
        with atomic.staged_dir(target) as staging:
            assert mode(staging) == 0o777 & ~mask  # mkdtemp alone gives 0700
            (staging / "sub").mkdir()
            atomic.write_text(staging / "sub" / "f.txt", "x")
        assert wrong_modes(tmp_path / "out", mask) == {}


@pytest.mark.parametrize("mask", UMASKS)
def test_umask_prepare_output_follows_the_umask(tmp_path: Path, mask: int) -> None:
    base = tmp_path / "release"
    write_release(base)
    data = tmp_path / "data"
    with umask(mask):
        result = run_cli(["prepare", "--release", base, "--version", "2026-01-01", "--data-dir", data, "--quiet"])
    assert result.returncode == 0, result.stderr
    for rel in ("default_version", "2026-01-01/datasets/vocab/test.parquet", "2026-01-01/datasets/vocab/dataset.json"):
        assert (data / rel).is_file(), rel
    assert wrong_modes(data, mask) == {}


@pytest.mark.parametrize("mask", UMASKS)
def test_umask_synth_output_follows_the_umask(tmp_path: Path, mask: int) -> None:
    out = tmp_path / "synth"
    with umask(mask):
        result = run_cli(["synth", "--out", out, "--seed", "3", "--children", "5"])
    assert result.returncode == 0, result.stderr
    assert (out / "synthetic" / "manifest.csv").is_file()
    assert wrong_modes(out, mask) == {}


def test_swap_dir_restores_the_old_tree_when_the_second_rename_fails(tmp_path: Path) -> None:
    target = tmp_path / "tree"
    (target / "sub").mkdir(parents=True)
    (target / "sub" / "keep.txt").write_text("old")
    before = tree_snapshot(target)
    missing_new = tmp_path / "never-made"  # renaming it onto target fails after target was moved aside
    with pytest.raises(FileNotFoundError):
        atomic.swap_dir(missing_new, target)
    assert tree_snapshot(target) == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["tree"]  # no `.tree.old-*` left behind


def test_swap_dir_replaces_the_tree_whole(tmp_path: Path) -> None:
    target, new = tmp_path / "tree", tmp_path / "new"
    (target / "old").mkdir(parents=True)
    (new / "fresh").mkdir(parents=True)
    atomic.swap_dir(new, target)
    assert [p.name for p in target.iterdir()] == ["fresh"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["tree"]


def test_staged_dir_leaves_the_target_untouched_when_the_block_raises(tmp_path: Path) -> None:
    target = tmp_path / "tree"
    target.mkdir()
    (target / "keep.txt").write_text("old")
    before = tree_snapshot(target)
    with pytest.raises(RuntimeError), atomic.staged_dir(target) as staging:
        atomic.write_text(staging / "keep.txt", "half")
        raise RuntimeError("midway")
    assert tree_snapshot(target) == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["tree"]  # staging removed


def _hold(tmp_path: Path, code: str) -> subprocess.Popen[str]:
    """Start a child that runs `code` (with `target` defined), prints `ready` and then waits to be killed."""
    script = (f"import sys, time\nfrom pathlib import Path\nfrom levante_tasks import atomic\n"
              f"target = Path({str(tmp_path / 'out.txt')!r})\n{code}\n")
    child = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True)
    assert child.stdout is not None and child.stdout.readline().strip() == "ready"
    return child


FILE_WRITER = ("with atomic.atomic_path(target) as tmp:\n    tmp.write_text('half')\n"
               "    print('ready', flush=True)\n    time.sleep(600)")
SIBLING_WRITER = ("atomic.temp_sibling(target).write_text('half')\nprint('ready', flush=True)\ntime.sleep(600)")
FOLDER_WRITER = ("staging = atomic.make_staging_dir(target)\n(staging / 'f').write_text('half')\n"
                 "print('ready', flush=True)\ntime.sleep(600)")


@pytest.mark.parametrize("code", [FILE_WRITER, SIBLING_WRITER, FOLDER_WRITER],
                         ids=["temp-file", "temp-sibling", "staging-folder"])
def test_clean_stale_removes_a_killed_writers_leftovers_but_not_a_live_ones(tmp_path: Path, code: str) -> None:
    (tmp_path / "keep.txt").write_text("good")
    (tmp_path / ".hidden-but-not-ours").write_text("keep")
    live = _hold(tmp_path, code)
    dead = _hold(tmp_path, code)
    try:
        dead.send_signal(signal.SIGKILL)
        dead.wait()
        leftovers = {p.name for p in tmp_path.iterdir()} - {"keep.txt", ".hidden-but-not-ours"}
        assert {str(live.pid), str(dead.pid)} == {name.split(".")[3].split("-")[-1] for name in leftovers}
        removed = atomic.clean_stale(tmp_path)
        assert [str(dead.pid) in name for name in removed] == [True]
        remaining = {p.name for p in tmp_path.iterdir()}
        assert remaining - {"keep.txt", ".hidden-but-not-ours"} == leftovers - set(removed)
        assert all(str(live.pid) in name for name in remaining - {"keep.txt", ".hidden-but-not-ours"})
    finally:
        live.kill()
        live.wait()
    assert len(atomic.clean_stale(tmp_path)) == 1  # now the other writer is dead too
    assert {p.name for p in tmp_path.iterdir()} == {"keep.txt", ".hidden-but-not-ours"}


def test_temp_siblings_are_new_names_that_messages_show_as_their_target(tmp_path: Path) -> None:
    names = {atomic.temp_sibling(tmp_path / "out.txt") for _ in range(3)}
    assert len(names) == 3 and all(p.parent == tmp_path and not p.exists() for p in names)
    assert {target_path(str(p)) for p in names} == {str(tmp_path / "out.txt")}


def test_clean_stale_recursive_reaches_nested_leftovers(tmp_path: Path) -> None:
    nested = tmp_path / "a" / "b"
    nested.mkdir(parents=True)
    child = _hold(nested, FILE_WRITER)
    child.send_signal(signal.SIGKILL)
    child.wait()
    assert atomic.clean_stale(tmp_path) == []
    (removed,) = atomic.clean_stale(tmp_path, recursive=True)
    assert removed.startswith("a/b/.out.txt.") and not any(nested.iterdir())


def _dead_pid() -> int:
    done = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    return int(done.stdout)


def test_clean_stale_renames_back_a_tree_a_killed_swap_moved_aside(tmp_path: Path) -> None:
    # A kill between swap_dir's two renames leaves the good tree only as `.<name>.old-<pid>.*`: it must come back.
    pid = _dead_pid()
    aside = tmp_path / f".datasets.old-{pid}.k3y"
    aside.mkdir()
    (aside / "test.parquet").write_bytes(b"good")
    staging = tmp_path / f".datasets.staging-{pid}.n3w"
    staging.mkdir()
    (staging / "test.parquet").write_bytes(b"half")
    handled = atomic.clean_stale(tmp_path)
    assert (tmp_path / "datasets" / "test.parquet").read_bytes() == b"good"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["datasets"]
    assert "datasets" in handled


def test_clean_stale_deletes_an_old_tree_when_the_swap_had_finished(tmp_path: Path) -> None:
    pid = _dead_pid()
    (tmp_path / "datasets").mkdir()
    (tmp_path / "datasets" / "test.parquet").write_bytes(b"new")
    aside = tmp_path / f".datasets.old-{pid}.k3y"
    aside.mkdir()
    (aside / "test.parquet").write_bytes(b"old")
    atomic.clean_stale(tmp_path)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["datasets"]
    assert (tmp_path / "datasets" / "test.parquet").read_bytes() == b"new"


def test_swap_dir_over_a_symlink_leaves_no_old_link_and_keeps_its_target(tmp_path: Path) -> None:
    real = tmp_path / "real"
    real.mkdir()
    (real / "f").write_text("kept")
    link = tmp_path / "out"
    link.symlink_to(real)
    new = tmp_path / "new"
    new.mkdir()
    (new / "f").write_text("new")
    atomic.swap_dir(new, link)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out", "real"]
    assert (link / "f").read_text() == "new" and not link.is_symlink()
    assert (real / "f").read_text() == "kept"


def test_current_umask_reads_the_process_umask_without_changing_it() -> None:
    previous = os.umask(0o027)
    try:
        assert atomic.current_umask() == 0o027
        assert os.umask(0o027) == 0o027
    finally:
        os.umask(previous)
