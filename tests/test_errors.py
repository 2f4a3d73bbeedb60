"""The one-line wording of file-system errors never shows an absolute path (nor, through it, a user name)."""

from __future__ import annotations

import errno
import subprocess
import sys

import pyarrow.parquet as pq
import pytest

from levante_tasks.atomic import atomic_path, staged_dir
from levante_tasks.errors import describe_os_error, problem_text, shown_paths


def test_an_oserror_without_errno_shows_its_paths_relative(tmp_path, monkeypatch):
    """pyarrow raises OSErrors without errno whose text is, or holds, the absolute path."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "dangling.parquet").symlink_to(tmp_path / "gone.parquet")
    with pytest.raises(OSError) as caught:
        pq.read_table(str(tmp_path / "data" / "dangling.parquet"))
    assert caught.value.errno is None
    text = problem_text(caught.value)
    assert str(tmp_path) not in text and text.strip()
    made_up = OSError(f"Failed to open local file '{tmp_path}/data/x.parquet'. Detail: [errno 2] gone")
    assert problem_text(made_up) == "Failed to open local file 'data/x.parquet'. Detail: [errno 2] gone"
    assert problem_text(OSError("/elsewhere/home/alice/x.parquet")) == ".../alice/x.parquet"


def test_an_oserror_with_errno_is_its_words():
    assert problem_text(OSError(errno.EACCES, "Permission denied", "/home/alice/f")) == "permission denied"
    assert problem_text(OSError()) == "OSError"


@pytest.mark.parametrize(("hidden", "shown"), [
    ("ro/.out.staging-4242.k2j_x9ab", "ro/out"),
    ("out/.summary.staging-17.abcdefgh/heatmap.png", "out/summary/heatmap.png"),
    ("runs/.cells.sbatch.4242.q1w2e3r4.part", "runs/cells.sbatch"),
    ("data/.2026-03-24.old-9.zzzzzzzz", "data/2026-03-24"),
    ("out/.hidden-by-the-user/x.json", "out/.hidden-by-the-user/x.json"),  # not one of our temp names: kept
])
def test_messages_name_the_target_not_a_writers_temp_name(hidden, shown):
    exc = PermissionError(errno.EACCES, "Permission denied", hidden)
    assert describe_os_error(exc) == f"{shown}: permission denied"


def test_a_write_error_without_a_file_names_the_output_being_written(tmp_path, monkeypatch):
    """ENOSPC from an encoder's flush names no file: staged_dir and atomic_path name their target instead."""
    monkeypatch.chdir(tmp_path)

    def full_disk():
        raise OSError(errno.ENOSPC, "No space left on device")

    for writer, target in ((staged_dir, "out/summary"), (atomic_path, "out/cells.sbatch")):
        with pytest.raises(OSError) as caught, writer(target):
            full_disk()
        assert describe_os_error(caught.value).startswith(f"{target}: no space left on the device")
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == []  # nothing half-written left behind
    with pytest.raises(OSError) as caught, staged_dir("out/summary"):
        raise OSError("pyarrow: bad file")  # no errno: not a write error of ours; left as it was
    assert caught.value.filename is None


def test_shown_paths_hides_absolute_paths_and_leaves_addresses_as_they_are() -> None:
    """Another library's message: an absolute path shows as display_path shows it (no home folder, no user name);
    a URL's path is not a file path and stays whole (mlcroissant names its properties by URL)."""
    text = ('OSError: /home/someone/models/ckpt/config.json missing; see "http://mlcommons.org/croissant/citeAs" '
            "and https://huggingface.co/org/name")
    assert shown_paths(text) == ('OSError: .../ckpt/config.json missing; see "http://mlcommons.org/croissant/citeAs" '
                                 "and https://huggingface.co/org/name")


FLOOD = ("import levante_tasks.l0.cli as l0; l0.run_generate = lambda args: [print('x' * 80) for _ in range(10**6)]; "
         "from levante_tasks.cli import main; raise SystemExit(main(['l0', 'generate', '--config', 'c.yaml', "
         "'--out', 'o']))")


def test_a_reader_that_stops_early_ends_the_command_quietly() -> None:
    command = subprocess.Popen([sys.executable, "-c", FLOOD], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert command.stdout is not None and command.stderr is not None
    command.stdout.readline()
    command.stdout.close()  # like `| head -1`
    stderr = command.stderr.read()
    assert command.wait(timeout=60) == 1
    assert stderr == b""


BROKEN = ("import errno, levante_tasks.l0.cli as l0\n"
          "def child_gone(args):\n    raise BrokenPipeError(errno.EPIPE, 'Broken pipe')\n"
          "l0.run_generate = child_gone\nfrom levante_tasks.cli import main\n"
          "raise SystemExit(main(['l0', 'generate', '--config', 'c.yaml', '--out', 'o']))")


@pytest.mark.parametrize("stdout", ["pipe", "file"])
def test_a_broken_pipe_that_is_not_stdout_is_a_one_line_error(stdout: str, tmp_path) -> None:
    with open(tmp_path / "out.txt", "wb") as file:
        done = subprocess.run([sys.executable, "-c", BROKEN], stdout=subprocess.PIPE if stdout == "pipe" else file,
                              stderr=subprocess.PIPE, timeout=60, check=False)  # stdout read to the end: still open
    assert done.returncode == 2
    assert done.stderr.decode().splitlines() == ["levante-tasks: error: Broken pipe"]
