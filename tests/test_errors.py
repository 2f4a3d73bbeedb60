"""The one-line wording of file-system errors never shows an absolute path (nor, through it, a user name)."""

from __future__ import annotations

import errno

import pyarrow.parquet as pq
import pytest

from levante_tasks.errors import problem_text


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
