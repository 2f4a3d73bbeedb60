"""`prepare --jobs N` decodes the pictures on N processes: the same bytes, problems and error lines as one process,
in the same order; a kill -9 leaves no worker behind (a forked worker shares prepare's lock)."""

from __future__ import annotations

import hashlib
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from data_helpers import default_rows, vocab_row, write_release
from faults import cli_command, run_cli, tree_snapshot
from PIL import Image

from levante_tasks.cli import main
from levante_tasks.data import decoding, mirror

VERSION = "2026-01-01"
WORDS = tuple(f"w{i:03d}" for i in range(120))  # enough pictures for two workers (decoding.PICTURES_PER_WORKER)


def many_pictures(base: Path, side: int = 8) -> Path:
    """A release of len(WORDS) vocab items, each picture a `side` x `side` PNG; returns the version folder."""
    rows = [vocab_row(w, ",".join(WORDS[(i + k) % len(WORDS)] for k in (1, 2, 3))) for i, w in enumerate(WORDS)]
    root = write_release(base, rows=[*default_rows(), *rows], words=("cat", "dog", "cup", "sun", *WORDS))
    if side != 8:
        for index, word in enumerate(WORDS):
            Image.new("RGB", (side, side), (index, 90, 0)).save(root / f"visual/vocab/{word}.png")
    return root


def prepare_cli(base: Path, data: Path, jobs: int, capsys, *extra: str) -> tuple[int, str, str]:
    status = main(["prepare", "--release", str(base), "--version", VERSION, "--data-dir", str(data), "--quiet",
                   "--jobs", str(jobs), *extra])
    captured = capsys.readouterr()
    return status, captured.out, captured.err


def without_mtimes(lock_file: Path) -> dict:
    """release.lock.json less the mirror copies' mtimes (a second copy is written later)."""
    lock = json.loads(lock_file.read_text(encoding="utf-8"))
    for group in (lock["files"], lock["build"]["outputs"]):
        for entry in group.values():
            entry.pop("mtime_ns")
    return lock


def test_outputs_are_byte_identical_on_one_and_on_two_processes(tmp_path, capsys):
    many_pictures(tmp_path / "rel")
    runs = {jobs: prepare_cli(tmp_path / "rel", tmp_path / f"data{jobs}", jobs, capsys) for jobs in (1, 2)}
    assert runs[1] == runs[2] and runs[1][0] == 0
    trees = {jobs: tree_snapshot(tmp_path / f"data{jobs}" / VERSION) for jobs in (1, 2)}
    built = [rel for rel in trees[1] if rel.startswith(("datasets/", "generated/"))]
    assert "datasets/vocab/test.parquet" in built
    assert {rel: trees[1][rel] for rel in built} == {rel: trees[2][rel] for rel in trees[2]
                                                     if rel.startswith(("datasets/", "generated/"))}
    locks = [without_mtimes(tmp_path / f"data{jobs}" / VERSION / "release.lock.json") for jobs in (1, 2)]
    assert locks[0] == locks[1]


def test_bad_pictures_give_the_same_error_lines_on_two_processes(tmp_path, capsys):
    root = many_pictures(tmp_path / "rel")
    Image.effect_noise((64, 64), 60).save(root / "visual/vocab/w007.png")
    (root / "visual/vocab/w007.png").write_bytes((root / "visual/vocab/w007.png").read_bytes()[:2000])  # truncated
    (root / "visual/vocab/w100.png").write_bytes(b"not a picture")
    runs = {jobs: prepare_cli(tmp_path / "rel", tmp_path / f"data{jobs}", jobs, capsys) for jobs in (1, 2)}
    assert runs[1] == runs[2]
    status, _, err = runs[2]
    lines = err.splitlines()
    assert status == 2 and "Traceback" not in err
    assert lines[0] == ("levante-tasks: error: manifest.csv:9: vocab__w004: option 4 image visual/vocab/w007.png "
                        "is unreadable (the image data does not decode)")  # w004's options: w004 w005 w006 w007
    assert ("levante-tasks: error: manifest.csv:102: vocab__w097: option 4 image visual/vocab/w100.png is unreadable "
            "(not an image format Pillow can read)") in lines
    assert not (tmp_path / "data2" / VERSION / "datasets").exists()


@pytest.mark.skipif(sys.platform != "linux", reason="the patched decode reaches the workers by fork")
def test_decode_all_keeps_the_order_and_spreads_over_the_processes(tmp_path, monkeypatch):
    paths = [tmp_path / f"p{i:03d}.png" for i in range(4 * decoding.PICTURES_PER_WORKER)]
    for path in paths:
        path.write_bytes(path.name.encode())
    seen, wanted = tmp_path / "pids", {"pids": 1, "until": 0.0}  # processes to wait for, and until when

    def decode(data: bytes) -> str:
        """Names the picture and the process; waits (until a minute after the call began) for `wanted` processes to
        have decoded, so a worker that starts late on a loaded machine still gets a share."""
        with open(seen, "a", encoding="utf-8") as log:
            log.write(f"{os.getpid()}\n")
        while time.monotonic() < wanted["until"] and len(set(seen.read_text().split())) < wanted["pids"]:
            time.sleep(0.01)
        return f"{data.decode()} {os.getpid()}"

    monkeypatch.setattr(decoding, "decode_problem", decode)  # forked: inherited
    for jobs, expected_pids in ((1, 1), (2, 2)):
        seen.write_text("", encoding="utf-8")
        wanted.update(pids=expected_pids, until=time.monotonic() + 60)
        verdicts = decoding.decode_all(paths, jobs)
        assert [v.why.split()[0] for v in verdicts] == [path.name for path in paths]
        assert [v.sha256 for v in verdicts] == [hashlib.sha256(path.read_bytes()).hexdigest() for path in paths]
        pids = {int(v.why.split()[1]) for v in verdicts}
        assert len(pids) == expected_pids and (os.getpid() in pids) == (jobs == 1)
        assert time.monotonic() < wanted["until"]  # the processes decoded side by side: none waited for the deadline


