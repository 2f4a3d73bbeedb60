"""The one strict text reader (levante_tasks.textfile), the dataset.json reader (schema.dataset) and the lock helper."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from levante_tasks import folder_lock
from levante_tasks.errors import LevanteError
from levante_tasks.schema.dataset import dataset_info_document, read_dataset_info
from levante_tasks.textfile import read_optional_text, read_text


def test_text_bom_dropped_and_one_wording_for_bad_bytes(tmp_path: Path) -> None:
    path = tmp_path / "a.txt"
    path.write_bytes(b"\xef\xbb\xbfok\n")
    assert read_text(path, "a.txt") == "ok\n"
    path.write_bytes(b"one\ntw\xffo\n")
    with pytest.raises(LevanteError, match=r"^a.txt:2: not UTF-8 text \(byte 0xff at byte offset 6\)$"):
        read_text(path, "a.txt")
    path.write_bytes(b"one\n\0")
    with pytest.raises(LevanteError, match=r"^a.txt:2: NUL byte"):
        read_text(path, "a.txt", nul=True)
    assert read_optional_text(tmp_path / "none.txt") is None
    with pytest.raises(LevanteError, match=r"^none.txt: no such file"):
        read_text(tmp_path / "none.txt", "none.txt")


def test_dataset_info_round_trip_and_damage(tmp_path: Path) -> None:
    path = tmp_path / "dataset.json"
    path.write_text(json.dumps(dataset_info_document("vocab", "v1", 3, fingerprint="f" * 64, synthetic=True)))
    info = read_dataset_info(path, "dataset.json")
    assert (info.task, info.version, info.n_items, info.fingerprint, info.synthetic) == ("vocab", "v1", 3, "f" * 64,
                                                                                          True)
    for text, problem in (("[1]", "not a JSON object"), ('{"task": "vocab"', "invalid JSON"),
                          ('{"schema_version": 1, "task": "vocab", "version": "v1"}', "missing key 'n_items'"),
                          ('{"schema_version": 1, "task": "vocab", "version": "v1", "n_items": "3"}',
                           "key 'n_items' is not an integer")):
        path.write_text(text)
        with pytest.raises(LevanteError, match=f"^dataset.json: {problem}"):
            read_dataset_info(path, "dataset.json")
    with pytest.raises(ValueError, match="no key"):
        dataset_info_document("vocab", "v1", 3, colour="red")


def test_folder_lock_refuses_a_second_holder(tmp_path: Path) -> None:
    with folder_lock.hold_folder(tmp_path / "cell"):
        with pytest.raises(folder_lock.FolderHeld, match=r"^\.\.\./\w+/cell: another process holds it$"):
            with folder_lock.hold_folder(tmp_path / "cell"):
                pass
    with folder_lock.hold(tmp_path, ".x.lock", who="another x", what="the x lock", shared=True):
        with folder_lock.hold(tmp_path, ".x.lock", who="another x", what="the x lock", shared=True):
            pass  # shared holders run side by side
    with folder_lock.hold(tmp_path, ".x.lock", who="another x", what="the x lock"):
        with pytest.raises(LevanteError, match=r"another x \(pid \d+\) still holds it after 0.1 s"):
            with folder_lock.hold(tmp_path, ".x.lock", who="another x", what="the x lock", wait_seconds=0.1):
                pass
    assert (tmp_path / ".x.lock").read_bytes() == b""  # an exclusive holder leaves it empty
