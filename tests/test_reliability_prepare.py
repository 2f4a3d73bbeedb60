"""`prepare` never loses a good prepared version: stage, validate, then swap; same-size edits; kill -9; locks.

Every test starts from a good prepared version and then breaks something (the source, the data dir, the
process or the disk); the committed tree (`release/`, `datasets/`, `generated/`, `release.lock.json`,
`default_version`) must come out byte-identical or correctly rebuilt, with one error line when it fails.
"""

from __future__ import annotations

import fcntl
import io
import os
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pytest
from data_helpers import default_rows, math_row, vocab_row, write_release
from faults import cli_command, fill_disk, kill9_when, one_error_line, run_cli, small_tmpfs, tree_snapshot
from PIL import Image

from levante_tasks.cli import main
from levante_tasks.data import sources
from levante_tasks.data.prepare import prepare
from levante_tasks.data.sources import RemoteFile
from levante_tasks.errors import LevanteError

VERSION = "2026-01-01"
LOCK_NAME = ".prepare.lock"


def cli_args(base: Path, data: Path, *extra: str) -> list[str]:
    return ["prepare", "--release", str(base), "--version", VERSION, "--data-dir", str(data), "--quiet", *extra]


def run_main(base: Path, data: Path, capsys, *extra: str) -> tuple[int, str, str]:
    status = main(cli_args(base, data, *extra))
    captured = capsys.readouterr()
    return status, captured.out, captured.err


def error_lines(stderr: str) -> list[str]:
    assert "Traceback" not in stderr, stderr
    return [line for line in stderr.splitlines() if line.startswith("levante-tasks: error:")]


def visible(data: Path) -> dict[str, bytes]:
    """The committed tree: every file whose path has no hidden component (temp files, caches, the lock)."""
    return {rel: body for rel, body in tree_snapshot(data).items()
            if not any(part.startswith(".") for part in rel.split("/"))}


def hidden_leftovers(data: Path) -> list[str]:
    """Hidden entries other than the lock file: temp files, staging folders, download cache, legacy folders."""
    return sorted(p.relative_to(data).as_posix() for p in data.rglob(".*") if p.name != LOCK_NAME)


def same_size_png(path: Path) -> bytes:
    """PNG bytes of another solid colour with exactly the size of the PNG at `path`."""
    old = path.read_bytes()
    for colour in ((red, green, 0) for red in range(256) for green in (0, 7, 50)):
        buffer = io.BytesIO()
        Image.new("RGB", (8, 8), colour).save(buffer, format="PNG")
        if len(buffer.getvalue()) == len(old) and buffer.getvalue() != old:
            return buffer.getvalue()
    raise AssertionError("no same-size PNG found")


def flip_middle_byte(path: Path) -> None:
    body = bytearray(path.read_bytes())
    body[len(body) // 2] ^= 0xFF
    path.write_bytes(bytes(body))


def keep_mtime_write(path: Path, body: bytes) -> None:
    """Write `body` and put the old mtime back, as a copy tool that preserves times would."""
    before = path.stat()
    path.write_bytes(body)
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))


@pytest.fixture
def good(tmp_path: Path) -> tuple[Path, Path, Path]:
    """(release base, source version folder, data dir) with VERSION prepared successfully."""
    base, data = tmp_path / "rel", tmp_path / "data"
    root = write_release(base)
    prepare(str(base), VERSION, str(data), strict=True, progress=False)
    return base, root, data


def chmod_tree(root: Path, dir_mode: int, file_mode: int) -> None:
    for folder, _, files in os.walk(root):
        os.chmod(folder, dir_mode)
        for name in files:
            os.chmod(Path(folder) / name, file_mode)


# --- root cause 1: the mirror changes only after the new release validated and staged -------------------------

def test_source_that_lost_a_file_keeps_the_good_mirror(good, capsys):
    base, root, data = good
    before = tree_snapshot(data)
    (root / "visual/vocab/sun.png").unlink()
    status, _, err = run_main(base, data, capsys)
    assert status == 2 and "'sun' not found in visual/vocab/" in err
    assert tree_snapshot(data) == before


def test_unreadable_source_folder_is_one_line_and_keeps_the_mirror(good):
    base, root, data = good
    before = tree_snapshot(data)
    os.chmod(root / "visual/vocab", 0)
    try:
        result = run_cli(cli_args(base, data), drop_dac=True)
    finally:
        os.chmod(root / "visual/vocab", 0o755)
    assert result.returncode == 2
    assert error_lines(result.stderr) == [
        f"levante-tasks: error: {VERSION}/visual/vocab: permission denied (cannot list this release folder)"]
    assert tree_snapshot(data) == before