def _double(value: int) -> int:
    return 2 * value


def test_on_cores_takes_items_only_a_few_batches_ahead_of_the_results_it_gave():
    count = 40 * decoding.PICTURES_PER_BATCH
    taken: list[int] = []

    def items():  # lazy, as the copies of a local release are: what it has made is held in memory until decoded
        for value in range(count):
            taken.append(value)
            yield value

    ahead = []
    for index, result in enumerate(decoding.on_cores(_double, items(), count, 2, "doubling")):
        assert result == 2 * index
        ahead.append(len(taken) - index)
    assert len(taken) == count
    assert max(ahead) <= 2 * (decoding.BATCHES_PER_WORKER + 1) * decoding.PICTURES_PER_BATCH  # bounded, not `count`


def test_a_picture_that_cannot_be_opened_is_reported_as_its_error(tmp_path):
    verdicts = decoding.decode_all([tmp_path / "missing.png"] * (2 * decoding.PICTURES_PER_WORKER), 2)
    assert all(why is None and isinstance(error, FileNotFoundError) and sha256 is None
               for why, error, sha256 in verdicts)


@pytest.mark.parametrize("jobs", [1, 2])
def test_meanwhile_runs_once_every_item_is_handed_out(jobs):
    count, events, results = 2 * decoding.PICTURES_PER_WORKER, [], []

    def items():
        yield from range(count)
        events.append("handed out")

    for result in decoding.on_cores(str, items(), count, jobs, "testing",
                                    meanwhile=lambda: events.append(len(results))):
        results.append(result)
    assert results == [str(i) for i in range(count)]
    assert events[0] == "handed out" and len(events) == 2  # then once, with the workers' last batches still out
    assert events[1] < count if jobs > 1 else events[1] == count


def test_a_first_prepare_decodes_each_picture_once_from_the_bytes_it_copied(tmp_path, capsys, monkeypatch):
    root = many_pictures(tmp_path / "rel")
    decoded: list[tuple[str, str]] = []  # (module that decoded, sha256 of the bytes)
    for module in (mirror, decoding):
        def counted(data: bytes, module=module, real=module.decode_problem) -> str | None:
            decoded.append((module.__name__, hashlib.sha256(data).hexdigest()))
            return real(data)
        monkeypatch.setattr(module, "decode_problem", counted)
    pictures = sorted(hashlib.sha256(path.read_bytes()).hexdigest() for path in (root / "visual").rglob("*.png"))
    assert prepare_cli(tmp_path / "rel", tmp_path / "data", 1, capsys)[0] == 0
    assert sorted(sha for _, sha in decoded) == pictures  # copied, hashed and decoded from the same bytes
    assert {name for name, _ in decoded} == {mirror.__name__}
    decoded.clear()  # a rebuild that copies nothing decodes the mirror's pictures the build shows
    manifest = root / "manifest.csv"
    manifest.write_bytes(manifest.read_bytes().replace(b"Add the numbers", b"Add the NUMBERS"))
    assert prepare_cli(tmp_path / "rel", tmp_path / "data", 1, capsys)[0] == 0
    assert {name for name, _ in decoded} == {decoding.__name__} and len(decoded) > len(WORDS) / 2


def _children(pid: int) -> set[int]:
    """Processes whose parent is `pid` (from /proc)."""
    found = set()
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == pid:
            found.add(int(stat.parent.name))
    return found


def _running(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


@pytest.mark.skipif(sys.platform != "linux", reason="forked workers and /proc are Linux's")
def test_kill9_while_decoding_leaves_no_worker_and_the_rerun_succeeds(tmp_path):
    many_pictures(tmp_path / "rel", side=1500)  # inflating 1500x1500 pixels takes a few ms a picture
    args = ["prepare", "--release", str(tmp_path / "rel"), "--version", VERSION, "--data-dir", str(tmp_path / "data"),
            "--quiet", "--jobs", "2"]
    process = subprocess.Popen(cli_command(args), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 120
        while not (workers := _children(process.pid)):
            assert process.poll() is None and time.monotonic() < deadline, "no worker seen before prepare ended"
            time.sleep(0.002)
        process.send_signal(signal.SIGKILL)
        process.wait()
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    deadline = time.monotonic() + 10
    while any(_running(pid) for pid in workers) and time.monotonic() < deadline:
        time.sleep(0.05)
    survivors = [pid for pid in workers if _running(pid)]
    for pid in survivors:  # not left running when the test fails
        os.kill(pid, signal.SIGKILL)
    assert not survivors, "a decode worker outlived its killed parent (it would hold the prepare lock)"
    assert not (tmp_path / "data" / VERSION / "datasets").exists()
    result = run_cli(args)
    assert result.returncode == 0, result.stderr
    assert (tmp_path / "data" / VERSION / "datasets/vocab/test.parquet").is_file()