def test_unreadable_version_folder_is_one_line(good):
    base, root, data = good
    before = tree_snapshot(data)
    os.chmod(root, 0)
    try:
        result = run_cli(cli_args(base, data), drop_dac=True)
    finally:
        os.chmod(root, 0o755)
    assert result.returncode == 2
    assert error_lines(result.stderr) == [
        f"levante-tasks: error: {VERSION}/manifest.csv: permission denied (reading the release)"]
    assert tree_snapshot(data) == before


def test_unreadable_source_file_is_one_line(tmp_path):
    root = write_release(tmp_path / "rel")
    os.chmod(root / "visual/vocab/dog.png", 0)
    result = run_cli(cli_args(tmp_path / "rel", tmp_path / "data"), drop_dac=True)
    assert result.returncode == 2
    assert error_lines(result.stderr) == [
        f"levante-tasks: error: {VERSION}/visual/vocab/dog.png: permission denied (reading the release)"]
    assert not (tmp_path / "data" / VERSION / "datasets").exists()
    assert hidden_leftovers(tmp_path / "data") in ([], [f"{VERSION}/.fetch"])


def test_unsafe_listed_path_is_refused(good, monkeypatch):
    base, _, data = good
    before = tree_snapshot(data)
    listed = sources.LocalSource.files

    def with_escape(self, version):
        return [*listed(self, version), RemoteFile("../escape.txt", 3)]

    monkeypatch.setattr(sources.LocalSource, "files", with_escape)
    with pytest.raises(LevanteError, match=r"^\.\./escape\.txt: unsafe path in the release listing \(refused\)$"):
        prepare(str(base), VERSION, str(data), strict=True, progress=False)
    assert tree_snapshot(data) == before


# --- root cause 4: same-size changes are noticed (stat cache, source mtimes, --verify) ------------------------------

def test_same_size_source_image_edit_is_refetched(good):
    base, root, data = good
    new = same_size_png(root / "visual/vocab/dog.png")
    (root / "visual/vocab/dog.png").write_bytes(new)
    result = prepare(str(base), VERSION, str(data), strict=True, progress=False)
    assert result.fetched == 1 and result.rebuilt
    assert (data / VERSION / "release/visual/vocab/dog.png").read_bytes() == new


def test_same_size_manifest_edit_rebuilds(good):
    base, root, data = good
    manifest = root / "manifest.csv"
    manifest.write_bytes(manifest.read_bytes().replace(b"Add the numbers", b"Add the NUMBERS"))
    result = prepare(str(base), VERSION, str(data), strict=True, progress=False)
    assert result.fetched == 1 and result.rebuilt
    math = pd.read_parquet(data / VERSION / "datasets/egma-math/test.parquet")
    assert math.iloc[0]["question"].startswith("Add the NUMBERS and choose")


def test_same_size_edit_with_kept_mtime_is_found_by_verify(good):
    base, root, data = good
    new = same_size_png(root / "visual/vocab/cup.png")
    keep_mtime_write(root / "visual/vocab/cup.png", new)
    result = prepare(str(base), VERSION, str(data), strict=True, progress=False, verify=True)
    assert result.fetched == 1 and result.rebuilt
    assert (data / VERSION / "release/visual/vocab/cup.png").read_bytes() == new


def test_corrupt_mirror_file_is_refetched(good):
    base, root, data = good
    flip_middle_byte(data / VERSION / "release/visual/vocab/cup.png")
    result = prepare(str(base), VERSION, str(data), strict=True, progress=False)
    assert result.fetched == 1
    source = (root / "visual/vocab/cup.png").read_bytes()
    assert (data / VERSION / "release/visual/vocab/cup.png").read_bytes() == source


@pytest.mark.parametrize("name", ["test.parquet", "dataset.json"])
@pytest.mark.parametrize("keep_mtime", [False, True])
def test_same_size_corrupt_dataset_file_is_rebuilt(good, name, keep_mtime):
    base, _, data = good
    target = data / VERSION / "datasets/vocab" / name
    original = target.read_bytes()
    body = bytearray(original)
    body[len(body) // 2] ^= 0xFF
    if keep_mtime:
        keep_mtime_write(target, bytes(body))
    else:
        target.write_bytes(bytes(body))
    result = prepare(str(base), VERSION, str(data), strict=True, progress=False, verify=keep_mtime)
    assert result.rebuilt and result.fetched == 0
    assert target.read_bytes() == original


def test_verify_on_a_good_version_changes_nothing(good, capsys):
    base, _, data = good
    before = tree_snapshot(data)
    status, out, _ = run_main(base, data, capsys, "--verify")
    assert status == 0 and "fetched 0 file(s); datasets up to date" in out
    assert tree_snapshot(data) == before


def test_verify_flag_finds_a_corrupt_dataset_with_kept_mtime(good, capsys):
    base, _, data = good
    target = data / VERSION / "datasets/egma-math/test.parquet"
    original = target.read_bytes()
    keep_mtime_write(target, original[:100] + bytes([original[100] ^ 0xFF]) + original[101:])
    status, out, _ = run_main(base, data, capsys)
    assert status == 0 and "up to date" in out  # the cheap check trusts size + mtime
    status, out, _ = run_main(base, data, capsys, "--verify")
    assert status == 0 and "datasets built" in out
    assert target.read_bytes() == original


def test_up_to_date_run_writes_nothing(good):
    base, _, data = good
    before = {p: p.stat().st_mtime_ns for p in data.rglob("*") if p.name != LOCK_NAME}
    result = prepare(str(base), VERSION, str(data), strict=True, progress=False)
    assert result.fetched == 0 and not result.rebuilt
    assert {p: p.stat().st_mtime_ns for p in data.rglob("*") if p.name != LOCK_NAME} == before


# --- root cause 8 (part): a version folder without manifest.csv --------------------------------------------------

def test_version_folder_without_manifest(tmp_path, capsys):
    write_release(tmp_path / "rel")
    (tmp_path / "rel/2026-02-01/visual").mkdir(parents=True)
    status = main(["prepare", "--release", str(tmp_path / "rel"), "--version", "2026-02-01",
                   "--data-dir", str(tmp_path / "data"), "--quiet"])
    assert status == 2
    assert error_lines(capsys.readouterr().err) == [
        "levante-tasks: error: 2026-02-01/manifest.csv: missing from the release"]


# --- root cause 11: kill -9, leftovers, the lock ---------------------------------------------------------------

def _bigger_release(root: Path, n_words: int = 300) -> None:
    """Many vocab items and images, so fetching and building take long enough to be killed midway."""
    words = tuple(f"w{i:03d}" for i in range(n_words))
    rows = [vocab_row(w, ",".join(words[(i + k) % n_words] for k in (1, 2, 3))) for i, w in enumerate(words)]
    write_release(root.parent, version=root.name, rows=[*default_rows(), *rows], words=("cat", "dog", "cup", "sun",
                                                                                          *words))
    filler = root / "corpus/filler"
    filler.mkdir(parents=True, exist_ok=True)
    for i in range(200):
        (filler / f"f{i:03d}.bin").write_bytes(os.urandom(64 * 1024))


def _fetch_started(version_root: Path) -> bool:
    fetch = version_root / ".fetch"
    return fetch.is_dir() and any(fetch.iterdir())


def _build_started(version_root: Path) -> bool:
    return any(p.name.startswith(".datasets.staging-") for p in version_root.iterdir())


@pytest.mark.parametrize("kill_point", [_fetch_started, _build_started], ids=["while-fetching", "while-building"])
def test_kill9_midway_keeps_the_good_version_and_the_rerun_cleans_up(good, kill_point):
    base, root, data = good
    committed = visible(data)
    _bigger_release(root)
    kill9_when(cli_args(base, data), lambda: kill_point(data / VERSION))
    assert visible(data) == committed  # the previous good version is whole after the kill
    result = run_cli(cli_args(base, data))
    assert result.returncode == 0, result.stderr
    assert hidden_leftovers(data) == []
    assert len(pd.read_parquet(data / VERSION / "datasets/vocab/test.parquet")) == 302


def test_legacy_and_stale_temp_files_are_removed(good):
    base, _, data = good
    version_root = data / VERSION
    (version_root / ".build-k2j3h4/datasets").mkdir(parents=True)
    (version_root / ".datasets.old").mkdir()
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    pid = int(dead.stdout)
    (version_root / f"release/visual/vocab/.cat.png.{pid}.abc123.part").write_bytes(b"half")
    (version_root / f".release.staging-{pid}.xyz").mkdir()
    result = prepare(str(base), VERSION, str(data), strict=True, progress=False)
    assert not result.rebuilt
    assert hidden_leftovers(data) == []


def test_release_renamed_aside_by_a_killed_swap_is_restored(good):
    base, _, data = good
    committed = visible(data)
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    (data / VERSION / "release").rename(data / VERSION / f".release.old-{int(dead.stdout)}.q1w2e3")
    result = prepare(str(base), VERSION, str(data), strict=True, progress=False)
    assert result.fetched == 0 and not result.rebuilt
    assert visible(data) == committed and hidden_leftovers(data) == []


def test_second_prepare_waits_for_the_lock(good, tmp_path):
    base, root, data = good
    manifest = root / "manifest.csv"
    manifest.write_bytes(manifest.read_bytes().replace(b"Add the numbers", b"Add the NUMBERS"))
    lock_file = data / VERSION / LOCK_NAME
    with open(lock_file, "a+") as holder:
        fcntl.flock(holder, fcntl.LOCK_EX | fcntl.LOCK_NB)
        holder.write("424242")
        holder.flush()
        stderr_path = tmp_path / "stderr.txt"
        with open(stderr_path, "w") as stderr:
            process = subprocess.Popen(cli_command(cli_args(base, data)), stdout=subprocess.DEVNULL, stderr=stderr)
        try:
            deadline = time.monotonic() + 60
            while "waiting" not in stderr_path.read_text() and time.monotonic() < deadline:
                assert process.poll() is None, stderr_path.read_text()
                time.sleep(0.05)
            message = stderr_path.read_text().strip()
            assert message == (f"levante-tasks: another prepare is using .../data/{VERSION} (pid 424242); "
                               "waiting"), message  # no absolute path in messages
            time.sleep(0.5)
            assert process.poll() is None  # still waiting, nothing rebuilt
            assert b"NUMBERS" not in (data / VERSION / "release/manifest.csv").read_bytes()
        finally:
            fcntl.flock(holder, fcntl.LOCK_UN)
        assert process.wait(timeout=120) == 0, stderr_path.read_text()
    assert b"NUMBERS" in (data / VERSION / "release/manifest.csv").read_bytes()


def test_lock_wait_gives_up_after_the_timeout(good, monkeypatch):
    base, _, data = good
    from levante_tasks import folder_lock

    monkeypatch.setattr(folder_lock, "WAIT_SECONDS", 0.3)
    with open(data / VERSION / LOCK_NAME, "a+") as holder:
        fcntl.flock(holder, fcntl.LOCK_EX | fcntl.LOCK_NB)
        with pytest.raises(LevanteError, match=r"another prepare \(pid \w+\) still holds it after 0.3 s; try again "
                                               "later"):
            prepare(str(base), VERSION, str(data), strict=True, progress=False)


def test_two_concurrent_prepares_both_succeed(tmp_path):
    base = tmp_path / "rel"
    _bigger_release(base / VERSION, n_words=120)
    data = tmp_path / "data"
    processes = [subprocess.Popen(cli_command(cli_args(base, data)), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                  text=True) for _ in range(2)]
    outputs = [p.communicate(timeout=300) for p in processes]
    assert [p.returncode for p in processes] == [0, 0], outputs
    assert sorted("datasets built" in out for out, _ in outputs) == [False, True]  # one built, one found it done
    assert len(pd.read_parquet(data / VERSION / "datasets/vocab/test.parquet")) == 122
    assert hidden_leftovers(data) == []


# --- root cause 13: symlinks -----------------------------------------------------------------------------------

def test_symlink_out_of_the_release_is_refused(good, tmp_path, capsys):
    base, root, data = good
    secret = tmp_path / "secret.png"
    secret.write_bytes((root / "visual/vocab/cat.png").read_bytes())
    before = tree_snapshot(data)
    (root / "visual/vocab/owl.png").symlink_to(secret)
    status, _, err = run_main(base, data, capsys)
    assert status == 2
    assert error_lines(err) == [
        f"levante-tasks: error: {VERSION}/visual/vocab/owl.png: symlink to outside the release (refused)"]
    assert tree_snapshot(data) == before


def test_symlinked_folder_is_refused(good, capsys):
    base, root, data = good
    (root / "visual/trog").symlink_to(root / "visual/vocab", target_is_directory=True)
    status, _, err = run_main(base, data, capsys)
    assert status == 2
    assert error_lines(err) == [f"levante-tasks: error: {VERSION}/visual/trog: symlinked folder (refused)"]


def test_symlink_to_a_file_inside_the_release_is_copied(good):
    base, root, data = good
    (root / "visual/vocab/kitty.png").symlink_to("cat.png")
    result = prepare(str(base), VERSION, str(data), strict=True, progress=False)
    assert result.fetched == 1
    mirrored = data / VERSION / "release/visual/vocab/kitty.png"
    assert not mirrored.is_symlink() and mirrored.read_bytes() == (root / "visual/vocab/cat.png").read_bytes()


# --- root cause 6 (part): --allow-empty-tasks and default_version -----------------------------------------------

def test_allow_empty_tasks_is_passed_to_the_build_and_part_of_the_build_key(tmp_path, capsys):
    rows = [vocab_row("owl", "cat,dog,cup"), *default_rows()[2:]]  # vocab's only item lacks its image
    write_release(tmp_path / "rel", rows=rows)
    data = tmp_path / "data"
    status, _, err = run_main(tmp_path / "rel", data, capsys, "--lenient")
    assert status == 2 and "vocab" in err
    status, out, _ = run_main(tmp_path / "rel", data, capsys, "--lenient", "--allow-empty-tasks")
    assert status == 0 and "datasets built" in out
    status, _, err = run_main(tmp_path / "rel", data, capsys, "--lenient")
    assert status == 2 and "vocab" in err  # not "up to date": the earlier build allowed what this one does not


def test_failed_prepare_never_moves_default_version(good, capsys):
    base, _, data = good
    write_release(base, version="2026-02-01", rows=[*default_rows(), math_row("m_bad", "3+3", "6", "5,6,7")])
    status = main(["prepare", "--release", str(base), "--version", "2026-02-01", "--data-dir", str(data), "--quiet"])
    assert status == 2
    assert (data / "default_version").read_text() == f"{VERSION}\n"
    assert not (data / "2026-02-01/datasets").exists()


# --- disk full and read-only data dirs -------------------------------------------------------------------------

def test_disk_full_while_fetching_keeps_the_prepared_version(tmp_path, capsys):
    base = tmp_path / "rel"
    root = write_release(base)
    with small_tmpfs("3m") as data:
        assert run_main(base, data, capsys)[0] == 0
        before = tree_snapshot(data)
        (root / "corpus").mkdir()
        (root / "corpus/big.bin").write_bytes(os.urandom(4 << 20))
        status, _, err = run_main(base, data, capsys)
        assert status == 2
        assert len(error_lines(err)) == 1 and "no space left on the device" in one_error_line(err)
        assert tree_snapshot(data) == before


def test_disk_full_while_building_keeps_the_prepared_version(tmp_path, capsys):
    base = tmp_path / "rel"
    write_release(base)
    with small_tmpfs("3m") as data:
        assert run_main(base, data, capsys)[0] == 0
        flip_middle_byte(data / VERSION / "datasets/vocab/test.parquet")  # forces a rebuild
        fill_disk(data, keep_free=0)
        before = tree_snapshot(data)
        status, _, err = run_main(base, data, capsys)
        assert status == 2
        assert len(error_lines(err)) == 1 and "no space left on the device" in one_error_line(err)
        assert tree_snapshot(data) == before


def test_read_only_data_dir_is_one_line_and_unchanged(good):
    base, root, data = good
    manifest = root / "manifest.csv"
    manifest.write_bytes(manifest.read_bytes().replace(b"Add the numbers", b"Add the NUMBERS"))
    before = tree_snapshot(data)
    chmod_tree(data, 0o555, 0o444)
    try:
        result = run_cli(cli_args(base, data), drop_dac=True)
    finally:
        chmod_tree(data, 0o755, 0o644)
    assert result.returncode == 2
    assert len(error_lines(result.stderr)) == 1 and "permission denied" in one_error_line(result.stderr)
    assert tree_snapshot(data) == before


def test_up_to_date_version_in_a_read_only_data_dir_succeeds(good):
    base, _, data = good
    chmod_tree(data, 0o555, 0o444)
    try:
        result = run_cli(cli_args(base, data), drop_dac=True)
    finally:
        chmod_tree(data, 0o755, 0o644)
    assert result.returncode == 0, result.stderr
    assert "datasets up to date" in result.stdout

